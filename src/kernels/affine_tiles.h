/* affine_tiles.h - the row / token walk of the f32-activation affine matmuls, shared
 * by affine_avx2.c and affine_avx512.c (as tiles.h is for the GGUF kernels).
 *
 * Included once after the including file defines AI, MAX_T (tokens per tile, 4),
 * AFFINE_GEMV_R (rows per decode tile) and the tile kernel
 *   tile(bits, a, rb, cols, r0, x, ldx, y, ldy, R, T): rows [r0, r0 + R) x T tokens.
 * Defines matmul(bits, w, rb, cols, r0, r1, x, ldx, nt, y, ldy) over rows [r0, r1)
 * and nt tokens. Every row and token goes through the same per-element arithmetic
 * whatever its tile, so results do not depend on the row split or the token count.
 * Private to src/kernels/. */
#ifndef LLMGEN_KERNELS_AFFINE_TILES_H
#define LLMGEN_KERNELS_AFFINE_TILES_H

/* Tiles of constant sizes (so the tile loops unroll): R rows at a time, then the rest
 * one by one, for T tokens. */
#define AFFINE_ROWS(R, T)                                                                   \
    do {                                                                                    \
        int r = r0;                                                                         \
        for (; r + (R) <= r1; r += (R)) tile(bits, a, rb, cols, r, xt, ldx, yt, ldy, R, T); \
        for (; r < r1; r++) tile(bits, a, rb, cols, r, xt, ldx, yt, ldy, 1, T);             \
    } while (0)

AI void matmul(int bits, const void *w, size_t rb, int cols, int r0, int r1, const float *x, int ldx, int nt,
               float *y, int ldy) {
    const affine_weights *a = w;
    const float *xt = x;
    float *yt = y;
    if (nt == 1) {
        AFFINE_ROWS(AFFINE_GEMV_R, 1);
        return;
    }
    for (int t = 0; t < nt; t += MAX_T) {
        xt = x + (size_t)t * ldx;
        yt = y + (size_t)t * ldy;
        switch (nt - t < MAX_T ? nt - t : MAX_T) {
        case 4: AFFINE_ROWS(4, 4); break;
        case 3: AFFINE_ROWS(4, 3); break;
        case 2: AFFINE_ROWS(4, 2); break;
        default: AFFINE_ROWS(4, 1); break;
        }
    }
}

#endif
