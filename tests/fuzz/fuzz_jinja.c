/* fuzz_jinja.c - libFuzzer target: the Jinja interpreter (vendor-free-tokenizer/jinja_*.c),
 * a parser and evaluator of untrusted template text. Input: the template text, then
 * optionally a NUL byte and the variables as JSON (else a fixed three-turn conversation).
 * Parsing and rendering must fail cleanly or give a NUL-terminated string within the
 * interpreter's limits (nesting, loop iterations, output size, memory). */
#include "fuzz_util.h"

#include "jinja.h"
#include "tokenizer.h"

static const char VARS[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi \\u00e9\"},"
    " {\"role\": \"assistant\", \"content\": \"Hello!\"}, {\"role\": \"user\", \"content\": \" two\\n lines \"}],"
    " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"tools\": null,"
    " \"documents\": null, \"n\": 3, \"f\": 1.5, \"d\": {\"a\": [1, 2, {\"b\": null}]}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t tlen = nul ? (size_t)(nul - data) : size;
    char err[TOK_ERR_LEN];
    jinja_template *t;
    if (jinja_parse((const char *)data, tlen, &t, err)) {
        fuzz_touch(err, strnlen(err, sizeof err));
        return 0;
    }
    jinja_input in = {.vars_json = VARS, .vars_len = sizeof VARS - 1, .now = 1735776000};
    if (nul) {
        in.vars_json = (const char *)nul + 1;
        in.vars_len = size - tlen - 1;
    }
    char *out;
    size_t len;
    if (jinja_render(t, &in, &out, &len, err) == 0) {
        fuzz_touch(out, len + 1);
        free(out);
    }
    jinja_free(t);
    return 0;
}
