#!/usr/bin/env python3
"""--batch with --parallel N (several requests per forward step) against the sequential run.

Usage: check_parallel.py        (run by `make regress`)

On the default model, fast mode and --exact, 2 threads: 12 mixed requests (prompts of
different lengths, chat and plain, greedy and seeded sampling, stop strings, different
max_tokens, an invalid line) through `--batch`, `--batch --parallel 5` and
`--batch --parallel 5 --ordered`. Every result line must equal the sequential run's
(ids, text, stop reason, seed; timings aside): the parallel one as a set keyed by "line",
the ordered one line for line. Also: bad uses of --parallel / --ordered exit 1 with one
line naming the option.

Environment: LLMGEN (binary, default ./llmgen), LLMGEN_CACHE (default .cache).
Standard library only; exits 1 on any failure.
"""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")

REQUESTS = [
    {"id": "short", "prompt": "Hi", "max_tokens": 8},
    {"id": "chat", "prompt": "What is the capital of France?", "chat": True, "max_tokens": 24},
    {"id": "long", "prompt": "The printing press changed Europe. " * 12, "max_tokens": 16},
    {"id": "ids", "prompt_ids": [1, 504, 3458, 282, 260], "max_tokens": 12},
    {"id": "sampled", "prompt": "Once upon a time", "temperature": 0.8, "seed": 7, "max_tokens": 20},
    {"id": "stop", "prompt": "Count: one, two, three,", "stop": [" six"], "max_tokens": 30},
    {"id": "noeos", "prompt": "List three colors:", "ignore_eos": True, "max_tokens": 40},
    "this line is not JSON",
    {"id": "topk", "prompt": "The weather today", "temperature": 1.0, "top_k": 5, "seed": 3, "max_tokens": 10},
    {"id": "one", "prompt": "A", "max_tokens": 1},
    {"id": "code", "prompt": "def add(a, b):\n", "max_tokens": 20},
    {"id": "last", "prompt": "Goodbye", "max_tokens": 6},
]

failures = 0


def check(ok, what):
    global failures
    print(("ok    " if ok else "FAIL  ") + what)
    failures += not ok


def run(args):
    p = subprocess.run([LLMGEN] + args, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def results(out):
    rows = []
    for line in out.splitlines():
        r = json.loads(line)
        r.pop("timings", None)
        rows.append(r)
    return rows


def main():
    if not os.path.exists(MODEL):
        print(f"check_parallel: {MODEL} missing (make model)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "req.jsonl")
        with open(path, "w") as f:
            for r in REQUESTS:
                f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
        for mode in ([], ["--exact"]):
            base = ["-m", MODEL, "--batch", path, "-t", "2"] + mode
            rc0, out0, _ = run(base)
            seq = results(out0)
            check(rc0 == 1 and len(seq) == len(REQUESTS),
                  f"{' '.join(mode) or 'fast'}: sequential run, {len(seq)} lines, exit {rc0} (1: the bad line)")
            rc1, out1, _ = run(base + ["--parallel", "5"])
            par = results(out1)
            key = lambda r: r["line"]
            check(rc1 == rc0 and sorted(par, key=key) == sorted(seq, key=key),
                  f"{' '.join(mode) or 'fast'}: --parallel 5 gives the sequential results (order aside)")
            print(f"      (--parallel 5 wrote the lines as they finished: {[r['line'] for r in par]})")
            rc2, out2, _ = run(base + ["--parallel", "5", "--ordered"])
            check(rc2 == rc0 and results(out2) == seq,
                  f"{' '.join(mode) or 'fast'}: --parallel 5 --ordered equals the sequential run line for line")
        for args, want in [(["--parallel", "0"], "--parallel"), (["--parallel", "65"], "--parallel"),
                           (["--parallel", "2", "-p", "x"], "--parallel"), (["--ordered", "-p", "x"], "--ordered"),
                           (["--parallel", "2", "--batch", path, "--tokenize"], "--parallel")]:
            rc, out, err = run(["-m", MODEL] + args)
            check(rc == 1 and want in err and err.count("\n") == 1 and not out,
                  f"bad use {' '.join(args)}: exit {rc}, {err.strip()!r}")
    print(f"check_parallel: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
