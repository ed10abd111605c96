#!/usr/bin/env python3
"""Check the benchmark GGUF files (run by `make bench-models` after writing them; stdlib only).

Usage: python3 tests/bench/check_bench_models.py [CACHE]

For every .cache/bench/llama-1b-random.<TYPE>.gguf:
  - llmgen runs it: `./llmgen -m F --prompt-ids 1,2,3 -n N --ids --ignore-eos`;
  - llama.cpp loads and runs it (build/bench/peer_run, when `make peer` has built the peer), greedy;
and llmgen's greedy ids on each file are compared with its ids on the bf16 safetensors the files
were written from. F16 holds the bf16 values exactly (up to f16 subnormals), so its ids must agree;
Q8_0 / Q4_x weights differ, so their agreement is reported, not required. The ids of the two
engines on the same file are reported too (same weights, different arithmetic order).
Writes .cache/bench/models-check.json; exit status 1 when an engine cannot run a file or F16 disagrees.
"""
import json
import os
import subprocess
import sys

N = 8
PROMPT = "1,2,3"
TYPES = ("F16", "Q8_0", "Q4_0", "Q4_1")


def ids_of(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if p.returncode:
        return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    return p.stdout.strip(), None


def main():
    cache = sys.argv[1] if len(sys.argv) > 1 else ".cache"
    peer = os.path.join("build", "bench", "peer_run")
    have_peer = os.path.exists(peer)
    src = os.path.join(cache, "fixtures", "llama-1b-random")
    ref, err = ids_of(["./llmgen", "-m", src, "--prompt-ids", PROMPT, "-n", str(N), "--ids", "--ignore-eos"])
    report = {"prompt": PROMPT, "n": N, "bf16_safetensors": ref or err, "files": {}}
    print("bf16 safetensors (llmgen):  %s" % (ref or "ERROR " + err))
    bad = ref is None
    for t in TYPES:
        path = os.path.join(cache, "bench", "llama-1b-random.%s.gguf" % t)
        if not os.path.exists(path):
            print("%-5s missing: %s" % (t, path))
            bad = True
            continue
        a, aerr = ids_of(["./llmgen", "-m", path, "--prompt-ids", PROMPT, "-n", str(N), "--ids", "--ignore-eos"])
        entry = {"llmgen": a or "ERROR " + aerr}
        if have_peer:
            b, berr = ids_of([peer, "-m", path, "--prompt-ids", PROMPT, "-n", str(N)])
            if b:
                b = ",".join(map(str, json.loads(b)["ids"]))
            entry["llama.cpp"] = b or "ERROR " + berr
            bad |= b is None
        bad |= a is None
        same = a is not None and a == ref
        prefix = 0
        if a and ref:
            for x, y in zip(a.split(","), ref.split(",")):
                if x != y:
                    break
                prefix += 1
        entry["agrees_with_bf16"] = same
        entry["common_prefix_with_bf16"] = prefix
        if t == "F16" and not same:
            bad = True
        report["files"][t] = entry
        print("%-5s llmgen: %-60s llama.cpp: %s | first %d/%d ids = bf16's"
              % (t, entry["llmgen"], entry.get("llama.cpp", "(no peer: make peer)"), prefix, N))
    with open(os.path.join(cache, "bench", "models-check.json"), "w") as f:
        json.dump(report, f, indent=1)
    if bad:
        print("check_bench_models: FAILED (an engine could not run a file, or F16 ids differ from bf16's)")
        return 1
    print("check_bench_models: every file runs in llmgen%s; F16 ids = bf16 ids"
          % (" and llama.cpp" if have_peer else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
