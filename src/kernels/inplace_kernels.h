/* inplace_kernels.h - fast mode's int8-activation matmuls (matmul_q8_fn) that read
 * GGUF blocks in place (dequant.h has the contract, scalar.c the reference): every
 * type dequant.h decodes but Q6_K and Q4_K, which fast mode packs (kernels.h).
 * inplace_avx512.c: x86-64, call only where AVX-512 (VNNI for the int8 ones) was
 * detected (dispatch.c); inplace_avx2.c: where AVX2 + FMA + F16C was;
 * inplace_neon.c: any AArch64 CPU (it checks for the dot-product extension itself). */
#ifndef LLMGEN_INPLACE_KERNELS_H
#define LLMGEN_INPLACE_KERNELS_H

#include "kernels.h"

#define IP_DECLARE(NAME) void NAME(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
IP_DECLARE(inplace_avx512_q2_k)
IP_DECLARE(inplace_avx512_q3_k)
IP_DECLARE(inplace_avx512_q5_k)
IP_DECLARE(inplace_avx512_iq4_nl)
IP_DECLARE(inplace_avx512_iq4_xs)
IP_DECLARE(inplace_avx512_mxfp4)
IP_DECLARE(inplace_avx2_q2_k)
IP_DECLARE(inplace_avx2_q3_k)
IP_DECLARE(inplace_avx2_q5_k)
IP_DECLARE(inplace_avx2_iq4_nl)
IP_DECLARE(inplace_avx2_iq4_xs)
IP_DECLARE(inplace_avx2_mxfp4)
IP_DECLARE(inplace_neon_q2_k)
IP_DECLARE(inplace_neon_q3_k)
IP_DECLARE(inplace_neon_q5_k)
IP_DECLARE(inplace_neon_iq4_nl)
IP_DECLARE(inplace_neon_iq4_xs)
IP_DECLARE(inplace_neon_mxfp4)
#undef IP_DECLARE

/* The NEON in-place kernel of dt without the dot-product extension, whatever this CPU
 * has (NULL for other types), so the self-test checks that variant on every machine. */
matmul_q8_fn inplace_neon_plain(dtype dt);

/* Exact mode (f32 activations, matmul_fn) on the same decoders; AVX-512 F/BW only. */
#define XT_DECLARE(NAME) \
    void NAME(const void *w, size_t rb, int cols, int r0, int r1, const float *x, int ldx, int nt, float *y, int ldy);
XT_DECLARE(exact_avx512_q5_0)
XT_DECLARE(exact_avx512_q5_1)
XT_DECLARE(exact_avx512_q2_k)
XT_DECLARE(exact_avx512_q3_k)
XT_DECLARE(exact_avx512_q4_k)
XT_DECLARE(exact_avx512_q5_k)
XT_DECLARE(exact_avx512_q6_k)
XT_DECLARE(exact_avx512_iq4_nl)
XT_DECLARE(exact_avx512_iq4_xs)
XT_DECLARE(exact_avx512_mxfp4)
#undef XT_DECLARE

#endif
