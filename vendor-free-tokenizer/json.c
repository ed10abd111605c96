/* json.c - a small read-only JSON reader for tokenizer.json.
 *
 * Why not jansson: a 128k-token tokenizer.json (9 MB, 128k vocab keys, 280k
 * merges) took 250-750 ms to parse with jansson here (one malloc and one hash
 * table entry per value), far over the 100 ms load budget. This reader parses
 * the file in place into an arena of nodes: strings are unescaped inside the
 * file buffer itself (never longer than their escaped form), objects and
 * arrays are sibling lists. Validates as it goes; errors give line and column. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_json.h"
#include "tok_internal.h"

/* 4 MB blocks (huge-page sized, see tok_big_alloc) */
#define NODES_PER_BLOCK (((size_t)4 << 20) / sizeof(jnode) - 1)
typedef struct block {
    struct block *next;
    jnode nodes[NODES_PER_BLOCK];
} block;

struct jdoc {
    char *buf; /* the file, NUL-terminated, unescaped in place */
    size_t len;
    block *blocks; /* node arena */
    size_t used;   /* nodes used in the first block */
    jnode *root;
};

typedef struct {
    jdoc *d;
    char *p, *end;
    const char *err_at;
    const char *why;
    int depth;
} parser;

static jnode *new_node(parser *ps, int type) {
    jdoc *d = ps->d;
    if (!d->blocks || d->used == NODES_PER_BLOCK) {
        block *b = tok_big_alloc(sizeof *b, 0);
        if (!b) {
            ps->why = "out of memory";
            return NULL;
        }
        b->next = d->blocks;
        d->blocks = b;
        d->used = 0;
    }
    jnode *n = &d->blocks->nodes[d->used++];
    memset(n, 0, sizeof *n);
    n->type = (uint8_t)type;
    return n;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t')) ps->p++;
}

static int fail(parser *ps, const char *why) {
    if (!ps->why) {
        ps->why = why;
        ps->err_at = ps->p;
    }
    return -1;
}

static int hex4(const char *s, uint32_t *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int x = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (x < 0) return -1;
        *v = *v * 16 + (uint32_t)x;
    }
    return 0;
}

/* Unescape the string starting after the opening quote, in place. */
static int parse_string(parser *ps, const char **out, size_t *len) {
    char *w = ps->p, *r = ps->p, *end = ps->end;
    *out = w;
    for (;;) {
        char *q = r; /* copy the plain run fast */
        while (q < end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
        if (w != r) memmove(w, r, (size_t)(q - r));
        w += q - r;
        r = q;
        if (r >= end) {
            ps->p = r;
            return fail(ps, "unterminated string");
        }
        if (*r == '"') break;
        if ((unsigned char)*r < 0x20) {
            ps->p = r;
            return fail(ps, "control character in string");
        }
        /* escape */
        if (r + 1 >= end) {
            ps->p = r;
            return fail(ps, "unterminated escape");
        }
        char c = r[1];
        r += 2;
        switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (end - r < 4 || hex4(r, &cp)) {
                ps->p = r;
                return fail(ps, "bad \\u escape");
            }
            r += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - r < 6 || r[0] != '\\' || r[1] != 'u' || hex4(r + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    ps->p = r;
                    return fail(ps, "unpaired surrogate in \\u escape");
                }
                r += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                ps->p = r;
                return fail(ps, "unpaired surrogate in \\u escape");
            }
            w += tok_utf8_put(cp, w); /* at most 4 bytes for 6 or 12 escaped */
            break;
        }
        default: ps->p = r - 1; return fail(ps, "unknown escape");
        }
    }
    *len = (size_t)(w - *out);
    *w = 0; /* w <= r, and r is at the closing quote */
    ps->p = r + 1;
    return 0;
}

static jnode *parse_value(parser *ps);

static int parse_container(parser *ps, jnode *n, char close) {
    jnode **tail = &n->child;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        const char *key = NULL;
        size_t klen = 0;
        if (close == '}') {
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a string key");
            ps->p++;
            if (parse_string(ps, &key, &klen)) return -1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') return fail(ps, "expected ':'");
            ps->p++;
        }
        jnode *v = parse_value(ps);
        if (!v) return -1;
        if (klen > UINT32_MAX) return fail(ps, "key longer than 4 GB");
        v->key = key;
        v->klen = (uint32_t)klen;
        *tail = v;
        tail = &v->next;
        n->n++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return 0;
        }
        return fail(ps, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int parse_number(parser *ps, jnode *n) {
    char *start = ps->p, *q = ps->p;
    int is_int = 1;
    if (*q == '-') q++;
    if (q >= ps->end || !(*q >= '0' && *q <= '9')) return fail(ps, "bad number");
    while (q < ps->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-')) {
        if (*q == '.' || *q == 'e' || *q == 'E') is_int = 0;
        q++;
    }
    if (is_int && q - start <= 18) { /* plain integer: no strtod (vocabularies hold 100k+ of them) */
        int64_t v = 0;
        for (const char *d = start + (*start == '-'); d < q; d++) v = v * 10 + (*d - '0');
        n->i = *start == '-' ? -v : v;
        n->num = (double)n->i;
        n->is_int = 1;
        ps->p = q;
        return 0;
    }
    char save = *q; /* the buffer is NUL-terminated and writable */
    *q = 0;
    errno = 0;
    n->num = strtod(start, NULL);
    /* a double outside int64's range must not be converted (undefined behaviour): clamp it */
    int64_t clamped = n->num >= 9.2e18 ? INT64_MAX : n->num <= -9.2e18 ? INT64_MIN : (int64_t)n->num;
    if (is_int) {
        long long v = strtoll(start, NULL, 10);
        n->i = errno ? clamped : (int64_t)v;
    } else {
        n->i = clamped;
    }
    n->is_int = is_int && !errno;
    *q = save;
    ps->p = q;
    return 0;
}

static jnode *parse_value(parser *ps) {
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end of file");
        return NULL;
    }
    if (++ps->depth > 200) {
        fail(ps, "nesting too deep");
        return NULL;
    }
    jnode *n = NULL;
    char c = *ps->p;
    if (c == '{' || c == '[') {
        n = new_node(ps, c == '{' ? J_OBJECT : J_ARRAY);
        if (n && parse_container(ps, n, c == '{' ? '}' : ']')) n = NULL;
    } else if (c == '"') {
        n = new_node(ps, J_STRING);
        ps->p++;
        if (n && parse_string(ps, &n->s, &n->len)) n = NULL;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        n = new_node(ps, J_NUMBER);
        if (n && parse_number(ps, n)) n = NULL;
    } else {
        static const struct {
            const char *word;
            int type, val;
        } lits[] = {{"true", J_BOOL, 1}, {"false", J_BOOL, 0}, {"null", J_NULL, 0}};
        for (int i = 0; i < 3 && !n; i++) {
            size_t L = strlen(lits[i].word);
            if ((size_t)(ps->end - ps->p) >= L && !memcmp(ps->p, lits[i].word, L)) {
                n = new_node(ps, lits[i].type);
                if (n) n->i = lits[i].val;
                ps->p += L;
            }
        }
        if (!n) fail(ps, "unexpected character");
    }
    ps->depth--;
    return n;
}

void jdoc_free(jdoc *d) {
    if (!d) return;
    while (d->blocks) {
        block *b = d->blocks->next;
        free(d->blocks);
        d->blocks = b;
    }
    free(d->buf);
    free(d);
}

jnode *jdoc_root(jdoc *d) { return d->root; }

static void locate(const char *buf, const char *at, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (const char *p = buf; p < at; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

jdoc *jdoc_load(const char *path, char *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        tok_errf(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    jdoc *d = calloc(1, sizeof *d);
    long n = -1;
    if (d && !fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET))
        d->buf = tok_big_alloc((size_t)n + 1, 0);
    if (!d || !d->buf || fread(d->buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        tok_errf(err, "%s: cannot read the file", path);
        jdoc_free(d);
        return NULL;
    }
    fclose(f);
    d->len = (size_t)n;
    d->buf[n] = 0;
    /* line / column of an error refer to the original text: keep a copy only if needed */
    parser ps = {d, d->buf, d->buf + n, NULL, NULL, 0};
    d->root = parse_value(&ps);
    if (d->root) {
        skip_ws(&ps);
        if (ps.p != ps.end) fail(&ps, "trailing characters after the JSON value");
    }
    if (ps.why) {
        int line, col;
        locate(d->buf, ps.err_at ? ps.err_at : ps.p, &line, &col);
        tok_errf(err, "%s:%d:%d: invalid JSON: %s", path, line, col, ps.why);
        jdoc_free(d);
        return NULL;
    }
    return d;
}

jnode *jget(const jnode *o, const char *key) {
    if (!o || o->type != J_OBJECT) return NULL;
    size_t kl = strlen(key);
    for (jnode *c = o->child; c; c = c->next)
        if (c->klen == kl && !memcmp(c->key, key, kl)) return c;
    return NULL;
}

const char *jstr(const jnode *o, const char *key) {
    jnode *v = jget(o, key);
    return v && v->type == J_STRING ? v->s : NULL;
}

int jbool(const jnode *o, const char *key, int dflt) {
    jnode *v = jget(o, key);
    return v && v->type == J_BOOL ? (int)v->i : dflt;
}
