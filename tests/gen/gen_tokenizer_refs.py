#!/usr/bin/env python3
"""Differential references for vendor-free-tokenizer, made with HF `tokenizers`
(and transformers for chat templates). Never run by CI; the stored output is.

Usage: gen_tokenizer_refs.py [--check-only]
  (run with the Python of a venv holding tests/gen/requirements-tok.txt)

Writes, under tests/refs/tokenizer/:
  corpus.bin.gz            the test strings: u32 length (LE) + UTF-8 bytes, each
  corpus-special.bin.gz    strings with special-token text, also checked with
                           special-token parsing off (HF encode_special_tokens)
  corpus-special-families.bin.gz   the same made with the special tokens of the tokenizers added
                           for issue 17 (gemma3, phi3), used for those instead of corpus-special
  <name>.ids.bin.gz        per string: u32 n + n x i32 (encode, add_special_tokens=False)
  <name>.nospecial.ids.bin.gz   the same for corpus-special with encode_special_tokens=True
  <name>.decode.bin.gz     per string: u8 0 (decode(ids) == the string) or 1 + u32 len + bytes
  chat.json                chat template renders (transformers apply_chat_template,
                           add_generation_prompt=True)
  manifest.json            versions, sha256 of every tokenizer file, counts

The corpus is made from a fixed seed, category by category (see make_corpus);
the tokenizer files come from tests/fixtures/tokenizers/ (see its README).
"""
import gzip
import hashlib
import json
import os
import random
import struct
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(REPO, "tests", "fixtures", "tokenizers")


def tok_gz(gz):
    """A fixture's tokenizer.json.gz: in the repo, or (too large for git: Gemma 3's) in
    .cache/tokenizers, written there by `make family-tokenizers`."""
    path = os.path.join(FIX, gz)
    return path if os.path.exists(path) else os.path.join(REPO, ".cache", "tokenizers", gz)
OUT = os.path.join(REPO, "tests", "refs", "tokenizer")
SEED = 20261122

# name -> (tokenizer.json.gz, tokenizer_config.json or None)
TOKENIZERS = {
    "smollm2": ("smollm2/tokenizer.json.gz", "smollm2/tokenizer_config.json"),
    "llama3.2": ("llama3.2/tokenizer.json.gz", "llama3.2/tokenizer_config.json"),
    "qwen2": ("qwen2/tokenizer.json.gz", "qwen2/tokenizer_config.json"),
    "mistral-v1": ("mistral-v1/tokenizer.json.gz", "mistral-v1/tokenizer_config.json"),
    "gemma3": ("gemma3/tokenizer.json.gz", "gemma3/tokenizer_config.json"),
    "phi3": ("phi3/tokenizer.json.gz", "phi3/tokenizer_config.json"),
}
# The special-token texts of corpus-special come from these (so that adding a tokenizer leaves the
# stored corpora and references as they were); the later ones get their own special-token corpus,
# corpus-special-families, made from their special tokens (Gemma's <unusedN> but two left out).
CORPUS_TOKENIZERS = ("smollm2", "llama3.2", "qwen2", "mistral-v1")
FAMILY_SPECIAL = "corpus-special-families"

WORDS = ("the of and to in is was for on that with as by at from it his her an be this which or are had "
         "not but were they have their one all new more first also after who two been has its time other "
         "only into over most some year city there when state school would these world where then life "
         "government through between while under during music because known team several both family "
         "Hello World Python London Monday I you we She He They It Paris Tokyo NASA iPhone McDonald").split()
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D",
                "'Re", "'vE", "’s", "'x", "''", "'"]
CODE = [
    "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); }\n", "if x != None and y >= 3:\n    pass",
    "const f = (a, b) => a ?? b;", "SELECT * FROM t WHERE id = 7;", "<div class=\"x\">&amp;</div>",
    "    # comment\n        nested()\n", "x+=1;y-=2;z*=3", "fn main() -> Result<(), Box<dyn Error>> {}",
    "$ ls -la | grep '^d' > out.txt 2>&1", "{\"key\": [1, 2.5e-3, true, null]}", "a_b__c___d", "__init__",
]
EMOJI = ["😀", "👍", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇫🇷", "🧑🏿‍🦰", "✋🏻", "🫠", "©️", "1️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"]
CJK = ["你好，世界。", "日本語のテキスト", "한국어 문장입니다", "中文字符串和数字123", "ｶﾀｶﾅ", "漢字かなカナ",
       "　全角スペース　", "𠀀𠀁𪚥"]
COMBINING = ["e\u0301", "a\u0308\u0323", "n\u0303", "\u0301", "Z\u0351\u0359\u0324", "\u0915\u094d\u0937",
             "\u1100\u1161\u11a8", "o\u0338", "Å", "Å", "ﬁ", "Ⅻ", "①", "x\u20dd"]
RTL = ["שלום עולם", "مرحبا بالعالم", "\u202bRTL embed\u202c", "abc \u05d0\u05d1\u05d2 123", "\u200fمرحبا\u200e",
       "فارسی ۱۲۳", "עִבְרִית"]
ODD = ["\ufeff", "\u200b", "\u200d", "\u2028", "\u2029", "\u0085", "\u00a0", "\u3000", "\u180e", "\ufffe",
       "\uffff", "\U0010ffff", "\ue000", "\U000e0001", "\u00ad", "\x00", "\x7f", "\x1b[0m", "\ufffd", "\u034f",
       "\U0001d400", "\u2066", "\x0b", "\x0c", "\r\n", "\r"]
DIGITS = ["0", "7", "42", "123", "1234", "12345", "007", "3.14159", "1,000,000", "١٢٣", "²³", "½", "1e10",
          "-5", "+1", "0x1F", "9" * 40, "2024-11-22", "12:30:45"]
SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", " \n", "\n ", " \t\n", "\r\n", " " * 17,
          "\n" * 9, "\t \t", " \u00a0 ", "\u3000\u3000"]


def rand_cp(r):
    """A random scalar value, favouring the planes text lives in."""
    while True:
        band = r.random()
        if band < 0.3:
            cp = r.randint(0x20, 0x7e)
        elif band < 0.5:
            cp = r.randint(0x80, 0x7ff)
        elif band < 0.8:
            cp = r.randint(0x800, 0xffff)
        elif band < 0.95:
            cp = r.randint(0x10000, 0x2ffff)
        else:
            cp = r.randint(0, 0x10ffff)
        if not 0xd800 <= cp <= 0xdfff:
            return chr(cp)


_MARKS = None


def marks():
    """Combining marks of every class (Python's unicodedata), computed once."""
    global _MARKS
    if _MARKS is None:
        import unicodedata
        _MARKS = [chr(c) for c in range(0x300, 0x20000)
                  if not 0xd800 <= c <= 0xdfff and unicodedata.category(chr(c)) in ("Mn", "Mc", "Me")]
    return _MARKS


def norm_stress(r):
    """Bases, marks in random order, Hangul jamo, compatibility characters."""
    bases = ["a", "e", "o", "A", "u", "n", "c", "α", "а", "ᄀ", "ᅡ", "ᆨ", "가",
             "क", "ا", "א", "あ", "か", "゙", "ﬁ", "①", "㎒", "Ａ",
             "ẛ", "Å", "Ω", "क़", " ", "ﷺ", "𝐀", "½", "i"]
    out = ""
    for _ in range(r.randint(1, 12)):
        out += r.choice(bases) if r.random() < 0.5 else r.choice(marks())
    return out


def prose(r, n):
    out = []
    for i in range(n):
        w = r.choice(WORDS)
        if r.random() < 0.1:
            w = w.upper()
        elif r.random() < 0.1:
            w = w.capitalize()
        out.append(w)
        if r.random() < 0.12:
            out[-1] += r.choice([",", ".", "!", "?", ";", ":", "...", " -", "\""])
    return " ".join(out)


def mix(r, parts, n):
    s = ""
    for _ in range(n):
        s += r.choice(parts)
        if r.random() < 0.5:
            s += r.choice([" ", "", "", "\n", " " + r.choice(WORDS)])
    return s


def make_corpus(specials, seed=SEED, scale=1):
    """Returns (corpus, special_corpus). Each category has a fixed count."""
    r = random.Random(seed)
    cats = []

    def add(name, count, fn):
        for _ in range(count * scale):
            cats.append(fn())

    add("prose", 2500, lambda: prose(r, r.randint(1, 60)))
    add("code", 2000, lambda: "".join(r.choice(CODE) for _ in range(r.randint(1, 4))))
    add("whitespace", 2000, lambda: mix(r, SPACES + WORDS[:20], r.randint(1, 12)))
    add("tabs", 500, lambda: "\t" * r.randint(1, 8) + prose(r, r.randint(1, 5)) + "\t" * r.randint(0, 3))
    add("digits", 1500, lambda: mix(r, DIGITS + [str(r.randint(0, 10 ** r.randint(1, 12)))], r.randint(1, 8)))
    add("contractions", 1500, lambda: " ".join(r.choice(WORDS) + r.choice(CONTRACTIONS)
                                                for _ in range(r.randint(1, 8))))
    add("emoji", 1500, lambda: mix(r, EMOJI, r.randint(1, 8)))
    add("cjk", 1500, lambda: mix(r, CJK, r.randint(1, 6)))
    add("combining", 1500, lambda: mix(r, COMBINING, r.randint(1, 8)))
    add("rtl", 1000, lambda: mix(r, RTL, r.randint(1, 6)))
    add("odd-unicode", 1500, lambda: mix(r, ODD + WORDS[:10], r.randint(1, 10)))
    add("random-utf8", 3000, lambda: "".join(rand_cp(r) for _ in range(r.randint(1, 40))))
    add("long", 100, lambda: "\n\n".join(prose(r, 200) for _ in range(r.randint(2, 6))))
    add("normalization", 1500, lambda: norm_stress(r))
    add("mixed", 1500, lambda: mix(r, WORDS + CODE + EMOJI + CJK + COMBINING + RTL + ODD + DIGITS + SPACES,
                                   r.randint(2, 20)))
    # long texts (the encoder caches BPE results per call for texts of 256 bytes and more)
    joined = [("\n" if r.random() < 0.5 else " ").join(r.sample(cats, 300)) for _ in range(20 * scale)]
    cats.extend(joined)
    cats.append("")
    sp = []
    for _ in range(2000 * scale):
        parts = [prose(r, r.randint(0, 6)), r.choice(specials), r.choice(["", " ", "\n", "  "]),
                 prose(r, r.randint(0, 4)), r.choice(["", r.choice(specials)]),
                 r.choice(["", "<|", "|>", "<|im_start", "<s>", "</s>", "<", ">"])]
        r.shuffle(parts)
        sp.append("".join(parts))
    return cats, sp


def write_strings(path, strings):
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        for s in strings:
            b = s.encode("utf-8")
            f.write(struct.pack("<I", len(b)) + b)


def write_ids(path, all_ids):
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        for ids in all_ids:
            f.write(struct.pack("<I%di" % len(ids), len(ids), *ids))


def write_decodes(path, strings, decoded):
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        for s, d in zip(strings, decoded):
            if d == s:
                f.write(b"\0")
            else:
                b = d.encode("utf-8")
                f.write(b"\1" + struct.pack("<I", len(b)) + b)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_tokenizer(name):
    from tokenizers import Tokenizer
    gz, _ = TOKENIZERS[name]
    with gzip.open(tok_gz(gz), "rb") as f:
        return Tokenizer.from_str(f.read().decode("utf-8"))


def special_texts(tok):
    return [a.content for a in tok.get_added_tokens_decoder().values() if a.special]


def encode_all(tok, strings, nospecial=False):
    tok.encode_special_tokens = nospecial
    encs = tok.encode_batch(strings, add_special_tokens=False)
    tok.encode_special_tokens = False
    ids = [e.ids for e in encs]
    return ids, tok.decode_batch(ids, skip_special_tokens=False)


CHAT_CASES = [
    (None, "Hello!"),
    ("You are a pirate.", "What is the capital of France?"),
    (None, "Line one\nLine two\n\n  indented"),
    ("", "empty system"),
    ("Système: réponds en français 🇫🇷", "Écris un haïku sur la mer."),
    (None, "<|im_start|> inside text"),
    (None, ""),
]


def chat_refs():
    """Renders of the chat templates we support, with transformers."""
    from transformers import AutoTokenizer
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for name, (gz, cfg) in TOKENIZERS.items():
            with gzip.open(tok_gz(gz), "rb") as f, open(os.path.join(d, "tokenizer.json"), "wb") as g:
                g.write(f.read())
            with open(os.path.join(FIX, cfg), "rb") as f, open(os.path.join(d, "tokenizer_config.json"), "wb") as g:
                g.write(f.read())
            jinja = os.path.join(os.path.dirname(os.path.join(FIX, cfg)), "chat_template.jinja")
            if os.path.exists(os.path.join(d, "chat_template.jinja")):
                os.remove(os.path.join(d, "chat_template.jinja"))
            if os.path.exists(jinja):
                with open(jinja, "rb") as f, open(os.path.join(d, "chat_template.jinja"), "wb") as g:
                    g.write(f.read())
            tok = AutoTokenizer.from_pretrained(d)
            if not tok.chat_template:
                continue
            renders = []
            for system, user in CHAT_CASES:
                msgs = ([{"role": "system", "content": system}] if system is not None else [])
                msgs.append({"role": "user", "content": user})
                text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
                renders.append({"system": system, "user": user, "text": text})
            out[name] = renders
    return out


GGUF_META = ("llama3.2", "mistral-v1")


def gguf_refs(corpus, sp, manifest):
    """References for the GGUF-metadata form of some fixtures: the GGUF that
    tests/cli/check_tokenizer.py writes (gguf_from_json), read by transformers
    (AutoTokenizer.from_pretrained(dir, gguf_file=...)), as it reads llama.cpp files."""
    from transformers import AutoTokenizer
    sys.path.insert(0, os.path.join(REPO, "tests", "cli"))
    import check_tokenizer
    with tempfile.TemporaryDirectory() as d:
        for name in GGUF_META:
            info = {"tokenizer_json_gz": "tests/fixtures/tokenizers/" + TOKENIZERS[name][0]}
            path = check_tokenizer.gguf_from_json(d, name, info)[1]
            tok = AutoTokenizer.from_pretrained(d, gguf_file=os.path.basename(path)).backend_tokenizer
            label = name + "-gguf-meta"
            for suffix, strings, nospecial in (("", corpus, False), (".special", sp, False),
                                               (".nospecial", sp, True)):
                ids, dec = encode_all(tok, strings, nospecial)
                write_ids(os.path.join(OUT, label + suffix + ".ids.bin.gz"), ids)
                write_decodes(os.path.join(OUT, label + suffix + ".decode.bin.gz"), strings, dec)
            manifest.setdefault("gguf_meta", []).append(label)
            print("%s: GGUF metadata read by transformers" % label)


def main():
    import tokenizers
    os.makedirs(OUT, exist_ok=True)
    toks = {n: load_tokenizer(n) for n in TOKENIZERS}
    specials = sorted({s for n in CORPUS_TOKENIZERS for s in special_texts(toks[n])})
    corpus, sp = make_corpus(specials)
    write_strings(os.path.join(OUT, "corpus.bin.gz"), corpus)
    write_strings(os.path.join(OUT, "corpus-special.bin.gz"), sp)
    fam = sorted({s for n in TOKENIZERS if n not in CORPUS_TOKENIZERS for s in special_texts(toks[n])
                  if not s.startswith("<unused") or s in ("<unused0>", "<unused6241>")})
    sp_fam = make_corpus(fam, seed=SEED + 7)[1]
    write_strings(os.path.join(OUT, FAMILY_SPECIAL + ".bin.gz"), sp_fam)
    manifest = {"generator": "tests/gen/gen_tokenizer_refs.py", "seed": SEED,
                "tokenizers_version": tokenizers.__version__, "n_corpus": len(corpus), "n_special": len(sp),
                "tokenizers": {}}
    for name, tok in toks.items():
        ids, dec = encode_all(tok, corpus)
        write_ids(os.path.join(OUT, name + ".ids.bin.gz"), ids)
        write_decodes(os.path.join(OUT, name + ".decode.bin.gz"), corpus, dec)
        spx = sp if name in CORPUS_TOKENIZERS else sp_fam
        sids, sdec = encode_all(tok, spx)
        nids, ndec = encode_all(tok, spx, nospecial=True)
        write_ids(os.path.join(OUT, name + ".special.ids.bin.gz"), sids)
        write_decodes(os.path.join(OUT, name + ".special.decode.bin.gz"), spx, sdec)
        write_ids(os.path.join(OUT, name + ".nospecial.ids.bin.gz"), nids)
        write_decodes(os.path.join(OUT, name + ".nospecial.decode.bin.gz"), spx, ndec)
        gz, cfg = TOKENIZERS[name]
        manifest["tokenizers"][name] = {
            "tokenizer_json_gz": "tests/fixtures/tokenizers/" + gz,
            "tokenizer_json_sha256": hashlib.sha256(gzip.open(tok_gz(gz)).read()).hexdigest(),
            "config": "tests/fixtures/tokenizers/" + cfg, "config_sha256": sha256(os.path.join(FIX, cfg)),
            "n_ids": sum(len(i) for i in ids)}
        if name not in CORPUS_TOKENIZERS:
            manifest["tokenizers"][name]["special_corpus"] = FAMILY_SPECIAL
        print("%s: %d strings, %d ids, %d decode differences" % (
            name, len(corpus), manifest["tokenizers"][name]["n_ids"], sum(a != b for a, b in zip(corpus, dec))))
    gguf_refs(corpus, sp, manifest)
    try:
        import transformers
        manifest["transformers_version"] = transformers.__version__
        with open(os.path.join(OUT, "chat.json"), "w", encoding="utf-8") as f:
            json.dump(chat_refs(), f, ensure_ascii=False, indent=1)
    except ImportError:
        print("transformers not installed: chat.json not regenerated", file=sys.stderr)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
