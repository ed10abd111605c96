/* repack.c - GGUF blocks of 32 rewritten at load for the int8-activation kernels.
 *
 * The file interleaves a 2- or 4-byte scale header with each 16- or 32-byte
 * payload, row after row, so a kernel that computes several rows at once reads
 * one stream per row plus unaligned loads. The repacked form (layout in
 * kernels.h) interleaves groups of 8 rows at quad (128-column) granularity with
 * the scales right before the payload they belong to: a group is one
 * contiguous stream, a full chunk is whole 64-byte lines, and its vectors are
 * already in the lane order vpdpbusd wants (4 rows x 4 blocks per vector).
 * Scales stay f16, so the copy is exactly as large as the file data; once a
 * tensor is copied, its pages of the mapping are dropped (MADV_DONTNEED on a
 * read-only private file mapping: reading them again would just fault them
 * back in from the file). */
#include "repack.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "util.h"

int repack_supported(dtype t) { return t == DT_Q4_0 || t == DT_Q4_1 || t == DT_Q8_0; }

typedef struct {
    const tensor *t;
    uint8_t *out;
} repack_job;

/* The chunk of (row r, block b) and, in it, the offsets of that block's scale
 * and of its first payload dword (the others follow every kb * rh * 4 bytes). */
typedef struct {
    q8w_chunk c;
    size_t d, m, pay, step; /* bytes from the start of the matrix; step between the block's dwords */
} block_place;

static block_place place_of(dtype dt, int rows, int nb, int r, int b) {
    block_place p;
    p.c = q8w_chunk_at(dt, rows, nb, r, b / 4);
    int i = r % Q8W_GROUP, bi = b % 4, rh = p.c.rr - i / 4 * 4 < 4 ? p.c.rr - i / 4 * 4 : 4;
    p.d = p.c.off + 2 * (size_t)q8w_scale_idx(&p.c, i, bi);
    p.m = p.d + 2 * (size_t)p.c.rr * p.c.kb;
    p.pay = p.c.off + q8w_byte(dt, &p.c, i, bi, 0);
    p.step = (size_t)p.c.kb * rh * 4;
    return p;
}

/* Rows [r0, r1) of j->t from the file layout to the packed one, quad by quad:
 * one chunk lookup per 4 blocks (the per-byte offset arithmetic showed up as
 * 4% of a 512-token prefill run, all of it load time). */
static void repack_rows(const repack_job *j, int r0, int r1) {
    const tensor *t = j->t;
    dtype dt = t->type;
    int rows = (int)t->shape[0], nb = (int)(t->shape[1] / 32);
    int bb = q8w_block_bytes(dt), hdr = q8w_hdr(dt), nv = (bb - hdr) / 4;
    for (int r = r0; r < r1; r++) {
        const uint8_t *src = (const uint8_t *)t->data + (size_t)r * nb * bb;
        int i = r % Q8W_GROUP;
        for (int q = 0; 4 * q < nb; q++) {
            q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, q);
            uint8_t *ck = j->out + c.off;
            size_t step = (size_t)c.kb * (c.rr - i / 4 * 4 < 4 ? c.rr - i / 4 * 4 : 4) * 4;
            for (int bi = 0; bi < c.kb; bi++, src += bb) {
                size_t d = 2 * (size_t)q8w_scale_idx(&c, i, bi);
                memcpy(ck + d, src, 2);
                if (dt == DT_Q4_1) memcpy(ck + d + 2 * (size_t)c.rr * c.kb, src + 2, 2);
                uint8_t *pay = ck + q8w_byte(dt, &c, i, bi, 0);
                for (int v = 0; v < nv; v++) {
                    uint32_t w;
                    memcpy(&w, src + hdr + 4 * v, 4);
                    if (dt == DT_Q8_0) w ^= 0x80808080u; /* w + 128 as u8: flip the sign bits */
                    memcpy(pay + step * v, &w, 4);
                }
            }
        }
    }
}

void repack_matrix(const tensor *t, void *out) {
    repack_job j = {t, out};
    repack_rows(&j, 0, (int)t->shape[0]);
}

void repack_row_f32(const tensor *t, int64_t row, float *out) {
    dtype dt = t->type;
    int rows = (int)t->shape[0], nb = (int)(t->shape[1] / 32);
    const uint8_t *pk = t->packed;
    for (int b = 0; b < nb; b++, out += 32) {
        block_place p = place_of(dt, rows, nb, (int)row, b);
        float db = f16_to_f32(rd_u16(pk + p.d));
        float mb = dt == DT_Q4_1 ? f16_to_f32(rd_u16(pk + p.m)) : 0.0f;
        uint8_t q[32];
        for (int v = 0; v < (dt == DT_Q8_0 ? 8 : 4); v++) memcpy(q + 4 * v, pk + p.pay + p.step * v, 4);
        for (int j = 0; j < 16; j++) {
            if (dt == DT_Q8_0) {
                out[j] = db * (float)(int8_t)(q[j] ^ 0x80);
                out[j + 16] = db * (float)(int8_t)(q[j + 16] ^ 0x80);
            } else if (dt == DT_Q4_0) {
                out[j] = db * (float)((q[j] & 0x0f) - 8);
                out[j + 16] = db * (float)((q[j] >> 4) - 8);
            } else {
                out[j] = db * (float)(q[j] & 0x0f) + mb;
                out[j + 16] = db * (float)(q[j] >> 4) + mb;
            }
        }
    }
}

static void repack_task(void *ctx, int ith, int nth) {
    const repack_job *j = ctx;
    int r0, r1;
    pool_split((int)j->t->shape[0], Q8W_GROUP, ith, nth, &r0, &r1);
    if (r0 < r1) repack_rows(j, r0, r1);
}

/* Drop the file pages wholly inside [p, p + n): the next tensor may share the edge pages. */
static void release_pages(const void *p, size_t n) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p, e = a + n;
    uintptr_t lo = (a + page - 1) & ~(page - 1), hi = e & ~(page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Anonymous memory for n bytes, populated in one call: page by page, the
 * first-touch faults of a 700 MB model cost more than the copy (MAP_POPULATE
 * made the 1B Q4_0 load 0.85x as long, same run). Transparent huge pages were
 * tried too: decode no faster within the noise and load 2 to 3x slower (the
 * kernel compacts memory synchronously for madvised regions). */
static void *alloc_packed(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The tensor table belongs to the reader and is not const memory: the model
 * only hands out const views. Setting `packed` is the one write, at load. */
static int repack_tensor(model *m, const tensor *t, char *err) {
    /* no int8 kernel in this table (NEON for now): keep the file layout and the f32 path */
    if (!repack_supported(t->type) || t->packed || !m->kern->matmul_q8[t->type]) return 0;
    void *p = alloc_packed(t->nbytes);
    if (!p) return errf(err, "%s: out of memory repacking tensor %s (%zu bytes)", m->path, t->name, t->nbytes);
    repack_job j = {t, p};
    pool_run(m->pool, repack_task, &j);
    release_pages(t->data, t->nbytes);
    ((tensor *)t)->packed = p;
    return 0;
}

int repack_weights(model *m, char *err) {
    if (repack_tensor(m, m->tok_embd, err) || repack_tensor(m, m->lm_head, err)) return -1;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const layer_weights *L = &m->layers[l];
        const tensor *ts[] = {L->wq, L->wk, L->wv, L->wo, L->w_gate, L->w_up, L->w_down};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            if (repack_tensor(m, ts[i], err)) return -1;
    }
    return 0;
}

static void unpack_tensor(const tensor *t) {
    if (!t || !t->packed) return;
    munmap((void *)t->packed, t->nbytes);
    ((tensor *)t)->packed = NULL;
}

void repack_free(model *m) {
    if (m->tok_embd) unpack_tensor(m->tok_embd);
    if (m->lm_head) unpack_tensor(m->lm_head);
    if (!m->layers) return;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const layer_weights *L = &m->layers[l];
        const tensor *ts[] = {L->wq, L->wk, L->wv, L->wo, L->w_gate, L->w_up, L->w_down};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) unpack_tensor(ts[i]);
    }
}
