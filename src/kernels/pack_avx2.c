/* pack_avx2.c - GGUF Q4_K and Q6_K rewritten into their packed layouts (kernels.h) with
 * AVX2: the bytes the portable packers (q4k_packed.c, q6k_packed.c) write, a whole
 * group of 8 rows and one super-block at a time. Each row's nibbles come out of one
 * 32-byte load per two blocks (two shifts and masks put the file's low / high nibble
 * planes in the packed byte order), a 4x4 dword transpose per 128-bit lane puts four
 * rows in the kernels' lane order, and every payload vector is written as two 32-byte
 * stores; scales and the d table are transposed the same way, 16 bytes at a time.
 * Rows of a partial group (the matrix's last group, or a range starting or ending
 * inside a group) go to the portable packer. */
#include "pack_kernels.h"

#include "quant/quant.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define AI static inline __attribute__((always_inline))

/* Per 128-bit lane, dword v of n[ii] to dword ii of o[v] (a 4x4 transpose). */
AI void tr4x4(const __m256i n[4], __m256i o[4]) {
    __m256i t0 = _mm256_unpacklo_epi32(n[0], n[1]), t1 = _mm256_unpackhi_epi32(n[0], n[1]);
    __m256i t2 = _mm256_unpacklo_epi32(n[2], n[3]), t3 = _mm256_unpackhi_epi32(n[2], n[3]);
    o[0] = _mm256_unpacklo_epi64(t0, t2);
    o[1] = _mm256_unpackhi_epi64(t0, t2);
    o[2] = _mm256_unpacklo_epi64(t1, t3);
    o[3] = _mm256_unpackhi_epi64(t1, t3);
}

AI void tr4x4_128(const __m128i n[4], __m128i o[4]) {
    __m128i t0 = _mm_unpacklo_epi32(n[0], n[1]), t1 = _mm_unpackhi_epi32(n[0], n[1]);
    __m128i t2 = _mm_unpacklo_epi32(n[2], n[3]), t3 = _mm_unpackhi_epi32(n[2], n[3]);
    o[0] = _mm_unpacklo_epi64(t0, t2);
    o[1] = _mm_unpackhi_epi64(t0, t2);
    o[2] = _mm_unpacklo_epi64(t1, t3);
    o[3] = _mm_unpackhi_epi64(t1, t3);
}

/* The byte shuffle of a 4x4 byte transpose in 16 bytes: byte b of dword a to byte a of dword b. */
AI __m128i bt_idx(void) { return _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15); }

AI void st32(uint8_t *p, __m256i v) { _mm256_storeu_si256((__m256i *)p, v); }
AI void st16(uint8_t *p, __m128i v) { _mm_storeu_si128((__m128i *)p, v); }

/* The scale bytes of one chunk half: y holds, per row ii of the half, 4 bytes (one per
 * block bi) as dword ii; out byte 4 bi + ii (q8w_scale_idx). */
AI void store_scales(uint8_t *dst, __m128i y) { st16(dst, _mm_shuffle_epi8(y, bt_idx())); }

/* ---- Q4_K ---------------------------------------------------------------------- */

/* One row's super-block header (f16 d, f16 dmin, 12 bytes of 6-bit scales) to dwords
 * [sc 0..3, sc 4..7, m 0..3, m 4..7] (q4k_scale_min for the 8 sub-blocks at once). */
AI __m128i q4k_scales(__m128i v) {
    __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(3, 2, 3, 1)); /* s0-3, s8-11, s4-7, s8-11 */
    __m128i b = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 1, 1)); /* s0-3, s0-3, s4-7, s4-7 */
    __m128i lo = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                               _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    __m128i hi = _mm_and_si128(_mm_srli_epi32(b, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    return _mm_or_si128(lo, hi);
}

/* Rows g0 .. g0 + 7 of the file (src, rb bytes per row) into the group at g. */
static void q4k_group(const uint8_t *src, size_t rb, int nb, uint8_t *g) {
    const dtype dt = DT_Q4_K;
    const size_t chunk = (size_t)Q8W_GROUP * 4 * q8w_block_bytes(dt), pay = (size_t)Q8W_GROUP * 4 * q8w_hdr(dt);
    const size_t half = (size_t)16 * q8w_nv(dt) * 4;
    uint8_t *chunks = g + q8w_dtab(dt, Q8W_GROUP, nb);
    const __m256i m4 = _mm256_set1_epi8(0x0f), h4 = _mm256_set1_epi8((char)0xf0);
    const __m256i xsh = _mm256_setr_epi64x(0, 0, 4, 4), ysh = _mm256_setr_epi64x(4, 4, 0, 0);
    for (int s = 0; s < nb / 8; s++) {
        const uint8_t *blk[Q8W_GROUP];
        for (int i = 0; i < Q8W_GROUP; i++) blk[i] = src + (size_t)i * rb + (size_t)s * sizeof(block_q4_K);
        uint8_t *c0 = chunks + 2 * (size_t)s * chunk, *c1 = c0 + chunk;
        __m128i dm[2];
        for (int h = 0; h < 2; h++) {
            __m128i v[4], x[4], y[4];
            for (int ii = 0; ii < 4; ii++) {
                v[ii] = _mm_loadu_si128((const __m128i *)blk[4 * h + ii]);
                x[ii] = q4k_scales(v[ii]);
            }
            /* d | dmin << 16 of the 4 rows, as [d0..d3, dmin0..dmin3] */
            __m128i t = _mm_unpacklo_epi64(_mm_unpacklo_epi32(v[0], v[1]), _mm_unpacklo_epi32(v[2], v[3]));
            dm[h] = _mm_shuffle_epi8(t, _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
            tr4x4_128(x, y); /* y: sc of quad 0, of quad 1, m of quad 0, of quad 1 */
            store_scales(c0 + 16 * h, y[0]);
            store_scales(c1 + 16 * h, y[1]);
            store_scales(c0 + 32 + 16 * h, y[2]);
            store_scales(c1 + 32 + 16 * h, y[3]);
        }
        uint8_t *dtab = g + 4 * (size_t)s * Q8W_GROUP; /* 8 d, then 8 -dmin (q8w_dm_at) */
        st16(dtab, _mm_unpacklo_epi64(dm[0], dm[1]));
        st16(dtab + 16, _mm_xor_si128(_mm_unpackhi_epi64(dm[0], dm[1]), _mm_set1_epi16((short)0x8000)));
        /* pair p of the super-block: qs[32 p .. 32 p + 31], sub-blocks 2p (low nibbles) and
         * 2p + 1 (high), blocks 2 (p % 2) and + 1 of quad p / 2; both pairs of a quad at
         * once, so each 64-byte line is written whole */
        for (int q = 0; q < 2; q++)
            for (int h = 0; h < 2; h++) {
                uint8_t *c = (q ? c1 : c0) + pay + h * half;
                __m256i o[2][4];
                for (int pp = 0; pp < 2; pp++) {
                    __m256i n[4];
                    for (int ii = 0; ii < 4; ii++) {
                        const uint8_t *qs = blk[4 * h + ii] + offsetof(block_q4_K, qs) + 32 * (2 * q + pp);
                        __m256i l = _mm256_loadu_si256((const __m256i *)qs);
                        __m256i a = _mm256_permute4x64_epi64(l, _MM_SHUFFLE(1, 0, 1, 0)); /* bytes 0..15, twice */
                        __m256i b = _mm256_permute4x64_epi64(l, _MM_SHUFFLE(3, 2, 3, 2)); /* bytes 16..31 */
                        n[ii] = _mm256_or_si256(_mm256_and_si256(_mm256_srlv_epi64(a, xsh), m4),
                                                _mm256_and_si256(_mm256_sllv_epi64(b, ysh), h4));
                    }
                    tr4x4(n, o[pp]);
                }
                for (int v = 0; v < 4; v++) {
                    st32(c + 64 * (size_t)v, o[0][v]);
                    st32(c + 64 * (size_t)v + 32, o[1][v]);
                }
            }
    }
}

/* ---- Q6_K ---------------------------------------------------------------------- */

/* One row's high-bit bytes of a quad (q6k_block_payload) from its 32 qh bytes: dword bi
 * of the low lane = bytes 16..19 of block bi's payload, of the high lane bytes 20..23.
 * Byte f of dword k of g = qh[4f + k] holds the 2-bit fields of blocks 0..3 at bits
 * 2 bi; payload byte k of block bi wants those of f = 0..3 at bits 2f: a transpose of
 * 4x4 2-bit fields in each dword (two delta swaps), then of 4x4 bytes. */
AI __m256i q6k_high(__m256i qh) {
    const __m256i bt = _mm256_broadcastsi128_si256(bt_idx());
    __m256i g = _mm256_shuffle_epi8(qh, bt), t;
    t = _mm256_and_si256(_mm256_xor_si256(g, _mm256_srli_epi32(g, 12)), _mm256_set1_epi32(0x0000f0f0));
    g = _mm256_xor_si256(g, _mm256_xor_si256(t, _mm256_slli_epi32(t, 12)));
    t = _mm256_and_si256(_mm256_xor_si256(g, _mm256_srli_epi32(g, 6)), _mm256_set1_epi32(0x00cc00cc));
    g = _mm256_xor_si256(g, _mm256_xor_si256(t, _mm256_slli_epi32(t, 6)));
    return _mm256_shuffle_epi8(g, bt);
}

static void q6k_group(const uint8_t *src, size_t rb, int nb, uint8_t *g) {
    const dtype dt = DT_Q6_K;
    const size_t chunk = (size_t)Q8W_GROUP * 4 * q8w_block_bytes(dt), pay = (size_t)Q8W_GROUP * 4 * q8w_hdr(dt);
    const size_t half = (size_t)16 * q8w_nv(dt) * 4;
    uint8_t *chunks = g + q8w_dtab(dt, Q8W_GROUP, nb);
    const __m256i m4 = _mm256_set1_epi8(0x0f), h4 = _mm256_set1_epi8((char)0xf0);
    /* a row's 16 int8 scales (2j: block j's first 16 values, 2j + 1: its second) to
     * dwords [quad 0 first, quad 0 second, quad 1 first, quad 1 second] */
    const __m128i sc_idx = _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
    for (int s = 0; s < nb / 8; s++) {
        const uint8_t *blk[Q8W_GROUP];
        for (int i = 0; i < Q8W_GROUP; i++) blk[i] = src + (size_t)i * rb + (size_t)s * sizeof(block_q6_K);
        uint16_t d[Q8W_GROUP];
        for (int i = 0; i < Q8W_GROUP; i++) memcpy(&d[i], blk[i] + offsetof(block_q6_K, d), 2);
        st16(g + 2 * (size_t)s * Q8W_GROUP, _mm_loadu_si128((const __m128i *)d)); /* q8w_d_at */
        uint8_t *cq[2] = {chunks + 2 * (size_t)s * chunk, chunks + (2 * (size_t)s + 1) * chunk};
        for (int h = 0; h < 2; h++) {
            __m128i x[4], y[4];
            for (int ii = 0; ii < 4; ii++)
                x[ii] = _mm_shuffle_epi8(
                    _mm_loadu_si128((const __m128i *)(blk[4 * h + ii] + offsetof(block_q6_K, scales))), sc_idx);
            tr4x4_128(x, y);
            for (int q = 0; q < 2; q++) {
                store_scales(cq[q] + 16 * h, y[2 * q]);
                store_scales(cq[q] + 32 + 16 * h, y[2 * q + 1]);
            }
        }
        for (int q = 0; q < 2; q++)
            for (int h = 0; h < 2; h++) {
                uint8_t *c = cq[q] + pay + h * half;
                __m256i n0[4], n1[4], hb[4], o[4];
                for (int ii = 0; ii < 4; ii++) {
                    const uint8_t *b = blk[4 * h + ii];
                    /* ql[64 q ..]: blocks 0 and 2 of the quad in bytes 0..31 (low / high
                     * nibbles), blocks 1 and 3 in bytes 32..63 */
                    __m256i l0 = _mm256_loadu_si256((const __m256i *)(b + offsetof(block_q6_K, ql) + 64 * q));
                    __m256i l1 = _mm256_loadu_si256((const __m256i *)(b + offsetof(block_q6_K, ql) + 64 * q + 32));
                    __m256i a = _mm256_permute2x128_si256(l0, l1, 0x20), e = _mm256_permute2x128_si256(l0, l1, 0x31);
                    n0[ii] = _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_and_si256(_mm256_slli_epi16(e, 4), h4));
                    n1[ii] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), m4), _mm256_and_si256(e, h4));
                    hb[ii] = q6k_high(_mm256_loadu_si256((const __m256i *)(b + offsetof(block_q6_K, qh) + 32 * q)));
                }
                tr4x4(n0, o); /* blocks 0, 1 */
                for (int v = 0; v < 4; v++) st32(c + 64 * (size_t)v, o[v]);
                tr4x4(n1, o); /* blocks 2, 3 */
                for (int v = 0; v < 4; v++) st32(c + 64 * (size_t)v + 32, o[v]);
                tr4x4(hb, o); /* o[bi]: low lane vector 4's block bi, high lane vector 5's */
                st32(c + 256, _mm256_permute2x128_si256(o[0], o[1], 0x20));
                st32(c + 288, _mm256_permute2x128_si256(o[2], o[3], 0x20));
                st32(c + 320, _mm256_permute2x128_si256(o[0], o[1], 0x31));
                st32(c + 352, _mm256_permute2x128_si256(o[2], o[3], 0x31));
            }
    }
}

/* ---- whole groups here, the rest by the portable packer --------------------------- */

typedef void (*group_fn)(const uint8_t *src, size_t rb, int nb, uint8_t *g);

static void pack_groups(dtype dt, pack_rows_fn portable, group_fn group, const uint8_t *file, int rows, int cols,
                        int r0, int r1, uint8_t *out) {
    int nb = cols / 32;
    size_t rb = dtype_row_bytes(dt, cols), gbytes = q8w_group_bytes(dt, Q8W_GROUP, nb);
    for (int r = r0; r < r1;) {
        int g0 = r / Q8W_GROUP * Q8W_GROUP, e = g0 + Q8W_GROUP < r1 ? g0 + Q8W_GROUP : r1;
        if (r == g0 && e == g0 + Q8W_GROUP) {
            group(file + (size_t)g0 * rb, rb, nb, out + (size_t)(g0 / Q8W_GROUP) * gbytes);
            q8w_dtab_pad(dt, out, rows, nb, g0);
        } else {
            portable(dt, file, rows, cols, r, e, out);
        }
        r = e;
    }
}

void q4k_pack_rows_avx2(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out) {
    (void)dt;
    pack_groups(DT_Q4_K, q4k_pack_rows, q4k_group, file, rows, cols, r0, r1, out);
}

void q6k_pack_rows_avx2(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out) {
    (void)dt;
    pack_groups(DT_Q6_K, q6k_pack_rows, q6k_group, file, rows, cols, r0, r1, out);
}

#else
typedef int pack_avx2_not_built; /* keeps the translation unit non-empty */
#endif
