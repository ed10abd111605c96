/* tensor.h - the one currency between weight readers, the model and kernels:
 * a view of a tensor that lives in a file mapping (never copied). */
#ifndef LLMGEN_TENSOR_H
#define LLMGEN_TENSOR_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    DT_F32,
    DT_F16,
    DT_BF16,
    DT_Q8_0,  /* GGUF block of 32: f16 d, int8 q[32]; x = d*q                  (34 bytes) */
    DT_Q4_0,  /* GGUF block of 32: f16 d, u8 qs[16]; x = d*(q-8)               (18 bytes) */
    DT_Q4_1,  /* GGUF block of 32: f16 d, f16 m, u8 qs[16]; x = d*q + m        (20 bytes) */
    DT_F64,
    DT_I64,
    DT_I32,
    DT_I16,
    DT_I8,
    DT_U8,
    DT_U32,
    DT_BOOL,
    DT_COUNT
} dtype;

/* Name as printed in messages ("F32", "BF16", "Q4_1", ...). */
const char *dtype_name(dtype t);

/* Elements per block and bytes per block: (1, 4) for F32, (32, 20) for Q4_1. */
int dtype_block_elems(dtype t);
int dtype_block_bytes(dtype t);

/* Bytes for n elements (n must be a multiple of the block size; returns 0 if not). */
size_t dtype_row_bytes(dtype t, int64_t n);

#define TENSOR_MAX_DIMS 4

typedef struct {
    const char *name;                /* owned by the reader */
    dtype type;
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];  /* Hugging Face / row-major order, outermost first:
                                        a linear weight is (out, in). GGUF `ne` is reversed. */
    const void *data;                /* into the reader's mapping, valid until it closes */
    size_t nbytes;                   /* validated against shape and dtype */
} tensor;

/* Number of elements (product of shape). */
int64_t tensor_numel(const tensor *t);

#endif
