/* forward.c - the Llama forward pass, stage by stage in the order data flows:
 *
 *   embed -> for each layer:
 *              rmsnorm -> q,k,v matmuls -> rope -> causal GQA attention over the
 *              KV cache -> o matmul -> residual -> rmsnorm -> gate,up matmuls ->
 *              swiglu -> down matmul -> residual
 *         -> final rmsnorm (last token) -> lm_head -> logits
 *
 * f32 activations throughout; weights are read in their stored dtype by the
 * kernels. In fast mode (repacked Q4_0 / Q4_1 / Q8_0 weights) each matmul input
 * is quantized to int8 once, for all the matmuls sharing it (Q/K/V, gate/up).
 * Matmuls and attention are split over threads by output rows / heads, each
 * output computed by one thread, so results do not depend on the thread count. */
#include "forward.h"

#include <math.h>
#include <stdlib.h>

#include "affine.h"
#include "ops.h"
#include "util.h"

/* The weights as the int8-activation kernels take them (fast mode): GGUF types
 * repacked at load (repack.c), MLX affine ones in place (affine.c); NULL: f32 route. */
static const void *q8_weights(const tensor *w) { return w->packed ? w->packed : affine_q8_weights(w); }

/* Fast mode: some matrix takes the int8-activation kernels. */
static int weights_packed(const model *m) {
    if (q8_weights(m->lm_head)) return 1;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const layer_weights *L = &m->layers[l];
        if (q8_weights(L->wq) || q8_weights(L->wk) || q8_weights(L->wv) || q8_weights(L->wo) ||
            q8_weights(L->w_gate) || q8_weights(L->w_up) || q8_weights(L->w_down))
            return 1;
    }
    return 0;
}

static int max3(int a, int b, int c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

/* Buffers of a q8_act for up to nt tokens of up to cols columns; 1 on success. */
static int q8_act_alloc(q8_act *a, int nt, int cols) {
    size_t quads = (size_t)q8_quads(cols);
    a->q = aligned_alloc(64, (size_t)nt * quads * 128);
    a->d = malloc((size_t)nt * quads * 4 * sizeof(float));
    a->s = malloc((size_t)nt * quads * 4 * sizeof(float));
    return a->q && a->d && a->s;
}

int fwd_state_init(fwd_state *s, const model *m, int ctx, char *err) {
    const model_config *c = &m->cfg;
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->chunk = ctx < 256 ? ctx : 256;
    size_t kv = (size_t)c->n_layers * (size_t)ctx * (size_t)(c->n_kv_heads * c->head_dim);
    size_t qd = (size_t)c->n_heads * c->head_dim, ch = (size_t)s->chunk;
    /* calloc of large blocks maps zero pages lazily: the cache costs memory as it fills */
    s->k_cache = calloc(kv, sizeof(float));
    s->v_cache = calloc(kv, sizeof(float));
    s->x = malloc(ch * c->dim * sizeof(float));
    s->xb = malloc(ch * c->dim * sizeof(float));
    s->q = malloc(ch * qd * sizeof(float));
    s->att_out = malloc(ch * qd * sizeof(float));
    s->hb = malloc(ch * c->hidden_dim * sizeof(float));
    s->hb2 = malloc(ch * c->hidden_dim * sizeof(float));
    s->scores = malloc((size_t)pool_size(m->pool) * ctx * sizeof(float));
    s->logits = malloc((size_t)c->vocab_size * sizeof(float));
    int xq_ok = !weights_packed(m) || q8_act_alloc(&s->xq, s->chunk, max3(c->dim, (int)qd, c->hidden_dim));
    if (!s->k_cache || !s->v_cache || !s->x || !s->xb || !s->q || !s->att_out || !s->hb || !s->hb2 ||
        !s->scores || !s->logits || !xq_ok) {
        fwd_state_free(s);
        return errf(err, "out of memory for a context of %d tokens", ctx);
    }
    return 0;
}

void fwd_state_free(fwd_state *s) {
    free(s->k_cache);
    free(s->v_cache);
    free(s->x);
    free(s->xb);
    free(s->q);
    free(s->att_out);
    free(s->hb);
    free(s->hb2);
    free(s->scores);
    free(s->logits);
    free(s->xq.q);
    free(s->xq.d);
    free(s->xq.s);
    memset(s, 0, sizeof *s);
}

/* ---- matmuls over threads ---------------------------------------------------------- */

/* One output of a group of matmuls that share their input x: y (nt, ldy) = x @ W^T. */
typedef struct {
    const tensor *w;  /* (rows, cols) */
    float *y;
    int ldy;
} mm_out;

typedef struct {
    const model *m;
    const mm_out *out;
    int n_out, total_rows;
    const float *x;      /* (nt, ldx) f32 input */
    int ldx, nt;
    const q8_act *xq;    /* x quantized to int8 (fast mode), or NULL when no weight is packed */
} matmul_job;

/* Rows [r0, r1) of one output: repacked weights take the int8 activations,
 * the others (and exact mode) the f32 ones in the file layout. */
static void matmul_rows(const matmul_job *j, const mm_out *o, int r0, int r1) {
    const tensor *w = o->w;
    const kernels *k = j->m->kern, *ref = kernels_scalar();
    int rows = (int)w->shape[0], cols = (int)w->shape[1];
    const void *q8w = q8_weights(w);
    if (q8w) {
        matmul_q8_fn fn = k->matmul_q8[w->type] ? k->matmul_q8[w->type] : ref->matmul_q8[w->type];
        fn(q8w, rows, cols, r0, r1, j->xq, o->y, o->ldy);
    } else {
        matmul_fn fn = k->matmul[w->type] ? k->matmul[w->type] : ref->matmul[w->type];
        fn(w->data, dtype_row_bytes(w->type, cols), cols, r0, r1, j->x, j->ldx, j->nt, o->y, o->ldy);
    }
}

/* The rows of all outputs, end to end, split statically over the threads: one
 * pool_run (one barrier) for Q, K and V, or for gate and up. */
static void matmul_task(void *ctx, int ith, int nth) {
    const matmul_job *j = ctx;
    int b, e;
    pool_split(j->total_rows, 16, ith, nth, &b, &e);
    for (int i = 0, base = 0; i < j->n_out; base += (int)j->out[i].w->shape[0], i++) {
        int rows = (int)j->out[i].w->shape[0];
        int r0 = b - base > 0 ? b - base : 0, r1 = e - base < rows ? e - base : rows;
        if (r0 < r1) matmul_rows(j, &j->out[i], r0, r1);
    }
}

static void quantize_task(void *ctx, int ith, int nth) {
    const matmul_job *j = ctx;
    const kernels *k = j->m->kern;
    int t0, t1;
    pool_split(j->nt, 1, ith, nth, &t0, &t1);
    if (t0 < t1) (k->quantize_act ? k->quantize_act : kernels_scalar()->quantize_act)(j->x, j->ldx, t0, t1, j->xq);
}

/* out[i].y = x @ out[i].w^T for weights sharing the input x (nt, ldx). In fast
 * mode x is quantized to int8 once here, for all of them. */
static void matmuls(const model *m, fwd_state *s, const float *x, int ldx, int nt, const mm_out *out, int n_out) {
    matmul_job j = {.m = m, .out = out, .n_out = n_out, .x = x, .ldx = ldx, .nt = nt};
    int packed = 0;
    for (int i = 0; i < n_out; i++) {
        j.total_rows += (int)out[i].w->shape[0];
        packed |= q8_weights(out[i].w) != NULL;
    }
    if (packed) {
        s->xq.nt = nt;
        s->xq.cols = (int)out[0].w->shape[1];
        s->xq.quads = q8_quads(s->xq.cols);
        j.xq = &s->xq;
        if (nt >= 2 * pool_size(m->pool)) {
            pool_run(m->pool, quantize_task, &j);
        } else {
            quantize_task(&j, 0, 1);
        }
    }
    pool_run(m->pool, matmul_task, &j);
}

/* ---- attention ------------------------------------------------------------------- */

typedef struct {
    const model *m;
    fwd_state *s;
    int layer, n, pos;
} attn_job;

/* For token t (position pos + t) and query head h: softmax(q.K^T / sqrt(hd)) V over
 * positions 0..pos+t (the causal mask), with K/V from kv head h / (n_heads / n_kv_heads). */
static void attention_task(void *ctx, int ith, int nth) {
    const attn_job *j = ctx;
    const model_config *c = &j->m->cfg;
    const kernels *k = j->m->kern;
    int hd = c->head_dim, kvd = c->n_kv_heads * hd, qd = c->n_heads * hd;
    int group = c->n_heads / c->n_kv_heads;
    float scale = 1.0f / sqrtf((float)hd);
    const float *kc = j->s->k_cache + (size_t)j->layer * j->s->ctx * kvd;
    const float *vc = j->s->v_cache + (size_t)j->layer * j->s->ctx * kvd;
    float *sc = j->s->scores + (size_t)ith * j->s->ctx;
    int total = j->n * c->n_heads, b, e;
    pool_split(total, 1, ith, nth, &b, &e);
    for (int task = b; task < e; task++) {
        int t = task / c->n_heads, h = task % c->n_heads, kvh = h / group;
        ops_attend(k, j->s->att_out + (size_t)t * qd + (size_t)h * hd, j->s->q + (size_t)t * qd + (size_t)h * hd,
                   kc + (size_t)kvh * hd, vc + (size_t)kvh * hd, j->pos + t + 1, hd, (size_t)kvd, scale, sc);
    }
}

/* ---- the pass --------------------------------------------------------------------- */

void forward(const model *m, fwd_state *s, const int32_t *ids, int n, int pos) {
    const model_config *c = &m->cfg;
    int dim = c->dim, hd = c->head_dim, kvd = c->n_kv_heads * hd, qd = c->n_heads * hd;
    int hid = c->hidden_dim;

    for (int t = 0; t < n; t++) tensor_row_f32(m->tok_embd, ids[t], s->x + (size_t)t * dim);

    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = &m->layers[l];
        float *kc = s->k_cache + ((size_t)l * s->ctx + pos) * kvd;
        float *vc = s->v_cache + ((size_t)l * s->ctx + pos) * kvd;

        for (int t = 0; t < n; t++)
            ops_rmsnorm(s->xb + (size_t)t * dim, s->x + (size_t)t * dim, L->attn_norm, dim, c->rms_eps);
        /* keys and values go straight to the cache */
        matmuls(m, s, s->xb, dim, n, (mm_out[]){{L->wq, s->q, qd}, {L->wk, kc, kvd}, {L->wv, vc, kvd}}, 3);
        for (int t = 0; t < n; t++) {
            for (int h = 0; h < c->n_heads; h++)
                ops_rope(s->q + (size_t)t * qd + (size_t)h * hd, hd, m->rope_inv_freq, pos + t, c->rope_interleaved);
            for (int h = 0; h < c->n_kv_heads; h++)
                ops_rope(kc + (size_t)t * kvd + (size_t)h * hd, hd, m->rope_inv_freq, pos + t, c->rope_interleaved);
        }
        attn_job aj = {m, s, l, n, pos};
        pool_run(m->pool, attention_task, &aj);
        matmuls(m, s, s->att_out, qd, n, (mm_out[]){{L->wo, s->xb, dim}}, 1);
        for (size_t i = 0; i < (size_t)n * dim; i++) s->x[i] += s->xb[i];

        for (int t = 0; t < n; t++)
            ops_rmsnorm(s->xb + (size_t)t * dim, s->x + (size_t)t * dim, L->ffn_norm, dim, c->rms_eps);
        matmuls(m, s, s->xb, dim, n, (mm_out[]){{L->w_gate, s->hb, hid}, {L->w_up, s->hb2, hid}}, 2);
        ops_swiglu(s->hb, s->hb2, n * hid);
        matmuls(m, s, s->hb, hid, n, (mm_out[]){{L->w_down, s->xb, dim}}, 1);
        for (size_t i = 0; i < (size_t)n * dim; i++) s->x[i] += s->xb[i];
    }

    /* only the last token's logits are needed: prefill and decode both sample from it */
    float *last = s->x + (size_t)(n - 1) * dim;
    ops_rmsnorm(s->xb, last, m->out_norm, dim, c->rms_eps);
    matmuls(m, s, s->xb, dim, 1, (mm_out[]){{m->lm_head, s->logits, c->vocab_size}}, 1);
}
