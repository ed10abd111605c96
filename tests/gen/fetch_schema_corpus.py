#!/usr/bin/env python3
"""Fetch a corpus of real-world JSON Schemas into CACHE/schema-corpus/: the SchemaStore schemas that the PyPI
package check-jsonschema==0.39.0 vendors (CI and configuration files: GitHub workflows and issue forms, GitLab
CI, compose, dependabot, readthedocs, renovate, azure-pipelines, ...; 26 files, up to 2.3 MB).

Usage: fetch_schema_corpus.py CACHE

Only the wheel is downloaded (pip download --no-deps, its sha256 checked); its
check_jsonschema/builtin_schemas/vendor/*.json members are extracted, nothing is installed.
Standard library only."""
import hashlib
import os
import subprocess
import sys
import zipfile

PACKAGE = "check-jsonschema==0.39.0"
WHEEL = "check_jsonschema-0.39.0-py3-none-any.whl"
SHA256 = "14ce5c94871c551268ea948ffe21e9f1464dc48fb20bf9a4c13deeaaf756cf9b"
PREFIX = "check_jsonschema/builtin_schemas/vendor/"


def main():
    out = os.path.join(sys.argv[1], "schema-corpus")
    os.makedirs(out, exist_ok=True)
    wheel = os.path.join(out, WHEEL)
    if not os.path.exists(wheel):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", PACKAGE, "-d", out],
                       check=True)
    h = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
    if h != SHA256:
        sys.exit("fetch_schema_corpus: %s: sha256 %s, expected %s" % (wheel, h, SHA256))
    n = 0
    with zipfile.ZipFile(wheel) as z:
        for m in z.namelist():
            if m.startswith(PREFIX) and m.endswith(".json"):
                with open(os.path.join(out, os.path.basename(m)), "wb") as f:
                    f.write(z.read(m))
                n += 1
    with open(os.path.join(out, ".ok"), "w") as f:
        f.write("%s %s %d schemas\n" % (PACKAGE, SHA256, n))
    print("fetch_schema_corpus: %d schemas from %s in %s" % (n, PACKAGE, out), file=sys.stderr)


if __name__ == "__main__":
    main()
