#!/usr/bin/env python3
"""Speculative decoding and teacher-forced verify: what they gain, measured on this machine, same run.

Usage: python3 tests/bench/bench_spec.py [CACHE]     (make bench-spec, and the end of make bench; stdlib only)

Environment: BENCH_SPEC_REPS (rounds, default 3), BENCH_THREADS_SPEC (threads, default 2),
BENCH_SPEC_PARTS (default verify,lookup,model: which of the three parts below run; a subset writes
spec-partial.json), BENCH_LLMGEN (the binary, default ./llmgen).

Every comparison runs its two sides one after the other, alternating which goes first, for
BENCH_SPEC_REPS rounds, and reports medians: other work on a shared machine then hits both alike.
  1. verify: the default model's stored references (tests/refs/smollm2-gguf.json and
     tests/refs/quality/verify-smollm2.jsonl, 12 cases, 704 checked tokens), `llmgen verify` with
     teacher forcing (the default) against --no-teacher-forcing, --exact and fast mode: wall time of the
     command (model load included), and the lines must be the same. Targets: >= 2.5x (--exact), >= 3x.
  2. --draft-lookup on the default model: 20 copy-heavy chat prompts (repeat or edit a text, quote from
     it, change one thing in code) and 20 free ones (no text to copy), one --batch run each (sequential,
     greedy, up to 160 tokens): generated tokens per second of decoding (the steps after the first
     token over decode_s), with and without drafts; ids must be equal. Targets: >= 1.7x copy-heavy,
     >= 0.97x free.
  3. --draft-model: the default model (Q4_1) drafting for its own weights as F16 (written once by the
     peer's llama-quantize into CACHE/bench), on the same prompts: speedup, ids equal.
Results: one table on stdout and CACHE/bench/spec.json.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".cache")
LLMGEN = os.environ.get("BENCH_LLMGEN", os.path.join(REPO, "llmgen"))
DEFAULT = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
F16 = os.path.join(CACHE, "bench", "SmolLM2-135M-Instruct.F16.gguf")
QUANTIZE = os.path.join(CACHE, "peer", "build", "bin", "llama-quantize")
REPS = int(os.environ.get("BENCH_SPEC_REPS", "3"))
THREADS = os.environ.get("BENCH_THREADS_SPEC", "2")
PARTS = os.environ.get("BENCH_SPEC_PARTS", "verify,lookup,model").split(",")

TEXTS = [
    "The lighthouse keeper climbed the stairs every evening at dusk, trimmed the wick, polished the lens "
    "and wrote the weather in his log. Ships passed in the night and never knew his name, but they knew "
    "his light, and that was enough for him.",
    "To make bread, mix five hundred grams of flour with ten grams of salt, seven grams of yeast and "
    "three hundred and fifty millilitres of warm water. Knead for ten minutes, let it rise for an hour, "
    "shape the loaf and bake it at two hundred and twenty degrees for thirty-five minutes.",
    "The meeting is moved from Tuesday to Thursday at ten in the morning, in room four on the second "
    "floor. Please bring the quarterly figures, the draft budget and your questions about the new "
    "travel policy. Lunch will be served after the meeting.",
    "Photosynthesis is the process by which green plants use sunlight, water and carbon dioxide to make "
    "glucose and oxygen. It takes place in the chloroplasts, which contain chlorophyll, the pigment that "
    "gives leaves their green colour.",
]
CODE = [
    "def area(width, height):\n    return width * height\n\n\ndef perimeter(width, height):\n"
    "    return 2 * (width + height)\n\n\nprint(area(3, 4), perimeter(3, 4))\n",
    "for (int i = 0; i < n; i++) {\n    if (values[i] > best) {\n        best = values[i];\n"
    "        index = i;\n    }\n}\nprintf(\"%d at %d\\n\", best, index);\n",
]


def copy_prompts():
    p = []
    for t in TEXTS:
        p.append("Repeat the following text exactly, word for word:\n\n" + t)
        p.append("Rewrite the following text, changing only the word \"the\" to \"a\" where it fits, and "
                 "keep everything else the same:\n\n" + t)
        p.append("Here is a text:\n\n" + t + "\n\nQuote the whole text back to me inside quotation marks.")
        p.append("Copy this paragraph and add a title line above it:\n\n" + t)
    for c in CODE:
        p.append("Here is some code:\n\n" + c + "\nRename the variable `best` to `top` (or `width` to `w`) "
                 "and print the whole code again.")
        p.append("Repeat this code exactly, then stop:\n\n" + c)
    return p[:20]


FREE = [
    "Write a short story about a fox who learns to paint.", "Explain why the sky is blue.",
    "Give me three ideas for a birthday party.", "What are the benefits of walking every day?",
    "Describe your ideal weekend.", "Write a poem about the sea.", "How does a refrigerator work?",
    "Suggest a name for a bakery and explain it.", "What should I pack for a hiking trip?",
    "Tell me about the history of tea.", "Write a letter to a friend you have not seen in years.",
    "Why do cats purr?", "Invent a new board game and describe its rules.",
    "What is the difference between weather and climate?", "Write a dialogue between a robot and a child.",
    "How can I learn to cook?", "Describe a city in the year 2200.", "What makes a good teacher?",
    "Write a recipe for a simple soup.", "Explain what a computer program is to a ten-year-old.",
]


def log(msg):
    print("bench-spec: " + msg, flush=True)


def run(args, stdin=None):
    t = time.time()
    p = subprocess.run([LLMGEN] + args, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"), time.time() - t


def pairs(a, b):
    """Run the callables a and b alternately (a first in even rounds): lists of their results."""
    ra, rb = [], []
    for r in range(REPS):
        if r % 2 == 0:
            ra.append(a())
            rb.append(b())
        else:
            rb.append(b())
            ra.append(a())
    return ra, rb


def verify_part(tmp, results):
    lines = []
    with open(os.path.join(REPO, "tests", "refs", "smollm2-gguf.json")) as f:
        for c in json.load(f)["cases"]:
            lines.append({"id": c["name"], "prompt_ids": c["prompt_ids"], "expected_ids": c["ids"],
                          "top2_gap": c["gap"]})
    with open(os.path.join(REPO, "tests", "refs", "quality", "verify-smollm2.jsonl")) as f:
        lines += [json.loads(x) for x in f if x.strip()]
    refs = os.path.join(tmp, "refs.jsonl")
    with open(refs, "w") as f:
        f.writelines(json.dumps(c) + "\n" for c in lines)
    tokens = sum(len(c["expected_ids"]) for c in lines)
    out = {}
    for mode in (["--exact"], []):
        name = "exact" if mode else "fast"
        base = ["verify", refs, "-m", DEFAULT, "-t", THREADS] + mode
        tf, step = pairs(lambda: run(base), lambda: run(base + ["--no-teacher-forcing"]))
        same = all(x[0] == y[0] and x[1] == y[1] for x, y in zip(tf, step))
        t_tf, t_step = statistics.median(x[3] for x in tf), statistics.median(x[3] for x in step)
        out[name] = {"cases": len(lines), "tokens": tokens, "teacher_forcing_s": t_tf, "step_by_step_s": t_step,
                     "speedup": t_step / t_tf, "same_lines": same, "exit": tf[0][0],
                     "target": 2.5 if mode else 3.0, "runs_s": [[x[3] for x in tf], [x[3] for x in step]]}
        log("verify %s: %d cases, %d tokens: %.2f s teacher-forced, %.2f s step by step: %.2fx (same lines: %s)"
            % (name, len(lines), tokens, t_tf, t_step, t_step / t_tf, same))
    results["verify"] = out


def batch_file(tmp, name, prompts):
    p = os.path.join(tmp, name + ".jsonl")
    with open(p, "w") as f:
        for i, t in enumerate(prompts):
            f.write(json.dumps({"id": "%s-%d" % (name, i), "prompt": t, "chat": True, "max_tokens": 160}) + "\n")
    return p


def batch_rate(model, path, extra):
    rc, out, err, _ = run(["-m", model, "--batch", path, "-t", THREADS] + extra)
    if rc:
        raise RuntimeError("llmgen --batch %s: exit %d: %s" % (" ".join(extra), rc, err[:300]))
    res = [json.loads(x) for x in out.strip().split("\n")]
    steps = sum(max(r["timings"]["generated_tokens"] - 1, 0) for r in res)
    dec = sum(r["timings"]["decode_s"] for r in res)
    drafted = sum(r["timings"].get("drafted_tokens", 0) for r in res)
    accepted = sum(r["timings"].get("accepted_tokens", 0) for r in res)
    return {"ids": [r["ids"] for r in res], "tokens_per_s": steps / dec, "steps": steps, "decode_s": dec,
            "drafted": drafted, "accepted": accepted}


def compare(label, model, path, extra, target):
    plain, spec = pairs(lambda: batch_rate(model, path, []), lambda: batch_rate(model, path, extra))
    same = all(a["ids"] == b["ids"] for a, b in zip(plain, spec))
    tp, ts = statistics.median(x["tokens_per_s"] for x in plain), statistics.median(x["tokens_per_s"] for x in spec)
    e = {"plain_tokens_per_s": tp, "spec_tokens_per_s": ts, "speedup": ts / tp, "same_ids": same,
         "generated_steps": plain[0]["steps"], "drafted": spec[0]["drafted"], "accepted": spec[0]["accepted"],
         "target": target, "runs_tokens_per_s": [[x["tokens_per_s"] for x in plain], [x["tokens_per_s"] for x in spec]]}
    log("%s: %.1f -> %.1f tokens/s: %.2fx (%d of %d drafted accepted; same ids: %s)" % (
        label, tp, ts, ts / tp, e["accepted"], e["drafted"], same))
    return e


def f16_target():
    if os.path.exists(F16):
        return None
    if not os.path.exists(QUANTIZE):
        return "%s missing (make peer)" % QUANTIZE
    os.makedirs(os.path.dirname(F16), exist_ok=True)
    p = subprocess.run([QUANTIZE, "--allow-requantize", DEFAULT, F16 + ".tmp", "F16"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if p.returncode:
        return "llama-quantize failed: %s" % p.stdout.decode()[-300:]
    os.rename(F16 + ".tmp", F16)
    return None


def main():
    for f in (LLMGEN, DEFAULT):
        if not os.path.exists(f):
            log("%s missing (make llmgen model)" % f)
            return 1
    results = {"threads": THREADS, "reps": REPS, "machine": os.uname().machine,
               "commit": subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO,
                                        stdout=subprocess.PIPE).stdout.decode().strip()}
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        if "verify" in PARTS:
            verify_part(tmp, results)
        copy, free = batch_file(tmp, "copy", copy_prompts()), batch_file(tmp, "free", FREE)
        if "lookup" in PARTS:
            results["lookup"] = {"copy": compare("--draft-lookup, 20 copy-heavy prompts", DEFAULT, copy,
                                                 ["--draft-lookup"], 1.7),
                                 "free": compare("--draft-lookup, 20 free prompts", DEFAULT, free,
                                                 ["--draft-lookup"], 0.97)}
        note = f16_target() if "model" in PARTS else "not asked for (BENCH_SPEC_PARTS)"
        if note:
            results["draft_model"] = {"skipped": note}
            log("--draft-model: skipped: " + note)
        else:
            extra = ["--draft-model", DEFAULT]
            results["draft_model"] = {"target": os.path.basename(F16), "draft": os.path.basename(DEFAULT),
                                      "copy": compare("--draft-model Q4_1 for F16, copy-heavy", F16, copy, extra, None),
                                      "free": compare("--draft-model Q4_1 for F16, free", F16, free, extra, None)}
    results["wall_seconds"] = time.time() - t0
    print()
    print("| comparison (%s threads, medians of %d interleaved rounds) | without | with | ratio | target |" % (
        THREADS, REPS))
    print("|---|---|---|---|---|")
    for name, v in results.get("verify", {}).items():
        print("| verify %s, %d refs (s) | %.2f | %.2f | %.2fx | >= %.1fx %s |" % (
            name, v["cases"], v["step_by_step_s"], v["teacher_forcing_s"], v["speedup"], v["target"],
            "ok" if v["speedup"] >= v["target"] and v["same_lines"] else "MISSED"))
    rows = [("--draft-lookup, copy-heavy (t/s)", results["lookup"]["copy"]),
            ("--draft-lookup, free (t/s)", results["lookup"]["free"])] if "lookup" in results else []
    if "copy" in results["draft_model"]:
        rows += [("--draft-model Q4_1 -> F16, copy-heavy (t/s)", results["draft_model"]["copy"]),
                 ("--draft-model Q4_1 -> F16, free (t/s)", results["draft_model"]["free"])]
    for label, e in rows:
        tgt = e["target"]
        print("| %s | %.1f | %.1f | %.2fx | %s |" % (
            label, e["plain_tokens_per_s"], e["spec_tokens_per_s"], e["speedup"],
            ("-" if tgt is None else ">= %.2fx %s" % (tgt, "ok" if e["speedup"] >= tgt else "MISSED"))
            + ("" if e["same_ids"] else " IDS DIFFER")))
    out = os.path.join(CACHE, "bench", "spec.json" if len(set(PARTS)) == 3 else "spec-partial.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print("\nresults: %s (%.0f s)" % (out, results["wall_seconds"]))
    ids_ok = all(v["same_lines"] for v in results.get("verify", {}).values()) and all(
        e["same_ids"] for _, e in rows)
    return 0 if ids_ok else 1


if __name__ == "__main__":
    sys.exit(main())
