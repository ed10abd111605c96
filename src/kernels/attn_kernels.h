/* attn_kernels.h - attention and fast-mode elementwise kernels (att_scores,
 * att_values, softmax_fast, swiglu_fast of kernels.h): the portable versions
 * in attn_scalar.c, and the e^x polynomial every ISA evaluates the same way.
 * The SIMD versions come from attn_tiles.h, included by avx2.c and avx512.c. */
#ifndef LLMGEN_ATTN_KERNELS_H
#define LLMGEN_ATTN_KERNELS_H

#include <math.h>

#include "kernels.h"
#include "base/util.h"

/* x as kv_bf16 rounds it, back in f32 (the value a BF16 pair product uses). */
static inline float kv_bf16_round(float x) { return bf16_to_f32(kv_bf16(x)); }

/* e^x = 2^n * e^r, n = nearest integer to x / ln 2, r = x - n ln 2 in
 * [-ln2/2, ln2/2] (ln 2 split in a high part with few mantissa bits, so n * hi
 * is exact, and a low part), e^r by its Taylor polynomial to degree 7
 * (truncation < 6e-9 relative on that interval; rounding adds ~1 ulp). The
 * input is clamped to [-104, 89]: below, the result is 0 in f32 anyway; above,
 * it is +inf, as expf gives. */
#define EXPP_LO -104.0f
#define EXPP_HI 89.0f
#define EXPP_LOG2E 1.44269504088896341f
#define EXPP_LN2_HI 0.693145751953125f
#define EXPP_LN2_LO 1.42860682030941723e-6f
#define EXPP_C7 (1.0f / 5040.0f)
#define EXPP_C6 (1.0f / 720.0f)
#define EXPP_C5 (1.0f / 120.0f)
#define EXPP_C4 (1.0f / 24.0f)
#define EXPP_C3 (1.0f / 6.0f)
#define EXPP_C2 0.5f

/* The scalar evaluation; SIMD versions do the same operations lane by lane
 * (fmaf is their fused multiply-add, rintf their round-to-nearest-even,
 * ldexpf their scalef), so they give the same bits. */
static inline float exp_poly(float x) {
    x = x < EXPP_LO ? EXPP_LO : x > EXPP_HI ? EXPP_HI : x;
    float n = rintf(x * EXPP_LOG2E);
    float r = fmaf(n, -EXPP_LN2_HI, x);
    r = fmaf(n, -EXPP_LN2_LO, r);
    float p = fmaf(EXPP_C7, r, EXPP_C6);
    p = fmaf(p, r, EXPP_C5);
    p = fmaf(p, r, EXPP_C4);
    p = fmaf(p, r, EXPP_C3);
    p = fmaf(p, r, EXPP_C2);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    return ldexpf(p, (int)n);
}

/* softmax(x[0..len) * scale) in place, e^ by `ex`, then zeros up to x[pad): the
 * masked tail. ops.c runs it with libm's expf (exact mode), attn_scalar.c with
 * exp_poly (the scalar softmax_fast). */
static inline void softmax_with(float *x, int len, int pad, float scale, float (*ex)(float)) {
    float mx = -INFINITY;
    for (int p = 0; p < len; p++) {
        x[p] *= scale;
        if (x[p] > mx) mx = x[p];
    }
    float sum = 0.0f;
    for (int p = 0; p < len; p++) {
        x[p] = ex(x[p] - mx);
        sum += x[p];
    }
    float inv = 1.0f / sum;
    for (int p = 0; p < len; p++) x[p] *= inv;
    for (int p = len; p < pad; p++) x[p] = 0.0f;
}

void att_scores_f32_scalar(const void *kt, int kb, int hd, int len, const float *q, int ldq, int nt, float *s,
                           int lds);
void att_values_f32_scalar(const void *v, size_t vstride, int hd, int len, const float *pr, int ldp, int nt,
                           float *out, int ldo);
void att_scores_bf16_scalar(const void *kt, int kb, int hd, int len, const float *q, int ldq, int nt, float *s,
                            int lds);
void att_values_bf16_scalar(const void *v, size_t vstride, int hd, int len, const float *pr, int ldp, int nt,
                            float *out, int ldo);
void softmax_fast_scalar(float *x, int len, int pad, float scale);
void swiglu_fast_scalar(float *gate, const float *up, int n);
void geglu_fast_scalar(float *gate, const float *up, int n);

/* gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3):
 * 2u = GELU_C2 * (x + GELU_KAPPA * x^3). */
#define GELU_C2 1.5957691216057308f
#define GELU_KAPPA 0.044715f

#endif
