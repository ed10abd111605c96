/* repack.c - weight matrices rewritten at load for the int8-activation kernels, as the
 * matmul plan routes them (plan.h), by the packers of the type table (quant.h).
 *
 * The file interleaves a scale header with each block's payload, row after row,
 * so a kernel that computes several rows at once reads one stream per row plus
 * unaligned loads. The packed forms (layouts in kernels.h) interleave groups of
 * 8 rows at quad (128-column) granularity with the scales right before the
 * payload they belong to: a group is one contiguous stream, and its vectors are
 * already in the lane order vpdpbusd wants (4 rows x 4 blocks per vector). A
 * copy has about the file's size; once a tensor is copied, its pages of the
 * mapping are dropped (MADV_DONTNEED on a read-only private file mapping:
 * reading them again would just fault them back in from the file). */
#include "repack.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "plan.h"
#include "kernels/affine_kernels.h"
#include "kernels/kernels.h"
#include "quant/quant.h"
#include "base/util.h"

/* Whether t is to be repacked (the plan's route; without an int8 kernel for its packed
 * type in this table, a matrix keeps the file layout and the f32 route). */
static int will_pack(const model *m, const tensor *t) { return plan_route_of(m->kern, t) == ROUTE_PACKED; }

/* Rows [row0, row1) of t, packed into out as a matrix of their own (all of t: 0, rows). */
typedef struct {
    const tensor *t;
    int row0, row1;
    uint8_t *out;
    int populate;      /* each thread faults in its share of out first (see populate) */
    pack_rows_fn pack; /* the packer of t's layout: the kernel table's, else the type table's */
} repack_job;

/* The packer of the layout t packs as: the kernel table's if it has one (the same bytes). */
static pack_rows_fn packer(const kernels *k, const tensor *t) {
    dtype pt = dtype_info(t->type)->packs_as;
    return k && k->pack_rows[pt] ? k->pack_rows[pt] : DTYPE_TRAITS[pt].pk.pack_rows;
}

/* Rows [r0, r1) of j's matrix, counted from j->row0, by the packer of its layout (quant.h). */
static void repack_rows(const repack_job *j, int r0, int r1) {
    const tensor *t = j->t;
    dtype pt = dtype_info(t->type)->packs_as;
    size_t rb = dtype_row_bytes(t->type, t->shape[1]);
    const uint8_t *src = (const uint8_t *)t->data + (size_t)j->row0 * rb;
    j->pack(pt, src, j->row1 - j->row0, (int)t->shape[1], r0, r1, j->out);
}

/* Bytes of rows of t in its packed layout. */
static size_t packed_bytes(const tensor *t, int rows) {
    return q8w_matrix_bytes(dtype_info(t->type)->packs_as, rows, (int)(t->shape[1] / 32));
}

/* After packing: the tensor is its packed type now (its file pages are gone). */
static void became_packed(const tensor *t, const void *packed) {
    tensor *w = (tensor *)t;
    w->nbytes = packed_bytes(t, (int)t->shape[0]);
    w->type = dtype_info(t->type)->packs_as;
    w->packed = packed;
}

void repack_matrix(const tensor *t, void *out) {
    repack_job j = {t, 0, (int)t->shape[0], out, 0, packer(NULL, t)};
    repack_rows(&j, 0, j.row1);
}

void repack_row_f32(const tensor *t, int64_t row, float *out) {
    int rows = (int)t->shape[0];
    const uint8_t *pk = t->packed;
    for (int i = t->nparts - 1; i >= 0; i--) { /* the run of rows holding row, as a matrix of its own */
        if (row < t->parts[i].row0) continue;
        pk = t->parts[i].data;
        rows = (i + 1 < t->nparts ? t->parts[i + 1].row0 : rows) - t->parts[i].row0;
        row -= t->parts[i].row0;
        break;
    }
    DTYPE_TRAITS[t->type].pk.row_f32(t->type, pk, rows, (int)t->shape[1], (int)row, out);
}

static void populate(void *p, size_t n);

/* Whole groups of 8 rows per thread: a thread's rows are one byte range of the output. */
static void repack_task(void *ctx, int ith, int nth) {
    const repack_job *j = ctx;
    int r0, r1;
    pool_split(j->row1 - j->row0, Q8W_GROUP, ith, nth, &r0, &r1);
    if (r0 >= r1) return;
    if (j->populate) {
        size_t a = packed_bytes(j->t, r0), b = packed_bytes(j->t, r1);
        populate(j->out + a, b - a);
    }
    repack_rows(j, r0, r1);
}

/* ---- MLX affine 4-bit as Q4_1 -------------------------------------------------
 *
 * An MLX 4-bit matrix is Q4_1 in all but layout: per group of 32, 64 or 128
 * values w = scale * q + bias with q in 0..15, and Q4_1 is w = d * q + m per
 * block of 32. So in fast mode a matrix whose scales and biases are all exactly
 * f16 (bf16 values in f16's normal range are) is rewritten in the repacked
 * Q4_1 layout with one scale and bias per group (DT_Q4_1 for group 32,
 * DT_Q4_1G64 / DT_Q4_1G128 otherwise; nibbles in GGUF order, byte j = values
 * j and j + 16 of the block): it then takes the int8 kernels of GGUF Q4_1,
 * which stream 8-row groups (the MLX layout's kernel reads 4 row streams and
 * expands group scales per row). The copy has the file's size, so every
 * matrix is rewritten, the lm_head / embedding too. Any scale or bias that f16
 * cannot hold exactly leaves the matrix on the MLX-layout kernels. */
typedef struct {
    const tensor *t;
    dtype dt; /* DT_Q4_1, DT_Q4_1G64 or DT_Q4_1G128, by the group */
    uint8_t *out;
    atomic_int inexact; /* some scale or bias is not exactly an f16 */
} affine_job;

/* Row r of the affine matrix as Q4_1 file-layout blocks (nb * 20 bytes); 0 if a
 * scale or bias of the row is not exactly an f16. */
static int affine_row_q41(const affine_weights *a, int64_t cols, int64_t r, uint8_t *dst) {
    const uint8_t *q = (const uint8_t *)a->q + (size_t)r * (size_t)(cols / 2);
    int64_t ng = cols / a->group, bpg = a->group / 32;
    for (int64_t g = 0; g < ng; g++) {
        float sc = affine_param(a->scales, a->sdt, (size_t)(r * ng + g));
        float bs = affine_param(a->biases, a->sdt, (size_t)(r * ng + g));
        uint16_t hs = f32_to_f16(sc), hb = f32_to_f16(bs);
        if (f16_to_f32(hs) != sc || f16_to_f32(hb) != bs) return 0;
        for (int64_t k = 0; k < bpg; k++, q += 16, dst += 20) {
            memcpy(dst, &hs, 2);
            memcpy(dst + 2, &hb, 2);
            /* MLX: value j of the block in byte j / 2, low nibble first; Q4_1: byte j
             * holds values j (low) and j + 16 (high). With A, B the block's two
             * 8-byte halves (values 0..15, 16..31), byte k of E = values 2k, 2k + 16
             * and of O = values 2k + 1, 2k + 17. */
            uint64_t A, B;
            memcpy(&A, q, 8);
            memcpy(&B, q + 8, 8);
            const uint64_t lo = 0x0f0f0f0f0f0f0f0full;
            uint64_t E = (A & lo) | (B & lo) << 4, O = (A >> 4 & lo) | (B & ~lo);
            for (int i = 0; i < 8; i++) {
                dst[4 + 2 * i] = (uint8_t)(E >> 8 * i);
                dst[5 + 2 * i] = (uint8_t)(O >> 8 * i);
            }
        }
    }
    return 1;
}

static void affine_task(void *ctx, int ith, int nth) {
    affine_job *j = ctx;
    const tensor *t = j->t;
    int rows = (int)t->shape[0], nb = (int)(t->shape[1] / 32), r0, r1;
    uint8_t row[PLAN_MAX_AFFINE_COLS / 32 * 20];
    pool_split(rows, Q8W_GROUP, ith, nth, &r0, &r1);
    for (int r = r0; r < r1 && !atomic_load(&j->inexact); r++) {
        if (!affine_row_q41(t->data, t->shape[1], r, row)) {
            atomic_store(&j->inexact, 1);
            return;
        }
        q8w_pack_row(j->dt, rows, nb, r, row, j->out);
    }
}

int repack_affine4_matrix(const tensor *t, void *out) {
    affine_job j = {t, plan_affine4_type(t), out, 0};
    affine_task(&j, 0, 1);
    return !atomic_load(&j.inexact);
}

/* Drop the file pages wholly inside [p, p + n): the next tensor may share the edge pages. */
static void release_pages(const void *p, size_t n) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p, e = a + n;
    uintptr_t lo = (a + page - 1) & ~(page - 1), hi = e & ~(page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Anonymous memory for n bytes, populated in one call now (MAP_POPULATE) or left for the
 * threads that write it to populate their shares (repack_task): faulting it in page by
 * page costs more than the copy, and madvised huge pages load slower (make bench: load;
 * make bench-big, once memory is fragmented). */
static void *alloc_packed(size_t n, int populate_now) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (populate_now ? MAP_POPULATE : 0),
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The tensor table belongs to the reader and is not const memory: the model
 * only hands out const views. Setting `packed` is the one write, at load. */
static int repack_tensor(model *m, const tensor *t, char *err) {
    if (t->packed || !will_pack(m, t)) return 0;
    size_t n = packed_bytes(t, (int)t->shape[0]);
    void *p = alloc_packed(n, 0);
    if (!p) return errf(err, "%s: out of memory repacking tensor %s (%zu bytes)", m->path, t->name, n);
    repack_job j = {t, 0, (int)t->shape[0], p, 1, packer(m->kern, t)};
    pool_run(m->pool, repack_task, &j);
    release_pages(t->data, t->nbytes);
    became_packed(t, p);
    return 0;
}

/* An MLX 4-bit matrix in the packed layout of plan_affine4_type (see above):
 * on success the tensor view (owned by the model's affine store, like the
 * reader's table not const memory) becomes a tensor of that type with `packed`
 * set and the file pages of its three parts are dropped; if a parameter is not
 * exactly an f16, or this kernel table has no int8 kernel for the type,
 * nothing changes. */
static int repack_affine4(model *m, const tensor *t, char *err) {
    if (t->type != DT_AFFINE4 || plan_route_of(m->kern, t) != ROUTE_AFFINE_PACKED) return 0;
    dtype dt = plan_affine4_type(t);
    size_t n = (size_t)t->shape[0] * (size_t)(t->shape[1] / 32) * (size_t)q8w_block_bytes(dt);
    void *p = alloc_packed(n, 1);
    if (!p) return errf(err, "%s: out of memory repacking tensor %s (%zu bytes)", m->path, t->name, n);
    affine_job j = {t, dt, p, 0};
    pool_run(m->pool, affine_task, &j);
    if (atomic_load(&j.inexact)) {
        munmap(p, n);
        return 0;
    }
    const affine_weights *a = t->data;
    size_t np = (size_t)t->shape[0] * (size_t)(t->shape[1] / a->group) * (size_t)dtype_row_bytes((dtype)a->sdt, 1);
    release_pages(a->q, (size_t)t->shape[0] * (size_t)(t->shape[1] / 2));
    release_pages(a->scales, np);
    release_pages(a->biases, np);
    tensor *w = (tensor *)t;
    w->type = dt;
    w->nbytes = n;
    w->data = NULL; /* the affine view; nothing reads it once packed */
    w->packed = p;
    return 0;
}

/* ---- the weight arena ---------------------------------------------------------------
 *
 * The GGUF matrices a decode step reads (the layers' and the lm_head) go into one
 * allocation, laid out part after part in the order plan_thread_rows gives:
 * thread i's own share of every matmul of a token, in the order it computes
 * them, is one contiguous run of memory, so its stream (and the kernels'
 * prefetch, which runs 16 KB ahead of it) carries on from one matrix into the
 * next instead of starting cold at each (SmolLM2 decode about 2-4% faster,
 * `make bench`). Each run is packed as a matrix of its own (tensor.parts). */

typedef struct {
    const tensor *t;
    int row0, row1;
    size_t off; /* in the arena */
} arena_run;

typedef struct {
    const model *m;
    arena_run *runs;
    int n, cap, oom;
    size_t bytes;
} arena_plan;

static void plan_run(void *ctx, const tensor *t, int row0, int row1) {
    arena_plan *p = ctx;
    if (p->oom || t->packed || !will_pack(p->m, t)) return;
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 256;
        arena_run *r = realloc(p->runs, (size_t)cap * sizeof *r);
        if (!r) {
            p->oom = 1;
            return;
        }
        p->runs = r;
        p->cap = cap;
    }
    p->runs[p->n++] = (arena_run){t, row0, row1, p->bytes};
    p->bytes += (packed_bytes(t, row1 - row0) + 63) / 64 * 64; /* runs start on cache lines */
}

/* Fault in the pages of [p, p + n) in one call (see alloc_packed), where the kernel can.
 * Each thread does it for its own share just before writing it, so the kernel's page
 * clearing (most of a big model's load time in the kernel) runs on every thread. */
static void populate(void *p, size_t n) {
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p & ~(page - 1);
    madvise((void *)a, (uintptr_t)p + n - a, MADV_POPULATE_WRITE);
#else
    (void)p, (void)n;
#endif
}

/* All runs of tensor t (the plan's runs from index i on), packed and handed to
 * it as parts; then its file pages are dropped. */
static void pack_runs(model *m, const arena_plan *p, int i, packed_part *parts) {
    const tensor *t = p->runs[i].t;
    int np = 0;
    for (int k = i; k < p->n; k++) {
        if (p->runs[k].t != t) continue;
        uint8_t *out = (uint8_t *)m->arena + p->runs[k].off;
        repack_job j = {t, p->runs[k].row0, p->runs[k].row1, out, 1, packer(m->kern, t)};
        pool_run(m->pool, repack_task, &j);
        parts[np++] = (packed_part){p->runs[k].row0, out};
    }
    release_pages(t->data, t->nbytes);
    tensor *w = (tensor *)t;
    w->parts = parts;
    w->nparts = np;
    became_packed(t, parts[0].data);
}

static int repack_arena(model *m, char *err) {
    int nth = m->plan.n_threads;
    arena_plan p = {.m = m};
    for (int part = 0; part < nth; part++) plan_thread_rows(&m->plan, part, plan_run, &p);
    if (!p.oom && p.n) {
        void *a = mmap(NULL, p.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        m->part_table = malloc((size_t)p.n * sizeof *m->part_table);
        if (a == MAP_FAILED || !m->part_table) {
            if (a != MAP_FAILED) munmap(a, p.bytes);
            p.oom = 1;
        } else {
            m->arena = a;
            m->arena_bytes = p.bytes;
        }
    }
    if (p.oom) {
        free(p.runs);
        return errf(err, "%s: out of memory repacking the weights (%zu bytes)", m->path, p.bytes);
    }
    /* the lm_head (the largest matrix) first: its file pages are dropped before
     * the arena fills, so peak memory stays near one copy of the weights */
    int used = 0, first = 0;
    while (first < p.n && p.runs[first].t != m->lm_head) first++;
    if (first < p.n) {
        pack_runs(m, &p, first, m->part_table);
        used = m->lm_head->nparts;
    }
    for (int i = 0; i < p.n; i++) {
        if (p.runs[i].t->parts) continue;
        pack_runs(m, &p, i, m->part_table + used);
        used += p.runs[i].t->nparts;
    }
    free(p.runs);
    return 0;
}

/* A GGUF type the int8 kernels read in place (dequant.h): its "packed" form is the
 * file layout itself, so tensor.packed = tensor.data and nothing is copied or
 * released. Only where this table has the kernel: otherwise the f32 route is faster
 * than the scalar int8 reference. */
static void use_in_place(const model *m, const tensor *t) {
    if (t && !t->packed && dtype_info(t->type)->dequant32 && plan_route_of(m->kern, t) == ROUTE_IN_PLACE)
        ((tensor *)t)->packed = t->data;
}

/* Layer l's expert matrices (routed gate, up, down of every expert, then the shared
 * expert's) into ts; how many (0 for a dense layer). */
static int expert_matrices(const model *m, int l, const tensor **ts) {
    const expert_block *b = m->layers[l].moe;
    int n = 0;
    if (!b) return 0;
    for (int e = 0; e < m->cfg.n_experts; e++) ts[n++] = b->gate[e], ts[n++] = b->up[e], ts[n++] = b->down[e];
    if (b->sh_gate) ts[n++] = b->sh_gate, ts[n++] = b->sh_up, ts[n++] = b->sh_down;
    return n;
}

int repack_weights(model *m, char *err) {
    /* first, so that the arena holds only what is repacked */
    use_in_place(m, m->lm_head);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const tensor *ts[LAYER_MATRICES];
        layer_matrices(&m->layers[l], ts);
        for (int i = 0; i < LAYER_MATRICES; i++) use_in_place(m, ts[i]);
    }
    if (repack_arena(m, err)) return -1;
    /* An untied GGUF embedding is read one row per token (tensor_row_f32), never by a
     * matmul: it stays in the file mapping, where only the rows looked up are paged in. */
    if (repack_tensor(m, m->lm_head, err) ||
        repack_affine4(m, m->tok_embd, err) || repack_affine4(m, m->lm_head, err))
        return -1;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const tensor *ts[LAYER_MATRICES];
        layer_matrices(&m->layers[l], ts);
        for (int i = 0; i < LAYER_MATRICES; i++)
            if (ts[i] && (repack_tensor(m, ts[i], err) || repack_affine4(m, ts[i], err)))
                return -1;
    }
    /* the experts, each its own matrix (a decode step reads k of them, in no fixed order) */
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const tensor *ts[3 * 4096 + 3];
        int n = expert_matrices(m, l, ts);
        for (int i = 0; i < n; i++) {
            use_in_place(m, ts[i]);
            if (repack_tensor(m, ts[i], err)) return -1;
        }
    }
    return 0;
}

static void unpack_tensor(const tensor *t) {
    if (!t || !t->packed) return;
    if (!t->parts && t->packed != t->data) munmap((void *)t->packed, t->nbytes); /* parts live in the arena */
    tensor *w = (tensor *)t;
    w->packed = NULL;
    w->parts = NULL;
    w->nparts = 0;
}

void repack_free(model *m) {
    if (m->tok_embd) unpack_tensor(m->tok_embd);
    if (m->lm_head) unpack_tensor(m->lm_head);
    for (int l = 0; m->layers && l < m->cfg.n_layers; l++) {
        const tensor *ts[LAYER_MATRICES];
        layer_matrices(&m->layers[l], ts);
        for (int i = 0; i < LAYER_MATRICES; i++) unpack_tensor(ts[i]);
        const tensor *ex[3 * 4096 + 3];
        int n = expert_matrices(m, l, ex);
        for (int i = 0; i < n; i++) unpack_tensor(ex[i]);
    }
    if (m->arena) munmap(m->arena, m->arena_bytes);
    free(m->part_table);
    m->arena = NULL;
    m->part_table = NULL;
}
