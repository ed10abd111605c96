/* Tokenizer: chat templates recognised from their text, or forced by name. */
#include <criterion/criterion.h>
#include <time.h>

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
    cr_expect_eq(tok_chat_render(t, "vicuna", NULL, "Hi", &out, err), TOK_CHAT_E_ARG); /* a bad argument */
    cr_expect_not_null(strstr(err, "vicuna"), "%s", err);
    tok_free(t);
}

/* The fixtures' real templates are checked against transformers by
 * tests/cli/check_tokenizer.py; these pin the edge cases in the C code. */

Test(tok_chat, llama2_strip_eats_the_sys_block_end_when_the_user_text_is_blank)
{
    tokenizer *t = with_template(NULL);
    char *out, err[TOK_ERR_LEN];
    cr_assert_eq(tok_chat_render(t, "llama2", "S", " \n", &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<s>[INST] <<SYS>>\nS\n<</SYS>> [/INST]");
    free(out);
    cr_assert_eq(tok_chat_render(t, "llama2", NULL, "\x1c u\xe3\x80\x80", &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<s>[INST] u [/INST]");
    free(out);
    tok_free(t);
}

Test(tok_chat, llama31_date_from_the_template_option_or_today)
{
    tokenizer *t = with_template("{{- bos_token }}{%- if not date_string is defined %}"
                                 "{%- set date_string = \"05 May 2030\" %}{%- endif %}"
                                 "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}"
                                 "{{- \"Cutting Knowledge Date: December 2023\\n\" }}");
    char *out, err[TOK_ERR_LEN] = "";
    /* a template that lacks the rest of the 3.1 system block is refused, not guessed */
    cr_expect_eq(tok_chat_render(t, NULL, NULL, "Hi", &out, err), -1);
    cr_expect_not_null(strstr(err, "Llama 3.1+"), "%s", err);
    cr_assert_eq(tok_chat_render_at(t, "llama3.1", NULL, "Hi", "01 Feb 2003", &out, err), 0, "%s", err);
    cr_expect_not_null(strstr(out, "\nToday Date: 01 Feb 2003\n\n<|eot_id|>"), "%s", out);
    free(out);
    cr_assert_eq(tok_chat_render_at(t, "llama3.1", NULL, "Hi", NULL, &out, err), 0, "%s", err);
    cr_expect_not_null(strstr(out, "Today Date: 26 Jul 2024\n"), "%s", out);
    free(out);
    char want[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(want, sizeof want, "Today Date: %d %b %Y\n", &tm);
    cr_assert_eq(tok_chat_render_at(t, "llama3.2", NULL, "Hi", NULL, &out, err), 0, "%s", err);
    cr_expect_not_null(strstr(out, want), "%s / %s", out, want);
    free(out);
    tok_free(t);
}

Test(tok_chat, mistral_variants_by_name)
{
    tokenizer *t = with_template(NULL);
    static const char *const cases[][2] = {
        {"mistral-v1", "<s> [INST] S\n\nU [/INST]"},
        {"mistral-v3", "<s>[INST] S\n\nU[/INST]"},
        {"mistral-v3-tekken", "<s>[INST]S\n\nU[/INST]"},
        {"mistral-v7", "<s>[SYSTEM_PROMPT] S[/SYSTEM_PROMPT][INST] U[/INST]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out, err[TOK_ERR_LEN];
        cr_assert_eq(tok_chat_render(t, cases[i][0], "S", "U", &out, err), 0, "%s", err);
        cr_expect_str_eq(out, cases[i][1], "%s", cases[i][0]);
        free(out);
    }
    char *out, err[TOK_ERR_LEN] = "";
    cr_expect_eq(tok_chat_render(t, "mistral-v0.1", "S", "U", &out, err), -1);
    cr_expect_not_null(strstr(err, "no system role"), "%s", err);
    cr_assert_eq(tok_chat_render(t, "mistral-v0.1", NULL, "U", &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<s>[INST] U [/INST]");
    free(out);
    tok_free(t);
}

Test(tok_chat, mistral_default_system_must_be_a_literal)
{
    tokenizer *t = with_template("{%- set today = strftime_now(\"%Y-%m-%d\") %}"
                                 "{%- set default_system_message = \"Today is \" + today + \".\" %}"
                                 "{{- '[SYSTEM_PROMPT] ' }}{{ '[/SYSTEM_PROMPT]' }}{{- '[INST] ' }}{{- '[/INST]' }}");
    char *out, err[TOK_ERR_LEN] = "";
    cr_expect_eq(tok_chat_render(t, NULL, NULL, "Hi", &out, err), -1);
    cr_expect_not_null(strstr(err, "computes its default system message"), "%s", err);
    tok_free(t);
    t = with_template("{%- set default_system_message = 'Be \\'brief\\'.\\nOK' %}"
                      "{{- '[SYSTEM_PROMPT] ' }}{{ '[/SYSTEM_PROMPT]' }}{{- '[INST] ' }}{{- '[/INST]' }}");
    cr_assert_eq(tok_chat_render(t, NULL, NULL, "Hi", &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<s>[SYSTEM_PROMPT]Be 'brief'.\nOK[/SYSTEM_PROMPT][INST] Hi[/INST]");
    free(out);
    tok_free(t);
}

Test(tok_chat, llama31_literal_date_default_is_read_from_the_template)
{
    tokenizer *t = with_template(
        "{%- if not date_string is defined %}{%- set date_string = \"05 May 2030\" %}{%- endif %}"
        "{%- set system_message = messages[0]['content']|trim %}{%- set system_message = \"\" %}"
        "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}"
        "{{- \"Cutting Knowledge Date: December 2023\\n\" }}{{- \"Today Date: \" + date_string + \"\\n\\n\" }}"
        "{{- message['content'] | trim }}");
    char *out, err[TOK_ERR_LEN] = "";
    cr_assert_eq(tok_chat_render(t, NULL, NULL, "Hi", &out, err), 0, "%s", err);
    cr_expect_not_null(strstr(out, "Today Date: 05 May 2030\n"), "%s", out);
    free(out);
    tok_free(t);
}
