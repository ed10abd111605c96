/* batch_sched.h - the scheduler's side of a joined session's step (the rest of
 * llmgen_batch is in llmgen.h). */
#ifndef LLMGEN_BATCH_SCHED_H
#define LLMGEN_BATCH_SCHED_H

#include "handles.h"

/* One step of a joined session: wait until it has run (maybe run it). */
void batch_step(llmgen_session *s, const int32_t *ids, int n);

#endif
