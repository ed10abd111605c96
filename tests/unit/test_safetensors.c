/* test_safetensors.c - the safetensors reader (src/formats/safetensors.c) on files the
 * test writes itself: single files and sharded checkpoints that parse with the
 * right shapes, values and pointers, and each kind of damage refused with a
 * one-line message naming the file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/safetensors.h"
#include "base/util.h"

/* ---- writer ---------------------------------------------------------------------- */

typedef struct {
    char dir[64];
    char paths[8][160]; /* files written, removed by cleanup */
    int n;
} tmpdir_t;

static const char *tmp_path(tmpdir_t *d, const char *name) {
    if (!d->dir[0]) {
        snprintf(d->dir, sizeof d->dir, "/tmp/llmgen-st-XXXXXX");
        cr_assert(mkdtemp(d->dir));
    }
    for (int i = 0; i < d->n; i++)
        if (!strcmp(strrchr(d->paths[i], '/') + 1, name)) return d->paths[i];
    cr_assert(d->n < 8);
    char full[sizeof d->paths[0]];
    snprintf(full, sizeof full, "%s/%s", d->dir, name);
    memcpy(d->paths[d->n], full, sizeof full);
    return d->paths[d->n++];
}

static void cleanup(tmpdir_t *d) {
    for (int i = 0; i < d->n; i++) unlink(d->paths[i]);
    if (d->dir[0]) rmdir(d->dir);
    memset(d, 0, sizeof *d);
}

static const char *write_raw(tmpdir_t *d, const char *name, const void *p, size_t n) {
    const char *path = tmp_path(d, name);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
    return path;
}

/* u64 header length, the JSON header padded with spaces to a multiple of 8 (as
 * the reference writer does), then `data`. `hlen_override` != 0 replaces the
 * length field. Returns the path. */
static const char *write_st(tmpdir_t *d, const char *name, const char *json, const void *data,
                            size_t nd, uint64_t hlen_override) {
    size_t hl = strlen(json), padded = (hl + 7) / 8 * 8;
    size_t total = 8 + padded + nd;
    uint8_t *buf = malloc(total);
    uint64_t field = hlen_override ? hlen_override : padded;
    memcpy(buf, &field, 8);
    memcpy(buf + 8, json, hl);
    memset(buf + 8 + hl, ' ', padded - hl);
    if (nd) memcpy(buf + 8 + padded, data, nd);
    const char *p = write_raw(d, name, buf, total);
    free(buf);
    return p;
}

/* 24 bytes of F32 (a, 2x3), 8 bytes of BF16 (b, 4), 8 bytes of I64 (c, scalar),
 * an empty F32 (e, 0x3): 40 bytes of data. */
static const char *GOOD_HEADER =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
    "\"c\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[32,40]},"
    "\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[40,40]}}";

static void good_data(uint8_t out[40]) {
    for (int i = 0; i < 6; i++) {
        float v = (float)i + 0.25f;
        memcpy(out + 4 * i, &v, 4);
    }
    for (int i = 0; i < 4; i++) {
        uint16_t h = f32_to_bf16((float)-i);
        memcpy(out + 24 + 2 * i, &h, 2);
    }
    int64_t c = -7;
    memcpy(out + 32, &c, 8);
}

/* The header must be refused with a message naming the file and containing `want`. */
static void expect_bad_header(const char *json, size_t nd, const char *want) {
    tmpdir_t d = {0};
    uint8_t *data = calloc(1, nd + 1);
    const char *path = write_st(&d, "model.safetensors", json, data, nd, 0);
    free(data);
    st_file *f = NULL;
    char err[ERR_LEN] = "";
    int rc = st_open(path, &f, err);
    cr_expect_eq(rc, -1, "expected an error containing '%s' for %s", want, json);
    cr_expect_null(f);
    cr_expect(strstr(err, path) != NULL, "message does not name the file: %s", err);
    cr_expect(strstr(err, want) != NULL, "message lacks '%s': %s", want, err);
    cr_expect(strchr(err, '\n') == NULL, "message is not one line: %s", err);
    if (!rc) st_close(f);
    cleanup(&d);
}

/* ---- good files ------------------------------------------------------------------ */

Test(safetensors, single_file) {
    tmpdir_t d = {0};
    uint8_t data[40];
    good_data(data);
    const char *path = write_st(&d, "model.safetensors", GOOD_HEADER, data, 40, 0);
    st_file *f;
    char err[ERR_LEN];
    cr_assert_eq(st_open(path, &f, err), 0, "%s", err);
    cr_assert_eq(st_n_tensors(f), 4); /* __metadata__ is not a tensor */
    const tensor *a = st_find_tensor(f, "a");
    cr_assert_not_null(a);
    cr_expect_eq(a->type, DT_F32);
    cr_expect_eq(a->ndim, 2);
    cr_expect_eq(a->shape[0], 2);
    cr_expect_eq(a->shape[1], 3);
    cr_expect_eq(a->nbytes, 24);
    for (int i = 0; i < 6; i++) {
        float v;
        memcpy(&v, (const uint8_t *)a->data + 4 * i, 4);
        cr_expect_eq(v, (float)i + 0.25f);
    }
    const tensor *b = st_find_tensor(f, "b");
    cr_assert_not_null(b);
    cr_expect_eq(b->type, DT_BF16);
    cr_expect_eq((const uint8_t *)b->data - (const uint8_t *)a->data, 24);
    uint16_t h;
    memcpy(&h, (const uint8_t *)b->data + 6, 2);
    cr_expect_eq(bf16_to_f32(h), -3.0f);
    const tensor *c = st_find_tensor(f, "c");
    cr_assert_not_null(c);
    cr_expect_eq(c->type, DT_I64);
    cr_expect_eq(c->ndim, 0);
    cr_expect_eq(tensor_numel(c), 1);
    int64_t cv;
    memcpy(&cv, c->data, 8);
    cr_expect_eq(cv, -7);
    const tensor *e = st_find_tensor(f, "e");
    cr_assert_not_null(e);
    cr_expect_eq(e->nbytes, 0);
    cr_expect_eq(tensor_numel(e), 0);
    cr_expect_null(st_find_tensor(f, "__metadata__"));
    cr_expect_null(st_find_tensor(f, "z"));
    cr_expect_str_eq(st_tensor_path(f, 0), path);
    cr_expect_null(st_tensor(f, 4));
    cr_expect_null(st_tensor_path(f, -1));
    st_close(f);
    cleanup(&d);
}

Test(safetensors, every_dtype_maps) {
    static const struct {
        const char *s;
        dtype t;
        int size;
    } dt[] = {{"F32", DT_F32, 4}, {"F16", DT_F16, 2}, {"BF16", DT_BF16, 2}, {"F64", DT_F64, 8},
              {"I64", DT_I64, 8}, {"I32", DT_I32, 4}, {"I16", DT_I16, 2},   {"I8", DT_I8, 1},
              {"U8", DT_U8, 1},   {"U32", DT_U32, 4}, {"BOOL", DT_BOOL, 1}};
    for (size_t i = 0; i < sizeof dt / sizeof dt[0]; i++) {
        char json[160];
        snprintf(json, sizeof json, "{\"t\":{\"dtype\":\"%s\",\"shape\":[3],\"data_offsets\":[0,%d]}}",
                 dt[i].s, 3 * dt[i].size);
        tmpdir_t d = {0};
        uint8_t data[24] = {0};
        const char *path = write_st(&d, "x.safetensors", json, data, (size_t)(3 * dt[i].size), 0);
        st_file *f;
        char err[ERR_LEN];
        cr_assert_eq(st_open(path, &f, err), 0, "%s: %s", dt[i].s, err);
        cr_expect_eq(st_tensor(f, 0)->type, dt[i].t, "%s", dt[i].s);
        st_close(f);
        cleanup(&d);
    }
}

Test(safetensors, sharded_index) {
    tmpdir_t d = {0};
    float x[4] = {1, 2, 3, 4};
    uint8_t y[3] = {9, 8, 7};
    const char *s1 = write_st(&d, "model-00001-of-00002.safetensors",
                              "{\"x\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", x,
                              16, 0);
    const char *s2 = write_st(&d, "model-00002-of-00002.safetensors",
                              "{\"y\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]},"
                              "\"z\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]}}",
                              y, 3, 0);
    (void)s2;
    const char *idx = "{\"metadata\":{\"total_size\":20},\"weight_map\":{"
                      "\"x\":\"model-00001-of-00002.safetensors\","
                      "\"y\":\"model-00002-of-00002.safetensors\"}}";
    const char *ip = write_raw(&d, "model.safetensors.index.json", idx, strlen(idx));
    st_file *f;
    char err[ERR_LEN];
    /* z overlaps y in shard 2: refused, naming that shard */
    cr_expect_eq(st_open(ip, &f, err), -1);
    cr_expect(strstr(err, "overlap") && strstr(err, "model-00002-of-00002.safetensors"), "%s", err);
    write_st(&d, "model-00002-of-00002.safetensors",
             "{\"y\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]}}", y, 3, 0);
    cr_assert_eq(st_open(ip, &f, err), 0, "%s", err);
    cr_expect_eq(st_n_tensors(f), 2);
    const tensor *tx = st_find_tensor(f, "x"), *ty = st_find_tensor(f, "y");
    cr_assert(tx && ty);
    cr_expect_eq(tx->shape[0], 2);
    float v;
    memcpy(&v, (const uint8_t *)tx->data + 12, 4);
    cr_expect_eq(v, 4.0f);
    cr_expect_eq(((const uint8_t *)ty->data)[2], 7);
    for (int i = 0; i < 2; i++) {
        const char *want = st_tensor(f, i) == tx ? s1 : "model-00002-of-00002.safetensors";
        cr_expect(strstr(st_tensor_path(f, i), want), "%s", st_tensor_path(f, i));
    }
    st_close(f);
    cleanup(&d);
}

/* ---- damaged single files -------------------------------------------------------- */

Test(safetensors, header_length_and_truncation) {
    tmpdir_t d = {0};
    uint8_t data[40];
    good_data(data);
    st_file *f;
    char err[ERR_LEN];
    const char *p = write_st(&d, "m.safetensors", GOOD_HEADER, data, 40, 1ull << 40);
    cr_expect_eq(st_open(p, &f, err), -1);
    cr_expect(strstr(err, p) && strstr(err, "runs past the end"), "%s", err);
    p = write_st(&d, "m.safetensors", GOOD_HEADER, data, 40, ~0ull);
    cr_expect_eq(st_open(p, &f, err), -1);
    cr_expect(strstr(err, p) && strstr(err, "runs past the end"), "%s", err);
    p = write_raw(&d, "m.safetensors", "\x02\0\0", 3);
    cr_expect_eq(st_open(p, &f, err), -1);
    cr_expect(strstr(err, p) && strstr(err, "truncated"), "%s", err);
    /* every prefix of the good file is refused: the last tensor ends at the end */
    size_t hl = (strlen(GOOD_HEADER) + 7) / 8 * 8, total = 8 + hl + 40;
    write_st(&d, "full.safetensors", GOOD_HEADER, data, 40, 0);
    FILE *fp = fopen(tmp_path(&d, "full.safetensors"), "rb");
    uint8_t *all = malloc(total);
    cr_assert_eq(fread(all, 1, total, fp), total);
    fclose(fp);
    for (size_t n = 0; n < total; n++) {
        p = write_raw(&d, "m.safetensors", all, n);
        cr_assert_eq(st_open(p, &f, err), -1, "a %zu-byte prefix of %zu was accepted", n, total);
        cr_assert(strstr(err, p), "%s", err);
    }
    free(all);
    cleanup(&d);
}

Test(safetensors, bad_json_reports_line_and_column) {
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\n \"shape\":[2,3] \"data_offsets\":[0,24]}}", 24,
                      "line 2, column");
    expect_bad_header("[1,2,3]", 0, "not an object");
    expect_bad_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                      8, "duplicate");
}

Test(safetensors, unknown_dtype_names_tensor_and_dtype) {
    expect_bad_header("{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4,
                      "tensor 'w' has unsupported dtype \"F8_E4M3\"");
    expect_bad_header("{\"w\":{\"dtype\":7,\"shape\":[4],\"data_offsets\":[0,4]}}", 4, "dtype");
    expect_bad_header("{\"w\":{\"shape\":[4],\"data_offsets\":[0,4]}}", 4, "dtype");
}

Test(safetensors, byte_size_must_match_shape) {
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 24,
                      "needs 24");
    expect_bad_header("{\"w\":{\"dtype\":\"BF16\",\"shape\":[5],\"data_offsets\":[0,12]}}", 24,
                      "needs 10");
    /* product overflows 64 bits */
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                      "\"data_offsets\":[0,8]}}", 8, "overflows");
    expect_bad_header("{\"w\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],"
                      "\"data_offsets\":[0,8]}}", 8, "overflows");
}

Test(safetensors, bad_shapes) {
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
                      "shape entry 0");
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
                      "shape entry 0");
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}}", 4,
                      "must be an array");
    expect_bad_header("{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 4,
                      "6 dimensions");
    expect_bad_header("{\"w\":[1,2]}", 4, "not an object");
}

Test(safetensors, bad_offsets) {
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 12,
                      "outside the 12-byte data buffer");
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 12,
                      "outside");
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
                      "\"data_offsets\":[18446744073709551612,18446744073709551616]}}", 12,
                      "line 1"); /* integers beyond 64 bits are a JSON error */
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 12,
                      "data_offsets");
    expect_bad_header("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 12,
                      "data_offsets");
    expect_bad_header("{\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
                      "tensors 'u' and 'v' overlap");
    expect_bad_header("{\"v\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
                      "\"u\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 12,
                      "overlap");
}

/* Deterministic random damage to the header: never a crash, always either a
 * clean open or a message naming the file. */
Test(safetensors, random_header_damage_never_crashes) {
    size_t hl = strlen(GOOD_HEADER);
    char *json = malloc(hl + 1);
    uint8_t data[40];
    good_data(data);
    uint64_t x = 0x2545F4914F6CDD1Dull;
    tmpdir_t d = {0};
    int opened = 0;
    static const char alphabet[] = "{}[],:\"0123456789-.eE aF3216BU";
    for (int it = 0; it < 1000; it++) {
        memcpy(json, GOOD_HEADER, hl + 1);
        for (int k = 0; k < 1 + it % 3; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            json[x % hl] = alphabet[(x >> 32) % (sizeof alphabet - 1)];
        }
        const char *p = write_st(&d, "m.safetensors", json, data, 40, 0);
        st_file *f = NULL;
        char err[ERR_LEN] = "";
        if (st_open(p, &f, err) == 0) {
            opened++;
            volatile uint8_t sink = 0;
            for (int i = 0; i < st_n_tensors(f); i++) {
                const tensor *t = st_tensor(f, i);
                if (t->nbytes) sink ^= ((const uint8_t *)t->data)[t->nbytes - 1];
            }
            st_close(f);
        } else {
            cr_assert(strstr(err, p), "iteration %d: %s", it, err);
        }
    }
    cr_log_info("random header damage: %d of 1000 variants still opened", opened);
    free(json);
    cleanup(&d);
}

/* ---- damaged sharded checkpoints ------------------------------------------------- */

/* Two shards holding x (s1) and y (s2); `index` is written as the index file. */
static void expect_bad_index(const char *index, const char *want, int dup_in_s2) {
    tmpdir_t d = {0};
    float x[4] = {1, 2, 3, 4};
    write_st(&d, "s1.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
             x, 16, 0);
    write_st(&d, "s2.safetensors",
             dup_in_s2 ? "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}"
                       : "{\"y\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
             x, 16, 0);
    const char *ip = write_raw(&d, "model.safetensors.index.json", index, strlen(index));
    st_file *f = NULL;
    char err[ERR_LEN] = "";
    int rc = st_open(ip, &f, err);
    cr_expect_eq(rc, -1, "expected an error containing '%s' for %s", want, index);
    cr_expect(strstr(err, ip) || (dup_in_s2 && strstr(err, "s2.safetensors")),
              "message does not name the file: %s", err);
    cr_expect(strstr(err, want) != NULL, "message lacks '%s': %s", want, err);
    if (!rc) st_close(f);
    cleanup(&d);
}

Test(safetensors, bad_index) {
    expect_bad_index("{\"weight_map\":{\"x\":\"s1.safetensors\",\"y\":\"s3.safetensors\"}}",
                     "s3.safetensors", 0);
    expect_bad_index("{\"weight_map\":{\"x\":\"s1.safetensors\",\"y\":\"s2.safetensors\"}}",
                     "tensor 'x' appears in both", 1);
    expect_bad_index("{\"weight_map\":{\"x\":\"s1.safetensors\",\"w\":\"s2.safetensors\"}}",
                     "tensor 'w'", 0);
    expect_bad_index("{\"weight_map\":{\"x\":\"s2.safetensors\",\"y\":\"s1.safetensors\"}}",
                     "but it is in", 0);
    expect_bad_index("{\"weight_map\":{\"x\":\"../s1.safetensors\"}}", "outside", 0);
    expect_bad_index("{\"weight_map\":{\"x\":\"/etc/passwd\"}}", "outside", 0);
    expect_bad_index("{\"weight_map\":{\"x\":1}}", "not a file name", 0);
    expect_bad_index("{\"weight_map\":{}}", "empty", 0);
    expect_bad_index("{\"metadata\":{}}", "weight_map", 0);
    expect_bad_index("{\"weight_map\":{\"x\":\"s1.safetensors\",}", "line 1, column", 0);
}
