/* fuzz_verify.c - libFuzzer target: the reference lines of `llmgen verify`
 * (verify_refs.c), an untrusted-text parser. The input is a REFS.jsonl file: each
 * line is parsed; a parsed case must satisfy what verify.c relies on (one prompt
 * kind, ids in range, one gap per expected id, non-negative finite gaps). */
#include <math.h>

#include "fuzz_util.h"

#include "cli/verify_refs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data, *end = p + size;
    char err[ERR_LEN];
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        verify_case c;
        if (verify_case_parse(p, len, &c, err) == 0) {
            if (!c.name || !!c.prompt + !!c.prompt_ids != 1 || (c.chat && !c.prompt)) abort();
            if (c.n_expected < 1 || !c.expected || (c.prompt_ids && c.n_prompt_ids < 1)) abort();
            if (c.prompt && strlen(c.prompt) != c.prompt_len) abort();
            for (int i = 0; i < c.n_expected; i++)
                if (c.expected[i] < 0 || (c.gap && (!isfinite(c.gap[i]) || c.gap[i] < 0))) abort();
            for (int i = 0; i < c.n_prompt_ids; i++)
                if (c.prompt_ids[i] < 0) abort();
            verify_case_free(&c);
        } else if (!err[0] || c.name || c.expected) {
            abort(); /* a failure leaves a message and an empty case */
        }
        p += len + 1;
    }
    return 0;
}
