/* tools.h - OpenAI tool use through a chat template: which tool-call format the rendered
 * prompt asks the model for, the grammar that makes the model call a tool (tool_choice
 * "required" or a named function), and the calls parsed back out of its output.
 * No I/O, no model calls: part of the server's untrusted-text surface (fuzz_openai). */
#ifndef LLMGEN_SERVE_TOOLS_H
#define LLMGEN_SERVE_TOOLS_H

#include <jansson.h>
#include <stddef.h>

typedef enum {
    TOOLS_UNKNOWN = 0, /* the prompt names the tools but none of the formats below: parse any of them */
    TOOLS_HERMES,      /* <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> (Qwen, Hermes, SmolLM3) */
    TOOLS_LLAMA3,      /* {"name": ..., "parameters": {...}} as the whole answer (Llama 3.1 - 3.3) */
    TOOLS_MISTRAL,     /* [TOOL_CALLS][{"name": ..., "arguments": {...}}] or [TOOL_CALLS]name[ARGS]{...} */
} tools_format;

/* The format a prompt rendered with tools asks for (by the instructions the templates write). */
tools_format tools_format_of(const char *prompt);
/* The name of the format, for messages. */
const char *tools_format_name(tools_format f);

/* GBNF that holds exactly the calls of format f to the functions of `tools` (OpenAI's list of
 * {"type": "function", "function": {"name", "parameters"}}), each call's arguments matching its
 * function's parameters schema: one call to `only` when given, else one or more calls (one
 * when !several). 0, or -1 with one line in err (errlen bytes). *gbnf: free. */
int tools_grammar(tools_format f, json_t *tools, const char *only, int several, char **gbnf, char *err,
                  size_t errlen);

/* The tool calls in an output text[0..n) of format f: a new array of {"name", "arguments"}
 * (arguments: an object), and *content the length of the text before them (white space at
 * its end excluded); NULL when the text holds no complete call (all of it is content). */
json_t *tools_parse(tools_format f, const char *text, size_t n, size_t *content);

/* Where in text[0..n) a call of format f could begin (the bytes before it can be streamed as
 * content while the rest is held back until the output ends): n when none can. */
size_t tools_hold_from(tools_format f, const char *text, size_t n);

#endif
