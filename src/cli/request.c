/* request.c - generation requests and results as the CLI speaks them: a --batch
 * line (JSON) into a request, a request's prompt into ids (chat template,
 * tokenizer, input checks), a result into JSON. Never prints: main.c does. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "request.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define SEPS ", \t\r\n" /* between ids in a list */

static int seterr(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int seterr(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

void request_params(const request *q, llmgen_generate_params *p) {
    llmgen_generate_defaults(p);
    p->max_tokens = q->max_tokens;
    p->ignore_eos = q->ignore_eos;
    p->stops = q->n_stops ? q->stops : NULL;
    p->n_stops = q->n_stops;
    p->sampler = q->sp;
    p->logprobs = q->logprobs;
    p->top_logprobs = q->top_logprobs;
    p->reuse_prefix = q->reuse_prefix;
    p->draft_lookup = q->draft_lookup;
    p->draft_max = q->draft_max;
    p->grammar = q->grammar;
    p->json_schema = q->json_schema;
    p->no_close = q->no_close;
    p->strict_schema = q->strict_schema;
}

int parse_id_list(const char *s, int32_t **out, int *n) {
    size_t cap = 16, k = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return -1;
    for (const char *p = s + strspn(s, " \t\r\n"); *p;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 0 || v > INT32_MAX || (*end && !strchr(SEPS, *end)) || k >= INT_MAX / 2) {
            free(ids);
            return -1;
        }
        if (k == cap) {
            int32_t *b = realloc(ids, (cap *= 2) * sizeof *ids);
            if (!b) {
                free(ids);
                return -1;
            }
            ids = b;
        }
        ids[k++] = (int32_t)v;
        /* between two ids white space and at most one comma: "1,,3" is not a list */
        p = end + strspn(end, " \t\r\n");
        if (*p == ',') {
            p += 1 + strspn(p + 1, " \t\r\n");
            if (!*p || *p == ',') {
                free(ids);
                return -1;
            }
        }
    }
    *out = ids;
    *n = (int)k;
    return 0;
}

char *read_all_fd(int fd, size_t *len) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    int tty = isatty(fd);
    for (ssize_t got; buf; n += (size_t)got) {
        if (n + 1 == cap) {
            char *b = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = b;
        }
        got = read(fd, buf + n, cap - n - 1);
        if (got < 0) {
            int e = errno;
            free(buf);
            errno = e;
            return NULL;
        }
        if (got == 0 || (tty && buf[n + (size_t)got - 1] != '\n')) {
            n += (size_t)got;
            break;
        }
    }
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 if invalid (RFC 3629: no
 * overlongs, no surrogates, at most U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0], min;
    size_t len;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    unsigned cp = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

size_t utf8_invalid_at(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_seq((const unsigned char *)s + i, n - i);
        if (!k) return i;
        i += k;
    }
    return n;
}

json_t *json_text(const char *s, size_t n) {
    if (utf8_invalid_at(s, n) == n) return json_stringn(s, n);
    char *b = malloc(3 * n + 1); /* each invalid byte grows to 3 */
    if (!b) return NULL;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq((const unsigned char *)s + i, n - i);
        memcpy(b + w, k ? s + i : "\xEF\xBF\xBD", k ? k : 3);
        w += k ? k : 3;
        i += k ? k : 1;
    }
    json_t *j = json_stringn(b, w);
    free(b);
    return j;
}

static json_t *json_ids(const int32_t *ids, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
    return a;
}

/* {"id", "text", "logprob"} of one token (its text alone, as the detokenizer gives it). */
static json_t *logprob_json(const llmgen_model *m, const llmgen_logprob *lp) {
    json_t *o = json_object();
    char *text = NULL;
    size_t len = 0;
    json_object_set_new(o, "id", json_integer(lp->id));
    if (m && !llmgen_detokenize(m, &lp->id, 1, &text, &len, NULL, 0)) json_object_set_new(o, "text", json_text(text, len));
    else json_object_set_new(o, "text", json_null());
    llmgen_free(text);
    json_object_set_new(o, "logprob", json_real(lp->logprob));
    return o;
}

static json_t *logprobs_json(const llmgen_model *m, const llmgen_result *r) {
    json_t *a = json_array();
    int w = 1 + r->top_logprobs;
    for (int i = 0; i < r->n_ids; i++) {
        const llmgen_logprob *row = r->logprobs + (size_t)i * (size_t)w;
        json_t *o = logprob_json(m, row), *top = json_array();
        for (int j = 1; j < w; j++) json_array_append_new(top, logprob_json(m, row + j));
        json_object_set_new(o, "top", top);
        json_array_append_new(a, o);
    }
    return a;
}

char *piece_line(int32_t id, const char *t, size_t len, size_t *n) {
    char *out = malloc(16 + 4 * len + 2), *o = out;
    if (!out) return NULL;
    o += sprintf(o, "%d\t", id);
    for (size_t k = 0; k < len; k++) {
        unsigned char c = (unsigned char)t[k];
        size_t cl = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        if (c >= 0xc0 && cl <= len - k && utf8_invalid_at(t + k, cl) == cl) { /* a whole character as it is */
            memcpy(o, t + k, cl), o += cl;
            k += cl - 1;
        } else if (c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80) {
            o += sprintf(o, c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\\' ? "\\\\" : "\\x%02x", c);
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '\n';
    *n = (size_t)(o - out);
    return out;
}

void request_draw_seed(request *q) {
    if (q->seed_given || q->sp.temperature <= 0) return;
    if (getrandom(&q->sp.seed, sizeof q->sp.seed, 0) != (ssize_t)sizeof q->sp.seed)
        q->sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    q->sp.seed &= (1ull << 53) - 1; /* below 2^53: a JSON number every reader keeps exactly (doubles too) */
}

void result_reasoning(json_t *res, const char *rendered, const llmgen_result *r) {
    llmgen_reasoning_span sp;
    if (!r->text || llmgen_reasoning_split(rendered, r->text, r->text_len, &sp) || !sp.has_reasoning) return;
    json_object_set_new(res, "reasoning", json_text(r->text + sp.reasoning_begin, sp.reasoning_end - sp.reasoning_begin));
    json_object_set_new(res, "text", json_text(r->text + sp.answer_begin, r->text_len - sp.answer_begin));
    json_object_set_new(res, "answer_offset", json_integer((json_int_t)sp.answer_begin));
}

json_t *result_json(const int32_t *prompt, int n_prompt, const llmgen_result *r, const llmgen_model *text_model,
                    uint64_t seed) {
    int has_text = text_model != NULL;
    json_t *o = json_object(), *t = json_object();
    json_object_set_new(o, "prompt_ids", json_ids(prompt, n_prompt));
    json_object_set_new(o, "ids", json_ids(r->ids, r->n_ids));
    json_object_set_new(o, "text", has_text ? json_text(r->text ? r->text : "", r->text_len) : json_null());
    json_object_set_new(o, "stop_reason", json_string(llmgen_stop_reason_name(r->stop_reason)));
    json_object_set_new(o, "closed_picks", json_integer(r->n_closed));
    /* jansson integers are signed 64-bit: a seed above 2^63 - 1 is written as its decimal string */
    char sd[24];
    snprintf(sd, sizeof sd, "%llu", (unsigned long long)seed);
    json_object_set_new(o, "seed", seed <= (uint64_t)INT64_MAX ? json_integer((json_int_t)seed) : json_string(sd));
    int steps = r->n_ids > 1 ? r->n_ids - 1 : 0;
    json_object_set_new(t, "prompt_tokens", json_integer(n_prompt));
    json_object_set_new(t, "cached_prompt_tokens", json_integer(r->n_cached));
    json_object_set_new(t, "generated_tokens", json_integer(r->n_ids));
    json_object_set_new(t, "prefill_s", json_real(r->prefill_s));
    json_object_set_new(t, "decode_s", json_real(r->decode_s));
    json_object_set_new(t, "first_token_s", json_real(r->first_token_s));
    json_object_set_new(t, "prompt_tokens_per_s", json_real(r->prefill_s > 0 ? n_prompt / r->prefill_s : 0));
    json_object_set_new(t, "generation_tokens_per_s", json_real(r->decode_s > 0 ? steps / r->decode_s : 0));
    json_object_set_new(t, "drafted_tokens", json_integer(r->n_drafted));
    json_object_set_new(t, "accepted_tokens", json_integer(r->n_accepted));
    json_object_set_new(t, "draft_passes", json_integer(r->n_passes));
    json_object_set_new(t, "syncs", json_integer(r->n_syncs));
    json_object_set_new(t, "solo_syncs", json_integer(r->n_solo));
    json_object_set_new(o, "timings", t);
    if (r->logprobs) json_object_set_new(o, "logprobs", logprobs_json(text_model, r));
    return o;
}

json_t *error_json(json_t *id, long line, const char *msg, int code) {
    json_t *o = json_object();
    if (id) json_object_set(o, "id", id);
    json_object_set_new(o, "line", json_integer(line));
    json_object_set_new(o, "error", json_text(msg, strlen(msg)));
    json_object_set_new(o, "exit", json_integer(code));
    return o;
}

/* A string member of a message without NUL, or absent; -1 if present and not such a string. */
static int opt_string(json_t *x, const char *key) {
    json_t *v = json_object_get(x, key);
    return !v || (json_is_string(v) && !memchr(json_string_value(v), '\0', json_string_length(v))) ? 0 : -1;
}

/* "messages": [{"role": string, "content": string}, ...] (strings without NUL). A message may
 * also carry what OpenAI's tool use adds: an assistant's "tool_calls" (then "content" may be
 * null), a tool answer's "tool_call_id" and "name". */
static int json_messages(request *q, json_t *v, char *err) {
    size_t n = json_array_size(v), i;
    json_t *x;
    if (!json_is_array(v) || !n)
        return seterr(err, "\"messages\" must be a non-empty array of {\"role\", \"content\"}");
    free(q->messages);
    q->rich_messages = NULL;
    if (!(q->messages = calloc(n, sizeof *q->messages))) return seterr(err, "out of memory");
    json_array_foreach(v, i, x) {
        json_t *role = json_object_get(x, "role"), *content = json_object_get(x, "content");
        json_t *calls = json_object_get(x, "tool_calls");
        size_t extra = !!calls + !!json_object_get(x, "tool_call_id") + !!json_object_get(x, "name");
        int null_ok = calls && json_is_null(content);
        if (!json_is_object(x) || !json_is_string(role) || !(json_is_string(content) || null_ok) ||
            json_object_size(x) != 2 + extra || opt_string(x, "tool_call_id") || opt_string(x, "name") ||
            (calls && !json_is_array(calls)))
            return seterr(err, "\"messages\"[%zu] must be an object {\"role\": string, \"content\": string} "
                               "(and tool_calls, tool_call_id, name)", i);
        if (memchr(json_string_value(role), '\0', json_string_length(role)) ||
            (!null_ok && memchr(json_string_value(content), '\0', json_string_length(content))))
            return seterr(err, "\"messages\"[%zu] contains a NUL character", i);
        size_t k;
        json_t *c;
        json_array_foreach(calls, k, c) {
            json_t *f = json_object_get(c, "function");
            if (!json_is_object(f) || opt_string(f, "name") || !json_object_get(f, "name"))
                return seterr(err, "\"messages\"[%zu].tool_calls[%zu] must be {\"function\": {\"name\", "
                                   "\"arguments\"}}", i, k);
        }
        if (extra) q->rich_messages = v;
        q->messages[i] = (llmgen_message){json_string_value(role), null_ok ? "" : json_string_value(content)};
    }
    q->n_messages = n;
    return 0;
}

static int json_key(request *q, const char *k, json_t *v, int *has_prompt, char *err) {
    if (!strcmp(k, "messages")) {
        if (json_messages(q, v, err)) return -1;
        ++*has_prompt;
    } else if (!strcmp(k, "tools")) {
        size_t i;
        json_t *x;
        if (!json_is_array(v)) return seterr(err, "\"tools\" must be an array of {\"type\": \"function\", ...}");
        json_array_foreach(v, i, x) if (!json_is_object(x))
            return seterr(err, "\"tools\"[%zu] must be an object", i);
        q->tools = json_array_size(v) ? v : NULL;
    } else if (!strcmp(k, "prompt")) {
        if (!json_is_string(v)) return seterr(err, "\"prompt\" must be a string");
        q->text = json_string_value(v);
        q->text_len = json_string_length(v);
        ++*has_prompt;
    } else if (!strcmp(k, "prompt_ids")) {
        size_t n = json_array_size(v), i;
        json_t *x;
        if (!json_is_array(v) || n > INT_MAX / 2) return seterr(err, "\"prompt_ids\" must be an array of token ids");
        free(q->ids);
        if (!(q->ids = malloc((n + 1) * sizeof *q->ids))) return seterr(err, "out of memory");
        json_array_foreach(v, i, x) {
            if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX)
                return seterr(err, "\"prompt_ids\"[%zu] is not a token id", i);
            q->ids[i] = (int32_t)json_integer_value(x);
        }
        q->n_ids = (int)n;
        ++*has_prompt;
    } else if (!strcmp(k, "max_tokens") || !strcmp(k, "max_completion_tokens")) { /* the second: OpenAI's chat */
        json_int_t n = json_integer_value(v);
        if (!json_is_integer(v) || (n != -1 && (n < 1 || n > REQUEST_MAX_TOKENS)))
            return seterr(err, "\"%s\" must be -1 or an integer from 1 to %d", k, REQUEST_MAX_TOKENS);
        q->max_tokens = (int)n;
    } else if (!strcmp(k, "temp") || !strcmp(k, "temperature") || !strcmp(k, "top_p") || !strcmp(k, "min_p") ||
               !strcmp(k, "repeat_penalty") || !strcmp(k, "presence_penalty") || !strcmp(k, "frequency_penalty")) {
        if (!json_is_number(v)) return seterr(err, "\"%s\" must be a number", k); /* "temperature": OpenAI's */
        *(k[0] == 't' && k[1] == 'e' ? &q->sp.temperature : !strcmp(k, "top_p") ? &q->sp.top_p
          : !strcmp(k, "min_p") ? &q->sp.min_p : !strcmp(k, "presence_penalty") ? &q->sp.presence_penalty
          : !strcmp(k, "frequency_penalty") ? &q->sp.frequency_penalty : &q->sp.repeat_penalty) =
            (float)json_number_value(v);
    } else if (!strcmp(k, "top_k")) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT_MAX)
            return seterr(err, "\"top_k\" must be a non-negative integer");
        q->sp.top_k = (int)json_integer_value(v);
    } else if (!strcmp(k, "logprobs")) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > REQUEST_MAX_LOGPROBS)
            return seterr(err, "\"logprobs\" must be an integer from 0 to %d", REQUEST_MAX_LOGPROBS);
        q->logprobs = 1;
        q->top_logprobs = (int)json_integer_value(v);
    } else if (!strcmp(k, "seed")) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) return seterr(err, "\"seed\" must be a non-negative integer");
        q->sp.seed = (uint64_t)json_integer_value(v);
        q->seed_given = 1;
    } else if (!strcmp(k, "strict_schema")) {
        if (!json_is_boolean(v)) return seterr(err, "\"strict_schema\" must be true or false");
        q->strict_schema = json_is_true(v);
    } else if (!strcmp(k, "chat") || !strcmp(k, "ignore_eos") || !strcmp(k, "no_close")) {
        if (!json_is_boolean(v)) return seterr(err, "\"%s\" must be true or false", k);
        *(k[0] == 'c' ? &q->chat : k[0] == 'i' ? &q->ignore_eos : &q->no_close) = json_is_true(v);
    } else if (!strcmp(k, "system")) {
        if (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)))
            return seterr(err, "\"system\" must be a string without NUL");
        q->system = json_string_value(v);
    } else if (!strcmp(k, "stop")) {
        size_t i;
        json_t *x;
        q->n_stops = 0;
        if (json_is_string(v)) { /* one stop string, as OpenAI's "stop" may be */
            if (json_string_length(v) == 0 || memchr(json_string_value(v), '\0', json_string_length(v)))
                return seterr(err, "\"stop\" must be a non-empty string or an array of them");
            q->stops[q->n_stops++] = json_string_value(v);
            return 0;
        }
        if (json_is_null(v)) return 0; /* OpenAI's "no stop strings" */
        if (!json_is_array(v) || json_array_size(v) > REQUEST_MAX_STOPS)
            return seterr(err, "\"stop\" must be a string or an array of at most %d strings", REQUEST_MAX_STOPS);
        json_array_foreach(v, i, x) {
            if (!json_is_string(x) || json_string_length(x) == 0 ||
                memchr(json_string_value(x), '\0', json_string_length(x)))
                return seterr(err, "\"stop\"[%zu] must be a non-empty string", i);
            q->stops[q->n_stops++] = json_string_value(x);
        }
    } else if (!strcmp(k, "grammar")) {
        if (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)))
            return seterr(err, "\"grammar\" must be a string (GBNF) without NUL");
        q->grammar = json_string_value(v);
        q->json_schema = NULL;
    } else if (!strcmp(k, "json_schema")) {
        if (json_is_string(v) && !memchr(json_string_value(v), '\0', json_string_length(v))) q->json_schema = json_string_value(v);
        else if (!json_is_object(v) && !json_is_boolean(v)) return seterr(err, "\"json_schema\" must be a JSON Schema (an object) or its text");
        else q->json_schema = NULL; /* the object is written out as text after the keys are read */
        q->grammar = NULL;
    } else if (strcmp(k, "id") != 0 && !q->lenient) { /* "id" is echoed back as is */
        if (!strcmp(k, "response_format"))
            return seterr(err, "unknown key \"response_format\" (OpenAI's: give the schema itself as \"json_schema\")");
        return seterr(err, "unknown key \"%s\" (the keys: id, prompt, prompt_ids, messages, system, chat, max_tokens, "
                           "tools, temp or temperature, top_k, top_p, min_p, repeat_penalty, presence_penalty, "
                           "frequency_penalty, seed, stop, ignore_eos, logprobs, grammar, json_schema, no_close, "
                           "strict_schema)", k);
    }
    return 0;
}

int request_from_json(json_t *root, const request *base, request *q, char *err) {
    const char *k;
    json_t *v;
    *q = *base;
    q->text = NULL;
    q->text_len = 0;
    q->ids = NULL;
    q->n_ids = 0;
    q->messages = NULL;
    q->n_messages = 0;
    q->rich_messages = q->tools = NULL;
    if (!json_is_object(root)) return seterr(err, "a request must be a JSON object");
    int has_prompt = 0;
    json_object_foreach(root, k, v) if (json_key(q, k, v, &has_prompt, err)) return -1;
    if (has_prompt != 1) return seterr(err, "give exactly one of \"prompt\", \"prompt_ids\" and \"messages\"");
    if (json_object_get(root, "system") && !q->chat && !q->messages)
        return seterr(err, "\"system\" needs \"chat\": true (or \"messages\"), as --system needs --chat");
    if (q->messages && q->chat) return seterr(err, "\"messages\" are rendered by the chat template: drop \"chat\"");
    if (q->tools && !q->messages) return seterr(err, "\"tools\" go with \"messages\" (the chat template renders them)");
    if (json_object_get(root, "grammar") && json_object_get(root, "json_schema"))
        return seterr(err, "give only one of \"grammar\" and \"json_schema\"");
    json_t *schema = json_object_get(root, "json_schema");
    if (schema && !json_is_string(schema)) {
        char *t = json_dumps(schema, JSON_ENCODE_ANY | JSON_COMPACT);
        json_t *s = t ? json_string(t) : NULL;
        free(t);
        if (!s || json_object_set_new(root, "json_schema", s)) return seterr(err, "out of memory");
        q->json_schema = json_string_value(s);
    }
    char e[ERR_LEN];
    if (llmgen_sampler_check(&q->sp, e, sizeof e)) return seterr(err, "%s", e);
    return 0;
}

void request_free(request *q) {
    free(q->ids);
    free(q->messages);
    q->ids = NULL;
    q->messages = NULL;
}

/* The "messages" of q as the JSON text the template reads: a "system" first when given, and
 * each tool call's "arguments" as the object its text holds (templates print it with tojson;
 * OpenAI sends it as text). NULL when out of memory. */
static char *messages_json(const request *q) {
    json_t *all = json_array(), *x;
    size_t i;
    if (q->system) json_array_append_new(all, json_pack("{s:s,s:s}", "role", "system", "content", q->system));
    json_array_foreach(q->rich_messages, i, x) {
        json_t *m = json_deep_copy(x), *calls = json_object_get(m, "tool_calls"), *c;
        size_t k;
        json_array_foreach(calls, k, c) {
            json_t *f = json_object_get(c, "function"), *a = json_object_get(f, "arguments");
            json_t *o = json_is_string(a) ? json_loads(json_string_value(a), JSON_DECODE_ANY, NULL) : NULL;
            if (json_is_object(o)) json_object_set(f, "arguments", o);
            json_decref(o);
        }
        if (json_is_null(json_object_get(m, "content"))) json_object_set_new(m, "content", json_string(""));
        json_array_append_new(all, m);
    }
    char *t = json_dumps(all, JSON_COMPACT);
    json_decref(all);
    return t;
}

/* q's conversation (a "system" first when given) through the chat template into *out. */
static llmgen_status render_messages(llmgen_model *m, const request *q, char **out, char *err) {
    char e[ERR_LEN];
    int sys = q->system != NULL;
    llmgen_message *all = malloc((q->n_messages + 1) * sizeof *all);
    char *msgs = q->rich_messages ? messages_json(q) : NULL;
    char *tools = q->tools ? json_dumps(q->tools, JSON_COMPACT) : NULL;
    if (!all || (q->rich_messages && !msgs) || (q->tools && !tools)) {
        free(all);
        free(msgs);
        free(tools);
        return seterr(err, "out of memory"), LLMGEN_E_NOMEM;
    }
    if (sys) all[0] = (llmgen_message){"system", q->system};
    memcpy(all + sys, q->messages, q->n_messages * sizeof *all);
    llmgen_chat_options co = {.template_name = q->template_name, .date = q->date, .template_text = q->template_text,
                              .tools_json = tools, .messages_json = msgs, .vars_json = q->template_vars};
    llmgen_status st = llmgen_chat_render_messages(m, all, msgs ? 0 : q->n_messages + (size_t)sys, 1, &co, out, e,
                                                   sizeof e);
    free(all);
    free(msgs);
    free(tools);
    if (st) seterr(err, "%s: \"messages\": %s", q->source, e);
    return st;
}

llmgen_status request_prompt(llmgen_model *m, const request *q, int32_t **ids, int *n, char **rendered, char *err) {
    char e[ERR_LEN], *chat = NULL;
    llmgen_status st;
    *ids = NULL;
    *n = 0;
    if (rendered) *rendered = NULL;
    if (q->messages) {
        if ((st = render_messages(m, q, &chat, err))) return st;
        size_t k = 0;
        st = llmgen_tokenize(m, chat, strlen(chat), 1, 1, ids, &k, e, sizeof e);
        if (st || !k || k > INT_MAX / 2) {
            llmgen_free(chat);
            if (!st) llmgen_free(*ids), *ids = NULL;
            return seterr(err, "%s: %s", q->source, st ? e : k ? "prompt too long" : "empty prompt"),
                   st ? st : k ? LLMGEN_E_CONTEXT : LLMGEN_E_USAGE;
        }
        *n = (int)k;
        if (rendered) *rendered = chat;
        else llmgen_free(chat);
        return LLMGEN_OK;
    }
    if (q->ids) {
        if (!q->n_ids) return seterr(err, "%s: empty prompt: nothing to continue from", q->source), LLMGEN_E_USAGE;
        if (!(*ids = malloc((size_t)q->n_ids * sizeof **ids))) return seterr(err, "out of memory"), LLMGEN_E_NOMEM;
        memcpy(*ids, q->ids, (size_t)q->n_ids * sizeof **ids);
        *n = q->n_ids;
        return LLMGEN_OK;
    }
    size_t bad = utf8_invalid_at(q->text, q->text_len), sl = q->system ? strlen(q->system) : 0;
    if (bad < q->text_len)
        return seterr(err, "%s: invalid UTF-8 at byte %zu of the prompt", q->source, bad), LLMGEN_E_USAGE;
    if (q->text_len == 0 || memchr(q->text, '\0', q->text_len))
        return seterr(err, "%s: %s", q->source, q->text_len ? "the prompt contains a NUL byte"
                                                           : "empty prompt: nothing to continue from"), LLMGEN_E_USAGE;
    if (q->chat && q->system && (bad = utf8_invalid_at(q->system, sl)) < sl)
        return seterr(err, "%s: invalid UTF-8 at byte %zu of the system message", q->sys_source, bad), LLMGEN_E_USAGE;
    const char *text = q->text;
    size_t len = q->text_len, k;
    if (q->chat && (q->template_text || q->template_vars)) {
        llmgen_message msgs[2] = {{"system", q->system}, {"user", q->text}};
        llmgen_chat_options co = {.template_name = q->template_text ? NULL : q->template_name, .date = q->date,
                                  .template_text = q->template_text, .vars_json = q->template_vars};
        if ((st = llmgen_chat_render_messages(m, q->system ? msgs : msgs + 1, q->system ? 2 : 1, 1, &co, &chat, e,
                                              sizeof e)))
            return seterr(err, "--chat: %s", e), st;
        text = chat;
        len = strlen(chat);
    } else if (q->chat) {
        if ((st = llmgen_chat_render_as(m, q->template_name, q->date, q->system, q->text, &chat, e, sizeof e)))
            return seterr(err, "--%s: %s", st == LLMGEN_E_USAGE ? "template" : "chat", e), st;
        text = chat;
        len = strlen(chat);
    }
    st = llmgen_tokenize(m, text, len, 1, 1, ids, &k, e, sizeof e);
    if (st) {
        llmgen_free(chat);
        return seterr(err, "%s: %s", q->source, e), st;
    }
    if (k == 0 || k > INT_MAX / 2) {
        llmgen_free(chat);
        llmgen_free(*ids);
        *ids = NULL;
        return seterr(err, "%s: %s", q->source, k ? "prompt too long" : "empty prompt: nothing to continue from"),
               k ? LLMGEN_E_CONTEXT : LLMGEN_E_USAGE;
    }
    *n = (int)k;
    if (rendered && !(*rendered = chat ? chat : strndup(text, len))) {
        llmgen_free(*ids);
        *ids = NULL;
        return seterr(err, "out of memory"), LLMGEN_E_NOMEM;
    }
    if (!rendered) llmgen_free(chat);
    return LLMGEN_OK;
}
