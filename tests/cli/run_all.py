#!/usr/bin/env python3
"""Regression runner (`make regress`): runs every tests/cli/check_*.py as its own process.

Usage: run_all.py [-v] [NAME_SUBSTRING...]

Prints one PASS/FAIL line per check with its wall time; a failing check's output follows its line
(-v prints every check's output). Exits 1 if any check failed, 0 otherwise. Standard library only.
Each check runs from the repository root and must exit non-zero on failure.
"""
import glob
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = int(os.environ.get("LLMGEN_CHECK_TIMEOUT", "900"))  # seconds per check


def run(path, verbose):
    name = os.path.basename(path)
    t = time.time()
    try:
        p = subprocess.run([sys.executable, path], cwd=REPO, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=TIMEOUT)
        out, ok, why = p.stdout.decode("utf-8", "replace"), p.returncode == 0, "exit %d" % p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        ok, why = False, "timed out after %d s" % TIMEOUT
    dt = time.time() - t
    print("%s  %-28s %7.1f s%s" % ("PASS" if ok else "FAIL", name, dt, "" if ok else "  (%s)" % why),
          flush=True)
    if out.strip() and (verbose or not ok):
        for line in out.rstrip("\n").split("\n"):
            print("      " + line)
        sys.stdout.flush()
    return ok


def main():
    args = sys.argv[1:]
    verbose = "-v" in args
    wanted = [a for a in args if a != "-v"]
    checks = sorted(glob.glob(os.path.join(REPO, "tests", "cli", "check_*.py")))
    if wanted:
        checks = [c for c in checks if any(w in os.path.basename(c) for w in wanted)]
    if not checks:
        print("run_all: no tests/cli/check_*.py matched", file=sys.stderr)
        return 1
    t = time.time()
    failed = [c for c in checks if not run(c, verbose)]
    print("%d of %d checks passed in %.1f s" % (len(checks) - len(failed), len(checks), time.time() - t))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
