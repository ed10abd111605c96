/* ops.h - the small per-token stages of the forward pass (everything that is
 * not a matmul), separated so unit tests can check them against hand-computed
 * values. All f32, all written to match transformers' Llama modules. */
#ifndef LLMGEN_OPS_H
#define LLMGEN_OPS_H

#include "kernels/kernels.h"

/* out[i] = w[i] * (x[i] / sqrt(mean(x^2) + eps))   (LlamaRMSNorm) */
void ops_rmsnorm(float *out, const float *x, const float *w, int n, float eps);

/* Rotate one head vector v (hd values) for position pos. interleaved = 0: pairs
 * (i, i + hd/2) as transformers' rotate_half; 1: pairs (2i, 2i + 1) as GGUF's
 * permuted Q/K rows. inv_freq has hd/2 entries. */
void ops_rope(float *v, int hd, const float *inv_freq, int pos, int interleaved);

/* gate[i] = silu(gate[i]) * up[i] */
void ops_swiglu(float *gate, const float *up, int n);

/* One query head over len cached positions: out = softmax(q.k_p * scale) . v_p.
 * k and v point at position 0 of this head, consecutive positions `stride`
 * floats apart; scores is scratch of len floats. */
void ops_attend(const kernels *k, float *out, const float *q, const float *kc, const float *vc,
                int len, int hd, size_t stride, float scale, float *scores);

#endif
