/* token_mask.h - which tokens a grammar allows next: the per-step mask of
 * constrained decoding (grammar.h matches bytes; this matches tokens).
 *
 * A token is allowed when its bytes continue a valid prefix of the grammar's
 * language; a stop token (end of sequence) exactly when the grammar is complete.
 * Tokens with no bytes (and ids past the tokenizer's vocabulary) are never allowed.
 *
 * Speed (xgrammar's idea, scaled down): the vocabulary is a byte trie walked once
 * per state, pruned where the grammar rejects a prefix. Per grammar position (the
 * character class on top of a stack) the tokens decided inside the position's
 * rule are cached once: accepted, or uncertain (they run past the rule's end, so
 * the caller decides) - only the uncertain ones are matched at run time, against
 * the real stack. The mask of each stack is memoized by its id (stacks are
 * hash-consed), so a run of characters inside one JSON string costs a copy. */
#ifndef LLMGEN_TOKEN_MASK_H
#define LLMGEN_TOKEN_MASK_H

#include <stddef.h>
#include <stdint.h>

#include "grammar.h"

/* A vocabulary as bytes: built once per model, immutable, shareable. */
typedef struct tm_vocab tm_vocab;
/* n_vocab tokens; piece(user, id, &len) gives token id's bytes (NULL or len 0: never
 * allowed); is_stop(user, id) 1 for end-of-sequence ids. NULL if out of memory. */
tm_vocab *tm_vocab_new(int n_vocab, const char *(*piece)(void *user, int32_t id, size_t *len),
                       int (*is_stop)(void *user, int32_t id), void *user);
void tm_vocab_free(tm_vocab *v);
int tm_vocab_size(const tm_vocab *v);

/* The state of one constrained sequence. */
typedef struct tm_matcher tm_matcher;
/* g and v must outlive the matcher. Returns 0, or -1 with a message. */
int tm_matcher_new(const grammar *g, const tm_vocab *v, tm_matcher **out, char *err, size_t errlen);
void tm_matcher_free(tm_matcher *m);
/* The allowed ids as a bitset: mask has (n_vocab + 31) / 32 words, bit id % 32 of word
 * id / 32. Returns how many ids are allowed (0: none can continue), -1 with a message
 * when a limit of grammar.h is hit. */
int tm_fill_mask(tm_matcher *m, uint32_t *mask, char *err, size_t errlen);
/* Advance by token id: 0, or -1 if the grammar does not allow it (state unchanged). */
int tm_accept(tm_matcher *m, int32_t id);
/* The same for raw bytes (a test hook: tokens are what generation feeds). */
int tm_accept_bytes(tm_matcher *m, const char *s, size_t n);
/* 1 if the grammar can end here (a stop token is allowed). */
int tm_can_end(const tm_matcher *m);
/* 1 once a stop token was accepted, or when nothing but the end is allowed. */
int tm_is_terminated(const tm_matcher *m);
/* The fewest bytes that complete the grammar from here: 0 when it can end (or has
 * ended), GRAMMAR_NO_END when nothing can (see gm_min_bytes). */
int32_t tm_min_bytes(const tm_matcher *m);
/* The same after token id, the state unchanged: 0 for a stop token the grammar
 * allows, -1 when id is not allowed here or a limit is hit. */
int32_t tm_min_bytes_after(tm_matcher *m, int32_t id);
/* out = the ids of in (a mask as tm_fill_mask's) after which the grammar can complete
 * within budget bytes. Returns how many, or -1 on a limit. */
int tm_keep_within(tm_matcher *m, const uint32_t *in, uint32_t *out, int32_t budget);
/* Undo the last n accepted tokens (n <= those accepted). */
void tm_rollback(tm_matcher *m, int n);

#endif
