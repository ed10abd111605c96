/* Per-token stages against values computed by hand. */
#include <criterion/criterion.h>
#include <math.h>

#include "ops.h"

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
