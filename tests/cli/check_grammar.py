#!/usr/bin/env python3
"""Structured output (--grammar, --json-schema, batch "grammar" / "json_schema") against transformers +
xgrammar and Python's jsonschema. `make test` runs the quick part; `make regress-grammar` runs --full.

Usage: check_grammar.py [--full]

1. Exact: cases of tests/refs/grammar/*.json (HF transformers + xgrammar's logits processor, made by
   tests/gen/make_grammar_refs.py): llmgen --exact --batch with the same prompt ids, grammar or schema
   and max_tokens, and "no_close" (xgrammar has no closing rule), gives the same ids token for token and
   stops the same way ("eos": the grammar was complete and the end-of-sequence id won; "length"). Every
   case on the tiny SentencePiece byte-fallback fixture (tests/fixtures/tiny-grammar-spm-bf16 +
   tokenizers/mistral-v1); on the default model the QUICK_CASES (--full: every case).
   The same lines with the default closing rule: where the reference ended ("eos") with the budget
   never binding (after each of its ids, the bytes of the rest of its text fit in the ids left: the
   rule cannot have changed a pick), the same ids and no closed pick; every JSON Schema output parses
   as JSON and validates.
2. --draft-lookup with a grammar gives the same ids as without, with --no-close (the reference's) and
   with the closing rule (QUICK: SPEC_CASES, --full: every default-model case), and runs drafts; -i
   constrains each reply.
3. llama.cpp's own grammars (.cache/grammars/llama.cpp, `make grammars`) all parse (the ones xgrammar
   accepts are also cases of step 1).
4. Fast mode, the default model, greedy: JSON Schemas of tests/gen/grammar_cases.json, chat-wrapped;
   every output must parse as JSON and validate with jsonschema (the tools venv of `make fixtures` has
   it when this interpreter lacks it), formats by FORMATS.
   The closing rule completes the outputs that would run to the FAST_TOKENS limit (the 135M model
   repeats itself inside a number, a string or whitespace, which the language allows). Quick: the
   QUICK_SCHEMAS with one prompt, of which the CLOSE_SCHEMAS would run to the limit without the rule
   (they must show closed picks; a budget of CLOSE_TOKENS); --full: every schema with 3 prompts.
5. Bad input: a grammar or schema that does not parse is one line on stderr with exit 1.

Environment: LLMGEN (binary), LLMGEN_CACHE (default .cache), LLMGEN_THREADS (default 2). Exits 1 on any
failure.
"""
import copy
import datetime
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

# Formats as JSON Schema 2020-12 (the schemas' draft) defines them: jsonschema's checker for that draft. It
# checks time and date-time only when rfc3339-validator is installed; without it, the standard library's ISO
# 8601 parser checks their fields and ranges, with RFC 3339's required offset (a leap second, :60, is refused).
FORMATS = copy.deepcopy(jsonschema.Draft202012Validator.FORMAT_CHECKER)
if "time" not in FORMATS.checkers:
    @FORMATS.checks("time", raises=ValueError)
    def rfc3339_time(s):
        return not isinstance(s, str) or datetime.time.fromisoformat(s).tzinfo is not None

    @FORMATS.checks("date-time", raises=ValueError)
    def rfc3339_date_time(s):
        return not isinstance(s, str) or (s[10:11] == "T" and datetime.datetime.fromisoformat(s).tzinfo is not None)

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
CLOSE_SCHEMAS = {"time", "min-items", "recursive-tree"}
CLOSE_TOKENS = 96  # their quick budget: greedy, they run past it too
QUICK_SCHEMAS = {"deep-10", "long-enum", "unicode-enum", "exp-number", "nested-3", "array-of-objects",
                 "pattern-phone", "pattern-alt", "one-of", "date-time"} | CLOSE_SCHEMAS

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


def rest_bytes(tokenizer, runs):
    """For each run, an upper bound of the bytes of its text after each of its ids: the text of every
    prefix from `--detokenize --batch` (JSON: a dangling byte of a split character reads as U+FFFD,
    3 bytes, so the prefix may count 2 bytes more per U+FFFD, which only raises the bound)."""
    lines = []
    for k, ids in enumerate(runs):
        lines += [{"id": "%d:%d" % (k, i), "prompt_ids": ids[:i]} for i in range(1, len(ids) + 1)]
    if not lines:
        return []
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write("".join(json.dumps(ln) + "\n" for ln in lines))
        path = f.name
    try:
        p = subprocess.run([LLMGEN, "--tokenizer", tokenizer, "--detokenize", "--batch", path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    finally:
        os.unlink(path)
    text = {r["id"]: r["text"] for r in map(json.loads, p.stdout.decode().splitlines())}
    if p.returncode or len(text) != len(lines):
        sys.exit("check_grammar: --detokenize --batch: exit %d: %s" % (p.returncode, p.stderr.decode()[-300:]))
    out = []
    for k, ids in enumerate(runs):
        full = len(text["%d:%d" % (k, len(ids))].encode())
        out.append([full - len(text["%d:%d" % (k, i)].encode()) + 2 * text["%d:%d" % (k, i)].count("\ufffd")
                    for i in range(1, len(ids) + 1)])
    return out


def exact(name, model, only=None):
    """Returns {case name: the ids of its first run with the closing rule}."""
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
    got = batch(model, [dict(ln, no_close=True) for ln in lines], ["--exact"])
    same = 0
    for (case, run), r in zip(want, got):
        label = "%s: %s (%s)" % (name, r["id"], case["kind"])
        if "error" in r:
            fail("%s: %s" % (label, r["error"]))
            continue
        ids = r["ids"]
        if ids == run["ids"] and r["stop_reason"] == run["stop"] and r["closed_picks"] == 0:
            same += 1
            continue
        i = next((i for i, (a, b) in enumerate(zip(ids, run["ids"])) if a != b), min(len(ids), len(run["ids"])))
        gap = run["gaps"][i] if i < len(run["gaps"]) else None
        fail("%s: first difference at step %d of %d (llmgen %s, xgrammar %s; HF gap there %s); stop %s vs %s"
             % (label, i, len(run["ids"]), ids[i:i + 3], run["ids"][i:i + 3], gap, r["stop_reason"], run["stop"]))
    print("%s: %d of %d constrained runs (--no-close) token for token equal to transformers + xgrammar %s (%d "
          "cases xgrammar refuses skipped)" % (name, same, len(lines), ref["versions"]["xgrammar"], refused))

    # the closing rule: equal where it cannot bind, and complete JSON everywhere
    got = batch(model, lines, ["--exact"])
    eos = [k for k, (case, run) in enumerate(want) if run["stop"] == "eos"]
    rest = dict(zip(eos, rest_bytes(model, [want[k][1]["ids"] for k in eos])))
    unbound = same_closed = parsed = closed = 0
    n_json = sum(case["kind"] == "json_schema" for case, run in want)
    for k, ((case, run), r) in enumerate(zip(want, got)):
        label = "%s: %s (%s), closing" % (name, r["id"], case["kind"])
        if "error" in r:
            fail("%s: %s" % (label, r["error"]))
            continue
        closed += r["closed_picks"] > 0
        if k in rest and all(b <= ref["steps"] - i - 1 for i, b in enumerate(rest[k])):
            unbound += 1
            if r["ids"] == run["ids"] and r["stop_reason"] == run["stop"] and r["closed_picks"] == 0:
                same_closed += 1
            else:
                fail("%s: the budget never binds on the reference, yet ids %s (%d closed picks), want %s"
                     % (label, r["ids"], r["closed_picks"], run["ids"]))
        if case["kind"] == "json_schema":
            try:
                jsonschema.validate(json.loads(r["text"]), json.loads(case["text"]),
                                    format_checker=FORMATS)
                parsed += 1
            except (ValueError, jsonschema.ValidationError) as e:
                fail("%s: %r (stop %s, %d closed picks): %s"
                     % (label, r["text"][-80:], r["stop_reason"], r["closed_picks"], str(e).split("\n")[0]))
    print("%s, closing rule: %d of %d runs where the reference's budget never binds equal it; %d of %d JSON "
          "outputs parse and validate; %d of %d runs closed" % (name, same_closed, unbound, parsed, n_json, closed,
                                                                len(lines)))
    return {r["id"].split("#")[0]: r["ids"] for r in got if r["id"].endswith("#0") and "ids" in r}


def speculation_and_interactive(closing):
    """--draft-lookup (speculative greedy decoding) with a grammar gives the ids of plain decoding: with
    --no-close the reference's, with the closing rule those of exact() (closing: case -> ids); -i
    constrains every reply."""
    ref = json.load(open(os.path.join(REFS, "smollm2.json"), encoding="utf-8"))
    cases = [c for c in ref["cases"] if "runs" in c and (FULL or c["name"] in SPEC_CASES)]
    same, drafted, n_closed = 0, 0, 0
    for case in cases:
        run = case["runs"][0]
        for mode, want in (("--no-close", run["ids"]), ("closing", closing.get(case["name"]))):
            p = subprocess.run([LLMGEN, "-m", MODEL, "--exact", "-t", THREADS, "--prompt-ids",
                                ",".join(map(str, run["prompt_ids"])), "-n", str(ref["steps"]), "--json",
                                "--draft-lookup", "--json-schema" if case["kind"] == "json_schema" else "--grammar",
                                case["text"]] + (["--no-close"] if mode == "--no-close" else []),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
            j = json.loads(p.stdout) if p.returncode == 0 else {}
            if j.get("ids") != want or (mode == "--no-close" and j.get("stop_reason") != run["stop"]):
                fail("--draft-lookup %s %s: exit %d, ids %s, want %s: %s"
                     % (mode, case["name"], p.returncode, j.get("ids"), want, p.stderr.decode()[-300:]))
                continue
            same += 1
            drafted += j["timings"]["drafted_tokens"]
            n_closed += j["closed_picks"] > 0
    if not drafted:
        fail("--draft-lookup: no draft was run in %d cases (the check proves nothing)" % len(cases))
    print("--draft-lookup: %d of %d runs (%d cases, --no-close and closing; %d closed) give the ids of plain "
          "decoding (%d ids drafted)" % (same, 2 * len(cases), len(cases), n_closed, drafted))
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
                          "max_tokens": CLOSE_TOKENS if s["name"] in CLOSE_SCHEMAS and not FULL else FAST_TOKENS,
                          "json_schema": s["schema"]})
    got = batch(MODEL, lines)
    schema_of = {s["name"]: s["schema"] for s in cases}
    good, closed = 0, []
    for r in got:
        name = r["id"].split("#")[0]
        if "error" in r:
            fail("fast %s: %s" % (r["id"], r["error"]))
            continue
        if r["closed_picks"]:
            closed.append(r)
        elif name in CLOSE_SCHEMAS and not FULL:
            fail("fast %s: no closed pick (stop %s): this output ran to the limit without the closing rule"
                 % (r["id"], r["stop_reason"]))
        try:
            v = json.loads(r["text"])
            jsonschema.validate(v, schema_of[name], format_checker=FORMATS)
            good += 1
        except (ValueError, jsonschema.ValidationError) as e:
            fail("fast %s: %r (stop %s, %d closed picks): %s"
                 % (r["id"], r["text"][-200:], r["stop_reason"], r["closed_picks"], str(e).split("\n")[0]))
    print("fast mode: %d of %d outputs (%d schemas x %d prompts) parse and validate with jsonschema %s; %d end "
          "by the grammar (eos), %d were closed within their budget (%d picks changed)"
          % (good, len(lines), len(cases), len(prompts), version("jsonschema"),
             sum(r.get("stop_reason") == "eos" for r in got), len(closed), sum(r["closed_picks"] for r in closed)))
    for r in closed:
        print("  %s closed (%d picks, stop %s): ...%r" % (r["id"], r["closed_picks"], r["stop_reason"],
                                                          r["text"][-40:]))


def bad_input():
    for args, want, code in (
            (["--grammar", 'root ::= "a" b'], "grammar: line 1, column 14: rule 'b' is used but not defined", 1),
            (["--json-schema", '{"type": "integer", "minimum": 3, "maximum": 2}'], "no integer satisfies minimum", 1),
            (["--json-schema", '{"properties": {"a": {"$ref": "#"}}, "required": ["a"]}'], "no instance is finite", 1),
            (["--json-schema", '{"type": "array", "uniqueItems": true}', "--strict-schema"],
             "at #: 'uniqueItems' cannot be enforced by a grammar (--strict-schema)", 1),
            (["--json-schema", ""], "--json-schema: empty", 1),
            (["--strict-schema"], "--strict-schema needs --json-schema", 1),
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
    # a keyword left unenforced: one warning line naming it, and the run goes on; a boolean schema is JSON
    p = subprocess.run([LLMGEN, "-m", MODEL, "-p", "x", "-n", "8", "--json-schema",
                        '{"type": "array", "items": {"type": "integer"}, "uniqueItems": true, "not": {}}'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    err = p.stderr.decode()
    want = "llmgen: warning: json schema: not enforced (a grammar cannot express it): not (at #), uniqueItems (at #)"
    if p.returncode or err.count("\n") != 1 or want not in err:
        fail("unenforced keywords: exit %d, stderr %r (want exit 0 and one line %r)" % (p.returncode, err, want))
    p = subprocess.run([LLMGEN, "-m", MODEL, "-p", "x", "-n", "8", "--json-schema", "true"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if p.returncode or p.stderr:
        fail("--json-schema true: exit %d, stderr %r (want a run under the schema true)" % (p.returncode, p.stderr))
    line = '{"prompt": "x", "max_tokens": 4, "json_schema": {"type": "array", "uniqueItems": true}%s}\n'
    p = subprocess.run([LLMGEN, "-m", MODEL, "--batch", "-"], input=(line % "" + line % ', "strict_schema": true').encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    res = [json.loads(l) for l in p.stdout.decode().splitlines()]
    if len(res) != 2 or "error" in res[0] or "uniqueItems" not in res[1].get("error", "") or \
            "stdin:1: json schema: not enforced" not in p.stderr.decode():
        fail("--batch strict_schema: %r, stderr %r" % (res, p.stderr))
    print("unenforced keywords: one warning line naming them (--strict-schema, \"strict_schema\": an error)")


def main():
    for p in (MODEL, GRAMMARS):
        if not os.path.exists(p):
            sys.exit("check_grammar: %s is missing (make model grammars)" % p)
    closing = exact("smollm2", MODEL, None if FULL else QUICK_CASES | SPEC_CASES)
    with tempfile.TemporaryDirectory() as work:
        exact("spm", spm_model(work))
    speculation_and_interactive(closing)
    llama_cpp_grammars()
    fast_schemas()
    bad_input()
    if failures:
        print("%d failures" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
