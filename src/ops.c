/* ops.c - per-token stages of the forward pass (see ops.h). */
#include "ops.h"

#include <math.h>
#include <string.h>

void ops_rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    float r = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = w[i] * (x[i] * r);
}

/* q.k is the same in both layouts because Q and K rows share the permutation. */
void ops_rope(float *v, int hd, const float *inv_freq, int pos, int interleaved) {
    int half = hd / 2;
    for (int i = 0; i < half; i++) {
        float a = (float)pos * inv_freq[i]; /* f32 product, as transformers forms it */
        float c = cosf(a), s = sinf(a);
        int i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
        float x0 = v[i0], x1 = v[i1];
        v[i0] = x0 * c - x1 * s;
        v[i1] = x1 * c + x0 * s;
    }
}

void ops_swiglu(float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

void ops_attend(const kernels *k, float *out, const float *q, const float *kc, const float *vc,
                int len, int hd, size_t stride, float scale, float *scores) {
    float mx = -INFINITY;
    for (int p = 0; p < len; p++) {
        scores[p] = k->dot(q, kc + (size_t)p * stride, hd) * scale;
        if (scores[p] > mx) mx = scores[p];
    }
    float sum = 0.0f;
    for (int p = 0; p < len; p++) {
        scores[p] = expf(scores[p] - mx);
        sum += scores[p];
    }
    float inv = 1.0f / sum;
    memset(out, 0, (size_t)hd * sizeof(float));
    for (int p = 0; p < len; p++) k->axpy(out, scores[p] * inv, vc + (size_t)p * stride, hd);
}
