#!/usr/bin/env python3
"""llmgen from Rust (tests/rust/): the inference-session seam driven by another runtime. Standard library only.

build/rust/debug/rust-client (make rust-build) links libllmgen.a and drives it only through the crate's
InferenceSession trait. For the default model (.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf, three
reference prompts of tests/refs/smollm2-gguf.json) and a family fixture (Qwen3, the Q8_0 conversion
tests/fixtures/tiny-qwen3-gqa-tied-f32/model.q8_0.gguf: its reference prompt, that prompt's first
four ids, and 20 ids i * 7 + 3), in the fast mode and --exact, at 2 threads:
  - the client's 32 greedy ids per prompt equal `llmgen --prompt-ids P -n 32 --ignore-eos --ids`
    (in exact mode on the default model also HF's reference ids);
  - four sessions of one model on four threads each give their single-threaded run's ids (the client
    compares them and exits 1 otherwise; its lines are checked here too);
  - a missing model file, an id outside the vocabulary and a prompt longer than the context come back
    as Err whose text is what the CLI prints for the same mistake (llmgen's own message), a decode
    step before any prefill as Err, and the session then repeats its ids; no panic (exit 0);
  - under valgrind (when installed; tests/rust/valgrind.supp names the two blocks Rust's runtime keeps)
    the client frees everything on the fixture, errors included.
Environment: LLMGEN (default ./llmgen), LLMGEN_CACHE (default .cache), RUST_CLIENT (default
build/rust/debug/rust-client). Exits 1 on failure.
"""
import json
import os
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
CLIENT = os.environ.get("RUST_CLIENT", os.path.join(REPO, "build", "rust", "debug", "rust-client"))
DEFAULT = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
FIXTURE = os.path.join(REPO, "tests", "fixtures", "tiny-qwen3-gqa-tied-f32", "model.q8_0.gguf")
N = 32
THREADS = "2"

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL  " + msg, flush=True)


def ok(msg):
    print("ok    " + msg, flush=True)


def ids_text(ids):
    return ",".join(map(str, ids))


def cli(args):
    p = subprocess.run([LLMGEN] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, timeout=300)
    return p.returncode, p.stdout.decode().strip(), p.stderr.decode().strip()


def cli_ids(model, prompt, exact):
    rc, out, err = cli(["-m", model, "--prompt-ids", ids_text(prompt), "-n", str(N), "--ignore-eos", "--ids",
                        "-t", THREADS] + (["--exact"] if exact else []))
    if rc != 0:
        raise RuntimeError("llmgen exit %d: %s" % (rc, err))
    return [int(x) for x in out.split("\n")[-1].strip(",").split(",")]


def client(model, prompts, exact):
    """The client's output lines, as {kind: {key: value}}."""
    cmd = [CLIENT, "-n", str(N), "-t", THREADS] + (["--exact"] if exact else []) + [model] + \
        [ids_text(p) for p in prompts]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, timeout=600)
    err = p.stderr.decode()
    if p.returncode != 0:
        raise RuntimeError("rust-client exit %d: %s" % (p.returncode, err.strip()[-1500:]))
    if "panicked" in err:
        raise RuntimeError("rust-client panicked: %s" % err.strip()[-1500:])
    lines = {}
    for line in p.stdout.decode().splitlines():
        head, _, value = line.partition(": ")
        kind, _, key = head.partition(" ")
        lines.setdefault(kind, {})[key] = value
    return lines, err


def cli_message(args):
    """The one stderr line the CLI prints for a mistake, without its program-name prefix."""
    rc, _, err = cli(args)
    if rc == 0 or len(err.splitlines()) != 1:
        raise RuntimeError("llmgen %s: exit %d, stderr %r" % (" ".join(args), rc, err))
    return err.split(": ", 1)[1] if err.startswith("llmgen: ") else err


def check_model(name, model, prompts, vocab, hf=None):
    for exact in (False, True):
        mode = "exact" if exact else "fast"
        try:
            out, err = client(model, prompts, exact)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            fail("%s %s: %s" % (name, mode, e))
            continue
        greedy, threads = out.get("greedy", {}), out.get("threads", {})
        for i, p in enumerate(prompts):
            want = cli_ids(model, p, exact)
            got = [int(x) for x in greedy.get(str(i), "").split(",") if x]
            if got != want:
                fail("%s %s prompt %d: rust-client %s != llmgen --ids %s" % (name, mode, i, got, want))
            elif exact and hf and got != hf[i][:N]:
                fail("%s exact prompt %d: ids %s != HF reference %s" % (name, i, got, hf[i][:N]))
            else:
                ok("%s %s prompt %d (%d ids): rust-client == llmgen --ids%s" %
                   (name, mode, i, N, " == HF" if exact and hf else ""))
        want_threads = [greedy.get(str(i % len(prompts))) for i in range(4)]
        if [threads.get(str(i)) for i in range(4)] != want_threads:
            fail("%s %s: the four threaded sessions differ from their single-threaded runs" % (name, mode))
        else:
            said = [line.split("(", 1)[-1].rstrip(")") for line in err.splitlines() if "single-threaded" in line]
            ok("%s %s: four sessions on four threads == their single-threaded runs (%s)" %
               (name, mode, said[0] if said else "?"))
        if not exact:
            check_errors(name, model, prompts, vocab, out.get("error", {}))


def check_errors(name, model, prompts, vocab, errors):
    want = {
        "open": "io: " + cli_message(["-m", "no/such/model.gguf", "--prompt-ids", "1", "-n", "1", "--ids"]),
        "prefill": "usage: " + cli_message(["-m", model, "--prompt-ids", "%d,%d" % (prompts[0][0], vocab),
                                            "-n", "1", "--ids"]),
    }
    for what, text in sorted(want.items()):
        if errors.get(what) != text:
            fail("%s: Err of %s: %r, the CLI says %r" % (name, what, errors.get(what), text))
        else:
            ok("%s: Err of %s carries llmgen's message: %s" % (name, what, text))
    for what, start in (("context", "context: "), ("decode", "usage: ")):
        if not errors.get(what, "").startswith(start):
            fail("%s: Err of %s: %r" % (name, what, errors.get(what)))
        else:
            ok("%s: Err of %s: %s" % (name, what, errors[what]))


def check_valgrind():
    """The client under valgrind on the fixture: no leak, no invalid access, in llmgen or the binding."""
    if not shutil.which("valgrind"):
        print("skip  valgrind is not installed")
        return
    supp = os.path.join(REPO, "tests", "rust", "valgrind.supp")
    p = subprocess.run(["valgrind", "-q", "--leak-check=full", "--errors-for-leak-kinds=all", "--error-exitcode=99",
                        "--suppressions=" + supp, CLIENT, "-n", "4", "-t", THREADS, FIXTURE, "1,2,3"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, timeout=600)
    err = "\n".join(line for line in p.stderr.decode().splitlines() if not line.startswith("rust-client: "))
    if p.returncode != 0 or err.strip():
        fail("valgrind rust-client: exit %d: %s" % (p.returncode, err[-1500:]))
    else:
        ok("valgrind: rust-client (greedy, four threads, the errors) frees everything, no invalid access")


def main():
    for path in (LLMGEN, DEFAULT, CLIENT):
        if not os.path.exists(path):
            print("check_rust: %s is missing (make llmgen model rust-build)" % path)
            return 1
    t = time.time()
    refs = json.load(open(os.path.join(REPO, "tests", "refs", "smollm2-gguf.json")))
    cases = refs["cases"][:3]
    check_model("default model", DEFAULT, [c["prompt_ids"] for c in cases], refs["vocab_size"],
                hf=[c["ids"] for c in cases])
    fx = json.load(open(os.path.join(REPO, "tests", "refs", "tiny-qwen3-gqa-tied-f32.json")))
    p0 = fx["cases"][0]["prompt_ids"]
    check_model("qwen3 Q8_0 fixture", FIXTURE, [p0, p0[:4], [i * 7 + 3 for i in range(20)]], fx["vocab_size"])
    check_valgrind()
    print("check_rust: %d failures in %.1f s" % (len(failures), time.time() - t))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
