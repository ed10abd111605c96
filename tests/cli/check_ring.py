#!/usr/bin/env python3
"""Sliding-window layers' ring buffer: results through the wrap (run by `make regress`).

Usage: check_ring.py

llmgen keeps a sliding-window layer's KV cache in a ring of window + 190 positions rounded up to 64
(320 for the fixtures here) once the context is longer. The references of tests/refs/tiny-*-ring-f32
(made by tests/gen/make_ring_refs.py, a 600-token prompt and 48 greedy steps, context 1024) cross the
wrap in prefill (the chunk [256, 384) writes slots 256..319 then 0..63) and in decode (position 640).
check_refs.py compares their ids and logits with HF's; this script checks, on each of them:

  ring          --stats reports a ring of 320 positions, and a smaller KV cache than with every
                layer kept whole would need
  threads       -t 1 and -t 2 give the same ids and the same logits bytes (--dump-logits)
  prompt cache  a cache saved after 200 prompt tokens (ring not yet full) and one saved after 500
                (wrapped: the whole ring is saved) are each reused by the full prompt, whose
                continuation chunks run across the wrap; ids and logits bytes equal the uncached run;
                a cache whose fingerprint names another ring (checksum fixed up) is ignored with a note
  batch         four requests through --batch (prefix cache on), --no-prefix-cache, --parallel 2 and
                --parallel 4: the same ids and logprobs; the sequential run reuses 500 tokens where the
                window is intact and none where the ring has overwritten it (a 200-token prefix after
                647 positions: cached_prompt_tokens 0, the prompt recomputed)
  fast mode     the same thread, prompt-cache and batch equalities on an 8-bit MLX copy (llmgen
                quantize) of the gemma3 fixture: a bf16 cache and the fast kernels

Environment: LLMGEN (binary, default ./llmgen). Standard library only; exits 1 on any failure.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
REFS = os.path.join(REPO, "tests", "refs")
NAMES = ["tiny-gemma3-ring-f32", "tiny-mistral-ring-f32"]
RING = 320

failures = 0


def check(ok, what):
    global failures
    print(("ok    " if ok else "FAIL  ") + what)
    failures += not ok


def run(args, stdin=None):
    p = subprocess.run([LLMGEN] + args, input=stdin, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def gen(model, prompt, n, mode, tmp, threads=2, cache=None):
    """ids, logits bytes, cached prompt tokens, stderr of one run."""
    dump = os.path.join(tmp, "logits.bin")
    if os.path.exists(dump):
        os.unlink(dump)
    args = ["-m", model, "--prompt-ids", ",".join(map(str, prompt)), "-n", str(n), "--ignore-eos", "--json",
            "-t", str(threads), "--split-all", "--dump-logits", dump] + mode + (["--prompt-cache", cache] if cache else [])
    rc, out, err = run(args)
    if rc:
        raise RuntimeError("exit %d: %s" % (rc, err.strip()))
    j = json.loads(out)
    with open(dump, "rb") as f:
        return j["ids"], f.read(), j["timings"]["cached_prompt_tokens"], err


def fnv1a(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def other_ring(path, out):
    """The prompt-cache file at path with '|ring 320' of its fingerprint made '|ring 384', checksum fixed."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    body = bytes(data[:-8]).replace(b"|ring %d" % RING, b"|ring %d" % (RING + 64), 1)
    if body == bytes(data[:-8]):
        raise RuntimeError("no '|ring %d' in the fingerprint of %s" % (RING, path))
    with open(out, "wb") as f:
        f.write(body + fnv1a(body).to_bytes(8, "little"))


def batch_prefix_reuse(run, check, label, model, mode, prompt, ids, n, kept, lost, what):
    """--batch of four requests (the whole prompt, its first `kept` ids + 3, the whole prompt again, its first
    `lost` ids + 1) with the prefix cache, without it, and at --parallel 2 and 4: the same ids and logprobs in
    each, the whole prompt's ids equal to ids, and the cached prompt tokens {0, kept, kept, 0}: `what` says why
    the cache can reuse `kept` and not `lost`. run and check are the calling script's."""
    reqs = [{"id": "full", "prompt_ids": prompt, "max_tokens": n},
            {"id": str(kept), "prompt_ids": prompt[:kept] + [5, 6, 7], "max_tokens": 8},
            {"id": "again", "prompt_ids": prompt, "max_tokens": n},
            {"id": str(lost), "prompt_ids": prompt[:lost] + [9], "max_tokens": 8}]
    text = "".join(json.dumps(dict(r, ignore_eos=True, logprobs=0)) + "\n" for r in reqs)
    runs = {}
    for name, extra in [("cached", []), ("uncached", ["--no-prefix-cache"]), ("parallel 2", ["--parallel", "2"]),
                        ("parallel 4", ["--parallel", "4"])]:
        rc, out, err = run(["-m", model, "--batch", "-", "-t", "2"] + mode + extra, stdin=text)
        rows = [json.loads(line) for line in out.splitlines()] if rc == 0 else []
        runs[name] = rows
        check(rc == 0 and len(rows) == 4, "%s: --batch %s: exit %d, %d results" % (label, name, rc, len(rows)))
    strip = lambda rows: {r["id"]: {k: v for k, v in r.items() if k not in ("timings", "line")} for r in rows}
    same = all(strip(r) == strip(runs["cached"]) for r in runs.values())
    full = [r for r in runs["cached"] if r["id"] == "full"]
    check(same and full and full[0]["ids"] == ids,
          "%s: --batch with the prefix cache, without it, --parallel 2 and 4: same ids and logprobs" % label)
    cached = {r["id"]: r["timings"]["cached_prompt_tokens"] for r in runs["cached"]}
    check(cached == {"full": 0, str(kept): kept, "again": kept, str(lost): 0},
          "%s: %s: cached prompt tokens %s" % (label, what, cached))


def check_model(label, model, prompt, want_ids, mode, tmp):
    n = len(want_ids) if want_ids else 48
    rc, _, err = run(["-m", model, "--prompt-ids", "1,2,3", "-n", "1", "--ids", "--stats", "-t", "2"] + mode)
    m = re.search(r"KV cache ([0-9.]+) MiB \(ring (\d+)\)", err)
    check(rc == 0 and m and int(m.group(2)) == RING, "%s: --stats reports a ring of %s positions (want %d)"
          % (label, m.group(2) if m else "?", RING))

    ids, logits, _, _ = gen(model, prompt, n, mode, tmp)
    if want_ids:
        check(ids == want_ids, "%s: %d greedy ids through the wrap equal HF's" % (label, n))
    ids1, logits1, _, _ = gen(model, prompt, n, mode, tmp, threads=1)
    check(ids1 == ids and logits1 == logits, "%s: -t 1 and -t 2: same ids and logits bytes" % label)

    for at in (200, 500):
        cache = os.path.join(tmp, "p%d.kv" % at)
        if os.path.exists(cache):
            os.unlink(cache)
        gen(model, prompt[:at], 1, mode, tmp, cache=cache)
        got, got_logits, cached, err = gen(model, prompt, n, mode, tmp, cache=cache)
        check(got == ids and got_logits == logits and cached == at and not err,
              "%s: --prompt-cache after %d tokens%s: reused %d, ids and logits bytes equal the uncached run"
              % (label, at, " (ring wrapped)" if at > RING else "", cached))
    bad = os.path.join(tmp, "ring.kv")
    other_ring(os.path.join(tmp, "p500.kv"), bad)
    got, got_logits, cached, err = gen(model, prompt, n, mode, tmp, cache=bad)
    check(got == ids and got_logits == logits and cached == 0 and "cache layout" in err and err.count("\n") == 1,
          "%s: a prompt cache of another ring layout is ignored with a note (%r)" % (label, err.strip()))

    # after "full" (positions up to 647 written): 500's window (from 384) is intact, 200's (from 128)
    # was overwritten by 448 .. 647 (slot = position % 320)
    batch_prefix_reuse(run, check, label, model, mode, prompt, ids, n, 500, 200,
                       "prefix reuse where the window is intact only")


def main():
    if not os.access(LLMGEN, os.X_OK):
        print("check_ring: %s is not built (make llmgen)" % LLMGEN)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for name in NAMES:
            with open(os.path.join(REFS, name + ".json")) as f:
                ref = json.load(f)
            case = ref["cases"][0]
            model = os.path.join(REPO, ref["model"]["repo"])
            try:
                check_model(name, model, case["prompt_ids"], case["ids"], ["--exact"], tmp)
                if "gemma3" in name:
                    q8 = os.path.join(tmp, "q8")
                    rc, _, err = run(["quantize", model, q8, "--bits", "8", "--group-size", "32"])
                    check(rc == 0, "%s: llmgen quantize --bits 8: exit %d %s" % (name, rc, err.strip()))
                    check_model(name + " q8 fast", q8, case["prompt_ids"], None, [], tmp)
            except (RuntimeError, ValueError, OSError, KeyError) as e:
                check(False, "%s: %s" % (name, e))
    print("check_ring: %s" % ("all passed" if not failures else "%d FAILED" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
