/* chat.c - chat prompts. The model's own template (GGUF tokenizer.chat_template,
 * tokenizer_config.json chat_template, chat_template.jinja) or one given as text is
 * rendered by the Jinja interpreter (jinja_*.c) with the variables transformers'
 * apply_chat_template passes: any number of messages, add_generation_prompt, the
 * special tokens, tools = documents = None, and a fixed date when asked for.
 *
 * Beside it, a set of built-in templates chosen by name (`--template NAME`), for one
 * optional system message and one user message with the generation prompt:
 *
 *   chatml   <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
 *            (SmolLM2, Qwen); a default system message written in the model's
 *            template as a literal is used when `system` is NULL, as those templates do.
 *   llama3   <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n
 *            {content, trimmed}<|eot_id|> ... then the assistant header.
 *   llama3.1 / llama3.2  the same, with an always-present system block that
 *            starts "Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n".
 *            3.1 defaults the date to "26 Jul 2024"; 3.2 to today's local date.
 *   llama2   <s>[INST] <<SYS>>\n{sys}\n<</SYS>>\n\n{user} [/INST], the whole
 *            content stripped (Python str.strip) as Meta's Llama-2-chat template does.
 *   mistral-*  [INST] wrappers whose spacing and system-message placement differ
 *            between versions (see `styles` below).
 *
 * Both are checked byte for byte against transformers on real templates
 * (tests/refs/tokenizer/chat-templates.json, tests/refs/chat/, tests/cli/check_tokenizer.py,
 * tests/cli/check_chat_template.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja.h"
#include "tok_internal.h"

enum { CHAT_CHATML, CHAT_LLAMA3, CHAT_LLAMA31, CHAT_LLAMA2, CHAT_MISTRAL };

/* Where a Mistral template puts the system message. */
enum {
    SYS_REFUSED,     /* no system role: the template raises an exception */
    SYS_IF_NONEMPTY, /* "{sys}\n\n" inside the (last) [INST], only when sys != '' */
    SYS_ALWAYS,      /* "{sys}\n\n" inside the [INST] whenever a system message is given */
    SYS_BLOCK,       /* "[SYSTEM_PROMPT] {sys}[/SYSTEM_PROMPT]" before the [INST] */
};

typedef struct {
    const char *name;
    int family;
    const char *inst_open, *inst_close; /* mistral */
    int sys_mode;                       /* mistral */
    const char *date_default;           /* llama3.1: NULL = today's date */
    const char *specials;               /* the markers that are special tokens in the family's vocabulary */
} chat_style;

#define LLAMA3_SPECIALS "<|begin_of_text|> <|start_header_id|> <|end_header_id|> <|eot_id|>"
static const chat_style styles[] = {
    {"chatml", CHAT_CHATML, NULL, NULL, 0, NULL, "<|im_start|> <|im_end|>"},
    {"llama3", CHAT_LLAMA3, NULL, NULL, 0, NULL, LLAMA3_SPECIALS},
    {"llama3.1", CHAT_LLAMA31, NULL, NULL, 0, "26 Jul 2024", LLAMA3_SPECIALS},
    {"llama3.2", CHAT_LLAMA31, NULL, NULL, 0, NULL, LLAMA3_SPECIALS},
    {"llama2", CHAT_LLAMA2, NULL, NULL, 0, NULL, "<s>"},
    /* Mistral-7B-Instruct-v0.1's Hugging Face template: no system role ([INST] is text in its vocabulary) */
    {"mistral-v0.1", CHAT_MISTRAL, "[INST] ", " [/INST]", SYS_REFUSED, NULL, "<s>"},
    /* mistral-common's generated templates for SentencePiece v1 / v3 (v2 renders as v3) */
    {"mistral-v1", CHAT_MISTRAL, " [INST] ", " [/INST]", SYS_IF_NONEMPTY, NULL, "<s>"},
    {"mistral-v3", CHAT_MISTRAL, "[INST] ", "[/INST]", SYS_IF_NONEMPTY, NULL, "<s> [INST] [/INST]"},
    /* Mistral-Nemo-Instruct-2407 (Tekken v3) */
    {"mistral-v3-tekken", CHAT_MISTRAL, "[INST]", "[/INST]", SYS_ALWAYS, NULL, "<s> [INST] [/INST]"},
    /* mistral-common's generated template for SentencePiece v7 */
    {"mistral-v7", CHAT_MISTRAL, "[INST] ", "[/INST]", SYS_BLOCK, NULL,
     "<s> [INST] [/INST] [SYSTEM_PROMPT] [/SYSTEM_PROMPT]"},
};
#define N_STYLES (sizeof styles / sizeof styles[0])
#define KNOWN                                                                            \
    "chatml, llama3, llama3.1, llama3.2, llama2, mistral-v0.1, mistral-v1, mistral-v3, " \
    "mistral-v3-tekken, mistral-v7"

static const chat_style *style_named(const char *name) {
    for (size_t i = 0; i < N_STYLES; i++)
        if (!strcmp(styles[i].name, name)) return &styles[i];
    return NULL;
}

const char *tok_chat_builtin_specials(const char *name) {
    const chat_style *st = name ? style_named(name) : NULL;
    return st ? st->specials : NULL;
}

/* A built-in family and the default system message it takes from the model's template (owned). */
typedef struct {
    const chat_style *style;
    char *default_system; /* a literal default system message, or NULL */
} chat_plan;

/* ---- reading a template's literals --------------------------------------- */

/* The Jinja single-quoted string literal starting at p (just past its opening
 * quote), unescaped; NULL if it does not end, or uses an escape we do not decode. */
static char *jinja_literal(const char *p) {
    tok_buf b = {0};
    for (; *p && *p != '\''; p++) {
        char c = *p;
        if (c == '\\') {
            p++;
            c = *p == 'n' ? '\n' : *p == 't' ? '\t' : (*p == '\\' || *p == '\'' || *p == '"') ? *p : 0;
            if (!c) break;
        }
        if (tok_buf_put(&b, &c, 1)) break;
    }
    if (*p != '\'' || (!b.p && tok_buf_put(&b, "", 0))) {
        tok_buf_free(&b);
        return NULL;
    }
    b.p[b.len] = '\0';
    return b.p;
}

/* `{%- set NAME = '...' %}` as a pure literal: 0 and *out NULL when the template
 * never sets NAME, 0 and the text when it sets it to a literal, -1 when it sets
 * it to anything else (an expression we cannot evaluate). */
static int literal_setting(const char *t, const char *name, char **out) {
    *out = NULL;
    char pat[64];
    snprintf(pat, sizeof pat, "set %s = ", name);
    const char *p = strstr(t, pat);
    if (!p) return 0;
    p += strlen(pat);
    if (*p != '\'' || !(*out = jinja_literal(p + 1))) return -1;
    /* the literal must be the whole value: its closing quote ends the statement */
    const char *end = p + 1;
    while (*end && *end != '\'') end += *end == '\\' ? 2 : 1;
    while (*++end == ' ')
        ;
    if (strncmp(end, "%}", 2) && strncmp(end, "-%}", 3)) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* The default system message a ChatML template writes as a literal, or NULL.
 * Accepts the newline as a real newline or as the two characters "\n". */
static char *chatml_default_system(const char *tmpl) {
    static const char *heads[] = {"<|im_start|>system\n", "<|im_start|>system\\n"};
    for (int h = 0; h < 2; h++) {
        const char *p = strstr(tmpl, heads[h]);
        if (!p) continue;
        p += strlen(heads[h]);
        const char *e = strstr(p, "<|im_end|>");
        /* a literal only: the text must not leave the string (quotes, Jinja) */
        if (!e || memchr(p, '\'', (size_t)(e - p)) || memchr(p, '"', (size_t)(e - p)) ||
            memchr(p, '{', (size_t)(e - p)))
            continue;
        return strndup(p, (size_t)(e - p));
    }
    return NULL;
}

/* The default system message a template of the family of `st` writes as a
 * literal, or NULL (none, empty, or computed). */
static char *template_default_system(const chat_style *st, const char *tmpl) {
    if (st->family == CHAT_CHATML) return chatml_default_system(tmpl);
    if (st->family != CHAT_MISTRAL || (st->sys_mode != SYS_IF_NONEMPTY && st->sys_mode != SYS_BLOCK)) return NULL;
    char *q = strdup(tmpl), *d = NULL;
    if (!q) return NULL;
    for (char *c = q; *c; c++)
        if (*c == '"') *c = '\'';
    if (literal_setting(q, "default_system_message", &d) == 0 && d && !*d) {
        free(d);
        d = NULL;
    }
    free(q);
    return d;
}

/* ---- rendering ------------------------------------------------------------- */

static int put(tok_buf *b, const char *s) { return tok_buf_put(b, s, strlen(s)); }

/* Python's str.isspace, which Jinja's trim and str.strip() use: Unicode White_Space
 * plus the information separators U+001C..U+001F. */
static int py_space(uint32_t cp) { return tok_is_space(cp) || (cp >= 0x1C && cp <= 0x1F); }

/* Append s with the whitespace at both ends (lead, trail) removed as Python does. */
static int put_stripped(tok_buf *b, const char *s, int lead, int trail) {
    size_t n = strlen(s), i = 0;
    while (lead && i < n) {
        uint32_t cp;
        size_t L = tok_utf8_get(s + i, &cp);
        if (!py_space(cp)) break;
        i += L;
    }
    while (trail && n > i) {
        size_t j = n - 1;
        while (j > i && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
        uint32_t cp;
        tok_utf8_get(s + j, &cp);
        if (!py_space(cp)) break;
        n = j;
    }
    return tok_buf_put(b, s + i, n - i);
}

static int put_trimmed(tok_buf *b, const char *s) { return put_stripped(b, s, 1, 1); }

static int render_chatml(const char *sys, const char *user, tok_buf *b) {
    int rc = 0;
    if (sys) rc = put(b, "<|im_start|>system\n") || put(b, sys) || put(b, "<|im_end|>\n");
    return rc || put(b, "<|im_start|>user\n") || put(b, user) || put(b, "<|im_end|>\n") ||
           put(b, "<|im_start|>assistant\n");
}

static int render_llama3(const char *system, const char *user, tok_buf *b) {
    int rc = put(b, "<|begin_of_text|>");
    if (system)
        rc = rc || put(b, "<|start_header_id|>system<|end_header_id|>\n\n") || put_trimmed(b, system) ||
             put(b, "<|eot_id|>");
    return rc || put(b, "<|start_header_id|>user<|end_header_id|>\n\n") || put_trimmed(b, user) ||
           put(b, "<|eot_id|>") || put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* The system block is always there (empty system message when none is given). */
static int render_llama31(const char *system, const char *user, const char *date, tok_buf *b) {
    return put(b, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n") ||
           put(b, "Cutting Knowledge Date: December 2023\nToday Date: ") || put(b, date) || put(b, "\n\n") ||
           put_trimmed(b, system ? system : "") || put(b, "<|eot_id|>") ||
           put(b, "<|start_header_id|>user<|end_header_id|>\n\n") || put_trimmed(b, user) || put(b, "<|eot_id|>") ||
           put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* content.strip() applies to the whole content, system block included: an empty
 * user message lets it eat the block's closing "\n\n" too. */
static int render_llama2(const char *system, const char *user, tok_buf *b) {
    tok_buf c = {0};
    int rc = 0;
    if (system) rc = put(&c, "<<SYS>>\n") || put(&c, system) || put(&c, "\n<</SYS>>\n\n");
    rc = rc || put(&c, user) || tok_buf_put(&c, "", 1);
    rc = rc || put(b, "<s>[INST] ") || put_trimmed(b, c.p) || put(b, " [/INST]");
    tok_buf_free(&c);
    return rc;
}

static int render_mistral(const chat_style *st, const char *system, const char *dflt, const char *user, tok_buf *b) {
    int rc = put(b, "<s>");
    if (st->sys_mode == SYS_BLOCK) {
        if (system) rc = rc || put(b, "[SYSTEM_PROMPT] ") || put(b, system) || put(b, "[/SYSTEM_PROMPT]");
        else if (dflt) /* the template's own default is written without the space */
            rc = rc || put(b, "[SYSTEM_PROMPT]") || put(b, dflt) || put(b, "[/SYSTEM_PROMPT]");
    }
    rc = rc || put(b, st->inst_open);
    const char *sys = system ? system : dflt;
    if ((st->sys_mode == SYS_IF_NONEMPTY && sys && *sys) || (st->sys_mode == SYS_ALWAYS && system))
        rc = rc || put(b, sys) || put(b, "\n\n");
    return rc || put(b, user) || put(b, st->inst_close);
}

/* Today's local date as strftime("%d %b %Y") prints it in the C locale. */
static void today(char out[16]) {
    static const char *mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm)) gmtime_r(&now, &tm);
    snprintf(out, 16, "%02d %s %04d", tm.tm_mday % 100, mon[tm.tm_mon % 12], (tm.tm_year + 1900) % 10000);
}

static int render(const chat_plan *p, const char *system, const char *user, const char *date, tok_buf *b, char *err) {
    const chat_style *st = p->style;
    char now[16];
    switch (st->family) {
    case CHAT_CHATML: return render_chatml(system ? system : p->default_system, user, b);
    case CHAT_LLAMA3: return render_llama3(system, user, b);
    case CHAT_LLAMA31:
        if (!date) date = st->date_default;
        if (!date) {
            today(now);
            date = now;
        }
        return render_llama31(system, user, date, b);
    case CHAT_LLAMA2: return render_llama2(system, user, b);
    default:
        if (system && st->sys_mode == SYS_REFUSED) {
            tok_errf(err,
                     "chat: the %s template has no system role (transformers raises an exception); "
                     "drop --system",
                     st->name);
            return TOK_CHAT_E_TEMPLATE;
        }
        return render_mistral(st, system, p->default_system, user, b);
    }
}

static int check_utf8(const char *system, const char *user, char *err) {
    /* the renderers decode code points (trim): only valid UTF-8 may reach them */
    const char *msg[2] = {system, user}, *what[2] = {"system", "user"};
    for (int k = 0; k < 2; k++) {
        size_t n = msg[k] ? strlen(msg[k]) : 0, bad = msg[k] ? tok_utf8_check(msg[k], n) : 0;
        if (bad < n) {
            tok_errf(err, "chat: invalid UTF-8 at byte %zu of the %s message", bad, what[k]);
            return -1;
        }
    }
    return 0;
}

/* "DD Mon YYYY" -> that day at 00:00:00 local time; -1 if it is not such a date. */
static long long parse_date(const char *d) {
    static const char *mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    int day, year, m = -1;
    char name[4];
    if (strlen(d) != 11 || sscanf(d, "%2d %3s %4d", &day, name, &year) != 3 || d[2] != ' ' || d[6] != ' ') return -1;
    for (int i = 0; i < 12; i++)
        if (!strcmp(name, mon[i])) m = i;
    if (m < 0 || day < 1 || day > 31 || year < 1) return -1;
    struct tm tm = {.tm_mday = day, .tm_mon = m, .tm_year = year - 1900, .tm_isdst = -1};
    time_t t = mktime(&tm);
    if (t == (time_t)-1 || tm.tm_mday != day) return -1;
    return (long long)t;
}

static int put_json_str(tok_buf *b, const char *s) {
    char *j = NULL;
    size_t n = 0, cap = 0;
    int rc = jinja_json_string(&j, &n, &cap, s, strlen(s)) || tok_buf_put(b, j, n);
    free(j);
    return rc;
}

/* The special token text transformers passes as bos_token / eos_token. */
static const char *special_text(const tokenizer *t, int32_t id, size_t *len) {
    return id >= 0 && t ? tok_piece(t, id, len) : NULL;
}

/* The variables transformers' apply_chat_template hands the template, as JSON:
 * messages, add_generation_prompt, the special tokens, tools = documents = None,
 * date_string when a date is given, then the caller's own. */
static int chat_vars(const tokenizer *t, const tok_chat_input *in, tok_buf *b) {
    int rc = put(b, "{\"messages\": ");
    if (in->messages_json) rc = rc || put(b, in->messages_json);
    else rc = rc || put(b, "[");
    for (size_t i = 0; !rc && !in->messages_json && i < in->n_messages; i++)
        rc = put(b, i ? ", {\"role\": " : "{\"role\": ") || put_json_str(b, in->messages[i].role) ||
             put(b, ", \"content\": ") || put_json_str(b, in->messages[i].content) || put(b, "}");
    rc = rc || put(b, in->messages_json ? "" : "]") ||
         put(b, ", \"tools\": null, \"documents\": null, \"add_generation_prompt\": ") ||
         put(b, in->add_generation_prompt ? "true" : "false");
    const char *names[2] = {"bos_token", "eos_token"}, *given[2] = {in->bos_token, in->eos_token};
    int32_t ids[2] = {t ? t->bos_id : -1, t ? t->eos_id : -1};
    for (int k = 0; k < 2 && !rc; k++) {
        size_t n = 0;
        const char *v = given[k] ? given[k] : special_text(t, ids[k], &n);
        if (!v) continue;
        char *z = given[k] ? NULL : strndup(v, n);
        rc = put(b, ", \"") || put(b, names[k]) || put(b, "\": ") || put_json_str(b, z ? z : v);
        free(z);
    }
    if (!rc && in->date) rc = put(b, ", \"date_string\": ") || put_json_str(b, in->date);
    if (!rc && in->vars_json) { /* the members of the caller's object go last: they win */
        const char *p = in->vars_json;
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
        size_t n = strlen(p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\n' || p[n - 1] == '\t' || p[n - 1] == '\r')) n--;
        if (n < 2 || p[0] != '{' || p[n - 1] != '}') return TOK_CHAT_E_ARG;
        const char *q = p + 1;
        while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r') q++;
        if (q < p + n - 1) rc = put(b, ", ") || tok_buf_put(b, p + 1, n - 2);
    }
    return rc || put(b, "}") || tok_buf_put(b, "", 1);
}

int tok_chat_render_jinja(const tokenizer *t, const char *template_text, const tok_chat_input *in, char **out,
                          char *err) {
    *out = NULL;
    const char *tmpl = template_text ? template_text : t ? t->chat_template : NULL;
    if (!tmpl) {
        tok_errf(err,
                 "chat: the tokenizer has no chat template; give one (a template file, or a built-in name: " KNOWN ")");
        return TOK_CHAT_E_TEMPLATE;
    }
    for (size_t i = 0; i < in->n_messages; i++) {
        const char *f[2] = {in->messages[i].role, in->messages[i].content};
        for (int k = 0; k < 2; k++) {
            size_t n = f[k] ? strlen(f[k]) : 0, bad = f[k] ? tok_utf8_check(f[k], n) : 1;
            if (bad < n || !f[k]) {
                if (f[k])
                    tok_errf(err, "chat: invalid UTF-8 at byte %zu of the %s of message %zu", bad,
                             k ? "content" : "role", i + 1);
                else tok_errf(err, "chat: message %zu has no %s", i + 1, k ? "content" : "role");
                return -1;
            }
        }
    }
    long long now = -1;
    if (in->date && (now = parse_date(in->date)) < 0) {
        tok_errf(err, "chat: the date \"%s\" is not of the form \"DD Mon YYYY\"", in->date);
        return -1;
    }
    tok_buf vars = {0};
    int rc = chat_vars(t, in, &vars);
    if (rc) {
        tok_buf_free(&vars);
        tok_errf(err, rc == TOK_CHAT_E_ARG ? "chat: the extra variables are not a JSON object" : "chat: out of memory");
        return -1;
    }
    jinja_template *jt;
    if (jinja_parse(tmpl, strlen(tmpl), &jt, err)) {
        tok_buf_free(&vars);
        return TOK_CHAT_E_TEMPLATE;
    }
    jinja_input ji = {.vars_json = vars.p, .vars_len = vars.len - 1, .now = now};
    size_t len;
    rc = jinja_render(jt, &ji, out, &len, err);
    jinja_free(jt);
    tok_buf_free(&vars);
    return rc ? TOK_CHAT_E_TEMPLATE : 0;
}

int tok_chat_render_at(const tokenizer *t, const char *name, const char *system, const char *user, const char *date,
                       char **out, char *err) {
    *out = NULL;
    if (check_utf8(system, user, err)) return -1;
    if (!name) { /* the model's own template, through the Jinja interpreter */
        tok_chat_msg msgs[2] = {{"system", system}, {"user", user ? user : ""}};
        tok_chat_input in = {.messages = system ? msgs : msgs + 1,
                             .n_messages = system ? 2 : 1,
                             .add_generation_prompt = 1,
                             .date = date};
        return tok_chat_render_jinja(t, NULL, &in, out, err);
    }
    chat_plan p = {0};
    if (!(p.style = style_named(name))) {
        tok_errf(err, "chat: unknown template name \"%s\" (known: " KNOWN ")", name);
        return TOK_CHAT_E_ARG;
    }
    /* a forced family still takes the default system message the tokenizer's
     * own template spells out, as recognising it would */
    if (!system && t->chat_template) p.default_system = template_default_system(p.style, t->chat_template);
    tok_buf b = {0};
    int rc = render(&p, system, user ? user : "", date, &b, err);
    free(p.default_system);
    if (rc || (!b.p && tok_buf_put(&b, "", 0))) {
        tok_buf_free(&b);
        if (rc != TOK_CHAT_E_TEMPLATE) tok_errf(err, "chat: out of memory");
        return rc == TOK_CHAT_E_TEMPLATE ? rc : -1;
    }
    *out = b.p;
    return 0;
}

int tok_chat_render(const tokenizer *t, const char *name, const char *system, const char *user, char **out, char *err) {
    return tok_chat_render_at(t, name, system, user, NULL, out, err);
}

/* ---- conversations ----------------------------------------------------------- */

/* One message of the chatml / llama3 families. */
static int render_msg(int family, const tok_chat_msg *m, tok_buf *b) {
    if (family == CHAT_CHATML)
        return put(b, "<|im_start|>") || put(b, m->role) || put(b, "\n") || put(b, m->content) ||
               put(b, "<|im_end|>\n");
    return put(b, "<|start_header_id|>") || put(b, m->role) || put(b, "<|end_header_id|>\n\n") ||
           put_trimmed(b, m->content) || put(b, "<|eot_id|>");
}

/* chatml, llama3, llama3.1/3.2: each message rendered alone, in order, the way
 * their templates loop over messages (checked against transformers on whole
 * conversations: tests/refs/tokenizer/chat-conversations.json). */
static int render_conv(const chat_plan *p, const char *date, const tok_chat_msg *msgs, size_t n, int add_gen,
                       tok_buf *b) {
    int family = p->style->family, rc = 0;
    size_t i = 0;
    int has_sys = n && !strcmp(msgs[0].role, "system");
    if (family == CHAT_CHATML) {
        if (!has_sys && p->default_system)
            rc = put(b, "<|im_start|>system\n") || put(b, p->default_system) || put(b, "<|im_end|>\n");
    } else if (family == CHAT_LLAMA3) {
        rc = put(b, "<|begin_of_text|>");
    } else { /* llama3.1: the system block always comes first, with the dates */
        rc = put(b, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n") ||
             put(b, "Cutting Knowledge Date: December 2023\nToday Date: ") || put(b, date) || put(b, "\n\n") ||
             put_trimmed(b, has_sys ? msgs[0].content : "") || put(b, "<|eot_id|>");
        i = has_sys;
    }
    for (; i < n && !rc; i++) rc = render_msg(family == CHAT_CHATML ? CHAT_CHATML : CHAT_LLAMA3, &msgs[i], b);
    if (!rc && add_gen)
        rc = family == CHAT_CHATML ? put(b, "<|im_start|>assistant\n")
                                   : put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return rc;
}

static int check_messages(const tok_chat_msg *msgs, size_t n, char *err) {
    if (!msgs || !n) {
        tok_errf(err, "chat: no messages");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const char *r = msgs[i].role;
        if (!r || (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant"))) {
            tok_errf(err, "chat: message %zu: role \"%s\" is not system, user or assistant", i, r ? r : "(null)");
            return -1;
        }
        if (i && !strcmp(r, "system")) {
            tok_errf(err, "chat: message %zu: a system message may only come first", i);
            return -1;
        }
        if (!msgs[i].content) {
            tok_errf(err, "chat: message %zu has no content", i);
            return -1;
        }
        size_t len = strlen(msgs[i].content), bad = tok_utf8_check(msgs[i].content, len);
        if (bad < len) {
            tok_errf(err, "chat: invalid UTF-8 at byte %zu of message %zu", bad, i);
            return -1;
        }
    }
    return 0;
}

int tok_chat_render_messages(const tokenizer *t, const char *name, const char *date, const tok_chat_msg *msgs, size_t n,
                             int add_gen, char **out, char *err) {
    *out = NULL;
    if (check_messages(msgs, n, err)) return TOK_CHAT_E_ARG;
    int has_sys = !strcmp(msgs[0].role, "system");
    /* the one-exchange shape every family renders */
    if (add_gen && n == (size_t)has_sys + 1 && !strcmp(msgs[n - 1].role, "user"))
        return tok_chat_render_at(t, name, has_sys ? msgs[0].content : NULL, msgs[n - 1].content, date, out, err);
    if (!name) { /* the model's own template, through the Jinja interpreter */
        tok_chat_input in = {.messages = msgs, .n_messages = n, .add_generation_prompt = add_gen, .date = date};
        return tok_chat_render_jinja(t, NULL, &in, out, err);
    }
    chat_plan p = {0};
    if (!(p.style = style_named(name))) {
        tok_errf(err, "chat: unknown template name \"%s\" (known: " KNOWN ")", name);
        return TOK_CHAT_E_ARG;
    }
    if (t->chat_template) p.default_system = template_default_system(p.style, t->chat_template);
    int rc = 0;
    char now[16];
    tok_buf b = {0};
    if (p.style->family != CHAT_CHATML && p.style->family != CHAT_LLAMA3 && p.style->family != CHAT_LLAMA31) {
        tok_errf(err, "chat: the %s template renders a system and one user message here, not a conversation",
                 p.style->name);
        rc = -1;
    } else {
        if (!date) date = p.style->date_default;
        if (!date) {
            today(now);
            date = now;
        }
        if (render_conv(&p, date, msgs, n, add_gen, &b) || (!b.p && tok_buf_put(&b, "", 0))) {
            tok_errf(err, "chat: out of memory");
            rc = -1;
        }
    }
    free(p.default_system);
    if (rc) {
        tok_buf_free(&b);
        return -1;
    }
    *out = b.p;
    return 0;
}
