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

#define OPENAI_MAX_N 16        /* choices per request ("n") */
#define OPENAI_MAX_PROMPTS 16  /* strings in a completions "prompt" list */
#define OPENAI_MAX_MESSAGES 1024

typedef enum { OPENAI_COMPLETIONS, OPENAI_CHAT } openai_kind;

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

/* {"error": {"message", "type", "param", "code"}}: a new reference. */
json_t *openai_error_json(const openai_error *e);
/* Fill e (returns e->status). */
int openai_fail(openai_error *e, int status, const char *type, const char *param, const char *code, const char *fmt,
                ...) __attribute__((format(printf, 6, 7)));

/* OpenAI's finish_reason of a result: "stop" (end of sequence, a stop string), "length". */
const char *openai_finish_reason(llmgen_stop_reason r);

/* One choice of a response: {"index", "text" | "message", "logprobs", "finish_reason"}. m gives the
 * token texts of the log-probabilities. A new reference. */
json_t *openai_choice(openai_kind kind, const llmgen_model *m, int index, const llmgen_result *r, int logprobs);
/* {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}. */
json_t *openai_usage(long prompt, long completion, long cached);
/* The envelope {"id", "object", "created", "model", ...}: object is "text_completion", "chat.completion"
 * or, with chunk, "chat.completion.chunk". A new reference. */
json_t *openai_envelope(openai_kind kind, int chunk, const char *id, long created, const char *model);
/* A streamed choice: text (may be NULL: none), role (chat's first chunk), finish_reason (NULL: not last). */
json_t *openai_chunk_choice(openai_kind kind, int index, const char *text, size_t len, int role,
                            const char *finish_reason);

/* Thinking output kept apart from the answer (chat): an output that starts (after white space) with
 * "<think>" has the text up to "</think>" as its reasoning_content, the rest (its leading white
 * space dropped) as content; any other output is all content, byte for byte. Fed piece by piece
 * (a stream) or whole, it gives the same bytes. */
typedef struct {
    int state;              /* 0: not known yet, 1: inside <think>, 2: the answer */
    int strip;              /* drop the answer's leading white space (after </think>) */
    int thought;            /* a <think> block was seen */
    char *hold, *r, *c;     /* held back; this call's reasoning and content */
    size_t n_hold, cap_hold, n_r, cap_r, n_c, cap_c;
} openai_think;
/* Feed s[0..n) (final: the output ended); *r / *c (n_r, n_c bytes) are what became final, valid until
 * the next call. -1: out of memory. */
int openai_think_feed(openai_think *t, const char *s, size_t n, int final);
void openai_think_free(openai_think *t);
/* A streamed chat choice carrying reasoning_content. */
json_t *openai_chunk_reasoning(int index, const char *text, size_t len);

#endif
