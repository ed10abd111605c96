#!/usr/bin/env python3
"""Conversation references: transformers' apply_chat_template(messages, tokenize=False,
add_generation_prompt=...) for whole conversations (system, user and assistant turns) with
the fixture tokenizers' own templates and every real template in tests/fixtures/tokenizers/chat/,
written to tests/refs/tokenizer/chat-conversations.json. tests/cli/check_chat.py renders the
same conversations with llmgen (tok_chat_render_messages, behind llmgen_chat_render_messages)
and requires identical text where llmgen claims the family, a clean error elsewhere.

Usage: .cache/venv-ref/bin/python tests/gen/gen_chat_conv_refs.py
(needs transformers, as pinned in tests/gen/requirements-ref.txt; never run by CI)
"""
import gzip
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_chat_refs import FIX, TEMPLATES, load  # noqa: E402  (same fixture loading)

REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "tests", "refs", "tokenizer", "chat-conversations.json")
DATE = "02 Jan 2025"  # passed as date_string, so that Llama 3.2's strftime_now never decides

CONVERSATIONS = [
    ([("user", "What is 2+2?"), ("assistant", "4"), ("user", "And times 3?")], True),
    ([("system", "You are terse."), ("user", "Hi"), ("assistant", "Hello! How can I help?"),
      ("user", "Name a color.")], True),
    ([("user", "Hi"), ("assistant", "Hello!")], False),
    ([("system", "Be kind."), ("user", "Hi")], False),
    ([("user", "  padded user \n"), ("assistant", "\n padded reply  "), ("user", "x")], True),
    ([("user", "one"), ("assistant", "1"), ("user", "two"), ("assistant", "2"), ("user", "three")], True),
    ([("system", "Système 🇫🇷"), ("user", "Écris <|im_end|> ici"), ("assistant", "D'accord."),
      ("user", "Merci")], True),
]


def own_template(d, base):
    """The fixture tokenizer with its own template (tokenizer_config.json or chat_template.jinja)."""
    from transformers import AutoTokenizer
    with gzip.open(os.path.join(FIX, base, "tokenizer.json.gz"), "rb") as f, \
            open(os.path.join(d, "tokenizer.json"), "wb") as g:
        g.write(f.read())
    for name in ("tokenizer_config.json", "chat_template.jinja"):
        src = os.path.join(FIX, base, name)
        if os.path.exists(src):
            with open(src, "rb") as f, open(os.path.join(d, name), "wb") as g:
                g.write(f.read())
    return AutoTokenizer.from_pretrained(d)


def render_all(tok, template_text):
    cases = []
    for msgs, add_gen in CONVERSATIONS:
        m = [{"role": r, "content": c} for r, c in msgs]
        kw = {"date_string": DATE} if "date_string" in template_text or "strftime_now" in template_text else {}
        try:
            r = {"text": tok.apply_chat_template(m, tokenize=False, add_generation_prompt=add_gen, **kw)}
        except Exception as e:  # jinja2 TemplateError from raise_exception
            r = {"error": "%s: %s" % (type(e).__name__, e)}
        cases.append(dict({"messages": msgs, "add_generation_prompt": add_gen,
                           "date": DATE if kw else None}, **r))
    return cases


def main():
    import transformers
    out = {"generator": "tests/gen/gen_chat_conv_refs.py", "transformers_version": transformers.__version__,
           "templates": {}}
    for base in ("smollm2",):  # the one fixture tokenizer that carries its own template
        with tempfile.TemporaryDirectory() as d:
            tok = own_template(d, base)
            out["templates"]["own:" + base] = {"base": base, "cases": render_all(tok, tok.chat_template or "")}
    for name, base in TEMPLATES.items():
        with open(os.path.join(FIX, "chat", name), encoding="utf-8") as f:
            template = f.read()
        with tempfile.TemporaryDirectory() as d:
            tok = load(d, base, template)
            out["templates"][name] = {"base": base, "cases": render_all(tok, template)}
    for k, v in out["templates"].items():
        print("%s: %d cases, %d errors" % (k, len(v["cases"]), sum("error" in c for c in v["cases"])))
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
