/* json_schema.h - JSON Schema to a GBNF grammar (grammar.h parses the result).
 *
 * The language follows xgrammar's JSON Schema converter (strict mode, its default),
 * so that constrained greedy ids can be checked against it:
 *   - whitespace: any run of space, tab, CR and LF between the tokens of the JSON
 *     text (after '{' '[' ',' ':' and before ',' ':' '}' ']'), none before or after
 *     the whole value;
 *   - objects: the schema's properties in schema order, each optional one may be
 *     left out, required ones may not; no other keys unless additionalProperties
 *     is true or a schema (then any further keys follow the named ones);
 *   - arrays: prefixItems, then items (absent or false: no more items);
 *   - strings: JSON escapes allowed, raw control characters not; with minLength /
 *     maxLength, characters other than '"' '\' CR LF, no escapes; pattern: the
 *     regex subset of JSON_SCHEMA_REGEX below, anchored at both ends;
 *   - integer: 0 or -?[1-9][0-9]*; number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
 *   - enum / const: the values' compact JSON text.
 * Keywords: type (a name or a list), properties, required, additionalProperties,
 * items, prefixItems, minItems, maxItems, enum, const, anyOf, oneOf, $ref (#,
 * #/$defs/NAME, #/definitions/NAME), $defs, definitions, minLength, maxLength,
 * pattern, format (date, time, date-time, uuid); title, description, default,
 * examples, $schema, $id, $comment are read and ignored. Any other keyword is an
 * error naming it.
 *
 * JSON_SCHEMA_REGEX: literal characters and escapes (\. \\ \/ \n \t \r \uHHHH ...),
 * . (any character but a line end), classes [a-z] [^...] with \d \w \s \D \W \S,
 * groups ( ) and (?: ), alternation |, quantifiers * + ? {m} {m,} {m,n}, and ^ $ at
 * the ends. Not supported (an error): backreferences, lookaround, lazy or
 * possessive quantifiers, anchors elsewhere. Characters a JSON string must escape
 * (control characters, '"', '\') are left out of . and negated classes.
 *
 * Limits: JSON_SCHEMA_MAX_DEPTH nested schemas, the text as GRAMMAR_MAX_TEXT. */
#ifndef LLMGEN_JSON_SCHEMA_H
#define LLMGEN_JSON_SCHEMA_H

#include <stddef.h>

#define JSON_SCHEMA_MAX_DEPTH 64

/* Convert schema text (len bytes of JSON) to GBNF. Returns 0, or -1 with one line in
 * err: "json schema: line L, column C: ..." for bad JSON, "json schema: at PATH: ..."
 * for a schema it cannot convert. *gbnf is NUL-terminated and the caller's (free). */
int json_schema_to_gbnf(const char *schema, size_t len, char **gbnf, char *err, size_t errlen);

/* The GBNF of any JSON object (what --json-object asks for). Static text. */
const char *json_object_gbnf(void);

#endif
