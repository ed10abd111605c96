/* sampler.h - internal view of the sampler (the public API is in llmgen.h). */
#ifndef LLMGEN_SAMPLER_H
#define LLMGEN_SAMPLER_H
#include "llmgen.h"

/* Index of the largest logit; the first one on ties (as torch.argmax). */
int32_t argmax_f32(const float *x, int n);

/* The distribution llmgen_sample draws from, exposed for the reference test:
 * probs (vocab doubles) gets the probability of every id after repetition
 * penalty, temperature, top-k, top-p and min-p (0 for ids filtered out); with
 * temperature 0 it is one-hot at the greedy choice. Returns how many ids keep a
 * non-zero probability. Does not advance the PRNG. */
int sampler_probs(llmgen_sampler *s, const float *logits, const int32_t *history, int n_history,
                  double *probs);
/* llmgen_sample with the presence and frequency penalties counting only the last n_generated ids
 * of history (the ones generated; the repetition penalty sees all of it). */
int32_t sampler_pick(llmgen_sampler *s, const float *logits, const int32_t *history, int n_history, int n_generated);

#endif
