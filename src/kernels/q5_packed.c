/* q5_packed.c - GGUF Q5_0 / Q5_1 rewritten into the packed layout of kernels.h
 * (fast mode), and read back: portable code shared by the loader (repack.c), the
 * scalar reference kernel and the tests.
 *
 * Why this layout: an int8 copy (packed Q8_0, u - 16) would be lossless but 34
 * bytes a block instead of 22. On a Q4_K_M file whose rows are not multiples of 256
 * (SmolLM2: 576 columns) most matrices fall back to Q5_0, so decode would stream
 * 133 MB per token instead of the file's 104, above file + KV cache + 10% of peak
 * memory; the in-place kernels decode each block on every use. Packed, a group of 8 rows is one stream in the lane order of the
 * int8 kernels: the file's nibble bytes unchanged (the Q4 plane), and the fifth
 * bits of each (row, block) in one dword whose byte k carries those of the 8
 * values that meet byte k of the 4 nibble vectors, bit f for vector f's low
 * nibble, bit 4 + f for its high one: per vector one shift and one mask bring
 * them to bit 4. The size is the file's (22 / 24 bytes per 32 values). */
#include "kernels.h"

#include "quant/quant.h"
#include "base/util.h"

/* The fifth-bit dword of a block from the file's qh (bit l = fifth bit of value l):
 * byte k, bit f = value 4f + k; bit 4 + f = value 16 + 4f + k. Each 16-bit half of
 * qh is a 4 x 4 bit matrix (bit 4f + k), transposed to bit 4k + f by two delta swaps. */
static uint32_t q5_hbits(uint32_t qh) {
    uint32_t x = qh, t;
    t = (x ^ (x >> 3)) & 0x0a0a0a0au;
    x ^= t ^ (t << 3);
    t = (x ^ (x >> 6)) & 0x00cc00ccu;
    x ^= t ^ (t << 6);
    /* now nibble k of each half = the bits of values 4f + k (f = bit): spread each
     * half's 4 nibbles to the low nibbles of 4 bytes, the high half's above them */
    uint32_t lo = x & 0xffff, hi = x >> 16;
    lo = (lo | lo << 8) & 0x00ff00ffu;
    lo = (lo | lo << 4) & 0x0f0f0f0fu;
    hi = (hi | hi << 8) & 0x00ff00ffu;
    hi = (hi | hi << 4) & 0x0f0f0f0fu;
    return lo | hi << 4;
}

void q5_pack_rows(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out) {
    int nb = cols / 32, v1 = dt == DT_Q5_1, bb = v1 ? (int)sizeof(block_q5_1) : (int)sizeof(block_q5_0);
    size_t rb = (size_t)nb * (size_t)bb;
    for (int r = r0; r < r1; r++) {
        const uint8_t *blk = file + (size_t)r * rb;
        int i = r % Q8W_GROUP;
        for (int q = 0; 4 * q < nb; q++) { /* one chunk lookup per quad, as repack.c's pack_row */
            q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, q);
            uint8_t *ck = out + c.off;
            size_t step = (size_t)c.kb * (c.rr - i / 4 * 4 < 4 ? c.rr - i / 4 * 4 : 4) * 4;
            for (int bi = 0; bi < c.kb; bi++, blk += bb) {
                size_t si = 2 * (size_t)q8w_scale_idx(dt, &c, i, bi);
                memcpy(ck + si, blk, 2);
                if (v1) memcpy(ck + si + 2 * (size_t)q8w_nscales(dt, &c), blk + 2, 2);
                uint32_t hb = q5_hbits(rd_u32(blk + 2 + 2 * v1));
                const uint8_t *qs = blk + 6 + 2 * v1;
                uint8_t *dst = ck + q8w_byte(dt, &c, i, bi, 0);
                for (int v = 0; v < 4; v++) memcpy(dst + step * v, qs + 4 * v, 4);
                memcpy(dst + step * 4, &hb, 4);
            }
        }
    }
}

int q5_packed_u(dtype dt, const uint8_t *packed, int rows, int nb, int r, int b, int j) {
    q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
    const uint8_t *ck = packed + c.off;
    int i = r % Q8W_GROUP, bi = b % 4, e = j % 16;
    uint8_t nib = ck[q8w_byte(dt, &c, i, bi, e)];
    uint8_t hb = ck[q8w_byte(dt, &c, i, bi, 16 + e % 4)];
    return (j < 16 ? nib & 15 : nib >> 4) | ((hb >> (e / 4 + (j < 16 ? 0 : 4))) & 1) << 4;
}

/* d * (u - 16) (Q5_0) or d * u + m (Q5_1), as quant.c's dq32_q5_0 / dq32_q5_1 (gguf-py).
 * One chunk lookup per block (embedding lookups read rows through here). */
void q5_packed_row_f32(dtype dt, const uint8_t *packed, int rows, int cols, int r, float *out) {
    int nb = cols / 32, i = r % Q8W_GROUP;
    for (int b = 0; b < nb; b++, out += 32) {
        q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
        const uint8_t *ck = packed + c.off;
        size_t si = 2 * (size_t)q8w_scale_idx(dt, &c, i, b % 4);
        float d = f16_to_f32(rd_u16(ck + si));
        float m = dt == DT_Q5_1 ? f16_to_f32(rd_u16(ck + si + 2 * (size_t)q8w_nscales(dt, &c))) : 0.0f;
        size_t step = (size_t)c.kb * (c.rr - i / 4 * 4 < 4 ? c.rr - i / 4 * 4 : 4) * 4;
        const uint8_t *pay = ck + q8w_byte(dt, &c, i, b % 4, 0);
        uint8_t nib[16], hb[4];
        for (int v = 0; v < 4; v++) memcpy(nib + 4 * v, pay + step * v, 4);
        memcpy(hb, pay + step * 4, 4);
        for (int j = 0; j < 32; j++) {
            int e = j % 16, u = (j < 16 ? nib[e] & 15 : nib[e] >> 4) | ((hb[e % 4] >> (e / 4 + (j < 16 ? 0 : 4))) & 1) << 4;
            out[j] = dt == DT_Q5_1 ? d * (float)u + m : d * (float)(u - 16);
        }
    }
}
