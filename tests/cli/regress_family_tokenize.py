#!/usr/bin/env python3
"""`llmgen --tokenize` / `--detokenize` with the tokenizer of the family GGUF files against HF
transformers reading the same files (tests/refs/tokenizer/gguf-files, made by
tests/gen/gen_gguf_tokenize_refs.py). Run by `make regress-families`; not by `make test` (the files
are made by `make family-bench-models` / `make gemma3-vocab`). A file that is absent, or not the
one the references were made from (sha256), is a failure. Reference ids past the file's vocabulary
size are not compared (as check_tokenizer.py). Standard library only; exits 1 on any failure.
"""
import gzip
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_tokenize as T  # noqa: E402
from check_tokenizer import read_decodes, read_ids, read_strings  # noqa: E402

OUT = os.path.join(T.REPO, "tests", "refs", "tokenizer", "gguf-files")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    with open(os.path.join(OUT, "manifest.json")) as f:
        man = json.load(f)
    sets = {k: read_strings(gzip.open(os.path.join(T.REPO, p)).read())[::man["step"]]
            for k, p in man["corpora"].items()}
    for name, info in man["files"].items():
        path = os.path.join(T.CACHE, info["cache"])
        if not os.path.exists(path):
            T.fail("%s: %s is missing (make family-bench-models / make gemma3-vocab)" % (name, path))
            continue
        if sha256_file(path) != info["sha256"]:
            T.fail("%s: %s is not the file the references were made from (make family-tokenize-refs)" % (name, path))
            continue
        for kind, strings in sets.items():
            ids = read_ids(gzip.open(os.path.join(OUT, "%s.%s.ids.bin.gz" % (name, kind))).read())
            dec = read_decodes(gzip.open(os.path.join(OUT, "%s.%s.decode.bin.gz" % (name, kind))).read(), strings)
            keep = [k for k, i in enumerate(ids) if all(x < info["vocab_size"] for x in i)]
            T.check_source("%s --tokenizer GGUF %s" % (name, kind), ["--tokenizer", path],
                           [strings[k] for k in keep], [ids[k] for k in keep], [dec[k] for k in keep])
    print("regress_family_tokenize: %d failures" % len(T.failures))
    return 1 if T.failures else 0


if __name__ == "__main__":
    sys.exit(main())
