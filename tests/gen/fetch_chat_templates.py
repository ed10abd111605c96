#!/usr/bin/env python3
"""Fetch the chat templates llama.cpp ships (vendor/llama.cpp/models/templates/*.jinja in the
PyPI llama-cpp-python source distribution, the version the benchmark peer pins in
tests/bench/build_peer.sh) into CACHE/chat-templates/llama.cpp/.

Usage: fetch_chat_templates.py CACHE        (run by `make chat-templates`)

The templates are other projects' files: they are read from the cache by the tests
(tests/cli/check_chat_template.py) and by the reference generator
(tests/gen/gen_chat_template_refs.py), never committed. The sdist is checked by sha256
and shared with `make peer` (CACHE/peer/dl). Standard library only.
"""
import hashlib
import os
import subprocess
import sys
import tarfile

VERSION = "0.3.36"  # the same as tests/bench/build_peer.sh
SDIST = "llama_cpp_python-%s.tar.gz" % VERSION
SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
PREFIX = "llama_cpp_python-%s/vendor/llama.cpp/models/templates/" % VERSION


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fetch_chat_templates.py CACHE")
    cache = sys.argv[1]
    out = os.path.join(cache, "chat-templates", "llama.cpp")
    stamp = os.path.join(out, ".ok")
    if os.path.exists(stamp):
        return
    dl = os.path.join(cache, "peer", "dl")
    sdist = os.path.join(dl, SDIST)
    if not os.path.exists(sdist):
        os.makedirs(dl, exist_ok=True)
        # --no-binary :all: makes pip fetch the source distribution, where llama.cpp is vendored
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
               "llama-cpp-python==" + VERSION, "-d", dl]
        print("fetch: " + " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True)
    got = sha256_file(sdist)
    if got != SHA256:
        sys.exit("fetch: %s: sha256 %s, expected %s" % (sdist, got, SHA256))
    os.makedirs(out, exist_ok=True)
    n = 0
    with tarfile.open(sdist, "r:gz") as tar:
        for m in tar.getmembers():
            name = m.name
            if m.isfile() and name.startswith(PREFIX) and name.endswith(".jinja") and "/" not in name[len(PREFIX):]:
                data = tar.extractfile(m).read()
                with open(os.path.join(out, name[len(PREFIX):]), "wb") as f:
                    f.write(data)
                n += 1
    if not n:
        sys.exit("fetch: no templates under %s in %s" % (PREFIX, sdist))
    with open(stamp, "w") as f:
        f.write("%s %s templates\n" % (SDIST, n))
    print("fetch: %d chat templates from %s into %s" % (n, SDIST, out), file=sys.stderr)


if __name__ == "__main__":
    main()
