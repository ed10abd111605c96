/* avx2.c - AVX2 + FMA + F16C kernels with f32 activations.
 *
 * Compiled with its own ISA flags (see the Makefile) and entered only after
 * dispatch.c has checked the CPU and the OS (YMM state).
 *
 * Numerics: the same bits as avx512.c. Every y element has one accumulator of
 * 16 f32 lanes, held here as two ymm (lanes 0..7, 8..15); lane i receives
 * columns i, i+16, i+32, ... in order, by FMA, and reduce16() sums the lanes by
 * the tree avx512.c uses. Tiles only decide how many accumulators are live, so
 * a y element does not depend on the row range, nt or its tile (kernels.h).
 * Quantized blocks are dequantized in registers to exactly the f32 values
 * gguf-py produces, then accumulated like F32 rows (see block32). */
#include "kernels.h"

#include "dequant.h"

#include "affine_kernels.h" /* MLX affine kernels: affine_avx2.c */
#include "inplace_kernels.h" /* GGUF types read in place: inplace_avx2.c */
#include "pack_kernels.h"    /* Q4_K / Q6_K packers: pack_avx2.c */

#if defined(__x86_64__)

#include <immintrin.h>

#include "base/util.h"

const kernels *kernels_avx2_table(void);

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

/* One 16-lane accumulator: the register pair mirrors one zmm of avx512.c. */
typedef struct {
    __m256 lo, hi; /* lanes 0..7 and 8..15 */
} v16;

/* Decode (nt = 1): 4 rows at once, 8 ymm accumulators (4 independent FMA
 * chains per half). Prefill: 2 rows x 2 tokens, also 8 accumulators, leaving
 * 8 of the 16 registers for a dequantized block and the activations. */
#define GEMV_R 4
#define TILE_R 2
#define TILE_T 2
#define MAX_R 4

/* ---- weights to f32 -------------------------------------------------------- */

AI __m256 dense8(dtype dt, const uint8_t *p) {
    if (dt == DT_F32) return _mm256_loadu_ps((const float *)p);
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (dt == DT_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); /* bf16 */
}

/* The fp16 scale at p broadcast to 8 lanes. */
AI __m256 f16_bcast(const uint8_t *p) { return _mm256_cvtph_ps(_mm_set1_epi16((short)rd_u16(p))); }


AI __m256 i32_to_ps(__m256i v) { return _mm256_cvtepi32_ps(v); }

/* The 32 weights of one block dequantized to f32, q[k] holding elements
 * 8k..8k+7. The values are bit-identical to what gguf-py (and so HF
 * transformers) dequantizes: d*q and d*(q-8) are exact in f32, and d*q + m is
 * rounded once, by the FMA. */
AI void block32(dtype dt, const uint8_t *blk, int j, __m256 q[4]) {
    if (dt != DT_Q8_0 && dt != DT_Q4_0 && dt != DT_Q4_1) { /* the table's decoder (dequant.h) */
        float v[32];
        dq_ref32(dt, blk, j, v);
        UNROLL for (int k = 0; k < 4; k++) q[k] = _mm256_loadu_ps(v + 8 * k);
        return;
    }
    __m256 d = f16_bcast(blk);
    if (dt == DT_Q8_0) {
        UNROLL for (int k = 0; k < 4; k++) {
            __m128i b = _mm_loadl_epi64((const __m128i *)(blk + 2 + 8 * k));
            q[k] = _mm256_mul_ps(d, i32_to_ps(_mm256_cvtepi8_epi32(b)));
        }
        return;
    }
    /* Byte j holds element j (low nibble) and j + 16 (high nibble). */
    const uint8_t *qs = blk + (dt == DT_Q4_0 ? 2 : 4);
    const __m256i low4 = _mm256_set1_epi32(0x0f), eight = _mm256_set1_epi32(8);
    __m256 m = dt == DT_Q4_1 ? f16_bcast(blk + 2) : d;
    UNROLL for (int k = 0; k < 2; k++) {
        __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(qs + 8 * k)));
        __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_srli_epi32(v, 4);
        if (dt == DT_Q4_0) {
            q[k] = _mm256_mul_ps(d, i32_to_ps(_mm256_sub_epi32(lo, eight)));
            q[k + 2] = _mm256_mul_ps(d, i32_to_ps(_mm256_sub_epi32(hi, eight)));
        } else {
            q[k] = _mm256_fmadd_ps(d, i32_to_ps(lo), m);
            q[k + 2] = _mm256_fmadd_ps(d, i32_to_ps(hi), m);
        }
    }
}

/* avx512.c's lane-summing tree: 16 -> 8 (lane i: v[i+8] + v[i]) -> 4 -> 2 -> 1. */
AI float reduce16(v16 a) {
    __m256 s8 = _mm256_add_ps(a.hi, a.lo);
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(s8, 1), _mm256_castps256_ps128(s8));
    s = _mm_add_ps(_mm_movehl_ps(s, s), s);
    s = _mm_add_ss(_mm_movehdup_ps(s), s);
    return _mm_cvtss_f32(s);
}

AI v16 v16_zero(void) { return (v16){_mm256_setzero_ps(), _mm256_setzero_ps()}; }

/* acc += w * x for 16 columns (two halves). */
AI v16 v16_fma(__m256 wlo, __m256 whi, __m256 xlo, __m256 xhi, v16 acc) {
    return (v16){_mm256_fmadd_ps(wlo, xlo, acc.lo), _mm256_fmadd_ps(whi, xhi, acc.hi)};
}

/* ---- tiles: R rows x T tokens, R and T compile-time constants after inlining ---- */

AI void store_tile(v16 acc[MAX_R][TILE_T], float *y, int ldy, int R, int T) {
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[(size_t)t * ldy + r] = reduce16(acc[r][t]);
}

AI void dense_tile(dtype dt, const uint8_t *w, size_t rb, int cols, const float *x, int ldx,
                   float *y, int ldy, int R, int T) {
    const size_t esz = dt == DT_F32 ? 4 : 2;
    v16 acc[MAX_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_zero();
    int c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m256 xl[TILE_T], xh[TILE_T];
        UNROLL for (int t = 0; t < T; t++) {
            xl[t] = _mm256_loadu_ps(x + (size_t)t * ldx + c);
            xh[t] = _mm256_loadu_ps(x + (size_t)t * ldx + c + 8);
        }
        UNROLL for (int r = 0; r < R; r++) {
            const uint8_t *p = w + r * rb + c * esz;
            __m256 wl = dense8(dt, p), wh = dense8(dt, p + 8 * esz);
            UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_fma(wl, wh, xl[t], xh[t], acc[r][t]);
        }
    }
    if (c < cols) { /* the tail, zero-padded to 16: as avx512.c's masked loads */
        int n = cols - c;
        __m256 xl[TILE_T], xh[TILE_T];
        UNROLL for (int t = 0; t < T; t++) {
            float xb[16] = {0};
            memcpy(xb, x + (size_t)t * ldx + c, (size_t)n * sizeof(float));
            xl[t] = _mm256_loadu_ps(xb);
            xh[t] = _mm256_loadu_ps(xb + 8);
        }
        UNROLL for (int r = 0; r < R; r++) {
            uint8_t wb[64] = {0};
            memcpy(wb, w + r * rb + c * esz, (size_t)n * esz);
            __m256 wl = dense8(dt, wb), wh = dense8(dt, wb + 8 * esz);
            UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_fma(wl, wh, xl[t], xh[t], acc[r][t]);
        }
    }
    store_tile(acc, y, ldy, R, T);
}

/* A block is dequantized once per row tile and used by every token of the
 * tile; columns 0..15 then 16..31 go into the accumulator as in dense_tile,
 * so a quantized row gives bit for bit what the F32 kernel gives on its
 * dequantized copy. */
AI void quant_tile(dtype dt, const uint8_t *w, size_t rb, int cols, const float *x, int ldx,
                   float *y, int ldy, int R, int T) {
    v16 acc[MAX_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_zero();
    for (int b = 0; b < cols / 32; b++) {
        const float *xb = x + 32 * (size_t)b;
        int j = 0;
        const uint8_t *blk0 = dq_sub_block(dt, w, b, &j);
        UNROLL for (int r = 0; r < R; r++) {
            __m256 q[4];
            block32(dt, blk0 + r * rb, j, q);
            UNROLL for (int t = 0; t < T; t++) {
                const float *xt = xb + (size_t)t * ldx;
                acc[r][t] = v16_fma(q[0], q[1], _mm256_loadu_ps(xt), _mm256_loadu_ps(xt + 8), acc[r][t]);
                acc[r][t] = v16_fma(q[2], q[3], _mm256_loadu_ps(xt + 16), _mm256_loadu_ps(xt + 24), acc[r][t]);
            }
        }
    }
    store_tile(acc, y, ldy, R, T);
}

/* ---- instantiation and the row / token walk (shared by every ISA file) ---- */

#include "tiles.h"

/* ---- vector helpers ---------------------------------------------------------- */

/* avx512.c's order: accumulators for columns 32k..32k+15 and 32k+16..32k+31,
 * the remainder in 16-column steps into the first, zero-padded; then
 * reduce16(s0 + s1). */
static float dot_avx2(const float *a, const float *b, int n) {
    v16 s0 = v16_zero(), s1 = v16_zero();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = v16_fma(_mm256_loadu_ps(a + i), _mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i),
                     _mm256_loadu_ps(b + i + 8), s0);
        s1 = v16_fma(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 16),
                     _mm256_loadu_ps(b + i + 24), s1);
    }
    for (; i < n; i += 16) {
        float ab[16] = {0}, bb[16] = {0};
        int m = n - i < 16 ? n - i : 16;
        memcpy(ab, a + i, sizeof(float) * (size_t)m);
        memcpy(bb, b + i, sizeof(float) * (size_t)m);
        s0 = v16_fma(_mm256_loadu_ps(ab), _mm256_loadu_ps(ab + 8), _mm256_loadu_ps(bb), _mm256_loadu_ps(bb + 8), s0);
    }
    return reduce16((v16){_mm256_add_ps(s0.lo, s1.lo), _mm256_add_ps(s0.hi, s1.hi)});
}

/* ---- int8 activations on repacked weights (fast mode, layout in kernels.h) ---- */

/* The 16-lane vectors of the layout are handled as two ymm "parts": part p
 * holds blocks 2p and 2p+1 of a quad (lanes 4 bi + ii). With 16 registers, a
 * group (8 rows) is walked one token at a time: per half and part, 4 or 8
 * unpacked weight vectors, the broadcast activations and one int32 and one f32
 * accumulator. Prefill runs the same walk per token over a group whose
 * weights are then in L1/L2. Not bit-identical to avx512.c (another summing
 * tree): fast mode promises only the tested tolerance against scalar.c, and
 * results that do not depend on the thread count. */

/* u8 x s8 in 4s into 8 int32 lanes, by vpmaddubsw + vpmaddwd: the u8 operand is
 * a nibble or |int8| (<= 128), the s8 one in [-127, 127], so no i16 saturates. */
AI __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

/* dot_u8s8 of two pairs, their pair sums added in int16 before one widening: exact while
 * every u <= 63 (each pair sum at most 2 * 63 * 128 = 16128). */
AI __m256i dot2_u8s8(__m256i acc, __m256i u0, __m256i s0, __m256i u1, __m256i s1) {
    __m256i t = _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(t, _mm256_set1_epi16(1)));
}

/* The weight stream requested 16 KB ahead of the n bytes at p, into L2 (avx512.c, Q8_PF):
 * decode steps and passes of a few tokens read weights at DRAM speed only with it (passes
 * of 2 to 9 tokens took ~1.4 steps plus their compute without it: bench_kernels q8 avx2). */
AI void stream_prefetch(const uint8_t *p, int n) {
    for (int l = 0; l < n; l += 64) _mm_prefetch((const char *)p + 16384 + l, _MM_HINT_T1);
}

/* Dword v (0..3) of each 128-bit lane (a block's half) broadcast over that lane. */
AI __m256i dword_bcast(__m256i x, int v) {
    switch (v & 3) {
    case 0: return _mm256_shuffle_epi32(x, 0x00);
    case 1: return _mm256_shuffle_epi32(x, 0x55);
    case 2: return _mm256_shuffle_epi32(x, 0xaa);
    default: return _mm256_shuffle_epi32(x, 0xff);
    }
}

/* Values v[2p], v[2p+1] over the lanes of part p (4 each). */
AI __m256 part_expand(const float *v, int p) {
    __m256i idx = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castpd_ps(_mm_load_sd((const double *)(v + 2 * p)))), idx);
}

/* 8 f16 scales (or mins) of a part as f32, lane 4 bi + ii; with gb > 1 both
 * blocks share the 4 at p. */
AI __m256 scales8(const uint8_t *p, int gb) {
    if (gb == 1) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
    __m128 v = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)p));
    return _mm256_insertf128_ps(_mm256_castps128_ps256(v), v, 1);
}

/* Q4_K: the f32 d * sc (or, with dm + 16, -dmin * m) of the 8 u8 at p, lane 4 bi + ii
 * (row ii of the half): dm holds the half's 4 f16 d (or -dmin). */
AI __m256 q4k_scales8(const uint8_t *p, const uint8_t *dm) {
    __m128 d4 = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)dm));
    __m256 d = _mm256_insertf128_ps(_mm256_castps128_ps256(d4), d4, 1);
    return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p))));
}

/* Q6_K: the 2-bit field f (0..3) of each byte of h moved to bits 4-5, the rest 0. */
AI __m256i q6_hbits(__m256i h, int f) {
    const __m256i m30 = _mm256_set1_epi8(0x30);
    switch (f) {
    case 0: return _mm256_and_si256(_mm256_slli_epi16(h, 4), m30);
    case 1: return _mm256_and_si256(_mm256_slli_epi16(h, 2), m30);
    case 2: return _mm256_and_si256(h, m30);
    default: return _mm256_and_si256(_mm256_srli_epi16(h, 2), m30);
    }
}

/* Q6_K: -32 times the sum of the 16 int8 of each 128-bit lane (a block's half), in
 * its 4 dwords: vpsadbw on x + 128 sums 8 bytes at a time (each sum 1024 too high). */
AI __m256i q6_half_off(__m256i x) {
    __m256i v = _mm256_sad_epu8(_mm256_xor_si256(x, _mm256_set1_epi8((char)0x80)), _mm256_setzero_si256());
    v = _mm256_shuffle_epi32(_mm256_add_epi64(v, _mm256_shuffle_epi32(v, 0x4e)), 0x00);
    return _mm256_sub_epi32(_mm256_set1_epi32(32 * 2048), _mm256_slli_epi32(v, 5));
}

/* Q6_K part p (blocks 2p, 2p + 1) of half h of a full chunk, decoded (layout in
 * kernels.h): u[v] the 6-bit values meeting dword v of the blocks' first 16
 * activations, u[v + 4] of their second 16; sw[0] / sw[1] the halves' d * sc. dq:
 * the f16 d of the group's 8 rows for this quad's super-block. */
typedef struct {
    __m256i u[8];
    __m256 sw[2];
} q6_part;

AI void q6_part_decode(const uint8_t *ck, const uint8_t *dq, int h, int p, q6_part *w) {
    const __m256i lo4 = _mm256_set1_epi8(0x0f);
    const uint8_t *sc = ck + 16 * h + 8 * p, *pay = ck + 64 + 384 * h + 32 * p;
    __m128 d4 = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(dq + 8 * h)));
    __m256 d = _mm256_insertf128_ps(_mm256_castps128_ps256(d4), d4, 1);
    w->sw[0] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)sc))));
    w->sw[1] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 32)))));
    __m256i h0 = _mm256_loadu_si256((const __m256i *)(pay + 256)), h1 = _mm256_loadu_si256((const __m256i *)(pay + 320));
    UNROLL for (int v = 0; v < 4; v++) {
        __m256i n = _mm256_loadu_si256((const __m256i *)(pay + 64 * v));
        w->u[v] = _mm256_or_si256(_mm256_and_si256(n, lo4), q6_hbits(h0, v));
        w->u[v + 4] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n, 4), lo4), q6_hbits(h1, v));
    }
}

/* acc + a decoded part against one token (xq, xd: the token's quad): each half of a
 * block summed apart with its -32 offset, scaled by its d * sc. */
AI __m256 q6_part_dot(const q6_part *w, int p, const int8_t *xq, const float *xd, __m256 acc) {
    __m256i x0 = _mm256_loadu_si256((const __m256i *)(xq + 32 * p));
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(xq + 64 + 32 * p));
    __m256i is0 = q6_half_off(x0), is1 = q6_half_off(x1);
    UNROLL for (int v = 0; v < 4; v += 2) {
        is0 = dot2_u8s8(is0, w->u[v], dword_bcast(x0, v), w->u[v + 1], dword_bcast(x0, v + 1));
        is1 = dot2_u8s8(is1, w->u[v + 4], dword_bcast(x1, v), w->u[v + 5], dword_bcast(x1, v + 1));
    }
    __m256 dx = part_expand(xd, p);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is0), _mm256_mul_ps(w->sw[0], dx), acc);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(is1), _mm256_mul_ps(w->sw[1], dx), acc);
}

/* Decode (the per-token walk of q8_group): q6_part_decode and q6_part_dot in one
 * pass, each value used as it is decoded. The same integers and the same f32
 * operations as the two: the same bits. The chunk is addressed inline: through
 * q6_chunk the warm GEMV is ~20% slower (`build/bench_kernels q8 avx2 Q6_K`). */
AI __m256 q6_part_quad(const uint8_t *ck, const uint8_t *dq, int h, int p, const int8_t *xq, const float *xd,
                       __m256 acc) {
    const __m256i lo4 = _mm256_set1_epi8(0x0f);
    const uint8_t *sc = ck + 16 * h + 8 * p, *pay = ck + 64 + 384 * h + 32 * p;
    __m128 d4 = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(dq + 8 * h)));
    __m256 d = _mm256_insertf128_ps(_mm256_castps128_ps256(d4), d4, 1);
    __m256 sw0 = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)sc))));
    __m256 sw1 = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(sc + 32)))));
    __m256i x0 = _mm256_loadu_si256((const __m256i *)(xq + 32 * p));
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(xq + 64 + 32 * p));
    __m256i h0 = _mm256_loadu_si256((const __m256i *)(pay + 256)), h1 = _mm256_loadu_si256((const __m256i *)(pay + 320));
    __m256i is0 = q6_half_off(x0), is1 = q6_half_off(x1), ul[4], uh[4];
    UNROLL for (int v = 0; v < 4; v++) {
        __m256i n = _mm256_loadu_si256((const __m256i *)(pay + 64 * v));
        ul[v] = _mm256_or_si256(_mm256_and_si256(n, lo4), q6_hbits(h0, v));
        uh[v] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n, 4), lo4), q6_hbits(h1, v));
    }
    UNROLL for (int v = 0; v < 4; v += 2) {
        is0 = dot2_u8s8(is0, ul[v], dword_bcast(x0, v), ul[v + 1], dword_bcast(x0, v + 1));
        is1 = dot2_u8s8(is1, uh[v], dword_bcast(x1, v), uh[v + 1], dword_bcast(x1, v + 1));
    }
    __m256 dx = part_expand(xd, p);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is0), _mm256_mul_ps(sw0, dx), acc);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(is1), _mm256_mul_ps(sw1, dx), acc);
}

/* Where quad q of the group at g (rr rows) starts, widened into `wide` if the group
 * is partial, and the d of its 8 rows (into dloc, zero-padded, if partial). */
AI const uint8_t *q6_chunk(const uint8_t *g, int rr, int nb, int q, uint8_t *wide, uint8_t dloc[16],
                           const uint8_t **dq) {
    const uint8_t *ck = g + q8w_dtab(DT_Q6_K, rr, nb) + (size_t)rr * 4 * q * q8w_block_bytes(DT_Q6_K);
    *dq = q8w_d_at(g, rr, q / 2, 0);
    if (rr < Q8W_GROUP) {
        q8w_widen(DT_Q6_K, ck, rr, 4, wide, 4);
        memset(dloc, 0, 16);
        *dq = memcpy(dloc, *dq, 2 * (size_t)rr);
        ck = wide;
    }
    return ck;
}

/* Rows [lo, hi) of nt tokens from the prefill accumulators (4 per token: half, part),
 * summed as q8_group sums its own. */
AI void prefill_store(const __m256 *acc, int nt, float *y0, int ldy, int lo, int hi) {
    for (int t = 0; t < nt; t++) {
        float out[8];
        UNROLL for (int h = 0; h < 2; h++) {
            __m256 s = _mm256_add_ps(acc[4 * t + 2 * h], acc[4 * t + 2 * h + 1]);
            _mm_storeu_ps(out + 4 * h, _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));
        }
        for (int i = lo; i < hi; i++) y0[(size_t)t * ldy + i] = out[i];
    }
}

/* Q6_K prefill: each quad of a group decoded once for every token, where the
 * per-token walk of q8_group decodes it nt times (1.5-1.6x the GOP/s at nt = 64:
 * `build/bench_kernels q8 avx2 Q6_K`); acc holds 4 accumulators (half, part) per token.
 * Per token the arithmetic is q8_group's exactly, so a token's result does not
 * depend on nt (tested). */
static void q6_prefill(const uint8_t *g, int rr, int nb, const q8_act *x, float *y0, int ldy, int lo, int hi,
                       __m256 *acc) {
    _Alignas(32) uint8_t wide[Q8W_GROUP * 4 * 34], dloc[16];
    for (int i = 0; i < 4 * x->nt; i++) acc[i] = _mm256_setzero_ps();
    for (int q = 0; 4 * q < nb; q++) {
        const uint8_t *dq, *ck = q6_chunk(g, rr, nb, q, wide, dloc, &dq);
        if (ck != wide) stream_prefetch(ck, Q8W_GROUP * 4 * q8w_block_bytes(DT_Q6_K));
        q6_part w[2][2];
        UNROLL for (int h = 0; h < 2; h++) UNROLL for (int p = 0; p < 2; p++) q6_part_decode(ck, dq, h, p, &w[h][p]);
        for (int t = 0; t < x->nt; t++) {
            const int8_t *xq = x->q + (size_t)t * x->quads * 128 + 128 * (size_t)q;
            const float *xd = x->d + (size_t)t * x->quads * 4 + 4 * (size_t)q;
            UNROLL for (int h = 0; h < 2; h++) UNROLL for (int p = 0; p < 2; p++)
                acc[4 * t + 2 * h + p] = q6_part_dot(&w[h][p], p, xq, xd, acc[4 * t + 2 * h + p]);
        }
    }
    prefill_store(acc, x->nt, y0, ldy, lo, hi);
}

/* The nibble types (Q4_0, Q4_1, Q5_0, Q5_1, Q4_K): part p of half h of a chunk decoded
 * (u[v] meets dword v of the blocks' first 16 activations, u[v + 4] of their second 16;
 * sw / mw the blocks' scales and mins as f32), then met by tokens (nib_part_dot). A decode
 * step and a pass of several tokens run the same two functions (part_quad, nib_quad), so
 * a token's result does not depend on nt. */
typedef struct {
    __m256i u[8];
    __m256 sw, mw;
} nib_part;

/* Payload vector v of part p (blocks 2p, 2p + 1) of half h of chunk c at ck: 32 bytes,
 * dword ii + 4 bi of row 4h + ii's block 2p + bi, where the layout (kernels.h) puts it. */
AI __m256i part_vec(dtype dt, const q8w_chunk *c, const uint8_t *ck, int h, int p, int v) {
    return _mm256_loadu_si256((const __m256i *)(ck + q8w_byte(dt, c, 4 * h, 2 * p, 4 * v)));
}

/* Q5_0 / Q5_1: the nibbles with each vector's fifth bits at bit 4. */
AI void q5_part_decode(dtype dt, const uint8_t *ck, int h, int p, nib_part *w, int kb) {
    const q8w_chunk c = {0, Q8W_GROUP, kb, 0};
    const uint8_t *sc = ck + 2 * q8w_scale_idx(dt, &c, 4 * h, 2 * p);
    const __m256i lo4 = _mm256_set1_epi8(0x0f), b4 = _mm256_set1_epi8(0x10);
    const __m256i hb = part_vec(dt, &c, ck, h, p, 4);
    w->sw = scales8(sc, 1);
    w->mw = q8w_has_min(dt) ? scales8(sc + 2 * q8w_nscales(dt, &c), 1) : _mm256_setzero_ps();
    UNROLL for (int v = 0; v < 4; v++) {
        __m256i raw = part_vec(dt, &c, ck, h, p, v);
        w->u[v] = _mm256_or_si256(_mm256_and_si256(raw, lo4), _mm256_and_si256(_mm256_slli_epi16(hb, 4 - v), b4));
        w->u[v + 4] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), lo4),
                                      _mm256_and_si256(_mm256_srli_epi16(hb, v), b4));
    }
}

/* Q4_K: the nibbles, d * sc and -dmin * m (dm: the group's d and -dmin for this quad). */
AI void q4k_part_decode(const uint8_t *ck, const uint8_t *dm, int h, int p, nib_part *w) {
    const __m256i lo4 = _mm256_set1_epi8(0x0f);
    const uint8_t *sc = ck + 16 * h + 8 * p, *pay = ck + 64 + 256 * h + 32 * p;
    w->sw = q4k_scales8(sc, dm + 8 * h);
    w->mw = q4k_scales8(sc + 32, dm + 16 + 8 * h);
    UNROLL for (int v = 0; v < 4; v++) {
        __m256i raw = _mm256_loadu_si256((const __m256i *)(pay + 64 * v));
        w->u[v] = _mm256_and_si256(raw, lo4);
        w->u[v + 4] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), lo4);
    }
}

/* Q4_0, Q4_1 (and its 64- and 128-column groups): the nibbles and the f16 scales (and mins). */
AI void q4_part_decode(dtype dt, const uint8_t *ck, int h, int p, nib_part *w, int kb) {
    const q8w_chunk c = {0, Q8W_GROUP, kb, 0};
    const int gb = q8w_gb(dt), sb = q8w_sbytes(dt);
    const uint8_t *sc = ck + sb * q8w_scale_idx(dt, &c, 4 * h, 2 * p), *mn = sc + sb * q8w_nscales(dt, &c);
    const __m256i lo4 = _mm256_set1_epi8(0x0f);
    w->sw = scales8(sc, gb);
    w->mw = q8w_has_min(dt) ? scales8(mn, gb) : _mm256_setzero_ps();
    UNROLL for (int v = 0; v < 4; v++) {
        __m256i raw = part_vec(dt, &c, ck, h, p, v);
        w->u[v] = _mm256_and_si256(raw, lo4);
        w->u[v + 4] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), lo4);
    }
}

/* acc + a decoded part against one token (the integer sums exact). */
AI __m256 nib_part_dot(dtype dt, const nib_part *w, int p, const int8_t *xq, const float *xd, const float *xs,
                       __m256 acc) {
    __m256i x0 = _mm256_loadu_si256((const __m256i *)(xq + 32 * p));
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(xq + 64 + 32 * p));
    /* the pair sums added in int16 before one widening: with u <= 15 (4 bits) each is at most
     * 2 * 15 * 128 = 3840, and 8 of them fit; 5 bits: 4 of them. The same exact integers. */
    const int per16 = q8w_five(dt) ? 4 : 8;
    __m256i isum = _mm256_setzero_si256(), s16 = _mm256_setzero_si256();
    UNROLL for (int v = 0; v < 4; v++) {
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(w->u[v], dword_bcast(x0, v)));
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(w->u[v + 4], dword_bcast(x1, v)));
        if ((2 * v + 2) % per16 == 0) {
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(s16, _mm256_set1_epi16(1)));
            s16 = _mm256_setzero_si256();
        }
    }
    __m256 f = _mm256_cvtepi32_ps(isum), s = part_expand(xs, p), dx = part_expand(xd, p);
    if (dt == DT_Q4_0) f = _mm256_fmadd_ps(s, _mm256_set1_ps(-8.0f), f);
    if (dt == DT_Q5_0) f = _mm256_fmadd_ps(s, _mm256_set1_ps(-16.0f), f);
    acc = _mm256_fmadd_ps(f, _mm256_mul_ps(w->sw, dx), acc);
    if (q8w_has_min(dt)) acc = _mm256_fmadd_ps(w->mw, _mm256_mul_ps(dx, s), acc);
    return acc;
}

/* A whole group's short last quad of 2 blocks (a row of 32 k + 64 columns, as SmolLM2's 576) is
 * read in place, its part 0 alone: part 1 of its 4-block widened copy would add exact zeros,
 * and the copy cost 11% of a decode step. Other partial chunks are widened (q8w_widen). */
AI int in_place_half(int rr, int kb) { return rr == Q8W_GROUP && kb == 2; }

/* Q8_0 decoded: the signed weights (for the activations' signs) and their magnitudes, made
 * once for all the tokens of a pass. */
typedef struct {
    __m256i a[8], w[8];
    __m256 sw;
} q80_part;

AI void q80_part_decode(const uint8_t *ck, int h, int p, q80_part *o, int kb) {
    const q8w_chunk c = {0, Q8W_GROUP, kb, 0};
    const uint8_t *sc = ck + 2 * q8w_scale_idx(DT_Q8_0, &c, 4 * h, 2 * p);
    o->sw = scales8(sc, 1);
    UNROLL for (int v = 0; v < 8; v++) {
        o->w[v] = _mm256_xor_si256(part_vec(DT_Q8_0, &c, ck, h, p, v), _mm256_set1_epi8((char)0x80));
        o->a[v] = _mm256_abs_epi8(o->w[v]);
    }
}

AI __m256 q80_part_dot(const q80_part *o, int p, const int8_t *xq, const float *xd, __m256 acc) {
    __m256i x0 = _mm256_loadu_si256((const __m256i *)(xq + 32 * p));
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(xq + 64 + 32 * p));
    __m256i isum = _mm256_setzero_si256();
    UNROLL for (int v = 0; v < 8; v++)
        isum = dot_u8s8(isum, o->a[v], _mm256_sign_epi8(dword_bcast(v < 4 ? x0 : x1, v), o->w[v]));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(o->sw, part_expand(xd, p)), acc);
}

AI void q80_quad(const uint8_t *ck, int q, const q8_act *x, __m256 *acc, int kb) {
    q80_part w[2][2];
    UNROLL for (int h = 0; h < 2; h++) UNROLL for (int p = 0; p < kb / 2; p++) q80_part_decode(ck, h, p, &w[h][p], kb);
    for (int t = 0; t < x->nt; t++) {
        const int8_t *xq = x->q + (size_t)t * x->quads * 128 + 128 * (size_t)q;
        const float *xd = x->d + (size_t)t * x->quads * 4 + 4 * (size_t)q;
        UNROLL for (int h = 0; h < 2; h++) UNROLL for (int p = 0; p < kb / 2; p++)
            acc[4 * t + 2 * h + p] = q80_part_dot(&w[h][p], p, xq, xd, acc[4 * t + 2 * h + p]);
    }
}

AI void nib_part_decode(dtype dt, const uint8_t *ck, const uint8_t *dm, int h, int p, nib_part *w, int kb) {
    if (dt == DT_Q4_K) q4k_part_decode(ck, dm, h, p, w);
    else if (q8w_five(dt)) q5_part_decode(dt, ck, h, p, w, kb);
    else q4_part_decode(dt, ck, h, p, w, kb);
}

/* Decode (the per-token walk of q8_group): part p of half h of a chunk of 8 rows and kb
 * blocks against one token, through the same decode and dot functions as the passes of
 * several tokens. dm: Q4_K's d and dmin of the group's 8 rows for this quad (NULL for
 * the others). */
AI __m256 part_quad(dtype dt, const uint8_t *ck, const uint8_t *dm, int h, int p, const int8_t *xq, const float *xd,
                    const float *xs, __m256 acc, int kb) {
    if (dt == DT_Q8_0) { /* q80_part_decode and q80_part_dot in one loop: through the struct the
                            warm GEMV was 11% slower (`build/bench_kernels q8 avx2 Q8_0`) */
        const q8w_chunk c = {0, Q8W_GROUP, kb, 0};
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(xq + 32 * p));
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(xq + 64 + 32 * p)), isum = _mm256_setzero_si256();
        UNROLL for (int v = 0; v < 8; v++) {
            __m256i w = _mm256_xor_si256(part_vec(DT_Q8_0, &c, ck, h, p, v), _mm256_set1_epi8((char)0x80));
            isum = dot_u8s8(isum, _mm256_abs_epi8(w), _mm256_sign_epi8(dword_bcast(v < 4 ? x0 : x1, v), w));
        }
        __m256 sw = scales8(ck + 2 * q8w_scale_idx(DT_Q8_0, &c, 4 * h, 2 * p), 1);
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(sw, part_expand(xd, p)), acc);
    }
    nib_part w;
    nib_part_decode(dt, ck, dm, h, p, &w, kb);
    return nib_part_dot(dt, &w, p, xq, xd, xs, acc);
}

/* The form quad q's chunk is read in: 2 blocks where it lies (in_place_half), else 4, a
 * partial chunk first widened into `wide` (*ck then points there). */
AI int chunk_blocks(dtype dt, const uint8_t **ck, int rr, int kb, uint8_t *wide) {
    if (in_place_half(rr, kb)) return 2;
    if (rr < Q8W_GROUP || kb < 4) {
        q8w_widen(dt, *ck, rr, kb, wide, 4);
        *ck = wide;
    }
    return 4;
}

/* Quad q of chunk ck (8 rows, kb = 4 or 2 blocks: parts 0 and 1, or 0) for every token. */
AI void nib_quad(dtype dt, const uint8_t *ck, const uint8_t *dm, int q, const q8_act *x, __m256 *acc, int kb) {
    if (dt == DT_Q8_0) {
        q80_quad(ck, q, x, acc, kb);
        return;
    }
    nib_part w[2][2];
    UNROLL for (int h = 0; h < 2; h++) UNROLL for (int p = 0; p < kb / 2; p++) nib_part_decode(dt, ck, dm, h, p, &w[h][p], kb);
    for (int t = 0; t < x->nt; t++) {
        const int8_t *xq = x->q + (size_t)t * x->quads * 128 + 128 * (size_t)q;
        const float *xd = x->d + (size_t)t * x->quads * 4 + 4 * (size_t)q, *xs = x->s + (size_t)t * x->quads * 4 + 4 * (size_t)q;
        UNROLL for (int h = 0; h < 2; h++) UNROLL for (int p = 0; p < kb / 2; p++)
            acc[4 * t + 2 * h + p] = nib_part_dot(dt, &w[h][p], p, xq, xd, xs, acc[4 * t + 2 * h + p]);
    }
}

/* Passes of several tokens of the plain and nibble types (Q4_0, Q4_1, Q8_0, Q5_0, Q5_1, Q4_K):
 * each quad decoded once for every token, 1.3-1.4x the GOP/s of the per-token walk at nt = 64
 * (`build/bench_kernels q8 avx2`). acc: 4 accumulators (half, part) per token. */
static void nib_prefill(dtype dt, const uint8_t *g, int rr, int nb, const q8_act *x, float *y0, int ldy, int lo,
                        int hi, __m256 *acc) {
    _Alignas(32) uint8_t wide[Q8W_GROUP * 4 * 34], dml[32];
    for (int i = 0; i < 4 * x->nt; i++) acc[i] = _mm256_setzero_ps();
    for (int q = 0; 4 * q < nb; q++) {
        int kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
        const uint8_t *ck = g + q8w_dtab(dt, rr, nb) + (size_t)rr * 4 * q * q8w_block_bytes(dt);
        const uint8_t *dm = dt == DT_Q4_K ? q8w_dm_quad(g, rr, q, dml) : NULL;
        if (rr == Q8W_GROUP) stream_prefetch(ck, Q8W_GROUP * kb * q8w_block_bytes(dt));
        if (chunk_blocks(dt, &ck, rr, kb, wide) == 2) nib_quad(dt, ck, dm, q, x, acc, 2);
        else nib_quad(dt, ck, dm, q, x, acc, 4);
    }
    prefill_store(acc, x->nt, y0, ldy, lo, hi);
}

/* Rows [lo, hi) of the group at g (rr rows) for token t; y rows start at y0. */
AI void q8_group(dtype dt, const uint8_t *g, int rr, int nb, const q8_act *x, int t, float *y0, int ldy, int lo,
                 int hi) {
    const int bb = q8w_block_bytes(dt);
    _Alignas(32) uint8_t wide[Q8W_GROUP * 4 * 34];
    __m256 acc[2][2];
    UNROLL for (int h = 0; h < 2; h++) acc[h][0] = acc[h][1] = _mm256_setzero_ps();
    for (int q = 0; 4 * q < nb; q++) {
        int kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
        const uint8_t *ck = g + q8w_dtab(dt, rr, nb) + (size_t)rr * 4 * q * bb;
        if (t == 0 && rr == Q8W_GROUP) stream_prefetch(ck, Q8W_GROUP * kb * bb); /* later tokens find it cached */
        int half = chunk_blocks(dt, &ck, rr, kb, wide) == 2;
        const int8_t *xq = x->q + (size_t)t * x->quads * 128 + 128 * (size_t)q;
        const float *xd = x->d + (size_t)t * x->quads * 4 + 4 * (size_t)q, *xs = x->s + (size_t)t * x->quads * 4 + 4 * (size_t)q;
        if (dt == DT_Q6_K) {
            uint8_t dloc[16] = {0}; /* the d of a partial group's rows, the others 0 */
            const uint8_t *dq = q8w_d_at(g, rr, q / 2, 0);
            if (rr < Q8W_GROUP) dq = memcpy(dloc, dq, 2 * (size_t)rr);
            UNROLL for (int h = 0; h < 2; h++) UNROLL for (int p = 0; p < 2; p++)
                acc[h][p] = q6_part_quad(ck, dq, h, p, xq, xd, acc[h][p]);
            continue;
        }
        uint8_t dml[32]; /* Q4_K: the d and -dmin of a partial group's rows, the others 0 */
        const uint8_t *dm = dt == DT_Q4_K ? q8w_dm_quad(g, rr, q, dml) : NULL;
        if (half) UNROLL for (int h = 0; h < 2; h++) acc[h][0] = part_quad(dt, ck, dm, h, 0, xq, xd, xs, acc[h][0], 2);
        else UNROLL for (int h = 0; h < 2; h++) UNROLL for (int p = 0; p < 2; p++)
            acc[h][p] = part_quad(dt, ck, dm, h, p, xq, xd, xs, acc[h][p], 4);
    }
    float out[8];
    UNROLL for (int h = 0; h < 2; h++) { /* row 4h + ii: lanes ii, 4 + ii of both parts */
        __m256 s = _mm256_add_ps(acc[h][0], acc[h][1]);
        _mm_storeu_ps(out + 4 * h, _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));
    }
    for (int i = lo; i < hi; i++) y0[(size_t)t * ldy + i] = out[i];
}

/* Groups outside, tokens inside; a group is computed whole and only rows
 * [r0, r1) are stored, so r0 / r1 need not fall on group boundaries. */
AI void run_q8(dtype dt, const void *packed, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    int nb = cols / 32;
    size_t grp = q8w_group_bytes(dt, Q8W_GROUP, nb);
    /* several tokens: each quad decoded once for all of them */
    __m256 *acc = x->nt > 1 ? aligned_alloc(32, sizeof(__m256) * 4 * (size_t)x->nt) : NULL;
    for (int g0 = r0 / Q8W_GROUP * Q8W_GROUP; g0 < r1; g0 += Q8W_GROUP) {
        const uint8_t *g = (const uint8_t *)packed + grp * (size_t)(g0 / Q8W_GROUP);
        int rr = rows - g0 < Q8W_GROUP ? rows - g0 : Q8W_GROUP;
        int lo = r0 > g0 ? r0 - g0 : 0, hi = r1 - g0 < rr ? r1 - g0 : rr;
        if (acc && dt == DT_Q6_K) /* (out of memory: token by token below) */
            q6_prefill(g, rr, nb, x, y + g0, ldy, lo, hi, acc);
        else if (acc)
            nib_prefill(dt, g, rr, nb, x, y + g0, ldy, lo, hi, acc);
        else
            for (int t = 0; t < x->nt; t++) q8_group(dt, g, rr, nb, x, t, y + g0, ldy, lo, hi);
    }
    free(acc);
}

#define MATMUL_Q8(FN, DT)                                                                                   \
    static void FN(const void *p, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) { \
        run_q8(DT, p, rows, cols, r0, r1, x, y, ldy);                                                       \
    }
MATMUL_Q8(matmul_q8_q4_0, DT_Q4_0)
MATMUL_Q8(matmul_q8_q4_1, DT_Q4_1)
MATMUL_Q8(matmul_q8_q8_0, DT_Q8_0)
MATMUL_Q8(matmul_q8_q4_1g64, DT_Q4_1G64)
MATMUL_Q8(matmul_q8_q4_1g128, DT_Q4_1G128)
MATMUL_Q8(matmul_q8_q6_k, DT_Q6_K)
MATMUL_Q8(matmul_q8_q5_0, DT_Q5_0)
MATMUL_Q8(matmul_q8_q5_1, DT_Q5_1)
MATMUL_Q8(matmul_q8_q4_k, DT_Q4_K)

/* Multiply then add (no FMA), so the result is bit-identical to scalar.c. */
static void axpy_avx2(float *y, float a, const float *x, int n) {
    __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(va, _mm256_loadu_ps(x + i))));
    for (; i < n; i++) y[i] += a * x[i];
}

/* Attention, fast softmax and SwiGLU: attn_tiles.h over 8-lane vectors, a
 * register tile of 4 query rows x 16 positions (or dimensions) = 8 ymm. */
static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
static inline float hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}
#define AV __m256
#define AVI __m256i
#define AW 8
#define ATT_NV 2
#define ATT_SCORES_F32 att_scores_f32_avx2 /* the names of attn_tiles.h's functions */
#define ATT_VALUES_F32 att_values_f32_avx2
#define ATT_SCORES_BF16 att_scores_bf16_avx2
#define ATT_VALUES_BF16 att_values_bf16_avx2
#define ATT_SOFTMAX_FAST softmax_fast_avx2
#define ATT_GEGLU_FAST geglu_fast_avx2
#define ATT_SWIGLU_FAST swiglu_fast_avx2
#define av_zero() _mm256_setzero_ps()
#define av_set1(x) _mm256_set1_ps(x)
#define av_load(p) _mm256_loadu_ps(p)
#define av_store(p, v) _mm256_storeu_ps(p, v)
#define av_fma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define av_add(a, b) _mm256_add_ps(a, b)
#define av_sub(a, b) _mm256_sub_ps(a, b)
#define av_mul(a, b) _mm256_mul_ps(a, b)
#define av_div(a, b) _mm256_div_ps(a, b)
#define av_min(a, b) _mm256_min_ps(a, b)
#define av_max(a, b) _mm256_max_ps(a, b)
#define av_round(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define av_hsum(v) hsum8(v)
#define av_hmax(v) hmax8(v)
#define av_cvt_i(v) _mm256_cvtps_epi32(v)
#define av_shr1(v) _mm256_srai_epi32(v, 1)
#define av_isub(a, b) _mm256_sub_epi32(a, b)
#define av_pow2(n) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23))
#define av_bf_lo(p) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)(p)), 16))
#define av_bf_hi(p) _mm256_castsi256_ps(_mm256_and_si256(_mm256_loadu_si256((const __m256i *)(p)), _mm256_set1_epi32((int)0xffff0000u)))
#include "attn_tiles.h"

/* ---- int8 activations ------------------------------------------------------- */

/* max |x| of the 32 values at x: exact in any order. */
AI float block_amax(const float *x) {
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x), abs), _mm256_and_ps(_mm256_loadu_ps(x + 8), abs)),
                             _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + 16), abs), _mm256_and_ps(_mm256_loadu_ps(x + 24), abs)));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* The 32 values at x times 127 / amax, rounded to nearest even (vcvtps2dq), clamped to
 * +-127: elements 0..15 to lo, 16..31 to hi (16 bytes each); their sum to *s. */
AI void block_quant(const float *x, float amax, int8_t *lo, int8_t *hi, float *d, float *s) {
    float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    const __m256 vid = _mm256_set1_ps(id), lim = _mm256_set1_ps(127.0f), nlim = _mm256_set1_ps(-127.0f);
    __m256i v[4];
    UNROLL for (int i = 0; i < 4; i++)
        v[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), vid), nlim), lim));
    __m256i sum = _mm256_add_epi32(_mm256_add_epi32(v[0], v[1]), _mm256_add_epi32(v[2], v[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    UNROLL for (int h = 0; h < 2; h++) {
        /* packs works per 128-bit lane: 0..3 8..11 4..7 12..15, put back in order */
        __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(v[2 * h], v[2 * h + 1]), 0xd8);
        __m128i b = _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
        _mm_storeu_si128((__m128i *)(h ? hi : lo), b);
    }
    *d = amax / 127.0f;
    *s = (float)_mm_cvtsi128_si32(s4);
}

/* Bit-identical to scalar.c's: the same max, f32 multiply, rounding and divisions, the
 * sum in integers; each block's two halves to their places in its quad (kernels.h). */
static void quantize_act_avx2(const float *x, int ldx, int t0, int t1, const q8_act *a) {
    int nb = a->cols / 32, gs = a->group > 1 ? a->group : 1;
    for (int t = t0; t < t1; t++) {
        const float *xt = x + (size_t)t * ldx;
        int8_t *q;
        float *d, *s;
        q8_act_row(a, t, &q, &d, &s);
        for (int g = 0; g < nb; g += gs) {
            int ge = g + gs < nb ? g + gs : nb;
            float amax = 0.0f;
            for (int b = g; b < ge; b++) amax = fmaxf(amax, block_amax(xt + 32 * b));
            for (int b = g; b < ge; b++) {
                int8_t *qb = q + 128 * (size_t)(b / 4) + 16 * (size_t)(b % 4);
                block_quant(xt + 32 * b, amax, qb, qb + 64, d + b, s + b);
            }
        }
    }
}

static const kernels AVX2 = {
    .name = "avx2",
    .matmul =
        {
            [DT_F32] = matmul_f32,
            [DT_F16] = matmul_f16,
            [DT_BF16] = matmul_bf16,
            [DT_Q8_0] = matmul_q8_0,
            [DT_Q4_0] = matmul_q4_0,
            [DT_Q4_1] = matmul_q4_1,
            DQ_MATMULS,
            [DT_AFFINE4] = affine4_matmul_avx2,
            [DT_AFFINE8] = affine8_matmul_avx2,
        },
    .matmul_q8 = {[DT_Q4_0] = matmul_q8_q4_0, [DT_Q4_1] = matmul_q8_q4_1, [DT_Q8_0] = matmul_q8_q8_0,
                  [DT_Q4_1G64] = matmul_q8_q4_1g64, [DT_Q4_1G128] = matmul_q8_q4_1g128, [DT_Q6_K] = matmul_q8_q6_k,
                  [DT_Q5_0] = matmul_q8_q5_0, [DT_Q5_1] = matmul_q8_q5_1, [DT_Q4_K] = matmul_q8_q4_k,
                  [DT_AFFINE4] = affine4_q8_avx2, [DT_AFFINE8] = affine8_q8_avx2, /* affine_avx2.c */
                  [DT_Q2_K] = inplace_avx2_q2_k, [DT_Q3_K] = inplace_avx2_q3_k, [DT_Q5_K] = inplace_avx2_q5_k,
                  [DT_IQ4_NL] = inplace_avx2_iq4_nl, [DT_IQ4_XS] = inplace_avx2_iq4_xs,
                  [DT_MXFP4] = inplace_avx2_mxfp4}, /* inplace_avx2.c */
    .pack_rows = {[DT_Q4_K] = q4k_pack_rows_avx2, [DT_Q6_K] = q6k_pack_rows_avx2}, /* pack_avx2.c */
    .quantize_act = quantize_act_avx2,
    .dot = dot_avx2,
    .axpy = axpy_avx2,
    .att_scores = {[DT_F32] = att_scores_f32_avx2, [DT_BF16] = att_scores_bf16_avx2},
    .att_values = {[DT_F32] = att_values_f32_avx2, [DT_BF16] = att_values_bf16_avx2},
    .softmax_fast = softmax_fast_avx2,
    .swiglu_fast = swiglu_fast_avx2,
    .geglu_fast = geglu_fast_avx2,
};

/* The table, without any CPU check: dispatch.c calls this only after checking. */
const kernels *kernels_avx2_table(void) { return &AVX2; }

#else
typedef int avx2_not_built; /* keeps the translation unit non-empty */
#endif
