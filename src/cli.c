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
