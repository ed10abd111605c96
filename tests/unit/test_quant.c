/* test_quant.c - the quantization-type table (src/quant.[ch]) against gguf-py.
 *
 * tests/refs/quant/<TYPE>.bin holds random blocks of each GGUF type and the f32
 * values gguf-py's `gguf.quants.dequantize` gives for them (written by
 * tests/gen/gen_quant_refs.py, `make quant-refs`). The reference dequantizer
 * must give those values bit for bit (HF transformers computes with exactly
 * them), and every exact-mode kernel table must give, on a matrix of those
 * blocks, what a double-precision dot with those values gives, within the
 * kernels' stated tolerance. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "quant/quant.h"
#include "model/repack.h"
#include "base/util.h"

typedef struct {
    uint32_t ggml, nblocks, elems, bytes;
    uint8_t *blocks;
    float *values;
} qref;

static int qref_load(const char *name, qref *r) {
    char path[256];
    snprintf(path, sizeof path, "tests/refs/quant/%s.bin", name);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char magic[8];
    uint32_t h[4];
    int ok = fread(magic, 1, 8, f) == 8 && !memcmp(magic, "LQREF1\0\0", 8) && fread(h, 4, 4, f) == 4;
    if (ok) {
        r->ggml = h[0], r->nblocks = h[1], r->elems = h[2], r->bytes = h[3];
        r->blocks = malloc((size_t)r->nblocks * r->bytes);
        r->values = malloc((size_t)r->nblocks * r->elems * sizeof(float));
        ok = r->blocks && r->values && fread(r->blocks, r->bytes, r->nblocks, f) == r->nblocks &&
             fread(r->values, sizeof(float) * r->elems, r->nblocks, f) == r->nblocks;
    }
    fclose(f);
    return ok ? 0 : -1;
}

static const char *const GGUF_QUANTS[] = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K",
                                          "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4"};
#define NQ (int)(sizeof GGUF_QUANTS / sizeof GGUF_QUANTS[0])

/* The table's facts agree with the reference file's (type id, block size and bytes). */
Test(quant, table_matches_gguf_py) {
    for (int i = 0; i < NQ; i++) {
        qref r;
        cr_assert_eq(qref_load(GGUF_QUANTS[i], &r), 0, "cannot read tests/refs/quant/%s.bin", GGUF_QUANTS[i]);
        dtype dt;
        cr_assert_eq(dtype_from_ggml(r.ggml, &dt), 0, "%s: ggml type %u not in the table", GGUF_QUANTS[i], r.ggml);
        cr_expect_str_eq(dtype_name(dt), GGUF_QUANTS[i]);
        cr_expect_eq(dtype_block_elems(dt), (int)r.elems, "%s block elems", GGUF_QUANTS[i]);
        cr_expect_eq(dtype_block_bytes(dt), (int)r.bytes, "%s block bytes", GGUF_QUANTS[i]);
        cr_expect_not_null(dtype_info(dt)->dequant32, "%s has no dequantizer", GGUF_QUANTS[i]);
        free(r.blocks);
        free(r.values);
    }
}

/* Bit for bit gguf-py's values, for every block (the blocks form one row). */
Test(quant, dequant_equals_gguf_py_bits) {
    for (int i = 0; i < NQ; i++) {
        qref r;
        cr_assert_eq(qref_load(GGUF_QUANTS[i], &r), 0);
        dtype dt;
        cr_assert_eq(dtype_from_ggml(r.ggml, &dt), 0);
        int64_t n = (int64_t)r.nblocks * r.elems;
        float *out = malloc(sizeof(float) * (size_t)n);
        cr_assert_not_null(out);
        dtype_dequant_row(dt, r.blocks, n, 0, out);
        for (int64_t c = 0; c < n; c++)
            cr_assert(!memcmp(&out[c], &r.values[c], 4), "%s value %lld: %.9g, gguf-py %.9g", GGUF_QUANTS[i],
                      (long long)c, out[c], r.values[c]);
        free(out);
        free(r.blocks);
        free(r.values);
    }
}

/* Every table's exact-mode matmul on rows built from the reference blocks (row r
 * = the blocks rotated by r), 1 and 3 tokens, against a double sum of gguf-py
 * value x activation; tolerance 2 (n + 8) 2^-24 sum|w x| (kernels_selftest.c's,
 * which argues it), plus the same bits for the row split [0, 2) + [2, rows). */
Test(quant, matmul_every_table_against_gguf_py_values) {
    const kernels *tables[] = {kernels_scalar(), kernels_avx2(), kernels_avx512(), kernels_neon()};
    for (int i = 0; i < NQ; i++) {
        qref r;
        cr_assert_eq(qref_load(GGUF_QUANTS[i], &r), 0);
        dtype dt;
        cr_assert_eq(dtype_from_ggml(r.ggml, &dt), 0);
        int rows = (int)r.nblocks, cols = (int)(r.nblocks * r.elems), nt = 3;
        size_t rb = dtype_row_bytes(dt, cols);
        uint8_t *w = malloc(rb * rows);
        float *wv = malloc(sizeof(float) * (size_t)rows * cols), *x = malloc(sizeof(float) * (size_t)nt * cols);
        float *y = malloc(sizeof(float) * (size_t)nt * rows), *y2 = malloc(sizeof(float) * (size_t)nt * rows);
        cr_assert(w && wv && x && y && y2);
        for (int row = 0; row < rows; row++)
            for (int b = 0; b < rows; b++) {
                int src = (b + row) % rows;
                memcpy(w + row * rb + (size_t)b * r.bytes, r.blocks + (size_t)src * r.bytes, r.bytes);
                memcpy(wv + (size_t)row * cols + (size_t)b * r.elems, r.values + (size_t)src * r.elems,
                       sizeof(float) * r.elems);
            }
        uint64_t s = 7;
        for (int c = 0; c < nt * cols; c++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[c] = (float)((double)(s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
        }
        for (int k = 0; k < 4; k++) {
            if (!tables[k]) continue;
            matmul_fn f = tables[k]->matmul[dt];
            cr_assert_not_null(f, "%s has no %s matmul", tables[k]->name, GGUF_QUANTS[i]);
            f(w, rb, cols, 0, rows, x, cols, nt, y, rows);
            f(w, rb, cols, 0, 2, x, cols, nt, y2, rows);
            f(w, rb, cols, 2, rows, x, cols, nt, y2, rows);
            for (int t = 0; t < nt; t++)
                for (int row = 0; row < rows; row++) {
                    double ref = 0, mag = 0;
                    for (int c = 0; c < cols; c++) {
                        double p = (double)wv[(size_t)row * cols + c] * x[(size_t)t * cols + c];
                        ref += p;
                        mag += fabs(p);
                    }
                    float got = y[t * rows + row];
                    double tol = 2.0 * (cols + 8) * ldexp(1.0, -24) * mag + 1e-30;
                    cr_expect(fabs(got - ref) <= tol, "%s %s t=%d row=%d: %.9g, gguf-py values give %.9g (tol %.3g)",
                              tables[k]->name, GGUF_QUANTS[i], t, row, got, ref, tol);
                    cr_expect(!memcmp(&got, &y2[t * rows + row], 4), "%s %s: row split changes row %d",
                              tables[k]->name, GGUF_QUANTS[i], row);
                }
        }
        free(w), free(wv), free(x), free(y), free(y2), free(r.blocks), free(r.values);
    }
}

/* An unknown or unsupported GGUF type id is not in the table; every name in the
 * supported list is a table row. */
Test(quant, unsupported_ids_and_supported_list) {
    dtype dt;
    cr_expect_neq(dtype_from_ggml(16, &dt), 0, "IQ2_XXS must stay unsupported");
    cr_expect_neq(dtype_from_ggml(15, &dt), 0, "Q8_K is not a weight type in files");
    cr_expect_neq(dtype_from_ggml(9999, &dt), 0);
    cr_expect_str_eq(ggml_type_name(16), "IQ2_XXS");
    char list[160];
    dtype_gguf_supported(list, sizeof list);
    cr_expect_str_eq(list, "F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS MXFP4");
}

/* Packs `rows` rows of `cols` values from r's blocks (data: file_bytes) as dt,
 * checks the packed size (== file_bytes when size_bound is 0, else <= size_bound)
 * and that every value read back is gguf-py's bit for bit. */
static void check_packed(const char *name, const qref *r, dtype dt, int rows, int cols, size_t file_bytes,
                         size_t size_bound) {
    tensor t = {.name = "packed", .type = dt, .ndim = 2, .shape = {rows, cols}, .data = r->blocks,
                .nbytes = file_bytes};
    size_t n = q8w_matrix_bytes(dt, rows, cols / 32);
    if (size_bound) cr_expect_leq(n, size_bound, "%s packed %zu bytes, bound %zu", name, n, size_bound);
    else cr_expect_eq(n, file_bytes, "%s packed %zu bytes, the file %zu", name, n, file_bytes);
    uint8_t *out = malloc(n);
    float *row = malloc(sizeof(float) * (size_t)cols);
    cr_assert(out && row);
    repack_matrix(&t, out);
    tensor p = t;
    p.packed = out, p.nbytes = n;
    for (int i = 0; i < rows; i++) {
        repack_row_f32(&p, i, row);
        for (int c = 0; c < cols; c++)
            cr_assert(!memcmp(&row[c], &r->values[(size_t)i * cols + c], 4), "%s rows %d row %d col %d: %.9g, gguf-py %.9g",
                      name, rows, i, c, row[c], r->values[(size_t)i * cols + c]);
    }
    free(out), free(row);
}

/* Fast mode packs Q4_K and Q6_K into their own layouts (kernels.h, q4k_packed.c,
 * q6k_packed.c): lossless, so read back every value is gguf-py's bit for bit (Q4_K's
 * scale d * sc and min dmin * m formed in f32 as gguf-py forms them). The packed size
 * is the file's plus the d table's padding (whole 64-byte lines per group of 8 rows)
 * and, for Q4_K, 4 bytes per row and super-block (148 for the file's 144: the 6-bit
 * scales and mins as bytes). Rows 1..9 of one super-block take every partial group
 * size (the last group has 1 to 8 rows). */
static void check_k_packed(const char *name, dtype dt, size_t extra_per_row) {
    qref r;
    cr_assert_eq(qref_load(name, &r), 0);
    cr_assert(r.nblocks >= 1 && r.elems == QK_K);
    for (int rows = 1; rows <= 9 && rows <= (int)r.nblocks; rows++)
        check_packed(name, &r, dt, rows, QK_K, (size_t)rows * r.bytes,
                     (size_t)rows * (r.bytes + extra_per_row) + (size_t)(rows + 7) / 8 * 64);
    free(r.blocks), free(r.values);
}

Test(quant, q4_k_packed_is_lossless) { check_k_packed("Q4_K", DT_Q4_K, 4); }
Test(quant, q6_k_packed_is_lossless) { check_k_packed("Q6_K", DT_Q6_K, 0); }

/* Fast mode packs Q5_0 and Q5_1 into their own layouts (kernels.h, q5_packed.c):
 * lossless and exactly the file's size, so read back every value is gguf-py's bit
 * for bit. The reference blocks are cut into every (rows, cols) their count allows:
 * partial groups of 8 rows and partial quads of 4 blocks. */
static void check_q5_packed(const char *name, dtype dt) {
    qref r;
    cr_assert_eq(qref_load(name, &r), 0);
    cr_assert(r.nblocks >= 2 && r.elems == 32);
    for (int rows = 1; rows <= (int)r.nblocks; rows++)
        if (r.nblocks % rows == 0)
            check_packed(name, &r, dt, rows, (int)(r.nblocks / rows * 32), (size_t)r.nblocks * r.bytes, 0);
    free(r.blocks), free(r.values);
}

Test(quant, q5_0_packed_is_lossless) { check_q5_packed("Q5_0", DT_Q5_0); }
Test(quant, q5_1_packed_is_lossless) { check_q5_packed("Q5_1", DT_Q5_1); }
