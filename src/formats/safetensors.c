/* safetensors.c - safetensors reader: one file, or the shards named by a
 * `model.safetensors.index.json`, each mmap'd once.
 *
 * A shard is: u64 little-endian header length N, N bytes of JSON
 * `{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}`,
 * then the data buffer; offsets are relative to the buffer. Every entry is
 * validated against the buffer before any view is handed out. The input is
 * treated as hostile: all arithmetic is overflow-checked. */
#include "safetensors.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* The format's own reference implementation caps headers at 100 MB. */
#define ST_MAX_HEADER (100u * 1000u * 1000u)
#define ST_MAX_TENSORS (1 << 24)

typedef struct {
    char *path;    /* owned */
    file_map map;  /* the whole shard */
} st_shard;

struct st_file {
    char *path;        /* owned copy of what st_open was given */
    int n_shards;
    st_shard *shards;  /* (n_shards) */
    int n, cap;
    tensor *t;         /* (n) views in shard order, then header order; names owned */
    int *shard_of;     /* (n) index into shards */
    int *sorted;       /* (n) indices sorted by name, for bsearch */
};

/* ---- dtypes ---------------------------------------------------------------------- */

static int dtype_from_string(const char *s, dtype *out) {
    static const struct {
        const char *name;
        dtype t;
    } map[] = {
        {"F32", DT_F32}, {"F16", DT_F16}, {"BF16", DT_BF16}, {"F64", DT_F64},
        {"I64", DT_I64}, {"I32", DT_I32}, {"I16", DT_I16},   {"I8", DT_I8},
        {"U8", DT_U8},   {"U32", DT_U32}, {"BOOL", DT_BOOL},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(s, map[i].name)) {
            *out = map[i].t;
            return 0;
        }
    return -1;
}

/* ---- one shard ------------------------------------------------------------------- */

static int push_tensor(st_file *f, const char *path, char *err) {
    if (f->n == f->cap) {
        if (f->cap >= ST_MAX_TENSORS) return errf(err, "%s: more than %d tensors", path, ST_MAX_TENSORS);
        int cap = f->cap ? f->cap * 2 : 64;
        tensor *t = realloc(f->t, (size_t)cap * sizeof *t);
        if (!t) return errf(err, "%s: out of memory", path);
        f->t = t;
        int *s = realloc(f->shard_of, (size_t)cap * sizeof *s);
        if (!s) return errf(err, "%s: out of memory", path);
        f->shard_of = s;
        f->cap = cap;
    }
    memset(&f->t[f->n], 0, sizeof f->t[f->n]);
    f->n++;
    return 0;
}

/* A JSON integer that is >= 0 (json_int_t is long long: never above INT64_MAX). */
static int json_uint(const json_t *v, uint64_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0) return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int parse_shape(const json_t *shape, tensor *t, uint64_t *numel, const char *path,
                       char *err) {
    if (!json_is_array(shape))
        return errf(err, "%s: tensor '%s': \"shape\" must be an array", path, t->name);
    size_t nd = json_array_size(shape);
    if (nd > TENSOR_MAX_DIMS)
        return errf(err, "%s: tensor '%s' has %zu dimensions, at most %d are supported", path,
                    t->name, nd, TENSOR_MAX_DIMS);
    *numel = 1;
    for (size_t i = 0; i < nd; i++) {
        uint64_t d;
        if (json_uint(json_array_get(shape, i), &d))
            return errf(err, "%s: tensor '%s': shape entry %zu is not a non-negative integer", path,
                        t->name, i);
        if (d && *numel > (uint64_t)INT64_MAX / d)
            return errf(err, "%s: tensor '%s': shape product overflows", path, t->name);
        *numel *= d;
        t->shape[i] = (int64_t)d;
    }
    t->ndim = (int)nd;
    return 0;
}

/* Validate one header entry and fill *t; the data pointer is set from `buf`. */
static int parse_entry(const json_t *e, tensor *t, const uint8_t *buf, uint64_t buf_size,
                       uint64_t *begin, uint64_t *end, const char *path, char *err) {
    if (!json_is_object(e)) return errf(err, "%s: tensor '%s': entry is not an object", path, t->name);
    const json_t *dt = json_object_get(e, "dtype");
    if (!json_is_string(dt))
        return errf(err, "%s: tensor '%s': missing or non-string \"dtype\"", path, t->name);
    if (dtype_from_string(json_string_value(dt), &t->type))
        return errf(err, "%s: tensor '%s' has unsupported dtype \"%s\"", path, t->name,
                    json_string_value(dt));
    uint64_t numel = 0;
    if (parse_shape(json_object_get(e, "shape"), t, &numel, path, err)) return -1;
    const json_t *off = json_object_get(e, "data_offsets");
    if (!json_is_array(off) || json_array_size(off) != 2 || json_uint(json_array_get(off, 0), begin) ||
        json_uint(json_array_get(off, 1), end))
        return errf(err, "%s: tensor '%s': \"data_offsets\" must be [begin, end], non-negative integers",
                    path, t->name);
    uint64_t es = (uint64_t)dtype_block_bytes(t->type);
    if (numel > UINT64_MAX / es)
        return errf(err, "%s: tensor '%s': byte size overflows", path, t->name);
    if (*begin > *end || *end > buf_size)
        return errf(err, "%s: tensor '%s': data_offsets [%llu, %llu] outside the %llu-byte data buffer",
                    path, t->name, (unsigned long long)*begin, (unsigned long long)*end,
                    (unsigned long long)buf_size);
    if (*end - *begin != numel * es)
        return errf(err, "%s: tensor '%s': data_offsets span %llu bytes, but %s shape needs %llu",
                    path, t->name, (unsigned long long)(*end - *begin), dtype_name(t->type),
                    (unsigned long long)(numel * es));
    t->nbytes = (size_t)(*end - *begin);
    t->data = buf + *begin;
    return 0;
}

typedef struct {
    uint64_t begin, end;
    int idx;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : x->idx - y->idx;
}

/* Tensors [first, f->n) come from one shard: no two may share a byte. */
static int check_overlaps(st_file *f, int first, const span *sp_in, const char *path, char *err) {
    int n = f->n - first, m = 0;
    if (n < 2) return 0;
    span *sp = malloc((size_t)n * sizeof *sp);
    if (!sp) return errf(err, "%s: out of memory", path);
    for (int i = 0; i < n; i++)
        if (sp_in[i].end > sp_in[i].begin) sp[m++] = sp_in[i]; /* empty tensors own no bytes */
    qsort(sp, (size_t)m, sizeof *sp, cmp_span);
    int rc = 0;
    for (int i = 1; i < m && !rc; i++)
        if (sp[i].begin < sp[i - 1].end)
            rc = errf(err, "%s: tensors '%s' and '%s' overlap in the data buffer", path,
                      f->t[sp[i - 1].idx].name, f->t[sp[i].idx].name);
    free(sp);
    return rc;
}

static int parse_header_json(const uint8_t *p, uint64_t n, const char *path, json_t **root,
                             char *err) {
    json_error_t je;
    *root = json_loadb((const char *)p, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!*root)
        return errf(err, "%s: header is not valid JSON (line %d, column %d): %s", path, je.line,
                    je.column, je.text);
    if (!json_is_object(*root)) {
        json_decref(*root);
        return errf(err, "%s: header JSON is not an object", path);
    }
    return 0;
}

/* Map one shard and append its tensors. */
static int load_shard(st_file *f, int si, char *err) {
    st_shard *sh = &f->shards[si];
    const char *path = sh->path;
    if (file_map_open(path, &sh->map, err)) return -1;
    size_t size = sh->map.size;
    if (size < 8) return errf(err, "%s: truncated file: %zu bytes, need at least 8", path, size);
    uint64_t hlen = rd_u64(sh->map.data);
    if (hlen > size - 8)
        return errf(err, "%s: header length %llu runs past the end of the %zu-byte file", path,
                    (unsigned long long)hlen, size);
    if (hlen < 2 || hlen > ST_MAX_HEADER)
        return errf(err, "%s: header length %llu, expected 2..%u", path, (unsigned long long)hlen,
                    ST_MAX_HEADER);
    json_t *root;
    if (parse_header_json(sh->map.data + 8, hlen, path, &root, err)) return -1;
    const uint8_t *buf = sh->map.data + 8 + hlen;
    uint64_t buf_size = size - 8 - hlen;
    size_t n_entries = json_object_size(root);
    span *sp = malloc((n_entries + 1) * sizeof *sp);
    int rc = sp ? 0 : errf(err, "%s: out of memory", path);
    int first = f->n;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (rc) break;
        if (!strcmp(key, "__metadata__")) continue;
        if ((rc = push_tensor(f, path, err))) break;
        tensor *t = &f->t[f->n - 1];
        f->shard_of[f->n - 1] = si;
        if (!(t->name = strdup(key))) {
            rc = errf(err, "%s: out of memory", path);
            break;
        }
        uint64_t b = 0, e = 0;
        rc = parse_entry(val, t, buf, buf_size, &b, &e, path, err);
        if (!rc) sp[f->n - 1 - first] = (span){b, e, f->n - 1};
    }
    if (!rc) rc = check_overlaps(f, first, sp, path, err);
    free(sp);
    json_decref(root);
    return rc;
}

/* ---- sharded checkpoints --------------------------------------------------------- */

static int has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* Shard names come from the index file: keep them inside its directory. */
static int safe_shard_name(const char *s) {
    if (!*s || s[0] == '/') return 0;
    for (const char *p = s; *p;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.') return 0;
        p += len + (slash != NULL);
    }
    return 1;
}

static int find_shard(const st_file *f, const char *path) {
    for (int i = 0; i < f->n_shards; i++)
        if (!strcmp(f->shards[i].path, path)) return i;
    return -1;
}

static char *join_dir(const char *index_path, const char *name) {
    const char *slash = strrchr(index_path, '/');
    size_t dl = slash ? (size_t)(slash - index_path) + 1 : 0;
    size_t nl = strlen(name);
    char *p = malloc(dl + nl + 1);
    if (!p) return NULL;
    memcpy(p, index_path, dl);
    memcpy(p + dl, name, nl + 1);
    return p;
}

/* Collect the distinct shard files named by weight_map, in first-seen order. */
static int collect_shards(st_file *f, const json_t *wm, char *err) {
    size_t n = json_object_size(wm);
    f->shards = calloc(n + 1, sizeof *f->shards);
    if (!f->shards) return errf(err, "%s: out of memory", f->path);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)wm, key, val) {
        if (!json_is_string(val))
            return errf(err, "%s: weight_map entry '%s' is not a file name", f->path, key);
        const char *name = json_string_value(val);
        if (!safe_shard_name(name))
            return errf(err, "%s: weight_map entry '%s' names '%s', outside the index's directory",
                        f->path, key, name);
        char *p = join_dir(f->path, name);
        if (!p) return errf(err, "%s: out of memory", f->path);
        if (find_shard(f, p) >= 0) {
            free(p);
            continue;
        }
        f->shards[f->n_shards++].path = p;
    }
    if (f->n_shards == 0) return errf(err, "%s: weight_map is empty", f->path);
    return 0;
}

static int build_index(st_file *f, char *err);

/* Every tensor the index names must be in the shard it names. */
static int check_weight_map(st_file *f, const json_t *wm, char *err) {
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)wm, key, val) {
        const tensor *t = st_find_tensor(f, key);
        char *want = join_dir(f->path, json_string_value(val));
        if (!want) return errf(err, "%s: out of memory", f->path);
        int rc = 0;
        if (!t)
            rc = errf(err, "%s: weight_map lists tensor '%s' in '%s', which does not contain it",
                      f->path, key, json_string_value(val));
        else if (strcmp(want, f->shards[f->shard_of[t - f->t]].path))
            rc = errf(err, "%s: weight_map lists tensor '%s' in '%s', but it is in '%s'", f->path,
                      key, json_string_value(val), f->shards[f->shard_of[t - f->t]].path);
        free(want);
        if (rc) return rc;
    }
    return 0;
}

/* Load one shard named by the index; a shard that cannot be opened is reported
 * against the index too, since that is the file that is wrong. */
static int load_index_shard(st_file *f, int i, char *err) {
    char sub[ERR_LEN];
    if (!load_shard(f, i, sub)) return 0;
    if (f->shards[i].map.data || f->shards[i].map.size) return errf(err, "%s", sub);
    return errf(err, "%s: weight_map names a shard that cannot be read: %s", f->path, sub);
}

static int open_index(st_file *f, char *err) {
    json_error_t je;
    json_t *root = json_load_file(f->path, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return errf(err, "%s: not valid JSON (line %d, column %d): %s", f->path, je.line, je.column,
                    je.text);
    const json_t *wm = json_object_get(root, "weight_map");
    int rc = 0;
    if (!json_is_object(wm)) rc = errf(err, "%s: missing \"weight_map\" object", f->path);
    if (!rc) rc = collect_shards(f, wm, err);
    for (int i = 0; i < f->n_shards && !rc; i++) rc = load_index_shard(f, i, err);
    if (!rc) rc = build_index(f, err);
    if (!rc) rc = check_weight_map(f, wm, err);
    json_decref(root);
    return rc;
}

/* ---- lookup index ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    int idx;
} name_idx;

static int cmp_name_idx(const void *a, const void *b) {
    return strcmp(((const name_idx *)a)->name, ((const name_idx *)b)->name);
}

static int build_index(st_file *f, char *err) {
    f->sorted = malloc((size_t)(f->n ? f->n : 1) * sizeof *f->sorted);
    name_idx *tmp = malloc((size_t)(f->n ? f->n : 1) * sizeof *tmp);
    if (!f->sorted || !tmp) {
        free(tmp);
        return errf(err, "%s: out of memory", f->path);
    }
    for (int i = 0; i < f->n; i++) tmp[i] = (name_idx){f->t[i].name, i};
    qsort(tmp, (size_t)f->n, sizeof *tmp, cmp_name_idx);
    int rc = 0;
    for (int i = 0; i < f->n; i++) {
        f->sorted[i] = tmp[i].idx;
        if (i && !rc && !strcmp(tmp[i - 1].name, tmp[i].name))
            rc = errf(err, "%s: tensor '%s' appears in both '%s' and '%s'", f->path, tmp[i].name,
                      f->shards[f->shard_of[tmp[i - 1].idx]].path,
                      f->shards[f->shard_of[tmp[i].idx]].path);
    }
    free(tmp);
    return rc;
}

/* ---- open / close / access ------------------------------------------------------- */

int st_open(const char *path, st_file **out, char *err) {
    *out = NULL;
    st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return errf(err, "%s: out of memory", path);
    }
    int rc;
    if (has_suffix(path, ".json")) {
        rc = open_index(f, err); /* builds the lookup index after all shards */
    } else {
        f->shards = calloc(1, sizeof *f->shards);
        rc = f->shards && (f->shards[0].path = strdup(path)) ? 0 : errf(err, "%s: out of memory", path);
        if (!rc) {
            f->n_shards = 1;
            rc = load_shard(f, 0, err);
        }
        if (!rc) rc = build_index(f, err);
    }
    if (rc) {
        st_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

void st_close(st_file *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) free((char *)f->t[i].name);
    for (int i = 0; i < f->n_shards; i++) {
        file_map_close(&f->shards[i].map);
        free(f->shards[i].path);
    }
    free(f->shards);
    free(f->t);
    free(f->shard_of);
    free(f->sorted);
    free(f->path);
    free(f);
}

int st_n_tensors(const st_file *f) { return f->n; }

const tensor *st_tensor(const st_file *f, int i) { return i >= 0 && i < f->n ? &f->t[i] : NULL; }

const tensor *st_find_tensor(const st_file *f, const char *name) {
    if (!f->sorted) return NULL;
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int r = strcmp(name, f->t[f->sorted[mid]].name);
        if (r == 0) return &f->t[f->sorted[mid]];
        if (r < 0) hi = mid - 1; else lo = mid + 1;
    }
    return NULL;
}

const char *st_tensor_path(const st_file *f, int i) {
    return i >= 0 && i < f->n ? f->shards[f->shard_of[i]].path : NULL;
}
