#!/usr/bin/env python3
"""Speculative greedy decoding from the command line: the same ids and --dump-logits bytes as without it.

For the default model (a copy-heavy chat prompt and a free one), one MLX fixture (4-bit Qwen3, fast mode's
repacked route), the Gemma-3 ring fixture (a sliding-window ring that wraps during generation), the
Qwen3 fixture and the gpt-oss MXFP4 GGUF (sinks, a ring of the window that wraps, MXFP4 experts), in fast and --exact mode at -t 1 and 2, each of
    --draft-lookup, --draft-lookup --draft-ngram 1 --draft-max 3, --draft-model (another model or itself)
prints the ids and writes the logits bytes of the run without drafts, and the drafts are used (--json's
"drafted_tokens" > 0 where the text repeats). A context that fills up inside a draft stops at the same id
with the same exit code; --batch and -i give the same ids; --stats reports the drafts; bad uses exit 1
(2 / 3 for a bad or missing --draft-model). The library-level contract and rejections at the first, a
middle and the last draft position are tests/unit/test_speculate.c's.

Environment: LLMGEN (binary, default ./llmgen), LLMGEN_CACHE (default .cache). Exits 1 on any failure.
"""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
DEFAULT = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
FIX = os.path.join(REPO, "tests", "fixtures")

COPY = ("Repeat this text exactly, word for word: The lighthouse keeper climbed the stairs every evening at "
        "dusk, trimmed the wick, polished the lens and wrote the weather in his log. Ships passed in the night "
        "and never knew his name, but they knew his light.")
FREE = "Write a short story about a fox who learns to paint."

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def run(args, stdin=None):
    p = subprocess.run([LLMGEN] + args, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def gen(model, prompt, extra, dump, n=48):
    """(exit code, ids line, logits bytes, stderr)"""
    rc, out, err = run(["-m", model, "--ids", "--ignore-eos", "-n", str(n), "--dump-logits", dump] + prompt + extra)
    with open(dump, "rb") as f:
        data = f.read()
    return rc, out.strip(), data, err


def check_model(label, model, prompt, draft, tmp, n=48, want_drafts=True, configs=None):
    for mode, t in configs or [([], "1"), ([], "2"), (["--exact"], "1"), (["--exact"], "2")]:
        base = mode + ["-t", t, "--split-all"]
        d0 = os.path.join(tmp, "plain.bin")
        rc0, ids0, lg0, err0 = gen(model, prompt, base, d0, n)
        if rc0 != 0 or not ids0:
            fail("%s %s: plain run exit %d: %s" % (label, base, rc0, err0.strip()))
            continue
        variants = [["--draft-lookup"], ["--draft-lookup", "--draft-ngram", "1", "--draft-max", "3"],
                    ["--draft-model", draft, "--draft-max", "6"]]
        for v in variants:
            d1 = os.path.join(tmp, "spec.bin")
            rc, ids, lg, err = gen(model, prompt, base + v + ["--stats"], d1, n)
            what = "%s %s %s" % (label, " ".join(base), " ".join(v))
            if rc != rc0 or ids != ids0:
                fail("%s: ids differ or exit %d (without drafts %d):\n  %s\n  %s\n%s" % (what, rc, rc0, ids, ids0, err))
            elif lg != lg0:
                fail("%s: --dump-logits bytes differ (%d vs %d bytes)" % (what, len(lg), len(lg0)))
            elif "speculation:" not in err:
                fail("%s: --stats does not report the drafts: %r" % (what, err))
            else:
                stat = err[err.index("speculation:"):].split("\n")[0]
                drafted = int(stat.split(",")[1].split()[0])
                if want_drafts and v[0] == "--draft-lookup" and drafted == 0:
                    fail("%s: no drafts on a text that repeats (%s)" % (what, stat))
                print("ok %s: same ids and logits bytes (%s)" % (what, stat))


def check_context(model, prompt, tmp):
    """-c small: the context fills up inside a draft; -n past it gives exit 4, -n -1 exit 0, the same 22 ids
    (the last one picked from the last position's logits, not run)."""
    rc, out, err = run(["-m", model, "--tokenize"] + prompt)
    n_prompt = len(out.strip().split(","))
    for n in ("60", "-1"):
        base = ["-c", str(n_prompt + 21), "-n", n]
        rc0, ids0, lg0, _ = gen(model, prompt, base, os.path.join(tmp, "a.bin"))
        for v in (["--draft-lookup", "--draft-max", "8"], ["--draft-model", model, "--draft-max", "7"]):
            rc1, ids1, lg1, err1 = gen(model, prompt, base + v, os.path.join(tmp, "b.bin"))
            what = "context fills inside a draft (-c %d -n %s %s)" % (n_prompt + 21, n, v[0])
            want_rc = 4 if n == "60" else 0
            if rc0 != want_rc or rc1 != rc0 or ids1 != ids0 or lg1 != lg0 or len(ids0.split(",")) != 22:
                fail("%s: exit %d / %d, %d ids: %s / %s %s" % (what, rc0, rc1, len(ids0.split(",")), ids0, ids1, err1))
            else:
                print("ok %s: exit %d, the same 22 ids and logits bytes" % (what, rc1))


def check_json_batch_interactive(tmp):
    rc, out, err = run(["-m", DEFAULT, "--chat", "-p", COPY, "-n", "60", "--json", "--draft-lookup"])
    j = json.loads(out) if rc == 0 else {}
    t = j.get("timings", {})
    if rc != 0 or not t.get("drafted_tokens") or not t.get("accepted_tokens") or not t.get("draft_passes"):
        fail("--json --draft-lookup: exit %d, timings %r" % (rc, t))
    else:
        print("ok --json: %d passes, %d drafted, %d accepted" % (t["draft_passes"], t["drafted_tokens"],
                                                                t["accepted_tokens"]))
    req = os.path.join(tmp, "req.jsonl")
    with open(req, "w") as f:
        f.write(json.dumps({"id": "copy", "prompt": COPY, "chat": True, "max_tokens": 40}) + "\n")
        f.write(json.dumps({"id": "free", "prompt": FREE, "chat": True, "max_tokens": 40}) + "\n")
    outs = []
    for v in ([], ["--draft-lookup"], ["--draft-model", DEFAULT]):
        rc, out, err = run(["-m", DEFAULT, "--batch", req] + v)
        outs.append((rc, [(x["id"], x["ids"]) for x in map(json.loads, out.strip().split("\n"))] if rc == 0 else err))
    if outs[1] != outs[0] or outs[2] != outs[0]:
        fail("--batch with drafts: other results: %r" % (outs,))
    else:
        print("ok --batch: the same ids with --draft-lookup and --draft-model")
    turns = (COPY + "\nNow repeat it once more.\n").encode()
    plain = run(["-m", DEFAULT, "-i", "-n", "40"], turns)
    spec = run(["-m", DEFAULT, "-i", "-n", "40", "--draft-lookup", "--stats"], turns)
    if plain[0] != 0 or spec[0] != 0 or plain[1] != spec[1] or spec[2].count("speculation:") != 2:
        fail("-i with --draft-lookup: exit %d / %d, output %r / %r" % (plain[0], spec[0], plain[1], spec[1]))
    else:
        print("ok -i: the same replies with --draft-lookup (two turns)")
    rc, out, err = run(["-m", DEFAULT, "-p", COPY, "-n", "8", "--temp", "0.7", "--seed", "1", "--draft-lookup",
                        "--stats"])
    if rc != 0 or "(off: sampling)" not in err:
        fail("--temp 0.7 --draft-lookup: exit %d, %r" % (rc, err))
    else:
        print("ok sampling: no speculation, said by --stats")


def check_bad(tmp):
    bad = os.path.join(tmp, "bad.gguf")
    with open(bad, "wb") as f:
        f.write(b"GGUF\x03\x00\x00\x00garbage")
    hi = ["-p", "hi", "-n", "2"]
    cases = [
        (hi + ["--draft-ngram", "2"], 1, "--draft-ngram needs --draft-lookup"),
        (hi + ["--draft-max", "4"], 1, "--draft-max needs"),
        (hi + ["--draft-lookup", "--draft-max", "0"], 1, "--draft-max"),
        (hi + ["--draft-lookup", "--draft-max", "128"], 1, "--draft-max"),
        (hi + ["--draft-lookup", "--draft-ngram", "x"], 1, "--draft-ngram"),
        (["--draft-lookup", "--batch", "-", "--parallel", "2"], 1, "--parallel"),
        (["--draft-model", DEFAULT, "--tokenize", "-p", "hi"], 1, "--tokenize"),
        (hi + ["--draft-model", os.path.join(tmp, "missing.gguf")], 3, "--draft-model"),
        (hi + ["--draft-model", bad], 2, "--draft-model"),
    ]
    for args, code, text in cases:
        rc, out, err = run(["-m", DEFAULT] + args, b"")
        if rc != code or text not in err or err.count("\n") != 1:
            fail("%s: exit %d (want %d), stderr %r" % (" ".join(args), rc, code, err))
        else:
            print("ok %s: exit %d, %s" % (" ".join(args), rc, err.strip()))


def main():
    if not os.path.exists(DEFAULT):
        print("FAIL: %s is missing (make model)" % DEFAULT)
        return 1
    qwen3 = os.path.join(FIX, "tiny-qwen3-gqa-tied-f32")
    mlx = os.path.join(FIX, "tiny-mlx-qwen3-tied-q4g32")
    gemma = os.path.join(FIX, "tiny-gemma3-ring-f32")
    rep = ",".join(str(7 + (i * 37) % 50) for i in range(25))
    with tempfile.TemporaryDirectory() as tmp:
        check_model("default model, copy", DEFAULT, ["--chat", "-p", COPY], DEFAULT, tmp)
        check_model("default model, free", DEFAULT, ["--chat", "-p", FREE], DEFAULT, tmp, 32, want_drafts=False,
                    configs=[([], "2")])
        check_model("MLX Qwen3 4-bit", mlx, ["--prompt-ids", rep + "," + rep], qwen3, tmp)
        check_model("Qwen3", qwen3, ["--prompt-ids", rep + "," + rep], mlx, tmp)
        long_prompt = ",".join(str(3 + (i * 53) % 300) for i in range(290))
        check_model("Gemma-3 ring", gemma, ["--prompt-ids", long_prompt], gemma, tmp, 80)
        # gpt-oss: sinks in every softmax, the even layers' ring of the window wrapping, MXFP4 experts
        go = os.path.join(FIX, "tiny-gptoss-mxfp4", "model.mxfp4.gguf")
        go_prompt = ",".join(str(3 + (i * 53) % 250) for i in range(290))
        check_model("gpt-oss MXFP4 ring", go, ["--prompt-ids", go_prompt], go, tmp, 80, want_drafts=False)
        check_context(DEFAULT, ["--chat", "-p", COPY], tmp)
        check_json_batch_interactive(tmp)
        check_bad(tmp)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all speculation checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
