/* Attention kernels and fast-mode softmax / SwiGLU of every ISA table on this
 * machine against the scalar versions: scores, values, e^x and SwiGLU bit for
 * bit (each lane does the scalar operations, see attn_tiles.h), softmax within
 * the rounding of its differently ordered sum. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "kernels/attn_kernels.h"
#include "ops.h"
#include "util.h"

static const kernels *isa(int i) {
    static const char *names[] = {"avx2", "avx512", "neon"};
    return kernels_select(names[i]);
}

/* Random-ish values in [-2, 2), rounded to f16 when the cache is f16. */
static void fill(float *x, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)(seed >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
    }
}

static void *as_dtype(const float *x, size_t n, dtype dt) {
    if (dt == DT_F32) {
        float *y = malloc(n * 4);
        memcpy(y, x, n * 4);
        return y;
    }
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++) h[i] = f32_to_f16(x[i]);
    return h;
}

Test(attn_kernels, scores_and_values_same_bits_as_scalar) {
    const int hds[] = {64, 128, 32}, kbs[] = {64, 64, 32};
    const int lens[] = {1, 15, 63, 64, 65, 130, 200};
    const dtype dts[] = {DT_F32, DT_F16};
    const kernels *ref = kernels_scalar();
    for (int c = 0; c < 3; c++) {
        int hd = hds[c], kb = kbs[c], maxlen = 200, nt = 9, lds = 208;
        size_t kn = (size_t)((maxlen + kb - 1) / kb) * hd * kb, vn = (size_t)maxlen * 3 * hd;
        float *kf = malloc(kn * 4), *vf = malloc(vn * 4), *q = malloc((size_t)nt * 2 * hd * 4);
        size_t outn = (size_t)nt * (lds > 2 * hd ? lds : 2 * hd); /* scores, or values 2 hd apart */
        float *pr = malloc((size_t)nt * lds * 4), *want = malloc(outn * 4), *got = malloc(outn * 4);
        fill(kf, kn, 1u + c);
        fill(vf, vn, 7u + c);
        fill(q, (size_t)nt * 2 * hd, 3u + c);
        fill(pr, (size_t)nt * lds, 5u + c);
        for (int di = 0; di < 2; di++) {
            void *kt = as_dtype(kf, kn, dts[di]), *v = as_dtype(vf, vn, dts[di]);
            for (int i = 0; i < 3; i++) {
                const kernels *k = isa(i);
                if (!k) continue;
                for (int li = 0; li < 7; li++)
                    for (int n = 1; n <= nt; n += 4) {
                        int len = lens[li];
                        memset(want, 0, outn * 4);
                        memset(got, 0, outn * 4);
                        ref->att_scores[dts[di]](kt, kb, hd, len, q, 2 * hd, n, want, lds);
                        k->att_scores[dts[di]](kt, kb, hd, len, q, 2 * hd, n, got, lds);
                        cr_expect_arr_eq(got, want, (size_t)n * lds * 4, "%s scores dt=%d hd=%d len=%d nt=%d", k->name,
                                         dts[di], hd, len, n);
                        /* values: vstride 3 hd (a kv head inside wider rows), outputs 2 hd apart */
                        ref->att_values[dts[di]](v, 3 * (size_t)hd, hd, len, pr, lds, n, want, 2 * hd);
                        k->att_values[dts[di]](v, 3 * (size_t)hd, hd, len, pr, lds, n, got, 2 * hd);
                        for (int t = 0; t < n; t++)
                            cr_expect_arr_eq(got + t * 2 * hd, want + t * 2 * hd, (size_t)hd * 4,
                                             "%s values dt=%d hd=%d len=%d nt=%d", k->name, dts[di], hd, len, n);
                    }
            }
            free(kt);
            free(v);
        }
        free(kf);
        free(vf);
        free(q);
        free(pr);
        free(want);
        free(got);
    }
}

Test(attn_kernels, softmax_fast_close_to_scalar_and_expf) {
    enum { N = 333, PAD = 352 };
    float x[PAD], ref[PAD], exact[PAD], got[PAD];
    const kernels *r = kernels_scalar();
    for (int len = 1; len <= N; len += 37) {
        fill(x, PAD, (unsigned)len);
        for (int i = 0; i < PAD; i++) x[i] *= 20.0f; /* logits spread over +-40 */
        memcpy(ref, x, sizeof x);
        r->softmax_fast(ref, len, PAD, 0.125f);
        /* exact: libm expf, the order of ops.c */
        memcpy(exact, x, sizeof x);
        float mx = -INFINITY, sum = 0.0f;
        for (int p = 0; p < len; p++) mx = fmaxf(mx, exact[p] * 0.125f);
        for (int p = 0; p < len; p++) sum += (exact[p] = expf(exact[p] * 0.125f - mx));
        for (int p = 0; p < len; p++) exact[p] /= sum;
        for (int p = 0; p < len; p++) cr_expect_float_eq(ref[p], exact[p], 1e-9f + 2e-6f * exact[p], "len=%d p=%d", len, p);
        for (int p = len; p < PAD; p++) cr_expect_eq(ref[p], 0.0f);
        for (int i = 0; i < 3; i++) {
            const kernels *k = isa(i);
            if (!k) continue;
            memcpy(got, x, sizeof x);
            k->softmax_fast(got, len, PAD, 0.125f);
            for (int p = 0; p < PAD; p++)
                cr_expect_float_eq(got[p], ref[p], 1e-9f + 1e-6f * ref[p], "%s len=%d p=%d", k->name, len, p);
        }
    }
}

Test(attn_kernels, swiglu_fast_same_bits_as_scalar) {
    enum { N = 1000 };
    static float g[N], u[N], want[N], got[N], exact[N];
    fill(g, N, 11u);
    fill(u, N, 13u);
    for (int i = 0; i < N; i++) g[i] *= 60.0f; /* through both clamps of e^x */
    memcpy(want, g, sizeof g);
    kernels_scalar()->swiglu_fast(want, u, N);
    memcpy(exact, g, sizeof g);
    ops_swiglu(exact, u, N);
    for (int i = 0; i < N; i++) cr_expect_float_eq(want[i], exact[i], 1e-30f + 1e-6f * fabsf(exact[i]), "i=%d", i);
    for (int j = 0; j < 3; j++) {
        const kernels *k = isa(j);
        if (!k) continue;
        for (int n = N - 7; n <= N; n += 7) { /* a scalar tail and none */
            memcpy(got, g, sizeof g);
            k->swiglu_fast(got, u, n);
            cr_expect_arr_eq(got, want, (size_t)n * 4, "%s n=%d", k->name, n);
        }
    }
}
