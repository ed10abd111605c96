#!/usr/bin/env python3
"""llmgen perplexity, --logprobs and verify against the HF transformers references in tests/refs/quality/
(written by tests/gen/gen_quality_refs.py, `make quality-refs`).

- perplexity --exact equals HF's within 1e-4 relative: two tiny fixtures (all 3 chunks of 128 ids), the
  default model on the GPL-3 text (its token count equal to HF's; the first 2 chunks of 512 here, all 8
  with LLMGEN_QUALITY_FULL=1, as `make regress-quality` runs it)
- a KL-divergence base written and read back by llmgen: same tokens, KLD ~ 0, same top 100%
- --logprobs N in exact mode (--json, and a --batch line): ids equal, each log-probability and the top 5
  within 1e-4 absolute of HF's
- verify: the stored refs pass in exact mode; one expected id changed at the step with the largest
  reference gap fails (exit 1, that step named); changed at the smallest-gap step with a tolerance above
  that gap, it passes as a near-tie; the tiny refs (models by relative path) pass
- bad input to the new subcommands and options: one line on stderr, the documented exit code
Standard library only; run from the repository root.
"""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.path.join(REPO, "llmgen")
Q = os.path.join(REPO, "tests", "refs", "quality")
MODEL = os.path.join(REPO, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
FULL = os.environ.get("LLMGEN_QUALITY_FULL") == "1"
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def run(args, stdin=None):
    p = subprocess.run([LLMGEN] + args, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def ppl_of(out):
    last = out.strip().split("\n")[-1]
    if not last.startswith("PPL = "):
        return None
    return float(last.split()[2])


def check_perplexity(refs):
    for name, r in refs["models"].items():
        if r["model"].get("repo"):
            args = ["-m", r["model"]["repo"], "--ids-file", os.path.join(Q, r["ids_file"])]
            k = r["n_chunks"]
        else:
            args = ["-m", MODEL, "-f", r["text"]["path"]]
            k = r["n_chunks"] if FULL else 2
        rc, out, err = run(["perplexity"] + args + ["-c", str(r["ctx"]), "--chunks", str(k), "--exact"])
        s, n = sum(c[0] for c in r["chunks"][:k]), sum(c[1] for c in r["chunks"][:k])
        import math
        want = math.exp(s / n)
        got = ppl_of(out)
        if rc or got is None:
            fail("perplexity %s: exit %d, stdout %r, stderr %r" % (name, rc, out[-200:], err[-300:]))
            continue
        rel = abs(got - want) / want
        print("perplexity %-26s %d chunks: llmgen --exact %.4f, HF %.4f (rel %.2e)" % (name, k, got, want, rel))
        if rel > 1e-4:
            fail("perplexity %s: %.6f vs HF %.6f (relative %.2e > 1e-4)" % (name, got, want, rel))
        if "tokens" in r and ("%d tokens" % r["tokens"]["count"]) not in err:
            fail("perplexity %s: HF tokenized %d tokens; llmgen said %r" % (name, r["tokens"]["count"], err.split("\n")[0]))


def check_kld_roundtrip(refs):
    r = refs["models"]["tiny-mha-f32"]
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, "base.kld")
        args = ["perplexity", "-m", r["model"]["repo"], "--exact"]
        rc, out, err = run(args + ["--ids-file", os.path.join(Q, r["ids_file"]), "-c", str(r["ctx"]),
                                   "--kl-divergence-base", base])
        n_vocab, ctx, chunks = 256, r["ctx"], r["n_chunks"]
        nv = 2 * ((n_vocab + 1) // 2) + 4
        want = 20 + 4 * ctx * chunks + 2 * nv * (ctx - 1 - ctx // 2) * chunks
        if rc or not os.path.exists(base) or os.path.getsize(base) != want:
            fail("kl-divergence-base: exit %d, %s bytes (want %d): %s" % (rc, os.path.getsize(base) if os.path.exists(base)
                                                                         else "no", want, err[-300:]))
            return
        with open(base, "rb") as f:
            head = f.read(20)
        if head[:8] != b"_logits_" or int.from_bytes(head[8:12], "little") != ctx:
            fail("kl-divergence-base: header %r" % head)
        rc, out2, err = run(args + ["--kl-divergence-base", base, "--kl-divergence"])
        stats = {l.split(":")[0].strip(): l.split(":", 1)[1] for l in out2.split("\n") if ":" in l}
        try:
            kld = float(stats["Mean    KLD"].split()[0])
            top = float(stats["Same top p"].split()[0])
        except (KeyError, ValueError, IndexError):
            fail("kl-divergence: exit %d, no statistics: %r %r" % (rc, out2[-300:], err[-300:]))
            return
        print("kl-divergence of a run against its own base: mean KLD %.2e, same top %.3f%%" % (kld, top))
        if rc or kld > 1e-5 or top != 100.0 or ppl_of(out2) != ppl_of(out):
            fail("kl-divergence against itself: exit %d, KLD %g, same top %g, PPL %s vs %s" % (
                rc, kld, top, ppl_of(out2), ppl_of(out)))


def compare_logprobs(name, case, got):
    if [s["id"] for s in got] != [s["id"] for s in case["steps"]]:
        fail("logprobs %s: ids %s, HF %s" % (name, [s["id"] for s in got], [s["id"] for s in case["steps"]]))
        return 0
    worst = 0.0
    for i, (g, h) in enumerate(zip(got, case["steps"])):
        worst = max(worst, abs(g["logprob"] - h["logprob"]))
        if [t["id"] for t in g["top"]] != [t[0] for t in h["top"]]:
            fail("logprobs %s step %d: top ids %s, HF %s" % (name, i, [t["id"] for t in g["top"]], [t[0] for t in h["top"]]))
        worst = max([worst] + [abs(t["logprob"] - u[1]) for t, u in zip(g["top"], h["top"])])
    if worst > 1e-4:
        fail("logprobs %s: max |llmgen - HF| = %.2e > 1e-4" % (name, worst))
    return worst


def check_logprobs():
    refs = json.load(open(os.path.join(Q, "logprobs-smollm2.json")))
    worst = 0.0
    for case in refs["cases"]:
        n, k = len(case["steps"]), len(case["steps"][0]["top"])
        ids = ",".join(map(str, case["prompt_ids"]))
        rc, out, err = run(["-m", MODEL, "--exact", "--prompt-ids", ids, "-n", str(n), "--ignore-eos", "--json",
                            "--logprobs", str(k)])
        if rc:
            fail("--logprobs %s: exit %d: %s" % (case["name"], rc, err[-300:]))
            continue
        got = json.loads(out)["logprobs"]
        if any(g["text"] is None or len(g["top"]) != k for g in got):
            fail("--logprobs %s: missing text or top entries: %r" % (case["name"], got[0]))
        worst = max(worst, compare_logprobs(case["name"], case, got))
    case = refs["cases"][0]
    line = json.dumps({"id": "b", "prompt_ids": case["prompt_ids"], "max_tokens": len(case["steps"]),
                       "ignore_eos": True, "logprobs": len(case["steps"][0]["top"])})
    rc, out, err = run(["-m", MODEL, "--exact", "--batch", "-"], stdin=(line + "\n").encode())
    if rc:
        fail("--batch logprobs: exit %d: %s" % (rc, err[-300:]))
    else:
        worst = max(worst, compare_logprobs("batch", case, json.loads(out)["logprobs"]))
    print("--logprobs --exact: %d prompts + 1 batch line, max |llmgen - HF| %.2e" % (len(refs["cases"]), worst))


def check_verify():
    path = os.path.join(Q, "verify-smollm2.jsonl")
    lines = [json.loads(l) for l in open(path)]
    rc, out, err = run(["verify", path, "-m", MODEL, "--exact"])
    if rc or out.strip().split("\n")[-1] != "%d passed, 0 failed" % len(lines):
        fail("verify stored refs: exit %d: %r %r" % (rc, out, err))
    rc, out, err = run(["verify", os.path.join(Q, "verify-tiny.jsonl"), "--exact"])
    if rc or not out.strip().endswith(" passed, 0 failed"):
        fail("verify tiny refs (relative model paths): exit %d: %r %r" % (rc, out, err))
    # one expected id changed at the step with the largest reference gap: must fail there
    c = max(range(len(lines)), key=lambda i: max(lines[i]["top2_gap"]))
    k = max(range(len(lines[c]["top2_gap"])), key=lambda j: lines[c]["top2_gap"][j])
    with tempfile.TemporaryDirectory() as d:
        bad = [dict(l) for l in lines]
        bad[c]["expected_ids"] = list(bad[c]["expected_ids"])
        bad[c]["expected_ids"][k] = (bad[c]["expected_ids"][k] + 1) % 49152
        p = os.path.join(d, "refs.jsonl")
        open(p, "w").write("".join(json.dumps(l) + "\n" for l in bad))
        rc, out, err = run(["verify", p, "-m", MODEL, "--exact"])
        want = "FAIL %s: step %d: expected %d" % (lines[c]["id"], k, bad[c]["expected_ids"][k])
        if rc != 1 or want not in out or not out.strip().endswith("%d passed, 1 failed" % (len(lines) - 1)):
            fail("verify with id changed at case %s step %d (gap %.3f): exit %d, want %r in %r" % (
                lines[c]["id"], k, lines[c]["top2_gap"][k], rc, want, out))
        else:
            print("verify: id changed at %s step %d (reference gap %.3f): exit 1, %s" % (
                lines[c]["id"], k, lines[c]["top2_gap"][k], [l for l in out.split("\n") if l.startswith("FAIL")][0]))
        # changed at the smallest-gap step, tolerance just above that gap: a near-tie, passes
        c = min(range(len(lines)), key=lambda i: min(lines[i]["top2_gap"]))
        k = min(range(len(lines[c]["top2_gap"])), key=lambda j: lines[c]["top2_gap"][j])
        g = lines[c]["top2_gap"][k]
        tie = [dict(l) for l in lines]
        tie[c]["expected_ids"] = list(tie[c]["expected_ids"])
        tie[c]["expected_ids"][k] = (tie[c]["expected_ids"][k] + 1) % 49152
        open(p, "w").write("".join(json.dumps(l) + "\n" for l in tie))
        tol = "%.9g" % (g * 1.5 + 1e-9)
        rc, out, err = run(["verify", p, "-m", MODEL, "--exact", "--tolerance", tol])
        if rc != 0 or "near-tie at step %d" % k not in out:
            fail("verify near-tie at %s step %d (gap %.3g, --tolerance %s): exit %d: %r" % (lines[c]["id"], k, g, tol, rc, out))
        else:
            print("verify: id changed at %s step %d (reference gap %.4g) with --tolerance %s: passes as a near-tie"
                  % (lines[c]["id"], k, g, tol))
        # the same file with the default tolerance fails unless that gap is below 1e-3
        rc, out, err = run(["verify", p, "-m", MODEL, "--exact"])
        if (rc == 1) != (g >= 1e-3):
            fail("verify near-tie file at the default tolerance: exit %d with gap %g" % (rc, g))


def check_bad_input():
    with tempfile.TemporaryDirectory() as d:
        badjson = os.path.join(d, "bad.jsonl")
        open(badjson, "w").write('{"id": 1, "prompt": "x", "expected_ids": [1, 2]}\n{"id": 2, "prompt": 3}\n')
        nogap = os.path.join(d, "gap.jsonl")
        open(nogap, "w").write('{"id": 1, "prompt_ids": [1], "expected_ids": [1, 2], "top2_gap": [1]}\n')
        nomodel = os.path.join(d, "nomodel.jsonl")
        open(nomodel, "w").write('{"id": 1, "prompt_ids": [1], "expected_ids": [1]}\n')
        unknown = os.path.join(d, "unk.jsonl")
        open(unknown, "w").write('{"id": 1, "prompt_ids": [1], "expected_id": [1]}\n')
        garbage = os.path.join(d, "garbage.bin")
        open(garbage, "wb").write(b"_logits_" + b"\0" * 40)
        short = os.path.join(d, "short.txt")
        open(short, "w").write("1 2 3 4 5 6 7 8 9\n")
        cases = [
            (["verify", os.path.join(d, "missing.jsonl"), "-m", MODEL], 3, "missing.jsonl"),
            (["verify", badjson, "-m", MODEL], 1, "bad.jsonl:2"),
            (["verify", nogap, "-m", MODEL], 1, "top2_gap"),
            (["verify", unknown, "-m", MODEL], 1, "expected_id"),
            (["verify", nomodel], 1, "-m MODEL"),
            (["verify", badjson, "-m", MODEL, "--tolerance", "-1"], 1, "--tolerance"),
            (["verify", badjson, "-m", MODEL, "--tolerance", "abc"], 1, "--tolerance"),
            (["verify"], 1, "usage"),
            (["perplexity", "-m", MODEL, "-f", os.path.join(d, "missing.txt")], 3, "missing.txt"),
            (["perplexity", "-m", MODEL, "-f", short, "-c", "abc"], 1, "-c"),
            (["perplexity", "-m", MODEL, "-f", short, "--chunks", "0"], 1, "--chunks"),
            (["perplexity", "-m", MODEL, "--ids-file", short, "-c", "8"], 1, "needs at least 16"),
            (["perplexity", "-m", MODEL, "--ids-file", badjson], 1, "token ids"),
            (["perplexity", "-m", MODEL, "--kl-divergence-base", garbage, "--kl-divergence"], 1, "garbage.bin"),
            (["perplexity", "-m", MODEL, "--kl-divergence-base", short, "--kl-divergence"], 1, "short.txt"),
            (["perplexity", "-m", MODEL, "--kl-divergence"], 1, "--kl-divergence-base"),
            (["perplexity", "-m", MODEL, "-f", short, "--kl-divergence-base", garbage, "--kl-divergence"], 1, "-f"),
            (["perplexity", "-f", short], 1, "model"),
            (["perplexity", "-m", os.path.join(d, "nomodel.gguf"), "-f", short], 3, "nomodel.gguf"),
            (["-m", MODEL, "-p", "x", "--logprobs", "2"], 1, "--logprobs"),
            (["-m", MODEL, "-p", "x", "--json", "--logprobs", "101"], 1, "--logprobs"),
            (["-m", MODEL, "-p", "x", "--json", "--logprobs", "x"], 1, "--logprobs"),
        ]
        for args, code, word in cases:
            rc, out, err = run(args)
            lines = err.strip().split("\n")
            if rc != code or len(lines) != 1 or not lines[0].startswith("llmgen: ") or word not in lines[0]:
                fail("%s: exit %d (want %d), stderr %r (want one 'llmgen: ' line naming %r)" % (
                    " ".join(a.replace(d, "TMP").replace(REPO + "/", "") for a in args), rc, code, err, word))
        rc, out, err = run(["-m", MODEL, "--batch", "-"], stdin=b'{"prompt": "x", "logprobs": -1}\n')
        if rc != 1 or '"logprobs\\" must be' not in out:
            fail("--batch with \"logprobs\": -1: exit %d, %r" % (rc, out))
        print("bad input: %d cases, one line each with the documented exit code" % (len(cases) + 1))


def main():
    if not os.path.exists(MODEL):
        print("check_quality: %s missing (make model)" % MODEL)
        return 1
    refs = json.load(open(os.path.join(Q, "perplexity.json")))
    check_perplexity(refs)
    check_kld_roundtrip(refs)
    check_logprobs()
    check_verify()
    check_bad_input()
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("check_quality: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
