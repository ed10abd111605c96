#!/usr/bin/env python3
"""Progress lines (issue 55) and a new user's rough edges that need a terminal or a slow file. Standard library.

  - --batch, verify and perplexity draw one line on stderr redrawn in place ("\\r", erase to the end of the
    line) when stderr is a terminal (a pty here), and erase it at the end; with stderr to a file they write
    no progress at all; --progress writes plain lines to the file (for logs); --no-progress draws nothing
    on the terminal either; stdout is the same bytes in every case;
  - a model load that takes over about 2 s (the model path is a FIFO nobody writes to for 3 s) draws
    "loading PATH (2s)" on the terminal, and nothing when stderr is a file;
  - -i: a turn too long for the context is an error for that turn, and the chat goes on;
  - make demo installs only what running needs (no Criterion, GNU parallel, groff or curl).
Environment: LLMGEN (binary, default ./llmgen), LLMGEN_CACHE (default .cache)."""
import json
import os
import pty
import select
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
REFS = os.path.join(REPO, "tests", "refs", "quality", "verify-smollm2.jsonl")
TEXT = "/usr/share/common-licenses/GPL-3"
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL  " + msg, flush=True)


def ok(msg):
    print("ok    " + msg, flush=True)


def on_pty(args, stdin=b"", feed=None):
    """(exit, stdout, stderr as the terminal showed it) with stderr on a pty."""
    master, slave = pty.openpty()
    p = subprocess.Popen([LLMGEN] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    if feed:
        threading.Thread(target=feed, daemon=True).start()
    got = []

    def drain():
        while True:
            try:
                r, _, _ = select.select([master], [], [], 0.2)
                if r:
                    b = os.read(master, 65536)
                    if not b:
                        break
                    got.append(b)
                elif p.poll() is not None:
                    break
            except OSError:
                break
    t = threading.Thread(target=drain)
    t.start()
    out, _ = p.communicate(stdin, timeout=600)
    t.join(10)
    os.close(master)
    return p.returncode, out, b"".join(got).decode("utf-8", "replace")


def to_file(args, stdin=b""):
    p = subprocess.run([LLMGEN] + args, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def strip_timings(out):
    """stdout without the wall times --batch lines carry (they differ from run to run)."""
    lines = []
    for l in out.splitlines():
        try:
            j = json.loads(l)
            j.pop("timings", None)
            lines.append(json.dumps(j, sort_keys=True))
        except ValueError:
            lines.append(l.decode("utf-8", "replace"))
    return lines


def check_lines():
    batch = b"".join(b'{"id": %d, "prompt": "Count to %d", "max_tokens": 6}\n' % (i, i) for i in range(4))
    cases = [
        ("--batch", ["-m", MODEL, "--batch", "-", "-t", "1"], batch, "batch: 4/4 requests"),
        ("verify", ["verify", REFS, "-m", MODEL, "--exact", "-t", "1"], b"", "verify: "),
        ("perplexity", ["perplexity", "-m", MODEL, "-f", TEXT, "-c", "64", "--chunks", "3", "-t", "1"], b"",
         "perplexity: chunk 3/3"),
    ]
    for name, args, stdin, want in cases:
        rc, out, term = on_pty(args, stdin)
        rc2, out2, err2 = to_file(args, stdin)
        rc3, out3, err3 = to_file(args + ["--progress"], stdin)
        rc4, out4, term4 = on_pty(args + ["--no-progress"], stdin)
        outs = [strip_timings(o) for o in (out, out2, out3, out4)]
        same = rc == rc2 == rc3 == rc4 and outs[0] == outs[1] == outs[2] == outs[3]
        if not same:
            fail("%s: exit / stdout differ with progress on a pty, a file, --progress, --no-progress: %s"
                 % (name, [rc, rc2, rc3, rc4]))
        elif want not in term or "\r\x1b[K" not in term or not term.rstrip("\n").endswith("\x1b[K") and \
                want not in term.splitlines()[-1]:
            fail("%s: the terminal shows %r (want a redrawn line with %r, erased at the end)" % (name, term[-300:], want))
        elif any(x in err2 for x in ("batch: ", "verify: ", "perplexity: chunk", "\r")):
            fail("%s: progress written to a file without --progress: %r" % (name, err2[-200:]))
        elif want not in err3 or "\x1b" in err3 or "\r" in err3:
            fail("%s --progress to a file: %r (want plain lines with %r)" % (name, err3[-300:], want))
        elif "\x1b[K" in term4 or want in term4:
            fail("%s --no-progress on a pty: %r" % (name, term4[-200:]))
        else:
            ok("%s: one redrawn line on a terminal (%r), none in a file, plain lines with --progress, none with "
               "--no-progress; stdout the same" % (name, [l for l in term.split("\r") if want in l][-1].strip()[:70]))


def check_slow_load():
    before = len(failures)
    with tempfile.TemporaryDirectory() as d:
        fifo = os.path.join(d, "slow.gguf")
        for where in ("pty", "file"):
            os.mkfifo(fifo)

            def feed():  # llmgen waits in open() until a writer comes, then refuses the FIFO
                time.sleep(3.5)
                try:
                    with open(fifo, "wb") as f:
                        f.write(b"not a model")
                except BrokenPipeError:
                    pass
            if where == "pty":
                rc, out, term = on_pty(["-m", fifo, "-p", "x", "-n", "1"], feed=feed)
            else:
                threading.Thread(target=feed, daemon=True).start()
                rc, out, term = to_file(["-m", fifo, "-p", "x", "-n", "1"])
            os.unlink(fifo)
            if rc == 0 or (where == "pty") != ("loading %s (" % fifo in term):
                fail("slow load on a %s: exit %d, stderr %r" % (where, rc, term[-300:]))
            elif where == "file" and term.count("\n") != 1:
                fail("slow load to a file: %r (want the one error line)" % term)
        if len(failures) == before:
            ok("a model load over 2 s: 'loading PATH (Ns)' redrawn on a terminal, erased before the error; "
               "nothing in a file")


def check_interactive_turn():
    long_turn = "word " * 200
    p = subprocess.run([LLMGEN, "-m", MODEL, "-i", "-c", "64", "-n", "4", "-t", "1"],
                       input=("%s\nSay hi.\n" % long_turn).encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    err = p.stderr.decode()
    if p.returncode or "this turn is skipped" not in err or not p.stdout.strip():
        fail("-i with a turn longer than the context: exit %d, stdout %r, stderr %r (want the turn skipped, the "
             "next answered, exit 0)" % (p.returncode, p.stdout[-80:], err))
    else:
        ok("-i: a turn that does not fit is skipped with one line (%s), the next turn is answered"
           % err.strip().splitlines()[0][:90])


def check_demo_deps():
    # as a user's shell runs it: not as a sub-make of make test (which prints "Entering directory" lines)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    p = subprocess.run(["make", "--no-print-directory", "-n", "demo"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    first = next((l for l in p.stdout.decode().splitlines() if "for p in" in l), "")
    extra = [x for x in ("libcriterion-dev", "parallel", "groff-base", "curl", "json-schema-test-suite", " time")
             if x in first]
    if p.returncode or "libpcre2-dev" not in first or extra:
        fail("make demo's packages: %r (test-only: %s)" % (first[:300], extra))
    else:
        ok("make demo installs only what running needs (no Criterion, GNU parallel, groff, curl)")


def main():
    for p in (MODEL, REFS, TEXT):
        if not os.path.exists(p):
            sys.exit("check_progress: %s is missing" % p)
    check_lines()
    check_slow_load()
    check_interactive_turn()
    check_demo_deps()
    print("check_progress: %d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
