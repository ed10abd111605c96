#!/usr/bin/env python3
"""Multi-turn chat-template references: what transformers renders (render_jinja_template, the
function apply_chat_template calls, tokenize=False) for

  - every template llama.cpp ships in the pinned llama-cpp-python sdist
    (CACHE/chat-templates/llama.cpp, fetched by `make chat-templates`),
  - the templates of tests/fixtures/tokenizers/chat (the eleven built-in families' sources),
  - the template of every model in models.txt that has one (SmolLM2-135M-Instruct: the GGUF's
    tokenizer.chat_template, and the HF directories' chat_template.jinja, with their special tokens),

each with the conversations of CASES below, into tests/refs/chat/templates.json.
tests/cli/check_chat_template.py renders the same with `llmgen chat-template` and requires
byte-equal text, or a failure (exit 6) where transformers raised, with the template's own
message when it called raise_exception.

Fixed inputs: bos_token "<s>" and eos_token "</s>" for template files (llmgen gets them with
--bos-token / --eos-token); the model's own tokens for models (as AutoTokenizer loads them);
date_string = DATE and a clock frozen at DATE 00:00:00 local time for strftime_now (llmgen gets
--date DATE). tools and documents are None (transformers' defaults). A template that reads
enable_thinking is also rendered with it False and True ("vars" of a result; llmgen gets
--chat-template-kwargs). A template that reads reasoning_effort (gpt-oss's harmony, ...) is also rendered
with it "low" and "high", and with the REASONING_CASES (a developer message, a system message beside
a developer one, past and final assistant turns with a "thinking" field, model_identity) with
reasoning_effort unset, "low" and "high".

A template is "tried" when transformers renders at least one case; one that transformers cannot
render at all without tools is listed under "not_rendered" with transformers' error.

Usage: .cache/venv-ref/bin/python tests/gen/gen_chat_template_refs.py CACHE   (make chat-refs)
"""
import datetime
import hashlib
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "tests", "refs", "chat", "templates.json")
FIXTURE_CHAT = os.path.join(REPO, "tests", "fixtures", "tokenizers", "chat")
DATE = "02 Jan 2025"
BOS, EOS = "<s>", "</s>"

SYS = {"role": "system", "content": "You are a pirate."}
CASES = [
    ("user", [{"role": "user", "content": "Hello!"}], True),
    ("system+user", [SYS, {"role": "user", "content": "What is the capital of France?"}], True),
    ("three-turn", [{"role": "user", "content": "Hi there"},
                    {"role": "assistant", "content": "Hello! How can I help?"},
                    {"role": "user", "content": "Tell me a joke."}], True),
    ("system+three-turn", [SYS, {"role": "user", "content": "Hi there"},
                           {"role": "assistant", "content": "Arr, ahoy!"},
                           {"role": "user", "content": "Where is the treasure?"}], True),
    ("ends-with-assistant", [{"role": "user", "content": "What is 2+2?"},
                             {"role": "assistant", "content": "4"}], False),
    ("system+ends-with-assistant", [SYS, {"role": "user", "content": "Name a colour."},
                                    {"role": "assistant", "content": "Blue."}], False),
    ("whitespace", [{"role": "system", "content": "  padded system \n"},
                    {"role": "user", "content": " \t padded user\n\n  indented\n"}], True),
    ("non-ascii", [{"role": "user", "content": "Écris un haïku sur la mer 🌊"},
                   {"role": "assistant", "content": "Vagues d’écume — 波の音"},
                   {"role": "user", "content": "Merci ! Ещё один? \u3000«ok»"}], True),
]


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def freeze_clock(module):
    """strftime_now calls datetime.now() in transformers' chat_template_utils: fix it at DATE."""
    fixed = datetime.datetime.strptime(DATE, "%d %b %Y")

    class Frozen(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return fixed

    module.datetime = Frozen


# A template that reads enable_thinking (Qwen3, Qwen3.5, ...) is rendered once more per case with it set
# each way, as apply_chat_template(..., enable_thinking=...) passes it (llmgen: --chat-template-kwargs).
THINKING = [{"enable_thinking": False}, {"enable_thinking": True}]


# Cases for templates that read reasoning_effort (gpt-oss: developer messages, thinking fields).
EFFORT = [{"reasoning_effort": "low"}, {"reasoning_effort": "high"}]
DEV = {"role": "developer", "content": "Answer in French."}
REASONING_CASES = [
    ("developer+user", [DEV, {"role": "user", "content": "What is the capital of France?"}], True),
    ("developer+three-turn", [DEV, {"role": "user", "content": "Hi there"},
                              {"role": "assistant", "content": "Bonjour !"},
                              {"role": "user", "content": "Tell me a joke."}], True),
    ("system+developer+user", [SYS, DEV, {"role": "user", "content": "Hello!"}], True),
    ("thinking-past-turn", [{"role": "user", "content": "What is 2+2?"},
                            {"role": "assistant", "content": "4", "thinking": "Two plus two is four."},
                            {"role": "user", "content": "And 3+3?"}], True),
    ("thinking-final-turn", [DEV, {"role": "user", "content": "What is 2+2?"},
                             {"role": "assistant", "content": "4", "thinking": "Two plus two is four.\nSo: 4."}], False),
    ("thinking-multiline", [{"role": "user", "content": "Écris 🌊"},
                            {"role": "assistant", "content": "Vagues", "thinking": "  L'utilisateur veut un mot.\n\n"},
                            {"role": "user", "content": "Encore"}], True),
]
IDENTITY = [{"model_identity": "You are a small test model."},
            {"model_identity": "You are a small test model.", "reasoning_effort": "high"}]


def render_all(render, template, bos, eos):
    results = []
    variants = [None] + (THINKING if "enable_thinking" in template else [])
    cases = [(c, v) for v in variants for c in CASES]
    if "reasoning_effort" in template:
        cases += [(c, v) for v in EFFORT for c in CASES]
        cases += [(c, v) for v in [None] + EFFORT for c in REASONING_CASES]
        if "model_identity" in template:
            cases += [(c, v) for v in IDENTITY for c in REASONING_CASES[:2]]
    for (name, msgs, gen), vars_ in cases:
        kw = dict(vars_ or {}, date_string=DATE)
        if bos is not None:
            kw["bos_token"] = bos
        if eos is not None:
            kw["eos_token"] = eos
        try:
            text = render(conversations=[msgs], chat_template=template, add_generation_prompt=gen, **kw)[0][0]
            results.append(dict({"case": name, "text": text}, **({"vars": vars_} if vars_ else {})))
        except Exception as e:  # what transformers raises is the expected outcome
            results.append(dict({"case": name, "error": "%s: %s" % (type(e).__name__, e)},
                                **({"vars": vars_} if vars_ else {})))
    return results


def model_templates(cache):
    """(name, template, bos, eos, how llmgen loads it) for the models.txt models that carry a template."""
    from transformers import AutoTokenizer
    out = []
    gguf_dir = os.path.join(cache, "models")
    tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    out.append(("model:SmolLM2-135M-Instruct Q4_1", tok.chat_template, tok.bos_token, tok.eos_token,
                {"model": "models/SmolLM2-135M-Instruct.Q4_1.gguf"}))
    hf = os.path.join(REPO, "tests", "fixtures", "smollm2-hf")
    tok = AutoTokenizer.from_pretrained(hf)
    for variant in ("f32", "bf16"):
        out.append(("model:SmolLM2-135M-Instruct %s HF dir" % variant, tok.chat_template, tok.bos_token,
                    tok.eos_token, {"model": "fixtures/smollm2-hf-%s" % variant}))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_chat_template_refs.py CACHE")
    cache = sys.argv[1]
    import jinja2
    import transformers
    import transformers.utils.chat_template_utils as ctu
    freeze_clock(ctu)
    render = ctu.render_jinja_template

    sources = []
    lc = os.path.join(cache, "chat-templates", "llama.cpp")
    for f in sorted(os.listdir(lc)):
        if f.endswith(".jinja"):
            with open(os.path.join(lc, f), encoding="utf-8") as fh:
                sources.append(("llama.cpp:" + f, fh.read(), BOS, EOS, {"file": "llama.cpp/" + f}))
    for f in sorted(os.listdir(FIXTURE_CHAT)):
        if f.endswith(".jinja"):
            with open(os.path.join(FIXTURE_CHAT, f), encoding="utf-8") as fh:
                sources.append(("fixture:" + f, fh.read(), BOS, EOS, {"file": "fixtures/tokenizers/chat/" + f}))
    sources += model_templates(cache)

    out = {"generator": "tests/gen/gen_chat_template_refs.py", "transformers_version": transformers.__version__,
           "jinja2_version": jinja2.__version__, "function": "transformers.utils.chat_template_utils.render_jinja_template",
           "llama_cpp_sdist": "llama_cpp_python-0.3.36.tar.gz (vendor/llama.cpp/models/templates)",
           "date": DATE, "bos_token": BOS, "eos_token": EOS,
           "cases": [{"name": n, "messages": m, "add_generation_prompt": g} for n, m, g in CASES + REASONING_CASES],
           "templates": {}, "not_rendered": {}}
    for name, template, bos, eos, where in sources:
        results = render_all(render, template, bos, eos)
        if all("error" in r for r in results):
            out["not_rendered"][name] = dict(where, sha256=sha256(template), error=results[0]["error"])
            print("%s: transformers renders no case (%s)" % (name, results[0]["error"][:100]))
            continue
        entry = dict(where, sha256=sha256(template), results=results)
        if "model" in where:
            entry["bos_token"], entry["eos_token"] = bos, eos
        out["templates"][name] = entry
        print("%s: %d cases, %d raise" % (name, len(results), sum("error" in r for r in results)))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%d templates tried, %d not rendered by transformers without tools" %
          (len(out["templates"]), len(out["not_rendered"])))


if __name__ == "__main__":
    main()
