/* Tokenizer: the in-place JSON reader behind tok_load_json. */
#include <criterion/criterion.h>

#include "test_tok_util.h"
#include "tok_json.h"

static jdoc *load_text(const char *text, char *err)
{
    char path[] = "/tmp/tok_json_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    jdoc *d = jdoc_load(path, err);
    remove(path);
    return d;
}

Test(tok_json, escapes_surrogates_and_numbers)
{
    char err[TOK_ERR_LEN] = "";
    jdoc *d = load_text("{\"a\\u00e9\": \"x\\n\\ud83d\\ude00\\\"\", \"n\": -12, \"f\": 2.5e1, \"b\": true, \"z\": null,"
                        " \"arr\": [1, [], {}]}",
                        err);
    cr_assert_not_null(d, "%s", err);
    jnode *r = jdoc_root(d);
    jnode *v = jget(r, "a\xC3\xA9");
    cr_assert_not_null(v);
    cr_expect_eq(v->len, 7u);
    cr_expect_str_eq(v->s, "x\n\xF0\x9F\x98\x80\"");
    cr_expect(jget(r, "n")->is_int && jget(r, "n")->i == -12);
    cr_expect(!jget(r, "f")->is_int && jget(r, "f")->num == 25.0);
    cr_expect_eq(jbool(r, "b", 0), 1);
    cr_expect_eq(jget(r, "z")->type, J_NULL);
    cr_expect_eq(jget(r, "arr")->n, 3u);
    jdoc_free(d);
}

Test(tok_json, errors_name_line_and_column)
{
    const char *bad[] = {"{\"a\": 1,\n \"b\" 2}", "[1, 2", "\"\\ud800\"", "{\"a\": tru}", "[1] 2", "\"a\x01\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[TOK_ERR_LEN] = "";
        jdoc *d = load_text(bad[i], err);
        cr_expect_null(d, "case %zu parsed", i);
        cr_expect_not_null(strstr(err, "invalid JSON"), "case %zu: %s", i, err);
        jdoc_free(d);
    }
    char err[TOK_ERR_LEN] = "";
    jdoc *d = load_text("{\"a\": 1,\n \"b\" 2}", err);
    cr_expect_null(d);
    cr_expect_not_null(strstr(err, ":2:6:"), "%s", err);
}
