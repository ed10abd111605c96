/* chat_client.c - a second small program on the public API: a two-turn
 * conversation through llmgen_chat_new / llmgen_chat_turn (the KV cache kept
 * between turns), streaming each reply through the per-piece callback.
 *
 * usage: chat_client MODEL N TURN1 TURN2 [SYSTEM]
 *
 * Prints each reply's ids (at most N, greedy, ending at end-of-sequence) on one
 * line; tests/cli/check_chat.py requires them to equal `llmgen -i --ids` fed the
 * same turns and tests/lib_client.c's conversation by hand. Exits 1 if the
 * streamed text differs from the result's text, or a turn fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmgen.h"

typedef struct {
    char buf[65536];
    size_t n;
} collected;

static int on_piece(void *user, int32_t id, const char *text, size_t len) {
    collected *c = user;
    (void)id;
    if (c->n + len < sizeof c->buf) memcpy(c->buf + c->n, text, len);
    c->n += len;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: chat_client MODEL N TURN1 TURN2 [SYSTEM]\n");
        return 2;
    }
    char err[512];
    llmgen_model *m;
    llmgen_session *s;
    llmgen_chat *chat;
    if (llmgen_model_open(argv[1], NULL, &m, err, sizeof err) || llmgen_session_new(m, 0, &s, err, sizeof err) ||
        llmgen_chat_new(s, NULL, argc > 5 ? argv[5] : NULL, &chat, err, sizeof err)) {
        fprintf(stderr, "chat_client: %s\n", err);
        return 1;
    }
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    p.max_tokens = atoi(argv[2]);
    int rc = 0, prefilled[2] = {0, 0};
    for (int t = 0; t < 2 && !rc; t++) {
        collected c = {.n = 0};
        llmgen_result r;
        p.on_piece = on_piece;
        p.user = &c;
        if (llmgen_chat_turn(chat, argv[3 + t], &p, &r, err, sizeof err)) {
            fprintf(stderr, "chat_client: turn %d: %s\n", t + 1, err);
            rc = 1;
        } else {
            for (int i = 0; i < r.n_ids; i++) printf("%s%d", i ? "," : "", r.ids[i]);
            printf("\n");
            if (c.n != r.text_len || memcmp(c.buf, r.text, c.n)) {
                fprintf(stderr, "chat_client: FAILED: streamed text of turn %d != result text\n", t + 1);
                rc = 1;
            }
            prefilled[t] = r.n_prompt;
        }
        llmgen_result_free(&r);
    }
    /* turn 2 prefilled only its own part: fewer ids than the whole conversation */
    if (!rc && prefilled[1] >= llmgen_session_pos(s) - prefilled[0]) {
        fprintf(stderr, "chat_client: FAILED: turn 2 prefilled %d ids: the cache was not kept\n", prefilled[1]);
        rc = 1;
    }
    llmgen_chat_free(chat);
    llmgen_session_free(s);
    llmgen_model_free(m);
    return rc;
}
