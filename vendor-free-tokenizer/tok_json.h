/* tok_json.h - the small in-place JSON reader (json.c) used by load_json.c. */
#ifndef VFT_TOK_JSON_H
#define VFT_TOK_JSON_H

#include <stddef.h>
#include <stdint.h>

enum { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

typedef struct jnode jnode;
/* 40 bytes: a 128k-vocabulary tokenizer.json has about a million values, and
 * the arena's fresh pages (zeroing, faults) were a quarter of the load time at
 * 80 bytes per node. Read only the members of the node's type. */
struct jnode {
    const char *key; /* member name inside an object (NUL-terminated), else NULL */
    uint32_t klen;
    uint8_t type;
    uint8_t is_int; /* number: written without fraction or exponent, fits int64 */
    union {
        struct {           /* J_STRING */
            const char *s; /* unescaped UTF-8, NUL-terminated (may contain NUL) */
            size_t len;
        };
        struct {       /* J_NUMBER, J_BOOL (i only) */
            int64_t i; /* number (truncated) or bool */
            double num;
        };
        struct {          /* J_ARRAY, J_OBJECT */
            jnode *child; /* first element */
            size_t n;     /* element count */
        };
    };
    jnode *next; /* next sibling */
};

typedef struct jdoc jdoc;
jdoc *jdoc_load(const char *path, char *err);
jnode *jdoc_root(jdoc *d);
void jdoc_free(jdoc *d);

jnode *jget(const jnode *o, const char *key);      /* member or NULL */
const char *jstr(const jnode *o, const char *key); /* string member or NULL */
int jbool(const jnode *o, const char *key, int dflt);

/* Elements of an array or members of an object (x->key names them). */
#define JFOREACH(arr, i, x)                                                                                        \
    for ((i) = 0, (x) = ((arr) && ((arr)->type == J_ARRAY || (arr)->type == J_OBJECT)) ? (arr)->child : NULL; (x); \
         (x) = (x)->next, (i)++)
#define J_IS(v, t) ((v) && (v)->type == (t))

#endif
