/* jinja_parse.c - template text to a syntax tree, as jinja2's lexer and parser see it
 * under transformers' settings: newlines normalized to \n and one trailing newline
 * dropped, trim_blocks (one newline after a block or comment tag is removed),
 * lstrip_blocks (spaces and tabs before a block or comment tag on its line are
 * removed), `-` / `+` modifiers, {% raw %}. Statements outside the subset (include,
 * extends, import, ...) are refused with their name and line. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_internal.h"

enum {
    TK_EOF,
    TK_TEXT,
    TK_VAR_BEGIN,
    TK_VAR_END,
    TK_BLOCK_BEGIN,
    TK_BLOCK_END,
    TK_NAME,
    TK_STRING,
    TK_INT,
    TK_FLOAT,
    TK_OP
};

typedef struct {
    int type, line;
    const char *p; /* text / name / string value / operator */
    size_t n;
    int64_t i;
    double f;
} token;

typedef struct {
    jarena *ar;
    const char *src;
    size_t len;
    token *tk;
    size_t ntk, cap;
    size_t pos; /* parser position */
    int depth;
    char *err;
    int failed;
    const char *line_pos; /* line_at's memo: line_no is the line of line_pos */
    int line_no;
} parser;

static int pfail(parser *ps, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pfail(parser *ps, int line, const char *fmt, ...) {
    if (ps->failed) return -1;
    ps->failed = 1;
    char msg[TOK_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tok_errf(ps->err, "chat template line %d: %s", line, msg);
    return -1;
}

/* ---- lexer ------------------------------------------------------------------ */

static int push(parser *ps, token t) {
    if (ps->ntk == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 256;
        token *n = realloc(ps->tk, cap * sizeof *n);
        if (!n) return pfail(ps, t.line, "out of memory");
        ps->tk = n;
        ps->cap = cap;
    }
    ps->tk[ps->ntk++] = t;
    return 0;
}

/* Line of position p; positions are asked for in increasing order, so count on from the last one. */
static int line_at(parser *ps, const char *p) {
    if (p < ps->line_pos) {
        ps->line_pos = ps->src;
        ps->line_no = 1;
    }
    for (const char *q = ps->line_pos; q < p; q++) ps->line_no += *q == '\n';
    ps->line_pos = p;
    return ps->line_no;
}

/* Length of the (valid UTF-8) whitespace code point at s, 0 if none (Python isspace). */
static size_t space_at(const char *s, const char *end) {
    if (s >= end) return 0;
    uint32_t cp;
    size_t L = tok_utf8_len((const unsigned char *)s, (size_t)(end - s));
    if (!L) return 0;
    tok_utf8_get(s, &cp);
    return ju_is_space(cp) ? L : 0;
}

static const char *lstrip_ws(const char *p, const char *end) {
    size_t L;
    while ((L = space_at(p, end))) p += L;
    return p;
}

static const char *rstrip_ws(const char *start, const char *end) {
    while (end > start) {
        const char *q = end - 1;
        while (q > start && ((unsigned char)*q & 0xC0) == 0x80) q--;
        if (space_at(q, end) != (size_t)(end - q)) break;
        end = q;
    }
    return end;
}

static int is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Python's unicode-escape decoding of a Jinja string literal body. */
static int unescape(parser *ps, const char *s, size_t n, int line, token *t) {
    char *o = jarena_alloc(ps->ar, n + 1);
    if (!o) return pfail(ps, line, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 == n) {
            o[k++] = s[i];
            continue;
        }
        char c = s[++i];
        uint32_t cp = 0;
        int digits = 0;
        switch (c) {
        case 'n': o[k++] = '\n'; continue;
        case 't': o[k++] = '\t'; continue;
        case 'r': o[k++] = '\r'; continue;
        case 'a': o[k++] = '\a'; continue;
        case 'b': o[k++] = '\b'; continue;
        case 'f': o[k++] = '\f'; continue;
        case 'v': o[k++] = '\v'; continue;
        case '\\':
        case '\'':
        case '"': o[k++] = c; continue;
        case '\n': continue;
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        case 'N': return pfail(ps, line, "\\N{...} escapes in string literals are not supported");
        default:
            if (c >= '0' && c <= '7') {
                int m = 0;
                while (m < 3 && i < n && s[i] >= '0' && s[i] <= '7') cp = cp * 8 + (uint32_t)(s[i++] - '0'), m++;
                i--;
                k += tok_utf8_put(cp, o + k);
                continue;
            }
            o[k++] = '\\';
            o[k++] = c;
            continue;
        }
        for (int d = 0; d < digits; d++) {
            char h = i + 1 < n ? s[++i] : 0;
            int v = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
            if (v < 0) return pfail(ps, line, "bad \\%c escape in a string literal", c);
            cp = cp * 16 + (uint32_t)v;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return pfail(ps, line, "string literal escape \\%c names no character we can write", c);
        k += tok_utf8_put(cp, o + k);
    }
    o[k] = 0;
    t->p = o;
    t->n = k;
    return 0;
}

/* Tokens of one {{ }} or {% %} tag, from p (after the opening delimiter and modifier).
 * Returns the position after the closing delimiter; *strip = '-', '+' or 0 on the close. */
static const char *lex_tag(parser *ps, const char *p, const char *end, int block, int *strip) {
    const char *close = block ? "%}" : "}}";
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v')) p++;
        int line = line_at(ps, p);
        if (p >= end) {
            pfail(ps, line, "a %s tag is not closed", block ? "{%" : "{{");
            return NULL;
        }
        if ((*p == '-' || (*p == '+' && block)) && end - p >= 3 && !memcmp(p + 1, close, 2)) {
            *strip = *p;
            return p + 3;
        }
        if (end - p >= 2 && !memcmp(p, close, 2)) {
            *strip = 0;
            return p + 2;
        }
        token t = {.type = TK_OP, .line = line, .p = p, .n = 1};
        if (is_name_start(*p)) {
            const char *q = p;
            while (q < end && (is_name_start(*q) || is_digit(*q))) q++;
            t.type = TK_NAME;
            t.n = (size_t)(q - p);
            t.p = jarena_strdup(ps->ar, p, t.n);
            if (!t.p) {
                pfail(ps, line, "out of memory");
                return NULL;
            }
            p = q;
        } else if (is_digit(*p)) {
            char buf[64];
            size_t k = 0;
            int is_float = 0;
            const char *q = p;
            while (q < end && (is_digit(*q) || *q == '_' || (*q == '.' && !is_float && q + 1 < end && is_digit(q[1])) ||
                               ((*q == 'e' || *q == 'E') && q + 1 < end &&
                                (is_digit(q[1]) || ((q[1] == '-' || q[1] == '+') && q + 2 < end && is_digit(q[2])))))) {
                if (*q == '.' || *q == 'e' || *q == 'E') {
                    is_float = 1;
                    if (*q != '.' && k < sizeof buf - 1) buf[k++] = *q++;
                }
                if (*q != '_' && k < sizeof buf - 1) buf[k++] = *q;
                q++;
            }
            buf[k] = 0;
            if (is_float) {
                t.type = TK_FLOAT;
                t.f = strtod(buf, NULL);
            } else {
                t.type = TK_INT;
                if (k > 18) {
                    pfail(ps, line, "integer literal %s is too large", buf);
                    return NULL;
                }
                t.i = strtoll(buf, NULL, 10);
            }
            p = q;
        } else if (*p == '\'' || *p == '"') {
            char qc = *p;
            const char *q = p + 1;
            while (q < end && *q != qc) q += *q == '\\' && q + 1 < end ? 2 : 1;
            if (q >= end) {
                pfail(ps, line, "a string literal is not closed");
                return NULL;
            }
            t.type = TK_STRING;
            if (unescape(ps, p + 1, (size_t)(q - p - 1), line, &t)) return NULL;
            p = q + 1;
        } else {
            static const char *two[] = {"//", "**", "==", "!=", ">=", "<=", NULL};
            for (int k = 0; two[k]; k++)
                if (end - p >= 2 && !memcmp(p, two[k], 2)) t.n = 2;
            if (!strchr("+-/*%~[](){}=.:|,<>!", *p) || (*p == '!' && t.n != 2)) {
                pfail(ps, line, "unexpected character '%c' inside a tag", *p);
                return NULL;
            }
            p += t.n;
        }
        if (push(ps, t)) return NULL;
    }
}

/* {% raw %} ... {% endraw %}: p is after the raw tag; returns after the endraw tag. */
static const char *lex_raw(parser *ps, const char *p, const char *end, const char **text_end, int *strip_after) {
    for (const char *q = p; q + 1 < end; q++) {
        if (q[0] != '{' || q[1] != '%') continue;
        const char *r = q + 2;
        int minus = r < end && *r == '-';
        if (r < end && (*r == '-' || *r == '+')) r++;
        while (r < end && (*r == ' ' || *r == '\t' || *r == '\n')) r++;
        if (end - r < 6 || memcmp(r, "endraw", 6)) continue;
        r += 6;
        while (r < end && (*r == ' ' || *r == '\t' || *r == '\n')) r++;
        *strip_after = 0;
        if (r < end && (*r == '-' || *r == '+')) *strip_after = *r++;
        if (end - r < 2 || memcmp(r, "%}", 2)) continue;
        *text_end = minus ? rstrip_ws(p, q) : q;
        return r + 2;
    }
    pfail(ps, line_at(ps, p), "{%% raw %%} is not closed by {%% endraw %%}");
    return NULL;
}

static int lex(parser *ps) {
    const char *p = ps->src, *end = ps->src + ps->len;
    int strip_next = 0; /* '-': strip all leading whitespace of the next text; 't': one newline */
    int line_starting = 1;
    while (p <= end) {
        /* the next tag */
        const char *q = p;
        int kind = 0;
        for (; q + 1 < end; q++)
            if (q[0] == '{' && (q[1] == '{' || q[1] == '%' || q[1] == '#')) {
                kind = q[1];
                break;
            }
        if (!kind) q = end;
        const char *ts = p, *te = q;
        if (strip_next == '-') ts = lstrip_ws(ts, te);
        else if (strip_next == 't' && ts < te && *ts == '\n') ts++;
        /* jinja2's line_starting: the previous tag's match ended with a newline */
        if (strip_next) line_starting = ts > p && ts[-1] == '\n';
        char mod = kind && q + 2 < end ? q[2] : 0;
        if (mod == '-') te = rstrip_ws(ts, te);
        else if (kind && kind != '{' && mod != '+') { /* lstrip_blocks */ const char *nl = te;
            while (nl > ts && nl[-1] != '\n') nl--;
            if ((nl > ts || line_starting) && lstrip_ws(nl, te) == te) te = nl;
        }
        if (te > ts && push(ps, (token){.type = TK_TEXT, .line = line_at(ps, ts), .p = ts, .n = (size_t)(te - ts)}))
            return -1;
        if (!kind) break;
        const char *body = q + 2 + (mod == '-' || mod == '+');
        int line = line_at(ps, q), strip = 0;
        if (kind == '#') {
            const char *c = body;
            while (c + 1 < end && !(c[0] == '#' && c[1] == '}')) c++;
            if (c + 1 >= end) return pfail(ps, line, "a {# comment is not closed");
            strip = c > body && (c[-1] == '-' || c[-1] == '+') ? c[-1] : 0;
            p = c + 2;
        } else {
            /* {% raw %} */
            const char *r = body;
            while (r < end && (*r == ' ' || *r == '\t' || *r == '\n')) r++;
            if (kind == '%' && end - r >= 3 && !memcmp(r, "raw", 3) &&
                !(r + 3 < end && (is_name_start(r[3]) || is_digit(r[3])))) {
                const char *r2 = r + 3;
                while (r2 < end && (*r2 == ' ' || *r2 == '\t' || *r2 == '\n')) r2++;
                int s1 = 0;
                if (r2 < end && (*r2 == '-' || *r2 == '+')) s1 = *r2++;
                if (end - r2 < 2 || memcmp(r2, "%}", 2)) return pfail(ps, line, "{%% raw %%} takes nothing");
                const char *rs = r2 + 2, *re;
                if (s1 == '-') rs = lstrip_ws(rs, end);
                else if (s1 != '+' && rs < end && *rs == '\n') rs++;
                if (!(p = lex_raw(ps, rs, end, &re, &strip))) return -1;
                if (re > rs &&
                    push(ps, (token){.type = TK_TEXT, .line = line_at(ps, rs), .p = rs, .n = (size_t)(re - rs)}))
                    return -1;
                strip_next = strip == '-' ? '-' : strip == '+' ? 0 : 't';
                line_starting = 0;
                continue;
            }
            if (push(ps, (token){.type = kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN, .line = line})) return -1;
            if (!(p = lex_tag(ps, body, end, kind == '%', &strip))) return -1;
            if (push(ps, (token){.type = kind == '{' ? TK_VAR_END : TK_BLOCK_END, .line = line_at(ps, p)})) return -1;
        }
        if (strip == '-') strip_next = '-';
        else if (kind != '{' && strip != '+') strip_next = 't';
        else strip_next = 0;
        line_starting = 0;
    }
    return push(ps, (token){.type = TK_EOF, .line = line_at(ps, end)});
}

/* ---- parser --------------------------------------------------------------------- */

static token *cur(parser *ps) { return &ps->tk[ps->pos]; }
static token *next_tok(parser *ps) { return ps->pos + 1 < ps->ntk ? &ps->tk[ps->pos + 1] : &ps->tk[ps->ntk - 1]; }
static void adv(parser *ps) {
    if (ps->pos + 1 < ps->ntk) ps->pos++;
}
static int is_op(const token *t, const char *op) {
    return t->type == TK_OP && t->n == strlen(op) && !memcmp(t->p, op, t->n);
}
static int is_name(const token *t, const char *n) { return t->type == TK_NAME && !strcmp(t->p, n); }

static const char *tok_desc(const token *t, char *buf, size_t n) {
    switch (t->type) {
    case TK_EOF: return "the end of the template";
    case TK_TEXT: return "text";
    case TK_VAR_END: return "'}}'";
    case TK_BLOCK_END: return "'%}'";
    case TK_VAR_BEGIN: return "'{{'";
    case TK_BLOCK_BEGIN: return "'{%'";
    case TK_STRING: return "a string";
    case TK_INT:
    case TK_FLOAT: return "a number";
    default: snprintf(buf, n, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->p); return buf;
    }
}

static int expect_op(parser *ps, const char *op) {
    if (is_op(cur(ps), op)) {
        adv(ps);
        return 0;
    }
    char b[64];
    return pfail(ps, cur(ps)->line, "expected '%s', found %s", op, tok_desc(cur(ps), b, sizeof b));
}

static int expect_block_end(parser *ps, const char *what) {
    if (cur(ps)->type == TK_BLOCK_END) {
        adv(ps);
        return 0;
    }
    char b[64];
    return pfail(ps, cur(ps)->line, "expected '%%}' after %s, found %s", what, tok_desc(cur(ps), b, sizeof b));
}

static jnode_ *node(parser *ps, int kind, int line) {
    jnode_ *n = jarena_alloc(ps->ar, sizeof *n);
    if (!n) {
        pfail(ps, line, "out of memory");
        return NULL;
    }
    n->kind = kind;
    n->line = line;
    return n;
}

/* growable child arrays */
typedef struct {
    jnode_ **v;
    const char **kw;
    int n, cap;
} kids;

static int kids_push(parser *ps, kids *k, jnode_ *n, const char *kw) {
    if (!n) return -1;
    if (k->n == k->cap) {
        int cap = k->cap ? k->cap * 2 : 4;
        jnode_ **v = jarena_alloc(ps->ar, (size_t)cap * sizeof *v);
        const char **w = jarena_alloc(ps->ar, (size_t)cap * sizeof *w);
        if (!v || !w) return pfail(ps, n->line, "out of memory");
        if (k->n) {
            memcpy(v, k->v, (size_t)k->n * sizeof *v);
            memcpy(w, k->kw, (size_t)k->n * sizeof *w);
        }
        k->v = v;
        k->kw = w;
        k->cap = cap;
    }
    k->v[k->n] = n;
    k->kw[k->n++] = kw;
    return 0;
}

static void kids_to(jnode_ *n, kids *k) {
    n->kids = k->v;
    n->kw = k->kw;
    n->nkids = k->n;
}

static jnode_ *parse_expr(parser *ps);
static jnode_ *parse_or(parser *ps);
static jnode_ *parse_unary(parser *ps, int with_filter);
static jnode_ *parse_primary(parser *ps);
static jnode_ *parse_postfix(parser *ps, jnode_ *n);

static int enter(parser *ps) {
    if (++ps->depth > JJ_MAX_DEPTH) return pfail(ps, cur(ps)->line, "nesting deeper than %d", JJ_MAX_DEPTH);
    return 0;
}

/* (args) of a call, filter or test: positional and name=value arguments */
static int parse_args(parser *ps, jnode_ *call) {
    kids k = {0};
    if (expect_op(ps, "(")) return -1;
    while (!is_op(cur(ps), ")")) {
        if (k.n && expect_op(ps, ",")) return -1;
        if (is_op(cur(ps), ")")) break;
        if (is_op(cur(ps), "*") || is_op(cur(ps), "**"))
            return pfail(ps, cur(ps)->line, "*args / **kwargs in a call are not supported");
        const char *kw = NULL;
        if (cur(ps)->type == TK_NAME && is_op(next_tok(ps), "=")) {
            kw = cur(ps)->p;
            adv(ps);
            adv(ps);
        } else {
            for (int i = 0; i < k.n; i++)
                if (k.kw[i]) return pfail(ps, cur(ps)->line, "a positional argument follows a keyword argument");
        }
        if (kids_push(ps, &k, parse_expr(ps), kw)) return -1;
    }
    adv(ps);
    kids_to(call, &k);
    return 0;
}

static jnode_ *parse_filter(parser *ps, jnode_ *n, int is_test) {
    int line = cur(ps)->line;
    adv(ps); /* '|' or 'is' */
    int negate = 0;
    if (is_test && is_name(cur(ps), "not")) {
        negate = 1;
        adv(ps);
    }
    if (cur(ps)->type != TK_NAME) {
        char b[64];
        pfail(ps, line, "expected a %s name, found %s", is_test ? "test" : "filter", tok_desc(cur(ps), b, sizeof b));
        return NULL;
    }
    jnode_ *f = node(ps, is_test ? E_TEST : E_FILTER, line);
    if (!f) return NULL;
    f->name = cur(ps)->p;
    f->a = n;
    f->op = negate;
    adv(ps);
    while (!is_test && is_op(cur(ps), ".")) { /* dotted filter names: not in the subset */
        pfail(ps, line, "dotted filter name '%s.' is not supported", f->name);
        return NULL;
    }
    if (is_op(cur(ps), "(")) {
        if (parse_args(ps, f)) return NULL;
    } else if (is_test) {
        token *t = cur(ps);
        int arg = (t->type == TK_NAME && !is_name(t, "else") && !is_name(t, "or") && !is_name(t, "and") &&
                   !is_name(t, "if") && !is_name(t, "in") && !is_name(t, "is") && !is_name(t, "not")) ||
                  t->type == TK_STRING || t->type == TK_INT || t->type == TK_FLOAT || is_op(t, "[") || is_op(t, "{");
        if (arg) {
            kids k = {0};
            jnode_ *a = parse_primary(ps);
            if (a) a = parse_postfix(ps, a);
            if (kids_push(ps, &k, a, NULL)) return NULL;
            kids_to(f, &k);
        }
    }
    return f;
}

static jnode_ *parse_filters(parser *ps, jnode_ *n) {
    while (n) {
        if (is_op(cur(ps), "|")) n = parse_filter(ps, n, 0);
        else if (is_name(cur(ps), "is")) n = parse_filter(ps, n, 1);
        else if (is_op(cur(ps), "(")) {
            jnode_ *c = node(ps, E_CALL, cur(ps)->line);
            if (!c || parse_args(ps, c)) return NULL;
            c->a = n;
            n = c;
        } else break;
    }
    return n;
}

static jnode_ *parse_subscript(parser *ps) {
    int line = cur(ps)->line;
    jnode_ *parts[3] = {0};
    int colons = 0;
    if (!is_op(cur(ps), ":")) {
        parts[0] = parse_expr(ps);
        if (!parts[0]) return NULL;
        if (!is_op(cur(ps), ":")) return parts[0];
    }
    while (is_op(cur(ps), ":") && colons < 2) {
        adv(ps);
        colons++;
        if (!is_op(cur(ps), ":") && !is_op(cur(ps), "]") && !(parts[colons] = parse_expr(ps))) return NULL;
    }
    jnode_ *s = node(ps, E_SLICE, line);
    if (s) {
        s->a = parts[0];
        s->b = parts[1];
        s->c = parts[2];
    }
    return s;
}

static jnode_ *parse_postfix(parser *ps, jnode_ *n) {
    while (n) {
        int line = cur(ps)->line;
        if (is_op(cur(ps), ".")) {
            adv(ps);
            if (cur(ps)->type == TK_NAME) {
                jnode_ *a = node(ps, E_ATTR, line);
                if (!a) return NULL;
                a->a = n;
                a->name = cur(ps)->p;
                adv(ps);
                n = a;
            } else if (cur(ps)->type == TK_INT) {
                jnode_ *a = node(ps, E_ITEM, line), *k = node(ps, E_CONST, line);
                if (!a || !k) return NULL;
                k->cval = jv_int(cur(ps)->i);
                a->a = n;
                a->b = k;
                adv(ps);
                n = a;
            } else {
                char b[64];
                pfail(ps, line, "expected an attribute name after '.', found %s", tok_desc(cur(ps), b, sizeof b));
                return NULL;
            }
        } else if (is_op(cur(ps), "[")) {
            adv(ps);
            jnode_ *a = node(ps, E_ITEM, line);
            if (!a) return NULL;
            a->a = n;
            if (!(a->b = parse_subscript(ps)) || expect_op(ps, "]")) return NULL;
            n = a;
        } else if (is_op(cur(ps), "(")) {
            jnode_ *c = node(ps, E_CALL, line);
            if (!c || parse_args(ps, c)) return NULL;
            c->a = n;
            n = c;
        } else break;
    }
    return n;
}

static jnode_ *parse_primary(parser *ps) {
    token *t = cur(ps);
    int line = t->line;
    if (enter(ps)) return NULL;
    jnode_ *n = NULL;
    if (t->type == TK_NAME) {
        const char *s = t->p;
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "false") || !strcmp(s, "False")) {
            if ((n = node(ps, E_CONST, line))) n->cval = jv_bool(s[0] == 't' || s[0] == 'T');
        } else if (!strcmp(s, "none") || !strcmp(s, "None")) {
            if ((n = node(ps, E_CONST, line))) n->cval = jv_none();
        } else if ((n = node(ps, E_NAME, line))) n->name = s;
        adv(ps);
    } else if (t->type == TK_STRING) {
        /* adjacent literals concatenate */
        size_t total = 0, k;
        for (k = ps->pos; ps->tk[k].type == TK_STRING; k++) total += ps->tk[k].n;
        char *s = jarena_alloc(ps->ar, total + 1);
        if (!s) {
            pfail(ps, line, "out of memory");
            return NULL;
        }
        total = 0;
        for (; cur(ps)->type == TK_STRING; adv(ps)) {
            memcpy(s + total, cur(ps)->p, cur(ps)->n);
            total += cur(ps)->n;
        }
        if ((n = node(ps, E_CONST, line))) n->cval = jv_str(s, total);
    } else if (t->type == TK_INT || t->type == TK_FLOAT) {
        if ((n = node(ps, E_CONST, line))) n->cval = t->type == TK_INT ? jv_int(t->i) : jv_float(t->f);
        adv(ps);
    } else if (is_op(t, "(") || is_op(t, "[") || is_op(t, "{")) {
        char close = is_op(t, "(") ? ')' : is_op(t, "[") ? ']' : '}';
        char cs[2] = {close, 0};
        int dict = close == '}', tuple = close == ')', commas = 0;
        kids k = {0};
        adv(ps);
        while (!is_op(cur(ps), cs)) {
            if (k.n && expect_op(ps, ",")) goto out;
            if (k.n) commas++;
            if (is_op(cur(ps), cs)) break;
            if (kids_push(ps, &k, parse_expr(ps), NULL)) goto out;
            if (dict && (expect_op(ps, ":") || kids_push(ps, &k, parse_expr(ps), NULL))) goto out;
        }
        adv(ps);
        if (tuple && k.n == 1 && !commas) {
            n = k.v[0];
        } else if ((n = node(ps, dict ? E_DICT : tuple ? E_TUPLE : E_LIST, line))) kids_to(n, &k);
    } else {
        char b[64];
        pfail(ps, line, "unexpected %s in an expression", tok_desc(t, b, sizeof b));
    }
out:
    ps->depth--;
    return ps->failed ? NULL : n;
}

static jnode_ *parse_unary(parser *ps, int with_filter) {
    int line = cur(ps)->line;
    jnode_ *n;
    if (enter(ps)) return NULL;
    if (is_op(cur(ps), "-") || is_op(cur(ps), "+")) {
        int neg = is_op(cur(ps), "-");
        adv(ps);
        n = node(ps, neg ? E_NEG : E_POS, line);
        if (n && !(n->a = parse_unary(ps, 0))) n = NULL;
    } else n = parse_primary(ps);
    n = parse_postfix(ps, n);
    if (with_filter) n = parse_filters(ps, n);
    ps->depth--;
    return n;
}

static jnode_ *binary(parser *ps, int kind, int op, jnode_ *l, jnode_ *r, int line) {
    if (!l || !r) return NULL;
    jnode_ *n = node(ps, kind, line);
    if (n) {
        n->op = op;
        n->a = l;
        n->b = r;
    }
    return n;
}

static jnode_ *parse_pow(parser *ps) {
    jnode_ *l = parse_unary(ps, 1);
    while (l && is_op(cur(ps), "**")) {
        int line = cur(ps)->line;
        adv(ps);
        l = binary(ps, E_BIN, OP_POW, l, parse_unary(ps, 1), line);
    }
    return l;
}

static jnode_ *parse_math2(parser *ps) {
    jnode_ *l = parse_pow(ps);
    for (;;) {
        int op = is_op(cur(ps), "*")    ? OP_MUL
                 : is_op(cur(ps), "/")  ? OP_DIV
                 : is_op(cur(ps), "//") ? OP_FDIV
                 : is_op(cur(ps), "%")  ? OP_MOD
                                        : -1;
        if (!l || op < 0) return l;
        int line = cur(ps)->line;
        adv(ps);
        l = binary(ps, E_BIN, op, l, parse_pow(ps), line);
    }
}

static jnode_ *parse_concat(parser *ps) {
    jnode_ *l = parse_math2(ps);
    while (l && is_op(cur(ps), "~")) {
        int line = cur(ps)->line;
        adv(ps);
        l = binary(ps, E_CONCAT, 0, l, parse_math2(ps), line);
    }
    return l;
}

static jnode_ *parse_math1(parser *ps) {
    jnode_ *l = parse_concat(ps);
    for (;;) {
        int op = is_op(cur(ps), "+") ? OP_ADD : is_op(cur(ps), "-") ? OP_SUB : -1;
        if (!l || op < 0) return l;
        int line = cur(ps)->line;
        adv(ps);
        l = binary(ps, E_BIN, op, l, parse_concat(ps), line);
    }
}

/* Chained comparisons (a < b < c) become (a < b) and (b < c) with b evaluated twice:
 * only pure expressions appear in templates, so the difference cannot show. */
static jnode_ *parse_compare(parser *ps) {
    jnode_ *l = parse_math1(ps), *res = NULL;
    for (;;) {
        token *t = cur(ps);
        int op = is_op(t, "==")                                     ? OP_EQ
                 : is_op(t, "!=")                                   ? OP_NE
                 : is_op(t, "<")                                    ? OP_LT
                 : is_op(t, "<=")                                   ? OP_LE
                 : is_op(t, ">")                                    ? OP_GT
                 : is_op(t, ">=")                                   ? OP_GE
                 : is_name(t, "in")                                 ? OP_IN
                 : is_name(t, "not") && is_name(next_tok(ps), "in") ? OP_NOTIN
                                                                    : -1;
        if (!l || op < 0) break;
        int line = t->line;
        adv(ps);
        if (op == OP_NOTIN) adv(ps);
        jnode_ *r = parse_math1(ps);
        jnode_ *cmp = binary(ps, E_CMP, op, l, r, line);
        res = res ? binary(ps, E_AND, 0, res, cmp, line) : cmp;
        if (!res) return NULL;
        l = r;
    }
    return res ? res : l;
}

static jnode_ *parse_not(parser *ps) {
    if (is_name(cur(ps), "not")) {
        int line = cur(ps)->line;
        adv(ps);
        if (enter(ps)) return NULL;
        jnode_ *n = node(ps, E_NOT, line);
        if (n && !(n->a = parse_not(ps))) n = NULL;
        ps->depth--;
        return n;
    }
    return parse_compare(ps);
}

static jnode_ *parse_and(parser *ps) {
    jnode_ *l = parse_not(ps);
    while (l && is_name(cur(ps), "and")) {
        int line = cur(ps)->line;
        adv(ps);
        l = binary(ps, E_AND, 0, l, parse_not(ps), line);
    }
    return l;
}

static jnode_ *parse_or(parser *ps) {
    jnode_ *l = parse_and(ps);
    while (l && is_name(cur(ps), "or")) {
        int line = cur(ps)->line;
        adv(ps);
        l = binary(ps, E_OR, 0, l, parse_and(ps), line);
    }
    return l;
}

/* a if cond [else b] */
static jnode_ *parse_expr(parser *ps) {
    if (enter(ps)) return NULL;
    jnode_ *n = parse_or(ps);
    while (n && is_name(cur(ps), "if")) {
        int line = cur(ps)->line;
        adv(ps);
        jnode_ *c = node(ps, E_COND, line);
        if (!c || !(c->a = parse_or(ps))) return NULL;
        c->b = n;
        if (is_name(cur(ps), "else")) {
            adv(ps);
            if (!(c->c = parse_expr(ps))) return NULL;
        }
        n = c;
    }
    ps->depth--;
    return n;
}

/* expression or bare tuple (a, b) as in set / for targets and values */
static jnode_ *parse_tuple(parser *ps, int names_only) {
    int line = cur(ps)->line;
    kids k = {0};
    for (;;) {
        jnode_ *e;
        if (names_only) {
            if (cur(ps)->type != TK_NAME) {
                char b[64];
                pfail(ps, line, "expected a name, found %s", tok_desc(cur(ps), b, sizeof b));
                return NULL;
            }
            if (!(e = node(ps, E_NAME, line))) return NULL;
            e->name = cur(ps)->p;
            adv(ps);
        } else e = parse_expr(ps);
        if (kids_push(ps, &k, e, NULL)) return NULL;
        if (!is_op(cur(ps), ",")) break;
        adv(ps);
    }
    if (k.n == 1) return k.v[0];
    jnode_ *t = node(ps, E_TUPLE, line);
    if (t) kids_to(t, &k);
    return t;
}

/* ---- statements ---------------------------------------------------------------------- */

static jnode_ *parse_body(parser *ps, const char *const *ends, const char **found);

static jnode_ *parse_if(parser *ps, int line) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    jnode_ *n = node(ps, S_IF, line);
    const char *found;
    if (!n || !(n->a = parse_expr(ps)) || expect_block_end(ps, "if") || !(n->b = parse_body(ps, ends, &found)))
        return NULL;
    if (!strcmp(found, "elif")) {
        if (!(n->c = parse_if(ps, cur(ps)->line))) return NULL;
        return n; /* the nested if consumed endif */
    }
    if (!strcmp(found, "else")) {
        static const char *const ends2[] = {"endif", NULL};
        if (expect_block_end(ps, "else") || !(n->c = parse_body(ps, ends2, &found))) return NULL;
    }
    return expect_block_end(ps, "endif") ? NULL : n;
}

static jnode_ *parse_for(parser *ps, int line) {
    static const char *const ends[] = {"else", "endfor", NULL};
    static const char *const ends2[] = {"endfor", NULL};
    jnode_ *n = node(ps, S_FOR, line);
    const char *found;
    if (!n || !(n->a = parse_tuple(ps, 1))) return NULL;
    if (!is_name(cur(ps), "in")) {
        pfail(ps, line, "expected 'in' in a for statement");
        return NULL;
    }
    adv(ps);
    /* the iterable: no conditional expression (its 'if' filters the loop) */
    if (!(n->b = parse_or(ps))) return NULL;
    if (is_name(cur(ps), "if")) {
        adv(ps);
        if (!(n->c = parse_expr(ps))) return NULL;
    }
    if (is_name(cur(ps), "recursive")) {
        pfail(ps, line, "recursive for loops are not supported");
        return NULL;
    }
    if (expect_block_end(ps, "for") || !(n->body = parse_body(ps, ends, &found))) return NULL;
    if (!strcmp(found, "else") && (expect_block_end(ps, "else") || !(n->else_body = parse_body(ps, ends2, &found))))
        return NULL;
    return expect_block_end(ps, "endfor") ? NULL : n;
}

static jnode_ *parse_set(parser *ps, int line) {
    static const char *const ends[] = {"endset", NULL};
    jnode_ *t;
    if (cur(ps)->type == TK_NAME && is_op(next_tok(ps), ".")) { /* ns.attr */
        if (!(t = node(ps, E_ATTR, line)) || !(t->a = node(ps, E_NAME, line))) return NULL;
        t->a->name = cur(ps)->p;
        adv(ps);
        adv(ps);
        if (cur(ps)->type != TK_NAME) {
            pfail(ps, line, "expected an attribute name in set");
            return NULL;
        }
        t->name = cur(ps)->p;
        adv(ps);
    } else if (!(t = parse_tuple(ps, 1))) return NULL;
    if (is_op(cur(ps), "=")) {
        adv(ps);
        jnode_ *n = node(ps, S_SET, line);
        if (!n || !(n->b = parse_tuple(ps, 0)) || expect_block_end(ps, "set")) return NULL;
        n->a = t;
        return n;
    }
    if (t->kind != E_NAME) {
        pfail(ps, line, "a block set assigns one name");
        return NULL;
    }
    jnode_ *n = node(ps, S_SETBLOCK, line);
    const char *found;
    if (!n) return NULL;
    n->a = t;
    jnode_ *f = NULL;
    while (is_op(cur(ps), "|")) {
        jnode_ *g = parse_filter(ps, f, 0);
        if (!g) return NULL;
        f = g;
    }
    n->c = f; /* filter chain applied to the body (innermost a == NULL) */
    if (expect_block_end(ps, "set") || !(n->body = parse_body(ps, ends, &found)) || expect_block_end(ps, "endset"))
        return NULL;
    return n;
}

static jnode_ *parse_macro(parser *ps, int line, int is_call) {
    jnode_ *n = node(ps, is_call ? S_CALLBLOCK : S_MACRO, line);
    if (!n) return NULL;
    kids params = {0};
    if (!is_call) {
        if (cur(ps)->type != TK_NAME) {
            pfail(ps, line, "expected a macro name");
            return NULL;
        }
        n->name = cur(ps)->p;
        adv(ps);
    }
    if (!is_call || is_op(cur(ps), "(")) {
        if (expect_op(ps, "(")) return NULL;
        while (!is_op(cur(ps), ")")) {
            if (params.n && expect_op(ps, ",")) return NULL;
            if (cur(ps)->type != TK_NAME) {
                char b[64];
                pfail(ps, line, "expected a parameter name, found %s", tok_desc(cur(ps), b, sizeof b));
                return NULL;
            }
            const char *pname = cur(ps)->p;
            adv(ps);
            jnode_ *dflt = NULL;
            if (is_op(cur(ps), "=")) {
                adv(ps);
                if (!(dflt = parse_expr(ps))) return NULL;
            } else if (params.n && params.v[params.n - 1]) {
                pfail(ps, line, "a parameter without default follows one with a default");
                return NULL;
            }
            /* kids_push refuses NULL: keep a placeholder for "no default" */
            jnode_ *slot = dflt ? dflt : node(ps, E_CONST, line);
            if (!slot || kids_push(ps, &params, slot, pname)) return NULL;
            if (!dflt) params.v[params.n - 1] = NULL;
        }
        adv(ps);
    }
    kids_to(n, &params);
    if (is_call) {
        if (!(n->a = parse_expr(ps))) return NULL;
        if (n->a->kind != E_CALL) {
            pfail(ps, line, "a call block needs a macro call");
            return NULL;
        }
    }
    static const char *const mends[] = {"endmacro", NULL};
    static const char *const cends[] = {"endcall", NULL};
    const char *found;
    if (expect_block_end(ps, is_call ? "call" : "macro") ||
        !(n->body = parse_body(ps, is_call ? cends : mends, &found)) ||
        expect_block_end(ps, is_call ? "endcall" : "endmacro"))
        return NULL;
    return n;
}

static jnode_ *parse_statement(parser *ps) {
    int line = cur(ps)->line;
    adv(ps); /* {% */
    token *t = cur(ps);
    if (t->type != TK_NAME) {
        char b[64];
        pfail(ps, line, "expected a statement name after '{%%', found %s", tok_desc(t, b, sizeof b));
        return NULL;
    }
    const char *s = t->p;
    adv(ps);
    if (!strcmp(s, "if")) return parse_if(ps, line);
    if (!strcmp(s, "for")) return parse_for(ps, line);
    if (!strcmp(s, "set")) return parse_set(ps, line);
    if (!strcmp(s, "macro")) return parse_macro(ps, line, 0);
    if (!strcmp(s, "call")) return parse_macro(ps, line, 1);
    if (!strcmp(s, "break") || !strcmp(s, "continue")) {
        jnode_ *n = node(ps, s[0] == 'b' ? S_BREAK : S_CONTINUE, line);
        return !n || expect_block_end(ps, s) ? NULL : n;
    }
    if (!strcmp(s, "filter")) {
        static const char *const ends[] = {"endfilter", NULL};
        jnode_ *n = node(ps, S_FILTERBLOCK, line), *f = NULL;
        const char *found;
        if (!n) return NULL;
        ps->pos--; /* parse_filter skips the token before the filter name */
        do {
            if (!(f = parse_filter(ps, f, 0))) return NULL;
        } while (is_op(cur(ps), "|"));
        n->c = f;
        if (expect_block_end(ps, "filter") || !(n->body = parse_body(ps, ends, &found)) ||
            expect_block_end(ps, "endfilter"))
            return NULL;
        return n;
    }
    if (!strcmp(s, "generation")) { /* transformers' AssistantTracker: renders its body */
        static const char *const ends[] = {"endgeneration", NULL};
        const char *found;
        jnode_ *b;
        if (expect_block_end(ps, "generation") || !(b = parse_body(ps, ends, &found)) ||
            expect_block_end(ps, "endgeneration"))
            return NULL;
        return b;
    }
    pfail(ps, line, "the '%s' statement is not supported", s);
    return NULL;
}

/* Statements up to one of `ends` (left unconsumed, its name in *found) or EOF (ends NULL). */
static jnode_ *parse_body(parser *ps, const char *const *ends, const char **found) {
    int line = cur(ps)->line;
    jnode_ *body = node(ps, S_BODY, line);
    kids k = {0};
    if (!body || enter(ps)) return NULL;
    for (;;) {
        token *t = cur(ps);
        jnode_ *n = NULL;
        if (t->type == TK_EOF) {
            if (ends) {
                const char *const *e = ends;
                while (e[1] && strncmp(*e, "end", 3)) e++;
                pfail(ps, t->line, "missing {%% %s %%} (the template ends first)", *e);
                return NULL;
            }
            break;
        }
        if (t->type == TK_TEXT) {
            if ((n = node(ps, S_TEXT, t->line))) n->cval = jv_str(t->p, t->n);
            adv(ps);
        } else if (t->type == TK_VAR_BEGIN) {
            adv(ps);
            if ((n = node(ps, S_OUTPUT, t->line)) && (n->a = parse_tuple(ps, 0))) {
                if (cur(ps)->type != TK_VAR_END) {
                    char b[64];
                    pfail(ps, cur(ps)->line, "expected '}}', found %s", tok_desc(cur(ps), b, sizeof b));
                    return NULL;
                }
                adv(ps);
            }
        } else if (t->type == TK_BLOCK_BEGIN) {
            token *nt = next_tok(ps);
            if (nt->type == TK_NAME) {
                for (int i = 0; ends && ends[i]; i++)
                    if (!strcmp(nt->p, ends[i])) {
                        ps->pos += 2;
                        *found = ends[i];
                        kids_to(body, &k);
                        ps->depth--;
                        return body;
                    }
                static const char *const enders[] = {"endif",         "endfor",   "elif",    "else",
                                                     "endset",        "endmacro", "endcall", "endfilter",
                                                     "endgeneration", "endraw",   NULL};
                for (int i = 0; enders[i]; i++)
                    if (!strcmp(nt->p, enders[i])) {
                        pfail(ps, t->line, "unexpected {%% %s %%}", nt->p);
                        return NULL;
                    }
            }
            n = parse_statement(ps);
        } else {
            char b[64];
            pfail(ps, t->line, "unexpected %s", tok_desc(t, b, sizeof b));
            return NULL;
        }
        if (!n || kids_push(ps, &k, n, NULL)) return NULL;
    }
    kids_to(body, &k);
    ps->depth--;
    return body;
}

int jinja_parse(const char *src, size_t len, jinja_template **out, char *err) {
    *out = NULL;
    if (tok_utf8_check(src, len) != len) {
        tok_errf(err, "chat template: invalid UTF-8 at byte %zu", tok_utf8_check(src, len));
        return -1;
    }
    jinja_template *t = calloc(1, sizeof *t);
    if (!t || !(t->src = malloc(len + 1))) {
        free(t);
        tok_errf(err, "chat template: out of memory");
        return -1;
    }
    /* newlines: \r\n and \r become \n; one trailing newline is dropped (keep_trailing_newline=False) */
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            t->src[k++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else t->src[k++] = src[i];
    }
    if (k && t->src[k - 1] == '\n') k--;
    t->src[k] = 0;
    parser ps = {.src = t->src, .len = k, .err = err, .line_pos = t->src, .line_no = 1};
    if (!(ps.ar = jarena_new((size_t)1 << 30)) || (t->arena = ps.ar, lex(&ps))) {
        if (!ps.failed) tok_errf(err, "chat template: out of memory");
        free(ps.tk);
        jinja_free(t);
        return -1;
    }
    const char *found = NULL;
    t->root = parse_body(&ps, NULL, &found);
    free(ps.tk);
    if (!t->root) {
        if (!ps.failed) tok_errf(err, "chat template: out of memory");
        jinja_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void jinja_free(jinja_template *t) {
    if (!t) return;
    jarena_free(t->arena);
    free(t->src);
    free(t);
}
