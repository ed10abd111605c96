"""Torch-free generator of the random-weight checkpoints with the exact published configs of
Qwen3-0.6B, Qwen2.5-0.5B and Gemma-3-1B (the model families of issue 17 at their real sizes).

Shared by build_family_models.py (`make family-models`, tools venv) and make_family_model_refs.py (`make
family-model-refs`, reference venv). The config.json of each model is committed in tests/gen/<name>/,
written by that family's transformers config class from the published config.json
(make_family_model_refs.py, which cites each source); the tensors follow from it:

  tensor_specs(cfg)   (name, "BF16", shape) of every tensor, in the order the HF model lists them;
                      tied embeddings: no lm_head (save_pretrained drops the tied copy too)
  write_model(...)    the bf16 model.safetensors, deterministic and platform independent

Values: the stream of fixturelib.random_bf16_chunks (seed = sha256(tag + tensor name), PCG64 raw
words, two signed 24-bit integers per word, one IEEE multiply), uniform with standard deviation
    0.02  for every matrix (embeddings included),
    0.1   for the q/k/v biases of Qwen2 (large enough that dropping them moves the logits far past
          the 1e-4 bound),
    0.02  around 1.0 for RMSNorm weights of the x * w convention (Qwen2, Qwen3), and around 0.0
          for Gemma 3's x * (1 + w) convention (so both scale the normalized vector by about 1,
          and a loader that forgets Gemma's +1 is off by a factor of ~50).
"""
import hashlib
import math

import numpy as np

import fixturelib as F

MODELS = ("qwen3-0.6b-random", "qwen2.5-0.5b-random", "gemma3-1b-random")
MATRIX_STD = 0.02
BIAS_STD = 0.1
NORM_STD = 0.02


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def tensor_specs(cfg):
    """(name, dtype, shape) of every tensor of a qwen2 / qwen3 / gemma3_text config."""
    mt = cfg["model_type"]
    if mt not in ("qwen2", "qwen3", "gemma3_text"):
        raise ValueError("familylib: model_type %s is not generated here" % mt)
    h, hd = cfg["hidden_size"], head_dim(cfg)
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    inter = cfg["intermediate_size"]
    specs = [("model.embed_tokens.weight", (cfg["vocab_size"], h))]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        specs.append((p + "self_attn.q_proj.weight", (q, h)))
        if mt == "qwen2":
            specs.append((p + "self_attn.q_proj.bias", (q,)))
        specs.append((p + "self_attn.k_proj.weight", (kv, h)))
        if mt == "qwen2":
            specs.append((p + "self_attn.k_proj.bias", (kv,)))
        specs.append((p + "self_attn.v_proj.weight", (kv, h)))
        if mt == "qwen2":
            specs.append((p + "self_attn.v_proj.bias", (kv,)))
        specs.append((p + "self_attn.o_proj.weight", (h, q)))
        if mt in ("qwen3", "gemma3_text"):
            specs += [(p + "self_attn.q_norm.weight", (hd,)), (p + "self_attn.k_norm.weight", (hd,))]
        specs += [(p + "mlp.gate_proj.weight", (inter, h)), (p + "mlp.up_proj.weight", (inter, h)),
                  (p + "mlp.down_proj.weight", (h, inter)), (p + "input_layernorm.weight", (h,)),
                  (p + "post_attention_layernorm.weight", (h,))]
        if mt == "gemma3_text":
            specs += [(p + "pre_feedforward_layernorm.weight", (h,)),
                      (p + "post_feedforward_layernorm.weight", (h,))]
    specs.append(("model.norm.weight", (h,)))
    if not cfg.get("tie_word_embeddings", True):
        specs.append(("lm_head.weight", (cfg["vocab_size"], h)))
    return [(n, "BF16", s) for n, s in specs]


def value_params(cfg, name):
    """(std, offset) of tensor `name`."""
    if name.endswith("norm.weight"):
        return NORM_STD, (0.0 if cfg["model_type"] == "gemma3_text" else 1.0)
    if name.endswith(".bias"):
        return BIAS_STD, 0.0
    return MATRIX_STD, 0.0


def random_bf16_chunks(tag, name, count, std, offset):
    """fixturelib.random_bf16_chunks with the tag, the standard deviation and the offset given."""
    seed = int.from_bytes(hashlib.sha256(tag + name.encode()).digest()[:16], "little")
    bitgen = np.random.PCG64(seed)
    scale = np.float32(std * math.sqrt(3.0) / (1 << 23))
    left = count
    while left:
        words = min(F.CHUNK_WORDS, (left + 1) // 2)
        raw = bitgen.random_raw(words)
        k = np.empty(2 * words, dtype=np.int32)
        k[0::2] = (raw >> np.uint64(40)).astype(np.int32)
        k[1::2] = ((raw >> np.uint64(8)) & np.uint64(0xFFFFFF)).astype(np.int32)
        del raw
        k -= 1 << 23
        v = k.astype(np.float32)
        del k
        v *= scale
        if offset:
            v += np.float32(offset)
        n = min(left, v.size)
        yield F.f32_to_bf16_bits(v[:n])
        left -= n


def write_model(path, cfg, name):
    """Write the bf16 model.safetensors of fixture `name` (its tag) for config dict `cfg`."""
    tag = ("llmgen-%s/v1/" % name).encode()
    specs = tensor_specs(cfg)
    w = F.StWriter(path, specs)
    for tname, _, shape in specs:
        std, off = value_params(cfg, tname)
        for chunk in random_bf16_chunks(tag, tname, math.prod(shape), std, off):
            w.write(tname, chunk)
    w.close()
