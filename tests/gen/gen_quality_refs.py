#!/usr/bin/env python3
"""HF transformers references for llmgen perplexity, --logprobs and verify (never made with llmgen).

Usage: gen_quality_refs.py CACHE        (run by `make quality-refs` in the venv of requirements-ref.txt)

Writes tests/refs/quality/:
  perplexity.json        perplexity as llama-perplexity scores it (chunks of CTX tokens, each a fresh
                         context, a BOS first where the tokenizer adds one, logits of positions CTX/2 ..
                         CTX-2 scoring the next token), computed from transformers' float32 logits with a
                         float64 log-softmax: the default model (SmolLM2-135M-Instruct Q4_1 GGUF dequantized
                         by transformers) on the GPL-3 text of Debian's base-files (CTX 512, 8 chunks;
                         source and sha256 recorded, tokens by the GGUF's HF tokenizer, their count and
                         sha256 recorded), and two tiny fixtures on tiny-ids.txt (CTX 128, 3 chunks).
                         Per chunk: the sum of the negative log-likelihoods and the count, so a test may
                         take the first k chunks.
  tiny-ids.txt           384 seeded random ids below 256 (the tiny fixtures have no tokenizer)
  logprobs-smollm2.json  the default model, 3 prompts, 8 greedy steps: each step's chosen id and its
                         log-probability and the top 5 (log_softmax in float64 of the float32 logits)
  verify-smollm2.jsonl   `llmgen verify` references (write_verify_refs.py): 4 prompts, 32 tokens (no
                         "model": the checks pass -m)
  verify-tiny.jsonl      two tiny fixtures by relative "model" path, prompt ids, 24 tokens
"""
import hashlib
import json
import os
import platform
import random
import sys
import time

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import write_verify_refs as W  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "tests", "refs", "quality")
FIXT = os.path.join(REPO, "tests", "fixtures")
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT = "/usr/share/common-licenses/GPL-3"
TEXT_SOURCE = "Debian package base-files (/usr/share/common-licenses/GPL-3): the GNU GPL version 3 text"
SMOL_CTX, SMOL_CHUNKS = 512, 8
TINY = ["tiny-mha-f32", "tiny-gqa-llama3-tied-f32"]
TINY_CTX, TINY_CHUNKS, TINY_IDS = 128, 3, 384
LOGPROB_PROMPTS = [("plain-sky", False, "The sky is blue because"), ("chat-capital", True, "What is the capital of France?"),
                   ("code", False, "def add(a, b):\n")]
LOGPROB_STEPS, LOGPROB_TOP = 8, 5
VERIFY_PROMPTS = [
    {"id": "plain-colors", "prompt": "The three primary colors are"},
    {"id": "chat-sky", "prompt": "Explain why the sky is blue in two sentences.", "chat": True},
    {"id": "code-fib", "prompt": 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'},
    {"id": "ids-hello", "prompt_ids": [19556, 28, 957, 314, 2375]},
]


def log(msg):
    print("quality-refs: " + msg, file=sys.stderr, flush=True)


def versions():
    from importlib.metadata import version
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "gguf": version("gguf"), "numpy": np.__version__,
            "accelerate": version("accelerate"), "tokenizers": version("tokenizers"),
            "machine": platform.machine(), "torch_threads": torch.get_num_threads()}


def write(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    log("wrote " + os.path.relpath(path, REPO))


def sha256_ids(ids):
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()


@torch.no_grad()
def perplexity(model, tokens, ctx, n_chunks, bos):
    """Per chunk [sum of NLL, count] as llama-perplexity scores it."""
    first = ctx // 2
    out = []
    for c in range(n_chunks):
        chunk = list(tokens[c * ctx:(c + 1) * ctx])
        targets = chunk[:]
        if bos is not None:
            chunk[0] = bos
        logits = model(input_ids=torch.tensor([chunk[:ctx - 1]])).logits[0].float()
        lp = torch.log_softmax(logits[first:ctx - 1].double(), dim=-1)
        tgt = torch.tensor(targets[first + 1:ctx])
        nll = -lp[torch.arange(len(tgt)), tgt]
        out.append([float(nll.sum()), len(tgt)])
        log("  chunk %d/%d: PPL so far %.4f" % (c + 1, n_chunks, np.exp(sum(x[0] for x in out) / sum(x[1] for x in out))))
    return out


def ppl_entry(chunks, **kw):
    s, n = sum(c[0] for c in chunks), sum(c[1] for c in chunks)
    return dict(kw, chunks=chunks, ppl=float(np.exp(s / n)), scored=n)


@torch.no_grad()
def logprob_cases(model, tok):
    cases = []
    for name, chat, text in LOGPROB_PROMPTS:
        ids = W.prompt_ids(tok, {"prompt": text, "chat": chat})
        exp, gaps, rows = W.greedy(model, ids, LOGPROB_STEPS)
        steps = []
        for nxt, row in zip(exp, rows):
            lp = torch.log_softmax(row.double(), dim=-1)
            t = torch.topk(lp, LOGPROB_TOP)
            steps.append({"id": nxt, "logprob": float(lp[nxt]),
                          "top": [[int(i), float(v)] for v, i in zip(t.values, t.indices)]})
        cases.append({"name": name, "chat": chat, "prompt": text, "prompt_ids": ids, "steps": steps})
    return cases


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_quality_refs.py CACHE")
    cache = sys.argv[1]
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    os.makedirs(OUT, exist_ok=True)
    vers = versions()
    t0 = time.time()
    settings = {"compute_dtype": "float32", "log_softmax": "float64 of the float32 logits",
                "scoring": "llama-perplexity: chunks of ctx tokens, fresh context each, BOS replaces the first "
                           "token where the tokenizer adds one, logits of positions ctx/2..ctx-2 score the next "
                           "token (ctx - 1 - ctx/2 per chunk)"}

    # tiny fixtures: seeded random ids, no tokenizer (no BOS)
    rng = random.Random(20)
    ids = [rng.randrange(3, 256) for _ in range(TINY_IDS)]
    with open(os.path.join(OUT, "tiny-ids.txt"), "w") as f:
        f.write(" ".join(map(str, ids)) + "\n")
    tiny = {}
    for name in TINY:
        m = AutoModelForCausalLM.from_pretrained(os.path.join(FIXT, name), dtype=torch.float32).eval()
        log("%s: ctx %d, %d chunks" % (name, TINY_CTX, TINY_CHUNKS))
        tiny[name] = ppl_entry(perplexity(m, ids, TINY_CTX, TINY_CHUNKS, None), model={"repo": "tests/fixtures/" + name},
                               ids_file="tiny-ids.txt", ctx=TINY_CTX, n_chunks=TINY_CHUNKS, bos=None)
        del m

    # the default model
    gdir = os.path.join(cache, "models")
    tok = AutoTokenizer.from_pretrained(gdir, gguf_file=GGUF_NAME)
    model = AutoModelForCausalLM.from_pretrained(gdir, gguf_file=GGUF_NAME, dtype=torch.float32).eval()
    text = open(TEXT, "rb").read()
    toks = list(tok(text.decode("utf-8"))["input_ids"])
    bos_ids = list(tok("")["input_ids"])
    bos = bos_ids[0] if len(bos_ids) == 1 else None
    log("default model: %d tokens of %s, ctx %d, %d chunks" % (len(toks), TEXT, SMOL_CTX, SMOL_CHUNKS))
    smol = ppl_entry(perplexity(model, toks, SMOL_CTX, SMOL_CHUNKS, bos), model={"cache": "models/" + GGUF_NAME},
                     text={"path": TEXT, "source": TEXT_SOURCE, "sha256": hashlib.sha256(text).hexdigest(),
                           "bytes": len(text)},
                     tokens={"count": len(toks), "sha256_of_comma_joined_ids": sha256_ids(toks)},
                     ctx=SMOL_CTX, n_chunks=SMOL_CHUNKS, bos=bos)
    write(os.path.join(OUT, "perplexity.json"), {"versions": vers, "settings": settings,
                                                 "models": dict({"smollm2-gguf": smol}, **tiny)})

    write(os.path.join(OUT, "logprobs-smollm2.json"), {
        "versions": vers, "model": {"cache": "models/" + GGUF_NAME},
        "settings": {"compute_dtype": "float32", "log_softmax": "float64 of the float32 logits (raw: no "
                     "penalty, temperature or filters)", "steps": LOGPROB_STEPS, "top": LOGPROB_TOP,
                     "decode": "greedy: manual loop, KV cache, argmax (first index on ties), no EOS stop",
                     "tokenizer": "AutoTokenizer(gguf_file=...); chat via apply_chat_template"},
        "cases": logprob_cases(model, tok)})

    W.write_jsonl(os.path.join(OUT, "verify-smollm2.jsonl"), W.cases(model, tok, VERIFY_PROMPTS, 32, "float32"))
    log("wrote tests/refs/quality/verify-smollm2.jsonl")
    del model
    lines = []
    for k, name in enumerate(TINY):
        m = AutoModelForCausalLM.from_pretrained(os.path.join(FIXT, name), dtype=torch.float32).eval()
        prompts = [{"id": "%s-%d" % (name, j), "prompt_ids": ids[j * 10:j * 10 + 6 + 3 * j]} for j in range(2)]
        lines += W.cases(m, None, prompts, 24, "float32", record_model="../../fixtures/" + name)
        del m
    W.write_jsonl(os.path.join(OUT, "verify-tiny.jsonl"), lines)
    log("wrote tests/refs/quality/verify-tiny.jsonl; done in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
