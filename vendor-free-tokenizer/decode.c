/* decode.c - ids back to text: per-token pieces by table lookup, then the
 * reference decoder's whole-sequence rules:
 *   byte-level:   concatenate the bytes, replace invalid UTF-8 (maximal subparts)
 *                 by U+FFFD;
 *   SentencePiece: runs of <0xNN> tokens become their bytes if the run is valid
 *                 UTF-8, else one U+FFFD per byte; one leading space is stripped. */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

static const char REPL[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

const char *tok_piece(const tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || (size_t)id >= t->n_vocab) {
        *len = 0;
        return NULL;
    }
    *len = (size_t)(t->piece_off[id + 1] - t->piece_off[id]);
    return t->piece_pool + t->piece_off[id];
}

static int is_byte_tok(const tokenizer *t, int32_t id) { return t->dec_byte_fallback && (t->flags[id] & TOKF_BYTE); }

/* Close a run of byte-fallback bytes: all valid or one U+FFFD per byte. */
static int flush_byte_run(tok_buf *out, tok_buf *run) {
    int rc = 0;
    if (tok_utf8_check(run->p, run->len) == run->len) rc = tok_buf_put(out, run->p, run->len);
    else
        for (size_t i = 0; i < run->len && !rc; i++) rc = tok_buf_put(out, REPL, 3);
    run->len = 0;
    return rc;
}

int tok_decode(const tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len, char *err) {
    tok_buf raw = {0}, out = {0}, run = {0};
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        size_t pl;
        const char *p = tok_piece(t, ids[i], &pl);
        if (!p) {
            tok_errf(err, "decode: token id %d at position %zu is outside the vocabulary (0..%zu)", (int)ids[i], i,
                     t->n_vocab - 1);
            rc = -1;
            break;
        }
        if (t->kind == TOK_BYTELEVEL) rc = tok_buf_put(&raw, p, pl);
        else if (is_byte_tok(t, ids[i])) rc = tok_buf_put(&run, p, pl);
        else rc = flush_byte_run(&raw, &run) || tok_buf_put(&raw, p, pl);
    }
    if (!rc && t->kind != TOK_BYTELEVEL) rc = flush_byte_run(&raw, &run);
    if (!rc && t->kind == TOK_BYTELEVEL) rc = tok_utf8_lossy(&out, raw.p ? raw.p : "", raw.len);
    else if (!rc) {
        size_t skip = t->dec_strip_lead_space && raw.len && raw.p[0] == ' ';
        rc = tok_buf_put(&out, raw.p ? raw.p + skip : "", raw.len - skip);
    }
    tok_buf_free(&raw);
    tok_buf_free(&run);
    if (rc) {
        tok_buf_free(&out);
        if (err && !err[0]) tok_errf(err, "decode: out of memory");
        return -1;
    }
    if (!out.p && tok_buf_put(&out, "", 0)) {
        tok_errf(err, "decode: out of memory");
        return -1;
    }
    *text = out.p;
    *len = out.len;
    return 0;
}

/* ---- streaming -------------------------------------------------------- */

struct tok_stream {
    const tokenizer *t;
    tok_buf pending; /* raw bytes not yet emitted (a truncated UTF-8 tail) */
    tok_buf run;     /* SentencePiece: current run of byte-fallback bytes */
    tok_buf out;     /* what the last call returned */
    int started;     /* something was emitted (the leading-space rule is done) */
};

tok_stream *tok_stream_new(const tokenizer *t) {
    tok_stream *s = calloc(1, sizeof *s);
    if (s) s->t = t;
    return s;
}

void tok_stream_free(tok_stream *s) {
    if (!s) return;
    tok_buf_free(&s->pending);
    tok_buf_free(&s->run);
    tok_buf_free(&s->out);
    free(s);
}

/* Move the complete part of `pending` to `out` (lossy), keep a truncated tail. */
static int emit_complete(tok_stream *s, int final) {
    const unsigned char *u = (const unsigned char *)s->pending.p;
    size_t n = s->pending.len, keep = 0;
    if (!final)
        for (size_t back = 1; back <= 3 && back <= n; back++)
            if (tok_utf8_partial(u + n - back, back) == back) {
                keep = back;
                break;
            }
    size_t before = s->out.len;
    if (tok_utf8_lossy(&s->out, s->pending.p ? s->pending.p : "", n - keep)) return -1;
    memmove(s->pending.p, s->pending.p + n - keep, keep);
    s->pending.len = keep;
    if (!s->started && s->out.len > before) {
        s->started = 1;
        if (s->t->dec_strip_lead_space && s->out.p[before] == ' ') {
            memmove(s->out.p + before, s->out.p + before + 1, s->out.len - before - 1);
            s->out.len--;
        }
    }
    return 0;
}

/* SentencePiece byte run: emit as soon as it is complete valid UTF-8. */
static int spm_put(tok_stream *s, int32_t id, const char *p, size_t pl, int final) {
    if (!final && is_byte_tok(s->t, id)) {
        if (tok_buf_put(&s->run, p, pl)) return -1;
        if (tok_utf8_check(s->run.p, s->run.len) == s->run.len) {
            if (tok_buf_put(&s->pending, s->run.p, s->run.len)) return -1;
            s->run.len = 0;
        } else if (tok_utf8_partial((const unsigned char *)s->run.p, s->run.len) != s->run.len) {
            /* can never become valid: the reference turns the run into U+FFFDs */
            if (flush_byte_run(&s->pending, &s->run)) return -1;
        }
        return emit_complete(s, 0);
    }
    if (flush_byte_run(&s->pending, &s->run) || tok_buf_put(&s->pending, p, pl)) return -1;
    return emit_complete(s, final);
}

int tok_stream_put(tok_stream *s, int32_t id, const char **out, size_t *len, char *err) {
    size_t pl;
    const char *p = tok_piece(s->t, id, &pl);
    s->out.len = 0;
    *out = "";
    *len = 0;
    if (!p) {
        tok_errf(err, "decode: token id %d is outside the vocabulary (0..%zu)", (int)id, s->t->n_vocab - 1);
        return -1;
    }
    int rc;
    if (s->t->kind == TOK_BYTELEVEL) rc = tok_buf_put(&s->pending, p, pl) || emit_complete(s, 0);
    else rc = spm_put(s, id, p, pl, 0);
    if (rc) {
        tok_errf(err, "decode: out of memory");
        return -1;
    }
    *out = s->out.p ? s->out.p : "";
    *len = s->out.len;
    return 0;
}

int tok_stream_flush(tok_stream *s, const char **out, size_t *len) {
    s->out.len = 0;
    int rc = flush_byte_run(&s->pending, &s->run) || emit_complete(s, 1);
    *out = s->out.p ? s->out.p : "";
    *len = rc ? 0 : s->out.len;
    return rc ? -1 : 0;
}
