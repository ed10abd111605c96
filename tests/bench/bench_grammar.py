#!/usr/bin/env python3
"""Structured output speed (`make grammar-bench`): what a JSON Schema costs next to a decode step.

1. Decode on the default model, 2 threads, fast mode, interleaved A/B pairs (the machine may be
   shared: each pair runs back to back, the ratio is taken per pair, the median reported):
   A = a schema whose output stays long (an array of at least 40 objects), B = the same prompt
   unconstrained with --ignore-eos; both -n 128, generation tokens/s from --json timings.
2. Grammar compile time for a 40-property schema and the per-token mask time while a valid
   output is fed through it (build/bench/grammar_bench), on the default model's vocabulary
   (49152) and, tokenizer only, on Llama 3.2's (128256) and Qwen2's (151665) from
   tests/fixtures/tokenizers. The 1B-config bench files carry no tokenizer, so at 128k the mask
   cost is measured on its own and set against a decode step of .cache/bench's 1B Q4_0 file
   when that file exists (`make bench-models`).
Prints one table and writes .cache/bench/grammar.json. Standard library only.
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
ONE_B = os.path.join(CACHE, "bench", "llama-1b-random.Q4_0.gguf")
PAIRS = int(os.environ.get("GRAMMAR_BENCH_PAIRS", "5"))

LONG = {"type": "array", "minItems": 40, "items": {"type": "object", "properties": {
    "name": {"type": "string"}, "city": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "city", "age"]}}
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


def gen(extra):
    p = subprocess.run([LLMGEN, "-m", MODEL, "--chat", "-p", PROMPT, "-n", "128", "-t", "2", "--json"] + extra,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if p.returncode:
        sys.exit("bench_grammar: llmgen: " + p.stderr.decode())
    r = json.loads(p.stdout)
    return r["timings"]["generation_tokens_per_s"], r["timings"]["generated_tokens"]


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
    ratios, a_tps, b_tps = [], [], []
    for _ in range(PAIRS):
        a, na = gen(["--json-schema", json.dumps(LONG)])
        b, nb = gen(["--ignore-eos"])
        ratios.append(a / b)
        a_tps.append(a)
        b_tps.append(b)
    schema, text = forty()
    res = {"decode_pairs": [{"schema_tps": a, "plain_tps": b} for a, b in zip(a_tps, b_tps)],
           "decode_ratio_median": statistics.median(ratios)}
    res["forty_properties"] = {"smollm2": gbench(MODEL, schema, text)}
    with tempfile.TemporaryDirectory() as work:
        for name in ("llama3.2", "qwen2"):
            d = os.path.join(work, name)
            os.makedirs(d)
            src = os.path.join(REPO, "tests", "fixtures", "tokenizers", name)
            with gzip.open(os.path.join(src, "tokenizer.json.gz")) as f, open(os.path.join(d, "tokenizer.json"), "wb") as o:
                shutil.copyfileobj(f, o)
            shutil.copy(os.path.join(src, "tokenizer_config.json"), d)
            res["forty_properties"][name] = gbench(d, schema, text)
    if os.path.exists(ONE_B):
        p = subprocess.run([LLMGEN, "-m", ONE_B, "--prompt-ids", "1,2,3", "-n", "64", "-t", "2", "--ignore-eos",
                            "--json", "--ids"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        if not p.returncode:
            tps = json.loads(p.stdout)["timings"]["generation_tokens_per_s"]
            mask = res["forty_properties"]["llama3.2"]["mask_us_mean"] * 1e-6
            res["one_b"] = {"plain_tps": tps, "mask_us_128k": mask * 1e6,
                            "implied_ratio": (1 / tps) / (1 / tps + mask)}
    print("decode, default model, 2 threads, %d interleaved pairs: schema %.1f t/s vs plain %.1f t/s (medians), "
          "ratio median %.3f (pairs: %s)" % (PAIRS, statistics.median(a_tps), statistics.median(b_tps),
                                             res["decode_ratio_median"], " ".join("%.2f" % r for r in ratios)))
    print("| vocabulary | ids | 40-property schema compile (ms) | mask per token (us, mean over %d tokens) |"
          % res["forty_properties"]["smollm2"]["tokens"])
    print("|---|---|---|---|")
    for name, r in res["forty_properties"].items():
        print("| %s | %d | %.1f | %.1f |" % (name, r["vocab"], r["compile_ms"], r["mask_us_mean"]))
    if "one_b" in res:
        o = res["one_b"]
        print("1B-config Q4_0, 2 threads: %.1f t/s plain; a %.0f us mask per token would make it %.3fx"
              % (o["plain_tps"], o["mask_us_128k"], o["implied_ratio"]))
    os.makedirs(os.path.join(CACHE, "bench"), exist_ok=True)
    with open(os.path.join(CACHE, "bench", "grammar.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
