#!/usr/bin/env python3
"""Throughput of scripted work (`make bench-parallel`): several sequences per step and the prefix cache.

Usage: bench_parallel.py CACHE      (BENCH_THREADS=2, BENCH_REPS=3, BENCH_PAR_MODELS=smollm2,llama1b-q4_0)

Per model (the default SmolLM2 Q4_1 GGUF; the Llama-3.2-1B-config Q4_0 GGUF of `make bench-models`),
in the same run, rounds interleaved, medians:
  - 32 requests (prompt 32 random ids, 128 generated tokens each, ignore_eos) through
    `llmgen --batch` with --parallel 1 and --parallel 8: aggregate generated tokens/s = 32 * 128 /
    wall time of the whole run (model load excluded: a run of 0 requests is timed and subtracted),
    and the CPU time (user + system) per generated token, load excluded the same way;
  - llama.cpp's llama-batched-bench (built by `make peer`) at 8 parallel sequences, the same
    prompt and generation lengths: its generated tokens / total time (prompt + generation),
    the same measure;
  - 32 chat requests sharing a 400-token system prompt, 16 generated tokens each, --parallel 1:
    total time with the prefix cache (default) and with --no-prefix-cache.
Targets (the throughput issue): --parallel 8 / --parallel 1 >= 4x on SmolLM2, >= 3x on 1B Q4_0;
llmgen --parallel 8 / llama-batched-bench >= 1.5x; prefix cache >= 3x lower total time.
Writes CACHE/bench/parallel.json. The machine should be otherwise idle: load is printed.
"""
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.path.join(REPO, "llmgen")
N_REQ, PROMPT, GEN, PAR = 32, 32, 128, 8


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, stdin=None):
    """(wall s, stdout, stderr, CPU s: user + system of the child)."""
    t0, c0 = time.time(), children_cpu()
    p = subprocess.run(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.time() - t0
    cpu = children_cpu() - c0
    if p.returncode not in (0,):
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return wall, p.stdout, p.stderr, cpu


def requests(path, vocab, n, gen, seed):
    rnd = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            ids = [rnd.randrange(100, vocab - 100) for _ in range(PROMPT)]
            f.write(json.dumps({"id": i, "prompt_ids": ids, "max_tokens": gen, "ignore_eos": True}) + "\n")


def llmgen_batch(model, path, threads, extra):
    """(wall s, generated tokens, CPU s) of one --batch run."""
    wall, out, _, cpu = run([LLMGEN, "-m", model, "--batch", path, "-t", str(threads)] + extra)
    gen = sum(len(json.loads(l)["ids"]) for l in out.splitlines())
    return wall, gen, cpu


def batched_bench(peer, model, threads):
    _, out, err, _ = run([peer, "-m", model, "-c", str(PAR * (PROMPT + GEN) + 64), "-b", "2048", "-ub", "512",
                       "-npp", str(PROMPT), "-ntg", str(GEN), "-npl", str(PAR), "-t", str(threads)])
    for line in (out + err).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 10 and cells[0] == str(PROMPT) and cells[2] == str(PAR):
            total_s = float(cells[8])
            return PAR * GEN / total_s, line.strip()
    raise SystemExit("llama-batched-bench: no result row\n" + out[-2000:])


def system_requests(path, tokenizer_model):
    system = " ".join(["You are a careful assistant who answers questions about geography, history and "
                       "science with short, precise sentences."] * 20)
    with open(path, "w") as f:
        for i in range(N_REQ):
            f.write(json.dumps({"id": i, "chat": True, "system": system, "prompt": f"Question {i}: name a river.",
                                "max_tokens": 16, "ignore_eos": True}) + "\n")


def main():
    cache = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".cache")
    threads = int(os.environ.get("BENCH_THREADS", "2"))
    reps = int(os.environ.get("BENCH_REPS", "3"))
    models = {
        "smollm2": (os.path.join(cache, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"), 49152, True, 4.0),
        "llama1b-q4_0": (os.path.join(cache, "bench", "llama-1b-random.Q4_0.gguf"), 128256, False, 3.0),
    }
    wanted = os.environ.get("BENCH_PAR_MODELS", ",".join(models)).split(",")
    peer = os.path.join(cache, "peer", "build", "bin", "llama-batched-bench")
    print(f"load before: {os.getloadavg()[0]:.2f}; {threads} threads, {reps} rounds")
    results, rows = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.jsonl")
        open(empty, "w").close()
        for key in wanted:
            path, vocab, has_tok, goal = models[key]
            if not os.path.exists(path):
                print(f"{key}: {path} missing, skipped")
                continue
            req = os.path.join(tmp, f"{key}.jsonl")
            requests(req, vocab, N_REQ, GEN, 1)
            sysreq = os.path.join(tmp, f"{key}.sys.jsonl")
            if has_tok:
                system_requests(sysreq, path)
            s = {"p1": [], "p8": [], "peer": [], "cached": [], "uncached": [], "p1_cpu_ms_per_tok": [],
                 "p8_cpu_ms_per_tok": []}
            for r in range(reps):
                load_s, _, load_cpu = llmgen_batch(path, empty, threads, [])
                for name, extra in (("p1", ["--parallel", "1"]), ("p8", ["--parallel", str(PAR)])):
                    wall, gen, cpu = llmgen_batch(path, req, threads, extra)
                    s[name].append(gen / (wall - load_s))
                    s[name + "_cpu_ms_per_tok"].append(1000 * (cpu - load_cpu) / gen)
                if os.path.exists(peer):
                    tps, line = batched_bench(peer, path, threads)
                    s["peer"].append(tps)
                if has_tok:
                    for name, extra in (("cached", []), ("uncached", ["--no-prefix-cache"])):
                        s[name].append(llmgen_batch(path, sysreq, threads, extra)[0] - load_s)
                print(f"{key} round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in s.items() if v) +
                      f" (load {os.getloadavg()[0]:.2f})", flush=True)
            med = {k: statistics.median(v) for k, v in s.items() if v}
            results[key] = {"samples": s, "median": med, "threads": threads, "requests": N_REQ, "prompt": PROMPT,
                            "generated": GEN, "parallel": PAR}
            rows.append((f"{key}: CPU time per generated token (user + system, load excluded), --parallel 1 / {PAR}",
                         f"{med['p1_cpu_ms_per_tok']:.2f} / {med['p8_cpu_ms_per_tok']:.2f} ms", "-", True))
            rows.append((f"{key}: --parallel {PAR} / --parallel 1 (generated t/s)",
                         f"{med['p8']:.1f} / {med['p1']:.1f} = {med['p8'] / med['p1']:.2f}x", f">= {goal:g}x",
                         med["p8"] / med["p1"] >= goal))
            if "peer" in med:
                rows.append((f"{key}: llmgen --parallel {PAR} / llama-batched-bench -npl {PAR}",
                             f"{med['p8']:.1f} / {med['peer']:.1f} = {med['p8'] / med['peer']:.2f}x", ">= 1.5x",
                             med["p8"] / med["peer"] >= 1.5))
            if "cached" in med:
                rows.append((f"{key}: 400-token shared system prompt x {N_REQ}, time without / with prefix cache",
                             f"{med['uncached']:.2f} / {med['cached']:.2f} s = {med['uncached'] / med['cached']:.2f}x",
                             ">= 3x", med["uncached"] / med["cached"] >= 3))
    print(f"load after: {os.getloadavg()[0]:.2f}")
    for what, val, goal, ok in rows:
        print(f"{'    ' if goal == '-' else 'met ' if ok else 'MISS'}  {what}: {val}" +
              ("" if goal == "-" else f" (target {goal})"))
    os.makedirs(os.path.join(cache, "bench"), exist_ok=True)
    with open(os.path.join(cache, "bench", "parallel.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
