/* test_gguf.c - the GGUF reader (src/formats/gguf.c) and config_from_gguf (src/model/config_gguf.c)
 * on files written by a tiny in-test writer: a good file parses with the right
 * shapes, values and data pointers; each kind of damage is refused with a
 * one-line message that names the file; random damage never crashes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/config.h"
#include "formats/gguf.h"
#include "base/util.h"

#define REAL_MODEL ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"

/* ---- a growable byte buffer ------------------------------------------------------ */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} gbuf;

static void put(gbuf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        cr_assert(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put_u8(gbuf *b, uint8_t v) { put(b, &v, 1); }
static void put_u32(gbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(gbuf *b, uint64_t v) { put(b, &v, 8); }
static void put_f32(gbuf *b, float v) { put(b, &v, 4); }
static void put_str(gbuf *b, const char *s) {
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void pad_to(gbuf *b, size_t a) {
    while (b->n % a) put_u8(b, 0);
}

/* ---- the test file --------------------------------------------------------------- */

/* Three tensors (plus an optional output.weight), laid out back to back:
 *   token_embd.weight  F32  ne [8, 4]  -> HF (4, 8), 128 bytes, values i * 0.5
 *   blk.0.attn_q.weight Q4_1 ne [32, 2] -> HF (2, 32), 2 blocks of 20 bytes
 *   output_norm.weight F16  ne [8]     -> HF (8),    16 bytes
 * Every field below can be changed to damage the file in one specific way. */
typedef struct {
    uint32_t magic, version;
    const char *arch;
    const char *omit_key;       /* a llama.* key to leave out */
    uint8_t bool_value;         /* value of tokenizer.ggml.add_bos_token */
    uint64_t alignment;         /* 0: no general.alignment key */
    uint32_t types[4];          /* ggml types of the tensors */
    uint64_t ne0[4];            /* first ne of each tensor */
    uint32_t ndims0;            /* n_dims of tensor 0 */
    int64_t offsets[4];         /* -1: the natural offset */
    int with_output;            /* add output.weight (F32 ne [8, 4]) */
    int dup_tensor;             /* name tensor 2 like tensor 0 */
    int dup_key;                /* write general.architecture twice */
    uint64_t token_len_override;/* 0: honest string length for tokens[1] */
    uint32_t nest_depth;        /* depth of the test.nested array */
} gspec;

static gspec good_spec(void) {
    gspec s = {0};
    s.magic = 0x46554747u;
    s.version = 3;
    s.arch = "llama";
    s.types[0] = 0, s.types[1] = 3, s.types[2] = 1, s.types[3] = 0;
    s.ne0[0] = 8, s.ne0[1] = 32, s.ne0[2] = 8, s.ne0[3] = 8;
    s.ndims0 = 2;
    for (int i = 0; i < 4; i++) s.offsets[i] = -1;
    s.nest_depth = 2;
    return s;
}

static void kv_u32(gbuf *b, const gspec *s, const char *k, uint32_t v) {
    if (s->omit_key && !strcmp(s->omit_key, k)) return;
    put_str(b, k), put_u32(b, GGUF_UINT32), put_u32(b, v);
}
static void kv_f32(gbuf *b, const gspec *s, const char *k, float v) {
    if (s->omit_key && !strcmp(s->omit_key, k)) return;
    put_str(b, k), put_u32(b, GGUF_FLOAT32), put_f32(b, v);
}

static void put_nested(gbuf *b, uint32_t depth) {
    if (depth <= 1) {
        put_u32(b, GGUF_UINT8), put_u64(b, 3), put_u8(b, 7), put_u8(b, 8), put_u8(b, 9);
        return;
    }
    put_u32(b, GGUF_ARRAY), put_u64(b, 1);
    put_nested(b, depth - 1);
}

static const char *TOKENS[4] = {"<unk>", "hello", "", "w\xc3\xb6rld"};

static int write_kvs(gbuf *b, const gspec *s) {
    int n = 0;
    put_str(b, "general.architecture"), put_u32(b, GGUF_STRING), put_str(b, s->arch), n++;
    if (s->dup_key) put_str(b, "general.architecture"), put_u32(b, GGUF_STRING), put_str(b, "x"), n++;
    const char *ik[] = {"llama.embedding_length", "llama.block_count", "llama.attention.head_count",
                        "llama.attention.head_count_kv", "llama.feed_forward_length",
                        "llama.context_length", "llama.rope.dimension_count"};
    const uint32_t iv[] = {8, 1, 2, 1, 32, 64, 4};
    for (int i = 0; i < 7; i++) {
        size_t before = b->n;
        kv_u32(b, s, ik[i], iv[i]);
        n += b->n != before;
    }
    size_t before = b->n;
    kv_f32(b, s, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    n += b->n != before;
    before = b->n;
    kv_f32(b, s, "llama.rope.freq_base", 500000.0f);
    n += b->n != before;
    put_str(b, "tokenizer.ggml.add_bos_token"), put_u32(b, GGUF_BOOL), put_u8(b, s->bool_value), n++;
    put_str(b, "tokenizer.ggml.bos_token_id"), put_u32(b, GGUF_UINT32), put_u32(b, 1), n++;
    put_str(b, "tokenizer.ggml.eos_token_id"), put_u32(b, GGUF_INT32), put_u32(b, 3), n++;
    put_str(b, "tokenizer.ggml.tokens"), put_u32(b, GGUF_ARRAY), put_u32(b, GGUF_STRING), put_u64(b, 4);
    for (int i = 0; i < 4; i++) {
        if (i == 1 && s->token_len_override) {
            put_u64(b, s->token_len_override);
            put(b, TOKENS[i], strlen(TOKENS[i]));
        } else {
            put_str(b, TOKENS[i]);
        }
    }
    n++;
    put_str(b, "tokenizer.ggml.scores"), put_u32(b, GGUF_ARRAY), put_u32(b, GGUF_FLOAT32), put_u64(b, 4);
    for (int i = 0; i < 4; i++) put_f32(b, -1.0f * (float)i);
    n++;
    put_str(b, "test.nested"), put_u32(b, GGUF_ARRAY), put_nested(b, s->nest_depth), n++;
    put_str(b, "test.u64"), put_u32(b, GGUF_UINT64), put_u64(b, 1ull << 40), n++;
    put_str(b, "test.f64"), put_u32(b, GGUF_FLOAT64), put(b, &(double){0.25}, 8), n++;
    if (s->alignment) {
        put_str(b, "general.alignment"), put_u32(b, GGUF_UINT32), put_u32(b, (uint32_t)s->alignment);
        n++;
    }
    return n;
}

/* Byte size of tensor i's data (F32 / Q4_1 / F16 as used above). */
static uint64_t tensor_bytes(const gspec *s, int i) {
    uint64_t rows = (i == 2) ? 1 : (i == 1 ? 2 : 4);
    uint32_t t = s->types[i];
    uint64_t row = t == 1 ? s->ne0[i] * 2 : t == 3 ? s->ne0[i] / 32 * 20 : s->ne0[i] * 4;
    return row * rows; /* wraps for the absurd sizes some tests use: never written then */
}

/* Build the whole file into b. */
static void build_gguf(const gspec *s, gbuf *b) {
    static const char *names[4] = {"token_embd.weight", "blk.0.attn_q.weight", "output_norm.weight",
                                   "output.weight"};
    int nt = s->with_output ? 4 : 3;
    gbuf kv = {0};
    int nkv = write_kvs(&kv, s);
    put_u32(b, s->magic), put_u32(b, s->version), put_u64(b, (uint64_t)nt), put_u64(b, (uint64_t)nkv);
    put(b, kv.p, kv.n);
    free(kv.p);
    uint64_t a = s->alignment ? s->alignment : 32, off = 0;
    for (int i = 0; i < nt; i++) {
        put_str(b, (s->dup_tensor && i == 2) ? names[0] : names[i]);
        uint32_t nd = i == 0 ? s->ndims0 : (i == 2 ? 1 : 2);
        put_u32(b, nd);
        for (uint32_t d = 0; d < nd; d++) put_u64(b, d == 0 ? s->ne0[i] : (i == 1 ? 2 : 4));
        put_u32(b, s->types[i]);
        put_u64(b, s->offsets[i] >= 0 ? (uint64_t)s->offsets[i] : off);
        off += (tensor_bytes(s, i) + a - 1) / a * a;
    }
    pad_to(b, a);
    /* Data: F32 values i * 0.5; the other tensors get a byte pattern. */
    for (int i = 0; i < nt; i++) {
        uint64_t nb = tensor_bytes(s, i);
        if (i == 0 || i == 3)
            for (uint64_t k = 0; k < nb / 4; k++) put_f32(b, (float)k * 0.5f);
        else
            for (uint64_t k = 0; k < nb; k++) put_u8(b, (uint8_t)(k * 7 + i));
        if (i + 1 < nt) pad_to(b, a);
    }
}

/* ---- files ----------------------------------------------------------------------- */

typedef struct {
    char dir[64];
    char path[128];
} tmpfile_t;

static void write_file(tmpfile_t *t, const void *p, size_t n) {
    if (!t->dir[0]) {
        snprintf(t->dir, sizeof t->dir, "/tmp/llmgen-gguf-XXXXXX");
        cr_assert(mkdtemp(t->dir));
        snprintf(t->path, sizeof t->path, "%s/model.gguf", t->dir);
    }
    FILE *f = fopen(t->path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void cleanup(tmpfile_t *t) {
    if (!t->dir[0]) return;
    unlink(t->path);
    rmdir(t->dir);
    t->dir[0] = '\0';
}

/* Open a spec'd file; returns gguf_open's result, message in err. */
static int open_spec(const gspec *s, tmpfile_t *t, gguf_file **g, char *err) {
    gbuf b = {0};
    build_gguf(s, &b);
    write_file(t, b.p, b.n);
    free(b.p);
    err[0] = '\0';
    return gguf_open(t->path, g, err);
}

/* The spec must be refused with a message naming the file and containing `want`. */
static void expect_bad(const gspec *s, const char *want) {
    tmpfile_t t = {0};
    gguf_file *g = NULL;
    char err[ERR_LEN];
    int rc = open_spec(s, &t, &g, err);
    cr_expect_eq(rc, -1, "expected an error containing '%s'", want);
    cr_expect_null(g);
    cr_expect(strstr(err, t.path) != NULL, "message does not name the file: %s", err);
    cr_expect(strstr(err, want) != NULL, "message lacks '%s': %s", want, err);
    cr_expect(strchr(err, '\n') == NULL, "message is not one line: %s", err);
    if (!rc) gguf_close(g);
    cleanup(&t);
}

/* ---- good files ------------------------------------------------------------------ */

Test(gguf, good_file_shapes_types_and_data) {
    gspec s = good_spec();
    tmpfile_t t = {0};
    gguf_file *g;
    char err[ERR_LEN];
    cr_assert_eq(open_spec(&s, &t, &g, err), 0, "%s", err);
    cr_expect_eq(gguf_version(g), 3);
    cr_expect_str_eq(gguf_path(g), t.path);
    cr_assert_eq(gguf_n_tensors(g), 3);

    const tensor *e = gguf_tensor(g, 0);
    cr_expect_str_eq(e->name, "token_embd.weight");
    cr_expect_eq(e->type, DT_F32);
    cr_expect_eq(e->ndim, 2);
    cr_expect_eq(e->shape[0], 4); /* ggml ne [8, 4] reversed */
    cr_expect_eq(e->shape[1], 8);
    cr_expect_eq(e->nbytes, 128);
    for (int k = 0; k < 32; k++) {
        float v;
        memcpy(&v, (const uint8_t *)e->data + 4 * k, 4);
        cr_expect_eq(v, (float)k * 0.5f);
    }
    const tensor *q = gguf_find_tensor(g, "blk.0.attn_q.weight");
    cr_assert_not_null(q);
    cr_expect_eq(q, gguf_tensor(g, 1));
    cr_expect_eq(q->type, DT_Q4_1);
    cr_expect_eq(q->shape[0], 2);
    cr_expect_eq(q->shape[1], 32);
    cr_expect_eq(q->nbytes, 40);
    cr_expect_eq(((const uint8_t *)q->data)[3], (uint8_t)(3 * 7 + 1));
    /* data sections start aligned to 32 and tensors follow at their offsets */
    cr_expect_eq((const uint8_t *)q->data - (const uint8_t *)e->data, 128);
    const tensor *n = gguf_find_tensor(g, "output_norm.weight");
    cr_assert_not_null(n);
    cr_expect_eq(n->type, DT_F16);
    cr_expect_eq(n->ndim, 1);
    cr_expect_eq(n->shape[0], 8);
    cr_expect_eq(n->nbytes, 16);
    cr_expect_null(gguf_find_tensor(g, "output.weight"));
    cr_expect_null(gguf_find_tensor(g, ""));
    cr_expect_null(gguf_tensor(g, 3));
    cr_expect_null(gguf_tensor(g, -1));
    gguf_close(g);
    cleanup(&t);
}

Test(gguf, good_file_metadata) {
    gspec s = good_spec();
    tmpfile_t t = {0};
    gguf_file *g;
    char err[ERR_LEN];
    cr_assert_eq(open_spec(&s, &t, &g, err), 0, "%s", err);
    int64_t i;
    double d;
    gguf_str str;
    cr_expect(gguf_has_key(g, "llama.block_count"));
    cr_expect(!gguf_has_key(g, "llama.nope"));
    cr_expect_eq(gguf_get_int(g, "llama.embedding_length", &i), 0);
    cr_expect_eq(i, 8);
    cr_expect_eq(gguf_get_int(g, "tokenizer.ggml.add_bos_token", &i), 0); /* bool as int */
    cr_expect_eq(i, 0);
    cr_expect_eq(gguf_get_int(g, "test.u64", &i), 0);
    cr_expect_eq(i, 1ll << 40);
    cr_expect_eq(gguf_get_int(g, "general.architecture", &i), -1); /* a string */
    cr_expect_eq(gguf_get_int(g, "llama.rope.freq_base", &i), -1);  /* a float */
    cr_expect_eq(gguf_get_int(g, "missing", &i), -1);
    cr_expect_eq(gguf_get_float(g, "llama.rope.freq_base", &d), 0);
    cr_expect_eq(d, 500000.0);
    cr_expect_eq(gguf_get_float(g, "test.f64", &d), 0);
    cr_expect_eq(d, 0.25);
    cr_expect_eq(gguf_get_float(g, "llama.block_count", &d), 0); /* integer as float */
    cr_expect_eq(d, 1.0);
    cr_expect_eq(gguf_get_str(g, "general.architecture", &str), 0);
    cr_expect_eq(str.len, 5);
    cr_expect_eq(memcmp(str.ptr, "llama", 5), 0);
    cr_expect_eq(gguf_get_str(g, "llama.block_count", &str), -1);

    gguf_type et;
    uint64_t n;
    const void *data;
    cr_expect_eq(gguf_get_arr(g, "tokenizer.ggml.scores", &et, &n, &data), 0);
    cr_expect_eq(et, GGUF_FLOAT32);
    cr_expect_eq(n, 4);
    float f;
    memcpy(&f, (const uint8_t *)data + 12, 4);
    cr_expect_eq(f, -3.0f);
    cr_expect_eq(gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, &data), 0);
    cr_expect_eq(et, GGUF_STRING);
    cr_expect_eq(n, 4);
    for (uint64_t k = 0; k < 4; k++) {
        cr_assert_eq(gguf_get_arr_str(g, "tokenizer.ggml.tokens", k, &str), 0);
        cr_expect_eq(str.len, strlen(TOKENS[k]));
        cr_expect_eq(memcmp(str.ptr, TOKENS[k], str.len), 0);
    }
    cr_expect_eq(gguf_get_arr_str(g, "tokenizer.ggml.tokens", 4, &str), -1);
    cr_expect_eq(gguf_get_arr_str(g, "tokenizer.ggml.scores", 0, &str), -1);
    cr_expect_eq(gguf_get_arr(g, "test.nested", &et, &n, &data), 0);
    cr_expect_eq(et, GGUF_ARRAY);
    cr_expect_eq(n, 1);
    cr_expect_eq(gguf_get_arr(g, "llama.block_count", &et, &n, &data), -1);
    gguf_close(g);
    cleanup(&t);
}

Test(gguf, version_2_and_custom_alignment) {
    gspec s = good_spec();
    s.version = 2;
    s.alignment = 64;
    s.with_output = 1;
    tmpfile_t t = {0};
    gguf_file *g;
    char err[ERR_LEN];
    cr_assert_eq(open_spec(&s, &t, &g, err), 0, "%s", err);
    cr_expect_eq(gguf_version(g), 2);
    const tensor *e = gguf_find_tensor(g, "token_embd.weight");
    const tensor *q = gguf_find_tensor(g, "blk.0.attn_q.weight");
    const tensor *o = gguf_find_tensor(g, "output.weight");
    cr_assert(e && q && o);
    cr_expect_eq((const uint8_t *)q->data - (const uint8_t *)e->data, 128);
    cr_expect_eq((const uint8_t *)o->data - (const uint8_t *)e->data, 256); /* 128, 64, 64 */
    float v;
    memcpy(&v, (const uint8_t *)o->data + 4, 4);
    cr_expect_eq(v, 0.5f);
    gguf_close(g);
    cleanup(&t);
}

/* ---- damaged files --------------------------------------------------------------- */

Test(gguf, every_truncation_is_refused) {
    gspec s = good_spec();
    gbuf b = {0};
    build_gguf(&s, &b);
    tmpfile_t t = {0};
    for (size_t n = 0; n < b.n; n++) {
        write_file(&t, b.p, n);
        gguf_file *g = NULL;
        char err[ERR_LEN] = "";
        int rc = gguf_open(t.path, &g, err);
        cr_assert_eq(rc, -1, "a %zu-byte prefix of %zu was accepted", n, b.n);
        cr_assert(strstr(err, t.path), "%s", err);
    }
    free(b.p);
    cleanup(&t);
}

Test(gguf, bad_magic_and_version) {
    gspec s = good_spec();
    s.magic = 0x46554746u;
    expect_bad(&s, "bad magic");
    s = good_spec();
    s.version = 1;
    expect_bad(&s, "version 1");
    s.version = 4;
    expect_bad(&s, "version 4");
}

Test(gguf, absurd_counts) {
    gspec s = good_spec();
    gbuf b = {0};
    build_gguf(&s, &b);
    tmpfile_t t = {0};
    char err[ERR_LEN];
    gguf_file *g;
    uint64_t big = 1ull << 62;
    memcpy(b.p + 8, &big, 8); /* tensor count */
    write_file(&t, b.p, b.n);
    cr_expect_eq(gguf_open(t.path, &g, err), -1);
    cr_expect(strstr(err, "tensor count") && strstr(err, t.path), "%s", err);
    free(b.p);
    b = (gbuf){0};
    build_gguf(&s, &b);
    memcpy(b.p + 16, &big, 8); /* metadata count */
    write_file(&t, b.p, b.n);
    cr_expect_eq(gguf_open(t.path, &g, err), -1);
    cr_expect(strstr(err, "metadata count") && strstr(err, t.path), "%s", err);
    free(b.p);
    cleanup(&t);
}

Test(gguf, unsupported_tensor_types_are_named) {
    gspec s = good_spec();
    s.types[1] = 16;
    expect_bad(&s, "tensor 'blk.0.attn_q.weight' has ggml type 16 (IQ2_XXS); supported: F32 F16 BF16 Q8_0 Q4_0 "
                   "Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS MXFP4");
    s.types[1] = 99;
    expect_bad(&s, "ggml type 99 (unknown)");
    s = good_spec();
    s.types[0] = 28; /* F64: a real ggml type, not one llmgen runs */
    expect_bad(&s, "type 28 (F64)");
}

Test(gguf, bad_offsets) {
    gspec s = good_spec();
    s.offsets[2] = 1 << 20;
    expect_bad(&s, "outside");
    s = good_spec();
    s.offsets[2] = (int64_t)(1ull << 62); /* aligned, far past the end */
    expect_bad(&s, "outside");
    s = good_spec();
    s.offsets[1] = 100; /* not a multiple of 32 */
    expect_bad(&s, "not a multiple of the alignment");
    s = good_spec();
    s.offsets[2] = 128; /* on top of attn_q */
    expect_bad(&s, "overlap");
}

Test(gguf, bad_dims) {
    gspec s = good_spec();
    s.ndims0 = 0;
    expect_bad(&s, "0 dimensions");
    s.ndims0 = 5;
    expect_bad(&s, "5 dimensions");
    s = good_spec();
    s.ne0[2] = 0;
    expect_bad(&s, "dimension 0 is 0");
    s = good_spec();
    s.ne0[1] = 16; /* Q4_1 blocks hold 32 */
    expect_bad(&s, "not a multiple of the block size");
    s = good_spec();
    s.ne0[0] = 1ull << 62; /* times 4 rows: element count overflows */
    expect_bad(&s, "too large");
}

Test(gguf, bad_metadata) {
    gspec s = good_spec();
    s.bool_value = 2;
    expect_bad(&s, "bool value 2");
    s = good_spec();
    s.token_len_override = 1ull << 40;
    expect_bad(&s, "truncated");
    s = good_spec();
    s.nest_depth = 9;
    expect_bad(&s, "nested deeper");
    s = good_spec();
    s.dup_key = 1;
    expect_bad(&s, "duplicate metadata key 'general.architecture'");
    s = good_spec();
    s.dup_tensor = 1;
    expect_bad(&s, "duplicate tensor name 'token_embd.weight'");
    s = good_spec();
    s.alignment = 48;
    expect_bad(&s, "general.alignment");
}

Test(gguf, unknown_value_type) {
    gspec s = good_spec();
    gbuf b = {0};
    build_gguf(&s, &b);
    /* the first key/value's type field sits after the 24-byte header and the key */
    size_t at = 24 + 8 + strlen("general.architecture");
    uint32_t bad = 13;
    memcpy(b.p + at, &bad, 4);
    tmpfile_t t = {0};
    write_file(&t, b.p, b.n);
    gguf_file *g;
    char err[ERR_LEN];
    cr_expect_eq(gguf_open(t.path, &g, err), -1);
    cr_expect(strstr(err, "unknown value type 13") && strstr(err, t.path), "%s", err);
    free(b.p);
    cleanup(&t);
}

Test(gguf, missing_and_empty_files) {
    char err[ERR_LEN];
    gguf_file *g;
    cr_expect_eq(gguf_open("/nonexistent/x.gguf", &g, err), -1);
    cr_expect(strstr(err, "/nonexistent/x.gguf"), "%s", err);
    tmpfile_t t = {0};
    write_file(&t, "", 0);
    cr_expect_eq(gguf_open(t.path, &g, err), -1);
    cr_expect(strstr(err, t.path) && strstr(err, "truncated"), "%s", err);
    cleanup(&t);
}

/* Deterministic random damage: each variant either opens (and every view lies
 * inside the mapping, which ASan checks when we touch it) or fails with a
 * message naming the file. */
Test(gguf, random_byte_damage_never_crashes) {
    gspec s = good_spec();
    gbuf b = {0};
    build_gguf(&s, &b);
    uint8_t *copy = malloc(b.n);
    tmpfile_t t = {0};
    uint64_t x = 0x9E3779B97F4A7C15ull;
    int opened = 0;
    for (int it = 0; it < 1500; it++) {
        memcpy(copy, b.p, b.n);
        int flips = 1 + it % 4;
        for (int k = 0; k < flips; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t pos = (size_t)(x % b.n);
            /* bias toward the header/metadata region, where the structure is */
            if (it % 2) pos %= b.n - 200;
            copy[pos] = (uint8_t)(x >> 32);
        }
        write_file(&t, copy, b.n);
        gguf_file *g = NULL;
        char err[ERR_LEN] = "";
        if (gguf_open(t.path, &g, err) == 0) {
            opened++;
            volatile uint8_t sink = 0;
            for (int i = 0; i < gguf_n_tensors(g); i++) {
                const tensor *tt = gguf_tensor(g, i);
                if (tt->nbytes) sink ^= ((const uint8_t *)tt->data)[tt->nbytes - 1];
                (void)strlen(tt->name);
            }
            gguf_close(g);
        } else {
            cr_assert(strstr(err, t.path), "iteration %d: %s", it, err);
        }
    }
    cr_log_info("random damage: %d of 1500 variants still opened", opened);
    free(copy);
    free(b.p);
    cleanup(&t);
}

/* ---- config_from_gguf ------------------------------------------------------------ */

static int config_of(const gspec *s, model_config *c, char *err, tmpfile_t *t) {
    gguf_file *g;
    if (open_spec(s, t, &g, err)) return -2;
    int rc = config_from_gguf(g, c, err);
    if (!rc) rc = config_validate(c, gguf_path(g), err);
    gguf_close(g);
    return rc;
}

Test(config_gguf, llama_keys) {
    gspec s = good_spec();
    model_config c;
    char err[ERR_LEN];
    tmpfile_t t = {0};
    cr_assert_eq(config_of(&s, &c, err, &t), 0, "%s", err);
    cr_expect_str_eq(c.arch, "llama");
    cr_expect_eq(c.dim, 8);
    cr_expect_eq(c.n_layers, 1);
    cr_expect_eq(c.n_heads, 2);
    cr_expect_eq(c.n_kv_heads, 1);
    cr_expect_eq(c.head_dim, 4);
    cr_expect_eq(c.hidden_dim, 32);
    cr_expect_eq(c.max_pos, 64);
    cr_expect_eq(c.vocab_size, 4); /* no llama.vocab_size: length of tokenizer.ggml.tokens */
    cr_expect_float_eq(c.rms_eps, 1e-5f, 1e-12);
    cr_expect_eq(c.rope_theta, 500000.0f);
    cr_expect_eq(c.rope_scaling, ROPE_SCALING_NONE);
    cr_expect_eq(c.rope_interleaved, 1);
    cr_expect_eq(c.tied_embeddings, 1); /* no output.weight */
    cr_expect_eq(c.bos_id, 1);
    cr_expect_eq(c.n_eos, 1);
    cr_expect_eq(c.eos_ids[0], 3);
    cleanup(&t);

    s.with_output = 1;
    s.omit_key = "llama.attention.head_count_kv"; /* defaults to head_count */
    cr_assert_eq(config_of(&s, &c, err, &t), 0, "%s", err);
    cr_expect_eq(c.tied_embeddings, 0);
    cr_expect_eq(c.n_kv_heads, 2);
    cleanup(&t);

    s = good_spec();
    s.omit_key = "llama.rope.freq_base";
    cr_assert_eq(config_of(&s, &c, err, &t), 0, "%s", err);
    cr_expect_eq(c.rope_theta, 10000.0f);
    cleanup(&t);
}

Test(config_gguf, errors_name_file_and_key) {
    gspec s = good_spec();
    s.arch = "gpt2";
    model_config c;
    char err[ERR_LEN];
    tmpfile_t t = {0};
    cr_expect_eq(config_of(&s, &c, err, &t), -1);
    cr_expect(strstr(err, "unsupported architecture 'gpt2'") && strstr(err, t.path), "%s", err);
    cleanup(&t);
    const char *req[] = {"llama.embedding_length", "llama.block_count", "llama.attention.head_count",
                         "llama.feed_forward_length", "llama.context_length",
                         "llama.attention.layer_norm_rms_epsilon"};
    for (int i = 0; i < 6; i++) {
        s = good_spec();
        s.omit_key = req[i];
        cr_expect_eq(config_of(&s, &c, err, &t), -1, "%s accepted when missing", req[i]);
        cr_expect(strstr(err, req[i]) && strstr(err, t.path), "%s", err);
        cleanup(&t);
    }
}

/* ---- the real default model ------------------------------------------------------ */

Test(gguf, real_default_model) {
    if (access(REAL_MODEL, R_OK) != 0)
        cr_skip_test("%s absent: run `make model` (tests/cli/check_readers.py checks it too)",
                     REAL_MODEL);
    gguf_file *g;
    char err[ERR_LEN];
    cr_assert_eq(gguf_open(REAL_MODEL, &g, err), 0, "%s", err);
    cr_expect_eq(gguf_version(g), 3);
    cr_assert_eq(gguf_n_tensors(g), 272);
    int counts[DT_COUNT] = {0};
    for (int i = 0; i < gguf_n_tensors(g); i++) counts[gguf_tensor(g, i)->type]++;
    cr_expect_eq(counts[DT_Q4_1], 210);
    cr_expect_eq(counts[DT_F32], 61);
    cr_expect_eq(counts[DT_Q8_0], 1);
    const tensor *e = gguf_find_tensor(g, "token_embd.weight");
    cr_assert_not_null(e);
    cr_expect_eq(e->type, DT_Q8_0);
    cr_expect_eq(e->shape[0], 49152);
    cr_expect_eq(e->shape[1], 576);
    cr_expect_null(gguf_find_tensor(g, "output.weight"));
    gguf_str s;
    cr_assert_eq(gguf_get_arr_str(g, "tokenizer.ggml.tokens", 0, &s), 0);
    cr_expect_eq(s.len, strlen("<|endoftext|>"));
    cr_expect_eq(memcmp(s.ptr, "<|endoftext|>", s.len), 0);
    model_config c;
    cr_assert_eq(config_from_gguf(g, &c, err), 0, "%s", err);
    cr_assert_eq(config_validate(&c, REAL_MODEL, err), 0, "%s", err);
    cr_expect_eq(c.dim, 576);
    cr_expect_eq(c.n_layers, 30);
    cr_expect_eq(c.n_heads, 9);
    cr_expect_eq(c.n_kv_heads, 3);
    cr_expect_eq(c.head_dim, 64);
    cr_expect_eq(c.hidden_dim, 1536);
    cr_expect_eq(c.vocab_size, 49152);
    cr_expect_eq(c.max_pos, 8192);
    cr_expect_eq(c.rope_theta, 100000.0f);
    cr_expect_eq(c.tied_embeddings, 1);
    cr_expect_eq(c.bos_id, 1);
    cr_expect_eq(c.n_eos, 1);
    cr_expect_eq(c.eos_ids[0], 2);
    gguf_close(g);
}
