#!/usr/bin/env python3
"""Writes the mistral-common chat templates of tests/fixtures/tokenizers/chat/:
Mistral's own generator (mistral-common==1.13.1,
mistral_common.integrations.chat_templates.chat_templates.generate_chat_template)
for SentencePiece tokenizers v1, v3 and v7, without tools, images or thinking, with
the special-token variables (bos_token / eos_token), as a tokenizer_config.json of a
Mistral instruct model carries it; the "-default" ones also embed a default system
prompt (the generator's default_system_prompt option).

Needs only mistral-common, pinned with its dependencies in tests/gen/requirements-chat.txt
(a scratch venv, e.g. .cache/venv-mc). The other templates there are copied files (see the README).
Usage: .cache/venv-mc/bin/python tests/gen/make_chat_templates.py
"""
import os

from mistral_common.integrations.chat_templates.chat_templates import generate_chat_template
from mistral_common.tokens.tokenizers.base import TokenizerVersion

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "tokenizers", "chat")
DEFAULT_SYSTEM = "Always answer in one line.\nBe kind, it's free."


def make(version, default_system):
    return generate_chat_template(
        spm=True, tokenizer_version=TokenizerVersion(version), image_support=False, audio_support=False,
        thinking_support=False, default_system_prompt=default_system, plain_thinking_support=False,
        use_special_token_variables=True, model_settings_fields=None, reasoning_effort_values=None,
        reasoning_effort_default=None)


def main():
    for v in ("v1", "v3", "v7"):
        with open(os.path.join(OUT, "mistral-common-spm-%s.jinja" % v), "w", encoding="utf-8") as f:
            f.write(make(v, None))
    for v in ("v3", "v7"):
        with open(os.path.join(OUT, "mistral-common-spm-%s-default.jinja" % v), "w", encoding="utf-8") as f:
            f.write(make(v, DEFAULT_SYSTEM))


if __name__ == "__main__":
    main()
