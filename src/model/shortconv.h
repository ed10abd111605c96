/* shortconv.h - LFM2's gated short convolution (transformers' Lfm2ShortConv) after its input
 * projection, for one sequence and a range of channels: u = B * x, a causal depthwise conv of u
 * over the last k inputs with no activation and no bias, y = C * conv(u). One per-token algorithm
 * for every pass: a token's outputs read only its own inputs and the k - 1 inputs before it (the
 * state, or the tokens before it in the pass), in the same order of operations, so they are the
 * same bits alone (a decode step) or among others (a prefill chunk, a batch, a draft pass). */
#ifndef LLMGEN_SHORTCONV_H
#define LLMGEN_SHORTCONV_H

#include <stddef.h>

/* Tokens t = 0 .. n-1 of one sequence, channels [c0, c1) of dim. Row t of `in` (ld floats apart)
 * holds token t's in_proj output: B (dim), C (dim), x (dim). taps is (dim, k), channel after
 * channel; state the sequence's (k - 1, dim) last inputs u, oldest first, read and left as they
 * stand after token n - 1 (these channels only). Row t of `out` (ldo floats apart) gets y. */
void shortconv_rows(int k, int dim, const float *taps, const float *in, size_t ld, int n, float *state, float *out,
                    size_t ldo, int c0, int c1);

#endif
