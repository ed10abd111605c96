/* quant.c - the quantization-type table and the reference dequantizers.
 *
 * Each dequantizer mirrors gguf-py's numpy expression for its type, with the
 * same products and sums in the same order, so its f32 values are the ones HF
 * transformers computes with (tested against gguf-py output). */
#include "quant.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

const int8_t IQ4_KVALUES[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* Byte offset of a field in a block: blocks in a mapping need not be aligned as the
 * structs are, so fields are read through byte pointers, never struct members. */
#define OFF(T, f) offsetof(block_##T, f)

/* ---- blocks of 32 ------------------------------------------------------------------ */

/* Byte j of qs holds element j (low nibble) and element j + 16 (high nibble). */
static int nib(const uint8_t *qs, int l) { return l < 16 ? qs[l] & 15 : qs[l - 16] >> 4; }

static void dq_q8_0(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk));
    for (int l = 0; l < 32; l++) out[l] = (float)(int8_t)blk[2 + l] * d;
}

static void dq_q4_0(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk));
    for (int l = 0; l < 32; l++) out[l] = d * (float)(nib(blk + 2, l) - 8);
}

static void dq_q4_1(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk)), m = f16_to_f32(rd_u16(blk + 2));
    for (int l = 0; l < 32; l++) out[l] = d * (float)nib(blk + 4, l) + m;
}

/* Q5_0 / Q5_1: the fifth bit of element l is bit l of qh (a little-endian u32). */
static void dq_q5_0(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk));
    uint32_t qh = rd_u32(blk + 2);
    for (int l = 0; l < 32; l++) out[l] = d * (float)((nib(blk + 6, l) | (int)((qh >> l) & 1) << 4) - 16);
}

static void dq_q5_1(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk)), m = f16_to_f32(rd_u16(blk + 2));
    uint32_t qh = rd_u32(blk + 4);
    for (int l = 0; l < 32; l++) out[l] = d * (float)(nib(blk + 8, l) | (int)((qh >> l) & 1) << 4) + m;
}

static void dq_iq4_nl(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk));
    for (int l = 0; l < 32; l++) out[l] = d * (float)IQ4_KVALUES[nib(blk + 2, l)];
}

/* ---- super-blocks of 256 ---------------------------------------------------------------- */

static void dq_q2_k(const uint8_t *blk, int j, float *out) {
    const uint8_t *scales = blk + OFF(q2_K, scales), *qs = blk + OFF(q2_K, qs);
    float d = f16_to_f32(rd_u16(blk + OFF(q2_K, d)));
    float dmin = f16_to_f32(rd_u16(blk + OFF(q2_K, dmin)));
    for (int l = 0; l < 32; l++) {
        int v = 32 * j + l, sc = scales[v / 16];
        float dl = d * (float)(sc & 15), ml = dmin * (float)(sc >> 4);
        out[l] = dl * (float)q2k_crumb(qs, v) - ml;
    }
}

static void dq_q3_k(const uint8_t *blk, int j, float *out) {
    const uint8_t *hmask = blk + OFF(q3_K, hmask), *qs = blk + OFF(q3_K, qs), *scales = blk + OFF(q3_K, scales);
    float d = f16_to_f32(rd_u16(blk + OFF(q3_K, d)));
    for (int l = 0; l < 32; l++) {
        int v = 32 * j + l;
        float dl = d * (float)q3k_scale(scales, v / 16);
        int h = (hmask[v % 32] >> (v / 32)) & 1; /* set: no offset; clear: -4 */
        out[l] = dl * (float)(q2k_crumb(qs, v) - (h ? 0 : 4));
    }
}

static void dq_q4_k(const uint8_t *blk, int j, float *out) {
    float d = f16_to_f32(rd_u16(blk)), dmin = f16_to_f32(rd_u16(blk + 2));
    int sc, m;
    q4k_scale_min(blk + OFF(q4_K, scales), j, &sc, &m);
    float dl = d * (float)sc, dm = dmin * (float)m;
    const uint8_t *q = blk + OFF(q4_K, qs) + 32 * (j / 2);
    for (int l = 0; l < 32; l++) out[l] = dl * (float)(j % 2 ? q[l] >> 4 : q[l] & 15) - dm;
}

static void dq_q5_k(const uint8_t *blk, int j, float *out) {
    const uint8_t *qh = blk + OFF(q5_K, qh);
    float d = f16_to_f32(rd_u16(blk)), dmin = f16_to_f32(rd_u16(blk + 2));
    int sc, m;
    q4k_scale_min(blk + OFF(q5_K, scales), j, &sc, &m);
    float dl = d * (float)sc, dm = dmin * (float)m;
    const uint8_t *q = blk + OFF(q5_K, qs) + 32 * (j / 2);
    for (int l = 0; l < 32; l++) {
        int v = (j % 2 ? q[l] >> 4 : q[l] & 15) | ((qh[l] >> j) & 1) << 4;
        out[l] = dl * (float)v - dm;
    }
}

static void dq_q6_k(const uint8_t *blk, int j, float *out) {
    const uint8_t *ql = blk + OFF(q6_K, ql), *qh = blk + OFF(q6_K, qh);
    const int8_t *scales = (const int8_t *)(blk + OFF(q6_K, scales));
    float d = f16_to_f32(rd_u16(blk + OFF(q6_K, d)));
    for (int l = 0; l < 32; l++) {
        int v = 32 * j + l, h = v / 128, u = v % 128;
        int lo = u < 64 ? ql[64 * h + u] & 15 : ql[64 * h + u - 64] >> 4;
        int hi = (qh[32 * h + u % 32] >> (2 * (u / 32))) & 3;
        float dl = d * (float)scales[v / 16];
        out[l] = dl * (float)((lo | hi << 4) - 32);
    }
}

static void dq_iq4_xs(const uint8_t *blk, int j, float *out) {
    const uint8_t *scales_l = blk + OFF(iq4_xs, scales_l), *qs = blk + OFF(iq4_xs, qs);
    float d = f16_to_f32(rd_u16(blk));
    int sh = rd_u16(blk + 2);
    int ls = ((scales_l[j / 2] >> (4 * (j % 2))) & 15) | ((sh >> (2 * j)) & 3) << 4;
    float dl = d * (float)(ls - 32);
    for (int l = 0; l < 32; l++) out[l] = dl * (float)IQ4_KVALUES[nib(qs + 16 * j, l)];
}

/* ---- the table ------------------------------------------------------------------------ */

/* packs_as: Q4_0, Q4_1 and Q8_0 pack as themselves, and so do Q5_0, Q5_1, Q6_K and
 * Q4_K: packed layouts of their own of about the file's size (kernels.h,
 * kernels/q5_packed.c, q6k_packed.c, q4k_packed.c), lossless, int8 kernels on every
 * ISA. (Q5_0 used to become packed Q8_0, int8 u - 16: lossless too, but 55% larger,
 * which decode streams and peak memory holds; Q4_K used to become packed Q4_1 with
 * f16-rounded scales and mins, 5 bits per weight instead of Q4_K's 4.625 packed.) */
static const dtype_traits TRAITS[DT_COUNT] = {
    [DT_F32] = {"F32", 0, 1, 4, NULL, 1, DT_COUNT},
    [DT_F16] = {"F16", 1, 1, 2, NULL, 1, DT_COUNT},
    [DT_BF16] = {"BF16", 30, 1, 2, NULL, 1, DT_COUNT},
    [DT_Q8_0] = {"Q8_0", 8, 32, 34, dq_q8_0, 1, DT_Q8_0},
    [DT_Q4_0] = {"Q4_0", 2, 32, 18, dq_q4_0, 1, DT_Q4_0},
    [DT_Q4_1] = {"Q4_1", 3, 32, 20, dq_q4_1, 1, DT_Q4_1},
    [DT_Q5_0] = {"Q5_0", 6, 32, 22, dq_q5_0, 1, DT_Q5_0},
    [DT_Q5_1] = {"Q5_1", 7, 32, 24, dq_q5_1, 1, DT_Q5_1},
    [DT_Q2_K] = {"Q2_K", 10, QK_K, 84, dq_q2_k, 1, DT_COUNT},
    [DT_Q3_K] = {"Q3_K", 11, QK_K, 110, dq_q3_k, 1, DT_COUNT},
    [DT_Q4_K] = {"Q4_K", 12, QK_K, 144, dq_q4_k, 1, DT_Q4_K},
    [DT_Q5_K] = {"Q5_K", 13, QK_K, 176, dq_q5_k, 1, DT_COUNT},
    [DT_Q6_K] = {"Q6_K", 14, QK_K, 210, dq_q6_k, 1, DT_Q6_K},
    [DT_IQ4_NL] = {"IQ4_NL", 20, 32, 18, dq_iq4_nl, 1, DT_COUNT},
    [DT_IQ4_XS] = {"IQ4_XS", 23, QK_K, 136, dq_iq4_xs, 1, DT_COUNT},
    /* safetensors-only plain types: not weights */
    [DT_F64] = {"F64", 28, 1, 8, NULL, 0, DT_COUNT},
    [DT_I64] = {"I64", -1, 1, 8, NULL, 0, DT_COUNT},
    [DT_I32] = {"I32", -1, 1, 4, NULL, 0, DT_COUNT},
    [DT_I16] = {"I16", -1, 1, 2, NULL, 0, DT_COUNT},
    [DT_I8] = {"I8", -1, 1, 1, NULL, 0, DT_COUNT},
    [DT_U8] = {"U8", -1, 1, 1, NULL, 0, DT_COUNT},
    [DT_U32] = {"U32", -1, 1, 4, NULL, 0, DT_COUNT},
    [DT_BOOL] = {"BOOL", -1, 1, 1, NULL, 0, DT_COUNT},
    /* MLX affine: a "block" is one u32 word of packed values (scales live apart, affine.c) */
    [DT_AFFINE4] = {"AFFINE4", -1, 8, 4, NULL, 1, DT_COUNT},
    [DT_AFFINE8] = {"AFFINE8", -1, 4, 4, NULL, 1, DT_COUNT},
    /* in memory only: MLX 4-bit repacked, 32 values in 16 bytes of nibbles plus a share
       of the group's f16 scale and bias (4 bytes per 64 or 128 values) */
    [DT_Q4_1G64] = {"Q4_1G64", -1, 32, 18, NULL, 0, DT_COUNT},
    [DT_Q4_1G128] = {"Q4_1G128", -1, 32, 17, NULL, 0, DT_COUNT},
};

static const dtype_traits UNKNOWN = {"?", -1, 0, 0, NULL, 0, DT_COUNT};

const dtype_traits *dtype_info(dtype t) { return (unsigned)t < DT_COUNT ? &TRAITS[t] : &UNKNOWN; }

const char *dtype_name(dtype t) { return dtype_info(t)->name; }
int dtype_block_elems(dtype t) { return dtype_info(t)->block_elems; }
int dtype_block_bytes(dtype t) { return dtype_info(t)->block_bytes; }

size_t dtype_row_bytes(dtype t, int64_t n) {
    int be = dtype_block_elems(t);
    if (be <= 0 || n < 0 || n % be) return 0;
    return (size_t)(n / be) * (size_t)dtype_block_bytes(t);
}

/* GGUF weight types llmgen reads: every row with a GGUF id that is a weight. */
int dtype_from_ggml(uint32_t id, dtype *out) {
    for (int t = 0; t < DT_COUNT; t++)
        if (TRAITS[t].ggml == (int)id && TRAITS[t].weight) {
            *out = (dtype)t;
            return 0;
        }
    return -1;
}

void dtype_gguf_supported(char *buf, size_t n) {
    size_t len = 0;
    if (n) buf[0] = 0;
    for (int t = 0; t < DT_COUNT && n; t++)
        if (TRAITS[t].ggml >= 0 && TRAITS[t].weight) {
            int k = snprintf(buf + len, n - len, "%s%s", len ? " " : "", TRAITS[t].name);
            if (k < 0 || (size_t)k >= n - len) break;
            len += (size_t)k;
        }
}

const char *ggml_type_name(uint32_t id) {
    static const char *names[] = {
        [0] = "F32",      [1] = "F16",      [2] = "Q4_0",     [3] = "Q4_1",    [6] = "Q5_0",
        [7] = "Q5_1",     [8] = "Q8_0",     [9] = "Q8_1",     [10] = "Q2_K",   [11] = "Q3_K",
        [12] = "Q4_K",    [13] = "Q5_K",    [14] = "Q6_K",    [15] = "Q8_K",   [16] = "IQ2_XXS",
        [17] = "IQ2_XS",  [18] = "IQ3_XXS", [19] = "IQ1_S",   [20] = "IQ4_NL", [21] = "IQ3_S",
        [22] = "IQ2_S",   [23] = "IQ4_XS",  [24] = "I8",      [25] = "I16",    [26] = "I32",
        [27] = "I64",     [28] = "F64",     [29] = "IQ1_M",   [30] = "BF16",   [34] = "TQ1_0",
        [35] = "TQ2_0",   [39] = "MXFP4",
    };
    if (id < sizeof names / sizeof names[0] && names[id]) return names[id];
    return "unknown";
}

void dtype_dequant_row(dtype t, const void *data, int64_t cols, int64_t row, float *out) {
    const dtype_traits *tr = dtype_info(t);
    const uint8_t *p = (const uint8_t *)data + (size_t)row * dtype_row_bytes(t, cols);
    switch (t) {
    case DT_F32: memcpy(out, p, (size_t)cols * 4); return;
    case DT_F16: for (int64_t i = 0; i < cols; i++) out[i] = f16_to_f32(rd_u16(p + 2 * i)); return;
    case DT_BF16: for (int64_t i = 0; i < cols; i++) out[i] = bf16_to_f32(rd_u16(p + 2 * i)); return;
    default: break;
    }
    if (!tr->dequant32) {
        memset(out, 0, (size_t)cols * sizeof(float));
        return;
    }
    int per = tr->block_elems / 32;
    for (int64_t b = 0; b < cols / tr->block_elems; b++)
        for (int j = 0; j < per; j++)
            tr->dequant32(p + (size_t)b * tr->block_bytes, j, out + b * tr->block_elems + 32 * j);
}
