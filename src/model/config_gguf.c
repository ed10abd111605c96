/* config_gguf.c - model_config from GGUF metadata (general.architecture, then the keys
 * "<arch>.*" as llama.cpp's converter writes them), for any family in the architecture
 * table (arch.h); the shared parts are config.c. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

/* Integer key in [1, INT32_MAX]; `dflt` <= 0 means required. */
static int gguf_pos_int(const gguf_file *g, const char *key, int dflt, int *out, char *err) {
    int64_t v;
    if (!gguf_has_key(g, key)) {
        if (dflt <= 0) return errf(err, "%s: missing required key '%s'", gguf_path(g), key);
        *out = dflt;
        return 0;
    }
    if (gguf_get_int(g, key, &v) || v < 1 || v > INT32_MAX)
        return errf(err, "%s: key '%s' must be a positive integer", gguf_path(g), key);
    *out = (int)v;
    return 0;
}

static int gguf_float_key(const gguf_file *g, const char *key, int required, double dflt,
                          float *out, char *err) {
    double v = dflt;
    if (!gguf_has_key(g, key)) {
        if (required) return errf(err, "%s: missing required key '%s'", gguf_path(g), key);
    } else if (gguf_get_float(g, key, &v)) {
        return errf(err, "%s: key '%s' must be a number", gguf_path(g), key);
    }
    *out = (float)v;
    return 0;
}

/* "<arch>.<rest>" into buf: every architecture key carries the architecture's prefix. */
static const char *akey(char *buf, size_t n, const model_config *c, const char *rest) {
    snprintf(buf, n, "%s.%s", c->arch, rest);
    return buf;
}
#define AK(rest) akey(kb, sizeof kb, c, rest)

static int gguf_check_arch(const gguf_file *g, model_config *c, char *err) {
    gguf_str a;
    if (gguf_get_str(g, "general.architecture", &a))
        return errf(err, "%s: missing required key 'general.architecture'", gguf_path(g));
    const arch_info *ai = arch_by_gguf(a.ptr, a.len);
    if (!ai) {
        char names[320];
        arch_list(names, sizeof names);
        int n = a.len > 64 ? 64 : (int)a.len;
        return errf(err, "%s: unsupported architecture '%.*s'; supported: %s", gguf_path(g), n, a.ptr, names);
    }
    config_set_family(c, ai);
    return 0;
}

static int gguf_head_dim(const gguf_file *g, model_config *c, char *err) {
    char kb[96], kk[96];
    int kl = 0, vl = 0, rd = 0;
    snprintf(kk, sizeof kk, "%s", AK("attention.key_length"));
    if (gguf_pos_int(g, kk, c->dim / c->n_heads, &kl, err) ||
        gguf_pos_int(g, AK("attention.value_length"), kl, &vl, err) ||
        gguf_pos_int(g, AK("rope.dimension_count"), kl, &rd, err))
        return -1;
    /* Without key_length, rope.dimension_count is the head size in files whose RoPE
     * covers the whole head (all but Phi-3's partial rotary). */
    if (!gguf_has_key(g, kk) && gguf_has_key(g, AK("rope.dimension_count")) &&
        !(c->family->keys & KEY_PARTIAL_ROTARY))
        kl = vl = rd;
    if (vl != kl)
        return errf(err, "%s: %s.attention.value_length %d != key_length %d (unsupported)", gguf_path(g),
                    c->arch, vl, kl);
    if (rd > kl || rd < 2 || rd % 2)
        return errf(err, "%s: %s.rope.dimension_count %d must be even and at most the head size %d",
                    gguf_path(g), c->arch, rd, kl);
    c->head_dim = kl;
    c->rot_dim = rd;
    return 0;
}

/* The Gated DeltaNet keys (KEY_LINEAR_ATTN) as llama.cpp's converter writes them: ssm.conv_kernel,
 * ssm.state_size (the key head dim), ssm.group_count (key heads), ssm.time_step_rank (value heads),
 * ssm.inner_size (value heads * value head dim); which layers are linear from
 * attention.recurrent_layers, else every full_attention_interval-th (default 4) is full. The
 * converter reorders Qwen3.5's value heads from grouped to tiled (ARCH_GGUF_TILED_HEADS). */
static int gguf_linear(const gguf_file *g, model_config *c, config_layer_spec *ls, char *err) {
    char kb[96];
    int inner = 0;
    if (gguf_pos_int(g, AK("ssm.conv_kernel"), 0, &c->lin_conv, err) ||
        gguf_pos_int(g, AK("ssm.state_size"), 0, &c->lin_dk, err) ||
        gguf_pos_int(g, AK("ssm.group_count"), 0, &c->lin_hk, err) ||
        gguf_pos_int(g, AK("ssm.time_step_rank"), 0, &c->lin_hv, err) ||
        gguf_pos_int(g, AK("ssm.inner_size"), 0, &inner, err) ||
        gguf_pos_int(g, AK("full_attention_interval"), 4, &ls->full_interval, err))
        return -1;
    if (inner % c->lin_hv)
        return errf(err, "%s: %s.ssm.inner_size %d is not a multiple of ssm.time_step_rank %d", gguf_path(g), c->arch,
                    inner, c->lin_hv);
    c->lin_dv = inner / c->lin_hv;
    c->lin_tiled = (c->flags & ARCH_GGUF_TILED_HEADS) && c->lin_hk != c->lin_hv;
    if (gguf_has_key(g, AK("attention.recurrent_layers"))) {
        gguf_type et;
        uint64_t n = 0;
        const void *flags = NULL;
        if (gguf_get_arr(g, kb, &et, &n, &flags) || et != GGUF_BOOL || n != (uint64_t)c->n_layers)
            return errf(err, "%s: key '%s' must be %d booleans", gguf_path(g), kb, c->n_layers);
        ls->linear = flags;
    }
    return 0;
}

/* attention.head_count_kv: one count, or (KEY_SHORT_CONV) one per layer, 0 on a conv layer and the
 * same on every attention layer: that count; the layers then come from the list (gguf_shortconv). */
static int gguf_kv_heads(const gguf_file *g, model_config *c, char *err) {
    char kb[96];
    gguf_type et;
    uint64_t n = 0;
    const uint8_t *v = NULL;
    if (!(c->family->keys & KEY_SHORT_CONV) ||
        gguf_get_arr(g, AK("attention.head_count_kv"), &et, &n, (const void **)&v))
        return gguf_pos_int(g, AK("attention.head_count_kv"), c->n_heads, &c->n_kv_heads, err);
    if ((et != GGUF_INT32 && et != GGUF_UINT32) || n != (uint64_t)c->n_layers)
        return errf(err, "%s: key '%s' must be an integer or %d 32-bit integers", gguf_path(g), kb, c->n_layers);
    c->n_kv_heads = 0;
    for (uint64_t l = 0; l < n; l++) {
        int32_t h;
        memcpy(&h, v + 4 * l, 4);
        if (h < 0 || (h && c->n_kv_heads && h != c->n_kv_heads))
            return errf(err, "%s: key '%s' entry %d is %d, expected 0 (a conv layer) or the attention layers' %d",
                        gguf_path(g), kb, (int)l, (int)h, c->n_kv_heads);
        if (h) c->n_kv_heads = h;
    }
    if (!c->n_kv_heads) c->n_kv_heads = c->n_heads; /* all conv: no attention layer reads it */
    return 0;
}

/* The short conv keys (KEY_SHORT_CONV): shortconv.l_cache, the kernel; conv layers where the
 * per-layer attention.head_count_kv says 0 (a single count: no conv layer). */
static int gguf_shortconv(const gguf_file *g, model_config *c, config_layer_spec *ls, uint8_t *linear, char *err) {
    char kb[96];
    gguf_type et;
    uint64_t n = 0;
    const uint8_t *v = NULL;
    if (gguf_pos_int(g, AK("shortconv.l_cache"), 0, &c->lin_conv, err)) return -1;
    if (gguf_get_arr(g, AK("attention.head_count_kv"), &et, &n, (const void **)&v)) return 0;
    for (uint64_t l = 0; l < n; l++) {
        int32_t h;
        memcpy(&h, v + 4 * l, 4);
        linear[l] = h == 0;
    }
    ls->linear = linear;
    return 0;
}

/* Sliding windows and RoPE per layer, as llama.cpp reads them: the window only where the
 * family's files carry one (Gemma 3, Phi-3; the others ignore the key, as llama.cpp does:
 * Mistral files are architecture "llama"); Gemma 3's sliding_window_pattern is an integer
 * or one flag per layer, with a RoPE base of the sliding layers' own; SmolLM3 skips RoPE
 * on every 4th layer. Then the one layer rule (config_set_layers). */
static int gguf_layers(const gguf_file *g, model_config *c, char *err) {
    char kb[96];
    const arch_info *a = c->family;
    int window = 0;
    config_layer_spec ls = {.max_window_layers = 28, .pattern = 6, .no_rope_interval = 4};
    uint8_t linear[CONFIG_MAX_LAYERS];
    if ((a->keys & KEY_GGUF_WINDOW) && gguf_has_key(g, AK("attention.sliding_window"))) {
        int64_t v;
        if (gguf_get_int(g, AK("attention.sliding_window"), &v) || v < 0 || v > INT32_MAX)
            return errf(err, "%s: key '%s' must be a non-negative integer", gguf_path(g), kb);
        window = (int)v;
    }
    if ((a->keys & KEY_GGUF_PATTERN) && gguf_has_key(g, AK("attention.sliding_window_pattern"))) {
        gguf_type et;
        uint64_t n = 0;
        const void *flags = NULL;
        if (!gguf_get_arr(g, kb, &et, &n, &flags)) {
            if (et != GGUF_BOOL || n != (uint64_t)c->n_layers)
                return errf(err, "%s: key '%s' must be an integer or %d booleans", gguf_path(g), kb, c->n_layers);
            ls.slides = flags;
        } else if (gguf_pos_int(g, kb, 6, &ls.pattern, err)) {
            return -1;
        }
    }
    if ((a->keys & KEY_SWA_ROPE_BASE) && gguf_float_key(g, AK("rope.freq_base_swa"), 0, 10000.0, &c->rope_theta_swa, err))
        return -1;
    if ((a->keys & KEY_LINEAR_ATTN) && gguf_linear(g, c, &ls, err)) return -1;
    if ((a->keys & KEY_SHORT_CONV) && gguf_shortconv(g, c, &ls, linear, err)) return -1;
    c->sliding_window = window;
    config_set_layers(c, &ls);
    return 0;
}

/* rope.scaling.type: linear (factor) and longrope (Phi-3: attn_factor,
 * original_context_length; the factor lists are the rope_factors_{short,long}.weight
 * tensors, read by the model). llama3 scaling needs nothing here: such files carry
 * rope_freqs.weight. */
static int gguf_rope_scaling(const gguf_file *g, model_config *c, char *err) {
    char kb[96];
    gguf_str t;
    /* llama.cpp's Phi-3 files carry the factor tensors without a scaling type */
    if (gguf_get_str(g, AK("rope.scaling.type"), &t))
        t = gguf_find_tensor(g, "rope_factors_long.weight") ? (gguf_str){"longrope", 8} : (gguf_str){"none", 4};
    if (t.len == 4 && !memcmp(t.ptr, "none", 4)) return 0;
    if (t.len == 6 && !memcmp(t.ptr, "linear", 6)) {
        float f;
        if (gguf_float_key(g, AK("rope.scaling.factor"), 1, 0, &f, err)) return -1;
        if (f == 1.0f) return 0;
        if (!(f > 0)) return errf(err, "%s: key '%s' must be positive", gguf_path(g), kb);
        c->rope_scaling = ROPE_SCALING_LINEAR;
        c->rope_factor = f;
        return 0;
    }
    if (t.len == 8 && !memcmp(t.ptr, "longrope", 8)) {
        int orig;
        if (gguf_float_key(g, AK("rope.scaling.attn_factor"), 0, 1.0, &c->rope_attn_factor, err) ||
            gguf_pos_int(g, AK("rope.scaling.original_context_length"), c->max_pos, &orig, err))
            return -1;
        c->rope_scaling = ROPE_SCALING_LONGROPE;
        c->rope_orig_max_pos = orig;
        return 0;
    }
    if (t.len == 4 && !memcmp(t.ptr, "yarn", 4)) {
        /* the file cannot carry transformers' truncate: the config class's default (gpt-oss false, else true) */
        float f, bf, bs;
        int orig;
        if (gguf_float_key(g, AK("rope.scaling.factor"), 1, 0, &f, err) ||
            gguf_pos_int(g, AK("rope.scaling.original_context_length"), 0, &orig, err) ||
            gguf_float_key(g, AK("rope.scaling.yarn_beta_fast"), 0, 32.0, &bf, err) ||
            gguf_float_key(g, AK("rope.scaling.yarn_beta_slow"), 0, 1.0, &bs, err))
            return -1;
        if (!(f > 0) || bf < 0 || bs < 0)
            return errf(err, "%s: %s.rope.scaling.factor must be positive, the yarn betas not negative", gguf_path(g),
                        c->arch);
        config_set_yarn(c, f, bf ? bf : 32, bs ? bs : 1, orig, !(c->family->keys & KEY_YARN_DEFAULT), 0, 0, 0);
        return 0;
    }
    int n = t.len > 32 ? 32 : (int)t.len;
    return errf(err, "%s: unsupported %s '%.*s' (linear, longrope and yarn are supported)", gguf_path(g),
                AK("rope.scaling.type"), n, t.ptr);
}

static int gguf_vocab(const gguf_file *g, model_config *c, char *err) {
    char kb[96];
    gguf_type et;
    uint64_t n;
    const void *data;
    const tensor *emb = gguf_find_tensor(g, "token_embd.weight");
    if (gguf_has_key(g, AK("vocab_size"))) return gguf_pos_int(g, kb, 0, &c->vocab_size, err);
    if (!gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, &data) && n > 0 && n <= INT32_MAX) {
        c->vocab_size = (int)n;
        return 0;
    }
    if (emb && emb->ndim == 2 && emb->shape[0] <= INT32_MAX) {
        c->vocab_size = (int)emb->shape[0];
        return 0;
    }
    return errf(err, "%s: no %s.vocab_size, tokenizer.ggml.tokens or token_embd.weight to "
                "size the vocabulary", gguf_path(g), c->arch);
}

static void gguf_add_eos(const gguf_file *g, const char *key, model_config *c) {
    int64_t v;
    if (gguf_get_int(g, key, &v) || v < 0 || v > INT32_MAX || c->n_eos >= CONFIG_MAX_EOS) return;
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_ids[i] == v) return;
    c->eos_ids[c->n_eos++] = (int)v;
}

/* bos, and every end-of-generation id the file declares: eos, then end-of-turn
 * and end-of-message (Llama 3 chat models end a turn with eot, not eos). */
static int gguf_token_ids(const gguf_file *g, model_config *c, char *err) {
    int64_t v;
    if (gguf_has_key(g, "tokenizer.ggml.bos_token_id")) {
        if (gguf_get_int(g, "tokenizer.ggml.bos_token_id", &v) || v < 0 || v > INT32_MAX)
            return errf(err, "%s: key 'tokenizer.ggml.bos_token_id' must be a token id", gguf_path(g));
        c->bos_id = (int)v;
    }
    static const char *eos_keys[] = {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                     "tokenizer.ggml.eom_token_id"};
    for (int i = 0; i < 3; i++) {
        if (gguf_has_key(g, eos_keys[i]) &&
            (gguf_get_int(g, eos_keys[i], &v) || v < 0 || v > INT32_MAX))
            return errf(err, "%s: key '%s' must be a token id", gguf_path(g), eos_keys[i]);
        gguf_add_eos(g, eos_keys[i], c);
    }
    return 0;
}

/* Expert layers: <arch>.expert_count > 0 in a family with a MoE row (Mixtral: arch llama).
 * Every layer is an expert layer (llama.cpp has no dense ones in these architectures), and
 * the renormalization is llama.cpp's constant for the architecture: the files cannot say. */
static int gguf_experts(const gguf_file *g, model_config *c, char *err) {
    char kb[96];
    const moe_info *mo = arch_moe(c->family);
    int64_t v;
    if (!gguf_has_key(g, AK("expert_count"))) return 0;
    if (gguf_get_int(g, kb, &v) || v < 0 || v > INT32_MAX)
        return errf(err, "%s: key '%s' must be a non-negative integer", gguf_path(g), kb);
    if (v == 0) return 0;
    if (!mo) return errf(err, "%s: %s has experts (%s), unsupported for this architecture", gguf_path(g), c->arch, kb);
    c->n_experts = (int)v;
    if (gguf_pos_int(g, AK("expert_used_count"), 0, &c->n_experts_used, err) ||
        gguf_pos_int(g, AK("expert_feed_forward_length"), c->hidden_dim, &c->expert_dim, err))
        return -1;
    if (c->n_experts_used > c->n_experts)
        return errf(err, "%s: key '%s.expert_used_count' %d is above %s.expert_count %d", gguf_path(g), c->arch,
                    c->n_experts_used, c->arch, c->n_experts);
    if (mo->shared_dim && gguf_pos_int(g, AK("expert_shared_feed_forward_length"), 0, &c->shared_dim, err))
        return -1;
    c->moe_renorm = mo->router == MOE_TOPK_SOFTMAX ? 0 : mo->gguf_norm;
    /* the first leading_dense_block_count layers stay dense (LFM2-MoE) */
    int lead = 0, only[CONFIG_MAX_LAYERS];
    if (gguf_has_key(g, AK("leading_dense_block_count")) &&
        (gguf_get_int(g, kb, &v) || v < 0 || v > c->n_layers))
        return errf(err, "%s: key '%s' must be a layer count up to %d", gguf_path(g), kb, c->n_layers);
    if (gguf_has_key(g, kb)) lead = (int)v;
    for (int l = 0; l < lead; l++) only[l] = l;
    if (mo->router == MOE_SIGMOID_BIAS) {
        c->moe_bias = 1; /* llama.cpp requires exp_probs_b */
        if (gguf_float_key(g, AK("expert_weights_scale"), 0, 1.0, &c->moe_scale, err)) return -1;
        if (!(c->moe_scale > 0 && isfinite(c->moe_scale)))
            return errf(err, "%s: key '%s' must be positive", gguf_path(g), kb);
    }
    config_set_experts(c, 1, only, lead);
    return 0;
}

/* An integer key that may also be one value per layer (GGUF_[U]INT32 / [U]INT64 array of n_layers):
 * out[l] for every layer. 0 when the key is absent (out untouched). */
static int gguf_layer_ints(const gguf_file *g, const char *key, const model_config *c, int *out, char *err) {
    gguf_type et;
    uint64_t n = 0;
    const void *data = NULL;
    int64_t v;
    if (!gguf_has_key(g, key)) return 0;
    if (!gguf_get_int(g, key, &v)) {
        if (v < 1 || v > INT32_MAX) return errf(err, "%s: key '%s' must be a positive integer", gguf_path(g), key);
        for (int l = 0; l < c->n_layers; l++) out[l] = (int)v;
        return 0;
    }
    int wide = 0;
    if (gguf_get_arr(g, key, &et, &n, &data) || n != (uint64_t)c->n_layers ||
        !(et == GGUF_UINT32 || et == GGUF_INT32 || (wide = et == GGUF_UINT64 || et == GGUF_INT64)))
        return errf(err, "%s: key '%s' must be a positive integer or %d of them, one per layer", gguf_path(g), key,
                    c->n_layers);
    for (int l = 0; l < c->n_layers; l++) {
        if (wide) {
            memcpy(&v, (const char *)data + 8 * l, 8);
        } else {
            int32_t x;
            memcpy(&x, (const char *)data + 4 * l, 4);
            v = et == GGUF_UINT32 ? (int64_t)(uint32_t)x : x;
        }
        if (v < 1 || v > INT32_MAX)
            return errf(err, "%s: key '%s' entry %d must be a positive integer", gguf_path(g), key, l);
        out[l] = (int)v;
    }
    return 0;
}

/* KEY_PER_LAYER (Gemma 4) as llama.cpp's converter writes it: attention.key_length for the full layers,
 * key_length_swa for the sliding ones, head_count_kv and feed_forward_length a number or one per layer,
 * attention.shared_kv_layers (the producers chosen as transformers does, not llama.cpp's fixed rule),
 * embedding_length_per_layer_input; attention_k_eq_v is a full layer without attn_v; the proportional
 * RoPE's unrotated pairs are those rope_freqs.weight divides by 1e30 (loader.c). */
static int gguf_per_layer(const gguf_file *g, model_config *c, char *err) {
    char kb[96];
    int kvh[CONFIG_MAX_LAYERS], ff[CONFIG_MAX_LAYERS];
    int hd_swa = c->head_dim, ple = 0, shared = 0;
    for (int l = 0; l < c->n_layers; l++) kvh[l] = c->n_kv_heads, ff[l] = c->hidden_dim;
    if (gguf_layer_ints(g, AK("attention.head_count_kv"), c, kvh, err) ||
        gguf_layer_ints(g, AK("feed_forward_length"), c, ff, err) ||
        gguf_pos_int(g, AK("attention.key_length_swa"), c->head_dim, &hd_swa, err))
        return -1;
    int64_t v;
    if (gguf_has_key(g, AK("attention.shared_kv_layers"))) {
        if (gguf_get_int(g, kb, &v) || v < 0 || v >= c->n_layers)
            return errf(err, "%s: key '%s' must be below the layer count %d", gguf_path(g), kb, c->n_layers);
        shared = (int)v;
    }
    if (gguf_has_key(g, AK("embedding_length_per_layer_input"))) {
        if (gguf_get_int(g, kb, &v) || v < 0 || v > 65535)
            return errf(err, "%s: key '%s' must be a non-negative integer", gguf_path(g), kb);
        ple = (int)v;
    }
    c->n_kv_shared = shared;
    c->ple_dim = ple;
    c->n_kv_heads = 1;
    c->hidden_dim = 1;
    c->layer_flags[c->n_layers - 1] &= (uint8_t)~LAYER_SLIDING;
    for (int l = 0; l < c->n_layers; l++) {
        int slide = c->layer_flags[l] & LAYER_SLIDING;
        if (kvh[l] > 65535) return errf(err, "%s: %s.attention.head_count_kv %d out of range", gguf_path(g), c->arch, kvh[l]);
        c->layer_head_dim[l] = (uint16_t)(slide ? hd_swa : c->head_dim);
        c->layer_kv_heads[l] = (uint16_t)kvh[l];
        c->layer_hidden[l] = ff[l];
        if (kvh[l] > c->n_kv_heads) c->n_kv_heads = kvh[l];
        if (ff[l] > c->hidden_dim) c->hidden_dim = ff[l];
    }
    c->per_layer = 1;
    c->head_dim_swa = hd_swa;
    if (config_set_kv_sharing(c, gguf_path(g), AK("attention.shared_kv_layers"), err)) return -1;
    for (int l = 0; l < c->n_layers; l++) {
        snprintf(kb, sizeof kb, "blk.%d.attn_v.weight", l);
        if (!(c->layer_flags[l] & (LAYER_SLIDING | LAYER_KV_SHARED)) && !gguf_find_tensor(g, kb))
            c->layer_flags[l] |= LAYER_K_EQ_V;
    }
    if (ple) {
        const tensor *t = gguf_find_tensor(g, "per_layer_token_embd.weight");
        if (!t || t->ndim != 2 || t->shape[1] != (int64_t)ple * c->n_layers || t->shape[0] > INT32_MAX)
            return errf(err, "%s: tensor per_layer_token_embd.weight must be a (vocab, %d) table: %d layers times "
                        "%s.embedding_length_per_layer_input %d", gguf_path(g), ple * c->n_layers, c->n_layers,
                        c->arch, ple);
        c->ple_vocab = (int)t->shape[0];
        c->flags |= ARCH_PER_LAYER_INPUT;
    }
    /* rope_freqs.weight: 1 for the rotated pairs, then 1e30 (llama.cpp's way to stop the others) */
    const tensor *rf = gguf_find_tensor(g, "rope_freqs.weight");
    if (rf && rf->type == DT_F32 && tensor_numel(rf) == c->rot_dim / 2) {
        int pairs = 0;
        for (float x; pairs < c->rot_dim / 2 && (memcpy(&x, (const float *)rf->data + pairs, 4), x < 1e29f);) pairs++;
        c->rope_pairs = pairs == c->rot_dim / 2 ? 0 : pairs;
    }
    return 0;
}

int config_from_gguf(const gguf_file *g, model_config *c, char *err) {
    char kb[96];
    config_defaults(c);
    if (gguf_check_arch(g, c, err)) return -1;
    int per_layer = (c->family->keys & KEY_PER_LAYER) != 0; /* these two may be one value per layer */
    if (per_layer) c->n_kv_heads = c->hidden_dim = 1;
    if (gguf_pos_int(g, AK("embedding_length"), 0, &c->dim, err) ||
        gguf_pos_int(g, AK("block_count"), 0, &c->n_layers, err) ||
        gguf_pos_int(g, AK("attention.head_count"), 0, &c->n_heads, err) ||
        (!per_layer && gguf_kv_heads(g, c, err)) ||
        (!per_layer && gguf_pos_int(g, AK("feed_forward_length"), 0, &c->hidden_dim, err)) ||
        gguf_pos_int(g, AK("context_length"), 0, &c->max_pos, err) ||
        gguf_float_key(g, AK("attention.layer_norm_rms_epsilon"), 1, 0, &c->rms_eps, err) ||
        gguf_float_key(g, AK("rope.freq_base"), 0, 10000.0, &c->rope_theta, err) ||
        gguf_float_key(g, AK("final_logit_softcapping"), 0, 0.0, &c->final_softcap, err) ||
        gguf_float_key(g, AK("embedding_scale"), 0, 0.0, &c->embed_mult, err) ||
        gguf_float_key(g, AK("residual_scale"), 0, 1.0, &c->residual_mult, err) ||
        gguf_float_key(g, AK("attention.scale"), 0, 0.0, &c->attn_scale, err) ||
        gguf_float_key(g, AK("logit_scale"), 0, 1.0, &c->logit_div, err))
        return -1;
    if (c->n_layers > CONFIG_MAX_LAYERS)
        return errf(err, "%s: %d layers, at most %d are supported", gguf_path(g), c->n_layers, CONFIG_MAX_LAYERS);
    if (gguf_head_dim(g, c, err) || gguf_vocab(g, c, err) || gguf_token_ids(g, c, err) ||
        gguf_layers(g, c, err) || gguf_experts(g, c, err) || gguf_rope_scaling(g, c, err))
        return -1;
    if (per_layer) {
        if (!gguf_has_key(g, AK("attention.head_count_kv"))) c->n_kv_heads = c->n_heads;
        if (!gguf_has_key(g, AK("feed_forward_length")))
            return errf(err, "%s: missing required key '%s'", gguf_path(g), kb);
        if (gguf_per_layer(g, c, err)) return -1;
    }
    if (c->flags & ARCH_UNIT_SCALE) c->attn_scale = 1.0f;
    /* The attention scale as llama.cpp sets it for Gemma 3 (the files have no
     * query_pre_attn_scalar): head_dim, except hidden / heads in the 62-layer 27B */
    if (c->family->keys & KEY_QUERY_SCALE)
        c->attn_scale = 1.0f / sqrtf((float)(c->n_layers == 62 ? c->dim / c->n_heads : c->head_dim));
    c->tied_embeddings = gguf_find_tensor(g, "output.weight") == NULL;
    c->rope_interleaved = (c->flags & ARCH_GGUF_ROPE_PAIRS) != 0;
    return 0;
}
