/* scalar.c - portable reference kernels: the fallback on any CPU and the oracle
 * the ISA kernels are tested against. Plain loops, f32 accumulation in
 * element order. */
#include "kernels.h"

#include "affine_kernels.h" /* the MLX affine kernels live in affine_scalar.c */
#include "attn_kernels.h"   /* attention and fast softmax / SwiGLU: attn_scalar.c */
#include "dequant.h"

#include <math.h>

#include "base/util.h"

/* Dot product of one stored row with f32 activations, one per weight dtype. */
typedef float (*row_dot_fn)(const uint8_t *w, const float *x, int cols);

static float dot_f32_row(const uint8_t *w, const float *x, int cols) {
    float s = 0.0f;
    for (int c = 0; c < cols; c++) {
        float v;
        memcpy(&v, w + 4 * (size_t)c, 4);
        s += v * x[c];
    }
    return s;
}

static float dot_f16_row(const uint8_t *w, const float *x, int cols) {
    float s = 0.0f;
    for (int c = 0; c < cols; c++) s += f16_to_f32(rd_u16(w + 2 * (size_t)c)) * x[c];
    return s;
}

static float dot_bf16_row(const uint8_t *w, const float *x, int cols) {
    float s = 0.0f;
    for (int c = 0; c < cols; c++) s += bf16_to_f32(rd_u16(w + 2 * (size_t)c)) * x[c];
    return s;
}

/* Quantized rows: blocks of 32. Within a block the integer-weighted sum is
 * formed first and scaled once, as the SIMD kernels do. */
static float dot_q8_0_row(const uint8_t *w, const float *x, int cols) {
    float s = 0.0f;
    for (int b = 0; b < cols / 32; b++, w += 34, x += 32) {
        float d = f16_to_f32(rd_u16(w));
        const int8_t *q = (const int8_t *)(w + 2);
        float acc = 0.0f;
        for (int j = 0; j < 32; j++) acc += (float)q[j] * x[j];
        s += d * acc;
    }
    return s;
}

/* Q4_0 / Q4_1 nibble order: byte j holds element j (low) and j+16 (high). */
static float dot_q4_0_row(const uint8_t *w, const float *x, int cols) {
    float s = 0.0f;
    for (int b = 0; b < cols / 32; b++, w += 18, x += 32) {
        float d = f16_to_f32(rd_u16(w));
        const uint8_t *qs = w + 2;
        float acc = 0.0f;
        for (int j = 0; j < 16; j++) {
            acc += (float)((qs[j] & 0x0f) - 8) * x[j];
            acc += (float)((qs[j] >> 4) - 8) * x[j + 16];
        }
        s += d * acc;
    }
    return s;
}

static float dot_q4_1_row(const uint8_t *w, const float *x, int cols) {
    float s = 0.0f;
    for (int b = 0; b < cols / 32; b++, w += 20, x += 32) {
        float d = f16_to_f32(rd_u16(w));
        float m = f16_to_f32(rd_u16(w + 2));
        const uint8_t *qs = w + 4;
        float acc = 0.0f, xsum = 0.0f;
        for (int j = 0; j < 16; j++) {
            acc += (float)(qs[j] & 0x0f) * x[j];
            acc += (float)(qs[j] >> 4) * x[j + 16];
            xsum += x[j] + x[j + 16];
        }
        s += d * acc + m * xsum;
    }
    return s;
}

/* The other GGUF types: each sub-block of 32 decoded by the type table's
 * reference dequantizer (the exact gguf-py values), summed in element order,
 * then added to the row's sum. */
static float dot_dq_row(dtype dt, const uint8_t *w, const float *x, int cols) {
    float s = 0.0f, v[32];
    for (int b = 0; b < cols / 32; b++, x += 32) {
        int j = 0;
        const uint8_t *blk = dq_sub_block(dt, w, b, &j);
        dq_ref32(dt, blk, j, v);
        float acc = 0.0f;
        for (int l = 0; l < 32; l++) acc += v[l] * x[l];
        s += acc;
    }
    return s;
}

#define DEFINE_DQ_DOT(NAME, DT) \
    static float NAME(const uint8_t *w, const float *x, int cols) { return dot_dq_row(DT, w, x, cols); }
DEFINE_DQ_DOT(dot_q5_0_row, DT_Q5_0)
DEFINE_DQ_DOT(dot_q5_1_row, DT_Q5_1)
DEFINE_DQ_DOT(dot_q2_k_row, DT_Q2_K)
DEFINE_DQ_DOT(dot_q3_k_row, DT_Q3_K)
DEFINE_DQ_DOT(dot_q4_k_row, DT_Q4_K)
DEFINE_DQ_DOT(dot_q5_k_row, DT_Q5_K)
DEFINE_DQ_DOT(dot_q6_k_row, DT_Q6_K)
DEFINE_DQ_DOT(dot_iq4_nl_row, DT_IQ4_NL)
DEFINE_DQ_DOT(dot_iq4_xs_row, DT_IQ4_XS)
DEFINE_DQ_DOT(dot_mxfp4_row, DT_MXFP4)

static void matmul_rows(row_dot_fn dot, const void *w, size_t row_bytes, int cols, int r0, int r1,
                        const float *x, int ldx, int nt, float *y, int ldy) {
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)w + (size_t)r * row_bytes;
        for (int t = 0; t < nt; t++) y[(size_t)t * ldy + r] = dot(row, x + (size_t)t * ldx, cols);
    }
}

#define DEFINE_MATMUL(NAME, DOT)                                                               \
    static void NAME(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x, \
                     int ldx, int nt, float *y, int ldy) {                                       \
        matmul_rows(DOT, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);                        \
    }

DEFINE_MATMUL(matmul_f32, dot_f32_row)
DEFINE_MATMUL(matmul_f16, dot_f16_row)
DEFINE_MATMUL(matmul_bf16, dot_bf16_row)
DEFINE_MATMUL(matmul_q8_0, dot_q8_0_row)
DEFINE_MATMUL(matmul_q4_0, dot_q4_0_row)
DEFINE_MATMUL(matmul_q4_1, dot_q4_1_row)
DEFINE_MATMUL(matmul_q5_0, dot_q5_0_row)
DEFINE_MATMUL(matmul_q5_1, dot_q5_1_row)
DEFINE_MATMUL(matmul_q2_k, dot_q2_k_row)
DEFINE_MATMUL(matmul_q3_k, dot_q3_k_row)
DEFINE_MATMUL(matmul_q4_k, dot_q4_k_row)
DEFINE_MATMUL(matmul_q5_k, dot_q5_k_row)
DEFINE_MATMUL(matmul_q6_k, dot_q6_k_row)
DEFINE_MATMUL(matmul_iq4_nl, dot_iq4_nl_row)
DEFINE_MATMUL(matmul_iq4_xs, dot_iq4_xs_row)
DEFINE_MATMUL(matmul_mxfp4, dot_mxfp4_row)

/* ---- int8 activations, repacked weights (the contract in kernels.h) --------- */

/* Offset of element j (0..31) of block b within a quad-ordered row. */
static size_t quad_pos(int b, int j) { return (size_t)(b / 4) * 128 + (size_t)(j / 16) * 64 + (size_t)(b % 4) * 16 + (size_t)(j % 16); }

static void quantize_act_scalar(const float *x, int ldx, int t0, int t1, const q8_act *a) {
    int nb = a->cols / 32, gs = a->group > 1 ? a->group : 1;
    for (int t = t0; t < t1; t++) {
        const float *xt = x + (size_t)t * ldx;
        int8_t *q;
        float *d, *s;
        q8_act_row(a, t, &q, &d, &s);
        float amax = 0.0f;
        for (int b = 0; b < nb; b++) {
            if (b % gs == 0) { /* max |x| over the blocks sharing a scale (order-free: exact) */
                amax = 0.0f;
                for (int j = 0; j < 32 * gs && 32 * b + j < a->cols; j++) amax = fmaxf(amax, fabsf(xt[32 * b + j]));
            }
            float id = amax > 0.0f ? 127.0f / amax : 0.0f;
            int sum = 0;
            for (int j = 0; j < 32; j++) {
                int v = (int)rintf(xt[32 * b + j] * id);
                v = v > 127 ? 127 : v < -127 ? -127 : v;
                q[quad_pos(b, j)] = (int8_t)v;
                sum += v;
            }
            d[b] = amax / 127.0f;
            s[b] = (float)sum;
        }
    }
}

/* Weight element j of block b of row r, from the packed layout, as the true
 * integer (Q4_0: nibble - 8, Q4_1 and Q4_K: nibble, Q8_0: int8, Q5_0: u - 16, Q5_1: u). */
static int packed_weight(dtype dt, const uint8_t *pk, int rows, int nb, int r, int b, int j) {
    if (q8w_five(dt)) return q5_packed_u(dt, pk, rows, nb, r, b, j) - (dt == DT_Q5_0 ? 16 : 0);
    q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
    if (dt == DT_Q8_0) return (int8_t)(pk[c.off + q8w_byte(dt, &c, r % Q8W_GROUP, b % 4, j)] ^ 0x80);
    uint8_t byte = pk[c.off + q8w_byte(dt, &c, r % Q8W_GROUP, b % 4, j % 16)];
    int u = j < 16 ? byte & 0x0f : byte >> 4;
    return dt == DT_Q4_0 ? u - 8 : u;
}

/* The f16 scale (which = 0) or min (which = 1) of block b of row r (Q4_K: d * sc, -(dmin * m)). */
static float packed_scale(dtype dt, const uint8_t *pk, int rows, int nb, int r, int b, int which) {
    if (dt == DT_Q4_K) return q4k_packed_scale(pk, rows, nb, r, b, which);
    q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
    size_t idx = (size_t)q8w_scale_idx(dt, &c, r % Q8W_GROUP, b % 4) + (size_t)which * q8w_nscales(dt, &c);
    return f16_to_f32(rd_u16(pk + c.off + 2 * idx));
}

/* One row and token: main = sum_b (dw*dx)[b] * isum[b] in block order, then,
 * with mins, side = sum_b m[b] * (dx[b] * s[b]). */
static float dot_q8_row(dtype dt, const uint8_t *pk, int rows, int nb, int r, const int8_t *xq, const float *xd,
                        const float *xs) {
    float main = 0.0f, side = 0.0f;
    for (int b = 0; b < nb; b++) {
        int isum = 0;
        for (int j = 0; j < 32; j++) isum += packed_weight(dt, pk, rows, nb, r, b, j) * xq[quad_pos(b, j)];
        main += packed_scale(dt, pk, rows, nb, r, b, 0) * xd[b] * (float)isum;
        if (q8w_has_min(dt)) side += packed_scale(dt, pk, rows, nb, r, b, 1) * (xd[b] * xs[b]);
    }
    return main + side;
}

/* Q6_K (packed): per half of each block the exact sum (u - 32) q, times (d sc) dx,
 * first half then second, in block order. */
static float dot_q6k_row(const uint8_t *pk, int rows, int nb, int r, const int8_t *xq, const float *xd) {
    float acc = 0.0f;
    for (int b = 0; b < nb; b++)
        for (int h = 0; h < 2; h++) {
            int isum = 0;
            for (int j = 16 * h; j < 16 * h + 16; j++) isum += (q6k_packed_u(pk, rows, nb, r, b, j) - 32) * xq[quad_pos(b, j)];
            acc += q6k_packed_scale(pk, rows, nb, r, b, h) * xd[b] * (float)isum;
        }
    return acc;
}

static void matmul_q8_rows(dtype dt, const void *packed, int rows, int cols, int r0, int r1, const q8_act *x,
                           float *y, int ldy) {
    int nb = cols / 32;
    for (int r = r0; r < r1; r++)
        for (int t = 0; t < x->nt; t++)
            y[(size_t)t * ldy + r] =
                dt == DT_Q6_K ? dot_q6k_row(packed, rows, nb, r, x->q + (size_t)t * x->quads * 128, x->d + (size_t)t * x->quads * 4)
                              : dot_q8_row(dt, packed, rows, nb, r, x->q + (size_t)t * x->quads * 128,
                                           x->d + (size_t)t * x->quads * 4, x->s + (size_t)t * x->quads * 4);
}

/* The table's entries on packed weights, one per type. */
#define Q8_ROWS(FN, DT)                                                                                     \
    static void FN(const void *p, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) { \
        matmul_q8_rows(DT, p, rows, cols, r0, r1, x, y, ldy);                                               \
    }
Q8_ROWS(matmul_q8_q4_0, DT_Q4_0)
Q8_ROWS(matmul_q8_q4_1, DT_Q4_1)
Q8_ROWS(matmul_q8_q8_0, DT_Q8_0)
Q8_ROWS(matmul_q8_q6_k, DT_Q6_K)
Q8_ROWS(matmul_q8_q5_0, DT_Q5_0)
Q8_ROWS(matmul_q8_q5_1, DT_Q5_1)
Q8_ROWS(matmul_q8_q4_k, DT_Q4_K)
Q8_ROWS(matmul_q8_q4_1g64, DT_Q4_1G64)
Q8_ROWS(matmul_q8_q4_1g128, DT_Q4_1G128)

/* The GGUF types read in place (dequant.h): per half of each sub-block, the
 * exact integer sums sum(u q) and sum(q), then dx * (f * isum + mn * qsum),
 * added in half order. */
static void matmul_q8_inplace(dtype dt, const void *w, int rows, int cols, int r0, int r1, const q8_act *x,
                              float *y, int ldy) {
    (void)rows;
    size_t rb = dtype_row_bytes(dt, cols);
    dq_int8 dq;
    for (int r = r0; r < r1; r++)
        for (int t = 0; t < x->nt; t++) {
            const int8_t *xq = x->q + (size_t)t * x->quads * 128;
            const float *xd = x->d + (size_t)t * x->quads * 4;
            float acc = 0.0f;
            for (int b = 0; b < cols / 32; b++) {
                int j = 0;
                const uint8_t *blk = dq_sub_block(dt, (const uint8_t *)w + (size_t)r * rb, b, &j);
                dq_int8_decode(dt, blk, j, &dq);
                for (int h = 0; h < 2; h++) {
                    int isum = 0, qsum = 0;
                    for (int l = 16 * h; l < 16 * h + 16; l++) {
                        int q = xq[quad_pos(b, l)];
                        isum += dq.u[l] * q;
                        qsum += q;
                    }
                    acc += xd[b] * (dq.f[h] * (float)isum + dq.mn[h] * (float)qsum);
                }
            }
            y[(size_t)t * ldy + r] = acc;
        }
}

#define DEFINE_Q8_INPLACE(NAME, DT)                                                                       \
    static void NAME(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) { \
        matmul_q8_inplace(DT, w, rows, cols, r0, r1, x, y, ldy);                                          \
    }
DEFINE_Q8_INPLACE(q8in_q2_k, DT_Q2_K)
DEFINE_Q8_INPLACE(q8in_q3_k, DT_Q3_K)
DEFINE_Q8_INPLACE(q8in_q5_k, DT_Q5_K)
DEFINE_Q8_INPLACE(q8in_iq4_nl, DT_IQ4_NL)
DEFINE_Q8_INPLACE(q8in_iq4_xs, DT_IQ4_XS)
DEFINE_Q8_INPLACE(q8in_mxfp4, DT_MXFP4)

static float dot_scalar(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static void axpy_scalar(float *y, float a, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

static const kernels SCALAR = {
    .name = "scalar",
    .matmul =
        {
            [DT_F32] = matmul_f32,
            [DT_F16] = matmul_f16,
            [DT_BF16] = matmul_bf16,
            [DT_Q8_0] = matmul_q8_0,
            [DT_Q4_0] = matmul_q4_0,
            [DT_Q4_1] = matmul_q4_1,
            DQ_MATMULS,
            [DT_AFFINE4] = affine4_matmul_scalar,
            [DT_AFFINE8] = affine8_matmul_scalar,
        },
    .quantize_act = quantize_act_scalar,
    .matmul_q8 = {[DT_Q4_0] = matmul_q8_q4_0, [DT_Q4_1] = matmul_q8_q4_1, [DT_Q8_0] = matmul_q8_q8_0,
                  [DT_Q4_1G64] = matmul_q8_q4_1g64, [DT_Q4_1G128] = matmul_q8_q4_1g128, [DT_Q5_0] = matmul_q8_q5_0,
                  [DT_Q5_1] = matmul_q8_q5_1, [DT_Q6_K] = matmul_q8_q6_k, [DT_Q4_K] = matmul_q8_q4_k,
                  [DT_Q2_K] = q8in_q2_k, [DT_Q3_K] = q8in_q3_k, [DT_Q5_K] = q8in_q5_k, [DT_IQ4_NL] = q8in_iq4_nl,
                  [DT_IQ4_XS] = q8in_iq4_xs, [DT_MXFP4] = q8in_mxfp4},
    .dot = dot_scalar,
    .axpy = axpy_scalar,
    .att_scores = {[DT_F32] = att_scores_f32_scalar, [DT_BF16] = att_scores_bf16_scalar},
    .att_values = {[DT_F32] = att_values_f32_scalar, [DT_BF16] = att_values_bf16_scalar},
    .softmax_fast = softmax_fast_scalar,
    .swiglu_fast = swiglu_fast_scalar,
    .geglu_fast = geglu_fast_scalar,
};

const kernels *kernels_scalar(void) { return &SCALAR; }
