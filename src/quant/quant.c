/* quant.c - the quantization-type table and the reference dequantizers.
 *
 * Each dequantizer mirrors gguf-py's numpy expression for its type, with the
 * same products and sums in the same order, so its f32 values are the ones HF
 * transformers computes with (tested against gguf-py output). */
#include "quant.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

const int8_t IQ4_KVALUES[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
const int8_t MXFP4_KVALUES[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* Byte offset of a field in a block: blocks in a mapping need not be aligned as the
 * structs are, so fields are read through byte pointers, never struct members. */
#define OFF(T, f) offsetof(block_##T, f)

/* ---- blocks of 32 ------------------------------------------------------------------ */

/* Byte j of qs holds element j (low nibble) and element j + 16 (high nibble). */
static int nib(const uint8_t *qs, int l) { return l < 16 ? qs[l] & 15 : qs[l - 16] >> 4; }

void dq32_q8_0(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk));
    for (int l = 0; l < 32; l++) out[l] = (float)(int8_t)blk[2 + l] * d;
}

void dq32_q4_0(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk));
    for (int l = 0; l < 32; l++) out[l] = d * (float)(nib(blk + 2, l) - 8);
}

void dq32_q4_1(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk)), m = f16_to_f32(rd_u16(blk + 2));
    for (int l = 0; l < 32; l++) out[l] = d * (float)nib(blk + 4, l) + m;
}

/* Q5_0 / Q5_1: the fifth bit of element l is bit l of qh (a little-endian u32). */
void dq32_q5_0(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk));
    uint32_t qh = rd_u32(blk + 2);
    for (int l = 0; l < 32; l++) out[l] = d * (float)((nib(blk + 6, l) | (int)((qh >> l) & 1) << 4) - 16);
}

void dq32_q5_1(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk)), m = f16_to_f32(rd_u16(blk + 2));
    uint32_t qh = rd_u32(blk + 4);
    for (int l = 0; l < 32; l++) out[l] = d * (float)(nib(blk + 8, l) | (int)((qh >> l) & 1) << 4) + m;
}

void dq32_iq4_nl(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = f16_to_f32(rd_u16(blk));
    for (int l = 0; l < 32; l++) out[l] = d * (float)IQ4_KVALUES[nib(blk + 2, l)];
}

/* gguf-py: kvalues[q] * 2^(e - 128), a product with a power of two (exact unless it underflows). */
void dq32_mxfp4(const uint8_t *blk, int j, float *out) {
    (void)j;
    float d = mxfp4_scale(blk[0]);
    for (int l = 0; l < 32; l++) out[l] = d * (float)MXFP4_KVALUES[nib(blk + 1, l)];
}

/* ---- super-blocks of 256 ---------------------------------------------------------------- */

void dq32_q2_k(const uint8_t *blk, int j, float *out) {
    const uint8_t *scales = blk + OFF(q2_K, scales), *qs = blk + OFF(q2_K, qs);
    float d = f16_to_f32(rd_u16(blk + OFF(q2_K, d)));
    float dmin = f16_to_f32(rd_u16(blk + OFF(q2_K, dmin)));
    for (int l = 0; l < 32; l++) {
        int v = 32 * j + l, sc = scales[v / 16];
        float dl = d * (float)(sc & 15), ml = dmin * (float)(sc >> 4);
        out[l] = dl * (float)q2k_crumb(qs, v) - ml;
    }
}

void dq32_q3_k(const uint8_t *blk, int j, float *out) {
    const uint8_t *hmask = blk + OFF(q3_K, hmask), *qs = blk + OFF(q3_K, qs), *scales = blk + OFF(q3_K, scales);
    float d = f16_to_f32(rd_u16(blk + OFF(q3_K, d)));
    for (int l = 0; l < 32; l++) {
        int v = 32 * j + l;
        float dl = d * (float)q3k_scale(scales, v / 16);
        int h = (hmask[v % 32] >> (v / 32)) & 1; /* set: no offset; clear: -4 */
        out[l] = dl * (float)(q2k_crumb(qs, v) - (h ? 0 : 4));
    }
}

void dq32_q4_k(const uint8_t *blk, int j, float *out) {
    float d = f16_to_f32(rd_u16(blk)), dmin = f16_to_f32(rd_u16(blk + 2));
    int sc, m;
    q4k_scale_min(blk + OFF(q4_K, scales), j, &sc, &m);
    float dl = d * (float)sc, dm = dmin * (float)m;
    const uint8_t *q = blk + OFF(q4_K, qs) + 32 * (j / 2);
    for (int l = 0; l < 32; l++) out[l] = dl * (float)(j % 2 ? q[l] >> 4 : q[l] & 15) - dm;
}

void dq32_q5_k(const uint8_t *blk, int j, float *out) {
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

void dq32_q6_k(const uint8_t *blk, int j, float *out) {
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

void dq32_iq4_xs(const uint8_t *blk, int j, float *out) {
    const uint8_t *scales_l = blk + OFF(iq4_xs, scales_l), *qs = blk + OFF(iq4_xs, qs);
    float d = f16_to_f32(rd_u16(blk));
    int sh = rd_u16(blk + 2);
    int ls = ((scales_l[j / 2] >> (4 * (j % 2))) & 15) | ((sh >> (2 * j)) & 3) << 4;
    float dl = d * (float)(ls - 32);
    for (int l = 0; l < 32; l++) out[l] = dl * (float)IQ4_KVALUES[nib(qs + 16 * j, l)];
}

/* ---- the table (DTYPE_TRAITS, quant.h) ------------------------------------------------ */

static const dtype_traits UNKNOWN = {"?", -1, 0, 0, NULL, 0, DT_COUNT, {0}};

const dtype_traits *dtype_info(dtype t) { return (unsigned)t < DT_COUNT ? &DTYPE_TRAITS[t] : &UNKNOWN; }

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
        if (DTYPE_TRAITS[t].ggml == (int)id && DTYPE_TRAITS[t].weight) {
            *out = (dtype)t;
            return 0;
        }
    return -1;
}

void dtype_gguf_supported(char *buf, size_t n) {
    size_t len = 0;
    if (n) buf[0] = 0;
    for (int t = 0; t < DT_COUNT && n; t++)
        if (DTYPE_TRAITS[t].ggml >= 0 && DTYPE_TRAITS[t].weight) {
            int k = snprintf(buf + len, n - len, "%s%s", len ? " " : "", DTYPE_TRAITS[t].name);
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
