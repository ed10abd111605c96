/* attn_scalar.c - portable attention kernels and fast-mode softmax / SwiGLU
 * (contracts in kernels.h and attn_kernels.h). fmaf makes each accumulation
 * step the single rounding a SIMD FMA lane does, so the SIMD versions are
 * compared with these bit for bit. */
#include "attn_kernels.h"

#include "base/util.h"

void att_scores_f32_scalar(const void *kt, int kb, int hd, int len, const float *q, int ldq, int nt, float *s,
                           int lds) {
    const float *k = kt;
    for (int i = 0; i < nt; i++)
        for (int p = 0; p < len; p++) {
            size_t base = (size_t)(p / kb) * hd * kb + p % kb;
            float acc = 0.0f;
            for (int d = 0; d < hd; d++) acc = fmaf(q[(size_t)i * ldq + d], k[base + (size_t)d * kb], acc);
            s[(size_t)i * lds + p] = acc;
        }
}

void att_values_f32_scalar(const void *v, size_t vstride, int hd, int len, const float *pr, int ldp, int nt,
                           float *out, int ldo) {
    const float *vc = v;
    for (int i = 0; i < nt; i++)
        for (int d = 0; d < hd; d++) {
            float acc = 0.0f;
            for (int p = 0; p < len; p++) acc = fmaf(pr[(size_t)i * ldp + p], vc[p * vstride + d], acc);
            out[(size_t)i * ldo + d] = acc;
        }
}

/* BF16: pairs, odd element first (kernels.h). */
void att_scores_bf16_scalar(const void *kt, int kb, int hd, int len, const float *q, int ldq, int nt, float *s,
                            int lds) {
    const uint16_t *k = kt;
    for (int i = 0; i < nt; i++)
        for (int p = 0; p < len; p++) {
            const float *qi = q + (size_t)i * ldq;
            float acc = 0.0f;
            for (int d = 0; d < hd; d += 2) {
                acc = fmaf(kv_bf16_round(qi[d + 1]), bf16_to_f32(k[kv_bf16_key(p, d + 1, kb, hd)]), acc);
                acc = fmaf(kv_bf16_round(qi[d]), bf16_to_f32(k[kv_bf16_key(p, d, kb, hd)]), acc);
            }
            s[(size_t)i * lds + p] = acc;
        }
}

void att_values_bf16_scalar(const void *v, size_t vstride, int hd, int len, const float *pr, int ldp, int nt,
                            float *out, int ldo) {
    const uint16_t *vc = v;
    for (int i = 0; i < nt; i++)
        for (int d = 0; d < hd; d++) {
            const float *pi = pr + (size_t)i * ldp;
            float acc = 0.0f;
            for (int p = 0; p < len; p += 2) {
                float p1 = p + 1 < len ? kv_bf16_round(pi[p + 1]) : 0.0f;
                acc = fmaf(p1, bf16_to_f32(vc[kv_bf16_value(p + 1, d, vstride)]), acc);
                acc = fmaf(kv_bf16_round(pi[p]), bf16_to_f32(vc[kv_bf16_value(p, d, vstride)]), acc);
            }
            out[(size_t)i * ldo + d] = acc;
        }
}

void softmax_fast_scalar(float *x, int len, int pad, float scale) { softmax_with(x, len, pad, scale, exp_poly); }

void swiglu_fast_scalar(float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) gate[i] = gate[i] / (1.0f + exp_poly(-gate[i])) * up[i];
}

void geglu_fast_scalar(float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) {
        float x = gate[i], x3 = x * x * x, u2 = GELU_C2 * (x + GELU_KAPPA * x3);
        gate[i] = x / (1.0f + exp_poly(0.0f - u2)) * up[i];
    }
}
