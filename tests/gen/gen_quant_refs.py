#!/usr/bin/env python3
"""Reference dequantizations of every GGUF block type llmgen reads, by gguf-py.

Writes tests/refs/quant/<TYPE>.bin for the unit tests (tests/unit/test_quant.c): random blocks
(deterministic seed) and the f32 values `gguf.quants.dequantize` gives for them, which is what HF
transformers loads from a GGUF. Every byte of a block is random but its f16 scale fields, which are
set to finite values of a realistic size (random bytes would give NaN / Inf scales).

File layout (little-endian): magic b"LQREF1\\0\\0", u32 ggml type id, u32 number of blocks,
u32 values per block, u32 bytes per block, then the blocks, then the values as f32.

Run with the tools venv (numpy + the pinned gguf): `make quant-refs`.
"""
import os
import struct
import sys
from importlib.metadata import version

import numpy as np
import gguf
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

# type -> byte offsets of its f16 scale fields within a block (ggml-common.h layouts)
SCALES = {
    T.Q8_0: [0], T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ4_NL: [0], T.IQ4_XS: [0],
}
# type -> byte offsets of its E8M0 scale bytes (MXFP4: 2^(e - 128), kept to 2^-12 .. 2^-1 as real
# weights have; random bytes reach 2^127, whose products overflow)
E8M0 = {T.MXFP4: [0]}
NBLOCKS = 6


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out_dir = os.path.join(root, "tests", "refs", "quant")
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(20261124)
    # the types in order, each drawing from the one generator (a type added at the end leaves the
    # others' blocks as they were)
    for t, offs in list(SCALES.items()) + list(E8M0.items()):
        be, bb = GGML_QUANT_SIZES[t]
        blocks = rng.integers(0, 256, size=(NBLOCKS, bb), dtype=np.uint8)
        for i in range(NBLOCKS):
            for o in offs:
                if t in E8M0:
                    blocks[i, o] = rng.integers(116, 128)
                    continue
                # sizes a real file has (1e-4 .. 0.05), one block with a negative scale
                v = np.float16(rng.uniform(1e-4, 0.05) * (-1 if i == 1 else 1))
                blocks[i, o:o + 2] = np.frombuffer(v.tobytes(), dtype=np.uint8)
        values = gguf.quants.dequantize(blocks.reshape(-1), t).astype(np.float32).reshape(-1)
        assert values.size == NBLOCKS * be and np.all(np.isfinite(values))
        with open(os.path.join(out_dir, f"{t.name}.bin"), "wb") as f:
            f.write(b"LQREF1\0\0" + struct.pack("<4I", int(t), NBLOCKS, be, bb))
            f.write(blocks.tobytes())
            f.write(values.astype("<f4").tobytes())
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write("# Dequantization references\n\n"
                f"Written by `tests/gen/gen_quant_refs.py` (`make quant-refs`) with gguf {version('gguf')}\n"
                f"(gguf-py, pinned in tests/gen/requirements-tools.txt) and numpy {np.__version__}: {NBLOCKS} random blocks per\n"
                "type (f16 scales set to finite values, one negative; MXFP4's E8M0 bytes to 2^-12 .. 2^-1) and the\n"
                "f32 values `gguf.quants.dequantize`\n"
                "gives for them. Read by tests/unit/test_quant.c. Never edit by hand.\n")
    print(f"wrote {len(SCALES) + len(E8M0)} types to {out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
