/* llmgen.h - the public C API: an inference-session contract.
 *
 *   llmgen_model_open    load a model once (mmap), shared read-only by sessions
 *   llmgen_session_new   a KV cache and a position, used by one thread at a time
 *   llmgen_prefill       run prompt ids, get the logits of the last position
 *   llmgen_decode_step   run one id, get its logits
 *   llmgen_sampler_*     pick the next id from logits (greedy or seeded sampling)
 *
 * Every fallible call returns an llmgen_status and writes a one-line message
 * into the caller's buffer (err, errlen). Nothing here prints or exits.
 * Ownership: objects returned through out-parameters belong to the caller and
 * are released with the matching _free; logits pointers belong to the session
 * and stay valid until its next prefill / decode step / free. */
#ifndef LLMGEN_H
#define LLMGEN_H

#include <stddef.h>
#include <stdint.h>

#define LLMGEN_VERSION "0.1.0"

typedef enum {
    LLMGEN_OK = 0,
    LLMGEN_E_USAGE = 1,       /* bad argument */
    LLMGEN_E_FORMAT = 2,      /* bad or unsupported model file */
    LLMGEN_E_IO = 3,          /* missing or unreadable file */
    LLMGEN_E_CONTEXT = 4,     /* out of context */
    LLMGEN_E_NOMEM = 5,
} llmgen_status;

typedef struct model llmgen_model;
typedef struct llmgen_session llmgen_session;

typedef struct {
    int n_threads;            /* 0 = 2 */
    const char *kernels;      /* NULL = best for this CPU; "scalar", "avx2", "avx512", "neon" */
    int no_tokenizer;         /* 1: skip loading the tokenizer */
} llmgen_model_options;

typedef struct {
    const char *architecture; /* "llama" */
    const char *format;       /* "gguf" or "safetensors" */
    const char *weight_types; /* e.g. "Q4_1+Q8_0" */
    const char *kernels;      /* kernel table in use: "avx512", "avx2", "neon", "scalar" */
    int context_length;       /* the model's maximum positions */
    int vocab_size;
    int n_threads;
    int max_sequences;        /* 1: a session is one sequence */
    int has_tokenizer;
} llmgen_capabilities;

llmgen_status llmgen_model_open(const char *path, const llmgen_model_options *opt,
                                llmgen_model **out, char *err, size_t errlen);
void llmgen_model_free(llmgen_model *m);
void llmgen_model_capabilities(const llmgen_model *m, llmgen_capabilities *out);

/* ctx_len 0 = min(model context, 4096). */
llmgen_status llmgen_session_new(llmgen_model *m, int ctx_len, llmgen_session **out,
                                 char *err, size_t errlen);
void llmgen_session_free(llmgen_session *s);
void llmgen_session_reset(llmgen_session *s);
int llmgen_session_pos(const llmgen_session *s);     /* tokens in the cache */
int llmgen_session_ctx(const llmgen_session *s);     /* capacity */

/* *logits: vocab_size floats, owned by the session. */
llmgen_status llmgen_prefill(llmgen_session *s, const int32_t *ids, int n, const float **logits,
                             char *err, size_t errlen);
llmgen_status llmgen_decode_step(llmgen_session *s, int32_t id, const float **logits,
                                 char *err, size_t errlen);

/* ---- sampling ---- */
typedef struct {
    float temperature;        /* 0 = greedy */
    int top_k;                /* 0 = off */
    float top_p;              /* 1 = off */
    float min_p;              /* 0 = off */
    float repeat_penalty;     /* 1 = off */
    uint64_t seed;
} llmgen_sampler_params;

typedef struct llmgen_sampler llmgen_sampler;
void llmgen_sampler_defaults(llmgen_sampler_params *p);
llmgen_sampler *llmgen_sampler_new(const llmgen_sampler_params *p, int vocab_size);
void llmgen_sampler_free(llmgen_sampler *s);
/* history (n_history ids) feeds the repetition penalty; may be NULL. */
int32_t llmgen_sample(llmgen_sampler *s, const float *logits, const int32_t *history, int n_history);

#endif
