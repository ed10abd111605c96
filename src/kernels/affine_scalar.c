/* affine_scalar.c - portable reference for the MLX affine matmuls: the fallback on
 * any CPU without an affine kernel and the oracle of the ISA versions. It follows
 * the numerics of affine_kernels.h literally (16 lanes, fmaf, the reduce16 tree),
 * so the ISA kernels must match it bit for bit. */
#include "affine_kernels.h"

#include <math.h>

#include "base/util.h"

/* avx512.c's reduce16: halves, then quarters, then pairs. */
static float reduce16(const float l[16]) {
    float s8[8], s4[4];
    for (int i = 0; i < 8; i++) s8[i] = l[i + 8] + l[i];
    for (int i = 0; i < 4; i++) s4[i] = s8[i + 4] + s8[i];
    float a = s4[2] + s4[0], b = s4[3] + s4[1];
    return b + a;
}

/* The lane (0..15) that accumulates column c: 8-bit, c % 16; 4-bit, the pair of
 * c within its 32-column block (see affine_kernels.h). */
static int lane_of(int bits, int c) { return bits == 8 ? c & 15 : (c & 31) >> 1; }

static void affine_matmul(int bits, const void *w, size_t row_bytes, int cols, int r0, int r1,
                          const float *x, int ldx, int nt, float *y, int ldy) {
    const affine_weights *a = w;
    int per_word = 32 / bits, ng = cols / a->group;
    uint32_t mask = (1u << bits) - 1u;
    for (int r = r0; r < r1; r++) {
        const uint8_t *q = (const uint8_t *)a->q + (size_t)r * row_bytes;
        for (int t = 0; t < nt; t++) {
            const float *xt = x + (size_t)t * ldx;
            float lane[16] = {0};
            for (int g = 0; g < ng; g++) {
                float s = affine_param(a->scales, a->sdt, (size_t)r * ng + g);
                float b = affine_param(a->biases, a->sdt, (size_t)r * ng + g);
                for (int c = g * a->group; c < (g + 1) * a->group; c++) {
                    uint32_t word = rd_u32(q + 4 * (size_t)(c / per_word));
                    float v = (float)((word >> (bits * (c % per_word))) & mask) * s;
                    v = v + b;
                    lane[lane_of(bits, c)] = fmaf(v, xt[c], lane[lane_of(bits, c)]);
                }
            }
            y[(size_t)t * ldy + r] = reduce16(lane);
        }
    }
}

void affine4_matmul_scalar(const void *w, size_t row_bytes, int cols, int r0, int r1,
                           const float *x, int ldx, int nt, float *y, int ldy) {
    affine_matmul(4, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

void affine8_matmul_scalar(const void *w, size_t row_bytes, int cols, int r0, int r1,
                           const float *x, int ldx, int nt, float *y, int ldy) {
    affine_matmul(8, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

/* ---- int8 activations (fast mode) ------------------------------------------- */

/* Offset of element j (0..31) of block b in a q8_act row (kernels.h's quad order). */
static size_t quad_pos(int b, int j) {
    return (size_t)(b / 4) * 128 + (size_t)(j / 16) * 64 + (size_t)(b % 4) * 16 + (size_t)(j % 16);
}

void affine_q8_order(int bits, const q8_act *x, int t, int8_t *out) {
    const int8_t *q = x->q + (size_t)t * x->quads * 128;
    int nb = x->cols / 32;
    memset(out, 0, (size_t)x->quads * 128);
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < 32; j++) {
            /* 4-bit: column j of block b sits at (parity, block in quad, j / 2) */
            size_t o = bits == 8 ? (size_t)b * 32 + (size_t)j
                                 : (size_t)(b / 4) * 128 + (size_t)(j & 1) * 64 + (size_t)(b % 4) * 16 + (size_t)(j >> 1);
            out[o] = q[quad_pos(b, j)];
        }
}

void affine_q8_group_sums(const q8_act *x, int t, int group, float *sg) {
    const float *d = x->d + (size_t)t * x->quads * 4, *s = x->s + (size_t)t * x->quads * 4;
    int per = group / 32, ng = x->cols / group;
    for (int g = 0; g < ng; g++) {
        float v = 0.0f;
        for (int k = 0; k < per; k++) v += d[g * per + k] * s[g * per + k];
        sg[g] = v;
    }
}

/* Unsigned weight value c of a packed row. */
static int affine_q(int bits, const uint8_t *row, int c) {
    uint8_t byte = row[(size_t)c * bits / 8];
    return bits == 8 ? byte : (c & 1) ? byte >> 4 : byte & 0x0f;
}

static void affine_q8(int bits, const void *w, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    const affine_weights *a = w;
    int ng = cols / a->group, per = a->group / 32;
    size_t row_bytes = (size_t)cols * bits / 8;
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)a->q + (size_t)r * row_bytes;
        for (int t = 0; t < x->nt; t++) {
            const int8_t *q = x->q + (size_t)t * x->quads * 128;
            const float *d = x->d + (size_t)t * x->quads * 4, *s = x->s + (size_t)t * x->quads * 4;
            float acc = 0.0f;
            for (int g = 0; g < ng; g++) {
                float main = 0.0f, side = 0.0f;
                for (int b = g * per; b < (g + 1) * per; b++) {
                    int isum = 0;
                    for (int j = 0; j < 32; j++) isum += affine_q(bits, row, 32 * b + j) * q[quad_pos(b, j)];
                    main += d[b] * (float)isum;
                    side += d[b] * s[b];
                }
                size_t i = (size_t)r * ng + g;
                acc += affine_param(a->scales, a->sdt, i) * main + affine_param(a->biases, a->sdt, i) * side;
            }
            y[(size_t)t * ldy + r] = acc;
        }
    }
}

void affine4_q8_scalar(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    (void)rows;
    affine_q8(4, w, cols, r0, r1, x, y, ldy);
}

void affine8_q8_scalar(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    (void)rows;
    affine_q8(8, w, cols, r0, r1, x, y, ldy);
}
