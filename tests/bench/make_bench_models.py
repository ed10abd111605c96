#!/usr/bin/env python3
"""Write the benchmark GGUF files from the bf16 Llama-3.2-1B-shaped random checkpoint.

Usage: make_bench_models.py CACHE [TYPE ...]      (run by `make bench-models` in the bench venv)

Reads   CACHE/fixtures/llama-1b-random/{config.json, model.safetensors}   (built by `make fixtures`)
Writes  CACHE/bench/llama-1b-random.<TYPE>.gguf for TYPE in F16 Q8_0 Q4_0 Q4_1 (default: all four)

Both engines must read the same numbers, so every file is derived from the same bf16 weights:
- every 2-D weight (the tied token embedding too) is stored in TYPE ("pure" files, as llama.cpp's
  converter writes --outtype f16 / q8_0; llama-quantize would instead pick Q6_K for the tied
  embedding, a type llmgen does not read); 1-D norm weights stay F32 like the converter keeps them;
- quantization is the PyPI gguf package's reference quantizer (gguf.quants.quantize), per row;
- Q and K rows are permuted the way llama.cpp's converter does (rotary pairs interleaved), so the
  files look exactly like converted Llama 3 checkpoints;
- llama3 RoPE scaling is written the converter's way, as a `rope_freqs.weight` F32 tensor of head_dim/2
  factors that divide the base frequencies (llama.cpp has no metadata key for llama3 scaling);
- there is no tokenizer: `tokenizer.ggml.model = "none"` and `llama.vocab_size`, which llama.cpp
  accepts (it makes vocab_size dummy tokens); both engines are driven with token ids.

One pass over the source feeds all requested files, tensor by tensor, so peak memory stays near one
f32 tensor. A `.stamp` beside each file (source size and mtime, this script's sha256) skips up-to-date
files, so a second run takes a moment.
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
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "gen"))
import fixturelib as F  # noqa: E402  (owned by the fixture builder: read-only use)

NAME = "llama-1b-random"
QTYPES = {
    "F16": (gguf.GGMLQuantizationType.F16, gguf.LlamaFileType.MOSTLY_F16),
    "Q8_0": (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
    "Q4_0": (gguf.GGMLQuantizationType.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0),
    "Q4_1": (gguf.GGMLQuantizationType.Q4_1, gguf.LlamaFileType.MOSTLY_Q4_1),
}
HF_TO_GGUF = {v: k for k, v in F.GGUF_TO_HF.items()}
ROWS_PER_CHUNK = 4096  # rows quantized at once: bounds the quantizer's temporaries (~ 8 x chunk)


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    parts = hf.split(".")  # model.layers.N.<module>.<proj>.weight or model.layers.N.<norm>.weight
    module = ".".join(parts[3:-1])
    if parts[:2] != ["model", "layers"] or module not in HF_TO_GGUF:
        raise SystemExit("bench-models: unexpected tensor %s in the source checkpoint" % hf)
    return "blk.%s.%s.weight" % (parts[2], HF_TO_GGUF[module])


def permute_rows(w, n_head):
    """llama.cpp's convert-time Q/K permutation: rotate_half pairs (i, i+d/2) -> interleaved (2i, 2i+1).
    The exact inverse of fixturelib.unpermute_rows."""
    rows = w.shape[0]
    return w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def rope_params(cfg):
    """(rope_theta, scaling dict) from a transformers 4.x ("rope_theta" + "rope_scaling") or 5.x
    ("rope_parameters", theta inside) config.json."""
    rp = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    theta = cfg.get("rope_theta", rp.get("rope_theta", 10000.0))
    return float(theta), rp


def llama3_rope_factors(cfg):
    """The converter's rope_freqs.weight: per frequency, the divisor that turns the base frequency
    into the llama3-scaled one (1 for high frequencies, `factor` for low ones, smooth between)."""
    base, rs = rope_params(cfg)
    if rs.get("rope_type", rs.get("type")) != "llama3":
        return None
    dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    factor = rs.get("factor", 8.0)
    lo, hi = rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
    old = rs.get("original_max_position_embeddings", 8192)
    lo_wl, hi_wl = old / lo, old / hi
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < hi_wl:
            out.append(1.0)
        elif wl > lo_wl:
            out.append(factor)
        else:
            s = (old / wl - lo) / (hi - lo)
            out.append(1.0 / ((1 - s) / factor + s))
    return np.array(out, dtype=np.float32)


def source_tensors(st_path):
    """{hf name: (shape, memmap of bf16 bits)} without reading the data."""
    header, start = F.st_read_header(st_path)
    out = {}
    for name, info in header.items():
        if info["dtype"] != "BF16":
            raise SystemExit("bench-models: %s is %s, expected BF16" % (name, info["dtype"]))
        b, e = info["data_offsets"]
        mm = np.memmap(st_path, dtype="<u2", mode="r", offset=start + b, shape=tuple(info["shape"]))
        out[name] = (tuple(info["shape"]), mm)
    return out


def bf16_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint32) << np.uint32(16)).view(np.float32)


def tensor_plan(cfg, src):
    """[(gguf name, hf name or None, logical shape (rows, cols) or (n,), is_2d)] in file order."""
    plan = [("token_embd.weight", "model.embed_tokens.weight")]
    if llama3_rope_factors(cfg) is not None:
        plan.append(("rope_freqs.weight", None))
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        for mod in ("input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                    "self_attn.o_proj", "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj",
                    "mlp.down_proj"):
            plan.append((gguf_name(p + mod + ".weight"), p + mod + ".weight"))
    plan.append(("output_norm.weight", "model.norm.weight"))
    used = {hf for _, hf in plan if hf}
    extra = sorted(set(src) - used)
    if extra:
        raise SystemExit("bench-models: source tensors not mapped: %s" % ", ".join(extra[:5]))
    return plan


def write_metadata(w, cfg, ftype, name="Llama-3.2-1B-shaped random weights (llmgen bench)"):
    dim_head = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    w.add_type("model")
    w.add_name(name)
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg.get("num_key_value_heads", cfg["num_attention_heads"]))
    w.add_rope_freq_base(rope_params(cfg)[0])
    w.add_layer_norm_rms_eps(float(cfg.get("rms_norm_eps", 1e-6)))
    w.add_key_length(dim_head)
    w.add_value_length(dim_head)
    w.add_file_type(int(ftype))
    w.add_vocab_size(cfg["vocab_size"])
    w.add_rope_dimension_count(dim_head)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_tokenizer_model("none")
    if isinstance(cfg.get("bos_token_id"), int):
        w.add_bos_token_id(cfg["bos_token_id"])
    eos = cfg.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) and eos else eos
    if isinstance(eos, int):
        w.add_eos_token_id(eos)


def byte_shape(shape, qtype):
    if qtype == gguf.GGMLQuantizationType.F16:
        return tuple(shape), np.float16, 2 * math.prod(shape)
    bs, ts = gguf.GGML_QUANT_SIZES[qtype]
    if shape[-1] % bs:
        raise SystemExit("bench-models: row length %d is not a multiple of %d" % (shape[-1], bs))
    bshape = tuple(shape[:-1]) + (shape[-1] // bs * ts,)
    return bshape, np.uint8, math.prod(bshape)


def convert_2d(f32, qtype):
    if qtype == gguf.GGMLQuantizationType.F16:
        return f32.astype(np.float16)
    return gguf.quants.quantize(f32, qtype)


def stamp_for(st_path, kind):
    with open(os.path.abspath(__file__), "rb") as f:
        me = hashlib.sha256(f.read()).hexdigest()
    st = os.stat(st_path)
    return {"source_size": st.st_size, "source_mtime_ns": st.st_mtime_ns, "script_sha256": me, "type": kind}


def up_to_date(path, stamp):
    try:
        with open(path + ".stamp") as f:
            return json.load(f) == stamp and os.path.exists(path)
    except (OSError, ValueError):
        return False


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_bench_models.py CACHE [F16 Q8_0 Q4_0 Q4_1]")
    cache = sys.argv[1]
    kinds = sys.argv[2:] or list(QTYPES)
    for k in kinds:
        if k not in QTYPES:
            sys.exit("bench-models: unknown type %s (expected one of %s)" % (k, " ".join(QTYPES)))
    src_dir = os.path.join(cache, "fixtures", NAME)
    st_path = os.path.join(src_dir, "model.safetensors")
    cfg_path = os.path.join(src_dir, "config.json")
    for p in (st_path, cfg_path):
        if not os.path.exists(p):
            sys.exit("bench-models: %s is missing (make fixtures builds it)" % p)
    with open(cfg_path) as f:
        cfg = json.load(f)
    out_dir = os.path.join(cache, "bench")
    os.makedirs(out_dir, exist_ok=True)

    todo = []
    for k in kinds:
        path = os.path.join(out_dir, "%s.%s.gguf" % (NAME, k))
        stamp = stamp_for(st_path, k)
        if up_to_date(path, stamp):
            print("bench-models: %s up to date" % os.path.relpath(path, cache), file=sys.stderr)
        else:
            todo.append((k, path, stamp))
    if not todo:
        return

    t0 = time.time()
    src = source_tensors(st_path)
    plan = tensor_plan(cfg, src)
    rope = llama3_rope_factors(cfg)
    n_head = cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads", n_head)

    writers = []
    for k, path, stamp in todo:
        qtype, ftype = QTYPES[k]
        w = gguf.GGUFWriter(path + ".tmp", "llama")
        write_metadata(w, cfg, ftype)
        for gname, hf in plan:
            if hf is None:
                w.add_tensor_info(gname, rope.shape, np.float32, rope.nbytes)
                continue
            shape = src[hf][0]
            if len(shape) == 1:
                w.add_tensor_info(gname, shape, np.float32, 4 * shape[0])
            else:
                bshape, dt, nbytes = byte_shape(shape, qtype)
                w.add_tensor_info(gname, bshape, dt, nbytes,
                                  raw_dtype=None if dt == np.float16 else qtype)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        writers.append((k, qtype, w))

    for gname, hf in plan:
        if hf is None:
            for _, _, w in writers:
                w.write_tensor_data(rope)
            continue
        shape, mm = src[hf]
        if len(shape) == 1:
            v = bf16_to_f32(mm)
            for _, _, w in writers:
                w.write_tensor_data(v)
            continue
        f32 = bf16_to_f32(mm)
        if gname.endswith("attn_q.weight"):
            f32 = permute_rows(f32, n_head)
        elif gname.endswith("attn_k.weight"):
            f32 = permute_rows(f32, n_kv)
        for _, qtype, w in writers:
            parts = [convert_2d(f32[r:r + ROWS_PER_CHUNK], qtype) for r in range(0, shape[0], ROWS_PER_CHUNK)]
            w.write_tensor_data(np.concatenate(parts) if len(parts) > 1 else parts[0])
        del f32

    for (k, path, stamp), (_, _, w) in zip(todo, writers):
        w.close()
        os.replace(path + ".tmp", path)
        with open(path + ".stamp", "w") as f:
            json.dump(stamp, f)
        print("bench-models: wrote %s (%.1f MB)" % (os.path.relpath(path, cache), os.path.getsize(path) / 1e6),
              file=sys.stderr)
    print("bench-models: %d file(s) in %.1f s" % (len(todo), time.time() - t0), file=sys.stderr)


if __name__ == "__main__":
    main()
