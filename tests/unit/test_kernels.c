/* test_kernels.c - every kernel of every ISA table available here against the
 * scalar reference (src/kernels/scalar.c), plus the dispatch rules.
 *
 * The checks themselves (random data with fixed seeds, sizes that are not
 * multiples of the vector widths or tiles, nt in {1, 2, 3, 5, 17}, the
 * bit-for-bit row-split, decode-vs-prefill, quantized-vs-dequantized and
 * cross-ISA rules, the tolerance and its justification) live in tests/kernels_selftest.c, which also runs stand-alone
 * under qemu for NEON; this file includes it so both use the same definitions. */
#include <criterion/criterion.h>

#define KERNELS_SELFTEST_NO_MAIN
#include "../kernels_selftest.c"

static const kernels *table_named(const char *isa) {
    if (!strcmp(isa, "avx2")) return kernels_avx2();
    if (!strcmp(isa, "avx512")) return kernels_avx512();
    return kernels_neon();
}

static void check_table_dtype(const char *isa, dtype dt) {
    const kernels *k = table_named(isa);
    if (!k) cr_skip_test("%s kernels not available on this CPU / build", isa);
    char msg[512] = "";
    cr_assert_eq(st_check_dtype(k, dt, msg, sizeof msg), 0, "%s", msg);
}

static void check_table_vectors(const char *isa) {
    const kernels *k = table_named(isa);
    if (!k) cr_skip_test("%s kernels not available on this CPU / build", isa);
    char msg[512] = "";
    cr_assert_eq(st_check_vectors(k, msg, sizeof msg), 0, "%s", msg);
}

static void check_table_inplace(const char *isa) {
    const kernels *k = !strcmp(isa, "scalar") ? kernels_scalar() : table_named(isa);
    if (!k) cr_skip_test("%s kernels not available on this CPU / build", isa);
    char msg[512] = "";
    for (int d = 0; d < DT_COUNT; d++)
        if (st_own_int8((dtype)d)) cr_assert_eq(st_check_inplace(k, (dtype)d, msg, sizeof msg), 0, "%s", msg);
}

static void check_table_attn(const char *isa) {
    const kernels *k = table_named(isa);
    if (!k) cr_skip_test("%s kernels not available on this CPU / build", isa);
    char msg[512] = "";
    cr_assert_eq(st_check_attn(k, msg, sizeof msg), 0, "%s", msg);
}

#define ISA_TESTS(ISA)                                                          \
    Test(kernels_##ISA, f32) { check_table_dtype(#ISA, DT_F32); }               \
    Test(kernels_##ISA, f16) { check_table_dtype(#ISA, DT_F16); }               \
    Test(kernels_##ISA, bf16) { check_table_dtype(#ISA, DT_BF16); }             \
    Test(kernels_##ISA, q8_0) { check_table_dtype(#ISA, DT_Q8_0); }             \
    Test(kernels_##ISA, q4_0) { check_table_dtype(#ISA, DT_Q4_0); }             \
    Test(kernels_##ISA, q4_1) { check_table_dtype(#ISA, DT_Q4_1); }             \
    Test(kernels_##ISA, q5_0) { check_table_dtype(#ISA, DT_Q5_0); }             \
    Test(kernels_##ISA, q5_1) { check_table_dtype(#ISA, DT_Q5_1); }             \
    Test(kernels_##ISA, q2_k) { check_table_dtype(#ISA, DT_Q2_K); }             \
    Test(kernels_##ISA, q3_k) { check_table_dtype(#ISA, DT_Q3_K); }             \
    Test(kernels_##ISA, q4_k) { check_table_dtype(#ISA, DT_Q4_K); }             \
    Test(kernels_##ISA, q5_k) { check_table_dtype(#ISA, DT_Q5_K); }             \
    Test(kernels_##ISA, q6_k) { check_table_dtype(#ISA, DT_Q6_K); }             \
    Test(kernels_##ISA, iq4_nl) { check_table_dtype(#ISA, DT_IQ4_NL); }         \
    Test(kernels_##ISA, iq4_xs) { check_table_dtype(#ISA, DT_IQ4_XS); }         \
    Test(kernels_##ISA, mxfp4) { check_table_dtype(#ISA, DT_MXFP4); }           \
    Test(kernels_##ISA, dot_axpy) { check_table_vectors(#ISA); }                \
    Test(kernels_##ISA, int8_in_place) { check_table_inplace(#ISA); }           \
    Test(kernels_##ISA, attention) { check_table_attn(#ISA); }

ISA_TESTS(avx2)
ISA_TESTS(avx512)
ISA_TESTS(neon)

/* The scalar in-place int8 reference against dequantized weights x int8 activations. */
Test(kernels_scalar, int8_in_place) { check_table_inplace("scalar"); }

#if defined(__x86_64__)
const kernels *kernels_avx512_table(int level);
/* The AVX-512 table of CPUs without VNNI (its in-place entries are inplace_avx2.c's). */
Test(kernels_avx512, int8_in_place_without_vnni) {
    if (!kernels_avx512()) cr_skip_test("avx512 kernels not available on this CPU / build");
    char msg[512] = "";
    for (int d = 0; d < DT_COUNT; d++)
        if (st_own_int8((dtype)d))
            cr_assert_eq(st_check_inplace(kernels_avx512_table(0), (dtype)d, msg, sizeof msg), 0, "%s", msg);
}
#endif

/* The scalar table checked against itself exercises the harness (strides, untouched
 * cells, row splits) on a machine without an ISA table; elsewhere each ISA test above runs
 * the same harness with the scalar table as its reference. */
Test(kernels_scalar, harness_on_reference) {
    if (kernels_avx2() || kernels_avx512() || kernels_neon())
        cr_skip_test("the ISA tests run the harness with the scalar table on this machine");
    char msg[512] = "";
    for (int d = 0; d < DT_COUNT; d++)
        if (st_matmul_type((dtype)d)) cr_assert_eq(st_check_dtype(kernels_scalar(), (dtype)d, msg, sizeof msg), 0, "%s", msg);
}

/* All ISA tables here give the same bits (they share one 16-lane order); with
 * only one table available this compares it with itself. */
Test(kernels_cross_isa, same_bits) {
    const kernels *tables[] = {kernels_avx2(), kernels_avx512(), kernels_neon()};
    const kernels *first = NULL;
    char msg[512] = "";
    for (int i = 0; i < ST_COUNT(tables); i++) {
        if (!tables[i]) continue;
        if (!first) first = tables[i];
        cr_assert_eq(st_check_same_bits(first, tables[i], msg, sizeof msg), 0, "%s", msg);
    }
    if (!first) cr_skip_test("no ISA kernel table on this CPU / build");
}

/* Same inputs, same bits, run after run (catches reads of uninitialised memory). */
Test(kernels_cross_isa, repeatable) {
    const kernels *k = kernels_select(NULL);
    cr_assert_eq(st_table_hash(k), st_table_hash(k));
    cr_assert_neq(st_table_hash(k), 0);
}

Test(kernels_dispatch, select_rules) {
    cr_assert_eq(kernels_select("scalar"), kernels_scalar());
    cr_assert_null(kernels_select("no-such-isa"));
    cr_assert_eq(kernels_select("avx2"), kernels_avx2());
    cr_assert_eq(kernels_select("avx512"), kernels_avx512());
    cr_assert_eq(kernels_select("neon"), kernels_neon());
    /* Auto picks the widest available table, scalar only when there is none. */
    const kernels *best = kernels_avx512() ? kernels_avx512()
                        : kernels_avx2()   ? kernels_avx2()
                        : kernels_neon()   ? kernels_neon()
                                           : kernels_scalar();
    cr_assert_eq(kernels_select(NULL), best);
}

Test(kernels_dispatch, every_table_is_complete) {
    const kernels *tables[] = {kernels_scalar(), kernels_avx2(), kernels_avx512(), kernels_neon()};
    for (int i = 0; i < ST_COUNT(tables); i++) {
        if (!tables[i]) continue;
        for (int d = 0; d < DT_COUNT; d++)
            if (st_matmul_type((dtype)d))
                cr_assert_not_null(tables[i]->matmul[d], "%s has no %s matmul", tables[i]->name, dtype_name((dtype)d));
        /* fast mode packs a type with a layout of its own only where the table reads that layout (plan.c) */
        for (int d = 0; d < DT_COUNT; d++)
            if (st_packed((dtype)d))
                cr_assert_not_null(tables[i]->matmul_q8[d], "%s has no packed %s int8 matmul", tables[i]->name,
                                   dtype_name((dtype)d));
        cr_assert_not_null(tables[i]->dot);
        cr_assert_not_null(tables[i]->axpy);
        /* callers use these without a scalar fallback */
        cr_assert_not_null(tables[i]->att_scores[DT_F32]);
        cr_assert_not_null(tables[i]->att_values[DT_F32]);
        cr_assert_not_null(tables[i]->att_scores[DT_BF16]);
        cr_assert_not_null(tables[i]->att_values[DT_BF16]);
        cr_assert_not_null(tables[i]->softmax_fast);
        cr_assert_not_null(tables[i]->swiglu_fast);
        cr_assert_not_null(tables[i]->geglu_fast);
    }
}
