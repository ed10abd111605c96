/* dispatch.c - choose the kernel table once, by what this CPU supports. */
#include "kernels.h"

#include <string.h>

const kernels *kernels_select(const char *force) {
    if (force) {
        if (!strcmp(force, "scalar")) return kernels_scalar();
        if (!strcmp(force, "avx2")) return kernels_avx2();
        if (!strcmp(force, "avx512")) return kernels_avx512();
        if (!strcmp(force, "neon")) return kernels_neon();
        return NULL;
    }
    const kernels *k;
    if ((k = kernels_avx512())) return k;
    if ((k = kernels_avx2())) return k;
    if ((k = kernels_neon())) return k;
    return kernels_scalar();
}

/* Placeholders until the ISA files land: no ISA table. */
const kernels *kernels_avx2(void) { return NULL; }
const kernels *kernels_avx512(void) { return NULL; }
const kernels *kernels_neon(void) { return NULL; }
