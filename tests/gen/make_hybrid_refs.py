#!/usr/bin/env python3
"""Tiny random hybrid checkpoints (Gated DeltaNet layers beside gated full-attention layers; LFM2's short
convolutions beside attention) and their HF transformers references (make hybrid-refs; never run by CI).

Usage: make_hybrid_refs.py CACHE [NAME...]     (the venv of requirements-ref.txt; NAME filters fixtures)

For each entry of FIXTURES:
  tests/fixtures/tiny-<family>-<variant>/   config.json and model.safetensors written by save_pretrained
                                            (random weights, init_weights below)
  tests/refs/tiny-<...>.json                per prompt (three, of 20, 150 and 300 random ids: longer than
             + .<case>.logits.bin           the convolution, and the longer two span two and three of
                                            llmgen's 128-token prefill chunks and several of HF's 64-token
                                            delta-rule chunks): HF's greedy ids (32 steps), the full logits
                                            of every step, f32-vs-f64 noise; the layout of
                                            tests/refs/README.md with a logits file per case
  tests/fixtures/tiny-<...>/model.f32.gguf  llama.cpp's convert_hf_to_gguf.py (the pinned sdist) on that
                   model.q8_0.gguf          directory, through convert_tiny_gguf.py; the f32 file has the
                                            same reference (check_refs.py runs both), the q8_0 file is the
                                            fast-mode gate's input (check_family_fast.py)
  tests/refs/hybrid-fixtures.json           per fixture: what it exercises, sha256 of every file, the
                                            config as transformers loaded it, the GGUF keys written

Greedy decoding is make_refs.py's loop: one forward over the prompt (HF's chunked delta rule), then one
token per step with the model's own cache (HF's recurrent delta rule); argmax, no EOS stop.
Also recorded per case: prefill_vs_decode = max |logit| difference between HF's chunked prefill of the
prompt plus the ids and HF's own token-by-token recurrence over the same sequence (all positions): the
size of the gap between the two algebraically equal forms, which bounds how closely any per-token
implementation can follow the chunked prefill.
"""
import json
import math
import os
import shutil
import sys
import time

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForCausalLM, Qwen3_5ForConditionalGeneration

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
SIZE_LIMIT = 1 << 20
SUMMARY = os.path.join(REFS, "hybrid-fixtures.json")

# name, model_type, config kwargs, what it exercises
FIXTURES = [
    ("tiny-qwen35-gdn-f32", "qwen3_5_text",
     dict(vocab_size=320, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
          num_key_value_heads=2, head_dim=32, linear_conv_kernel_dim=4, linear_key_head_dim=16,
          linear_value_head_dim=24, linear_num_key_heads=2, linear_num_value_heads=4,
          full_attention_interval=2, tie_word_embeddings=False, rms_norm_eps=1e-6, max_position_embeddings=512,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}),
     "Gated DeltaNet layers 0, 2 (2 key heads of 16, 4 value heads of 24: value head h reads key head "
     "h / 2; conv kernel 4) and gated full attention 1, 3 (q_proj doubled per head, sigmoid output gate, "
     "zero-centred q/k norms, partial rotary 8 of 32, GQA 4/2); (1 + w) norms, untied"),
    ("tiny-qwen35-vl-f32", "qwen3_5",
     dict(vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4,
          num_key_value_heads=2, head_dim=32, linear_conv_kernel_dim=4, linear_key_head_dim=16,
          linear_value_head_dim=24, linear_num_key_heads=2, linear_num_value_heads=4,
          full_attention_interval=2, tie_word_embeddings=False, rms_norm_eps=1e-6, max_position_embeddings=512,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}),
     "the multimodal wrapper as the published Qwen3.5 checkpoints are (Qwen3_5ForConditionalGeneration, "
     "model_type qwen3_5 with text_config; text weights under model.language_model., a vision tower under "
     "model.visual. that text-only use skips), text-only input"),
    ("tiny-lfm2-f32", "lfm2",
     dict(vocab_size=256, hidden_size=64, intermediate_size=152, num_hidden_layers=5, num_attention_heads=4,
          num_key_value_heads=2, conv_L_cache=3, block_multiple_of=32, block_ffn_dim_multiplier=1.0,
          block_auto_adjust_ff_dim=True, layer_types=["conv", "full_attention", "conv", "conv", "full_attention"],
          tie_word_embeddings=True, norm_eps=1e-5, max_position_embeddings=512,
          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     "LFM2: short gated convolutions (kernel 3, no activation, a state of the last 2 inputs) in layers 0, 2, "
     "3 beside attention layers 1, 4 (q/k layernorms, GQA 4/2, head_dim 16, NeoX RoPE theta 1e6); FFN width "
     "adjusted 152 -> 101 -> 128 (multiple of 32); embedding_norm as the final norm; plain norms with "
     "non-constant weights; tied"),
    ("tiny-lfm2moe-f32", "lfm2_moe",
     dict(vocab_size=256, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=4,
          num_attention_heads=4, num_key_value_heads=2, conv_L_cache=3, num_dense_layers=1, num_experts=6,
          num_experts_per_tok=2, norm_topk_prob=True, use_expert_bias=True, routed_scaling_factor=1.0,
          layer_types=["conv", "full_attention", "conv", "full_attention"], tie_word_embeddings=True,
          norm_eps=1e-5, max_position_embeddings=512,
          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     "LFM2-MoE: LFM2's short convs (layers 0, 2) and attention (1, 3); layer 0's MLP dense (num_dense_layers "
     "1, width 96), layers 1-3 expert layers (6 experts of 32, 2 per token): sigmoid router, experts chosen "
     "on sigmoid + expert_bias (non-zero here), weights renormalized (+1e-6) and scaled by "
     "routed_scaling_factor (1.0, the published value: the converter writes no such key, so a GGUF file "
     "means 1.0); plain non-constant norms; tied"),
]

# The wrapper fixtures' vision tower: as small as the class allows (text-only input never runs it).
VISION = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=8,
              num_position_embeddings=16)


def init_weights(model, seed, plain_norms=False):
    """O(1) activations and well separated logits: matrices N(0, 1/in) (out_proj, o_proj, down_proj gain 3,
    lm_head gain 4), zero-centred norms w = 0.1 N(0, 1) (they compute x * (1 + w)), the gated norm of the
    DeltaNet 1 + 0.1 N(0, 1) (a plain weight), conv taps N(0, 1/4), dt_bias 0.5 N(0, 1), and
    A_log = log U(0.05, 2): a slower decay than HF's U(0.01, 16) init, so that the state carries tokens
    far back and a wrong state shows in the logits. plain_norms (LFM2, whose norms compute x * w): every
    norm weight 1 + 0.2 N(0, 1), the short convolutions' taps N(0, 1/4); LFM2-MoE's expert_bias buffers
    0.3 N(0, 1), its stacked experts N(0, 1/in) with down gain 4.5 (3 locked the greedy ids onto one token)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, b in sorted(model.named_buffers()):
            if name.endswith("expert_bias"):  # LFM2-MoE's routing bias (zero by default: selection = weights)
                b.copy_(0.3 * torch.randn(b.shape, generator=g))
        for name, p in sorted(model.named_parameters()):
            r = torch.randn(p.shape, generator=g)
            if plain_norms and (name.endswith("norm.weight") or name.endswith("layernorm.weight")):
                p.copy_(1.0 + 0.2 * r)
            elif plain_norms and name.endswith("conv.conv.weight"):
                p.copy_(0.5 * r)
            elif "visual" in name:
                p.copy_(0.1 * r if p.dim() == 1 else r / math.sqrt(p.shape[1]))
            elif name.endswith("linear_attn.norm.weight"):
                p.copy_(1.0 + 0.1 * r)
            elif name.endswith("norm.weight"):
                p.copy_(0.1 * r)
            elif name.endswith("A_log"):
                p.copy_(torch.log(0.05 + 1.95 * torch.rand(p.shape, generator=g)))
            elif name.endswith("dt_bias"):
                p.copy_(0.5 * r)
            elif "conv1d" in name:
                p.copy_(0.5 * r)
            elif "embed_tokens" in name:
                p.copy_(r)
            elif name == "lm_head.weight":
                p.copy_(r * (4.0 / math.sqrt(p.shape[1])))
            elif ".experts." in name and p.dim() == 3:  # LFM2-MoE's stacks (E, out, in): down gain 4.5
                p.copy_(r * ((4.5 if "down" in name else 1.0) / math.sqrt(p.shape[-1])))
            elif "o_proj" in name or "down_proj" in name or "out_proj" in name or name.endswith(".w2.weight"):
                p.copy_(r * (3.0 / math.sqrt(p.shape[1])))
            else:
                p.copy_(r / math.sqrt(p.shape[1]))


@torch.no_grad()
def prefill_vs_decode(model, seq):
    """max |chunked prefill logits - token-by-token recurrence logits| over every position of seq."""
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
    torch.manual_seed(8000 + idx)
    wrapper = mtype == "qwen3_5"
    if wrapper:
        cfg = AutoConfig.for_model(mtype, text_config=dict(kw, bos_token_id=1, eos_token_id=2, pad_token_id=None),
                                   vision_config=VISION, tie_word_embeddings=kw["tie_word_embeddings"])
        model = Qwen3_5ForConditionalGeneration(cfg)
        vocab = kw["vocab_size"]
    else:
        cfg = AutoConfig.for_model(mtype, bos_token_id=1, eos_token_id=2, pad_token_id=None, **kw)
        model = AutoModelForCausalLM.from_config(cfg)
        vocab = cfg.vocab_size
    init_weights(model, 8100 + idx, plain_norms=mtype.startswith("lfm2"))
    d = os.path.join(FIXT, name)
    shutil.rmtree(d, ignore_errors=True)
    model.to(torch.float32).save_pretrained(d)
    del model
    load = Qwen3_5ForConditionalGeneration if wrapper else AutoModelForCausalLM
    m = load.from_pretrained(d, dtype=torch.float32).eval()
    m64 = load.from_pretrained(d, dtype=torch.float64).eval()
    if hasattr(m64, "set_experts_implementation") and getattr(m64.config, "_experts_implementation", None):
        m64.set_experts_implementation("eager")  # torch's grouped_mm takes no float64: the noise check only
    rng = np.random.Generator(np.random.PCG64(8200 + idx))
    cases = []
    for cname, n in PROMPTS:
        prompt = [int(x) for x in rng.integers(3, vocab, n)]
        case, rows = R.run_greedy(m, prompt, STEPS)
        if len(set(case["ids"])) < 8:
            sys.exit("hybrid-refs: %s/%s: greedy ids %s lock onto few tokens; retune init" % (name, cname, case["ids"]))
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
    loaded = m.config.get_text_config().to_dict()
    del m, m64
    ggufs = {}
    for outtype in ("f32", "q8_0") if not wrapper else ():  # the wrapper's text is the same converter path
        path, info = FR.convert(llama_cpp, d, outtype)
        ggufs[outtype] = dict(file=rel(path), sha256=F.sha256_file(path), **info)
    files = {}
    for f in sorted(os.listdir(d)):
        size = os.path.getsize(os.path.join(d, f))
        if size >= SIZE_LIMIT:
            sys.exit("hybrid-refs: %s/%s is %d bytes, over the %d limit" % (name, f, size, SIZE_LIMIT))
        files[f] = {"bytes": size, "sha256": F.sha256_file(os.path.join(d, f))}
    source = {"weights": "random (torch.Generator seed %d, init_weights of make_hybrid_refs.py), saved by "
                         "save_pretrained as float32" % (8100 + idx),
              "model_type": mtype, "exercises": what,
              "content_sha256": F.content_hash(os.path.join(d, "model.safetensors"))}
    ref = dict(model={"repo": rel(d)}, vocab_size=vocab, versions=vers, source=source,
               settings=R.settings(load="AutoModelForCausalLM.from_pretrained(dir, dtype=float32)", steps=STEPS,
                                   f64_rel_err="max|f32 - f64| / max|f64| per step, teacher-forced on the f32 ids",
                                   prefill_vs_decode="max |logit| difference, HF chunked prefill vs HF "
                                                     "token-by-token recurrence, prompt + ids, all positions"),
               cases=cases)
    if ggufs:
        ref["gguf"] = {"file": ggufs["f32"]["file"], "sha256": ggufs["f32"]["sha256"],
                       "made_by": "tests/gen/convert_tiny_gguf.py (llama.cpp convert_hf_to_gguf.py, --outtype f32, "
                                  "tokenizer model none, as --no-mtp)", "same_reference": True}
        ref["gguf_q8_0"] = {"file": ggufs["q8_0"]["file"], "sha256": ggufs["q8_0"]["sha256"],
                            "note": "the converter's --outtype q8_0; not compared with this reference (quantized): "
                                    "tests/cli/check_family_fast.py runs it"}
    else:
        ref["gguf"] = {"none": "the wrapper's text weights convert as the text fixture's (tiny-qwen35-gdn-f32)"}
    R.write_json(os.path.join(REFS, name + ".json"), ref)
    keys = ("layer_types", "linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim",
            "linear_num_key_heads", "linear_num_value_heads", "rope_parameters", "head_dim",
            "num_attention_heads", "num_key_value_heads", "tie_word_embeddings", "rms_norm_eps", "norm_eps",
            "conv_L_cache", "intermediate_size", "block_multiple_of", "block_ffn_dim_multiplier",
            "block_auto_adjust_ff_dim", "moe_intermediate_size", "num_dense_layers", "num_experts",
            "num_experts_per_tok", "norm_topk_prob", "use_expert_bias", "routed_scaling_factor")
    return dict(family=mtype, exercises=what, files=files, gguf=ggufs,
                hf_config_as_loaded={k: loaded.get(k) for k in keys if k in loaded})


def log(msg):
    print("hybrid-refs: " + msg, file=sys.stderr, flush=True)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_hybrid_refs.py CACHE [NAME...]")
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
    R.write_json(SUMMARY, {"made_by": "tests/gen/make_hybrid_refs.py (make hybrid-refs)", "versions": vers,
                           "fixtures": summary})
    log("done in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
