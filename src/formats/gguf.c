/* gguf.c - GGUF v2/v3 reader: one read-only mmap, everything validated at open.
 *
 * File layout (little-endian): magic "GGUF", u32 version, u64 n_tensors,
 * u64 n_kv, then n_kv key/values, then n_tensors tensor infos, then padding
 * to `general.alignment` (default 32), then the tensor data section. Tensor
 * offsets are relative to the start of that section.
 *
 * The input is treated as hostile: every length is checked against the bytes
 * that remain before it is used, every product is overflow-checked, and
 * nothing is handed out before the whole file has been walked. Names and keys
 * are copied into NUL-terminated strings we own, because in the file they are
 * length-prefixed and not terminated. */
#include "gguf.h"

#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "base/util.h"

#define GGUF_MAX_DIMS 4 /* ggml's GGML_MAX_DIMS */

#define GGUF_MAGIC 0x46554747u          /* "GGUF" read as a little-endian u32 */
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_ALIGNMENT (1u << 30)   /* keeps align_up() far from overflow */
#define GGUF_MAX_NAME 4096              /* keys and tensor names; real ones are < 100 */
#define GGUF_MAX_NESTING 4              /* arrays of arrays of ...: bounded recursion */

/* One metadata key/value. Values stay in the mapping; only the key is copied. */
typedef struct {
    char *key;               /* owned, NUL-terminated */
    gguf_type type;
    const uint8_t *val;      /* scalar value bytes in the mapping (for scalars) */
    gguf_str str;            /* for GGUF_STRING */
    gguf_type arr_type;      /* for GGUF_ARRAY: element type */
    uint64_t arr_n;          /* for GGUF_ARRAY: element count */
    const uint8_t *arr_data; /* for GGUF_ARRAY: first element in the mapping */
    const uint8_t **arr_str; /* for string arrays: (arr_n) pointers to each element's
                                u64 length prefix, owned; makes gguf_get_arr_str O(1) */
} gguf_kv;

struct gguf_file {
    char *path;           /* owned copy of the path given to gguf_open */
    file_map map;         /* the whole file */
    uint32_t version;     /* 2 or 3 */
    uint64_t alignment;   /* general.alignment or 32 */
    int n_kv;
    gguf_kv *kv;          /* (n_kv) in file order */
    int *kv_sorted;       /* (n_kv) indices into kv, sorted by key, for bsearch */
    int n_tensors;
    tensor *tensors;      /* (n_tensors) in file order; names owned, data into the map */
    int *t_sorted;        /* (n_tensors) indices into tensors, sorted by name */
};

/* ---- cursor over the mapping ----------------------------------------------------- */

typedef struct {
    const uint8_t *base;
    size_t size, pos;
    const char *path;
    char *err;
} cursor;

static int need(cursor *c, uint64_t n, const char *what) {
    if (n > c->size - c->pos)
        return errf(c->err, "%s: truncated file: %s needs %llu bytes at offset %zu, file has %zu",
                    c->path, what, (unsigned long long)n, c->pos, c->size);
    return 0;
}

static int rd32(cursor *c, uint32_t *v, const char *what) {
    if (need(c, 4, what)) return -1;
    *v = rd_u32(c->base + c->pos);
    c->pos += 4;
    return 0;
}

static int rd64(cursor *c, uint64_t *v, const char *what) {
    if (need(c, 8, what)) return -1;
    *v = rd_u64(c->base + c->pos);
    c->pos += 8;
    return 0;
}

/* A u64-length-prefixed string; the returned pointer is into the mapping. */
static int rd_str(cursor *c, gguf_str *s, const char *what) {
    uint64_t len;
    if (rd64(c, &len, what) || need(c, len, what)) return -1;
    s->ptr = (const char *)c->base + c->pos;
    s->len = len;
    c->pos += (size_t)len;
    return 0;
}

/* Copy a key or tensor name into an owned C string. Embedded NULs are refused:
 * lookups go by C string and must not be fooled by a truncated copy. */
static int dup_name(cursor *c, gguf_str s, const char *what, char **out) {
    if (s.len == 0 || s.len > GGUF_MAX_NAME)
        return errf(c->err, "%s: %s has length %llu, expected 1..%d", c->path, what,
                    (unsigned long long)s.len, GGUF_MAX_NAME);
    if (memchr(s.ptr, '\0', (size_t)s.len))
        return errf(c->err, "%s: %s contains a NUL byte", c->path, what);
    char *p = malloc((size_t)s.len + 1);
    if (!p) return errf(c->err, "%s: out of memory", c->path);
    memcpy(p, s.ptr, (size_t)s.len);
    p[s.len] = '\0';
    *out = p;
    return 0;
}

/* ---- metadata values ------------------------------------------------------------- */

/* Size of a fixed-size scalar type, 0 for string/array/unknown. */
static size_t scalar_size(uint32_t t) {
    switch (t) {
    case GGUF_UINT8: case GGUF_INT8: case GGUF_BOOL: return 1;
    case GGUF_UINT16: case GGUF_INT16: return 2;
    case GGUF_UINT32: case GGUF_INT32: case GGUF_FLOAT32: return 4;
    case GGUF_UINT64: case GGUF_INT64: case GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

static int known_type(uint32_t t) { return t <= GGUF_FLOAT64; }

static int check_bools(cursor *c, const uint8_t *p, uint64_t n, const char *key) {
    for (uint64_t i = 0; i < n; i++)
        if (p[i] > 1)
            return errf(c->err, "%s: key '%s': bool value %u, expected 0 or 1", c->path, key, p[i]);
    return 0;
}

/* Walk (and validate) an array body: u32 element type, u64 count, elements.
 * Fills *type / *n / *data for the caller; nested arrays are walked recursively
 * to a bounded depth. */
static int skip_array(cursor *c, const char *key, int depth, gguf_type *type, uint64_t *n,
                      const uint8_t **data) {
    uint32_t et;
    uint64_t cnt;
    if (depth > GGUF_MAX_NESTING)
        return errf(c->err, "%s: key '%s': arrays nested deeper than %d", c->path, key,
                    GGUF_MAX_NESTING);
    if (rd32(c, &et, "array type") || rd64(c, &cnt, "array length")) return -1;
    if (!known_type(et))
        return errf(c->err, "%s: key '%s': unknown array element type %u", c->path, key, et);
    *type = (gguf_type)et;
    *n = cnt;
    *data = c->base + c->pos;
    size_t es = scalar_size(et);
    if (es) {
        if (cnt > (c->size - c->pos) / es)
            return errf(c->err, "%s: key '%s': array of %llu elements runs past the end of the file",
                        c->path, key, (unsigned long long)cnt);
        if (et == GGUF_BOOL && check_bools(c, c->base + c->pos, cnt, key)) return -1;
        c->pos += (size_t)(cnt * es);
        return 0;
    }
    /* Variable-size elements: each takes at least 8 bytes (a string length, or
     * an array header of 12), which bounds the count before we loop on it. */
    if (cnt > (c->size - c->pos) / 8)
        return errf(c->err, "%s: key '%s': array of %llu elements runs past the end of the file",
                    c->path, key, (unsigned long long)cnt);
    for (uint64_t i = 0; i < cnt; i++) {
        if (et == GGUF_STRING) {
            gguf_str s;
            if (rd_str(c, &s, "string array element")) return -1;
        } else {
            gguf_type t2;
            uint64_t n2;
            const uint8_t *d2;
            if (skip_array(c, key, depth + 1, &t2, &n2, &d2)) return -1;
        }
    }
    return 0;
}

/* Index a validated string array: one pointer per element, to its length prefix. */
static int index_str_array(cursor *c, gguf_kv *kv) {
    if (kv->arr_n == 0) return 0;
    kv->arr_str = malloc((size_t)kv->arr_n * sizeof *kv->arr_str);
    if (!kv->arr_str) return errf(c->err, "%s: out of memory", c->path);
    const uint8_t *p = kv->arr_data;
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        kv->arr_str[i] = p;
        p += 8 + rd_u64(p); /* already bounds-checked by skip_array */
    }
    return 0;
}

static int read_kv(cursor *c, gguf_kv *kv) {
    gguf_str k;
    uint32_t t;
    if (rd_str(c, &k, "metadata key") || dup_name(c, k, "metadata key", &kv->key)) return -1;
    if (rd32(c, &t, "metadata value type")) return -1;
    if (!known_type(t))
        return errf(c->err, "%s: key '%s': unknown value type %u", c->path, kv->key, t);
    kv->type = (gguf_type)t;
    kv->val = c->base + c->pos;
    if (t == GGUF_STRING) return rd_str(c, &kv->str, kv->key);
    if (t == GGUF_ARRAY) {
        if (skip_array(c, kv->key, 1, &kv->arr_type, &kv->arr_n, &kv->arr_data)) return -1;
        return kv->arr_type == GGUF_STRING ? index_str_array(c, kv) : 0;
    }
    if (need(c, scalar_size(t), kv->key)) return -1;
    if (t == GGUF_BOOL && check_bools(c, kv->val, 1, kv->key)) return -1;
    c->pos += scalar_size(t);
    return 0;
}

/* ---- tensor infos ---------------------------------------------------------------- */

/* Read one tensor info; the data offset is returned relative to the data section
 * and checked later, once the section's start is known. */
static int read_tensor_info(cursor *c, tensor *t, uint64_t *offset) {
    gguf_str s;
    uint32_t nd, gt;
    char *name;
    if (rd_str(c, &s, "tensor name") || dup_name(c, s, "tensor name", &name)) return -1;
    t->name = name;
    if (rd32(c, &nd, name)) return -1;
    if (nd < 1 || nd > GGUF_MAX_DIMS)
        return errf(c->err, "%s: tensor '%s' has %u dimensions, expected 1..%d", c->path, name, nd,
                    GGUF_MAX_DIMS);
    uint64_t ne[GGUF_MAX_DIMS];
    for (uint32_t i = 0; i < nd; i++) {
        if (rd64(c, &ne[i], name)) return -1;
        if (ne[i] == 0 || ne[i] > (uint64_t)INT64_MAX)
            return errf(c->err, "%s: tensor '%s' dimension %u is %llu, expected > 0", c->path, name,
                        i, (unsigned long long)ne[i]);
    }
    if (rd32(c, &gt, name) || rd64(c, offset, name)) return -1;
    if (dtype_from_ggml(gt, &t->type)) {
        char types[160];
        dtype_gguf_supported(types, sizeof types);
        return errf(c->err, "%s: tensor '%s' has ggml type %u (%s); supported: %s", c->path, name, gt,
                    ggml_type_name(gt), types);
    }
    /* numel and byte size, overflow-checked: a row of ne[0] elements is a whole
     * number of blocks, rows multiply by the outer dims. */
    uint64_t be = (uint64_t)dtype_block_elems(t->type), bb = (uint64_t)dtype_block_bytes(t->type);
    if (ne[0] % be)
        return errf(c->err, "%s: tensor '%s' (%s) row length %llu is not a multiple of the block size %llu",
                    c->path, name, dtype_name(t->type), (unsigned long long)ne[0],
                    (unsigned long long)be);
    if (ne[0] / be > SIZE_MAX / bb)
        return errf(c->err, "%s: tensor '%s' is too large (byte size overflows)", c->path, name);
    uint64_t numel = ne[0], bytes = ne[0] / be * bb;
    for (uint32_t i = 1; i < nd; i++) {
        if (numel > (uint64_t)INT64_MAX / ne[i] || bytes > SIZE_MAX / ne[i])
            return errf(c->err, "%s: tensor '%s' is too large (element count overflows)", c->path,
                        name);
        numel *= ne[i];
        bytes *= ne[i];
    }
    t->ndim = (int)nd;
    for (uint32_t i = 0; i < nd; i++) t->shape[i] = (int64_t)ne[nd - 1 - i]; /* ggml ne -> HF order */
    t->nbytes = (size_t)bytes;
    return 0;
}

/* ---- lookup indexes -------------------------------------------------------------- */

/* qsort has no context argument: sort (name, index) pairs instead. */
typedef struct {
    const char *name;
    int idx;
} name_idx;

static int cmp_name_idx(const void *a, const void *b) {
    return strcmp(((const name_idx *)a)->name, ((const name_idx *)b)->name);
}

/* Fill out[] with indices sorted by name; report the first duplicate name. */
static int sort_names(const char **names, int n, int *out, const char **dup) {
    *dup = NULL;
    if (n == 0) return 0;
    name_idx *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp) return -1;
    for (int i = 0; i < n; i++) tmp[i] = (name_idx){names[i], i};
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_name_idx);
    for (int i = 0; i < n; i++) {
        out[i] = tmp[i].idx;
        if (i && !strcmp(tmp[i - 1].name, tmp[i].name) && !*dup) *dup = tmp[i].name;
    }
    free(tmp);
    return 0;
}

static int build_index(cursor *c, const char **names, int n, int **out, const char *what) {
    *out = malloc((size_t)(n ? n : 1) * sizeof **out);
    const char *dup;
    if (!*out || sort_names(names, n, *out, &dup)) return errf(c->err, "%s: out of memory", c->path);
    if (dup) return errf(c->err, "%s: duplicate %s '%s'", c->path, what, dup);
    return 0;
}

/* Binary search over a sorted index; `name_of` maps an index to its name. */
static int find_sorted(const int *sorted, int n, const char *name,
                       const char *(*name_of)(const gguf_file *, int), const gguf_file *f) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int r = strcmp(name, name_of(f, sorted[mid]));
        if (r == 0) return sorted[mid];
        if (r < 0) hi = mid - 1; else lo = mid + 1;
    }
    return -1;
}

static const char *kv_name(const gguf_file *f, int i) { return f->kv[i].key; }
static const char *tensor_name(const gguf_file *f, int i) { return f->tensors[i].name; }

static const gguf_kv *find_kv(const gguf_file *f, const char *key) {
    int i = find_sorted(f->kv_sorted, f->n_kv, key, kv_name, f);
    return i < 0 ? NULL : &f->kv[i];
}

/* ---- open ------------------------------------------------------------------------ */

static int read_header(cursor *c, gguf_file *f, uint64_t *n_tensors, uint64_t *n_kv) {
    uint32_t magic;
    /* the magic first: a short file that does not start with "GGUF" is not a GGUF at all, not a truncated one */
    if (c->size >= 4 && memcmp(c->base, "GGUF", 4) != 0) {
        memcpy(&magic, c->base, 4);
        return errf(c->err, "%s: not a GGUF file (bad magic 0x%08x, expected \"GGUF\")", c->path, magic);
    }
    if (c->size && memcmp(c->base, "GGUF", c->size < 4 ? c->size : 4) != 0)
        return errf(c->err, "%s: not a GGUF file (%zu bytes, not starting with \"GGUF\")", c->path, c->size);
    if (c->size < 24)
        return errf(c->err, "%s: truncated file: %zu bytes, a GGUF header needs 24", c->path, c->size);
    rd32(c, &magic, "magic");
    if (magic != GGUF_MAGIC)
        return errf(c->err, "%s: not a GGUF file (bad magic 0x%08x, expected \"GGUF\")", c->path, magic);
    rd32(c, &f->version, "version");
    if (f->version != 2 && f->version != 3)
        return errf(c->err, "%s: GGUF version %u, expected 2 or 3", c->path, f->version);
    rd64(c, n_tensors, "tensor count");
    rd64(c, n_kv, "metadata count");
    /* Every key/value takes at least 13 bytes (8 length + 1 char + 4 type + ...),
     * every tensor info at least 25: counts beyond that cannot fit in the file. */
    size_t left = c->size - c->pos;
    if (*n_kv > left / 13 || *n_kv > INT32_MAX)
        return errf(c->err, "%s: metadata count %llu cannot fit in a %zu-byte file (truncated or corrupt)", c->path,
                    (unsigned long long)*n_kv, c->size);
    if (*n_tensors > left / 25 || *n_tensors > INT32_MAX)
        return errf(c->err, "%s: tensor count %llu cannot fit in a %zu-byte file (truncated or corrupt)", c->path,
                    (unsigned long long)*n_tensors, c->size);
    return 0;
}

static int read_alignment(cursor *c, gguf_file *f) {
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    if (!find_kv(f, "general.alignment")) return 0;
    int64_t a;
    if (gguf_get_int(f, "general.alignment", &a) || a <= 0 || (uint64_t)a > GGUF_MAX_ALIGNMENT ||
        (a & (a - 1)))
        return errf(c->err, "%s: general.alignment must be a power of two up to 2^30", c->path);
    f->alignment = (uint64_t)a;
    return 0;
}

typedef struct {
    uint64_t off, end;
    int idx;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off ? 1 : x->idx - y->idx;
}

/* Place every tensor in the data section: aligned, inside the file, no overlaps. */
static int place_tensors(cursor *c, gguf_file *f, const uint64_t *offsets) {
    uint64_t a = f->alignment;
    uint64_t data_start = ((uint64_t)c->pos + a - 1) / a * a;
    if (f->n_tensors == 0) return 0;
    if (data_start > c->size)
        return errf(c->err, "%s: truncated file: tensor data would start at %llu, file has %zu bytes",
                    c->path, (unsigned long long)data_start, c->size);
    uint64_t data_size = c->size - data_start;
    span *s = malloc((size_t)f->n_tensors * sizeof *s);
    if (!s) return errf(c->err, "%s: out of memory", c->path);
    int rc = 0;
    for (int i = 0; i < f->n_tensors && !rc; i++) {
        tensor *t = &f->tensors[i];
        uint64_t off = offsets[i];
        if (off % a)
            rc = errf(c->err, "%s: tensor '%s' offset %llu is not a multiple of the alignment %llu",
                      c->path, t->name, (unsigned long long)off, (unsigned long long)a);
        else if (off > data_size || t->nbytes > data_size - off)
            rc = errf(c->err,
                      "%s: tensor '%s' data [%llu, +%zu) lies outside the %llu-byte data section",
                      c->path, t->name, (unsigned long long)off, t->nbytes,
                      (unsigned long long)data_size);
        else {
            t->data = c->base + data_start + off;
            s[i] = (span){off, off + t->nbytes, i};
        }
    }
    if (!rc) {
        qsort(s, (size_t)f->n_tensors, sizeof *s, cmp_span);
        for (int i = 1; i < f->n_tensors && !rc; i++)
            if (s[i].off < s[i - 1].end)
                rc = errf(c->err, "%s: tensors '%s' and '%s' overlap in the data section", c->path,
                          f->tensors[s[i - 1].idx].name, f->tensors[s[i].idx].name);
    }
    free(s);
    return rc;
}

static int read_all(cursor *c, gguf_file *f) {
    uint64_t n_tensors, n_kv;
    if (read_header(c, f, &n_tensors, &n_kv)) return -1;
    f->kv = calloc((size_t)n_kv + 1, sizeof *f->kv);
    f->tensors = calloc((size_t)n_tensors + 1, sizeof *f->tensors);
    if (!f->kv || !f->tensors) return errf(c->err, "%s: out of memory", c->path);
    for (uint64_t i = 0; i < n_kv; i++) {
        f->n_kv = (int)i + 1; /* so gguf_close frees what was read */
        if (read_kv(c, &f->kv[i])) return -1;
    }
    const char **names = malloc(((size_t)(n_kv > n_tensors ? n_kv : n_tensors) + 1) * sizeof *names);
    if (!names) return errf(c->err, "%s: out of memory", c->path);
    for (int i = 0; i < f->n_kv; i++) names[i] = f->kv[i].key;
    int rc = build_index(c, names, f->n_kv, &f->kv_sorted, "metadata key");
    if (!rc) rc = read_alignment(c, f);
    uint64_t *offsets = rc ? NULL : malloc(((size_t)n_tensors + 1) * sizeof *offsets);
    if (!rc && !offsets) rc = errf(c->err, "%s: out of memory", c->path);
    for (uint64_t i = 0; i < n_tensors && !rc; i++) {
        f->n_tensors = (int)i + 1;
        rc = read_tensor_info(c, &f->tensors[i], &offsets[i]);
    }
    for (int i = 0; i < f->n_tensors && !rc; i++) names[i] = f->tensors[i].name;
    if (!rc) rc = build_index(c, names, f->n_tensors, &f->t_sorted, "tensor name");
    if (!rc) rc = place_tensors(c, f, offsets);
    free(offsets);
    free(names);
    return rc;
}

int gguf_open(const char *path, gguf_file **out, char *err) {
    *out = NULL;
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) return errf(err, "%s: out of memory", path);
    f->path = strdup(path);
    if (!f->path) {
        free(f);
        return errf(err, "%s: out of memory", path);
    }
    if (file_map_open(path, &f->map, err)) {
        gguf_close(f);
        return -1;
    }
    cursor c = {f->map.data, f->map.size, 0, f->path, err};
    if (read_all(&c, f)) {
        gguf_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    for (int i = 0; i < f->n_kv; i++) {
        free(f->kv[i].key);
        free(f->kv[i].arr_str);
    }
    for (int i = 0; i < f->n_tensors; i++) free((char *)f->tensors[i].name);
    free(f->kv);
    free(f->kv_sorted);
    free(f->tensors);
    free(f->t_sorted);
    file_map_close(&f->map);
    free(f->path);
    free(f);
}

/* ---- accessors ------------------------------------------------------------------- */

const char *gguf_path(const gguf_file *f) { return f->path; }
uint32_t gguf_version(const gguf_file *f) { return f->version; }
int gguf_n_tensors(const gguf_file *f) { return f->n_tensors; }

const tensor *gguf_tensor(const gguf_file *f, int i) {
    return i >= 0 && i < f->n_tensors ? &f->tensors[i] : NULL;
}

const tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    int i = find_sorted(f->t_sorted, f->n_tensors, name, tensor_name, f);
    return i < 0 ? NULL : &f->tensors[i];
}

int gguf_has_key(const gguf_file *f, const char *key) { return find_kv(f, key) != NULL; }

int gguf_get_int(const gguf_file *f, const char *key, int64_t *out) {
    const gguf_kv *kv = find_kv(f, key);
    if (!kv) return -1;
    const uint8_t *p = kv->val;
    switch (kv->type) {
    case GGUF_UINT8: case GGUF_BOOL: *out = p[0]; return 0;
    case GGUF_INT8: *out = (int8_t)p[0]; return 0;
    case GGUF_UINT16: *out = rd_u16(p); return 0;
    case GGUF_INT16: *out = (int16_t)rd_u16(p); return 0;
    case GGUF_UINT32: *out = rd_u32(p); return 0;
    case GGUF_INT32: *out = (int32_t)rd_u32(p); return 0;
    case GGUF_INT64: *out = (int64_t)rd_u64(p); return 0;
    case GGUF_UINT64: {
        uint64_t v = rd_u64(p);
        if (v > (uint64_t)INT64_MAX) return -1;
        *out = (int64_t)v;
        return 0;
    }
    default: return -1;
    }
}

int gguf_get_float(const gguf_file *f, const char *key, double *out) {
    const gguf_kv *kv = find_kv(f, key);
    if (!kv) return -1;
    if (kv->type == GGUF_FLOAT32) {
        float v;
        memcpy(&v, kv->val, 4);
        *out = v;
        return 0;
    }
    if (kv->type == GGUF_FLOAT64) {
        memcpy(out, kv->val, 8);
        return 0;
    }
    if (kv->type == GGUF_BOOL) return -1;
    int64_t i;
    if (gguf_get_int(f, key, &i)) return -1;
    *out = (double)i;
    return 0;
}

int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out) {
    const gguf_kv *kv = find_kv(f, key);
    if (!kv || kv->type != GGUF_STRING) return -1;
    *out = kv->str;
    return 0;
}

int gguf_get_arr(const gguf_file *f, const char *key, gguf_type *elem_type, uint64_t *n,
                 const void **data) {
    const gguf_kv *kv = find_kv(f, key);
    if (!kv || kv->type != GGUF_ARRAY) return -1;
    *elem_type = kv->arr_type;
    *n = kv->arr_n;
    *data = kv->arr_data;
    return 0;
}

int gguf_get_arr_str(const gguf_file *f, const char *key, uint64_t i, gguf_str *out) {
    const gguf_kv *kv = find_kv(f, key);
    if (!kv || kv->type != GGUF_ARRAY || kv->arr_type != GGUF_STRING || i >= kv->arr_n) return -1;
    const uint8_t *p = kv->arr_str[i];
    out->len = rd_u64(p);
    out->ptr = (const char *)p + 8;
    return 0;
}
