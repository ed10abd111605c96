/* chat_template.h - `llmgen chat-template`: render a conversation (a JSON file of
 * messages) with a model's chat template or a Jinja template file. Part of the CLI, not of the library; never prints
 * (main.c prints the text and the errors). */
#ifndef LLMGEN_CHAT_TEMPLATE_H
#define LLMGEN_CHAT_TEMPLATE_H

#include <stdio.h>

#include "llmgen.h"

typedef struct {
    const char *model, *template_file, *messages_file; /* -m, --template-file, --messages */
    llmgen_chat_options co;                            /* --bos-token, --eos-token, --date, --chat-template-kwargs */
    int add_generation_prompt;                         /* 0 with --no-generation-prompt */
    int help;                                          /* -h / --help: print chat_template_help, nothing else */
} chat_template_args;

extern const char chat_template_help[];

/* The help (usage and option lines) on f: 0, or -1 on a write error. */
int chat_template_print_help(FILE *f);

/* Parse the subcommand's arguments (argv[0] is "chat-template"); 0, or -1 with one
 * line in err (512 bytes). */
int chat_template_parse(int argc, char **argv, chat_template_args *a, char *err);

/* Render the conversation; *out (the caller's: llmgen_free) is the text exactly as the
 * template gives it. A failure is its status with one line in err (512 bytes). */
llmgen_status chat_template_render(const chat_template_args *a, char **out, char *err);

#endif
