/* fuzz_grammar.c - libFuzzer target: the GBNF parser and matcher (src/grammar/grammar.c) and the token
 * mask (src/grammar/token_mask.c) on untrusted grammar text. Input: the grammar text, then optionally a
 * NUL byte and text to match, fed byte by byte and as the tokens of a small fixed vocabulary
 * (single bytes, pairs, a multi-byte character and a stop token). Parsing must fail with one
 * line or give a grammar whose states stay within the limits; masks must agree with the bytes;
 * gm_min_bytes must be the exact shortest completion (0 exactly when the state can end; no byte
 * shortens it by more than one, and some byte by exactly one) and the token-level views of it
 * (tm_min_bytes_after, tm_keep_within) must agree with it. */
#include "fuzz_util.h"

#include "grammar/grammar.h"
#include "grammar/token_mask.h"

static const char *const VOCAB[] = {"</s>", "a", "b", "{", "}", "\"", " ", "\n", "ab", "\":", "x\"", "12",
                                    "\xc3", "\xa9", "\xc3\xa9", "\xe6\x97\xa5", "root", "-", "\\", ""};
#define NV ((int)(sizeof VOCAB / sizeof *VOCAB))

static const char *piece(void *u, int32_t id, size_t *n) {
    (void)u;
    *n = strlen(VOCAB[id]);
    return VOCAB[id];
}
static int is_stop(void *u, int32_t id) { return (void)u, id == 0; }

/* The invariants of gm_min_bytes on state a[0..k) (scratch: b, nodes made here are dropped). */
static void check_min_bytes(gm *m, const int32_t *a, int k, int32_t *b) {
    int32_t mb = gm_min_bytes(m, a, k), mark = gm_n_nodes(m);
    if ((mb == 0) != (a[0] == GM_DONE)) abort();
    int shortest = mb == 0 || mb == GRAMMAR_NO_END;
    for (int byte = 0; byte < 256; byte++) {
        int n = gm_advance(m, a, k, (uint8_t)byte, b);
        if (n < 0) break;
        int32_t after = n ? gm_min_bytes(m, b, n) : -1;
        if (n && mb != GRAMMAR_NO_END && after < mb - 1) abort();
        if (n && after == mb - 1) shortest = 1;
    }
    gm_truncate(m, mark);
    if (!shortest && !gm_failed(m)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t glen = nul ? (size_t)(nul - data) : size;
    char err[256];
    grammar *g;
    if (grammar_parse((const char *)data, glen, &g, err, sizeof err)) {
        if (memchr(err, '\n', strnlen(err, sizeof err))) abort();
        return 0;
    }
    const uint8_t *in = nul ? nul + 1 : (const uint8_t *)"";
    size_t n = nul ? size - glen - 1 : 0;
    /* bytes through the matcher */
    gm *m = gm_new(g);
    int32_t *a = malloc(GRAMMAR_MAX_STACKS * sizeof *a), *b = malloc(GRAMMAR_MAX_STACKS * sizeof *b);
    int k = m ? gm_start(m, a) : -1;
    for (size_t i = 0; i < n && k > 0; i++) {
        if (i < 8) check_min_bytes(m, a, k, b);
        k = gm_advance(m, a, k, in[i], b);
        int32_t *t = a;
        a = b, b = t;
    }
    free(a), free(b);
    gm_free(m);
    /* tokens: every accepted token must have been in the mask, and the mask must say the same as
     * accepting each token */
    tm_vocab *v = tm_vocab_new(NV, piece, is_stop, NULL);
    tm_matcher *t;
    if (v && !tm_matcher_new(g, v, &t, err, sizeof err)) {
        uint32_t mask[1];
        for (size_t i = 0; i < n && i < 64; i++) {
            int c = tm_fill_mask(t, mask, err, sizeof err);
            if (c <= 0) break;
            int32_t now = tm_min_bytes(t), budget = in[i] % 8;
            uint32_t fit[1];
            if (tm_keep_within(t, mask, fit, budget) < 0) break;
            for (int id = 0; id < NV; id++) {
                int ok = tm_accept(t, id) == 0;
                if (ok) tm_rollback(t, 1);
                if (ok != (int)((mask[0] >> id) & 1)) abort();
                int32_t after = tm_min_bytes_after(t, id);
                if (ok != (after >= 0) || (ok && now > (int32_t)strlen(VOCAB[id]) + after)) abort();
                if ((int)((fit[0] >> id) & 1) != (ok && after <= budget)) abort();
            }
            int id = in[i] % NV;
            if ((mask[0] >> id) & 1) tm_accept(t, id);
        }
        tm_matcher_free(t);
    }
    tm_vocab_free(v);
    grammar_free(g);
    return 0;
}
