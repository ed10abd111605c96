#!/usr/bin/env python3
"""Structured output speed (`make grammar-bench`): what a JSON Schema costs next to a decode step.

1. Decode, 2 threads, fast mode, interleaved runs (the machine may be shared: each round runs the
   variants back to back, the ratio to plain is taken per round, the median reported); generation
   tokens/s from --json timings (the grammar's compile time is not in them: it is reported in 2):
   - the default model (49152 ids), chat prompt, -n 128: LONG (an array of at least 40 objects with
     strings: the output stays long) and STRUCT (an array of objects of enums and booleans: almost every
     token sits at a structural position, the mask's worst case) against plain decoding with
     --ignore-eos;
   - the 1B-config file with a 128k vocabulary: the random-weight Llama-3.2-1B config of `make fixtures`
     quantized to 4 bits by `llmgen quantize`, with Llama 3.2's tokenizer (tests/fixtures/tokenizers),
     written once to .cache/bench/llama-1b-random-q4-tok; plain prompt, -n 64, STRUCT against plain.
2. Grammar compile time for a 40-property schema and the per-token mask time while a valid output is
   fed through it (build/bench/grammar_bench), on the default model's vocabulary (49152) and,
   tokenizer only, on Llama 3.2's (128256) and Qwen2's (151665) from tests/fixtures/tokenizers.
Prints the results and writes .cache/bench/grammar.json. Standard library only.
"""
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(REPO, ".cache")
LLMGEN = os.path.join(REPO, "llmgen")
GBENCH = os.path.join(REPO, "build", "bench", "grammar_bench")
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
ONE_B_SRC = os.path.join(CACHE, "fixtures", "llama-1b-random")
ONE_B = os.path.join(CACHE, "bench", "llama-1b-random-q4-tok")
TOKENIZERS = os.path.join(REPO, "tests", "fixtures", "tokenizers")
PAIRS = int(os.environ.get("GRAMMAR_BENCH_PAIRS", "5"))

LONG = {"type": "array", "minItems": 40, "items": {"type": "object", "properties": {
    "name": {"type": "string"}, "city": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "city", "age"]}}
STRUCT = {"type": "array", "minItems": 40, "items": {"type": "object", "properties": {
    "level": {"enum": ["low", "mid", "high"]}, "ok": {"type": "boolean"},
    "tag": {"enum": ["alpha", "beta", "gamma", "delta"]}}, "required": ["level", "ok", "tag"]}}
PROMPT = "List forty people with their name, city and age as JSON."


def forty():
    kinds = [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {"type": "number"},
             {"enum": ["low", "mid", "high"]}]
    props = {"field_%02d" % i: kinds[i % len(kinds)] for i in range(40)}
    schema = {"type": "object", "properties": props, "required": list(props)}
    def val(i):
        return ['"value %d"' % i, str(i * 7), "true", "%d.5" % i, '"mid"'][i % len(kinds)]
    text = "{\n" + ",\n".join('  "field_%02d": %s' % (i, val(i)) for i in range(40)) + "\n}"
    return json.dumps(schema), text


def gen(model, args, n, extra):
    p = subprocess.run([LLMGEN, "-m", model, "-n", str(n), "-t", "2", "--json"] + args + extra,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
    if p.returncode:
        sys.exit("bench_grammar: llmgen: " + p.stderr.decode())
    return json.loads(p.stdout)["timings"]["generation_tokens_per_s"]


def tokenizer_dir(work, name):
    d = os.path.join(work, name)
    os.makedirs(d)
    src = os.path.join(TOKENIZERS, name)
    with gzip.open(os.path.join(src, "tokenizer.json.gz")) as f, open(os.path.join(d, "tokenizer.json"), "wb") as o:
        shutil.copyfileobj(f, o)
    shutil.copy(os.path.join(src, "tokenizer_config.json"), d)
    return d


def one_b_model():
    """The 1B-config fixture in 4 bits with Llama 3.2's tokenizer (written once), or None without it."""
    if os.path.exists(os.path.join(ONE_B, "model.safetensors")):
        return ONE_B
    if not os.path.exists(os.path.join(ONE_B_SRC, "model.safetensors")):
        return None
    with tempfile.TemporaryDirectory() as work:
        d = tokenizer_dir(work, "llama3.2")
        for f in ("config.json", "model.safetensors"):
            os.symlink(os.path.abspath(os.path.join(ONE_B_SRC, f)), os.path.join(d, f))
        os.makedirs(os.path.dirname(ONE_B), exist_ok=True)
        p = subprocess.run([LLMGEN, "quantize", d, ONE_B + ".tmp", "--bits", "4"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        if p.returncode:
            sys.exit("bench_grammar: llmgen quantize: " + p.stderr.decode())
        os.rename(ONE_B + ".tmp", ONE_B)
    return ONE_B


def rounds(model, args, n, variants):
    """PAIRS rounds of each variant (extra args) then plain; per-variant tokens/s and ratios to plain."""
    tps = {k: [] for k in list(variants) + ["plain"]}
    for _ in range(PAIRS):
        for k, extra in variants.items():
            tps[k].append(gen(model, args, n, extra))
        tps["plain"].append(gen(model, args, n, ["--ignore-eos"]))
    out = {"tokens": n, "tps": tps}
    for k in variants:
        r = [a / b for a, b in zip(tps[k], tps["plain"])]
        out[k] = {"ratio_median": statistics.median(r), "ratios": r, "tps_median": statistics.median(tps[k])}
    out["plain_tps_median"] = statistics.median(tps["plain"])
    return out


def gbench(model, schema, text, repeat=3):
    p = subprocess.run([GBENCH, model, "--json-schema", schema, text, str(repeat)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    if p.returncode:
        sys.exit("bench_grammar: grammar_bench: " + p.stderr.decode())
    rows = [json.loads(x) for x in p.stdout.decode().splitlines()]
    return {"vocab": rows[0]["vocab"], "compile_ms": min(r["compile_ms"] for r in rows),
            "mask_us_mean": min(r["mask_us_mean"] for r in rows), "tokens": rows[0]["tokens"]}


def main():
    for f in (LLMGEN, GBENCH, MODEL):
        if not os.path.exists(f):
            sys.exit("bench_grammar: %s is missing (make grammar-bench builds it)" % f)
    one_b = one_b_model()
    res = {"load": open("/proc/loadavg").read().split()[:3]}
    long_, struct = ["--json-schema", json.dumps(LONG)], ["--json-schema", json.dumps(STRUCT)]
    res["smollm2"] = rounds(MODEL, ["--chat", "-p", PROMPT], 128, {"long": long_, "struct": struct})
    if one_b:
        res["one_b"] = rounds(one_b, ["-p", "List the items as JSON."], 64, {"struct": struct})
    schema, text = forty()
    res["forty_properties"] = {"smollm2": gbench(MODEL, schema, text)}
    with tempfile.TemporaryDirectory() as work:
        for name in ("llama3.2", "qwen2"):
            res["forty_properties"][name] = gbench(tokenizer_dir(work, name), schema, text)
    res["load_after"] = open("/proc/loadavg").read().split()[:3]
    print("decode, 2 threads, fast mode, %d interleaved rounds (load average %s before, %s after):"
          % (PAIRS, " ".join(res["load"]), " ".join(res["load_after"])))
    print("| model | vocabulary | schema | schema t/s | plain t/s | ratio (median of rounds) | ratios |")
    print("|---|---|---|---|---|---|---|")
    rows = [("SmolLM2-135M Q4_1", 49152, "smollm2", "long"), ("SmolLM2-135M Q4_1", 49152, "smollm2", "struct")]
    if one_b:
        rows.append(("1B config, MLX 4-bit", 128256, "one_b", "struct"))
    for label, vocab, key, var in rows:
        r = res[key]
        print("| %s | %d | %s | %.1f | %.1f | %.3f | %s |" % (label, vocab, var.upper(), r[var]["tps_median"],
              r["plain_tps_median"], r[var]["ratio_median"], " ".join("%.2f" % x for x in r[var]["ratios"])))
    if not one_b:
        print("(no 1B-config point: %s is missing, make fixtures)" % ONE_B_SRC)
    print("| vocabulary | ids | 40-property schema compile (ms) | mask per token (us, mean over %d tokens) |"
          % res["forty_properties"]["smollm2"]["tokens"])
    print("|---|---|---|---|")
    for name, r in res["forty_properties"].items():
        print("| %s | %d | %.1f | %.1f |" % (name, r["vocab"], r["compile_ms"], r["mask_us_mean"]))
    os.makedirs(os.path.join(CACHE, "bench"), exist_ok=True)
    with open(os.path.join(CACHE, "bench", "grammar.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
