/* jinja_eval.c - statements and expressions, as jinja2 evaluates them in its sandbox.
 *
 * Scopes: a for-loop iteration and a macro call open a frame (what `set` assigns
 * there is gone afterwards, which is why templates use namespace()); if-blocks do
 * not. Undefined values print as '', iterate as empty and are false; reading an
 * attribute of one, or doing arithmetic with one, is an error, as in jinja2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja_internal.h"

static int enter(jctx *c) {
    if (++c->depth > JJ_MAX_EVAL_DEPTH) {
        c->depth--;
        return jctx_fail(c, "recursion deeper than %d", JJ_MAX_EVAL_DEPTH);
    }
    return 0;
}

static int step(jctx *c) {
    if (++c->steps > c->max_steps) return jctx_fail(c, "more than %ld loop iterations and calls", c->max_steps);
    return 0;
}

static jframe *frame_new(jctx *c, jframe *parent) {
    jframe *f = jctx_alloc(c, sizeof *f);
    if (f) f->parent = parent;
    return f;
}

static jval lookup(jctx *c, jframe *f, const char *name) {
    size_t n = strlen(name);
    for (; f; f = f->parent) {
        jval *v = jv_dict_get(&f->vars, name, n);
        if (v) return *v;
    }
    jval *v = jv_dict_get(&c->globals->vars, name, n);
    if (v) return *v;
    int fn = jglobal_lookup(name);
    if (fn >= 0) {
        jval g = {0};
        g.t = V_FUNC;
        g.fn = fn;
        return g;
    }
    return jv_undef(name);
}

static int assign(jctx *c, jframe *f, const char *name, jval v) {
    return jv_dict_set(c, &f->vars, jv_str(name, strlen(name)), v);
}

/* ---- arithmetic and comparison --------------------------------------------------------- */

static int num(jval v, double *d, int64_t *i) {
    if (v.t == V_INT || v.t == V_BOOL) {
        *i = v.i;
        *d = (double)v.i;
        return 1;
    }
    if (v.t == V_FLOAT) {
        *d = v.f;
        return 2;
    }
    return 0;
}

static jval undefined_error(jctx *c, jval v) {
    if (v.uname) jctx_fail(c, "'%s' is undefined", v.uname);
    else jctx_fail(c, "an undefined value used in an operation");
    return jv_undef(NULL);
}

static const char *op_name(int op) {
    static const char *n[] = {"+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", "<=", ">", ">=", "in", "not in"};
    return n[op];
}

static jval repeat(jctx *c, jval s, int64_t k) {
    if (k <= 0) return s.t == V_STR ? jv_str("", 0) : jv_list_new(c, 0);
    if (s.t == V_STR) {
        if (s.s.n && (uint64_t)k > c->max_output / s.s.n) {
            jctx_fail(c, "string repetition past the output limit");
            return jv_undef(NULL);
        }
        jsb b = {.c = c};
        for (int64_t i = 0; i < k; i++)
            if (jsb_put(&b, s.s.p, s.s.n)) return jv_undef(NULL);
        return jsb_val(&b);
    }
    if (s.l->n && (uint64_t)k > (uint64_t)c->max_steps / s.l->n) {
        jctx_fail(c, "list repetition too large");
        return jv_undef(NULL);
    }
    jval r = jv_list_new(c, s.l->n * (size_t)k);
    for (int64_t i = 0; r.t == V_LIST && i < k; i++)
        for (size_t j = 0; j < s.l->n; j++)
            if (jv_list_push(c, r.l, s.l->v[j])) return jv_undef(NULL);
    return r;
}

static jval binop(jctx *c, int op, jval a, jval b) {
    double x, y;
    int64_t i = 0, j = 0;
    int ka = num(a, &x, &i), kb = num(b, &y, &j);
    if (a.t == V_UNDEF) return undefined_error(c, a);
    if (b.t == V_UNDEF) return undefined_error(c, b);
    if (ka && kb) {
        int ints = ka == 1 && kb == 1;
        int64_t r;
        switch (op) {
        case OP_ADD:
            if (ints && !__builtin_add_overflow(i, j, &r)) return jv_int(r);
            return jv_float(x + y);
        case OP_SUB:
            if (ints && !__builtin_sub_overflow(i, j, &r)) return jv_int(r);
            return jv_float(x - y);
        case OP_MUL:
            if (ints && !__builtin_mul_overflow(i, j, &r)) return jv_int(r);
            return jv_float(x * y);
        case OP_DIV:
            if (y == 0) break;
            return jv_float(x / y);
        case OP_FDIV:
        case OP_MOD:
            if (y == 0) break;
            if (ints && !(i == INT64_MIN && j == -1)) {
                int64_t q = i / j, m = i % j;
                if (m && ((m < 0) != (j < 0))) {
                    q--;
                    m += j;
                }
                return jv_int(op == OP_FDIV ? q : m);
            } else {
                double m = fmod(x, y);
                if (m && ((m < 0) != (y < 0))) m += y;
                return op == OP_MOD ? jv_float(m) : jv_float(floor((x - m) / y + 0.5));
            }
        case OP_POW:
            if (ints && j >= 0) {
                int64_t acc = 1;
                for (int64_t k = 0; k < j; k++)
                    if (__builtin_mul_overflow(acc, i, &acc)) {
                        jctx_fail(c, "integer overflow in **");
                        return jv_undef(NULL);
                    }
                return jv_int(acc);
            }
            return jv_float(pow(x, y));
        }
        jctx_fail(c, "division by zero");
        return jv_undef(NULL);
    }
    if (op == OP_ADD && a.t == V_STR && b.t == V_STR) {
        jsb s = {.c = c};
        if (jsb_put(&s, a.s.p, a.s.n) || jsb_put(&s, b.s.p, b.s.n)) return jv_undef(NULL);
        return jsb_val(&s);
    }
    if (op == OP_ADD && a.t == V_LIST && b.t == V_LIST) {
        jval r = jv_list_new(c, a.l->n + b.l->n);
        for (size_t k = 0; r.t == V_LIST && k < a.l->n + b.l->n; k++)
            if (jv_list_push(c, r.l, k < a.l->n ? a.l->v[k] : b.l->v[k - a.l->n])) return jv_undef(NULL);
        r.tuple = a.tuple;
        return r;
    }
    if (op == OP_MUL && (a.t == V_STR || a.t == V_LIST) && kb == 1) return repeat(c, a, j);
    if (op == OP_MUL && (b.t == V_STR || b.t == V_LIST) && ka == 1) return repeat(c, b, i);
    jctx_fail(c, "unsupported operand types for %s: '%s' and '%s'", op_name(op), jv_type_name(a), jv_type_name(b));
    return jv_undef(NULL);
}

/* -1, 0, 1, or -2 when the values do not order */
static int order(jctx *c, jval a, jval b) {
    if (jctx_work(c, 1)) return -2;
    double x, y;
    int64_t i = 0, j = 0;
    int ka = num(a, &x, &i), kb = num(b, &y, &j);
    if (ka && kb) {
        if (ka == 1 && kb == 1) return i < j ? -1 : i > j;
        return x < y ? -1 : x > y;
    }
    if (a.t == V_STR && b.t == V_STR) {
        size_t m = a.s.n < b.s.n ? a.s.n : b.s.n;
        if (jctx_work(c, (long long)(m >> 6))) return -2;
        int r = memcmp(a.s.p, b.s.p, m);
        return r ? (r < 0 ? -1 : 1) : a.s.n < b.s.n ? -1 : a.s.n > b.s.n;
    }
    if (a.t == V_LIST && b.t == V_LIST) {
        for (size_t k = 0; k < a.l->n && k < b.l->n; k++) {
            if (jv_equal(c, a.l->v[k], b.l->v[k])) continue;
            return order(c, a.l->v[k], b.l->v[k]);
        }
        return a.l->n < b.l->n ? -1 : a.l->n > b.l->n;
    }
    return -2;
}

static int contains(jctx *c, jval hay, jval needle) {
    switch (hay.t) {
    case V_STR:
        if (needle.t != V_STR)
            return jctx_fail(c, "'in <string>' requires string as left operand, not %s", jv_type_name(needle));
        if (!needle.s.n) return 1;
        if (jctx_work(c, (long long)(hay.s.n >> 6) + 1)) return -1;
        return memmem(hay.s.p, hay.s.n, needle.s.p, needle.s.n) != NULL;
    case V_LIST:
        for (size_t i = 0; i < hay.l->n; i++)
            if (jv_equal(c, hay.l->v[i], needle)) return 1;
        return 0;
    case V_DICT: return jv_dict_find(c, hay.d, needle) != NULL;
    case V_UNDEF: return 0;
    default: return jctx_fail(c, "argument of type '%s' is not iterable", jv_type_name(hay));
    }
}

static jval compare(jctx *c, int op, jval a, jval b) {
    switch (op) {
    case OP_EQ: return jv_bool(jv_equal(c, a, b));
    case OP_NE: return jv_bool(!jv_equal(c, a, b));
    case OP_IN:
    case OP_NOTIN: {
        int r = contains(c, b, a);
        return r < 0 ? jv_undef(NULL) : jv_bool(op == OP_IN ? r : !r);
    }
    }
    int r = order(c, a, b);
    if (c->failed) return jv_undef(NULL);
    if (r == -2) {
        if (a.t == V_UNDEF) return undefined_error(c, a);
        if (b.t == V_UNDEF) return undefined_error(c, b);
        jctx_fail(c, "'%s' not supported between instances of '%s' and '%s'", op_name(op), jv_type_name(a),
                  jv_type_name(b));
        return jv_undef(NULL);
    }
    switch (op) {
    case OP_LT: return jv_bool(r < 0);
    case OP_LE: return jv_bool(r <= 0);
    case OP_GT: return jv_bool(r > 0);
    default: return jv_bool(r >= 0);
    }
}

/* ---- sequences ------------------------------------------------------------------------- */

int jiterate(jctx *c, jval v, jlist *out) {
    memset(out, 0, sizeof *out);
    switch (v.t) {
    case V_UNDEF: return 0;
    case V_LIST: *out = *v.l; return 0;
    case V_DICT:
        if (v.ns) break;
        out->n = out->cap = v.d->n;
        out->v = v.d->k;
        return 0;
    case V_STR:
        for (size_t i = 0; i < v.s.n;) {
            size_t L = 1;
            while (i + L < v.s.n && ((unsigned char)v.s.p[i + L] & 0xC0) == 0x80) L++;
            if (jv_list_push(c, out, jv_str(v.s.p + i, L))) return -1;
            i += L;
        }
        return 0;
    default: break;
    }
    return jctx_fail(c, "'%s' object is not iterable", jv_type_name(v));
}

static int slice_index(jctx *c, jval v, int64_t dflt, int64_t *out) {
    if (v.t == V_NONE || v.t == V_UNDEF) {
        *out = dflt;
        return 0;
    }
    if (v.t != V_INT && v.t != V_BOOL) return jctx_fail(c, "slice indices must be integers or None");
    *out = v.i;
    return 0;
}

/* Python's slice semantics over n items; calls put(k) for each index k in order. */
static jval do_slice(jctx *c, jval obj, jval lo, jval hi, jval st) {
    int64_t step_ = 1, start = 0, stop = 0;
    if (slice_index(c, st, 1, &step_)) return jv_undef(NULL);
    if (!step_) {
        jctx_fail(c, "slice step cannot be zero");
        return jv_undef(NULL);
    }
    int is_str = obj.t == V_STR;
    if (!is_str && obj.t != V_LIST) {
        if (obj.t == V_UNDEF) return undefined_error(c, obj);
        jctx_fail(c, "'%s' object is not subscriptable with a slice", jv_type_name(obj));
        return jv_undef(NULL);
    }
    int ascii = 1;
    if (is_str && jctx_work(c, (long long)(obj.s.n >> 6))) return jv_undef(NULL);
    if (is_str)
        for (size_t i = 0; i < obj.s.n && ascii; i++) ascii = (unsigned char)obj.s.p[i] < 0x80;
    int64_t n = is_str ? (int64_t)(ascii ? obj.s.n : ju_len(obj.s.p, obj.s.n)) : (int64_t)obj.l->n;
    if (slice_index(c, lo, step_ > 0 ? 0 : n - 1, &start) || slice_index(c, hi, step_ > 0 ? n : -1, &stop))
        return jv_undef(NULL);
    int lo_given = lo.t != V_NONE && lo.t != V_UNDEF, hi_given = hi.t != V_NONE && hi.t != V_UNDEF;
    if (lo_given) {
        if (start < 0) start += n;
        if (start < 0) start = step_ > 0 ? 0 : -1;
        if (start >= n) start = step_ > 0 ? n : n - 1;
    }
    if (hi_given) {
        if (stop < 0) stop += n;
        if (stop < 0) stop = step_ > 0 ? 0 : -1;
        if (stop >= n) stop = step_ > 0 ? n : n - 1;
    }
    if (is_str && ascii && step_ == 1) return jv_str(obj.s.p + start, stop > start ? (size_t)(stop - start) : 0);
    jsb b = {.c = c};
    jval r = is_str ? jv_str("", 0) : jv_list_new(c, 0);
    if (!is_str) r.tuple = obj.tuple;
    size_t *offs = NULL;
    if (is_str && !ascii) { /* code point offsets */
        offs = jctx_alloc(c, ((size_t)n + 1) * sizeof *offs);
        if (!offs) return jv_undef(NULL);
        size_t k = 0;
        for (size_t i = 0; i < obj.s.n; i++)
            if (((unsigned char)obj.s.p[i] & 0xC0) != 0x80) offs[k++] = i;
        offs[k] = obj.s.n;
    }
    for (int64_t k = start; step_ > 0 ? k < stop : k > stop; k += step_) {
        int rc;
        if (is_str) rc = offs ? jsb_put(&b, obj.s.p + offs[k], offs[k + 1] - offs[k]) : jsb_putc(&b, obj.s.p[k]);
        else rc = jv_list_push(c, r.l, obj.l->v[k]);
        if (rc) return jv_undef(NULL);
    }
    return is_str ? jsb_val(&b) : r;
}

/* ---- calls ------------------------------------------------------------------------------ */

static int render_in(jctx *c, jframe *f, const jnode_ *body, jsb *out);

static jval call_macro(jctx *c, struct jmacro *m, const jargs *a, jval caller) {
    const jnode_ *def = m->node;
    if (step(c) || enter(c)) return jv_undef(NULL);
    jframe *f = frame_new(c, m->closure);
    jval r = jv_undef(NULL);
    if (!f) goto out;
    if (a->npos > def->nkids) {
        jctx_fail(c, "macro '%s' takes not more than %d argument(s)", def->name ? def->name : "caller", def->nkids);
        goto out;
    }
    for (int k = 0; k < a->nkw; k++) {
        int found = 0;
        for (int p = 0; p < def->nkids; p++) found |= !strcmp(def->kw[p], a->kw[k]);
        if (!found) {
            jctx_fail(c, "macro '%s' has no parameter named '%s'", def->name ? def->name : "caller", a->kw[k]);
            goto out;
        }
    }
    for (int p = 0; p < def->nkids; p++) {
        jval v = jv_undef(def->kw[p]);
        int given = 0;
        if (p < a->npos) {
            v = a->pos[p];
            given = 1;
        }
        for (int k = 0; k < a->nkw; k++)
            if (!strcmp(def->kw[p], a->kw[k])) {
                v = a->kwv[k];
                given = 1;
            }
        if (!given && def->kids[p]) {
            int line = c->line;
            v = jeval(c, def->kids[p]);
            c->line = line;
        }
        if (c->failed || assign(c, f, def->kw[p], v)) goto out;
    }
    if (caller.t == V_MACRO && assign(c, f, "caller", caller)) goto out;
    jsb b = {.c = c};
    int brk = c->brk;
    c->brk = 0;
    if (!render_in(c, f, def->body, &b)) r = jsb_val(&b);
    c->brk = brk;
out:
    c->depth--;
    return r;
}

jval jcall_value(jctx *c, jval f, const jargs *a, jval caller) {
    switch (f.t) {
    case V_MACRO: return call_macro(c, f.mac, a, caller);
    case V_METHOD: return jmethod_call(c, f.meth, a);
    case V_FUNC: return jglobal_call(c, f.fn, a);
    case V_UNDEF: return undefined_error(c, f);
    default: jctx_fail(c, "'%s' object is not callable", jv_type_name(f)); return jv_undef(NULL);
    }
}

static int eval_args(jctx *c, const jnode_ *call, jargs *a) {
    memset(a, 0, sizeof *a);
    int n = call->nkids;
    if (!n) return 0;
    a->pos = jctx_alloc(c, (size_t)n * sizeof(jval));
    a->kwv = jctx_alloc(c, (size_t)n * sizeof(jval));
    a->kw = jctx_alloc(c, (size_t)n * sizeof(char *));
    if (!a->pos || !a->kwv || !a->kw) return -1;
    for (int i = 0; i < n; i++) {
        jval v = jeval(c, call->kids[i]);
        if (c->failed) return -1;
        if (call->kw[i]) {
            a->kw[a->nkw] = call->kw[i];
            a->kwv[a->nkw++] = v;
        } else a->pos[a->npos++] = v;
    }
    return 0;
}

/* the filter chain of a filter block / block set, applied to v (innermost first) */
static jval apply_chain(jctx *c, const jnode_ *f, jval v) {
    if (!f) return v;
    v = apply_chain(c, f->a, v);
    if (c->failed) return v;
    jargs a;
    if (eval_args(c, f, &a)) return jv_undef(NULL);
    c->line = f->line;
    return jfilter(c, f->name, v, &a);
}

/* ---- expressions -------------------------------------------------------------------------- */

static jframe *cur_frame(jctx *c);

jval jeval(jctx *c, const jnode_ *e) {
    jval r = jv_undef(NULL);
    if (c->failed || enter(c)) return r;
    c->line = e->line;
    switch (e->kind) {
    case E_CONST: r = e->cval; break;
    case E_NAME: r = lookup(c, cur_frame(c), e->name); break;
    case E_LIST:
    case E_TUPLE:
        r = jv_list_new(c, (size_t)e->nkids);
        r.tuple = e->kind == E_TUPLE;
        for (int i = 0; r.t == V_LIST && i < e->nkids; i++) {
            jval v = jeval(c, e->kids[i]);
            if (c->failed || jv_list_push(c, r.l, v)) break;
        }
        break;
    case E_DICT:
        r = jv_dict_new(c, (size_t)e->nkids / 2);
        for (int i = 0; r.t == V_DICT && i + 1 < e->nkids; i += 2) {
            jval k = jeval(c, e->kids[i]);
            jval v = jeval(c, e->kids[i + 1]);
            if (c->failed) break;
            if (k.t == V_LIST || k.t == V_DICT || k.t == V_UNDEF) {
                jctx_fail(c, "unhashable dict key of type '%s'", jv_type_name(k));
                break;
            }
            if (jv_dict_set(c, r.d, k, v)) break;
        }
        break;
    case E_ATTR: {
        jval o = jeval(c, e->a);
        if (!c->failed) {
            c->line = e->line;
            r = jattr(c, o, e->name);
        }
        break;
    }
    case E_ITEM: {
        jval o = jeval(c, e->a);
        if (c->failed) break;
        if (e->b->kind == E_SLICE) {
            jval lo = e->b->a ? jeval(c, e->b->a) : jv_none(), hi = e->b->b ? jeval(c, e->b->b) : jv_none(),
                 st = e->b->c ? jeval(c, e->b->c) : jv_none();
            if (!c->failed) r = do_slice(c, o, lo, hi, st);
        } else {
            jval k = jeval(c, e->b);
            if (!c->failed) {
                c->line = e->line;
                r = jitem(c, o, k);
            }
        }
        break;
    }
    case E_CALL: {
        jval f = jeval(c, e->a);
        jargs a;
        if (!c->failed && !eval_args(c, e, &a)) {
            c->line = e->line;
            r = jcall_value(c, f, &a, jv_undef(NULL));
        }
        break;
    }
    case E_FILTER: {
        jval v = jeval(c, e->a);
        jargs a;
        if (!c->failed && !eval_args(c, e, &a)) {
            c->line = e->line;
            r = jfilter(c, e->name, v, &a);
        }
        break;
    }
    case E_TEST: {
        jval v = jeval(c, e->a);
        jargs a;
        if (!c->failed && !eval_args(c, e, &a)) {
            c->line = e->line;
            int t = jtest(c, e->name, v, &a);
            if (t >= 0) r = jv_bool(e->op ? !t : t);
        }
        break;
    }
    case E_NEG:
    case E_POS: {
        jval v = jeval(c, e->a);
        if (c->failed) break;
        if (v.t == V_INT || v.t == V_BOOL)
            r = e->kind == E_NEG ? (v.i == INT64_MIN ? jv_float(-(double)v.i) : jv_int(-v.i)) : jv_int(v.i);
        else if (v.t == V_FLOAT) r = jv_float(e->kind == E_NEG ? -v.f : v.f);
        else if (v.t == V_UNDEF) r = undefined_error(c, v);
        else jctx_fail(c, "bad operand type for unary %c: '%s'", e->kind == E_NEG ? '-' : '+', jv_type_name(v));
        break;
    }
    case E_NOT: {
        jval v = jeval(c, e->a);
        if (!c->failed) r = jv_bool(!jv_truthy(v));
        break;
    }
    case E_AND:
    case E_OR: {
        jval a = jeval(c, e->a);
        if (c->failed) break;
        if (jv_truthy(a) == (e->kind == E_OR)) r = a;
        else r = jeval(c, e->b);
        break;
    }
    case E_BIN: {
        jval a = jeval(c, e->a), b = jeval(c, e->b);
        if (!c->failed) {
            c->line = e->line;
            r = binop(c, e->op, a, b);
        }
        break;
    }
    case E_CMP: {
        jval a = jeval(c, e->a), b = jeval(c, e->b);
        if (!c->failed) {
            c->line = e->line;
            r = compare(c, e->op, a, b);
        }
        break;
    }
    case E_COND: {
        jval cond = jeval(c, e->a);
        if (c->failed) break;
        if (jv_truthy(cond)) r = jeval(c, e->b);
        else if (e->c) r = jeval(c, e->c);
        break;
    }
    case E_CONCAT: {
        jval a = jeval(c, e->a), b = jeval(c, e->b);
        jsb s = {.c = c};
        if (!c->failed && !jv_str_of(c, a, &s) && !jv_str_of(c, b, &s)) r = jsb_val(&s);
        break;
    }
    default: jctx_fail(c, "internal: unknown expression"); break;
    }
    c->depth--;
    return r;
}

/* ---- statements -------------------------------------------------------------------------- */

/* The innermost frame lives in the context while a body renders. */
static jframe *cur_frame(jctx *c) { return c->frame; }

static int unpack(jctx *c, jframe *f, const jnode_ *target, jval v) {
    if (target->kind == E_NAME) return assign(c, f, target->name, v);
    if (v.t != V_LIST && v.t != V_STR)
        return jctx_fail(c, "cannot unpack a %s into %d names", jv_type_name(v), target->nkids);
    jlist items;
    if (jiterate(c, v, &items)) return -1;
    if ((int)items.n != target->nkids)
        return jctx_fail(c, "cannot unpack %zu values into %d names", items.n, target->nkids);
    for (int i = 0; i < target->nkids; i++)
        if (assign(c, f, target->kids[i]->name, items.v[i])) return -1;
    return 0;
}

static int render_for(jctx *c, const jnode_ *s, jsb *out) {
    jval seq = jeval(c, s->b);
    jlist items;
    if (c->failed || jiterate(c, seq, &items)) return -1;
    jframe *outer = c->frame;
    if (s->c) { /* {% for x in xs if cond %}: the loop runs over the items that pass */
        jlist kept = {0};
        jframe *f = frame_new(c, outer);
        for (size_t i = 0; i < items.n; i++) {
            if (f) f->vars.n = 0;
            if (!f || step(c) || unpack(c, f, s->a, items.v[i])) return -1;
            c->frame = f;
            jval keep = jeval(c, s->c);
            c->frame = outer;
            if (c->failed || (jv_truthy(keep) && jv_list_push(c, &kept, items.v[i]))) return -1;
        }
        items = kept;
    }
    jloop *lp = jctx_alloc(c, sizeof *lp);
    /* Each iteration starts with an empty scope (what the previous one set is gone, as in
     * jinja2); one frame is emptied and reused, so a long loop costs no memory per item. */
    jframe *f = frame_new(c, outer);
    if (!lp || !f) return -1;
    lp->length = (int64_t)items.n;
    int rc = 0;
    for (size_t i = 0; i < items.n && !rc; i++) {
        jval lv = {0};
        lv.t = V_LOOP;
        lv.loop = lp;
        lp->index0 = (int64_t)i;
        lp->has_prev = i > 0;
        lp->has_next = i + 1 < items.n;
        if (lp->has_prev) lp->prev = items.v[i - 1];
        if (lp->has_next) lp->next = items.v[i + 1];
        f->vars.n = 0;
        if (step(c) || unpack(c, f, s->a, items.v[i]) || assign(c, f, "loop", lv)) return -1;
        rc = render_in(c, f, s->body, out);
        c->frame = outer;
        if (c->brk == 1) {
            c->brk = 0;
            break;
        }
        c->brk = 0;
    }
    if (!rc && !items.n && s->else_body) rc = jrender_body(c, s->else_body, out);
    return rc;
}

static int render_set(jctx *c, const jnode_ *s) {
    jval v = jeval(c, s->b);
    if (c->failed) return -1;
    const jnode_ *t = s->a;
    if (t->kind == E_ATTR) {
        jval ns = lookup(c, c->frame, t->a->name);
        if (ns.t != V_DICT || !ns.ns)
            return jctx_fail(c, "cannot assign attribute '%s' on a %s (not a namespace)", t->name, jv_type_name(ns));
        return jv_dict_set(c, ns.d, jv_str(t->name, strlen(t->name)), v);
    }
    return unpack(c, c->frame, t, v);
}

static int render_stmt(jctx *c, const jnode_ *s, jsb *out) {
    c->line = s->line;
    switch (s->kind) {
    case S_TEXT: return jsb_put(out, s->cval.s.p, s->cval.s.n);
    case S_OUTPUT: {
        jval v = jeval(c, s->a);
        return c->failed ? -1 : jv_str_of(c, v, out);
    }
    case S_IF: {
        jval cond = jeval(c, s->a);
        if (c->failed) return -1;
        if (jv_truthy(cond)) return jrender_body(c, s->b, out);
        if (!s->c) return 0;
        return s->c->kind == S_IF ? render_stmt(c, s->c, out) : jrender_body(c, s->c, out);
    }
    case S_FOR: return render_for(c, s, out);
    case S_SET: return render_set(c, s);
    case S_SETBLOCK:
    case S_FILTERBLOCK: {
        jsb b = {.c = c};
        if (jrender_body(c, s->body, &b)) return -1;
        jval v = apply_chain(c, s->c, jsb_val(&b));
        if (c->failed) return -1;
        if (s->kind == S_FILTERBLOCK) return jv_str_of(c, v, out);
        return assign(c, c->frame, s->a->name, v);
    }
    case S_MACRO: {
        struct jmacro *m = jctx_alloc(c, sizeof *m);
        if (!m) return -1;
        m->node = s;
        m->closure = c->frame;
        jval v = {0};
        v.t = V_MACRO;
        v.mac = m;
        return assign(c, c->frame, s->name, v);
    }
    case S_CALLBLOCK: {
        struct jmacro *m = jctx_alloc(c, sizeof *m);
        if (!m) return -1;
        m->node = s;
        m->closure = c->frame;
        jval caller = {0};
        caller.t = V_MACRO;
        caller.mac = m;
        jval f = jeval(c, s->a->a);
        jargs a;
        if (c->failed || eval_args(c, s->a, &a)) return -1;
        jval v = jcall_value(c, f, &a, caller);
        return c->failed ? -1 : jv_str_of(c, v, out);
    }
    case S_BREAK: c->brk = 1; return 0;
    case S_CONTINUE: c->brk = 2; return 0;
    case S_BODY: return jrender_body(c, s, out);
    default: return jctx_fail(c, "internal: unknown statement");
    }
}

int jrender_body(jctx *c, const jnode_ *body, jsb *out) {
    if (enter(c)) return -1;
    int rc = 0;
    for (int i = 0; i < body->nkids && !rc && !c->brk; i++) rc = render_stmt(c, body->kids[i], out);
    c->depth--;
    return rc || c->failed ? -1 : 0;
}

static int render_in(jctx *c, jframe *f, const jnode_ *body, jsb *out) {
    jframe *saved = c->frame;
    c->frame = f;
    int rc = jrender_body(c, body, out);
    c->frame = saved;
    return rc;
}

/* ---- entry --------------------------------------------------------------------------------- */

int jinja_render(const jinja_template *t, const jinja_input *in, char **out, size_t *len, char *err) {
    *out = NULL;
    if (len) *len = 0;
    jctx c = {.tpl = t,
              .err = err,
              .now = in->now,
              .max_steps = in->max_steps ? in->max_steps : JJ_MAX_STEPS,
              .max_work = in->max_work ? in->max_work : JJ_MAX_WORK,
              .max_output = in->max_output ? in->max_output : JJ_MAX_OUTPUT,
              .max_memory = in->max_memory ? in->max_memory : JJ_MAX_MEMORY};
    if (!(c.ar = jarena_new(c.max_memory))) {
        tok_errf(err, "chat template: out of memory");
        return -1;
    }
    c.globals = frame_new(&c, NULL);
    c.root = frame_new(&c, NULL);
    c.frame = c.root;
    jval vars = {0};
    int rc = -1;
    if (c.globals && c.root &&
        !jv_from_json(&c, in->vars_json ? in->vars_json : "{}", in->vars_json ? in->vars_len : 2, &vars)) {
        if (vars.t != V_DICT) jctx_fail(&c, "variables: not a JSON object");
        else {
            c.globals->vars = *vars.d;
            jsb b = {.c = &c};
            if (!jrender_body(&c, t->root, &b) && !c.failed) {
                *out = malloc(b.n + 1);
                if (!*out) jctx_fail(&c, "out of memory");
                else {
                    memcpy(*out, b.p ? b.p : "", b.n);
                    (*out)[b.n] = 0;
                    if (len) *len = b.n;
                    rc = 0;
                }
            }
        }
    }
    if (rc && !c.failed) tok_errf(err, "chat template: out of memory");
    jarena_free(c.ar);
    return rc;
}
