#!/usr/bin/env python3
"""make bench-big / bench-moe: a big Q4_K_M file (make big-model: the 8B config; make moe-models: the
Qwen3-30B-A3B and OLMoE configs) against llama.cpp, page cache warm.

Usage: python3 tests/bench/bench_big.py [--rounds N] [--threads T] [--pp N] [--tg N] [--model PATH]
       (from the repository root; stdlib only; needs make peer, build/bench/{llmgen_bench,peer_run,membw})

Each round runs both engines one after the other (the order alternates between rounds):
  time to first token  the wall time of a whole process, start to exit, with a 4-id prompt and one
                       generated id: `./llmgen -m F --prompt-ids ... -n 1 --ids --stats` (default
                       context) and build/bench/peer_run with the same ids (llama.cpp's load with its
                       defaults: mmap, CPU repack of Q4_K; n_ctx = prompt + 1). peer_run rather than
                       llama-bench -p 4 -n 1: it does only what the llmgen command does (one load, one
                       prefill, one argmax), where llama-bench also runs a separate one-token decode
                       test. llmgen's --stats line gives its load and first-token split.
  peak RSS             ru_maxrss of those processes (wait4); the bound is file + KV cache + 10%,
                       the KV cache as --stats reports it for the context llmgen ran with
  prefill / decode     build/bench/llmgen_bench (-p PP -n TG, 16-id warm-up) and llama-bench
                       (-p 16,PP -n TG -r 1 --no-warmup; pp16 is its warm-up), tokens/s
and build/bench/membw before each round: the decode floor of the round is that bandwidth over the
bytes a decode step streams (every 2-D weight once but the embedding table, and of an expert layer the k
experts a token chose: bench.py's model_costs). The file is read once before the first round so the page
cache is warm (it must fit: 4.9 GB for the 8B config, 17.5 GB for Qwen3-30B-A3B's on a 24 GiB machine).
Prints one table (medians over the rounds) and writes everything to .cache/bench/big.json (the 8B file)
or .cache/bench/big-<file name>.json.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench as B  # noqa: E402  (run(), model_costs(), probe(), the engines' samples)

MODEL = os.path.join(B.OUT_DIR, "llama-8b-random.Q4_K_M.gguf")
STATS = re.compile(r"load ([\d.]+) s .*first token ([\d.]+) s .*peak RSS ([\d.]+) MiB \| KV cache ([\d.]+) MiB")


def warm(path):
    """Read the file once (into the page cache): seconds taken."""
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(1 << 24)
        while f.readinto(buf):
            pass
    return time.perf_counter() - t0


def timed(cmd, name):
    """Run cmd: (wall seconds, peak RSS MiB, user s, sys s, stdout, stderr), or an error dict."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    out, err = p.stdout.read().decode(), p.stderr.read().decode()
    code = os.waitstatus_to_exitcode(status)
    if code:
        return {"error": "%s exit %d: %s" % (name, code, err.strip()[-300:])}
    return {"ttft_s": wall, "maxrss_mb": ru.ru_maxrss / 1024.0, "user_s": ru.ru_utime, "sys_s": ru.ru_stime}, out, err


def llmgen_ttft(path, t, ids):
    r = timed(["./llmgen", "-m", path, "--prompt-ids", ids, "-n", "1", "--ids", "--ignore-eos", "--stats", "-t",
               str(t)], "llmgen")
    if isinstance(r, dict):
        return r
    res, out, err = r
    res["first_id"] = out.strip()
    m = STATS.search(err)
    if m:
        res.update(load_s=float(m.group(1)), first_token_s=float(m.group(2)), kv_mb=float(m.group(4)))
    return res


def peer_ttft(path, t, ids):
    r = timed([os.path.join(B.BENCH_BIN, "peer_run"), "-m", path, "--prompt-ids", ids, "-n", "1", "-t", str(t)],
              "peer_run")
    if isinstance(r, dict):
        return r
    res, out, _ = r
    d = json.loads(out)
    res.update(first_id=",".join(map(str, d["ids"])), load_s=d["load_s"])
    return res


def fmt(v):
    return "-" if v is None else "%.2f" % v if isinstance(v, float) else str(v)


def med(rounds, k):
    v = [r[k] for r in rounds if isinstance(r.get(k), (int, float))]
    return statistics.median(v) if v else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pp", type=int, default=128)
    ap.add_argument("--tg", type=int, default=32)
    a = ap.parse_args()
    if not os.path.exists(a.model):
        sys.exit("bench-big: %s is missing (make big-model writes it)" % a.model)
    costs = B.model_costs(a.model)
    file_mb = os.path.getsize(a.model) / 2**20
    ids = B.ids_csv(4, min(128000, costs["lm_head_params"] // costs["hidden"]), 4)
    res = {"model": a.model, "file_mb": file_mb, "costs": costs, "threads": a.threads, "pp": a.pp, "tg": a.tg,
           "machine": B.machine_info(), "loadavg_before": os.getloadavg(), "rounds": []}
    res["warm_read_s"] = warm(a.model)
    B.log("big: %s, %.0f MiB, %.1f MB per token; read once in %.1f s; load average %.2f"
          % (a.model, file_mb, costs["bytes_per_token"] / 1e6, res["warm_read_s"], os.getloadavg()[0]))
    pp_key, tg_key = "pp%d" % a.pp, "tg%d" % a.tg
    for r in range(a.rounds):
        rnd = {"loadavg": os.getloadavg()[0], "bandwidth_gbs": B.probe("membw")["gbs"][str(a.threads)]}
        order = ("llmgen", "llama.cpp") if r % 2 == 0 else ("llama.cpp", "llmgen")
        for eng in order:
            if eng == "llmgen":
                rnd["llmgen_ttft"] = llmgen_ttft(a.model, a.threads, ids)
                rnd["llmgen"] = B.llmgen_sample(a.model, a.threads, pp=(a.pp,), tg=a.tg)
            else:
                rnd["llama_ttft"] = peer_ttft(a.model, a.threads, ids)
                rnd["llama"] = B.llama_sample(a.model, a.threads, pp=(a.pp,), tg=a.tg)
        res["rounds"].append(rnd)
        L, P, LT, PT = rnd["llmgen"], rnd["llama"], rnd["llmgen_ttft"], rnd["llama_ttft"]
        B.log("round %d/%d (load %.2f, %.1f GB/s): ttft llmgen %s / llama.cpp %s s; %s llmgen %s / %s; "
              "%s llmgen %s / %s%s" % (
                  r + 1, a.rounds, rnd["loadavg"], rnd["bandwidth_gbs"], fmt(LT.get("ttft_s")),
                  fmt(PT.get("ttft_s")), pp_key, fmt(L.get(pp_key)), fmt(P.get(pp_key)),
                  tg_key, fmt(L.get(tg_key)), fmt(P.get(tg_key)),
                  "".join("  ERROR " + x["error"] for x in (L, P, LT, PT) if "error" in x)))
    res["loadavg_after"] = os.getloadavg()
    R = res["rounds"]
    get = lambda key: [x[key] for x in R]  # noqa: E731
    bw = statistics.median(x["bandwidth_gbs"] for x in R)
    floor = bw * 1e9 / costs["bytes_per_token"]
    kv = med(get("llmgen_ttft"), "kv_mb") or 0.0
    rows = [
        ("time to first token, s", med(get("llmgen_ttft"), "ttft_s"), med(get("llama_ttft"), "ttft_s"), "<="),
        ("  of it load, s", med(get("llmgen_ttft"), "load_s"), med(get("llama_ttft"), "load_s"), ""),
        ("  user / sys CPU, s", "%.1f / %.1f" % (med(get("llmgen_ttft"), "user_s"), med(get("llmgen_ttft"), "sys_s")),
         "%.1f / %.1f" % (med(get("llama_ttft"), "user_s"), med(get("llama_ttft"), "sys_s")), ""),
        ("peak RSS (first token), MiB", med(get("llmgen_ttft"), "maxrss_mb"), med(get("llama_ttft"), "maxrss_mb"), ""),
        ("peak RSS (bench process), MiB", med(get("llmgen"), "maxrss_mb"), med(get("llama"), "maxrss_mb"), ""),
        ("prefill %d, tokens/s" % a.pp, med(get("llmgen"), pp_key), med(get("llama"), pp_key), ">="),
        ("decode %d, tokens/s" % a.tg, med(get("llmgen"), tg_key), med(get("llama"), tg_key), ">="),
    ]
    res["summary"] = {"bandwidth_gbs": bw, "decode_floor_tps": floor, "rss_bound_mb": (file_mb + kv) * 1.1,
                      "rows": rows}
    print("%s, %d threads, page cache warm, medians of %d interleaved rounds" % (os.path.basename(a.model), a.threads,
                                                                                 a.rounds))
    print("| | llmgen | llama.cpp | llmgen / llama.cpp |")
    print("|---|---|---|---|")
    for name, x, y, _ in rows:
        ratio = "%.2f" % (x / y) if isinstance(x, float) and isinstance(y, float) and y else ""
        print("| %s | %s | %s | %s |" % (name, fmt(x), fmt(y), ratio))
    dl, dp = med(get("llmgen"), tg_key), med(get("llama"), tg_key)
    print("bandwidth %.1f GB/s (membw, median of rounds): decode floor %.2f tokens/s; llmgen %.0f%%, llama.cpp %.0f%% of it"
          % (bw, floor, 100 * (dl or 0) / floor, 100 * (dp or 0) / floor))
    print("peak RSS bound: file %.0f MiB + KV cache %.0f MiB (llmgen's context) + 10%% = %.0f MiB"
          % (file_mb, kv, res["summary"]["rss_bound_mb"]))
    print("load average before %s, after %s" % (" ".join("%.2f" % x for x in res["loadavg_before"]),
                                                 " ".join("%.2f" % x for x in res["loadavg_after"])))
    out = "big.json" if a.model == MODEL else "big-%s.json" % os.path.basename(a.model)[:-5]
    with open(os.path.join(B.OUT_DIR, out), "w") as f:
        json.dump(res, f, indent=1)
    errors = [x["error"] for r in R for x in r.values() if isinstance(x, dict) and "error" in x]
    if errors:
        sys.exit("bench-big: %d run(s) failed: %s" % (len(errors), errors[0]))


if __name__ == "__main__":
    main()
