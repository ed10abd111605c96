/* test_plan.c - the matmul plan (src/model/plan.h) and the weight arena laid out by it: every
 * repacked matrix's runs of rows (tensor.parts) are the plan's thread shares, in the
 * plan's order (each thread's share of every pass, thread after thread), at ascending
 * addresses; the routes match what the repacker did. On the default model (Q4_1 layers,
 * a Q8_0 lm_head) and the tiny Q6_K fixture (rows not a multiple of 8), at 1 to 3
 * threads. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "model/loader.h"
#include "model/plan.h"

#define REAL_MODEL ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"
#define TINY_Q6K "tests/fixtures/tiny-gguf/tiny-gguf.Q6_K.gguf"

typedef struct {
    const tensor *t[4096];
    int row0[4096], row1[4096];
    int n;
} emitted;

static void record(void *ctx, const tensor *w, int row0, int row1) {
    emitted *e = ctx;
    cr_assert_lt(e->n, 4096);
    e->t[e->n] = w, e->row0[e->n] = row0, e->row1[e->n] = row1;
    e->n++;
}

static void check_arena(const char *path, int threads, int split_all) {
    model_options o = {.n_threads = threads, .split_all = split_all};
    model *m;
    int io;
    char err[512];
    cr_assert_eq(model_open(path, &o, &m, &io, err), 0, "%s: %s", path, err);
    cr_assert_eq(m->plan.n_threads, threads);
    static emitted e;
    e.n = 0;
    for (int part = 0; part < threads; part++) plan_thread_rows(&m->plan, part, record, &e);
    /* every run the plan emits for a matrix in the arena is one of its parts, in order */
    int seen[4096] = {0}, arena_runs = 0;
    const uint8_t *last = NULL;
    for (int i = 0; i < e.n; i++) {
        const tensor *t = e.t[i];
        if (!t->nparts) continue;
        arena_runs++;
        int k = 0;
        for (int j = 0; j < i; j++) k += e.t[j] == t;
        cr_assert_lt(k, t->nparts, "%s: more plan runs than parts (%d threads)", t->name, threads);
        cr_expect_eq(t->parts[k].row0, e.row0[i], "%s part %d: row %d, plan %d (%d threads)", t->name, k,
                     t->parts[k].row0, e.row0[i], threads);
        int end = k + 1 < t->nparts ? t->parts[k + 1].row0 : (int)t->shape[0];
        cr_expect_eq(end, e.row1[i], "%s part %d ends at %d, plan %d", t->name, k, end, e.row1[i]);
        cr_expect(last == NULL || (const uint8_t *)t->parts[k].data > last, "%s part %d out of the plan's order",
                  t->name, k);
        last = t->parts[k].data;
        seen[i] = 1;
    }
    cr_expect_gt(arena_runs, 0, "%s: nothing in the arena", path);
    /* and every part of every arena matrix was emitted */
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (int p = 0; p < PLAN_LAYER_PASSES; p++) {
            const plan_pass *pp = plan_layer(&m->plan, l, p);
            for (int i = 0; i < pp->n; i++) {
                const tensor *t = pp->w[i];
                int runs = 0;
                for (int j = 0; j < e.n; j++) runs += e.t[j] == t && seen[j];
                cr_expect_eq(runs, t->nparts, "%s: %d parts, %d plan runs", t->name, t->nparts, runs);
                /* the route: int8 exactly where the matrix was packed or is read in place */
                cr_expect_eq(pp->int8, plan_q8_weights(t) != NULL, "%s: plan int8 %d", t->name, pp->int8);
            }
        }
    model_free(m);
}

Test(plan, arena_parts_are_the_plans_shares) {
    for (int t = 1; t <= 3; t++) {
        check_arena(REAL_MODEL, t, 0);
        check_arena(TINY_Q6K, t, t == 3);
    }
    check_arena(REAL_MODEL, 16, 0); /* passes on fewer threads than the pool (below) */
}

/* Each pass runs on the threads its weights pay for (PLAN_SLICE_BYTES per thread and
 * token), 1 .. the pool's, no more than its pieces of `align` rows; more for more tokens;
 * all of them (up to the pieces) with split_all. The default model at 16 threads: q/k/v
 * (346 KB) on 6, o (207 KB) on 4, down (553 KB) on 9, gate/up on its 12 pieces. */
Test(plan, pass_threads_follow_the_work) {
    static const int want_nth[PLAN_LAYER_PASSES] = {6, 4, 12, 9};
    for (int split_all = 0; split_all <= 1; split_all++) {
        model_options o = {.n_threads = 16, .split_all = split_all};
        model *m;
        int io;
        char err[512];
        cr_assert_eq(model_open(REAL_MODEL, &o, &m, &io, err), 0, "%s", err);
        for (int p = 0; p < PLAN_LAYER_PASSES; p++) {
            const plan_pass *pp = plan_layer(&m->plan, 0, p);
            double bytes = 0;
            for (int i = 0; i < pp->n; i++) bytes += (double)pp->w[i]->nbytes;
            int units = (pp->rows + pp->align - 1) / pp->align;
            int want = split_all ? 16 : (int)((bytes + PLAN_SLICE_BYTES - 1) / PLAN_SLICE_BYTES);
            want = want > units ? units : want > 16 ? 16 : want;
            cr_expect_eq(pp->nth, want, "pass %d: %d threads for %.0f bytes (split_all %d)", p, pp->nth, bytes,
                         split_all);
            if (!split_all) cr_expect_eq(pp->nth, want_nth[p], "pass %d: %d threads", p, pp->nth);
            cr_expect_eq(plan_pass_threads(&m->plan, pp, 128), units < 16 ? units : 16, "pass %d: prefill", p);
        }
        cr_expect_eq(plan_threads(&m->plan, PLAN_SLICE_BYTES), split_all ? 16 : 1);
        cr_expect_eq(plan_threads(&m->plan, PLAN_SLICE_BYTES + 1), split_all ? 16 : 2);
        model_free(m);
    }
}

/* Exact mode: every route is f32, and nothing is packed. */
Test(plan, exact_mode_routes_f32) {
    model_options o = {.n_threads = 2, .exact = 1};
    model *m;
    int io;
    char err[512];
    cr_assert_eq(model_open(TINY_Q6K, &o, &m, &io, err), 0, "%s", err);
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (int p = 0; p < PLAN_LAYER_PASSES; p++) cr_expect_eq(plan_layer(&m->plan, l, p)->int8, 0);
    cr_expect_eq(m->plan.lm_head.int8, 0);
    cr_expect_null(m->arena);
    model_free(m);
}

/* The split covers every row once, in whole pieces of the pass's alignment. */
Test(plan, shares_cover_the_rows) {
    model_options o = {.n_threads = 3};
    model *m;
    int io;
    char err[512];
    cr_assert_eq(model_open(REAL_MODEL, &o, &m, &io, err), 0, "%s", err);
    const plan_pass *pp = plan_layer(&m->plan, 0, PASS_GATE_UP);
    cr_expect(pp->side_by_side);
    cr_expect_eq(pp->align % 128, 0, "gate/up pieces are whole quads of down's int8 input: %d", pp->align);
    for (int p = 0; p < PLAN_LAYER_PASSES; p++) {
        pp = plan_layer(&m->plan, 0, p);
        int next = 0;
        for (int part = 0; part < 3; part++) {
            int b, e;
            plan_pass_share(pp, part, 3, &b, &e);
            cr_expect_eq(b, next, "pass %d part %d starts at %d", p, part, b);
            cr_expect(e == pp->rows || e % pp->align == 0, "pass %d part %d ends at %d", p, part, e);
            next = e;
        }
        cr_expect_eq(next, pp->rows);
    }
    model_free(m);
}
