/* forward.c - the forward pass of every family in arch.h, stage by stage in the
 * order data flows (optional stages in brackets; the config's flags say which):
 *
 *   embed [* sqrt(dim)] -> for each layer:
 *              rmsnorm -> q,k,v matmuls [+ bias] -> [q/k head rmsnorm] -> rope (maybe
 *              partial, per-layer base, or none) -> causal GQA attention over the KV
 *              cache [in a sliding window] [with sink logits] -> o matmul [+ bias] ->
 *              [rmsnorm] -> residual ->
 *              rmsnorm -> gate,up matmuls -> silu or gelu-tanh gate -> down matmul ->
 *              [rmsnorm] -> residual (each residual add [times a multiplier])
 *         -> final rmsnorm (last token) -> lm_head -> [/ scale] [soft-cap] -> logits
 *
 * f32 activations throughout; weights are read in their stored dtype by the
 * kernels. In fast mode (the matmul plan's int8 routes, plan.h) each matmul input
 * is quantized to int8 once, for all the matmuls sharing it (Q/K/V, gate/up).
 * A forward pass of one token is ~5 pool_runs per layer, so the elementwise
 * stages ride on the matmul threads instead of running on one thread between
 * them (the schedule, below). Matmuls are split over threads by output rows (the
 * plan's split),
 * attention by (token block, kv head); each output is computed by one thread,
 * in an order that does not depend on the split, so results do not depend on
 * the thread count. */
#include "forward.h"
#include "loader.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "affine.h"
#include "deltanet.h"
#include "moe.h"
#include "ops.h"
#include "shortconv.h"
#include "base/util.h"

/* Fast mode: some matrix takes the int8-activation kernels. */
static int weights_packed(const model *m) {
    if (m->plan.lm_head.int8) return 1;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        for (int i = 0; i < PLAN_LAYER_PASSES; i++)
            if (plan_layer(&m->plan, l, i)->int8) return 1;
        const expert_block *b = m->layers[l].moe;
        if (b && (plan_q8_weights(b->gate[0]) || plan_q8_weights(b->down[0]))) return 1;
    }
    return 0;
}

static int max3(int a, int b, int c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

/* Rows of q_proj's output per token: twice the query heads with ARCH_ATTN_GATE (query, gate). */
static int q_rows(const model_config *c) { return (c->flags & ARCH_ATTN_GATE ? 2 : 1) * c->n_heads * c->head_dim; }

/* Buffers of a q8_act for up to nt tokens of up to cols columns; 1 on success. */
static int q8_act_alloc(q8_act *a, int nt, int cols) {
    size_t quads = (size_t)q8_quads(cols);
    a->q = aligned_alloc(64, (size_t)nt * quads * 128);
    a->d = malloc((size_t)nt * quads * 4 * sizeof(float));
    a->s = malloc((size_t)nt * quads * 4 * sizeof(float));
    return a->q && a->d && a->s;
}

int fwd_state_init(fwd_state *s, const model *m, int ctx, char *err) {
    /* 128 tokens per call: the int8 panels already reuse each unpacked weight panel
     * 128 times (pp512 within noise of 256, measured), and the (chunk, hidden_dim)
     * buffers stay small: 15 MB less peak memory than 256 for the 1B config */
    return fwd_state_init_batch(s, m, ctx, ctx < FWD_CHUNK ? ctx : FWD_CHUNK, 0, err);
}

/* An expert layer's scratch: the router's output, each (token, slot)'s expert and weight,
 * and the tokens' rows grouped by expert (all tokens of one expert adjacent, in token
 * order), through the experts' gate / up and down; the shared expert's rows beside. */
typedef struct {
    const tensor *gate, *up, *down;
    const float *gb, *ub, *db; /* the expert's biases (width, width, dim; ARCH_EXPERT_BIAS), or NULL */
    const float *x;   /* (n, dim) the group's input rows */
    int n, width;     /* rows; the expert's width */
    float *h, *h2;    /* (n, width) gate then act(gate) * up; up */
    float *y;         /* (n, dim) */
    q8_act qx, qh;    /* fast mode: x and h quantized (views of fwd_moe's buffers) */
} moe_group;

typedef struct fwd_moe {
    float *z;         /* (chunk, n_experts + 1) router logits, then the shared expert's gate logit */
    int *ids;         /* (chunk, k) each slot's expert, slot order */
    float *w;         /* (chunk, k) its weight */
    int *row;         /* (chunk, k) its row in the grouped buffers */
    float *x, *h, *h2, *y; /* (chunk * k, dim / expert_dim / expert_dim / dim) grouped rows */
    float *sh, *sh2, *shy; /* (chunk, shared_dim / shared_dim / dim) the shared expert's */
    float *p;         /* (n_experts) routing scratch */
    moe_pair *pairs;  /* (n_experts) */
    int *count;       /* (n_experts) */
    moe_group *groups;/* (n_experts + 1) */
    q8_act qx, qh;    /* fast mode: x and h of every grouped row quantized to int8 */
    q8_act qsx, qsh;  /* the shared expert's */
} fwd_moe;

static void fwd_moe_free(fwd_moe *x) {
    if (!x) return;
    free(x->z), free(x->ids), free(x->w), free(x->row), free(x->x), free(x->h), free(x->h2), free(x->y);
    free(x->sh), free(x->sh2), free(x->shy), free(x->p), free(x->pairs), free(x->count), free(x->groups);
    q8_act *qs[4] = {&x->qx, &x->qh, &x->qsx, &x->qsh};
    for (int i = 0; i < 4; i++) free(qs[i]->q), free(qs[i]->d), free(qs[i]->s);
    free(x);
}

static int q8_act_alloc(q8_act *a, int nt, int cols);

static fwd_moe *fwd_moe_new(const model_config *c, int chunk, int fast) {
    fwd_moe *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    size_t E = (size_t)c->n_experts, k = (size_t)c->n_experts_used, ch = (size_t)chunk, rows = ch * k;
    size_t sh = c->shared_dim ? (size_t)c->shared_dim : 1;
    x->z = malloc(ch * (E + 1) * sizeof(float));
    x->ids = malloc(rows * sizeof(int));
    x->w = malloc(rows * sizeof(float));
    x->row = malloc(rows * sizeof(int));
    x->x = malloc(rows * c->dim * sizeof(float));
    x->h = malloc(rows * c->expert_dim * sizeof(float));
    x->h2 = malloc(rows * c->expert_dim * sizeof(float));
    x->y = malloc(rows * c->dim * sizeof(float));
    x->sh = malloc(ch * sh * sizeof(float));
    x->sh2 = malloc(ch * sh * sizeof(float));
    x->shy = malloc(ch * c->dim * sizeof(float));
    x->p = malloc(E * sizeof(float));
    x->pairs = malloc(E * sizeof(moe_pair));
    x->count = malloc(E * sizeof(int));
    x->groups = malloc((E + 1) * sizeof(moe_group));
    if (!x->z || !x->ids || !x->w || !x->row || !x->x || !x->h || !x->h2 || !x->y || !x->sh || !x->sh2 || !x->shy ||
        !x->p || !x->pairs || !x->count || !x->groups ||
        (fast && !(q8_act_alloc(&x->qx, (int)rows, c->dim) && q8_act_alloc(&x->qh, (int)rows, c->expert_dim) &&
                   q8_act_alloc(&x->qsx, chunk, c->dim) && q8_act_alloc(&x->qsh, chunk, (int)sh)))) {
        fwd_moe_free(x);
        return NULL;
    }
    return x;
}

int fwd_state_init_batch(fwd_state *s, const model *m, int ctx, int chunk, int max_seqs, char *err) {
    const model_config *c = &m->cfg;
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->score_ld = (ctx + 15) / 16 * 16 + 16;
    s->chunk = chunk;
    s->max_seqs = max_seqs;
    size_t qd = (size_t)c->n_heads * c->head_dim, kvd = (size_t)c->n_kv_heads * c->head_dim, ch = (size_t)s->chunk;
    int group = c->n_heads / c->n_kv_heads;
    for (int l = 0; c->per_layer && l < c->n_layers; l++) { /* per-layer shapes: the largest of each */
        const model_config *lc = model_layer_cfg(m, l);
        if ((size_t)lc->n_heads * lc->head_dim > qd) qd = (size_t)lc->n_heads * lc->head_dim;
        if ((size_t)lc->n_kv_heads * lc->head_dim > kvd) kvd = (size_t)lc->n_kv_heads * lc->head_dim;
        if (lc->n_heads / lc->n_kv_heads > group) group = lc->n_heads / lc->n_kv_heads;
    }
    s->fast = weights_packed(m);
    int kv_ok = kv_cache_init(&s->kv, c, ctx, s->fast ? DT_BF16 : DT_F32) == 0;
    s->x = malloc(ch * c->dim * sizeof(float));
    s->xb = malloc(ch * c->dim * sizeof(float));
    /* q, k_new, v_new and att_out are dead once wo has read att_out, and hb2 is
     * written only after that (gate/up): one block serves both phases */
    size_t att_phase = 2 * qd + 2 * kvd, ffn_phase = (size_t)c->hidden_dim;
    s->shared = malloc(ch * (att_phase > ffn_phase ? att_phase : ffn_phase) * sizeof(float));
    s->q = s->shared;
    s->att_out = s->q + ch * qd;
    s->k_new = s->att_out + ch * qd;
    s->v_new = s->k_new + ch * kvd;
    s->hb2 = s->shared;
    s->rope_cs = malloc(2 * ch * c->rot_dim * sizeof(float));
    s->hb = malloc(ch * c->hidden_dim * sizeof(float));
    size_t att = (size_t)pool_size(m->pool) * ATT_TOKENS * group;
    s->scores = malloc(att * s->score_ld * sizeof(float));
    s->att_rows = malloc(att * 3 * c->head_dim * sizeof(float));
    int gated = (c->flags & ARCH_ATTN_GATE) != 0, vd = config_lin_out(c);
    if (gated) s->q_gate = malloc(ch * 2 * qd * sizeof(float));
    if (c->n_linear) {
        s->lin_ld = config_lin_in(c);
        s->lin_in = malloc(ch * s->lin_ld * sizeof(float));
        s->lin_out = malloc(ch * vd * sizeof(float));
    }
    if (c->flags & ARCH_PER_LAYER_INPUT) {
        s->pli = malloc(ch * c->n_layers * c->ple_dim * sizeof(float));
        s->pl_h = malloc((ch > (size_t)c->n_layers ? ch : (size_t)c->n_layers) * c->ple_dim * sizeof(float));
    }
    int lin_ok = (!gated || s->q_gate) && (!c->n_linear || (s->lin_in && s->lin_out)) &&
                 (!(c->flags & ARCH_PER_LAYER_INPUT) || (s->pli && s->pl_h));
    s->logits = malloc((size_t)c->vocab_size * sizeof(float));
    s->seq_logits = max_seqs ? malloc((size_t)max_seqs * c->vocab_size * sizeof(float)) : NULL;
    s->tok_seg = malloc((size_t)s->chunk * sizeof(int));
    s->tok_pos = malloc((size_t)s->chunk * sizeof(int));
    s->kv_ready = malloc((size_t)c->n_kv_heads * sizeof *s->kv_ready);
    int xq_ok = !s->fast || (q8_act_alloc(&s->xq, s->chunk, max3(c->dim, (int)qd > vd ? (int)qd : vd, c->hidden_dim)) &&
                                       q8_act_alloc(&s->xq_down, s->chunk, c->hidden_dim));
    if (m->experts && !(s->moe = fwd_moe_new(c, s->chunk, s->fast))) xq_ok = 0;
    if (!kv_ok || !lin_ok || !s->x || !s->xb || !s->shared || !s->rope_cs || !s->hb || !s->scores ||
        !s->att_rows || !s->logits || !xq_ok || (max_seqs && !s->seq_logits) || !s->tok_seg || !s->tok_pos ||
        !s->kv_ready) {
        fwd_state_free(s);
        return errf(err, "out of memory for a context of %d tokens", ctx);
    }
    return 0;
}

void fwd_state_free(fwd_state *s) {
    kv_cache_free(&s->kv);
    free(s->x);
    free(s->xb);
    free(s->shared);
    free(s->q_gate);
    free(s->lin_in);
    free(s->lin_out);
    free(s->pli);
    free(s->pl_h);
    free(s->rope_cs);
    free(s->hb);
    free(s->scores);
    free(s->att_rows);
    free(s->logits);
    free(s->seq_logits);
    free(s->tok_seg);
    free(s->tok_pos);
    free(s->kv_ready);
    free(s->xq.q);
    free(s->xq.d);
    free(s->xq.s);
    free(s->xq_down.q);
    free(s->xq_down.d);
    free(s->xq_down.s);
    fwd_moe_free(s->moe);
    memset(s, 0, sizeof *s);
}

/* ---- matmuls over threads ---------------------------------------------------------- */

/* One output of a group of matmuls that share their input x: y (nt, ldy) = x @ W^T. */
typedef struct {
    const tensor *w;  /* (rows, cols) */
    float *y;
    int ldy;
} mm_out;

typedef struct matmul_job matmul_job;
typedef struct norm_job norm_job;
static void rmsnorm_task(void *ctx, int ith, int nth);
typedef struct attn_job attn_job;
static void attention_prefetch_all(const attn_job *j, int ith, int nth);
static void attention_task(void *ctx, int ith, int nth);
static void qkv_rows_done(const matmul_job *j, int r0, int r1);

/* Work a thread does on the rows [r0, r1) it has just computed, before the
 * barrier: elementwise stages need no pool_run of their own this way. */
typedef void (*mm_post_fn)(const matmul_job *j, int r0, int r1);

struct matmul_job {
    const model *m;
    fwd_state *s;
    const mm_out *out;
    int n_out;
    const plan_pass *pass; /* the outputs' matrices, their split and route (plan.h) */
    const float *x;      /* (nt, ldx) f32 input */
    int ldx, nt;
    const q8_act *xq;    /* x quantized to int8 (fast mode), or NULL: every weight takes the f32 kernels */
    mm_post_fn post;     /* or NULL */
    int layer;           /* for post functions that write the cache */
    const fwd_seg *segs; /* post_qkv: the sequences whose caches the rows' tokens go to (s->tok_seg,
                            s->tok_pos say which and where) */
    int quantize_down;   /* post_swiglu also quantizes its rows into s->xq_down (nt = 1) */
    const float *rope_cs;/* post_qkv: (nt, rot_dim) angles of this layer's RoPE, or NULL (none) */
    const norm_job *then;/* or NULL: the rmsnorm that reads this pass's result, run whole by the
                            thread that completes the last rows (see FOLD_MAX_T) */
    const attn_job *kv_ahead; /* or NULL: the next layer's attention, whose new cache lines each
                                 thread requests first (attention_prefetch_all) */
    attn_job *attn;      /* or NULL: the attention that reads this (qkv) pass's rows, run by each
                            thread once the rows are all handed out (attention_in_qkv) */
    int min_threads;     /* the pass runs on at least this many (the attention's) */
    const float *bias;   /* or NULL: post_residual adds it to the output first (ARCH_O_BIAS) */
    pool_queue queue;    /* the row chunks, set up by run_matmuls */
    atomic_int rows_done;/* rows whose post has run (with `then`) */
};

/* Rows [r0, r1) of one output: repacked weights take the int8 activations,
 * the others (and exact mode) the f32 ones in the file layout. */
static void matmul_rows(const matmul_job *j, const mm_out *o, int r0, int r1) {
    const tensor *w = o->w;
    const kernels *k = j->m->kern, *ref = kernels_scalar();
    int rows = (int)w->shape[0], cols = (int)w->shape[1];
    const void *q8w = j->xq ? plan_q8_weights(w) : NULL; /* no int8 activations: an f32 pass (the router) */
    if (q8w) {
        matmul_q8_fn fn = k->matmul_q8[w->type] ? k->matmul_q8[w->type] : ref->matmul_q8[w->type];
        /* each run of rows stored apart (the weight arena) is a matrix of its own to the kernel */
        const packed_part whole = {0, q8w}, *parts = w->nparts ? w->parts : &whole;
        int np = w->nparts ? w->nparts : 1;
        for (int i = 0; i < np; i++) {
            int p0 = parts[i].row0, p1 = i + 1 < np ? parts[i + 1].row0 : rows;
            int lo = r0 > p0 ? r0 : p0, hi = r1 < p1 ? r1 : p1;
            if (lo < hi) fn(parts[i].data, p1 - p0, cols, lo - p0, hi - p0, j->xq, o->y + p0, o->ldy);
        }
    } else {
        matmul_fn fn = k->matmul[w->type] ? k->matmul[w->type] : ref->matmul[w->type];
        fn(w->data, dtype_row_bytes(w->type, cols), cols, r0, r1, j->x, j->ldx, j->nt, o->y, o->ldy);
    }
}

/* The smallest piece of a matmul a thread claims is 1 / MM_MIN_PIECE of its
 * share of the rows: smaller evens out the finish better, larger keeps the calls
 * (each restarts the weight stream and rebuilds the activation side) few. */
#define MM_MIN_PIECE 16

/* The rows of all outputs, end to end (or side by side with same_rows), in
 * pieces claimed from j->queue: one pool_run (one barrier) for Q, K and V, or
 * for gate and up. Each thread starts on its own static share, so its weights
 * stream contiguously, and takes over pieces of the other's share when done
 * first: the threads finish together even when one gets less memory bandwidth
 * for a while. */
static void matmul_task(void *ctx, int ith, int nth) {
    matmul_job *j = ctx;
    int b, e;
    if (j->kv_ahead) attention_prefetch_all(j->kv_ahead, ith, nth);
    while (pool_claim(&j->queue, ith, &b, &e)) {
        if (j->pass->side_by_side) {
            for (int i = 0; i < j->n_out; i++) matmul_rows(j, &j->out[i], b, e);
        } else {
            for (int i = 0, base = 0; i < j->n_out; base += (int)j->out[i].w->shape[0], i++) {
                int rows = (int)j->out[i].w->shape[0];
                int r0 = b - base > 0 ? b - base : 0, r1 = e - base < rows ? e - base : rows;
                if (r0 < r1) matmul_rows(j, &j->out[i], r0, r1);
            }
        }
        if (j->post) j->post(j, b, e);
        if (j->attn) qkv_rows_done(j, b, e);
        /* the release of this thread's rows and the acquire of the others': the one that
         * completes the count sees every row written */
        if (j->then && atomic_fetch_add_explicit(&j->rows_done, e - b, memory_order_acq_rel) + (e - b) == j->queue.n)
            rmsnorm_task((void *)j->then, 0, 1);
    }
    if (j->attn) attention_task(j->attn, ith, nth);
}

static quantize_act_fn quantizer(const model *m) {
    return m->kern->quantize_act ? m->kern->quantize_act : kernels_scalar()->quantize_act;
}

static void quantize_task(void *ctx, int ith, int nth) {
    const matmul_job *j = ctx;
    int t0, t1;
    pool_split(j->nt, 1, ith, nth, &t0, &t1);
    if (t0 < t1) quantizer(j->m)(j->x, j->ldx, t0, t1, j->xq);
}

static void q8_act_shape(q8_act *a, int nt, int cols, int group) {
    a->nt = nt;
    a->cols = cols;
    a->quads = q8_quads(cols);
    a->group = group;
}

/* out[i].y = x @ out[i].w^T for the outputs of j, sharing the input j->x. In
 * fast mode x is quantized to int8 once here for all of them, unless `pre`
 * already holds it. */
static void run_matmuls(matmul_job *j, const q8_act *pre) {
    const model *m = j->m;
    const plan_pass *pp = j->pass;
    int packed = pp->int8;
    if (packed && pre) {
        j->xq = pre;
    } else if (packed) {
        q8_act_shape(&j->s->xq, j->nt, (int)j->out[0].w->shape[1], pp->act_group);
        j->xq = &j->s->xq;
        if (j->nt >= 2 * pool_size(m->pool)) {
            pool_run(m->pool, quantize_task, j);
        } else {
            quantize_task(j, 0, 1);
        }
    }
    int nth = plan_pass_threads(&m->plan, pp, j->nt);
    if (j->min_threads > nth) nth = j->min_threads;
    pool_queue_init(&j->queue, pp->rows, pp->align, nth > 1 ? MM_MIN_PIECE : 1, nth);
    atomic_init(&j->rows_done, 0);
    pool_run_n(m->pool, matmul_task, j, nth);
}

/* ---- stages fused into the matmuls' threads ------------------------------------------- */

/* x += y [+ bias] on the rows just computed: the residual connection after wo and down. */
static void post_residual(const matmul_job *j, int r0, int r1) {
    int dim = j->m->cfg.dim;
    float rm = j->m->cfg.residual_mult; /* 1 but for Granite; times 1 is exact */
    float *y = j->out[0].y;
    for (int t = 0; t < j->nt; t++) {
        float *x = j->s->x + (size_t)t * dim, *yt = y + (size_t)t * dim;
        if (j->bias) /* the projection's output first (transformers' Linear), then the residual */
            for (int r = r0; r < r1; r++) yt[r] += j->bias[r];
        int r = r0;
        for (; r + 16 <= r1; r += 16) { /* through a local copy: vectorized without an aliasing check */
            float a[16];
            _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++) a[k] = x[r + k] + yt[r + k] * rm;
            _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++) x[r + k] = a[k];
        }
        for (; r < r1; r++) x[r] += yt[r] * rm;
    }
}

/* hb = silu(gate) * up on this thread's rows, and (fast mode) their int8
 * quantization for the down projection: a 128-aligned row range is whole quads
 * of the activation layout, so this thread fills its own slice of each token's
 * row of s->xq_down with the bytes one quantization of the full row would give
 * (no pass over hb of its own, and one pool_run less, in prefill too). */
static void post_swiglu(const matmul_job *j, int r0, int r1) {
    int hid = model_layer_cfg(j->m, j->layer)->hidden_dim;
    fwd_state *s = j->s;
    int gelu = j->m->cfg.act == ACT_GELU_TANH;
    swiglu_fn swiglu = s->fast ? (gelu ? j->m->kern->geglu_fast : j->m->kern->swiglu_fast)
                               : (gelu ? ops_gelu_tanh_mul : ops_swiglu);
    for (int t = 0; t < j->nt; t++) swiglu(s->hb + (size_t)t * hid + r0, s->hb2 + (size_t)t * hid + r0, r1 - r0);
    if (!j->quantize_down) return;
    for (int t = 0; t < j->nt; t++) {
        q8_act part = s->xq_down;
        size_t quad = (size_t)t * s->xq_down.quads + (size_t)(r0 / 128);
        q8_act_shape(&part, 1, r1 - r0, part.group);
        part.q += quad * 128;
        part.d += quad * 4;
        part.s += quad * 4;
        quantizer(j->m)(s->hb + (size_t)t * hid + r0, hid, 0, 1, &part);
    }
}

/* One head of q or k as it enters attention: + bias, RMSNorm over the head (the
 * norm's weight: hd values), RoPE with the angles cs (NULL: a layer without RoPE)
 * on the first rot_dim values. */
static void head_in(float *v, const float *bias, const float *norm, const float *cs, const model_config *c) {
    if (bias)
        for (int d = 0; d < c->head_dim; d++) v[d] += bias[d];
    if (norm) ops_rmsnorm(v, v, norm, c->head_dim, c->rms_eps);
    if (cs) ops_rope_apply(v, c->rot_dim, cs, c->rope_interleaved);
}

/* The rows just computed of Q, K and V (stacked in that order; the split is in
 * whole heads): bias, head norm and RoPE on the query and key heads, then the keys
 * into the cache, transposed, and the values (+ bias) as they are. In-thread, on
 * rows still in this core's cache, and no serial stage between the matmul and
 * attention. */
static void post_qkv(const matmul_job *j, int r0, int r1) {
    const model_config *c = model_layer_cfg(j->m, j->layer);
    const layer_weights *L = &j->m->layers[j->layer];
    fwd_state *s = j->s;
    int hd = c->head_dim, qd = c->n_heads * hd, kvd = c->n_kv_heads * hd, gated = s->q_gate != NULL;
    int q_end = q_rows(c);
    for (int t = 0; t < j->nt; t++) {
        const float *cs = j->rope_cs ? j->rope_cs + (size_t)t * j->m->cfg.rot_dim : NULL; /* the tables' stride */
        const fwd_state *kv = j->segs[s->tok_seg[t]].kv;
        int slot = kv_slot(&kv->kv, j->layer, s->tok_pos[t]);
        for (int r = r0; r < r1 && r < q_end; r += hd) {
            float *q = s->q + (size_t)t * qd + r;
            if (gated) { /* query head r / (2 hd) into q; a gate head stays where it is */
                if (r / hd % 2) continue;
                q = s->q + (size_t)t * qd + r / 2;
                memcpy(q, s->q_gate + (size_t)t * q_end + r, (size_t)hd * sizeof(float));
            }
            head_in(q, L->q_bias ? L->q_bias + r : NULL, L->q_norm, cs, c);
        }
        for (int r = r0 > q_end ? r0 : q_end; r < r1 && r < q_end + kvd; r += hd) {
            int h = (r - q_end) / hd;
            float *k = s->k_new + (size_t)t * kvd + (size_t)h * hd;
            if (!L->wv) { /* attention_k_eq_v: the values are the keys' raw projection, normed */
                float *v = s->v_new + (size_t)t * kvd + (size_t)h * hd;
                ops_rmsnorm(v, k, NULL, hd, c->rms_eps);
                kv_value_put(s->kv.type, kv_value_head(&kv->kv, c, j->layer, h), slot, v, hd);
            }
            head_in(k, L->k_bias ? L->k_bias + (r - q_end) : NULL, L->k_norm, cs, c);
            kv_key_put(s->kv.type, kv_key_head(&kv->kv, c, j->layer, h), slot, k, hd);
        }
        /* rows of V are (kv head, dim) in order: whole heads, as the split is */
        for (int r = r0 > q_end + kvd ? r0 : q_end + kvd; r < r1; r += hd) {
            int h = (r - q_end - kvd) / hd;
            float *v = s->v_new + (size_t)t * kvd + (size_t)h * hd;
            if (L->v_bias) head_in(v, L->v_bias + (r - q_end - kvd), NULL, NULL, c);
            if (c->flags & ARCH_V_NORM) ops_rmsnorm(v, v, NULL, hd, c->rms_eps);
            kv_value_put(s->kv.type, kv_value_head(&kv->kv, c, j->layer, h), slot, v, hd);
        }
    }
}

/* ---- attention ------------------------------------------------------------------- */

struct attn_job {
    const model *m;
    fwd_state *s;        /* the scratch: q and att_out rows of every token, sequence after sequence */
    const fwd_seg *segs; /* the sequences (each with its own cache) */
    int nseg, layer;
    int win;             /* sliding window of this layer, 0: none */
    const float *sinks;  /* (n_heads) this layer's attention sink logits (ARCH_ATTN_SINKS), or NULL */
    float scale;         /* q.k scale */
    q8_act *xq;          /* or NULL: att_out quantized into it by the thread that finishes last
                            (the o projection's input, without a pass of its own) */
    atomic_int finished; /* threads done (with xq) */
    atomic_int *ready;   /* or NULL: per kv head, the rows of q, k and v written so far (of
                            (group + 2) * head_dim), when attention runs in the qkv pass */
    int nth;             /* the threads its work pays for (attention_threads) */
};

/* Attention inside the qkv pass: each kv head's task starts once the rows it reads (the
 * queries of its group, its key and value) are written and in the cache. Every row is
 * handed out before a thread leaves the matmul for attention, and a thread with rows
 * finishes them before it waits, so the wait ends. */
static void qkv_rows_done(const matmul_job *j, int r0, int r1) {
    const model_config *c = model_layer_cfg(j->m, j->layer);
    int hd = c->head_dim, qd = q_rows(c), kvd = c->n_kv_heads * hd, qg = qd / c->n_kv_heads;
    int g = -1, rows = 0;
    for (int r = r0; r < r1; r += hd) { /* whole heads: the split's alignment */
        int h = r < qd ? r / qg : r < qd + kvd ? (r - qd) / hd : (r - qd - kvd) / hd;
        if (h != g && rows) atomic_fetch_add_explicit(&j->attn->ready[g], rows, memory_order_release);
        rows = h != g ? hd : rows + hd;
        g = h;
    }
    if (rows) atomic_fetch_add_explicit(&j->attn->ready[g], rows, memory_order_release);
}

static void wait_kv_head(const attn_job *j, int kvh) {
    const model_config *c = model_layer_cfg(j->m, j->layer);
    const layer_weights *L = &j->m->layers[j->layer];
    /* a layer reading another's cache has no key or value rows; attention_k_eq_v no value rows */
    int kv_rows = (L->wk ? c->head_dim : 0) + (L->wv ? c->head_dim : 0);
    if (j->ready) pool_wait_at_least(j->m->pool, &j->ready[kvh], q_rows(c) / c->n_kv_heads + kv_rows);
}

/* ARCH_ATTN_GATE: attention's output of token row t, heads h0 .. h0 + nh - 1, times
 * sigmoid(gate) (transformers: attn_output * torch.sigmoid(gate)). */
static void output_gate(const fwd_state *s, const model_config *c, int t, int h0, int nh) {
    if (!s->q_gate) return;
    int hd = c->head_dim, qd = c->n_heads * hd;
    for (int h = h0; h < h0 + nh; h++) {
        float *o = s->att_out + (size_t)t * qd + (size_t)h * hd;
        const float *g = s->q_gate + (size_t)t * 2 * qd + (size_t)(2 * h + 1) * hd;
        for (int d = 0; d < hd; d++) o[d] = o[d] * (1.0f / (1.0f + expf(-g[d])));
    }
}

/* One token of one sequence (a decode step alone): the query heads split into
 * equal contiguous ranges, and within a thread's range one ops_attend_block per kv
 * head it touches, over that kv head's queries in the range. Splitting by kv head
 * instead would give one of 2 threads twice the other's work for 3 kv heads. */
static void attention_decode(const attn_job *j, int ith, int nth, float *sc, float *wrap) {
    const model_config *c = model_layer_cfg(j->m, j->layer);
    const fwd_state *s = j->s, *kv = j->segs[0].kv;
    int hd = c->head_dim, group = c->n_heads / c->n_kv_heads;
    int h0, h1;
    pool_split(c->n_heads, 1, ith, nth, &h0, &h1);
    for (int h = h0; h < h1;) {
        int kvh = h / group, he = (kvh + 1) * group < h1 ? (kvh + 1) * group : h1;
        wait_kv_head(j, kvh);
        ops_attend_block_sinks(j->m->kern, s->fast, s->att_out + (size_t)h * hd, hd, s->q + (size_t)h * hd, hd, he - h,
                         he - h, s->kv.type, kv_key_head(&kv->kv, c, j->layer, kvh), ATT_KBLOCK,
                         kv_value_head(&kv->kv, c, j->layer, kvh), (size_t)hd, kv->kv.layers[j->layer].ring, j->segs[0].pos + 1, j->win, hd, j->scale, sc,
                         s->score_ld, wrap, j->sinks ? j->sinks + h : NULL);
        output_gate(s, c, 0, h, he - h);
        h = he;
    }
}

/* The attention tasks of sequence si (see attention_rows): its blocks of ATT_TOKENS
 * tokens times the kv heads. */
static int seg_tasks(const attn_job *j, int si) {
    return (j->segs[si].n + ATT_TOKENS - 1) / ATT_TOKENS * model_layer_cfg(j->m, j->layer)->n_kv_heads;
}

/* The keys and values one token of segs[si] reads at kv head kvh, on their way to L2:
 * a decode step's attention reads each sequence's cache from memory, a stream too short
 * for the hardware prefetcher to get ahead of; this runs one task ahead of the thread's
 * reads. Plain caches only (no ring, no window): those read [0, pos] whole. One request
 * per 128 bytes (the line's pair comes along): SmolLM2, 32 requests at --parallel 8, 1
 * thread, the attention's CPU samples went from ~2200 to ~1850 (perf, Zen 4); one per
 * line saved less (the requests wait for fill buffers), and also prefetching the
 * thread's first task nothing. */
static void attention_prefetch(const attn_job *j, int si, int kvh) {
    const model_config *c = model_layer_cfg(j->m, j->layer);
    const fwd_seg *g = &j->segs[si];
    if (g->n != 1 || j->win || g->kv->kv.layers[j->layer].ring) return;
    int len = g->pos + 1, blocks = (len + ATT_KBLOCK - 1) / ATT_KBLOCK;
    const char *k = kv_key_head(&g->kv->kv, c, j->layer, kvh), *v = kv_value_head(&g->kv->kv, c, j->layer, kvh);
    size_t kb = dtype_row_bytes(j->s->kv.type, (int64_t)blocks * c->head_dim * ATT_KBLOCK);
    size_t vb = dtype_row_bytes(j->s->kv.type, (int64_t)kv_value_cap(j->s->kv.type, len) * c->head_dim);
    for (size_t o = 0; o < kb; o += 128) __builtin_prefetch(k + o, 0, 2);
    for (size_t o = 0; o < vb; o += 128) __builtin_prefetch(v + o, 0, 2);
}

/* The cache lines post_qkv will write for the one-token sequences of j's layer (their
 * key at pos: head_dim lines, the keys' cache being transposed; their value row), for
 * the kv heads thread ith has in j's attention, requested for writing a pass ahead (the
 * down projection's, before the next layer): cold, they are a visible part of post_qkv
 * at --parallel 8 (perf record on make bench-parallel). Plain caches only. */
static void attention_prefetch_all(const attn_job *j, int ith, int nth) {
    const model_config *c = model_layer_cfg(j->m, j->layer);
    size_t es = dtype_row_bytes(j->s->kv.type, 1), vrow = dtype_row_bytes(j->s->kv.type, c->head_dim);
    for (int si = 0, task = 0; si < j->nseg; si++)
        for (int bk = 0; bk < seg_tasks(j, si); bk++, task++) {
            const fwd_seg *g = &j->segs[si];
            if (task % nth != ith || g->n != 1 || g->kv->kv.layers[j->layer].ring) continue;
            int p = g->pos, h = bk % c->n_kv_heads;
            const char *k = kv_key_head(&g->kv->kv, c, j->layer, h), *v = kv_value_head(&g->kv->kv, c, j->layer, h);
            int hd = c->head_dim, bf = j->s->kv.type == DT_BF16;
            for (int d = 0; d < hd; d += 1 + bf) /* BF16: one pair of dimensions at a time */
                __builtin_prefetch(k + kv_key_at(j->s->kv.type, p, d, hd) * es, 1, 2);
            size_t v0 = bf ? (size_t)(p / 2) * 2 * vrow : (size_t)p * vrow, vn = bf ? 2 * vrow : vrow;
            for (size_t o = 0; o < vn; o += 64) __builtin_prefetch(v + v0 + o, 1, 2);
        }
}

/* Tasks are (sequence, block of ATT_TOKENS of its tokens, kv head), dealt
 * round-robin so the long causal rows of late tokens spread over all threads. A
 * task runs the queries of all the kv head's query heads (its GQA group) for its
 * tokens in one ops_attend_block, so the keys and values are read once per group,
 * not once per head. Each output is computed by one thread in a way that does not
 * depend on which thread, on the batching or on the other sequences of the step
 * (see ops_attend_block): a sequence's results are the same bits alone or in a
 * batch. */
static void attention_rows(const attn_job *j, int ith, int nth) {
    const model_config *c = model_layer_cfg(j->m, j->layer);
    const fwd_state *s = j->s;
    int hd = c->head_dim, qd = c->n_heads * hd;
    int group = c->n_heads / c->n_kv_heads, rows = ATT_TOKENS * group;
    float *sc = s->scores + (size_t)ith * rows * s->score_ld;
    float *qg = s->att_rows + (size_t)ith * 3 * rows * hd, *og = qg + (size_t)rows * hd, *wrap = og + (size_t)rows * hd;
    if (j->nseg == 1 && j->segs[0].n == 1) {
        attention_decode(j, ith, nth, sc, wrap);
        return;
    }
    int task = 0;
    for (int si = 0, base = 0; si < j->nseg; base += j->segs[si].n, si++) {
        const fwd_seg *g = &j->segs[si];
        for (int bk = 0; bk < seg_tasks(j, si); bk++, task++) {
            if (task % nth != ith) continue;
            /* this thread's next task: nth tasks on, a decode step's (one token per sequence) */
            for (int ps = si, pb = bk + nth; ps < j->nseg; pb -= seg_tasks(j, ps), ps++)
                if (pb < seg_tasks(j, ps)) {
                    attention_prefetch(j, ps, pb % c->n_kv_heads);
                    break;
                }
            int t0 = bk / c->n_kv_heads * ATT_TOKENS, kvh = bk % c->n_kv_heads;
            int nt = g->n - t0 < ATT_TOKENS ? g->n - t0 : ATT_TOKENS;
            wait_kv_head(j, kvh);
            /* the group's heads are adjacent in a token's q row: rows (t, g) at q + t * qd + g * hd */
            const float *q0 = s->q + (size_t)(base + t0) * qd + (size_t)kvh * group * hd;
            float *o0 = s->att_out + (size_t)(base + t0) * qd + (size_t)kvh * group * hd;
            for (int t = 0; t < nt; t++)
                memcpy(qg + (size_t)t * group * hd, q0 + (size_t)t * qd, group * hd * sizeof(float));
            ops_attend_block_sinks(j->m->kern, s->fast, og, hd, qg, hd, nt * group, group, s->kv.type,
                             kv_key_head(&g->kv->kv, c, j->layer, kvh), ATT_KBLOCK,
                             kv_value_head(&g->kv->kv, c, j->layer, kvh), (size_t)hd, g->kv->kv.layers[j->layer].ring, g->pos + t0 + 1, j->win, hd, j->scale, sc, s->score_ld, wrap,
                             j->sinks ? j->sinks + kvh * group : NULL);
            for (int t = 0; t < nt; t++) {
                memcpy(o0 + (size_t)t * qd, og + (size_t)t * group * hd, group * hd * sizeof(float));
                output_gate(s, c, base + t0 + t, kvh * group, group);
            }
        }
    }
}

/* The attention pass; with j->xq the thread that finishes last quantizes att_out for the
 * o projection. */
static void attention_task(void *ctx, int ith, int nth) {
    attn_job *j = ctx;
    attention_rows(j, ith, nth);
    if (j->xq && atomic_fetch_add_explicit(&j->finished, 1, memory_order_acq_rel) + 1 == nth) {
        const model_config *c = model_layer_cfg(j->m, j->layer);
        int n = 0;
        for (int i = 0; i < j->nseg; i++) n += j->segs[i].n;
        quantizer(j->m)(j->s->att_out, c->n_heads * c->head_dim, 0, n, j->xq);
    }
}

/* ---- the pass --------------------------------------------------------------------- */

/* The rmsnorm of a chunk: split over the threads by tokens in prefill, on the
 * calling thread for a token or two. */
struct norm_job {
    const model *m;
    fwd_state *s;
    const float *norm_w; /* (dim) rmsnorm weight */
    int n;
    int residual;        /* 0: xb = rmsnorm(x); 1: x += rmsnorm(xb) (a post-norm) */
    const q8_act *xq;    /* or NULL: xb's rows also quantized into it here, for the matmuls
                            that read xb next (one pool_run less, rows still in cache) */
};

static void rmsnorm_task(void *ctx, int ith, int nth) {
    const norm_job *j = ctx;
    const model_config *c = &j->m->cfg;
    int t0, t1;
    pool_split(j->n, 1, ith, nth, &t0, &t1);
    for (int t = t0; t < t1; t++) {
        float *x = j->s->x + (size_t)t * c->dim, *xb = j->s->xb + (size_t)t * c->dim;
        if (!j->residual) {
            ops_rmsnorm(xb, x, j->norm_w, c->dim, c->rms_eps);
            continue;
        }
        ops_rmsnorm(xb, xb, j->norm_w, c->dim, c->rms_eps);
        for (int i = 0; i < c->dim; i++) x[i] += xb[i] * c->residual_mult;
    }
    if (j->xq && t0 < t1) quantizer(j->m)(j->s->xb, c->dim, t0, t1, j->xq);
}

/* xb = rmsnorm(x) (residual = 0), or x += rmsnorm(xb) (1); with a group (fast mode,
 * residual 0: act_group, 0 for none) xb also into s->xq, which the caller then hands
 * run_matmuls. */
static void run_norm(const model *m, fwd_state *s, const float *norm_w, int n, int residual, int group) {
    norm_job j = {m, s, norm_w, n, residual, NULL};
    if (group) {
        q8_act_shape(&s->xq, n, m->cfg.dim, group);
        j.xq = &s->xq;
    }
    if (n >= 2 * pool_size(m->pool)) {
        pool_run(m->pool, rmsnorm_task, &j);
    } else {
        rmsnorm_task(&j, 0, 1);
    }
}

static void run_rmsnorm(const model *m, fwd_state *s, const float *norm_w, int n, int residual) {
    run_norm(m, s, norm_w, n, residual, 0);
}

/* What some families do to the lm_head's output row: Granite's division, Gemma's
 * soft-cap (transformers: logits / cap, tanh, * cap). */
static void logits_tail(const model_config *c, float *lg, int lo, int hi) {
    if (c->logit_div != 1.0f)
        for (int i = lo; i < hi; i++) lg[i] /= c->logit_div;
    if (c->final_softcap > 0)
        for (int i = lo; i < hi; i++) lg[i] = tanhf(lg[i] / c->final_softcap) * c->final_softcap;
}

/* The lm_head's rows just computed, for every token of the pass: logits_tail, and with
 * segs (a batch) the copy into each sequence's own logits, while they are in cache and
 * on all threads. */
static void post_logits(const matmul_job *j, int r0, int r1) {
    const model_config *c = &j->m->cfg;
    for (int t = 0; t < j->nt; t++) {
        float *lg = j->out[0].y + (size_t)t * j->out[0].ldy;
        logits_tail(c, lg, r0, r1);
        if (j->segs) memcpy(j->segs[t].kv->logits + r0, lg + r0, (size_t)(r1 - r0) * sizeof(float));
    }
}

/* The RoPE angles of the chunk's tokens, once per token (not per head and layer):
 * (n, rot_dim) per table, the model's at rope_cs and the sliding layers' own base
 * after it. LongRoPE takes its long factors once the call's sequence (s->seq_end,
 * or this chunk's end) passes the original context, as transformers decides per
 * forward call; its cos and sin are scaled by the attention factor. */
static void rope_tables(const model *m, fwd_state *s, const fwd_seg *segs, int n) {
    const model_config *c = &m->cfg;
    int rd = c->rot_dim;
    for (int t = 0; t < n; t++) {
        const fwd_seg *g = &segs[s->tok_seg[t]];
        int end = g->seq_end > g->pos + g->n ? g->seq_end : g->pos + g->n;
        const float *f = m->rope_inv_freq_long && end > c->rope_orig_max_pos ? m->rope_inv_freq_long : m->rope_inv_freq;
        float *cs = s->rope_cs + (size_t)t * rd;
        ops_rope_angles(cs, rd, f, s->tok_pos[t]);
        if (c->rope_scaling == ROPE_SCALING_LONGROPE || c->rope_scaling == ROPE_SCALING_YARN)
            for (int i = 0; i < rd; i++) cs[i] *= c->rope_attn_factor;
        if (m->rope_inv_freq_swa)
            ops_rope_angles(s->rope_cs + (size_t)(s->chunk + t) * rd, c->per_layer ? c->head_dim_swa : rd,
                            m->rope_inv_freq_swa, s->tok_pos[t]);
    }
}

/* ---- the schedule: which stages ride on another stage's threads ------------------------
 *
 * Each pool pass costs a start and a barrier, so elementwise work runs inside the matmul
 * passes, on the rows a thread has just computed, instead of in passes of its own. None
 * of this changes a value, only which thread computes it and when. Always:
 *   - the qkv pass adds the biases, runs the q/k head norms and RoPE, and writes the cache
 *     (post_qkv);
 *   - the o and down passes add themselves to the residual (post_residual), unless a
 *     post-norm over whole rows has to come first;
 *   - the gate/up pass runs SwiGLU (or GeGLU) and, when the down projection takes int8,
 *     quantizes its input piece by piece (post_swiglu).
 * In a step of a few tokens (fusions_of below) also: */

/* Up to this many tokens in a pass, the work between two matmuls (rmsnorm and int8
 * quantization of a few rows, microseconds) is cheaper on one thread at the end of the
 * pass before than in a pool pass of its own (which it gets from 2 tokens per thread). */
#define FOLD_MAX_T 16

typedef struct {
    int attention_in_qkv;    /* each thread runs its attention tasks in the qkv pass, each as soon
                                as its kv head's rows are written (qkv_rows_done): no barrier between */
    int ffn_norm_in_o;       /* the ffn norm (and its int8 quantization) on the thread that
                                completes the o pass */
    int o_input_in_attention;/* att_out quantized for o by the thread that finishes attention last */
    int attn_norm_in_down;   /* the next layer's attention norm on the thread completing the down pass */
    int kv_ahead_in_down;    /* the down pass requests the next layer's new cache lines */
} fwd_fusions;

/* One forward call: the stages' shared view. */
typedef struct {
    const model *m;
    fwd_state *s;
    const fwd_seg *segs;
    int nseg, n;             /* sequences; token rows, sequence after sequence */
    int fold;                /* a step of a few tokens: the fusions of fwd_fusions apply */
    int attn_normed;         /* the next layer's attention norm already ran (attn_norm_in_down) */
    int attended;            /* this layer's attention already ran (attention_in_qkv) */
    int ffn_normed;          /* this layer's ffn norm already ran (ffn_norm_in_o) */
    q8_act xq_o;             /* the buffers of s->xq shaped for the o projection's input */
} fwd_call;

static fwd_fusions fusions_of(const fwd_call *f, int l) {
    const layer_weights *L = &f->m->layers[l];
    const uint8_t *lf = f->m->cfg.layer_flags;
    int last = l + 1 == f->m->cfg.n_layers, linear = lf[l] & LAYER_LINEAR;
    return (fwd_fusions){
        .attention_in_qkv = !linear,
        .ffn_norm_in_o = f->fold && !L->post_attn_norm,
        .o_input_in_attention = f->fold && !linear && plan_layer(&f->m->plan, l, PASS_O)->int8,
        .attn_norm_in_down = f->fold && !L->post_ffn_norm && !last,
        .kv_ahead_in_down = f->fold && !last &&
                            !(lf[l + 1 < f->m->cfg.n_layers ? l + 1 : l] & (LAYER_LINEAR | LAYER_KV_SHARED)),
    };
}

/* ---- the stages of a layer, in the order data flows ------------------------------------ */

static const plan_pass *pass_of(const fwd_call *f, int l, int pass) { return plan_layer(&f->m->plan, l, pass); }

/* The RoPE angles layer l uses (rope_tables), or NULL for a layer without RoPE. */
static const float *layer_rope(const fwd_call *f, int l) {
    const model_config *c = &f->m->cfg; /* the tables' stride: the model's rot_dim */
    int lf = c->layer_flags[l];
    if (lf & LAYER_NO_ROPE) return NULL;
    if (lf & LAYER_SLIDING && f->m->rope_inv_freq_swa) return f->s->rope_cs + (size_t)f->s->chunk * c->rot_dim;
    return f->s->rope_cs;
}

/* xb = rmsnorm(x), and its int8 form for the qkv pass. */
static void stage_attn_norm(fwd_call *f, int l) {
    if (f->attn_normed) { /* done by the previous layer's down pass */
        f->attn_normed = 0;
        return;
    }
    const plan_pass *qkv = pass_of(f, l, PASS_QKV);
    run_norm(f->m, f->s, f->m->layers[l].attn_norm, f->n, 0, qkv->int8 ? qkv->act_group : 0);
}

/* The threads attention pays for: the keys and values each token reads (plan_threads),
 * no more than its tasks (a decode step's query heads, or the blocks of tokens times kv
 * heads, attention_rows). */
static int attention_threads(const fwd_call *f, int l) {
    const model_config *c = model_layer_cfg(f->m, l);
    double kv_row = 2.0 * (double)dtype_row_bytes(f->s->kv.type, (int64_t)c->n_kv_heads * c->head_dim), work = 0;
    int tasks = 0;
    for (int i = 0; i < f->nseg; i++) {
        const fwd_seg *g = &f->segs[i];
        work += (double)g->n * (g->pos + g->n) * kv_row;
        tasks += (g->n + ATT_TOKENS - 1) / ATT_TOKENS * c->n_kv_heads;
    }
    if (f->nseg == 1 && f->segs[0].n == 1) tasks = c->n_heads;
    int n = plan_threads(&f->m->plan, work);
    return n < tasks ? n : tasks;
}

/* The attention job of layer l (stage_attention), with f->xq_o shaped for the o projection
 * when attention quantizes its input. */
static void attention_job(fwd_call *f, int l, attn_job *j) {
    const model_config *c = model_layer_cfg(f->m, l);
    fwd_state *s = f->s;
    int hd = c->head_dim, slide = c->layer_flags[l] & LAYER_SLIDING;
    *j = (attn_job){.m = f->m, .s = s, .segs = f->segs, .nseg = f->nseg, .layer = l,
                    .win = slide ? c->sliding_window : 0, .sinks = f->m->layers[l].sinks,
                    .scale = c->attn_scale > 0 ? c->attn_scale : 1.0f / sqrtf((float)hd)};
    f->xq_o = s->xq;
    if (fusions_of(f, l).o_input_in_attention) {
        q8_act_shape(&f->xq_o, f->n, c->n_heads * hd, pass_of(f, l, PASS_O)->act_group);
        j->xq = &f->xq_o;
    }
    atomic_init(&j->finished, 0);
    j->nth = attention_threads(f, l);
}

/* q, k, v = xb @ W^T [+ bias] -> [q/k head norm] -> RoPE; keys and values into the cache;
 * [attention]. */
static void stage_qkv(fwd_call *f, int l) {
    const model_config *c = model_layer_cfg(f->m, l);
    const layer_weights *L = &f->m->layers[l];
    fwd_state *s = f->s;
    int kvd = c->n_kv_heads * c->head_dim;
    const plan_pass *pp = pass_of(f, l, PASS_QKV);
    mm_out qkv[] = {{L->wq, s->q_gate ? s->q_gate : s->q, q_rows(c)}, {L->wk, s->k_new, kvd}, {L->wv, s->v_new, kvd}};
    matmul_job j = {.m = f->m, .s = s, .out = qkv, .n_out = pp->n, .pass = pp, .x = s->xb, .ldx = c->dim, .nt = f->n,
                    .post = post_qkv, .layer = l, .segs = f->segs, .rope_cs = layer_rope(f, l)};
    attn_job a;
    if (L->q_norm_full) { /* OLMoE: the norms need whole rows first, then the heads as usual */
        int qd = c->n_heads * c->head_dim; /* no output gate in these families: q_rows(c) */
        j.post = NULL;
        run_matmuls(&j, pp->int8 ? &s->xq : NULL);
        for (int t = 0; t < f->n; t++) {
            ops_rmsnorm(s->q + (size_t)t * qd, s->q + (size_t)t * qd, L->q_norm_full, qd, c->rms_eps);
            ops_rmsnorm(s->k_new + (size_t)t * kvd, s->k_new + (size_t)t * kvd, L->k_norm_full, kvd, c->rms_eps);
        }
        post_qkv(&j, 0, qd + 2 * kvd);
        f->attended = 0;
        return;
    }
    if (fusions_of(f, l).attention_in_qkv) {
        attention_job(f, l, &a);
        a.ready = s->kv_ready;
        for (int h = 0; h < c->n_kv_heads; h++) atomic_init(&a.ready[h], 0);
        j.attn = &a;
        j.min_threads = a.nth;
    }
    run_matmuls(&j, pp->int8 ? &s->xq : NULL);
    f->attended = j.attn != NULL;
}

/* att_out = causal GQA attention of q over each sequence's cache [in a sliding window]. */
static void stage_attention(fwd_call *f, int l) {
    if (f->attended) { /* done in the qkv pass */
        f->attended = 0;
        return;
    }
    attn_job j;
    attention_job(f, l, &j);
    pool_run_n(f->m->pool, attention_task, &j, j.nth);
}

/* A LAYER_LINEAR layer's input projections, one pass: a Gated DeltaNet's lin_in = xb @ [in_proj_qkv;
 * in_proj_z; in_proj_b; in_proj_a]^T, a short conv's lin_in = xb @ in_proj^T (the plan's one matrix). */
static void stage_linear_in(fwd_call *f, int l) {
    const model_config *c = &f->m->cfg;
    const layer_weights *L = &f->m->layers[l];
    fwd_state *s = f->s;
    int C = config_lin_channels(c), vd = c->lin_hv * c->lin_dv, ld = s->lin_ld;
    const plan_pass *pp = pass_of(f, l, PASS_QKV);
    mm_out in[] = {{L->wq, s->lin_in, ld}, {L->wk, s->lin_in + C, ld}, {L->lin_b, s->lin_in + C + vd, ld},
                   {L->lin_a, s->lin_in + C + vd + c->lin_hv, ld}};
    matmul_job j = {.m = f->m, .s = s, .out = in, .n_out = pp->n, .pass = pp, .x = s->xb, .ldx = c->dim, .nt = f->n};
    run_matmuls(&j, pp->int8 ? &s->xq : NULL);
}

typedef struct {
    const fwd_call *f;
    int layer, tasks;
    deltanet_dims d;
    deltanet_weights w;
} deltanet_job;

/* Tasks (sequence, key head), dealt round-robin: each runs its sequence's tokens in order
 * (deltanet_head), so a token's bits do not depend on the split, the batch or the chunk. */
static void deltanet_task(void *ctx, int ith, int nth) {
    const deltanet_job *j = ctx;
    const fwd_call *f = j->f;
    fwd_state *s = f->s;
    int hk = j->d.hk, vd = j->d.hv * j->d.dv;
    for (int task = ith; task < j->tasks; task += nth) {
        int si = task / hk, g = task % hk, base = 0;
        for (int i = 0; i < si; i++) base += f->segs[i].n;
        const fwd_seg *sg = &f->segs[si];
        kv_cache *kv = &sg->kv->kv;
        deltanet_head(&j->d, &j->w, g, s->lin_in + (size_t)base * s->lin_ld, (size_t)s->lin_ld, sg->n,
                      kv_lin_conv(kv, j->layer), kv_lin_state(kv, &f->m->cfg, j->layer),
                      s->lin_out + (size_t)base * vd, (size_t)vd);
    }
}

/* lin_out = the Gated DeltaNet over each sequence's tokens, from the states its earlier
 * positions left (zero at position 0). */
static void stage_deltanet(fwd_call *f, int l) {
    const model_config *c = &f->m->cfg;
    const layer_weights *L = &f->m->layers[l];
    deltanet_job j = {.f = f, .layer = l, .tasks = f->nseg * c->lin_hk,
                      .d = {c->lin_conv, c->lin_dk, c->lin_dv, c->lin_hk, c->lin_hv, config_lin_channels(c),
                            c->lin_tiled, c->rms_eps},
                      .w = {L->lin_conv, L->lin_dt_bias, L->lin_decay, L->lin_norm}};
    size_t floats = config_lin_floats(c);
    for (int i = 0; i < f->nseg; i++)
        if (f->segs[i].pos == 0) memset(kv_lin_conv(&f->segs[i].kv->kv, l), 0, floats * sizeof(float));
    double work = (double)f->n * c->lin_hv * c->lin_dk * c->lin_dv * 4.0 * sizeof(float);
    int nth = plan_threads(&f->m->plan, work);
    pool_run_n(f->m->pool, deltanet_task, &j, nth < j.tasks ? nth : j.tasks);
}

#define SHORTCONV_CHANNELS 64 /* channels per task of a short conv */

typedef struct {
    const fwd_call *f;
    int layer, blocks, tasks;
    const float *taps;
} shortconv_job;

/* Tasks (sequence, block of channels), dealt round-robin: each runs its sequence's tokens in order
 * (shortconv_rows), so a token's bits do not depend on the split, the batch or the chunk. */
static void shortconv_task(void *ctx, int ith, int nth) {
    const shortconv_job *j = ctx;
    const fwd_call *f = j->f;
    fwd_state *s = f->s;
    int dim = f->m->cfg.dim, k = f->m->cfg.lin_conv;
    for (int task = ith; task < j->tasks; task += nth) {
        int si = task / j->blocks, c0 = task % j->blocks * SHORTCONV_CHANNELS, base = 0;
        int c1 = c0 + SHORTCONV_CHANNELS < dim ? c0 + SHORTCONV_CHANNELS : dim;
        for (int i = 0; i < si; i++) base += f->segs[i].n;
        const fwd_seg *sg = &f->segs[si];
        shortconv_rows(k, dim, j->taps, s->lin_in + (size_t)base * s->lin_ld, (size_t)s->lin_ld, sg->n,
                       kv_lin_conv(&sg->kv->kv, j->layer), s->lin_out + (size_t)base * dim, (size_t)dim, c0, c1);
    }
}

/* lin_out = the short conv over each sequence's tokens, from the inputs its earlier positions left
 * (zero at position 0). */
static void stage_shortconv(fwd_call *f, int l) {
    const model_config *c = &f->m->cfg;
    int blocks = (c->dim + SHORTCONV_CHANNELS - 1) / SHORTCONV_CHANNELS;
    shortconv_job j = {.f = f, .layer = l, .blocks = blocks, .tasks = f->nseg * blocks,
                       .taps = f->m->layers[l].lin_conv};
    for (int i = 0; i < f->nseg; i++)
        if (f->segs[i].pos == 0) memset(kv_lin_conv(&f->segs[i].kv->kv, l), 0, config_lin_floats(c) * sizeof(float));
    double work = (double)f->n * c->dim * 4.0 * sizeof(float) * c->lin_conv;
    int nth = plan_threads(&f->m->plan, work);
    if (nth > j.tasks) nth = j.tasks;
    if (nth <= 1) shortconv_task(&j, 0, 1);
    else pool_run_n(f->m->pool, shortconv_task, &j, nth);
}

/* xb = att_out @ Wo^T; x += xb unless a post-attention norm comes first. */
static void stage_o(fwd_call *f, int l) {
    const model_config *c = model_layer_cfg(f->m, l);
    const layer_weights *L = &f->m->layers[l];
    fwd_state *s = f->s;
    fwd_fusions fu = fusions_of(f, l);
    const plan_pass *pp = pass_of(f, l, PASS_O), *gu = pass_of(f, l, PASS_GATE_UP);
    /* the ffn norm's int8 output: s->xq (the o projection reads its own shape, xq_o) */
    if (gu->int8) q8_act_shape(&s->xq, f->n, c->dim, gu->act_group);
    norm_job nf = {f->m, s, L->ffn_norm, f->n, 0, gu->int8 ? &s->xq : NULL};
    mm_out o[] = {{L->wo, s->xb, c->dim}};
    int linear = c->layer_flags[l] & LAYER_LINEAR;
    matmul_job j = {.m = f->m, .s = s, .out = o, .n_out = 1, .pass = pp, .x = linear ? s->lin_out : s->att_out,
                    .ldx = linear ? config_lin_out(c) : c->n_heads * c->head_dim, .nt = f->n,
                    .post = L->post_attn_norm ? NULL : post_residual,
                    .then = fu.ffn_norm_in_o ? &nf : NULL, .bias = L->o_bias};
    run_matmuls(&j, fu.o_input_in_attention ? &f->xq_o : NULL);
    f->ffn_normed = fu.ffn_norm_in_o;
}

/* [x += rmsnorm(xb)]: Gemma 3's post-attention norm. */
static void stage_post_attn_norm(fwd_call *f, int l) {
    const float *w = f->m->layers[l].post_attn_norm;
    if (w) run_rmsnorm(f->m, f->s, w, f->n, 1);
}

/* xb = rmsnorm(x), and its int8 form for the gate/up pass. */
static void stage_ffn_norm(fwd_call *f, int l) {
    if (f->ffn_normed) return; /* done by the o pass */
    const plan_pass *gu = pass_of(f, l, PASS_GATE_UP);
    run_norm(f->m, f->s, f->m->layers[l].ffn_norm, f->n, 0, gu->int8 ? gu->act_group : 0);
}

/* hb = act(xb @ Wgate^T) * (xb @ Wup^T), SiLU or GELU-tanh, and its int8 form for down. */
static void stage_gate_up(fwd_call *f, int l) {
    const model_config *c = model_layer_cfg(f->m, l);
    const layer_weights *L = &f->m->layers[l];
    fwd_state *s = f->s;
    const plan_pass *pp = pass_of(f, l, PASS_GATE_UP), *down = pass_of(f, l, PASS_DOWN);
    if (down->int8) q8_act_shape(&s->xq_down, f->n, c->hidden_dim, down->act_group);
    mm_out gu[] = {{L->w_gate, s->hb, c->hidden_dim}, {L->w_up, s->hb2, c->hidden_dim}};
    matmul_job j = {.m = f->m, .s = s, .out = gu, .n_out = 2, .pass = pp, .x = s->xb, .ldx = c->dim, .nt = f->n,
                    .post = post_swiglu, .layer = l, .quantize_down = down->int8};
    run_matmuls(&j, pp->int8 ? &s->xq : NULL);
}

/* xb = hb @ Wdown^T; x += xb unless a post-feedforward norm comes first. */
static void stage_down(fwd_call *f, int l) {
    const model_config *c = model_layer_cfg(f->m, l);
    const layer_weights *L = &f->m->layers[l];
    fwd_state *s = f->s;
    fwd_fusions fu = fusions_of(f, l);
    const plan_pass *pp = pass_of(f, l, PASS_DOWN);
    norm_job na = {0};
    if (fu.attn_norm_in_down) {
        const plan_pass *next = pass_of(f, l + 1, PASS_QKV);
        na = (norm_job){f->m, s, f->m->layers[l + 1].attn_norm, f->n, 0, NULL};
        if (next->int8) {
            q8_act_shape(&s->xq, f->n, c->dim, next->act_group); /* s->xq is not read by the down projection */
            na.xq = &s->xq;
        }
    }
    attn_job ahead = {.m = f->m, .s = s, .segs = f->segs, .nseg = f->nseg, .layer = l + 1};
    if (fu.kv_ahead_in_down) ahead.win = c->layer_flags[l + 1] & LAYER_SLIDING ? c->sliding_window : 0;
    mm_out d[] = {{L->w_down, s->xb, c->dim}};
    matmul_job j = {.m = f->m, .s = s, .out = d, .n_out = 1, .pass = pp, .x = s->hb, .ldx = c->hidden_dim,
                    .nt = f->n, .post = L->post_ffn_norm ? NULL : post_residual,
                    .then = fu.attn_norm_in_down ? &na : NULL, .kv_ahead = fu.kv_ahead_in_down ? &ahead : NULL};
    run_matmuls(&j, pp->int8 ? &s->xq_down : NULL);
    f->attn_normed = fu.attn_norm_in_down;
}

/* ---- the expert layer ------------------------------------------------------------------
 *
 * xb (the normed input) -> router logits [+ bias] -> per token its k experts and weights (moe.c)
 * -> the tokens' rows grouped by expert -> each chosen expert's gate and up over its rows
 * (its weights stream once for all the tokens that chose it) [+ biases], act(gate) * up (or
 * gpt-oss's clamped SwiGLU) -> its down [+ bias]
 * -> per token the weighted sum of its k rows in slot order [+ sigmoid(gate logit) * the
 * shared expert's output] -> x += that [times the residual multiplier].
 * Every matmul output depends only on its own row (kernels.h), a group's rows keep their
 * values whatever else is in the group, and the sums run in slot order: a token's result
 * is the same bits whatever shares the pass and whichever experts the others chose. */

#define MOE_ALIGN 16 /* rows per piece of an expert's matmul */

typedef struct {
    const model *m;
    fwd_state *s;
    const moe_group *g;
    int ng, down;     /* groups; 0: the gate / up phase, 1: the down phase */
    int units;        /* pieces of MOE_ALIGN rows over all groups of the phase */
} moe_job;

static int moe_rows(const moe_job *j, const moe_group *g) { return j->down ? j->m->cfg.dim : g->width; }

/* One matmul of a group: y (n, ldy) rows [r0, r1) = x (n, ldx) @ w^T; a repacked expert
 * takes xq, x quantized (fast mode), the others f32 activations on the file layout. */
static void moe_matmul(const model *m, const tensor *w, const float *x, int ldx, const q8_act *xq, int n, int r0,
                       int r1, float *y, int ldy) {
    const kernels *k = m->kern, *ref = kernels_scalar();
    int cols = (int)w->shape[1];
    const void *q8w = plan_q8_weights(w);
    if (q8w && xq->q) {
        matmul_q8_fn fn = k->matmul_q8[w->type] ? k->matmul_q8[w->type] : ref->matmul_q8[w->type];
        fn(q8w, (int)w->shape[0], cols, r0, r1, xq, y, ldy);
        return;
    }
    matmul_fn fn = k->matmul[w->type] ? k->matmul[w->type] : ref->matmul[w->type];
    fn(w->data, dtype_row_bytes(w->type, cols), cols, r0, r1, x, ldx, n, y, ldy);
}

static void add_bias(float *y, const float *b, int r0, int r1) {
    for (int r = r0; r < r1; r++) y[r] += b[r];
}

/* Thread ith's share of the phase's pieces (whole pieces, groups in order). */
static void moe_task(void *ctx, int ith, int nth) {
    const moe_job *j = ctx;
    const model *m = j->m;
    int dim = m->cfg.dim, u0, u1;
    pool_split(j->units, 1, ith, nth, &u0, &u1);
    int gelu = m->cfg.act == ACT_GELU_TANH;
    swiglu_fn act = j->s->fast ? (gelu ? m->kern->geglu_fast : m->kern->swiglu_fast)
                               : (gelu ? ops_gelu_tanh_mul : ops_swiglu);
    for (int gi = 0, base = 0; gi < j->ng && base < u1; gi++) {
        const moe_group *g = &j->g[gi];
        int rows = moe_rows(j, g), pieces = (rows + MOE_ALIGN - 1) / MOE_ALIGN;
        int a = u0 > base ? u0 - base : 0, b = u1 - base < pieces ? u1 - base : pieces;
        base += pieces;
        if (a >= b) continue;
        int r0 = a * MOE_ALIGN, r1 = b * MOE_ALIGN < rows ? b * MOE_ALIGN : rows;
        if (j->down) {
            moe_matmul(m, g->down, g->h, g->width, &g->qh, g->n, r0, r1, g->y, dim);
            for (int t = 0; g->db && t < g->n; t++) add_bias(g->y + (size_t)t * dim, g->db, r0, r1);
            continue;
        }
        moe_matmul(m, g->gate, g->x, dim, &g->qx, g->n, r0, r1, g->h, g->width);
        moe_matmul(m, g->up, g->x, dim, &g->qx, g->n, r0, r1, g->h2, g->width);
        for (int t = 0; t < g->n; t++) {
            float *h = g->h + (size_t)t * g->width, *h2 = g->h2 + (size_t)t * g->width;
            if (g->gb) add_bias(h, g->gb, r0, r1), add_bias(h2, g->ub, r0, r1);
            if (m->cfg.act == ACT_SWIGLU_CLAMP) ops_swiglu_clamp(h + r0, h2 + r0, r1 - r0, m->cfg.swiglu_alpha, m->cfg.swiglu_limit);
            else act(h + r0, h2 + r0, r1 - r0);
        }
    }
}

static void moe_phase(const model *m, fwd_state *s, const moe_group *g, int ng, int down) {
    moe_job j = {m, s, g, ng, down, 0};
    double bytes = 0;
    for (int i = 0; i < ng; i++) {
        j.units += (moe_rows(&j, &g[i]) + MOE_ALIGN - 1) / MOE_ALIGN;
        bytes += (double)(down ? g[i].down->nbytes : g[i].gate->nbytes + g[i].up->nbytes) * g[i].n;
    }
    int nth = plan_threads(&m->plan, bytes);
    if (nth > j.units) nth = j.units;
    if (nth <= 1) moe_task(&j, 0, 1);
    else pool_run_n(m->pool, moe_task, &j, nth);
}

/* The activation group (kernels.act_group) matrices a..b ask for, where their columns allow. */
static int moe_act_group(const model *m, const tensor *a, const tensor *b) {
    int g = 1;
    const tensor *ts[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (!ts[i] || !plan_q8_weights(ts[i])) continue;
        int gi = m->kern->matmul_q8[ts[i]->type] && m->kern->act_group[ts[i]->type] ? m->kern->act_group[ts[i]->type] : 1;
        if (ts[i]->shape[1] % (32 * gi) == 0 && gi > g) g = gi;
    }
    return g;
}

/* Fast mode: rows (nt, cols) of x quantized into a, over the threads when there are many. */
static void moe_quantize(const model *m, fwd_state *s, const float *x, int nt, int cols, int group, q8_act *a) {
    q8_act_shape(a, nt, cols, group);
    matmul_job j = {.m = m, .s = s, .x = x, .ldx = cols, .nt = nt, .xq = a};
    if (nt >= 2 * pool_size(m->pool)) pool_run(m->pool, quantize_task, &j);
    else quantize_task(&j, 0, 1);
}

/* Rows [r, r + n) of a as an activation block of their own. */
static q8_act q8_rows(const q8_act *a, int r, int n) {
    q8_act v = *a;
    if (!v.q) return v;
    v.nt = n;
    v.q += (size_t)r * a->quads * 128;
    v.d += (size_t)r * a->quads * 4;
    v.s += (size_t)r * a->quads * 4;
    return v;
}

static void stage_experts(fwd_call *f, int l) {
    const model *m = f->m;
    const model_config *c = &m->cfg;
    const expert_block *b = m->layers[l].moe;
    fwd_state *s = f->s;
    fwd_moe *x = s->moe;
    int n = f->n, E = c->n_experts, K = c->n_experts_used, dim = c->dim, ldz = E + 1;
    /* the router (and the shared expert's gate) over every token: f32, never repacked */
    plan_pass rp = {.w = {b->router, b->sh_router}, .n = b->sh_router ? 2 : 1, .rows = E + (b->sh_router != NULL),
                    .align = MOE_ALIGN, .act_group = 1, .bytes = (double)b->router->nbytes, .nth = 1};
    mm_out ro[] = {{b->router, x->z, ldz}, {b->sh_router, x->z + E, ldz}};
    matmul_job rj = {.m = m, .s = s, .out = ro, .n_out = rp.n, .pass = &rp, .x = s->xb, .ldx = dim, .nt = n};
    run_matmuls(&rj, NULL);
    for (int t = 0; b->router_bias && t < n; t++) add_bias(x->z + (size_t)t * ldz, b->router_bias, 0, E);
    /* each token's route, then its slots grouped by expert (a counting sort: token order kept) */
    memset(x->count, 0, (size_t)E * sizeof(int));
    for (int t = 0; t < n; t++) {
        if (c->moe->router == MOE_SIGMOID_BIAS)
            moe_route_sigmoid(c->moe_renorm, c->moe_scale, b->choice_bias, x->z + (size_t)t * ldz, E, K,
                              x->ids + (size_t)t * K, x->w + (size_t)t * K, x->p, x->pairs);
        else
            moe_route(c->moe->router, c->moe_renorm, x->z + (size_t)t * ldz, E, K, x->ids + (size_t)t * K,
                      x->w + (size_t)t * K, x->p, x->pairs);
        for (int k = 0; k < K; k++) x->count[x->ids[(size_t)t * K + k]]++;
    }
    int ng = 0, start = 0;
    for (int e = 0; e < E; e++) {
        if (!x->count[e]) continue;
        size_t I = (size_t)c->expert_dim;
        x->groups[ng++] = (moe_group){b->gate[e], b->up[e], b->down[e], b->gate_bias ? b->gate_bias + e * I : NULL,
                                      b->up_bias ? b->up_bias + e * I : NULL,
                                      b->down_bias ? b->down_bias + (size_t)e * dim : NULL, x->x + (size_t)start * dim, 0,
                                      c->expert_dim, x->h + (size_t)start * c->expert_dim,
                                      x->h2 + (size_t)start * c->expert_dim, x->y + (size_t)start * dim, {0}, {0}};
        start += x->count[e];
        x->count[e] = ng; /* now the group's index + 1 */
    }
    for (int t = 0; t < n; t++)
        for (int k = 0; k < K; k++) {
            moe_group *g = &x->groups[x->count[x->ids[(size_t)t * K + k]] - 1];
            int r = (int)((g->x - x->x) / dim) + g->n++;
            x->row[(size_t)t * K + k] = r;
            memcpy(x->x + (size_t)r * dim, s->xb + (size_t)t * dim, (size_t)dim * sizeof(float));
        }
    int rows = n * K, ne = ng;
    if (b->sh_gate)
        x->groups[ng++] = (moe_group){b->sh_gate,  b->sh_up, b->sh_down, NULL, NULL, NULL, s->xb, n, c->shared_dim,
                                      x->sh,       x->sh2,   x->shy,     {0},  {0}};
    if (s->fast) { /* every row quantized once, each group reading its slice */
        moe_quantize(m, s, x->x, rows, dim, moe_act_group(m, b->gate[0], b->up[0]), &x->qx);
        if (b->sh_gate) moe_quantize(m, s, s->xb, n, dim, moe_act_group(m, b->sh_gate, b->sh_up), &x->qsx);
        for (int i = 0; i < ng; i++)
            x->groups[i].qx = i < ne ? q8_rows(&x->qx, (int)((x->groups[i].x - x->x) / dim), x->groups[i].n) : x->qsx;
    }
    moe_phase(m, s, x->groups, ng, 0);
    if (s->fast) {
        moe_quantize(m, s, x->h, rows, c->expert_dim, moe_act_group(m, b->down[0], NULL), &x->qh);
        if (b->sh_gate) moe_quantize(m, s, x->sh, n, c->shared_dim, moe_act_group(m, b->sh_down, NULL), &x->qsh);
        for (int i = 0; i < ng; i++)
            x->groups[i].qh = i < ne ? q8_rows(&x->qh, (int)((x->groups[i].x - x->x) / dim), x->groups[i].n) : x->qsh;
    }
    moe_phase(m, s, x->groups, ng, 1);
    /* per token: sum_k w_k y_k in slot order (each product rounded, as transformers' weighted
     * rows summed over the slots) [+ sigmoid(z) * shared], then the residual */
    float rm = c->residual_mult;
    for (int t = 0; t < n; t++) {
        float *xt = s->x + (size_t)t * dim, *acc = s->xb + (size_t)t * dim; /* xb's row t is read no more */
        const float *w = x->w + (size_t)t * K;
        const int *row = x->row + (size_t)t * K;
        for (int d = 0; d < dim; d++) acc[d] = x->y[(size_t)row[0] * dim + d] * w[0];
        for (int k = 1; k < K; k++) {
            const float *y = x->y + (size_t)row[k] * dim;
            for (int d = 0; d < dim; d++) acc[d] += y[d] * w[k];
        }
        if (b->sh_gate) {
            float gz = x->z[(size_t)t * ldz + E], sg = 1.0f / (1.0f + expf(-gz));
            const float *y = x->shy + (size_t)t * dim;
            for (int d = 0; d < dim; d++) acc[d] += sg * y[d];
        }
        for (int d = 0; d < dim; d++) xt[d] += acc[d] * rm;
    }
}

/* [x += rmsnorm(xb)]: Gemma 3's post-feedforward norm. */
static void stage_post_ffn_norm(fwd_call *f, int l) {
    const float *w = f->m->layers[l].post_ffn_norm;
    if (w) run_rmsnorm(f->m, f->s, w, f->n, 1);
}

/* ---- per-layer inputs (ARCH_PER_LAYER_INPUT) and the layer scalar ------------------------ */

/* y (nt, ldy) = x (nt, ldx) @ w^T with f32 activations on the file layout whatever the mode: matrices
 * the plan does not carry (the per-layer inputs' projections, a few percent of a layer's bytes), split
 * by rows over the threads their bytes pay for. */
typedef struct {
    const model *m;
    const tensor *w;
    const float *x;
    int ldx, nt, ldy;
    float *y;
} f32_job;

static void matmul_f32_task(void *ctx, int ith, int nth) {
    const f32_job *j = ctx;
    const kernels *k = j->m->kern, *ref = kernels_scalar();
    int rows = (int)j->w->shape[0], cols = (int)j->w->shape[1], r0, r1;
    pool_split(rows, 16, ith, nth, &r0, &r1);
    matmul_fn fn = k->matmul[j->w->type] ? k->matmul[j->w->type] : ref->matmul[j->w->type];
    if (r0 < r1) fn(j->w->data, dtype_row_bytes(j->w->type, cols), cols, r0, r1, j->x, j->ldx, j->nt, j->y, j->ldy);
}

static void matmul_f32(const fwd_call *f, const tensor *w, const float *x, int ldx, int nt, float *y, int ldy) {
    f32_job j = {f->m, w, x, ldx, nt, ldy, y};
    int nth = plan_threads(&f->m->plan, (double)w->nbytes * nt);
    if (nth <= 1) matmul_f32_task(&j, 0, 1);
    else pool_run_n(f->m->pool, matmul_f32_task, &j, nth);
}

/* Each token's inputs to every layer (transformers' get_per_layer_inputs and project_per_layer_inputs),
 * from its scaled embedding x0 (s->x): pli = (rmsnorm(x0 @ Wplmp^T * dim^-0.5, per layer) +
 * E_pl[id] * sqrt(P)) * 2^-0.5, every product rounded to f32 as there. The table row of a token is
 * read from the mapping, nothing else of the table. */
static void stage_per_layer_inputs(fwd_call *f) {
    const model *m = f->m;
    const model_config *c = &m->cfg;
    fwd_state *s = f->s;
    int P = c->ple_dim, LP = c->n_layers * P;
    float proj_scale = (float)pow((double)c->dim, -0.5), tok_scale = (float)sqrt((double)P);
    float half = (float)pow(2.0, -0.5);
    float *row = s->pl_h; /* (LP) scratch: the layers' use of pl_h comes later */
    matmul_f32(f, m->ple_proj, s->x, c->dim, f->n, s->pli, LP);
    for (int i = 0, t = 0; i < f->nseg; i++)
        for (int k = 0; k < f->segs[i].n; k++, t++) {
            float *p = s->pli + (size_t)t * LP;
            int id = f->segs[i].ids[k];
            tensor_row_f32(m->ple_embd, id < c->ple_vocab ? id : 0, row);
            for (int l = 0; l < c->n_layers; l++) {
                float *pl = p + (size_t)l * P;
                for (int d = 0; d < P; d++) pl[d] *= proj_scale;
                ops_rmsnorm(pl, pl, m->ple_norm, P, c->rms_eps);
                for (int d = 0; d < P; d++) pl[d] = (pl[d] + row[(size_t)l * P + d] * tok_scale) * half;
            }
        }
}

/* Layer l's per-layer input: x += rmsnorm(pl_proj . (gelu_tanh(pl_gate . x) * pli_l)) [* w]; then, with a
 * layer scalar, the whole stream times it. */
static void stage_per_layer_input(fwd_call *f, int l) {
    const model *m = f->m;
    const model_config *c = &m->cfg;
    const layer_weights *L = &m->layers[l];
    fwd_state *s = f->s;
    int P = c->ple_dim, dim = c->dim;
    if (L->pl_gate) {
        matmul_f32(f, L->pl_gate, s->x, dim, f->n, s->pl_h, P);
        for (int t = 0; t < f->n; t++)
            ops_gelu_tanh_mul(s->pl_h + (size_t)t * P, s->pli + (size_t)t * c->n_layers * P + (size_t)l * P, P);
        matmul_f32(f, L->pl_proj, s->pl_h, P, f->n, s->xb, dim);
        run_rmsnorm(m, s, L->pl_norm, f->n, 1);
    }
    if (L->out_scale)
        for (size_t i = 0; i < (size_t)f->n * dim; i++) s->x[i] *= L->out_scale[0];
}

/* ---- the ends of the pass -------------------------------------------------------------- */

/* x = the embedding rows of every sequence's tokens [* sqrt(dim)], one after the other;
 * each row's sequence and position; the RoPE angles. */
static void stage_embed(fwd_call *f) {
    const model *m = f->m;
    fwd_state *s = f->s;
    int dim = m->cfg.dim, n = 0;
    for (int i = 0; i < f->nseg; i++)
        for (int t = 0; t < f->segs[i].n; t++, n++) {
            float *x = s->x + (size_t)n * dim;
            s->tok_seg[n] = i;
            s->tok_pos[n] = f->segs[i].pos + t;
            tensor_row_f32(m->tok_embd, f->segs[i].ids[t], x);
            if (m->embed_scale != 1.0f)
                for (int k = 0; k < dim; k++) x[k] *= m->embed_scale;
        }
    f->n = n;
    rope_tables(m, s, f->segs, n);
    if (m->cfg.flags & ARCH_PER_LAYER_INPUT) stage_per_layer_inputs(f);
    for (int i = 0; i < f->nseg; i++) {
        kv_cache *kv = &f->segs[i].kv->kv;
        if (kv->lin && (f->segs[i].n > 1 || f->segs[i].pos == 0)) kv_lin_snapshot(kv, f->segs[i].pos);
        if (f->segs[i].pos + f->segs[i].n > kv->written) kv->written = f->segs[i].pos + f->segs[i].n;
    }
}

/* logits = rmsnorm(x) @ lm_head^T [/ scale] [soft-cap]: every token's when the caller asked
 * for them (scoring: perplexity, prompt log-probabilities; one GEMM), else each sequence's
 * last token's (prefill and decode both sample from it; one pass over those rows). */
static void stage_logits(fwd_call *f) {
    const model *m = f->m;
    const model_config *c = &m->cfg;
    fwd_state *s = f->s;
    int dim = c->dim, own = f->nseg == 1 && f->segs[0].kv == s;
    if (s->logits_all && own) {
        run_rmsnorm(m, s, m->out_norm, f->n, 0);
        mm_out lm[] = {{m->lm_head, s->logits_all, c->vocab_size}};
        matmul_job j = {.m = m, .s = s, .out = lm, .n_out = 1, .pass = &m->plan.lm_head, .x = s->xb, .ldx = dim,
                        .nt = f->n, .post = post_logits};
        run_matmuls(&j, NULL);
        memcpy(s->logits, s->logits_all + (size_t)(f->n - 1) * c->vocab_size, (size_t)c->vocab_size * sizeof(float));
        return;
    }
    for (int i = 0, end = 0; i < f->nseg; i++) {
        end += f->segs[i].n;
        ops_rmsnorm(s->xb + (size_t)i * dim, s->x + (size_t)(end - 1) * dim, m->out_norm, dim, c->rms_eps);
    }
    mm_out lm[] = {{m->lm_head, own ? s->logits : s->seq_logits, c->vocab_size}};
    matmul_job j = {.m = m, .s = s, .out = lm, .n_out = 1, .pass = &m->plan.lm_head, .x = s->xb, .ldx = dim,
                    .nt = f->nseg, .post = post_logits, .segs = own ? NULL : f->segs};
    run_matmuls(&j, NULL);
}

/* ---- the pass ------------------------------------------------------------------------ */

void forward_batch(const model *m, fwd_state *s, const fwd_seg *segs, int nseg) {
    fwd_call f = {.m = m, .s = s, .segs = segs, .nseg = nseg};
    stage_embed(&f);
    f.fold = f.n >= 2 * pool_size(m->pool) && f.n <= FOLD_MAX_T;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        stage_attn_norm(&f, l);
        if (m->cfg.layer_flags[l] & LAYER_LINEAR) {
            stage_linear_in(&f, l);
            if (m->cfg.flags & ARCH_SHORT_CONV) stage_shortconv(&f, l);
            else stage_deltanet(&f, l);
        } else {
            stage_qkv(&f, l);
            stage_attention(&f, l);
        }
        stage_o(&f, l);
        stage_post_attn_norm(&f, l);
        stage_ffn_norm(&f, l);
        if (m->layers[l].moe) {
            stage_experts(&f, l);
        } else {
            stage_gate_up(&f, l);
            stage_down(&f, l);
        }
        stage_post_ffn_norm(&f, l);
        stage_per_layer_input(&f, l);
    }
    if (!s->no_logits) stage_logits(&f);
}

void forward(const model *m, fwd_state *s, const int32_t *ids, int n, int pos) {
    fwd_seg g = {s, ids, n, pos, s->seq_end};
    forward_batch(m, s, &g, 1);
}
