#!/usr/bin/env python3
"""`llmgen serve` under load and faults (make regress-serve; not part of make test: about a minute).

Usage: load_serve.py [--clients 32] [--per-client 8] [--extra 750]

On the default model, loopback only, 2 threads, --parallel 8: CLIENTS threads each send PER_CLIENT
requests (16 distinct ones, completions and chat, greedy and seeded, streamed and not, in turn); one
request in five is a stream the client closes after its first chunk. Every completed response must equal
the CLI's `--batch` result for the same request (text and finish reason), each exactly once (none lost,
none doubled: a response carries the request's own tag back through its prompt). Meanwhile another thread
sends malformed JSON (400), an oversize body (413), a wrong key (401) and a slowloris client (dropped
after --timeout) and checks each status while the load runs. Then EXTRA small requests through 16 threads:
the server's resident memory after them is within 16 MiB (--max-growth-mib) of what it was after the
first 250 requests (flat). At the end every slot is free and the queue empty (/metrics), and SIGTERM with requests in flight
lets them finish and exits 0. With LLMGEN pointing at an ASan build (make build/llmgen-san, as make
regress-serve does in a second run with fewer requests) a leak or memory error fails the exit status.

Environment: LLMGEN (the server binary, default ./llmgen), LLMGEN_CLI (the CLI the references come from,
default ./llmgen), LLMGEN_CACHE (default .cache). Standard library only;
every wait bounded; the server is killed at the end whatever happens. Exits 1 on any failure.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
KEY = "sk-load"

failures = 0
lock = threading.Lock()


def check(ok, what):
    global failures
    print(("ok    " if ok else "FAIL  ") + what)
    sys.stdout.flush()
    failures += not ok


TOPICS = ["rivers", "bread", "the moon", "chess", "volcanoes", "bees", "trains", "glass"]


def requests():
    """16 distinct requests: (route, body) and the CLI --batch line that must give the same text."""
    out = []
    for i, t in enumerate(TOPICS):
        n = 8 + 2 * i
        out.append(("/v1/completions", {"prompt": "A short note about %s:" % t, "max_tokens": n, "temperature": 0},
                    {"prompt": "A short note about %s:" % t, "max_tokens": n}))
        msgs = [{"role": "user", "content": "Say one thing about %s." % t}]
        out.append(("/v1/chat/completions", {"messages": msgs, "max_tokens": n, "temperature": 0.7, "seed": 100 + i},
                    {"messages": msgs, "max_tokens": n, "temperature": 0.7, "seed": 100 + i}))
    return out


def cli_results(reqs):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for i, (_, _, line) in enumerate(reqs):
            f.write(json.dumps(dict(line, id=i)) + "\n")
        path = f.name
    try:
        p = subprocess.run([os.environ.get("LLMGEN_CLI", os.path.join(REPO, "llmgen")), "-m", MODEL, "-t", "2", "-c", "1024", "--batch",
                            path], capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(path)
    check(p.returncode == 0, "CLI --batch of the 16 requests exits 0")
    return {r["id"]: r for r in map(json.loads, p.stdout.splitlines())}


def post(port, path, body, key=KEY, timeout=300):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", path, body=json.dumps(body) if not isinstance(body, bytes) else body,
              headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    return c, c.getresponse()


def read_stream(r):
    """(text, finish_reason) of an SSE answer, or None when it is not framed as it should be."""
    text, finish, done = [], None, False
    for raw in r.read().decode().split("\n\n"):
        if not raw.strip() or raw.startswith(":"):
            continue
        if not raw.startswith("data: "):
            return None
        d = raw[6:]
        if d == "[DONE]":
            done = True
            continue
        for ch in json.loads(d).get("choices", []):
            text.append(ch.get("text") or (ch.get("delta") or {}).get("content") or "")
            finish = ch.get("finish_reason") or finish
    return ("".join(text), finish) if done else None


def one(port, route, body, stream, drop):
    """('ok', text, finish) | ('dropped',) | ('error', why)."""
    body = dict(body, stream=stream)
    try:
        c, r = post(port, route, body)
        if r.status != 200:
            return ("error", "status %d: %s" % (r.status, r.read()[:200]))
        if drop:
            r.fp.readline()  # a first line of the stream, then go away
            c.sock.shutdown(socket.SHUT_RDWR)
            c.close()
            return ("dropped",)
        if stream:
            got = read_stream(r)
            c.close()
            return ("ok",) + got if got else ("error", "bad SSE framing")
        o = json.loads(r.read())
        c.close()
        ch = o["choices"][0]
        return ("ok", ch.get("text", (ch.get("message") or {}).get("content")), ch["finish_reason"])
    except (OSError, ValueError, http.client.HTTPException) as e:
        return ("error", repr(e))


def metric(port, name):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics", headers={"Authorization": "Bearer " + KEY})
    text = c.getresponse().read().decode()
    c.close()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def faults(port, out):
    """Bad requests while the load runs: each its status."""
    def status(path, body, key=KEY):
        try:
            c, r = post(port, path, body, key=key, timeout=60)
            r.read()
            c.close()
            return r.status
        except (OSError, http.client.HTTPException):
            return None
    out["malformed"] = status("/v1/chat/completions", b'{"messages": [}')
    out["oversize"] = status("/v1/completions", json.dumps({"prompt": "x" * 300000}).encode())
    out["key"] = status("/v1/completions", {"prompt": "x", "max_tokens": 1}, key="wrong")
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    t0, dropped = time.time(), False
    s.settimeout(0.5)
    while time.time() - t0 < 15 and not dropped:
        try:
            s.send(b"X")
            if s.recv(1) == b"":
                dropped = True
        except socket.timeout:
            pass
        except OSError:
            dropped = True
    s.close()
    out["slowloris_s"] = time.time() - t0 if dropped else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--per-client", type=int, default=8)
    ap.add_argument("--extra", type=int, default=750)
    ap.add_argument("--max-growth-mib", type=float, default=16,
                    help="resident memory growth allowed (an ASan build's quarantine keeps up to 256 MiB of freed blocks)")
    a = ap.parse_args()
    reqs = requests()
    cli = cli_results(reqs)
    cmd = [LLMGEN, "serve", "-m", MODEL, "--port", "0", "-t", "2", "--parallel", "8", "-c", "1024", "--api-key", KEY,
           "--timeout", "4", "--max-body", "200000", "--queue", "256", "--grace", "60"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log = []
    try:
        port, deadline = None, time.time() + 60
        while port is None and time.time() < deadline:
            line = p.stderr.readline()
            if not line:
                break
            log.append(line)
            if "listening on http://127.0.0.1:" in line:
                port = int(line.split("127.0.0.1:")[1].split()[0])
        threading.Thread(target=lambda: log.extend(p.stderr), daemon=True).start()
        check(port is not None, "the server starts")
        if port is None:
            return 1
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        results = {}
        fault = {}

        def client(i):
            for k in range(a.per_client):
                n = i * a.per_client + k
                route, body, _ = reqs[n % len(reqs)]
                stream = (i + k) % 2 == 1
                drop = n % 5 == 0
                r = one(port, route, body, stream or drop, drop)
                with lock:
                    if n in results:
                        results[n] = ("error", "doubled")
                    else:
                        results[n] = r + (n % len(reqs),)
        t0 = time.time()
        ths = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
        ft = threading.Thread(target=faults, args=(port, fault))
        for t in ths:
            t.start()
        time.sleep(0.5)
        ft.start()
        for t in ths:
            t.join(timeout=900)
        ft.join(timeout=120)
        wall = time.time() - t0
        total = a.clients * a.per_client
        ok = [r for r in results.values() if r[0] == "ok"]
        errors = [r for r in results.values() if r[0] == "error"]
        dropped = [r for r in results.values() if r[0] == "dropped"]
        wrong = [r for r in ok if r[1] != cli[r[-1]]["text"] or r[2] != {"eos": "stop", "stop": "stop", "length": "length"}[
            cli[r[-1]]["stop_reason"]]]
        check(len(results) == total and not errors, "%d clients x %d requests: %d answered, %d dropped by the client, "
              "%d errors %s (%.1f s)" % (a.clients, a.per_client, len(ok), len(dropped), len(errors), errors[:3], wall))
        check(not wrong and len(ok) == total - len(dropped), "every completed response equals its CLI bytes (%d wrong)"
              % len(wrong))
        check(fault.get("malformed") == 400 and fault.get("oversize") == 413 and fault.get("key") == 401,
              "under load: malformed JSON 400, oversize 413, wrong key 401 (%s)" % fault)
        check(fault.get("slowloris_s") is not None and fault["slowloris_s"] < 10,
              "under load: a slowloris client dropped after %s s (--timeout 4)" % fault.get("slowloris_s"))
        # memory over many more requests
        rss = []
        counter = [0]

        def small():
            while True:
                with lock:
                    if counter[0] >= a.extra:
                        return
                    counter[0] += 1
                    n = counter[0]
                r = one(port, "/v1/completions", {"prompt": "Item %d:" % (n % 50), "max_tokens": 2, "temperature": 0},
                        n % 3 == 0, False)
                if r[0] != "ok":
                    with lock:
                        errors.append(r)
                if n == max(1, 250 - total):
                    rss.append(rss_kib(p.pid))
        sm = [threading.Thread(target=small) for _ in range(16)]
        for t in sm:
            t.start()
        for t in sm:
            t.join(timeout=900)
        rss.append(rss_kib(p.pid))
        grow = (rss[-1] - rss[0]) / 1024 if len(rss) == 2 else None
        check(grow is not None and grow < a.max_growth_mib and not errors, "memory over %d more requests: %s MiB of growth after "
              "request 250 (%d errors)" % (a.extra, "%.1f" % grow if grow is not None else "?", len(errors)))
        deadline = time.time() + 5  # a slot frees itself just after its answer is handed over
        while True:
            busy, queued = metric(port, "llmgen_slots_busy"), metric(port, "llmgen_queue_length")
            if (busy == 0 and queued == 0) or time.time() > deadline:
                break
            time.sleep(0.05)
        check(busy == 0 and queued == 0, "every slot free at the end (busy %s, queued %s)" % (busy, queued))
        # SIGTERM with requests in flight
        inflight = []
        its = [threading.Thread(target=lambda i=i: inflight.append(one(port, reqs[i][0], reqs[i][1], i % 2 == 1,
                                                                       False))) for i in range(8)]
        for t in its:
            t.start()
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        for t in its:
            t.join(timeout=120)
        try:
            rc = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            rc = None
        done_ok = [r for r in inflight if r[0] == "ok"]
        check(rc == 0 and len(done_ok) == 8, "SIGTERM under load: %d of 8 in-flight requests finished, exit %s%s" % (
            len(done_ok), rc, "" if rc == 0 else ": " + "".join(log[-5:])))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)
    print("load_serve: %d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
