/* config.h - Llama-family hyperparameters, from config.json or GGUF metadata. */
#ifndef LLMGEN_CONFIG_H
#define LLMGEN_CONFIG_H

#include "gguf.h"

#define CONFIG_MAX_EOS 8

typedef enum { ROPE_SCALING_NONE = 0, ROPE_SCALING_LLAMA3 = 1 } rope_scaling_type;

typedef struct {
    char arch[32];        /* "llama" */
    int dim;              /* hidden_size */
    int n_layers;         /* num_hidden_layers */
    int n_heads;          /* num_attention_heads */
    int n_kv_heads;       /* num_key_value_heads (defaults to n_heads) */
    int head_dim;         /* head_dim (defaults to dim / n_heads) */
    int hidden_dim;       /* intermediate_size */
    int vocab_size;
    int max_pos;          /* max_position_embeddings / llama.context_length */
    float rms_eps;
    float rope_theta;
    rope_scaling_type rope_scaling;
    float rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_orig_max_pos;
    int tied_embeddings;  /* tie_word_embeddings (GGUF: no output.weight tensor) */
    int rope_interleaved; /* 1 for GGUF llama files: Q/K rows permuted so rotary
                             pairs are (2i, 2i+1); 0 for HF (pairs i, i + d/2) */
    int bos_id;           /* -1 if none */
    int n_eos;
    int eos_ids[CONFIG_MAX_EOS];
    int quant_bits;       /* config.json "quantization" (MLX affine): default bits, 4 or 8; 0 if none.
                             Per-layer overrides are validated here; the weights' shapes then
                             tell each layer's bits and group (affine.c) */
    int quant_group;      /* its default group_size: 32, 64 or 128; 0 if none */
} model_config;

/* Parse a Hugging Face config.json (LlamaForCausalLM / model_type "llama").
 * Missing required keys are an error naming the key and the file. */
int config_from_json(const char *path, model_config *c, char *err);

/* Read `general.architecture` == "llama" and the `llama.*` keys. Sets
 * rope_interleaved = 1. Tied embeddings = no `output.weight` tensor. */
int config_from_gguf(const gguf_file *g, model_config *c, char *err);

/* Check internal consistency (positive sizes, dim == heads*head_dim not required,
 * n_heads % n_kv_heads == 0, ...); error names `source`. */
int config_validate(const model_config *c, const char *source, char *err);

#endif
