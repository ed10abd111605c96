/* generate.h - internals of the generation loop (src/run/generate.c) that tests and
 * the fuzz targets reach directly; the loop itself is llmgen_generate in llmgen.h. */
#ifndef LLMGEN_GENERATE_H
#define LLMGEN_GENERATE_H

#include <stddef.h>

/* Longest suffix of s[0..n) that is a proper prefix of one of the stop strings. */
size_t gen_stop_holdback(const char *const *stops, int n_stops, const char *s, size_t n);
/* Offset of the first match of any stop string in s[from..n), or -1. */
long gen_stop_find(const char *const *stops, int n_stops, const char *s, size_t n, size_t from);

#endif
