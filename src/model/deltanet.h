/* deltanet.h - the Gated DeltaNet mixer (transformers' Qwen3_5GatedDeltaNet) after its input
 * projections, for one sequence and one key head with the value heads that read it: the causal
 * depthwise conv with its rolling state, SiLU, L2-normalised q and k, the delta-rule update of
 * each value head's state matrix, and the gated RMSNorm. One per-token algorithm for every
 * pass: the outputs of a token are the same bits whether it runs alone (a decode step) or
 * among others (a prefill chunk, a batch, a draft pass), since each token's arithmetic reads
 * only its own inputs and the state the token before it left. transformers' prefill uses the
 * chunked (WY) form of the same recurrence, equal up to rounding. */
#ifndef LLMGEN_DELTANET_H
#define LLMGEN_DELTANET_H

#include <stddef.h>

/* The sizes of one layer (config.h's lin_*). */
typedef struct {
    int k;          /* conv taps per channel */
    int dk, dv;     /* key and value head dims */
    int hk, hv;     /* key and value heads; hv a multiple of hk */
    int channels;   /* conv channels: q of every key head, k of every key head, v of every value head */
    int tiled;      /* 0: key head g's value heads are g * r + j (transformers' order); 1: j * hk + g */
    float eps;      /* the gated norm's (rms_norm_eps) */
} deltanet_dims;

/* The weights of one layer (layer_weights' lin_*). */
typedef struct {
    const float *conv;     /* (channels, k) taps */
    const float *dt_bias;  /* (hv) */
    const float *decay;    /* (hv) -exp(A_log) */
    const float *norm;     /* (dv) the gated norm's weight */
} deltanet_weights;

/* Tokens t = 0 .. n-1 of one sequence through key head g and its r = hv / hk value heads (g * r + j,
 * or j * hk + g when tiled). Row t of `in` (ld floats apart) holds the projections
 * of token t: the conv inputs (channels), then z (hv * dv), then b (hv), then a (hv); the conv
 * overwrites this head's channels in place. conv_state is the sequence's (k - 1, channels)
 * last conv inputs, oldest first; state its (hv, dk, dv) matrices (key dim rows); both are
 * read and left as they stand after token n - 1 (this head's part only). Output row t of
 * `out` (ldo floats apart): this head group's value heads, dv each, at h * dv. */
void deltanet_head(const deltanet_dims *d, const deltanet_weights *w, int g, float *in, size_t ld, int n,
                   float *conv_state, float *state, float *out, size_t ldo);

#endif
