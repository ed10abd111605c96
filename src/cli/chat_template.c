/* chat_template.c - `llmgen chat-template` (see chat_template.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "chat_template.h"
#include "cli.h"

const char chat_template_help[] =
    "usage: llmgen chat-template (-m MODEL | --template-file FILE) --messages MESSAGES.json\n"
    "                            [--bos-token S] [--eos-token S] [--no-generation-prompt] [--date \"DD Mon YYYY\"]\n"
    "                            [--chat-template-kwargs JSON]\n"
    "Render a conversation (a JSON array of {\"role\", \"content\"} objects) with the model's\n"
    "chat template, or the Jinja template in FILE, exactly as transformers' apply_chat_template\n"
    "renders it; the text goes to stdout with nothing added.\n\n";

static llmgen_status fail(llmgen_status st, char *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static llmgen_status fail(llmgen_status st, char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ERR_LEN, fmt, ap);
    va_end(ap);
    return st;
}

enum { T_TEMPLATE_FILE = CLI_OWN, T_MESSAGES, T_BOS, T_EOS, T_NO_GEN, T_DATE, T_KWARGS };

static const cli_opt table[] = {
    CLI_OPT_MODEL("MODEL", "render with the model's chat template"),
    {T_TEMPLATE_FILE, 0, "template-file", "FILE", "render with the Jinja template in FILE instead"},
    {T_MESSAGES, 0, "messages", "MESSAGES.json", "the conversation: a JSON array of {\"role\", \"content\"}"},
    {T_BOS, 0, "bos-token", "S", "the template's bos_token (default: the model's)"},
    {T_EOS, 0, "eos-token", "S", "the template's eos_token (default: the model's)"},
    {T_NO_GEN, 0, "no-generation-prompt", NULL, "do not open the assistant's turn"},
    {T_DATE, 0, "date", "\"DD Mon YYYY\"", "the date Llama 3.1+ templates print (default: as transformers)"},
    {T_KWARGS, 0, "chat-template-kwargs", "JSON", "more template variables, a JSON object ('{\"enable_thinking\": false}')"},
    CLI_OPT_HELP,
    {0, 0, NULL, NULL, NULL},
};

int chat_template_print_help(FILE *f) {
    return fputs(chat_template_help, f) == EOF || cli_print_options(f, table) ? -1 : 0;
}

int chat_template_parse(int argc, char **argv, chat_template_args *a, char *err) {
    memset(a, 0, sizeof *a);
    a->add_generation_prompt = 1;
    cli_args args;
    cli_args_init(&args, argc, argv);
    cli_common c = {0};
    const char *v;
    int id;
    char e[ERR_LEN];
    while ((id = cli_next(&args, table, &v, e)) != CLI_DONE) {
        if (id == CLI_BAD) return fail(-1, err, "chat-template: %s", e), -1;
        if (id == CLI_ARG)
            return fail(-1, err, "chat-template: unexpected argument '%s' (see llmgen chat-template --help)", v), -1;
        if (cli_common_take(&c, id, v, e) && c.help) {
            a->help = 1;
            return 0;
        }
        if (id == T_NO_GEN) a->add_generation_prompt = 0;
        else if (id != CLI_MODEL)
            *(id == T_TEMPLATE_FILE ? &a->template_file : id == T_MESSAGES ? &a->messages_file
              : id == T_BOS ? &a->co.bos_token : id == T_EOS ? &a->co.eos_token
              : id == T_KWARGS ? &a->co.vars_json : &a->co.date) = v;
    }
    a->model = c.model;
    if (!!a->model + !!a->template_file != 1 || !a->messages_file)
        return fail(-1, err, "usage: llmgen chat-template (-m MODEL | --template-file FILE) --messages MESSAGES.json"), -1;
    if (a->co.vars_json) {
        json_t *j = json_loads(a->co.vars_json, JSON_REJECT_DUPLICATES, NULL);
        int is_obj = json_is_object(j);
        json_decref(j);
        if (!is_obj)
            return fail(-1, err, "chat-template: --chat-template-kwargs: expected a JSON object, got '%.80s'",
                        a->co.vars_json), -1;
    }
    if (a->co.date && !cli_valid_date(a->co.date))
        return fail(-1, err, "chat-template: --date: expected \"DD Mon YYYY\" (e.g. \"02 Jan 2025\"), got '%s'",
                    a->co.date), -1;
    return 0;
}

/* MESSAGES.json: a JSON array of {"role": "...", "content": "..."} objects. The
 * messages point into *root (json_decref it). A message's other members (gpt-oss's "thinking",
 * "tool_calls", ...) reach the template as apply_chat_template passes them: see with_messages. */
static llmgen_status read_messages(const char *path, json_t **root, llmgen_message **msgs, size_t *n, char *err) {
    json_error_t je;
    FILE *f = fopen(path, "rb");
    if (!f) return fail(LLMGEN_E_IO, err, "--messages: cannot open %s: %s", path, strerror(errno));
    json_t *r = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!r) return fail(LLMGEN_E_USAGE, err, "--messages: %s:%d:%d: %s", path, je.line, je.column, je.text);
    *root = r;
    if (!json_is_array(r))
        return fail(LLMGEN_E_USAGE, err, "--messages: %s: expected a JSON array of {\"role\", \"content\"} objects", path);
    *n = json_array_size(r);
    if (!(*msgs = calloc(*n ? *n : 1, sizeof **msgs))) return fail(LLMGEN_E_NOMEM, err, "--messages: out of memory");
    for (size_t i = 0; i < *n; i++) {
        json_t *m = json_array_get(r, i), *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
        if (!json_is_object(m) || !json_is_string(role) || !json_is_string(content))
            return fail(LLMGEN_E_USAGE, err,
                        "--messages: %s: message %zu is not an object with string \"role\" and \"content\"", path, i + 1);
        if (strlen(json_string_value(role)) != json_string_length(role) ||
            strlen(json_string_value(content)) != json_string_length(content))
            return fail(LLMGEN_E_USAGE, err, "--messages: %s: message %zu contains a NUL character", path, i + 1);
        (*msgs)[i] = (llmgen_message){json_string_value(role), json_string_value(content)};
    }
    return LLMGEN_OK;
}

/* A message's reasoning as transformers 5.23 passes it (chat_template_utils._alias_reasoning_fields):
 * the first non-null of reasoning_content, thinking, reasoning is also given as "thinking" (first
 * member, gpt-oss's templates read it) and "reasoning_content" (last unless present). New reference. */
static json_t *alias_reasoning(json_t *m) {
    static const char *names[] = {"reasoning_content", "thinking", "reasoning"};
    json_t *r = NULL;
    for (int k = 0; k < 3 && !r; k++) {
        json_t *v = json_object_get(m, names[k]);
        if (v && !json_is_null(v)) r = v;
    }
    if (!r) return json_incref(m);
    json_t *o = json_object();
    const char *key;
    json_t *v;
    if (!o || json_object_set(o, "thinking", r)) return json_decref(o), NULL;
    json_object_foreach(m, key, v) if (json_object_set(o, key, v)) return json_decref(o), NULL;
    if (json_object_set(o, "reasoning_content", r)) return json_decref(o), NULL;
    return o;
}

/* When a message has members beyond role and content, the template's "messages" variable is the
 * whole array (the variables of --chat-template-kwargs win over it, as they win over every other):
 * *vars (free it) is the JSON object of both; NULL when the messages are role and content only. */
static llmgen_status with_messages(json_t *root, const char *kwargs, char **vars, char *err) {
    int extra = 0;
    *vars = NULL;
    for (size_t i = 0; i < json_array_size(root); i++) extra |= json_object_size(json_array_get(root, i)) > 2;
    if (!extra) return LLMGEN_OK;
    json_t *msgs = json_array();
    for (size_t i = 0; msgs && i < json_array_size(root); i++)
        if (json_array_append_new(msgs, alias_reasoning(json_array_get(root, i)))) json_decref(msgs), msgs = NULL;
    if (!msgs) return fail(LLMGEN_E_NOMEM, err, "--messages: out of memory");
    json_error_t je;
    json_t *kw = kwargs ? json_loads(kwargs, JSON_REJECT_DUPLICATES, &je) : json_object();
    if (!json_is_object(kw)) {
        json_decref(kw);
        json_decref(msgs);
        return fail(LLMGEN_E_USAGE, err, "--chat-template-kwargs: expected a JSON object");
    }
    json_t *v = json_object();
    if (!v || json_object_set_new(v, "messages", msgs) || json_object_update(v, kw) ||
        !(*vars = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER))) {
        json_decref(v);
        json_decref(kw);
        return fail(LLMGEN_E_NOMEM, err, "--messages: out of memory");
    }
    json_decref(v);
    json_decref(kw);
    return LLMGEN_OK;
}

llmgen_status chat_template_render(const chat_template_args *a, char **out, char *err) {
    char *text = NULL, e[ERR_LEN];
    json_t *root = NULL;
    llmgen_message *msgs = NULL;
    llmgen_model *m = NULL;
    size_t n = 0;
    *out = NULL;
    llmgen_status st = a->template_file ? cli_read_file(a->template_file, "--template-file", &text, err)
                                        : LLMGEN_OK;
    char *vars = NULL;
    if (!st) st = read_messages(a->messages_file, &root, &msgs, &n, err);
    if (!st) st = with_messages(root, a->co.vars_json, &vars, err);
    if (!st && a->model) {
        /* exact mode: nothing is repacked, only the tokenizer is needed */
        llmgen_model_options mo = {.n_threads = 1, .exact = 1};
        st = llmgen_model_open(a->model, &mo, &m, err, ERR_LEN);
    }
    if (!st) {
        llmgen_chat_options co = a->co;
        co.template_text = text;
        if (vars) co.vars_json = vars;
        if ((st = llmgen_chat_render_messages(m, msgs, n, a->add_generation_prompt, &co, out, e, sizeof e)))
            fail(st, err, "chat-template: %s", e);
    }
    llmgen_model_free(m);
    free(msgs);
    free(vars);
    json_decref(root);
    free(text);
    return st;
}

/* `llmgen chat-template ...`: the rendered conversation to stdout, nothing added. */
int chat_template_main(int argc, char **argv, const cli_io *io) {
    chat_template_args a;
    char err[ERR_LEN], *out = NULL;
    if (chat_template_parse(argc, argv, &a, err)) return cli_fail(io, EXIT_USAGE, "%s", err);
    if (a.help && (chat_template_print_help(stdout) || fflush(stdout) || ferror(stdout)))
        return cli_fail(io, EXIT_IO, "stdout: write error");
    if (a.help) return EXIT_OK;
    llmgen_status st = chat_template_render(&a, &out, err);
    int rc = st ? cli_fail(io, cli_exit_code(st), "%s", err) : 0;
    if (!st && (fwrite(out, 1, strlen(out), stdout) != strlen(out) || fflush(stdout)))
        rc = errno == EPIPE ? EXIT_OK : cli_fail(io, EXIT_IO, "stdout: write error: %s", strerror(errno));
    llmgen_free(out);
    return rc;
}
