#!/usr/bin/env python3
"""llama.cpp's greedy ids on the family GGUF conversions, against the HF references (make family-peer).

Usage: peer_family_gguf.py CACHE      (the tools venv: the pinned gguf package; needs build/bench/peer_run,
                                       i.e. `make peer`; not part of `make test`)

An independent reading of tests/fixtures/tiny-<family>-*/model.f32.gguf: llama.cpp (the peer of `make bench`,
through tests/bench/peer_run.c: ids in, ids out) runs each file and its greedy ids are compared with the HF
reference the file shares with its safetensors directory. llama.cpp sizes the vocabulary from the tokenizer's
token list, and these files have tokenizer model "none" (only llama / smollm3 also write {arch}.vocab_size),
so each file is run from a temporary copy with every key and tensor unchanged plus a placeholder SentencePiece
token list of vocab_size entries (ids in, ids out: the tokens are never used). Expected differences, by
llama.cpp's design: it ignores Phi-3's sliding window (phi3.cpp: "Phi SWA is currently disabled") and picks
LongRoPE's factors from the context size (n_ctx > original -> long for every position), not per call as
transformers does. Prints one line per file; exits 0 (a report, not a gate).

Measured 2026-11-24 (llama.cpp 0c1e57098bba of the 0.3.36 sdist): 32 of 32 ids equal HF's on the ten
qwen2 / qwen3 / gemma3 / mistral / smollm3 / phi3-longrope files; tiny-phi3-partial-swa-f32 differs from
step 0, and transformers on the same directory with sliding_window=None gives exactly llama.cpp's ids (the
window is the whole difference); tiny-phi3-longrope-switch-legacy-f32 differs from step 0 (llama.cpp uses
the long factors for the prompt too, since n_ctx 44 > 24).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REFS = os.path.join(REPO, "tests", "refs")
PEER_RUN = os.path.join(REPO, "build", "bench", "peer_run")


def with_token_list(src, dst, vocab):
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for name, field in r.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "tokenizer.ggml.model"):
            continue
        vtype = field.types[0]
        v = field.contents()
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(name, v, vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(name, v, vtype)
    # llama-vocab.cpp looks up <|endoftext|> by name when general.name contains "phi3"
    toks = ["<unk>", "<s>", "</s>", "<|endoftext|>"] + ["<0x%02X>" % b for b in range(256)]
    toks = (toks + ["t%d" % i for i in range(len(toks), vocab)])[:vocab]
    types = [2, 3, 3, 3] + [6] * 256
    types = (types + [1] * vocab)[:vocab]
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * vocab)
    w.add_token_types(types)
    for t in r.tensors:
        w.add_tensor(t.name, np.array(t.data), raw_shape=list(reversed([int(x) for x in t.shape])),
                     raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    if not os.access(PEER_RUN, os.X_OK):
        sys.exit("family-peer: %s is not built (make peer, then make build/bench/peer_run)" % PEER_RUN)
    with tempfile.TemporaryDirectory() as tmp:
        for fn in sorted(os.listdir(REFS)):
            if not fn.startswith("tiny-") or not fn.endswith(".json"):
                continue
            with open(os.path.join(REFS, fn)) as f:
                ref = json.load(f)
            g = ref.get("gguf", {})
            if not g.get("file"):
                continue
            case = ref["cases"][0]
            path = os.path.join(tmp, "m.gguf")
            with_token_list(os.path.join(REPO, g["file"]), path, ref["vocab_size"])
            p = subprocess.run([PEER_RUN, "-m", path, "--prompt-ids", ",".join(map(str, case["prompt_ids"])),
                                "-n", str(len(case["ids"])), "-t", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            name = fn[:-5]
            if p.returncode:
                print("%-38s llama.cpp failed: %s" % (name, p.stderr.decode()[-300:].strip()))
                continue
            ids = json.loads(p.stdout)["ids"]
            d = next((i for i, (a, b) in enumerate(zip(ids, case["ids"])) if a != b), None)
            print("%-38s llama.cpp's ids vs HF's: %s" % (name, "%d of %d equal" % (len(ids), len(ids)) if d is None else
                                                          "first difference at step %d (HF top-2 gap there %.3g)"
                                                          % (d, case["gap"][d])))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
