/* jinja.h - a small Jinja interpreter for chat templates: the subset that Hugging Face
 * chat templates use, rendered as transformers' apply_chat_template renders them
 * (jinja2's ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the
 * loopcontrols extension, transformers' {% generation %} block, its tojson, and the
 * globals raise_exception and strftime_now).
 *
 * Contract: no global mutable state, no printing, no exit. Errors are one line in
 * `err` (TOK_ERR_LEN bytes) naming the template line and the construct: a template
 * outside the subset is refused, never rendered differently. A template is immutable
 * after parsing and may be rendered from several threads at once.
 *
 * Limits (the text is untrusted): nesting depth, loop iterations, macro recursion,
 * output size and memory per render are bounded; exceeding one is an error. */
#ifndef VFT_JINJA_H
#define VFT_JINJA_H

#include <stddef.h>

typedef struct jinja_template jinja_template;

/* Parse `len` bytes of template text (a copy is kept). *out is the caller's: jinja_free. */
int jinja_parse(const char *src, size_t len, jinja_template **out, char *err);
void jinja_free(jinja_template *t);

typedef struct {
    /* The template's variables as one JSON object (UTF-8), e.g.
     * {"messages": [...], "bos_token": "<s>", "add_generation_prompt": true}.
     * transformers' own defaults (tools / documents None) are the caller's to pass. */
    const char *vars_json;
    size_t vars_len;
    /* What strftime_now formats: seconds since the epoch, as local time; -1 = now. */
    long long now;
    /* Limits; 0 = the defaults (2,000,000 loop iterations and calls, 2e8 units of work
     * that allocates nothing, 8 MB of text per string, 64 MB of memory). */
    long max_steps;
    long long max_work;
    size_t max_output, max_memory;
} jinja_input;

/* Render. *out (NUL-terminated, *len bytes) is malloc'd, caller frees. When the
 * template calls raise_exception(msg), the error is "raise_exception: msg". */
int jinja_render(const jinja_template *t, const jinja_input *in, char **out, size_t *len, char *err);

/* Build the JSON text of a string (quotes included), as json.dumps(ensure_ascii=False)
 * writes it, appended to a malloc'd buffer (*buf, *n, *cap). Returns 0 or -1 (memory). */
int jinja_json_string(char **buf, size_t *n, size_t *cap, const char *s, size_t len);

#endif
