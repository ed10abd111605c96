/* src/run/: the library behind llmgen.h: sessions, batches, the generation loop, sampler,
 * drafts, constraints, prompt cache. Never prints or exits; knows nothing of the CLI.
 *
 * handles.h - what the library's API files share (internal, not installed): the
 * structs behind the opaque llmgen_model and llmgen_session of llmgen.h, and the
 * API's error return. api.c opens models and wraps the tokenizer, session.c runs
 * sessions, batch_sched.c steps several sessions together, prompt_cache.c saves and
 * loads a session's cache; each includes this, none of them includes another. */
#ifndef LLMGEN_HANDLES_H
#define LLMGEN_HANDLES_H

#include <stdatomic.h>
#include <stdio.h>

#include "base/cpus.h"
#include "model/forward.h"
#include "llmgen.h"

/* llmgen_model wraps the internal model with the one piece of mutable state the
 * API needs: a busy flag, because the model's worker pool serves one forward
 * pass at a time and sessions of the same model share it. */
struct llmgen_model {
    model *m;
    cpus_info cpus;  /* the CPUs this process may use, at open */
    atomic_int busy; /* 1 while a prefill / decode step of any session runs on m->pool */
};

struct llmgen_session {
    llmgen_model *owner;
    fwd_state st;
    int pos;     /* tokens in the KV cache */
    float *rows; /* (chunk, vocab) logits of every token of a chunk, for llmgen_prefill_rows; NULL until then */
    int32_t *fed; /* (ctx) the ids at positions 0 .. pos - 1 */
    llmgen_batch *batch; /* joined to this batch, or NULL */
    /* while joined: the step this session waits for */
    const int32_t *want_ids;
    int want_n, pending;
};

/* The API's error return: msg into err (when given), st returned. */
static inline llmgen_status fail(llmgen_status st, char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return st;
}

#endif
