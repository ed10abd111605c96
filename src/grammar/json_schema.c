/* json_schema.c - JSON Schema (jansson) to GBNF text, see json_schema.h. */
#include "json_schema.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "num_range.h"

#define WS "[ \\n\\r\\t]*"

static const char basic_rules[] =
    "basic-escape ::= [\"\\\\/bfnrt] | \"u\" [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9]\n"
    "basic-string-sub ::= \"\\\"\" | [^\\x00-\\x1f\"\\\\] basic-string-sub | \"\\\\\" basic-escape basic-string-sub\n"
    "basic-string ::= \"\\\"\" basic-string-sub\n"
    "basic-integer ::= \"0\" | \"-\"? [1-9] [0-9]*\n"
    "basic-number ::= \"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [+-]? [0-9]+)?\n"
    "basic-boolean ::= \"true\" | \"false\"\n"
    "basic-null ::= \"null\"\n"
    "basic-array ::= \"[\" " WS " basic-any (" WS " \",\" " WS " basic-any)* " WS " \"]\" | \"[\" " WS " \"]\"\n"
    "basic-object ::= \"{\" " WS " basic-string " WS " \":\" " WS " basic-any (" WS " \",\" " WS " basic-string " WS
    " \":\" " WS " basic-any)* " WS " \"}\" | \"{\" " WS " \"}\"\n"
    "basic-any ::= basic-number | basic-string | basic-boolean | basic-null | basic-array | basic-object\n";

const char *json_object_gbnf(void) {
    return "root ::= basic-object\n"
           "basic-escape ::= [\"\\\\/bfnrt] | \"u\" [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9]\n"
           "basic-string-sub ::= \"\\\"\" | [^\\x00-\\x1f\"\\\\] basic-string-sub | \"\\\\\" basic-escape "
           "basic-string-sub\n"
           "basic-string ::= \"\\\"\" basic-string-sub\n"
           "basic-number ::= \"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [+-]? [0-9]+)?\n"
           "basic-boolean ::= \"true\" | \"false\"\n"
           "basic-null ::= \"null\"\n"
           "basic-array ::= \"[\" " WS " basic-any (" WS " \",\" " WS " basic-any)* " WS " \"]\" | \"[\" " WS
           " \"]\"\n"
           "basic-object ::= \"{\" " WS " basic-string " WS " \":\" " WS " basic-any (" WS " \",\" " WS
           " basic-string " WS " \":\" " WS " basic-any)* " WS " \"}\" | \"{\" " WS " \"}\"\n"
           "basic-any ::= basic-number | basic-string | basic-boolean | basic-null | basic-array | basic-object\n";
}

/* ---- text buffers ---------------------------------------------------------------- */

typedef struct {
    char *s;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n + 1) c *= 2;
        char *t = realloc(b->s, c);
        if (!t) {
            b->oom = 1;
            return;
        }
        b->s = t;
        b->cap = c;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static void sb_fmt(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_fmt(sbuf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) sb_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A GBNF literal of n bytes. */
static void sb_lit(sbuf *b, const char *s, size_t n) {
    sb_str(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') sb_str(b, "\\\"");
        else if (c == '\\') sb_str(b, "\\\\");
        else if (c < 0x20 || c == 0x7f) sb_fmt(b, "\\x%02x", c);
        else sb_add(b, (const char *)&c, 1);
    }
    sb_str(b, "\"");
}

/* ---- the converter ----------------------------------------------------------------- */

typedef struct {
    char *ref;
    char name[24];
} ref_rule;

typedef struct {
    json_t *target;
    char name[24];
    int ref; /* index into refs (the path of errors there) */
} pending_ref;

#define MAX_NOTES 24

typedef struct {
    json_t *root;
    sbuf out;
    int n_rules;
    ref_rule *refs;        /* by insertion; refs_hash indexes them */
    int n_refs, cap_refs;
    int32_t *refs_hash;
    int hash_cap;
    pending_ref *pend;     /* referenced schemas still to write */
    int n_pend, cap_pend;
    json_t **owned;        /* schemas made here (allOf merges), freed at the end */
    int n_owned, cap_owned;
    int strict;
    const char *notes[MAX_NOTES]; /* keywords left unenforced (static strings) */
    char note_path[MAX_NOTES][64];
    int n_notes;
    char path[256];
    char *err;
    size_t errlen;
    int failed;
    int empty; /* the failure is an empty language (an anyOf branch may be left out) */
    int rx_fail; /* the failure is a regex outside the subset */
} conv;

/* Control characters of a message (from the schema's keys and patterns, or jansson's quote of the
 * text) become '?': an error is always one line. */
static void one_line(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7F) *s = '?';
}

static int cerr(conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define cempty(c, ...) ((c)->empty = !(c)->failed, cerr((c), __VA_ARGS__))
static int cerr(conv *c, const char *fmt, ...) {
    if (c->failed) return -1;
    c->failed = 1;
    c->rx_fail = !strncmp(fmt, "pattern:", 8);
    if (c->err && c->errlen) {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(c->err, c->errlen, "json schema: at %s: %s", c->path[0] ? c->path : "#", msg);
        one_line(c->err);
    }
    return -1;
}

/* Append "/key" to the error path; returns the old length to restore. */
static size_t path_push(conv *c, const char *key) {
    size_t n = strlen(c->path);
    snprintf(c->path + n, sizeof c->path - n, "/%s", key);
    return n;
}
static void path_pop(conv *c, size_t n) { c->path[n] = 0; }

static void new_name(conv *c, char *name) { snprintf(name, 24, "s%d", ++c->n_rules); }

static int gen(conv *c, json_t *s, int depth, char *name);

/* ---- regex subset to GBNF (json_schema.h) ---- */

typedef struct {
    const char *s, *end, *start;
    conv *c;
} rx;

typedef struct {
    uint32_t *r; /* pairs */
    int n, cap;
} ranges;

static int rg_add(ranges *g, uint32_t lo, uint32_t hi) {
    if (g->n + 1 > g->cap) {
        int c = g->cap ? g->cap * 2 : 16;
        uint32_t *t = realloc(g->r, (size_t)c * 2 * sizeof *t);
        if (!t) return -1;
        g->r = t;
        g->cap = c;
    }
    g->r[2 * g->n] = lo;
    g->r[2 * g->n + 1] = hi;
    g->n++;
    return 0;
}

/* Sorted, merged, optionally complemented; then the characters a JSON string must
 * escape are removed. Emitted as a GBNF class (or a never-matching one). */
static void rg_emit(sbuf *b, ranges *g, int neg) {
    for (int i = 1; i < g->n; i++)
        for (int j = i; j > 0 && g->r[2 * (j - 1)] > g->r[2 * j]; j--) {
            uint32_t a = g->r[2 * j], h = g->r[2 * j + 1];
            g->r[2 * j] = g->r[2 * (j - 1)], g->r[2 * j + 1] = g->r[2 * (j - 1) + 1];
            g->r[2 * (j - 1)] = a, g->r[2 * (j - 1) + 1] = h;
        }
    uint32_t out[2 * 600];
    int m = 0;
    uint32_t next = 0;
    for (int i = 0; i < g->n; i++) {
        uint32_t lo = g->r[2 * i], hi = g->r[2 * i + 1];
        if (!neg) {
            if (m && lo <= out[2 * (m - 1) + 1] + 1) {
                if (hi > out[2 * (m - 1) + 1]) out[2 * (m - 1) + 1] = hi;
            } else if (m < 590) {
                out[2 * m] = lo, out[2 * m + 1] = hi, m++;
            }
        } else {
            if (lo > next && m < 590) out[2 * m] = next, out[2 * m + 1] = lo - 1, m++;
            if (hi + 1 > next) next = hi + 1;
        }
    }
    if (neg && next <= 0x10FFFF) out[2 * m] = next, out[2 * m + 1] = 0x10FFFF, m++;
    /* drop 0x00-0x1f, '"', '\\' */
    static const uint32_t bad[3][2] = {{0, 0x1f}, {'"', '"'}, {'\\', '\\'}};
    sb_str(b, "[");
    int any = 0;
    for (int i = 0; i < m; i++) {
        uint32_t lo = out[2 * i], hi = out[2 * i + 1];
        uint32_t parts[8][2];
        int np = 0;
        parts[np][0] = lo, parts[np][1] = hi, np++;
        for (int k = 0; k < 3; k++) {
            int nn = 0;
            uint32_t keep[8][2];
            for (int p = 0; p < np; p++) {
                uint32_t a = parts[p][0], z = parts[p][1];
                if (z < bad[k][0] || a > bad[k][1]) {
                    keep[nn][0] = a, keep[nn][1] = z, nn++;
                    continue;
                }
                if (a < bad[k][0]) keep[nn][0] = a, keep[nn][1] = bad[k][0] - 1, nn++;
                if (z > bad[k][1]) keep[nn][0] = bad[k][1] + 1, keep[nn][1] = z, nn++;
            }
            memcpy(parts, keep, sizeof keep);
            np = nn;
        }
        for (int p = 0; p < np; p++) {
            sb_fmt(b, "\\U%08x", parts[p][0]);
            if (parts[p][1] != parts[p][0]) sb_fmt(b, "-\\U%08x", parts[p][1]);
            any = 1;
        }
    }
    if (!any) sb_str(b, "^\\x00-\\U0010ffff"); /* matches nothing */
    sb_str(b, "]");
}

static int rx_class_escape(rx *x, char e, ranges *g, int *handled) {
    *handled = 1;
    switch (e) {
    case 'd': return rg_add(g, '0', '9');
    case 'w': return rg_add(g, 'a', 'z') || rg_add(g, 'A', 'Z') || rg_add(g, '0', '9') || rg_add(g, '_', '_');
    case 's': return rg_add(g, ' ', ' ') || rg_add(g, '\t', '\r');
    }
    (void)x;
    *handled = 0;
    return 0;
}

/* One (possibly escaped) literal code point of a regex; -1 on error. */
static int32_t rx_char(rx *x) {
    const unsigned char *s = (const unsigned char *)x->s;
    if (*s != '\\') {
        int len = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
        if (!len || x->s + len > x->end) return cerr(x->c, "pattern: invalid UTF-8");
        uint32_t cp = len == 1 ? s[0] : s[0] & (0x7F >> len);
        for (int i = 1; i < len; i++) {
            if ((s[i] & 0xC0) != 0x80) return cerr(x->c, "pattern: invalid UTF-8");
            cp = cp << 6 | (s[i] & 0x3F);
        }
        x->s += len;
        return (int32_t)cp;
    }
    if (x->s + 1 >= x->end) return cerr(x->c, "pattern: a trailing '\\'");
    char e = x->s[1];
    x->s += 2;
    switch (e) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    case 'u': {
        uint32_t v = 0;
        for (int i = 0; i < 4; i++) {
            if (x->s >= x->end) return cerr(x->c, "pattern: \\u needs 4 hex digits");
            char h = *x->s++;
            int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (d < 0) return cerr(x->c, "pattern: \\u needs 4 hex digits");
            v = v << 4 | (uint32_t)d;
        }
        return (int32_t)v;
    }
    }
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
        return cerr(x->c, "pattern: the escape '\\%c' is not supported", e);
    return (unsigned char)e;
}

static int rx_alt(rx *x, sbuf *b, int depth);

static void emit_char(sbuf *b, uint32_t cp) {
    if (cp == '"') sb_str(b, "\"\\\\\\\"\"");       /* the JSON escape \" */
    else if (cp == '\\') sb_str(b, "\"\\\\\\\\\""); /* the JSON escape \\ */
    else if (cp < 0x20) sb_fmt(b, "\"\\\\u%04x\"", cp);
    else sb_fmt(b, "[\\U%08x]", cp);
}

static int rx_atom(rx *x, sbuf *b, int depth) {
    char c = *x->s;
    if (c == '(') {
        if (depth >= JSON_SCHEMA_MAX_DEPTH) return cerr(x->c, "pattern: groups nested too deep");
        x->s++;
        if (x->end - x->s >= 2 && x->s[0] == '?') {
            if (x->s[1] != ':') return cerr(x->c, "pattern: '(?%c' (lookaround, named groups) is not supported", x->s[1]);
            x->s += 2;
        }
        sb_str(b, "(");
        if (rx_alt(x, b, depth + 1)) return -1;
        if (x->s >= x->end || *x->s != ')') return cerr(x->c, "pattern: unbalanced '('");
        x->s++;
        sb_str(b, ")");
        return 0;
    }
    if (c == '[') {
        x->s++;
        int neg = 0;
        if (x->s < x->end && *x->s == '^') neg = 1, x->s++;
        ranges g = {0};
        int first = 1;
        while (x->s < x->end && (*x->s != ']' || first)) {
            first = 0;
            if (*x->s == '\\' && x->s + 1 < x->end) {
                int handled;
                char e = x->s[1];
                if (e == 'D' || e == 'W' || e == 'S') { /* the complement of \d \w \s, inside the class */
                    ranges pos = {0};
                    int h2, bad = rx_class_escape(x, (char)(e | 0x20), &pos, &h2);
                    for (int i = 1; i < pos.n; i++) /* sort (at most four ranges) */
                        for (int j = i; j > 0 && pos.r[2 * (j - 1)] > pos.r[2 * j]; j--) {
                            uint32_t a0 = pos.r[2 * j], a1 = pos.r[2 * j + 1];
                            pos.r[2 * j] = pos.r[2 * (j - 1)], pos.r[2 * j + 1] = pos.r[2 * (j - 1) + 1];
                            pos.r[2 * (j - 1)] = a0, pos.r[2 * (j - 1) + 1] = a1;
                        }
                    uint32_t next = 0;
                    for (int i = 0; i < pos.n && !bad; i++) {
                        if (pos.r[2 * i] > next) bad = rg_add(&g, next, pos.r[2 * i] - 1);
                        next = pos.r[2 * i + 1] + 1;
                    }
                    if (!bad) bad = rg_add(&g, next, 0x10FFFF);
                    free(pos.r);
                    if (bad) {
                        free(g.r);
                        return cerr(x->c, "out of memory");
                    }
                    x->s += 2;
                    continue;
                }
                if (rx_class_escape(x, e, &g, &handled)) {
                    free(g.r);
                    return cerr(x->c, "out of memory");
                }
                if (handled) {
                    x->s += 2;
                    continue;
                }
            }
            int32_t lo = rx_char(x), hi = lo;
            if (lo >= 0 && x->s + 1 < x->end && *x->s == '-' && x->s[1] != ']') {
                x->s++;
                hi = rx_char(x);
                if (hi >= 0 && hi < lo) hi = -1, cerr(x->c, "pattern: class range out of order");
            }
            if (lo < 0 || hi < 0 || rg_add(&g, (uint32_t)lo, (uint32_t)hi)) {
                free(g.r);
                return lo < 0 || hi < 0 ? -1 : cerr(x->c, "out of memory");
            }
        }
        if (x->s >= x->end) {
            free(g.r);
            return cerr(x->c, "pattern: unterminated '['");
        }
        x->s++;
        rg_emit(b, &g, neg);
        free(g.r);
        return 0;
    }
    if (c == '.') {
        x->s++;
        ranges g = {0};
        if (rg_add(&g, '\n', '\n')) return cerr(x->c, "out of memory");
        rg_emit(b, &g, 1);
        free(g.r);
        return 0;
    }
    if (c == '\\' && x->s + 1 < x->end && strchr("dwsDWS", x->s[1])) {
        char e = x->s[1];
        x->s += 2;
        ranges g = {0};
        int handled;
        if (rx_class_escape(x, (char)(e | 0x20), &g, &handled)) return cerr(x->c, "out of memory");
        rg_emit(b, &g, e >= 'A' && e <= 'Z');
        free(g.r);
        return 0;
    }
    if (c == '\\' && x->s + 1 < x->end && strchr("bB", x->s[1]))
        return cerr(x->c, "pattern: word boundaries are not supported");
    if (c == '\\' && x->s + 1 < x->end && x->s[1] >= '1' && x->s[1] <= '9')
        return cerr(x->c, "pattern: backreferences are not supported");
    if (c == '^' || c == '$') return cerr(x->c, "pattern: '%c' is supported only at the ends", c);
    if (c == '*' || c == '+' || c == '?' || c == '{') return cerr(x->c, "pattern: '%c' has nothing to repeat", c);
    int32_t cp = rx_char(x);
    if (cp < 0) return -1;
    emit_char(b, (uint32_t)cp);
    return 0;
}

static int rx_seq(rx *x, sbuf *b, int depth) {
    sb_str(b, "(\"\"");
    while (x->s < x->end && *x->s != '|' && *x->s != ')') {
        if (*x->s == '$' && x->s + 1 == x->end) {
            x->s++;
            break;
        }
        sb_str(b, " ");
        if (rx_atom(x, b, depth)) return -1;
        if (x->s >= x->end) break;
        char q = *x->s;
        if (q == '*' || q == '+' || q == '?') {
            sb_add(b, &q, 1);
            x->s++;
        } else if (q == '{') { /* {m}, {m,} or {m,n}: digits only */
            const char *p = x->s + 1;
            long lo = 0, hi;
            int nd = 0, nh = 0;
            for (; p < x->end && *p >= '0' && *p <= '9' && lo <= GRAMMAR_MAX_REPEAT; p++, nd++)
                lo = lo * 10 + (*p - '0');
            hi = lo;
            if (nd && p < x->end && *p == ',') {
                for (p++, hi = 0; p < x->end && *p >= '0' && *p <= '9' && hi <= GRAMMAR_MAX_REPEAT; p++, nh++)
                    hi = hi * 10 + (*p - '0');
                if (!nh) hi = -1;
            }
            if (!nd || p >= x->end || *p != '}' || lo > GRAMMAR_MAX_REPEAT || hi > GRAMMAR_MAX_REPEAT ||
                (hi >= 0 && hi < lo))
                return cerr(x->c, "pattern: a bad or too large {m,n} repetition");
            if (hi < 0) sb_fmt(b, "{%ld,}", lo);
            else sb_fmt(b, "{%ld,%ld}", lo, hi);
            x->s = p + 1;
        } else {
            continue;
        }
        if (x->s < x->end && (*x->s == '?' || *x->s == '+'))
            return cerr(x->c, "pattern: lazy and possessive quantifiers are not supported");
    }
    sb_str(b, ")");
    return 0;
}

static int rx_alt(rx *x, sbuf *b, int depth) {
    if (rx_seq(x, b, depth)) return -1;
    while (x->s < x->end && *x->s == '|') {
        x->s++;
        sb_str(b, " | ");
        if (rx_seq(x, b, depth)) return -1;
    }
    return 0;
}

/* Any decoded string characters: what an unanchored pattern may have around its match. */
#define ANY_CHARS "([^\\x00-\\x1f\"\\\\] | \"\\\\\" basic-escape)*"

/* "\"" REGEX "\"" into b. A pattern matches anywhere in the string (JSON Schema's search
 * semantics): an end without its anchor ('^' first, '$' last) may have any characters. */
static int gen_pattern(conv *c, const char *pat, sbuf *b) {
    rx x = {pat, pat + strlen(pat), pat, c};
    size_t n = strlen(pat), bs = 0;
    while (bs < n - (n > 0) && pat[n - 2 - bs] == '\\') bs++;
    int head = !(n && pat[0] == '^'), tail = !(n && pat[n - 1] == '$' && bs % 2 == 0);
    if (!head) x.s++;
    sb_str(b, "\"\\\"\" ");
    if (head) sb_str(b, ANY_CHARS " ");
    sb_str(b, "(");
    if (rx_alt(&x, b, 0)) return -1;
    if (x.s != x.end) return cerr(c, "pattern: unbalanced ')'");
    sb_str(b, ")");
    if (tail) sb_str(b, " " ANY_CHARS);
    sb_str(b, " \"\\\"\"");
    return 0;
}

/* ---- schema nodes ---- */

/* Validating keywords a grammar cannot express: compiled with a warning naming them
 * (an error with strict). */
static int note(conv *c, const char *kw) {
    if (c->strict) return cerr(c, "'%s' cannot be enforced by a grammar (--strict-schema)", kw);
    for (int i = 0; i < c->n_notes; i++)
        if (!strcmp(c->notes[i], kw)) return 0;
    if (c->n_notes < MAX_NOTES) {
        const char *at = c->path[0] ? c->path : "#";
        size_t n = strlen(at) < sizeof c->note_path[0] - 1 ? strlen(at) : sizeof c->note_path[0] - 1;
        memcpy(c->note_path[c->n_notes], at, n);
        c->note_path[c->n_notes][n] = 0;
        c->notes[c->n_notes++] = kw;
    }
    return 0;
}

static int note_unenforced(conv *c, json_t *s) {
    static const char *const kws[] = {"not", "dependencies", "dependentRequired", "dependentSchemas", "contains",
                                      "unevaluatedProperties", "unevaluatedItems", NULL};
    for (int i = 0; kws[i]; i++) {
        json_t *v = json_object_get(s, kws[i]);
        if (v && !(i >= 5 && json_is_true(v)) && note(c, kws[i])) return -1;
    }
    if (json_is_true(json_object_get(s, "uniqueItems")) && note(c, "uniqueItems")) return -1;
    if (json_object_get(s, "if") && (json_object_get(s, "then") || json_object_get(s, "else")) &&
        note(c, "if/then/else"))
        return -1;
    return 0;
}

static int get_count(conv *c, json_t *s, const char *key, long *out, long dflt) {
    json_t *v = json_object_get(s, key);
    *out = dflt;
    if (!v) return 0;
    if (json_is_real(v) && json_real_value(v) == (double)(long)json_real_value(v)) {
        *out = (long)json_real_value(v);
        if (*out >= 0 && *out <= GRAMMAR_MAX_REPEAT) return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > GRAMMAR_MAX_REPEAT)
        return cerr(c, "'%s' must be an integer from 0 to %d", key, GRAMMAR_MAX_REPEAT);
    *out = (long)json_integer_value(v);
    return 0;
}

/* Rule name for a subschema (writes the rule), or "basic-any" for true / {}. */
static int sub(conv *c, json_t *s, int depth, const char *key, char *name) {
    size_t n = path_push(c, key);
    int rc = gen(c, s, depth + 1, name);
    path_pop(c, n);
    return rc;
}

static int add_rule(conv *c, const char *name, sbuf *body) {
    if (body->oom) return cerr(c, "out of memory");
    sb_fmt(&c->out, "%s ::= ", name);
    sb_add(&c->out, body->s ? body->s : "\"\"", body->s ? body->n : 2);
    sb_str(&c->out, "\n");
    if (c->out.n > GRAMMAR_MAX_TEXT) return cerr(c, "the grammar grows past %d bytes", GRAMMAR_MAX_TEXT);
    return 0;
}

static json_t *own(conv *c, json_t *v) {
    if (!v) return NULL;
    if (c->n_owned == c->cap_owned) {
        int cap = c->cap_owned ? 2 * c->cap_owned : 16;
        json_t **t = realloc(c->owned, (size_t)cap * sizeof *t);
        if (!t) return json_decref(v), NULL;
        c->owned = t, c->cap_owned = cap;
    }
    return c->owned[c->n_owned++] = v;
}

/* ---- $ref: JSON pointers into the document ---- */

static uint32_t str_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The schema a "#..." pointer names, or NULL. */
static json_t *pointer(json_t *root, const char *ref) {
    if (*ref++ != '#') return NULL;
    json_t *at = root;
    char tok[512];
    while (*ref) {
        if (*ref != '/') return NULL;
        ref++;
        size_t n = 0;
        for (; *ref && *ref != '/'; ref++) {
            char ch = *ref;
            if (ch == '~' && (ref[1] == '0' || ref[1] == '1')) ch = ref[1] == '0' ? '~' : '/', ref++;
            else if (ch == '%' && ref[1] && ref[2]) {
                char hx[3] = {ref[1], ref[2], 0};
                char *e;
                long v = strtol(hx, &e, 16);
                if (!*e) ch = (char)v, ref += 2;
            }
            if (n + 1 >= sizeof tok) return NULL;
            tok[n++] = ch;
        }
        tok[n] = 0;
        if (json_is_object(at)) at = json_object_get(at, tok);
        else if (json_is_array(at)) {
            char *e;
            long i = strtol(tok, &e, 10);
            at = *tok && !*e && i >= 0 ? json_array_get(at, (size_t)i) : NULL;
        } else return NULL;
        if (!at) return NULL;
    }
    return at;
}

static int refs_grow(conv *c) {
    int cap = c->hash_cap ? 2 * c->hash_cap : 64;
    int32_t *h = malloc((size_t)cap * sizeof *h);
    if (!h) return -1;
    memset(h, 0xff, (size_t)cap * sizeof *h);
    for (int i = 0; i < c->n_refs; i++) {
        uint32_t k = str_hash(c->refs[i].ref) & (uint32_t)(cap - 1);
        while (h[k] >= 0) k = (k + 1) & (uint32_t)(cap - 1);
        h[k] = i;
    }
    free(c->refs_hash);
    c->refs_hash = h, c->hash_cap = cap;
    return 0;
}

/* The rule of a $ref: named now, written later from the pending list (so that chains
 * and cycles of references never deepen the C stack). */
static int gen_ref(conv *c, const char *ref, char *name) {
    if (c->hash_cap) {
        for (uint32_t k = str_hash(ref) & (uint32_t)(c->hash_cap - 1); c->refs_hash[k] >= 0;
             k = (k + 1) & (uint32_t)(c->hash_cap - 1))
            if (!strcmp(c->refs[c->refs_hash[k]].ref, ref)) {
                memcpy(name, c->refs[c->refs_hash[k]].name, 24);
                return 0;
            }
    }
    json_t *target = pointer(c->root, ref);
    if (!target) {
        if (*ref == '#') return cerr(c, "$ref '%s' points at nothing", ref);
        strcpy(name, "basic-any"); /* another document: not read */
        return note(c, "$ref");
    }
    if ((c->n_refs + 1) * 2 > c->hash_cap && refs_grow(c)) return cerr(c, "out of memory");
    if (c->n_refs + 1 > c->cap_refs) {
        int cap = c->cap_refs ? c->cap_refs * 2 : 8;
        ref_rule *t = realloc(c->refs, (size_t)cap * sizeof *t);
        if (!t) return cerr(c, "out of memory");
        c->refs = t;
        c->cap_refs = cap;
    }
    if (c->n_pend + 1 > c->cap_pend) {
        int cap = c->cap_pend ? c->cap_pend * 2 : 8;
        pending_ref *t = realloc(c->pend, (size_t)cap * sizeof *t);
        if (!t) return cerr(c, "out of memory");
        c->pend = t;
        c->cap_pend = cap;
    }
    ref_rule *r = &c->refs[c->n_refs];
    r->ref = strdup(ref);
    if (!r->ref) return cerr(c, "out of memory");
    new_name(c, r->name);
    uint32_t k = str_hash(ref) & (uint32_t)(c->hash_cap - 1);
    while (c->refs_hash[k] >= 0) k = (k + 1) & (uint32_t)(c->hash_cap - 1);
    c->refs_hash[k] = c->n_refs;
    pending_ref *p = &c->pend[c->n_pend++];
    p->target = target, p->ref = c->n_refs;
    memcpy(p->name, r->name, 24);
    memcpy(name, r->name, 24);
    c->n_refs++;
    return 0;
}

/* s with its $ref chain followed (draft 7: a $ref's siblings are ignored); NULL with
 * an error when it leads nowhere or around. */
static json_t *deref(conv *c, json_t *s) {
    for (int hops = 0; json_is_object(s) && json_object_get(s, "$ref"); hops++) {
        json_t *r = json_object_get(s, "$ref");
        if (!json_is_string(r)) return cerr(c, "'$ref' must be a string"), NULL;
        if (hops > 64) return cerr(c, "$ref '%s': a cycle of references", json_string_value(r)), NULL;
        json_t *t = pointer(c->root, json_string_value(r));
        if (!t && *json_string_value(r) != '#') return note(c, "$ref") ? NULL : json_true(); /* another document */
        if (!t) return cerr(c, "$ref '%s' points at nothing (in allOf)", json_string_value(r)), NULL;
        s = t;
    }
    return s;
}

/* 1 for a schema nothing satisfies: false, or {"not": {}} / {"not": true} (how draft 7 schemas
 * forbid a property), annotations aside. */
static int is_nothing(json_t *s) {
    if (json_is_false(s)) return 1;
    json_t *n = json_is_object(s) ? json_object_get(s, "not") : NULL;
    if (!n || !(json_is_true(n) || (json_is_object(n) && !json_object_size(n)))) return 0;
    static const char *const notes[] = {"not", "title", "description", "$comment", "markdownDescription", "deprecated", NULL};
    const char *k;
    json_t *v;
    json_object_foreach(s, k, v) {
        int ok = 0;
        for (int i = 0; notes[i]; i++) ok |= !strcmp(k, notes[i]);
        if (!ok) return 0;
    }
    return 1;
}

/* ---- allOf: one schema with every branch's constraints ---- */

static json_t *all_of2(json_t *a, json_t *b) {
    if (json_is_true(a) || (json_is_object(a) && !json_object_size(a))) return json_incref(b);
    if (json_is_true(b) || (json_is_object(b) && !json_object_size(b))) return json_incref(a);
    if (is_nothing(a) || is_nothing(b)) return json_false();
    return json_pack("{s:[O,O]}", "allOf", a, b);
}

static int type_mask(json_t *t) {
    static const char *const names[] = {"string", "integer", "number", "boolean", "null", "array", "object"};
    int m = 0;
    for (size_t i = 0; i < (json_is_array(t) ? json_array_size(t) : 1); i++) {
        json_t *x = json_is_array(t) ? json_array_get(t, i) : t;
        for (int k = 0; k < 7; k++)
            if (json_is_string(x) && !strcmp(json_string_value(x), names[k])) m |= 1 << k;
    }
    if (m & 4) m |= 2; /* number holds the integers */
    return m;
}

static json_t *type_of_mask(int m) {
    static const char *const names[] = {"string", "integer", "number", "boolean", "null", "array", "object"};
    if ((m & 6) == 6) m &= ~2;
    json_t *a = json_array();
    for (int k = 0; k < 7; k++)
        if (m >> k & 1) json_array_append_new(a, json_string(names[k]));
    return a;
}

static int merge_depth_guard(conv *c, int depth) {
    return depth > 32 ? cerr(c, "allOf nested (through $ref) deeper than 32") : 0;
}

static int merge_into(conv *c, json_t *dst, json_t *src, int depth);

/* dst's properties map (a copy it owns, for writing). */
static json_t *own_map(json_t *dst, const char *key) {
    json_t *m = json_object_get(dst, key);
    json_t *cp = m ? json_copy(m) : json_object();
    json_object_set_new(dst, key, cp);
    return cp;
}

static int merge_props(json_t *dst, json_t *src) {
    json_t *dp = json_object_get(dst, "properties"), *sp = json_object_get(src, "properties");
    json_t *da = json_object_get(dst, "additionalProperties"), *sa = json_object_get(src, "additionalProperties");
    int dst_closed = da && !json_is_true(da) && !json_object_get(dst, "patternProperties");
    int src_closed = sa && !json_is_true(sa) && !json_object_get(src, "patternProperties");
    json_incref(dp), json_incref(da); /* own_map replaces dst's map: keep the old one readable */
    json_t *out = own_map(dst, "properties");
    const char *k;
    json_t *v;
    if (src_closed && dp) /* dst's own properties must also pass src's additionalProperties */
        json_object_foreach(dp, k, v) if (!json_object_get(sp, k)) json_object_set_new(out, k, all_of2(v, sa));
    if (sp) json_object_foreach(sp, k, v) {
            json_t *have = dp ? json_object_get(dp, k) : NULL;
            if (have) json_object_set_new(out, k, all_of2(have, v));
            else if (dst_closed) json_object_set_new(out, k, all_of2(v, da));
            else json_object_set(out, k, v);
        }
    if (!json_object_size(out)) json_object_del(dst, "properties");
    json_decref(dp), json_decref(da);
    return 0;
}

static int merge_key(conv *c, json_t *dst, const char *k, json_t *v, json_t *src) {
    json_t *d = json_object_get(dst, k);
    static const char *const maxes[] = {"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", NULL};
    static const char *const mins[] = {"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", NULL};
    static const char *const schemas[] = {"items", "additionalProperties", "propertyNames", "additionalItems", NULL};
    if (!strcmp(k, "properties")) return merge_props(dst, src);
    if (!d) {
        if (!strcmp(k, "additionalProperties") && json_object_get(dst, "properties") && !json_is_true(v)) {
            /* a closed src: dst's properties must pass it (done in merge_props when src has properties) */
            if (!json_object_get(src, "properties")) {
                json_t *out = own_map(dst, "properties");
                const char *pk;
                json_t *pv;
                json_object_foreach(out, pk, pv) json_object_set_new(out, pk, all_of2(pv, v));
            }
        }
        return json_object_set(dst, k, v);
    }
    for (int i = 0; maxes[i]; i++)
        if (!strcmp(k, maxes[i])) {
            if (json_is_number(v) && json_is_number(d) && json_number_value(v) > json_number_value(d)) json_object_set(dst, k, v);
            return 0;
        }
    for (int i = 0; mins[i]; i++)
        if (!strcmp(k, mins[i])) {
            if (json_is_number(v) && json_is_number(d) && json_number_value(v) < json_number_value(d)) json_object_set(dst, k, v);
            return 0;
        }
    for (int i = 0; schemas[i]; i++)
        if (!strcmp(k, schemas[i])) return json_object_set_new(dst, k, all_of2(d, v));
    if (!strcmp(k, "patternProperties")) {
        json_t *out = own_map(dst, k);
        const char *pk;
        json_t *pv;
        json_object_foreach(v, pk, pv) {
            json_t *have = json_object_get(out, pk);
            json_object_set_new(out, pk, have ? all_of2(have, pv) : json_incref(pv));
        }
        return 0;
    }
    if (!strcmp(k, "required")) {
        json_t *out = json_copy(d);
        for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) {
            int dup = 0;
            for (size_t j = 0; j < json_array_size(out); j++) dup |= json_equal(json_array_get(out, j), json_array_get(v, i));
            if (!dup) json_array_append(out, json_array_get(v, i));
        }
        return json_object_set_new(dst, k, out);
    }
    if (!strcmp(k, "type")) return json_object_set_new(dst, k, type_of_mask(type_mask(d) & type_mask(v)));
    if (!strcmp(k, "enum") || !strcmp(k, "const")) {
        json_t *de = json_object_get(dst, "enum"), *dc = json_object_get(dst, "const");
        json_t *keep = json_array();
        json_t *a = dc ? json_pack("[O]", dc) : json_incref(de);
        json_t *b = !strcmp(k, "const") ? json_pack("[O]", v) : json_incref(v);
        for (size_t i = 0; json_is_array(a) && i < json_array_size(a); i++)
            for (size_t j = 0; json_is_array(b) && j < json_array_size(b); j++)
                if (json_equal(json_array_get(a, i), json_array_get(b, j))) {
                    json_array_append(keep, json_array_get(a, i));
                    break;
                }
        json_decref(a), json_decref(b);
        json_object_del(dst, "const");
        return json_object_set_new(dst, "enum", keep);
    }
    if (!strcmp(k, "anyOf") || !strcmp(k, "oneOf")) {
        size_t na = json_array_size(d), nb = json_array_size(v);
        if (!na || !nb || na * nb > 256) return note(c, "allOf");
        json_t *x = json_array();
        for (size_t i = 0; i < na; i++)
            for (size_t j = 0; j < nb; j++) json_array_append_new(x, all_of2(json_array_get(d, i), json_array_get(v, j)));
        return json_object_set_new(dst, k, x);
    }
    if (!strcmp(k, "prefixItems") || (!strcmp(k, "items") && json_is_array(v))) {
        if (!json_is_array(d)) return note(c, "allOf");
        json_t *x = json_array();
        size_t n = json_array_size(d) > json_array_size(v) ? json_array_size(d) : json_array_size(v);
        for (size_t i = 0; i < n; i++) {
            json_t *p = json_array_get(d, i), *q = json_array_get(v, i);
            json_array_append_new(x, p && q ? all_of2(p, q) : json_incref(p ? p : q));
        }
        return json_object_set_new(dst, k, x);
    }
    if (!strcmp(k, "multipleOf")) {
        if (json_is_integer(d) && json_is_integer(v)) {
            json_int_t a = json_integer_value(d), b = json_integer_value(v), g = a, h = b;
            while (h) { json_int_t t = g % h; g = h, h = t; }
            if (g > 0 && a / g <= INT32_MAX / (b > 0 ? b : 1)) return json_object_set_new(dst, k, json_integer(a / g * b));
        }
        if (json_equal(d, v)) return 0;
        return note(c, "allOf");
    }
    if (!strcmp(k, "pattern") || !strcmp(k, "format")) return json_equal(d, v) ? 0 : note(c, "allOf");
    return 0; /* annotations and the keywords noted anyway: the first stays */
}

static int merge_into(conv *c, json_t *dst, json_t *src, int depth) {
    if (merge_depth_guard(c, depth)) return -1;
    src = deref(c, src);
    if (!src) return -1;
    if (json_is_true(src)) return 0;
    if (is_nothing(src)) return json_object_set_new(dst, "enum", json_array());
    if (!json_is_object(src)) return cerr(c, "a schema must be an object or a boolean");
    json_t *all = json_object_get(src, "allOf");
    if (all) {
        if (!json_is_array(all)) return cerr(c, "'allOf' must be an array");
        for (size_t i = 0; i < json_array_size(all); i++)
            if (merge_into(c, dst, json_array_get(all, i), depth + 1)) return -1;
    }
    const char *k;
    json_t *v;
    /* properties first: they meet the additionalProperties of the earlier branches only */
    if (json_object_get(src, "properties") && merge_key(c, dst, "properties", json_object_get(src, "properties"), src))
        return -1;
    json_object_foreach(src, k, v) {
        if (!strcmp(k, "allOf") || !strcmp(k, "$defs") || !strcmp(k, "definitions") || !strcmp(k, "properties")) continue;
        if (merge_key(c, dst, k, v, src)) return -1;
    }
    return 0;
}

/* ---- strings ---- */

/* The formats xgrammar 0.2.8 converts, as patterns of the subset (RFC 3339, 5321, 1123,
 * 4291, 3986, 6570, 6901); other formats are annotations. */
#define H16 "[0-9A-Fa-f]{1,4}"
#define DEC8 "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
#define IPV4 DEC8 "\\." DEC8 "\\." DEC8 "\\." DEC8
#define LS32 "(" H16 ":" H16 "|" IPV4 ")"
#define IPV6 "((" H16 ":){6}" LS32 "|::(" H16 ":){5}" LS32 "|(" H16 ")?::(" H16 ":){4}" LS32 "|((" H16 ":)?" H16 \
             ")?::(" H16 ":){3}" LS32 "|((" H16 ":){0,2}" H16 ")?::(" H16 ":){2}" LS32 "|((" H16 ":){0,3}" H16 ")?::" \
             H16 ":" LS32 "|((" H16 ":){0,4}" H16 ")?::" LS32 "|((" H16 ":){0,5}" H16 ")?::" H16 "|((" H16 ":){0,6}" \
             H16 ")?::)"
#define PCT "%[0-9A-Fa-f]{2}"
#define PCHAR "([A-Za-z0-9\\-._~!$&'()*+,;=:@]|" PCT ")"
#define AUTH "(([A-Za-z0-9\\-._~!$&'()*+,;=:]|" PCT ")*@)?(\\[" IPV6 "\\]|([A-Za-z0-9\\-._~!$&'()*+,;=]|" PCT \
             ")*)(:[0-9]*)?"
#define QF "(\\?(" PCHAR "|[/?])*)?(#(" PCHAR "|[/?])*)?"
#define URI "[A-Za-z][A-Za-z0-9+\\-.]*:(//" AUTH "(/" PCHAR "*)*|/(" PCHAR "+(/" PCHAR "*)*)?|" PCHAR "+(/" PCHAR \
            "*)*)?" QF
#define RELREF "(//" AUTH "(/" PCHAR "*)*|/(" PCHAR "+(/" PCHAR "*)*)?|([A-Za-z0-9\\-._~!$&'()*+,;=@]|" PCT ")+(/" \
               PCHAR "*)*)?" QF
#define LABEL "[A-Za-z0-9]([A-Za-z0-9\\-]{0,61}[A-Za-z0-9])?"
#define DATE "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
#define TIME "([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]+)?([Zz]|[+\\-]([01][0-9]|2[0-3]):[0-5][0-9])"
#define DUR_T "T([0-9]+H([0-9]+M)?([0-9]+S)?|[0-9]+M([0-9]+S)?|[0-9]+S)"
#define VARSPEC "([A-Za-z0-9_]|" PCT ")([A-Za-z0-9_.]|" PCT ")*(:[1-9][0-9]{0,3}|\\*)?"
static const char *const formats[][2] = {
    {"date", "^" DATE "$"},
    {"time", "^" TIME "$"},
    {"date-time", "^" DATE "[Tt]" TIME "$"},
    {"duration", "^P(([0-9]+Y([0-9]+M)?([0-9]+D)?|[0-9]+M([0-9]+D)?|[0-9]+D)(" DUR_T ")?|" DUR_T "|[0-9]+W)$"},
    {"uuid", "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"},
    {"email", "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-]+)*@(" LABEL "(\\." LABEL
              ")*|\\[" IPV4 "\\])$"},
    {"hostname", "^" LABEL "(\\." LABEL ")*$"},
    {"ipv4", "^" IPV4 "$"},
    {"ipv6", "^" IPV6 "$"},
    {"uri", "^" URI "$"},
    {"uri-reference", "^(" URI "|" RELREF ")$"},
    {"uri-template", "^([^\\u0000-\\u0020\"'<>\\\\^`{|}]|" PCT "|\\{[+#./;?&=,!@|]?" VARSPEC "(," VARSPEC ")*\\})*$"},
    {"json-pointer", "^(/([^~/]|~[01])*)*$"},
    {"relative-json-pointer", "^(0|[1-9][0-9]*)(#|(/([^~/]|~[01])*)*)$"},
};

static int gen_string(conv *c, json_t *s, sbuf *b) {
    json_t *fmt = json_object_get(s, "format"), *pat = json_object_get(s, "pattern");
    long lo, hi;
    if (get_count(c, s, "minLength", &lo, 0) || get_count(c, s, "maxLength", &hi, -1)) return -1;
    if (fmt && !json_is_string(fmt)) return cerr(c, "'format' must be a string");
    if (pat && !json_is_string(pat)) return cerr(c, "'pattern' must be a string");
    const char *re = NULL;
    for (size_t i = 0; fmt && i < sizeof formats / sizeof *formats; i++)
        if (!strcmp(json_string_value(fmt), formats[i][0])) re = formats[i][1];
    if (re && pat && strcmp(re, json_string_value(pat)) && note(c, "pattern")) return -1;
    if (!re && pat) re = json_string_value(pat);
    if (re) {
        sbuf t = {0};
        if (!gen_pattern(c, re, &t)) {
            sb_add(b, t.s, t.n);
            free(t.s);
            return (lo > 0 || hi >= 0) && note(c, lo > 0 ? "minLength" : "maxLength") ? -1 : 0;
        }
        free(t.s);
        if (!c->rx_fail || c->strict) return -1;
        c->failed = c->rx_fail = 0; /* a regex outside the subset: the string is left free */
        if (note(c, "pattern")) return -1;
    }
    if (lo > 0 || hi >= 0) {
        if (hi >= 0 && hi < lo) return cerr(c, "maxLength is below minLength");
        if (hi >= 0) sb_fmt(b, "\"\\\"\" [^\"\\\\\\r\\n]{%ld,%ld} \"\\\"\"", lo, hi);
        else sb_fmt(b, "\"\\\"\" [^\"\\\\\\r\\n]{%ld,} \"\\\"\"", lo);
        return 0;
    }
    sb_str(b, "basic-string");
    return 0;
}

/* ---- numbers ---- */

/* The shortest decimal text that reads back as v. */
static void real_text(double v, char *out, size_t n) {
    for (int p = 1; p <= 17; p++) {
        snprintf(out, n, "%.*g", p, v);
        if (strtod(out, NULL) == v) return;
    }
}

static void num_text(json_t *v, char *out, size_t n) {
    if (json_is_integer(v)) snprintf(out, n, "%lld", (long long)json_integer_value(v));
    else real_text(json_real_value(v), out, n);
}

static void emit_out(void *user, const char *s, size_t n) { sb_add(user, s, n); }

static int gen_number(conv *c, json_t *s, int integer, sbuf *b) {
    static const char *const keys[] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf"};
    json_t *v[5];
    int any = 0;
    for (int i = 0; i < 5; i++) {
        v[i] = json_object_get(s, keys[i]);
        if (v[i] && json_is_boolean(v[i]) && (i == 1 || i == 3)) continue; /* draft 4: a flag on the bound */
        if (v[i] && !json_is_number(v[i])) return cerr(c, "'%s' must be a number", keys[i]);
        if (v[i]) any = 1;
    }
    if (!any) return sb_str(b, integer ? "basic-integer" : "basic-number"), 0;
    num_range r = {.integer = integer};
    for (int side = 0; side < 2; side++) {
        json_t *inc = v[2 * side], *exc = v[2 * side + 1];
        num_bound *nb = side ? &r.hi : &r.lo;
        json_t *pick = inc;
        int excl = json_is_true(exc); /* draft 4 */
        if (json_is_number(exc) &&
            (!inc || (side ? json_number_value(exc) <= json_number_value(inc) : json_number_value(exc) >= json_number_value(inc))))
            pick = exc, excl = 1;
        if (!pick) continue;
        char t[64];
        num_text(pick, t, sizeof t);
        if (num_bound_parse(t, nb)) {
            memset(nb, 0, sizeof *nb);
            if (note(c, keys[2 * side + (pick == exc)])) return -1;
            continue;
        }
        nb->exclusive = excl;
    }
    if (v[4]) {
        char t[64];
        num_text(v[4], t, sizeof t);
        num_bound m;
        unsigned long long p = 0;
        int ok = json_number_value(v[4]) > 0 && !num_bound_parse(t, &m);
        if (ok) {
            char all[2 * NUM_RANGE_MAX_DIGITS + 2];
            snprintf(all, sizeof all, "%s%s", m.ip, m.fp);
            for (char *d = all; *d && ok; d++) ok = (p = p * 10 + (unsigned)(*d - '0')) <= 100000;
            r.mod = (unsigned)p, r.mod_frac = (int)strlen(m.fp);
            ok = ok && p > 0 && r.mod_frac <= 12;
        }
        if (!ok) {
            r.mod = 0, r.mod_frac = 0;
            if (note(c, "multipleOf")) return -1;
        }
    }
    char start[24];
    new_name(c, start);
    sbuf rules = {0};
    int n = num_range_gbnf(&r, start, emit_out, &rules);
    if (n < 0 && r.mod) { /* too many remainders for the bounds: the bounds alone */
        free(rules.s), rules = (sbuf){0};
        r.mod = 0, r.mod_frac = 0;
        if (note(c, "multipleOf")) return -1;
        n = num_range_gbnf(&r, start, emit_out, &rules);
    }
    if (n <= 0) {
        free(rules.s);
        if (n == 0) return cempty(c, "no %s satisfies minimum / maximum / multipleOf", integer ? "integer" : "number");
        return cerr(c, "minimum / maximum too complex for a grammar");
    }
    if (rules.oom) return free(rules.s), cerr(c, "out of memory");
    sb_add(&c->out, rules.s, rules.n);
    free(rules.s);
    sb_str(b, start);
    return 0;
}

/* ---- arrays ---- */

static int gen_array(conv *c, json_t *s, int depth, sbuf *b) {
    json_t *prefix = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    if (json_is_array(items) && !prefix) prefix = items, items = json_object_get(s, "additionalItems"); /* draft 7 */
    else if (json_is_array(items)) return cerr(c, "'items' must be a schema when 'prefixItems' is given");
    long lo, hi;
    if (get_count(c, s, "minItems", &lo, 0) || get_count(c, s, "maxItems", &hi, -1)) return -1;
    if (hi >= 0 && hi < lo) return cerr(c, "maxItems is below minItems");
    if (prefix && !json_is_array(prefix)) return cerr(c, "'prefixItems' must be an array");
    if (items && !json_is_object(items) && !json_is_boolean(items)) return cerr(c, "'items' must be a schema or a boolean");
    char iname[24] = "basic-any";
    int additional = items ? !json_is_false(items) : !prefix; /* xgrammar: a plain array holds anything */
    if (additional && items && sub(c, items, depth, "items", iname)) return -1;
    size_t np = prefix ? json_array_size(prefix) : 0;
    if (hi >= 0 && (size_t)hi < np) np = (size_t)hi; /* items past maxItems are never reached */
    size_t nfalse = np; /* a false prefix item: the array ends before it */
    for (size_t i = 0; i < np; i++)
        if (json_is_false(json_array_get(prefix, i))) {
            nfalse = i;
            break;
        }
    if (nfalse < np) np = nfalse, additional = 0;
    if (!np) {
        if (!additional || hi == 0) {
            if (lo > 0) return cempty(c, "minItems %ld cannot be met (no items allowed)", lo);
            sb_str(b, "\"[\" " WS " \"]\"");
            return 0;
        }
        sb_fmt(b, "\"[\" " WS " %s (" WS " \",\" " WS " %s)", iname, iname);
        long a = lo ? lo - 1 : 0;
        if (hi < 0) sb_fmt(b, "{%ld,}", a);
        else sb_fmt(b, "{%ld,%ld}", a, hi - 1);
        sb_str(b, " " WS " \"]\"");
        if (!lo) sb_str(b, " | \"[\" " WS " \"]\"");
        return 0;
    }
    if (!additional && lo > (long)np) return cempty(c, "minItems %ld cannot be met (%zu items allowed)", lo, np);
    /* every prefix item, as xgrammar writes tuples (a subset of what the draft allows) */
    sb_str(b, "\"[\" " WS);
    for (size_t i = 0; i < np; i++) {
        char key[48], pname[24];
        snprintf(key, sizeof key, "prefixItems/%zu", i);
        if (sub(c, json_array_get(prefix, i), depth, key, pname)) return -1;
        if (i) sb_str(b, " " WS " \",\" " WS);
        sb_fmt(b, " %s", pname);
    }
    if (additional) {
        long a = lo > (long)np ? lo - (long)np : 0;
        sb_fmt(b, " (" WS " \",\" " WS " %s)", iname);
        if (hi < 0) sb_fmt(b, "{%ld,}", a);
        else if (hi >= (long)np) sb_fmt(b, "{%ld,%ld}", a, hi - (long)np);
        else sb_str(b, "{0}");
    }
    sb_str(b, " " WS " \"]\"");
    return 0;
}

/* ---- objects ---- */

/* The rule of a key matching regex pat (as a JSON string), into name. */
static int gen_key_pattern(conv *c, const char *pat, char *name) {
    sbuf body = {0};
    int rc = gen_pattern(c, pat, &body);
    if (!rc) new_name(c, name), rc = add_rule(c, name, &body);
    free(body.s);
    return rc;
}

/* The rule of keys that pass propertyNames (a string schema). */
static int gen_key_schema(conv *c, json_t *names, int depth, char *name) {
    names = deref(c, names);
    if (!names) return -1;
    if (json_is_true(names)) return strcpy(name, "basic-string"), 0;
    if (!json_is_object(names)) return cerr(c, "'propertyNames' must be a schema");
    if (json_object_get(names, "enum") || json_object_get(names, "const") || json_object_get(names, "anyOf") ||
        json_object_get(names, "oneOf") || json_object_get(names, "allOf"))
        return sub(c, names, depth, "propertyNames", name);
    sbuf body = {0};
    size_t n = path_push(c, "propertyNames");
    int rc = gen_string(c, names, &body);
    path_pop(c, n);
    if (!rc) new_name(c, name), rc = add_rule(c, name, &body);
    free(body.s);
    return rc;
}

typedef struct {
    sbuf text; /* "key" WS ":" WS value */
    int req;
} prop;

static int gen_object(conv *c, json_t *s, int depth, sbuf *b) {
    json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    json_t *addl = json_object_get(s, "additionalProperties"), *pats = json_object_get(s, "patternProperties");
    json_t *names = json_object_get(s, "propertyNames");
    if (props && !json_is_object(props)) return cerr(c, "'properties' must be an object");
    if (req && !json_is_array(req)) return cerr(c, "'required' must be an array");
    if (pats && !json_is_object(pats)) return cerr(c, "'patternProperties' must be an object");
    if (addl && !json_is_object(addl) && !json_is_boolean(addl))
        return cerr(c, "'additionalProperties' must be a schema or a boolean");
    long minp, maxp;
    if (get_count(c, s, "minProperties", &minp, 0) || get_count(c, s, "maxProperties", &maxp, -1)) return -1;
    if (maxp >= 0 && maxp < minp) return cerr(c, "maxProperties is below minProperties");
    for (size_t i = 0; req && i < json_array_size(req); i++)
        if (!json_is_string(json_array_get(req, i))) return cerr(c, "'required' must list strings");
    size_t nprops = props ? json_object_size(props) : 0, nreq = req ? json_array_size(req) : 0;
    prop *pp = calloc(nprops + nreq + 1, sizeof *pp);
    char (*rn)[24] = NULL;
    sbuf extra = {0}; /* the alternatives of one more property past the named ones */
    int rc = -1, np = 0;
    if (!pp) return cerr(c, "out of memory");
    /* the named properties, then required keys that properties does not name */
    const char *key;
    json_t *val;
    void *it = props ? json_object_iter(props) : NULL;
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass ? nreq : nprops;
        for (size_t i = 0; i < n; i++) {
            if (pass) {
                key = json_string_value(json_array_get(req, i));
                if (props && json_object_get(props, key)) continue;
                int dup = 0;
                for (size_t j = 0; j < i; j++) dup |= !strcmp(key, json_string_value(json_array_get(req, j)));
                if (dup) continue;
                val = addl && !(pats && json_object_size(pats)) ? addl : json_true();
            } else {
                key = json_object_iter_key(it), val = json_object_iter_value(it);
                it = json_object_iter_next(props, it);
            }
            int isreq = 0;
            for (size_t r = 0; r < nreq; r++)
                if (!strcmp(json_string_value(json_array_get(req, r)), key)) isreq = 1;
            json_t *dv = deref(c, val);
            if (!dv) goto out;
            if (is_nothing(dv)) {
                if (isreq) {
                    cempty(c, "required property '%s' is not allowed", key);
                    goto out;
                }
                continue;
            }
            char k[160], pname[24];
            snprintf(k, sizeof k, "properties/%s", key);
            if (sub(c, val, depth, k, pname)) goto out;
            json_t *ks = json_string(key);
            char *kt = ks ? json_dumps(ks, JSON_ENCODE_ANY) : NULL;
            json_decref(ks);
            if (!kt) {
                cerr(c, "out of memory");
                goto out;
            }
            sb_lit(&pp[np].text, kt, strlen(kt));
            free(kt);
            sb_fmt(&pp[np].text, " " WS " \":\" " WS " %s", pname);
            pp[np].req = isreq;
            np++;
        }
    }
    /* further properties: patternProperties keys, else additionalProperties (or
     * propertyNames) keys; a key matching no pattern is left out when patterns exist (a
     * grammar cannot say "matches none of them") */
    if (pats && json_object_size(pats)) {
        if (names && note(c, "propertyNames")) goto out;
        json_object_foreach(pats, key, val) {
            json_t *dv = deref(c, val);
            if (!dv) goto out;
            if (is_nothing(dv)) continue;
            char kn[24], vn[24], k[160];
            size_t n = path_push(c, "patternProperties");
            int e = gen_key_pattern(c, key, kn);
            path_pop(c, n);
            if (e && c->rx_fail && !c->strict) { /* keys of a regex outside the subset are left out */
                c->failed = c->rx_fail = 0;
                continue;
            }
            snprintf(k, sizeof k, "patternProperties/%s", key);
            if (e || sub(c, val, depth, k, vn)) goto out;
            sb_fmt(&extra, "%s%s " WS " \":\" " WS " %s", extra.n ? " | " : "", kn, vn);
        }
    } else if (json_is_false(names)) {
        for (int i = 0; i < np; i++)
            if (pp[i].req) {
                cempty(c, "propertyNames is false, yet properties are required");
                goto out;
            }
        np = 0; /* no key passes */
    } else if ((addl && !json_is_false(addl)) || (names && !addl) ||
               (!addl && (!props || (long)nprops < minp))) { /* as xgrammar: a plain object holds anything */
        char kn[24] = "basic-string", vn[24] = "basic-any";
        if (names && gen_key_schema(c, names, depth, kn)) goto out;
        if (addl && sub(c, addl, depth, "additionalProperties", vn)) goto out;
        sb_fmt(&extra, "%s " WS " \":\" " WS " %s", kn, vn);
    }
    char ename[24] = "";
    if (extra.n) {
        new_name(c, ename);
        if (add_rule(c, ename, &extra)) goto out;
    }
    int nr = 0;
    for (int i = 0; i < np; i++) nr += pp[i].req;
    if (maxp >= 0 && nr > maxp) {
        cempty(c, "maxProperties %ld is below the %d required properties", maxp, nr);
        goto out;
    }
    if (!extra.n && minp > np) {
        cempty(c, "minProperties %ld cannot be met (%d properties allowed)", minp, np);
        goto out;
    }
    /* R(t, k): what follows once k properties are written and property t is next; k
     * counts up to K (maxProperties, else minProperties: more is the same). F(t): the
     * same before any property (no comma). */
    long K = maxp >= 0 ? maxp : minp;
    if ((long)(np + 1) * (K + 1) > 200000) {
        if (note(c, maxp >= 0 ? "maxProperties" : "minProperties")) goto out;
        K = 0, minp = 0, maxp = -1;
    }
    rn = calloc((size_t)(np + 1) * (size_t)(K + 1), sizeof *rn);
    char (*fn)[24] = calloc((size_t)np + 1, sizeof *fn);
    if (!rn || !fn) {
        free(fn);
        cerr(c, "out of memory");
        goto out;
    }
#define RN(t, k) rn[(size_t)(t) * (size_t)(K + 1) + (size_t)(k)]
    for (int t = np; t >= 0; t--) {
        for (long k = 0; k <= K; k++) {
            sbuf body = {0};
            if (t == np) {
                long lo = minp > k ? minp - k : 0, hi = maxp >= 0 ? maxp - k : -1;
                if (!ename[0] || hi == 0) {
                    if (lo == 0) sb_str(&body, "\"\"");
                } else {
                    sb_fmt(&body, "(" WS " \",\" " WS " %s)", ename);
                    if (hi < 0) sb_fmt(&body, "{%ld,}", lo);
                    else sb_fmt(&body, "{%ld,%ld}", lo, hi);
                }
            } else {
                long k2 = maxp >= 0 ? k + 1 : (k + 1 < K ? k + 1 : K);
                int alts = 0;
                if (!pp[t].req && RN(t + 1, k)[0]) sb_str(&body, RN(t + 1, k)), alts++;
                if ((maxp < 0 || k + 1 <= maxp) && RN(t + 1, k2 > K ? K : k2)[0]) {
                    sb_fmt(&body, "%s" WS " \",\" " WS " ", alts ? " | " : "");
                    sb_add(&body, pp[t].text.s, pp[t].text.n);
                    sb_fmt(&body, " %s", RN(t + 1, k2 > K ? K : k2));
                }
            }
            if (body.n) {
                new_name(c, RN(t, k));
                int e = add_rule(c, RN(t, k), &body);
                free(body.s);
                if (e) {
                    free(fn);
                    goto out;
                }
            }
        }
        /* F(t) */
        sbuf body = {0};
        if (t == np) {
            if (ename[0] && maxp != 0) {
                sb_fmt(&body, "%s", ename);
                long lo = minp > 1 ? minp - 1 : 0, hi = maxp >= 0 ? maxp - 1 : -1;
                sb_fmt(&body, " (" WS " \",\" " WS " %s)", ename);
                if (hi < 0) sb_fmt(&body, "{%ld,}", lo);
                else sb_fmt(&body, "{%ld,%ld}", lo, hi);
                if (minp == 0) sb_str(&body, " | \"\"");
            } else if (minp == 0) sb_str(&body, "\"\"");
        } else {
            long k1 = K >= 1 ? 1 : 0;
            int alts = 0;
            if (!pp[t].req && fn[t + 1][0]) sb_str(&body, fn[t + 1]), alts++;
            if (maxp != 0 && RN(t + 1, k1)[0]) {
                if (alts) sb_str(&body, " | ");
                sb_add(&body, pp[t].text.s, pp[t].text.n);
                sb_fmt(&body, " %s", RN(t + 1, k1));
            }
        }
        if (body.n) {
            new_name(c, fn[t]);
            int e = add_rule(c, fn[t], &body);
            free(body.s);
            if (e) {
                free(fn);
                goto out;
            }
        }
    }
#undef RN
    if (!fn[0][0]) {
        free(fn);
        cempty(c, "no object satisfies required / minProperties / maxProperties");
        goto out;
    }
    sb_fmt(b, "\"{\" " WS " %s " WS " \"}\"", fn[0]);
    free(fn);
    rc = 0;
out:
    for (size_t k = 0; k < nprops + nreq + 1; k++) free(pp[k].text.s);
    free(pp), free(rn), free(extra.s);
    return rc;
}

static int gen_type(conv *c, json_t *s, const char *t, int depth, sbuf *b) {
    if (!strcmp(t, "string")) return gen_string(c, s, b);
    if (!strcmp(t, "integer")) return gen_number(c, s, 1, b);
    if (!strcmp(t, "number")) return gen_number(c, s, 0, b);
    if (!strcmp(t, "boolean")) return sb_str(b, "basic-boolean"), 0;
    if (!strcmp(t, "null")) return sb_str(b, "basic-null"), 0;
    if (!strcmp(t, "array")) return gen_array(c, s, depth, b);
    if (!strcmp(t, "object")) return gen_object(c, s, depth, b);
    return cerr(c, "unknown type '%s'", t);
}

/* 1 if JSON value v has a type of mask m (type_mask). */
static int value_has_type(json_t *v, int m) {
    int t = json_is_string(v) ? 1 : json_is_integer(v) ? 2 | 4 : json_is_real(v) ? (json_real_value(v) == (double)(long long)json_real_value(v) ? 6 : 4)
          : json_is_boolean(v) ? 8 : json_is_null(v) ? 16 : json_is_array(v) ? 32 : 64;
    return (t & m) != 0;
}

static const char *const validating[] = {
    "type", "properties", "required", "additionalProperties", "patternProperties", "propertyNames", "minProperties",
    "maxProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems", "minLength", "maxLength",
    "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "enum", "const",
    "uniqueItems", "not", "if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas", "contains",
    "unevaluatedProperties", "unevaluatedItems", NULL};

static int gen(conv *c, json_t *s, int depth, char *name) {
    if (depth > JSON_SCHEMA_MAX_DEPTH) return cerr(c, "schemas nested deeper than %d", JSON_SCHEMA_MAX_DEPTH);
    if (json_is_true(s)) {
        strcpy(name, "basic-any");
        return 0;
    }
    if (json_is_false(s)) return cempty(c, "the schema false matches nothing");
    if (!json_is_object(s)) return cerr(c, "a schema must be an object or a boolean");
    json_t *ref = json_object_get(s, "$ref");
    if (ref) {
        if (!json_is_string(ref)) return cerr(c, "'$ref' must be a string");
        return gen_ref(c, json_string_value(ref), name);
    }
    json_t *all = json_object_get(s, "allOf");
    if (all) {
        if (!json_is_array(all)) return cerr(c, "'allOf' must be an array");
        json_t *m = own(c, json_object());
        if (!m || merge_into(c, m, s, 0)) return m ? -1 : cerr(c, "out of memory");
        json_t *en = json_object_get(m, "enum");
        if (json_is_array(en) && !json_array_size(en)) return cempty(c, "allOf: no value satisfies every branch");
        return gen(c, m, depth + 1, name);
    }
    json_t *any = json_object_get(s, "anyOf");
    if (!any) any = json_object_get(s, "oneOf");
    if (any) {
        if (!json_is_array(any) || !json_array_size(any)) return cerr(c, "'anyOf' / 'oneOf' must be a non-empty array");
        int siblings = json_object_get(s, "anyOf") && json_object_get(s, "oneOf");
        for (int i = 0; validating[i]; i++) siblings |= json_object_get(s, validating[i]) != NULL;
        sbuf b = {0};
        int rc = 0, n = 0;
        for (size_t i = 0; i < json_array_size(any) && !rc; i++) {
            json_t *br = json_array_get(any, i);
            char key[48], an[24];
            snprintf(key, sizeof key, "anyOf/%zu", i);
            if (siblings) { /* each branch with the keywords beside anyOf */
                json_t *rest = json_copy(s);
                if (!rest) return free(b.s), cerr(c, "out of memory");
                json_object_del(rest, json_object_get(s, "anyOf") ? "anyOf" : "oneOf");
                json_t *m = own(c, json_pack("{s:[o,O]}", "allOf", rest, br));
                if (!m) return free(b.s), cerr(c, "out of memory");
                br = m;
            }
            json_t *dbr = deref(c, br);
            if (!dbr) return free(b.s), -1;
            if (is_nothing(dbr)) continue;
            size_t pn = path_push(c, key);
            rc = gen(c, br, depth + 1, an);
            path_pop(c, pn);
            if (rc && c->empty) { /* a branch that matches nothing (its siblings may exclude it): left out */
                c->failed = c->empty = 0, rc = 0;
                continue;
            }
            sb_fmt(&b, "%s%s", n++ ? " | " : "", an);
        }
        if (!rc && !n) {
            char last[200] = "";
            if (c->err && c->errlen) snprintf(last, sizeof last, "%s", c->err);
            rc = cempty(c, "no branch of anyOf / oneOf can match (the last: %s)", last[0] ? last : "false");
        }
        if (!rc) new_name(c, name), rc = add_rule(c, name, &b);
        free(b.s);
        return rc;
    }
    if (note_unenforced(c, s)) return -1;
    sbuf b = {0};
    int rc = 0;
    json_t *cst = json_object_get(s, "const"), *en = json_object_get(s, "enum");
    json_t *type = json_object_get(s, "type");
    if (type && !json_is_string(type) && !(json_is_array(type) && json_array_size(type))) {
        if (json_is_array(type)) return cempty(c, "no type satisfies 'type' (an empty list, or allOf's types do not meet)");
        return cerr(c, "'type' must be a string or a list of strings");
    }
    if (cst || en) {
        if (en && !json_is_array(en)) return cerr(c, "'enum' must be an array");
        int tm = type ? type_mask(type) : 127;
        size_t n = cst ? 1 : json_array_size(en), k = 0;
        for (size_t i = 0; i < n; i++) {
            json_t *v = cst ? cst : json_array_get(en, i);
            if (!value_has_type(v, tm)) continue;
            char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            if (!t) {
                rc = cerr(c, "out of memory");
                goto out;
            }
            if (k++) sb_str(&b, " | ");
            sb_lit(&b, t, strlen(t));
            free(t);
        }
        if (!k) {
            rc = cempty(c, cst ? "'const' does not have the schema's type" : "no value of 'enum' satisfies the schema");
            goto out;
        }
    } else if (type) {
        if (json_is_string(type)) {
            rc = gen_type(c, s, json_string_value(type), depth, &b);
        } else {
            for (size_t i = 0; i < json_array_size(type) && !rc; i++) {
                json_t *t = json_array_get(type, i);
                if (!json_is_string(t)) {
                    rc = cerr(c, "'type' must be a string or a list of strings");
                    break;
                }
                if (!strcmp(json_string_value(t), "integer") && type_mask(type) & 4) continue; /* number holds it */
                if (b.n) sb_str(&b, " | ");
                sb_str(&b, "(");
                rc = gen_type(c, s, json_string_value(t), depth, &b);
                sb_str(&b, ")");
            }
        }
    } else if (json_object_get(s, "properties") || json_object_get(s, "required") ||
               json_object_get(s, "additionalProperties") || json_object_get(s, "patternProperties") ||
               json_object_get(s, "propertyNames") || json_object_get(s, "minProperties") ||
               json_object_get(s, "maxProperties")) {
        rc = gen_object(c, s, depth, &b);
    } else if (json_object_get(s, "items") || json_object_get(s, "prefixItems") || json_object_get(s, "minItems") ||
               json_object_get(s, "maxItems") || json_object_get(s, "additionalItems")) {
        rc = gen_array(c, s, depth, &b);
    } else if (json_object_get(s, "pattern") || json_object_get(s, "format") || json_object_get(s, "minLength") ||
               json_object_get(s, "maxLength")) {
        json_t *f = json_object_get(s, "format");
        int known = !f || json_object_get(s, "pattern") || json_object_get(s, "minLength") || json_object_get(s, "maxLength");
        for (size_t i = 0; f && !known && i < sizeof formats / sizeof *formats; i++)
            known = json_is_string(f) && !strcmp(json_string_value(f), formats[i][0]);
        if (known) rc = gen_string(c, s, &b);
        else sb_str(&b, "basic-any");
    } else if (json_object_get(s, "minimum") || json_object_get(s, "maximum") ||
               json_object_get(s, "exclusiveMinimum") || json_object_get(s, "exclusiveMaximum") ||
               json_object_get(s, "multipleOf")) {
        rc = gen_number(c, s, 0, &b);
    } else {
        sb_str(&b, "basic-any");
    }
    if (!rc) {
        new_name(c, name);
        rc = add_rule(c, name, &b);
    }
out:
    free(b.s);
    return rc;
}

int json_schema_to_gbnf(const char *text, size_t len, const json_schema_opts *o, char **gbnf, char *err, size_t errlen) {
    *gbnf = NULL;
    if (o && o->warn && o->warnlen) o->warn[0] = 0;
    if (len > JSON_SCHEMA_MAX_TEXT) {
        if (err && errlen) snprintf(err, errlen, "json schema: %zu bytes, more than the limit of %d", len, JSON_SCHEMA_MAX_TEXT);
        return -1;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (err && errlen) {
            snprintf(err, errlen, "json schema: line %d, column %d: %s", je.line, je.column, je.text);
            one_line(err);
        }
        return -1;
    }
    conv c = {.root = root, .err = err, .errlen = errlen, .strict = o && o->strict};
    char name[24];
    int rc = gen(&c, root, 0, name);
    for (int i = 0; !rc && i < c.n_pend; i++) { /* referenced schemas, until none is new */
        pending_ref p = c.pend[i];
        char tname[24];
        snprintf(c.path, sizeof c.path, "%s", c.refs[p.ref].ref);
        rc = gen(&c, p.target, 1, tname);
        if (!rc) {
            sbuf body = {0};
            sb_str(&body, tname);
            rc = add_rule(&c, p.name, &body);
            free(body.s);
        }
    }
    if (!rc) {
        sbuf all = {0};
        sb_fmt(&all, "root ::= %s\n", name);
        sb_add(&all, c.out.s ? c.out.s : "", c.out.n);
        sb_str(&all, basic_rules);
        if (all.oom) {
            free(all.s);
            rc = cerr(&c, "out of memory");
        } else {
            *gbnf = all.s;
        }
    }
    if (!rc && c.n_notes && o && o->warn && o->warnlen) {
        sbuf w = {0};
        sb_str(&w, "json schema: not enforced (a grammar cannot express it): ");
        for (int i = 0; i < c.n_notes; i++) sb_fmt(&w, "%s%s (at %s)", i ? ", " : "", c.notes[i], c.note_path[i]);
        snprintf(o->warn, o->warnlen, "%s", w.s ? w.s : "");
        one_line(o->warn);
        free(w.s);
    }
    for (int i = 0; i < c.n_refs; i++) free(c.refs[i].ref);
    for (int i = 0; i < c.n_owned; i++) json_decref(c.owned[i]);
    free(c.refs), free(c.refs_hash), free(c.pend), free(c.owned);
    free(c.out.s);
    json_decref(root);
    return rc;
}
