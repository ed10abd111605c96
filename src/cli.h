/* cli.h - what the command line's subcommands share: the exit codes (documented in
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

/* A limit as text in a help string: CLI_STR(LLMGEN_MAX_THREADS) is "256". */
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

enum {
    EXIT_OK = 0,
    EXIT_USAGE = 1,     /* bad option, bad option value, conflicting options, bad or empty prompt, bad batch
                           line, bad references (verify) or base file (perplexity); verify: a case failed */
    EXIT_MODEL = 2,     /* bad or unsupported model file, or a chat template we cannot render */
    EXIT_IO = 3,        /* missing / unreadable input, unwritable output */
    EXIT_CONTEXT = 4,   /* the prompt does not fit, or generation stopped at a full context before -n */
    EXIT_NOMEM = 5,     /* out of memory */
    EXIT_TEMPLATE = 6,  /* the chat template refused the messages (raise_exception) or is outside the Jinja subset */
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

int verify_main(int argc, char **argv, const cli_io *io);     /* verify.c */
int perplexity_main(int argc, char **argv, const cli_io *io); /* perplexity.c */

#endif
