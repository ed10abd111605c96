#!/usr/bin/env python3
"""Regression runner (`make regress`): runs every tests/cli/check_*.py as its own process.

Usage: run_all.py [-v] [-j N] [NAME_SUBSTRING...]

Runs N checks at a time (default 1; `make regress` passes -j 2): the longest first, from the wall
times of the last run kept in .cache/check-times.json (a fresh clone reuses its .cache), so the
last ones to finish are short. Prints one PASS/FAIL line per check as it ends, with its wall time
and the CPU time of the check and all it ran; a failing check's output follows its line (-v prints
every check's output). Exits 1 if any check failed, 0 otherwise. Standard library only. Each check runs from the repository root,
must exit non-zero on failure, and must not depend on running alone: its temporary files are its
own, and a time it asserts is CPU time or has room for a shared machine.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = int(os.environ.get("LLMGEN_CHECK_TIMEOUT", "900"))  # seconds per check
TIMES = os.path.join(os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache")), "check-times.json")


def run(path):
    """(ok, why, output, wall s, cpu s) of one check. The check is reaped with wait4, so its
    CPU time is its own even while other checks run beside it."""
    t = time.time()
    p = subprocess.Popen([sys.executable, path], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    timed_out = []

    def kill():
        timed_out.append(1)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(TIMEOUT, kill)
    timer.start()
    out = p.stdout.read()
    p.stdout.close()
    _, status, usage = os.wait4(p.pid, 0)
    timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    why = "timed out after %d s" % TIMEOUT if timed_out else "exit %d" % p.returncode
    return (not timed_out and p.returncode == 0, why, out.decode("utf-8", "replace"), time.time() - t,
            usage.ru_utime + usage.ru_stime)


def main():
    args = sys.argv[1:]
    verbose = "-v" in args
    jobs = 1
    if "-j" in args:
        i = args.index("-j")
        jobs = int(args[i + 1])
        del args[i:i + 2]
    wanted = [a for a in args if a != "-v"]
    checks = sorted(glob.glob(os.path.join(REPO, "tests", "cli", "check_*.py")))
    if wanted:
        checks = [c for c in checks if any(w in os.path.basename(c) for w in wanted)]
    if not checks:
        print("run_all: no tests/cli/check_*.py matched", file=sys.stderr)
        return 1
    try:
        with open(TIMES) as f:
            last = json.load(f)
    except (OSError, ValueError):
        last = {}
    todo = sorted(checks, key=lambda c: -last.get(os.path.basename(c), 0.0))
    lock = threading.Lock()
    failed, times = [], dict(last)

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                path = todo.pop(0)
            ok, why, out, dt, cpu = run(path)
            name = os.path.basename(path)
            with lock:
                times[name] = dt
                if not ok:
                    failed.append(name)
                print("%s  %-28s %7.1f s  cpu %6.1f s%s" % ("PASS" if ok else "FAIL", name, dt, cpu,
                                                            "" if ok else "  (%s)" % why), flush=True)
                if out.strip() and (verbose or not ok):
                    for line in out.rstrip("\n").split("\n"):
                        print("      " + line)
                    sys.stdout.flush()

    t = time.time()
    threads = [threading.Thread(target=worker) for _ in range(max(1, jobs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    print("%d of %d checks passed in %.1f s (%d at a time)" % (len(checks) - len(failed), len(checks),
                                                               time.time() - t, max(1, jobs)))
    try:
        os.makedirs(os.path.dirname(TIMES), exist_ok=True)
        with open(TIMES + ".tmp", "w") as f:
            json.dump(times, f, indent=1, sort_keys=True)
        os.replace(TIMES + ".tmp", TIMES)
    except OSError:
        pass
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
