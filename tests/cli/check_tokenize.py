#!/usr/bin/env python3
"""`llmgen --tokenize` / `--detokenize` against the stored HF tokenizers references (issue 19).
Standard library only.

For every tokenizer of tests/refs/tokenizer/manifest.json (and the GGUF-metadata variants, and
SmolLM2's GGUF), the stored corpus (plain and with special tokens; every 2nd string, every 5th
with -m, to keep `make test` short: check_tokenizer.py runs the whole corpus through the
library) goes through
`llmgen --tokenize --batch -` and the reference ids through `llmgen --detokenize --batch -`,
once with `--tokenizer PATH` (tokenizer.json, a GGUF) and once with `-m MODEL` (the default
GGUF, or a model directory: the tiny f32 fixture's weights with that tokenizer.json beside
them; the GGUF-metadata files carry no weights, so they have --tokenizer only). Required:
  - ids equal to the reference, after the BOS the model adds for generation (--tokenize prints
    the prompt ids generation sees; the references are encode(add_special_tokens=False)): the
    same single id prepended to every string, and only for tokenizers that add one;
  - detokenized text equal to the reference decode (strings whose reference decode is not valid
    UTF-8 are compared as JSON carries them: each invalid byte as U+FFFD);
  - plain (non-batch) --tokenize prints "id,id,...\\n" and --detokenize the exact bytes.
Strings the CLI cannot take as a prompt (empty, or with a NUL byte) must be refused, and are counted.
"""
import codecs
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
GGUF = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
REFS = os.path.join(REPO, "tests", "refs", "tokenizer")
TINY = os.path.join(REPO, "tests", "fixtures", "tiny-mha-f32")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_tokenizer import gguf_from_json, gguf_vocab_size, read_decodes, read_ids, read_strings, tokenizer_gz  # noqa: E402

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL  " + msg, flush=True)


def lossy(b):
    """Bytes as llmgen's JSON writes them: valid UTF-8 kept, each invalid byte U+FFFD. (Python's
    decoder reports each maximal invalid run, which holds no start of a valid character.)"""
    return b.decode("utf-8", errors="fffd_per_byte")


codecs.register_error("fffd_per_byte", lambda e: ("\ufffd" * (e.end - e.start), e.end))


def batch(args, lines):
    p = subprocess.run([LLMGEN] + args + ["--batch", "-"], input="\n".join(lines).encode() + b"\n",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    return p.returncode, [json.loads(l) for l in p.stdout.decode().splitlines()], p.stderr.decode()


def check_source(label, args, strings, ref_ids, ref_dec):
    texts = []
    for s in strings:
        texts.append(s.decode("utf-8"))
    rc, res, err = batch(args + ["--tokenize"], [json.dumps({"prompt": t}) for t in texts])
    if len(res) != len(texts):
        fail("%s --tokenize: %d results for %d strings (exit %d, %s)" % (label, len(res), len(texts), rc, err[-300:]))
        return
    bad, refused, prepended = 0, 0, set()
    for t, r, want in zip(texts, res, ref_ids):
        if not t or "\0" in t:
            refused += "error" in r
            bad += "error" not in r
            continue
        got = r.get("ids")
        if got is None:
            bad += 1
            if bad <= 3:
                print("  %s %r: %s" % (label, t[:60], r.get("error")))
            continue
        if got != want:
            if len(got) == len(want) + 1 and got[1:] == want:
                prepended.add(got[0])
            else:
                bad += 1
                if bad <= 3:
                    print("  %s %r: ids %s want %s" % (label, t[:60], got[:20], want[:20]))
    n_tok = len(texts) - refused
    bos_ok = len(prepended) <= 1
    # detokenize the reference ids
    lines = [json.dumps({"prompt_ids": ids}) for ids in ref_ids if ids]
    rc2, dres, err2 = batch(args + ["--detokenize"], lines)
    dbad = 0
    want_dec = [d for ids, d in zip(ref_ids, ref_dec) if ids]
    if len(dres) != len(want_dec):
        fail("%s --detokenize: %d results for %d id lists (exit %d, %s)" % (label, len(dres), len(want_dec), rc2,
                                                                          err2[-300:]))
        return
    for r, d in zip(dres, want_dec):
        if r.get("text") != lossy(d):
            dbad += 1
            if dbad <= 3:
                print("  %s detokenize: %r want %r" % (label, str(r.get("text", r))[:200], lossy(d)[:60]))
    if bad or dbad or not bos_ok:
        fail("%s: %d/%d tokenized differently, %d/%d detokenized differently, prepended ids %s"
             % (label, bad, n_tok, dbad, len(want_dec), sorted(prepended)))
    else:
        print("ok    %s: %d/%d strings tokenized as HF%s, %d/%d id lists detokenized as HF; %d empty/NUL "
              "prompts refused" % (label, n_tok, n_tok, " (after BOS %s)" % list(prepended)[0] if prepended else "",
                                   len(want_dec), len(want_dec), refused), flush=True)


def check_plain(args, label):
    text = "Hello world, héllo 🌍"
    p = subprocess.run([LLMGEN] + args + ["--tokenize", "-p", text], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.decode()
    if p.returncode or p.stderr or not out.endswith("\n") or not all(x.isdigit() for x in out.strip().split(",")):
        fail("%s --tokenize -p: exit %d, %r %r" % (label, p.returncode, out, p.stderr))
        return
    q = subprocess.run([LLMGEN] + args + ["--detokenize"], input=out.replace(",", " ").encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if q.returncode or q.stderr or not q.stdout.endswith(text.encode()):
        fail("%s --detokenize (stdin, space-separated): exit %d, %r %r" % (label, q.returncode, q.stdout, q.stderr))
    else:
        print("ok    %s: --tokenize -p prints one id line; --detokenize of it gives the text back exactly" % label)


def main():
    man = json.load(open(os.path.join(REFS, "manifest.json")))
    kinds = {"corpus", "corpus-special"} | {i["special_corpus"] for i in man["tokenizers"].values() if "special_corpus" in i}
    sets = {k: read_strings(gzip.open(os.path.join(REFS, k + ".bin.gz")).read()) for k in kinds}
    spk = {n: i.get("special_corpus", "corpus-special") for n, i in man["tokenizers"].items()}
    tmp = tempfile.mkdtemp()
    try:
        sources = []  # (label, ref name, args)
        for name, info in man["tokenizers"].items():
            if tokenizer_gz(info) is None:  # Gemma 3's, in the cache: make regress-families checks it
                print("not checked here: %s (make family-tokenizers)" % name)
                continue
            d = os.path.join(tmp, name)
            os.makedirs(d)
            with gzip.open(tokenizer_gz(info)) as f, \
                    open(os.path.join(d, "tokenizer.json"), "wb") as g:
                g.write(f.read())
            shutil.copy(os.path.join(REPO, info["config"]), os.path.join(d, "tokenizer_config.json"))
            sources.append((name + " --tokenizer tokenizer.json", name, ["--tokenizer", os.path.join(d, "tokenizer.json")]))
            if name == "smollm2":
                sources.append(("smollm2 -m GGUF", name, ["-m", GGUF]))
                sources.append(("smollm2 --tokenizer GGUF", name, ["--tokenizer", GGUF]))
            else:  # a model directory: the tiny fixture's weights with this tokenizer beside them
                for f in ("config.json", "model.safetensors"):
                    os.symlink(os.path.join(TINY, f), os.path.join(d, f))
                sources.append((name + " -m model-dir", name, ["-m", d]))
            if name + "-gguf-meta" in man.get("gguf_meta", []):
                path = gguf_from_json(tmp, name, info)[1]
                sources.append((name + "-gguf-meta --tokenizer GGUF", name + "-gguf-meta", ["--tokenizer", path]))
        for label, ref, args in sources:
            base = ref[:-len("-gguf-meta")] if ref.endswith("-gguf-meta") else ref
            for suffix, kind in (("", "corpus"), (".special", spk[base])):
                ids = read_ids(gzip.open(os.path.join(REFS, ref + suffix + ".ids.bin.gz")).read())
                dec = read_decodes(gzip.open(os.path.join(REFS, ref + suffix + ".decode.bin.gz")).read(), sets[kind])
                if label.endswith("-gguf-meta --tokenizer GGUF"):
                    vocab = gguf_vocab_size(tmp, ref[:-len("-gguf-meta")], man)  # as check_tokenizer.py skips
                    keep = [k for k, i in enumerate(ids) if all(x < vocab for x in i)]
                    check_source(label + suffix, args, [sets[kind][k] for k in keep], [ids[k] for k in keep],
                                 [dec[k] for k in keep])
                elif " -m " in " " + label + " ":
                    # -m opens the same tokenizer files through the model loader: every 5th string
                    # keeps `make test` short (the --tokenizer runs above take the whole corpus)
                    check_source(label + suffix, args, sets[kind][::5], ids[::5], dec[::5])
                else:  # every 2nd string: the whole corpus goes through the library in check_tokenizer.py
                    check_source(label + suffix, args, sets[kind][::2], ids[::2], dec[::2])
        check_plain(["-m", GGUF], "smollm2 -m GGUF")
        check_plain(["--tokenizer", os.path.join(tmp, "llama3.2", "tokenizer.json")], "llama3.2 --tokenizer")
    finally:
        shutil.rmtree(tmp)
    print("check_tokenize: %d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
