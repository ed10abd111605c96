/* openai.c - OpenAI's request and response JSON (openai.h). A body is copied and
 * rewritten into the request format of --batch (request.c), which then reads it with
 * its unknown keys ignored: OpenAI's names that mean what request.c's mean pass
 * through ("prompt", "messages", "max_tokens", "temperature", "top_p", "seed", "stop",
 * ...); the others are mapped here ("n", "stream", "response_format", chat's boolean
 * "logprobs", content given as parts). */
#include "openai.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int openai_fail(openai_error *e, int status, const char *type, const char *param, const char *code, const char *fmt,
                ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    e->status = status;
    e->type = type;
    e->param = param;
    e->code = code;
    return status;
}

#define BAD(param, ...) (openai_fail(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__), -1)
#define UNSUPPORTED(param, ...) (openai_fail(e, 400, "invalid_request_error", param, "unsupported_parameter", __VA_ARGS__), -1)

json_t *openai_error_json(const openai_error *e) {
    json_t *o = json_object(), *in = json_object();
    json_object_set_new(in, "message", json_text(e->message, strlen(e->message)));
    json_object_set_new(in, "type", json_string(e->type ? e->type : "invalid_request_error"));
    json_object_set_new(in, "param", e->param ? json_string(e->param) : json_null());
    json_object_set_new(in, "code", e->code ? json_string(e->code) : json_null());
    json_object_set_new(o, "error", in);
    return o;
}

void openai_req_free(openai_req *r) {
    request_free(&r->q);
    free(r->tool_grammar);
    json_decref(r->prompts);
    json_decref(r->root);
    memset(r, 0, sizeof *r);
}

/* The text of a message's "content": a string, or a list of {"type": "text", "text"} parts
 * (joined), as a new string value; NULL with *e filled. */
static json_t *content_text(json_t *c, size_t i, openai_error *e) {
    const char *param = "messages";
    if (json_is_string(c)) return json_incref(c);
    if (!json_is_array(c)) {
            (void)BAD(param, "'messages[%zu].content' must be a string or a list of text parts", i);
            return NULL;
        }
    size_t n = 0, k;
    json_t *part;
    json_array_foreach(c, k, part) {
        json_t *t = json_object_get(part, "text"), *type = json_object_get(part, "type");
        if (!json_is_object(part) || !json_is_string(type) || strcmp(json_string_value(type), "text"))
            {
            (void)UNSUPPORTED(param, "'messages[%zu].content[%zu]': only parts of type \"text\" are supported", i, k);
            return NULL;
        }
        if (!json_is_string(t)) {
            (void)BAD(param, "'messages[%zu].content[%zu].text' must be a string", i, k);
            return NULL;
        }
        n += json_string_length(t);
    }
    char *buf = malloc(n + 1);
    if (!buf) {
            (void)BAD(param, "out of memory");
            return NULL;
        }
    size_t w = 0;
    json_array_foreach(c, k, part) {
        json_t *t = json_object_get(part, "text");
        memcpy(buf + w, json_string_value(t), json_string_length(t));
        w += json_string_length(t);
    }
    json_t *s = json_stringn(buf, w);
    free(buf);
    return s;
}

/* "messages" as request.c takes them: [{"role", "content"}] with string contents. */
static int map_messages(json_t *root, openai_error *e) {
    json_t *v = json_object_get(root, "messages"), *x, *out;
    size_t i;
    if (!v) return BAD("messages", "'messages' is required");
    if (!json_is_array(v) || !json_array_size(v)) return BAD("messages", "'messages' must be a non-empty list");
    if (json_array_size(v) > OPENAI_MAX_MESSAGES)
        return BAD("messages", "'messages' has more than %d messages", OPENAI_MAX_MESSAGES);
    out = json_array();
    json_array_foreach(v, i, x) {
        json_t *role = json_object_get(x, "role"), *c = json_object_get(x, "content");
        if (!json_is_object(x) || !json_is_string(role)) {
            json_decref(out);
            return BAD("messages", "'messages[%zu]' must be an object with a string 'role'", i);
        }
        const char *r = json_string_value(role);
        if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool") &&
            strcmp(r, "developer")) {
            json_decref(out);
            return BAD("messages", "'messages[%zu].role' must be system, developer, user, assistant or tool", i);
        }
        json_t *tc = json_object_get(x, "tool_calls"), *call;
        size_t k;
        if (json_object_get(x, "function_call")) {
            json_decref(out);
            return UNSUPPORTED("messages", "'messages[%zu].function_call' is not supported: use tool_calls", i);
        }
        if (tc && !json_is_null(tc) && !json_is_array(tc)) {
            json_decref(out);
            return BAD("messages", "'messages[%zu].tool_calls' must be a list", i);
        }
        json_array_foreach(tc, k, call) {
            json_t *f = json_object_get(call, "function"), *a = json_object_get(f, "arguments");
            if (!json_is_string(json_object_get(f, "name")) || (a && !json_is_string(a) && !json_is_object(a))) {
                json_decref(out);
                return BAD("messages", "'messages[%zu].tool_calls[%zu]' must be {\"type\": \"function\", \"function\": "
                           "{\"name\": string, \"arguments\": string}}", i, k);
            }
        }
        json_t *text = !c || json_is_null(c) ? (!strcmp(r, "assistant") ? json_string("") : NULL)
                                             : content_text(c, i, e);
        if (!text) {
            json_decref(out);
            return c && !json_is_null(c) ? -1 : BAD("messages", "'messages[%zu].content' is required", i);
        }
        json_t *m = json_object();
        json_object_set_new(m, "role", json_string(!strcmp(r, "developer") ? "system" : r));
        json_object_set_new(m, "content", text);
        if (json_array_size(tc)) json_object_set(m, "tool_calls", tc);
        static const char *const ids[] = {"tool_call_id", "name"};
        for (int j = 0; j < 2; j++) {
            json_t *s = json_object_get(x, ids[j]);
            if (json_is_string(s)) json_object_set(m, ids[j], s);
        }
        json_array_append_new(out, m);
    }
    json_object_set_new(root, "messages", out);
    return 0;
}

/* A completions "prompt": a string, a list of strings (several prompts), or token ids. */
static int map_prompt(json_t *root, openai_req *r, openai_error *e) {
    json_t *p = json_object_get(root, "prompt"), *x;
    size_t i;
    if (!p) return BAD("prompt", "'prompt' is required");
    if (json_is_string(p)) return 0;
    if (!json_is_array(p) || !json_array_size(p))
        return BAD("prompt", "'prompt' must be a string, a list of strings or a list of token ids");
    json_t *first = json_array_get(p, 0);
    if (json_is_integer(first)) { /* token ids: request.c's "prompt_ids" */
        json_object_set(root, "prompt_ids", p);
        json_object_del(root, "prompt");
        return 0;
    }
    if (json_array_size(p) > OPENAI_MAX_PROMPTS) return BAD("prompt", "'prompt' has more than %d strings", OPENAI_MAX_PROMPTS);
    json_array_foreach(p, i, x) if (!json_is_string(x))
        return BAD("prompt", "'prompt[%zu]' must be a string (lists of token-id lists are not supported)", i);
    r->prompts = json_incref(p);
    r->n_prompts = (int)json_array_size(p);
    json_object_set(root, "prompt", first);
    return 0;
}

/* "response_format": {"type": "text" | "json_object" | "json_schema", "json_schema": {"schema"}}. */
static int map_response_format(json_t *root, openai_error *e) {
    json_t *f = json_object_get(root, "response_format");
    if (!f) return 0;
    json_t *type = json_object_get(f, "type");
    if (!json_is_object(f) || !json_is_string(type)) return BAD("response_format", "'response_format' must be an object with a 'type'");
    const char *t = json_string_value(type);
    if (!strcmp(t, "text")) return 0;
    if (json_object_get(root, "json_schema") || json_object_get(root, "grammar"))
        return BAD("response_format", "give only one of 'response_format', 'json_schema' and 'grammar'");
    if (!strcmp(t, "json_object")) {
        json_object_set_new(root, "json_schema", json_string("{\"type\": \"object\", \"additionalProperties\": true}"));
        return 0;
    }
    if (strcmp(t, "json_schema")) return BAD("response_format", "'response_format.type' must be text, json_object or json_schema");
    json_t *js = json_object_get(f, "json_schema"), *schema = json_object_get(js, "schema");
    if (!json_is_object(js)) return BAD("response_format", "'response_format.json_schema' must be an object");
    if (!schema) schema = json_object_get(js, "json_schema"); /* as llama-server also takes it */
    if (!json_is_object(schema) && !json_is_boolean(schema))
        return BAD("response_format", "'response_format.json_schema.schema' must be a JSON Schema");
    json_object_set(root, "json_schema", schema);
    return 0;
}

/* Fields llmgen knows but cannot honour (a 400 naming them), and those it takes only in one shape. */
static int refuse(json_t *root, openai_kind kind, openai_error *e) {
    json_t *v = json_object_get(root, "logit_bias");
    if (v && (!json_is_object(v) || json_object_size(v))) return UNSUPPORTED("logit_bias", "'logit_bias' is not supported");
    if (json_object_get(root, "functions") || json_object_get(root, "function_call"))
        return UNSUPPORTED("functions", "'functions' is not supported");
    if (kind == OPENAI_COMPLETIONS) {
        v = json_object_get(root, "best_of");
        if (v && !(json_is_integer(v) && json_integer_value(v) == 1)) return UNSUPPORTED("best_of", "'best_of' must be 1");
        v = json_object_get(root, "echo");
        if (v && !json_is_false(v)) return UNSUPPORTED("echo", "'echo' is not supported");
        v = json_object_get(root, "suffix");
        if (v && !(json_is_string(v) && !json_string_length(v))) return UNSUPPORTED("suffix", "'suffix' is not supported");
    }
    v = json_object_get(root, "model");
    if (v && !json_is_string(v)) return BAD("model", "'model' must be a string");
    return 0;
}

/* The key a request.c message names first ("\"key\" must be ..."), or NULL. */
/* "tools", "tool_choice", "parallel_tool_calls" (chat). */
static int map_tools(json_t *root, openai_kind kind, openai_req *r, openai_error *e) {
    json_t *t = json_object_get(root, "tools"), *c = json_object_get(root, "tool_choice");
    json_t *par = json_object_get(root, "parallel_tool_calls"), *x;
    size_t i;
    r->parallel_calls = 1;
    if (par && !json_is_boolean(par)) return BAD("parallel_tool_calls", "'parallel_tool_calls' must be true or false");
    if (par) r->parallel_calls = json_is_true(par);
    if (t && kind != OPENAI_CHAT) return BAD("tools", "'tools' is for /v1/chat/completions");
    if (t && !json_is_array(t)) return BAD("tools", "'tools' must be a list of functions");
    json_array_foreach(t, i, x) {
        json_t *f = json_object_get(x, "function"), *type = json_object_get(x, "type");
        if (!json_is_object(x) || !json_is_string(type) || strcmp(json_string_value(type), "function") ||
            !json_is_object(f) || !json_is_string(json_object_get(f, "name")))
            return BAD("tools", "'tools[%zu]' must be {\"type\": \"function\", \"function\": {\"name\": string, ...}}",
                       i);
        json_t *p = json_object_get(f, "parameters");
        if (p && !json_is_object(p)) return BAD("tools", "'tools[%zu].function.parameters' must be a JSON Schema", i);
    }
    if (!json_array_size(t)) {
        json_object_del(root, "tools");
        t = NULL;
    }
    r->tools = t;
    r->tool_choice = OPENAI_TOOLS_AUTO;
    if (!c) return 0;
    if (json_is_string(c)) {
        const char *s = json_string_value(c);
        r->tool_choice = !strcmp(s, "auto") ? OPENAI_TOOLS_AUTO : !strcmp(s, "none") ? OPENAI_TOOLS_NONE
                       : !strcmp(s, "required") ? OPENAI_TOOLS_REQUIRED : -1;
        if ((int)r->tool_choice < 0) return BAD("tool_choice", "'tool_choice' must be none, auto, required or a function");
    } else {
        json_t *f = json_object_get(c, "function"), *name = json_object_get(f, "name");
        if (!json_is_object(c) || !json_is_string(name))
            return BAD("tool_choice", "'tool_choice' must be none, auto, required or "
                                      "{\"type\": \"function\", \"function\": {\"name\": string}}");
        r->tool_choice = OPENAI_TOOLS_NAMED;
        r->tool_name = json_string_value(name); /* root keeps "tool_choice": request.c ignores it */
    }
    if (!t && r->tool_choice != OPENAI_TOOLS_NONE && r->tool_choice != OPENAI_TOOLS_AUTO)
        return BAD("tool_choice", "'tool_choice' asks for a tool call, but 'tools' is empty");
    return 0;
}

int openai_tools_prepare(openai_req *r, const char *rendered, openai_error *e) {
    if (!r->tools) return 0;
    json_t *x;
    size_t i;
    json_array_foreach(r->tools, i, x) {
        const char *name = json_string_value(json_object_get(json_object_get(x, "function"), "name"));
        if (!strstr(rendered, name))
            return BAD("tools", "the chat template does not show the tools to the model (function \"%s\" is not in "
                                "the prompt): give a template that renders them (--chat-template-file)", name);
    }
    r->tool_format = tools_format_of(rendered);
    r->tool_calls = r->tool_choice != OPENAI_TOOLS_NONE;
    if (r->tool_choice != OPENAI_TOOLS_REQUIRED && r->tool_choice != OPENAI_TOOLS_NAMED) return 0;
    if (r->q.grammar || r->q.json_schema)
        return BAD("tool_choice", "a required tool call cannot be combined with 'response_format', 'grammar' or "
                                  "'json_schema'");
    char err[ERR_LEN];
    if (tools_grammar(r->tool_format, r->tools, r->tool_choice == OPENAI_TOOLS_NAMED ? r->tool_name : NULL,
                      r->parallel_calls, &r->tool_grammar, err, sizeof err))
        return BAD("tool_choice", "'tool_choice': %s", err);
    r->q.grammar = r->tool_grammar;
    return 0;
}

static const char *quoted_key(const char *msg, char *buf, size_t n) {
    if (!strncmp(msg, "sampler: ", 9)) { /* llmgen_sampler_check: "sampler: FIELD must be ..." */
        size_t k = strcspn(msg + 9, " ");
        if (k >= n) return NULL;
        memcpy(buf, msg + 9, k);
        buf[k] = '\0';
        return buf;
    }
    const char *a = strchr(msg, '"'), *b = a ? strchr(a + 1, '"') : NULL;
    if (!b || (size_t)(b - a) >= n || b == a + 1) return NULL;
    memcpy(buf, a + 1, (size_t)(b - a - 1));
    buf[b - a - 1] = '\0';
    return buf;
}

int openai_parse(json_t *body, openai_kind kind, const request *base, openai_req *r, openai_error *e) {
    static const char *const consumed[] = {"n", "stream", "stream_options", "response_format", "top_logprobs",
                                           "user",
                                           "logit_bias", "best_of", "echo", "suffix", "parallel_tool_calls"};
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->n = 1;
    r->n_prompts = 1;
    if (!json_is_object(body)) return BAD(NULL, "the request body must be a JSON object");
    json_t *root = r->root = json_deep_copy(body), *v;
    if (!root) return BAD(NULL, "out of memory");
    const char *k;
    void *tmp;
    json_object_foreach_safe(root, tmp, k, v) if (json_is_null(v)) json_object_del(root, k); /* null: not given */
    if (refuse(root, kind, e)) return -1;
    if ((v = json_object_get(root, "n"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > OPENAI_MAX_N)
            return BAD("n", "'n' must be an integer from 1 to %d", OPENAI_MAX_N);
        r->n = (int)json_integer_value(v);
    }
    if ((v = json_object_get(root, "stream"))) {
        if (!json_is_boolean(v)) return BAD("stream", "'stream' must be true or false");
        r->stream = json_is_true(v);
    }
    if ((v = json_object_get(root, "stream_options"))) {
        json_t *u = json_object_get(v, "include_usage");
        if (!json_is_object(v) || (u && !json_is_boolean(u)))
            return BAD("stream_options", "'stream_options' must be an object {\"include_usage\": boolean}");
        r->include_usage = json_is_true(u);
    }
    json_t *lp = json_object_get(root, "logprobs"), *top = json_object_get(root, "top_logprobs");
    if (kind == OPENAI_CHAT) {
        if (lp && !json_is_boolean(lp)) return BAD("logprobs", "'logprobs' must be true or false");
        if (top && (!json_is_integer(top) || json_integer_value(top) < 0 || json_integer_value(top) > 20))
            return BAD("top_logprobs", "'top_logprobs' must be an integer from 0 to 20");
        if (top && !json_is_true(lp)) return BAD("top_logprobs", "'top_logprobs' needs 'logprobs': true");
        r->logprobs = json_is_true(lp);
        if (r->logprobs) json_object_set_new(root, "logprobs", json_integer(top ? json_integer_value(top) : 0));
        else json_object_del(root, "logprobs");
        if (map_messages(root, e)) return -1;
        json_object_del(root, "prompt"); /* chat takes messages only */
        json_object_del(root, "prompt_ids");
    } else {
        if (lp && (!json_is_integer(lp) || json_integer_value(lp) < 0 || json_integer_value(lp) > 5))
            return BAD("logprobs", "'logprobs' must be an integer from 0 to 5");
        r->logprobs = lp != NULL;
        if (json_object_get(root, "messages")) return BAD("messages", "'messages' is for /v1/chat/completions");
        if (map_prompt(root, r, e)) return -1;
    }
    if (r->stream && r->logprobs) return UNSUPPORTED("logprobs", "'logprobs' with 'stream' is not supported yet");
    if (map_response_format(root, e) || map_tools(root, kind, r, e)) return -1;
    if ((v = json_object_get(root, "model"))) r->model = json_string_value(v); /* request.c ignores it */
    for (size_t i = 0; i < sizeof consumed / sizeof *consumed; i++) json_object_del(root, consumed[i]);
    request b = *base;
    b.lenient = 1;
    if (kind == OPENAI_COMPLETIONS) b.max_tokens = 16; /* OpenAI's default there; chat: the server's */
    char err[ERR_LEN], key[64];
    if (request_from_json(root, &b, &r->q, err)) {
        const char *param = quoted_key(err, key, sizeof key);
        static const char *const known[] = {"messages", "prompt", "prompt_ids", "max_tokens", "max_completion_tokens",
                                            "temperature", "temp", "top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty",
                                            "frequency_penalty",
                                            "logprobs", "seed", "stop", "grammar", "json_schema", "system", "chat", "tools",
                                            "ignore_eos", "no_close"};
        const char *p = NULL;
        for (size_t i = 0; param && i < sizeof known / sizeof *known; i++)
            if (!strcmp(param, known[i])) p = known[i];
        return BAD(p, "%s", err);
    }
    r->q.source = r->q.sys_source = "request";
    return 0;
}

const char *openai_finish_reason(llmgen_stop_reason r) {
    return r == LLMGEN_STOP_LENGTH || r == LLMGEN_STOP_CONTEXT ? "length" : "stop";
}

static json_t *token_text(const llmgen_model *m, int32_t id) {
    size_t len = 0;
    const char *b = m ? llmgen_token_bytes(m, id, &len) : NULL;
    return json_text(b ? b : "", len);
}

static json_t *token_bytes(const llmgen_model *m, int32_t id) {
    size_t len = 0;
    const char *b = m ? llmgen_token_bytes(m, id, &len) : NULL;
    json_t *a = json_array();
    for (size_t i = 0; i < len; i++) json_array_append_new(a, json_integer((unsigned char)b[i]));
    return a;
}

/* chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]} */
static json_t *chat_logprobs(const llmgen_model *m, const llmgen_result *r) {
    json_t *content = json_array(), *o = json_object();
    int w = 1 + r->top_logprobs;
    for (int i = 0; i < r->n_ids; i++) {
        const llmgen_logprob *row = r->logprobs + (size_t)i * (size_t)w;
        json_t *t = json_object(), *tops = json_array();
        json_object_set_new(t, "token", token_text(m, row[0].id));
        json_object_set_new(t, "logprob", json_real(row[0].logprob));
        json_object_set_new(t, "bytes", token_bytes(m, row[0].id));
        for (int k = 1; k < w; k++) {
            json_t *a = json_object();
            json_object_set_new(a, "token", token_text(m, row[k].id));
            json_object_set_new(a, "logprob", json_real(row[k].logprob));
            json_object_set_new(a, "bytes", token_bytes(m, row[k].id));
            json_array_append_new(tops, a);
        }
        json_object_set_new(t, "top_logprobs", tops);
        json_array_append_new(content, t);
    }
    json_object_set_new(o, "content", content);
    return o;
}

/* completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"} */
static json_t *completion_logprobs(const llmgen_model *m, const llmgen_result *r) {
    json_t *o = json_object(), *toks = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    int w = 1 + r->top_logprobs;
    size_t off = 0;
    for (int i = 0; i < r->n_ids; i++) {
        const llmgen_logprob *row = r->logprobs + (size_t)i * (size_t)w;
        size_t len = 0;
        if (m) llmgen_token_bytes(m, row[0].id, &len);
        json_array_append_new(toks, token_text(m, row[0].id));
        json_array_append_new(lps, json_real(row[0].logprob));
        json_array_append_new(offs, json_integer((json_int_t)off));
        off += len;
        json_t *t = json_object();
        for (int k = 1; k < w; k++) {
            json_t *s = token_text(m, row[k].id);
            if (!json_object_get(t, json_string_value(s))) json_object_set_new(t, json_string_value(s), json_real(row[k].logprob));
            json_decref(s);
        }
        json_array_append_new(tops, t);
    }
    json_object_set_new(o, "tokens", toks);
    json_object_set_new(o, "token_logprobs", lps);
    json_object_set_new(o, "top_logprobs", tops);
    json_object_set_new(o, "text_offset", offs);
    return o;
}

int openai_think_feed(openai_think *t, const char *s, size_t n, int final) {
    llmgen_reasoning_piece p;
    if (!t->s && llmgen_reasoning_new(NULL, &t->s)) return -1;
    if (llmgen_reasoning_feed(t->s, s, n, final, &p)) return -1;
    t->r = p.reasoning, t->n_r = p.reasoning_len, t->c = p.text, t->n_c = p.text_len;
    t->thought = llmgen_reasoning_where(t->s).has_reasoning;
    return 0;
}

void openai_think_free(openai_think *t) {
    llmgen_reasoning_free(t->s);
    memset(t, 0, sizeof *t);
}

json_t *openai_chunk_reasoning(int index, const char *text, size_t len) {
    json_t *c = json_object(), *d = json_object();
    json_object_set_new(c, "index", json_integer(index));
    json_object_set_new(d, "reasoning_content", json_text(text, len));
    json_object_set_new(c, "delta", d);
    json_object_set_new(c, "logprobs", json_null());
    json_object_set_new(c, "finish_reason", json_null());
    return c;
}

/* The "tool_calls" of a message or delta: [{"id", "type": "function", "function": {"name",
 * "arguments": text}}], with "index" in a delta. */
static json_t *tool_calls_json(json_t *calls, const char *id, int index, int delta) {
    json_t *out = json_array(), *c;
    size_t k;
    json_array_foreach(calls, k, c) {
        char cid[96], *args = json_dumps(json_object_get(c, "arguments"), JSON_COMPACT);
        snprintf(cid, sizeof cid, "call_%s_%d_%zu", id, index, k);
        json_t *f = json_pack("{s:O,s:s}", "name", json_object_get(c, "name"), "arguments", args ? args : "{}");
        free(args);
        json_t *o = delta ? json_pack("{s:I}", "index", (json_int_t)k) : json_object();
        json_object_set_new(o, "id", json_string(cid));
        json_object_set_new(o, "type", json_string("function"));
        json_object_set_new(o, "function", f);
        json_array_append_new(out, o);
    }
    return out;
}

json_t *openai_choice(const openai_req *q, const llmgen_model *m, int index, const llmgen_result *r, const char *id) {
    json_t *c = json_object(), *text = json_text(r->text ? r->text : "", r->text_len), *calls = NULL;
    const char *finish = openai_finish_reason(r->stop_reason);
    json_object_set_new(c, "index", json_integer(index));
    if (q->kind == OPENAI_CHAT) {
        json_t *msg = json_object();
        openai_think t = {0};
        const char *answer = r->text ? r->text : "";
        size_t n_answer = r->text ? r->text_len : 0, before;
        json_object_set_new(msg, "role", json_string("assistant"));
        if (!openai_think_feed(&t, answer, n_answer, 1) && t.thought) {
            answer = t.c;
            n_answer = t.n_c;
            json_object_set_new(msg, "reasoning_content", json_text(t.r, t.n_r));
        }
        if (q->tool_calls && (calls = tools_parse(q->tool_format, answer, n_answer, &before))) n_answer = before;
        json_decref(text);
        text = calls && !n_answer ? json_null() : json_text(answer, n_answer);
        openai_think_free(&t);
        json_object_set_new(msg, "content", text);
        if (calls) {
            json_object_set_new(msg, "tool_calls", tool_calls_json(calls, id, index, 0));
            json_decref(calls);
            finish = "tool_calls";
        }
        json_object_set_new(c, "message", msg);
    } else {
        json_object_set_new(c, "text", text);
    }
    json_object_set_new(c, "logprobs", !q->logprobs || !r->logprobs ? json_null()
                                        : q->kind == OPENAI_CHAT ? chat_logprobs(m, r) : completion_logprobs(m, r));
    json_object_set_new(c, "finish_reason", json_string(finish));
    return c;
}

int openai_toolhold_feed(openai_toolhold *h, tools_format f, const char *s, size_t n, int final, const char **out,
                         size_t *n_out) {
    *out = "";
    *n_out = 0;
    if (h->n + n + 1 > h->cap) {
        size_t c = h->cap ? h->cap : 64;
        while (c < h->n + n + 1) c *= 2;
        char *p = realloc(h->buf, c);
        if (!p) return -1;
        h->buf = p;
        h->cap = c;
    }
    if (n) memcpy(h->buf + h->n, s, n);
    h->n += n;
    size_t upto = final ? h->n : tools_hold_from(f, h->buf, h->n), before;
    while (!final && upto && (h->buf[upto - 1] == ' ' || h->buf[upto - 1] == '\t' || h->buf[upto - 1] == '\r' ||
                              h->buf[upto - 1] == '\n'))
        upto--; /* white space before a call is dropped from the content */
    if (final && (h->calls = tools_parse(f, h->buf, h->n, &before))) upto = before;
    if (upto > h->sent) {
        *out = h->buf + h->sent;
        *n_out = upto - h->sent;
        h->sent = upto;
    }
    return 0;
}

void openai_toolhold_free(openai_toolhold *h) {
    free(h->buf);
    json_decref(h->calls);
    memset(h, 0, sizeof *h);
}

json_t *openai_chunk_tool_calls(int index, json_t *calls, const char *id) {
    json_t *c = json_object(), *d = json_object();
    json_object_set_new(c, "index", json_integer(index));
    json_object_set_new(d, "tool_calls", tool_calls_json(calls, id, index, 1));
    json_object_set_new(c, "delta", d);
    json_object_set_new(c, "logprobs", json_null());
    json_object_set_new(c, "finish_reason", json_null());
    return c;
}

json_t *openai_usage(long prompt, long completion, long cached) {
    json_t *u = json_object(), *d = json_object();
    json_object_set_new(u, "prompt_tokens", json_integer(prompt));
    json_object_set_new(u, "completion_tokens", json_integer(completion));
    json_object_set_new(u, "total_tokens", json_integer(prompt + completion));
    json_object_set_new(d, "cached_tokens", json_integer(cached));
    json_object_set_new(u, "prompt_tokens_details", d);
    return u;
}

json_t *openai_envelope(openai_kind kind, int chunk, const char *id, long created, const char *model) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "object", json_string(kind == OPENAI_COMPLETIONS ? "text_completion"
                                                 : chunk ? "chat.completion.chunk" : "chat.completion"));
    json_object_set_new(o, "created", json_integer(created));
    json_object_set_new(o, "model", json_text(model, strlen(model)));
    json_object_set_new(o, "system_fingerprint", json_string("llmgen-" LLMGEN_VERSION));
    return o;
}

json_t *openai_chunk_choice(openai_kind kind, int index, const char *text, size_t len, int role,
                            const char *finish_reason) {
    json_t *c = json_object();
    json_object_set_new(c, "index", json_integer(index));
    if (kind == OPENAI_CHAT) {
        json_t *d = json_object();
        if (role) json_object_set_new(d, "role", json_string("assistant"));
        if (text) json_object_set_new(d, "content", json_text(text, len));
        json_object_set_new(c, "delta", d);
    } else {
        json_object_set_new(c, "text", json_text(text ? text : "", text ? len : 0));
    }
    json_object_set_new(c, "logprobs", json_null());
    json_object_set_new(c, "finish_reason", finish_reason ? json_string(finish_reason) : json_null());
    return c;
}
