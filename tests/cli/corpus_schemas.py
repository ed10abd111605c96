#!/usr/bin/env python3
"""Real-world JSON Schemas (the 26 SchemaStore schemas vendored by check-jsonschema 0.39.0 on PyPI,
`make schema-corpus`): llmgen compiles at least as many as xgrammar 0.2.8 does, and the default model's output
under each (greedy, fast mode, --chat, 384 tokens) validates with Python's jsonschema, or the warning line names
a keyword of every error's schema path. Also the compile time and peak memory of the largest schema and of the
slowest (build/schema_driver in a process of its own). `make regress-schemas` runs it (about 2 minutes; not in
make test).

Usage: corpus_schemas.py [--xgrammar]   (--xgrammar, in the reference venv: compile each with xgrammar 0.2.8
and write tests/refs/grammar/schema-corpus-xgrammar.json; `make schema-corpus-refs`)"""
import glob
import json
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
CORPUS = os.path.join(CACHE, "schema-corpus")
REFS = os.path.join(REPO, "tests", "refs", "grammar", "schema-corpus-xgrammar.json")
LLMGEN = os.path.join(REPO, "llmgen")
DRIVER = os.path.join(REPO, "build", "schema_driver")
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
TOOLS_PY = os.path.join(CACHE, "venv-tools", "bin", "python")


def schemas():
    files = sorted(glob.glob(os.path.join(CORPUS, "*.json")))
    if not files:
        sys.exit("corpus_schemas: no schemas in %s (make schema-corpus)" % CORPUS)
    return files


def xgrammar_refs():
    import xgrammar as xgr
    from importlib.metadata import version
    res = {}
    for f in schemas():
        try:
            xgr.Grammar.from_json_schema(open(f, encoding="utf-8").read())
            res[os.path.basename(f)] = {"compiled": True}
        except Exception as e:
            res[os.path.basename(f)] = {"compiled": False, "error": str(e).strip().splitlines()[-1][:200]}
    with open(os.path.join(CORPUS, ".ok")) as f:
        corpus = f.read().strip()
    with open(REFS, "w", encoding="utf-8") as f:
        json.dump({"versions": {"xgrammar": version("xgrammar")}, "corpus": corpus,
                   "settings": "Grammar.from_json_schema(text) with its defaults", "results": res}, f, indent=1)
        f.write("\n")
    print("xgrammar %s compiles %d of %d" % (version("xgrammar"), sum(r["compiled"] for r in res.values()), len(res)))


def keywords(e):
    """The keywords on an error's schema path and on those of the errors under it (the branches of a
    oneOf / anyOf): it breaks a keyword the warning named if one of them is."""
    ks = {e.validator} | {str(k) for k in e.schema_path}
    for c in e.context or []:
        ks |= keywords(c)
    return ks


def main():
    if "--xgrammar" in sys.argv:
        return xgrammar_refs()
    try:
        import jsonschema
    except ImportError:
        if os.path.exists(TOOLS_PY) and not os.environ.get("LLMGEN_CORPUS_REEXEC"):
            os.environ["LLMGEN_CORPUS_REEXEC"] = "1"
            os.execv(TOOLS_PY, [TOOLS_PY] + sys.argv)
        sys.exit("corpus_schemas: Python's jsonschema is missing (make fixtures builds the tools venv with it)")
    ref = json.load(open(REFS, encoding="utf-8"))["results"]
    fails, ok_llmgen, valid = [], 0, 0
    for f in schemas():
        name = os.path.basename(f)
        schema = json.load(open(f, encoding="utf-8"))
        what = schema.get("title") or name[:-5]
        prompt = "Write a short example of a %s file, as JSON." % what
        t = time.time()
        p = subprocess.run([LLMGEN, "-m", MODEL, "--chat", "-p", prompt, "--json-schema", f, "-n", "384"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        wall = time.time() - t
        err = p.stderr.decode("utf-8", "replace")
        warn = "".join(l for l in err.splitlines() if "warning: json schema" in l)
        named = set(re.findall(r"(?:: |, )([A-Za-z$/]+) \(at ", warn))
        named |= {"if", "then", "else"} if "if/then/else" in named else set()
        if p.returncode:
            fails.append("%s: exit %d: %s" % (name, p.returncode, err.strip()[:300]))
            print("%-28s refused: %s" % (name, err.strip()[:120]))
            continue
        ok_llmgen += 1
        text = p.stdout.decode("utf-8", "replace")
        try:
            inst = json.loads(text)
        except ValueError as e:
            fails.append("%s: not JSON (%s): ...%r" % (name, e, text[-80:]))
            continue
        cls = jsonschema.validators.validator_for(schema)
        errors = list(cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(inst))
        unnamed = [e for e in errors if not keywords(e) & named]
        if not errors:
            valid += 1
        state = "valid" if not errors else "%d errors, all under keywords the warning names" % len(errors) \
            if not unnamed else "INVALID"
        print("%-28s %6.1f s  %5d bytes  %s%s" % (name, wall, len(text), state,
                                                 ("  (unenforced: %s)" % ", ".join(sorted(named))) if named else ""))
        for e in unnamed[:3]:
            fails.append("%s: %s at %s (schema path %s), not named in the warning %r"
                         % (name, e.message[:160], list(e.absolute_path), list(e.schema_path), warn))
    n_xg = sum(r["compiled"] for r in ref.values())
    print("compiled: llmgen %d of %d, xgrammar 0.2.8 %d; outputs valid: %d (the rest break only keywords the warning "
          "named)" % (ok_llmgen, len(schemas()), n_xg, valid))
    if ok_llmgen < n_xg:
        fails.append("llmgen compiles %d, xgrammar %d" % (ok_llmgen, n_xg))
    stats = {}
    for f in schemas():  # compile time and peak memory, each schema in a driver process of its own
        line = json.dumps({"schema": json.load(open(f, encoding="utf-8")), "instances": []}) + "\n"
        p = subprocess.run(["/usr/bin/time", "-f", "%M", DRIVER], input=line.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        r = json.loads(p.stdout)
        stats[f] = (r.get("compile_s", 0.0), r.get("gbnf_bytes", 0), int(p.stderr.split()[-1]) / 1024)
    for label, f in (("largest", max(schemas(), key=os.path.getsize)), ("slowest", max(stats, key=lambda k: stats[k][0]))):
        c, g, m = stats[f]
        print("%s: %s (%.1f MB of schema): compiled in %.2f s to %.1f MB of GBNF, peak RSS %.0f MiB (build/schema_driver)"
              % (label, os.path.basename(f), os.path.getsize(f) / 1e6, c, g / 1e6, m))
    for msg in fails:
        print("FAIL " + msg)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
