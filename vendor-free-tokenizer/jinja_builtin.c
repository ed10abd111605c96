/* jinja_builtin.c - what templates call: jinja2's filters and tests, the methods of
 * Python's str / dict / list that the sandbox allows, attribute and item access as
 * jinja2's getattr / getitem do them, and the globals (range, namespace, dict, plus
 * transformers' raise_exception and strftime_now). A name outside this set is an
 * error naming it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

#include "jinja_internal.h"

jval jargs_get(const jargs *a, int i, const char *name, jval dflt) {
    if (i >= 0 && i < a->npos) return a->pos[i];
    for (int k = 0; name && k < a->nkw; k++)
        if (!strcmp(a->kw[k], name)) return a->kwv[k];
    return dflt;
}

static jval fail_v(jctx *c, const char *msg, const char *name) {
    jctx_fail(c, msg, name);
    return jv_undef(NULL);
}

static int want_str(jctx *c, jval v, const char *what) {
    if (v.t == V_STR) return 0;
    return jctx_fail(c, "%s expects a string, got %s", what, jv_type_name(v));
}

/* jv_to_str of a V_STR may not be NUL-terminated: names used as C strings are copied */
static const char *cname(jctx *c, jval s) {
    char *p = jctx_alloc(c, s.s.n + 1);
    if (p) memcpy(p, s.s.p, s.s.n);
    return p ? p : "";
}

/* ---- str helpers --------------------------------------------------------------------- */

static size_t cp_at(const char *s, size_t n, size_t i, uint32_t *cp) {
    size_t L = tok_utf8_len((const unsigned char *)s + i, n - i);
    if (!L) {
        *cp = (unsigned char)s[i];
        return 1;
    }
    tok_utf8_get(s + i, cp);
    return L;
}

static int in_chars(uint32_t cp, jval chars) {
    /* callers charge chars.s.n per code point (jctx_work) */
    if (chars.t != V_STR) return ju_is_space(cp);
    for (size_t i = 0; i < chars.s.n;) {
        uint32_t d;
        i += cp_at(chars.s.p, chars.s.n, i, &d);
        if (d == cp) return 1;
    }
    return 0;
}

static jval strip(jctx *c, jval s, jval chars, int lead, int trail) {
    size_t i = 0, n = s.s.n;
    long long per = chars.t == V_STR ? 1 + (long long)(chars.s.n >> 6) : 0;
    while (lead && i < n) {
        uint32_t cp;
        size_t L = cp_at(s.s.p, n, i, &cp);
        if ((per && jctx_work(c, per)) || !in_chars(cp, chars)) break;
        i += L;
    }
    while (trail && n > i) {
        size_t j = n - 1;
        while (j > i && ((unsigned char)s.s.p[j] & 0xC0) == 0x80) j--;
        uint32_t cp;
        cp_at(s.s.p, n, j, &cp);
        if ((per && jctx_work(c, per)) || !in_chars(cp, chars)) break;
        n = j;
    }
    return jv_str(s.s.p + i, n - i);
}

enum { CASE_UPPER, CASE_LOWER, CASE_TITLE, CASE_CAPITALIZE };

/* Python's str.upper / lower / title use Unicode's full case mappings (SpecialCasing.txt,
 * unconditional part); utf8proc gives the one-to-one ones. The one-to-many mappings of
 * letters that appear in text (not the Greek iota-subscript forms): */
static const struct {
    uint32_t cp;
    const char *upper, *title, *lower; /* NULL: the simple mapping */
} special_case[] = {
    {0x00DF, "SS", "Ss", NULL},                                             /* ß */
    {0x0130, NULL, NULL, "i\xcc\x87"},                                      /* İ */
    {0x0149, "\xca\xbcN", "\xca\xbcN", NULL},                               /* ŉ */
    {0x01F0, "J\xcc\x8c", "J\xcc\x8c", NULL},                               /* ǰ */
    {0x0390, "\xce\x99\xcc\x88\xcc\x81", "\xce\x99\xcc\x88\xcc\x81", NULL}, /* ΐ */
    {0x03B0, "\xce\xa5\xcc\x88\xcc\x81", "\xce\xa5\xcc\x88\xcc\x81", NULL}, /* ΰ */
    {0x0587, "\xd4\xb5\xd5\x92", "\xd4\xb5\xd6\x82", NULL},                 /* և */
    {0x1E96, "H\xcc\xb1", "H\xcc\xb1", NULL},
    {0x1E97, "T\xcc\x88", "T\xcc\x88", NULL},
    {0x1E98, "W\xcc\x8a", "W\xcc\x8a", NULL},
    {0x1E99, "Y\xcc\x8a", "Y\xcc\x8a", NULL},
    {0x1E9A, "A\xca\xbe", "A\xca\xbe", NULL},
    {0xFB00, "FF", "Ff", NULL},
    {0xFB01, "FI", "Fi", NULL},
    {0xFB02, "FL", "Fl", NULL},
    {0xFB03, "FFI", "Ffi", NULL},
    {0xFB04, "FFL", "Ffl", NULL},
    {0xFB05, "ST", "St", NULL},
    {0xFB06, "ST", "St", NULL},
};

static const char *full_case(uint32_t cp, int mode) {
    for (size_t i = 0; i < sizeof special_case / sizeof special_case[0]; i++)
        if (special_case[i].cp == cp)
            return mode == CASE_UPPER   ? special_case[i].upper
                   : mode == CASE_LOWER ? special_case[i].lower
                                        : special_case[i].title;
    return NULL;
}

static jval recase(jctx *c, jval s, int mode) {
    jsb b = {.c = c};
    int prev_cased = 0, first = 1;
    for (size_t i = 0; i < s.s.n;) {
        uint32_t cp;
        size_t L = cp_at(s.s.p, s.s.n, i, &cp);
        i += L;
        int32_t o = (int32_t)cp;
        int m = mode;
        switch (mode) {
        case CASE_UPPER: o = utf8proc_toupper(o); break;
        case CASE_LOWER: o = utf8proc_tolower(o); break;
        case CASE_TITLE:
            m = prev_cased ? CASE_LOWER : CASE_TITLE;
            o = prev_cased ? utf8proc_tolower(o) : utf8proc_totitle(o);
            break;
        default:
            m = first ? CASE_TITLE : CASE_LOWER;
            o = first ? utf8proc_totitle(o) : utf8proc_tolower(o);
            break;
        }
        utf8proc_category_t cat = utf8proc_category((int32_t)cp);
        prev_cased = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
        first = 0;
        const char *full = full_case(cp, m);
        char u[4];
        if (full ? jsb_put(&b, full, strlen(full)) : jsb_put(&b, u, tok_utf8_put((uint32_t)o, u)))
            return jv_undef(NULL);
    }
    return jsb_val(&b);
}

static jval replace(jctx *c, jval s, jval old, jval new_, int64_t count) {
    if (want_str(c, old, "replace") || want_str(c, new_, "replace")) return jv_undef(NULL);
    jsb b = {.c = c};
    size_t i = 0;
    if (!old.s.n) { /* Python inserts `new` between characters and at both ends */
        for (;;) {
            if (count != 0 && (jsb_put(&b, new_.s.p, new_.s.n))) return jv_undef(NULL);
            if (count > 0) count--;
            if (i >= s.s.n) break;
            uint32_t cp;
            size_t L = cp_at(s.s.p, s.s.n, i, &cp);
            if (jsb_put(&b, s.s.p + i, L)) return jv_undef(NULL);
            i += L;
        }
        return jsb_val(&b);
    }
    while (i <= s.s.n) {
        const char *hit = count != 0 ? memmem(s.s.p + i, s.s.n - i, old.s.p, old.s.n) : NULL;
        if (!hit) {
            if (jsb_put(&b, s.s.p + i, s.s.n - i)) return jv_undef(NULL);
            break;
        }
        if (jsb_put(&b, s.s.p + i, (size_t)(hit - s.s.p) - i) || jsb_put(&b, new_.s.p, new_.s.n)) return jv_undef(NULL);
        i = (size_t)(hit - s.s.p) + old.s.n;
        if (count > 0) count--;
    }
    return jsb_val(&b);
}

static jval split(jctx *c, jval s, jval sep, int64_t maxsplit) {
    jval r = jv_list_new(c, 0);
    if (r.t != V_LIST) return r;
    if (sep.t == V_STR) {
        if (!sep.s.n) return fail_v(c, "split: empty separator%s", "");
        size_t i = 0;
        for (;;) {
            const char *hit = maxsplit != 0 ? memmem(s.s.p + i, s.s.n - i, sep.s.p, sep.s.n) : NULL;
            if (!hit) {
                if (jv_list_push(c, r.l, jv_str(s.s.p + i, s.s.n - i))) return jv_undef(NULL);
                break;
            }
            if (jv_list_push(c, r.l, jv_str(s.s.p + i, (size_t)(hit - s.s.p) - i))) return jv_undef(NULL);
            i = (size_t)(hit - s.s.p) + sep.s.n;
            if (maxsplit > 0) maxsplit--;
        }
        return r;
    }
    if (sep.t != V_NONE && sep.t != V_UNDEF) return fail_v(c, "split: the separator must be a string or None%s", "");
    size_t i = 0;
    for (;;) { /* runs of whitespace */
        uint32_t cp;
        while (i < s.s.n) {
            size_t L = cp_at(s.s.p, s.s.n, i, &cp);
            if (!ju_is_space(cp)) break;
            i += L;
        }
        if (i >= s.s.n) break;
        if (maxsplit == 0) {
            jval rest = strip(c, jv_str(s.s.p + i, s.s.n - i), jv_none(), 0, 1);
            if (jv_list_push(c, r.l, rest)) return jv_undef(NULL);
            break;
        }
        size_t j = i;
        while (j < s.s.n) {
            size_t L = cp_at(s.s.p, s.s.n, j, &cp);
            if (ju_is_space(cp)) break;
            j += L;
        }
        if (jv_list_push(c, r.l, jv_str(s.s.p + i, j - i))) return jv_undef(NULL);
        i = j;
        if (maxsplit > 0) maxsplit--;
    }
    return r;
}

/* str.splitlines() boundaries; returns the line end and *next (after the boundary) */
static size_t line_end(const char *s, size_t n, size_t i, size_t *next) {
    while (i < n) {
        uint32_t cp;
        size_t L = cp_at(s, n, i, &cp);
        if (cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) || cp == 0x85 ||
            cp == 0x2028 || cp == 0x2029) {
            *next = i + L + (cp == '\r' && i + 1 < n && s[i + 1] == '\n');
            return i;
        }
        i += L;
    }
    *next = n;
    return n;
}

static jval splitlines(jctx *c, jval s) {
    jval r = jv_list_new(c, 0);
    for (size_t i = 0; r.t == V_LIST && i < s.s.n;) {
        size_t next, e = line_end(s.s.p, s.s.n, i, &next);
        if (jv_list_push(c, r.l, jv_str(s.s.p + i, e - i))) return jv_undef(NULL);
        i = next;
    }
    return r;
}

static int affix(jctx *c, jval s, jval x, int end) {
    if (x.t == V_LIST) {
        for (size_t i = 0; i < x.l->n; i++) {
            int r = affix(c, s, x.l->v[i], end);
            if (r) return r;
        }
        return 0;
    }
    if (want_str(c, x, end ? "endswith" : "startswith")) return -1;
    if (x.s.n > s.s.n) return 0;
    return !memcmp(s.s.p + (end ? s.s.n - x.s.n : 0), x.s.p, x.s.n);
}

static jval join(jctx *c, jval seq, jval sep, jval attr) {
    jlist items;
    if (jiterate(c, seq, &items)) return jv_undef(NULL);
    jsb b = {.c = c};
    for (size_t i = 0; i < items.n; i++) {
        jval v = items.v[i];
        if (attr.t == V_STR) v = jattr(c, v, cname(c, attr));
        if ((i && jv_str_of(c, sep, &b)) || jv_str_of(c, v, &b)) return jv_undef(NULL);
    }
    return jsb_val(&b);
}

/* '{}' / '{0}' / '{name}' fields of str.format, no format specs */
static jval format(jctx *c, jval s, const jargs *a) {
    jsb b = {.c = c};
    int auto_idx = 0;
    for (size_t i = 0; i < s.s.n; i++) {
        char ch = s.s.p[i];
        if ((ch == '{' || ch == '}') && i + 1 < s.s.n && s.s.p[i + 1] == ch) {
            if (jsb_putc(&b, ch)) return jv_undef(NULL);
            i++;
            continue;
        }
        if (ch == '}') return fail_v(c, "format: single '}' in the format string%s", "");
        if (ch != '{') {
            if (jsb_putc(&b, ch)) return jv_undef(NULL);
            continue;
        }
        const char *close = memchr(s.s.p + i, '}', s.s.n - i);
        if (!close) return fail_v(c, "format: single '{' in the format string%s", "");
        size_t fl = (size_t)(close - s.s.p) - i - 1;
        const char *field = s.s.p + i + 1;
        jval v;
        if (memchr(field, ':', fl) || memchr(field, '!', fl) || memchr(field, '.', fl) || memchr(field, '[', fl))
            return fail_v(c, "format: field specs are not supported%s", "");
        if (!fl) {
            if (auto_idx >= a->npos) return fail_v(c, "format: not enough arguments%s", "");
            v = a->pos[auto_idx++];
        } else if (field[0] >= '0' && field[0] <= '9') {
            int k = atoi(field);
            if (k >= a->npos) return fail_v(c, "format: not enough arguments%s", "");
            v = a->pos[k];
        } else {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(fl < 63 ? fl : 63), field);
            v = jargs_get(a, -1, name, jv_undef(NULL));
            if (v.t == V_UNDEF) return fail_v(c, "format: no argument named '%s'", name);
        }
        if (jv_str_of(c, v, &b)) return jv_undef(NULL);
        i += fl + 1;
    }
    return jsb_val(&b);
}

/* ---- attribute and item access ------------------------------------------------------- */

static const char *const str_methods[] = {"strip",      "lstrip",   "rstrip",     "split",   "rsplit",
                                          "startswith", "endswith", "upper",      "lower",   "title",
                                          "capitalize", "replace",  "find",       "rfind",   "count",
                                          "join",       "format",   "splitlines", "isdigit", "isspace",
                                          "isalpha",    "isalnum",  "islower",    "isupper", NULL};
static const char *const dict_methods[] = {"items",  "keys",       "values", "get",     "copy", "pop",
                                           "update", "setdefault", "clear",  "popitem", NULL};
static const char *const list_methods[] = {"index",  "count",  "copy",  "append", "pop",     "extend",
                                           "insert", "remove", "clear", "sort",   "reverse", NULL};

static int listed(const char *const *names, const char *n) {
    for (; *names; names++)
        if (!strcmp(*names, n)) return 1;
    return 0;
}

static jval method(jctx *c, jval self, const char *name) {
    jmethod *m = jctx_alloc(c, sizeof *m);
    jval v = {0};
    if (!m) return jv_undef(NULL);
    m->self = self;
    m->name = name;
    v.t = V_METHOD;
    v.meth = m;
    return v;
}

jval jattr(jctx *c, jval obj, const char *name) {
    switch (obj.t) {
    case V_UNDEF:
        if (obj.uname) return fail_v(c, "'%s' is undefined", obj.uname);
        return fail_v(c, "an undefined value has no attribute '%s'", name);
    case V_DICT:
        if (!obj.ns && listed(dict_methods, name)) return method(c, obj, name);
        {
            jval *v = jv_dict_get(obj.d, name, strlen(name));
            return v ? *v : jv_undef(NULL);
        }
    case V_STR: return listed(str_methods, name) ? method(c, obj, name) : jv_undef(NULL);
    case V_LIST: return listed(list_methods, name) ? method(c, obj, name) : jv_undef(NULL);
    case V_LOOP: {
        jloop *l = obj.loop;
        if (!strcmp(name, "index")) return jv_int(l->index0 + 1);
        if (!strcmp(name, "index0")) return jv_int(l->index0);
        if (!strcmp(name, "revindex")) return jv_int(l->length - l->index0);
        if (!strcmp(name, "revindex0")) return jv_int(l->length - l->index0 - 1);
        if (!strcmp(name, "first")) return jv_bool(l->index0 == 0);
        if (!strcmp(name, "last")) return jv_bool(l->index0 == l->length - 1);
        if (!strcmp(name, "length")) return jv_int(l->length);
        if (!strcmp(name, "depth")) return jv_int(1);
        if (!strcmp(name, "depth0")) return jv_int(0);
        if (!strcmp(name, "previtem")) return l->has_prev ? l->prev : jv_undef("previtem");
        if (!strcmp(name, "nextitem")) return l->has_next ? l->next : jv_undef("nextitem");
        if (!strcmp(name, "cycle")) return method(c, obj, "cycle");
        return fail_v(c, "loop.%s is not supported", name);
    }
    default: return jv_undef(NULL);
    }
}

jval jitem(jctx *c, jval obj, jval key) {
    switch (obj.t) {
    case V_UNDEF:
        if (obj.uname) return fail_v(c, "'%s' is undefined", obj.uname);
        return fail_v(c, "an undefined value has no items%s", "");
    case V_LIST:
    case V_STR: {
        if (key.t != V_INT && key.t != V_BOOL) return key.t == V_STR ? jattr(c, obj, cname(c, key)) : jv_undef(NULL);
        if (obj.t == V_STR && jctx_work(c, (long long)(obj.s.n >> 6))) return jv_undef(NULL);
        int64_t n = obj.t == V_LIST ? (int64_t)obj.l->n : (int64_t)ju_len(obj.s.p, obj.s.n), i = key.i;
        if (i < 0) i += n;
        if (i < 0 || i >= n) return jv_undef(NULL);
        if (obj.t == V_LIST) return obj.l->v[i];
        size_t a = ju_offset(obj.s.p, obj.s.n, (size_t)i), b = ju_offset(obj.s.p, obj.s.n, (size_t)i + 1);
        return jv_str(obj.s.p + a, b - a);
    }
    case V_DICT: {
        jval *v = jv_dict_find(c, obj.d, key);
        if (v) return *v;
        if (key.t == V_STR && !obj.ns) {
            const char *s = cname(c, key);
            if (listed(dict_methods, s)) return method(c, obj, s);
        }
        return jv_undef(NULL);
    }
    case V_LOOP:
        if (key.t == V_STR) return jattr(c, obj, cname(c, key));
        return jv_undef(NULL);
    default: return jv_undef(NULL);
    }
}

/* ---- methods --------------------------------------------------------------------------- */

static int64_t int_arg(jval v, int64_t dflt) { return v.t == V_INT || v.t == V_BOOL ? v.i : dflt; }

static jval str_method(jctx *c, jval s, const char *n, const jargs *a) {
    jval a0 = jargs_get(a, 0, NULL, jv_none()), a1 = jargs_get(a, 1, NULL, jv_none());
    if (!strcmp(n, "strip") || !strcmp(n, "lstrip") || !strcmp(n, "rstrip")) {
        if (a0.t != V_NONE && want_str(c, a0, n)) return jv_undef(NULL);
        return strip(c, s, a0, n[0] != 'r', n[0] != 'l');
    }
    if (!strcmp(n, "split") || !strcmp(n, "rsplit")) {
        jval sep = jargs_get(a, 0, "sep", jv_none());
        int64_t maxsplit = int_arg(jargs_get(a, 1, "maxsplit", jv_int(-1)), -1);
        if (n[0] == 'r' && maxsplit >= 0) return fail_v(c, "rsplit with maxsplit is not supported%s", "");
        return split(c, s, sep, maxsplit);
    }
    if (!strcmp(n, "startswith") || !strcmp(n, "endswith")) {
        int r = affix(c, s, a0, n[0] == 'e');
        return r < 0 ? jv_undef(NULL) : jv_bool(r);
    }
    if (!strcmp(n, "upper")) return recase(c, s, CASE_UPPER);
    if (!strcmp(n, "lower")) return recase(c, s, CASE_LOWER);
    if (!strcmp(n, "title")) return recase(c, s, CASE_TITLE);
    if (!strcmp(n, "capitalize")) return recase(c, s, CASE_CAPITALIZE);
    if (!strcmp(n, "replace")) return replace(c, s, a0, a1, int_arg(jargs_get(a, 2, "count", jv_int(-1)), -1));
    if (!strcmp(n, "find") || !strcmp(n, "rfind") || !strcmp(n, "count")) {
        if (want_str(c, a0, n) || jctx_work(c, (long long)(s.s.n >> 6) + 1)) return jv_undef(NULL);
        if (!strcmp(n, "count")) {
            int64_t k = 0;
            if (!a0.s.n) return jv_int((int64_t)ju_len(s.s.p, s.s.n) + 1);
            for (const char *p = s.s.p, *e = s.s.p + s.s.n; (p = memmem(p, (size_t)(e - p), a0.s.p, a0.s.n));
                 p += a0.s.n)
                if (++k, jctx_work(c, (long long)(a0.s.n >> 6) + 1)) return jv_undef(NULL);
            return jv_int(k);
        }
        const char *hit = NULL;
        if (n[0] == 'f') hit = memmem(s.s.p, s.s.n, a0.s.p, a0.s.n);
        else
            for (const char *p = s.s.p; (p = memmem(p, (size_t)(s.s.p + s.s.n - p), a0.s.p, a0.s.n)); p++)
                if (hit = p, jctx_work(c, (long long)(a0.s.n >> 6) + 1)) return jv_undef(NULL);
        return jv_int(hit ? (int64_t)ju_len(s.s.p, (size_t)(hit - s.s.p)) : -1);
    }
    if (!strcmp(n, "join")) return join(c, a0, s, jv_none());
    if (!strcmp(n, "format")) return format(c, s, a);
    if (!strcmp(n, "splitlines")) return splitlines(c, s);
    /* is* predicates */
    int all = s.s.n > 0, any_cased = 0;
    for (size_t i = 0; i < s.s.n;) {
        uint32_t cp;
        i += cp_at(s.s.p, s.s.n, i, &cp);
        utf8proc_category_t cat = utf8proc_category((int32_t)cp);
        int letter = cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
        int digit = cat == UTF8PROC_CATEGORY_ND;
        if (!strcmp(n, "isdigit")) all &= digit;
        else if (!strcmp(n, "isspace")) all &= ju_is_space(cp);
        else if (!strcmp(n, "isalpha")) all &= letter;
        else if (!strcmp(n, "isalnum"))
            all &= letter || digit || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
        else if (!strcmp(n, "islower")) {
            if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT) all = 0;
            any_cased |= cat == UTF8PROC_CATEGORY_LL;
        } else {
            if (cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT) all = 0;
            any_cased |= cat == UTF8PROC_CATEGORY_LU;
        }
    }
    if (!strcmp(n, "islower") || !strcmp(n, "isupper")) all = all && any_cased;
    return jv_bool(all);
}

static jval items_of(jctx *c, jval d) {
    jval r = jv_list_new(c, d.d->n);
    for (size_t i = 0; r.t == V_LIST && i < d.d->n; i++) {
        jval t = jv_list_new(c, 2);
        if (t.t != V_LIST || jv_list_push(c, t.l, d.d->k[i]) || jv_list_push(c, t.l, d.d->v[i]) ||
            jv_list_push(c, r.l, (t.tuple = 1, t)))
            return jv_undef(NULL);
    }
    return r;
}

jval jmethod_call(jctx *c, jmethod *m, const jargs *a) {
    jval self = m->self;
    const char *n = m->name;
    if (self.t == V_STR) return str_method(c, self, n, a);
    if (self.t == V_DICT) {
        if (!strcmp(n, "items")) return items_of(c, self);
        if (!strcmp(n, "keys") || !strcmp(n, "values")) {
            jval r = jv_list_new(c, self.d->n);
            for (size_t i = 0; r.t == V_LIST && i < self.d->n; i++)
                if (jv_list_push(c, r.l, n[0] == 'k' ? self.d->k[i] : self.d->v[i])) return jv_undef(NULL);
            return r;
        }
        if (!strcmp(n, "get")) {
            jval *v = jv_dict_find(c, self.d, jargs_get(a, 0, NULL, jv_none()));
            return v ? *v : jargs_get(a, 1, NULL, jv_none());
        }
        if (!strcmp(n, "copy")) {
            jval r = jv_dict_new(c, self.d->n);
            for (size_t i = 0; r.t == V_DICT && i < self.d->n; i++)
                if (jv_dict_set(c, r.d, self.d->k[i], self.d->v[i])) return jv_undef(NULL);
            return r;
        }
    }
    if (self.t == V_LIST) {
        if (!strcmp(n, "index") || !strcmp(n, "count")) {
            jval x = jargs_get(a, 0, NULL, jv_none());
            int64_t k = 0;
            for (size_t i = 0; i < self.l->n; i++)
                if (jv_equal(c, self.l->v[i], x)) {
                    if (n[0] == 'i') return jv_int((int64_t)i);
                    k++;
                }
            if (n[0] == 'i') return fail_v(c, "list.index(x): x not in list%s", "");
            return jv_int(k);
        }
        if (!strcmp(n, "copy")) {
            jval r = jv_list_new(c, self.l->n);
            for (size_t i = 0; r.t == V_LIST && i < self.l->n; i++)
                if (jv_list_push(c, r.l, self.l->v[i])) return jv_undef(NULL);
            return r;
        }
    }
    if (self.t == V_LOOP && !strcmp(n, "cycle")) {
        if (!a->npos) return fail_v(c, "loop.cycle needs at least one argument%s", "");
        return a->pos[self.loop->index0 % a->npos];
    }
    /* the sandbox refuses methods that modify a list or dict */
    jctx_fail(c, "access to attribute '%s' of '%s' object is unsafe", n, jv_type_name(self));
    return jv_undef(NULL);
}

/* ---- tests ------------------------------------------------------------------------------- */

int jtest(jctx *c, const char *n, jval v, const jargs *a) {
    jval x = jargs_get(a, 0, NULL, jv_undef(NULL));
    if (!strcmp(n, "defined")) return v.t != V_UNDEF;
    if (!strcmp(n, "undefined")) return v.t == V_UNDEF;
    if (!strcmp(n, "none")) return v.t == V_NONE;
    if (!strcmp(n, "string")) return v.t == V_STR;
    if (!strcmp(n, "mapping")) return v.t == V_DICT && !v.ns;
    if (!strcmp(n, "iterable")) return v.t == V_STR || v.t == V_LIST || (v.t == V_DICT && !v.ns) || v.t == V_UNDEF;
    if (!strcmp(n, "sequence")) return v.t == V_STR || v.t == V_LIST || (v.t == V_DICT && !v.ns) || v.t == V_UNDEF;
    if (!strcmp(n, "number")) return v.t == V_INT || v.t == V_FLOAT || v.t == V_BOOL;
    if (!strcmp(n, "integer")) return v.t == V_INT;
    if (!strcmp(n, "float")) return v.t == V_FLOAT;
    if (!strcmp(n, "boolean")) return v.t == V_BOOL;
    if (!strcmp(n, "true")) return v.t == V_BOOL && v.i;
    if (!strcmp(n, "false")) return v.t == V_BOOL && !v.i;
    if (!strcmp(n, "callable")) return v.t == V_MACRO || v.t == V_METHOD || v.t == V_FUNC;
    if (!strcmp(n, "odd") || !strcmp(n, "even") || !strcmp(n, "divisibleby")) {
        if (v.t != V_INT && v.t != V_BOOL)
            return jctx_fail(c, "test '%s' needs an integer, got %s", n, jv_type_name(v));
        if (n[0] == 'd') {
            if ((x.t != V_INT && x.t != V_BOOL) || !x.i)
                return jctx_fail(c, "test 'divisibleby' needs a non-zero integer argument");
            return v.i % x.i == 0;
        }
        return (v.i % 2 != 0) == (n[0] == 'o');
    }
    if (!strcmp(n, "eq") || !strcmp(n, "equalto") || !strcmp(n, "==")) return jv_equal(c, v, x);
    if (!strcmp(n, "ne") || !strcmp(n, "!=")) return !jv_equal(c, v, x);
    if (!strcmp(n, "sameas"))
        return (v.t == V_NONE || v.t == V_BOOL || v.t == V_UNDEF) ? v.t == x.t && (v.t != V_BOOL || v.i == x.i)
                                                                  : jv_equal(c, v, x) && v.t == x.t;
    if (!strcmp(n, "in")) {
        if (x.t == V_STR && v.t == V_STR) return !v.s.n || memmem(x.s.p, x.s.n, v.s.p, v.s.n) != NULL;
        if (x.t == V_LIST) {
            for (size_t i = 0; i < x.l->n; i++)
                if (jv_equal(c, x.l->v[i], v)) return 1;
            return 0;
        }
        if (x.t == V_DICT) return jv_dict_find(c, x.d, v) != NULL;
        return jctx_fail(c, "test 'in' needs a container");
    }
    if (!strcmp(n, "lower") || !strcmp(n, "upper")) {
        if (v.t != V_STR) return 0;
        jval r = recase(c, v, n[0] == 'l' ? CASE_LOWER : CASE_UPPER);
        return !c->failed && jv_equal(c, r, v);
    }
    static const char *const ord[][2] = {{"lt", "<"}, {"lessthan", "<"},    {"<", "<"}, {"le", "<="}, {"<=", "<="},
                                         {"gt", ">"}, {"greaterthan", ">"}, {">", ">"}, {"ge", ">="}, {">=", ">="}};
    for (size_t i = 0; i < sizeof ord / sizeof ord[0]; i++)
        if (!strcmp(n, ord[i][0])) {
            double p, q;
            if (!((v.t == V_INT || v.t == V_FLOAT || v.t == V_BOOL) &&
                  (x.t == V_INT || x.t == V_FLOAT || x.t == V_BOOL)))
                return jctx_fail(c, "test '%s' compares numbers only here", n);
            p = v.t == V_FLOAT ? v.f : (double)v.i;
            q = x.t == V_FLOAT ? x.f : (double)x.i;
            const char *o = ord[i][1];
            return o[0] == '<' ? (o[1] ? p <= q : p < q) : (o[1] ? p >= q : p > q);
        }
    return jctx_fail(c, "the test '%s' is not supported", n);
}

/* ---- filters -------------------------------------------------------------------------------- */

static int length_of(jctx *c, jval v, int64_t *n) {
    switch (v.t) {
    case V_STR:
        if (jctx_work(c, (long long)(v.s.n >> 6))) return -1;
        *n = (int64_t)ju_len(v.s.p, v.s.n);
        return 0;
    case V_LIST: *n = (int64_t)v.l->n; return 0;
    case V_DICT: *n = (int64_t)v.d->n; return 0;
    case V_UNDEF: *n = 0; return 0;
    default: return jctx_fail(c, "object of type '%s' has no len()", jv_type_name(v));
    }
}

static jval to_int(jctx *c, jval v, jval dflt) {
    (void)c;
    switch (v.t) {
    case V_INT: return v;
    case V_BOOL: return jv_int(v.i);
    case V_FLOAT:
        if (!isfinite(v.f) || fabs(v.f) > 9.2e18) return dflt;
        return jv_int((int64_t)v.f);
    case V_STR: {
        char buf[64];
        jval t = strip(c, v, jv_none(), 1, 1);
        if (!t.s.n || t.s.n >= sizeof buf) return dflt;
        size_t k = 0;
        for (size_t i = 0; i < t.s.n; i++)
            if (t.s.p[i] != '_') buf[k++] = t.s.p[i];
        buf[k] = 0;
        char *e;
        long long x = strtoll(buf, &e, 10);
        if (!*e) return jv_int(x);
        double f = strtod(buf, &e); /* jinja's int filter falls back to int(float(value)) */
        if (!*e && isfinite(f) && fabs(f) < 9.2e18) return jv_int((int64_t)f);
        return dflt;
    }
    default: return dflt;
    }
}

/* -1, 0, 1 for two sort keys (both strings or both numbers), -2 (render failed) otherwise */
static int key_cmp(jctx *c, jval ka, jval kb) {
    if (jctx_work(c, 1)) return -2;
    if (ka.t == V_STR && kb.t == V_STR) {
        size_t m = ka.s.n < kb.s.n ? ka.s.n : kb.s.n;
        if (jctx_work(c, (long long)(m >> 6))) return -2;
        int cmp = memcmp(ka.s.p, kb.s.p, m);
        return cmp ? (cmp < 0 ? -1 : 1) : ka.s.n < kb.s.n ? -1 : ka.s.n > kb.s.n;
    }
    int na = ka.t == V_INT || ka.t == V_FLOAT || ka.t == V_BOOL,
        nb = kb.t == V_INT || kb.t == V_FLOAT || kb.t == V_BOOL;
    if (!na || !nb) {
        jctx_fail(c, "sort: cannot order '%s' and '%s'", jv_type_name(ka), jv_type_name(kb));
        return -2;
    }
    double x = ka.t == V_FLOAT ? ka.f : (double)ka.i, y = kb.t == V_FLOAT ? kb.f : (double)kb.i;
    return x < y ? -1 : x > y;
}

static jval sorted(jctx *c, jval seq, int reverse, int case_sensitive, jval attr, int by_value_of_pair) {
    jlist items;
    if (jiterate(c, seq, &items)) return jv_undef(NULL);
    jval r = jv_list_new(c, items.n), *keys = jctx_alloc(c, (items.n + 1) * sizeof *keys);
    if (r.t != V_LIST || !keys) return jv_undef(NULL);
    for (size_t i = 0; i < items.n; i++) {
        jval k = items.v[i];
        if (by_value_of_pair >= 0) k = k.l->v[by_value_of_pair];
        if (attr.t == V_STR) k = jattr(c, k, cname(c, attr));
        if (!case_sensitive && k.t == V_STR) k = recase(c, k, CASE_LOWER);
        keys[i] = k;
        if (jv_list_push(c, r.l, items.v[i])) return jv_undef(NULL);
    }
    /* stable merge sort (Python's sort is stable) of the indices by key */
    size_t n = r.l->n, *idx = jctx_alloc(c, (n + 1) * sizeof *idx), *tmp = jctx_alloc(c, (n + 1) * sizeof *tmp);
    if (!idx || !tmp) return jv_undef(NULL);
    for (size_t i = 0; i < n; i++) idx[i] = i;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, p = lo, q = mid, k = lo;
            while (p < mid || q < hi) {
                int take_left = q >= hi;
                if (p < mid && q < hi) {
                    int cmp = key_cmp(c, keys[idx[p]], keys[idx[q]]);
                    if (cmp == -2) return jv_undef(NULL);
                    take_left = reverse ? cmp >= 0 : cmp <= 0;
                }
                tmp[k++] = take_left ? idx[p++] : idx[q++];
            }
        }
        size_t *t = idx;
        idx = tmp;
        tmp = t;
    }
    for (size_t i = 0; i < n; i++) r.l->v[i] = items.v[idx[i]];
    return r;
}

/* select / reject / selectattr / rejectattr */
static jval select_items(jctx *c, jval seq, const jargs *a, int want, int by_attr) {
    jlist items;
    if (!jv_truthy(seq)) /* jinja2 checks `if seq:` first: None selects nothing */
        return jv_list_new(c, 0);
    if (jiterate(c, seq, &items)) return jv_undef(NULL);
    int off = by_attr;
    jval attr = by_attr ? jargs_get(a, 0, NULL, jv_undef(NULL)) : jv_none();
    jval test = jargs_get(a, off, NULL, jv_none());
    if (by_attr && attr.t != V_STR) return fail_v(c, "selectattr / rejectattr need an attribute name%s", "");
    if (test.t != V_NONE && test.t != V_STR) return fail_v(c, "select: the test must be a name%s", "");
    jargs ta = {a->npos > off + 1 ? a->pos + off + 1 : NULL, a->npos > off + 1 ? a->npos - off - 1 : 0, NULL, NULL, 0};
    jval r = jv_list_new(c, 0);
    const char *tname = test.t == V_STR ? cname(c, test) : NULL, *aname = by_attr ? cname(c, attr) : NULL;
    for (size_t i = 0; r.t == V_LIST && i < items.n; i++) {
        jval v = items.v[i];
        if (c->failed || (++c->steps > c->max_steps && jctx_fail(c, "more than %ld loop iterations", c->max_steps)))
            return jv_undef(NULL);
        if (by_attr) v = jattr(c, v, aname);
        int t = tname ? jtest(c, tname, v, &ta) : jv_truthy(v);
        if (t < 0 || c->failed) return jv_undef(NULL);
        if (t == want && jv_list_push(c, r.l, items.v[i])) return jv_undef(NULL);
    }
    return r;
}

static jval map_items(jctx *c, jval seq, const jargs *a) {
    jlist items;
    if (!jv_truthy(seq)) /* as in jinja2: `if value:` before iterating */
        return jv_list_new(c, 0);
    if (jiterate(c, seq, &items)) return jv_undef(NULL);
    jval attr = jargs_get(a, -1, "attribute", jv_undef(NULL));
    jval dflt = jargs_get(a, -1, "default", jv_undef(NULL));
    jval fname = attr.t == V_UNDEF ? jargs_get(a, 0, NULL, jv_undef(NULL)) : jv_undef(NULL);
    if (attr.t != V_STR && fname.t != V_STR) return fail_v(c, "map needs a filter name or attribute=%s", "");
    jargs fa = {a->npos > 1 ? a->pos + 1 : NULL, a->npos > 1 ? a->npos - 1 : 0, NULL, NULL, 0};
    const char *name = cname(c, attr.t == V_STR ? attr : fname);
    jval r = jv_list_new(c, items.n);
    for (size_t i = 0; r.t == V_LIST && i < items.n; i++) {
        jval v;
        if (++c->steps > c->max_steps) return fail_v(c, "more than %s loop iterations", "the allowed");
        if (attr.t == V_STR) {
            v = jattr(c, items.v[i], name);
            if (v.t == V_UNDEF && dflt.t != V_UNDEF) v = dflt;
        } else v = jfilter(c, name, items.v[i], &fa);
        if (c->failed || jv_list_push(c, r.l, v)) return jv_undef(NULL);
    }
    return r;
}

static jval indent(jctx *c, jval s, const jargs *a) {
    jval w = jargs_get(a, 0, "width", jv_int(4));
    int first = jv_truthy(jargs_get(a, 1, "first", jv_bool(0)));
    int blank = jv_truthy(jargs_get(a, 2, "blank", jv_bool(0)));
    jsb pad = {.c = c}, b = {.c = c};
    if (w.t == V_STR) {
        if (jsb_put(&pad, w.s.p, w.s.n)) return jv_undef(NULL);
    } else if (w.t == V_INT) {
        for (int64_t i = 0; i < w.i && i < 1024; i++)
            if (jsb_putc(&pad, ' ')) return jv_undef(NULL);
    } else return fail_v(c, "indent: the width must be an integer or a string%s", "");
    jsb t = {.c = c};
    if (jsb_put(&t, s.s.p, s.s.n) || jsb_putc(&t, '\n')) return jv_undef(NULL);
    jval lines = splitlines(c, jsb_val(&t));
    if (lines.t != V_LIST) return jv_undef(NULL);
    if (first && jsb_put(&b, pad.p ? pad.p : "", pad.n)) return jv_undef(NULL);
    for (size_t i = 0; i < lines.l->n; i++) {
        jval ln = lines.l->v[i];
        if (i && jsb_putc(&b, '\n')) return jv_undef(NULL);
        if (i && (blank || ln.s.n) && jsb_put(&b, pad.p ? pad.p : "", pad.n)) return jv_undef(NULL);
        if (jsb_put(&b, ln.s.p, ln.s.n)) return jv_undef(NULL);
    }
    return jsb_val(&b);
}

static jval tojson(jctx *c, jval v, const jargs *a) {
    int ensure_ascii = jv_truthy(jargs_get(a, -1, "ensure_ascii", jv_bool(0)));
    jval ind = jargs_get(a, 0, "indent", jv_none());
    jval seps = jargs_get(a, -1, "separators", jv_none());
    int sort_keys = jv_truthy(jargs_get(a, -1, "sort_keys", jv_bool(0)));
    int indent = -1;
    if (ind.t == V_INT) indent = ind.i < 0 ? 0 : ind.i > 64 ? 64 : (int)ind.i;
    else if (ind.t != V_NONE) return fail_v(c, "tojson: indent must be an integer%s", "");
    const char *item_sep = indent >= 0 ? "," : ", ", *key_sep = ": ";
    if (seps.t == V_LIST && seps.l->n == 2 && seps.l->v[0].t == V_STR && seps.l->v[1].t == V_STR) {
        item_sep = cname(c, seps.l->v[0]);
        key_sep = cname(c, seps.l->v[1]);
    } else if (seps.t != V_NONE) return fail_v(c, "tojson: separators must be two strings%s", "");
    jsb b = {.c = c};
    if (jv_tojson(c, v, &b, ensure_ascii, indent, item_sep, key_sep, sort_keys, 0)) return jv_undef(NULL);
    return jsb_val(&b);
}

/* ---- filters: one function each, found by name in FILTERS ---------------------------------- */

/* arg: what the table row passes (which of two twin filters, a case mode); a filter
 * marked on_str gets str(value), as jinja2's string filters do. */
typedef jval (*filter_fn)(jctx *c, jval v, const jargs *a, int arg);

static jval f_default(jctx *c, jval v, const jargs *a, int arg) {
    (void)c, (void)arg;
    jval d = jargs_get(a, 0, "default_value", jv_str("", 0));
    int boolean = jv_truthy(jargs_get(a, 1, "boolean", jv_bool(0)));
    return v.t == V_UNDEF || (boolean && !jv_truthy(v)) ? d : v;
}

static jval f_safe(jctx *c, jval v, const jargs *a, int arg) {
    (void)c, (void)a, (void)arg;
    return v;
}

static jval f_string(jctx *c, jval v, const jargs *a, int arg) {
    (void)a, (void)arg;
    return jv_to_str(c, v);
}

static jval f_tojson(jctx *c, jval v, const jargs *a, int arg) {
    (void)arg;
    return tojson(c, v, a);
}

static jval f_length(jctx *c, jval v, const jargs *a, int arg) {
    (void)a, (void)arg;
    int64_t k = 0;
    return length_of(c, v, &k) ? jv_undef(NULL) : jv_int(k);
}

static jval f_int(jctx *c, jval v, const jargs *a, int arg) {
    (void)arg;
    return to_int(c, v, jargs_get(a, 0, "default", jv_int(0)));
}

static jval f_float(jctx *c, jval v, const jargs *a, int arg) {
    (void)arg;
    if (v.t == V_FLOAT) return v;
    if (v.t == V_INT || v.t == V_BOOL) return jv_float((double)v.i);
    if (v.t == V_STR) {
        char buf[64];
        jval t = strip(c, v, jv_none(), 1, 1);
        char *e;
        if (t.s.n && t.s.n < sizeof buf) {
            memcpy(buf, t.s.p, t.s.n);
            buf[t.s.n] = 0;
            double f = strtod(buf, &e);
            if (!*e) return jv_float(f);
        }
    }
    return jargs_get(a, 0, "default", jv_float(0));
}

static jval f_join(jctx *c, jval v, const jargs *a, int arg) {
    (void)arg;
    return join(c, v, jargs_get(a, 0, "d", jv_str("", 0)), jargs_get(a, 1, "attribute", jv_none()));
}

static jval f_list(jctx *c, jval v, const jargs *a, int arg) {
    (void)a, (void)arg;
    if (v.t == V_LIST) return v;
    jlist items;
    if (jiterate(c, v, &items)) return jv_undef(NULL);
    jval r = jv_list_new(c, items.n);
    for (size_t i = 0; r.t == V_LIST && i < items.n; i++)
        if (jv_list_push(c, r.l, items.v[i])) return jv_undef(NULL);
    return r;
}

/* arg: 0 first, 1 last */
static jval f_first_last(jctx *c, jval v, const jargs *a, int arg) {
    (void)a;
    jlist items;
    if (jiterate(c, v, &items)) return jv_undef(NULL);
    if (!items.n) return jv_undef(NULL);
    return items.v[arg ? items.n - 1 : 0];
}

static jval f_items(jctx *c, jval v, const jargs *a, int arg) {
    (void)a, (void)arg;
    if (v.t == V_UNDEF) return jv_list_new(c, 0);
    if (v.t != V_DICT || v.ns) return fail_v(c, "items: expected a mapping%s", "");
    return items_of(c, v);
}

static jval f_dictsort(jctx *c, jval v, const jargs *a, int arg) {
    (void)arg;
    if (v.t != V_DICT || v.ns) return fail_v(c, "dictsort: expected a mapping%s", "");
    int cs = jv_truthy(jargs_get(a, 0, "case_sensitive", jv_bool(0)));
    jval by = jargs_get(a, 1, "by", jv_str("key", 3));
    int rev = jv_truthy(jargs_get(a, 2, "reverse", jv_bool(0)));
    int idx = by.t == V_STR && by.s.n == 5 && !memcmp(by.s.p, "value", 5);
    return sorted(c, items_of(c, v), rev, cs, jv_none(), idx);
}

static jval f_sort(jctx *c, jval v, const jargs *a, int arg) {
    (void)arg;
    int rev = jv_truthy(jargs_get(a, 0, "reverse", jv_bool(0)));
    int cs = jv_truthy(jargs_get(a, 1, "case_sensitive", jv_bool(0)));
    return sorted(c, v, rev, cs, jargs_get(a, 2, "attribute", jv_none()), -1);
}

static jval f_reverse(jctx *c, jval v, const jargs *a, int arg) {
    (void)a, (void)arg;
    if (v.t == V_STR) return v; /* not reached by templates we know */
    jlist items;
    if (jiterate(c, v, &items)) return jv_undef(NULL);
    jval r = jv_list_new(c, items.n);
    for (size_t i = items.n; r.t == V_LIST && i-- > 0;)
        if (jv_list_push(c, r.l, items.v[i])) return jv_undef(NULL);
    return r;
}

static jval f_unique(jctx *c, jval v, const jargs *a, int arg) {
    (void)arg;
    jlist items;
    if (jiterate(c, v, &items)) return jv_undef(NULL);
    int cs = jv_truthy(jargs_get(a, 0, "case_sensitive", jv_bool(0)));
    jval r = jv_list_new(c, 0), seen = jv_list_new(c, 0);
    for (size_t i = 0; r.t == V_LIST && seen.t == V_LIST && i < items.n; i++) {
        jval k = items.v[i];
        if (!cs && k.t == V_STR) k = recase(c, k, CASE_LOWER);
        int dup = 0;
        for (size_t j = 0; j < seen.l->n && !dup; j++) dup = jv_equal(c, seen.l->v[j], k);
        if (!dup && (jv_list_push(c, seen.l, k) || jv_list_push(c, r.l, items.v[i]))) return jv_undef(NULL);
    }
    return r;
}

/* arg: 1 select, 0 reject */
static jval f_select(jctx *c, jval v, const jargs *a, int arg) { return select_items(c, v, a, arg, 0); }

/* arg: 1 selectattr, 0 rejectattr */
static jval f_selectattr(jctx *c, jval v, const jargs *a, int arg) { return select_items(c, v, a, arg, 1); }

static jval f_map(jctx *c, jval v, const jargs *a, int arg) {
    (void)arg;
    return map_items(c, v, a);
}

static jval f_round(jctx *c, jval v, const jargs *a, int arg) {
    (void)arg;
    jval prec = jargs_get(a, 0, "precision", jv_int(0)), meth = jargs_get(a, 1, "method", jv_str("common", 6));
    double x;
    if (v.t == V_INT || v.t == V_BOOL) x = (double)v.i;
    else if (v.t == V_FLOAT) x = v.f;
    else return fail_v(c, "round: expected a number%s", "");
    int64_t p = prec.t == V_INT ? prec.i : 0;
    double scale = pow(10.0, (double)(p < -308 ? -308 : p > 308 ? 308 : p));
    const char *mname = meth.t == V_STR ? cname(c, meth) : "";
    if (!strcmp(mname, "common")) /* Python's round(): halves to even */
        return jv_float(p ? nearbyint(x * scale) / scale : nearbyint(x));
    if (!strcmp(mname, "ceil")) return jv_float(ceil(x * scale) / scale);
    if (!strcmp(mname, "floor")) return jv_float(floor(x * scale) / scale);
    return fail_v(c, "round: method must be common, ceil or floor%s", "");
}

static jval f_abs(jctx *c, jval v, const jargs *a, int arg) {
    (void)a, (void)arg;
    if (v.t == V_INT || v.t == V_BOOL) return jv_int(v.i < 0 ? -v.i : v.i);
    if (v.t == V_FLOAT) return jv_float(fabs(v.f));
    return fail_v(c, "abs: expected a number%s", "");
}

static jval f_trim(jctx *c, jval s, const jargs *a, int arg) {
    (void)arg;
    jval a0 = jargs_get(a, 0, NULL, jv_undef(NULL));
    if (a0.t != V_UNDEF && a0.t != V_NONE && want_str(c, a0, "trim")) return jv_undef(NULL);
    return strip(c, s, a0.t == V_STR ? a0 : jv_none(), 1, 1);
}

/* arg: the CASE_ mode */
static jval f_recase(jctx *c, jval s, const jargs *a, int arg) {
    (void)a;
    return recase(c, s, arg);
}

static jval f_replace(jctx *c, jval s, const jargs *a, int arg) {
    (void)arg;
    jval cnt = jargs_get(a, 2, "count", jv_none());
    return replace(c, s, jv_to_str(c, jargs_get(a, 0, NULL, jv_undef(NULL))),
                   jv_to_str(c, jargs_get(a, 1, NULL, jv_undef(NULL))), cnt.t == V_INT ? cnt.i : -1);
}

static jval f_indent(jctx *c, jval s, const jargs *a, int arg) {
    (void)arg;
    return indent(c, s, a);
}

static jval f_wordcount(jctx *c, jval s, const jargs *a, int arg) {
    (void)a, (void)arg;
    jval w = split(c, s, jv_none(), -1);
    return w.t == V_LIST ? jv_int((int64_t)w.l->n) : w;
}

static const struct {
    const char *name;
    filter_fn fn;
    int arg;
    int on_str; /* 1: called with str(value) */
} FILTERS[] = {
    {"default", f_default, 0, 0},
    {"d", f_default, 0, 0},
    {"safe", f_safe, 0, 0},
    {"string", f_string, 0, 0},
    {"tojson", f_tojson, 0, 0},
    {"length", f_length, 0, 0},
    {"count", f_length, 0, 0},
    {"int", f_int, 0, 0},
    {"float", f_float, 0, 0},
    {"join", f_join, 0, 0},
    {"list", f_list, 0, 0},
    {"first", f_first_last, 0, 0},
    {"last", f_first_last, 1, 0},
    {"items", f_items, 0, 0},
    {"dictsort", f_dictsort, 0, 0},
    {"sort", f_sort, 0, 0},
    {"reverse", f_reverse, 0, 0},
    {"unique", f_unique, 0, 0},
    {"select", f_select, 1, 0},
    {"reject", f_select, 0, 0},
    {"selectattr", f_selectattr, 1, 0},
    {"rejectattr", f_selectattr, 0, 0},
    {"map", f_map, 0, 0},
    {"round", f_round, 0, 0},
    {"abs", f_abs, 0, 0},
    {"trim", f_trim, 0, 1},
    {"upper", f_recase, CASE_UPPER, 1},
    {"lower", f_recase, CASE_LOWER, 1},
    {"title", f_recase, CASE_TITLE, 1},
    {"capitalize", f_recase, CASE_CAPITALIZE, 1},
    {"replace", f_replace, 0, 1},
    {"indent", f_indent, 0, 1},
    {"wordcount", f_wordcount, 0, 1},
};

jval jfilter(jctx *c, const char *n, jval v, const jargs *a) {
    for (size_t i = 0; i < sizeof FILTERS / sizeof *FILTERS; i++) {
        if (strcmp(FILTERS[i].name, n)) continue;
        if (FILTERS[i].on_str) {
            v = jv_to_str(c, v);
            if (c->failed) return jv_undef(NULL);
        }
        return FILTERS[i].fn(c, v, a, FILTERS[i].arg);
    }
    return fail_v(c, "the filter '%s' is not supported", n);
}

/* ---- globals ------------------------------------------------------------------------------- */

enum { G_RANGE, G_NAMESPACE, G_DICT, G_RAISE, G_STRFTIME, G_COUNT };
static const char *const globals[G_COUNT] = {"range", "namespace", "dict", "raise_exception", "strftime_now"};

int jglobal_lookup(const char *name) {
    for (int i = 0; i < G_COUNT; i++)
        if (!strcmp(globals[i], name)) return i;
    return -1;
}

jval jglobal_call(jctx *c, int fn, const jargs *a) {
    switch (fn) {
    case G_RANGE: {
        int64_t v[3] = {0, 0, 1};
        if (a->npos < 1 || a->npos > 3 || a->nkw) return fail_v(c, "range takes 1 to 3 integers%s", "");
        for (int i = 0; i < a->npos; i++)
            if (a->pos[i].t != V_INT && a->pos[i].t != V_BOOL) return fail_v(c, "range takes integers%s", "");
        if (a->npos == 1) v[1] = a->pos[0].i;
        else
            for (int i = 0; i < a->npos; i++) v[i] = a->pos[i].i;
        if (!v[2]) return fail_v(c, "range() arg 3 must not be zero%s", "");
        double count = ceil(((double)v[1] - (double)v[0]) / (double)v[2]);
        if (count > 100000) return fail_v(c, "range of more than 100000 items%s", "");
        jval r = jv_list_new(c, count > 0 ? (size_t)count : 0);
        for (int64_t k = v[0]; r.t == V_LIST && (v[2] > 0 ? k < v[1] : k > v[1]); k += v[2])
            if (jv_list_push(c, r.l, jv_int(k))) return jv_undef(NULL);
        return r;
    }
    case G_NAMESPACE:
    case G_DICT: {
        jval r = jv_dict_new(c, 0);
        if (r.t != V_DICT) return r;
        r.ns = fn == G_NAMESPACE;
        for (int i = 0; i < a->npos; i++) {
            if (a->pos[i].t != V_DICT) return fail_v(c, "%s() takes keyword arguments or a dict", globals[fn]);
            for (size_t k = 0; k < a->pos[i].d->n; k++)
                if (jv_dict_set(c, r.d, a->pos[i].d->k[k], a->pos[i].d->v[k])) return jv_undef(NULL);
        }
        for (int k = 0; k < a->nkw; k++)
            if (jv_dict_set(c, r.d, jv_str(a->kw[k], strlen(a->kw[k])), a->kwv[k])) return jv_undef(NULL);
        return r;
    }
    case G_RAISE: {
        jval m = jv_to_str(c, jargs_get(a, 0, NULL, jv_str("", 0)));
        if (!c->failed) jctx_fail(c, "raise_exception: %.*s", (int)(m.s.n > 400 ? 400 : m.s.n), m.s.p);
        return jv_undef(NULL);
    }
    case G_STRFTIME: {
        jval f = jargs_get(a, 0, NULL, jv_undef(NULL));
        if (f.t != V_STR) return fail_v(c, "strftime_now needs a format string%s", "");
        time_t t = c->now >= 0 ? (time_t)c->now : time(NULL);
        struct tm tm;
        if (!localtime_r(&t, &tm)) return fail_v(c, "strftime_now: no local time%s", "");
        char fmt[256], out[512];
        if (f.s.n >= sizeof fmt) return fail_v(c, "strftime_now: format too long%s", "");
        memcpy(fmt, f.s.p, f.s.n);
        fmt[f.s.n] = 0;
        size_t n = f.s.n ? strftime(out, sizeof out, fmt, &tm) : 0;
        return jv_cstr(c, n ? out : "");
    }
    }
    return jv_undef(NULL);
}
