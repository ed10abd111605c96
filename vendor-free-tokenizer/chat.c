/* chat.c - chat prompts for `llmgen --chat`: the model's own template is
 * recognised from its text and rendered by hand (no Jinja interpreter), for
 * one optional system message and one user message, with the generation
 * prompt appended (transformers' add_generation_prompt=True).
 *
 *   chatml   <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
 *            (SmolLM2, Qwen); a default system message written in the template
 *            as a literal is used when `system` is NULL, as those templates do.
 *   llama3   <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n
 *            {content, trimmed}<|eot_id|> ... then the assistant header.
 *   llama3.1 / llama3.2  the same, with an always-present system block that
 *            starts "Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n".
 *            3.1 defaults the date to the literal "26 Jul 2024"; 3.2 (and 3.3)
 *            to strftime_now("%d %b %Y"), i.e. today's local date under transformers.
 *   llama2   <s>[INST] <<SYS>>\n{sys}\n<</SYS>>\n\n{user} [/INST], the whole
 *            content stripped (Python str.strip) as Meta's Llama-2-chat template does.
 *   mistral-*  [INST] wrappers whose spacing and system-message placement differ
 *            between versions (see `styles` below).
 *
 * Recognition looks for the literal template fragments that decide the output
 * (after unifying the two Jinja quote characters), so a template that differs in
 * any of them is an error naming what we know, never a guess. Every family is
 * checked byte for byte against transformers on real templates
 * (tests/refs/tokenizer/chat-templates.json, tests/cli/check_tokenizer.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
} chat_style;

static const chat_style styles[] = {
    {"chatml", CHAT_CHATML, NULL, NULL, 0, NULL},
    {"llama3", CHAT_LLAMA3, NULL, NULL, 0, NULL},
    {"llama3.1", CHAT_LLAMA31, NULL, NULL, 0, "26 Jul 2024"},
    {"llama3.2", CHAT_LLAMA31, NULL, NULL, 0, NULL},
    {"llama2", CHAT_LLAMA2, NULL, NULL, 0, NULL},
    /* Mistral-7B-Instruct-v0.1's Hugging Face template: no system role */
    {"mistral-v0.1", CHAT_MISTRAL, "[INST] ", " [/INST]", SYS_REFUSED, NULL},
    /* mistral-common's generated templates for SentencePiece v1 / v3 (v2 renders as v3) */
    {"mistral-v1", CHAT_MISTRAL, " [INST] ", " [/INST]", SYS_IF_NONEMPTY, NULL},
    {"mistral-v3", CHAT_MISTRAL, "[INST] ", "[/INST]", SYS_IF_NONEMPTY, NULL},
    /* Mistral-Nemo-Instruct-2407 (Tekken v3) */
    {"mistral-v3-tekken", CHAT_MISTRAL, "[INST]", "[/INST]", SYS_ALWAYS, NULL},
    /* mistral-common's generated template for SentencePiece v7 */
    {"mistral-v7", CHAT_MISTRAL, "[INST] ", "[/INST]", SYS_BLOCK, NULL},
};
#define N_STYLES (sizeof styles / sizeof styles[0])
#define KNOWN "chatml, llama3, llama3.1, llama3.2, llama2, mistral-v0.1, mistral-v1, mistral-v3, " \
              "mistral-v3-tekken, mistral-v7"

static const chat_style *style_named(const char *name)
{
    for (size_t i = 0; i < N_STYLES; i++)
        if (!strcmp(styles[i].name, name))
            return &styles[i];
    return NULL;
}

/* What was recognised in a template's text, plus what it carries (owned). */
typedef struct {
    const chat_style *style;
    char *default_system; /* a literal default system message, or NULL */
    char *date_default;   /* llama3.1: the template's literal date_string default, or NULL */
} chat_plan;

/* ---- reading a template's literals --------------------------------------- */

/* All fragments present in `t` (a template with its quotes unified to '). */
static int has_all(const char *t, const char *const *frags)
{
    for (; *frags; frags++)
        if (!strstr(t, *frags))
            return 0;
    return 1;
}

/* The Jinja single-quoted string literal starting at p (just past its opening
 * quote), unescaped; NULL if it does not end, or uses an escape we do not decode. */
static char *jinja_literal(const char *p)
{
    tok_buf b = {0};
    for (; *p && *p != '\''; p++) {
        char c = *p;
        if (c == '\\') {
            p++;
            c = *p == 'n' ? '\n' : *p == 't' ? '\t' : (*p == '\\' || *p == '\'' || *p == '"') ? *p : 0;
            if (!c)
                break;
        }
        if (tok_buf_put(&b, &c, 1))
            break;
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
static int literal_setting(const char *t, const char *name, char **out)
{
    *out = NULL;
    char pat[64];
    snprintf(pat, sizeof pat, "set %s = ", name);
    const char *p = strstr(t, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    if (*p != '\'' || !(*out = jinja_literal(p + 1)))
        return -1;
    /* the literal must be the whole value: its closing quote ends the statement */
    const char *end = p + 1;
    while (*end && *end != '\'')
        end += *end == '\\' ? 2 : 1;
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
static char *chatml_default_system(const char *tmpl)
{
    static const char *heads[] = {"<|im_start|>system\n", "<|im_start|>system\\n"};
    for (int h = 0; h < 2; h++) {
        const char *p = strstr(tmpl, heads[h]);
        if (!p)
            continue;
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

/* ---- recognising a template ---------------------------------------------- */

static const char *const llama2_frags[] = {
    "set system_message = false",
    "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content']",
    "bos_token + '[INST] ' + content.strip() + ' [/INST]'", NULL};
static const char *const llama31_frags[] = {
    "'<|start_header_id|>system<|end_header_id|>\\n\\n'", "'Cutting Knowledge Date: December 2023\\n'",
    "'Today Date: ' + date_string + '\\n\\n'", "set system_message = messages[0]['content']|trim",
    "set system_message = ''", "message['content'] | trim", NULL};
static const char *const v7_frags[] = {"'[SYSTEM_PROMPT] '", "'[/SYSTEM_PROMPT]'", "'[INST] '", "'[/INST]'",
                                       "set default_system_message = ", NULL};
static const char *const v1_frags[] = {"' [INST] '", "' [/INST]'", "system_message != ''",
                                       "set default_system_message = ", NULL};
static const char *const v3_frags[] = {"'[INST] '", "'[/INST]'", "system_message != ''",
                                       "set default_system_message = ", NULL};
static const char *const tekken_frags[] = {"'[INST]' + system_message + '\\n\\n' + message['content'] + '[/INST]'",
                                           "'[INST]' + message['content'] + '[/INST]'",
                                           "set system_message = messages[0]['content']", NULL};
static const char *const v01_frags[] = {"'[INST] ' + message['content'] + ' [/INST]'", NULL};

static int plan_llama31(const char *q, chat_plan *p, char *err)
{
    p->style = style_named("llama3.2");
    if (strstr(q, "strftime_now")) {
        if (!strstr(q, "set date_string = strftime_now('%d %b %Y')")) {
            tok_errf(err, "chat: this Llama 3.1+ template formats today's date in a way we do not know");
            return -1;
        }
        return 0; /* today, as transformers' strftime_now gives it */
    }
    if (literal_setting(q, "date_string", &p->date_default) || !p->date_default) {
        tok_errf(err, "chat: this Llama 3.1+ template has no literal date_string default we can read");
        return -1;
    }
    p->style = style_named("llama3.1");
    return 0;
}

static int plan_mistral(const char *q, chat_plan *p, char *err)
{
    const char *name = NULL;
    if (has_all(q, v7_frags))
        name = "mistral-v7";
    else if (has_all(q, v1_frags))
        name = "mistral-v1";
    else if (has_all(q, v3_frags))
        name = "mistral-v3";
    else if (has_all(q, tekken_frags))
        name = "mistral-v3-tekken";
    else if (has_all(q, v01_frags) && !strstr(q, "system"))
        name = "mistral-v0.1";
    if (!name) {
        tok_errf(err, "chat: an [INST] template we do not recognise (known: " KNOWN "); choose one by name");
        return -1;
    }
    p->style = style_named(name);
    if (p->style->sys_mode == SYS_IF_NONEMPTY || p->style->sys_mode == SYS_BLOCK) {
        if (literal_setting(q, "default_system_message", &p->default_system)) {
            tok_errf(err, "chat: this %s template computes its default system message; pass one with --system",
                     name);
            return -1;
        }
        if (p->default_system && !*p->default_system) {
            free(p->default_system);
            p->default_system = NULL;
        }
    }
    return 0;
}

/* Recognise `tmpl`; on success p->style is set and p owns what it extracted. */
static int plan_of_template(const char *tmpl, chat_plan *p, char *err)
{
    if (strstr(tmpl, "<|im_start|>")) {
        p->style = style_named("chatml");
        p->default_system = chatml_default_system(tmpl);
        return 0;
    }
    char *q = strdup(tmpl); /* quotes unified, so fragments match either spelling */
    if (!q) {
        tok_errf(err, "chat: out of memory");
        return -1;
    }
    for (char *c = q; *c; c++)
        if (*c == '"')
            *c = '\'';
    int rc = 0;
    if (strstr(q, "<|start_header_id|>")) {
        if (!strstr(q, "Cutting Knowledge Date"))
            p->style = style_named("llama3");
        else if (has_all(q, llama31_frags))
            rc = plan_llama31(q, p, err);
        else {
            tok_errf(err, "chat: a Llama 3.1+ template whose system block we do not recognise; choose one by name");
            rc = -1;
        }
    } else if (strstr(q, "[INST]")) {
        if (strstr(q, "<<SYS>>")) {
            if (has_all(q, llama2_frags))
                p->style = style_named("llama2");
            else {
                tok_errf(err, "chat: a Llama 2 style template that differs from Meta's Llama-2-chat one; "
                         "choose one by name");
                rc = -1;
            }
        } else
            rc = plan_mistral(q, p, err);
    } else {
        tok_errf(err, "chat: the tokenizer's chat template is not one we recognise (known: " KNOWN
                 "); choose one by name");
        rc = -1;
    }
    free(q);
    return rc;
}

/* The default system message a template of the family of `st` writes as a
 * literal, or NULL (none, empty, or computed). */
static char *template_default_system(const chat_style *st, const char *tmpl)
{
    if (st->family == CHAT_CHATML)
        return chatml_default_system(tmpl);
    if (st->family != CHAT_MISTRAL || (st->sys_mode != SYS_IF_NONEMPTY && st->sys_mode != SYS_BLOCK))
        return NULL;
    char *q = strdup(tmpl), *d = NULL;
    if (!q)
        return NULL;
    for (char *c = q; *c; c++)
        if (*c == '"')
            *c = '\'';
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
static int put_stripped(tok_buf *b, const char *s, int lead, int trail)
{
    size_t n = strlen(s), i = 0;
    while (lead && i < n) {
        uint32_t cp;
        size_t L = tok_utf8_get(s + i, &cp);
        if (!py_space(cp))
            break;
        i += L;
    }
    while (trail && n > i) {
        size_t j = n - 1;
        while (j > i && ((unsigned char)s[j] & 0xC0) == 0x80)
            j--;
        uint32_t cp;
        tok_utf8_get(s + j, &cp);
        if (!py_space(cp))
            break;
        n = j;
    }
    return tok_buf_put(b, s + i, n - i);
}

static int put_trimmed(tok_buf *b, const char *s) { return put_stripped(b, s, 1, 1); }

static int render_chatml(const char *sys, const char *user, tok_buf *b)
{
    int rc = 0;
    if (sys)
        rc = put(b, "<|im_start|>system\n") || put(b, sys) || put(b, "<|im_end|>\n");
    return rc || put(b, "<|im_start|>user\n") || put(b, user) || put(b, "<|im_end|>\n") ||
           put(b, "<|im_start|>assistant\n");
}

static int render_llama3(const char *system, const char *user, tok_buf *b)
{
    int rc = put(b, "<|begin_of_text|>");
    if (system)
        rc = rc || put(b, "<|start_header_id|>system<|end_header_id|>\n\n") || put_trimmed(b, system) ||
             put(b, "<|eot_id|>");
    return rc || put(b, "<|start_header_id|>user<|end_header_id|>\n\n") || put_trimmed(b, user) ||
           put(b, "<|eot_id|>") || put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* The system block is always there (empty system message when none is given). */
static int render_llama31(const char *system, const char *user, const char *date, tok_buf *b)
{
    return put(b, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n") ||
           put(b, "Cutting Knowledge Date: December 2023\nToday Date: ") || put(b, date) || put(b, "\n\n") ||
           put_trimmed(b, system ? system : "") || put(b, "<|eot_id|>") ||
           put(b, "<|start_header_id|>user<|end_header_id|>\n\n") || put_trimmed(b, user) ||
           put(b, "<|eot_id|>") || put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* content.strip() applies to the whole content, system block included: an empty
 * user message lets it eat the block's closing "\n\n" too. */
static int render_llama2(const char *system, const char *user, tok_buf *b)
{
    tok_buf c = {0};
    int rc = 0;
    if (system)
        rc = put(&c, "<<SYS>>\n") || put(&c, system) || put(&c, "\n<</SYS>>\n\n");
    rc = rc || put(&c, user) || tok_buf_put(&c, "", 1);
    rc = rc || put(b, "<s>[INST] ") || put_trimmed(b, c.p) || put(b, " [/INST]");
    tok_buf_free(&c);
    return rc;
}

static int render_mistral(const chat_style *st, const char *system, const char *dflt, const char *user,
                          tok_buf *b)
{
    int rc = put(b, "<s>");
    if (st->sys_mode == SYS_BLOCK) {
        if (system)
            rc = rc || put(b, "[SYSTEM_PROMPT] ") || put(b, system) || put(b, "[/SYSTEM_PROMPT]");
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
static void today(char out[16])
{
    static const char *mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm))
        gmtime_r(&now, &tm);
    snprintf(out, 16, "%02d %s %04d", tm.tm_mday % 100, mon[tm.tm_mon % 12], (tm.tm_year + 1900) % 10000);
}

static int render(const chat_plan *p, const char *system, const char *user, const char *date, tok_buf *b,
                  char *err)
{
    const chat_style *st = p->style;
    char now[16];
    switch (st->family) {
    case CHAT_CHATML:
        return render_chatml(system ? system : p->default_system, user, b);
    case CHAT_LLAMA3:
        return render_llama3(system, user, b);
    case CHAT_LLAMA31:
        if (!date)
            date = p->date_default ? p->date_default : st->date_default;
        if (!date) {
            today(now);
            date = now;
        }
        return render_llama31(system, user, date, b);
    case CHAT_LLAMA2:
        return render_llama2(system, user, b);
    default:
        if (system && st->sys_mode == SYS_REFUSED) {
            tok_errf(err, "chat: the %s template has no system role (transformers raises an exception); "
                     "drop --system", st->name);
            return -2;
        }
        return render_mistral(st, system, p->default_system, user, b);
    }
}

static int check_utf8(const char *system, const char *user, char *err)
{
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

int tok_chat_render_at(const tokenizer *t, const char *name, const char *system, const char *user,
                       const char *date, char **out, char *err)
{
    *out = NULL;
    if (check_utf8(system, user, err))
        return -1;
    chat_plan p = {0};
    if (name) {
        if (!(p.style = style_named(name))) {
            tok_errf(err, "chat: unknown template name \"%s\" (known: " KNOWN ")", name);
            return TOK_CHAT_E_ARG;
        }
        /* a forced family still takes the default system message the tokenizer's
         * own template spells out, as recognising it would */
        if (!system && t->chat_template)
            p.default_system = template_default_system(p.style, t->chat_template);
    } else if (!t->chat_template) {
        tok_errf(err, "chat: the tokenizer has no chat template; choose one by name (" KNOWN ")");
        return -1;
    } else if (plan_of_template(t->chat_template, &p, err)) {
        free(p.default_system);
        free(p.date_default);
        return -1;
    }
    tok_buf b = {0};
    int rc = render(&p, system, user ? user : "", date, &b, err);
    free(p.default_system);
    free(p.date_default);
    if (rc || (!b.p && tok_buf_put(&b, "", 0))) {
        tok_buf_free(&b);
        if (rc != -2)
            tok_errf(err, "chat: out of memory");
        return -1;
    }
    *out = b.p;
    return 0;
}

int tok_chat_render(const tokenizer *t, const char *name, const char *system, const char *user, char **out,
                    char *err)
{
    return tok_chat_render_at(t, name, system, user, NULL, out, err);
}

/* ---- conversations ----------------------------------------------------------- */

/* One message of the chatml / llama3 families. */
static int render_msg(int family, const tok_chat_msg *m, tok_buf *b)
{
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
                       tok_buf *b)
{
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
    for (; i < n && !rc; i++)
        rc = render_msg(family == CHAT_CHATML ? CHAT_CHATML : CHAT_LLAMA3, &msgs[i], b);
    if (!rc && add_gen)
        rc = family == CHAT_CHATML ? put(b, "<|im_start|>assistant\n")
                                   : put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return rc;
}

static int check_messages(const tok_chat_msg *msgs, size_t n, char *err)
{
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

int tok_chat_render_messages(const tokenizer *t, const char *name, const char *date, const tok_chat_msg *msgs,
                             size_t n, int add_gen, char **out, char *err)
{
    *out = NULL;
    if (check_messages(msgs, n, err))
        return TOK_CHAT_E_ARG;
    int has_sys = !strcmp(msgs[0].role, "system");
    /* the one-exchange shape every family renders */
    if (add_gen && n == (size_t)has_sys + 1 && !strcmp(msgs[n - 1].role, "user"))
        return tok_chat_render_at(t, name, has_sys ? msgs[0].content : NULL, msgs[n - 1].content, date, out, err);
    chat_plan p = {0};
    if (name) {
        if (!(p.style = style_named(name))) {
            tok_errf(err, "chat: unknown template name \"%s\" (known: " KNOWN ")", name);
            return TOK_CHAT_E_ARG;
        }
        if (t->chat_template)
            p.default_system = template_default_system(p.style, t->chat_template);
    } else if (!t->chat_template) {
        tok_errf(err, "chat: the tokenizer has no chat template; choose one by name (" KNOWN ")");
        return -1;
    } else if (plan_of_template(t->chat_template, &p, err)) {
        free(p.default_system);
        free(p.date_default);
        return -1;
    }
    int rc = 0;
    char now[16];
    tok_buf b = {0};
    if (p.style->family != CHAT_CHATML && p.style->family != CHAT_LLAMA3 && p.style->family != CHAT_LLAMA31) {
        tok_errf(err, "chat: the %s template renders a system and one user message here, not a conversation",
                 p.style->name);
        rc = -1;
    } else {
        if (!date)
            date = p.date_default ? p.date_default : p.style->date_default;
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
    free(p.date_default);
    if (rc) {
        tok_buf_free(&b);
        return -1;
    }
    *out = b.p;
    return 0;
}
