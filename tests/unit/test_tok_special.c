/* Tokenizer: added / special tokens (longest first, lstrip / rstrip, parse_special = 0). */
#include <criterion/criterion.h>

#include "test_tok_util.h"

static const char *SPECIALS[] = {"<|a|>", "<|a|>x", "<s>"};

Test(tok_special, longest_match_first_and_plain_text_mode)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = tt_bytelevel("gpt2", NULL, 0, NULL, 0, SPECIALS, 3, err);
    cr_assert_not_null(t, "%s", err);
    int32_t w1[] = {'h', 257, 'y'};
    cr_expect(tt_ids_are(t, "h<|a|>xy", 1, w1, 3), "\"<|a|>x\" (257) beats \"<|a|>\" (256)");
    int32_t w2[] = {256, 256};
    cr_expect(tt_ids_are(t, "<|a|><|a|>", 1, w2, 2));
    int32_t w3[] = {'<', 's', '>'};
    cr_expect(tt_ids_are(t, "<s>", 0, w3, 3), "parse_special = 0 treats them as text");
    tok_free(t);
}

Test(tok_special, lstrip_rstrip_absorb_whitespace)
{
    char err[TOK_ERR_LEN] = "";
    const char *json =
        "{\"added_tokens\":[{\"id\":3,\"content\":\"<m>\",\"special\":true,\"lstrip\":true,\"rstrip\":true}],"
        "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\S+|\\\\s+\"},\"behavior\":\"Isolated\"},"
        "\"decoder\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\" \":2},\"merges\":[]}}";
    tokenizer *t = tt_json(json, err);
    cr_assert_not_null(t, "%s", err);
    int32_t w[] = {0, 3, 1};
    cr_expect(tt_ids_are(t, "a  <m>  b", 1, w, 3));
    tok_free(t);
}
