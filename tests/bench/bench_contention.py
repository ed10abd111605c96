#!/usr/bin/env python3
"""Decode speed on a shared machine (`make bench-contention`): llmgen builds side by side,
rounds interleaved, medians.

    bench_contention.py [--rounds N] [--tokens N] [--prefill N] [--model PATH] BIN[=LABEL] ...

Each round runs, for every binary, these cases one after the other:
  quiet-t1 / quiet-t2   one process, -t 1 / -t 2, nothing else started
  busy-t1 / busy-t2     the same with one core kept busy (`yes > /dev/null`) beside it
  pair-t2               two -t 2 processes at once: the sum of their tokens/s
and prints per binary the median tokens/s of each case with the ratios the issue of
shared machines asks for: busy-t2 / busy-t1 (>= 0.9), pair-t2 / quiet-t2 (>= 0.9).
With --prefill N the rate is prefill's (a prompt of N ids, one token generated).
The load average before the run is printed: other work on the machine is part of
what is measured.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(REPO, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."
CASES = ["quiet-t1", "quiet-t2", "busy-t1", "busy-t2", "pair-t2"]


def start(binary, model, threads, tokens, prefill):
    if prefill:
        ids = ",".join(str(100 + (i * 7919) % 40000) for i in range(prefill))
        cmd = [binary, "-m", model, "--prompt-ids", ids, "-n", "1", "-t", str(threads), "--stats"]
    else:
        cmd = [binary, "-m", model, "-p", PROMPT, "-n", str(tokens), "--ignore-eos", "-t", str(threads), "--stats"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def rate(proc, prefill):
    err = proc.communicate()[1]
    pattern = r"prompt \d+ tokens in [0-9.]+ s \(([0-9.]+) tokens/s\)" if prefill else \
        r"generation \d+ tokens, ([0-9.]+) tokens/s"
    m = re.search(pattern, err)
    if proc.returncode or not m:
        sys.exit("bench_contention: a run failed: %s" % err.strip()[-300:])
    return float(m.group(1))


def run_case(binary, model, case, tokens, prefill):
    threads = 1 if case.endswith("t1") else 2
    busy = subprocess.Popen(["sh", "-c", "exec yes > /dev/null"]) if case.startswith("busy") else None
    try:
        procs = [start(binary, model, threads, tokens, prefill) for _ in range(2 if case.startswith("pair") else 1)]
        return sum(rate(p, prefill) for p in procs)
    finally:
        if busy:
            busy.kill()
            busy.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+", help="llmgen builds, BIN or BIN=LABEL")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--prefill", type=int, default=0, help="measure prefill of a prompt of this many ids")
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--cases", default=",".join(CASES), help="a comma-separated subset of " + ", ".join(CASES))
    a = ap.parse_args()
    bins = [(b.split("=", 1) + [b])[:2] for b in a.binaries]
    print("load average before: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    cases = [c for c in a.cases.split(",") if c in CASES]
    got = {label: {c: [] for c in CASES} for _, label in bins}
    for r in range(a.rounds):
        for case in cases:
            for binary, label in bins:  # interleaved: each case of every binary in turn
                got[label][case].append(run_case(binary, a.model, case, a.tokens, a.prefill))
    print("| build | " + " | ".join(CASES) + " | busy t2/t1 | pair/quiet-t2 |")
    print("|---" * (len(CASES) + 3) + "|")
    for _, label in bins:
        med = {c: statistics.median(got[label][c]) if got[label][c] else float("nan") for c in CASES}
        print("| %s | %s | %.2f | %.2f |" % (label, " | ".join("%.1f" % med[c] for c in CASES),
                                            med["busy-t2"] / med["busy-t1"], med["pair-t2"] / med["quiet-t2"]))
    what = "prefill of %d ids" % a.prefill if a.prefill else "%d tokens decoded" % a.tokens
    print("tokens/s, medians of %d interleaved rounds, %s each; load average after: %s" % (
        a.rounds, what, " ".join("%.2f" % x for x in os.getloadavg())))


if __name__ == "__main__":
    main()
