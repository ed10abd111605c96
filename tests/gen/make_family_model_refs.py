#!/usr/bin/env python3
"""HF transformers references for the random-weight checkpoints with the exact published configs of
Qwen3-0.6B, Qwen2.5-0.5B and Gemma-3-1B (never made by llmgen).

Usage: make_family_model_refs.py CACHE [NAME ...]     (run by `make family-model-refs` in the reference venv)

1. Writes tests/gen/<name>/config.json with the family's transformers config class (as transformers
   5.23 serializes that model type) from the published config.json below (PUBLISHED, each with its
   source), the way make_refs.py writes tests/gen/llama-1b-random/config.json.
2. Builds CACHE/families/<name>/ torch-free (build_family_models.py / familylib.py), records its
   checksums in tests/refs/families/fixtures.json, and checks that transformers loads it with no
   missing or unexpected tensor.
3. Loads it with dtype float32 and runs the references of tests/refs/llama-1b-random.json's kind
   (the "random-weight rule" of tests/cli/check_refs.py): greedy ids (manual loop, argmax, KV
   cache, no EOS stop), top-2 gap and max |logit| of every step, top-64 of every step, full logits of
   the first 2 steps, and HF's own f32-vs-f64 noise (teacher-forced, first case). Gemma-3-1B gets a
   second case whose prompt (600 ids) is longer than its 512-token sliding window.
   Writes tests/refs/families/<name>.json and <name>.logits.bin (checked by `make regress-families`).

The models are run one at a time (Gemma-3-1B in float32 is ~4 GB, in float64 ~8 GB).
"""
import gc
import json
import os
import sys
import time

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build_family_models as B  # noqa: E402
import familylib as L  # noqa: E402
import make_refs as R  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "tests", "refs", "families")

# The published config.json of each model, as its repository has it (transformers 4.x key layout).
PUBLISHED = {
    # https://huggingface.co/Qwen/Qwen3-0.6B/blob/main/config.json
    "qwen3-0.6b-random": {
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
        "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
        "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
        "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None, "tie_word_embeddings": True,
        "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": True,
        "use_sliding_window": False, "vocab_size": 151936},
    # https://huggingface.co/Qwen/Qwen2.5-0.5B/blob/main/config.json (the base model)
    "qwen2.5-0.5b-random": {
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
        "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
        "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
        "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True,
        "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": True, "use_mrope": False,
        "use_sliding_window": False, "vocab_size": 151936},
    # https://huggingface.co/google/gemma-3-1b-it/blob/main/config.json (the instruction-tuned model;
    # -pt differs only in eos_token_id 1). No tie_word_embeddings key: the class default (true).
    "gemma3-1b-random": {
        "architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "attn_logit_softcapping": None, "bos_token_id": 2, "cache_implementation": "hybrid",
        "eos_token_id": [1, 106], "final_logit_softcapping": None, "head_dim": 256,
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
        "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
        "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
        "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
        "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": True,
        "vocab_size": 262144},
}

STEPS = 12
PROMPT_LEN = 16
LONG_PROMPT_LEN = 600  # Gemma-3-1B: longer than the 512-token window of its sliding layers
LONG_STEPS = 8
TOPK = 64
FULL_ROWS = 2


def log(msg):
    print("family-model-refs: " + msg, file=sys.stderr, flush=True)


def write_config(name):
    """tests/gen/<name>/config.json: the published dict through transformers' own config class."""
    pub = dict(PUBLISHED[name])
    cfg = AutoConfig.for_model(pub.pop("model_type"), **pub)
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    cfg.save_pretrained(d)
    with open(os.path.join(d, "config.json")) as f:
        return json.load(f)


def prompt_ids(cfg, seed, n):
    rng = np.random.Generator(np.random.PCG64(seed))
    bos = cfg.get("bos_token_id")
    ids = [int(x) for x in rng.integers(0, min(cfg["vocab_size"], 151643), n - 1)]
    return ([bos] if isinstance(bos, int) else [int(rng.integers(0, 1000))]) + ids


def one_model(cache, name, vers, sums):
    cfg = write_config(name)
    t = time.time()
    d = B.build(cache, names=(name,), check=False)[name]
    sums[name] = B.describe(d)
    log("%s built torch-free in %.1f s (content %s)"
        % (name, time.time() - t, sums[name]["model.safetensors"]["content_sha256"][:16]))
    with open(B.CHECKSUMS + ".tmp", "w") as f:
        json.dump(sums, f, indent=1)
        f.write("\n")
    os.replace(B.CHECKSUMS + ".tmp", B.CHECKSUMS)
    B.verify(d, name, sums[name])

    m, info = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, output_loading_info=True)
    m.eval()
    bad = {k: v for k, v in info.items() if v and k != "error_msgs"} if isinstance(info, dict) else {}
    if bad:
        raise SystemExit("family-model-refs: transformers loaded %s with %s" % (name, bad))
    cases = []
    prompt = prompt_ids(cfg, 4242, PROMPT_LEN)
    t = time.time()
    case, rows = R.run_greedy(m, prompt, STEPS, topk=TOPK)
    log("%s: %d steps in %.1f s, ids %s, min gap %.3g" % (name, STEPS, time.time() - t, case["ids"],
                                                           min(case["gap"])))
    cases.append(dict(name="random-prompt", **case))
    full = rows[:FULL_ROWS]
    if cfg["model_type"] == "gemma3_text":
        long_prompt = prompt_ids(cfg, 4343, LONG_PROMPT_LEN)
        t = time.time()
        lcase, _ = R.run_greedy(m, long_prompt, LONG_STEPS, topk=TOPK, keep_rows=0)
        log("%s: long prompt (%d ids) + %d steps in %.1f s, ids %s" % (name, LONG_PROMPT_LEN, LONG_STEPS,
                                                                       time.time() - t, lcase["ids"]))
        cases.append(dict(name="long-prompt-past-window", **lcase))
    m64 = m.to(torch.float64)
    del m
    gc.collect()
    cases[0]["f64_rel_err"] = R.f64_rel_err(m64, cases[0], rows)
    del m64
    gc.collect()
    log("%s: f32 vs f64 rel err per step %s" % (name, ["%.2e" % e for e in cases[0]["f64_rel_err"]]))
    binname = name + ".logits.bin"
    np.stack(full).astype("<f4").tofile(os.path.join(OUT, binname))
    R.write_json(os.path.join(OUT, name + ".json"), dict(
        model={"cache": "families/" + name}, vocab_size=cfg["vocab_size"], versions=vers,
        source={"weights": "tests/gen/familylib.py (deterministic PCG64 per tensor, bf16)",
                "config": "tests/gen/%s/config.json (transformers %s config class from the published "
                          "config.json cited in tests/gen/make_family_model_refs.py)" % (name, cfg["model_type"]),
                "content_sha256": sums[name]["model.safetensors"]["content_sha256"]},
        settings=R.settings(load="AutoModelForCausalLM.from_pretrained(dir, dtype=float32)",
                            steps=STEPS, topk=TOPK,
                            f64_rel_err="max|f32 - f64| / max|f64| per step, teacher-forced (first case)"),
        logits={"file": "families/" + binname, "rows": FULL_ROWS, "dtype": "float32 little-endian",
                "case": "random-prompt",
                "row_i": "logits the i-th generated id was chosen from (row 0: prefill)"},
        cases=cases))


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_family_model_refs.py CACHE [NAME ...]")
    cache = sys.argv[1]
    names = sys.argv[2:] or list(L.MODELS)
    torch.set_num_threads(R.THREADS)
    torch.use_deterministic_algorithms(True)
    os.makedirs(OUT, exist_ok=True)
    vers = R.versions()
    sums = B.load_checksums()
    t0 = time.time()
    for name in names:
        if name not in PUBLISHED:
            raise SystemExit("family-model-refs: unknown model %s" % name)
        one_model(cache, name, vers, sums)
        gc.collect()
    log("done in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
