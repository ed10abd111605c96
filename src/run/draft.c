/* draft.c - speculative decoding's drafts (see draft.h). */
#include "draft.h"

#include <string.h>

int draft_lookup(const int32_t *ids, int len, int ngram, int32_t *out, int max) {
    for (int n = ngram < len - 1 ? ngram : len - 1; n >= 1; n--) {
        const int32_t *tail = ids + len - n;
        /* the latest occurrence that ends before the tail's last id */
        for (int at = len - n - 1; at >= 0; at--) {
            if (ids[at] != tail[0] || memcmp(ids + at, tail, (size_t)n * sizeof *ids)) continue;
            int k = 0;
            while (k < max && at + n + k < len) out[k] = ids[at + n + k], k++;
            return k;
        }
    }
    return 0;
}

static int32_t argmax(const float *lg, int V) {
    int32_t best = 0;
    for (int i = 1; i < V; i++)
        if (lg[i] > lg[best]) best = i;
    return best;
}

llmgen_status draft_from_model(llmgen_session *d, const int32_t *ids, int len, int vocab, int32_t *out, int max,
                               int *got, char *err, size_t errlen) {
    llmgen_capabilities caps;
    llmgen_model_capabilities(llmgen_session_model(d), &caps);
    *got = 0;
    /* the last id is always run: its logits give the first draft */
    int ctx = llmgen_session_ctx(d), kept = llmgen_session_common_prefix(d, ids, len - 1);
    if (len > ctx) return LLMGEN_OK; /* the text does not fit: no draft */
    for (int i = kept; i < len; i++)
        if (ids[i] >= caps.vocab_size) return LLMGEN_OK; /* an id the draft model lacks: no draft */
    if (max > ctx - len + 1) max = ctx - len + 1; /* the last draft id is not run */
    llmgen_session_rewind(d, kept);
    kept = llmgen_session_pos(d); /* a ring may not go back that far: then from the start */
    const float *lg;
    llmgen_status st = llmgen_prefill(d, ids + kept, len - kept, &lg, err, errlen);
    for (int k = 0; !st && k < max; k++) {
        int32_t id = argmax(lg, caps.vocab_size);
        if (id >= vocab) break;
        out[(*got)++] = id;
        if (k + 1 < max) st = llmgen_decode_step(d, id, &lg, err, errlen);
    }
    return st;
}

void draft_ctl_init(draft_ctl *c, int max) {
    *c = (draft_ctl){.max = max, .len = max < 4 ? max : 4, .backoff = 1, .row_s = -1};
}

int draft_ctl_len(draft_ctl *c) {
    if (c->pause > 0) {
        c->pause--;
        return 0;
    }
    if (c->passes > 0 && c->step_s == 0) return 0; /* one plain step to time, once */
    return c->len;
}

static void pause_after_miss(draft_ctl *c) {
    c->len = 1;
    c->pause = c->backoff;
    c->backoff = 2 * c->backoff < DRAFT_PAUSE_MAX ? 2 * c->backoff : DRAFT_PAUSE_MAX;
}

/* The draft length with the most ids per second, from the acceptance rate a (each draft id
 * taken with probability a once those before it were: 1 + a + ... + a^k ids a pass) and a
 * row's cost r in steps (a pass of 1 + k ids: 1 + r k steps); 0 when none beats a step. */
static int best_len(const draft_ctl *c) {
    double a = c->acc / (c->acc + c->rej), r = c->row_s / c->step_s, best = 1.0, ids = 1.0, ak = 1.0;
    int len = 0;
    for (int k = 1; k <= c->max; k++) {
        ak *= a;
        ids += ak;
        if (ids / (1.0 + r * k) > best * 1.02) best = ids / (1.0 + r * k), len = k;
    }
    return len;
}

void draft_ctl_update(draft_ctl *c, int drafted, int accepted) {
    c->passes++;
    c->acc = 0.9 * c->acc + accepted;
    c->rej = 0.9 * c->rej + (accepted < drafted);
    if (accepted == 0) {
        pause_after_miss(c);
        return;
    }
    if (accepted == drafted) c->len = 2 * c->len < c->max ? 2 * c->len : c->max;
    else c->len = accepted + 1 < c->max ? accepted + 1 : c->max;
    if (c->step_s > 0 && c->row_s >= 0) {
        int len = best_len(c);
        if (len == 0) { /* no length pays: as a miss, the pauses growing while it lasts */
            pause_after_miss(c);
            return;
        }
        if (len < c->len) c->len = len;
    }
    c->backoff = 1;
}

void draft_ctl_time_step(draft_ctl *c, double s) {
    if (s < 1e-9) s = 1e-9; /* a step timed at 0 must still count as timed (draft_ctl_len) */
    c->step_s = c->step_s > 0 ? 0.8 * c->step_s + 0.2 * s : s;
}

void draft_ctl_time_pass(draft_ctl *c, int rows, double s) {
    if (c->step_s <= 0 || rows < 2) return;
    double r = (s - c->step_s) / (rows - 1);
    if (r < 0) r = 0;
    c->row_s = c->row_s >= 0 ? 0.8 * c->row_s + 0.2 * r : r;
}
