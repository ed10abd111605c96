#!/usr/bin/env python3
"""llmgen --exact on the random-weight checkpoints with the exact Qwen3-0.6B, Qwen2.5-0.5B and
Gemma-3-1B configs against HF transformers (make regress-families).

Usage: regress_families.py [NAME...]        e.g. regress_families.py gemma3-1b-random

Not a check_*.py on purpose: `make test` must not need these 4.2 GB of checkpoints (`make
family-models` builds them into .cache/families/, not .cache/fixtures/, whose every model
check_readers.py reads). The references are tests/refs/families/*.json
(`make family-model-refs`, tests/gen/make_family_model_refs.py); each records the content sha256 of the weights,
which `make family-models` verifies (a directory without its .stamp is refused).

Rule: check_refs.py's for llama-1b-random (the "random-weight rule"): logits within 1e-4 of the
step's max |HF logit| (full rows where stored, HF's top-64 ids and the max |logit| elsewhere), ids
equal wherever HF's top-2 gap > 1e-3; after a divergence at a smaller gap the contexts differ, so
later steps are not compared (and said so). Gemma-3-1B has a second case whose 600-id prompt is
longer than the 512-token window of its sliding-window layers. gemma3-270m-gguf.json is Gemma 3
270M as downloaded (trained weights, Q4_K_M): check_refs.py's SmolLM2 rule, every greedy id equal.

Environment as check_refs.py (LLMGEN, LLMGEN_CACHE, LLMGEN_THREADS). Exits 1 on any failure.
Standard library only.
"""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_refs as C  # noqa: E402

FREFS = os.path.join(C.REFS, "families")


def check_case(ref, case, ids, rows, res):
    """check_refs.check_1b's rule; full logits rows only for the case they were stored for."""
    want, gaps = case["ids"], case["gap"]
    topk = case["top%d" % ref["settings"]["topk"]]
    full = []
    if ref["logits"].get("case", case["name"]) == case["name"]:
        full = C.load_f32(os.path.join(C.REFS, ref["logits"]["file"]), ref["logits"]["rows"], ref["vocab_size"])
    d = C.first_diff(ids, want)
    C.check_rows_match_ids(ids, rows, len(ids), res)
    compared = len(want) if d is None else d + 1  # logits of step d are still from the same context
    errs = []
    for i in range(compared):
        scale = case["max_abs_logit"][i]
        if i < len(full):
            e = C.rel_err_full(rows[i], full[i])
        else:
            e = max(abs(rows[i][t] - v) for t, v in topk[i]) / scale
        mx = max(abs(x) for x in rows[i])
        errs.append(max(e, abs(mx - scale) / scale))
    worst = max(range(len(errs)), key=lambda i: errs[i])
    msg = ("logits over %d steps: max rel err %.2e at step %d (bound %.0e%s)"
           % (compared, errs[worst], worst, C.REL_1B,
              "; HF's own f32-vs-f64 noise %.1e" % max(case["f64_rel_err"]) if "f64_rel_err" in case else ""))
    if errs[worst] > C.REL_1B:
        res.fail(msg)
    else:
        res.info(msg)
    if d is None:
        res.info("%d/%d greedy ids equal (min HF top-2 gap %.3g)" % (len(want), len(want), min(gaps)))
    elif gaps[d] > C.GAP_1B:
        res.fail("ids differ at step %d where HF's top-2 gap is %.3g > %.0e: llmgen %d, HF %d\n"
                 "          HF     %s\n          llmgen %s" % (d, gaps[d], C.GAP_1B, ids[d], want[d], want, ids))
    else:
        res.info("ids equal up to step %d; there llmgen %d, HF %d at HF top-2 gap %.3g <= %.0e (allowed); "
                 "later steps not compared" % (d, ids[d], want[d], gaps[d], C.GAP_1B))


def main():
    names = sys.argv[1:]
    refs = sorted(p for p in glob.glob(os.path.join(FREFS, "*.json")) if not p.endswith("fixtures.json"))
    if names:
        refs = [r for r in refs if os.path.basename(r)[:-5] in names]
    if not refs:
        print("regress_families: no references matched in %s" % os.path.relpath(FREFS, C.REPO))
        return 1
    if not os.access(C.LLMGEN, os.X_OK):
        print("regress_families: %s is not built (make llmgen)" % C.LLMGEN)
        return 1
    failed = 0
    for path in refs:
        name = os.path.basename(path)[:-5]
        with open(path) as f:
            ref = json.load(f)
        model = C.model_path(ref)
        want_sha = ref.get("source", {}).get("gguf_sha256")
        if want_sha:  # a downloaded GGUF: exactly the file the reference was made from
            res = C.Result(name)
            if not os.path.exists(model):
                res.fail("%s is missing (make gemma3-vocab)" % model)
            elif C.sha256_file(model) != want_sha:
                res.fail("%s is not the file the reference was made from (sha256 %s)" % (model, want_sha))
            if not res.ok:
                res.show()
                failed += 1
                continue
        elif not os.path.exists(os.path.join(model, ".stamp")):
            res = C.Result(name)
            res.fail("%s is not built and verified (run make family-models)" % model)
            res.show()
            failed += 1
            continue
        for case in ref["cases"]:
            res = C.Result("%s/%s" % (name, case["name"]))
            try:
                ids, rows, dt = C.run_llmgen(model, case["prompt_ids"], len(case["ids"]), ref["vocab_size"])
                res.label += " (%.1f s)" % dt
                if ref["settings"].get("rule", "").startswith("trained"):
                    C.check_smollm2(ref, case, ids, rows, res)  # every id equal
                else:
                    check_case(ref, case, ids, rows, res)
            except (RuntimeError, ValueError, OSError) as e:
                res.fail(str(e))
            res.show()
            failed += not res.ok
    print("regress_families: %s" % ("all passed" if not failed else "%d case(s) FAILED" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
