/* moe.c - routing of an expert layer (moe.h): softmax, top-k with torch's tie order, renorm.
 *
 * torch.topk on the CPU (aten/src/ATen/native/TopKImpl.h) fills a queue of (value, index)
 * pairs in index order and runs libstdc++'s std::partial_sort (k * 64 <= n) or
 * std::nth_element + std::sort over it with comp(a, b) = (isnan(a) && !isnan(b)) || a > b.
 * Equal values are not ordered by index, so the order of tied experts is whatever those
 * algorithms leave: reproduced here move for move (GCC's bits/stl_heap.h and stl_algo.h).
 * Measured with torch 2.15 on all-equal inputs: n 8, k 2 gives 6, 5; n 128, k 8 gives 84, 87,
 * 86, 85, 82, 81, 88, 83; n 1024, k 8 gives 7, 4, 1, 3, 5, 0, 2, 6 (tests/unit/test_moe.c). */
#include "moe.h"

#include <math.h>

typedef moe_pair P;

static int comp(const P *a, const P *b) { return (isnan(a->v) && !isnan(b->v)) || a->v > b->v; }

static void swap(P *a, P *b) {
    P t = *a;
    *a = *b;
    *b = t;
}

/* ---- heaps (stl_heap.h) --------------------------------------------------------------- */

static void push_heap(P *f, long hole, long top, P value) {
    long parent = (hole - 1) / 2;
    while (hole > top && comp(&f[parent], &value)) {
        f[hole] = f[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    f[hole] = value;
}

static void adjust_heap(P *f, long hole, long len, P value) {
    long top = hole, second = hole;
    while (second < (len - 1) / 2) {
        second = 2 * (second + 1);
        if (comp(&f[second], &f[second - 1])) second--;
        f[hole] = f[second];
        hole = second;
    }
    if ((len & 1) == 0 && second == (len - 2) / 2) {
        second = 2 * (second + 1);
        f[hole] = f[second - 1];
        hole = second - 1;
    }
    push_heap(f, hole, top, value);
}

static void make_heap(P *f, long len) {
    if (len < 2) return;
    for (long parent = (len - 2) / 2;; parent--) {
        adjust_heap(f, parent, len, f[parent]);
        if (parent == 0) return;
    }
}

static void pop_heap(P *f, long len, P *result) {
    P value = *result;
    *result = f[0];
    adjust_heap(f, 0, len, value);
}

static void heap_select(P *f, long middle, long last) {
    make_heap(f, middle);
    for (long i = middle; i < last; i++)
        if (comp(&f[i], &f[0])) pop_heap(f, middle, &f[i]);
}

static void sort_heap(P *f, long len) {
    while (len > 1) {
        len--;
        pop_heap(f, len, &f[len]);
    }
}

/* ---- introselect / introsort (stl_algo.h) ------------------------------------------------ */

static long lg(long n) {
    long r = 0;
    while (n >>= 1) r++;
    return r;
}

static void move_median_to_first(P *result, P *a, P *b, P *c) {
    if (comp(a, b)) {
        if (comp(b, c)) swap(result, b);
        else if (comp(a, c)) swap(result, c);
        else swap(result, a);
    } else if (comp(a, c)) {
        swap(result, a);
    } else if (comp(b, c)) {
        swap(result, c);
    } else {
        swap(result, b);
    }
}

static P *unguarded_partition(P *first, P *last, P *pivot) {
    for (;;) {
        while (comp(first, pivot)) first++;
        last--;
        while (comp(pivot, last)) last--;
        if (!(first < last)) return first;
        swap(first, last);
        first++;
    }
}

static P *partition_pivot(P *first, P *last) {
    P *mid = first + (last - first) / 2;
    move_median_to_first(first, first + 1, mid, last - 1);
    return unguarded_partition(first + 1, last, first);
}

static void unguarded_linear_insert(P *last) {
    P val = *last, *next = last - 1;
    while (comp(&val, next)) {
        *last = *next;
        last = next;
        next--;
    }
    *last = val;
}

static void insertion_sort(P *first, P *last) {
    if (first == last) return;
    for (P *i = first + 1; i != last; i++) {
        if (comp(i, first)) {
            P val = *i;
            for (P *j = i; j > first; j--) *j = j[-1];
            *first = val;
        } else {
            unguarded_linear_insert(i);
        }
    }
}

static void introselect(P *first, P *nth, P *last, long depth) {
    while (last - first > 3) {
        if (depth == 0) {
            heap_select(first, nth - first + 1, last - first);
            swap(first, nth);
            return;
        }
        depth--;
        P *cut = partition_pivot(first, last);
        if (cut <= nth) first = cut;
        else last = cut;
    }
    insertion_sort(first, last);
}

#define SORT_THRESHOLD 16

static void introsort_loop(P *first, P *last, long depth) {
    while (last - first > SORT_THRESHOLD) {
        if (depth == 0) { /* std::__partial_sort(first, last, last) */
            heap_select(first, last - first, last - first);
            sort_heap(first, last - first);
            return;
        }
        depth--;
        P *cut = partition_pivot(first, last);
        introsort_loop(cut, last, depth);
        last = cut;
    }
}

static void std_sort(P *first, P *last) {
    if (first == last) return;
    introsort_loop(first, last, 2 * lg(last - first));
    if (last - first > SORT_THRESHOLD) {
        insertion_sort(first, first + SORT_THRESHOLD);
        for (P *i = first + SORT_THRESHOLD; i != last; i++) unguarded_linear_insert(i);
    } else {
        insertion_sort(first, last);
    }
}

void moe_topk(const float *v, int n, int k, int *idx, moe_pair *q) {
    for (int i = 0; i < n; i++) q[i] = (P){v[i], i};
    if ((long)k * 64 <= n) {
        heap_select(q, k, n); /* std::partial_sort */
        sort_heap(q, k);
    } else {
        introselect(q, q + k - 1, q + n, 2 * lg(n)); /* std::nth_element */
        std_sort(q, q + k - 1);
    }
    for (int i = 0; i < k; i++) idx[i] = q[i].i;
}

/* torch's softmax over the last dim in f32: the max, e^(x - max), their sum in order,
 * then each times 1 / sum (ATen's vectorized kernel multiplies by the reciprocal). */
static void softmax(float *p, const float *z, int n) {
    float mx = z[0], sum = 0.0f;
    for (int i = 1; i < n; i++) mx = z[i] > mx ? z[i] : mx;
    for (int i = 0; i < n; i++) sum += p[i] = expf(z[i] - mx);
    float inv = 1.0f / sum;
    for (int i = 0; i < n; i++) p[i] *= inv;
}

void moe_route_sigmoid(int renorm, float scale, const float *bias, const float *z, int n, int k, int *ids, float *w,
                       float *p, moe_pair *scratch) {
    for (int i = 0; i < n; i++) p[i] = 1.0f / (1.0f + expf(-z[i])) + (bias ? bias[i] : 0.0f); /* torch.sigmoid, f32 */
    moe_topk(p, n, k, ids, scratch);
    float sum = 0.0f;
    for (int i = 0; i < k; i++) sum += w[i] = 1.0f / (1.0f + expf(-z[ids[i]]));
    for (int i = 0; i < k; i++) {
        if (renorm) w[i] /= sum + 1e-6f;
        w[i] *= scale;
    }
}

void moe_route(moe_router router, int renorm, const float *z, int n, int k, int *ids, float *w, float *p,
               moe_pair *scratch) {
    if (router == MOE_TOPK_SOFTMAX) {
        float zk[MOE_MAX_USED];
        moe_topk(z, n, k, ids, scratch);
        for (int i = 0; i < k; i++) zk[i] = z[ids[i]];
        softmax(w, zk, k);
        return;
    }
    softmax(p, z, n);
    moe_topk(p, n, k, ids, scratch);
    float sum = 0.0f;
    for (int i = 0; i < k; i++) sum += w[i] = p[ids[i]];
    if (renorm)
        for (int i = 0; i < k; i++) w[i] /= sum;
}
