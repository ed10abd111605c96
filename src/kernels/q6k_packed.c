/* q6k_packed.c - GGUF Q6_K rewritten into the packed layout of kernels.h (fast
 * mode), and read back: portable code shared by the loader (repack.c), the
 * scalar reference kernel and the tests.
 *
 * Why this layout: read in place, every Q6_K row of 256 values was decoded
 * from the file's ql / qh planes and 16 int8 scales on every use, row by row
 * (1B-config Q6_K prefill at 0.45x llama.cpp, decode at 42% of the bandwidth
 * floor). Packed, a group of 8 rows is one stream in the lane order of the
 * int8 kernels (as Q4_0 / Q4_1 / Q8_0), with the 6-bit values split into a
 * nibble plane (the Q4 layout) and a 2-bit plane whose fields sit where one
 * shift and mask per vector bring them to bits 4-5; prefill unpacks each panel
 * once. The size stays the file's (6.5625 bits per weight): an int8 copy would
 * be 8.5, 30% more bytes for decode to stream and above the memory bound of
 * file + KV cache + 10% on an all-Q6_K model. */
#include "kernels.h"

#include "quant.h"
#include "util.h"

/* The 32 six-bit values of block j (0..7) of the super-block at blk. */
static void q6k_block_u(const uint8_t *blk, int j, uint8_t u[32]) {
    const uint8_t *ql = blk + offsetof(block_q6_K, ql), *qh = blk + offsetof(block_q6_K, qh);
    for (int l = 0; l < 32; l++) {
        int v = 32 * j + l, h = v / 128, w = v % 128;
        int lo = w < 64 ? ql[64 * h + w] & 15 : ql[64 * h + w - 64] >> 4;
        int hi = (qh[32 * h + w % 32] >> (2 * (w / 32))) & 3;
        u[l] = (uint8_t)(lo | hi << 4);
    }
}

void q6k_pack_rows(const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out) {
    const dtype dt = DT_Q6_K;
    int nb = cols / 32, nsb = cols / QK_K;
    size_t rb = dtype_row_bytes(dt, cols);
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = file + (size_t)r * rb;
        int i = r % Q8W_GROUP;
        for (int b = 0; b < nb; b++) {
            const uint8_t *blk = row + (size_t)(b / 8) * sizeof(block_q6_K);
            const int8_t *sc = (const int8_t *)(blk + offsetof(block_q6_K, scales));
            q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
            uint8_t *ck = out + c.off, u[32];
            int bi = b % 4, si = q8w_scale_idx(dt, &c, i, bi);
            q6k_block_u(blk, b % 8, u);
            ck[si] = (uint8_t)sc[2 * (b % 8)];
            ck[si + q8w_nscales(dt, &c)] = (uint8_t)sc[2 * (b % 8) + 1];
            for (int jb = 0; jb < 16; jb++) ck[q8w_byte(dt, &c, i, bi, jb)] = (uint8_t)((u[jb] & 15) | (u[jb + 16] & 15) << 4);
            for (int k = 0; k < 8; k++) { /* the high-bit bytes: k < 4 first 16 values, else second */
                int base = k < 4 ? k : 16 + k - 4, hb = 0;
                for (int f = 0; f < 4; f++) hb |= (u[base + 4 * f] >> 4) << (2 * f);
                ck[q8w_byte(dt, &c, i, bi, 16 + k)] = (uint8_t)hb;
            }
            if (b % 8 == 0) memcpy(out + c.grp + 2 * ((size_t)(b / 8) * c.rr + i), blk + offsetof(block_q6_K, d), 2);
        }
        if (i == 0) { /* the group's d table padding */
            q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, 0);
            size_t used = 2 * (size_t)c.rr * nsb;
            memset(out + c.grp + used, 0, q8w_dtab(dt, c.rr, nb) - used);
        }
    }
}

int q6k_packed_u(const uint8_t *packed, int rows, int nb, int r, int b, int j) {
    const dtype dt = DT_Q6_K;
    q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
    const uint8_t *ck = packed + c.off;
    int i = r % Q8W_GROUP, bi = b % 4, e = j % 16;
    uint8_t nib = ck[q8w_byte(dt, &c, i, bi, e)];
    uint8_t hb = ck[q8w_byte(dt, &c, i, bi, 16 + 4 * (j / 16) + e % 4)];
    return (j < 16 ? nib & 15 : nib >> 4) | ((hb >> (2 * (e / 4))) & 3) << 4;
}

float q6k_packed_scale(const uint8_t *packed, int rows, int nb, int r, int b, int half) {
    const dtype dt = DT_Q6_K;
    q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
    int i = r % Q8W_GROUP, si = q8w_scale_idx(dt, &c, i, b % 4) + half * q8w_nscales(dt, &c);
    float d = f16_to_f32(rd_u16(packed + c.grp + 2 * ((size_t)(b / 8) * c.rr + i)));
    return d * (float)(int8_t)packed[c.off + (size_t)si];
}

/* (d * sc) * (u - 32), as quant.c's dq_q6_k (gguf-py's order of roundings). */
void q6k_packed_row_f32(const uint8_t *packed, int rows, int cols, int r, float *out) {
    int nb = cols / 32;
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < 32; j++)
            out[32 * b + j] = q6k_packed_scale(packed, rows, nb, r, b, j / 16) * (float)(q6k_packed_u(packed, rows, nb, r, b, j) - 32);
}
