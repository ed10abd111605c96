/* llmgen.h - the public C API of llmgen: an inference-session contract.
 *
 * The only header a program embedding llmgen includes (it needs nothing but
 * <stddef.h> and <stdint.h>); build with `pkg-config --cflags --libs llmgen`
 * (libllmgen.so.1; add --static for libllmgen.a and its -lpcre2-8 -lutf8proc
 * -ljansson -lm -lpthread). The shared library exports these functions only.
 *
 *   llmgen_model_open        load a model once (mmap, read-only), shared by its sessions
 *   llmgen_model_capabilities  architecture, formats, context length, threads
 *   llmgen_tokenize / llmgen_detokenize / llmgen_detok_*  / llmgen_chat_render[_messages]
 *                            text <-> ids with the model's own tokenizer and chat template
 *   llmgen_session_new       a KV cache and a position (one sequence)
 *   llmgen_generate          the whole loop: prefill, sample, stream, stop (stop strings,
 *                            end of sequence, max tokens, a full context), result
 *   llmgen_chat_new / _turn  a multi-turn chat that keeps the KV cache between turns
 *   llmgen_prefill           run prompt ids, get the logits of the last position
 *   llmgen_prefill_rows      the same, handing over the logits of every position (scoring)
 *   llmgen_decode_step       run one id, get its logits
 *   llmgen_sampler_* / llmgen_sample  pick the next id (greedy or seeded sampling)
 *   llmgen_session_reset / _free, llmgen_model_free
 *
 * Generation in one call (error handling elided):
 *
 *   llmgen_model *m;    llmgen_model_open("model.gguf", NULL, &m, err, sizeof err);
 *   llmgen_session *s;  llmgen_session_new(m, 0, &s, err, sizeof err);
 *   llmgen_generate_params p;  llmgen_generate_defaults(&p);  p.on_piece = print_piece;
 *   llmgen_result r;    llmgen_generate(s, ids, n, &p, &r, err, sizeof err);
 *   ... r.ids, r.text, llmgen_stop_reason_name(r.stop_reason) ...; llmgen_result_free(&r);
 *
 * or by hand, one step at a time:
 *
 *   const float *lg;    llmgen_prefill(s, ids, n, &lg, err, sizeof err);
 *   for (;;) { int32_t id = llmgen_sample(smp, lg, NULL, 0);
 *              if (llmgen_is_eos(m, id)) break;
 *              llmgen_decode_step(s, id, &lg, err, sizeof err); }
 *
 * Errors: every fallible call returns an llmgen_status and, unless err is NULL
 * or errlen is 0, writes one line (no newline, truncated to errlen) naming the
 * file / tensor / argument and what was expected. The caller owns the buffer.
 * The library never prints, never exits and keeps no global mutable state.
 *
 * Ownership: objects returned through out-parameters belong to the caller and
 * are released with the matching _free; heap buffers (ids, text) with
 * llmgen_free. Logits pointers belong to the session and stay valid until its
 * next prefill / decode step / reset / free.
 *
 * Threads: a model is read-only after open and may be shared by any number of
 * sessions, but it owns ONE worker pool that prefill and decode step use. So
 * sessions of the same model must take turns: at most one prefill or decode
 * step per model at a time (a concurrent call fails with LLMGEN_E_BUSY rather
 * than corrupting anything). Each session, sampler and detokenizer is used
 * from one thread at a time. Tokenizer calls are safe from any thread.
 * More precisely, for bindings that encode these rules in types:
 *   - every call taking a const llmgen_model * (capabilities, is_eos, tokenize,
 *     detokenize, chat render, detok_new) only reads the model: any thread, any
 *     time, also while a session of it steps; so may llmgen_session_new;
 *   - no object is tied to the thread that made it (the library keeps no
 *     thread-local state): a session, sampler or detokenizer may move to
 *     another thread between calls, and any thread may run a model's prefill
 *     or decode step (its workers serve whichever thread calls);
 *   - llmgen_session_free may run while other sessions of the model step;
 *     llmgen_model_free runs after every session of it is freed, and with no
 *     other call on the model in flight. */
#ifndef LLMGEN_H
#define LLMGEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLMGEN_VERSION "0.1.0"

typedef enum {
    LLMGEN_OK = 0,
    LLMGEN_E_USAGE = 1,   /* bad argument (option value, id out of vocabulary, empty input) */
    LLMGEN_E_FORMAT = 2,  /* bad or unsupported model file */
    LLMGEN_E_IO = 3,      /* missing or unreadable file */
    LLMGEN_E_CONTEXT = 4, /* the tokens do not fit the session's context */
    LLMGEN_E_NOMEM = 5,   /* out of memory */
    LLMGEN_E_BUSY = 6,    /* another session of the same model is running prefill / decode */
    LLMGEN_E_TOKENIZER = 7, /* no tokenizer, or text it rejects (invalid UTF-8) */
    LLMGEN_E_TEMPLATE = 8,  /* the chat template raised an error (raise_exception) for these messages,
                               uses Jinja outside the interpreter's subset, or the model has none */
} llmgen_status;

/* The kernel set a model opened on this CPU uses unless told otherwise ("avx512",
 * "avx2", "neon", "scalar"); never NULL. */
const char *llmgen_kernels_default(void);

/* A short lower-case name of a status ("ok", "usage", "format", ...); never NULL. */
const char *llmgen_status_name(llmgen_status st);

/* Release a buffer returned by llmgen_tokenize, llmgen_detokenize or
 * llmgen_chat_render. NULL is fine. */
void llmgen_free(void *p);

/* ---- model -------------------------------------------------------------------- */

typedef struct llmgen_model llmgen_model;
typedef struct llmgen_session llmgen_session;

/* Limits of the API (and of the command line, which prints them in --help). Decimal
 * literals so that help texts can spell them at compile time. */
#define LLMGEN_MAX_THREADS 256          /* worker threads of a model */
#define LLMGEN_DEFAULT_CONTEXT 4096     /* a session's context when none is asked for (at most the model's) */
#define LLMGEN_MAX_CONTEXT 16777216     /* 2^24: the most positions a model, a session or a prompt can have */

typedef struct {
    int n_threads;        /* worker threads for prefill / decode, 1..LLMGEN_MAX_THREADS; 0 = the CPUs this
                             process may use (llmgen_capabilities.cpus, at most LLMGEN_MAX_THREADS) */
    const char *kernels;  /* NULL = best for this CPU; "scalar", "avx2", "avx512", "neon" */
    int no_tokenizer;     /* 1: skip loading the tokenizer (ids only; faster open) */
    int tokenizer_only;   /* 1: load the tokenizer alone, no weights: path may also be a
                             tokenizer.json; sessions cannot be opened (LLMGEN_E_USAGE) */
    int exact;            /* 1: exact mode, f32 activations (greedy ids equal HF transformers');
                             0 (default): fast mode, Q4_0/Q4_1/Q8_0 weights repacked at load and
                             activations quantized to int8 per block of 32 */
    int split_all;        /* 1: every matmul and attention pass on all n_threads threads, however
                             small (for tests of the thread split); 0 (default): each on as many
                             threads as its work pays for, which on many cores is fewer for small
                             matrices (the results are the same bits either way) */
} llmgen_model_options;

typedef struct {
    const char *architecture; /* "llama" */
    const char *format;       /* "gguf" or "safetensors" ("tokenizer.json" for a tokenizer-only open) */
    const char *weight_types; /* distinct weight dtypes, e.g. "Q4_1+Q8_0+F32" */
    const char *kernels;      /* kernel table in use: "avx512", "avx2", "neon", "scalar" */
    int context_length;       /* the model's maximum positions */
    int vocab_size;           /* logits per position (tokenizer-only: the tokenizer's vocabulary) */
    int n_threads;            /* size of the model's worker pool */
    int max_sequences;        /* sessions an llmgen_batch can step together (LLMGEN_MAX_SEQUENCES) */
    int has_tokenizer;        /* 1 if the llmgen_tokenize family works */
    int cpus;                 /* CPUs this process may use at open: the smaller of its affinity mask and
                                 its cgroup CPU quota (0 for a tokenizer-only open) */
    const char *cpus_from;    /* what set cpus: "online CPUs", "affinity mask", "cgroup v1 quota",
                                 "cgroup v2 quota" */
} llmgen_capabilities;

/* Open `path`: a .gguf file, a Hugging Face model directory (config.json,
 * *.safetensors, tokenizer.json), or a .safetensors file with config.json beside
 * it. opt may be NULL (defaults). Status: LLMGEN_E_IO (missing / unreadable),
 * LLMGEN_E_FORMAT (bad or unsupported content), LLMGEN_E_USAGE (bad options,
 * including a kernel set this CPU or build lacks),
 * LLMGEN_E_NOMEM. On success *out is owned by the caller: llmgen_model_free. */
llmgen_status llmgen_model_open(const char *path, const llmgen_model_options *opt,
                                llmgen_model **out, char *err, size_t errlen);
/* Free the model. Every session of it must have been freed first. NULL is fine. */
void llmgen_model_free(llmgen_model *m);
/* Fill *out; its strings belong to the model and live as long as it. */
void llmgen_model_capabilities(const llmgen_model *m, llmgen_capabilities *out);

/* 1 if `id` ends generation for this model (config eos ids, or the tokenizer's eos). */
int llmgen_is_eos(const llmgen_model *m, int32_t id);

/* ---- tokenizer (needs capabilities.has_tokenizer; else LLMGEN_E_TOKENIZER) ------- */

/* Encode len bytes of UTF-8 text. add_special: add BOS/EOS as the model's
 * reference tokenizer does; parse_special: recognise special tokens written in
 * the text (the Hugging Face default). *ids (*n_ids entries) is the caller's:
 * llmgen_free. Invalid UTF-8 is LLMGEN_E_TOKENIZER with the byte offset. */
llmgen_status llmgen_tokenize(const llmgen_model *m, const char *text, size_t len, int add_special,
                              int parse_special, int32_t **ids, size_t *n_ids, char *err, size_t errlen);

/* The bytes of one token (byte-level BPE and byte-fallback pieces decoded; a special
 * token's text), owned by the model; NULL (*len 0) for an id outside the tokenizer's
 * vocabulary or a model without a tokenizer. What a grammar matches tokens by. */
const char *llmgen_token_bytes(const llmgen_model *m, int32_t id, size_t *len);

/* Decode ids to text as the reference decoder does (special tokens kept).
 * *text is NUL-terminated, *len bytes without the NUL; the caller's: llmgen_free. */
llmgen_status llmgen_detokenize(const llmgen_model *m, const int32_t *ids, size_t n, char **text,
                                size_t *len, char *err, size_t errlen);

/* The special tokens of built-in template `name` (see llmgen_chat_render_as) that
 * are not single tokens of m's vocabulary, space-separated, into missing (empty when
 * every one is; such a marker is tokenized as plain text and the model has not seen
 * the format). LLMGEN_E_USAGE: an unknown name; LLMGEN_E_TOKENIZER: no tokenizer. */
llmgen_status llmgen_chat_template_check(const llmgen_model *m, const char *name, char *missing, size_t n,
                                         char *err, size_t errlen);

/* Wrap one user message (and an optional system message, NULL = the template's
 * default) in the model's chat template, ready for generation, as transformers'
 * apply_chat_template(add_generation_prompt=True) renders it. *out is
 * NUL-terminated and the caller's: llmgen_free. */
llmgen_status llmgen_chat_render(const llmgen_model *m, const char *system, const char *user, char **out,
                                 char *err, size_t errlen);

/* The same with a built-in template and a date. `name` NULL: the model's own
 * template (llmgen_chat_render_messages); else one of chatml, llama3, llama3.1, llama3.2,
 * llama2, mistral-v0.1, mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7.
 * `date` ("%d %b %Y", e.g. "02 Jan 2025") is what the Llama 3.1+ templates print as
 * today's date; NULL renders what transformers does (the template's default, or the
 * local date for templates that ask for it, so such renders change from day to day). */
llmgen_status llmgen_chat_render_as(const llmgen_model *m, const char *name, const char *date, const char *system,
                                    const char *user, char **out, char *err, size_t errlen);

/* A multi-turn conversation through a Jinja chat template, rendered byte for byte as
 * transformers' apply_chat_template(tokenize=False) renders it. */
typedef struct {
    const char *role;     /* "system", "user", "assistant", "tool", ... (UTF-8) */
    const char *content;  /* UTF-8 */
} llmgen_message;

typedef struct {
    const char *template_name;  /* NULL: the model's own template (Jinja); else a built-in template as in
                                   llmgen_chat_render_as (every family: a system and one user message with
                                   the prompt; chatml, llama3, llama3.1, llama3.2: whole conversations) */
    const char *date;           /* "DD Mon YYYY": strftime_now returns that day at 00:00:00 and the
                                   template's date_string is set to it; NULL = the current time (and the
                                   template's own default date) */
    const char *template_text;  /* render this Jinja text instead of the model's own template */
    const char *bos_token;      /* override the model's special tokens; NULL = the model's */
    const char *eos_token;
    const char *tools_json;     /* a JSON array: the template's `tools`; NULL = None */
    const char *vars_json;      /* more variables as a JSON object (e.g. {"enable_thinking": false}); NULL = none */
    const char *messages_json;  /* the conversation as a JSON array of message objects, passed to the template
                                   as they are (so tool_calls, tool_call_id, name reach it), instead of msgs
                                   (n must then be 0); NULL = msgs */
} llmgen_chat_options;

/* Render n messages (n may be 0) as transformers' apply_chat_template(messages,
 * add_generation_prompt) does; opt may be NULL. m may be NULL when opt->template_text
 * is given (no special tokens then unless opt gives them). *out is NUL-terminated and
 * the caller's: llmgen_free. LLMGEN_E_TEMPLATE: the template refused the messages
 * ("raise_exception: <the template's message>") or is outside the supported subset
 * (the message names the construct and the template line); LLMGEN_E_USAGE: bad input
 * (invalid UTF-8, a date not "DD Mon YYYY", variables that are not a JSON object, an
 * unknown template name; with a built-in template also a role other than system, user
 * and assistant, or a system message that is not first); LLMGEN_E_TOKENIZER: a
 * conversation a built-in family does not render (the message names the family). */
llmgen_status llmgen_chat_render_messages(const llmgen_model *m, const llmgen_message *msgs, size_t n,
                                          int add_generation_prompt, const llmgen_chat_options *opt,
                                          char **out, char *err, size_t errlen);

/* Streaming detokenizer: feed generated ids one at a time, get back only bytes
 * that form complete UTF-8 (a character split across tokens waits for its end).
 * One per sequence; used from one thread at a time. */
typedef struct llmgen_detok llmgen_detok;
llmgen_status llmgen_detok_new(const llmgen_model *m, llmgen_detok **out, char *err, size_t errlen);
/* *piece (*len bytes, not NUL-terminated) belongs to the detokenizer and stays
 * valid until its next call. */
llmgen_status llmgen_detok_put(llmgen_detok *d, int32_t id, const char **piece, size_t *len, char *err,
                               size_t errlen);
/* The bytes still held back (an incomplete character, replaced as the reference does). */
void llmgen_detok_flush(llmgen_detok *d, const char **piece, size_t *len);
void llmgen_detok_free(llmgen_detok *d);

/* ---- sessions ------------------------------------------------------------------- */

/* A session of `m` with room for ctx_len tokens (0 = min(model context, LLMGEN_DEFAULT_CONTEXT);
 * more than the model's context is LLMGEN_E_USAGE). The KV cache is allocated
 * here (LLMGEN_E_NOMEM if it does not fit). The model must outlive the session. */
llmgen_status llmgen_session_new(llmgen_model *m, int ctx_len, llmgen_session **out,
                                 char *err, size_t errlen);
void llmgen_session_free(llmgen_session *s);      /* NULL is fine */
void llmgen_session_reset(llmgen_session *s);     /* forget every token: position 0 */
int llmgen_session_pos(const llmgen_session *s);  /* tokens in the cache */
int llmgen_session_ctx(const llmgen_session *s);  /* capacity in tokens */
/* Bytes of the session's KV cache (allocated; pages are touched as positions fill), with
 * the states of a hybrid model's Gated DeltaNet layers and their snapshot (f32, fixed size).
 * *ring (may be NULL): the positions each sliding-window layer keeps, a ring buffer,
 * when the context is longer than that; 0: every layer keeps the whole context. */
size_t llmgen_session_kv_bytes(const llmgen_session *s, int *ring);
/* How many leading ids of ids[0..n) the session's cache holds (the tokens it was fed,
 * in order, up to its position) and can continue from (a hybrid model: 0 for fewer than
 * the start of its last call of several tokens, see llmgen_session_rewind). A model with sliding-window
 * layers keeps only a ring of their last positions (window + 190, rounded up to 64)
 * once the context is longer: going back further than that from the newest position
 * written cannot reuse anything, and this returns 0. */
int llmgen_session_common_prefix(const llmgen_session *s, const int32_t *ids, int n);
/* Forget every token from position pos on (0 <= pos <= the current position). Where
 * a sliding layer's ring no longer holds the window before pos (see above), the
 * session forgets every token instead (position 0: llmgen_session_pos tells). A hybrid
 * model's recurrent states cannot be rolled back: they go back to the start of the
 * session's last call of several tokens (a prefill chunk or a decode_rows pass) and the
 * ids from there to pos are run again; a pos before that start forgets every token. */
void llmgen_session_rewind(llmgen_session *s, int pos);
/* The session's cache (its positions and the ids it was fed) to a file, written to a
 * new file in the same directory and renamed, so a killed save leaves no partial file
 * (LLMGEN_E_IO). A file at path that is not a prompt cache is never replaced:
 * LLMGEN_E_USAGE, the file untouched. Load it back into a session of the same model
 * file opened in the same mode with the same kernels: a file that is not a prompt
 * cache is LLMGEN_E_USAGE; a cache made otherwise (another model file, mode or kernel
 * set), a truncated or damaged one, or one longer than the session's context is
 * LLMGEN_E_FORMAT (the message says which); either leaves the session as it was. A
 * loaded session continues as the saved one would, bit for bit;
 * with reuse_prefix, llmgen_generate keeps the part a new prompt shares with it. */
llmgen_status llmgen_session_save(llmgen_session *s, const char *path, char *err, size_t errlen);
llmgen_status llmgen_session_load(llmgen_session *s, const char *path, char *err, size_t errlen);
llmgen_model *llmgen_session_model(const llmgen_session *s); /* the model it was opened on */

/* The parallel steps the model's worker pool has run since the open (*syncs: each ends
 * with the threads waiting for one another), and *solo of them that the calling thread
 * ran alone: when the other threads keep starting late (their CPUs held by other work),
 * the pool runs steps on one thread for a while, as -t 1 would. Results are the same
 * bits either way. Read it from the thread that runs the model. */
void llmgen_model_sync_counts(const llmgen_model *m, int64_t *syncs, int64_t *solo);

/* Append n >= 1 ids at the current position and compute the logits of the last
 * one. *logits: vocab_size floats, owned by the session. Status: LLMGEN_E_CONTEXT
 * if pos + n exceeds the context (nothing is run), LLMGEN_E_USAGE for an id
 * outside the vocabulary or n < 1, LLMGEN_E_BUSY (see Threads above),
 * LLMGEN_E_FORMAT if the logits are not finite (NaN / Inf weights). Prompts
 * longer than the session's chunk run as several chunks; the result is the same. */
llmgen_status llmgen_prefill(llmgen_session *s, const int32_t *ids, int n, const float **logits,
                             char *err, size_t errlen);
/* Append one id (usually the one just sampled) and compute its logits. Same
 * statuses as llmgen_prefill. */
llmgen_status llmgen_decode_step(llmgen_session *s, int32_t id, const float **logits,
                                 char *err, size_t errlen);

/* Called by llmgen_prefill_rows with the logits of position i of the call (the model's
 * distribution of the token after ids[i]): n_vocab floats, valid during the call. */
typedef void (*llmgen_rows_fn)(void *user, int i, const float *logits, int n_vocab);

/* llmgen_prefill that also hands the logits of positions first..n-1 of this call to
 * fn, in order, for scoring a given text (perplexity, log-probabilities of its tokens).
 * The rows come from one lm_head GEMM per chunk; chunks wholly before `first` cost what
 * llmgen_prefill costs. fn runs on the calling thread while the model is busy: it must
 * not run a prefill or decode step of the same model. logits may be NULL; else as in
 * llmgen_prefill. The first call allocates chunk x vocab_size floats, kept by the
 * session. Statuses as llmgen_prefill; LLMGEN_E_USAGE if first is outside [0, n] or fn is NULL. */
llmgen_status llmgen_prefill_rows(llmgen_session *s, const int32_t *ids, int n, int first, llmgen_rows_fn fn,
                                  void *user, const float **logits, char *err, size_t errlen);
/* Append n ids (1 <= n <= 128) in one pass and compute the logits of each: *rows is
 * (n, vocab_size) floats, row t the logits after ids[t], owned by the session and valid
 * until its next prefill / decode call / reset / free. The contract: row t is the same
 * bits that llmgen_decode_step of ids[t] would give at that position after steps of
 * ids[0..t) (in fast and exact mode, every family, sliding-window rings included, any
 * thread count), so a pass checks n guesses for the price of about one step over the
 * weights (speculative decoding, teacher-forced checks). Rejected ids are taken back
 * with llmgen_session_rewind. Statuses as llmgen_decode_step (every row is checked);
 * LLMGEN_E_USAGE for n outside [1, 128] or a session in a batch. */
llmgen_status llmgen_decode_rows(llmgen_session *s, const int32_t *ids, int n, const float **rows, char *err,
                                 size_t errlen);

/* ---- several sequences per step -------------------------------------------------
 *
 * Sessions joined to a batch run their prefill and decode steps together: a step
 * of a joined session waits until every joined session has asked for a step (or
 * left), then forward passes read the weights once for all of them (a decode
 * token of each, with one prefill chunk beside them). A session's logits are the
 * same bits as when it runs alone, in exact and fast mode, at any thread count.
 * Made for one thread per session, each running its own generation loop (e.g.
 * llmgen_generate); a session must leave when its thread stops stepping, or the
 * others wait for it. Sessions outside the batch still take turns with it. */
#define LLMGEN_MAX_SEQUENCES 64
typedef struct llmgen_batch llmgen_batch;
/* Up to max_sequences sessions of context <= ctx (0: as llmgen_session_new). Owned
 * by the caller: llmgen_batch_free, after every member has left. */
llmgen_status llmgen_batch_new(llmgen_model *m, int max_sequences, int ctx, llmgen_batch **out, char *err,
                               size_t errlen);
void llmgen_batch_free(llmgen_batch *b); /* NULL is fine */
/* Join s (not stepping right now) to b; LLMGEN_E_USAGE if b is full, s is in a
 * batch already, or its context is larger than b's. */
llmgen_status llmgen_batch_join(llmgen_batch *b, llmgen_session *s, char *err, size_t errlen);
/* Leave the batch (nothing if s is in none); llmgen_session_free leaves too. */
void llmgen_batch_leave(llmgen_session *s);
/* Forward passes the batch has run, and the sequence steps (prefill chunks and
 * decode tokens) they carried: their ratio is the batching achieved. */
void llmgen_batch_stats(llmgen_batch *b, long *passes, long *seq_steps);

/* ---- sampling ------------------------------------------------------------------- */

/* Filters run in transformers' order: repetition penalty (then the presence and
 * frequency penalties), temperature, top-k, top-p, min-p, then one seeded draw. Same seed and params: same ids on any
 * machine and thread count. */
typedef struct {
    float temperature;    /* 0 = greedy (argmax, first on ties); > 0 divides the logits */
    int top_k;            /* keep the k largest logits (and ties with the k-th); 0 = off */
    float top_p;          /* keep the most likely ids until their mass reaches top_p; 1 = off */
    float min_p;          /* drop ids below min_p * the largest probability; 0 = off */
    float repeat_penalty; /* ids in the history: logit / r if > 0, * r if < 0; 1 = off */
    uint64_t seed;        /* PRNG seed */
    float presence_penalty;  /* OpenAI's, -2..2: minus this from the logit of every id generated so far; 0 = off */
    float frequency_penalty; /* OpenAI's, -2..2: minus this times how often the id was generated; 0 = off */
} llmgen_sampler_params;

typedef struct llmgen_sampler llmgen_sampler;
/* The "off" values above: greedy, seed 0. */
void llmgen_sampler_defaults(llmgen_sampler_params *p);
/* LLMGEN_E_USAGE with a message naming the field if a value is out of range. */
llmgen_status llmgen_sampler_check(const llmgen_sampler_params *p, char *err, size_t errlen);
/* NULL if vocab_size <= 0, params fail llmgen_sampler_check, or out of memory. */
llmgen_sampler *llmgen_sampler_new(const llmgen_sampler_params *p, int vocab_size);
void llmgen_sampler_free(llmgen_sampler *s);  /* NULL is fine */
/* Pick the next id from vocab_size logits. history (n_history ids, usually the
 * prompt and what was generated so far) feeds the repetition penalty; may be NULL.
 * The presence and frequency penalties count the ids of history as generated
 * (llmgen_generate counts only the ids it generated, as OpenAI does). */
int32_t llmgen_sample(llmgen_sampler *s, const float *logits, const int32_t *history, int n_history);

/* ---- generation ------------------------------------------------------------------ */

/* Why a generation ended. llmgen_stop_reason_name gives the word --json prints. */
typedef enum {
    LLMGEN_STOP_LENGTH = 0,  /* "length": max_tokens ids were generated */
    LLMGEN_STOP_EOS,         /* "eos": the model produced an end-of-sequence id (not in the result) */
    LLMGEN_STOP_STRING,      /* "stop": the text reached a stop string (cut before it) */
    LLMGEN_STOP_CONTEXT,     /* "context": the session's context is full */
    LLMGEN_STOP_CANCELLED,   /* "interrupted": a callback asked to stop */
} llmgen_stop_reason;

const char *llmgen_stop_reason_name(llmgen_stop_reason r);

/* Called once per generated id, in order, with the text that became final with it
 * (complete UTF-8, never part of a stop string; may be empty; NULL-free, not
 * NUL-terminated, valid during the call). A last call with id -1 hands over text
 * held back until the end (an incomplete character). Return non-zero to stop:
 * the generation ends with LLMGEN_STOP_CANCELLED after this id. */
typedef int (*llmgen_piece_fn)(void *user, int32_t id, const char *text, size_t len);
/* Called before each sampling with the logits it reads (n_vocab floats). Return
 * non-zero to stop (LLMGEN_STOP_CANCELLED, nothing sampled from these logits). */
typedef int (*llmgen_logits_fn)(void *user, const float *logits, int n_vocab);
/* Speculative decoding's drafts of the caller's own: write up to max ids that may follow
 * ids[0..n) (the prompt and what was generated, the id about to be run last) into
 * draft; return how many (0: none, this step runs alone). */
typedef int (*llmgen_draft_fn)(void *user, const int32_t *ids, int n, int32_t *draft, int max);

typedef struct {
    int max_tokens;             /* >= 1; -1: until an end-of-sequence id or a full context */
    int ignore_eos;             /* 1: end-of-sequence ids are generated like any other */
    const char *const *stops;   /* n_stops non-empty strings (need a tokenizer); NULL if none */
    int n_stops;
    llmgen_sampler_params sampler; /* its repetition penalty sees this call's prompt and generated ids */
    int keep_cache;             /* 0: reset the session first; 1: append the prompt to what it holds */
    int logprobs;               /* 1: record each generated id's log-probability in r->logprobs */
    int top_logprobs;           /* with logprobs: also the N most likely ids of each step, 0..vocab_size */
    int reuse_prefix;           /* with keep_cache 0: keep the longest prefix of the prompt that the
                                   session's cache already holds (a prefix cache: the same logits
                                   bits, only the rest is prefilled) */
    const char *grammar;        /* GBNF text (llama.cpp's format) the output must match; NULL: none */
    const char *json_schema;    /* or a JSON Schema (text) the output must match (README: Structured
                                   output); NULL: none. With either, each step allows only ids whose
                                   bytes continue the grammar, end-of-sequence exactly when it is
                                   complete, and generation ends there (LLMGEN_STOP_EOS) */
    int strict_schema;          /* with json_schema: 1 makes a keyword a grammar cannot enforce (not,
                                   if/then/else, uniqueItems, ...; see llmgen_json_schema_check) an
                                   error instead of being left unenforced */
    int no_close;               /* with a grammar or schema, 0 (default): close the output within the
                                   budget: an id is picked only if the grammar can still be complete
                                   in the ids left after it (max_tokens, or the context), counting
                                   one byte per id; one that cannot is forbidden and the pick made
                                   again from the same logits. 1: no such rule (xgrammar's and
                                   llama.cpp's behaviour: the output may stop unfinished) */
    llmgen_piece_fn on_piece;   /* may be NULL */
    llmgen_logits_fn on_logits; /* may be NULL */
    void *user;                 /* passed to both callbacks */
    /* Speculative decoding, greedy only (temperature 0; with sampling these are ignored):
     * guessed ids are run together with the sampled one in one llmgen_decode_rows pass and
     * kept while they equal what greedy decoding picks from each row, the rest taken back
     * (llmgen_session_rewind). The ids, logits, log-probabilities and callbacks are the
     * same bits as without it; only the time differs. Built-in drafts adapt their length
     * to how often they are accepted, and pause after misses. Not for a session in a
     * batch (LLMGEN_E_USAGE). */
    int draft_lookup;           /* > 0: drafts from the text so far (prompt lookup): the ids that followed
                                   the latest earlier occurrence of its last draft_lookup ids (or fewer,
                                   down to one) */
    llmgen_session *draft_session; /* or NULL: greedy drafts of another model with the same vocabulary
                                   (its own session, context >= this one's; reset by each call) */
    int draft_max;              /* most ids drafted per pass, 1..127 (0: 8) */
    llmgen_draft_fn draft_fn;   /* or NULL: the caller's drafts, used as given (no adaptation) */
    void *draft_user;           /* passed to draft_fn */
} llmgen_generate_params;

/* A token and its log-probability under the model: log-softmax of the raw logits of
 * its step, before the repetition penalty, temperature and top-k / top-p / min-p. */
typedef struct {
    int32_t id;
    float logprob;
} llmgen_logprob;

typedef struct {
    int32_t *ids;               /* (n_ids) generated ids, end-of-sequence id excluded */
    int n_ids;
    char *text;                 /* their text, NUL-terminated, cut before a stop string; NULL without tokenizer */
    size_t text_len;
    llmgen_stop_reason stop_reason;
    int n_closed;               /* picks the closing rule changed (see no_close): 0 unless the budget
                                   would otherwise have cut a grammar's output short */
    llmgen_logprob *logprobs;   /* with p->logprobs: (n_ids, 1 + top_logprobs): row i is generated id i
                                   and its log-probability, then the top_logprobs most likely ids of
                                   that step, most likely first (equal ones: lower id first); else NULL */
    int top_logprobs;           /* alternatives per row in logprobs */
    int n_prompt;               /* prompt ids run by this call */
    int n_cached;               /* of them, the leading ids the session's cache held (reuse_prefix) */
    double prefill_s;           /* seconds in prefill */
    double decode_s;            /* seconds from the end of prefill to the end */
    double first_token_s;       /* seconds from the start to the first sampled id */
    int n_drafted;              /* speculative decoding: ids drafted and run in passes */
    int n_accepted;             /* of them, those greedy decoding picked (the rest were taken back) */
    int n_passes;               /* passes with drafts (each a decode step of 1 + its drafts) */
    int64_t n_syncs;            /* after prefill: steps of the forward pass on which the model's threads
                                   waited for one another (llmgen_model_sync_counts) */
    int64_t n_solo;             /* of them, steps the calling thread ran alone */
} llmgen_result;

/* max_tokens 128, greedy sampler, no stops, reset first, no callbacks. */
void llmgen_generate_defaults(llmgen_generate_params *p);

/* Run n_prompt >= 1 ids, then sample, stream and decode until a stop (see
 * llmgen_stop_reason). A full context is not an error: the result holds what was
 * generated, with LLMGEN_STOP_CONTEXT. Status: LLMGEN_E_CONTEXT when the prompt
 * itself does not fit (nothing generated), LLMGEN_E_USAGE for bad params or ids,
 * the statuses of llmgen_prefill / llmgen_decode_step otherwise (on any error
 * *r holds what was generated before it). On return the session holds the
 * prompt and every generated id but the last, which was sampled, not yet run
 * (with LLMGEN_STOP_EOS all of them: the end id was not run): a continuation
 * with keep_cache prefills that last id first. *r is the caller's:
 * llmgen_result_free (also after an error). */
/* Compile a JSON Schema (text) as generation would (README: Structured output), without a
 * model. LLMGEN_OK, with warn (warnlen bytes) set to one line naming the keywords a grammar
 * cannot enforce ("" when every keyword is enforced); with strict, such a keyword is an
 * error instead. LLMGEN_E_USAGE with one line in err for a schema that is refused. */
llmgen_status llmgen_json_schema_check(const char *schema, int strict, char *warn, size_t warnlen, char *err,
                                       size_t errlen);

llmgen_status llmgen_generate(llmgen_session *s, const int32_t *prompt, int n_prompt,
                              const llmgen_generate_params *p, llmgen_result *r, char *err, size_t errlen);
void llmgen_result_free(llmgen_result *r); /* frees ids, text and logprobs, zeroes *r */

/* ---- chat: messages and conversations ------------------------------------------------ */

/* A multi-turn conversation on one session that keeps its KV cache between turns:
 * each turn renders the whole conversation, and only the text past what the
 * session already holds is tokenized (without BOS) and prefilled. If the render
 * no longer starts with that text (a template that rewrites earlier turns), the
 * session is reset and the whole conversation prefilled. The reply recorded in the
 * conversation is the text of every id the turn generated. The session belongs to
 * the conversation until llmgen_chat_free (do not use it meanwhile). system may be
 * NULL (the template's default). */
typedef struct llmgen_chat llmgen_chat;
llmgen_status llmgen_chat_new(llmgen_session *s, const llmgen_chat_options *opt, const char *system,
                              llmgen_chat **out, char *err, size_t errlen);
/* One turn: add the user message, generate the reply with p (keep_cache is
 * ignored: the conversation decides). *r as llmgen_generate fills it; r->n_prompt
 * counts the ids this turn prefilled. */
llmgen_status llmgen_chat_turn(llmgen_chat *c, const char *user, const llmgen_generate_params *p,
                               llmgen_result *r, char *err, size_t errlen);
void llmgen_chat_free(llmgen_chat *c); /* NULL is fine; the session stays the caller's */

/* ---- reasoning: thinking output kept apart from the answer ------------------------- */

/* The output formats of the families that think: "<think>R</think>A" (Qwen3, Qwen3.5,
 * DeepSeek-R1 distills; a prompt ending in "<think>" and white space, as Qwen3.5's and
 * DeepSeek-R1's generation prompts do, starts the output inside the block) and gpt-oss's
 * harmony channels ("<|channel|>analysis<|message|>R<|end|><|start|>assistant<|channel|>
 * final<|message|>A"). Any other output is all answer, byte for byte; the answer after
 * </think> has its leading white space dropped. Fed piece by piece (a stream) or whole, the
 * splitter gives the same bytes; text is held back only while it may start a marker. */
typedef struct llmgen_reasoning llmgen_reasoning;

/* Offsets in the whole output: the reasoning is [reasoning_begin, reasoning_end) (from the
 * first to the last reasoning byte: several harmony analysis messages keep their headers in
 * between), the answer [answer_begin, end). has_reasoning 0: no thinking block (all answer). */
typedef struct {
    size_t reasoning_begin;
    size_t reasoning_end;
    size_t answer_begin;
    int has_reasoning;
} llmgen_reasoning_span;

/* What one feed made final: reasoning and answer bytes (NUL-terminated), valid until the next
 * feed or free. */
typedef struct {
    const char *reasoning;
    size_t reasoning_len;
    const char *text;
    size_t text_len;
} llmgen_reasoning_piece;

/* prompt: the rendered prompt text (for a block the template opens), or NULL. *out: free with
 * llmgen_reasoning_free. LLMGEN_E_NOMEM only. */
llmgen_status llmgen_reasoning_new(const char *prompt, llmgen_reasoning **out);
/* Feed s[0..n) of the output; final: it ended (all held text is given out). LLMGEN_E_NOMEM only. */
llmgen_status llmgen_reasoning_feed(llmgen_reasoning *t, const char *s, size_t n, int final,
                                    llmgen_reasoning_piece *out);
/* 1 while the output is inside a thinking block (so far). */
int llmgen_reasoning_thinking(const llmgen_reasoning *t);
/* The text that closes the current block as the template expects ("</think>\n\n", or harmony's
 * "<|end|><|start|>assistant<|channel|>final<|message|>"): what --reasoning-budget appends. */
const char *llmgen_reasoning_close(const llmgen_reasoning *t);
/* Where things are in what was fed so far. */
llmgen_reasoning_span llmgen_reasoning_where(const llmgen_reasoning *t);
void llmgen_reasoning_free(llmgen_reasoning *t); /* NULL is fine */
/* The whole output at once: where its reasoning is and where the answer starts. */
llmgen_status llmgen_reasoning_split(const char *prompt, const char *text, size_t len, llmgen_reasoning_span *out);

/* ---- conversion ------------------------------------------------------------------ */

/* Write an MLX affine checkpoint (what `mlx_lm.convert -q` makes) from the bf16 / f16 /
 * f32 safetensors model in in_dir: out_dir (created; must not exist) receives
 * model.safetensors with X.weight (U32, packed), X.scales and X.biases for every
 * Linear / Embedding weight whose input size is a multiple of group_size (the others
 * are copied), config.json with the "quantization" block, and the tokenizer files.
 * bits: 4 or 8; group_size: 32, 64 or 128 (else LLMGEN_E_USAGE). The quantization is
 * mlx's (same formula and rounding). Status: LLMGEN_E_IO, LLMGEN_E_FORMAT (not a
 * float checkpoint, already quantized), LLMGEN_E_NOMEM. Never prints. */
llmgen_status llmgen_quantize(const char *in_dir, const char *out_dir, int bits, int group_size,
                              char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
