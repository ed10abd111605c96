/* fuzz_prompt_cache.c - libFuzzer target: the --prompt-cache file reader
 * (llmgen_session_load, prompt_cache.c), binary untrusted input.
 *
 * The first input byte picks what the rest is:
 *   odd:  the whole file (magic, version, fingerprint, lengths, checksum checks);
 *   even: everything after a valid header, then the right checksum appended: the
 *         header (magic, version and this session's fingerprint) is taken from a
 *         cache the session saved itself, so the fuzzer reaches the position, id
 *         and cache-length checks and the copy into the cache.
 * The session (the tiny f32 fixture, exact mode, context 16; the targets run from the
 * repository root) must come out of a failed load as it went in (position 0) with a
 * message, and out of a successful one within its context, able to take one more
 * token (or to say its context is full, or that the loaded values are not finite). */
#include "fuzz_util.h"

#include "llmgen.h"

#define TINY "tests/fixtures/tiny-mha-f32"
#define CTX 16

typedef struct {
    llmgen_session *s;
    uint8_t *header; /* magic, version, fingerprint length and fingerprint of a saved cache */
    size_t header_len;
} harness;

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void die(const char *what, const char *err) {
    fprintf(stderr, "fuzz_prompt_cache: %s: %s\n", what, err);
    abort();
}

/* Test harness state, set up once per process. */
static harness *setup(void) {
    static harness h;
    if (h.s) return &h;
    llmgen_model *m;
    char err[512], dir[] = "/tmp/fuzz_prompt_cacheXXXXXX", path[64];
    llmgen_model_options mo = {.n_threads = 1, .exact = 1};
    if (llmgen_model_open(TINY, &mo, &m, err, sizeof err) || llmgen_session_new(m, CTX, &h.s, err, sizeof err))
        die(TINY, err);
    const int32_t ids[3] = {1, 2, 3};
    const float *lg;
    if (llmgen_prefill(h.s, ids, 3, &lg, err, sizeof err)) die("prefill", err);
    if (!mkdtemp(dir)) die(dir, "mkdtemp failed");
    snprintf(path, sizeof path, "%s/seed.kv", dir);
    if (llmgen_session_save(h.s, path, err, sizeof err)) die(path, err);
    FILE *f = fopen(path, "rb");
    uint8_t head[16];
    uint32_t nfp;
    if (!f || fread(head, 1, 16, f) != 16) die(path, "cannot read the saved cache");
    memcpy(&nfp, head + 12, 4);
    h.header_len = 16 + (size_t)nfp;
    h.header = malloc(h.header_len);
    if (!h.header || fseek(f, 0, SEEK_SET) || fread(h.header, 1, h.header_len, f) != h.header_len)
        die(path, "cannot read the saved cache's header");
    fclose(f);
    unlink(path);
    rmdir(dir);
    llmgen_session_reset(h.s);
    return &h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    harness *h = setup();
    if (size < 1) return 0;
    int raw = data[0] & 1;
    const uint8_t *body = data + 1;
    size_t nbody = size - 1, n = raw ? nbody : h->header_len + nbody + 8;
    uint8_t *file = malloc(n ? n : 1);
    if (!file) abort();
    if (raw) {
        memcpy(file, body, nbody);
    } else {
        memcpy(file, h->header, h->header_len);
        memcpy(file + h->header_len, body, nbody);
        uint64_t sum = fnv1a(1469598103934665603ull, file, n - 8);
        memcpy(file + n - 8, &sum, 8);
    }
    fuzz_file ff;
    if (fuzz_file_open(&ff, file, n)) abort();
    free(file);
    char err[512] = "";
    llmgen_status st = llmgen_session_load(h->s, ff.path, err, sizeof err);
    fuzz_file_close(&ff);
    int pos = llmgen_session_pos(h->s);
    if (st != LLMGEN_OK) {
        if (!err[0] || pos != 0) abort(); /* a refused cache leaves the session as it was */
    } else {
        if (pos < 0 || pos > CTX) abort();
        const float *lg;
        st = llmgen_decode_step(h->s, 1, &lg, err, sizeof err);
        if (st != LLMGEN_OK && st != LLMGEN_E_CONTEXT && st != LLMGEN_E_FORMAT) abort();
        if (st == LLMGEN_E_CONTEXT && pos != CTX) abort();
    }
    llmgen_session_reset(h->s);
    return 0;
}
