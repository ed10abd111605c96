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
    DT_AFFINE4, /* MLX affine 4-bit: u32 words of 8 values, low bits first; x = s*q + b per group.
                   A tensor of this type is assembled by affine.c: see affine_weights below. */
    DT_AFFINE8, /* MLX affine 8-bit: u32 words of 4 values, low bits first; x = s*q + b per group */
    /* In memory only (fast mode): an MLX 4-bit matrix of group 64 or 128 rewritten at load
       into the repacked Q4_1 layout of kernels/kernels.h with ONE f16 scale and bias per
       group instead of per block of 32, so the copy has the file's size (repack.c). */
    DT_Q4_1G64,
    DT_Q4_1G128,
    /* more GGUF types (layouts and facts in quant.h) */
    DT_Q5_0,
    DT_Q5_1,
    DT_Q2_K,
    DT_Q3_K,
    DT_Q4_K,
    DT_Q5_K,
    DT_Q6_K,
    DT_IQ4_NL,
    DT_IQ4_XS,
    DT_MXFP4,
    DT_COUNT
} dtype;

/* Facts per dtype: quant.h has the whole table (dtype_info); these three read it. */

/* Name as printed in messages ("F32", "BF16", "Q4_1", ...). */
const char *dtype_name(dtype t);

/* Elements per block and bytes per block: (1, 4) for F32, (32, 20) for Q4_1. */
int dtype_block_elems(dtype t);
int dtype_block_bytes(dtype t);

/* Bytes for n elements (n must be a multiple of the block size; returns 0 if not). */
size_t dtype_row_bytes(dtype t, int64_t n);

#define TENSOR_MAX_DIMS 5 /* a video model's conv3d patch embedding (Qwen3.5's vision tower, skipped) */

/* An MLX affine-quantized matrix (rows, cols) as the kernels see it. For DT_AFFINE4 /
 * DT_AFFINE8 tensors, `tensor.data` points at one of these (owned by the model, see
 * affine.c) instead of at raw bytes, so that the kernel call matmul[dt](t->data,
 * row_bytes, ...) reaches the scales and biases; row_bytes = dtype_row_bytes(dt, cols)
 * is then the packed row size of q. Everything points into the file mapping. */
typedef struct {
    const void *q;        /* (rows, cols * bits / 32) U32 little-endian, maybe unaligned: value
                             c of a row sits in word c * bits / 32 at bit (c % (32 / bits)) * bits */
    const void *scales;   /* (rows, cols / group) in sdt */
    const void *biases;   /* (rows, cols / group) in sdt */
    int sdt;              /* dtype of scales and biases: DT_F32, DT_F16 or DT_BF16 */
    int group;            /* values per scale and bias: 32, 64 or 128 */
} affine_weights;

/* A run of a packed matrix's rows stored apart: rows [row0, the next part's row0
 * or shape[0]) packed as a matrix of their own (repack.c's weight arena). */
typedef struct {
    int row0;
    const void *data;
} packed_part;

typedef struct {
    const char *name;                /* owned by the reader */
    dtype type;
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];  /* Hugging Face / row-major order, outermost first:
                                        a linear weight is (out, in). GGUF `ne` is reversed. */
    const void *data;                /* into the reader's mapping, valid until it closes */
    size_t nbytes;                   /* validated against shape and dtype */
    const void *packed;              /* NULL, or (fast mode, a matrix the matmul plan routes to int8,
                                        plan.h) the weights repacked for the int8-activation kernels
                                        (type and nbytes then the packed ones; layout in the type
                                        table, quant.h), owned by the model (repack.c); == data for
                                        the types the int8 kernels read in place (kernels/dequant.h) */
    const packed_part *parts;        /* NULL, or `packed` in nparts runs of rows (in row order;
                                        parts[0].data == packed), stored where the threads
                                        stream them (repack.c); owned by the model */
    int nparts;
} tensor;

/* Number of elements (product of shape). */
int64_t tensor_numel(const tensor *t);

#endif
