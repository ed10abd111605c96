#!/usr/bin/env python3
"""Tokenizer benchmark: vendor-free-tokenizer (build/tok_driver) against HF
`tokenizers` in the same run, one thread each.

  encode  MB/s on the stored differential corpus joined into one text
          (about 1.7 MB of mixed prose, code, whitespace, digits, emoji, CJK,
          combining marks, RTL and random UTF-8), best of 3, ids compared;
          HF is timed both on the whole text (encode) and line by line
          (encode_batch, RAYON_NUM_THREADS=1), the way it is usually driven.
  load    tokenizer load time, best of 5 (ours: process start excluded).

Runs with any Python; the HF columns need `tokenizers` (requirements-tok.txt).
Usage: bench_tokenizer.py [--json OUT]
"""
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers is imported
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(REPO, "build", "tok_driver")
REFS = os.path.join(REPO, "tests", "refs", "tokenizer")
FIX = os.path.join(REPO, "tests", "fixtures", "tokenizers")
GGUF = os.path.join(REPO, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def corpus_lines():
    d = gzip.open(os.path.join(REFS, "corpus.bin.gz")).read()
    out, o = [], 0
    while o < len(d):
        n = struct.unpack_from("<I", d, o)[0]
        out.append(d[o + 4:o + 4 + n])
        o += 4 + n
    return out


def ours(args, mode, path=None):
    cmd = [DRIVER] + args + [mode] + ([path] if path else [])
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout.decode().split()


def main():
    subprocess.run(["make", "-s", "build/tok_driver"], cwd=REPO, check=True)
    try:
        import tokenizers
        from tokenizers import Tokenizer
    except ImportError:
        tokenizers = None
    lines = corpus_lines()
    text = b"\n".join(lines)
    results = {"bytes": len(text), "tokenizers_version": tokenizers.__version__ if tokenizers else None, "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        tpath = os.path.join(tmp, "text.txt")
        with open(tpath, "wb") as f:
            f.write(text)
        for name in ("smollm2", "llama3.2"):
            jpath = os.path.join(tmp, name + ".json")
            with gzip.open(os.path.join(FIX, name, "tokenizer.json.gz")) as f, open(jpath, "wb") as g:
                g.write(f.read())
            setups = [(name + " (tokenizer.json)", ["--json", jpath])]
            if name == "smollm2" and os.path.exists(GGUF):
                setups.append((name + " (GGUF)", ["--gguf", GGUF]))
            if name == "llama3.2":  # the same vocabulary as GGUF metadata (as llama.cpp writes it)
                sys.path.insert(0, os.path.join(REPO, "tests", "cli"))
                import check_tokenizer
                info = {"tokenizer_json_gz": "tests/fixtures/tokenizers/llama3.2/tokenizer.json.gz"}
                setups.append((name + " (GGUF metadata)", check_tokenizer.gguf_from_json(tmp, name, info)))
            for label, args in setups:
                nbytes, ntok, secs, mbs = ours(args, "bench", tpath)
                loads = [float(ours(args, "load")[0]) for _ in range(5)]
                row = {"tokenizer": label, "ours_mb_s": float(mbs), "ours_tokens": int(ntok),
                       "ours_load_ms": min(loads)}
                cpath = os.path.join(tmp, "case.bin")
                with open(cpath, "wb") as f:
                    f.write(struct.pack("<I", len(text)) + text)
                out = subprocess.run([DRIVER] + args + ["cases", cpath], check=True, stdout=subprocess.PIPE).stdout
                n = struct.unpack_from("<I", out, 0)[0]
                row["ours_ids"] = list(struct.unpack_from("<%di" % n, out, 4))
                if tokenizers and "json" in label:
                    t0 = time.perf_counter()
                    for _ in range(5):
                        t0 = time.perf_counter()
                        tk = Tokenizer.from_file(jpath)
                        row["hf_load_ms"] = min(row.get("hf_load_ms", 1e9), (time.perf_counter() - t0) * 1e3)
                    s = text.decode("utf-8")
                    best = 1e9
                    for _ in range(3):
                        t0 = time.perf_counter()
                        enc = tk.encode(s, add_special_tokens=False)
                        best = min(best, time.perf_counter() - t0)
                    row["hf_mb_s"] = len(text) / best / 1e6
                    row["hf_tokens"] = len(enc.ids)
                    row["same_ids"] = enc.ids == row["ours_ids"]
                    strs = [x.decode("utf-8") for x in lines]
                    best = 1e9
                    for _ in range(3):
                        t0 = time.perf_counter()
                        tk.encode_batch(strs, add_special_tokens=False)
                        best = min(best, time.perf_counter() - t0)
                    row["hf_batch_mb_s"] = sum(len(x) for x in lines) / best / 1e6
                results["rows"].append(row)
    print("encode of %.2f MB mixed text, one thread; load best of 5 (tokenizers %s)" % (
        len(text) / 1e6, results["tokenizers_version"] or "not installed"))
    print("%-28s %10s %10s %14s %10s %10s %10s" % ("tokenizer", "ours MB/s", "HF MB/s", "HF batch MB/s",
                                                   "same ids", "ours load", "HF load"))
    for r in results["rows"]:
        same = "-" if "same_ids" not in r else ("yes" if r["same_ids"] else "NO")
        print("%-28s %10.2f %10s %14s %10s %8.1fms %10s" % (
            r["tokenizer"], r["ours_mb_s"], "%.2f" % r["hf_mb_s"] if "hf_mb_s" in r else "-",
            "%.2f" % r["hf_batch_mb_s"] if "hf_batch_mb_s" in r else "-", same, r["ours_load_ms"],
            "%.1fms" % r["hf_load_ms"] if "hf_load_ms" in r else "-"))
    for r in results["rows"]:
        r.pop("ours_ids", None)
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(results, f, indent=1)
    return 1 if any(r.get("same_ids") is False for r in results["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
