/* Tokenizer: decoding and the streaming decoder on UTF-8 split across tokens. */
#include <criterion/criterion.h>

#include "test_tok_util.h"

static tokenizer *bytes_only(void)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = tt_bytelevel("gpt2", NULL, 0, NULL, 0, NULL, 0, err);
    cr_assert_not_null(t, "%s", err);
    return t;
}

/* Feed ids one at a time; returns the concatenated output and checks that no
 * intermediate output ends inside a character. */
static char *stream_all(const tokenizer *t, const int32_t *ids, size_t n, size_t *out_len, size_t *n_nonempty)
{
    tok_stream *s = tok_stream_new(t);
    char *acc = calloc(1, 256), err[TOK_ERR_LEN];
    size_t al = 0;
    *n_nonempty = 0;
    for (size_t i = 0; i <= n; i++) {
        const char *o;
        size_t ol;
        int rc = i < n ? tok_stream_put(s, ids[i], &o, &ol, err) : tok_stream_flush(s, &o, &ol);
        cr_assert_eq(rc, 0);
        cr_expect_eq(tok_utf8_check(o, ol), ol, "output %zu is complete UTF-8", i);
        memcpy(acc + al, o, ol);
        al += ol;
        *n_nonempty += ol > 0;
    }
    tok_stream_free(s);
    *out_len = al;
    return acc;
}

Test(tok_stream, emoji_split_over_four_byte_tokens)
{
    tokenizer *t = bytes_only();
    int32_t ids[] = {'a', 0xF0, 0x9F, 0x91, 0x8D, 'b'};
    size_t len, nonempty;
    char *s = stream_all(t, ids, 6, &len, &nonempty);
    cr_expect_eq(len, 6u);
    cr_expect_arr_eq(s, "a\xF0\x9F\x91\x8D" "b", 6);
    cr_expect_eq(nonempty, 3u, "'a', then the emoji once complete, then 'b'");
    free(s);
    tok_free(t);
}

Test(tok_stream, invalid_bytes_match_the_full_decode)
{
    tokenizer *t = bytes_only();
    int32_t ids[] = {0xE2, 0x82, 'x', 0xFF, 0xC3};
    size_t len, nonempty;
    char *s = stream_all(t, ids, 5, &len, &nonempty);
    char *full, err[TOK_ERR_LEN];
    size_t fl;
    cr_assert_eq(tok_decode(t, ids, 5, &full, &fl, err), 0);
    cr_expect_eq(len, fl);
    cr_expect_arr_eq(s, full, fl);
    cr_expect_str_eq(full, "\xEF\xBF\xBDx\xEF\xBF\xBD\xEF\xBF\xBD", "truncated tail flushed as U+FFFD");
    free(s);
    free(full);
    tok_free(t);
}

Test(tok_stream, piece_and_out_of_range)
{
    tokenizer *t = bytes_only();
    size_t n;
    const char *p = tok_piece(t, ' ', &n);
    cr_expect(n == 1 && p[0] == ' ');
    cr_expect_null(tok_piece(t, 100000, &n));
    cr_expect_null(tok_piece(t, -1, &n));
    int32_t bad[] = {1, 999999};
    char *text, err[TOK_ERR_LEN];
    size_t len;
    cr_expect_eq(tok_decode(t, bad, 2, &text, &len, err), -1);
    cr_expect_not_null(strstr(err, "999999"), "%s", err);
    tok_free(t);
}

Test(tok_stream, sentencepiece_strips_one_leading_space_and_joins_byte_runs)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = tt_json(
        "{\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\\u2581\"},"
        "\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \","
        "\"start\":1,\"stop\":0}]},\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\","
        "\"prepend_scheme\":\"first\",\"split\":false},"
        "\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"vocab\":{\"\\u2581hi\":0,\"<0xC3>\":1,\"<0xA9>\":2,"
        "\"\\u2581\":3},\"merges\":[]}}",
        err);
    cr_assert_not_null(t, "%s", err);
    int32_t ids[] = {0, 3, 1, 2, 0};
    size_t len, nonempty;
    char *s = stream_all(t, ids, 5, &len, &nonempty);
    cr_expect_eq(len, 8u);
    cr_expect_arr_eq(s, "hi \xC3\xA9 hi", 8);
    char *full;
    size_t fl;
    cr_assert_eq(tok_decode(t, ids, 5, &full, &fl, err), 0);
    cr_expect_str_eq(full, "hi \xC3\xA9 hi");
    free(full);
    free(s);
    tok_free(t);
}
