/* request.h - one generation request as the CLI and --batch describe it (prompt
 * text or ids, chat wrapping, generation settings), its prompt ids, and the JSON
 * of requests (--batch lines) and results (--json, --batch). Internal: not part of
 * the public API, shared by main.c and the fuzz targets. Never prints. */
#ifndef LLMGEN_REQUEST_H
#define LLMGEN_REQUEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "llmgen.h"
#include "base/util.h" /* ERR_LEN: the size of every err buffer */

#define REQUEST_MAX_STOPS 16
#define REQUEST_MAX_TOKENS LLMGEN_MAX_CONTEXT /* a generation cannot outgrow a context */

typedef struct {
    const char *text;          /* prompt text (may contain NULs: text_len counts), or NULL */
    size_t text_len;
    int32_t *ids;              /* (n_ids) prompt ids instead of text; owned when set */
    int n_ids;
    llmgen_message *messages;  /* (n_messages) a conversation instead ("messages" of a --batch line), rendered by
                                  the chat template; owned when set (its strings point into the JSON) */
    size_t n_messages;
    json_t *rich_messages;     /* the "messages" array itself (borrowed) when a message carries tool_calls,
                                  tool_call_id or name: rendered as JSON so the template sees them; else NULL */
    json_t *tools;             /* "tools" (borrowed): the template's `tools`, a list of function descriptions */
    const char *source;        /* names the prompt in messages: "stdin", a file, "--prompt", "req.jsonl:3" */
    const char *sys_source;    /* names the system message in messages */
    int chat;                  /* wrap the text in the chat template */
    const char *system;        /* NULL: the template's default */
    const char *template_name; /* NULL: the model's own template */
    const char *template_text; /* --chat-template-file's Jinja text, or NULL */
    const char *date;          /* NULL: the template's default */
    const char *template_vars; /* more template variables, a JSON object (--chat-template-kwargs,
                                  "chat_template_kwargs"; e.g. {"enable_thinking": false}), or NULL */
    int max_tokens;            /* >= 1, or -1 */
    int ignore_eos;
    const char *stops[REQUEST_MAX_STOPS];
    int n_stops;
    int logprobs, top_logprobs; /* --logprobs N / "logprobs": N (logprobs 1, top_logprobs N) */
    llmgen_sampler_params sp;
    int seed_given;            /* 0: the caller draws a seed when sampling (temperature > 0) */
    int reuse_prefix;          /* llmgen_generate_params.reuse_prefix (--batch: on unless --no-prefix-cache) */
    int draft_lookup, draft_max; /* llmgen_generate_params' (--draft-lookup / --draft-ngram, --draft-max) */
    const char *grammar;       /* GBNF text (--grammar, --grammar-file, "grammar"), or NULL */
    const char *json_schema;   /* JSON Schema text (--json-schema, --json-object, "json_schema"), or NULL */
    int no_close;              /* --no-close, "no_close": the output may stop unfinished at the budget */
    int lenient;               /* unknown keys of a JSON request are ignored (the server, as llama-server does),
                                  not refused (--batch) */
    int strict_schema;         /* --strict-schema, "strict_schema": unenforceable schema keywords are errors */
} request;

/* --show-pieces' line of one token: "id<TAB>text\n", the text's control bytes, backslash and
 * bytes that are not whole UTF-8 characters escaped (\n \t \r \\ \xHH). Malloc'd (*n bytes), NULL: out of memory. */
char *piece_line(int32_t id, const char *t, size_t len, size_t *n);

/* A seed for a sampled run without a seed given: from the kernel's random source (below 2^53). */
void request_draw_seed(request *q);

/* A chat result's thinking apart (llmgen_reasoning_split on the rendered prompt): when the output
 * has a thinking block, res's "text" becomes the answer, "reasoning" the thinking text and
 * "answer_offset" the answer's byte offset in the whole output; else res is left as it is. */
void result_reasoning(json_t *res, const char *rendered, const llmgen_result *r);

/* Generation params of q (stops point into q: q must outlive p). */
void request_params(const request *q, llmgen_generate_params *p);

/* Fill q from one JSONL request object, starting from `base` (the command line's
 * settings). q keeps pointers into root ("json_schema" given
 * as an object is replaced in root by its text). Returns 0, or -1 with a message; either way
 * request_free(q) releases what it owns. */
int request_from_json(json_t *root, const request *base, request *q, char *err);
/* What request_from_json (or a caller) allocated in q: its ids and messages. */
void request_free(request *q);

/* The prompt ids of q: its ids, or its text (after the chat template) through the
 * tokenizer. *ids is the caller's (free). *rendered (if not NULL) gets the text that
 * was tokenized (caller frees; NULL for ids). Status with a message naming q->source. */
llmgen_status request_prompt(llmgen_model *m, const request *q, int32_t **ids, int *n, char **rendered, char *err);

/* "1,2,3" (commas and/or whitespace between ids) -> ids (malloc'd); -1 if not such a list. */
int parse_id_list(const char *s, int32_t **out, int *n);

/* All of fd into a NUL-terminated heap buffer (*len bytes); NULL with errno on
 * failure. On a terminal, a read that does not end in a newline can only come from
 * Ctrl-D on a non-empty line: it ends the input (no second Ctrl-D needed). */
char *read_all_fd(int fd, size_t *len);

/* Offset of the first invalid UTF-8 byte of s[0..n), or n. */
size_t utf8_invalid_at(const char *s, size_t n);
/* A JSON string of possibly invalid UTF-8 (invalid bytes become U+FFFD). */
json_t *json_text(const char *s, size_t n);

/* Most alternatives --logprobs and "logprobs" take. */
#define REQUEST_MAX_LOGPROBS 100

/* {"prompt_ids", "ids", "text", "stop_reason", "seed", "timings": {...}} and, when r has
 * them, "logprobs": [{"id", "text", "logprob", "top": [{"id", "text", "logprob"}, ...]}, ...].
 * text_model (the model whose tokenizer writes the texts) NULL gives "text": null. */
json_t *result_json(const int32_t *prompt, int n_prompt, const llmgen_result *r, const llmgen_model *text_model,
                    uint64_t seed);
/* {"id": id (if any), "line": line, "error": msg, "exit": code} */
json_t *error_json(json_t *id, long line, const char *msg, int code);

#endif
