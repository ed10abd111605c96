#!/usr/bin/env python3
"""Extract the GBNF grammars llama.cpp ships (vendor/llama.cpp/grammars/*.gbnf in the pinned PyPI
llama-cpp-python source distribution, shared with `make peer` and `make chat-templates`) into
CACHE/grammars/llama.cpp/.

Usage: fetch_grammars.py CACHE        (run by `make grammars`)

Other projects' files: read from the cache by tests/cli/check_grammar.py and by the reference
generator tests/gen/make_grammar_refs.py, never committed. Standard library only.
"""
import os
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch_chat_templates as T  # noqa: E402  (the sdist's name, version, sha256 and download)

PREFIX = "llama_cpp_python-%s/vendor/llama.cpp/grammars/" % T.VERSION


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fetch_grammars.py CACHE")
    cache = sys.argv[1]
    out = os.path.join(cache, "grammars", "llama.cpp")
    stamp = os.path.join(out, ".ok")
    if os.path.exists(stamp):
        return
    sdist = os.path.join(cache, "peer", "dl", T.SDIST)
    if not os.path.exists(sdist):
        # the chat-template fetcher downloads and checks the sdist
        saved = sys.argv
        sys.argv = [saved[0], cache]
        stamp_t = os.path.join(cache, "chat-templates", "llama.cpp", ".ok")
        if os.path.exists(stamp_t):
            os.remove(stamp_t)
        T.main()
        sys.argv = saved
    got = T.sha256_file(sdist)
    if got != T.SHA256:
        sys.exit("fetch: %s: sha256 %s, expected %s" % (sdist, got, T.SHA256))
    os.makedirs(out, exist_ok=True)
    n = 0
    with tarfile.open(sdist, "r:gz") as tar:
        for m in tar.getmembers():
            rest = m.name[len(PREFIX):]
            if m.isfile() and m.name.startswith(PREFIX) and rest.endswith(".gbnf") and "/" not in rest:
                with open(os.path.join(out, rest), "wb") as f:
                    f.write(tar.extractfile(m).read())
                n += 1
    if not n:
        sys.exit("fetch: no grammars under %s in %s" % (PREFIX, sdist))
    with open(stamp, "w") as f:
        f.write("%s %d grammars\n" % (T.SDIST, n))
    print("fetch: %d grammars from %s into %s" % (n, T.SDIST, out), file=sys.stderr)


if __name__ == "__main__":
    main()
