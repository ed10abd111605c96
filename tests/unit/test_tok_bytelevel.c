/* Tokenizer: GPT-2 byte map and UTF-8 helpers. */
#include <criterion/criterion.h>

#include "test_tok_util.h"

Test(tok_bytelevel, map_is_a_bijection_with_known_points)
{
    int seen[324] = {0};
    for (int b = 0; b < 256; b++) {
        uint32_t cp = tok_byte_to_cp((unsigned char)b);
        cr_assert_lt(cp, 324u);
        cr_expect_eq(tok_cp_to_byte(cp), b);
        seen[cp]++;
    }
    for (int i = 0; i < 324; i++)
        cr_expect_leq(seen[i], 1);
    cr_expect_eq(tok_byte_to_cp(' '), 0x120u);  /* 'Ġ' */
    cr_expect_eq(tok_byte_to_cp('\n'), 0x10Au); /* 'Ċ' */
    cr_expect_eq(tok_byte_to_cp('A'), (uint32_t)'A');
    cr_expect_eq(tok_byte_to_cp(0xAD), 0x143u);
    cr_expect_eq(tok_cp_to_byte(0x144), -1);
    cr_expect_eq(tok_cp_to_byte(0x20), -1);
}

Test(tok_bytelevel, decode_token_text)
{
    char out[16];
    cr_expect_eq(tok_bytelevel_decode("\xC4\xA0hi", 4, out), 3);
    cr_expect_arr_eq(out, " hi", 3);
    cr_expect_eq(tok_bytelevel_decode("a b", 3, out), -1, "a raw space is not a byte-level character");
}

Test(tok_utf8, lossy_replaces_maximal_subparts)
{
    tok_buf b = {0};
    /* E2 82 is a truncated 3-byte sequence: one U+FFFD; FF alone: one; C0 80: two */
    const char in[] = "a\xE2\x82" "b\xFF" "c\xC0\x80";
    cr_assert_eq(tok_utf8_lossy(&b, in, sizeof in - 1), 0);
    cr_expect_str_eq(b.p, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD");
    tok_buf_free(&b);
}

Test(tok_utf8, check_and_partial)
{
    cr_expect_eq(tok_utf8_check("ok\xC3\xA9", 4), 4u);
    cr_expect_eq(tok_utf8_check("ok\xED\xA0\x80", 5), 2u, "surrogates are invalid");
    cr_expect_eq(tok_utf8_partial((const unsigned char *)"\xF0\x9F\x98", 3), 3u);
    cr_expect_eq(tok_utf8_partial((const unsigned char *)"\xF0\x9F\x41", 3), 0u);
    cr_expect_eq(tok_utf8_partial((const unsigned char *)"\xC3\xA9", 2), 0u, "complete is not partial");
}

Test(tok_utf8, encode_rejects_invalid_input_with_offset)
{
    char err[TOK_ERR_LEN] = "";
    const char *tokens[] = {"h", "i"};
    tokenizer *t = tt_bytelevel("", tokens, 0, NULL, 0, NULL, 0, err);
    cr_assert_not_null(t, "%s", err);
    int32_t *ids;
    size_t n;
    cr_expect_eq(tok_encode(t, "abc\xFFz", 5, 0, 1, &ids, &n, err), -1);
    cr_expect_not_null(strstr(err, "offset 3"), "%s", err);
    tok_free(t);
}
