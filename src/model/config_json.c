/* config_json.c - model_config from a Hugging Face config.json, for any family in the
 * architecture table (arch.h); the shared parts are config.c.
 *
 * config.json comes in two shapes, both accepted:
 *   transformers 4.x: top-level "rope_theta" and "rope_scaling": {"rope_type" (or the
 *     older "type"): "llama3", "factor", "low_freq_factor", "high_freq_factor",
 *     "original_max_position_embeddings"};
 *   transformers 5.x (5.23 checked): "rope_parameters": {"rope_theta", "rope_type", and
 *     for llama3 the same four keys}; no top-level "rope_theta".
 * The precedence follows transformers 5.x (modeling_rope_utils): "rope_scaling" wins
 * over "rope_parameters" when both are set; theta comes from that dict, then the
 * top-level key, then 10000; a top-level "original_max_position_embeddings" wins
 * over the dict's, and max_position_embeddings is the last fallback.
 *
 * Defaults are the family's config class's (transformers 5.23; its row in arch.c):
 * num_key_value_heads = heads, head_dim = hidden / heads (Qwen3 128, Gemma 3 256),
 * and per family max_position_embeddings, rms_norm_eps, tie_word_embeddings, rope
 * base, bos and eos. The five size keys
 * (hidden_size, num_hidden_layers, num_attention_heads, intermediate_size,
 * vocab_size) are required even though LlamaConfig has defaults for them: a
 * checkpoint without them would silently take Llama-7B's sizes. */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmgen.h" /* LLMGEN_MAX_CONTEXT */
#include "base/util.h"

#define MAX_FF 1048576.0 /* config_validate's bound on intermediate_size */

/* A JSON value is "absent" when missing or null: transformers treats both alike. */
static const json_t *get(const json_t *obj, const char *key) {
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_null(v) ? NULL : v;
}

/* Integer key in [lo, INT32_MAX]; `dflt` < lo means the key is required. */
static int json_int_key(const json_t *root, const char *key, int lo, int dflt, int *out,
                        const char *path, char *err) {
    const json_t *v = get(root, key);
    if (!v) {
        if (dflt < lo) return errf(err, "%s: missing required key '%s'", path, key);
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > INT32_MAX)
        return errf(err, "%s: key '%s' must be an integer >= %d", path, key, lo);
    *out = (int)json_integer_value(v);
    return 0;
}

static int json_num_key(const json_t *obj, const char *key, int required, double dflt, double *out,
                        const char *where, const char *path, char *err) {
    const json_t *v = get(obj, key);
    if (!v) {
        if (required) return errf(err, "%s: missing required key '%s%s'", path, where, key);
        *out = dflt;
        return 0;
    }
    if (!json_is_number(v)) return errf(err, "%s: key '%s%s' must be a number", path, where, key);
    *out = json_number_value(v);
    return 0;
}

static int json_bool_key(const json_t *root, const char *key, int dflt, int *out, const char *path,
                         char *err) {
    const json_t *v = get(root, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v)) return errf(err, "%s: key '%s' must be true or false", path, key);
    *out = json_is_true(v);
    return 0;
}
/* model_type first (transformers' own choice), else an architectures entry. */
static int check_arch(const json_t *root, model_config *c, const char *path, char *err) {
    char names[320];
    arch_list(names, sizeof names);
    const json_t *mt = get(root, "model_type");
    if (mt) {
        if (!json_is_string(mt)) return errf(err, "%s: key 'model_type' must be a string", path);
        const arch_info *a = arch_by_model_type(json_string_value(mt));
        if (!a)
            return errf(err, "%s: unsupported architecture '%s' (model_type); supported: %s", path,
                        json_string_value(mt), names);
        config_set_family(c, a);
        return 0;
    }
    const json_t *archs = get(root, "architectures");
    if (!archs) return errf(err, "%s: missing required key 'model_type'", path);
    size_t i;
    const json_t *v;
    json_array_foreach(archs, i, v) {
        const arch_info *a = json_is_string(v) ? arch_by_class(json_string_value(v)) : NULL;
        if (a) {
            config_set_family(c, a);
            return 0;
        }
    }
    v = json_array_get(archs, 0);
    return errf(err, "%s: unsupported architecture '%s'; supported: %s", path,
                json_is_string(v) ? json_string_value(v) : "?", names);
}

/* Features llmgen does not implement: refuse them rather than compute something else. */
static int check_unsupported(const json_t *root, const model_config *c, const char *path, char *err) {
    const char *want = c->act == ACT_GELU_TANH ? "gelu_pytorch_tanh" : "silu";
    const char *key = get(root, "hidden_activation") ? "hidden_activation" : "hidden_act";
    const json_t *act = c->act == ACT_SWIGLU_CLAMP ? NULL : get(root, key); /* GptOssExperts ignores it */
    if (act && (!json_is_string(act) || strcmp(json_string_value(act), want)))
        return errf(err, "%s: unsupported %s '%s' for %s, expected %s", path, key,
                    json_is_string(act) ? json_string_value(act) : "?", c->arch, want);
    static const char *bias_keys[] = {"attention_bias", "mlp_bias"};
    for (int i = 0; i < 2; i++) {
        int b = 0;
        /* a family with biases on every projection has them whatever the key says: false is refused */
        int biased = !i && (c->flags & ARCH_O_BIAS);
        if (json_bool_key(root, bias_keys[i], biased, &b, path, err)) return -1;
        if (b != biased) return errf(err, "%s: unsupported '%s': %s for %s", path, bias_keys[i], b ? "true" : "false", c->arch);
    }
    if (get(root, "attn_logit_softcapping"))
        return errf(err, "%s: unsupported 'attn_logit_softcapping' (attention score soft-capping)", path);
    if (get(root, "clip_qkv")) return errf(err, "%s: unsupported 'clip_qkv' (clamped q, k and v)", path);
    int use_sw = 0;
    if (c->family->slide == SLIDE_NONE && !(c->family->keys & KEY_USE_SW) &&
        (json_bool_key(root, "use_sliding_window", 0, &use_sw, path, err) || use_sw))
        return use_sw ? errf(err, "%s: unsupported 'use_sliding_window': true for %s", path, c->arch) : -1;
    return 0;
}

static int json_token_ids(const json_t *root, model_config *c, const char *path, char *err) {
    const arch_info *d = c->family;
    json_t *bos = json_object_get(root, "bos_token_id");
    if (!bos) c->bos_id = d->bos;
    else if (json_is_null(bos)) c->bos_id = -1;
    else if (json_int_key(root, "bos_token_id", 0, 0, &c->bos_id, path, err)) return -1;

    json_t *eos = json_object_get(root, "eos_token_id");
    if (!eos) {
        c->n_eos = d->eos >= 0;
        c->eos_ids[0] = d->eos;
    } else if (json_is_integer(eos)) {
        if (json_int_key(root, "eos_token_id", 0, 0, &c->eos_ids[0], path, err)) return -1;
        c->n_eos = 1;
    } else if (json_is_array(eos)) {
        if (json_array_size(eos) > CONFIG_MAX_EOS)
            return errf(err, "%s: key 'eos_token_id' lists %zu ids, at most %d are supported", path,
                        json_array_size(eos), CONFIG_MAX_EOS);
        size_t i;
        json_t *v;
        json_array_foreach(eos, i, v) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
                return errf(err, "%s: key 'eos_token_id' entry %zu is not a token id", path, i);
            c->eos_ids[c->n_eos++] = (int)json_integer_value(v);
        }
    } else if (!json_is_null(eos)) {
        return errf(err, "%s: key 'eos_token_id' must be an integer or a list of integers", path);
    }
    return 0;
}

static int json_rope_llama3(const json_t *root, const json_t *rp, const char *where,
                            model_config *c, const char *path, char *err) {
    double f, lo, hi, orig = 0;
    if (json_num_key(rp, "factor", 1, 0, &f, where, path, err) ||
        json_num_key(rp, "low_freq_factor", 1, 0, &lo, where, path, err) ||
        json_num_key(rp, "high_freq_factor", 1, 0, &hi, where, path, err))
        return -1;
    const json_t *top = get(root, "original_max_position_embeddings");
    if (json_num_key(top ? root : rp, "original_max_position_embeddings", 0, c->max_pos, &orig,
                     top ? "" : where, path, err))
        return -1;
    if (orig != floor(orig) || orig < 1 || orig > LLMGEN_MAX_CONTEXT)
        return errf(err, "%s: key '%soriginal_max_position_embeddings' must be a positive integer",
                    path, top ? "" : where);
    c->rope_scaling = ROPE_SCALING_LLAMA3;
    c->rope_factor = (float)f;
    c->rope_low_freq_factor = (float)lo;
    c->rope_high_freq_factor = (float)hi;
    c->rope_orig_max_pos = (int)orig;
    return 0;
}

/* A LongRoPE factor list of exactly rot_dim / 2 positive numbers. */
static int json_factor_list(const json_t *rp, const char *key, float *out, int n, const char *where,
                            const char *path, char *err) {
    const json_t *a = get(rp, key);
    if (!json_is_array(a) || (int)json_array_size(a) != n)
        return errf(err, "%s: key '%s%s' must be a list of %d numbers (rotary dimensions / 2)", path, where,
                    key, n);
    for (int i = 0; i < n; i++) {
        const json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_number(v) || !(json_number_value(v) > 0))
            return errf(err, "%s: key '%s%s' entry %d must be a positive number", path, where, key, i);
        out[i] = (float)json_number_value(v);
    }
    return 0;
}

/* transformers' _compute_longrope_parameters: factor defaults to max_pos / original, the
 * attention factor to sqrt(1 + ln(factor) / ln(original)) when factor > 1. */
static int json_rope_longrope(const json_t *root, const json_t *rp, const char *where, model_config *c,
                              const char *path, char *err) {
    int n = c->rot_dim / 2;
    if (n > CONFIG_MAX_ROT_PAIRS) return errf(err, "%s: %d rotary pairs, at most %d supported", path, n,
                                              CONFIG_MAX_ROT_PAIRS);
    /* transformers' standardize_rope_params: the top-level key wins; Phi3Config always
     * has that attribute (default 4096: the row's longrope_orig), other classes fall back to the dict's value,
     * then to max_position_embeddings */
    double orig, factor, attn;
    int top = get(root, "original_max_position_embeddings") != NULL;
    int cls = c->family->longrope_orig > 0;
    double dflt_orig = cls ? c->family->longrope_orig : c->max_pos;
    if (json_num_key(top || cls ? root : rp, "original_max_position_embeddings", 0, dflt_orig, &orig,
                     top || cls ? "" : where, path, err))
        return -1;
    if (orig != floor(orig) || orig < 1 || orig > LLMGEN_MAX_CONTEXT)
        return errf(err, "%s: original_max_position_embeddings must be a positive integer", path);
    if (json_num_key(rp, "factor", 0, (double)c->max_pos / orig, &factor, where, path, err)) return -1;
    double dflt = factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log(orig));
    if (json_num_key(rp, "attention_factor", 0, dflt, &attn, where, path, err)) return -1;
    if (json_factor_list(rp, "short_factor", c->rope_short, n, where, path, err) ||
        json_factor_list(rp, "long_factor", c->rope_long, n, where, path, err))
        return -1;
    c->rope_scaling = ROPE_SCALING_LONGROPE;
    c->rope_factors_json = 1;
    c->rope_orig_max_pos = (int)orig;
    c->rope_attn_factor = (float)attn;
    return 0;
}

/* transformers' _compute_yarn_parameters: factor (else max_pos / original), beta_fast / beta_slow (a
 * missing or zero one: 32 / 1), truncate (default true), attention_factor or mscale / mscale_all_dim; the
 * original context as for llama3 (the top-level key wins over the dict's, then max_position_embeddings). */
static int json_rope_yarn(const json_t *root, const json_t *rp, const char *where, model_config *c,
                          const char *path, char *err) {
    double orig, factor, bf, bs, attn, ms, msa;
    int truncate = 1;
    const json_t *top = get(root, "original_max_position_embeddings");
    if (json_num_key(top ? root : rp, "original_max_position_embeddings", 0, c->max_pos, &orig, top ? "" : where,
                     path, err))
        return -1;
    if (orig != floor(orig) || orig < 1 || orig > LLMGEN_MAX_CONTEXT)
        return errf(err, "%s: key '%soriginal_max_position_embeddings' must be a positive integer", path,
                    top ? "" : where);
    if (json_num_key(rp, "factor", 0, (double)c->max_pos / orig, &factor, where, path, err) ||
        json_num_key(rp, "beta_fast", 0, 32, &bf, where, path, err) ||
        json_num_key(rp, "beta_slow", 0, 1, &bs, where, path, err) ||
        json_num_key(rp, "attention_factor", 0, 0, &attn, where, path, err) ||
        json_num_key(rp, "mscale", 0, 0, &ms, where, path, err) ||
        json_num_key(rp, "mscale_all_dim", 0, 0, &msa, where, path, err) ||
        json_bool_key(rp, "truncate", 1, &truncate, path, err))
        return -1;
    if (!(factor > 0) || bf < 0 || bs < 0 || attn < 0)
        return errf(err, "%s: key '%sfactor' must be positive, beta_fast, beta_slow and attention_factor not negative",
                    path, where);
    config_set_yarn(c, factor, bf ? bf : 32, bs ? bs : 1, (int)orig, truncate, attn, ms, msa);
    return 0;
}

/* The rope type of one parameter dict (rope_scaling or rope_parameters, or Gemma 3's
 * full_attention entry). */
static int json_rope_type(const json_t *root, const json_t *rp, const char *where, model_config *c,
                          const char *path, char *err) {
    const json_t *type = get(rp, "rope_type");
    if (!type) type = get(rp, "type");
    if (!type) return 0;
    if (!json_is_string(type)) return errf(err, "%s: key '%srope_type' must be a string", path, where);
    const char *t = json_string_value(type);
    if (!strcmp(t, "default")) return 0;
    if (!strcmp(t, "llama3")) return json_rope_llama3(root, rp, where, c, path, err);
    if (!strcmp(t, "longrope")) return json_rope_longrope(root, rp, where, c, path, err);
    if (!strcmp(t, "yarn")) return json_rope_yarn(root, rp, where, c, path, err);
    if (!strcmp(t, "linear")) {
        double f;
        if (json_num_key(rp, "factor", 1, 0, &f, where, path, err)) return -1;
        if (!(f > 0)) return errf(err, "%s: key '%sfactor' must be positive", path, where);
        c->rope_scaling = ROPE_SCALING_LINEAR;
        c->rope_factor = (float)f;
        return 0;
    }
    return errf(err, "%s: unsupported %srope_type '%s' (default, linear, llama3 and longrope are supported)",
                path, where, t);
}

/* rope_theta, partial rotary and scaling. The precedence follows transformers 5.x
 * (see the top of this file). Gemma 3 nests one dict per layer type in
 * rope_parameters ("full_attention", "sliding_attention"); its older configs have
 * rope_local_base_freq for the sliding layers. */
static int json_rope(const json_t *root, model_config *c, const char *path, char *err) {
    const arch_info *d = c->family;
    const json_t *rp = get(root, "rope_scaling");
    const char *where = "rope_scaling.";
    if (!rp || (json_is_object(rp) && json_object_size(rp) == 0)) {
        rp = get(root, "rope_parameters");
        where = "rope_parameters.";
    }
    if (rp && !json_is_object(rp))
        return errf(err, "%s: key '%.*s' must be an object", path, (int)strlen(where) - 1, where);
    double theta, theta_swa = 0;
    const json_t *full = get(rp, "full_attention"), *swa = get(rp, "sliding_attention");
    if (json_num_key(root, "rope_theta", 0, d->theta, &theta, "", path, err)) return -1;
    if (d->keys & KEY_SWA_ROPE_BASE) {
        if (json_num_key(root, "rope_local_base_freq", 0, 10000.0, &theta_swa, "", path, err)) return -1;
        if (full || swa) {
            if (!json_is_object(full) || !json_is_object(swa))
                return errf(err, "%s: key '%sfull_attention' and 'sliding_attention' must both be objects",
                            path, where);
            where = "rope_parameters.full_attention.";
            if (json_num_key(swa, "rope_theta", 0, theta_swa, &theta_swa, "rope_parameters.sliding_attention.",
                             path, err))
                return -1;
            const json_t *st = get(swa, "rope_type");
            if (st && (!json_is_string(st) || strcmp(json_string_value(st), "default")))
                return errf(err, "%s: unsupported rope_parameters.sliding_attention.rope_type", path);
            rp = full;
        }
    }
    if (json_num_key(rp, "rope_theta", 0, theta, &theta, where, path, err)) return -1;
    c->rope_theta = (float)theta;
    c->rope_theta_swa = (float)theta_swa;
    if (d->keys & KEY_PER_LAYER) { /* the full layers' RoPE needs their head size: json_per_layer */
        c->rot_dim = c->head_dim;
        return 0;
    }
    double prf;
    /* Qwen3_5TextConfig sets 0.25 when the config leaves it out */
    if (json_num_key(root, "partial_rotary_factor", 0, d->keys & KEY_LINEAR_ATTN ? 0.25 : 1.0, &prf, "", path, err) ||
        json_num_key(rp, "partial_rotary_factor", 0, prf, &prf, where, path, err))
        return -1;
    /* of these families only Phi-3's attention slices the rotated part off the head */
    if (prf != 1.0 && !(d->keys & KEY_PARTIAL_ROTARY))
        return errf(err, "%s: unsupported partial_rotary_factor %g for %s", path, prf, c->arch);
    if (!(prf > 0 && prf <= 1)) return errf(err, "%s: partial_rotary_factor %g must be in (0, 1]", path, prf);
    c->rot_dim = (int)(c->head_dim * prf); /* int() of the double product, as transformers; checked in
                                              config_validate */
    if (!rp && (d->keys & KEY_YARN_DEFAULT)) { /* GptOssConfig's rope_parameters */
        config_set_yarn(c, 32, 32, 1, 4096, 0, 0, 0, 0);
        return 0;
    }
    return json_rope_type(root, rp, where, c, path, err);
}

/* LFM2's MLP width (Lfm2MLP): from intermediate_size, or its alias block_ff_dim, which wins;
 * with block_auto_adjust_ff_dim int(2 I / 3), and with a block_ffn_dim_multiplier int(m f) rounded
 * up to a block_multiple_of (transformers rounds only when there is a multiplier; llama.cpp's
 * converter always, and writes the result). */
static int json_ff_adjust(const json_t *root, model_config *c, const char *path, char *err) {
    int adjust = 1, multiple = 256;
    double mult = 0;
    if ((get(root, "block_ff_dim") && json_int_key(root, "block_ff_dim", 1, 0, &c->hidden_dim, path, err)) ||
        json_bool_key(root, "block_auto_adjust_ff_dim", 1, &adjust, path, err) ||
        json_int_key(root, "block_multiple_of", 1, 256, &multiple, path, err) ||
        json_num_key(root, "block_ffn_dim_multiplier", 0, 1.0, &mult, "", path, err))
        return -1;
    if (!adjust) return 0;
    double f = (double)(int)(2.0 * c->hidden_dim / 3.0);
    if (get(root, "block_ffn_dim_multiplier") || !json_object_get(root, "block_ffn_dim_multiplier")) {
        if (!(mult > 0 && mult * f < MAX_FF)) return errf(err, "%s: key 'block_ffn_dim_multiplier' out of range", path);
        f = (double)(int)(mult * f);
        f = (double)multiple * (((int64_t)f + multiple - 1) / multiple);
    }
    if (!(f >= 1 && f < MAX_FF)) return errf(err, "%s: the adjusted feed-forward width %.0f is out of range", path, f);
    c->hidden_dim = (int)f;
    return 0;
}

static int json_sizes(const json_t *root, model_config *c, const char *path, char *err) {
    const arch_info *d = c->family;
    int sc = (d->keys & KEY_SHORT_CONV) != 0, alias = (d->keys & KEY_FF_ADJUST) && get(root, "block_ff_dim");
    if (json_int_key(root, "hidden_size", 1, 0, &c->dim, path, err) ||
        json_int_key(root, "num_hidden_layers", 1, 0, &c->n_layers, path, err) ||
        json_int_key(root, "num_attention_heads", 1, 0, &c->n_heads, path, err) ||
        json_int_key(root, "intermediate_size", 1, alias ? 1 : 0, &c->hidden_dim, path, err) ||
        json_int_key(root, "vocab_size", 1, 0, &c->vocab_size, path, err) ||
        json_int_key(root, "num_key_value_heads", 1, c->n_heads, &c->n_kv_heads, path, err) ||
        json_int_key(root, "head_dim", 1, d->head_dim ? d->head_dim : c->dim / c->n_heads, &c->head_dim, path,
                     err) ||
        json_int_key(root, "max_position_embeddings", 1, d->max_pos, &c->max_pos, path, err))
        return -1;
    double eps = 0, cap = 0, qpas = 0;
    if (json_num_key(root, sc ? "norm_eps" : "rms_norm_eps", 0, d->eps, &eps, "", path, err)) return -1;
    c->rms_eps = (float)eps;
    if (json_num_key(root, "final_logit_softcapping", 0, 0, &cap, "", path, err)) return -1;
    if (cap < 0) return errf(err, "%s: final_logit_softcapping must be positive", path);
    c->final_softcap = (float)cap;
    /* query_pre_attn_scalar ** -0.5 in double, rounded once to f32 */
    if (d->keys & KEY_QUERY_SCALE) {
        if (json_num_key(root, "query_pre_attn_scalar", 0, 256, &qpas, "", path, err)) return -1;
        if (!(qpas > 0)) return errf(err, "%s: query_pre_attn_scalar must be positive", path);
        c->attn_scale = (float)pow(qpas, -0.5);
    }
    /* Granite's multipliers: Python floats that transformers multiplies f32 tensors by */
    if (d->keys & KEY_MULTIPLIERS) {
        double em, rm, am, ls;
        if (json_num_key(root, "embedding_multiplier", 0, 1.0, &em, "", path, err) ||
            json_num_key(root, "residual_multiplier", 0, 1.0, &rm, "", path, err) ||
            json_num_key(root, "attention_multiplier", 0, 1.0, &am, "", path, err) ||
            json_num_key(root, "logits_scaling", 0, 1.0, &ls, "", path, err))
            return -1;
        c->embed_mult = (float)em, c->residual_mult = (float)rm, c->attn_scale = (float)am, c->logit_div = (float)ls;
    }
    if (c->act == ACT_SWIGLU_CLAMP) {
        double a, lim;
        if (json_num_key(root, "swiglu_alpha", 0, 1.702, &a, "", path, err) ||
            json_num_key(root, "swiglu_limit", 0, 7.0, &lim, "", path, err))
            return -1;
        if (!(lim > 0) || !isfinite(a)) return errf(err, "%s: swiglu_limit must be positive, swiglu_alpha finite", path);
        c->swiglu_alpha = (float)a, c->swiglu_limit = (float)lim;
    }
    /* the Gated DeltaNet's sizes, Qwen3_5TextConfig's defaults */
    if ((d->keys & KEY_LINEAR_ATTN) &&
        (json_int_key(root, "linear_conv_kernel_dim", 1, 4, &c->lin_conv, path, err) ||
         json_int_key(root, "linear_key_head_dim", 1, 128, &c->lin_dk, path, err) ||
         json_int_key(root, "linear_value_head_dim", 1, 128, &c->lin_dv, path, err) ||
         json_int_key(root, "linear_num_key_heads", 1, 16, &c->lin_hk, path, err) ||
         json_int_key(root, "linear_num_value_heads", 1, 32, &c->lin_hv, path, err)))
        return -1;
    /* LFM2's short conv: conv_L_cache is its kernel; Lfm2Config's tie_embedding wins over
     * tie_word_embeddings */
    if (sc) {
        int bias;
        if (json_int_key(root, "conv_L_cache", 1, 3, &c->lin_conv, path, err) ||
            json_bool_key(root, "conv_bias", 0, &bias, path, err))
            return -1;
        if (bias) return errf(err, "%s: unsupported 'conv_bias': true", path);
    }
    if ((d->keys & KEY_FF_ADJUST) && json_ff_adjust(root, c, path, err)) return -1;
    if (sc && get(root, "tie_embedding"))
        return json_bool_key(root, "tie_embedding", d->tied, &c->tied_embeddings, path, err);
    return json_bool_key(root, "tie_word_embeddings", d->tied, &c->tied_embeddings, path, err);
}

/* The file's own per-layer lists, where the family reads them: layer_types (transformers
 * 5.x) says which layers slide, no_rope_layers (1 = RoPE) which rotate. Then the one
 * layer rule (config_set_layers) fills in the rest. */
static int json_layers(const json_t *root, model_config *c, const char *path, char *err) {
    const arch_info *a = c->family;
    int use_sw = 1, window = 0;
    config_layer_spec ls = {.max_window_layers = 28, .pattern = 6, .no_rope_interval = 4};
    uint8_t slides[CONFIG_MAX_LAYERS], no_rope[CONFIG_MAX_LAYERS], linear[CONFIG_MAX_LAYERS];
    int lin = (a->keys & KEY_LINEAR_ATTN) != 0, sc = (a->keys & KEY_SHORT_CONV) != 0;
    if ((a->keys & KEY_USE_SW) && json_bool_key(root, "use_sliding_window", 0, &use_sw, path, err)) return -1;
    const json_t *sw = json_object_get(root, "sliding_window");
    if (sw && !json_is_null(sw)) {
        if (json_int_key(root, "sliding_window", 0, 0, &window, path, err)) return -1;
    } else if (!sw) {
        window = a->sw_default; /* an absent key, not a null one */
    }
    c->sliding_window = use_sw ? window : 0;
    if (json_int_key(root, "max_window_layers", 0, 28, &ls.max_window_layers, path, err) ||
        json_int_key(root, "sliding_window_pattern", 1, 6, &ls.pattern, path, err) ||
        json_int_key(root, "no_rope_layer_interval", 1, 4, &ls.no_rope_interval, path, err) ||
        (lin && json_int_key(root, "full_attention_interval", 1, 4, &ls.full_interval, path, err)))
        return -1;
    const json_t *types = a->keys & KEY_LAYER_TYPES ? get(root, "layer_types") : NULL;
    const json_t *norope = a->keys & KEY_NO_ROPE ? get(root, "no_rope_layers") : NULL;
    if (types && (!json_is_array(types) || (int)json_array_size(types) != c->n_layers))
        return errf(err, "%s: key 'layer_types' must list %d layer types", path, c->n_layers);
    if (norope && (!json_is_array(norope) || (int)json_array_size(norope) != c->n_layers))
        return errf(err, "%s: key 'no_rope_layers' must list %d flags", path, c->n_layers);
    for (int l = 0; norope && l < c->n_layers; l++) {
        const json_t *v = json_array_get(norope, (size_t)l);
        if (!json_is_integer(v) && !json_is_boolean(v))
            return errf(err, "%s: key 'no_rope_layers' entry %d must be 0 or 1", path, l);
        no_rope[l] = !(json_is_integer(v) ? json_integer_value(v) != 0 : json_is_true(v));
    }
    const char *other = lin ? "linear_attention" : sc ? "conv" : "sliding_attention";
    for (int l = 0; types && l < c->n_layers; l++) {
        const json_t *v = json_array_get(types, (size_t)l);
        const char *t = json_is_string(v) ? json_string_value(v) : "";
        if (strcmp(t, "full_attention") && strcmp(t, other))
            return errf(err, "%s: key 'layer_types' entry %d must be full_attention or %s", path, l, other);
        slides[l] = !strcmp(t, "sliding_attention");
        linear[l] = (lin || sc) && !strcmp(t, other);
    }
    /* LFM2 without layer_types: the layers not in full_attn_idxs are conv (no list: none) */
    const json_t *idxs = sc && !types ? get(root, "full_attn_idxs") : NULL;
    if (idxs && !json_is_array(idxs)) return errf(err, "%s: key 'full_attn_idxs' must be a list of layers", path);
    for (int l = 0; idxs && l < c->n_layers; l++) linear[l] = 1;
    for (size_t i = 0; idxs && i < json_array_size(idxs); i++) {
        const json_t *v = json_array_get(idxs, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= c->n_layers)
            return errf(err, "%s: key 'full_attn_idxs' entry %zu is not a layer index below %d", path, i, c->n_layers);
        linear[json_integer_value(v)] = 0;
    }
    ls.slides = types && !lin && !sc ? slides : NULL;
    ls.linear = (types && (lin || sc)) || idxs ? linear : NULL;
    ls.no_rope = norope ? no_rope : NULL;
    config_set_layers(c, &ls);
    return 0;
}

/* The expert layers of a family with a MoE row (arch.h): sizes, the renormalization switch
 * and, for Qwen's, which layers stay dense. The expert count's key is num_experts or
 * num_local_experts (transformers' attribute map: Qwen3-MoE saves the latter, published
 * Qwen configs the former). */
static int json_experts(const json_t *root, model_config *c, const char *path, char *err) {
    const moe_info *mo = arch_moe(c->family);
    if (!mo || !mo->hf_router) return 0; /* llama's MoE row serves GGUF files (Mixtral) only */
    const char *ek = get(root, "num_local_experts") && !get(root, "num_experts") ? "num_local_experts" : "num_experts";
    int step = 1, only[CONFIG_MAX_LAYERS], n_only = 0;
    if (json_int_key(root, ek, 0, mo->experts, &c->n_experts, path, err) ||
        json_int_key(root, "num_experts_per_tok", 1, mo->used, &c->n_experts_used, path, err) ||
        json_int_key(root, "moe_intermediate_size", 1, mo->expert_dim ? mo->expert_dim : c->hidden_dim,
                     &c->expert_dim, path, err) ||
        json_int_key(root, "shared_expert_intermediate_size", 0, mo->shared_dim, &c->shared_dim, path, err))
        return -1;
    if (!mo->expert_dim) c->expert_dim = c->hidden_dim; /* the width is intermediate_size */
    if (!mo->shared_dim) c->shared_dim = 0;
    c->moe_renorm = mo->renorm == MOE_RENORM_ALWAYS;
    if (mo->renorm == MOE_RENORM_CONFIG &&
        json_bool_key(root, "norm_topk_prob", mo->norm_default, &c->moe_renorm, path, err))
        return -1;
    if (mo->router == MOE_TOPK_SOFTMAX) c->moe_renorm = 0; /* the softmax over the k is the weighting */
    if (mo->router == MOE_SIGMOID_BIAS) {
        double sf;
        int use_bias;
        if (json_num_key(root, "routed_scaling_factor", 0, 1.0, &sf, "", path, err) ||
            json_bool_key(root, "use_expert_bias", 1, &use_bias, path, err))
            return -1;
        if (!(sf > 0 && isfinite(sf))) return errf(err, "%s: key 'routed_scaling_factor' must be positive", path);
        c->moe_scale = (float)sf;
        c->moe_bias = use_bias;
    }
    if (mo->sparse_keys == 2) { /* the first num_dense_layers stay dense */
        int n_dense;
        if (json_int_key(root, "num_dense_layers", 0, 2, &n_dense, path, err)) return -1;
        for (int l = 0; l < n_dense && l < c->n_layers; l++) only[n_only++] = l;
    }
    if (mo->sparse_keys == 1) {
        const json_t *ml = get(root, "mlp_only_layers");
        if (json_int_key(root, "decoder_sparse_step", 1, 1, &step, path, err)) return -1;
        if (ml && !json_is_array(ml)) return errf(err, "%s: key 'mlp_only_layers' must be a list of layers", path);
        size_t i;
        const json_t *v;
        json_array_foreach(ml, i, v) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= c->n_layers ||
                n_only >= CONFIG_MAX_LAYERS)
                return errf(err, "%s: key 'mlp_only_layers' entry %zu is not a layer index below %d", path, i,
                            c->n_layers);
            only[n_only++] = (int)json_integer_value(v);
        }
    }
    config_set_experts(c, step, only, n_only);
    return 0;
}

/* An optional integer key whose null means 0 (transformers' None disables the feature). */
static int json_int_or_null(const json_t *root, const char *key, int dflt, int *out, const char *path, char *err) {
    const json_t *v = json_object_get(root, key);
    if (v && json_is_null(v)) {
        *out = 0;
        return 0;
    }
    return json_int_key(root, key, 0, dflt, out, path, err);
}

/* KEY_PER_LAYER (Gemma 4, Gemma4TextConfig's defaults): each layer's head_dim and kv heads from
 * per_layer_config, else global_head_dim (512) and, with attention_k_eq_v, num_global_key_value_heads on
 * the full layers; the last layer full whatever layer_types says (as transformers forces it); the
 * kv-shared layers and their producers; double-wide MLPs on those; the per-layer inputs; the full
 * layers' "proportional" RoPE (rope_parameters.full_attention). */
static int json_per_layer(const json_t *root, model_config *c, const char *path, char *err) {
    if (!(c->family->keys & KEY_PER_LAYER)) return 0;
    int ghd, gkv, keqv, wide, moe;
    if (json_int_key(root, "global_head_dim", 1, 512, &ghd, path, err) ||
        json_int_or_null(root, "num_global_key_value_heads", 0, &gkv, path, err) ||
        json_bool_key(root, "attention_k_eq_v", 0, &keqv, path, err) ||
        json_bool_key(root, "use_double_wide_mlp", 0, &wide, path, err) ||
        json_bool_key(root, "enable_moe_block", 0, &moe, path, err) ||
        json_int_or_null(root, "num_kv_shared_layers", 0, &c->n_kv_shared, path, err) ||
        json_int_or_null(root, "hidden_size_per_layer_input", 256, &c->ple_dim, path, err) ||
        json_int_key(root, "vocab_size_per_layer_input", 1, 262144, &c->ple_vocab, path, err))
        return -1;
    if (moe) return errf(err, "%s: unsupported 'enable_moe_block': true (Gemma 4's expert block)", path);
    const json_t *bi = get(root, "use_bidirectional_attention");
    if (bi) return errf(err, "%s: unsupported 'use_bidirectional_attention' (non-causal attention)", path);
    int L = c->n_layers;
    c->layer_flags[L - 1] &= (uint8_t)~LAYER_SLIDING;
    const json_t *plc = get(root, "per_layer_config");
    if (plc && !json_is_object(plc)) return errf(err, "%s: key 'per_layer_config' must be an object", path);
    for (int l = 0; l < L; l++) {
        int full = !(c->layer_flags[l] & LAYER_SLIDING);
        c->layer_head_dim[l] = (uint16_t)(!plc && full ? ghd : c->head_dim);
        c->layer_kv_heads[l] = (uint16_t)(!plc && full && keqv && gkv ? gkv : c->n_kv_heads);
        c->layer_hidden[l] = c->hidden_dim;
        if (full && keqv) c->layer_flags[l] |= LAYER_K_EQ_V;
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)plc, key, v) {
        char *end;
        long l = strtol(key, &end, 10);
        if (*end || end == key || l < 0 || l >= L || !json_is_object(v))
            return errf(err, "%s: key 'per_layer_config.%s' must be a layer index below %d holding an object", path,
                        key, L);
        const char *attr;
        const json_t *av;
        json_object_foreach((json_t *)v, attr, av) {
            int x;
            if (strcmp(attr, "head_dim") && strcmp(attr, "num_key_value_heads"))
                return errf(err, "%s: unsupported per_layer_config.%s.%s (head_dim and num_key_value_heads are read)",
                            path, key, attr);
            if (json_int_key(v, attr, 1, 0, &x, path, err)) return -1;
            if (x > 65535) return errf(err, "%s: per_layer_config.%s.%s %d out of range", path, key, attr, x);
            if (!strcmp(attr, "head_dim")) c->layer_head_dim[l] = (uint16_t)x;
            else c->layer_kv_heads[l] = (uint16_t)x;
        }
    }
    c->per_layer = 1;
    if (config_set_kv_sharing(c, path, "num_kv_shared_layers", err)) return -1;
    int hd_full = 0, hd_swa = 0, ff = c->hidden_dim;
    for (int l = 0; l < L; l++) {
        int slide = c->layer_flags[l] & LAYER_SLIDING, *hd = slide ? &hd_swa : &hd_full;
        if (*hd && *hd != c->layer_head_dim[l])
            return errf(err, "%s: layer %d's head_dim %d differs from another %s layer's %d (one RoPE table per "
                        "type)", path, l, c->layer_head_dim[l], slide ? "sliding" : "full", *hd);
        *hd = c->layer_head_dim[l];
        if (wide && (c->layer_flags[l] & LAYER_KV_SHARED)) c->layer_hidden[l] = 2 * ff;
        if (c->layer_kv_heads[l] > c->n_kv_heads) c->n_kv_heads = c->layer_kv_heads[l];
        if (c->layer_hidden[l] > c->hidden_dim) c->hidden_dim = c->layer_hidden[l];
    }
    c->head_dim_swa = hd_swa ? hd_swa : c->head_dim;
    c->head_dim = c->rot_dim = hd_full;
    if (c->ple_dim) c->flags |= ARCH_PER_LAYER_INPUT;
    /* rope_parameters.full_attention: proportional (rotated pairs int(p * hd // 2)) or default */
    const json_t *rp = get(get(root, "rope_parameters"), "full_attention");
    const json_t *type = get(rp, "rope_type");
    const char *t = json_is_string(type) ? json_string_value(type) : rp ? "default" : "proportional";
    double prf, factor;
    if (json_num_key(rp, "partial_rotary_factor", 0, rp ? 1.0 : 0.25, &prf, "rope_parameters.full_attention.", path, err) ||
        json_num_key(rp, "factor", 0, 1.0, &factor, "rope_parameters.full_attention.", path, err))
        return -1;
    if (strcmp(t, "proportional") && (strcmp(t, "default") || prf != 1.0))
        return errf(err, "%s: unsupported rope_parameters.full_attention.rope_type '%s' (proportional and default "
                    "are supported)", path, t);
    if (factor != 1.0 || !(prf > 0 && prf <= 1))
        return errf(err, "%s: unsupported rope_parameters.full_attention factor %g / partial_rotary_factor %g", path,
                    factor, prf);
    c->rope_pairs = (int)floor(prf * hd_full / 2);
    if (c->rope_pairs == hd_full / 2) c->rope_pairs = 0;
    return 0;
}

/* One MLX quantization setting ({"group_size", "bits", optional "mode"}); `where` names
 * it in messages. Only affine 4- and 8-bit with groups of 32, 64 or 128 are read. */
static int json_quant_entry(const json_t *q, const char *where, int *bits, int *group,
                            const char *path, char *err) {
    const json_t *mode = get(q, "mode");
    if (mode && (!json_is_string(mode) || strcmp(json_string_value(mode), "affine")))
        return errf(err, "%s: unsupported %s.mode '%s' (affine is supported)", path, where,
                    json_is_string(mode) ? json_string_value(mode) : "?");
    const json_t *b = get(q, "bits"), *g = get(q, "group_size");
    if (!b || !g) return errf(err, "%s: %s needs 'bits' and 'group_size'", path, where);
    json_int_t bv = json_is_integer(b) ? json_integer_value(b) : -1;
    json_int_t gv = json_is_integer(g) ? json_integer_value(g) : -1;
    if (bv != 4 && bv != 8)
        return errf(err, "%s: unsupported %s.bits %lld (4 and 8 are supported)", path, where,
                    (long long)bv);
    if (gv != 32 && gv != 64 && gv != 128)
        return errf(err, "%s: unsupported %s.group_size %lld (32, 64 or 128)", path, where,
                    (long long)gv);
    *bits = (int)bv;
    *group = (int)gv;
    return 0;
}

/* mlx_lm writes "quantization" (and the same dict as "quantization_config"): defaults
 * plus per-layer entries keyed by module path, each a setting or false (not quantized).
 * A "quantization_config" with "quant_method" belongs to another scheme (GPTQ, AWQ, ...). */
static int json_quantization(const json_t *root, model_config *c, const char *path, char *err) {
    const json_t *q = get(root, "quantization");
    const char *where = "quantization";
    if (!q) {
        q = get(root, "quantization_config");
        where = "quantization_config";
        if (!q) return 0;
        const json_t *qm = get(q, "quant_method");
        /* OpenAI's MXFP4 experts (*_blocks / *_scales), read by the loader (ARCH_EXPERT_BIAS families) */
        if (json_is_string(qm) && !strcmp(json_string_value(qm), "mxfp4") && (c->flags & ARCH_EXPERT_BIAS)) return 0;
        if (qm)
            return errf(err, "%s: unsupported quantization_config.quant_method '%s' (MLX affine "
                        "checkpoints are supported)", path, json_is_string(qm) ? json_string_value(qm) : "?");
    }
    if (!json_is_object(q)) return errf(err, "%s: key '%s' must be an object", path, where);
    if (json_quant_entry(q, where, &c->quant_bits, &c->quant_group, path, err)) return -1;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)q, key, v) {
        if (json_is_object(v)) {
            char w[160];
            int b, g;
            snprintf(w, sizeof w, "%s[%s]", where, key);
            if (json_quant_entry(v, w, &b, &g, path, err)) return -1;
        }
    }
    return 0;
}

int config_from_json(const char *path, model_config *c, char *err) {
    config_defaults(c);
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return errf(err, "%s: not valid JSON (line %d, column %d): %s", path, je.line, je.column,
                    je.text);
    int rc = json_is_object(root) ? 0 : errf(err, "%s: expected a JSON object", path);
    /* a multimodal wrapper (Qwen3.5's published checkpoints: model_type qwen3_5) whose text_config is a
     * family of the table: the text model is read from it; a tie_word_embeddings of the wrapper wins */
    json_t *top = root, *text = json_object_get(root, "text_config"), *mt = json_object_get(root, "model_type");
    const json_t *tmt = json_is_object(text) ? json_object_get(text, "model_type") : NULL;
    if (!rc && json_is_object(text) && json_is_string(tmt) && arch_by_model_type(json_string_value(tmt)) &&
        !(json_is_string(mt) && arch_by_model_type(json_string_value(mt))))
        root = text;
    if (!rc) rc = check_arch(root, c, path, err);
    if (!rc) rc = check_unsupported(root, c, path, err);
    if (!rc) rc = json_sizes(root, c, path, err);
    if (!rc && c->n_layers > CONFIG_MAX_LAYERS)
        rc = errf(err, "%s: %d layers, at most %d are supported", path, c->n_layers, CONFIG_MAX_LAYERS);
    if (!rc) rc = json_rope(root, c, path, err);
    if (!rc) rc = json_layers(root, c, path, err);
    if (!rc) rc = json_per_layer(root, c, path, err);
    if (!rc) rc = json_experts(root, c, path, err);
    if (!rc) rc = json_token_ids(root, c, path, err);
    if (!rc) rc = json_quantization(root, c, path, err);
    if (!rc && root != top && get(top, "tie_word_embeddings"))
        rc = json_bool_key(top, "tie_word_embeddings", 0, &c->tied_embeddings, path, err);
    if (c->flags & ARCH_UNIT_SCALE) c->attn_scale = 1.0f;
    json_decref(top);
    return rc;
}
