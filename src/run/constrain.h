/* constrain.h - a grammar or a JSON Schema applied to one generation: compiles it
 * against the model's vocabulary, masks the logits before each sampling step and
 * follows the sampled ids (the glue between generate.c and grammar.h /
 * json_schema.h / token_mask.h). */
#ifndef LLMGEN_CONSTRAIN_H
#define LLMGEN_CONSTRAIN_H

#include "llmgen.h"

typedef struct constrain constrain;

/* NULL *out (and LLMGEN_OK) when p asks for no constraint. Errors: LLMGEN_E_USAGE for a
 * grammar or schema that does not parse (one line: where and what), both given, or a
 * model without a tokenizer; LLMGEN_E_NOMEM. */
llmgen_status constrain_new(const llmgen_model *m, const llmgen_generate_params *p, constrain **out, char *err,
                            size_t errlen);
void constrain_free(constrain *c);
/* The logits to sample from: a copy of logits[0..V) with every id the grammar forbids
 * at -inf (owned by c, valid until the next call). NULL with LLMGEN_E_USAGE in *st
 * when no token can continue or a matcher limit is hit. */
const float *constrain_mask(constrain *c, const float *logits, int V, llmgen_status *st, char *err, size_t errlen);
/* 1 if, after id, the grammar can be complete within `bytes` more bytes (a stop id the
 * grammar allows: always); 0 if not, or if id is not allowed. */
int constrain_fits(constrain *c, int32_t id, int32_t bytes);
/* Forbid (logit -inf, mask bit cleared) every id of the last mask after which the grammar
 * cannot be complete within `bytes` bytes. Returns how many ids stay allowed; 0 (none fits,
 * or a limit) leaves the mask and the logits as they were. */
int constrain_keep_within(constrain *c, int32_t bytes);
/* Follow a sampled id: 0, or -1 if the grammar does not allow it. */
int constrain_accept(constrain *c, int32_t id);
/* 1 if id is allowed by the last mask (a check for draft tokens). */
int constrain_allows(const constrain *c, int32_t id);
/* 1 when the grammar is complete and nothing may follow: generation ends. */
int constrain_finished(const constrain *c);
/* Undo the last n accepted ids. */
void constrain_rollback(constrain *c, int n);
/* Seconds spent compiling (parse, schema conversion, vocabulary trie). */
double constrain_compile_seconds(const constrain *c);

#endif
