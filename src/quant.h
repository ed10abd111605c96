/* quant.h - the quantization-type table: one row of facts per dtype (GGUF id,
 * name, block size and bytes, reference dequantizer, fast-mode packed form) and
 * the GGUF block layouts as structs.
 *
 * The layouts are ggml's (ggml-common.h); the reference dequantizers give, bit
 * for bit, the f32 values gguf-py's `gguf.quants.dequantize` gives (which is
 * what HF transformers loads), including its order of roundings: for example
 * Q4_K is (d * sc) * q - (dmin * m), each product and the difference rounded
 * to f32 in that order (never contracted into an FMA where that could differ;
 * this file is compiled as ISO C, where GCC does not contract). The tests
 * compare every type against values gguf-py wrote (tests/gen/gen_quant_refs.py). */
#ifndef LLMGEN_QUANT_H
#define LLMGEN_QUANT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

#define QK_K 256 /* values per K-quant (and IQ4_XS) super-block */

/* All scales are little-endian IEEE f16 (uint16_t here); the structs have no padding. */
typedef struct { uint16_t d; int8_t qs[32]; } block_q8_0;                              /* x = d*q */
typedef struct { uint16_t d; uint8_t qs[16]; } block_q4_0;                             /* x = d*(q-8) */
typedef struct { uint16_t d, m; uint8_t qs[16]; } block_q4_1;                          /* x = d*q + m */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } block_q5_0;              /* x = d*(q-16) */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } block_q5_1;           /* x = d*q + m */
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } block_q2_K;   /* per 16: d*sc*q - dmin*m */
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } block_q3_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } block_q4_K; /* per 32: d*sc*q - dmin*m */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } block_q5_K;
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } block_q6_K; /* per 16: d*sc*(q-32) */
typedef struct { uint16_t d; uint8_t qs[16]; } block_iq4_nl;                           /* x = d*kv[q] */
typedef struct { uint16_t d, scales_h; uint8_t scales_l[4]; uint8_t qs[128]; } block_iq4_xs;

static_assert(sizeof(block_q8_0) == 34, "Q8_0 block");
static_assert(sizeof(block_q4_0) == 18, "Q4_0 block");
static_assert(sizeof(block_q4_1) == 20, "Q4_1 block");
static_assert(sizeof(block_q5_0) == 22, "Q5_0 block");
static_assert(sizeof(block_q5_1) == 24, "Q5_1 block");
static_assert(sizeof(block_q2_K) == 84, "Q2_K block");
static_assert(sizeof(block_q3_K) == 110, "Q3_K block");
static_assert(sizeof(block_q4_K) == 144, "Q4_K block");
static_assert(sizeof(block_q5_K) == 176, "Q5_K block");
static_assert(sizeof(block_q6_K) == 210, "Q6_K block");
static_assert(sizeof(block_iq4_nl) == 18, "IQ4_NL block");
static_assert(sizeof(block_iq4_xs) == 136, "IQ4_XS block");

/* Q4_K / Q5_K: the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes. */
static inline void q4k_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q3_K's 16 signed 6-bit scales: low 4 bits in bytes 0..7 (low nibbles for 0..7, high
 * for 8..15), high 2 bits in bytes 8..11 (scale i at byte 8 + i % 4, bits 2 (i / 4)). */
static inline int q3k_scale(const uint8_t *s, int i) {
    int lo = i < 8 ? s[i] & 15 : s[i - 8] >> 4;
    int hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (lo | hi << 4) - 32;
}

/* The 2-bit field of value v (0..255) in Q2_K's / Q3_K's 64-byte qs: each half of 128
 * values takes 32 bytes, value u of the half in byte u % 32 at bits 2 (u / 32). */
static inline int q2k_crumb(const uint8_t *qs, int v) {
    return (qs[32 * (v / 128) + v % 32] >> (2 * (v % 128 / 32))) & 3;
}

/* The IQ4_NL / IQ4_XS non-linear grid: a 4-bit index q stands for kvalues[q]. */
extern const int8_t IQ4_KVALUES[16];

/* The 32 values of sub-block j (0 .. block_elems/32 - 1) of one block at `blk`,
 * dequantized to f32 exactly as gguf-py does. Every quantized weight type has
 * one; the exact-mode kernels of every ISA fall back to it. */
typedef void (*dequant32_fn)(const uint8_t *blk, int j, float *out);

typedef struct {
    const char *name;      /* "Q4_K": as ggml and messages spell it */
    int ggml;              /* GGUF tensor type id; -1: not a GGUF type */
    int block_elems;       /* values per block (1 for plain types) */
    int block_bytes;       /* bytes per block */
    dequant32_fn dequant32; /* NULL for plain (F32, F16, BF16, ints) and in-memory-only types */
    int weight;            /* 1: accepted as a matmul weight (some kernel table has it) */
    dtype packs_as;        /* fast mode rewrites it at load into this packed layout of kernels.h
                              (repack.c); DT_COUNT: kept as stored (read in place, or f32 route) */
} dtype_traits;

/* The row of t (t < DT_COUNT); never NULL. */
const dtype_traits *dtype_info(dtype t);

/* The dtype of a GGUF tensor type id; -1 if llmgen does not read that type. */
int dtype_from_ggml(uint32_t id, dtype *out);

/* Name of a GGUF tensor type id, for messages ("Q4_K", "IQ2_XXS", "unknown"). */
const char *ggml_type_name(uint32_t id);

/* The GGUF weight types llmgen reads, space-separated ("F32 F16 ... IQ4_XS"), into buf
 * (n bytes, truncated if short): for messages. */
void dtype_gguf_supported(char *buf, size_t n);

/* Row `row` of a (rows, cols) matrix stored with dtype t at `data` to f32
 * (cols floats): the reference dequantizer, for any weight type. */
void dtype_dequant_row(dtype t, const void *data, int64_t cols, int64_t row, float *out);

#endif
