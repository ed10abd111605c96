/* tok_internal.h - the tokenizer's private data structures, shared by the
 * files of this directory only (never installed, never included from src/).
 *
 * Pipeline, in the order data flows (each stage in its own file):
 *   added.c      split off added / special tokens (longest match first)
 *   normalize.c  NFC / NFKC / Replace / Prepend on the plain-text segments
 *   pretok.c     Split regexes (PCRE2, UTF+UCP), ByteLevel, Digits, Metaspace
 *   bpe.c        merges by rank on one pre-token (heap), byte fallback
 *   decode.c     pieces by table lookup, lossy UTF-8, streaming
 *   chat.c       chat templates recognised from their text */
#ifndef VFT_TOK_INTERNAL_H
#define VFT_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* ---- small utilities (util.c) ------------------------------------------- */

void tok_errf(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Growable byte buffer. */
typedef struct {
    char *p;
    size_t len, cap;
} tok_buf;
int tok_buf_put(tok_buf *b, const void *s, size_t n);
int tok_buf_reserve(tok_buf *b, size_t extra);
void tok_buf_free(tok_buf *b);
/* Memory for large tables and buffers (huge pages where available), zeroed if
 * `zero`; free() releases it. */
void *tok_big_alloc(size_t size, int zero);

/* Growable id array. */
typedef struct {
    int32_t *p;
    size_t len, cap;
} tok_ids;
int tok_ids_push(tok_ids *v, int32_t id);

/* ---- UTF-8 (utf8.c) ---------------------------------------------------- */

/* Length of the valid UTF-8 sequence starting at s (1..4), or 0 if the bytes
 * at s do not start a valid sequence within n bytes. */
size_t tok_utf8_len(const unsigned char *s, size_t n);
/* Offset of the first invalid byte, or n if all of s is valid UTF-8. */
size_t tok_utf8_check(const char *s, size_t n);
/* Length of the longest prefix of s[0..n) that is a truncated-but-so-far valid
 * UTF-8 sequence (used by the streaming decoder to hold back bytes); 0 if the
 * bytes cannot start a valid sequence. */
size_t tok_utf8_partial(const unsigned char *s, size_t n);
/* Append s to b, replacing each maximal invalid subpart by U+FFFD (the
 * WHATWG / Rust from_utf8_lossy rule the reference decoder uses). */
int tok_utf8_lossy(tok_buf *b, const char *s, size_t n);
/* Encode code point cp; returns the number of bytes written to out[4]. */
size_t tok_utf8_put(uint32_t cp, char *out);

/* ---- hash maps (strmap.c) ---------------------------------------------- */

/* String -> id; keys are borrowed (must outlive the map). First insert wins. */
typedef struct {
    uint64_t head;   /* the key's first 8 bytes, zero padded: keys of up to 8 bytes (most
                        * tokens) are compared without reading the key, a cache miss each */
    const char *key; /* NULL: empty slot */
    uint32_t len;
    uint32_t hash; /* high bits of the key's hash: most probes end here without touching key */
    int32_t id;
} strmap_slot;
typedef struct {
    strmap_slot *slots;
    size_t cap, n; /* cap is a power of two */
} strmap;
int strmap_init(strmap *m, size_t expected);
/* 0: inserted, 1: the key was there (*prev gets its id; strmap_set replaces it), -1: out of memory.
 * prev may be NULL. */
int strmap_put(strmap *m, const char *key, size_t len, int32_t id, int32_t *prev);
int strmap_set(strmap *m, const char *key, size_t len, int32_t id, int32_t *prev);
int32_t strmap_get(const strmap *m, const char *key, size_t len); /* -1 if absent */
/* The same split in two, so a batch of lookups can prefetch its slots first. */
uint64_t strmap_hash(const char *key, size_t len);
void strmap_prefetch(const strmap *m, uint64_t hash);
int32_t strmap_get_hashed(const strmap *m, const char *key, size_t len, uint64_t hash);
/* strmap_put (overwrite 0) / strmap_set (overwrite 1) with the hash given. */
int strmap_insert_hashed(strmap *m, const char *key, size_t len, uint64_t hash, int32_t id, int overwrite,
                         int32_t *prev);
void strmap_free(strmap *m);

/* (left id, right id) -> (rank, merged id). */
typedef struct {
    uint64_t key; /* (left << 32 | right) + 1; 0 = empty slot */
    int32_t rank, out;
} pairmap_slot;
typedef struct {
    pairmap_slot *slots;
    size_t cap, n;
} pairmap;
int pairmap_init(pairmap *m, size_t expected);
int pairmap_put(pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t out); /* keeps the lowest rank */
const pairmap_slot *pairmap_get(const pairmap *m, int32_t a, int32_t b);
void pairmap_prefetch(const pairmap *m, int32_t a, int32_t b);
void pairmap_free(pairmap *m);

/* ---- byte-level map (bytelevel.c) -------------------------------------- */

/* GPT-2's reversible byte <-> code point map: printable Latin-1 bytes map to
 * themselves, the other 68 bytes to U+0100.. in order. */
uint32_t tok_byte_to_cp(unsigned char b);
int tok_cp_to_byte(uint32_t cp); /* -1 if cp is not in the map */
/* Decode a byte-level token text to raw bytes into out (at most len bytes).
 * Returns the byte count, or -1 if some character is not in the map (the
 * reference decoder then keeps the token's own UTF-8 bytes). */
long tok_bytelevel_decode(const char *text, size_t len, char *out);

/* ---- the tokenizer ----------------------------------------------------- */

/* Added / special token, matched in the raw text before normalization. */
typedef struct {
    char *text;
    size_t len;
    int32_t id;
    unsigned char special; /* 1: skipped by parse_special = 0 */
    unsigned char lstrip;  /* absorbs whitespace on its left */
    unsigned char rstrip;  /* absorbs whitespace on its right */
    unsigned char single_word;
    unsigned char normalized; /* matched in normalized text; text is then the normalized content */
} tok_added;

enum tok_norm_kind { NORM_NFC, NORM_NFKC, NORM_NFD, NORM_NFKD, NORM_REPLACE, NORM_PREPEND, NORM_LOWERCASE };
typedef struct {
    int kind; /* enum tok_norm_kind */
    char *a;  /* Replace: pattern (literal); Prepend: the prefix */
    size_t alen;
    char *b; /* Replace: replacement */
    size_t blen;
} tok_norm;

enum tok_pre_kind { PRE_SPLIT, PRE_BYTELEVEL, PRE_DIGITS, PRE_METASPACE };
enum tok_split_behavior { SPLIT_ISOLATED, SPLIT_REMOVED, SPLIT_MERGED_PREV, SPLIT_MERGED_NEXT, SPLIT_CONTIGUOUS };
typedef struct {
    int kind;             /* enum tok_pre_kind */
    void *re;             /* pcre2_code_8 * (Split, ByteLevel use_regex) or NULL */
    int behavior;         /* Split: enum tok_split_behavior */
    int add_prefix_space; /* ByteLevel */
    int individual;       /* Digits: one digit per piece */
    int prepend;          /* Metaspace: 0 never, 1 first, 2 always */
    int split;            /* Metaspace: split on the replacement */
} tok_pre;

enum tok_dec_kind { DEC_BYTELEVEL, DEC_REPLACE, DEC_BYTEFALLBACK, DEC_FUSE, DEC_STRIP, DEC_METASPACE };

enum tok_model_kind { TOK_BYTELEVEL, TOK_SPM };
enum {
    TOKF_MODEL = 1, /* in the BPE model's vocabulary */
    TOKF_ADDED = 2, /* an added token (matched before pre-tokenization) */
    TOKF_BYTE = 4,  /* a <0xNN> byte-fallback token */
    TOKF_DUP = 8,   /* shares its BPE key with another id */
    TOKF_RAW = 16
}; /* byte-level vocabulary, but the text is not in the byte alphabet */

struct tokenizer {
    int kind;             /* enum tok_model_kind: how BPE builds its first symbols */
    size_t n_vocab;       /* ids 0..n_vocab-1 (model vocab and added tokens) */
    char *text_pool;      /* every token's text as stored (byte-level chars or ▁ pieces) */
    uint64_t *text_off;   /* (n_vocab + 1) offsets into text_pool; empty = hole in the id space */
    char *piece_pool;     /* every token decoded alone to raw bytes */
    uint64_t *piece_off;  /* (n_vocab + 1) */
    strmap bpe_vocab;     /* what BPE looks up: raw bytes (byte-level) or text (SentencePiece) -> id */
    pairmap merges;       /* (left, right) -> (rank, merged) */
    int32_t byte_id[256]; /* byte-level: id of each single byte; SentencePiece: id of <0xNN>, or -1 */
    int byte_fallback;    /* SentencePiece: unknown chars become <0xNN> tokens */
    int ignore_merges;    /* a pre-token that is itself in the vocab is emitted whole */
    int32_t unk_id;       /* -1 if none */
    int fuse_unk;
    int32_t merge_hint; /* while loading: the previous merge's result (see build.c) */
    int gguf_vocab;     /* vocabulary from GGUF metadata: later duplicates win and byte-level
                                 tokens outside the byte alphabet are respelled, as transformers reads it */

    tok_added *added; /* (n_added) sorted by length, longest first */
    size_t n_added;
    unsigned char *flags; /* (n_vocab) TOKF_* bits */

    tok_norm *norms; /* (n_norms) applied in order */
    size_t n_norms;
    tok_pre *pres; /* (n_pres) applied in order */
    size_t n_pres;
    int dec_strip_lead_space; /* SentencePiece decoders: drop one leading space of the text */
    int dec_byte_fallback;    /* <0xNN> pieces are raw bytes (invalid runs become U+FFFD per byte) */

    int32_t bos_id, eos_id; /* -1 if none */
    int add_bos, add_eos;
    char *chat_template; /* NUL-terminated, or NULL */
};

/* Pieces and the BPE lookup map from text_pool (build.c); call after the
 * vocabulary, added tokens and kind are set. */
int tok_build_tables(tokenizer *t, const char *source, char *err);
/* Merges given as (left text, right text) pairs. tok_add_merges takes them in
 * batches (up to TOK_MERGE_BATCH at a time is what it is tuned for). */
typedef struct {
    const char *a, *b;
    size_t alen, blen;
    int32_t rank;
} tok_merge_text;
#define TOK_MERGE_BATCH 64
int tok_add_merges(tokenizer *t, const tok_merge_text *m, size_t n, const char *source, char *err);
/* Vocabulary texts by id (a NULL / empty entry is a hole); allocates flags. */
int tok_set_vocab(tokenizer *t, size_t n, const tok_str *texts, const char *source, char *err);
int tok_add_added(tokenizer *t, const char *text, size_t len, int32_t id, int special, int lstrip, int rstrip,
                  int single_word, int normalized, const char *source, char *err);
/* Sort added tokens longest first (build.c). */
void tok_sort_added(tokenizer *t);
/* Token text of id (as stored). */
const char *tok_text(const tokenizer *t, int32_t id, size_t *len);

/* Pre-tokenizers (pretok.c). Regex patterns of the families we know. */
extern const char TOK_RE_GPT2[];
extern const char TOK_RE_LLAMA3[];
extern const char TOK_RE_QWEN2[];
extern const char TOK_RE_QWEN35[];
extern const char TOK_RE_O200K[];
int tok_pre_compile(tok_pre *p, const char *pattern, size_t len, char *err);
void tok_pre_free(tok_pre *p);
/* Split one segment into pre-tokens. The segment is copied into `arena`
 * (reset by the caller); *spans receives (offset, length) pairs into it.
 * `first`: the segment starts the input (Metaspace prepend_scheme "first").
 * `tmp` is scratch; `md` comes from tok_match_data_new. */
int tok_pretokenize(const tokenizer *t, const char *s, size_t n, int first, tok_buf *arena, tok_ids *spans,
                    tok_ids *tmp, void *md, char *err);
void *tok_match_data_new(void);
void tok_match_data_free(void *md);

/* 1 if cp is numeric (Unicode N*), as the Digits pre-tokenizer tests (normalize.c). */
int tok_is_numeric(uint32_t cp);
/* 1 if cp has the Unicode White_Space property (lstrip / rstrip of added tokens). */
int tok_is_space(uint32_t cp);
/* Decode one code point from valid UTF-8; returns its length. */
size_t tok_utf8_get(const char *s, uint32_t *cp);

/* Normalizers (normalize.c): the whole chain, s -> out (out is reset). */
int tok_normalize(const tokenizer *t, const char *s, size_t n, tok_buf *out, char *err);
void tok_norm_free(tok_norm *n);

/* BPE (bpe.c): append the ids of one pre-token. `ws` is scratch owned by the caller. */
typedef struct tok_bpe_ws tok_bpe_ws;
tok_bpe_ws *tok_bpe_ws_new(void);
void tok_bpe_ws_free(tok_bpe_ws *ws);
int tok_bpe_word(const tokenizer *t, const char *s, size_t n, tok_bpe_ws *ws, tok_ids *out);

#endif
