/* Sampler: greedy is argmax, seeded sampling is reproducible, filters keep what they should. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "run/sampler.h"

static void fill_logits(float *l, int n) {
    for (int i = 0; i < n; i++) l[i] = sinf((float)i * 0.37f) * 3.0f;
}

Test(sampler, greedy_is_first_argmax) {
    float l[6] = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f, 0.0f};
    llmgen_sampler_params p;
    llmgen_sampler_defaults(&p);
    llmgen_sampler *s = llmgen_sampler_new(&p, 6);
    cr_assert_not_null(s);
    cr_expect_eq(llmgen_sample(s, l, NULL, 0), 1);
    llmgen_sampler_free(s);
}

/* The first index of the largest value, as a plain scan finds it: ties, the lane
 * layout of the vector scan (maxima in every position mod 16, in the tail),
 * -inf everywhere, NaN (never wins unless first), lengths around the lanes. */
static int32_t first_max(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

Test(sampler, argmax_matches_a_plain_scan) {
    enum { N = 200 };
    float x[N];
    for (int n = 1; n <= N; n += (n < 40 ? 1 : 13))
        for (int at = 0; at < n; at += (n < 40 ? 1 : 7)) {
            for (int i = 0; i < n; i++) x[i] = sinf((float)i * 0.7f);
            x[at] = 5.0f;
            cr_expect_eq(argmax_f32(x, n), first_max(x, n), "n %d max at %d", n, at);
            if (at + 17 < n) x[at + 17] = 5.0f; /* a tie later: the first wins */
            cr_expect_eq(argmax_f32(x, n), at, "n %d tie at %d", n, at);
            x[(at + 5) % n] = NAN;
            cr_expect_eq(argmax_f32(x, n), first_max(x, n), "n %d NaN near %d", n, at);
        }
    for (int i = 0; i < N; i++) x[i] = -INFINITY;
    cr_expect_eq(argmax_f32(x, N), 0);
    x[0] = NAN;
    x[100] = 1.0f;
    cr_expect_eq(argmax_f32(x, N), first_max(x, N));
    x[0] = 0.0f;
    x[100] = -0.0f;
    x[150] = 0.0f;
    cr_expect_eq(argmax_f32(x, N), 0); /* -0 and +0 are equal: the first */
}

Test(sampler, same_seed_same_ids_other_seed_differs) {
    enum { V = 1000, N = 64 };
    float l[V];
    fill_logits(l, V);
    llmgen_sampler_params p;
    llmgen_sampler_defaults(&p);
    p.temperature = 1.5f;
    p.seed = 42;
    int32_t a[N], b[N], c[N];
    llmgen_sampler *s1 = llmgen_sampler_new(&p, V), *s2 = llmgen_sampler_new(&p, V);
    p.seed = 43;
    llmgen_sampler *s3 = llmgen_sampler_new(&p, V);
    int differ = 0;
    for (int i = 0; i < N; i++) {
        a[i] = llmgen_sample(s1, l, NULL, 0);
        b[i] = llmgen_sample(s2, l, NULL, 0);
        c[i] = llmgen_sample(s3, l, NULL, 0);
        cr_expect_eq(a[i], b[i], "step %d", i);
        differ += a[i] != c[i];
    }
    cr_expect_gt(differ, 0, "a different seed should give different draws");
    llmgen_sampler_free(s1);
    llmgen_sampler_free(s2);
    llmgen_sampler_free(s3);
}

Test(sampler, top_k_one_is_greedy) {
    enum { V = 500 };
    float l[V];
    fill_logits(l, V);
    llmgen_sampler_params p;
    llmgen_sampler_defaults(&p);
    p.temperature = 2.0f;
    p.top_k = 1;
    llmgen_sampler *s = llmgen_sampler_new(&p, V);
    for (int i = 0; i < 20; i++) cr_expect_eq(llmgen_sample(s, l, NULL, 0), argmax_f32(l, V));
    llmgen_sampler_free(s);
}

Test(sampler, top_k_draws_stay_in_top_k) {
    enum { V = 300, K = 5 };
    float l[V];
    fill_logits(l, V);
    llmgen_sampler_params p;
    llmgen_sampler_defaults(&p);
    p.temperature = 5.0f;
    p.top_k = K;
    llmgen_sampler *s = llmgen_sampler_new(&p, V);
    for (int i = 0; i < 200; i++) {
        int32_t id = llmgen_sample(s, l, NULL, 0);
        int higher = 0;
        for (int j = 0; j < V; j++) higher += l[j] > l[id];
        cr_expect_lt(higher, K, "draw %d ranked %d", id, higher);
    }
    llmgen_sampler_free(s);
}

Test(sampler, repetition_penalty_changes_greedy_choice) {
    float l[3] = {2.0f, 1.5f, -1.0f};
    llmgen_sampler_params p;
    llmgen_sampler_defaults(&p);
    p.repeat_penalty = 2.0f; /* 2.0 -> 1.0 < 1.5 */
    llmgen_sampler *s = llmgen_sampler_new(&p, 3);
    int32_t hist[1] = {0};
    cr_expect_eq(llmgen_sample(s, l, hist, 1), 1);
    llmgen_sampler_free(s);
}

/* OpenAI's formula: logit - frequency * count - presence, for the generated ids only. */
Test(sampler, presence_and_frequency_penalties_count_generated_ids) {
    float l[4] = {5.0f, 4.5f, 4.45f, -1.0f};
    llmgen_sampler_params p;
    llmgen_sampler_defaults(&p);
    p.presence_penalty = 0.3f;
    p.frequency_penalty = 0.2f;
    llmgen_sampler *s = llmgen_sampler_new(&p, 4);
    cr_assert_not_null(s);
    int32_t hist[4] = {1, 0, 0, 3}; /* 1 is the prompt's; 0 twice and 3 once generated */
    cr_expect_eq(sampler_pick(s, l, hist, 4, 3), 1);     /* 5 - 0.4 - 0.3 = 4.3 < 4.5 */
    cr_expect_eq(sampler_pick(s, l, hist, 4, 0), 0);     /* nothing generated: no penalty */
    cr_expect_eq(llmgen_sample(s, l, hist, 4), 2);       /* the whole history: 1 too (4.0), 2 wins */
    cr_expect_eq(sampler_pick(s, l, hist, 4, 3), 1);     /* the scratch counts are clean between calls */
    double prob[4];
    p.temperature = 1.0f;
    llmgen_sampler *t = llmgen_sampler_new(&p, 4);
    sampler_probs(t, l, hist + 1, 3, prob);
    double z = exp(4.3) + exp(4.5) + exp(4.45) + exp(-1.5), want = exp(4.3) / z;
    cr_expect(fabs(prob[0] - want) < 1e-6, "p(0) %g, want %g", prob[0], want);
    p.presence_penalty = 2.5f;
    cr_expect_eq(llmgen_sampler_check(&p, NULL, 0), LLMGEN_E_USAGE);
    llmgen_sampler_free(s);
    llmgen_sampler_free(t);
}

Test(sampler, draws_follow_the_filtered_distribution) {
    /* 40000 draws; each frequency within 5 standard deviations of its probability */
    enum { V = 6, N = 40000 };
    float l[V] = {1.0f, 0.5f, 0.0f, -0.5f, 2.0f, -3.0f};
    llmgen_sampler_params p;
    llmgen_sampler_defaults(&p);
    p.temperature = 0.9f;
    p.top_k = 5; /* drops id 5 */
    p.seed = 7;
    llmgen_sampler *s = llmgen_sampler_new(&p, V);
    double prob[V];
    cr_assert_eq(sampler_probs(s, l, NULL, 0, prob), 5);
    cr_expect_eq(prob[5], 0.0);
    int count[V] = {0};
    for (int i = 0; i < N; i++) count[llmgen_sample(s, l, NULL, 0)]++;
    for (int i = 0; i < V; i++) {
        double sd = sqrt(N * prob[i] * (1 - prob[i]));
        cr_expect(fabs(count[i] - N * prob[i]) <= 5 * sd + 1e-9, "id %d: %d draws, expected %.0f +- %.0f", i,
                  count[i], N * prob[i], sd);
    }
    llmgen_sampler_free(s);
}

Test(sampler, check_refuses_out_of_range_params) {
    llmgen_sampler_params p;
    char err[128];
    llmgen_sampler_defaults(&p);
    cr_expect_eq(llmgen_sampler_check(&p, err, sizeof err), LLMGEN_OK);
    p.temperature = NAN;
    cr_expect_eq(llmgen_sampler_check(&p, err, sizeof err), LLMGEN_E_USAGE);
    cr_expect(strstr(err, "temperature") != NULL, "message: %s", err);
    cr_expect_null(llmgen_sampler_new(&p, 10));
    llmgen_sampler_defaults(&p);
    p.top_p = 1.5f;
    cr_expect_eq(llmgen_sampler_check(&p, err, sizeof err), LLMGEN_E_USAGE);
    llmgen_sampler_defaults(&p);
    p.repeat_penalty = 0.0f;
    cr_expect_eq(llmgen_sampler_check(&p, err, sizeof err), LLMGEN_E_USAGE);
    llmgen_sampler_defaults(&p);
    p.top_k = -1;
    cr_expect_eq(llmgen_sampler_check(&p, err, sizeof err), LLMGEN_E_USAGE);
    cr_expect_null(llmgen_sampler_new(&p, 10));
    llmgen_sampler_defaults(&p);
    cr_expect_null(llmgen_sampler_new(&p, 0));
}
