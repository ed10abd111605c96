/* plan.h - the matmul plan: for every weight matrix of a model, the route its
 * matmul takes (int8 activations on a repacked or in-place layout, or f32 on the
 * file layout), the activation grouping its kernel asks for, and how its rows
 * split over the threads. Built once per model (model_open); the repacker lays
 * the weight arena out by it (repack.c) and the forward pass runs by it
 * (forward.c). It sits below both and below model.h: it sees tensors, the kernel
 * table and a thread count, nothing of how a forward pass is written. */
#ifndef LLMGEN_PLAN_H
#define LLMGEN_PLAN_H

#include "arch.h"
#include "kernels/kernels.h"
#include "base/tensor.h"

/* How one matrix is multiplied. */
typedef enum {
    ROUTE_F32,            /* f32 activations on the file layout (exact mode; types without an int8 kernel) */
    ROUTE_PACKED,         /* int8 activations on a copy repacked at load (kernels.h "Repacked weights") */
    ROUTE_IN_PLACE,       /* int8 activations on the file layout (kernels/dequant.h, MLX 8-bit) */
    ROUTE_AFFINE_PACKED,  /* MLX 4-bit repacked as Q4_1 (one f16 scale per group), in place where a
                             scale is not exactly an f16 (repack.c) */
} plan_route;

/* Widest MLX 4-bit matrix repacked as Q4_1 (the repacker builds a row of blocks on the stack). */
#define PLAN_MAX_AFFINE_COLS 16384

/* The packed type an MLX 4-bit (DT_AFFINE4) matrix takes on ROUTE_AFFINE_PACKED: DT_Q4_1
 * for group 32, DT_Q4_1G64 / DT_Q4_1G128 (one scale and bias per group, the file's
 * size); DT_COUNT for anything else. */
dtype plan_affine4_type(const tensor *w);

/* The route of matrix w in fast mode (exact mode: always ROUTE_F32) with kernel table k. */
plan_route plan_route_of(const kernels *k, const tensor *w);

/* The dtype whose int8 kernel (k->matmul_q8) the route reads, DT_COUNT for ROUTE_F32. */
dtype plan_kernel_type(plan_route r, const tensor *w);

/* A layer's matmul passes, in the order the forward pass runs them; each pass's
 * matrices share one input. */
enum { PASS_QKV, PASS_O, PASS_GATE_UP, PASS_DOWN, PLAN_LAYER_PASSES };

typedef struct {
    const tensor *w[4];  /* q, k, v / o / gate, up / down / lm_head; a Gated DeltaNet layer's
                            qkv, z, b, a (arch.h) */
    int n;
    int side_by_side;    /* 1: each thread takes the same rows of every matrix (gate and up, so
                            that SwiGLU and the down projection's quantization stay in-thread);
                            0: the rows end to end (q, k, v) */
    int rows;            /* what the split covers: the rows of all (end to end) or of each (side by side) */
    int align;           /* granularity of the split in rows */
    int int8;            /* some matrix takes int8 activations: the input is quantized once for all */
    int act_group;       /* blocks of 32 per activation scale of that input (kernels.act_group), >= 1 */
    double bytes;        /* the weights the pass reads (file layout), per token */
    int nth;             /* threads a one-token step runs it on (plan_threads); the arena's parts */
} plan_pass;

/* The least work worth a thread of its own, in bytes read (weights, or keys and values)
 * times the tokens that read them: a pass spread thinner spends more on the
 * synchronization at its end (a few microseconds on many cores) than the thread saves
 * (64 KiB streams from L3 in ~3 us on one core). Measure with `make bench-threads`. */
#define PLAN_SLICE_BYTES 65536.0

typedef struct {
    int exact;           /* every route ROUTE_F32 */
    int n_threads;       /* the pool's threads: the most a pass runs on */
    int split_all;       /* every pass on all n_threads, whatever its size (tests of the split) */
    int n_layers;
    plan_pass *layers;   /* (n_layers, PLAN_LAYER_PASSES) */
    plan_pass lm_head;
} plan;

/* The plan of a model's layers (n_layers of them) and lm_head for kernel table k and
 * n_threads threads; exact: every route f32. Routes are those plan_route_of predicts
 * before any repacking; plan_settle takes the tensors' final state after it. -1 when
 * memory runs out. */
int plan_build(plan *p, const layer_weights *layers, int n_layers, const tensor *lm_head, int head_dim,
               const kernels *k, int n_threads, int exact, int split_all);

/* The threads `work` (bytes times tokens, PLAN_SLICE_BYTES) pays for: 1 .. n_threads. */
int plan_threads(const plan *p, double work);

/* The threads pass pp runs on for nt tokens, as its work pays for: pp->nth for one token
 * (the arena's parts), as many or more for more tokens. */
int plan_pass_threads(const plan *p, const plan_pass *pp, int nt);
void plan_free(plan *p);

/* After repacking: each pass's int8 and act_group as the tensors now are (an MLX 4-bit
 * matrix whose scales f16 cannot hold stays in place, or on f32 without that kernel). */
void plan_settle(plan *p, const kernels *k);

static inline const plan_pass *plan_layer(const plan *p, int l, int pass) {
    return &p->layers[(size_t)l * PLAN_LAYER_PASSES + pass];
}

/* The int8 weights to hand matmul_q8 for w (its packed copy, or the MLX view the
 * in-place kernels read), NULL on the f32 route. */
const void *plan_q8_weights(const tensor *w);

/* Thread `part`'s static share [*r0, *r1) of a pass's rows, of nth parts (pool_split). */
void plan_pass_share(const plan_pass *pp, int part, int nth, int *r0, int *r1);

/* The rows of each matrix that thread `part` starts on in a decode step (its own
 * share of each pass over the pass's nth threads, none where part >= nth, before it
 * helps with the others'), in the order the forward
 * pass reads them: emit(ctx, w, row0, row1) for each non-empty range. The repacker
 * lays the arena out part after part in this order, so each thread streams one
 * contiguous run of memory per token. */
typedef void (*plan_rows_fn)(void *ctx, const tensor *w, int row0, int row1);
void plan_thread_rows(const plan *p, int part, plan_rows_fn emit, void *ctx);

#endif
