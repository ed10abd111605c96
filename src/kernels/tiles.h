/* tiles.h - the row / token walk every ISA matmul file shares.
 *
 * Included once by avx2.c, avx512.c and neon.c after they define GEMV_R (rows per
 * decode step), TILE_R x TILE_T (the prefill register tile) and the tile kernels
 * `dense_tile(dt, w, rb, cols, x, ldx, y, ldy, R, T)` and `quant_tile(...)`. It
 * instantiates the fixed-size tiles and defines matmul_f32 ... matmul_q4_1 and the
 * DQ_MATMULS of dequant.h, which the including file puts in its table. Private to src/kernels/. */
#ifndef LLMGEN_KERNELS_TILES_H
#define LLMGEN_KERNELS_TILES_H

typedef void (*tile_fn)(const uint8_t *w, size_t rb, int cols, const float *x, int ldx, float *y,
                        int ldy);

/* Tiles used: GEMV_R x 1 (decode), TILE_R x TILE_T (prefill), TILE_R x 1
 * (leftover tokens), 1 x TILE_T and 1 x 1 (leftover rows). */
typedef struct {
    tile_fn gemv, rt, r1, ot, o1;
} tile_set;

#define TILE(KERNEL, DT, FN, R, T)                                                                      \
    static void FN(const uint8_t *w, size_t rb, int cols, const float *x, int ldx, float *y, int ldy) { \
        KERNEL(DT, w, rb, cols, x, ldx, y, ldy, R, T);                                                  \
    }
/* The tile_set SET of dt by KERNEL (dense_tile or quant_tile), its five tiles named. */
#define TILES(KERNEL, DT, SET, GEMV, RT, R1, OT, O1) \
    TILE(KERNEL, DT, GEMV, GEMV_R, 1)                \
    TILE(KERNEL, DT, RT, TILE_R, TILE_T)             \
    TILE(KERNEL, DT, R1, TILE_R, 1)                  \
    TILE(KERNEL, DT, OT, 1, TILE_T)                  \
    TILE(KERNEL, DT, O1, 1, 1)                       \
    static const tile_set SET = {GEMV, RT, R1, OT, O1};

TILES(dense_tile, DT_F32, f32_tiles, f32_gemv, f32_rt, f32_r1, f32_ot, f32_o1)
TILES(dense_tile, DT_F16, f16_tiles, f16_gemv, f16_rt, f16_r1, f16_ot, f16_o1)
TILES(dense_tile, DT_BF16, bf16_tiles, bf16_gemv, bf16_rt, bf16_r1, bf16_ot, bf16_o1)
TILES(quant_tile, DT_Q8_0, q8_0_tiles, q8_0_gemv, q8_0_rt, q8_0_r1, q8_0_ot, q8_0_o1)
TILES(quant_tile, DT_Q4_0, q4_0_tiles, q4_0_gemv, q4_0_rt, q4_0_r1, q4_0_ot, q4_0_o1)
TILES(quant_tile, DT_Q4_1, q4_1_tiles, q4_1_gemv, q4_1_rt, q4_1_r1, q4_1_ot, q4_1_o1)
#ifndef TILES_NO_DQ /* the including file has its own kernels for the types below */
TILES(quant_tile, DT_Q5_0, q5_0_tiles, q5_0_gemv, q5_0_rt, q5_0_r1, q5_0_ot, q5_0_o1)
TILES(quant_tile, DT_Q5_1, q5_1_tiles, q5_1_gemv, q5_1_rt, q5_1_r1, q5_1_ot, q5_1_o1)
TILES(quant_tile, DT_Q2_K, q2_k_tiles, q2_k_gemv, q2_k_rt, q2_k_r1, q2_k_ot, q2_k_o1)
TILES(quant_tile, DT_Q3_K, q3_k_tiles, q3_k_gemv, q3_k_rt, q3_k_r1, q3_k_ot, q3_k_o1)
TILES(quant_tile, DT_Q4_K, q4_k_tiles, q4_k_gemv, q4_k_rt, q4_k_r1, q4_k_ot, q4_k_o1)
TILES(quant_tile, DT_Q5_K, q5_k_tiles, q5_k_gemv, q5_k_rt, q5_k_r1, q5_k_ot, q5_k_o1)
TILES(quant_tile, DT_Q6_K, q6_k_tiles, q6_k_gemv, q6_k_rt, q6_k_r1, q6_k_ot, q6_k_o1)
TILES(quant_tile, DT_IQ4_NL, iq4_nl_tiles, iq4_nl_gemv, iq4_nl_rt, iq4_nl_r1, iq4_nl_ot, iq4_nl_o1)
TILES(quant_tile, DT_IQ4_XS, iq4_xs_tiles, iq4_xs_gemv, iq4_xs_rt, iq4_xs_r1, iq4_xs_ot, iq4_xs_o1)
TILES(quant_tile, DT_MXFP4, mxfp4_tiles, mxfp4_gemv, mxfp4_rt, mxfp4_r1, mxfp4_ot, mxfp4_o1)
#endif

static void run_rows(tile_fn tt, tile_fn t1, const uint8_t *w, size_t rb, int cols, const float *x,
                     int ldx, int nt, float *y, int ldy) {
    int t = 0;
    for (; t + TILE_T <= nt; t += TILE_T) tt(w, rb, cols, x + (size_t)t * ldx, ldx, y + (size_t)t * ldy, ldy);
    for (; t < nt; t++) t1(w, rb, cols, x + (size_t)t * ldx, ldx, y + (size_t)t * ldy, ldy);
}

/* Row tiles outside, token tiles inside: the weights of a row tile stay in L1/L2
 * while every token tile passes over them. */
static void run_tiles(const tile_set *s, const void *w, size_t rb, int cols, int r0, int r1,
                      const float *x, int ldx, int nt, float *y, int ldy) {
    const uint8_t *wb = w;
    int r = r0;
    if (nt == 1) {
        for (; r + GEMV_R <= r1; r += GEMV_R) s->gemv(wb + r * rb, rb, cols, x, ldx, y + r, ldy);
        for (; r < r1; r++) s->o1(wb + r * rb, rb, cols, x, ldx, y + r, ldy);
        return;
    }
    for (; r + TILE_R <= r1; r += TILE_R) run_rows(s->rt, s->r1, wb + r * rb, rb, cols, x, ldx, nt, y + r, ldy);
    for (; r < r1; r++) run_rows(s->ot, s->o1, wb + r * rb, rb, cols, x, ldx, nt, y + r, ldy);
}

#define MATMUL(FN, SET)                                                                                           \
    static void FN(const void *w, size_t rb, int cols, int r0, int r1, const float *x, int ldx, int nt, float *y, \
                   int ldy) {                                                                                     \
        run_tiles(&SET, w, rb, cols, r0, r1, x, ldx, nt, y, ldy);                                                 \
    }

MATMUL(matmul_f32, f32_tiles)
MATMUL(matmul_f16, f16_tiles)
MATMUL(matmul_bf16, bf16_tiles)
MATMUL(matmul_q8_0, q8_0_tiles)
MATMUL(matmul_q4_0, q4_0_tiles)
MATMUL(matmul_q4_1, q4_1_tiles)
#ifndef TILES_NO_DQ
MATMUL(matmul_q5_0, q5_0_tiles)
MATMUL(matmul_q5_1, q5_1_tiles)
MATMUL(matmul_q2_k, q2_k_tiles)
MATMUL(matmul_q3_k, q3_k_tiles)
MATMUL(matmul_q4_k, q4_k_tiles)
MATMUL(matmul_q5_k, q5_k_tiles)
MATMUL(matmul_q6_k, q6_k_tiles)
MATMUL(matmul_iq4_nl, iq4_nl_tiles)
MATMUL(matmul_iq4_xs, iq4_xs_tiles)
MATMUL(matmul_mxfp4, mxfp4_tiles)
#endif

#endif
