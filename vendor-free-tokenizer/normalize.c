/* normalize.c - normalizers (NFC / NFKC / NFD / NFKD through utf8proc,
 * Replace of a literal string, Prepend, Lowercase) and the Unicode character
 * tests the other stages need. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tok_internal.h"
#include "unicode_delta.h"

size_t tok_utf8_get(const char *s, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    if (u[0] < 0xE0) {
        *cp = ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
        return 2;
    }
    if (u[0] < 0xF0) {
        *cp = ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
        return 3;
    }
    *cp = ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) | ((uint32_t)(u[2] & 0x3F) << 6) |
          (u[3] & 0x3F);
    return 4;
}

int tok_is_numeric(uint32_t cp) {
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

int tok_is_space(uint32_t cp) {
    return (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

void tok_norm_free(tok_norm *n) {
    free(n->a);
    free(n->b);
}

/* Code points the reference's (older) normalization data leaves alone while
 * utf8proc's newer data would decompose, reorder or compose them
 * (unicode_delta.h). The text around each is normalized on its own. */
static const uint32_t BARRIERS[][2] = {TOK_NORM_BARRIERS};

static int is_barrier(uint32_t cp) {
    size_t lo = 0, hi = sizeof BARRIERS / sizeof *BARRIERS;
    if (cp < BARRIERS[0][0]) return 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < BARRIERS[mid][0]) hi = mid;
        else if (cp > BARRIERS[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

static int map_piece(utf8proc_option_t opt, const char *s, size_t n, tok_buf *out) {
    if (!n) return 0;
    utf8proc_uint8_t *res = NULL;
    utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &res, opt);
    if (m < 0) return -1;
    int rc = tok_buf_put(out, res, (size_t)m);
    free(res);
    return rc;
}

static int unicode_form(int kind, const char *s, size_t n, tok_buf *out) {
    utf8proc_option_t opt = UTF8PROC_STABLE;
    if (kind == NORM_NFC) opt |= UTF8PROC_COMPOSE;
    else if (kind == NORM_NFKC) opt |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    else if (kind == NORM_NFD) opt |= UTF8PROC_DECOMPOSE;
    else opt |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    out->len = 0;
    size_t start = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t L = tok_utf8_get(s + i, &cp);
        if (cp >= 0x7FD && is_barrier(cp)) {
            if (map_piece(opt, s + start, i - start, out) || tok_buf_put(out, s + i, L)) return -1;
            start = i + L;
        }
        i += L;
    }
    if (map_piece(opt, s + start, n - start, out)) return -1;
    return tok_buf_put(out, "", 0);
}

static int replace_all(const tok_norm *nm, const char *s, size_t n, tok_buf *out) {
    out->len = 0;
    size_t i = 0;
    while (i < n) {
        if (i + nm->alen <= n && !memcmp(s + i, nm->a, nm->alen)) {
            if (tok_buf_put(out, nm->b, nm->blen)) return -1;
            i += nm->alen;
        } else if (tok_buf_put(out, s + i, 1)) {
            return -1;
        } else {
            i++;
        }
    }
    return tok_buf_put(out, "", 0);
}

static int lowercase(const char *s, size_t n, tok_buf *out) {
    out->len = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += tok_utf8_get(s + i, &cp);
        char enc[4];
        size_t k = tok_utf8_put((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), enc);
        if (tok_buf_put(out, enc, k)) return -1;
    }
    return tok_buf_put(out, "", 0);
}

int tok_normalize(const tokenizer *t, const char *s, size_t n, tok_buf *out, char *err) {
    tok_buf a = {0}, b = {0};
    const char *cur = s;
    size_t cur_n = n;
    int rc = 0;
    for (size_t k = 0; k < t->n_norms && !rc; k++) {
        const tok_norm *nm = &t->norms[k];
        tok_buf *dst = (cur == a.p) ? &b : &a;
        switch (nm->kind) {
        case NORM_REPLACE: rc = replace_all(nm, cur, cur_n, dst); break;
        case NORM_PREPEND:
            dst->len = 0; /* the reference prepends only to non-empty text */
            rc = (cur_n && tok_buf_put(dst, nm->a, nm->alen)) || tok_buf_put(dst, cur, cur_n);
            break;
        case NORM_LOWERCASE: rc = lowercase(cur, cur_n, dst); break;
        default: rc = unicode_form(nm->kind, cur, cur_n, dst);
        }
        cur = dst->p;
        cur_n = dst->len;
    }
    out->len = 0;
    if (!rc) rc = tok_buf_put(out, cur ? cur : "", cur_n);
    tok_buf_free(&a);
    tok_buf_free(&b);
    if (rc) tok_errf(err, "encode: normalizer failed (out of memory or invalid UTF-8)");
    return rc ? -1 : 0;
}
