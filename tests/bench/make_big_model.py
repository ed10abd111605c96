#!/usr/bin/env python3
"""Write a Q4_K_M GGUF of random valid blocks in a published config, for load-time and speed benchmarks.

Usage: make_big_model.py CACHE [CONFIG]   (run by `make big-model` / `make moe-models` in the tools venv:
                                            numpy, gguf; CONFIG one of CONFIGS below, default llama-8b)

Writes  CACHE/bench/<file of CONFIG> and a .stamp beside it (this script's sha256 and the file size): a
second run with the file in place takes a moment. The configs:
  llama-8b        llama-8b-random.Q4_K_M.gguf, Llama-3.1-8B (about 4.9 GB, like the real download)
  qwen3-30b-a3b   qwen3-30b-a3b-random.Q4_K_M.gguf, Qwen3-30B-A3B (about 17.5 GB): 48 layers of 128
                  experts (8 per token, width 768), GQA 32/4, head_dim 128, q/k norms
  olmoe-1b-7b     olmoe-1b-7b-random.Q4_K_M.gguf, OLMoE-1B-7B-0924 (about 4.0 GB): 16 layers of 64
                  experts (8 per token, width 1024), q/k norms over the whole projections
The expert files follow llama-quantize's Q4_K_M for them as for the dense one: the ffn_*_exps stacks Q4_K,
ffn_down_exps Q6_K in the "use_more_bits" layers, the router (ffn_gate_inp) and the norms F32.

The file has what llama-quantize's Q4_K_M puts in a converted Llama-3.1-8B (llama.cpp's llama-quant.cpp,
in the pinned sdist of `make peer`): Q4_K for every matrix, token_embd included, except output.weight and
attn_v / ffn_down of the "use_more_bits" layers (the first and last eighth and every third between: 16 of
32), which are Q6_K; norms and rope_freqs F32 (66 tensors: 193 Q4_K, 33 Q6_K, as the real file).
The config is the published one: 32 layers, hidden 4096, 32 heads, 8 KV heads, FFN 14336, vocab 128256,
untied output, rope base 500000 with llama3 scaling (written as the converter does, a rope_freqs.weight
tensor), 131072 positions.

The blocks are random bytes with the scales set, written straight to the file (no float weights, no
quantizer): quantized values and 6-bit sub-block scales / mins are uniform, every f16 super-block scale
is finite and set so the weights have a standard deviation near 0.026 (about 1/sqrt(hidden) like an
initialised Llama), which keeps activations and logits finite through the 32 layers. The numbers mean
nothing; the cost of reading and computing with them is the real model's. A fixed seed per tensor makes
the file the same on every run.

There is no tokenizer (`tokenizer.ggml.model = "none"` with `llama.vocab_size`, as the 1B-config bench
files): both engines are driven with token ids (llmgen --prompt-ids, build/bench/peer_run, llama-bench).
"""
import hashlib
import json
import math
import os
import sys
import time

import numpy as np
import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_bench_models import llama3_rope_factors, write_metadata  # noqa: E402

CONFIGS = {  # the published config.json fields the GGUF carries; arch: the GGUF architecture
    "llama-8b": {  # meta-llama/Llama-3.1-8B
        "file": "llama-8b-random.Q4_K_M.gguf", "arch": "llama", "title": "Llama-3.1-8B",
        "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "bos_token_id": 128000, "eos_token_id": 128001,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192},
    },
    "qwen3-30b-a3b": {  # Qwen/Qwen3-30B-A3B
        "file": "qwen3-30b-a3b-random.Q4_K_M.gguf", "arch": "qwen3moe", "title": "Qwen3-30B-A3B",
        "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
        "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
        "num_experts_per_tok": 8, "vocab_size": 151936, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "bos_token_id": 151643, "eos_token_id": 151645, "qk_norm": "head",
    },
    "olmoe-1b-7b": {  # allenai/OLMoE-1B-7B-0924 (the converter writes its expert width as feed_forward_length)
        "file": "olmoe-1b-7b-random.Q4_K_M.gguf", "arch": "olmoe", "title": "OLMoE-1B-7B",
        "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 16,
        "intermediate_size": 1024, "num_experts": 64, "num_experts_per_tok": 8, "vocab_size": 50304,
        "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "eos_token_id": 50279,
        "qk_norm": "full",
    },
}
Q4_K, Q6_K = gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q6_K
# Super-block scales: Q4_K w = d*sc*q - dmin*m (sc, m, q uniform: dmin = 7.5 d centres it), std about
# 258 d; Q6_K w = d*sc*(q - 32) with sc uniform in 1..24, std about 264 d. d = 1e-4 gives about 0.026.
D_Q4K, D_Q6K = 1e-4, 1e-4
ROWS_PER_CHUNK = 8192  # rows of random blocks made at once (the output matrix is 431 MB)


def use_more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def tensor_plan(cfg):
    """[(name, shape (rows, cols) or (n,), type)] in the converter's order."""
    h, f, L = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    hd = cfg.get("head_dim") or h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    E, fe = cfg.get("num_experts", 0), cfg.get("moe_intermediate_size") or f
    plan = [("token_embd.weight", (cfg["vocab_size"], h), Q4_K)]
    if "rope_scaling" in cfg:
        plan.append(("rope_freqs.weight", (hd // 2,), None))
    for i in range(L):
        more = Q6_K if use_more_bits(i, L) else Q4_K
        b = "blk.%d." % i
        plan += [(b + "attn_norm.weight", (h,), None), (b + "attn_q.weight", (q, h), Q4_K),
                 (b + "attn_k.weight", (kv, h), Q4_K), (b + "attn_v.weight", (kv, h), more),
                 (b + "attn_output.weight", (h, q), Q4_K)]
        if cfg.get("qk_norm"):
            qn, kn = (hd, hd) if cfg["qk_norm"] == "head" else (q, kv)
            plan += [(b + "attn_q_norm.weight", (qn,), None), (b + "attn_k_norm.weight", (kn,), None)]
        plan.append((b + "ffn_norm.weight", (h,), None))
        if E:
            plan += [(b + "ffn_gate_inp.weight", (E, h), None), (b + "ffn_gate_exps.weight", (E, fe, h), Q4_K),
                     (b + "ffn_up_exps.weight", (E, fe, h), Q4_K), (b + "ffn_down_exps.weight", (E, h, fe), more)]
        else:
            plan += [(b + "ffn_gate.weight", (f, h), Q4_K), (b + "ffn_up.weight", (f, h), Q4_K),
                     (b + "ffn_down.weight", (h, f), more)]
    plan += [("output_norm.weight", (h,), None), ("output.weight", (cfg["vocab_size"], h), Q6_K)]
    return plan


def numel(shape):
    return math.prod(shape)


def random_blocks(rng, rows, cols, qtype):
    """rows x cols values of random valid blocks of qtype, as a (rows, bytes per row) uint8 array."""
    bs, ts = gguf.GGML_QUANT_SIZES[qtype]
    nb = rows * cols // bs
    b = np.frombuffer(rng.bytes(nb * ts), dtype=np.uint8).reshape(nb, ts).copy()
    scale = rng.uniform(0.5, 1.5, nb)  # the super-block scales vary a little, as a quantizer's do
    if qtype == Q4_K:  # {f16 d, f16 dmin, u8 scales[12], u8 qs[128]}
        b[:, 0:2] = (scale * D_Q4K).astype("<f2").view(np.uint8).reshape(nb, 2)
        b[:, 2:4] = (scale * D_Q4K * 7.5).astype("<f2").view(np.uint8).reshape(nb, 2)
    else:  # Q6_K {u8 ql[128], u8 qh[64], i8 scales[16], f16 d}
        b[:, 192:208] = rng.integers(1, 25, (nb, 16), dtype=np.uint8)
        b[:, 208:210] = (scale * D_Q6K).astype("<f2").view(np.uint8).reshape(nb, 2)
    return b.reshape(rows, cols // bs * ts)


def expected_bytes(plan):
    return sum(4 * numel(s) if t is None else numel(s) // gguf.GGML_QUANT_SIZES[t][0] * gguf.GGML_QUANT_SIZES[t][1]
               for _, s, t in plan)


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in CONFIGS):
        sys.exit("usage: make_big_model.py CACHE [%s]" % "|".join(CONFIGS))
    cfg = CONFIGS[sys.argv[2] if len(sys.argv) == 3 else "llama-8b"]
    out_dir = os.path.join(sys.argv[1], "bench")
    path = os.path.join(out_dir, cfg["file"])
    with open(os.path.abspath(__file__), "rb") as f:
        me = hashlib.sha256(f.read()).hexdigest()
    try:
        with open(path + ".stamp") as f:
            st = json.load(f)
        if st.get("script_sha256") == me and os.path.getsize(path) == st.get("size"):
            print("big-model: %s up to date" % os.path.relpath(path), file=sys.stderr)
            return
    except (OSError, ValueError):
        pass
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.time()
    plan = tensor_plan(cfg)
    rope = llama3_rope_factors(cfg)
    w = gguf.GGUFWriter(path + ".tmp", cfg["arch"])
    write_metadata(w, cfg, gguf.LlamaFileType.MOSTLY_Q4_K_M, "%s-shaped random weights (llmgen bench)" % cfg["title"])
    if cfg.get("num_experts"):
        w.add_expert_count(cfg["num_experts"])
        w.add_expert_used_count(cfg["num_experts_per_tok"])
        if cfg.get("moe_intermediate_size"):
            w.add_expert_feed_forward_length(cfg["moe_intermediate_size"])
    for name, shape, qt in plan:
        if qt is None:
            w.add_tensor_info(name, shape, np.float32, 4 * numel(shape))
        else:
            bs, ts = gguf.GGML_QUANT_SIZES[qt]
            bshape = tuple(shape[:-1]) + (shape[-1] // bs * ts,)
            w.add_tensor_info(name, bshape, np.uint8, numel(bshape), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for k, (name, shape, qt) in enumerate(plan):
        if name == "rope_freqs.weight":
            w.write_tensor_data(rope)
        elif qt is None and name.endswith("ffn_gate_inp.weight"):  # a random router: no ties between experts
            rng = np.random.default_rng(1000 + k)
            w.write_tensor_data((rng.standard_normal(shape) / math.sqrt(shape[1])).astype(np.float32))
        elif qt is None:
            w.write_tensor_data(np.ones(shape, dtype=np.float32))
        else:
            rng = np.random.default_rng(1000 + k)
            rows = numel(shape[:-1])  # a stack of experts: its matrices' rows end to end
            parts = [random_blocks(rng, min(ROWS_PER_CHUNK, rows - r), shape[-1], qt)
                     for r in range(0, rows, ROWS_PER_CHUNK)]
            data = np.concatenate(parts) if len(parts) > 1 else parts[0]
            w.write_tensor_data(data.reshape(tuple(shape[:-1]) + (data.shape[-1],)))
    w.close()
    size = os.path.getsize(path + ".tmp")
    if size < expected_bytes(plan):
        sys.exit("big-model: %s.tmp has %d bytes, fewer than its %d of tensor data" % (path, size, expected_bytes(plan)))
    os.replace(path + ".tmp", path)
    with open(path + ".stamp", "w") as f:
        json.dump({"script_sha256": me, "size": size}, f)
    census = {}
    for _, _, qt in plan:
        census[qt.name if qt is not None else "F32"] = census.get(qt.name if qt is not None else "F32", 0) + 1
    print("big-model: wrote %s (%.2f GB; %s) in %.0f s" % (
        os.path.relpath(path), size / 1e9, ", ".join("%s %d" % kv for kv in sorted(census.items())),
        time.time() - t0), file=sys.stderr)


if __name__ == "__main__":
    main()
