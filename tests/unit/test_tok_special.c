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

/* A JSON tokenizer whose vocabulary is the characters a..z and space, one id
 * each (a = 0 ... z = 25, space = 26), Split on whitespace, the given normalizer
 * and added tokens (ids from 27). */
static tokenizer *letters_with(const char *normalizer, const char *added, char *err)
{
    char json[4096];
    int n = snprintf(json, sizeof json, "{\"added_tokens\":[%s],\"normalizer\":%s,"
                     "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\S+|\\\\s+\"},"
                     "\"behavior\":\"Isolated\"},\"decoder\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{",
                     added, normalizer);
    for (int c = 0; c < 26; c++)
        n += snprintf(json + n, sizeof json - (size_t)n, "\"%c\":%d,", 'a' + c, c);
    snprintf(json + n, sizeof json - (size_t)n, "\" \":26},\"merges\":[]}}");
    return tt_json(json, err);
}

Test(tok_special, single_word_rejects_are_dropped_not_retried_inside)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = letters_with("null",
                                "{\"id\":27,\"content\":\"ab\",\"single_word\":true,\"normalized\":false},"
                                "{\"id\":28,\"content\":\"bc\",\"normalized\":false}", err);
    cr_assert_not_null(t, "%s", err);
    /* "ab" (leftmost) fails single_word inside "xabc": dropped, and "bc" inside it is not tried */
    int32_t w1[] = {23, 0, 1, 2};
    cr_expect(tt_ids_are(t, "xabc", 1, w1, 4));
    /* a neighbour that is not a word character (U+3000, an emoji) keeps it: \w, not "any non-ASCII" */
    int32_t w2[] = {27};
    cr_expect(tt_ids_are(t, "ab", 1, w2, 1));
    int32_t *ids;
    size_t n;
    cr_assert_eq(tok_encode(t, "\xe3\x80\x80" "ab\xf0\x9f\x91\x8d", 10, 0, 1, &ids, &n, err), 0, "%s", err);
    int found = 0;
    for (size_t i = 0; i < n; i++)
        found |= ids[i] == 27;
    cr_expect(found, "\"ab\" between U+3000 and an emoji is a single word");
    free(ids);
    /* a combining mark is a word character: no match after it */
    cr_assert_eq(tok_encode(t, "e\xcc\x81" "ab", 5, 0, 1, &ids, &n, err), 0, "%s", err);
    for (size_t i = 0; i < n; i++)
        cr_expect_neq(ids[i], 27);
    free(ids);
    tok_free(t);
}

Test(tok_special, normalized_tokens_match_the_normalized_text)
{
    char err[TOK_ERR_LEN] = "";
    /* U+FB01 (fi ligature) -> "fi" under NFKC */
    tokenizer *t = letters_with("{\"type\":\"NFKC\"}",
                                "{\"id\":27,\"content\":\"\xef\xac\x81x\",\"normalized\":true},"
                                "{\"id\":28,\"content\":\"\xef\xac\x81y\",\"normalized\":false}", err);
    cr_assert_not_null(t, "%s", err);
    int32_t w1[] = {27, 27};
    cr_expect(tt_ids_are(t, "fix\xef\xac\x81x", 1, w1, 2), "both spellings normalize to \"fix\"");
    int32_t w2[] = {28, 5, 8, 24};
    cr_expect(tt_ids_are(t, "\xef\xac\x81y" "fiy", 1, w2, 4), "a raw token matches its raw text only");
    size_t len;
    const char *p = tok_piece(t, 27, &len);
    cr_assert_not_null(p);
    cr_expect(len == 3 && !memcmp(p, "fix", 3), "a normalized token decodes to its normalized content");
    tok_free(t);
}
