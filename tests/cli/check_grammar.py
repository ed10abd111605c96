#!/usr/bin/env python3
"""Structured output (--grammar, --json-schema, batch "grammar" / "json_schema") against transformers +
xgrammar and Python's jsonschema. `make test` runs the quick part; `make regress-grammar` runs --full.

Usage: check_grammar.py [--full]

1. Exact: cases of tests/refs/grammar/*.json (HF transformers + xgrammar's logits processor, made by
   tests/gen/make_grammar_refs.py): llmgen --exact --batch with the same prompt ids, grammar or schema
   and max_tokens gives the same ids token for token and stops the same way ("eos": the grammar was
   complete and the end-of-sequence id won; "length"). Every case on the tiny SentencePiece byte-fallback
   fixture (tests/fixtures/tiny-grammar-spm-bf16 + tokenizers/mistral-v1); on the default model the
   QUICK_CASES (--full: every case).
2. --draft-lookup with a grammar gives the same ids (QUICK: SPEC_CASES, --full: every default-model
   case), and runs drafts; -i constrains each reply.
3. llama.cpp's own grammars (.cache/grammars/llama.cpp, `make grammars`) all parse (the ones xgrammar
   accepts are also cases of step 1).
4. Fast mode, the default model, greedy: JSON Schemas of tests/gen/grammar_cases.json, chat-wrapped;
   every complete output (stop "eos") must parse as JSON and validate with jsonschema, formats
   included where its FormatChecker knows them (the tools venv of `make fixtures` has it when this
   interpreter lacks it). Quick: the QUICK_SCHEMAS with one prompt, each of which must complete;
   --full: every schema with 3 prompts, and the outputs that run to the FAST_TOKENS limit (the 135M
   model repeats itself inside a number, a string or whitespace, which the language allows:
   xgrammar's has no bound there) are listed, not validated.
5. Bad input: a grammar or schema that does not parse is one line on stderr with exit 1.

Environment: LLMGEN (binary), LLMGEN_CACHE (default .cache), LLMGEN_THREADS (default 2). Exits 1 on any
failure.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
TOOLS_PY = os.path.join(CACHE, "venv-tools", "bin", "python")
try:
    import jsonschema
except ImportError:  # the tools venv has it (tests/gen/requirements-tools.txt)
    if os.path.exists(TOOLS_PY) and not os.environ.get("LLMGEN_GRAMMAR_REEXEC"):
        os.environ["LLMGEN_GRAMMAR_REEXEC"] = "1"
        os.execv(TOOLS_PY, [TOOLS_PY] + sys.argv)
    sys.exit("check_grammar: Python's jsonschema is missing (make fixtures builds the tools venv with it)")

LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
THREADS = os.environ.get("LLMGEN_THREADS", "2")
REFS = os.path.join(REPO, "tests", "refs", "grammar")
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
SPM_DIR = os.path.join(REPO, "tests", "fixtures", "tiny-grammar-spm-bf16")
SPM_TOK = os.path.join(REPO, "tests", "fixtures", "tokenizers", "mistral-v1")
CASES = os.path.join(REPO, "tests", "gen", "grammar_cases.json")
GRAMMARS = os.path.join(CACHE, "grammars", "llama.cpp")
FAST_PROMPTS = ["Reply with %s as JSON.", "Give me %s in JSON, nothing else.", "I need %s. Answer in JSON."]
FAST_TOKENS = 384
FULL = "--full" in sys.argv[1:]
# the quick part: default-model cases (each kind: schemas with enums, refs, formats, patterns; own and
# llama.cpp grammars) and schemas (the adversarial ones: deep nesting, long and unicode enums, exponents)
QUICK_CASES = {"color-enum", "int-list", "any-of", "defs-ref", "date", "uuid", "yes-no", "csv-row",
               "unicode-choice", "llama.cpp/arithmetic.gbnf", "llama.cpp/json.gbnf"}
SPEC_CASES = {"person", "bullet-list", "llama.cpp/list.gbnf"}
QUICK_SCHEMAS = {"deep-10", "long-enum", "unicode-enum", "exp-number", "nested-3", "array-of-objects",
                 "pattern-phone", "pattern-alt", "one-of", "date-time"}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def batch(model, lines, extra=()):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for ln in lines:
            f.write(json.dumps(ln, ensure_ascii=False) + "\n")
        path = f.name
    try:
        p = subprocess.run([LLMGEN, "-m", model, "--batch", path, "-t", THREADS, "--parallel", "4"] + list(extra),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=1800)
    finally:
        os.unlink(path)
    out = [json.loads(x) for x in p.stdout.decode().splitlines() if x.strip()]
    if len(out) != len(lines):
        sys.exit("check_grammar: %s: %d results for %d requests (exit %d): %s"
                 % (model, len(out), len(lines), p.returncode, p.stderr.decode()[-500:]))
    by_id = {r.get("id"): r for r in out}
    return [by_id[ln["id"]] for ln in lines]


def spm_model(work):
    d = os.path.join(work, "spm")
    shutil.copytree(SPM_DIR, d)
    with gzip.open(os.path.join(SPM_TOK, "tokenizer.json.gz")) as src, \
            open(os.path.join(d, "tokenizer.json"), "wb") as dst:
        dst.write(src.read())
    shutil.copy(os.path.join(SPM_TOK, "tokenizer_config.json"), d)
    return d


def exact(name, model, only=None):
    ref = json.load(open(os.path.join(REFS, name + ".json"), encoding="utf-8"))
    lines, want = [], []
    refused = 0
    for case in ref["cases"]:
        if only is not None and case["name"] not in only:
            continue
        if "runs" not in case:
            refused += 1
            continue
        for k, run in enumerate(case["runs"]):
            ln = {"id": "%s#%d" % (case["name"], k), "prompt_ids": run["prompt_ids"], "max_tokens": ref["steps"]}
            ln["json_schema" if case["kind"] == "json_schema" else "grammar"] = case["text"]
            lines.append(ln)
            want.append((case, run))
    if only is not None and len(want) + refused < len(only):
        fail("%s: QUICK_CASES names a case tests/refs/grammar/%s.json lacks: %s"
             % (name, name, sorted(only - {c["name"] for c in ref["cases"]})))
    got = batch(model, lines, ["--exact"])
    same = 0
    for (case, run), r in zip(want, got):
        label = "%s: %s (%s)" % (name, r["id"], case["kind"])
        if "error" in r:
            fail("%s: %s" % (label, r["error"]))
            continue
        ids = r["ids"]
        if ids == run["ids"] and r["stop_reason"] == run["stop"]:
            same += 1
            continue
        i = next((i for i, (a, b) in enumerate(zip(ids, run["ids"])) if a != b), min(len(ids), len(run["ids"])))
        gap = run["gaps"][i] if i < len(run["gaps"]) else None
        fail("%s: first difference at step %d of %d (llmgen %s, xgrammar %s; HF gap there %s); stop %s vs %s"
             % (label, i, len(run["ids"]), ids[i:i + 3], run["ids"][i:i + 3], gap, r["stop_reason"], run["stop"]))
    print("%s: %d of %d constrained runs token for token equal to transformers + xgrammar %s (%d cases "
          "xgrammar refuses skipped)" % (name, same, len(lines), ref["versions"]["xgrammar"], refused))


def speculation_and_interactive():
    """--draft-lookup (speculative greedy decoding) with a grammar gives the reference ids; -i constrains
    every reply."""
    ref = json.load(open(os.path.join(REFS, "smollm2.json"), encoding="utf-8"))
    same, drafted, cases = 0, 0, [c for c in ref["cases"] if "runs" in c and (FULL or c["name"] in SPEC_CASES)]
    for case in cases:
        run = case["runs"][0]
        p = subprocess.run([LLMGEN, "-m", MODEL, "--exact", "-t", THREADS, "--prompt-ids",
                            ",".join(map(str, run["prompt_ids"])), "-n", str(ref["steps"]), "--json", "--draft-lookup",
                            "--json-schema" if case["kind"] == "json_schema" else "--grammar", case["text"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        j = json.loads(p.stdout) if p.returncode == 0 else {}
        if j.get("ids") != run["ids"] or j.get("stop_reason") != run["stop"]:
            fail("--draft-lookup %s: exit %d, ids %s, want %s: %s"
                 % (case["name"], p.returncode, j.get("ids"), run["ids"], p.stderr.decode()[-300:]))
            continue
        same += 1
        drafted += j["timings"]["drafted_tokens"]
    if not drafted:
        fail("--draft-lookup: no draft was run in %d cases (the check proves nothing)" % len(cases))
    print("--draft-lookup: %d of %d cases give the reference ids (%d ids drafted)" % (same, len(cases), drafted))
    p = subprocess.run([LLMGEN, "-m", MODEL, "-i", "-t", THREADS, "--grammar", 'root ::= "yes" | "no"'],
                       input=b"Is Paris in France?\nIs the sea dry?\n", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    replies = p.stdout.decode().split("\n")
    if p.returncode or len(replies) != 3 or replies[2] or any(r not in ("yes", "no") for r in replies[:2]):
        fail("-i --grammar: exit %d, output %r (want a yes or no line per turn)" % (p.returncode, p.stdout.decode()))
    else:
        print("-i --grammar: each turn's reply is in the grammar (%s)" % ", ".join(replies[:2]))


def llama_cpp_grammars():
    names = sorted(f for f in os.listdir(GRAMMARS) if f.endswith(".gbnf"))
    if not names:
        fail("no grammars in %s (make grammars)" % GRAMMARS)
    lines = [{"id": f, "prompt_ids": [1, 2], "max_tokens": 1,
              "grammar": open(os.path.join(GRAMMARS, f), encoding="utf-8").read()} for f in names]
    got = batch(MODEL, lines)
    ok = [r["id"] for r in got if "error" not in r]
    for r in got:
        if "error" in r:
            fail("llama.cpp grammar %s does not parse: %s" % (r["id"], r["error"]))
    print("llama.cpp grammars: %d of %d parse (%s)" % (len(ok), len(names), " ".join(ok)))


def fast_schemas():
    cases = [s for s in json.load(open(CASES, encoding="utf-8"))["schemas"] if FULL or s["name"] in QUICK_SCHEMAS]
    prompts = FAST_PROMPTS if FULL else FAST_PROMPTS[:1]
    lines = []
    for s in cases:
        for k, p in enumerate(prompts):
            lines.append({"id": "%s#%d" % (s["name"], k), "prompt": p % s["prompt"], "chat": True,
                          "max_tokens": FAST_TOKENS, "json_schema": s["schema"]})
    got = batch(MODEL, lines)
    schema_of = {s["name"]: s["schema"] for s in cases}
    good, cut = 0, []
    for r in got:
        name = r["id"].split("#")[0]
        if "error" in r:
            fail("fast %s: %s" % (r["id"], r["error"]))
            continue
        if r["stop_reason"] != "eos":
            if not FULL:  # the quick schemas complete: a run to the limit is a change
                fail("fast %s: stopped by %s, not by the complete grammar: %r"
                     % (r["id"], r["stop_reason"], r["text"][-80:]))
            cut.append(r)
            continue
        try:
            v = json.loads(r["text"])
            jsonschema.validate(v, schema_of[name], format_checker=jsonschema.FormatChecker())
            good += 1
        except (ValueError, jsonschema.ValidationError) as e:
            fail("fast %s: %r: %s" % (r["id"], r["text"][:200], str(e).split("\n")[0]))
    print("fast mode: %d of %d outputs (%d schemas x %d prompts) complete; %d of them parse and validate with "
          "jsonschema %s" % (len(lines) - len(cut), len(lines), len(cases), len(prompts), good, version("jsonschema")))
    for r in cut:
        print("  %s ran to the %d-token limit (incomplete, not validated): ...%r"
              % (r["id"], FAST_TOKENS, r["text"][-40:]))


def bad_input():
    for args, want, code in (
            (["--grammar", 'root ::= "a" b'], "grammar: line 1, column 14: rule 'b' is used but not defined", 1),
            (["--json-schema", '{"type": "integer", "minimum": 0}'], "unsupported keyword 'minimum'", 1),
            (["--json-schema", '{"type": '], "json schema: line 1", 1),
            (["--grammar", "root ::= x", "--json-object"], "give only one of --grammar", 1),
            (["--grammar-file", "/nonexistent/g.gbnf"], "--grammar-file: cannot open", 3)):
        p = subprocess.run([LLMGEN, "-m", MODEL, "-p", "x", "-n", "2"] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        err = p.stderr.decode()
        if p.returncode != code or want not in err or err.count("\n") != 1:
            fail("bad input %s: exit %d, stderr %r (want exit %d, one line with %r)" % (args, p.returncode, err, code,
                                                                                       want))
    print("bad input: one line on stderr, exit 1 (3 for a missing file)")


def main():
    for p in (MODEL, GRAMMARS):
        if not os.path.exists(p):
            sys.exit("check_grammar: %s is missing (make model grammars)" % p)
    exact("smollm2", MODEL, None if FULL else QUICK_CASES)
    with tempfile.TemporaryDirectory() as work:
        exact("spm", spm_model(work))
    speculation_and_interactive()
    llama_cpp_grammars()
    fast_schemas()
    bad_input()
    if failures:
        print("%d failures" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
