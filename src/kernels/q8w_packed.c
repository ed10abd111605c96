/* q8w_packed.c - the plain repacked layouts of kernels.h (Q4_0, Q4_1, Q8_0, and MLX 4-bit
 * groups as Q4_1G64 / Q4_1G128): the packer and the packed-row reader of their rows of the
 * type table (quant.h). */
#include <string.h>

#include "kernels.h"
#include "quant/quant.h"
#include "base/util.h"

/* The chunk of (row r, block b) and, in it, the offsets of that block's scale
 * and of its first payload dword (the others follow every kb * rh * 4 bytes). */
typedef struct {
    q8w_chunk c;
    size_t d, m, pay, step; /* bytes from the start of the matrix; step between the block's dwords */
} block_place;

static block_place place_of(dtype dt, int rows, int nb, int r, int b) {
    block_place p;
    p.c = q8w_chunk_at(dt, rows, nb, r, b / 4);
    int i = r % Q8W_GROUP, bi = b % 4, rh = p.c.rr - i / 4 * 4 < 4 ? p.c.rr - i / 4 * 4 : 4;
    p.d = p.c.off + 2 * (size_t)q8w_scale_idx(dt, &p.c, i, bi);
    p.m = p.d + 2 * (size_t)q8w_nscales(dt, &p.c);
    p.pay = p.c.off + q8w_byte(dt, &p.c, i, bi, 0);
    p.step = (size_t)p.c.kb * rh * 4;
    return p;
}

void q8w_pack_row(dtype dt, int rows, int nb, int r, const uint8_t *src, uint8_t *out) {
    int pay_bytes = 4 * q8w_nv(dt), nv = q8w_nv(dt), gb = q8w_gb(dt), i = r % Q8W_GROUP;
    int sbb = dtype_block_bytes(gb > 1 ? DT_Q4_1 : dt), shdr = sbb - pay_bytes;
    /* one chunk lookup per 4 blocks: per-byte offset arithmetic showed in load time */
    for (int q = 0; 4 * q < nb; q++) {
        q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, q);
        uint8_t *ck = out + c.off;
        size_t step = (size_t)c.kb * (c.rr - i / 4 * 4 < 4 ? c.rr - i / 4 * 4 : 4) * 4;
        for (int bi = 0; bi < c.kb; bi++, src += sbb) {
            if (bi % gb == 0) { /* a group's first block carries its scale and min */
                size_t d = 2 * (size_t)q8w_scale_idx(dt, &c, i, bi);
                memcpy(ck + d, src, 2);
                if (q8w_has_min(dt)) memcpy(ck + d + 2 * (size_t)q8w_nscales(dt, &c), src + 2, 2);
            }
            uint8_t *pay = ck + q8w_byte(dt, &c, i, bi, 0);
            for (int v = 0; v < nv; v++) {
                uint32_t w;
                memcpy(&w, src + shdr + 4 * v, 4);
                if (dt == DT_Q8_0) w ^= 0x80808080u; /* w + 128 as u8: flip the sign bits */
                memcpy(pay + step * v, &w, 4);
            }
        }
    }
}

void q8w_pack_rows(dtype dt, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out) {
    int gb = q8w_gb(dt);
    size_t rb = dtype_row_bytes(gb > 1 ? DT_Q4_1 : dt, cols);
    for (int r = r0; r < r1; r++) q8w_pack_row(dt, rows, cols / 32, r, file + (size_t)r * rb, out);
}

void q8w_packed_row_f32(dtype dt, const uint8_t *pk, int rows, int cols, int row, float *out) {
    int nb = cols / 32;
    for (int b = 0; b < nb; b++, out += 32) {
        block_place p = place_of(dt, rows, nb, row, b);
        float db = f16_to_f32(rd_u16(pk + p.d));
        float mb = q8w_has_min(dt) ? f16_to_f32(rd_u16(pk + p.m)) : 0.0f;
        uint8_t q[32];
        for (int v = 0; v < q8w_nv(dt); v++) memcpy(q + 4 * v, pk + p.pay + p.step * v, 4);
        for (int j = 0; j < 16; j++) {
            if (dt == DT_Q8_0) {
                out[j] = db * (float)(int8_t)(q[j] ^ 0x80);
                out[j + 16] = db * (float)(int8_t)(q[j + 16] ^ 0x80);
            } else if (dt == DT_Q4_0) {
                out[j] = db * (float)((q[j] & 0x0f) - 8);
                out[j + 16] = db * (float)((q[j] >> 4) - 8);
            } else {
                out[j] = db * (float)(q[j] & 0x0f) + mb;
                out[j + 16] = db * (float)(q[j] >> 4) + mb;
            }
        }
    }
}
