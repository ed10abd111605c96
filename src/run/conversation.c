/* conversation.c - multi-turn chat on one session (llmgen_chat_*): the messages
 * so far, and which text the session's KV cache already holds, so that a turn
 * prefills only what is new.
 *
 * A turn renders the whole conversation with the chat template. When that text
 * starts with the text the cache stands for (the previous render plus the reply),
 * only the rest is tokenized (no BOS) and prefilled, after the reply's last id if
 * the generation left it unrun. Otherwise (a template that rewrites earlier
 * turns, or trims a reply) the session is reset and the whole render prefilled:
 * slower, never wrong. */
#include <stdlib.h>
#include <string.h>

#include "llmgen.h"

struct llmgen_chat {
    llmgen_session *s;
    char *template_name, *date, *template_text; /* copies, or NULL */
    llmgen_message *msgs;       /* (n) roles are literals, contents owned */
    size_t n, cap;
    char *held;                 /* the text the cache stands for (ids run + `pending`); NULL: nothing */
    int32_t pending;            /* the reply's last id if it was not run, else -1 */
};

static llmgen_status fail(llmgen_status st, char *err, size_t errlen, const char *msg) {
    if (err && errlen) {
        size_t n = strlen(msg) < errlen ? strlen(msg) : errlen - 1;
        memcpy(err, msg, n);
        err[n] = '\0';
    }
    return st;
}

static char *dup_or_null(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

static int push(llmgen_chat *c, const char *role, const char *content) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        llmgen_message *m = realloc(c->msgs, cap * sizeof *m);
        if (!m) return -1;
        c->msgs = m;
        c->cap = cap;
    }
    char *d = strdup(content);
    if (!d) return -1;
    c->msgs[c->n++] = (llmgen_message){role, d};
    return 0;
}

static void pop(llmgen_chat *c) { free((char *)c->msgs[--c->n].content); }

llmgen_status llmgen_chat_new(llmgen_session *s, const llmgen_chat_options *opt, const char *system,
                              llmgen_chat **out, char *err, size_t errlen) {
    *out = NULL;
    llmgen_chat *c = calloc(1, sizeof *c);
    int oom = !c;
    if (c) {
        c->s = s;
        c->pending = -1;
        c->template_name = dup_or_null(opt ? opt->template_name : NULL, &oom);
        c->date = dup_or_null(opt ? opt->date : NULL, &oom);
        c->template_text = dup_or_null(opt ? opt->template_text : NULL, &oom);
        if (system && push(c, "system", system)) oom = 1;
    }
    if (oom) {
        llmgen_chat_free(c);
        return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    }
    llmgen_session_reset(s);
    *out = c;
    return LLMGEN_OK;
}

void llmgen_chat_free(llmgen_chat *c) {
    if (!c) return;
    while (c->n) pop(c);
    free(c->msgs);
    free(c->template_name);
    free(c->date);
    free(c->template_text);
    free(c->held);
    free(c);
}

/* The ids to prefill for the render `text`: the new part after what the cache
 * holds, or everything (then *reset = 1). *ids is the caller's: llmgen_free. */
static llmgen_status turn_ids(llmgen_chat *c, const char *text, int32_t **ids, int *n, int *reset, char *err,
                              size_t errlen) {
    llmgen_model *m = llmgen_session_model(c->s);
    size_t held = c->held ? strlen(c->held) : 0, k;
    int32_t *t;
    *reset = !c->held || strncmp(text, c->held, held) != 0;
    const char *part = *reset ? text : text + held;
    int lead = !*reset && c->pending >= 0;
    llmgen_status st = llmgen_tokenize(m, part, strlen(part), *reset, 1, &t, &k, err, errlen);
    if (st) return st;
    if (k + 1 > (size_t)1 << 30) {
        llmgen_free(t);
        return fail(LLMGEN_E_CONTEXT, err, errlen, "conversation too long");
    }
    *ids = malloc((k + 1) * sizeof **ids);
    if (!*ids) {
        llmgen_free(t);
        return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    }
    if (lead) (*ids)[0] = c->pending;
    if (k) memcpy(*ids + lead, t, k * sizeof *t);
    llmgen_free(t);
    *n = (int)k + lead;
    return LLMGEN_OK;
}

llmgen_status llmgen_chat_turn(llmgen_chat *c, const char *user, const llmgen_generate_params *p,
                               llmgen_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    llmgen_model *m = llmgen_session_model(c->s);
    if (!user) return fail(LLMGEN_E_USAGE, err, errlen, "llmgen_chat_turn: user message is NULL");
    if (push(c, "user", user)) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    llmgen_chat_options co = {.template_name = c->template_name, .date = c->date, .template_text = c->template_text};
    char *text = NULL, *reply = NULL;
    int32_t *ids = NULL;
    int n = 0, reset = 0;
    size_t reply_len;
    llmgen_status st = llmgen_chat_render_messages(m, c->msgs, c->n, 1, &co, &text, err, errlen);
    if (!st) st = turn_ids(c, text, &ids, &n, &reset, err, errlen);
    if (st) goto out;
    llmgen_generate_params q = *p;
    q.keep_cache = !reset;
    int pos0 = reset ? 0 : llmgen_session_pos(c->s);
    st = llmgen_generate(c->s, ids, n, &q, r, err, errlen);
    if (st) {
        free(c->held); /* the cache may hold part of this turn: start over next time */
        c->held = NULL;
        c->pending = -1;
        goto out;
    }
    /* ids the session ran: the prompt and all replies but the ones it did not run */
    int unrun = pos0 + n + r->n_ids - llmgen_session_pos(c->s);
    if ((st = llmgen_detokenize(m, r->ids, (size_t)r->n_ids, &reply, &reply_len, err, errlen))) goto out;
    size_t tl = strlen(text);
    char *held = realloc(text, tl + reply_len + 1);
    if (!held || push(c, "assistant", reply)) {
        if (held) text = held;
        st = fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
        goto out;
    }
    memcpy(held + tl, reply, reply_len + 1);
    text = NULL;
    free(c->held);
    c->held = held;
    c->pending = unrun == 1 ? r->ids[r->n_ids - 1] : -1;
    if (unrun > 1) { /* cannot happen (one id at most is left unrun); be safe: re-prefill next turn */
        free(c->held);
        c->held = NULL;
    }
    llmgen_free(reply);
    free(ids);
    return LLMGEN_OK;
out:
    if (c->n && !strcmp(c->msgs[c->n - 1].role, "user")) pop(c);
    llmgen_free(text);
    llmgen_free(reply);
    free(ids);
    return st;
}
