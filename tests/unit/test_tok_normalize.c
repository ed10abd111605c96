/* Tokenizer: normalizers and the Digits pre-tokenizer. */
#include <criterion/criterion.h>

#include "test_tok_util.h"

/* A character-level BPE over a few letters and marks, with `normalizer` and `pre`. */
static tokenizer *chars(const char *normalizer, const char *pre, char *err)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"normalizer\":%s,\"pre_tokenizer\":%s,\"decoder\":null,\"model\":{\"type\":\"BPE\","
             "\"vocab\":{\"a\":0,\"\\u0301\":1,\"\\u0316\":2,\"\\u00e1\":3,\"\\u1ac1\":4,\"1\":5,\"2\":6,\"x\":7,"
             "\"12\":8},\"merges\":[\"1 2\"]}}",
             normalizer, pre);
    return tt_json(json, err);
}

Test(tok_normalize, nfc_composes_and_reorders)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = chars("{\"type\":\"NFC\"}", "null", err);
    cr_assert_not_null(t, "%s", err);
    int32_t w1[] = {3, 2}; /* a + U+0301 (230) + U+0316 (220) -> á + U+0316 */
    cr_expect(tt_ids_are(t, "a\xCC\x81\xCC\x96", 1, w1, 2));
    tok_free(t);
}

Test(tok_normalize, newer_marks_are_barriers_as_in_the_reference)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = chars("{\"type\":\"NFC\"}", "null", err);
    cr_assert_not_null(t, "%s", err);
    /* U+1AC1 got combining class 230 in Unicode 14; the reference's data predates it, so it
     * is neither reordered after U+0316 (220) nor composed */
    int32_t w[] = {0, 4, 2};
    cr_expect(tt_ids_are(t, "a\xE1\xAB\x81\xCC\x96", 1, w, 3));
    tok_free(t);
}

Test(tok_normalize, digits_individual_and_runs)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = chars("null", "{\"type\":\"Digits\",\"individual_digits\":true}", err);
    cr_assert_not_null(t, "%s", err);
    int32_t w1[] = {7, 5, 6, 7}; /* "12" never merges: each digit is its own pre-token */
    cr_expect(tt_ids_are(t, "x12x", 1, w1, 4));
    tok_free(t);
    t = chars("null", "{\"type\":\"Digits\",\"individual_digits\":false}", err);
    cr_assert_not_null(t, "%s", err);
    int32_t w2[] = {7, 8, 7};
    cr_expect(tt_ids_are(t, "x12x", 1, w2, 3));
    tok_free(t);
}

Test(tok_normalize, replace_and_prepend)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = chars("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"x\"},"
                         "{\"type\":\"Replace\",\"pattern\":{\"String\":\"2\"},\"content\":\"a\"}]}",
                         "null", err);
    cr_assert_not_null(t, "%s", err);
    int32_t w[] = {7, 5, 0};
    cr_expect(tt_ids_are(t, "12", 1, w, 3));
    tok_free(t);
    t = chars("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\d\"},\"content\":\"a\"}", "null", err);
    cr_expect_null(t);
    cr_expect_not_null(strstr(err, "Replace"), "%s", err);
}
