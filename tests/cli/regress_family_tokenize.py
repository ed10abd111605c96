#!/usr/bin/env python3
"""`llmgen --tokenize` / `--detokenize` with the tokenizer of the family GGUF files against HF
transformers reading the same files (tests/refs/tokenizer/gguf-files, made by
tests/gen/gen_gguf_tokenize_refs.py). Run by `make regress-families`; not by `make test` (the files
are made by `make family-bench-models` / `make gemma3-vocab`). A file that is absent, or whose
tokenizer.* metadata is not the one the references were made from (its sha256), is a failure. Reference ids past the file's vocabulary
size are not compared (as check_tokenizer.py). Standard library only; exits 1 on any failure.
"""
import gzip
import hashlib
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_tokenize as T  # noqa: E402
from check_tokenizer import read_decodes, read_ids, read_strings  # noqa: E402

OUT = os.path.join(T.REPO, "tests", "refs", "tokenizer", "gguf-files")


GGUF_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def tokenizer_sha256(path):
    """sha256 over the raw bytes of a GGUF's tokenizer.* key/values (name, type, value), in file
    order: what the references depend on, whatever the weights (stdlib GGUF v2/v3 reader)."""
    h = hashlib.sha256(b"llmgen-gguf-tokenizer-v1\n")
    with open(path, "rb") as f:
        def rd(fmt):
            return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))

        def skip_val(t):
            start = f.tell()
            if t == 8:
                (n,) = rd("Q")
                f.seek(n, 1)
            elif t == 9:
                et, n = rd("IQ")
                if et in GGUF_SCALAR:
                    f.seek(GGUF_SCALAR[et] * n, 1)
                else:
                    for _ in range(n):
                        skip_val(et)
            else:
                f.seek(GGUF_SCALAR[t], 1)
            end = f.tell()
            f.seek(start)
            return f.read(end - start)

        magic, _version, _n_t, n_kv = rd("IIQQ")
        if magic != 0x46554747:
            raise ValueError("%s: not a GGUF file" % path)
        for _ in range(n_kv):
            (n,) = rd("Q")
            key = f.read(n)
            (t,) = rd("I")
            raw = skip_val(t)
            if key.startswith(b"tokenizer."):
                h.update(key + b"\0" + struct.pack("<I", t) + raw)
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
        if tokenizer_sha256(path) != info["tokenizer_sha256"]:
            T.fail("%s: %s does not hold the tokenizer the references were made from (make family-tokenize-refs)"
                   % (name, path))
            continue
        for kind, strings in (("corpus", sets["corpus"]), ("special", sets[info["special_corpus"]])):
            ids = read_ids(gzip.open(os.path.join(OUT, "%s.%s.ids.bin.gz" % (name, kind))).read())
            dec = read_decodes(gzip.open(os.path.join(OUT, "%s.%s.decode.bin.gz" % (name, kind))).read(), strings)
            keep = [k for k, i in enumerate(ids) if all(x < info["vocab_size"] for x in i)]
            T.check_source("%s --tokenizer GGUF %s" % (name, kind), ["--tokenizer", path],
                           [strings[k] for k in keep], [ids[k] for k in keep], [dec[k] for k in keep])
    print("regress_family_tokenize: %d failures" % len(T.failures))
    return 1 if T.failures else 0


if __name__ == "__main__":
    sys.exit(main())
