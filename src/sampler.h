/* sampler.h - internal view of the sampler (the API is in llmgen.h). */
#ifndef LLMGEN_SAMPLER_H
#define LLMGEN_SAMPLER_H
#include "llmgen.h"

/* Index of the largest logit; the first one on ties (as torch.argmax). */
int32_t argmax_f32(const float *x, int n);

#endif
