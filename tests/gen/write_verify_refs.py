#!/usr/bin/env python3
"""Write reference files for `llmgen verify` with HF transformers, for any model and prompts.

Usage (in a venv with torch, transformers, accelerate and gguf; tests/gen/requirements-ref.txt pins one):

  write_verify_refs.py --model MODEL --prompts PROMPTS.jsonl -o REFS.jsonl [-n 32] [--dtype float32]
                       [--record-model PATH]

MODEL is a Hugging Face model directory (config.json, safetensors, tokenizer) or a .gguf file (loaded
by transformers with gguf_file=, dequantized to float). PROMPTS.jsonl has one object per line:
  {"id": ..., "prompt": "text" | "prompt_ids": [ids], "chat"?: true, "n"?: tokens}
("chat" wraps the prompt in the model's chat template with apply_chat_template(add_generation_prompt=True);
"n" overrides -n). A plain text prompt is tokenized as tokenizer(text) does (special tokens added as the
model's tokenizer adds them), which is what `llmgen -p` does too.

Each output line is what `llmgen verify` reads:
  {"id", "prompt" | "prompt_ids", "chat"?, "expected_ids", "top2_gap", "model"?, "source"}
expected_ids come from a manual greedy loop (one forward over the prompt, then one token at a time with
the KV cache, argmax with the first index on ties, no stop at end-of-sequence ids), top2_gap[i] is the
largest minus the second largest logit of step i, and "source" records the tool versions and settings.
--record-model PATH writes "model": PATH into every line (a path relative to REFS.jsonl's directory,
or absolute), so `llmgen verify REFS.jsonl` needs no -m.

Then: llmgen verify REFS.jsonl -m MODEL --exact (compare in full precision; the fast default mode may
differ at near-ties and accumulate differences from there).
"""
import argparse
import json
import os
import platform
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer


def load(model, dtype):
    """(model, tokenizer) for a directory or a .gguf file, in eval mode."""
    dt = getattr(torch, dtype)
    if model.endswith(".gguf"):
        d, f = os.path.split(os.path.abspath(model))
        tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
        m = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=dt)
    else:
        tok = AutoTokenizer.from_pretrained(model)
        m = AutoModelForCausalLM.from_pretrained(model, dtype=dt)
    return m.eval(), tok


def prompt_ids(tok, p):
    if "prompt_ids" in p:
        return list(p["prompt_ids"])
    if p.get("chat"):
        enc = tok.apply_chat_template([{"role": "user", "content": p["prompt"]}], add_generation_prompt=True,
                                      tokenize=True)
        return list(enc["input_ids"])
    return list(tok(p["prompt"])["input_ids"])


@torch.no_grad()
def greedy(model, ids, steps):
    """(expected ids, top-2 gaps, rows as float32 tensors) of `steps` greedy steps."""
    out = model(input_ids=torch.tensor([ids]), use_cache=True)
    got, gaps, rows = [], [], []
    for i in range(steps):
        row = out.logits[0, -1].float()
        nxt = int(torch.argmax(row))
        v = torch.topk(row, 2).values
        got.append(nxt)
        gaps.append(float(v[0] - v[1]))
        rows.append(row)
        if i + 1 < steps:
            out = model(input_ids=torch.tensor([[nxt]]), past_key_values=out.past_key_values, use_cache=True)
    return got, gaps, rows


def source(model, dtype):
    return {"tool": "transformers %s, torch %s, python %s" % (transformers.__version__, torch.__version__,
                                                              platform.python_version()),
            "model": os.path.basename(os.path.normpath(model)), "dtype": dtype,
            "decode": "greedy: manual loop, forward + argmax (first index on ties), KV cache, no EOS stop"}


def cases(model, tok, prompts, n, dtype, record_model=None):
    """The REFS lines (dicts) for a list of prompt dicts."""
    out = []
    for p in prompts:
        ids = prompt_ids(tok, p)
        exp, gaps, _ = greedy(model, ids, int(p.get("n", n)))
        line = {"id": p["id"]}
        if record_model:
            line["model"] = record_model
        if "prompt_ids" in p:
            line["prompt_ids"] = ids
        else:
            line["prompt"] = p["prompt"]
            if p.get("chat"):
                line["chat"] = True
        line.update(expected_ids=exp, top2_gap=gaps, source=source(model.name_or_path or "?", dtype))
        out.append(line)
    return out


def write_jsonl(path, lines):
    with open(path + ".tmp", "w") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64", "bfloat16", "float16"])
    ap.add_argument("--record-model")
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    with open(a.prompts) as f:
        prompts = [json.loads(line) for line in f if line.strip()]
    for i, p in enumerate(prompts):
        if "id" not in p or ("prompt" in p) == ("prompt_ids" in p):
            sys.exit("%s:%d: each line needs \"id\" and one of \"prompt\" / \"prompt_ids\"" % (a.prompts, i + 1))
    model, tok = load(a.model, a.dtype)
    write_jsonl(a.output, cases(model, tok, prompts, a.n, a.dtype, a.record_model))
    print("wrote %s (%d cases)" % (a.output, len(prompts)), file=sys.stderr)


if __name__ == "__main__":
    main()
