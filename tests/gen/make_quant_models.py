#!/usr/bin/env python3
"""Write the GGUF files of the common llama.cpp quantization types into CACHE/quant/ (make quant-models).

Usage: make_quant_models.py CACHE          (run in the tools venv: needs the pinned gguf package)

The files are made the way people's downloads are made: llama.cpp's own `llama-quantize` (the build of
`make peer`, CACHE/peer/build/bin/llama-quantize), with its default type mixtures (no --pure):

  CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf  --allow-requantize  ->  SmolLM2-135M-Instruct.<T>.gguf
      for T in Q4_K_M Q5_K_M Q6_K Q3_K_M Q2_K IQ4_XS Q5_0 Q5_1
  CACHE/bench/llama-1b-random.F16.gguf (made by `make bench-models`, skipped with a note if absent)
      ->  llama-1b-random.<T>.gguf for T in Q4_K_M Q6_K

Requantizing the Q4_1 default model loses precision compared with quantizing f16 weights, but that does
not matter here: the files are test inputs, and the reference (HF transformers, which dequantizes with
gguf-py) reads the same bytes llmgen reads.

For each file CACHE/quant/manifest.json records its sha256, size, tensor-type census and the
llama-quantize command line. A file is rebuilt only when its source, llama-quantize or this script
changed (a .stamp beside it), so a second run takes seconds. The census and sha256 are printed.
"""
import json
import os
import subprocess
import sys
import time
from collections import Counter

from gguf import GGUFReader

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fixturelib import sha256_file  # noqa: E402

SMOL_SRC = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_TYPES = ["Q4_K_M", "Q5_K_M", "Q6_K", "Q3_K_M", "Q2_K", "IQ4_XS", "Q5_0", "Q5_1"]
B1_SRC = "bench/llama-1b-random.F16.gguf"
B1_TYPES = ["Q4_K_M", "Q6_K"]
THREADS = "2"


def log(msg):
    print("quant-models: " + msg, file=sys.stderr, flush=True)


def census(path):
    """{type name: tensor count} of a GGUF, sorted by name."""
    r = GGUFReader(path)
    c = Counter(t.tensor_type.name for t in r.tensors)
    return dict(sorted(c.items()))


def stamp_for(src, quantize):
    s = os.stat(src)
    me = sha256_file(os.path.abspath(__file__))
    q = os.stat(quantize)
    return {"source_size": s.st_size, "source_mtime": int(s.st_mtime), "quantize_size": q.st_size,
            "quantize_mtime": int(q.st_mtime), "script_sha256": me}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_quant_models.py CACHE")
    cache = sys.argv[1]
    quantize = os.path.join(cache, "peer", "build", "bin", "llama-quantize")
    if not os.access(quantize, os.X_OK):
        sys.exit("quant-models: %s is missing (make peer builds it)" % quantize)
    out_dir = os.path.join(cache, "quant")
    os.makedirs(out_dir, exist_ok=True)
    info_path = os.path.join(cache, "peer", "BUILD-INFO")
    peer = {}
    if os.path.exists(info_path):
        for line in open(info_path):
            k, _, v = line.partition(":")
            if k in ("peer", "llama_cpp_commit"):
                peer[k] = v.strip()

    jobs = [(SMOL_SRC, "SmolLM2-135M-Instruct", t, ["--allow-requantize"]) for t in SMOL_TYPES]
    if os.path.exists(os.path.join(cache, B1_SRC)):
        jobs += [(B1_SRC, "llama-1b-random", t, []) for t in B1_TYPES]
    else:
        log("%s not found: the 1B-config files are skipped (make bench-models writes it)" % B1_SRC)

    manifest_path = os.path.join(out_dir, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f).get("files", {})
    for src_rel, stem, qtype, flags in jobs:
        src = os.path.join(cache, src_rel)
        name = "%s.%s.gguf" % (stem, qtype)
        path = os.path.join(out_dir, name)
        stamp = stamp_for(src, quantize)
        try:
            with open(path + ".stamp") as f:
                fresh = json.load(f) == stamp and os.path.exists(path) and name in manifest
        except (OSError, ValueError):
            fresh = False
        if not fresh:
            cmd = [quantize] + flags + [src, path + ".tmp", qtype, THREADS]
            t = time.time()
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if p.returncode != 0:
                sys.stderr.write(p.stdout.decode("utf-8", "replace")[-3000:])
                sys.exit("quant-models: llama-quantize failed on %s" % name)
            os.replace(path + ".tmp", path)
            manifest[name] = {
                "source": src_rel, "source_sha256": sha256_file(src),
                "command": " ".join(["llama-quantize"] + flags + [os.path.basename(src), name, qtype, THREADS]),
                "sha256": sha256_file(path), "bytes": os.path.getsize(path), "census": census(path),
                "llama_cpp": peer}
            with open(path + ".stamp", "w") as f:
                json.dump(stamp, f)
            log("%s written in %.1f s" % (name, time.time() - t))
        m = manifest[name]
        print("%-40s %s %10d  %s" % (name, m["sha256"], m["bytes"],
                                      " ".join("%s %d" % kv for kv in m["census"].items())))
    with open(manifest_path + ".tmp", "w") as f:
        json.dump({"files": manifest}, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(manifest_path + ".tmp", manifest_path)


if __name__ == "__main__":
    main()
