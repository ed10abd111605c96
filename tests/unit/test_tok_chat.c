/* Tokenizer: chat templates rendered by the Jinja interpreter, or built in and chosen by name. */
#include <criterion/criterion.h>
#include <time.h>

#include "jinja.h"
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

static const char CHATML[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nBe kind<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

Test(tok_chat, chatml_default_system_from_the_template)
{
    tokenizer *t = with_template(CHATML);
    char *out, err[TOK_ERR_LEN];
    cr_assert_eq(tok_chat_render(t, NULL, NULL, "Hi", &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<|im_start|>system\nBe kind<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                          "<|im_start|>assistant\n");
    free(out);
    cr_assert_eq(tok_chat_render(t, NULL, "S", "Hi", &out, err), 0);
    cr_expect_str_eq(out, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    free(out);
    /* the built-in chatml takes the template's literal default system message too */
    cr_assert_eq(tok_chat_render(t, "chatml", NULL, "Hi", &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<|im_start|>system\nBe kind<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                          "<|im_start|>assistant\n");
    free(out);
    tok_free(t);
}

Test(tok_chat, messages_turns_generation_prompt_tokens_and_variables)
{
    tokenizer *t = with_template("{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
                                 "{% if add_generation_prompt %}<gen>{% endif %}{{ eos_token }}|{{ tools | tojson }}"
                                 "|{{ flag }}|{{ date_string }}|{{ strftime_now('%Y-%m-%d %H:%M') }}");
    const tok_chat_msg msgs[] = {{"system", "S"}, {"user", "u1"}, {"assistant", "a1"}, {"user", "u2"}};
    tok_chat_input in = {.messages = msgs, .n_messages = 4, .add_generation_prompt = 1, .date = "02 Jan 2025",
                         .bos_token = "<B>", .eos_token = "<E>",
                         .vars_json = "{\"tools\": [{\"name\": \"f\"}], \"flag\": false}"};
    char *out, err[TOK_ERR_LEN] = "";
    cr_assert_eq(tok_chat_render_jinja(t, NULL, &in, &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<B>[system:S][user:u1][assistant:a1][user:u2]<gen><E>|[{\"name\": \"f\"}]|False|"
                          "02 Jan 2025|2025-01-02 00:00");
    free(out);
    in.add_generation_prompt = 0;
    in.n_messages = 3;
    in.vars_json = NULL;
    in.bos_token = in.eos_token = NULL; /* the tokenizer has none: undefined prints nothing */
    cr_assert_eq(tok_chat_render_jinja(t, NULL, &in, &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "[system:S][user:u1][assistant:a1]|null||02 Jan 2025|2025-01-02 00:00");
    free(out);
    /* a template given as text, no tokenizer at all */
    cr_assert_eq(tok_chat_render_jinja(NULL, "{{ messages | length }}", &in, &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "3");
    free(out);
    tok_free(t);
}

Test(tok_chat, bad_input_and_template_errors)
{
    tokenizer *t = with_template(CHATML);
    char *out = NULL, err[TOK_ERR_LEN] = "";
    const tok_chat_msg bad[] = {{"user", "a\xff"}};
    tok_chat_input in = {.messages = bad, .n_messages = 1};
    cr_expect_eq(tok_chat_render_jinja(t, NULL, &in, &out, err), -1);
    cr_expect_not_null(strstr(err, "invalid UTF-8 at byte 1 of the content of message 1"), "%s", err);
    const tok_chat_msg ok[] = {{"user", "x"}};
    in.messages = ok;
    in.date = "2025-01-02";
    cr_expect_eq(tok_chat_render_jinja(t, NULL, &in, &out, err), -1);
    cr_expect_not_null(strstr(err, "DD Mon YYYY"), "%s", err);
    in.date = NULL;
    in.vars_json = "[1]";
    cr_expect_eq(tok_chat_render_jinja(t, NULL, &in, &out, err), -1);
    in.vars_json = NULL;
    static const char *const cases[][2] = {
        {"{{ raise_exception('Only user and assistant roles') }}", "raise_exception: Only user and assistant roles"},
        {"a\n\n{% include 'x.jinja' %}", "chat template line 3: the 'include' statement is not supported"},
        {"{{ x | nosuchfilter }}", "chat template line 1: the filter 'nosuchfilter' is not supported"},
        {"{% for m in messages %}\n{{ m.content }}", "missing {% endfor %}"},
        {"{{ messages[0].content.nope.deeper }}", "chat template line 1:"},
        {"{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "recursion deeper than"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err[0] = 0;
        cr_expect_eq(tok_chat_render_jinja(t, cases[i][0], &in, &out, err), TOK_CHAT_E_TEMPLATE, "%s", cases[i][0]);
        cr_expect_not_null(strstr(err, cases[i][1]), "%s: %s", cases[i][0], err);
        cr_expect_null(strchr(err, '\n'), "one line: %s", err);
    }
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

/* The limits, small here so that the sanitizer build runs them quickly (the defaults are
 * exercised through the CLI by tests/cli/check_chat_template.py). */
Test(tok_chat, jinja_limits)
{
    static const char *const cases[][2] = {
        {"{% set s = 'x' * 1000 %}{% for i in range(100) %}{{ s ~ s }}{% endfor %}", "output limit"},
        {"{% set l = range(200) %}{% for i in l %}{% for j in l %}{% endfor %}{% endfor %}", "loop iterations"},
        {"{{ 'x' * 10000000000 }}", "past the output limit"},
        {"{% set l = range(1000) | list %}{% for i in range(300) %}{{ -1 in l }}{% endfor %}", "units of work"},
        {"{{ range(5000) | sort | length }}{% set s = 'ab' * 10000 %}{% for i in range(2000) %}"
         "{{ s.count('ba') }}{% endfor %}", "units of work"},
        {"{% set l = [range(1000) | list] * 300 %}{{ l == l }}", "units of work"},
        {"{% for i in range(5000) %}{{ [i] * 100 }}{% endfor %}", "memory limit"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[TOK_ERR_LEN] = "", *out = NULL;
        size_t len;
        jinja_template *jt;
        cr_assert_eq(jinja_parse(cases[i][0], strlen(cases[i][0]), &jt, err), 0, "%s", err);
        jinja_input in = {.vars_json = "{}", .vars_len = 2, .now = 0, .max_steps = 20000, .max_work = 100000,
                          .max_output = 100000, .max_memory = 1 << 20};
        cr_expect_neq(jinja_render(jt, &in, &out, &len, err), 0, "%s", cases[i][0]);
        cr_expect_null(out);
        cr_expect_not_null(strstr(err, cases[i][1]), "%s: %s", cases[i][0], err);
        jinja_free(jt);
    }
}

Test(tok_chat, unknown_names_are_errors)
{
    tokenizer *t = with_template(NULL);
    char *out, err[TOK_ERR_LEN] = "";
    cr_expect_eq(tok_chat_render(t, NULL, NULL, "Hi", &out, err), TOK_CHAT_E_TEMPLATE);
    cr_expect_not_null(strstr(err, "no chat template"), "%s", err);
    cr_expect_eq(tok_chat_render(t, "vicuna", NULL, "Hi", &out, err), TOK_CHAT_E_ARG);
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
    cr_expect_eq(tok_chat_render(t, "mistral-v0.1", "S", "U", &out, err), TOK_CHAT_E_TEMPLATE);
    cr_expect_not_null(strstr(err, "no system role"), "%s", err);
    cr_assert_eq(tok_chat_render(t, "mistral-v0.1", NULL, "U", &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<s>[INST] U [/INST]");
    free(out);
    tok_free(t);
}

Test(tok_chat, mistral_builtin_takes_only_a_literal_default_system)
{
    /* a computed default (here from strftime_now) is not read: the built-in has none */
    tokenizer *t = with_template("{%- set today = strftime_now(\"%Y-%m-%d\") %}"
                                 "{%- set default_system_message = \"Today is \" + today + \".\" %}");
    char *out, err[TOK_ERR_LEN] = "";
    cr_assert_eq(tok_chat_render(t, "mistral-v7", NULL, "Hi", &out, err), 0, "%s", err);
    cr_expect_str_eq(out, "<s>[INST] Hi[/INST]");
    free(out);
    tok_free(t);
    t = with_template("{%- set default_system_message = 'Be \\'brief\\'.\\nOK' %}");
    cr_assert_eq(tok_chat_render(t, "mistral-v7", NULL, "Hi", &out, err), 0, "%s", err);
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
        "{{- messages[-1]['content'] | trim }}");
    char *out, err[TOK_ERR_LEN] = "";
    cr_assert_eq(tok_chat_render(t, NULL, NULL, "Hi", &out, err), 0, "%s", err);
    cr_expect_not_null(strstr(out, "Today Date: 05 May 2030\n"), "%s", out);
    free(out);
    tok_free(t);
}
