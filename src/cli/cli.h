/* src/cli/: the command line, the one front end that prints and exits (main.c), its option
 * parser, subcommands and --batch files; it reaches the library only through llmgen.h.
 *
 * cli.h - what the command line's subcommands share: the exit codes (documented in
 * --help and the man page), the status-to-exit-code mapping, and the streams and
 * interrupt flag main.c hands a subcommand. Part of the CLI, not of the library: a
 * subcommand (verify.c, perplexity.c) writes only to the streams it is given, and
 * returns its exit code to main.c, which alone exits. */
#ifndef LLMGEN_CLI_H
#define LLMGEN_CLI_H

#include <jansson.h>
#include <signal.h>
#include <stdio.h>

#include "llmgen.h"
#include "request.h"
#include "base/util.h" /* ERR_LEN */

/* A limit as text in a help string: CLI_STR(LLMGEN_MAX_THREADS) is "256". */
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

enum {
    EXIT_OK = 0,
    EXIT_USAGE = 1,     /* bad option, bad option value, conflicting options, bad or empty prompt, bad batch
                           line, bad references (verify) or base file (perplexity); verify: a case failed */
    EXIT_MODEL = 2,     /* bad or unsupported model file */
    EXIT_IO = 3,        /* missing / unreadable input, unwritable output, a --resume file another run holds */
    EXIT_CONTEXT = 4,   /* the prompt does not fit, or generation stopped at a full context before -n */
    EXIT_NOMEM = 5,     /* out of memory */
    EXIT_TEMPLATE = 6,  /* the chat template: none, it refused the messages, or it is outside the Jinja subset */
    EXIT_INTERRUPT = 130, /* SIGINT / SIGTERM */
};

typedef struct {
    FILE *out;                          /* results (stdout) */
    FILE *diag;                         /* diagnostics and progress, one line each, "llmgen: " first (stderr) */
    volatile sig_atomic_t *interrupted; /* set by SIGINT / SIGTERM: stop at the next step */
} cli_io;

/* A subcommand: argv[0] is its name; returns the exit code. */
typedef int (*cli_main_fn)(int argc, char **argv, const cli_io *io);

/* The exit code of a library status. */
int cli_exit_code(llmgen_status st);

/* One line "llmgen: <message>" on io->diag; returns code. */
int cli_fail(const cli_io *io, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A number from s in [lo, hi] (an integer when `integer`): 0, or -1 (not a number, out of range). */
int cli_number(const char *s, double lo, double hi, int integer, double *out);

/* One note on diag when `asked` threads (-t; 0: none asked) are more than the CPUs the
 * process may use. */
void cli_threads_note(FILE *diag, int asked, const llmgen_capabilities *caps);
/* --json's "threads": {"used": the pool's size, "cpus": the CPUs the process may use, "cpus_from": what set
 * them}. A new reference. */
json_t *cli_threads_json(const llmgen_capabilities *caps);

/* The --stats line of a generation on stderr (and one about its drafts when drafting). */
void cli_print_stats(double t_load, int n_prompt, const llmgen_result *r, const request *q,
                     const llmgen_capabilities *caps, const llmgen_session *s, int drafting);

/* --draft-model: the draft model at path (fast mode, no tokenizer: it only guesses ids;
 * threads and kernels as the target's) and a session as long as s, or as the draft
 * model's whole context if shorter. 0, or an exit code with a message in err
 * (CLI_ERR_LEN bytes). */
#define CLI_ERR_LEN 512
int cli_open_draft(const char *path, const llmgen_model_options *target, llmgen_session *s, llmgen_model **dm,
                   llmgen_session **ds, char *err);
/* The same with the message "OPT: invalid value 'S' (expected an integer from LO to HI)"
 * in err (ERR_LEN bytes) when it fails. */
int cli_value(const char *opt, const char *s, double lo, double hi, int integer, double *out, char *err);

/* ---- options: one table per command, one parser for all ------------------------------
 *
 * Long options are matched whole, never abbreviated (a prefix could pick another option
 * as options are added): --name VALUE or --name=VALUE. Short options are one letter
 * each, never bundled, the value the next word: -ngl is the unknown option -ngl, not
 * -n gl. A value may start with '-' (-n -1). "--" ends the options. */
typedef struct {
    int id;                /* what cli_next returns: > 0; rows may share one (aliases) */
    char short_name;       /* 'm', or 0 */
    const char *long_name; /* "model" (without the dashes), or NULL */
    const char *arg;       /* the value's name in the help ("PATH"); NULL: takes no value */
    const char *help;      /* its help text; "\n" starts another line, aligned */
} cli_opt;

enum { CLI_DONE = 0, CLI_ARG = -1, CLI_BAD = -2 };

typedef struct {
    int argc, i, no_more; /* i: the next word; no_more: "--" seen */
    char **argv;
} cli_args;

/* Words from argv[1]. */
void cli_args_init(cli_args *a, int argc, char **argv);

/* The next word of a: an option's id (*value: its value or NULL), CLI_ARG (a word that
 * is not an option: *value), CLI_DONE, or CLI_BAD with one line in err (ERR_LEN bytes):
 * an unknown option (named whole, with a hint for llama.cpp's options), a missing
 * value, or a value given to an option that takes none. table ends with a zero row. */
int cli_next(cli_args *a, const cli_opt *table, const char **value, char *err);

/* The option of a table row as typed in help and messages: "--model" (or "-s"). */
const char *cli_opt_name(const cli_opt *o, char *buf, size_t n);

/* The table as help lines: "  -m, --model PATH         text" (text from column 27). */
int cli_print_options(FILE *f, const cli_opt *table);

/* The options every command that runs a model shares, parsed by one function. Their
 * ids come first; a command's own ids start at CLI_OWN. A command lists the rows it
 * takes (with its own help text where it means something more). */
enum { CLI_HELP = 1, CLI_MODEL, CLI_THREADS, CLI_CTX, CLI_KERNELS, CLI_EXACT, CLI_SPLIT_ALL, CLI_PROGRESS,
       CLI_NO_PROGRESS, CLI_OWN };
#define CLI_OPT_HELP {CLI_HELP, 'h', "help", NULL, "this help"}
#define CLI_OPT_MODEL(arg, help) {CLI_MODEL, 'm', "model", arg, help}
#define CLI_OPT_THREADS                                                                                         \
    {CLI_THREADS, 't', "threads", "N",                                                                          \
     "threads, 1.." CLI_STR(LLMGEN_MAX_THREADS) " (default: the CPUs this process may use; --stats says)"}
#define CLI_OPT_CTX(help) {CLI_CTX, 'c', "ctx-size", "N", help}
#define CLI_OPT_KERNELS {CLI_KERNELS, 0, "kernels", "NAME", "force a kernel set: scalar, avx2, avx512, neon"}
#define CLI_OPT_SPLIT_ALL                                                                                       \
    {CLI_SPLIT_ALL, 0, "split-all", NULL,                                                                       \
     "run every matmul and attention on all threads, even those too small\n"                                  \
     "to pay for more than a few (tests of the thread split; same output)"}
#define CLI_OPT_EXACT                                                                                           \
    {CLI_EXACT, 0, "exact", NULL,                                                                               \
     "f32 activations: greedy ids equal HF transformers' (slower); the\n"                                     \
     "default fast mode may differ from them, and between CPUs"}

#define CLI_OPT_PROGRESS                                                                                        \
    {CLI_PROGRESS, 0, "progress", NULL,                                                                         \
     "progress lines on stderr even when it is not a terminal (plain lines,\n"                                \
     "every 2 s, for logs; on a terminal one line is redrawn by default)"},                                   \
    {CLI_NO_PROGRESS, 0, "no-progress", NULL, "no progress line, even on a terminal"}

typedef struct {
    const char *model, *kernels; /* -m, --kernels */
    int progress;                /* PROGRESS_AUTO, _OFF (--no-progress), _PLAIN (--progress) (progress.h) */
    int threads, ctx, exact;     /* -t (0: the online CPUs), -c (0: the default), --exact */
    int split_all;               /* --split-all */
    int help;                    /* -h / --help */
} cli_common;

/* Option id's value into c when it is a shared one: 1; 0 when it is not; -1 with a
 * message in err (a value out of range). */
int cli_common_take(cli_common *c, int id, const char *value, char *err);

/* Open c->model (or `path` when not NULL) with c's threads, kernels and mode. An
 * unknown --kernels is LLMGEN_E_USAGE naming the option. */
llmgen_status cli_model_open(const cli_common *c, const char *path, int tokenizer_only, llmgen_model **m, char *err);

/* What to do when s's context is full: a larger -c, unless it is the model's maximum already. */
const char *cli_ctx_hint(const llmgen_session *s, const llmgen_capabilities *caps, char *buf, size_t n);

/* Check a JSON Schema before a model is loaded: prints one warning line naming what it leaves
 * unenforced (src: the batch line, or NULL). Returns 0, or -1 (after printing the error when
 * src is NULL) if it is refused. */
int cli_schema_note(const char *schema, int strict, const char *src);

int verify_main(int argc, char **argv, const cli_io *io);     /* verify.c */
int perplexity_main(int argc, char **argv, const cli_io *io); /* perplexity.c */
int quantize_main(int argc, char **argv, const cli_io *io);   /* quantize_cli.c */
int chat_template_main(int argc, char **argv, const cli_io *io); /* chat_template.c */
/* `llmgen serve` (src/serve/serve.c): the HTTP server, a front end above the CLI. The
 * subcommand table only stores it (the CLI never calls up into serve/). */
int serve_main(int argc, char **argv, const cli_io *io);

/* The whole of a text file, NUL-terminated, into *out (malloc'd, the caller's: free);
 * `what` names the option in the message. LLMGEN_E_IO, LLMGEN_E_NOMEM or LLMGEN_E_USAGE
 * (a NUL byte in the file), with one line in err (ERR_LEN bytes). */
llmgen_status cli_read_file(const char *path, const char *what, char **out, char *err);

/* "DD Mon YYYY" as the Llama 3.1+ templates print it (e.g. "02 Jan 2025"): 1, else 0. */
int cli_valid_date(const char *d);

#endif
