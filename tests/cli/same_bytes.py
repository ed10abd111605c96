#!/usr/bin/env python3
"""Same bytes before and after a change that must not change output (`make same-bytes`).

Usage: same_bytes.py [--record] [--allow-missing] [--only SUBSTRING] [--threads 1,2,3] [--llmgen PATH]

Runs ./llmgen --dump-logits on a fixed set of models (the default model and its llama-quantize
requantizations of `make quant-models`, an MLX 4-bit fixture, the Gemma-3 / Qwen3 / Phi-3 family
fixtures, the tiny K-quant and IQ4 GGUFs), fast and --exact, at -t 1, 2 and 3, with prompts
longer than one forward chunk where the model allows, and compares the sha256 of each run's
logits dump and ids with tests/refs/same-bytes.txt. Fast mode's bytes depend on the kernel table
(avx512.c and avx2.c sum in different orders), so its entries carry the table's name ("fast/avx2");
--exact's are the same on every table. --record rewrites that list from the current
build: do it only on a commit whose output is the one to keep (the list is llmgen's own output,
a regression baseline, not a reference from another implementation).

Exits 1 on any difference or (without --allow-missing) any missing model; 0 otherwise.
Not part of `make test`: the quantized SmolLM2 files live in .cache/quant (make quant-models).
"""
import hashlib
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIST = os.path.join(REPO, "tests", "refs", "same-bytes.txt")
CACHE = os.path.join(REPO, ".cache")


def ids(n, vocab, seed):
    """n deterministic prompt ids below vocab, away from the special ids 0..3."""
    out, x = [], seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % (1 << 31)
        out.append(4 + x % (vocab - 4))
    return out


SMOL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
QUANT = os.path.join(CACHE, "quant", "SmolLM2-135M-Instruct.%s.gguf")
FIX = os.path.join(REPO, "tests", "fixtures")

# name, model path, prompt length, vocab (for the prompt ids), tokens to generate
CASES = [
    ("smollm2-q4_1", SMOL, 150, 49152, 24),
    ("smollm2-q4_k_m", QUANT % "Q4_K_M", 150, 49152, 24),
    ("smollm2-q6_k", QUANT % "Q6_K", 150, 49152, 24),
    ("smollm2-iq4_xs", QUANT % "IQ4_XS", 150, 49152, 24),
    ("smollm2-q5_k_m", QUANT % "Q5_K_M", 40, 49152, 8),
    ("smollm2-q3_k_m", QUANT % "Q3_K_M", 40, 49152, 8),
    ("mlx-gqa-tied-q4g32", os.path.join(FIX, "tiny-mlx-gqa-tied-q4g32"), 140, 384, 24),
    ("mlx-gemma3-q4g64", os.path.join(FIX, "tiny-mlx-gemma3-q4g64"), 60, 256, 16),
    ("gemma3-mixed-f32", os.path.join(FIX, "tiny-gemma3-mixed-f32"), 140, 320, 24),
    ("gemma3-ring-f32", os.path.join(FIX, "tiny-gemma3-ring-f32"), 300, 320, 40),
    ("gemma3-ring-gguf", os.path.join(FIX, "tiny-gemma3-ring-f32", "model.f32.gguf"), 300, 320, 40),
    ("qwen3-gqa-tied-f32", os.path.join(FIX, "tiny-qwen3-gqa-tied-f32"), 140, 384, 24),
    ("qwen3-gqa-tied-q8_0", os.path.join(FIX, "tiny-qwen3-gqa-tied-f32", "model.q8_0.gguf"), 140, 384, 24),
    ("phi3-longrope-f32", os.path.join(FIX, "tiny-phi3-longrope-f32"), 40, 256, 16),
    ("phi3-longrope-gguf", os.path.join(FIX, "tiny-phi3-longrope-f32", "model.f32.gguf"), 40, 256, 16),
    ("mistral-ring-f32", os.path.join(FIX, "tiny-mistral-ring-f32"), 300, 256, 40),
] + [("tiny-gguf-%s" % t.lower(), os.path.join(FIX, "tiny-gguf", "tiny-gguf.%s.gguf" % t), 140, 128, 24)
     for t in ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q5_0", "Q5_1", "IQ4_NL", "IQ4_XS"]]

MODES = [("fast", []), ("exact", ["--exact"])]
THREADS = [1, 2, 3]


def kernel_table(llmgen):
    """The kernel table llmgen picks on this CPU, from --version ("kernels on this CPU: avx2")."""
    out = subprocess.run([llmgen, "--version"], stdout=subprocess.PIPE, text=True).stdout
    return out.rsplit(":", 1)[1].strip(" )\n")


def run_case(llmgen, name, path, plen, vocab, n, mode_args, t):
    prompt = ",".join(str(i) for i in ids(plen, vocab, len(name)))
    with tempfile.TemporaryDirectory() as d:
        dump = os.path.join(d, "logits.f32")
        cmd = [llmgen, "-m", path, "--prompt-ids", prompt, "-n", str(n), "--ids", "-t", str(t), "--split-all",
               "--dump-logits", dump] + mode_args
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            return None, "exit %d: %s" % (p.returncode, p.stderr.decode("utf-8", "replace").strip()[-300:])
        h = hashlib.sha256()
        h.update(p.stdout)
        with open(dump, "rb") as f:
            h.update(f.read())
        return h.hexdigest(), None


def main():
    args = sys.argv[1:]
    record = "--record" in args
    allow_missing = "--allow-missing" in args
    only = args[args.index("--only") + 1] if "--only" in args else None
    llmgen = args[args.index("--llmgen") + 1] if "--llmgen" in args else os.path.join(REPO, "llmgen")
    threads = [int(t) for t in args[args.index("--threads") + 1].split(",")] if "--threads" in args else THREADS
    stored = {}
    if os.path.exists(LIST):
        with open(LIST) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    key, h = line.rsplit(" ", 1)
                    stored[key] = h.strip()
    lines, bad, missing, checked = [], 0, 0, 0
    table = kernel_table(llmgen)
    for name, path, plen, vocab, n in CASES:
        if only and only not in name:
            continue
        if not os.path.exists(path):
            missing += 1
            print("MISSING %s (%s)" % (name, os.path.relpath(path, REPO)), flush=True)
            continue
        for mode, margs in MODES:
            for t in threads:
                key = "%s %s t%d" % (name, mode if mode == "exact" else mode + "/" + table, t)
                h, err = run_case(llmgen, name, path, plen, vocab, n, margs, t)
                if err:
                    bad += 1
                    print("ERROR   %s: %s" % (key, err), flush=True)
                    continue
                lines.append("%s %s" % (key, h))
                checked += 1
                if not record and stored.get(key) != h:
                    bad += 1
                    print("DIFFER  %s (stored %s, now %s)" % (key, stored.get(key, "none")[:12], h[:12]), flush=True)
    if record:  # merged into the stored list, so that --only records a part of it
        for line in lines:
            key, h = line.rsplit(" ", 1)
            stored[key] = h
        with open(LIST, "w") as f:
            f.write("# sha256 of `llmgen --ids` stdout + --dump-logits bytes per case (tests/cli/same_bytes.py --record)\n")
            for key in sorted(stored):
                f.write("%s %s\n" % (key, stored[key]))
        print("recorded %d runs into %s" % (len(lines), os.path.relpath(LIST, REPO)))
        return 1 if bad else 0
    print("same-bytes: %d runs compared, %d differ or fail, %d models missing" % (checked, bad, missing))
    return 1 if bad or (missing and not allow_missing) else 0


if __name__ == "__main__":
    sys.exit(main())
