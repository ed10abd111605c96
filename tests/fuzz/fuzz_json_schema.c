/* fuzz_json_schema.c - libFuzzer target: JSON Schema to GBNF (src/grammar/json_schema.c) on untrusted
 * schema text, then the GBNF parser on what it wrote. A schema is either refused with one line
 * naming the problem, or becomes a grammar that parses. */
#include "fuzz_util.h"

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[256], *text;
    if (json_schema_to_gbnf((const char *)data, size, NULL, &text, err, sizeof err)) {
        if (memchr(err, '\n', strnlen(err, sizeof err))) abort();
        return 0;
    }
    grammar *g;
    char gerr[256];
    if (grammar_parse(text, strlen(text), &g, gerr, sizeof gerr)) {
        /* the converter's limits can be reached only through the grammar size limit; a schema
         * with no finite instance is refused here (its root never ends) */
        if (!strstr(gerr, "more than") && !strstr(gerr, "no finite text")) abort();
    } else {
        grammar_free(g);
    }
    free(text);
    return 0;
}
