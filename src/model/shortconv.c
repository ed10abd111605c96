/* shortconv.c - LFM2's gated short convolution (shortconv.h), in f32 as transformers 5.23's
 * Lfm2ShortConv computes it: u_t = B_t * x_t; conv_t = sum_j w[j] * u_{t-k+1+j} (inputs before
 * the sequence 0: a zero state), j ascending; y_t = C_t * conv_t. */
#include "shortconv.h"

#define SHORTCONV_MAX_K 64 /* config_validate's bound on the kernel */

void shortconv_rows(int k, int dim, const float *taps, const float *in, size_t ld, int n, float *state, float *out,
                    size_t ldo, int c0, int c1) {
    for (int c = c0; c < c1; c++) {
        const float *w = taps + (size_t)c * k;
        /* the window of inputs u, oldest first: the state's k - 1, then each token's */
        float win[SHORTCONV_MAX_K];
        for (int i = 0; i < k - 1; i++) win[i] = state[(size_t)i * dim + c];
        for (int t = 0; t < n; t++) {
            const float *row = in + (size_t)t * ld;
            win[k - 1] = row[c] * row[2 * (size_t)dim + c];
            float y = 0.0f;
            for (int j = 0; j < k; j++) y += w[j] * win[j];
            out[(size_t)t * ldo + c] = row[(size_t)dim + c] * y;
            for (int i = 0; i + 1 < k; i++) win[i] = win[i + 1];
        }
        for (int i = 0; i < k - 1; i++) state[(size_t)i * dim + c] = win[i];
    }
}
