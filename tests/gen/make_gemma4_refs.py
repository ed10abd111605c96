#!/usr/bin/env python3
"""Tiny random Gemma 4 checkpoints and their HF transformers references (make gemma4-refs; never run by CI).

Usage: make_gemma4_refs.py CACHE [NAME...]     (the venv of requirements-ref.txt; NAME filters fixtures)

For each entry of FIXTURES:
  tests/fixtures/<name>/                 config.json and model.safetensors written by save_pretrained
                                         (random weights, init_weights below: non-constant norm weights and
                                         layer scalars, which the default init leaves at 1)
  tests/refs/<name>.json + .<case>.logits.bin
                                         per prompt (three, of 20, 150 and 300 random ids: longer than the
                                         sliding window, the longest past llmgen's ring of it): HF's greedy
                                         ids (32 steps), the full logits of every step, f32-vs-f64 noise;
                                         the layout of tests/refs/README.md with a logits file per case
  tests/fixtures/<name>/model.f32.gguf   llama.cpp's convert_hf_to_gguf.py (the pinned sdist) on that
                        model.q8_0.gguf  directory, through convert_tiny_gguf.py; the f32 file has the same
                                         reference (check_refs.py runs both), the q8_0 file (the text
                                         fixture's only) is the fast-mode gate's input (check_family_fast.py)
  tests/refs/gemma4-fixtures.json        per fixture: what it exercises, sha256 of every file, the config as
                                         transformers loaded it (with its kv sharing), the GGUF keys written

Greedy decoding is make_refs.py's loop: one forward over the prompt, then one token per step with the
model's own cache; argmax, no EOS stop. prefill_vs_decode per case: max |logit| difference between one
forward over prompt + ids and HF's own token-by-token decode of it (all positions), the size of HF's own
rounding gap between two equal forms.
"""
import json
import math
import os
import shutil
import sys
import time

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForCausalLM, Gemma4ForConditionalGeneration

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_refs as R  # noqa: E402
import fixturelib as F  # noqa: E402
import make_family_refs as FR  # noqa: E402  (the pinned converter: llama_cpp_tree, convert)

REPO = R.REPO
REFS = R.REFS
FIXT = R.FIXT
STEPS = 32
PROMPTS = (("short", 20), ("two-chunks", 150), ("three-chunks", 300))
SIZE_LIMIT = 3 << 19  # 1.5 MB: the per-layer table and six layers of two head sizes
SUMMARY = os.path.join(REFS, "gemma4-fixtures.json")
ROPE = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}}
S, FU = "sliding_attention", "full_attention"

# name, model_type, config kwargs, what it exercises
FIXTURES = [
    ("tiny-gemma4-f32", "gemma4_text",
     dict(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=6, num_attention_heads=4,
          num_key_value_heads=2, head_dim=32, global_head_dim=64, sliding_window=24,
          layer_types=[S, S, FU, S, S, FU], num_kv_shared_layers=2, hidden_size_per_layer_input=16,
          vocab_size_per_layer_input=256, final_logit_softcapping=30.0, max_position_embeddings=1024,
          rope_parameters=ROPE),
     "sliding layers 0, 1, 3, 4 (head_dim 32, window 24: shorter than every prompt, past llmgen's ring in the "
     "longest) and full layers 2, 5 (head_dim 64 from per_layer_config, proportional RoPE: 8 of 32 pairs "
     "turn); kv-shared layers 4 (reads 3) and 5 (reads 2), where llama.cpp's fixed rule would pick 2 and 3; "
     "per-layer inputs of 16; layer scalars; plain norms with non-constant weights; weightless value norm; "
     "attention scale 1; final soft-cap 30; tied embeddings"),
    ("tiny-gemma4-vl-f32", "gemma4",
     dict(vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=5, num_attention_heads=4,
          num_key_value_heads=2, head_dim=32, global_head_dim=64, num_global_key_value_heads=1,
          attention_k_eq_v=True, use_double_wide_mlp=True, sliding_window=40, layer_types=[S, FU, S, S, FU],
          num_kv_shared_layers=2, hidden_size_per_layer_input=8, vocab_size_per_layer_input=256,
          final_logit_softcapping=None,
          max_position_embeddings=1024, rope_parameters=ROPE),
     "the multimodal wrapper (Gemma4ForConditionalGeneration, model_type gemma4 with text_config; text weights "
     "under model.language_model., a vision tower that text-only use skips): attention_k_eq_v on the full "
     "layers (values from k_proj, 1 kv head of 64 there, 2 of 32 on sliding ones), kv-shared layers 3 (reads "
     "2) and 4 (reads 1), double-wide MLPs (128) on those two, per-layer inputs of 8, no soft-cap "
     "(transformers 5.23 cannot run kv-shared layers without per-layer inputs: _maybe_slice_kv_shared_inputs slices None)"),
]

# init_weights' seed per fixture: the first of 9100.. whose greedy ids do not lock onto a few tokens on any
# prompt (at least 9 distinct of 32) with top-2 gaps of at least 0.01 (a search over 9100..9107).
INIT_SEEDS = {"tiny-gemma4-f32": 9105, "tiny-gemma4-vl-f32": 9104}

# The wrapper's vision tower: as small as the class allows (text-only input never runs it).
VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
              head_dim=16, patch_size=8, position_embedding_size=64, pooling_kernel_size=2)


EMBED_GAIN = 0.3  # the tied lm_head's rows: logits of a few units, well inside the soft-cap's bend


def init_weights(model, seed):
    """O(1) activations and well separated logits: matrices N(0, 1/in) (o_proj, down_proj, per_layer_projection
    gain 4), the per-layer table N(0, 1), embeddings 0.3 N(0, 1) (tied: a larger
    gain makes every token predict itself), plain norm weights 1 + 0.3 N(0, 1) (q / k norms 0.6 + 0.06 N(0, 1): the attention
    scale is 1, so weights near 1 give scores of the size of head_dim, whose softmax turns the int8 / bf16
    rounding of fast mode into 10-60% logit differences (0.13 / 0.66 / 0.23 at the prefill row of the three
    prompts; 0.046 / 0.054 / 0.061 with these); 0.3 gives 0.014 to 0.021 but greedy ids that lock onto one
    token), layer scalars U(0.6, 1.0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(list(model.named_parameters()) + [(n, b) for n, b in model.named_buffers()
                                                                 if n.endswith("layer_scalar")]):
            r = torch.randn(p.shape, generator=g)
            if "vision" in name:
                p.copy_(0.1 * r if p.dim() == 1 else r / math.sqrt(p.shape[-1]))
            elif name.endswith("layer_scalar"):
                p.copy_(0.6 + 0.4 * torch.rand(p.shape, generator=g))
            elif name.endswith(("q_norm.weight", "k_norm.weight")):
                p.copy_(0.6 + 0.06 * r)
            elif name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * r)
            elif name.endswith("embed_tokens.weight"):
                p.copy_(r * EMBED_GAIN)
            elif "embed_tokens" in name or p.dim() == 1:
                p.copy_(r)
            elif "o_proj" in name or "down_proj" in name or "per_layer_projection" in name:
                p.copy_(r * (4.0 / math.sqrt(p.shape[-1])))
            else:
                p.copy_(r / math.sqrt(p.shape[-1]))


@torch.no_grad()
def prefill_vs_decode(model, seq):
    full = model(input_ids=torch.tensor([seq])).logits[0].float()
    out = model(input_ids=torch.tensor([seq[:1]]), use_cache=True)
    rows = [out.logits[0, -1].float()]
    for t in seq[1:]:
        out = model(input_ids=torch.tensor([[t]]), past_key_values=out.past_key_values, use_cache=True)
        rows.append(out.logits[0, -1].float())
    return float((full - torch.stack(rows)).abs().max())


@torch.no_grad()
def f64_rel_err(m64, case, rows):
    seq = case["prompt_ids"] + case["ids"][:len(rows) - 1]
    logits = m64(input_ids=torch.tensor([seq])).logits[0]
    p = len(case["prompt_ids"])
    return [float((torch.from_numpy(r).double() - logits[p - 1 + i]).abs().max() / logits[p - 1 + i].abs().max())
            for i, r in enumerate(rows)]


def rel(path):
    return os.path.relpath(path, REPO)


def build(idx, entry, vers, llama_cpp):
    name, mtype, kw, what = entry
    torch.manual_seed(9000 + idx)
    wrapper = mtype == "gemma4"
    text = dict(kw, bos_token_id=2, eos_token_id=1, pad_token_id=0)
    if wrapper:
        cfg = AutoConfig.for_model(mtype, text_config=dict(text, model_type="gemma4_text"), vision_config=VISION,
                                   audio_config=None)
        model = Gemma4ForConditionalGeneration(cfg)
    else:
        cfg = AutoConfig.for_model(mtype, **text)
        model = AutoModelForCausalLM.from_config(cfg)
    vocab = kw["vocab_size"]
    init_weights(model, INIT_SEEDS[name])
    d = os.path.join(FIXT, name)
    shutil.rmtree(d, ignore_errors=True)
    model.to(torch.float32).save_pretrained(d)
    del model
    load = Gemma4ForConditionalGeneration if wrapper else AutoModelForCausalLM
    m = load.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()
    m64 = load.from_pretrained(d, dtype=torch.float64, attn_implementation="eager").eval()
    rng = np.random.Generator(np.random.PCG64(9200 + idx))
    cases = []
    for cname, n in PROMPTS:
        prompt = [int(x) for x in rng.integers(3, vocab, n)]
        case, rows = R.run_greedy(m, prompt, STEPS)
        if len(set(case["ids"])) < 8:
            sys.exit("gemma4-refs: %s/%s: greedy ids %s lock onto few tokens; retune init" % (name, cname, case["ids"]))
        case["f64_rel_err"] = f64_rel_err(m64, case, rows)
        case["prefill_vs_decode"] = prefill_vs_decode(m, prompt + case["ids"][:-1])
        binname = "%s.%s.logits.bin" % (name, cname)
        np.stack(rows).astype("<f4").tofile(os.path.join(REFS, binname))
        case["logits"] = {"file": binname, "rows": len(rows), "dtype": "float32 little-endian",
                          "row_i": "logits the i-th generated id was chosen from (row 0: prefill)"}
        cases.append(dict(name=cname, **case))
        log("%s/%s: %d prompt ids, ids %s..., %d distinct, min gap %.3g, f64 %.1e, prefill vs decode %.1e"
            % (name, cname, n, case["ids"][:6], len(set(case["ids"])), min(case["gap"]),
               max(case["f64_rel_err"]), case["prefill_vs_decode"]))
    tc = m.config.get_text_config()
    loaded = tc.to_dict()
    loaded["kv_sharing_modes"] = tc.kv_sharing_modes
    del m, m64
    ggufs = {}
    for outtype in ("f32", "q8_0") if not wrapper else ("f32",):  # the converter reads the wrapper's text too
        path, info = FR.convert(llama_cpp, d, outtype)
        ggufs[outtype] = dict(file=rel(path), sha256=F.sha256_file(path), **info)
    files = {}
    for f in sorted(os.listdir(d)):
        size = os.path.getsize(os.path.join(d, f))
        if size >= SIZE_LIMIT:
            sys.exit("gemma4-refs: %s/%s is %d bytes, over the %d limit" % (name, f, size, SIZE_LIMIT))
        files[f] = {"bytes": size, "sha256": F.sha256_file(os.path.join(d, f))}
    source = {"weights": "random (torch.Generator seed %d, init_weights of make_gemma4_refs.py), saved by "
                         "save_pretrained as float32" % INIT_SEEDS[name],
              "model_type": mtype, "exercises": what,
              "content_sha256": F.content_hash(os.path.join(d, "model.safetensors"))}
    ref = dict(model={"repo": rel(d)}, vocab_size=vocab, versions=vers, source=source,
               settings=R.settings(load="%s.from_pretrained(dir, dtype=float32, attn_implementation=eager)"
                                        % load.__name__, steps=STEPS,
                                   f64_rel_err="max|f32 - f64| / max|f64| per step, teacher-forced on the f32 ids",
                                   prefill_vs_decode="max |logit| difference, HF one forward vs HF token-by-token "
                                                     "decode, prompt + ids, all positions"),
               cases=cases)
    ref["gguf"] = {"file": ggufs["f32"]["file"], "sha256": ggufs["f32"]["sha256"],
                   "made_by": "tests/gen/convert_tiny_gguf.py (llama.cpp convert_hf_to_gguf.py, --outtype f32, "
                              "tokenizer model none)", "same_reference": True}
    if "q8_0" in ggufs:
        ref["gguf_q8_0"] = {"file": ggufs["q8_0"]["file"], "sha256": ggufs["q8_0"]["sha256"],
                            "note": "the converter's --outtype q8_0; not compared with this reference (quantized): "
                                    "tests/cli/check_family_fast.py runs it"}
    R.write_json(os.path.join(REFS, name + ".json"), ref)
    keys = ("layer_types", "per_layer_config", "kv_sharing_modes", "num_kv_shared_layers", "head_dim",
            "num_attention_heads", "num_key_value_heads", "attention_k_eq_v", "use_double_wide_mlp",
            "hidden_size_per_layer_input", "sliding_window", "rope_parameters", "final_logit_softcapping",
            "tie_word_embeddings", "rms_norm_eps")
    return dict(family=mtype, exercises=what, files=files, gguf=ggufs,
                hf_config_as_loaded={k: loaded.get(k) for k in keys if k in loaded})


def log(msg):
    print("gemma4-refs: " + msg, file=sys.stderr, flush=True)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_gemma4_refs.py CACHE [NAME...]")
    only = set(sys.argv[2:])
    torch.set_num_threads(R.THREADS)
    torch.use_deterministic_algorithms(True)
    vers = R.versions()
    llama_cpp = FR.llama_cpp_tree(sys.argv[1])
    vers["llama_cpp_sdist"] = os.path.relpath(llama_cpp, sys.argv[1]).split("/")[-3]
    t0 = time.time()
    summary = {}
    if os.path.exists(SUMMARY) and only:
        with open(SUMMARY) as f:
            summary = json.load(f)["fixtures"]
    for i, e in enumerate(FIXTURES):
        if not only or e[0] in only:
            summary[e[0]] = build(i, e, vers, llama_cpp)
    R.write_json(SUMMARY, {"made_by": "tests/gen/make_gemma4_refs.py (make gemma4-refs)", "versions": vers,
                           "fixtures": summary})
    log("done in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
