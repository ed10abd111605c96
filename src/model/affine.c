/* affine.c - assemble MLX affine matrices from the three tensors mlx_lm writes per
 * quantized linear (X.weight U32 (out, in*bits/32), X.scales and X.biases
 * (out, in/group)), and dequantize rows of them (embedding lookup).
 *
 * Dequantization follows mlx's CPU kernels (mlx/backend/cpu/quantized.cpp,
 * _qmm_t_simd for 4 and 8 bits): the scale and bias are converted to f32, then
 * w = (float)q * scale, then w + bias, two roundings, no fused multiply-add. */
#include "affine.h"

#include <stdlib.h>

#include "base/util.h"

typedef struct affine_node {
    tensor t;          /* the assembled view; t.data == &aw. First member: a tensor of
                          type DT_AFFINE* is always one of these (affine_q8_weights) */
    struct affine_node *next;
    affine_weights aw; /* pointers into the mapping */
    int q8;            /* 1: fast mode, matmuls take the int8-activation kernels */
} affine_node;

struct affine_store {
    affine_node *head;
};

int affine_bits(dtype t) { return t == DT_AFFINE4 ? 4 : t == DT_AFFINE8 ? 8 : 0; }

static int is_param_type(dtype t) { return t == DT_F32 || t == DT_F16 || t == DT_BF16; }

int affine_assemble(affine_store **store, const tensor *weight, const tensor *scales,
                    const tensor *biases, int64_t rows, int64_t cols, const tensor **out,
                    const char *path, char *err) {
    const char *wn = weight->name;
    if (weight->type != DT_U32 || weight->ndim != 2 || weight->shape[0] != rows)
        return errf(err, "%s: tensor %s should be U32 (%lld, packed) for an MLX quantized (%lld, %lld) matrix",
                    path, wn, (long long)rows, (long long)rows, (long long)cols);
    int64_t words = weight->shape[1];
    int bits = cols > 0 && (words * 32) % cols == 0 ? (int)(words * 32 / cols) : 0;
    if (bits != 4 && bits != 8)
        return errf(err, "%s: tensor %s has %lld packed words per row for %lld inputs: not 4- or 8-bit "
                    "(expected %lld or %lld)", path, wn, (long long)words, (long long)cols,
                    (long long)(cols / 8), (long long)(cols / 4));
    if (!scales || !biases)
        return errf(err, "%s: tensor %s is packed (U32) but its %s are missing", path, wn,
                    !scales ? "scales" : "biases");
    if (scales->ndim != 2 || scales->shape[0] != rows || scales->shape[1] <= 0 ||
        cols % scales->shape[1] != 0)
        return errf(err, "%s: tensor %s should be (%lld, %lld / group_size)", path, scales->name,
                    (long long)rows, (long long)cols);
    int64_t group = cols / scales->shape[1];
    if (group != 32 && group != 64 && group != 128)
        return errf(err, "%s: tensor %s gives a group size of %lld; 32, 64 or 128 are supported", path,
                    scales->name, (long long)group);
    if (!is_param_type(scales->type))
        return errf(err, "%s: tensor %s has dtype %s; expected F32, F16 or BF16", path, scales->name,
                    dtype_name(scales->type));
    if (biases->type != scales->type || biases->ndim != 2 || biases->shape[0] != rows ||
        biases->shape[1] != scales->shape[1])
        return errf(err, "%s: tensor %s should be %s (%lld, %lld) like its scales", path, biases->name,
                    dtype_name(scales->type), (long long)rows, (long long)scales->shape[1]);
    if (!*store && !(*store = calloc(1, sizeof **store))) return errf(err, "%s: out of memory", path);
    affine_node *n = calloc(1, sizeof *n);
    if (!n) return errf(err, "%s: out of memory", path);
    n->aw = (affine_weights){weight->data, scales->data, biases->data, (int)scales->type, (int)group};
    n->t = (tensor){
        .name = wn,
        .type = bits == 4 ? DT_AFFINE4 : DT_AFFINE8,
        .ndim = 2,
        .shape = {rows, cols},
        .data = &n->aw,
        .nbytes = weight->nbytes + scales->nbytes + biases->nbytes,
    };
    n->next = (*store)->head;
    (*store)->head = n;
    *out = &n->t;
    return 0;
}

int affine_split(affine_store **store, const tensor *t, int64_t row0, int64_t rows, const tensor **out,
                 const char *path, char *err) {
    const affine_weights *a = t->data;
    int64_t cols = t->shape[1], ng = cols / a->group;
    size_t psz = dtype_row_bytes((dtype)a->sdt, 1);
    affine_node *n = calloc(1, sizeof *n);
    if (!n) return errf(err, "%s: out of memory", path);
    n->aw = *a;
    n->aw.q = (const uint8_t *)a->q + (size_t)row0 * dtype_row_bytes(t->type, cols);
    n->aw.scales = (const uint8_t *)a->scales + (size_t)(row0 * ng) * psz;
    n->aw.biases = (const uint8_t *)a->biases + (size_t)(row0 * ng) * psz;
    n->t = *t;
    n->t.shape[0] = rows;
    n->t.data = &n->aw;
    n->t.nbytes = (size_t)rows * (dtype_row_bytes(t->type, cols) + 2 * (size_t)ng * psz);
    n->next = (*store)->head;
    (*store)->head = n;
    *out = &n->t;
    return 0;
}

void affine_store_free(affine_store *s) {
    if (!s) return;
    for (affine_node *n = s->head, *next; n; n = next) {
        next = n->next;
        free(n);
    }
    free(s);
}

void affine_row_f32(const tensor *t, int64_t row, float *out) {
    const affine_weights *a = t->data;
    int bits = affine_bits(t->type), per_word = 32 / bits;
    int64_t cols = t->shape[1], ng = cols / a->group;
    uint32_t mask = (1u << bits) - 1u;
    const uint8_t *q = (const uint8_t *)a->q + (size_t)row * dtype_row_bytes(t->type, cols);
    for (int64_t g = 0; g < ng; g++) {
        float s = affine_param(a->scales, a->sdt, (size_t)(row * ng + g));
        float b = affine_param(a->biases, a->sdt, (size_t)(row * ng + g));
        for (int64_t c = g * a->group; c < (g + 1) * a->group; c++) {
            uint32_t w = rd_u32(q + 4 * (size_t)(c / per_word));
            float v = (float)((w >> (bits * (c % per_word))) & mask) * s;
            out[c] = v + b;
        }
    }
}

void affine_store_use_q8(affine_store *s, const kernels *k) {
    if (!s) return;
    for (affine_node *n = s->head; n; n = n->next) n->q8 = k->matmul_q8[n->t.type] != NULL;
}

const void *affine_q8_weights(const tensor *t) {
    if (!affine_bits(t->type)) return NULL;
    const affine_node *n = (const affine_node *)t;
    return n->q8 ? &n->aw : NULL;
}
