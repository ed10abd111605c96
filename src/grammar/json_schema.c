/* json_schema.c - JSON Schema (jansson) to GBNF text, see json_schema.h. */
#include "json_schema.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"

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
    json_t *root;
    sbuf out;
    int n_rules;
    ref_rule *refs;
    int n_refs, cap_refs;
    char path[256];
    char *err;
    size_t errlen;
    int failed;
} conv;

/* Control characters of a message (from the schema's keys and patterns, or jansson's quote of the
 * text) become '?': an error is always one line. */
static void one_line(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7F) *s = '?';
}

static int cerr(conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cerr(conv *c, const char *fmt, ...) {
    if (c->failed) return -1;
    c->failed = 1;
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
                if (e == 'D' || e == 'W' || e == 'S') {
                    free(g.r);
                    return cerr(x->c, "pattern: '\\%c' inside a class is not supported", e);
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

/* "\"" REGEX "\"" into b. */
static int gen_pattern(conv *c, const char *pat, sbuf *b) {
    rx x = {pat, pat + strlen(pat), pat, c};
    if (x.s < x.end && *x.s == '^') x.s++;
    sb_str(b, "\"\\\"\" (");
    if (rx_alt(&x, b, 0)) return -1;
    if (x.s != x.end) return cerr(c, "pattern: unbalanced ')'");
    sb_str(b, ") \"\\\"\"");
    return 0;
}

/* ---- schema nodes ---- */

static const char *const known_keys[] = {
    "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
    "enum", "const", "anyOf", "oneOf", "$ref", "$defs", "definitions", "minLength", "maxLength", "pattern",
    "format", "title", "description", "default", "examples", "$schema", "$id", "$comment", NULL};

static int check_keys(conv *c, json_t *s) {
    const char *k;
    json_t *v;
    json_object_foreach(s, k, v) {
        int ok = 0;
        for (int i = 0; known_keys[i]; i++)
            if (!strcmp(k, known_keys[i])) ok = 1;
        if (!ok) return cerr(c, "unsupported keyword '%s'", k);
    }
    return 0;
}

static int get_count(conv *c, json_t *s, const char *key, long *out, long dflt) {
    json_t *v = json_object_get(s, key);
    *out = dflt;
    if (!v) return 0;
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

static int gen_string(conv *c, json_t *s, sbuf *b) {
    json_t *fmt = json_object_get(s, "format"), *pat = json_object_get(s, "pattern");
    long lo, hi;
    if (get_count(c, s, "minLength", &lo, 0) || get_count(c, s, "maxLength", &hi, -1)) return -1;
    if (fmt) {
        static const char *const formats[][2] = {
            {"date", "^(\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[1-2]\\d|3[01]))$"},
            {"time", "^([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)(\\.\\d+)?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)$"},
            {"date-time", "^(\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[1-2]\\d|3[01]))T([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)("
                          "\\.\\d+)?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)$"},
            {"uuid", "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"},
        };
        if (!json_is_string(fmt)) return cerr(c, "'format' must be a string");
        for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
            if (!strcmp(json_string_value(fmt), formats[i][0])) return gen_pattern(c, formats[i][1], b);
        return cerr(c, "unsupported format '%s' (supported: date, time, date-time, uuid)", json_string_value(fmt));
    }
    if (pat) {
        if (!json_is_string(pat)) return cerr(c, "'pattern' must be a string");
        return gen_pattern(c, json_string_value(pat), b);
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

static int gen_array(conv *c, json_t *s, int depth, sbuf *b) {
    json_t *prefix = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    long lo, hi;
    if (get_count(c, s, "minItems", &lo, 0) || get_count(c, s, "maxItems", &hi, -1)) return -1;
    if (hi >= 0 && hi < lo) return cerr(c, "maxItems is below minItems");
    if (prefix && !json_is_array(prefix)) return cerr(c, "'prefixItems' must be an array");
    if (items && !json_is_object(items) && !json_is_boolean(items)) return cerr(c, "'items' must be a schema or a boolean");
    char iname[24] = "";
    int additional = items && !json_is_false(items);
    if (additional && sub(c, items, depth, "items", iname)) return -1;
    size_t np = prefix ? json_array_size(prefix) : 0;
    if (!np) {
        if (!additional || hi == 0) {
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

static int gen_object(conv *c, json_t *s, int depth, sbuf *b) {
    json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    json_t *addl = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props)) return cerr(c, "'properties' must be an object");
    if (req && !json_is_array(req)) return cerr(c, "'required' must be an array");
    if (addl && !json_is_object(addl) && !json_is_boolean(addl))
        return cerr(c, "'additionalProperties' must be a schema or a boolean");
    size_t np = props ? json_object_size(props) : 0;
    for (size_t i = 0; req && i < json_array_size(req); i++) {
        json_t *r = json_array_get(req, i);
        if (!json_is_string(r)) return cerr(c, "'required' must list strings");
        if (!props || !json_object_get(props, json_string_value(r)))
            return cerr(c, "required property '%s' is not in 'properties'", json_string_value(r));
    }
    char aname[24] = "";
    int additional = addl && !json_is_false(addl);
    if (additional && sub(c, addl, depth, "additionalProperties", aname)) return -1;
    char apat[128] = "";
    if (additional) snprintf(apat, sizeof apat, "basic-string " WS " \":\" " WS " %s", aname);
    if (!np) {
        if (additional)
            sb_fmt(b, "\"{\" " WS " %s (" WS " \",\" " WS " %s)* " WS " \"}\" | ", apat, apat);
        sb_str(b, "\"{\" " WS " \"}\"");
        return 0;
    }
    /* property i as text, required flags */
    char (*pr)[24] = calloc(np, sizeof *pr);
    char (*tail)[24] = calloc(np, sizeof *tail);
    char *isreq = calloc(np, 1);
    sbuf *pp = calloc(np, sizeof *pp);
    int rc = -1;
    if (!pr || !tail || !isreq || !pp) {
        cerr(c, "out of memory");
        goto out;
    }
    const char *key;
    json_t *val;
    size_t i = 0;
    json_object_foreach(props, key, val) {
        char k[160];
        snprintf(k, sizeof k, "properties/%s", key);
        if (sub(c, val, depth, k, pr[i])) goto out;
        for (size_t r = 0; req && r < json_array_size(req); r++)
            if (!strcmp(json_string_value(json_array_get(req, r)), key)) isreq[i] = 1;
        /* the key as JSON text (compact), as a GBNF literal */
        json_t *ks = json_string(key);
        char *kt = ks ? json_dumps(ks, JSON_ENCODE_ANY) : NULL;
        json_decref(ks);
        if (!kt) {
            cerr(c, "out of memory");
            goto out;
        }
        sb_lit(&pp[i], kt, strlen(kt));
        free(kt);
        sb_fmt(&pp[i], " " WS " \":\" " WS " %s", pr[i]);
        if (pp[i].oom) {
            cerr(c, "out of memory");
            goto out;
        }
        i++;
    }
    /* tails: tail[n-1] = additional properties (or nothing); tail[i] = what may follow property i */
    for (size_t t = np; t-- > 0;) {
        sbuf body = {0};
        new_name(c, tail[t]);
        if (t == np - 1) {
            if (additional) sb_fmt(&body, "(" WS " \",\" " WS " %s)*", apat);
            else sb_str(&body, "\"\"");
        } else {
            sbuf with = {0};
            sb_str(&with, WS " \",\" " WS " ");
            sb_add(&with, pp[t + 1].s, pp[t + 1].n);
            sb_fmt(&with, " %s", tail[t + 1]);
            if (isreq[t + 1]) sb_add(&body, with.s, with.n);
            else sb_fmt(&body, "%s | ", tail[t + 1]), sb_add(&body, with.s, with.n);
            free(with.s);
        }
        int e = add_rule(c, tail[t], &body);
        free(body.s);
        if (e) goto out;
    }
    int any_req = 0;
    sb_str(b, "\"{\" " WS " (");
    for (i = 0; i < np; i++) {
        if (i) sb_str(b, " | ");
        sb_add(b, pp[i].s, pp[i].n);
        sb_fmt(b, " %s", tail[i]);
        if (isreq[i]) {
            any_req = 1;
            break;
        }
    }
    if (additional && !any_req) sb_fmt(b, " | %s %s", apat, tail[np - 1]);
    sb_str(b, ") " WS " \"}\"");
    if (!any_req) sb_str(b, " | \"{\" " WS " \"}\"");
    rc = 0;
out:
    for (size_t k = 0; pp && k < np; k++) free(pp[k].s);
    free(pr), free(tail), free(isreq), free(pp);
    return rc;
}

static int gen_type(conv *c, json_t *s, const char *t, int depth, sbuf *b) {
    if (!strcmp(t, "string")) return gen_string(c, s, b);
    if (!strcmp(t, "integer")) return sb_str(b, "basic-integer"), 0;
    if (!strcmp(t, "number")) return sb_str(b, "basic-number"), 0;
    if (!strcmp(t, "boolean")) return sb_str(b, "basic-boolean"), 0;
    if (!strcmp(t, "null")) return sb_str(b, "basic-null"), 0;
    if (!strcmp(t, "array")) return gen_array(c, s, depth, b);
    if (!strcmp(t, "object")) return gen_object(c, s, depth, b);
    return cerr(c, "unknown type '%s'", t);
}

static int gen_ref(conv *c, const char *ref, char *name) {
    for (int i = 0; i < c->n_refs; i++)
        if (!strcmp(c->refs[i].ref, ref)) {
            memcpy(name, c->refs[i].name, 24);
            return 0;
        }
    json_t *target = NULL;
    if (!strcmp(ref, "#")) target = c->root;
    else if (!strncmp(ref, "#/$defs/", 8)) target = json_object_get(json_object_get(c->root, "$defs"), ref + 8);
    else if (!strncmp(ref, "#/definitions/", 14))
        target = json_object_get(json_object_get(c->root, "definitions"), ref + 14);
    else return cerr(c, "$ref '%s': only #, #/$defs/NAME and #/definitions/NAME are supported", ref);
    if (!target) return cerr(c, "$ref '%s' points at nothing", ref);
    if (c->n_refs + 1 > c->cap_refs) {
        int cap = c->cap_refs ? c->cap_refs * 2 : 8;
        ref_rule *t = realloc(c->refs, (size_t)cap * sizeof *t);
        if (!t) return cerr(c, "out of memory");
        c->refs = t;
        c->cap_refs = cap;
    }
    ref_rule *r = &c->refs[c->n_refs];
    r->ref = strdup(ref);
    if (!r->ref) return cerr(c, "out of memory");
    new_name(c, r->name);
    c->n_refs++;
    memcpy(name, r->name, 24);
    /* the body: a rule that forwards to the target's rule (the name exists before the
     * target is generated, so recursive references resolve) */
    char tname[24];
    char saved[256];
    memcpy(saved, c->path, sizeof saved);
    snprintf(c->path, sizeof c->path, "%s", ref);
    int rc = gen(c, target, 1, tname);
    memcpy(c->path, saved, sizeof saved);
    if (rc) return -1;
    sbuf body = {0};
    sb_str(&body, tname);
    rc = add_rule(c, name, &body);
    free(body.s);
    return rc;
}

static int gen(conv *c, json_t *s, int depth, char *name) {
    if (depth > JSON_SCHEMA_MAX_DEPTH) return cerr(c, "schemas nested deeper than %d", JSON_SCHEMA_MAX_DEPTH);
    if (json_is_true(s)) {
        strcpy(name, "basic-any");
        return 0;
    }
    if (json_is_false(s)) return cerr(c, "the schema false matches nothing");
    if (!json_is_object(s)) return cerr(c, "a schema must be an object or a boolean");
    if (check_keys(c, s)) return -1;
    json_t *ref = json_object_get(s, "$ref");
    if (ref) {
        if (!json_is_string(ref)) return cerr(c, "'$ref' must be a string");
        return gen_ref(c, json_string_value(ref), name);
    }
    sbuf b = {0};
    int rc = 0;
    json_t *cst = json_object_get(s, "const"), *en = json_object_get(s, "enum");
    json_t *any = json_object_get(s, "anyOf");
    if (!any) any = json_object_get(s, "oneOf");
    json_t *type = json_object_get(s, "type");
    if (cst || en) {
        if (en && (!json_is_array(en) || !json_array_size(en))) {
            rc = cerr(c, "'enum' must be a non-empty array");
            goto out;
        }
        size_t n = cst ? 1 : json_array_size(en);
        for (size_t i = 0; i < n; i++) {
            char *t = json_dumps(cst ? cst : json_array_get(en, i), JSON_COMPACT | JSON_ENCODE_ANY);
            if (!t) {
                rc = cerr(c, "out of memory");
                goto out;
            }
            if (i) sb_str(&b, " | ");
            sb_lit(&b, t, strlen(t));
            free(t);
        }
    } else if (any) {
        if (!json_is_array(any) || !json_array_size(any)) {
            rc = cerr(c, "'anyOf' / 'oneOf' must be a non-empty array");
            goto out;
        }
        for (size_t i = 0; i < json_array_size(any); i++) {
            char key[48], an[24];
            snprintf(key, sizeof key, "anyOf/%zu", i);
            if ((rc = sub(c, json_array_get(any, i), depth, key, an))) goto out;
            sb_fmt(&b, "%s%s", i ? " | " : "", an);
        }
    } else if (type) {
        if (json_is_string(type)) {
            rc = gen_type(c, s, json_string_value(type), depth, &b);
        } else if (json_is_array(type) && json_array_size(type)) {
            for (size_t i = 0; i < json_array_size(type) && !rc; i++) {
                json_t *t = json_array_get(type, i);
                if (!json_is_string(t)) {
                    rc = cerr(c, "'type' must be a string or a list of strings");
                    break;
                }
                if (i) sb_str(&b, " | ");
                sb_str(&b, "(");
                rc = gen_type(c, s, json_string_value(t), depth, &b);
                sb_str(&b, ")");
            }
        } else {
            rc = cerr(c, "'type' must be a string or a list of strings");
        }
    } else if (json_object_get(s, "properties") || json_object_get(s, "required") ||
               json_object_get(s, "additionalProperties")) {
        rc = gen_object(c, s, depth, &b);
    } else if (json_object_get(s, "items") || json_object_get(s, "prefixItems")) {
        rc = gen_array(c, s, depth, &b);
    } else if (json_object_get(s, "pattern") || json_object_get(s, "format") || json_object_get(s, "minLength") ||
               json_object_get(s, "maxLength")) {
        rc = gen_string(c, s, &b);
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

int json_schema_to_gbnf(const char *text, size_t len, char **gbnf, char *err, size_t errlen) {
    *gbnf = NULL;
    if (len > GRAMMAR_MAX_TEXT) {
        if (err && errlen) snprintf(err, errlen, "json schema: %zu bytes, more than the limit of %d", len, GRAMMAR_MAX_TEXT);
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
    conv c = {.root = root, .err = err, .errlen = errlen};
    char name[24];
    int rc = gen(&c, root, 0, name);
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
    for (int i = 0; i < c.n_refs; i++) free(c.refs[i].ref);
    free(c.refs);
    free(c.out.s);
    json_decref(root);
    return rc;
}
