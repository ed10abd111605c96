/* tools.c - tool-call formats: detection, forcing grammar, parsing (see tools.h). */
#include "serve/tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema.h"

#define HERMES_OPEN "<tool_call>"
#define HERMES_CLOSE "</tool_call>"
#define MISTRAL_MARK "[TOOL_CALLS]"
#define MISTRAL_ARGS "[ARGS]"
#define PYTHON_TAG "<|python_tag|>"

tools_format tools_format_of(const char *prompt) {
    if (strstr(prompt, "[AVAILABLE_TOOLS]")) return TOOLS_MISTRAL;
    if (strstr(prompt, HERMES_OPEN)) return TOOLS_HERMES;
    /* Llama 3.1 - 3.3: 'Respond in the format {"name": function name, "parameters": dictionary of ...}' */
    if (strstr(prompt, "\"parameters\": dictionary of argument name")) return TOOLS_LLAMA3;
    return TOOLS_UNKNOWN;
}

const char *tools_format_name(tools_format f) {
    return f == TOOLS_HERMES ? "hermes" : f == TOOLS_LLAMA3 ? "llama3" : f == TOOLS_MISTRAL ? "mistral" : "unknown";
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static size_t skip_space(const char *s, size_t i, size_t n) {
    while (i < n && is_space(s[i])) i++;
    return i;
}

static size_t find(const char *s, size_t from, size_t n, const char *pat) {
    size_t k = strlen(pat);
    for (size_t i = from; i + k <= n; i++)
        if (!memcmp(s + i, pat, k)) return i;
    return n;
}

/* ---- the forcing grammar ----------------------------------------------------------------- */

/* The JSON Schema of one call to function fn: {"name": its name, args_key: its parameters}. */
static json_t *call_schema(json_t *fn, const char *args_key) {
    json_t *params = json_object_get(fn, "parameters");
    json_t *props = json_object(), *s = json_object();
    json_object_set_new(props, "name", json_pack("{s:O}", "const", json_object_get(fn, "name")));
    json_object_set_new(props, args_key, params ? json_incref(params) : json_pack("{s:s}", "type", "object"));
    json_object_set_new(s, "type", json_string("object"));
    json_object_set_new(s, "properties", props);
    json_object_set_new(s, "required", json_pack("[s,s]", "name", args_key));
    return s;
}

static int fail(char *err, size_t errlen, const char *msg, const char *arg) {
    if (err && errlen) snprintf(err, errlen, msg, arg);
    return -1;
}

int tools_grammar(tools_format f, json_t *tools, const char *only, int several, char **gbnf, char *err,
                  size_t errlen) {
    *gbnf = NULL;
    if (f == TOOLS_UNKNOWN)
        return fail(err, errlen, "%s", "the chat template's tool-call format is none llmgen knows (Hermes <tool_call>, "
                                       "Llama 3 JSON, Mistral [TOOL_CALLS]): a call cannot be required");
    const char *key = f == TOOLS_LLAMA3 ? "parameters" : "arguments";
    json_t *any = json_array(), *t;
    size_t i;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (!name) continue;
        if (!only || !strcmp(only, name)) json_array_append_new(any, call_schema(fn, key));
    }
    if (!json_array_size(any)) {
        json_decref(any);
        return only ? fail(err, errlen, "no function named \"%s\" in 'tools'", only)
                    : fail(err, errlen, "%s", "no function in 'tools' has a name");
    }
    json_t *schema = json_array_size(any) == 1 ? json_incref(json_array_get(any, 0)) : json_pack("{s:O}", "anyOf", any);
    json_decref(any);
    char *text = json_dumps(schema, JSON_COMPACT), *rules = NULL, e[256];
    json_decref(schema);
    json_schema_opts so = {0};
    if (!text || json_schema_to_gbnf(text, strlen(text), &so, &rules, e, sizeof e)) {
        free(text);
        return fail(err, errlen, "a tool's 'parameters': %s", text ? e : "out of memory");
    }
    free(text);
    if (strncmp(rules, "root ::= ", 9)) { /* json_schema_to_gbnf writes its root rule first */
        free(rules);
        return fail(err, errlen, "%s", "internal: the schema grammar has no root rule first");
    }
    static const char *const roots[] = {
        [TOOLS_HERMES] = "root ::= tool-one%s\ntool-one ::= \"" HERMES_OPEN "\\n\" tool-call \"\\n" HERMES_CLOSE "\"\n",
        [TOOLS_LLAMA3] = "root ::= tool-call%.0s\n",
        [TOOLS_MISTRAL] = "root ::= \"" MISTRAL_MARK "[\" tool-call%s \"]\"\n",
    };
    const char *more = !several || only ? "" : f == TOOLS_HERMES ? " (\"\\n\" tool-one)*" : " (\", \" tool-call)*";
    size_t need = strlen(rules) + strlen(roots[f]) + 64;
    char *g = malloc(need);
    if (!g) {
        free(rules);
        return fail(err, errlen, "%s", "out of memory");
    }
    int w = snprintf(g, need, roots[f], more);
    snprintf(g + w, need - (size_t)w, "tool-call ::= %s", rules + 9);
    free(rules);
    *gbnf = g;
    return 0;
}

/* ---- parsing calls out of an output ------------------------------------------------------ */

/* One JSON value at s[*i..n) (white space before it skipped); *i moves past it. */
static json_t *json_at(const char *s, size_t *i, size_t n) {
    size_t at = skip_space(s, *i, n);
    json_error_t je;
    json_t *v = json_loadb(s + at, n - at, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &je);
    if (v) *i = at + (size_t)je.position;
    return v;
}

/* {"name", "arguments"} of a call object {"name": string, "arguments" | "parameters": object or its
 * text}, or NULL. */
static json_t *call_of(json_t *o) {
    json_t *name = json_object_get(o, "name"), *a = json_object_get(o, "arguments");
    if (!a) a = json_object_get(o, "parameters");
    if (!json_is_string(name) || !a) return NULL;
    json_t *args = json_is_string(a) ? json_loads(json_string_value(a), 0, NULL) : json_incref(a);
    if (!json_is_object(args)) {
        json_decref(args);
        return NULL;
    }
    return json_pack("{s:O,s:o}", "name", name, "arguments", args);
}

static int add_call(json_t *calls, json_t *o) {
    json_t *c = call_of(o);
    json_decref(o);
    if (!c) return -1;
    json_array_append_new(calls, c);
    return 0;
}

static size_t trim_end(const char *s, size_t n) {
    while (n && is_space(s[n - 1])) n--;
    return n;
}

static json_t *parse_hermes(const char *s, size_t n, size_t *content) {
    size_t at = find(s, 0, n, HERMES_OPEN), i = at;
    if (at == n) return NULL;
    json_t *calls = json_array();
    while (i < n) {
        i += strlen(HERMES_OPEN);
        json_t *o = json_at(s, &i, n);
        if (!o || add_call(calls, o)) break;
        i = skip_space(s, i, n);
        if (i < n && strncmp(s + i, HERMES_CLOSE, strlen(HERMES_CLOSE))) break;
        i = find(s, i, n, HERMES_OPEN);
    }
    if (!json_array_size(calls)) {
        json_decref(calls);
        return NULL;
    }
    *content = trim_end(s, at);
    return calls;
}

static json_t *parse_llama3(const char *s, size_t n, size_t *content) {
    size_t i = skip_space(s, 0, n);
    if (n - i >= strlen(PYTHON_TAG) && !strncmp(s + i, PYTHON_TAG, strlen(PYTHON_TAG))) i += strlen(PYTHON_TAG);
    json_t *calls = json_array();
    for (;;) {
        json_t *o = json_at(s, &i, n);
        if (!o || add_call(calls, o)) break;
        i = skip_space(s, i, n);
        if (i < n && s[i] == ';') i = skip_space(s, i + 1, n);
        if (i == n) {
            *content = 0;
            return calls;
        }
    }
    json_decref(calls);
    return NULL;
}

static json_t *parse_mistral(const char *s, size_t n, size_t *content) {
    size_t at = find(s, 0, n, MISTRAL_MARK), i = at;
    if (at == n) return NULL;
    json_t *calls = json_array();
    while (i < n) {
        i = skip_space(s, i + strlen(MISTRAL_MARK), n);
        if (i < n && s[i] == '[') { /* [TOOL_CALLS][{...}, ...] */
            json_t *list = json_at(s, &i, n), *o;
            size_t k;
            json_array_foreach(list, k, o) add_call(calls, json_incref(o));
            json_decref(list);
        } else { /* [TOOL_CALLS]name[ARGS]{...} */
            size_t a = find(s, i, n, MISTRAL_ARGS);
            if (a == n) break;
            json_t *name = json_stringn(s + i, trim_end(s + i, a - i)), *args;
            i = a + strlen(MISTRAL_ARGS);
            args = json_at(s, &i, n);
            if (!name || !args) {
                json_decref(name);
                json_decref(args);
                break;
            }
            add_call(calls, json_pack("{s:o,s:o}", "name", name, "arguments", args));
        }
        i = find(s, i, n, MISTRAL_MARK);
    }
    if (!json_array_size(calls)) {
        json_decref(calls);
        return NULL;
    }
    *content = trim_end(s, at);
    return calls;
}

json_t *tools_parse(tools_format f, const char *text, size_t n, size_t *content) {
    json_t *calls = NULL;
    if (f == TOOLS_HERMES || f == TOOLS_UNKNOWN) calls = parse_hermes(text, n, content);
    if (!calls && (f == TOOLS_MISTRAL || f == TOOLS_UNKNOWN)) calls = parse_mistral(text, n, content);
    if (!calls && (f == TOOLS_LLAMA3 || f == TOOLS_UNKNOWN)) calls = parse_llama3(text, n, content);
    return calls;
}

/* Where pat starts in s[0..n), or where a prefix of it ends s; n if neither. */
static size_t mark_from(const char *s, size_t n, const char *pat) {
    size_t k = strlen(pat), at = find(s, 0, n, pat);
    if (at < n) return at;
    for (size_t i = n > k ? n - k + 1 : 0; i < n; i++)
        if (!memcmp(s + i, pat, n - i)) return i;
    return n;
}

size_t tools_hold_from(tools_format f, const char *text, size_t n) {
    size_t from = n;
    if (f == TOOLS_HERMES || f == TOOLS_UNKNOWN) from = mark_from(text, n, HERMES_OPEN);
    if (f == TOOLS_MISTRAL || f == TOOLS_UNKNOWN) {
        size_t m = mark_from(text, n, MISTRAL_MARK);
        if (m < from) from = m;
    }
    if (f == TOOLS_LLAMA3 || f == TOOLS_UNKNOWN) { /* a call is the whole answer: it starts at its start */
        size_t i = skip_space(text, 0, n), k = strlen(PYTHON_TAG);
        if (i == n || text[i] == '{' || !memcmp(text + i, PYTHON_TAG, n - i < k ? n - i : k)) from = 0;
    }
    return from;
}
