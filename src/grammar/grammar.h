/* src/grammar/: structured output's languages: GBNF, JSON Schema to GBNF, a byte matcher
 * and the allowed-token mask. Knows nothing of models, files or sessions.
 *
 * grammar.h - GBNF grammars (llama.cpp's format) and a byte-level matcher for them.
 *
 * grammar_parse compiles GBNF text into an immutable grammar: rules of
 * alternatives, each a sequence of elements (a character class over Unicode code
 * points, or a reference to a rule). Groups and the repetitions * + ? {m} {m,}
 * {m,n} become generated rules, as llama.cpp does.
 *
 * A matcher state is a set of parse stacks (a pushdown automaton run on all
 * alternatives at once, llama.cpp's scheme). Stacks are persistent linked nodes,
 * hash-consed in an arena: equal stacks have equal ids, so a stack set is a small
 * sorted array of ids and a position's work can be memoized by id. A rule that
 * ends with a reference to a rule returns straight to its caller (tail calls do
 * not grow the stack), so repetitions run in constant stack depth.
 *
 * Input is bytes: a character class matches the UTF-8 encoding of a code point
 * it holds, one byte at a time (a stack can stop inside a character, which is
 * how a token ending in the middle of one is matched). Bytes that are not
 * well-formed UTF-8 (overlong forms, surrogates, above U+10FFFF) never match.
 *
 * Limits, for text from anywhere: GRAMMAR_MAX_TEXT bytes, GRAMMAR_MAX_DEPTH nested
 * groups, GRAMMAR_MAX_ELEMS elements after expansion, GRAMMAR_MAX_REPEAT as a
 * repetition bound, GRAMMAR_MAX_STACKS stacks in one state. Left recursion (a
 * rule that can reach itself before matching a byte) is refused at parse time. */
#ifndef LLMGEN_GRAMMAR_H
#define LLMGEN_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#define GRAMMAR_MAX_TEXT (64 << 20)
#define GRAMMAR_MAX_DEPTH 64
#define GRAMMAR_MAX_ELEMS (1 << 22)
#define GRAMMAR_MAX_REPEAT 10000
#define GRAMMAR_MAX_STACKS 4096
/* A length no string reaches: what gm_min_bytes gives when nothing can complete
 * (lengths saturate here). */
#define GRAMMAR_NO_END (1 << 30)

typedef struct grammar grammar;

/* Compile GBNF text (len bytes; the root rule is "root"). Returns 0, or -1 with one
 * line in err (errlen bytes): "line L, column C: what is wrong". *out is the
 * caller's: grammar_free. */
int grammar_parse(const char *text, size_t len, grammar **out, char *err, size_t errlen);
void grammar_free(grammar *g); /* NULL is fine */
/* Rules after expansion, and character-class elements (matcher positions). */
int grammar_n_rules(const grammar *g);
int grammar_n_positions(const grammar *g);
/* Elements after expansion: positions are element indices below this. */
int grammar_n_elems(const grammar *g);

/* ---- matcher ------------------------------------------------------------------
 * A stack set is an array of node ids (sorted, unique). Id GM_DONE is the empty
 * stack (the grammar can end here); GM_ESC appears only in sets advanced from a
 * detached position (gm_position_set): the position's rule ended there. */
enum { GM_DONE = 0, GM_ESC = 1 };

typedef struct gm gm;
/* A matcher (its node arena) for g, which must outlive it. NULL if out of memory. */
gm *gm_new(const grammar *g);
void gm_free(gm *m);
/* The start state: the stacks of the root rule's alternatives. Returns its size,
 * or -1 (out of memory, too many stacks). out has room for GRAMMAR_MAX_STACKS. */
int gm_start(gm *m, int32_t *out);
/* Advance set in[0..n) by one byte into out (room for GRAMMAR_MAX_STACKS; may not
 * alias in). Returns the size of out (0: the byte is rejected), or -1 on a limit. */
int gm_advance(gm *m, const int32_t *in, int n, uint8_t byte, int32_t *out);
/* The position (element index) at the top of stack node id (id >= 2), and a stack
 * holding only that position with GM_ESC below it: what the token-mask cache
 * precomputes from, independently of where the rule was called from. */
int gm_node_pos(const gm *m, int32_t id);
/* The bytes that can come next on stack node id: bit b of out[b / 64] (none for GM_DONE, GM_ESC). */
void gm_first_bytes(const gm *m, int32_t id, uint64_t out[4]);
/* 1 if stack node id has matched part of a multi-byte character. */
int gm_node_in_char(const gm *m, int32_t id);
int32_t gm_position_node(gm *m, int pos);
/* Nodes in the arena; gm_truncate(m, mark) drops every node made since
 * gm_n_nodes returned mark (scratch work), keeping ids below mark valid. */
int32_t gm_n_nodes(const gm *m);
void gm_truncate(gm *m, int32_t mark);
/* The fewest bytes that complete the grammar from stack set set[0..n): 0 when it can
 * end here, GRAMMAR_NO_END when no stack can (an empty set, a rule matching no finite
 * string). Per stack: what its top element still needs (the rest of a character it is
 * inside, else its class's shortest code point), the rest of that alternative, and
 * each return position's rest below it. */
int32_t gm_min_bytes(const gm *m, const int32_t *set, int n);
/* 1 if the arena hit its limit (states made after that are wrong: stop). */
int gm_failed(const gm *m);

#endif
