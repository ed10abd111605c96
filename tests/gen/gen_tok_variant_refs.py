#!/usr/bin/env python3
"""References for the edited fixture tokenizers of tests/cli/check_tokenizer.py
(VARIANT_EDITS: the Digits pre-tokenizer with individual_digits false / true, and added
tokens with single_word, lstrip, rstrip and normalized true / false, on tokenizers with
no normalizer, NFC and NFKC). HF tokenizers (tests/gen/requirements-tok.txt) encodes a
corpus made for each: strings built around the added tokens' contents and digits, plus
every 5th string of the main corpus (tests/refs/tokenizer/corpus.bin.gz).

Writes tests/refs/tokenizer/variants/: <name>.corpus.bin.gz, <name>[.nospecial].ids.bin.gz,
<name>[.nospecial].decode.bin.gz (formats as gen_tokenizer_refs.py), manifest.json.
Never run by CI. Usage: .cache/venv-ref/bin/python tests/gen/gen_tok_variant_refs.py
"""
import gzip
import json
import os
import random
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "cli"))
import check_tokenizer as ct  # noqa: E402
import gen_tokenizer_refs as g  # noqa: E402

OUT = os.path.join(REPO, "tests", "refs", "tokenizer", "variants")
SEED = 20261123
N_TARGETED = 4000

NEIGHBOURS = ["", "", " ", "  ", "\t", "\n", "_", "-", ".", "!", "a", "Z", "9", "é", "e\u0301", "日", "👍",
              "\u3000", "\u00a0", "\u0301", "'s", "(", ")", "[", "]", "x", "<", ">"]
NUMBERS = ["0", "7", "42", "1234567", "3.14", "1,000", "٣٤", "²", "Ⅻ", "12a34", "a1b2", "00", "9" * 25]


def forms(content):
    """The token text and look-alikes: case, NFC / NFD / NFKC forms, halves."""
    out = [content, content.upper(), content.capitalize(), unicodedata.normalize("NFC", content),
           unicodedata.normalize("NFD", content), unicodedata.normalize("NFKC", content)]
    if len(content) > 1:
        out += [content[:len(content) // 2], content[len(content) // 2:], content + content]
    return out


def targeted(r, contents, n):
    pool = [f for c in contents for f in forms(c)] + NUMBERS + g.WORDS[:30]
    out = []
    for _ in range(n):
        s = ""
        for _ in range(r.randint(1, 8)):
            s += r.choice(NEIGHBOURS) + r.choice(pool) + r.choice(NEIGHBOURS)
        out.append(s)
    return out


def main():
    from tokenizers import Tokenizer
    import tokenizers
    os.makedirs(OUT, exist_ok=True)
    main_corpus = [b.decode("utf-8") for b in ct.read_strings(gzip.open(os.path.join(g.OUT, "corpus.bin.gz")).read())]
    vman = {"generator": "tests/gen/gen_tok_variant_refs.py", "seed": SEED,
            "tokenizers_version": tokenizers.__version__, "variants": {}}
    for name, (base, edit) in ct.VARIANT_EDITS.items():
        with gzip.open(os.path.join(g.FIX, g.TOKENIZERS[base][0]), "rb") as f:
            tj = json.loads(f.read().decode("utf-8"))
        tok = Tokenizer.from_str(json.dumps(ct.variant_json(tj, edit)))
        contents = [c for c, _ in ct.variant_added(edit)] if "added" in edit else NUMBERS
        r = random.Random(SEED + len(name))
        corpus = targeted(r, contents, N_TARGETED) + main_corpus[::5]
        g.write_strings(os.path.join(OUT, name + ".corpus.bin.gz"), corpus)
        for suffix, nospecial in (("", False), (".nospecial", True)):
            ids, dec = g.encode_all(tok, corpus, nospecial)
            g.write_ids(os.path.join(OUT, name + suffix + ".ids.bin.gz"), ids)
            g.write_decodes(os.path.join(OUT, name + suffix + ".decode.bin.gz"), corpus, dec)
        added_hits = sum(any(i >= len(tj["model"]["vocab"]) for i in x) for x in ids)
        vman["variants"][name] = {"base": base, "edit": edit, "n_strings": len(corpus),
                                  "strings_with_added_ids": added_hits}
        print("%s: %d strings, %d with added-token ids" % (name, len(corpus), added_hits))
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(vman, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
