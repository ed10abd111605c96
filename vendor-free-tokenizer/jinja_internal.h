/* jinja_internal.h - the Jinja interpreter's private types, shared by jinja_*.c only.
 *
 *   jinja_parse.c   template text -> tokens (whitespace control, trim/lstrip_blocks) -> tree
 *   jinja_value.c   values, the per-render arena, JSON in and out, Python's str() / repr()
 *   jinja_eval.c    statements and expressions, scopes, limits
 *   jinja_builtin.c filters, tests, methods of str / dict / list, globals */
#ifndef VFT_JINJA_INTERNAL_H
#define VFT_JINJA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "jinja.h"
#include "tok_internal.h"

/* ---- limits (untrusted templates) --------------------------------------------- */
#define JJ_MAX_DEPTH 128      /* nesting of expressions / statements when parsing */
#define JJ_MAX_CALL_DEPTH 64  /* nesting of values (repr, tojson, JSON input) */
#define JJ_MAX_EVAL_DEPTH 400 /* evaluation recursion: statements, expressions, macro calls */
#define JJ_MAX_STEPS 2000000  /* loop iterations + macro calls + filter items per render */
#define JJ_MAX_WORK \
    200000000LL                          /* work that allocates nothing per render: elements compared or
                                       * scanned, 64-byte runs of text searched or measured */
#define JJ_MAX_OUTPUT ((size_t)8 << 20)  /* bytes of rendered text */
#define JJ_MAX_MEMORY ((size_t)64 << 20) /* arena bytes per render */

/* ---- values ------------------------------------------------------------------ */

enum { V_UNDEF, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_LIST, V_DICT, V_MACRO, V_LOOP, V_METHOD, V_FUNC };

typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jnode_ jnode_;
typedef struct jloop jloop;
typedef struct jmethod jmethod;
typedef struct jframe jframe;

typedef struct {
    uint8_t t;
    uint8_t tuple; /* V_LIST: written as a tuple (repr) */
    uint8_t ns;    /* V_DICT: a namespace() (attributes assignable) */
    union {
        int64_t i; /* V_BOOL, V_INT */
        double f;
        struct {
            const char *p; /* V_STR: not NUL-terminated, may point into the template */
            size_t n;
        } s;
        jlist *l;
        jdict *d;
        struct jmacro *mac; /* V_MACRO */
        jloop *loop;
        jmethod *meth;
        int fn; /* V_FUNC: index of a global function */
    };
    const char *uname; /* V_UNDEF: the missing name, for messages (may be NULL) */
} jval;

struct jlist {
    size_t n, cap;
    jval *v;
};
struct jdict {
    size_t n, cap;
    jval *k, *v; /* insertion order */
};
struct jloop {
    int64_t index0, length;
    jval prev, next;
    int has_prev, has_next;
};
struct jmacro {
    const jnode_ *node; /* S_MACRO or S_CALLBLOCK */
    jframe *closure;    /* the scope it was defined in */
};
struct jmethod { /* a bound method: obj.name */
    jval self;
    const char *name;
};

/* ---- syntax tree ------------------------------------------------------------- */

enum {
    /* statements */
    S_TEXT,
    S_OUTPUT,
    S_IF,
    S_FOR,
    S_SET,
    S_SETBLOCK,
    S_MACRO,
    S_CALLBLOCK,
    S_FILTERBLOCK,
    S_BREAK,
    S_CONTINUE,
    S_BODY,
    /* expressions */
    E_CONST,
    E_NAME,
    E_LIST,
    E_TUPLE,
    E_DICT,
    E_ATTR,
    E_ITEM,
    E_SLICE,
    E_CALL,
    E_FILTER,
    E_TEST,
    E_NEG,
    E_POS,
    E_NOT,
    E_AND,
    E_OR,
    E_BIN,
    E_CMP,
    E_COND,
    E_CONCAT,
};

/* binary and comparison operators */
enum {
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_FDIV,
    OP_MOD,
    OP_POW,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_IN,
    OP_NOTIN
};

struct jnode_ {
    int kind, line, op;
    const char *name;  /* names, attributes, filters, tests, macro names (NUL-terminated) */
    jval cval;         /* E_CONST */
    jnode_ *a, *b, *c; /* operands; S_IF: a cond, b then-body, c else-body; S_FOR: a target,
                         * b iterable, c filter; S_SET: a target, b value */
    jnode_ *body, *else_body;
    jnode_ **kids;   /* list / tuple / dict (k, v pairs) items, call args, S_BODY statements,
                         * macro parameter defaults */
    const char **kw; /* call: keyword name per arg, NULL = positional; macro: parameter names */
    int nkids;
};

struct jinja_template {
    char *src;   /* the text, NUL-terminated (string constants point into the tree's arena) */
    void *arena; /* the tree */
    jnode_ *root;
};

/* ---- arena ------------------------------------------------------------------- */

typedef struct jarena jarena;
jarena *jarena_new(size_t limit);
void jarena_free(jarena *a);
void *jarena_alloc(jarena *a, size_t n); /* zeroed; NULL when over the limit */
char *jarena_strdup(jarena *a, const char *s, size_t n);

/* ---- render state -------------------------------------------------------------- */

struct jframe {
    jframe *parent;
    jdict vars;
};

typedef struct {
    jarena *ar;
    const jinja_template *tpl;
    jframe *globals; /* the caller's variables (read-only) */
    jframe *root;    /* the template's top level */
    jframe *frame;   /* the innermost scope */
    long long now;
    long steps, max_steps;
    long long work, max_work; /* see JJ_MAX_WORK */
    size_t max_output, max_memory;
    int depth;
    int line;  /* line being evaluated, for messages */
    char *err; /* set => failing */
    int failed;
    int brk; /* 1 break, 2 continue pending */
} jctx;

/* ---- values (jinja_value.c) ----------------------------------------------------- */

static inline jval jv_undef(const char *name) {
    jval v = {0};
    v.t = V_UNDEF;
    v.uname = name;
    return v;
}
static inline jval jv_none(void) {
    jval v = {0};
    v.t = V_NONE;
    return v;
}
static inline jval jv_bool(int b) {
    jval v = {0};
    v.t = V_BOOL;
    v.i = !!b;
    return v;
}
static inline jval jv_int(int64_t i) {
    jval v = {0};
    v.t = V_INT;
    v.i = i;
    return v;
}
static inline jval jv_float(double f) {
    jval v = {0};
    v.t = V_FLOAT;
    v.f = f;
    return v;
}
static inline jval jv_str(const char *p, size_t n) {
    jval v = {0};
    v.t = V_STR;
    v.s.p = p;
    v.s.n = n;
    return v;
}

int jctx_fail(jctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *jctx_alloc(jctx *c, size_t n); /* fails the render when over the memory limit */
jval jv_list_new(jctx *c, size_t cap);
int jv_list_push(jctx *c, jlist *l, jval v);
jval jv_dict_new(jctx *c, size_t cap);
int jv_dict_set(jctx *c, jdict *d, jval k, jval v);
jval *jv_dict_get(const jdict *d, const char *k, size_t n);
jval *jv_dict_find(jctx *c, const jdict *d, jval k);
jval jv_cstr(jctx *c, const char *s); /* copies */

int jv_truthy(jval v);
int jv_equal(jctx *c, jval a, jval b);   /* Python ==; charges its work */
int jctx_work(jctx *c, long long units); /* -1 (render failed) past JJ_MAX_WORK */
const char *jv_type_name(jval v);

/* Text buffers with the render's output limit, in the render's arena (never freed one by one). */
typedef struct {
    char *p;
    size_t n, cap;
    jctx *c;
} jsb;
int jsb_put(jsb *b, const char *s, size_t n);
int jsb_putc(jsb *b, char ch);
jval jsb_val(jsb *b); /* the text as a value (arena copy) */

int jv_str_of(jctx *c, jval v, jsb *b); /* Python str(v) as Jinja prints it */
int jv_repr(jctx *c, jval v, jsb *b);   /* Python repr(v) */
jval jv_to_str(jctx *c, jval v);        /* str(v) as a value */
/* json.dumps(v, ensure_ascii, indent (-1 none), separators, sort_keys) */
int jv_tojson(jctx *c, jval v, jsb *b, int ensure_ascii, int indent, const char *item_sep, const char *key_sep,
              int sort_keys, int level);
int jv_from_json(jctx *c, const char *s, size_t n, jval *out);

/* UTF-8 helpers on values */
size_t ju_len(const char *s, size_t n);               /* code points */
size_t ju_offset(const char *s, size_t n, size_t cp); /* byte offset of code point cp (clamped) */
int ju_is_space(uint32_t cp);                         /* Python str.isspace */

/* ---- evaluation (jinja_eval.c) ---------------------------------------------------- */

typedef struct {
    jval *pos;
    int npos;
    const char **kw;
    jval *kwv;
    int nkw;
} jargs;

jval jeval(jctx *c, const jnode_ *e);
int jrender_body(jctx *c, const jnode_ *body, jsb *out);
/* call a callable value (macro, method, global function) */
jval jcall_value(jctx *c, jval f, const jargs *a, jval caller);
int jiterate(jctx *c, jval v, jlist *out); /* list of items (dict -> keys, str -> chars) */

/* ---- builtins (jinja_builtin.c) ----------------------------------------------------- */

jval jargs_get(const jargs *a, int i, const char *name, jval dflt);

jval jfilter(jctx *c, const char *name, jval v, const jargs *a);
int jtest(jctx *c, const char *name, jval v, const jargs *a); /* 0/1, -1 failed */
jval jattr(jctx *c, jval obj, const char *name);              /* obj.name (dict item first, then method) */
jval jitem(jctx *c, jval obj, jval key);                      /* obj[key] */
jval jmethod_call(jctx *c, jmethod *m, const jargs *a);
jval jglobal_call(jctx *c, int fn, const jargs *a);
int jglobal_lookup(const char *name); /* V_FUNC index or -1 */

#endif
