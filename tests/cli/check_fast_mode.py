#!/usr/bin/env python3
"""Fast mode (the default: int8 activations on repacked Q4_0/Q4_1/Q8_0 weights) against the HF
transformers references of the default model, tests/refs/smollm2-gguf.json.

Usage: check_fast_mode.py [--json FILE] [--ref REF.json] [--max-rel R --max-mean-rel M]

--ref takes any reference of make_refs.py's SmolLM2 format (tests/refs/gguf-quants/*.json: the
requantized K-quant files, whose fast route is another kernel family) instead of the default one;
--max-rel / --max-mean-rel then set that file's measured bounds (regress_quants runs it per file).

For every reference case it runs ./llmgen twice, fast (default) and --exact, greedy, 64 steps, with
--dump-logits, and reports per prompt:
  - the first greedy step where fast mode's id differs from HF's (and from exact mode's);
  - the logit divergence: max over steps of max_i |fast_i - exact_i| / max_i |exact_i|, full rows,
    up to and including the first step where the two runs' ids differ (later rows come from different
    contexts). Exact mode equals HF's ids on all 64 steps (check_refs.py), so it stands in for HF's
    full rows, which the reference does not store; against HF's stored top-5 logits of the first 8
    steps the same ratio is reported too.

Gate (why these bounds). Measured on this model (2 threads), per prompt, AVX-512 and scalar tables:
  logits vs exact, same context: 3.4% to 7.7% of max |logit| (mean 4.7% AVX-512, 5.0% scalar). That is
  what int8 activations cost here: a block of 32 takes the step of its largest value (max/127), and
  this model's activations have outliers, so the other values of such a block keep few bits; 30 layers
  compound it. (Measured: with every layer matmul exact and only the Q8_0 lm_head on int8 input, 1%.)
  greedy ids equal to HF's: 0 to 64 steps, chaotic (the same prompt gives 0 steps on one table and 64 on
  the other: a near tie at HF's top-2 gap 0.08 flips either way).
So the gate is on the logits, which do not depend on luck: every prompt's max rel diff <= MAX_REL =
0.12 and their mean <= MAX_MEAN_REL = 0.08 (about 1.6x what was measured), plus a loose id rule: at
least MIN_PROMPTS = 6 of the 8 prompts keep their first MIN_EQUAL_STEPS = 6 greedy ids equal to HF's
(measured 7 of 8 with AVX-512, 7 of 8 with scalar). A wrong scale, nibble order, sign or min term moves
the logits by tens of percent and fails all three; a quantizer made coarser (e.g. truncation instead
of rounding) raises the mean. Exact mode must still equal HF's ids (else the comparison is void).
Exits 1 on failure. Standard library only.

Environment: LLMGEN (default ./llmgen), LLMGEN_CACHE (default .cache), LLMGEN_THREADS (default 2),
LLMGEN_KERNELS (force a kernel set).
"""
import array
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REF = os.path.join(REPO, "tests", "refs", "smollm2-gguf.json")
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
THREADS = os.environ.get("LLMGEN_THREADS", "2")
KERNELS = os.environ.get("LLMGEN_KERNELS")  # a kernel set to force (scalar, avx2, avx512); default: best
MIN_EQUAL_STEPS = 6
MIN_PROMPTS = 6
MAX_REL = 0.12
MAX_MEAN_REL = 0.08


def run(model, prompt_ids, n, vocab, exact):
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "logits.bin")
        cmd = [LLMGEN, "-m", model, "--prompt-ids", ",".join(map(str, prompt_ids)), "-n", str(n),
               "--ignore-eos", "--ids", "--dump-logits", dump, "-t", THREADS] + (["--exact"] if exact else []) \
            + (["--kernels", KERNELS] if KERNELS else [])
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        if p.returncode != 0:
            raise RuntimeError("exit %d: %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode()))
        ids = [int(x) for x in p.stdout.decode().strip().split("\n")[-1].strip(",").split(",")]
        a = array.array("f")
        with open(dump, "rb") as f:
            a.frombytes(f.read())
        if sys.byteorder != "little":
            a.byteswap()
        if len(ids) != n or len(a) != n * vocab:
            raise RuntimeError("%s: expected %d ids and %d logits" % (" ".join(cmd), n, n * vocab))
        return ids, [a[i * vocab:(i + 1) * vocab] for i in range(n)]


def first_diff(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    global MAX_REL, MAX_MEAN_REL
    out_json = arg("--json", None)
    ref_path = arg("--ref", REF)
    MAX_REL = float(arg("--max-rel", MAX_REL))
    MAX_MEAN_REL = float(arg("--max-mean-rel", MAX_MEAN_REL))
    with open(ref_path) as f:
        ref = json.load(f)
    model = os.path.join(CACHE, ref["model"]["cache"])
    vocab = ref["vocab_size"]
    failed, rows_out, rels, long_enough = 0, [], [], 0
    for case in ref["cases"]:
        want, n = case["ids"], len(case["ids"])
        fast_ids, fast = run(model, case["prompt_ids"], n, vocab, False)
        exact_ids, exact = run(model, case["prompt_ids"], n, vocab, True)
        d_hf, d_exact = first_diff(fast_ids, want), first_diff(fast_ids, exact_ids)
        upto = n if d_exact is None else d_exact + 1
        rel = max(max(abs(a - b) for a, b in zip(fast[i], exact[i])) / max(abs(x) for x in exact[i])
                  for i in range(upto))
        rel_hf = 0.0
        for i, top in enumerate(case.get("top5", [])):
            if d_hf is not None and i > d_hf:
                break
            rel_hf = max(rel_hf, max(abs(fast[i][t] - v) for t, v in top) / max(abs(v) for _, v in top))
        equal = n if d_hf is None else d_hf
        ok = rel <= MAX_REL and exact_ids == want
        failed += not ok
        rels.append(rel)
        long_enough += equal >= MIN_EQUAL_STEPS
        rows_out.append({"case": case["name"], "first_diff_vs_hf": d_hf, "first_diff_vs_exact": d_exact,
                         "max_rel_logit_diff_vs_exact": rel, "max_rel_logit_diff_vs_hf_top5": rel_hf,
                         "exact_equals_hf": exact_ids == want})
        print("%s  %-14s fast ids = HF's for %2d of %d steps (first diff %s, HF top-2 gap there %s); "
              "logits vs exact: max rel %.2e over %d steps; vs HF top-5: %.2e%s"
              % ("ok  " if ok else "FAIL", case["name"], equal, n, d_hf,
                 "%.3g" % case["gap"][d_hf] if d_hf is not None else "-", rel, upto, rel_hf,
                 "" if exact_ids == want else "  (exact mode differs from HF!)"))
        sys.stdout.flush()
    if out_json:
        with open(out_json, "w") as f:
            json.dump(rows_out, f, indent=1)
    mean = sum(rels) / len(rels)
    print("mean rel logit diff %.2e (bound %.2f); %d of %d prompts keep >= %d ids equal to HF's (bound %d)"
          % (mean, MAX_MEAN_REL, long_enough, len(rels), MIN_EQUAL_STEPS, MIN_PROMPTS))
    failed += mean > MAX_MEAN_REL
    failed += long_enough < MIN_PROMPTS
    print("check_fast_mode: %s (bounds: rel logit diff <= %.2f per prompt)"
          % ("all passed" if not failed else "FAILED", MAX_REL))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
