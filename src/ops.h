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

/* cs (hd entries) = cos then sin of pos * inv_freq[i], i < hd/2: the angles of
 * one position, computed once and shared by every head of every layer. */
void ops_rope_angles(float *cs, int hd, const float *inv_freq, int pos);

/* ops_rope with the angles from ops_rope_angles: bit-identical to ops_rope. */
void ops_rope_apply(float *v, int hd, const float *cs, int interleaved);

/* gate[i] = silu(gate[i]) * up[i] */
void ops_swiglu(float *gate, const float *up, int n);

/* One query head over len cached positions: out = softmax(q.k_p * scale) . v_p.
 * k and v point at position 0 of this head, consecutive positions `stride`
 * floats apart; scores is scratch of len floats. */
void ops_attend(const kernels *k, float *out, const float *q, const float *kc, const float *vc,
                int len, int hd, size_t stride, float scale, float *scores);

/* Causal attention of nt consecutive tokens of one query head, batched:
 * token t (0 <= t < nt) attends positions 0 .. len0 - 1 + t. Keys: position p at
 * kc + p * kstride (hd floats). Values transposed: dimension d of position p at
 * vt[d * vt_stride + p]. q of token t at q + t * ldq, out at out + t * ldo.
 * scores is scratch of (nt, lds) floats, lds >= len0 + nt - 1. Both products go
 * through the kernels' f32 matmul (keys and values read once for the nt tokens);
 * masked positions get probability exactly 0, which adds exactly nothing, so a
 * token's output does not depend on nt or on which tokens share its call. */
void ops_attend_block(const kernels *k, float *out, int ldo, const float *q, int ldq, int nt, const float *kc,
                      size_t kstride, const float *vt, size_t vt_stride, int len0, int hd, float scale,
                      float *scores, int lds);

#endif
