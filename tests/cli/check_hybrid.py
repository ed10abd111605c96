#!/usr/bin/env python3
"""Hybrid models' per-sequence states (Gated DeltaNet layers, LFM2's short convolutions): the same bytes
however a run is cut up (run by `make test`).

Usage: check_hybrid.py [NAME...]     (NAME filters the fixtures)

On the longest case (300 prompt ids, 32 greedy ids; check_refs.py compares them with HF's) of
tests/refs/tiny-qwen35-gdn-f32 and tests/refs/tiny-lfm2-f32, in --exact on the f32 directory and in fast
mode on its 8-bit MLX copy (llmgen quantize):

  threads       -t 1 and -t 2 give the same ids and logits bytes (--dump-logits)
  prompt cache  caches saved after 100 and 260 prompt tokens (the conv and recurrent states saved with
                the attention layers' KV cache) are reused by the full prompt: ids and logits bytes equal
                the uncached run; a cache file cut short is ignored with a one-line note
  batch         four requests through --batch (prefix cache on), --no-prefix-cache, --parallel 2 and
                --parallel 4: the same ids and logprobs; the prefix cache reuses a prefix that reaches the
                start of the cached sequence's last pass of several tokens (its states rebuilt from that
                pass's snapshot, kv_cache.h) and nothing shorter
  draft         --draft-lookup (speculation: passes of drafts, the rejected part taken back by restoring
                the states and running the accepted ids again) gives the ids of plain greedy decoding

  fast mode     the 8-bit copy, fast (int8 activations) vs --exact: max rel logit diff <= 0.15 up to the
                first differing id (the dense families' bound is 0.08; here the worst of 30 steps was
                0.072 with the AVX-512 kernels and 0.106 with AVX2, the median step 0.04: the recurrent
                state carries each step's rounding forward; the scalar kernels give 0)

Environment: LLMGEN (binary, default ./llmgen). Standard library only; exits 1 on any failure.
"""
import array
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_ring import batch_prefix_reuse  # noqa: E402  (the --batch prefix-cache check both run)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
REFS = os.path.join(REPO, "tests", "refs")
NAMES = ("tiny-qwen35-gdn-f32", "tiny-lfm2-f32")
MAX_REL_Q8 = 0.15  # int8 activations through a recurrent state (the docstring has the measurements)
failures = 0


def check(ok, what):
    global failures
    print(("ok    " if ok else "FAIL  ") + what)
    failures += not ok


def run(args, stdin=None):
    p = subprocess.run([LLMGEN] + args, input=stdin, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def gen(model, prompt, n, mode, tmp, threads=2, cache=None, extra=()):
    """ids, logits bytes, cached prompt tokens, stderr of one run."""
    dump = os.path.join(tmp, "logits.bin")
    if os.path.exists(dump):
        os.unlink(dump)
    args = ["-m", model, "--prompt-ids", ",".join(map(str, prompt)), "-n", str(n), "--ignore-eos", "--json",
            "-t", str(threads), "--split-all", "--dump-logits", dump] + mode + list(extra) + \
        (["--prompt-cache", cache] if cache else [])
    rc, out, err = run(args)
    if rc:
        raise RuntimeError("exit %d: %s" % (rc, err.strip()))
    j = json.loads(out)
    with open(dump, "rb") as f:
        return j["ids"], f.read(), j["timings"]["cached_prompt_tokens"], err


def check_model(label, model, prompt, want_ids, mode, tmp):
    n = len(want_ids) if want_ids else 32
    ids, logits, _, _ = gen(model, prompt, n, mode, tmp)
    if want_ids:
        check(ids == want_ids, "%s: %d greedy ids after %d prompt ids equal HF's" % (label, n, len(prompt)))
    ids1, logits1, _, _ = gen(model, prompt, n, mode, tmp, threads=1)
    check(ids1 == ids and logits1 == logits, "%s: -t 1 and -t 2: same ids and logits bytes" % label)

    for at in (100, 260):
        cache = os.path.join(tmp, "p%d.kv" % at)
        if os.path.exists(cache):
            os.unlink(cache)
        gen(model, prompt[:at], 1, mode, tmp, cache=cache)
        got, got_logits, cached, err = gen(model, prompt, n, mode, tmp, cache=cache)
        check(got == ids and got_logits == logits and cached == at and not err,
              "%s: --prompt-cache after %d tokens: reused %d, ids and logits bytes equal the uncached run"
              % (label, at, cached))
    cut = os.path.join(tmp, "cut.kv")
    with open(os.path.join(tmp, "p260.kv"), "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[:len(data) - 4096])
    got, got_logits, cached, err = gen(model, prompt, n, mode, tmp, cache=cut)
    check(got == ids and got_logits == logits and cached == 0 and err.count("\n") == 1,
          "%s: a prompt cache cut short is ignored with a one-line note (%r)" % (label, err.strip()))

    got, _, _, _ = gen(model, prompt, n, mode, tmp, extra=["--draft-lookup"])
    check(got == ids, "%s: --draft-lookup gives the greedy ids" % label)

    # the states can go back to the start of a sequence's last pass of several tokens (its prefill chunk
    # [256, 300) or [256, 263)): "260" reuses 260 of "full"'s 332 positions, "again" 260 of "260"'s, and
    # "100" nothing (100 is before that chunk: the prompt is recomputed)
    batch_prefix_reuse(run, check, label, model, mode, prompt, ids, n, 260, 100,
                       "prefix reuse from the last multi-token pass on")


def fast_vs_exact(name, model, prompt, n, vocab, tmp):
    """Fast mode's divergence on the 8-bit copy, gated like check_family_fast.py's Q8_0 files: max over
    the steps up to the first differing id of max |fast - exact| / max |exact| <= MAX_REL_Q8."""
    ids_e, raw_e, _, _ = gen(model, prompt, n, ["--exact"], tmp)
    ids_f, raw_f, _, _ = gen(model, prompt, n, [], tmp)
    e, f = array.array("f"), array.array("f")
    e.frombytes(raw_e)
    f.frombytes(raw_f)
    upto = next((i + 1 for i in range(n) if ids_e[i] != ids_f[i]), n)
    worst = 0.0
    for t in range(upto):
        re_, rf = e[t * vocab:(t + 1) * vocab], f[t * vocab:(t + 1) * vocab]
        worst = max(worst, max(abs(a - b) for a, b in zip(re_, rf)) / max(abs(a) for a in re_))
    same = sum(a == b for a, b in zip(ids_e, ids_f))
    check(worst <= MAX_REL_Q8, "%s q8: fast vs --exact: max rel logit diff %.2e (bound %g) over %d steps, %d of %d "
          "ids equal" % (name, worst, MAX_REL_Q8, upto, same, n))


def main():
    if not os.access(LLMGEN, os.X_OK):
        print("check_hybrid: %s is not built (make llmgen)" % LLMGEN)
        return 1
    only = set(sys.argv[1:])
    for name in NAMES:
        if only and name not in only:
            continue
        with open(os.path.join(REFS, name + ".json")) as f:
            ref = json.load(f)
        case = ref["cases"][-1]
        model = os.path.join(REPO, ref["model"]["repo"])
        with tempfile.TemporaryDirectory() as tmp:
            try:
                check_model(name, model, case["prompt_ids"], case["ids"], ["--exact"], tmp)
                q8 = os.path.join(tmp, "q8")
                rc, _, err = run(["quantize", model, q8, "--bits", "8", "--group-size", "32"])
                check(rc == 0, "%s: llmgen quantize --bits 8: exit %d %s" % (name, rc, err.strip()))
                check_model(name + " q8 fast", q8, case["prompt_ids"], None, [], tmp)
                fast_vs_exact(name, q8, case["prompt_ids"], len(case["ids"]), ref["vocab_size"], tmp)
            except (RuntimeError, ValueError, OSError, KeyError) as e:
                check(False, "%s: %s" % (name, e))
    print("check_hybrid: %s" % ("all passed" if not failures else "%d FAILED" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
