/* src/quant/: the quantization types, one table of facts and reference dequantizers. Knows
 * nothing of files, models or kernels' ISAs (it names the portable packers of its layouts).
 *
 * quant.h - the quantization-type table: one row of facts per dtype (GGUF id,
 * name, block size and bytes, reference dequantizer, fast-mode packed form and
 * the packed layout's facts) and the GGUF block layouts as structs.
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
#include <string.h>

#include "base/tensor.h"

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
typedef struct { uint8_t e; uint8_t qs[16]; } block_mxfp4;                              /* x = 2^(e-128)*kv[q] */

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
static_assert(sizeof(block_mxfp4) == 17, "MXFP4 block");

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

/* MXFP4's grid: E2M1 (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives) doubled into integers,
 * the factor 2 taken back by the scale (ggml's kvalues_mxfp4). */
extern const int8_t MXFP4_KVALUES[16];

/* MXFP4's E8M0 scale byte e as the f32 2^(e - 128) (ggml's E8M0_TO_FP32_HALF: half of 2^(e - 127),
 * which the doubled grid asks for); e < 2 gives the subnormals 2^-128 and 2^-127, e = 255 2^127. */
static inline float mxfp4_scale(uint8_t e) {
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* The 32 values of sub-block j (0 .. block_elems/32 - 1) of one block at `blk`,
 * dequantized to f32 exactly as gguf-py does. Every quantized weight type has
 * one; the exact-mode kernels of every ISA fall back to it. */
typedef void (*dequant32_fn)(const uint8_t *blk, int j, float *out);

/* The dequantizers of the table (32 values of sub-block j of one block). */
void dq32_q8_0(const uint8_t *blk, int j, float *out);
void dq32_q4_0(const uint8_t *blk, int j, float *out);
void dq32_q4_1(const uint8_t *blk, int j, float *out);
void dq32_q5_0(const uint8_t *blk, int j, float *out);
void dq32_q5_1(const uint8_t *blk, int j, float *out);
void dq32_q2_k(const uint8_t *blk, int j, float *out);
void dq32_q3_k(const uint8_t *blk, int j, float *out);
void dq32_q4_k(const uint8_t *blk, int j, float *out);
void dq32_q5_k(const uint8_t *blk, int j, float *out);
void dq32_q6_k(const uint8_t *blk, int j, float *out);
void dq32_iq4_nl(const uint8_t *blk, int j, float *out);
void dq32_iq4_xs(const uint8_t *blk, int j, float *out);
void dq32_mxfp4(const uint8_t *blk, int j, float *out);

/* Rows [r0, r1) of a (rows, cols) matrix in the file layout at `file` (rows back to back;
 * for Q4_1G64 / Q4_1G128, Q4_1 blocks whose scale and min repeat over each group) written
 * into the packed matrix of type dt at out (q8w_matrix_bytes, kernels.h); any thread may
 * pack its own groups of Q8W_GROUP rows. */
typedef void (*pack_rows_fn)(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out);
/* Row r of a packed (rows, cols) matrix of type dt as f32: the values gguf-py dequantizes
 * the file to. */
typedef void (*packed_row_fn)(dtype dt, const uint8_t *packed, int rows, int cols, int r, float *out);

/* The packers and readers of the table's layouts (src/kernels/: q8w_packed.c for Q4_0,
 * Q4_1, Q8_0 and the MLX groups, q5_packed.c, q6k_packed.c, q4k_packed.c). */
void q8w_pack_rows(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out);
/* ... one row r of a plain layout (nb = cols / 32 blocks) from its file-layout row at src. */
void q8w_pack_row(dtype dt, int rows, int nb, int r, const uint8_t *src, uint8_t *out);
void q8w_packed_row_f32(dtype dt, const uint8_t *packed, int rows, int cols, int r, float *out);
void q5_pack_rows(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out);
void q5_packed_row_f32(dtype dt, const uint8_t *packed, int rows, int cols, int r, float *out);
void q6k_pack_rows(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out);
void q6k_packed_row_f32(dtype dt, const uint8_t *packed, int rows, int cols, int r, float *out);
void q4k_pack_rows(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out);
void q4k_packed_row_f32(dtype dt, const uint8_t *packed, int rows, int cols, int r, float *out);

/* A packed layout of the int8-activation kernels (kernels.h, "Repacked weights"): rows in
 * groups of 8, each group one stream of chunks of (its rows, 4 blocks of 32), every
 * chunk's scales first, then its payload of 16-lane vectors, 4 bytes per (row, block). */
typedef struct {
    int8_t gb;             /* blocks of 32 sharing one scale (and min): 2 / 4 for MLX groups of 64 / 128 */
    int8_t has_min;        /* a min per scale: x = d*q + m */
    int8_t two;            /* a second entry per scale: the min, or Q6_K's scale of a block's second 16 */
    int8_t five;           /* Q5_0 / Q5_1: a nibble plane, and payload vector 4 of a half holds fifth bits */
    int8_t sbytes;         /* bytes per scale entry: 2 (f16), 1 (Q6_K's int8, Q4_K's u8) */
    int8_t nv;             /* payload vectors per half chunk */
    int8_t dtab_entry;     /* bytes per row and super-block of a group's d table (Q6_K: d; Q4_K:
                              d and -dmin), 0: no d table */
    pack_rows_fn pack_rows;
    packed_row_fn row_f32;
} packed_layout;

typedef struct {
    const char *name;      /* "Q4_K": as ggml and messages spell it */
    int ggml;              /* GGUF tensor type id; -1: not a GGUF type */
    int block_elems;       /* values per block (1 for plain types) */
    int block_bytes;       /* bytes per block */
    dequant32_fn dequant32; /* NULL for plain (F32, F16, BF16, ints) and in-memory-only types */
    int weight;            /* 1: accepted as a matmul weight (some kernel table has it) */
    dtype packs_as;        /* fast mode rewrites it at load into this packed layout (repack.c);
                              DT_COUNT: kept as stored (read in place, or f32 route) */
    packed_layout pk;      /* the layout of a type some type packs as (pk.pack_rows set) */
} dtype_traits;

/* packs_as: Q4_0, Q4_1, Q8_0, Q5_0, Q5_1, Q6_K and Q4_K pack as themselves, lossless and
 * about the file's size, with int8 kernels on every ISA (Q4_K: 4.625 bits per weight
 * packed, its 12 bytes of 6-bit scales become 16).
 * Layout rows: the plain repacked ones (Q4_0, Q4_1, Q8_0: f16 scales per block, 4 or 8
 * payload vectors), the MLX groups, and the types with packers of their own. */
#define PK_PLAIN(GB, MIN, NV) {GB, MIN, MIN, 0, 2, NV, 0, q8w_pack_rows, q8w_packed_row_f32}
#define PK_Q5(MIN) {1, MIN, MIN, 1, 2, 5, 0, q5_pack_rows, q5_packed_row_f32}

/* The table, visible so that inline kernels resolve a row of a constant dtype at compile
 * time (kernels.h's q8w_* helpers). Read it through dtype_info where t may be out of range. */
static const dtype_traits DTYPE_TRAITS[DT_COUNT] = {
    [DT_F32] = {"F32", 0, 1, 4, NULL, 1, DT_COUNT, {0}},
    [DT_F16] = {"F16", 1, 1, 2, NULL, 1, DT_COUNT, {0}},
    [DT_BF16] = {"BF16", 30, 1, 2, NULL, 1, DT_COUNT, {0}},
    [DT_Q8_0] = {"Q8_0", 8, 32, 34, dq32_q8_0, 1, DT_Q8_0, PK_PLAIN(1, 0, 8)},
    [DT_Q4_0] = {"Q4_0", 2, 32, 18, dq32_q4_0, 1, DT_Q4_0, PK_PLAIN(1, 0, 4)},
    [DT_Q4_1] = {"Q4_1", 3, 32, 20, dq32_q4_1, 1, DT_Q4_1, PK_PLAIN(1, 1, 4)},
    [DT_Q5_0] = {"Q5_0", 6, 32, 22, dq32_q5_0, 1, DT_Q5_0, PK_Q5(0)},
    [DT_Q5_1] = {"Q5_1", 7, 32, 24, dq32_q5_1, 1, DT_Q5_1, PK_Q5(1)},
    [DT_Q2_K] = {"Q2_K", 10, QK_K, 84, dq32_q2_k, 1, DT_COUNT, {0}},
    [DT_Q3_K] = {"Q3_K", 11, QK_K, 110, dq32_q3_k, 1, DT_COUNT, {0}},
    [DT_Q4_K] = {"Q4_K", 12, QK_K, 144, dq32_q4_k, 1, DT_Q4_K, {1, 1, 1, 0, 1, 4, 4, q4k_pack_rows, q4k_packed_row_f32}},
    [DT_Q5_K] = {"Q5_K", 13, QK_K, 176, dq32_q5_k, 1, DT_COUNT, {0}},
    [DT_Q6_K] = {"Q6_K", 14, QK_K, 210, dq32_q6_k, 1, DT_Q6_K, {1, 0, 1, 0, 1, 6, 2, q6k_pack_rows, q6k_packed_row_f32}},
    [DT_IQ4_NL] = {"IQ4_NL", 20, 32, 18, dq32_iq4_nl, 1, DT_COUNT, {0}},
    [DT_IQ4_XS] = {"IQ4_XS", 23, QK_K, 136, dq32_iq4_xs, 1, DT_COUNT, {0}},
    [DT_MXFP4] = {"MXFP4", 39, 32, 17, dq32_mxfp4, 1, DT_COUNT, {0}},
    /* F64 is a GGUF type llmgen does not accept as a weight; the integer types are safetensors' */
    [DT_F64] = {"F64", 28, 1, 8, NULL, 0, DT_COUNT, {0}},
    [DT_I64] = {"I64", -1, 1, 8, NULL, 0, DT_COUNT, {0}},
    [DT_I32] = {"I32", -1, 1, 4, NULL, 0, DT_COUNT, {0}},
    [DT_I16] = {"I16", -1, 1, 2, NULL, 0, DT_COUNT, {0}},
    [DT_I8] = {"I8", -1, 1, 1, NULL, 0, DT_COUNT, {0}},
    [DT_U8] = {"U8", -1, 1, 1, NULL, 0, DT_COUNT, {0}},
    [DT_U32] = {"U32", -1, 1, 4, NULL, 0, DT_COUNT, {0}},
    [DT_BOOL] = {"BOOL", -1, 1, 1, NULL, 0, DT_COUNT, {0}},
    /* MLX affine: a block is one u32 word (8 or 4 values); scales and biases live apart */
    [DT_AFFINE4] = {"AFFINE4", -1, 8, 4, NULL, 1, DT_COUNT, {0}},
    [DT_AFFINE8] = {"AFFINE8", -1, 4, 4, NULL, 1, DT_COUNT, {0}},
    /* in memory only: an MLX 4-bit matrix as Q4_1 with one scale and min per group of 64 /
       128 (repack.c); bytes per block of 32 as packed: 16 of nibbles + 4 / 2 of scale and min */
    [DT_Q4_1G64] = {"Q4_1G64", -1, 32, 18, NULL, 0, DT_COUNT, PK_PLAIN(2, 1, 4)},
    [DT_Q4_1G128] = {"Q4_1G128", -1, 32, 17, NULL, 0, DT_COUNT, PK_PLAIN(4, 1, 4)},
};

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
