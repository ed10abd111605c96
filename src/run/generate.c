/* generate.c - the generation loop as a library call (llmgen_generate): prefill
 * the prompt, then sample, stream and decode one id at a time until an
 * end-of-sequence id, max_tokens, a stop string, a full context or a callback
 * says stop.
 *
 * Built on the public session API only (prefill, decode step, sampler, streaming
 * detokenizer): what it does, an embedding program could do by hand, and the CLI,
 * the batch runner and the chat conversation all share this one loop.
 *
 * Stop strings are matched on the decoded text: text that could still become a
 * stop string is held back from the callback until it cannot, so a streamed
 * reply never shows part of one.
 *
 * Speculative decoding (greedy): the id just picked goes into the model together with
 * a draft of the ids that may follow it (draft.c), in one llmgen_decode_rows pass whose
 * rows are the bits single steps would give; the loop then consumes the rows as if they
 * came from steps, one id at a time (the same callbacks, checks and stops), for as long
 * as the ids it picks equal the draft, and takes the rest back (llmgen_session_rewind).
 * So everything a caller sees is what plain decoding gives, only sooner. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draft.h"
#include "constrain.h"
#include "generate.h"
#include "sampler.h"
#include "llmgen.h"
#include "base/util.h"

const char *llmgen_stop_reason_name(llmgen_stop_reason r) {
    switch (r) {
    case LLMGEN_STOP_LENGTH: return "length";
    case LLMGEN_STOP_EOS: return "eos";
    case LLMGEN_STOP_STRING: return "stop";
    case LLMGEN_STOP_CONTEXT: return "context";
    case LLMGEN_STOP_CANCELLED: return "interrupted";
    }
    return "unknown";
}

void llmgen_generate_defaults(llmgen_generate_params *p) {
    memset(p, 0, sizeof *p);
    p->max_tokens = 128;
    llmgen_sampler_defaults(&p->sampler);
}

void llmgen_result_free(llmgen_result *r) {
    if (!r) return;
    free(r->ids);
    free(r->text);
    free(r->logprobs);
    memset(r, 0, sizeof *r);
}

static llmgen_status fail(llmgen_status st, char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return st;
}

/* Append n bytes to the result text (kept NUL-terminated). */
static int text_put(llmgen_result *r, size_t *cap, const char *s, size_t n) {
    if (r->text_len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < r->text_len + n + 1) c *= 2;
        char *t = realloc(r->text, c);
        if (!t) return -1;
        r->text = t;
        *cap = c;
    }
    if (n) memcpy(r->text + r->text_len, s, n);
    r->text_len += n;
    r->text[r->text_len] = '\0';
    return 0;
}

/* Append one id to the result and to the sampler's history (prompt + generated). */
static int ids_put(llmgen_result *r, int32_t **hist, int *n_hist, int *cap, int32_t id) {
    if (*n_hist + 1 > *cap) {
        int c = *cap * 2;
        int32_t *h = realloc(*hist, (size_t)c * sizeof *h), *g = realloc(r->ids, (size_t)c * sizeof *g);
        if (h) *hist = h;
        if (g) r->ids = g;
        if (!h || !g) return -1;
        *cap = c;
    }
    (*hist)[(*n_hist)++] = id;
    r->ids[r->n_ids++] = id;
    return 0;
}

/* Longest suffix of s[0..n) that is a proper prefix of a stop string: bytes that
 * must wait, since the next token may complete the stop string. */
size_t gen_stop_holdback(const char *const *stops, int n_stops, const char *s, size_t n) {
    size_t best = 0;
    for (int i = 0; i < n_stops; i++) {
        size_t L = strlen(stops[i]);
        for (size_t k = L - 1 < n ? L - 1 : n; k > best; k--)
            if (!memcmp(s + n - k, stops[i], k)) {
                best = k;
                break;
            }
    }
    return best;
}

/* Offset of the first match of any stop string in s[from..n), or -1. */
long gen_stop_find(const char *const *stops, int n_stops, const char *s, size_t n, size_t from) {
    long best = -1;
    for (int i = 0; i < n_stops; i++) {
        const char *hit = memmem(s + from, n - from, stops[i], strlen(stops[i]));
        if (hit && (best < 0 || hit - s < best)) best = hit - s;
    }
    return best;
}

/* Row `step` of r->logprobs from the raw logits of that step: the sampled id, then
 * the k most likely (a small insertion-sorted list: k is a handful, the vocabulary
 * is scanned once). Log-softmax in double: log p = l - max - log(sum e^(l - max)). */
static int logprobs_put(llmgen_result *r, int *cap, const float *lg, int V, int32_t id) {
    int k = r->top_logprobs, w = 1 + k;
    if (r->n_ids + 1 > *cap) {
        int c = *cap ? *cap * 2 : 64;
        llmgen_logprob *t = realloc(r->logprobs, (size_t)c * (size_t)w * sizeof *t);
        if (!t) return -1;
        r->logprobs = t;
        *cap = c;
    }
    float mx = lg[0];
    for (int i = 1; i < V; i++)
        if (lg[i] > mx) mx = lg[i];
    double sum = 0;
    for (int i = 0; i < V; i++) sum += exp((double)lg[i] - mx);
    double lse = (double)mx + log(sum);
    llmgen_logprob *row = r->logprobs + (size_t)r->n_ids * (size_t)w, *top = row + 1;
    row[0].id = id;
    row[0].logprob = (float)((double)lg[id] - lse);
    int n = 0;
    for (int i = 0; i < V && k; i++) {
        if (n == k && !(lg[i] > top[k - 1].logprob)) continue;
        int j = n < k ? n++ : k - 1;
        while (j > 0 && lg[i] > top[j - 1].logprob) top[j] = top[j - 1], j--;
        top[j].id = i;
        top[j].logprob = lg[i];
    }
    for (int j = 0; j < n; j++) top[j].logprob = (float)((double)top[j].logprob - lse);
    return 0;
}

static llmgen_status check_params(const llmgen_generate_params *p, int has_tokenizer, int vocab_size, char *err,
                                  size_t errlen) {
    if (p->max_tokens < 1 && p->max_tokens != -1)
        return fail(LLMGEN_E_USAGE, err, errlen, "max_tokens must be at least 1, or -1 (until the end or a full context)");
    if (p->n_stops < 0 || (p->n_stops && !p->stops))
        return fail(LLMGEN_E_USAGE, err, errlen, "n_stops is negative, or stops is NULL");
    for (int i = 0; i < p->n_stops; i++)
        if (!p->stops[i] || !*p->stops[i]) return fail(LLMGEN_E_USAGE, err, errlen, "a stop string is empty");
    if (p->logprobs && (p->top_logprobs < 0 || p->top_logprobs > vocab_size))
        return fail(LLMGEN_E_USAGE, err, errlen, "top_logprobs must be from 0 to the vocabulary size");
    if (p->n_stops && !has_tokenizer)
        return fail(LLMGEN_E_USAGE, err, errlen, "stop strings need a tokenizer (this model has none)");
    if (p->draft_max < 0 || p->draft_max > DRAFT_PASS_MAX - 1 || p->draft_lookup < 0)
        return fail(LLMGEN_E_USAGE, err, errlen, "draft_max must be from 0 to 127, draft_lookup >= 0");
    return llmgen_sampler_check(&p->sampler, err, errlen);
}

/* Speculation for one call: drafts, their adaptive length, and the pass being consumed. */
typedef struct {
    const llmgen_generate_params *p;
    int on;          /* greedy, and some draft source */
    int vocab;
    draft_ctl ctl;
    int32_t pass[DRAFT_PASS_MAX]; /* the pass: the picked id, then its draft */
    int n_draft;     /* draft ids of the pass being consumed (0: none) */
    int row;         /* its row the current logits are */
    const float *rows;
} spec;

/* The draft to run with the id just picked (hist[n - 1]): at most room ids (what the
 * context and max_tokens leave), from the caller's draft_fn as given, else from the
 * built-in sources at the adaptive length. Returns how many are in S->pass + 1. */
static int spec_draft(spec *S, const int32_t *hist, int n, int room, llmgen_status *st, char *err, size_t errlen) {
    const llmgen_generate_params *p = S->p;
    int max = p->draft_max ? p->draft_max : DRAFT_DEFAULT_MAX, k = 0;
    if (room > DRAFT_PASS_MAX - 1) room = DRAFT_PASS_MAX - 1;
    if (p->draft_fn) {
        k = p->draft_fn(p->draft_user, hist, n, S->pass + 1, max < room ? max : room);
        return k < 0 ? 0 : k > room ? room : k;
    }
    int len = draft_ctl_len(&S->ctl);
    if (len > room) len = room;
    if (len <= 0) return 0;
    if (p->draft_lookup) k = draft_lookup(hist, n, p->draft_lookup, S->pass + 1, len);
    if (!k && p->draft_session)
        *st = draft_from_model(p->draft_session, hist, n, S->vocab, S->pass + 1, len, &k, err, errlen);
    return k;
}

/* Ids this call may still generate, the one being picked included: what max_tokens
 * leaves, and the context: the id picked at pos is generated even when pos is the
 * context's end (it is never run). */
static int ids_left(const llmgen_generate_params *p, const llmgen_result *r, const llmgen_session *s, int pos) {
    int left = llmgen_session_ctx(s) - pos + 1;
    if (p->max_tokens > 0 && p->max_tokens - r->n_ids < left) left = p->max_tokens - r->n_ids;
    return left;
}

/* The closing rule (llmgen_generate_params.no_close): id, picked from `from`, stays if the
 * grammar can be complete after it within the left - 1 ids that follow, one byte each
 * (every byte is a token in byte-level BPE and SentencePiece byte fallback, and a token
 * is at least a byte, so bytes bound ids from above); else every id that cannot is
 * forbidden and the pick is made again (greedy: the best id that fits; sampling: a new
 * draw among those that fit). When none fits (a vocabulary without byte tokens, or a
 * budget below the grammar's shortest string), id stays. */
static int32_t close_within(constrain *con, llmgen_sampler *smp, const float *from, const int32_t *hist, int n_hist,
                            int32_t id, int left, llmgen_result *r) {
    if (constrain_fits(con, id, left - 1) || !constrain_keep_within(con, left - 1)) return id;
    int32_t again = sampler_pick(smp, from, hist, n_hist, r->n_ids);
    if (!constrain_fits(con, again, left - 1)) return id;
    r->n_closed++;
    return again;
}

llmgen_status llmgen_generate(llmgen_session *s, const int32_t *prompt, int n_prompt,
                              const llmgen_generate_params *p, llmgen_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    llmgen_model *m = llmgen_session_model(s);
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    llmgen_status st = check_params(p, caps.has_tokenizer, caps.vocab_size, err, errlen);
    if (st) return st;
    if (n_prompt < 1 || !prompt) return fail(LLMGEN_E_USAGE, err, errlen, "empty prompt: nothing to continue from");
    int V = caps.vocab_size, cap = 256, n_hist = 0, max_stop = 0, lp_cap = 0;
    r->top_logprobs = p->logprobs ? p->top_logprobs : 0;
    for (int i = 0; i < p->n_stops; i++)
        if ((int)strlen(p->stops[i]) > max_stop) max_stop = (int)strlen(p->stops[i]);
    while (cap < n_prompt + 1) cap *= 2;
    llmgen_sampler *smp = llmgen_sampler_new(&p->sampler, V);
    int32_t *hist = malloc((size_t)cap * sizeof *hist);
    r->ids = malloc((size_t)cap * sizeof *r->ids);
    llmgen_detok *dt = NULL;
    constrain *con = NULL; /* the grammar / JSON schema of p, if any */
    size_t text_cap = 0, sent = 0; /* bytes of r->text handed to on_piece */
    if (!smp || !hist || !r->ids || (caps.has_tokenizer && text_put(r, &text_cap, "", 0))) {
        st = fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
        goto out;
    }
    if (caps.has_tokenizer && (st = llmgen_detok_new(m, &dt, err, errlen))) goto out;
    memcpy(hist, prompt, (size_t)n_prompt * sizeof *hist);
    n_hist = n_prompt;
    r->n_prompt = n_prompt;
    int kept = 0; /* prompt ids the cache holds already (reuse_prefix); one is always run, for its logits */
    if (!p->keep_cache && p->reuse_prefix) {
        kept = llmgen_session_common_prefix(s, prompt, n_prompt - 1);
        llmgen_session_rewind(s, kept);
    } else if (!p->keep_cache) {
        llmgen_session_reset(s);
    }
    r->n_cached = kept;

    spec S = {.p = p, .vocab = V};
    S.on = p->sampler.temperature <= 0.0f && (p->draft_lookup || p->draft_session || p->draft_fn);
    draft_ctl_init(&S.ctl, p->draft_max ? p->draft_max : DRAFT_DEFAULT_MAX);
    if ((st = constrain_new(m, p, &con, err, errlen))) goto out;

    const float *logits;
    double t0 = now_seconds();
    st = llmgen_prefill(s, prompt + kept, n_prompt - kept, &logits, err, errlen);
    r->prefill_s = now_seconds() - t0;
    int pos = llmgen_session_pos(s); /* where the id picked next goes (the session may hold a pass beyond) */
    int64_t syncs0, solo0;
    llmgen_model_sync_counts(m, &syncs0, &solo0);
    double t_dec = now_seconds();
    r->stop_reason = LLMGEN_STOP_LENGTH;
    while (!st) {
        if (p->on_logits && p->on_logits(p->user, logits, V)) {
            r->stop_reason = LLMGEN_STOP_CANCELLED;
            break;
        }
        const float *from = logits;
        if (con) {
            if (constrain_finished(con)) { /* complete, nothing may follow: as if EOS was sampled */
                r->stop_reason = LLMGEN_STOP_EOS;
                break;
            }
            if (!(from = constrain_mask(con, logits, V, &st, err, errlen))) break;
        }
        int32_t id = sampler_pick(smp, from, hist, n_hist, r->n_ids); /* presence counts what this call generated */
        if (con && !p->no_close) id = close_within(con, smp, from, hist, n_hist, id, ids_left(p, r, s, pos), r);
        if (con && constrain_accept(con, id)) {
            st = fail(LLMGEN_E_USAGE, err, errlen, "grammar: the sampled id is not allowed (all allowed logits -inf?)");
            break;
        }
        if (r->n_ids == 0) r->first_token_s = now_seconds() - t0;
        if (!p->ignore_eos && llmgen_is_eos(m, id)) {
            r->stop_reason = LLMGEN_STOP_EOS;
            break;
        }
        if ((p->logprobs && logprobs_put(r, &lp_cap, logits, V, id)) || ids_put(r, &hist, &n_hist, &cap, id)) {
            st = fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
            break;
        }
        size_t safe = 0;
        int stopped = 0;
        if (dt) {
            const char *piece;
            size_t len, before = r->text_len;
            if ((st = llmgen_detok_put(dt, id, &piece, &len, err, errlen))) break;
            if (text_put(r, &text_cap, piece, len)) {
                st = fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
                break;
            }
            safe = r->text_len;
            if (p->n_stops) {
                /* a new match ends past `before`, so it starts at most max_stop - 1 bytes earlier */
                size_t from = before >= (size_t)max_stop ? before - (size_t)max_stop + 1 : 0;
                long hit = gen_stop_find(p->stops, p->n_stops, r->text, r->text_len, from);
                if (hit >= 0) {
                    r->text_len = (size_t)hit;
                    r->text[hit] = '\0';
                    safe = (size_t)hit;
                    stopped = 1;
                } else {
                    safe = r->text_len - gen_stop_holdback(p->stops, p->n_stops, r->text, r->text_len);
                }
            }
        }
        int cancel = 0;
        if (p->on_piece) {
            cancel = p->on_piece(p->user, id, r->text ? r->text + sent : "", safe > sent ? safe - sent : 0);
            if (safe > sent) sent = safe;
        }
        if (stopped) {
            r->stop_reason = LLMGEN_STOP_STRING;
            break;
        }
        if (cancel) {
            r->stop_reason = LLMGEN_STOP_CANCELLED;
            break;
        }
        if (p->max_tokens > 0 && r->n_ids >= p->max_tokens) break; /* LLMGEN_STOP_LENGTH */
        if (pos >= llmgen_session_ctx(s)) {
            r->stop_reason = LLMGEN_STOP_CONTEXT;
            break;
        }
        if (S.row < S.n_draft && id == S.pass[S.row + 1]) { /* the pass ran it already: its row is next */
            logits = S.rows + (size_t)++S.row * V;
            pos++;
            continue;
        }
        if (S.n_draft) { /* the pass ends here: take back what it ran past this id */
            r->n_accepted += S.row;
            draft_ctl_update(&S.ctl, S.n_draft, S.row);
            llmgen_session_rewind(s, pos);
            S.n_draft = 0;
        }
        int k = 0;
        double t_step = S.on ? now_seconds() : 0; /* the pass's time includes its drafting */
        if (S.on) {
            int room = llmgen_session_ctx(s) - pos - 1;
            if (p->max_tokens > 0 && p->max_tokens - r->n_ids - 1 < room) room = p->max_tokens - r->n_ids - 1;
            if (room > 0) k = spec_draft(&S, hist, n_hist, room, &st, err, errlen);
            if (st) break;
        }
        if (k) {
            S.pass[0] = id;
            st = llmgen_decode_rows(s, S.pass, k + 1, &S.rows, err, errlen);
            logits = S.rows;
            S.n_draft = k;
            S.row = 0;
            r->n_drafted += k;
            r->n_passes++;
            draft_ctl_time_pass(&S.ctl, k + 1, now_seconds() - t_step);
        } else {
            st = llmgen_decode_step(s, id, &logits, err, errlen);
            if (S.on) draft_ctl_time_step(&S.ctl, now_seconds() - t_step);
        }
        pos++;
    }
    if (S.n_draft) { /* stopped inside a pass: the session keeps what was consumed */
        r->n_accepted += S.row;
        llmgen_session_rewind(s, pos);
    }
    r->decode_s = now_seconds() - t_dec;
    llmgen_model_sync_counts(m, &r->n_syncs, &r->n_solo);
    r->n_syncs -= syncs0;
    r->n_solo -= solo0;
    if (dt && r->stop_reason != LLMGEN_STOP_STRING) {
        const char *piece;
        size_t len;
        llmgen_detok_flush(dt, &piece, &len);
        if (text_put(r, &text_cap, piece, len) && !st) st = fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    }
    if (p->on_piece && r->text_len > sent) p->on_piece(p->user, -1, r->text + sent, r->text_len - sent);
out:
    constrain_free(con);
    llmgen_detok_free(dt);
    llmgen_sampler_free(smp);
    free(hist);
    return st;
}
