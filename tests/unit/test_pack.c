/* test_pack.c - the kernel tables' packers (kernels.pack_rows: pack_avx2.c) write the bytes
 * of the type table's portable packers (q4k_packed.c, q6k_packed.c, the reference), on
 * random blocks with finite scales: whole matrices of row counts with and without a
 * partial last group, and row ranges that start and end inside groups (each range
 * packed into a buffer of the same fill, so bytes outside it must stay untouched alike). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "quant/quant.h"
#include "base/util.h"

static uint64_t next(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* A finite f16 of magnitude about 2^-14 .. 2^1, either sign. */
static uint16_t rnd_f16(uint64_t *s) {
    uint64_t x = next(s);
    return (uint16_t)((x & 0x8000) | (uint16_t)(1 + x % 16) << 10 | (x >> 16 & 0x3ff));
}

/* rows x cols of random dt blocks, every f16 scale finite. */
static uint8_t *random_matrix(dtype dt, int rows, int cols, uint64_t *s) {
    size_t rb = dtype_row_bytes(dt, cols), n = (size_t)rows * rb;
    uint8_t *m = malloc(n);
    cr_assert(m);
    for (size_t i = 0; i < n; i++) m[i] = (uint8_t)(next(s) >> 32);
    for (size_t b = 0; b < n / sizeof(block_q4_K) && dt == DT_Q4_K; b++) {
        block_q4_K *k = (block_q4_K *)m + b;
        k->d = rnd_f16(s), k->dmin = rnd_f16(s);
    }
    for (size_t b = 0; b < n / sizeof(block_q6_K) && dt == DT_Q6_K; b++) ((block_q6_K *)m + b)->d = rnd_f16(s);
    return m;
}

/* Rows [r0, r1) packed by the table's packer and by the reference into buffers of one fill;
 * the table's output at a 64-byte boundary (as the arena: aligned stores) and 16 bytes past one. */
static void check_range(const char *isa, pack_rows_fn fast, dtype dt, const uint8_t *file, int rows, int cols,
                        int r0, int r1) {
    size_t n = q8w_matrix_bytes(dt, rows, cols / 32);
    uint8_t *a = malloc(n), *buf = aligned_alloc(64, (n + 16 + 63) / 64 * 64);
    cr_assert(a && buf);
    memset(a, 0xa5, n);
    DTYPE_TRAITS[dt].pk.pack_rows(dt, file, rows, cols, r0, r1, a);
    for (int off = 0; off <= 16; off += 16) {
        uint8_t *b = buf + off;
        memset(b, 0xa5, n);
        fast(dt, file, rows, cols, r0, r1, b);
        size_t i = 0;
        while (i < n && a[i] == b[i]) i++;
        cr_assert_eq(i, n, "%s %s rows %d cols %d range [%d, %d), output at 64k+%d: byte %zu of %zu is %u, the reference's %u",
                     isa, dtype_name(dt), rows, cols, r0, r1, off, i, n, i < n ? b[i] : 0, i < n ? a[i] : 0);
    }
    free(a), free(buf);
}

static void check_packer(const char *isa, const kernels *k, dtype dt) {
    if (!k) cr_skip_test("%s kernels not available on this CPU / build", isa);
    pack_rows_fn fast = k->pack_rows[dt];
    cr_assert(fast, "the %s table has no %s packer", isa, dtype_name(dt));
    uint64_t s = 0x9e3779b97f4a7c15ull ^ (uint64_t)dt;
    static const int row_counts[] = {1, 7, 8, 9, 16, 23, 40};
    static const int col_counts[] = {256, 512, 768, 2048};
    for (size_t ci = 0; ci < sizeof col_counts / sizeof *col_counts; ci++)
        for (size_t ri = 0; ri < sizeof row_counts / sizeof *row_counts; ri++) {
            int rows = row_counts[ri], cols = col_counts[ci];
            uint8_t *file = random_matrix(dt, rows, cols, &s);
            check_range(isa, fast, dt, file, rows, cols, 0, rows);
            static const int starts[] = {0, 1, 5, 8, 11, 16};
            for (size_t si = 0; si < sizeof starts / sizeof *starts; si++) {
                int r0 = starts[si];
                const int ends[] = {r0 + 1, r0 + 3, r0 + 8, 16, 24, rows};
                for (size_t ei = 0; ei < sizeof ends / sizeof *ends; ei++)
                    if (r0 < ends[ei] && ends[ei] <= rows) check_range(isa, fast, dt, file, rows, cols, r0, ends[ei]);
            }
            free(file);
        }
}

#if defined(__x86_64__)
Test(pack_avx2, q4_k) { check_packer("avx2", kernels_avx2(), DT_Q4_K); }
Test(pack_avx2, q6_k) { check_packer("avx2", kernels_avx2(), DT_Q6_K); }
Test(pack_avx512, q4_k) { check_packer("avx512", kernels_avx512(), DT_Q4_K); }
Test(pack_avx512, q6_k) { check_packer("avx512", kernels_avx512(), DT_Q6_K); }
#endif

/* The portable tables keep the type table's packers (no entry). */
Test(pack_scalar, no_entry) {
    cr_expect_null(kernels_scalar()->pack_rows[DT_Q4_K]);
    cr_expect_null(kernels_scalar()->pack_rows[DT_Q6_K]);
}
