#!/usr/bin/env python3
"""Structured-output references: HF transformers + xgrammar's transformers logits processor
(xgrammar.contrib.hf.LogitsProcessor), greedy, for JSON Schemas and GBNF grammars (never llmgen).

Usage: make_grammar_refs.py CACHE        (run by `make grammar-refs` in the venv of requirements-ref.txt)

Writes tests/refs/grammar/<model>.json, one per vocabulary:
  smollm2      the default model (SmolLM2-135M-Instruct Q4_1 GGUF, byte-level BPE, 49152 ids) loaded by
               transformers and dequantized to f32; the prompts are its chat template around a request
  spm          tests/fixtures/tiny-grammar-spm-bf16 (written here: a tiny random Llama, bf16, seed below)
               with the SentencePiece byte-fallback vocabulary of tests/fixtures/tokenizers/mistral-v1
               (32000 ids); prompts: BOS + the request text
Cases: the JSON Schemas and GBNF grammars of tests/gen/grammar_cases.json (schemas as compiled by
GrammarCompiler.compile_json_schema with its defaults: any_whitespace, strict_mode) and llama.cpp's own
grammars (CACHE/grammars/llama.cpp, `make grammars`) with compile_grammar; a grammar xgrammar refuses is
recorded with its error and no ids.

Decode: a manual loop (prefill, then one token at a time with the KV cache), the logits processor on
each step's last row, argmax (first index on ties), stop at the end-of-sequence id (not in "ids",
stop "eos") or after STEPS ids (stop "length"). Each step also records the gap between the two largest
allowed logits, so a divergence at a near tie can be told from a real one.
"""
import gzip
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time

import numpy as np
import torch
import transformers
import xgrammar as xgr
from importlib.metadata import version
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM
from xgrammar.contrib.hf import LogitsProcessor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "tests", "refs", "grammar")
CASES = os.path.join(HERE, "grammar_cases.json")
SPM_DIR = os.path.join(REPO, "tests", "fixtures", "tiny-grammar-spm-bf16")
SPM_TOK = os.path.join(REPO, "tests", "fixtures", "tokenizers", "mistral-v1")
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
STEPS = 48
N_SCHEMAS = 14   # the first 14 schemas of grammar_cases.json
SPM_SEED = 8100


def log(msg):
    print("grammar-refs: " + msg, file=sys.stderr, flush=True)


def versions():
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "xgrammar": version("xgrammar"),
            "apache-tvm-ffi": version("apache-tvm-ffi"), "tokenizers": version("tokenizers"),
            "gguf": version("gguf"), "numpy": np.__version__, "torch_threads": torch.get_num_threads()}


@torch.no_grad()
def greedy(model, proc, prompt, eos, steps):
    out = model(input_ids=torch.tensor([prompt]), use_cache=True)
    ids, gaps, stop = [], [], "length"
    for _ in range(steps):
        scores = proc(torch.tensor([prompt + ids]), out.logits[:, -1, :].float().clone())[0]
        top = torch.topk(scores, 2).values
        gaps.append(float(top[0] - top[1]) if torch.isfinite(top[1]) else None)
        nxt = int(torch.argmax(scores))
        if nxt == eos:
            stop = "eos"
            break
        ids.append(nxt)
        out = model(input_ids=torch.tensor([[nxt]]), past_key_values=out.past_key_values, use_cache=True)
    return ids, stop, gaps


def run(name, model, tok, prompts, cases, vers, source):
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=model.config.vocab_size)
    compiler = xgr.GrammarCompiler(info)
    eos = tok.eos_token_id
    out = []
    t = time.time()
    for case in cases:
        kind, text = case["kind"], case["text"]
        rec = {"name": case["name"], "kind": kind, "text": text}
        try:
            cg = compiler.compile_json_schema(text) if kind == "json_schema" else compiler.compile_grammar(text)
        except Exception as e:  # xgrammar refuses it: recorded, not run
            # its log prefix "[HH:MM:SS] file.cc:LINE: " holds a wall-clock time: left out
            rec["xgrammar_error"] = re.sub(r"^\[[0-9:]+\] \S+:[0-9]+: ", "", str(e).strip().split("\n")[0])[:300]
            out.append(rec)
            continue
        runs = []
        for p in prompts(case):
            ids, stop, gaps = greedy(model, LogitsProcessor(cg), p, eos, STEPS)
            runs.append({"prompt_ids": p, "ids": ids, "stop": stop, "gaps": gaps,
                         "text": tok.decode(ids)})
        rec["runs"] = runs
        out.append(rec)
        log("%s: %s: %s" % (name, case["name"], " | ".join("%s %d ids" % (r["stop"], len(r["ids"])) for r in runs)))
    log("%s: %d cases in %.1f s" % (name, len(cases), time.time() - t))
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name + ".json")
    with open(path + ".tmp", "w") as f:
        json.dump({"versions": vers, "source": source, "vocab_size": model.config.vocab_size, "eos": eos,
                   "steps": STEPS,
                   "settings": {"processor": "xgrammar.contrib.hf.LogitsProcessor(compiled) per step",
                                "json_schema": "GrammarCompiler.compile_json_schema(text) (defaults: "
                                               "any_whitespace=True, strict_mode=True)",
                                "grammar": "GrammarCompiler.compile_grammar(text)",
                                "tokenizer_info": "TokenizerInfo.from_huggingface(tok, vocab_size="
                                                  "config.vocab_size)",
                                "decode": "manual greedy loop, KV cache, argmax of the masked row, stop at eos "
                                          "or after steps ids", "compute_dtype": "float32"},
                   "cases": out}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(path + ".tmp", path)
    log("wrote " + os.path.relpath(path, REPO))


def all_cases(cache):
    d = json.load(open(CASES))
    cases = [{"name": s["name"], "kind": "json_schema", "text": json.dumps(s["schema"], ensure_ascii=False),
              "prompt": s["prompt"]} for s in d["schemas"][:N_SCHEMAS]]
    cases += [{"name": g["name"], "kind": "grammar", "text": g["gbnf"], "prompt": g["prompt"]} for g in d["grammars"]]
    gdir = os.path.join(cache, "grammars", "llama.cpp")
    names = sorted(f for f in os.listdir(gdir) if f.endswith(".gbnf"))
    if not names:
        sys.exit("grammar-refs: no grammars in %s (make grammars)" % gdir)
    for f in names:
        cases.append({"name": "llama.cpp/" + f, "kind": "grammar", "text": open(os.path.join(gdir, f)).read(),
                      "prompt": "Write an example of " + f[:-5].replace("_", " ")})
    return cases


def spm_model_dir(work):
    """The fixture's weights (written once, kept) plus the tokenizer files in a scratch directory."""
    if not os.path.exists(os.path.join(SPM_DIR, "model.safetensors")):
        torch.manual_seed(SPM_SEED)
        cfg = LlamaConfig(vocab_size=32000, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                          tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, rms_norm_eps=1e-5)
        model = LlamaForCausalLM(cfg)
        g = torch.Generator().manual_seed(SPM_SEED)
        with torch.no_grad():
            for n, p in sorted(model.named_parameters()):
                r = torch.randn(p.shape, generator=g)
                if n.endswith("norm.weight"):
                    p.copy_(1.0 + 0.1 * r)
                elif "embed_tokens" in n:
                    p.copy_(r * 0.5)
                elif "o_proj" in n or "down_proj" in n:
                    p.copy_(r * (3.0 / p.shape[1] ** 0.5))
                else:
                    p.copy_(r / p.shape[1] ** 0.5)
        shutil.rmtree(SPM_DIR, ignore_errors=True)
        model.to(torch.bfloat16).save_pretrained(SPM_DIR)
        with open(os.path.join(SPM_DIR, "README.md"), "w") as f:
            f.write("Random weights (torch seed %d; tests/gen/make_grammar_refs.py) with the SentencePiece\n"
                    "byte-fallback vocabulary of ../tokenizers/mistral-v1 (32000 ids). The checks assemble the\n"
                    "model directory in a scratch folder: these files plus that tokenizer.json (gunzipped) and\n"
                    "tokenizer_config.json.\n" % SPM_SEED)
    d = os.path.join(work, "spm")
    os.makedirs(d)
    for f in os.listdir(SPM_DIR):
        shutil.copy(os.path.join(SPM_DIR, f), d)
    with gzip.open(os.path.join(SPM_TOK, "tokenizer.json.gz")) as src, open(os.path.join(d, "tokenizer.json"), "wb") as dst:
        dst.write(src.read())
    shutil.copy(os.path.join(SPM_TOK, "tokenizer_config.json"), d)
    return d


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_grammar_refs.py CACHE")
    cache = sys.argv[1]
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    vers = versions()
    cases = all_cases(cache)

    gdir = os.path.join(cache, "models")
    tok = AutoTokenizer.from_pretrained(gdir, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(gdir, gguf_file=GGUF, dtype=torch.float32).eval()

    def smol_prompts(case):
        asks = ["Reply with %s." % case["prompt"]]
        return [list(tok.apply_chat_template([{"role": "user", "content": a}], add_generation_prompt=True,
                                             tokenize=True)["input_ids"]) for a in asks[:1]]

    run("smollm2", model, tok, smol_prompts, cases, vers,
        {"model": "cache:models/" + GGUF, "load": "AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., "
         "dtype=float32); AutoTokenizer.from_pretrained(dir, gguf_file=...)",
         "prompts": "apply_chat_template([user: 'Reply with PROMPT.'], add_generation_prompt=True)"})
    del model

    with tempfile.TemporaryDirectory() as work:
        d = spm_model_dir(work)
        tok = AutoTokenizer.from_pretrained(d)
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()

        def spm_prompts(case):
            return [tok("Reply with " + case["prompt"] + ":")["input_ids"]]

        run("spm", model, tok, spm_prompts, cases, vers,
            {"model": os.path.relpath(SPM_DIR, REPO) + " + tests/fixtures/tokenizers/mistral-v1",
             "load": "AutoModelForCausalLM.from_pretrained(dir, dtype=float32); AutoTokenizer.from_pretrained(dir)",
             "prompts": "tok('Reply with PROMPT:') (BOS added)"})


if __name__ == "__main__":
    main()
