/* verify_refs.c - the reference lines of `llmgen verify` (see verify_refs.h). The
 * file is untrusted text: every key is type- and range-checked here (fuzz_verify). */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"
#include "verify_refs.h"

static int seterr(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int seterr(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

/* A JSON array of token ids (0..INT32_MAX), at least one, at most VERIFY_MAX_IDS. */
static int id_array(json_t *v, const char *key, int32_t **out, int *n, char *err) {
    size_t len = json_array_size(v), i;
    json_t *x;
    if (!json_is_array(v) || len == 0 || len > VERIFY_MAX_IDS)
        return seterr(err, "\"%s\" must be a non-empty array of token ids", key);
    if (!(*out = malloc(len * sizeof **out))) return seterr(err, "out of memory");
    json_array_foreach(v, i, x) {
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX)
            return seterr(err, "\"%s\"[%zu] is not a token id", key, i);
        (*out)[i] = (int32_t)json_integer_value(x);
    }
    *n = (int)len;
    return 0;
}

static char *dup_text(json_t *v) {
    size_t n = json_string_length(v);
    char *s = malloc(n + 1);
    if (s) memcpy(s, json_string_value(v), n + 1);
    return s;
}

static int parse_obj(json_t *root, verify_case *c, char *err) {
    const char *k;
    json_t *v, *gap = NULL;
    int has_id = 0;
    if (!json_is_object(root)) return seterr(err, "a reference must be a JSON object");
    json_object_foreach(root, k, v) {
        if (!strcmp(k, "id")) {
            has_id = 1;
            c->name = json_is_string(v) ? dup_text(v) : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            if (!c->name) return seterr(err, "out of memory");
        } else if (!strcmp(k, "model") || !strcmp(k, "prompt")) {
            if (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)) ||
                (k[0] == 'm' && !json_string_length(v)))
                return seterr(err, "\"%s\" must be a %sstring without NUL", k, k[0] == 'm' ? "non-empty " : "");
            if (utf8_invalid_at(json_string_value(v), json_string_length(v)) != json_string_length(v))
                return seterr(err, "\"%s\" is not valid UTF-8", k);
            char *s = dup_text(v);
            if (!s) return seterr(err, "out of memory");
            if (k[0] == 'm') c->model = s;
            else c->prompt = s, c->prompt_len = json_string_length(v);
        } else if (!strcmp(k, "prompt_ids")) {
            if (id_array(v, k, &c->prompt_ids, &c->n_prompt_ids, err)) return -1;
        } else if (!strcmp(k, "expected_ids")) {
            if (id_array(v, k, &c->expected, &c->n_expected, err)) return -1;
        } else if (!strcmp(k, "chat")) {
            if (!json_is_boolean(v)) return seterr(err, "\"chat\" must be true or false");
            c->chat = json_is_true(v);
        } else if (!strcmp(k, "top2_gap")) {
            gap = v;
        } else if (strcmp(k, "source") != 0) {
            return seterr(err, "unknown key \"%s\"", k);
        }
    }
    if (!has_id) return seterr(err, "missing \"id\"");
    if (!!c->prompt + !!c->prompt_ids != 1) return seterr(err, "give exactly one of \"prompt\" and \"prompt_ids\"");
    if (c->chat && !c->prompt) return seterr(err, "\"chat\" needs a text \"prompt\"");
    if (!c->expected) return seterr(err, "missing \"expected_ids\"");
    if (gap) {
        size_t i;
        json_t *x;
        if (!json_is_array(gap) || json_array_size(gap) != (size_t)c->n_expected)
            return seterr(err, "\"top2_gap\" must be an array of %d numbers (one per expected id)", c->n_expected);
        if (!(c->gap = malloc((size_t)c->n_expected * sizeof *c->gap))) return seterr(err, "out of memory");
        json_array_foreach(gap, i, x) {
            double g = json_number_value(x);
            if (!json_is_number(x) || !isfinite(g) || g < 0)
                return seterr(err, "\"top2_gap\"[%zu] must be a number >= 0", i);
            c->gap[i] = g;
        }
    }
    return 0;
}

int verify_case_parse(const char *line, size_t len, verify_case *c, char *err) {
    memset(c, 0, sizeof *c);
    json_error_t je;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return seterr(err, "not JSON: %s (column %d)", je.text, je.column);
    int rc = parse_obj(root, c, err);
    json_decref(root);
    if (rc) verify_case_free(c);
    return rc;
}

void verify_case_free(verify_case *c) {
    free(c->name);
    free(c->model);
    free(c->prompt);
    free(c->prompt_ids);
    free(c->expected);
    free(c->gap);
    memset(c, 0, sizeof *c);
}
