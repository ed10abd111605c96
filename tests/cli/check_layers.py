#!/usr/bin/env python3
"""The layer rules of src/ (README, "Where things are"), checked on the source text.

src/ is a stack of folders, lowest first (the Makefile's SRC_DIRS):

    base  <  quant, grammar  <  kernels, formats  <  model  <  run  <  cli  <  serve

with the tokenizer library (vendor-free-tokenizer/) beside quant. A file may include a header of, or
call a function defined in, its own folder or a folder of a lower rank; never a folder of its own
rank or above. On top of that:
  - the public header src/llmgen.h is not reached by quant, kernels or formats (they see pointers,
    sizes and a dtype, not the API's types);
  - the tokenizer library includes nothing of src/;
  - cli/ reaches the library only through src/llmgen.h: of src/ it includes nothing but llmgen.h,
    base/ and its own folder;
  - inside model/: the matmul plan reaches neither the model, the forward pass nor the repacker; the
    repacker does not reach the forward pass, nor the forward pass the repacker;
  - only cli/ prints or exits: no file outside it names stdout, stderr or stdin, or calls printf,
    puts, putchar, perror, exit, _exit, abort or getenv;
  - no circle: a unit is a file's stem (foo.c with foo.h); an edge is an include of the unit's
    header or a call of a function a header declares and the unit's .c defines (a name followed by "(" inside a body,
    outside comments and strings; a prototype, or a function pointer stored in a table, is not a
    call). No set of units under src/
    reaches itself.
Exits 1 with one line per violation. Standard library only.
"""
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOK = "vendor-free-tokenizer"
RANK = {"base": 0, "quant": 1, "grammar": 1, TOK: 1, "kernels": 2, "formats": 2, "model": 3, "run": 4, "cli": 5, "serve": 6}
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
OUTPUT = re.compile(r"\b(stdout|stderr|stdin)\b|\b(printf|puts|putchar|perror|exit|_exit|abort|getenv)\s*\(")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "_Static_assert", "static_assert"}


def blank(text):
    """The text with comments, string and character literals replaced by spaces (lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def scoped(code):
    """(name, brace depth, is a definition) of each name followed by "(": at depth 0 a prototype or
    a definition (its ")" followed by "{"), inside braces a call. An `extern "C" {` opens no scope."""
    code = re.sub(r'extern\s*"\s*"\s*\{', " ", code)
    depth, at, out = 0, 0, []
    for m in CALL.finditer(code):
        seg = code[at:m.start()]
        depth += seg.count("{") - seg.count("}")
        at = m.start()
        body = False
        if depth == 0:
            i, level = m.end(), 1
            while i < len(code) and level:
                level += {"(": 1, ")": -1}.get(code[i], 0)
                i += 1
            rest = code[i:i + 200].lstrip()
            body = rest.startswith("{") or rest.startswith("__attribute__") and "{" in rest.split(";")[0]
        if m.group(1) not in KEYWORDS:
            out.append((m.group(1), depth, body))
    return out


def called(code):
    """Names called inside braces (function bodies, and inline functions of headers)."""
    return {n for n, depth, _ in scoped(code) if depth > 0}


def folder(rel):
    """The layer of a repository path: the folder under src/, TOK, or "api" for src/llmgen.h."""
    parts = rel.split("/")
    if parts[0] == TOK:
        return TOK
    return parts[1] if len(parts) > 2 else "api"


def files():
    out = {}
    for top in ("src", TOK):
        for d, _, names in os.walk(os.path.join(REPO, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    p = os.path.join(d, n)
                    out[os.path.relpath(p, REPO)] = p
    return out


def resolve(src, name, known):
    """The repository path a quoted include names: the including file's folder first, then the
    -I directories (src and the tokenizer library), as the compiler looks; None if not ours."""
    for base in (os.path.dirname(src), "src", TOK):
        p = os.path.normpath(os.path.join(base, name))
        if p in known:
            return p
    return None


def check(text):
    """The violations in a tree given as {repository path: file text}, and a summary line."""
    known = text
    code = {rel: blank(t) for rel, t in text.items()}
    includes = {rel: [r for r in (resolve(rel, n, known) for n in INC.findall(text[rel])) if r] for rel in known}
    unit = {rel: os.path.splitext(rel)[0] for rel in known}

    declared = set()  # functions a header declares at file scope: what other files may call
    for rel in known:
        if rel.endswith(".h"):
            declared.update(n for n, depth, body in scoped(code[rel]) if depth == 0 and not body)
    definer = {}  # declared function name -> the unit whose .c defines it
    for rel in known:
        if rel.endswith(".c"):
            for n, depth, body in scoped(code[rel]):
                if depth == 0 and body and n in declared:
                    definer.setdefault(n, unit[rel])
    calls = {rel: sorted({definer[n] for n in called(code[rel]) if n in definer and definer[n] != unit[rel]})
             for rel in known}

    bad = []

    def reach(rel):
        seen, todo = set(), list(includes[rel])
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                todo.extend(includes[x])
        return seen

    # 1. folder ranks, on includes and calls
    for rel in sorted(known):
        me = folder(rel)
        if me == "api":
            continue
        targets = [(h, "includes") for h in includes[rel]] + [(u + ".c", "calls into") for u in calls[rel]]
        for t, how in targets:
            other = folder(t)
            if other == me or other == "api":
                continue
            if me == TOK or other == TOK and RANK[me] <= RANK[TOK] or other != TOK and RANK[other] >= RANK[me]:
                bad.append("%s %s %s: %s/ may not reach %s/ (ranks %d, %d)" % (rel, how, t, me, other, RANK[me],
                                                                                 RANK[other]))
    # 2. the specific arrows
    api_banned = [k for k in known if folder(k) in ("quant", "kernels", "formats")]
    rules = [  # (files a rule applies to, headers they must not reach, why)
        (api_banned, ["src/llmgen.h"], "quant, kernels and formats see pointers, sizes and a dtype, not the API"),
        (["src/model/plan.c", "src/model/plan.h"], ["src/model/model.h", "src/model/forward.h", "src/model/repack.h"],
         "the matmul plan sits below forward, model and repack"),
        (["src/model/repack.c", "src/model/repack.h"], ["src/model/forward.h"],
         "the repacker walks the plan, not the forward pass"),
        (["src/model/forward.c", "src/model/forward.h"], ["src/model/repack.h"],
         "the forward pass runs by the plan, not the repacker"),
    ]
    cli_banned = [k for k in known if k.startswith("src/") and k.endswith(".h") and folder(k) not in ("cli", "base", "api")]
    rules.append(([k for k in known if folder(k) == "cli"], cli_banned, "the CLI reaches the library only through llmgen.h"))
    for who, banned, why in rules:
        for f in who:
            for h in sorted(reach(f) & set(banned)):
                bad.append("%s reaches %s: %s" % (f, h, why))
    # 3. only the CLI prints or exits
    for rel in sorted(known):
        if folder(rel) in ("cli", "api"):
            continue
        for m in OUTPUT.finditer(code[rel]):
            line = code[rel].count("\n", 0, m.start()) + 1
            bad.append("%s:%d names %s: only src/cli/ prints, reads the environment or exits" %
                       (rel, line, m.group(1) or m.group(2)))
    # 4. no circle among the units under src/ (Tarjan's strongly connected components)
    edges = {}
    for rel in known:
        if rel.startswith("src/"):
            e = edges.setdefault(unit[rel], set())
            e.update(unit[h] for h in includes[rel] if h.startswith("src/"))
            e.update(u for u in calls[rel] if u.startswith("src/"))
            e.discard(unit[rel])
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    for comp in sccs:
        bad.append("circle among %s" % ", ".join(comp))

    n_edges = sum(len(e) for e in edges.values())
    return bad, "%d files, %d units under src/, %d edges" % (len(known), len(edges), n_edges)


# Violations planted in a copy of the tree, each of which the check must report (or it checks nothing):
# ({file: text appended}, a part of the line expected)
PLANTS = [
    ({"src/formats/gguf.c": '\n#include "cli/cli.h"\n'}, "formats/ may not reach cli/"),
    ({"src/kernels/scalar.c": '\n#include "llmgen.h"\n'}, "reaches src/llmgen.h"),
    ({"src/model/plan.c": '\n#include "forward.h"\n'}, "the matmul plan sits below"),
    ({"src/cli/verify.c": '\n#include "run/generate.h"\n'}, "only through llmgen.h"),
    ({"src/model/arch.c": '\nvoid planted(void) { printf("x"); }\n'}, "names printf"),
    ({"src/run/sampler.c": '\nvoid planted(void) { exit(1); }\n'}, "names exit"),
    ({"vendor-free-tokenizer/bpe.c": '\n#include "base/util.h"\n'}, "may not reach base/"),
    ({"src/base/util.c": '\n#include "threads.h"\n', "src/base/threads.c": '\n#include "util.h"\n'},
     "circle among src/base/threads, src/base/util"),
    ({"src/run/draft.c": '\nvoid planted(void) { llmgen_generate(0, 0, 0, 0, 0, 0); }\n'},
     "circle among src/run/draft, src/run/generate"),
]


def main():
    text = {}
    for rel, path in files().items():
        with open(path, encoding="utf-8") as f:
            text[rel] = f.read()
    bad, summary = check(text)
    for line in bad:
        print(line)
    missed = 0
    for adds, want in PLANTS:
        planted = dict(text)
        for rel, add in adds.items():
            planted[rel] = text[rel] + add
        if not any(want in line for line in check(planted)[0]):
            print("planted %s and not reported: want a line with %r" % (adds, want))
            missed += 1
    print("layers: %s, %d violations; %d of %d planted violations reported" %
          (summary, len(bad), len(PLANTS) - missed, len(PLANTS)))
    return 1 if bad or missed else 0


if __name__ == "__main__":
    sys.exit(main())
