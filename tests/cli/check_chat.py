#!/usr/bin/env python3
"""Multi-turn chat (issue 19), through the library and the CLI. Standard library only.

  - conversations (system / user / assistant messages) render as transformers does
    (tests/refs/tokenizer/chat-conversations.json, from tests/gen/gen_chat_conv_refs.py) through
    each template's own Jinja text, and fail cleanly where transformers' render raises (the
    template's raise_exception); the chatml built-in forced by name renders the same
    (build/tok_driver conv: tok_chat_render_messages, behind llmgen_chat_render_messages);
  - `llmgen -i --ids` on a pseudo-terminal, build/lib_client --chat (the conversation written by
    hand on llmgen_generate) and build/chat_client (llmgen_chat_turn) give the same ids for the
    same two turns, with and without a system message;
  - -i keeps the KV cache: with --stats, turn 2 prefills fewer tokens than turn 1's prompt and
    reply together (a re-prefill of the conversation would need more);
  - -i: Ctrl-C stops the reply, not the chat (the next turn is answered); Ctrl-D ends it, exit 0;
  - a prompt typed on a terminal ends with one Ctrl-D, also without a final newline.
Environment: LLMGEN (binary, default ./llmgen), LLMGEN_CACHE (default .cache).
"""
import json
import os
import pty
import re
import select
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
DRIVER = os.path.join(REPO, "build", "tok_driver")
REFS = os.path.join(REPO, "tests", "refs", "tokenizer")
N = 16  # tokens per reply at most

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_tokenizer import tokenizer_args  # noqa: E402  (fixture tokenizer files, unpacked)

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL  " + msg, flush=True)


def ok(msg):
    print("ok    " + msg, flush=True)


# ---- conversations vs transformers -------------------------------------------------------------

# template -> (family llmgen renders conversations with, or None: one exchange only)
FAMILIES = {"own:smollm2": "chatml", "llama-3-instruct.jinja": "llama3", "llama-3.1-instruct.jinja": "llama3.1",
            "llama-3.2-instruct.jinja": "llama3.2"}


def check_conversations(tmp):
    ref = json.load(open(os.path.join(REFS, "chat-conversations.json"), encoding="utf-8"))
    man = json.load(open(os.path.join(REFS, "manifest.json")))
    same = refused = 0
    for name, info in ref["templates"].items():
        args = tokenizer_args(tmp, info["base"], man["tokenizers"][info["base"]])
        if not name.startswith("own:"):
            with open(args[3], encoding="utf-8") as f:
                cfg = json.load(f)
            with open(os.path.join(REPO, "tests", "fixtures", "tokenizers", "chat", name), encoding="utf-8") as f:
                cfg["chat_template"] = f.read()
            args = args[:3] + [os.path.join(tmp, "conv-" + name + ".json")]
            with open(args[3], "w", encoding="utf-8") as f:
                json.dump(cfg, f)
        family = FAMILIES.get(name)
        # the template's own Jinja text; the chatml built-in forced by name too (the templates outside the four
        # families run 3 cases: their 128k-token tokenizer is slow to load once per render)
        for forced in ([None, family] if family == "chatml" else [None]):
            for c in info["cases"] if family else info["cases"][:3]:
                cmd = [DRIVER] + args + (["--template", forced] if forced else []) + \
                      (["--date", c["date"]] if c["date"] else []) + ["conv", "1" if c["add_generation_prompt"] else "0"]
                for role, content in c["messages"]:
                    cmd += [role, content]
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                got, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
                label = "%s%s %r" % (name, " --template " + forced if forced else "", c["messages"][-1][1])
                if (family or not forced) and "text" in c:
                    if p.returncode or got != c["text"]:
                        fail("conversation %s: got %r (%s) want %r" % (label, got, err.strip(), c["text"]))
                    else:
                        same += 1
                elif p.returncode != 1 or got or err.count("\n") != 1:
                    fail("conversation %s: want one clean error, got exit %d %r %r" % (label, p.returncode, got, err))
                else:  # a conversation transformers refuses too (the template's raise_exception)
                    refused += 1
    p = subprocess.run([DRIVER] + tokenizer_args(tmp, "smollm2", man["tokenizers"]["smollm2"]) +
                       ["conv", "1", "user", "a", "robot", "b"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 3 or b"robot" not in p.stderr:
        fail("conversation with role 'robot': exit %d %r (want 3 naming the role)" % (p.returncode, p.stderr))
    if not failures:
        ok("conversations: %d renders of the templates' own Jinja text (and the chatml built-in) equal "
           "transformers %s; %d conversations the template itself refuses are one clean error; a bad role is a "
           "usage error"
           % (same, ref["transformers_version"], refused))


# ---- the CLI on a pseudo-terminal ------------------------------------------------------------------

class Pty:
    def __init__(self, args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(LLMGEN, [LLMGEN] + args)
        self.buf = b""

    def read_until(self, pattern, timeout=120):
        """Read until `pattern` (a regex on bytes) matches the output since the last call."""
        end = time.time() + timeout
        while time.time() < end:
            m = re.search(pattern, self.buf, re.S)
            if m:
                out, self.buf = self.buf[:m.end()], self.buf[m.end():]
                return out
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    d = os.read(self.fd, 4096)
                except OSError:
                    d = b""
                if not d:
                    break
                self.buf += d
        out, self.buf = self.buf, b""
        return out + b"<timeout or end>"

    def send(self, data):
        os.write(self.fd, data)

    def wait(self, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            try:
                os.read(self.fd, 4096)
            except OSError:
                time.sleep(0.05)
        os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        return None


def interactive_ids(turns, system=None, stats=False):
    """Each turn's reply ids from `llmgen -i --ids`, the --stats lines (stderr is the pty too), exit code."""
    args = ["-m", MODEL, "-i", "--ids", "-n", str(N)] + (["--system", system] if system else []) + \
           (["--stats"] if stats else [])
    t = Pty(args)
    t.read_until(rb"> ")
    replies, stats_lines = [], []
    for turn in turns:
        t.send(turn.encode() + b"\n")
        out = t.read_until(rb"\n> ").decode("utf-8", "replace")
        lines = [l.strip() for l in out.replace("\r", "").split("\n")]
        stats_lines += [l for l in lines if l.startswith("llmgen: load")]
        ids = [l for l in lines if re.fullmatch(r"\d+(,\d+)*", l)]
        replies.append([int(x) for x in ids[0].split(",")] if ids else None)
    t.send(b"\x04")
    return replies, stats_lines, t.wait()


def client_ids(exe, args):
    p = subprocess.run([os.path.join(REPO, "build", exe)] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    if p.returncode:
        fail("%s %s: exit %d: %s" % (exe, " ".join(args[1:]), p.returncode, p.stderr.decode()[-400:]))
        return None
    return [[int(x) for x in l.split(",")] if l else [] for l in p.stdout.decode().strip("\n").split("\n")]


def check_two_turns():
    for turns, system in ((["What is 2+2?", "And times 3?"], None),
                          (["Name a fruit.", "What color is it?"], "You answer in one short sentence.")):
        cli, _, rc = interactive_ids(turns, system)
        extra = [system] if system else []
        by_hand = client_ids("lib_client", [MODEL, str(N), "--chat"] + turns + extra)
        chat = client_ids("chat_client", [MODEL, str(N)] + turns + extra)
        if rc != 0 or None in cli:
            fail("llmgen -i: exit %s, replies %s" % (rc, cli))
        elif not (cli == by_hand == chat):
            fail("two turns %r: llmgen -i %s, lib_client %s, chat_client %s" % (turns, cli, by_hand, chat))
        else:
            ok("two turns%s: llmgen -i (pty) == lib_client by hand == chat_client: %s" %
               (" with --system" if system else "", cli))


def check_cache_kept():
    _, stats, rc = interactive_ids(["What is 2+2?", "And times 3?"], stats=True)
    got = [re.search(r"prompt (\d+) tokens .* generation (\d+) tokens", s) for s in stats]
    if rc != 0 or len(got) != 2 or not all(got):
        fail("-i --stats: exit %s, stats lines %s" % (rc, stats))
        return
    p1, g1 = map(int, got[0].groups())
    p2 = int(got[1].group(1))
    if p2 >= p1 + g1:
        fail("-i: turn 2 prefilled %d tokens, not fewer than turn 1's prompt %d + reply %d: cache not kept"
             % (p2, p1, g1))
    else:
        ok("-i keeps the KV cache: turn 2 prefilled %d tokens (turn 1: prompt %d + reply %d)" % (p2, p1, g1))


def check_ctrl_c_ctrl_d():
    t = Pty(["-m", MODEL, "-i", "-n", "200", "--ignore-eos"])  # the Ctrl-C comes after ~20 bytes
    t.read_until(rb"> ")
    t.send(b"Tell me a very long story.\n")
    t.read_until(rb"Tell me a very long story\.\r\n.{20}")  # the reply is streaming
    t.send(b"\x03")
    after = t.read_until(rb"\n> ", timeout=60)
    t.send(b"Say hi.\n")
    second = t.read_until(rb"\n> ", timeout=120)
    t.send(b"\x04")
    rc = t.wait()
    if not after.endswith(b"> ") or not second.endswith(b"> ") or rc != 0:
        fail("-i Ctrl-C / Ctrl-D: after Ctrl-C %r, next turn %r, exit %s (want a new prompt, a reply, 0)"
             % (after[-80:], second[-80:], rc))
    else:
        ok("-i: Ctrl-C stopped the reply and the next turn was answered; Ctrl-D ended the chat with exit 0")


def check_one_ctrl_d():
    t = Pty(["-m", MODEL, "-n", "4", "--ids"])
    time.sleep(0.5)
    t.send(b"Water boils at")  # no newline: one Ctrl-D must end the prompt
    time.sleep(0.3)
    t.send(b"\x04")
    out = t.read_until(rb"\d+,\d+,\d+,\d+\r\n", timeout=60)
    rc = t.wait()
    want = subprocess.run([LLMGEN, "-m", MODEL, "-n", "4", "--ids", "-p", "Water boils at"],
                          stdout=subprocess.PIPE).stdout.strip()
    if rc != 0 or want not in out:
        fail("prompt on a terminal + one Ctrl-D: exit %s, output %r (want %r)" % (rc, out[-120:], want))
    else:
        ok("a prompt typed on a terminal ends with one Ctrl-D (no newline needed): same ids as -p")


def main():
    import tempfile
    for path in (LLMGEN, MODEL, DRIVER):
        if not os.path.exists(path):
            print("check_chat: %s is missing (make llmgen model build/tok_driver)" % path)
            return 1
    t = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        check_conversations(tmp)
    check_two_turns()
    check_cache_kept()
    check_ctrl_c_ctrl_d()
    check_one_ctrl_d()
    print("check_chat: %d failures in %.1f s" % (len(failures), time.time() - t))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
