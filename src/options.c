/* options.c - llmgen's command line: GNU-style options into `options`, values
 * checked strictly (the whole string, within range), conflicting options refused.
 * Never prints: every problem is one message for main.c to print. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static int fail(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, REQUEST_ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- options ---------------------------------------------------------------------- */

static int parse_num(char *err, const char *opt, const char *s, double lo, double hi, int integer, double *out) {
    char *end;
    errno = 0;
    double v = integer ? (double)strtol(s, &end, 10) : strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return fail(err, "%s: invalid value '%s' (expected %s from %g to %g)", opt, s, integer ? "an integer" : "a number",
                   lo, hi);
    *out = v;
    return 0;
}

/* --stop takes C escapes so that a newline can be typed: \n \t \r \\ (others stay as
 * written). Decodes in place (argv strings are writable; the result is never longer). */
static void unescape(char *s) {
    char *w = s;
    for (; *s; s++) {
        if (*s != '\\' || !s[1]) { *w++ = *s; continue; }
        char c = *++s;
        if (c == 'n') *w++ = '\n';
        else if (c == 't') *w++ = '\t';
        else if (c == 'r') *w++ = '\r';
        else if (c == '\\') *w++ = '\\';
        else *w++ = '\\', *w++ = c;
    }
    *w = '\0';
}

/* "%d %b %Y" as the Llama 3.1+ templates print it: "02 Jan 2025". */
static int valid_date(const char *d) {
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (strlen(d) != 11 || d[2] != ' ' || d[6] != ' ') return 0;
    for (int i = 0; i < 11; i++)
        if ((i < 2 || i > 6) && (d[i] < '0' || d[i] > '9')) return 0;
    int day = (d[0] - '0') * 10 + (d[1] - '0'), month = 0;
    for (int m = 0; m < 12; m++)
        if (!strncmp(d + 3, months[m], 3)) month = m + 1;
    return month && day >= 1 && day <= 31;
}

/* Pairs of options that cannot be combined: the first set needs none of the second. */
static int conflicts(const options *o, char *err) {
    request b = o->base;
    struct { int a; const char *an; int b; const char *bn; } rules[] = {
        {o->json, "--json", o->ids_only, "--ids (--json carries the ids)"},
        {!!o->batch, "--batch", o->ids_only, "--ids (each result line carries the ids)"},
        {!!o->batch, "--batch", o->stats, "--stats (each result line carries its timings)"},
        {!!o->batch, "--batch", o->echo, "--echo"},
        {!!o->batch, "--batch", !!o->dump_logits, "--dump-logits"},
        {o->interactive, "-i", o->prompt || o->prompt_file || o->prompt_ids || o->batch, "a prompt (turns come from stdin)"},
        {o->interactive, "-i", o->json || o->echo || o->dump_logits, "--json, --echo or --dump-logits"},
        {b.logprobs, "--logprobs", !o->json && !o->batch, "plain output (it needs --json or --batch)"},
        {o->tokenize, "--tokenize", o->detokenize, "--detokenize"},
        {b.draft_lookup || o->draft_model, o->draft_model ? "--draft-model" : "--draft-lookup",
         o->parallel > 1 || o->tokenize || o->detokenize, "--parallel N > 1, --tokenize or --detokenize"},
        {!!o->prompt_cache, "--prompt-cache", o->batch || o->interactive || o->tokenize || o->detokenize,
         "--batch, -i, --tokenize or --detokenize"},
        {o->tokenize || o->detokenize, o->tokenize ? "--tokenize" : "--detokenize",
         o->interactive || o->json || o->ids_only || o->echo || o->stats || o->dump_logits || b.n_stops,
         "-i, --json, --ids, --echo, --stats, --dump-logits or --stop"},
        {o->detokenize, "--detokenize", o->chat || !!b.system, "--chat or --system"},
        {!!o->tokenizer_path, "--tokenizer", !!o->model_path, "-m (give one of them)"},
        {!!o->tokenizer_path, "--tokenizer", !o->tokenize && !o->detokenize, "generation (needs -m; use --tokenize or --detokenize)"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].a && rules[i].b) return fail(err, "%s cannot be combined with %s", rules[i].an, rules[i].bn);
    return 0;
}

int options_parse(int argc, char **argv, options *o, char *err) {
    enum { O_IDS = 256, O_PROMPT_IDS, O_TEMP, O_SEED, O_IGNORE_EOS, O_DUMP, O_KERNELS, O_VERSION, O_TOPK, O_TOPP,
           O_MINP, O_REPEAT, O_CHAT, O_SYSTEM, O_TEMPLATE, O_TEMPLATE_FILE, O_DATE, O_STOP, O_ECHO, O_JSON, O_STATS, O_BATCH, O_EXACT,
           O_TOKENIZE, O_DETOKENIZE, O_TOKENIZER, O_LOGPROBS, O_PARALLEL, O_ORDERED, O_RESUME, O_NO_PREFIX,
           O_PROMPT_CACHE, O_DRAFT_LOOKUP, O_DRAFT_NGRAM, O_DRAFT_MAX, O_DRAFT_MODEL };
    static const struct option longs[] = {
        {"model", required_argument, 0, 'm'}, {"prompt", required_argument, 0, 'p'},
        {"file", required_argument, 0, 'f'}, {"max-tokens", required_argument, 0, 'n'},
        {"threads", required_argument, 0, 't'}, {"ctx-size", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'}, {"interactive", no_argument, 0, 'i'}, {"ids", no_argument, 0, O_IDS},
        {"prompt-ids", required_argument, 0, O_PROMPT_IDS}, {"temp", required_argument, 0, O_TEMP},
        {"seed", required_argument, 0, O_SEED}, {"ignore-eos", no_argument, 0, O_IGNORE_EOS},
        {"dump-logits", required_argument, 0, O_DUMP}, {"kernels", required_argument, 0, O_KERNELS},
        {"version", no_argument, 0, O_VERSION}, {"top-k", required_argument, 0, O_TOPK},
        {"top-p", required_argument, 0, O_TOPP}, {"min-p", required_argument, 0, O_MINP},
        {"repeat-penalty", required_argument, 0, O_REPEAT}, {"chat", no_argument, 0, O_CHAT},
        {"system", required_argument, 0, O_SYSTEM}, {"template", required_argument, 0, O_TEMPLATE},
        {"chat-template-file", required_argument, 0, O_TEMPLATE_FILE},
        {"date", required_argument, 0, O_DATE}, {"stop", required_argument, 0, O_STOP},
        {"echo", no_argument, 0, O_ECHO}, {"json", no_argument, 0, O_JSON}, {"stats", no_argument, 0, O_STATS},
        {"batch", required_argument, 0, O_BATCH}, {"exact", no_argument, 0, O_EXACT},
        {"tokenize", no_argument, 0, O_TOKENIZE}, {"detokenize", no_argument, 0, O_DETOKENIZE},
        {"tokenizer", required_argument, 0, O_TOKENIZER}, {"logprobs", required_argument, 0, O_LOGPROBS},
        {"parallel", required_argument, 0, O_PARALLEL},
        {"ordered", no_argument, 0, O_ORDERED}, {"resume", required_argument, 0, O_RESUME},
        {"no-prefix-cache", no_argument, 0, O_NO_PREFIX}, {"prompt-cache", required_argument, 0, O_PROMPT_CACHE},
        {"draft-lookup", no_argument, 0, O_DRAFT_LOOKUP}, {"draft-ngram", required_argument, 0, O_DRAFT_NGRAM},
        {"draft-max", required_argument, 0, O_DRAFT_MAX}, {"draft-model", required_argument, 0, O_DRAFT_MODEL},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    request *b = &o->base;
    b->max_tokens = 128;
    b->sys_source = "--system";
    llmgen_sampler_defaults(&b->sp);
    opterr = 0;
    int c;
    double v;
    char *end;
    while ((c = getopt_long(argc, argv, ":m:p:f:n:t:c:hi", longs, NULL)) != -1) {
        switch (c) {
        case 'm': o->model_path = optarg; break;
        case 'p': o->prompt = optarg; break;
        case 'f': o->prompt_file = optarg; break;
        case 'n':
            if (strcmp(optarg, "-1") && parse_num(err, "--max-tokens", optarg, 1, REQUEST_MAX_TOKENS, 1, &v)) return -1;
            b->max_tokens = strcmp(optarg, "-1") ? (int)v : -1;
            break;
        case 't': if (parse_num(err, "--threads", optarg, 1, LLMGEN_MAX_THREADS, 1, &v)) return -1; o->n_threads = (int)v; break;
        case 'c': if (parse_num(err, "--ctx-size", optarg, 1, LLMGEN_MAX_CONTEXT, 1, &v)) return -1; o->ctx = (int)v; break;
        case 'h': o->help = 1; return 0;
        case 'i': o->interactive = 1; break;
        case O_VERSION: o->version = 1; return 0;
        case O_IDS: o->ids_only = 1; break;
        case O_PROMPT_IDS: o->prompt_ids = optarg; break;
        case O_TEMP: if (parse_num(err, "--temp", optarg, 0, 100, 0, &v)) return -1; b->sp.temperature = (float)v; break;
        case O_TOPK: if (parse_num(err, "--top-k", optarg, 0, INT_MAX, 1, &v)) return -1; b->sp.top_k = (int)v; break;
        case O_TOPP: if (parse_num(err, "--top-p", optarg, 0, 1, 0, &v)) return -1; b->sp.top_p = (float)v; break;
        case O_MINP: if (parse_num(err, "--min-p", optarg, 0, 1, 0, &v)) return -1; b->sp.min_p = (float)v; break;
        case O_REPEAT:
            if (parse_num(err, "--repeat-penalty", optarg, 0.01, 100, 0, &v)) return -1;
            b->sp.repeat_penalty = (float)v;
            break;
        case O_SEED:
            errno = 0;
            b->sp.seed = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-')
                return fail(err, "--seed: invalid value '%s' (expected an integer from 0 to 2^64-1)", optarg);
            b->seed_given = 1;
            break;
        case O_LOGPROBS:
            if (parse_num(err, "--logprobs", optarg, 0, REQUEST_MAX_LOGPROBS, 1, &v)) return -1;
            b->logprobs = 1;
            b->top_logprobs = (int)v;
            break;
        case O_IGNORE_EOS: b->ignore_eos = 1; break;
        case O_DUMP: o->dump_logits = optarg; break;
        case O_KERNELS: o->kernels = optarg; break;
        case O_EXACT: o->exact = 1; break;
        case O_CHAT: o->chat = b->chat = 1; break;
        case O_SYSTEM: b->system = optarg; break;
        case O_TEMPLATE: b->template_name = optarg; break;
        case O_TEMPLATE_FILE: o->template_file = optarg; break;
        case O_DATE: b->date = optarg; break;
        case O_STOP:
            unescape(optarg);
            if (!*optarg) return fail(err, "--stop: the stop string is empty");
            if (b->n_stops == REQUEST_MAX_STOPS) return fail(err, "--stop: at most %d stop strings", REQUEST_MAX_STOPS);
            b->stops[b->n_stops++] = optarg;
            break;
        case O_ECHO: o->echo = 1; break;
        case O_JSON: o->json = 1; break;
        case O_STATS: o->stats = 1; break;
        case O_BATCH: o->batch = optarg; break;
        case O_TOKENIZE: o->tokenize = 1; break;
        case O_DETOKENIZE: o->detokenize = 1; break;
        case O_TOKENIZER: o->tokenizer_path = optarg; break;
        case O_PARALLEL:
            if (parse_num(err, "--parallel", optarg, 1, LLMGEN_MAX_SEQUENCES, 1, &v)) return -1;
            o->parallel = (int)v;
            break;
        case O_ORDERED: o->ordered = 1; break;
        case O_RESUME: o->resume = optarg; break;
        case O_NO_PREFIX: o->no_prefix_cache = 1; break;
        case O_PROMPT_CACHE: o->prompt_cache = optarg; break;
        case O_DRAFT_LOOKUP: if (!b->draft_lookup) b->draft_lookup = 3; break;
        case O_DRAFT_NGRAM:
            if (parse_num(err, "--draft-ngram", optarg, 1, 16, 1, &v)) return -1;
            o->draft_ngram = (int)v;
            break;
        case O_DRAFT_MAX:
            if (parse_num(err, "--draft-max", optarg, 1, 127, 1, &v)) return -1;
            b->draft_max = (int)v;
            break;
        case O_DRAFT_MODEL: o->draft_model = optarg; break;
        /* optopt names a short option (also inside a bundle like -hx); 0 means a long one */
        case ':':
            if (optopt) return fail(err, "option -%c needs a value", optopt);
            return fail(err, "option %s needs a value", argv[optind - 1]);
        default:
            if (optopt) return fail(err, "unknown option -%c (see --help)", optopt);
            return fail(err, "unknown option %s (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return fail(err, "unexpected argument '%s' (see --help)", argv[optind]);
    if (!o->model_path && !o->tokenizer_path) return fail(err, "no model given: use -m PATH (see --help)");
    if (!!o->prompt + !!o->prompt_file + !!o->prompt_ids + !!o->batch > 1)
        return fail(err, "give only one of --prompt, --file, --prompt-ids, --batch");
    if (b->date && !valid_date(b->date))
        return fail(err, "--date: expected \"DD Mon YYYY\" (e.g. \"02 Jan 2025\"), got '%s'", b->date);
    if ((b->template_name || o->template_file || b->date || b->system) && !o->chat && !o->batch && !o->interactive)
        return fail(err, "--%s needs --chat or -i", b->template_name ? "template" : o->template_file ? "chat-template-file"
                                                   : b->date ? "date" : "system");
    if (b->template_name && o->template_file) return fail(err, "give only one of --template, --chat-template-file");
    b->reuse_prefix = o->batch && !o->no_prefix_cache; /* a request's results do not change with it */
    if (o->draft_ngram && !b->draft_lookup) return fail(err, "--draft-ngram needs --draft-lookup");
    if (o->draft_ngram) b->draft_lookup = o->draft_ngram;
    if (b->draft_max && !b->draft_lookup && !o->draft_model)
        return fail(err, "--draft-max needs --draft-lookup or --draft-model");
    if ((o->parallel || o->ordered || o->resume || o->no_prefix_cache) && (!o->batch || o->tokenize || o->detokenize))
        return fail(err, "%s needs --batch, generating (not --tokenize / --detokenize)",
                    o->parallel ? "--parallel" : o->ordered ? "--ordered" : o->resume ? "--resume" : "--no-prefix-cache");
    return conflicts(o, err);
}


int options_valid_date(const char *d) { return valid_date(d); }
