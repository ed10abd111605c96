/* strmap.c - open-addressing hash maps: token text -> id and merge pair ->
 * (rank, merged id). Linear probing, load factor at most 2/3, FNV-1a. */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull; /* mix so both halves (slot index, stored hash) are usable */
    return h ^ (h >> 32);
}

/* Load factor at most 2/3 (1/3..2/3 after rounding to a power of two): the
 * 128k-token vocabulary and its 280k merges fill 6 + 8 MB instead of 12 + 16 MB
 * at 1/2, and fresh pages are much of what loading costs. */
static uint64_t key_head(const char *s, size_t n) {
    uint64_t h = 0;
    memcpy(&h, s, n < 8 ? n : 8);
    return h;
}

static int key_eq(const strmap_slot *s, uint32_t hash, uint64_t head, const char *key, size_t len) {
    return s->hash == hash && s->len == len && s->head == head && (len <= 8 || !memcmp(s->key + 8, key + 8, len - 8));
}

static size_t cap_for(size_t expected) {
    size_t cap = 16;
    while (cap < expected + expected / 2 + 2) cap *= 2;
    return cap;
}

static int full(size_t n, size_t cap) { return (n + 1) * 3 > cap * 2; }

int strmap_init(strmap *m, size_t expected) {
    m->cap = cap_for(expected);
    m->n = 0;
    m->slots = tok_big_alloc(m->cap * sizeof *m->slots, 1);
    return m->slots ? 0 : -1;
}

static int strmap_grow(strmap *m) {
    strmap big;
    if (strmap_init(&big, m->cap)) return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key) strmap_put(&big, m->slots[i].key, m->slots[i].len, m->slots[i].id, NULL);
    free(m->slots);
    *m = big;
    return 0;
}

static int strmap_insert(strmap *m, const char *key, size_t len, int32_t id, int overwrite, int32_t *prev);

int strmap_put(strmap *m, const char *key, size_t len, int32_t id, int32_t *prev) {
    return strmap_insert(m, key, len, id, 0, prev);
}

int strmap_set(strmap *m, const char *key, size_t len, int32_t id, int32_t *prev) {
    return strmap_insert(m, key, len, id, 1, prev);
}

static int strmap_insert(strmap *m, const char *key, size_t len, int32_t id, int overwrite, int32_t *prev) {
    return strmap_insert_hashed(m, key, len, hash_bytes(key, len), id, overwrite, prev);
}

int strmap_insert_hashed(strmap *m, const char *key, size_t len, uint64_t h, int32_t id, int overwrite, int32_t *prev) {
    if (full(m->n, m->cap) && strmap_grow(m)) return -1;
    uint64_t head = key_head(key, len);
    size_t mask = m->cap - 1, i = h & mask;
    while (m->slots[i].key) {
        strmap_slot *s = &m->slots[i];
        if (key_eq(s, (uint32_t)(h >> 32), head, key, len)) {
            if (prev) *prev = s->id;
            if (overwrite) {
                s->key = key;
                s->id = id;
            }
            return 1;
        }
        i = (i + 1) & mask;
    }
    m->slots[i].head = head;
    m->slots[i].key = key;
    m->slots[i].len = (uint32_t)len;
    m->slots[i].hash = (uint32_t)(h >> 32);
    m->slots[i].id = id;
    m->n++;
    return 0;
}

uint64_t strmap_hash(const char *key, size_t len) { return hash_bytes(key, len); }

void strmap_prefetch(const strmap *m, uint64_t h) {
    if (m->slots) __builtin_prefetch(&m->slots[h & (m->cap - 1)]);
}

int32_t strmap_get(const strmap *m, const char *key, size_t len) {
    return strmap_get_hashed(m, key, len, hash_bytes(key, len));
}

int32_t strmap_get_hashed(const strmap *m, const char *key, size_t len, uint64_t h) {
    if (!m->slots) return -1;
    uint64_t head = key_head(key, len);
    size_t mask = m->cap - 1, i = h & mask;
    while (m->slots[i].key) {
        const strmap_slot *s = &m->slots[i];
        if (key_eq(s, (uint32_t)(h >> 32), head, key, len)) return s->id;
        i = (i + 1) & mask;
    }
    return -1;
}

void strmap_free(strmap *m) {
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

int pairmap_init(pairmap *m, size_t expected) {
    m->cap = cap_for(expected);
    m->n = 0;
    m->slots = tok_big_alloc(m->cap * sizeof *m->slots, 1);
    return m->slots ? 0 : -1;
}

static int pairmap_grow(pairmap *m) {
    pairmap big;
    if (pairmap_init(&big, m->cap)) return -1;
    for (size_t i = 0; i < m->cap; i++) {
        pairmap_slot *s = &m->slots[i];
        if (s->key)
            pairmap_put(&big, (int32_t)((s->key - 1) >> 32), (int32_t)((s->key - 1) & 0xffffffffu), s->rank, s->out);
    }
    free(m->slots);
    *m = big;
    return 0;
}

void pairmap_prefetch(const pairmap *m, int32_t a, int32_t b) {
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    if (m->slots) __builtin_prefetch(&m->slots[mix64(key) & (m->cap - 1)], 1);
}

int pairmap_put(pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t out) {
    if (full(m->n, m->cap) && pairmap_grow(m)) return -1;
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t mask = m->cap - 1, i = mix64(key) & mask;
    while (m->slots[i].key) {
        if (m->slots[i].key == key) {
            if (rank < m->slots[i].rank) {
                m->slots[i].rank = rank;
                m->slots[i].out = out;
            }
            return 0;
        }
        i = (i + 1) & mask;
    }
    m->slots[i].key = key;
    m->slots[i].rank = rank;
    m->slots[i].out = out;
    m->n++;
    return 0;
}

const pairmap_slot *pairmap_get(const pairmap *m, int32_t a, int32_t b) {
    if (!m->slots) return NULL;
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t mask = m->cap - 1, i = mix64(key) & mask;
    while (m->slots[i].key) {
        if (m->slots[i].key == key) return &m->slots[i];
        i = (i + 1) & mask;
    }
    return NULL;
}

void pairmap_free(pairmap *m) {
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}
