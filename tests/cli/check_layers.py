#!/usr/bin/env python3
"""The arrows that must never exist between llmgen's modules, checked on the #include graph.

Every "..." include of src/, src/kernels/ and vendor-free-tokenizer/ is followed transitively;
a file may not reach a header of a layer above it:
  - formats (gguf, safetensors) know nothing of models, plans, kernels' tables or the CLI;
  - kernels know nothing of models, plans, configs or files;
  - the matmul plan sits below the forward pass, the model and the repacker (reaches none of them);
  - the repacker does not reach the forward pass, nor the forward pass the repacker;
  - the tokenizer library includes nothing from src/;
and the header graph has no cycle. Exits 1 with one line per violation. Standard library only.
"""
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIRS = ["src"] + ["src/" + d for d in ("base", "quant", "kernels", "formats", "grammar", "model", "run", "cli")] + ["vendor-free-tokenizer"]
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def files():
    out = {}
    for d in DIRS:
        for n in sorted(os.listdir(os.path.join(REPO, d))):
            if n.endswith((".c", ".h")):
                out[os.path.join(d, n)] = os.path.join(REPO, d, n)
    return out


def resolve(src, name, known):
    """The repository path an include of `name` from file `src` names (quotes: the file's own
    directory first, then the -I directories src and vendor-free-tokenizer), or None."""
    for base in [os.path.dirname(src)] + DIRS:
        p = os.path.normpath(os.path.join(base, name))
        if p in known:
            return p
    return None


def main():
    known = files()
    edges = {}
    for rel, path in known.items():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        edges[rel] = [r for r in (resolve(rel, n, known) for n in INC.findall(text)) if r]

    def reach(rel):
        seen, todo = set(), list(edges.get(rel, []))
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                todo.extend(edges.get(x, []))
        return seen

    rules = [  # (files a rule applies to, headers they must not reach, why)
        (["src/formats/gguf.c", "src/formats/gguf.h", "src/formats/safetensors.c", "src/formats/safetensors.h"],
         ["src/model/model.h", "src/model/plan.h", "src/model/forward.h", "src/model/repack.h", "src/kernels/kernels.h", "src/llmgen.h",
          "src/cli/cli.h", "src/cli/options.h"], "formats know nothing of models, kernels or the CLI"),
        ([k for k in known if k.startswith("src/kernels/")],
         ["src/model/model.h", "src/model/plan.h", "src/model/forward.h", "src/model/repack.h", "src/model/config.h", "src/formats/gguf.h",
          "src/formats/safetensors.h", "src/llmgen.h"], "kernels see pointers, sizes and a dtype"),
        (["src/model/plan.c", "src/model/plan.h"], ["src/model/model.h", "src/model/forward.h", "src/model/repack.h"],
         "the matmul plan sits below forward, model and repack"),
        (["src/model/repack.c", "src/model/repack.h"], ["src/model/forward.h"], "the repacker walks the plan, not the forward pass"),
        (["src/model/forward.c", "src/model/forward.h"], ["src/model/repack.h"], "the forward pass runs by the plan, not the repacker"),
        ([k for k in known if k.startswith("vendor-free-tokenizer/")], [k for k in known if k.startswith("src/")],
         "the tokenizer library includes nothing from src/"),
    ]
    bad = 0
    for who, banned, why in rules:
        for f in who:
            for h in sorted(reach(f) & set(banned)):
                print("%s reaches %s: %s" % (f, h, why))
                bad += 1
    for h in (k for k in known if k.endswith(".h")):
        if h in reach(h):
            print("%s includes itself through a cycle" % h)
            bad += 1
    print("layers: %d files, %d violations" % (len(known), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
