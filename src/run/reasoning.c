/* reasoning.c - thinking output kept apart from the answer (llmgen.h: llmgen_reasoning_*).
 *
 * Two formats, told apart by the output itself (and the prompt's end):
 *   <think>   Qwen3, Qwen3.5, DeepSeek-R1 distills: "<think>R</think>" first, then the answer (its
 *             leading white space dropped). A prompt that ends with "<think>" and white space (the
 *             generation prompt of Qwen3.5's and DeepSeek-R1's templates) starts the output inside.
 *   harmony   gpt-oss: "<|channel|>analysis<|message|>R<|end|>", maybe more analysis messages
 *             ("<|start|>assistant<|channel|>analysis<|message|>R2<|end|>"), then
 *             "<|start|>assistant<|channel|>final<|message|>A". A header of another channel
 *             (commentary: a tool call) ends the reasoning and stays in the answer byte for byte.
 * Any other output is all answer, byte for byte. Text is held back only while it may be the
 * start of a marker (at most HOLD_MAX bytes), so a stream fed piece by piece gives the same
 * bytes as the whole text fed at once (fuzz_openai checks it). */
#include <stdlib.h>
#include <string.h>

#include "llmgen.h"

#define THINK_OPEN "<think>"
#define THINK_CLOSE "</think>"
#define H_CHANNEL "<|channel|>"
#define H_MESSAGE "<|message|>"
#define H_END "<|end|>"
#define H_NEXT "<|start|>assistant" H_CHANNEL
#define HOLD_MAX 96 /* longest header waited for: "<|start|>assistant<|channel|>" + a channel name + "<|message|>" */
#define WS " \t\r\n"

enum { S_START, S_THINK, S_HARMONY, S_HARMONY_NEXT, S_ANSWER };

struct llmgen_reasoning {
    int state;
    int harmony;                  /* the output is harmony's (gpt-oss) */
    int strip;                    /* drop the answer's leading white space (after </think>) */
    int seen;                     /* some reasoning was seen */
    size_t pos;                   /* offset in the whole output of hold[0] */
    llmgen_reasoning_span span;   /* where things are in the whole output */
    char *hold, *r, *c;           /* held back; this call's reasoning and answer */
    size_t n_hold, cap_hold, n_r, cap_r, n_c, cap_c;
};

static int grow(char **b, size_t *n, size_t *cap, const char *s, size_t k) {
    if (*n + k + 1 > *cap) {
        size_t c = *cap ? *cap : 64;
        while (c < *n + k + 1) c *= 2;
        char *p = realloc(*b, c);
        if (!p) return -1;
        *b = p;
        *cap = c;
    }
    if (k) memcpy(*b + *n, s, k);
    *n += k;
    (*b)[*n] = '\0';
    return 0;
}

static void drop(llmgen_reasoning *t, size_t k) {
    memmove(t->hold, t->hold + k, t->n_hold - k);
    t->n_hold -= k;
    t->pos += k;
}

static size_t span_ws(const char *s, size_t n) {
    size_t k = 0;
    while (k < n && s[k] && strchr(WS, s[k])) k++;
    return k;
}

/* s[0..n) is a proper prefix of lit (more bytes may make it lit). */
static int prefix_of(const char *s, size_t n, const char *lit) {
    size_t l = strlen(lit);
    return n < l && !memcmp(s, lit, n);
}

static int starts(const char *s, size_t n, const char *lit) {
    size_t l = strlen(lit);
    return n >= l && !memcmp(s, lit, l);
}

static int to_reasoning(llmgen_reasoning *t, size_t k) {
    if (!k) return 0;
    if (!t->seen) t->span.reasoning_begin = t->pos;
    t->seen = 1;
    t->span.reasoning_end = t->pos + k;
    if (grow(&t->r, &t->n_r, &t->cap_r, t->hold, k)) return -1;
    drop(t, k);
    return 0;
}

static void answer_from_here(llmgen_reasoning *t) {
    t->state = S_ANSWER;
    t->span.answer_begin = t->pos;
}

/* Reasoning up to the closing marker, or all that cannot be part of one. 1: closed. */
static int reason(llmgen_reasoning *t, const char *close, int final) {
    size_t cl = strlen(close);
    char *e = t->n_hold ? memmem(t->hold, t->n_hold, close, cl) : NULL;
    if (e) {
        if (to_reasoning(t, (size_t)(e - t->hold))) return -1;
        drop(t, cl);
        return 1;
    }
    size_t cut = final ? t->n_hold : t->n_hold > cl - 1 ? t->n_hold - (cl - 1) : 0; /* a marker may be cut */
    while (!final && cut > 0 && ((unsigned char)t->hold[cut] & 0xC0) == 0x80) cut--;
    return to_reasoning(t, cut) ? -1 : 0;
}

/* A harmony header NAME<|message|> at hold[0] (after the text `lead`): 1 analysis, 2 final, 3 another
 * channel, 0 wait for more, -2 not a header. Drops the header of analysis and final. */
static int header(llmgen_reasoning *t, const char *lead, int final) {
    size_t ll = strlen(lead);
    if (t->n_hold < ll) return prefix_of(t->hold, t->n_hold, lead) && !final ? 0 : -2;
    if (memcmp(t->hold, lead, ll)) return -2;
    size_t win = t->n_hold < HOLD_MAX ? t->n_hold : HOLD_MAX; /* the same window, fed whole or in pieces */
    char *m = memmem(t->hold + ll, win - ll, H_MESSAGE, strlen(H_MESSAGE));
    if (!m) return t->n_hold < HOLD_MAX && !final ? 0 : -2;
    size_t name = (size_t)(m - t->hold) - ll, all = (size_t)(m - t->hold) + strlen(H_MESSAGE);
    if (name == 8 && !memcmp(t->hold + ll, "analysis", 8)) return drop(t, all), 1;
    if (name == 5 && !memcmp(t->hold + ll, "final", 5)) return drop(t, all), 2;
    return 3;
}

llmgen_status llmgen_reasoning_new(const char *prompt, llmgen_reasoning **out) {
    llmgen_reasoning *t = calloc(1, sizeof *t);
    *out = NULL;
    if (!t) return LLMGEN_E_NOMEM;
    if (prompt) {
        size_t n = strlen(prompt), l = strlen(THINK_OPEN);
        while (n && strchr(WS, prompt[n - 1])) n--;
        if (n >= l && !memcmp(prompt + n - l, THINK_OPEN, l)) t->state = S_THINK, t->seen = 1;
    }
    *out = t;
    return LLMGEN_OK;
}

void llmgen_reasoning_free(llmgen_reasoning *t) {
    if (!t) return;
    free(t->hold);
    free(t->r);
    free(t->c);
    free(t);
}

llmgen_status llmgen_reasoning_feed(llmgen_reasoning *t, const char *s, size_t n, int final,
                                    llmgen_reasoning_piece *out) {
    t->n_r = t->n_c = 0;
    memset(out, 0, sizeof *out);
    if (grow(&t->hold, &t->n_hold, &t->cap_hold, s, n) || grow(&t->r, &t->n_r, &t->cap_r, "", 0) ||
        grow(&t->c, &t->n_c, &t->cap_c, "", 0))
        return LLMGEN_E_NOMEM;
    for (int more = 1; more;) {
        more = 0;
        if (t->state == S_START) {
            size_t ws = span_ws(t->hold, t->n_hold);
            const char *p = t->hold + ws;
            size_t k = t->n_hold - ws;
            if (!final && (prefix_of(p, k, THINK_OPEN) || prefix_of(p, k, H_CHANNEL) || !k)) break;
            if (starts(p, k, THINK_OPEN)) {
                drop(t, ws + strlen(THINK_OPEN));
                t->state = S_THINK;
                t->seen = 1;
                t->span.reasoning_begin = t->span.reasoning_end = t->pos;
                more = 1;
            } else if (!ws && starts(p, k, H_CHANNEL)) {
                int h = header(t, H_CHANNEL, final);
                if (h == 0) break;
                t->harmony = 1;
                if (h == 1) {
                    t->state = S_HARMONY;
                    t->seen = 1;
                    t->span.reasoning_begin = t->span.reasoning_end = t->pos;
                } else {
                    answer_from_here(t);
                }
                more = 1;
            } else {
                answer_from_here(t);
                more = 1;
            }
        } else if (t->state == S_THINK || t->state == S_HARMONY) {
            int h = t->state == S_HARMONY;
            int rc = reason(t, h ? H_END : THINK_CLOSE, final);
            if (rc < 0) return LLMGEN_E_NOMEM;
            if (rc == 1) {
                t->state = h ? S_HARMONY_NEXT : S_ANSWER;
                if (!h) t->strip = 1, t->span.answer_begin = t->pos;
                more = 1;
            }
        } else if (t->state == S_HARMONY_NEXT) {
            int h = header(t, H_NEXT, final);
            if (h == 0) break;
            if (h == 1) t->state = S_HARMONY;
            else answer_from_here(t);
            more = 1;
        } else {
            if (t->strip) {
                size_t ws = span_ws(t->hold, t->n_hold);
                drop(t, ws);
                t->span.answer_begin = t->pos;
                if (!t->n_hold) break;
                t->strip = 0;
            }
            if (grow(&t->c, &t->n_c, &t->cap_c, t->hold, t->n_hold)) return LLMGEN_E_NOMEM;
            drop(t, t->n_hold);
        }
    }
    if (final && t->state != S_ANSWER) { /* the output ended inside the reasoning or a header */
        if (t->state == S_START) answer_from_here(t);
        else t->span.answer_begin = t->pos + t->n_hold;
        if (t->state == S_START || t->state == S_ANSWER) {
            if (grow(&t->c, &t->n_c, &t->cap_c, t->hold, t->n_hold)) return LLMGEN_E_NOMEM;
            drop(t, t->n_hold);
        }
    }
    t->span.has_reasoning = t->seen;
    *out = (llmgen_reasoning_piece){t->r, t->n_r, t->c, t->n_c};
    return LLMGEN_OK;
}

int llmgen_reasoning_thinking(const llmgen_reasoning *t) {
    return t->state == S_THINK || t->state == S_HARMONY;
}

const char *llmgen_reasoning_close(const llmgen_reasoning *t) {
    return t->harmony ? H_END H_NEXT "final" H_MESSAGE : THINK_CLOSE "\n\n";
}

llmgen_reasoning_span llmgen_reasoning_where(const llmgen_reasoning *t) { return t->span; }

llmgen_status llmgen_reasoning_split(const char *prompt, const char *text, size_t len, llmgen_reasoning_span *out) {
    llmgen_reasoning *t;
    llmgen_reasoning_piece p;
    llmgen_status st = llmgen_reasoning_new(prompt, &t);
    memset(out, 0, sizeof *out);
    if (st) return st;
    if (!(st = llmgen_reasoning_feed(t, text, len, 1, &p))) *out = t->span;
    llmgen_reasoning_free(t);
    return st;
}
