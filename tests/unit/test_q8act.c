/* test_q8act.c - the int8-activation route (fast mode): quantize_act and
 * matmul_q8 of every ISA table against the scalar reference in scalar.c, on
 * weights repacked by repack_matrix from random GGUF-layout blocks.
 *
 *  - quantize_act: bytes and floats identical to the reference (same max,
 *    multiply and round-to-nearest-even), for column counts that leave partial
 *    quads, with zero blocks and strided input.
 *  - matmul_q8, integer exactness: with every scale 1 (x made of integers with
 *    one 127 per block, so d = 1 and q = x; f16 scales 1; Q4_1 mins integers),
 *    every product and partial sum is an integer below 2^24, exact in f32 in
 *    any order: y must equal the reference bit for bit. This checks that the
 *    integer block sums (nibble order, quad order, Q8_0 sign handling, -8 and
 *    min terms) are the reference's exactly.
 *  - matmul_q8, random data: |y - ref| <= (2 nb + 32) * 2^-23 * mag, mag the sum
 *    of |term| over the block terms. Both sides add the same ~2 nb + 16 exact
 *    f32 products (integer sums times scale products) in different orders, and
 *    n additions in any order err by at most about n * 2^-24 * sum|term| each
 *    way; the margin doubles that.
 *  - the determinism contract (kernels.h): rows split [0,k) + [k,rows) and
 *    tokens one at a time give the same bits as one call; cells outside
 *    [r0, r1) or beyond ldy are never written. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "model/loader.h"
#include "model/repack.h"
#include "base/util.h"

#if defined(__x86_64__)
const kernels *kernels_avx512_table(int level);
#endif

static uint64_t q8t_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float q8t_unit(uint64_t *s) { return (float)((double)(q8t_next(s) >> 40) / (double)(1ull << 23) - 1.0); }

/* Every table with int8 kernels here, the scalar one excluded. */
static int q8t_tables(const kernels **out) {
    int n = 0;
    const kernels *c[] = {kernels_avx2(), kernels_avx512(), kernels_neon()};
    for (int i = 0; i < 3; i++)
        if (c[i] && (c[i]->quantize_act || c[i]->matmul_q8[DT_Q4_0])) out[n++] = c[i];
#if defined(__x86_64__)
    if (kernels_avx512()) out[n++] = kernels_avx512_table(0); /* the non-VNNI variant too */
#endif
    return n;
}


static void q8t_act_new(q8_act *a, int nt, int cols) {
    a->nt = nt;
    a->cols = cols;
    a->quads = q8_quads(cols);
    a->group = 0;
    a->q = malloc((size_t)nt * a->quads * 128);
    a->d = malloc((size_t)nt * a->quads * 4 * sizeof(float));
    a->s = malloc((size_t)nt * a->quads * 4 * sizeof(float));
    cr_assert(a->q && a->d && a->s);
    memset(a->q, 0x55, (size_t)nt * a->quads * 128); /* garbage the quantizer must overwrite */
}

static void q8t_act_free(q8_act *a) {
    free(a->q);
    free(a->d);
    free(a->s);
}

static quantize_act_fn q8t_quant(const kernels *k) {
    return k->quantize_act ? k->quantize_act : kernels_scalar()->quantize_act;
}

static matmul_q8_fn q8t_mm(const kernels *k, dtype dt) {
    return k->matmul_q8[dt] ? k->matmul_q8[dt] : kernels_scalar()->matmul_q8[dt];
}

static const int COLS[] = {32, 64, 96, 128, 160, 224, 288, 576, 800};
static const dtype DTS[] = {DT_Q4_0, DT_Q4_1, DT_Q8_0};
#define NCOLS ((int)(sizeof COLS / sizeof COLS[0]))

Test(q8act, quantize_matches_reference) {
    const kernels *ks[4];
    int nk = q8t_tables(ks);
    uint64_t seed = 11;
    for (int ci = 0; ci < NCOLS; ci++) {
        int cols = COLS[ci], nt = 3, ldx = cols + 5;
        float *x = malloc(sizeof(float) * (size_t)nt * ldx);
        for (int i = 0; i < nt * ldx; i++) x[i] = 3.0f * q8t_unit(&seed);
        for (int j = 0; j < 32; j++) x[ldx + j] = 0.0f; /* a zero block: d = 0, q = 0 */
        q8_act ref;
        q8t_act_new(&ref, nt, cols);
        kernels_scalar()->quantize_act(x, ldx, 0, nt, &ref);
        for (int i = 0; i < 32; i++) cr_assert_eq(ref.q[ref.quads * 128 + i % 16 + (i / 16) * 64], 0);
        for (int k = 0; k < nk; k++) {
            q8_act a;
            q8t_act_new(&a, nt, cols);
            q8t_quant(ks[k])(x, ldx, 0, 1, &a);
            q8t_quant(ks[k])(x, ldx, 1, nt, &a); /* token ranges, as the pool splits them */
            size_t nq = (size_t)nt * a.quads;
            cr_assert(!memcmp(a.q, ref.q, nq * 128), "%s: int8 activations differ, cols %d", ks[k]->name, cols);
            cr_assert(!memcmp(a.d, ref.d, nq * 4 * sizeof(float)), "%s: scales differ, cols %d", ks[k]->name, cols);
            cr_assert(!memcmp(a.s, ref.s, nq * 4 * sizeof(float)), "%s: sums differ, cols %d", ks[k]->name, cols);
            q8t_act_free(&a);
        }
        q8t_act_free(&ref);
        free(x);
    }
}

/* A (rows, cols) tensor of random blocks in the file layout; `unit`: scales 1,
 * Q4_1 mins small integers. */
static uint8_t *q8t_weights(dtype dt, int rows, int cols, int unit, uint64_t *s, tensor *t) {
    int bb = dtype_block_bytes(dt), nb = cols / 32;
    size_t n = (size_t)rows * nb * bb;
    uint8_t *w = malloc(n);
    for (size_t b = 0; b < (size_t)rows * nb; b++) {
        uint8_t *blk = w + b * bb;
        for (int j = 0; j < bb; j++) blk[j] = (uint8_t)q8t_next(s);
        uint16_t d = f32_to_f16(unit ? 1.0f : 0.001f + 0.03f * fabsf(q8t_unit(s)));
        memcpy(blk, &d, 2);
        if (dt == DT_Q4_1) {
            uint16_t m = f32_to_f16(unit ? (float)((int)(q8t_next(s) % 17) - 8) : 0.1f * q8t_unit(s));
            memcpy(blk + 2, &m, 2);
        }
    }
    *t = (tensor){.name = "w", .type = dt, .ndim = 2, .shape = {rows, cols}, .data = w, .nbytes = n};
    return w;
}

/* Activations; `unit`: integers in [-127, 127] with one 127 per block. */
static float *q8t_x(int nt, int cols, int unit, uint64_t *s) {
    float *x = malloc(sizeof(float) * (size_t)nt * cols);
    for (int i = 0; i < nt * cols; i++)
        x[i] = unit ? (float)((int)(q8t_next(s) % 255) - 127) : 2.0f * q8t_unit(s);
    if (unit)
        for (int b = 0; b < nt * cols / 32; b++) x[32 * b + (int)(q8t_next(s) % 32)] = 127.0f;
    return x;
}

/* sum over blocks of |dw dx isum| + |side term|, from the file layout. */
static double q8t_mag(dtype dt, const uint8_t *row, const q8_act *a, int t, int cols) {
    int bb = dtype_block_bytes(dt), hdr = dt == DT_Q4_1 ? 4 : 2;
    double mag = 0.0;
    for (int b = 0; b < cols / 32; b++, row += bb) {
        float dw = f16_to_f32(rd_u16(row)), dx = a->d[t * a->quads * 4 + b], sx = a->s[t * a->quads * 4 + b];
        long isum = 0;
        for (int j = 0; j < 32; j++) {
            int w = dt == DT_Q8_0 ? (int8_t)row[hdr + j] : j < 16 ? row[hdr + j] & 15 : row[hdr + j - 16] >> 4;
            isum += (long)w * a->q[t * a->quads * 128 + (b / 4) * 128 + (j / 16) * 64 + (b % 4) * 16 + j % 16];
        }
        mag += fabs((double)dw * dx * (double)isum);
        if (dt == DT_Q4_1) mag += fabs((double)f16_to_f32(rd_u16(row + 2)) * dx * sx);
        if (dt == DT_Q4_0) mag += fabs(8.0 * dw * dx * sx);
    }
    return mag;
}

static void q8t_check_matmul(int unit) {
    const kernels *ks[4];
    int nk = q8t_tables(ks);
    static const int ROWS[] = {1, 3, 5, 17, 34, 8, 12, 40}; /* groups of 8: partial, whole, both; pairs of groups */
    static const int NTS[] = {1, 2, 3, 4, 7, 9}; /* prefill tiles of 3 and 4 tokens, leftovers */
    uint64_t seed = unit ? 5 : 7;
    for (int di = 0; di < 3; di++)
        for (int ci = 0; ci < NCOLS; ci++) {
            dtype dt = DTS[di];
            int cols = COLS[ci], rows = ROWS[(di + ci) % 8], nt = NTS[(di + ci) % 6], ldy = rows + 3;
            if (rows >= 17) nt = 4 + 3 * (ci % 2) + 2 * (ci % 3 == 2); /* 4, 7 or 9: whole pair tiles and leftovers */
            if (unit && cols > 576) continue; /* keep the integer sums below 2^24 */
            tensor t;
            uint8_t *w = q8t_weights(dt, rows, cols, unit, &seed, &t);
            uint8_t *p = aligned_alloc(64, (t.nbytes + 63) / 64 * 64);
            repack_matrix(&t, p);
            float *x = q8t_x(nt, cols, unit, &seed);
            q8_act a;
            q8t_act_new(&a, nt, cols);
            kernels_scalar()->quantize_act(x, cols, 0, nt, &a);
            size_t ny = (size_t)nt * ldy;
            float *ref = malloc(sizeof(float) * ny), *y = malloc(sizeof(float) * ny), *y2 = malloc(sizeof(float) * ny);
            kernels_scalar()->matmul_q8[dt](p, rows, cols, 0, rows, &a, ref, ldy);
            for (int k = 0; k < nk; k++) {
                const char *nm = ks[k]->name;
                for (size_t i = 0; i < ny; i++) y[i] = y2[i] = -12345.0f;
                q8t_mm(ks[k], dt)(p, rows, cols, 0, rows, &a, y, ldy);
                for (int tt = 0; tt < nt; tt++)
                    for (int r = 0; r < ldy; r++) {
                        float v = y[tt * ldy + r], e = ref[tt * ldy + r];
                        if (r >= rows) {
                            cr_assert_eq(v, -12345.0f, "%s %s: wrote outside the rows", nm, dtype_name(dt));
                            continue;
                        }
                        if (unit) {
                            cr_assert_eq(v, e, "%s %s cols %d row %d token %d: %.9g != reference %.9g (integer data)",
                                         nm, dtype_name(dt), cols, r, tt, v, e);
                        } else {
                            int nb = cols / 32;
                            double tol = (2.0 * nb + 32) * ldexp(1.0, -23) *
                                         q8t_mag(dt, w + (size_t)r * nb * dtype_block_bytes(dt), &a, tt, cols);
                            cr_assert(fabs((double)v - e) <= tol, "%s %s cols %d row %d token %d: %.9g vs %.9g (tol %g)",
                                      nm, dtype_name(dt), cols, r, tt, v, e, tol);
                        }
                    }
                /* rows in two or three calls (splits inside and across groups of
                 * 8, as threads get them), tokens one at a time: the same bits */
                const int splits[][2] = {{rows / 2, rows}, {1, rows}, {5, 9}, {3, 13}};
                for (int si = 0; si < 4; si++) {
                    int s1 = splits[si][0] < rows ? splits[si][0] : rows, s2 = splits[si][1] < rows ? splits[si][1] : rows;
                    for (size_t i = 0; i < ny; i++) y2[i] = -12345.0f;
                    q8t_mm(ks[k], dt)(p, rows, cols, 0, s1, &a, y2, ldy);
                    q8t_mm(ks[k], dt)(p, rows, cols, s1, s2, &a, y2, ldy);
                    q8t_mm(ks[k], dt)(p, rows, cols, s2, rows, &a, y2, ldy);
                    cr_assert(!memcmp(y, y2, sizeof(float) * ny), "%s %s rows %d: split at %d, %d changed the result",
                              nm, dtype_name(dt), rows, s1, s2);
                }
                for (int tt = 0; tt < nt; tt++) {
                    q8_act one = a;
                    one.nt = 1;
                    one.q += (size_t)tt * a.quads * 128;
                    one.d += (size_t)tt * a.quads * 4;
                    one.s += (size_t)tt * a.quads * 4;
                    q8t_mm(ks[k], dt)(p, rows, cols, 0, rows, &one, y2 + (size_t)tt * ldy, ldy);
                }
                cr_assert(!memcmp(y, y2, sizeof(float) * ny), "%s %s: decode differs from prefill", nm, dtype_name(dt));
            }
            free(ref);
            free(y);
            free(y2);
            q8t_act_free(&a);
            free(x);
            free(p);
            free(w);
        }
}

Test(q8act, matmul_integer_sums_exact) { q8t_check_matmul(1); }
Test(q8act, matmul_random_within_tolerance) { q8t_check_matmul(0); }

/* The scalar reference itself against a plain dequantize-and-multiply in f64:
 * the repacked layout and the quad order mean what kernels.h says. */
Test(q8act, reference_matches_dequantized_weights) {
    uint64_t seed = 3;
    for (int di = 0; di < 3; di++) {
        dtype dt = DTS[di];
        int rows = 5, cols = 288;
        tensor t;
        uint8_t *w = q8t_weights(dt, rows, cols, 0, &seed, &t);
        uint8_t *p = aligned_alloc(64, (t.nbytes + 63) / 64 * 64);
        repack_matrix(&t, p);
        float *x = q8t_x(1, cols, 0, &seed), row[288], xd[288], y[5];
        q8_act a;
        q8t_act_new(&a, 1, cols);
        kernels_scalar()->quantize_act(x, cols, 0, 1, &a);
        for (int c = 0; c < cols; c++) {
            int b = c / 32, j = c % 32;
            xd[c] = a.d[b] * a.q[(b / 4) * 128 + (j / 16) * 64 + (b % 4) * 16 + j % 16];
        }
        kernels_scalar()->matmul_q8[dt](p, rows, cols, 0, rows, &a, y, rows);
        for (int r = 0; r < rows; r++) {
            tensor_row_f32(&t, r, row);
            double e = 0.0, mag = 0.0;
            for (int c = 0; c < cols; c++) {
                e += (double)row[c] * xd[c];
                mag += fabs((double)row[c] * xd[c]);
            }
            cr_assert(fabs(y[r] - e) <= 1e-5 * mag + 1e-6, "%s row %d: %.9g vs %.9g", dtype_name(dt), r, y[r], e);
        }
        q8t_act_free(&a);
        free(x);
        free(p);
        free(w);
    }
}

/* Every row of `packed` (a repacked view of `file`) reads back as the file's row, bit for bit. */
static void q8t_expect_same_rows(const tensor *file, const tensor *packed) {
    int rows = (int)file->shape[0], cols = (int)file->shape[1];
    float *a = malloc(sizeof(float) * (size_t)cols), *b = malloc(sizeof(float) * (size_t)cols);
    for (int r = 0; r < rows; r++) {
        tensor_row_f32(file, r, a);
        tensor_row_f32(packed, r, b);
        cr_assert(!memcmp(a, b, sizeof(float) * (size_t)cols), "%s cols %d row %d", dtype_name(file->type), cols, r);
    }
    free(a);
    free(b);
}

/* Embedding rows read from the repacked copy are the file layout's values, bit for bit. */
Test(q8act, packed_rows_equal_file_rows) {
    uint64_t seed = 9;
    for (int di = 0; di < 3; di++)
        for (int ci = 0; ci < NCOLS; ci++) {
            dtype dt = DTS[di];
            int rows = 3, cols = COLS[ci];
            tensor t;
            uint8_t *w = q8t_weights(dt, rows, cols, 0, &seed, &t);
            uint8_t *p = aligned_alloc(64, (t.nbytes + 63) / 64 * 64);
            repack_matrix(&t, p);
            tensor tp = t;
            tp.packed = p;
            q8t_expect_same_rows(&t, &tp);
            free(p);
            free(w);
        }
}

/* The weight arena (repack.c) stores runs of a matrix's rows apart, each packed
 * as a matrix of its own (tensor.parts): rows read back and each run's matmul
 * (rows relative to the run, output shifted to its first row) must give what
 * the whole packed matrix gives, bit for bit. */
Test(q8act, rows_packed_in_parts_equal_whole) {
    static const int CUTS[] = {0, 16, 24, 40}; /* runs of 16, 8 and 16 rows of a 40-row matrix */
    enum { ROWS = 40, NPART = 3, NT = 5 };
    const kernels *k = kernels_select(NULL);
    uint64_t seed = 21;
    for (int di = 0; di < 3; di++)
        for (int ci = 0; ci < NCOLS; ci += 3) {
            dtype dt = DTS[di];
            int cols = COLS[ci], nb = cols / 32, bb = dtype_block_bytes(dt);
            tensor t;
            uint8_t *w = q8t_weights(dt, ROWS, cols, 0, &seed, &t);
            uint8_t *whole = aligned_alloc(64, (t.nbytes + 63) / 64 * 64);
            repack_matrix(&t, whole);
            packed_part parts[NPART];
            for (int i = 0; i < NPART; i++) {
                tensor sub = t;
                sub.shape[0] = CUTS[i + 1] - CUTS[i];
                sub.data = w + (size_t)CUTS[i] * nb * bb;
                sub.nbytes = (size_t)sub.shape[0] * nb * bb;
                uint8_t *p = aligned_alloc(64, (sub.nbytes + 63) / 64 * 64);
                repack_matrix(&sub, p);
                parts[i] = (packed_part){CUTS[i], p};
            }
            tensor tp = t;
            tp.packed = parts[0].data;
            tp.parts = parts;
            tp.nparts = NPART;
            q8t_expect_same_rows(&t, &tp);
            float *x = q8t_x(NT, cols, 0, &seed), *y = malloc(sizeof(float) * NT * ROWS), *y2 = malloc(sizeof(float) * NT * ROWS);
            q8_act act;
            q8t_act_new(&act, NT, cols);
            q8t_quant(k)(x, cols, 0, NT, &act);
            for (int nt = 1; nt <= NT; nt += NT - 1) { /* one token (GEMV) and a prefill tile */
                act.nt = nt;
                q8t_mm(k, dt)(whole, ROWS, cols, 0, ROWS, &act, y, ROWS);
                for (int i = 0; i < NPART; i++)
                    q8t_mm(k, dt)(parts[i].data, CUTS[i + 1] - CUTS[i], cols, 0, CUTS[i + 1] - CUTS[i], &act,
                                  y2 + CUTS[i], ROWS);
                cr_assert(!memcmp(y, y2, sizeof(float) * (size_t)nt * ROWS), "%s cols %d nt %d: parts differ",
                          dtype_name(dt), cols, nt);
            }
            q8t_act_free(&act);
            for (int i = 0; i < NPART; i++) free((void *)parts[i].data);
            free(x), free(y), free(y2), free(whole), free(w);
        }
}
