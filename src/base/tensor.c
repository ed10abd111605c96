/* tensor.c - tensor helpers (the dtype table is in quant.c). */
#include "tensor.h"

int64_t tensor_numel(const tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}
