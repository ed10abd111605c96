/* loader.c - from a file to a weight table: find each tensor by name, check its
 * shape against the config, keep views into the mapping (no copies of
 * matrices), copy the small norm vectors to f32, precompute RoPE frequencies
 * and load the tokenizer. */
#include "loader.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "affine.h"
#include "quant/quant.h"
#include "repack.h"
#include "base/util.h"

/* ---- tensor access --------------------------------------------------------------- */

void tensor_row_f32(const tensor *t, int64_t row, float *out) {
    int64_t cols = t->shape[t->ndim - 1];
    if (t->packed && t->packed != t->data) { /* fast mode: the file pages were released, read the repacked copy */
        repack_row_f32(t, row, out);
        return;
    }
    if (t->type == DT_AFFINE4 || t->type == DT_AFFINE8)
        affine_row_f32(t, row, out);
    else
        dtype_dequant_row(t->type, t->data, cols, row, out);
}

/* ---- finding tensors ------------------------------------------------------------- */

typedef struct {
    const model *m;
    char *err;
} loader;

/* A Hugging Face name "model.X" is "model.language_model.X" in a multimodal checkpoint's text model
 * (Qwen3.5's published files, beside their model.visual. tower). */
static const tensor *find_tensor(const model *m, const char *name) {
    if (m->gguf) return gguf_find_tensor(m->gguf, name);
    const tensor *t = st_find_tensor(m->st, name);
    char alt[320];
    if (!t && !strncmp(name, "model.", 6) && strlen(name) < 280) {
        snprintf(alt, sizeof alt, "model.language_model.%s", name + 6);
        t = st_find_tensor(m->st, alt);
    }
    return t;
}

/* An MLX quantized linear: name is "X.weight" (U32); X.scales and X.biases sit beside it. */
static int get_affine(model *m, const tensor *w, int64_t rows, int64_t cols, const tensor **out,
                      char *err) {
    const char *name = w->name;
    size_t n = strlen(name);
    if (!m->cfg.quant_bits)
        return errf(err, "%s: tensor %s is U32 (MLX packed) but config.json has no 'quantization'",
                    m->path, name);
    if (n < 7 || strcmp(name + n - 7, ".weight") || n > 200)
        return errf(err, "%s: packed tensor %s should be named X.weight", m->path, name);
    char sn[256], bn[256];
    snprintf(sn, sizeof sn, "%.*s.scales", (int)(n - 7), name);
    snprintf(bn, sizeof bn, "%.*s.biases", (int)(n - 7), name);
    return affine_assemble(&m->affine, w, find_tensor(m, sn), find_tensor(m, bn), rows, cols, out,
                           m->path, err);
}

/* A weight matrix (rows, cols) in a dtype the kernels take. */
static int get_matrix(model *m, const char *name, int64_t rows, int64_t cols,
                      const tensor **out, char *err) {
    const tensor *t = find_tensor(m, name);
    if (!t) return errf(err, "%s: missing tensor %s", m->path, name);
    if (t->type == DT_U32 && !m->gguf) return get_affine(m, t, rows, cols, out, err);
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols) {
        char shape[96] = "(";
        for (int d = 0; d < t->ndim && d < TENSOR_MAX_DIMS; d++)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", d ? ", " : "",
                     (long long)t->shape[d]);
        return errf(err, "%s: tensor %s has shape %s), expected (%lld, %lld) from the config", m->path, name, shape,
                    (long long)rows, (long long)cols);
    }
    if (!dtype_info(t->type)->weight) {
        char types[160];
        dtype_gguf_supported(types, sizeof types);
        return errf(err, "%s: tensor %s has dtype %s; weights must be one of %s", m->path, name,
                    dtype_name(t->type), types);
    }
    *out = t;
    return 0;
}

/* A 1-D vector of n elements, copied to f32 (norm weights are tiny); any_shape: any tensor of
 * n elements (a conv weight). */
static int get_vector(const model *m, const char *name, int64_t n, int any_shape, float **out, char *err) {
    const tensor *t = find_tensor(m, name);
    if (!t) return errf(err, "%s: missing tensor %s", m->path, name);
    if (any_shape ? tensor_numel(t) != n : t->ndim != 1 || t->shape[0] != n)
        return errf(err, "%s: tensor %s should %s %lld elements", m->path, name, any_shape ? "hold" : "be a vector of",
                    (long long)n);
    if (t->type != DT_F32 && t->type != DT_F16 && t->type != DT_BF16)
        return errf(err, "%s: tensor %s has dtype %s; expected F32, F16 or BF16", m->path, name,
                    dtype_name(t->type));
    float *v = malloc((size_t)n * sizeof(float));
    if (!v) return errf(err, "%s: out of memory", m->path);
    tensor row = *t;
    row.ndim = 2;
    row.shape[0] = 1;
    row.shape[1] = n;
    tensor_row_f32(&row, 0, v);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i])) {
            free(v);
            return errf(err, "%s: tensor %s holds a non-finite value at %lld", m->path, name, (long long)i);
        }
    *out = v;
    return 0;
}

static int64_t slot_dim(const model_config *c, slot_size s) {
    switch (s) {
    case SZ_DIM: return c->dim;
    case SZ_Q: return (int64_t)c->n_heads * c->head_dim;
    case SZ_KV: return (int64_t)c->n_kv_heads * c->head_dim;
    case SZ_QKV: return (int64_t)(c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
    case SZ_HEAD: return c->head_dim;
    case SZ_FF: return c->hidden_dim;
    case SZ_FF2: return 2 * (int64_t)c->hidden_dim;
    case SZ_Q2: return 2 * (int64_t)c->n_heads * c->head_dim;
    case SZ_LIN_CONV: return config_lin_channels(c);
    case SZ_LIN_V: return (int64_t)c->lin_hv * c->lin_dv;
    case SZ_LIN_HEADS: return c->lin_hv;
    case SZ_LIN_DV: return c->lin_dv;
    case SZ_LIN_TAPS: return (int64_t)config_lin_channels(c) * c->lin_conv;
    case SZ_HEADS: return c->n_heads;
    case SZ_DIM3: return 3 * (int64_t)c->dim;
    case SZ_PLE: return c->ple_dim;
    case SZ_ONE: return 1;
    }
    return 0;
}

/* Layer l of c has this slot: its family has it (two slots may fill one field, in different
 * families), and SLOT_LINEAR matches the layer's kind. */
static int slot_used(const model_config *c, int l, const layer_slot *sl) {
    unsigned f = c->flags | (c->layer_flags[l] & LAYER_LINEAR ? SLOT_LINEAR : 0) |
                 (c->layer_flags[l] & LAYER_KV_SHARED ? SLOT_KV_SHARED : 0) |
                 (c->layer_flags[l] & LAYER_K_EQ_V ? SLOT_K_EQ_V : 0);
    return (f & sl->need) == sl->need && !(f & sl->without);
}

/* A norm weight as the forward pass multiplies by it: Gemma's (1 + w) from HF and
 * MLX files, in f32 as transformers adds it; GGUF files already store 1 + w. */
static void norm_plus_one(const model *m, float *v, int64_t n) {
    if (!(m->cfg.flags & ARCH_NORM_PLUS_ONE) || m->gguf) return;
    for (int64_t i = 0; i < n; i++) v[i] = 1.0f + v[i];
}

/* Rows [row0, row0 + rows) of the fused matrix t as a matrix of its own: a view in
 * m->views (or in the affine store for MLX), nothing copied. */
static int split_rows(model *m, const tensor *t, int64_t row0, int64_t rows, const tensor **out, char *err) {
    if (affine_bits(t->type)) return affine_split(&m->affine, t, row0, rows, out, m->path, err);
    tensor *v = &m->views[m->n_views++];
    size_t rb = dtype_row_bytes(t->type, t->shape[1]);
    *v = *t;
    v->shape[0] = rows;
    v->data = (const uint8_t *)t->data + (size_t)row0 * rb;
    v->nbytes = (size_t)rows * rb;
    *out = v;
    return 0;
}

#define HF_LAYER "model.layers.%d."

/* ---- expert layers ---------------------------------------------------------------- */

/* What a damaged shape looks like, for messages: "(a, b, c)". */
static void shape_str(const tensor *t, char *buf, size_t n) {
    snprintf(buf, n, "(");
    for (int d = 0; d < t->ndim && d < TENSOR_MAX_DIMS; d++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    snprintf(buf + strlen(buf), n - strlen(buf), ")");
}

/* A stack of n_experts matrices (n_experts, rows, cols) named `name`: expert e's rows
 * [row0, row0 + rows) (of its stacked_rows) as a 2-D view into out[e], nothing copied. */
static int get_stack(model *m, const char *name, int64_t stacked_rows, int64_t row0, int64_t rows, int64_t cols,
                     tensor *views, const tensor **out, char *err) {
    const model_config *c = &m->cfg;
    const tensor *t = find_tensor(m, name);
    if (!t) return errf(err, "%s: missing tensor %s", m->path, name);
    if (t->ndim != 3 || t->shape[0] != c->n_experts || t->shape[1] != stacked_rows || t->shape[2] != cols) {
        char shape[96];
        shape_str(t, shape, sizeof shape);
        return errf(err, "%s: tensor %s has shape %s, expected (%d, %lld, %lld) from the config", m->path, name, shape,
                    c->n_experts, (long long)stacked_rows, (long long)cols);
    }
    if (!dtype_info(t->type)->weight || t->type == DT_U32)
        return errf(err, "%s: tensor %s has dtype %s, not a weight type", m->path, name, dtype_name(t->type));
    size_t rb = dtype_row_bytes(t->type, cols);
    for (int e = 0; e < c->n_experts; e++) {
        tensor *v = &views[e];
        *v = *t;
        v->ndim = 2;
        v->shape[0] = rows;
        v->shape[1] = cols;
        v->data = (const uint8_t *)t->data + ((size_t)e * (size_t)stacked_rows + (size_t)row0) * rb;
        v->nbytes = (size_t)rows * rb;
        out[e] = v;
    }
    return 0;
}

/* ---- experts with biases, HF stacks transposed (ARCH_EXPERT_BIAS: gpt-oss) ------------------- */

/* name with its trailing ".weight" (if any) replaced by suffix, into buf. */
static void name_with(char *buf, size_t n, const char *name, const char *suffix) {
    size_t len = strlen(name);
    if (len >= 7 && !strcmp(name + len - 7, ".weight")) len -= 7;
    snprintf(buf, n, "%.*s%s", (int)len, name, suffix);
}

/* mlx-lm's stack `name` (n_experts, rows, cols) of one projection: plain (a weight type, viewed as
 * get_stack does) or affine-quantized (U32 words with its .scales and .biases, each (n_experts, rows, x)),
 * expert e's matrix as out[e]; nothing copied. */
static int get_mlx_stack(model *m, const char *name, int64_t rows, int64_t cols, tensor *views, const tensor **out,
                         char *err) {
    const model_config *c = &m->cfg;
    const tensor *t = find_tensor(m, name);
    if (!t || t->type != DT_U32) return get_stack(m, name, rows, 0, rows, cols, views, out, err);
    if (!c->quant_bits)
        return errf(err, "%s: tensor %s is U32 (MLX packed) but config.json has no 'quantization'", m->path, name);
    char sn[200], bn[200];
    name_with(sn, sizeof sn, name, ".scales");
    name_with(bn, sizeof bn, name, ".biases");
    const tensor *parts[3] = {t, find_tensor(m, sn), find_tensor(m, bn)};
    tensor flat[3];
    for (int i = 0; i < 3; i++) {
        const tensor *p = parts[i];
        if (!p) return errf(err, "%s: tensor %s is packed (U32) but its %s are missing", m->path, name,
                            i == 1 ? "scales" : "biases");
        if (p->ndim != 3 || p->shape[0] != c->n_experts || p->shape[1] != rows) {
            char shape[96];
            shape_str(p, shape, sizeof shape);
            return errf(err, "%s: tensor %s has shape %s, expected (%d, %lld, ...) from the config", m->path,
                        p->name, shape, c->n_experts, (long long)rows);
        }
        flat[i] = *p; /* the stack as one (n_experts * rows, x) matrix */
        flat[i].ndim = 2;
        flat[i].shape[0] = (int64_t)c->n_experts * rows;
        flat[i].shape[1] = p->shape[2];
    }
    const tensor *whole;
    if (affine_assemble(&m->affine, &flat[0], &flat[1], &flat[2], flat[0].shape[0], cols, &whole, m->path, err))
        return -1;
    for (int e = 0; e < c->n_experts; e++)
        if (affine_split(&m->affine, whole, (int64_t)e * rows, rows, &out[e], m->path, err)) return -1;
    return 0;
}

/* A (E, r, c) tensor's view as E matrices of one dtype: expert e of out. */
static void expert_view(tensor *v, const tensor *src, dtype type, int64_t rows, int64_t cols, const void *data) {
    *v = *src;
    v->type = type;
    v->ndim = 2;
    v->shape[0] = rows;
    v->shape[1] = cols;
    v->data = data;
    v->nbytes = dtype_row_bytes(type, cols) * (size_t)rows;
    v->packed = NULL;
    v->parts = NULL;
    v->nparts = 0;
}

/* HF's plain stack t (E, in, out_all) of F32 / F16 / BF16, its columns col0, col0 + step, ... (rows of
 * expert e's (rows, in) matrix): transposed into dst, expert after expert; experts [e0, e1). */
static void transpose_stack(const tensor *t, int64_t rows, int col0, int step, uint8_t *dst, int64_t e0, int64_t e1) {
    size_t es = dtype_row_bytes(t->type, 1);
    int64_t in = t->shape[1], all = t->shape[2];
    const uint8_t *src = t->data;
    for (int64_t e = e0; e < e1; e++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t i = 0; i < in; i++)
                memcpy(dst + ((e * rows + r) * in + i) * es, src + ((e * in + i) * all + col0 + r * step) * es, es);
}

/* HF's MXFP4 rows (E, rows_all, in / 32, 16) with scales (E, rows_all, in / 32): rows row0, row0 + step, ...
 * of each expert as GGUF MXFP4 blocks (the scale byte, then element j's code in the low nibble of qs[j] and
 * element j + 16's in the high one; HF pairs elements 2k, 2k + 1 in byte k), expert after expert. The codes
 * and the exponent mean the same values in both layouts (FACTS-MOE 4.3): nothing is requantized. Experts
 * [e0, e1). */
static void mxfp4_rows(const tensor *bl, const tensor *sc, int64_t rows, int row0, int step, uint8_t *dst, int64_t e0,
                       int64_t e1) {
    int64_t all = bl->shape[1], nb = bl->shape[2];
    const uint8_t *b = bl->data, *s = sc->data;
    for (int64_t e = e0; e < e1; e++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < nb; k++) {
                size_t src = ((size_t)e * all + row0 + r * step) * nb + k;
                const uint8_t *q = b + src * 16;
                uint8_t *o = dst + (((size_t)e * rows + r) * nb + k) * 17;
                o[0] = s[src];
                for (int m = 0; m < 8; m++) { /* elements 2m, 2m + 1 in q[m]; 2m + 16, 2m + 17 in q[8 + m] */
                    o[1 + 2 * m] = (uint8_t)((q[m] & 15) | q[8 + m] << 4);
                    o[2 + 2 * m] = (uint8_t)(q[m] >> 4 | (q[8 + m] & 0xF0));
                }
            }
}

/* A layer's three rewrites of HF stacks (gate, up, down), each thread taking its share of the experts
 * of each: the load of a 20B-class checkpoint moves gigabytes this way. */
typedef struct {
    const tensor *t[3], *sc[3]; /* sc[i]: MXFP4 scales, or NULL (a plain stack, transposed) */
    int64_t rows[3];
    int row0[3], step[3];
    uint8_t *dst[3];
} stack_job;

static void stack_task(void *ctx, int ith, int nth) {
    const stack_job *j = ctx;
    for (int i = 0; i < 3; i++) {
        int64_t E = j->t[i]->shape[0], e0 = E * ith / nth, e1 = E * (ith + 1) / nth;
        if (j->sc[i]) mxfp4_rows(j->t[i], j->sc[i], j->rows[i], j->row0[i], j->step[i], j->dst[i], e0, e1);
        else transpose_stack(j->t[i], j->rows[i], j->row0[i], j->step[i], j->dst[i], e0, e1);
    }
}

/* Drop the file pages wholly inside t (read once, rewritten): the copy replaces them in memory. */
static void release_tensor_pages(const tensor *t) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)t->data, e = a + t->nbytes;
    uintptr_t lo = (a + page - 1) & ~(page - 1), hi = e & ~(page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* A uint8 tensor of exactly the shape want (n dims), or an error naming it. */
static int get_u8_shape(const model *m, const char *name, const int64_t *want, int n, const tensor **out, char *err) {
    const tensor *t = find_tensor(m, name);
    if (!t) return errf(err, "%s: missing tensor %s", m->path, name);
    int ok = t->type == DT_U8 && t->ndim == n;
    for (int d = 0; ok && d < n; d++) ok = t->shape[d] == want[d];
    if (!ok) {
        char shape[96], w[96] = "(";
        shape_str(t, shape, sizeof shape);
        for (int d = 0; d < n; d++) snprintf(w + strlen(w), sizeof w - strlen(w), "%s%lld", d ? ", " : "", (long long)want[d]);
        return errf(err, "%s: tensor %s is %s %s, expected U8 %s) (MXFP4 %s)", m->path, name, dtype_name(t->type), shape,
                    w, n == 4 ? "blocks of 32 values, from the config" : "scales, one per block of its _blocks");
    }
    *out = t;
    return 0;
}

/* Layer l's gpt-oss experts from HF files: gate_up_proj (E, dim, 2I) with gate / up in the even / odd
 * columns and down_proj (E, I, dim), transposed into (out, in) matrices; or their MXFP4 form
 * (*_blocks / *_scales, rows = outputs) rewritten as GGUF MXFP4 blocks; and the biases, split likewise. */
static int load_hf_expert_stacks(model *m, int l, expert_block *b, tensor *views, char *err) {
    const model_config *c = &m->cfg;
    const moe_info *mo = c->moe;
    int E = c->n_experts;
    int64_t I = c->expert_dim, D = c->dim;
    char gu[160], dn[160], n1[176], n2[176];
    snprintf(gu, sizeof gu, mo->hf_gate_up3, l);
    snprintf(dn, sizeof dn, mo->hf_down3, l);
    const tensor *tg = find_tensor(m, gu), *td = NULL, *sg = NULL, *sd = NULL;
    uint8_t *buf;
    if (tg) { /* plain: F32, F16 or BF16 */
        td = find_tensor(m, dn);
        if (!td) return errf(err, "%s: missing tensor %s", m->path, dn);
        const tensor *ts[2] = {tg, td};
        int64_t want[2][3] = {{E, D, 2 * I}, {E, I, D}};
        for (int i = 0; i < 2; i++) {
            const tensor *t = ts[i];
            if (t->ndim != 3 || t->shape[0] != want[i][0] || t->shape[1] != want[i][1] || t->shape[2] != want[i][2] ||
                (t->type != DT_F32 && t->type != DT_F16 && t->type != DT_BF16)) {
                char shape[96];
                shape_str(t, shape, sizeof shape);
                return errf(err, "%s: tensor %s is %s %s, expected F32, F16 or BF16 (%lld, %lld, %lld) from the config",
                            m->path, t->name, dtype_name(t->type), shape, (long long)want[i][0], (long long)want[i][1],
                            (long long)want[i][2]);
            }
        }
        size_t es = dtype_row_bytes(tg->type, 1), eg = (size_t)I * D * dtype_row_bytes(td->type, 1);
        buf = malloc((size_t)E * (2 * I * D * es + eg));
        if (!buf) return errf(err, "%s: out of memory", m->path);
        m->expert_copies[l] = buf;
        size_t mat = (size_t)I * D * es;
        stack_job j = {{tg, tg, td}, {NULL, NULL, NULL}, {I, I, D}, {0, 1, 0}, {2, 2, 1},
                       {buf, buf + (size_t)E * mat, buf + (size_t)2 * E * mat}};
        pool_run(m->pool, stack_task, &j);
        for (int e = 0; e < E; e++) {
            expert_view(&views[e], tg, tg->type, I, D, buf + (size_t)e * mat);
            expert_view(&views[E + e], tg, tg->type, I, D, buf + (size_t)(E + e) * mat);
            expert_view(&views[2 * E + e], td, td->type, D, I, buf + (size_t)2 * E * mat + (size_t)e * eg);
        }
        release_tensor_pages(tg);
        release_tensor_pages(td);
    } else { /* MXFP4 */
        snprintf(n1, sizeof n1, "%s_blocks", gu);
        if (!find_tensor(m, n1)) return errf(err, "%s: missing tensor %s (nor its MXFP4 %s)", m->path, gu, n1);
        if (D % 32 || I % 32)
            return errf(err, "%s: tensor %s: MXFP4 rows of %lld and %lld values (hidden_size, intermediate_size) are not "
                        "a multiple of 32", m->path, n1, (long long)D, (long long)I);
        int64_t wg[4] = {E, 2 * I, D / 32, 16}, wd[4] = {E, D, I / 32, 16};
        const tensor *bg, *bd;
        if (get_u8_shape(m, n1, wg, 4, &bg, err)) return -1;
        snprintf(n2, sizeof n2, "%s_scales", gu);
        if (get_u8_shape(m, n2, wg, 3, &sg, err)) return -1;
        snprintf(n1, sizeof n1, "%s_blocks", dn);
        if (get_u8_shape(m, n1, wd, 4, &bd, err)) return -1;
        snprintf(n2, sizeof n2, "%s_scales", dn);
        if (get_u8_shape(m, n2, wd, 3, &sd, err)) return -1;
        size_t rg = dtype_row_bytes(DT_MXFP4, D), rd = dtype_row_bytes(DT_MXFP4, I);
        size_t mat = (size_t)I * rg, dmat = (size_t)D * rd;
        buf = malloc((size_t)E * (2 * mat + dmat));
        if (!buf) return errf(err, "%s: out of memory", m->path);
        m->expert_copies[l] = buf;
        stack_job j = {{bg, bg, bd}, {sg, sg, sd}, {I, I, D}, {0, 1, 0}, {2, 2, 1},
                       {buf, buf + (size_t)E * mat, buf + (size_t)2 * E * mat}};
        pool_run(m->pool, stack_task, &j);
        for (int e = 0; e < E; e++) {
            expert_view(&views[e], bg, DT_MXFP4, I, D, buf + (size_t)e * mat);
            expert_view(&views[E + e], bg, DT_MXFP4, I, D, buf + (size_t)(E + e) * mat);
            expert_view(&views[2 * E + e], bd, DT_MXFP4, D, I, buf + (size_t)2 * E * mat + (size_t)e * dmat);
        }
        release_tensor_pages(bg);
        release_tensor_pages(bd);
    }
    for (int e = 0; e < E; e++) b->gate[e] = &views[e], b->up[e] = &views[E + e], b->down[e] = &views[2 * E + e];
    /* the biases: gate_up_proj_bias (E, 2I) interleaved as the columns, down_proj_bias (E, dim) */
    float *gub;
    snprintf(n1, sizeof n1, "%s_bias", gu);
    if (get_vector(m, n1, (int64_t)E * 2 * I, 1, &gub, err)) return -1;
    b->gate_bias = malloc((size_t)E * I * sizeof(float));
    b->up_bias = malloc((size_t)E * I * sizeof(float));
    if (!b->gate_bias || !b->up_bias) {
        free(gub);
        return errf(err, "%s: out of memory", m->path);
    }
    for (int64_t i = 0; i < (int64_t)E * I; i++) b->gate_bias[i] = gub[2 * i], b->up_bias[i] = gub[2 * i + 1];
    free(gub);
    snprintf(n1, sizeof n1, "%s_bias", dn);
    return get_vector(m, n1, (int64_t)E * D, 1, &b->down_bias, err);
}

/* Layer l's experts, as the family's files hold them: GGUF's stacks (ffn_{gate,up,down}_exps),
 * or HF's one tensor per expert, else HF's stacks (gate and up fused). k-th expert layer. */
static int load_experts(model *m, int l, int k, char *err) {
    const model_config *c = &m->cfg;
    const moe_info *mo = c->moe;
    int E = c->n_experts;
    int64_t I = c->expert_dim, D = c->dim;
    expert_block *b = &m->experts[l];
    const tensor **ptr = m->expert_ptrs + (size_t)k * 3 * E;
    tensor *views = m->expert_views + (size_t)k * 3 * E;
    b->gate = ptr, b->up = ptr + E, b->down = ptr + 2 * E;
    char name[160], n2[160];
    if (m->gguf) {
        snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.weight", l);
        if (get_matrix(m, name, E, D, &b->router, err)) return -1;
        snprintf(name, sizeof name, "blk.%d.ffn_gate_exps.weight", l);
        if (get_stack(m, name, I, 0, I, D, views, b->gate, err)) return -1;
        snprintf(name, sizeof name, "blk.%d.ffn_up_exps.weight", l);
        if (get_stack(m, name, I, 0, I, D, views + E, b->up, err)) return -1;
        snprintf(name, sizeof name, "blk.%d.ffn_down_exps.weight", l);
        if (get_stack(m, name, D, 0, D, I, views + 2 * E, b->down, err)) return -1;
        if (c->flags & ARCH_EXPERT_BIAS) { /* the converter's biases: the router's, gate's, up's, down's */
            const char *bn[4] = {"blk.%d.ffn_gate_inp.bias", "blk.%d.ffn_gate_exps.bias", "blk.%d.ffn_up_exps.bias",
                                 "blk.%d.ffn_down_exps.bias"};
            float **dst[4] = {&b->router_bias, &b->gate_bias, &b->up_bias, &b->down_bias};
            int64_t n[4] = {E, (int64_t)E * I, (int64_t)E * I, (int64_t)E * D};
            for (int i = 0; i < 4; i++) {
                snprintf(name, sizeof name, bn[i], l);
                if (get_vector(m, name, n[i], i > 0, dst[i], err)) return -1;
            }
        }
    } else if (c->flags & ARCH_EXPERT_BIAS) {
        snprintf(name, sizeof name, mo->hf_router, l);
        if (get_matrix(m, name, E, D, &b->router, err)) return -1;
        name_with(n2, sizeof n2, name, ".bias");
        if (get_vector(m, n2, E, 0, &b->router_bias, err) || load_hf_expert_stacks(m, l, b, views, err)) return -1;
    } else {
        snprintf(name, sizeof name, mo->hf_router, l);
        if (get_matrix(m, name, E, D, &b->router, err)) return -1;
        int per_expert = 0, mlx = 0;
        if (mo->hf_gate) {
            snprintf(name, sizeof name, mo->hf_gate, l, 0);
            per_expert = find_tensor(m, name) != NULL;
        }
        if (!per_expert && mo->mlx_switch) {
            snprintf(name, sizeof name, mo->mlx_switch, l, "gate_proj");
            mlx = find_tensor(m, name) != NULL;
        }
        if (mlx) {
            static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
            for (int i = 0; i < 3; i++) {
                snprintf(name, sizeof name, mo->mlx_switch, l, proj[i]);
                if (get_mlx_stack(m, name, i == 2 ? D : I, i == 2 ? I : D, views + (size_t)i * E,
                                  (i == 0 ? b->gate : i == 1 ? b->up : b->down), err))
                    return -1;
            }
        } else if (per_expert) {
            for (int e = 0; e < E; e++) {
                snprintf(name, sizeof name, mo->hf_gate, l, e);
                if (get_matrix(m, name, I, D, &b->gate[e], err)) return -1;
                snprintf(name, sizeof name, mo->hf_up, l, e);
                if (get_matrix(m, name, I, D, &b->up[e], err)) return -1;
                snprintf(name, sizeof name, mo->hf_down, l, e);
                if (get_matrix(m, name, D, I, &b->down[e], err)) return -1;
            }
        } else {
            snprintf(name, sizeof name, mo->hf_gate_up3, l);
            snprintf(n2, sizeof n2, mo->hf_down3, l);
            if (!find_tensor(m, name) && mo->hf_gate) {
                snprintf(name, sizeof name, mo->hf_gate, l, 0);
                return errf(err, "%s: missing tensor %s (nor the stacked %.*s)", m->path, name, (int)strlen(n2),
                            n2);
            }
            if (get_stack(m, name, 2 * I, 0, I, D, views, b->gate, err) ||
                get_stack(m, name, 2 * I, I, I, D, views + E, b->up, err) ||
                get_stack(m, n2, D, 0, D, I, views + 2 * E, b->down, err))
                return -1;
        }
    }
    if (c->moe_bias) {
        if (m->gguf) snprintf(name, sizeof name, "blk.%d.exp_probs_b.bias", l);
        else snprintf(name, sizeof name, mo->hf_bias, l);
        if (get_vector(m, name, E, 0, &b->choice_bias, err)) return -1;
    }
    if (c->shared_dim) {
        int64_t S = c->shared_dim;
        const char *g = m->gguf ? "blk.%d.ffn_gate_shexp.weight" : HF_LAYER "mlp.shared_expert.gate_proj.weight";
        const char *u = m->gguf ? "blk.%d.ffn_up_shexp.weight" : HF_LAYER "mlp.shared_expert.up_proj.weight";
        const char *d = m->gguf ? "blk.%d.ffn_down_shexp.weight" : HF_LAYER "mlp.shared_expert.down_proj.weight";
        const char *r = m->gguf ? "blk.%d.ffn_gate_inp_shexp.weight" : HF_LAYER "mlp.shared_expert_gate.weight";
        snprintf(name, sizeof name, g, l);
        if (get_matrix(m, name, S, D, &b->sh_gate, err)) return -1;
        snprintf(name, sizeof name, u, l);
        if (get_matrix(m, name, S, D, &b->sh_up, err)) return -1;
        snprintf(name, sizeof name, d, l);
        if (get_matrix(m, name, D, S, &b->sh_down, err)) return -1;
        snprintf(name, sizeof name, r, l);
        /* the converter writes it as a vector of dim (ne [dim]) or a (1, dim) matrix */
        const tensor *t = find_tensor(m, name);
        if (t && t->ndim == 1 && t->shape[0] == D) {
            tensor *v = &m->views[m->n_views++];
            *v = *t;
            v->ndim = 2;
            v->shape[0] = 1;
            v->shape[1] = D;
            b->sh_router = v;
        } else if (get_matrix(m, name, 1, D, &b->sh_router, err)) {
            return -1;
        }
    }
    m->layers[l].moe = b;
    return 0;
}

/* Layer l's tensors, slot by slot (arch.h's LAYER_SLOTS: the one list of them),
 * then the views of its fused tensors. */
static int load_layer(model *m, int l, char *err) {
    const model_config *c = model_layer_cfg(m, l);
    layer_weights *L = &m->layers[l];
    char name[128];
    for (int i = 0; i < N_LAYER_SLOTS; i++) {
        const layer_slot *sl = &LAYER_SLOTS[i];
        if (!slot_used(c, l, sl) || ((c->layer_flags[l] & LAYER_MOE) && slot_is_dense_ffn(sl))) continue;
        snprintf(name, sizeof name, m->gguf ? sl->gguf : sl->hf, l);
        arch_tensor_name(c->family, m->gguf != NULL, name, sizeof name);
        void *field = (char *)L + sl->field;
        int64_t rows = slot_dim(c, sl->rows);
        if (sl->cols < 0) {
            if (get_vector(m, name, rows, sl->rows == SZ_LIN_TAPS, (float **)field, err)) return -1;
            if (sl->norm == SLOT_NORM) norm_plus_one(m, *(float **)field, rows);
            if (sl->norm == SLOT_NEG_EXP && !m->gguf)
                for (int64_t i = 0; i < rows; i++) (*(float **)field)[i] = -expf((*(float **)field)[i]);
        } else if (get_matrix(m, name, rows, slot_dim(c, (slot_size)sl->cols), (const tensor **)field, err)) {
            return -1;
        }
    }
    int64_t qd = slot_dim(c, SZ_Q), kvd = slot_dim(c, SZ_KV), ff = c->hidden_dim;
    if (L->w_qkv && (split_rows(m, L->w_qkv, 0, qd, &L->wq, err) || split_rows(m, L->w_qkv, qd, kvd, &L->wk, err) ||
                     split_rows(m, L->w_qkv, qd + kvd, kvd, &L->wv, err)))
        return -1;
    if (L->w_gate_up &&
        (split_rows(m, L->w_gate_up, 0, ff, &L->w_gate, err) || split_rows(m, L->w_gate_up, ff, ff, &L->w_up, err)))
        return -1;
    return 0;
}

static void note_type(model *m, dtype t) {
    const char *n = dtype_name(t);
    char *p = m->weight_types;
    size_t len = strlen(p);
    /* already listed? */
    for (const char *s = p; (s = strstr(s, n)); s += strlen(n)) {
        size_t k = strlen(n);
        if ((s == p || s[-1] == '+') && (s[k] == '\0' || s[k] == '+')) return;
    }
    snprintf(p + len, sizeof m->weight_types - len, "%s%s", len ? "+" : "", n);
}

static int load_weights(model *m, char *err) {
    const model_config *c = &m->cfg;
    int g = m->gguf != NULL;
    if (get_matrix(m, g ? "token_embd.weight" : "model.embed_tokens.weight", c->vocab_size, c->dim, &m->tok_embd,
                   err))
        return -1;
    char norm[64];
    snprintf(norm, sizeof norm, "%s", g ? "output_norm.weight" : "model.norm.weight");
    arch_tensor_name(c->family, g, norm, sizeof norm);
    if (get_vector(m, norm, c->dim, 0, &m->out_norm, err)) return -1;
    norm_plus_one(m, m->out_norm, c->dim);
    if (c->tied_embeddings) {
        m->lm_head = m->tok_embd;
    } else if (get_matrix(m, g ? "output.weight" : "lm_head.weight", c->vocab_size, c->dim, &m->lm_head, err)) {
        return -1;
    }
    /* sqrt(hidden) in double (Python's hidden_size ** 0.5), rounded once to f32 as
     * transformers' f32 buffer holds it; mlx-lm, the reference of MLX checkpoints
     * (config.json "quantization"), rounds it to bf16 first (33.75 for Gemma-3-1B's
     * 1152, where transformers has 33.94) */
    m->embed_scale = c->embed_mult > 0 ? c->embed_mult : 1.0f;
    if (c->flags & ARCH_EMBED_SCALE) {
        m->embed_scale = (float)sqrt((double)c->dim);
        if (c->quant_bits) m->embed_scale = bf16_to_f32(f32_to_bf16(m->embed_scale));
    }
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    m->views = calloc((size_t)c->n_layers * 6, sizeof *m->views);
    if (!m->layers || !m->views) return errf(err, "%s: out of memory", m->path);
    if (c->per_layer) {
        if (!(m->layer_cfg = malloc((size_t)c->n_layers * sizeof *m->layer_cfg)))
            return errf(err, "%s: out of memory", m->path);
        for (int l = 0; l < c->n_layers; l++) config_layer_view(c, l, &m->layer_cfg[l]);
    }
    /* the per-layer inputs' tables: the embedding stays in the mapping, a token reads one row */
    if (c->flags & ARCH_PER_LAYER_INPUT) {
        int64_t lp = (int64_t)c->n_layers * c->ple_dim;
        if (get_matrix(m, g ? "per_layer_token_embd.weight" : "model.embed_tokens_per_layer.weight", c->ple_vocab, lp,
                       &m->ple_embd, err) ||
            get_matrix(m, g ? "per_layer_model_proj.weight" : "model.per_layer_model_projection.weight", lp, c->dim,
                       &m->ple_proj, err) ||
            get_vector(m, g ? "per_layer_proj_norm.weight" : "model.per_layer_projection_norm.weight", c->ple_dim, 0,
                       &m->ple_norm, err))
            return -1;
    }
    int n_moe = 0;
    for (int l = 0; l < c->n_layers; l++) n_moe += (c->layer_flags[l] & LAYER_MOE) != 0;
    if (n_moe) {
        size_t n = (size_t)n_moe * 3 * (size_t)c->n_experts;
        m->experts = calloc((size_t)c->n_layers, sizeof *m->experts);
        m->expert_ptrs = calloc(n, sizeof *m->expert_ptrs);
        m->expert_views = calloc(n, sizeof *m->expert_views);
        m->expert_copies = calloc((size_t)c->n_layers, sizeof *m->expert_copies);
        if (!m->experts || !m->expert_ptrs || !m->expert_views || !m->expert_copies)
            return errf(err, "%s: out of memory", m->path);
    }
    for (int l = 0, k = 0; l < c->n_layers; l++) {
        if (load_layer(m, l, err)) return -1;
        if ((c->layer_flags[l] & LAYER_MOE) && load_experts(m, l, k++, err)) return -1;
    }
    note_type(m, m->tok_embd->type);
    note_type(m, m->lm_head->type);
    for (int l = 0; l < c->n_layers; l++) {
        const tensor *ts[LAYER_MATRICES];
        layer_matrices(&m->layers[l], ts);
        for (int i = 0; i < LAYER_MATRICES; i++)
            if (ts[i]) note_type(m, ts[i]->type);
        const expert_block *b = m->layers[l].moe;
        for (int e = 0; b && e < c->n_experts; e++) {
            note_type(m, b->gate[e]->type);
            note_type(m, b->down[e]->type);
        }
    }
    return 0;
}

/* ---- RoPE frequencies -------------------------------------------------------------- */

/* inv_freq[i] = 1 / (factor_i * theta^(2i/d)) over the d = rot_dim rotated dimensions,
 * in f32 as transformers computes it (factor 1 but for LongRoPE). */
static void rope_base(float *f, int rot_dim, float theta, const float *factors) {
    for (int i = 0; i < rot_dim / 2; i++) {
        float e = (float)(2 * i) / (float)rot_dim;
        f[i] = 1.0f / (factors ? factors[i] * powf(theta, e) : powf(theta, e));
    }
}

/* transformers' _compute_llama3_parameters, in f32. */
static void rope_llama3(float *f, const model_config *c) {
    float old = (float)c->rope_orig_max_pos, factor = c->rope_factor;
    float lo = c->rope_low_freq_factor, hi = c->rope_high_freq_factor;
    float low_wl = old / lo, high_wl = old / hi;
    for (int i = 0; i < c->rot_dim / 2; i++) {
        float wl = 2.0f * (float)M_PI / f[i];
        float base = wl > low_wl ? f[i] / factor : f[i];
        if (!(wl < high_wl) && !(wl > low_wl)) {
            float s = (old / wl - lo) / (hi - lo);
            base = (1.0f - s) * base / factor + s * base;
        }
        f[i] = base;
    }
}

/* transformers' _compute_yarn_parameters from the base frequencies f (theta^(-2i/d), each as 1 / pos_i): f32
 * throughout as torch computes it, the ramp's bounds rounded to f32 once. */
static void rope_yarn(float *f, const model_config *c) {
    double lo = c->yarn_low, hi = c->yarn_high == c->yarn_low ? c->yarn_high + 0.001 : c->yarn_high;
    float flo = (float)lo, span = (float)(hi - lo), factor = c->rope_factor;
    for (int i = 0; i < c->rot_dim / 2; i++) {
        float pos = powf(c->rope_theta, (float)(2 * i) / (float)c->rot_dim);
        float extra = 1.0f / pos, inter = 1.0f / (factor * pos);
        float r = ((float)i - flo) / span;
        r = r < 0.0f ? 0.0f : r > 1.0f ? 1.0f : r;
        float e = 1.0f - r;
        f[i] = inter * (1.0f - e) + extra * e;
    }
}

/* An F32 GGUF vector of n positive values (rope_freqs / rope_factors_*), or NULL if absent. */
static int gguf_rope_vector(const model *m, const char *name, int n, const tensor **out, char *err) {
    const tensor *t = m->gguf ? gguf_find_tensor(m->gguf, name) : NULL;
    *out = t;
    if (!t) return 0;
    if (t->type != DT_F32 || tensor_numel(t) != n)
        return errf(err, "%s: %s should be F32 with %d elements", m->path, name, n);
    for (int i = 0; i < n; i++) {
        float v;
        memcpy(&v, (const uint8_t *)t->data + 4 * i, 4);
        if (!(v > 0.0f) || !isfinite(v)) return errf(err, "%s: %s[%d] is not a positive number", m->path, name, i);
    }
    return 0;
}

/* The rotary frequency tables: the model's, the sliding layers' (own base, no
 * scaling: Gemma 3 scales its global layers only) and LongRoPE's long set. GGUF
 * files may carry the llama3 factors as rope_freqs.weight (llama.cpp divides the
 * frequency by them) and LongRoPE's as rope_factors_{short,long}.weight. */
static int rope_frequencies(model *m, char *err) {
    const model_config *c = &m->cfg;
    int half = c->rot_dim / 2, longrope = c->rope_scaling == ROPE_SCALING_LONGROPE;
    float *f = malloc((size_t)3 * half * sizeof(float));
    if (!f) return errf(err, "%s: out of memory", m->path);
    m->rope_inv_freq = f;
    m->rope_inv_freq_swa = c->rope_theta_swa > 0 ? f + half : NULL;
    m->rope_inv_freq_long = longrope ? f + 2 * half : NULL;
    const tensor *rf, *fs = NULL, *fl = NULL;
    if (gguf_rope_vector(m, "rope_freqs.weight", half, &rf, err)) return -1;
    if (longrope && !c->rope_factors_json &&
        (gguf_rope_vector(m, "rope_factors_short.weight", half, &fs, err) ||
         gguf_rope_vector(m, "rope_factors_long.weight", half, &fl, err)))
        return -1;
    if (longrope && !c->rope_factors_json && (!fs || !fl))
        return errf(err, "%s: LongRoPE scaling without rope_factors_short.weight and rope_factors_long.weight",
                    m->path);
    float fsv[CONFIG_MAX_ROT_PAIRS], flv[CONFIG_MAX_ROT_PAIRS];
    if (fs) memcpy(fsv, fs->data, (size_t)half * 4);
    if (fl) memcpy(flv, fl->data, (size_t)half * 4);
    rope_base(f, c->rot_dim, c->rope_theta, longrope ? (fs ? fsv : c->rope_short) : NULL);
    if (longrope) rope_base(m->rope_inv_freq_long, c->rot_dim, c->rope_theta, fl ? flv : c->rope_long);
    /* per-layer shapes: the sliding layers rotate their whole (smaller) head */
    if (m->rope_inv_freq_swa)
        rope_base(m->rope_inv_freq_swa, c->per_layer ? c->head_dim_swa : c->rot_dim, c->rope_theta_swa, NULL);
    if (c->rope_scaling == ROPE_SCALING_LLAMA3) rope_llama3(f, c);
    if (c->rope_scaling == ROPE_SCALING_YARN) rope_yarn(f, c);
    if (c->rope_scaling == ROPE_SCALING_LINEAR)
        for (int i = 0; i < half; i++) f[i] /= c->rope_factor;
    for (int i = 0; rf && i < half; i++) {
        float v;
        memcpy(&v, (const uint8_t *)rf->data + 4 * i, 4);
        f[i] /= v;
    }
    /* "proportional" RoPE (Gemma 4's full layers): the pairs past rope_pairs do not turn (frequency 0,
     * as transformers' table holds them; GGUF's 1e30 divisors mean the same) */
    for (int i = c->rope_pairs; c->rope_pairs && i < half; i++) f[i] = 0.0f;
    return 0;
}

/* ---- tokenizer --------------------------------------------------------------------- */

static int gguf_str_array(const gguf_file *g, const char *key, tok_str **out, size_t *n) {
    gguf_type et;
    uint64_t len;
    const void *data;
    *out = NULL;
    *n = 0;
    if (gguf_get_arr(g, key, &et, &len, &data) || et != GGUF_STRING) return -1;
    tok_str *a = malloc((size_t)(len ? len : 1) * sizeof *a);
    if (!a) return -1;
    for (uint64_t i = 0; i < len; i++) {
        gguf_str s;
        if (gguf_get_arr_str(g, key, i, &s)) {
            free(a);
            return -1;
        }
        a[i] = (tok_str){s.ptr, (size_t)s.len};
    }
    *out = a;
    *n = (size_t)len;
    return 0;
}

/* A numeric array of exactly n elements of type `want` (4 bytes each), copied aligned. */
static void *gguf_num_array(const gguf_file *g, const char *key, gguf_type want, size_t n) {
    gguf_type et;
    uint64_t len;
    const void *data;
    if (gguf_get_arr(g, key, &et, &len, &data) || et != want || len != n) return NULL;
    void *a = malloc(n * 4 + 4);
    if (a) memcpy(a, data, n * 4);
    return a;
}

static tok_str gguf_tok_str(const gguf_file *g, const char *key) {
    gguf_str s;
    if (gguf_get_str(g, key, &s)) return (tok_str){"", 0};
    return (tok_str){s.ptr, (size_t)s.len};
}

static int32_t gguf_int_or(const gguf_file *g, const char *key, int32_t dflt) {
    int64_t v;
    return gguf_get_int(g, key, &v) ? dflt : (int32_t)v;
}

static int load_gguf_tokenizer(model *m, char *err) {
    const gguf_file *g = m->gguf;
    if (!gguf_has_key(g, "tokenizer.ggml.tokens")) return 0; /* ids-only model */
    tok_spec sp = {0};
    tok_str *tokens = NULL, *merges = NULL;
    int32_t *types = NULL;
    float *scores = NULL;
    int rc = -1;
    sp.model = gguf_tok_str(g, "tokenizer.ggml.model");
    if (sp.model.len == 4 && !memcmp(sp.model.ptr, "none", 4)) return 0;
    sp.pre = gguf_tok_str(g, "tokenizer.ggml.pre");
    if (gguf_str_array(g, "tokenizer.ggml.tokens", &tokens, &sp.n_tokens)) {
        errf(err, "%s: tokenizer.ggml.tokens is not a string array", m->path);
        goto out;
    }
    sp.tokens = tokens;
    if (gguf_has_key(g, "tokenizer.ggml.merges") &&
        gguf_str_array(g, "tokenizer.ggml.merges", &merges, &sp.n_merges)) {
        errf(err, "%s: tokenizer.ggml.merges is not a string array", m->path);
        goto out;
    }
    sp.merges = merges;
    if (gguf_has_key(g, "tokenizer.ggml.token_type") &&
        !(types = gguf_num_array(g, "tokenizer.ggml.token_type", GGUF_INT32, sp.n_tokens))) {
        errf(err, "%s: tokenizer.ggml.token_type should be %zu int32 values", m->path, sp.n_tokens);
        goto out;
    }
    sp.token_types = types;
    if (gguf_has_key(g, "tokenizer.ggml.scores") &&
        !(scores = gguf_num_array(g, "tokenizer.ggml.scores", GGUF_FLOAT32, sp.n_tokens))) {
        errf(err, "%s: tokenizer.ggml.scores should be %zu float32 values", m->path, sp.n_tokens);
        goto out;
    }
    sp.scores = scores;
    sp.bos_id = gguf_int_or(g, "tokenizer.ggml.bos_token_id", -1);
    sp.eos_id = gguf_int_or(g, "tokenizer.ggml.eos_token_id", -1);
    sp.unk_id = gguf_int_or(g, "tokenizer.ggml.unknown_token_id", -1);
    sp.pad_id = gguf_int_or(g, "tokenizer.ggml.padding_token_id", -1);
    sp.add_bos = gguf_int_or(g, "tokenizer.ggml.add_bos_token", -1);
    sp.add_eos = gguf_int_or(g, "tokenizer.ggml.add_eos_token", -1);
    sp.add_space_prefix = gguf_int_or(g, "tokenizer.ggml.add_space_prefix", -1);
    sp.chat_template = gguf_tok_str(g, "tokenizer.chat_template");
    sp.arch = gguf_tok_str(g, "general.architecture");
    rc = tok_load_spec(&sp, m->path, &m->tok, err);
out:
    free(tokens);
    free(merges);
    free(types);
    free(scores);
    return rc;
}

static int load_dir_tokenizer(model *m, const char *dir, char *err) {
    char tj[4096], tc[4096];
    snprintf(tj, sizeof tj, "%s/tokenizer.json", dir);
    snprintf(tc, sizeof tc, "%s/tokenizer_config.json", dir);
    if (access(tj, R_OK) != 0) return 0; /* ids-only model */
    return tok_load_json(tj, access(tc, R_OK) == 0 ? tc : NULL, &m->tok, err);
}

/* ---- open -------------------------------------------------------------------------- */

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static int open_dir(model *m, const char *dir, const char *weights, char *err) {
    char cfg[4096], w[4096];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (access(cfg, R_OK) != 0) return errf(err, "%s: no readable config.json in this directory", dir);
    if (config_from_json(cfg, &m->cfg, err)) return -1;
    if (!weights) {
        snprintf(w, sizeof w, "%s/model.safetensors.index.json", dir);
        if (access(w, R_OK) != 0) snprintf(w, sizeof w, "%s/model.safetensors", dir);
        if (access(w, R_OK) != 0)
            return errf(err, "%s: no model.safetensors or model.safetensors.index.json", dir);
        weights = w;
    }
    if (st_open(weights, &m->st, err)) return -1;
    m->format = "safetensors";
    if (config_validate(&m->cfg, cfg, err)) return -1;
    return 0;
}

int model_open(const char *path, const model_options *opt, model **out, int *io_error, char *err) {
    *out = NULL;
    *io_error = 0;
    if (access(path, R_OK) != 0) {
        *io_error = 1;
        return errf(err, "%s: %s", path, strerror(errno));
    }
    model *m = calloc(1, sizeof *m);
    if (!m) return errf(err, "%s: out of memory", path);
    m->path = strdup(path);
    int rc = -1;
    if (!m->path) {
        errf(err, "%s: out of memory", path);
        goto fail;
    }
    if (is_dir(path)) {
        if (open_dir(m, path, NULL, err)) goto fail;
        if (!opt->no_tokenizer && load_dir_tokenizer(m, path, err)) goto fail;
    } else if (has_suffix(path, ".safetensors") || has_suffix(path, ".json")) {
        char *dir = strdup(path), *slash;
        if (!dir) goto fail;
        slash = strrchr(dir, '/');
        if (slash) *slash = '\0'; else strcpy(dir, ".");
        rc = open_dir(m, dir, path, err);
        if (!rc && !opt->no_tokenizer) rc = load_dir_tokenizer(m, dir, err);
        free(dir);
        if (rc) goto fail;
    } else {
        if (gguf_open(path, &m->gguf, err)) goto fail;
        m->format = "gguf";
        if (config_from_gguf(m->gguf, &m->cfg, err)) goto fail;
        if (config_validate(&m->cfg, path, err)) goto fail;
        if (!opt->no_tokenizer && load_gguf_tokenizer(m, err)) goto fail;
    }
    m->pool = pool_new(opt->n_threads); /* before the weights: a load may rewrite some (HF expert stacks) */
    if (!m->pool) {
        errf(err, "cannot start %d threads", opt->n_threads);
        goto fail;
    }
    if (load_weights(m, err)) goto fail;
    if (rope_frequencies(m, err)) goto fail;
    m->kern = kernels_select(opt->kernels);
    if (!m->kern) {
        errf(err, "--kernels %s: not available on this CPU or in this build", opt->kernels);
        goto fail;
    }
    int head_align = m->cfg.head_dim; /* whole heads of every layer: the largest (powers of two) */
    for (int l = 0; m->cfg.per_layer && l < m->cfg.n_layers; l++)
        if (m->cfg.layer_head_dim[l] > head_align) head_align = m->cfg.layer_head_dim[l];
    if (plan_build(&m->plan, m->layers, m->cfg.n_layers, m->lm_head, head_align, m->kern, pool_size(m->pool),
                   opt->exact, opt->split_all)) {
        errf(err, "out of memory planning the matmuls");
        goto fail;
    }
    if (!opt->exact && repack_weights(m, err)) goto fail;
    if (!opt->exact) affine_store_use_q8(m->affine, m->kern); /* MLX: int8 kernels on the file layout */
    plan_settle(&m->plan, m->kern);
    *out = m;
    return 0;
fail:
    model_free(m);
    return -1;
}

/* The tokenizer alone, no weights (`llmgen --tokenizer`): a model directory, a
 * tokenizer.json (tokenizer_config.json beside it is read when present) or a GGUF.
 * m->cfg stays zeroed apart from the vocabulary size. */
int model_open_tokenizer(const char *path, model **out, int *io_error, char *err) {
    *out = NULL;
    *io_error = 0;
    if (access(path, R_OK) != 0) {
        *io_error = 1;
        return errf(err, "%s: %s", path, strerror(errno));
    }
    model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return errf(err, "%s: out of memory", path);
    }
    int rc;
    if (is_dir(path)) {
        m->format = "safetensors";
        rc = load_dir_tokenizer(m, path, err);
        if (!rc && !m->tok) rc = errf(err, "%s: no tokenizer.json in this directory", path);
    } else if (has_suffix(path, ".json")) {
        char *dir = strdup(path), *slash, tc[4096];
        if (!dir) {
            model_free(m);
            return errf(err, "%s: out of memory", path);
        }
        slash = strrchr(dir, '/');
        if (slash) *slash = '\0'; else strcpy(dir, ".");
        snprintf(tc, sizeof tc, "%s/tokenizer_config.json", dir);
        free(dir);
        m->format = "tokenizer.json";
        rc = tok_load_json(path, access(tc, R_OK) == 0 ? tc : NULL, &m->tok, err);
    } else {
        m->format = "gguf";
        rc = gguf_open(path, &m->gguf, err);
        if (!rc) rc = load_gguf_tokenizer(m, err);
        if (!rc && !m->tok) rc = errf(err, "%s: this GGUF carries no tokenizer", path);
    }
    if (rc) {
        model_free(m);
        return -1;
    }
    m->cfg.vocab_size = (int)tok_vocab_size(m->tok);
    *out = m;
    return 0;
}

void model_free(model *m) {
    if (!m) return;
    if (m->pool) pool_free(m->pool);
    repack_free(m); /* before the layer table it walks is freed */
    plan_free(&m->plan);
    if (m->layers) {
        for (int l = 0; l < m->cfg.n_layers; l++)
            for (int i = 0; i < N_LAYER_SLOTS; i++)
                if (slot_used(&m->cfg, l, &LAYER_SLOTS[i]) && LAYER_SLOTS[i].cols < 0)
                    free(*(float **)((char *)&m->layers[l] + LAYER_SLOTS[i].field));
        free(m->layers);
    }
    free(m->views);
    for (int l = 0; m->experts && l < m->cfg.n_layers; l++) {
        expert_block *b = &m->experts[l];
        free(b->router_bias), free(b->gate_bias), free(b->up_bias), free(b->down_bias), free(b->choice_bias);
        if (m->expert_copies) free(m->expert_copies[l]);
    }
    free(m->expert_copies);
    free(m->layer_cfg);
    free(m->ple_norm);
    free(m->experts);
    free(m->expert_ptrs);
    free(m->expert_views);
    free(m->out_norm);
    free(m->rope_inv_freq);
    if (m->tok) tok_free(m->tok);
    if (m->gguf) gguf_close(m->gguf);
    if (m->st) st_close(m->st);
    affine_store_free(m->affine); /* last: the views above may still be walked until here */
    free(m->path);
    free(m);
}
