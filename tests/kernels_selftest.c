/* kernels_selftest.c - every ISA kernel table against the scalar one, as a plain
 * C program (no Criterion) so it also runs cross-compiled under qemu-aarch64
 * (`make neon-test`). Exit status 0 only if every check passed.
 *
 * The checking functions are also the body of tests/unit/test_kernels.c, which
 * includes this file with KERNELS_SELFTEST_NO_MAIN defined: one definition of
 * what "a kernel agrees with the reference" means. Everything here is static.
 *
 * What is checked, per table, dtype and size (random data, fixed seeds):
 *  - y against the scalar reference within the tolerance of check_close();
 *  - the determinism contract of kernels.h, bit for bit: rows [0,k) + [k,rows)
 *    in two calls equal one call over [0,rows), and every token of a prefill
 *    call (nt > 1) equals a decode call (nt = 1) on that token alone;
 *  - y outside [r0, r1) and beyond nt is never written; strides ldx, ldy and
 *    row_bytes larger than the data are honoured; nothing is aligned;
 *  - for the ISA tables (not scalar.c, which scales block sums), a quantized
 *    matmul equals bit for bit the same table's F32 matmul on the weights
 *    dequantized the way gguf-py does it: the native quantized path then gives
 *    exactly what the f32 path (HF transformers' view of a GGUF) gives;
 *  - every ISA table compiled for this machine gives the same f32-route bits as
 *    every other (avx2 = avx512 here). Across architectures the NEON run (`make
 *    neon-test`, under qemu) is held to the scalar reference by the same checks,
 *    not to another machine's hash: summation orders may legitimately differ;
 *  - MLX affine: the f32 route equals affine_scalar.c bit for bit; the int8 route
 *    equals the scalar int8 reference bit for bit where every sum is exact in f32
 *    and within 1e-5 of the term magnitudes on random data; quantize_act gives
 *    the scalar bytes. On AArch64 both int8 variants (with and without vdotq_s32);
 *  - int8 activations on repacked Q4_0 / Q4_1 / Q8_0 and Q4_1G64 / Q4_1G128 (MLX
 *    4-bit: one scale and min per 64 / 128 columns) (fast mode; st_check_q8):
 *    every table's matmul_q8 entry (and on AArch64 the variant without sdot)
 *    against scalar.c's, on weights repacked here from the kernels.h layout:
 *    equal bits on integer data, a stated tolerance on random data, and equal
 *    bits for any row split and for each token alone;
 *  - int8 activations on the GGUF types read in place (Q2_K ... IQ4_XS; st_check_inplace):
 *    every table's matmul_q8 entry against dequantized weights x int8 activations
 *    within a stated tolerance, bit for bit for any row split and for each token
 *    alone; on AArch64 also the variant without sdot. Q5_0, Q5_1, Q6_K and Q4_K the same way on their
 *    packed layouts (q5_pack_rows / q6k_pack_rows / q4k_pack_rows, in two calls; every packed row read back equals
 *    the file's dequantized row bit for bit), with 17 and 34 rows and 17 tokens so
 *    that partial groups, splits inside groups and AVX-512's panels are exercised;
 *    on x86 also the AVX-512 table without VNNI;
 *  - attention (att_scores / att_values, F32 and BF16 caches) and fast SwiGLU:
 *    the scalar bits; fast softmax within 1e-6 relative (the unit
 *    tests run the same check, tests/unit/test_kernels.c). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/affine_kernels.h"
#include "kernels/kernels.h"
#include "quant/quant.h"
#include "base/util.h"

#if defined(__x86_64__)
const kernels *kernels_avx512_table(int level); /* avx512.c: the table without VNNI (0), with (1), with GFNI too (2),
                                                 with AVX512-BF16 too (3), unchecked */
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>

matmul_q8_fn kernels_neon_q8_plain(dtype dt); /* neon.c: the int8 kernels without sdot */
#include "kernels/inplace_kernels.h"          /* inplace_neon_plain: the same for the in-place types */
#endif

/* splitmix64: platform-independent, so every machine tests the same data. */
static uint64_t st_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float st_unit(uint64_t *s) { return (float)((double)(st_next(s) >> 40) / (double)(1ull << 23) - 1.0); }

static int st_block_elems(dtype dt) { return dtype_block_elems(dt); }

/* The types read through the type table's dequantizers (quant.h) rather than
 * decoded by hand here: the f32 route's reference is that table, itself held to
 * gguf-py's values by tests/unit/test_quant.c. */
static int st_table_type(dtype dt) {
    return dtype_info(dt)->dequant32 && dt != DT_Q8_0 && dt != DT_Q4_0 && dt != DT_Q4_1;
}

/* Offsets of the f16 scale fields of a block (filled with realistic values). */
static int st_scale_fields(dtype dt, int off[2]) {
    switch (dt) {
    case DT_Q2_K: off[0] = offsetof(block_q2_K, d), off[1] = offsetof(block_q2_K, dmin); return 2;
    case DT_Q3_K: off[0] = offsetof(block_q3_K, d); return 1;
    case DT_Q6_K: off[0] = offsetof(block_q6_K, d); return 1;
    case DT_Q4_1: case DT_Q5_1: case DT_Q4_K: case DT_Q5_K: off[0] = 0, off[1] = 2; return 2;
    default: off[0] = 0; return 1;
    }
}

/* One random row of `cols` weights in dtype dt's stored layout. Scales are
 * realistic fp16 values (about 1e-3 to 3e-2, as in trained checkpoints); the
 * integer parts cover their whole range. */
static void st_fill_row(dtype dt, uint8_t *row, int cols, uint64_t *s) {
    if (dt == DT_F32 || dt == DT_F16 || dt == DT_BF16) {
        for (int c = 0; c < cols; c++) {
            float v = st_unit(s);
            if (dt == DT_F32) memcpy(row + 4 * (size_t)c, &v, 4);
            uint16_t h = dt == DT_F16 ? f32_to_f16(v) : f32_to_bf16(v);
            if (dt != DT_F32) memcpy(row + 2 * (size_t)c, &h, 2);
        }
        return;
    }
    int bb = dtype_block_bytes(dt), off[2];
    for (int b = 0; b < cols / st_block_elems(dt); b++) {
        uint8_t *blk = row + (size_t)b * bb;
        for (int j = 0; j < bb; j++) blk[j] = (uint8_t)st_next(s);
        if (dt == DT_MXFP4) { /* an E8M0 byte: 2^-10 .. 2^-3 (times the grid's 12 at most) */
            blk[0] = (uint8_t)(118 + st_next(s) % 8);
            continue;
        }
        int nf = st_scale_fields(dt, off);
        uint16_t d = f32_to_f16(0.001f + 0.03f * fabsf(st_unit(s)));
        memcpy(blk + off[0], &d, 2);
        if (nf > 1) { /* Q4_1 / Q5_1: a signed min; K-quants: a positive dmin */
            uint16_t m = f32_to_f16(dt == DT_Q4_1 || dt == DT_Q5_1 ? 0.1f * st_unit(s) : 0.001f + 0.01f * fabsf(st_unit(s)));
            memcpy(blk + off[1], &m, 2);
        }
    }
}

/* sum of |term| over the terms the reference adds: |w x| for dense rows,
 * |d q x| (+ |m x| for Q4_1, whose scalar form is d*sum(q x) + m*sum(x)). */
static double st_magnitude(dtype dt, const uint8_t *row, const float *x, int cols) {
    double m = 0.0;
    for (int c = 0; c < cols; c++) {
        double ax = fabs((double)x[c]);
        if (dt == DT_F32) {
            float v;
            memcpy(&v, row + 4 * (size_t)c, 4);
            m += fabs((double)v) * ax;
        } else if (dt == DT_F16) {
            m += fabs((double)f16_to_f32(rd_u16(row + 2 * (size_t)c))) * ax;
        } else if (dt == DT_BF16) {
            m += fabs((double)bf16_to_f32(rd_u16(row + 2 * (size_t)c))) * ax;
        } else if (st_table_type(dt)) { /* scalar.c sums the dequantized products: |w x| */
            float w[QK_K];
            int be = st_block_elems(dt);
            dtype_dequant_row(dt, row + (size_t)(c / be) * dtype_block_bytes(dt), be, 0, w);
            m += fabs((double)w[c % be]) * ax;
        } else {
            int bb = dtype_block_bytes(dt), j = c % 32;
            const uint8_t *blk = row + (size_t)(c / 32) * bb;
            double d = f16_to_f32(rd_u16(blk)), q;
            if (dt == DT_Q8_0) {
                q = (int8_t)blk[2 + j];
            } else {
                const uint8_t *qs = blk + (dt == DT_Q4_0 ? 2 : 4);
                q = j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4);
                if (dt == DT_Q4_0) q -= 8;
            }
            m += fabs(d * q) * ax;
            if (dt == DT_Q4_1) m += fabs((double)f16_to_f32(rd_u16(blk + 2))) * ax;
        }
    }
    return m;
}

/* One row dequantized as gguf-py does: d*q, d*(q-8), d*q + m in f32 (d*q is
 * exact in f32, so each value is rounded at most once, with or without FMA). */
static void st_dequant_row(dtype dt, const uint8_t *row, int cols, float *out) {
    if (st_table_type(dt)) {
        dtype_dequant_row(dt, row, cols, 0, out);
        return;
    }
    int bb = dtype_block_bytes(dt);
    for (int c = 0; c < cols; c++) {
        const uint8_t *blk = row + (size_t)(c / 32) * bb;
        int j = c % 32;
        float d = f16_to_f32(rd_u16(blk));
        if (dt == DT_Q8_0) {
            out[c] = d * (float)(int8_t)blk[2 + j];
            continue;
        }
        const uint8_t *qs = blk + (dt == DT_Q4_0 ? 2 : 4);
        int q = j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4);
        out[c] = dt == DT_Q4_0 ? d * (float)(q - 8) : d * (float)q + f16_to_f32(rd_u16(blk + 2));
    }
}

/* Tolerance. Any order of adding n rounded f32 products differs from the exact
 * sum by at most gamma(n + k) * sum|term| with gamma(m) = m*u/(1 - m*u), u = 2^-24
 * (Higham, Accuracy and Stability, 3.1); k <= 8 covers the product, block-scale,
 * horizontal-sum and x-sum roundings. The ISA kernel and the reference may err in
 * opposite directions, hence 2 * (n + 8) * u * sum|term| (gamma's 1/(1 - m*u) is
 * below 1.0001 for these n, and absorbed by the slack in k), plus a tiny absolute
 * term for underflow. The bound is rigorous (no flaky failure on other data) yet
 * far below what a real bug leaves: dropping one term of a 1000-long row is an
 * error of ~1e-3 * sum|term|, the tolerance there is ~1.2e-4 * sum|term|. */
static int check_close(float got, float ref, double mag, int n) {
    double tol = 2.0 * (n + 8) * ldexp(1.0, -24) * mag + 1e-30;
    return fabs((double)got - (double)ref) <= tol;
}

static int st_fail(char *msg, size_t len, const kernels *k, dtype dt, int rows, int cols, int nt,
                   const char *what) {
    snprintf(msg, len, "%s %s rows=%d cols=%d nt=%d: %s", k->name, dtype_name(dt), rows, cols, nt, what);
    return -1;
}

/* Sentinel for y cells no kernel call may write. */
#define ST_UNTOUCHED (-12345.5f)

/* One random case: table k vs the scalar table for weight dtype dt.
 * Returns 0, or -1 with a one-line explanation in msg. */
static int st_check_matmul(const kernels *k, dtype dt, int rows, int cols, int nt, uint64_t seed,
                           char *msg, size_t len) {
    const kernels *ref = kernels_scalar();
    matmul_fn f = k->matmul[dt], fr = ref->matmul[dt];
    if (!f) return st_fail(msg, len, k, dt, rows, cols, nt, "no kernel");
    /* Odd strides and a 1-byte offset: nothing is aligned, padding is skipped. */
    size_t rb = dtype_row_bytes(dt, cols) + (size_t)(seed % 3);
    int ldx = cols + 3, ldy = rows + 2, ny = nt + 1;
    uint8_t *wbuf = malloc(rb * (size_t)rows + 1);
    float *x = malloc(sizeof(float) * ((size_t)(nt - 1) * ldx + cols));
    float *y_ref = malloc(sizeof(float) * (size_t)ny * ldy), *y_one = malloc(sizeof(float) * (size_t)ny * ldy);
    float *y_split = malloc(sizeof(float) * (size_t)ny * ldy), *y_tok = malloc(sizeof(float) * (size_t)ldy);
    int rc = 0;
    if (!wbuf || !x || !y_ref || !y_one || !y_split || !y_tok) {
        rc = st_fail(msg, len, k, dt, rows, cols, nt, "out of memory");
        goto done;
    }
    uint8_t *w = wbuf + 1;
    uint64_t s = seed;
    memset(wbuf, 0xa5, rb * (size_t)rows + 1);
    for (int r = 0; r < rows; r++) st_fill_row(dt, w + r * rb, cols, &s);
    for (size_t i = 0; i < (size_t)(nt - 1) * ldx + cols; i++) x[i] = st_unit(&s);
    for (int i = 0; i < ny * ldy; i++) y_ref[i] = y_one[i] = y_split[i] = ST_UNTOUCHED;

    /* Rows [1, rows) when possible, so that row 0 stays untouched too. */
    int r0 = rows > 2 ? 1 : 0, mid = r0 + (rows - r0) / 2 + 1;
    if (mid > rows) mid = rows;
    fr(w, rb, cols, r0, rows, x, ldx, nt, y_ref, ldy);
    f(w, rb, cols, r0, rows, x, ldx, nt, y_one, ldy);
    f(w, rb, cols, r0, mid, x, ldx, nt, y_split, ldy);
    f(w, rb, cols, mid, rows, x, ldx, nt, y_split, ldy);

    for (int t = 0; t < ny && !rc; t++) {
        for (int r = 0; r < ldy && !rc; r++) {
            size_t i = (size_t)t * ldy + r;
            int inside = t < nt && r >= r0 && r < rows;
            if (!inside) {
                if (y_one[i] != ST_UNTOUCHED || y_split[i] != ST_UNTOUCHED)
                    rc = st_fail(msg, len, k, dt, rows, cols, nt, "wrote outside [r0, r1) x [0, nt)");
                continue;
            }
            if (memcmp(&y_one[i], &y_split[i], sizeof(float))) {
                char what[128];
                snprintf(what, sizeof what, "row split at %d changes y[t=%d][r=%d]: %.9g vs %.9g", mid, t,
                         r, y_one[i], y_split[i]);
                rc = st_fail(msg, len, k, dt, rows, cols, nt, what);
                break;
            }
            double mag = st_magnitude(dt, w + r * rb, x + (size_t)t * ldx, cols);
            if (!check_close(y_one[i], y_ref[i], mag, cols)) {
                char what[160];
                snprintf(what, sizeof what, "y[t=%d][r=%d] = %.9g, scalar %.9g (sum|term| %.3g)", t, r,
                         y_one[i], y_ref[i], mag);
                rc = st_fail(msg, len, k, dt, rows, cols, nt, what);
            }
        }
    }
    /* Each token alone (decode) must give the prefill value bit for bit. */
    for (int t = 0; t < nt && !rc && nt > 1; t++) {
        f(w, rb, cols, r0, rows, x + (size_t)t * ldx, ldx, 1, y_tok, ldy);
        for (int r = r0; r < rows; r++) {
            if (memcmp(&y_tok[r], &y_one[(size_t)t * ldy + r], sizeof(float))) {
                char what[128];
                snprintf(what, sizeof what, "token %d alone gives %.9g, in the batch %.9g (row %d)", t,
                         y_tok[r], y_one[(size_t)t * ldy + r], r);
                rc = st_fail(msg, len, k, dt, rows, cols, nt, what);
                break;
            }
        }
    }
    /* A quantized ISA kernel = the same table's F32 kernel on dequantized weights. */
    if (!rc && st_block_elems(dt) > 1 && k != ref) {
        float *wf = malloc(sizeof(float) * (size_t)rows * cols);
        if (!wf) {
            rc = st_fail(msg, len, k, dt, rows, cols, nt, "out of memory");
            goto done;
        }
        for (int r = 0; r < rows; r++) st_dequant_row(dt, w + r * rb, cols, wf + (size_t)r * cols);
        k->matmul[DT_F32](wf, sizeof(float) * (size_t)cols, cols, r0, rows, x, ldx, nt, y_split, ldy);
        for (int t = 0; t < nt && !rc; t++)
            for (int r = r0; r < rows; r++)
                if (memcmp(&y_split[(size_t)t * ldy + r], &y_one[(size_t)t * ldy + r], sizeof(float))) {
                    char what[160];
                    snprintf(what, sizeof what, "y[t=%d][r=%d] = %.9g, F32 kernel on dequantized weights %.9g",
                             t, r, y_one[(size_t)t * ldy + r], y_split[(size_t)t * ldy + r]);
                    rc = st_fail(msg, len, k, dt, rows, cols, nt, what);
                    break;
                }
        free(wf);
    }
done:
    free(wbuf);
    free(x);
    free(y_ref);
    free(y_one);
    free(y_split);
    free(y_tok);
    return rc;
}

/* dot within the tolerance above; axpy bit for bit (every implementation
 * multiplies, then adds, in one rounding each, like scalar.c). */
static int st_check_vec(const kernels *k, int n, uint64_t seed, char *msg, size_t len) {
    const kernels *ref = kernels_scalar();
    float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
    float *y1 = malloc(sizeof(float) * (size_t)n), *y2 = malloc(sizeof(float) * (size_t)n);
    int rc = 0;
    if (!a || !b || !y1 || !y2) {
        snprintf(msg, len, "%s: out of memory", k->name);
        rc = -1;
        goto done;
    }
    uint64_t s = seed;
    double mag = 0.0;
    for (int i = 0; i < n; i++) {
        a[i] = st_unit(&s);
        b[i] = st_unit(&s);
        y1[i] = y2[i] = st_unit(&s);
        mag += fabs((double)a[i] * b[i]);
    }
    float d = k->dot(a, b, n), dr = ref->dot(a, b, n);
    if (!check_close(d, dr, mag, n)) {
        snprintf(msg, len, "%s dot n=%d: %.9g, scalar %.9g", k->name, n, d, dr);
        rc = -1;
        goto done;
    }
    k->axpy(y1, 0.37f, a, n);
    ref->axpy(y2, 0.37f, a, n);
    if (memcmp(y1, y2, sizeof(float) * (size_t)n)) {
        snprintf(msg, len, "%s axpy n=%d differs from scalar", k->name, n);
        rc = -1;
    }
done:
    free(a);
    free(b);
    free(y1);
    free(y2);
    return rc;
}

/* The sizes every table is tested on: not multiples of the vector widths (8,
 * 16, 4) nor of the row / token tiles. */
static const int ST_DENSE_COLS[] = {1, 7, 33, 96, 576, 1000};
static const int ST_BLOCK_COLS[] = {32, 64, 96, 576};
static const int ST_SUPER_COLS[] = {256, 512, 1280}; /* QK_K blocks: K-quants, IQ4_XS */
#define ST_MAX_SUPER_COLS 1280
static const int ST_ROWS[] = {1, 2, 5, 13};
static const int ST_NT[] = {1, 2, 3, 5, 17};
/* The f32-route weight types: every GGUF type of the type table a matmul accepts. */
static int st_matmul_type(dtype dt) { return DTYPE_TRAITS[dt].weight && DTYPE_TRAITS[dt].ggml >= 0; }
#define ST_COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

/* Every size for one table and dtype; stops at the first failure. */
static int st_check_dtype(const kernels *k, dtype dt, char *msg, size_t len) {
    int blk = st_block_elems(dt) > 1, sup = st_block_elems(dt) == QK_K;
    const int *cols = sup ? ST_SUPER_COLS : blk ? ST_BLOCK_COLS : ST_DENSE_COLS;
    int ncols = sup ? ST_COUNT(ST_SUPER_COLS) : blk ? ST_COUNT(ST_BLOCK_COLS) : ST_COUNT(ST_DENSE_COLS);
    uint64_t seed = 1000 * (uint64_t)dt;
    for (int c = 0; c < ncols; c++)
        for (int r = 0; r < ST_COUNT(ST_ROWS); r++)
            for (int t = 0; t < ST_COUNT(ST_NT); t++)
                if (st_check_matmul(k, dt, ST_ROWS[r], cols[c], ST_NT[t], ++seed, msg, len)) return -1;
    return 0;
}

static int st_check_vectors(const kernels *k, char *msg, size_t len) {
    static const int ns[] = {1, 3, 8, 15, 16, 17, 31, 64, 100, 1000};
    for (int i = 0; i < ST_COUNT(ns); i++)
        if (st_check_vec(k, ns[i], 77 + (uint64_t)i, msg, len)) return -1;
    return 0;
}

/* ---- MLX affine: f32 route bit for bit, int8 route against the scalar reference ---- */

typedef struct {
    uint8_t *q, *s, *b; /* packed rows, scales, biases (the file layout, unaligned by one byte) */
    affine_weights aw;
} st_affine;

static void st_affine_put(uint8_t *p, int sdt, size_t i, float v) {
    if (sdt == DT_F32) {
        memcpy(p + 4 * i, &v, 4);
    } else {
        uint16_t h = sdt == DT_F16 ? f32_to_f16(v) : f32_to_bf16(v);
        memcpy(p + 2 * i, &h, 2);
    }
}

/* exact = 1: scales 2^-2..1 and integer biases, so with integer activations (below)
 * every partial sum of the int8 route is an exact f32 (see st_affine_x). */
static int st_affine_new(st_affine *m, int bits, int group, int sdt, int rows, int cols, int exact, uint64_t *st) {
    size_t qb = (size_t)rows * cols * bits / 8, ng = (size_t)rows * (cols / group), es = sdt == DT_F32 ? 4 : 2;
    m->q = malloc(qb + 1), m->s = malloc(ng * es + 1), m->b = malloc(ng * es + 1);
    if (!m->q || !m->s || !m->b) return -1;
    for (size_t i = 0; i < qb; i++) m->q[1 + i] = (uint8_t)st_next(st);
    for (size_t i = 0; i < ng; i++) {
        st_affine_put(m->s + 1, sdt, i, exact ? ldexpf(1.0f, -(int)(st_next(st) % 3)) : st_unit(st) * 0.05f);
        st_affine_put(m->b + 1, sdt, i, exact ? (float)((int)(st_next(st) % 9) - 4) : st_unit(st));
    }
    m->aw = (affine_weights){m->q + 1, m->s + 1, m->b + 1, sdt, group};
    return 0;
}

static void st_affine_free(st_affine *m) { free(m->q), free(m->s), free(m->b); }

/* exact = 1: integers in [-7, 7] and one 127 per block of 32, so int8 quantization
 * is lossless (d = 1) and, with cols <= 640, every sum stays below 2^22. */
static void st_affine_x(float *x, int n, int exact, uint64_t *st) {
    for (int i = 0; i < n; i++)
        x[i] = exact ? (i % 32 == 5 ? 127.0f : (float)((int)(st_next(st) % 15) - 7)) : 3.0f * st_unit(st);
}

/* Sum over the row of |dequantized weight * dequantized activation|: the scale of the
 * int8 route's f32 rounding error. */
static double st_affine_mag(const st_affine *m, int bits, int cols, int r, const q8_act *a, int t) {
    int ng = cols / m->aw.group;
    double mag = 0.0;
    const uint8_t *row = (const uint8_t *)m->aw.q + (size_t)r * cols * bits / 8;
    for (int c = 0; c < cols; c++) {
        uint8_t byte = row[(size_t)c * bits / 8];
        int q = bits == 8 ? byte : (c & 1) ? byte >> 4 : byte & 15;
        size_t gi = (size_t)r * ng + c / m->aw.group;
        float sc, bi;
        if (m->aw.sdt == DT_F32) {
            memcpy(&sc, (const uint8_t *)m->aw.scales + 4 * gi, 4), memcpy(&bi, (const uint8_t *)m->aw.biases + 4 * gi, 4);
        } else {
            uint16_t hs = rd_u16((const uint8_t *)m->aw.scales + 2 * gi), hb = rd_u16((const uint8_t *)m->aw.biases + 2 * gi);
            sc = m->aw.sdt == DT_F16 ? f16_to_f32(hs) : bf16_to_f32(hs);
            bi = m->aw.sdt == DT_F16 ? f16_to_f32(hb) : bf16_to_f32(hb);
        }
        int b = c / 32, j = c % 32;
        int xq = a->q[(size_t)t * a->quads * 128 + (size_t)(b / 4) * 128 + (size_t)(j / 16) * 64 + (size_t)(b % 4) * 16 + j % 16];
        mag += fabs(((double)sc * q + bi) * a->d[(size_t)t * a->quads * 4 + b] * xq);
    }
    return mag;
}

static const int ST_AFF_COLS[] = {32, 64, 96, 128, 192, 320, 384, 640, 1152};
static const int ST_AFF_GROUPS[] = {32, 64, 128};
static const int ST_AFF_SDT[] = {DT_BF16, DT_F16, DT_F32};

/* One shape through one table's affine kernels: the f32 matmul must equal
 * affine_scalar.c bit for bit (rows split in two calls, nt tokens); q8 (when given)
 * must equal the scalar int8 reference bit for bit on exact data, and within
 * 1e-5 of the magnitude sum on random data (a sum of <= cols/32 + 2 * groups f32
 * terms, each within a few ulps: 1e-5 is about 100 ulps of margin). */
static int st_check_affine_case(const kernels *k, const char *name, matmul_q8_fn q8, int bits, int group, int sdt,
                                int cols, int nt, int exact, uint64_t seed, char *msg, size_t len) {
    int rows = 13, rc = 0;
    uint64_t st = seed;
    st_affine m;
    size_t rb = (size_t)cols * bits / 8;
    float *x = malloc(sizeof(float) * (size_t)cols * nt), *ref = malloc(sizeof(float) * (size_t)rows * nt),
          *y = malloc(sizeof(float) * (size_t)rows * nt);
    q8_act a = {nt, cols, q8_quads(cols), aligned_alloc(64, (size_t)nt * q8_quads(cols) * 128),
                malloc(sizeof(float) * (size_t)nt * q8_quads(cols) * 4), malloc(sizeof(float) * (size_t)nt * q8_quads(cols) * 4), 0};
    if (st_affine_new(&m, bits, group, sdt, rows, cols, exact, &st) || !x || !ref || !y || !a.q || !a.d || !a.s) {
        snprintf(msg, len, "%s affine: out of memory", name);
        rc = -1;
        goto done;
    }
    st_affine_x(x, cols * nt, exact, &st);
    matmul_fn f32 = k ? k->matmul[bits == 4 ? DT_AFFINE4 : DT_AFFINE8] : NULL;
    if (f32) {
        (bits == 4 ? affine4_matmul_scalar : affine8_matmul_scalar)(&m.aw, rb, cols, 0, rows, x, cols, nt, ref, rows);
        f32(&m.aw, rb, cols, 0, 5, x, cols, nt, y, rows);
        f32(&m.aw, rb, cols, 5, rows, x, cols, nt, y, rows);
        for (int i = 0; i < rows * nt; i++)
            if (memcmp(&y[i], &ref[i], 4)) {
                snprintf(msg, len, "%s AFFINE%d g%d cols=%d nt=%d: y[%d] = %.9g, scalar %.9g (must be equal bits)", name,
                         bits, group, cols, nt, i, y[i], ref[i]);
                rc = -1;
                goto done;
            }
    }
    if (q8) {
        kernels_scalar()->quantize_act(x, cols, 0, nt, &a);
        (bits == 4 ? affine4_q8_scalar : affine8_q8_scalar)(&m.aw, rows, cols, 0, rows, &a, ref, rows);
        q8(&m.aw, rows, cols, 0, 7, &a, y, rows);
        q8(&m.aw, rows, cols, 7, rows, &a, y, rows);
        for (int i = 0; i < rows * nt; i++) {
            double tol = exact ? 0.0 : 1e-5 * st_affine_mag(&m, bits, cols, i % rows, &a, i / rows) + 1e-6;
            if (!(fabs((double)y[i] - ref[i]) <= tol)) {
                snprintf(msg, len, "%s AFFINE%d int8 g%d cols=%d nt=%d %s: y[%d] = %.9g, scalar %.9g (tolerance %.3g)",
                         name, bits, group, cols, nt, exact ? "exact data" : "random data", i, y[i], ref[i], tol);
                rc = -1;
                goto done;
            }
        }
    }
done:
    st_affine_free(&m);
    free(x), free(ref), free(y), free(a.q), free(a.d), free(a.s);
    return rc;
}

/* Every affine shape for table k (f32 route and its q8 entries), or for a q8 kernel
 * given on its own (k = NULL: a variant the table does not hold, e.g. NEON without
 * the dot-product extension). */
/* used by main() and tests/unit/test_affine_q8.c, not by test_kernels.c */
__attribute__((unused)) static int st_check_affine(const kernels *k, const char *name, matmul_q8_fn q8_4, matmul_q8_fn q8_8, char *msg,
                           size_t len) {
    uint64_t seed = 4242;
    for (int bits = 4; bits <= 8; bits += 4)
        for (int c = 0; c < ST_COUNT(ST_AFF_COLS); c++)
            for (int g = 0; g < ST_COUNT(ST_AFF_GROUPS); g++) {
                int cols = ST_AFF_COLS[c], group = ST_AFF_GROUPS[g], nt = 1 + (c % 3) * 2;
                if (cols % group) continue;
                matmul_q8_fn q8 = bits == 4 ? q8_4 : q8_8;
                for (int exact = 0; exact <= (cols <= 640); exact++)
                    if (st_check_affine_case(exact ? NULL : k, name, q8, bits, group, ST_AFF_SDT[(c + g) % 3], cols,
                                             nt, exact, ++seed, msg, len))
                        return -1;
            }
    return 0;
}

/* quantize_act of table k gives the scalar one's bytes and floats (kernels.h), per
 * block and, where the columns are whole super-blocks, per Q8_ACT_SB blocks. */
__attribute__((unused)) static int st_check_quantize(const kernels *k, char *msg, size_t len) {
    /* 2080 and 2304: more blocks than avx512.c's quantize_act takes per pass (64), with a partial quad */
    static const int cols[] = {32, 96, 128, 160, 256, 576, 768, 2080, 2304};
    enum { MAXC = 2304 };
    uint64_t st = 31337;
    for (int c = 0; c < ST_COUNT(cols); c++)
        for (int group = 1; group <= Q8_ACT_SB; group += Q8_ACT_SB - 1) {
            int n = cols[c], nt = 3, qd = q8_quads(n);
            if (n % (32 * group)) continue;
            static float x[3 * MAXC];
            for (int i = 0; i < n * nt; i++) x[i] = (i % 37 == 3 ? 40.0f : 1.0f) * st_unit(&st);
            if (n >= 96) memset(x + n + 64, 0, 32 * sizeof(float)); /* an all-zero block: d = 0 */
            if (n >= 512) memset(x + 256, 0, 256 * sizeof(float)); /* an all-zero super-block */
            static int8_t q0[3 * (MAXC + 128)], q1[3 * (MAXC + 128)];
            static float d0[3 * MAXC / 32], d1[3 * MAXC / 32], s0[3 * MAXC / 32], s1[3 * MAXC / 32];
            q8_act a0 = {nt, n, qd, q0, d0, s0, group}, a1 = {nt, n, qd, q1, d1, s1, group};
            kernels_scalar()->quantize_act(x, n, 0, nt, &a0);
            k->quantize_act(x, n, 0, nt, &a1);
            size_t nq = (size_t)nt * qd * 128, nd = (size_t)nt * qd * 4;
            if (memcmp(q0, q1, nq) || memcmp(d0, d1, nd * 4) || memcmp(s0, s1, nd * 4)) {
                snprintf(msg, len, "%s quantize_act cols=%d group=%d: differs from the scalar one", k->name, n, group);
                return -1;
            }
            for (int t = 0; t < nt && group > 1; t++) /* the blocks of a super-block share the scale of their max */
                for (int b = 0; b < n / 32; b++) {
                    float amax = 0.0f;
                    for (int j = 0; j < 256; j++) amax = fmaxf(amax, fabsf(x[t * n + b / 8 * 256 + j]));
                    if (d0[t * qd * 4 + b] != amax / 127.0f) {
                        snprintf(msg, len, "quantize_act cols=%d group=%d: block %d's scale is not its super-block's", n,
                                 group, b);
                        return -1;
                    }
                }
        }
    return 0;
}

/* ---- int8 activations on repacked Q4_0 / Q4_1 / Q8_0 (fast mode) ------------ */

/* Bytes of a "file" block: GGUF blocks, and for Q4_1G64 / Q4_1G128 Q4_1 blocks
 * whose scale and min repeat over each group of gb blocks (st_q8_fill). */
static int st_q8_file_bb(dtype dt) { return dtype_block_bytes(q8w_gb(dt) > 1 ? DT_Q4_1 : dt); }

/* A (rows, cols) matrix in the file layout (blocks of 32, rows back to back)
 * written in the repacked layout of kernels.h, placed by its own offset helpers
 * (q8w_chunk_at, q8w_scale_idx, q8w_byte): an independent copy of src/model/repack.c,
 * which this program cannot link (it needs the model loader). */
static void st_q8_repack(dtype dt, const uint8_t *file, int rows, int cols, uint8_t *out) {
    int nb = cols / 32, bb = st_q8_file_bb(dt), pay = dt == DT_Q8_0 ? 32 : 16, hdr = bb - pay;
    for (int r = 0; r < rows; r++)
        for (int b = 0; b < nb; b++) {
            const uint8_t *blk = file + ((size_t)r * nb + b) * bb;
            q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
            uint8_t *ck = out + c.off;
            size_t si = (size_t)q8w_scale_idx(dt, &c, r % Q8W_GROUP, b % 4);
            memcpy(ck + 2 * si, blk, 2);
            if (q8w_has_min(dt)) memcpy(ck + 2 * (si + (size_t)q8w_nscales(dt, &c)), blk + 2, 2);
            for (int jb = 0; jb < pay; jb++) {
                uint8_t v = blk[hdr + jb];
                ck[q8w_byte(dt, &c, r % Q8W_GROUP, b % 4, jb)] = dt == DT_Q8_0 ? (uint8_t)(v ^ 0x80) : v;
            }
        }
}

/* Random file-layout blocks; exact = 1: scales 1 and Q4_1 mins integers, so that
 * with integer activations (st_q8_x) every term and partial sum is an integer. */
static void st_q8_fill(dtype dt, uint8_t *w, int rows, int cols, int exact, uint64_t *s) {
    int bb = st_q8_file_bb(dt), gb = q8w_gb(dt);
    for (size_t b = 0; b < (size_t)rows * (cols / 32); b++) {
        uint8_t *blk = w + b * bb;
        for (int j = 0; j < bb; j++) blk[j] = (uint8_t)st_next(s);
        uint16_t d = f32_to_f16(exact ? 1.0f : 0.001f + 0.03f * fabsf(st_unit(s)));
        memcpy(blk, &d, 2);
        if (q8w_has_min(dt)) {
            uint16_t m = f32_to_f16(exact ? (float)((int)(st_next(s) % 17) - 8) : 0.1f * st_unit(s));
            memcpy(blk + 2, &m, 2);
        }
        if (b % (size_t)gb) memcpy(blk, blk - bb * (b % (size_t)gb), 4); /* the group's scale and min */
    }
}

/* exact = 1: integers in [-127, 127] with one 127 per block, so quantization
 * keeps them (d = 1, q = x). */
static void st_q8_x(float *x, int n, int exact, uint64_t *s) {
    for (int i = 0; i < n; i++) x[i] = exact ? (float)((int)(st_next(s) % 255) - 127) : 2.0f * st_unit(s);
    if (exact)
        for (int b = 0; b < n / 32; b++) x[32 * b + (int)(st_next(s) % 32)] = 127.0f;
}

/* Sum over the row's blocks of |dw dx isum| (+ |m dx s| for Q4_1), isum with the
 * true weight integers: the terms both sides add, in different orders. */
static double st_q8_mag(dtype dt, const uint8_t *row, const q8_act *a, int t, int cols) {
    int bb = st_q8_file_bb(dt), hdr = bb - (dt == DT_Q8_0 ? 32 : 16);
    double mag = 0.0;
    for (int b = 0; b < cols / 32; b++, row += bb) {
        size_t ai = (size_t)t * a->quads * 4 + b;
        long isum = 0;
        for (int j = 0; j < 32; j++) {
            int w = dt == DT_Q8_0 ? (int8_t)row[hdr + j] : j < 16 ? row[hdr + j] & 15 : row[hdr + j - 16] >> 4;
            if (dt == DT_Q4_0) w -= 8;
            isum += (long)w * a->q[(size_t)t * a->quads * 128 + (size_t)(b / 4) * 128 + (size_t)(j / 16) * 64 +
                                   (size_t)(b % 4) * 16 + j % 16];
        }
        mag += fabs((double)f16_to_f32(rd_u16(row)) * a->d[ai] * (double)isum);
        if (q8w_has_min(dt)) mag += fabs((double)f16_to_f32(rd_u16(row + 2)) * a->d[ai] * a->s[ai]);
    }
    return mag;
}

/* One matrix shape through kernel f against the scalar reference:
 *  - exact data: equal bits (every integer sum, nibble order, Q8_0 sign and
 *    Q4_0 -8 / Q4_1 min term must be the reference's exactly);
 *  - random data: |y - ref| <= (2 nb + 32) 2^-23 sum|term| (both add about
 *    2 nb rounded products of exact block sums, in different orders: each errs
 *    by at most ~2 nb 2^-24 sum|term|, and the margin doubles that);
 *  - bit for bit: rows split into two or three calls (inside and across
 *    groups of 8), and each token alone, give one call's result;
 *  - rows outside [r0, r1) and the padding of ldy are never written. */
static int st_check_q8_case(const char *name, matmul_q8_fn f, dtype dt, int rows, int cols, int nt, int exact,
                            uint64_t seed, char *msg, size_t len) {
    int nb = cols / 32, ldy = rows + 3, r0 = rows > 2 ? 1 : 0, rc = 0;
    size_t nw = (size_t)rows * nb * st_q8_file_bb(dt), ny = (size_t)nt * ldy, na = (size_t)nt * q8_quads(cols) * 4;
    uint8_t *w = malloc(nw), *p = malloc(nw);
    float *x = malloc(sizeof(float) * (size_t)nt * cols), *ref = malloc(sizeof(float) * ny),
          *y = malloc(sizeof(float) * ny), *y2 = malloc(sizeof(float) * ny);
    q8_act a = {nt, cols, q8_quads(cols), malloc(na * 32), malloc(sizeof(float) * na), malloc(sizeof(float) * na), 0};
    uint64_t s = seed;
    char what[200] = "";
    if (!w || !p || !x || !ref || !y || !y2 || !a.q || !a.d || !a.s) {
        snprintf(what, sizeof what, "out of memory");
        goto done;
    }
    st_q8_fill(dt, w, rows, cols, exact, &s);
    st_q8_repack(dt, w, rows, cols, p);
    st_q8_x(x, nt * cols, exact, &s);
    kernels_scalar()->quantize_act(x, cols, 0, nt, &a);
    for (size_t i = 0; i < ny; i++) ref[i] = y[i] = ST_UNTOUCHED;
    kernels_scalar()->matmul_q8[dt](p, rows, cols, r0, rows, &a, ref, ldy);
    f(p, rows, cols, r0, rows, &a, y, ldy);
    for (int t = 0; t < nt && !what[0]; t++)
        for (int r = 0; r < ldy && !what[0]; r++) {
            float v = y[(size_t)t * ldy + r], e = ref[(size_t)t * ldy + r];
            if (r < r0 || r >= rows) {
                if (v != ST_UNTOUCHED) snprintf(what, sizeof what, "wrote row %d outside [%d, %d)", r, r0, rows);
                continue;
            }
            double tol = exact ? 0.0 : (2.0 * nb + 32) * ldexp(1.0, -23) *
                                           st_q8_mag(dt, w + (size_t)r * nb * st_q8_file_bb(dt), &a, t, cols);
            if (!(fabs((double)v - e) <= tol))
                snprintf(what, sizeof what, "y[t=%d][r=%d] = %.9g, scalar %.9g (tolerance %.3g, %s data)", t, r, v, e,
                         tol, exact ? "integer" : "random");
        }
    const int splits[][2] = {{rows / 2, rows / 2}, {r0 + 1, rows}, {5, 9}, {3, 13}, {8, 16}};
    for (int si = 0; si < ST_COUNT(splits) && !what[0]; si++) {
        int s1 = splits[si][0] < r0 ? r0 : splits[si][0] > rows ? rows : splits[si][0];
        int s2 = splits[si][1] < s1 ? s1 : splits[si][1] > rows ? rows : splits[si][1];
        for (size_t i = 0; i < ny; i++) y2[i] = ST_UNTOUCHED;
        f(p, rows, cols, r0, s1, &a, y2, ldy);
        f(p, rows, cols, s1, s2, &a, y2, ldy);
        f(p, rows, cols, s2, rows, &a, y2, ldy);
        if (memcmp(y, y2, sizeof(float) * ny))
            snprintf(what, sizeof what, "rows split at %d, %d change the result bits", s1, s2);
    }
    for (int t = 0; t < nt && nt > 1 && !what[0]; t++) {
        q8_act one = a;
        one.nt = 1;
        one.q += (size_t)t * a.quads * 128, one.d += (size_t)t * a.quads * 4, one.s += (size_t)t * a.quads * 4;
        for (int r = 0; r < ldy; r++) y2[r] = ST_UNTOUCHED;
        f(p, rows, cols, r0, rows, &one, y2, ldy);
        if (memcmp(y2 + r0, y + (size_t)t * ldy + r0, sizeof(float) * (size_t)(rows - r0)))
            snprintf(what, sizeof what, "token %d alone differs from the prefill call", t);
    }
done:
    if (what[0]) {
        snprintf(msg, len, "%s %s int8 rows=%d cols=%d nt=%d: %s", name, dtype_name(dt), rows, cols, nt, what);
        rc = -1;
    }
    free(w), free(p), free(x), free(ref), free(y), free(y2), free(a.q), free(a.d), free(a.s);
    return rc;
}

/* The int8 sizes: columns not multiples of 128 (partial quads of 1 to 3
 * blocks), rows not multiples of 8 (partial groups), token counts that leave
 * every remainder of the prefill tiles. */
static const int ST_Q8_COLS[] = {32, 96, 128, 160, 576, 800};
static const int ST_Q8_ROWS[] = {1, 3, 8, 12, 17, 34};
static const int ST_Q8_NT[] = {1, 2, 3, 5, 8, 13, 17}; /* 8, 13 (8 + 4 + 1): the decode-of-several-sequences tiles */
/* The plain packed layouts (the type table's plain packer: Q4_0, Q4_1, Q8_0, the MLX groups). */
__attribute__((unused)) static int st_plain_packed(dtype dt) { return DTYPE_TRAITS[dt].pk.pack_rows == q8w_pack_rows; }

/* The int8 sizes and tolerances, for the log. */
__attribute__((unused)) static void st_q8_describe(void) {
    printf("int8 checks: Q4_0 Q4_1 Q8_0 Q4_1G64 Q4_1G128, cols");
    for (int i = 0; i < ST_COUNT(ST_Q8_COLS); i++) printf(" %d", ST_Q8_COLS[i]);
    printf(" (rounded up to the group for Q4_1G64 / G128) x nt");
    for (int i = 0; i < ST_COUNT(ST_Q8_NT); i++) printf(" %d", ST_Q8_NT[i]);
    printf(", rows cycling");
    for (int i = 0; i < ST_COUNT(ST_Q8_ROWS); i++) printf(" %d", ST_Q8_ROWS[i]);
    printf("; integer data: equal bits, random data: |y - ref| <= (2 nb + 32) 2^-23 sum|term|;"
           " 5 row splits and every token alone: equal bits\n");
}

/* Every int8 shape for one kernel: each column count with each token count,
 * rows cycling through ST_Q8_ROWS, on random and on exact data. */
__attribute__((unused)) static int st_check_q8(const char *name, matmul_q8_fn f, dtype dt, char *msg, size_t len) {
    uint64_t seed = 777 + 100 * (uint64_t)dt;
    for (int c = 0; c < ST_COUNT(ST_Q8_COLS); c++)
        for (int t = 0; t < ST_COUNT(ST_Q8_NT); t++)
            for (int exact = 0; exact <= 1; exact++) {
                int rows = ST_Q8_ROWS[(c + t + 3 * exact) % ST_COUNT(ST_Q8_ROWS)], g = 32 * q8w_gb(dt);
                int cols = (ST_Q8_COLS[c] + g - 1) / g * g;
                if (st_check_q8_case(name, f, dt, rows, cols, ST_Q8_NT[t], exact, ++seed, msg, len))
                    return -1;
            }
    return 0;
}

/* Runs every matmul / dot case of the standard sizes through table k and hands
 * each result to `sink` (called with the y values of a case, or a dot value). */
typedef void (*st_sink)(void *ctx, const float *v, size_t n, const char *what);

static int st_run_all(const kernels *k, st_sink sink, void *ctx) {
    static const int nts[] = {1, 3};
    for (int d = 0; d < DT_COUNT; d++) {
        dtype dt = (dtype)d;
        if (!st_matmul_type(dt)) continue;
        int blk = st_block_elems(dt) > 1, sup = st_block_elems(dt) == QK_K;
        const int *cols = sup ? ST_SUPER_COLS : blk ? ST_BLOCK_COLS : ST_DENSE_COLS;
        int ncols = sup ? ST_COUNT(ST_SUPER_COLS) : blk ? ST_COUNT(ST_BLOCK_COLS) : ST_COUNT(ST_DENSE_COLS);
        for (int c = 0; c < ncols; c++)
            for (int t = 0; t < ST_COUNT(nts); t++) {
                int rows = 5, nt = nts[t], n = cols[c];
                size_t rb = dtype_row_bytes(dt, n);
                uint8_t *w = malloc(rb * rows);
                float *x = malloc(sizeof(float) * (size_t)n * nt), *y = malloc(sizeof(float) * (size_t)rows * nt);
                if (!w || !x || !y) {
                    free(w), free(x), free(y);
                    return -1;
                }
                uint64_t seed = 5000 + (uint64_t)(100 * d + 10 * c + t);
                for (int r = 0; r < rows; r++) st_fill_row(dt, w + r * rb, n, &seed);
                for (int i = 0; i < n * nt; i++) x[i] = st_unit(&seed);
                k->matmul[dt](w, rb, n, 0, rows, x, n, nt, y, rows);
                char what[64];
                snprintf(what, sizeof what, "%s cols=%d nt=%d", dtype_name(dt), n, nt);
                sink(ctx, y, (size_t)rows * nt, what);
                free(w), free(x), free(y);
            }
    }
    static const int ns[] = {1, 7, 16, 33, 100, 1000};
    for (int i = 0; i < ST_COUNT(ns); i++) {
        float a[1000], b[1000];
        uint64_t seed = 9000 + (uint64_t)i;
        for (int j = 0; j < ns[i]; j++) a[j] = st_unit(&seed), b[j] = st_unit(&seed);
        float v = k->dot(a, b, ns[i]);
        char what[64];
        snprintf(what, sizeof what, "dot n=%d", ns[i]);
        sink(ctx, &v, 1, what);
    }
    return 0;
}

/* FNV-1a over the bits of every result, to compare runs across processes (qemu). */
static void st_hash_sink(void *ctx, const float *v, size_t n, const char *what) {
    uint64_t *h = ctx;
    (void)what;
    const uint8_t *p = (const uint8_t *)v;
    for (size_t i = 0; i < n * sizeof(float); i++) *h = (*h ^ p[i]) * 0x100000001b3ull;
}

static uint64_t st_table_hash(const kernels *k) {
    uint64_t h = 0xcbf29ce484222325ull;
    if (st_run_all(k, st_hash_sink, &h)) return 0;
    return h;
}

/* Every result of table a recorded, then compared bit for bit with table b's. */
typedef struct {
    float *v;
    size_t n, cap, pos;
    int mismatch;
    char where[64];
} st_record;

static void st_record_sink(void *ctx, const float *v, size_t n, const char *what) {
    st_record *r = ctx;
    (void)what;
    if (r->v && r->n + n > r->cap) {
        size_t cap = 2 * (r->n + n);
        float *nv = realloc(r->v, sizeof(float) * cap);
        if (!nv) {
            free(r->v);
            r->v = NULL;
            return;
        }
        r->v = nv, r->cap = cap;
    }
    if (r->v) memcpy(r->v + r->n, v, sizeof(float) * n), r->n += n;
}

static void st_compare_sink(void *ctx, const float *v, size_t n, const char *what) {
    st_record *r = ctx;
    if (!r->mismatch && (r->pos + n > r->n || memcmp(r->v + r->pos, v, sizeof(float) * n))) {
        r->mismatch = 1;
        snprintf(r->where, sizeof r->where, "%s", what);
    }
    r->pos += n;
}

static int st_check_same_bits(const kernels *a, const kernels *b, char *msg, size_t len) {
    st_record r = {malloc(sizeof(float) * 4096), 0, 4096, 0, 0, ""};
    int rc = 0;
    if (!r.v || st_run_all(a, st_record_sink, &r) || !r.v || st_run_all(b, st_compare_sink, &r)) {
        snprintf(msg, len, "%s vs %s: out of memory", a->name, b->name);
        rc = -1;
    } else if (r.mismatch) {
        snprintf(msg, len, "%s and %s give different bits for %s", a->name, b->name, r.where);
        rc = -1;
    }
    free(r.v);
    return rc;
}

/* Attention kernels and fast softmax / SwiGLU (kernels.h) against scalar.c's:
 * scores, values and SwiGLU bit for bit (each lane does the scalar fmaf
 * sequence), softmax within 1e-6 relative (its sum is ordered by lanes). Shapes:
 * head dims 32 / 64 / 128 with 32- or 64-position key blocks (the SIMD tiles; a
 * block narrower than a tile takes the scalar fallback), lengths across block
 * edges and ending 1, 2 or 3 vectors into a tile (its narrower tail tiles), 1 to 9 query rows, values inside wider rows (vstride 3 hd), SwiGLU
 * through both clamps of e^x with and without a scalar tail. */
static int st_check_attn(const kernels *k, char *msg, size_t len) {
    const kernels *ref = kernels_scalar();
    enum { NT = 9, LDS = 208, MAXLEN = 200 };
    static const int hds[] = {64, 128, 32, 96}, kbs[] = {64, 64, 32, 64};
    static const int lens[] = {1, 15, 63, 64, 65, 90, 100, 130, 200};
    uint64_t st = 99;
    int bad = 0;
    for (int c = 0; c < ST_COUNT(hds) && !bad; c++) {
        int hd = hds[c], kb = kbs[c];
        size_t kn = (size_t)((MAXLEN + kb - 1) / kb) * hd * kb, vn = (size_t)(MAXLEN + 1) * 3 * hd;
        size_t on = (size_t)NT * (LDS > 2 * hd ? LDS : 2 * hd);
        float *kf = malloc(kn * 4), *vf = malloc(vn * 4), *q = malloc((size_t)NT * 2 * hd * 4);
        float *pr = malloc((size_t)NT * LDS * 4), *want = calloc(on, 4), *got = calloc(on, 4);
        uint16_t *kbf = malloc(kn * 2), *vbf = malloc(vn * 2);
        for (size_t i = 0; i < kn; i++) kbf[i] = kv_bf16(kf[i] = 2 * st_unit(&st));
        for (size_t i = 0; i < vn; i++) vbf[i] = kv_bf16(vf[i] = 2 * st_unit(&st));
        /* some q and probabilities at and around BF16's flush to 0 (|x| < 2^-56) */
        static const float tiny[] = {0x1p-56f, -0x1p-56f, 0x1.fffffep-57f, 1e-30f, 0x1p-130f};
        for (int i = 0; i < NT * 2 * hd; i++) q[i] = i % 13 == 5 ? tiny[i % 5] : 2 * st_unit(&st);
        for (int i = 0; i < NT * LDS; i++) pr[i] = i % 11 == 3 ? tiny[i % 5] : 2 * st_unit(&st);
        for (int bf = 0; bf < 2 && !bad; bf++) { /* F32, BF16 (random pairs: any layout) */
            dtype dt = bf ? DT_BF16 : DT_F32;
            const void *kt = bf ? (const void *)kbf : kf, *v = bf ? (const void *)vbf : vf;
            for (int li = 0; li < ST_COUNT(lens) && !bad; li++)
                for (int nt = 1; nt <= NT && !bad; nt += 2) {
                    int n = lens[li];
                    ref->att_scores[dt](kt, kb, hd, n, q, 2 * hd, nt, want, LDS);
                    k->att_scores[dt](kt, kb, hd, n, q, 2 * hd, nt, got, LDS);
                    for (int t = 0; t < nt && !bad; t++) bad = memcmp(got + t * LDS, want + t * LDS, (size_t)n * 4) != 0;
                    if (bad) {
                        snprintf(msg, len, "att_scores %s hd %d len %d nt %d differs from scalar", dtype_name(dt), hd, n, nt);
                        break;
                    }
                    ref->att_values[dt](v, 3 * (size_t)hd, hd, n, pr, LDS, nt, want, 2 * hd);
                    k->att_values[dt](v, 3 * (size_t)hd, hd, n, pr, LDS, nt, got, 2 * hd);
                    for (int t = 0; t < nt && !bad; t++) bad = memcmp(got + t * 2 * hd, want + t * 2 * hd, (size_t)hd * 4) != 0;
                    if (bad) snprintf(msg, len, "att_values %s hd %d len %d nt %d differs from scalar", dtype_name(dt), hd, n, nt);
                }
        }
        free(kf), free(vf), free(q), free(pr), free(want), free(got), free(kbf), free(vbf);
    }
    if (bad) return 1;
    enum { SN = 1000, SPAD = 352 };
    static float g[SN], u[SN], a[SN], b[SN];
    for (int i = 0; i < SN; i++) g[i] = 60.0f * st_unit(&st), u[i] = st_unit(&st); /* through both clamps */
    for (int n = SN - 7; n <= SN; n += 7) { /* a scalar tail and none */
        memcpy(a, g, sizeof g), memcpy(b, g, sizeof g);
        ref->swiglu_fast(a, u, n);
        k->swiglu_fast(b, u, n);
        if (memcmp(a, b, (size_t)n * 4)) return snprintf(msg, len, "swiglu_fast n %d differs from scalar", n), 1;
        memcpy(a, g, sizeof g), memcpy(b, g, sizeof g);
        ref->geglu_fast(a, u, n);
        k->geglu_fast(b, u, n);
        if (memcmp(a, b, (size_t)n * 4)) return snprintf(msg, len, "geglu_fast n %d differs from scalar", n), 1;
    }
    for (int n = 1; n <= 333; n += 37) {
        for (int i = 0; i < SPAD; i++) g[i] = 40.0f * st_unit(&st); /* logits over +-40 */
        memcpy(a, g, SPAD * 4), memcpy(b, g, SPAD * 4);
        ref->softmax_fast(a, n, SPAD, 0.125f);
        k->softmax_fast(b, n, SPAD, 0.125f);
        for (int i = 0; i < SPAD; i++)
            if (fabsf(a[i] - b[i]) > 1e-9f + 1e-6f * a[i])
                return snprintf(msg, len, "softmax_fast len %d [%d] %g vs scalar %g", n, i, (double)b[i], (double)a[i]), 1;
    }
    return 0;
}

/* ---- int8 activations on GGUF blocks read in place (dequant.h) ----------------
 *
 * The types fast mode does not repack (Q2_K ... IQ4_XS) have matmul_q8 entries
 * that read the file layout; Q5_0's, Q5_1's and Q6_K's read their packed layouts
 * (packed here first). Reference: a double sum of w * (dx * q) with w the
 * type table's dequantized weights (held to gguf-py by tests/unit/test_quant.c)
 * and dx * q the int8 activations, which is what the int8 route computes up to
 * f32 rounding: the integer sums are exact and only the per-half f32 terms
 * (2 per sub-block, each a product of 3 to 4 factors) round, hence check_close
 * with n = cols (2 nb terms of at most 4 roundings each is well inside). Checked
 * for the scalar reference and for a table's kernel (when it has one), plus the
 * determinism contract bit for bit: a row split, and each token alone. */
/* Types fast mode packs as themselves in a layout of their own (the type table's packer is
 * not the plain one, which tests/unit/test_q8act.c checks): the int8 entry reads it. */
static int st_packed(dtype dt) {
    return DTYPE_TRAITS[dt].packs_as == dt && DTYPE_TRAITS[dt].pk.pack_rows != q8w_pack_rows;
}

/* The GGUF quantized types whose int8 entry reads their own layout: packed as above, or
 * the file layout in place (every dequantized type but the plain packed ones). */
static int st_own_int8(dtype dt) {
    return DTYPE_TRAITS[dt].dequant32 && (DTYPE_TRAITS[dt].packs_as == DT_COUNT || st_packed(dt));
}

static void st_pack_rows(dtype dt, const uint8_t *w, int rows, int cols, int r0, int r1, uint8_t *pk) {
    DTYPE_TRAITS[dt].pk.pack_rows(dt, w, rows, cols, r0, r1, pk);
}

static void st_packed_row_f32(dtype dt, const uint8_t *pk, int rows, int cols, int r, float *out) {
    DTYPE_TRAITS[dt].pk.row_f32(dt, pk, rows, cols, r, out);
}

static size_t st_quad_pos(int b, int j) {
    return (size_t)(b / 4) * 128 + (size_t)(j / 16) * 64 + (size_t)(b % 4) * 16 + (size_t)(j % 16);
}

static int st_check_inplace_case(const kernels *k, dtype dt, int rows, int cols, int nt, int group, uint64_t seed,
                                 char *msg, size_t len) {
    matmul_q8_fn f = k->matmul_q8[dt], fr = kernels_scalar()->matmul_q8[dt];
    if (!fr) return st_fail(msg, len, k, dt, rows, cols, nt, "scalar table has no in-place int8 kernel");
    size_t rb = dtype_row_bytes(dt, cols);
    int qd = q8_quads(cols), ny = nt * rows, packed = st_packed(dt);
    uint8_t *w = malloc(rb * (size_t)rows);
    uint8_t *pk = packed ? malloc(q8w_matrix_bytes(dt, rows, cols / 32)) : w; /* what the kernels read */
    float *x = malloc(sizeof(float) * (size_t)nt * cols), *wf = malloc(sizeof(float) * (size_t)cols);
    float *y = malloc(sizeof(float) * ny), *yr = malloc(sizeof(float) * ny), *ys = malloc(sizeof(float) * ny);
    q8_act a = {nt, cols, qd, malloc((size_t)nt * qd * 128), malloc(sizeof(float) * nt * qd * 4),
                malloc(sizeof(float) * nt * qd * 4), group};
    int rc = 0;
    if (!w || !pk || !x || !wf || !y || !yr || !ys || !a.q || !a.d || !a.s) {
        rc = st_fail(msg, len, k, dt, rows, cols, nt, "out of memory");
        goto done;
    }
    uint64_t s = seed;
    for (int r = 0; r < rows; r++) st_fill_row(dt, w + r * rb, cols, &s);
    if (packed) { /* in two calls, as threads pack their own groups */
        int g = rows / 2 / Q8W_GROUP * Q8W_GROUP;
        memset(pk, 0xa5, q8w_matrix_bytes(dt, rows, cols / 32)); /* every byte the kernels read is written */
        st_pack_rows(dt, w, rows, cols, g, rows, pk);
        st_pack_rows(dt, w, rows, cols, 0, g, pk);
        for (int r = 0; r < rows && !rc; r++) { /* the packed rows read back: the file's values */
            float back[ST_MAX_SUPER_COLS];
            dtype_dequant_row(dt, w, cols, r, wf);
            st_packed_row_f32(dt, pk, rows, cols, r, back);
            if (memcmp(back, wf, sizeof(float) * (size_t)cols)) rc = st_fail(msg, len, k, dt, rows, cols, nt, "packed row != file row");
        }
        if (rc) goto done;
    }
    for (int i = 0; i < nt * cols; i++) x[i] = st_unit(&s) * (i % 97 == 0 ? 8.0f : 1.0f); /* some outliers */
    kernels_scalar()->quantize_act(x, cols, 0, nt, &a);
    /* a split in the middle, and for packed types also inside groups of 8 (4 and 13 of 17) */
    int mid = packed && rows > 4 ? rows / 4 + 1 : rows / 2;
    fr(pk, rows, cols, 0, rows, &a, yr, rows);
    if (f) {
        f(pk, rows, cols, 0, rows, &a, y, rows);
        f(pk, rows, cols, 0, mid, &a, ys, rows);
        f(pk, rows, cols, mid, rows, &a, ys, rows);
    }
    for (int r = 0; r < rows && !rc; r++) {
        dtype_dequant_row(dt, w, cols, r, wf);
        for (int t = 0; t < nt && !rc; t++) {
            double ref = 0, mag = 0;
            for (int c = 0; c < cols; c++) {
                double xv = (double)a.d[(size_t)t * qd * 4 + c / 32] * a.q[(size_t)t * qd * 128 + st_quad_pos(c / 32, c % 32)];
                ref += wf[c] * xv;
                mag += fabs(wf[c] * xv);
            }
            int i = t * rows + r;
            char what[200];
            if (!check_close(yr[i], (float)ref, mag, cols)) {
                snprintf(what, sizeof what, "scalar int8 y[t=%d][r=%d] = %.9g, dequantized weights x int8 activations %.9g",
                         t, r, yr[i], ref);
                rc = st_fail(msg, len, kernels_scalar(), dt, rows, cols, nt, what);
            } else if (f && !check_close(y[i], (float)ref, mag, cols)) {
                snprintf(what, sizeof what, "int8 y[t=%d][r=%d] = %.9g, dequantized weights x int8 activations %.9g", t,
                         r, y[i], ref);
                rc = st_fail(msg, len, k, dt, rows, cols, nt, what);
            } else if (f && memcmp(&y[i], &ys[i], 4)) {
                snprintf(what, sizeof what, "int8 row split at %d changes y[t=%d][r=%d]", mid, t, r);
                rc = st_fail(msg, len, k, dt, rows, cols, nt, what);
            }
        }
    }
    for (int t = 0; f && t < nt && !rc && nt > 1; t++) { /* each token alone = its prefill value */
        q8_act one = {1, cols, qd, a.q + (size_t)t * qd * 128, a.d + (size_t)t * qd * 4, a.s + (size_t)t * qd * 4, group};
        f(pk, rows, cols, 0, rows, &one, ys, rows);
        for (int r = 0; r < rows && !rc; r++)
            if (memcmp(&ys[r], &y[t * rows + r], 4)) rc = st_fail(msg, len, k, dt, rows, cols, nt, "int8 token alone differs from prefill");
    }
done:
    if (pk != w) free(pk);
    free(w), free(x), free(wf), free(y), free(yr), free(ys), free(a.q), free(a.d), free(a.s);
    return rc;
}

/* Every size for one table and in-place type (rows not multiples of 256 where the type allows).
 * The packed types (Q5_0, Q5_1, Q6_K, Q4_K) also take 17 and 34 rows (partial groups after whole
 * ones; AVX-512's 16-row prefill panels) and 17 tokens (every remainder of the prefill tiles).
 * Super-block types also on activations of Q8_ACT_SB blocks per scale (what forward.c gives
 * a kernel that asks for them, kernels.act_group). */
__attribute__((unused)) static int st_check_inplace(const kernels *k, dtype dt, char *msg, size_t len) {
    static const int rows[] = {1, 3, 9, 17, 34}, nts[] = {1, 2, 5, 17, 8, 13}; /* 8, 13: decode tiles of several sequences */
    int sup = st_block_elems(dt) == QK_K;
    const int *cols = sup ? ST_SUPER_COLS : ST_BLOCK_COLS;
    int ncols = sup ? ST_COUNT(ST_SUPER_COLS) : ST_COUNT(ST_BLOCK_COLS);
    uint64_t seed = 77000 + 1000 * (uint64_t)dt;
    int nr = st_packed(dt) ? ST_COUNT(rows) : 3, nn = st_packed(dt) ? ST_COUNT(nts) : 3;
    for (int c = 0; c < ncols; c++)
        for (int r = 0; r < nr; r++)
            for (int t = 0; t < nn; t++)
                for (int g = 1; g <= (sup ? Q8_ACT_SB : 1); g += Q8_ACT_SB - 1)
                    if (st_check_inplace_case(k, dt, rows[r], cols[c], nts[t], g, ++seed, msg, len)) return -1;
    return 0;
}

#ifndef KERNELS_SELFTEST_NO_MAIN
/* `kernels_selftest --hash` prints only the result hash of the auto-selected
 * table (for comparing a qemu run with a native one); without arguments it
 * runs every check and prints one line per table and dtype. */
int main(int argc, char **argv) {
    const kernels *tables[] = {kernels_avx2(), kernels_avx512(), kernels_neon()};
    const kernels *best = kernels_select(NULL);
    if (argc > 1 && !strcmp(argv[1], "--hash")) {
        printf("%016llx\n", (unsigned long long)st_table_hash(best));
        return 0;
    }
    int failed = 0, tested = 0;
    char msg[512];
    printf("kernels_select(NULL): %s\n", best ? best->name : "(none)");
    st_q8_describe();
    for (int i = 0; i < ST_COUNT(tables); i++) {
        const kernels *k = tables[i];
        if (!k) continue;
        tested++;
        for (int d = 0; d < DT_COUNT; d++) {
            if (!st_matmul_type((dtype)d)) continue;
            int rc = st_check_dtype(k, (dtype)d, msg, sizeof msg);
            printf("%-7s %-5s %s\n", k->name, dtype_name((dtype)d), rc ? msg : "ok");
            failed += rc != 0;
        }
        int rc = st_check_vectors(k, msg, sizeof msg);
        printf("%-7s dot/axpy %s\n", k->name, rc ? msg : "ok");
        failed += rc != 0;
        if (k->quantize_act) {
            rc = st_check_quantize(k, msg, sizeof msg);
            printf("%-7s quantize_act %s\n", k->name, rc ? msg : "= scalar bytes: ok");
            failed += rc != 0;
        }
        for (int d = 0; d < DT_COUNT; d++) {
            if (!st_plain_packed((dtype)d)) continue;
            matmul_q8_fn f = k->matmul_q8[(dtype)d];
            if (!f) continue;
            rc = st_check_q8(k->name, f, (dtype)d, msg, sizeof msg);
            printf("%-7s %-5s int8 %s\n", k->name, dtype_name((dtype)d), rc ? msg : "vs scalar: ok");
            failed += rc != 0;
        }
        for (int d = 0; d < DT_COUNT; d++) {
            dtype dt = (dtype)d;
            if (!st_own_int8(dt)) continue;
            rc = st_check_inplace(k, dt, msg, sizeof msg);
            printf("%-7s %-6s int8 %s %s\n", k->name, dtype_name(dt), st_packed(dt) ? "packed" : "in place",
                   rc ? msg : k->matmul_q8[dt] ? "vs reference: ok" : "(no kernel here: f32 route; scalar reference ok)");
            failed += rc != 0;
        }
        if (k->att_scores[DT_F32]) {
            rc = st_check_attn(k, msg, sizeof msg);
            printf("%-7s attention / softmax / swiglu %s\n", k->name, rc ? msg : "= scalar bits (softmax within 1e-6): ok");
            failed += rc != 0;
        }
        if (k->matmul[DT_AFFINE4]) {
            rc = st_check_affine(k, k->name, k->matmul_q8[DT_AFFINE4], k->matmul_q8[DT_AFFINE8], msg, sizeof msg);
            printf("%-7s AFFINE4/8 %s%s\n", k->name, rc ? msg : "ok",
                   rc ? "" : k->matmul_q8[DT_AFFINE4] ? " (f32 bits = scalar; int8 vs scalar reference)" : " (f32 bits = scalar)");
            failed += rc != 0;
        }
    }
#if defined(__x86_64__)
    if (kernels_avx512()) { /* the AVX-512 table without VNNI (vpmaddubsw + vpmaddwd), on this CPU too */
        const kernels *k = kernels_avx512_table(0);
        for (int d = 0; d < DT_COUNT; d++) {
            if (!st_plain_packed((dtype)d)) continue;
            int rc = st_check_q8("avx512-novnni", k->matmul_q8[(dtype)d], (dtype)d, msg, sizeof msg);
            printf("avx512  %-5s int8 without VNNI %s\n", dtype_name((dtype)d), rc ? msg : "vs scalar: ok");
            failed += rc != 0;
        }
        static const dtype packed[] = {DT_Q5_0, DT_Q5_1, DT_Q6_K, DT_Q4_K};
        for (int d = 0; d < ST_COUNT(packed); d++) {
            int rc = st_check_inplace(k, packed[d], msg, sizeof msg);
            printf("avx512  %-5s int8 without VNNI %s\n", dtype_name(packed[d]), rc ? msg : "vs reference: ok");
            failed += rc != 0;
        }
        k = kernels_avx512_table(1);
        if (k != kernels_avx512()) { /* the table chosen here takes GFNI for Q6_K: the one without, on this CPU too */
            int rc = st_check_inplace(k, DT_Q6_K, msg, sizeof msg);
            printf("avx512  Q6_K  int8 without GFNI %s\n", rc ? msg : "vs reference: ok");
            failed += rc != 0;
        }
        k = kernels_avx512_table(0); /* attention without AVX512-BF16 (two FMAs a pair), on this CPU too */
        int rc = st_check_attn(k, msg, sizeof msg);
        printf("avx512  attention without AVX512-BF16 %s\n", rc ? msg : "= scalar bits (softmax within 1e-6): ok");
        failed += rc != 0;
    }
#endif
#if defined(__aarch64__)
    {   /* the int8 path without the dot-product extension, whatever this CPU has */
        printf("neon    dot-product extension (vdotq_s32 in the int8 route): %s\n",
               (getauxval(AT_HWCAP) & (1 << 20)) ? "yes" : "no");
        int rc = st_check_affine(NULL, "neon-nodot", affine4_q8_neon_nodot, affine8_q8_neon_nodot, msg, sizeof msg);
        printf("neon    AFFINE4/8 int8 without vdotq_s32 %s\n", rc ? msg : "ok");
        failed += rc != 0;
        for (int d = 0; d < DT_COUNT; d++) {
            if (!st_plain_packed((dtype)d)) continue;
            rc = st_check_q8("neon-nodot", kernels_neon_q8_plain((dtype)d), (dtype)d, msg, sizeof msg);
            printf("neon    %-5s int8 without sdot (vmull_s8 + vpadalq_s16) %s\n", dtype_name((dtype)d),
                   rc ? msg : "vs scalar: ok");
            failed += rc != 0;
        }
        for (int d = 0; d < DT_COUNT; d++) { /* the neon table with its plain variants */
            dtype dt = (dtype)d;
            if (!st_own_int8(dt)) continue;
            kernels plain = *kernels_neon();
            plain.name = "neon-nodot";
            plain.matmul_q8[dt] = st_packed(dt) ? kernels_neon_q8_plain(dt) : inplace_neon_plain(dt);
            rc = plain.matmul_q8[dt] ? st_check_inplace(&plain, dt, msg, sizeof msg) : -1;
            printf("neon    %-6s int8 %s without sdot (vmull_s8 + vpadalq_s16) %s\n", dtype_name(dt),
                   st_packed(dt) ? "packed" : "in place",
                   rc ? (plain.matmul_q8[dt] ? msg : "no plain kernel") : "vs reference: ok");
            failed += rc != 0;
        }
    }
#endif
    for (int i = 0; i < ST_COUNT(tables); i++)
        for (int j = i + 1; j < ST_COUNT(tables); j++) {
            if (!tables[i] || !tables[j]) continue;
            int rc = st_check_same_bits(tables[i], tables[j], msg, sizeof msg);
            printf("%s = %s bit for bit: %s\n", tables[i]->name, tables[j]->name, rc ? msg : "ok");
            failed += rc != 0;
        }
    if (best) printf("result hash (%s): %016llx\n", best->name, (unsigned long long)st_table_hash(best));
    if (!tested) {
        printf("no ISA kernel table on this machine: nothing compared\n");
        return 1;
    }
    printf("%s\n", failed ? "FAILED" : "all ok");
    return failed ? 1 : 0;
}
#endif
