/* pretok.c - pre-tokenizers: Split (PCRE2 regex), ByteLevel, Digits, Metaspace.
 *
 * Regexes run with PCRE2_UTF | PCRE2_UCP (\p{L}, \p{N}, Unicode \s) and JIT.
 * One dialect difference with the reference's Oniguruma is patched when the
 * pattern is compiled: PCRE2's Unicode \s also matches U+180E (MONGOLIAN VOWEL
 * SEPARATOR, a space before Unicode 6.3), Oniguruma's matches exactly the
 * White_Space property. So \s becomes that explicit set, \S its complement.
 * And PCRE2's Unicode tables are older than the reference's: \p{L} and \p{N}
 * get the missing ranges from unicode_delta.h (generated, see there). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"
#include "unicode_delta.h"

/* Unicode White_Space, as a character-class body. */
#define WS_SET "\\t-\\r\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}"

const char TOK_RE_GPT2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char TOK_RE_LLAMA3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char TOK_RE_QWEN2[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* Qwen3.5 / 3.6: Qwen2's with combining marks (\p{M}) in the letter run and out of the punctuation run. */
const char TOK_RE_QWEN35[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* o200k (gpt-4o, gpt-oss): cased letter runs with their marks, a contraction on either, 1-3 digits. */
const char TOK_RE_O200K[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* Rewrite \s and \S as the explicit White_Space set, and add to \p{L} / \p{N}
 * the code points the reference's newer Unicode tables have (unicode_delta.h). */
static char *patch_space_classes(const char *re, size_t n) {
    size_t grow = sizeof WS_SET + sizeof TOK_DELTA_L + sizeof TOK_DELTA_N + 8;
    char *out = malloc(n * grow + 1), *o = out;
    int in_class = 0;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = re[i];
        if (c == '\\' && i + 1 < n) {
            char d = re[i + 1];
            i++;
            if (d == 's') {
                const char *r = in_class ? WS_SET : "[" WS_SET "]";
                o += strlen(strcpy(o, r));
            } else if (d == 'p' && i + 3 < n && (re[i + 2] == 'L' || re[i + 2] == 'N') && re[i + 1] == '{' &&
                       re[i + 3] == '}') {
                const char *delta = re[i + 2] == 'L' ? TOK_DELTA_L : TOK_DELTA_N;
                o += sprintf(o, "%s\\p{%c}%s%s", in_class ? "" : "[", re[i + 2], delta, in_class ? "" : "]");
                i += 3;
            } else if (d == 'S' && !in_class) {
                o += strlen(strcpy(o, "[^" WS_SET "]"));
            } else {
                *o++ = c;
                *o++ = d;
            }
            continue;
        }
        if (c == '[' && !in_class) {
            in_class = 1;
            *o++ = c;
            if (i + 1 < n && re[i + 1] == '^') *o++ = re[++i];
            if (i + 1 < n && re[i + 1] == ']') /* a leading ']' is literal */
                *o++ = re[++i];
            continue;
        }
        if (c == ']' && in_class) in_class = 0;
        *o++ = c;
    }
    *o = 0;
    return out;
}

int tok_pre_compile(tok_pre *p, const char *pattern, size_t len, char *err) {
    char *re = patch_space_classes(pattern, len);
    if (!re) {
        tok_errf(err, "out of memory compiling a pre-tokenizer regex");
        return -1;
    }
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    free(re);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        tok_errf(err, "pre-tokenizer regex \"%.*s\": PCRE2 error at offset %zu: %s", (int)len, pattern, (size_t)eo,
                 (const char *)msg);
        return -1;
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* falls back to the interpreter if JIT is unavailable */
    p->re = code;
    return 0;
}

void tok_pre_free(tok_pre *p) {
    pcre2_code_free((pcre2_code *)p->re);
    p->re = NULL;
}

void *tok_match_data_new(void) { return pcre2_match_data_create(1, NULL); }

void tok_match_data_free(void *md) { pcre2_match_data_free((pcre2_match_data *)md); }

static int push_span(tok_ids *v, size_t off, size_t len) {
    if (!len) return 0;
    return tok_ids_push(v, (int32_t)off) || tok_ids_push(v, (int32_t)len);
}

/* The pieces of a Split, from its segments (matches and the non-empty gaps between them, in
 * order) as HF tokenizers' SplitDelimiterBehavior folds them: Isolated keeps every segment,
 * Removed drops the matches, MergedWithPrevious appends a match to the piece before it (unless
 * that piece ended with a match too), MergedWithNext prepends a match to the gap after it (a match
 * followed by a match or by nothing stands alone), Contiguous joins runs of matches. At most one
 * piece is held back (`pending`) until the next segment says how it ends. */
typedef struct {
    int behavior;
    tok_ids *out;
    size_t ps, pe;  /* the held-back piece [ps, pe) */
    int have;       /* a piece is held back */
    int pend_match; /* MergedWithNext: the held-back piece is a lone match */
    int prev_match; /* the previous segment was a match */
} split_fold;

static int fold_flush(split_fold *f) {
    int rc = f->have ? push_span(f->out, f->ps, f->pe - f->ps) : 0;
    f->have = f->pend_match = 0;
    return rc;
}

static int fold_segment(split_fold *f, size_t s, size_t e, int match) {
    switch (f->behavior) {
    case SPLIT_REMOVED: return match ? 0 : push_span(f->out, s, e - s);
    case SPLIT_MERGED_PREV:
        if (match && !f->prev_match && f->have) {
            f->pe = e;
        } else {
            if (fold_flush(f)) return -1;
            f->ps = s, f->pe = e, f->have = 1;
        }
        break;
    case SPLIT_MERGED_NEXT:
        if (f->have && f->pend_match && !match) { /* the lone match joins this gap */
            f->pe = e;
            f->pend_match = 0;
            if (fold_flush(f)) return -1;
        } else {
            if (fold_flush(f)) return -1;
            f->ps = s, f->pe = e, f->have = 1, f->pend_match = match;
            if (!match && fold_flush(f)) return -1;
        }
        break;
    case SPLIT_CONTIGUOUS:
        if (f->have && match == f->prev_match) {
            f->pe = e;
        } else {
            if (fold_flush(f)) return -1;
            f->ps = s, f->pe = e, f->have = 1;
        }
        break;
    default: /* SPLIT_ISOLATED */ return push_span(f->out, s, e - s);
    }
    f->prev_match = match;
    return 0;
}

/* Split s[off, off+len) of the arena by regex into pieces (see split_fold). */
static int split_regex(const tok_pre *p, const char *base, size_t off, size_t len, tok_ids *out, pcre2_match_data *md) {
    pcre2_code *re = p->re;
    PCRE2_SPTR subj = (PCRE2_SPTR)(base + off);
    size_t pos = 0, last = 0;
    split_fold f = {.behavior = p->behavior, .out = out};
    while (pos <= len) {
        int rc = pcre2_match(re, subj, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* empty match: step one character */
            if (ms >= len) break;
            pos = ms + 1;
            while (pos < len && ((unsigned char)subj[pos] & 0xC0) == 0x80) pos++;
            continue;
        }
        if (ms > last && fold_segment(&f, off + last, off + ms, 0)) return -1;
        if (fold_segment(&f, off + ms, off + me, 1)) return -1;
        last = pos = me;
    }
    if (len > last && fold_segment(&f, off + last, off + len, 0)) return -1;
    return fold_flush(&f);
}

/* Digits: runs of \p{N} (or single digits) isolated. */
static int split_digits(const tok_pre *p, const char *base, size_t off, size_t len, tok_ids *out) {
    const unsigned char *s = (const unsigned char *)base + off;
    size_t i = 0, start = 0;
    int prev_digit = -1;
    while (i < len) {
        size_t L = tok_utf8_len(s + i, len - i);
        uint32_t cp = s[i];
        if (L == 2) cp = ((uint32_t)(s[i] & 0x1F) << 6) | (s[i + 1] & 0x3F);
        else if (L == 3) cp = ((uint32_t)(s[i] & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
        else if (L == 4)
            cp = ((uint32_t)(s[i] & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
                 ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
        int digit = tok_is_numeric(cp);
        if (i > start && (digit != prev_digit || (digit && p->individual))) {
            if (push_span(out, off + start, i - start)) return -1;
            start = i;
        }
        prev_digit = digit;
        i += L ? L : 1;
    }
    return push_span(out, off + start, len - start);
}

/* Metaspace: ' ' -> U+2581, optional U+2581 prefix; split before each U+2581. */
static int metaspace(const tok_pre *p, tok_buf *arena, size_t off, size_t len, int first, tok_ids *out) {
    static const char MS[] = "\xE2\x96\x81";
    size_t start = arena->len;
    int prepend = p->prepend == 2 || (p->prepend == 1 && first);
    if (prepend && !(len >= 3 && !memcmp(arena->p + off, MS, 3)) && !(len && arena->p[off] == ' '))
        if (tok_buf_put(arena, MS, 3)) return -1;
    for (size_t i = 0; i < len; i++) {
        char c = arena->p[off + i];
        if (c == ' ' ? tok_buf_put(arena, MS, 3) : tok_buf_put(arena, &c, 1)) return -1;
    }
    size_t end = arena->len, piece = start;
    if (p->split)
        for (size_t i = start + 1; i + 3 <= end; i++)
            if (!memcmp(arena->p + i, MS, 3)) {
                if (push_span(out, piece, i - piece)) return -1;
                piece = i;
            }
    return push_span(out, piece, end - piece);
}

/* ByteLevel: optional ' ' prefix, then (use_regex) the GPT-2 split. */
static int bytelevel(const tok_pre *p, tok_buf *arena, size_t off, size_t len, tok_ids *out, pcre2_match_data *md) {
    if (p->add_prefix_space && !(len && arena->p[off] == ' ')) {
        size_t start = arena->len;
        if (tok_buf_put(arena, " ", 1) || tok_buf_reserve(arena, len)) return -1;
        memcpy(arena->p + arena->len, arena->p + off, len); /* reserve kept the source valid */
        arena->len += len;
        off = start;
        len += 1;
    }
    if (p->re) return split_regex(p, arena->p, off, len, out, md);
    return push_span(out, off, len);
}

int tok_pretokenize(const tokenizer *t, const char *s, size_t n, int first, tok_buf *arena, tok_ids *spans,
                    tok_ids *tmp, void *md, char *err) {
    arena->len = 0;
    spans->len = 0;
    if (tok_buf_put(arena, s, n) || push_span(spans, 0, n)) goto oom;
    for (size_t k = 0; k < t->n_pres; k++) {
        const tok_pre *p = &t->pres[k];
        if (p->kind == PRE_BYTELEVEL && !p->re && !p->add_prefix_space)
            continue; /* the byte map itself is applied by BPE */
        tmp->len = 0;
        for (size_t i = 0; i < spans->len; i += 2) {
            size_t off = (size_t)spans->p[i], len = (size_t)spans->p[i + 1];
            int rc = 0;
            switch (p->kind) {
            case PRE_SPLIT: rc = split_regex(p, arena->p, off, len, tmp, md); break;
            case PRE_BYTELEVEL: rc = bytelevel(p, arena, off, len, tmp, md); break;
            case PRE_DIGITS: rc = split_digits(p, arena->p, off, len, tmp); break;
            case PRE_METASPACE: rc = metaspace(p, arena, off, len, first && i == 0, tmp); break;
            }
            if (rc) goto oom;
        }
        tok_ids sw = *spans;
        *spans = *tmp;
        *tmp = sw;
    }
    return 0;
oom:
    tok_errf(err, "encode: out of memory in the pre-tokenizer");
    return -1;
}
