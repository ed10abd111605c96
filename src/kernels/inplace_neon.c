/* inplace_neon.c - fast mode's int8-activation matmuls (AArch64 Advanced SIMD) for
 * the GGUF types read in place: Q2_K Q3_K Q5_K IQ4_NL IQ4_XS MXFP4 (the
 * contract and the decoding are in dequant.h; scalar.c has the reference; fast
 * mode packs Q6_K and Q4_K, neon.c).
 *
 * The shape of inplace_avx512.c on 128-bit registers: a quad (4 sub-blocks, 128
 * columns) is decoded into 8 q registers, a[bi] = values 0..15 and b[bi] = values
 * 16..31 of sub-block bi, which meet the activations' 16-byte block halves as they
 * are stored (kernels.h). A product leaves, in int32 lane k of register bi, the
 * sum of bytes 4k..4k+3: the 16 lanes (4 registers) hold exactly the integers of
 * inplace_avx512.c's vpdpbusd, so its per-lane f32 steps and avx512.c's
 * lane-summing tree are the same too. The offset types (Q3_K 4, IQ4 128) start their
 * integer sums at -offset * sum(q) instead of a min term, as inplace_avx512.c does.
 * Every (row, token) output runs the same operations whatever the row range, the
 * token count or the tile.
 *
 * Exact integer sums: sdot (vdotq_s32) where the CPU has the dot-product extension
 * (checked at run time as in neon.c), else vmull_s8 + vpadalq_s16 (each product
 * fits int16, pairs are summed in int32, one vpaddq_s32 forms the lanes of 4). Both
 * multiply signed bytes: u <= 63 is a valid int8 as it is, and IQ4's u =
 * kvalue + 128 (up to 241) is decoded to the signed kvalue instead, whose sums are
 * the offset type's sum(u q) - 128 sum(q) themselves (no start). */
#include "kernels.h"

#include "dequant.h"

#if defined(__aarch64__)

#include <arm_neon.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "inplace_kernels.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

/* Tokens per prefill tile: a decoded quad with its scales is up to 24 of the 32
 * registers. Chosen by register count, not measured (no ARM machine here). */
#define IP_T 2
#define IP_RB 8 /* rows per block: the activation side is rebuilt per block of rows in prefill */
#define IP_STACK_QUADS 64
#define IP_PF 2048 /* prefetch distance in a row's stream (bytes), inplace_avx512.c's; not measured here */

/* 16 lanes as 4 registers, lanes 4bi..4bi+3 in q[bi] (sub-block bi of the quad). */
typedef struct {
    float32x4_t q[4];
} v16;

/* The activation side of one quad for one token. */
typedef struct {
    v16 dx, sa, sb, s;            /* block scale per lane; dx times the lanes' sums of q (halves, both) */
    int32x4_t na[4], nb[4], n[4]; /* -offset times the lanes' sums of q: the int8 sums' start */
} ip_x;

/* One quad of one row, decoded: weights of the halves (u, or IQ4's signed kvalues),
 * scale and min per lane. */
typedef struct {
    int8x16_t a[4], b[4];
    v16 fa, fb, ma, mb;
} ip_w;

AI int ip_halves(dtype dt) { return dt == DT_Q2_K || dt == DT_Q3_K; }
AI int ip_iq4(dtype dt) { return dt == DT_IQ4_NL || dt == DT_IQ4_XS || dt == DT_MXFP4; }
/* The offset the types without a min subtract from u (dequant.h folds it into mn). */
AI int ip_off(dtype dt) {
    return dt == DT_Q3_K ? 4 : ip_iq4(dt) ? 128 : 0;
}

/* 4 f32 (one per sub-block) spread over 16 lanes: lanes 4b..4b+3 = v[b]. */
AI v16 expand4(float32x4_t v) {
    return (v16){{vdupq_laneq_f32(v, 0), vdupq_laneq_f32(v, 1), vdupq_laneq_f32(v, 2), vdupq_laneq_f32(v, 3)}};
}
AI v16 v16_mul(v16 a, v16 b) {
    UNROLL for (int i = 0; i < 4; i++) a.q[i] = vmulq_f32(a.q[i], b.q[i]);
    return a;
}
AI v16 v16_muln(v16 a, float f) {
    UNROLL for (int i = 0; i < 4; i++) a.q[i] = vmulq_n_f32(a.q[i], f);
    return a;
}
AI v16 v16_add(v16 a, v16 b) {
    UNROLL for (int i = 0; i < 4; i++) a.q[i] = vaddq_f32(a.q[i], b.q[i]);
    return a;
}
/* a * b + c, fused. */
AI v16 v16_fma(v16 a, v16 b, v16 c) {
    UNROLL for (int i = 0; i < 4; i++) c.q[i] = vfmaq_f32(c.q[i], a.q[i], b.q[i]);
    return c;
}
AI v16 v16_zero(void) {
    v16 z;
    UNROLL for (int i = 0; i < 4; i++) z.q[i] = vdupq_n_f32(0.0f);
    return z;
}

/* Lane k = sum of bytes 4k..4k+3 of x (exact: |sum| <= 508). */
AI int32x4_t sum4_s8(int8x16_t x) { return vpaddlq_s16(vpaddlq_s8(x)); }

/* -offset times v (offset a power of two). */
AI int32x4_t neg_off(dtype dt, int32x4_t v) {
    int32x4_t m = vdupq_n_s32(dt == DT_Q3_K ? -4 : -128);
    return vmulq_s32(v, m);
}

AI void ip_prep(dtype dt, const q8_act *x, int t, int quads, ip_x *out) {
    const int8_t *q = x->q + (size_t)t * x->quads * 128;
    const float *d = x->d + (size_t)t * x->quads * 4;
    for (int k = 0; k < quads; k++) {
        const int8_t *p = q + 128 * (size_t)k;
        const float *dk = d + 4 * k;
        v16 dx = expand4(vld1q_f32(dk));
        out[k].dx = dx;
        UNROLL for (int bi = 0; bi < 4; bi++) {
            int32x4_t sa = sum4_s8(vld1q_s8(p + 16 * bi)), sb = sum4_s8(vld1q_s8(p + 64 + 16 * bi));
            out[k].sa.q[bi] = vmulq_f32(vcvtq_f32_s32(sa), dx.q[bi]);
            out[k].sb.q[bi] = vmulq_f32(vcvtq_f32_s32(sb), dx.q[bi]);
            out[k].s.q[bi] = vaddq_f32(out[k].sa.q[bi], out[k].sb.q[bi]);
            out[k].na[bi] = neg_off(dt, sa);
            out[k].nb[bi] = neg_off(dt, sb);
            out[k].n[bi] = vaddq_s32(out[k].na[bi], out[k].nb[bi]);
        }
    }
}

/* ---- the integer products ----------------------------------------------------------- */

/* acc lane k += sum_j w[4k + j] * x[4k + j] (one sdot). */
typedef int32x4_t (*sdot_fn)(int32x4_t acc, int8x16_t w, int8x16_t x);

/* Only this function contains the extension's instruction; the generic code gets it as
 * a pointer that is a constant in the dotprod entry points (which carry the same target
 * attribute, so it is inlined there), NULL in the plain ones (neon.c does the same). */
#define DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
DOTPROD AI int32x4_t sdot16(int32x4_t acc, int8x16_t w, int8x16_t x) { return vdotq_s32(acc, w, x); }

/* Without sdot: pair sums of the low 8 and the high 8 products, kept apart until the end. */
typedef struct {
    int32x4_t lo, hi;
} pairs;

AI pairs pairs_add(pairs p, int8x16_t w, int8x16_t x) {
    p.lo = vpadalq_s16(p.lo, vmull_s8(vget_low_s8(w), vget_low_s8(x)));
    p.hi = vpadalq_s16(p.hi, vmull_high_s8(w, x));
    return p;
}

/* Lane k = sum of the products of bytes 4k..4k+3 of (w1, x1) and, if two, of (w2, x2). */
AI int32x4_t dot_lanes(sdot_fn sd, int two, int8x16_t w1, int8x16_t x1, int8x16_t w2, int8x16_t x2) {
    if (sd) {
        int32x4_t acc = sd(vdupq_n_s32(0), w1, x1);
        return two ? sd(acc, w2, x2) : acc;
    }
    pairs p = {vdupq_n_s32(0), vdupq_n_s32(0)};
    p = pairs_add(p, w1, x1);
    if (two) p = pairs_add(p, w2, x2);
    return vpaddq_s32(p.lo, p.hi);
}

/* ---- decoders ---------------------------------------------------------------------- */

AI float h2f(const uint8_t *p) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(rd_u16(p)))), 0); }

/* The f16s at p, p + stride, ... (4 of them) as f32. */
AI float32x4_t h2f4(const uint8_t *p, int stride) {
    uint16_t h[4] = {rd_u16(p), rd_u16(p + stride), rd_u16(p + 2 * stride), rd_u16(p + 3 * stride)};
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

/* Four bytes (one per sub-block) to f32 lanes, times d. */
AI float32x4_t bytes4_f32(uint32_t v, float d) {
    uint16x8_t w = vmovl_u8(vcreate_u8((uint64_t)v));
    return vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(w))), d);
}

/* 8 per-half values (index 2 bi + half, as Q2_K / Q3_K store their scales) in f0
 * (0..3) and f1 (4..7), spread to the lanes of the a halves and of the b halves. */
AI void spread_halves(float32x4_t f0, float32x4_t f1, v16 *fa, v16 *fb) {
    *fa = (v16){{vdupq_laneq_f32(f0, 0), vdupq_laneq_f32(f0, 2), vdupq_laneq_f32(f1, 0), vdupq_laneq_f32(f1, 2)}};
    *fb = (v16){{vdupq_laneq_f32(f0, 1), vdupq_laneq_f32(f0, 3), vdupq_laneq_f32(f1, 1), vdupq_laneq_f32(f1, 3)}};
}

/* 8 bytes (packed in v) minus `off` as f32 times d: bytes 0..3 in *f0, 4..7 in *f1. */
AI void bytes8_f32(uint64_t v, int off, float d, float32x4_t *f0, float32x4_t *f1) {
    int16x8_t w = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vcreate_u8(v))), vdupq_n_s16((int16_t)off));
    *f0 = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(w))), d);
    *f1 = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(w)), d);
}

AI int8x16_t s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }
AI uint8x16_t lo_nib(uint8x16_t v) { return vandq_u8(v, vdupq_n_u8(0x0f)); }
/* Bit `bit` of each byte of v moved to bit `to` (shift left if positive), others 0. */
AI uint8x16_t bit_to(uint8x16_t v, int bit, int to) {
    return vandq_u8(vshlq_u8(v, vdupq_n_s8((int8_t)(to - bit))), vdupq_n_u8((uint8_t)(1u << to)));
}

/* Q4_K / Q5_K: quad qq of a super-block is its chunks 2qq, 2qq + 1 of 32 bytes (sub-blocks
 * 4qq .. 4qq + 3: chunk low nibbles, then high); Q5_K adds bit j of qh[l] as bit 4 of
 * sub-block j's value l. The 6-bit scales and mins of the 4 sub-blocks come out of the 12
 * packed bytes 4 at a time (q4k_scale_min's layout). */
AI ip_w dec_q45_k(dtype dt, const uint8_t *row, int q) {
    int k5 = dt == DT_Q5_K, qq = q % 2;
    const uint8_t *blk = row + (size_t)(q / 2) * (k5 ? 176 : 144);
    const uint8_t *qs = blk + (k5 ? 48 : 16) + 64 * qq;
    ip_w w;
    UNROLL for (int c = 0; c < 2; c++) {
        uint8x16_t z0 = vld1q_u8(qs + 32 * c), z1 = vld1q_u8(qs + 32 * c + 16);
        uint8x16_t a0 = lo_nib(z0), b0 = lo_nib(z1), a1 = vshrq_n_u8(z0, 4), b1 = vshrq_n_u8(z1, 4);
        if (k5) {
            uint8x16_t h0 = vld1q_u8(blk + 16), h1 = vld1q_u8(blk + 32);
            int j = 4 * qq + 2 * c;
            a0 = vorrq_u8(a0, bit_to(h0, j, 4));
            b0 = vorrq_u8(b0, bit_to(h1, j, 4));
            a1 = vorrq_u8(a1, bit_to(h0, j + 1, 4));
            b1 = vorrq_u8(b1, bit_to(h1, j + 1, 4));
        }
        w.a[2 * c] = s8(a0), w.b[2 * c] = s8(b0), w.a[2 * c + 1] = s8(a1), w.b[2 * c + 1] = s8(b1);
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
    w.ma = w.mb = expand4(vsubq_f32(vdupq_n_f32(0.0f), bytes4_f32(m, dmin)));
    return w;
}

/* Q2_K / Q3_K: quad h is the super-block's half of 128 values; sub-block bi of it takes
 * bits 2 bi of qs[32 h + l] (and Q3_K bit 4 h + bi of hmask[l] as +4). */
AI ip_w dec_q23_k(dtype dt, const uint8_t *row, int q) {
    int k3 = dt == DT_Q3_K, h = q % 2;
    const uint8_t *blk = row + (size_t)(q / 2) * (k3 ? 110 : 84), *qs = blk + (k3 ? 32 : 16) + 32 * h;
    uint8x16_t z0 = vld1q_u8(qs), z1 = vld1q_u8(qs + 16), three = vdupq_n_u8(3);
    uint8x16_t a[4] = {vandq_u8(z0, three), vandq_u8(vshrq_n_u8(z0, 2), three), vandq_u8(vshrq_n_u8(z0, 4), three),
                       vshrq_n_u8(z0, 6)};
    uint8x16_t b[4] = {vandq_u8(z1, three), vandq_u8(vshrq_n_u8(z1, 2), three), vandq_u8(vshrq_n_u8(z1, 4), three),
                       vshrq_n_u8(z1, 6)};
    ip_w w;
    if (k3) {
        uint8x16_t m0 = vld1q_u8(blk), m1 = vld1q_u8(blk + 16);
        UNROLL for (int bi = 0; bi < 4; bi++) {
            a[bi] = vorrq_u8(a[bi], bit_to(m0, 4 * h + bi, 2));
            b[bi] = vorrq_u8(b[bi], bit_to(m1, 4 * h + bi, 2));
        }
    }
    UNROLL for (int bi = 0; bi < 4; bi++) w.a[bi] = s8(a[bi]), w.b[bi] = s8(b[bi]);
    /* the quad's 8 per-half scales (index 2 bi + half) as bytes, in general registers
     * (inplace_avx2.c measured this 3x faster than a loop through float arrays) */
    float32x4_t f0, f1;
    if (k3) { /* q3k_scale(i) for i = 8h + k: low 4 bits from byte k (h: high nibble), high 2 from
               * byte 8 + k % 4 at bits 2 (2h + k / 4); then - 32 */
        uint64_t lo = rd_u64(blk + 96), hb = rd_u32(blk + 104);
        lo = (h ? lo >> 4 : lo) & 0x0f0f0f0f0f0f0f0full;
        uint64_t hi = ((hb >> (4 * h)) & 0x03030303u) | ((hb >> (4 * h + 2)) & 0x03030303u) << 32;
        bytes8_f32(lo | hi << 4, 32, h2f(blk + 108), &f0, &f1);
        spread_halves(f0, f1, &w.fa, &w.fb);
        w.ma = v16_muln(w.fa, -4.0f);
        w.mb = v16_muln(w.fb, -4.0f);
    } else { /* byte 8h + k: scale low nibble, min high; the min is -(dmin * m) */
        uint64_t bt = rd_u64(blk + 8 * h);
        bytes8_f32(bt & 0x0f0f0f0f0f0f0f0full, 0, h2f(blk + 80), &f0, &f1);
        spread_halves(f0, f1, &w.fa, &w.fb);
        bytes8_f32((bt >> 4) & 0x0f0f0f0f0f0f0f0full, 0, h2f(blk + 82), &f0, &f1);
        const float32x4_t z = vdupq_n_f32(0.0f); /* 0 - dmin * m, as inplace_avx512.c */
        spread_halves(vsubq_f32(z, f0), vsubq_f32(z, f1), &w.ma, &w.mb);
    }
    return w;
}

/* IQ4: nibbles through the 16-entry grid, as the signed kvalues (see the top). */
AI int8x16_t iq4_lut(uint8x16_t idx) {
    const int8x16_t t = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    return vqtbl1q_s8(t, idx);
}

/* MXFP4's doubled E2M1 grid, signed as IQ4's. */
AI int8x16_t mxfp4_lut(uint8x16_t idx) {
    const int8x16_t t = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    return vqtbl1q_s8(t, idx);
}

/* IQ4_NL (an f16 scale) or MXFP4 (an E8M0 byte), 16 bytes of nibbles after it (full quads:
 * the caller widens a last partial one). */
AI ip_w dec_small(dtype dt, const uint8_t *b0) {
    int mx = dt == DT_MXFP4, bb = mx ? 17 : 18, o = mx ? 1 : 2;
    ip_w w;
    UNROLL for (int bi = 0; bi < 4; bi++) {
        uint8x16_t z = vld1q_u8(b0 + bb * bi + o);
        w.a[bi] = mx ? mxfp4_lut(lo_nib(z)) : iq4_lut(lo_nib(z));
        w.b[bi] = mx ? mxfp4_lut(vshrq_n_u8(z, 4)) : iq4_lut(vshrq_n_u8(z, 4));
    }
    if (mx) {
        const float s[4] = {mxfp4_scale(b0[0]), mxfp4_scale(b0[17]), mxfp4_scale(b0[34]), mxfp4_scale(b0[51])};
        w.fa = w.fb = expand4(vld1q_f32(s));
    } else {
        w.fa = w.fb = expand4(h2f4(b0, 18));
    }
    w.ma = w.mb = v16_muln(w.fa, -128.0f);
    return w;
}

/* IQ4_XS: sub-block j's 16 bytes at qs + 16 j, so quad qq is 64 contiguous bytes. */
AI ip_w dec_iq4_xs(const uint8_t *row, int q) {
    const uint8_t *blk = row + (size_t)(q / 2) * 136;
    int qq = q % 2, sh = rd_u16(blk + 2);
    /* the 6-bit scales of sub-blocks 4qq .. 4qq + 3, one per byte: low nibbles from
     * blk[4 + 2qq ..] in order, high 2 bits from scales_h at bits 8qq .. (see dec_q23_k) */
    uint32_t n = rd_u16(blk + 4 + 2 * qq), c = (uint32_t)(sh >> (8 * qq)) & 0xffu;
    uint32_t ls = (n & 0xfu) | (n & 0xf0u) << 4 | (n & 0xf00u) << 8 | (n & 0xf000u) << 12;
    ls |= ((c & 3u) | (c & 0xcu) << 6 | (c & 0x30u) << 12 | (c & 0xc0u) << 18) << 4;
    float32x4_t f, unused;
    bytes8_f32(ls, 32, h2f(blk), &f, &unused);
    ip_w w;
    UNROLL for (int bi = 0; bi < 4; bi++) {
        uint8x16_t z = vld1q_u8(blk + 8 + 16 * (4 * qq + bi));
        w.a[bi] = iq4_lut(lo_nib(z));
        w.b[bi] = iq4_lut(vshrq_n_u8(z, 4));
    }
    (void)unused;
    w.fa = w.fb = expand4(f);
    w.ma = w.mb = v16_muln(w.fa, -128.0f);
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

AI v16 cvt_lanes(const int32x4_t i[4]) {
    v16 v;
    UNROLL for (int bi = 0; bi < 4; bi++) v.q[bi] = vcvtq_f32_s32(i[bi]);
    return v;
}

/* acc += one quad of one row against one token: inplace_avx512.c's ip_step lane by lane. */
AI v16 ip_step(dtype dt, sdot_fn sd, const ip_w *w, const ip_x *x, const int8_t *xq, v16 acc) {
    int8x16_t xa[4], xb[4];
    UNROLL for (int bi = 0; bi < 4; bi++) xa[bi] = vld1q_s8(xq + 16 * bi), xb[bi] = vld1q_s8(xq + 64 + 16 * bi);
    int off = ip_off(dt) != 0 && !ip_iq4(dt); /* the sums start at -offset * sum(q); IQ4: signed kvalues */
    if (ip_halves(dt)) {
        int32x4_t ia[4], ib[4];
        UNROLL for (int bi = 0; bi < 4; bi++) {
            ia[bi] = dot_lanes(sd, 0, w->a[bi], xa[bi], w->a[bi], xa[bi]);
            ib[bi] = dot_lanes(sd, 0, w->b[bi], xb[bi], w->b[bi], xb[bi]);
            if (off) ia[bi] = vaddq_s32(x->na[bi], ia[bi]), ib[bi] = vaddq_s32(x->nb[bi], ib[bi]);
        }
        acc = v16_fma(v16_mul(cvt_lanes(ia), x->dx), w->fa, acc);
        acc = v16_fma(v16_mul(cvt_lanes(ib), x->dx), w->fb, acc);
        if (off) return acc;
        acc = v16_fma(w->ma, x->sa, acc);
        return v16_fma(w->mb, x->sb, acc);
    }
    int32x4_t i[4];
    UNROLL for (int bi = 0; bi < 4; bi++) {
        i[bi] = dot_lanes(sd, 1, w->a[bi], xa[bi], w->b[bi], xb[bi]);
        if (off) i[bi] = vaddq_s32(x->n[bi], i[bi]);
    }
    acc = v16_fma(v16_mul(cvt_lanes(i), x->dx), w->fa, acc);
    return ip_off(dt) ? acc : v16_fma(w->ma, x->s, acc);
}

/* avx512.c's lane-summing tree: 16 -> 8 (lane i: v[i+8] + v[i]) -> 4 -> 2 -> 1. */
AI float ip_reduce(v16 a) {
    float32x4_t e0 = vaddq_f32(a.q[2], a.q[0]), e1 = vaddq_f32(a.q[3], a.q[1]);
    float32x4_t f = vaddq_f32(e1, e0);
    float32x2_t g = vadd_f32(vget_high_f32(f), vget_low_f32(f));
    return vget_lane_f32(g, 1) + vget_lane_f32(g, 0);
}

/* Decode: one row x one token. */
AI void ip_gemv_row(dtype dt, sdot_fn sd, const uint8_t *row, size_t rb, int nb, int quads, const q8_act *x,
                    const ip_x *xs, float *y) {
    v16 acc = v16_zero();
    for (int q = 0; q < quads; q++) {
        __builtin_prefetch(row + (size_t)q * rb / (size_t)quads + IP_PF, 0, 3);
        ip_w w = ip_decode(dt, row, q, nb);
        acc = ip_step(dt, sd, &w, &xs[q], x->q + 128 * (size_t)q, acc);
    }
    *y = ip_reduce(acc);
}

/* Row r x tokens [t0, t0 + T), the activation side of those tokens in xs (quads each). */
AI void ip_row(dtype dt, sdot_fn sd, const uint8_t *row, int nb, int quads, const q8_act *x, int t0, int T,
               const ip_x *xs, float *y, int ldy, int r) {
    v16 acc[IP_T];
    UNROLL for (int t = 0; t < T; t++) acc[t] = v16_zero();
    for (int q = 0; q < quads; q++) {
        ip_w w = ip_decode(dt, row, q, nb);
        UNROLL for (int t = 0; t < T; t++)
            acc[t] = ip_step(dt, sd, &w, &xs[(size_t)t * quads + q],
                             x->q + (size_t)(t0 + t) * x->quads * 128 + 128 * (size_t)q, acc[t]);
    }
    UNROLL for (int t = 0; t < T; t++) y[(size_t)(t0 + t) * ldy + r] = ip_reduce(acc[t]);
}

/* Inlined into each entry point, so that every branch on dt and sd is decided at compile time. */
AI void ip_matmul(dtype dt, sdot_fn sd, const void *w, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    int nb = cols / 32, quads = (nb + 3) / 4;
    size_t rb = dtype_row_bytes(dt, cols);
    ip_x stack[IP_STACK_QUADS * IP_T];
    ip_x *xs = quads <= IP_STACK_QUADS ? stack : aligned_alloc(16, sizeof(ip_x) * (size_t)quads * IP_T);
    if (!xs) { /* out of memory: the scalar reference needs none */
        kernels_scalar()->matmul_q8[dt](w, r1, cols, r0, r1, x, y, ldy);
        return;
    }
    const uint8_t *wb = w;
    if (x->nt == 1) {
        ip_prep(dt, x, 0, quads, xs);
        for (int r = r0; r < r1; r++) ip_gemv_row(dt, sd, wb + (size_t)r * rb, rb, nb, quads, x, xs, y + r);
    } else {
        for (int rb0 = r0; rb0 < r1; rb0 += IP_RB) {
            int rb1 = rb0 + IP_RB < r1 ? rb0 + IP_RB : r1;
            for (int t0 = 0; t0 < x->nt; t0 += IP_T) {
                int T = x->nt - t0 < IP_T ? x->nt - t0 : IP_T;
                for (int t = 0; t < T; t++) ip_prep(dt, x, t0 + t, quads, xs + (size_t)t * quads);
                for (int r = rb0; r < rb1; r++) {
                    if (T == IP_T)
                        ip_row(dt, sd, wb + (size_t)r * rb, nb, quads, x, t0, IP_T, xs, y, ldy, r);
                    else
                        for (int t = 0; t < T; t++)
                            ip_row(dt, sd, wb + (size_t)r * rb, nb, quads, x, t0 + t, 1, xs + (size_t)t * quads, y,
                                   ldy, r);
                }
            }
        }
    }
    if (xs != stack) free(xs);
}

static int has_sdot(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

/* Per type: the sdot variant, the plain one, and the table's entry choosing between
 * them per call (as neon.c). */
#define IP_MATMUL(FN, SDOT, PLAIN, DT)                                                                                \
    DOTPROD static void SDOT(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) { \
        (void)rows;                                                                                                   \
        ip_matmul(DT, sdot16, w, cols, r0, r1, x, y, ldy);                                                            \
    }                                                                                                                 \
    static void PLAIN(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {        \
        (void)rows;                                                                                                   \
        ip_matmul(DT, NULL, w, cols, r0, r1, x, y, ldy);                                                              \
    }                                                                                                                 \
    void FN(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {                  \
        (has_sdot() ? SDOT : PLAIN)(w, rows, cols, r0, r1, x, y, ldy);                                                \
    }
IP_MATMUL(inplace_neon_q2_k, inplace_neon_q2_k_sdot, inplace_neon_q2_k_plain, DT_Q2_K)
IP_MATMUL(inplace_neon_q3_k, inplace_neon_q3_k_sdot, inplace_neon_q3_k_plain, DT_Q3_K)
IP_MATMUL(inplace_neon_q5_k, inplace_neon_q5_k_sdot, inplace_neon_q5_k_plain, DT_Q5_K)
IP_MATMUL(inplace_neon_iq4_nl, inplace_neon_iq4_nl_sdot, inplace_neon_iq4_nl_plain, DT_IQ4_NL)
IP_MATMUL(inplace_neon_iq4_xs, inplace_neon_iq4_xs_sdot, inplace_neon_iq4_xs_plain, DT_IQ4_XS)
IP_MATMUL(inplace_neon_mxfp4, inplace_neon_mxfp4_sdot, inplace_neon_mxfp4_plain, DT_MXFP4)

matmul_q8_fn inplace_neon_plain(dtype dt) {
    switch (dt) {
    case DT_Q2_K: return inplace_neon_q2_k_plain;
    case DT_Q3_K: return inplace_neon_q3_k_plain;
    case DT_Q5_K: return inplace_neon_q5_k_plain;
    case DT_IQ4_NL: return inplace_neon_iq4_nl_plain;
    case DT_IQ4_XS: return inplace_neon_iq4_xs_plain;
    case DT_MXFP4: return inplace_neon_mxfp4_plain;
    default: return NULL;
    }
}

#else
typedef int inplace_neon_not_built; /* keeps the translation unit non-empty */
#endif
