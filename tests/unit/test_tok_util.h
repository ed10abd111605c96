/* test_tok_util.h - tiny tokenizers built in memory for the tokenizer unit
 * tests (header-only, static: every test file gets its own copy). */
#ifndef TEST_TOK_UTIL_H
#define TEST_TOK_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"
#include "tokenizer.h"

/* A GPT-2 style vocabulary: ids 0..255 are the single bytes (byte-level
 * characters, in byte order), then `extra` tokens, then `specials` (type 3). */
__attribute__((unused)) static tokenizer *tt_bytelevel(const char *pre, const char **extra, size_t n_extra, const char **merges,
                               size_t n_merges, const char **specials, size_t n_special, char *err)
{
    size_t n = 256 + n_extra + n_special;
    tok_str *toks = calloc(n, sizeof *toks), *mg = calloc(n_merges + 1, sizeof *mg);
    int32_t *types = calloc(n, sizeof *types);
    char (*bytes)[4] = calloc(256, 4);
    for (int b = 0; b < 256; b++) {
        size_t k = tok_utf8_put(tok_byte_to_cp((unsigned char)b), bytes[b]);
        toks[b] = (tok_str){bytes[b], k};
        types[b] = 1;
    }
    for (size_t i = 0; i < n_extra; i++) {
        toks[256 + i] = (tok_str){extra[i], strlen(extra[i])};
        types[256 + i] = 1;
    }
    for (size_t i = 0; i < n_special; i++) {
        toks[256 + n_extra + i] = (tok_str){specials[i], strlen(specials[i])};
        types[256 + n_extra + i] = 3;
    }
    for (size_t i = 0; i < n_merges; i++)
        mg[i] = (tok_str){merges[i], strlen(merges[i])};
    tok_spec sp = {0};
    sp.model = (tok_str){"gpt2", 4};
    sp.pre = (tok_str){pre, strlen(pre)};
    sp.n_tokens = n;
    sp.tokens = toks;
    sp.token_types = types;
    sp.n_merges = n_merges;
    sp.merges = mg;
    sp.bos_id = sp.eos_id = sp.unk_id = sp.pad_id = -1;
    sp.add_bos = sp.add_eos = sp.add_space_prefix = -1;
    tokenizer *t = NULL;
    tok_load_spec(&sp, "test", &t, err);
    free(toks);
    free(mg);
    free(types);
    free(bytes);
    return t;
}

/* Write `json` to a temporary file and load it. */
__attribute__((unused)) static tokenizer *tt_json(const char *json, char *err)
{
    char path[] = "/tmp/tok_unit_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    fputs(json, f);
    fclose(f);
    tokenizer *t = NULL;
    tok_load_json(path, NULL, &t, err);
    remove(path);
    return t;
}

/* Encode and compare with the expected ids; returns 1 if equal. */
__attribute__((unused)) static int tt_ids_are(const tokenizer *t, const char *text, int parse_special, const int32_t *want, size_t n_want)
{
    int32_t *ids;
    size_t n;
    char err[TOK_ERR_LEN];
    if (tok_encode(t, text, strlen(text), 0, parse_special, &ids, &n, err))
        return 0;
    int ok = n == n_want && (n == 0 || !memcmp(ids, want, n * sizeof *ids));
    if (!ok) {
        fprintf(stderr, "encode \"%s\": got", text);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %d", (int)ids[i]);
        fprintf(stderr, "\n");
    }
    free(ids);
    return ok;
}

#endif
