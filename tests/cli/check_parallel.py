#!/usr/bin/env python3
"""--batch with --parallel N (several requests per forward step) against the sequential run.

Usage: check_parallel.py        (run by `make regress`)

On the default model, fast mode and --exact, 2 threads: 12 mixed requests (prompts of
different lengths, chat and plain, greedy and seeded sampling, stop strings, different
max_tokens, an invalid line) through `--batch`, `--batch --parallel 5` and
`--batch --parallel 5 --ordered` (fast mode only). Every result line must equal the sequential run's
(ids, text, stop reason, seed; timings aside): the parallel one as a set keyed by "line",
the ordered one line for line. Also: bad uses of --parallel / --ordered exit 1 with one
line naming the option.

Recovery and scale-out, on 16 requests: a --parallel 3 run writing with --resume OUT is
killed with SIGKILL once OUT has a few lines, then rerun with --resume OUT: OUT then holds
exactly one line per id, each equal to the uninterrupted run's (a torn last line written by
hand before the rerun is cut off). The README's GNU parallel recipe (`parallel --pipe -N 5
-j 2 llmgen ... --batch -`) gives the same set of results (by id) as one process.

Prefix cache: 4 chat requests sharing a long system prompt give the same results (every
field but timings) with the cache (default), with --no-prefix-cache and with --parallel 3,
and the cached runs report the shared tokens as cached_prompt_tokens.

--prompt-cache FILE: a run saves its cache to FILE; a later prompt that starts with the same
text reuses it and gives the same ids and logits bytes (--dump-logits) as a run without the
cache, fast and exact; a cache made in the other mode, a damaged one (a flipped byte) and a
truncated one are each ignored with one note on stderr, and the results still equal the
uncached run's; --prompt-cache with --batch is a usage error.

Environment: LLMGEN (binary, default ./llmgen), LLMGEN_CACHE (default .cache).
Standard library only; exits 1 on any failure.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

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


def by_id(rows):
    out = {}
    for r in rows:
        r = dict(r)
        r.pop("line", None)
        out[json.dumps(r["id"])] = r
    return out


N_MANY = 16


def recovery(tmp):
    path = os.path.join(tmp, "many.jsonl")
    with open(path, "w") as f:
        for i in range(N_MANY):
            f.write(json.dumps({"id": i, "prompt": f"Tell me fact number {i} about the sea.",
                                "max_tokens": 12 + i % 3 * 6, "ignore_eos": True}) + "\n")
    base = ["-m", MODEL, "--batch", path, "-t", "2"]
    rc, out, _ = run(base)
    want = by_id(results(out))
    check(rc == 0 and len(want) == N_MANY, f"uninterrupted run: {len(want)} results, exit {rc}")
    res = os.path.join(tmp, "out.jsonl")
    p = subprocess.Popen([LLMGEN] + base + ["--parallel", "3", "--resume", res], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    t0 = time.time()
    while time.time() - t0 < 300 and p.poll() is None:
        if os.path.exists(res) and open(res).read().count("\n") >= 5:
            break
        time.sleep(0.05)
    killed = p.poll() is None
    if killed:
        p.send_signal(signal.SIGKILL)
    p.wait()
    with open(res) as f:
        before = f.read().count("\n")
    check(killed and before < N_MANY, f"killed with SIGKILL after {before} of {N_MANY} results")
    with open(res, "a") as f:
        f.write('{"id": %d, "text": "a line torn by the kill' % (N_MANY - 1))
    rc, out, err = run(base + ["--parallel", "3", "--resume", res])
    with open(res) as f:
        lines = f.read().splitlines()
    rows = [json.loads(l) for l in lines]
    for r in rows:
        r.pop("timings", None)
    ids = [json.dumps(r["id"]) for r in rows]
    check(rc == 0 and not out and len(ids) == N_MANY and len(set(ids)) == N_MANY,
          f"resumed: {len(ids)} lines, {len(set(ids))} distinct ids, exit {rc} {err.strip()}")
    check(by_id(rows) == want, "resumed results equal the uninterrupted run's")
    rc, out, _ = run(base + ["--resume", res])
    with open(res) as f:
        check(rc == 0 and f.read().count("\n") == N_MANY, "a second resume has nothing left to do")
    if not shutil.which("parallel"):
        check(False, "GNU parallel is not installed (make deps installs it)")
        return
    with open(path) as f:
        p = subprocess.run(["parallel", "--will-cite", "--pipe", "-N", "5", "-j", "2", LLMGEN] + ["-m", MODEL, "-t", "1",
                           "--batch", "-"], stdin=f, capture_output=True, text=True, timeout=600)
    got = by_id(results(p.stdout))
    check(p.returncode == 0 and got == want,
          f"GNU parallel --pipe -N 5 -j 2 (two local workers): {len(got)} results, the same set as one process")


def prefix_cache(tmp):
    path = os.path.join(tmp, "sys.jsonl")
    system = " ".join(["You answer questions about rivers with one short sentence."] * 12)
    with open(path, "w") as f:
        for i in range(4):
            f.write(json.dumps({"id": i, "chat": True, "system": system, "prompt": f"Name river {i}.",
                                "max_tokens": 8, "ignore_eos": True}) + "\n")
    for mode in ([], ["--exact"]):
        base = ["-m", MODEL, "--batch", path, "-t", "2"] + mode
        runs = {}
        for name, extra in [("cached", []), ("uncached", ["--no-prefix-cache"]), ("parallel", ["--parallel", "3"])]:
            rc, out, _ = run(base + extra)
            rows = [json.loads(l) for l in out.splitlines()]
            runs[name] = (rc, rows)
        cached = [r["timings"]["cached_prompt_tokens"] for r in runs["cached"][1]]
        uncached = [r["timings"]["cached_prompt_tokens"] for r in runs["uncached"][1]]
        strip = lambda rows: {r["id"]: {k: v for k, v in r.items() if k not in ("timings", "line")} for r in rows}
        check(all(rc == 0 for rc, _ in runs.values()) and strip(runs["cached"][1]) == strip(runs["uncached"][1])
              == strip(runs["parallel"][1]),
              f"{' '.join(mode) or 'fast'}: prefix cache on, off and with --parallel 3: the same results")
        check(cached[0] == 0 and min(cached[1:]) > 100 and max(uncached) == 0,
              f"{' '.join(mode) or 'fast'}: cached prompt tokens {cached} (off: {max(uncached)})")


def prompt_cache(tmp):
    first = "The history of the river Thames begins long before London existed. " * 6
    second = first + "Tell me about its bridges."
    logits = os.path.join(tmp, "logits.bin")

    def gen(prompt, mode, cache=None):
        args = ["-m", MODEL, "-p", prompt, "-n", "12", "--ignore-eos", "--json", "-t", "2", "--dump-logits", logits] + mode
        rc, out, err = run(args + (["--prompt-cache", cache] if cache else []))
        with open(logits, "rb") as f:
            return rc, json.loads(out) if out else None, f.read(), err

    for mode in ([], ["--exact"]):
        name = " ".join(mode) or "fast"
        cache = os.path.join(tmp, f"cache{len(mode)}.kv")
        rc, want, want_logits, _ = gen(second, mode)
        rc1, _, _, _ = gen(first, mode, cache)
        rc2, got, got_logits, err = gen(second, mode, cache)
        check(rc == rc1 == rc2 == 0 and os.path.exists(cache) and got["ids"] == want["ids"] and
              got_logits == want_logits and got["timings"]["cached_prompt_tokens"] > 50 and not err,
              f"{name}: --prompt-cache reused {got['timings']['cached_prompt_tokens'] if got else '?'} tokens, "
              f"ids and logits bytes equal the uncached run")
        other = os.path.join(tmp, f"cache{1 - len(mode)}.kv")
        with open(cache, "rb") as f:
            data = bytearray(f.read())
        bad = os.path.join(tmp, "bad.kv")
        cases = [("made in the other mode", None), ("damaged", data[:-100] + bytes([data[-100] ^ 1]) + data[-99:]),
                 ("truncated", data[: len(data) // 2])]
        for what, content in cases:
            if content is None:
                if not os.path.exists(other):
                    continue
                path = other
            else:
                path = bad
                with open(bad, "wb") as f:
                    f.write(content)
            before = open(path, "rb").read()
            rc3, got, got_logits, err = gen(second, mode, path)
            check(rc3 == 0 and got["ids"] == want["ids"] and got_logits == want_logits and
                  err.count("\n") == 1 and "note" in err and got["timings"]["cached_prompt_tokens"] == 0,
                  f"{name}: a prompt cache {what}: ignored with a note ({err.strip()!r}), results unchanged")
            if content is None:
                with open(path, "wb") as f:  # the run saved its own cache over it: put the other mode's back
                    f.write(before)
    rc, out, err = run(["-m", MODEL, "--batch", "-", "--prompt-cache", os.path.join(tmp, "x.kv")])
    check(rc == 1 and "--prompt-cache" in err, "--prompt-cache with --batch: exit 1 naming the option")


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
            if mode:  # the writer's order is the same code in both modes
                continue
            rc2, out2, _ = run(base + ["--parallel", "5", "--ordered"])
            check(rc2 == rc0 and results(out2) == seq,
                  f"{' '.join(mode) or 'fast'}: --parallel 5 --ordered equals the sequential run line for line")
        for args, want in [(["--parallel", "0"], "--parallel"), (["--parallel", "65"], "--parallel"),
                           (["--parallel", "2", "-p", "x"], "--parallel"), (["--ordered", "-p", "x"], "--ordered"),
                           (["--parallel", "2", "--batch", path, "--tokenize"], "--parallel")]:
            rc, out, err = run(["-m", MODEL] + args)
            check(rc == 1 and want in err and err.count("\n") == 1 and not out,
                  f"bad use {' '.join(args)}: exit {rc}, {err.strip()!r}")
        recovery(tmp)
        prefix_cache(tmp)
        prompt_cache(tmp)
    print(f"check_parallel: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
