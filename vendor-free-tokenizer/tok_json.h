/* tok_json.h - the small in-place JSON reader (json.c) used by load_json.c. */
#ifndef VFT_TOK_JSON_H
#define VFT_TOK_JSON_H

#include <stddef.h>
#include <stdint.h>

enum { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

typedef struct jnode jnode;
struct jnode {
    int type;
    int is_int;          /* number: written without fraction or exponent, fits int64 */
    const char *key;     /* member name inside an object (NUL-terminated), else NULL */
    size_t klen;
    const char *s;       /* string: unescaped UTF-8, NUL-terminated (may contain NUL) */
    size_t len;
    int64_t i;           /* number (truncated) or bool */
    double num;
    jnode *child;        /* array / object: first element */
    jnode *next;         /* next sibling */
    size_t n;            /* array / object: element count */
};

typedef struct jdoc jdoc;
jdoc *jdoc_load(const char *path, char *err);
jnode *jdoc_root(jdoc *d);
void jdoc_free(jdoc *d);

jnode *jget(const jnode *o, const char *key);       /* member or NULL */
const char *jstr(const jnode *o, const char *key);  /* string member or NULL */
int jbool(const jnode *o, const char *key, int dflt);

/* Elements of an array or members of an object (x->key names them). */
#define JFOREACH(arr, i, x) \
    for ((i) = 0, (x) = ((arr) && ((arr)->type == J_ARRAY || (arr)->type == J_OBJECT)) ? (arr)->child : NULL; (x); \
         (x) = (x)->next, (i)++)
#define J_IS(v, t) ((v) && (v)->type == (t))

#endif
