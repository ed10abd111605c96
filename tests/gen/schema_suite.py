#!/usr/bin/env python3
"""The official JSON-Schema-Test-Suite (Debian's json-schema-test-suite 2.0.0, draft 7: the required
keywords and optional/format) with llmgen's JSON Schema grammar as a validator, beside xgrammar's.

Usage: schema_suite.py [--xgrammar] [--suite DIR] [--driver PATH] [--keywords K,...] [-v]

Each test group's schema is compiled by build/schema_driver (tests/schema_driver.c: json_schema_to_gbnf,
then grammar_parse) and each case's instance is matched, serialized twice: compactly
(json.dumps separators "," ":") and with the whitespace of json.dumps's default (", " ": "), which
xgrammar's default grammar (any_whitespace) allows as well; non-ASCII characters are written as UTF-8.
A case agrees when the grammar accepts both texts exactly when the suite says the instance is valid.
A schema the tool refuses counts as compiled = 0 and agrees on none of its cases.

xgrammar 0.2.8's side: with --xgrammar (run in the reference venv, tests/gen/requirements-ref.txt) it is
computed here (Grammar.from_json_schema with its defaults, a GrammarMatcher per text,
terminate_without_stop_token, accepted when accept_string and is_terminated) and written to
tests/refs/grammar/schema-suite-xgrammar.json (`make schema-suite-refs`); without, it is read from there.

Prints one line per keyword: schemas, compiled by llmgen / xgrammar, cases, agreeing llmgen / xgrammar,
then the totals. Exits 1 if a schema xgrammar compiles is refused by llmgen, or if llmgen agrees on
fewer cases than xgrammar in total.
"""
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REFS = os.path.join(REPO, "tests", "refs", "grammar", "schema-suite-xgrammar.json")
SUITE = "/usr/share/json-schema-test-suite/tests/draft7"


def cases(suite, keywords=None):
    """[(keyword, group index, schema, [(description, data, valid)])] of the draft-7 suite."""
    out = []
    files = sorted(glob.glob(os.path.join(suite, "*.json"))) + sorted(glob.glob(os.path.join(suite, "optional", "format", "*.json")))
    for f in files:
        kw = os.path.splitext(os.path.basename(f))[0]
        if "/optional/format/" in f:
            kw = "format/" + kw
        if keywords and kw not in keywords:
            continue
        with open(f, encoding="utf-8") as fh:
            for gi, g in enumerate(json.load(fh)):
                out.append((kw, gi, g["schema"], [(t["description"], t["data"], t["valid"]) for t in g["tests"]]))
    return out


def texts(data):
    return [json.dumps(data, separators=(",", ":"), ensure_ascii=False), json.dumps(data, ensure_ascii=False)]


def run_llmgen(driver, groups):
    lines = []
    for _, _, schema, tests in groups:
        inst = [t for _, d, _ in tests for t in texts(d)]
        lines.append(json.dumps({"schema": schema, "instances": inst}, ensure_ascii=False))
    p = subprocess.run([driver], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=600)
    if p.returncode:
        sys.exit("schema_suite: %s failed: %s" % (driver, p.stderr.strip()))
    res = [json.loads(l) for l in p.stdout.splitlines()]
    if len(res) != len(groups):
        sys.exit("schema_suite: %d results for %d schemas" % (len(res), len(groups)))
    return [{"compiled": r["ok"], "error": r.get("error", ""), "warn": r.get("warn", ""),
             "accept": [r["accept"][2 * i] and r["accept"][2 * i + 1] for i in range(len(g[3]))] if r["ok"] else None,
             "accept_any": [r["accept"][2 * i] or r["accept"][2 * i + 1] for i in range(len(g[3]))] if r["ok"] else None}
            for r, g in zip(res, groups)]


def run_xgrammar(groups):
    import xgrammar as xgr
    from importlib.metadata import version
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)
    out = []
    for kw, gi, schema, tests in groups:
        try:
            g = xgr.Grammar.from_json_schema(json.dumps(schema))
            cg = compiler.compile_grammar(g)
        except Exception as e:  # refused
            out.append({"keyword": kw, "group": gi, "compiled": False, "error": str(e).strip().splitlines()[-1][:200]})
            continue
        acc = []
        for _, d, _ in tests:
            both = []
            for t in texts(d):
                m = xgr.GrammarMatcher(cg, terminate_without_stop_token=True)
                both.append(bool(m.accept_string(t)) and m.is_terminated())
            acc.append(both[0] and both[1])
        out.append({"keyword": kw, "group": gi, "compiled": True, "accept": acc})
    meta = {"versions": {"xgrammar": version("xgrammar"), "apache-tvm-ffi": version("apache-tvm-ffi"),
                         "json-schema-test-suite": "2.0.0 (Debian json-schema-test-suite)"},
            "settings": "Grammar.from_json_schema(json.dumps(schema)) (defaults: any_whitespace, strict_mode); "
                        "GrammarMatcher(compiled, terminate_without_stop_token=True).accept_string(text) and "
                        "is_terminated(), for the compact and the default json.dumps text of each instance "
                        "(ensure_ascii=False); accept = both accepted",
            "suite": "draft7/*.json and draft7/optional/format/*.json"}
    return meta, out


def main():
    args = sys.argv[1:]
    verbose = "-v" in args
    suite = args[args.index("--suite") + 1] if "--suite" in args else SUITE
    driver = args[args.index("--driver") + 1] if "--driver" in args else os.path.join(REPO, "build", "schema_driver")
    keywords = set(args[args.index("--keywords") + 1].split(",")) if "--keywords" in args else None
    if not os.path.isdir(suite):
        sys.exit("schema_suite: %s: no such directory (apt-get install json-schema-test-suite)" % suite)
    groups = cases(suite, keywords)
    mine = run_llmgen(driver, groups)
    if "--xgrammar" in args:
        meta, xg = run_xgrammar(groups)
        if not keywords:
            os.makedirs(os.path.dirname(REFS), exist_ok=True)
            with open(REFS, "w", encoding="utf-8") as f:
                json.dump(dict(meta, results=xg), f, indent=1, ensure_ascii=False)
                f.write("\n")
    else:
        with open(REFS, encoding="utf-8") as f:
            ref = json.load(f)
        byk = {(r["keyword"], r["group"]): r for r in ref["results"]}
        xg = [byk.get((kw, gi), {"compiled": False, "error": "not in the reference"}) for kw, gi, _, _ in groups]
    rows = {}
    bad = []
    for (kw, gi, schema, tests), m, x in zip(groups, mine, xg):
        r = rows.setdefault(kw, [0, 0, 0, 0, 0, 0])
        r[0] += 1
        r[1] += m["compiled"]
        r[2] += x["compiled"]
        r[3] += len(tests)
        if m["compiled"]:
            r[4] += sum(a == t[2] for a, t in zip(m["accept"], tests))
        if x["compiled"]:
            r[5] += sum(a == t[2] for a, t in zip(x["accept"], tests))
        if x["compiled"] and not m["compiled"]:
            bad.append("%s #%d: xgrammar compiles it, llmgen refuses: %s" % (kw, gi, m["error"]))
        if verbose and m["compiled"]:
            for a, t in zip(m["accept"], tests):
                if a != t[2]:
                    print("  %s #%d %s: valid=%s llmgen=%s %s" % (kw, gi, t[0], t[2], a, m["warn"] and "(" + m["warn"] + ")"))
        if verbose and not m["compiled"]:
            print("  %s #%d refused: %s" % (kw, gi, m["error"]))
    print("%-28s %7s %8s %8s %6s %8s %8s" % ("keyword", "schemas", "llmgen", "xgrammar", "cases", "llmgen", "xgrammar"))
    tot = [0] * 6
    for kw in sorted(rows):
        r = rows[kw]
        tot = [a + b for a, b in zip(tot, r)]
        print("%-28s %7d %8d %8d %6d %8d %8d" % ((kw,) + tuple(r)))
    print("%-28s %7d %8d %8d %6d %8d %8d" % (("total",) + tuple(tot)))
    print("(schemas: compiled by each; cases: agreeing with the suite's valid / invalid, compact and spaced text)")
    for b in bad:
        print("FAIL " + b)
    if tot[4] < tot[5]:
        print("FAIL llmgen agrees on %d cases, xgrammar on %d" % (tot[4], tot[5]))
        bad.append("agreement")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
