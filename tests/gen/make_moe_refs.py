#!/usr/bin/env python3
"""Tiny random mixture-of-experts checkpoints, their HF transformers references and GGUF conversions
(make moe-refs; never run by CI).

Usage: make_moe_refs.py CACHE [NAME...]      (the venv of requirements-ref.txt; NAME filters fixtures)

For each entry of FIXTURES (family = HF model_type):
  tests/fixtures/<name>/            config.json + model.safetensors written by save_pretrained (transformers
                                    5.23 writes one 2-D tensor per expert, Granite MoE its legacy 3-D stacks);
                                    the "stacked" variants then rewrite the experts as transformers holds
                                    them in memory (mlp.experts.gate_up_proj (E, 2I, H), down_proj (E, H, I))
  tests/refs/<name>.json + .logits.bin
                                    HF's greedy ids (PROMPTS random prompts of 12 ids, 32 steps each, the
                                    cached loop of make_refs.py) and every step's logits, the cases' rows one
                                    after the other (case["logits_row0"] says where each starts); the
                                    reference is transformers loading the committed directory in f32
  tests/fixtures/<name>/model.f32.gguf, model.q8_0.gguf
                                    llama.cpp's convert_hf_to_gguf.py (the pinned sdist) on that directory
                                    (tests/gen/convert_tiny_gguf.py), where the file means the same model
                                    (the reason is recorded for the others)
  tests/refs/moe-fixtures.json      per fixture: what it exercises, sizes and sha256 of the files, the GGUF
                                    keys and tensors the converter wrote
  tests/refs/moe-topk-ties.json     torch.topk's order on tied values (the rule moe.c follows), per (n, k)
"""
import copy
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_refs as R  # noqa: E402
import fixturelib as F  # noqa: E402
import make_family_refs as FR  # noqa: E402  (the converter, the no-cache and f64 checks)

REFS, FIXT = R.REFS, R.FIXT
STEPS, PROMPT_LEN, PROMPTS = 32, 12, 3
ATTEMPTS = 6
SIZE_LIMIT = 1 << 20
SUMMARY = os.path.join(REFS, "moe-fixtures.json")
TIES = os.path.join(REFS, "moe-topk-ties.json")

NO_GGUF_DENSE = ("llama.cpp's qwen3moe has no dense layers and ignores decoder_sparse_step / mlp_only_layers, and "
                 "hard-codes norm_topk_prob true: the file would mean another model")

BASE = dict(vocab_size=256, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
            tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})

# name, model_type, config kwargs, gguf (True or the reason none), stacked rewrite, what it exercises
FIXTURES = [
    ("tiny-qwen3moe-f32", "qwen3_moe",
     dict(BASE, head_dim=24, intermediate_size=96, moe_intermediate_size=32, num_experts=6, num_experts_per_tok=2,
          norm_topk_prob=True, rms_norm_eps=1e-6),
     True, False, "qwen3_moe: 6 experts of 32, top-2 renormalized (norm_topk_prob), per-head q/k norm, head_dim "
                  "24, GQA 4/2; one 2-D tensor per expert as transformers 5.23 saves them"),
    ("tiny-qwen3moe-dense-stacked-f32", "qwen3_moe",
     dict(BASE, num_hidden_layers=4, intermediate_size=64, moe_intermediate_size=32, num_experts=5,
          num_experts_per_tok=3, norm_topk_prob=False, decoder_sparse_step=2, mlp_only_layers=[3],
          rms_norm_eps=1e-6),
     NO_GGUF_DENSE, True,
     "qwen3_moe: decoder_sparse_step 2 and mlp_only_layers [3] leave layer 1 the only expert layer (0, 2, 3 dense "
     "MLPs of 64), top-3 of 5 not renormalized; experts stacked in 3-D tensors (gate_up_proj, down_proj)"),
    ("tiny-qwen2moe-f32", "qwen2_moe",
     dict(BASE, intermediate_size=96, moe_intermediate_size=32, shared_expert_intermediate_size=48, num_experts=6,
          num_experts_per_tok=3, norm_topk_prob=False, rms_norm_eps=1e-6),
     True, False, "qwen2_moe: 6 experts of 32, top-3 not renormalized, a shared expert of 48 behind a sigmoid "
                  "gate, q/k/v biases, GQA 4/2"),
    ("tiny-mixtral-f32", "mixtral",
     dict(BASE, intermediate_size=48, num_local_experts=4, num_experts_per_tok=2, rms_norm_eps=1e-5,
          sliding_window=None, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     True, False, "mixtral: 4 experts of 48 (intermediate_size), top-2 always renormalized, per-expert w1/w3/w2; "
                  "GGUF arch llama with expert_count, Q/K rows permuted"),
    ("tiny-olmoe-f32", "olmoe",
     dict(BASE, num_key_value_heads=4, intermediate_size=32, num_experts=6, num_experts_per_tok=3,
          norm_topk_prob=False, rms_norm_eps=1e-5),
     True, False, "olmoe: RMSNorm over the whole q and k projections, 6 experts of 32, top-3 not renormalized, MHA "
                  "(llama.cpp's k_norm assumes it)"),
    ("tiny-granitemoe-f32", "granitemoe",
     dict(BASE, intermediate_size=48, num_local_experts=4, num_experts_per_tok=2, rms_norm_eps=1e-6,
          embedding_multiplier=6.0, residual_multiplier=0.3, attention_multiplier=0.2, logits_scaling=2.0),
     True, False, "granitemoe: top-2 of the logits then softmax over them, multipliers (embedding 6, residual 0.3, "
                  "attention 0.2, logits / 2), fused 3-D input_linear / output_linear as 5.23 saves them"),
]


def log(msg):
    print("moe-refs: " + msg, file=sys.stderr, flush=True)


def init_weights(model, seed):
    """O(1) activations with well separated logits (make_family_refs.init_weights' scheme) over the MoE
    parameter names: fan-in is a matrix's last dimension (3-D expert stacks included); residual branches
    (o_proj, experts' down) gain 3; routers gain 3 so that the chosen experts are well apart."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            r = torch.randn(p.shape, generator=g)
            fan = p.shape[-1]
            if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                p.copy_(1.0 + 0.1 * r)
            elif name.endswith(".bias"):
                p.copy_(0.2 * r)
            elif "embed_tokens" in name:
                p.copy_(r)
            elif name == "lm_head.weight":
                p.copy_(r * (4.0 / math.sqrt(fan)))
            elif "o_proj" in name or "down_proj" in name or "output_linear" in name:
                p.copy_(r * (3.0 / math.sqrt(fan)))
            elif name.endswith("gate.weight") or "router" in name or name.endswith("shared_expert_gate.weight"):
                p.copy_(r * (3.0 / math.sqrt(fan)))
            else:
                p.copy_(r / math.sqrt(fan))


def stack_experts(d):
    """Rewrite model.safetensors with each layer's per-expert tensors stacked as transformers holds them."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(d, "model.safetensors")
    t = load_file(path)
    out, layers = {}, {}
    for k, v in t.items():
        parts = k.split(".")
        if ".mlp.experts." in k:
            layers.setdefault(int(parts[2]), {}).setdefault(int(parts[5]), {})[parts[6]] = v
        else:
            out[k] = v
    for l, ex in layers.items():
        E = len(ex)
        out["model.layers.%d.mlp.experts.gate_up_proj" % l] = torch.stack(
            [torch.cat([ex[e]["gate_proj"], ex[e]["up_proj"]], 0) for e in range(E)]).contiguous()
        out["model.layers.%d.mlp.experts.down_proj" % l] = torch.stack([ex[e]["down_proj"] for e in range(E)]).contiguous()
    save_file(out, path, metadata={"format": "pt"})


@torch.no_grad()
def topk_ties():
    """torch.topk's order on all-equal values and on a few tied groups (CPU, float32)."""
    out = []
    for n, k in ((8, 2), (6, 3), (12, 3), (16, 4), (60, 4), (64, 8), (128, 8), (10, 10), (1024, 8), (256, 4)):
        out.append(dict(n=n, k=k, values="zeros", ids=torch.topk(torch.zeros(n), k).indices.tolist()))
        v = (torch.arange(n) % 3).float()
        out.append(dict(n=n, k=k, values="i % 3", ids=torch.topk(v, k).indices.tolist()))
    return out


def build(idx, entry, llama_cpp, vers):
    """The fixture with the first weight seed (of ATTEMPTS) whose greedy ids do not lock onto a few tokens."""
    for attempt in range(ATTEMPTS):
        out = build_seed(idx, entry, llama_cpp, vers, 9100 + idx + 100 * attempt)
        if out:
            return out
        log("%s: seed %d locks onto few tokens, next seed" % (entry[0], 9100 + idx + 100 * attempt))
    sys.exit("moe-refs: %s: every seed locked onto few tokens; retune its init" % entry[0])


def build_seed(idx, entry, llama_cpp, vers, seed):
    name, mtype, kw, gguf, stacked, what = entry
    torch.manual_seed(9000 + idx)
    kw = copy.deepcopy(kw)
    cfg = AutoConfig.for_model(mtype, max_position_embeddings=256, bos_token_id=1, eos_token_id=2,
                               pad_token_id=None, **kw)
    model = AutoModelForCausalLM.from_config(cfg)
    init_weights(model, seed)
    d = os.path.join(FIXT, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d)
    del model
    if stacked:
        stack_experts(d)
    m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
    impl = getattr(m.config, "_experts_implementation", None)
    rng = np.random.Generator(np.random.PCG64(9200 + idx))
    cases, rows_all = [], []
    for p in range(PROMPTS):
        prompt = [int(x) for x in rng.integers(3, cfg.vocab_size, PROMPT_LEN)]
        case, rows = R.run_greedy(m, prompt, STEPS)
        case["nocache_rel_err"] = FR.nocache_rel_err(m, case, rows)
        case["name"] = "prompt-%d" % p
        case["logits_row0"] = len(rows_all)
        rows_all += rows
        if len(set(case["ids"])) < 8:
            return None
        cases.append(case)
    del m
    m64 = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64).eval()
    m64.set_experts_implementation("eager")  # torch's grouped_mm takes no float64: the noise check only
    for case, p in zip(cases, range(PROMPTS)):
        r0 = case["logits_row0"]
        case["f64_rel_err"] = FR.f64_cached_rel_err(m64, case, rows_all[r0:r0 + STEPS])
    del m64
    ggufs = {}
    for outtype, wanted in (("f32", gguf is True), ("q8_0", gguf is True)):
        if wanted:
            path, info = FR.convert(llama_cpp, d, outtype)
            ggufs[outtype] = dict(file=R.rel(path), sha256=F.sha256_file(path), **info)
    files = {}
    for f in sorted(os.listdir(d)):
        size = os.path.getsize(os.path.join(d, f))
        if size >= SIZE_LIMIT:
            sys.exit("moe-refs: %s/%s is %d bytes, over the %d limit" % (name, f, size, SIZE_LIMIT))
        files[f] = {"bytes": size, "sha256": F.sha256_file(os.path.join(d, f))}
    binname = name + ".logits.bin"
    np.stack(rows_all).astype("<f4").tofile(os.path.join(REFS, binname))
    source = {"weights": "random (torch.Generator seed %d, make_moe_refs.init_weights), saved by save_pretrained as "
                         "float32%s" % (seed, "; experts then stacked by stack_experts()" if stacked else ""),
              "model_type": mtype, "exercises": what, "experts_implementation": impl,
              "content_sha256": F.content_hash(os.path.join(d, "model.safetensors"))}
    ref = dict(model={"repo": R.rel(d)}, vocab_size=cfg.vocab_size, versions=vers, source=source,
               settings=R.settings(load="AutoModelForCausalLM.from_pretrained(dir, dtype=float32)", steps=STEPS,
                                   f64_rel_err="max|f32 - f64| / max|f64| per step, the cached loop teacher-forced "
                                               "on the f32 ids",
                                   nocache_rel_err="cached rows vs one uncached forward over prompt + ids"),
               logits={"file": binname, "rows": len(rows_all), "dtype": "float32 little-endian",
                       "row_i": "case after case (case logits_row0): the logits its i-th id was chosen from"})
    if "f32" in ggufs:
        ref["gguf"] = {"file": ggufs["f32"]["file"], "sha256": ggufs["f32"]["sha256"],
                       "made_by": "tests/gen/convert_tiny_gguf.py (llama.cpp convert_hf_to_gguf.py, --outtype f32, "
                                  "tokenizer model none)", "same_reference": True}
        ref["gguf_q8_0"] = {"file": ggufs["q8_0"]["file"], "sha256": ggufs["q8_0"]["sha256"],
                            "note": "the converter's --outtype q8_0; not compared with this reference (quantized)"}
    else:
        ref["gguf"] = {"none": gguf}
    ref["cases"] = cases
    R.write_json(os.path.join(REFS, name + ".json"), ref)
    log("%s: %s; f64 %.1e, nocache %.1e" % (name, " | ".join(str(c["ids"][:8]) for c in cases),
                                            max(max(c["f64_rel_err"]) for c in cases),
                                            max(max(c["nocache_rel_err"]) for c in cases)))
    return dict(family=mtype, exercises=what, files=files, experts_implementation=impl,
                gguf=ggufs or {"none": gguf})


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cache, names = sys.argv[1], sys.argv[2:]
    torch.use_deterministic_algorithms(True)
    llama_cpp = FR.llama_cpp_tree(cache)
    vers = R.versions()
    summary = json.load(open(SUMMARY)) if os.path.exists(SUMMARY) and names else {}
    for idx, entry in enumerate(FIXTURES):
        if names and entry[0] not in names:
            continue
        summary[entry[0]] = build(idx, entry, llama_cpp, vers)
    R.write_json(SUMMARY, dict(summary, versions=vers) if not names else summary)
    R.write_json(TIES, dict(versions=vers, made_by="tests/gen/make_moe_refs.py (torch.topk(v, k) on the CPU)",
                            cases=topk_ties()))


if __name__ == "__main__":
    main()
