/* arch.c - the architecture table and the layer-weight slots (see arch.h).
 *
 * Facts per family, checked against transformers 5.23's modeling_*.py and the
 * GGUF converter and loader of the pinned llama.cpp sdist:
 *   llama    the baseline: RMSNorm, RoPE, GQA attention, SwiGLU MLP
 *   mistral  llama plus a sliding window when config.json sets sliding_window (its
 *            GGUF files are architecture "llama", where llama.cpp ignores the window)
 *   qwen2    biases on q, k, v; NEOX-style RoPE in GGUF (no Q/K permutation)
 *   qwen3    RMSNorm per head on q and k before RoPE; explicit head_dim
 *   gemma3   embeddings * sqrt(hidden); (1 + w) norms; norms after attention and MLP;
 *            GELU-tanh gate; q/k norm; attention scale from query_pre_attn_scalar;
 *            sliding-window layers with their own RoPE base; tied embeddings
 *   phi3     fused qkv and gate_up tensors; partial rotary; LongRoPE
 *   smollm3  llama with layers that skip RoPE (no_rope_layers)
 *   granite  llama with four scalars: embedding, residual and attention multipliers
 *            and a logit divisor
 *   qwen35   Qwen3.5 / 3.6 dense (qwen3_5_text): Gated DeltaNet layers (linear_attention)
 *            beside full-attention layers with an output gate in q_proj, q/k norms and
 *            partial rotary; (1 + w) norms (GGUF stores 1 + w)
 *   lfm2     LFM2 / LFM2.5 dense: gated short convolutions (conv layers) beside attention
 *            layers with q/k norms; plain norms, eps 1e-5; the final norm is named
 *            embedding_norm (GGUF token_embd_norm); the MLP's width adjusted from
 *            intermediate_size; tied; most tensors named apart from llama's (RENAMES)
 *   lfm2moe  LFM2-MoE: lfm2's layers, the MLP width as given; experts after the first
 *            num_dense_layers, chosen on sigmoid scores plus an expert bias
 *   gemma4   Gemma 4 text (gemma4_text): gemma3's layout with plain norms, attention scale 1,
 *            weightless value norms, per-layer head sizes and kv heads, "proportional" RoPE on
 *            full layers, per-layer embeddings, a scalar per layer, last layers reading an
 *            earlier layer's keys and values, a final logit soft-cap
 * and the families with expert layers (their MoE rows below):
 *   qwen3moe   qwen3's attention (head_dim hidden / heads by default); experts
 *   qwen2moe   qwen2's attention; experts plus a shared expert behind a sigmoid gate
 *   mixtral    mistral's attention; experts (GGUF files are architecture "llama" with
 *              llama.expert_count: the llama row's MoE facts are Mixtral's)
 *   olmoe      RMSNorm over the whole q and k projections; experts
 *   granitemoe granite's four scalars; experts chosen on the logits
 *   gpt-oss    biases on q, k, v, o, the router and the experts; attention sinks; even layers
 *              slide (layer_types); YaRN (truncate false by default); experts chosen on the
 *              biased logits, a clamped SwiGLU; HF stacks transposed, plain or MXFP4 */
#include "arch.h"

#include <stdio.h>
#include <string.h>

/* Columns: names (GGUF / key prefix, HF model_type, HF class); flags; activation; config class
 * defaults: tied, max_pos, bos, eos, head_dim, theta, eps, LongRoPE original context; slide rule,
 * default window; keys. */
static const arch_info ARCHES[] = {
    {"llama", "llama", "LlamaForCausalLM", ARCH_GGUF_ROPE_PAIRS, ACT_SILU, 0, 2048, 1, 2, 0, 1e4, 1e-6, 0,
     SLIDE_NONE, 0, 0},
    {"mistral", "mistral", "MistralForCausalLM", ARCH_GGUF_ROPE_PAIRS, ACT_SILU, 0, 131072, 1, 2, 0, 1e4, 1e-6, 0,
     SLIDE_ALL, 4096, 0},
    {"qwen2", "qwen2", "Qwen2ForCausalLM", ARCH_QKV_BIAS, ACT_SILU, 0, 32768, -1, -1, 0, 1e4, 1e-6, 0,
     SLIDE_FROM_MAX, 0, KEY_USE_SW | KEY_LAYER_TYPES},
    {"qwen3", "qwen3", "Qwen3ForCausalLM", ARCH_QK_NORM, ACT_SILU, 0, 32768, -1, -1, 128, 1e4, 1e-6, 0,
     SLIDE_FROM_MAX, 0, KEY_USE_SW | KEY_LAYER_TYPES},
    {"gemma3", "gemma3_text", "Gemma3ForCausalLM",
     ARCH_QK_NORM | ARCH_NORM_PLUS_ONE | ARCH_EMBED_SCALE | ARCH_POST_NORMS, ACT_GELU_TANH, 1, 131072, 2, 1, 256,
     1e6, 1e-6, 0, SLIDE_PATTERN, 4096,
     KEY_LAYER_TYPES | KEY_GGUF_WINDOW | KEY_GGUF_PATTERN | KEY_SWA_ROPE_BASE | KEY_QUERY_SCALE},
    {"phi3", "phi3", "Phi3ForCausalLM", ARCH_FUSED_QKV | ARCH_FUSED_GATE_UP, ACT_SILU, 0, 4096, 1, 32000, 0, 1e4,
     1e-5, 4096, SLIDE_ALL, 0, KEY_PARTIAL_ROTARY | KEY_GGUF_WINDOW},
    {"smollm3", "smollm3", "SmolLM3ForCausalLM", ARCH_GGUF_ROPE_PAIRS, ACT_SILU, 1, 32768, 128000, 128001, 0, 2e6,
     1e-6, 0, SLIDE_NO_ROPE, 0, KEY_USE_SW | KEY_LAYER_TYPES | KEY_NO_ROPE},
    {"granite", "granite", "GraniteForCausalLM", ARCH_GGUF_ROPE_PAIRS, ACT_SILU, 0, 2048, 1, 2, 0, 1e4, 1e-6, 0,
     SLIDE_NONE, 0, KEY_MULTIPLIERS},
    {"qwen35", "qwen3_5_text", "Qwen3_5ForCausalLM",
     ARCH_QK_NORM | ARCH_NORM_PLUS_ONE | ARCH_GATED_DELTANET | ARCH_ATTN_GATE | ARCH_GGUF_TILED_HEADS, ACT_SILU, 0, 32768, -1, -1, 256, 1e4,
     1e-6, 0, SLIDE_NONE, 0, KEY_LAYER_TYPES | KEY_PARTIAL_ROTARY | KEY_LINEAR_ATTN},
    {"gemma4", "gemma4_text", "Gemma4ForCausalLM",
     ARCH_QK_NORM | ARCH_EMBED_SCALE | ARCH_POST_NORMS | ARCH_V_NORM | ARCH_UNIT_SCALE | ARCH_LAYER_SCALAR,
     ACT_GELU_TANH, 1, 131072, 2,
     1, 256, 1e6, 1e-6, 0, SLIDE_PATTERN, 512,
     KEY_LAYER_TYPES | KEY_GGUF_WINDOW | KEY_GGUF_PATTERN | KEY_SWA_ROPE_BASE | KEY_PER_LAYER},
    {"qwen3moe", "qwen3_moe", "Qwen3MoeForCausalLM", ARCH_QK_NORM, ACT_SILU, 0, 32768, -1, -1, 0, 1e4, 1e-6, 0,
     SLIDE_ALL, 4096, KEY_USE_SW},
    {"qwen2moe", "qwen2_moe", "Qwen2MoeForCausalLM", ARCH_QKV_BIAS, ACT_SILU, 0, 32768, -1, -1, 0, 1e4, 1e-6, 0,
     SLIDE_NONE, 0, 0},
    {"mixtral", "mixtral", "MixtralForCausalLM", ARCH_GGUF_ROPE_PAIRS, ACT_SILU, 0, 131072, 1, 2, 0, 1e6, 1e-5, 0,
     SLIDE_ALL, 0, 0},
    {"olmoe", "olmoe", "OlmoeForCausalLM", ARCH_QK_NORM_FULL, ACT_SILU, 0, 4096, -1, 50279, 0, 1e4, 1e-5, 0,
     SLIDE_NONE, 0, 0},
    {"granitemoe", "granitemoe", "GraniteMoeForCausalLM", ARCH_GGUF_ROPE_PAIRS, ACT_SILU, 0, 2048, 1, 2, 0, 1e4,
     1e-6, 0, SLIDE_NONE, 0, KEY_MULTIPLIERS},
    {"gpt-oss", "gpt_oss", "GptOssForCausalLM",
     ARCH_QKV_BIAS | ARCH_O_BIAS | ARCH_ATTN_SINKS | ARCH_GGUF_POST_ATTN_NORM | ARCH_EXPERT_BIAS, ACT_SWIGLU_CLAMP,
     0, 131072, -1, -1, 64, 150000.0, 1e-5, 0, SLIDE_EVEN, 128,
     KEY_LAYER_TYPES | KEY_GGUF_WINDOW | KEY_GGUF_PATTERN | KEY_YARN_DEFAULT},
    {"lfm2", "lfm2", "Lfm2ForCausalLM", ARCH_QK_NORM | ARCH_SHORT_CONV, ACT_SILU, 1, 128000, 1, 2, 0, 1e6, 1e-5, 0,
     SLIDE_NONE, 0, KEY_LAYER_TYPES | KEY_SHORT_CONV | KEY_FF_ADJUST},
    {"lfm2moe", "lfm2_moe", "Lfm2MoeForCausalLM", ARCH_QK_NORM | ARCH_SHORT_CONV, ACT_SILU, 1, 128000, 1, 2, 0, 1e6,
     1e-5, 0, SLIDE_NONE, 0, KEY_LAYER_TYPES | KEY_SHORT_CONV},
};
#define N_ARCHES (int)(sizeof ARCHES / sizeof ARCHES[0])

const arch_info *arch_by_gguf(const char *name, size_t n) {
    for (int i = 0; i < N_ARCHES; i++)
        if (strlen(ARCHES[i].name) == n && !memcmp(ARCHES[i].name, name, n)) return &ARCHES[i];
    return NULL;
}

const arch_info *arch_by_model_type(const char *model_type) {
    for (int i = 0; i < N_ARCHES; i++)
        if (!strcmp(ARCHES[i].hf_model_type, model_type)) return &ARCHES[i];
    return NULL;
}

const arch_info *arch_by_class(const char *cls) {
    for (int i = 0; i < N_ARCHES; i++)
        if (!strcmp(ARCHES[i].hf_class, cls)) return &ARCHES[i];
    return NULL;
}

int arch_count(void) { return N_ARCHES; }

const arch_info *arch_at(int i) { return i >= 0 && i < N_ARCHES ? &ARCHES[i] : NULL; }

void arch_list(char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_ARCHES && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", ARCHES[i].name);
}

/* ---- the MoE rows ------------------------------------------------------------------------
 *
 * Checked against transformers 5.23 (modeling_{qwen3_moe,qwen2_moe,mixtral,olmoe,granitemoe}.py
 * and integrations/moe.py) and the pinned llama.cpp's llama-graph.cpp (build_moe_ffn), whose
 * per-architecture renormalization is what a GGUF file means: qwen3moe and llama renormalize,
 * qwen2moe and olmoe do not. Granite MoE's softmax over the k chosen logits equals a softmax
 * over all then a renormalization of the k, in exact arithmetic (llama.cpp's way). */
#define HFM "model.layers.%d.mlp."
#define HFB "model.layers.%d.block_sparse_moe."
#define HFF "model.layers.%d.feed_forward."
#define SW "switch_mlp.%s.weight"
static const moe_info MOES[] = {
    {"qwen3moe", MOE_SOFTMAX_TOPK, MOE_RENORM_CONFIG, 0, 1, 128, 8, 768, 0, 1, HFM "gate.weight",
     HFM "experts.%d.gate_proj.weight", HFM "experts.%d.up_proj.weight", HFM "experts.%d.down_proj.weight",
     HFM "experts.gate_up_proj", HFM "experts.down_proj", NULL, HFM SW},
    {"qwen2moe", MOE_SOFTMAX_TOPK, MOE_RENORM_CONFIG, 0, 0, 60, 4, 1408, 5632, 1, HFM "gate.weight",
     HFM "experts.%d.gate_proj.weight", HFM "experts.%d.up_proj.weight", HFM "experts.%d.down_proj.weight",
     HFM "experts.gate_up_proj", HFM "experts.down_proj", NULL, HFM SW},
    {"mixtral", MOE_SOFTMAX_TOPK, MOE_RENORM_ALWAYS, 1, 1, 8, 2, 0, 0, 0, HFB "gate.weight",
     HFB "experts.%d.w1.weight", HFB "experts.%d.w3.weight", HFB "experts.%d.w2.weight",
     HFM "experts.gate_up_proj", HFM "experts.down_proj", NULL, HFB SW},
    {"llama", MOE_SOFTMAX_TOPK, MOE_RENORM_ALWAYS, 1, 1, 8, 2, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
    {"olmoe", MOE_SOFTMAX_TOPK, MOE_RENORM_CONFIG, 0, 0, 64, 8, 0, 0, 0, HFM "gate.weight",
     HFM "experts.%d.gate_proj.weight", HFM "experts.%d.up_proj.weight", HFM "experts.%d.down_proj.weight",
     HFM "experts.gate_up_proj", HFM "experts.down_proj", NULL, HFM SW},
    /* transformers 5.23 saves Granite MoE's stacks under their legacy names */
    {"granitemoe", MOE_TOPK_SOFTMAX, MOE_RENORM_ALWAYS, 1, 1, 8, 2, 0, 0, 0, HFB "router.layer.weight", NULL, NULL,
     NULL, HFB "input_linear.weight", HFB "output_linear.weight", NULL, HFB SW},
    /* the k largest of the biased logits, softmax over them (GptOssTopKRouter); stacks transposed */
    {"gpt-oss", MOE_TOPK_SOFTMAX, MOE_RENORM_ALWAYS, 1, 1, 128, 4, 0, 0, 0, HFM "router.weight", NULL, NULL, NULL,
     HFM "experts.gate_up_proj", HFM "experts.down_proj", NULL, NULL},
    /* transformers' Lfm2MoeSparseMoeBlock: experts after the first num_dense_layers (2) */
    {"lfm2moe", MOE_SIGMOID_BIAS, MOE_RENORM_CONFIG, 1, 1, 32, 4, 1792, 0, 2, HFF "gate.weight",
     HFF "experts.%d.w1.weight", HFF "experts.%d.w3.weight", HFF "experts.%d.w2.weight",
     HFF "experts.gate_up_proj", HFF "experts.down_proj", HFF "expert_bias", HFF SW},
};
#define N_MOES (int)(sizeof MOES / sizeof MOES[0])

/* ---- tensor names apart from llama's ------------------------------------------------------ */

static const struct {
    const char *family;
    int gguf;                  /* 1: a GGUF name, 0: an HF one */
    const char *from, *to;
} RENAMES[] = {
#define LFM2_NAMES(f)                                                                                          \
    {f, 0, "input_layernorm", "operator_norm"}, {f, 0, "post_attention_layernorm", "ffn_norm"},             \
    {f, 0, "self_attn.o_proj", "self_attn.out_proj"}, {f, 0, "self_attn.q_norm", "self_attn.q_layernorm"},   \
    {f, 0, "self_attn.k_norm", "self_attn.k_layernorm"}, {f, 0, "mlp.gate_proj", "feed_forward.w1"},         \
    {f, 0, "mlp.up_proj", "feed_forward.w3"}, {f, 0, "mlp.down_proj", "feed_forward.w2"},                    \
    {f, 0, "model.norm.", "model.embedding_norm."}, {f, 1, "output_norm.", "token_embd_norm."}
    LFM2_NAMES("lfm2"),
    LFM2_NAMES("lfm2moe"),
#undef LFM2_NAMES
};

void arch_tensor_name(const arch_info *a, int gguf, char *name, size_t n) {
    for (size_t i = 0; a && i < sizeof RENAMES / sizeof RENAMES[0]; i++) {
        char *at = RENAMES[i].gguf == (gguf != 0) && !strcmp(RENAMES[i].family, a->name) ? strstr(name, RENAMES[i].from)
                                                                                           : NULL;
        if (!at) continue;
        char tail[256];
        snprintf(tail, sizeof tail, "%s", at + strlen(RENAMES[i].from));
        snprintf(at, n - (size_t)(at - name), "%s%s", RENAMES[i].to, tail);
        return;
    }
}

const moe_info *arch_moe(const arch_info *a) {
    for (int i = 0; a && i < N_MOES; i++)
        if (!strcmp(MOES[i].name, a->name)) return &MOES[i];
    return NULL;
}

int moe_count(void) { return N_MOES; }

const moe_info *moe_at(int i) { return i >= 0 && i < N_MOES ? &MOES[i] : NULL; }

#define F(x) offsetof(layer_weights, x)
#define HF "model.layers.%d."
#define VEC -1

/* In the order the loader reports a missing tensor: the file's order of a layer. */
const layer_slot LAYER_SLOTS[] = {
    {"blk.%d.attn_norm.weight", HF "input_layernorm.weight", F(attn_norm), SZ_DIM, VEC, 0, 0, 1},
    {"blk.%d.attn_q.weight", HF "self_attn.q_proj.weight", F(wq), SZ_Q, SZ_DIM, 0,
     ARCH_FUSED_QKV | ARCH_ATTN_GATE | SLOT_LINEAR, 0},
    {"blk.%d.attn_q.weight", HF "self_attn.q_proj.weight", F(wq), SZ_Q2, SZ_DIM, ARCH_ATTN_GATE, SLOT_LINEAR, 0},
    {"blk.%d.attn_k.weight", HF "self_attn.k_proj.weight", F(wk), SZ_KV, SZ_DIM, 0,
     ARCH_FUSED_QKV | SLOT_LINEAR | SLOT_KV_SHARED, 0},
    {"blk.%d.attn_v.weight", HF "self_attn.v_proj.weight", F(wv), SZ_KV, SZ_DIM, 0,
     ARCH_FUSED_QKV | SLOT_LINEAR | SLOT_KV_SHARED | SLOT_K_EQ_V, 0},
    {"blk.%d.attn_qkv.weight", HF "self_attn.qkv_proj.weight", F(w_qkv), SZ_QKV, SZ_DIM, ARCH_FUSED_QKV, 0, 0},
    {"blk.%d.attn_q.bias", HF "self_attn.q_proj.bias", F(q_bias), SZ_Q, VEC, ARCH_QKV_BIAS, 0, 0},
    {"blk.%d.attn_k.bias", HF "self_attn.k_proj.bias", F(k_bias), SZ_KV, VEC, ARCH_QKV_BIAS, 0, 0},
    {"blk.%d.attn_v.bias", HF "self_attn.v_proj.bias", F(v_bias), SZ_KV, VEC, ARCH_QKV_BIAS, 0, 0},
    {"blk.%d.attn_q_norm.weight", HF "self_attn.q_norm.weight", F(q_norm), SZ_HEAD, VEC, ARCH_QK_NORM, SLOT_LINEAR,
     1},
    {"blk.%d.attn_k_norm.weight", HF "self_attn.k_norm.weight", F(k_norm), SZ_HEAD, VEC, ARCH_QK_NORM,
     SLOT_LINEAR | SLOT_KV_SHARED, 1},
    {"blk.%d.attn_q_norm.weight", HF "self_attn.q_norm.weight", F(q_norm_full), SZ_Q, VEC, ARCH_QK_NORM_FULL, 0, 1},
    {"blk.%d.attn_k_norm.weight", HF "self_attn.k_norm.weight", F(k_norm_full), SZ_KV, VEC, ARCH_QK_NORM_FULL, 0, 1},
    {"blk.%d.attn_output.weight", HF "self_attn.o_proj.weight", F(wo), SZ_DIM, SZ_Q, 0, SLOT_LINEAR, 0},
    {"blk.%d.attn_output.bias", HF "self_attn.o_proj.bias", F(o_bias), SZ_DIM, VEC, ARCH_O_BIAS, 0, 0},
    {"blk.%d.attn_sinks.weight", HF "self_attn.sinks", F(sinks), SZ_HEADS, VEC, ARCH_ATTN_SINKS, 0, 0},
    /* a Gated DeltaNet layer's mixer (arch.h: wq, wk and wo hold its projections) */
    {"blk.%d.attn_qkv.weight", HF "linear_attn.in_proj_qkv.weight", F(wq), SZ_LIN_CONV, SZ_DIM,
     ARCH_GATED_DELTANET | SLOT_LINEAR, 0, 0},
    {"blk.%d.attn_gate.weight", HF "linear_attn.in_proj_z.weight", F(wk), SZ_LIN_V, SZ_DIM,
     ARCH_GATED_DELTANET | SLOT_LINEAR, 0, 0},
    {"blk.%d.ssm_beta.weight", HF "linear_attn.in_proj_b.weight", F(lin_b), SZ_LIN_HEADS, SZ_DIM,
     ARCH_GATED_DELTANET | SLOT_LINEAR, 0, 0},
    {"blk.%d.ssm_alpha.weight", HF "linear_attn.in_proj_a.weight", F(lin_a), SZ_LIN_HEADS, SZ_DIM,
     ARCH_GATED_DELTANET | SLOT_LINEAR, 0, 0},
    {"blk.%d.ssm_conv1d.weight", HF "linear_attn.conv1d.weight", F(lin_conv), SZ_LIN_TAPS, VEC,
     ARCH_GATED_DELTANET | SLOT_LINEAR, 0, SLOT_AS_IS},
    {"blk.%d.ssm_dt.bias", HF "linear_attn.dt_bias", F(lin_dt_bias), SZ_LIN_HEADS, VEC,
     ARCH_GATED_DELTANET | SLOT_LINEAR, 0, SLOT_AS_IS},
    {"blk.%d.ssm_a", HF "linear_attn.A_log", F(lin_decay), SZ_LIN_HEADS, VEC, ARCH_GATED_DELTANET | SLOT_LINEAR, 0,
     SLOT_NEG_EXP},
    {"blk.%d.ssm_norm.weight", HF "linear_attn.norm.weight", F(lin_norm), SZ_LIN_DV, VEC,
     ARCH_GATED_DELTANET | SLOT_LINEAR, 0, SLOT_AS_IS},
    {"blk.%d.ssm_out.weight", HF "linear_attn.out_proj.weight", F(wo), SZ_DIM, SZ_LIN_V,
     ARCH_GATED_DELTANET | SLOT_LINEAR, 0, 0},
    /* a short conv layer's mixer (arch.h: wq, wo and lin_conv hold its weights) */
    {"blk.%d.shortconv.in_proj.weight", HF "conv.in_proj.weight", F(wq), SZ_DIM3, SZ_DIM,
     ARCH_SHORT_CONV | SLOT_LINEAR, 0, 0},
    {"blk.%d.shortconv.conv.weight", HF "conv.conv.weight", F(lin_conv), SZ_LIN_TAPS, VEC,
     ARCH_SHORT_CONV | SLOT_LINEAR, 0, SLOT_AS_IS},
    {"blk.%d.shortconv.out_proj.weight", HF "conv.out_proj.weight", F(wo), SZ_DIM, SZ_DIM,
     ARCH_SHORT_CONV | SLOT_LINEAR, 0, 0},
    {"blk.%d.post_attention_norm.weight", HF "post_attention_layernorm.weight", F(post_attn_norm), SZ_DIM, VEC,
     ARCH_POST_NORMS, 0, 1},
    /* Llama's MLP input norm is HF's post_attention_layernorm; Gemma's is pre_feedforward_layernorm */
    {"blk.%d.ffn_norm.weight", HF "post_attention_layernorm.weight", F(ffn_norm), SZ_DIM, VEC, 0,
     ARCH_POST_NORMS | ARCH_GATED_DELTANET | ARCH_GGUF_POST_ATTN_NORM, 1},
    {"blk.%d.post_attention_norm.weight", HF "post_attention_layernorm.weight", F(ffn_norm), SZ_DIM, VEC,
     ARCH_GGUF_POST_ATTN_NORM, 0, 1},
    /* llama.cpp names the hybrid families' MLP input norm after HF's */
    {"blk.%d.post_attention_norm.weight", HF "post_attention_layernorm.weight", F(ffn_norm), SZ_DIM, VEC,
     ARCH_GATED_DELTANET, 0, 1},
    {"blk.%d.ffn_norm.weight", HF "pre_feedforward_layernorm.weight", F(ffn_norm), SZ_DIM, VEC, ARCH_POST_NORMS, 0, 1},
    {"blk.%d.ffn_gate.weight", HF "mlp.gate_proj.weight", F(w_gate), SZ_FF, SZ_DIM, 0, ARCH_FUSED_GATE_UP, 0},
    {"blk.%d.ffn_up.weight", HF "mlp.up_proj.weight", F(w_up), SZ_FF, SZ_DIM, 0, ARCH_FUSED_GATE_UP, 0},
    /* llama.cpp keeps Phi-3's gate_up fused under the name of the up projection */
    {"blk.%d.ffn_up.weight", HF "mlp.gate_up_proj.weight", F(w_gate_up), SZ_FF2, SZ_DIM, ARCH_FUSED_GATE_UP, 0, 0},
    {"blk.%d.ffn_down.weight", HF "mlp.down_proj.weight", F(w_down), SZ_DIM, SZ_FF, 0, 0, 0},
    {"blk.%d.post_ffw_norm.weight", HF "post_feedforward_layernorm.weight", F(post_ffn_norm), SZ_DIM, VEC,
     ARCH_POST_NORMS, 0, 1},
    {"blk.%d.inp_gate.weight", HF "per_layer_input_gate.weight", F(pl_gate), SZ_PLE, SZ_DIM, ARCH_PER_LAYER_INPUT,
     0, 0},
    {"blk.%d.proj.weight", HF "per_layer_projection.weight", F(pl_proj), SZ_DIM, SZ_PLE, ARCH_PER_LAYER_INPUT, 0, 0},
    {"blk.%d.post_norm.weight", HF "post_per_layer_input_norm.weight", F(pl_norm), SZ_DIM, VEC,
     ARCH_PER_LAYER_INPUT, 0, 1},
    {"blk.%d.layer_output_scale.weight", HF "layer_scalar", F(out_scale), SZ_ONE, VEC, ARCH_LAYER_SCALAR, 0, 0},
};
const int N_LAYER_SLOTS = (int)(sizeof LAYER_SLOTS / sizeof LAYER_SLOTS[0]);

int slot_is_dense_ffn(const layer_slot *sl) {
    return sl->field == F(w_gate) || sl->field == F(w_up) || sl->field == F(w_down) || sl->field == F(w_gate_up);
}
