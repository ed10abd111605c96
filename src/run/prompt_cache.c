/* prompt_cache.c - a session's cache in a file (--prompt-cache; llmgen_session_save /
 * llmgen_session_load of llmgen.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handles.h"
#include "base/util.h"

/* ---- the cache in a file (--prompt-cache) ---------------------------------------------
 *
 * "LLMGENKV", u32 version 1, u32 n + the fingerprint (n bytes), u32 pos, pos i32 ids,
 * u64 n + the cache bytes (kv_cache_io), u64 FNV-1a of everything before it. The
 * fingerprint names everything a result depends on: the model file (real path, size,
 * modification time), its architecture and weight types, the mode, the kernel set
 * (fast-mode bits differ between them) with the activations its kernels ask for
 * (kernels.act_group: AVX-512 with VNNI quantizes Q4_K inputs per 256, older builds
 * per 32 under the same kernel-set name), and the cache layout. */

#define KV_MAGIC "LLMGENKV"

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static int fingerprint(const llmgen_session *s, char *out, size_t n, char *err, size_t errlen) {
    const model *m = s->owner->m;
    const model_config *c = &m->cfg;
    struct stat st;
    char *real = realpath(m->path, NULL);
    if (!real || stat(real, &st)) {
        free(real);
        snprintf(err, errlen, "%s: %s", m->path, strerror(errno));
        return -1;
    }
    /* a model with sliding layers also names its ring (kv_ring_size, a constant of the
     * model): a session whose context is no longer keeps those layers whole, the same
     * bytes for every position its file can hold (pos <= that context <= ring) */
    int ring = kv_ring_size(c);
    char ring_s[32] = "";
    if (ring) snprintf(ring_s, sizeof ring_s, "|ring %d", ring);
    char act[128] = "";
    for (int t = 0, k = 0; t < DT_COUNT && k < (int)sizeof act - 24; t++)
        if (m->kern->act_group[t]) k += snprintf(act + k, sizeof act - (size_t)k, "|act %s/%d", dtype_name((dtype)t), 32 * m->kern->act_group[t]);
    snprintf(out, n, "llmgen kv 1|model %s|size %lld|mtime %lld.%09ld|%s|%s|%s|kernels %s%s|cache %s|%dx%dx%d|rot %d%s",
             real, (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, c->arch, m->weight_types,
             s->st.fast ? "fast" : "exact", m->kern->name, act, dtype_name(s->st.kv.type), c->n_layers, c->n_kv_heads,
             c->head_dim, c->rot_dim, ring_s);
    free(real);
    return 0;
}

/* What differs between two fingerprints, in words: the first field that does. */
static const char *fingerprint_diff(const char *a, size_t na, const char *b) {
    static const struct { const char *field, *why; } fields[] = {
        {"llmgen kv", "of another format version"},
        {"model ", "made with another model file (or the file has changed since)"},
        {"size ", "made with another model file (or the file has changed since)"},
        {"mtime ", "made with another model file (or the file has changed since)"},
        {"kernels ", "made with other options: another kernel set (--kernels)"},
        {"act ", "made with other options: another kernel set (--kernels)"},
        {"cache ", "made with another cache layout"},
        {"rot ", "made with another cache layout"},
        {"ring ", "made with another cache layout"},
    };
    size_t i = 0;
    while (i < na && b[i] && a[i] == b[i]) i++;
    while (i > 0 && a[i - 1] != '|') i--; /* the start of the field that differs */
    const char *f = a + i;
    if (!strncmp(f, "fast", 4) || !strncmp(f, "exact", 5)) return "made with other options: another mode (--exact)";
    if (*f >= '0' && *f <= '9') return "made with another cache layout"; /* layers x kv heads x head size */
    for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
        if (!strncmp(f, fields[k].field, strlen(fields[k].field))) return fields[k].why;
    return i == 0 ? "of another format version" : "made with another model (architecture, weight types or shape)";
}

/* 1 if the file at path is missing or starts as an llmgen prompt cache, else 0. */
static int replaceable(const char *path) {
    char magic[8];
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT;
    int ok = fread(magic, 1, 8, f) == 8 && !memcmp(magic, KV_MAGIC, 8);
    fclose(f);
    return ok;
}

llmgen_status llmgen_session_save(llmgen_session *s, const char *path, char *err, size_t errlen) {
    char fp[1024];
    if (fingerprint(s, fp, sizeof fp, err, errlen)) return LLMGEN_E_IO;
    if (!replaceable(path)) {
        if (err && errlen)
            snprintf(err, errlen, "%s: not an llmgen prompt cache: it is left as it is (give another path)", path);
        return LLMGEN_E_USAGE;
    }
    const model_config *c = &s->owner->m->cfg;
    uint32_t ver = 1, nfp = (uint32_t)strlen(fp), pos = (uint32_t)s->pos;
    uint64_t nb = kv_cache_io(&s->st.kv, c, s->pos, NULL, 1);
    void *cache = malloc(nb ? nb : 1);
    if (!cache) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    kv_cache_io(&s->st.kv, c, s->pos, cache, 1);
    /* written whole to a new file beside it first, then renamed: a killed save never
     * leaves half a cache, and the rename is atomic within the directory */
    size_t tn = strlen(path) + 32;
    char *tmp = malloc(tn);
    int fd = -1;
    for (int k = 0; tmp && fd < 0 && k < 100; k++) {
        snprintf(tmp, tn, "%s.tmp%ld.%d", path, (long)getpid(), k);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f && fd >= 0) close(fd);
    uint64_t h = 1469598103934665603ull;
    int ok = f != NULL;
#define PUT(p, n) (ok = ok && fwrite((p), 1, (n), f) == (n), h = fnv1a(h, (p), (n)))
    PUT(KV_MAGIC, 8);
    PUT(&ver, 4);
    PUT(&nfp, 4);
    PUT(fp, nfp);
    PUT(&pos, 4);
    PUT(s->fed, (size_t)pos * 4);
    PUT(&nb, 8);
    PUT(cache, nb);
#undef PUT
    ok = ok && fwrite(&h, 1, 8, f) == 8;
    ok = ok && !fflush(f) && !fsync(fileno(f));
    if (f && fclose(f)) ok = 0;
    free(cache);
    int e = errno;
    if (!ok || rename(tmp, path)) {
        e = errno ? errno : e;
        if (tmp && fd >= 0) unlink(tmp);
        if (err && errlen) snprintf(err, errlen, "%s: cannot write the prompt cache: %s", path, strerror(e ? e : EIO));
        free(tmp);
        return LLMGEN_E_IO;
    }
    free(tmp);
    return LLMGEN_OK;
}

llmgen_status llmgen_session_load(llmgen_session *s, const char *path, char *err, size_t errlen) {
    char fp[1024];
    if (fingerprint(s, fp, sizeof fp, err, errlen)) return LLMGEN_E_IO;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && errlen) snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return LLMGEN_E_IO;
    }
    struct stat st;
    size_t n = fstat(fileno(f), &st) ? 0 : (size_t)st.st_size;
    unsigned char *b = malloc(n ? n : 1);
    int rd = b && fread(b, 1, n, f) == n;
    int e = errno;
    fclose(f);
    if (!rd) {
        free(b);
        if (err && errlen) snprintf(err, errlen, "%s: %s", path, b ? strerror(e ? e : EIO) : "out of memory");
        return b ? LLMGEN_E_IO : LLMGEN_E_NOMEM;
    }
    if (n < 8 || memcmp(b, KV_MAGIC, 8)) {
        free(b);
        if (err && errlen) snprintf(err, errlen, "%s: not an llmgen prompt cache", path);
        return LLMGEN_E_USAGE;
    }
    const char *why = NULL;
    uint32_t ver, nfp, pos = 0;
    uint64_t nb = 0, h;
    size_t at = 0;
    /* the lengths first: a cut file is "truncated" whatever else it holds */
    if (n < 16) why = "truncated";
    else if (memcpy(&ver, b + 8, 4), ver != 1) why = "of an unknown version";
    else if (memcpy(&nfp, b + 12, 4), (at = 16 + (size_t)nfp) + 4 > n) why = "truncated";
    else if (memcpy(&pos, b + at, 4), (at += 4 + (size_t)pos * 4) + 8 > n) why = "truncated";
    else if (memcpy(&nb, b + at, 8), nb > n || at + 8 + nb + 8 > n) why = "truncated";
    else if (at + 8 + nb + 8 != n) why = "damaged (bytes after its end)";
    else if (memcpy(&h, b + n - 8, 8), h != fnv1a(1469598103934665603ull, b, n - 8)) why = "damaged (checksum)";
    else if (nfp != strlen(fp) || memcmp(b + 16, fp, nfp)) why = fingerprint_diff((const char *)b + 16, nfp, fp);
    else if (pos > (uint32_t)s->st.ctx) why = "longer than this session's context";
    else if (nb != kv_cache_io(&s->st.kv, &s->owner->m->cfg, (int)pos, NULL, 0)) why = "made with another cache layout";
    if (why) {
        free(b);
        if (err && errlen) snprintf(err, errlen, "%s: prompt cache %s", path, why);
        return LLMGEN_E_FORMAT;
    }
    for (uint32_t i = 0; i < pos; i++) {
        int32_t id;
        memcpy(&id, b + 20 + nfp + 4 * (size_t)i, 4);
        if (id < 0 || id >= s->owner->m->cfg.vocab_size) {
            free(b);
            if (err && errlen) snprintf(err, errlen, "%s: prompt cache holds a token outside the vocabulary", path);
            return LLMGEN_E_FORMAT;
        }
        s->fed[i] = id;
    }
    kv_cache_io(&s->st.kv, &s->owner->m->cfg, (int)pos, b + at + 8, 0);
    s->pos = (int)pos;
    free(b);
    return LLMGEN_OK;
}
