#!/usr/bin/env python3
"""make bench-serve: `llmgen serve` with 8 concurrent clients against `--batch --parallel 8` on the same
requests, and against llama-server (the pinned sdist's, make peer-server) with 8 slots, 2 threads each.

Usage: bench_serve.py [--requests 32] [--tokens 64] [--rounds 2]

REQUESTS completions of TOKENS greedy tokens each (ignore_eos: every request the same length), distinct
prompts. The server side: 8 client threads, each streaming its share one request after another; the
aggregate generated tokens/s is all tokens over the wall time from the first request sent to the last
answer read (the model loaded before); time to first token is from a request sent to its first text.
The --batch side: the same lines through `--batch --parallel 8`, its wall time less that of the same
command on one 1-token line (load and exit). Each side runs ROUNDS times in turn; the best of each is
kept. Prints a table and writes .cache/bench/serve.json; the targets (>= 0.95x of --batch, >= 1.5x of
llama-server) are reported, not asserted (a shared machine's noise is larger than 5%).
Standard library only.
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
MODEL = os.environ.get("MODEL", os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
PEER_SERVER = os.path.join(CACHE, "peer", "build-server", "bin", "llama-server")
CTX = 512


def prompts(n):
    return ["Request %d. Write about the history of %s." % (i, ["ships", "maps", "clocks", "paper"][i % 4])
            for i in range(n)]


def batch_run(lines):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
        path = f.name
    t = time.time()
    p = subprocess.run([LLMGEN, "-m", MODEL, "-t", "2", "-c", str(CTX), "--batch", path, "--parallel", "8"],
                       capture_output=True, text=True, timeout=1800)
    wall = time.time() - t
    os.unlink(path)
    if p.returncode:
        sys.exit("bench-serve: --batch failed: " + p.stderr[-300:])
    return wall, [json.loads(l) for l in p.stdout.splitlines()]


def start(cmd, port):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return p
        except OSError:
            pass
        time.sleep(0.1)
    p.kill()
    sys.exit("bench-serve: %s did not come up" % cmd[0])


def stream_one(port, prompt, tokens):
    body = json.dumps({"prompt": prompt, "max_tokens": tokens, "temperature": 0, "ignore_eos": True, "stream": True,
                       "stream_options": {"include_usage": True}})
    t0 = time.time()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    ttft, text, n = None, [], None
    buf = b""
    while True:
        line = r.fp.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        d = line[6:].strip()
        if d == b"[DONE]":
            break
        o = json.loads(d)
        for ch in o.get("choices", []):
            if ch.get("text"):
                if ttft is None:
                    ttft = time.time() - t0
                text.append(ch["text"])
        if o.get("usage"):
            n = o["usage"]["completion_tokens"]
    c.close()
    del buf
    return ttft, "".join(text), n


def server_run(port, ps, tokens, clients=8):
    results, lock = [None] * len(ps), threading.Lock()
    nxt = [0]

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(ps):
                return
            results[i] = stream_one(port, ps[i], tokens)
    t = time.time()
    ths = [threading.Thread(target=worker) for _ in range(clients)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    return time.time() - t, results


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    ps = prompts(a.requests)
    lines = [{"id": i, "prompt": p, "max_tokens": a.tokens, "ignore_eos": True} for i, p in enumerate(ps)]
    out = {"model": os.path.basename(MODEL), "requests": a.requests, "tokens": a.tokens, "threads": 2, "slots": 8}
    best = {}
    port = 18500 + os.getpid() % 400
    srv = start([LLMGEN, "serve", "-m", MODEL, "-t", "2", "--parallel", "8", "-c", str(CTX), "--port", str(port),
                 "--queue", "256"], port)
    try:
        for _ in range(a.rounds):
            load_wall, _ = batch_run([dict(lines[0], max_tokens=1)])
            wall, res = batch_run(lines)
            tps = sum(len(r["ids"]) for r in res) / max(1e-9, wall - load_wall)
            if tps > best.get("batch", (0,))[0]:
                best["batch"] = (tps, wall - load_wall, {r["id"]: r["text"] for r in res})
            wall, sres = server_run(port, ps, a.tokens)
            tps = sum(r[2] or 0 for r in sres) / wall
            if tps > best.get("serve", (0,))[0]:
                best["serve"] = (tps, wall, sres)
    finally:
        srv.kill()
        srv.wait()
    same = all(best["serve"][2][i][1] == best["batch"][2][i] for i in range(a.requests))
    if os.path.exists(PEER_SERVER):
        pport = port + 1
        peer = start([PEER_SERVER, "-m", MODEL, "-t", "2", "-np", "8", "-c", str(CTX * 8), "--port", str(pport),
                      "--host", "127.0.0.1"], pport)
        try:
            for _ in range(a.rounds):
                wall, pres = server_run(pport, ps, a.tokens)
                tps = sum(r[2] or 0 for r in pres) / wall
                if tps > best.get("peer", (0,))[0]:
                    best["peer"] = (tps, wall, pres)
        finally:
            peer.kill()
            peer.wait()
    rows = []
    for k, name in (("batch", "llmgen --batch --parallel 8"), ("serve", "llmgen serve, 8 clients"),
                    ("peer", "llama-server -np 8, 8 clients")):
        if k not in best:
            rows.append((name, None, None, None, None))
            continue
        tps, wall = best[k][0], best[k][1]
        ttfts = [r[0] for r in best[k][2] if r[0] is not None] if k != "batch" else []
        rows.append((name, tps, wall, pct(ttfts, 0.5) if ttfts else None, pct(ttfts, 0.99) if ttfts else None))
        out[k] = {"tokens_per_s": tps, "wall_s": wall, "ttft_p50_s": rows[-1][3], "ttft_p99_s": rows[-1][4]}
    print("%-32s %12s %8s %10s %10s" % ("", "tokens/s", "wall s", "TTFT p50", "TTFT p99"))
    for name, tps, wall, p50, p99 in rows:
        if tps is None:
            print("%-32s %12s" % (name, "not built (make peer-server)"))
        else:
            print("%-32s %12.1f %8.2f %10s %10s" % (name, tps, wall, "%.3f" % p50 if p50 is not None else "-",
                                                   "%.3f" % p99 if p99 is not None else "-"))
    r1 = best["serve"][0] / best["batch"][0]
    out["serve_over_batch"] = r1
    print("serve / --batch: %.3fx (target >= 0.95); serve texts equal --batch's: %s" % (r1, same))
    out["same_text_as_batch"] = same
    if "peer" in best:
        out["serve_over_peer"] = best["serve"][0] / best["peer"][0]
        print("serve / llama-server: %.2fx (target >= 1.5)" % out["serve_over_peer"])
    os.makedirs(os.path.join(CACHE, "bench"), exist_ok=True)
    with open(os.path.join(CACHE, "bench", "serve.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
