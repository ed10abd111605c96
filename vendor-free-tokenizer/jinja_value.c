/* jinja_value.c - the interpreter's values: one arena per render (nothing is freed
 * before the render ends, so no value needs an owner), lists and insertion-ordered
 * dicts, Python's str() / repr() as Jinja prints values, json.dumps as transformers'
 * tojson calls it, and the JSON reader for the caller's variables. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "jinja_internal.h"

/* ---- arena ------------------------------------------------------------------------ */

typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    max_align_t data[];
} chunk;

struct jarena {
    chunk *head;
    size_t total, limit;
};

jarena *jarena_new(size_t limit) {
    jarena *a = calloc(1, sizeof *a);
    if (a) a->limit = limit;
    return a;
}

void jarena_free(jarena *a) {
    if (!a) return;
    while (a->head) {
        chunk *n = a->head->next;
        free(a->head);
        a->head = n;
    }
    free(a);
}

void *jarena_alloc(jarena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!n) n = 16;
    chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > 65536 ? n : 65536;
        if (n > a->limit || a->total + size > a->limit) return NULL;
        chunk *nc = malloc(sizeof *nc + size);
        if (!nc) return NULL;
        nc->used = 0;
        nc->size = size;
        a->total += size;
        if (c && n > 65536) { /* a big block goes behind the current chunk, which keeps filling */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->head = nc;
        }
        c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *jarena_strdup(jarena *a, const char *s, size_t n) {
    char *p = jarena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* ---- errors and allocation inside a render -------------------------------------------- */

int jctx_fail(jctx *c, const char *fmt, ...) {
    if (c->failed) return -1;
    c->failed = 1;
    char msg[TOK_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!strncmp(msg, "raise_exception: ", 17)) tok_errf(c->err, "%s", msg);
    else tok_errf(c->err, "chat template line %d: %s", c->line, msg);
    return -1;
}

void *jctx_alloc(jctx *c, size_t n) {
    if (c->failed) return NULL;
    void *p = jarena_alloc(c->ar, n);
    if (!p) jctx_fail(c, "the render needs more than %zu KB of memory (memory limit)", c->max_memory >> 10);
    return p;
}

jval jv_list_new(jctx *c, size_t cap) {
    jval v = {0};
    v.t = V_LIST;
    v.l = jctx_alloc(c, sizeof *v.l);
    if (v.l && cap && !(v.l->v = jctx_alloc(c, cap * sizeof(jval)))) v.l = NULL;
    if (v.l) v.l->cap = cap;
    if (!v.l) v.t = V_UNDEF;
    return v;
}

int jv_list_push(jctx *c, jlist *l, jval x) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        jval *n = jctx_alloc(c, cap * sizeof *n);
        if (!n) return -1;
        if (l->n) memcpy(n, l->v, l->n * sizeof *n);
        l->v = n;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return 0;
}

jval jv_dict_new(jctx *c, size_t cap) {
    jval v = {0};
    v.t = V_DICT;
    v.d = jctx_alloc(c, sizeof *v.d);
    if (v.d && cap && (!(v.d->k = jctx_alloc(c, cap * sizeof(jval))) || !(v.d->v = jctx_alloc(c, cap * sizeof(jval)))))
        v.d = NULL;
    if (v.d) v.d->cap = cap;
    if (!v.d) v.t = V_UNDEF;
    return v;
}

jval *jv_dict_find(jctx *c, const jdict *d, jval k) {
    for (size_t i = 0; i < d->n && !c->failed; i++)
        if (jv_equal(c, d->k[i], k)) return &d->v[i];
    return NULL;
}

jval *jv_dict_get(const jdict *d, const char *k, size_t n) {
    for (size_t i = d->n; i-- > 0;) /* newest first: scopes shadow */
        if (d->k[i].t == V_STR && d->k[i].s.n == n && !memcmp(d->k[i].s.p, k, n)) return &d->v[i];
    return NULL;
}

int jv_dict_set(jctx *c, jdict *d, jval k, jval v) {
    jval *old = jv_dict_find(c, d, k);
    if (old) {
        *old = v;
        return 0;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        jval *nk = jctx_alloc(c, cap * sizeof *nk), *nv = jctx_alloc(c, cap * sizeof *nv);
        if (!nk || !nv) return -1;
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof *nk);
            memcpy(nv, d->v, d->n * sizeof *nv);
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = k;
    d->v[d->n++] = v;
    return 0;
}

jval jv_cstr(jctx *c, const char *s) {
    size_t n = strlen(s);
    char *p = jctx_alloc(c, n + 1);
    if (!p) return jv_undef(NULL);
    memcpy(p, s, n);
    return jv_str(p, n);
}

/* ---- truth, equality, names ---------------------------------------------------------- */

int jv_truthy(jval v) {
    switch (v.t) {
    case V_UNDEF:
    case V_NONE: return 0;
    case V_BOOL:
    case V_INT: return v.i != 0;
    case V_FLOAT: return v.f != 0;
    case V_STR: return v.s.n != 0;
    case V_LIST: return v.l->n != 0;
    case V_DICT: return v.d->n != 0;
    default: return 1;
    }
}

static int is_num(jval v) { return v.t == V_BOOL || v.t == V_INT || v.t == V_FLOAT; }

int jctx_work(jctx *c, long long units) {
    if ((c->work += units) <= c->max_work) return 0;
    return jctx_fail(c, "more than %lld units of work (comparisons, scans): a runaway template", c->max_work);
}

int jv_equal(jctx *c, jval a, jval b) {
    if (jctx_work(c, 1)) return 0;
    if (is_num(a) && is_num(b)) {
        if (a.t != V_FLOAT && b.t != V_FLOAT) return a.i == b.i;
        return (a.t == V_FLOAT ? a.f : (double)a.i) == (b.t == V_FLOAT ? b.f : (double)b.i);
    }
    if (a.t != b.t) return 0;
    switch (a.t) {
    case V_UNDEF:
    case V_NONE: return 1;
    case V_STR: return a.s.n == b.s.n && !jctx_work(c, (long long)(a.s.n >> 6)) && !memcmp(a.s.p, b.s.p, a.s.n);
    case V_LIST:
        if (a.l->n != b.l->n || a.tuple != b.tuple) return 0;
        for (size_t i = 0; i < a.l->n; i++)
            if (!jv_equal(c, a.l->v[i], b.l->v[i])) return 0;
        return 1;
    case V_DICT:
        if (a.d == b.d) return 1;
        if (a.d->n != b.d->n || a.ns || b.ns) return 0;
        for (size_t i = 0; i < a.d->n; i++) {
            jval *o = jv_dict_find(c, b.d, a.d->k[i]);
            if (!o || !jv_equal(c, a.d->v[i], *o)) return 0;
        }
        return 1;
    case V_MACRO: return a.mac == b.mac;
    case V_FUNC: return a.fn == b.fn;
    default: return 0;
    }
}

const char *jv_type_name(jval v) {
    static const char *names[] = {"Undefined", "NoneType", "bool",  "int",         "float",  "str",
                                  "list",      "dict",     "Macro", "LoopContext", "method", "function"};
    if (v.t == V_LIST && v.tuple) return "tuple";
    if (v.t == V_DICT && v.ns) return "Namespace";
    return names[v.t];
}

/* ---- text buffers ---------------------------------------------------------------------- */

int jsb_put(jsb *b, const char *s, size_t n) {
    if (b->c->failed) return -1;
    if (b->n + n + 1 > b->cap) {
        if (b->n + n > b->c->max_output)
            return jctx_fail(b->c, "the text grows past %zu KB (output limit)", b->c->max_output >> 10);
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = jctx_alloc(b->c, cap);
        if (!p) return -1;
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

int jsb_putc(jsb *b, char ch) { return jsb_put(b, &ch, 1); }

jval jsb_val(jsb *b) { return jv_str(b->p ? b->p : "", b->n); }

static int jsb_printf(jsb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int jsb_printf(jsb *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    return jsb_put(b, tmp, (size_t)(n < 0 ? 0 : n >= (int)sizeof tmp ? (int)sizeof tmp - 1 : n));
}

/* ---- UTF-8 ---------------------------------------------------------------------------- */

size_t ju_len(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

size_t ju_offset(const char *s, size_t n, size_t cp) {
    size_t i = 0;
    while (i < n && cp) {
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
        cp--;
    }
    return i;
}

int ju_is_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

/* ---- Python's str() and repr() ----------------------------------------------------------- */

/* repr(float): the shortest digits that read back to the same double, laid out as Python does */
static int put_float(jsb *b, double f, int json) {
    if (isnan(f)) return jsb_put(b, json ? "NaN" : "nan", json ? 3 : 3);
    if (isinf(f))
        return json ? jsb_put(b, f < 0 ? "-Infinity" : "Infinity", f < 0 ? 9 : 8)
                    : jsb_put(b, f < 0 ? "-inf" : "inf", f < 0 ? 4 : 3);
    char e[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e = [-]d[.ddd]e[+-]XX */
    char digits[24];
    int nd = 0, neg = e[0] == '-';
    const char *q = e + neg;
    for (; *q && *q != 'e'; q++)
        if (*q != '.') digits[nd++] = *q;
    int exp = atoi(q + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    char out[64];
    int k = 0;
    if (neg) out[k++] = '-';
    if (exp < -4 || exp >= 16) {
        out[k++] = digits[0];
        if (nd > 1) {
            out[k++] = '.';
            for (int i = 1; i < nd; i++) out[k++] = digits[i];
        }
        k += snprintf(out + k, sizeof out - (size_t)k, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    } else if (exp < 0) {
        out[k++] = '0';
        out[k++] = '.';
        for (int i = 0; i < -exp - 1; i++) out[k++] = '0';
        for (int i = 0; i < nd; i++) out[k++] = digits[i];
    } else {
        for (int i = 0; i <= exp; i++) out[k++] = i < nd ? digits[i] : '0';
        out[k++] = '.';
        if (nd > exp + 1)
            for (int i = exp + 1; i < nd; i++) out[k++] = digits[i];
        else out[k++] = '0';
    }
    return jsb_put(b, out, (size_t)k);
}

static int py_printable(uint32_t cp) {
    if (cp == ' ') return 1;
    utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)cp);
    return !(cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF || cat == UTF8PROC_CATEGORY_CS ||
             cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CN || cat == UTF8PROC_CATEGORY_ZL ||
             cat == UTF8PROC_CATEGORY_ZP || cat == UTF8PROC_CATEGORY_ZS);
}

static int repr_str(jsb *b, const char *s, size_t n) {
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    if (jsb_putc(b, q)) return -1;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t L = tok_utf8_len((const unsigned char *)s + i, n - i);
        if (!L) { /* not reachable: values hold valid UTF-8 */
            L = 1;
            cp = (unsigned char)s[i];
        } else tok_utf8_get(s + i, &cp);
        int rc;
        if (cp == (uint32_t)q || cp == '\\') rc = jsb_putc(b, '\\') || jsb_putc(b, (char)cp);
        else if (cp == '\n') rc = jsb_put(b, "\\n", 2);
        else if (cp == '\r') rc = jsb_put(b, "\\r", 2);
        else if (cp == '\t') rc = jsb_put(b, "\\t", 2);
        else if (cp < 0x80 ? (cp < 0x20 || cp == 0x7F) : !py_printable(cp))
            rc = cp < 0x100     ? jsb_printf(b, "\\x%02x", cp)
                 : cp < 0x10000 ? jsb_printf(b, "\\u%04x", cp)
                                : jsb_printf(b, "\\U%08x", cp);
        else rc = jsb_put(b, s + i, L);
        if (rc) return -1;
        i += L;
    }
    return jsb_putc(b, q);
}

int jv_repr(jctx *c, jval v, jsb *b) {
    if (++c->depth > JJ_MAX_CALL_DEPTH) {
        c->depth--;
        return jctx_fail(c, "a value nested deeper than %d levels", JJ_MAX_CALL_DEPTH);
    }
    int rc = 0;
    switch (v.t) {
    case V_STR: rc = repr_str(b, v.s.p, v.s.n); break;
    case V_LIST:
        rc = jsb_putc(b, v.tuple ? '(' : '[');
        for (size_t i = 0; !rc && i < v.l->n; i++) rc = (i && jsb_put(b, ", ", 2)) || jv_repr(c, v.l->v[i], b);
        if (!rc && v.tuple && v.l->n == 1) rc = jsb_putc(b, ',');
        rc = rc || jsb_putc(b, v.tuple ? ')' : ']');
        break;
    case V_DICT:
        if (v.ns) {
            rc = jsb_put(b, "<Namespace ", 11);
        }
        rc = rc || jsb_putc(b, '{');
        for (size_t i = 0; !rc && i < v.d->n; i++)
            rc = (i && jsb_put(b, ", ", 2)) || jv_repr(c, v.d->k[i], b) || jsb_put(b, ": ", 2) ||
                 jv_repr(c, v.d->v[i], b);
        rc = rc || jsb_putc(b, '}') || (v.ns && jsb_putc(b, '>'));
        break;
    default: rc = jv_str_of(c, v, b); break;
    }
    c->depth--;
    return rc;
}

int jv_str_of(jctx *c, jval v, jsb *b) {
    switch (v.t) {
    case V_UNDEF: return 0;
    case V_NONE: return jsb_put(b, "None", 4);
    case V_BOOL: return v.i ? jsb_put(b, "True", 4) : jsb_put(b, "False", 5);
    case V_INT: return jsb_printf(b, "%lld", (long long)v.i);
    case V_FLOAT: return put_float(b, v.f, 0);
    case V_STR: return jsb_put(b, v.s.p, v.s.n);
    case V_LIST:
    case V_DICT: return jv_repr(c, v, b);
    case V_MACRO: return jsb_put(b, "<Macro>", 7);
    case V_LOOP: return jsb_put(b, "<LoopContext>", 13);
    default: return jctx_fail(c, "printing a %s is not supported", jv_type_name(v));
    }
}

jval jv_to_str(jctx *c, jval v) {
    if (v.t == V_STR) return v;
    jsb b = {.c = c};
    if (jv_str_of(c, v, &b)) return jv_undef(NULL);
    return jsb_val(&b);
}

/* ---- json.dumps ---------------------------------------------------------------------------- */

static int json_str(jsb *b, const char *s, size_t n, int ensure_ascii) {
    if (jsb_putc(b, '"')) return -1;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        const char *esc = NULL;
        char tmp[16];
        size_t L = 1;
        switch (ch) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (ch < 0x20) {
                snprintf(tmp, sizeof tmp, "\\u%04x", ch);
                esc = tmp;
            } else if (ch >= 0x80 && ensure_ascii) {
                uint32_t cp;
                L = tok_utf8_len((const unsigned char *)s + i, n - i);
                if (!L) L = 1, cp = 0xFFFD;
                else tok_utf8_get(s + i, &cp);
                if (cp >= 0x10000) {
                    cp -= 0x10000;
                    snprintf(tmp, sizeof tmp, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
                } else snprintf(tmp, sizeof tmp, "\\u%04x", cp);
                esc = tmp;
            }
        }
        if (!esc) {
            run++;
            continue;
        }
        if (jsb_put(b, s + i - run, run) || jsb_put(b, esc, strlen(esc))) return -1;
        run = 0;
        i += L - 1;
    }
    return jsb_put(b, s + n - run, run) || jsb_putc(b, '"');
}

int jinja_json_string(char **buf, size_t *n, size_t *cap, const char *s, size_t len) {
    jctx c = {.max_output = len * 8 + 64, .max_memory = JJ_MAX_MEMORY + len * 8};
    jarena *ar = jarena_new(c.max_memory);
    if (!ar) return -1;
    c.ar = ar;
    jsb b = {.c = &c};
    int rc = json_str(&b, s, len, 0);
    if (!rc && *n + b.n + 1 > *cap) {
        size_t nc = (*n + b.n + 1) * 2;
        char *p = realloc(*buf, nc);
        if (!p) rc = -1;
        else {
            *buf = p;
            *cap = nc;
        }
    }
    if (!rc) {
        memcpy(*buf + *n, b.p, b.n);
        *n += b.n;
        (*buf)[*n] = 0;
    }
    jarena_free(ar);
    return rc;
}

static int newline_indent(jsb *b, int indent, int level) {
    if (jsb_putc(b, '\n')) return -1;
    for (int i = 0; i < indent * level; i++)
        if (jsb_putc(b, ' ')) return -1;
    return 0;
}

int jv_tojson(jctx *c, jval v, jsb *b, int ensure_ascii, int indent, const char *item_sep, const char *key_sep,
              int sort_keys, int level) {
    if (level > JJ_MAX_CALL_DEPTH)
        return jctx_fail(c, "tojson: a value nested deeper than %d levels", JJ_MAX_CALL_DEPTH);
    switch (v.t) {
    case V_NONE: return jsb_put(b, "null", 4);
    case V_BOOL: return v.i ? jsb_put(b, "true", 4) : jsb_put(b, "false", 5);
    case V_INT: return jsb_printf(b, "%lld", (long long)v.i);
    case V_FLOAT: return put_float(b, v.f, 1);
    case V_STR: return json_str(b, v.s.p, v.s.n, ensure_ascii);
    case V_LIST: {
        if (!v.l->n) return jsb_put(b, "[]", 2);
        if (jsb_putc(b, '[')) return -1;
        for (size_t i = 0; i < v.l->n; i++) {
            if (i && jsb_put(b, item_sep, strlen(item_sep))) return -1;
            if (indent >= 0 && newline_indent(b, indent, level + 1)) return -1;
            if (jv_tojson(c, v.l->v[i], b, ensure_ascii, indent, item_sep, key_sep, sort_keys, level + 1)) return -1;
        }
        if (indent >= 0 && newline_indent(b, indent, level)) return -1;
        return jsb_putc(b, ']');
    }
    case V_DICT: {
        if (v.ns) return jctx_fail(c, "tojson: a Namespace is not JSON serializable");
        if (!v.d->n) return jsb_put(b, "{}", 2);
        size_t n = v.d->n, *order = jctx_alloc(c, n * sizeof *order);
        if (!order) return -1;
        for (size_t i = 0; i < n; i++) order[i] = i;
        for (size_t i = 0; i < n; i++)
            if (v.d->k[i].t != V_STR) return jctx_fail(c, "tojson: dict keys other than strings are not supported");
        if (sort_keys) /* insertion sort by key bytes (= code point order) */
            for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0; j--) {
                    if (jctx_work(c, 1)) return -1;
                    jval a = v.d->k[order[j - 1]], k = v.d->k[order[j]];
                    size_t m = a.s.n < k.s.n ? a.s.n : k.s.n;
                    int cmp = memcmp(a.s.p, k.s.p, m);
                    if (cmp < 0 || (cmp == 0 && a.s.n <= k.s.n)) break;
                    size_t t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
        if (jsb_putc(b, '{')) return -1;
        for (size_t i = 0; i < n; i++) {
            if (i && jsb_put(b, item_sep, strlen(item_sep))) return -1;
            if (indent >= 0 && newline_indent(b, indent, level + 1)) return -1;
            if (json_str(b, v.d->k[order[i]].s.p, v.d->k[order[i]].s.n, ensure_ascii) ||
                jsb_put(b, key_sep, strlen(key_sep)) ||
                jv_tojson(c, v.d->v[order[i]], b, ensure_ascii, indent, item_sep, key_sep, sort_keys, level + 1))
                return -1;
        }
        if (indent >= 0 && newline_indent(b, indent, level)) return -1;
        return jsb_putc(b, '}');
    }
    default: return jctx_fail(c, "tojson: Object of type %s is not JSON serializable", jv_type_name(v));
    }
}

/* ---- JSON reader (the caller's variables) -------------------------------------------------- */

typedef struct {
    jctx *c;
    const char *p, *end, *start;
    int depth;
} jreader;

static void jr_ws(jreader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static int jr_fail(jreader *r, const char *why) {
    return jctx_fail(r->c, "variables: invalid JSON at byte %zu: %s", (size_t)(r->p - r->start), why);
}

static int hex4(const char *s, const char *end, uint32_t *v) {
    *v = 0;
    if (end - s < 4) return -1;
    for (int i = 0; i < 4; i++) {
        char h = s[i];
        int d = h >= '0' && h <= '9'   ? h - '0'
                : h >= 'a' && h <= 'f' ? h - 'a' + 10
                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                       : -1;
        if (d < 0) return -1;
        *v = *v * 16 + (uint32_t)d;
    }
    return 0;
}

static int jr_string(jreader *r, jval *out) {
    r->p++;
    jsb b = {.c = r->c};
    while (r->p < r->end && *r->p != '"') {
        unsigned char ch = (unsigned char)*r->p;
        if (ch < 0x20) return jr_fail(r, "control character in a string");
        if (ch != '\\') {
            size_t L = tok_utf8_len((const unsigned char *)r->p, (size_t)(r->end - r->p));
            if (!L) return jr_fail(r, "invalid UTF-8");
            if (jsb_put(&b, r->p, L)) return -1;
            r->p += L;
            continue;
        }
        if (++r->p >= r->end) break;
        char e = *r->p++, o = 0;
        switch (e) {
        case '"':
        case '\\':
        case '/': o = e; break;
        case 'n': o = '\n'; break;
        case 't': o = '\t'; break;
        case 'r': o = '\r'; break;
        case 'b': o = '\b'; break;
        case 'f': o = '\f'; break;
        case 'u': {
            uint32_t cp, lo;
            if (hex4(r->p, r->end, &cp)) return jr_fail(r, "bad \\u escape");
            r->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u' &&
                !hex4(r->p + 2, r->end, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                r->p += 6;
            }
            if (cp >= 0xD800 && cp < 0xE000) return jr_fail(r, "lone surrogate in a \\u escape");
            char u[4];
            if (jsb_put(&b, u, tok_utf8_put(cp, u))) return -1;
            continue;
        }
        default: return jr_fail(r, "bad escape");
        }
        if (jsb_putc(&b, o)) return -1;
    }
    if (r->p >= r->end) return jr_fail(r, "unterminated string");
    r->p++;
    *out = jsb_val(&b);
    return 0;
}

static int jr_value(jreader *r, jval *out) {
    jr_ws(r);
    if (r->p >= r->end) return jr_fail(r, "unexpected end");
    if (++r->depth > JJ_MAX_CALL_DEPTH) return jr_fail(r, "nested too deeply");
    char ch = *r->p;
    int rc = 0;
    if (ch == '"') rc = jr_string(r, out);
    else if (ch == '[' || ch == '{') {
        int obj = ch == '{';
        *out = obj ? jv_dict_new(r->c, 0) : jv_list_new(r->c, 0);
        if (out->t == V_UNDEF) return -1;
        r->p++;
        jr_ws(r);
        if (r->p < r->end && *r->p == (obj ? '}' : ']')) r->p++;
        else
            for (;;) {
                jval k = {0}, v;
                if (obj) {
                    jr_ws(r);
                    if (r->p >= r->end || *r->p != '"' || jr_string(r, &k))
                        return r->c->failed ? -1 : jr_fail(r, "expected a key");
                    jr_ws(r);
                    if (r->p >= r->end || *r->p != ':') return jr_fail(r, "expected ':'");
                    r->p++;
                }
                if (jr_value(r, &v)) return -1;
                if (obj && out->d->n >= 4096) return jr_fail(r, "an object with more than 4096 members");
                if (obj ? jv_dict_set(r->c, out->d, k, v) : jv_list_push(r->c, out->l, v)) return -1;
                if (++r->c->steps > r->c->max_steps) return jr_fail(r, "too many values");
                jr_ws(r);
                if (r->p < r->end && *r->p == ',') {
                    r->p++;
                    continue;
                }
                if (r->p < r->end && *r->p == (obj ? '}' : ']')) {
                    r->p++;
                    break;
                }
                return jr_fail(r, "expected ',' or a closing bracket");
            }
    } else if (r->end - r->p >= 4 && !memcmp(r->p, "true", 4)) {
        *out = jv_bool(1);
        r->p += 4;
    } else if (r->end - r->p >= 5 && !memcmp(r->p, "false", 5)) {
        *out = jv_bool(0);
        r->p += 5;
    } else if (r->end - r->p >= 4 && !memcmp(r->p, "null", 4)) {
        *out = jv_none();
        r->p += 4;
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
        char buf[64];
        size_t k = 0;
        int is_float = 0;
        while (r->p < r->end && k < sizeof buf - 1 && strchr("+-0123456789.eE", *r->p)) {
            is_float |= *r->p == '.' || *r->p == 'e' || *r->p == 'E';
            buf[k++] = *r->p++;
        }
        buf[k] = 0;
        char *e;
        if (is_float) {
            *out = jv_float(strtod(buf, &e));
        } else {
            long long x = strtoll(buf, &e, 10);
            *out = jv_int(x);
            if (k > 18) *out = jv_float(strtod(buf, &e));
        }
        if (*e || k == 0 || (k == 1 && buf[0] == '-')) return jr_fail(r, "bad number");
    } else rc = jr_fail(r, "unexpected character");
    r->depth--;
    return rc;
}

int jv_from_json(jctx *c, const char *s, size_t n, jval *out) {
    jreader r = {c, s, s + n, s, 0};
    if (jr_value(&r, out)) return -1;
    jr_ws(&r);
    if (r.p != r.end) return jr_fail(&r, "trailing characters");
    return 0;
}
