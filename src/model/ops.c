/* ops.c - per-token stages of the forward pass (see ops.h). */
#include "ops.h"

#include "kernels/attn_kernels.h"

#include <math.h>
#include <string.h>

/* The sum of squares in 16 interleaved partial sums (element i into sum i % 16),
 * added in a fixed tree, then the tail: the compiler keeps the partial sums in
 * vector registers, so a token's norm is not one 4-cycle add per element in
 * a chain, and the result is the same bits on every machine. */
static float sum_squares(const float *x, int n) {
    enum { L = 16 };
    float acc[L] = {0};
    int i = 0;
    /* unrolled whole, acc lives in registers (otherwise a load-add-store chain through the stack) */
    for (; i + L <= n; i += L) _Pragma("GCC unroll 16") for (int k = 0; k < L; k++) acc[k] += x[i + k] * x[i + k];
    for (int w = L / 2; w >= 1; w /= 2)
        _Pragma("GCC unroll 8") for (int k = 0; k < w; k++) acc[k] += acc[k + w];
    float ss = acc[0];
    for (; i < n; i++) ss += x[i] * x[i];
    return ss;
}

void ops_rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    float ss = sum_squares(x, n);
    float r = 1.0f / sqrtf(ss / (float)n + eps);
    int i = 0;
    if (!w) { /* a weightless norm (Gemma 4's values) */
        for (; i < n; i++) out[i] = x[i] * r;
        return;
    }
    /* 16 at a time through a local copy: out may be x (in place), and the compiler vectorizes
     * only what needs no aliasing check; the same operations per element either way */
    for (; i + 16 <= n; i += 16) {
        float t[16];
        _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++) t[k] = w[i + k] * (x[i + k] * r);
        _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++) out[i + k] = t[k];
    }
    for (; i < n; i++) out[i] = w[i] * (x[i] * r);
}

/* q.k is the same in both layouts because Q and K rows share the permutation. */
void ops_rope(float *v, int hd, const float *inv_freq, int pos, int interleaved) {
    /* kept as the reference for ops_rope_angles + ops_rope_apply (tested equal) */
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

void ops_rope_angles(float *cs, int hd, const float *inv_freq, int pos) {
    int half = hd / 2;
    for (int i = 0; i < half; i++) {
        float a = (float)pos * inv_freq[i]; /* the same f32 product as ops_rope */
        cs[i] = cosf(a);
        cs[half + i] = sinf(a);
    }
}

void ops_rope_apply(float *v, int hd, const float *cs, int interleaved) {
    int half = hd / 2, i = 0;
    /* halves 8 at a time through local copies (the compiler cannot tell the halves apart) */
    for (; !interleaved && i + 8 <= half; i += 8) {
        float c[8], s[8], x0[8], x1[8], a[8], b[8];
        memcpy(c, cs + i, sizeof c);
        memcpy(s, cs + half + i, sizeof s);
        memcpy(x0, v + i, sizeof x0);
        memcpy(x1, v + half + i, sizeof x1);
        for (int k = 0; k < 8; k++) a[k] = x0[k] * c[k] - x1[k] * s[k];
        for (int k = 0; k < 8; k++) b[k] = x1[k] * c[k] + x0[k] * s[k];
        memcpy(v + i, a, sizeof a);
        memcpy(v + half + i, b, sizeof b);
    }
    for (; i < half; i++) {
        float c = cs[i], s = cs[half + i];
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
    for (int p = 0; p < len; p++) scores[p] = k->dot(q, kc + (size_t)p * stride, hd);
    softmax_with(scores, len, len, scale, expf);
    memset(out, 0, (size_t)hd * sizeof(float));
    for (int p = 0; p < len; p++) k->axpy(out, scores[p], vc + (size_t)p * stride, hd);
}

void ops_attend_block(const kernels *k, int fast, float *out, int ldo, const float *q, int ldq, int nt, int rpt,
                      dtype kvt, const void *kt, int kb, const void *vc, size_t vstride, int ring, int len0, int win,
                      int hd, float scale, float *scores, int lds, float *wrap) {
    ops_attend_block_sinks(k, fast, out, ldo, q, ldq, nt, rpt, kvt, kt, kb, vc, vstride, ring, len0, win, hd, scale,
                           scores, lds, wrap, NULL);
}

/* A row's softmax with a sink: the scores scaled here, the sink put after them as one more score (the
 * scale 1 leaves all as they are), the softmax over both, then the sink's share dropped. row[end] is
 * scratch: a masked position of this row (zeroed after), or the first past len (lds > len). */
static void softmax_sink(const kernels *k, int fast, float *row, int lo, int end, int len, float scale, float sink) {
    for (int p = lo; p < end; p++) row[p] *= scale;
    row[end] = sink;
    if (fast) k->softmax_fast(row + lo, end + 1 - lo, end + 1 - lo, 1.0f);
    else softmax_with(row + lo, end + 1 - lo, end + 1 - lo, 1.0f, expf);
    for (int p = end; p < len; p++) row[p] = 0.0f;
}

void ops_attend_block_sinks(const kernels *k, int fast, float *out, int ldo, const float *q, int ldq, int nt, int rpt,
                            dtype kvt, const void *kt, int kb, const void *vc, size_t vstride, int ring, int len0,
                            int win, int hd, float scale, float *scores, int lds, float *wrap, const float *sinks) {
    /* a window: skip the whole key blocks before the first row's window */
    int skip = win && len0 > win ? (len0 - win) / kb * kb : 0;
    int len = len0 + (nt - 1) / rpt - skip; /* the last row's length bounds every row */
    /* a ring: the read [skip, skip + len) starts at slot skip % ring, a whole block,
     * and wraps at most once (len <= ring); n1 positions before the wrap */
    int ps = ring ? skip % ring : skip, n1 = ring && ps + len > ring ? ring - ps : len;
    const void *kt0 = kt, *vc0 = vc;
    kt = (const char *)kt + dtype_row_bytes(kvt, (int64_t)ps * hd);
    vc = (const char *)vc + dtype_row_bytes(kvt, (int64_t)ps * (int64_t)vstride);
    /* each score is its own dot product: split at the wrap, the same bits */
    k->att_scores[kvt](kt, kb, hd, n1, q, ldq, nt, scores, lds);
    if (n1 < len) k->att_scores[kvt](kt0, kb, hd, len - n1, q, ldq, nt, scores + n1, lds);
    for (int i = 0; i < nt; i++) {
        float *row = scores + (size_t)i * lds;
        int end = len0 + i / rpt - skip, lo = win && end > win ? end - win : 0;
        for (int p = 0; p < lo; p++) row[p] = 0.0f;
        if (sinks) {
            softmax_sink(k, fast, row, lo, end, len, scale, sinks[i % rpt]);
        } else if (fast) {
            k->softmax_fast(row + lo, end - lo, len - lo, scale);
        } else {
            softmax_with(row + lo, end - lo, len - lo, scale, expf); /* exact mode: libm */
        }
    }
    k->att_values[kvt](vc, vstride, hd, n1, scores, lds, nt, out, ldo);
    if (n1 == len) return;
    /* the positions after the wrap in a second accumulation, added: a row whose window
     * spans the wrap sums in two parts (both deterministic; the wrap is at a fixed
     * position, a multiple of ring), any other row gets its one-chain bits (+ 0) */
    k->att_values[kvt](vc0, vstride, hd, len - n1, scores + n1, lds, nt, wrap, hd);
    for (int i = 0; i < nt; i++)
        for (int d = 0; d < hd; d++) out[(size_t)i * ldo + d] += wrap[(size_t)i * hd + d];
}

void ops_swiglu_clamp(float *gate, const float *up, int n, float alpha, float limit) {
    for (int i = 0; i < n; i++) {
        float g = gate[i] > limit ? limit : gate[i], u = up[i] > limit ? limit : up[i] < -limit ? -limit : up[i];
        float glu = g * (1.0f / (1.0f + expf(-(g * alpha))));
        gate[i] = (u + 1.0f) * glu;
    }
}

void ops_gelu_tanh_mul(float *gate, const float *up, int n) {
    /* PyTorch's gelu(approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    const float beta = (float)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
    for (int i = 0; i < n; i++) {
        float x = gate[i], inner = beta * (x + kappa * (x * x * x));
        gate[i] = 0.5f * x * (1.0f + tanhf(inner)) * up[i];
    }
}
