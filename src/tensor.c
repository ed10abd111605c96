/* tensor.c - dtype facts. */
#include "tensor.h"

static const struct {
    const char *name;
    int block_elems, block_bytes;
} DTYPES[DT_COUNT] = {
    [DT_F32] = {"F32", 1, 4},     [DT_F16] = {"F16", 1, 2},     [DT_BF16] = {"BF16", 1, 2},
    [DT_Q8_0] = {"Q8_0", 32, 34}, [DT_Q4_0] = {"Q4_0", 32, 18}, [DT_Q4_1] = {"Q4_1", 32, 20},
    [DT_F64] = {"F64", 1, 8},     [DT_I64] = {"I64", 1, 8},     [DT_I32] = {"I32", 1, 4},
    [DT_I16] = {"I16", 1, 2},     [DT_I8] = {"I8", 1, 1},       [DT_U8] = {"U8", 1, 1},
    [DT_U32] = {"U32", 1, 4},     [DT_BOOL] = {"BOOL", 1, 1},
    /* MLX affine: a "block" is one u32 word of packed values (scales live apart) */
    [DT_AFFINE4] = {"AFFINE4", 8, 4}, [DT_AFFINE8] = {"AFFINE8", 4, 4},
    /* repacked MLX 4-bit: 32 values in 16 bytes of nibbles plus a share of the group's
       f16 scale and bias (4 bytes per 64 or 128 values) */
    [DT_Q4_1G64] = {"Q4_1G64", 32, 18}, [DT_Q4_1G128] = {"Q4_1G128", 32, 17},
};

const char *dtype_name(dtype t) { return (unsigned)t < DT_COUNT ? DTYPES[t].name : "?"; }
int dtype_block_elems(dtype t) { return (unsigned)t < DT_COUNT ? DTYPES[t].block_elems : 0; }
int dtype_block_bytes(dtype t) { return (unsigned)t < DT_COUNT ? DTYPES[t].block_bytes : 0; }

size_t dtype_row_bytes(dtype t, int64_t n) {
    int be = dtype_block_elems(t);
    if (be <= 0 || n < 0 || n % be) return 0;
    return (size_t)(n / be) * (size_t)dtype_block_bytes(t);
}

int64_t tensor_numel(const tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}
