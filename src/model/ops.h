/* ops.h - the small per-token stages of the forward pass (everything that is
 * not a matmul), separated so unit tests can check them against hand-computed
 * values. All f32, all written to match transformers' Llama modules. */
#ifndef LLMGEN_OPS_H
#define LLMGEN_OPS_H

#include "kernels/kernels.h"

/* out[i] = w[i] * (x[i] / sqrt(mean(x^2) + eps))   (LlamaRMSNorm); w NULL: no weight */
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

/* Causal attention of nt query rows of heads that share one kv head, batched:
 * row i belongs to token i / rpt (rpt = query rows per token, e.g. the heads of
 * a GQA group) and attends positions 0 .. len0 - 1 + i / rpt. The cache holds
 * kvt values (DT_F32, or DT_BF16 in kernels.h's pairs) in the layout of kernels.h's att_scores /
 * att_values: keys transposed in blocks of kb positions (kt holds whole
 * blocks), values in rows vstride elements apart. ring = 0: position p in slot p;
 * ring > 0 (a multiple of kb, only with a window): a ring buffer of `ring`
 * slots, position p in slot p % ring, which must hold every position read
 * (len0 + (nt - 1) / rpt - the first row's window start, block-aligned down,
 * <= ring). Row i of q at q + i * ldq, of out at out + i * ldo. scores is
 * scratch of (nt, lds) floats, lds >= len0 + (nt - 1) / rpt (or that read span
 * with a ring); wrap: scratch of (nt, hd) floats for a ring's read that wraps
 * (NULL when ring is 0). fast = 0: softmax with libm's expf (exact mode); 1: the
 * kernels' softmax_fast. Keys and values are read once for all nt rows;
 * masked positions get probability exactly 0, which adds exactly nothing, so
 * a row's output does not depend on nt or on the rows sharing its call, and
 * (fast = 0) not on the ISA either. win > 0: a sliding window, row i attends only
 * its last win positions (transformers' kv_idx > q_idx - sliding_window); whole key
 * blocks before the first row's window are not read. A row whose window spans a
 * ring's wrap (slot ring - 1 to slot 0) sums its values in two parts, before and
 * after the wrap, then adds them: other bits than one sum over an unwrapped cache,
 * but fixed by the row's own positions and ring alone. */
void ops_attend_block(const kernels *k, int fast, float *out, int ldo, const float *q, int ldq, int nt, int rpt,
                      dtype kvt, const void *kt, int kb, const void *vc, size_t vstride, int ring, int len0, int win,
                      int hd, float scale, float *scores, int lds, float *wrap);

/* ops_attend_block with attention sinks: sinks (NULL: none) holds one logit per query row of a token
 * (rpt of them; row i takes sinks[i % rpt]) that joins each row's softmax as one more score without a
 * value: max and sum include it (transformers' gpt-oss eager attention, the sink last). */
void ops_attend_block_sinks(const kernels *k, int fast, float *out, int ldo, const float *q, int ldq, int nt, int rpt,
                            dtype kvt, const void *kt, int kb, const void *vc, size_t vstride, int ring, int len0,
                            int win, int hd, float scale, float *scores, int lds, float *wrap, const float *sinks);

/* gpt-oss's clamped SwiGLU: g = min(gate, limit), u = clamp(up, -limit, limit),
 * gate[i] = (u + 1) * (g * sigmoid(g * alpha)), in transformers' order of f32 operations. */
void ops_swiglu_clamp(float *gate, const float *up, int n, float alpha, float limit);

/* gate[i] = gelu_tanh(gate[i]) * up[i]  (Gemma's MLP; PyTorch's formula, libm's tanhf) */
void ops_gelu_tanh_mul(float *gate, const float *up, int n);

#endif
