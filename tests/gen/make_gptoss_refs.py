#!/usr/bin/env python3
"""Tiny random gpt-oss checkpoints, their HF transformers references and GGUF conversions (make gptoss-refs;
never run by CI).

Usage: make_gptoss_refs.py CACHE [NAME...]      (the venv of requirements-ref.txt; NAME filters fixtures)

  tests/fixtures/tiny-gptoss-f32/     config.json + model.safetensors written by save_pretrained (f32; the
                                      experts as transformers 5.23 saves them: gate_up_proj (E, H, 2I) with
                                      gate / up interleaved by column, down_proj (E, I, H), biases beside),
                                      and model.f32.gguf, the pinned convert_hf_to_gguf.py's --outtype f32 (no
                                      q8_0: int8 weight noise alone moves this chaotic model's logits by 16% at
                                      the first step, a routing flip; llmgen --exact on that file equals the f32
                                      run of its gguf-py-dequantized weights bit for bit, measured; fast mode is
                                      gated on the MXFP4 file instead)
  tests/fixtures/tiny-gptoss-mxfp4/   the official MXFP4 layout (OpenAI's gpt-oss checkpoints): the experts as
                                      *_blocks (E, rows, in / 32, 16) and *_scales (E, rows, in / 32) of random
                                      valid blocks, quantization_config mxfp4, everything else f32; and
                                      model.mxfp4.gguf, the converter's file of it (--outtype f32: the experts
                                      stay MXFP4, repacked into GGUF type 39, nothing requantized)
  tests/refs/<name>.json + .logits.bin
                                      HF's greedy ids (3 random prompts of 12 ids, past the window of 8, 40
                                      steps) and every step's logits; for the MXFP4 checkpoint transformers
                                      loads the directory itself, which dequantizes the experts on the CPU
  tests/refs/gptoss-fixtures.json     what each exercises, sizes and sha256 of the files, the GGUF keys and
                                      tensors the converter wrote

Both models: 4 layers (layer_types default: even layers slide, window 8), YaRN factor 4 over an original
context of 128 with truncate false (the correction range [0, 2.02] stays fractional: transformers' rule, not
llama.cpp's [0, 3]), 512 positions (past llmgen's ring of the window: the contract tests wrap it), random non-constant norms, sinks and biases everywhere (q, k, v, o, router, experts),
gate / up projections large enough that swiglu_limit's clamp (the default 7: GGUF files cannot carry
another) bites on a few percent of the values (recorded as clamp_share), 6 experts of 32, top-2.
"""
import copy
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_refs as R  # noqa: E402
import fixturelib as F  # noqa: E402
import make_family_refs as FR  # noqa: E402
import make_moe_refs as MR  # noqa: E402

REFS, FIXT = R.REFS, R.FIXT
STEPS, PROMPT_LEN, PROMPTS = 40, 12, 3
ATTEMPTS = 6
SIZE_LIMIT = 1 << 20
SUMMARY = os.path.join(REFS, "gptoss-fixtures.json")

CONFIG = dict(vocab_size=256, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
              head_dim=16, intermediate_size=32, num_local_experts=6, num_experts_per_tok=2, sliding_window=8,
              tie_word_embeddings=False, max_position_embeddings=512,
              rope_parameters={"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                               "truncate": False, "original_max_position_embeddings": 128,
                               "rope_theta": 150000.0})

FIXTURES = [
    ("tiny-gptoss-f32", "f32",
     "gpt_oss f32: sinks, even-layer window 8, YaRN factor 4 truncate false, q/k/v/o biases, router and expert "
     "biases, clamped SwiGLU (limit 7), top-2 of 6 experts of 32 on the biased logits; HF's transposed "
     "interleaved stacks; the converter's f32 GGUF"),
    ("tiny-gptoss-mxfp4", "mxfp4",
     "gpt_oss with MXFP4 experts in the official layout (*_blocks / *_scales, quantization_config mxfp4), "
     "transformers dequantizing them; the converter's MXFP4 GGUF (type 39) of the same bits"),
]


def log(msg):
    print("gptoss-refs: " + msg, file=sys.stderr, flush=True)


def init_weights(model, seed):
    """make_moe_refs.init_weights, plus gpt-oss's own parameters: sinks around 0 (N(0, 1): some heads give
    the sink a large share), the transposed expert stacks' fan-in on their middle dimension."""
    MR.init_weights(model, seed)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            r = torch.randn(p.shape, generator=g)
            if name.endswith("sinks"):
                p.copy_(r)
            elif name.endswith("experts.gate_up_proj"):
                p.copy_(r * (4.0 / math.sqrt(p.shape[1])))
            elif name.endswith("experts.down_proj"):
                p.copy_(r * (3.0 / math.sqrt(p.shape[1])))
            elif name.endswith("_proj_bias") or name.endswith("router.bias"):
                p.copy_(0.3 * r)


FP4 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def mxfp4_rows(w, rng, gain):
    """Random valid MXFP4 blocks (E, rows, in / 32, 16) and scales (E, rows, in / 32) for a stack of shape
    (E, rows, in): uniform codes, E8M0 exponents around gain / sqrt(in) (2^(s - 127) per block)."""
    E, rows, n = w
    blocks = rng.integers(0, 256, (E, rows, n // 32, 16), dtype=np.uint8)
    base = 127 + int(round(math.log2(gain / math.sqrt(n) / 2.5)))
    scales = (base + rng.integers(-1, 2, (E, rows, n // 32))).astype(np.uint8)
    return torch.from_numpy(blocks), torch.from_numpy(scales)


def write_mxfp4(d, seed):
    """Rewrite the f32 directory d in the official MXFP4 layout: each layer's gate_up_proj (E, H, 2I) and
    down_proj (E, I, H) become *_blocks / *_scales with the output rows first, random valid blocks."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(d, "model.safetensors")
    t = load_file(path)
    rng = np.random.Generator(np.random.PCG64(seed))
    out = {}
    for k, v in t.items():
        if k.endswith("experts.gate_up_proj") or k.endswith("experts.down_proj"):
            E, n_in, n_out = v.shape
            b, s = mxfp4_rows((E, n_out, n_in), rng, 4.0 if "gate_up" in k else 3.0)
            out[k + "_blocks"], out[k + "_scales"] = b.contiguous(), s.contiguous()
        else:
            out[k] = v
    save_file(out, path, metadata={"format": "pt"})
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    R.write_json(os.path.join(d, "config.json"), cfg)


def dequant_check(d, m):
    """transformers' dequantized experts equal the blocks decoded here (FP4 table, 2^(s - 127), pairs
    interleaved in a byte, then transposed): the reference runs on exactly the values the file means."""
    from safetensors.torch import load_file
    t = load_file(os.path.join(d, "model.safetensors"))
    worst = 0.0
    for l, layer in enumerate(m.model.layers):
        for nm in ("gate_up_proj", "down_proj"):
            b = t["model.layers.%d.mlp.experts.%s_blocks" % (l, nm)].numpy()
            s = t["model.layers.%d.mlp.experts.%s_scales" % (l, nm)].numpy().astype(np.int32)
            lo, hi = np.array(FP4)[b & 15], np.array(FP4)[b >> 4]
            v = np.stack([lo, hi], -1).reshape(b.shape[0], b.shape[1], b.shape[2], 32)
            v = (v * np.ldexp(1.0, s - 127)[..., None]).reshape(b.shape[0], b.shape[1], -1)
            got = getattr(layer.mlp.experts, nm).detach().double().numpy()
            worst = max(worst, float(np.abs(got - v.transpose(0, 2, 1)).max()))
    return worst


def count_clamps(m):
    """Wrap each layer's _apply_gate to count the gate / up values beyond swiglu_limit: [clamped, all]."""
    n = [0, 0]
    for layer in m.model.layers:
        ex = layer.mlp.experts

        def gate(gu, ex=ex, orig=ex._apply_gate):
            n[0] += int((gu[..., ::2] > ex.limit).sum() + (gu[..., 1::2].abs() > ex.limit).sum())
            n[1] += gu.numel()
            return orig(gu)
        ex._apply_gate = gate
    return n


def build(idx, entry, llama_cpp, vers):
    for attempt in range(ATTEMPTS):
        out = build_seed(idx, entry, llama_cpp, vers, 9700 + idx + 100 * attempt)
        if out:
            return out
        log("%s: seed %d locks onto few tokens, next seed" % (entry[0], 9700 + idx + 100 * attempt))
    sys.exit("gptoss-refs: %s: every seed locked onto few tokens; retune its init" % entry[0])


def build_seed(idx, entry, llama_cpp, vers, seed):
    name, kind, what = entry
    torch.manual_seed(9600 + idx)
    cfg = AutoConfig.for_model("gpt_oss", bos_token_id=1, eos_token_id=2, pad_token_id=None, **copy.deepcopy(CONFIG))
    model = AutoModelForCausalLM.from_config(cfg)
    init_weights(model, seed)
    d = os.path.join(FIXT, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d)
    del model
    if kind == "mxfp4":
        write_mxfp4(d, seed)
    m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
    impl = getattr(m.config, "_experts_implementation", None)
    extra = {"attn_implementation": m.config._attn_implementation}
    if kind == "mxfp4":
        extra["dequant_max_abs_err"] = dequant_check(d, m)
        if extra["dequant_max_abs_err"] != 0.0:
            sys.exit("gptoss-refs: transformers' dequantized experts differ from the blocks (%g)"
                     % extra["dequant_max_abs_err"])
    clamps = count_clamps(m)
    rng = np.random.Generator(np.random.PCG64(9800 + idx))
    cases, rows_all = [], []
    for p in range(PROMPTS):
        prompt = [int(x) for x in rng.integers(3, cfg.vocab_size, PROMPT_LEN)]
        case, rows = R.run_greedy(m, prompt, STEPS)
        case["nocache_rel_err"] = FR.nocache_rel_err(m, case, rows)
        case["name"] = "prompt-%d" % p
        case["logits_row0"] = len(rows_all)
        rows_all += rows
        if len(set(case["ids"])) < 10:
            return None
        cases.append(case)
    extra["clamp_share"] = clamps[0] / max(clamps[1], 1)
    if not 0.005 < extra["clamp_share"] < 0.3:
        sys.exit("gptoss-refs: %s: the SwiGLU clamp bites on %.3f of the values; retune" % (name, extra["clamp_share"]))
    del m
    path, info = FR.convert(llama_cpp, d, "f32")
    if kind == "mxfp4":
        os.rename(path, os.path.join(d, "model.mxfp4.gguf"))
        path = os.path.join(d, "model.mxfp4.gguf")
    gguf = dict(file=R.rel(path), sha256=F.sha256_file(path), **info)
    files = {}
    for f in sorted(os.listdir(d)):
        size = os.path.getsize(os.path.join(d, f))
        if size >= SIZE_LIMIT:
            sys.exit("gptoss-refs: %s/%s is %d bytes, over the %d limit" % (name, f, size, SIZE_LIMIT))
        files[f] = {"bytes": size, "sha256": F.sha256_file(os.path.join(d, f))}
    binname = name + ".logits.bin"
    np.stack(rows_all).astype("<f4").tofile(os.path.join(REFS, binname))
    source = {"weights": "random (torch.Generator seed %d, make_gptoss_refs.init_weights), saved by save_pretrained "
                         "as float32%s" % (seed, "; experts then replaced by random MXFP4 blocks (write_mxfp4)"
                                           if kind == "mxfp4" else ""),
              "model_type": "gpt_oss", "exercises": what, "experts_implementation": impl, **extra,
              "content_sha256": F.content_hash(os.path.join(d, "model.safetensors"))}
    ref = dict(model={"repo": R.rel(d)}, vocab_size=cfg.vocab_size, versions=vers, source=source,
               settings=R.settings(load="AutoModelForCausalLM.from_pretrained(dir, dtype=float32)", steps=STEPS,
                                   nocache_rel_err="cached rows vs one uncached forward over prompt + ids"),
               logits={"file": binname, "rows": len(rows_all), "dtype": "float32 little-endian",
                       "row_i": "case after case (case logits_row0): the logits its i-th id was chosen from"},
               gguf={"file": gguf["file"], "sha256": gguf["sha256"],
                     "made_by": "tests/gen/convert_tiny_gguf.py (llama.cpp convert_hf_to_gguf.py, --outtype f32, "
                                "tokenizer model none)", "same_reference": True})
    if kind == "mxfp4":  # check_family_fast.py gates fast mode (int8 activations into the MXFP4 experts) on it
        ref["gguf_fast"] = {"file": gguf["file"], "note": "fast mode vs --exact on this file (check_family_fast.py)"}
    ref["cases"] = cases
    R.write_json(os.path.join(REFS, name + ".json"), ref)
    log("%s: %s; nocache %.1e, clamped %.3f" % (name, " | ".join(str(c["ids"][:8]) for c in cases),
                                                max(max(c["nocache_rel_err"]) for c in cases), extra["clamp_share"]))
    return dict(family="gpt_oss", exercises=what, files=files, experts_implementation=impl, gguf=gguf, **extra)


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


if __name__ == "__main__":
    main()
