/* think.c - --reasoning-budget: the generation goes on after the thinking block is closed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "think.h"

int think_filter_open(think_filter *t, const char *prompt, int show, int budget) {
    *t = (think_filter){.show = show, .budget = budget};
    return llmgen_reasoning_new(prompt, &t->split) ? -1 : 0;
}

int think_filter_feed(think_filter *t, const char *s, size_t n, int final, const char **out, size_t *outn) {
    llmgen_reasoning_piece p;
    if (llmgen_reasoning_feed(t->split, s, n, final, &p)) return -1;
    if (!t->show) *out = p.text, *outn = p.text_len;
    if (t->budget >= 0 && n && llmgen_reasoning_thinking(t->split) && ++t->n_thought >= t->budget) t->over = 1;
    return 0;
}

void think_filter_close(think_filter *t) {
    if (t) llmgen_reasoning_free(t->split);
}

llmgen_status think_continue(llmgen_model *m, llmgen_session *ses, think_filter *t, const int32_t *prompt, int n,
                             llmgen_generate_params *p, int max_tokens, llmgen_result *r, char *err, size_t errlen) {
    int32_t *cids = NULL, *all = NULL;
    size_t nc = 0;
    llmgen_result r2 = {0};
    const char *close = llmgen_reasoning_close(t->split);
    llmgen_status st = llmgen_tokenize(m, close, strlen(close), 0, 1, &cids, &nc, err, errlen);
    if (st) return st;
    t->over = 0, t->budget = -1;
    if (p->on_piece) p->on_piece(p->user, -1, close, strlen(close));
    size_t total = (size_t)n + (size_t)r->n_ids + nc;
    char *text = NULL;
    if (!(all = malloc(total * sizeof *all))) st = LLMGEN_E_NOMEM, snprintf(err, errlen, "out of memory");
    if (!st) {
        memcpy(all, prompt, (size_t)n * sizeof *all);
        memcpy(all + n, r->ids, (size_t)r->n_ids * sizeof *all);
        memcpy(all + n + r->n_ids, cids, nc * sizeof *all);
        p->reuse_prefix = 1;
        if (max_tokens > 0) p->max_tokens = max_tokens - r->n_ids > 1 ? max_tokens - r->n_ids : 1;
        st = llmgen_generate(ses, all, (int)total, p, &r2, err, errlen);
    }
    int32_t *ids = st ? NULL : malloc(((size_t)r->n_ids + nc + (size_t)r2.n_ids) * sizeof *ids);
    size_t tl = (r->text ? r->text_len : 0) + strlen(close) + (r2.text ? r2.text_len : 0);
    if (!st && (!ids || !(text = malloc(tl + 1)))) st = LLMGEN_E_NOMEM, snprintf(err, errlen, "out of memory");
    if (!st) { /* r: the first part's ids and text, the close, then the rest's */
        memcpy(ids, r->ids, (size_t)r->n_ids * sizeof *ids);
        memcpy(ids + r->n_ids, cids, nc * sizeof *ids);
        memcpy(ids + r->n_ids + nc, r2.ids, (size_t)r2.n_ids * sizeof *ids);
        size_t o = 0;
        if (r->text) memcpy(text, r->text, r->text_len), o = r->text_len;
        memcpy(text + o, close, strlen(close));
        o += strlen(close);
        if (r2.text) memcpy(text + o, r2.text, r2.text_len);
        text[tl] = '\0';
        llmgen_free(r->ids);
        llmgen_free(r->text);
        r->ids = ids, ids = NULL;
        r->n_ids += (int)nc + r2.n_ids;
        r->text = text, r->text_len = tl, text = NULL;
        r->stop_reason = r2.stop_reason;
        r->decode_s += r2.prefill_s + r2.decode_s;
    }
    free(ids);
    free(text);
    free(all);
    llmgen_free(cids);
    llmgen_result_free(&r2);
    return st;
}
