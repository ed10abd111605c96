#!/usr/bin/env python3
"""make quality: how far each engine's default (fast) path is from its own full-precision run.

Usage: python3 tests/bench/quality.py CACHE      (run by `make quality`; standard library only)

Per model (the default SmolLM2-135M-Instruct Q4_1 GGUF, and the Llama-3.2-1B-config random-weight GGUFs
of `make bench-models` in CACHE/bench that are present: Q4_0, Q4_1, Q8_0; when none is but the F16 file
is, a Q4_0 copy made here by llama-quantize stands in), on the GPL-3 text of Debian's base-files:
  llmgen:    `llmgen perplexity --exact` writes a KL-divergence base, the default (fast) mode is compared
             with it (`--kl-divergence`);
  llama.cpp: llama-perplexity on an F32 copy of the same weights (the quantized file itself through
             llama-quantize --allow-requantize F32, in CACHE/quality: dequantized, so only the compute
             path differs) writes its base, its default run of the quantized file is compared with it;
  same text, same chunks (CTX 512), same tokens: llama.cpp's, taken from its F32 base and given to
  llmgen with --ids-file (llama.cpp's tokenizer splits this text differently from HF's, which llmgen
  follows: the first difference is recorded). For the default model, llmgen --exact is also scored
  against llama.cpp's F32 base (how far llama.cpp's F32 path is from exact).
Prints one table and writes CACHE/quality/results.json. Environment: QUALITY_CHUNKS (default 8),
QUALITY_1B_CHUNKS (default 2: a 1B-config chunk takes minutes per run here), QUALITY_THREADS (2),
QUALITY_MODELS=a,b (rerun only those rows, keeping the others in results.json).
"""
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = "/usr/share/common-licenses/GPL-3"
TEXT_SOURCE = "Debian package base-files: /usr/share/common-licenses/GPL-3 (GNU GPL v3)"
CTX = 512


def log(msg):
    print("quality: " + msg, file=sys.stderr, flush=True)


def run(cmd, what):
    t = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if p.returncode:
        sys.exit("quality: %s failed (exit %d):\n%s\n%s" % (what, p.returncode, out[-2000:], err[-2000:]))
    log("%s: %.1f s" % (what, time.time() - t))
    return out + "\n" + err


def stats(text):
    """The KL statistics both programs print (llama-perplexity with ±, llmgen with +/-)."""
    def num(label):
        m = re.search(re.escape(label) + r"\s*:\s*(-?[0-9.]+)", text)
        return float(m.group(1)) if m else None
    return {"ppl_q": num("Mean PPL(Q)"), "ppl_base": num("Mean PPL(base)"),
            "ppl_ratio": num("Mean PPL(Q)/PPL(base)"), "mean_kld": num("Mean    KLD"),
            "max_kld": num("Maximum KLD"), "p99_kld": num("99.0%   KLD"), "rms_dp_pct": num("RMS Δp"),
            "same_top_pct": num("Same top p")}


def base_tokens(path):
    """The token array of a KL-divergence base file."""
    with open(path, "rb") as f:
        head = f.read(20)
        n_ctx, n_chunk = int.from_bytes(head[8:12], "little"), int.from_bytes(head[16:20], "little")
        data = f.read(4 * n_ctx * n_chunk)
    return [int.from_bytes(data[i:i + 4], "little", signed=True) for i in range(0, len(data), 4)]


def quantize(cache, src, dst, typ):
    if os.path.exists(dst):
        return dst
    run([os.path.join(cache, "peer", "build", "bin", "llama-quantize"), "--allow-requantize", src, dst + ".tmp", typ,
         "2"], "llama-quantize %s -> %s" % (os.path.basename(src), typ))
    os.replace(dst + ".tmp", dst)
    return dst


def has_tokenizer(path):
    p = subprocess.run([os.path.join(REPO, "llmgen"), "--tokenizer", path, "--tokenize", "-p", "x"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p.returncode == 0


def one_model_no_tokenizer(cache, name, path, f32_source, chunks, threads, default):
    """A GGUF without a tokenizer (the 1B-config files): llama-perplexity cannot tokenize the text,
    so it cannot write a base of its own. The tokens are the default model's tokens of the text
    (its tokenizer, as llmgen and HF split it), given to llmgen with --ids-file; llmgen --exact
    writes the base, and all three other runs (llmgen fast, llama.cpp default, llama.cpp F32) are
    scored against it: llama.cpp's default against exact, and its F32 run against exact beside it."""
    qdir = os.path.join(cache, "quality")
    f32 = quantize(cache, f32_source, os.path.join(qdir, os.path.basename(f32_source)[:-5] + ".F32.gguf"),
                   "F32")
    lbase, ids = os.path.join(qdir, name + ".llmgen-exact.kld"), os.path.join(qdir, name + ".ids")
    tok = run([os.path.join(REPO, "llmgen"), "--tokenizer", default, "--tokenize", "-f", TEXT], name + ": tokens")
    with open(ids, "w") as f:
        f.write(tok.split("\n")[0].replace(",", " ") + "\n")
    llmgen = [os.path.join(REPO, "llmgen"), "perplexity", "-t", str(threads)]
    perp = [os.path.join(cache, "peer", "build", "bin", "llama-perplexity"), "-t", str(threads)]
    ex = run(llmgen + ["-m", path, "--exact", "--ids-file", ids, "-c", str(CTX), "--chunks", str(chunks),
                       "--kl-divergence-base", lbase], name + ": llmgen --exact (base)")
    fast = stats(run(llmgen + ["-m", path, "--kl-divergence-base", lbase, "--kl-divergence"], name + ": llmgen fast"))
    peer = stats(run(perp + ["-m", path, "--kl-divergence-base", lbase, "--kl-divergence"], name + ": llama.cpp default"))
    peer32 = stats(run(perp + ["-m", f32, "--kl-divergence-base", lbase, "--kl-divergence"], name + ": llama.cpp F32"))
    return {"model": os.path.relpath(path, cache), "f32_copy": os.path.relpath(f32, cache), "chunks": chunks, "ctx": CTX,
            "tokens": "the default model's tokens of the text (no tokenizer in this GGUF)",
            "llmgen_fast_vs_exact": fast, "llamacpp_default_vs_exact": peer, "llamacpp_f32_vs_exact": peer32,
            "llmgen_exact_ppl": float(re.search(r"PPL = ([0-9.]+)", ex).group(1)), "same_tokens": True}


def one_model(cache, name, path, f32_source, chunks, threads, cross):
    """llama.cpp's F32 run first: its base holds the tokens both engines then score (llama.cpp's
    tokenizer; llmgen takes them with --ids-file, so the two tables compare the same tokens)."""
    qdir = os.path.join(cache, "quality")
    f32 = quantize(cache, f32_source, os.path.join(qdir, os.path.basename(f32_source)[:-5] + ".F32.gguf"),
                   "F32")
    lbase, pbase = os.path.join(qdir, name + ".llmgen-exact.kld"), os.path.join(qdir, name + ".llamacpp-f32.kld")
    ids = os.path.join(qdir, name + ".ids")
    llmgen = [os.path.join(REPO, "llmgen"), "perplexity", "-t", str(threads)]
    perp = [os.path.join(cache, "peer", "build", "bin", "llama-perplexity"), "-t", str(threads)]
    run(perp + ["-m", f32, "-f", TEXT, "-c", str(CTX), "--chunks", str(chunks), "--kl-divergence-base", pbase],
        name + ": llama.cpp F32 (base)")
    peer = stats(run(perp + ["-m", path, "--kl-divergence-base", pbase, "--kl-divergence"], name + ": llama.cpp default"))
    ptoks = base_tokens(pbase)
    with open(ids, "w") as f:
        f.write(" ".join(map(str, ptoks)) + "\n")
    ex = run(llmgen + ["-m", path, "--exact", "--ids-file", ids, "-c", str(CTX), "--chunks", str(chunks),
                       "--kl-divergence-base", lbase], name + ": llmgen --exact (base)")
    fast = stats(run(llmgen + ["-m", path, "--kl-divergence-base", lbase, "--kl-divergence"], name + ": llmgen fast"))
    r = {"model": os.path.relpath(path, cache), "f32_copy": os.path.relpath(f32, cache), "chunks": chunks, "ctx": CTX,
         "llmgen_fast_vs_exact": fast, "llamacpp_default_vs_f32": peer,
         "llmgen_exact_ppl": float(re.search(r"PPL = ([0-9.]+)", ex).group(1)),
         "same_tokens": base_tokens(lbase) == ptoks}
    # llmgen's own tokens of the text (its tokenizer equals HF's) against llama.cpp's
    tok = run([os.path.join(REPO, "llmgen"), "--tokenizer", path, "--tokenize", "-f", TEXT], name + ": llmgen --tokenize")
    own = [int(x) for x in tok.split("\n")[0].split(",") if x.strip()]
    diff = next((i for i, (a, b) in enumerate(zip(own, ptoks)) if a != b), None)
    r["tokenizers"] = {"llmgen_tokens": len(own), "first_difference_with_llamacpp": diff,
                       "llmgen_ids_there": own[diff:diff + 4] if diff is not None else None,
                       "llamacpp_ids_there": ptoks[diff:diff + 4] if diff is not None else None}
    if cross:  # llmgen --exact scored against llama.cpp's F32 base (the same tokens)
        r["llmgen_exact_vs_llamacpp_f32"] = stats(run(llmgen + ["-m", path, "--exact", "--kl-divergence-base", pbase,
                                                                 "--kl-divergence"], name + ": llmgen --exact vs llama.cpp F32"))
    return r


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: quality.py CACHE")
    cache = sys.argv[1]
    os.makedirs(os.path.join(cache, "quality"), exist_ok=True)
    chunks = int(os.environ.get("QUALITY_CHUNKS", "8"))
    chunks_1b = int(os.environ.get("QUALITY_1B_CHUNKS", "2"))
    threads = int(os.environ.get("QUALITY_THREADS", "2"))
    default = os.path.join(cache, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    models = [("smollm2-135m-q4_1", default, default, chunks, True)]
    bench = os.path.join(cache, "bench")
    f16 = os.path.join(bench, "llama-1b-random.F16.gguf")
    found = [t for t in ("Q4_0", "Q4_1", "Q8_0") if os.path.exists(os.path.join(bench, "llama-1b-random.%s.gguf" % t))]
    for t in found:
        q = os.path.join(bench, "llama-1b-random.%s.gguf" % t)
        models.append(("llama1b-%s" % t.lower(), q, q, chunks_1b, False))
    if not found and os.path.exists(f16):
        q = quantize(cache, f16, os.path.join(cache, "quality", "llama-1b-random.Q4_0.gguf"), "Q4_0")
        models.append(("llama1b-q4_0", q, q, chunks_1b, False))
    results = {"text": {"path": TEXT, "source": TEXT_SOURCE, "sha256": hashlib.sha256(open(TEXT, "rb").read()).hexdigest()},
               "machine": platform.machine(), "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                                            if l.startswith("model name")), "?"),
               "peer": open(os.path.join(cache, "peer", "BUILD-INFO")).readline().strip(), "models": {}}
    out = os.path.join(cache, "quality", "results.json")
    only = [m for m in os.environ.get("QUALITY_MODELS", "").split(",") if m]
    if only and os.path.exists(out):  # a partial rerun keeps the other models' rows
        results["models"] = json.load(open(out)).get("models", {})
    for name, path, f32_source, k, cross in models:
        if only and name not in only:
            continue
        if has_tokenizer(path):
            results["models"][name] = one_model(cache, name, path, f32_source, k, threads, cross)
        else:
            results["models"][name] = one_model_no_tokenizer(cache, name, path, f32_source, k, threads, default)
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    print("\n%-20s %6s | %-32s | %-32s | %s" % ("model", "chunks", "llmgen fast vs --exact", "llama.cpp default vs F32",
                                                 "same tokens"))
    print("%-20s %6s | %10s %9s %11s | %10s %9s %11s |" % ("", "", "mean KLD", "same top", "PPL ratio", "mean KLD",
                                                          "same top", "PPL ratio"))
    for name, r in results["models"].items():
        a, b = r["llmgen_fast_vs_exact"], r.get("llamacpp_default_vs_f32") or r["llamacpp_default_vs_exact"]
        print("%-20s %6d | %10.6f %8.3f%% %11.6f | %10.6f %8.3f%% %11.6f | %s" % (
            name, r["chunks"], a["mean_kld"], a["same_top_pct"], a["ppl_ratio"], b["mean_kld"], b["same_top_pct"],
            b["ppl_ratio"], "yes" if r["same_tokens"] else "NO"))
        if "llamacpp_default_vs_exact" in r:
            c = r["llamacpp_f32_vs_exact"]
            print("%-20s %6s   (no tokenizer: llama.cpp's runs against llmgen's --exact base; its F32 run against it: "
                  "mean KLD %.6f, same top %.3f%%)" % ("", "", c["mean_kld"], c["same_top_pct"]))
    for name, r in results["models"].items():
        t = r.get("tokenizers", {})
        if t.get("first_difference_with_llamacpp") is not None:
            print("%s: llmgen's (= HF's) tokens of the text differ from llama.cpp's from token %d on (%s vs %s)" % (
                name, t["first_difference_with_llamacpp"], t["llmgen_ids_there"], t["llamacpp_ids_there"]))
        c = r.get("llmgen_exact_vs_llamacpp_f32")
        print("%s: llmgen --exact PPL %.4f, llama.cpp F32 PPL %.4f%s" % (
            name, r["llmgen_exact_ppl"], (r.get("llamacpp_default_vs_f32") or r["llamacpp_f32_vs_exact"])["ppl_base" if
                                                                                 "llamacpp_default_vs_f32" in r else "ppl_q"],
            "; llmgen --exact against llama.cpp's F32 base: mean KLD %.6f, same top %.3f%%" % (
                c["mean_kld"], c["same_top_pct"]) if c else ""))
    print("wrote %s" % os.path.join(cache, "quality", "results.json"))


if __name__ == "__main__":
    main()
