#!/usr/bin/env python3
"""llmgen --exact on the llama-quantize files of .cache/quant against HF transformers (make regress-quants).

Usage: regress_quants.py [NAME_SUBSTRING...]        e.g. regress_quants.py Q4_K_M

Not a check_*.py on purpose: `make test` (tests/cli/run_all.py) must not need llama.cpp, and these files
are made by `make quant-models` with the peer's llama-quantize. The references are
tests/refs/gguf-quants/*.json (make quant-model-refs); each names its file in the cache and records the
file's sha256, which must match (a file requantized by another llama.cpp is another test input).

Rules (those of check_refs.py, whose runner and helpers this reuses):
  SmolLM2-135M-Instruct.*  trained weights: every greedy id equal to HF's, 64 of 64, on every prompt.
                           The logit error is measured on HF's top-5 ids of every step up to the first
                           divergence (absolute, and relative to the step's largest top-5 |logit|).
  llama-1b-random.*        random weights: logits within 1e-4 of the step's max |HF logit| (HF's top-64
                           ids and the max |logit| itself), ids equal wherever HF's top-2 gap > 1e-3;
                           after a divergence at a smaller gap the contexts differ, so later steps are
                           not compared (and said so).
Prints one block per file and a summary table (file, tensor types, ids equal per prompt, max logit
error). Exits 1 if any file fails or is missing. Standard library only.
"""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_refs as C  # noqa: E402

QREFS = os.path.join(C.REFS, "gguf-quants")


def topk_err(row, top):
    """(max |llmgen - HF| over HF's top-k ids, the same divided by max |HF top-k logit|)."""
    a = max(abs(row[t] - v) for t, v in top)
    return a, a / max(abs(v) for _, v in top)


def check_smollm2(case, ids, rows, res):
    want = case["ids"]
    same = sum(a == b for a, b in zip(ids, want))
    d = C.first_diff(ids, want)
    upto = len(want) if d is None else d + 1  # the logits of step d still come from the same context
    errs = [topk_err(rows[i], case["top5"][i]) for i in range(upto)]
    worst = max(range(upto), key=lambda i: errs[i][1])
    if d is not None:
        res.fail("%d/%d ids equal; first difference at step %d: llmgen %d, HF %d (HF top-2 gap %.3g)\n"
                 "          HF     %s\n          llmgen %s" % (same, len(want), d, ids[d], want[d],
                                                                case["gap"][d], want, ids))
    C.check_rows_match_ids(ids, rows, C.SMOL_ARGMAX_ROWS, res)
    res.info("%d/%d ids equal; top-5 logits over %d steps: max abs err %.2e, rel %.2e (step %d)"
             % (same, len(want), upto, errs[worst][0], errs[worst][1], worst))
    return "%d/%d" % (same, len(want)), errs[worst][1], d, case["gap"][d] if d is not None else None


def check_1b(ref, case, ids, rows, res):
    want, gaps = case["ids"], case["gap"]
    topk = case["top%d" % ref["settings"]["topk"]]
    d = C.first_diff(ids, want)
    C.check_rows_match_ids(ids, rows, len(ids), res)
    upto = len(want) if d is None else d + 1
    errs = []
    for i in range(upto):
        scale = case["max_abs_logit"][i]
        e = max(abs(rows[i][t] - v) for t, v in topk[i]) / scale
        mx = max(abs(x) for x in rows[i])
        errs.append(max(e, abs(mx - scale) / scale))
    worst = max(range(upto), key=lambda i: errs[i])
    msg = "logits over %d steps: max rel err %.2e at step %d (bound %.0e)" % (upto, errs[worst], worst, C.REL_1B)
    if errs[worst] > C.REL_1B:
        res.fail(msg)
    else:
        res.info(msg)
    if d is None:
        res.info("%d/%d greedy ids equal (min HF top-2 gap %.3g)" % (len(want), len(want), min(gaps)))
        ids_txt = "%d/%d" % (len(want), len(want))
    elif gaps[d] > C.GAP_1B:
        res.fail("ids differ at step %d where HF's top-2 gap is %.3g > %.0e: llmgen %d, HF %d\n"
                 "          HF     %s\n          llmgen %s" % (d, gaps[d], C.GAP_1B, ids[d], want[d], want, ids))
        ids_txt = "%d/%d" % (d, len(want))
    else:
        res.info("ids equal up to step %d; there llmgen %d, HF %d at HF top-2 gap %.3g <= %.0e (allowed); "
                 "later steps not compared" % (d, ids[d], want[d], gaps[d], C.GAP_1B))
        ids_txt = "%d/%d (tie at %d)" % (d, len(want), d)
    return ids_txt, errs[worst], d, gaps[d] if d is not None else None


def main():
    wanted = sys.argv[1:]
    refs = sorted(glob.glob(os.path.join(QREFS, "*.json")))
    if wanted:
        refs = [r for r in refs if any(w in os.path.basename(r) for w in wanted)]
    if not refs:
        print("regress_quants: no reference in %s matched" % QREFS)
        return 1
    if not os.access(C.LLMGEN, os.X_OK):
        print("regress_quants: %s is not built (make llmgen)" % C.LLMGEN)
        return 1
    failed, table = 0, []
    for path in refs:
        with open(path) as f:
            ref = json.load(f)
        name = os.path.basename(path)[:-5]
        model = C.model_path(ref)
        census = " ".join("%s %d" % kv for kv in ref["source"]["census"].items())
        print("== %s  [%s]" % (name, census))
        if not os.path.exists(model):
            print("FAIL  %s is missing (make quant-models)" % model)
            failed += 1
            table.append((name, census, ["missing"], None))
            continue
        sha = C.sha256_file(model)
        if sha != ref["source"]["gguf_sha256"]:
            print("FAIL  %s has sha256 %s, the reference was made from %s (regenerate with make "
                  "quant-model-refs)" % (model, sha, ref["source"]["gguf_sha256"]))
            failed += 1
            table.append((name, census, ["other file"], None))
            continue
        per_prompt, worst = [], 0.0
        for case in ref["cases"]:
            res = C.Result("%s/%s" % (name, case["name"]))
            try:
                ids, rows, dt = C.run_llmgen(model, case["prompt_ids"], len(case["ids"]), ref["vocab_size"])
                res.label += " (%.1f s)" % dt
                if name.startswith("llama-1b"):
                    txt, err, d, gap = check_1b(ref, case, ids, rows, res)
                else:
                    txt, err, d, gap = check_smollm2(case, ids, rows, res)
                per_prompt.append(txt if d is None else "%s (step %d, gap %.2g)" % (txt, d, gap))
                worst = max(worst, err)
            except (RuntimeError, ValueError, OSError) as e:
                res.fail(str(e))
                per_prompt.append("error")
            res.show()
            failed += not res.ok
        table.append((name, census, per_prompt, worst))
    print("\n| file | tensor types | ids equal per prompt | max rel logit err |")
    print("|---|---|---|---|")
    for name, census, per_prompt, worst in table:
        print("| %s | %s | %s | %s |" % (name, census, ", ".join(per_prompt),
                                       "-" if worst is None else "%.2e" % worst))
    print("regress_quants: %s" % ("all passed" if not failed else "%d case(s) FAILED" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
