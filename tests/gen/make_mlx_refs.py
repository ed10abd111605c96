#!/usr/bin/env python3
"""Make the MLX references: tiny random Llama fixtures quantized by mlx_lm.convert, greedy ids and
logits from mlx-lm's own forward pass, and mlx-lm's ids on checkpoints written by `llmgen quantize`.

Usage: .cache/venv-mlx/bin/python tests/gen/make_mlx_refs.py [CACHE_DIR]
  (venv: python3 -m venv .cache/venv-mlx && .cache/venv-mlx/bin/pip install -r tests/gen/requirements-mlx.txt;
   needs ./llmgen built). Never run by CI.

Writes
  tests/fixtures/tiny-mlx-*/{config.json,model.safetensors}  mlx_lm.convert -q output (tokenizer files dropped:
                                                           the fixtures are ids-only)
  tests/refs/mlx/<name>.json, <name>.logits.bin            per case: prompt ids, mlx-lm's greedy ids, logits rows
                                                           (f32 little-endian, one row per generated id)
  tests/refs/mlx/llmgen-quantize-<name>.json               mlx-lm's greedy ids on the checkpoint that
                                                           `llmgen quantize` writes from the same f32 fixture,
                                                           plus whether its tensors equal mlx_lm.convert's bytes

Decoding is mlx_lm.generate's greedy path without EOS: one prefill of the prompt through the model with a
KV cache (make_prompt_cache), then one token per step, argmax (first index on ties) of the f32 logits.
"""
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import mlx.core as mx
import mlx_lm
import numpy as np
from mlx.utils import tree_map
from mlx_lm.convert import convert
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.utils import load_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".cache")
WORK = os.path.join(CACHE, "mlxwork")
TOKENIZER_SRC = os.path.join(REPO, "tests", "fixtures", "smollm2-hf")  # only so mlx_lm.convert can load
OUT_REFS = os.path.join(REPO, "tests", "refs", "mlx")
N_GEN = 32
PROMPT = [1, 7, 42, 3, 99, 15, 8, 63]


def mixed_predicate(path, module):
    """Per-layer overrides as mlx_lm records them: one layer in 8-bit g32, one left dense."""
    if path == "model.layers.1.mlp.down_proj":
        return {"group_size": 32, "bits": 8}
    if path == "model.layers.0.self_attn.v_proj":
        return False
    return True


# name, source fixture, bits, group, predicate, what it covers
CASES = [
    ("tiny-mlx-mha-q4g64", "tiny-mha-f32", 4, 64, None, "4-bit g64, f32 scales, quantized embedding"),
    ("tiny-mlx-mha-q8g32", "tiny-mha-f32", 8, 32, None, "8-bit g32"),
    ("tiny-mlx-gqa-tied-q4g32", "tiny-gqa-llama3-tied-f32", 4, 32, None,
     "GQA, llama3 rope, tied quantized embedding as lm_head"),
    ("tiny-mlx-gqa-tied-q8g64", "tiny-gqa-llama3-tied-f32", 8, 64, None,
     "hidden 96 not a multiple of 64: q/k/v/o/gate/up and embedding stay dense, down_proj 8-bit"),
    ("tiny-mlx-mha-mixed", "tiny-mha-f32", 4, 128, mixed_predicate,
     "per-layer overrides: default 4-bit g128 (hidden 64: only down_proj qualifies), one layer 8-bit g32, one dense"),
    ("tiny-mlx-gqa-bf16-q4g32", "tiny-gqa-llama3-bf16", 4, 32, None,
     "bf16 model: bf16 scales/biases; intermediate 200 not a multiple of 32 keeps down_proj dense"),
]

# `llmgen quantize` cases: (name, source fixture, bits, group, mlx_lm.convert counterpart for the byte check)
LLMGEN_CASES = [
    ("llmgen-quantize-mha-q4g64", "tiny-mha-f32", 4, 64, "tiny-mlx-mha-q4g64"),
    ("llmgen-quantize-mha-q8g32", "tiny-mha-f32", 8, 32, "tiny-mlx-mha-q8g32"),
    ("llmgen-quantize-gqa-tied-q4g32", "tiny-gqa-llama3-tied-f32", 4, 32, "tiny-mlx-gqa-tied-q4g32"),
    ("llmgen-quantize-gqa-bf16-q4g32", "tiny-gqa-llama3-bf16", 4, 32, "tiny-mlx-gqa-bf16-q4g32"),
]


def versions():
    v = {"python": platform.python_version(), "mlx": mx.__version__, "mlx_lm": mlx_lm.__version__,
         "numpy": np.__version__, "machine": platform.machine(), "device": str(mx.default_device())}
    return v


def greedy(model_dir, f32=False):
    """mlx-lm's greedy decode: ids and f32 logits rows. f32=True first casts every float parameter
    (bf16 scales, biases, norms) to f32, exactly, so that mlx computes in f32 as llmgen does."""
    model, _ = load_model(__import__("pathlib").Path(model_dir))
    if f32:
        model.update(tree_map(lambda v: v.astype(mx.float32) if mx.issubdtype(v.dtype, mx.floating) else v,
                              model.parameters()))
    cache = make_prompt_cache(model)
    logits = model(mx.array([PROMPT]), cache=cache)[0, -1]
    ids, rows = [], []
    for _ in range(N_GEN):
        lg = logits.astype(mx.float32)
        mx.eval(lg)
        row = np.array(lg)
        nxt = int(np.argmax(row))
        ids.append(nxt)
        rows.append(row)
        logits = model(mx.array([[nxt]]), cache=cache)[0, -1]
    return ids, np.stack(rows).astype("<f4")


def src_with_tokenizer(fixture, tmp):
    """A copy of the fixture with a tokenizer beside it: mlx_lm.convert insists on loading one."""
    d = os.path.join(tmp, "src-" + fixture)
    if os.path.isdir(d):
        return d
    shutil.copytree(os.path.join(REPO, "tests", "fixtures", fixture), d)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_SRC, f), d)
    # mlx-lm 0.32.2 reads rope settings only from the transformers 4.x keys (rope_scaling, rope_theta);
    # with only transformers 5's rope_parameters it silently drops llama3 scaling (measured: its ids then
    # leave HF's at step 3 on tiny-gqa-llama3-tied-f32; with both keys they equal HF's). Write both:
    # the same values, and llmgen reads either.
    cfg_path = os.path.join(d, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    rp = cfg.get("rope_parameters")
    if rp and not cfg.get("rope_scaling"):
        if rp.get("rope_type", "default") != "default":
            cfg["rope_scaling"] = dict(rp)
        cfg["rope_theta"] = rp.get("rope_theta", 10000.0)
        with open(cfg_path, "w") as f:
            json.dump(cfg, f, indent=2)
    return d


def tensors(path):
    """name -> numpy array; bf16 as its uint16 bits (numpy has no bfloat16)."""
    return {k: np.array(v.view(mx.uint16) if v.dtype == mx.bfloat16 else v) for k, v in mx.load(path).items()}


def same_tensors(a_dir, b_dir):
    """(all equal, list of differing or missing names) between two model.safetensors."""
    a, b = tensors(os.path.join(a_dir, "model.safetensors")), tensors(os.path.join(b_dir, "model.safetensors"))
    bad = sorted(set(a) ^ set(b))
    for k in sorted(set(a) & set(b)):
        if a[k].dtype != b[k].dtype or a[k].shape != b[k].shape or a[k].tobytes() != b[k].tobytes():
            bad.append(k)
    return not bad, bad


def write_ref(name, ref, rows):
    with open(os.path.join(OUT_REFS, name + ".json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    if rows is not None:
        rows.tofile(os.path.join(OUT_REFS, name + ".logits.bin"))


def main():
    os.makedirs(OUT_REFS, exist_ok=True)
    os.makedirs(WORK, exist_ok=True)
    vers = versions()
    with tempfile.TemporaryDirectory(dir=WORK) as tmp:
        for name, fixture, bits, group, pred, what in CASES:
            src = src_with_tokenizer(fixture, tmp)
            out = os.path.join(tmp, name)
            convert(src, out, quantize=True, q_group_size=group, q_bits=bits, quant_predicate=pred)
            dst = os.path.join(REPO, "tests", "fixtures", name)
            shutil.rmtree(dst, ignore_errors=True)
            os.makedirs(dst)
            for f in ("config.json", "model.safetensors"):
                shutil.copy(os.path.join(out, f), dst)
            bf16 = "bf16" in name
            ids, rows = greedy(dst, f32=bf16)
            native = greedy(dst)[0] if bf16 else None
            write_ref(name, {
                "model": {"repo": "tests/fixtures/" + name},
                "source": {"fixture": "tests/fixtures/" + fixture,
                           "convert": "mlx_lm.convert(quantize=True, q_bits=%d, q_group_size=%d%s)"
                                      % (bits, group, ", quant_predicate=mixed_predicate" if pred else ""),
                           "covers": what},
                "versions": vers,
                "settings": {"decode": "greedy: model forward with make_prompt_cache, argmax, no EOS stop",
                             "logits": "f32 little-endian, one row per generated id"},
                "vocab_size": int(rows.shape[1]),
                "prompt_ids": PROMPT,
                "ids": ids,
                "note": ("ids and logits with every float parameter cast to f32 (exact) so mlx computes in f32 "
                         "like llmgen; ids_native_bf16: mlx's own bf16 run, not compared (bf16 activations)")
                        if bf16 else "mlx computes in f32 (the fixture's dtype)",
                "ids_native_bf16": native,
            }, rows)
            print("%-28s %s" % (name, ids[:12]))

        llmgen = os.path.join(REPO, "llmgen")
        for name, fixture, bits, group, twin in LLMGEN_CASES:
            out = os.path.join(tmp, name)
            subprocess.run([llmgen, "quantize", os.path.join(REPO, "tests", "fixtures", fixture), out,
                            "--bits", str(bits), "--group-size", str(group)], check=True)
            ids, _ = greedy(out, f32="bf16" in name)
            equal, diff = same_tensors(out, os.path.join(REPO, "tests", "fixtures", twin))
            write_ref(name, {
                "source": {"fixture": "tests/fixtures/" + fixture,
                           "quantize": "llmgen quantize --bits %d --group-size %d" % (bits, group),
                           "mlx_convert_twin": "tests/fixtures/" + twin},
                "versions": vers,
                "settings": {"decode": "greedy: model forward with make_prompt_cache, argmax, no EOS stop"},
                "bits": bits, "group_size": group, "fixture": "tests/fixtures/" + fixture,
                "prompt_ids": PROMPT,
                "ids": ids,
                "tensors_equal_mlx_convert": equal,
                "tensors_differing": diff,
            }, None)
            print("%-28s %s tensors equal to mlx_lm.convert: %s %s" % (name, ids[:12], equal, diff[:4]))


if __name__ == "__main__":
    main()
