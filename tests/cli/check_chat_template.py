#!/usr/bin/env python3
"""`llmgen chat-template` against transformers (tests/refs/chat/templates.json, made by
tests/gen/gen_chat_template_refs.py): every template llama.cpp ships in the pinned sdist
that transformers renders without tools, the eleven families' template files, and the
templates of the models in models.txt, each with the conversations stored in the refs
(one user turn, system + user, three turns ending with a user turn, a conversation ending
with an assistant turn without the generation prompt, whitespace, non-ASCII).

Each case must be byte-equal to transformers' text; where transformers raised, llmgen must
exit 6 (and print the template's message when it called raise_exception). Templates whose
text differs from the one the references were made from (sha256) fail: regenerate with
`make chat-refs`. Also checks the render time of a three-turn conversation (parse included,
CPU time, best of 5 rounds, build/tok_driver chat-bench) is under 1 ms for every template, and the
CLI's errors (bad messages file, missing template, unsupported construct with its line).

Prints "N/M templates rendered exactly" and exits non-zero on any difference.
Usage: tests/cli/check_chat_template.py [-v]    (after make llmgen build/tok_driver chat-templates)
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.path.join(REPO, "llmgen")
DRIVER = os.path.join(REPO, "build", "tok_driver")
CACHE = os.path.join(REPO, ".cache")
REFS = os.path.join(REPO, "tests", "refs", "chat", "templates.json")
EXIT_TEMPLATE = 6


def run(args):
    p = subprocess.run([LLMGEN] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def template_path(entry):
    f = entry["file"]
    if f.startswith("llama.cpp/"):
        return os.path.join(CACHE, "chat-templates", f)
    return os.path.join(REPO, "tests", f)


def check_template(name, entry, refs, tmp, verbose):
    """Returns (exact, messages): exact is True when every case matches."""
    problems = []
    if "file" in entry:
        path = template_path(entry)
        with open(path, encoding="utf-8") as f:
            if hashlib.sha256(f.read().encode("utf-8")).hexdigest() != entry["sha256"]:
                return False, ["%s: the template differs from the one the references were made from "
                               "(make chat-refs)" % path]
        base = ["chat-template", "--template-file", path, "--bos-token", refs["bos_token"], "--eos-token", refs["eos_token"]]
    else:
        base = ["chat-template", "-m", os.path.join(CACHE, entry["model"])]
    cases = {c["name"]: c for c in refs["cases"]}
    for r in entry["results"]:
        case = cases[r["case"]]
        mpath = os.path.join(tmp, r["case"] + ".json")
        with open(mpath, "w", encoding="utf-8") as f:
            json.dump(case["messages"], f, ensure_ascii=False)
        args = base + ["--messages", mpath, "--date", refs["date"]]
        if "vars" in r:
            args += ["--chat-template-kwargs", json.dumps(r["vars"])]
        if not case["add_generation_prompt"]:
            args.append("--no-generation-prompt")
        rc, out, err = run(args)
        if "text" in r:
            want = r["text"].encode("utf-8")
            if rc != 0 or out != want:
                problems.append("%s [%s%s]: rc %d %s\n      got  %r\n      want %r" % (
                    name, r["case"], " %s" % json.dumps(r["vars"]) if "vars" in r else "", rc, err.strip()[:300],
                    out[:400], want[:400]))
        else:
            msg = r["error"]
            ok = rc == EXIT_TEMPLATE and not out
            if msg.startswith("TemplateError: "):
                ok = ok and ("raise_exception: " + msg[len("TemplateError: "):]) in err
            if not ok:
                problems.append("%s [%s]: transformers raised %r; llmgen rc %d, stderr %r, stdout %r" % (
                    name, r["case"], msg[:200], rc, err.strip()[:200], out[:200]))
    return not problems, problems


def check_speed(refs, verbose):
    """Parse + render of a three-turn conversation under 1 ms for every template file."""
    worst, fails = (0.0, None), 0
    for name, entry in refs["templates"].items():
        if "file" not in entry:
            continue
        p = subprocess.run([DRIVER, "chat-bench", template_path(entry), "50"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        if p.returncode != 0:
            # templates that raise for this conversation (no system role) are timed by the cases above
            continue
        us = float(p.stdout)
        if us > worst[0]:
            worst = (us, name)
        if us >= 1000:
            fails += 1
            print("FAIL  render time %s: %.0f us for a three-turn conversation (limit 1000)" % (name, us))
    print("%s  render time of a three-turn conversation (parse included, CPU time): at most %.0f us (%s)" % (
        "ok  " if not fails else "FAIL", worst[0], worst[1]))
    return fails


def check_snippets(tmp, verbose):
    """Each construct of the subset against jinja2 in transformers' environment
    (tests/refs/chat/jinja-snippets.json, tests/gen/gen_jinja_refs.py)."""
    with open(os.path.join(REPO, "tests", "refs", "chat", "jinja-snippets.json"), encoding="utf-8") as f:
        refs = json.load(f)
    vpath, tpath = os.path.join(tmp, "vars.json"), os.path.join(tmp, "snippet.jinja")
    with open(vpath, "w", encoding="utf-8") as f:
        json.dump(refs["vars"], f, ensure_ascii=False)
    env = dict(os.environ, TZ="UTC")
    bad = 0
    for r in refs["snippets"]:
        with open(tpath, "w", encoding="utf-8", newline="") as f:
            f.write(r["template"])
        p = subprocess.run([DRIVER, "jinja", tpath, vpath], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           timeout=60)
        err = p.stderr.decode("utf-8", "replace")
        if "text" in r:
            ok = p.returncode == 0 and p.stdout == r["text"].encode("utf-8")
        else:
            ok = p.returncode == 1 and not p.stdout and err.count("\n") == 1
            if r["error"].startswith("TemplateError: "):
                ok = ok and ("raise_exception: " + r["error"][len("TemplateError: "):]) in err
        if not ok:
            bad += 1
            print("FAIL  snippet %r\n      got  %r %s\n      want %r" % (
                r["template"][:120], p.stdout[:300], err.strip()[:200], r.get("text", r.get("error"))[:300]))
    n = len(refs["snippets"])
    print("%s  %d/%d Jinja snippets render as jinja2 %s in transformers' environment" % (
        "ok  " if not bad else "FAIL", n - bad, n, refs["jinja2_version"]))
    return 1 if bad else 0


def check_generation_template_file(refs):
    """--chat --chat-template-file renders the prompt with that template (echoed by --echo)."""
    name = "llama.cpp:Qwen-Qwen2.5-7B-Instruct.jinja"  # uses neither bos_token nor eos_token
    entry = refs["templates"].get(name)
    case = next((c for c in refs["cases"] if c["name"] == "system+user"), None)
    want = next((r.get("text") for r in entry["results"] if r["case"] == "system+user"), None) if entry else None
    if not case or not want:
        print("FAIL  --chat-template-file: no reference for %s" % name)
        return 1
    model = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    rc, out, err = run(["-m", model, "--chat", "--chat-template-file", template_path(entry), "--system",
                        case["messages"][0]["content"], "-p", case["messages"][1]["content"], "-n", "1", "--echo",
                        "--date", refs["date"]])
    if rc != 0 or not out.startswith(want.encode("utf-8")):
        print("FAIL  --chat --chat-template-file: rc %d, stderr %r, echo %r, want it to start with %r" % (
            rc, err, out[:300], want))
        return 1
    print("ok    --chat --chat-template-file renders the prompt with that template (%s)" % name)
    return 0


def check_errors(tmp):
    """One clear line and a documented exit code for bad input."""
    fails = 0
    good = os.path.join(tmp, "good.json")
    with open(good, "w") as f:
        json.dump([{"role": "user", "content": "hi"}], f)
    tpl = os.path.join(tmp, "t.jinja")
    cases = [
        ("unsupported statement names itself and its line", "line 1\n{% include 'x' %}", [], EXIT_TEMPLATE,
         "line 2: the 'include' statement is not supported"),
        ("unknown filter names itself", "{{ messages | frobnicate }}", [], EXIT_TEMPLATE,
         "the filter 'frobnicate' is not supported"),
        ("unclosed block", "{% if true %}x", [], EXIT_TEMPLATE, "missing {% endif %}"),
        ("raise_exception message", "{{ raise_exception('No system role, sorry') }}", [], EXIT_TEMPLATE,
         "raise_exception: No system role, sorry"),
        ("runaway loop is stopped", "{% set l = range(2000) %}{% for i in l %}{% for j in l %}{% endfor %}"
         "{% endfor %}", [], EXIT_TEMPLATE, "loop iterations"),
        ("runaway recursion is stopped", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", [],
         EXIT_TEMPLATE, "recursion deeper"),
        ("runaway output is stopped", "{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s }}{% endfor %}",
         [], EXIT_TEMPLATE, "output limit"),
        ("runaway work is stopped", "{% set l = range(100000) | list %}{% for i in range(3000) %}{{ -1 in l }}"
         "{% endfor %}", [], EXIT_TEMPLATE, "units of work"),
        ("bad --date", "{{ 1 }}", ["--date", "tomorrow"], 1, "--date"),
        ("--chat-template-kwargs not an object", "{{ 1 }}", ["--chat-template-kwargs", "[1]"], 1,
         "--chat-template-kwargs: expected a JSON object"),
    ]
    for what, text, extra, code, needle in cases:
        with open(tpl, "w") as f:
            f.write(text)
        rc, out, err = run(["chat-template", "--template-file", tpl, "--messages", good] + extra)
        if rc != code or needle not in err or err.count("\n") != 1:
            fails += 1
            print("FAIL  chat-template error: %s: rc %d (want %d), stderr %r" % (what, rc, code, err))
    bad = os.path.join(tmp, "bad.json")
    for what, content, code, needle in [
            ("messages not an array", '{"role": "user"}', 1, "expected a JSON array"),
            ("message without content", '[{"role": "user"}]', 1, "message 1 is not an object"),
            ("invalid JSON", '[{"role": ', 1, "--messages"),
    ]:
        with open(bad, "w") as f:
            f.write(content)
        rc, out, err = run(["chat-template", "--template-file", tpl, "--messages", bad])
        if rc != code or needle not in err:
            fails += 1
            print("FAIL  chat-template error: %s: rc %d, stderr %r" % (what, rc, err))
    for what, args, code, needle in [
            ("missing template file", ["--template-file", os.path.join(tmp, "none.jinja"), "--messages", good], 3,
             "cannot open"),
            ("no template nor model", ["--messages", good], 1, "usage"),
    ]:
        rc, out, err = run(["chat-template"] + args)
        if rc != code or needle not in err:
            fails += 1
            print("FAIL  chat-template error: %s: rc %d, stderr %r" % (what, rc, err))
    print("%s  chat-template: bad input gives one line and a documented exit code" % ("ok  " if not fails else "FAIL"))
    return fails


def main():
    verbose = "-v" in sys.argv
    with open(REFS, encoding="utf-8") as f:
        refs = json.load(f)
    fails = 0
    exact = 0
    with tempfile.TemporaryDirectory() as tmp:
        bad_templates = []
        for name, entry in refs["templates"].items():
            ok, problems = check_template(name, entry, refs, tmp, verbose)
            if ok:
                exact += 1
                if verbose:
                    print("ok    %s" % name)
            else:
                bad_templates.append(name)
                for p in problems[:3 if not verbose else None]:
                    print("FAIL  " + p)
        for name, entry in refs["not_rendered"].items():
            # transformers fails on every conversation without tools: so must llmgen (exit 6)
            entry = dict(entry, results=[{"case": c["name"], "error": entry["error"]} for c in refs["cases"][:1]])
            ok, problems = check_template(name, entry, refs, tmp, verbose)
            if not ok:
                bad_templates.append(name)
                for p in problems[:3]:
                    print("FAIL  " + p)
        tried = len(refs["templates"])
        thinking = sum(any("enable_thinking" in r.get("vars", {}) for r in e["results"]) for e in refs["templates"].values())
        effort = sum(any("reasoning_effort" in r.get("vars", {}) for r in e["results"]) for e in refs["templates"].values())
        print("%s  %d/%d templates rendered exactly as transformers %s (its cases, each with enable_thinking false "
              "and true for the %d that read it, and reasoning_effort low and high with developer messages and "
              "thinking fields for the %d that read that; %d more that transformers "
              "cannot render without tools fail in llmgen too)" % (
                  "ok  " if exact == tried and len(bad_templates) == tried - exact else "FAIL", exact, tried,
                  refs["transformers_version"], thinking, effort, len(refs["not_rendered"])))
        if bad_templates:
            print("      differ: " + ", ".join(bad_templates))
            fails += 1
        fails += check_snippets(tmp, verbose)
        fails += check_generation_template_file(refs)
        fails += check_speed(refs, verbose)
        fails += check_errors(tmp)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
