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
    *c = (draft_ctl){.max = max, .len = max < 4 ? max : 4, .pause = 0, .backoff = 1};
}

int draft_ctl_len(draft_ctl *c) {
    if (c->pause > 0) {
        c->pause--;
        return 0;
    }
    return c->len;
}

void draft_ctl_update(draft_ctl *c, int drafted, int accepted) {
    if (accepted == drafted) {
        c->len = 2 * c->len < c->max ? 2 * c->len : c->max;
        c->backoff = 1;
    } else if (accepted > 0) {
        c->len = accepted + 1 < c->max ? accepted + 1 : c->max;
        c->backoff = 1;
    } else {
        c->len = 1;
        c->pause = c->backoff;
        c->backoff = 2 * c->backoff < DRAFT_PAUSE_MAX ? 2 * c->backoff : DRAFT_PAUSE_MAX;
    }
}
