/* src/kernels/: compute kernels, one table per ISA plus the scalar reference, chosen by
 * CPUID in dispatch.c. Knows nothing of models, files or the API.
 *
 * kernels.h - the table of compute kernels, filled once at start-up by CPUID.
 *
 * Kernels know nothing of models or files: they see pointers, sizes and a
 * dtype. Every kernel has a portable scalar version in scalar.c; the ISA files
 * (avx2.c, avx512.c, neon.c) provide faster ones that tests compare against it.
 * forward.c calls through this table and never names an instruction set. */
#ifndef LLMGEN_KERNELS_H
#define LLMGEN_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "quant/quant.h"
#include "base/tensor.h"
#include "base/util.h"

/* Matrix times activations, for one weight dtype:
 *   y[t*ldy + r] = sum_c W[r][c] * x[t*ldx + c]   for r in [r0, r1), t in [0, nt)
 * W is row-major (rows, cols) in its stored layout, row r at w + r*row_bytes
 * (quantized rows are whole blocks: cols is a multiple of the block size).
 * x and y are f32. Each y element is computed entirely by one call, in an order
 * that depends only on cols: results do not depend on how rows are split
 * between threads. nt > 1 is prefill: implementations should reuse each
 * loaded weight block across the nt activation rows. */
typedef void (*matmul_fn)(const void *w, size_t row_bytes, int cols, int r0, int r1,
                          const float *x, int ldx, int nt, float *y, int ldy);

/* ---- the int8-activation route (fast mode) ----------------------------------
 *
 * Activations quantized once per matmul input to int8 per block of 32 (like
 * llama.cpp's Q8_1), reused by every row and every matmul sharing the input.
 * Block b of token t: x[32b + j] ~= d[b] * q[b][j], q in [-127, 127],
 * d = max|x| / 127, q = round-to-nearest-even(x * (127 / max|x|)), s = sum_j q[j]
 * (an integer, exact in f32: |s| <= 32 * 127).
 * The blocks are stored in groups of 4 (a "quad", 128 columns) in the order
 * the kernels consume a 64-byte load of 4 blocks: the first halves (elements
 * 0..15) of blocks 0..3, then their second halves, so the 16 bytes of one
 * block half sit in one 128-bit lane. A last partial quad is zero-padded
 * (d = s = 0, q = 0), so kernels need no tail mask on the activation side. */
typedef struct {
    int nt, cols;         /* tokens; columns (a multiple of 32) */
    int quads;            /* ceil(cols / 128) */
    int8_t *q;            /* (nt, quads * 128) int8, quad layout above */
    float *d;             /* (nt, quads * 4) f32 block scales */
    float *s;             /* (nt, quads * 4) f32 sum of the block's q (an integer) */
    int group;            /* 0 or 1: a scale per block, as above; Q8_ACT_SB: one per super-block (below) */
} q8_act;

/* Activations for K-quant weights (as llama.cpp's Q8_K): max|x| taken over the
 * Q8_ACT_SB blocks of each 256 columns (cols a multiple of 256), so those blocks
 * share d; q, s and the layout as above, each block's own d[b] set to that
 * shared value. Every kernel stays valid on them (it sees equal block scales);
 * a kernel that asks for them (kernels.act_group) may also rely on the sharing
 * (avx512.c's Q4_K with VNNI: the block scales leave the per-block products). */
#define Q8_ACT_SB 8

static inline int q8_quads(int cols) { return (cols / 32 + 3) / 4; }

/* Token t's row of a: its int8 values, block scales and sums, with the padding of a last
 * partial quad zeroed (every quantize_act fills the rest). */
static inline void q8_act_row(const q8_act *a, int t, int8_t **q, float **d, float **s) {
    int nb = a->cols / 32, npad = a->quads * 4;
    *q = a->q + (size_t)t * a->quads * 128;
    *d = a->d + (size_t)t * npad;
    *s = a->s + (size_t)t * npad;
    if (nb < npad) memset(*q + 128 * (size_t)(a->quads - 1), 0, 128);
    for (int b = nb; b < npad; b++) (*d)[b] = (*s)[b] = 0.0f;
}

/* Fill tokens [t0, t1) of a (per block, or per a->group blocks): x is (nt, ldx)
 * f32. Every ISA gives the same bytes and floats as the scalar version (tested). */
typedef void (*quantize_act_fn)(const float *x, int ldx, int t0, int t1, const q8_act *a);

/* Repacked weights (src/model/repack.c) of a (rows, cols) Q4_0 / Q4_1 / Q8_0 matrix,
 * nb = cols / 32 blocks per row, in one allocation of exactly the file's size;
 * also Q4_1G64 / Q4_1G128 (an MLX 4-bit matrix of group 64 / 128: Q4_1 whose
 * scale and min are shared by gb = 2 / 4 consecutive blocks, stored once), and
 * Q6_K and Q4_K (below: about the file's size too, with a d table per group),
 * Q5_0 and Q5_1 (below, the file's size).
 *
 * Rows are taken in groups of 8 (the last group has rr = rows % 8 rows if that
 * is not 0), and each group is ONE contiguous stream: its quads one after the
 * other, each quad a "chunk" of the group's rr rows x kb blocks (kb = 4, or
 * nb % 4 for a last partial quad), scales first, then the payload:
 *   d  rr * kb / gb f16 scales (gb = 1 but for Q4_1G64 / Q4_1G128);
 *   m  rr * kb / gb f16 mins (Q4_1, Q4_1G64, Q4_1G128, Q5_1);
 *   payload: rr * kb * 16 bytes (Q4_0, Q4_1), rr * kb * 20 (Q5_0, Q5_1) or
 *   rr * kb * 32 bytes (Q8_0).
 * A full chunk is 576 (Q4_0, Q4_1G64), 640 (Q4_1), 704 (Q5_0), 768 (Q5_1) or
 * 1088 (Q8_0) bytes, 64-byte lines (544 for Q4_1G128). kb is a multiple of gb
 * (cols, of the group).
 * Inside a chunk the rows form two halves h (rows 4h..4h+3 of the group), and
 * each half is a set of 16-lane vectors whose int32 lane 4 * bi + ii belongs to
 * row 4h + ii, block bi of the quad: the kernels load a vector, and one
 * vpdpbusd against the activations' 128-bit lane bi (block bi) broadcast to 4
 * dwords gives 4 rows x 4 blocks of partial sums with no horizontal adds.
 *   scales of half h: index 4 (kb / gb) h + (bi / gb) rh + ii (rh = rows in half h);
 *   payload of half h at 4 kb nv 4 h bytes (nv = 4 vectors for Q4, 5 for Q5, 8 for Q8),
 *   vector v of it at v kb rh 4, and in it the 4 bytes of (bi, ii) at (bi rh + ii) 4:
 *     Q4_0 / Q4_1: bytes 4v..4v+3 of the block's 16 nibble bytes as in the file
 *                  (byte j: low nibble = element j, high = element j + 16);
 *     Q5_0 / Q5_1: v = 0..3 the same for bits 0-3 of the 5-bit values u; v = 4
 *                  their fifth bits, byte k (0..3) holding that of u[4f + k] at
 *                  bit f and of u[16 + 4f + k] at bit 4 + f (f = 0..3): for
 *                  vector v, one shift by 4 - v (or v) and a mask put the bits
 *                  of its low (or high) nibbles at bit 4. Lossless, 5.5 (Q5_0)
 *                  and 6 (Q5_1) bits per weight as in the file: d (and m)
 *                  per block as Q4_0 (Q4_1), weight u - 16 (Q5_0) or d u + m;
 *     Q8_0:        bytes 4v..4v+3 of the block's 32 int8 weights, each stored
 *                  as w + 128 (u8, the operand vpdpbusd takes unsigned).
 * Absent rows and blocks (rh < 4, kb < 4) are simply left out, so full chunks
 * have fixed offsets and partial ones are dense. q8w_* below give the offsets.
 *
 * Q6_K (cols a multiple of 256, so kb = 4 always), lossless: value l of a block
 * of 32 is d * sc[l / 16] * (u[l] - 32), u the 6-bit value of the file, sc the
 * int8 scale of its 16 (the file's per-16 scale), d the super-block's f16.
 *   A group starts with its d table: rr * nb / 8 f16, super-block s of row i at
 *   entry s rr + i, zero-padded to whole 64-byte lines (q8w_dtab); then its
 *   chunks (832 bytes, 13 lines, for 8 rows), each:
 *   sc: rr * 4 int8 scales of the blocks' first 16 values (index as above,
 *       ONE byte per entry), then rr * 4 of their second 16 (q8w_nscales further);
 *   payload: nv = 6 vectors per half: v = 0..3 the nibble bytes 4v..4v+3 of the
 *       block (byte j: low nibble = bits 0-3 of u[j], high = of u[j + 16]);
 *       v = 4 / 5: the high bits of the block's first / second 16 values, byte
 *       k (0..3) of the 4 holding bits 4-5 of u[4f + k] (+16 for v = 5) at bits
 *       2f, f = 0..3. 6.5 bits per weight plus d: the file's 210 bytes per 256.
 *   Each half of 16 then has its own exact integer sum sum (u - 32) q (the -32
 *   as -32 times the activations' sum over that half) and its own f32 scale
 *   d * sc (exact in f32: 11 x 8 significant bits).
 *
 * Q4_K (cols a multiple of 256), lossless: value l of a block of 32 (the file's
 * sub-block) is (d * sc) * u[l] - (dmin * m), u the nibble, sc / m the sub-block's
 * 6-bit scale and min, d / dmin the super-block's f16 (gguf-py's order of roundings).
 *   A group starts with its d table: per super-block s, rr f16 d (row i at entry
 *   2 s rr + i) then rr f16 -dmin (entry 2 s rr + rr + i: the sign flipped, so
 *   that -dmin * m is the min as it stands), zero-padded to whole 64-byte lines
 *   (q8w_dtab; q8w_dm_at); then its chunks (576 bytes, 9 lines, for
 *   8 rows), each: rr * 4 u8 scales sc (index as above, ONE byte per entry), then
 *   rr * 4 u8 mins m (q8w_nscales further); payload as Q4_1's (4 vectors per half,
 *   byte j: low nibble = element j, high = element j + 16). 4.625 bits per weight
 *   (the file's 4.5: the 12 bytes of packed 6-bit scales become 16), d table included.
 *   The kernels take Q4_1's arithmetic with the f32 block scale d * sc and min
 *   -(dmin * m), both exact in f32 (11 x 6 significant bits).
 *
 * y[t*ldy + r] = sum_b (dw[b] * d[b]) * isum[b]  (+ with mins: sum_b m[b] * (d[b] * s[b])),
 * isum[b] = sum_j wq[b][j] * q[b][j] with the true weight integers (Q4_0:
 * nibble - 8, Q4_1 and Q4_K: nibble, Q8_0: int8, Q5_0: u - 16, Q5_1: u; Q6_K: per
 * half of the block as above):
 * the integer sums are exact in every
 * ISA, the f32 combination order differs (tested with a tolerance). A y
 * element does not depend on r0, r1 or nt (each row has its own lanes, and a
 * partial group runs the same arithmetic on zero-padded lanes), so results do
 * not depend on the thread count. */
typedef void (*matmul_q8_fn)(const void *packed, int rows, int cols, int r0, int r1, const q8_act *x,
                             float *y, int ldy);

#define Q8W_GROUP 8 /* rows per repacked group */

/* Where the chunk of (group of row r, quad q) starts, and its rows / blocks. */
typedef struct {
    size_t off;   /* bytes from the start of the packed matrix */
    int rr, kb;   /* rows in the group (<= 8), blocks in the quad (<= 4) */
    size_t grp;   /* where the chunk's group starts (Q6_K, Q4_K: its d table) */
} q8w_chunk;

/* The layout's facts, from its row of the type table (quant.h, packed_layout). */
static inline int q8w_gb(dtype dt) { return DTYPE_TRAITS[dt].pk.gb; }
static inline int q8w_has_min(dtype dt) { return DTYPE_TRAITS[dt].pk.has_min; }
static inline int q8w_five(dtype dt) { return DTYPE_TRAITS[dt].pk.five; }
static inline int q8w_two(dtype dt) { return DTYPE_TRAITS[dt].pk.two; }
static inline int q8w_sbytes(dtype dt) { return DTYPE_TRAITS[dt].pk.sbytes; }
static inline int q8w_nv(dtype dt) { return DTYPE_TRAITS[dt].pk.nv; }
/* Header bytes per row and block (scale and min shares), and all bytes per row and block. */
static inline int q8w_hdr(dtype dt) { return q8w_sbytes(dt) * (q8w_two(dt) ? 2 : 1) / q8w_gb(dt); }
static inline int q8w_block_bytes(dtype dt) { return q8w_hdr(dt) + 4 * q8w_nv(dt); }
/* Bytes of a group's d table (Q6_K: d, Q4_K: d and dmin per row and super-block;
 * 0 for the others), whole 64-byte lines. */
static inline int q8w_dtab_entry(dtype dt) { return DTYPE_TRAITS[dt].pk.dtab_entry; } /* bytes per row and super-block */
static inline size_t q8w_dtab(dtype dt, int rr, int nb) {
    return ((size_t)rr * (size_t)(nb / 8) * (size_t)q8w_dtab_entry(dt) + 63) / 64 * 64;
}
/* Bytes of a group of rr rows, and of a whole packed (rows, 32 nb) matrix. */
static inline size_t q8w_group_bytes(dtype dt, int rr, int nb) {
    return q8w_dtab(dt, rr, nb) + (size_t)rr * nb * q8w_block_bytes(dt);
}
static inline size_t q8w_matrix_bytes(dtype dt, int rows, int nb) {
    size_t n = (size_t)(rows / Q8W_GROUP) * q8w_group_bytes(dt, Q8W_GROUP, nb);
    return rows % Q8W_GROUP ? n + q8w_group_bytes(dt, rows % Q8W_GROUP, nb) : n;
}

static inline q8w_chunk q8w_chunk_at(dtype dt, int rows, int nb, int r, int q) {
    int g0 = r / Q8W_GROUP * Q8W_GROUP, bb = q8w_block_bytes(dt);
    q8w_chunk c;
    c.rr = rows - g0 < Q8W_GROUP ? rows - g0 : Q8W_GROUP;
    c.kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
    c.grp = (size_t)(g0 / Q8W_GROUP) * q8w_group_bytes(dt, Q8W_GROUP, nb);
    c.off = c.grp + q8w_dtab(dt, c.rr, nb) + (size_t)c.rr * 4 * q * bb;
    return c;
}

/* Packing: zero the padding of the d table of the group holding row r (Q6_K, Q4_K). */
static inline void q8w_dtab_pad(dtype dt, uint8_t *out, int rows, int nb, int r) {
    q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, 0);
    size_t used = (size_t)q8w_dtab_entry(dt) * (size_t)c.rr * (size_t)(nb / 8);
    memset(out + c.grp + used, 0, q8w_dtab(dt, c.rr, nb) - used);
}

/* Index of (row i of the group, block bi of the quad) among the chunk's scales;
 * its min (if any; Q6_K: its second scale) is q8w_nscales entries further. */
static inline int q8w_scale_idx(dtype dt, const q8w_chunk *c, int i, int bi) {
    int h = i / 4, rh = c->rr - 4 * h < 4 ? c->rr - 4 * h : 4, gb = q8w_gb(dt);
    return 4 * (c->kb / gb) * h + bi / gb * rh + i % 4;
}
static inline int q8w_nscales(dtype dt, const q8w_chunk *c) { return c->rr * c->kb / q8w_gb(dt); }

/* Byte offset in the chunk of payload byte jb (Q4: 0..15, Q8: 0..31, Q5: 0..19, Q6_K: 0..23) of (i, bi). */
static inline size_t q8w_byte(dtype dt, const q8w_chunk *c, int i, int bi, int jb) {
    int h = i / 4, rh = c->rr - 4 * h < 4 ? c->rr - 4 * h : 4, nv = q8w_nv(dt);
    size_t pay = (size_t)q8w_hdr(dt) * c->rr * c->kb;
    return pay + (size_t)4 * c->kb * nv * 4 * h + (size_t)(jb / 4) * c->kb * rh * 4 + (size_t)(bi * rh + i % 4) * 4 +
           (size_t)(jb % 4);
}

/* Q6_K: the f16 d of super-block sb of row i of the group starting at g (rr rows, nb blocks). */
static inline const uint8_t *q8w_d_at(const uint8_t *g, int rr, int sb, int i) {
    return g + 2 * ((size_t)sb * rr + i);
}

/* Q4_K: the rr f16 d of super-block sb of the group starting at g, then its rr f16 -dmin. */
static inline const uint8_t *q8w_dm_at(const uint8_t *g, int rr, int sb) { return g + 4 * (size_t)sb * rr; }
/* Q4_K: the d and -dmin of a group's 8 rows for quad q's super-block as 32 bytes (d at
 * 0..15, -dmin at 16..31): the table itself for a whole group, else a copy in tmp with
 * the absent rows 0 (what every ISA's kernels read, 8 lanes of each). */
static inline const uint8_t *q8w_dm_quad(const uint8_t *g, int rr, int q, uint8_t tmp[32]) {
    const uint8_t *dm = q8w_dm_at(g, rr, q / 2);
    if (rr == Q8W_GROUP) return dm;
    memset(tmp, 0, 32);
    memcpy(tmp, dm, 2 * (size_t)rr);
    memcpy(tmp + 16, dm + 2 * (size_t)rr, 2 * (size_t)rr);
    return tmp;
}

/* A partial chunk (rr rows, kb blocks) copied into the form of one with 8 rows
 * and dkb >= kb blocks, absent rows and blocks zero, so kernels run the same
 * code and per-lane arithmetic on it (absent blocks meet zero activations).
 * dst holds 8 * dkb * block bytes. (Q6_K's d table is not part of a chunk.) */
static inline void q8w_widen(dtype dt, const uint8_t *src, int rr, int kb, uint8_t *dst, int dkb) {
    q8w_chunk s = {0, rr, kb, 0}, d = {0, Q8W_GROUP, dkb, 0};
    int nv = q8w_nv(dt), sb = q8w_sbytes(dt);
    memset(dst, 0, (size_t)Q8W_GROUP * dkb * q8w_block_bytes(dt));
    for (int i = 0; i < rr; i++)
        for (int bi = 0; bi < kb; bi++) {
            size_t si = (size_t)sb * q8w_scale_idx(dt, &s, i, bi), di = (size_t)sb * q8w_scale_idx(dt, &d, i, bi);
            if (bi % q8w_gb(dt) == 0) { /* a group's scale and min, once */
                memcpy(dst + di, src + si, (size_t)sb);
                if (q8w_two(dt))
                    memcpy(dst + di + (size_t)sb * q8w_nscales(dt, &d), src + si + (size_t)sb * q8w_nscales(dt, &s),
                           (size_t)sb);
            }
            for (int v = 0; v < nv; v++)
                memcpy(dst + q8w_byte(dt, &d, i, bi, 4 * v), src + q8w_byte(dt, &s, i, bi, 4 * v), 4);
        }
}


/* The 6-bit value u (0..63) of element j (0..31) of block b of row r, and the
 * f32 scale d * sc of its half: the scalar reference's view of the layout. */
int q6k_packed_u(const uint8_t *packed, int rows, int nb, int r, int b, int j);
float q6k_packed_scale(const uint8_t *packed, int rows, int nb, int r, int b, int half);


/* The 5-bit value u (0..31) of element j (0..31) of block b of row r of a packed
 * Q5_0 / Q5_1 matrix (nb blocks a row): the scalar reference's view of the layout. */
int q5_packed_u(dtype dt, const uint8_t *packed, int rows, int nb, int r, int b, int j);

/* The packers and packed-row readers of each layout are in the type table (quant.h). */

/* Q4_K: the f32 scale d * sc (which = 0) or min -(dmin * m) (which = 1) of block b of row r. */
float q4k_packed_scale(const uint8_t *packed, int rows, int nb, int r, int b, int which);

/* ---- attention over the KV cache -------------------------------------------
 *
 * Keys of one kv head are stored transposed in blocks of kb positions (block b
 * is hd rows of kb elements: dimension d of position p at (p / kb * hd + d) * kb
 * + p % kb), values in natural rows (dimension d of position p at p * vstride +
 * d). Both products are then broadcast-FMAs over contiguous lanes (positions,
 * or dimensions), with no horizontal sums. Elements are F32 or BF16 (below).
 *
 * att_scores: s[i*lds + p] = sum_d q[i*ldq + d] * K[p][d] for p < len;
 * att_values: out[i*ldo + d] = sum_{p < len} pr[i*ldp + p] * V[p][d].
 * Each output is ONE accumulator, started at 0 and fed by fused multiply-adds
 * in d (resp. p) order: every ISA gives the scalar version's bits (which uses
 * fmaf), and an output depends on nothing but its own row and the cache.
 *
 * BF16 (fast mode's cache) keeps elements in pairs along the sum, the operand
 * layout of AVX512-BF16's vdpbf16ps: keys pair dimensions (2i, 2i + 1) of a
 * position (kv_bf16_key), values pair positions (2j, 2j + 1) of a dimension
 * (kv_bf16_value: rows of positions 2j and 2j + 1 interleaved, so a head's
 * value cache holds an even number of positions). q and pr are rounded by
 * kv_bf16 too, and each output adds the products of a pair odd element first:
 * acc = fma(a[2i+1], b[2i+1], acc); acc = fma(a[2i], b[2i], acc), pairs in
 * order; a missing last position of an odd len is a pair with probability 0.
 * kv_bf16 flushes |x| < 2^-56 to 0, so every product is 0 or a multiple of
 * 2^-126 that is at least that, and so is every partial sum: no subnormal is
 * ever formed, and vdpbf16ps (which flushes them) equals two fmaf exactly. */
#define KV_BF16_TINY 0x1p-56f
static inline uint16_t kv_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    /* on |x|'s bits (0x23800000: 2^-56), not on x's sign: a compare of x itself against
     * +-2^-56 branched on the sign, mispredicted on a cache row's random signs */
    return (u & 0x7fffffffu) < 0x23800000u ? 0 : f32_to_bf16(x);
}
/* Element index of K[p][d] in a BF16 key cache of kb-position blocks, and of V[p][d]
 * in a BF16 value cache whose rows are vstride elements apart. */
static inline size_t kv_bf16_key(int p, int d, int kb, int hd) {
    return ((size_t)(p / kb) * hd + (size_t)(d & ~1)) * kb + (size_t)(p % kb) * 2 + (d & 1);
}
static inline size_t kv_bf16_value(int p, int d, size_t vstride) {
    return (size_t)(p / 2) * 2 * vstride + (size_t)d * 2 + (p & 1);
}
typedef void (*att_scores_fn)(const void *kt, int kb, int hd, int len, const float *q, int ldq, int nt,
                              float *s, int lds);
typedef void (*att_values_fn)(const void *v, size_t vstride, int hd, int len, const float *pr, int ldp,
                              int nt, float *out, int ldo);

/* Fast mode's softmax of one attention row: x[p] = e^(x[p] * scale - max) / sum
 * for p < len (scale > 0), x[p] = 0 for len <= p < pad. e^ is a polynomial
 * (relative error ~2e-7, see scalar.c) instead of libm's expf; exact mode keeps
 * expf (ops.c). The sum's order differs by ISA (tested with a tolerance). */
typedef void (*softmax_fn)(float *x, int len, int pad, float scale);

/* Fast mode's SwiGLU: gate[i] = gate[i] / (1 + e^-gate[i]) * up[i], with the
 * same polynomial e^. */
typedef void (*swiglu_fn)(float *gate, const float *up, int n);

typedef struct {
    const char *name;              /* "scalar", "avx2", "avx512", "neon" */
    matmul_fn matmul[DT_COUNT];    /* NULL where the dtype has no kernel */
    quantize_act_fn quantize_act;  /* NULL: use the scalar one */
    unsigned char act_group[DT_COUNT]; /* Q8_ACT_SB where matmul_q8[dt] is faster on activations of
                                          that group (forward.c then quantizes them so); 0: per block */
    matmul_q8_fn matmul_q8[DT_COUNT]; /* Q4_0, Q4_1, Q8_0, Q4_1G64, Q4_1G128, Q5_0, Q5_1, Q6_K, Q4_K on repacked weights; NULL: scalar */
    pack_rows_fn pack_rows[DT_COUNT]; /* the packer of a packed layout (quant.h) writing the same bytes as the
                                         type table's portable one, faster (tested); NULL: that one */
    float (*dot)(const float *a, const float *b, int n);          /* f32 dot product */
    void (*axpy)(float *y, float a, const float *x, int n);       /* y += a*x */
    /* set in every table (tested), so callers need no scalar fallback: */
    att_scores_fn att_scores[DT_COUNT]; /* F32 (exact mode's cache), BF16 (fast mode's) */
    att_values_fn att_values[DT_COUNT]; /* F32, BF16 */
    softmax_fn softmax_fast;
    swiglu_fn swiglu_fast;
    swiglu_fn geglu_fast; /* gate = gelu_tanh(gate) * up = gate / (1 + e^(-2u)) * up, the e^ of softmax_fast */
} kernels;

/* The portable reference table (a matmul for every weight type of the type table, quant.h). */
const kernels *kernels_scalar(void);

/* Best table for this CPU, decided by CPUID once; `force` ("scalar", "avx2",
 * "avx512", "neon" or NULL for auto) selects one explicitly and returns NULL
 * if that ISA is unavailable on this CPU or in this build. */
const kernels *kernels_select(const char *force);

/* ISA tables: NULL when not compiled in or not supported by this CPU. */
const kernels *kernels_avx2(void);
const kernels *kernels_avx512(void);
const kernels *kernels_neon(void);

#endif
