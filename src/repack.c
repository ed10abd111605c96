/* repack.c - GGUF blocks of 32 rewritten at load for the int8-activation kernels.
 *
 * The file interleaves a 2- or 4-byte scale header with each 16- or 32-byte
 * payload, so no 64-byte load of a row is aligned and one load never holds 4
 * whole blocks. The repacked form (layout in kernels.h) puts each row's
 * payload bytes together and the f16 scales after all rows: a 64-byte load is
 * 4 blocks of nibbles (or 2 halves of 4 Q8_0 blocks, reordered to match the
 * activations' quad order). Scales stay f16, so the copy is exactly as large
 * as the file data; once a tensor is copied, its pages of the mapping are
 * dropped (MADV_DONTNEED on a read-only private file mapping: reading them
 * again would just fault them back in from the file). */
#include "repack.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

int repack_supported(dtype t) { return t == DT_Q4_0 || t == DT_Q4_1 || t == DT_Q8_0; }

typedef struct {
    const tensor *t;
    uint8_t *out;
} repack_job;

/* Rows [r0, r1) of j->t from the file layout to the packed one. */
static void repack_rows(const repack_job *j, int r0, int r1) {
    const tensor *t = j->t;
    int rows = (int)t->shape[0], nb = (int)(t->shape[1] / 32);
    int bb = dtype_block_bytes(t->type), hdr = t->type == DT_Q4_1 ? 4 : 2, pay = bb - hdr;
    size_t qrow = (size_t)nb * pay;
    uint8_t *qs = j->out, *d = qs + qrow * rows, *m = d + 2 * (size_t)nb * rows;
    for (int r = r0; r < r1; r++) {
        const uint8_t *src = (const uint8_t *)t->data + (size_t)r * nb * bb;
        uint8_t *q = qs + qrow * r;
        for (int b = 0; b < nb; b++, src += bb) {
            memcpy(d + 2 * ((size_t)r * nb + b), src, 2);
            if (t->type == DT_Q4_1) memcpy(m + 2 * ((size_t)r * nb + b), src + 2, 2);
            if (t->type != DT_Q8_0) {
                memcpy(q + (size_t)b * 16, src + hdr, 16);
                continue;
            }
            int quad = b / 4, k = nb - quad * 4 < 4 ? nb - quad * 4 : 4; /* blocks in this quad */
            uint8_t *dst = q + (size_t)quad * 128 + (size_t)(b % 4) * 16;
            memcpy(dst, src + hdr, 16);              /* elements 0..15 */
            memcpy(dst + 16 * (size_t)k, src + hdr + 16, 16); /* elements 16..31 after the quad's first halves */
        }
    }
}

void repack_matrix(const tensor *t, void *out) {
    repack_job j = {t, out};
    repack_rows(&j, 0, (int)t->shape[0]);
}

void repack_row_f32(const tensor *t, int64_t row, float *out) {
    int rows = (int)t->shape[0], nb = (int)(t->shape[1] / 32);
    size_t qrow = (size_t)nb * (t->type == DT_Q8_0 ? 32 : 16);
    const uint8_t *q = (const uint8_t *)t->packed + qrow * (size_t)row;
    const uint8_t *d = (const uint8_t *)t->packed + qrow * rows + 2 * (size_t)nb * row;
    const uint8_t *m = d + 2 * (size_t)nb * rows;
    for (int b = 0; b < nb; b++, out += 32) {
        float db = f16_to_f32(rd_u16(d + 2 * (size_t)b));
        if (t->type == DT_Q8_0) {
            int quad = b / 4, k = nb - quad * 4 < 4 ? nb - quad * 4 : 4;
            const int8_t *lo = (const int8_t *)q + (size_t)quad * 128 + (size_t)(b % 4) * 16, *hi = lo + 16 * k;
            for (int j = 0; j < 16; j++) {
                out[j] = db * (float)lo[j];
                out[j + 16] = db * (float)hi[j];
            }
            continue;
        }
        const uint8_t *qs = q + (size_t)b * 16;
        float mb = t->type == DT_Q4_1 ? f16_to_f32(rd_u16(m + 2 * (size_t)b)) : 0.0f;
        for (int j = 0; j < 16; j++) {
            if (t->type == DT_Q4_0) {
                out[j] = db * (float)((qs[j] & 0x0f) - 8);
                out[j + 16] = db * (float)((qs[j] >> 4) - 8);
            } else {
                out[j] = db * (float)(qs[j] & 0x0f) + mb;
                out[j + 16] = db * (float)(qs[j] >> 4) + mb;
            }
        }
    }
}

static void repack_task(void *ctx, int ith, int nth) {
    const repack_job *j = ctx;
    int r0, r1;
    pool_split((int)j->t->shape[0], 1, ith, nth, &r0, &r1);
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
