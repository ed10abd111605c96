#!/usr/bin/env python3
"""Differential check of vendor-free-tokenizer against stored HF `tokenizers` output.

For every tokenizer in tests/refs/tokenizer/manifest.json (and SmolLM2's GGUF
metadata when the default model is in .cache/models), runs build/tok_driver on
the stored corpus and requires 100% identical ids, decode text equal to the
reference decode, and the streaming decoder's output equal to it too; likewise Qwen3.5's
and gpt-oss's o200k-harmony tokenizers against tiktoken's ids (tests/refs/tokenizer/*-tiktoken.*;
o200k-harmony also as the GGUF vocabulary the pinned converter writes, with --require-cached). Then
renders the stored chat-template cases. If the `tokenizers` package is
importable, also compares a fresh random corpus live.

A tokenizer too large for git (Gemma 3's) lives in .cache/tokenizers, made by `make
family-tokenizers`; without it that one tokenizer is reported as not checked here, and
`--require-cached` (used by `make regress-families`) makes its absence a failure.

Standard library only (the live part is optional). Exits 1 on any mismatch.
Usage: check_tokenizer.py [-v] [--require-cached]
"""
import gzip
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFS = os.path.join(REPO, "tests", "refs", "tokenizer")
DRIVER = os.path.join(REPO, "build", "tok_driver")
GGUF = os.path.join(REPO, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
FIXTURES = "tests/fixtures/tokenizers/"
MAX_SHOWN = 5


def tokenizer_gz(info):
    """The tokenizer.json.gz a reference was made from: in the repo, or, for those too large for git
    (Gemma 3's 262144-piece vocabulary, 5.3 MB), in CACHE/tokenizers (`make family-tokenizers`), where
    its sha256 must be the manifest's. None when it is not there."""
    rel = info["tokenizer_json_gz"]
    if os.path.exists(os.path.join(REPO, rel)):
        return os.path.join(REPO, rel)
    path = os.path.join(CACHE, "tokenizers", rel[len(FIXTURES):])
    if not os.path.exists(path):
        return None
    with gzip.open(path) as f:
        if hashlib.sha256(f.read()).hexdigest() != info["tokenizer_json_sha256"]:
            raise SystemExit("check_tokenizer: %s is not the file the references were made from" % path)
    return path


def read_strings(data):
    out, o = [], 0
    while o < len(data):
        n = struct.unpack_from("<I", data, o)[0]
        out.append(data[o + 4:o + 4 + n])
        o += 4 + n
    return out


def read_ids(data):
    out, o = [], 0
    while o < len(data):
        n = struct.unpack_from("<I", data, o)[0]
        out.append(list(struct.unpack_from("<%di" % n, data, o + 4)))
        o += 4 + 4 * n
    return out


def read_decodes(data, strings):
    out, o = [], 0
    for s in strings:
        if data[o] == 0:
            out.append(s)
            o += 1
        else:
            n = struct.unpack_from("<I", data, o + 1)[0]
            out.append(data[o + 5:o + 5 + n])
            o += 5 + n
    return out


def run_driver(args, cases_path):
    p = subprocess.run([DRIVER] + args + ["cases", cases_path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("tok_driver %s failed: %s" % (" ".join(args), p.stderr.decode(errors="replace")))
    d, o, res = p.stdout, 0, []

    def blob():
        nonlocal o
        n = struct.unpack_from("<I", d, o)[0]
        b = d[o + 4:o + 4 + n]
        o += 4 + n
        return b

    while o < len(d):
        n = struct.unpack_from("<I", d, o)[0]
        o += 4
        if n == 0xFFFFFFFF:
            res.append(("error", blob().decode(errors="replace")))
            continue
        ids = list(struct.unpack_from("<%di" % n, d, o))
        o += 4 * n
        res.append((ids, blob(), blob()))
    return res


def compare(label, strings, ref_ids, ref_dec, got, verbose, n_vocab=None):
    """n_vocab: skip (and count) strings whose reference ids leave the vocabulary:
    transformers gives a GGUF vocabulary without an unk token GPT2Tokenizer's default
    "<|endoftext|>" as a new token past the end, which no model has an embedding for."""
    bad = skipped = 0
    if len(got) != len(strings):
        print("FAIL %s: driver returned %d results for %d strings" % (label, len(got), len(strings)))
        return 1
    for i, (s, ids, dec, g) in enumerate(zip(strings, ref_ids, ref_dec, got)):
        why = None
        if n_vocab is not None and any(x >= n_vocab for x in ids):
            skipped += 1
            continue
        if g[0] == "error":
            why = "error: %s" % g[1]
        elif g[0] != ids:
            why = "ids differ: got %s want %s" % (g[0][:40], ids[:40])
        elif g[1] != dec:
            why = "decode differs: got %r want %r" % (g[1][:80], dec[:80])
        elif g[2] != dec:
            why = "streaming decode differs: got %r want %r" % (g[2][:80], dec[:80])
        if why:
            bad += 1
            if bad <= MAX_SHOWN:
                print("  %s #%d %r: %s" % (label, i, s[:80], why))
    total = len(strings) - skipped
    print("%s %s: %d/%d strings identical (ids, decode, streaming)%s" % (
        "ok  " if not bad else "FAIL", label, total - bad, total,
        "; %d skipped: reference ids past the vocabulary" % skipped if skipped else ""))
    return 1 if bad else 0


def gunzip_to(src, dst):
    with gzip.open(src, "rb") as f, open(dst, "wb") as g:
        g.write(f.read())


def check_chat(tmp, man, verbose):
    path = os.path.join(REFS, "chat.json")
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8") as f:
        chat = json.load(f)
    fails = 0
    runs = [(name, tokenizer_args(tmp, name, man["tokenizers"][name]), cases) for name, cases in chat.items()]
    if "smollm2" in chat and os.path.exists(GGUF):
        runs.append(("smollm2-gguf", ["--gguf", GGUF], chat["smollm2"]))
    for name, args, cases in runs:
        bad = 0
        for c in cases:
            sysarg = "-" if c["system"] is None else c["system"]
            p = subprocess.run([DRIVER] + args + ["chat", sysarg, c["user"]], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
            got = p.stdout.decode("utf-8", "replace")
            if p.returncode != 0 or got != c["text"]:
                bad += 1
                print("  chat %s %r: got %r (%s) want %r" % (name, c["user"], got, p.stderr.decode().strip(),
                                                            c["text"]))
        print("%s chat %s: %d/%d renders identical" % ("ok  " if not bad else "FAIL", name, len(cases) - bad,
                                                      len(cases)))
        fails += bool(bad)
    return fails


# Our built-in template for each template of tests/refs/tokenizer/chat-templates.json:
# rendering with --template NAME must give the same text as the template itself (Jinja).
TEMPLATE_FAMILIES = {
    "llama-3-instruct.jinja": "llama3",
    "llama-3.1-instruct.jinja": "llama3.1",
    "llama-3.2-instruct.jinja": "llama3.2",
    "llama-2-chat.jinja": "llama2",
    "mistral-7b-instruct-v0.1.jinja": "mistral-v0.1",
    "mistral-common-spm-v1.jinja": "mistral-v1",
    "mistral-common-spm-v3.jinja": "mistral-v3",
    "mistral-common-spm-v7.jinja": "mistral-v7",
    "mistral-common-spm-v3-default.jinja": "mistral-v3",
    "mistral-common-spm-v7-default.jinja": "mistral-v7",
    "mistral-nemo-instruct-2407.jinja": "mistral-v3-tekken",
}


def check_chat_templates(tmp, man, verbose):
    """Real templates (tests/fixtures/tokenizers/chat) on a fixture tokenizer: rendered by
    the Jinja interpreter and by the built-in template of that name, every case must equal
    transformers' render, or
    fail where transformers raised. Cases without a date use the template's default;
    where that is strftime_now, the reference's day of generation becomes today."""
    import datetime
    path = os.path.join(REFS, "chat-templates.json")
    with open(path, encoding="utf-8") as f:
        ref = json.load(f)
    today = datetime.datetime.now().strftime("%d %b %Y")
    fails = 0
    for name, info in ref["templates"].items():
        with open(os.path.join(REPO, "tests", "fixtures", "tokenizers", "chat", name), encoding="utf-8") as f:
            template = f.read()
        base = tokenizer_args(tmp, info["base"], man["tokenizers"][info["base"]])
        with open(base[3], encoding="utf-8") as f:
            cfg = json.load(f)
        cfg["chat_template"] = template
        cfg_path = os.path.join(tmp, "chat-" + name + ".json")
        with open(cfg_path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        args = base[:3] + [cfg_path]
        bad = n = 0
        for forced in (None, TEMPLATE_FAMILIES.get(name)):
            for c in info["cases"]:
                n += 1
                extra = (["--template", forced] if forced else []) + (["--date", c["date"]] if c["date"] else [])
                sysarg = "-" if c["system"] is None else c["system"]
                p = subprocess.run([DRIVER] + args + extra + ["chat", sysarg, c["user"]], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
                got = p.stdout.decode("utf-8", "replace")
                want = c.get("text")
                if want is not None and c["date"] is None and "strftime_now" in template:
                    want = want.replace(ref["rendered_on"], today)
                ok = (p.returncode != 0) if want is None else (p.returncode == 0 and got == want)
                if not ok:
                    bad += 1
                    if bad <= MAX_SHOWN:
                        print("  chat %s%s %r %r: got %r (%s) want %r" % (
                            name, " --template " + forced if forced else "", c["system"], c["user"], got,
                            p.stderr.decode().strip(), want if want is not None else c["error"]))
        print("%s chat %s: %d/%d renders identical to transformers %s (Jinja and built-in)" % (
            "ok  " if not bad else "FAIL", name, n - bad, n, ref["transformers_version"]))
        fails += bool(bad)
    return fails


# Edited fixture tokenizers for components the real files do not use: the Digits
# pre-tokenizer both ways, and added tokens with single_word / lstrip / rstrip /
# normalized set in every combination worth having, on tokenizers with and without
# a normalizer. The edits are applied here (stdlib only) and by
# tests/gen/gen_tok_variant_refs.py, which stores HF tokenizers' ids for them.
def _added(content, base_id, k, special=False, single_word=False, lstrip=False, rstrip=False, normalized=False):
    return {"id": base_id + k, "content": content, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": normalized, "special": special}


ADDED_SETS = {
    # (content, flags): contents chosen to overlap (foo / foobar, ab / b_c), to sit next to
    # word and non-word characters, and to change under the normalizer (Ω U+2126 -> U+03A9
    # under NFC; ﬁ -> fi, ① -> 1 under NFKC) so normalized true / false differ.
    "common": [
        ("foo", dict(single_word=True)),
        ("foobar", dict()),
        ("ab", dict(single_word=True)),
        ("b_c", dict()),
        ("<sep>", dict(special=True, lstrip=True, rstrip=True)),
        ("<L>", dict(special=True, lstrip=True)),
        ("<R>", dict(rstrip=True)),
        ("[[x]]", dict(single_word=True, normalized=True)),
        ("x_y", dict(single_word=True, lstrip=True)),
        ("日本", dict(single_word=True)),
        ("é!", dict(normalized=True)),
    ],
    "nfc": [
        ("\u2126mega", dict(single_word=True, normalized=True)),
        ("nai\u0308ve", dict(normalized=True)),
        ("re\u0301sume\u0301", dict(normalized=False)),
    ],
    "nfkc": [
        ("\ufb01le", dict(normalized=True)),
        ("\u2460\u2461", dict(normalized=False)),
        ("\uff21\uff22", dict(normalized=True, single_word=True)),
        ("x\u00b2", dict(normalized=False, lstrip=True)),
    ],
}

VARIANT_EDITS = {
    "smollm2-digits": ("smollm2", "digits"),
    "smollm2-digits-individual": ("smollm2", "digits-individual"),
    "smollm2-nfkc-added": ("smollm2", "nfkc-added"),
    "qwen2-added": ("qwen2", "nfc-added"),
    "mistral-v1-added": ("mistral-v1", "added"),
}


def variant_added(edit):
    sets = ADDED_SETS["common"] + (ADDED_SETS["nfc"] if edit == "nfc-added" else
                                   ADDED_SETS["nfkc"] if edit == "nfkc-added" else [])
    return sets


def variant_json(tj, edit):
    """The fixture tokenizer.json `tj` (a dict, edited in place and returned)."""
    if edit in ("digits", "digits-individual"):
        tj["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": edit == "digits-individual"}, tj["pre_tokenizer"]]}
        return tj
    if edit == "nfkc-added":
        tj["normalizer"] = {"type": "NFKC"}
    # ids as the reference assigns them when it adds tokens (and so as a file it saves
    # has them): a content already in the vocabulary keeps its id, others take the next one
    vocab = tj["model"]["vocab"]
    nxt = max([a["id"] for a in tj["added_tokens"]] + list(vocab.values())) + 1
    for content, flags in variant_added(edit):
        if content in vocab:
            tj["added_tokens"].append(_added(content, vocab[content], 0, **flags))
        else:
            tj["added_tokens"].append(_added(content, nxt, 0, **flags))
            nxt += 1
    tj["added_tokens"].sort(key=lambda a: a["id"])
    return tj


def variant_args(tmp, name, man):
    base, edit = VARIANT_EDITS[name]
    info = man["tokenizers"][base]
    with gzip.open(tokenizer_gz(info)) as f:
        tj = json.loads(f.read().decode("utf-8"))
    d = os.path.join(tmp, "variant-" + name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(variant_json(tj, edit), ensure_ascii=False))  # dumps: the C encoder
    return ["--json", os.path.join(d, "tokenizer.json"), "--config", os.path.join(REPO, info["config"])]


def check_variants(tmp, man, verbose):
    path = os.path.join(REFS, "variants", "manifest.json")
    if not os.path.exists(path):
        print("FAIL variants: %s missing" % os.path.relpath(path, REPO))
        return 1
    with open(path) as f:
        vman = json.load(f)
    fails = 0
    for name in vman["variants"]:
        raw = gzip.open(os.path.join(REFS, "variants", name + ".corpus.bin.gz")).read()
        cpath = os.path.join(tmp, "variant-" + name + ".bin")
        with open(cpath, "wb") as f:
            f.write(raw)
        strings = read_strings(raw)
        args = variant_args(tmp, name, man)
        for suffix, extra in (("", []), (".nospecial", ["--no-special"])):
            ids = read_ids(gzip.open(os.path.join(REFS, "variants", name + suffix + ".ids.bin.gz")).read())
            dec = read_decodes(gzip.open(os.path.join(REFS, "variants", name + suffix + ".decode.bin.gz")).read(),
                               strings)
            try:
                got = run_driver(args + extra, cpath)
            except RuntimeError as e:
                print("FAIL variant %s%s: %s" % (name, suffix, e))
                fails += 1
                continue
            fails += compare("variant " + name + suffix, strings, ids, dec, got, verbose)
    return fails


def write_gguf(path, kv):
    """A metadata-only GGUF v3 (no tensors), as llama.cpp's converters lay out
    tokenizer.ggml.*: values are str, bool, int (int32), float, or lists of str / int / float."""
    def s(x):
        b = x.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    def val(v):
        if isinstance(v, bool):
            return struct.pack("<IB", 7, v)
        if isinstance(v, int):
            return struct.pack("<Ii", 5, v)
        if isinstance(v, float):
            return struct.pack("<If", 6, v)
        if isinstance(v, str):
            return struct.pack("<I", 8) + s(v)
        first = v[0]
        if isinstance(first, str):
            return struct.pack("<IIQ", 9, 8, len(v)) + b"".join(s(x) for x in v)
        if isinstance(first, float):
            return struct.pack("<IIQ", 9, 6, len(v)) + struct.pack("<%df" % len(v), *v)
        return struct.pack("<IIQ", 9, 5, len(v)) + struct.pack("<%di" % len(v), *v)

    out = [b"GGUF", struct.pack("<IQQ", 3, 0, len(kv))]
    for k, v in kv.items():
        out.append(s(k) + val(v))
    data = b"".join(out)
    data += b"\0" * (-len(data) % 32)
    with open(path, "wb") as f:
        f.write(data)


def gguf_from_json(tmp, name, info):
    """The GGUF-metadata form of a fixture tokenizer (what llama.cpp's converter
    writes), so tok_load_spec is checked on the same corpus as tok_load_json:
    byte-level ones with their merges; SentencePiece ones with scores and no merges."""
    with gzip.open(tokenizer_gz(info)) as f:
        tj = json.loads(f.read().decode("utf-8"))
    vocab = dict(tj["model"]["vocab"])
    added = {a["content"]: a for a in tj["added_tokens"]}
    for a in tj["added_tokens"]:
        vocab[a["content"]] = a["id"]
    n = max(vocab.values()) + 1
    tokens = [""] * n
    for t, i in vocab.items():
        tokens[i] = t
    types = [3 if t in added and added[t]["special"] else 1 for t in tokens]
    kv = {"general.architecture": "llama"}
    if name == "mistral-v1":
        meta = json.loads(gzip.open(os.path.join(REPO, "tests", "fixtures", "tokenizers", name,
                                                 "spm_meta.json.gz")).read())
        kv.update({"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
                   "tokenizer.ggml.scores": [float(x) for x in meta["scores"]],
                   "tokenizer.ggml.token_type": meta["types"], "tokenizer.ggml.bos_token_id": 1,
                   "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.unknown_token_id": 0,
                   "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.add_space_prefix": True})
    else:
        merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
        kv.update({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "llama-bpe" if name == "llama3.2" else name,
                   "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types,
                   "tokenizer.ggml.merges": merges})
        if name == "llama3.2":  # as llama.cpp writes Llama 3.2 files
            kv.update({"tokenizer.ggml.bos_token_id": 128000, "tokenizer.ggml.eos_token_id": 128001,
                       "tokenizer.ggml.add_bos_token": True})
    path = os.path.join(tmp, name + ".gguf")
    write_gguf(path, kv)
    return ["--gguf", path]


def gguf_vocab_size(tmp, name, man):
    with gzip.open(tokenizer_gz(man["tokenizers"][name])) as f:
        tj = json.loads(f.read().decode("utf-8"))
    return max(list(tj["model"]["vocab"].values()) + [a["id"] for a in tj["added_tokens"]]) + 1


def tokenizer_args(tmp, name, info):
    d = os.path.join(tmp, name)
    if not os.path.isdir(d):
        os.makedirs(d)
        gunzip_to(tokenizer_gz(info), os.path.join(d, "tokenizer.json"))
    return ["--json", os.path.join(d, "tokenizer.json"), "--config", os.path.join(REPO, info["config"])]


# tiktoken's references: (name, fixture dir, special corpus, tokenizer_config.json); tests/gen/gen_tiktoken_refs.py.
TIKTOKEN_SETS = [("qwen35-tiktoken", "qwen35", "corpus-special"),
                 ("o200k-harmony-tiktoken", "o200k-harmony", "corpus-special-o200k")]
# Strings of corpus.bin.gz checked for o200k-harmony when its tokenizer was built but --require-cached
# is not given (make test builds it: make o200k-tokenizer); the full 23,121 in make regress-families.
O200K_CHEAP = 2000


def check_tiktoken(tmp, sets, verbose):
    """Qwen3.5 / 3.6's and gpt-oss's tokenizer.json (built from the ranks of Qwen's and OpenAI's
    encodings, in CACHE/tokenizers: make family-tokenizers, make o200k-tokenizer) against tiktoken's
    own ids and decodes (tests/gen/gen_tiktoken_refs.py)."""
    fails = 0
    for ref, fixture, special in TIKTOKEN_SETS:
        with open(os.path.join(REFS, ref + ".json")) as f:
            info = json.load(f)
        info = dict(info, config="tests/fixtures/tokenizers/%s/tokenizer_config.json" % fixture)
        if tokenizer_gz(info) is None:
            if "--require-cached" in sys.argv:
                print("FAIL %s: %s not in %s/tokenizers (make family-tokenizers)" % (ref, info["tokenizer_json_gz"], CACHE))
                fails += 1
                continue
            print("not checked here: %s (its tokenizer is in the cache: make family-tokenizers; "
                  "make regress-families checks it)" % ref)
            continue
        if special not in sets:
            raw = gzip.open(os.path.join(REFS, special + ".bin.gz")).read()
            path = os.path.join(tmp, special + ".bin")
            with open(path, "wb") as f:
                f.write(raw)
            sets[special] = (path, read_strings(raw))
        runs = [(ref, tokenizer_args(tmp, fixture, info))]
        vocab = os.path.join(CACHE, "tokenizers", fixture, "vocab.gguf")
        if fixture == "o200k-harmony" and "--require-cached" in sys.argv:
            # what the pinned sdist's converter writes for gpt-oss (tokenizer.ggml.pre "gpt-4o"): make o200k-gguf
            if not os.path.exists(vocab):
                print("FAIL %s: %s is missing (make o200k-gguf)" % (ref, vocab))
                fails += 1
            else:
                runs.append((ref + " (converter GGUF)", ["--gguf", vocab]))
        for (label, args), (suffix, kind, extra) in ((r, c) for r in runs for c in (
                ("", "corpus", []), (".special", special, []), (".nospecial", special, ["--no-special"]))):
            path, strings = sets[kind]
            ids = read_ids(gzip.open(os.path.join(REFS, ref + suffix + ".ids.bin.gz")).read())
            dec = read_decodes(gzip.open(os.path.join(REFS, ref + suffix + ".decode.bin.gz")).read(), strings)
            if fixture == "o200k-harmony" and kind == "corpus" and "--require-cached" not in sys.argv:
                path = os.path.join(tmp, "corpus-cheap.bin")
                strings, ids, dec = strings[:O200K_CHEAP], ids[:O200K_CHEAP], dec[:O200K_CHEAP]
                with open(path, "wb") as f:
                    f.write(b"".join(struct.pack("<I", len(x)) + x for x in strings))
            fails += compare(label + suffix, strings, ids, dec, run_driver(args + extra, path), verbose)
    return fails


def check_live(tmp, man, verbose):
    try:
        sys.path.insert(0, os.path.join(REPO, "tests", "gen"))
        import gen_tokenizer_refs as gen
        import tokenizers  # noqa: F401
    except ImportError:
        print("skip live comparison: the tokenizers package is not installed")
        return 0
    fails = 0
    for name, info in man["tokenizers"].items():
        tok = gen.load_tokenizer(name)
        corpus, sp = gen.make_corpus(gen.special_texts(tok), seed=gen.SEED + 1)
        corpus = corpus[::10] + sp[::10]
        ids, dec = gen.encode_all(tok, corpus)
        path = os.path.join(tmp, "live.bin")
        with open(path, "wb") as f:
            for s in corpus:
                b = s.encode()
                f.write(struct.pack("<I", len(b)) + b)
        strings = [s.encode() for s in corpus]
        got = run_driver(tokenizer_args(tmp, name, info), path)
        fails += compare("live %s (tokenizers %s)" % (name, tokenizers_version()), strings, ids,
                         [d.encode() for d in dec], got, verbose)
    return fails


def tokenizers_version():
    import tokenizers
    return tokenizers.__version__


def main():
    verbose = "-v" in sys.argv
    r = subprocess.run(["make", "-s", "build/tok_driver"], cwd=REPO)
    if r.returncode != 0:
        print("FAIL: could not build build/tok_driver")
        return 1
    with open(os.path.join(REFS, "manifest.json")) as f:
        man = json.load(f)
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        sets = {}
        kinds = ["corpus", "corpus-special"] + sorted({i["special_corpus"] for i in man["tokenizers"].values()
                                                       if "special_corpus" in i})
        for kind in kinds:
            raw = gzip.open(os.path.join(REFS, kind + ".bin.gz")).read()
            path = os.path.join(tmp, kind + ".bin")
            with open(path, "wb") as f:
                f.write(raw)
            sets[kind] = (path, read_strings(raw))
        runs = []
        for name, info in man["tokenizers"].items():
            if tokenizer_gz(info) is None:
                if "--require-cached" in sys.argv:
                    print("FAIL %s: %s not in %s/tokenizers (make family-tokenizers)" % (name, info["tokenizer_json_gz"], CACHE))
                    fails += 1
                else:
                    print("not checked here: %s (its tokenizer is in the cache: make family-tokenizers; "
                          "make regress-families checks it)" % name)
                continue
            args = tokenizer_args(tmp, name, info)
            runs.append((name, name, args, info))
            if name == "smollm2" and os.path.exists(GGUF):
                runs.append(("smollm2-gguf", name, ["--gguf", GGUF], info))
            if name + "-gguf-meta" in man.get("gguf_meta", []):
                runs.append((name + "-gguf-meta", name + "-gguf-meta", gguf_from_json(tmp, name, info), info))
        if not os.path.exists(GGUF):
            print("skip smollm2-gguf: %s not present (make model)" % os.path.relpath(GGUF, REPO))
        for label, ref, args, info in runs:
            spk = info.get("special_corpus", "corpus-special")
            for suffix, kind, extra in (("", "corpus", []), (".special", spk, []),
                                        (".nospecial", spk, ["--no-special"])):
                path, strings = sets[kind]
                ids = read_ids(gzip.open(os.path.join(REFS, ref + suffix + ".ids.bin.gz")).read())
                dec = read_decodes(gzip.open(os.path.join(REFS, ref + suffix + ".decode.bin.gz")).read(), strings)
                try:
                    got = run_driver(args + extra, path)
                except RuntimeError as e:
                    print("FAIL %s%s: %s" % (label, suffix, e))
                    fails += 1
                    continue
                n_vocab = None
                if label.endswith("-gguf-meta"):
                    n_vocab = gguf_vocab_size(tmp, ref[:-len("-gguf-meta")], man)
                fails += compare(label + suffix, strings, ids, dec, got, verbose, n_vocab)
        fails += check_tiktoken(tmp, sets, verbose)
        fails += check_chat(tmp, man, verbose)
        fails += check_chat_templates(tmp, man, verbose)
        fails += check_variants(tmp, man, verbose)
        fails += check_live(tmp, man, verbose)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
