/* q4k_packed.c - GGUF Q4_K rewritten into the packed layout of kernels.h (fast
 * mode), and read back: portable code shared by the loader (repack.c), the
 * scalar reference kernel and the tests.
 *
 * Why this layout: packed Q4_1 (an f16 scale and min per 32 values) would take 5
 * bits per weight, 11% more bytes than the file for decode to stream, and round d * sc
 * and dmin * m to f16 (lossy). Packed as itself, a group of 8 rows is one stream in the lane order of the int8 kernels with the
 * nibbles in Q4_1's byte order, the 6-bit sub-block scale and min as one byte
 * each beside them, and the super-block's f16 d / dmin in a table at the group's
 * start (as Q6_K's d): 4.625 bits per weight, and the kernels run Q4_1's integer
 * arithmetic with the block scale d * sc and min -(dmin * m) formed in f32,
 * where both are exact (11-bit by 6-bit products). */
#include "kernels.h"

#include "quant/quant.h"
#include "base/util.h"

/* Sub-block j (0..7) of the super-block at blk as 16 nibble bytes in Q4_1's order
 * (byte k: value k low, value k + 16 high). The file keeps sub-block j's 32 values in
 * the low (j even) or high (j odd) nibbles of qs[32 (j / 2) .. 32 (j / 2) + 31]. */
static void q4k_block_nibbles(const uint8_t *blk, int j, uint8_t out[16]) {
    const uint8_t *q = blk + offsetof(block_q4_K, qs) + 32 * (j / 2);
    const uint64_t lo = 0x0f0f0f0f0f0f0f0full;
    for (int k = 0; k < 16; k += 8) {
        uint64_t a, b, v;
        memcpy(&a, q + k, 8);
        memcpy(&b, q + k + 16, 8);
        v = j % 2 == 0 ? (a & lo) | (b & lo) << 4 : (a >> 4 & lo) | (b & ~lo);
        memcpy(out + k, &v, 8);
    }
}

void q4k_pack_rows(dtype type, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out) {
    (void)type;
    const dtype dt = DT_Q4_K;
    int nb = cols / 32;
    size_t rb = dtype_row_bytes(dt, cols);
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = file + (size_t)r * rb;
        int i = r % Q8W_GROUP;
        for (int q = 0; 4 * q < nb; q++) { /* one chunk lookup per quad, as repack.c's pack_row */
            q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, q);
            const uint8_t *blk = row + (size_t)(q / 2) * sizeof(block_q4_K);
            uint8_t *ck = out + c.off;
            size_t step = (size_t)c.kb * (c.rr - i / 4 * 4 < 4 ? c.rr - i / 4 * 4 : 4) * 4;
            for (int bi = 0; bi < 4; bi++) {
                int j = 4 * (q % 2) + bi, si = q8w_scale_idx(dt, &c, i, bi), sc, m;
                q4k_scale_min(blk + offsetof(block_q4_K, scales), j, &sc, &m);
                ck[si] = (uint8_t)sc;
                ck[si + q8w_nscales(dt, &c)] = (uint8_t)m;
                uint8_t nib[16];
                q4k_block_nibbles(blk, j, nib);
                uint8_t *dst = ck + q8w_byte(dt, &c, i, bi, 0);
                for (int v = 0; v < 4; v++) memcpy(dst + step * v, nib + 4 * v, 4);
            }
            if (q % 2 == 0) {
                uint8_t *dm = out + c.grp + 4 * (size_t)(q / 2) * c.rr;
                uint16_t nmin = (uint16_t)(rd_u16(blk + offsetof(block_q4_K, dmin)) ^ 0x8000u); /* -dmin, exact */
                memcpy(dm + 2 * i, blk + offsetof(block_q4_K, d), 2);
                memcpy(dm + 2 * (size_t)c.rr + 2 * i, &nmin, 2);
            }
        }
        if (i == 0) q8w_dtab_pad(dt, out, rows, nb, r);
    }
}

float q4k_packed_scale(const uint8_t *packed, int rows, int nb, int r, int b, int which) {
    const dtype dt = DT_Q4_K;
    q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
    int i = r % Q8W_GROUP, si = q8w_scale_idx(dt, &c, i, b % 4) + which * q8w_nscales(dt, &c);
    const uint8_t *dm = packed + c.grp + 4 * (size_t)(b / 8) * c.rr;
    /* which = 1: -dmin * m, the same f32 as -(dmin * m) (rounding is symmetric in sign) */
    return f16_to_f32(rd_u16(dm + 2 * (size_t)which * c.rr + 2 * i)) * (float)packed[c.off + (size_t)si];
}

/* (d * sc) * u - (dmin * m), as quant.c's dq32_q4_k (gguf-py's order of roundings). */
void q4k_packed_row_f32(dtype type, const uint8_t *packed, int rows, int cols, int r, float *out) {
    (void)type;
    const dtype dt = DT_Q4_K;
    int nb = cols / 32;
    for (int b = 0; b < nb; b++) {
        q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
        float dl = q4k_packed_scale(packed, rows, nb, r, b, 0), dm = -q4k_packed_scale(packed, rows, nb, r, b, 1);
        for (int j = 0; j < 32; j++) {
            uint8_t byte = packed[c.off + q8w_byte(dt, &c, r % Q8W_GROUP, b % 4, j % 16)];
            out[32 * b + j] = dl * (float)(j < 16 ? byte & 15 : byte >> 4) - dm;
        }
    }
}
