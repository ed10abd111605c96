/* quantize_cli.c - `llmgen quantize`: parse its options, report (llmgen_quantize in
 * quantize.c does the work). */
#include <stdio.h>
#include <sys/stat.h>

#include "cli.h"

/* `llmgen quantize IN_DIR OUT_DIR [--bits 4|8] [--group-size 32|64|128]`: write an MLX
 * affine checkpoint (llmgen_quantize does the work; this only parses and reports). */
int quantize_main(int argc, char **argv, const cli_io *io) {
    static const char *use = "usage: llmgen quantize IN_DIR OUT_DIR [--bits 4|8] [--group-size 32|64|128]";
    enum { Q_BITS = CLI_OWN, Q_GROUP };
    static const cli_opt table[] = {
        {Q_BITS, 0, "bits", "4|8", "bits per weight (default 4)"},
        {Q_GROUP, 0, "group-size", "32|64|128", "weights per scale and bias (default 64)"},
        CLI_OPT_HELP,
        {0, 0, NULL, NULL, NULL},
    };
    const char *in = NULL, *out = NULL, *v;
    int bits = 4, group = 64, id;
    cli_common c = {0};
    cli_args args;
    char err[ERR_LEN];
    double x;
    cli_args_init(&args, argc, argv);
    while ((id = cli_next(&args, table, &v, err)) != CLI_DONE) {
        if (id == CLI_BAD) return cli_fail(io, EXIT_USAGE, "quantize: %s", err);
        if (cli_common_take(&c, id, v, err) && c.help) {
            printf("%s\nWrite an MLX affine-quantized copy of a bf16/f16/f32 safetensors model.\n"
                   "OUT_DIR must not exist.\n", use);
            return cli_print_options(stdout, table) || fflush(stdout) || ferror(stdout)
                       ? cli_fail(io, EXIT_IO, "stdout: write error")
                       : EXIT_OK;
        }
        if (id == Q_BITS || id == Q_GROUP) {
            if (cli_number(v, 0, 1024, 1, &x))
                return cli_fail(io, EXIT_USAGE, "quantize: --%s needs a number (see llmgen quantize --help)",
                           id == Q_BITS ? "bits" : "group-size");
            *(id == Q_BITS ? &bits : &group) = (int)x;
        } else if (id == CLI_ARG && (!in || !out)) {
            *(!in ? &in : &out) = v;
        } else if (id == CLI_ARG) {
            return cli_fail(io, EXIT_USAGE, "quantize: unexpected argument '%s'", v);
        }
    }
    if (!in || !out) return cli_fail(io, EXIT_USAGE, "%s", use);
    struct stat sb;
    if (!stat(in, &sb) && !S_ISDIR(sb.st_mode))
        return cli_fail(io, EXIT_USAGE, "quantize: %s is a file: the input is a Hugging Face model directory "
                        "(config.json and bf16 / f16 / f32 safetensors; a GGUF is read as it is, with -m)", in);
    llmgen_status st = llmgen_quantize(in, out, bits, group, err, sizeof err);
    return st ? cli_fail(io, cli_exit_code(st), "quantize: %s", err) : EXIT_OK;
}
