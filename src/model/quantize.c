/* quantize.c - `llmgen quantize`: a bf16 / f16 / f32 safetensors Llama checkpoint to an
 * MLX affine one (what `mlx_lm.convert -q` writes), so the same directory runs in
 * llmgen and in mlx-lm.
 *
 * What is quantized, as mlx_lm decides it: every 2-D ".weight" (the Linear and
 * Embedding layers of a Llama) whose input size is a multiple of the group size;
 * everything else is copied. As mlx_lm's Llama sanitize() does, rotary inv_freq
 * buffers are dropped, and so is lm_head.weight when the embeddings are tied. As
 * mlx_lm.convert does, a config.json "torch_dtype" of float16 / bfloat16 / float32 is
 * the dtype every float tensor is cast to first; otherwise each keeps its own.
 *
 * The arithmetic is mlx's CPU quantizer (mlx/backend/cpu/quantized.cpp, quantize()),
 * in f32 per group of g values:
 *   scale = max((max - min) / (2^bits - 1), 1e-7), negated unless |min| > |max|;
 *   edge = min if |min| > |max| else max; q0 = rint(edge / scale);
 *   if q0 != 0: scale = edge / q0, bias = edge; else bias = 0;
 *   q = clamp(rint((w - bias) / scale), 0, 2^bits - 1);
 * scale and bias are then rounded to the tensor's dtype. So the edge value of each
 * group is reproduced exactly and the scale may be negative.
 *
 * Output: OUT_DIR/model.safetensors (one file, tensors in name order, metadata
 * {"format": "mlx"}), config.json with "quantization" and "quantization_config"
 * ({"group_size", "bits", "mode": "affine"}; rope_scaling / rope_theta added beside a
 * transformers 5 rope_parameters, see add_rope_compat), and the tokenizer / generation
 * files copied. OUT_DIR must not exist yet. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmgen.h"
#include "formats/safetensors.h"
#include "base/util.h"

/* One output tensor: a copy (maybe cast) of an input one, or one of the three
 * parts of a quantized one. */
typedef enum { OUT_COPY, OUT_Q, OUT_SCALES, OUT_BIASES } out_kind;

typedef struct {
    char name[256];
    out_kind kind;
    const tensor *src;   /* the input tensor it comes from */
    dtype type;          /* written dtype: U32 for OUT_Q, else the float dtype */
    int64_t shape[TENSOR_MAX_DIMS];
    int ndim;
    size_t nbytes, offset;
} out_tensor;

typedef struct {
    int bits, group;
    int cast;            /* -1: keep each tensor's dtype; else the dtype to cast to */
    const char *in_dir;
    char *err;
} qjob;

static int cmp_out(const void *a, const void *b) {
    return strcmp(((const out_tensor *)a)->name, ((const out_tensor *)b)->name);
}

static int is_float(dtype t) { return t == DT_F32 || t == DT_F16 || t == DT_BF16; }

static size_t dsize(dtype t) { return t == DT_F32 || t == DT_U32 ? 4 : 2; }

static float load_f32(const tensor *t, size_t i) {
    const uint8_t *p = t->data;
    if (t->type == DT_F32) {
        float v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    uint16_t h = rd_u16(p + 2 * i);
    return t->type == DT_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

static void store(uint8_t *p, dtype t, size_t i, float v) {
    if (t == DT_F32) {
        memcpy(p + 4 * i, &v, 4);
        return;
    }
    uint16_t h = t == DT_F16 ? f32_to_f16(v) : f32_to_bf16(v);
    memcpy(p + 2 * i, &h, 2);
}

/* Value i of t after the optional cast to `to` (rounded there, read back as f32). */
static float value(const tensor *t, size_t i, dtype to) {
    float v = load_f32(t, i);
    if (to == t->type || to == DT_F32) return v;
    return to == DT_F16 ? f16_to_f32(f32_to_f16(v)) : bf16_to_f32(f32_to_bf16(v));
}

/* mlx's quantize() for one group of g values (see the top of the file). */
static void quantize_group(const float *w, int g, int bits, uint8_t *q, float *scale_out,
                           float *bias_out) {
    float n_bins = (float)((1 << bits) - 1), eps = 1e-7f;
    float w_min = INFINITY, w_max = -INFINITY;
    for (int j = 0; j < g; j++) {
        w_max = fmaxf(w_max, w[j]);
        w_min = fminf(w_min, w[j]);
    }
    int mask = fabsf(w_min) > fabsf(w_max);
    float scale = fmaxf((w_max - w_min) / n_bins, eps);
    scale = mask ? scale : -scale;
    float edge = mask ? w_min : w_max;
    float q0 = rintf(edge / scale), bias = 0.0f;
    if (q0 != 0.0f) {
        scale = edge / q0;
        bias = edge;
    }
    int per_word = 32 / bits;
    for (int j = 0; j < g; j += per_word) {
        uint32_t word = 0;
        for (int k = 0; k < per_word; k++) {
            float e = rintf((w[j + k] - bias) / scale);
            e = fminf(fmaxf(e, 0.0f), n_bins);
            word |= (uint32_t)e << (k * bits);
        }
        memcpy(q + (size_t)(j / per_word) * 4, &word, 4);
    }
    *scale_out = scale;
    *bias_out = bias;
}

/* The three parts of a quantized tensor, written into q / s / b. */
static int quantize_tensor(const qjob *j, const tensor *t, dtype pt, uint8_t *q, uint8_t *s, uint8_t *b) {
    int64_t rows = t->shape[0], cols = t->shape[1], ng = cols / j->group;
    float *w = malloc((size_t)j->group * sizeof(float));
    if (!w) return errf(j->err, "out of memory quantizing %s", t->name);
    size_t gbytes = (size_t)j->group * (size_t)j->bits / 8;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < ng; g++) {
            size_t gi = (size_t)(r * ng + g), base = (size_t)(r * cols + g * j->group);
            for (int k = 0; k < j->group; k++) w[k] = value(t, base + (size_t)k, pt);
            float sc, bi;
            quantize_group(w, j->group, j->bits, q + gi * gbytes, &sc, &bi);
            store(s, pt, gi, sc);
            store(b, pt, gi, bi);
        }
    free(w);
    return 0;
}

/* ---- planning the output ---------------------------------------------------------- */

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static int add_out(out_tensor *o, int *n, const char *name, const char *suffix, out_kind kind,
                   const tensor *src, dtype type, int ndim, int64_t d0, int64_t d1) {
    out_tensor *x = &o[(*n)++];
    memset(x, 0, sizeof *x);
    size_t base = strlen(name) - (suffix ? strlen(".weight") : 0);
    if (base + (suffix ? strlen(suffix) : 0) >= sizeof x->name) return -1;
    snprintf(x->name, sizeof x->name, "%.*s%s", (int)base, name, suffix ? suffix : "");
    x->kind = kind;
    x->src = src;
    x->type = type;
    x->ndim = ndim;
    x->shape[0] = d0;
    x->shape[1] = d1;
    x->nbytes = dsize(type) * (size_t)d0 * (size_t)(ndim > 1 ? d1 : 1);
    return 0;
}

/* The output tensors, sorted by name, with their offsets. *n_out receives the count. */
static int plan(const qjob *j, const st_file *st, int tied, out_tensor **out, int *n_out) {
    int n_in = st_n_tensors(st), n = 0;
    out_tensor *o = calloc((size_t)n_in * 3 + 1, sizeof *o);
    if (!o) return errf(j->err, "out of memory");
    for (int i = 0; i < n_in; i++) {
        const tensor *t = st_tensor(st, i);
        if (strstr(t->name, "rotary_emb.inv_freq") || (tied && !strcmp(t->name, "lm_head.weight")))
            continue;
        if (!is_float(t->type)) {
            free(o);
            return errf(j->err, "%s: tensor %s is %s; only F32, F16 and BF16 checkpoints can be quantized",
                        st_tensor_path(st, i), t->name, dtype_name(t->type));
        }
        if (strlen(t->name) >= 240) {
            free(o);
            return errf(j->err, "%s: tensor name too long", st_tensor_path(st, i));
        }
        dtype pt = j->cast >= 0 ? (dtype)j->cast : t->type;
        int quant = t->ndim == 2 && ends_with(t->name, ".weight") && t->shape[1] % j->group == 0;
        if (!quant) {
            add_out(o, &n, t->name, NULL, OUT_COPY, t, pt, t->ndim, t->shape[0],
                    t->ndim > 1 ? t->shape[1] : 1);
            o[n - 1].nbytes = dsize(pt) * (size_t)tensor_numel(t);
            for (int d = 2; d < t->ndim && d < TENSOR_MAX_DIMS; d++) o[n - 1].shape[d] = t->shape[d]; /* a conv */
            continue;
        }
        int64_t rows = t->shape[0], cols = t->shape[1];
        add_out(o, &n, t->name, ".weight", OUT_Q, t, DT_U32, 2, rows, cols * j->bits / 32);
        add_out(o, &n, t->name, ".scales", OUT_SCALES, t, pt, 2, rows, cols / j->group);
        add_out(o, &n, t->name, ".biases", OUT_BIASES, t, pt, 2, rows, cols / j->group);
    }
    qsort(o, (size_t)n, sizeof *o, cmp_out);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        o[i].offset = off;
        off += o[i].nbytes;
    }
    *out = o;
    *n_out = n;
    return 0;
}

/* ---- writing ---------------------------------------------------------------------- */

static const char *st_dtype_name(dtype t) {
    return t == DT_F32 ? "F32" : t == DT_F16 ? "F16" : t == DT_BF16 ? "BF16" : "U32";
}

/* The safetensors header, padded with spaces to a multiple of 8 bytes. */
static char *header_json(const out_tensor *o, int n, size_t *len) {
    json_t *root = json_object();
    json_object_set_new(root, "__metadata__", json_pack("{s:s}", "format", "mlx"));
    for (int i = 0; i < n; i++) {
        json_t *shape = json_array();
        for (int d = 0; d < o[i].ndim; d++) json_array_append_new(shape, json_integer(o[i].shape[d]));
        json_object_set_new(root, o[i].name,
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", st_dtype_name(o[i].type), "shape", shape,
                                      "data_offsets", (json_int_t)o[i].offset,
                                      (json_int_t)(o[i].offset + o[i].nbytes)));
    }
    char *s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    if (!s) return NULL;
    size_t l = strlen(s), pad = (8 - l % 8) % 8;
    char *p = realloc(s, l + pad + 1);
    if (!p) {
        free(s);
        return NULL;
    }
    memset(p + l, ' ', pad);
    p[l + pad] = '\0';
    *len = l + pad;
    return p;
}

/* The data of one output tensor. Quantized tensors are computed once, for their
 * ".biases" entry (the first of the three in name order), and kept for the other two. */
typedef struct {
    const tensor *src;
    uint8_t *q, *s, *b;
} qcache;

static void qcache_clear(qcache *c) {
    free(c->q);
    free(c->s);
    free(c->b);
    memset(c, 0, sizeof *c);
}

static int write_tensor(const qjob *j, const out_tensor *o, FILE *f, qcache *c, const char *path) {
    const uint8_t *data = NULL;
    uint8_t *tmp = NULL;
    if (o->kind == OUT_COPY) {
        if (o->type == o->src->type) {
            data = o->src->data;
        } else {
            size_t n = (size_t)tensor_numel(o->src);
            if (!(tmp = malloc(o->nbytes ? o->nbytes : 1))) return errf(j->err, "out of memory");
            for (size_t i = 0; i < n; i++) store(tmp, o->type, i, load_f32(o->src, i));
            data = tmp;
        }
    } else {
        if (c->src != o->src) {
            qcache_clear(c);
            const tensor *t = o->src;
            size_t ng = (size_t)t->shape[0] * (size_t)(t->shape[1] / j->group);
            dtype pt = j->cast >= 0 ? (dtype)j->cast : t->type;
            c->q = malloc((size_t)t->shape[0] * (size_t)t->shape[1] * (size_t)j->bits / 8);
            c->s = malloc(ng * dsize(pt));
            c->b = malloc(ng * dsize(pt));
            if (!c->q || !c->s || !c->b) return errf(j->err, "out of memory quantizing %s", t->name);
            c->src = t;
            if (quantize_tensor(j, t, pt, c->q, c->s, c->b)) return -1;
        }
        data = o->kind == OUT_Q ? c->q : o->kind == OUT_SCALES ? c->s : c->b;
    }
    int ok = o->nbytes == 0 || fwrite(data, 1, o->nbytes, f) == o->nbytes;
    free(tmp);
    return ok ? 0 : errf(j->err, "%s: write failed: %s", path, strerror(errno));
}

static int write_safetensors(const qjob *j, const out_tensor *o, int n, const char *path) {
    size_t hlen;
    char *h = header_json(o, n, &hlen);
    if (!h) return errf(j->err, "out of memory writing the header of %s", path);
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(h);
        return errf(j->err, "%s: %s", path, strerror(errno));
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    int rc = fwrite(len8, 1, 8, f) == 8 && fwrite(h, 1, hlen, f) == hlen
                 ? 0 : errf(j->err, "%s: write failed: %s", path, strerror(errno));
    free(h);
    qcache c = {0};
    for (int i = 0; !rc && i < n; i++) rc = write_tensor(j, &o[i], f, &c, path);
    qcache_clear(&c);
    if (fclose(f) && !rc) rc = errf(j->err, "%s: %s", path, strerror(errno));
    return rc;
}

/* ---- config and the other files ------------------------------------------------- */

/* Reads config.json: tied embeddings, the cast dtype, and refuses quantized inputs. */
static int read_config(qjob *j, const char *path, json_t **root_out, int *tied) {
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return errf(j->err, "%s: not a JSON object (line %d: %s)", path, je.line, je.text);
    }
    if (json_object_get(root, "quantization") || json_object_get(root, "quantization_config")) {
        json_decref(root);
        return errf(j->err, "%s: the model is already quantized", path);
    }
    *tied = json_is_true(json_object_get(root, "tie_word_embeddings"));
    const char *td = json_string_value(json_object_get(root, "torch_dtype"));
    j->cast = !td ? -1 : !strcmp(td, "float32") ? DT_F32 : !strcmp(td, "float16") ? DT_F16
            : !strcmp(td, "bfloat16") ? DT_BF16 : -1;
    *root_out = root;
    return 0;
}

/* mlx-lm (0.32.2 checked) reads RoPE settings only from the transformers 4.x keys: with
 * transformers 5's "rope_parameters" alone it silently drops llama3 scaling. Add the 4.x
 * keys with the same values (llmgen reads either), so the file means the same in both. */
static void add_rope_compat(json_t *root) {
    json_t *rp = json_object_get(root, "rope_parameters");
    if (!json_is_object(rp)) return;
    const char *type = json_string_value(json_object_get(rp, "rope_type"));
    json_t *rs = json_object_get(root, "rope_scaling");
    if (type && strcmp(type, "default") && (!rs || json_is_null(rs)))
        json_object_set_new(root, "rope_scaling", json_deep_copy(rp));
    json_t *theta = json_object_get(rp, "rope_theta");
    if (theta && !json_object_get(root, "rope_theta")) json_object_set(root, "rope_theta", theta);
}

static int write_config(const qjob *j, json_t *root, const char *path) {
    add_rope_compat(root);
    json_t *q = json_pack("{s:i,s:i,s:s}", "group_size", j->group, "bits", j->bits, "mode", "affine");
    json_object_set(root, "quantization", q);
    json_object_set_new(root, "quantization_config", q);
    json_object_del(root, "_name_or_path");
    if (json_dump_file(root, path, JSON_INDENT(4) | JSON_SORT_KEYS))
        return errf(j->err, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}

static int copy_file(const qjob *j, const char *from, const char *to) {
    char *buf;
    size_t len;
    if (file_read_all(from, &buf, &len, j->err)) return -1;
    FILE *f = fopen(to, "wb");
    int rc = f && fwrite(buf, 1, len, f) == len ? 0 : errf(j->err, "%s: cannot write: %s", to, strerror(errno));
    if (f && fclose(f) && !rc) rc = errf(j->err, "%s: %s", to, strerror(errno));
    free(buf);
    return rc;
}

static const char *EXTRA_FILES[] = {
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
    "tokenizer.model", "vocab.json", "merges.txt", "generation_config.json", "added_tokens.json",
};

static int copy_extras(const qjob *j, const char *out_dir) {
    for (size_t i = 0; i < sizeof EXTRA_FILES / sizeof *EXTRA_FILES; i++) {
        char from[4096], to[4096];
        snprintf(from, sizeof from, "%s/%s", j->in_dir, EXTRA_FILES[i]);
        snprintf(to, sizeof to, "%s/%s", out_dir, EXTRA_FILES[i]);
        if (access(from, R_OK) == 0 && copy_file(j, from, to)) return -1;
    }
    return 0;
}

/* ---- the API ---------------------------------------------------------------------- */

/* After a failure: remove what was written, so that a retry finds no half checkpoint. */
static void remove_partial(const char *out_dir) {
    char p[4096];
    static const char *mine[] = {"model.safetensors", "config.json"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", out_dir, mine[i]);
        unlink(p);
    }
    for (size_t i = 0; i < sizeof EXTRA_FILES / sizeof *EXTRA_FILES; i++) {
        snprintf(p, sizeof p, "%s/%s", out_dir, EXTRA_FILES[i]);
        unlink(p);
    }
    rmdir(out_dir);
}

static llmgen_status run(qjob *j, const char *out_dir) {
    char cfg[4096], w[4096], out[4096];
    snprintf(cfg, sizeof cfg, "%s/config.json", j->in_dir);
    if (access(cfg, R_OK) != 0) {
        errf(j->err, "%s: %s", cfg, strerror(errno));
        return LLMGEN_E_IO;
    }
    snprintf(w, sizeof w, "%s/model.safetensors.index.json", j->in_dir);
    if (access(w, R_OK) != 0) snprintf(w, sizeof w, "%s/model.safetensors", j->in_dir);
    if (access(w, R_OK) != 0) {
        errf(j->err, "%s: no model.safetensors or model.safetensors.index.json", j->in_dir);
        return LLMGEN_E_IO;
    }
    if (access(out_dir, F_OK) == 0) {
        errf(j->err, "%s: already exists; give a new directory", out_dir);
        return LLMGEN_E_USAGE;
    }
    json_t *root = NULL;
    int tied = 0;
    if (read_config(j, cfg, &root, &tied)) return LLMGEN_E_FORMAT;
    st_file *st = NULL;
    if (st_open(w, &st, j->err)) {
        json_decref(root);
        return LLMGEN_E_FORMAT;
    }
    out_tensor *o = NULL;
    int n = 0;
    llmgen_status rc = LLMGEN_E_FORMAT;
    if (plan(j, st, tied, &o, &n)) goto done;
    rc = LLMGEN_E_IO;
    if (mkdir(out_dir, 0777)) {
        errf(j->err, "%s: cannot create: %s", out_dir, strerror(errno));
        goto done;
    }
    snprintf(out, sizeof out, "%s/model.safetensors", out_dir);
    int bad = write_safetensors(j, o, n, out);
    snprintf(out, sizeof out, "%s/config.json", out_dir);
    if (!bad) bad = write_config(j, root, out) || copy_extras(j, out_dir);
    if (bad) remove_partial(out_dir);
    else rc = LLMGEN_OK;
done:
    free(o);
    st_close(st);
    json_decref(root);
    return rc;
}

llmgen_status llmgen_quantize(const char *in_dir, const char *out_dir, int bits, int group_size,
                              char *err, size_t errlen) {
    char e[ERR_LEN] = "";
    llmgen_status rc;
    if (!in_dir || !out_dir) {
        rc = LLMGEN_E_USAGE;
        errf(e, "llmgen_quantize: no input or output directory");
    } else if (bits != 4 && bits != 8) {
        rc = LLMGEN_E_USAGE;
        errf(e, "--bits %d: 4 or 8 are supported", bits);
    } else if (group_size != 32 && group_size != 64 && group_size != 128) {
        rc = LLMGEN_E_USAGE;
        errf(e, "--group-size %d: 32, 64 or 128 are supported", group_size);
    } else {
        qjob j = {bits, group_size, -1, in_dir, e};
        rc = run(&j, out_dir);
    }
    if (rc && err && errlen) snprintf(err, errlen, "%s", e);
    return rc;
}
