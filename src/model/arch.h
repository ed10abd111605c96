/* arch.h - the architecture table: one row per model family llmgen reads, carrying
 * every fact of the family: its names, feature flags, gate activation, the defaults of
 * its transformers config class, which layers slide, and the config keys only it
 * reads. Plus the one description of a layer's weights (LAYER_SLOTS) that the loader
 * walks. The readers (config_json.c, config_gguf.c) and the forward pass ask the row
 * (through the loaded config and weights), never an architecture name.
 *
 * Adding a family: a row in ARCHES (arch.c; a row with a field left out does not
 * compile, and tests/unit/test_config.c checks every row's values), and any
 * genuinely new stage, flag or key in the files that read it. */
#ifndef LLMGEN_ARCH_H
#define LLMGEN_ARCH_H

#include <stddef.h>

#include "base/tensor.h"

/* Feature flags of a family (arch_info.flags, copied into model_config.flags). */
enum {
    ARCH_QKV_BIAS = 1 << 0,       /* q, k and v projections carry biases (Qwen2) */
    ARCH_QK_NORM = 1 << 1,        /* RMSNorm over head_dim on every q and k head, before RoPE
                                     (Qwen3, Gemma 3) */
    ARCH_NORM_PLUS_ONE = 1 << 2,  /* RMSNorm output x * (1 + w) (Gemma): HF files store w,
                                     GGUF files store 1 + w (the converter adds it) */
    ARCH_EMBED_SCALE = 1 << 3,    /* embeddings times sqrt(hidden), rounded to f32 (Gemma) */
    ARCH_POST_NORMS = 1 << 4,     /* RMSNorm on the attention and MLP outputs before each
                                     residual add; the MLP's input norm is then named
                                     pre_feedforward_layernorm in HF files (Gemma 3) */
    ARCH_FUSED_QKV = 1 << 5,      /* one qkv tensor, q rows then k then v (Phi-3) */
    ARCH_FUSED_GATE_UP = 1 << 6,  /* one gate_up tensor, gate rows then up (Phi-3) */
    ARCH_GGUF_ROPE_PAIRS = 1 << 7,/* llama.cpp's converter permutes Q/K rows so rotary pairs
                                     are (2i, 2i+1) (its "norm" rope); others keep HF's halves */
    ARCH_GATED_DELTANET = 1 << 8, /* the config's linear_attention layers mix with a Gated DeltaNet
                                     (LAYER_LINEAR; forward.c, stage_deltanet) instead of attention */
    ARCH_ATTN_GATE = 1 << 9,      /* q_proj yields per head the query and then a gate: attention's
                                     output times sigmoid(gate) before o_proj (Qwen3.5) */
    ARCH_QK_NORM_FULL = 1 << 16,  /* RMSNorm over the whole q and the whole k projection (all
                                     heads at once), before the head split and RoPE (OLMoE) */
    ARCH_GGUF_TILED_HEADS = 1 << 10,/* llama.cpp's converter reorders the DeltaNet's value heads from
                                     grouped (h = g * r + j) to tiled (h = j * Hk + g) in every tensor
                                     that has them (Qwen3.5; not Qwen3-Next) */
    ARCH_O_BIAS = 1 << 24,        /* o_proj carries a bias too (gpt-oss; with ARCH_QKV_BIAS) */
    ARCH_ATTN_SINKS = 1 << 25,    /* a learned logit per query head joins every softmax's denominator
                                     (attention sinks: no value, the sum of the probabilities < 1) */
    ARCH_GGUF_POST_ATTN_NORM = 1 << 26,/* llama.cpp names the MLP input norm post_attention_norm, as HF */
    ARCH_EXPERT_BIAS = 1 << 27,   /* the router and the experts' gate, up and down carry biases; HF stacks
                                     transposed (E, in, out) with gate / up interleaved by column, plain or
                                     MXFP4 *_blocks / *_scales (gpt-oss) */
    ARCH_SHORT_CONV = 1 << 20,    /* the config's conv layers (LAYER_LINEAR) mix with a gated short
                                     convolution (forward.c, stage_shortconv; LFM2) instead of attention */
    ARCH_V_NORM = 1 << 11,        /* values get a weightless RMSNorm over each head (Gemma 4) */
    ARCH_UNIT_SCALE = 1 << 12,    /* attention scale 1: no head_dim^-0.5 (Gemma 4) */
    ARCH_PER_LAYER_INPUT = 1 << 13,/* set by the config readers, never in a row: the model has per-layer
                                     embeddings (hidden_size_per_layer_input > 0, Gemma 4), added after
                                     each layer's feed-forward (forward.c, stage_per_layer_input) */
    ARCH_LAYER_SCALAR = 1 << 14,  /* each layer ends with the residual stream times a stored scalar
                                     (layer_scalar; Gemma 4) */
};

/* In a layer_slot's need / without: the slot belongs to (need) or is absent from (without)
 * the LAYER_LINEAR layers of an ARCH_GATED_DELTANET or ARCH_SHORT_CONV family. Never a family flag. */
#define SLOT_LINEAR (1u << 31)
/* Likewise for a layer that reads another layer's keys and values (LAYER_KV_SHARED: no k / v
 * projections or norms of its own), and a full layer whose values are its keys' projection
 * (LAYER_K_EQ_V: no v_proj). */
#define SLOT_KV_SHARED (1u << 30)
#define SLOT_K_EQ_V (1u << 29)

typedef enum {
    ACT_SILU = 0,
    ACT_GELU_TANH = 1,
    ACT_SWIGLU_CLAMP = 2, /* gpt-oss's experts: g = min(gate, limit), u = clamp(up, -limit, limit),
                             (u + 1) * g * sigmoid(alpha * g) (config.h swiglu_alpha / swiglu_limit) */
} arch_act;

/* How a family's config says which layers slide (attend within a window). */
typedef enum {
    SLIDE_NONE,     /* no layer (the window, if any, is ignored) */
    SLIDE_ALL,      /* every layer, when a window is set (Mistral, Phi-3) */
    SLIDE_FROM_MAX, /* the layers from max_window_layers on (Qwen2 / Qwen3) */
    SLIDE_PATTERN,  /* all but every sliding_window_pattern-th (Gemma 3) */
    SLIDE_NO_ROPE,  /* the layers without RoPE (SmolLM3) */
    SLIDE_EVEN,     /* the even layers (gpt-oss's layer_types default; llama.cpp's rule for its files) */
} arch_slide;

/* Config keys only some families read (arch_info.keys). */
enum {
    KEY_USE_SW = 1 << 0,         /* use_sliding_window switches the window off */
    KEY_LAYER_TYPES = 1 << 1,    /* layer_types (transformers 5.x) lists full / sliding per layer */
    KEY_NO_ROPE = 1 << 2,        /* no_rope_layers, else no_rope_layer_interval (default 4); GGUF: every 4th */
    KEY_PARTIAL_ROTARY = 1 << 3, /* partial_rotary_factor below 1; GGUF's rope.dimension_count is then
                                    not the head size */
    KEY_MULTIPLIERS = 1 << 4,    /* embedding / residual / attention multipliers and logits_scaling */
    KEY_GGUF_WINDOW = 1 << 5,    /* GGUF: attention.sliding_window (the others' files carry none) */
    KEY_GGUF_PATTERN = 1 << 6,   /* GGUF: attention.sliding_window_pattern */
    KEY_SWA_ROPE_BASE = 1 << 7,  /* the sliding layers' own RoPE base: rope_local_base_freq or
                                    rope_parameters.{full,sliding}_attention; GGUF rope.freq_base_swa */
    KEY_QUERY_SCALE = 1 << 8,    /* attention scale query_pre_attn_scalar^-0.5; GGUF files have no such
                                    key: head_dim^-0.5 (hidden / heads in a 62-layer model), as llama.cpp */
    KEY_LINEAR_ATTN = 1 << 9,    /* layer_types may say linear_attention (else every
                                    full_attention_interval-th layer is full); linear_conv_kernel_dim,
                                    linear_{key,value}_head_dim, linear_num_{key,value}_heads, and
                                    partial_rotary_factor 0.25 by default (Qwen3_5TextConfig's defaults);
                                    GGUF ssm.* and attention.recurrent_layers */
    KEY_YARN_DEFAULT = 1 << 20,  /* no rope_parameters means YaRN factor 32, beta 32 / 1, original 4096,
                                    truncate false (GptOssConfig); GGUF files cannot say truncate: false */
    KEY_SHORT_CONV = 1 << 21,    /* layer_types may say conv (else the layers not in full_attn_idxs are conv;
                                    neither: all attention), conv_L_cache (the kernel size), norm_eps,
                                    tie_embedding; GGUF shortconv.l_cache and attention.head_count_kv as one
                                    count per layer, 0 on a conv layer */
    KEY_FF_ADJUST = 1 << 22,     /* the MLP's width from intermediate_size (alias block_ff_dim) as LFM2's
                                    block_auto_adjust_ff_dim, block_ffn_dim_multiplier, block_multiple_of
                                    make it (GGUF files carry the result) */
    KEY_PER_LAYER = 1 << 10,     /* Gemma 4's layer shapes: per_layer_config (else global_head_dim,
                                    default 512, and num_global_key_value_heads on full layers),
                                    attention_k_eq_v, num_kv_shared_layers, use_double_wide_mlp,
                                    hidden_size_per_layer_input, "proportional" RoPE on full layers;
                                    GGUF *_swa lengths, per-layer head_count_kv / feed_forward_length,
                                    attention.shared_kv_layers, embedding_length_per_layer_input */
};

/* One family. Rows are positional, so a row that leaves a field out does not compile
 * (-Wmissing-field-initializers). */
typedef struct {
    const char *name;           /* llmgen's name == GGUF general.architecture == key prefix */
    const char *hf_model_type;  /* config.json "model_type" */
    const char *hf_class;       /* config.json "architectures" entry */
    unsigned flags;             /* ARCH_* */
    arch_act act;               /* the MLP's gate activation */
    /* What config.json leaves out means the family's config class default (transformers
     * 5.23); these are the ones that change a result. */
    int tied;                   /* tie_word_embeddings */
    int max_pos;                /* max_position_embeddings */
    int bos, eos;               /* bos_token_id, eos_token_id; -1: none */
    int head_dim;               /* head_dim; 0: hidden / heads */
    double theta;               /* rope_theta */
    double eps;                 /* rms_norm_eps */
    int longrope_orig;          /* LongRoPE's original_max_position_embeddings when config.json
                                   has no top-level one; 0: the rope dict's, then max_pos */
    arch_slide slide;           /* which layers slide */
    int sw_default;             /* sliding_window when config.json has no such key (a null one
                                   means none) */
    unsigned keys;              /* KEY_*: the config keys only this family reads */
} arch_info;

/* ---- the expert layer (mixture of experts) ----------------------------------------------
 *
 * A family whose feed-forward can be an expert block has a row in the MoE table (arch.c),
 * found by its arch_info.name. Per token: router logits z = x . Wr^T (n_experts), then k
 * experts chosen and weighted by the row's rule, each chosen expert's gated MLP
 * down(act(gate x) * up x), and the weighted sum of the k outputs in slot order (the
 * order torch.topk returns them: descending, ties as moe_topk breaks them), as
 * transformers' experts implementation sums them; [+ sigmoid(x . w_sg) * SharedMLP(x)]. */
typedef enum {
    MOE_SOFTMAX_TOPK, /* softmax over all experts (f32), then the k largest probabilities
                         (Qwen2/3-MoE, Mixtral, OLMoE) */
    MOE_TOPK_SOFTMAX, /* the k largest logits, then softmax over those k (Granite MoE) */
    MOE_SIGMOID_BIAS, /* p = sigmoid(z); the k largest of p + the layer's expert bias (it chooses, it does
                         not weigh), weighted by their p [/ (sum + 1e-6)] times routed_scaling_factor
                         (LFM2-MoE) */
} moe_router;

typedef enum {
    MOE_RENORM_CONFIG, /* the k weights divided by their sum iff config.json's norm_topk_prob */
    MOE_RENORM_ALWAYS, /* always (Mixtral); implicit in MOE_TOPK_SOFTMAX */
} moe_renorm;

/* One family's expert facts. The HF names carry %d for the layer (and then the expert);
 * a checkpoint stores its experts one 2-D tensor each (transformers 5.23 saves them so),
 * or stacked in 3-D tensors (E, rows, cols) as transformers holds them in memory. */
typedef struct {
    const char *name;           /* arch_info.name of the family */
    moe_router router;
    moe_renorm renorm;
    int norm_default;           /* norm_topk_prob when config.json leaves it out (class default) */
    int gguf_norm;              /* GGUF files cannot say: llama.cpp's constant for the architecture */
    int experts, used;          /* num_experts / num_experts_per_tok class defaults */
    int expert_dim;             /* moe_intermediate_size class default; 0: the width is intermediate_size */
    int shared_dim;             /* shared_expert_intermediate_size class default; 0: no shared expert */
    int sparse_keys;            /* which layers stay dense: 1 reads decoder_sparse_step and mlp_only_layers,
                                   2 the first num_dense_layers (class default 2); 0: none */
    const char *hf_router;      /* (E, dim) */
    const char *hf_gate, *hf_up, *hf_down; /* one expert: (I, dim), (I, dim), (dim, I) */
    const char *hf_gate_up3;    /* stacked: (E, 2I, dim), gate rows first */
    const char *hf_down3;       /* stacked: (E, dim, I) */
    const char *hf_bias;        /* MOE_SIGMOID_BIAS: the (E) expert bias (GGUF exp_probs_b.bias), else NULL */
    const char *mlx_switch;     /* mlx-lm's stacks (E, rows, cols), one per projection, plain or affine-quantized:
                                   %d the layer, %s gate_proj / up_proj / down_proj; NULL: none */
} moe_info;

#define MOE_MAX_USED 64 /* most experts a token may take (num_experts_per_tok) */

/* The MoE row of family a, or NULL (a family without expert layers). */
const moe_info *arch_moe(const arch_info *a);
int moe_count(void);
const moe_info *moe_at(int i);

/* A family whose files name some tensors apart from the names LAYER_SLOTS and the loader use
 * (llama's): the first of its rows whose `from` is part of name (a GGUF name if gguf, else an
 * HF one) has that part replaced by `to`, in place (name holds n bytes). */
void arch_tensor_name(const arch_info *a, int gguf, char *name, size_t n);

/* The row of a GGUF architecture name (n bytes), or NULL. */
const arch_info *arch_by_gguf(const char *name, size_t n);
/* The row of a config.json model_type, or NULL. */
const arch_info *arch_by_model_type(const char *model_type);
/* The row of a config.json architectures entry (e.g. "Qwen2ForCausalLM"), or NULL. */
const arch_info *arch_by_class(const char *cls);
/* "llama, mistral, qwen2, ..." into buf: for messages. */
void arch_list(char *buf, size_t n);
/* The number of rows, and row i (0 <= i < arch_count()): for tests. */
int arch_count(void);
const arch_info *arch_at(int i);

/* One layer's weights, as the loader fills them (shapes in HF (out, in) order). */
typedef struct {
    float *attn_norm;        /* (dim) f32, (1 + w) already applied for ARCH_NORM_PLUS_ONE */
    const tensor *wq;        /* (n_heads * head_dim, dim) */
    const tensor *wk;        /* (n_kv_heads * head_dim, dim) */
    const tensor *wv;        /* (n_kv_heads * head_dim, dim) */
    float *q_bias;           /* (n_heads * head_dim) f32, ARCH_QKV_BIAS only, else NULL */
    float *k_bias;           /* (n_kv_heads * head_dim) */
    float *v_bias;           /* (n_kv_heads * head_dim) */
    float *q_norm;           /* (head_dim) f32, ARCH_QK_NORM only */
    float *k_norm;           /* (head_dim) */
    const tensor *wo;        /* (dim, n_heads * head_dim) */
    float *post_attn_norm;   /* (dim) ARCH_POST_NORMS only */
    float *ffn_norm;         /* (dim) */
    const tensor *w_gate;    /* (hidden_dim, dim) */
    const tensor *w_up;      /* (hidden_dim, dim) */
    const tensor *w_down;    /* (dim, hidden_dim) */
    float *post_ffn_norm;    /* (dim) ARCH_POST_NORMS only */
    const tensor *w_qkv;     /* ARCH_FUSED_QKV: the file's fused tensor; wq, wk, wv are views of its rows */
    const tensor *w_gate_up; /* ARCH_FUSED_GATE_UP: likewise for w_gate and w_up */
    /* A LAYER_LINEAR layer has no attention weights. A short conv's (ARCH_SHORT_CONV) wq is its
     * in_proj (3 * dim, dim): rows B, then C, then x; wo its out_proj (dim, dim); lin_conv its taps
     * (dim, K). A Gated DeltaNet's wq is in_proj_qkv
     * (conv channels C = 2 * Hk * dk + Hv * dv, dim), wk in_proj_z (Hv * dv, dim), wo out_proj
     * (dim, Hv * dv), wv NULL; and these (config.h's lin_* sizes): */
    const tensor *lin_b;     /* (Hv, dim) in_proj_b: beta = sigmoid(b) */
    const tensor *lin_a;     /* (Hv, dim) in_proj_a: the decay's input */
    float *lin_conv;         /* (C, K) f32 causal depthwise conv taps, channel after channel */
    float *lin_dt_bias;      /* (Hv) f32 */
    float *lin_decay;        /* (Hv) f32 -exp(A_log): g = lin_decay * softplus(a + dt_bias) */
    float *lin_norm;         /* (dv) f32 the gated RMSNorm's plain weight, shared by the heads */
    float *q_norm_full;      /* (n_heads * head_dim) ARCH_QK_NORM_FULL only */
    float *k_norm_full;      /* (n_kv_heads * head_dim) */
    float *o_bias;           /* (dim) f32, ARCH_O_BIAS only */
    float *sinks;            /* (n_heads) f32 attention sink logits, ARCH_ATTN_SINKS only */
    struct expert_block *moe;/* an expert layer's experts (w_gate, w_up, w_down NULL), or NULL */
    /* ARCH_PER_LAYER_INPUT (P = ple_dim): x += rmsnorm(pl_proj . (gelu(pl_gate . x) * input_l)) */
    const tensor *pl_gate;   /* (P, dim) per_layer_input_gate */
    const tensor *pl_proj;   /* (dim, P) per_layer_projection */
    float *pl_norm;          /* (dim) post_per_layer_input_norm */
    float *out_scale;        /* (1) layer_scalar: the whole residual stream times it after the layer
                                (KEY_PER_LAYER families), or NULL */
} layer_weights;

/* The experts of one layer (moe_info), views into the file: nothing copied. */
typedef struct expert_block {
    const tensor *router;    /* (n_experts, dim) */
    const tensor **gate;     /* (n_experts) of (expert_dim, dim) */
    const tensor **up;       /* (n_experts) of (expert_dim, dim) */
    const tensor **down;     /* (n_experts) of (dim, expert_dim) */
    const tensor *sh_gate, *sh_up, *sh_down; /* the shared expert: (shared_dim, dim) x 2, (dim,
                                                shared_dim); NULL without one */
    const tensor *sh_router; /* (1, dim): the shared expert's sigmoid gate */
    float *router_bias;      /* (n_experts) f32, ARCH_EXPERT_BIAS only, else NULL (as the three below) */
    float *gate_bias;        /* (n_experts, expert_dim) f32 */
    float *up_bias;          /* (n_experts, expert_dim) f32 */
    float *down_bias;        /* (n_experts, dim) f32 */
    float *choice_bias;      /* (n_experts) f32 MOE_SIGMOID_BIAS's expert bias: it chooses, it does not
                                weigh; NULL: none (zeros) */
} expert_block;

/* A layer's weight matrices, in one order for every loop that visits them all (wv NULL on a
 * Gated DeltaNet layer; w_gate, w_up and w_down NULL on an expert layer: its experts are in
 * L->moe). */
#define LAYER_MATRICES 7
static inline void layer_matrices(const layer_weights *L, const tensor *out[LAYER_MATRICES]) {
    const tensor *ts[LAYER_MATRICES] = {L->wq, L->wk, L->wv, L->wo, L->w_gate, L->w_up, L->w_down};
    for (int i = 0; i < LAYER_MATRICES; i++) out[i] = ts[i];
}

/* Sizes a slot's shape is made of (model_config fields). */
typedef enum {
    SZ_DIM, SZ_Q, SZ_KV, SZ_QKV, SZ_HEAD, SZ_FF, SZ_FF2,
    SZ_Q2,       /* 2 * n_heads * head_dim: the query and gate heads of ARCH_ATTN_GATE */
    SZ_LIN_CONV, /* the DeltaNet's conv channels C */
    SZ_LIN_V,    /* Hv * dv */
    SZ_LIN_HEADS,/* Hv */
    SZ_LIN_DV,   /* dv */
    SZ_LIN_TAPS, /* C * K: the conv weight, any shape holding that many (HF (C, 1, K), GGUF {K, C}) */
    SZ_HEADS,    /* n_heads (attention sinks) */
    SZ_DIM3,     /* 3 * dim: a short conv's in_proj (B, C and x) */
    SZ_PLE,      /* ple_dim: a per-layer input's width */
    SZ_ONE,      /* 1 */
} slot_size;

/* What the loader does to a vector slot's values (layer_slot.norm). */
enum {
    SLOT_AS_IS = 0,
    SLOT_NORM = 1,    /* a norm weight: (1 + w) for ARCH_NORM_PLUS_ONE from HF and MLX files */
    SLOT_NEG_EXP = 2, /* -exp(w) in f32 from HF files (A_log); GGUF stores -exp(A_log) (ssm_a) */
};

/* One tensor of a layer: its names (with %d for the layer index), where it goes in
 * layer_weights, its shape, and when a family has it. A vector slot (cols < 0) is
 * copied to f32; a matrix slot is a view of the file. */
typedef struct {
    const char *gguf, *hf;
    size_t field;            /* offsetof(layer_weights, ...) */
    slot_size rows;
    int cols;                /* a slot_size, or -1 for a vector */
    unsigned need;           /* ARCH_* flags the family must have (0: every family) */
    unsigned without;        /* ARCH_* flags the family must not have */
    int norm;                /* SLOT_AS_IS, SLOT_NORM or SLOT_NEG_EXP */
} layer_slot;

extern const layer_slot LAYER_SLOTS[];

/* Whether slot sl is the dense MLP's (absent from an expert layer). */
int slot_is_dense_ffn(const layer_slot *sl);
extern const int N_LAYER_SLOTS;

#endif
