#!/usr/bin/env python3
"""Tiny random checkpoints of the model families beyond Llama, their HF transformers references and
their GGUF conversions (make family-refs; never run by CI).

Usage: make_family_refs.py CACHE [NAME...]      (the venv of requirements-ref.txt; NAME filters fixtures)

For each entry of FIXTURES (family = HF model_type):
  tests/fixtures/tiny-<family>-<variant>/       config.json (+ generation_config.json) and
                                                model.safetensors written by save_pretrained
                                                (random weights, see init_weights); for the "legacy"
                                                variants config.json is then rewritten to the key
                                                layout of the published transformers-4.x files
  tests/refs/tiny-<family>-<variant>.json       HF's greedy ids (12 random prompt ids, 32 steps), the
             + .logits.bin                      full logits of every step, the f32-vs-f64 noise; the
                                                JSON layout of tests/refs/README.md
  tests/fixtures/tiny-<...>/model.f32.gguf      llama.cpp's convert_hf_to_gguf.py (the pinned sdist of
                                                `make peer`) on that directory, f32, through
                                                convert_tiny_gguf.py (tokenizer model "none"); only for
                                                variants whose semantics survive the conversion (the
                                                reason is recorded for the others). The same HF
                                                reference applies: same weights, f32.
  tests/fixtures/tiny-<...>/model.q8_0.gguf     the converter's own Q8_0 output (--outtype q8_0) for one
                                                variant per family: the fast-mode gate's input
  tests/refs/family-fixtures.json               per fixture: what it exercises, file sizes, sha256 of
                                                every file, the GGUF keys the converter wrote

Greedy decoding is make_refs.py's manual loop (prefill once, then one token per step with the model's
own KV cache, argmax, no EOS stop); the model is loaded with AutoModelForCausalLM.from_pretrained(dir,
dtype=float32) from the committed directory, so the reference is what transformers computes from the
files as written. Two consistency checks are recorded per fixture:
  f64_rel_err        f32 vs f64 (teacher-forced, no cache) per step: plain rounding noise
  nocache_rel_err    the cached greedy logits vs one uncached forward over prompt + ids: equal up to
                     rounding unless the cached path itself is part of the semantics (LongRoPE's
                     short/long switch, see FACTS below)
"""
import copy
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_refs as R  # noqa: E402  (greedy loop, versions, write_json: shared with the Llama refs)
import fixturelib as F  # noqa: E402

REPO = R.REPO
REFS = R.REFS
FIXT = R.FIXT
STEPS = R.TINY_STEPS          # 32
PROMPT_LEN = R.TINY_PROMPT_LEN  # 12
SIZE_LIMIT = 1 << 20  # every committed file stays under 1 MiB
SUMMARY = os.path.join(REFS, "family-fixtures.json")

# Reasons a variant gets no GGUF: the pinned converter drops what makes it differ from Llama.
NO_GGUF_MISTRAL_SWA = ("convert_hf_to_gguf.py maps MistralForCausalLM to arch 'llama' and writes no "
                       "sliding-window key; the file would mean full attention")
NO_GGUF_QWEN_SWA = ("the converter writes no sliding-window key for qwen2/qwen3 (use_sliding_window, "
                    "max_window_layers are dropped); the file would mean full attention")
NO_GGUF_GEMMA_PATTERN = ("the converter writes gemma3.attention.sliding_window but no layer pattern; "
                         "readers (llama.cpp) then assume 5 sliding : 1 global (layer i sliding iff "
                         "i % 6 < 5), which is not this config's layer_types")
NO_GGUF_GEMMA_SCALAR = "the converter does not write query_pre_attn_scalar (llama.cpp uses head_dim^-0.5)"
NO_GGUF_SMOLLM3_PATTERN = ("the converter writes no no-RoPE key for smollm3; readers (llama.cpp) assume "
                           "every 4th layer (i + 1) % 4 == 0 has no RoPE, which is not this config's no_rope_layers")


def longrope_factors(n, seed, lo, hi):
    g = np.random.Generator(np.random.PCG64(seed))
    return [float(round(x, 4)) for x in np.sort(g.uniform(lo, hi, n))]


# name, model_type, config kwargs, weight dtype, gguf (True or the reason it has none), q8 (also write a
# Q8_0 GGUF), legacy rewrite (None or a function name below), what it exercises
FIXTURES = [
    # ---- qwen2: biases on q, k, v --------------------------------------------------------------
    ("tiny-qwen2-gqa-f32", "qwen2",
     dict(vocab_size=384, hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-6,
          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     "float32", True, True, None, "QKV bias, GQA 4/2, untied", dict(bias_std=0.2)),
    ("tiny-qwen2-mha-tied-odd-f32", "qwen2",
     dict(vocab_size=300, hidden_size=80, intermediate_size=136, num_hidden_layers=2, num_attention_heads=5,
          num_key_value_heads=5, tie_word_embeddings=True, rms_norm_eps=1e-6,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
     "float32", True, False, None, "QKV bias, MHA 5 heads of 16, tied, odd sizes",
     dict(bias_std=0.1, tied_std=0.1)),
    ("tiny-qwen2-swa-f32", "qwen2",
     dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
          num_key_value_heads=1, tie_word_embeddings=False, rms_norm_eps=1e-6,
          use_sliding_window=True, sliding_window=6, max_window_layers=1,
          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     "float32", NO_GGUF_QWEN_SWA, False, None,
     "use_sliding_window: layers >= max_window_layers (1) slide with window 6 (layer 0 full), MQA",
     dict(bias_std=0.2)),
    ("tiny-qwen2-legacy-keys-f32", "qwen2",
     dict(vocab_size=320, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, tie_word_embeddings=True, rms_norm_eps=1e-6,
          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     "float32", True, False, "legacy_qwen",
     "config.json as published Qwen2.5 files have it: rope_theta at top level, no layer_types, "
     "use_sliding_window false with sliding_window 5 and max_window_layers 1 (transformers ignores the "
     "window: a reader that applies it fails)", dict(bias_std=0.1, tied_std=0.1)),
    # ---- qwen3: q/k RMSNorm per head, explicit head_dim ----------------------------------------
    ("tiny-qwen3-gqa-tied-f32", "qwen3",
     dict(vocab_size=384, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, head_dim=24, tie_word_embeddings=True, rms_norm_eps=1e-6,
          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     "float32", True, True, None, "q_norm/k_norm, head_dim 24 != hidden/heads 16, GQA 4/2, tied",
     dict(tied_std=0.05)),
    ("tiny-qwen3-mha-bf16", "qwen3",
     dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=3,
          num_key_value_heads=3, head_dim=40, tie_word_embeddings=False, rms_norm_eps=1e-6,
          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     "bfloat16", True, False, None, "bf16 weights, MHA 3 heads of 40 (3 x 40 = 120 != hidden 64), untied"),
    ("tiny-qwen3-mqa-legacy-keys-f32", "qwen3",
     dict(vocab_size=288, hidden_size=72, intermediate_size=112, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=1, head_dim=32, tie_word_embeddings=True, rms_norm_eps=1e-6,
          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     "float32", True, False, "legacy_qwen",
     "MQA, head_dim 32 x 4 heads = 128 != hidden 72; config.json as published Qwen3 files (rope_theta top "
     "level, use_sliding_window false with a sliding_window that must be ignored)", dict(tied_std=0.2)),
    # ---- gemma3 (text) -------------------------------------------------------------------------
    ("tiny-gemma3-pattern6-bf16", "gemma3_text",
     dict(vocab_size=256, hidden_size=72, intermediate_size=64, num_hidden_layers=6, num_attention_heads=2,
          num_key_value_heads=1, head_dim=16, query_pre_attn_scalar=16, sliding_window=5,
          tie_word_embeddings=True, rms_norm_eps=1e-6, final_logit_softcapping=None,
          rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                           "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}),
     "bfloat16", True, True, None,
     "default layer pattern (layers 0-4 sliding window 5 with rope base 1e4, layer 5 global with 1e6), "
     "sqrt(72) embedding scale, (1+w) norms (GGUF stores 1+w), 4 norms per layer, q/k norm, GELU-tanh, "
     "MQA, tied, bf16 weights", dict(tied_std=0.2)),
    ("tiny-gemma3-mixed-f32", "gemma3_text",
     dict(vocab_size=320, hidden_size=64, intermediate_size=112, num_hidden_layers=3, num_attention_heads=4,
          num_key_value_heads=2, head_dim=24, query_pre_attn_scalar=20, sliding_window=4,
          layer_types=["sliding_attention", "full_attention", "sliding_attention"],
          tie_word_embeddings=False, rms_norm_eps=1e-6, final_logit_softcapping=8.0,
          rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                           "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}),
     "float32", NO_GGUF_GEMMA_PATTERN + "; " + NO_GGUF_GEMMA_SCALAR, False, None,
     "layer_types sliding/full/sliding, window 4, query_pre_attn_scalar 20 (!= head_dim 24), "
     "final_logit_softcapping 8, GQA 4/2, untied"),
    ("tiny-gemma3-legacy-keys-f32", "gemma3_text",
     dict(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=2,
          num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=32, sliding_window=6,
          sliding_window_pattern=2, tie_word_embeddings=True, rms_norm_eps=1e-6,
          rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                           "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}),
     "float32", NO_GGUF_GEMMA_PATTERN, False, "legacy_gemma3",
     "config.json as published Gemma 3 files written by transformers 4.5x: sliding_window_pattern 2 "
     "(layers 1 and 3 global), rope_theta and rope_local_base_freq at top level, no layer_types / "
     "rope_parameters; MHA", dict(tied_std=0.1)),
    # ---- mistral: sliding window ----------------------------------------------------------------
    ("tiny-mistral-swa-f32", "mistral",
     dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, head_dim=16, sliding_window=7, tie_word_embeddings=False, rms_norm_eps=1e-5,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
     "float32", NO_GGUF_MISTRAL_SWA, False, None, "sliding_window 7 on every layer, GQA 4/2, untied"),
    ("tiny-mistral-mqa-odd-swa-f32", "mistral",
     dict(vocab_size=300, hidden_size=80, intermediate_size=144, num_hidden_layers=3, num_attention_heads=5,
          num_key_value_heads=1, head_dim=16, sliding_window=5, tie_word_embeddings=True, rms_norm_eps=1e-5,
          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     "float32", NO_GGUF_MISTRAL_SWA, False, None, "sliding_window 5, MQA, tied, odd sizes", dict(tied_std=0.05)),
    ("tiny-mistral-headdim-f32", "mistral",
     dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, head_dim=24, sliding_window=None, tie_word_embeddings=False,
          rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
     "float32", True, True, None,
     "no sliding window (null), explicit head_dim 24 != 64/4 (as Mistral-Nemo), GQA; GGUF arch 'llama' "
     "with Q/K rows permuted"),
    # ---- phi3: fused qkv / gate_up, partial rotary, LongRoPE ------------------------------------
    ("tiny-phi3-partial-swa-f32", "phi3",
     dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-5, sliding_window=6,
          max_position_embeddings=256, original_max_position_embeddings=256,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
     "float32", True, True, None,
     "fused qkv_proj and gate_up_proj, partial_rotary_factor 0.5 (8 of 16 dims rotate), sliding_window 6 "
     "(phi3.attention.sliding_window in the GGUF; llama.cpp ignores it), GQA 4/2, untied"),
    ("tiny-phi3-longrope-f32", "phi3",
     dict(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=4, tie_word_embeddings=True, rms_norm_eps=1e-5, sliding_window=None,
          max_position_embeddings=64, original_max_position_embeddings=8,
          rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.75,
                           "short_factor": longrope_factors(6, 71, 1.0, 1.6),
                           "long_factor": longrope_factors(6, 72, 1.5, 9.0)}),
     "float32", True, False, None,
     "LongRoPE, original_max_position_embeddings 8 < the 12-token prompt: the long factors from the first "
     "step on; attention factor sqrt(1 + ln(64/8)/ln 8) = sqrt 2 on cos/sin; partial_rotary_factor 0.75 "
     "(12 of 16 dims, 6 factors), MHA, tied"),
    ("tiny-phi3-longrope-switch-legacy-f32", "phi3",
     dict(vocab_size=288, hidden_size=64, intermediate_size=112, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-5, sliding_window=None,
          max_position_embeddings=128, original_max_position_embeddings=24,
          rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                           "short_factor": longrope_factors(8, 73, 1.0, 1.3),
                           "long_factor": longrope_factors(8, 74, 2.0, 12.0)}),
     "float32", True, False, "legacy_phi3",
     "LongRoPE switching mid-generation: the prompt and steps 0-12 use the short factors, from step 13 "
     "(position 24, sequence 25 > original 24) the new q/k use the long ones while the cached keys keep "
     "their short rotation (transformers' cached semantics); config.json in the published Phi-3.5 layout "
     "(rope_scaling type longrope, rope_theta top level)"),
    # ---- smollm3: layers without RoPE ------------------------------------------------------------
    ("tiny-smollm3-nope4-f32", "smollm3",
     dict(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
          num_key_value_heads=2, tie_word_embeddings=True, rms_norm_eps=1e-6, no_rope_layer_interval=4,
          rope_parameters={"rope_type": "default", "rope_theta": 2000000.0}),
     "float32", True, True, None,
     "no_rope_layers from the default interval 4: layer 3 has no RoPE; GQA 4/2, tied; GGUF arch smollm3 "
     "with Q/K rows permuted", dict(tied_std=0.2)),
    ("tiny-smollm3-custom-nope-f32", "smollm3",
     dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
          num_key_value_heads=4, tie_word_embeddings=False, rms_norm_eps=1e-6, no_rope_layers=[0, 1, 0],
          rope_parameters={"rope_type": "default", "rope_theta": 5000000.0}),
     "float32", NO_GGUF_SMOLLM3_PATTERN, False, None,
     "no_rope_layers [0, 1, 0]: layers 0 and 2 without RoPE (1 = uses RoPE), MHA, untied"),
    # ---- granite: four scalars -----------------------------------------------------------------------
    ("tiny-granite-gqa-f32", "granite",
     dict(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
          num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-6, embedding_multiplier=12.0,
          residual_multiplier=0.22, attention_multiplier=0.2, logits_scaling=2.0,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
     "float32", True, True, None,
     "embedding_multiplier 12, residual_multiplier 0.22, attention_multiplier 0.2 (not head_dim^-0.5 = 0.25), "
     "logits_scaling 2; GQA 4/2, untied; GGUF arch granite with Q/K rows permuted"),
]


def log(msg):
    print("family-refs: " + msg, file=sys.stderr, flush=True)


# ---- weights --------------------------------------------------------------------------------------

def init_weights(model, seed, model_type, tied_std=0.3, bias_std=0.5):
    """make_refs.tiny_init generalized to the families' parameter names (O(1) activations, well separated
    logits; residual branches o_proj / down_proj with gain 3, an untied lm_head with gain 4). tied_std and
    bias_std are set per fixture (FIXTURES' last field) so that greedy ids do not lock onto one token.
    Gemma's norms hold w of x * (1 + w) (HF initializes them to 0): w ~ 0.1 N(0, 1), an effective scale
    near 1 as for the others; its embedding is multiplied by sqrt(hidden), so its rows get std
    tied_std / sqrt(hidden) (tied) or 1 / sqrt(hidden)."""
    g = torch.Generator().manual_seed(seed)
    tied = model.config.tie_word_embeddings
    gemma = model_type.startswith("gemma")
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            r = torch.randn(p.shape, generator=g)
            if name.endswith("norm.weight"):
                p.copy_((0.0 if gemma else 1.0) + 0.1 * r)
            elif name.endswith(".bias"):
                p.copy_(bias_std * r)
            elif "embed_tokens" in name:
                std = tied_std if tied else 1.0
                p.copy_(r * (std / math.sqrt(p.shape[1]) if gemma else std))
            elif name == "lm_head.weight":
                p.copy_(r * (4.0 / math.sqrt(p.shape[1])))
            elif "o_proj" in name or "down_proj" in name:
                p.copy_(r * (3.0 / math.sqrt(p.shape[1])))
            else:
                p.copy_(r / math.sqrt(p.shape[1]))


# ---- config.json rewrites to the transformers 4.x layout -----------------------------------------

def _load(path):
    with open(path) as f:
        return json.load(f)


def _dump(path, c):
    with open(path, "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")


def legacy_qwen(path):
    """As Qwen2.5 / Qwen3 config.json files are published: rope_theta top level, rope_scaling null,
    torch_dtype, no layer_types, use_sliding_window false with a window value that must be ignored."""
    c = _load(path)
    rp = c.pop("rope_parameters")
    c["rope_theta"] = rp["rope_theta"]
    c["rope_scaling"] = None
    c["torch_dtype"] = c.pop("dtype")
    c.pop("layer_types", None)
    c["use_sliding_window"] = False
    c["sliding_window"] = 5
    c["max_window_layers"] = 1
    _dump(path, c)


def legacy_gemma3(path):
    """As gemma-3-1b-it's config.json (transformers 4.50): sliding_window_pattern, rope_theta,
    rope_local_base_freq, rope_scaling null, no layer_types, no rope_parameters."""
    c = _load(path)
    rp = c.pop("rope_parameters")
    c.pop("layer_types")
    c["sliding_window_pattern"] = 2
    c["rope_theta"] = rp["full_attention"]["rope_theta"]
    c["rope_local_base_freq"] = rp["sliding_attention"]["rope_theta"]
    c["rope_scaling"] = None
    c["torch_dtype"] = c.pop("dtype")
    _dump(path, c)


def legacy_phi3(path):
    """As Phi-3.5-mini-instruct's config.json: rope_scaling {type: longrope, short_factor, long_factor},
    rope_theta and original_max_position_embeddings at top level (partial_rotary_factor too, when not 1,
    as in Phi-4-mini)."""
    c = _load(path)
    rp = c.pop("rope_parameters")
    c["rope_theta"] = rp.pop("rope_theta")
    prf = rp.pop("partial_rotary_factor", 1.0)
    if prf != 1.0:
        c["partial_rotary_factor"] = prf
    rp.pop("original_max_position_embeddings", None)
    rtype = rp.pop("rope_type")
    c["rope_scaling"] = dict(type=rtype, **rp) if rtype != "default" else None
    c["torch_dtype"] = c.pop("dtype")
    _dump(path, c)


LEGACY = {"legacy_qwen": legacy_qwen, "legacy_gemma3": legacy_gemma3, "legacy_phi3": legacy_phi3}


# ---- the converter --------------------------------------------------------------------------------

def llama_cpp_tree(cache):
    """The llama.cpp tree of the pinned llama-cpp-python sdist (shared with `make peer` and `make
    chat-templates`: same version and sha256). Unpacked by build_peer.sh under CACHE/peer; without it
    the converter's files alone are unpacked under CACHE/family-refs."""
    import tarfile
    import fetch_chat_templates as FT
    top = "llama_cpp_python-%s/vendor/llama.cpp" % FT.VERSION
    for base in (os.path.join(cache, "peer"), os.path.join(cache, "family-refs")):
        d = os.path.join(base, top)
        if os.path.exists(os.path.join(d, "convert_hf_to_gguf.py")):
            return d
    dl = os.path.join(cache, "peer", "dl")
    sdist = os.path.join(dl, FT.SDIST)
    if not os.path.exists(sdist):
        os.makedirs(dl, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        "llama-cpp-python==" + FT.VERSION, "-d", dl], check=True)
    if F.sha256_file(sdist) != FT.SHA256:
        sys.exit("family-refs: %s is not the pinned sdist (sha256 %s)" % (sdist, FT.SHA256))
    out = os.path.join(cache, "family-refs")
    keep = tuple(top + "/" + p for p in ("convert_hf_to_gguf.py", "conversion/", "gguf-py/"))
    with tarfile.open(sdist, "r:gz") as tar:
        tar.extractall(out, members=[m for m in tar.getmembers() if m.name.startswith(keep)])
    return os.path.join(out, top)


def convert(llama_cpp, d, outtype):
    out = os.path.join(d, "model.%s.gguf" % outtype)
    p = subprocess.run([sys.executable, os.path.join(HERE, "convert_tiny_gguf.py"), llama_cpp, d, out, outtype],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.stderr.write(p.stderr.decode("utf-8", "replace")[-4000:])
        sys.exit("family-refs: convert_hf_to_gguf failed on %s" % d)
    info = json.loads(p.stdout)
    info["warnings"] = [l for l in p.stderr.decode("utf-8", "replace").split("\n")
                        if l.strip() and "Writing" not in l and "it/s" not in l]
    return out, info


# ---- one fixture ----------------------------------------------------------------------------------

@torch.no_grad()
def nocache_rel_err(model, case, rows):
    """Cached greedy rows vs one uncached forward over prompt + ids, per step."""
    seq = case["prompt_ids"] + case["ids"][:len(rows) - 1]
    logits = model(input_ids=torch.tensor([seq]), use_cache=False).logits[0]
    p = len(case["prompt_ids"])
    return [float((torch.from_numpy(r).double() - logits[p - 1 + i].double()).abs().max()
                  / logits[p - 1 + i].abs().max()) for i, r in enumerate(rows)]


@torch.no_grad()
def f64_cached_rel_err(model64, case, rows):
    """f32 vs f64 through the same cached loop, teacher-forced on the f32 ids: plain rounding noise
    (the cached path, not one uncached forward, because LongRoPE's cached semantics differ from it)."""
    out = model64(input_ids=torch.tensor([case["prompt_ids"]]), use_cache=True)
    errs = []
    for i, r in enumerate(rows):
        ref = out.logits[0, -1]
        errs.append(float((torch.from_numpy(r).double() - ref).abs().max() / ref.abs().max()))
        if i + 1 < len(rows):
            out = model64(input_ids=torch.tensor([[case["ids"][i]]]), past_key_values=out.past_key_values,
                          use_cache=True)
    return errs


CONFIG_FACTS = ("model_type", "architectures", "head_dim", "tie_word_embeddings", "layer_types", "sliding_window",
                "use_sliding_window", "max_window_layers", "no_rope_layers", "no_rope_layer_interval",
                "rope_parameters", "original_max_position_embeddings", "max_position_embeddings",
                "query_pre_attn_scalar", "final_logit_softcapping", "attn_logit_softcapping",
                "hidden_act", "hidden_activation", "rms_norm_eps", "attention_bias")


def build(idx, entry, llama_cpp, vers):
    name, mtype, kw, dtype, gguf, q8, legacy, what = entry[:8]
    init = entry[8] if len(entry) > 8 else {}
    torch.manual_seed(5000 + idx)
    kw = copy.deepcopy(kw)
    cfg = AutoConfig.for_model(mtype, max_position_embeddings=kw.pop("max_position_embeddings", 256),
                               bos_token_id=1, eos_token_id=2, pad_token_id=None, **kw)
    model = AutoModelForCausalLM.from_config(cfg)
    init_weights(model, 6000 + idx, mtype, **init)
    d = os.path.join(FIXT, name)
    shutil.rmtree(d, ignore_errors=True)
    model.to(getattr(torch, dtype)).save_pretrained(d)
    del model
    if legacy:
        LEGACY[legacy](os.path.join(d, "config.json"))

    m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
    loaded = m.config.to_dict()
    rng = np.random.Generator(np.random.PCG64(7000 + idx))
    prompt = [int(x) for x in rng.integers(3, cfg.vocab_size, PROMPT_LEN)]
    case, rows = R.run_greedy(m, prompt, STEPS)
    case["nocache_rel_err"] = nocache_rel_err(m, case, rows)
    del m
    m64 = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64).eval()
    case["f64_rel_err"] = f64_cached_rel_err(m64, case, rows)
    del m64
    ids = case["ids"]
    if len(set(ids)) < 8:
        sys.exit("family-refs: %s: greedy ids %s lock onto few tokens; retune its init" % (name, ids))

    files = {}
    ggufs = {}
    for outtype, wanted in (("f32", gguf is True), ("q8_0", q8)):
        if wanted:
            path, info = convert(llama_cpp, d, outtype)
            ggufs[outtype] = dict(file=rel(path), sha256=F.sha256_file(path), **info)
    for f in sorted(os.listdir(d)):
        size = os.path.getsize(os.path.join(d, f))
        if size >= SIZE_LIMIT:
            sys.exit("family-refs: %s/%s is %d bytes, over the %d limit" % (name, f, size, SIZE_LIMIT))
        files[f] = {"bytes": size, "sha256": F.sha256_file(os.path.join(d, f))}

    binname = name + ".logits.bin"
    np.stack(rows).astype("<f4").tofile(os.path.join(REFS, binname))
    source = {"weights": "random (torch.Generator seed %d, init_weights %s), saved by save_pretrained as %s%s"
                         % (6000 + idx, json.dumps(init, sort_keys=True), dtype,
                            "; config.json then rewritten by %s()" % legacy if legacy else ""),
              "model_type": mtype, "exercises": what,
              "content_sha256": F.content_hash(os.path.join(d, "model.safetensors"))}
    ref = dict(model={"repo": rel(d)}, vocab_size=cfg.vocab_size, versions=vers, source=source,
               settings=R.settings(load="AutoModelForCausalLM.from_pretrained(dir, dtype=float32)", steps=STEPS,
                                   f64_rel_err="max|f32 - f64| / max|f64| per step, the cached loop teacher-forced "
                                               "on the f32 ids",
                                   nocache_rel_err="cached rows vs one uncached forward over prompt + ids"),
               logits={"file": binname, "rows": len(rows), "dtype": "float32 little-endian",
                       "row_i": "logits the i-th generated id was chosen from (row 0: prefill)"})
    if "f32" in ggufs:
        ref["gguf"] = {"file": ggufs["f32"]["file"], "sha256": ggufs["f32"]["sha256"],
                       "made_by": "tests/gen/convert_tiny_gguf.py (llama.cpp convert_hf_to_gguf.py, --outtype f32, "
                                  "tokenizer model none)", "same_reference": True}
    else:
        ref["gguf"] = {"none": gguf}
    if "q8_0" in ggufs:
        ref["gguf_q8_0"] = {"file": ggufs["q8_0"]["file"], "sha256": ggufs["q8_0"]["sha256"],
                            "note": "the converter's --outtype q8_0; not compared with this reference (quantized): "
                                    "tests/cli/check_family_fast.py runs it"}
    ref["cases"] = [dict(name="random-prompt", **case)]
    R.write_json(os.path.join(REFS, name + ".json"), ref)
    facts = {k: loaded.get(k) for k in CONFIG_FACTS if k in loaded}
    summary = dict(family=mtype, dtype=dtype, exercises=what, files=files,
                   hf_config_as_loaded=facts, gguf=ggufs or {"none": gguf})
    log("%s: ids %s...; %d distinct, min gap %.3g, f64 %.1e, nocache %.1e, files %s"
        % (name, ids[:8], len(set(ids)), min(case["gap"]), max(case["f64_rel_err"]),
           max(case["nocache_rel_err"]), {k: v["bytes"] for k, v in files.items()}))
    return summary


def rel(path):
    return os.path.relpath(path, REPO)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_family_refs.py CACHE [NAME...]")
    cache, only = sys.argv[1], set(sys.argv[2:])
    torch.set_num_threads(R.THREADS)
    torch.use_deterministic_algorithms(True)
    llama_cpp = llama_cpp_tree(cache)
    vers = R.versions()
    vers["llama_cpp_sdist"] = os.path.relpath(llama_cpp, cache).split("/")[-3]
    summary = {}
    if os.path.exists(SUMMARY):
        summary = R_load(SUMMARY).get("fixtures", {})
    t0 = time.time()
    for idx, entry in enumerate(FIXTURES):
        if only and entry[0] not in only:
            continue
        summary[entry[0]] = build(idx, entry, llama_cpp, vers)
    summary = {k: summary[k] for k in [e[0] for e in FIXTURES] if k in summary}
    R.write_json(SUMMARY, {"made_by": "tests/gen/make_family_refs.py (make family-refs)", "versions": vers,
                           "fixtures": summary})
    log("done in %.1f s" % (time.time() - t0))


def R_load(path):
    with open(path) as f:
        return json.load(f)


if __name__ == "__main__":
    main()
