/* test_moe.c - the router of an expert layer (model/moe.c): torch.topk's order on tied
 * values, as torch itself gives it (tests/refs/moe-topk-ties.json, written by
 * tests/gen/make_moe_refs.py), and the three routing rules on hand-computed values. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/moe.h"

#define TIES "tests/refs/moe-topk-ties.json"

static void topk(const float *v, int n, int k, int *idx) {
    moe_pair *q = malloc((size_t)n * sizeof *q);
    moe_topk(v, n, k, idx, q);
    free(q);
}

Test(moe_topk, torch_order_on_ties) {
    json_error_t je;
    json_t *doc = json_load_file(TIES, 0, &je);
    cr_assert(doc, "%s: %s", TIES, je.text);
    json_t *cases = json_object_get(doc, "cases");
    cr_assert(json_array_size(cases) >= 10);
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        int n = (int)json_integer_value(json_object_get(c, "n")), k = (int)json_integer_value(json_object_get(c, "k"));
        const char *kind = json_string_value(json_object_get(c, "values"));
        float *v = malloc((size_t)n * sizeof *v);
        int idx[64];
        for (int j = 0; j < n; j++) v[j] = strcmp(kind, "zeros") ? (float)(j % 3) : 0.0f;
        topk(v, n, k, idx);
        json_t *want = json_object_get(c, "ids");
        for (int j = 0; j < k; j++)
            cr_expect_eq(idx[j], (int)json_integer_value(json_array_get(want, (size_t)j)),
                         "n %d k %d %s: slot %d is %d, torch %lld", n, k, kind, j, idx[j],
                         (long long)json_integer_value(json_array_get(want, (size_t)j)));
        free(v);
    }
    json_decref(doc);
}

/* The values FACTS recorded from torch 2.15 before the reference file existed. */
Test(moe_topk, measured_orders) {
    float z[1024] = {0};
    int idx[8];
    topk(z, 8, 2, idx);
    cr_expect(idx[0] == 6 && idx[1] == 5);
    static const int want128[8] = {84, 87, 86, 85, 82, 81, 88, 83}, want1024[8] = {7, 4, 1, 3, 5, 0, 2, 6};
    topk(z, 128, 8, idx);
    for (int i = 0; i < 8; i++) cr_expect_eq(idx[i], want128[i]);
    topk(z, 1024, 8, idx);
    for (int i = 0; i < 8; i++) cr_expect_eq(idx[i], want1024[i]);
}

Test(moe_topk, distinct_values_descend_and_nan_first) {
    float v[12] = {0.5f, -1, 3, 2.5f, 9, 0, 7, -4, 1, 8, 6, 2};
    int idx[5];
    topk(v, 12, 5, idx);
    static const int want[5] = {4, 9, 6, 10, 2};
    for (int i = 0; i < 5; i++) cr_expect_eq(idx[i], want[i]);
    v[7] = NAN;
    topk(v, 12, 2, idx);
    cr_expect(idx[0] == 7 && idx[1] == 4, "NaN ranks highest, as torch's comparator: %d %d", idx[0], idx[1]);
}

Test(moe_route, the_three_rules) {
    float z[4] = {1.0f, 3.0f, 2.0f, 0.0f}, p[4], w[2];
    int ids[2];
    moe_pair q[4];
    double e[4], s = 0;
    for (int i = 0; i < 4; i++) s += e[i] = exp(z[i] - 3.0);
    moe_route(MOE_SOFTMAX_TOPK, 0, z, 4, 2, ids, w, p, q);
    cr_expect(ids[0] == 1 && ids[1] == 2);
    cr_expect_float_eq(w[0], e[1] / s, 1e-6);
    cr_expect_float_eq(w[1], e[2] / s, 1e-6);
    moe_route(MOE_SOFTMAX_TOPK, 1, z, 4, 2, ids, w, p, q);
    cr_expect_float_eq(w[0], e[1] / (e[1] + e[2]), 1e-6);
    cr_expect_float_eq(w[0] + w[1], 1.0f, 1e-6);
    moe_route(MOE_TOPK_SOFTMAX, 0, z, 4, 2, ids, w, p, q);
    cr_expect(ids[0] == 1 && ids[1] == 2);
    cr_expect_float_eq(w[0], 1.0 / (1.0 + exp(-1.0)), 1e-6);
}

/* LFM2-MoE: the bias chooses (expert 0 over expert 3, whose sigmoid is larger), the sigmoid weighs,
 * renormalized by sum + 1e-6, times the scale. */
Test(moe_route, sigmoid_with_expert_bias) {
    float z[4] = {0.0f, 1.0f, -1.0f, 2.0f}, bias[4] = {0.5f, 0.0f, 0.0f, -1.0f}, p[4], w[2];
    int ids[2];
    moe_pair q[4];
    double s0 = 0.5, s1 = 1.0 / (1.0 + exp(-1.0));
    moe_route_sigmoid(1, 1.5f, bias, z, 4, 2, ids, w, p, q);
    cr_expect(ids[0] == 0 && ids[1] == 1, "ids %d %d", ids[0], ids[1]);
    cr_expect_float_eq(w[0], 1.5 * s0 / (s0 + s1 + 1e-6), 1e-6);
    cr_expect_float_eq(w[1], 1.5 * s1 / (s0 + s1 + 1e-6), 1e-6);
    moe_route_sigmoid(0, 1.0f, NULL, z, 4, 2, ids, w, p, q);
    cr_expect(ids[0] == 3 && ids[1] == 1, "ids %d %d", ids[0], ids[1]);
    cr_expect_float_eq(w[0], 1.0 / (1.0 + exp(-2.0)), 1e-6);
}
