/* avx512.c - AVX-512 (F, BW, VL, DQ) kernels with f32 activations.
 *
 * Compiled with its own ISA flags (see the Makefile) and entered only after
 * dispatch.c has checked the CPU and the OS (ZMM state). Only the VNNI tables
 * use VNNI and only the last table AVX512-BF16 (fast mode's attention), each
 * picked by dispatch.c when CPUID reports the extension.
 *
 * Numerics (the contract in kernels.h): every y element has ONE accumulator
 * of 16 f32 lanes; lane i receives columns i, i+16, i+32, ... in order, by FMA,
 * and the lanes are summed by the fixed tree of reduce16(). Tiling over rows
 * and tokens only decides how many of these independent accumulators are live
 * at once, so a y element is bit-identical whatever the row range, the number
 * of tokens nt or the tile it fell in. avx2.c and neon.c emulate exactly this
 * 16-lane order with 2 x 8 and 4 x 4 lanes, so all three ISA tables give the
 * same bits (tested): llmgen's output does not depend on the machine's ISA.
 * Quantized blocks are dequantized in registers to exactly the f32 values
 * gguf-py produces, then accumulated like F32 rows (see block32). */
#include "kernels.h"

#include "affine_kernels.h" /* MLX affine kernels: affine_avx512.c */
#include "dequant.h"
#include "inplace_kernels.h"
#include "pack_kernels.h" /* Q4_K / Q6_K packers: pack_avx2.c */

#if defined(__x86_64__)

#include <immintrin.h>
#include <math.h>
#include <stdlib.h>

#include "base/util.h"

const kernels *kernels_avx512_table(int level);

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

/* Decode (nt = 1) walks GEMV_R rows at once: 8 independent FMA chains and 8
 * weight streams, each activation vector loaded once for the 8 rows (8 stream
 * BF16 and Q8_0 from DRAM faster than 4 or 16 on Zen 4: `build/bench_kernels avx512`).
 * Prefill tiles are TILE_R rows x TILE_T tokens = 16 zmm accumulators, leaving
 * room for the decoded weights and the activations in the 32 registers. */
#define GEMV_R 8
#define TILE_R 4
#define TILE_T 4
#define MAX_R 8 /* the larger of GEMV_R and TILE_R */
/* Decode prefetches the next GEMV_R-row tile into L2 while reading this one:
 * faster from DRAM than no prefetch or L1 (T0) for every dense type
 * (`build/bench_kernels avx512`, the cold column). */
#ifndef GEMV_PF_HINT
#define GEMV_PF_HINT _MM_HINT_T1
#endif

/* ---- weights to f32 -------------------------------------------------------- */

/* 16 consecutive dense weights at p as f32; `m` masks a tail (zeroes the rest,
 * and masked-off lanes are never read, so a row may end at a page boundary). */
AI __m512 dense16(dtype dt, const uint8_t *p) {
    if (dt == DT_F32) return _mm512_loadu_ps(p);
    __m256i h = _mm256_loadu_si256((const __m256i *)p);
    if (dt == DT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); /* bf16 */
}

AI __m512 dense16_tail(dtype dt, const uint8_t *p, __mmask16 m) {
    if (dt == DT_F32) return _mm512_maskz_loadu_ps(m, p);
    __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if (dt == DT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The fp16 scale at p broadcast to 16 lanes (word broadcast, then one conversion). */
AI __m512 f16_bcast(const uint8_t *p) { return _mm512_cvtph_ps(_mm256_set1_epi16((short)rd_u16(p))); }

/* The 32 weights of one block dequantized to f32: elements 0..15 in *lo,
 * 16..31 in *hi. The values are bit-identical to what gguf-py (and so HF
 * transformers) dequantizes: d*q and d*(q-8) are exact in f32, and d*q + m is
 * rounded once, here by the FMA that builds the table. 4-bit values go through
 * a 16-entry table of dequantized values with vpermps, which reads only the low
 * 4 bits of each index: the scale is applied once per 16 entries, not per weight. */
AI void block32(dtype dt, const uint8_t *blk, int j, __m512 *lo, __m512 *hi) {
    if (dt != DT_Q8_0 && dt != DT_Q4_0 && dt != DT_Q4_1) { /* the table's decoder (dequant.h) */
        float v[32];
        dq_ref32(dt, blk, j, v);
        *lo = _mm512_loadu_ps(v);
        *hi = _mm512_loadu_ps(v + 16);
        return;
    }
    if (dt == DT_Q8_0) {
        const uint8_t *q = blk + 2;
        __m512 d = f16_bcast(blk);
        *lo = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)q))));
        *hi = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(q + 16)))));
        return;
    }
    __m512 table;
    if (dt == DT_Q4_0) {
        table = _mm512_mul_ps(f16_bcast(blk), _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7));
    } else { /* d and m converted together: [d, m, d, m, ...] */
        __m512 dm = _mm512_cvtph_ps(_mm256_set1_epi32((int)rd_u32(blk)));
        table = _mm512_fmadd_ps(_mm512_moveldup_ps(dm),
                                _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                _mm512_movehdup_ps(dm));
    }
    const uint8_t *qs = blk + (dt == DT_Q4_0 ? 2 : 4);
    __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)qs));
    *lo = _mm512_permutexvar_ps(v, table);                        /* byte j low nibble: element j */
    *hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table);  /* high nibble: element j + 16 */
}

/* ---- tiles: R rows x T tokens, R and T compile-time constants after inlining ---- */

/* The fixed lane-summing tree shared with avx2.c and neon.c: 16 -> 8 (lane i:
 * v[i+8] + v[i]) -> 4 (v[i+4] + v[i]) -> 2 (v[i+2] + v[i]) -> 1 (v[1] + v[0]). */
AI float reduce16(__m512 v) {
    __m256 s8 = _mm256_add_ps(_mm512_extractf32x8_ps(v, 1), _mm512_castps512_ps256(v));
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(s8, 1), _mm256_castps256_ps128(s8));
    s = _mm_add_ps(_mm_movehl_ps(s, s), s);
    s = _mm_add_ss(_mm_movehdup_ps(s), s);
    return _mm_cvtss_f32(s);
}

AI void store_tile(__m512 acc[MAX_R][TILE_T], float *y, int ldy, int R, int T) {
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[(size_t)t * ldy + r] = reduce16(acc[r][t]);
}

AI void dense_tile(dtype dt, const uint8_t *w, size_t rb, int cols, const float *x, int ldx,
                   float *y, int ldy, int R, int T) {
    const size_t esz = dt == DT_F32 ? 4 : 2;
    __m512 acc[MAX_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    int c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m512 xv[TILE_T];
        UNROLL for (int t = 0; t < T; t++) xv[t] = _mm512_loadu_ps(x + (size_t)t * ldx + c);
        if (T == 1 && R == GEMV_R && (c * esz) % 64 == 0) /* decode: the next tile, as this one is read */
            UNROLL for (int r = 0; r < R; r++) _mm_prefetch((const char *)w + (R + r) * rb + c * esz, GEMV_PF_HINT);
        UNROLL for (int r = 0; r < R; r++) {
            __m512 wv = dense16(dt, w + r * rb + c * esz);
            UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    if (c < cols) { /* zero lanes add +0 to the sum: same order as a full vector */
        __mmask16 m = (__mmask16)((1u << (cols - c)) - 1);
        __m512 xv[TILE_T];
        UNROLL for (int t = 0; t < T; t++) xv[t] = _mm512_maskz_loadu_ps(m, x + (size_t)t * ldx + c);
        UNROLL for (int r = 0; r < R; r++) {
            __m512 wv = dense16_tail(dt, w + r * rb + c * esz, m);
            UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    store_tile(acc, y, ldy, R, T);
}

/* A block is dequantized once per row tile and used by every token of the
 * tile; the accumulation is then the dense one (16 columns per step, in
 * order), so a quantized row gives bit for bit what the F32 kernel gives on
 * its dequantized copy. */
AI void quant_tile(dtype dt, const uint8_t *w, size_t rb, int cols, const float *x, int ldx,
                   float *y, int ldy, int R, int T) {
    __m512 acc[MAX_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    for (int b = 0; b < cols / 32; b++) {
        __m512 xl[TILE_T], xh[TILE_T];
        UNROLL for (int t = 0; t < T; t++) {
            xl[t] = _mm512_loadu_ps(x + (size_t)t * ldx + 32 * b);
            xh[t] = _mm512_loadu_ps(x + (size_t)t * ldx + 32 * b + 16);
        }
        int j = 0;
        const uint8_t *blk0 = dq_sub_block(dt, w, b, &j);
        if (T == 1 && R == GEMV_R && j == 0) /* decode: the next tile, as this one is read */
            UNROLL for (int r = 0; r < R; r++) _mm_prefetch((const char *)blk0 + (R + r) * rb, GEMV_PF_HINT);
        UNROLL for (int r = 0; r < R; r++) {
            __m512 lo, hi;
            block32(dt, blk0 + r * rb, j, &lo, &hi);
            UNROLL for (int t = 0; t < T; t++) {
                acc[r][t] = _mm512_fmadd_ps(lo, xl[t], acc[r][t]);
                acc[r][t] = _mm512_fmadd_ps(hi, xh[t], acc[r][t]);
            }
        }
    }
    store_tile(acc, y, ldy, R, T);
}

/* ---- instantiation and the row / token walk (shared by every ISA file) ---- */

#define TILES_NO_DQ /* the GGUF types read through dequant.h: inplace_avx512.c's exact kernels */
#include "tiles.h"

/* ---- int8 activations on repacked weights (fast mode, layout in kernels.h) ---- */

/* One group of 8 rows (one contiguous stream) at a time; prefill tiles are that
 * group x Q8_TILE_T tokens: the group's quad of weights is loaded and unpacked
 * once per tile into 16 vectors (2 halves x 8), which with 2 x T f32
 * accumulators, 2 int32 ones, the activations and the scales fills the 32
 * registers at T = 3 (with VNNI, pairs of groups take most of prefill, see
 * q8_pair).
 * Decode: one group's stream (scales beside the payload) reads Q4_0 from DRAM
 * at about a streaming sum's rate, which `build/bench_kernels q8 avx512` prints
 * beside it (the "of stream" column); two groups at once was slower.
 * Software prefetch Q8_PF bytes ahead in the stream, into L2 (T1): 16 KB beat
 * 2 to 8 KB, T0 and NTA on SmolLM2's 576-column shapes (same command). */
#define Q8_TILE_T 3
/* Decode steps of several sequences (a batch of 4 to 15 tokens, below the
 * panels) take tiles of 8 and 4 tokens as well: 8 tokens were 4 chunk decodes
 * at T = 3 (3 + 3 + 1 + 1), one at T = 8, whose 16 accumulators beside the 16
 * weight vectors spill a few registers and still do less work per token. */
#define Q8_TILE_MAX 8
#ifndef Q8_PF
#define Q8_PF 16384
#endif
/* Also Q8_PF_L1 bytes ahead into L1 (T0), so that the loads which follow
 * find their lines in L1 rather than L2: the cold GEMV reads up to 25% faster
 * (`build/bench_kernels q8 avx512`). Decode steps of 8 sequences keep these
 * distances too: none measured better (CPU per token of `llmgen --batch -t 1
 * --parallel 8`). */
#ifndef Q8_PF_L1
#define Q8_PF_L1 4096
#endif
/* Q8_PF_PAIRS: the one-token GEMV of Q8_0 (whose chunk is 17 lines against Q4_0's 9)
 * requests its stream Q8_PF ahead into L2 only, once per aligned 128-byte pair of
 * lines: 7-21% less time per Q8_0 decode step on Zen 4, while the other types, Q8_0's
 * tiles of several tokens and the AVX2 table are slower without their T0 requests and
 * keep them. Measured by switching the policy every step inside one decode run
 * (`build/bench/llmgen_bench FILE -p 16 -n 400`, each step's time over its neighbours'). */

/* u8 x s8 products summed in 4s into 16 int32 lanes. With VNNI one vpdpbusd;
 * without, vpmaddubsw + vpmaddwd give the same integers as long as the u8
 * operand is at most 128 (a nibble 0..15, or |int8|): the s8 one is in
 * [-127, 127], so the pairwise i16 sums (<= 2 * 128 * 127) never saturate. */
AI __m512i dot_u8s8(__m512i acc, __m512i u, __m512i s, int vnni) {
    if (vnni) return _mm512_dpbusd_epi32(acc, u, s);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
}

/* Dword v (0..3) of each 128-bit lane broadcast over that lane: activation
 * bytes 4v..4v+3 of block bi's half, for the 4 rows of lanes 4bi..4bi+3. */
AI __m512i dword_bcast(__m512i x, int v) {
    switch (v & 3) {
    case 0: return _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0x00);
    case 1: return _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0x55);
    case 2: return _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0xaa);
    default: return _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0xff);
    }
}

/* 4 f32 (one per block of a quad) to 16 lanes: lanes 4b..4b+3 = v[b]. */
AI __m512 quad_expand(const float *v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                 _mm512_castps128_ps512(_mm_loadu_ps(v)));
}

/* The activation side of one quad for one token. */
typedef struct {
    __m512i x0, x1; /* first / second halves of the 4 blocks, int8 */
    __m512 dx;      /* activation scale per block (divided by 16 where the weights carry 16x) */
    __m512 s;       /* sum of the block's q (exact integer) */
    __m512i off;    /* the weights' offset times s (Q4_0 -8, Q8_0 -128 with VNNI; x16 where the sums are), int32;
                       Q6_K: -32 times the sum of the blocks' first halves */
    __m512i off1;   /* Q6_K: -32 times the sum of their second halves */
    __m512 sx;      /* Q4_1: d * s per block */
    __m512i sp;     /* Q4_K on super-block activations, odd quads q: per block, the int16 pair (s of the block
                       at its place in quad q - 1, s of this one) for the min term's vpmaddwd */
} quad_x;

/* With VNNI the Q4 kernels keep high nibbles in place (16x their value, a mask
 * instead of shift + mask), so their integer sums are 16x: still exact. (Not
 * Q5: a 5-bit value times 16 does not fit a byte.) */
AI int sums_x16(dtype dt, int vnni) { return vnni && dt != DT_Q8_0 && dt != DT_Q6_K && !q8w_five(dt); }

/* Q6_K: -32 times the sum of the 16 int8 in each 128-bit lane (a block's half), in all 4 of its dwords. */
AI __m512i q6_half_off(__m512i x, int vnni) {
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i v = vnni ? _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, x)
                     : _mm512_madd_epi16(_mm512_maddubs_epi16(ones, x), _mm512_set1_epi16(1));
    v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0xb1));
    v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x4e));
    return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(v, 5));
}

AI quad_x quad_x_load(dtype dt, int vnni, const q8_act *x, int t, int q) {
    quad_x a;
    const int8_t *xq = x->q + (size_t)t * x->quads * 128 + 128 * (size_t)q;
    size_t xo = (size_t)t * x->quads * 4 + 4 * (size_t)q;
    a.x0 = _mm512_loadu_si512(xq);
    a.x1 = _mm512_loadu_si512(xq + 64);
    __m512 dx = quad_expand(x->d + xo);
    a.s = quad_expand(x->s + xo);
    /* dx / 16 is exact (a power of two) short of subnormal scales */
    a.dx = sums_x16(dt, vnni) ? _mm512_mul_ps(dx, _mm512_set1_ps(0.0625f)) : dx;
    a.sx = q8w_has_min(dt) ? _mm512_mul_ps(dx, a.s) : _mm512_setzero_ps();
    a.sp = _mm512_setzero_si512();
    if (dt == DT_Q4_K && q % 2) {
        __m512i lo = _mm512_cvtps_epi32(quad_expand(x->s + xo - 4)), hi = _mm512_cvtps_epi32(a.s);
        a.sp = _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(hi, 16));
    }
    /* -128 = -(1 << 7), -8, Q5_0's -16 */
    int sh = dt == DT_Q4_0 ? (vnni ? 7 : 3) : dt == DT_Q5_0 ? 4 : dt == DT_Q8_0 && vnni ? 7 : -1;
    a.off = sh < 0 ? _mm512_setzero_si512()
                   : _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(_mm512_cvtps_epi32(a.s), (unsigned)sh));
    a.off1 = _mm512_setzero_si512();
    if (dt == DT_Q6_K) {
        a.off = q6_half_off(a.x0, vnni);
        a.off1 = q6_half_off(a.x1, vnni);
    }
    return a;
}

/* The per-block values of quad_x (dx, sx, off, off1: the same in the 4 lanes
 * of a block), for one token and quad, as quad_x_load derives them. Decode
 * steps of several tokens build them once per call (run_q8) rather than once
 * per group and tile: on Zen 4 vpdpbusd, vfmadd and vmulps share one pair of
 * pipes (1 zmm op per cycle), where these two multiplies per token and quad
 * (dx / 16 and Q4_1's dx * s) were 2 of the tile's 24 (`build/bench_kernels
 * steps avx512`). The shuffles of q8_group run beside vpdpbusd for free; reading
 * prebuilt activations as memory operands instead binds the one 512-bit load
 * per cycle and was slower. */
typedef struct {
    float dx[4], sx[4];
    int32_t off[4], off1[4], sp[4];
} quad_sc;

AI int quad_has_off(dtype dt, int vnni) {
    return dt == DT_Q4_0 || dt == DT_Q5_0 || dt == DT_Q6_K || (dt == DT_Q8_0 && vnni);
}

/* Whether quad_x_load computes anything quad_sc would save (without VNNI,
 * Q8_0 only loads and expands: no pass for it). */
AI int quad_sc_saves(dtype dt, int vnni) { return sums_x16(dt, vnni) || q8w_has_min(dt) || quad_has_off(dt, vnni); }

AI void quad_sc_set(dtype dt, int vnni, const q8_act *x, int t, int q, quad_sc *p) {
    quad_x a = quad_x_load(dt, vnni, x, t, q);
    const __m512i first = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0); /* lane 4 bi: block bi */
    _mm_storeu_ps(p->dx, _mm512_castps512_ps128(_mm512_permutexvar_ps(first, a.dx)));
    _mm_storeu_ps(p->sx, _mm512_castps512_ps128(_mm512_permutexvar_ps(first, a.sx)));
    _mm_storeu_si128((__m128i *)p->off, _mm512_castsi512_si128(_mm512_permutexvar_epi32(first, a.off)));
    _mm_storeu_si128((__m128i *)p->off1, _mm512_castsi512_si128(_mm512_permutexvar_epi32(first, a.off1)));
    if (dt == DT_Q4_K) _mm_storeu_si128((__m128i *)p->sp, _mm512_castsi512_si128(_mm512_permutexvar_epi32(first, a.sp)));
}

/* quad_x_load with the per-block values from *p (quad_sc_set): the same vectors. */
AI quad_x quad_x_sc(dtype dt, int vnni, const q8_act *x, int t, int q, const quad_sc *p) {
    quad_x a;
    const int8_t *xq = x->q + (size_t)t * x->quads * 128 + 128 * (size_t)q;
    a.x0 = _mm512_loadu_si512(xq);
    a.x1 = _mm512_loadu_si512(xq + 64);
    a.dx = quad_expand(p->dx);
    a.s = _mm512_setzero_ps(); /* only quad_x_load's own terms use it */
    a.sx = q8w_has_min(dt) ? quad_expand(p->sx) : _mm512_setzero_ps();
    a.off = quad_has_off(dt, vnni) ? _mm512_castps_si512(quad_expand((const float *)p->off)) : _mm512_setzero_si512();
    a.off1 = dt == DT_Q6_K ? _mm512_castps_si512(quad_expand((const float *)p->off1)) : _mm512_setzero_si512();
    a.sp = dt == DT_Q4_K ? _mm512_castps_si512(quad_expand((const float *)p->sp)) : _mm512_setzero_si512();
    return a;
}

/* One half (4 rows) of a chunk, unpacked for dot_u8s8: u[v] pairs with dword v
 * of x0 (v < 4) or of x1 (v >= 4); Q8_0 without VNNI keeps |w| and the sign
 * masks (its activations get the weights' signs, since w + 128 can reach 255,
 * which vpmaddubsw would saturate). */
typedef struct {
    __m512i u[8];
    __mmask64 neg[8];
    __m512 sw, mw; /* scales and Q4_1 mins, lane 4 bi + ii; Q6_K: scales of the first / second 16 */
    __m512i mi;    /* Q4_K: the 6-bit mins m as int32, lane 4 bi + ii */
    __m512 nm;     /* Q4_K: 16 times -dmin, lane 4 bi + ii (row ii) */
} half_w;

/* Q6_K: the 2-bit field f (0..3) of each byte of h moved to bits 4-5, the rest 0. */
AI __m512i q6_hbits(__m512i h, int f) {
    const __m512i m30 = _mm512_set1_epi8(0x30);
    switch (f) {
    case 0: return _mm512_and_si512(_mm512_slli_epi16(h, 4), m30);
    case 1: return _mm512_and_si512(_mm512_slli_epi16(h, 2), m30);
    case 2: return _mm512_and_si512(h, m30);
    default: return _mm512_and_si512(_mm512_srli_epi16(h, 2), m30);
    }
}

/* GFNI's vgf2p8affineqb: each byte of x times an 8x8 bit matrix, here a bit
 * permutation: output bit i is input bit src[i] (src[i] < 0: 0). Row i of the
 * matrix is byte 7 - i of its qword. Inline assembly, so that this file needs
 * no -mgfni (which would let the compiler use GFNI anywhere in it): the tables
 * that reach it are chosen only on CPUs with GFNI (dispatch.c). */
AI __m512i gf_bits(__m512i x, uint64_t mat) {
    __m512i r;
    __asm__("vgf2p8affineqb $0, %2, %1, %0" : "=v"(r) : "v"(x), "v"(_mm512_set1_epi64((long long)mat)));
    return r;
}
/* The matrix moving bits a..a+3 to 0..3 and bits s, s+1 to 4, 5 (bits 6, 7: 0). */
AI uint64_t gf_q6(int a, int s) {
    uint64_t m = 0;
    for (int i = 0; i < 4; i++) m |= (uint64_t)1 << (8 * (7 - i) + a + i);
    return m | (uint64_t)1 << (8 * 3 + s) | (uint64_t)1 << (8 * 2 + s + 1);
}

/* Q6_K half h of a full chunk (8 rows x 4 blocks): the 6-bit values u (0..63, the
 * weight is u - 32) and the f32 scales d * sc of each block's halves. dq: the f16 d
 * of the group's 8 rows for this quad's super-block. (a ? b : c) by vpternlogd 0xca.
 * gf (GFNI): each u from one vpternlogd (the nibble beside a high-bit byte holding
 * its field) and one bit permutation, 18 vector ops per half instead of 26, the
 * same bytes: the high-bit bytes shifted by 4 once per half, so that fields 0, 1
 * (2, 3) of a byte sit in the half the nibble leaves free: 5-11% faster in cache,
 * the same from DRAM (`build/bench_kernels q8 avx512 Q6_K`: avx512 against avx512-nogfni). */
AI half_w q6_half_load_isa(const uint8_t *ck, const uint8_t *dq, int h, int gf) {
    half_w w;
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    __m512 d = _mm512_broadcast_f32x4(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(dq + 8 * h))));
    const uint8_t *sc = ck + 16 * h, *pay = ck + 64 + 384 * h;
    w.sw = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)sc))));
    w.mw = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(sc + 32)))));
    __m512i h0 = _mm512_loadu_si512(pay + 256), h1 = _mm512_loadu_si512(pay + 320);
    if (gf) {
        /* per byte: h0s bits 4-7 = h0 bits 0-3 (fields 0, 1), h1s bits 0-3 = h1 bits 4-7 (fields 2, 3) */
        __m512i h0s = _mm512_slli_epi16(h0, 4), h1s = _mm512_srli_epi16(h1, 4);
        UNROLL for (int v = 0; v < 4; v++) {
            __m512i n = _mm512_loadu_si512(pay + 64 * v);
            /* low nibble in bits 0-3, field v of h0 at bits 4 + 2 (v % 2) */
            w.u[v] = gf_bits(_mm512_ternarylogic_epi32(m0f, n, v < 2 ? h0s : h0, 0xca), gf_q6(0, 4 + 2 * (v % 2)));
            /* high nibble in bits 4-7, field v of h1 at bits 2 (v % 2) */
            w.u[v + 4] = gf_bits(_mm512_ternarylogic_epi32(m0f, v < 2 ? h1 : h1s, n, 0xca), gf_q6(4, 2 * (v % 2)));
        }
        return w;
    }
    UNROLL for (int v = 0; v < 4; v++) {
        __m512i n = _mm512_loadu_si512(pay + 64 * v);
        w.u[v] = _mm512_ternarylogic_epi32(m0f, n, q6_hbits(h0, v), 0xca);
        w.u[v + 4] = _mm512_ternarylogic_epi32(m0f, _mm512_srli_epi16(n, 4), q6_hbits(h1, v), 0xca);
    }
    return w;
}
AI half_w q6_half_load(const uint8_t *ck, const uint8_t *dq, int h) { return q6_half_load_isa(ck, dq, h, 0); }

/* Q6_K: the f16 d of the 8 rows of a group (rr of them present, the rest 0) for
 * quad q's super-block, at a pointer q6_half_load reads 16 bytes from. */
AI const uint8_t *q6_dq(const uint8_t *g, int rr, int q, uint8_t tmp[16]) {
    if (rr == Q8W_GROUP) return q8w_d_at(g, rr, q / 2, 0);
    memset(tmp, 0, 16);
    memcpy(tmp, q8w_d_at(g, rr, q / 2, 0), 2 * (size_t)rr);
    return tmp;
}

/* Q4_K: the f16 d and -dmin of a group's 8 rows for one super-block (32 bytes at dm) as f32. */
AI __m512 q4k_dm_f32(const uint8_t *dm) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)dm)); }

/* Q4_K half h of a full chunk: the nibbles as half_load's Q4 ones, the f32 block
 * scales d * sc and mins -dmin * m (exact products). dm: q4k_dm_f32 of this quad's
 * super-block (lanes 0..7 d, 8..15 -dmin of rows 0..7). */
AI half_w q4k_half_load(const uint8_t *ck, __m512 dm, int h, int vnni) {
    half_w w;
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    const __m512i ld = _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3); /* lane 4 bi + ii: row ii */
    __m512 d = _mm512_permutexvar_ps(_mm512_add_epi32(ld, _mm512_set1_epi32(4 * h)), dm);
    __m512 nm = _mm512_permutexvar_ps(_mm512_add_epi32(ld, _mm512_set1_epi32(8 + 4 * h)), dm);
    const uint8_t *sc = ck + 16 * h, *pay = ck + 64 + 256 * h;
    w.sw = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)sc))));
    w.mi = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(sc + 32)));
    w.mw = _mm512_mul_ps(nm, _mm512_cvtepi32_ps(w.mi));
    w.nm = _mm512_mul_ps(nm, _mm512_set1_ps(16.0f)); /* exact: a power of two */
    UNROLL for (int v = 0; v < 4; v++) {
        __m512i raw = _mm512_loadu_si512(pay + 64 * v);
        w.u[v] = _mm512_and_si512(raw, m0f);
        w.u[v + 4] = vnni ? _mm512_and_si512(raw, _mm512_set1_epi8((char)0xf0)) : _mm512_and_si512(_mm512_srli_epi16(raw, 4), m0f);
    }
    return w;
}

/* Half h of a chunk `ck` of 8 rows x kb blocks. Q5_0 / Q5_1: the nibbles as Q4's
 * without VNNI, each vector's fifth bits brought to bit 4 by one shift of the
 * fifth-bit vector and OR-ed in under the mask 0x10 (vpternlogd 0xf8: a | (b & c)). */
AI half_w half_load(dtype dt, int vnni, const uint8_t *ck, int kb, int h) {
    half_w w;
    const int nv = dt == DT_Q8_0 ? 8 : 4, hdr = q8w_hdr(dt), gb = q8w_gb(dt), ns = 4 * kb / gb;
    const int five = q8w_five(dt);
    const q8w_chunk c = {0, Q8W_GROUP, kb, 0};
    const uint8_t *sc = ck + 2 * q8w_scale_idx(dt, &c, 4 * h, 0), *mn = sc + 2 * q8w_nscales(dt, &c);
    const uint8_t *pay = ck + (size_t)hdr * 8 * kb + (size_t)h * 4 * kb * q8w_nv(dt) * 4;
    __mmask16 m16 = (__mmask16)((1u << (4 * kb)) - 1), ms = (__mmask16)((1u << ns) - 1);
    __m512i hb = _mm512_setzero_si512();
    if (five) hb = kb == 4 ? _mm512_loadu_si512(pay + 4 * 64) : _mm512_maskz_loadu_epi32(m16, pay + (size_t)4 * kb * 16);
    w.sw = ns == 16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)sc))
                    : _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(ms, sc));
    w.mw = _mm512_setzero_ps();
    if (q8w_has_min(dt))
        w.mw = ns == 16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)mn))
                        : _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(ms, mn));
    if (gb > 1) { /* one scale per gb blocks: lane 4 bi + ii takes entry 4 (bi / gb) + ii */
        const __m512i ex = gb == 2 ? _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7)
                                   : _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
        w.sw = _mm512_permutexvar_ps(ex, w.sw);
        w.mw = _mm512_permutexvar_ps(ex, w.mw);
    }
    UNROLL for (int v = 0; v < nv; v++) {
        const uint8_t *p = pay + (size_t)v * kb * 16;
        __m512i raw = kb == 4 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi32(m16, p);
        if (dt == DT_Q8_0) {
            w.u[v] = raw;
            if (!vnni) {
                __m512i s = _mm512_xor_si512(raw, _mm512_set1_epi8((char)0x80)); /* the signed weights */
                w.neg[v] = _mm512_movepi8_mask(s);
                w.u[v] = _mm512_abs_epi8(s);
            }
        } else if (five) {
            const __m512i m0f = _mm512_set1_epi8(0x0f), m10 = _mm512_set1_epi8(0x10);
            w.u[v] = _mm512_ternarylogic_epi32(_mm512_and_si512(raw, m0f), _mm512_slli_epi16(hb, 4 - v), m10, 0xf8);
            w.u[v + 4] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(raw, 4), m0f),
                                                   _mm512_srli_epi16(hb, v), m10, 0xf8);
        } else {
            w.u[v] = _mm512_and_si512(raw, _mm512_set1_epi8(0x0f));
            w.u[v + 4] = vnni ? _mm512_and_si512(raw, _mm512_set1_epi8((char)0xf0))
                              : _mm512_and_si512(_mm512_srli_epi16(raw, 4), _mm512_set1_epi8(0x0f));
        }
    }
    return w;
}

/* Both halves' integer sums for one token: lane 4 bi + ii = row 4h + ii, block bi,
 * (16 x, see sums_x16) sum_j u * q. Each broadcast activation vector serves both halves. */
AI void half_sums(dtype dt, int vnni, const half_w w[2], const quad_x *a, __m512i acc[2]) {
    /* two chains per half (vectors 0..3 and 4..7) halve the vpdpbusd latency chain */
    /* the offset term starts the unshifted chain: one integer sum, exact */
    __m512i c[2][2] = {{_mm512_setzero_si512(), a->off}, {_mm512_setzero_si512(), a->off}};
    UNROLL for (int v = 0; v < 8; v++) {
        __m512i xs = dword_bcast(v < 4 ? a->x0 : a->x1, v);
        UNROLL for (int h = 0; h < 2; h++) {
            __m512i s = xs;
            if (dt == DT_Q8_0 && !vnni) s = _mm512_mask_sub_epi8(s, w[h].neg[v], _mm512_setzero_si512(), s);
            c[h][v / 4] = dot_u8s8(c[h][v / 4], w[h].u[v], s, vnni);
        }
    }
    UNROLL for (int h = 0; h < 2; h++) /* with x16 sums the low nibbles count 16x too */
        acc[h] = _mm512_add_epi32(sums_x16(dt, vnni) ? _mm512_slli_epi32(c[h][0], 4) : c[h][0], c[h][1]);
}

/* Q6_K: the sums of both halves of the blocks apart (each has its scale), offsets included. */
AI void q6_half_sums(int vnni, const half_w w[2], const quad_x *a, __m512i acc[2][2]) {
    UNROLL for (int h = 0; h < 2; h++) acc[h][0] = a->off, acc[h][1] = a->off1;
    UNROLL for (int v = 0; v < 8; v++) {
        __m512i xs = dword_bcast(v < 4 ? a->x0 : a->x1, v);
        UNROLL for (int h = 0; h < 2; h++) acc[h][v / 4] = dot_u8s8(acc[h][v / 4], w[h].u[v], xs, vnni);
    }
}

/* Q6_K: acc + both halves' terms. */
AI __m512 q6_half_fma(const half_w *w, const quad_x *a, const __m512i isum[2], __m512 acc) {
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[0]), _mm512_mul_ps(w->sw, a->dx), acc);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[1]), _mm512_mul_ps(w->mw, a->dx), acc);
}

/* One quad's terms for one half and token: the exact integer sum (offset
 * included: Q4_0 nibble - 8, Q8_0 stored w + 128 with VNNI) as f32 (exact:
 * below 2^24), times dw * dx; Q4_1 adds m * (dx * s). */
AI __m512 half_fma(dtype dt, const half_w *w, const quad_x *a, __m512i isum, __m512 acc) {
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(w->sw, a->dx), acc);
    return q8w_has_min(dt) ? _mm512_fmadd_ps(w->mw, a->sx, acc) : acc;
}

/* Rows 4h..4h+3 from an accumulator: lane 4 bi + ii summed over bi by a fixed
 * tree ((bi 0 + 2) + (bi 1 + 3)), whatever the tile. */
AI __m128 half_rows(__m512 acc) {
    __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    return _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
}

/* Both halves of quad q of the group at g (rr rows; a partial group is widened
 * into `wide` first), with the stream prefetched Q8_PF ahead. gemv: the call is the
 * one-token GEMV's, which takes Q8_0's stream its own way (see below). */
AI void chunk_load(dtype dt, int vnni, const uint8_t *g, int rr, int nb, int q, uint8_t *wide, half_w w[2],
                   int gemv) {
    const int bb = q8w_block_bytes(dt), kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
    const uint8_t *ck = g + q8w_dtab(dt, rr, nb) + (size_t)rr * 4 * q * bb;
    if (rr < Q8W_GROUP) {
        q8w_widen(dt, ck, rr, kb, wide, kb);
        ck = wide;
    }
    if (Q8_PF && rr == Q8W_GROUP && gemv && dt == DT_Q8_0) {
        /* Q8_0's one-token stream: into L2 only, one request per aligned 128-byte pair
         * of lines (Q8_PF_PAIRS) */
        const char *pair = (const char *)(((uintptr_t)ck + Q8_PF) & ~(uintptr_t)127);
        for (int l = 0; l < Q8W_GROUP * kb * bb; l += 128) _mm_prefetch(pair + l, _MM_HINT_T1);
    } else if (Q8_PF && rr == Q8W_GROUP) {
        for (int l = 0; l < Q8W_GROUP * kb * bb; l += 64) {
            _mm_prefetch((const char *)ck + Q8_PF + l, _MM_HINT_T1);
            _mm_prefetch((const char *)ck + Q8_PF_L1 + l, _MM_HINT_T0);
        }
    }
    if (Q8_PF && q == 0 && q8w_dtab(dt, rr, nb)) { /* the chunk prefetch above skips the d tables: the one
                                                       of the first group Q8_PF ahead, whole */
        size_t grp = q8w_group_bytes(dt, Q8W_GROUP, nb), ahead = (Q8_PF / grp + 1) * grp;
        for (size_t l = 0; l < q8w_dtab(dt, Q8W_GROUP, nb); l += 64) _mm_prefetch((const char *)g + ahead + l, _MM_HINT_T1);
    }
    if (dt == DT_Q6_K) {
        uint8_t tmp[16];
        const uint8_t *dq = q6_dq(g, rr, q, tmp);
        w[0] = q6_half_load_isa(ck, dq, 0, vnni == 2);
        w[1] = q6_half_load_isa(ck, dq, 1, vnni == 2);
    } else if (dt == DT_Q4_K) {
        uint8_t tmp[32];
        const uint8_t *dm = q8w_dm_quad(g, rr, q, tmp);
        __m512 dmv = q4k_dm_f32(dm);
        w[0] = q4k_half_load(ck, dmv, 0, vnni);
        w[1] = q4k_half_load(ck, dmv, 1, vnni);
    } else if (kb == 4) { /* the common case with constant masks and offsets */
        w[0] = half_load(dt, vnni, ck, 4, 0);
        w[1] = half_load(dt, vnni, ck, 4, 1);
    } else {
        w[0] = half_load(dt, vnni, ck, kb, 0);
        w[1] = half_load(dt, vnni, ck, kb, 1);
    }
}

/* A matrix's last quad of 1 or 2 blocks (SmolLM2's 576 columns: 4.5 quads, its
 * 49152-row lm_head too) on the low 256 bits only, where its blocks are: the
 * high lanes (blocks 2, 3: zero weights and activations) only ever added +0 to
 * accumulators that are never -0 (they start at +0, and an exact zero sum
 * rounds to +0), which leaves them as they are. 256-bit vpdpbusd, vmulps and
 * vfmadd issue two per cycle on Zen 4 against one for 512 bits: the half quad
 * costs half a quad instead of a whole one (3-6% on 576-column matrices:
 * `build/bench_kernels steps avx512`). */
AI __m256i dword_bcast_lo(__m512i x, int v) {
    __m256i l = _mm512_castsi512_si256(x);
    switch (v & 3) {
    case 0: return _mm256_shuffle_epi32(l, 0x00);
    case 1: return _mm256_shuffle_epi32(l, 0x55);
    case 2: return _mm256_shuffle_epi32(l, 0xaa);
    default: return _mm256_shuffle_epi32(l, 0xff);
    }
}

AI __m256i dot_u8s8_lo(__m256i acc, __m256i u, __m256i s, int vnni) {
    if (vnni) return _mm256_dpbusd_epi32(acc, u, s);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

/* half_sums on the low 256 bits. */
AI void half_sums_lo(dtype dt, int vnni, const half_w w[2], const quad_x *a, __m256i acc[2]) {
    const __m256i off = _mm512_castsi512_si256(a->off);
    __m256i c[2][2] = {{_mm256_setzero_si256(), off}, {_mm256_setzero_si256(), off}};
    UNROLL for (int v = 0; v < 8; v++) {
        __m256i xs = dword_bcast_lo(v < 4 ? a->x0 : a->x1, v);
        UNROLL for (int h = 0; h < 2; h++) {
            __m256i s = xs;
            if (dt == DT_Q8_0 && !vnni) s = _mm256_mask_sub_epi8(s, (__mmask32)w[h].neg[v], _mm256_setzero_si256(), s);
            c[h][v / 4] = dot_u8s8_lo(c[h][v / 4], _mm512_castsi512_si256(w[h].u[v]), s, vnni);
        }
    }
    UNROLL for (int h = 0; h < 2; h++)
        acc[h] = _mm256_add_epi32(sums_x16(dt, vnni) ? _mm256_slli_epi32(c[h][0], 4) : c[h][0], c[h][1]);
}

/* half_fma on the low 256 bits; the high ones of acc kept. */
AI __m512 half_fma_lo(dtype dt, const half_w *w, const quad_x *a, __m256i isum, __m512 acc) {
    __m256 l = _mm512_castps512_ps256(acc);
    l = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(_mm512_castps512_ps256(w->sw), _mm512_castps512_ps256(a->dx)), l);
    if (q8w_has_min(dt)) l = _mm256_fmadd_ps(_mm512_castps512_ps256(w->mw), _mm512_castps512_ps256(a->sx), l);
    return _mm512_insertf32x8(acc, l, 0);
}

/* half_rows for int32 lanes: exact, any order. */
AI __m128i half_rows_i(__m512i v) {
    __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti32x8_epi32(v, 1));
    return _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
}

/* Q4_K on super-block activations (q8_act.group = Q8_ACT_SB, with VNNI: "k8"):
 * the 8 blocks of a super-block share the activation scale dx, so it leaves the
 * per-block products, and the min term becomes one integer sum. Per row and
 * super-block (quads q0, q1):
 *   S_b = f32(isum_b) * (d sc_b) (isum 16x, as sums_x16);
 *   R_q = (S_0 + S_2) + (S_1 + S_3) over the blocks of quad q;  R = R_q0 + R_q1;
 *   M = sum of m s over the 8 blocks (exact int32);
 *   acc = fma(fma(f32(M), 16 (-dmin), R), dx / 16, acc);
 * the row's result is acc after the last super-block. Against the per-block
 * form (a mul for d sc dx and two fma per block and token) a panel takes per 256
 * columns and token 64 vpdpbusd + 8 mul + 4 vpdpwssd + 2 fma = 78 instead
 * of 88 operations on the pipes vpdpbusd shares. panel_tile_k8, q8_group and
 * gemv_group (k8_quad) compute exactly this.
 * Prefill panels gain 9-12% over the per-block form, decode tiles of 8 tokens lose ~20%
 * (the folds and each token's running R) (`build/bench_kernels q8 avx512 Q4_K`, `steps`).
 * Q6_K keeps its per-block arithmetic: this form made its GEMV slower from DRAM, and
 * Q6_K is the lm_head of Q4_K_M files.
 *
 * k8_quad: quad q of both halves for one token: R_q of the group's 8 rows (half_rows'
 * tree, on 256 and 128 bits) into the running R (rp), folded at the super-block's
 * second quad into acc with M, from one vpmaddwd per half of the int16 pairs (m of
 * quad q - 1: mprev, m of quad q) and (s of both, sp) and the same tree (exact).
 * (512-bit cross-lane shuffles, as a butterfly, cost the 8-token tiles 12%; M
 * summed per token over both quads, 16 more live registers there: bench_kernels.) */
AI void k8_quad(int q, const half_w w[2], const __m512i isum[2], const __m512i mprev[2], __m512i sp, __m512 dx,
                __m256 *rp, __m256 *acc) {
    __m128 rh[2];
    UNROLL for (int h = 0; h < 2; h++) rh[h] = half_rows(_mm512_mul_ps(_mm512_cvtepi32_ps(isum[h]), w[h].sw));
    __m256 r = _mm256_insertf128_ps(_mm256_castps128_ps256(rh[0]), rh[1], 1);
    if (q % 2 == 0) {
        *rp = r;
        return;
    }
    r = _mm256_add_ps(*rp, r);
    __m128i mh[2];
    UNROLL for (int h = 0; h < 2; h++)
        mh[h] = half_rows_i(_mm512_madd_epi16(_mm512_or_si512(mprev[h], _mm512_slli_epi32(w[h].mi, 16)), sp));
    __m256i mm = _mm256_inserti128_si256(_mm256_castsi128_si256(mh[0]), mh[1], 1);
    __m256 nm = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm512_castps512_ps128(w[0].nm)),
                                     _mm512_castps512_ps128(w[1].nm), 1);
    r = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm), nm, r);
    *acc = _mm256_fmadd_ps(r, _mm512_castps512_ps256(dx), *acc);
}

/* Rows 4h..4h+3 of a k8 accumulator. */
AI __m128 k8_rows(__m256 acc, int h) { return h ? _mm256_extractf128_ps(acc, 1) : _mm256_castps256_ps128(acc); }

/* Rows [lo, hi) of the group at g (rr rows) x tokens [t0, t0 + T): y rows
 * start at y0 (the group's first row). sc: NULL, or the per-block values of
 * every token and quad (sc[t * quads + q]). */
AI void q8_group(dtype dt, int vnni, int k8, const uint8_t *g, int rr, int nb, const q8_act *x, const quad_sc *sc,
                 int t0, float *y0, int ldy, int lo, int hi, int T) {
    _Alignas(64) uint8_t wide[Q8W_GROUP * 4 * 34];
    __m512 acc[2][Q8_TILE_MAX];
    __m256 acc8[Q8_TILE_MAX], rp8[Q8_TILE_MAX]; /* k8: the group's 8 rows */
    __m512i mprev[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()}; /* k8: the mins of quad q - 1 */
    UNROLL for (int h = 0; h < 2; h++) UNROLL for (int t = 0; t < T; t++) {
        acc[h][t] = _mm512_setzero_ps();
        acc8[t] = rp8[t] = _mm256_setzero_ps();
    }
    for (int q = 0; 4 * q < nb; q++) {
        half_w w[2];
        chunk_load(dt, vnni, g, rr, nb, q, wide, w, 0);
        if (k8) {
            UNROLL for (int t = 0; t < T; t++) {
                quad_x a = sc ? quad_x_sc(dt, vnni, x, t0 + t, q, sc + (size_t)(t0 + t) * x->quads + q)
                              : quad_x_load(dt, vnni, x, t0 + t, q);
                __m512i isum[2];
                half_sums(dt, vnni, w, &a, isum);
                k8_quad(q, w, isum, mprev, a.sp, a.dx, &rp8[t], &acc8[t]);
            }
            UNROLL for (int h = 0; h < 2; h++) mprev[h] = w[h].mi;
            continue;
        }
        if (dt != DT_Q6_K && dt != DT_Q4_K && nb - 4 * q <= 2) { /* the last quad, 1 or 2 blocks */
            UNROLL for (int t = 0; t < T; t++) {
                quad_x a = sc ? quad_x_sc(dt, vnni, x, t0 + t, q, sc + (size_t)(t0 + t) * x->quads + q)
                              : quad_x_load(dt, vnni, x, t0 + t, q);
                __m256i isum[2];
                half_sums_lo(dt, vnni, w, &a, isum);
                UNROLL for (int h = 0; h < 2; h++) acc[h][t] = half_fma_lo(dt, &w[h], &a, isum[h], acc[h][t]);
            }
            continue;
        }
        UNROLL for (int t = 0; t < T; t++) {
            quad_x a = sc ? quad_x_sc(dt, vnni, x, t0 + t, q, sc + (size_t)(t0 + t) * x->quads + q)
                          : quad_x_load(dt, vnni, x, t0 + t, q);
            if (dt == DT_Q6_K) {
                __m512i is2[2][2];
                q6_half_sums(vnni, w, &a, is2);
                UNROLL for (int h = 0; h < 2; h++) acc[h][t] = q6_half_fma(&w[h], &a, is2[h], acc[h][t]);
                continue;
            }
            __m512i isum[2];
            half_sums(dt, vnni, w, &a, isum);
            UNROLL for (int h = 0; h < 2; h++) acc[h][t] = half_fma(dt, &w[h], &a, isum[h], acc[h][t]);
        }
    }
    UNROLL for (int h = 0; h < 2; h++) {
        int a0 = lo - 4 * h < 0 ? 0 : lo - 4 * h, a1 = hi - 4 * h > 4 ? 4 : hi - 4 * h;
        if (a1 <= a0) continue;
        __mmask8 m = (__mmask8)(((1u << a1) - 1) & ~((1u << a0) - 1));
        UNROLL for (int t = 0; t < T; t++)
            _mm_mask_storeu_ps(y0 + (size_t)(t0 + t) * ldy + 4 * h, m, k8 ? k8_rows(acc8[t], h) : half_rows(acc[h][t]));
    }
}

/* Decode with VNNI: the activation side of a quad (the 8 broadcast dwords,
 * dx, the offset and Q4_1 terms) is the same for every group, so it is built
 * once per call for all quads (704 bytes each, read back as vpdpbusd memory
 * operands) instead of once per group: a third fewer vector ops per chunk,
 * and a GEMV streaming from DRAM is partly bound by those. The arithmetic is
 * q8_group's for T = 1 exactly (the same chains, the same cvt, mul and fma). */
typedef struct {
    __m512i xs[8]; /* dword v of the quad's first (v < 4) or second halves, per 128-bit lane */
    __m512 dx, sx; /* as quad_x */
    __m512i off, sp;
} quad_pre;

AI void quad_pre_fill(dtype dt, const q8_act *x, quad_pre *pre) {
    for (int q = 0; q < x->quads; q++) {
        quad_x a = quad_x_load(dt, 1, x, 0, q);
        UNROLL for (int v = 0; v < 8; v++) pre[q].xs[v] = dword_bcast(v < 4 ? a.x0 : a.x1, v);
        pre[q].dx = a.dx;
        pre[q].sx = a.sx;
        pre[q].off = a.off;
        pre[q].sp = a.sp;
    }
}

/* Rows [lo, hi) of the group at g (rr rows), one token. */
AI void gemv_group(dtype dt, int vnni, int k8, const uint8_t *g, int rr, int nb, const quad_pre *pre, float *y0, int lo,
                   int hi) {
    _Alignas(64) uint8_t wide[Q8W_GROUP * 4 * 34];
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    __m256 acc8 = _mm256_setzero_ps(), rp8 = acc8; /* k8: the group's 8 rows */
    __m512i mprev[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()}; /* k8: the mins of quad q - 1 */
    for (int q = 0; 4 * q < nb; q++) {
        half_w w[2];
        chunk_load(dt, vnni, g, rr, nb, q, wide, w, 1);
        const quad_pre *a = pre + q;
        __m512i ks[2]; /* k8: the halves' sums */
        UNROLL for (int h = 0; h < 2; h++) {
            __m512i c0 = _mm512_setzero_si512(), c1 = a->off;
            UNROLL for (int v = 0; v < 4; v++) c0 = _mm512_dpbusd_epi32(c0, w[h].u[v], a->xs[v]);
            UNROLL for (int v = 4; v < 8; v++) c1 = _mm512_dpbusd_epi32(c1, w[h].u[v], a->xs[v]);
            __m512i isum = _mm512_add_epi32(sums_x16(dt, 1) ? _mm512_slli_epi32(c0, 4) : c0, c1);
            if (k8) {
                ks[h] = isum;
                continue;
            }
            acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(w[h].sw, a->dx), acc[h]);
            if (q8w_has_min(dt)) acc[h] = _mm512_fmadd_ps(w[h].mw, a->sx, acc[h]);
        }
        if (k8) {
            k8_quad(q, w, ks, mprev, a->sp, a->dx, &rp8, &acc8);
            UNROLL for (int h = 0; h < 2; h++) mprev[h] = w[h].mi;
        }
    }
    UNROLL for (int h = 0; h < 2; h++) {
        int a0 = lo - 4 * h < 0 ? 0 : lo - 4 * h, a1 = hi - 4 * h > 4 ? 4 : hi - 4 * h;
        if (a1 <= a0) continue;
        __mmask8 m = (__mmask8)(((1u << a1) - 1) & ~((1u << a0) - 1));
        _mm_mask_storeu_ps(y0 + 4 * h, m, k8 ? k8_rows(acc8, h) : half_rows(acc[h]));
    }
}

/* The group of rows from g0: its rows rr (the last group may have fewer than
 * Q8W_GROUP) and the part [lo, hi) of them that falls in [r0, r1). */
AI void group_span(int rows, int g0, int r0, int r1, int *rr, int *lo, int *hi) {
    *rr = rows - g0 < Q8W_GROUP ? rows - g0 : Q8W_GROUP;
    *lo = r0 > g0 ? r0 - g0 : 0;
    *hi = r1 - g0 < *rr ? r1 - g0 : *rr;
}

/* Rows [r0, r1) of a GEMV with the activation side built once; 0 if the
 * scratch could not be allocated (nothing done). */
#define GEMV_STACK_QUADS 32 /* K up to 4096: the activation side on the stack (22 KB), no malloc per call */
AI int run_gemv(dtype dt, int vnni, int k8, const void *packed, int rows, int nb, int r0, int r1, const q8_act *x,
               float *y) {
    quad_pre local[GEMV_STACK_QUADS];
    quad_pre *pre = x->quads <= GEMV_STACK_QUADS ? local : aligned_alloc(64, sizeof(quad_pre) * (size_t)x->quads);
    if (!pre) return 0;
    quad_pre_fill(dt, x, pre);
    size_t grp = q8w_group_bytes(dt, Q8W_GROUP, nb);
    for (int g0 = r0 / Q8W_GROUP * Q8W_GROUP; g0 < r1; g0 += Q8W_GROUP) {
        int rr, lo, hi;
        group_span(rows, g0, r0, r1, &rr, &lo, &hi);
        gemv_group(dt, vnni, k8, (const uint8_t *)packed + grp * (size_t)(g0 / Q8W_GROUP), rr, nb, pre, y + g0, lo, hi);
    }
    if (pre != local) free(pre);
    return 1;
}

/* Prefill with VNNI: 16-row panels (two whole groups). A panel's weights are
 * unpacked once per call into a scratch in the order a row-per-lane tile wants:
 * for block b and k-step j (activation bytes 4j..4j+3 of the block in the
 * quad order: first halves, then second halves), one vector of 16 rows x the 4
 * u8 weights that meet them. The inner loop is then one weight load per
 * PANEL_T vpdpbusd, each taking its activations as a 32-bit broadcast from
 * memory: no shuffles, no reduction across lanes. (The previous tile, 16 rows
 * x 4 tokens in the chunk order, spent more vector ops on broadcasts,
 * offsets and unpacking than on vpdpbusd.)
 * Per row the arithmetic is q8_group's exactly: the same integer block sums
 * (Q4 low nibbles stored x16 like the high ones, the same offset terms), the
 * same cvt, mul by the same dw * dx and fma into one f32 accumulator per block
 * position bi of the quad, the same Q4_1 min term, and the same final tree
 * ((bi 0 + 2) + (bi 1 + 3)): a row's result does not depend on the tile. */
#define PANEL_T 4
#ifndef Q8_PANELS_MIN_T
#define Q8_PANELS_MIN_T 16
#endif

typedef struct {
    __m512i *w;   /* (nb, 8): block b, k-step j: lane r = row r of the panel, its 4 u8 weights */
    __m512 *sw;   /* (nb) the 16 rows' f32 block scales */
    __m512 *mw;   /* (nb) Q4_1 block mins */
    float *dx;    /* (nt, npad) activation block scale as q8_group uses it (/ 16 for Q4) */
    float *sx;    /* (nt, npad) Q4_1: d * s */
    int32_t *off; /* (nt, npad) Q4_0 / Q8_0: the offset term (-8 or -128, x16 for Q4) times s;
                     Q6_K: -32 times the sum of the block's first 16 q (mw: the second 16's scales) */
    int32_t *off1; /* (nt, npad) Q6_K: -32 times the sum of its second 16 */
    __m512 *nd;    /* (nb / 8) k8: the 16 rows' 16 (-dmin) per super-block; mw: the mins m as int32, and
                      off: per token, super-block sb and bi < 4, the int16 pair (s of block 8 sb + bi,
                      of block 8 sb + 4 + bi) for vpdpwssd */
} panel;

/* Lane l of a[0..3]'s 128-bit lanes, for l = 0..3: out[l] = (a0.l, a1.l, a2.l, a3.l). */
AI void lanes_transpose(__m512i a[4]) {
    __m512i t0 = _mm512_shuffle_i64x2(a[0], a[1], 0x44), t1 = _mm512_shuffle_i64x2(a[0], a[1], 0xee);
    __m512i t2 = _mm512_shuffle_i64x2(a[2], a[3], 0x44), t3 = _mm512_shuffle_i64x2(a[2], a[3], 0xee);
    a[0] = _mm512_shuffle_i64x2(t0, t2, 0x88);
    a[1] = _mm512_shuffle_i64x2(t0, t2, 0xdd);
    a[2] = _mm512_shuffle_i64x2(t1, t3, 0x88);
    a[3] = _mm512_shuffle_i64x2(t1, t3, 0xdd);
}

/* The panel of the two groups at g (grp bytes apart) into p->w, p->sw, p->mw. */
AI void panel_unpack(dtype dt, int k8, const uint8_t *g, size_t grp, int nb, const panel *p) {
    const int bb = q8w_block_bytes(dt);
    for (int q = 0; 4 * q < nb; q++) {
        int kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
        half_w h[4]; /* half hh: panel rows 4 hh .. 4 hh + 3 */
        for (int hh = 0; hh < 4; hh++) {
            const uint8_t *gh = g + grp * (size_t)(hh / 2);
            const uint8_t *ck = gh + q8w_dtab(dt, Q8W_GROUP, nb) + (size_t)Q8W_GROUP * 4 * q * bb;
            h[hh] = dt == DT_Q6_K ? q6_half_load(ck, q8w_d_at(gh, Q8W_GROUP, q / 2, 0), hh % 2)
                    : dt == DT_Q4_K ? q4k_half_load(ck, q4k_dm_f32(q8w_dm_at(gh, Q8W_GROUP, q / 2)), hh % 2, 1)
                    : kb == 4     ? half_load(dt, 1, ck, 4, hh % 2)
                                  : half_load(dt, 1, ck, kb, hh % 2);
        }
        for (int v = 0; v < 8; v++) {
            __m512i a[4];
            for (int hh = 0; hh < 4; hh++) /* low nibbles x16, as the high ones stay in place */
                a[hh] = sums_x16(dt, 1) && v < 4 ? _mm512_slli_epi16(h[hh].u[v], 4) : h[hh].u[v];
            lanes_transpose(a);
            for (int bi = 0; bi < kb; bi++) _mm512_store_si512(p->w + 8 * (4 * q + bi) + v, a[bi]);
        }
        __m512i sc[4], mn[4];
        for (int hh = 0; hh < 4; hh++) {
            sc[hh] = _mm512_castps_si512(h[hh].sw);
            mn[hh] = k8 ? h[hh].mi : _mm512_castps_si512(h[hh].mw);
        }
        if (k8 && q % 2 == 0) { /* lanes 0..3 of each half's nm: its rows */
            _Alignas(64) float nm[4][16], nd[16];
            for (int hh = 0; hh < 4; hh++) _mm512_store_ps(nm[hh], h[hh].nm);
            for (int r = 0; r < 16; r++) nd[r] = nm[r / 4][r % 4];
            p->nd[q / 2] = _mm512_load_ps(nd);
        }
        lanes_transpose(sc);
        if (q8w_two(dt)) lanes_transpose(mn);
        for (int bi = 0; bi < kb; bi++) {
            p->sw[4 * q + bi] = _mm512_castsi512_ps(sc[bi]);
            if (q8w_two(dt)) p->mw[4 * q + bi] = _mm512_castsi512_ps(mn[bi]);
        }
    }
}

/* The activation side of every token and block, as q8_group derives it per quad. */
static void panel_act(dtype dt, int k8, const q8_act *x, const panel *p) {
    size_t n = (size_t)x->nt * x->quads * 4;
    if (k8) { /* Q4_K: dx / 16 and the s pairs of each super-block (quads come in pairs: cols % 256 == 0) */
        for (size_t i = 0; i < n; i++) p->dx[i] = x->d[i] * 0.0625f;
        for (size_t i = 0; i < n; i += 8)
            for (int bi = 0; bi < 4; bi++)
                p->off[i + bi] = (int32_t)((uint32_t)(int32_t)x->s[i + bi] & 0xffffu) |
                                 (int32_t)((uint32_t)(int32_t)x->s[i + 4 + bi] << 16);
        return;
    }
    if (dt == DT_Q6_K) { /* the halves' sums from the int8 (quad layout: the first 16 of block b at 64 bytes before the second) */
        /* per quad: vpsadbw of the bytes + 128 (u8) gives sums of 8, the two of a 128-bit lane
         * added are a half's sum + 16 * 128 (exact integers; every call of a piece of rows
         * redoes this, so it has to cost little next to the tiles) */
        const __m512i bias = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
        const __m512i pick = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0);
        for (size_t qi = 0; qi < n / 4; qi++) {
            const int8_t *q = x->q + qi * 128;
            __m512i h[2];
            for (int hf = 0; hf < 2; hf++) {
                __m512i sad = _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(q + 64 * hf), bias), zero);
                sad = _mm512_add_epi64(sad, _mm512_shuffle_epi32(sad, _MM_PERM_BADC));
                /* dword 4 bi = block bi's sum + 2048 (< 2^12: the qword's low dword) */
                h[hf] = _mm512_permutexvar_epi32(pick, sad);
            }
            __m128i o0 = _mm_mullo_epi32(_mm_sub_epi32(_mm512_castsi512_si128(h[0]), _mm_set1_epi32(2048)), _mm_set1_epi32(-32));
            __m128i o1 = _mm_mullo_epi32(_mm_sub_epi32(_mm512_castsi512_si128(h[1]), _mm_set1_epi32(2048)), _mm_set1_epi32(-32));
            _mm_storeu_si128((__m128i *)(p->off + 4 * qi), o0);
            _mm_storeu_si128((__m128i *)(p->off1 + 4 * qi), o1);
        }
        memcpy(p->dx, x->d, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float d = x->d[i], s = x->s[i];
        p->dx[i] = sums_x16(dt, 1) ? d * 0.0625f : d;
        if (q8w_has_min(dt)) p->sx[i] = d * s;
        else p->off[i] = -(int32_t)s * (dt == DT_Q5_0 ? 16 : 128); /* Q4_0: -8 x 16; Q8_0: -128; Q5_0: -16 */
    }
}

/* acc + the u8 x s8 dot of w with the 4 bytes at p broadcast to every lane, as
 * one vpdpbusd with an embedded broadcast operand (the compiler emits a
 * separate vpbroadcastd for _mm512_set1_epi32 of a loaded dword). */
AI __m512i dpbusd_bcast(__m512i acc, __m512i w, const int8_t *p) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)(const void *)p));
    return acc;
}

/* acc + the i16 pairs of w times the pair at p broadcast (vpdpwssd, embedded broadcast). */
AI __m512i dpwssd_bcast(__m512i acc, __m512i w, const int32_t *p) {
    __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*p));
    return acc;
}

/* panel_tile for Q4_K on super-block activations (k8, see k8_quad). */
AI void panel_tile_k8(const panel *p, int nb, const q8_act *x, int t0, float *y0, int ldy, __mmask16 rm, int T) {
    const size_t xs = (size_t)x->quads * 128, npad = (size_t)x->quads * 4;
    __m512 acc[PANEL_T];
    UNROLL for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int sb = 0; 8 * sb < nb; sb++) {
        __m512 r[PANEL_T];
        UNROLL for (int t = 0; t < T; t++) r[t] = _mm512_setzero_ps();
        for (int qq = 0; qq < 2; qq++) { /* not unrolled: 4% faster prefill on the 1B config (uop cache) */
            int q = 2 * sb + qq;
            __m512 a[2][PANEL_T]; /* S_0 + S_2, S_1 + S_3 */
            UNROLL for (int bi = 0; bi < 4; bi++) {
                int b = 4 * q + bi;
                const int8_t *xq = x->q + (size_t)t0 * xs + 128 * (size_t)q + 16 * bi;
                __m512i ia[PANEL_T];
                UNROLL for (int t = 0; t < T; t++) ia[t] = _mm512_setzero_si512();
                UNROLL for (int j = 0; j < 8; j++) {
                    __m512i w = _mm512_load_si512(p->w + 8 * b + j);
                    int xo = j < 4 ? 4 * j : 64 + 4 * (j - 4);
                    UNROLL for (int t = 0; t < T; t++) ia[t] = dpbusd_bcast(ia[t], w, xq + t * xs + xo);
                }
                UNROLL for (int t = 0; t < T; t++) {
                    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(ia[t]), p->sw[b]);
                    a[bi % 2][t] = bi < 2 ? v : _mm512_add_ps(a[bi % 2][t], v);
                }
            }
            UNROLL for (int t = 0; t < T; t++) {
                __m512 rq = _mm512_add_ps(a[0][t], a[1][t]);
                r[t] = qq ? _mm512_add_ps(r[t], rq) : rq;
            }
        }
        __m512i m[PANEL_T];
        UNROLL for (int t = 0; t < T; t++) m[t] = _mm512_setzero_si512();
        UNROLL for (int bi = 0; bi < 4; bi++) {
            const __m512i *mi = (const __m512i *)p->mw + 8 * sb + bi;
            __m512i pair = _mm512_or_si512(mi[0], _mm512_slli_epi32(mi[4], 16));
            UNROLL for (int t = 0; t < T; t++)
                m[t] = dpwssd_bcast(m[t], pair, p->off + (size_t)(t0 + t) * npad + 8 * (size_t)sb + bi);
        }
        UNROLL for (int t = 0; t < T; t++) r[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m[t]), p->nd[sb], r[t]);
        UNROLL for (int t = 0; t < T; t++)
            acc[t] = _mm512_fmadd_ps(r[t], _mm512_set1_ps(p->dx[(size_t)(t0 + t) * npad + 8 * (size_t)sb]), acc[t]);
    }
    UNROLL for (int t = 0; t < T; t++) _mm512_mask_storeu_ps(y0 + (size_t)(t0 + t) * ldy, rm, acc[t]);
}

/* Panel rows x tokens [t0, t0 + T); stores the rows in mask rm. */
AI void panel_tile_dt(dtype dt, const panel *p, int nb, const q8_act *x, int t0, float *y0, int ldy, __mmask16 rm,
                   int T) {
    const size_t xs = (size_t)x->quads * 128, npad = (size_t)x->quads * 4;
    __m512 acc[4][PANEL_T];
    UNROLL for (int bi = 0; bi < 4; bi++) UNROLL for (int t = 0; t < T; t++) acc[bi][t] = _mm512_setzero_ps();
    for (int q = 0; 4 * q < nb; q++) {
        UNROLL for (int bi = 0; bi < 4; bi++) {
            int b = 4 * q + bi;
            if (b >= nb) break;
            const int8_t *xq = x->q + (size_t)t0 * xs + 128 * (size_t)q + 16 * bi;
            size_t ai = (size_t)t0 * npad + (size_t)b;
            __m512i ia[PANEL_T];
            if (dt == DT_Q6_K) { /* the halves one after the other, each with its scale */
                UNROLL for (int hf = 0; hf < 2; hf++) {
                    const int32_t *off = hf ? p->off1 : p->off;
                    UNROLL for (int t = 0; t < T; t++) ia[t] = _mm512_set1_epi32(off[ai + t * npad]);
                    UNROLL for (int j = 4 * hf; j < 4 * hf + 4; j++) {
                        __m512i w = _mm512_load_si512(p->w + 8 * b + j);
                        int xo = j < 4 ? 4 * j : 64 + 4 * (j - 4);
                        UNROLL for (int t = 0; t < T; t++) ia[t] = dpbusd_bcast(ia[t], w, xq + t * xs + xo);
                    }
                    __m512 sw = hf ? p->mw[b] : p->sw[b];
                    UNROLL for (int t = 0; t < T; t++)
                        acc[bi][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[t]),
                                                     _mm512_mul_ps(sw, _mm512_set1_ps(p->dx[ai + t * npad])), acc[bi][t]);
                }
                continue;
            }
            UNROLL for (int t = 0; t < T; t++)
                ia[t] = q8w_has_min(dt) ? _mm512_setzero_si512() : _mm512_set1_epi32(p->off[ai + t * npad]);
            UNROLL for (int j = 0; j < 8; j++) {
                __m512i w = _mm512_load_si512(p->w + 8 * b + j);
                int xo = j < 4 ? 4 * j : 64 + 4 * (j - 4);
                UNROLL for (int t = 0; t < T; t++) ia[t] = dpbusd_bcast(ia[t], w, xq + t * xs + xo);
            }
            __m512 sw = p->sw[b];
            UNROLL for (int t = 0; t < T; t++) {
                __m512 prod = _mm512_mul_ps(sw, _mm512_set1_ps(p->dx[ai + t * npad]));
                acc[bi][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[t]), prod, acc[bi][t]);
                if (q8w_has_min(dt)) acc[bi][t] = _mm512_fmadd_ps(p->mw[b], _mm512_set1_ps(p->sx[ai + t * npad]), acc[bi][t]);
            }
        }
    }
    UNROLL for (int t = 0; t < T; t++) {
        __m512 r = _mm512_add_ps(_mm512_add_ps(acc[0][t], acc[2][t]), _mm512_add_ps(acc[1][t], acc[3][t]));
        _mm512_mask_storeu_ps(y0 + (size_t)(t0 + t) * ldy, rm, r);
    }
}

AI void panel_tile(dtype dt, int k8, const panel *p, int nb, const q8_act *x, int t0, float *y0, int ldy, __mmask16 rm,
                   int T) {
    if (k8) panel_tile_k8(p, nb, x, t0, y0, ldy, rm, T);
    else panel_tile_dt(dt, p, nb, x, t0, y0, ldy, rm, T);
}

/* Rows [r0, r1) of the panels starting at rows pb .. pe - 16 (multiples of 16,
 * whole groups): each panel is computed whole and its rows in range stored.
 * 0 if the scratch could not be allocated (nothing done). */
AI int run_panels(dtype dt, int k8, const void *packed, int nb, int pb, int pe, int r0, int r1, const q8_act *x,
                  float *y, int ldy) {
    size_t grp = q8w_group_bytes(dt, Q8W_GROUP, nb), na = (size_t)x->nt * x->quads * 4;
    size_t wbytes = (size_t)nb * 8 * 64, sbytes = (size_t)nb * 64, dbytes = k8 ? (size_t)(nb / 8) * 64 : 0;
    uint8_t *mem = aligned_alloc(64, (wbytes + 2 * sbytes + dbytes + 3 * na * 4 + 63) / 64 * 64);
    if (!mem) return 0;
    panel p = {(__m512i *)mem, (__m512 *)(mem + wbytes), (__m512 *)(mem + wbytes + sbytes),
               (float *)(mem + wbytes + 2 * sbytes + dbytes), NULL, NULL, NULL, (__m512 *)(mem + wbytes + 2 * sbytes)};
    if (q8w_has_min(dt) && !k8) p.sx = p.dx + na;
    else p.off = (int32_t *)(p.dx + na);
    p.off1 = (int32_t *)(p.dx + 2 * na);
    panel_act(dt, k8, x, &p);
    for (int r = pb; r < pe; r += 2 * Q8W_GROUP) {
        const uint8_t *g = (const uint8_t *)packed + grp * (size_t)(r / Q8W_GROUP);
        panel_unpack(dt, k8, g, grp, nb, &p);
        /* the next panel's weights into L2 while this one's tiles run, a few lines
         * per tile: issued all at once they wait for miss buffers in the load queue */
        size_t lines = r + 2 * Q8W_GROUP < pe ? 2 * grp / 64 : 0, tiles = (size_t)x->nt / PANEL_T, done = 0;
        const char *next = (const char *)g + 2 * grp;
        int lo = r0 > r ? r0 - r : 0, hi = r1 - r < 16 ? r1 - r : 16;
        __mmask16 rm = (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
        int t = 0;
        for (size_t i = 1; t + PANEL_T <= x->nt; t += PANEL_T, i++) {
            for (size_t to = lines * i / tiles; done < to; done++) _mm_prefetch(next + 64 * done, _MM_HINT_T1);
            panel_tile(dt, k8, &p, nb, x, t, y + r, ldy, rm, PANEL_T);
        }
        for (; done < lines; done++) _mm_prefetch(next + 64 * done, _MM_HINT_T1);
        switch (x->nt - t) {
        case 3: panel_tile(dt, k8, &p, nb, x, t, y + r, ldy, rm, 3); break;
        case 2: panel_tile(dt, k8, &p, nb, x, t, y + r, ldy, rm, 2); break;
        case 1: panel_tile(dt, k8, &p, nb, x, t, y + r, ldy, rm, 1); break;
        default: break;
        }
    }
    free(mem);
    return 1;
}

typedef int (*panels_fn)(const void *packed, int nb, int pb, int pe, int r0, int r1, const q8_act *x, float *y,
                         int ldy);
typedef int (*gemv_fn)(const void *packed, int rows, int nb, int r0, int r1, const q8_act *x, float *y);

typedef void (*q8_group_fn)(const uint8_t *g, int rr, int nb, const q8_act *x, const quad_sc *sc, int t0, float *y0,
                            int ldy, int lo, int hi);
typedef void (*quad_sc_fn)(const q8_act *x, quad_sc *sc);

#define Q8_GROUP(DT, VNNI, K8, FN, T)                                                                  \
    static void FN(const uint8_t *g, int rr, int nb, const q8_act *x, const quad_sc *sc, int t0, float *y0, \
                   int ldy, int lo, int hi) {                                                          \
        q8_group(DT, VNNI, K8, g, rr, nb, x, sc, t0, y0, ldy, lo, hi, T);                              \
    }
/* The kernel FN of DT on the groups (run_q8), with the q8_group tiles it calls named
 * T1, T3, T4, T8 (T = 1, Q8_TILE_T, 4, 8) and SC its activations' quad_sc. */
#define Q8_GROUPS(DT, VNNI, K8, FN, PANELS, GEMV, T1, T3, T4, T8, SC)                                         \
    Q8_GROUP(DT, VNNI, K8, T1, 1)                                                                             \
    Q8_GROUP(DT, VNNI, K8, T3, Q8_TILE_T)                                                                     \
    Q8_GROUP(DT, VNNI, K8, T4, 4)                                                                             \
    Q8_GROUP(DT, VNNI, K8, T8, 8)                                                                             \
    static void SC(const q8_act *x, quad_sc *sc) {                                                            \
        for (int t = 0; t < x->nt; t++)                                                                       \
            for (int q = 0; q < x->quads; q++) quad_sc_set(DT, VNNI, x, t, q, sc + (size_t)t * x->quads + q); \
    }                                                                                                         \
    static void FN(const void *p, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {   \
        const q8_tiles tl = {T1, T3, T4, T8, quad_sc_saves(DT, VNNI) ? SC : NULL};                            \
        run_q8(&tl, PANELS, GEMV, DT, p, rows, cols, r0, r1, x, y, ldy);                                      \
    }
#define Q8_PANELS(DT, K8, FN)                                                                          \
    static int FN(const void *packed, int nb, int pb, int pe, int r0, int r1, const q8_act *x, float *y, int ldy) { \
        return run_panels(DT, K8, packed, nb, pb, pe, r0, r1, x, y, ldy);                              \
    }
#define Q8_GEMV(DT, VNNI, K8, FN)                                                                      \
    static int FN(const void *packed, int rows, int nb, int r0, int r1, const q8_act *x, float *y) {   \
        return run_gemv(DT, VNNI, K8, packed, rows, nb, r0, r1, x, y);                                 \
    }

/* Groups outside, token tiles inside: a group's weights (its chunk, 576 to
 * 1088 bytes per quad) stay in L1/L2 while every token tile passes over them.
 * r0 / r1 need not fall on group boundaries: a group is computed whole and
 * only rows [r0, r1) are stored. Prefill with VNNI takes the rows of whole
 * 16-row panels (counted from row 0, so which rows a panel holds does not
 * depend on r0 / r1) through run_panels, the rest group by group. */
typedef struct {
    q8_group_fn t1, t3, t4, t8; /* q8_group at T = 1, Q8_TILE_T, 4 and 8 */
    quad_sc_fn sc;              /* quad_sc_set of every token and quad, or NULL (nothing to save) */
} q8_tiles;

#define Q8_SC_STACK 256 /* quad_sc entries on the stack (16 KB): SmolLM2's 8 tokens x 12 quads, no malloc per call */

static void run_q8(const q8_tiles *tl, panels_fn panels, gemv_fn gemv, dtype dt, const void *packed,
                   int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    int nb = cols / 32;
    size_t grp = q8w_group_bytes(dt, Q8W_GROUP, nb);
    if (Q8_PF && x->nt == 1) { /* the in-loop prefetch runs Q8_PF ahead: start the stream's head too */
        int gb = r0 / Q8W_GROUP, ge = (r1 + Q8W_GROUP - 1) / Q8W_GROUP;
        size_t head = grp * (size_t)(ge - gb) < Q8_PF ? grp * (size_t)(ge - gb) : Q8_PF;
        const char *p0 = (const char *)packed + grp * (size_t)gb;
        for (size_t l = 0; l < head; l += 64) _mm_prefetch(p0 + l, _MM_HINT_T1);
        /* Q4_K past GEMV_STACK_QUADS (K > 4096: the down projection of a 1B model) through the
         * groups at T = 1, the same arithmetic: the GEMV's activation side (768 bytes a quad, 48 KB
         * at 8192 columns) does not fit L1 beside the weight stream. Q8_0 and Q6_K gain nothing
         * from this and keep the GEMV (`build/bench_kernels q8 avx512`, 2048 x 8192 cold). */
        int big = dt == DT_Q4_K && x->quads > GEMV_STACK_QUADS;
        if (gemv && !big && gemv(packed, rows, nb, r0, r1, x, y)) return;
    }
    if (panels && x->nt >= Q8_PANELS_MIN_T) {
        int full = rows / 16 * 16, pb = r0 / 16 * 16, pe = (r1 + 15) / 16 * 16;
        if (pe > full) pe = full;
        if (pb < pe && panels(packed, nb, pb, pe, r0, r1, x, y, ldy) && r0 < pe) r0 = pe;
    }
    /* decode of several sequences: the activations' per-block values once per call (a failed
     * allocation leaves sc NULL: q8_group derives them itself, the same values) */
    quad_sc local[Q8_SC_STACK], *sc = NULL;
    size_t nsc = (size_t)x->nt * x->quads;
    if (tl->sc && x->nt > 1 && x->nt < Q8_PANELS_MIN_T) {
        sc = nsc <= Q8_SC_STACK ? local : malloc(sizeof(quad_sc) * nsc);
        if (sc) tl->sc(x, sc);
    }
    for (int g0 = r0 / Q8W_GROUP * Q8W_GROUP; g0 < r1; g0 += Q8W_GROUP) {
        const uint8_t *g = (const uint8_t *)packed + grp * (size_t)(g0 / Q8W_GROUP);
        int rr, lo, hi, t = 0;
        group_span(rows, g0, r0, r1, &rr, &lo, &hi);
        if (x->nt < Q8_PANELS_MIN_T) { /* decode of several sequences: 8s, then a 4 */
            for (; t + 8 <= x->nt; t += 8) tl->t8(g, rr, nb, x, sc, t, y + g0, ldy, lo, hi);
            if (t + 4 <= x->nt) tl->t4(g, rr, nb, x, sc, t, y + g0, ldy, lo, hi), t += 4;
        }
        for (; t + Q8_TILE_T <= x->nt; t += Q8_TILE_T) tl->t3(g, rr, nb, x, sc, t, y + g0, ldy, lo, hi);
        for (; t < x->nt; t++) tl->t1(g, rr, nb, x, sc, t, y + g0, ldy, lo, hi);
    }
    if (sc != local) free(sc);
}

/* Per dtype: matmul_q8v_... (VNNI: panels, GEMV, groups) and matmul_q8b_... (groups). */
Q8_PANELS(DT_Q4_0, 0, q8v_q4_0_panels)
Q8_GEMV(DT_Q4_0, 1, 0, q8v_q4_0_gemv)
Q8_GROUPS(DT_Q4_0, 1, 0, matmul_q8v_q4_0, q8v_q4_0_panels, q8v_q4_0_gemv, q8v_q4_0_1, q8v_q4_0_t, q8v_q4_0_t4,
          q8v_q4_0_t8, q8v_q4_0_sc)
Q8_GROUPS(DT_Q4_0, 0, 0, matmul_q8b_q4_0, NULL, NULL, q8b_q4_0_1, q8b_q4_0_t, q8b_q4_0_t4, q8b_q4_0_t8, q8b_q4_0_sc)
Q8_PANELS(DT_Q4_1, 0, q8v_q4_1_panels)
Q8_GEMV(DT_Q4_1, 1, 0, q8v_q4_1_gemv)
Q8_GROUPS(DT_Q4_1, 1, 0, matmul_q8v_q4_1, q8v_q4_1_panels, q8v_q4_1_gemv, q8v_q4_1_1, q8v_q4_1_t, q8v_q4_1_t4,
          q8v_q4_1_t8, q8v_q4_1_sc)
Q8_GROUPS(DT_Q4_1, 0, 0, matmul_q8b_q4_1, NULL, NULL, q8b_q4_1_1, q8b_q4_1_t, q8b_q4_1_t4, q8b_q4_1_t8, q8b_q4_1_sc)
Q8_PANELS(DT_Q8_0, 0, q8v_q8_0_panels)
Q8_GEMV(DT_Q8_0, 1, 0, q8v_q8_0_gemv)
Q8_GROUPS(DT_Q8_0, 1, 0, matmul_q8v_q8_0, q8v_q8_0_panels, q8v_q8_0_gemv, q8v_q8_0_1, q8v_q8_0_t, q8v_q8_0_t4,
          q8v_q8_0_t8, q8v_q8_0_sc)
Q8_GROUPS(DT_Q8_0, 0, 0, matmul_q8b_q8_0, NULL, NULL, q8b_q8_0_1, q8b_q8_0_t, q8b_q8_0_t4, q8b_q8_0_t8, q8b_q8_0_sc)
Q8_PANELS(DT_Q4_1G64, 0, q8v_q4_1g64_panels)
Q8_GEMV(DT_Q4_1G64, 1, 0, q8v_q4_1g64_gemv)
Q8_GROUPS(DT_Q4_1G64, 1, 0, matmul_q8v_q4_1g64, q8v_q4_1g64_panels, q8v_q4_1g64_gemv, q8v_q4_1g64_1, q8v_q4_1g64_t,
          q8v_q4_1g64_t4, q8v_q4_1g64_t8, q8v_q4_1g64_sc)
Q8_GROUPS(DT_Q4_1G64, 0, 0, matmul_q8b_q4_1g64, NULL, NULL, q8b_q4_1g64_1, q8b_q4_1g64_t, q8b_q4_1g64_t4,
          q8b_q4_1g64_t8, q8b_q4_1g64_sc)
Q8_PANELS(DT_Q4_1G128, 0, q8v_q4_1g128_panels)
Q8_GEMV(DT_Q4_1G128, 1, 0, q8v_q4_1g128_gemv)
Q8_GROUPS(DT_Q4_1G128, 1, 0, matmul_q8v_q4_1g128, q8v_q4_1g128_panels, q8v_q4_1g128_gemv, q8v_q4_1g128_1,
          q8v_q4_1g128_t, q8v_q4_1g128_t4, q8v_q4_1g128_t8, q8v_q4_1g128_sc)
Q8_GROUPS(DT_Q4_1G128, 0, 0, matmul_q8b_q4_1g128, NULL, NULL, q8b_q4_1g128_1, q8b_q4_1g128_t, q8b_q4_1g128_t4,
          q8b_q4_1g128_t8, q8b_q4_1g128_sc)
Q8_PANELS(DT_Q4_K, 0, q8v_q4_k_panels)
Q8_GEMV(DT_Q4_K, 1, 0, q8v_q4_k_gemv)
Q8_GROUPS(DT_Q4_K, 1, 0, matmul_q8v_q4_k, q8v_q4_k_panels, q8v_q4_k_gemv, q8v_q4_k_1, q8v_q4_k_t, q8v_q4_k_t4,
          q8v_q4_k_t8, q8v_q4_k_sc)
Q8_GROUPS(DT_Q4_K, 0, 0, matmul_q8b_q4_k, NULL, NULL, q8b_q4_k_1, q8b_q4_k_t, q8b_q4_k_t4, q8b_q4_k_t8, q8b_q4_k_sc)
Q8_PANELS(DT_Q5_0, 0, q8v_q5_0_panels)
Q8_GEMV(DT_Q5_0, 1, 0, q8v_q5_0_gemv)
Q8_GROUPS(DT_Q5_0, 1, 0, matmul_q8v_q5_0, q8v_q5_0_panels, q8v_q5_0_gemv, q8v_q5_0_1, q8v_q5_0_t, q8v_q5_0_t4,
          q8v_q5_0_t8, q8v_q5_0_sc)
Q8_GROUPS(DT_Q5_0, 0, 0, matmul_q8b_q5_0, NULL, NULL, q8b_q5_0_1, q8b_q5_0_t, q8b_q5_0_t4, q8b_q5_0_t8, q8b_q5_0_sc)
Q8_PANELS(DT_Q5_1, 0, q8v_q5_1_panels)
Q8_GEMV(DT_Q5_1, 1, 0, q8v_q5_1_gemv)
Q8_GROUPS(DT_Q5_1, 1, 0, matmul_q8v_q5_1, q8v_q5_1_panels, q8v_q5_1_gemv, q8v_q5_1_1, q8v_q5_1_t, q8v_q5_1_t4,
          q8v_q5_1_t8, q8v_q5_1_sc)
Q8_GROUPS(DT_Q5_1, 0, 0, matmul_q8b_q5_1, NULL, NULL, q8b_q5_1_1, q8b_q5_1_t, q8b_q5_1_t4, q8b_q5_1_t8, q8b_q5_1_sc)
/* Q6_K. Decode (one token) takes the kernel without VNNI in every table
 * (q6_k_decode): on Zen 4 vpmaddubsw + vpmaddwd stream Q6_K from DRAM faster
 * than vpdpbusd, though slower in cache: a 1B Q6_K decode step takes 3-15% less
 * time (one decode run switching the two every token, `build/bench/llmgen_bench FILE
 * -p 16 -n 300`, each step's time over its neighbours').
 * Same bits as the VNNI kernels (exact integer sums, the same cvt / mul / fma). Tiles of a few tokens
 * with VNNI and GFNI (VNNI = 2: q6_half_load_isa's bit permutations); prefill
 * panels as without GFNI. */
Q8_PANELS(DT_Q6_K, 0, q8v_q6_k_panels)
Q8_GROUPS(DT_Q6_K, 0, 0, matmul_q8b_q6_k, NULL, NULL, q8b_q6_k_1, q8b_q6_k_t, q8b_q6_k_t4, q8b_q6_k_t8, q8b_q6_k_sc)
static int q6_k_decode(const void *packed, int rows, int nb, int r0, int r1, const q8_act *x, float *y) {
    size_t grp = q8w_group_bytes(DT_Q6_K, Q8W_GROUP, nb);
    for (int g0 = r0 / Q8W_GROUP * Q8W_GROUP; g0 < r1; g0 += Q8W_GROUP) {
        int rr, lo, hi;
        group_span(rows, g0, r0, r1, &rr, &lo, &hi);
        q8b_q6_k_1((const uint8_t *)packed + grp * (size_t)(g0 / Q8W_GROUP), rr, nb, x, NULL, 0, y + g0, 0, lo, hi);
    }
    return 1;
}
Q8_GROUPS(DT_Q6_K, 1, 0, matmul_q8v_q6_k, q8v_q6_k_panels, q6_k_decode, q8v_q6_k_1, q8v_q6_k_t, q8v_q6_k_t4,
          q8v_q6_k_t8, q8v_q6_k_sc)
Q8_GROUPS(DT_Q6_K, 2, 0, matmul_q8g_q6_k, q8v_q6_k_panels, q6_k_decode, q8g_q6_k_1, q8g_q6_k_t, q8g_q6_k_t4,
          q8g_q6_k_t8, q8g_q6_k_sc)

/* Q4_K with VNNI on super-block activations (k8_quad), which forward.c gives it
 * (act_group); on per-block ones, the per-block kernels above. */
Q8_PANELS(DT_Q4_K, 1, q8v_q4_k8_panels)
Q8_GEMV(DT_Q4_K, 1, 1, q8v_q4_k8_gemv)
Q8_GROUPS(DT_Q4_K, 1, 1, matmul_q8v_q4_k8, q8v_q4_k8_panels, q8v_q4_k8_gemv, q8v_q4_k8_1, q8v_q4_k8_t, q8v_q4_k8_t4,
          q8v_q4_k8_t8, q8v_q4_k8_sc)
static void matmul_q8v_q4_k_act(const void *p, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    if (x->group == Q8_ACT_SB) matmul_q8v_q4_k8(p, rows, cols, r0, r1, x, y, ldy);
    else matmul_q8v_q4_k(p, rows, cols, r0, r1, x, y, ldy);
}

/* max |x| over the 32 values at x. */
AI float block_amax(const float *x) {
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(v0, absmask), _mm512_and_ps(v1, absmask)));
}

/* The max |x| of each of the 4 blocks at x (128 values) into am[0..3]: one
 * transposed reduction (max is exact in any order) instead of 4 horizontal ones. */
AI void quad_amax(const float *x, float am[4]) {
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    __m512 m[4];
    UNROLL for (int bi = 0; bi < 4; bi++)
        m[bi] = _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(x + 32 * bi), absmask),
                              _mm512_and_ps(_mm512_loadu_ps(x + 32 * bi + 16), absmask));
    /* 128-bit lanes: (0 1 | 0 1) and (2 3 | 2 3) of two blocks, then lane k = block k */
    __m512 p01 = _mm512_max_ps(_mm512_shuffle_f32x4(m[0], m[1], 0x44), _mm512_shuffle_f32x4(m[0], m[1], 0xee));
    __m512 p23 = _mm512_max_ps(_mm512_shuffle_f32x4(m[2], m[3], 0x44), _mm512_shuffle_f32x4(m[2], m[3], 0xee));
    __m512 r = _mm512_max_ps(_mm512_shuffle_f32x4(p01, p23, 0x88), _mm512_shuffle_f32x4(p01, p23, 0xdd));
    r = _mm512_max_ps(r, _mm512_shuffle_ps(r, r, 0x4e));
    r = _mm512_max_ps(r, _mm512_shuffle_ps(r, r, 0xb1));
    const __m512i first = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    _mm_storeu_ps(am, _mm512_castps512_ps128(_mm512_permutexvar_ps(first, r)));
}

/* The 4 blocks at x (one quad) with the scales' maxima am: the values as
 * quantize_act_block, the bytes by two signed packs (exact: |v| <= 127) and one
 * dword permute per 64, the sums by vpsadbw on the bytes + 128. */
AI void quad_quant(const float *x, const float am[4], int8_t *q, float *d, float *s) {
    const __m512 lim = _mm512_set1_ps(127.0f);
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    __m128 amv = _mm_loadu_ps(am);
    _Alignas(16) float id[4];
    _mm_store_ps(id, _mm_maskz_div_ps(_mm_cmp_ps_mask(amv, _mm_setzero_ps(), _CMP_GT_OQ), _mm_set1_ps(127.0f), amv));
    _mm_storeu_ps(d, _mm_div_ps(amv, _mm_set1_ps(127.0f)));
    __m512i half[2];
    UNROLL for (int h = 0; h < 2; h++) {
        __m512i v[4];
        UNROLL for (int bi = 0; bi < 4; bi++) {
            __m512 y = _mm512_mul_ps(_mm512_loadu_ps(x + 32 * bi + 16 * h), _mm512_set1_ps(id[bi]));
            v[bi] = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(y, -lim), lim));
        }
        __m512i b8 = _mm512_packs_epi16(_mm512_packs_epi32(v[0], v[1]), _mm512_packs_epi32(v[2], v[3]));
        half[h] = _mm512_permutexvar_epi32(order, b8); /* per lane k: 4 values of each block -> block by block */
        _mm512_storeu_si512(q + 64 * h, half[h]);
    }
    const __m512i bias = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    __m512i sad = _mm512_add_epi64(_mm512_sad_epu8(_mm512_xor_si512(half[0], bias), zero),
                                   _mm512_sad_epu8(_mm512_xor_si512(half[1], bias), zero));
    sad = _mm512_add_epi64(sad, _mm512_shuffle_epi32(sad, (_MM_PERM_ENUM)0x4e)); /* lane k: block k's sum + 32 * 128 */
    __m128i sums = _mm_sub_epi32(_mm512_castsi512_si128(_mm512_permutexvar_epi32(order, sad)), _mm_set1_epi32(32 * 128));
    _mm_storeu_ps(s, _mm_cvtepi32_ps(sums));
}

/* Block b alone (a quad's last 1-3 blocks), with its scale's max amax. */
AI void quantize_act_block(const float *xb, float amax, int8_t *dst, float *d, float *s) {
    float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    __m512 vid = _mm512_set1_ps(id), lim = _mm512_set1_ps(127.0f);
    __m512i q0 = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(xb), vid), -lim), lim));
    __m512i q1 = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(xb + 16), vid), -lim), lim));
    _mm_storeu_si128((__m128i *)dst, _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128((__m128i *)(dst + 64), _mm512_cvtsepi32_epi8(q1));
    *d = amax / 127.0f;
    *s = (float)_mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
}

/* Bit-identical to scalar.c: the same max, the same f32 multiply and
 * round-to-nearest-even conversion (vcvtps2dq under the default MXCSR), the
 * same divisions (vdivps rounds as the scalar one), the sum in integers.
 * Pass 1 takes each block's max |x| (and a group's over its blocks), pass 2
 * quantizes, in chunks of QA_CHUNK blocks (whole groups). */
#define QA_CHUNK 64
static void quantize_act_avx512(const float *x, int ldx, int t0, int t1, const q8_act *a) {
    int nb = a->cols / 32, gs = a->group > 1 ? a->group : 1;
    _Static_assert(QA_CHUNK % Q8_ACT_SB == 0 && QA_CHUNK % 4 == 0, "chunks of whole groups and quads");
    for (int t = t0; t < t1; t++) {
        const float *xt = x + (size_t)t * ldx;
        int8_t *q;
        float *d, *s;
        q8_act_row(a, t, &q, &d, &s);
        for (int c0 = 0; c0 < nb; c0 += QA_CHUNK) {
            int c1 = nb - c0 < QA_CHUNK ? nb : c0 + QA_CHUNK, b;
            float am[QA_CHUNK];
            for (b = c0; b + 4 <= c1; b += 4) quad_amax(xt + 32 * b, am + b - c0);
            for (; b < c1; b++) am[b - c0] = block_amax(xt + 32 * b);
            for (int g = c0; g < c1 && gs > 1; g += gs) { /* the scalar version's max over the group's blocks */
                float m = 0.0f;
                for (int k = g; k < g + gs && k < c1; k++) m = fmaxf(m, am[k - c0]);
                for (int k = g; k < g + gs && k < c1; k++) am[k - c0] = m;
            }
            for (b = c0; b + 4 <= c1; b += 4) quad_quant(xt + 32 * b, am + b - c0, q + 32 * (size_t)b, d + b, s + b);
            for (; b < c1; b++)
                quantize_act_block(xt + 32 * b, am[b - c0], q + 128 * (size_t)(b / 4) + 16 * (size_t)(b % 4), d + b, s + b);
        }
    }
}

/* ---- vector helpers ---------------------------------------------------------- */

/* Two accumulators (columns 32k..32k+15 and 32k+16..32k+31), the remainder in
 * 16-column steps into the first, zero-padded; then reduce16(s0 + s1). */
static float dot_avx512(const float *a, const float *b, int n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
    }
    return reduce16(_mm512_add_ps(s0, s1));
}

/* Multiply then add (no FMA), so the result is bit-identical to scalar.c. */
static void axpy_avx512(float *y, float a, const float *x, int n) {
    __m512 va = _mm512_set1_ps(a);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, x + i)));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

/* Attention, fast softmax and SwiGLU: attn_tiles.h over 16-lane vectors, a
 * register tile of 4 query rows x 64 positions (or dimensions) = 16 zmm. */
#define AV __m512
#define AVI __m512i
#define AW 16
#define ATT_NV 4
#define ATT_SCORES_F32 att_scores_f32_avx512 /* the names of attn_tiles.h's functions */
#define ATT_VALUES_F32 att_values_f32_avx512
#define ATT_SCORES_BF16 att_scores_bf16_avx512
#define ATT_VALUES_BF16 att_values_bf16_avx512
#define ATT_SOFTMAX_FAST softmax_fast_avx512
#define ATT_GEGLU_FAST geglu_fast_avx512
#define ATT_SWIGLU_FAST swiglu_fast_avx512
#define av_zero() _mm512_setzero_ps()
#define av_set1(x) _mm512_set1_ps(x)
#define av_load(p) _mm512_loadu_ps(p)
#define av_store(p, v) _mm512_storeu_ps(p, v)
#define av_fma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define av_add(a, b) _mm512_add_ps(a, b)
#define av_sub(a, b) _mm512_sub_ps(a, b)
#define av_mul(a, b) _mm512_mul_ps(a, b)
#define av_div(a, b) _mm512_div_ps(a, b)
#define av_min(a, b) _mm512_min_ps(a, b)
#define av_max(a, b) _mm512_max_ps(a, b)
#define av_round(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define av_hsum(v) _mm512_reduce_add_ps(v)
#define av_hmax(v) _mm512_reduce_max_ps(v)
#define av_cvt_i(v) _mm512_cvtps_epi32(v)
#define av_shr1(v) _mm512_srai_epi32(v, 1)
#define av_isub(a, b) _mm512_sub_epi32(a, b)
#define av_pow2(n) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23))
#define av_bf_lo(p) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512(p), 16))
#define av_bf_hi(p) _mm512_castsi512_ps(_mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi32((int)0xffff0000u)))
#include "attn_tiles.h"

/* BF16 attention by vdpbf16ps (AVX512-BF16, the table that has it): a lane adds a
 * pair's two products odd element first, each as an FMA with one rounding, which
 * is kernels.h's BF16 contract (its flush of tiny values keeps the instruction's
 * DAZ / FTZ from ever acting), so these give the scalar version's bits. A pair
 * is a dword; the 4 x 4 register tiles are those of attn_tiles.h, at twice the
 * products per instruction. */

/* 32 consecutive f32 (lo: the first 16) as 16 pairs of kv_bf16 values. */
AI __m512i bf16_pairs(__m512 lo, __m512 hi) {
    const __m512 tiny = _mm512_set1_ps(KV_BF16_TINY);
    lo = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_abs_ps(lo), tiny, _CMP_NLT_UQ), lo); /* NaN kept */
    hi = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_abs_ps(hi), tiny, _CMP_NLT_UQ), hi);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

AI void bf16_scores_tile(const uint32_t *blk, int kb, int hd, const uint32_t (*qp)[ATT_BF16_MAXHD / 2], int R,
                         float *s, int lds, int n, int NV) {
    __m512 acc[ATT_R][ATT_NV];
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int j = 0; j < NV; j++) acc[r][j] = _mm512_setzero_ps();
    for (int i = 0; i < hd / 2; i++) {
        __m512i k[ATT_NV];
        UNROLL for (int j = 0; j < NV; j++) k[j] = _mm512_loadu_si512(blk + (size_t)i * kb + j * 16);
        UNROLL for (int r = 0; r < R; r++) {
            __m512bh qb = (__m512bh)_mm512_set1_epi32((int)qp[r][i]);
            UNROLL for (int j = 0; j < NV; j++) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], (__m512bh)k[j], qb);
        }
    }
    UNROLL for (int r = 0; r < R; r++) att_store(s + (size_t)r * lds, acc[r], n, NV);
}

static void att_scores_bf16_dp(const void *kt, int kb, int hd, int len, const float *q, int ldq, int nt, float *s,
                               int lds) {
    if (kb % 64 || hd % 32 || hd > ATT_BF16_MAXHD) {
        att_scores_bf16_avx512(kt, kb, hd, len, q, ldq, nt, s, lds);
        return;
    }
    uint32_t qp[ATT_R][ATT_BF16_MAXHD / 2];
    for (int i0 = 0; i0 < nt; i0 += ATT_R) {
        int R = nt - i0 < ATT_R ? nt - i0 : ATT_R;
        for (int r = 0; r < R; r++)
            for (int d = 0; d < hd; d += 32) {
                const float *qr = q + (size_t)(i0 + r) * ldq + d;
                _mm512_storeu_si512(qp[r] + d / 2, bf16_pairs(_mm512_loadu_ps(qr), _mm512_loadu_ps(qr + 16)));
            }
        for (int p0 = 0; p0 < len; p0 += kb) {
            const uint32_t *blk = (const uint32_t *)kt + (size_t)(p0 / kb) * hd / 2 * kb;
            int cols = len - p0 < kb ? len - p0 : kb;
            for (int c0 = 0; c0 < cols; c0 += 64) {
                int n = cols - c0 < 64 ? cols - c0 : 64, nv = (n + 15) / 16;
                float *sp = s + (size_t)i0 * lds + p0 + c0;
#define BF_SC_NV(RR, NV) bf16_scores_tile(blk + c0, kb, hd, (const uint32_t(*)[ATT_BF16_MAXHD / 2])qp, RR, sp, lds, n, NV)
#define BF_SC(RR) ATT_BY_NV(BF_SC_NV, RR)
                ATT_ROWS(BF_SC)
#undef BF_SC
#undef BF_SC_NV
            }
        }
    }
}

/* R rows x NV * 16 dimensions, over the n / 2 position pairs from v; pp: the rows'
 * probability pairs. */
AI void bf16_values_tile(const uint32_t *v, size_t vstride, int npairs, const uint32_t (*pp)[ATT_BF16_PCH / 2], int R,
                         int NV, __m512 acc[ATT_R][ATT_NV]) {
    for (int j = 0; j < npairs; j++) {
        __m512i x[ATT_NV];
        UNROLL for (int jj = 0; jj < NV; jj++) x[jj] = _mm512_loadu_si512(v + (size_t)j * vstride + jj * 16);
        UNROLL for (int r = 0; r < R; r++) {
            __m512bh pb = (__m512bh)_mm512_set1_epi32((int)pp[r][j]);
            UNROLL for (int jj = 0; jj < NV; jj++) acc[r][jj] = _mm512_dpbf16_ps(acc[r][jj], (__m512bh)x[jj], pb);
        }
    }
}

static void att_values_bf16_dp(const void *v, size_t vstride, int hd, int len, const float *pr, int ldp, int nt,
                               float *out, int ldo) {
    if (hd % 16) {
        att_values_bf16_avx512(v, vstride, hd, len, pr, ldp, nt, out, ldo);
        return;
    }
    uint32_t pp[ATT_R][ATT_BF16_PCH / 2];
    const uint32_t *v32 = v;
    for (int i0 = 0; i0 < nt; i0 += ATT_R) {
        int R = nt - i0 < ATT_R ? nt - i0 : ATT_R;
        for (int d0 = 0; d0 < hd; d0 += 64) {
            int nv = hd - d0 < 64 ? (hd - d0) / 16 : 4;
            __m512 acc[ATT_R][ATT_NV];
            UNROLL for (int r = 0; r < ATT_R; r++)
                UNROLL for (int j = 0; j < ATT_NV; j++) acc[r][j] = _mm512_setzero_ps();
            for (int p0 = 0; p0 < len; p0 += ATT_BF16_PCH) {
                int n = len - p0 < ATT_BF16_PCH ? len - p0 : ATT_BF16_PCH;
                for (int r = 0; r < R; r++) {
                    const float *pr0 = pr + (size_t)(i0 + r) * ldp + p0;
                    for (int p = 0; p < n; p += 32) { /* positions past n: probability 0 */
                        int left = n - p;
                        __mmask16 m0 = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
                        __mmask16 m1 = left >= 32 ? 0xffff : left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1);
                        __m512i b = bf16_pairs(_mm512_maskz_loadu_ps(m0, pr0 + p), _mm512_maskz_loadu_ps(m1, pr0 + p + 16));
                        _mm512_storeu_si512(pp[r] + p / 2, b);
                    }
                }
                const uint32_t *vp = v32 + (size_t)(p0 / 2) * vstride + d0;
                int npairs = (n + 1) / 2;
#define BF_VA_NV(RR, NV) bf16_values_tile(vp, vstride, npairs, (const uint32_t(*)[ATT_BF16_PCH / 2])pp, RR, NV, acc)
#define BF_VA(RR) ATT_BY_NV(BF_VA_NV, RR)
                ATT_ROWS(BF_VA)
#undef BF_VA
#undef BF_VA_NV
            }
            UNROLL for (int r = 0; r < R; r++) att_store(out + (size_t)(i0 + r) * ldo + d0, acc[r], nv * 16, nv);
        }
    }
}

/* What every AVX-512 table holds; each table below adds its int8 kernels and attention. */
#define AVX512_COMMON                                                                                          \
    .name = "avx512",                                                                                          \
    .matmul = {[DT_F32] = matmul_f32, [DT_F16] = matmul_f16, [DT_BF16] = matmul_bf16, [DT_Q8_0] = matmul_q8_0, \
               [DT_Q4_0] = matmul_q4_0, [DT_Q4_1] = matmul_q4_1,                                               \
               /* the GGUF types read through dequant.h: inplace_avx512.c */                                   \
               [DT_Q2_K] = exact_avx512_q2_k, [DT_Q3_K] = exact_avx512_q3_k, [DT_Q5_K] = exact_avx512_q5_k,    \
               [DT_IQ4_NL] = exact_avx512_iq4_nl, [DT_IQ4_XS] = exact_avx512_iq4_xs, [DT_MXFP4] = exact_avx512_mxfp4, \
               [DT_Q4_K] = exact_avx512_q4_k, [DT_Q5_0] = exact_avx512_q5_0, [DT_Q5_1] = exact_avx512_q5_1,    \
               [DT_Q6_K] = exact_avx512_q6_k, [DT_AFFINE4] = affine4_matmul_avx512,                            \
               [DT_AFFINE8] = affine8_matmul_avx512},                                                          \
    .quantize_act = quantize_act_avx512, .dot = dot_avx512, .axpy = axpy_avx512,                               \
    .softmax_fast = softmax_fast_avx512, .swiglu_fast = swiglu_fast_avx512, .geglu_fast = geglu_fast_avx512,   \
    .pack_rows = {[DT_Q4_K] = q4k_pack_rows_avx2, [DT_Q6_K] = q6k_pack_rows_avx2} /* pack_avx2.c */

/* The int8 kernels of the VNNI tables but Q6_K's; Q4_K with VNNI on super-block activations too,
 * which the table asks for (act_group). The GGUF types read in place: inplace_avx512.c needs VNNI. */
#define AVX512_VNNI_Q8                                                                                   \
    [DT_Q4_0] = matmul_q8v_q4_0, [DT_Q4_1] = matmul_q8v_q4_1, [DT_Q8_0] = matmul_q8v_q8_0,               \
    [DT_Q4_1G64] = matmul_q8v_q4_1g64, [DT_Q4_1G128] = matmul_q8v_q4_1g128, [DT_Q5_0] = matmul_q8v_q5_0, \
    [DT_Q5_1] = matmul_q8v_q5_1, [DT_Q4_K] = matmul_q8v_q4_k_act, [DT_AFFINE4] = affine4_q8v_avx512,     \
    [DT_AFFINE8] = affine8_q8v_avx512, [DT_Q2_K] = inplace_avx512_q2_k, [DT_Q3_K] = inplace_avx512_q3_k, \
    [DT_Q5_K] = inplace_avx512_q5_k, [DT_IQ4_NL] = inplace_avx512_iq4_nl, [DT_IQ4_XS] = inplace_avx512_iq4_xs, \
    [DT_MXFP4] = inplace_avx512_mxfp4

/* int8 dot products by vpmaddubsw + vpmaddwd; the GGUF types read in place by inplace_avx2.c's kernels */
static const kernels AVX512 = {
    AVX512_COMMON,
    .matmul_q8 = {[DT_Q4_0] = matmul_q8b_q4_0, [DT_Q4_1] = matmul_q8b_q4_1, [DT_Q8_0] = matmul_q8b_q8_0,
                  [DT_Q4_1G64] = matmul_q8b_q4_1g64, [DT_Q4_1G128] = matmul_q8b_q4_1g128, [DT_Q6_K] = matmul_q8b_q6_k,
                  [DT_Q5_0] = matmul_q8b_q5_0, [DT_Q5_1] = matmul_q8b_q5_1, [DT_Q4_K] = matmul_q8b_q4_k,
                  [DT_AFFINE4] = affine4_q8b_avx512, [DT_AFFINE8] = affine8_q8b_avx512, /* affine_avx512.c */
                  [DT_Q2_K] = inplace_avx2_q2_k, [DT_Q3_K] = inplace_avx2_q3_k, [DT_Q5_K] = inplace_avx2_q5_k,
                  [DT_IQ4_NL] = inplace_avx2_iq4_nl, [DT_IQ4_XS] = inplace_avx2_iq4_xs,
                  [DT_MXFP4] = inplace_avx2_mxfp4}, /* inplace_avx2.c */
    .att_scores = {[DT_F32] = att_scores_f32_avx512, [DT_BF16] = att_scores_bf16_avx512},
    .att_values = {[DT_F32] = att_values_f32_avx512, [DT_BF16] = att_values_bf16_avx512},
};

/* ... by vpdpbusd */
static const kernels AVX512_VNNI = {
    AVX512_COMMON,
    .act_group = {[DT_Q4_K] = Q8_ACT_SB},
    .matmul_q8 = {AVX512_VNNI_Q8, [DT_Q6_K] = matmul_q8v_q6_k},
    .att_scores = {[DT_F32] = att_scores_f32_avx512, [DT_BF16] = att_scores_bf16_avx512},
    .att_values = {[DT_F32] = att_values_f32_avx512, [DT_BF16] = att_values_bf16_avx512},
};

/* ... and Q6_K's high bits by GFNI */
static const kernels AVX512_VNNI_GFNI = {
    AVX512_COMMON,
    .act_group = {[DT_Q4_K] = Q8_ACT_SB},
    .matmul_q8 = {AVX512_VNNI_Q8, [DT_Q6_K] = matmul_q8g_q6_k},
    .att_scores = {[DT_F32] = att_scores_f32_avx512, [DT_BF16] = att_scores_bf16_avx512},
    .att_values = {[DT_F32] = att_values_f32_avx512, [DT_BF16] = att_values_bf16_avx512},
};

/* ... and BF16 attention by vdpbf16ps */
static const kernels AVX512_VNNI_GFNI_BF16 = {
    AVX512_COMMON,
    .act_group = {[DT_Q4_K] = Q8_ACT_SB},
    .matmul_q8 = {AVX512_VNNI_Q8, [DT_Q6_K] = matmul_q8g_q6_k},
    .att_scores = {[DT_F32] = att_scores_f32_avx512, [DT_BF16] = att_scores_bf16_dp},
    .att_values = {[DT_F32] = att_values_f32_avx512, [DT_BF16] = att_values_bf16_dp},
};

/* The table, without any CPU check: dispatch.c calls this only after checking
 * AVX-512 F/BW/VL/DQ, and passes 1 if AVX512-VNNI is there too, 2 if GFNI as well,
 * 3 if AVX512-BF16 as well. */
const kernels *kernels_avx512_table(int level) {
    static const kernels *const t[] = {&AVX512, &AVX512_VNNI, &AVX512_VNNI_GFNI, &AVX512_VNNI_GFNI_BF16};
    return t[level < 0 ? 0 : level > 3 ? 3 : level];
}

#else
typedef int avx512_not_built; /* keeps the translation unit non-empty */
#endif
