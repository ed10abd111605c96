/* deltanet.c - the Gated DeltaNet mixer of one key head group (deltanet.h). Every formula
 * follows transformers 5.23's torch_recurrent_gated_delta_rule and its helpers, in f32:
 *   conv: y_t = silu(sum_j w[j] * u_{t-k+1+j}), inputs before the sequence 0 (a zero state)
 *   q, k: x * rsqrt(sum x^2 + 1e-6) (l2norm; the 1e-6 is transformers' constant), q / sqrt(dk)
 *   beta = sigmoid(b); g = -exp(A_log) * softplus(a + dt_bias); alpha = exp(g)
 *   S = alpha S; m = S^T k; delta = beta (v - m); S += k delta^T; o = S^T q
 *   out = rms(o) * w_norm * silu(z) */
#include "deltanet.h"

#include <math.h>
#include <string.h>

#define DELTANET_MAX_K 64   /* config_validate's bound on the conv taps */
#define DELTANET_MAX_D 1024 /* and on a head's dims */

static float silu(float x) { return x / (1.0f + expf(-x)); }
static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
/* torch's softplus (beta 1, threshold 20) */
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* Channels [c0, c1) of n tokens: the conv in place, newest token first (y_t reads inputs t-k+1 .. t,
 * still the originals when t descends), after the last k - 1 originals are set aside as the new
 * state. */
static void conv_channels(const deltanet_dims *d, const float *taps, int c0, int c1, float *in, size_t ld, int n,
                          float *cs) {
    int k = d->k, C = d->channels;
    for (int c = c0; c < c1; c++) {
        const float *w = taps + (size_t)c * k;
        float keep[DELTANET_MAX_K];
        /* input i of the window: i < 0 from the state (slot k - 1 + i), else token i */
#define U(i) ((i) < 0 ? cs[(size_t)(k - 1 + (i)) * C + c] : in[(size_t)(i) * ld + c])
        for (int i = 0; i < k - 1; i++) keep[i] = U(n - (k - 1) + i);
        for (int t = n - 1; t >= 0; t--) {
            float y = 0.0f;
            for (int j = 0; j < k; j++) y += w[j] * U(t - (k - 1) + j);
            in[(size_t)t * ld + c] = silu(y);
        }
#undef U
        for (int i = 0; i < k - 1; i++) cs[(size_t)i * C + c] = keep[i];
    }
}

/* x * rsqrt(sum x^2 + 1e-6) * scale, in place. */
static void l2norm(float *x, int n, float scale) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    float r = 1.0f / sqrtf(ss + 1e-6f);
    for (int i = 0; i < n; i++) x[i] = x[i] * r * scale;
}

/* One token through one value head's state S (dk, dv): o = S^T q after the update. */
static void delta_step(float *S, const float *q, const float *kv, const float *v, float alpha, float beta, int dk,
                       int dv, float *o) {
    float m[DELTANET_MAX_D], delta[DELTANET_MAX_D];
    for (int j = 0; j < dv; j++) m[j] = 0.0f;
    for (int i = 0; i < dk; i++) {
        float *row = S + (size_t)i * dv, ki = kv[i];
        for (int j = 0; j < dv; j++) {
            row[j] *= alpha;
            m[j] += row[j] * ki;
        }
    }
    for (int j = 0; j < dv; j++) delta[j] = (v[j] - m[j]) * beta;
    for (int j = 0; j < dv; j++) o[j] = 0.0f;
    for (int i = 0; i < dk; i++) {
        float *row = S + (size_t)i * dv, ki = kv[i], qi = q[i];
        for (int j = 0; j < dv; j++) {
            row[j] += ki * delta[j];
            o[j] += row[j] * qi;
        }
    }
}

/* out = rms(o) * w * silu(z) (Qwen3_5RMSNormGated). */
static void gated_norm(float *out, const float *o, const float *w, const float *z, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++) ss += o[i] * o[i];
    float r = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = w[i] * (o[i] * r) * silu(z[i]);
}

void deltanet_head(const deltanet_dims *d, const deltanet_weights *w, int g, float *in, size_t ld, int n,
                   float *conv_state, float *state, float *out, size_t ldo) {
    int dk = d->dk, dv = d->dv, r = d->hv / d->hk, kd = d->hk * dk, vd = d->hv * dv;
    conv_channels(d, w->conv, g * dk, (g + 1) * dk, in, ld, n, conv_state);
    conv_channels(d, w->conv, kd + g * dk, kd + (g + 1) * dk, in, ld, n, conv_state);
    for (int j = 0; j < r; j++) {
        int h = d->tiled ? j * d->hk + g : g * r + j;
        conv_channels(d, w->conv, 2 * kd + h * dv, 2 * kd + (h + 1) * dv, in, ld, n, conv_state);
    }
    float scale = 1.0f / sqrtf((float)dk), o[DELTANET_MAX_D];
    for (int t = 0; t < n; t++) {
        float *row = in + (size_t)t * ld;
        float *q = row + (size_t)g * dk, *kv = row + kd + (size_t)g * dk;
        l2norm(q, dk, scale);
        l2norm(kv, dk, 1.0f);
        for (int j = 0; j < r; j++) {
            int h = d->tiled ? j * d->hk + g : g * r + j;
            const float *v = row + 2 * kd + (size_t)h * dv, *z = row + d->channels + (size_t)h * dv;
            float b = row[d->channels + vd + h], a = row[d->channels + vd + d->hv + h];
            float alpha = expf(w->decay[h] * softplus(a + w->dt_bias[h]));
            delta_step(state + (size_t)h * dk * dv, q, kv, v, alpha, sigmoid(b), dk, dv, o);
            gated_norm(out + (size_t)t * ldo + (size_t)h * dv, o, w->norm, z, dv, d->eps);
        }
    }
}
