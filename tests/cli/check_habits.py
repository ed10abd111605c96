#!/usr/bin/env python3
"""What a user owns is never lost, and a llama.cpp user's habits work (issue 37). Standard library only.

On the default model (.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf):
  - --prompt-cache pointed at a copy of the model, a text file, an empty file and a read-only file:
    one error line, exit 1, each file byte for byte as it was; a cache made with other options is
    replaced with a note that says so; a truncated one is reported as truncated;
  - --batch with an id on two lines is refused before anything runs (both lines named), with and
    without --resume (OUT untouched); --resume keys on id, else on the line number;
  - two --resume runs started together on one OUT: exactly one line per id (the second is refused
    with one line, exit 3, or finds every id done);
  - a failed request and one cut by a full context each carry "error" / "exit" in their lines and
    stderr ends with one summary line; "system" without "chat" fails that line; "messages" lines
    render the chat template (ids equal --chat's for one user turn);
  - 1,000 drawn seeds are all below 2^53 and the reported seed repeats its run;
  - stdin, -f FILE (each with a trailing newline) and -p give the same prompt ids; --keep-newline
    keeps it; -p processes llama.cpp's escapes and --no-escape does not;
  - each llama.cpp habit (-ngl, -fa, -hf, -cnv, -no-cnv, --chat-temp, -in, --n-predict, -s, -r,
    --reverse-prompt, --chat-template NAME / JINJA) gets the stated message or works, exit 1 and an
    empty stdout for every usage error;
  - the exit code of each cause (table below) is the one the man page gives, and the man page,
    --help of every command and the README's exit-status sentence list the same codes;
  - the option table of every command (its --help, printed from the table the parser reads) and
    the man page document the same options, both ways;
  - perplexity -f - reads stdin; --tokenize --show-pieces prints id<TAB>piece;
  - a built-in template whose special tokens the vocabulary lacks gets one warning line.
Environment: LLMGEN (binary, default ./llmgen), LLMGEN_CACHE (default .cache).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
TINY = os.path.join(REPO, "tests", "fixtures", "tiny-mha-f32")
# the man page's EXIT STATUS, one code per cause
EXIT = {"ok": 0, "usage": 1, "model": 2, "io": 3, "context": 4, "nomem": 5, "template": 6, "interrupt": 130}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL  " + msg, flush=True)


def ok(msg):
    print("ok    " + msg, flush=True)


def run(args, stdin=b"", timeout=600, cwd=REPO):
    if "-m" in args and "-t" not in args and "--threads" not in args:
        args = args + ["-t", "1"]  # no thread pool to keep in step on a loaded machine; results do not change
    p = subprocess.run([LLMGEN] + args, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, cwd=cwd)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def one_line(err, warnings=False):
    """err is one "llmgen: " line (after the warning lines, when they are allowed)."""
    lines = err.rstrip("\n").split("\n") if err else []
    if warnings:
        lines = [l for l in lines if not l.startswith("llmgen: warning: ")]
    return len(lines) == 1 and lines[0].startswith("llmgen: ")


def ids_of(out):
    s = out.decode().strip()
    return [int(x) for x in s.split(",")] if s else []


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- files a user owns ---------------------------------------------------------------------------

def check_prompt_cache(tmp):
    model_copy = os.path.join(tmp, "model-copy.gguf")
    shutil.copy(MODEL, model_copy)
    text = os.path.join(tmp, "notes.txt")
    with open(text, "w") as f:
        f.write("my notes, not a cache\n")
    empty = os.path.join(tmp, "empty")
    open(empty, "w").close()
    ro = os.path.join(tmp, "read-only.txt")
    with open(ro, "w") as f:
        f.write("read only\n")
    os.chmod(ro, 0o444)
    bad = 0
    for path in (model_copy, text, empty, ro):
        before = read(path)
        rc, out, err = run(["-m", MODEL, "-p", "Hi", "-n", "2", "--prompt-cache", path])
        if rc != EXIT["usage"] or not one_line(err) or "not an llmgen prompt cache" not in err or out or \
                read(path) != before:
            bad += 1
            fail("--prompt-cache %s: exit %d, stderr %r, stdout %r, file %s" % (
                os.path.basename(path), rc, err, out[:50], "unchanged" if read(path) == before else "CHANGED"))
    if not bad:
        ok("--prompt-cache on a model copy (%d MB), a text, an empty and a read-only file: exit 1, one line, "
           "each file byte for byte as it was" % (len(read(model_copy)) >> 20))
    cache = os.path.join(tmp, "c.kv")
    rc, out, err = run(["-m", MODEL, "-p", "Hi there", "-n", "2", "--prompt-cache", cache])
    rc2, out2, err2 = run(["-m", MODEL, "-p", "Hi there", "-n", "2", "--prompt-cache", cache, "--exact"])
    rc3, _, _ = run(["-m", MODEL, "-p", "Hi there", "-n", "2", "--prompt-cache", cache, "--exact"])
    with open(cache, "rb") as f:
        data = f.read()
    cut = os.path.join(tmp, "cut.kv")
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2])
    rc4, _, err4 = run(["-m", MODEL, "-p", "Hi there", "-n", "2", "--prompt-cache", cut, "--exact"])
    if rc or err or rc2 or "another mode (--exact)" not in err2 or rc3 or rc4 or "truncated" not in err4 or \
            not one_line(err4) or read(cut)[:8] != b"LLMGENKV" or len(read(cut)) <= len(data) // 2:
        fail("prompt cache notes: fast then exact: %d %r; truncated: %d %r" % (rc2, err2, rc4, err4))
    else:
        ok("a cache made in the other mode: note names the mode, replaced; a truncated cache: 'truncated', replaced")
    if [f for f in os.listdir(tmp) if ".tmp" in f]:
        fail("--prompt-cache left temporary files: %s" % os.listdir(tmp))


# ---- --batch results -------------------------------------------------------------------------------

def batch_lines(out):
    return [json.loads(l) for l in out.decode().splitlines()]


def check_batch(tmp):
    req = os.path.join(tmp, "dup.jsonl")
    lines = [{"id": "a", "prompt": "Hi", "max_tokens": 2}, {"id": "b", "prompt": "Bye", "max_tokens": 2},
             {"prompt": "no id", "max_tokens": 2}, {"id": "a", "prompt": "Again", "max_tokens": 2}]
    with open(req, "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
    out_file = os.path.join(tmp, "dup.out")
    with open(out_file, "w") as f:
        f.write(json.dumps({"id": "a", "line": 1, "ids": []}) + "\n")
    before = read(out_file)
    rc, out, err = run(["-m", MODEL, "--batch", req])
    rc2, out2, err2 = run(["-m", MODEL, "--batch", req, "--resume", out_file])
    want = "dup.jsonl:4: the id \"a\" is also the id of line 1"
    if rc != EXIT["usage"] or out or want not in err or not one_line(err) or rc2 != EXIT["usage"] or \
            want not in err2 or read(out_file) != before:
        fail("duplicate ids: plain %d %r %r; --resume %d %r, OUT %s" % (
            rc, out[:80], err, rc2, err2, "unchanged" if read(out_file) == before else "CHANGED"))
    else:
        ok("an id on lines 1 and 4: refused before anything runs, both lines named, with and without --resume")
    # failures and a context cut carry error / exit; one summary line; system without chat; messages
    lines = [{"id": "ok", "prompt": "Hi", "max_tokens": 2},
             {"id": "cut", "prompt": "Once upon a time", "max_tokens": 90, "ignore_eos": True},
             {"id": "sys", "prompt": "Hi", "system": "Be brief.", "max_tokens": 2},
             {"id": "oov", "prompt_ids": [1, 999999], "max_tokens": 2},
             {"id": "msg", "messages": [{"role": "user", "content": "Name a color."}], "max_tokens": 6},
             {"id": "msgsys", "messages": [{"role": "user", "content": "Hi"}], "system": "Be brief.",
              "max_tokens": 4}]
    stdin = "".join(json.dumps(l) + "\n" for l in lines).encode()
    rc, out, err = run(["-m", MODEL, "-c", "64", "--batch", "-"], stdin=stdin)
    rows = {r.get("id"): r for r in batch_lines(out)}
    chat = run(["-m", MODEL, "-c", "64", "--chat", "-p", "Name a color.", "-n", "6", "--json"])
    chat_sys = run(["-m", MODEL, "-c", "64", "--chat", "--system", "Be brief.", "-p", "Hi", "-n", "4", "--json"])
    problems = []
    if rc != EXIT["context"]:
        problems.append("exit %d (want 4, line 2's)" % rc)
    if not one_line(err) or not re.search(r"6 requests: 3 ok, 3 failed; first failure: line 2: out of context", err):
        problems.append("stderr %r" % err)
    cut = rows.get("cut", {})
    if cut.get("stop_reason") != "context" or cut.get("exit") != 4 or "out of context" not in cut.get("error", "") \
            or not cut.get("ids"):
        problems.append("cut line %s" % {k: cut.get(k) for k in ("stop_reason", "exit", "error")})
    if "\"system\" needs \"chat\"" not in rows.get("sys", {}).get("error", "") or rows["sys"].get("exit") != 1:
        problems.append("system without chat: %s" % rows.get("sys"))
    if rows.get("oov", {}).get("exit") != 1 or "999999" not in rows["oov"].get("error", ""):
        problems.append("oov line %s" % rows.get("oov"))
    for name, ref in (("msg", chat), ("msgsys", chat_sys)):
        j = json.loads(ref[1]) if ref[0] == 0 else {}
        if rows.get(name, {}).get("prompt_ids") != j.get("prompt_ids") or rows[name].get("ids") != j.get("ids"):
            problems.append("%s: %s vs --chat %s" % (name, rows.get(name), j))
    if "error" in rows.get("ok", {}):
        problems.append("ok line has an error: %s" % rows["ok"])
    if problems:
        fail("--batch results: " + "; ".join(problems))
    else:
        ok("--batch: a context cut and failed lines carry error/exit, one summary line, exit of the earliest; "
           "\"system\" without \"chat\" fails its line; \"messages\" lines equal --chat's prompt and ids")
    # --resume keys on id, else the line number
    res = os.path.join(tmp, "keys.out")
    two = [{"id": 7, "prompt": "Hi", "max_tokens": 2}, {"prompt": "Bye", "max_tokens": 2}]
    with open(res, "w") as f:
        f.write(json.dumps({"id": 7, "line": 5}) + "\n")
    rc, out, err = run(["-m", MODEL, "--batch", "-", "--resume", res],
                       stdin="".join(json.dumps(l) + "\n" for l in two).encode())
    got = [json.loads(l) for l in open(res)]
    if rc or err or len(got) != 2 or got[1].get("line") != 2 or "id" in got[1]:
        fail("--resume keys: exit %d %r, OUT %s" % (rc, err, got))
    else:
        ok("--resume: a request whose id OUT holds is skipped, one without an id runs (keyed on its line)")


def check_resume_lock(tmp):
    req = os.path.join(tmp, "many.jsonl")
    n = 12
    with open(req, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "prompt": "Count to ten: one, two,", "max_tokens": 24, "ignore_eos": True})
                    + "\n")
    out = os.path.join(tmp, "many.out")
    cmd = [LLMGEN, "-m", MODEL, "--batch", req, "--resume", out, "-t", "1"]
    a = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    time.sleep(0.05)
    b = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    ra, rb = a.wait(timeout=600), b.wait(timeout=600)
    ea, eb = a.stderr.read().decode(), b.stderr.read().decode()
    ids = [json.loads(l).get("id") for l in open(out)]
    refused = [(r, e) for r, e in ((ra, ea), (rb, eb)) if r == EXIT["io"] and "locked" in e and one_line(e)]
    if sorted(ids) != list(range(n)) or len(refused) > 1 or any(r not in (0, EXIT["io"]) for r in (ra, rb)):
        fail("two --resume writers: %d lines for %d ids %s; exits %d %r / %d %r" % (len(ids), n, ids, ra, ea, rb, eb))
    else:
        ok("two --resume runs on one OUT: %d lines for %d ids (%s)" % (
            len(ids), n, "the second refused: " + refused[0][1].strip() if refused else "the second found all done"))


# ---- seeds, prompts ------------------------------------------------------------------------------

def check_seeds():
    # drawing a seed does not depend on the model: the tiny fixture keeps 1,000 requests fast
    stdin = "".join(json.dumps({"prompt_ids": [1, 2], "max_tokens": 1, "temp": 0.9}) + "\n" for _ in range(1000))
    rc, out, err = run(["-m", TINY, "--batch", "-", "--no-prefix-cache", "-t", "1"], stdin=stdin.encode())
    seeds = [r.get("seed") for r in batch_lines(out)] if rc == 0 else []
    big = [s for s in seeds if not isinstance(s, int) or s < 0 or s >= 1 << 53]
    j = json.loads(run(["-m", MODEL, "-p", "Once upon a time", "-n", "12", "--temp", "0.9", "--json"])[1])
    again = json.loads(run(["-m", MODEL, "-p", "Once upon a time", "-n", "12", "--temp", "0.9", "-s",
                            str(float(j["seed"])).split(".")[0], "--json"])[1])
    if rc or len(seeds) != 1000 or big or len(set(seeds)) < 990 or again["ids"] != j["ids"]:
        fail("seeds: exit %d, %d seeds, %d at or above 2^53 (%s), %d distinct; -s repeat %s" % (
            rc, len(seeds), len(big), big[:3], len(set(seeds)), again["ids"] == j["ids"]))
    else:
        ok("1000 drawn seeds all below 2^53 (max %.3g); the seed through a double repeats the run (-s)" % max(seeds))


def check_prompts(tmp):
    text = "The capital of France is"
    base = run(["-m", MODEL, "--tokenize", "-p", text])
    path = os.path.join(tmp, "p.txt")
    with open(path, "w") as f:
        f.write(text + "\n")
    viaf = run(["-m", MODEL, "--tokenize", "-f", path])
    vias = run(["-m", MODEL, "--tokenize"], stdin=(text + "\n").encode())
    crlf = run(["-m", MODEL, "--tokenize"], stdin=(text + "\r\n").encode())
    keep = run(["-m", MODEL, "--tokenize", "--keep-newline"], stdin=(text + "\n").encode())
    if base[0] or not (base == viaf == vias == crlf) or ids_of(keep[1])[:-1] != ids_of(base[1]):
        fail("stdin / -f with a trailing newline vs -p: %s" % [base, viaf, vias, crlf, keep])
    else:
        gen_p = run(["-m", MODEL, "-p", text, "-n", "8", "--ids"])
        gen_s = run(["-m", MODEL, "-n", "8", "--ids"], stdin=(text + "\n").encode())
        if gen_p != gen_s:
            fail("generation from stdin %r != from -p %r" % (gen_s, gen_p))
        else:
            ok("stdin, -f FILE (a trailing newline, or CR LF) and -p give the same ids and the same completion; "
               "--keep-newline keeps it")
    esc = run(["-m", MODEL, "--tokenize", "-p", "Q: hi\\nA:\\t\\\\ \\'x\\\" \\x41"])
    raw = run(["-m", MODEL, "--tokenize", "-p", "Q: hi\nA:\t\\ 'x\" A"])
    noesc = run(["-m", MODEL, "--tokenize", "--no-escape", "-p", "Q: hi\\nA:"])
    lit = run(["-m", MODEL, "--tokenize", "--keep-newline", "-p", "-"], stdin=b"Q: hi\\nA:")
    if esc[0] or esc != raw or noesc[1] != lit[1] or noesc[1] == esc[1]:
        fail("-p escapes: %s %s / --no-escape %s %s" % (esc, raw, noesc, lit))
    else:
        ok("-p 'Q: hi\\nA:' has llama.cpp's escapes (\\n \\t \\\\ \\' \\\" \\xHH); --no-escape keeps them as written")
    rc, out, err = run(["-m", MODEL, "--tokenize", "--show-pieces", "-p", "Hello world\\n!"])
    rows = [l.split("\t") for l in out.decode().splitlines()]
    if rc or err or rows != [["19556", "Hello"], ["905", " world"], ["198", "\\n"], ["17", "!"]]:
        fail("--show-pieces: %d %r %r" % (rc, out, err))
    else:
        ok("--tokenize --show-pieces: id<TAB>piece per line, a newline piece escaped")
    ppl = os.path.join(REPO, "tests", "refs", "quality", "ppl-text.txt")
    src = ppl if os.path.exists(ppl) else "/usr/share/common-licenses/GPL-3"
    args = ["perplexity", "-m", MODEL, "-c", "64", "--chunks", "1"]
    a = run(args + ["-f", src])
    b = run(args + ["-f", "-"], stdin=read(src))
    if a[0] or a[1] != b[1] or not a[1].startswith(b"PPL") and b"PPL = " not in a[1]:
        fail("perplexity -f - (stdin) %r != -f FILE %r" % (b[1][-60:], a[1][-60:]))
    else:
        ok("perplexity -f - reads stdin: %s" % a[1].decode().strip().splitlines()[-1])


# ---- llama.cpp habits, exit codes ------------------------------------------------------------------

HABITS = [
    # (args, exit, text on the one stderr line)
    (["-ngl", "99"], "usage", "unknown option -ngl: llmgen runs on the CPU and has no GPU offload"),
    (["--n-gpu-layers", "99"], "usage", "no GPU offload"),
    (["-t", "1", "-fa"], "usage", "option -fa needs a value (ignored by llmgen, as a no-op)"),
    (["-hf", "x"], "usage", "unknown option -hf: llmgen does not download models"),
    (["-cnv"], "usage", "unknown option -cnv: for a conversation on the terminal use -i"),
    (["--interactive-first"], "usage", "unknown option --interactive-first: llmgen -i waits for the first line"),
    (["-sys", "x"], "usage", "unknown option -sys: use --system TEXT"),
    (["--system-prompt", "x"], "usage", "unknown option --system-prompt: use --system TEXT"),
    (["--jinja"], "usage", "unknown option --jinja: llmgen always renders the model's own Jinja chat template"),
    (["--log-disable"], "usage", "unknown option --log-disable: llmgen prints only errors and warnings"),
    (["--mlock"], "usage", "unknown option --mlock: llmgen maps the model read-only"),
    (["--no-mmap"], "usage", "unknown option --no-mmap: llmgen always maps the model file"),
    (["-tb", "2"], "usage", "unknown option -tb: one thread count serves prefill and decode: use -t"),
    (["--repeat-last-n", "64"], "usage", "unknown option --repeat-last-n: --repeat-penalty looks at the whole"),
    (["--mirostat", "2"], "usage", "unknown option --mirostat: llmgen has no mirostat sampler"),
    (["--keep", "10"], "usage", "unknown option --keep: llmgen never shifts the context"),
    (["-n", "1e3"], "usage", "--max-tokens: invalid value '1e3' (expected -1 or an integer"),
    (["-n", "0x10"], "usage", "--max-tokens: invalid value '0x10'"),
    (["-t", "2.0"], "usage", "--threads: invalid value '2.0'"),
    (["-p", "a\\x00b"], "usage", "--prompt: \\x00 is a NUL byte"),
    (["--kernels", "foo"], "usage", "--kernels \"foo\": no such kernel set (available here: scalar"),
    (["--json-schema", ""], "usage", "--json-schema: empty"),
    ([MODEL], "usage", "(a model? give it with -m "),
    (["-c", "4", "-p", "one two three four five six seven"], "context",
     "does not fit the context size 4 (raise -c, up to the model's 8192)"),
    (["--chat-temp", "/etc/hostname", "--chat"], "usage", "unknown option --chat-temp (did you mean"),
    (["-in"], "usage", "unknown option -in (short options are not bundled"),
    (["-iZ"], "usage", "unknown option -iZ"),
    (["--json=yes"], "usage", "option --json takes no value"),
    (["-h", "x"], "usage", None),  # -h with something after it still prints the help: below
]


def check_habits():
    bad = 0
    for args, want, text in HABITS[:-1]:
        rc, out, err = run(["-m", MODEL, "-p", "x"] + args)
        if rc != EXIT[want] or out or not one_line(err) or text not in err:
            bad += 1
            fail("%s: exit %d, stdout %r, stderr %r (want exit %d and %r)" % (" ".join(args), rc, out[:40], err,
                                                                            EXIT[want], text))
    if not bad:
        ok("llama.cpp options and bad words: %d cases, each one line naming the whole word, exit 1, empty stdout"
           % (len(HABITS) - 1))
    # llama.cpp's no-op options are accepted (man page, LLAMA.CPP HABITS); -X=value reads as -X value
    plain = run(["-m", MODEL, "-p", "Hi", "-n", "4"])
    noops = run(["-m", MODEL, "-p", "Hi", "-n=4", "-e", "-no-cnv", "--no-display-prompt", "-fa", "off", "-b", "512",
                 "--flash-attn=on", "-ub", "64", "-st"])
    if plain[0] or plain != noops:
        fail("no-op options / -n=4: %r, plain run %r" % (noops, plain))
    else:
        ok("-e, -no-cnv, -st, --no-display-prompt, -fa off, -b 512, -ub 64 are no-ops; -n=4 is -n 4")
    rc, out, err = run(["-m", MODEL, "-p", "x", "--kernels", "neon"])
    cpu_has_neon = b"neon" in run(["--version"])[1]
    if not cpu_has_neon and (rc != 1 or "available here: scalar" not in err or "no such" in err):
        fail("--kernels neon on this CPU: exit %d, %r" % (rc, err))
    # messages with a hint: a hub id, quantize on a file, a batch line's NUL and unknown keys
    rc, out, err = run(["-m", "HuggingFaceTB/SmolLM2-135M-Instruct", "-p", "x"])
    rc2, out2, err2 = run(["quantize", MODEL, os.path.join(tempfile.gettempdir(), "llmgen-q-none")])
    rc3, out3, err3 = run(["-m", MODEL, "--batch", "-"], stdin=b'{"prompt": "a\\u0000b"}\n{"prompt": "x", "foo": 1}\n'
                          b'{"prompt": "x", "response_format": {}}\n')
    lines = [json.loads(l) for l in out3.decode().splitlines()]
    if rc != EXIT["io"] or "a Hugging Face hub id?" not in err or rc2 != 1 or "is a file: the input is a Hugging Face " \
            "model directory" not in err2 or len(lines) != 3 or "NUL" not in lines[0].get("error", "") or \
            "the keys: id, prompt" not in lines[1].get("error", "") or "json_schema" not in lines[2].get("error", ""):
        fail("hints: -m hub id %d %r; quantize FILE %d %r; batch %r" % (rc, err, rc2, err2, lines))
    else:
        ok("hints: -m Org/Name (a hub id), a positional model, quantize on a file, a full context (-c at or below "
           "the model's maximum), a batch line's \\u0000, unknown keys (listed) and response_format")
    rc, out, err = run(["-hf", "x"])
    if rc != 1 or out:
        fail("-hf x: exit %d, stdout %r (the help must not print)" % (rc, out[:40]))
    # the aliases work as the options they stand for
    base = run(["-m", MODEL, "-p", "Count: 1, 2, 3,", "-n", "12", "--stop", " 6", "--seed", "3", "--temp", "0.7"])
    alias = run(["-m", MODEL, "-p", "Count: 1, 2, 3,", "--n-predict", "12", "-r", " 6", "-s", "3", "--temp", "0.7"])
    alias2 = run(["-m", MODEL, "-p", "Count: 1, 2, 3,", "--n-predict=12", "--reverse-prompt", " 6", "--seed=3",
                  "--temp", "0.7"])
    tmpl = run(["-m", MODEL, "--chat", "--template", "chatml", "-p", "Hi", "-n", "1", "--echo"])
    ct = run(["-m", MODEL, "--chat", "--chat-template", "chatml", "-p", "Hi", "-n", "1", "--echo"])
    jinja = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" \
            "<|im_start|>assistant\n"
    cj = run(["-m", MODEL, "--chat", "--chat-template", jinja, "-p", "Hi", "-n", "1", "--echo"])
    if base[0] or not (base == alias == alias2) or tmpl[0] or tmpl != ct or cj[0] or \
            not cj[1].startswith(b"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"):
        fail("aliases: %s / %s / %s; --chat-template %s %s; jinja %s" % (base, alias, alias2, tmpl, ct, cj))
    else:
        ok("--n-predict, -s, -r, --reverse-prompt, --opt=value equal -n, --seed, --stop; --chat-template NAME "
           "equals --template NAME, a Jinja value renders as a template")
    rc, out, err = run(["-m", MODEL, "--chat", "--template", "llama3.2", "-p", "Hi", "-n", "1"])
    rc2, out2, err2 = run(["-m", MODEL, "--chat", "--template", "chatml", "-p", "Hi", "-n", "1"])
    if rc or not one_line(err) or "warning" not in err or "<|begin_of_text|>" not in err or rc2 or err2:
        fail("template warning: %d %r; chatml %d %r" % (rc, err, rc2, err2))
    else:
        ok("--template llama3.2 on SmolLM2: one warning naming the missing special tokens; chatml: none")


def no_template_gguf(tmp):
    """A copy of the default model without tokenizer.chat_template (the key renamed, same length)."""
    data = bytearray(read(MODEL))
    key = b"tokenizer.chat_template"
    i = data.find(key)
    if i < 0:
        return None
    data[i:i + len(key)] = b"tokenizer.chat_templatX"
    path = os.path.join(tmp, "no-template.gguf")
    with open(path, "wb") as f:
        f.write(data)
    return path


def check_exit_codes(tmp):
    bad_utf8 = os.path.join(tmp, "bad.txt")
    with open(bad_utf8, "wb") as f:
        f.write(b"caf\xc3 au lait " * 200)
    notmpl = no_template_gguf(tmp)
    raise_tmpl = os.path.join(tmp, "raise.jinja")
    with open(raise_tmpl, "w") as f:
        f.write("{{ raise_exception('no system messages here') }}")
    cases = [
        # (name, args, stdin, cause)
        ("unknown option", ["-m", MODEL, "--frobnicate"], b"", "usage"),
        ("bad value", ["-m", MODEL, "-p", "x", "-n", "0"], b"", "usage"),
        ("not a prompt cache", ["-m", MODEL, "-p", "x", "--prompt-cache", bad_utf8], b"", "usage"),
        ("duplicate batch ids", ["-m", MODEL, "--batch", "-"], b'{"id":1,"prompt":"a"}\n{"id":1,"prompt":"b"}\n',
         "usage"),
        ("perplexity: invalid UTF-8", ["perplexity", "-m", MODEL, "-f", bad_utf8, "-c", "16"], b"", "usage"),
        ("bad model file", ["-m", bad_utf8, "-p", "x"], b"", "model"),
        ("missing file", ["-m", MODEL, "-f", os.path.join(tmp, "none.txt")], b"", "io"),
        ("--help to a full disk", ["--help"], b"", "io"),
        ("prompt too long", ["-m", MODEL, "-p", "word " * 40, "-c", "8"], b"", "context"),
        ("built-in template refuses", ["-m", MODEL, "--chat", "--template", "mistral-v0.1", "--system", "s", "-p",
                                       "x"], b"", "template"),
        ("Jinja template raises", ["-m", MODEL, "--chat", "--chat-template-file", raise_tmpl, "-p", "x"], b"",
         "template"),
    ]
    if notmpl:
        cases += [("--chat without a template", ["-m", notmpl, "--chat", "-p", "x"], b"", "template"),
                  ("-i without a template", ["-m", notmpl, "-i"], b"hi\n", "template")]
    else:
        fail("the default model has no tokenizer.chat_template key to remove")
    bad = 0
    for name, args, stdin, cause in cases:
        if name == "--help to a full disk":
            with open("/dev/full", "wb") as full:
                p = subprocess.run([LLMGEN] + args, stdout=full, stderr=subprocess.PIPE, cwd=REPO, timeout=60)
            rc, out, err = p.returncode, b"", p.stderr.decode()
        else:
            rc, out, err = run(args, stdin=stdin)
        if rc != EXIT[cause] or not one_line(err, warnings=True) or (cause != "context" and out):
            bad += 1
            fail("exit code of %s: %d (want %d, %s), stdout %r, stderr %r" % (name, rc, EXIT[cause], cause, out[:40],
                                                                            err))
    if not bad:
        ok("exit codes: %d causes, each its code from the man page and one stderr line" % len(cases))
    # the man page, --help and the README name the same code for each cause
    page = read(os.path.join(REPO, "man", "llmgen.1")).decode()
    section = page[page.index(".SH EXIT STATUS"):page.index(".SH ENVIRONMENT")]
    man_codes = sorted(int(c) for c in re.findall(r"^\.B (\d+)$", section, re.M))
    help_text = run(["--help"])[1].decode()
    help_codes = sorted(int(c) for c in re.findall(r"(?:^|[ (:,])(\d+) (?:ok|usage|bad|I/O|out of|the chat|interr)",
                                                     help_text[help_text.index("Exit status"):], re.M))
    readme = read(os.path.join(REPO, "README.md")).decode()
    para = readme[readme.index("Exit status: 0 ok"):]
    para = para[:para.index("\n\n")]
    readme_codes = sorted(int(c) for c in re.findall(r"(?:^|[ :,])(\d+) (?:ok|usage|bad|I/O|out of|the chat|interr)",
                                                     para, re.M))
    header = read(os.path.join(REPO, "src", "cli", "cli.h")).decode()
    enum_codes = sorted(int(c) for c in re.findall(r"EXIT_[A-Z]+ = (\d+)", header))
    if not (man_codes == help_codes == readme_codes == enum_codes == sorted(EXIT.values())):
        fail("exit codes: man %s, --help %s, README %s, cli.h %s, this test %s" % (
            man_codes, help_codes, readme_codes, enum_codes, sorted(EXIT.values())))
    else:
        ok("exit codes %s: the same in the man page, --help, the README and cli.h" % man_codes)


# ---- the option tables against the man page -----------------------------------------------------

def help_options(args):
    """The option rows of a command's --help (printed from its table): {"--name" or "-x": value name}."""
    rc, out, _ = run(args + ["--help"])
    opts = {}
    for line in out.decode().splitlines():
        m = re.match(r"^  (?:(-[a-zA-Z]), )?(?:    )?(--[a-z][a-z0-9-]*)?(?: (\S+(?: Mon YYYY\")?))?(?:  |$)", line)
        if not m or not (m.group(1) or m.group(2)):
            continue
        for name in (m.group(1), m.group(2)):
            if name:
                opts[name] = m.group(3)
    return rc, opts


def man_options(page, section, headers_only):
    """The options a man page section documents: in its .TP headers (headers_only), else wherever its
    text sets one in bold: {"--name" or "-x"}."""
    text = page[page.index(section):]
    text = text[:text.index("\n.SH", 1)] if "\n.SH" in text[1:] else text
    names = set()
    pattern = r"^\.TP\n\.(?:B|BI|BR) (.*)$" if headers_only else r"^\.(?:B|BI|BR) (.*)$"
    for head in re.findall(pattern, text, re.M):
        for n in re.findall(r"\\-\\-([a-z][a-z0-9\\-]*)|(?:^|[\" ])\\-([a-zA-Z])(?=[\" ]|$)", head):
            names.add("--" + n[0].replace("\\-", "-") if n[0] else "-" + n[1])
    return names


def check_option_tables():
    page = read(os.path.join(REPO, "man", "llmgen.1")).decode()
    commands = [([], ".SH OPTIONS"), (["verify"], ".SH VERIFY"), (["perplexity"], ".SH PERPLEXITY"),
                (["quantize"], ".SH QUANTIZE"), (["chat-template"], ".SH CHAT-TEMPLATE")]
    problems, total = [], 0
    for args, section in commands:
        rc, table = help_options(args)
        documented = man_options(page, section, not args)
        if args:  # a subcommand's section may name the shared options only through "as for generation"
            documented |= man_options(page, ".SH OPTIONS", True) & set(table)
        missing = sorted(set(table) - documented)
        extra = sorted(o for o in documented - set(table) if o.startswith("--") and not args)
        total += len(table)
        if rc or not table or missing or extra:
            problems.append("%s: exit %d, in --help but not the man page: %s; in the man page but not --help: %s" % (
                " ".join(["llmgen"] + args), rc, missing, extra))
    if problems:
        fail("option tables vs man page: " + "; ".join(problems))
    else:
        ok("option tables of 5 commands (%d rows, printed by --help) and the man page list the same options"
           % total)


def main():
    for path in (LLMGEN, MODEL):
        if not os.path.exists(path):
            print("check_habits: %s is missing (make llmgen model)" % path)
            return 1
    t = time.time()
    tmp = tempfile.mkdtemp()
    try:
        check_option_tables()
        check_habits()
        check_prompt_cache(tmp)
        check_batch(tmp)
        check_resume_lock(tmp)
        check_seeds()
        check_prompts(tmp)
        check_exit_codes(tmp)
    finally:
        for root, dirs, files in os.walk(tmp):
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        shutil.rmtree(tmp)
    print("check_habits: %d failures in %.1f s" % (len(failures), time.time() - t))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
