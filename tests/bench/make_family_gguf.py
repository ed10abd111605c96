#!/usr/bin/env python3
"""Benchmark GGUFs of the Qwen3-0.6B and Gemma-3-1B config checkpoints, made the way people's files
are made: llama.cpp's own converter and quantizer (the pinned sdist of `make peer`).

Usage: make_family_gguf.py CACHE [NAME ...]     (run by `make family-bench-models` in the reference
                                                 venv: the converter imports torch and sentencepiece)

For NAME in qwen3-0.6b-random gemma3-1b-random (default both), from CACHE/families/NAME (`make
family-models`, bf16 safetensors):
  1. a conversion directory CACHE/bench/convert-NAME/ (config.json and model.safetensors linked)
     with the tokenizer the converter needs, since it refuses checkpoints without one it knows:
       qwen3   tests/fixtures/tokenizers/qwen2 (Qwen2's byte-level BPE, GGUF pre-tokenizer "qwen2") with
               Qwen3's tokenizer_config.json settings (no BOS, eos <|im_end|>, pad <|endoftext|>) and
               the sdist's Qwen3-0.6B chat template;
       gemma3  a tokenizer.model (SentencePiece BPE ModelProto) and tokenizer_config.json rebuilt from
               the real Gemma 3 vocabulary in the GGUF of Gemma 3 270M (fetch_gemma3_270m.py): the
               262144 pieces, scores and types; pieces of only spaces spelled with U+2581 as
               SentencePiece spells them, the 6414 control / user-defined pieces listed in
               added_tokens_decoder (special true / false) as Google's tokenizer_config.json does.
               The converted file's tokenizer.ggml.{tokens,scores,token_type} are then checked
               equal to the 270M file's, value for value. tests/fixtures/tokenizers/gemma3's
               tokenizer.json beside them gives the special tokens' ids (bos 2, eos 1, unk 3, pad 0,
               as in the 270M file). No chat template: the sdist ships none for Gemma 3.
  2. CACHE/peer/src/convert_hf_to_gguf.py --outtype bf16 (lossless from the bf16 checkpoint) and
     --outtype f16, with the sdist's own gguf-py first on PYTHONPATH;
  3. llama-quantize (CACHE/peer/build/bin, its default mixtures, no --pure) of the BF16 file to
     Q8_0, Q4_0 and Q4_K_M, 2 threads.
Writes CACHE/bench/NAME.{BF16,F16,Q8_0,Q4_0,Q4_K_M}.gguf and CACHE/bench/families-manifest.json
(sha256, size, tensor-type census, command of each file; the GGUF metadata keys and one layer's
tensors of each model). A file is rebuilt only when its inputs changed (.stamp; STAMP_VERSION for this script).
"""
import hashlib
import json
import os
import subprocess
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "gen"))

MODELS = ("qwen3-0.6b-random", "gemma3-1b-random")
CONVERT_TYPES = ("BF16", "F16")
QUANT_TYPES = ("Q8_0", "Q4_0", "Q4_K_M")
THREADS = "2"
GEMMA_VOCAB = "models/gemma-3-270m-q4_k_m.gguf"


def log(msg):
    print("family-gguf: " + msg, file=sys.stderr, flush=True)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def gguf_reader(path, peer_src):
    sys.path.insert(0, os.path.join(peer_src, "gguf-py"))
    from gguf import GGUFReader
    return GGUFReader(path)


def gemma_vocab(cache, peer_src):
    """(tokens, scores, types, special ids) of the real Gemma 3 vocabulary (the 270M GGUF)."""
    path = os.path.join(cache, GEMMA_VOCAB)
    if not os.path.exists(path):
        sys.exit("family-gguf: %s is missing (python3 tests/gen/fetch_gemma3_270m.py %s)" % (path, cache))
    r = gguf_reader(path, peer_src)
    f = r.fields
    ids = {k: int(f["tokenizer.ggml.%s_token_id" % k].contents()) for k in ("bos", "eos", "unknown", "padding")}
    return (f["tokenizer.ggml.tokens"].contents(), [float(x) for x in f["tokenizer.ggml.scores"].contents()],
            [int(x) for x in f["tokenizer.ggml.token_type"].contents()], ids)


def write_gemma_tokenizer(d, cache, peer_src):
    from sentencepiece import sentencepiece_model_pb2 as pb
    tokens, scores, types, ids = gemma_vocab(cache, peer_src)
    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.vocab_size = len(tokens)
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.unk_id, m.trainer_spec.bos_id = ids["unknown"], ids["bos"]
    m.trainer_spec.eos_id, m.trainer_spec.pad_id = ids["eos"], ids["padding"]
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = False
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    added = {}
    for i, (t, s, ty) in enumerate(zip(tokens, scores, types)):
        p = m.pieces.add()
        p.piece = "\u2581" * len(t) if t and not t.strip(" ") else t
        p.score = s
        # GGUF and SentencePiece number the types alike (1 normal .. 6 byte); the unknown piece is
        # CONTROL in the file (its tokenizer_config lists it as special) but SentencePiece needs one.
        p.type = pb.ModelProto.SentencePiece.UNKNOWN if i == ids["unknown"] else ty
        if ty in (3, 4):
            added[str(i)] = {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                             "single_word": False, "special": ty == 3}
    with open(os.path.join(d, "tokenizer.model"), "wb") as f:
        f.write(m.SerializeToString())
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer_class": "GemmaTokenizer", "add_bos_token": True, "add_eos_token": False,
                   "bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>",
                   "added_tokens_decoder": added}, f, ensure_ascii=False)
    return tokens, scores, types


def prepare(cache, name, peer_src):
    src = os.path.join(cache, "families", name)
    for f in ("config.json", "model.safetensors", ".stamp"):
        if not os.path.exists(os.path.join(src, f)):
            sys.exit("family-gguf: %s/%s is missing (make family-models)" % (src, f))
    d = os.path.join(cache, "bench", "convert-" + name)
    os.makedirs(d, exist_ok=True)
    for f in ("config.json", "model.safetensors"):
        link = os.path.join(d, f)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(os.path.abspath(os.path.join(src, f)), link)
    vocab = None
    import gzip
    fix = os.path.join(REPO, "tests", "fixtures", "tokenizers")
    # tokenizer.json: the vocabulary (qwen3) or what maps the special-token names to ids (gemma3)
    with gzip.open(os.path.join(fix, "qwen2" if name.startswith("qwen") else "gemma3", "tokenizer.json.gz")) as f, \
            open(os.path.join(d, "tokenizer.json"), "wb") as g:
        g.write(f.read())
    if name.startswith("qwen"):
        # Qwen3's published tokenizer_config.json: no BOS, eos <|im_end|>, pad <|endoftext|>; its chat
        # template as the sdist ships it (models/templates/Qwen-Qwen3-0.6B.jinja)
        with open(os.path.join(peer_src, "models", "templates", "Qwen-Qwen3-0.6B.jinja"), encoding="utf-8") as f:
            template = f.read()
        with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"tokenizer_class": "Qwen2Tokenizer", "add_bos_token": False, "bos_token": None,
                       "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "chat_template": template}, f)
    else:
        vocab = write_gemma_tokenizer(d, cache, peer_src)
    return d, vocab


def census(path, peer_src):
    r = gguf_reader(path, peer_src)
    return dict(sorted(Counter(t.tensor_type.name for t in r.tensors).items()))


def describe_keys(path, peer_src):
    """{key: value (arrays: their length)} and the tensors of block 0 / the non-block ones."""
    r = gguf_reader(path, peer_src)
    keys = {}
    for k, f in r.fields.items():
        if k.startswith("GGUF."):
            continue
        if len(f.data) > 1 or (f.types and f.types[0].name == "ARRAY"):
            keys[k] = "array[%d]" % len(f.data)
        else:
            v = f.contents()
            keys[k] = v if len(str(v)) < 200 else "string[%d]" % len(v)
    tensors = [(t.name, t.tensor_type.name, [int(x) for x in t.shape])
               for t in r.tensors if t.name.startswith("blk.0.") or not t.name.startswith("blk.")]
    return keys, tensors


STAMP_VERSION = 1  # bump when a change of this script changes its output files


def stamp_for(inputs):
    """What a file was made from: the content sha256 of the checkpoint (its verified .stamp), the
    sha256 of the small inputs (rewritten on every run, so not their mtimes), size and mtime of the
    large GGUF / llama-quantize inputs."""
    out = []
    for p in inputs:
        if p.endswith("model.safetensors"):
            with open(os.path.join(os.path.dirname(os.path.realpath(p)), ".stamp")) as f:
                out.append([p, json.load(f)["model.safetensors"]["content_sha256"]])
        elif os.path.getsize(p) < (64 << 20):
            out.append([p, sha256_file(p)])
        else:
            out.append([p, os.path.getsize(p), int(os.path.getmtime(p))])
    return {"inputs": [[os.path.basename(x[0])] + x[1:] for x in out], "version": STAMP_VERSION}


def fresh(path, stamp):
    try:
        with open(path + ".stamp") as f:
            return json.load(f) == stamp and os.path.exists(path)
    except (OSError, ValueError):
        return False


def run(cmd, env=None):
    t = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    if p.returncode != 0:
        sys.stderr.write(p.stdout.decode("utf-8", "replace")[-4000:])
        sys.exit("family-gguf: failed (exit %d): %s" % (p.returncode, " ".join(cmd)))
    return time.time() - t


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_family_gguf.py CACHE [NAME ...]")
    cache = sys.argv[1]
    names = sys.argv[2:] or list(MODELS)
    peer_src = os.path.join(cache, "peer", "src")
    convert = os.path.join(peer_src, "convert_hf_to_gguf.py")
    quantize = os.path.join(cache, "peer", "build", "bin", "llama-quantize")
    for p in (convert, quantize):
        if not os.path.exists(p):
            sys.exit("family-gguf: %s is missing (make peer)" % p)
    out_dir = os.path.join(cache, "bench")
    man_path = os.path.join(out_dir, "families-manifest.json")
    manifest = {"files": {}, "models": {}}
    if os.path.exists(man_path):
        with open(man_path) as f:
            manifest = json.load(f)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(peer_src), "gguf-py"))
    for name in names:
        if name not in MODELS:
            sys.exit("family-gguf: unknown model %s (known: %s)" % (name, " ".join(MODELS)))
        d, vocab = prepare(cache, name, peer_src)
        st = os.path.join(cache, "families", name, "model.safetensors")
        for t in CONVERT_TYPES:
            path = os.path.join(out_dir, "%s.%s.gguf" % (name, t))
            stamp = stamp_for([st, os.path.join(d, "config.json")] +
                              [os.path.join(d, f) for f in ("tokenizer.json", "tokenizer.model") if os.path.exists(os.path.join(d, f))])
            if not fresh(path, stamp) or os.path.basename(path) not in manifest["files"]:
                cmd = [sys.executable, convert, "--outtype", t.lower(), "--outfile", path + ".tmp", d]
                dt = run(cmd, env)
                os.replace(path + ".tmp", path)
                with open(path + ".stamp", "w") as f:
                    json.dump(stamp, f)
                manifest["files"][os.path.basename(path)] = {
                    "command": "convert_hf_to_gguf.py --outtype %s --outfile %s convert-%s" % (t.lower(), os.path.basename(path), name),
                    "source_content_sha256": json.load(open(os.path.join(cache, "families", name, ".stamp")))["model.safetensors"]["content_sha256"],
                    "sha256": sha256_file(path), "bytes": os.path.getsize(path), "census": census(path, peer_src)}
                log("%s written in %.0f s" % (os.path.basename(path), dt))
        src = os.path.join(out_dir, "%s.BF16.gguf" % name)
        if vocab is not None:  # the converted vocabulary is the real one, value for value
            r = gguf_reader(src, peer_src)
            f = r.fields
            got = (f["tokenizer.ggml.tokens"].contents(), [float(x) for x in f["tokenizer.ggml.scores"].contents()],
                   [int(x) for x in f["tokenizer.ggml.token_type"].contents()])
            for label, a, b in zip(("tokens", "scores", "token_type"), got, vocab):
                diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
                if len(a) != len(b) or diff:
                    sys.exit("family-gguf: %s: tokenizer.ggml.%s differs from the Gemma 3 270M file at %d ids "
                             "(first %s)" % (src, label, len(diff) + abs(len(a) - len(b)), diff[:5]))
            log("%s: tokens, scores and token types equal the Gemma 3 270M file's (%d ids)" % (src, len(vocab[0])))
        for t in QUANT_TYPES:
            path = os.path.join(out_dir, "%s.%s.gguf" % (name, t))
            stamp = stamp_for([src, quantize])
            if not fresh(path, stamp) or os.path.basename(path) not in manifest["files"]:
                dt = run([quantize, src, path + ".tmp", t, THREADS])
                os.replace(path + ".tmp", path)
                with open(path + ".stamp", "w") as f:
                    json.dump(stamp, f)
                manifest["files"][os.path.basename(path)] = {
                    "command": "llama-quantize %s %s %s %s" % (os.path.basename(src), os.path.basename(path), t, THREADS),
                    "source_sha256": manifest["files"][os.path.basename(src)]["sha256"],
                    "sha256": sha256_file(path), "bytes": os.path.getsize(path), "census": census(path, peer_src)}
                log("%s written in %.0f s" % (os.path.basename(path), dt))
        keys, tensors = describe_keys(src, peer_src)
        manifest["models"][name] = {"keys": keys, "tensors_block0_and_global": tensors}
    with open(man_path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True, default=str)
        f.write("\n")
    os.replace(man_path + ".tmp", man_path)
    for fname, m in sorted(manifest["files"].items()):
        print("%-36s %s %11d  %s" % (fname, m["sha256"], m["bytes"], " ".join("%s %d" % kv for kv in m["census"].items())))


if __name__ == "__main__":
    main()
