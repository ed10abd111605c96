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

#define TILE(KIND, DT, FN, R, T)                                                              \
    static void FN(const uint8_t *w, size_t rb, int cols, const float *x, int ldx, float *y, \
                   int ldy) {                                                                 \
        KIND##_tile(DT, w, rb, cols, x, ldx, y, ldy, R, T);                                   \
    }
#define TILES(KIND, DT, NAME)                                                                 \
    TILE(KIND, DT, NAME##_gemv, GEMV_R, 1)                                                    \
    TILE(KIND, DT, NAME##_rt, TILE_R, TILE_T)                                                 \
    TILE(KIND, DT, NAME##_r1, TILE_R, 1)                                                      \
    TILE(KIND, DT, NAME##_ot, 1, TILE_T)                                                      \
    TILE(KIND, DT, NAME##_o1, 1, 1)                                                           \
    static const tile_set NAME##_tiles = {NAME##_gemv, NAME##_rt, NAME##_r1, NAME##_ot, NAME##_o1};

TILES(dense, DT_F32, f32)
TILES(dense, DT_F16, f16)
TILES(dense, DT_BF16, bf16)
TILES(quant, DT_Q8_0, q8_0)
TILES(quant, DT_Q4_0, q4_0)
TILES(quant, DT_Q4_1, q4_1)
#ifndef TILES_NO_DQ /* the including file has its own kernels for the types below */
TILES(quant, DT_Q5_0, q5_0)
TILES(quant, DT_Q5_1, q5_1)
TILES(quant, DT_Q2_K, q2_k)
TILES(quant, DT_Q3_K, q3_k)
TILES(quant, DT_Q4_K, q4_k)
TILES(quant, DT_Q5_K, q5_k)
TILES(quant, DT_Q6_K, q6_k)
TILES(quant, DT_IQ4_NL, iq4_nl)
TILES(quant, DT_IQ4_XS, iq4_xs)
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

#define MATMUL(NAME)                                                                              \
    static void matmul_##NAME(const void *w, size_t rb, int cols, int r0, int r1, const float *x, \
                              int ldx, int nt, float *y, int ldy) {                               \
        run_tiles(&NAME##_tiles, w, rb, cols, r0, r1, x, ldx, nt, y, ldy);                        \
    }

MATMUL(f32)
MATMUL(f16)
MATMUL(bf16)
MATMUL(q8_0)
MATMUL(q4_0)
MATMUL(q4_1)
#ifndef TILES_NO_DQ
MATMUL(q5_0)
MATMUL(q5_1)
MATMUL(q2_k)
MATMUL(q3_k)
MATMUL(q4_k)
MATMUL(q5_k)
MATMUL(q6_k)
MATMUL(iq4_nl)
MATMUL(iq4_xs)
#endif

#endif
