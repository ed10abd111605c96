/* config.h - hyperparameters of a model of any family in the architecture table
 * (arch.h), from config.json or GGUF metadata. */
#ifndef LLMGEN_CONFIG_H
#define LLMGEN_CONFIG_H

#include <stdint.h>

#include "arch.h"
#include "formats/gguf.h"

#define CONFIG_MAX_EOS 8
#define CONFIG_MAX_LAYERS 1024  /* low enough that layers * kv_heads * head_dim * max_pos stays in 64 bits */
#define CONFIG_MAX_ROT_PAIRS 512  /* rotary pairs (rot_dim / 2) a LongRoPE factor list may hold */

typedef enum {
    ROPE_SCALING_NONE = 0,
    ROPE_SCALING_LLAMA3 = 1,
    ROPE_SCALING_LINEAR = 2,  /* inv_freq / factor (Gemma 3 4B+ global layers) */
    ROPE_SCALING_LONGROPE = 3, /* inv_freq / short or long factor per pair, cos and sin times
                                 rope_attn_factor (Phi-3): long once a call's last position
                                 reaches rope_orig_max_pos, as transformers chooses */
    ROPE_SCALING_YARN = 4     /* YaRN (transformers' _compute_yarn_parameters): inv_freq blended between
                                 theta's and theta's / factor by a ramp over [yarn_low, yarn_high], cos and
                                 sin times rope_attn_factor */
} rope_scaling_type;

/* layer_flags bits */
enum {
    LAYER_SLIDING = 1,  /* attends only the last sliding_window positions */
    LAYER_NO_ROPE = 2,  /* q and k are not rotated (SmolLM3) */
    LAYER_LINEAR = 4,   /* a Gated DeltaNet layer (ARCH_GATED_DELTANET) or a short conv (ARCH_SHORT_CONV):
                           no attention, no KV cache; a conv state (and the DeltaNet's recurrent state)
                           per sequence instead (kv_cache.h) */
    LAYER_KV_SHARED = 8,/* reads the keys and values of layer kv_source[l] (of its own type, earlier): no k / v
                           projections, no cache of its own (Gemma 4's last num_kv_shared_layers) */
    LAYER_K_EQ_V = 16,  /* the values are the key projection's raw output (attention_k_eq_v): no v_proj */
    LAYER_MOE = 1 << 7, /* the feed-forward is an expert block (model_config.moe), not the dense MLP */
};

typedef struct {
    char arch[32];        /* arch_info.name: "llama", "qwen3", ... */
    const arch_info *family; /* the family's row of the architecture table (static) */
    unsigned flags;       /* arch_info.flags (ARCH_*) */
    arch_act act;         /* the MLP's gate activation */
    int dim;              /* hidden_size */
    int n_layers;         /* num_hidden_layers */
    int n_heads;          /* num_attention_heads */
    int n_kv_heads;       /* num_key_value_heads (defaults to n_heads) */
    int head_dim;         /* head_dim (defaults to dim / n_heads) */
    int hidden_dim;       /* intermediate_size */
    int vocab_size;
    int max_pos;          /* max_position_embeddings / llama.context_length */
    float rms_eps;
    float rope_theta;
    rope_scaling_type rope_scaling;
    float rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_orig_max_pos;
    int tied_embeddings;  /* tie_word_embeddings (GGUF: no output.weight tensor) */
    int rot_dim;          /* dimensions of a head that RoPE rotates (partial_rotary_factor *
                             head_dim; == head_dim by default), even */
    float rope_theta_swa; /* RoPE base of sliding-window layers; 0: they use rope_theta */
    float rope_attn_factor; /* LongRoPE, YaRN: cos and sin scale (1 otherwise) */
    double yarn_low, yarn_high; /* YaRN's correction range in rotary pairs, as transformers' find_correction_range
                                   leaves it (floored / ceiled only when truncate) */
    float rope_short[CONFIG_MAX_ROT_PAIRS], rope_long[CONFIG_MAX_ROT_PAIRS];
                          /* LongRoPE factors from config.json (GGUF: rope_factors_*.weight) */
    int rope_factors_json;/* 1: rope_short / rope_long hold rot_dim / 2 values each */
    int sliding_window;   /* window of LAYER_SLIDING layers in positions, 0 if none */
    float attn_scale;     /* q.k scale: head_dim^-0.5, or query_pre_attn_scalar^-0.5 (Gemma) */
    float final_softcap;  /* logits = cap * tanh(logits / cap); 0: none */
    float embed_mult;     /* embeddings times this (Granite's embedding_multiplier); 0: none */
    float residual_mult;  /* each layer's attention and MLP outputs times this before their
                             residual add (Granite's residual_multiplier); 1 otherwise */
    float logit_div;      /* logits / this (Granite's logits_scaling); 1 otherwise */
    uint8_t layer_flags[CONFIG_MAX_LAYERS]; /* LAYER_* per layer */
    int rope_interleaved; /* 1 for GGUF llama files: Q/K rows permuted so rotary
                             pairs are (2i, 2i+1); 0 for HF (pairs i, i + d/2) */
    int bos_id;           /* -1 if none */
    int n_eos;
    int eos_ids[CONFIG_MAX_EOS];
    int quant_bits;       /* config.json "quantization" (MLX affine): default bits, 4 or 8; 0 if none.
                             Per-layer overrides are validated here; the weights' shapes then
                             tell each layer's bits and group (affine.c) */
    int quant_group;      /* its default group_size: 32, 64 or 128; 0 if none */
    /* The Gated DeltaNet or short conv layers (LAYER_LINEAR; 0 when the model has none) */
    int n_linear;         /* LAYER_LINEAR layers */
    int lin_conv;         /* K: linear_conv_kernel_dim (LFM2: conv_L_cache), the conv taps per channel;
                             the lin_d / lin_h sizes below are the DeltaNet's (0 for a short conv) */
    int lin_dk, lin_dv;   /* linear_key_head_dim, linear_value_head_dim */
    int lin_hk, lin_hv;   /* linear_num_key_heads, linear_num_value_heads (a multiple of lin_hk:
                             value head h reads key head h / (lin_hv / lin_hk)) */
    const moe_info *moe;  /* the family's MoE row when the model has expert layers (LAYER_MOE), else NULL */
    int n_experts;        /* num_experts / <arch>.expert_count */
    int n_experts_used;   /* num_experts_per_tok / <arch>.expert_used_count: k */
    int expert_dim;       /* an expert's width: moe_intermediate_size, or intermediate_size */
    int shared_dim;       /* the shared expert's width (Qwen2-MoE), 0: none */
    int moe_renorm;       /* the k routing weights divided by their sum (norm_topk_prob) */
    float swiglu_alpha, swiglu_limit; /* ACT_SWIGLU_CLAMP: swiglu_alpha, swiglu_limit (GGUF: 1.702, 7) */
    float moe_scale;      /* MOE_SIGMOID_BIAS: the weights times routed_scaling_factor (GGUF
                             expert_weights_scale); 1 otherwise */
    int moe_bias;         /* MOE_SIGMOID_BIAS: the expert layers carry an expert bias (use_expert_bias) */
    int lin_tiled;        /* 1: the value heads in tiled order instead (the Qwen3.5 converter's GGUF):
                             value head h reads key head h % lin_hk */
    /* KEY_PER_LAYER (Gemma 4): each layer's own shapes, resolved by the readers for every layer
     * (config_layer_view gives a layer's config with them in head_dim, n_kv_heads, hidden_dim and
     * rot_dim); the fields above then hold the full-attention layers' head_dim and rot_dim, and the
     * largest kv head count and width. Zero in the other families. */
    uint16_t layer_head_dim[CONFIG_MAX_LAYERS];
    uint16_t layer_kv_heads[CONFIG_MAX_LAYERS];
    int layer_hidden[CONFIG_MAX_LAYERS];
    int16_t kv_source[CONFIG_MAX_LAYERS]; /* LAYER_KV_SHARED: the layer whose cache it reads; else itself */
    int per_layer;        /* 1: the arrays above hold every layer's shapes */
    int head_dim_swa;     /* the sliding layers' head_dim (their RoPE rotates all of it) */
    int rope_pairs;       /* full layers' "proportional" RoPE: the first rope_pairs of the rot_dim / 2
                             frequencies rotate, the others are 0 (pairs (i, i + hd/2)); 0: all */
    int n_kv_shared;      /* num_kv_shared_layers */
    int ple_dim;          /* hidden_size_per_layer_input P (ARCH_PER_LAYER_INPUT), 0: none */
    int ple_vocab;        /* vocab_size_per_layer_input: rows of the per-layer embedding table */
} model_config;

/* The conv channels of a LAYER_LINEAR layer: a DeltaNet's q and k of every key head, then v of
 * every value head; a short conv's dim. */
/* Layer l's config: c itself, or (c->per_layer) a copy in *buf with the layer's head_dim,
 * n_kv_heads, hidden_dim and rot_dim. */
const model_config *config_layer_view(const model_config *c, int l, model_config *buf);

/* KEY_PER_LAYER: the producers of the last n_kv_shared layers (the last earlier layer of the same
 * type, as transformers picks it), LAYER_KV_SHARED and kv_source; -1 with a message naming source and
 * the file's key for n_kv_shared when a consumer's type has no producer or its shapes differ from it. */
int config_set_kv_sharing(model_config *c, const char *source, const char *key, char *err);

/* The conv channels of a DeltaNet layer: q and k of every key head, then v of every value head. */
static inline int config_lin_channels(const model_config *c) {
    return c->flags & ARCH_SHORT_CONV ? c->dim : 2 * c->lin_hk * c->lin_dk + c->lin_hv * c->lin_dv;
}

/* Floats per token of a LAYER_LINEAR layer's input projections (a DeltaNet's conv channels, z, b
 * and a; a short conv's B, C and x), and of its mixer's output (before out_proj). */
static inline int config_lin_in(const model_config *c) {
    return c->flags & ARCH_SHORT_CONV ? 3 * c->dim : config_lin_channels(c) + c->lin_hv * c->lin_dv + 2 * c->lin_hv;
}
static inline int config_lin_out(const model_config *c) {
    return c->flags & ARCH_SHORT_CONV ? c->dim : c->lin_hv * c->lin_dv;
}

/* The state floats of one LAYER_LINEAR layer per sequence: the last K - 1 conv inputs, and a
 * DeltaNet's (lin_hv, lin_dk, lin_dv) recurrent state (none for a short conv: its sizes are 0). */
static inline size_t config_lin_floats(const model_config *c) {
    return (size_t)(c->lin_conv - 1) * config_lin_channels(c) + (size_t)c->lin_hv * c->lin_dk * c->lin_dv;
}

/* Parse a Hugging Face config.json of a family in the architecture table (by
 * model_type, else an architectures entry); config_json.c. Missing required keys are an
 * error naming the key and the file. */
int config_from_json(const char *path, model_config *c, char *err);

/* Read `general.architecture` (a family in the architecture table) and its `<arch>.*`
 * keys; config_gguf.c. Tied embeddings = no `output.weight` tensor. */
int config_from_gguf(const gguf_file *g, model_config *c, char *err);

/* What the readers share (config.c). */

/* Zero c, then the values that hold until a reader sets them (rope_theta 10000, no
 * scaling, multipliers 1, no bos). */
void config_defaults(model_config *c);
/* arch, family, flags and act from the family's row. */
void config_set_family(model_config *c, const arch_info *a);

/* What a file says about its layers, beyond c->sliding_window. */
typedef struct {
    int max_window_layers;  /* SLIDE_FROM_MAX: the first layer that slides */
    int pattern;            /* SLIDE_PATTERN: every pattern-th layer does not slide */
    int no_rope_interval;   /* KEY_NO_ROPE without a list: every interval-th layer skips RoPE */
    const uint8_t *slides;  /* (n_layers) 1 = slides, the file's own list (layer_types, GGUF's
                               pattern flags); NULL: the family's slide rule */
    const uint8_t *no_rope; /* (n_layers) 1 = no RoPE, the file's own list; NULL: the interval */
    const uint8_t *linear;  /* (n_layers) 1 = a Gated DeltaNet layer, the file's own list; NULL: every
                               layer but each full_interval-th (KEY_LINEAR_ATTN families) */
    int full_interval;      /* KEY_LINEAR_ATTN without a list: layer l is full attention iff
                               (l + 1) % full_interval == 0 */
} config_layer_spec;

/* The one rule for which layers slide and which skip RoPE, from the family's row and
 * what the file said: fills layer_flags (c->family, n_layers and sliding_window set;
 * a family whose layers never slide gets sliding_window 0). */
void config_set_layers(model_config *c, const config_layer_spec *s);

/* The expert layers, for a family with a MoE row: every layer but the dense ones, which are
 * those in mlp_only (n_mlp_only entries) and those where (l + 1) % sparse_step != 0 (as
 * transformers' Qwen-MoE decoders choose). Sets c->moe and LAYER_MOE. */
void config_set_experts(model_config *c, int sparse_step, const int *mlp_only, int n_mlp_only);

/* YaRN as transformers 5.23's _compute_yarn_parameters sets it up (needs rot_dim and rope_theta):
 * the correction range of beta_fast / beta_slow rotations over the original context orig (floored and
 * ceiled when truncate), and the attention factor (attn > 0: the config's; else from mscale and
 * mscale_all_dim when both are > 0, else 0.1 ln(factor) + 1, 1 for factor <= 1). */
void config_set_yarn(model_config *c, double factor, double beta_fast, double beta_slow, int orig, int truncate,
                     double attn, double mscale, double mscale_all_dim);

/* Check internal consistency (positive sizes, dim == heads*head_dim not required,
 * n_heads % n_kv_heads == 0, ...); error names `source`. */
int config_validate(const model_config *c, const char *source, char *err);

#endif
