/* Per-token stages against values computed by hand. */
#include <criterion/criterion.h>
#include <math.h>

#include "ops.h"
#include "util.h"

Test(ops, rmsnorm_hand_checked) {
    /* x = (1, 2, 3, 4): mean(x^2) = 7.5; eps 0.5 -> 1/sqrt(8) */
    const float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, 0.5f};
    float out[4];
    ops_rmsnorm(out, x, w, 4, 0.5f);
    float r = 1.0f / sqrtf(8.0f);
    const float want[4] = {r, 2 * r, 6 * r, 2 * r};
    for (int i = 0; i < 4; i++) cr_expect_float_eq(out[i], want[i], 1e-6f, "i=%d", i);
}

Test(ops, rope_rotate_half_layout) {
    /* hd 4: pairs (0,2) with freq f0 and (1,3) with freq f1 */
    float v[4] = {1, 0, 0, 1};
    const float inv[2] = {0.5f, 0.25f};
    ops_rope(v, 4, inv, 2, 0);
    /* pair (0,2): angle 1.0, (x0,x1)=(1,0) -> (cos1, sin1); pair (1,3): angle 0.5, (0,1) -> (-sin.5, cos.5) */
    cr_expect_float_eq(v[0], cosf(1.0f), 1e-6f);
    cr_expect_float_eq(v[2], sinf(1.0f), 1e-6f);
    cr_expect_float_eq(v[1], -sinf(0.5f), 1e-6f);
    cr_expect_float_eq(v[3], cosf(0.5f), 1e-6f);
}

Test(ops, rope_interleaved_layout) {
    float v[4] = {1, 0, 0, 1};
    const float inv[2] = {0.5f, 0.25f};
    ops_rope(v, 4, inv, 2, 1);
    /* pair (0,1): angle 1.0, (1,0) -> (cos1, sin1); pair (2,3): angle 0.5, (0,1) -> (-sin.5, cos.5) */
    cr_expect_float_eq(v[0], cosf(1.0f), 1e-6f);
    cr_expect_float_eq(v[1], sinf(1.0f), 1e-6f);
    cr_expect_float_eq(v[2], -sinf(0.5f), 1e-6f);
    cr_expect_float_eq(v[3], cosf(0.5f), 1e-6f);
}

Test(ops, rope_position_zero_is_identity) {
    float v[6] = {1, 2, 3, 4, 5, 6};
    const float inv[3] = {1, 0.1f, 0.01f};
    ops_rope(v, 6, inv, 0, 0);
    for (int i = 0; i < 6; i++) cr_expect_float_eq(v[i], (float)(i + 1), 0.0f);
}

/* Permuting Q and K rows (GGUF layout) and rotating interleaved gives the same
 * q.k as the HF layout rotated half-and-half: the property the GGUF path relies on. */
Test(ops, rope_layouts_give_equal_scores) {
    const int hd = 8;
    const float inv[4] = {1.0f, 0.3f, 0.05f, 0.001f};
    float q[8], k[8], qp[8], kp[8];
    for (int i = 0; i < hd; i++) {
        q[i] = sinf((float)i + 0.3f);
        k[i] = cosf((float)i * 1.7f);
    }
    /* llama.cpp's permute: HF index (i or i + hd/2) -> GGUF index (2i or 2i + 1) */
    for (int i = 0; i < hd / 2; i++) {
        qp[2 * i] = q[i];
        qp[2 * i + 1] = q[i + hd / 2];
        kp[2 * i] = k[i];
        kp[2 * i + 1] = k[i + hd / 2];
    }
    ops_rope(q, hd, inv, 7, 0);
    ops_rope(k, hd, inv, 3, 0);
    ops_rope(qp, hd, inv, 7, 1);
    ops_rope(kp, hd, inv, 3, 1);
    float a = 0, b = 0;
    for (int i = 0; i < hd; i++) {
        a += q[i] * k[i];
        b += qp[i] * kp[i];
    }
    cr_expect_float_eq(a, b, 1e-5f);
}

Test(ops, swiglu_hand_checked) {
    float g[3] = {0.0f, 1.0f, -2.0f};
    const float u[3] = {5.0f, 2.0f, 3.0f};
    ops_swiglu(g, u, 3);
    cr_expect_float_eq(g[0], 0.0f, 1e-7f);
    cr_expect_float_eq(g[1], 2.0f / (1.0f + expf(-1.0f)), 1e-6f);
    cr_expect_float_eq(g[2], 3.0f * -2.0f / (1.0f + expf(2.0f)), 1e-6f);
}

Test(ops, attention_two_positions) {
    /* hd 2, scale 1: scores q.k = (0, ln 3) -> softmax (1/4, 3/4) */
    const float q[2] = {1.0f, 0.0f};
    const float kc[4] = {0.0f, 5.0f, logf(3.0f), 7.0f}; /* stride 2 */
    const float vc[4] = {4.0f, 8.0f, 0.0f, -4.0f};
    float out[2], sc[2];
    ops_attend(kernels_scalar(), out, q, kc, vc, 2, 2, 2, 1.0f, sc);
    cr_expect_float_eq(out[0], 1.0f, 1e-6f);
    cr_expect_float_eq(out[1], 2.0f - 3.0f, 1e-6f);
}

Test(ops, attention_causal_single_position_returns_value) {
    const float q[3] = {100, -50, 3}, kc[3] = {1, 2, 3}, vc[3] = {0.5f, -1, 2};
    float out[3], sc[1];
    ops_attend(kernels_scalar(), out, q, kc, vc, 1, 3, 3, 0.125f, sc);
    for (int i = 0; i < 3; i++) cr_expect_float_eq(out[i], vc[i], 0.0f);
}

Test(ops, rope_angles_then_apply_equals_rope) {
    const int hd = 64;
    float inv[32], cs[64], a[64], b[64];
    for (int i = 0; i < hd / 2; i++) inv[i] = powf(10000.0f, -2.0f * (float)i / (float)hd);
    for (int il = 0; il < 2; il++) {
        for (int i = 0; i < hd; i++) a[i] = b[i] = sinf(0.37f * (float)i + (float)il);
        ops_rope(a, hd, inv, 1234, il);
        ops_rope_angles(cs, hd, inv, 1234);
        ops_rope_apply(b, hd, cs, il);
        for (int i = 0; i < hd; i++) cr_expect_eq(a[i], b[i], "interleaved=%d i=%d", il, i); /* bit-identical */
    }
}

/* The batched causal attention against ops_attend token by token, for every
 * kernel table on this machine: keys in rows of stride kvd, values transposed. */
static void check_attend_block(const kernels *k) {
    enum { HD = 24, KVD = 2 * HD, QD = 3 * HD, CTX = 40, NT = 7, POS = 29 };
    static float kc[CTX * KVD], v[CTX * KVD], vt[KVD * CTX], q[NT * QD], out[NT * QD], sc[NT * CTX];
    float want[HD], sc1[CTX];
    for (int i = 0; i < CTX * KVD; i++) {
        kc[i] = sinf(0.7f * (float)i);
        v[i] = cosf(1.3f * (float)i + 0.2f);
    }
    for (int p = 0; p < CTX; p++)
        for (int r = 0; r < KVD; r++) vt[r * CTX + p] = v[p * KVD + r];
    for (int i = 0; i < NT * QD; i++) q[i] = 2.0f * sinf(0.11f * (float)i * (float)i);
    const int kvh = 1, h = 2; /* one query head of the second kv head */
    ops_attend_block(k, out + h * HD, QD, q + h * HD, QD, NT, 1, DT_F32, kc + kvh * HD, KVD, vt + kvh * HD * CTX, CTX, POS + 1,
                     HD, 0.2f, sc, CTX, NULL);
    for (int t = 0; t < NT; t++) {
        ops_attend(kernels_scalar(), want, q + t * QD + h * HD, kc + kvh * HD, v + kvh * HD, POS + 1 + t, HD, KVD,
                   0.2f, sc1);
        for (int i = 0; i < HD; i++)
            cr_expect_float_eq(out[t * QD + h * HD + i], want[i], 1e-6f + 1e-5f * fabsf(want[i]), "%s t=%d i=%d",
                               k->name, t, i);
    }
}

Test(ops, attend_block_matches_attend_per_token) {
    check_attend_block(kernels_scalar());
    const char *isas[] = {"avx2", "avx512", "neon"};
    for (int i = 0; i < 3; i++) {
        const kernels *k = kernels_select(isas[i]);
        if (k) check_attend_block(k);
    }
}

/* A token's output does not depend on the other tokens sharing its call: the
 * masked positions of earlier tokens add exactly zero. */
Test(ops, attend_block_independent_of_batch) {
    enum { HD = 16, CTX = 33, NT = 5 };
    static float kc[CTX * HD], vt[HD * CTX], q[NT * HD], all[NT * HD], one[HD], sc[NT * CTX];
    for (int i = 0; i < CTX * HD; i++) {
        kc[i] = sinf((float)i);
        vt[i] = cosf(0.3f * (float)i);
    }
    for (int i = 0; i < NT * HD; i++) q[i] = sinf(0.5f * (float)i);
    const kernels *k = kernels_select(NULL);
    ops_attend_block(k, all, HD, q, HD, NT, 1, DT_F32, kc, HD, vt, CTX, 20, HD, 0.25f, sc, CTX, NULL);
    for (int t = 0; t < NT; t++) {
        ops_attend_block(k, one, HD, q + t * HD, HD, 1, 1, DT_F32, kc, HD, vt, CTX, 20 + t, HD, 0.25f, sc, CTX, NULL);
        for (int i = 0; i < HD; i++) cr_expect_eq(all[t * HD + i], one[i], "t=%d i=%d", t, i);
    }
}

/* Query rows of several heads per token (a GQA group) give each head's rows
 * bit for bit what a call per head gives. */
Test(ops, attend_block_group_rows_equal_per_head) {
    enum { HD = 16, CTX = 30, G = 3, NT = 4 };
    static float kc[CTX * HD], vt[HD * CTX], q[NT * G * HD], grp[NT * G * HD], one[HD], sc[NT * G * CTX];
    for (int i = 0; i < CTX * HD; i++) {
        kc[i] = sinf(0.9f * (float)i);
        vt[i] = cosf(0.4f * (float)i);
    }
    for (int i = 0; i < NT * G * HD; i++) q[i] = sinf(0.21f * (float)i);
    const kernels *k = kernels_select(NULL);
    ops_attend_block(k, grp, HD, q, HD, NT * G, G, DT_F32, kc, HD, vt, CTX, 11, HD, 0.25f, sc, CTX, NULL);
    for (int t = 0; t < NT; t++)
        for (int g = 0; g < G; g++) {
            ops_attend_block(k, one, HD, q + (t * G + g) * HD, HD, 1, 1, DT_F32, kc, HD, vt, CTX, 11 + t, HD, 0.25f, sc, CTX, NULL);
            for (int i = 0; i < HD; i++) cr_expect_eq(grp[(t * G + g) * HD + i], one[i], "t=%d g=%d i=%d", t, g, i);
        }
}

/* An f16 cache (fast mode) gives the f32 cache's result to f16 precision, and
 * keeps a row's output independent of its batch. */
Test(ops, attend_block_f16_cache) {
    enum { HD = 32, CTX = 40, NT = 6 };
    static float kc[CTX * HD], vt[HD * CTX], q[NT * HD], want[NT * HD], got[NT * HD], one[HD], sc[NT * CTX];
    static uint16_t kh[CTX * HD], vh[HD * CTX];
    for (int i = 0; i < CTX * HD; i++) {
        kh[i] = f32_to_f16(sinf(0.3f * (float)i));
        vh[i] = f32_to_f16(cosf(0.7f * (float)i));
        kc[i] = f16_to_f32(kh[i]); /* the same values, so only the kernels' f16 reads differ */
        vt[i] = f16_to_f32(vh[i]);
    }
    for (int i = 0; i < NT * HD; i++) q[i] = sinf(0.13f * (float)i);
    const kernels *k = kernels_select(NULL);
    ops_attend_block(k, want, HD, q, HD, NT, 1, DT_F32, kc, HD, vt, CTX, 30, HD, 0.2f, sc, CTX, NULL);
    ops_attend_block(k, got, HD, q, HD, NT, 1, DT_F16, kh, HD, vh, CTX, 30, HD, 0.2f, sc, CTX, NULL);
    for (int i = 0; i < NT * HD; i++) cr_expect_eq(got[i], want[i], "i=%d", i); /* f16 values are exact in f32 */
    ops_attend_block(k, one, HD, q + 3 * HD, HD, 1, 1, DT_F16, kh, HD, vh, CTX, 33, HD, 0.2f, sc, CTX, NULL);
    for (int i = 0; i < HD; i++) cr_expect_eq(one[i], got[3 * HD + i], "i=%d", i);
}

/* Values in blocks of vb positions (the cache's layout) give one block's
 * result up to the order of the block sums, and stay batch-independent. */
Test(ops, attend_block_value_blocks) {
    enum { HD = 16, CTX = 40, VB = 8, NT = 5 };
    static float kc[CTX * HD], vt[HD * CTX], vblk[HD * CTX], q[NT * HD], want[NT * HD], got[NT * HD], one[HD];
    static float sc[NT * CTX], tmp[NT * HD];
    for (int i = 0; i < CTX * HD; i++) {
        kc[i] = sinf(0.37f * (float)i);
        vt[i] = cosf(0.71f * (float)i);
    }
    for (int d = 0; d < HD; d++)
        for (int p = 0; p < CTX; p++) vblk[((p / VB) * HD + d) * VB + p % VB] = vt[d * CTX + p];
    for (int i = 0; i < NT * HD; i++) q[i] = sinf(0.29f * (float)i);
    const kernels *k = kernels_select(NULL);
    ops_attend_block(k, want, HD, q, HD, NT, 1, DT_F32, kc, HD, vt, CTX, 30, HD, 0.25f, sc, CTX, NULL);
    ops_attend_block(k, got, HD, q, HD, NT, 1, DT_F32, kc, HD, vblk, VB, 30, HD, 0.25f, sc, CTX, tmp);
    for (int i = 0; i < NT * HD; i++) cr_expect_float_eq(got[i], want[i], 1e-6f + 1e-5f * fabsf(want[i]), "i=%d", i);
    for (int t = 0; t < NT; t++) {
        ops_attend_block(k, one, HD, q + t * HD, HD, 1, 1, DT_F32, kc, HD, vblk, VB, 30 + t, HD, 0.25f, sc, CTX, tmp);
        for (int i = 0; i < HD; i++) cr_expect_eq(one[i], got[t * HD + i], "t=%d i=%d", t, i);
    }
}
