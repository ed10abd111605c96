/* token_mask.c - the allowed-token mask of a grammar state (see token_mask.h). */
#include "token_mask.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the vocabulary as a byte trie ---------------------------------------------- */

struct tm_vocab {
    int V;
    char *blob;           /* every token's bytes */
    size_t *off;          /* (V + 1) token id's bytes are blob[off[id] .. off[id + 1]) */
    uint8_t *stop;        /* (V) 1 for end-of-sequence ids */
    /* the trie in preorder; node 0 is the root (no byte) */
    int n_nodes, max_depth;
    uint8_t *byte;        /* (n_nodes) the byte leading into the node */
    int32_t *depth;       /* (n_nodes) */
    int32_t *end;         /* (n_nodes) one past the node's subtree */
    int32_t *tok_lo;      /* (n_nodes) the subtree's tokens are sorted[tok_lo .. tok_hi) */
    int32_t *tok_own;     /* (n_nodes) of them, sorted[tok_lo .. tok_own) end at this node */
    int32_t *tok_hi;
    int32_t *sorted;      /* token ids with bytes, by bytes */
    int n_sorted;
};

typedef struct {
    const char *p;
    size_t n;
    int32_t id;
} tok_ref;

static int cmp_tok(const void *a, const void *b) {
    const tok_ref *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    if (c) return c;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

void tm_vocab_free(tm_vocab *v) {
    if (!v) return;
    free(v->blob), free(v->off), free(v->stop), free(v->byte), free(v->depth), free(v->end);
    free(v->tok_lo), free(v->tok_own), free(v->tok_hi), free(v->sorted);
    free(v);
}

int tm_vocab_size(const tm_vocab *v) { return v->V; }

tm_vocab *tm_vocab_new(int V, const char *(*piece)(void *user, int32_t id, size_t *len),
                       int (*is_stop)(void *user, int32_t id), void *user) {
    tm_vocab *v = calloc(1, sizeof *v);
    tok_ref *refs = NULL;
    int32_t *path = NULL;
    if (!v || V <= 0) goto fail;
    v->V = V;
    v->off = malloc(((size_t)V + 1) * sizeof *v->off);
    v->stop = calloc((size_t)V, 1);
    if (!v->off || !v->stop) goto fail;
    size_t total = 0;
    for (int32_t id = 0; id < V; id++) {
        size_t n = 0;
        const char *p = piece(user, id, &n);
        v->stop[id] = is_stop && is_stop(user, id);
        v->off[id] = total;
        if (p && !v->stop[id]) total += n;
    }
    v->off[V] = total;
    v->blob = malloc(total ? total : 1);
    refs = malloc((size_t)V * sizeof *refs);
    if (!v->blob || !refs) goto fail;
    int ns = 0;
    size_t max_len = 0;
    for (int32_t id = 0; id < V; id++) {
        size_t n = v->off[id + 1] - v->off[id];
        if (!n) continue;
        size_t k = 0;
        const char *p = piece(user, id, &k);
        memcpy(v->blob + v->off[id], p, n);
        refs[ns++] = (tok_ref){v->blob + v->off[id], n, id};
        if (n > max_len) max_len = n;
    }
    qsort(refs, (size_t)ns, sizeof *refs, cmp_tok);
    size_t cap = total + 1;
    v->byte = malloc(cap);
    v->depth = malloc(cap * sizeof *v->depth);
    v->end = malloc(cap * sizeof *v->end);
    v->tok_lo = malloc(cap * sizeof *v->tok_lo);
    v->tok_own = malloc(cap * sizeof *v->tok_own);
    v->tok_hi = malloc(cap * sizeof *v->tok_hi);
    v->sorted = malloc(((size_t)ns + 1) * sizeof *v->sorted);
    path = malloc((max_len + 1) * sizeof *path);
    if (!v->byte || !v->depth || !v->end || !v->tok_lo || !v->tok_own || !v->tok_hi || !v->sorted || !path) goto fail;
    int nn = 1;
    v->byte[0] = 0, v->depth[0] = 0, v->tok_lo[0] = 0, v->tok_own[0] = 0;
    path[0] = 0;
    size_t plen = 0; /* the path holds nodes for depths 0..plen */
    for (int i = 0; i < ns; i++) {
        const tok_ref *t = &refs[i];
        v->sorted[i] = t->id;
        size_t lcp = 0;
        if (i) {
            const tok_ref *q = &refs[i - 1];
            size_t m = q->n < t->n ? q->n : t->n;
            while (lcp < m && q->p[lcp] == t->p[lcp]) lcp++;
        }
        while (plen > lcp) { /* close the nodes below the common prefix */
            int32_t nd = path[plen--];
            v->end[nd] = nn;
            v->tok_hi[nd] = i;
        }
        for (size_t d = lcp; d < t->n; d++) {
            int32_t nd = nn++;
            v->byte[nd] = (uint8_t)t->p[d];
            v->depth[nd] = (int32_t)d + 1;
            v->tok_lo[nd] = i;
            v->tok_own[nd] = i;
            path[++plen] = nd;
        }
        v->tok_own[path[plen]] = i + 1; /* this token ends at the deepest node of its path */
    }
    while (plen > 0) {
        int32_t nd = path[plen--];
        v->end[nd] = nn;
        v->tok_hi[nd] = ns;
    }
    v->end[0] = nn;
    v->tok_hi[0] = ns;
    v->n_nodes = nn;
    v->n_sorted = ns;
    v->max_depth = (int)max_len;
    free(refs);
    free(path);
    return v;
fail:
    free(refs);
    free(path);
    tm_vocab_free(v);
    return NULL;
}

/* ---- the matcher ------------------------------------------------------------------ */

typedef struct {
    int state;          /* 0 not built, 1 built, 2 too many uncertain tokens: walk the real stack */
    uint32_t *acc;      /* (W) tokens accepted inside the position's rule */
    int32_t *unc;       /* (n_unc) tokens that run past the rule's end */
    int n_unc;
} pos_cache;

#define MEMO_SLOTS 256

struct tm_matcher {
    const grammar *g;
    const tm_vocab *v;
    gm *gm;
    int W;                  /* mask words */
    int32_t *state;         /* the current stack set */
    int n_state;
    int terminated;
    /* accepted-token history (for rollback): the states before each token */
    int32_t *hist;
    size_t hist_n, hist_cap;
    size_t *hist_off;
    int *hist_len, *hist_term;
    int n_hist, cap_hist;
    pos_cache *pc;          /* (grammar elements) by position */
    /* memoized masks of stack nodes */
    int32_t memo_key[MEMO_SLOTS];
    uint32_t *memo_bits;    /* (MEMO_SLOTS, W) */
    int memo_n;
    /* scratch */
    int *sn;                /* (max_depth + 2) a trie walk's set id at each depth */
    uint8_t *anc;           /* (max_depth + 2) an escape happened above this depth */
    int32_t *ta, *tb;       /* (GRAMMAR_MAX_STACKS) */
    int32_t *unc_buf;
    int unc_cap;
    /* stack sets met during one mask computation, interned, and their transitions by a byte:
     * a trie walk revisits the same few sets at every depth (valid until the next gm_truncate) */
    int32_t *set_pool;      /* contents of every interned set */
    size_t pool_n, pool_cap;
    size_t *set_off;        /* (n_sets) */
    int *set_len;
    uint8_t *set_esc;       /* (n_sets) 1 if the set holds GM_ESC */
    uint64_t *set_first;    /* (n_sets, 4) the bytes that can come next on some stack of the set */
    int n_sets, cap_sets;
    int32_t *set_tab;       /* (tab_cap) open addressing: set id or -1 */
    uint32_t tab_cap;
    int32_t *tr_key, *tr_val; /* (tr_cap) (set id * 256 + byte) -> set id; key -1 = empty */
    uint32_t tr_cap, tr_n;
};

static int set_has(const int32_t *s, int n, int32_t id) {
    for (int i = 0; i < n && s[i] <= id; i++)
        if (s[i] == id) return 1;
    return 0;
}

void tm_matcher_free(tm_matcher *m) {
    if (!m) return;
    if (m->pc)
        for (int i = 0; i < grammar_n_elems(m->g); i++) free(m->pc[i].acc), free(m->pc[i].unc);
    free(m->pc);
    gm_free(m->gm);
    free(m->state), free(m->hist), free(m->hist_off), free(m->hist_len), free(m->hist_term);
    free(m->memo_bits), free(m->sn), free(m->anc), free(m->ta), free(m->tb);
    free(m->unc_buf), free(m->set_pool), free(m->set_off), free(m->set_len), free(m->set_esc), free(m->set_first);
    free(m->set_tab), free(m->tr_key), free(m->tr_val);
    free(m);
}

int tm_matcher_new(const grammar *g, const tm_vocab *v, tm_matcher **out, char *err, size_t errlen) {
    *out = NULL;
    tm_matcher *m = calloc(1, sizeof *m);
    if (!m) goto nomem;
    m->g = g;
    m->v = v;
    m->W = (v->V + 31) / 32;
    m->gm = gm_new(g);
    m->state = malloc(GRAMMAR_MAX_STACKS * sizeof *m->state);
    m->pc = calloc((size_t)grammar_n_elems(g) + 1, sizeof *m->pc);
    m->memo_bits = malloc((size_t)MEMO_SLOTS * (size_t)m->W * sizeof *m->memo_bits);
    m->sn = malloc(((size_t)v->max_depth + 2) * sizeof *m->sn);
    m->anc = malloc((size_t)v->max_depth + 2);
    m->ta = malloc(GRAMMAR_MAX_STACKS * sizeof *m->ta);
    m->tb = malloc(GRAMMAR_MAX_STACKS * sizeof *m->tb);
    if (!m->gm || !m->state || !m->pc || !m->memo_bits || !m->sn || !m->anc || !m->ta || !m->tb)
        goto nomem;
    for (int i = 0; i < MEMO_SLOTS; i++) m->memo_key[i] = -1;
    m->n_state = gm_start(m->gm, m->state);
    if (m->n_state < 0) {
        if (err && errlen) snprintf(err, errlen, "grammar: the start state has more than %d stacks", GRAMMAR_MAX_STACKS);
        tm_matcher_free(m);
        return -1;
    }
    *out = m;
    return 0;
nomem:
    if (err && errlen) snprintf(err, errlen, "grammar: out of memory");
    tm_matcher_free(m);
    return -1;
}

static void bit_set(uint32_t *b, int32_t id) { b[id >> 5] |= 1u << (id & 31); }
static int bit_get(const uint32_t *b, int32_t id) { return (int)(b[id >> 5] >> (id & 31)) & 1; }

static int unc_push(tm_matcher *m, int *n, int32_t id) {
    if (*n >= m->unc_cap) {
        int c = m->unc_cap ? m->unc_cap * 2 : 256;
        int32_t *u = realloc(m->unc_buf, (size_t)c * sizeof *u);
        if (!u) return -1;
        m->unc_buf = u;
        m->unc_cap = c;
    }
    m->unc_buf[(*n)++] = id;
    return 0;
}

static uint32_t set_hash(const int32_t *s, int n) {
    uint32_t h = 2166136261u;
    for (int i = 0; i < n; i++) h = (h ^ (uint32_t)s[i]) * 16777619u;
    return h;
}

static void sets_clear(tm_matcher *m) {
    m->n_sets = 0;
    m->pool_n = 0;
    if (m->set_tab) memset(m->set_tab, 0xFF, m->tab_cap * sizeof *m->set_tab);
    if (m->tr_key && m->tr_n) memset(m->tr_key, 0xFF, m->tr_cap * sizeof *m->tr_key);
    m->tr_n = 0;
}

static int tab_grow(tm_matcher *m) {
    uint32_t nc = m->tab_cap ? m->tab_cap * 2 : 1024;
    int32_t *t = malloc(nc * sizeof *t);
    if (!t) return -1;
    memset(t, 0xFF, nc * sizeof *t);
    for (int id = 0; id < m->n_sets; id++) {
        uint32_t h = set_hash(m->set_pool + m->set_off[id], m->set_len[id]) & (nc - 1);
        while (t[h] >= 0) h = (h + 1) & (nc - 1);
        t[h] = id;
    }
    free(m->set_tab);
    m->set_tab = t;
    m->tab_cap = nc;
    return 0;
}

/* The id of set s[0..n) (interned on first sight), or -1 out of memory. */
static int set_intern(tm_matcher *m, const int32_t *s, int n) {
    if (2 * (uint32_t)(m->n_sets + 1) > m->tab_cap && tab_grow(m)) return -1;
    uint32_t h = set_hash(s, n) & (m->tab_cap - 1);
    for (; m->set_tab[h] >= 0; h = (h + 1) & (m->tab_cap - 1)) {
        int id = m->set_tab[h];
        if (m->set_len[id] == n && !memcmp(m->set_pool + m->set_off[id], s, (size_t)n * sizeof *s)) return id;
    }
    if (m->n_sets + 1 > m->cap_sets) {
        int c = m->cap_sets ? m->cap_sets * 2 : 256;
        size_t *o = realloc(m->set_off, (size_t)c * sizeof *o);
        if (o) m->set_off = o;
        int *l = realloc(m->set_len, (size_t)c * sizeof *l);
        if (l) m->set_len = l;
        uint8_t *e = realloc(m->set_esc, (size_t)c);
        if (e) m->set_esc = e;
        uint64_t *fb = realloc(m->set_first, (size_t)c * 4 * sizeof *fb);
        if (fb) m->set_first = fb;
        if (!o || !l || !e || !fb) return -1;
        m->cap_sets = c;
    }
    if (m->pool_n + (size_t)n > m->pool_cap) {
        size_t c = m->pool_cap ? m->pool_cap * 2 : 4096;
        while (c < m->pool_n + (size_t)n) c *= 2;
        int32_t *p = realloc(m->set_pool, c * sizeof *p);
        if (!p) return -1;
        m->set_pool = p;
        m->pool_cap = c;
    }
    int id = m->n_sets++;
    memcpy(m->set_pool + m->pool_n, s, (size_t)n * sizeof *s);
    m->set_off[id] = m->pool_n;
    m->set_len[id] = n;
    m->set_esc[id] = (uint8_t)set_has(s, n, GM_ESC);
    uint64_t *fb = m->set_first + 4 * (size_t)id;
    fb[0] = fb[1] = fb[2] = fb[3] = 0;
    for (int i = 0; i < n; i++) {
        uint64_t x[4];
        gm_first_bytes(m->gm, s[i], x);
        for (int k = 0; k < 4; k++) fb[k] |= x[k];
    }
    m->pool_n += (size_t)n;
    m->set_tab[h] = id;
    return id;
}

/* The set that set id becomes after byte b (cached), or -1 on a limit / out of memory. */
static int set_step(tm_matcher *m, int id, uint8_t b) {
    int32_t key = id * 256 + b;
    if (2 * (m->tr_n + 1) > m->tr_cap) {
        uint32_t nc = m->tr_cap ? m->tr_cap * 2 : 4096;
        int32_t *k = malloc(nc * sizeof *k), *v = malloc(nc * sizeof *v);
        if (!k || !v) {
            free(k), free(v);
            return -1;
        }
        memset(k, 0xFF, nc * sizeof *k);
        for (uint32_t i = 0; i < m->tr_cap; i++)
            if (m->tr_key[i] >= 0) {
                uint32_t h = ((uint32_t)m->tr_key[i] * 2654435761u) & (nc - 1);
                while (k[h] >= 0) h = (h + 1) & (nc - 1);
                k[h] = m->tr_key[i], v[h] = m->tr_val[i];
            }
        free(m->tr_key), free(m->tr_val);
        m->tr_key = k, m->tr_val = v;
        m->tr_cap = nc;
    }
    uint32_t h = ((uint32_t)key * 2654435761u) & (m->tr_cap - 1);
    for (; m->tr_key[h] >= 0; h = (h + 1) & (m->tr_cap - 1))
        if (m->tr_key[h] == key) return m->tr_val[h];
    int n = gm_advance(m->gm, m->set_pool + m->set_off[id], m->set_len[id], b, m->tb);
    if (n < 0) return -1;
    int out = set_intern(m, m->tb, n);
    if (out < 0) return -1;
    m->tr_key[h] = key;
    m->tr_val[h] = out;
    m->tr_n++;
    return out;
}

/* Walk the trie from stack set s0[0..n0): accepted tokens into acc; with unc_limit >= 0,
 * tokens that run past an escape (GM_ESC) into m->unc_buf (count *n_unc). Returns 0,
 * -1 on a matcher limit, -2 when more than unc_limit tokens are uncertain. */
static int walk(tm_matcher *m, const int32_t *s0, int n0, uint32_t *acc, int unc_limit, int *n_unc) {
    const tm_vocab *v = m->v;
    int *sid = m->sn; /* the set id at each depth */
    int s = set_intern(m, s0, n0);
    if (s < 0) return -1;
    sid[0] = s;
    m->anc[0] = 0;
    int nu = 0;
    for (int32_t i = 1; i < v->n_nodes;) {
        int d = v->depth[i];
        uint8_t b = v->byte[i];
        if (!(m->set_first[4 * (size_t)sid[d - 1] + b / 64] >> (b % 64) & 1) && !m->set_esc[sid[d - 1]] &&
            !(d >= 2 && m->anc[d - 1])) {
            i = v->end[i]; /* no stack of the set takes this byte: the whole subtree is rejected */
            continue;
        }
        int id = set_step(m, sid[d - 1], b);
        if (id < 0) return -1;
        sid[d] = id;
        int n = m->set_len[id], esc = m->set_esc[id], live = n - esc;
        int anc = m->anc[d - 1] || (d >= 2 && m->set_esc[sid[d - 1]]);
        m->anc[d] = (uint8_t)anc;
        if (live || esc) {
            for (int32_t k = v->tok_lo[i]; k < v->tok_own[i]; k++) bit_set(acc, v->sorted[k]);
        } else if (anc && unc_limit >= 0) {
            for (int32_t k = v->tok_lo[i]; k < v->tok_own[i]; k++)
                if (unc_push(m, &nu, v->sorted[k])) return -1;
        }
        if (live) {
            i++;
            continue;
        }
        if ((esc || anc) && unc_limit >= 0)
            for (int32_t k = v->tok_own[i]; k < v->tok_hi[i]; k++)
                if (unc_push(m, &nu, v->sorted[k])) return -1;
        if (unc_limit >= 0 && nu > unc_limit) return -2;
        i = v->end[i];
    }
    if (n_unc) *n_unc = nu;
    return 0;
}

/* 1 if token id's bytes continue stack node t (-1 on a limit): interned sets and cached
 * transitions, so tokens sharing a prefix share the work. */
static int token_ok(tm_matcher *m, int32_t t, int32_t id) {
    const tm_vocab *v = m->v;
    const uint8_t *p = (const uint8_t *)v->blob + v->off[id];
    size_t n = v->off[id + 1] - v->off[id];
    int s = set_intern(m, &t, 1);
    for (size_t i = 0; i < n && s >= 0 && m->set_len[s] > 0; i++) s = set_step(m, s, p[i]);
    return s < 0 ? -1 : m->set_len[s] > 0;
}

static int build_pos_cache(tm_matcher *m, int pos) {
    pos_cache *pc = &m->pc[pos];
    pc->acc = calloc((size_t)m->W, sizeof *pc->acc);
    if (!pc->acc) return -1;
    int32_t t = gm_position_node(m->gm, pos);
    if (t < 0) return -1;
    int nu = 0, rc = walk(m, &t, 1, pc->acc, m->v->V / 16, &nu);
    if (rc == -1) return -1;
    if (rc == -2) {
        free(pc->acc);
        pc->acc = NULL;
        pc->state = 2;
        return 0;
    }
    pc->unc = malloc(((size_t)nu + 1) * sizeof *pc->unc);
    if (!pc->unc) return -1;
    if (nu) memcpy(pc->unc, m->unc_buf, (size_t)nu * sizeof *pc->unc);
    pc->n_unc = nu;
    pc->state = 1;
    return 0;
}

/* The mask of stack node t (memoized), or NULL on a limit / out of memory. */
static const uint32_t *node_mask(tm_matcher *m, int32_t t) {
    unsigned h = (unsigned)t * 2654435761u % MEMO_SLOTS;
    for (int k = 0; k < MEMO_SLOTS; k++) {
        unsigned s = (h + (unsigned)k) % MEMO_SLOTS;
        if (m->memo_key[s] == t) return m->memo_bits + (size_t)s * (size_t)m->W;
        if (m->memo_key[s] < 0) break;
    }
    if (2 * m->memo_n >= MEMO_SLOTS) { /* full enough: start over */
        for (int i = 0; i < MEMO_SLOTS; i++) m->memo_key[i] = -1;
        m->memo_n = 0;
    }
    unsigned s = h;
    while (m->memo_key[s] >= 0) s = (s + 1) % MEMO_SLOTS;
    uint32_t *bits = m->memo_bits + (size_t)s * (size_t)m->W;
    memset(bits, 0, (size_t)m->W * sizeof *bits);
    int pos = gm_node_pos(m->gm, t);
    pos_cache *pc = &m->pc[pos];
    if (!gm_node_in_char(m->gm, t) && pc->state == 0 && build_pos_cache(m, pos)) return NULL;
    if (!gm_node_in_char(m->gm, t) && pc->state == 1) {
        memcpy(bits, pc->acc, (size_t)m->W * sizeof *bits);
        for (int i = 0; i < pc->n_unc; i++) {
            if (bit_get(bits, pc->unc[i])) continue;
            int ok = token_ok(m, t, pc->unc[i]);
            if (ok < 0) return NULL;
            if (ok) bit_set(bits, pc->unc[i]);
        }
    } else if (walk(m, &t, 1, bits, -1, NULL)) {
        return NULL;
    }
    if (gm_failed(m->gm)) return NULL;
    m->memo_key[s] = t;
    m->memo_n++;
    return bits;
}

int tm_fill_mask(tm_matcher *m, uint32_t *mask, char *err, size_t errlen) {
    memset(mask, 0, (size_t)m->W * sizeof *mask);
    if (m->terminated) return 0;
    int32_t mark = gm_n_nodes(m->gm);
    int rc = 0;
    for (int i = 0; i < m->n_state; i++) {
        int32_t t = m->state[i];
        if (t == GM_DONE) {
            for (int32_t id = 0; id < m->v->V; id++)
                if (m->v->stop[id]) bit_set(mask, id);
            continue;
        }
        const uint32_t *b = node_mask(m, t);
        if (!b) {
            rc = -1;
            break;
        }
        for (int w = 0; w < m->W; w++) mask[w] |= b[w];
    }
    gm_truncate(m->gm, mark);
    sets_clear(m);
    if (rc || gm_failed(m->gm)) {
        if (err && errlen)
            snprintf(err, errlen, "grammar: too ambiguous (more than %d parse stacks) or out of memory", GRAMMAR_MAX_STACKS);
        return -1;
    }
    int count = 0;
    for (int w = 0; w < m->W; w++) count += __builtin_popcount(mask[w]);
    return count;
}

static int hist_push(tm_matcher *m) {
    if (m->n_hist + 1 > m->cap_hist) {
        int c = m->cap_hist ? m->cap_hist * 2 : 64;
        size_t *o = realloc(m->hist_off, (size_t)c * sizeof *o);
        if (o) m->hist_off = o;
        int *l = realloc(m->hist_len, (size_t)c * sizeof *l);
        if (l) m->hist_len = l;
        int *t = realloc(m->hist_term, (size_t)c * sizeof *t);
        if (t) m->hist_term = t;
        if (!o || !l || !t) return -1;
        m->cap_hist = c;
    }
    if (m->hist_n + (size_t)m->n_state > m->hist_cap) {
        size_t c = m->hist_cap ? m->hist_cap * 2 : 1024;
        while (c < m->hist_n + (size_t)m->n_state) c *= 2;
        int32_t *h = realloc(m->hist, c * sizeof *h);
        if (!h) return -1;
        m->hist = h;
        m->hist_cap = c;
    }
    if (m->n_state) memcpy(m->hist + m->hist_n, m->state, (size_t)m->n_state * sizeof *m->state);
    m->hist_off[m->n_hist] = m->hist_n;
    m->hist_len[m->n_hist] = m->n_state;
    m->hist_term[m->n_hist] = m->terminated;
    m->hist_n += (size_t)m->n_state;
    m->n_hist++;
    return 0;
}

int tm_accept_bytes(tm_matcher *m, const char *s, size_t n) {
    if (m->terminated) return -1;
    int32_t mark = gm_n_nodes(m->gm);
    int32_t *a = m->ta, *b = m->tb;
    memcpy(a, m->state, (size_t)m->n_state * sizeof *a);
    int k = m->n_state;
    for (size_t i = 0; i < n && k > 0; i++) {
        k = gm_advance(m->gm, a, k, (uint8_t)s[i], b);
        int32_t *x = a;
        a = b, b = x;
    }
    if (k <= 0 || hist_push(m)) {
        gm_truncate(m->gm, mark);
        sets_clear(m);
        return -1;
    }
    memcpy(m->state, a, (size_t)k * sizeof *a);
    m->n_state = k;
    return 0;
}

int tm_accept(tm_matcher *m, int32_t id) {
    const tm_vocab *v = m->v;
    if (id < 0 || id >= v->V || m->terminated) return -1;
    if (v->stop[id]) {
        if (!tm_can_end(m) || hist_push(m)) return -1;
        m->terminated = 1;
        return 0;
    }
    size_t n = v->off[id + 1] - v->off[id];
    if (!n) return -1;
    return tm_accept_bytes(m, v->blob + v->off[id], n);
}

int32_t tm_min_bytes(const tm_matcher *m) { return m->terminated ? 0 : gm_min_bytes(m->gm, m->state, m->n_state); }

int32_t tm_min_bytes_after(tm_matcher *m, int32_t id) {
    const tm_vocab *v = m->v;
    if (id < 0 || id >= v->V || m->terminated) return -1;
    if (v->stop[id]) return tm_can_end(m) ? 0 : -1;
    const uint8_t *p = (const uint8_t *)v->blob + v->off[id];
    size_t n = v->off[id + 1] - v->off[id];
    int32_t mark = gm_n_nodes(m->gm), *a = m->ta, *b = m->tb;
    int k = m->n_state;
    memcpy(a, m->state, (size_t)k * sizeof *a);
    for (size_t i = 0; i < n && k > 0; i++) {
        k = gm_advance(m->gm, a, k, p[i], b);
        int32_t *x = a;
        a = b, b = x;
    }
    int32_t mb = n && k > 0 ? gm_min_bytes(m->gm, a, k) : -1;
    gm_truncate(m->gm, mark); /* scratch: the accepted token's nodes are made again */
    return mb;
}

int tm_keep_within(tm_matcher *m, const uint32_t *in, uint32_t *out, int32_t budget) {
    const tm_vocab *v = m->v;
    memset(out, 0, (size_t)m->W * sizeof *out);
    if (m->terminated) return 0;
    int32_t mark = gm_n_nodes(m->gm);
    int s0 = set_intern(m, m->state, m->n_state), count = 0;
    for (int w = 0; w < m->W && s0 >= 0; w++)
        for (uint32_t bits = in[w]; bits && s0 >= 0; bits &= bits - 1) {
            int32_t id = w * 32 + __builtin_ctz(bits);
            if (id >= v->V) break;
            if (!v->stop[id]) { /* interned sets and cached steps: tokens sharing a prefix share the work */
                const uint8_t *p = (const uint8_t *)v->blob + v->off[id];
                size_t n = v->off[id + 1] - v->off[id];
                int s = s0;
                for (size_t i = 0; i < n && s >= 0 && m->set_len[s] > 0; i++) s = set_step(m, s, p[i]);
                if (s < 0) s0 = -1;
                if (s < 0 || !n || !m->set_len[s] ||
                    gm_min_bytes(m->gm, m->set_pool + m->set_off[s], m->set_len[s]) > budget)
                    continue;
            } else if (!tm_can_end(m)) {
                continue;
            }
            bit_set(out, id);
            count++;
        }
    int failed = s0 < 0 || gm_failed(m->gm);
    gm_truncate(m->gm, mark);
    sets_clear(m);
    return failed ? -1 : count;
}

int tm_can_end(const tm_matcher *m) { return !m->terminated && m->n_state > 0 && m->state[0] == GM_DONE; }

int tm_is_terminated(const tm_matcher *m) {
    return m->terminated || (m->n_state == 1 && m->state[0] == GM_DONE);
}

void tm_rollback(tm_matcher *m, int n) {
    if (n > m->n_hist) n = m->n_hist;
    if (n <= 0) return;
    int k = m->n_hist - n;
    memcpy(m->state, m->hist + m->hist_off[k], (size_t)m->hist_len[k] * sizeof *m->state);
    m->n_state = m->hist_len[k];
    m->terminated = m->hist_term[k];
    m->hist_n = m->hist_off[k];
    m->n_hist = k;
}
