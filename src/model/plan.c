/* plan.c - the matmul plan (plan.h). */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "affine.h"
#include "quant/quant.h"
#include "base/threads.h"

/* Row split granularity of the matmuls: whole 16-row panels; gate and up when the
 * down projection takes int8: whole 128-column quads of its input, which the
 * gate/up threads quantize piece by piece (forward.c, post_swiglu). */
#define MM_ALIGN 16
#define MM_ALIGN_SWIGLU_Q 128

dtype plan_affine4_type(const tensor *w) {
    int g = w->type == DT_AFFINE4 ? ((const affine_weights *)w->data)->group : 0;
    return g == 32 ? DT_Q4_1 : g == 64 ? DT_Q4_1G64 : g == 128 ? DT_Q4_1G128 : DT_COUNT;
}

plan_route plan_route_of(const kernels *k, const tensor *w) {
    const dtype_traits *di = dtype_info(w->type);
    if (w->type == DT_AFFINE4) {
        dtype pt = plan_affine4_type(w);
        if (pt != DT_COUNT && k->matmul_q8[pt] && w->shape[1] <= PLAN_MAX_AFFINE_COLS) return ROUTE_AFFINE_PACKED;
        return k->matmul_q8[DT_AFFINE4] ? ROUTE_IN_PLACE : ROUTE_F32;
    }
    if (di->packs_as != DT_COUNT && k->matmul_q8[di->packs_as]) return ROUTE_PACKED;
    if ((di->dequant32 || w->type == DT_AFFINE8) && k->matmul_q8[w->type]) return ROUTE_IN_PLACE;
    return ROUTE_F32;
}

dtype plan_kernel_type(plan_route r, const tensor *w) {
    switch (r) {
    case ROUTE_PACKED: return dtype_info(w->type)->packs_as;
    case ROUTE_IN_PLACE: return w->type;
    case ROUTE_AFFINE_PACKED: return plan_affine4_type(w);
    default: return DT_COUNT;
    }
}

const void *plan_q8_weights(const tensor *w) { return w->packed ? w->packed : affine_q8_weights(w); }

/* The blocks per activation scale that kernel type kt asks for (kernels.act_group) where
 * w's columns are whole groups; otherwise 1 (per block, which every kernel takes). */
static int act_group_of(const kernels *k, dtype kt, const tensor *w) {
    int g = kt != DT_COUNT && k->matmul_q8[kt] && k->act_group[kt] ? k->act_group[kt] : 1;
    return w->shape[1] % (32 * g) == 0 ? g : 1;
}

/* The least common multiple of 16 and n > 0. */
static int lcm16(int n) {
    int a = 16, b = n;
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return 16 / a * n;
}

/* A pass's rows, int8 flag and act_group (the largest any int8 matrix asks for), with
 * kt[i] the kernel type of matrix i (DT_COUNT: f32 route); its bytes unless settled (as
 * the file has them: the threads of the arena's layout). */
static void pass_shape(plan_pass *pp, const kernels *k, const dtype *kt, int settled) {
    double bytes = 0;
    pp->rows = 0;
    pp->int8 = 0;
    pp->act_group = 1;
    for (int i = 0; i < pp->n; i++) {
        int r = (int)pp->w[i]->shape[0];
        pp->rows = pp->side_by_side ? r : pp->rows + r;
        bytes += (double)pp->w[i]->nbytes;
        if (kt[i] == DT_COUNT) continue;
        pp->int8 = 1;
        int g = act_group_of(k, kt[i], pp->w[i]);
        if (g > pp->act_group) pp->act_group = g;
    }
    if (!settled) pp->bytes = bytes;
}

/* gate and up split in whole pieces of the down projection's int8 input (post_swiglu
 * quantizes them in-thread): whole quads, and whole activation groups. */
static int gate_up_align(const plan_pass *down) {
    if (!down->int8) return MM_ALIGN;
    return 32 * down->act_group > MM_ALIGN_SWIGLU_Q ? 32 * down->act_group : MM_ALIGN_SWIGLU_Q;
}

/* The type whose int8 kernel runs w, DT_COUNT on the f32 route: as the route will
 * make it (before repacking), or as it is (settled: after repacking). */
static dtype kernel_type(const kernels *k, const tensor *w, int exact, int settled) {
    if (exact) return DT_COUNT;
    if (settled) return plan_q8_weights(w) ? w->type : DT_COUNT;
    return plan_kernel_type(plan_route_of(k, w), w);
}

int plan_threads(const plan *p, double work) {
    if (p->split_all) return p->n_threads;
    double n = work / PLAN_SLICE_BYTES;
    return n >= p->n_threads ? p->n_threads : n <= 1 ? 1 : (int)n + (n > (int)n);
}

/* No more than the pass's pieces of `align` rows. */
int plan_pass_threads(const plan *p, const plan_pass *pp, int nt) {
    int n = plan_threads(p, pp->bytes * nt), units = (pp->rows + pp->align - 1) / pp->align;
    return n < units ? n : units > 1 ? units : 1;
}

/* Every pass's shape, from each matrix's kernel type, and its threads. */
static void plan_shape(plan *p, const kernels *k, int settled) {
    for (int l = 0; l < p->n_layers; l++) {
        plan_pass *ps = &p->layers[(size_t)l * PLAN_LAYER_PASSES];
        for (int i = 0; i < PLAN_LAYER_PASSES; i++) {
            dtype kt[4];
            for (int j = 0; j < ps[i].n; j++) kt[j] = kernel_type(k, ps[i].w[j], p->exact, settled);
            pass_shape(&ps[i], k, kt, settled);
        }
        ps[PASS_GATE_UP].align = gate_up_align(&ps[PASS_DOWN]);
        for (int i = 0; i < PLAN_LAYER_PASSES && !settled; i++) ps[i].nth = plan_pass_threads(p, &ps[i], 1);
    }
    dtype kt = kernel_type(k, p->lm_head.w[0], p->exact, settled);
    pass_shape(&p->lm_head, k, &kt, settled);
    if (!settled) p->lm_head.nth = plan_pass_threads(p, &p->lm_head, 1);
}

int plan_build(plan *p, const layer_weights *layers, int n_layers, const tensor *lm_head, int head_dim,
               const kernels *k, int n_threads, int exact, int split_all) {
    memset(p, 0, sizeof *p);
    p->exact = exact;
    p->split_all = split_all;
    p->n_threads = n_threads;
    p->n_layers = n_layers;
    p->layers = calloc((size_t)n_layers * PLAN_LAYER_PASSES, sizeof *p->layers);
    if (!p->layers) return -1;
    for (int l = 0; l < n_layers; l++) {
        const layer_weights *L = &layers[l];
        plan_pass *ps = &p->layers[(size_t)l * PLAN_LAYER_PASSES];
        /* q, k and v split in whole heads (the rope and cache write after each piece) */
        /* (a layer reading another's keys and values has only q; attention_k_eq_v, q and k) */
        ps[PASS_QKV] = (plan_pass){.w = {L->wq, L->wk, L->wv}, .n = L->wv ? 3 : L->wk ? 2 : 1,
                                   .align = lcm16(head_dim)};
        if (L->lin_b) /* a Gated DeltaNet layer: in_proj_qkv, in_proj_z, b, a (arch.h) */
            ps[PASS_QKV] = (plan_pass){.w = {L->wq, L->wk, L->lin_b, L->lin_a}, .n = 4, .align = MM_ALIGN};
        else if (L->lin_conv) /* a short conv: its in_proj (B, C and x) */
            ps[PASS_QKV] = (plan_pass){.w = {L->wq}, .n = 1, .align = MM_ALIGN};
        ps[PASS_O] = (plan_pass){.w = {L->wo}, .n = 1, .align = MM_ALIGN};
        /* an expert layer's experts run in passes of their own (forward.c, stage_experts) */
        ps[PASS_GATE_UP] = (plan_pass){.w = {L->w_gate, L->w_up}, .n = L->moe ? 0 : 2, .side_by_side = 1};
        ps[PASS_DOWN] = (plan_pass){.w = {L->w_down}, .n = L->moe ? 0 : 1, .align = MM_ALIGN};
    }
    p->lm_head = (plan_pass){.w = {lm_head}, .n = 1, .align = MM_ALIGN};
    plan_shape(p, k, 0);
    return 0;
}

void plan_settle(plan *p, const kernels *k) { plan_shape(p, k, 1); }

void plan_free(plan *p) {
    free(p->layers);
    memset(p, 0, sizeof *p);
}

void plan_pass_share(const plan_pass *pp, int part, int nth, int *r0, int *r1) {
    pool_split(pp->rows, pp->align, part, nth, r0, r1);
}

/* Thread part's share of pass pp, matrix by matrix (end to end, or the same rows of each). */
static void emit_share(const plan_pass *pp, int part, plan_rows_fn emit, void *ctx) {
    int b, e;
    if (part >= pp->nth) return;
    plan_pass_share(pp, part, pp->nth, &b, &e);
    for (int i = 0, base = 0; i < pp->n; i++) {
        int rows = (int)pp->w[i]->shape[0];
        int r0 = pp->side_by_side ? b : (b - base > 0 ? b - base : 0);
        int r1 = pp->side_by_side ? e : (e - base < rows ? e - base : rows);
        if (r0 < r1) emit(ctx, pp->w[i], r0, r1);
        if (!pp->side_by_side) base += rows;
    }
}

void plan_thread_rows(const plan *p, int part, plan_rows_fn emit, void *ctx) {
    for (int l = 0; l < p->n_layers; l++)
        for (int i = 0; i < PLAN_LAYER_PASSES; i++) emit_share(plan_layer(p, l, i), part, emit, ctx);
    emit_share(&p->lm_head, part, emit, ctx);
}
