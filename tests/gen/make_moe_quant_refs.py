#!/usr/bin/env python3
"""Quantized GGUF files of a tiny mixture-of-experts fixture and transformers' references on their
dequantized weights (make moe-refs, after make_moe_refs.py; needs llama-quantize from `make peer`).

Usage: make_moe_quant_refs.py CACHE

For T in TYPES: llama-quantize (the pinned sdist's, CACHE/peer/build/bin) turns the converter's f32 GGUF of
tests/fixtures/tiny-qwen3moe-f32 into tests/fixtures/tiny-qwen3moe-f32/quantized.<T>.gguf (merged expert stacks
ffn_{gate,up,down}_exps quantized like dense FFN tensors, with llama-quantize's own fallbacks for rows of 64
and 32). The reference: every tensor of that file dequantized by the sdist's gguf-py (gguf.quants.dequantize),
mapped back to transformers' names (the experts' gate and up stacks concatenated into gate_up_proj), loaded
with load_state_dict(strict=True) into Qwen3MoeForCausalLM built from the fixture's config.json, f32; then
make_refs.py's cached greedy loop on the 3 prompts of tests/refs/tiny-qwen3moe-f32.json, 32 steps each
-> tests/refs/tiny-qwen3moe-gguf.<T>.json + .logits.bin (the layout of make_moe_refs.py's), checked by
check_refs.py in make test.
"""
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_refs as R  # noqa: E402
import fixturelib as F  # noqa: E402
import make_family_refs as FR  # noqa: E402

NAME = "tiny-qwen3moe-f32"
TYPES = ["Q8_0", "Q4_0", "Q4_K_M"]
STEPS = 32


def log(msg):
    print("moe-quant-refs: " + msg, file=sys.stderr, flush=True)


def hf_state(reader, gguf, n_layers):
    """The GGUF's tensors dequantized, under transformers' in-memory names."""
    t = {}
    for x in reader.tensors:
        a = gguf.quants.dequantize(x.data, x.tensor_type).astype(np.float32)
        t[x.name] = torch.from_numpy(a.reshape(tuple(int(v) for v in reversed(x.shape.tolist()))).copy())
    s = {"model.embed_tokens.weight": t["token_embd.weight"], "model.norm.weight": t["output_norm.weight"],
         "lm_head.weight": t["output.weight"]}
    names = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
             "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
             "ffn_gate_inp": "mlp.gate"}
    for l in range(n_layers):
        for g, h in names.items():
            s["model.layers.%d.%s.weight" % (l, h)] = t["blk.%d.%s.weight" % (l, g)]
        s["model.layers.%d.mlp.experts.gate_up_proj" % l] = torch.cat(
            [t["blk.%d.ffn_gate_exps.weight" % l], t["blk.%d.ffn_up_exps.weight" % l]], dim=1)
        s["model.layers.%d.mlp.experts.down_proj" % l] = t["blk.%d.ffn_down_exps.weight" % l]
    return s


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    cache = sys.argv[1]
    torch.use_deterministic_algorithms(True)
    llama_cpp = FR.llama_cpp_tree(cache)
    sys.path.insert(0, os.path.join(llama_cpp, "gguf-py"))
    import gguf  # the sdist's gguf-py
    quantize = os.path.join(cache, "peer", "build", "bin", "llama-quantize")
    if not os.access(quantize, os.X_OK):
        sys.exit("moe-quant-refs: %s is not built (make peer)" % quantize)
    d = os.path.join(R.FIXT, NAME)
    src = os.path.join(d, "model.f32.gguf")
    base = json.load(open(os.path.join(R.REFS, NAME + ".json")))
    vers = R.versions()
    vers["gguf_py"] = "the sdist's (%s)" % os.path.relpath(llama_cpp, cache)
    for typ in TYPES:
        out = os.path.join(d, "quantized.%s.gguf" % typ)
        p = subprocess.run([quantize, src, out, typ, "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            sys.stderr.write(p.stdout.decode("utf-8", "replace")[-3000:])
            sys.exit("moe-quant-refs: llama-quantize failed for %s" % typ)
        reader = gguf.GGUFReader(out)
        census = dict(Counter(x.tensor_type.name for x in reader.tensors))
        cfg = AutoConfig.from_pretrained(d)
        m = AutoModelForCausalLM.from_config(cfg).float().eval()
        m.load_state_dict(hf_state(reader, gguf, cfg.num_hidden_layers), strict=True)
        cases, rows_all = [], []
        for c in base["cases"]:
            case, rows = R.run_greedy(m, c["prompt_ids"], STEPS)
            case["name"] = c["name"]
            case["logits_row0"] = len(rows_all)
            rows_all += rows
            cases.append(case)
        name = "tiny-qwen3moe-gguf.%s" % typ
        np.stack(rows_all).astype("<f4").tofile(os.path.join(R.REFS, name + ".logits.bin"))
        ref = dict(model={"repo": R.rel(out)}, vocab_size=cfg.vocab_size, versions=vers,
                   source={"gguf_sha256": F.sha256_file(out), "census": census,
                           "made_by": "llama-quantize %s 1 of the converter's f32 GGUF (%s)" % (typ, R.rel(src)),
                           "reference": "gguf-py dequantize of every tensor, load_state_dict into "
                                        "Qwen3MoeForCausalLM(config.json of %s), f32" % NAME},
                   settings=R.settings(steps=STEPS),
                   logits={"file": name + ".logits.bin", "rows": len(rows_all), "dtype": "float32 little-endian",
                           "row_i": "case after case (case logits_row0)"},
                   gguf={"none": "this reference is of the quantized file itself"}, cases=cases)
        R.write_json(os.path.join(R.REFS, name + ".json"), ref)
        log("%s: %s; %s" % (typ, census, " | ".join(str(c["ids"][:6]) for c in cases)))


if __name__ == "__main__":
    main()
