/* Tokenizer: merges by rank (lowest first, leftmost on ties), pre-tokenizer
 * regexes, ignore_merges, byte fallback. */
#include <criterion/criterion.h>

#include "test_tok_util.h"

/* ids: bytes are their own ids; extra tokens from 256 */
static const char *EXTRA[] = {"he", "ll", "hell", "hello", "\xC4\xA0w", "or", "\xC4\xA0wor", "ld", "\xC4\xA0world"};
static const char *MERGES[] = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "o r", "\xC4\xA0w or", "l d",
                               "\xC4\xA0wor ld"};

Test(tok_bpe, merges_in_rank_order)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = tt_bytelevel("gpt2", EXTRA, 9, MERGES, 9, NULL, 0, err);
    cr_assert_not_null(t, "%s", err);
    int32_t want[] = {259, 264};
    cr_expect(tt_ids_are(t, "hello world", 1, want, 2));
    int32_t want2[] = {256, 'l'}; /* "hel": h+e merges, "l" stays: no "he l" merge */
    cr_expect(tt_ids_are(t, "hel", 1, want2, 2));
    int32_t want4[] = {257, 'l'};
    cr_expect(tt_ids_are(t, "lll", 1, want4, 2), "ties go to the leftmost pair");
    tok_free(t);
}

Test(tok_bpe, gpt2_regex_splits_contractions_digits_spaces)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = tt_bytelevel("gpt2", NULL, 0, NULL, 0, NULL, 0, err);
    cr_assert_not_null(t, "%s", err);
    tok_buf arena = {0};
    tok_ids spans = {0}, tmp = {0};
    void *md = tok_match_data_new();
    const char *s = "I'm 123  x\n\n";
    cr_assert_eq(tok_pretokenize(t, s, strlen(s), 1, &arena, &spans, &tmp, md, err), 0);
    const char *want[] = {"I", "'m", " 123", " ", " x", "\n\n"};
    cr_assert_eq(spans.len, 12u);
    for (size_t i = 0; i < 6; i++) {
        cr_expect_eq((size_t)spans.p[2 * i + 1], strlen(want[i]));
        cr_expect_arr_eq(arena.p + spans.p[2 * i], want[i], strlen(want[i]));
    }
    tok_match_data_free(md);
    tok_buf_free(&arena);
    free(spans.p);
    free(tmp.p);
    tok_free(t);
}

/* also GGUF pre-tokenizer "lfm2", which llama.cpp reads as llama3's */
static void llama3_split(const char *pre)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = tt_bytelevel(pre, NULL, 0, NULL, 0, NULL, 0, err);
    cr_assert_not_null(t, "%s", err);
    tok_buf arena = {0};
    tok_ids spans = {0}, tmp = {0};
    void *md = tok_match_data_new();
    const char *s = "WE'LL 1234567 \xCE\xB1\xCE\xB2!";
    cr_assert_eq(tok_pretokenize(t, s, strlen(s), 1, &arena, &spans, &tmp, md, err), 0);
    const char *want[] = {"WE", "'LL", " ", "123", "456", "7", " \xCE\xB1\xCE\xB2", "!"};
    cr_assert_eq(spans.len, 16u);
    for (size_t i = 0; i < 8; i++)
        cr_expect(spans.p[2 * i + 1] == (int32_t)strlen(want[i]) &&
                      !memcmp(arena.p + spans.p[2 * i], want[i], strlen(want[i])),
                  "%s: piece %zu", pre, i);
    tok_match_data_free(md);
    tok_buf_free(&arena);
    free(spans.p);
    free(tmp.p);
    tok_free(t);
}

Test(tok_bpe, llama3_regex_digit_triples_and_case_insensitive_contractions)
{
    llama3_split("llama-bpe");
    llama3_split("lfm2");
}

Test(tok_bpe, unsupported_pre_tokenizer_is_an_error)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = tt_bytelevel("falcon", NULL, 0, NULL, 0, NULL, 0, err);
    cr_expect_null(t);
    cr_expect_not_null(strstr(err, "falcon"), "%s", err);
}

/* SentencePiece-style BPE from tokenizer.json: metaspace, byte fallback,
 * ignore_merges, the decoder's leading-space strip. */
static const char *SPM_JSON =
    "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true},"
    "{\"id\":1,\"content\":\"<s>\",\"special\":true}],"
    "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"},"
    "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}]},"
    "\"pre_tokenizer\":null,"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},"
    "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{\"<s>\":{\"id\":\"<s>\",\"ids\":[1]}}},"
    "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\\u2581\"},"
    "\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \","
    "\"start\":1,\"stop\":0}]},"
    "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"byte_fallback\":true,\"ignore_merges\":%s,"
    "\"vocab\":{\"<unk>\":0,\"<s>\":1,\"<0xC3>\":2,\"<0xA9>\":3,\"\\u2581\":4,\"h\":5,\"i\":6,\"hi\":7,"
    "\"\\u2581hi\":8,\"\\u2581h\":9},"
    "\"merges\":[\"\\u2581 h\",\"h i\",\"\\u2581h i\"]}}";

static tokenizer *spm(int ignore_merges, char *err)
{
    char json[2048];
    snprintf(json, sizeof json, SPM_JSON, ignore_merges ? "true" : "false");
    return tt_json(json, err);
}

Test(tok_bpe, sentencepiece_metaspace_and_byte_fallback)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = spm(0, err);
    cr_assert_not_null(t, "%s", err);
    int32_t want[] = {8, 4, 2, 3}; /* "▁hi", "▁", <0xC3>, <0xA9> */
    cr_expect(tt_ids_are(t, "hi \xC3\xA9", 1, want, 4));
    int32_t *ids;
    size_t n;
    cr_assert_eq(tok_encode(t, "hi", 2, 1, 1, &ids, &n, err), 0);
    cr_expect(n == 2 && ids[0] == 1 && ids[1] == 8, "BOS from the TemplateProcessing");
    free(ids);
    int32_t dec_ids[] = {8, 4, 2, 3};
    char *text;
    size_t len;
    cr_assert_eq(tok_decode(t, dec_ids, 4, &text, &len, err), 0);
    cr_expect_str_eq(text, "hi \xC3\xA9", "leading space stripped, bytes fused");
    free(text);
    int32_t bad[] = {8, 2, 5};
    cr_assert_eq(tok_decode(t, bad, 3, &text, &len, err), 0);
    cr_expect_str_eq(text, "hi\xEF\xBF\xBDh", "an invalid byte run becomes U+FFFD per byte");
    free(text);
    tok_free(t);
}

Test(tok_bpe, ignore_merges_takes_whole_words_from_the_vocab)
{
    char err[TOK_ERR_LEN] = "";
    /* "▁hi" merges via "▁h" + "i" only when merges run; with ignore_merges the whole word is looked up */
    tokenizer *t = spm(1, err);
    cr_assert_not_null(t, "%s", err);
    int32_t want[] = {8};
    cr_expect(tt_ids_are(t, "hi", 1, want, 1));
    tok_free(t);
}

Test(tok_bpe, unsupported_json_component_is_named)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = tt_json("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{},\"merges\":[]}}", err);
    cr_expect_null(t);
    cr_expect_not_null(strstr(err, "WordPiece"), "%s", err);
    t = tt_json("{\"pre_tokenizer\":{\"type\":\"Whitespace\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},"
                "\"merges\":[]}}", err);
    cr_expect_null(t);
    cr_expect_not_null(strstr(err, "Whitespace"), "%s", err);
}
