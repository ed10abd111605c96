/* fuzz_batch.c - libFuzzer target: the --batch JSONL request format (request.c)
 * and the generation loop it feeds (llmgen_generate, generate.c), both through
 * the library the CLI links, never through main.c.
 *
 * Each input line is parsed as a request; the text helpers run on whatever it
 * carries (UTF-8 check, lossy JSON string, stop-string search and hold-back);
 * a request with prompt ids then runs through llmgen_generate on the tiny f32
 * fixture (tests/fixtures/tiny-mha-f32, opened once; the targets run from the
 * repository root) with at most 3 new tokens and a context of 16, so that the
 * fuzzer reaches full contexts, sampler settings and bad ids. A request's
 * "messages" are rendered through a small Jinja template (llmgen_chat_render_messages
 * with no model), and every line's "id" goes through the duplicate check of
 * --batch (batch_ids_add), against a shadow list kept here. */
#include "fuzz_util.h"

#include "cli/batch_run.h"
#include "run/generate.h"
#include "llmgen.h"
#include "cli/request.h"

#define TINY "tests/fixtures/tiny-mha-f32"

static const char base_stop[] = "\n\n"; /* the command line's --stop, which requests inherit */

static llmgen_session *tiny_session(void) {
    static llmgen_model *m; /* test harness state: opened once per process */
    static llmgen_session *s;
    char err[256];
    llmgen_model_options mo = {.n_threads = 1, .exact = 1};
    if (!m && (llmgen_model_open(TINY, &mo, &m, err, sizeof err) || llmgen_session_new(m, 16, &s, err, sizeof err))) {
        fprintf(stderr, "fuzz_batch: %s: %s\n", TINY, err);
        abort();
    }
    return s;
}

static void generate(const request *q) {
    llmgen_generate_params p;
    llmgen_result r;
    char err[256];
    request_params(q, &p);
    int max = q->max_tokens == -1 || q->max_tokens > 3 ? 3 : q->max_tokens;
    p.max_tokens = max;
    if (p.n_stops && p.stops[0] == base_stop) p.n_stops = 0, p.stops = NULL; /* inherited: drop it */
    llmgen_status st = llmgen_generate(tiny_session(), q->ids, q->n_ids, &p, &r, err, sizeof err), want = LLMGEN_OK;
    for (int i = 0; i < q->n_ids; i++)
        if (q->ids[i] >= 256) want = LLMGEN_E_USAGE;
    if (p.n_stops || !q->n_ids) want = LLMGEN_E_USAGE; /* no tokenizer: stop strings are refused */
    else if (q->n_ids > 16) want = LLMGEN_E_CONTEXT;  /* checked before the ids */
    if (st != want) abort();
    if (!st && ((r.n_ids < 1 && r.stop_reason != LLMGEN_STOP_EOS) || r.n_ids > max || r.text || (r.n_ids < max && r.stop_reason == LLMGEN_STOP_LENGTH)))
        abort();
    for (int i = 0; i < r.n_ids; i++)
        if (r.ids[i] < 0 || r.ids[i] >= 256) abort();
    llmgen_result_free(&r);
}

/* "messages" through a template that prints every role and content. */
static void render(const request *q) {
    static const char tmpl[] = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
                               "{% if add_generation_prompt %}<assistant>{% endif %}";
    llmgen_chat_options co = {.template_text = tmpl};
    char *out = NULL, err[ERR_LEN] = "";
    llmgen_status st = llmgen_chat_render_messages(NULL, q->messages, q->n_messages, 1, &co, &out, err, sizeof err);
    if (st == LLMGEN_OK) {
        size_t need = 0;
        for (size_t i = 0; i < q->n_messages; i++) need += strlen(q->messages[i].content);
        if (!out || strlen(out) < need) abort();
    } else if (st != LLMGEN_E_TOKENIZER && st != LLMGEN_E_USAGE && st != LLMGEN_E_TEMPLATE && st != LLMGEN_E_NOMEM) {
        abort();
    } else if (!err[0]) {
        abort();
    }
    llmgen_free(out);
}

/* The ids seen in this input, as the duplicate check must see them. */
typedef struct {
    char *ids[64];
    long lines[64];
    int n;
} shadow;

static void check_id(batch_ids *seen, shadow *sh, json_t *root, long lineno) {
    json_t *id = json_is_object(root) ? json_object_get(root, "id") : NULL;
    long first = batch_ids_add(seen, root, lineno), want = 0;
    if (!id) {
        if (first) abort();
        return;
    }
    char *key = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    if (!key) abort();
    for (int i = 0; i < sh->n && !want; i++)
        if (!strcmp(sh->ids[i], key)) want = sh->lines[i];
    if (first != want) abort();
    if (!want && sh->n < 64) {
        sh->ids[sh->n] = key;
        sh->lines[sh->n++] = lineno;
    } else {
        free(key);
    }
}

static void one_line(const char *line, size_t len, const request *base, batch_ids *seen, shadow *sh, long lineno) {
    json_error_t je;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    request q = {0};
    char err[ERR_LEN] = "";
    if (root && sh->n < 64) check_id(seen, sh, root, lineno);
    if (root && request_from_json(root, base, &q, err) == 0) {
        if (!!q.text + !!q.ids + !!q.messages != 1) abort();
        if (q.messages) render(&q);
        if (q.n_stops < 0 || q.n_stops > REQUEST_MAX_STOPS || !(q.max_tokens >= 1 || q.max_tokens == -1)) abort();
        if (q.text) {
            size_t bad = utf8_invalid_at(q.text, q.text_len);
            json_t *j = json_text(q.text, q.text_len); /* must always give a valid JSON string */
            if (!j) abort();
            json_decref(j);
            if (bad == q.text_len && q.n_stops) {
                long hit = gen_stop_find(q.stops, q.n_stops, q.text, q.text_len, 0);
                size_t hold = gen_stop_holdback(q.stops, q.n_stops, q.text, q.text_len);
                if (hit > (long)q.text_len || hold > q.text_len) abort();
            }
        }
        if (q.ids) generate(&q);
    } else if (root && !memchr(err, '\0', sizeof err)) {
        abort();
    }
    request_free(&q);
    json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    request base;
    memset(&base, 0, sizeof base);
    base.max_tokens = 128;
    llmgen_sampler_defaults(&base.sp);
    base.stops[base.n_stops++] = base_stop;
    const char *p = (const char *)data, *end = p + size;
    batch_ids *seen = batch_ids_new();
    shadow sh = {.n = 0};
    long lineno = 0;
    if (!seen) abort();
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        one_line(p, len, &base, seen, &sh, ++lineno);
        p += len + 1;
    }
    batch_ids_free(seen);
    for (int i = 0; i < sh.n; i++) free(sh.ids[i]);
    json_t *j = json_text((const char *)data, size); /* arbitrary bytes, lossy */
    if (!j) abort();
    json_decref(j);
    return 0;
}
