#!/usr/bin/env python3
"""HF transformers references for the quantized GGUF files (make quant-model-refs; never run by CI).

Usage: make_quant_refs.py CACHE         (in the venv of requirements-ref.txt; QREFS_ONLY=smollm2,llama1b,tiny)

transformers loads each GGUF with `gguf_file=` and dtype float32, dequantizing every tensor with gguf-py
(the values llmgen's --exact route must reproduce bit for bit). In transformers 5.23 that holds for llama:
its newer GGUF path (weights kept packed, unpacked per forward by its own torch dequantizer in
integrations/gguf/dequant.py, or by a hub kernel) serves only the architectures listed in GGUF_ARCHS
(qwen35, qwen35moe, lfm2); `load` asserts that no packed Gguf* module was swapped in. Decoding is make_refs.py's manual greedy
loop (prompt forward, then one token at a time with the KV cache, argmax, no EOS stop).

  smollm2     CACHE/quant/SmolLM2-135M-Instruct.<T>.gguf (make quant-models): make_refs.py's 8 SmolLM2
              prompts tokenized by the file's own tokenizer (asserted equal to tests/refs/smollm2-gguf.json),
              64 greedy ids, top-2 gap and top-5 logits of every step
              -> tests/refs/gguf-quants/SmolLM2-135M-Instruct.<T>.json
  llama1b     CACHE/quant/llama-1b-random.{Q4_K_M,Q6_K}.gguf: the Llama-3.2-1B config with random weights.
              transformers maps no llama3 rope-scaling key from a GGUF (the file carries the scaling as a
              rope_freqs.weight tensor, which it ignores), so the config read from the GGUF gets the
              rope_parameters of tests/gen/llama-1b-random/config.json; the script asserts that the
              resulting inv_freq equals the file's base frequencies divided by rope_freqs.weight.
              2 prompts (the llama-1b-random one and a second from another seed), 16 steps, gaps,
              max |logit| and top-64 of every step -> tests/refs/gguf-quants/llama-1b-random.<T>.json
  tiny        tests/fixtures/tiny-gguf/tiny-gguf.<T>.gguf (make quant-fixtures): 12 random prompt ids,
              32 steps, full logits of every step and the f32-vs-f64 noise (like make_refs.py's tiny-*)
              -> tests/refs/tiny-gguf.<T>.json + .logits.bin, checked in `make test` by check_refs.py

Every JSON records the tool versions, the settings, the GGUF's sha256 and tensor-type census; the checkers
refuse a GGUF whose sha256 differs from the one its reference was made from.
"""
import glob
import json
import os
import sys
import time
from collections import Counter

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_refs as R  # noqa: E402  (prompts, greedy loop, versions: read-only use)
import fixturelib as F  # noqa: E402

REPO = R.REPO
REFS = R.REFS
QREFS = os.path.join(REFS, "gguf-quants")
TINY_DIR = os.path.join(REPO, "tests", "fixtures", "tiny-gguf")
SMOL_TYPES = ["Q4_K_M", "Q5_K_M", "Q6_K", "Q3_K_M", "Q2_K", "IQ4_XS", "Q5_0", "Q5_1"]
B1_TYPES = ["Q4_K_M", "Q6_K"]
B1_STEPS = 16
B1_PROMPT_SEEDS = [4242, 4343]  # 4242: the prompt of tests/refs/llama-1b-random.json
B1_TOPK = 64


def log(msg):
    print("quant-refs: " + msg, file=sys.stderr, flush=True)


def census(path):
    from gguf import GGUFReader
    return dict(sorted(Counter(t.tensor_type.name for t in GGUFReader(path).tensors).items()))


def source(path, manifest=None):
    s = {"gguf_sha256": F.sha256_file(path), "bytes": os.path.getsize(path), "census": census(path)}
    if manifest:
        s.update({k: manifest[k] for k in ("command", "source", "source_sha256", "llama_cpp")})
    return s


def write_json(path, obj):
    """One key per line; each case on one line (the top-k lists make indented JSON very long)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    parts = []
    for k, v in obj.items():
        if k == "cases":
            body = ",\n".join("  " + json.dumps(c) for c in v)
            parts.append(' "cases": [\n%s\n ]' % body)
        else:
            parts.append(" %s: %s" % (json.dumps(k), json.dumps(v, sort_keys=True)))
    with open(path + ".tmp", "w") as f:
        f.write("{\n" + ",\n".join(parts) + "\n}\n")
    os.replace(path + ".tmp", path)
    log("wrote %s" % os.path.relpath(path, REPO))


def load(d, name, config=None):
    kw = {"config": config} if config is not None else {}
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32, **kw).eval()
    packed = sorted({type(m).__name__ for m in model.modules() if type(m).__name__.startswith("Gguf")})
    if packed:
        raise SystemExit("quant-refs: %s loaded with packed modules %s, not gguf-py's dequantization"
                         % (name, packed))
    return model


def smollm2(cache, vers, manifest):
    with open(os.path.join(REFS, "smollm2-gguf.json")) as f:
        base = {c["name"]: c["prompt_ids"] for c in json.load(f)["cases"]}
    qdir = os.path.join(cache, "quant")
    for t in SMOL_TYPES:
        name = "SmolLM2-135M-Instruct.%s.gguf" % t
        path = os.path.join(qdir, name)
        t0 = time.time()
        tok = AutoTokenizer.from_pretrained(qdir, gguf_file=name)
        model = load(qdir, name)
        prompts = R.smol_prompts(tok)
        for p in prompts:
            if p["prompt_ids"] != base[p["name"]]:
                raise SystemExit("quant-refs: %s tokenizes prompt %s differently from smollm2-gguf.json"
                                 % (name, p["name"]))
        cases = []
        for p in prompts:
            case, _ = R.run_greedy(model, p["prompt_ids"], R.SMOL_STEPS, top5_steps=R.SMOL_STEPS, keep_rows=0)
            cases.append(dict(name=p["name"], chat=p["chat"], text=p["text"], **case))
        write_json(os.path.join(QREFS, name[:-5] + ".json"), {
            "model": {"cache": "quant/" + name}, "vocab_size": model.config.vocab_size, "versions": vers,
            "source": source(path, manifest.get(name)),
            "settings": R.settings(load="AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=float32)",
                                   tokenizer="the GGUF's own (AutoTokenizer, gguf_file=); prompts of make_refs.py",
                                   steps=R.SMOL_STEPS, top5_steps=R.SMOL_STEPS),
            "cases": cases})
        log("%s: %d prompts in %.1f s" % (name, len(prompts), time.time() - t0))
        del model


def llama1b(cache, vers, manifest):
    qdir = os.path.join(cache, "quant")
    with open(os.path.join(HERE, "llama-1b-random", "config.json")) as f:
        rope = json.load(f)["rope_parameters"]
    from gguf import GGUFReader
    for t in B1_TYPES:
        name = "llama-1b-random.%s.gguf" % t
        path = os.path.join(qdir, name)
        t0 = time.time()
        cfg = AutoConfig.from_pretrained(qdir, gguf_file=name)
        cfg.rope_parameters = dict(rope)
        model = load(qdir, name, cfg)
        # The scaling HF now applies must be the file's own: base inv_freq / rope_freqs.weight.
        r = GGUFReader(path)
        freqs = next(np.array(x.data, dtype=np.float64) for x in r.tensors if x.name == "rope_freqs.weight")
        hd = cfg.head_dim
        base = 1.0 / (cfg.rope_parameters["rope_theta"] ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
        hf = model.model.rotary_emb.inv_freq.double().numpy()
        err = float(np.max(np.abs(hf - base / freqs) / (base / freqs)))
        if err > 1e-6:
            raise SystemExit("quant-refs: HF inv_freq differs from the file's rope_freqs by %.2e" % err)
        log("%s loaded in %.1f s; HF inv_freq = base / rope_freqs.weight within %.1e" % (name, time.time() - t0, err))
        cases = []
        for seed in B1_PROMPT_SEEDS:
            rng = np.random.Generator(np.random.PCG64(seed))
            prompt = [128000] + [int(x) for x in rng.integers(0, 128000, R.LLAMA_1B_PROMPT_LEN - 1)]
            t1 = time.time()
            case, _ = R.run_greedy(model, prompt, B1_STEPS, keep_rows=0, topk=B1_TOPK)
            log("%s seed %d: %d steps in %.1f s, ids %s" % (name, seed, B1_STEPS, time.time() - t1, case["ids"]))
            cases.append(dict(name="random-prompt-%d" % seed, **case))
        write_json(os.path.join(QREFS, name[:-5] + ".json"), {
            "model": {"cache": "quant/" + name}, "vocab_size": cfg.vocab_size, "versions": vers,
            "source": source(path, manifest.get(name)),
            "settings": R.settings(load="AutoConfig.from_pretrained(dir, gguf_file=...), rope_parameters set "
                                        "from tests/gen/llama-1b-random/config.json (checked against "
                                        "rope_freqs.weight), then AutoModelForCausalLM.from_pretrained("
                                        "dir, gguf_file=..., config=..., dtype=float32)",
                                   steps=B1_STEPS, topk=B1_TOPK,
                                   prompts="[128000] + 15 ids of numpy PCG64(seed).integers(0, 128000)"),
            "cases": cases})
        del model


def tiny(vers):
    files = sorted(glob.glob(os.path.join(TINY_DIR, "tiny-gguf.*.gguf")))
    if not files:
        raise SystemExit("quant-refs: no %s/tiny-gguf.*.gguf (make quant-fixtures)" % TINY_DIR)
    for path in files:
        name = os.path.basename(path)
        m = load(TINY_DIR, name)
        vocab = m.config.vocab_size
        rng = np.random.Generator(np.random.PCG64(6000))
        prompt = [int(x) for x in rng.integers(3, vocab, R.TINY_PROMPT_LEN)]
        case, rows = R.run_greedy(m, prompt, R.TINY_STEPS)
        # float64 from the same gguf-py values (the loader casts after dequantizing)
        m64 = AutoModelForCausalLM.from_pretrained(TINY_DIR, gguf_file=name, dtype=torch.float64).eval()
        case["f64_rel_err"] = R.f64_rel_err(m64, case, rows)
        del m64, m
        stem = name[:-5]
        binname = stem + ".logits.bin"
        np.stack(rows).astype("<f4").tofile(os.path.join(REFS, binname))
        R.write_json(os.path.join(REFS, stem + ".json"), dict(
            model={"repo": os.path.relpath(path, REPO)}, vocab_size=vocab, versions=vers,
            source=dict(made_by="make quant-fixtures (tests/gen/make_quant_fixtures.py, llama-quantize --pure)",
                        **source(path)),
            settings=R.settings(load="AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=float32)",
                                steps=R.TINY_STEPS, prompt="numpy PCG64(6000).integers(3, vocab, 12)"),
            logits={"file": binname, "rows": len(rows), "dtype": "float32 little-endian",
                    "row_i": "logits the i-th generated id was chosen from (row 0: prefill)"},
            cases=[dict(name="random-prompt", **case)]))
        log("%s: ids %s..., f64 noise %.1e" % (name, case["ids"][:8], max(case["f64_rel_err"])))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_quant_refs.py CACHE")
    cache = sys.argv[1]
    torch.set_num_threads(R.THREADS)
    torch.use_deterministic_algorithms(True)
    vers = R.versions()
    mpath = os.path.join(cache, "quant", "manifest.json")
    manifest = json.load(open(mpath))["files"] if os.path.exists(mpath) else {}
    only = os.environ.get("QREFS_ONLY", "tiny,smollm2,llama1b").split(",")
    t0 = time.time()
    if "tiny" in only:
        tiny(vers)
    if "smollm2" in only:
        smollm2(cache, vers, manifest)
    if "llama1b" in only:
        if not os.path.exists(os.path.join(cache, "quant", "llama-1b-random.Q4_K_M.gguf")):
            log("llama-1b-random.Q4_K_M.gguf not in %s/quant: skipped (make bench-models, make quant-models)" % cache)
        else:
            llama1b(cache, vers, manifest)
    log("done in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
