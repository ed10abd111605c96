/* src/base/: what every layer may use (errors, fp16 / bf16, file mapping, clocks, the
 * thread pool, the CPUs the process may use, the tensor view). Knows nothing of dtypes' layouts,
 * files, models or the API.
 *
 * util.h - small helpers shared by every module: error messages, fp16/bf16
 * conversion, file mapping, timing. No global state. */
#ifndef LLMGEN_UTIL_H
#define LLMGEN_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Every fallible internal function takes `char *err` pointing at ERR_LEN bytes
 * and returns 0 on success, -1 on failure after writing one line (no newline)
 * that names the file / tensor / option and what was expected. */
#define ERR_LEN 512

/* Format into err (ERR_LEN bytes) and return -1, so callers can write
 * `return errf(err, "%s: truncated header", path);`. err may be NULL. */
int errf(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A read-only mapping of a whole file. */
typedef struct {
    const uint8_t *data; /* (size) bytes, PROT_READ, MAP_PRIVATE; NULL when size == 0 */
    size_t size;
} file_map;

/* Map `path` read-only. Errors: missing file, directory, unreadable. */
int file_map_open(const char *path, file_map *m, char *err);
void file_map_close(file_map *m);

/* Read a whole (small) file into a NUL-terminated heap buffer; caller frees. */
int file_read_all(const char *path, char **out, size_t *len, char *err);

static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Round-to-nearest-even, NaN kept quiet: matches torch's float->bfloat16. */
static inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

/* Monotonic clock in seconds. */
double now_seconds(void);

/* Little-endian loads from possibly unaligned memory. */
static inline uint16_t rd_u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t rd_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t rd_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

#endif
