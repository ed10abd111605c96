/* load_json.c - placeholder until the tokenizer.json loader lands. */
#include "tok_internal.h"

int tok_load_json(const char *tokenizer_json, const char *config_json, tokenizer **out, char *err)
{
    (void)config_json;
    *out = NULL;
    tok_errf(err, "%s: tokenizer.json loading is not implemented yet", tokenizer_json);
    return -1;
}
