/* schema_driver.c - llmgen's JSON Schema grammar used as a validator, for
 * tests/gen/schema_suite.py and tests/cli/check_schema_corpus.py.
 *
 * Reads lines of {"schema": SCHEMA, "instances": [TEXT, ...], "strict"?: bool} on stdin
 * and writes one line per input line:
 *   {"ok": true, "warn": "...", "accept": [bool, ...], "compile_s": s}   (the schema compiled)
 *   {"ok": false, "error": "one line"}                                    (it was refused)
 * An instance text is accepted when the grammar's matcher reads all of its bytes and
 * can end there: exactly when it is in the grammar's language. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

static int accepts(const grammar *g, const char *s, size_t n) {
    gm *m = gm_new(g);
    int32_t *a = malloc(GRAMMAR_MAX_STACKS * sizeof *a), *b = malloc(GRAMMAR_MAX_STACKS * sizeof *b);
    int k = m && a && b ? gm_start(m, a) : -1, done = 0;
    for (size_t i = 0; i < n && k > 0; i++) {
        k = gm_advance(m, a, k, (uint8_t)s[i], b);
        int32_t *t = a;
        a = b, b = t;
    }
    done = k > 0 && a[0] == GM_DONE;
    free(a), free(b);
    gm_free(m);
    return done;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
    size_t cap = 0;
    char *line = NULL;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        json_error_t je;
        json_t *in = json_loadb(line, (size_t)len, 0, &je), *out = json_object();
        if (!in) {
            fprintf(stderr, "schema_driver: bad input line: %s\n", je.text);
            return 2;
        }
        json_t *sch = json_object_get(in, "schema"), *inst = json_object_get(in, "instances");
        char *text = json_dumps(sch, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER), *gbnf = NULL;
        char err[512] = "", warn[1024] = "";
        json_schema_opts o = {.strict = json_is_true(json_object_get(in, "strict")), .warn = warn, .warnlen = sizeof warn};
        double t0 = now();
        grammar *g = NULL;
        int rc = json_schema_to_gbnf(text, strlen(text), &o, &gbnf, err, sizeof err);
        if (!rc) rc = grammar_parse(gbnf, strlen(gbnf), &g, err, sizeof err);
        double t1 = now();
        if (rc) {
            json_object_set_new(out, "ok", json_false());
            json_object_set_new(out, "error", json_string(err));
        } else {
            json_t *acc = json_array();
            for (size_t i = 0; i < json_array_size(inst); i++) {
                json_t *x = json_array_get(inst, i);
                json_array_append_new(acc, json_boolean(accepts(g, json_string_value(x), json_string_length(x))));
            }
            json_object_set_new(out, "ok", json_true());
            json_object_set_new(out, "warn", json_string(warn));
            json_object_set_new(out, "accept", acc);
            json_object_set_new(out, "compile_s", json_real(t1 - t0));
            json_object_set_new(out, "gbnf_bytes", json_integer((json_int_t)strlen(gbnf)));
        }
        grammar_free(g);
        free(gbnf), free(text);
        char *o_text = json_dumps(out, JSON_COMPACT);
        printf("%s\n", o_text);
        fflush(stdout);
        free(o_text);
        json_decref(out), json_decref(in);
    }
    free(line);
    return 0;
}
