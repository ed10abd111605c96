/* GBNF parser and byte matcher (grammar.c), token masks (token_mask.c), JSON Schema conversion
 * (json_schema.c): what matches, what is refused and how the errors read. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"

/* 1 if s is a prefix of the language, *done 1 if it is a whole sentence. */
static int match(const grammar *g, const char *s, size_t n, int *done) {
    gm *m = gm_new(g);
    cr_assert_not_null(m);
    int32_t *a = malloc(GRAMMAR_MAX_STACKS * sizeof *a), *b = malloc(GRAMMAR_MAX_STACKS * sizeof *b);
    int k = gm_start(m, a);
    for (size_t i = 0; i < n && k > 0; i++) {
        k = gm_advance(m, a, k, (uint8_t)s[i], b);
        int32_t *t = a;
        a = b, b = t;
    }
    *done = k > 0 && a[0] == GM_DONE;
    free(a), free(b);
    gm_free(m);
    return k > 0;
}

static grammar *parse_ok(const char *text) {
    grammar *g = NULL;
    char err[256] = "";
    int rc = grammar_parse(text, strlen(text), &g, err, sizeof err);
    cr_assert_eq(rc, 0, "parse failed: %s", err);
    return g;
}

static void expect_error(const char *text, const char *want) {
    grammar *g = NULL;
    char err[256] = "";
    cr_assert_eq(grammar_parse(text, strlen(text), &g, err, sizeof err), -1, "'%s' parsed", text);
    cr_expect_null(g);
    cr_expect(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
    cr_expect(strchr(err, '\n') == NULL, "error spans lines: '%s'", err);
}

#define ACCEPTS(g, s) ({ int d_; match(g, s, strlen(s), &d_) && d_; })
#define PREFIX(g, s) ({ int d_; match(g, s, strlen(s), &d_); })

Test(grammar, literals_classes_repetitions) {
    grammar *g = parse_ok("root ::= \"a\" b* \"c\"  # comment\nb ::= [x-z] | \"\\u00e9\"\n");
    cr_expect(ACCEPTS(g, "ac"));
    cr_expect(ACCEPTS(g, "axyzc"));
    cr_expect(ACCEPTS(g, "a\xc3\xa9xc"));
    cr_expect(PREFIX(g, "a\xc3"));        /* half of é */
    cr_expect(!PREFIX(g, "a\xc3\xa8"));   /* è is not in the class */
    cr_expect(!PREFIX(g, "ab"));
    cr_expect(!ACCEPTS(g, "ax"));
    grammar_free(g);
    g = parse_ok("root ::= (\"x\" | \"yy\"){2,3} [^a-c\\n]? \"!\"+");
    cr_expect(ACCEPTS(g, "xx!"));
    cr_expect(ACCEPTS(g, "xyyx!!"));
    cr_expect(ACCEPTS(g, "xxd!"));
    cr_expect(ACCEPTS(g, "xx\xe6\x97\xa5!"));
    cr_expect(!PREFIX(g, "xxa"));
    cr_expect(!PREFIX(g, "xxxxx"));
    cr_expect(!ACCEPTS(g, "x!"));
    grammar_free(g);
}

Test(grammar, continuation_lines_and_any_char) {
    grammar *g = parse_ok("root ::= (\n  \"a\"\n  | \"b\"\n) . tail\ntail ::= \"x\"\n     | \"y\"\n");
    cr_expect(ACCEPTS(g, "a\nx"));
    cr_expect(ACCEPTS(g, "b\xf0\x9f\x99\x82y"));
    cr_expect(!PREFIX(g, "a\xff"));       /* not UTF-8 */
    cr_expect(!PREFIX(g, "a\xc0\x80"));   /* overlong */
    grammar_free(g);
}

Test(grammar, errors_name_line_and_column) {
    expect_error("root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice");
    expect_error("root ::= x", "rule 'x' is used but not defined");
    expect_error("a ::= \"x\"", "no rule named 'root'");
    expect_error("root ::= \"abc", "line 1, column 10: unterminated literal");
    expect_error("root ::= [a-", "unterminated character class");
    expect_error("root ::= [z-a]", "out of order");
    expect_error("root ::= \"\\q\"", "unknown escape");
    expect_error("root ::= a\na ::= a \"x\" | \"y\"", "left recursion: rule 'a'");
    expect_error("root ::= \"x\"{3,1}", "below the count");
    expect_error("root ::= \"x\"{99999}", "repetition count above");
    expect_error("root ::= (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((\"x\""
                 "))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
                 "nested deeper");
    expect_error("root ::= \"x\" )", "unexpected ')'");
}

/* A toy vocabulary: stop token 0, then pieces (one with no bytes: never allowed). */
static const char *voc[] = {"<eos>", "a", "b", "ab", "\"", "\",", "x\"", "{", "}", "{\"", "\":", " ", "  ", "1",
                            "12", "\xc3", "\xa9", "\xc3\xa9", "\xc3\xa9\"", "\"}", ""};
#define NV ((int)(sizeof voc / sizeof *voc))
static const char *piece(void *u, int32_t id, size_t *n) {
    (void)u;
    *n = strlen(voc[id]);
    return voc[id];
}
static int is_stop(void *u, int32_t id) { return (void)u, id == 0; }

static int allowed(const tm_matcher *m, const uint32_t *mask, int id) { (void)m; return (int)(mask[id / 32] >> (id % 32)) & 1; }

Test(token_mask, tokens_spanning_symbols_and_characters) {
    grammar *g = parse_ok("root ::= \"{\" ws \"\\\"\" s ws \"}\"\ns ::= \"\\\"\" | [^\"\\\\] s\nws ::= [ ]*");
    tm_vocab *v = tm_vocab_new(NV, piece, is_stop, NULL);
    tm_matcher *m;
    char err[256];
    cr_assert_eq(tm_matcher_new(g, v, &m, err, sizeof err), 0);
    uint32_t mask[1];
    cr_expect_eq(tm_fill_mask(m, mask, err, sizeof err), 2); /* "{" and "{\"" */
    cr_expect(allowed(m, mask, 7) && allowed(m, mask, 9));
    cr_assert_eq(tm_accept(m, 9), 0);
    tm_fill_mask(m, mask, err, sizeof err);
    cr_expect(allowed(m, mask, 3));   /* ab inside the string */
    cr_expect(allowed(m, mask, 15));  /* half a character */
    cr_expect(!allowed(m, mask, 16)); /* a lone continuation byte */
    cr_expect(allowed(m, mask, 18));  /* é then the closing quote */
    cr_expect(allowed(m, mask, 19));  /* close the string and the object in one token */
    cr_expect(!allowed(m, mask, 5));  /* ", : no comma in this grammar */
    cr_expect(!allowed(m, mask, 0) && !allowed(m, mask, 20));
    cr_assert_eq(tm_accept(m, 15), 0);
    tm_fill_mask(m, mask, err, sizeof err);
    cr_expect(allowed(m, mask, 16) && !allowed(m, mask, 1));
    cr_assert_eq(tm_accept(m, 16), 0);
    cr_expect_eq(tm_accept(m, 10), -1); /* rejected: the state stays */
    cr_assert_eq(tm_accept(m, 4), 0);
    cr_expect(!tm_can_end(m));
    cr_assert_eq(tm_accept(m, 11), 0);
    cr_assert_eq(tm_accept(m, 8), 0);
    cr_expect(tm_can_end(m) && tm_is_terminated(m));
    cr_expect_eq(tm_fill_mask(m, mask, err, sizeof err), 1); /* only the stop token */
    cr_expect(allowed(m, mask, 0));
    cr_assert_eq(tm_accept(m, 0), 0);
    tm_rollback(m, 3); /* back before the space */
    cr_expect(!tm_can_end(m));
    cr_expect_eq(tm_accept(m, 12), 0);
    tm_matcher_free(m);
    tm_vocab_free(v);
    grammar_free(g);
}

static char *schema(const char *s, char *err);

/* gm_min_bytes after the bytes s: the fewest bytes that complete the grammar from there. */
static int32_t min_after(const grammar *g, const char *s) {
    gm *m = gm_new(g);
    cr_assert_not_null(m);
    int32_t *a = malloc(GRAMMAR_MAX_STACKS * sizeof *a), *b = malloc(GRAMMAR_MAX_STACKS * sizeof *b);
    int k = gm_start(m, a);
    for (size_t i = 0; s[i] && k > 0; i++) {
        k = gm_advance(m, a, k, (uint8_t)s[i], b);
        int32_t *t = a;
        a = b, b = t;
    }
    cr_assert(k > 0, "'%s' is not a prefix", s);
    int32_t mb = gm_min_bytes(m, a, k);
    free(a), free(b);
    gm_free(m);
    return mb;
}

Test(grammar, min_bytes_of_states) {
    /* alternatives of different lengths, and a rule reference inside one */
    grammar *g = parse_ok("root ::= \"abc\" | \"d\" x | \"efgh\"\nx ::= \"xyz\" | \"q\" | \"rs\"");
    cr_expect_eq(min_after(g, ""), 2);
    cr_expect_eq(min_after(g, "d"), 1);
    cr_expect_eq(min_after(g, "dx"), 2);
    cr_expect_eq(min_after(g, "e"), 3);
    cr_expect_eq(min_after(g, "ab"), 1);
    cr_expect_eq(min_after(g, "abc"), 0);
    grammar_free(g);
    /* recursion: each open parenthesis adds its closing one to what is left */
    g = parse_ok("root ::= \"(\" root \")\" | \"x\"");
    cr_expect_eq(min_after(g, ""), 1);
    cr_expect_eq(min_after(g, "(("), 3);
    cr_expect_eq(min_after(g, "((x"), 2);
    cr_expect_eq(min_after(g, "((x)"), 1);
    grammar_free(g);
    /* classes: the shortest UTF-8 code point; inside a character, the bytes it still needs */
    g = parse_ok("root ::= [\\u00e9-\\u00eb] \"!!\" | [\\u4e00-\\u4e01] | [\\U0001F600] [a\\u00e9]");
    cr_expect_eq(min_after(g, ""), 3);              /* a CJK character (3) beats é!! (4) and 😀a (5) */
    cr_expect_eq(min_after(g, "\xc3"), 3);          /* é's last byte, then !! */
    cr_expect_eq(min_after(g, "\xe4"), 2);          /* inside 一 */
    cr_expect_eq(min_after(g, "\xe4\xb8"), 1);
    cr_expect_eq(min_after(g, "\xf0\x9f\x98"), 2);  /* 😀's last byte, then a */
    cr_expect_eq(min_after(g, "\xc3\xa9!"), 1);
    grammar_free(g);
    /* repetitions, and a rule that matches no finite string (saturated) */
    g = parse_ok("root ::= \"a\"{3,5} \"b\" | \"z\" loop\nloop ::= \"c\" loop");
    cr_expect_eq(min_after(g, ""), 4);
    cr_expect_eq(min_after(g, "aaaa"), 1);
    cr_expect_eq(min_after(g, "z"), GRAMMAR_NO_END);
    cr_expect_eq(min_after(g, "zcc"), GRAMMAR_NO_END);
    grammar_free(g);
    /* a JSON Schema's grammar: what closes the open string, array and object */
    char err[256] = "";
    char *text = schema("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"array\", \"items\": "
                        "{\"type\": \"string\"}}}, \"required\": [\"a\"]}", err);
    cr_assert_not_null(text, "%s", err);
    g = parse_ok(text);
    cr_expect_eq(min_after(g, ""), 8);              /* {"a":[]} */
    cr_expect_eq(min_after(g, "{\"a\": [\"xy"), 3); /* "]} */
    cr_expect_eq(min_after(g, "{\"a\": [\"xy\\"), 4); /* the escape's character first */
    grammar_free(g);
    free(text);
}

/* The closing rule's view of tokens: the bytes a token leaves to complete the grammar, and the
 * ids of a mask that fit a budget. */
Test(token_mask, min_bytes_after_a_token_and_within_a_budget) {
    grammar *g = parse_ok("root ::= \"{\" ws \"\\\"\" s ws \"}\"\ns ::= \"\\\"\" | [^\"\\\\] s\nws ::= [ ]*");
    tm_vocab *v = tm_vocab_new(NV, piece, is_stop, NULL);
    tm_matcher *m;
    char err[256];
    cr_assert_eq(tm_matcher_new(g, v, &m, err, sizeof err), 0);
    cr_expect_eq(tm_min_bytes(m), 4);          /* {""} */
    cr_expect_eq(tm_min_bytes_after(m, 9), 2); /* after {" */
    cr_expect_eq(tm_min_bytes_after(m, 7), 3);
    cr_expect_eq(tm_min_bytes_after(m, 1), -1); /* not allowed */
    cr_expect_eq(tm_min_bytes_after(m, 0), -1); /* cannot end yet */
    cr_assert_eq(tm_accept(m, 9), 0);
    cr_expect_eq(tm_min_bytes(m), 2);
    cr_expect_eq(tm_min_bytes_after(m, 15), 3); /* half of é: its last byte, then "} */
    cr_expect_eq(tm_min_bytes_after(m, 19), 0); /* "} ends it */
    cr_expect_eq(tm_min_bytes_after(m, 4), 1);
    uint32_t mask[1], fit[1];
    int n = tm_fill_mask(m, mask, err, sizeof err);
    cr_expect_eq(tm_keep_within(m, mask, fit, 100), n); /* a wide budget keeps every id */
    cr_expect_eq(fit[0], mask[0]);
    cr_expect_eq(tm_keep_within(m, mask, fit, 1), 5); /* ", "}, and x" {" é" (a character, then ") */
    cr_expect(allowed(m, fit, 4) && allowed(m, fit, 19) && allowed(m, fit, 6) && allowed(m, fit, 9) &&
              allowed(m, fit, 18));
    cr_expect_eq(tm_keep_within(m, mask, fit, 0), 1);
    cr_expect(allowed(m, fit, 19));
    cr_expect_eq(tm_min_bytes(m), 2); /* none of it moved the state */
    cr_assert_eq(tm_accept(m, 19), 0);
    cr_expect_eq(tm_min_bytes(m), 0);
    cr_expect_eq(tm_min_bytes_after(m, 0), 0);
    tm_matcher_free(m);
    tm_vocab_free(v);
    grammar_free(g);
}

static char *schema(const char *s, char *err) {
    char *out = NULL;
    if (json_schema_to_gbnf(s, strlen(s), NULL, &out, err, 256)) return NULL;
    return out;
}

Test(json_schema, language_follows_the_documented_policy) {
    char err[256];
    char *t = schema("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\"},"
                     "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]},\"maxItems\":2}},\"required\":[\"n\"]}",
                     err);
    cr_assert_not_null(t, "%s", err);
    grammar *g = parse_ok(t);
    cr_expect(ACCEPTS(g, "{\"name\": \"x\\\"y\", \"n\": -12}"));
    cr_expect(ACCEPTS(g, "{\n  \"n\":0,\"tags\":[\"a\",\"b\"]\n}"));
    cr_expect(ACCEPTS(g, "{\"n\":1}"));
    cr_expect(!PREFIX(g, "{\"n\":1,\"name\""));      /* schema order */
    cr_expect(!PREFIX(g, "{\"tags\""));              /* required n comes before tags */
    cr_expect(!PREFIX(g, "{\"n\":-0"));              /* integers: no -0 */
    cr_expect(!PREFIX(g, "{\"n\":01"));
    cr_expect(!PREFIX(g, "{\"n\":1,\"tags\":[\"a\",\"b\",")); /* maxItems */
    cr_expect(!PREFIX(g, " {"));                     /* no whitespace before the value */
    cr_expect(!PREFIX(g, "{\"name\":\"\x01"));       /* raw control characters */
    cr_expect(!ACCEPTS(g, "{}"));
    grammar_free(g);
    free(t);
    t = schema("{\"type\":\"object\",\"properties\":{\"d\":{\"type\":\"string\",\"format\":\"date\"},"
               "\"p\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-\\\\d+$\"},\"x\":{\"type\":\"number\"}},"
               "\"required\":[\"d\",\"p\",\"x\"]}", err);
    cr_assert_not_null(t, "%s", err);
    g = parse_ok(t);
    cr_expect(ACCEPTS(g, "{\"d\":\"2024-02-29\",\"p\":\"AB-7\",\"x\":-1.5e+10}"));
    cr_expect(!PREFIX(g, "{\"d\":\"2024-13"));
    cr_expect(!PREFIX(g, "{\"d\":\"2024-12-01\",\"p\":\"A-"));
    grammar_free(g);
    free(t);
}

Test(json_schema, refused_with_one_line_naming_the_problem) {
    static const char *const bad[][2] = {
        {"{\"type\":\"integer\",\"minimum\":3,\"maximum\":2}", "no integer satisfies minimum / maximum"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"multipleOf\":2,\"minimum\":3,\"maximum\":3}}}", "at /properties/a: no integer"},
        {"{\"type\":\"object\",\"properties\":{\"a\":false},\"required\":[\"a\"]}", "required property 'a' is not allowed"},
        {"{\"allOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "no type satisfies"},
        {"{\"type\":\"array\",\"items\":false,\"minItems\":1}", "minItems 1 cannot be met"},
        {"{\"not\":{}}", "'not' cannot be enforced by a grammar (--strict-schema)"},
        {"{\"type\":\"strin\"}", "unknown type 'strin'"},
        {"{\"$ref\":\"#/$defs/none\"}", "points at nothing"},
        {"{\"type\":\"string\",\"pattern\":\"(a\"}", "unbalanced '('"},
        {"{\"type\":\"string\",\"pattern\":\"a(?=b)\"}", "lookaround"},
        {"{\"type\":\"object\",\n \"properties\": {\"a\": }}", "line 2, column"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{}},\"maxProperties\":0,\"required\":[\"a\"]}", "maxProperties 0 is below"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[256] = "";
        char *t = NULL;
        json_schema_opts o = {.strict = 1};
        if (json_schema_to_gbnf(bad[i][0], strlen(bad[i][0]), &o, &t, err, sizeof err)) t = NULL;
        cr_expect_null(t, "%s converted", bad[i][0]);
        free(t);
        cr_expect(strstr(err, bad[i][1]) != NULL, "error '%s' lacks '%s'", err, bad[i][1]);
        cr_expect(strchr(err, '\n') == NULL);
    }
}

/* The keywords past xgrammar's first set: numbers in bounds and multiples, allOf merged,
 * patternProperties and propertyNames keys, property counts, formats, and the warning. */
Test(json_schema, numbers_objects_formats_and_the_warning) {
    static const struct { const char *schema; const char *yes[4]; const char *no[5]; } cases[] = {
        {"{\"type\":\"integer\",\"minimum\":-15,\"exclusiveMaximum\":120}", {"-15", "0", "119", "7"}, {"-16", "120", "1000", "-0", "1.5"}},
        {"{\"type\":\"integer\",\"multipleOf\":7,\"minimum\":10}", {"14", "700", "21", "1001"}, {"7", "15", "-14", "1000", "0"}},
        {"{\"type\":\"number\",\"minimum\":0.25,\"maximum\":1.5}", {"0.25", "1", "1.5", "0.3"}, {"0.2", "1.51", "2", "-1", "0.249"}},
        {"{\"type\":\"number\",\"exclusiveMinimum\":-1.5,\"multipleOf\":0.5}", {"-1", "0.5", "100", "-0.5"}, {"-1.5", "0.25", "-2", "1e3", "0.75"}},
        {"{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}},{\"required\":[\"a\"],\"properties\":{\"a\":{\"minimum\":5}}}]}",
         {"{\"a\":5}", "{\"a\": 77}", NULL}, {"{}", "{\"a\":4}", "{\"a\":\"x\"}", NULL}},
        {"{\"type\":\"object\",\"patternProperties\":{\"^x-\":{\"type\":\"integer\"}},\"additionalProperties\":false}",
         {"{}", "{\"x-a\":1}", "{\"x-a\":1,\"x-b\":2}", NULL}, {"{\"y\":1}", "{\"x-a\":\"s\"}", NULL}},
        {"{\"type\":\"object\",\"propertyNames\":{\"maxLength\":2},\"minProperties\":1,\"maxProperties\":2}",
         {"{\"ab\":1}", "{\"a\":1,\"b\":[]}", NULL}, {"{}", "{\"abc\":1}", "{\"a\":1,\"b\":2,\"c\":3}", NULL}},
        {"{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{},\"c\":{}},\"minProperties\":2}",
         {"{\"a\":1,\"b\":2}", "{\"b\":1,\"c\":2}", "{\"a\":1,\"b\":2,\"c\":3}", NULL}, {"{}", "{\"a\":1}", "{\"c\":1}", NULL}},
        {"{\"type\":\"string\",\"format\":\"email\"}", {"\"a.b@c.org\"", NULL}, {"\"a@\"", "\"@b\"", "\"a b@c\"", NULL}},
        {"{\"type\":\"string\",\"format\":\"ipv4\"}", {"\"10.0.0.255\"", NULL}, {"\"256.1.1.1\"", "\"1.2.3\"", "\"01.2.3.4\"", NULL}},
        {"{\"type\":\"string\",\"format\":\"uri\"}", {"\"https://x.org/a?b=1#c\"", "\"urn:isbn:1\"", NULL}, {"\"//x.org\"", "\"a b:c\"", NULL}},
        {"{\"type\":\"string\",\"pattern\":\"ab\"}", {"\"ab\"", "\"xaby\"", NULL}, {"\"a\"", "\"ba\"", NULL}},
        {"{\"title\":\"t\",\"markdownDescription\":\"m\",\"deprecated\":true,\"x-vendor\":1,\"type\":\"boolean\"}", {"true", NULL}, {"1", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char err[256] = "";
        char *t = schema(cases[i].schema, err);
        cr_assert_not_null(t, "%s: %s", cases[i].schema, err);
        grammar *g = parse_ok(t);
        for (int k = 0; k < 4 && cases[i].yes[k]; k++) cr_expect(ACCEPTS(g, cases[i].yes[k]), "%s refuses %s", cases[i].schema, cases[i].yes[k]);
        for (int k = 0; k < 5 && cases[i].no[k]; k++) cr_expect(!ACCEPTS(g, cases[i].no[k]), "%s accepts %s", cases[i].schema, cases[i].no[k]);
        grammar_free(g);
        free(t);
    }
    char warn[256], err[256], *t = NULL;
    json_schema_opts o = {.warn = warn, .warnlen = sizeof warn};
    const char *s = "{\"type\":\"object\",\"properties\":{\"t\":{\"type\":\"array\",\"uniqueItems\":true}},"
                    "\"if\":{},\"then\":{},\"not\":{\"required\":[\"x\"]}}";
    cr_assert_eq(json_schema_to_gbnf(s, strlen(s), &o, &t, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(warn, "json schema: not enforced (a grammar cannot express it): not (at #), if/then/else (at #), "
                           "uniqueItems (at /properties/t)");
    free(t);
    /* no finite instance: refused when the grammar is parsed */
    s = "{\"properties\": {\"a\": {\"$ref\": \"#\"}}, \"required\": [\"a\"]}";
    cr_assert_eq(json_schema_to_gbnf(s, strlen(s), NULL, &t, err, sizeof err), 0, "%s", err);
    grammar *g = NULL;
    cr_expect_eq(grammar_parse(t, strlen(t), &g, err, sizeof err), -1);
    cr_expect(strstr(err, "no finite text") != NULL, "%s", err);
    free(t);
}
