/* src/formats/: the file formats (gguf.c, safetensors.c): mmap, validate, hand out metadata
 * and tensor views. Knows nothing of models, kernels or the API.
 *
 * gguf.h - read-only GGUF v2/v3 reader over one mmap.
 *
 * Validates the header, every metadata key/value, every tensor info (type,
 * dims, offset, size, alignment) against the file size before handing out
 * anything. Knows nothing of models: it hands out metadata values and tensor
 * views. Tensor shapes are returned in HF order (ggml `ne` reversed). */
#ifndef LLMGEN_GGUF_H
#define LLMGEN_GGUF_H

#include <stdint.h>
#include "base/tensor.h"

typedef enum {
    GGUF_UINT8 = 0, GGUF_INT8 = 1, GGUF_UINT16 = 2, GGUF_INT16 = 3,
    GGUF_UINT32 = 4, GGUF_INT32 = 5, GGUF_FLOAT32 = 6, GGUF_BOOL = 7,
    GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_UINT64 = 10, GGUF_INT64 = 11,
    GGUF_FLOAT64 = 12
} gguf_type;

/* A string inside the mapping: not NUL-terminated. */
typedef struct {
    const char *ptr;
    uint64_t len;
} gguf_str;

typedef struct gguf_file gguf_file;

/* Open and validate `path`. On success *out owns the mapping; gguf_close frees it.
 * Tensor types other than F32/F16/BF16/Q8_0/Q4_0/Q4_1 are an error naming the
 * tensor and the ggml type. */
int gguf_open(const char *path, gguf_file **out, char *err);
void gguf_close(gguf_file *f);

const char *gguf_path(const gguf_file *f);
uint32_t gguf_version(const gguf_file *f);

/* Tensors, in file order. The views stay valid until gguf_close. */
int gguf_n_tensors(const gguf_file *f);
const tensor *gguf_tensor(const gguf_file *f, int i);
const tensor *gguf_find_tensor(const gguf_file *f, const char *name); /* NULL if absent */

/* Metadata. Each getter returns 0 if the key exists with a compatible type,
 * -1 otherwise (missing or wrong type: no message, the caller decides).
 * gguf_get_int accepts any integer type and bool; gguf_get_float accepts
 * float32/float64 and integer types. */
int gguf_has_key(const gguf_file *f, const char *key);
int gguf_get_int(const gguf_file *f, const char *key, int64_t *out);
int gguf_get_float(const gguf_file *f, const char *key, double *out);
int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out);

/* Arrays: element type and length. For numeric arrays *data points at the
 * packed little-endian elements in the mapping (possibly unaligned: read with
 * memcpy). For string arrays use gguf_get_arr_str. */
int gguf_get_arr(const gguf_file *f, const char *key, gguf_type *elem_type,
                 uint64_t *n, const void **data);
/* The i-th string of a string array (O(1): the reader indexes string arrays at open). */
int gguf_get_arr_str(const gguf_file *f, const char *key, uint64_t i, gguf_str *out);

#endif
