/* tokenizer.h - vendor-free tokenizer: byte-level BPE (GPT-2 / SmolLM2 / Llama 3 /
 * Qwen2) and SentencePiece-style BPE (Llama 2 / Mistral), loaded from a Hugging
 * Face tokenizer.json or from GGUF tokenizer metadata (handed in as plain arrays,
 * so this library never includes anything from llmgen's src/).
 *
 * Contract: no global mutable state, no printing, no exit. Fallible calls take
 * `char *err` (TOK_ERR_LEN bytes), return 0 / -1 and write one line naming the
 * file or component and the problem. A tokenizer is immutable after load and can
 * be shared between threads; a tok_stream is owned by one thread. */
#ifndef VFT_TOKENIZER_H
#define VFT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#define TOK_ERR_LEN 512

typedef struct tokenizer tokenizer;

/* Plain description of a vocabulary as GGUF stores it (`tokenizer.ggml.*`).
 * Strings are (ptr, len) pairs, not NUL-terminated; they only need to live
 * during tok_load_spec (the tokenizer copies what it keeps). */
typedef struct {
    const char *ptr;
    size_t len;
} tok_str;

typedef struct {
    tok_str model; /* "gpt2" (byte-level BPE) or "llama" (SentencePiece BPE) */
    tok_str pre;   /* tokenizer.ggml.pre: "smollm", "llama-bpe", "qwen2", "default", ... (may be empty) */
    size_t n_tokens;
    const tok_str *tokens; /* (n_tokens) */
    const int32_t
        *token_types;    /* (n_tokens) or NULL: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte */
    const float *scores; /* (n_tokens) or NULL (SentencePiece scores) */
    size_t n_merges;
    const tok_str *merges;                  /* (n_merges) "a b", rank = index; may be 0 for llama */
    int32_t bos_id, eos_id, unk_id, pad_id; /* -1 when absent */
    int add_bos, add_eos, add_space_prefix; /* -1 when absent (use the model's default) */
    tok_str chat_template;                  /* may be empty */
    tok_str arch;                           /* general.architecture (may be empty): "gemma*" and "phi3" SentencePiece
                                 vocabularies are read as transformers reads those files */
} tok_spec;

/* Load from tokenizer.json; `config_json` (tokenizer_config.json: bos/eos,
 * add_bos_token, chat_template) may be NULL. */
int tok_load_json(const char *tokenizer_json, const char *config_json, tokenizer **out, char *err);
/* Load from a vocabulary description (GGUF metadata). `source` names the file in messages. */
int tok_load_spec(const tok_spec *spec, const char *source, tokenizer **out, char *err);
void tok_free(tokenizer *t);

size_t tok_vocab_size(const tokenizer *t);
int32_t tok_bos(const tokenizer *t);  /* -1 if none */
int32_t tok_eos(const tokenizer *t);  /* -1 if none */
int tok_adds_bos(const tokenizer *t); /* 1 if encode(add_special=1) prepends BOS */

/* Encode `len` bytes of UTF-8 text. add_special: add BOS/EOS as the reference
 * does for this tokenizer. parse_special: match added/special tokens in the
 * text (HF default); 0 treats them as plain text. *ids is malloc'd, caller frees.
 * Invalid UTF-8 is an error (message gives the byte offset). */
int tok_encode(const tokenizer *t, const char *text, size_t len, int add_special, int parse_special, int32_t **ids,
               size_t *n_ids, char *err);

/* Raw bytes of one token (after byte-level / byte-fallback / metaspace decoding of
 * that token alone). Returns NULL for an id out of range. */
const char *tok_piece(const tokenizer *t, int32_t id, size_t *len);

/* Decode ids to text as the reference decoder does (skip_special_tokens = 0).
 * *text is malloc'd and NUL-terminated; caller frees. */
int tok_decode(const tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len, char *err);

/* Streaming decoder: feed one id at a time, get the bytes that became complete
 * UTF-8 (never a split character). tok_stream_flush returns what is left
 * (invalid trailing bytes replaced as the reference does). */
typedef struct tok_stream tok_stream;
tok_stream *tok_stream_new(const tokenizer *t);
/* Writes into *out (valid until the next call on this stream) and its length. */
int tok_stream_put(tok_stream *s, int32_t id, const char **out, size_t *len, char *err);
int tok_stream_flush(tok_stream *s, const char **out, size_t *len);
void tok_stream_free(tok_stream *s);

/* Chat templates. A conversation rendered by a Jinja chat template exactly as
 * transformers' apply_chat_template renders it (tokenize=False). */
typedef struct {
    const char *role; /* "system", "user", "assistant", ... */
    const char *content;
} tok_chat_msg;

typedef struct {
    const tok_chat_msg *messages;
    size_t n_messages;
    int add_generation_prompt;
    /* "DD Mon YYYY" (e.g. "02 Jan 2025"): strftime_now returns that day at 00:00:00
     * and date_string is set to it (the Llama 3.1+ templates print it); NULL = now. */
    const char *date;
    /* bos_token / eos_token the template sees; NULL = the tokenizer's (none without one) */
    const char *bos_token, *eos_token;
    /* more variables as one JSON object text (e.g. {"tools": [...], "enable_thinking": false}), or NULL */
    const char *vars_json;
    /* the messages as one JSON array text (members beyond role and content, such as tool_calls,
     * reach the template), instead of messages / n_messages; NULL: those */
    const char *messages_json;
} tok_chat_input;

/* Return codes of the chat calls besides 0 and -1 (bad input, out of memory) */
#define TOK_CHAT_E_ARG (-2) /* an unknown built-in template name */
/* the template raised (raise_exception: its message; or a built-in template that has no
 * system role), is outside the Jinja subset (the message names the construct and the
 * template line), or the tokenizer has none */
#define TOK_CHAT_E_TEMPLATE (-3)

/* Render `template_text` (NULL: the tokenizer's own chat_template) with the Jinja
 * interpreter. t may be NULL when template_text is given. *out is malloc'd, caller
 * frees. Returns 0, -1 (invalid UTF-8, a bad date, vars_json not an object, out of
 * memory) or TOK_CHAT_E_TEMPLATE (also: no template given and the tokenizer has none). */
int tok_chat_render_jinja(const tokenizer *t, const char *template_text, const tok_chat_input *in, char **out,
                          char *err);

/* One optional system message and one user message with the generation prompt.
 * `name` NULL: the tokenizer's own template through tok_chat_render_jinja;
 * otherwise one of the built-in templates: chatml, llama3, llama3.1, llama3.2,
 * llama2, mistral-v0.1, mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7
 * (a forced family still takes the default system message the tokenizer's own
 * template spells out as a literal). `system` may be NULL. *out is malloc'd. */
int tok_chat_render(const tokenizer *t, const char *name, const char *system, const char *user, char **out, char *err);
/* The same with the date the Llama 3.1+ templates print ("Today Date: ..."), in
 * their "%d %b %Y" form, e.g. "02 Jan 2025". date NULL renders what transformers
 * does: the template's default (Llama 3.1: "26 Jul 2024"), or today's local date
 * when the template asks for strftime_now (Llama 3.2, 3.3); a built-in family uses
 * "26 Jul 2024" (llama3.1) or today's date (llama3.2). Returns 0, -1, TOK_CHAT_E_ARG or
 * TOK_CHAT_E_TEMPLATE. */
int tok_chat_render_at(const tokenizer *t, const char *name, const char *system, const char *user, const char *date,
                       char **out, char *err);
/* (tok_chat_render_at returns TOK_CHAT_E_ARG for an unknown name, else -1 on error.) */

/* The markers of built-in template `name` that its family's vocabulary has as special
 * tokens, space-separated ("<|im_start|> <|im_end|>"); NULL for an unknown name. */
const char *tok_chat_builtin_specials(const char *name);

/* A whole conversation: msgs[0..n) with roles "system" (first only), "user" and
 * "assistant"; add_gen appends the generation prompt. `name` NULL: the tokenizer's
 * own template through tok_chat_render_jinja. A built-in name: [system,] user with
 * add_gen renders in every family (as tok_chat_render_at); other conversations in
 * the chatml, llama3, llama3.1 and llama3.2 families. Returns 0, -1 (template or
 * text error), TOK_CHAT_E_ARG (unknown template name, bad role or order) or
 * TOK_CHAT_E_TEMPLATE (the model's template raised or is outside the subset). */
int tok_chat_render_messages(const tokenizer *t, const char *name, const char *date, const tok_chat_msg *msgs, size_t n,
                             int add_gen, char **out, char *err);

#endif
