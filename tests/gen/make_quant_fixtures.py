#!/usr/bin/env python3
"""Build the tiny quantized GGUF fixtures committed under tests/fixtures/tiny-gguf/ (make quant-fixtures).

Usage: make_quant_fixtures.py CACHE       (run in the tools venv: numpy + the pinned gguf package;
                                           needs llama-quantize from `make peer`)

`make test` has no llama.cpp build, so the files llama.cpp's quantizer writes are committed, small:

1. A random-weight one-layer Llama (numpy PCG64, fixed seed; the scale rules of make_refs.tiny_init, so
   activations are O(1) and greedy ids are well separated) is written as an F32 GGUF into
   CACHE/quant-fixtures/tiny-gguf.F32.gguf the way llama.cpp's converter writes a Llama (Q and K rows
   permuted to interleaved rotary pairs, untied output.weight, tokenizer model "none" with
   llama.vocab_size, as the benchmark files of make_bench_models.py).
2. llama-quantize --pure turns it into one file per type. The shapes make every row length matter:
     row 256 (one K super-block): token_embd, attn_q/k/v, ffn_gate/up, output
     row 512 (two super-blocks):  attn_output (8 heads x head_dim 64)
     row  96 (three 32-blocks, not a multiple of 256): ffn_down (intermediate 96)
   so a K-type file also holds llama.cpp's fallback type on ffn_down (Q2_K/Q3_K -> Q4_0, Q4_K -> Q5_0,
   Q5_K -> Q5_1, Q6_K -> Q8_0, IQ4_XS -> IQ4_NL) and the 32-block types see rows of 96, 256 and 512.
3. tests/fixtures/tiny-gguf/README.md is rewritten with the exact commands, the census and the sha256
   of every file.

The references (HF transformers loading each file with gguf_file=) are made by make_quant_refs.py.
"""
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "bench"))
import make_bench_models as MB  # noqa: E402  (write_metadata, permute_rows: read-only use)

OUT = os.path.join(REPO, "tests", "fixtures", "tiny-gguf")
SEED = 5150
CONFIG = dict(vocab_size=128, hidden_size=256, intermediate_size=96, num_hidden_layers=1,
              num_attention_heads=8, num_key_value_heads=2, head_dim=64, max_position_embeddings=256,
              rms_norm_eps=1e-5, rope_theta=10000.0, bos_token_id=1, eos_token_id=2,
              tie_word_embeddings=False)
# (file type given to llama-quantize, what it shows)
TYPES = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS", "Q5_0", "Q5_1", "IQ4_NL", "MXFP4_MOE"]
# the file's name says its tensors' type: MXFP4_MOE with --pure makes every matrix MXFP4 (without
# --pure only 3-D expert tensors are)
FILE_TYPE = {"MXFP4_MOE": "MXFP4"}
LIMIT = 1 << 20  # every file must stay under 1 MiB


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def census(path):
    r = gguf.GGUFReader(path)
    by = {}
    for t in r.tensors:
        by.setdefault(t.tensor_type.name, []).append(t.name)
    return {k: sorted(v) for k, v in sorted(by.items())}


def weights(cfg):
    """[(gguf name, float32 array in HF (out, in) layout, Q/K rows already permuted)] in file order."""
    rng = np.random.Generator(np.random.PCG64(SEED))
    h, v, f = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]

    def lin(rows, cols, gain=1.0):
        return (rng.standard_normal((rows, cols)) * (gain / np.sqrt(cols))).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    out = [("token_embd.weight", rng.standard_normal((v, h)).astype(np.float32))]
    for i in range(cfg["num_hidden_layers"]):
        b = "blk.%d." % i
        out += [(b + "attn_norm.weight", norm(h)),
                (b + "attn_q.weight", MB.permute_rows(lin(nh * hd, h), nh)),
                (b + "attn_k.weight", MB.permute_rows(lin(nkv * hd, h), nkv)),
                (b + "attn_v.weight", lin(nkv * hd, h)),
                (b + "attn_output.weight", lin(h, nh * hd, 3.0)),
                (b + "ffn_norm.weight", norm(h)),
                (b + "ffn_gate.weight", lin(f, h)),
                (b + "ffn_up.weight", lin(f, h)),
                (b + "ffn_down.weight", lin(h, f, 3.0))]
    out += [("output_norm.weight", norm(h)), ("output.weight", lin(v, h, 4.0))]
    return out


def write_f32(path, cfg):
    w = gguf.GGUFWriter(path, "llama")
    MB.write_metadata(w, cfg, gguf.LlamaFileType.ALL_F32)
    w.add_name("llmgen tiny random Llama (quantized-type fixtures)")  # replaces the bench name (a warning)
    for name, a in weights(cfg):
        w.add_tensor(name, np.ascontiguousarray(a))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_quant_fixtures.py CACHE")
    cache = sys.argv[1]
    quantize = os.path.join(cache, "peer", "build", "bin", "llama-quantize")
    if not os.access(quantize, os.X_OK):
        sys.exit("quant-fixtures: %s is missing (make peer builds it)" % quantize)
    work = os.path.join(cache, "quant-fixtures")
    os.makedirs(work, exist_ok=True)
    os.makedirs(OUT, exist_ok=True)
    src = os.path.join(work, "tiny-gguf.F32.gguf")
    write_f32(src, CONFIG)
    peer = ""
    info = os.path.join(cache, "peer", "BUILD-INFO")
    if os.path.exists(info):
        peer = next((l.split(":", 1)[1].strip() for l in open(info) if l.startswith("llama_cpp_commit:")), "")
    rows = []
    for t in TYPES:
        name = "tiny-gguf.%s.gguf" % FILE_TYPE.get(t, t)
        dst = os.path.join(OUT, name)
        cmd = [quantize, "--pure", src, dst, t, "1"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            sys.stderr.write(p.stdout.decode("utf-8", "replace")[-3000:])
            sys.exit("quant-fixtures: llama-quantize failed for %s" % t)
        size = os.path.getsize(dst)
        if size >= LIMIT:
            sys.exit("quant-fixtures: %s is %d bytes, over the %d limit" % (name, size, LIMIT))
        c = census(dst)
        rows.append((t, name, size, sha256_file(dst), c))
        print("%-24s %7d  %s  %s" % (name, size, rows[-1][3],
                                     " ".join("%s %d" % (k, len(v)) for k, v in c.items())))
    write_readme(src, peer, rows)


def write_readme(src, peer, rows):
    cfg = json.dumps(CONFIG, sort_keys=True)
    lines = [
        "# tiny-gguf: quantized GGUF fixtures written by llama.cpp's llama-quantize",
        "",
        "Generated by `make quant-fixtures` (tests/gen/make_quant_fixtures.py); do not edit by hand.",
        "HF transformers references: `tests/refs/tiny-gguf.*.json` (made by `make quant-model-refs`),",
        "checked by `tests/cli/check_refs.py` in `make test` (llmgen --exact: every greedy id equal, logits",
        "within 1e-4 of the step's max |logit|). What that bound can see, measured on the Q4_K file: one",
        "weight moved by one quantization level (one nibble of attn_v, attn_output, ffn_down or output)",
        "moves llmgen's logits by 1.1e-3 to 1.3e-1 of the max against the reference; llmgen --exact agrees",
        "within about 1e-6.",
        "",
        "Source: a one-layer random-weight Llama written as F32 GGUF by the script (numpy PCG64 seed %d,"
        % SEED,
        "Q/K rows permuted as llama.cpp's converter does, tokenizer model \"none\"), config:",
        "",
        "    " + cfg,
        "",
        "Row lengths (ggml ne[0]): 256 for token_embd, attn_q/k/v, ffn_gate/up and output; 512 for",
        "attn_output (two K super-blocks); 96 for ffn_down (not a multiple of 256: llama.cpp falls back",
        "to a 32-block type there). llama.cpp commit %s (`make peer`)." % (peer or "unknown"),
        "",
        "Commands (F32 source: `.cache/quant-fixtures/tiny-gguf.F32.gguf`, sha256 `%s`):"
        % sha256_file(src),
        "",
        "```",
    ]
    for t, name, *_ in rows:
        lines.append("llama-quantize --pure tiny-gguf.F32.gguf %s %s 1" % (name, t))
    lines += ["```", "", "| file | bytes | sha256 | tensor types |", "|---|---|---|---|"]
    for t, name, size, sha, c in rows:
        types = "; ".join("%s: %s" % (k, ", ".join(n.replace(".weight", "") for n in v))
                          if k != "F32" else "F32: %d norms" % len(v) for k, v in c.items())
        lines.append("| `%s` | %d | `%s` | %s |" % (name, size, sha, types))
    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
