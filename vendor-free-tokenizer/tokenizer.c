/* tokenizer.c - lifetime and accessors of a loaded tokenizer. */
#include <stdlib.h>

#include "tok_internal.h"

void tok_free(tokenizer *t) {
    if (!t) return;
    free(t->text_pool);
    free(t->text_off);
    free(t->piece_pool);
    free(t->piece_off);
    strmap_free(&t->bpe_vocab);
    pairmap_free(&t->merges);
    for (size_t i = 0; i < t->n_added; i++) free(t->added[i].text);
    free(t->added);
    free(t->flags);
    for (size_t i = 0; i < t->n_norms; i++) tok_norm_free(&t->norms[i]);
    free(t->norms);
    for (size_t i = 0; i < t->n_pres; i++) tok_pre_free(&t->pres[i]);
    free(t->pres);
    free(t->chat_template);
    free(t);
}

size_t tok_vocab_size(const tokenizer *t) { return t->n_vocab; }
int32_t tok_bos(const tokenizer *t) { return t->bos_id; }
int32_t tok_eos(const tokenizer *t) { return t->eos_id; }
int tok_adds_bos(const tokenizer *t) { return t->add_bos && t->bos_id >= 0; }
