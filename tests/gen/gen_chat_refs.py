#!/usr/bin/env python3
"""Chat-template references: transformers' apply_chat_template(tokenize=False,
add_generation_prompt=True) for every real template in tests/fixtures/tokenizers/chat/
(sources in its README), with and without a system message, into
tests/refs/tokenizer/chat-templates.json. tests/cli/check_tokenizer.py renders the
same cases with build/tok_driver and requires byte-equal text (or an error where
transformers raised one). Never run by CI; needs the packages of requirements-tok.txt
(the .cache/venv-ref venv has them).

Each template is loaded on top of a real fixture tokenizer (its bos / eos text is what
the template prints): Llama 3 templates on llama3.2, [INST] templates on mistral-v1.

Dates: the Llama 3.1+ templates print "Today Date: {date_string}". Cases with a "date"
pass date_string explicitly; cases with date null use the template's own default, which
for templates that call strftime_now is the day of generation ("rendered_on"): the check
substitutes the day it runs on.

Usage: .cache/venv-ref/bin/python tests/gen/gen_chat_refs.py
"""
import datetime
import gzip
import json
import os
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(REPO, "tests", "fixtures", "tokenizers")
OUT = os.path.join(REPO, "tests", "refs", "tokenizer", "chat-templates.json")

# template file -> fixture tokenizer it is loaded with
TEMPLATES = {
    "llama-3-instruct.jinja": "llama3.2",
    "llama-3.1-instruct.jinja": "llama3.2",
    "llama-3.2-instruct.jinja": "llama3.2",
    "llama-2-chat.jinja": "mistral-v1",
    "mistral-7b-instruct-v0.1.jinja": "mistral-v1",
    "mistral-common-spm-v1.jinja": "mistral-v1",
    "mistral-common-spm-v3.jinja": "mistral-v1",
    "mistral-common-spm-v7.jinja": "mistral-v1",
    "mistral-common-spm-v3-default.jinja": "mistral-v1",
    "mistral-common-spm-v7-default.jinja": "mistral-v1",
    "mistral-nemo-instruct-2407.jinja": "mistral-v1",
}

CASES = [
    (None, "Hello!"),
    ("You are a pirate.", "What is the capital of France?"),
    (None, "Line one\nLine two\n\n  indented"),
    ("", "empty system"),
    ("Système: réponds en français 🇫🇷", "Écris un haïku sur la mer."),
    ("  padded system \n", " \t padded user\n\n"),
    (None, "[INST] and <|eot_id|> inside text"),
    (None, ""),
    ("\u3000ideographic space\u2028", "\x1ctrailing separators\x1f"),
]
DATES = ["02 Jan 2025", "31 Dec 1999"]


def load(d, base, template):
    from transformers import AutoTokenizer
    with gzip.open(os.path.join(FIX, base, "tokenizer.json.gz"), "rb") as f, \
            open(os.path.join(d, "tokenizer.json"), "wb") as g:
        g.write(f.read())
    with open(os.path.join(FIX, base, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["chat_template"] = template
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return AutoTokenizer.from_pretrained(d)


def render(tok, system, user, date):
    msgs = ([{"role": "system", "content": system}] if system is not None else [])
    msgs.append({"role": "user", "content": user})
    kw = {"date_string": date} if date is not None else {}
    try:
        return {"text": tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, **kw)}
    except Exception as e:  # jinja2 TemplateError from raise_exception
        return {"error": "%s: %s" % (type(e).__name__, e)}


def main():
    import transformers
    out = {"generator": "tests/gen/gen_chat_refs.py", "transformers_version": transformers.__version__,
           "rendered_on": datetime.datetime.now().strftime("%d %b %Y"), "templates": {}}
    for name, base in TEMPLATES.items():
        with open(os.path.join(FIX, "chat", name), encoding="utf-8") as f:
            template = f.read()
        with tempfile.TemporaryDirectory() as d:
            tok = load(d, base, template)
            cases = []
            dates = [None] + (DATES if "date_string" in template else [])
            for date in dates:
                for system, user in CASES if date is None else CASES[:2]:
                    r = render(tok, system, user, date)
                    cases.append(dict({"system": system, "user": user, "date": date}, **r))
        out["templates"][name] = {"base": base, "cases": cases}
        print("%s: %d cases, %d errors" % (name, len(cases), sum("error" in c for c in cases)))
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
