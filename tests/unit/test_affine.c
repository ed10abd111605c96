/* test_affine.c - MLX affine 4/8-bit: kernels vs the scalar reference and vs a
 * double-precision dequantize-then-dot, thread splits, row dequantization, view
 * assembly errors and config.json "quantization" parsing. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "model/affine.h"
#include "model/config.h"
#include "kernels/affine_kernels.h"
#include "kernels/kernels.h"
#include "base/util.h"

/* ---- random affine matrices ------------------------------------------------------- */

static uint64_t aff_rng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static float aff_uniform(uint64_t *s) { return (float)((aff_rng(s) >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }

typedef struct {
    int bits, group, sdt, rows, cols;
    uint8_t *q, *s, *b;   /* (rows, cols*bits/32) words; (rows, cols/group) params in sdt */
    affine_weights aw;
    size_t row_bytes;
} aff_mat;

static void aff_store(uint8_t *p, int sdt, size_t i, float v) {
    if (sdt == DT_F32) memcpy(p + 4 * i, &v, 4);
    else {
        uint16_t h = sdt == DT_F16 ? f32_to_f16(v) : f32_to_bf16(v);
        memcpy(p + 2 * i, &h, 2);
    }
}

/* Random packed values and random (possibly negative) scales and biases. The
 * buffers are allocated one byte off alignment: the file layout may be unaligned. */
static void aff_make(aff_mat *m, int bits, int group, int sdt, int rows, int cols, uint64_t seed) {
    *m = (aff_mat){.bits = bits, .group = group, .sdt = sdt, .rows = rows, .cols = cols};
    size_t qb = (size_t)rows * cols * bits / 8, ng = (size_t)rows * (cols / group), es = sdt == DT_F32 ? 4 : 2;
    m->q = malloc(qb + 1);
    m->s = malloc(ng * es + 1);
    m->b = malloc(ng * es + 1);
    uint64_t st = seed * 2654435761u + 1;
    for (size_t i = 0; i < qb; i++) m->q[1 + i] = (uint8_t)aff_rng(&st);
    for (size_t i = 0; i < ng; i++) {
        aff_store(m->s + 1, sdt, i, aff_uniform(&st) * 0.1f);
        aff_store(m->b + 1, sdt, i, aff_uniform(&st));
    }
    m->aw = (affine_weights){m->q + 1, m->s + 1, m->b + 1, sdt, group};
    m->row_bytes = (size_t)cols * bits / 8;
}

static void aff_free(aff_mat *m) {
    free(m->q);
    free(m->s);
    free(m->b);
}

static float *aff_x(int n, uint64_t seed) {
    float *x = malloc((size_t)n * sizeof(float));
    uint64_t st = seed + 99;
    for (int i = 0; i < n; i++) x[i] = aff_uniform(&st);
    return x;
}

static matmul_fn aff_fn(const kernels *k, int bits) { return k->matmul[bits == 4 ? DT_AFFINE4 : DT_AFFINE8]; }

/* Weight (r, c) exactly as mlx dequantizes it. */
static float aff_weight(const aff_mat *m, int r, int c) {
    int per = 32 / m->bits, ng = m->cols / m->group;
    uint32_t w = rd_u32((const uint8_t *)m->aw.q + (size_t)r * m->row_bytes + 4 * (size_t)(c / per));
    uint32_t q = (w >> (m->bits * (c % per))) & ((1u << m->bits) - 1u);
    float s = affine_param(m->aw.scales, m->sdt, (size_t)r * ng + c / m->group);
    float b = affine_param(m->aw.biases, m->sdt, (size_t)r * ng + c / m->group);
    float v = (float)q * s;
    return v + b;
}

/* ---- kernels ----------------------------------------------------------------------- */

/* Sizes: rows not a multiple of the 4- or 8-row tiles, token counts around the
 * 4-token tile, groups 32 / 64 / 128, params in F32 / F16 / BF16. */
static const int AFF_ROWS[] = {1, 7, 13, 33};
static const int AFF_NT[] = {1, 2, 3, 5, 9};

/* The scalar reference against a dequantize-then-dot in double. Bound: every y is
 * one chain of cols/16 FMAs per lane plus a 4-level tree, so the f32 error is at
 * most (cols/16 + 4) * 2^-24 * sum |w x| (first-order rounding bound); checked with
 * a factor 1.01 for the second-order terms. */
static void check_scalar_vs_double(int bits, int group, int sdt) {
    int rows = 13, cols = group * 3, nt = 3;
    aff_mat m;
    aff_make(&m, bits, group, sdt, rows, cols, (uint64_t)(bits * 1000 + group + sdt));
    float *x = aff_x(nt * cols, 7), *y = malloc((size_t)nt * rows * sizeof(float));
    aff_fn(kernels_scalar(), bits)(&m.aw, m.row_bytes, cols, 0, rows, x, cols, nt, y, rows);
    for (int t = 0; t < nt; t++)
        for (int r = 0; r < rows; r++) {
            double ref = 0, mag = 0;
            for (int c = 0; c < cols; c++) {
                double p = (double)aff_weight(&m, r, c) * x[t * cols + c];
                ref += p;
                mag += fabs(p);
            }
            double bound = (cols / 16 + 4) * ldexp(1.0, -24) * mag * 1.01;
            cr_assert(fabs(y[t * rows + r] - ref) <= bound, "bits %d group %d %s: y[%d][%d] = %.9g, want %.9g (bound %.3g)",
                      bits, group, dtype_name(sdt), t, r, y[t * rows + r], ref, bound);
        }
    free(x);
    free(y);
    aff_free(&m);
}

Test(affine, scalar_vs_double_dequant) {
    static const int sdts[] = {DT_F32, DT_F16, DT_BF16};
    for (int bits = 4; bits <= 8; bits += 4)
        for (int g = 32; g <= 128; g *= 2)
            for (int s = 0; s < 3; s++) check_scalar_vs_double(bits, g, sdts[s]);
}

/* The ISA kernels give the scalar reference's bits exactly (same dequantization, same
 * 16-lane FMA order, same reduction tree): compared with memcmp, no tolerance. */
static void check_isa_same_bits(const kernels *k) {
    static const int sdts[] = {DT_F32, DT_F16, DT_BF16};
    for (int bits = 4; bits <= 8; bits += 4)
        for (int g = 32; g <= 128; g *= 2)
            for (size_t ri = 0; ri < sizeof AFF_ROWS / sizeof *AFF_ROWS; ri++)
                for (size_t ni = 0; ni < sizeof AFF_NT / sizeof *AFF_NT; ni++) {
                    int rows = AFF_ROWS[ri], nt = AFF_NT[ni], cols = g * (1 + (int)(ri % 3)), sdt = sdts[(ri + ni) % 3];
                    aff_mat m;
                    aff_make(&m, bits, g, sdt, rows, cols, (uint64_t)(ri * 31 + ni * 7 + g + bits));
                    int ldx = cols + 3, ldy = rows + 2; /* strides wider than the data */
                    float *x = aff_x(nt * ldx, ri + ni);
                    float *ya = calloc((size_t)nt * ldy, sizeof(float)), *yb = calloc((size_t)nt * ldy, sizeof(float));
                    aff_fn(kernels_scalar(), bits)(&m.aw, m.row_bytes, cols, 0, rows, x, ldx, nt, ya, ldy);
                    aff_fn(k, bits)(&m.aw, m.row_bytes, cols, 0, rows, x, ldx, nt, yb, ldy);
                    cr_assert(!memcmp(ya, yb, (size_t)nt * ldy * sizeof(float)),
                              "%s affine%d group %d %s rows %d nt %d: differs from scalar", k->name, bits, g,
                              dtype_name(sdt), rows, nt);
                    free(x);
                    free(ya);
                    free(yb);
                    aff_free(&m);
                }
}

Test(affine, avx2_same_bits_as_scalar) {
    if (!kernels_avx2()) cr_skip_test("no AVX2 on this CPU");
    check_isa_same_bits(kernels_avx2());
}

Test(affine, avx512_same_bits_as_scalar) {
    if (!kernels_avx512()) cr_skip_test("no AVX-512 on this CPU");
    check_isa_same_bits(kernels_avx512());
}

Test(affine, every_table_has_affine) {
    const kernels *tables[] = {kernels_scalar(), kernels_avx2(), kernels_avx512()};
    for (int i = 0; i < 3; i++)
        if (tables[i]) {
            cr_assert_not_null(tables[i]->matmul[DT_AFFINE4], "%s", tables[i]->name);
            cr_assert_not_null(tables[i]->matmul[DT_AFFINE8], "%s", tables[i]->name);
        }
}

/* Thread splits: rows computed as [0, k) and [k, rows) by separate calls (as two
 * threads would) give the same bits as one call, for every split point. */
Test(affine, row_split_is_deterministic) {
    const kernels *ks[] = {kernels_scalar(), kernels_avx2(), kernels_avx512()};
    for (int i = 0; i < 3; i++) {
        if (!ks[i]) continue;
        for (int bits = 4; bits <= 8; bits += 4) {
            int rows = 21, cols = 192, nt = 5;
            aff_mat m;
            aff_make(&m, bits, 64, DT_BF16, rows, cols, 5 + bits);
            float *x = aff_x(nt * cols, 3);
            float *y1 = calloc((size_t)nt * rows, sizeof(float)), *y2 = calloc((size_t)nt * rows, sizeof(float));
            aff_fn(ks[i], bits)(&m.aw, m.row_bytes, cols, 0, rows, x, cols, nt, y1, rows);
            for (int k = 1; k < rows; k++) {
                memset(y2, 0, (size_t)nt * rows * sizeof(float));
                aff_fn(ks[i], bits)(&m.aw, m.row_bytes, cols, 0, k, x, cols, nt, y2, rows);
                aff_fn(ks[i], bits)(&m.aw, m.row_bytes, cols, k, rows, x, cols, nt, y2, rows);
                cr_assert(!memcmp(y1, y2, (size_t)nt * rows * sizeof(float)), "%s affine%d split at %d", ks[i]->name,
                          bits, k);
            }
            /* decode (nt = 1) of each token alone equals its row of the prefill */
            for (int t = 0; t < nt; t++) {
                float *y3 = calloc((size_t)rows, sizeof(float));
                aff_fn(ks[i], bits)(&m.aw, m.row_bytes, cols, 0, rows, x + (size_t)t * cols, cols, 1, y3, rows);
                cr_assert(!memcmp(y3, y1 + (size_t)t * rows, (size_t)rows * sizeof(float)), "%s affine%d token %d",
                          ks[i]->name, bits, t);
                free(y3);
            }
            free(x);
            free(y1);
            free(y2);
            aff_free(&m);
        }
    }
}

/* ---- views and rows ---------------------------------------------------------------- */

static tensor aff_tensor(const char *name, dtype t, int64_t d0, int64_t d1, const void *data) {
    tensor x = {.name = name, .type = t, .ndim = 2, .shape = {d0, d1}, .data = data};
    x.nbytes = (size_t)(d0 * d1) * (t == DT_F32 || t == DT_U32 ? 4 : 2);
    return x;
}

Test(affine, assemble_and_dequantize_rows) {
    for (int bits = 4; bits <= 8; bits += 4) {
        aff_mat m;
        aff_make(&m, bits, 32, DT_F16, 5, 96, 11);
        tensor w = aff_tensor("l.weight", DT_U32, 5, 96 * bits / 32, m.aw.q);
        tensor s = aff_tensor("l.scales", DT_F16, 5, 3, m.aw.scales);
        tensor b = aff_tensor("l.biases", DT_F16, 5, 3, m.aw.biases);
        affine_store *st = NULL;
        const tensor *t;
        char err[ERR_LEN];
        cr_assert_eq(affine_assemble(&st, &w, &s, &b, 5, 96, &t, "f", err), 0, "%s", err);
        cr_assert_eq(t->type, bits == 4 ? DT_AFFINE4 : DT_AFFINE8);
        cr_assert_eq(((const affine_weights *)t->data)->group, 32);
        float row[96];
        for (int r = 0; r < 5; r++) {
            affine_row_f32(t, r, row);
            for (int c = 0; c < 96; c++) cr_assert_eq(row[c], aff_weight(&m, r, c), "row %d col %d", r, c);
        }
        affine_store_free(st);
        aff_free(&m);
    }
}

Test(affine, assemble_rejects_bad_parts) {
    uint8_t buf[4096] = {0};
    tensor w = aff_tensor("l.weight", DT_U32, 4, 12, buf); /* 96 inputs at 4 bits */
    tensor s = aff_tensor("l.scales", DT_BF16, 4, 3, buf), b = aff_tensor("l.biases", DT_BF16, 4, 3, buf);
    affine_store *st = NULL;
    const tensor *t;
    char err[ERR_LEN];
    tensor w3 = aff_tensor("l.weight", DT_U32, 4, 9, buf); /* 3 bits: unsupported */
    cr_assert_eq(affine_assemble(&st, &w3, &s, &b, 4, 96, &t, "f", err), -1);
    cr_assert(strstr(err, "l.weight") && strstr(err, "4- or 8-bit"), "%s", err);
    tensor s48 = aff_tensor("l.scales", DT_BF16, 4, 2, buf); /* group 48 */
    cr_assert_eq(affine_assemble(&st, &w, &s48, &b, 4, 96, &t, "f", err), -1);
    cr_assert(strstr(err, "group size of 48"), "%s", err);
    tensor bf = aff_tensor("l.biases", DT_F16, 4, 3, buf); /* dtype differs from the scales */
    cr_assert_eq(affine_assemble(&st, &w, &s, &bf, 4, 96, &t, "f", err), -1);
    cr_assert(strstr(err, "l.biases"), "%s", err);
    cr_assert_eq(affine_assemble(&st, &w, NULL, &b, 4, 96, &t, "f", err), -1);
    cr_assert(strstr(err, "scales are missing"), "%s", err);
    cr_assert_eq(affine_assemble(&st, &w, &s, &b, 5, 96, &t, "f", err), -1); /* rows differ */
    cr_assert_eq(affine_assemble(&st, &w, &s, &b, 4, 96, &t, "f", err), 0, "%s", err);
    affine_store_free(st);
}

/* ---- config.json ------------------------------------------------------------------- */

static int aff_config(const char *quant, model_config *c, char *err) {
    char path[] = "/tmp/llmgen_affine_cfgXXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
               "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 256%s}", quant);
    fclose(f);
    int rc = config_from_json(path, c, err);
    unlink(path);
    return rc;
}

Test(affine, config_quantization) {
    model_config c;
    char err[ERR_LEN];
    cr_assert_eq(aff_config("", &c, err), 0, "%s", err);
    cr_assert_eq(c.quant_bits, 0);
    cr_assert_eq(aff_config(", \"quantization\": {\"group_size\": 64, \"bits\": 4, \"mode\": \"affine\", "
                            "\"model.layers.0.mlp.down_proj\": {\"group_size\": 32, \"bits\": 8}, "
                            "\"model.layers.0.self_attn.v_proj\": false}", &c, err), 0, "%s", err);
    cr_assert_eq(c.quant_bits, 4);
    cr_assert_eq(c.quant_group, 64);
    cr_assert_eq(aff_config(", \"quantization_config\": {\"group_size\": 128, \"bits\": 8}", &c, err), 0, "%s", err);
    cr_assert_eq(c.quant_bits, 8);
    cr_assert_eq(c.quant_group, 128);
    cr_assert_eq(aff_config(", \"quantization\": {\"group_size\": 64, \"bits\": 3}", &c, err), -1);
    cr_assert(strstr(err, "quantization.bits 3"), "%s", err);
    cr_assert_eq(aff_config(", \"quantization\": {\"group_size\": 16, \"bits\": 4}", &c, err), -1);
    cr_assert(strstr(err, "group_size 16"), "%s", err);
    cr_assert_eq(aff_config(", \"quantization\": {\"group_size\": 32, \"bits\": 4, \"mode\": \"mxfp4\"}", &c, err), -1);
    cr_assert(strstr(err, "mxfp4"), "%s", err);
    cr_assert_eq(aff_config(", \"quantization\": {\"group_size\": 64, \"bits\": 4, \"x.y\": {\"group_size\": 64, "
                            "\"bits\": 2}}", &c, err), -1);
    cr_assert(strstr(err, "quantization[x.y].bits 2"), "%s", err);
    cr_assert_eq(aff_config(", \"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4}", &c, err), -1);
    cr_assert(strstr(err, "gptq"), "%s", err);
}
