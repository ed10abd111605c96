/* num_range.h - the JSON numbers within bounds and a multipleOf, as GBNF rules.
 *
 * A decimal number's text is read left to right by a finite automaton whose state is
 * the comparison so far of the magnitude with each bound (digits of the integer part
 * counted up to one past the bound's, then the fraction digit by digit) and the
 * remainder of the digits modulo multipleOf; the reachable states from which an
 * accepting one can still be reached become one GBNF rule each. So any range, open or
 * closed, with integer or decimal bounds, and any multipleOf with few enough
 * remainders, is exact, not a rounding: the language is every number text of the
 * chosen syntax whose value satisfies all constraints.
 *
 * Syntax: integers "0" or "-"?[1-9][0-9]*; numbers add an optional fraction
 * "."[0-9]+ (no exponent: an exponent is unbounded in both directions). "-0" and
 * a negative zero fraction ("-0.0") are not produced. */
#ifndef LLMGEN_NUM_RANGE_H
#define LLMGEN_NUM_RANGE_H

#include <stddef.h>

/* Decimal digits a bound may have on each side of the point. */
#define NUM_RANGE_MAX_DIGITS 40
/* Automaton states (before pruning) beyond which num_range_gbnf gives up. */
#define NUM_RANGE_MAX_STATES 20000

typedef struct {
    int has;                              /* 0: no such bound */
    int exclusive;                        /* 1: the bound itself is out */
    int neg;                              /* the bound is below zero */
    char ip[NUM_RANGE_MAX_DIGITS + 1];    /* its magnitude's integer digits, no leading zero ("0" for 0.x) */
    char fp[NUM_RANGE_MAX_DIGITS + 1];    /* its fraction digits, no trailing zero */
} num_bound;

typedef struct {
    int integer;        /* 1: integers only */
    num_bound lo, hi;
    unsigned mod;       /* multipleOf = mod / 10^mod_frac; 0: none */
    int mod_frac;
} num_range;

/* Parse the decimal text of a JSON number (as "%.17g" or an integer prints) into b
 * (has = 1). Returns 0, or -1 if it has more digits than NUM_RANGE_MAX_DIGITS. */
int num_bound_parse(const char *text, num_bound *b);

/* Append the rules of the numbers r allows to out (through the callbacks: the caller's
 * text buffer), the start rule named start, others start-N. Returns the number of
 * states kept (> 0), 0 if no number satisfies r, or -1 past NUM_RANGE_MAX_STATES or
 * out of memory. */
typedef void (*num_range_emit)(void *user, const char *s, size_t n);
int num_range_gbnf(const num_range *r, const char *start, num_range_emit emit, void *user);

#endif
