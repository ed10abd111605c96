"""Torch-free helpers shared by build_fixtures.py (CI) and make_refs.py (reference venv).

- a safetensors reader/writer in plain numpy (numpy has no bfloat16, so bf16 tensors travel as uint16
  bit patterns and the writer streams tensor by tensor to keep peak RAM small);
- content_hash(): one sha256 over tensor names, dtypes, shapes and data bytes, independent of header
  order, padding and metadata, so a directory written by transformers and one rebuilt here compare equal
  exactly when their tensors are bit-identical;
- the deterministic random-weight generator for the Llama-3.2-1B-shaped fixture;
- the GGUF -> HF tensor conversion for the default model (dequantize, undo llama.cpp's Q/K permutation).
"""
import hashlib
import json
import math
import os
import struct

import numpy as np

# safetensors dtype name -> (numpy dtype of the stored bits, bytes per element)
ST_DTYPES = {
    "F32": (np.dtype("<f4"), 4),
    "F16": (np.dtype("<f2"), 2),
    "BF16": (np.dtype("<u2"), 2),  # raw bf16 bit patterns
    "F64": (np.dtype("<f8"), 8),
    "I64": (np.dtype("<i8"), 8),
    "I32": (np.dtype("<i4"), 4),
    "U8": (np.dtype("u1"), 1),
}

HASH_CHUNK = 64 << 20


# ---- safetensors ------------------------------------------------------------------------------

def st_read_header(path):
    """Return (header dict without __metadata__, data start offset)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def st_tensor(path, name):
    """Load one tensor as a numpy array (bf16 as uint16 bits)."""
    header, start = st_read_header(path)
    info = header[name]
    np_dtype, _ = ST_DTYPES[info["dtype"]]
    b, e = info["data_offsets"]
    with open(path, "rb") as f:
        f.seek(start + b)
        buf = f.read(e - b)
    return np.frombuffer(buf, dtype=np_dtype).reshape(info["shape"])


class StWriter:
    """Streams a safetensors file: declare every tensor up front, then write their bytes in order.

    The header is laid out like the safetensors library does it (JSON padded with spaces to a multiple
    of 8 bytes, data offsets contiguous in declaration order), with {"format": "pt"} metadata so
    transformers accepts the file."""

    def __init__(self, path, specs):
        # specs: list of (name, dtype, shape)
        self.path = path
        self.tmp = path + ".tmp.%d" % os.getpid()
        header = {"__metadata__": {"format": "pt"}}
        off = 0
        self.expected = []
        for name, dtype, shape in specs:
            nbytes = ST_DTYPES[dtype][1] * math.prod(shape)
            header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + nbytes]}
            self.expected.append((name, nbytes))
            off += nbytes
        hjson = json.dumps(header, separators=(",", ":")).encode()
        hjson += b" " * (-len(hjson) % 8)
        self.f = open(self.tmp, "wb")
        self.f.write(struct.pack("<Q", len(hjson)))
        self.f.write(hjson)
        self.index = 0
        self.left = self.expected[0][1] if self.expected else 0

    def write(self, name, chunk):
        """Append bytes of tensor `name` (may be called several times per tensor, in order)."""
        want, _ = self.expected[self.index]
        if name != want:
            raise ValueError("StWriter: got %s, expected %s" % (name, want))
        data = np.ascontiguousarray(chunk).tobytes()
        if len(data) > self.left:
            raise ValueError("StWriter: too many bytes for %s" % name)
        self.f.write(data)
        self.left -= len(data)
        if self.left == 0:
            self.index += 1
            self.left = self.expected[self.index][1] if self.index < len(self.expected) else 0

    def close(self):
        if self.index != len(self.expected):
            raise ValueError("StWriter: %s not fully written" % self.expected[self.index][0])
        self.f.close()
        os.replace(self.tmp, self.path)


def content_hash(path):
    """sha256 over (name, dtype, shape, data) of every tensor, sorted by name. Streams the data."""
    header, start = st_read_header(path)
    h = hashlib.sha256(b"llmgen-safetensors-content-v1\n")
    with open(path, "rb") as f:
        for name in sorted(header):
            info = header[name]
            b, e = info["data_offsets"]
            meta = "%s\0%s\0%s\0%d\n" % (name, info["dtype"], ",".join(map(str, info["shape"])), e - b)
            h.update(meta.encode())
            f.seek(start + b)
            left = e - b
            while left:
                block = f.read(min(left, HASH_CHUNK))
                if not block:
                    raise ValueError("%s: tensor %s truncated" % (path, name))
                h.update(block)
                left -= len(block)
    return h.hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def f32_to_bf16_bits(x):
    """float32 -> bf16 bit patterns, round to nearest even, in integer arithmetic (inputs are finite)."""
    u = np.ascontiguousarray(x, dtype="<f4").view("<u4")
    return ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype("<u2")


# ---- the Llama-3.2-1B-shaped random checkpoint ----------------------------------------------------

LLAMA_1B = dict(hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64, inter=8192, vocab=128256)
GEN_TAG = b"llmgen-llama-1b-random/v1/"
GEN_STD = 0.02
CHUNK_WORDS = 1 << 22  # uint64 draws per step (two values each): 64 MB of f32 at a time


def llama_1b_specs(c=LLAMA_1B):
    """(name, dtype, shape) of every tensor, in the order written. Tied embeddings: no lm_head."""
    h, kv = c["hidden"], c["kv_heads"] * c["head_dim"]
    q = c["heads"] * c["head_dim"]
    specs = [("model.embed_tokens.weight", "BF16", (c["vocab"], h))]
    for i in range(c["layers"]):
        p = "model.layers.%d." % i
        specs += [
            (p + "input_layernorm.weight", "BF16", (h,)),
            (p + "self_attn.q_proj.weight", "BF16", (q, h)),
            (p + "self_attn.k_proj.weight", "BF16", (kv, h)),
            (p + "self_attn.v_proj.weight", "BF16", (kv, h)),
            (p + "self_attn.o_proj.weight", "BF16", (h, q)),
            (p + "post_attention_layernorm.weight", "BF16", (h,)),
            (p + "mlp.gate_proj.weight", "BF16", (c["inter"], h)),
            (p + "mlp.up_proj.weight", "BF16", (c["inter"], h)),
            (p + "mlp.down_proj.weight", "BF16", (h, c["inter"])),
        ]
    specs.append(("model.norm.weight", "BF16", (h,)))
    return specs


def random_bf16_chunks(name, count):
    """Yield bf16 bit patterns (uint16) for tensor `name`, `count` values in total.

    Platform independent by construction: the seed is sha256(tag + name) (never Python's hash()),
    numpy's PCG64 raw 64-bit stream is specified bit for bit, each draw gives two signed 24-bit
    integers k, and value = float32(k) * float32(scale) is one correctly rounded IEEE multiply
    (plus one IEEE add of 1.0 for norm weights). Uniform on [-a, a) with a = std * sqrt(3)."""
    seed = int.from_bytes(hashlib.sha256(GEN_TAG + name.encode()).digest()[:16], "little")
    bitgen = np.random.PCG64(seed)
    is_norm = name.endswith("norm.weight")
    scale = np.float32(GEN_STD * math.sqrt(3.0) / (1 << 23))
    left = count
    while left:
        words = min(CHUNK_WORDS, (left + 1) // 2)
        raw = bitgen.random_raw(words)
        k = np.empty(2 * words, dtype=np.int32)
        k[0::2] = (raw >> np.uint64(40)).astype(np.int32)
        k[1::2] = ((raw >> np.uint64(8)) & np.uint64(0xFFFFFF)).astype(np.int32)
        del raw
        k -= 1 << 23
        v = k.astype(np.float32)
        del k
        v *= scale
        if is_norm:
            v += np.float32(1.0)
        n = min(left, v.size)
        yield f32_to_bf16_bits(v[:n])
        left -= n


def write_llama_1b(path):
    specs = llama_1b_specs()
    w = StWriter(path, specs)
    for name, _, shape in specs:
        for chunk in random_bf16_chunks(name, math.prod(shape)):
            w.write(name, chunk)
    w.close()


# ---- the default GGUF as an HF checkpoint ----------------------------------------------------------

GGUF_TO_HF = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def hf_name(gguf_name):
    if gguf_name == "token_embd.weight":
        return "model.embed_tokens.weight"
    if gguf_name == "output_norm.weight":
        return "model.norm.weight"
    if gguf_name == "output.weight":
        return "lm_head.weight"
    parts = gguf_name.split(".")  # blk.N.kind.weight
    if len(parts) != 4 or parts[0] != "blk" or parts[2] not in GGUF_TO_HF:
        raise ValueError("unexpected GGUF tensor %s" % gguf_name)
    return "model.layers.%s.%s.%s" % (parts[1], GGUF_TO_HF[parts[2]], parts[3])


def unpermute_rows(w, n_head):
    """Undo llama.cpp's convert-time Q/K row permutation (interleaved rotary pairs -> rotate_half)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_hf_tensors(gguf_path):
    """Yield (hf_name, float32 array) for every tensor of a llama GGUF, dequantized like transformers."""
    from gguf import GGUFReader, dequantize

    r = GGUFReader(gguf_path)

    def field(key):
        f = r.fields[key]
        return int(f.parts[f.data[0]][0])

    n_head = field("llama.attention.head_count")
    n_kv = field("llama.attention.head_count_kv")
    for t in r.tensors:
        w = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        if ".attn_q." in t.name:
            w = unpermute_rows(w, n_head)
        elif ".attn_k." in t.name:
            w = unpermute_rows(w, n_kv)
        yield hf_name(t.name), np.ascontiguousarray(w)


def write_gguf_as_hf(gguf_path, out_f32, out_bf16):
    """Write the f32 and bf16 model.safetensors of an HF directory from a GGUF (both fit in RAM)."""
    tensors = sorted(gguf_hf_tensors(gguf_path))
    specs32 = [(n, "F32", w.shape) for n, w in tensors]
    specs16 = [(n, "BF16", w.shape) for n, w in tensors]
    w32, w16 = StWriter(out_f32, specs32), StWriter(out_bf16, specs16)
    for n, w in tensors:
        w32.write(n, w.astype("<f4"))
        w16.write(n, f32_to_bf16_bits(w))
    w32.close()
    w16.close()
