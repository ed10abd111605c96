/* test_affine_q8.c - MLX affine 4/8-bit with int8 activations (fast mode): every
 * ISA kernel vs the scalar reference (bit for bit where all sums are exact in f32,
 * within a derived bound on random data), the reference vs a double-precision
 * dot of the dequantized weights and activations, and independence of the row
 * split and token batching (what makes results identical for any thread count). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "model/affine.h"
#include "kernels/affine_kernels.h"
#include "kernels/kernels.h"
#include "model/repack.h"
#include "base/util.h"

#define KERNELS_SELFTEST_NO_MAIN
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* only its affine checks are used here */
#include "../kernels_selftest.c" /* the affine checks make neon-test runs, here for this CPU's tables */
#pragma GCC diagnostic pop

static uint64_t aq_rng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static float aq_unit(uint64_t *s) { return (float)((double)(aq_rng(s) >> 40) / (double)(1ull << 23) - 1.0); }

typedef struct {
    int bits, group, sdt, rows, cols;
    uint8_t *q, *s, *b; /* one byte past malloc'd storage: the file layout may be unaligned */
    affine_weights aw;
} aq_mat;

static void aq_put(uint8_t *p, int sdt, size_t i, float v) {
    if (sdt == DT_F32) {
        memcpy(p + 4 * i, &v, 4);
    } else {
        uint16_t h = sdt == DT_F16 ? f32_to_f16(v) : f32_to_bf16(v);
        memcpy(p + 2 * i, &h, 2);
    }
}

/* exact = 1: scales and biases are small powers of two / integers, so that every
 * product and sum below stays an exactly representable f32. */
static void aq_make(aq_mat *m, int bits, int group, int sdt, int rows, int cols, int exact, uint64_t *st) {
    *m = (aq_mat){.bits = bits, .group = group, .sdt = sdt, .rows = rows, .cols = cols};
    size_t qb = (size_t)rows * cols * bits / 8, ng = (size_t)rows * (cols / group), es = sdt == DT_F32 ? 4 : 2;
    m->q = malloc(qb + 1);
    m->s = malloc(ng * es + 1);
    m->b = malloc(ng * es + 1);
    for (size_t i = 0; i < qb; i++) m->q[1 + i] = (uint8_t)aq_rng(st);
    for (size_t i = 0; i < ng; i++) {
        float sc = exact ? ldexpf(1.0f, -(int)(aq_rng(st) % 3)) * ((aq_rng(st) & 1) ? -1.0f : 1.0f)
                         : aq_unit(st) * 0.05f;
        float bi = exact ? (float)((int)(aq_rng(st) % 9) - 4) : aq_unit(st);
        aq_put(m->s + 1, sdt, i, sc);
        aq_put(m->b + 1, sdt, i, bi);
    }
    m->aw = (affine_weights){m->q + 1, m->s + 1, m->b + 1, sdt, group};
}

static void aq_free(aq_mat *m) {
    free(m->q);
    free(m->s);
    free(m->b);
}

static void aq_act_new(q8_act *a, int nt, int cols) {
    a->nt = nt;
    a->cols = cols;
    a->quads = q8_quads(cols);
    a->group = 0;
    a->q = aligned_alloc(64, (size_t)nt * a->quads * 128);
    a->d = malloc((size_t)nt * a->quads * 4 * sizeof(float));
    a->s = malloc((size_t)nt * a->quads * 4 * sizeof(float));
}

static void aq_act_free(q8_act *a) {
    free(a->q);
    free(a->d);
    free(a->s);
}

/* Activations: exact = 1 gives integers in [-7, 7] with one 127 in every block, so
 * the quantizer's d is 1 and q equals x, and (with cols <= 640 and scales 2^-2..1)
 * every partial sum stays below 2^22: exact in f32. */
static float *aq_x(int nt, int cols, int exact, uint64_t *st) {
    float *x = malloc((size_t)nt * cols * sizeof(float));
    for (int i = 0; i < nt * cols; i++)
        x[i] = exact ? (i % 32 == 5 ? 127.0f : (float)((int)(aq_rng(st) % 15) - 7)) : aq_unit(st) * 3.0f;
    return x;
}

/* Element j of block b of token t, and the weight value c of row r. */
static int aq_xq(const q8_act *a, int t, int b, int j) {
    return a->q[(size_t)t * a->quads * 128 + (size_t)(b / 4) * 128 + (size_t)(j / 16) * 64 + (size_t)(b % 4) * 16 +
                (size_t)(j % 16)];
}

static int aq_wq(const aq_mat *m, int r, int c) {
    uint8_t byte = ((const uint8_t *)m->aw.q)[(size_t)r * m->cols * m->bits / 8 + (size_t)c * m->bits / 8];
    return m->bits == 8 ? byte : (c & 1) ? byte >> 4 : byte & 15;
}

/* The double-precision value the kernels approximate, and the sum of the
 * magnitudes of its terms (the scale of f32 rounding error). */
static double aq_ref(const aq_mat *m, const q8_act *a, int r, int t, double *mag) {
    int ng = m->cols / m->group;
    double y = 0.0, s = 0.0;
    for (int c = 0; c < m->cols; c++) {
        int g = c / m->group;
        double w = (double)affine_param(m->aw.scales, m->sdt, (size_t)r * ng + g) * aq_wq(m, r, c) +
                   (double)affine_param(m->aw.biases, m->sdt, (size_t)r * ng + g);
        double xv = (double)a->d[(size_t)t * a->quads * 4 + c / 32] * aq_xq(a, t, c / 32, c % 32);
        y += w * xv;
        s += fabs(w * xv);
    }
    *mag = s;
    return y;
}

static matmul_q8_fn aq_scalar(int bits) { return bits == 4 ? affine4_q8_scalar : affine8_q8_scalar; }

/* The tables with an affine int8 kernel on this CPU, besides the scalar one. */
static int aq_tables(const kernels **out) {
    int n = 0;
    const kernels *c[] = {kernels_avx512(), kernels_avx2(), kernels_neon()};
    for (int i = 0; i < 3; i++)
        if (c[i] && c[i]->matmul_q8[DT_AFFINE4] && c[i]->matmul_q8[DT_AFFINE8]) out[n++] = c[i];
    return n;
}

static const int AQ_COLS[] = {32, 64, 96, 128, 192, 320, 384, 640, 2112};
static const int AQ_GROUPS[] = {32, 64, 128};
static const int AQ_SDT[] = {DT_BF16, DT_F16, DT_F32};

/* For every shape: the scalar reference within tolerance of the double value, each
 * ISA kernel bit-equal to it (exact = 1) or within tolerance (exact = 0). */
static void aq_check(int exact) {
    const kernels *tabs[4];
    int nt_tabs = aq_tables(tabs);
    uint64_t st = 12345 + (uint64_t)exact;
    int checked = 0;
    for (int bits = 4; bits <= 8; bits += 4)
        for (size_t ci = 0; ci < sizeof AQ_COLS / sizeof *AQ_COLS; ci++)
            for (size_t gi = 0; gi < 3; gi++) {
                int cols = AQ_COLS[ci], group = AQ_GROUPS[gi], rows = 11, nt = 1 + (int)(ci % 3) * 2;
                if (cols % group || (exact && cols > 640)) continue;
                aq_mat m;
                aq_make(&m, bits, group, AQ_SDT[(ci + gi) % 3], rows, cols, exact, &st);
                float *x = aq_x(nt, cols, exact, &st);
                q8_act a;
                aq_act_new(&a, nt, cols);
                kernels_scalar()->quantize_act(x, cols, 0, nt, &a);
                float *ref = malloc((size_t)nt * rows * sizeof(float)), *y = malloc((size_t)nt * rows * sizeof(float));
                aq_scalar(bits)(&m.aw, rows, cols, 0, rows, &a, ref, rows);
                for (int t = 0; t < nt; t++)
                    for (int r = 0; r < rows; r++) {
                        double mag, want = aq_ref(&m, &a, r, t, &mag), got = ref[(size_t)t * rows + r];
                        /* f32 sums of at most cols / 32 + 2 * groups terms, each with a relative
                         * error of a few ulps: 1e-5 of the magnitude is ~100 ulps of margin */
                        double tol = exact ? 0.0 : 1e-5 * mag + 1e-6;
                        cr_assert(fabs(got - want) <= tol, "scalar %d-bit g%d cols %d r%d t%d: %.9g vs %.9g",
                                  bits, group, cols, r, t, got, want);
                    }
                for (int k = 0; k < nt_tabs; k++) {
                    tabs[k]->matmul_q8[bits == 4 ? DT_AFFINE4 : DT_AFFINE8](&m.aw, rows, cols, 0, rows, &a, y, rows);
                    for (int i = 0; i < nt * rows; i++) {
                        double mag;
                        aq_ref(&m, &a, i % rows, i / rows, &mag);
                        double tol = exact ? 0.0 : 1e-5 * mag + 1e-6;
                        cr_assert(fabs((double)y[i] - ref[i]) <= tol, "%s %d-bit g%d cols %d #%d: %.9g vs ref %.9g",
                                  tabs[k]->name, bits, group, cols, i, y[i], ref[i]);
                    }
                    checked++;
                }
                free(ref);
                free(y);
                free(x);
                aq_act_free(&a);
                aq_free(&m);
            }
    cr_log_info("affine q8: %d kernel/shape checks against the scalar reference", checked);
}

Test(affine_q8, integer_sums_exact) { aq_check(1); }
Test(affine_q8, random_within_tolerance) { aq_check(0); }

/* Rows split at arbitrary points (threads) and tokens computed alone (decode) or
 * batched (prefill) give the same bits for every table, scalar included. */
Test(affine_q8, split_and_batch_invariant) {
    const kernels *tabs[4];
    int n = aq_tables(tabs);
    tabs[n++] = kernels_scalar();
    uint64_t st = 777;
    for (int bits = 4; bits <= 8; bits += 4) {
        int rows = 37, cols = 320, nt = 6;
        aq_mat m;
        aq_make(&m, bits, 64, DT_BF16, rows, cols, 0, &st);
        float *x = aq_x(nt, cols, 0, &st);
        q8_act a, one;
        aq_act_new(&a, nt, cols);
        aq_act_new(&one, 1, cols);
        kernels_scalar()->quantize_act(x, cols, 0, nt, &a);
        for (int k = 0; k < n; k++) {
            matmul_q8_fn fn = tabs[k] == kernels_scalar() ? aq_scalar(bits)
                                                         : tabs[k]->matmul_q8[bits == 4 ? DT_AFFINE4 : DT_AFFINE8];
            float whole[6 * 37], part[6 * 37], alone[37];
            fn(&m.aw, rows, cols, 0, rows, &a, whole, rows);
            static const int cut[] = {0, 1, 9, 16, 17, 30, 37};
            for (int c = 0; c + 1 < 7; c++) fn(&m.aw, rows, cols, cut[c], cut[c + 1], &a, part, rows);
            cr_assert(memcmp(whole, part, sizeof whole) == 0, "%s %d-bit: row split changes results", tabs[k]->name, bits);
            for (int t = 0; t < nt; t++) {
                kernels_scalar()->quantize_act(x + (size_t)t * cols, cols, 0, 1, &one);
                fn(&m.aw, rows, cols, 0, rows, &one, alone, rows);
                cr_assert(memcmp(alone, whole + (size_t)t * rows, sizeof alone) == 0,
                          "%s %d-bit: token %d alone differs from the batch", tabs[k]->name, bits, t);
            }
        }
        free(x);
        aq_act_free(&a);
        aq_act_free(&one);
        aq_free(&m);
    }
}

/* kernels_selftest.c's affine and quantize_act checks (the ones `make neon-test`
 * runs under qemu) on every table of this CPU. */
Test(affine_q8, selftest_checks) {
    const kernels *tabs[] = {kernels_avx2(), kernels_avx512(), kernels_neon()};
    char msg[512];
    for (int i = 0; i < 3; i++) {
        const kernels *k = tabs[i];
        if (!k) continue;
        if (k->quantize_act) cr_assert(st_check_quantize(k, msg, sizeof msg) == 0, "%s", msg);
        if (k->matmul[DT_AFFINE4])
            cr_assert(st_check_affine(k, k->name, k->matmul_q8[DT_AFFINE4], k->matmul_q8[DT_AFFINE8], msg, sizeof msg) == 0,
                      "%s", msg);
    }
}

#if defined(__x86_64__)
const kernels *kernels_avx512_table(int level);
#endif

/* The int8 kernels of the shared-scale Q4_1 layouts (MLX 4-bit groups 64 and 128,
 * repacked) in every table of this CPU, the AVX-512 one without VNNI too, against
 * scalar.c's: kernels_selftest.c's st_check_q8 (integer data: equal bits; random:
 * the stated tolerance; row splits and single tokens: equal bits). */
Test(affine_q8, shared_scale_q4_1_kernels) {
    const kernels *tabs[] = {kernels_avx2(), kernels_avx512(), kernels_neon(),
#if defined(__x86_64__)
                             kernels_avx512() ? kernels_avx512_table(0) : NULL
#else
                             NULL
#endif
    };
    static const dtype dts[] = {DT_Q4_1G64, DT_Q4_1G128};
    char msg[512];
    int checked = 0;
    for (int i = 0; i < 4; i++)
        for (int d = 0; d < 2 && tabs[i]; d++) {
            cr_assert(tabs[i]->matmul_q8[dts[d]], "%s has no %s int8 kernel", tabs[i]->name, dtype_name(dts[d]));
            cr_assert(st_check_q8(tabs[i]->name, tabs[i]->matmul_q8[dts[d]], dts[d], msg, sizeof msg) == 0, "%s", msg);
            checked++;
        }
    cr_assert(checked > 0 || !kernels_avx2(), "no table checked");
}

/* MLX 4-bit rewritten as packed Q4_1 / Q4_1G64 / Q4_1G128 (repack_affine4_matrix,
 * fast mode), the file's size: every row
 * dequantizes to the same floats as the MLX layout (both compute q * scale, then
 * + bias, in f32), for every group size and both 16-bit scale types, with row
 * counts that leave partial groups of 8; and a scale f16 cannot hold exactly
 * (bf16 2^-30, below f16's range) makes it refuse. */
Test(affine_q8, affine4_as_q41_same_values) {
    uint64_t st = 21;
    static const int groups[] = {32, 64, 128}, sdts[] = {DT_BF16, DT_F16}, rowss[] = {5, 8, 19};
    for (int gi = 0; gi < 3; gi++)
        for (int si = 0; si < 2; si++) {
            /* 160 and 320 columns end in a partial quad (1 and 2 blocks) */
            int rows = rowss[(gi + si) % 3], cols = 4 * groups[gi] + (groups[gi] <= 64 ? groups[gi] : 0);
            aq_mat m;
            aq_make(&m, 4, groups[gi], sdts[si], rows, cols, 0, &st);
            tensor t = {.name = "w", .type = DT_AFFINE4, .ndim = 2, .shape = {rows, cols}, .data = &m.aw};
            dtype pt = plan_affine4_type(&t);
            cr_assert_eq(pt, groups[gi] == 32 ? DT_Q4_1 : groups[gi] == 64 ? DT_Q4_1G64 : DT_Q4_1G128);
            /* the file's size: 16 bytes of nibbles per 32 values, 4 bytes of scale and bias per group */
            size_t n = (size_t)rows * (cols / 32) * q8w_block_bytes(pt);
            cr_assert_eq(n, (size_t)rows * (cols / 2 + cols / groups[gi] * 4));
            uint8_t *p = malloc(n);
            cr_assert(repack_affine4_matrix(&t, p), "group %d: refused exact f16 parameters", groups[gi]);
            tensor q = {.name = "w", .type = pt, .ndim = 2, .shape = {rows, cols}, .nbytes = n, .packed = p};
            float *a = malloc(sizeof(float) * cols), *b = malloc(sizeof(float) * cols);
            for (int r = 0; r < rows; r++) {
                affine_row_f32(&t, r, a);
                repack_row_f32(&q, r, b);
                cr_assert(!memcmp(a, b, sizeof(float) * cols), "group %d sdt %d row %d: values differ", groups[gi],
                          sdts[si], r);
            }
            if (sdts[si] == DT_BF16) {
                aq_put(m.s + 1, DT_BF16, (size_t)(rows - 1) * (cols / groups[gi]), ldexpf(1.0f, -30));
                cr_assert(!repack_affine4_matrix(&t, p), "group %d: took a scale f16 cannot hold", groups[gi]);
            }
            free(a);
            free(b);
            free(p);
            aq_free(&m);
        }
}
