/* Sampler vs transformers: the filtered distribution llmgen draws from equals the one
 * transformers' logits processors give on the same logits (tests/refs/sampler/sampler_ref.json,
 * made by tests/gen/make_sampler_refs.py with transformers' own processor list).
 *
 * Kept sets must be identical; probabilities agree within 2e-6 + 1e-5 * p (transformers
 * computes the softmax in float32, llmgen in float64: the float32 rounding of a
 * probability is about 6e-8 relative, summed over up to 4096 terms). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "run/sampler.h"

#define REF_PATH "tests/refs/sampler/sampler_ref.json"

static float *float_array(json_t *a, size_t *n) {
    *n = json_array_size(a);
    float *x = malloc(*n * sizeof *x);
    for (size_t i = 0; i < *n; i++) x[i] = (float)json_number_value(json_array_get(a, i));
    return x;
}

static void check_case(json_t *c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    json_t *p = json_object_get(c, "params");
    llmgen_sampler_params sp;
    llmgen_sampler_defaults(&sp);
    sp.temperature = (float)json_number_value(json_object_get(p, "temperature"));
    sp.top_k = (int)json_integer_value(json_object_get(p, "top_k"));
    sp.top_p = (float)json_number_value(json_object_get(p, "top_p"));
    sp.min_p = (float)json_number_value(json_object_get(p, "min_p"));
    sp.repeat_penalty = (float)json_number_value(json_object_get(p, "repeat_penalty"));
    size_t V, nh;
    float *logits = float_array(json_object_get(c, "logits"), &V);
    json_t *h = json_object_get(c, "history"), *want = json_object_get(c, "probs");
    nh = json_array_size(h);
    int32_t *hist = malloc((nh + 1) * sizeof *hist);
    for (size_t i = 0; i < nh; i++) hist[i] = (int32_t)json_integer_value(json_array_get(h, i));
    cr_assert_eq(json_array_size(want), V, "%s: probs and logits differ in length", name);

    llmgen_sampler *s = llmgen_sampler_new(&sp, (int)V);
    cr_assert_not_null(s, "%s: sampler_new refused the params", name);
    double *got = malloc(V * sizeof *got);
    int kept = sampler_probs(s, logits, hist, (int)nh, got);
    cr_expect_eq(kept, (int)json_integer_value(json_object_get(c, "kept")), "%s: kept %d ids", name, kept);
    int bad = 0;
    for (size_t i = 0; i < V && bad < 5; i++) {
        double w = json_number_value(json_array_get(want, i));
        if ((w > 0) != (got[i] > 0)) {
            cr_expect(0, "%s: id %zu kept by %s only (p %g vs %g)", name, i, w > 0 ? "transformers" : "llmgen", w,
                      got[i]);
            bad++;
        } else if (fabs(w - got[i]) > 2e-6 + 1e-5 * w) {
            cr_expect(0, "%s: id %zu p %.9g, transformers %.9g", name, i, got[i], w);
            bad++;
        }
    }
    /* and a draw only ever lands on a kept id */
    for (int i = 0; i < 50; i++) {
        int32_t id = llmgen_sample(s, logits, hist, (int)nh);
        cr_expect(got[id] > 0, "%s: drew id %d, which transformers removes", name, id);
    }
    free(got);
    free(hist);
    free(logits);
    llmgen_sampler_free(s);
}

Test(sampler_ref, matches_transformers_logits_processors) {
    json_error_t je;
    json_t *doc = json_load_file(REF_PATH, 0, &je);
    if (!doc) cr_skip_test("%s: %s (run from the repository root)", REF_PATH, je.text);
    json_t *cases = json_object_get(doc, "cases");
    cr_assert(json_array_size(cases) >= 8, "%s: too few cases", REF_PATH);
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) check_case(c);
    json_decref(doc);
}
