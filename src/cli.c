/* cli.c - helpers the subcommands share (see cli.h). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

#include "cli.h"

int cli_exit_code(llmgen_status st) {
    switch (st) {
    case LLMGEN_OK: return EXIT_OK;
    case LLMGEN_E_FORMAT: case LLMGEN_E_TOKENIZER: return EXIT_MODEL;
    case LLMGEN_E_IO: return EXIT_IO;
    case LLMGEN_E_CONTEXT: return EXIT_CONTEXT;
    case LLMGEN_E_NOMEM: return EXIT_NOMEM;
    case LLMGEN_E_TEMPLATE: return EXIT_TEMPLATE;
    default: return EXIT_USAGE;
    }
}

int cli_fail(const cli_io *io, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("llmgen: ", io->diag);
    vfprintf(io->diag, fmt, ap);
    fputc('\n', io->diag);
    va_end(ap);
    return code;
}

int cli_number(const char *s, double lo, double hi, int integer, double *out) {
    char *end;
    if (!s || !*s) return -1;
    double v = strtod(s, &end);
    if (*end || end == s || !isfinite(v) || v < lo || v > hi || (integer && v != floor(v))) return -1;
    *out = v;
    return 0;
}

void cli_threads_note(FILE *diag, int asked, const llmgen_capabilities *caps) {
    if (asked > caps->cpus && caps->cpus > 0)
        fprintf(diag, "llmgen: note: -t %d is more than the %d CPU%s this process may use (%s): the threads will "
                "wait for one another\n", asked, caps->cpus, caps->cpus == 1 ? "" : "s", caps->cpus_from);
}

json_t *cli_threads_json(const llmgen_capabilities *caps) {
    json_t *t = json_object();
    json_object_set_new(t, "used", json_integer(caps->n_threads));
    json_object_set_new(t, "cpus", json_integer(caps->cpus));
    json_object_set_new(t, "cpus_from", json_string(caps->cpus_from));
    return t;
}
