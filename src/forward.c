/* forward.c - the Llama forward pass, stage by stage in the order data flows:
 *
 *   embed -> for each layer:
 *              rmsnorm -> q,k,v matmuls -> rope -> causal GQA attention over the
 *              KV cache -> o matmul -> residual -> rmsnorm -> gate,up matmuls ->
 *              swiglu -> down matmul -> residual
 *         -> final rmsnorm (last token) -> lm_head -> logits
 *
 * f32 activations throughout; weights are read in their stored dtype by the
 * kernels. Matmuls and attention are split over threads by output rows / heads,
 * each output computed by one thread, so results do not depend on the thread count. */
#include "forward.h"

#include <math.h>
#include <stdlib.h>

#include "ops.h"
#include "util.h"

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
    if (!s->k_cache || !s->v_cache || !s->x || !s->xb || !s->q || !s->att_out || !s->hb || !s->hb2 ||
        !s->scores || !s->logits) {
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
    memset(s, 0, sizeof *s);
}

/* ---- matmul over threads ---------------------------------------------------------- */

typedef struct {
    matmul_fn fn;
    const tensor *w;
    size_t row_bytes;
    int rows, cols;
    const float *x;
    int ldx, nt;
    float *y;
    int ldy;
} matmul_job;

static void matmul_task(void *ctx, int ith, int nth) {
    const matmul_job *j = ctx;
    int r0, r1;
    pool_split(j->rows, 16, ith, nth, &r0, &r1);
    if (r0 < r1) j->fn(j->w->data, j->row_bytes, j->cols, r0, r1, j->x, j->ldx, j->nt, j->y, j->ldy);
}

/* y (nt, ldy) = x (nt, ldx) @ W^T, W (rows, cols). */
static void matmul(const model *m, const tensor *w, const float *x, int ldx, int nt, float *y, int ldy) {
    matmul_job j = {
        .fn = m->kern->matmul[w->type] ? m->kern->matmul[w->type] : kernels_scalar()->matmul[w->type],
        .w = w,
        .rows = (int)w->shape[0],
        .cols = (int)w->shape[1],
        .row_bytes = dtype_row_bytes(w->type, w->shape[1]),
        .x = x, .ldx = ldx, .nt = nt, .y = y, .ldy = ldy,
    };
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
        matmul(m, L->wq, s->xb, dim, n, s->q, qd);
        matmul(m, L->wk, s->xb, dim, n, kc, kvd); /* keys and values go straight to the cache */
        matmul(m, L->wv, s->xb, dim, n, vc, kvd);
        for (int t = 0; t < n; t++) {
            for (int h = 0; h < c->n_heads; h++)
                ops_rope(s->q + (size_t)t * qd + (size_t)h * hd, hd, m->rope_inv_freq, pos + t, c->rope_interleaved);
            for (int h = 0; h < c->n_kv_heads; h++)
                ops_rope(kc + (size_t)t * kvd + (size_t)h * hd, hd, m->rope_inv_freq, pos + t, c->rope_interleaved);
        }
        attn_job aj = {m, s, l, n, pos};
        pool_run(m->pool, attention_task, &aj);
        matmul(m, L->wo, s->att_out, qd, n, s->xb, dim);
        for (size_t i = 0; i < (size_t)n * dim; i++) s->x[i] += s->xb[i];

        for (int t = 0; t < n; t++)
            ops_rmsnorm(s->xb + (size_t)t * dim, s->x + (size_t)t * dim, L->ffn_norm, dim, c->rms_eps);
        matmul(m, L->w_gate, s->xb, dim, n, s->hb, hid);
        matmul(m, L->w_up, s->xb, dim, n, s->hb2, hid);
        ops_swiglu(s->hb, s->hb2, n * hid);
        matmul(m, L->w_down, s->hb, hid, n, s->xb, dim);
        for (size_t i = 0; i < (size_t)n * dim; i++) s->x[i] += s->xb[i];
    }

    /* only the last token's logits are needed: prefill and decode both sample from it */
    float *last = s->x + (size_t)(n - 1) * dim;
    ops_rmsnorm(s->xb, last, m->out_norm, dim, c->rms_eps);
    matmul(m, m->lm_head, s->xb, dim, 1, s->logits, c->vocab_size);
}
