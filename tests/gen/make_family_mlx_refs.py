#!/usr/bin/env python3
"""MLX references for the model families: family fixtures of make_family_refs.py quantized by
mlx_lm.convert (affine 4-bit / 8-bit, groups 32 / 64), with mlx-lm's own greedy ids and logits.

Usage: .cache/venv-mlx/bin/python tests/gen/make_family_mlx_refs.py [CACHE]    (run by make family-refs;
       the venv of requirements-mlx.txt). Never run by CI.

Writes, in the layout of make_mlx_refs.py (so tests/cli/check_mlx.py checks them with the Llama ones):
  tests/fixtures/tiny-mlx-<family>-*/{config.json,model.safetensors}   mlx_lm.convert -q output
  tests/refs/mlx/tiny-mlx-<family>-*.json + .logits.bin               mlx-lm greedy ids and logits rows
  tests/refs/mlx/llmgen-quantize-<family>-*.json                      `llmgen quantize` cases: the tensors must
                                                                      equal mlx_lm.convert's bytes; ids are
                                                                      mlx-lm's on that mlx_lm.convert twin

mlx-lm reads some config keys only in the transformers-4.x layout (rope_theta / rope_scaling at top level,
Gemma 3's sliding_window_pattern and rope_local_base_freq, Phi-3's top-level partial_rotary_factor and
rope_scaling.type), so the source handed to mlx_lm.convert is the fixture with those keys added (same
values; transformers reads either layout). Before quantizing, mlx-lm's greedy run of that unquantized f32
source must give HF's 32 ids (the stored tests/refs/<fixture>.json) with logits within 1e-4 of HF's:
proof that mlx-lm reads the config as transformers does, so its ids on the quantized model are a fair
reference (a mismatch stops the script). Not every fixture qualifies: mlx-lm ignores Gemma 3's
final_logit_softcapping and layer_types, Phi-3's sliding_window and LongRoPE's short factors (it always
applies the long ones), and Qwen's / Mistral's sliding windows; the cases below avoid those features.
"""
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import mlx.core as mx
import numpy as np
from mlx_lm.convert import convert
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.utils import load_model

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_mlx_refs as M  # noqa: E402  (versions, write_ref, the tokenizer used only to let convert load)

REPO = M.REPO
CACHE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".cache")
REFS = os.path.join(REPO, "tests", "refs")
HF_MATCH_REL = 1e-4

# name, family fixture, bits, group, what it covers
CASES = [
    ("tiny-mlx-qwen2-gqa-q4g32", "tiny-qwen2-gqa-f32", 4, 32,
     "Qwen2: quantized q/k/v with f32 biases beside them, untied quantized lm_head"),
    ("tiny-mlx-qwen3-tied-q8g64", "tiny-qwen3-gqa-tied-f32", 8, 64,
     "Qwen3: q/k norms, head_dim 24; o_proj (input 96) stays dense at g64; tied quantized embedding"),
    ("tiny-mlx-qwen3-tied-q4g32", "tiny-qwen3-gqa-tied-f32", 4, 32, "Qwen3 4-bit g32: every matrix quantized"),
    ("tiny-mlx-gemma3-q4g64", "tiny-gemma3-legacy-keys-f32", 4, 64,
     "Gemma 3: sqrt(64) embedding scale on a quantized tied embedding, (1+w) norms, sliding pattern 2, window 6"),
    ("tiny-mlx-gemma3-q8g32", "tiny-gemma3-legacy-keys-f32", 8, 32, "Gemma 3 8-bit g32"),
    ("tiny-mlx-smollm3-q4g32", "tiny-smollm3-nope4-f32", 4, 32, "SmolLM3: layer 3 without RoPE, tied"),
    ("tiny-mlx-phi3-longrope-q8g32", "tiny-phi3-longrope-f32", 8, 32,
     "Phi-3: fused qkv_proj / gate_up_proj quantized, LongRoPE long factors (original 8 < prompt), partial 0.75"),
    # mixture-of-experts fixtures (make_moe_refs.py): mlx-lm stacks each projection's experts in one
    # (E, rows, cols) tensor (switch_mlp); a matrix whose input width the group does not divide stays f32
    ("tiny-mlx-qwen3moe-q4g32", "tiny-qwen3moe-f32", 4, 32,
     "Qwen3-MoE: switch_mlp stacks 4-bit, the router 8-bit g64 (mlx-lm's quant_predicate), renormalized top-2"),
    ("tiny-mlx-qwen2moe-q8g32", "tiny-qwen2moe-f32", 8, 32,
     "Qwen2-MoE: 8-bit stacks, a shared expert (its down_proj, input 48, stays f32) and its quantized sigmoid gate"),
    ("tiny-mlx-mixtral-q4g64", "tiny-mixtral-f32", 4, 64,
     "Mixtral: block_sparse_moe.switch_mlp, gate / up 4-bit g64 beside an f32 down stack (input 48)"),
    ("tiny-mlx-olmoe-q4g32", "tiny-olmoe-f32", 4, 32, "OLMoE: q/k norms over the whole projection, top-3 unnormalized"),
]

# `llmgen quantize` of a family fixture must write mlx_lm.convert's bytes (name, fixture, bits, group, twin)
LLMGEN_CASES = [
    ("llmgen-quantize-qwen2-gqa-q4g32", "tiny-qwen2-gqa-f32", 4, 32, "tiny-mlx-qwen2-gqa-q4g32"),
    ("llmgen-quantize-phi3-longrope-q8g32", "tiny-phi3-longrope-f32", 8, 32, "tiny-mlx-phi3-longrope-q8g32"),
    ("llmgen-quantize-gemma3-q4g64", "tiny-gemma3-legacy-keys-f32", 4, 64, "tiny-mlx-gemma3-q4g64"),
]


def mlx_source(fixture, tmp):
    """The fixture with a tokenizer (mlx_lm.convert loads one) and the transformers-4.x keys mlx-lm reads."""
    d = os.path.join(tmp, "src-" + fixture)
    if os.path.isdir(d):
        return d
    shutil.copytree(os.path.join(REPO, "tests", "fixtures", fixture), d, ignore=shutil.ignore_patterns("*.gguf"))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(M.TOKENIZER_SRC, f), d)
    path = os.path.join(d, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    rp = cfg.get("rope_parameters")
    if rp and "rope_theta" not in cfg and "full_attention" not in rp:
        cfg["rope_theta"] = rp["rope_theta"]
        if rp.get("partial_rotary_factor", 1.0) != 1.0:
            cfg["partial_rotary_factor"] = rp["partial_rotary_factor"]
        if rp.get("rope_type", "default") == "longrope":
            cfg["rope_scaling"] = {"type": "longrope", "short_factor": rp["short_factor"],
                                   "long_factor": rp["long_factor"]}
    if cfg.get("model_type") == "qwen3_moe" and "num_experts" not in cfg:  # transformers 5's name for it
        cfg["num_experts"] = cfg["num_local_experts"]
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)
    return d


def greedy(model_dir, prompt, n):
    model, _ = load_model(Path(model_dir))
    cache = make_prompt_cache(model)
    logits = model(mx.array([prompt]), cache=cache)[0, -1]
    ids, rows = [], []
    for _ in range(n):
        lg = logits.astype(mx.float32)
        mx.eval(lg)
        row = np.array(lg)
        nxt = int(np.argmax(row))
        ids.append(nxt)
        rows.append(row)
        logits = model(mx.array([[nxt]]), cache=cache)[0, -1]
    return ids, np.stack(rows).astype("<f4")


def hf_ref(fixture):
    with open(os.path.join(REFS, fixture + ".json")) as f:
        ref = json.load(f)
    rows = np.fromfile(os.path.join(REFS, ref["logits"]["file"]), dtype="<f4").reshape(ref["logits"]["rows"], -1)
    return ref, rows


def main():
    os.makedirs(M.OUT_REFS, exist_ok=True)
    os.makedirs(M.WORK, exist_ok=True)
    vers = M.versions()
    checked = {}
    with tempfile.TemporaryDirectory(dir=M.WORK) as tmp:
        for name, fixture, bits, group, what in CASES:
            src = mlx_source(fixture, tmp)
            ref, hf_rows = hf_ref(fixture)
            case = ref["cases"][0]
            prompt, n = case["prompt_ids"], len(case["ids"])
            if fixture not in checked:
                ids, rows = greedy(src, prompt, n)
                rel = float(max(np.abs(rows[i] - hf_rows[i]).max() / np.abs(hf_rows[i]).max() for i in range(n)))
                if ids != case["ids"] or rel > HF_MATCH_REL:
                    sys.exit("family-mlx-refs: mlx-lm on the unquantized %s gives ids %s (HF %s), max rel logit "
                             "diff %.2e: it does not read this config as transformers does" % (
                                 fixture, ids, case["ids"], rel))
                checked[fixture] = rel
            out = os.path.join(tmp, name)
            convert(src, out, quantize=True, q_group_size=group, q_bits=bits)
            dst = os.path.join(REPO, "tests", "fixtures", name)
            shutil.rmtree(dst, ignore_errors=True)
            os.makedirs(dst)
            for f in ("config.json", "model.safetensors"):
                shutil.copy(os.path.join(out, f), dst)
            ids, rows = greedy(dst, prompt, n)
            M.write_ref(name, {
                "model": {"repo": "tests/fixtures/" + name},
                "source": {"fixture": "tests/fixtures/" + fixture,
                           "convert": "mlx_lm.convert(quantize=True, q_bits=%d, q_group_size=%d)" % (bits, group),
                           "covers": what,
                           "mlx_unquantized_equals_hf": "mlx-lm's greedy run of the unquantized source gives HF's "
                                                        "%d ids (tests/refs/%s.json), max rel logit diff %.1e"
                                                        % (n, fixture, checked[fixture])},
                "versions": vers,
                "settings": {"decode": "greedy: model forward with make_prompt_cache, argmax, no EOS stop",
                             "logits": "f32 little-endian, one row per generated id"},
                "vocab_size": int(rows.shape[1]),
                "prompt_ids": prompt,
                "ids": ids,
                "note": "mlx computes in f32 (the fixture's dtype)",
                "ids_native_bf16": None,
            }, rows)
            print("%-32s %s  (unquantized = HF, %.1e)" % (name, ids[:12], checked[fixture]))

        for name, fixture, bits, group, twin in LLMGEN_CASES:
            with open(os.path.join(M.OUT_REFS, twin + ".json")) as f:
                t = json.load(f)
            M.write_ref(name, {
                "source": {"fixture": "tests/fixtures/" + fixture,
                           "quantize": "llmgen quantize --bits %d --group-size %d" % (bits, group),
                           "mlx_convert_twin": "tests/fixtures/" + twin},
                "versions": vers,
                "settings": {"decode": "greedy: model forward with make_prompt_cache, argmax, no EOS stop"},
                "bits": bits, "group_size": group, "fixture": "tests/fixtures/" + fixture,
                "prompt_ids": t["prompt_ids"],
                "ids": t["ids"],
                "note": "ids: mlx-lm's on the mlx_lm.convert twin (written before llmgen quantize supported this "
                        "family); check_mlx.py first requires llmgen quantize's tensors to equal the twin's bytes, "
                        "so the ids apply to its output too",
            }, None)
            print("%-32s ids of %s" % (name, twin))


if __name__ == "__main__":
    main()
