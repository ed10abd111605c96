/* Tokenizer: chat templates recognised from their text, or forced by name. */
#include <criterion/criterion.h>

#include "test_tok_util.h"

static tokenizer *with_template(const char *tmpl)
{
    char err[TOK_ERR_LEN] = "";
    tokenizer *t = tt_bytelevel("gpt2", NULL, 0, NULL, 0, NULL, 0, err);
    cr_assert_not_null(t, "%s", err);
    free(t->chat_template);
    t->chat_template = tmpl ? strdup(tmpl) : NULL;
    return t;
}

Test(tok_chat, chatml_default_system_from_the_template)
{
    tokenizer *t = with_template("{% if x %}{{ '<|im_start|>system\nBe kind<|im_end|>\n' }}{% endif %}"
                                 "{{'<|im_start|>' + message['role']}}");
    char *out, err[TOK_ERR_LEN];
    cr_assert_eq(tok_chat_render(t, NULL, NULL, "Hi", &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<|im_start|>system\nBe kind<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                          "<|im_start|>assistant\n");
    free(out);
    cr_assert_eq(tok_chat_render(t, NULL, "S", "Hi", &out, err), 0);
    cr_expect_str_eq(out, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    free(out);
    tok_free(t);
}

Test(tok_chat, llama3_by_name_trims_content)
{
    tokenizer *t = with_template(NULL);
    char *out, err[TOK_ERR_LEN];
    cr_assert_eq(tok_chat_render(t, "llama3", "sys", " u \n", &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nsys<|eot_id|>"
                          "<|start_header_id|>user<|end_header_id|>\n\nu<|eot_id|>"
                          "<|start_header_id|>assistant<|end_header_id|>\n\n");
    free(out);
    tok_free(t);
}

Test(tok_chat, unknown_templates_are_errors)
{
    tokenizer *t = with_template("{{ messages }} ### Human:");
    char *out, err[TOK_ERR_LEN] = "";
    cr_expect_eq(tok_chat_render(t, NULL, NULL, "Hi", &out, err), -1);
    cr_expect_not_null(strstr(err, "not one we recognise"), "%s", err);
    cr_expect_eq(tok_chat_render(t, "vicuna", NULL, "Hi", &out, err), -1);
    cr_expect_not_null(strstr(err, "vicuna"), "%s", err);
    tok_free(t);
}
