/* attn_tiles.h - the SIMD attention kernels and fast-mode softmax / SwiGLU of
 * kernels.h, written once over a small vector vocabulary. Included by avx2.c
 * and avx512.c (which have the ISA flags), after defining:
 *   AV, AVI, AW         f32 vector type, int32 vector type, lanes;
 *   ATT_NV              vectors per register tile column (positions or dims);
 *   av_zero() av_set1(x) av_load(p)
 *   av_store(p, v) av_fma(a, b, c) = a*b + c in one rounding, av_add av_sub av_mul
 *   av_min av_max av_round (to nearest even) av_hsum av_hmax
 *   av_cvt_i(v) (f32 holding an integer -> int32) av_pow2(vi) (2^vi, vi in [-126, 127])
 *   av_bf_lo(p) av_bf_hi(p)   (p: uint32_t *, AW bf16 pairs) their even / odd elements as f32;
 *   ATT_SCORES_F32 ATT_VALUES_F32 ATT_SCORES_BF16 ATT_VALUES_BF16 ATT_SOFTMAX_FAST
 *   ATT_GEGLU_FAST ATT_SWIGLU_FAST   the names of the functions defined here, written
 *                       out in the including file (att_scores_f32_avx2, ...).
 * Each lane does exactly the scalar version's operations (attn_scalar.c), so
 * scores, values, e^x and SwiGLU are bit-identical to it; only softmax's sum
 * of exponentials is added in a different order. Private to src/kernels/. */
#ifndef LLMGEN_KERNELS_ATTN_TILES_H
#define LLMGEN_KERNELS_ATTN_TILES_H

#include "attn_kernels.h"

#define ATT_R 4 /* query rows per register tile */
#define ATT_AI static inline __attribute__((always_inline))
#define ATT_UNROLL _Pragma("GCC unroll 4") /* the tile loops: accumulators stay in registers */

/* Store the first n lanes of NV vectors (n <= NV * AW). */
ATT_AI void att_store(float *dst, const AV *v, int n, int NV) {
    if (n == NV * AW) {
        ATT_UNROLL for (int j = 0; j < NV; j++) av_store(dst + j * AW, v[j]);
        return;
    }
    float tmp[ATT_NV * AW];
    ATT_UNROLL for (int j = 0; j < NV; j++) av_store(tmp + j * AW, v[j]);
    memcpy(dst, tmp, (size_t)n * sizeof(float));
}

/* R rows x NV * AW positions of one key block (columns c0.. of block blk; NV <= ATT_NV
 * vectors, the fewest that hold the n columns stored): the block holds whole vectors. */
ATT_AI void att_scores_tile(const float *blk, int kb, int hd, const float *q, int ldq, int R, float *s,
                            int lds, int n, int NV) {
    AV acc[ATT_R][ATT_NV];
    ATT_UNROLL for (int r = 0; r < R; r++)
        ATT_UNROLL for (int j = 0; j < NV; j++) acc[r][j] = av_zero();
    for (int d = 0; d < hd; d++) {
        AV k[ATT_NV];
        ATT_UNROLL for (int j = 0; j < NV; j++) k[j] = av_load(blk + (size_t)d * kb + (size_t)j * AW);
        ATT_UNROLL for (int r = 0; r < R; r++) {
            AV qb = av_set1(q[(size_t)r * ldq + d]);
            ATT_UNROLL for (int j = 0; j < NV; j++) acc[r][j] = av_fma(qb, k[j], acc[r][j]);
        }
    }
    ATT_UNROLL for (int r = 0; r < R; r++) att_store(s + (size_t)r * lds, acc[r], n, NV);
}

/* R rows x ATT_NV * AW dimensions of the values, over positions 0..len. */
ATT_AI void att_values_tile(const float *v, size_t vstride, int len, const float *pr, int ldp, int R,
                            float *out, int ldo) {
    AV acc[ATT_R][ATT_NV];
    ATT_UNROLL for (int r = 0; r < R; r++)
        ATT_UNROLL for (int j = 0; j < ATT_NV; j++) acc[r][j] = av_zero();
    for (int p = 0; p < len; p++) {
        AV x[ATT_NV];
        ATT_UNROLL for (int j = 0; j < ATT_NV; j++) x[j] = av_load(v + (size_t)p * vstride + (size_t)j * AW);
        ATT_UNROLL for (int r = 0; r < R; r++) {
            AV pb = av_set1(pr[(size_t)r * ldp + p]);
            ATT_UNROLL for (int j = 0; j < ATT_NV; j++) acc[r][j] = av_fma(pb, x[j], acc[r][j]);
        }
    }
    ATT_UNROLL for (int r = 0; r < R; r++) att_store(out + (size_t)r * ldo, acc[r], ATT_NV * AW, ATT_NV);
}

/* The tile widths: CALL(RR, NV) with NV the fewest vectors (<= ATT_NV) that hold nv, a
 * constant in each call; RR passes through (a row count from ATT_ROWS). */
#define ATT_BY_NV(CALL, RR)                                                  \
    if (nv >= ATT_NV) CALL(RR, ATT_NV);                                      \
    else if (ATT_NV > 3 && nv == 3) CALL(RR, ATT_NV > 3 ? 3 : ATT_NV);       \
    else if (ATT_NV > 2 && nv == 2) CALL(RR, ATT_NV > 2 ? 2 : ATT_NV);       \
    else CALL(RR, 1)

/* The row tiles, R a constant in each call so the tile's loops unroll. */
#define ATT_ROWS(CALL)        \
    switch (R) {              \
    case 4: CALL(4); break;   \
    case 3: CALL(3); break;   \
    case 2: CALL(2); break;   \
    default: CALL(1); break;  \
    }

ATT_AI void att_scores_simd(const float *kt, int kb, int hd, int len, const float *q, int ldq, int nt,
                            float *s, int lds) {
    int cw = ATT_NV * AW;
    for (int p0 = 0; p0 < len; p0 += kb) {
        const float *blk = kt + (size_t)(p0 / kb) * hd * kb;
        int cols = len - p0 < kb ? len - p0 : kb;
        for (int c0 = 0; c0 < cols; c0 += cw) {
            int n = cols - c0 < cw ? cols - c0 : cw;
            /* a last block's tail (prefill: the causal end) in as few vectors as hold it: the
             * lanes computed are the same either way, only unstored ones are left out */
            int nv = (n + AW - 1) / AW;
            for (int i = 0; i < nt; i += ATT_R) {
                int R = nt - i < ATT_R ? nt - i : ATT_R;
#define ATT_SC_NV(RR, NV)                                                                                          \
    att_scores_tile(blk + c0, kb, hd, q + (size_t)i * ldq, ldq, RR, s + (size_t)i * lds + p0 + c0, lds, n, NV)
#define ATT_SC(RR) ATT_BY_NV(ATT_SC_NV, RR)
                ATT_ROWS(ATT_SC)
#undef ATT_SC
#undef ATT_SC_NV
            }
        }
    }
}

ATT_AI void att_values_simd(const float *v, size_t vstride, int hd, int len, const float *pr, int ldp, int nt,
                            float *out, int ldo) {
    int cw = ATT_NV * AW;
    for (int d0 = 0; d0 < hd; d0 += cw)
        for (int i = 0; i < nt; i += ATT_R) {
            int R = nt - i < ATT_R ? nt - i : ATT_R;
#define ATT_VA(RR)                                                                                      \
    att_values_tile(v + d0, vstride, len, pr + (size_t)i * ldp, ldp, RR, out + (size_t)i * ldo + d0, ldo)
            ATT_ROWS(ATT_VA)
#undef ATT_VA
        }
}

static void ATT_SCORES_F32(const void *kt, int kb, int hd, int len, const float *q, int ldq, int nt, float *s,
                           int lds) {
    if (kb % (ATT_NV * AW)) {
        att_scores_f32_scalar(kt, kb, hd, len, q, ldq, nt, s, lds);
        return;
    }
    att_scores_simd(kt, kb, hd, len, q, ldq, nt, s, lds);
}

static void ATT_VALUES_F32(const void *v, size_t vstride, int hd, int len, const float *pr, int ldp, int nt, float *out,
                           int ldo) {
    if (hd % (ATT_NV * AW)) {
        att_values_f32_scalar(v, vstride, hd, len, pr, ldp, nt, out, ldo);
        return;
    }
    att_values_simd(v, vstride, hd, len, pr, ldp, nt, out, ldo);
}

/* ---- BF16 pairs (kernels.h) by two FMAs a pair, where the ISA has no bf16 dot product ---- */

#define ATT_BF16_MAXHD 512 /* larger heads take the scalar version */
#define ATT_BF16_PCH 256   /* probabilities rounded per chunk of positions */

/* R rows x NV * AW positions of one key block from position c0; qr: the rows rounded. */
ATT_AI void att_scores_bf16_tile(const uint32_t *blk, int kb, int hd, const float (*qr)[ATT_BF16_MAXHD], int R,
                                 float *s, int lds, int n, int NV) {
    AV acc[ATT_R][ATT_NV];
    ATT_UNROLL for (int r = 0; r < R; r++)
        ATT_UNROLL for (int j = 0; j < NV; j++) acc[r][j] = av_zero();
    for (int i = 0; i < hd / 2; i++) {
        AV ke[ATT_NV], ko[ATT_NV];
        ATT_UNROLL for (int j = 0; j < NV; j++) {
            const uint32_t *pk = blk + (size_t)i * kb + (size_t)j * AW;
            ke[j] = av_bf_lo(pk);
            ko[j] = av_bf_hi(pk);
        }
        ATT_UNROLL for (int r = 0; r < R; r++) {
            AV qo = av_set1(qr[r][2 * i + 1]), qe = av_set1(qr[r][2 * i]);
            ATT_UNROLL for (int j = 0; j < NV; j++) acc[r][j] = av_fma(qe, ke[j], av_fma(qo, ko[j], acc[r][j]));
        }
    }
    ATT_UNROLL for (int r = 0; r < R; r++) att_store(s + (size_t)r * lds, acc[r], n, NV);
}

static void ATT_SCORES_BF16(const void *kt, int kb, int hd, int len, const float *q, int ldq, int nt, float *s,
                            int lds) {
    if (kb % (ATT_NV * AW) || hd % 2 || hd > ATT_BF16_MAXHD) {
        att_scores_bf16_scalar(kt, kb, hd, len, q, ldq, nt, s, lds);
        return;
    }
    float qr[ATT_R][ATT_BF16_MAXHD];
    int cw = ATT_NV * AW;
    for (int i0 = 0; i0 < nt; i0 += ATT_R) {
        int R = nt - i0 < ATT_R ? nt - i0 : ATT_R;
        for (int r = 0; r < R; r++)
            for (int d = 0; d < hd; d++) qr[r][d] = kv_bf16_round(q[(size_t)(i0 + r) * ldq + d]);
        for (int p0 = 0; p0 < len; p0 += kb) {
            const uint32_t *blk = (const uint32_t *)kt + (size_t)(p0 / kb) * hd / 2 * kb;
            int cols = len - p0 < kb ? len - p0 : kb;
            for (int c0 = 0; c0 < cols; c0 += cw) {
                int n = cols - c0 < cw ? cols - c0 : cw, nv = (n + AW - 1) / AW;
                float *sp = s + (size_t)i0 * lds + p0 + c0;
#define ATT_SB_NV(RR, NV) att_scores_bf16_tile(blk + c0, kb, hd, (const float(*)[ATT_BF16_MAXHD])qr, RR, sp, lds, n, NV)
#define ATT_SB(RR) ATT_BY_NV(ATT_SB_NV, RR)
                ATT_ROWS(ATT_SB)
#undef ATT_SB
#undef ATT_SB_NV
            }
        }
    }
}

/* R rows x ATT_NV * AW dimensions from d0, positions [p0, p0 + n) (n even, the pad's
 * probability 0); pr: the rows' probabilities of those positions, rounded. */
ATT_AI void att_values_bf16_tile(const uint32_t *v, size_t vstride, int n, const float (*pr)[ATT_BF16_PCH], int R,
                                 AV acc[ATT_R][ATT_NV]) {
    for (int p = 0; p < n; p += 2) {
        AV xe[ATT_NV], xo[ATT_NV];
        ATT_UNROLL for (int j = 0; j < ATT_NV; j++) {
            const uint32_t *pv = v + (size_t)(p / 2) * vstride + (size_t)j * AW;
            xe[j] = av_bf_lo(pv);
            xo[j] = av_bf_hi(pv);
        }
        ATT_UNROLL for (int r = 0; r < R; r++) {
            AV po = av_set1(pr[r][p + 1]), pe = av_set1(pr[r][p]);
            ATT_UNROLL for (int j = 0; j < ATT_NV; j++) acc[r][j] = av_fma(pe, xe[j], av_fma(po, xo[j], acc[r][j]));
        }
    }
}

static void ATT_VALUES_BF16(const void *v, size_t vstride, int hd, int len, const float *pr, int ldp, int nt,
                            float *out, int ldo) {
    if (hd % (ATT_NV * AW) || hd > ATT_BF16_MAXHD) {
        att_values_bf16_scalar(v, vstride, hd, len, pr, ldp, nt, out, ldo);
        return;
    }
    /* each chunk of probabilities rounded once for all the head's dimension tiles, whose
     * accumulators wait in acc between chunks (rounding it per tile took 15% of a
     * 512-token prefill on AVX2: perf); every lane sums its positions in the same order */
    float prr[ATT_R][ATT_BF16_PCH];
    AV acc[ATT_BF16_MAXHD / (ATT_NV * AW)][ATT_R][ATT_NV];
    const uint32_t *v32 = v;
    int nd = hd / (ATT_NV * AW);
    for (int i0 = 0; i0 < nt; i0 += ATT_R) {
        int R = nt - i0 < ATT_R ? nt - i0 : ATT_R;
        for (int c = 0; c < nd; c++)
            ATT_UNROLL for (int r = 0; r < ATT_R; r++)
                ATT_UNROLL for (int j = 0; j < ATT_NV; j++) acc[c][r][j] = av_zero();
        for (int p0 = 0; p0 < len; p0 += ATT_BF16_PCH) {
            int n = len - p0 < ATT_BF16_PCH ? len - p0 : ATT_BF16_PCH, n2 = (n + 1) & ~1;
            for (int r = 0; r < R; r++) {
                for (int p = 0; p < n; p++) prr[r][p] = kv_bf16_round(pr[(size_t)(i0 + r) * ldp + p0 + p]);
                if (n2 > n) prr[r][n] = 0.0f;
            }
            for (int c = 0; c < nd; c++) {
                const uint32_t *vp = v32 + (size_t)(p0 / 2) * vstride + (size_t)c * ATT_NV * AW;
#define ATT_VB(RR) att_values_bf16_tile(vp, vstride, n2, (const float(*)[ATT_BF16_PCH])prr, RR, acc[c])
                ATT_ROWS(ATT_VB)
#undef ATT_VB
            }
        }
        for (int c = 0; c < nd; c++)
            ATT_UNROLL for (int r = 0; r < R; r++)
                att_store(out + (size_t)(i0 + r) * ldo + (size_t)c * ATT_NV * AW, acc[c][r], ATT_NV * AW, ATT_NV);
    }
}

/* exp_poly (attn_kernels.h) lane by lane. 2^n as 2^(n/2) * 2^(n - n/2): both
 * factors are normal floats for n in [-150, 129], the first product is exact
 * and the second rounds once, so the result is ldexpf's, subnormals included. */
ATT_AI AV att_exp(AV x) {
    x = av_min(av_max(x, av_set1(EXPP_LO)), av_set1(EXPP_HI));
    AV n = av_round(av_mul(x, av_set1(EXPP_LOG2E)));
    AV r = av_fma(n, av_set1(-EXPP_LN2_HI), x);
    r = av_fma(n, av_set1(-EXPP_LN2_LO), r);
    AV p = av_fma(av_set1(EXPP_C7), r, av_set1(EXPP_C6));
    p = av_fma(p, r, av_set1(EXPP_C5));
    p = av_fma(p, r, av_set1(EXPP_C4));
    p = av_fma(p, r, av_set1(EXPP_C3));
    p = av_fma(p, r, av_set1(EXPP_C2));
    p = av_fma(p, r, av_set1(1.0f));
    p = av_fma(p, r, av_set1(1.0f));
    AVI ni = av_cvt_i(n), n1 = av_shr1(ni), n2 = av_isub(ni, n1);
    return av_mul(av_mul(p, av_pow2(n1)), av_pow2(n2));
}

static void ATT_SOFTMAX_FAST(float *x, int len, int pad, float scale) {
    AV vs = av_set1(scale), vm = av_set1(-INFINITY);
    int p = 0;
    for (; p + AW <= len; p += AW) {
        AV t = av_mul(av_load(x + p), vs);
        av_store(x + p, t);
        vm = av_max(vm, t);
    }
    float mx = av_hmax(vm);
    for (; p < len; p++) {
        x[p] *= scale;
        if (x[p] > mx) mx = x[p];
    }
    AV vmx = av_set1(mx), sum = av_zero();
    for (p = 0; p + AW <= len; p += AW) {
        AV e = att_exp(av_sub(av_load(x + p), vmx));
        av_store(x + p, e);
        sum = av_add(sum, e);
    }
    /* the last len % AW through one vector too, not a scalar e^ (and ldexpf) each (5% of a
     * 250-position row); their sum one by one */
    float tail = 0.0f;
    if (p < len) {
        float tmp[AW];
        int r = len - p;
        for (int k = 0; k < AW; k++) tmp[k] = k < r ? x[p + k] : mx;
        av_store(tmp, att_exp(av_sub(av_load(tmp), vmx)));
        for (int k = 0; k < r; k++) {
            x[p + k] = tmp[k];
            tail += tmp[k];
        }
    }
    float inv = 1.0f / (av_hsum(sum) + tail);
    AV vi = av_set1(inv);
    for (p = 0; p + AW <= len; p += AW) av_store(x + p, av_mul(av_load(x + p), vi));
    for (; p < len; p++) x[p] *= inv;
    for (p = len; p < pad; p++) x[p] = 0.0f;
}

/* The same operations in the same order as geglu_fast_scalar, lane by lane. */
static void ATT_GEGLU_FAST(float *gate, const float *up, int n) {
    int i = 0;
    AV one = av_set1(1.0f), c2 = av_set1(GELU_C2), kappa = av_set1(GELU_KAPPA);
    for (; i + AW <= n; i += AW) {
        AV x = av_load(gate + i), x3 = av_mul(av_mul(x, x), x);
        AV u2 = av_mul(c2, av_add(x, av_mul(kappa, x3)));
        AV e = att_exp(av_sub(av_zero(), u2));
        av_store(gate + i, av_mul(av_div(x, av_add(one, e)), av_load(up + i)));
    }
    for (; i < n; i++) {
        float x = gate[i], x3 = x * x * x, u2 = GELU_C2 * (x + GELU_KAPPA * x3);
        gate[i] = x / (1.0f + exp_poly(0.0f - u2)) * up[i];
    }
}

static void ATT_SWIGLU_FAST(float *gate, const float *up, int n) {
    int i = 0;
    AV one = av_set1(1.0f);
    for (; i + AW <= n; i += AW) {
        AV g = av_load(gate + i);
        AV e = att_exp(av_sub(av_zero(), g));
        av_store(gate + i, av_mul(av_div(g, av_add(one, e)), av_load(up + i)));
    }
    for (; i < n; i++) gate[i] = gate[i] / (1.0f + exp_poly(-gate[i])) * up[i];
}

#endif
