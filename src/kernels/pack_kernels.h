/* pack_kernels.h - vector versions of the type table's packers (quant.h, pack_rows_fn),
 * reached through kernels.pack_rows: the same bytes as the portable packers of
 * q4k_packed.c / q6k_packed.c (tests/unit/test_pack.c). pack_avx2.c: x86-64, call only
 * where AVX2 was detected (dispatch.c); the AVX2 and AVX-512 tables both use it. */
#ifndef LLMGEN_PACK_KERNELS_H
#define LLMGEN_PACK_KERNELS_H

#include "kernels.h"

void q4k_pack_rows_avx2(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out);
void q6k_pack_rows_avx2(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out);

#endif
