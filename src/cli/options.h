/* options.h - the command line of llmgen parsed into one struct (no printing, no
 * exiting: main.c does both). Part of the CLI, not of the library. */
#ifndef LLMGEN_OPTIONS_H
#define LLMGEN_OPTIONS_H

#include <stdio.h>

#include "cli.h"
#include "request.h"

typedef struct {
    cli_common common;                              /* -m, -t, -c, --kernels, --exact, -h */
    const char *tokenizer_path;
    const char *prompt, *prompt_file, *prompt_ids; /* -p, -f ("-" = stdin), --prompt-ids */
    const char *dump_logits, *batch;
    const char *template_file;                      /* --chat-template-file (options_read_files: base.template_text) */
    int version;                                    /* --version (common.help: --help): print and exit, nothing else */
    int chat, interactive, tokenize, detokenize, ids_only, echo, json, stats;
    int reasoning_show;                             /* --reasoning show / --reasoning-format none */
    int reasoning_budget;                           /* --reasoning-budget N (-1: no limit) */
    int parallel, ordered;                          /* --parallel N (0: not given), --ordered */
    const char *resume;                             /* --resume OUT.jsonl */
    int no_prefix_cache;                            /* --no-prefix-cache */
    const char *prompt_cache;                       /* --prompt-cache FILE */
    const char *draft_model;                        /* --draft-model PATH */
    int draft_ngram;                                /* --draft-ngram N (0: not given) */
    const char *chat_template;                      /* --chat-template NAME|JINJA (into base.template_name / _text) */
    int no_escape, keep_newline, show_pieces;       /* --no-escape, --keep-newline, --show-pieces */
    const char *grammar_file;                       /* --grammar-file FILE (options_read_files: base.grammar) */
    const char *json_schema_file;                   /* --json-schema FILE (options_read_files: base.json_schema) */
    request base;                                   /* the settings every request starts from */
    char *texts[2];                                 /* the files' texts base points into (owned: options_free) */
} options;

/* Parse argv; 0, or -1 with one line in err (ERR_LEN bytes) naming the
 * option and what was expected, or the options that cannot be combined. */
int options_parse(int argc, char **argv, options *o, char *err);

/* Read the files the options name (--chat-template-file, --grammar-file, --json-schema
 * FILE) into o->base's template_text, grammar and json_schema; o keeps the texts until
 * options_free. LLMGEN_OK, or the status of cli_read_file with one line in err. */
llmgen_status options_read_files(options *o, char *err);

/* Free what options_read_files read (o itself is the caller's). */
void options_free(options *o);

/* The option lines of --help on f (0, or -1 on a write error). */
int options_print_help(FILE *f);

#endif
