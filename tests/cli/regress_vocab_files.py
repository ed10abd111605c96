#!/usr/bin/env python3
"""The pre-tokenizer test strings of llama.cpp's vocabulary files, for the byte-level vocabularies llmgen
reads from GGUF metadata (make regress-families; needs make peer for the pinned sdist's models/).

Each CACHE/peer/src/models/ggml-vocab-NAME.gguf comes with NAME.gguf.inp (the strings, separated by
lines "__ggml_vocab_test__") and NAME.gguf.out (one line of ids per string, made by the converter from
the model's HF tokenizer, no BOS). build/tok_driver tokenizes each string with the GGUF's own metadata;
every id list must equal the file's. Checked: qwen35 (Qwen3.5's pre-tokenizer on the Qwen2 vocabulary
of that fixture), qwen2 and gemma-4 (tokenizer model "gemma4": Gemma's SentencePiece BPE with merges).
Standard library only; exits 1 on a difference.
"""
import os
import struct
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache")), "peer", "src", "models")
DRIVER = os.path.join(REPO, "build", "tok_driver")
VOCABS = ["qwen35", "qwen2", "gemma-4"]
SEP = "\n__ggml_vocab_test__\n"


def cases(name):
    base = os.path.join(MODELS, "ggml-vocab-%s.gguf" % name)
    with open(base + ".inp", encoding="utf-8", newline="") as f:
        inp = f.read()
    if inp.endswith(SEP):
        inp = inp[:-len(SEP)]
    strings = inp.split(SEP)
    with open(base + ".out", encoding="utf-8") as f:
        outs = [[int(x) for x in line.split()] for line in f.read().split("\n")[:len(strings)]]
    return base, strings, outs


def run_driver(gguf, strings, tmp):
    path = os.path.join(tmp, "cases.bin")
    with open(path, "wb") as f:
        for s in strings:
            b = s.encode("utf-8")
            f.write(struct.pack("<I", len(b)) + b)
    p = subprocess.run([DRIVER, "--gguf", gguf, "cases", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        raise SystemExit("regress_vocab_files: tok_driver failed on %s: %s" % (gguf, p.stderr.decode(errors="replace")))
    d, o, res = p.stdout, 0, []
    while o < len(d):
        n = struct.unpack_from("<I", d, o)[0]
        o += 4
        if n == 0xFFFFFFFF:
            m = struct.unpack_from("<I", d, o)[0]
            res.append("error: " + d[o + 4:o + 4 + m].decode(errors="replace"))
            o += 4 + m
            continue
        res.append(list(struct.unpack_from("<%di" % n, d, o)))
        o += 4 * n
        for _ in range(2):  # the decode and the streaming decode
            o += 4 + struct.unpack_from("<I", d, o)[0]
    return res


def main():
    if not os.path.isdir(MODELS):
        print("FAIL: %s is missing (make peer)" % MODELS)
        return 1
    if subprocess.run(["make", "-s", "build/tok_driver"], cwd=REPO).returncode:
        print("FAIL: could not build build/tok_driver")
        return 1
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in VOCABS:
            gguf, strings, outs = cases(name)
            got = run_driver(gguf, strings, tmp)
            diff = [(s, o, g) for s, o, g in zip(strings, outs, got) if o != g]
            for s, o, g in diff[:5]:
                print("  %s %r: want %s got %s" % (name, s[:40], o[:20], g if isinstance(g, str) else g[:20]))
            print("%s %s: %d/%d test strings give the file's ids" % ("ok  " if not diff else "FAIL", name,
                                                                     len(strings) - len(diff), len(strings)))
            bad += len(diff) + (len(got) != len(strings))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
