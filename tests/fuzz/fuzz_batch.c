/* fuzz_batch.c - libFuzzer target: the CLI's --batch JSONL request parser and
 * the text helpers around it (UTF-8 check, lossy JSON strings, stop strings).
 * main.c is compiled in with its main() renamed, so the static functions under
 * test are exactly the ones the binary runs. */
#define main llmgen_cli_main
#include "../../src/main.c"
#undef main

#include "fuzz_util.h"

static void one_line(const char *line, size_t len, const options *o) {
    json_error_t je;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    request q = {0};
    char err[ERRLEN];
    if (root && batch_parse(root, o, &q, err) == 0) {
        if (q.n_stops < 0 || q.n_stops > MAX_STOPS || q.n_predict < 1) abort();
        if (q.text) {
            size_t bad = utf8_invalid_at(q.text, q.text_len);
            json_t *j = json_text(q.text, q.text_len); /* must always give a valid JSON string */
            if (!j) abort();
            json_decref(j);
            if (bad == q.text_len && q.n_stops) {
                long hit = stop_find(&q, q.text, q.text_len, 0);
                size_t hold = stop_holdback(&q, q.text, q.text_len);
                if (hit > (long)q.text_len || hold > q.text_len) abort();
            }
        }
    } else if (root && !memchr(err, '\0', sizeof err)) {
        abort();
    }
    free(q.ids);
    json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    options o;
    memset(&o, 0, sizeof o);
    o.n_predict = 128;
    llmgen_sampler_defaults(&o.sp);
    o.stops[o.n_stops++] = "\n\n";
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        one_line(p, len, &o);
        p += len + 1;
    }
    json_t *j = json_text((const char *)data, size); /* arbitrary bytes, lossy */
    if (!j) abort();
    json_decref(j);
    return 0;
}
