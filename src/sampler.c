/* sampler.c - greedy and seeded sampling.
 *
 * Order of the filters follows transformers' generate: repetition penalty,
 * temperature, top-k, top-p, min-p, then a draw from the softmax. The PRNG is
 * xoshiro256** seeded by splitmix64: the same seed gives the same ids on any
 * machine and thread count (logits do not depend on the thread count). */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct llmgen_sampler {
    llmgen_sampler_params p;
    int vocab;
    uint64_t s[4];   /* xoshiro256** state */
    float *work;     /* (vocab) adjusted logits, then probabilities */
    int32_t *order;  /* (vocab) candidate ids sorted by logit */
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

llmgen_sampler *llmgen_sampler_new(const llmgen_sampler_params *p, int vocab) {
    if (vocab <= 0) return NULL;
    llmgen_sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->p = *p;
    s->vocab = vocab;
    s->work = malloc((size_t)vocab * sizeof(float));
    s->order = malloc((size_t)vocab * sizeof(int32_t));
    if (!s->work || !s->order) {
        llmgen_sampler_free(s);
        return NULL;
    }
    uint64_t x = p->seed;
    for (int i = 0; i < 4; i++) s->s[i] = splitmix64(&x);
    return s;
}

void llmgen_sampler_free(llmgen_sampler *s) {
    if (!s) return;
    free(s->work);
    free(s->order);
    free(s);
}

int32_t argmax_f32(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}


/* qsort has no context argument in C11; sort (logit, id) pairs instead of a global. */
typedef struct {
    float v;
    int32_t id;
} cand;

static int cmp_cand(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->v > y->v) return -1;
    if (x->v < y->v) return 1;
    return x->id - y->id; /* stable: lower id first on ties */
}

int32_t llmgen_sample(llmgen_sampler *s, const float *logits, const int32_t *history, int n_history) {
    const llmgen_sampler_params *p = &s->p;
    int V = s->vocab;
    memcpy(s->work, logits, (size_t)V * sizeof(float));
    float *w = s->work;
    if (p->repeat_penalty != 1.0f && history) {
        /* transformers' RepetitionPenaltyLogitsProcessor: each seen id once */
        for (int i = 0; i < n_history; i++) {
            int32_t id = history[i];
            if (id < 0 || id >= V) continue;
            float v = logits[id];
            w[id] = v < 0 ? v * p->repeat_penalty : v / p->repeat_penalty;
        }
    }
    if (p->temperature <= 0.0f) return argmax_f32(w, V);

    cand *c = malloc((size_t)V * sizeof *c);
    if (!c) return argmax_f32(w, V);
    for (int i = 0; i < V; i++) c[i] = (cand){w[i] / p->temperature, i};
    qsort(c, (size_t)V, sizeof *c, cmp_cand);
    int n = V;
    if (p->top_k > 0 && p->top_k < n) {
        int k = p->top_k; /* keep ties with the k-th value, as transformers does */
        while (k < n && c[k].v == c[p->top_k - 1].v) k++;
        n = k;
    }
    /* softmax over the kept candidates (in f64: the draw must not depend on rounding luck) */
    double mx = c[0].v, sum = 0.0;
    double *pr = malloc((size_t)n * sizeof *pr);
    if (!pr) {
        int32_t id = c[0].id;
        free(c);
        return id;
    }
    for (int i = 0; i < n; i++) sum += (pr[i] = exp((double)c[i].v - mx));
    for (int i = 0; i < n; i++) pr[i] /= sum;
    if (p->top_p < 1.0f) {
        /* keep the smallest prefix whose mass reaches top_p (at least one) */
        double cum = 0.0;
        int k = 0;
        while (k < n) {
            cum += pr[k++];
            if (cum >= p->top_p) break;
        }
        n = k;
    }
    if (p->min_p > 0.0f) {
        double thr = pr[0] * p->min_p;
        int k = 1;
        while (k < n && pr[k] >= thr) k++;
        n = k;
    }
    double tot = 0.0;
    for (int i = 0; i < n; i++) tot += pr[i];
    double r = next_unit(s) * tot, cum = 0.0;
    int32_t id = c[n - 1].id;
    for (int i = 0; i < n; i++) {
        cum += pr[i];
        if (r < cum) {
            id = c[i].id;
            break;
        }
    }
    free(pr);
    free(c);
    return id;
}
