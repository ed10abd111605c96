/* verify_refs.h - one line of a `llmgen verify` reference file (JSONL), parsed and
 * checked. Internal (shared by verify.c and the fuzz target), never prints. A line:
 *
 *   {"id": any JSON, "model"?: path, "prompt": text | "prompt_ids": [ids], "chat"?: bool,
 *    "expected_ids": [ids], "top2_gap"?: [numbers], "source"?: any JSON (ignored)}
 *
 * top2_gap[i] is the reference's largest logit minus its second largest at step i
 * (>= 0), one per expected id. */
#ifndef LLMGEN_VERIFY_REFS_H
#define LLMGEN_VERIFY_REFS_H

#include <stddef.h>
#include <stdint.h>

#include "llmgen.h" /* LLMGEN_MAX_CONTEXT */
#include "base/util.h"   /* ERR_LEN */

#define VERIFY_MAX_IDS LLMGEN_MAX_CONTEXT

typedef struct {
    char *name;             /* "id": a string as is, anything else as compact JSON */
    char *model;            /* or NULL */
    char *prompt;           /* UTF-8 text (NUL-free), or NULL when prompt_ids are given */
    size_t prompt_len;
    int32_t *prompt_ids;    /* (n_prompt_ids) or NULL */
    int n_prompt_ids;
    int chat;               /* wrap the prompt in the model's chat template */
    int32_t *expected;      /* (n_expected >= 1) */
    int n_expected;
    double *gap;            /* (n_expected) or NULL */
} verify_case;

/* Parse line[0..len) into *c (zeroed first). 0, or -1 with a message in err
 * (ERR_LEN bytes) naming the key; *c is then empty. */
int verify_case_parse(const char *line, size_t len, verify_case *c, char *err);
void verify_case_free(verify_case *c);

#endif
