/* openai.h - OpenAI's HTTP API as JSON: a request body (POST /v1/completions or
 * /v1/chat/completions) into llmgen requests, through the parser --batch uses
 * (request.c), and results into OpenAI's response, chunk and error objects.
 * No I/O, no model calls but the tokenizer's (token texts): the part of the server
 * that reads untrusted text, fuzzed by tests/fuzz/fuzz_openai.c. Never prints. */
#ifndef LLMGEN_SERVE_OPENAI_H
#define LLMGEN_SERVE_OPENAI_H

#include <jansson.h>

#include "llmgen.h"
#include "cli/request.h"
#include "serve/tools.h"

#define OPENAI_MAX_N 16        /* choices per request ("n") */
#define OPENAI_MAX_PROMPTS 16  /* strings in a completions "prompt" list */
#define OPENAI_MAX_MESSAGES 1024

typedef enum { OPENAI_COMPLETIONS, OPENAI_CHAT } openai_kind;

/* "tool_choice": whether the answer may (auto), must (required, named) or may not (none) call a tool. */
typedef enum { OPENAI_TOOLS_AUTO, OPENAI_TOOLS_NONE, OPENAI_TOOLS_REQUIRED, OPENAI_TOOLS_NAMED } openai_tool_choice;

typedef struct {
    openai_kind kind;
    json_t *root;         /* the body as request.c reads it (a copy, rewritten); owned: openai_req_free */
    request q;            /* the request of the first prompt; its strings point into root */
    json_t *prompts;      /* completions with a "prompt" list: its strings (borrowed from root); else NULL */
    int n_prompts;        /* 1, or the list's length */
    int n;                /* choices per prompt */
    int stream, include_usage;
    int logprobs;         /* 1: report log-probabilities (q.top_logprobs alternatives) */
    const char *model;    /* "model" as given (reported back), or NULL */
    json_t *tools;        /* "tools" (borrowed from root; q.tools too), or NULL */
    openai_tool_choice tool_choice;
    const char *tool_name; /* the function tool_choice names */
    int parallel_calls;   /* "parallel_tool_calls" (default true): a required call may be several */
    tools_format tool_format; /* what the rendered prompt asks for (openai_tools_prepare) */
    int tool_calls;       /* 1: outputs are parsed for tool calls (tools given, tool_choice not none) */
    char *tool_grammar;   /* the grammar that forces a call (q.grammar points to it), or NULL; owned */
} openai_req;

/* An error as OpenAI reports it: HTTP status, message, type, param (NULL: none), code (NULL: none). */
typedef struct {
    int status;
    char message[ERR_LEN];
    const char *type;
    const char *param;
    const char *code;
} openai_error;

/* Parse body (any JSON) for kind, starting from base (the server's defaults): 0, or
 * -1 with *e filled (400, naming the field). A field llmgen knows but cannot honour is
 * refused by name; unknown fields are ignored. openai_req_free(r) either way. */
int openai_parse(json_t *body, openai_kind kind, const request *base, openai_req *r, openai_error *e);
void openai_req_free(openai_req *r);
/* With "tools": check that the rendered prompt shows them, take the call format it asks for, and
 * for tool_choice required or named set r->q.grammar to the grammar of such calls. 0, or -1 with
 * *e filled (400). Nothing without tools. */
int openai_tools_prepare(openai_req *r, const char *rendered, openai_error *e);

/* {"error": {"message", "type", "param", "code"}}: a new reference. */
json_t *openai_error_json(const openai_error *e);
/* Fill e (returns e->status). */
int openai_fail(openai_error *e, int status, const char *type, const char *param, const char *code, const char *fmt,
                ...) __attribute__((format(printf, 6, 7)));

/* OpenAI's finish_reason of a result: "stop" (end of sequence, a stop string), "length". */
const char *openai_finish_reason(llmgen_stop_reason r);

/* One choice of a response to q: {"index", "text" | "message", "logprobs", "finish_reason"}. m gives the
 * token texts of the log-probabilities; the ids of tool calls are "call_<id>_<index>_<k>". A new reference. */
json_t *openai_choice(const openai_req *q, const llmgen_model *m, int index, const llmgen_result *r, const char *id);
/* {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}. */
json_t *openai_usage(long prompt, long completion, long cached);
/* The envelope {"id", "object", "created", "model", ...}: object is "text_completion", "chat.completion"
 * or, with chunk, "chat.completion.chunk". A new reference. */
json_t *openai_envelope(openai_kind kind, int chunk, const char *id, long created, const char *model);
/* A streamed choice: text (may be NULL: none), role (chat's first chunk), finish_reason (NULL: not last). */
json_t *openai_chunk_choice(openai_kind kind, int index, const char *text, size_t len, int role,
                            const char *finish_reason);

/* Thinking output kept apart from the answer (chat): the splitter of llmgen.h (llmgen_reasoning_*:
 * <think> blocks and gpt-oss's analysis channel) behind the streamed and whole answers. Zeroed
 * to start; fed piece by piece (a stream) or whole, it gives the same bytes. */
typedef struct {
    llmgen_reasoning *s;    /* made by the first feed */
    int thought;            /* a thinking block was seen */
    const char *r, *c;      /* this call's reasoning and content (n_r, n_c bytes) */
    size_t n_r, n_c;
} openai_think;
/* Feed s[0..n) (final: the output ended); r / c are what became final, valid until the next call.
 * -1: out of memory. */
int openai_think_feed(openai_think *t, const char *s, size_t n, int final);
void openai_think_free(openai_think *t);
/* A streamed chat choice carrying reasoning_content. */
json_t *openai_chunk_reasoning(int index, const char *text, size_t len);

/* A streamed answer's content while it may turn into tool calls: the bytes before where a call
 * could begin go out as content at once, the rest is held until the output ends, then parsed. */
typedef struct {
    char *buf;
    size_t n, cap, sent;
    json_t *calls;          /* at the end: the calls found (owned), or NULL */
} openai_toolhold;
/* Feed content s[0..n) (final: the output ended); *out / *n_out: the content now final. -1: out of memory. */
int openai_toolhold_feed(openai_toolhold *h, tools_format f, const char *s, size_t n, int final, const char **out,
                         size_t *n_out);
void openai_toolhold_free(openai_toolhold *h);
/* A streamed chat choice carrying the tool calls (calls: of tools_parse) with their ids. */
json_t *openai_chunk_tool_calls(int index, json_t *calls, const char *id);

#endif
