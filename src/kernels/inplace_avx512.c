/* inplace_avx512.c - fast mode's int8-activation matmuls (AVX-512 VNNI) for the
 * GGUF types read in place: Q5_0 Q5_1 Q2_K Q3_K Q5_K IQ4_NL IQ4_XS MXFP4 (the
 * contract and the decoding are in dequant.h; scalar.c has the reference), and
 * exact mode's kernels for those, Q4_K and Q6_K (fast mode packs both: avx512.c).
 *
 * Weights are decoded one quad (4 sub-blocks of 32, 128 columns) at a time into
 * the order of the activations' quad layout (kernels.h): vector A holds values
 * 0..15 of the 4 sub-blocks, vector B values 16..31, as unsigned bytes. One
 * vpdpbusd per vector then leaves, in int32 lanes 4 bi .. 4 bi + 3, partial
 * sums of sub-block bi's half: the lanes of a half never mix with another
 * half's, so the per-half scale and min are applied lane by lane (scale and min
 * spread over the half's 4 lanes, the activations' per-lane sums of q for the
 * min) and the lanes are summed once per row, by avx512.c's fixed tree. Every
 * (row, token) output runs the same operations whatever the row range, the
 * token count or the tile: results do not depend on the thread count.
 *
 * Every type has a vector decoder (dec_generic, through dequant.h's scalar
 * decoder, is the fallback for a type added without one). Only the
 * VNNI table uses these (dispatch.c); without VNNI, inplace_avx2.c's kernels run them. */
#include "kernels.h"

#include "dequant.h"

#if defined(__x86_64__)

#include <immintrin.h>
#include <stdlib.h>

#include "inplace_kernels.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

#define IP_T 4  /* tokens per prefill tile */
#define IP_RB 8 /* rows per block: the activation side is rebuilt per block of rows in prefill */
#define IP_STACK_QUADS 64

/* The activation side of one quad for one token: the int8 halves and, per lane,
 * the block scale and dx times the lane's partial sum of q (for the mins). */
typedef struct {
    __m512 dx, sa, sb, s; /* s = sa + sb */
    __m512i na, nb, n;    /* -offset times the lanes' sums of q (halves, both): the int8 sums' start */
} ip_x;

/* The offset the types without a min subtract from u (dequant.h folds it into mn for
 * the reference; here the integer sums start at -offset * sum(q) instead, exact). */
AI int ip_off(dtype dt) {
    return dt == DT_Q5_0 ? 16 : dt == DT_Q3_K ? 4 : dt == DT_IQ4_NL || dt == DT_IQ4_XS || dt == DT_MXFP4 ? 128 : 0;
}

/* One quad of one row, decoded: unsigned weights of the halves, scale and min per lane. */
typedef struct {
    __m512i wa, wb;
    __m512 fa, fb, ma, mb;
} ip_w;

AI int ip_halves(dtype dt) { return dt == DT_Q2_K || dt == DT_Q3_K; }

/* 4 f32 (one per sub-block of the quad) spread over 16 lanes: lanes 4b..4b+3 = v[b]. */
AI __m512 expand4(__m128 v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                 _mm512_castps128_ps512(v));
}

AI void ip_prep(dtype dt, const q8_act *x, int t, int quads, ip_x *out) {
    const __m512i ones = _mm512_set1_epi8(1), zero = _mm512_setzero_si512();
    const unsigned sh = dt == DT_Q5_0 ? 4 : dt == DT_Q3_K ? 2 : 7; /* log2 of ip_off (a power of two) */
#define NEG_OFF(v) _mm512_sub_epi32(zero, _mm512_slli_epi32(v, sh))
    const int8_t *q = x->q + (size_t)t * x->quads * 128;
    const float *d = x->d + (size_t)t * x->quads * 4;
    for (int k = 0; k < quads; k++) {
        __m512i xa = _mm512_loadu_si512(q + 128 * k), xb = _mm512_loadu_si512(q + 128 * k + 64);
        __m512 dx = expand4(_mm_loadu_ps(d + 4 * k));
        __m512i qa = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, xa);
        __m512i qb = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, xb);
        out[k].dx = dx;
        out[k].sa = _mm512_mul_ps(_mm512_cvtepi32_ps(qa), dx);
        out[k].sb = _mm512_mul_ps(_mm512_cvtepi32_ps(qb), dx);
        out[k].s = _mm512_add_ps(out[k].sa, out[k].sb);
        out[k].na = NEG_OFF(qa);
        out[k].nb = NEG_OFF(qb);
        out[k].n = _mm512_add_epi32(out[k].na, out[k].nb);
    }
#undef NEG_OFF
}

/* ---- decoders ---------------------------------------------------------------------- */

/* The f16 at p as f32, in registers (F16C), not util.c's out-of-line conversion. */
AI float h2f(const uint8_t *p) { return _cvtsh_ss(rd_u16(p)); }

/* The f16s at p, p + stride, ... (4 of them) as f32. */
AI __m128 h2f4(const uint8_t *p, int stride) {
    return _mm_cvtph_ps(_mm_setr_epi16((short)rd_u16(p), (short)rd_u16(p + stride), (short)rd_u16(p + 2 * stride),
                                       (short)rd_u16(p + 3 * stride), 0, 0, 0, 0));
}


/* Any type through dequant.h's scalar decoder (absent sub-blocks of a last partial quad are zero). */
AI ip_w dec_generic(dtype dt, const uint8_t *row, int q, int nb) {
    uint8_t ua[64], ub[64];
    float fa[4], fb[4], ma[4], mb[4];
    for (int bi = 0; bi < 4; bi++) {
        int b = 4 * q + bi, j = 0;
        dq_int8 o;
        if (b < nb) {
            const uint8_t *blk = dq_sub_block(dt, row, b, &j);
            dq_int8_decode(dt, blk, j, &o);
        } else {
            memset(&o, 0, sizeof o);
        }
        memcpy(ua + 16 * bi, o.u, 16);
        memcpy(ub + 16 * bi, o.u + 16, 16);
        fa[bi] = o.f[0], fb[bi] = o.f[1], ma[bi] = o.mn[0], mb[bi] = o.mn[1];
    }
    ip_w w;
    w.wa = _mm512_loadu_si512(ua);
    w.wb = _mm512_loadu_si512(ub);
    w.fa = expand4(_mm_loadu_ps(fa));
    w.fb = expand4(_mm_loadu_ps(fb));
    w.ma = expand4(_mm_loadu_ps(ma));
    w.mb = expand4(_mm_loadu_ps(mb));
    return w;
}

/* Four bytes (one per sub-block) to f32 lanes, times d. */
AI __m128 bytes4_f32(uint32_t v, float d) {
    return _mm_mul_ps(_mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)v))), _mm_set1_ps(d));
}

/* Q4_K / Q5_K: quad qq of a super-block is its chunks 2qq, 2qq + 1 of 32 bytes at qs
 * (sub-blocks 4qq .. 4qq + 3: chunk low nibbles, then high), in w->wa / w->wb; the
 * 6-bit scales and mins of the 4 sub-blocks come out of the 12 packed bytes at blk + 4,
 * 4 at a time (q4k_scale_min's layout), into w->fa / w->ma. */
AI void k4_quad(const uint8_t *blk, const uint8_t *qs, int qq, ip_w *w) {
    __m512i z = _mm512_loadu_si512(qs + 64 * qq);
    const __m512i sh = _mm512_setr_epi64(0, 0, 0x0004000400040004ll, 0x0004000400040004ll, 0, 0,
                                         0x0004000400040004ll, 0x0004000400040004ll);
    const __m512i lo4 = _mm512_set1_epi8(0x0f);
    w->wa = _mm512_and_si512(_mm512_srlv_epi16(_mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(2, 2, 0, 0)), sh), lo4);
    w->wb = _mm512_and_si512(_mm512_srlv_epi16(_mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 3, 1, 1)), sh), lo4);
    uint32_t u0 = rd_u32(blk + 4), u1 = rd_u32(blk + 8), u2 = rd_u32(blk + 12), sc, m;
    if (qq == 0) {
        sc = u0 & 0x3f3f3f3fu;
        m = u1 & 0x3f3f3f3fu;
    } else {
        sc = (u2 & 0x0f0f0f0fu) | ((u0 >> 6) & 0x03030303u) << 4;
        m = ((u2 >> 4) & 0x0f0f0f0fu) | ((u1 >> 6) & 0x03030303u) << 4;
    }
    w->fa = w->fb = expand4(bytes4_f32(sc, h2f(blk)));
    w->ma = w->mb = _mm512_sub_ps(_mm512_setzero_ps(), expand4(bytes4_f32(m, h2f(blk + 2))));
}

AI ip_w dec_q4_k(const uint8_t *row, int q) {
    const uint8_t *blk = row + (size_t)(q / 2) * 144;
    ip_w w;
    k4_quad(blk, blk + 16, q % 2, &w);
    return w;
}

/* Q6_K: quad h of a super-block is its half of 128 values: low nibbles from ql[64h ..]
 * (sub-blocks 0, 1: bytes 0..31, 32..63 low; 2, 3: the same bytes high), 2 high bits
 * from qh[32h ..] (sub-block bi: bits 2bi), a signed scale per half of a sub-block. */
AI ip_w dec_q6_k(const uint8_t *row, int q) {
    const uint8_t *blk = row + (size_t)(q / 2) * 210;
    int h = q % 2;
    __m512i z = _mm512_loadu_si512(blk + 64 * h);
    const __m512i shl = _mm512_setr_epi64(0, 0, 0, 0, 0x0004000400040004ll, 0x0004000400040004ll,
                                          0x0004000400040004ll, 0x0004000400040004ll);
    const __m512i shh = _mm512_setr_epi64(0, 0, 0x0002000200020002ll, 0x0002000200020002ll, 0x0004000400040004ll,
                                          0x0004000400040004ll, 0x0006000600060006ll, 0x0006000600060006ll);
    const __m512i lo4 = _mm512_set1_epi8(0x0f), lo2 = _mm512_set1_epi8(0x03);
    const uint8_t *qh = blk + 128 + 32 * h;
    __m512i ha = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)qh));
    __m512i hb = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(qh + 16)));
    ha = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(ha, shh), lo2), 4);
    hb = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, shh), lo2), 4);
    ip_w w;
    w.wa = _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi16(_mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(2, 0, 2, 0)), shl), lo4), ha);
    w.wb = _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi16(_mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 3, 1)), shl), lo4), hb);
    float d = h2f(blk + 208);
    __m256 f8 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 192 + 8 * h)))),
                              _mm256_set1_ps(d));
    __m512 f = _mm512_castps256_ps512(f8);
    w.fa = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6), f);
    w.fb = _mm512_permutexvar_ps(_mm512_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3, 5, 5, 5, 5, 7, 7, 7, 7), f);
    w.ma = _mm512_mul_ps(w.fa, _mm512_set1_ps(-32.0f));
    w.mb = _mm512_mul_ps(w.fb, _mm512_set1_ps(-32.0f));
    return w;
}

/* Q5_0 / Q5_1 (and IQ4_NL): 4 blocks of 32 (a last partial quad reads only its kb
 * blocks, the others stay zero); the 16 bytes of nibbles of block bi in lane bi. */
AI __m512i nibbles4(const uint8_t *b0, int bb, int off, int kb) {
    /* masked-off bytes are never read: a partial quad may end the mapping */
#define NIB(bi) _mm_maskz_loadu_epi8(kb > (bi) ? (__mmask16)0xffff : 0, b0 + (bi) * bb + off)
    __m512i z = _mm512_inserti32x4(_mm512_castsi128_si512(NIB(0)), NIB(1), 1);
    return _mm512_inserti32x4(_mm512_inserti32x4(z, NIB(2), 2), NIB(3), 3);
#undef NIB
}

/* The f16 at p as f32 if ok, else 0. */
AI float h2f_if(const uint8_t *p, int ok) { return ok ? h2f(p) : 0.0f; }

/* h2f4 for the first kb of the 4 (the others 0). */
AI __m128 h2f4_part(const uint8_t *p, int stride, int kb) {
    if (kb == 4) return h2f4(p, stride);
    return _mm_setr_ps(h2f_if(p, kb > 0), h2f_if(p + stride, kb > 1), h2f_if(p + 2 * stride, kb > 2), 0.0f);
}

/* Q5_0 / Q5_1: the fifth bits of the 16 values of each half go in by a byte mask. */
AI ip_w dec_q5(dtype dt, const uint8_t *row, int q, int nb) {
    int v1 = dt == DT_Q5_1, bb = v1 ? 24 : 22, kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
    const uint8_t *b0 = row + (size_t)q * 4 * bb;
    uint64_t ka = 0, kbm = 0;
    UNROLL for (int bi = 0; bi < 4; bi++) {
        uint32_t qh = bi < kb ? rd_u32(b0 + bb * bi + 2 + 2 * v1) : 0;
        ka |= (uint64_t)(qh & 0xffffu) << (16 * bi);
        kbm |= (uint64_t)(qh >> 16) << (16 * bi);
    }
    __m128 f4 = h2f4_part(b0, bb, kb), m4 = v1 ? h2f4_part(b0 + 2, bb, kb) : _mm_setzero_ps();
    __m512i z = nibbles4(b0, bb, 6 + 2 * v1, kb);
    const __m512i lo4 = _mm512_set1_epi8(0x0f), b16 = _mm512_set1_epi8(0x10);
    __m512i lo = _mm512_and_si512(z, lo4), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), lo4);
    ip_w w;
    w.wa = _mm512_or_si512(lo, _mm512_maskz_mov_epi8((__mmask64)ka, b16));
    w.wb = _mm512_or_si512(hi, _mm512_maskz_mov_epi8((__mmask64)kbm, b16));
    w.fa = w.fb = expand4(f4);
    w.ma = w.mb = v1 ? expand4(m4) : _mm512_mul_ps(w.fa, _mm512_set1_ps(-16.0f));
    return w;
}

/* IQ4: nibbles through the 16-entry grid, as kvalues + 128 (unsigned). */
AI __m512i iq4_lut(__m512i idx) {
    const __m512i t = _mm512_broadcast_i32x4(
        _mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141, (char)153, (char)166, (char)181,
                      (char)197, (char)217, (char)241));
    return _mm512_shuffle_epi8(t, idx);
}

AI ip_w dec_iq4_nl(const uint8_t *row, int q, int nb) {
    int kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
    const uint8_t *b0 = row + (size_t)q * 4 * 18;
    __m128 f4 = h2f4_part(b0, 18, kb);
    __m512i z = nibbles4(b0, 18, 2, kb);
    const __m512i lo4 = _mm512_set1_epi8(0x0f);
    __mmask64 live = kb == 4 ? ~(__mmask64)0 : (((__mmask64)1 << (16 * kb)) - 1);
    ip_w w; /* absent blocks: u = 0, not the grid's value of nibble 0 */
    w.wa = _mm512_maskz_mov_epi8(live, iq4_lut(_mm512_and_si512(z, lo4)));
    w.wb = _mm512_maskz_mov_epi8(live, iq4_lut(_mm512_and_si512(_mm512_srli_epi16(z, 4), lo4)));
    w.fa = w.fb = expand4(f4);
    w.ma = w.mb = _mm512_mul_ps(w.fa, _mm512_set1_ps(-128.0f));
    return w;
}

/* MXFP4: IQ4_NL's decoding with the doubled E2M1 grid (+ 128) and an E8M0 scale byte per block. */
AI ip_w dec_mxfp4(const uint8_t *row, int q, int nb) {
    int kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
    const uint8_t *b0 = row + (size_t)q * 4 * 17;
    __m128 f4 = _mm_setr_ps(mxfp4_scale(b0[0]), kb > 1 ? mxfp4_scale(b0[17]) : 0.0f,
                            kb > 2 ? mxfp4_scale(b0[34]) : 0.0f, kb > 3 ? mxfp4_scale(b0[51]) : 0.0f);
    __m512i z = nibbles4(b0, 17, 1, kb);
    const __m512i lo4 = _mm512_set1_epi8(0x0f);
    const __m512i t = _mm512_broadcast_i32x4(_mm_setr_epi8((char)128, (char)129, (char)130, (char)131, (char)132,
                                                           (char)134, (char)136, (char)140, (char)128, 127, 126, 125,
                                                           124, 122, 120, 116));
    __mmask64 live = kb == 4 ? ~(__mmask64)0 : (((__mmask64)1 << (16 * kb)) - 1);
    ip_w w; /* absent blocks: u = 0 */
    w.wa = _mm512_maskz_mov_epi8(live, _mm512_shuffle_epi8(t, _mm512_and_si512(z, lo4)));
    w.wb = _mm512_maskz_mov_epi8(live, _mm512_shuffle_epi8(t, _mm512_and_si512(_mm512_srli_epi16(z, 4), lo4)));
    w.fa = w.fb = expand4(f4);
    w.ma = w.mb = _mm512_mul_ps(w.fa, _mm512_set1_ps(-128.0f));
    return w;
}

/* IQ4_XS: sub-block j's 16 bytes at qs + 16 j, so quad qq is 64 contiguous bytes. */
AI ip_w dec_iq4_xs(const uint8_t *row, int q) {
    const uint8_t *blk = row + (size_t)(q / 2) * 136;
    int qq = q % 2, sh = rd_u16(blk + 2);
    __m512i z = _mm512_loadu_si512(blk + 8 + 64 * qq);
    const __m512i lo4 = _mm512_set1_epi8(0x0f);
    float d = h2f(blk);
#define LS(bi) (float)((((blk[4 + (4 * qq + (bi)) / 2] >> (4 * ((bi) % 2))) & 15) | ((sh >> (2 * (4 * qq + (bi)))) & 3) << 4) - 32)
    __m128 f4 = _mm_mul_ps(_mm_setr_ps(LS(0), LS(1), LS(2), LS(3)), _mm_set1_ps(d));
#undef LS
    ip_w w;
    w.wa = iq4_lut(_mm512_and_si512(z, lo4));
    w.wb = iq4_lut(_mm512_and_si512(_mm512_srli_epi16(z, 4), lo4));
    w.fa = w.fb = expand4(f4);
    w.ma = w.mb = _mm512_mul_ps(w.fa, _mm512_set1_ps(-128.0f));
    return w;
}

/* Q5_K: Q4_K's nibbles and scales, plus bit j of qh[l] as bit 4 of sub-block j's value l. */
AI ip_w dec_q5_k(const uint8_t *row, int q) {
    const uint8_t *blk = row + (size_t)(q / 2) * 176;
    int qq = q % 2;
    const __m512i one = _mm512_set1_epi8(1);
    const __m512i hs = _mm512_add_epi64(_mm512_set1_epi64(0x0001000100010001ll * 4 * qq),
                                        _mm512_setr_epi64(0, 0, 0x0001000100010001ll, 0x0001000100010001ll,
                                                          0x0002000200020002ll, 0x0002000200020002ll,
                                                          0x0003000300030003ll, 0x0003000300030003ll));
    __m512i ha = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(blk + 16)));
    __m512i hb = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(blk + 32)));
    ip_w w;
    k4_quad(blk, blk + 48, qq, &w);
    w.wa = _mm512_or_si512(w.wa, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(ha, hs), one), 4));
    w.wb = _mm512_or_si512(w.wb, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, hs), one), 4));
    return w;
}

/* Q2_K / Q3_K: quad h is the super-block's half of 128 values; sub-block bi of it takes
 * bits 2 bi of qs[32 h + l] (and Q3_K bit 4 h + bi of hmask[l] as +4). */
AI ip_w dec_q23_k(dtype dt, const uint8_t *row, int q) {
    int k3 = dt == DT_Q3_K, h = q % 2;
    const uint8_t *blk = row + (size_t)(q / 2) * (k3 ? 110 : 84), *qs = blk + (k3 ? 32 : 16) + 32 * h;
    const __m512i sh2 = _mm512_setr_epi64(0, 0, 0x0002000200020002ll, 0x0002000200020002ll, 0x0004000400040004ll,
                                          0x0004000400040004ll, 0x0006000600060006ll, 0x0006000600060006ll);
    const __m512i three = _mm512_set1_epi8(3), one = _mm512_set1_epi8(1);
    ip_w w;
    w.wa = _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)qs)), sh2), three);
    w.wb = _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(qs + 16))), sh2), three);
    __m128 fa, fb, ma, mb; /* built in registers: 4 stores and a vector load would stall store forwarding */
    if (k3) {
        const __m512i hs = _mm512_add_epi64(_mm512_set1_epi64(0x0001000100010001ll * 4 * h),
                                            _mm512_setr_epi64(0, 0, 0x0001000100010001ll, 0x0001000100010001ll,
                                                              0x0002000200020002ll, 0x0002000200020002ll,
                                                              0x0003000300030003ll, 0x0003000300030003ll));
        __m512i ha = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)blk));
        __m512i hb = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(blk + 16)));
        w.wa = _mm512_or_si512(w.wa, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(ha, hs), one), 2));
        w.wb = _mm512_or_si512(w.wb, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, hs), one), 2));
        /* half-scales 8h .. 8h + 7, (2 bi, 2 bi + 1) for bi = 0..3, as inplace_avx2.c builds them:
         * q3k_scale(8h + k) has its low 4 bits in byte k (h: high nibble) and its high 2 in byte
         * 8 + k % 4 at bits 2 (2h + k / 4); minus 32. 8 bytes in a general register, then one
         * conversion (8 scalar q3k_scale calls and vector inserts before) */
        uint64_t lo = rd_u64(blk + 96), h2 = rd_u32(blk + 104);
        lo = (h ? lo >> 4 : lo) & 0x0f0f0f0f0f0f0f0full;
        uint64_t hi = ((h2 >> (4 * h)) & 0x03030303u) | ((h2 >> (4 * h + 2)) & 0x03030303u) << 32;
        __m256i s8 = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)(lo | hi << 4))), _mm256_set1_epi32(32));
        __m256 f8 = _mm256_mul_ps(_mm256_cvtepi32_ps(s8), _mm256_set1_ps(h2f(blk + 108)));
        f8 = _mm256_permutevar8x32_ps(f8, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7)); /* first halves, then second */
        fa = _mm256_castps256_ps128(f8);
        fb = _mm256_extractf128_ps(f8, 1);
        ma = _mm_mul_ps(fa, _mm_set1_ps(-4.0f));
        mb = _mm_mul_ps(fb, _mm_set1_ps(-4.0f));
    } else {
        __m128 d = _mm_set1_ps(h2f(blk + 80)), dmin = _mm_set1_ps(h2f(blk + 82));
        __m128i s8 = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)rd_u32(blk + 8 * h)));     /* bi 0, 1 halves */
        __m128i s8b = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)rd_u32(blk + 8 * h + 4))); /* bi 2, 3 */
        __m128i ev = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(s8), _mm_castsi128_ps(s8b), _MM_SHUFFLE(2, 0, 2, 0)));
        __m128i od = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(s8), _mm_castsi128_ps(s8b), _MM_SHUFFLE(3, 1, 3, 1)));
        const __m128i lo = _mm_set1_epi32(15);
        fa = _mm_mul_ps(d, _mm_cvtepi32_ps(_mm_and_si128(ev, lo)));
        fb = _mm_mul_ps(d, _mm_cvtepi32_ps(_mm_and_si128(od, lo)));
        ma = _mm_sub_ps(_mm_setzero_ps(), _mm_mul_ps(dmin, _mm_cvtepi32_ps(_mm_srli_epi32(ev, 4))));
        mb = _mm_sub_ps(_mm_setzero_ps(), _mm_mul_ps(dmin, _mm_cvtepi32_ps(_mm_srli_epi32(od, 4))));
    }
    w.fa = expand4(fa);
    w.fb = expand4(fb);
    w.ma = expand4(ma);
    w.mb = expand4(mb);
    return w;
}

AI ip_w ip_decode(dtype dt, const uint8_t *row, int q, int nb) {
    switch (dt) {
    case DT_Q4_K: return dec_q4_k(row, q);
    case DT_Q5_K: return dec_q5_k(row, q);
    case DT_Q6_K: return dec_q6_k(row, q); /* exact mode only: fast mode packs Q6_K */
    case DT_Q5_0:
    case DT_Q5_1: return dec_q5(dt, row, q, nb);
    case DT_Q2_K:
    case DT_Q3_K: return dec_q23_k(dt, row, q);
    case DT_IQ4_NL: return dec_iq4_nl(row, q, nb);
    case DT_IQ4_XS: return dec_iq4_xs(row, q);
    case DT_MXFP4: return dec_mxfp4(row, q, nb);
    default: return dec_generic(dt, row, q, nb);
    }
}

/* ---- the matmul ---------------------------------------------------------------------- */

/* acc += one quad of one row against one token. */
AI __m512 ip_step(dtype dt, const ip_w *w, const ip_x *x, const int8_t *xq, __m512 acc) {
    __m512i xa = _mm512_loadu_si512(xq), xb = _mm512_loadu_si512(xq + 64);
    int off = ip_off(dt) != 0; /* offset types: no min term, the sums start at -offset * sum(q) */
    if (ip_halves(dt)) {
        __m512i ia = _mm512_dpbusd_epi32(off ? x->na : _mm512_setzero_si512(), w->wa, xa);
        __m512i ib = _mm512_dpbusd_epi32(off ? x->nb : _mm512_setzero_si512(), w->wb, xb);
        acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(ia), x->dx), w->fa, acc);
        acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(ib), x->dx), w->fb, acc);
        if (off) return acc;
        acc = _mm512_fmadd_ps(w->ma, x->sa, acc);
        return _mm512_fmadd_ps(w->mb, x->sb, acc);
    }
    __m512i i = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(off ? x->n : _mm512_setzero_si512(), w->wa, xa), w->wb, xb);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(i), x->dx), w->fa, acc);
    return off ? acc : _mm512_fmadd_ps(w->ma, x->s, acc);
}

/* avx512.c's lane-summing tree. */
AI float ip_reduce(__m512 v) {
    __m256 s8 = _mm256_add_ps(_mm512_extractf32x8_ps(v, 1), _mm512_castps512_ps256(v));
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(s8, 1), _mm256_castps256_ps128(s8));
    s = _mm_add_ps(_mm_movehl_ps(s, s), s);
    s = _mm_add_ss(_mm_movehdup_ps(s), s);
    return _mm_cvtss_f32(s);
}

/* Decode: rows r .. r + R - 1 (R <= IP_GEMV_R) x one token, the rows' quads decoded
 * side by side (independent chains for the out-of-order core, one load of the
 * activations per quad). Each row's accumulator runs ip_row's operations. */
#define IP_GEMV_R 1 /* 2 and 4 rows side by side measured 10-15% slower on SmolLM2 Q4_K_M decode (register spills) */
#define IP_PF 2048 /* software prefetch distance in the rows' stream (bytes) */
AI void ip_rows(dtype dt, const uint8_t *row, size_t rb, int nb, int quads, const q8_act *x, const ip_x *xs, float *y,
                int r, int R) {
    __m512 acc[IP_GEMV_R];
    UNROLL for (int i = 0; i < R; i++) acc[i] = _mm512_setzero_ps();
    for (int q = 0; q < quads; q++) {
        UNROLL for (int i = 0; i < R; i++) _mm_prefetch((const char *)row + (size_t)i * rb + (size_t)q * rb / (size_t)quads + IP_PF, _MM_HINT_T0);
        UNROLL for (int i = 0; i < R; i++) {
            ip_w w = ip_decode(dt, row + (size_t)i * rb, q, nb);
            acc[i] = ip_step(dt, &w, &xs[q], x->q + 128 * (size_t)q, acc[i]);
        }
    }
    UNROLL for (int i = 0; i < R; i++) y[r + i] = ip_reduce(acc[i]);
}

/* Row r x tokens [t0, t0 + T), the activation side of those tokens in xs (quads each). */
AI void ip_row(dtype dt, const uint8_t *row, int nb, int quads, const q8_act *x, int t0, int T,
               const ip_x *xs, float *y, int ldy, int r) {
    __m512 acc[IP_T];
    UNROLL for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int q = 0; q < quads; q++) {
        ip_w w = ip_decode(dt, row, q, nb);
        UNROLL for (int t = 0; t < T; t++)
            acc[t] = ip_step(dt, &w, &xs[(size_t)t * quads + q], x->q + (size_t)(t0 + t) * x->quads * 128 + 128 * (size_t)q,
                             acc[t]);
    }
    UNROLL for (int t = 0; t < T; t++) y[(size_t)(t0 + t) * ldy + r] = ip_reduce(acc[t]);
}

/* Inlined into each type's entry point, so that every branch on dt is decided at compile time. */
/* Decode (one token): the activation side once, then row after row. */
AI void ip_gemv(dtype dt, const uint8_t *w, size_t rb, int nb, int quads, int r0, int r1, const q8_act *x, float *y) {
    ip_x stack[IP_STACK_QUADS]; /* its own frame: prefill's 4x larger one cuts decode to a third (IQ4_XS) */
    ip_x *xs = quads <= IP_STACK_QUADS ? stack : aligned_alloc(64, sizeof(ip_x) * (size_t)quads);
    if (!xs) { /* out of memory: the scalar reference needs none */
        kernels_scalar()->matmul_q8[dt](w, r1, nb * 32, r0, r1, x, y, r1);
        return;
    }
    ip_prep(dt, x, 0, quads, xs);
    for (int r = r0; r < r1; r++) ip_rows(dt, w + (size_t)r * rb, rb, nb, quads, x, xs, y, r, 1);
    if (xs != stack) free(xs);
}

/* Prefill: blocks of IP_RB rows x tiles of IP_T tokens, the tile's activation side rebuilt per block. */
AI void ip_gemm(dtype dt, const uint8_t *wb, size_t rb, int nb, int quads, int r0, int r1, const q8_act *x, float *y,
                int ldy) {
    ip_x stack[IP_STACK_QUADS * IP_T];
    ip_x *xs = quads <= IP_STACK_QUADS ? stack : aligned_alloc(64, sizeof(ip_x) * (size_t)quads * IP_T);
    if (!xs) {
        kernels_scalar()->matmul_q8[dt](wb, r1, nb * 32, r0, r1, x, y, ldy);
        return;
    }
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
    if (xs != stack) free(xs);
}

AI void ip_matmul(dtype dt, const void *w, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    int nb = cols / 32, quads = (nb + 3) / 4;
    size_t rb = dtype_row_bytes(dt, cols);
    if (x->nt == 1)
        ip_gemv(dt, w, rb, nb, quads, r0, r1, x, y);
    else
        ip_gemm(dt, w, rb, nb, quads, r0, r1, x, y, ldy);
}

/* ---- exact mode: the same decoders, f32 activations --------------------------------
 *
 * Each weight is fma(f, u, mn): f * u is exact and mn = -offset * f or a K-quant's
 * -dmin * m, so the one rounding gives exactly gguf-py's value (dequant.h), and
 * the accumulation is avx512.c's dense order (16 lanes, columns 32b..32b+15 then
 * 32b+16..32b+31, block after block): bit for bit the F32 kernel on the
 * dequantized matrix (tested), like the other quantized types. */
#define XT_R 4
#define XT_T 4

AI __m512 lane_of(__m512 v, int bi) { return _mm512_permutexvar_ps(_mm512_set1_epi32(4 * bi), v); }

AI __m512 u8_f32(__m512i v, int bi) {
    __m128i b = bi == 0 ? _mm512_extracti32x4_epi32(v, 0)
                : bi == 1 ? _mm512_extracti32x4_epi32(v, 1)
                : bi == 2 ? _mm512_extracti32x4_epi32(v, 2)
                          : _mm512_extracti32x4_epi32(v, 3);
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
}

AI void xt_tile(dtype dt, const uint8_t *w, size_t rb, int cols, const float *x, int ldx, float *y, int ldy, int R,
                int T) {
    int nb = cols / 32, quads = (nb + 3) / 4;
    __m512 acc[XT_R][XT_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    for (int q = 0; q < quads; q++) {
        int kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
        UNROLL for (int r = 0; r < R; r++) {
            ip_w d = ip_decode(dt, w + (size_t)r * rb, q, nb);
            UNROLL for (int bi = 0; bi < 4; bi++) {
                if (bi >= kb) break;
                __m512 lo = _mm512_fmadd_ps(lane_of(d.fa, bi), u8_f32(d.wa, bi), lane_of(d.ma, bi));
                __m512 hi = _mm512_fmadd_ps(lane_of(d.fb, bi), u8_f32(d.wb, bi), lane_of(d.mb, bi));
                const float *xb = x + 32 * (size_t)(4 * q + bi);
                UNROLL for (int t = 0; t < T; t++) {
                    acc[r][t] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(xb + (size_t)t * ldx), acc[r][t]);
                    acc[r][t] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(xb + (size_t)t * ldx + 16), acc[r][t]);
                }
            }
        }
    }
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) y[(size_t)t * ldy + r] = ip_reduce(acc[r][t]);
}

AI void xt_matmul(dtype dt, const void *w, size_t rb, int cols, int r0, int r1, const float *x, int ldx, int nt, float *y,
                  int ldy) {
    const uint8_t *wb = w;
    int r = r0;
    for (; r + XT_R <= r1; r += XT_R) {
        int t = 0;
        for (; t + XT_T <= nt; t += XT_T)
            xt_tile(dt, wb + (size_t)r * rb, rb, cols, x + (size_t)t * ldx, ldx, y + (size_t)t * ldy + r, ldy, XT_R, XT_T);
        for (; t < nt; t++) xt_tile(dt, wb + (size_t)r * rb, rb, cols, x + (size_t)t * ldx, ldx, y + (size_t)t * ldy + r, ldy, XT_R, 1);
    }
    for (; r < r1; r++) {
        int t = 0;
        for (; t + XT_T <= nt; t += XT_T)
            xt_tile(dt, wb + (size_t)r * rb, rb, cols, x + (size_t)t * ldx, ldx, y + (size_t)t * ldy + r, ldy, 1, XT_T);
        for (; t < nt; t++) xt_tile(dt, wb + (size_t)r * rb, rb, cols, x + (size_t)t * ldx, ldx, y + (size_t)t * ldy + r, ldy, 1, 1);
    }
}

#define XT_MATMUL(NAME, DT)                                                                                      \
    void NAME(const void *w, size_t rb, int cols, int r0, int r1, const float *x, int ldx, int nt, float *y,   \
              int ldy) {                                                                                         \
        xt_matmul(DT, w, rb, cols, r0, r1, x, ldx, nt, y, ldy);                                                  \
    }
XT_MATMUL(exact_avx512_q5_0, DT_Q5_0)
XT_MATMUL(exact_avx512_q5_1, DT_Q5_1)
XT_MATMUL(exact_avx512_q2_k, DT_Q2_K)
XT_MATMUL(exact_avx512_q3_k, DT_Q3_K)
XT_MATMUL(exact_avx512_q4_k, DT_Q4_K)
XT_MATMUL(exact_avx512_q5_k, DT_Q5_K)
XT_MATMUL(exact_avx512_q6_k, DT_Q6_K)
XT_MATMUL(exact_avx512_iq4_nl, DT_IQ4_NL)
XT_MATMUL(exact_avx512_iq4_xs, DT_IQ4_XS)
XT_MATMUL(exact_avx512_mxfp4, DT_MXFP4)

#define IP_MATMUL(NAME, DT)                                                                                      \
    void NAME(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {          \
        (void)rows;                                                                                              \
        ip_matmul(DT, w, cols, r0, r1, x, y, ldy);                                                               \
    }
IP_MATMUL(inplace_avx512_q2_k, DT_Q2_K)
IP_MATMUL(inplace_avx512_q3_k, DT_Q3_K)
IP_MATMUL(inplace_avx512_q5_k, DT_Q5_K)
IP_MATMUL(inplace_avx512_iq4_nl, DT_IQ4_NL)
IP_MATMUL(inplace_avx512_iq4_xs, DT_IQ4_XS)
IP_MATMUL(inplace_avx512_mxfp4, DT_MXFP4)

#else
typedef int inplace_avx512_not_built; /* keeps the translation unit non-empty */
#endif
