/* config.c - Llama hyperparameters from a Hugging Face config.json or from GGUF
 * metadata, into one model_config.
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
 * Defaults are LlamaConfig's (transformers 5.23): num_key_value_heads = heads,
 * head_dim = hidden / heads, max_position_embeddings 2048, rms_norm_eps 1e-6,
 * tie_word_embeddings false, bos 1, eos 2, hidden_act silu. The five size keys
 * (hidden_size, num_hidden_layers, num_attention_heads, intermediate_size,
 * vocab_size) are required even though LlamaConfig has defaults for them: a
 * checkpoint without them would silently take Llama-7B's sizes. */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* Upper bounds for config_validate: far above any Llama checkpoint, low enough
 * that products such as layers * kv_heads * head_dim * max_pos stay in 64 bits. */
#define MAX_DIM (1 << 16)
#define MAX_LAYERS 1024
#define MAX_HEADS 1024
#define MAX_HEAD_DIM 1024
#define MAX_HIDDEN (1 << 20)
#define MAX_VOCAB (1 << 24)
#define MAX_POS (1 << 24)

static void set_defaults(model_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->arch, sizeof c->arch, "llama");
    c->rope_theta = 10000.0f;
    c->rope_scaling = ROPE_SCALING_NONE;
    c->rope_factor = 1.0f;
    c->bos_id = -1;
}

/* ---- config.json ----------------------------------------------------------------- */

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

static int check_arch(const json_t *root, const char *path, char *err) {
    const json_t *mt = get(root, "model_type");
    if (mt) {
        if (!json_is_string(mt)) return errf(err, "%s: key 'model_type' must be a string", path);
        if (strcmp(json_string_value(mt), "llama"))
            return errf(err, "%s: unsupported architecture '%s' (model_type), expected llama", path,
                        json_string_value(mt));
        return 0;
    }
    const json_t *archs = get(root, "architectures");
    if (!archs) return errf(err, "%s: missing required key 'model_type'", path);
    size_t i;
    const json_t *a;
    json_array_foreach(archs, i, a)
        if (json_is_string(a) && !strcmp(json_string_value(a), "LlamaForCausalLM")) return 0;
    a = json_array_get(archs, 0);
    return errf(err, "%s: unsupported architecture '%s', expected LlamaForCausalLM", path,
                json_is_string(a) ? json_string_value(a) : "?");
}

/* Features of the Llama family that llmgen does not implement: refuse them
 * rather than compute something else. */
static int check_unsupported(const json_t *root, const char *path, char *err) {
    const json_t *act = get(root, "hidden_act");
    if (act && (!json_is_string(act) || strcmp(json_string_value(act), "silu")))
        return errf(err, "%s: unsupported hidden_act '%s', expected silu", path,
                    json_is_string(act) ? json_string_value(act) : "?");
    static const char *bias_keys[] = {"attention_bias", "mlp_bias"};
    for (int i = 0; i < 2; i++) {
        int b;
        if (json_bool_key(root, bias_keys[i], 0, &b, path, err)) return -1;
        if (b) return errf(err, "%s: unsupported '%s': true (Llama without biases only)", path,
                           bias_keys[i]);
    }
    return 0;
}

static int json_token_ids(const json_t *root, model_config *c, const char *path, char *err) {
    json_t *bos = json_object_get(root, "bos_token_id");
    if (!bos) c->bos_id = 1; /* LlamaConfig's default */
    else if (json_is_null(bos)) c->bos_id = -1;
    else if (json_int_key(root, "bos_token_id", 0, 0, &c->bos_id, path, err)) return -1;

    json_t *eos = json_object_get(root, "eos_token_id");
    if (!eos) {
        c->n_eos = 1;
        c->eos_ids[0] = 2; /* LlamaConfig's default */
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
    if (orig != floor(orig) || orig < 1 || orig > MAX_POS)
        return errf(err, "%s: key '%soriginal_max_position_embeddings' must be a positive integer",
                    path, top ? "" : where);
    c->rope_scaling = ROPE_SCALING_LLAMA3;
    c->rope_factor = (float)f;
    c->rope_low_freq_factor = (float)lo;
    c->rope_high_freq_factor = (float)hi;
    c->rope_orig_max_pos = (int)orig;
    return 0;
}

static int json_rope(const json_t *root, model_config *c, const char *path, char *err) {
    const json_t *rp = get(root, "rope_scaling");
    const char *where = "rope_scaling.";
    if (!rp || (json_is_object(rp) && json_object_size(rp) == 0)) {
        rp = get(root, "rope_parameters");
        where = "rope_parameters.";
    }
    if (rp && !json_is_object(rp))
        return errf(err, "%s: key '%.*s' must be an object", path, (int)strlen(where) - 1, where);
    double theta;
    if (json_num_key(root, "rope_theta", 0, 10000.0, &theta, "", path, err) ||
        json_num_key(rp, "rope_theta", 0, theta, &theta, where, path, err))
        return -1;
    c->rope_theta = (float)theta;
    double prf;
    if (json_num_key(rp, "partial_rotary_factor", 0, 1.0, &prf, where, path, err) ||
        json_num_key(root, "partial_rotary_factor", 0, prf, &prf, "", path, err))
        return -1;
    if (prf != 1.0) return errf(err, "%s: unsupported partial_rotary_factor %g", path, prf);
    const json_t *type = get(rp, "rope_type");
    if (!type) type = get(rp, "type");
    if (!type) return 0;
    if (!json_is_string(type)) return errf(err, "%s: key '%srope_type' must be a string", path, where);
    const char *t = json_string_value(type);
    if (!strcmp(t, "default")) return 0;
    if (!strcmp(t, "llama3")) return json_rope_llama3(root, rp, where, c, path, err);
    return errf(err, "%s: unsupported %srope_type '%s' (default and llama3 are supported)", path,
                where, t);
}

static int json_sizes(const json_t *root, model_config *c, const char *path, char *err) {
    if (json_int_key(root, "hidden_size", 1, 0, &c->dim, path, err) ||
        json_int_key(root, "num_hidden_layers", 1, 0, &c->n_layers, path, err) ||
        json_int_key(root, "num_attention_heads", 1, 0, &c->n_heads, path, err) ||
        json_int_key(root, "intermediate_size", 1, 0, &c->hidden_dim, path, err) ||
        json_int_key(root, "vocab_size", 1, 0, &c->vocab_size, path, err) ||
        json_int_key(root, "num_key_value_heads", 1, c->n_heads, &c->n_kv_heads, path, err) ||
        json_int_key(root, "head_dim", 1, c->dim / c->n_heads, &c->head_dim, path, err) ||
        json_int_key(root, "max_position_embeddings", 1, 2048, &c->max_pos, path, err))
        return -1;
    double eps = 0;
    if (json_num_key(root, "rms_norm_eps", 0, 1e-6, &eps, "", path, err)) return -1;
    c->rms_eps = (float)eps;
    return json_bool_key(root, "tie_word_embeddings", 0, &c->tied_embeddings, path, err);
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
    set_defaults(c);
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return errf(err, "%s: not valid JSON (line %d, column %d): %s", path, je.line, je.column,
                    je.text);
    int rc = json_is_object(root) ? 0 : errf(err, "%s: expected a JSON object", path);
    if (!rc) rc = check_arch(root, path, err);
    if (!rc) rc = check_unsupported(root, path, err);
    if (!rc) rc = json_sizes(root, c, path, err);
    if (!rc) rc = json_rope(root, c, path, err);
    if (!rc) rc = json_token_ids(root, c, path, err);
    if (!rc) rc = json_quantization(root, c, path, err);
    json_decref(root);
    return rc;
}

/* ---- GGUF metadata --------------------------------------------------------------- */

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

static int gguf_check_arch(const gguf_file *g, char *err) {
    gguf_str a;
    if (gguf_get_str(g, "general.architecture", &a))
        return errf(err, "%s: missing required key 'general.architecture'", gguf_path(g));
    if (a.len != 5 || memcmp(a.ptr, "llama", 5)) {
        int n = a.len > 64 ? 64 : (int)a.len;
        return errf(err, "%s: unsupported architecture '%.*s', expected llama", gguf_path(g), n, a.ptr);
    }
    return 0;
}

static int gguf_head_dim(const gguf_file *g, model_config *c, char *err) {
    int kl = 0, vl = 0, rd = 0;
    if (gguf_pos_int(g, "llama.attention.key_length", c->dim / c->n_heads, &kl, err) ||
        gguf_pos_int(g, "llama.attention.value_length", kl, &vl, err) ||
        gguf_pos_int(g, "llama.rope.dimension_count", kl, &rd, err))
        return -1;
    /* Without key_length, rope.dimension_count is the head size in llama files. */
    if (!gguf_has_key(g, "llama.attention.key_length") && gguf_has_key(g, "llama.rope.dimension_count"))
        kl = vl = rd;
    if (vl != kl)
        return errf(err, "%s: llama.attention.value_length %d != key_length %d (unsupported)",
                    gguf_path(g), vl, kl);
    if (rd != kl)
        return errf(err, "%s: llama.rope.dimension_count %d != head size %d: partial rotary "
                    "embeddings are not supported", gguf_path(g), rd, kl);
    c->head_dim = kl;
    return 0;
}

static int gguf_vocab(const gguf_file *g, model_config *c, char *err) {
    gguf_type et;
    uint64_t n;
    const void *data;
    const tensor *emb = gguf_find_tensor(g, "token_embd.weight");
    if (gguf_has_key(g, "llama.vocab_size"))
        return gguf_pos_int(g, "llama.vocab_size", 0, &c->vocab_size, err);
    if (!gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, &data) && n > 0 && n <= INT32_MAX) {
        c->vocab_size = (int)n;
        return 0;
    }
    if (emb && emb->ndim == 2 && emb->shape[0] <= INT32_MAX) {
        c->vocab_size = (int)emb->shape[0];
        return 0;
    }
    return errf(err, "%s: no llama.vocab_size, tokenizer.ggml.tokens or token_embd.weight to "
                "size the vocabulary", gguf_path(g));
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

int config_from_gguf(const gguf_file *g, model_config *c, char *err) {
    set_defaults(c);
    if (gguf_check_arch(g, err)) return -1;
    if (gguf_pos_int(g, "llama.embedding_length", 0, &c->dim, err) ||
        gguf_pos_int(g, "llama.block_count", 0, &c->n_layers, err) ||
        gguf_pos_int(g, "llama.attention.head_count", 0, &c->n_heads, err) ||
        gguf_pos_int(g, "llama.attention.head_count_kv", c->n_heads, &c->n_kv_heads, err) ||
        gguf_pos_int(g, "llama.feed_forward_length", 0, &c->hidden_dim, err) ||
        gguf_pos_int(g, "llama.context_length", 0, &c->max_pos, err) ||
        gguf_float_key(g, "llama.attention.layer_norm_rms_epsilon", 1, 0, &c->rms_eps, err) ||
        gguf_float_key(g, "llama.rope.freq_base", 0, 10000.0, &c->rope_theta, err))
        return -1;
    if (gguf_head_dim(g, c, err) || gguf_vocab(g, c, err) || gguf_token_ids(g, c, err)) return -1;
    /* Rope scaling stays NONE: llama3-scaled GGUFs carry the factors as a
     * `rope_freqs.weight` tensor, which the model applies directly. */
    c->tied_embeddings = gguf_find_tensor(g, "output.weight") == NULL;
    c->rope_interleaved = 1;
    return 0;
}

/* ---- validation ------------------------------------------------------------------ */

static int in_range(int v, int hi) { return v >= 1 && v <= hi; }

int config_validate(const model_config *c, const char *source, char *err) {
    const struct {
        const char *name;
        int v, hi;
    } sizes[] = {
        {"hidden size", c->dim, MAX_DIM},           {"layer count", c->n_layers, MAX_LAYERS},
        {"head count", c->n_heads, MAX_HEADS},      {"kv head count", c->n_kv_heads, MAX_HEADS},
        {"head_dim", c->head_dim, MAX_HEAD_DIM},    {"intermediate size", c->hidden_dim, MAX_HIDDEN},
        {"vocab size", c->vocab_size, MAX_VOCAB},   {"max positions", c->max_pos, MAX_POS},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!in_range(sizes[i].v, sizes[i].hi))
            return errf(err, "%s: %s %d out of range, expected 1..%d", source, sizes[i].name,
                        sizes[i].v, sizes[i].hi);
    if (c->n_heads % c->n_kv_heads)
        return errf(err, "%s: %d attention heads are not a multiple of %d kv heads", source,
                    c->n_heads, c->n_kv_heads);
    if (c->head_dim % 2) return errf(err, "%s: head_dim %d must be even for RoPE", source, c->head_dim);
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
