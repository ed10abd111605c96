/* utf8.c - UTF-8 validation, partial-sequence detection and lossy decoding.
 *
 * The rules follow Unicode's "maximal subpart" practice (also Rust's
 * String::from_utf8_lossy, which the reference decoder uses): an invalid
 * sequence is replaced by one U+FFFD per maximal prefix of a well-formed
 * sequence, so "\xE2\x82" followed by "A" gives one U+FFFD, then "A". */
#include "tok_internal.h"

/* Valid range of the second byte for lead byte c (Table 3-7 of Unicode). */
static int second_ok(unsigned char c, unsigned char d) {
    if (c == 0xE0) return d >= 0xA0 && d <= 0xBF;
    if (c == 0xED) return d >= 0x80 && d <= 0x9F;
    if (c == 0xF0) return d >= 0x90 && d <= 0xBF;
    if (c == 0xF4) return d >= 0x80 && d <= 0x8F;
    return d >= 0x80 && d <= 0xBF;
}

static size_t seq_len(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

/* How many bytes of s (up to n) form a prefix of a valid sequence, capped at
 * the sequence length. Returns the full length when complete. */
static size_t valid_prefix(const unsigned char *s, size_t n, size_t *need) {
    size_t L = seq_len(s[0]);
    *need = L;
    if (L <= 1) return L;
    size_t k = 1;
    if (k < n && second_ok(s[0], s[1])) {
        k = 2;
        while (k < L && k < n && (s[k] & 0xC0) == 0x80) k++;
    }
    return k;
}

size_t tok_utf8_len(const unsigned char *s, size_t n) {
    if (!n) return 0;
    size_t need, k = valid_prefix(s, n, &need);
    return (need && k == need) ? need : 0;
}

size_t tok_utf8_check(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t L = tok_utf8_len(u + i, n - i);
        if (!L) return i;
        i += L;
    }
    return n;
}

size_t tok_utf8_partial(const unsigned char *s, size_t n) {
    if (!n) return 0;
    size_t need, k = valid_prefix(s, n, &need);
    if (need <= 1 || k == need) return 0;
    /* truncated only if we ran out of input, not if a byte broke the pattern */
    return k == n ? k : 0;
}

size_t tok_utf8_put(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

int tok_utf8_lossy(tok_buf *b, const char *s, size_t n) {
    static const char repl[3] = {(char)0xEF, (char)0xBF, (char)0xBD};
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0; /* run: start of the pending valid stretch */
    while (i < n) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t need, k = valid_prefix(u + i, n - i, &need);
        if (need && k == need) {
            i += need;
            continue;
        }
        if (tok_buf_put(b, s + run, i - run) || tok_buf_put(b, repl, 3)) return -1;
        i += k ? k : 1;
        run = i;
    }
    return tok_buf_put(b, s + run, n - run);
}
