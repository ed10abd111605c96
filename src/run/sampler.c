/* sampler.c - greedy and seeded sampling.
 *
 * The filters run in the order of transformers' generate (GenerationMixin.
 * _get_logits_processor): repetition penalty, temperature, top-k, top-p, min-p,
 * each with the same keep rule as its logits processor (ties with the k-th
 * logit kept; top-p drops the low tail whose mass is <= 1 - top_p; min-p
 * drops probabilities below min_p times the largest), then one draw from the
 * softmax of what is left. tests/unit/test_sampler_ref.c checks the filtered
 * distribution against transformers' own processors.
 *
 * The PRNG is xoshiro256** seeded by splitmix64: the same seed gives the same
 * ids on any machine and thread count (logits do not depend on the thread
 * count). One uniform draw per sampled token, none for greedy. */
#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* (logit, id) pairs: qsort has no context argument in C11. */
typedef struct {
    float v;
    int32_t id;
} cand;

struct llmgen_sampler {
    llmgen_sampler_params p;
    int vocab;
    uint64_t s[4]; /* xoshiro256** state */
    float *w;      /* (vocab) logits after penalty and temperature; -inf = filtered out */
    double *prob;  /* (vocab) probabilities of the filtered distribution */
    cand *c;       /* (vocab) scratch: heap for top-k, sorted survivors for top-p */
    int32_t *count; /* (vocab) scratch of the presence / frequency penalties, all 0 between calls */
};

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(llmgen_sampler *s) {
    uint64_t r = rotl(s->s[1] * 5, 7) * 9, t = s->s[1] << 17;
    s->s[2] ^= s->s[0];
    s->s[3] ^= s->s[1];
    s->s[1] ^= s->s[2];
    s->s[0] ^= s->s[3];
    s->s[2] ^= t;
    s->s[3] = rotl(s->s[3], 45);
    return r;
}

/* Uniform in [0, 1) with 53 random bits. */
static double next_unit(llmgen_sampler *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

void llmgen_sampler_defaults(llmgen_sampler_params *p) {
    *p = (llmgen_sampler_params){.temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f,
                                 .repeat_penalty = 1.0f, .seed = 0};
}

llmgen_status llmgen_sampler_check(const llmgen_sampler_params *p, char *err, size_t errlen) {
    const char *what = NULL;
    if (!(p->temperature >= 0.0f && isfinite(p->temperature))) what = "temperature must be a finite number >= 0";
    else if (p->top_k < 0) what = "top_k must be >= 0 (0 = off)";
    else if (!(p->top_p >= 0.0f && p->top_p <= 1.0f)) what = "top_p must be in [0, 1] (1 = off)";
    else if (!(p->min_p >= 0.0f && p->min_p <= 1.0f)) what = "min_p must be in [0, 1] (0 = off)";
    else if (!(p->repeat_penalty > 0.0f && isfinite(p->repeat_penalty)))
        what = "repeat_penalty must be a finite number > 0 (1 = off)";
    else if (!(p->presence_penalty >= -2.0f && p->presence_penalty <= 2.0f))
        what = "presence_penalty must be in [-2, 2] (0 = off)";
    else if (!(p->frequency_penalty >= -2.0f && p->frequency_penalty <= 2.0f))
        what = "frequency_penalty must be in [-2, 2] (0 = off)";
    if (!what) return LLMGEN_OK;
    if (err && errlen) snprintf(err, errlen, "sampler: %s", what);
    return LLMGEN_E_USAGE;
}

llmgen_sampler *llmgen_sampler_new(const llmgen_sampler_params *p, int vocab) {
    if (vocab <= 0 || !p || llmgen_sampler_check(p, NULL, 0) != LLMGEN_OK) return NULL;
    llmgen_sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->p = *p;
    s->vocab = vocab;
    s->w = malloc((size_t)vocab * sizeof *s->w);
    s->prob = malloc((size_t)vocab * sizeof *s->prob);
    s->c = malloc((size_t)vocab * sizeof *s->c);
    if (p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f) s->count = calloc((size_t)vocab, sizeof *s->count);
    if (!s->w || !s->prob || !s->c || ((p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f) && !s->count)) {
        llmgen_sampler_free(s);
        return NULL;
    }
    uint64_t x = p->seed;
    for (int i = 0; i < 4; i++) s->s[i] = splitmix64(&x);
    return s;
}

void llmgen_sampler_free(llmgen_sampler *s) {
    if (!s) return;
    free(s->w);
    free(s->prob);
    free(s->c);
    free(s->count);
    free(s);
}

/* The first index of the largest value (NaN never wins unless x[0] is NaN): the
 * maximum in 16 independent lanes (a loop the compiler turns into vector max
 * instructions; a running best index is one long dependency chain, 6% of a
 * --parallel 8 run), then the first index holding it. */
int32_t argmax_f32(const float *x, int n) {
    enum { L = 16 };
    if (n < 2 * L || x[0] != x[0]) {
        int32_t best = 0;
        for (int i = 1; i < n; i++)
            if (x[i] > x[best]) best = i;
        return best;
    }
    float m[L];
    for (int k = 0; k < L; k++) m[k] = -INFINITY;
    int i = 0;
    for (; i + L <= n; i += L)
        for (int k = 0; k < L; k++) m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
    float mx = x[0];
    for (int k = 0; k < L; k++) mx = m[k] > mx ? m[k] : mx;
    for (; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (i = 0; x[i] != mx; i++) {
    }
    return i;
}

/* transformers' RepetitionPenaltyLogitsProcessor: every id seen in the history
 * (prompt included) is penalized once, from its original logit. */
static void apply_penalty(float *w, const float *logits, int V, float penalty, const int32_t *h, int n) {
    if (penalty == 1.0f || !h) return;
    for (int i = 0; i < n; i++) {
        int32_t id = h[i];
        if (id < 0 || id >= V) continue;
        float v = logits[id];
        w[id] = v < 0 ? v * penalty : v / penalty;
    }
}

/* OpenAI's presence and frequency penalties over the ids h[0..n): an id generated c > 0 times
 * loses frequency * c + presence from its logit (after the repetition penalty). */
static void apply_presence(llmgen_sampler *s, float *w, const int32_t *h, int n) {
    const llmgen_sampler_params *p = &s->p;
    int V = s->vocab;
    if (!s->count || !h) return;
    for (int i = 0; i < n; i++)
        if (h[i] >= 0 && h[i] < V) s->count[h[i]]++;
    for (int i = 0; i < n; i++) {
        int32_t id = h[i];
        if (id < 0 || id >= V || !s->count[id]) continue;
        w[id] -= (float)s->count[id] * p->frequency_penalty + p->presence_penalty;
        s->count[id] = 0; /* once per id, and the scratch is clean again */
    }
}

/* The k-th largest value of w[0..V) (k <= V) with a min-heap of size k in c. */
static float kth_largest(const float *w, int V, int k, cand *heap) {
    for (int i = 0; i < V; i++) {
        float v = w[i];
        int j;
        if (i < k) {
            j = i; /* sift up */
            while (j > 0 && heap[(j - 1) / 2].v > v) {
                heap[j] = heap[(j - 1) / 2];
                j = (j - 1) / 2;
            }
        } else if (v > heap[0].v) {
            j = 0; /* replace the root, sift down */
            for (;;) {
                int l = 2 * j + 1, m = l + 1, t = j;
                float tv = v;
                if (l < k && heap[l].v < tv) t = l, tv = heap[l].v;
                if (m < k && heap[m].v < tv) t = m;
                if (t == j) break;
                heap[j] = heap[t];
                j = t;
            }
        } else {
            continue;
        }
        heap[j].v = v;
    }
    return heap[0].v;
}

/* Softmax of the finite entries of w into prob (0 for -inf), in f64 so that a
 * draw does not depend on rounding luck. Returns the count of finite entries. */
static int softmax_kept(const float *w, int V, double *prob) {
    float mx = -INFINITY;
    for (int i = 0; i < V; i++)
        if (w[i] > mx) mx = w[i];
    double sum = 0.0;
    int n = 0;
    for (int i = 0; i < V; i++) {
        prob[i] = w[i] == -INFINITY ? 0.0 : exp((double)w[i] - (double)mx);
        sum += prob[i];
        n += w[i] != -INFINITY;
    }
    for (int i = 0; i < V; i++) prob[i] /= sum;
    return n;
}

static int cmp_cand_asc(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->v < y->v) return -1;
    if (x->v > y->v) return 1;
    return y->id - x->id; /* lower id counts as larger on ties, as argmax */
}

/* transformers' TopPLogitsWarper: sort ascending, drop the tokens whose
 * cumulative mass (from the least likely up) is <= 1 - top_p, keep the top one. */
static void apply_top_p(llmgen_sampler *s, float top_p) {
    int V = s->vocab, n = 0;
    for (int i = 0; i < V; i++)
        if (s->w[i] != -INFINITY) s->c[n++] = (cand){s->w[i], i};
    qsort(s->c, (size_t)n, sizeof *s->c, cmp_cand_asc);
    double cum = 0.0, tail = 1.0 - (double)top_p;
    for (int i = 0; i < n - 1; i++) {
        cum += s->prob[s->c[i].id];
        if (cum > tail) break;
        s->w[s->c[i].id] = -INFINITY;
    }
}

/* Fills s->prob with the filtered distribution; returns the number of survivors. */
static int filter(llmgen_sampler *s, const float *logits, const int32_t *history, int n_history, int n_generated) {
    const llmgen_sampler_params *p = &s->p;
    int V = s->vocab;
    float *w = s->w;
    memcpy(w, logits, (size_t)V * sizeof *w);
    apply_penalty(w, logits, V, p->repeat_penalty, history, n_history);
    if (n_generated > n_history) n_generated = n_history;
    apply_presence(s, w, history ? history + n_history - n_generated : NULL, n_generated);
    if (p->temperature <= 0.0f) {
        memset(s->prob, 0, (size_t)V * sizeof *s->prob);
        s->prob[argmax_f32(w, V)] = 1.0;
        return 1;
    }
    for (int i = 0; i < V; i++) w[i] = w[i] / p->temperature;
    if (p->top_k > 0 && p->top_k < V) {
        float thr = kth_largest(w, V, p->top_k, s->c); /* ties with the k-th value stay */
        for (int i = 0; i < V; i++)
            if (w[i] < thr) w[i] = -INFINITY;
    }
    softmax_kept(w, V, s->prob);
    if (p->top_p < 1.0f) {
        apply_top_p(s, p->top_p);
        softmax_kept(w, V, s->prob);
    }
    if (p->min_p > 0.0f) {
        double top = 0.0;
        for (int i = 0; i < V; i++)
            if (s->prob[i] > top) top = s->prob[i];
        double thr = top * p->min_p;
        for (int i = 0; i < V; i++)
            if (s->prob[i] < thr) w[i] = -INFINITY;
    }
    return softmax_kept(w, V, s->prob);
}

int sampler_probs(llmgen_sampler *s, const float *logits, const int32_t *history, int n_history, double *probs) {
    int n = filter(s, logits, history, n_history, n_history);
    memcpy(probs, s->prob, (size_t)s->vocab * sizeof *probs);
    return n;
}

int32_t llmgen_sample(llmgen_sampler *s, const float *logits, const int32_t *history, int n_history) {
    return sampler_pick(s, logits, history, n_history, n_history);
}

int32_t sampler_pick(llmgen_sampler *s, const float *logits, const int32_t *history, int n_history, int n_generated) {
    int V = s->vocab;
    /* greedy without a penalty: the filtered copy would equal the logits */
    if (s->p.temperature <= 0.0f && s->p.repeat_penalty == 1.0f && !s->count) return argmax_f32(logits, V);
    filter(s, logits, history, n_history, n_generated);
    if (s->p.temperature <= 0.0f) return argmax_f32(s->w, V);
    /* walk the survivors in id order: the draw depends only on the distribution and the seed */
    double r = next_unit(s), cum = 0.0;
    int32_t last = -1;
    for (int i = 0; i < V; i++) {
        if (s->prob[i] == 0.0) continue;
        last = i;
        cum += s->prob[i];
        if (r < cum) return i;
    }
    return last >= 0 ? last : argmax_f32(s->w, V); /* r beyond the rounded total */
}
