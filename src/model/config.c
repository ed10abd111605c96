/* config.c - what the two config readers share: a model_config's starting values, its
 * family's row, the one rule for which layers slide and skip RoPE, and the validation
 * every model passes. The readers are config_json.c (Hugging Face config.json) and
 * config_gguf.c (GGUF metadata); the families' facts are the rows of arch.c. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llmgen.h" /* LLMGEN_MAX_CONTEXT */
#include "base/util.h"

/* Upper bounds for config_validate: far above any Llama checkpoint, low enough
 * that products such as layers * kv_heads * head_dim * max_pos stay in 64 bits. */
#define MAX_DIM (1 << 16)
#define MAX_HEADS 1024
#define MAX_HEAD_DIM 1024
#define MAX_HIDDEN (1 << 20)
#define MAX_VOCAB (1 << 24)
#define MAX_EXPERTS 4096

void config_defaults(model_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->arch, sizeof c->arch, "llama");
    c->rope_theta = 10000.0f;
    c->rope_scaling = ROPE_SCALING_NONE;
    c->rope_factor = 1.0f;
    c->rope_attn_factor = 1.0f;
    c->swiglu_alpha = 1.702f;
    c->swiglu_limit = 7.0f;
    c->residual_mult = 1.0f;
    c->logit_div = 1.0f;
    c->moe_scale = 1.0f;
    c->bos_id = -1;
}

void config_set_family(model_config *c, const arch_info *a) {
    snprintf(c->arch, sizeof c->arch, "%s", a->name);
    c->family = a;
    c->flags = a->flags;
    c->act = a->act;
}

/* ---- the one layer rule ------------------------------------------------------------ */

void config_set_layers(model_config *c, const config_layer_spec *s) {
    const arch_info *a = c->family;
    c->n_linear = 0;
    if (a->slide == SLIDE_NONE) c->sliding_window = 0;
    for (int l = 0; l < c->n_layers && l < CONFIG_MAX_LAYERS; l++) {
        int no_rope = s->no_rope ? s->no_rope[l] != 0 : (a->keys & KEY_NO_ROPE) && (l + 1) % s->no_rope_interval == 0;
        int slide = 0;
        if (s->slides) {
            slide = s->slides[l] != 0;
        } else {
            switch (a->slide) {
            case SLIDE_NONE: break;
            case SLIDE_ALL: slide = 1; break;
            case SLIDE_FROM_MAX: slide = l >= s->max_window_layers; break;
            case SLIDE_PATTERN: slide = (l + 1) % s->pattern != 0; break;
            case SLIDE_NO_ROPE: slide = no_rope; break;
            case SLIDE_EVEN: slide = l % 2 == 0; break;
            }
        }
        int linear = 0;
        if (a->flags & ARCH_GATED_DELTANET)
            linear = s->linear ? s->linear[l] != 0 : (l + 1) % (s->full_interval > 0 ? s->full_interval : 4) != 0;
        if (a->flags & ARCH_SHORT_CONV) linear = s->linear && s->linear[l]; /* no list: all attention */
        c->layer_flags[l] = (uint8_t)((slide && c->sliding_window ? LAYER_SLIDING : 0) | (no_rope ? LAYER_NO_ROPE : 0) |
                                      (linear ? LAYER_LINEAR : 0));
        c->n_linear += linear;
    }
}

void config_set_experts(model_config *c, int sparse_step, const int *mlp_only, int n_mlp_only) {
    c->moe = arch_moe(c->family);
    for (int l = 0; l < c->n_layers && l < CONFIG_MAX_LAYERS; l++) {
        int dense = !c->moe || c->n_experts < 1 || sparse_step < 1 || (l + 1) % sparse_step != 0;
        for (int i = 0; i < n_mlp_only; i++) dense |= mlp_only[i] == l;
        if (!dense) c->layer_flags[l] |= LAYER_MOE;
    }
}

/* ---- YaRN ------------------------------------------------------------------------- */

static double yarn_mscale(double s, double m) { return s <= 1 ? 1.0 : 0.1 * m * log(s) + 1.0; }

/* the dimension (of rot_dim) where a frequency makes n rotations over the original context, in double
 * as Python's math computes it */
static double yarn_dim(const model_config *c, double n, int orig) {
    return c->rot_dim * log(orig / (n * 2 * M_PI)) / (2 * log((double)c->rope_theta));
}

void config_set_yarn(model_config *c, double factor, double beta_fast, double beta_slow, int orig, int truncate,
                     double attn, double mscale, double mscale_all_dim) {
    double lo = yarn_dim(c, beta_fast, orig), hi = yarn_dim(c, beta_slow, orig);
    if (truncate) lo = floor(lo), hi = ceil(hi);
    c->rope_scaling = ROPE_SCALING_YARN;
    c->rope_factor = (float)factor;
    c->rope_orig_max_pos = orig;
    c->yarn_low = lo > 0 ? lo : 0;
    c->yarn_high = hi < c->rot_dim - 1 ? hi : c->rot_dim - 1;
    if (!(attn > 0))
        attn = mscale > 0 && mscale_all_dim > 0 ? yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim)
                                                : yarn_mscale(factor, 1.0);
    c->rope_attn_factor = (float)attn;
}

/* ---- per-layer shapes (KEY_PER_LAYER) --------------------------------------------------- */

const model_config *config_layer_view(const model_config *c, int l, model_config *buf) {
    if (!c->per_layer) return c;
    *buf = *c;
    buf->head_dim = c->layer_head_dim[l];
    buf->n_kv_heads = c->layer_kv_heads[l];
    buf->hidden_dim = c->layer_hidden[l];
    buf->rot_dim = c->layer_flags[l] & LAYER_SLIDING ? c->head_dim_swa : c->rot_dim;
    return buf;
}

int config_set_kv_sharing(model_config *c, const char *source, const char *key, char *err) {
    int first = c->n_layers - c->n_kv_shared;
    if (c->n_kv_shared < 0 || first < 1)
        return errf(err, "%s: %s %d of %d layers, expected fewer than the layer count", source, key, c->n_kv_shared,
                    c->n_layers);
    for (int l = 0; l < c->n_layers; l++) {
        c->kv_source[l] = (int16_t)l;
        if (l < first) continue;
        int slide = c->layer_flags[l] & LAYER_SLIDING, p = first - 1;
        while (p >= 0 && (c->layer_flags[p] & LAYER_SLIDING) != slide) p--;
        if (p < 0)
            return errf(err, "%s: kv-shared layer %d (%s %d; %s attention) has no earlier %s layer to read its keys "
                        "and values from", source, l, key, c->n_kv_shared, slide ? "sliding" : "full",
                        slide ? "sliding" : "full");
        if (c->per_layer && (c->layer_head_dim[p] != c->layer_head_dim[l] || c->layer_kv_heads[p] != c->layer_kv_heads[l]))
            return errf(err, "%s: kv-shared layer %d (head_dim %d, %d kv heads) differs from the layer %d it reads "
                        "(head_dim %d, %d kv heads)", source, l, c->layer_head_dim[l], c->layer_kv_heads[l], p,
                        c->layer_head_dim[p], c->layer_kv_heads[p]);
        c->kv_source[l] = (int16_t)p;
        c->layer_flags[l] = (uint8_t)((c->layer_flags[l] | LAYER_KV_SHARED) & ~LAYER_K_EQ_V);
    }
    return 0;
}

/* ---- validation ------------------------------------------------------------------ */

static int in_range(int v, int hi) { return v >= 1 && v <= hi; }

int config_validate(const model_config *c, const char *source, char *err) {
    const struct {
        const char *name;
        int v, hi;
    } sizes[] = {
        {"hidden size", c->dim, MAX_DIM},           {"layer count", c->n_layers, CONFIG_MAX_LAYERS},
        {"head count", c->n_heads, MAX_HEADS},      {"kv head count", c->n_kv_heads, MAX_HEADS},
        {"head_dim", c->head_dim, MAX_HEAD_DIM},    {"intermediate size", c->hidden_dim, MAX_HIDDEN},
        {"vocab size", c->vocab_size, MAX_VOCAB},   {"max positions", c->max_pos, LLMGEN_MAX_CONTEXT},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!in_range(sizes[i].v, sizes[i].hi))
            return errf(err, "%s: %s %d out of range, expected 1..%d", source, sizes[i].name,
                        sizes[i].v, sizes[i].hi);
    if (c->n_heads % c->n_kv_heads)
        return errf(err, "%s: %d attention heads are not a multiple of %d kv heads", source,
                    c->n_heads, c->n_kv_heads);
    if (c->head_dim % 2) return errf(err, "%s: head_dim %d must be even for RoPE", source, c->head_dim);
    if (c->rot_dim < 2 || c->rot_dim > c->head_dim || c->rot_dim % 2)
        return errf(err, "%s: %d rotary dimensions, expected an even number in 2..head_dim %d", source, c->rot_dim,
                    c->head_dim);
    if (c->sliding_window < 0) return errf(err, "%s: sliding window %d is negative", source, c->sliding_window);
    if (!(c->attn_scale >= 0 && isfinite(c->attn_scale)) || !(c->final_softcap >= 0 && isfinite(c->final_softcap)) ||
        !(c->embed_mult >= 0 && isfinite(c->embed_mult)) || !(c->residual_mult > 0 && isfinite(c->residual_mult)) ||
        !(c->logit_div > 0 && isfinite(c->logit_div)))
        return errf(err, "%s: attention scale, multipliers, logit scale and soft-cap must be finite and positive",
                    source);
    if (!(c->rope_theta_swa >= 0 && isfinite(c->rope_theta_swa)) ||
        !(c->rope_attn_factor > 0 && isfinite(c->rope_attn_factor)))
        return errf(err, "%s: the sliding layers' rope base and the rope attention factor must be positive", source);
    if ((c->rope_scaling == ROPE_SCALING_LINEAR && !(c->rope_factor > 0 && isfinite(c->rope_factor))) ||
        (c->rope_scaling == ROPE_SCALING_LONGROPE && c->rope_orig_max_pos < 1) ||
        (c->rope_scaling == ROPE_SCALING_YARN &&
         !(c->rope_factor > 0 && isfinite(c->rope_factor) && c->rope_orig_max_pos > 0 && isfinite(c->yarn_low) &&
           isfinite(c->yarn_high))))
        return errf(err, "%s: rope scaling needs a positive factor (linear, yarn) and original context (longrope, yarn)",
                    source);
    if (!(c->rms_eps > 0 && c->rms_eps < 1))
        return errf(err, "%s: rms_norm_eps %g must be in (0, 1)", source, c->rms_eps);
    if (!(c->rope_theta > 0 && isfinite(c->rope_theta)))
        return errf(err, "%s: rope_theta %g must be positive", source, c->rope_theta);
    if (c->rope_scaling == ROPE_SCALING_LLAMA3 &&
        !(c->rope_factor > 0 && isfinite(c->rope_factor) && c->rope_low_freq_factor > 0 &&
          c->rope_high_freq_factor > c->rope_low_freq_factor &&
          isfinite(c->rope_high_freq_factor) && c->rope_orig_max_pos > 0))
        return errf(err, "%s: llama3 rope scaling needs factor > 0, 0 < low_freq_factor < "
                    "high_freq_factor and original_max_position_embeddings > 0", source);
    if (c->n_linear && (c->flags & ARCH_SHORT_CONV) && !in_range(c->lin_conv, 64))
        return errf(err, "%s: short conv kernel %d out of range, expected 1..64", source, c->lin_conv);
    for (int l = 0; c->per_layer && l < c->n_layers; l++) {
        int hd = c->layer_head_dim[l], kvh = c->layer_kv_heads[l], ff = c->layer_hidden[l];
        if (!in_range(hd, MAX_HEAD_DIM) || hd % 2 || !in_range(kvh, MAX_HEADS) || c->n_heads % kvh ||
            !in_range(ff, MAX_HIDDEN))
            return errf(err, "%s: layer %d: head_dim %d, %d kv heads or intermediate size %d out of range (an even "
                        "head_dim, kv heads dividing %d heads)", source, l, hd, kvh, ff, c->n_heads);
    }
    if (c->per_layer && (c->rope_pairs < 0 || c->rope_pairs > c->rot_dim / 2 || c->head_dim_swa < 2 ||
                         c->head_dim_swa > c->rot_dim))
        return errf(err, "%s: %d rotated pairs of %d, or sliding head_dim %d above the full layers' %d", source,
                    c->rope_pairs, c->rot_dim / 2, c->head_dim_swa, c->rot_dim);
    if (c->n_linear && !(c->flags & ARCH_SHORT_CONV)) {
        const struct {
            const char *name;
            int v, hi;
        } lin[] = {
            {"linear conv kernel", c->lin_conv, 64},     {"linear key head dim", c->lin_dk, MAX_HEAD_DIM},
            {"linear value head dim", c->lin_dv, MAX_HEAD_DIM}, {"linear key heads", c->lin_hk, MAX_HEADS},
            {"linear value heads", c->lin_hv, MAX_HEADS},
        };
        for (size_t i = 0; i < sizeof lin / sizeof lin[0]; i++)
            if (!in_range(lin[i].v, lin[i].hi))
                return errf(err, "%s: %s %d out of range, expected 1..%d", source, lin[i].name, lin[i].v, lin[i].hi);
        if (c->lin_hv % c->lin_hk)
            return errf(err, "%s: %d linear value heads are not a multiple of %d linear key heads", source, c->lin_hv,
                        c->lin_hk);
    }
    if (c->moe) {
        if (!in_range(c->n_experts, MAX_EXPERTS))
            return errf(err, "%s: expert count %d out of range, expected 1..%d", source, c->n_experts, MAX_EXPERTS);
        if (!in_range(c->n_experts_used, c->n_experts < MOE_MAX_USED ? c->n_experts : MOE_MAX_USED))
            return errf(err, "%s: %d experts used per token, expected 1..%d (the expert count %d, at most %d)",
                        source, c->n_experts_used, c->n_experts < MOE_MAX_USED ? c->n_experts : MOE_MAX_USED,
                        c->n_experts, MOE_MAX_USED);
        if (!in_range(c->expert_dim, MAX_HIDDEN) || c->shared_dim < 0 || c->shared_dim > MAX_HIDDEN)
            return errf(err, "%s: expert width %d or shared expert width %d out of range", source, c->expert_dim,
                        c->shared_dim);
    }
    if (c->bos_id < -1 || c->bos_id >= c->vocab_size)
        return errf(err, "%s: bos token id %d outside the vocabulary of %d", source, c->bos_id,
                    c->vocab_size);
    if (c->n_eos < 0 || c->n_eos > CONFIG_MAX_EOS)
        return errf(err, "%s: %d eos ids, expected 0..%d", source, c->n_eos, CONFIG_MAX_EOS);
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_ids[i] < 0 || c->eos_ids[i] >= c->vocab_size)
            return errf(err, "%s: eos token id %d outside the vocabulary of %d", source,
                        c->eos_ids[i], c->vocab_size);
    return 0;
}
