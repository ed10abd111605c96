/* fuzz_tokenizer.c - libFuzzer target: tokenizer.json loader. An accepted
 * tokenizer must then encode, decode and stream-decode a few fixed texts
 * (plain, special tokens, digits, non-ASCII) without faults. */
#include "fuzz_util.h"

#include "tokenizer.h"

static void exercise(const tokenizer *t) {
    static const char *texts[] = {"Hello world", "<|endoftext|>abc 123 45", "  \t\n\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
                                  "a b c ab abc d", ""};
    char err[TOK_ERR_LEN];
    size_t nv = tok_vocab_size(t);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int32_t *ids;
        size_t n;
        if (tok_encode(t, texts[i], strlen(texts[i]), (int)(i & 1), 1, &ids, &n, err)) continue;
        for (size_t j = 0; j < n; j++)
            if (ids[j] < 0 || (size_t)ids[j] >= nv) abort(); /* ids must index the vocabulary */
        char *text;
        size_t len;
        if (tok_decode(t, ids, n, &text, &len, err) == 0) free(text);
        tok_stream *s = tok_stream_new(t);
        if (s) {
            const char *out;
            size_t olen;
            for (size_t j = 0; j < n; j++)
                if (tok_stream_put(s, ids[j], &out, &olen, err) == 0) fuzz_touch(out, olen);
            tok_stream_flush(s, &out, &olen);
            fuzz_touch(out, olen);
            tok_stream_free(s);
        }
        free(ids);
    }
    size_t len;
    for (int32_t id = -1; id < 8; id++) {
        const char *p = tok_piece(t, id, &len);
        if (p) fuzz_touch(p, len);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_file f;
    char err[TOK_ERR_LEN];
    if (size > (1 << 20) || fuzz_file_open(&f, data, size)) return 0;
    tokenizer *t;
    if (tok_load_json(f.path, NULL, &t, err) == 0) {
        exercise(t);
        tok_free(t);
    }
    fuzz_file_close(&f);
    return 0;
}
