/* fuzz_util.h - helpers shared by the libFuzzer targets (header-only, all static).
 *
 * The readers take file paths (they mmap), so each input is written to an
 * anonymous in-memory file and handed over as /proc/self/fd/N: no disk traffic,
 * no temporary names to clean up. */
#ifndef LLMGEN_FUZZ_UTIL_H
#define LLMGEN_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
    int fd;
    char path[64];
} fuzz_file;

/* Put data[0..n) into a fresh memfd; returns 0 on success. */
static inline int fuzz_file_open(fuzz_file *f, const uint8_t *data, size_t n) {
    f->fd = memfd_create("fuzz", 0);
    if (f->fd < 0) return -1;
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(f->fd, data + done, n - done);
        if (k <= 0) {
            close(f->fd);
            return -1;
        }
        done += (size_t)k;
    }
    snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
    return 0;
}

static inline void fuzz_file_close(fuzz_file *f) { close(f->fd); }

/* Read every byte of a view so ASan sees any out-of-range offset. */
static inline unsigned fuzz_touch(const void *p, size_t n) {
    const volatile uint8_t *b = p;
    unsigned acc = 0;
    for (size_t i = 0; i < n; i++) acc += b[i];
    return acc;
}

/* A NUL-terminated heap copy of the input (for parsers that take C strings). */
static inline char *fuzz_cstr(const uint8_t *data, size_t n) {
    char *s = malloc(n + 1);
    if (!s) abort();
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

#endif
