/* json_schema.h - JSON Schema to a GBNF grammar (grammar.h parses the result).
 *
 * The language follows xgrammar's JSON Schema converter (strict mode, its default),
 * so that constrained greedy ids can be checked against it:
 *   - whitespace: any run of space, tab, CR and LF between the tokens of the JSON
 *     text (after '{' '[' ',' ':' and before ',' ':' '}' ']'), none before or after
 *     the whole value;
 *   - objects: the schema's properties in schema order, each optional one may be
 *     left out, required ones may not; no other keys unless additionalProperties
 *     is true or a schema, patternProperties or propertyNames give their keys, or
 *     the object names no properties (then any further keys follow the named ones;
 *     minProperties / maxProperties count them all);
 *   - arrays: prefixItems, then items (absent after prefixItems, or false: no more
 *     items; a plain array holds anything);
 *   - strings: JSON escapes allowed, raw control characters not; with minLength /
 *     maxLength, characters other than '"' '\' CR LF, no escapes; pattern: the
 *     regex subset of JSON_SCHEMA_REGEX below, anchored at both ends;
 *   - integer: 0 or -?[1-9][0-9]*; number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
 *   - enum / const: the values' compact JSON text.
 *   - integer / number with minimum, maximum, exclusiveMinimum, exclusiveMaximum,
 *     multipleOf: exactly the numbers (no exponent; "-0" left out) that satisfy them,
 *     as the automaton of num_range.h;
 *   - string formats: those xgrammar 0.2.8 converts (date, time, date-time, duration,
 *     uuid, email, hostname, ipv4, ipv6, uri, uri-reference, uri-template,
 *     json-pointer, relative-json-pointer) as patterns; other formats annotate.
 * Keywords: type, properties, required, additionalProperties, patternProperties,
 * propertyNames, minProperties, maxProperties, items (a schema, or draft 7's tuple
 * list with additionalItems), prefixItems, minItems, maxItems, enum, const, anyOf,
 * oneOf (as anyOf), allOf (merged into one schema), $ref (any JSON pointer into the
 * document; draft 7: its siblings are ignored), minLength, maxLength, pattern, format
 * and the numeric ones above. Keywords a grammar cannot express (not, if/then/else,
 * uniqueItems, contains, dependencies, dependentRequired, dependentSchemas,
 * unevaluated*, a $ref to another document, a second pattern in allOf, ...) are
 * listed in the warning (an error with strict). Every other keyword annotates and
 * is ignored. A pattern matches anywhere in the string unless anchored (^ $).
 *
 * JSON_SCHEMA_REGEX: literal characters and escapes (\. \\ \/ \n \t \r \uHHHH ...),
 * . (any character but a line end), classes [a-z] [^...] with \d \w \s \D \W \S,
 * groups ( ) and (?: ), alternation |, quantifiers * + ? {m} {m,} {m,n}, and ^ $ at
 * the ends. Not supported (an error): backreferences, lookaround, lazy or
 * possessive quantifiers, anchors elsewhere. Characters a JSON string must escape
 * (control characters, '"', '\') are left out of . and negated classes.
 *
 * A schema whose language is empty (minimum above maximum, a required property that
 * is false, ...) is refused here; one with no finite instance (a required property
 * that refers back to its object) when grammar_parse finds the root has no finite
 * string (grammar_min_bytes).
 *
 * Limits: JSON_SCHEMA_MAX_TEXT bytes of schema, JSON_SCHEMA_MAX_DEPTH schemas nested
 * in one another (references do not count: they are written from a work list), the
 * grammar as GRAMMAR_MAX_TEXT. */
#ifndef LLMGEN_JSON_SCHEMA_H
#define LLMGEN_JSON_SCHEMA_H

#include <stddef.h>

#define JSON_SCHEMA_MAX_DEPTH 64
#define JSON_SCHEMA_MAX_TEXT (32 << 20)

typedef struct {
    int strict;     /* 1: a keyword the grammar cannot enforce is an error */
    char *warn;     /* if not NULL: one line naming the keywords not enforced ("" if none) */
    size_t warnlen;
} json_schema_opts;

/* Convert schema text (len bytes of JSON) to GBNF. Returns 0, or -1 with one line in
 * err: "json schema: line L, column C: ..." for bad JSON, "json schema: at PATH: ..."
 * for a schema it cannot convert. *gbnf is NUL-terminated and the caller's (free). */
int json_schema_to_gbnf(const char *schema, size_t len, const json_schema_opts *o, char **gbnf, char *err,
                        size_t errlen);

/* The GBNF of any JSON object (what --json-object asks for). Static text. */
const char *json_object_gbnf(void);

#endif
