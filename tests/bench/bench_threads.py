#!/usr/bin/env python3
"""make bench-threads: llmgen against llama.cpp at 1, 2, 4, ... threads, up to the CPUs this process may use.

Usage: python3 tests/bench/bench_threads.py [MODEL.gguf]   (from the repository root; stdlib only;
       needs make peer, ./llmgen and build/bench/llmgen_bench; default: the default model)
Environment: BENCH_REPS=N rounds per thread count (default 3); BENCH_THREADS=1,2,... other counts.

The thread counts are the powers of two below the CPU count of the affinity mask (sched_getaffinity),
then that count itself. For each count, BENCH_REPS rounds, the engines one after the other (the order
alternates between rounds), medians:
  prefill 512, decode 128  build/bench/llmgen_bench and llama-bench (bench.py's samples), tokens/s
  --parallel 8             32 requests (32 prompt ids, 128 generated each) through `llmgen --batch
                           --parallel 8`, generated tokens/s with the load excluded, against
                           llama-batched-bench -npl 8 with the same lengths (bench_parallel.py's runs)
Prints one markdown table with the ratios llmgen / llama.cpp and writes every sample, the machine and
the versions (llmgen commit, the peer's BUILD-INFO) to .cache/bench/threads.json.
"""
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench as B  # noqa: E402  (llmgen_sample, llama_sample, machine_info, versions)
import bench_parallel as P  # noqa: E402  (requests, llmgen_batch, batched_bench)

MODEL = os.path.join(B.CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
PP, TG = 512, 128
METRICS = (("pp%d" % PP, "prefill %d" % PP), ("tg%d" % TG, "decode %d" % TG), ("par", "--parallel %d" % P.PAR))


def thread_counts():
    if os.environ.get("BENCH_THREADS"):
        return [int(x) for x in os.environ["BENCH_THREADS"].split(",")]
    cpus = len(os.sched_getaffinity(0))
    counts = [1 << i for i in range(cpus.bit_length()) if 1 << i < cpus]
    return counts + [cpus]


def vocab_size(path):
    meta, tensors = B.gguf_read(path)
    arch = meta.get("general.architecture", "llama")
    return meta.get(arch + ".vocab_size") or next(s[0] for n, s, _ in tensors if n == "token_embd.weight")


def guarded(fn, *args):
    """fn(*args), or {"error": ...} when it exits (bench_parallel's runs exit on a failed process)."""
    try:
        return fn(*args)
    except SystemExit as e:
        return {"error": str(e)[-300:]}


def llmgen_round(model, t, req, empty):
    res = B.llmgen_sample(model, t, pp=(PP,), tg=TG)
    load = guarded(P.llmgen_batch, model, empty, t, [])
    run = guarded(P.llmgen_batch, model, req, t, ["--parallel", str(P.PAR)])
    for r in (load, run):
        if isinstance(r, dict):
            res.setdefault("error", r["error"])
    if "error" not in res:
        res["par"] = run[1] / (run[0] - load[0])
    return res


def llama_round(model, t):
    res = B.llama_sample(model, t, pp=(PP,), tg=TG)
    r = guarded(P.batched_bench, os.path.join(B.PEER_BIN, "llama-batched-bench"), model, t)
    if isinstance(r, dict):
        res.setdefault("error", r["error"])
    else:
        res["par"] = r[0]
    return res


def med(rounds, k):
    v = [r[k] for r in rounds if isinstance(r.get(k), (int, float))]
    return statistics.median(v) if v else None


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else MODEL
    reps = int(os.environ.get("BENCH_REPS", "3"))
    if not os.path.exists(model):
        sys.exit("bench-threads: %s is missing (make model writes the default model)" % model)
    if not os.path.exists(os.path.join(B.PEER_BIN, "llama-bench")):
        sys.exit("bench-threads: no llama.cpp peer in %s (make peer builds it)" % B.PEER_BIN)
    os.makedirs(B.OUT_DIR, exist_ok=True)
    counts = thread_counts()
    res = {"model": model, "reps": reps, "pp": PP, "tg": TG, "parallel": P.PAR, "requests": P.N_REQ,
           "prompt": P.PROMPT, "generated": P.GEN, "cpus": len(os.sched_getaffinity(0)),
           "machine": B.machine_info(), "versions": B.versions(), "loadavg_before": os.getloadavg(),
           "threads": {}}
    B.log("threads %s, %d round(s) each, %s; load average %.2f" % (counts, reps, model, os.getloadavg()[0]))
    with tempfile.TemporaryDirectory() as tmp:
        req, empty = os.path.join(tmp, "req.jsonl"), os.path.join(tmp, "empty.jsonl")
        P.requests(req, vocab_size(model), P.N_REQ, P.GEN, 1)
        open(empty, "w").close()
        for t in counts:
            got = {"llmgen": [], "llama.cpp": []}
            for r in range(reps):
                order = ("llmgen", "llama.cpp") if r % 2 == 0 else ("llama.cpp", "llmgen")
                for eng in order:
                    got[eng].append(llmgen_round(model, t, req, empty) if eng == "llmgen" else llama_round(model, t))
                B.log("t=%d round %d/%d (load %.2f): %s" % (t, r + 1, reps, os.getloadavg()[0], "; ".join(
                    "%s %s" % (e, " ".join(B.fmt(got[e][-1].get(k), "") for k, _ in METRICS) +
                               ("  ERROR " + got[e][-1]["error"] if "error" in got[e][-1] else ""))
                    for e in got)))
            res["threads"][str(t)] = {"rounds": got, "median": {e: {k: med(got[e], k) for k, _ in METRICS}
                                                                 for e in got}}
    res["loadavg_after"] = os.getloadavg()
    with open(os.path.join(B.OUT_DIR, "threads.json"), "w") as f:
        json.dump(res, f, indent=1)

    print("%s, tokens/s, medians of %d interleaved round(s); %d CPUs; llama.cpp: llama-bench, "
          "llama-batched-bench -npl %d" % (os.path.basename(model), reps, res["cpus"], P.PAR))
    print()
    print("| threads | " + " | ".join("%s llmgen | llama.cpp | ratio" % name for _, name in METRICS) + " |")
    print("|---:" * (1 + 3 * len(METRICS)) + "|")
    for t in counts:
        m = res["threads"][str(t)]["median"]
        cells = []
        for k, _ in METRICS:
            a, b = m["llmgen"][k], m["llama.cpp"][k]
            cells += [B.fmt(a, ""), B.fmt(b, ""), "%.2fx" % (a / b) if a and b else "-"]
        print("| %d | %s |" % (t, " | ".join(cells)))
    print()
    print("load average before %s, after %s; samples: %s" % (
        " ".join("%.2f" % x for x in res["loadavg_before"]), " ".join("%.2f" % x for x in res["loadavg_after"]),
        os.path.join(B.OUT_DIR, "threads.json")))
    errors = [x["error"] for v in res["threads"].values() for e in v["rounds"].values() for x in e if "error" in x]
    if errors:
        sys.exit("bench-threads: %d round(s) failed; first: %s" % (len(errors), errors[0]))


if __name__ == "__main__":
    main()
