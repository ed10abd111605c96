/* Per-token stages against values computed by hand. */
#include <criterion/criterion.h>
#include <math.h>

#include <stdlib.h>

#include "kernels/attn_kernels.h"
#include "model/ops.h"
#include "base/util.h"

Test(ops, rmsnorm_hand_checked) {
    /* x = (1, 2, 3, 4): mean(x^2) = 7.5; eps 0.5 -> 1/sqrt(8) */
    const float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, 0.5f};
    float out[4];
    ops_rmsnorm(out, x, w, 4, 0.5f);
    float r = 1.0f / sqrtf(8.0f);
    const float want[4] = {r, 2 * r, 6 * r, 2 * r};
    for (int i = 0; i < 4; i++) cr_expect_float_eq(out[i], want[i], 1e-6f, "i=%d", i);
}

/* Lengths that take the 16 partial sums, their tree and a tail: every
 * element must count once, squared (a lane summed twice or skipped, or a
 * tail dropped, is off by far more than rounding), against a double sum. */
Test(ops, rmsnorm_long_rows_match_double) {
    static const int ns[] = {16, 17, 64, 100, 576, 2048};
    float x[2048], w[2048], out[2048];
    for (int i = 0; i < 2048; i++) {
        x[i] = (float)((i * 37) % 101 - 50) / 25.0f + (i % 16 == 5 ? 3.0f : 0.0f);
        w[i] = 0.5f + (float)(i % 7) / 7.0f;
    }
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        int n = ns[c];
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
        double r = 1.0 / sqrt(ss / n + 1e-5);
        ops_rmsnorm(out, x, w, n, 1e-5f);
        for (int i = 0; i < n; i++)
            cr_expect(fabs(out[i] - w[i] * x[i] * r) <= 1e-5 * (fabs(w[i] * x[i] * r) + 1e-3), "n=%d i=%d: %g vs %g",
                      n, i, out[i], w[i] * x[i] * r);
    }
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

/* Keys of ctx positions (rows kstride apart) into the cache's transposed
 * blocks of kb positions (whole blocks, the tail zero), as f32 or (bf16 = 2)
 * as bf16 in kernels.h's pairs. */
static void *key_blocks(const float *k, size_t kstride, int ctx, int hd, int kb, int bf16) {
    int blocks = (ctx + kb - 1) / kb;
    size_t n = (size_t)blocks * hd * kb;
    void *kt = calloc(n, bf16 ? 2 : 4);
    for (int p = 0; p < ctx; p++)
        for (int d = 0; d < hd; d++) {
            size_t at = ((size_t)(p / kb) * hd + d) * kb + p % kb;
            float v = k[p * kstride + d];
            if (bf16) {
                ((uint16_t *)kt)[kv_bf16_key(p, d, kb, hd)] = kv_bf16(v);
            } else {
                ((float *)kt)[at] = v;
            }
        }
    return kt;
}

/* Values of ctx positions (rows vstride apart) as a BF16 value cache of rows hd
 * apart: position pairs interleaved, room for an even number of positions (the
 * odd one out zero). */
static uint16_t *value_pairs(const float *v, size_t vstride, int ctx, int hd) {
    uint16_t *vc = calloc((size_t)(ctx + 1) / 2 * 2 * hd, 2);
    for (int p = 0; p < ctx; p++)
        for (int d = 0; d < hd; d++) vc[kv_bf16_value(p, d, (size_t)hd)] = kv_bf16(v[p * vstride + d]);
    return vc;
}

static const kernels *isa_table(int i) {
    static const char *names[] = {"scalar", "avx2", "avx512", "neon"};
    return kernels_select(names[i]);
}

/* The batched causal attention against ops_attend token by token, for every
 * kernel table on this machine, exact and fast softmax: keys in the cache's
 * blocks, values in rows of stride kvd. hd 64 with 64-position blocks takes
 * the SIMD tiles; hd 24 with 8-position blocks their scalar fallback. */
static void check_attend_block(const kernels *k, int fast, int hd, int kb) {
    enum { CTX = 100, NT = 7, POS = 70, MAXHD = 64 };
    int kvd = 2 * hd, qd = 3 * hd;
    float *kc = malloc(sizeof(float) * CTX * kvd), *v = malloc(sizeof(float) * CTX * kvd);
    float *q = malloc(sizeof(float) * NT * qd), *out = malloc(sizeof(float) * NT * qd);
    float *sc = malloc(sizeof(float) * NT * CTX), want[MAXHD], sc1[CTX];
    for (int i = 0; i < CTX * kvd; i++) {
        kc[i] = sinf(0.7f * (float)i);
        v[i] = cosf(1.3f * (float)i + 0.2f);
    }
    for (int i = 0; i < NT * qd; i++) q[i] = 2.0f * sinf(0.11f * (float)i * (float)i);
    const int kvh = 1, h = 2; /* one query head of the second kv head */
    void *kt = key_blocks(kc + kvh * hd, kvd, CTX, hd, kb, 0);
    ops_attend_block(k, fast, out + h * hd, qd, q + h * hd, qd, NT, 1, DT_F32, kt, kb, v + kvh * hd, kvd, 0, POS + 1, 0,
                     hd, 0.2f, sc, CTX, NULL);
    float tol = fast ? 1e-5f : 1e-6f;
    for (int t = 0; t < NT; t++) {
        ops_attend(kernels_scalar(), want, q + t * qd + h * hd, kc + kvh * hd, v + kvh * hd, POS + 1 + t, hd, kvd,
                   0.2f, sc1);
        for (int i = 0; i < hd; i++)
            cr_expect_float_eq(out[t * qd + h * hd + i], want[i], tol + 10 * tol * fabsf(want[i]),
                               "%s fast=%d hd=%d t=%d i=%d", k->name, fast, hd, t, i);
    }
    free(kt);
    free(kc);
    free(v);
    free(q);
    free(out);
    free(sc);
}

Test(ops, attend_block_matches_attend_per_token) {
    for (int i = 0; i < 4; i++) {
        const kernels *k = isa_table(i);
        if (!k) continue;
        for (int fast = 0; fast < 2; fast++) {
            check_attend_block(k, fast, 64, 64);
            check_attend_block(k, fast, 24, 8);
        }
    }
}

/* A token's output does not depend on the other tokens sharing its call (the
 * masked positions of earlier tokens add exactly zero), nor on the ISA in
 * exact mode. */
Test(ops, attend_block_independent_of_batch_and_isa) {
    enum { HD = 64, CTX = 150, NT = 9, KB = 64 };
    static float kc[CTX * HD], v[CTX * HD], q[NT * HD], all[NT * HD], one[HD], ref[NT * HD], sc[NT * CTX];
    for (int i = 0; i < CTX * HD; i++) {
        kc[i] = sinf((float)i);
        v[i] = cosf(0.3f * (float)i);
    }
    for (int i = 0; i < NT * HD; i++) q[i] = sinf(0.5f * (float)i);
    void *kt = key_blocks(kc, HD, CTX, HD, KB, 0);
    ops_attend_block(kernels_scalar(), 0, ref, HD, q, HD, NT, 1, DT_F32, kt, KB, v, HD, 0, 120, 0, HD, 0.25f, sc, CTX, NULL);
    for (int i = 0; i < 4; i++) {
        const kernels *k = isa_table(i);
        if (!k) continue;
        for (int fast = 0; fast < 2; fast++) {
            ops_attend_block(k, fast, all, HD, q, HD, NT, 1, DT_F32, kt, KB, v, HD, 0, 120, 0, HD, 0.25f, sc, CTX, NULL);
            for (int t = 0; t < NT; t++) {
                ops_attend_block(k, fast, one, HD, q + t * HD, HD, 1, 1, DT_F32, kt, KB, v, HD, 0, 120 + t, 0, HD, 0.25f, sc,
                                 CTX, NULL);
                for (int d = 0; d < HD; d++) {
                    cr_expect_eq(all[t * HD + d], one[d], "%s fast=%d t=%d d=%d", k->name, fast, t, d);
                    if (!fast)
                        cr_expect_eq(all[t * HD + d], ref[t * HD + d], "%s vs scalar t=%d d=%d", k->name, t, d);
                }
            }
        }
    }
    free(kt);
}

/* Query rows of several heads per token (a GQA group) give each head's rows
 * bit for bit what a call per head gives. */
Test(ops, attend_block_group_rows_equal_per_head) {
    enum { HD = 64, CTX = 30, G = 3, NT = 4, KB = 64 };
    static float kc[CTX * HD], v[CTX * HD], q[NT * G * HD], grp[NT * G * HD], one[HD], sc[NT * G * CTX];
    for (int i = 0; i < CTX * HD; i++) {
        kc[i] = sinf(0.9f * (float)i);
        v[i] = cosf(0.4f * (float)i);
    }
    for (int i = 0; i < NT * G * HD; i++) q[i] = sinf(0.21f * (float)i);
    const kernels *k = kernels_select(NULL);
    void *kt = key_blocks(kc, HD, CTX, HD, KB, 2); /* fast mode's BF16 cache */
    uint16_t *vh = value_pairs(v, HD, CTX, HD);
    ops_attend_block(k, 1, grp, HD, q, HD, NT * G, G, DT_BF16, kt, KB, vh, HD, 0, 11, 0, HD, 0.25f, sc, CTX, NULL);
    for (int t = 0; t < NT; t++)
        for (int g = 0; g < G; g++) {
            ops_attend_block(k, 1, one, HD, q + (t * G + g) * HD, HD, 1, 1, DT_BF16, kt, KB, vh, HD, 0, 11 + t, 0, HD,
                             0.25f, sc, CTX, NULL);
            for (int i = 0; i < HD; i++) cr_expect_eq(grp[(t * G + g) * HD + i], one[i], "t=%d g=%d i=%d", t, g, i);
        }
    free(kt);
    free(vh);
}

/* Fast mode's BF16 cache: every row the same bits alone or beside the others of
 * its call (lengths of both parities: the odd one out of a pair adds a zero
 * product), the scalar version's scores and values on every table (softmax's sum
 * within rounding), and within bf16's rounding of the f32 cache's result. */
Test(ops, attend_block_bf16_cache) {
    enum { CTX = 151, NT = 9, KB = 64, LEN0 = 120, MAXHD = 96 };
    static float kc[CTX * MAXHD], v[CTX * MAXHD], q[NT * MAXHD], all[NT * MAXHD], one[MAXHD], ref[NT * MAXHD],
        f32[NT * MAXHD], sc[NT * CTX];
    for (int hd = 64; hd <= MAXHD; hd += 32) {
        for (int i = 0; i < CTX * hd; i++) {
            kc[i] = sinf(0.37f * (float)i);
            v[i] = cosf(0.61f * (float)i);
        }
        for (int i = 0; i < NT * hd; i++) q[i] = 2.0f * sinf(0.23f * (float)i);
        void *kt = key_blocks(kc, hd, CTX, hd, KB, 2), *k32 = key_blocks(kc, hd, CTX, hd, KB, 0);
        uint16_t *vh = value_pairs(v, hd, CTX, hd);
        const kernels *s = kernels_scalar();
        ops_attend_block(s, 1, ref, hd, q, hd, NT, 1, DT_BF16, kt, KB, vh, hd, 0, LEN0, 0, hd, 0.125f, sc, CTX, NULL);
        ops_attend_block(s, 1, f32, hd, q, hd, NT, 1, DT_F32, k32, KB, v, hd, 0, LEN0, 0, hd, 0.125f, sc, CTX, NULL);
        for (int i = 0; i < NT * hd; i++) /* |values| <= 1: bf16's 2^-9 relative, a few roundings */
            cr_expect(fabsf(ref[i] - f32[i]) <= 4e-3f, "hd %d i %d: bf16 %g vs f32 %g", hd, i, ref[i], f32[i]);
        for (int i = 0; i < 4; i++) {
            const kernels *k = isa_table(i);
            if (!k) continue;
            ops_attend_block(k, 1, all, hd, q, hd, NT, 1, DT_BF16, kt, KB, vh, hd, 0, LEN0, 0, hd, 0.125f, sc, CTX,
                             NULL);
            for (int t = 0; t < NT; t++) {
                ops_attend_block(k, 1, one, hd, q + t * hd, hd, 1, 1, DT_BF16, kt, KB, vh, hd, 0, LEN0 + t, 0, hd, 0.125f,
                                 sc, CTX, NULL);
                for (int d = 0; d < hd; d++) {
                    float a = all[t * hd + d], r = ref[t * hd + d];
                    cr_expect_eq(a, one[d], "%s hd %d t=%d d=%d", k->name, hd, t, d);
                    cr_expect(fabsf(a - r) <= 1e-6f * (1.0f + fabsf(r)), "%s hd %d t=%d d=%d: %g vs scalar %g", k->name,
                              hd, t, d, a, r);
                }
            }
        }
        free(kt);
        free(k32);
        free(vh);
    }
}

/* kv_bf16 by hand: nearest even, ties both ways, the flush below 2^-56 (to +0,
 * whatever the sign), infinities, NaN kept quiet, overflow to inf. */
Test(ops, kv_bf16_hand_checked) {
    static const struct {
        uint32_t in;
        uint16_t out;
    } c[] = {{0x3f800000u, 0x3f80}, {0x3f808000u, 0x3f80}, {0x3f818000u, 0x3f82}, {0x3f808001u, 0x3f81},
             {0xbf7fffffu, 0xbf80}, {0x23800000u, 0x2380}, {0xa3800000u, 0xa380}, {0x237fffffu, 0x0000},
             {0xa37fffffu, 0x0000}, {0x00000001u, 0x0000}, {0x80000000u, 0x0000}, {0x7f800000u, 0x7f80},
             {0xff800000u, 0xff80}, {0x7f7fffffu, 0x7f80}, {0x7fc00001u, 0x7fc0}, {0x7f800001u, 0x7fc0}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        float x;
        memcpy(&x, &c[i].in, 4);
        cr_expect_eq(kv_bf16(x), c[i].out, "kv_bf16(0x%08x) = 0x%04x, expected 0x%04x", c[i].in, kv_bf16(x), c[i].out);
    }
}

/* The polynomial e^x against libm's expf: relative error within 3e-7 over
 * the range softmax and SwiGLU use, and the clamped ends. */
Test(ops, exp_poly_close_to_expf) {
    float worst = 0.0f;
    for (int i = -200000; i <= 200000; i++) {
        float x = (float)i * 4.4e-4f;
        float e = expf(x), g = exp_poly(x);
        float rel = fabsf(g - e) / e;
        if (rel > worst) worst = rel;
    }
    cr_expect_lt(worst, 3e-7f, "worst relative error %g", (double)worst);
    cr_expect_eq(exp_poly(0.0f), 1.0f);
    cr_expect_eq(exp_poly(-200.0f), 0.0f);
    cr_expect(isinf(exp_poly(100.0f)));
    cr_expect_float_eq(exp_poly(-100.0f), expf(-100.0f), 2e-45f); /* subnormal */
}

/* Fast mode's softmax (the polynomial e^x) against one with libm's expf in the
 * same order; the masked tail is exactly 0. The ISA versions are held to this
 * scalar one by st_check_attn (test_kernels.c). */
Test(ops, softmax_fast_close_to_expf) {
    enum { N = 333, PAD = 352 };
    float x[PAD], got[PAD], exact[PAD];
    for (int len = 1; len <= N; len += 37) {
        for (int i = 0; i < PAD; i++) x[i] = 40.0f * sinf(0.37f * (float)(i * len)); /* logits over +-40 */
        memcpy(got, x, sizeof x);
        kernels_scalar()->softmax_fast(got, len, PAD, 0.125f);
        memcpy(exact, x, sizeof x);
        softmax_with(exact, len, PAD, 0.125f, expf);
        for (int p = 0; p < len; p++)
            cr_expect_float_eq(got[p], exact[p], 1e-9f + 2e-6f * exact[p], "len=%d p=%d", len, p);
        for (int p = len; p < PAD; p++) cr_expect_eq(got[p], 0.0f);
    }
}

/* Fast mode's SwiGLU against ops_swiglu (libm expf), through both clamps of e^x. */
Test(ops, swiglu_fast_close_to_expf) {
    enum { N = 1000 };
    static float g[N], u[N], got[N], exact[N];
    for (int i = 0; i < N; i++) {
        g[i] = 60.0f * sinf(0.731f * (float)i);
        u[i] = cosf(0.291f * (float)i);
    }
    memcpy(got, g, sizeof g);
    kernels_scalar()->swiglu_fast(got, u, N);
    memcpy(exact, g, sizeof g);
    ops_swiglu(exact, u, N);
    for (int i = 0; i < N; i++) cr_expect_float_eq(got[i], exact[i], 1e-30f + 1e-6f * fabsf(exact[i]), "i=%d", i);
}

/* Fast mode's GELU-tanh gate against ops_gelu_tanh_mul (libm tanhf), through both
 * clamps of e^x and around 0. The bound: x / (1 + e^-2u) differs from 0.5 x (1 +
 * tanh u) by rounding only where both are far from 0; near x = 0 both are ~x/2. */
Test(ops, geglu_fast_close_to_tanhf) {
    enum { N = 1000 };
    static float g[N], u[N], got[N], exact[N];
    for (int i = 0; i < N; i++) {
        g[i] = (i % 2 ? 60.0f : 3.0f) * sinf(0.731f * (float)i);
        u[i] = cosf(0.291f * (float)i);
    }
    memcpy(got, g, sizeof g);
    kernels_scalar()->geglu_fast(got, u, N);
    memcpy(exact, g, sizeof g);
    ops_gelu_tanh_mul(exact, u, N);
    for (int i = 0; i < N; i++)
        cr_expect(fabsf(got[i] - exact[i]) <= 1e-7f + 2e-6f * fabsf(exact[i]), "i=%d x=%g: %g vs %g", i, g[i], got[i],
                  exact[i]);
}

/* A sliding window: each row attends exactly its last WIN positions (checked against
 * ops_attend over those positions alone), whole key blocks before the window are
 * skipped without changing a bit of any row, and a row's output still does not
 * depend on the rows sharing its call. */
Test(ops, attend_block_sliding_window) {
    enum { HD = 32, CTX = 300, NT = 7, KB = 64, LEN0 = 200, WIN = 70 };
    static float kc[CTX * HD], v[CTX * HD], q[NT * HD], all[NT * HD], one[HD], want[HD], sc[NT * CTX], s1[CTX];
    for (int i = 0; i < CTX * HD; i++) {
        kc[i] = sinf(0.7f * (float)i);
        v[i] = cosf(0.3f * (float)i);
    }
    for (int i = 0; i < NT * HD; i++) q[i] = sinf(0.5f * (float)i);
    void *kt = key_blocks(kc, HD, CTX, HD, KB, 0);
    for (int i = 0; i < 4; i++) {
        const kernels *k = isa_table(i);
        if (!k) continue;
        for (int fast = 0; fast < 2; fast++) {
            ops_attend_block(k, fast, all, HD, q, HD, NT, 1, DT_F32, kt, KB, v, HD, 0, LEN0, WIN, HD, 0.25f, sc, CTX, NULL);
            for (int t = 0; t < NT; t++) {
                int end = LEN0 + t;
                ops_attend(kernels_scalar(), want, q + t * HD, kc + (end - WIN) * HD, v + (end - WIN) * HD, WIN, HD, HD,
                           0.25f, s1);
                ops_attend_block(k, fast, one, HD, q + t * HD, HD, 1, 1, DT_F32, kt, KB, v, HD, 0, end, WIN, HD, 0.25f, sc,
                                 CTX, NULL);
                for (int d = 0; d < HD; d++) {
                    cr_expect_eq(all[t * HD + d], one[d], "%s fast=%d t=%d d=%d", k->name, fast, t, d);
                    cr_expect(fabsf(one[d] - want[d]) <= 1e-5f + 1e-4f * fabsf(want[d]), "%s fast=%d t=%d d=%d: %g vs %g",
                              k->name, fast, t, d, one[d], want[d]);
                }
            }
        }
    }
    free(kt);
}

/* A ring buffer (a sliding layer's cache past its length): position p in slot
 * p % RING, the read wrapping from slot RING - 1 to slot 0. Rows whose window
 * lies on one side of the wrap get the bits of the plain cache; rows whose window
 * spans it sum their values in two parts (within rounding of the plain cache);
 * every row's bits are the same whatever rows share its call. */
Test(ops, attend_block_ring_wraps) {
    enum { HD = 32, CTX = 300, RING = 128, KB = 64, WIN = 20, LEN0 = 250, NT = 12 };
    static float kc[CTX * HD], v[CTX * HD], kr[RING * HD], vr[RING * HD], q[NT * HD], plain[NT * HD], all[NT * HD],
        one[HD], sc[NT * CTX], wrap[NT * HD];
    for (int i = 0; i < CTX * HD; i++) {
        kc[i] = sinf(0.7f * (float)i);
        v[i] = cosf(0.3f * (float)i);
    }
    for (int i = 0; i < NT * HD; i++) q[i] = sinf(0.5f * (float)i);
    int hi = LEN0 + NT - 1; /* positions 0 .. hi - 1 written, in order, into the ring */
    for (int p = 0; p < hi; p++) {
        memcpy(kr + p % RING * HD, kc + p * HD, HD * sizeof(float));
        memcpy(vr + p % RING * HD, v + p * HD, HD * sizeof(float));
    }
    /* f32 caches, and BF16 ones (fast mode's) */
    void *kt = key_blocks(kc, HD, CTX, HD, KB, 0), *ktr = key_blocks(kr, HD, RING, HD, KB, 0);
    void *kb2 = key_blocks(kc, HD, CTX, HD, KB, 2), *kbr2 = key_blocks(kr, HD, RING, HD, KB, 2);
    uint16_t *vb2 = value_pairs(v, HD, CTX, HD), *vbr2 = value_pairs(vr, HD, RING, HD);
    int straddled = 0;
    for (int i = 0; i < 4; i++) {
        const kernels *k = isa_table(i);
        if (!k) continue;
        for (int fast = 0; fast < 3; fast++) { /* 2: fast with the BF16 caches */
            dtype dt = fast == 2 ? DT_BF16 : DT_F32;
            const void *kp = fast == 2 ? kb2 : kt, *kr_ = fast == 2 ? kbr2 : ktr;
            const void *vp = fast == 2 ? (const void *)vb2 : v, *vr_ = fast == 2 ? (const void *)vbr2 : vr;
            ops_attend_block(k, fast > 0, plain, HD, q, HD, NT, 1, dt, kp, KB, vp, HD, 0, LEN0, WIN, HD, 0.25f, sc, CTX,
                             NULL);
            ops_attend_block(k, fast > 0, all, HD, q, HD, NT, 1, dt, kr_, KB, vr_, HD, RING, LEN0, WIN, HD, 0.25f, sc,
                             CTX, wrap);
            for (int t = 0; t < NT; t++) {
                int end = LEN0 + t, spans = end - WIN < RING * 2 && end > RING * 2;
                straddled += spans;
                ops_attend_block(k, fast > 0, one, HD, q + t * HD, HD, 1, 1, dt, kr_, KB, vr_, HD, RING, end, WIN, HD,
                                 0.25f, sc, CTX, wrap);
                for (int d = 0; d < HD; d++) {
                    float w = plain[t * HD + d];
                    cr_expect_eq(all[t * HD + d], one[d], "%s fast=%d t=%d d=%d", k->name, fast, t, d);
                    if (spans)
                        cr_expect(fabsf(one[d] - w) <= 1e-6f + 1e-5f * fabsf(w), "%s fast=%d t=%d d=%d: %g vs %g",
                                  k->name, fast, t, d, one[d], w);
                    else
                        cr_expect_eq(one[d], w, "%s fast=%d t=%d d=%d: not the plain cache's bits", k->name, fast, t, d);
                }
            }
        }
    }
    cr_expect(straddled > 0, "no row's window spans the wrap: the test checks nothing of it");
    free(kt);
    free(ktr);
    free(kb2);
    free(kbr2);
    free(vb2);
    free(vbr2);
}

/* Attention sinks (gpt-oss): each query row's softmax gets one more logit, its head's sink, with no value:
 * out = sum_p e^(s_p - m) v_p / (sum_p e^(s_p - m) + e^(sink - m)), m the max over the scores and the sink.
 * Against that in double, every kernel table, exact and fast softmax, a GQA group of 2 heads with their own
 * sinks (one far above the scores: most of the mass goes to it), in a window. */
Test(ops, attend_block_sinks) {
    enum { CTX = 90, NT = 5, G = 2, HD = 64, KB = 64, LEN0 = 70, WIN = 20 };
    float kc[CTX * HD], v[CTX * HD], q[NT * G * HD], out[NT * G * HD], sc[NT * G * (CTX + 16)];
    const float sinks[G] = {0.3f, 6.0f}, scale = 0.125f;
    for (int i = 0; i < CTX * HD; i++) kc[i] = sinf(0.37f * (float)i), v[i] = cosf(0.9f * (float)i + 0.4f);
    for (int i = 0; i < NT * G * HD; i++) q[i] = 3.0f * sinf(0.05f * (float)i * (float)i);
    void *kt = key_blocks(kc, HD, CTX, HD, KB, 0);
    for (int isa = 0; isa < 4; isa++) {
        const kernels *k = isa_table(isa);
        if (!k) continue;
        for (int fast = 0; fast <= 1; fast++) {
            ops_attend_block_sinks(k, fast, out, HD, q, HD, NT * G, G, DT_F32, kt, KB, v, HD, 0, LEN0, WIN, HD, scale,
                                   sc, CTX + 16, NULL, sinks);
            for (int r = 0; r < NT * G; r++) {
                int end = LEN0 + r / G, lo = end - WIN;
                double s[CTX], m = sinks[r % G], den = 0, want[HD] = {0};
                for (int p = lo; p < end; p++) {
                    s[p] = 0;
                    for (int d = 0; d < HD; d++) s[p] += (double)q[r * HD + d] * kc[p * HD + d];
                    s[p] *= scale;
                    m = s[p] > m ? s[p] : m;
                }
                for (int p = lo; p < end; p++) den += exp(s[p] - m);
                den += exp(sinks[r % G] - m);
                for (int p = lo; p < end; p++)
                    for (int d = 0; d < HD; d++) want[d] += exp(s[p] - m) / den * v[p * HD + d];
                for (int d = 0; d < HD; d++)
                    cr_expect(fabs(out[r * HD + d] - want[d]) <= 2e-6 + 1e-5 * fabs(want[d]),
                              "isa %d fast %d row %d dim %d: %g, want %g", isa, fast, r, d, out[r * HD + d], want[d]);
            }
        }
    }
    free(kt);
}

/* gpt-oss's clamped SwiGLU: (clamp(up, -l, l) + 1) * g * sigmoid(alpha g), g = min(gate, l); no lower clamp
 * on the gate. Hand values with alpha 1.702, l 7. */
Test(ops, swiglu_clamp) {
    float g[4] = {-9.0f, 0.5f, 8.0f, 2.0f}, u[4] = {0.25f, -8.0f, 9.0f, -1.0f}, want[4];
    for (int i = 0; i < 4; i++) {
        double gg = g[i] > 7 ? 7 : g[i], uu = u[i] > 7 ? 7 : u[i] < -7 ? -7 : u[i];
        want[i] = (float)((uu + 1) * gg / (1 + exp(-1.702 * gg)));
    }
    ops_swiglu_clamp(g, u, 4, 1.702f, 7.0f);
    for (int i = 0; i < 4; i++) cr_expect(fabsf(g[i] - want[i]) <= 1e-6f * (1 + fabsf(want[i])), "%d: %g vs %g", i, g[i], want[i]);
    cr_expect(want[1] < 0 && want[3] == 0.0f); /* up -8 clamps to -7: (-6) * ...; up -1: zero */
}
