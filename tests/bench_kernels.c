/* bench_kernels.c - single-thread speed of every matmul kernel table here.
 *
 *   make build/bench_kernels && build/bench_kernels
 *
 * For each weight dtype and ISA table: GEMV (nt = 1, decode) in GB/s of weight
 * bytes, on a 2048 x 8192 matrix (a Llama-3.2-1B MLP projection) and a
 * 576 x 1536 one (SmolLM2-135M), both as they sit in cache after the first call
 * ("warm"), and for the large shape also streamed from DRAM ("cold": the call
 * rotates over copies that together exceed the last-level cache; also shown as
 * a share of a streaming sum measured just before it). Prefill
 * (nt = 16) is reported in GFLOP/s. The read bandwidth of a plain streaming
 * sum over 512 MiB is printed first: the floor a decode step cannot beat.
 * Then the fast-mode int8-activation kernels (matmul_q8 on repacked Q4_0 /
 * Q4_1 / Q8_0 / Q4_1G64 (MLX 4-bit g64), kernels.h) the same way, prefill at nt = 64 and a decode step of 8 sequences (nt = 8) in GOP/s.
 * Optional arguments filter what runs: dtype names and/or ISA names
 * (`build/bench_kernels BF16 Q4_1 avx512`; "q8" runs only the int8 part,
 * "steps" only its decode steps of 4 and 8 sequences on SmolLM2's shapes, warm
 * and streamed from DRAM; "pack" only the load-time packers of Q4_K and Q6_K,
 * the type table's portable one against each table's kernels.pack_rows).
 * Not part of `make test`; numbers are for comparison within one run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"
#include "base/tensor.h"
#include "base/util.h"

#if defined(__x86_64__)
const kernels *kernels_avx512_table(int level);
#endif

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_unit(uint64_t *s) { return (float)((double)(rng_next(s) >> 40) / (double)(1ull << 23) - 1.0); }

/* Random weights in dtype dt's layout, with sane fp16 scales in quantized blocks. */
static void fill(dtype dt, uint8_t *w, size_t nbytes, int cols, uint64_t *s) {
    for (size_t i = 0; i < nbytes; i++) w[i] = (uint8_t)rng_next(s);
    if (dt == DT_F32) {
        for (size_t i = 0; i + 4 <= nbytes; i += 4) {
            float v = rng_unit(s);
            memcpy(w + i, &v, 4);
        }
    } else if (dt == DT_F16 || dt == DT_BF16) {
        for (size_t i = 0; i + 2 <= nbytes; i += 2) {
            uint16_t h = dt == DT_F16 ? f32_to_f16(rng_unit(s)) : f32_to_bf16(rng_unit(s));
            memcpy(w + i, &h, 2);
        }
    } else {
        size_t bb = (size_t)dtype_block_bytes(dt);
        for (size_t i = 0; i + bb <= nbytes; i += bb) {
            uint16_t d = f32_to_f16(0.01f), m = f32_to_f16(-0.05f);
            memcpy(w + i, &d, 2);
            if (dt == DT_Q4_1) memcpy(w + i + 2, &m, 2);
        }
    }
    (void)cols;
}

/* Best-of-`reps` read bandwidth of a streaming sum over `mib` MiB (GB/s). */
static double stream_bandwidth(int mib, int reps) {
    size_t n = ((size_t)mib << 20) / sizeof(uint64_t);
    uint64_t *a = malloc(n * sizeof(uint64_t));
    if (!a) return 0.0;
    for (size_t i = 0; i < n; i++) a[i] = i;
    double best = 0.0;
    volatile uint64_t sink = 0;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now_seconds();
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = 0; i < n; i += 4) {
            s0 += a[i];
            s1 += a[i + 1];
            s2 += a[i + 2];
            s3 += a[i + 3];
        }
        double dt = now_seconds() - t0;
        sink += s0 + s1 + s2 + s3;
        double gbs = (double)(n * sizeof(uint64_t)) / dt / 1e9;
        if (gbs > best) best = gbs;
    }
    (void)sink;
    free(a);
    return best;
}

typedef struct {
    int rows, cols;
} shape;

/* Seconds per call: the best pass over `ncopies` weight copies within about
 * `budget` seconds (best, not mean: the machine is shared, and noise only adds). */
static double time_calls(matmul_fn f, uint8_t **w, int ncopies, size_t rb, shape sh, const float *x,
                         int nt, float *y, double budget) {
    f(w[0], rb, sh.cols, 0, sh.rows, x, sh.cols, nt, y, sh.rows); /* warm-up, page faults */
    double best = 1e30, start = now_seconds();
    do {
        double t0 = now_seconds();
        for (int i = 0; i < ncopies; i++) f(w[i], rb, sh.cols, 0, sh.rows, x, sh.cols, nt, y, sh.rows);
        double t = (now_seconds() - t0) / ncopies;
        if (t < best) best = t;
    } while (now_seconds() - start < budget);
    return best;
}

/* Whether `name` passes the filter: no argument of that kind given, or named. */
static int wanted(int argc, char **argv, const char *name, const char *const *kind, int nkind) {
    int any = 0;
    for (int i = 1; i < argc; i++)
        for (int j = 0; j < nkind; j++)
            if (!strcmp(argv[i], kind[j])) {
                any = 1;
                if (!strcmp(argv[i], name)) return 1;
            }
    return !any;
}

/* A repacked (rows, cols) matrix of random payload with sane f16 scales (and
 * mins) at the places kernels.h gives them. */
static void fill_packed(dtype dt, uint8_t *p, size_t n, int rows, int cols, uint64_t *s) {
    int nb = cols / 32;
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rng_next(s);
    uint16_t d = f32_to_f16(0.01f), m = f32_to_f16(-0.05f);
    for (int r = 0; r < rows; r++)
        for (int b = 0; b < nb; b++) {
            q8w_chunk c = q8w_chunk_at(dt, rows, nb, r, b / 4);
            size_t at = c.off + 2 * (size_t)q8w_scale_idx(dt, &c, r % Q8W_GROUP, b % 4);
            memcpy(p + at, &d, 2);
            if (q8w_has_min(dt)) memcpy(p + at + 2 * (size_t)q8w_nscales(dt, &c), &m, 2);
        }
}

/* A GGUF matrix in its file layout (the types the int8 kernels read in place): random
 * bytes, every f16 scale field set to a small normal value (no NaN / subnormal timings). */
static void fill_file(dtype dt, uint8_t *p, size_t n, uint64_t *s) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rng_next(s);
    int bb = dtype_block_bytes(dt), offs[2] = {0, -1};
    if (dt == DT_Q6_K) offs[0] = 208;
    if (dt == DT_Q3_K) offs[0] = 108;
    if (dt == DT_Q2_K) offs[0] = 80, offs[1] = 82;
    if (dt == DT_Q4_K || dt == DT_Q5_K || dt == DT_Q5_1) offs[1] = 2;
    uint16_t d = f32_to_f16(0.01f);
    for (size_t b = 0; b + (size_t)bb <= n; b += (size_t)bb)
        for (int k = 0; k < 2; k++)
            if (offs[k] >= 0) memcpy(p + b + offs[k], &d, 2);
}

/* The types packed in layouts of their own (the type table's packer is not the plain one). */
static int own_layout(dtype dt) {
    return DTYPE_TRAITS[dt].packs_as == dt && DTYPE_TRAITS[dt].pk.pack_rows != q8w_pack_rows;
}

/* A type of own_layout: a file-layout matrix packed (kernels.h) into p (q8w_matrix_bytes). 0: out of memory. */
static int fill_own(dtype dt, uint8_t *p, shape sh, uint64_t *s) {
    size_t n = dtype_row_bytes(dt, sh.cols) * sh.rows;
    uint8_t *f = malloc(n);
    if (!f) return 0;
    fill_file(dt, f, n, s);
    DTYPE_TRAITS[dt].pk.pack_rows(dt, f, sh.rows, sh.cols, 0, sh.rows, p);
    free(f);
    return 1;
}

/* The bytes of copies a "cold" timing rotates over: well above any L3 seen here (32 to 260 MiB). */
#define COLD_BYTES ((size_t)512 << 20)

/* CPU seconds of this thread: on a shared, oversubscribed machine the time the
 * thread was descheduled does not count against the kernel. */
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* As time_calls, for a matmul_q8 kernel, in thread CPU time. */
static double time_q8(matmul_q8_fn f, uint8_t **w, int ncopies, shape sh, const q8_act *x, float *y, double budget) {
    f(w[0], sh.rows, sh.cols, 0, sh.rows, x, y, sh.rows);
    double best = 1e30, start = now_seconds();
    do {
        double t0 = cpu_seconds();
        for (int i = 0; i < ncopies; i++) f(w[i], sh.rows, sh.cols, 0, sh.rows, x, y, sh.rows);
        double t = (cpu_seconds() - t0) / ncopies;
        if (t < best) best = t;
    } while (now_seconds() - start < budget);
    return best;
}

/* Decode steps of several sequences on SmolLM2-135M's shapes (the q, o / gate,
 * up / down projections and the 49152-row lm_head), nt = 4 and 8, GOP/s: the
 * 4..15-token tiles a --parallel run spends most of its time in. Weights in
 * cache but for the lm_head's (16 to 30 MB); then a "cold" line for the three
 * layer shapes, the call rotating over copies that span COLD_BYTES, as a
 * model's decode step streams them from DRAM. Repacked types only (Q4_0,
 * Q4_1, Q8_0, Q4_1G64). */
static int bench_q8_steps(int argc, char **argv, const char *const *dt_names, const char *const *isa_names) {
    const shape shapes[] = {{576, 576}, {1536, 576}, {576, 1536}, {49152, 576}};
    const int nts[] = {4, 8}, ns = (int)(sizeof shapes / sizeof shapes[0]);
    enum { NL = 3 }; /* the layer shapes, timed cold too: all but the lm_head */
    const dtype dts[] = {DT_Q4_0, DT_Q4_1, DT_Q8_0, DT_Q4_1G64};
    struct {
        const kernels *k;
        const char *label;
    } tabs[] = {{kernels_avx2(), "avx2"}, {kernels_avx512(), "avx512"}, {NULL, "avx512-novnni"}};
#if defined(__x86_64__)
    if (kernels_avx512()) tabs[2].k = kernels_avx512_table(0);
#endif
    printf("\ndecode steps of nt sequences, SmolLM2-135M shapes (rows x cols), GOP/s, 1 thread\n");
    printf("%-7s %-14s %3s %10s %10s %10s %10s\n", "dtype", "isa", "nt", "576x576", "1536x576", "576x1536", "49152x576");
    uint64_t seed = 11;
    const int maxc = 1536, maxt = 8;
    float *xf = malloc(sizeof(float) * maxc * maxt), *y = malloc(sizeof(float) * (size_t)49152 * maxt);
    q8_act x = {.nt = maxt, .cols = maxc, .quads = q8_quads(maxc)};
    x.q = malloc((size_t)maxt * x.quads * 128);
    x.d = malloc(sizeof(float) * (size_t)maxt * x.quads * 4);
    x.s = malloc(sizeof(float) * (size_t)maxt * x.quads * 4);
    uint8_t *w[4] = {0}, **cold[NL] = {0};
    int ncold[NL] = {0};
    if (!xf || !y || !x.q || !x.d || !x.s) return 1;
    for (int i = 0; i < maxc * maxt; i++) xf[i] = rng_unit(&seed);
    for (int d = 0; d < (int)(sizeof dts / sizeof dts[0]); d++) {
        dtype dt = dts[d];
        if (!wanted(argc, argv, dtype_name(dt), dt_names, 16)) continue;
        for (int i = 0; i < ns; i++) {
            size_t n = dtype_row_bytes(dt, shapes[i].cols) * shapes[i].rows;
            if (!(w[i] = aligned_alloc(64, (n + 63) / 64 * 64))) return 1;
            fill_packed(dt, w[i], n, shapes[i].rows, shapes[i].cols, &seed);
            if (i < NL) { /* the copies the cold line rotates over */
                ncold[i] = (int)(COLD_BYTES / n) + 1;
                if (!(cold[i] = calloc((size_t)ncold[i], sizeof *cold[i]))) return 1;
                for (int c = 0; c < ncold[i]; c++) {
                    if (!(cold[i][c] = aligned_alloc(64, (n + 63) / 64 * 64))) return 1;
                    memcpy(cold[i][c], w[i], n);
                }
            }
        }
        for (int k = 0; k < 3; k++) {
            if (!tabs[k].k || !tabs[k].k->matmul_q8[dt] || !wanted(argc, argv, tabs[k].k->name, isa_names, 4)) continue;
            matmul_q8_fn f = tabs[k].k->matmul_q8[dt];
            for (int j = 0; j < 2; j++) {
                printf("%-7s %-14s %3d", dtype_name(dt), tabs[k].label, nts[j]);
                for (int cl = 0; cl < 2; cl++) {
                    if (cl) printf("%-7s %-14s %3s", "", "  cold", "");
                    for (int i = 0; i < (cl ? NL : ns); i++) {
                        q8_act xi = {.nt = nts[j], .cols = shapes[i].cols, .quads = q8_quads(shapes[i].cols), .q = x.q, .d = x.d, .s = x.s};
                        kernels_scalar()->quantize_act(xf, shapes[i].cols, 0, nts[j], &xi);
                        double t = cl ? time_q8(f, cold[i], ncold[i], shapes[i], &xi, y, 0.5)
                                      : time_q8(f, &w[i], 1, shapes[i], &xi, y, 0.25);
                        printf(" %10.1f", 2.0 * shapes[i].rows * shapes[i].cols * nts[j] / t / 1e9);
                    }
                    printf("\n");
                    fflush(stdout);
                }
            }
        }
        for (int i = 0; i < ns; i++) free(w[i]), w[i] = NULL;
        for (int i = 0; i < NL; i++) {
            for (int c = 0; c < ncold[i]; c++) free(cold[i][c]);
            free(cold[i]);
            cold[i] = NULL;
            ncold[i] = 0;
        }
    }
    free(xf);
    free(y);
    free(x.q);
    free(x.d);
    free(x.s);
    return 0;
}

/* The int8-activation kernels: GEMV GB/s (cold, warm) and prefill GOP/s. */
static int bench_q8(int argc, char **argv, const char *const *dt_names, const char *const *isa_names) {
    const shape big = {2048, 8192}, small = {576, 1536};
    const int ntp = 64;
    const dtype dts[] = {DT_Q4_0, DT_Q4_1,  DT_Q8_0, DT_Q4_1G64, DT_Q5_0,   DT_Q6_K,
                         DT_IQ4_XS, DT_Q5_K, DT_Q5_1, DT_Q2_K,    DT_Q3_K,   DT_Q4_K, DT_IQ4_NL};
    struct {
        const kernels *k;
        const char *label;
    } tabs[] = {{kernels_avx2(), "avx2"}, {kernels_avx512(), "avx512"}, {NULL, "avx512-novnni"}, {NULL, "avx512-nogfni"}};
#if defined(__x86_64__)
    if (kernels_avx512()) tabs[2].k = kernels_avx512_table(0);
    if (kernels_avx512() && kernels_avx512() != kernels_avx512_table(1)) tabs[3].k = kernels_avx512_table(1); /* Q6_K without GFNI */
#endif
    printf("\nint8 activations (fast mode), repacked weights (Q5_0 and after: read in place, but Q4_K, Q5_0, Q5_1, Q6_K: packed)\n");
    printf("%-7s %-14s %10s %7s %10s %10s %14s %14s %14s\n", "dtype", "isa", "2048x8192", "of", "2048x8192", "576x1536",
           "prefill nt=64", "prefill nt=64", "batch nt=8");
    printf("%-7s %-14s %10s %7s %10s %10s %14s %14s %14s\n", "", "", "cold GB/s", "stream", "warm GB/s", "warm GB/s",
           "2048x8192 GOP/s", "576x1536", "576x1536 GOP/s");
    uint64_t seed = 7;
    float *xf = malloc(sizeof(float) * (size_t)big.cols * ntp), *y = malloc(sizeof(float) * (size_t)big.rows * ntp);
    q8_act x = {.nt = ntp, .cols = big.cols, .quads = q8_quads(big.cols)}, xs;
    x.q = malloc((size_t)ntp * x.quads * 128);
    x.d = malloc(sizeof(float) * (size_t)ntp * x.quads * 4);
    x.s = malloc(sizeof(float) * (size_t)ntp * x.quads * 4);
    if (!xf || !y || !x.q || !x.d || !x.s) return 1;
    for (int i = 0; i < big.cols * ntp; i++) xf[i] = rng_unit(&seed);
    kernels_scalar()->quantize_act(xf, big.cols, 0, ntp, &x);
    xs = x;
    xs.cols = small.cols;
    xs.quads = q8_quads(small.cols); /* the same buffers read with the small shape's stride */
    for (int d = 0; d < (int)(sizeof dts / sizeof dts[0]); d++) {
        dtype dt = dts[d];
        if (!wanted(argc, argv, dtype_name(dt), dt_names, 16)) continue;
        size_t bytes_big = dtype_row_bytes(dt, big.cols) * big.rows, bytes_small = dtype_row_bytes(dt, small.cols) * small.rows;
        int ncold = (int)(COLD_BYTES / bytes_big) + 1;
        /* Q6_K's packed form adds up to 48 bytes per group of 8 rows (its d table's padding), Q4_K's
         * 4 bytes per row and super-block (GB/s below count the file's bytes, as for the others) */
        size_t alloc_big = own_layout(dt) ? q8w_matrix_bytes(dt, big.rows, big.cols / 32) : bytes_big;
        size_t alloc_small = own_layout(dt) ? q8w_matrix_bytes(dt, small.rows, small.cols / 32) : bytes_small;
        uint8_t **wb = malloc(sizeof(uint8_t *) * ncold), *ws = aligned_alloc(64, (alloc_small + 63) / 64 * 64);
        if (!wb || !ws) return 1;
        for (int i = 0; i < ncold; i++) {
            if (!(wb[i] = aligned_alloc(64, (alloc_big + 63) / 64 * 64))) return 1;
            if (d < 4)
                fill_packed(dt, wb[i], bytes_big, big.rows, big.cols, &seed);
            else if (own_layout(dt) && !fill_own(dt, wb[i], big, &seed))
                return 1;
            else if (!own_layout(dt))
                fill_file(dt, wb[i], bytes_big, &seed);
        }
        if (d < 4)
            fill_packed(dt, ws, bytes_small, small.rows, small.cols, &seed);
        else if (own_layout(dt) && !fill_own(dt, ws, small, &seed))
            return 1;
        else if (!own_layout(dt))
            fill_file(dt, ws, bytes_small, &seed);
        for (int k = 0; k < 4; k++) {
            if (!tabs[k].k || !tabs[k].k->matmul_q8[dt] || !wanted(argc, argv, tabs[k].k->name, isa_names, 4)) continue;
            if (k == 3 && dt != DT_Q6_K) continue; /* the same kernels as "avx512" */
            matmul_q8_fn f = tabs[k].k->matmul_q8[dt];
            int group = tabs[k].k->act_group[dt] ? tabs[k].k->act_group[dt] : 1;
            if (group != (x.group ? x.group : 1)) { /* the activations forward.c would give this kernel */
                x.group = xs.group = group;
                kernels_scalar()->quantize_act(xf, big.cols, 0, ntp, &x);
            }
            q8_act x1 = x, xs1 = xs, xs8 = xs;
            x1.nt = xs1.nt = 1;
            xs8.nt = 8; /* a decode step of 8 sequences */
            double bw = stream_bandwidth(256, 3);
            double cold = time_q8(f, wb, ncold, big, &x1, y, 0.3);
            double warm = time_q8(f, wb, 1, big, &x1, y, 0.2);
            double warm_s = time_q8(f, &ws, 1, small, &xs1, y, 0.2);
            double pf = time_q8(f, wb, 1, big, &x, y, 0.4);
            double pf_s = time_q8(f, &ws, 1, small, &xs, y, 0.2);
            double b8 = time_q8(f, &ws, 1, small, &xs8, y, 0.2);
            double ops_big = 2.0 * big.rows * big.cols * ntp, ops_small = 2.0 * small.rows * small.cols * ntp;
            printf("%-7s %-14s %10.1f %6.0f%% %10.1f %10.1f %14.1f %14.1f %14.1f\n", dtype_name(dt), tabs[k].label,
                   bytes_big / cold / 1e9, 100.0 * bytes_big / cold / 1e9 / bw, bytes_big / warm / 1e9,
                   bytes_small / warm_s / 1e9, ops_big / pf / 1e9, ops_small / pf_s / 1e9, ops_small / ntp * 8 / b8 / 1e9);
            fflush(stdout);
        }
        for (int i = 0; i < ncold; i++) free(wb[i]);
        free(wb);
        free(ws);
    }
    free(xf);
    free(y);
    free(x.q);
    free(x.d);
    free(x.s);
    return bench_q8_steps(argc, argv, dt_names, isa_names);
}

/* The load-time packers (quant.h's pack_rows_fn): the type table's portable one ("portable")
 * and each table's own (kernels.pack_rows), one thread, as Q4_K and Q6_K, in GB/s of file
 * bytes (thread CPU time, best over a second; the output is written once before timing, so
 * no page faults are counted): the 14336 x 4096 FFN matrix of an 8B Llama (file and copy
 * from DRAM, as at load), and 256 rows of it (in cache). */
static int bench_pack(void) {
    const int cols = 4096, row_counts[] = {14336, 256};
    const dtype dts[] = {DT_Q4_K, DT_Q6_K};
    const kernels *tabs[] = {kernels_avx2(), kernels_avx512(), kernels_neon()};
    uint64_t seed = 7;
    printf("\npackers, 1 thread, GB/s of file bytes\n%-5s %-8s %12s %12s\n", "dtype", "packer", "14336x4096",
           "256x4096");
    for (int d = 0; d < 2; d++) {
        dtype dt = dts[d];
        for (int k = -1; k < 3; k++) {
            pack_rows_fn f = k < 0 ? DTYPE_TRAITS[dt].pk.pack_rows : tabs[k] ? tabs[k]->pack_rows[dt] : NULL;
            if (!f) continue;
            printf("%-5s %-8s", dtype_name(dt), k < 0 ? "portable" : tabs[k]->name);
            for (int s = 0; s < 2; s++) {
                int rows = row_counts[s];
                size_t n = dtype_row_bytes(dt, cols) * (size_t)rows, np = q8w_matrix_bytes(dt, rows, cols / 32);
                uint8_t *file = malloc(n), *out = aligned_alloc(64, (np + 63) / 64 * 64); /* as the arena */
                if (!file || !out) return 1;
                fill(dt, file, n, cols, &seed);
                f(dt, file, rows, cols, 0, rows, out);
                double best = 1e30, start = now_seconds();
                do {
                    double t0 = cpu_seconds();
                    f(dt, file, rows, cols, 0, rows, out);
                    double t = cpu_seconds() - t0;
                    if (t < best) best = t;
                } while (now_seconds() - start < 1.0);
                printf(" %7.2f GB/s", (double)n / best / 1e9);
                free(file), free(out);
            }
            printf("\n");
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    const kernels *tables[] = {kernels_scalar(), kernels_avx2(), kernels_avx512(), kernels_neon()};
    const dtype dts[] = {DT_F32, DT_F16, DT_BF16, DT_Q8_0, DT_Q4_0, DT_Q4_1};
    const shape big = {2048, 8192}, small = {576, 1536};
    const int nt_prefill = 16;

    static const char *const dt_names[] = {"F32",  "F16",    "BF16", "Q8_0", "Q4_0", "Q4_1",  "Q4_1G64", "Q5_0",
                                           "Q6_K", "IQ4_XS", "Q5_K", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "IQ4_NL"};
    static const char *const isa_names[] = {"scalar", "avx2", "avx512", "neon"};
    printf("streaming-sum read bandwidth, 512 MiB, 1 thread: %.1f GB/s\n", stream_bandwidth(512, 5));
    printf("auto-selected table: %s\n", kernels_select(NULL)->name);
    int only_q8 = 0, only_steps = 0, only_pack = 0;
    for (int i = 1; i < argc; i++)
        only_q8 |= !strcmp(argv[i], "q8"), only_steps |= !strcmp(argv[i], "steps"), only_pack |= !strcmp(argv[i], "pack");
    if (only_pack) return bench_pack();
    if (only_steps) return bench_q8_steps(argc, argv, dt_names, isa_names);
    if (only_q8) return bench_q8(argc, argv, dt_names, isa_names);
    printf("\n%-5s %-7s %10s %7s %10s %10s %14s %14s\n", "dtype", "isa", "2048x8192", "of", "2048x8192",
           "576x1536", "prefill nt=16", "prefill nt=16");
    printf("%-5s %-7s %10s %7s %10s %10s %14s %14s\n", "", "", "cold GB/s", "stream", "warm GB/s",
           "warm GB/s", "2048x8192", "576x1536");

    uint64_t seed = 42;
    float *x = malloc(sizeof(float) * (size_t)big.cols * nt_prefill);
    float *y = malloc(sizeof(float) * (size_t)big.rows * nt_prefill);
    if (!x || !y) return 1;
    for (int i = 0; i < big.cols * nt_prefill; i++) x[i] = rng_unit(&seed);

    for (int d = 0; d < (int)(sizeof dts / sizeof dts[0]); d++) {
        dtype dt = dts[d];
        if (!wanted(argc, argv, dtype_name(dt), dt_names, 16)) continue;
        size_t rb_big = dtype_row_bytes(dt, big.cols), rb_small = dtype_row_bytes(dt, small.cols);
        size_t bytes_big = rb_big * big.rows, bytes_small = rb_small * small.rows;
        int ncold = (int)(COLD_BYTES / bytes_big) + 1;
        uint8_t **wb = malloc(sizeof(uint8_t *) * ncold), *ws = malloc(bytes_small);
        if (!wb || !ws) return 1;
        for (int i = 0; i < ncold; i++) {
            if (!(wb[i] = malloc(bytes_big))) return 1;
            fill(dt, wb[i], bytes_big, big.cols, &seed);
        }
        fill(dt, ws, bytes_small, small.cols, &seed);
        for (int k = 0; k < (int)(sizeof tables / sizeof tables[0]); k++) {
            if (!tables[k] || !wanted(argc, argv, tables[k]->name, isa_names, 4)) continue;
            matmul_fn f = tables[k]->matmul[dt];
            double bw = stream_bandwidth(256, 3); /* right before: the shared machine drifts */
            double cold = time_calls(f, wb, ncold, rb_big, big, x, 1, y, 0.3);
            double warm = time_calls(f, wb, 1, rb_big, big, x, 1, y, 0.2);
            double warm_s = time_calls(f, &ws, 1, rb_small, small, x, 1, y, 0.2);
            double pf = time_calls(f, wb, 1, rb_big, big, x, nt_prefill, y, 0.3);
            double pf_s = time_calls(f, &ws, 1, rb_small, small, x, nt_prefill, y, 0.2);
            double flop_big = 2.0 * big.rows * big.cols * nt_prefill, flop_small = 2.0 * small.rows * small.cols * nt_prefill;
            printf("%-5s %-7s %10.1f %6.0f%% %10.1f %10.1f %14.1f %14.1f\n", dtype_name(dt), tables[k]->name,
                   bytes_big / cold / 1e9, 100.0 * bytes_big / cold / 1e9 / bw, bytes_big / warm / 1e9,
                   bytes_small / warm_s / 1e9, flop_big / pf / 1e9, flop_small / pf_s / 1e9);
            fflush(stdout);
        }
        for (int i = 0; i < ncold; i++) free(wb[i]);
        free(wb);
        free(ws);
    }
    printf("\nGB/s = weight bytes / seconds per call (single thread, best pass); \"of stream\" = cold GB/s over a\n"
           "256 MiB streaming sum measured just before; prefill in GFLOP/s (2*rows*cols*nt).\n");
    free(x);
    free(y);
    return bench_q8(argc, argv, dt_names, isa_names);
}
