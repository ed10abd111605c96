#!/usr/bin/env python3
"""Thinking output kept apart from the answer (llmgen_reasoning_*), on the default model with the real templates of
four thinking families and outputs forced by a grammar (no thinking model needed: the split is on the text).

  - Qwen3 (its template: the model writes "<think>R</think>"), LFM2.5 (the same, no blank line), a DeepSeek-R1 distill (its template opens
    "<think>\\n" itself: the output starts inside the block) and gpt-oss (harmony: "<|channel|>analysis<|message|>R
    <|end|><|start|>assistant<|channel|>final<|message|>A", reasoning_effort through --chat-template-kwargs):
    --chat prints only the answer; --reasoning show and --reasoning-format none print the output as generated;
    --json and --batch results carry "reasoning", "text" (the answer) and "answer_offset" apart;
  - Qwen3.5's template with {"enable_thinking": false} (the prompt closes the block) and an output without a
    block: all answer, byte for byte, and no "reasoning" key;
  - --reasoning-budget 5 on the distill's template: five thinking tokens, "</think>\n\n", then the answer;
  - bad --chat-template-kwargs / --reasoning values: one stderr line, exit 1.
Standard library only; exits 1 on failure. About 8 CPU-seconds (17 runs of the default model).
"""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
TEMPLATES = os.path.join(CACHE, "chat-templates", "llama.cpp")

R, A = "Let me think: é, 2+2.\nSo 4.", "It is 4."
CASES = [  # (name, template, forced output, kwargs)
    ("qwen3", "Qwen-Qwen3-0.6B.jinja", "<think>%s</think>\n\n%s" % (R, A), None),
    ("deepseek-r1-distill", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "%s</think>\n\n%s" % (R, A), None),
    ("lfm2.5", "LFM2.5-8B-A1B.jinja", "<think>%s</think>%s" % (R, A), None),
    ("gpt-oss", "openai-gpt-oss-120b.jinja",
     "<|channel|>analysis<|message|>%s<|end|><|start|>assistant<|channel|>final<|message|>%s" % (R, A),
     {"reasoning_effort": "high"}),
]


def gbnf(text):
    return "root ::= " + json.dumps(text, ensure_ascii=False)


def run(args, stdin=None):
    p = subprocess.run([LLMGEN, "-m", MODEL, "-t", "1"] + args, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def main():
    for need in (MODEL, TEMPLATES):
        if not os.path.exists(need):
            print("FAIL: %s is missing (make model chat-templates)" % need)
            return 1
    fails = []

    def want(label, cond, detail=""):
        print("%s %s%s" % ("ok  " if cond else "FAIL", label, "" if cond else ": " + detail))
        if not cond:
            fails.append(label)

    with tempfile.TemporaryDirectory() as tmp:
        for name, tfile, out, kw in CASES:
            base = ["-p", "What is 2+2?", "--chat", "--chat-template-file", os.path.join(TEMPLATES, tfile),
                    "--date", "02 Jan 2025", "--grammar", gbnf(out), "-n", "80"]
            if kw:
                base += ["--chat-template-kwargs", json.dumps(kw)]
            rc, so, se = run(base)
            want("%s: --chat prints the answer only" % name, rc == 0 and so == A + "\n", "rc %d %r %s" % (rc, so, se))
            for show in (["--reasoning", "show"],) + ((["--reasoning-format", "none"],) if name == "qwen3" else ()):
                rc, so, se = run(base + show)
                want("%s: %s prints the output as generated" % (name, " ".join(show)), rc == 0 and so == out + "\n",
                     "rc %d %r" % (rc, so))
            rc, so, se = run(base + ["--json"])
            j = json.loads(so) if rc == 0 else {}
            want("%s: --json has reasoning and text apart" % name,
                 j.get("reasoning") == R and j.get("text") == A
                 and out.encode()[j.get("answer_offset", 0):] == A.encode(),
                 "rc %d %s" % (rc, {k: j.get(k) for k in ("reasoning", "text", "answer_offset")}))
            if kw:
                rc, so, se = run(base + ["--echo"])
                want("%s: --chat-template-kwargs reaches the template" % name, "Reasoning: high" in so, so[:200])
            batch = os.path.join(tmp, name + ".jsonl")
            with open(batch, "w") as f:
                f.write(json.dumps({"id": 1, "prompt": "What is 2+2?", "chat": True, "grammar": gbnf(out)}) + "\n")
                f.write(json.dumps({"id": 2, "messages": [{"role": "user", "content": "Hi"}], "grammar": gbnf(out)}) + "\n")
            bargs = ["--batch", batch, "--chat-template-file", os.path.join(TEMPLATES, tfile), "--date", "02 Jan 2025",
                     "-n", "80"] + (["--chat-template-kwargs", json.dumps(kw)] if kw else [])
            rc, so, se = run(bargs)
            lines = [json.loads(l) for l in so.splitlines()] if rc == 0 else []
            want("%s: --batch results carry reasoning and text apart" % name,
                 len(lines) == 2 and lines[0].get("reasoning") == R and lines[0].get("text") == A
                 and lines[1].get("text") == A and lines[1].get("reasoning") == R,
                 "rc %d %s %s" % (rc, so[:300], se[:200]))

        q35 = ["-p", "Hi", "--chat", "--chat-template-file", os.path.join(TEMPLATES, "Qwen3.5-4B.jinja"),
               "--chat-template-kwargs", '{"enable_thinking": false}', "-n", "40"]
        plain = "  Hello </think> there <think>"
        rc, so, se = run(q35 + ["--echo", "--grammar", gbnf(plain), "--json"])
        j = json.loads(so) if rc == 0 else {}
        want("qwen3.5 enable_thinking false: the prompt closes the block, the output is all answer",
             rc == 0 and j.get("text") == plain and "reasoning" not in j, "rc %d %s" % (rc, so[:300]))
        rc, so, se = run(q35 + ["--grammar", gbnf(plain)])
        want("qwen3.5 enable_thinking false: --chat prints it byte for byte", rc == 0 and so == plain + "\n", repr(so))

        # --reasoning-budget: the distill's prompt opens the block; after 5 tokens "</think>\n\n" closes it
        bud = ["-p", "What is 2+2?", "--chat", "--chat-template-file",
               os.path.join(TEMPLATES, "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"), "-n", "16",
               "--reasoning-budget", "5"]
        rc, so, se = run(bud + ["--reasoning", "show"])
        rc2, so2, se2 = run(bud + ["--json"])
        j = json.loads(so2) if rc2 == 0 else {}
        want("--reasoning-budget 5 closes the block after 5 tokens, then the answer",
             rc == 0 and j.get("reasoning") and so.startswith(j["reasoning"] + "</think>\n\n")
             and so.endswith(j.get("text", "?") + "\n") and len(j.get("ids", [])) > 5,
             "rc %d %r %s" % (rc, so, {k: j.get(k) for k in ("reasoning", "text")}))

        for args, msg in ((["--chat-template-kwargs", "[1]"], "--chat-template-kwargs: expected a JSON object"),
                          (["--reasoning", "maybe"], "--reasoning: expected hide or show"),
                          (["--reasoning-format", "yes"], "--reasoning-format: expected none, deepseek or auto")):
            rc, so, se = run(["-p", "x", "--chat"] + args)
            want("%s: exit 1, one line" % " ".join(args), rc == 1 and not so and se.count("\n") == 1 and msg in se,
                 "rc %d %r" % (rc, se))
        rc, so, se = run(["-p", "x", "--chat-template-kwargs", "{}"])
        want("--chat-template-kwargs needs --chat", rc == 1 and "needs --chat" in se, se)
    if fails:
        print("FAIL: %d of the checks above" % len(fails))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
