/* think.h - the CLI's --reasoning-budget (the split itself is llmgen.h's llmgen_reasoning_*). */
#ifndef LLMGEN_THINK_H
#define LLMGEN_THINK_H

#include "llmgen.h"

/* The thinking block of --chat's output apart: what is printed (the answer, or everything with
 * --reasoning show) and the --reasoning-budget count. */
typedef struct {
    llmgen_reasoning *split;
    int show;              /* print the output as generated */
    int budget, n_thought; /* -1: no budget; pieces generated inside the block */
    int over;              /* the budget ran out: the generation should stop */
} think_filter;
/* prompt: the rendered prompt (a block it opens). -1: out of memory. */
int think_filter_open(think_filter *t, const char *prompt, int show, int budget);
/* Feed generated text (one piece; final: the output ended): *out / *n become what to print. -1: out of memory. */
int think_filter_feed(think_filter *t, const char *s, size_t n, int final, const char **out, size_t *outn);
void think_filter_close(think_filter *t); /* NULL is fine */

/* The generation r (of prompt[0..n) with p) stopped when t's budget ran out: p->on_piece gets the
 * text that closes the block as the template expects (llmgen_reasoning_close, id -1), then run
 * prompt + r's ids + the close's ids on ses with the prefix cache, for what is left of max_tokens (-1: no limit;
 * the close's ids are not counted), and make r the whole: its ids and text, then the close's, then
 * the rest's; the rest's stop reason. p's callbacks see the rest's pieces. Status with a message. */
llmgen_status think_continue(llmgen_model *m, llmgen_session *ses, think_filter *t, const int32_t *prompt, int n,
                             llmgen_generate_params *p, int max_tokens, llmgen_result *r, char *err, size_t errlen);

#endif
