#!/usr/bin/env python3
"""verify's teacher forcing (the default) prints the same lines and exits the same as --no-teacher-forcing.

Every stored greedy reference of tests/refs (each file with prompt ids and expected ids: the tiny fixtures,
their GGUF conversions, the MLX fixtures, the SmolLM2 and 1B-config references, the quantized GGUF files,
the family references, tests/refs/quality/verify-*.jsonl) is written as a verify file, plus one of its longest
case and the case after it, with one expected id changed in the middle (a FAIL line at that step), and run by `llmgen verify` both
ways, in --exact mode and, for models with a fast route (quantized weights), in the default fast mode (the
default model's copy with a changed id in --exact only), at 2 threads. A reference whose model file is not in .cache (made by targets outside make test) is listed as
absent; so are, unless LLMGEN_VERIFY_TF_ALL=1, those on the large models of .cache other than the default
model (the HF-directory SmolLM2 and 1B-config fixtures, the family and quantized files: their step-by-step
runs take minutes, and their code paths are the tiny fixtures'), and the default model's --exact runs
of the unchanged files beyond their first EXACT_CASES cases (fast mode runs every case). Also prints the
time of both ways.

Environment: LLMGEN (binary, default ./llmgen), LLMGEN_CACHE (default .cache). Exits 1 on any failure.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFS = os.path.join(REPO, "tests", "refs")
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
DEFAULT = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
ALL = os.environ.get("LLMGEN_VERIFY_TF_ALL") == "1"
EXACT_CASES = 4


def model_path(m):
    return os.path.join(CACHE, m["cache"]) if "cache" in m else os.path.join(REPO, m["repo"])


def references():
    """(label, model path, [cases]) with cases as verify lines (dicts)."""
    out = []
    for path in sorted(glob.glob(os.path.join(REFS, "**", "*.json"), recursive=True)):
        try:
            with open(path) as f:
                d = json.load(f)
        except ValueError:
            continue
        if not isinstance(d, dict) or not isinstance(d.get("model"), dict):
            continue
        cases = d.get("cases") or ([{"name": "case", "prompt_ids": d["prompt_ids"], "ids": d["ids"]}]
                                   if "prompt_ids" in d and "ids" in d else [])
        lines = []
        for c in cases:
            if not c.get("prompt_ids") or not c.get("ids"):
                continue
            line = {"id": c["name"], "prompt_ids": c["prompt_ids"], "expected_ids": c["ids"]}
            if c.get("gap") and len(c["gap"]) == len(c["ids"]):
                line["top2_gap"] = c["gap"]
            lines.append(line)
        if not lines:
            continue
        label = os.path.relpath(path, REFS)
        out.append((label, model_path(d["model"]), lines))
        g = d.get("gguf")
        if isinstance(g, dict) and g.get("file"):
            out.append((label + " [gguf]", os.path.join(REPO, g["file"]), lines))
    for path in sorted(glob.glob(os.path.join(REFS, "quality", "verify-*.jsonl"))):
        with open(path) as f:
            lines = [json.loads(x) for x in f if x.strip()]
        for c in lines:  # relative to the file's directory, as verify reads them
            if "model" in c:
                c["model"] = os.path.normpath(os.path.join(os.path.dirname(path), c["model"]))
        named = all("model" in c for c in lines)
        out.append((os.path.relpath(path, REFS), None if named else DEFAULT, lines))
    return out


def exact_only(model):
    """f32 and bf16 weights have no fast route: fast mode runs them as --exact does."""
    return model is not None and ("f32" in os.path.basename(model.rstrip("/")) or "bf16" in model
                                  or os.path.basename(model.rstrip("/")).startswith(("smollm2-hf", "llama-1b")))


def run(args):
    t = time.time()
    p = subprocess.run([LLMGEN, "verify"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
    return p.returncode, p.stdout.decode(), p.stderr.decode(), time.time() - t


def main():
    failures, absent, t_tf, t_step, n_files = [], [], 0.0, 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for label, model, cases in references():
            if model is not None and not os.path.exists(model):
                absent.append(label)
                continue
            if not ALL and model is not None and model.startswith(CACHE) and model != DEFAULT:
                absent.append(label + " (not run without LLMGEN_VERIFY_TF_ALL=1)")
                continue
            files = [os.path.join(tmp, "refs.jsonl")]
            with open(files[0], "w") as f:
                f.writelines(json.dumps(c) + "\n" for c in cases)
            # one expected id changed half-way through the longest case; the copy holds that case and
            # the case after it (the lines of the others are those of the unchanged file)
            i = max(range(len(cases)), key=lambda k: len(cases[k]["expected_ids"]))
            bad = [dict(c) for c in cases[i:i + 2]]
            i = 0
            k = len(bad[i]["expected_ids"]) // 2
            bad[i]["expected_ids"] = list(bad[i]["expected_ids"])
            bad[i]["expected_ids"][k] = (bad[i]["expected_ids"][k] + 1) % 256
            p = os.path.join(tmp, "changed.jsonl")
            with open(p, "w") as f:
                f.writelines(json.dumps(c) + "\n" for c in bad)
            files.append(p)
            # the default model's --exact runs (its slowest) take the first EXACT_CASES cases of the
            # unchanged file; fast mode takes them all
            short = os.path.join(tmp, "exact.jsonl")
            with open(short, "w") as f:
                f.writelines(json.dumps(c) + "\n" for c in (cases if ALL or model not in (None, DEFAULT)
                                                             else cases[:EXACT_CASES]))
            base = ["-t", "2", "--split-all"] + (["-m", model] if model else [])
            modes = [["--exact"]] + ([] if exact_only(model) else [[]])
            for f in files:
                for mode in modes if f == files[0] or model is None or "models" not in model else modes[:1]:
                    g = short if f == files[0] and mode == ["--exact"] else f
                    rc1, out1, err1, dt1 = run([g] + base + mode)
                    rc2, out2, err2, dt2 = run([g] + base + mode + ["--no-teacher-forcing"])
                    t_tf += dt1
                    t_step += dt2
                    n_files += 1
                    what = "%s%s %s" % (label, " (changed id)" if f.endswith("changed.jsonl") else "",
                                        " ".join(mode) or "fast")
                    if rc1 != rc2 or out1 != out2 or rc1 not in (0, 1) or not out1:
                        failures.append(what)
                        print("FAIL %s: exit %d / %d\n--- teacher forcing:\n%s%s--- step by step:\n%s%s" % (
                            what, rc1, rc2, out1, err1, out2, err2))
                    else:
                        print("ok %s: %d lines, exit %d, the same both ways (%.2f s / %.2f s)" % (
                            what, out1.count("\n"), rc1, dt1, dt2))
    for a in absent:
        print("absent: %s%s" % (a, "" if a.endswith(")") else " (its model file is not in %s)" % CACHE))
    print("%d verify runs each way: teacher forcing %.1f s, step by step %.1f s" % (n_files, t_tf, t_step))
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
