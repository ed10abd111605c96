#!/usr/bin/env python3
"""Interleaved A/B of llmgen builds (`make bench-ab BENCH_BINS="OLD=before ./llmgen=after"`):
is a change that should not change speed within noise of before?

    bench_ab.py [--rounds N] [--threads 1,2] [--model PATH] [--prompt N] [--tokens N] BIN[=LABEL] ...

Each round runs every build once per thread count, in turn (the order alternates between
rounds), one process each: a prompt of --prompt ids (prefill tokens/s) and --tokens decoded
with --ignore-eos (generation tokens/s), from --json's timings. Prints per build and thread
count the median of each rate, the spread (min-max) and the ratio of medians to the first
build. The load average before and after is printed: a loaded machine widens the spread.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(REPO, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def run(binary, model, threads, prompt, tokens):
    ids = ",".join(str(100 + (i * 7919) % 40000) for i in range(prompt))
    p = subprocess.run([binary, "-m", model, "--prompt-ids", ids, "-n", str(tokens), "--ignore-eos", "--json",
                        "-t", str(threads)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        sys.exit("bench_ab: %s failed: %s" % (binary, p.stderr.strip()[-300:]))
    t = json.loads(p.stdout)["timings"]
    return t["prompt_tokens_per_s"], t["generation_tokens_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+", help="llmgen builds, BIN or BIN=LABEL (the first is the baseline)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", default="2,1")
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--tokens", type=int, default=128)
    a = ap.parse_args()
    bins = [(b.split("=", 1) + [b])[:2] for b in a.binaries]
    threads = [int(t) for t in a.threads.split(",")]
    print("load average before: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    got = {(label, t): [] for _, label in bins for t in threads}
    for r in range(a.rounds):
        order = bins if r % 2 == 0 else bins[::-1]
        for t in threads:
            for binary, label in order:
                got[(label, t)].append(run(binary, a.model, t, a.prompt, a.tokens))
    print("| build | threads | prefill %d t/s (min-max) | ratio | decode %d t/s (min-max) | ratio |" % (a.prompt, a.tokens))
    print("|---|---|---|---|---|---|")
    for t in threads:
        base = None
        for _, label in bins:
            runs = got[(label, t)]
            pre, dec = [x[0] for x in runs], [x[1] for x in runs]
            med = (statistics.median(pre), statistics.median(dec))
            base = base or med
            print("| %s | %d | %.1f (%.1f-%.1f) | %.3f | %.1f (%.1f-%.1f) | %.3f |" % (
                label, t, med[0], min(pre), max(pre), med[0] / base[0], med[1], min(dec), max(dec), med[1] / base[1]))
    print("medians of %d interleaved rounds; load average after: %s" % (
        a.rounds, " ".join("%.2f" % x for x in os.getloadavg())))


if __name__ == "__main__":
    main()
