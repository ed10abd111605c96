#!/usr/bin/env python3
"""Fast mode (the default) on each model family, gated like the Llama checks (check_quant_fast.py).

For every family reference of tests/refs (made by tests/gen/make_family_refs.py) that names a Q8_0 GGUF
("gguf_q8_0": llama.cpp's convert_hf_to_gguf.py --outtype q8_0 of the fixture; one per family), with the
reference's prompt and 32 greedy steps:

1. Q8_0 file, fast vs --exact: max over steps (up to and including the first step where the two runs'
   ids differ) of max_i |fast_i - exact_i| / max_i |exact_i| <= MAX_REL_Q8 (LFM2: SHORT_CONV_TYPES) (int8 activations: a few
   percent of the largest logit on these random weights; a wrong scale, a wrong row order or a stage the
   fast path forgets moves the logits by tens of percent). Thread-count independence: the --dump-logits
   bytes are identical at -t 1, 2 and 3, in fast and in exact mode.
2. The f32 safetensors directory of the same fixture, fast vs HF's stored logits (F32 / BF16 weights keep
   f32 activations in fast mode; what differs is the f16 KV cache and the polynomial exp): max rel diff up
   to the first step where the ids differ from HF's <= MAX_REL_F32.

Bounds: the same measure on the Llama fixtures converted by the same converter to Q8_0
(tests/fixtures/tiny-{mha-f32,gqa-llama3-tied-f32,mqa-odd-tied-f32,gqa-llama3-bf16}; AVX-512 VNNI
machine, 2 threads, 2026-11-24): Q8_0 fast vs exact 2.6e-2 to 3.3e-2 of max |logit| (0 on
tiny-mqa-odd-tied, whose rows of 80 stay F32), bit-identical at 1 / 2 / 3 threads; f32 / bf16 directories
fast vs HF 7.0e-7 to 9.6e-7 (fast mode keeps f32 weights on the f32 path). MAX_REL_Q8 = 0.08 is about 2.4x
the worst Q8_0 case (check_quant_fast.py's rule); MAX_REL_F32 = 1e-4 is the exact-mode bound of
check_refs.py, 100x what was measured. A wrong scale, row order, bias, norm or rope stage in a family's
fast path moves the logits by tens of percent. Measured on the families once their forward pass landed (same
machine): Q8_0 fast vs exact 2.1e-2 (qwen2) to 3.5e-2 (smollm3), bit-identical at 1 / 2 / 3 threads;
directories fast vs HF 6.8e-7 to 9.7e-7.

For the mixture-of-experts fixtures (tests/gen/make_moe_refs.py) step 1's bound covers the steps before the
first differing id (see MOE_TYPES). A reference with "gguf_fast" instead (tiny-gptoss-mxfp4, make gptoss-refs)
runs step 1 on that file, whose MXFP4 experts take the int8 route (measured 6.2e-2 before the first of 9
equal steps, bit-identical at 1 / 2 / 3 threads); its directory holds the same MXFP4 blocks, so step 2 does
not apply.

Environment: LLMGEN (default ./llmgen). Exits 1 on failure. Standard library only.
"""
import array
import glob
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFS = os.path.join(REPO, "tests", "refs")
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
MAX_REL_Q8 = 0.08
MAX_REL_F32 = 1e-4
# Expert layers: where a token's k-th and (k+1)-th router scores lie within int8 noise, fast mode picks
# the other expert and that step's logits move by tens of percent (tiny-qwen3moe-f32, step 21: 0.28 after
# 21 steps at 1.4e-2 to 4.2e-2). For the MoE families the bound covers the steps before the first
# differing id, and the ids must agree for MOE_MIN_SAME steps. Measured (AVX-512 VNNI, 2 threads,
# 2026-12-02): equal ids for 21 (qwen3moe), 8 (qwen2moe), 7 (olmoe), 32 (mixtral, granitemoe) of 32 steps,
# max rel diff before them 1.2e-2 to 4.4e-2.
MOE_TYPES = ("qwen3_moe", "qwen2_moe", "mixtral", "olmoe", "granitemoe", "gpt_oss", "lfm2_moe")
MOE_MIN_SAME = 4
# LFM2's short conv multiplies three int8-rounded activations (y = C * conv(B * x), the in_proj's rows)
# before out_proj rounds y again: measured on tiny-lfm2-f32's Q8_0 (3 cases x 12 steps, AVX-512 VNNI,
# 2 threads, 2026-12-02) fast vs exact median 3.5e-2, max 8.4e-2 at one step (the next largest 7.4e-2);
# tiny-lfm2moe-f32 4.7e-2 (the MoE rule too: before the first differing id).
# Its bound is 0.12, 1.4x that worst step; a wrong scale or row order moves the logits by tens of percent.
SHORT_CONV_TYPES = ("lfm2", "lfm2_moe")
MAX_REL_Q8_SHORT_CONV = 0.12


def run(model, prompt, steps, vocab, threads, exact, tmp):
    dump = os.path.join(tmp, "l.bin")
    cmd = [LLMGEN, "-m", model, "--prompt-ids", ",".join(map(str, prompt)), "-n", str(steps), "--ignore-eos",
           "--ids", "--dump-logits", dump, "-t", str(threads), "--split-all"] + (["--exact"] if exact else [])
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("exit %d: %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode().strip()))
    ids = [int(x) for x in p.stdout.decode().strip().split("\n")[-1].strip(",").split(",")]
    with open(dump, "rb") as f:
        raw = f.read()
    a = array.array("f")
    a.frombytes(raw)
    if sys.byteorder != "little":
        a.byteswap()
    if len(ids) != steps or len(a) != steps * vocab:
        raise RuntimeError("%s: expected %d ids and %d logits" % (" ".join(cmd), steps, steps * vocab))
    return ids, [a[i * vocab:(i + 1) * vocab] for i in range(steps)], raw


def rel_upto(ids_a, rows_a, ids_b, rows_b, before=False):
    """max rel logit diff (vs rows_b's max |logit|) up to and including the first differing id (before:
    up to the step before it)."""
    d = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y), None)
    upto = len(rows_b) if d is None else max(1, d + (0 if before else 1))
    rel = max(max(abs(x - y) for x, y in zip(rows_a[i], rows_b[i])) / max(abs(y) for y in rows_b[i])
              for i in range(upto))
    return rel, (len(ids_b) if d is None else d)


def load_rows(path, rows, vocab):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    return [a[i * vocab:(i + 1) * vocab] for i in range(rows)]


def check(name, ref, tmp):
    case = ref["cases"][0]
    prompt, steps, vocab = case["prompt_ids"], len(case["ids"]), ref["vocab_size"]
    ok = True
    # gguf_fast: a file whose own type takes the int8 route (MXFP4 experts, tests/gen/make_gptoss_refs.py); its
    # directory holds the same blocks, so fast mode is not f32 there either and step 2 does not apply
    kind = "Q8_0" if "gguf_q8_0" in ref else "MXFP4"
    q8 = os.path.join(REPO, ref["gguf_q8_0" if kind == "Q8_0" else "gguf_fast"]["file"])
    f_ids, fast, f_raw = run(q8, prompt, steps, vocab, 2, False, tmp)
    e_ids, exact, e_raw = run(q8, prompt, steps, vocab, 2, True, tmp)
    moe = ref["source"].get("model_type") in MOE_TYPES
    rel, same = rel_upto(f_ids, fast, e_ids, exact, before=moe)
    if moe and same < MOE_MIN_SAME:
        print("FAIL  %-34s %s fast vs exact: ids equal for only %d steps (at least %d expected)"
              % (name, kind, same, MOE_MIN_SAME))
        ok = False
    stable = all(run(q8, prompt, steps, vocab, t, ex, tmp)[2] == (e_raw if ex else f_raw)
                 for t in (1, 3) for ex in (False, True))
    bound = MAX_REL_Q8_SHORT_CONV if ref["source"].get("model_type") in SHORT_CONV_TYPES else MAX_REL_Q8
    good = rel <= bound and stable
    ok &= good
    print("%s  %-34s %s fast vs exact: max rel logit diff %.2e (bound %.2f), ids equal for %d of %d steps; "
          "bit-identical at -t 1 / 2 / 3: %s" % ("ok  " if good else "FAIL", name, kind, rel, bound, same, steps,
                                                 "yes" if stable else "NO"))
    if kind != "Q8_0":
        return ok
    lg = case.get("logits", ref.get("logits"))  # per case (hybrid refs) or per reference
    hf = load_rows(os.path.join(REFS, lg["file"]), lg["rows"], vocab)
    hf = hf[case.get("logits_row0", 0):][:steps]  # a file of several cases' rows (make_moe_refs.py)
    d_ids, dense, _ = run(os.path.join(REPO, ref["model"]["repo"]), prompt, steps, vocab, 2, False, tmp)
    rel, same = rel_upto(d_ids, dense, case["ids"], hf)
    good = rel <= MAX_REL_F32
    ok &= good
    print("%s  %-34s %s directory fast vs HF: max rel logit diff %.2e (bound %.0e), ids equal for %d of %d"
          % ("ok  " if good else "FAIL", name, "bf16" if "bf16" in name else "f32", rel, MAX_REL_F32, same, steps))
    return ok


def main():
    refs = []
    for path in sorted(glob.glob(os.path.join(REFS, "tiny-*.json"))):
        with open(path) as f:
            ref = json.load(f)
        if "gguf_q8_0" in ref or "gguf_fast" in ref:
            refs.append((os.path.basename(path)[:-5], ref))
    if len(refs) < 6:
        print("check_family_fast: expected a Q8_0 GGUF for each of the 6 families, found %d" % len(refs))
        return 1
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, ref in refs:
            try:
                failed += not check(name, ref, tmp)
            except (RuntimeError, OSError, ValueError) as e:
                print("FAIL  %s: %s" % (name, e))
                failed += 1
            sys.stdout.flush()
    print("check_family_fast: %s" % ("all passed" if not failed else "%d FAILED" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
