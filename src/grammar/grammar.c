/* grammar.c - GBNF parser and the byte-level pushdown matcher (see grammar.h).
 *
 * Syntax (llama.cpp's grammars/README.md): `name ::= alternatives`, one rule per
 * line (newlines are spaces inside parentheses, and a line starting with `|`
 * continues the rule above); "literals" and [classes] with the escapes \n \r \t
 * \\ \" \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH; [^...] negation; `.` any character;
 * ( groups ); the postfixes * + ? {m} {m,} {m,n}; # comments to the end of a line. */
#include "grammar.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EL_END = 0, EL_CS = 1, EL_REF = 2 };
#define CP_MAX 0x10FFFFu

struct grammar {
    int n_rules, root;
    int *rule_alt, *rule_nalt; /* (n_rules) first index into alt_start, alternatives */
    int *alt_start;            /* (total alternatives) element index where each begins */
    int n_elems, n_positions;
    uint8_t *kind;             /* (n_elems) EL_* */
    int32_t *arg;              /* (n_elems) charset index (EL_CS) or rule id (EL_REF) */
    int n_cs;
    int *cs_off, *cs_n;        /* (n_cs) ranges of each charset in rng */
    uint64_t *cs_ascii;        /* (n_cs, 2) bitmap of code points 0..127 */
    uint64_t *cs_lead;         /* (n_cs) bit b - 0xC0: lead byte b starts a code point of the class */
    uint32_t *rng;             /* (total ranges, 2) sorted disjoint [lo, hi] */
    int32_t *el_min;           /* (n_elems) fewest bytes from element e to the end of its alternative */
    int32_t *rule_min;         /* (n_rules) fewest bytes of a string the rule matches */
};

/* ---- growable arrays ------------------------------------------------------------ */

static int grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* ---- parser --------------------------------------------------------------------- */

typedef struct {
    uint8_t kind;
    int32_t arg;
} pel;

typedef struct {
    char *name;      /* NULL for generated rules */
    pel *el;         /* alternatives separated by EL_END, each ended by EL_END */
    int n, cap;
    int defined;     /* 1 once its body is parsed */
    long use_off;    /* first reference (for "undefined rule" errors) */
    long def_off;
} prule;

typedef struct {
    const char *s, *end, *start;
    prule *rules;
    int n_rules, cap_rules;
    uint32_t *rng; /* all charset ranges */
    int n_rng, cap_rng;
    int *cs_off, *cs_n;
    int n_cs, cap_cs, cap_cs2;
    long total_elems;
    int32_t *names; /* open-addressing table of named rules (indices), names_cap slots */
    int names_cap, n_named;
    char *err;
    size_t errlen;
    int failed;
} parser;

static int perr_at(parser *p, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr_at(parser *p, const char *at, const char *fmt, ...) {
    if (p->failed) return -1;
    p->failed = 1;
    int line = 1, col = 1;
    for (const char *c = p->start; c < at && c < p->end; c++) {
        if (*c == '\n') line++, col = 1;
        else if (((unsigned char)*c & 0xC0) != 0x80) col++;
    }
    if (p->err && p->errlen) {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(p->err, p->errlen, "grammar: line %d, column %d: %s", line, col, msg);
        for (char *q = p->err; *q; q++) /* one line, whatever the grammar's bytes */
            if ((unsigned char)*q < 0x20 || *q == 0x7F) *q = '?';
    }
    return -1;
}

static int oom(parser *p) { return perr_at(p, p->s, "out of memory"); }

static int is_name_char(int c) {
    return c == '_' || c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Skip spaces, tabs, CRs, comments and (when newlines) line ends. */
static void skip_space(parser *p, int newlines) {
    while (p->s < p->end) {
        char c = *p->s;
        if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) p->s++;
        else if (c == '#') {
            while (p->s < p->end && *p->s != '\n') p->s++;
        } else break;
    }
}

static uint32_t name_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static int find_rule(parser *p, const char *name, size_t len) {
    if (!p->names_cap) return -1;
    for (uint32_t k = name_hash(name, len) & (uint32_t)(p->names_cap - 1); p->names[k] >= 0;
         k = (k + 1) & (uint32_t)(p->names_cap - 1)) {
        const char *n = p->rules[p->names[k]].name;
        if (!strncmp(n, name, len) && !n[len]) return p->names[k];
    }
    return -1;
}

/* Index rule i (named) in the table, growing it to keep it at most half full. */
static int index_name(parser *p, int i) {
    if (2 * (p->n_named + 1) > p->names_cap) {
        int cap = p->names_cap ? 2 * p->names_cap : 256;
        int32_t *t = malloc((size_t)cap * sizeof *t);
        if (!t) return oom(p);
        memset(t, 0xff, (size_t)cap * sizeof *t);
        for (int k = 0; k < p->names_cap; k++)
            if (p->names[k] >= 0) {
                const char *n = p->rules[p->names[k]].name;
                uint32_t h = name_hash(n, strlen(n)) & (uint32_t)(cap - 1);
                while (t[h] >= 0) h = (h + 1) & (uint32_t)(cap - 1);
                t[h] = p->names[k];
            }
        free(p->names);
        p->names = t, p->names_cap = cap;
    }
    const char *n = p->rules[i].name;
    uint32_t h = name_hash(n, strlen(n)) & (uint32_t)(p->names_cap - 1);
    while (p->names[h] >= 0) h = (h + 1) & (uint32_t)(p->names_cap - 1);
    p->names[h] = i;
    p->n_named++;
    return 0;
}

static int new_rule(parser *p, const char *name, size_t len) {
    if (grow((void **)&p->rules, &p->cap_rules, p->n_rules + 1, sizeof *p->rules)) return oom(p);
    prule *r = &p->rules[p->n_rules];
    memset(r, 0, sizeof *r);
    r->use_off = r->def_off = -1;
    if (name) {
        r->name = malloc(len + 1);
        if (!r->name) return oom(p);
        memcpy(r->name, name, len);
        r->name[len] = 0;
        if (index_name(p, p->n_rules)) return -1;
    }
    return p->n_rules++;
}

static int push_el(parser *p, int r, uint8_t kind, int32_t arg) {
    if (++p->total_elems > GRAMMAR_MAX_ELEMS)
        return perr_at(p, p->s, "the grammar expands to more than %d elements", GRAMMAR_MAX_ELEMS);
    prule *ru = &p->rules[r];
    if (grow((void **)&ru->el, &ru->cap, ru->n + 1, sizeof *ru->el)) return oom(p);
    ru->el[ru->n++] = (pel){kind, arg};
    return 0;
}

/* A charset from ranges[0..n) (pairs; any order, may overlap), complemented if neg. */
static int add_charset(parser *p, uint32_t *r, int n, int neg) {
    for (int i = 1; i < n; i++) { /* insertion sort by lo: classes are short */
        uint32_t lo = r[2 * i], hi = r[2 * i + 1];
        int j = i;
        while (j > 0 && r[2 * (j - 1)] > lo) {
            r[2 * j] = r[2 * (j - 1)];
            r[2 * j + 1] = r[2 * (j - 1) + 1];
            j--;
        }
        r[2 * j] = lo;
        r[2 * j + 1] = hi;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m && r[2 * i] <= r[2 * (m - 1) + 1] + 1) {
            if (r[2 * i + 1] > r[2 * (m - 1) + 1]) r[2 * (m - 1) + 1] = r[2 * i + 1];
        } else {
            r[2 * m] = r[2 * i];
            r[2 * m + 1] = r[2 * i + 1];
            m++;
        }
    }
    if (grow((void **)&p->rng, &p->cap_rng, p->n_rng + 2 * (m + 1), sizeof *p->rng)) return oom(p);
    if (grow((void **)&p->cs_off, &p->cap_cs, p->n_cs + 1, sizeof *p->cs_off)) return oom(p);
    if (grow((void **)&p->cs_n, &p->cap_cs2, p->n_cs + 1, sizeof *p->cs_n)) return oom(p);
    int off = p->n_rng / 2, k = 0;
    uint32_t *o = p->rng + p->n_rng;
    if (!neg) {
        memcpy(o, r, (size_t)m * 2 * sizeof *o);
        k = m;
    } else {
        uint32_t next = 0;
        for (int i = 0; i < m; i++) {
            if (r[2 * i] > next) o[2 * k] = next, o[2 * k + 1] = r[2 * i] - 1, k++;
            next = r[2 * i + 1] + 1;
        }
        if (next <= CP_MAX) o[2 * k] = next, o[2 * k + 1] = CP_MAX, k++;
    }
    p->n_rng += 2 * k;
    p->cs_off[p->n_cs] = off;
    p->cs_n[p->n_cs] = k;
    return p->n_cs++;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One UTF-8 code point at p->s (advances). -1 on bad UTF-8. */
static int32_t read_utf8(parser *p) {
    const unsigned char *s = (const unsigned char *)p->s;
    size_t avail = (size_t)(p->end - p->s);
    unsigned c = s[0];
    int len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || (size_t)len > avail) return -1;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return -1;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > CP_MAX || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    p->s += len;
    return (int32_t)cp;
}

/* One character of a literal or a class (escapes decoded). -1 on error. */
static int32_t parse_char(parser *p) {
    const char *at = p->s;
    if (p->s >= p->end) return perr_at(p, at, "unexpected end of input");
    if (*p->s != '\\') {
        int32_t cp = read_utf8(p);
        if (cp < 0) return perr_at(p, at, "invalid UTF-8");
        return cp;
    }
    p->s++;
    if (p->s >= p->end) return perr_at(p, at, "unexpected end of input after '\\'");
    char c = *p->s++;
    int nhex = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (nhex) {
        uint32_t v = 0;
        for (int i = 0; i < nhex; i++) {
            int h = p->s < p->end ? hexval((unsigned char)*p->s) : -1;
            if (h < 0) return perr_at(p, p->s, "expected %d hex digits after '\\%c'", nhex, c);
            v = v << 4 | (uint32_t)h;
            p->s++;
        }
        if (v > CP_MAX) return perr_at(p, at, "code point above U+10FFFF");
        return (int32_t)v;
    }
    switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case '\\': case '"': case '[': case ']': case '-': case '^': case '\'': case '/': return c;
    }
    if (c >= 32 && c < 127) return perr_at(p, at, "unknown escape '\\%c'", c);
    return perr_at(p, at, "unknown escape: '\\' then byte 0x%02X", (unsigned)c & 0xFF);
}

static int parse_alternates(parser *p, int r, int depth);
static int cs_meets(const grammar *g, int c, uint32_t a, uint32_t b);

/* Replace the last element of rule r (starting at index last) by its repetition {lo, hi}
 * (hi -1: unbounded). */
static int repeat_last(parser *p, int r, int last, long lo, long hi) {
    pel x = p->rules[r].el[last];
    p->rules[r].n = last;
    p->total_elems--;
    for (long i = 0; i < lo; i++)
        if (push_el(p, r, x.kind, x.arg)) return -1;
    if (hi < 0) { /* star ::= x star | "" */
        int s = new_rule(p, NULL, 0);
        if (s < 0 || push_el(p, s, x.kind, x.arg) || push_el(p, s, EL_REF, s) || push_el(p, s, EL_END, 0) ||
            push_el(p, s, EL_END, 0) || push_el(p, s, EL_END, 0))
            return -1;
        p->rules[s].defined = 1;
        return push_el(p, r, EL_REF, s);
    }
    /* opt_k ::= x opt_{k+1} | "" ; the last one ::= x | "" */
    int next = -1;
    for (long i = hi - lo; i > 0; i--) {
        int s = new_rule(p, NULL, 0);
        if (s < 0 || push_el(p, s, x.kind, x.arg) || (next >= 0 && push_el(p, s, EL_REF, next)) ||
            push_el(p, s, EL_END, 0) || push_el(p, s, EL_END, 0) || push_el(p, s, EL_END, 0))
            return -1;
        p->rules[s].defined = 1;
        next = s;
    }
    if (next >= 0) return push_el(p, r, EL_REF, next);
    return 0;
}

static int parse_count(parser *p, long *v) {
    const char *at = p->s;
    if (p->s >= p->end || *p->s < '0' || *p->s > '9') return perr_at(p, at, "expected a number in { }");
    long x = 0;
    while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
        x = x * 10 + (*p->s++ - '0');
        if (x > GRAMMAR_MAX_REPEAT) return perr_at(p, at, "repetition count above %d", GRAMMAR_MAX_REPEAT);
    }
    *v = x;
    return 0;
}

/* A sequence into rule r, up to '|', ')', a line end (when not nested) or the end. */
static int parse_sequence(parser *p, int r, int depth) {
    int nested = depth > 0;
    for (;;) {
        skip_space(p, nested);
        if (p->s >= p->end) return 0;
        char c = *p->s;
        if (c == '|' || c == ')' || c == '\n') return 0;
        int last = p->rules[r].n;
        const char *at = p->s;
        if (c == '"') {
            p->s++;
            int any = 0;
            while (p->s < p->end && *p->s != '"') {
                if (*p->s == '\n') return perr_at(p, p->s, "line end inside a literal");
                int32_t cp = parse_char(p);
                if (cp < 0) return -1;
                uint32_t rg[2] = {(uint32_t)cp, (uint32_t)cp};
                int cs = add_charset(p, rg, 1, 0);
                if (cs < 0 || push_el(p, r, EL_CS, cs)) return -1;
                any = 1;
            }
            if (p->s >= p->end) return perr_at(p, at, "unterminated literal");
            p->s++;
            if (!any) { /* "" : an empty sequence, nothing to repeat */
                skip_space(p, nested);
                if (p->s < p->end && (*p->s == '*' || *p->s == '+' || *p->s == '?' || *p->s == '{'))
                    return perr_at(p, p->s, "a repetition of an empty literal");
                continue;
            }
            if (p->rules[r].n - last > 1) { /* a repeated multi-character literal is a group */
                skip_space(p, nested);
                if (p->s < p->end && (*p->s == '*' || *p->s == '+' || *p->s == '?' || *p->s == '{')) {
                    int g = new_rule(p, NULL, 0);
                    if (g < 0) return -1;
                    for (int i = last; i < p->rules[r].n; i++)
                        if (push_el(p, g, p->rules[r].el[i].kind, p->rules[r].el[i].arg)) return -1;
                    if (push_el(p, g, EL_END, 0) || push_el(p, g, EL_END, 0)) return -1;
                    p->rules[g].defined = 1;
                    p->total_elems -= p->rules[r].n - last;
                    p->rules[r].n = last;
                    if (push_el(p, r, EL_REF, g)) return -1;
                }
            }
        } else if (c == '[') {
            p->s++;
            int neg = 0;
            if (p->s < p->end && *p->s == '^') neg = 1, p->s++;
            uint32_t *rg = NULL;
            int n = 0, cap = 0;
            while (p->s < p->end && *p->s != ']') {
                if (*p->s == '\n') {
                    free(rg);
                    return perr_at(p, p->s, "line end inside a character class");
                }
                const char *cat = p->s;
                int32_t lo = parse_char(p), hi = lo;
                if (lo >= 0 && p->s + 1 < p->end && p->s[0] == '-' && p->s[1] != ']') {
                    p->s++;
                    hi = parse_char(p);
                    if (hi >= 0 && hi < lo) hi = -1, perr_at(p, cat, "character range out of order");
                }
                if (lo < 0 || hi < 0 || grow((void **)&rg, &cap, 2 * n + 2, sizeof *rg)) {
                    free(rg);
                    return lo < 0 || hi < 0 ? -1 : oom(p);
                }
                rg[2 * n] = (uint32_t)lo;
                rg[2 * n + 1] = (uint32_t)hi;
                n++;
            }
            if (p->s >= p->end) {
                free(rg);
                return perr_at(p, at, "unterminated character class");
            }
            p->s++;
            int cs = add_charset(p, rg ? rg : (uint32_t[2]){0, 0}, n, neg);
            free(rg);
            if (cs < 0 || push_el(p, r, EL_CS, cs)) return -1;
        } else if (c == '.') {
            p->s++;
            uint32_t rg[2] = {0, CP_MAX};
            int cs = add_charset(p, rg, 1, 0);
            if (cs < 0 || push_el(p, r, EL_CS, cs)) return -1;
        } else if (c == '(') {
            if (depth + 1 > GRAMMAR_MAX_DEPTH) return perr_at(p, at, "groups nested deeper than %d", GRAMMAR_MAX_DEPTH);
            p->s++;
            int g = new_rule(p, NULL, 0);
            if (g < 0 || parse_alternates(p, g, depth + 1)) return -1;
            p->rules[g].defined = 1;
            skip_space(p, 1);
            if (p->s >= p->end || *p->s != ')') return perr_at(p, p->s, "expected ')' to close the group");
            p->s++;
            if (push_el(p, r, EL_REF, g)) return -1;
        } else if (is_name_char((unsigned char)c)) {
            const char *n0 = p->s;
            while (p->s < p->end && is_name_char((unsigned char)*p->s)) p->s++;
            size_t len = (size_t)(p->s - n0);
            const char *after = p->s;
            skip_space(p, 0);
            if (p->end - p->s >= 3 && !memcmp(p->s, "::=", 3))
                return perr_at(p, n0, "a rule definition inside another rule (missing line end?)");
            p->s = after;
            int ref = find_rule(p, n0, len);
            if (ref < 0 && (ref = new_rule(p, n0, len)) < 0) return -1;
            if (p->rules[ref].use_off < 0) p->rules[ref].use_off = n0 - p->start;
            if (push_el(p, r, EL_REF, ref)) return -1;
        } else {
            return perr_at(p, at, "unexpected character '%c'", c >= 32 && c < 127 ? c : '?');
        }
        /* postfix operators */
        for (;;) {
            skip_space(p, nested);
            if (p->s >= p->end) break;
            char o = *p->s;
            if (p->rules[r].n == last) break;
            long lo, hi;
            const char *oat = p->s;
            if (o == '*') lo = 0, hi = -1, p->s++;
            else if (o == '+') lo = 1, hi = -1, p->s++;
            else if (o == '?') lo = 0, hi = 1, p->s++;
            else if (o == '{') {
                p->s++;
                skip_space(p, nested);
                if (parse_count(p, &lo)) return -1;
                skip_space(p, nested);
                hi = lo;
                if (p->s < p->end && *p->s == ',') {
                    p->s++;
                    skip_space(p, nested);
                    hi = -1;
                    if (p->s < p->end && *p->s != '}' && parse_count(p, &hi)) return -1;
                    skip_space(p, nested);
                }
                if (p->s >= p->end || *p->s != '}') return perr_at(p, p->s, "expected '}' after a repetition count");
                p->s++;
                if (hi >= 0 && hi < lo) return perr_at(p, oat, "repetition {%ld,%ld}: the bound is below the count", lo, hi);
            } else break;
            if (repeat_last(p, r, last, lo, hi)) return -1;
            if (p->rules[r].n == last) break; /* {0} or {0,0}: nothing left to repeat */
            last = p->rules[r].n - 1;
        }
    }
}

static int parse_alternates(parser *p, int r, int depth) {
    for (;;) {
        if (parse_sequence(p, r, depth) || push_el(p, r, EL_END, 0)) return -1;
        const char *save = p->s;
        skip_space(p, 1);
        if (p->s < p->end && *p->s == '|') {
            p->s++;
            skip_space(p, 1);
            continue;
        }
        p->s = save;
        return push_el(p, r, EL_END, 0); /* two ENDs: the rule's last alternative */
    }
}

static int parse_rules(parser *p) {
    for (;;) {
        skip_space(p, 1);
        if (p->s >= p->end) return 0;
        const char *n0 = p->s;
        while (p->s < p->end && is_name_char((unsigned char)*p->s)) p->s++;
        if (p->s == n0) return perr_at(p, n0, "expected a rule name");
        size_t len = (size_t)(p->s - n0);
        skip_space(p, 0);
        if (p->end - p->s < 3 || memcmp(p->s, "::=", 3)) return perr_at(p, p->s, "expected '::=' after the rule name");
        p->s += 3;
        int r = find_rule(p, n0, len);
        if (r >= 0 && p->rules[r].defined) return perr_at(p, n0, "rule '%.*s' is defined twice", (int)len, n0);
        if (r < 0 && (r = new_rule(p, n0, len)) < 0) return -1;
        p->rules[r].def_off = n0 - p->start;
        skip_space(p, 1);
        if (parse_alternates(p, r, 0)) return -1;
        p->rules[r].defined = 1;
        skip_space(p, 0);
        if (p->s < p->end && *p->s != '\n')
            return perr_at(p, p->s, "unexpected '%c' (unbalanced ')'?)", *p->s >= 32 && *p->s < 127 ? *p->s : '?');
    }
}

/* ---- checks after parsing ------------------------------------------------------ */

/* Refuse left recursion: a rule reaching itself through references each preceded
 * only by nullable elements (the matcher's expansion would not end). */
static int check_left_recursion(parser *p, grammar *g) {
    int R = g->n_rules;
    char *nullable = calloc((size_t)R, 1), *color = calloc((size_t)R, 1);
    int *stk = malloc(2 * (size_t)R * sizeof *stk);
    if (!nullable || !color || !stk) {
        free(nullable), free(color), free(stk);
        return oom(p);
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int r = 0; r < R; r++) {
            if (nullable[r]) continue;
            for (int a = 0; a < g->rule_nalt[r] && !nullable[r]; a++) {
                int e = g->alt_start[g->rule_alt[r] + a], ok = 1;
                for (; g->kind[e] != EL_END; e++)
                    if (g->kind[e] == EL_CS || !nullable[g->arg[e]]) {
                        ok = 0;
                        break;
                    }
                if (ok) nullable[r] = 1, changed = 1;
            }
        }
    }
    int rc = 0;
    /* iterative DFS over left edges; stk holds (rule, next alternative-element cursor) */
    for (int s = 0; s < R && !rc; s++) {
        if (color[s]) continue;
        int sp = 0;
        stk[sp++] = s;
        stk[sp++] = -1;
        color[s] = 1;
        while (sp && !rc) {
            int r = stk[sp - 2], cur = stk[sp - 1];
            /* cursor encodes (alternative, element) as a flat element index over the rule's span */
            int first = g->alt_start[g->rule_alt[r]];
            int e = cur < 0 ? first : cur + 1, found = -1;
            int last_end = g->alt_start[g->rule_alt[r] + g->rule_nalt[r] - 1];
            while (g->kind[last_end] != EL_END) last_end++;
            for (; e <= last_end; e++) {
                if (g->kind[e] != EL_REF) continue;
                /* is every element before e in its alternative nullable? */
                int b = e - 1, ok = 1;
                for (; b >= first && g->kind[b] != EL_END; b--)
                    if (g->kind[b] == EL_CS || !nullable[g->arg[b]]) {
                        ok = 0;
                        break;
                    }
                if (ok) {
                    found = e;
                    break;
                }
            }
            if (found < 0) {
                color[r] = 2;
                sp -= 2;
                continue;
            }
            stk[sp - 1] = found;
            int t = g->arg[found];
            if (color[t] == 1) {
                const char *nm = p->rules[t].name;
                long off = p->rules[t].def_off;
                for (int k = sp - 2; !nm && k >= 0; k -= 2) nm = p->rules[stk[k]].name, off = p->rules[stk[k]].def_off;
                rc = perr_at(p, p->start + (off > 0 ? off : 0),
                             "left recursion: rule '%s' can reach itself before matching a character",
                             nm ? nm : "(group)");
            } else if (!color[t]) {
                color[t] = 1;
                stk[sp++] = t;
                stk[sp++] = -1;
            }
        }
    }
    free(nullable), free(color), free(stk);
    return rc;
}

/* ---- shortest completions ------------------------------------------------------ */

static int32_t sat_add(int64_t a, int64_t b) { return a + b < GRAMMAR_NO_END ? (int32_t)(a + b) : GRAMMAR_NO_END; }

/* The UTF-8 length of the shortest code point in class c (surrogates never match), or
 * GRAMMAR_NO_END for an empty class. */
static int32_t cs_min_len(const grammar *g, int c) {
    static const uint32_t lo[4] = {0, 0x80, 0x800, 0x10000}, hi[4] = {0x7F, 0x7FF, 0xFFFF, CP_MAX};
    for (int L = 0; L < 4; L++) {
        if (L == 2 ? cs_meets(g, c, 0x800, 0xD7FF) || cs_meets(g, c, 0xE000, 0xFFFF) : cs_meets(g, c, lo[L], hi[L]))
            return L + 1;
    }
    return GRAMMAR_NO_END;
}

/* A binary min-heap of n keys in h. */
static void heap_push(uint64_t *h, int *n, uint64_t key) {
    int i = (*n)++;
    for (; i && h[(i - 1) / 2] > key; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = key;
}

static uint64_t heap_pop(uint64_t *h, int *n) {
    uint64_t top = h[0], x = h[--*n];
    int i = 0;
    for (int c; (c = 2 * i + 1) < *n; i = c) {
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (x <= h[c]) break;
        h[i] = h[c];
    }
    h[i] = x;
    return top;
}

/* el_min and rule_min: the fewest bytes of each rule is a least fixpoint over the rules
 * (Knuth's generalization of Dijkstra's algorithm: a rule's value is final when it is the
 * smallest candidate left, the sum of an alternative whose references are all final);
 * rules that match no finite string keep GRAMMAR_NO_END. */
static int min_lengths(grammar *g) {
    int R = g->n_rules, A = 0, rc = -1;
    for (int r = 0; r < R; r++) A += g->rule_nalt[r];
    int32_t *base = malloc(((size_t)A + 1) * sizeof *base), *left = malloc(((size_t)A + 1) * sizeof *left);
    int32_t *alt_rule = malloc(((size_t)A + 1) * sizeof *alt_rule), *occ_n = calloc((size_t)R + 1, sizeof *occ_n);
    int32_t *occ = NULL;
    uint64_t *heap = malloc(((size_t)A + 1) * sizeof *heap);
    char *final = calloc((size_t)R + 1, 1);
    g->el_min = malloc(((size_t)g->n_elems + 1) * sizeof *g->el_min);
    g->rule_min = malloc(((size_t)R + 1) * sizeof *g->rule_min);
    if (!base || !left || !alt_rule || !occ_n || !heap || !final || !g->el_min || !g->rule_min) goto out;
    int n_ref = 0;
    for (int r = 0; r < R; r++)
        for (int a = g->rule_alt[r]; a < g->rule_alt[r] + g->rule_nalt[r]; a++) {
            alt_rule[a] = r;
            base[a] = left[a] = 0;
            for (int e = g->alt_start[a]; g->kind[e] != EL_END; e++)
                if (g->kind[e] == EL_CS) base[a] = sat_add(base[a], cs_min_len(g, g->arg[e]));
                else left[a]++, occ_n[g->arg[e]]++, n_ref++;
        }
    /* occ: the alternatives holding each rule's references (once per reference), by rule */
    occ = malloc(((size_t)n_ref + 1) * sizeof *occ);
    int32_t *occ_at = malloc(((size_t)R + 1) * sizeof *occ_at);
    if (!occ || !occ_at) {
        free(occ_at);
        goto out;
    }
    for (int r = 0, k = 0; r < R; r++) occ_at[r] = k, k += occ_n[r];
    for (int a = 0; a < A; a++)
        for (int e = g->alt_start[a]; g->kind[e] != EL_END; e++)
            if (g->kind[e] == EL_REF) occ[occ_at[g->arg[e]]++] = a;
    for (int r = 0; r < R; r++) occ_at[r] -= occ_n[r];
    int hn = 0; /* heap of candidates (value << 32 | rule) */
    for (int a = 0; a < A; a++)
        if (!left[a] && base[a] < GRAMMAR_NO_END) heap_push(heap, &hn, (uint64_t)base[a] << 32 | (uint32_t)alt_rule[a]);
    for (int r = 0; r < R; r++) g->rule_min[r] = GRAMMAR_NO_END;
    while (hn) {
        uint64_t top = heap_pop(heap, &hn);
        int r = (int)(uint32_t)top;
        if (final[r]) continue;
        final[r] = 1;
        g->rule_min[r] = (int32_t)(top >> 32);
        for (int k = occ_at[r]; k < occ_at[r] + occ_n[r]; k++) {
            int a = occ[k];
            base[a] = sat_add(base[a], g->rule_min[r]);
            if (!--left[a] && !final[alt_rule[a]] && base[a] < GRAMMAR_NO_END)
                heap_push(heap, &hn, (uint64_t)base[a] << 32 | (uint32_t)alt_rule[a]);
        }
    }
    free(occ_at);
    for (int a = 0; a < A; a++) { /* suffix sums, from each alternative's END back */
        int e = g->alt_start[a];
        while (g->kind[e] != EL_END) e++;
        g->el_min[e] = 0;
        for (e--; e >= g->alt_start[a]; e--)
            g->el_min[e] = sat_add(g->el_min[e + 1],
                                   g->kind[e] == EL_CS ? cs_min_len(g, g->arg[e]) : g->rule_min[g->arg[e]]);
    }
    rc = 0;
out:
    free(base), free(left), free(alt_rule), free(occ_n), free(occ), free(heap), free(final);
    return rc;
}

static void parser_free(parser *p) {
    for (int i = 0; i < p->n_rules; i++) free(p->rules[i].name), free(p->rules[i].el);
    free(p->rules);
    free(p->rng);
    free(p->cs_off);
    free(p->cs_n);
    free(p->names);
}

void grammar_free(grammar *g) {
    if (!g) return;
    free(g->rule_alt), free(g->rule_nalt), free(g->alt_start), free(g->kind), free(g->arg);
    free(g->cs_off), free(g->cs_n), free(g->cs_ascii), free(g->cs_lead), free(g->rng);
    free(g->el_min), free(g->rule_min);
    free(g);
}

int grammar_n_rules(const grammar *g) { return g->n_rules; }
int grammar_n_positions(const grammar *g) { return g->n_positions; }
int grammar_n_elems(const grammar *g) { return g->n_elems; }

int grammar_parse(const char *text, size_t len, grammar **out, char *err, size_t errlen) {
    *out = NULL;
    parser p = {.s = text, .end = text + len, .start = text, .err = err, .errlen = errlen};
    if (len > GRAMMAR_MAX_TEXT) {
        if (err && errlen) snprintf(err, errlen, "grammar: %zu bytes, more than the limit of %d", len, GRAMMAR_MAX_TEXT);
        return -1;
    }
    if (memchr(text, 0, len)) {
        perr_at(&p, (const char *)memchr(text, 0, len), "a NUL byte in the grammar");
        return -1;
    }
    grammar *g = NULL;
    if (parse_rules(&p)) goto fail;
    int root = find_rule(&p, "root", 4);
    if (root < 0) {
        perr_at(&p, p.end, "no rule named 'root'");
        goto fail;
    }
    for (int i = 0; i < p.n_rules; i++)
        if (!p.rules[i].defined) {
            perr_at(&p, p.start + p.rules[i].use_off, "rule '%s' is used but not defined", p.rules[i].name);
            goto fail;
        }
    g = calloc(1, sizeof *g);
    if (!g) goto nomem;
    g->n_rules = p.n_rules;
    g->root = root;
    int n_alts = 0, n_el = 0;
    for (int i = 0; i < p.n_rules; i++) {
        n_el += p.rules[i].n;
        for (int k = 0; k < p.rules[i].n; k++)
            if (p.rules[i].el[k].kind == EL_END) n_alts++;
    }
    /* each alternative ends with one END; the rule's end adds one more (dropped below) */
    g->rule_alt = malloc((size_t)p.n_rules * sizeof *g->rule_alt);
    g->rule_nalt = malloc((size_t)p.n_rules * sizeof *g->rule_nalt);
    g->alt_start = malloc((size_t)(n_alts + 1) * sizeof *g->alt_start);
    g->kind = malloc((size_t)(n_el + 2) * sizeof *g->kind);
    g->arg = malloc((size_t)(n_el + 2) * sizeof *g->arg);
    if (!g->rule_alt || !g->rule_nalt || !g->alt_start || !g->kind || !g->arg) goto nomem;
    int ne = 0, na = 0;
    for (int i = 0; i < p.n_rules; i++) {
        prule *r = &p.rules[i];
        g->rule_alt[i] = na;
        g->rule_nalt[i] = 0;
        int k = 0;
        while (k < r->n - 1) { /* the final extra END marks the rule's end */
            g->alt_start[na++] = ne;
            g->rule_nalt[i]++;
            while (r->el[k].kind != EL_END) {
                g->kind[ne] = r->el[k].kind;
                g->arg[ne] = r->el[k].arg;
                if (r->el[k].kind == EL_CS) g->n_positions++;
                ne++, k++;
            }
            g->kind[ne] = EL_END;
            g->arg[ne] = 0;
            ne++, k++;
        }
    }
    g->n_elems = ne;
    g->n_cs = p.n_cs;
    g->cs_off = p.cs_off, p.cs_off = NULL;
    g->cs_n = p.cs_n, p.cs_n = NULL;
    g->rng = p.rng, p.rng = NULL;
    g->cs_ascii = calloc((size_t)(g->n_cs ? g->n_cs : 1) * 2, sizeof *g->cs_ascii);
    if (!g->cs_ascii) goto nomem;
    for (int c = 0; c < g->n_cs; c++)
        for (int k = 0; k < g->cs_n[c]; k++) {
            uint32_t lo = g->rng[2 * (g->cs_off[c] + k)], hi = g->rng[2 * (g->cs_off[c] + k) + 1];
            for (uint32_t x = lo; x <= hi && x < 128; x++) g->cs_ascii[2 * c + x / 64] |= 1ull << (x % 64);
        }
    g->cs_lead = calloc((size_t)(g->n_cs ? g->n_cs : 1), sizeof *g->cs_lead);
    if (!g->cs_lead) goto nomem;
    for (int c = 0; c < g->n_cs; c++)
        for (unsigned b = 0xC2; b <= 0xF4; b++) {
            int len = b <= 0xDF ? 2 : b <= 0xEF ? 3 : 4;
            uint32_t lo = (b & (0x7Fu >> len)) << (6 * (len - 1)), hi = lo | ((1u << (6 * (len - 1))) - 1);
            static const uint32_t lmin[5] = {0, 0, 0x80, 0x800, 0x10000};
            if (lo < lmin[len]) lo = lmin[len];
            if (hi > CP_MAX) hi = CP_MAX;
            if (lo <= hi && cs_meets(g, c, lo, hi)) g->cs_lead[c] |= 1ull << (b - 0xC0);
        }
    if (check_left_recursion(&p, g)) goto fail;
    if (min_lengths(g)) goto nomem;
    if (g->rule_min[g->root] >= GRAMMAR_NO_END) {
        if (err && errlen) snprintf(err, errlen, "grammar: rule 'root' matches no finite text (each way through it recurses without end)");
        goto fail;
    }
    parser_free(&p);
    *out = g;
    return 0;
nomem:
    oom(&p);
fail:
    grammar_free(g);
    parser_free(&p);
    return -1;
}

/* ---- character classes -------------------------------------------------------- */

static int cs_has(const grammar *g, int c, uint32_t cp) {
    if (cp < 128) return (int)(g->cs_ascii[2 * c + cp / 64] >> (cp % 64)) & 1;
    const uint32_t *r = g->rng + 2 * g->cs_off[c];
    int lo = 0, hi = g->cs_n[c] - 1;
    while (lo <= hi) {
        int m = (lo + hi) / 2;
        if (cp < r[2 * m]) hi = m - 1;
        else if (cp > r[2 * m + 1]) lo = m + 1;
        else return 1;
    }
    return 0;
}

/* 1 if charset c holds a code point in [a, b]. */
static int cs_meets(const grammar *g, int c, uint32_t a, uint32_t b) {
    const uint32_t *r = g->rng + 2 * g->cs_off[c];
    int lo = 0, hi = g->cs_n[c] - 1, first = g->cs_n[c];
    while (lo <= hi) { /* first range whose end is >= a */
        int m = (lo + hi) / 2;
        if (r[2 * m + 1] >= a) first = m, hi = m - 1;
        else lo = m + 1;
    }
    return first < g->cs_n[c] && r[2 * first] <= b;
}

/* ---- matcher ------------------------------------------------------------------- */

#define GM_MAX_NODES (1 << 24)

struct gm {
    const grammar *g;
    int32_t *pos, *parent, *next; /* (cap) per node; next chains a hash bucket */
    uint32_t *part;               /* (cap) 0, or a character in progress (see PART) */
    int32_t n, cap;
    int32_t *bucket;              /* (nb) newest node of each bucket, -1 if none */
    uint32_t nb;
    int failed;
    /* scratch of one advance: work stack of (pos, parent) and a visited set */
    int32_t *work;
    int work_cap;
    uint64_t *seen;
    uint32_t seen_cap, seen_n;
    uint32_t *seen_used; /* (seen_cap / 2) slots filled, to clear only those */
    int32_t *emit;
    int n_emit;
    int done, esc;
};

/* A partial UTF-8 character on a stack top: bytes still needed, total length, bits so far. */
#define PART(need, len, val) (0x80000000u | (uint32_t)(need) << 28 | (uint32_t)(len) << 24 | (uint32_t)(val))
#define PART_NEED(x) ((int)((x) >> 28 & 3))
#define PART_LEN(x) ((int)((x) >> 24 & 7))
#define PART_VAL(x) ((x) & 0xFFFFFFu)

static uint32_t node_hash(int32_t pos, int32_t parent, uint32_t part) {
    uint64_t h = (uint64_t)(uint32_t)pos * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uint32_t)parent * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)part * 0x165667B19E3779F9ull;
    return (uint32_t)(h >> 32 ^ h);
}

static int rehash(gm *m, uint32_t nb) {
    int32_t *b = malloc((size_t)nb * sizeof *b);
    if (!b) return -1;
    for (uint32_t i = 0; i < nb; i++) b[i] = -1;
    for (int32_t id = 2; id < m->n; id++) {
        uint32_t h = node_hash(m->pos[id], m->parent[id], m->part[id]) & (nb - 1);
        m->next[id] = b[h];
        b[h] = id;
    }
    free(m->bucket);
    m->bucket = b;
    m->nb = nb;
    return 0;
}

static int32_t node_get(gm *m, int32_t pos, int32_t parent, uint32_t part) {
    uint32_t h = node_hash(pos, parent, part) & (m->nb - 1);
    for (int32_t id = m->bucket[h]; id >= 0; id = m->next[id])
        if (m->pos[id] == pos && m->parent[id] == parent && m->part[id] == part) return id;
    if (m->n >= m->cap) {
        if (m->cap >= GM_MAX_NODES) {
            m->failed = 1;
            return -1;
        }
        int32_t c = m->cap * 2;
        int32_t *a = realloc(m->pos, (size_t)c * sizeof *a);
        if (a) m->pos = a;
        int32_t *b = realloc(m->parent, (size_t)c * sizeof *b);
        if (b) m->parent = b;
        int32_t *d = realloc(m->next, (size_t)c * sizeof *d);
        if (d) m->next = d;
        uint32_t *e = realloc(m->part, (size_t)c * sizeof *e);
        if (e) m->part = e;
        if (!a || !b || !d || !e) {
            m->failed = 1;
            return -1;
        }
        m->cap = c;
    }
    if ((uint32_t)m->n >= m->nb) {
        if (rehash(m, m->nb * 2)) {
            m->failed = 1;
            return -1;
        }
        h = node_hash(pos, parent, part) & (m->nb - 1);
    }
    int32_t id = m->n++;
    m->pos[id] = pos;
    m->parent[id] = parent;
    m->part[id] = part;
    m->next[id] = m->bucket[h];
    m->bucket[h] = id;
    return id;
}

void gm_truncate(gm *m, int32_t mark) {
    if (mark < 2) mark = 2;
    for (int32_t id = m->n - 1; id >= mark; id--) {
        uint32_t h = node_hash(m->pos[id], m->parent[id], m->part[id]) & (m->nb - 1);
        m->bucket[h] = m->next[id];
    }
    if (m->n > mark) m->n = mark;
}

int32_t gm_n_nodes(const gm *m) { return m->n; }
int gm_failed(const gm *m) { return m->failed; }
int gm_node_pos(const gm *m, int32_t id) { return m->pos[id]; }
int gm_node_in_char(const gm *m, int32_t id) { return m->part[id] != 0; }

void gm_first_bytes(const gm *m, int32_t id, uint64_t out[4]) {
    out[0] = out[1] = out[2] = out[3] = 0;
    if (id < 2) return;
    if (m->part[id]) {
        out[2] = ~0ull; /* 0x80..0xBF: a continuation byte */
        return;
    }
    int c = m->g->arg[m->pos[id]];
    out[0] = m->g->cs_ascii[2 * c];
    out[1] = m->g->cs_ascii[2 * c + 1];
    out[3] = m->g->cs_lead[c];
}
int32_t gm_position_node(gm *m, int pos) { return node_get(m, pos, GM_ESC, 0); }

int32_t gm_min_bytes(const gm *m, const int32_t *set, int n) {
    const int32_t *el_min = m->g->el_min;
    int32_t best = GRAMMAR_NO_END;
    for (int i = 0; i < n; i++) {
        int32_t id = set[i];
        if (id < 2) return 0; /* GM_DONE (GM_ESC: the caller's rest is not known here) */
        uint32_t part = m->part[id];
        int32_t c = part ? sat_add(PART_NEED(part), el_min[m->pos[id] + 1]) : el_min[m->pos[id]];
        for (int32_t p = m->parent[id]; p >= 2 && c < best; p = m->parent[p]) c = sat_add(c, el_min[m->pos[p]]);
        if (c < best) best = c;
    }
    return best;
}

gm *gm_new(const grammar *g) {
    gm *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->g = g;
    m->cap = 1024;
    m->pos = malloc((size_t)m->cap * sizeof *m->pos);
    m->parent = malloc((size_t)m->cap * sizeof *m->parent);
    m->next = malloc((size_t)m->cap * sizeof *m->next);
    m->part = malloc((size_t)m->cap * sizeof *m->part);
    m->work_cap = 256;
    m->work = malloc((size_t)m->work_cap * sizeof *m->work);
    m->seen_cap = 1024;
    m->seen = calloc(m->seen_cap, sizeof *m->seen);
    m->seen_used = malloc(m->seen_cap / 2 * sizeof *m->seen_used);
    m->emit = malloc(GRAMMAR_MAX_STACKS * sizeof *m->emit);
    if (!m->pos || !m->parent || !m->next || !m->part || !m->work || !m->seen || !m->seen_used || !m->emit) {
        gm_free(m);
        return NULL;
    }
    for (int i = 0; i < 2; i++) m->pos[i] = -1, m->parent[i] = -1, m->part[i] = 0, m->next[i] = -1;
    m->n = 2;
    m->nb = 0;
    if (rehash(m, 1024)) {
        gm_free(m);
        return NULL;
    }
    return m;
}

void gm_free(gm *m) {
    if (!m) return;
    free(m->pos), free(m->parent), free(m->next), free(m->part), free(m->bucket);
    free(m->work), free(m->seen), free(m->seen_used), free(m->emit);
    free(m);
}

/* visited set of (pos, parent) pairs for one advance (open addressing, 0 = empty) */
static void seen_clear(gm *m) {
    for (uint32_t i = 0; i < m->seen_n; i++) m->seen[m->seen_used[i]] = 0;
    m->seen_n = 0;
}

static int seen_add(gm *m, int32_t pos, int32_t parent) {
    uint64_t key = ((uint64_t)(uint32_t)pos << 32 | (uint32_t)parent) + 1;
    if (2 * (m->seen_n + 1) > m->seen_cap) {
        uint32_t nc = m->seen_cap * 2;
        uint64_t *ns = calloc(nc, sizeof *ns);
        uint32_t *nu = malloc(nc / 2 * sizeof *nu);
        if (!ns || !nu) {
            free(ns), free(nu);
            return -1;
        }
        for (uint32_t i = 0; i < m->seen_n; i++) {
            uint64_t k = m->seen[m->seen_used[i]];
            uint32_t h = (uint32_t)(k * 0x9E3779B97F4A7C15ull >> 40) & (nc - 1);
            while (ns[h]) h = (h + 1) & (nc - 1);
            ns[h] = k;
            nu[i] = h;
        }
        free(m->seen), free(m->seen_used);
        m->seen = ns;
        m->seen_used = nu;
        m->seen_cap = nc;
    }
    uint32_t h = (uint32_t)(key * 0x9E3779B97F4A7C15ull >> 40) & (m->seen_cap - 1);
    while (m->seen[h]) {
        if (m->seen[h] == key) return 0;
        h = (h + 1) & (m->seen_cap - 1);
    }
    m->seen[h] = key;
    m->seen_used[m->seen_n++] = h;
    return 1;
}

static int emit_node(gm *m, int32_t id) {
    if (id < 0) return -1;
    if (m->n_emit >= GRAMMAR_MAX_STACKS) {
        m->failed = 1;
        return -1;
    }
    m->emit[m->n_emit++] = id;
    return 0;
}

static int work_push(gm *m, int *sp, int32_t pos, int32_t parent) {
    if (*sp + 2 > m->work_cap) {
        int c = m->work_cap * 2;
        int32_t *w = realloc(m->work, (size_t)c * sizeof *w);
        if (!w) return -1;
        m->work = w;
        m->work_cap = c;
    }
    m->work[(*sp)++] = pos;
    m->work[(*sp)++] = parent;
    return 0;
}

/* Expand (pos, parent) until every stack has a character class on top (or is done /
 * escaped); the stacks go to m->emit. */
static int closure(gm *m, int32_t pos0, int32_t parent0) {
    const grammar *g = m->g;
    int sp = 0;
    if (work_push(m, &sp, pos0, parent0)) return -1;
    while (sp) {
        int32_t parent = m->work[--sp], pos = m->work[--sp];
        uint8_t k = g->kind[pos];
        if (k == EL_END) {
            if (parent == GM_DONE) m->done = 1;
            else if (parent == GM_ESC) m->esc = 1;
            else if (work_push(m, &sp, m->pos[parent], m->parent[parent])) return -1;
            continue;
        }
        int s = seen_add(m, pos, parent);
        if (s < 0) return -1;
        if (!s) continue;
        if (k == EL_CS) {
            if (emit_node(m, node_get(m, pos, parent, 0))) return -1;
            continue;
        }
        int r = g->arg[pos];
        int32_t ret = g->kind[pos + 1] == EL_END ? parent : node_get(m, pos + 1, parent, 0); /* tail call */
        if (ret < 0) return -1;
        for (int a = g->rule_nalt[r] - 1; a >= 0; a--)
            if (work_push(m, &sp, g->alt_start[g->rule_alt[r] + a], ret)) return -1;
    }
    return 0;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* m->emit plus the done / escaped flags into out, sorted. */
static int finish(gm *m, int32_t *out) {
    int n = 0;
    if (m->done) out[n++] = GM_DONE;
    if (m->esc) out[n++] = GM_ESC;
    if (n + m->n_emit > GRAMMAR_MAX_STACKS) {
        m->failed = 1;
        return -1;
    }
    if (m->n_emit > 32) qsort(m->emit, (size_t)m->n_emit, sizeof *m->emit, cmp_i32);
    else
        for (int i = 1; i < m->n_emit; i++) { /* sets are small: insertion sort */
            int32_t x = m->emit[i];
            int j = i;
            while (j > 0 && m->emit[j - 1] > x) m->emit[j] = m->emit[j - 1], j--;
            m->emit[j] = x;
        }
    for (int i = 0; i < m->n_emit; i++)
        if (!i || m->emit[i] != m->emit[i - 1]) out[n++] = m->emit[i];
    return n;
}

static void begin(gm *m) {
    m->n_emit = 0;
    m->done = m->esc = 0;
    if (m->seen_n) seen_clear(m);
}

int gm_start(gm *m, int32_t *out) {
    if (m->failed) return -1;
    const grammar *g = m->g;
    begin(m);
    for (int a = 0; a < g->rule_nalt[g->root]; a++)
        if (closure(m, g->alt_start[g->rule_alt[g->root] + a], GM_DONE)) return -1;
    return finish(m, out);
}

static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};

int gm_advance(gm *m, const int32_t *in, int n, uint8_t b, int32_t *out) {
    if (m->failed) return -1;
    const grammar *g = m->g;
    begin(m);
    for (int i = 0; i < n; i++) {
        int32_t id = in[i];
        if (id < 2) continue;
        int32_t pos = m->pos[id], parent = m->parent[id];
        uint32_t part = m->part[id];
        int cs = g->arg[pos];
        if (!part) {
            if (b < 0x80) {
                if (cs_has(g, cs, b) && closure(m, pos + 1, parent)) return -1;
                continue;
            }
            int len = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
            if (!len) continue;
            uint32_t val = b & (0x7Fu >> len), need = (uint32_t)len - 1;
            uint32_t lo = val << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
            if (lo < min_cp[len]) lo = min_cp[len];
            if (hi > CP_MAX) hi = CP_MAX;
            if (lo <= hi && cs_meets(g, cs, lo, hi) && emit_node(m, node_get(m, pos, parent, PART(need, len, val))))
                return -1;
            continue;
        }
        if ((b & 0xC0) != 0x80) continue;
        int need = PART_NEED(part) - 1, len = PART_LEN(part);
        uint32_t val = PART_VAL(part) << 6 | (b & 0x3Fu);
        if (!need) {
            if (val < min_cp[len] || val > CP_MAX || (val >= 0xD800 && val <= 0xDFFF)) continue;
            if (cs_has(g, cs, val) && closure(m, pos + 1, parent)) return -1;
            continue;
        }
        uint32_t lo = val << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
        if (lo < min_cp[len]) lo = min_cp[len];
        if (hi > CP_MAX) hi = CP_MAX;
        if (lo <= hi && cs_meets(g, cs, lo, hi) && emit_node(m, node_get(m, pos, parent, PART(need, len, val))))
            return -1;
    }
    return finish(m, out);
}
