/* chat.c - chat templates (filled in below). */
#include "tok_internal.h"

int tok_chat_render(const tokenizer *t, const char *name, const char *system, const char *user, char **out,
                    char *err)
{
    (void)t; (void)name; (void)system; (void)user;
    *out = NULL;
    tok_errf(err, "chat: templates are not implemented yet");
    return -1;
}
