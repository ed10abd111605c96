/* draft.h - where speculative decoding's guesses come from (generate.c runs and checks
 * them): prompt lookup in the text so far, or a smaller model's greedy ids; and the rule
 * that sizes the next draft from how the last ones fared. Internal; never prints. */
#ifndef LLMGEN_DRAFT_H
#define LLMGEN_DRAFT_H

#include <stdint.h>

#include "llmgen.h"

/* Most ids one pass runs (llmgen_decode_rows), and so 1 + the longest draft. */
#define DRAFT_PASS_MAX 128
/* llmgen_generate_params.draft_max when 0. */
#define DRAFT_DEFAULT_MAX 8

/* Prompt lookup: the ids that followed the latest earlier occurrence of the last n of
 * ids[0..len), for n from ngram down to 1 (the first n that occurs wins), at most max
 * of them into out. Returns how many (0: no occurrence). */
int draft_lookup(const int32_t *ids, int len, int ngram, int32_t *out, int max);

/* A draft model's greedy continuation of ids[0..len) (its argmax, first on ties), at most
 * max ids into out, *got of them. The session d keeps the part of its cache that ids
 * still share (llmgen_session_common_prefix) and runs the rest. Ids outside vocab
 * (the target's) end the draft; a text with ids outside d's vocabulary, or longer than
 * its context, gets none (no error). */
llmgen_status draft_from_model(llmgen_session *d, const int32_t *ids, int len, int vocab, int32_t *out, int max,
                               int *got, char *err, size_t errlen);

/* The adaptive length of built-in drafts: grows while whole drafts are accepted, falls
 * to what was accepted otherwise, and a draft of which nothing was accepted pauses
 * drafting for a number of steps that doubles with each such miss in a row (1, 2, 4 ..
 * DRAFT_PAUSE_MAX), so that where guesses fail, passes become rare and the cost of
 * trying stays a few percent of the steps.
 * Then what a pass costs caps it: a pass of n ids takes about a step plus n - 1 times
 * the time of one more row, which is little where a step only streams the weights and
 * up to half a step where it is compute-bound (AVX2 without VNNI). From the measured
 * times and the rate at which draft ids were accepted, the length that gives the most
 * ids per second is chosen, and drafting pauses as after a miss when no length beats
 * plain steps. The times change only when drafts run, never the ids or logits. */
#define DRAFT_PAUSE_MAX 64
typedef struct {
    int max;       /* the longest draft (draft_max) */
    int len;       /* the next draft's length */
    int pause;     /* steps left before the next draft */
    int backoff;   /* the next pause after a miss */
    int passes;    /* passes so far */
    double step_s; /* a one-id step's time, smoothed (0: none measured yet) */
    double row_s;  /* a pass's time per id after the first, drafting included, smoothed (-1: none yet) */
    double acc, rej; /* draft ids accepted and drafts cut short, recent ones weighing more */
} draft_ctl;

void draft_ctl_init(draft_ctl *c, int max);
/* The length to draft at this step (0: pause, or a plain step to time; counts the pause down). */
int draft_ctl_len(draft_ctl *c);
/* After a pass: `drafted` ids run, `accepted` of them kept. */
void draft_ctl_update(draft_ctl *c, int drafted, int accepted);
/* The time of a plain step, and of a pass of `rows` ids (1 + its draft) with its drafting. */
void draft_ctl_time_step(draft_ctl *c, double s);
void draft_ctl_time_pass(draft_ctl *c, int rows, double s);

#endif
