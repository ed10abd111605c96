/* options.c - llmgen's command line: its option table (parsed by cli_next, the parser
 * every command shares) into `options`, values checked strictly (the whole string,
 * within range), conflicting options refused.
 * Never prints: every problem is one message for main.c to print. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "options.h"

static int fail(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- options ---------------------------------------------------------------------- */

static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The escapes llama.cpp processes in -p (and llmgen in --stop, so that a newline can be
 * typed): \n \t \r \\ \' \" and \xHH; any other stays as written. Decodes in place
 * (argv strings are writable; the result is never longer). Returns -1 for \x00: a NUL
 * cannot be part of an argument (use -f FILE or stdin for such bytes). */
static int unescape(char *s) {
    char *w = s;
    for (; *s; s++) {
        if (*s != '\\' || !s[1]) { *w++ = *s; continue; }
        char c = *++s;
        if (c == 'n') *w++ = '\n';
        else if (c == 't') *w++ = '\t';
        else if (c == 'r') *w++ = '\r';
        else if (c == '\\' || c == '\'' || c == '"') *w++ = c;
        else if (c == 'x' && hex(s[1]) >= 0 && hex(s[2]) >= 0) {
            if (!(*w++ = (char)(hex(s[1]) * 16 + hex(s[2])))) return -1;
            s += 2;
        } else *w++ = '\\', *w++ = c;
    }
    *w = '\0';
    return 0;
}

/* 1 if s is the JSON text true or false (a boolean schema), spaces around allowed. */
static int cli_is_json_bool(const char *s) {
    s += strspn(s, " \t\r\n");
    size_t n = !strncmp(s, "true", 4) ? 4 : !strncmp(s, "false", 5) ? 5 : 0;
    return n && !s[n + strspn(s + n, " \t\r\n")];
}

/* "%d %b %Y" as the Llama 3.1+ templates print it: "02 Jan 2025". */
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
        {!!o->tokenizer_path, "--tokenizer", !!o->common.model, "-m (give one of them)"},
        {!!o->tokenizer_path, "--tokenizer", !o->tokenize && !o->detokenize, "generation (needs -m; use --tokenize or --detokenize)"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].a && rules[i].b) return fail(err, "%s cannot be combined with %s", rules[i].an, rules[i].bn);
    return 0;
}

enum {
    O_PROMPT = CLI_OWN, O_FILE, O_MAX_TOKENS, O_INTERACTIVE, O_IDS, O_PROMPT_IDS, O_TEMP, O_SEED, O_IGNORE_EOS,
    O_DUMP, O_VERSION, O_TOPK, O_TOPP, O_MINP, O_REPEAT, O_CHAT, O_SYSTEM, O_TEMPLATE, O_TEMPLATE_FILE, O_DATE,
    O_STOP, O_ECHO, O_JSON, O_STATS, O_BATCH, O_TOKENIZE, O_DETOKENIZE, O_TOKENIZER, O_LOGPROBS, O_PARALLEL,
    O_ORDERED, O_RESUME, O_NO_PREFIX, O_PROMPT_CACHE, O_DRAFT_LOOKUP, O_DRAFT_NGRAM, O_DRAFT_MAX, O_DRAFT_MODEL,
    O_CHAT_TEMPLATE, O_NO_ESCAPE, O_KEEP_NEWLINE, O_SHOW_PIECES, O_GRAMMAR, O_GRAMMAR_FILE, O_JSON_SCHEMA, O_JSON_OBJECT,
    O_NO_CLOSE, O_STRICT_SCHEMA, O_PRESENCE, O_FREQUENCY, O_REASONING, O_REASONING_FORMAT, O_REASONING_BUDGET,
    O_KWARGS,
};

/* Every option of the main command, in the order --help lists them. */
static const cli_opt table[] = {
    CLI_OPT_MODEL("PATH", "a .gguf file (F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K\n"
                          "Q6_K IQ4_NL IQ4_XS MXFP4 tensors) or a Hugging Face / MLX model directory"),
    {O_TOKENIZER, 0, "tokenizer", "PATH", "load only a tokenizer (tokenizer.json, model directory or GGUF)"},
    {O_PROMPT, 'p', "prompt", "TEXT", "prompt text (\"-\": read stdin); \\n \\t \\r \\\\ \\' \\\" \\xHH escapes are\n"
                                      "processed, as llama.cpp does"},
    {O_NO_ESCAPE, 0, "no-escape", NULL, "take -p TEXT as written (no escapes)"},
    {O_FILE, 'f', "file", "FILE", "read the prompt from FILE (\"-\": stdin)"},
    {O_KEEP_NEWLINE, 0, "keep-newline", NULL, "keep the newline that ends stdin or FILE (default: one is dropped)"},
    {O_PROMPT_IDS, 0, "prompt-ids", "LIST", "prompt as comma-separated token ids (no tokenizer needed)"},
    {O_CHAT, 0, "chat", NULL, "wrap the prompt in the model's chat template"},
    {O_INTERACTIVE, 'i', "interactive", NULL, "multi-turn chat: one user turn per line of stdin; Ctrl-C stops a\n"
                                             "reply, Ctrl-D (end of input) ends the chat"},
    {O_SYSTEM, 0, "system", "TEXT", "system message for --chat and -i"},
    {O_TEMPLATE, 0, "template", "NAME", "use a built-in chat template: chatml, llama3, llama3.1, llama3.2,\n"
                                        "llama2, mistral-v0.1, mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7"},
    {O_CHAT_TEMPLATE, 0, "chat-template", "NAME|JINJA", "a built-in template as --template NAME, or a Jinja template\n"
                                                        "text (as llama.cpp's option of this name)"},
    {O_TEMPLATE_FILE, 0, "chat-template-file", "FILE",
     "render --chat / -i with this Jinja template instead of the model's"},
    {O_DATE, 0, "date", "\"DD Mon YYYY\"", "the date Llama 3.1+ templates print (default: as transformers)"},
    {O_KWARGS, 0, "chat-template-kwargs", "JSON", "more template variables for --chat, a JSON object\n"
                                                  "('{\"enable_thinking\": false}', '{\"reasoning_effort\": \"high\"}')"},
    {O_REASONING, 0, "reasoning", "hide|show", "--chat: print the thinking block (<think>, gpt-oss's analysis\n"
                                               "channel) too, as generated (default hide: the answer only)"},
    {O_REASONING_FORMAT, 0, "reasoning-format", "FORMAT", "llama.cpp's name: none = --reasoning show; deepseek, auto =\n"
                                                          "hide (--json: \"reasoning\" apart from \"text\" in every case)"},
    {O_REASONING_BUDGET, 0, "reasoning-budget", "N", "at most N thinking tokens, then the block is closed as the\n"
                                                     "template expects (-1: no limit, the default)"},
    {O_TOKENIZE, 0, "tokenize", NULL, "print the prompt's token ids (as generation would see them), no weights run"},
    {O_SHOW_PIECES, 0, "show-pieces", NULL, "with --tokenize: one line per token, its id, a tab and its text"},
    {O_DETOKENIZE, 0, "detokenize", NULL, "read comma-separated ids, print their text exactly (no newline added)"},
    {O_MAX_TOKENS, 'n', "max-tokens", "N",
     "tokens to generate, 1.." CLI_STR(REQUEST_MAX_TOKENS) ", or -1: until an end token or a\n"
     "full context (default 128)"},
    {O_MAX_TOKENS, 0, "n-predict", "N", "the same as -n (llama.cpp's name)"},
    {O_TEMP, 0, "temp", "T", "temperature, 0..100 (default 0 = greedy)"},
    {O_TOPK, 0, "top-k", "K", "keep the K most likely tokens (0 = off)"},
    {O_TOPP, 0, "top-p", "P", "keep the most likely tokens up to mass P, 0..1 (1 = off)"},
    {O_MINP, 0, "min-p", "P", "drop tokens below P times the top probability, 0..1 (0 = off)"},
    {O_REPEAT, 0, "repeat-penalty", "R", "penalize tokens already seen, 0.01..100 (1 = off)"},
    {O_PRESENCE, 0, "presence-penalty", "P", "subtract P from the logit of each token generated so far, -2..2\n"
                                            "(OpenAI's; 0 = off)"},
    {O_FREQUENCY, 0, "frequency-penalty", "F", "subtract F times its count from each generated token's logit,\n"
                                              "-2..2 (OpenAI's; 0 = off)"},
    {O_SEED, 's', "seed", "S", "sampling seed, 0..2^64-1 (default: random below 2^53 when --temp > 0,\n"
                               "reported by --json and --stats)"},
    CLI_OPT_THREADS,
    CLI_OPT_CTX("context size in tokens (default min(model, " CLI_STR(LLMGEN_DEFAULT_CONTEXT) "))"),
    {O_STOP, 0, "stop", "STRING", "stop when the text contains STRING (escapes as -p; repeatable, up to "
                                  CLI_STR(REQUEST_MAX_STOPS) ")"},
    {O_STOP, 'r', "reverse-prompt", "STRING", "the same as --stop (llama.cpp's name)"},
    {O_IGNORE_EOS, 0, "ignore-eos", NULL, "do not stop at end-of-sequence tokens"},
    {O_IDS, 0, "ids", NULL, "print generated token ids (comma-separated) instead of text"},
    {O_ECHO, 0, "echo", NULL, "print the prompt before the completion"},
    {O_JSON, 0, "json", NULL, "print one JSON object: prompt ids, ids, text, stop reason, seed, timings"},
    {O_BATCH, 0, "batch", "FILE.jsonl", "one JSON request per line in, one JSON result per line out"},
    {O_LOGPROBS, 0, "logprobs", "N", "with --json / --batch: each token's log-probability and the N (0.."
                                     CLI_STR(REQUEST_MAX_LOGPROBS) ")\n"
                                     "most likely tokens, from the raw logits (before sampling filters)"},
    {O_PARALLEL, 0, "parallel", "N", "with --batch: N requests at once, one pass over the weights per step\n"
                                     "for all; results as they finish (or see --ordered)"},
    {O_ORDERED, 0, "ordered", NULL, "with --parallel: results in input order"},
    {O_RESUME, 0, "resume", "OUT.jsonl", "with --batch: append results to OUT, skip requests it holds"},
    {O_NO_PREFIX, 0, "no-prefix-cache", NULL, "with --batch: prefill every prompt whole (default: reuse the cache)"},
    {O_PROMPT_CACHE, 0, "prompt-cache", "FILE",
     "load the cache saved in FILE (reused where the prompt starts alike), save it after"},
    {O_DRAFT_LOOKUP, 0, "draft-lookup", NULL,
     "speculative greedy decoding with drafts from the text so far (prompt\n"
     "lookup): same ids and logits bits as without, faster on text that repeats"},
    {O_DRAFT_NGRAM, 0, "draft-ngram", "N", "with --draft-lookup: match the last N ids, or fewer (1..16, default 3)"},
    {O_DRAFT_MODEL, 0, "draft-model", "PATH",
     "speculative greedy decoding with drafts of a smaller model (same vocabulary)"},
    {O_DRAFT_MAX, 0, "draft-max", "N",
     "most ids drafted per pass, 1..127 (default 8; shorter where drafts miss\n"
     "or cost more than they save). Drafts are used with --temp 0 only (sampled\n"
     "runs decode one id per step)"},
    {O_STATS, 0, "stats", NULL, "print load time, tokens/s, time to first token, peak RSS, KV cache\n"
                                "size (and ring: positions a sliding-window layer keeps) on stderr"},
    {O_GRAMMAR, 0, "grammar", "TEXT", "constrain the output to a GBNF grammar (llama.cpp's format; rule root)"},
    {O_GRAMMAR_FILE, 0, "grammar-file", "FILE", "the same, the grammar read from FILE"},
    {O_JSON_SCHEMA, 0, "json-schema", "SCHEMA", "constrain the output to JSON valid for SCHEMA (inline JSON, or a file)"},
    {O_STRICT_SCHEMA, 0, "strict-schema", NULL, "refuse a schema with keywords a grammar cannot enforce (not, if/then/else,\n"
                                                "uniqueItems, ...; default: a warning names them)"},
    {O_JSON_OBJECT, 0, "json-object", NULL, "constrain the output to one JSON object (any keys and values)"},
    {O_NO_CLOSE, 0, "no-close", NULL, "with a grammar or schema: let -n / the context cut the output short, as\n"
                                      "llama.cpp and xgrammar do (default: each pick leaves room to complete it)"},
    {O_DUMP, 0, "dump-logits", "FILE", "write the logits of every generated step (f32 rows)"},
    CLI_OPT_KERNELS,
    CLI_OPT_PROGRESS,
    CLI_OPT_SPLIT_ALL,
    CLI_OPT_EXACT,
    CLI_OPT_HELP,
    {O_VERSION, 0, "version", NULL, "print the version"},
    {0, 0, NULL, NULL, NULL},
};

int options_print_help(FILE *f) { return cli_print_options(f, table); }

int options_parse(int argc, char **argv, options *o, char *err) {
    memset(o, 0, sizeof *o);
    request *b = &o->base;
    b->max_tokens = 128;
    o->reasoning_budget = -1;
    b->sys_source = "--system";
    llmgen_sampler_defaults(&b->sp);
    cli_args args;
    cli_args_init(&args, argc, argv);
    int c, taken, templates = 0; /* --template, --chat-template, --chat-template-file given */
    int n_constraints = 0;       /* --grammar, --grammar-file, --json-schema, --json-object given */
    double v;
    char *end;
    const char *val;
    while ((c = cli_next(&args, table, &val, err)) != CLI_DONE) {
        char *optarg = (char *)val; /* argv strings are writable: --stop decodes in place */
        if (c == CLI_BAD) return -1;
        if (c == CLI_ARG) {
            struct stat sb;
            size_t n = strlen(val);
            if (!stat(val, &sb) && (S_ISDIR(sb.st_mode) || (n > 5 && !strcmp(val + n - 5, ".gguf"))))
                return fail(err, "unexpected argument '%s' (a model? give it with -m %s)", val, val);
            return fail(err, "unexpected argument '%s' (see --help)", val);
        }
        if ((taken = cli_common_take(&o->common, c, val, err)) < 0) return -1;
        if (o->common.help) return 0;
        if (taken) continue;
        switch (c) {
        case O_PROMPT: o->prompt = optarg; break;
        case O_FILE: o->prompt_file = optarg; break;
        case O_MAX_TOKENS:
            if (strcmp(optarg, "-1") && cli_number(optarg, 1, REQUEST_MAX_TOKENS, 1, &v))
                return fail(err, "--max-tokens: invalid value '%s' (expected -1 or an integer from 1 to %d)", optarg,
                            REQUEST_MAX_TOKENS);
            b->max_tokens = strcmp(optarg, "-1") ? (int)v : -1;
            break;
        case O_INTERACTIVE: o->interactive = 1; break;
        case O_VERSION: o->version = 1; return 0;
        case O_IDS: o->ids_only = 1; break;
        case O_PROMPT_IDS: o->prompt_ids = optarg; break;
        case O_TEMP:
            if (cli_value("--temp", optarg, 0, 100, 0, &v, err)) return -1;
            b->sp.temperature = (float)v;
            break;
        case O_TOPK: if (cli_value("--top-k", optarg, 0, INT_MAX, 1, &v, err)) return -1; b->sp.top_k = (int)v; break;
        case O_TOPP: if (cli_value("--top-p", optarg, 0, 1, 0, &v, err)) return -1; b->sp.top_p = (float)v; break;
        case O_MINP: if (cli_value("--min-p", optarg, 0, 1, 0, &v, err)) return -1; b->sp.min_p = (float)v; break;
        case O_REPEAT:
            if (cli_value("--repeat-penalty", optarg, 0.01, 100, 0, &v, err)) return -1;
            b->sp.repeat_penalty = (float)v;
            break;
        case O_PRESENCE:
        case O_FREQUENCY:
            if (cli_value(c == O_PRESENCE ? "--presence-penalty" : "--frequency-penalty", optarg, -2, 2, 0, &v, err))
                return -1;
            *(c == O_PRESENCE ? &b->sp.presence_penalty : &b->sp.frequency_penalty) = (float)v;
            break;
        case O_SEED:
            errno = 0;
            b->sp.seed = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-')
                return fail(err, "--seed: invalid value '%s' (expected an integer from 0 to 2^64-1)", optarg);
            b->seed_given = 1;
            break;
        case O_LOGPROBS:
            if (cli_value("--logprobs", optarg, 0, REQUEST_MAX_LOGPROBS, 1, &v, err)) return -1;
            b->logprobs = 1;
            b->top_logprobs = (int)v;
            break;
        case O_IGNORE_EOS: b->ignore_eos = 1; break;
        case O_DUMP: o->dump_logits = optarg; break;
        case O_CHAT: o->chat = b->chat = 1; break;
        case O_SYSTEM: b->system = optarg; break;
        case O_TEMPLATE: b->template_name = optarg, templates++; break;
        case O_TEMPLATE_FILE: o->template_file = optarg, templates++; break;
        case O_DATE: b->date = optarg; break;
        case O_KWARGS: b->template_vars = optarg; break;
        case O_REASONING:
        case O_REASONING_FORMAT: {
            static const char *const hide[] = {"hide", "deepseek", "auto", "deepseek-legacy"};
            int k = -1;
            for (int i = 0; i < 4; i++)
                if (!strcmp(optarg, hide[i]) && (i == 0) == (c == O_REASONING)) k = 0;
            if (!strcmp(optarg, c == O_REASONING ? "show" : "none")) k = 1;
            if (k < 0)
                return fail(err, c == O_REASONING ? "--reasoning: expected hide or show, got '%s'"
                                                   : "--reasoning-format: expected none, deepseek or auto, got '%s'",
                            optarg);
            o->reasoning_show = k;
            break;
        }
        case O_REASONING_BUDGET:
            if (cli_value("--reasoning-budget", optarg, -1, REQUEST_MAX_TOKENS, 1, &v, err)) return -1;
            o->reasoning_budget = (int)v;
            break;
        case O_STOP:
            if (unescape(optarg)) return fail(err, "--stop: \\x00 is a NUL byte, which a stop string cannot hold");
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
            if (cli_value("--parallel", optarg, 1, LLMGEN_MAX_SEQUENCES, 1, &v, err)) return -1;
            o->parallel = (int)v;
            break;
        case O_ORDERED: o->ordered = 1; break;
        case O_RESUME: o->resume = optarg; break;
        case O_NO_PREFIX: o->no_prefix_cache = 1; break;
        case O_PROMPT_CACHE: o->prompt_cache = optarg; break;
        case O_DRAFT_LOOKUP: if (!b->draft_lookup) b->draft_lookup = 3; break;
        case O_DRAFT_NGRAM:
            if (cli_value("--draft-ngram", optarg, 1, 16, 1, &v, err)) return -1;
            o->draft_ngram = (int)v;
            break;
        case O_DRAFT_MAX:
            if (cli_value("--draft-max", optarg, 1, 127, 1, &v, err)) return -1;
            b->draft_max = (int)v;
            break;
        case O_DRAFT_MODEL: o->draft_model = optarg; break;
        case O_CHAT_TEMPLATE: /* llama.cpp's rule: a template text has Jinja tags, a name has none */
            if (strstr(optarg, "{%") || strstr(optarg, "{{")) b->template_text = optarg;
            else b->template_name = optarg;
            o->chat_template = optarg;
            templates++;
            break;
        case O_NO_ESCAPE: o->no_escape = 1; break;
        case O_KEEP_NEWLINE: o->keep_newline = 1; break;
        case O_SHOW_PIECES: o->show_pieces = 1; break;
        case O_GRAMMAR: b->grammar = optarg; n_constraints++; break;
        case O_GRAMMAR_FILE: o->grammar_file = optarg; n_constraints++; break;
        case O_JSON_SCHEMA: /* inline when it is JSON (an object or a boolean), else a file name */
            if (!optarg[strspn(optarg, " \t\r\n")]) return fail(err, "--json-schema: empty (give a schema or a file)");
            if (optarg[strspn(optarg, " \t\r\n")] == '{' || cli_is_json_bool(optarg)) b->json_schema = optarg;
            else o->json_schema_file = optarg;
            n_constraints++;
            break;
        case O_STRICT_SCHEMA: b->strict_schema = 1; break;
        case O_JSON_OBJECT:
            b->json_schema = "{\"type\": \"object\", \"additionalProperties\": true}";
            n_constraints++;
            break;
        case O_NO_CLOSE: b->no_close = 1; break;
        }
    }
    if (n_constraints > 1) return fail(err, "give only one of --grammar, --grammar-file, --json-schema, --json-object");
    if (b->strict_schema && !b->json_schema && !o->json_schema_file && !o->batch)
        return fail(err, "--strict-schema needs --json-schema (or --batch)");
    if (b->no_close && !n_constraints && !o->batch)
        return fail(err, "--no-close needs --grammar, --grammar-file, --json-schema or --json-object (or --batch)");
    if (!o->common.model && !o->tokenizer_path) return fail(err, "no model given: use -m PATH (see --help)");
    if (!!o->prompt + !!o->prompt_file + !!o->prompt_ids + !!o->batch > 1)
        return fail(err, "give only one of --prompt, --file, --prompt-ids, --batch");
    if (b->date && !cli_valid_date(b->date))
        return fail(err, "--date: expected \"DD Mon YYYY\" (e.g. \"02 Jan 2025\"), got '%s'", b->date);
    if (b->template_vars) {
        json_t *j = json_loads(b->template_vars, JSON_REJECT_DUPLICATES, NULL);
        int ok = json_is_object(j);
        json_decref(j);
        if (!ok) return fail(err, "--chat-template-kwargs: expected a JSON object, got '%.80s'", b->template_vars);
    }
    if ((b->template_name || b->template_text || o->template_file || b->date || b->system || b->template_vars) &&
        !o->chat && !o->batch && !o->interactive)
        return fail(err, "--%s needs --chat or -i",
                    b->template_vars    ? "chat-template-kwargs"
                    : o->chat_template  ? "chat-template"
                    : b->template_name  ? "template"
                    : o->template_file  ? "chat-template-file"
                    : b->date           ? "date"
                                        : "system");
    if (templates > 1)
        return fail(err, "give only one of --template, --chat-template, --chat-template-file");
    if (o->prompt && strcmp(o->prompt, "-") && !o->no_escape && unescape((char *)o->prompt))
        return fail(err, "--prompt: \\x00 is a NUL byte, which an argument cannot hold (give such a prompt with -f FILE "
                         "or on stdin)");
    if (o->no_escape && (!o->prompt || !strcmp(o->prompt, "-"))) return fail(err, "--no-escape needs -p TEXT");
    if (o->keep_newline && o->prompt && strcmp(o->prompt, "-"))
        return fail(err, "--keep-newline is for a prompt read from stdin or -f FILE");
    if (o->show_pieces && !o->tokenize) return fail(err, "--show-pieces needs --tokenize");
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


llmgen_status options_read_files(options *o, char *err) {
    llmgen_status st = LLMGEN_OK;
    if (o->template_file && !(st = cli_read_file(o->template_file, "--chat-template-file", &o->texts[0], err)))
        o->base.template_text = o->texts[0];
    const char *path = o->grammar_file ? o->grammar_file : o->json_schema_file;
    if (!st && path &&
        !(st = cli_read_file(path, o->grammar_file ? "--grammar-file" : "--json-schema", &o->texts[1], err)))
        *(o->grammar_file ? &o->base.grammar : &o->base.json_schema) = o->texts[1];
    return st;
}

void options_free(options *o) {
    free(o->texts[0]);
    free(o->texts[1]);
    o->texts[0] = o->texts[1] = NULL;
}
