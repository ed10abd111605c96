#!/usr/bin/env python3
"""The command line and the library as users meet them (issue 6). Standard library only.

Checks, on the default model (.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf):
  - build/lib_client (links libllmgen.a) and build/lib_client_so (libllmgen.so), which drive
    prefill / decode step / sample by hand, print the same ids as `llmgen --ids --ignore-eos`
    for reference prompts (and pass their own session / misuse self-checks);
  - --json and --batch print JSON that parses and carries the same ids as --ids;
  - same seed and options give byte-identical output across runs and across -t 1 / -t 2;
  - -f FILE, stdin and -p give the same ids; --echo, --stop, --stats behave as documented;
  - `llmgen ... | head -c 20` prints no error, Ctrl-C ends with status 130 and no error;
  - the bad-input table: each row prints exactly one stderr line naming the file or option,
    and exits with the documented code (malformed model files are tests/cli/check_bad_files.py's);
  - the man page renders with groff without warnings and documents every option of --help;
  - `make install PREFIX=...` installs binary, libraries (libllmgen.so.1 with its SONAME, only llmgen_*
    exported), header, llmgen.pc and man page; clients build with pkg-config against the installed tree;
  - a full context keeps what was generated (--json, --batch, text; stop_reason "context", exit 4; -n -1
    exit 0); sampling without --seed draws and reports a seed; threads default to the CPUs the process may use
    (under taskset -c 0: 1, reported by --stats and --json; -t 2 prints one note);
  - src/cli/main.c is under 600 lines with no generation logic; the README's ./llmgen examples run; its
    Performance section is under 80 lines and no line names a work session;
  - valgrind (when installed) reports no leak and no error for a short generation (tiny fixture).
Environment: LLMGEN (binary, default ./llmgen), LLMGEN_CACHE (default .cache).
"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
TINY = os.path.join(REPO, "tests", "fixtures", "tiny-mha-f32")
EXIT = {"ok": 0, "usage": 1, "model": 2, "io": 3, "context": 4, "interrupt": 130}
N = 12  # tokens per generation: enough to compare, small enough to keep this check fast

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL  " + msg, flush=True)


def ok(msg):
    print("ok    " + msg, flush=True)


def run(args, stdin=b"", timeout=120, **kw):
    p = subprocess.run([LLMGEN] + args, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, cwd=REPO, **kw)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def ids_of(out):
    s = out.decode().strip()
    return [int(x) for x in s.split(",")] if s else []


def expect_clean(name, rc, err, want_rc=0):
    if rc != want_rc or err.strip():
        fail("%s: exit %d (want %d), stderr %r" % (name, rc, want_rc, err[:300]))
        return False
    return True


# ---- library client vs CLI ---------------------------------------------------------------------

def check_lib_client(cases):
    for exe, which, modes in [("lib_client", cases[:1] + cases[-1:], ("exact", "fast")),
                              ("lib_client_so", cases[:1], ("exact",))]:
        path = os.path.join(REPO, "build", exe)
        if not os.access(path, os.X_OK):
            fail("build/%s is not built (make build/%s)" % (exe, exe))
            continue
        for c in which:
            ids = ",".join(map(str, c["prompt_ids"]))
            # exact mode must also equal HF; the default (fast) mode must equal the CLI's default
            for mode in modes:
                p = subprocess.run([path, MODEL, str(N), ids, "2", mode], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, cwd=REPO, timeout=300)
                rc, out, err = run(["-m", MODEL, "--prompt-ids", ids, "-n", str(N), "--ignore-eos", "--ids"] +
                                   (["--exact"] if mode == "exact" else []))
                lib = ids_of(p.stdout)
                if p.returncode != 0:
                    fail("%s %s %s: exit %d: %s" % (exe, mode, c["name"], p.returncode, p.stderr.decode()[-500:]))
                elif not expect_clean("cli " + c["name"], rc, err):
                    pass
                elif lib != ids_of(out):
                    fail("%s %s %s: library ids %s != CLI ids %s" % (exe, mode, c["name"], lib, ids_of(out)))
                elif mode == "exact" and lib != c["ids"][:N]:
                    fail("%s exact %s: ids %s != HF reference %s" % (exe, c["name"], lib, c["ids"][:N]))
                else:
                    ok("%s == CLI%s on %s, %s mode (%d ids)" % (exe, " == HF" if mode == "exact" else "", c["name"],
                                                                mode, N))


# ---- --json, --batch, determinism, input sources --------------------------------------------------

def check_json_batch(cases):
    text = "The three primary colors are"
    # exact mode throughout, so the batch's reference-prompt requests can be held to HF's ids
    rc, out, err = run(["-m", MODEL, "-p", text, "-n", str(N), "--ids", "--exact"])
    want = ids_of(out)
    rc2, js, err2 = run(["-m", MODEL, "-p", text, "-n", str(N), "--json", "--exact"])
    try:
        j = json.loads(js.decode())
    except ValueError as e:
        fail("--json output does not parse: %s: %r" % (e, js[:200]))
        return
    rc3, txt, err3 = run(["-m", MODEL, "-p", text, "-n", str(N), "--exact"])
    if expect_clean("--ids", rc, err) and expect_clean("--json", rc2, err2) and expect_clean("text", rc3, err3):
        if j.get("ids") != want:
            fail("--json ids %s != --ids %s" % (j.get("ids"), want))
        elif not j.get("prompt_ids") or j.get("text") + "\n" != txt.decode():
            fail("--json text %r != plain output %r" % (j.get("text"), txt.decode()))
        elif not all(k in j["timings"] for k in ("load_s", "prefill_s", "prompt_tokens_per_s",
                                                 "generation_tokens_per_s", "first_token_s")):
            fail("--json timings incomplete: %s" % j["timings"])
        else:
            ok("--json parses; ids == --ids, text == plain output")
    # batch: one text request, one ids request per reference case, one bad line, a blank line
    lines = [json.dumps({"id": "text", "prompt": text, "max_tokens": N}), ""]
    for c in cases:
        lines.append(json.dumps({"id": c["name"], "prompt_ids": c["prompt_ids"], "max_tokens": N,
                                 "ignore_eos": True}))
    lines.append('{"id": "bad", "prompt": 3}')
    lines.append(json.dumps({"id": "sampled", "prompt": text, "max_tokens": N, "temp": 0.9, "seed": 5}))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "req.jsonl")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        rc, out, err = run(["-m", MODEL, "--batch", path, "--exact"])
        rcs, outs, errs = run(["-m", MODEL, "--batch", "-", "--exact"], stdin=open(path, "rb").read())
    def strip_timings(raw):
        rows = []
        for line in raw.decode().splitlines():
            r = json.loads(line)
            r.pop("timings", None)
            rows.append(r)
        return rows
    try:
        if strip_timings(out) != strip_timings(outs) or rc != rcs:
            fail("--batch FILE and --batch - (stdin) differ")
    except ValueError:
        pass  # reported below
    try:
        res = [json.loads(l) for l in out.decode().splitlines()]
    except ValueError as e:
        fail("--batch output does not parse: %s" % e)
        return
    byid = {r.get("id"): r for r in res}
    problems = []
    if rc != EXIT["usage"]:
        problems.append("exit %d, want %d (first failed request)" % (rc, EXIT["usage"]))
    if len(res) != len(cases) + 3:
        problems.append("%d result lines for %d requests" % (len(res), len(cases) + 3))
    if byid.get("text", {}).get("ids") != want:
        problems.append("text request ids %s != --ids %s" % (byid.get("text", {}).get("ids"), want))
    for c in cases:
        got = byid.get(c["name"], {}).get("ids")
        if got != c["ids"][:N]:
            problems.append("%s: ids %s != reference %s" % (c["name"], got, c["ids"][:N]))
    bad = byid.get("bad", {})
    if bad.get("exit") != EXIT["usage"] or "prompt" not in bad.get("error", "") or bad.get("line") != len(lines) - 1:
        problems.append("bad line reported as %s" % bad)
    rc4, out4, err4 = run(["-m", MODEL, "-p", text, "-n", str(N), "--temp", "0.9", "--seed", "5", "--ids", "--exact"])
    if byid.get("sampled", {}).get("ids") != ids_of(out4):
        problems.append("sampled request ids %s != CLI %s" % (byid.get("sampled", {}).get("ids"), ids_of(out4)))
    if problems:
        fail("--batch: " + "; ".join(problems))
    else:
        ok("--batch (file and stdin) parses; ids == --ids and the references; bad line reported, exit 1")


def check_determinism():
    args = ["-m", MODEL, "-p", "Once upon a time", "-n", "24", "--temp", "0.8", "--top-k", "40", "--top-p",
            "0.95", "--min-p", "0.02", "--repeat-penalty", "1.1", "--seed", "1234"]
    outs = [run(args + ["-t", t]) for t in ("1", "2", "2")]
    if any(o[0] != 0 or o[2] for o in outs):
        fail("sampled runs: %s" % [(o[0], o[2][:200]) for o in outs])
    elif not (outs[0][1] == outs[1][1] == outs[2][1]):
        fail("same seed, different output: %r" % [o[1] for o in outs])
    else:
        other = run(args[:-1] + ["99"])[1]
        if other == outs[0][1]:
            fail("seed 1234 and seed 99 gave the same 24 sampled tokens")
        else:
            ok("same seed: byte-identical output across runs and -t 1 / -t 2 (%d bytes); another seed differs"
               % len(outs[0][1]))
    # The matmuls hand out row pieces to whichever thread is free, so the split
    # changes from run to run: every logit of every step must still be the same
    # bits at any thread count, in both modes (prefill of 40 tokens, then decode).
    prompt = ",".join(str(1 + (i * 7919) % 49000) for i in range(40))
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ([], ["--exact"]):
            dumps = []
            for i, t in enumerate(("1", "2", "3", "2", "3")):
                path = os.path.join(tmp, "l%d" % i)
                rc, _, err = run(["-m", MODEL, "--prompt-ids", prompt, "--ids", "-n", "16", "-t", t,
                                  "--dump-logits", path] + mode)
                with open(path, "rb") as f:  # -t above the CPUs: one note, nothing else
                    quiet = not [l for l in err.splitlines() if not l.startswith("llmgen: note: -t ")]
                    dumps.append(f.read() if rc == 0 and quiet else b"")
            name = "exact" if mode else "fast"
            if not dumps[0] or any(d != dumps[0] for d in dumps):
                fail("%s mode: logits differ between -t 1 / 2 / 3 runs (or a run failed)" % name)
            else:
                ok("%s mode: %d bytes of logits bit-identical over -t 1, 2, 3, 2, 3" % (name, len(dumps[0])))


def check_sources():
    text = "Water boils at"
    base = run(["-m", MODEL, "-p", text, "-n", "8", "--ids"])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "prompt.txt")
        with open(path, "w") as f:
            f.write(text)
        viaf = run(["-m", MODEL, "-f", path, "-n", "8", "--ids"])
    vias = run(["-m", MODEL, "-n", "8", "--ids"], stdin=text.encode())
    viad = run(["-m", MODEL, "-p", "-", "-n", "8", "--ids"], stdin=text.encode())
    if not all(r == base for r in (viaf, vias, viad)) or base[0] != 0:
        fail("-p / -f / stdin / -p - differ: %s" % [base, viaf, vias, viad])
    else:
        ok("-p TEXT, -f FILE, stdin and -p - give the same ids")
    rc, out, err = run(["-m", MODEL, "-p", text, "-n", "8", "--echo"])
    plain = run(["-m", MODEL, "-p", text, "-n", "8"])[1]
    if rc or err or out != text.encode() + plain:
        fail("--echo: %r vs prompt + %r" % (out, plain))
    else:
        ok("--echo prints the prompt then the same completion")
    rc, out, err = run(["-m", MODEL, "-p", text, "-n", "8", "--ids", "--echo"])
    p_ids = json.loads(run(["-m", MODEL, "-p", text, "-n", "1", "--json"])[1])["prompt_ids"]
    if ids_of(out) != p_ids + ids_of(base[1]):
        fail("--ids --echo: %s != prompt ids %s + %s" % (ids_of(out), p_ids, ids_of(base[1])))
    else:
        ok("--ids --echo prints prompt ids then generated ids")


def check_stop_stats():
    args = ["-m", MODEL, "-p", "Count: 1, 2, 3,", "-n", "24", "--ignore-eos"]
    full = run(args)[1].decode()
    rc, out, err = run(args + ["--stop", "7", "--stop", "never-there", "--json"])
    j = json.loads(out)
    if rc or err or "7" not in full:
        fail("--stop setup: rc %d err %r full %r" % (rc, err, full))
    elif j["stop_reason"] != "stop" or j["text"] != full[:full.index("7")]:
        fail("--stop 7: text %r, stop_reason %s; full text %r" % (j["text"], j["stop_reason"], full))
    else:
        rc2, out2, err2 = run(args + ["--stop", "7"])
        if out2.decode() != j["text"] + "\n":
            fail("--stop streamed %r != json text %r" % (out2, j["text"]))
        else:
            ok("--stop: text ends before the stop string (streamed and --json agree)")
    rc, out, err = run(["-m", MODEL, "-p", "Hi", "-n", "4", "--stats"])
    lines = err.strip().split("\n")
    if rc or len(lines) != 1 or not all(k in lines[0] for k in ("load", "tokens/s", "first token", "peak RSS")):
        fail("--stats: rc %d, stderr %r" % (rc, err))
    else:
        ok("--stats: one stderr line: %s" % lines[0][8:])


# ---- pipes and signals ---------------------------------------------------------------------------

def check_pipe_and_sigint():
    with tempfile.TemporaryDirectory() as tmp:
        errf, rcf = os.path.join(tmp, "err"), os.path.join(tmp, "rc")
        cmd = "'%s' -m '%s' -p 'Tell me a long story.' -n 200 --ignore-eos 2>'%s'; echo $? >'%s'" % (
            LLMGEN, MODEL, errf, rcf)
        p = subprocess.run(["sh", "-c", "(%s) | head -c 20" % cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           cwd=REPO, timeout=300)
        err = open(errf).read()
        rc = int(open(rcf).read())
        if len(p.stdout) != 20 or err or p.stderr or rc != 0:
            fail("| head -c 20: %d bytes, llmgen exit %d, stderr %r %r" % (len(p.stdout), rc, err, p.stderr))
        else:
            ok("llmgen | head -c 20: 20 bytes, exit 0, nothing on stderr")
    p = subprocess.Popen([LLMGEN, "-m", MODEL, "-p", "Tell me a long story.", "-n", "2000", "--ignore-eos"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    first = p.stdout.read(1)  # wait for generation to start
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("Ctrl-C: llmgen did not stop within 60 s")
        return
    if p.returncode != EXIT["interrupt"] or err or not first or not out.endswith(b"\n"):
        fail("Ctrl-C: exit %d (want 130), stderr %r, output %r" % (p.returncode, err, (first + out)[-80:]))
    else:
        ok("Ctrl-C: stops after the current token, output ends with a newline, exit 130, no error")


# ---- bad input table ----------------------------------------------------------------------------

def nan_model(tmp):
    """A copy of the tiny f32 fixture whose first f32 tensor starts with NaN."""
    d = os.path.join(tmp, "nan-model")
    shutil.copytree(TINY, d)
    path = os.path.join(d, "model.safetensors")
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        name = sorted(k for k, v in hdr.items() if k != "__metadata__" and v["dtype"] == "F32")[0]
        begin = hdr[name]["data_offsets"][0]
        f.seek(8 + n + begin)
        f.write(struct.pack("<f", float("nan")) * 4)
    return d


def check_bad_inputs():
    tmp = tempfile.mkdtemp()
    try:
        empty_dir = os.path.join(tmp, "empty-dir")
        os.mkdir(empty_dir)
        bad_utf8 = b"caf\xc3 au lait"
        long_prompt = "word " * 50
        unwritable = os.path.join(tmp, "no-such-dir", "logits.bin")
        rows = [
            # (name, args, stdin, exit, text the stderr line must contain)
            ("missing model file", ["-m", os.path.join(tmp, "missing.gguf"), "-p", "x"], b"", "io", "missing.gguf"),
            ("directory without config.json", ["-m", empty_dir, "-p", "x"], b"", "model", "config.json"),
            ("NaN weights", ["-m", nan_model(tmp), "--prompt-ids", "1,2,3", "-n", "2", "--ids"], b"", "model",
             "NaN"),
            ("prompt longer than the context", ["-m", MODEL, "-p", long_prompt, "-c", "16"], b"", "context",
             "context size 16"),
            ("generation past the context", ["-m", MODEL, "-p", "Hi", "-c", "6", "-n", "20", "--ignore-eos"], b"",
             "context", "out of context"),
            ("empty prompt", ["-m", MODEL, "-p", ""], b"", "usage", "empty prompt"),
            ("empty stdin", ["-m", MODEL], b"", "usage", "stdin: empty prompt"),
            ("invalid UTF-8 on stdin", ["-m", MODEL], bad_utf8, "usage", "stdin: invalid UTF-8 at byte 3"),
            ("invalid UTF-8 in --system", ["-m", MODEL, "--chat", "--system", b"ab\xff".decode("utf-8", "surrogateescape"),
                                           "-p", "hi"], b"", "usage", "--system: invalid UTF-8 at byte 2"),
            ("-n 0", ["-m", MODEL, "-p", "x", "-n", "0"], b"", "usage", "--max-tokens"),
            ("-n absurd", ["-m", MODEL, "-p", "x", "-n", "99999999999"], b"", "usage", "--max-tokens"),
            ("-t 0", ["-m", MODEL, "-p", "x", "-t", "0"], b"", "usage", "--threads"),
            ("-t absurd", ["-m", MODEL, "-p", "x", "-t", "100000"], b"", "usage", "--threads"),
            ("-c negative", ["-m", MODEL, "-p", "x", "-c", "-5"], b"", "usage", "--ctx-size"),
            ("-c above the model", ["-m", MODEL, "-p", "x", "-c", "100000"], b"", "usage", "--ctx-size"),
            ("--temp negative", ["-m", MODEL, "-p", "x", "--temp", "-1"], b"", "usage", "--temp"),
            ("--temp nan", ["-m", MODEL, "-p", "x", "--temp", "nan"], b"", "usage", "--temp"),
            ("--top-p above 1", ["-m", MODEL, "-p", "x", "--top-p", "1.5"], b"", "usage", "--top-p"),
            ("--top-k not a number", ["-m", MODEL, "-p", "x", "--top-k", "ten"], b"", "usage", "--top-k"),
            ("--seed negative", ["-m", MODEL, "-p", "x", "--seed", "-1"], b"", "usage", "--seed"),
            ("--repeat-penalty 0", ["-m", MODEL, "-p", "x", "--repeat-penalty", "0"], b"", "usage",
             "--repeat-penalty"),
            ("--prompt-ids garbage", ["-m", MODEL, "--prompt-ids", "1,x"], b"", "usage", "--prompt-ids"),
            ("--prompt-ids out of vocabulary", ["-m", MODEL, "--prompt-ids", "1,999999", "--ids"], b"", "usage",
             "999999"),
            ("--kernels unknown", ["-m", MODEL, "-p", "x", "--kernels", "sse9"], b"", "usage", "--kernels"),
            ("--stop empty", ["-m", MODEL, "-p", "x", "--stop", ""], b"", "usage", "--stop"),
            ("unknown option", ["-m", MODEL, "--frobnicate"], b"", "usage", "--frobnicate"),
            ("missing option value", ["-m", MODEL, "-p"], b"", "usage", "-p"),
            ("no model", ["-p", "x"], b"", "usage", "-m"),
            ("two prompt sources", ["-m", MODEL, "-p", "x", "-f", "y"], b"", "usage", "only one"),
            ("-f missing file", ["-m", MODEL, "-f", os.path.join(tmp, "nope.txt")], b"", "io", "nope.txt"),
            ("--batch missing file", ["-m", MODEL, "--batch", os.path.join(tmp, "nope.jsonl")], b"", "io",
             "nope.jsonl"),
            ("unwritable --dump-logits", ["-m", MODEL, "-p", "x", "-n", "1", "--dump-logits", unwritable], b"",
             "io", "logits.bin"),
            # issue 19: the small bugs, each a row; stdout must stay empty (no stray newline)
            ("--dump-logits to a full disk", ["-m", MODEL, "-p", "x", "-n", "2", "--dump-logits", "/dev/full"], b"",
             "io", "/dev/full"),
            ("a word of short options is one unknown option", ["-m", MODEL, "-p", "x", "-iZ"], b"", "usage",
             "unknown option -iZ"),
            ("short options are not bundled", ["-m", MODEL, "-p", "x", "-in"], b"", "usage", "not bundled"),
            ("unknown --template", ["-m", MODEL, "--chat", "--template", "nosuch", "-p", "hi"], b"", "usage",
             "nosuch"),
            ("-n -2", ["-m", MODEL, "-p", "x", "-n", "-2"], b"", "usage", "--max-tokens"),
            ("--json --ids", ["-m", MODEL, "-p", "x", "--json", "--ids"], b"", "usage", "--json cannot be combined"),
            ("--batch --ids", ["-m", MODEL, "--batch", "-", "--ids"], b"", "usage", "--batch cannot be combined"),
            ("--batch --stats", ["-m", MODEL, "--batch", "-", "--stats"], b"", "usage", "--stats"),
            ("-i with -p", ["-m", MODEL, "-i", "-p", "x"], b"", "usage", "-i cannot be combined"),
            ("-i --json", ["-m", MODEL, "-i", "--json"], b"", "usage", "-i cannot be combined"),
            ("--tokenize --detokenize", ["-m", MODEL, "--tokenize", "--detokenize"], b"", "usage", "--detokenize"),
            ("--tokenize --json", ["-m", MODEL, "--tokenize", "--json", "-p", "x"], b"", "usage", "--tokenize"),
            ("--tokenizer with -m", ["-m", MODEL, "--tokenizer", MODEL, "--tokenize"], b"", "usage", "--tokenizer"),
            ("--tokenizer without --tokenize", ["--tokenizer", MODEL, "-p", "x"], b"", "usage", "--tokenizer"),
            ("--detokenize garbage", ["-m", MODEL, "--detokenize", "-p", "1,x"], b"", "usage", "token ids"),
            ("--detokenize out of vocabulary", ["-m", MODEL, "--detokenize", "-p", "1,999999"], b"", "usage",
             "999999"),
            ("--tokenizer missing file", ["--tokenizer", os.path.join(tmp, "none.json"), "--tokenize", "-p", "x"],
             b"", "io", "none.json"),
            ("--system without --chat", ["-m", MODEL, "-p", "x", "--system", "s"], b"", "usage", "--system"),
        ]
        bad = 0
        for name, args, stdin, want, needle in rows:
            rc, out, err = run(args, stdin=stdin)
            lines = err.rstrip("\n").split("\n") if err else []
            problems = []
            if rc != EXIT[want]:
                problems.append("exit %d, want %d (%s)" % (rc, EXIT[want], want))
            if len(lines) != 1:
                problems.append("%d stderr lines" % len(lines))
            elif not lines[0].startswith("llmgen: ") or needle not in lines[0]:
                problems.append("stderr %r does not name %r" % (lines[0], needle))
            if want != "context" and out:
                problems.append("stdout not empty: %r" % out[:80])
            if problems:
                bad += 1
                fail("bad input '%s': %s" % (name, "; ".join(problems)))
        # unwritable stdout: /dev/full fails every write with ENOSPC
        if os.path.exists("/dev/full"):
            with open("/dev/full", "wb") as full:
                p = subprocess.run([LLMGEN, "-m", MODEL, "-p", "x", "-n", "2"], stdout=full, stderr=subprocess.PIPE,
                                   cwd=REPO, timeout=120)
            err = p.stderr.decode()
            if p.returncode != EXIT["io"] or err.count("\n") != 1 or "stdout" not in err:
                bad += 1
                fail("bad input 'stdout is /dev/full': exit %d, stderr %r" % (p.returncode, err))
            rows.append(None)
        if not bad:
            ok("bad input table: %d rows, each one stderr line naming the option/file, documented exit code"
               % len(rows))
    finally:
        shutil.rmtree(tmp)


# ---- man page, help, install ---------------------------------------------------------------------

CHAT_FORCED = {"llama-3.1-instruct.jinja": "llama3.1", "llama-2-chat.jinja": "llama2",
               "mistral-common-spm-v7.jinja": "mistral-v7", "mistral-nemo-instruct-2407.jinja": "mistral-v3-tekken"}


def check_chat_template_cli():
    """--chat --template NAME [--date D] renders transformers' text (tests/refs/tokenizer/chat-templates.json,
    generated by tests/gen/gen_chat_refs.py) whatever the model's own template: --echo prints the prompt."""
    refs = json.load(open(os.path.join(REPO, "tests", "refs", "tokenizer", "chat-templates.json")))
    n = 0
    for tmpl, name in CHAT_FORCED.items():
        for c in refs["templates"][tmpl]["cases"]:
            if c.get("error") or not c["user"] or "\n" in c["user"] or "\x1c" in c["user"]:
                continue
            args = ["-m", MODEL, "--chat", "--template", name, "-p", c["user"], "-n", "1", "--echo",
                    "--ignore-eos", "--temp", "0"]
            if c["system"] is not None:
                args += ["--system", c["system"]]
            if c["date"]:
                args += ["--date", c["date"]]
            rc, out, err = run(args)
            # SmolLM2's vocabulary lacks these families' special tokens: the one warning that says so is expected
            err = "".join(l for l in err.splitlines(True) if not l.startswith("llmgen: warning: template %s: " % name))
            if not expect_clean("--template %s %r" % (name, c["user"][:20]), rc, err):
                continue
            if not out.decode("utf-8", "replace").startswith(c["text"]):
                fail("--template %s (system %r, date %s): echo %r does not start with transformers' %r"
                     % (name, c["system"], c["date"], out[:200], c["text"][:200]))
                continue
            n += 1
    if n < 10:
        fail("--template: only %d renders checked" % n)
    else:
        ok("--chat --template NAME [--date]: %d renders equal transformers' (4 families)" % n)
    rc, _, err = run(["-m", MODEL, "--chat", "--template", "llama3.1", "--date", "tomorrow", "-p", "hi", "-n", "1"])
    if rc != EXIT["usage"] or "--date" not in err or len(err.strip().splitlines()) != 1:
        fail("--date tomorrow: exit %d, stderr %r (want one usage line)" % (rc, err))
    rc, _, err = run(["-m", MODEL, "--chat", "--template", "nosuch", "-p", "hi", "-n", "1"])
    if rc == 0 or "nosuch" not in err or len(err.strip().splitlines()) != 1:
        fail("--template nosuch: exit %d, stderr %r (want one error line naming it)" % (rc, err))


# ---- issue 19: full context, -n -1, seeds, threads, main.c -------------------------------------------

def check_context_seed_threads():
    args = ["-m", MODEL, "-p", "Hi", "-c", "6", "--ignore-eos"]
    rc, out, err = run(args + ["-n", "20", "--json"])
    try:
        j = json.loads(out)
    except ValueError:
        j = {}
    if rc != EXIT["context"] or j.get("stop_reason") != "context" or len(j.get("ids", [])) != 6 - len(
            j.get("prompt_ids", [0])) + 1 or "out of context" not in err:
        fail("--json at a full context: exit %d, %r, stderr %r (want exit 4, stop_reason context, the ids)"
             % (rc, out[:300], err))
    else:
        text_rc, text_out, _ = run(args + ["-n", "20"])
        if text_rc != EXIT["context"] or text_out.decode() != j["text"] + "\n":
            fail("text at a full context: exit %d, %r != --json text %r" % (text_rc, text_out, j["text"]))
        else:
            ok("full context: --json prints the %d generated ids with stop_reason \"context\", text stays, exit 4"
               % len(j["ids"]))
    rc, out, err = run(args + ["-n", "-1", "--json"])
    j2 = json.loads(out) if rc == 0 and out else {}
    if rc != 0 or err or j2.get("stop_reason") != "context" or j2.get("ids") != j.get("ids"):
        fail("-n -1: exit %d, stderr %r, %r (want exit 0, the same ids, stop_reason context)" % (rc, err, out[:200]))
    else:
        ok("-n -1 generates until the context is full: stop_reason \"context\", exit 0")
    req = json.dumps({"id": "full", "prompt": "Hi", "max_tokens": 20, "ignore_eos": True}) + "\n" + \
        json.dumps({"id": "all", "prompt": "Hi", "max_tokens": -1, "ignore_eos": True}) + "\n"
    rc, out, err = run(["-m", MODEL, "-c", "6", "--batch", "-"], stdin=req.encode())
    rows = [json.loads(l) for l in out.decode().splitlines()]
    if rc != EXIT["context"] or [r.get("stop_reason") for r in rows] != ["context", "context"] or \
            rows[0].get("ids") != j.get("ids"):
        fail("--batch at a full context: exit %d, rows %s" % (rc, rows))
    else:
        ok("--batch at a full context: result lines with stop_reason \"context\" and the ids, exit 4")
    # sampling without --seed draws a seed, reports it, and --seed with it reproduces the run
    samp = ["-m", MODEL, "-p", "Once upon a time", "-n", "16", "--temp", "0.9", "--json"]
    runs = [json.loads(run(samp)[1]) for _ in range(2)]
    again = json.loads(run(samp + ["--seed", str(runs[0]["seed"])])[1])
    rc, _, err = run(["-m", MODEL, "-p", "Hi", "-n", "2", "--temp", "0.9", "--stats"])
    m = re.search(r"\| seed (\d+)", err)
    if runs[0]["seed"] == runs[1]["seed"] or again["ids"] != runs[0]["ids"] or again["seed"] != runs[0]["seed"] or \
            not m:
        fail("random seed: seeds %s, ids %s / again %s, --stats %r" % ([r["seed"] for r in runs],
                                                                     runs[0]["ids"], again["ids"], err))
    else:
        ok("--temp 0.9 without --seed: random seeds (%s, %s) reported by --json and --stats; --seed %s repeats "
           "the run" % (runs[0]["seed"], runs[1]["seed"], runs[0]["seed"]))
    greedy = json.loads(run(["-m", MODEL, "-p", "Hi", "-n", "2", "--json"])[1])
    if greedy.get("seed") != 0:
        fail("greedy run without --seed reports seed %s (want 0: nothing drawn)" % greedy.get("seed"))
    check_threads()


def stats_threads(err):
    """(threads, CPUs, what set them) from a --stats line, or None."""
    m = re.search(r"\| (\d+) threads? \((\d+) CPUs?: ([^)]+)\) \|", err)
    return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else None


def check_threads():
    """Threads default to the CPUs the process may use (this machine: no cgroup quota is assumed below the
    affinity mask); under `taskset -c 0` that is 1, from the affinity mask, reported by --stats and --json;
    -t above it prints one note. The cgroup cases are tests/unit/test_cpus.c's."""
    mask = len(os.sched_getaffinity(0))
    rc, _, err = run(["-m", MODEL, "-p", "Hi", "-n", "2", "--stats"])
    got = stats_threads(err)
    if rc or not got or got[0] != got[1] or got[1] > mask:
        fail("default threads: --stats %r, want as many threads as CPUs, at most the mask's %d" % (err, mask))
    else:
        ok("threads default to the CPUs this process may use: %d (%s), as --stats reports" % (got[0], got[2]))
    if not shutil.which("taskset"):
        ok("taskset not installed: its check skipped")
        return
    one = ["taskset", "-c", "0", LLMGEN, "-m", MODEL, "-p", "Hi", "-n", "2", "--json", "--stats"]
    p = subprocess.run(one, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, timeout=120)
    err = p.stderr.decode()
    j = json.loads(p.stdout) if p.returncode == 0 else {}
    why = "affinity mask" if os.cpu_count() > 1 else "online CPUs"
    want = {"used": 1, "cpus": 1, "cpus_from": why}
    if p.returncode or j.get("threads") != want or stats_threads(err) != (1, 1, why) or "note" in err:
        fail("taskset -c 0: exit %d, --json threads %s (want %s), stderr %r" % (p.returncode, j.get("threads"),
                                                                             want, err))
    else:
        ok("taskset -c 0: 1 thread, --json threads %s, --stats says the same" % json.dumps(j["threads"]))
    p = subprocess.run(one[:3] + [LLMGEN, "-m", MODEL, "-p", "Hi", "-n", "2", "-t", "2"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, cwd=REPO, timeout=120)
    err = p.stderr.decode()
    if p.returncode or err.count("\n") != 1 or not err.startswith("llmgen: note: -t 2 is more than the 1 CPU"):
        fail("taskset -c 0 with -t 2: exit %d, stderr %r (want one note)" % (p.returncode, err))
    else:
        ok("taskset -c 0 with -t 2: one note: %s" % err.strip())


def check_main_c():
    """src/cli/main.c: under 600 lines, and no generation logic (no prefill / decode / sampling / detokenizer
    calls: those are llmgen_generate's and llmgen_chat_turn's)."""
    src = open(os.path.join(REPO, "src", "cli", "main.c")).read()
    n = src.count("\n")
    calls = sorted(set(re.findall(r"\b(llmgen_(?:prefill|decode_step|sample|sampler_new|detok_\w+|is_eos))\s*\(",
                                  src)))
    if n >= 600 or calls:
        fail("src/cli/main.c: %d lines (want < 600), generation calls %s" % (n, calls))
    else:
        ok("src/cli/main.c: %d lines, no prefill / decode / sample / detokenizer calls (llmgen_generate does them)" % n)


def check_parallel_make():
    """A plain `make` (as a user types it: no MAKEFLAGS, MAKELEVEL from a parent make) runs with one
    job per online CPU; a -j on the command line wins."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    flags = []
    for extra in ([], ["-j1"]):
        p = subprocess.run(["make", "-pq", "llmgen"] + extra, cwd=REPO, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        m = re.search(r"^MAKEFLAGS = (.*)$", p.stdout.decode(), re.M)
        flags.append(m.group(1) if m else "")
    want = "-j%d" % os.cpu_count()
    if want not in flags[0].split() or "-j1" not in flags[1].split():
        fail("parallel make: MAKEFLAGS %r for `make`, %r for `make -j1` (want %s, -j1)" % (flags[0], flags[1], want))
    else:
        ok("`make` builds with %s (one job per online CPU); `make -j1` stays serial" % want)


def json_lines(out):
    try:
        return [json.loads(l) for l in out.decode().splitlines()]
    except ValueError:
        return []


def readme_claim(cmd, out, err):
    """What a README example is there to show, checked on its output: None, or what is wrong."""
    text = out.decode("utf-8", "replace")
    if "warning" in err:
        return "a warning: %r" % err
    if not text.strip():
        return "nothing on stdout"
    m = re.match(r'echo "([^"]+)" \| (.*)$', cmd)
    if m:  # stdin gives what -p gives
        p = subprocess.run(["sh", "-c", m.group(2) + ' -p "%s"' % m.group(1)], cwd=REPO, stdout=subprocess.PIPE)
        return None if p.stdout == out else "stdin %r != -p %r" % (out[:80], p.stdout[:80])
    if "-n -1 -c 64" in cmd:  # runs to the full context: stop reason "context"
        p = subprocess.run(["sh", "-c", cmd + " --json"], cwd=REPO, stdout=subprocess.PIPE)
        j = json_lines(p.stdout)
        return None if j and j[0].get("stop_reason") == "context" else "stop reason %s" % (j and j[0].get("stop_reason"))
    if "--batch" in cmd:  # one result per request, none failed
        rows, want = json_lines(out), cmd.count("\\n")
        return None if len(rows) == want and all("error" not in r and r.get("ids") for r in rows) else \
            "%d result lines for %d requests: %s" % (len(rows), want, text[:200])
    if "--show-pieces" in cmd:
        return None if text == "19556\tHello\n905\t world\n" else "pieces %r" % text
    if "--detokenize" in cmd:
        return None if text == "Hello world" else "text %r" % text
    if "--tokenize" in cmd:
        return None if text == "19556,905\n" else "ids %r" % text
    if "--ids" in cmd:
        return None if re.fullmatch(r"\d+(,\d+){15}\n", text) else "ids %r" % text
    if "--json" in cmd:
        j = json_lines(out)
        return None if j and j[0].get("ids") and ("--logprobs" not in cmd or j[0].get("logprobs")) else "json %r" % text
    if " -i " in cmd:  # one reply per line of stdin
        return None if text.count("\n") >= 2 else "replies %r" % text
    if cmd.startswith("./llmgen verify"):
        return None if re.search(r"\b\d+ passed, 0 failed", text) else "verify %r" % text[-100:]
    if cmd.startswith("./llmgen perplexity"):
        return None if re.search(r"PPL = \d", text) else "perplexity %r" % text[-100:]
    return None


def check_readme_examples():
    """Every `./llmgen ...` command of the README's shell blocks runs as written after `make demo`
    (the default model in .cache/models, the binary in the repository root), and shows what it is
    there for (readme_claim: e.g. the -n -1 example reaches the full context, stdin gives -p's text)."""
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    blocks = re.findall(r"```(?:sh|bash|console)?\n(.*?)```", readme, re.S)
    cmds = []
    for b in blocks:
        for line in b.replace("\\\n", " ").split("\n"):
            line = line.strip()
            if line.startswith("$ "):
                line = line[2:]
            if re.match(r"(\S+=\S+ )*(echo .*\| |printf .*\| )?\./llmgen\b", line) and ".cache/models/SmolLM2" in line:
                cmds.append(line)
    bad = [c for c in cmds if "llmgen " in c and not re.search(r"(^|[|(] *)(\S+=\S+ )*\./llmgen", c)]
    failed = []
    for c in cmds:
        p = subprocess.run(["sh", "-c", c], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        why = readme_claim(c, p.stdout, p.stderr.decode()) if p.returncode == 0 else None
        if p.returncode != 0:
            failed.append("%s -> exit %d %s" % (c, p.returncode, p.stderr.decode()[-200:]))
        elif why:
            failed.append("%s -> does not show what it is for: %s" % (c, why))
    plain = re.findall(r"^\s*(?:\$ )?llmgen (?!quantize)", "\n".join(blocks), re.M)
    if len(cmds) < 3 or failed or bad or plain:
        fail("README examples: %d found, failed %s, not ./llmgen: %s" % (len(cmds), failed, plain or bad))
    else:
        ok("README: all %d ./llmgen examples on the default model run as written and show what they are for"
           % len(cmds))


def check_readme_shape():
    """The README says what is true now: its Performance section (the method and one current table)
    stays under 80 lines, and no paragraph is a work session's (history is tests/bench/HISTORY.md's)."""
    lines = open(os.path.join(REPO, "README.md"), encoding="utf-8").read().split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith("## Performance")), None)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines)) \
        if start is not None else 0
    sessions = [l for l in lines if re.search(r"[Ss]ession [0-9]+", l)]
    if start is None or end - start >= 80 or sessions:
        fail("README: Performance section %s lines (at most 79), lines naming a session: %s"
             % ("missing" if start is None else end - start, sessions[:3]))
    else:
        ok("README: Performance section %d lines, no paragraph per work session" % (end - start))


def help_options():
    out = subprocess.run([LLMGEN, "--help"], stdout=subprocess.PIPE, cwd=REPO).stdout.decode()
    return set(re.findall(r"(--[a-z][a-z-]+)", out)), out


def check_man_and_help():
    page = os.path.join(REPO, "man", "llmgen.1")
    if not shutil.which("groff"):
        fail("groff is not installed (make deps installs groff-base)")
        return
    p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    warn = p.stderr.decode()
    if shutil.which("man"):
        q = subprocess.run(["man", "--warnings", "-l", page], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="80"))
        warn += q.stderr.decode()
        rendered = q.stdout.decode()
    else:
        rendered = subprocess.run(["groff", "-man", "-Tutf8", page], stdout=subprocess.PIPE).stdout.decode()
    if p.returncode or warn.strip():
        fail("man page: groff/man warnings: %s" % warn.strip()[:500])
    else:
        ok("man page renders with groff -ww and man -l without warnings")
    opts, help_text = help_options()
    plain = re.sub(r".\x08", "", rendered).replace("\u2010", "-").replace("\u2212", "-")
    missing = sorted(o for o in opts if o not in plain)
    for section in ("SYNOPSIS", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"):
        if section not in plain:
            missing.append("section " + section)
    if missing:
        fail("man page lacks: %s" % ", ".join(missing))
    else:
        ok("man page documents all %d long options of --help and every required section" % len(opts))
    src = open(os.path.join(REPO, "src", "cli", "options.c")).read()
    shared = dict(re.findall(r'#define (CLI_OPT_[A-Z]+)\b.*?"([a-z-]+)"', open(os.path.join(REPO, "src", "cli", "cli.h")).read(),
                             re.S))
    table = set("--" + n for n in re.findall(r'\{O_[A-Z_]+, (?:\'.\'|0), "([a-z-]+)"', src))
    table |= set("--" + shared[m] for m in re.findall(r'\b(CLI_OPT_[A-Z]+)\b', src))
    if table - opts:
        fail("--help lacks options the parser accepts: %s" % sorted(table - opts))
    else:
        ok("--help documents all %d options the parser accepts" % len(table))


def check_install():
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run(["make", "-s", "install", "PREFIX=" + tmp], cwd=REPO, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=600)
        want = ["bin/llmgen", "lib/libllmgen.a", "lib/libllmgen.so", "lib/libllmgen.so.1", "lib/libllmgen.so.1.0.0",
                "include/llmgen.h", "share/man/man1/llmgen.1", "lib/pkgconfig/llmgen.pc"]
        missing = [w for w in want if not os.path.exists(os.path.join(tmp, w))]
        if p.returncode or missing:
            fail("make install: exit %d, missing %s: %s" % (p.returncode, missing, p.stdout.decode()[-500:]))
            return
        lib = os.path.join(tmp, "lib", "libllmgen.so.1.0.0")
        dyn = subprocess.run(["readelf", "-d", lib], stdout=subprocess.PIPE).stdout.decode()
        syms = subprocess.run(["nm", "-D", "--defined-only", lib], stdout=subprocess.PIPE).stdout.decode().split("\n")
        exported = [l.split()[-1].split("@")[0] for l in syms if len(l.split()) == 3 and l.split()[1] in "TDBRVW"]
        api = set(re.findall(r"\b(llmgen_[a-z0-9_]+)\(", open(os.path.join(REPO, "src", "llmgen.h")).read()))
        if "Library soname: [libllmgen.so.1]" not in dyn or set(exported) != api:
            fail("libllmgen.so: SONAME %s; exported but not in llmgen.h: %s; in llmgen.h but not exported: %s" % (
                re.findall(r"soname: \[(.*?)\]", dyn), sorted(set(exported) - api)[:10], sorted(api - set(exported))))
        else:
            ok("libllmgen.so.1.0.0: SONAME libllmgen.so.1, exports exactly the %d functions of llmgen.h"
               % len(exported))
        # a client built with pkg-config against the installed tree, shared and static
        c = os.path.join(tmp, "t.c")
        with open(c, "w") as f:
            f.write('#include <llmgen.h>\n#include <string.h>\nint main(void){llmgen_generate_params p;'
                    'llmgen_generate_defaults(&p);llmgen_sampler_params s;llmgen_sampler_defaults(&s);'
                    'return llmgen_sampler_check(&s,0,0) || p.max_tokens != 128 || '
                    'strcmp(llmgen_stop_reason_name(LLMGEN_STOP_CONTEXT), "context");}\n')
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(tmp, "lib", "pkgconfig"))
        problems = []
        for kind, extra in (("shared", []), ("static", ["--static"])):
            pc = subprocess.run(["pkg-config", "--cflags", "--libs"] + extra + ["llmgen"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            flags = pc.stdout.decode().split()
            exe = os.path.join(tmp, "t-" + kind)
            link = (["-Wl,-Bstatic", "-lllmgen", "-Wl,-Bdynamic"] + [x for x in flags if x != "-lllmgen"]) \
                if kind == "static" else flags
            q = subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", c, "-o", exe] + link,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            r = subprocess.run([exe], env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(tmp, "lib"))) \
                if not q.returncode else None
            if pc.returncode or q.returncode or r.returncode:
                problems.append("%s: pkg-config %r, build %s, run %s" % (kind, pc.stdout.decode().strip(),
                                                                       q.stdout.decode()[-300:],
                                                                       r and r.returncode))
            elif kind == "shared":
                needed = subprocess.run(["readelf", "-d", exe], stdout=subprocess.PIPE).stdout.decode()
                if "[libllmgen.so.1]" not in needed:
                    problems.append("shared client does not record libllmgen.so.1 as NEEDED")
        if problems:
            fail("pkg-config clients: " + "; ".join(problems))
        else:
            ok("make install: binary, libllmgen.a/.so.0, llmgen.h, llmgen.pc, man page; clients built with "
               "`pkg-config --cflags --libs [--static] llmgen` link and run (NEEDED libllmgen.so.1)")


def check_valgrind():
    if not shutil.which("valgrind"):
        print("skip  valgrind is not installed")
        return
    with tempfile.TemporaryDirectory() as tmp:
        req = os.path.join(tmp, "r.jsonl")
        with open(req, "w") as f:
            f.write('{"prompt_ids": [1, 2, 3], "max_tokens": 3}\n{"prompt": "no tokenizer"}\n')
        for args in (["--prompt-ids", "1,2,3", "-n", "4", "--ids"], ["--prompt-ids", "5,6", "-n", "3", "--json"],
                     ["--batch", req]):
            p = subprocess.run(["valgrind", "-q", "--leak-check=full", "--errors-for-leak-kinds=all",
                                "--error-exitcode=99", LLMGEN, "-m", TINY] + args, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=REPO, timeout=300)
            # llmgen's own lines may be there (the batch's failed request); valgrind's start with ==PID==
            if p.returncode == 99 or re.search(rb"^==\d+==", p.stderr, re.M):
                fail("valgrind %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.decode()[-800:]))
                return
    ok("valgrind: no leaks, no errors for --ids, --json and --batch generations")


def main():
    for path in (LLMGEN, MODEL):
        if not os.path.exists(path):
            print("check_cli: %s is missing (make llmgen model)" % path)
            return 1
    refs = json.load(open(os.path.join(REPO, "tests", "refs", "smollm2-gguf.json")))
    cases = [c for c in refs["cases"] if not c.get("chat")][:2] + [c for c in refs["cases"] if c.get("chat")][:1]
    t = time.time()
    check_lib_client(cases)
    check_json_batch(cases)
    check_determinism()
    check_sources()
    check_stop_stats()
    check_chat_template_cli()
    check_pipe_and_sigint()
    check_context_seed_threads()
    check_main_c()
    check_parallel_make()
    check_readme_examples()
    check_readme_shape()
    check_bad_inputs()
    check_man_and_help()
    check_install()
    check_valgrind()
    print("check_cli: %d failures in %.1f s" % (len(failures), time.time() - t))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
