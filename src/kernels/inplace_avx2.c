/* inplace_avx2.c - fast mode's int8-activation matmuls (AVX2) for the GGUF types
 * read in place: Q2_K Q3_K Q5_K IQ4_NL IQ4_XS MXFP4 (the contract
 * and the decoding are in dequant.h; scalar.c has the reference; Q6_K and
 * Q4_K are packed in fast mode, avx2.c).
 *
 * The shape of inplace_avx512.c on 256-bit registers: a quad (4 sub-blocks, 128
 * columns) is decoded into 4 ymm in the activations' order (kernels.h): a01 holds
 * values 0..15 of sub-blocks 0 and 1 (one 128-bit lane each), a23 those of 2 and
 * 3, b01 / b23 values 16..31. A product of one of them with the matching 32
 * activation bytes leaves, in int32 lanes 4 bi .. 4 bi + 3 of the pair (a01, a23)
 * read as 16 lanes, partial sums of sub-block bi's half: exactly the integers of
 * inplace_avx512.c's vpdpbusd, so the per-lane f32 steps and avx512.c's
 * lane-summing tree are the same too. The offset types
 * (Q3_K 4, IQ4 128) start their integer sums at -offset * sum(q)
 * instead of a min term, as inplace_avx512.c does. Every (row, token) output runs the
 * same operations whatever the row range, the token count or the tile.
 *
 * Exact integer sums without VNNI: vpmaddubsw (u8 x s8, pairs summed in int16
 * WITH saturation) then vpmaddwd by 1 (pairs into int32). With q in [-127, 127]
 * a pair stays below 2^15 when u <= 128: all types but IQ4 qualify
 * directly, and for Q5_K (u <= 31) the a and b halves' int16
 * pairs are even added before vpmaddwd (|sum| <= 4 * 31 * 127 = 15748). IQ4's u =
 * kvalue + 128 reaches 241, so it is decoded to the signed kvalue (|k| <= 127) and
 * multiplied by the sign trick, vpmaddubsw(|k|, sign(q, k)) (pairs <= 2 * 127^2 =
 * 32258): sum(k q) is the offset type's sum(u q) - 128 sum(q) itself. */
#include "kernels.h"

#include "dequant.h"

#if defined(__x86_64__)

#include <immintrin.h>
#include <stdlib.h>

#include "inplace_kernels.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

/* Tokens per prefill tile: 4 is the fastest of 1, 2, 4 and 8 for every type (with 16
 * registers, 8 tokens' accumulators spill; `build/bench_kernels q8 avx2`, prefill). */
#define IP_T 4
#define IP_RB 8 /* rows per block: the activation side is rebuilt per block of rows in prefill */
#define IP_STACK_QUADS 64
#define IP_PF 2048 /* software prefetch distance in a row's stream (bytes), as inplace_avx512.c */

/* 16 lanes as two registers: lo = lanes 0..7 (sub-blocks 0, 1), hi = 8..15 (2, 3). */
typedef struct {
    __m256 lo, hi;
} v16;
typedef struct {
    __m256i lo, hi;
} v16i;

/* The activation side of one quad for one token. */
typedef struct {
    v16 dx, sa, sb, s; /* block scale per lane; dx times the lanes' sums of q (halves, both) */
    v16i na, nb, n;    /* -offset times the lanes' sums of q: the int8 sums' start */
} ip_x;

/* One quad of one row, decoded: weights of the halves (unsigned u, or IQ4's signed
 * kvalues), scale and min per lane. */
typedef struct {
    __m256i a01, a23, b01, b23;
    v16 fa, fb, ma, mb;
} ip_w;

AI int ip_halves(dtype dt) { return dt == DT_Q2_K || dt == DT_Q3_K; }
AI int ip_iq4(dtype dt) { return dt == DT_IQ4_NL || dt == DT_IQ4_XS || dt == DT_MXFP4; }
/* The offset the types without a min subtract from u (dequant.h folds it into mn). */
AI int ip_off(dtype dt) {
    return dt == DT_Q3_K ? 4 : ip_iq4(dt) ? 128 : 0;
}

/* 4 f32 (one per sub-block of the quad) spread over 16 lanes: lanes 4b..4b+3 = v[b]. */
AI v16 expand4(__m128 v) {
    __m256 w = _mm256_castps128_ps256(v);
    return (v16){_mm256_permutevar8x32_ps(w, _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1)),
                 _mm256_permutevar8x32_ps(w, _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3))};
}

AI v16 v16_mul(v16 a, v16 b) { return (v16){_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
AI v16 v16_add(v16 a, v16 b) { return (v16){_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
AI v16 v16_fma(v16 a, v16 b, v16 c) { return (v16){_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
AI v16 v16_set1(float f) { return (v16){_mm256_set1_ps(f), _mm256_set1_ps(f)}; }
AI v16 v16_cvt(v16i v) { return (v16){_mm256_cvtepi32_ps(v.lo), _mm256_cvtepi32_ps(v.hi)}; }

/* Sums of 4 consecutive u8 x s8 products per int32 lane (u <= 128: no int16 saturation). */
AI __m256i dot4(__m256i u, __m256i s) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)); }

AI __m256i load32(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
/* 16 bytes at p0 in the low lane, 16 at p1 in the high one. */
AI __m256i load2x16(const uint8_t *p0, const uint8_t *p1) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p0)),
                                   _mm_loadu_si128((const __m128i *)p1), 1);
}

/* -offset times v (offset a power of two). */
AI __m256i neg_off(dtype dt, __m256i v) {
    int sh = dt == DT_Q3_K ? 2 : 7;
    return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(v, sh));
}

AI void ip_prep(dtype dt, const q8_act *x, int t, int quads, ip_x *out) {
    const __m256i ones = _mm256_set1_epi8(1);
    const int8_t *q = x->q + (size_t)t * x->quads * 128;
    const float *d = x->d + (size_t)t * x->quads * 4;
    for (int k = 0; k < quads; k++) {
        const uint8_t *p = (const uint8_t *)(q + 128 * (size_t)k);
        v16 dx = expand4(_mm_loadu_ps(d + 4 * k));
        v16i sa = {dot4(ones, load32(p)), dot4(ones, load32(p + 32))};
        v16i sb = {dot4(ones, load32(p + 64)), dot4(ones, load32(p + 96))};
        out[k].dx = dx;
        out[k].sa = v16_mul(v16_cvt(sa), dx);
        out[k].sb = v16_mul(v16_cvt(sb), dx);
        out[k].s = v16_add(out[k].sa, out[k].sb);
        out[k].na = (v16i){neg_off(dt, sa.lo), neg_off(dt, sa.hi)};
        out[k].nb = (v16i){neg_off(dt, sb.lo), neg_off(dt, sb.hi)};
        out[k].n = (v16i){_mm256_add_epi32(out[k].na.lo, out[k].nb.lo), _mm256_add_epi32(out[k].na.hi, out[k].nb.hi)};
    }
}

/* ---- decoders ---------------------------------------------------------------------- */

AI float h2f(const uint8_t *p) { return _cvtsh_ss(rd_u16(p)); }

/* The f16s at p, p + stride, ... (4 of them) as f32. */
AI __m128 h2f4(const uint8_t *p, int stride) {
    return _mm_cvtph_ps(_mm_setr_epi16((short)rd_u16(p), (short)rd_u16(p + stride), (short)rd_u16(p + 2 * stride),
                                       (short)rd_u16(p + 3 * stride), 0, 0, 0, 0));
}

/* Four bytes (one per sub-block) to f32 lanes, times d. */
AI __m128 bytes4_f32(uint32_t v, float d) {
    return _mm_mul_ps(_mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)v))), _mm_set1_ps(d));
}

AI __m256i lo_nib(__m256i z) { return _mm256_and_si256(z, _mm256_set1_epi8(0x0f)); }
AI __m256i hi_nib(__m256i z) { return _mm256_and_si256(_mm256_srli_epi16(z, 4), _mm256_set1_epi8(0x0f)); }
/* [a's low lane | b's low lane] and [a's high lane | b's high lane]. */
AI __m256i lanes_lo(__m256i a, __m256i b) { return _mm256_permute2x128_si256(a, b, 0x20); }
AI __m256i lanes_hi(__m256i a, __m256i b) { return _mm256_permute2x128_si256(a, b, 0x31); }
/* The 16 bytes of p's low (high) lane in both lanes. */
AI __m256i dup_lo(__m256i v) { return _mm256_permute2x128_si256(v, v, 0x00); }
AI __m256i dup_hi(__m256i v) { return _mm256_permute2x128_si256(v, v, 0x11); }
/* bit where each byte of v has the bit of m (one bit per byte) set, else 0. */
AI __m256i bit_to(__m256i v, __m256i m, char bit) {
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, m), m), _mm256_set1_epi8(bit));
}
AI __m256i lanes_u8(char a, char b) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi8(a)), _mm_set1_epi8(b), 1);
}

/* Q4_K / Q5_K: quad qq of a super-block is its chunks 2qq, 2qq + 1 of 32 bytes (sub-blocks
 * 4qq .. 4qq + 3: chunk low nibbles, then high); Q5_K adds bit j of qh[l] as bit 4 of
 * sub-block j's value l. The 6-bit scales and mins of the 4 sub-blocks come out of the 12
 * packed bytes 4 at a time (q4k_scale_min's layout). */
AI ip_w dec_q45_k(dtype dt, const uint8_t *row, int q) {
    int k5 = dt == DT_Q5_K, qq = q % 2;
    const uint8_t *blk = row + (size_t)(q / 2) * (k5 ? 176 : 144);
    const uint8_t *qs = blk + (k5 ? 48 : 16) + 64 * qq;
    __m256i z0 = load32(qs), z1 = load32(qs + 32);
    __m256i l0 = lo_nib(z0), h0 = hi_nib(z0), l1 = lo_nib(z1), h1 = hi_nib(z1);
    ip_w w;
    w.a01 = lanes_lo(l0, h0);
    w.b01 = lanes_hi(l0, h0);
    w.a23 = lanes_lo(l1, h1);
    w.b23 = lanes_hi(l1, h1);
    if (k5) { /* qh shifted right by 4qq (16-bit shift: bits 0..3 of each byte stay its own) */
        __m256i qh = _mm256_srl_epi16(load32(blk + 16), _mm_cvtsi32_si128(4 * qq));
        __m256i ha = dup_lo(qh), hb = dup_hi(qh), m01 = lanes_u8(1, 2), m23 = lanes_u8(4, 8);
        w.a01 = _mm256_or_si256(w.a01, bit_to(ha, m01, 0x10));
        w.a23 = _mm256_or_si256(w.a23, bit_to(ha, m23, 0x10));
        w.b01 = _mm256_or_si256(w.b01, bit_to(hb, m01, 0x10));
        w.b23 = _mm256_or_si256(w.b23, bit_to(hb, m23, 0x10));
    }
    uint32_t u0 = rd_u32(blk + 4), u1 = rd_u32(blk + 8), u2 = rd_u32(blk + 12), sc, m;
    if (qq == 0) {
        sc = u0 & 0x3f3f3f3fu;
        m = u1 & 0x3f3f3f3fu;
    } else {
        sc = (u2 & 0x0f0f0f0fu) | ((u0 >> 6) & 0x03030303u) << 4;
        m = ((u2 >> 4) & 0x0f0f0f0fu) | ((u1 >> 6) & 0x03030303u) << 4;
    }
    float d = h2f(blk), dmin = h2f(blk + 2);
    w.fa = w.fb = expand4(bytes4_f32(sc, d));
    w.ma = w.mb = expand4(_mm_sub_ps(_mm_setzero_ps(), bytes4_f32(m, dmin)));
    return w;
}

/* 8 f32 per-half values (index 2 bi + half, as Q2_K / Q3_K store their scales)
 * spread to the lanes of the a halves and of the b halves. */
AI void spread_halves(__m256 f, v16 *fa, v16 *fb) {
    *fa = (v16){_mm256_permutevar8x32_ps(f, _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2)),
                _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(4, 4, 4, 4, 6, 6, 6, 6))};
    *fb = (v16){_mm256_permutevar8x32_ps(f, _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3)),
                _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(5, 5, 5, 5, 7, 7, 7, 7))};
}

/* 8 unsigned bytes (packed in v) as f32 times d. */
AI __m256 bytes8_f32(uint64_t v, float d) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)v))), _mm256_set1_ps(d));
}

/* Q2_K / Q3_K: quad h is the super-block's half of 128 values; sub-block bi of it takes
 * bits 2 bi of qs[32 h + l] (and Q3_K bit 4 h + bi of hmask[l] as +4). */
AI ip_w dec_q23_k(dtype dt, const uint8_t *row, int q) {
    int k3 = dt == DT_Q3_K, h = q % 2;
    const uint8_t *blk = row + (size_t)(q / 2) * (k3 ? 110 : 84);
    __m256i qs = load32(blk + (k3 ? 32 : 16) + 32 * h), ha = dup_lo(qs), hb = dup_hi(qs);
    const __m256i s01 = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2), s23 = _mm256_setr_epi32(4, 4, 4, 4, 6, 6, 6, 6);
    const __m256i three = _mm256_set1_epi8(3);
    ip_w w;
    w.a01 = _mm256_and_si256(_mm256_srlv_epi32(ha, s01), three);
    w.a23 = _mm256_and_si256(_mm256_srlv_epi32(ha, s23), three);
    w.b01 = _mm256_and_si256(_mm256_srlv_epi32(hb, s01), three);
    w.b23 = _mm256_and_si256(_mm256_srlv_epi32(hb, s23), three);
    if (k3) { /* hmask shifted right by 4h (16-bit shift: bits 0..3 of each byte stay its own) */
        __m256i hm = _mm256_srl_epi16(load32(blk), _mm_cvtsi32_si128(4 * h));
        __m256i la = dup_lo(hm), lb = dup_hi(hm), m01 = lanes_u8(1, 2), m23 = lanes_u8(4, 8);
        w.a01 = _mm256_or_si256(w.a01, bit_to(la, m01, 4));
        w.a23 = _mm256_or_si256(w.a23, bit_to(la, m23, 4));
        w.b01 = _mm256_or_si256(w.b01, bit_to(lb, m01, 4));
        w.b23 = _mm256_or_si256(w.b23, bit_to(lb, m23, 4));
    }
    /* the quad's 8 per-half scales (index 2 bi + half) as bytes, in general registers: 3x the
     * decode speed of going through float arrays (inplace_avx512.c's form) here
     * (`build/bench_kernels q8 avx2 Q2_K Q3_K`, warm) */
    uint64_t sc8, m8 = 0;
    if (k3) { /* q3k_scale(i) for i = 8h + k: low 4 bits from byte k (h: high nibble), high 2 from
               * byte 8 + k % 4 at bits 2 (2h + k / 4); then - 32 */
        uint64_t lo = rd_u64(blk + 96), hb = rd_u32(blk + 104);
        lo = (h ? lo >> 4 : lo) & 0x0f0f0f0f0f0f0f0full;
        uint64_t hi = ((hb >> (4 * h)) & 0x03030303u) | ((hb >> (4 * h + 2)) & 0x03030303u) << 32;
        sc8 = lo | hi << 4;
    } else { /* byte 8h + k: scale low nibble, min high */
        uint64_t b = rd_u64(blk + 8 * h);
        sc8 = b & 0x0f0f0f0f0f0f0f0full;
        m8 = (b >> 4) & 0x0f0f0f0f0f0f0f0full;
    }
    __m256 f;
    if (k3) {
        __m256i s = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sc8)), _mm256_set1_epi32(32));
        f = _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(h2f(blk + 108)));
    } else {
        f = bytes8_f32(sc8, h2f(blk + 80));
    }
    spread_halves(f, &w.fa, &w.fb);
    if (k3) {
        w.ma = v16_mul(w.fa, v16_set1(-4.0f));
        w.mb = v16_mul(w.fb, v16_set1(-4.0f));
    } else { /* 0 - dmin * m */
        __m256 m = _mm256_sub_ps(_mm256_setzero_ps(), bytes8_f32(m8, h2f(blk + 82)));
        spread_halves(m, &w.ma, &w.mb);
    }
    return w;
}

/* IQ4: nibbles through the 16-entry grid, as the signed kvalues (see the top). */
AI __m256i iq4_lut(__m256i idx) {
    const __m256i t = _mm256_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113, -127,
                                       -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
    return _mm256_shuffle_epi8(t, idx);
}

/* MXFP4's doubled E2M1 grid, signed as IQ4's. */
AI __m256i mxfp4_lut(__m256i idx) {
    const __m256i t = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12, 0, 1, 2, 3, 4, 6, 8,
                                       12, 0, -1, -2, -3, -4, -6, -8, -12);
    return _mm256_shuffle_epi8(t, idx);
}

/* IQ4_NL (an f16 scale) or MXFP4 (an E8M0 byte), 16 bytes of nibbles after it (full quads:
 * the caller widens a last partial one). */
AI ip_w dec_small(dtype dt, const uint8_t *b0) {
    int mx = dt == DT_MXFP4, bb = mx ? 17 : 18, o = mx ? 1 : 2;
    __m256i z01 = load2x16(b0 + o, b0 + bb + o), z23 = load2x16(b0 + 2 * bb + o, b0 + 3 * bb + o);
    ip_w w;
    w.a01 = mx ? mxfp4_lut(lo_nib(z01)) : iq4_lut(lo_nib(z01));
    w.b01 = mx ? mxfp4_lut(hi_nib(z01)) : iq4_lut(hi_nib(z01));
    w.a23 = mx ? mxfp4_lut(lo_nib(z23)) : iq4_lut(lo_nib(z23));
    w.b23 = mx ? mxfp4_lut(hi_nib(z23)) : iq4_lut(hi_nib(z23));
    w.fa = w.fb = expand4(mx ? _mm_setr_ps(mxfp4_scale(b0[0]), mxfp4_scale(b0[17]), mxfp4_scale(b0[34]),
                                           mxfp4_scale(b0[51]))
                             : h2f4(b0, 18));
    w.ma = w.mb = v16_mul(w.fa, v16_set1(-128.0f));
    return w;
}

/* IQ4_XS: sub-block j's 16 bytes at qs + 16 j, so quad qq is 64 contiguous bytes. */
AI ip_w dec_iq4_xs(const uint8_t *row, int q) {
    const uint8_t *blk = row + (size_t)(q / 2) * 136;
    int qq = q % 2, sh = rd_u16(blk + 2);
    __m256i z0 = load32(blk + 8 + 64 * qq), z1 = load32(blk + 8 + 64 * qq + 32);
    /* the 6-bit scales of sub-blocks 4qq .. 4qq + 3, one per byte: low nibbles from
     * blk[4 + 2qq ..] in order, high 2 bits from scales_h at bits 8qq .. (in registers, as
     * dec_q23_k: twice the decode speed of a float array) */
    uint32_t n = rd_u16(blk + 4 + 2 * qq), c = (uint32_t)(sh >> (8 * qq)) & 0xffu;
    uint32_t ls = (n & 0xfu) | (n & 0xf0u) << 4 | (n & 0xf00u) << 8 | (n & 0xf000u) << 12;
    ls |= ((c & 3u) | (c & 0xcu) << 6 | (c & 0x30u) << 12 | (c & 0xc0u) << 18) << 4;
    __m128i l4 = _mm_sub_epi32(_mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)ls)), _mm_set1_epi32(32));
    ip_w w;
    w.a01 = iq4_lut(lo_nib(z0));
    w.b01 = iq4_lut(hi_nib(z0));
    w.a23 = iq4_lut(lo_nib(z1));
    w.b23 = iq4_lut(hi_nib(z1));
    w.fa = w.fb = expand4(_mm_mul_ps(_mm_cvtepi32_ps(l4), _mm_set1_ps(h2f(blk))));
    w.ma = w.mb = v16_mul(w.fa, v16_set1(-128.0f));
    return w;
}

/* Types of 32-value blocks: a last partial quad is copied after its kb blocks into a
 * zeroed buffer of 4 (absent blocks: scale 0, against zero activations), so no byte past
 * the row is read and the decoders need no masks. */
AI int ip_small_block(dtype dt) { return dt == DT_IQ4_NL || dt == DT_MXFP4; }
AI int ip_bb(dtype dt) { return dt == DT_MXFP4 ? 17 : 18; }

AI ip_w ip_decode(dtype dt, const uint8_t *row, int q, int nb) {
    if (ip_small_block(dt)) {
        int bb = ip_bb(dt), kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
        const uint8_t *b0 = row + (size_t)q * 4 * (size_t)bb;
        uint8_t part[4 * 18];
        if (kb < 4) {
            memset(part, 0, sizeof part);
            memcpy(part, b0, (size_t)kb * (size_t)bb);
            b0 = part;
        }
        return dec_small(dt, b0);
    }
    switch (dt) {
    case DT_Q5_K: return dec_q45_k(dt, row, q);
    case DT_Q2_K:
    case DT_Q3_K: return dec_q23_k(dt, row, q);
    default: return dec_iq4_xs(row, q);
    }
}

/* ---- the matmul ---------------------------------------------------------------------- */

/* The int32 lanes of one half's sums against the matching activation bytes. */
AI __m256i half_dot(dtype dt, __m256i w, __m256i x) {
    if (ip_iq4(dt)) return dot4(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    return dot4(w, x);
}

/* acc += one quad of one row against one token: inplace_avx512.c's ip_step lane by lane. */
AI v16 ip_step(dtype dt, const ip_w *w, const ip_x *x, const int8_t *xq, v16 acc) {
    const uint8_t *p = (const uint8_t *)xq;
    __m256i xa01 = load32(p), xa23 = load32(p + 32), xb01 = load32(p + 64), xb23 = load32(p + 96);
    int off = ip_off(dt) != 0; /* offset types: no min term, the sums start at -offset * sum(q) */
    if (ip_halves(dt)) { /* Q2_K, Q3_K: u <= 7 */
        v16i ia = {dot4(w->a01, xa01), dot4(w->a23, xa23)};
        v16i ib = {dot4(w->b01, xb01), dot4(w->b23, xb23)};
        if (off) {
            ia = (v16i){_mm256_add_epi32(x->na.lo, ia.lo), _mm256_add_epi32(x->na.hi, ia.hi)};
            ib = (v16i){_mm256_add_epi32(x->nb.lo, ib.lo), _mm256_add_epi32(x->nb.hi, ib.hi)};
        }
        acc = v16_fma(v16_mul(v16_cvt(ia), x->dx), w->fa, acc);
        acc = v16_fma(v16_mul(v16_cvt(ib), x->dx), w->fb, acc);
        if (off) return acc;
        acc = v16_fma(w->ma, x->sa, acc);
        return v16_fma(w->mb, x->sb, acc);
    }
    v16i i;
    if (ip_iq4(dt)) { /* the signed kvalues: sum(k q) = sum(u q) - 128 sum(q), no start */
        i.lo = _mm256_add_epi32(half_dot(dt, w->a01, xa01), half_dot(dt, w->b01, xb01));
        i.hi = _mm256_add_epi32(half_dot(dt, w->a23, xa23), half_dot(dt, w->b23, xb23));
    } else { /* u <= 31: both halves' int16 pairs added before widening (see the top) */
        const __m256i one16 = _mm256_set1_epi16(1);
        i.lo = _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(w->a01, xa01), _mm256_maddubs_epi16(w->b01, xb01)), one16);
        i.hi = _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(w->a23, xa23), _mm256_maddubs_epi16(w->b23, xb23)), one16);
        if (off) i = (v16i){_mm256_add_epi32(x->n.lo, i.lo), _mm256_add_epi32(x->n.hi, i.hi)};
    }
    acc = v16_fma(v16_mul(v16_cvt(i), x->dx), w->fa, acc);
    return off ? acc : v16_fma(w->ma, x->s, acc);
}

/* avx512.c's lane-summing tree: 16 -> 8 (lane i: v[i+8] + v[i]) -> 4 -> 2 -> 1. */
AI float ip_reduce(v16 v) {
    __m256 s8 = _mm256_add_ps(v.hi, v.lo);
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(s8, 1), _mm256_castps256_ps128(s8));
    s = _mm_add_ps(_mm_movehl_ps(s, s), s);
    s = _mm_add_ss(_mm_movehdup_ps(s), s);
    return _mm_cvtss_f32(s);
}

AI v16 v16_zero(void) { return (v16){_mm256_setzero_ps(), _mm256_setzero_ps()}; }

/* Decode: one row x one token. */
AI void ip_gemv_row(dtype dt, const uint8_t *row, size_t rb, int nb, int quads, const q8_act *x, const ip_x *xs,
                    float *y) {
    v16 acc = v16_zero();
    for (int q = 0; q < quads; q++) {
        _mm_prefetch((const char *)row + (size_t)q * rb / (size_t)quads + IP_PF, _MM_HINT_T0);
        ip_w w = ip_decode(dt, row, q, nb);
        acc = ip_step(dt, &w, &xs[q], x->q + 128 * (size_t)q, acc);
    }
    *y = ip_reduce(acc);
}

/* Row r x tokens [t0, t0 + T), the activation side of those tokens in xs (quads each). */
AI void ip_row(dtype dt, const uint8_t *row, int nb, int quads, const q8_act *x, int t0, int T, const ip_x *xs, float *y,
               int ldy, int r) {
    v16 acc[IP_T];
    UNROLL for (int t = 0; t < T; t++) acc[t] = v16_zero();
    for (int q = 0; q < quads; q++) {
        ip_w w = ip_decode(dt, row, q, nb);
        UNROLL for (int t = 0; t < T; t++)
            acc[t] = ip_step(dt, &w, &xs[(size_t)t * quads + q], x->q + (size_t)(t0 + t) * x->quads * 128 + 128 * (size_t)q,
                             acc[t]);
    }
    UNROLL for (int t = 0; t < T; t++) y[(size_t)(t0 + t) * ldy + r] = ip_reduce(acc[t]);
}

/* Inlined into each type's entry point, so that every branch on dt is decided at compile time. */
AI void ip_matmul(dtype dt, const void *w, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    int nb = cols / 32, quads = (nb + 3) / 4;
    size_t rb = dtype_row_bytes(dt, cols);
    ip_x stack[IP_STACK_QUADS * IP_T];
    ip_x *xs = quads <= IP_STACK_QUADS ? stack : aligned_alloc(32, sizeof(ip_x) * (size_t)quads * IP_T);
    if (!xs) { /* out of memory: the scalar reference needs none */
        kernels_scalar()->matmul_q8[dt](w, r1, cols, r0, r1, x, y, ldy);
        return;
    }
    const uint8_t *wb = w;
    if (x->nt == 1) {
        ip_prep(dt, x, 0, quads, xs);
        for (int r = r0; r < r1; r++) ip_gemv_row(dt, wb + (size_t)r * rb, rb, nb, quads, x, xs, y + r);
    } else {
        for (int rb0 = r0; rb0 < r1; rb0 += IP_RB) {
            int rb1 = rb0 + IP_RB < r1 ? rb0 + IP_RB : r1;
            for (int t0 = 0; t0 < x->nt; t0 += IP_T) {
                int T = x->nt - t0 < IP_T ? x->nt - t0 : IP_T;
                for (int t = 0; t < T; t++) ip_prep(dt, x, t0 + t, quads, xs + (size_t)t * quads);
                for (int r = rb0; r < rb1; r++) {
                    if (T == IP_T)
                        ip_row(dt, wb + (size_t)r * rb, nb, quads, x, t0, IP_T, xs, y, ldy, r);
                    else
                        for (int t = 0; t < T; t++)
                            ip_row(dt, wb + (size_t)r * rb, nb, quads, x, t0 + t, 1, xs + (size_t)t * quads, y, ldy, r);
                }
            }
        }
    }
    if (xs != stack) free(xs);
}

#define IP_MATMUL(NAME, DT)                                                                             \
    void NAME(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) { \
        (void)rows;                                                                                     \
        ip_matmul(DT, w, cols, r0, r1, x, y, ldy);                                                      \
    }
IP_MATMUL(inplace_avx2_q2_k, DT_Q2_K)
IP_MATMUL(inplace_avx2_q3_k, DT_Q3_K)
IP_MATMUL(inplace_avx2_q5_k, DT_Q5_K)
IP_MATMUL(inplace_avx2_iq4_nl, DT_IQ4_NL)
IP_MATMUL(inplace_avx2_iq4_xs, DT_IQ4_XS)
IP_MATMUL(inplace_avx2_mxfp4, DT_MXFP4)

#else
typedef int inplace_avx2_not_built; /* keeps the translation unit non-empty */
#endif
