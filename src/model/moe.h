/* moe.h - the router of an expert layer (arch.h's moe_info): which k experts a token
 * takes and with what weights, as transformers 5.23 computes it in f32. */
#ifndef LLMGEN_MOE_H
#define LLMGEN_MOE_H

#include "arch.h"

/* The k largest of v[0..n) as torch.topk(v, k, sorted=True) returns them on the CPU:
 * descending, NaN above everything, and ties in the order ATen's CPU kernel leaves them
 * (not lowest index first): std::partial_sort when k * 64 <= n, else std::nth_element at
 * k - 1 then std::sort of the first k - 1, the comparator looking at values alone; the
 * libstdc++ algorithms are followed step by step (moe.c). idx gets k indices; scratch
 * holds n (value, index) pairs. 1 <= k <= n. */
typedef struct {
    float v;
    int i;
} moe_pair;
void moe_topk(const float *v, int n, int k, int *idx, moe_pair *scratch);

/* One token's route from its router logits z (n): ids (k) in slot order and their weights
 * w (k). MOE_SOFTMAX_TOPK: p = softmax(z), the top k of p, divided by their sum when renorm;
 * MOE_TOPK_SOFTMAX: the top k of z, softmax over those k. scratch: n floats, n pairs. */
void moe_route(moe_router router, int renorm, const float *z, int n, int k, int *ids, float *w, float *pscratch,
               moe_pair *scratch);

/* MOE_SIGMOID_BIAS's route (transformers' Lfm2MoeTopKRouter): p = sigmoid(z); ids the top k of
 * p + bias (bias NULL: of p); w their p, divided by (their sum + 1e-6) when renorm, times scale.
 * scratch: n floats, n pairs. */
void moe_route_sigmoid(int renorm, float scale, const float *bias, const float *z, int n, int k, int *ids, float *w,
                       float *pscratch, moe_pair *scratch);

#endif
