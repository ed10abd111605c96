#!/usr/bin/env python3
"""`llmgen serve` against the official openai Python client (pinned, .cache/venv-serve: make serve-venv).

Usage: check_serve.py        (run by `make regress`; it re-runs itself under the venv's python)

On the default model, loopback only, 2 threads, 3 slots of 512 tokens, an API key: the server's answers
are compared with the CLI's `--batch` results for the same requests (one CLI run): greedy completions
and chat, streamed and not (the streamed deltas joined equal the whole answer), n = 2 with a seed
(choice i is the CLI's run with seed + i), a stop string, chat logprobs with top_logprobs (ids' texts and
log-probabilities equal the CLI's), response_format with a JSON schema (the output parses and has the
schema's keys and types), a <think> block (forced by a grammar) given as reasoning_content apart from
the content, whole and streamed, usage counts (prompt and completion tokens equal the CLI's ids). Tools
(a server each with Qwen2.5's, Llama 3.1's and Mistral Nemo's templates): tool_choice naming a function
gives one call whose arguments validate, the same streamed, required gives calls to the given
functions, an unknown function is a 400; with Qwen2.5's, a call the answer writes (auto) is parsed with
the text before it as content, and the call with the tool's answer sent back gives the CLI's --batch
bytes for the same messages; SmolLM2's own template does not show tools: a 400. Raw SSE
framing through curl: every event is "data: " + JSON or a comment, [DONE] last, text/event-stream.
Errors as OpenAI's error object: a wrong key (401), malformed JSON (400), a bad field value (400 naming
it; presence_penalty out of OpenAI's range), presence / frequency penalties (the CLI's bytes, and
not those without them), a prompt longer than the context (400
context_length_exceeded), an oversize body (413), an unknown route (404). /tokenize and /detokenize
against --tokenize; /v1/models; /metrics counters. A client that closes a stream after its first
chunk frees its slot (slots_busy back to 0). A slowloris client (headers a byte a second) is dropped
after --timeout while a normal request is served meanwhile. SIGTERM during a stream: the stream
still ends with [DONE], new connections are refused, the server exits 0. Every wait is bounded; the
server is killed at the end whatever happens.

Environment: LLMGEN (binary, default ./llmgen), LLMGEN_CACHE (default .cache). Exits 1 on any failure.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMGEN = os.environ.get("LLMGEN", os.path.join(REPO, "llmgen"))
CACHE = os.environ.get("LLMGEN_CACHE", os.path.join(REPO, ".cache"))
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
VENV_PY = os.path.join(CACHE, "venv-serve", "bin", "python")
KEY = "sk-test-0123456789"
CTX = 512

if os.path.realpath(sys.prefix) != os.path.realpath(os.path.join(CACHE, "venv-serve")):
    if not os.path.exists(VENV_PY):
        print("FAIL  %s missing: run `make serve-venv`" % VENV_PY)
        sys.exit(1)
    os.execv(VENV_PY, [VENV_PY, os.path.abspath(__file__)] + sys.argv[1:])

import openai  # noqa: E402  (the venv's)

failures = 0


def check(ok, what):
    global failures
    print(("ok    " if ok else "FAIL  ") + what)
    sys.stdout.flush()
    failures += not ok


SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
CHAT = [{"role": "user", "content": "What is the capital of France?"}]
CLI_REQUESTS = [
    {"id": "greedy", "prompt": "The capital of France is", "max_tokens": 16},
    {"id": "chat", "messages": CHAT, "max_tokens": 24},
    {"id": "seed0", "prompt": "Once upon a time", "max_tokens": 12, "temperature": 0.8, "seed": 11},
    {"id": "seed1", "prompt": "Once upon a time", "max_tokens": 12, "temperature": 0.8, "seed": 12},
    {"id": "stop", "prompt": "Count: one, two, three,", "max_tokens": 30, "stop": [" six"]},
    {"id": "penalties", "prompt": "Count: one, two, three, one, two", "max_tokens": 20, "frequency_penalty": 1.5,
     "presence_penalty": 0.5},
    {"id": "no_penalties", "prompt": "Count: one, two, three, one, two", "max_tokens": 20},
    {"id": "logprobs", "messages": CHAT, "max_tokens": 6, "logprobs": 2},
    {"id": "schema", "messages": [{"role": "user", "content": "Describe a person as JSON."}], "max_tokens": 40,
     "json_schema": SCHEMA},
]


def cli_results():
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for r in CLI_REQUESTS:
            f.write(json.dumps(r) + "\n")
        path = f.name
    try:
        p = subprocess.run([LLMGEN, "-m", MODEL, "-t", "2", "-c", str(CTX), "--batch", path], capture_output=True,
                           text=True, timeout=300)
    finally:
        os.unlink(path)
    check(p.returncode == 0, "CLI --batch of the reference requests exits 0 (%s)" % p.stderr.strip()[-200:])
    return {r["id"]: r for r in map(json.loads, p.stdout.splitlines())}


def start_server(extra=()):
    cmd = [LLMGEN, "serve", "-m", MODEL, "--port", "0", "-t", "2", "--parallel", "3", "-c", str(CTX),
           "--api-key", KEY, "--timeout", "3", "--max-body", "65536", "--keepalive", "0.5"] + list(extra)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port, deadline = None, time.time() + 30
    while port is None and time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        if "listening on http://127.0.0.1:" in line:
            port = int(line.split("127.0.0.1:")[1].split()[0])
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()  # never let its pipe fill
    return p, port


def http(port, method, path, body=None, key=KEY, raw=None, timeout=60):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method)
    if key:
        req.add_header("Authorization", "Bearer " + key)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


def is_error_object(text):
    try:
        e = json.loads(text)["error"]
        return all(k in e for k in ("message", "type", "param", "code"))
    except (ValueError, KeyError, TypeError):
        return False


def metric(port, name):
    _, text, _ = http(port, "GET", "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    return None


def client_checks(port, cli):
    c = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key=KEY, max_retries=0, timeout=120)
    # completions, greedy: the CLI's bytes and counts
    r = c.completions.create(model="m", prompt="The capital of France is", max_tokens=16, temperature=0)
    g = cli["greedy"]
    check(r.choices[0].text == g["text"], "completions greedy text equals the CLI's (%r)" % r.choices[0].text)
    check(r.usage.completion_tokens == len(g["ids"]) and r.usage.prompt_tokens == len(g["prompt_ids"]),
          "completions usage: %d prompt, %d completion tokens (CLI %d, %d)" % (
              r.usage.prompt_tokens, r.usage.completion_tokens, len(g["prompt_ids"]), len(g["ids"])))
    check(r.model == "m" and r.object == "text_completion", "completions reports the model asked for and its object")
    # the same streamed
    parts = [ch.choices[0].text for ch in c.completions.create(model="m", prompt="The capital of France is",
                                                              max_tokens=16, temperature=0, stream=True)
             if ch.choices]
    check("".join(parts) == g["text"] and len(parts) > 2, "completions streamed: %d chunks join to the CLI's text" %
          len(parts))
    # chat, greedy, whole and streamed
    r = c.chat.completions.create(model="m", messages=CHAT, max_tokens=24, temperature=0)
    ch = cli["chat"]
    check(r.choices[0].message.content == ch["text"] and r.choices[0].message.role == "assistant",
          "chat greedy content equals the CLI's (%r)" % r.choices[0].message.content)
    check(r.usage.prompt_tokens == len(ch["prompt_ids"]) and r.usage.completion_tokens == len(ch["ids"]),
          "chat usage counts equal the CLI's prompt and generated ids")
    fin = {"eos": "stop", "stop": "stop", "length": "length"}[ch["stop_reason"]]
    check(r.choices[0].finish_reason == fin, "chat finish_reason %s (CLI stop reason %s)" % (
        r.choices[0].finish_reason, ch["stop_reason"]))
    deltas, usage, roles = [], None, 0
    for chunk in c.chat.completions.create(model="m", messages=CHAT, max_tokens=24, temperature=0, stream=True,
                                           stream_options={"include_usage": True}):
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            roles += choice.delta.role == "assistant"
            if choice.delta.content:
                deltas.append(choice.delta.content)
    check("".join(deltas) == ch["text"] and roles == 1, "chat streamed: deltas join to the CLI's text, one role chunk")
    check(usage is not None and usage.completion_tokens == len(ch["ids"]),
          "chat streamed: the usage chunk counts the CLI's ids")
    # n = 2 with a seed: choice i is seed + i
    r = c.completions.create(model="m", prompt="Once upon a time", max_tokens=12, temperature=0.8, seed=11, n=2)
    texts = [x.text for x in sorted(r.choices, key=lambda x: x.index)]
    check(texts == [cli["seed0"]["text"], cli["seed1"]["text"]],
          "n=2, seed 11: the choices equal the CLI's runs with seeds 11 and 12")
    check(r.usage.completion_tokens == len(cli["seed0"]["ids"]) + len(cli["seed1"]["ids"]),
          "n=2: completion_tokens counts both choices")
    # stop
    r = c.completions.create(model="m", prompt="Count: one, two, three,", max_tokens=30, temperature=0, stop=" six")
    check(r.choices[0].text == cli["stop"]["text"] and r.choices[0].finish_reason ==
          {"stop": "stop", "eos": "stop", "length": "length"}[cli["stop"]["stop_reason"]],
          "stop string: text and finish_reason equal the CLI's (%r)" % r.choices[0].text)
    # OpenAI's presence and frequency penalties: the CLI's, and they change the answer
    r = c.completions.create(model="m", prompt="Count: one, two, three, one, two", max_tokens=20, temperature=0,
                             frequency_penalty=1.5, presence_penalty=0.5)
    check(r.choices[0].text == cli["penalties"]["text"] != cli["no_penalties"]["text"],
          "presence / frequency penalties: the CLI's text, unlike the one without (%r)" % r.choices[0].text)
    # logprobs
    r = c.chat.completions.create(model="m", messages=CHAT, max_tokens=6, temperature=0, logprobs=True,
                                  top_logprobs=2)
    lp = cli["logprobs"]["logprobs"]
    got = r.choices[0].logprobs.content
    same = len(got) == len(lp) and all(
        abs(a.logprob - b["logprob"]) == 0 and bytes(a.bytes).decode("utf-8", "replace") == b["text"] and
        [t.logprob for t in a.top_logprobs] == [t["logprob"] for t in b["top"]] for a, b in zip(got, lp))
    check(same, "chat logprobs (top 2): every token, log-probability and alternative equals the CLI's")
    # response_format json_schema
    r = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "Describe a person as JSON."}],
                                  max_tokens=40, temperature=0,
                                  response_format={"type": "json_schema",
                                                   "json_schema": {"name": "person", "schema": SCHEMA}})
    text = r.choices[0].message.content
    try:
        obj = json.loads(text)
        valid = set(obj) == {"name", "age"} and isinstance(obj["name"], str) and type(obj["age"]) is int
    except ValueError:
        valid = False
    check(valid and text == cli["schema"]["text"], "json_schema: the output validates and equals the CLI's (%r)" % text)
    # thinking apart from the answer: a grammar makes the model write a <think> block
    think = {"grammar": 'root ::= "<think>Let me see.</think>\\n\\nParis"'}
    r = c.chat.completions.create(model="m", messages=CHAT, max_tokens=30, temperature=0, extra_body=think)
    msg = r.choices[0].message
    check(msg.content == "Paris" and getattr(msg, "reasoning_content", None) == "Let me see.",
          "<think> output: reasoning_content %r, content %r" % (getattr(msg, "reasoning_content", None), msg.content))
    rs, cs = [], []
    for chunk in c.chat.completions.create(model="m", messages=CHAT, max_tokens=30, temperature=0, stream=True,
                                           extra_body=think):
        for choice in chunk.choices:
            rs.append(getattr(choice.delta, "reasoning_content", None) or "")
            cs.append(choice.delta.content or "")
    check("".join(rs) == "Let me see." and "".join(cs) == "Paris", "<think> streamed: reasoning and content deltas "
          "join to the same (%r, %r)" % ("".join(rs), "".join(cs)))
    # errors through the client
    bad = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="wrong", max_retries=0, timeout=30)
    try:
        bad.models.list()
        check(False, "a wrong API key is refused")
    except openai.AuthenticationError as e:
        check(e.status_code == 401, "a wrong API key: 401")
    for kw, param in (({"temperature": "hot"}, "temperature"), ({"presence_penalty": 2.5}, "presence_penalty")):
        try:
            c.completions.create(model="m", prompt="x", max_tokens=2, **kw)
            check(False, "%s refused" % param)
        except openai.BadRequestError as e:
            check(e.status_code == 400 and (e.body or {}).get("param") == param, "%s: 400 naming it (%s)" % (
                param, (e.body or {}).get("message")))
    try:
        c.completions.create(model="m", prompt="word " * (CTX + 10), max_tokens=2)
        check(False, "a prompt over the context is refused")
    except openai.BadRequestError as e:
        check((e.body or {}).get("code") == "context_length_exceeded", "a prompt over the context: 400 "
              "context_length_exceeded")
    models = c.models.list()
    check([m.id for m in models.data] == ["SmolLM2-135M-Instruct.Q4_1.gguf"], "/v1/models lists the served model")


TEMPLATES = os.path.join(CACHE, "chat-templates", "llama.cpp")
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
                   "required": ["city"], "additionalProperties": False}}}
CLOCK = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def valid_weather(args):
    try:
        a = json.loads(args)
    except ValueError:
        return False
    return isinstance(a, dict) and isinstance(a.get("city"), str) and set(a) <= {"city", "unit"} and \
        a.get("unit", "c") in ("c", "f")


def tool_checks(default_port):
    """Tools through templates that show them: Qwen2.5's (Hermes <tool_call>), Llama 3.1's (JSON),
    Mistral Nemo's ([TOOL_CALLS]); the round trip of a call and its answer equals the CLI's bytes."""
    c = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % default_port, api_key=KEY, max_retries=0, timeout=60)
    for kw, param in (({"tools": [WEATHER]}, "tools"),):
        try:  # SmolLM2's own template does not render tools: a 400 rather than tools silently dropped
            c.chat.completions.create(model="m", messages=ASK, max_tokens=4, **kw)
            check(False, "tools through a template that ignores them are refused")
        except openai.BadRequestError as e:
            check((e.body or {}).get("param") == param, "tools the template does not show: 400 naming tools (%s)"
                  % (e.body or {}).get("message"))
    for name, fmt in (("Qwen-Qwen2.5-7B-Instruct", "hermes"), ("meta-llama-Llama-3.1-8B-Instruct", "llama3"),
                      ("mistralai-Mistral-Nemo-Instruct-2407", "mistral")):
        template = os.path.join(TEMPLATES, name + ".jinja")
        p, port = start_server(["--chat-template-file", template, "--parallel", "1"])
        try:
            deadline = time.time() + 60
            while time.time() < deadline and http(port, "GET", "/health", key=None, timeout=5)[0] != 200:
                time.sleep(0.05)
            c = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key=KEY, max_retries=0, timeout=120)
            named = {"type": "function", "function": {"name": "get_weather"}}
            r = c.chat.completions.create(model="m", messages=ASK, tools=[WEATHER, CLOCK], tool_choice=named,
                                          max_tokens=60, temperature=0)
            m, calls = r.choices[0].message, r.choices[0].message.tool_calls or []
            check(len(calls) == 1 and calls[0].function.name == "get_weather" and valid_weather(
                calls[0].function.arguments) and r.choices[0].finish_reason == "tool_calls" and not m.content,
                  "%s (%s): tool_choice get_weather gives one call, arguments valid for its schema (%s)" % (
                      name, fmt, calls[0].function.arguments if calls else m.content))
            if not calls:
                continue
            deltas = [d for ch in c.chat.completions.create(model="m", messages=ASK, tools=[WEATHER, CLOCK],
                                                             tool_choice=named, max_tokens=60, temperature=0,
                                                             stream=True)
                      for d in ch.choices]
            streamed = [t for d in deltas for t in (d.delta.tool_calls or [])]
            check(len(streamed) == 1 and streamed[0].function.name == "get_weather" and
                  streamed[0].function.arguments == calls[0].function.arguments and
                  deltas[-1].finish_reason == "tool_calls",
                  "%s: streamed, the same call in a tool_calls delta, finish_reason tool_calls" % fmt)
            r = c.chat.completions.create(model="m", messages=ASK, tools=[WEATHER, CLOCK], tool_choice="required",
                                          max_tokens=60, temperature=0)
            calls2 = r.choices[0].message.tool_calls or []
            check(len(calls2) >= 1 and all(x.function.name in ("get_weather", "get_time") for x in calls2),
                  "%s: tool_choice required gives calls to the given functions (%s)" % (
                      fmt, [x.function.name for x in calls2]))
            try:
                c.chat.completions.create(model="m", messages=ASK, tools=[WEATHER], max_tokens=4,
                                          tool_choice={"type": "function", "function": {"name": "nope"}})
                check(False, "a tool_choice naming no given function is refused")
            except openai.BadRequestError as e:
                check((e.body or {}).get("param") == "tool_choice", "%s: tool_choice naming no given function: 400 "
                      "naming tool_choice" % fmt)
            if fmt != "hermes":
                continue
            # auto: a call the model writes (here forced by llama-server's grammar field) is parsed back
            forced = {"grammar": 'root ::= "Let me check.\\n<tool_call>\\n{\\"name\\": \\"get_time\\", '
                                 '\\"arguments\\": {\\"zone\\": \\"UTC\\"}}\\n</tool_call>"'}
            r = c.chat.completions.create(model="m", messages=ASK, tools=[WEATHER, CLOCK], max_tokens=60,
                                          temperature=0, extra_body=forced)
            m = r.choices[0].message
            check(m.content == "Let me check." and [(x.function.name, json.loads(x.function.arguments))
                                                   for x in m.tool_calls or []] == [("get_time", {"zone": "UTC"})],
                  "tool_choice auto: the text before the call is the content, the call is parsed (%r)" % m.content)
            # the answer sent back: the call and the tool's result rendered by the template, as the CLI renders them
            turn = ASK + [{"role": "assistant", "content": None, "tool_calls": [
                {"id": calls[0].id, "type": "function", "function": {"name": "get_weather",
                                                                     "arguments": calls[0].function.arguments}}]},
                          {"role": "tool", "tool_call_id": calls[0].id, "content": '{"celsius": 18}'}]
            r = c.chat.completions.create(model="m", messages=turn, tools=[WEATHER, CLOCK], max_tokens=24,
                                          temperature=0)
            with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
                f.write(json.dumps({"messages": turn, "tools": [WEATHER, CLOCK], "max_tokens": 24}) + "\n")
                path = f.name
            try:
                q = subprocess.run([LLMGEN, "-m", MODEL, "-t", "2", "-c", str(CTX), "--chat-template-file", template,
                                    "--batch", path], capture_output=True, text=True, timeout=120)
            finally:
                os.unlink(path)
            cli = json.loads(q.stdout) if q.returncode == 0 else {}
            check(r.choices[0].message.content == cli.get("text") and r.usage.prompt_tokens == len(
                cli.get("prompt_ids", [])) and '{"celsius": 18}' in http_detok(port, cli.get("prompt_ids", [])),
                  "the tool's answer sent back: the reply equals the CLI's --batch bytes, its prompt holds the "
                  "tool result (%r; %s)" % (r.choices[0].message.content, q.stderr.strip()[-200:]))
        finally:
            p.kill()
            p.wait(timeout=30)


def http_detok(port, ids):
    st, text, _ = http(port, "POST", "/detokenize", {"tokens": ids})
    return json.loads(text).get("content", "") if st == 200 else ""


def raw_checks(port, cli):
    st, text, _ = http(port, "POST", "/v1/chat/completions", raw=b'{"messages": [')
    check(st == 400 and is_error_object(text), "malformed JSON: 400 with an error object")
    st, text, _ = http(port, "POST", "/v1/completions", raw=json.dumps({"prompt": "x" * 70000}).encode())
    check(st == 413 and is_error_object(text), "a body over --max-body: 413 (%d)" % st)
    st, text, _ = http(port, "GET", "/v1/nothing")
    check(st == 404 and is_error_object(text), "an unknown route: 404")
    st, text, _ = http(port, "POST", "/tokenize", {"content": "The capital of France is"})
    check(st == 200 and json.loads(text)["tokens"] == cli["greedy"]["prompt_ids"], "/tokenize equals the CLI's ids")
    st, text, _ = http(port, "POST", "/detokenize", {"tokens": cli["greedy"]["ids"]})
    check(st == 200 and json.loads(text)["content"] == cli["greedy"]["text"], "/detokenize gives the CLI's text")
    # raw SSE through curl
    body = json.dumps({"model": "m", "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0,
                       "stream": True, "stream_options": {"include_usage": True}})
    p = subprocess.run(["curl", "-sS", "-N", "-i", "--max-time", "60", "-H", "Authorization: Bearer " + KEY,
                        "-H", "Content-Type: application/json", "-d", body,
                        "http://127.0.0.1:%d/v1/completions" % port], capture_output=True, text=True, timeout=90)
    head, _, events = p.stdout.replace("\r\n", "\n").partition("\n\n")
    blocks = [b for b in events.split("\n\n") if b.strip()]
    datas = [b[6:] for b in blocks if b.startswith("data: ")]
    framed = all(b.startswith("data: ") or b.startswith(":") for b in blocks)
    parsed = True
    for d in datas[:-1]:
        try:
            json.loads(d)
        except ValueError:
            parsed = False
    check(p.returncode == 0 and "text/event-stream" in head.lower() and framed and parsed and datas and
          datas[-1] == "[DONE]", "curl: SSE framing (%d events, data: JSON, [DONE] last, text/event-stream)" %
          len(datas))
    usage = json.loads(datas[-2]).get("usage") if len(datas) > 1 else None
    check(usage is not None and usage["completion_tokens"] == 8, "curl: the usage chunk before [DONE]")
    check((metric(port, 'llmgen_requests_total{status="200"}') or 0) >= 10 and
          (metric(port, "llmgen_generated_tokens_total") or 0) > 0, "/metrics counts responses and tokens")


def disconnect_check(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    body = json.dumps({"prompt": "Tell me a long story.", "max_tokens": 400, "temperature": 0, "stream": True,
                       "ignore_eos": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    while got.count(b"data: ") < 3:
        k = s.recv(4096)
        if not k:
            break
        got += k
    busy_during = metric(port, "llmgen_slots_busy")
    s.close()
    deadline, busy = time.time() + 10, None
    while time.time() < deadline:
        busy = metric(port, "llmgen_slots_busy")
        if busy == 0:
            break
        time.sleep(0.05)
    gen = metric(port, "llmgen_generated_tokens_total")
    check(busy_during == 1 and busy == 0, "a client gone mid-stream frees its slot (busy %s, then %s)" % (
        busy_during, busy))
    time.sleep(0.5)
    check(metric(port, "llmgen_generated_tokens_total") == gen, "its generation stopped (no tokens after)")


def slowloris_check(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    t0, closed = time.time(), False
    head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 64
    served = None
    for i, b in enumerate(head):
        try:
            s.send(bytes([b]))
        except OSError:
            closed = True
            break
        if i == 5:
            served = http(port, "GET", "/health")[0]  # another client meanwhile
        s.settimeout(0.25)
        try:
            if s.recv(1) == b"":
                closed = True
                break
        except socket.timeout:
            pass
        except OSError:
            closed = True
            break
        if time.time() - t0 > 12:
            break
    s.close()
    check(closed and time.time() - t0 < 8 and served == 200,
          "slowloris: dropped after %.1f s (--timeout 3), others served meanwhile (%s)" % (time.time() - t0, served))


def sigterm_check(p, port):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 40, "temperature": 0, "stream": True,
                       "ignore_eos": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer " +
              KEY.encode() + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    while b"data: {" not in got:
        k = s.recv(4096)
        if not k:
            break
        got += k
    p.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        refused = False
    except OSError:
        refused = True
    s.settimeout(30)
    while True:
        try:
            k = s.recv(4096)
        except OSError:
            break
        if not k:
            break
        got += k
    s.close()
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        rc = None
    check(b"data: [DONE]" in got and b'"finish_reason":"length"' in got,
          "SIGTERM: the running stream still finishes (all 40 tokens, [DONE])")
    check(refused, "SIGTERM: new connections are refused")
    check(rc == 0, "SIGTERM: the server exits 0 (%s)" % rc)


def main():
    if not os.path.exists(MODEL):
        print("FAIL  %s missing (make model)" % MODEL)
        return 1
    cli = cli_results()
    p, port = start_server()
    try:
        check(port is not None, "the server logs its port")
        if port is None:
            return 1
        deadline, st = time.time() + 60, None
        while time.time() < deadline:
            try:
                st = http(port, "GET", "/health", key=None, timeout=5)[0]
            except OSError:
                st = None
            if st == 200:
                break
            time.sleep(0.05)
        check(st == 200, "/health answers 200 once the model is loaded")
        client_checks(port, cli)
        tool_checks(port)
        raw_checks(port, cli)
        disconnect_check(port)
        slowloris_check(port)
        sigterm_check(p, port)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)
    print("serve: %d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
