/* q6k_packed.c - GGUF Q6_K rewritten into the packed layout of kernels.h (fast
 * mode), and read back: portable code shared by the loader (repack.c), the
 * scalar reference kernel and the tests.
 *
 * Why this layout: read in place, every Q6_K row of 256 values is decoded from
 * the file's ql / qh planes and 16 int8 scales on every use, row by row (3x the
 * CPU time per prefill token and 1.4x per decoded token of this layout on the
 * 1B-config Q6_K file; `perf stat -e task-clock build/bench/llmgen_bench FILE -t 1`).
 * Packed, a group of 8 rows is one stream in the lane order of the
 * int8 kernels (as Q4_0 / Q4_1 / Q8_0), with the 6-bit values split into a
 * nibble plane (the Q4 layout) and a 2-bit plane whose fields sit where one
 * shift and mask per vector bring them to bits 4-5; prefill unpacks each panel
 * once. The size stays the file's (6.5625 bits per weight): an int8 copy would
 * be 8.5, 30% more bytes for decode to stream and above the memory bound of
 * file + KV cache + 10% on an all-Q6_K model. */
#include "kernels.h"

#include "quant/quant.h"
#include "base/util.h"

/* Block j (0..7) of the super-block at blk in its packed payload form (kernels.h):
 * 16 nibble bytes, then 8 high-bit bytes. Values v of a super-block: half h = v /
 * 128, w = v % 128: bits 0-3 in ql[64 h + w % 64] (low nibble for w < 64, high
 * above), bits 4-5 in qh[32 h + w % 32] at bits 2 (w / 32). So block j's value l
 * has its nibble in ql[64 (j / 4) + 32 (j % 2) + l] (high nibble for j % 4 >= 2)
 * and its high bits in qh[32 (j / 4) + l] at bits 2 (j % 4). */
static void q6k_block_payload(const uint8_t *blk, int j, uint8_t out[24]) {
    const uint8_t *ql = blk + offsetof(block_q6_K, ql) + 64 * (j / 4) + 32 * (j % 2);
    const uint8_t *qh = blk + offsetof(block_q6_K, qh) + 32 * (j / 4);
    const uint64_t lo = 0x0f0f0f0f0f0f0f0full;
    for (int k = 0; k < 16; k += 8) { /* byte k: value k (low nibble), value k + 16 (high) */
        uint64_t a, b, v;
        memcpy(&a, ql + k, 8);
        memcpy(&b, ql + k + 16, 8);
        v = j % 4 < 2 ? (a & lo) | (b & lo) << 4 : (a >> 4 & lo) | (b & ~lo);
        memcpy(out + k, &v, 8);
    }
    /* high-bit byte k: values 4f + k (k < 4), else 16 + 4f + k - 4, at bits 2f: with the
     * 2-bit fields of 8 values as the bytes of x, value 4f + k is byte k of x >> 32 f */
    const uint64_t m3 = 0x0303030303030303ull;
    for (int k = 0; k < 8; k += 4) {
        uint64_t a, b;
        memcpy(&a, qh + 4 * k, 8); /* values 4k .. 4k + 7 */
        memcpy(&b, qh + 4 * k + 8, 8);
        a = a >> (2 * (j % 4)) & m3;
        b = b >> (2 * (j % 4)) & m3;
        uint32_t hb = (uint32_t)(a | (a >> 32) << 2 | b << 4 | (b >> 32) << 6);
        memcpy(out + 16 + k, &hb, 4);
    }
}

void q6k_pack_rows(dtype type, const uint8_t *file, int rows, int cols, int r0, int r1, uint8_t *out) {
    (void)type;
    const dtype dt = DT_Q6_K;
    int nb = cols / 32;
    size_t rb = dtype_row_bytes(dt, cols);
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = file + (size_t)r * rb;
        int i = r % Q8W_GROUP;
        for (int q = 0; 4 * q < nb; q++) { /* one chunk lookup per quad, as repack.c's pack_row */
            q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, q);
            const uint8_t *blk = row + (size_t)(q / 2) * sizeof(block_q6_K);
            const int8_t *sc = (const int8_t *)(blk + offsetof(block_q6_K, scales));
            uint8_t *ck = out + c.off;
            size_t step = (size_t)c.kb * (c.rr - i / 4 * 4 < 4 ? c.rr - i / 4 * 4 : 4) * 4;
            for (int bi = 0; bi < 4; bi++) {
                int j = 4 * (q % 2) + bi, si = q8w_scale_idx(dt, &c, i, bi);
                uint8_t pay[24];
                q6k_block_payload(blk, j, pay);
                ck[si] = (uint8_t)sc[2 * j];
                ck[si + q8w_nscales(dt, &c)] = (uint8_t)sc[2 * j + 1];
                uint8_t *dst = ck + q8w_byte(dt, &c, i, bi, 0);
                for (int v = 0; v < 6; v++) memcpy(dst + step * v, pay + 4 * v, 4);
            }
            if (q % 2 == 0) memcpy(out + c.grp + 2 * ((size_t)(q / 2) * c.rr + i), blk + offsetof(block_q6_K, d), 2);
        }
        if (i == 0) q8w_dtab_pad(dt, out, rows, nb, r);
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

/* (d * sc) * (u - 32), as quant.c's dq32_q6_k (gguf-py's order of roundings). */
void q6k_packed_row_f32(dtype type, const uint8_t *packed, int rows, int cols, int r, float *out) {
    (void)type;
    int nb = cols / 32;
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < 32; j++)
            out[32 * b + j] = q6k_packed_scale(packed, rows, nb, r, b, j / 16) * (float)(q6k_packed_u(packed, rows, nb, r, b, j) - 32);
}
