/* cli.c - helpers the subcommands share (see cli.h). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/resource.h>

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

void cli_print_stats(double t_load, int n_prompt, const llmgen_result *r, const request *q,
                     const llmgen_capabilities *caps, const llmgen_session *s, int drafting) {
    int ring;
    double kv = (double)llmgen_session_kv_bytes(s, &ring) / (1 << 20);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int steps = r->n_ids > 1 ? r->n_ids - 1 : 0;
    char seed[40] = "";
    if (q->sp.temperature > 0) snprintf(seed, sizeof seed, " | seed %llu", (unsigned long long)q->sp.seed);
    fprintf(stderr, "llmgen: load %.3f s | %d threads (%d CPU%s: %s) | prompt %d tokens in %.3f s (%.1f tokens/s) | "
            "first token %.3f s | generation %d tokens, %.1f tokens/s | peak RSS %.1f MiB | KV cache %.1f MiB (ring %d)%s\n",
            t_load, caps->n_threads, caps->cpus, caps->cpus == 1 ? "" : "s", caps->cpus_from, n_prompt, r->prefill_s, r->prefill_s > 0 ? n_prompt / r->prefill_s : 0.0,
            r->first_token_s, r->n_ids, r->decode_s > 0 ? steps / r->decode_s : 0.0, (double)ru.ru_maxrss / 1024.0,
            kv, ring, seed);
    if (q->draft_lookup || drafting)
        fprintf(stderr, "llmgen: speculation: %d passes, %d drafted, %d accepted (%.1f%%)%s\n", r->n_passes,
                r->n_drafted, r->n_accepted, r->n_drafted ? 100.0 * r->n_accepted / r->n_drafted : 0.0,
                q->sp.temperature > 0 ? " (off: sampling)" : "");
}

int cli_open_draft(const char *path, const llmgen_model_options *target, llmgen_session *s, llmgen_model **dm,
                   llmgen_session **ds, char *err) {
    llmgen_model_options mo = {.n_threads = target->n_threads, .kernels = target->kernels, .no_tokenizer = 1};
    llmgen_capabilities dc;
    llmgen_status st = llmgen_model_open(path, &mo, dm, err, CLI_ERR_LEN);
    if (st) return cli_exit_code(st);
    llmgen_model_capabilities(*dm, &dc);
    int ctx = llmgen_session_ctx(s);
    st = llmgen_session_new(*dm, ctx < dc.context_length ? ctx : dc.context_length, ds, err, CLI_ERR_LEN);
    return st ? cli_exit_code(st) : 0;
}
