#!/usr/bin/env python3
"""HF references for `llmgen --tokenize` on the GGUF files of the model families (issue 17, item 4):
transformers reads each file's tokenizer metadata (AutoTokenizer.from_pretrained(dir, gguf_file=...),
as it reads a llama.cpp download) and encodes (add_special_tokens=False) / decodes every 5th string
of the stored corpus (tests/refs/tokenizer/corpus.bin.gz) and of a special-token corpus: Qwen's
corpus-special.bin.gz (it has <|im_start|> and <|endoftext|>), the others' corpus-special-families.

Usage: gen_gguf_tokenize_refs.py CACHE      (`make family-tokenize-refs`, reference venv)

Files (each skipped with a note when absent; the sha256 of each and of its tokenizer.* metadata are
recorded, the latter checked):
  qwen3-0.6b-random.BF16.gguf   CACHE/bench (make family-bench-models; Qwen2's vocabulary, GGUF "gpt2"
                                model with pre-tokenizer "qwen2", padded to 151936 with [PAD] tokens)
  gemma3-1b-random.BF16.gguf    CACHE/bench (GGUF "llama" model with scores: the real Gemma 3 vocabulary)
  gemma-3-270m-q4_k_m.gguf      CACHE/models (make gemma3-vocab; the real Gemma 3 270M file)
  ggml-vocab-phi-3.gguf         CACHE/peer/src/models (the sdist's Phi-3 vocabulary)
  ggml-vocab-gemma-4.gguf       CACHE/peer/src/models (the sdist's Gemma 4 vocabulary, GGUF "gemma4" model
                                with merges; AutoTokenizer cannot build that file's config (per-layer
                                kv-head arrays), so its tokenizer comes from the builder AutoTokenizer
                                calls, integrations.gguf.gguf_tokenizer_mapping)
A file absent here keeps its entry of the existing manifest.json (GGUF_TOKENIZE_ONLY=a,b: only those).
Writes tests/refs/tokenizer/gguf-files/<file>.{corpus,special}.{ids,decode}.bin.gz (formats of
gen_tokenizer_refs.py) and manifest.json. Checked by tests/cli/regress_family_tokenize.py.
"""
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gen_tokenizer_refs as G  # noqa: E402
from fixturelib import sha256_file  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tests", "cli"))
import regress_family_tokenize as RT  # noqa: E402

OUT = os.path.join(REPO, "tests", "refs", "tokenizer", "gguf-files")
FILES = [("bench/qwen3-0.6b-random.BF16.gguf", "qwen2 vocabulary, converted with the Qwen3-0.6B-config checkpoint"),
         ("bench/gemma3-1b-random.BF16.gguf", "Gemma 3 vocabulary, converted with the Gemma-3-1B-config checkpoint"),
         ("models/gemma-3-270m-q4_k_m.gguf", "Gemma 3 270M as downloaded"),
         ("peer/src/models/ggml-vocab-phi-3.gguf", "llama.cpp's Phi-3 vocabulary file"),
         ("peer/src/models/ggml-vocab-gemma-4.gguf", "llama.cpp's Gemma 4 vocabulary file")]
STEP = 5


def read_strings(path):
    import struct
    data, out, o = gzip.open(path).read(), [], 0
    while o < len(data):
        n = struct.unpack_from("<I", data, o)[0]
        out.append(data[o + 4:o + 4 + n].decode("utf-8"))
        o += 4 + n
    return out


def main():
    import tokenizers
    import transformers
    from transformers import AutoTokenizer
    cache = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".cache")
    os.makedirs(OUT, exist_ok=True)
    corpora = {k: read_strings(os.path.join(G.OUT, k + ".bin.gz"))[::STEP]
               for k in ("corpus", "corpus-special", G.FAMILY_SPECIAL)}
    man = {"generator": "tests/gen/gen_gguf_tokenize_refs.py", "step": STEP,
           "corpora": {k: "tests/refs/tokenizer/%s.bin.gz" % k for k in corpora},
        "transformers_version": transformers.__version__, "tokenizers_version": tokenizers.__version__, "files": {}}
    old = os.path.join(OUT, "manifest.json")
    if os.path.exists(old):
        with open(old) as f:
            man["files"] = json.load(f)["files"]
    only = [x for x in os.environ.get("GGUF_TOKENIZE_ONLY", "").split(",") if x]
    for rel, what in FILES:
        path = os.path.join(cache, rel)
        name = os.path.basename(rel)
        if only and name not in only:
            continue
        if not os.path.exists(path):
            print("gguf-tokenize-refs: %s absent, its references kept" % path, file=sys.stderr)
            continue
        if name == "ggml-vocab-gemma-4.gguf":
            from transformers.integrations.gguf.gguf_tokenizer_mapping import (convert_gguf_tokenizer,
                                                                                get_gguf_tokenizer)
            arch, td, _ = get_gguf_tokenizer(path)
            tok = convert_gguf_tokenizer(arch, td)[0]
        else:
            tok = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=name).backend_tokenizer
        special = "corpus-special" if name.startswith("qwen") else G.FAMILY_SPECIAL  # its own special tokens
        for kind, strings in (("corpus", corpora["corpus"]), ("special", corpora[special])):
            ids, dec = G.encode_all(tok, strings)
            G.write_ids(os.path.join(OUT, "%s.%s.ids.bin.gz" % (name, kind)), ids)
            G.write_decodes(os.path.join(OUT, "%s.%s.decode.bin.gz" % (name, kind)), strings, dec)
        man["files"][name] = {"cache": rel, "special_corpus": special, "sha256": sha256_file(path), "tokenizer_sha256": RT.tokenizer_sha256(path),
                              "what": what,
                              "vocab_size": tok.get_vocab_size(with_added_tokens=True)}
        print("gguf-tokenize-refs: %s" % name, file=sys.stderr)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
