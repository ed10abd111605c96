/* chat.c - chat prompts for `llmgen --chat`: the model's own template is
 * recognised from its text and rendered by hand (no Jinja interpreter), for
 * one optional system message and one user message, with the generation
 * prompt appended (transformers' add_generation_prompt=True).
 *
 *   chatml  <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
 *           (SmolLM2, Qwen). A default system message written in the template
 *           ('<|im_start|>system\n...<|im_end|>' as a literal) is used when
 *           `system` is NULL, as those templates do.
 *   llama3  <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n
 *           {content, trimmed}<|eot_id|> ... then the assistant header.
 * Llama 2 [INST] and Mistral are recognised but refused (not implemented yet);
 * any other template is an error, never a guess. */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

enum { CHAT_NONE, CHAT_CHATML, CHAT_LLAMA3, CHAT_LLAMA2, CHAT_MISTRAL };

static int family_by_name(const char *name)
{
    if (!strcmp(name, "chatml"))
        return CHAT_CHATML;
    if (!strcmp(name, "llama3"))
        return CHAT_LLAMA3;
    if (!strcmp(name, "llama2"))
        return CHAT_LLAMA2;
    if (!strcmp(name, "mistral"))
        return CHAT_MISTRAL;
    return CHAT_NONE;
}

static int family_of_template(const char *tmpl)
{
    if (strstr(tmpl, "<|im_start|>"))
        return CHAT_CHATML;
    if (strstr(tmpl, "<|start_header_id|>"))
        return CHAT_LLAMA3;
    if (strstr(tmpl, "[INST]"))
        return strstr(tmpl, "<<SYS>>") ? CHAT_LLAMA2 : CHAT_MISTRAL;
    return CHAT_NONE;
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

static int put(tok_buf *b, const char *s) { return tok_buf_put(b, s, strlen(s)); }

static int render_chatml(const tokenizer *t, const char *system, const char *user, tok_buf *b)
{
    char *dflt = (!system && t->chat_template) ? chatml_default_system(t->chat_template) : NULL;
    const char *sys = system ? system : dflt;
    int rc = 0;
    if (sys)
        rc = put(b, "<|im_start|>system\n") || put(b, sys) || put(b, "<|im_end|>\n");
    rc = rc || put(b, "<|im_start|>user\n") || put(b, user) || put(b, "<|im_end|>\n") ||
         put(b, "<|im_start|>assistant\n");
    free(dflt);
    return rc;
}

/* Jinja's `trim`: Python str.strip(), i.e. Unicode whitespace at both ends. */
static int put_trimmed(tok_buf *b, const char *s)
{
    size_t n = strlen(s), i = 0;
    while (i < n) {
        uint32_t cp;
        size_t L = tok_utf8_get(s + i, &cp);
        if (!tok_is_space(cp) && !(cp >= 0x1C && cp <= 0x1F))
            break;
        i += L;
    }
    while (n > i) {
        size_t j = n - 1;
        while (j > i && ((unsigned char)s[j] & 0xC0) == 0x80)
            j--;
        uint32_t cp;
        tok_utf8_get(s + j, &cp);
        if (!tok_is_space(cp) && !(cp >= 0x1C && cp <= 0x1F))
            break;
        n = j;
    }
    return tok_buf_put(b, s + i, n - i);
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

int tok_chat_render(const tokenizer *t, const char *name, const char *system, const char *user, char **out,
                    char *err)
{
    *out = NULL;
    /* the renderers decode code points (trim): only valid UTF-8 may reach them */
    const char *msg[2] = {system, user}, *what[2] = {"system", "user"};
    for (int k = 0; k < 2; k++) {
        size_t n = msg[k] ? strlen(msg[k]) : 0, bad = msg[k] ? tok_utf8_check(msg[k], n) : 0;
        if (bad < n) {
            tok_errf(err, "chat: invalid UTF-8 at byte %zu of the %s message", bad, what[k]);
            return -1;
        }
    }
    int fam;
    if (name) {
        fam = family_by_name(name);
        if (fam == CHAT_NONE) {
            tok_errf(err, "chat: unknown template name \"%s\" (known: chatml, llama3)", name);
            return -1;
        }
    } else if (!t->chat_template) {
        tok_errf(err, "chat: the tokenizer has no chat template; choose one by name (chatml, llama3)");
        return -1;
    } else if ((fam = family_of_template(t->chat_template)) == CHAT_NONE) {
        tok_errf(err, "chat: the tokenizer's chat template is not one we recognise (chatml, llama3); "
                 "choose one by name");
        return -1;
    }
    if (fam == CHAT_LLAMA2 || fam == CHAT_MISTRAL) {
        tok_errf(err, "chat: the %s template is not implemented", fam == CHAT_LLAMA2 ? "llama2" : "mistral");
        return -1;
    }
    if (t->chat_template && !name && fam == CHAT_LLAMA3 && strstr(t->chat_template, "Cutting Knowledge Date")) {
        tok_errf(err, "chat: the Llama 3.1+ template (tools, knowledge-date system block) is not implemented; "
                 "use --template llama3 for the Llama 3.0 shape");
        return -1;
    }
    tok_buf b = {0};
    int rc = fam == CHAT_CHATML ? render_chatml(t, system, user ? user : "", &b)
                                : render_llama3(system, user ? user : "", &b);
    if (rc || (!b.p && tok_buf_put(&b, "", 0))) {
        tok_buf_free(&b);
        tok_errf(err, "chat: out of memory");
        return -1;
    }
    *out = b.p;
    return 0;
}
