/* bpe.c - byte-pair merges on one pre-token.
 *
 * Symbols form a linked list in an array; candidate merges sit in a binary
 * min-heap keyed by (rank, position), so the lowest-ranked pair is merged
 * first and ties go to the leftmost, as the reference does. Stale heap entries
 * (a side already merged away) are skipped when popped. O(n log n) per word. */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

typedef struct {
    int32_t id;
    int32_t prev, next; /* -1 at the ends */
    int32_t alive;
} sym;

struct tok_bpe_ws {
    sym *syms;
    size_t cap_syms;
    uint64_t *heap; /* (rank << 32) | left position */
    size_t n_heap, cap_heap;
};

tok_bpe_ws *tok_bpe_ws_new(void) { return calloc(1, sizeof(tok_bpe_ws)); }

void tok_bpe_ws_free(tok_bpe_ws *ws) {
    if (!ws) return;
    free(ws->syms);
    free(ws->heap);
    free(ws);
}

static int heap_push(tok_bpe_ws *ws, uint64_t v) {
    if (ws->n_heap == ws->cap_heap) {
        size_t cap = ws->cap_heap ? ws->cap_heap * 2 : 64;
        uint64_t *h = realloc(ws->heap, cap * sizeof *h);
        if (!h) return -1;
        ws->heap = h;
        ws->cap_heap = cap;
    }
    size_t i = ws->n_heap++;
    while (i && ws->heap[(i - 1) / 2] > v) {
        ws->heap[i] = ws->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    ws->heap[i] = v;
    return 0;
}

static uint64_t heap_pop(tok_bpe_ws *ws) {
    uint64_t top = ws->heap[0], v = ws->heap[--ws->n_heap];
    size_t i = 0, n = ws->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ws->heap[c + 1] < ws->heap[c]) c++;
        if (ws->heap[c] >= v) break;
        ws->heap[i] = ws->heap[c];
        i = c;
    }
    if (n) ws->heap[i] = v;
    return top;
}

static int push_pair(const tokenizer *t, tok_bpe_ws *ws, int32_t pos) {
    int32_t nx = ws->syms[pos].next;
    if (nx < 0) return 0;
    const pairmap_slot *m = pairmap_get(&t->merges, ws->syms[pos].id, ws->syms[nx].id);
    if (!m) return 0;
    return heap_push(ws, ((uint64_t)(uint32_t)m->rank << 32) | (uint32_t)pos);
}

static int add_sym(tok_bpe_ws *ws, size_t *n, int32_t id) {
    if (*n == ws->cap_syms) {
        size_t cap = ws->cap_syms ? ws->cap_syms * 2 : 64;
        sym *s = realloc(ws->syms, cap * sizeof *s);
        if (!s) return -1;
        ws->syms = s;
        ws->cap_syms = cap;
    }
    ws->syms[*n] = (sym){id, (int32_t)*n - 1, -1, 1};
    if (*n) ws->syms[*n - 1].next = (int32_t)*n;
    (*n)++;
    return 0;
}

/* First symbols: one per byte (byte-level), or one per character with
 * <0xNN> byte fallback / unk for characters missing from the vocabulary. */
static int initial_symbols(const tokenizer *t, const char *s, size_t n, tok_bpe_ws *ws, size_t *ns) {
    *ns = 0;
    if (t->kind == TOK_BYTELEVEL) {
        for (size_t i = 0; i < n; i++) {
            int32_t id = t->byte_id[(unsigned char)s[i]];
            if (id < 0) id = t->unk_id; /* a byte missing from the vocabulary: unk, or dropped as the reference does */
            if (id >= 0 && add_sym(ws, ns, id)) return -1;
        }
        return 0;
    }
    for (size_t i = 0; i < n;) {
        size_t L = tok_utf8_len((const unsigned char *)s + i, n - i);
        if (!L) L = 1;
        int32_t id = strmap_get(&t->bpe_vocab, s + i, L);
        if (id >= 0) {
            if (add_sym(ws, ns, id)) return -1;
        } else if (t->byte_fallback && t->byte_id[(unsigned char)s[i]] >= 0) {
            for (size_t k = 0; k < L; k++)
                if (add_sym(ws, ns, t->byte_id[(unsigned char)s[i + k]])) return -1;
        } else if (t->unk_id >= 0) {
            int fuse = t->fuse_unk && *ns && ws->syms[*ns - 1].id == t->unk_id;
            if (!fuse && add_sym(ws, ns, t->unk_id)) return -1;
        } /* no unk token: the reference drops the character */
        i += L;
    }
    return 0;
}

int tok_bpe_word(const tokenizer *t, const char *s, size_t n, tok_bpe_ws *ws, tok_ids *out) {
    if (!n) return 0;
    if (t->ignore_merges) {
        int32_t id = strmap_get(&t->bpe_vocab, s, n);
        if (id >= 0) return tok_ids_push(out, id);
    }
    size_t ns;
    if (initial_symbols(t, s, n, ws, &ns)) return -1;
    ws->n_heap = 0;
    for (size_t i = 0; i + 1 < ns; i++)
        if (push_pair(t, ws, (int32_t)i)) return -1;
    while (ws->n_heap) {
        uint64_t top = heap_pop(ws);
        int32_t pos = (int32_t)(top & 0xffffffffu), rank = (int32_t)(top >> 32);
        sym *a = &ws->syms[pos];
        if (!a->alive || a->next < 0) continue;
        sym *b = &ws->syms[a->next];
        const pairmap_slot *m = pairmap_get(&t->merges, a->id, b->id);
        if (!m || m->rank != rank) continue; /* stale: one side changed since this entry was pushed */
        a->id = m->out;
        b->alive = 0;
        a->next = b->next;
        if (b->next >= 0) ws->syms[b->next].prev = pos;
        if ((a->prev >= 0 && push_pair(t, ws, a->prev)) || push_pair(t, ws, pos)) return -1;
    }
    for (int32_t i = 0; i >= 0 && (size_t)i < ns; i = ws->syms[i].next)
        if (tok_ids_push(out, ws->syms[i].id)) return -1;
    return 0;
}
