/* num_range.c - numbers within bounds and a multipleOf as GBNF, see num_range.h. */
#include "num_range.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int num_bound_parse(const char *t, num_bound *b) {
    memset(b, 0, sizeof *b);
    b->has = 1;
    if (*t == '-') b->neg = 1, t++;
    char digits[2 * NUM_RANGE_MAX_DIGITS + 400];
    int nd = 0, point = -1, exp = 0;
    for (; *t && *t != 'e' && *t != 'E'; t++) {
        if (*t == '.') point = nd;
        else if (*t >= '0' && *t <= '9' && nd < (int)sizeof digits - 1) digits[nd++] = *t;
        else return -1;
    }
    if (*t) exp = atoi(t + 1);
    if (point < 0) point = nd;
    point += exp; /* the point sits after digit `point` of digits[0..nd) */
    if (point > NUM_RANGE_MAX_DIGITS || point < -NUM_RANGE_MAX_DIGITS) return -1;
    int ni = 0, nf = 0;
    for (int i = 0; i < point; i++) {
        char d = i < nd ? digits[i] : '0';
        if (ni == 0 && d == '0') continue;
        if (ni >= NUM_RANGE_MAX_DIGITS) return -1;
        b->ip[ni++] = d;
    }
    if (!ni) b->ip[ni++] = '0';
    for (int i = point; i < nd; i++) {
        if (nf >= NUM_RANGE_MAX_DIGITS) return -1;
        b->fp[nf++] = i < 0 ? '0' : digits[i];
    }
    while (nf && b->fp[nf - 1] == '0') nf--;
    b->fp[nf] = 0;
    b->ip[ni] = 0;
    if (!strcmp(b->ip, "0") && !nf) b->neg = 0;
    return 0;
}

enum { P_START, P_MINUS, P_ZERO, P_INT, P_DOT, P_FRAC };

typedef struct {
    uint8_t phase, neg, nz, ni, nf;
    int8_t cmp[2];
    uint8_t pad;
    uint32_t rem;
} nstate;

typedef struct {
    const num_range *r;
    const num_bound *b[2];
    int L[2], F[2];
    int ni_cap, nf_cap;
    nstate *st;
    int32_t (*tr)[12]; /* symbols 0-9, '-', '.' */
    int n, cap;
    int32_t *hash;
    int hcap;
} nfa;

static uint32_t st_hash(const nstate *s) {
    const unsigned char *p = (const unsigned char *)s;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < sizeof *s; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* The id of state s (added if new), or -1 out of memory or past the limit. */
static int st_id(nfa *a, const nstate *s) {
    uint32_t h = st_hash(s) & (uint32_t)(a->hcap - 1);
    for (; a->hash[h] >= 0; h = (h + 1) & (uint32_t)(a->hcap - 1))
        if (!memcmp(&a->st[a->hash[h]], s, sizeof *s)) return a->hash[h];
    if (a->n >= NUM_RANGE_MAX_STATES) return -1;
    if (a->n == a->cap) {
        int c = a->cap ? 2 * a->cap : 256;
        nstate *t = realloc(a->st, (size_t)c * sizeof *t);
        if (!t) return -1;
        a->st = t;
        int32_t (*u)[12] = realloc(a->tr, (size_t)c * sizeof *u);
        if (!u) return -1;
        a->tr = u;
        a->cap = c;
    }
    a->st[a->n] = *s;
    a->hash[h] = a->n;
    return a->n++;
}

/* The comparison of the magnitude read so far (as a finished number) with bound k. */
static int mag_cmp(const nfa *a, const nstate *s, int k) {
    int c = s->cmp[k];
    if (s->phase == P_ZERO || s->phase == P_INT) c = s->ni < a->L[k] ? -1 : s->ni > a->L[k] ? 1 : c;
    if (c == 0 && s->nf < a->F[k]) c = -1; /* the bound's fraction goes on, and ends in a non-zero digit */
    return c;
}

static int accepts(const nfa *a, const nstate *s) {
    if (s->phase != P_ZERO && s->phase != P_INT && s->phase != P_FRAC) return 0;
    if (s->neg && !s->nz) return 0;
    for (int k = 0; k < 2; k++) {
        if (!a->b[k]) continue;
        int xs = s->neg ? -1 : 1, bs = a->b[k]->neg ? -1 : 1, c;
        if (xs != bs) c = xs < bs ? -1 : 1;
        else c = s->neg ? -mag_cmp(a, s, k) : mag_cmp(a, s, k);
        if (k == 0 && !(c > 0 || (c == 0 && !a->b[k]->exclusive))) return 0;
        if (k == 1 && !(c < 0 || (c == 0 && !a->b[k]->exclusive))) return 0;
    }
    if (a->r->mod) {
        uint64_t rem = s->rem;
        for (int i = s->nf; i < a->r->mod_frac; i++) rem = rem * 10 % a->r->mod;
        if (rem) return 0;
    }
    return 1;
}

/* The state after symbol y (0-9, 10 '-', 11 '.'), or 0 if y is not allowed. */
static int step(const nfa *a, const nstate *s, int y, nstate *o) {
    *o = *s;
    int frac_ok = !a->r->integer && (!a->r->mod || a->r->mod_frac > 0);
    if (y == 10) {
        if (s->phase != P_START) return 0;
        o->phase = P_MINUS, o->neg = 1;
        return 1;
    }
    if (y == 11) {
        if ((s->phase != P_ZERO && s->phase != P_INT) || !frac_ok) return 0;
        for (int k = 0; k < 2; k++)
            if (a->b[k]) o->cmp[k] = (int8_t)(s->ni < a->L[k] ? -1 : s->ni > a->L[k] ? 1 : s->cmp[k]);
        o->phase = P_DOT;
        return 1;
    }
    if (s->phase == P_ZERO) return 0;
    if (s->phase == P_START || s->phase == P_MINUS || s->phase == P_INT) {
        if (s->phase != P_INT) o->phase = y ? P_INT : P_ZERO;
        for (int k = 0; k < 2; k++)
            if (a->b[k] && s->ni < a->L[k] && s->cmp[k] == 0) {
                int d = a->b[k]->ip[s->ni] - '0';
                o->cmp[k] = (int8_t)(y < d ? -1 : y > d ? 1 : 0);
            }
        if (o->ni < a->ni_cap) o->ni++;
    } else { /* P_DOT, P_FRAC */
        if (a->r->mod && s->nf >= a->r->mod_frac) return 0;
        for (int k = 0; k < 2; k++)
            if (a->b[k] && s->cmp[k] == 0) {
                int d = s->nf < a->F[k] ? a->b[k]->fp[s->nf] - '0' : 0;
                o->cmp[k] = (int8_t)(y < d ? -1 : y > d ? 1 : 0);
            }
        o->phase = P_FRAC;
        if (o->nf < a->nf_cap) o->nf++;
    }
    if (y) o->nz = 1;
    if (a->r->mod) o->rem = (uint32_t)(((uint64_t)s->rem * 10 + (unsigned)y) % a->r->mod);
    return 1;
}

static void emit_name(num_range_emit emit, void *user, const char *start, int id) {
    char buf[128];
    int n = id ? snprintf(buf, sizeof buf, "%s-%d", start, id) : snprintf(buf, sizeof buf, "%s", start);
    emit(user, buf, (size_t)n);
}

int num_range_gbnf(const num_range *r, const char *start, num_range_emit emit, void *user) {
    nfa a = {.r = r};
    a.b[0] = r->lo.has ? &r->lo : NULL;
    a.b[1] = r->hi.has ? &r->hi : NULL;
    int lmax = 0, fmax = r->mod ? r->mod_frac : 0;
    for (int k = 0; k < 2; k++)
        if (a.b[k]) {
            a.L[k] = (int)strlen(a.b[k]->ip), a.F[k] = (int)strlen(a.b[k]->fp);
            if (a.L[k] > lmax) lmax = a.L[k];
            if (a.F[k] > fmax) fmax = a.F[k];
        }
    a.ni_cap = lmax + 1, a.nf_cap = fmax + 1;
    a.hcap = 1;
    while (a.hcap < 2 * NUM_RANGE_MAX_STATES) a.hcap *= 2;
    a.hash = malloc((size_t)a.hcap * sizeof *a.hash);
    char *live = NULL;
    int rc = -1;
    if (!a.hash) goto out;
    memset(a.hash, 0xff, (size_t)a.hcap * sizeof *a.hash);
    nstate s0;
    memset(&s0, 0, sizeof s0);
    if (st_id(&a, &s0) < 0) goto out;
    for (int i = 0; i < a.n; i++) {
        for (int y = 0; y < 12; y++) {
            nstate o;
            a.tr[i][y] = -1;
            if (!step(&a, &a.st[i], y, &o)) continue;
            int id = st_id(&a, &o);
            if (id < 0) goto out;
            a.tr[i][y] = id;
        }
    }
    live = calloc((size_t)a.n, 1);
    if (!live) goto out;
    for (int i = 0; i < a.n; i++) live[i] = (char)accepts(&a, &a.st[i]);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = a.n; i-- > 0;)
            if (!live[i])
                for (int y = 0; y < 12; y++)
                    if (a.tr[i][y] >= 0 && live[a.tr[i][y]]) {
                        live[i] = 1, changed = 1;
                        break;
                    }
    }
    rc = 0;
    if (!live[0]) goto out;
    for (int i = 0; i < a.n; i++) {
        if (!live[i]) continue;
        rc++;
        emit_name(emit, user, start, i);
        emit(user, " ::= ", 5);
        int first = 1;
        if (accepts(&a, &a.st[i])) emit(user, "\"\"", 2), first = 0;
        char done[12] = {0};
        for (int y = 0; y < 12; y++) {
            int t = a.tr[i][y];
            if (t < 0 || !live[t] || done[y]) continue;
            if (!first) emit(user, " | ", 3);
            first = 0;
            if (y >= 10) {
                emit(user, y == 10 ? "\"-\" " : "\".\" ", 4);
            } else {
                char cls[16];
                int n = 0;
                cls[n++] = '[';
                for (int z = y; z < 10; z++)
                    if (a.tr[i][z] == t) cls[n++] = (char)('0' + z), done[z] = 1;
                cls[n++] = ']', cls[n++] = ' ';
                emit(user, cls, (size_t)n);
            }
            emit_name(emit, user, start, t);
        }
        emit(user, "\n", 1);
    }
out:
    free(a.st), free(a.tr), free(a.hash), free(live);
    return rc;
}
