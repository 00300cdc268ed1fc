/* Shape and stride inference for every op, and whole-graph validation. Every message
 * names the node, the tensor (by port) and the dimension at fault, with the expected and
 * actual values. */
#include "graph/graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ----------------------------------------------------------------- */

int64_t dnnjit__numel(int ndim, const int64_t *dim)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (dim[i] > 0 && n > INT64_MAX / dim[i])
            return -1;
        n *= dim[i];
    }
    return n;
}

void dnnjit__packed_strides(int ndim, const int64_t *dim, const int64_t *like, int64_t *stride)
{
    /* order[0] is the outermost axis: sort axes by decreasing `like` stride, keeping the
     * natural order on ties so that row-major stays row-major. */
    int order[DNNJIT_MAX_DIMS];
    for (int i = 0; i < ndim; i++)
        order[i] = i;
    if (like)
        for (int i = 1; i < ndim; i++)
            for (int j = i; j > 0 && like[order[j]] > like[order[j - 1]]; j--) {
                int tmp = order[j];
                order[j] = order[j - 1];
                order[j - 1] = tmp;
            }
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        stride[order[i]] = s;
        s *= dim[order[i]];
    }
}

static void format_dims(char *buf, size_t size, int ndim, const int64_t *dim)
{
    size_t used = 0;
    used += (size_t)snprintf(buf + used, size - used, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "", (long long)dim[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

dnnjit_status_t dnnjit__check_tensor_desc(dnnjit_graph_t g, const char *who, int ndim, const int64_t *dim,
                                          const int64_t *stride, bool is_pass_by_value)
{
    if (ndim < 1 || ndim > DNNJIT_MAX_DIMS)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: rank %d is outside 1..%d", who, ndim, DNNJIT_MAX_DIMS);
    for (int i = 0; i < ndim; i++) {
        if (dim[i] < 1)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: dim[%d]=%lld but dims must be >= 1", who, i,
                                (long long)dim[i]);
        if (is_pass_by_value && dim[i] != 1)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: dim[%d]=%lld but a pass-by-value scalar has all dims 1",
                                who, i, (long long)dim[i]);
        if (stride && stride[i] < 0)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: stride[%d]=%lld is negative", who, i,
                                (long long)stride[i]);
    }
    int64_t n = dnnjit__numel(ndim, dim);
    /* 8 bytes per element is the widest type: the byte size must fit in int64 too. */
    if (n < 0 || n > INT64_MAX / 8)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: the product of the dims overflows int64", who);
    if (stride) {
        int64_t span = 0;
        for (int i = 0; i < ndim; i++) {
            if (stride[i] && dim[i] - 1 > (INT64_MAX / 8 - span) / stride[i])
                return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                                    "%s: dim[%d]=%lld with stride[%d]=%lld puts elements beyond the int64 range", who,
                                    i, (long long)dim[i], i, (long long)stride[i]);
            span += (dim[i] - 1) * stride[i];
        }
    }
    return DNNJIT_STATUS_SUCCESS;
}

/* Whether a strided layout maps two different indices to one address. Sorting the axes
 * of size > 1 by stride, each must step past everything the inner ones cover. */
static int overlapping_axis(int ndim, const int64_t *dim, const int64_t *stride)
{
    int order[DNNJIT_MAX_DIMS], n = 0;
    for (int i = 0; i < ndim; i++)
        if (dim[i] > 1)
            order[n++] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && stride[order[j]] < stride[order[j - 1]]; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    int64_t covered = 1;
    for (int i = 0; i < n; i++) {
        int a = order[i];
        if (stride[a] < covered)
            return a;
        covered = stride[a] * dim[a];
    }
    return -1;
}

void dnnjit__attr_defaults(dnnjit_op_t op, dnnjit__op_attr_t *attr)
{
    if (op == DNNJIT_OP_POINTWISE) {
        attr->pointwise.elu_alpha = 1.0;
        attr->pointwise.softplus_beta = 1.0;
        attr->pointwise.swish_beta = 1.0;
    } else if (op == DNNJIT_OP_LAYERNORM || op == DNNJIT_OP_RMSNORM || op == DNNJIT_OP_LAYERNORM_BACKWARD ||
               op == DNNJIT_OP_RMSNORM_BACKWARD) {
        attr->norm.epsilon_value = 1e-5;
    }
}

/* ---- data types ------------------------------------------------------------------- */

/* Output ports whose data type defaults to FLOAT (statistics). */
static bool is_stats_port(dnnjit_op_t op, int slot)
{
    switch (op) {
    case DNNJIT_OP_SOFTMAX:
    case DNNJIT_OP_LAYERNORM:
    case DNNJIT_OP_RMSNORM:
    case DNNJIT_OP_SDPA:
        return slot > 0;
    default:
        return false;
    }
}

static int output_slot(const dnnjit__node_t *n, dnnjit_tensor_t id)
{
    for (int i = 0; i < DNNJIT__MAX_OUTPUTS; i++)
        if (n->out[i] == id)
            return i;
    return -1;
}

dnnjit_data_type_t dnnjit__tensor_type(dnnjit_graph_t g, const dnnjit__tensor_t *t)
{
    /* Follows non-virtual outputs back through first inputs; bounded so that a cycle in a
     * graph not yet validated cannot loop forever. */
    for (int64_t steps = 0; steps <= g->tensor_count; steps++) {
        if (t->data_type)
            return t->data_type;
        bool produced = t->producer >= 0 && t->producer < g->node_count;
        const dnnjit__node_t *n = produced ? &g->nodes[t->producer] : NULL;
        if (n && is_stats_port(n->op, output_slot(n, (dnnjit_tensor_t)(t - g->tensors + 1))))
            return DNNJIT_DATA_TYPE_FLOAT;
        if (t->is_virtual)
            return g->intermediate_type ? g->intermediate_type : g->compute_type;
        if (g->io_type || !n)
            return g->io_type;
        const dnnjit__tensor_t *first = dnnjit__tensor(g, n->in[0]);
        if (!first)
            return DNNJIT_DATA_TYPE_NOT_SET;
        t = first;
    }
    return DNNJIT_DATA_TYPE_NOT_SET;
}

/* ---- inference -------------------------------------------------------------------- */

typedef struct infer_ctx {
    dnnjit_graph_t g;
    dnnjit__node_t *n;
    const dnnjit__op_ports_t *ports;
    const char *label;
    bool strict;
} infer_ctx_t;

static dnnjit__tensor_t *in_tensor(infer_ctx_t *c, int slot)
{
    return dnnjit__tensor(c->g, c->n->in[slot]);
}

#define FAIL(c, ...) dnnjit__fail((c)->g, DNNJIT_STATUS_INVALID_GRAPH, __VA_ARGS__)

/* Sets an output's inferred dims (and packed strides in the order of `like`, which may be
 * NULL), or, if the user fixed them, checks that they agree when strict. */
static dnnjit_status_t set_output(infer_ctx_t *c, int slot, int ndim, const int64_t *dim, const int64_t *like)
{
    dnnjit__tensor_t *t = dnnjit__tensor(c->g, c->n->out[slot]);
    if (!t)
        return DNNJIT_STATUS_SUCCESS;
    /* Inputs that fit can broadcast or multiply into dims that do not; packing strides for
     * them would overflow. The bound is dnnjit__check_tensor_desc's. */
    int64_t numel = dnnjit__numel(ndim, dim);
    if (numel < 0 || numel > INT64_MAX / 8) {
        char want[200];
        format_dims(want, sizeof want, ndim, dim);
        return FAIL(c, "%s \"%s\": output %s would have dims %s, whose product overflows int64", c->label,
                    c->n->name, c->ports->out_names[slot], want);
    }
    if (t->dims_set) {
        bool same = t->ndim == ndim && memcmp(t->dim, dim, sizeof(int64_t) * (size_t)ndim) == 0;
        if (!same && c->strict) {
            char want[200], got[200];
            format_dims(want, sizeof want, ndim, dim);
            format_dims(got, sizeof got, t->ndim, t->dim);
            return FAIL(c, "%s \"%s\": output %s (tensor \"%s\") has dims %s but the inputs give %s", c->label,
                        c->n->name, c->ports->out_names[slot], t->name, got, want);
        }
        if (!same)
            return DNNJIT_STATUS_SUCCESS;
    }
    /* Strides fixed for another rank cannot describe the new dims. */
    if (t->strides_set && t->ndim != ndim) {
        char want[200];
        format_dims(want, sizeof want, ndim, dim);
        return FAIL(c, "%s \"%s\": output %s (tensor \"%s\") has %d strides set but the inputs give %d dims %s",
                    c->label, c->n->name, c->ports->out_names[slot], t->name, t->ndim, ndim, want);
    }
    t->ndim = ndim;
    memcpy(t->dim, dim, sizeof(int64_t) * (size_t)ndim);
    if (!t->strides_set)
        dnnjit__packed_strides(ndim, t->dim, like, t->stride);
    return DNNJIT_STATUS_SUCCESS;
}

/* Broadcasts input slot `slot` into the out dims (right-aligned), numpy style. from[i] is
 * the input slot that out_dim[i] came from, so that a clash names the input that set the
 * dim rather than always IN_0. */
static dnnjit_status_t broadcast_into(infer_ctx_t *c, int slot, int *out_ndim, int64_t *out_dim, int *from)
{
    const dnnjit__tensor_t *t = in_tensor(c, slot);
    int nd = t->ndim > *out_ndim ? t->ndim : *out_ndim;
    int64_t merged[DNNJIT_MAX_DIMS];
    int merged_from[DNNJIT_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        int ai = i - (nd - *out_ndim), bi = i - (nd - t->ndim);
        int64_t a = ai >= 0 ? out_dim[ai] : 1, b = bi >= 0 ? t->dim[bi] : 1;
        int fa = ai >= 0 ? from[ai] : slot;
        if (a != b && a != 1 && b != 1) {
            /* a != 1, so input `fa` has this axis itself: its own index is not negative. */
            const dnnjit__tensor_t *f = in_tensor(c, fa);
            return FAIL(c,
                        "%s \"%s\": %s.dim[%d]=%lld does not broadcast against %s.dim[%d]=%lld "
                        "(tensors \"%s\" and \"%s\")",
                        c->label, c->n->name, c->ports->in_names[slot], bi, (long long)b, c->ports->in_names[fa],
                        i - (nd - f->ndim), (long long)a, t->name, f->name);
        }
        merged[i] = a == 1 ? b : a;
        merged_from[i] = a == 1 && b != 1 ? slot : fa;
    }
    *out_ndim = nd;
    memcpy(out_dim, merged, sizeof(int64_t) * (size_t)nd);
    memcpy(from, merged_from, sizeof(int) * (size_t)nd);
    return DNNJIT_STATUS_SUCCESS;
}

static bool is_float_type(dnnjit_data_type_t t)
{
    return t == DNNJIT_DATA_TYPE_FLOAT || t == DNNJIT_DATA_TYPE_DOUBLE || t == DNNJIT_DATA_TYPE_HALF ||
           t == DNNJIT_DATA_TYPE_BFLOAT16 || t == DNNJIT_DATA_TYPE_FP8_E4M3 || t == DNNJIT_DATA_TYPE_FP8_E5M2;
}

static dnnjit_status_t infer_matmul(infer_ctx_t *c)
{
    const dnnjit__tensor_t *a = in_tensor(c, 0), *b = in_tensor(c, 1);
    if (a->ndim < 2)
        return FAIL(c, "matmul \"%s\": A (tensor \"%s\") has %d dim but needs at least 2 ([..., M, K])", c->n->name,
                    a->name, a->ndim);
    if (b->ndim < 2)
        return FAIL(c, "matmul \"%s\": B (tensor \"%s\") has %d dim but needs at least 2 ([..., K, N])", c->n->name,
                    b->name, b->ndim);
    if (a->dim[a->ndim - 1] != b->dim[b->ndim - 2])
        return FAIL(c, "matmul \"%s\": A.dim[%d]=%lld but B.dim[%d]=%lld (K must match)", c->n->name, a->ndim - 1,
                    (long long)a->dim[a->ndim - 1], b->ndim - 2, (long long)b->dim[b->ndim - 2]);
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    int64_t dim[DNNJIT_MAX_DIMS];
    for (int i = 0; i < nd - 2; i++) {
        int ai = i - (nd - a->ndim), bi = i - (nd - b->ndim);
        int64_t x = ai >= 0 ? a->dim[ai] : 1, y = bi >= 0 ? b->dim[bi] : 1;
        if (x != y && x != 1 && y != 1)
            return FAIL(c, "matmul \"%s\": A.dim[%d]=%lld but B.dim[%d]=%lld (batch dims must match or be 1)",
                        c->n->name, ai, (long long)x, bi, (long long)y);
        dim[i] = x == 1 ? y : x;
    }
    dim[nd - 2] = a->dim[a->ndim - 2];
    dim[nd - 1] = b->dim[b->ndim - 1];
    return set_output(c, 0, nd, dim, NULL);
}

/* The compute types a node can run in: any for pointwise; for matmul any that can
 * accumulate (no BOOLEAN, INT8 or FP8); for the other ops, which take exponentials, roots
 * and quotients, a floating-point type of 16 bits or more. */
static dnnjit_status_t check_compute_type(infer_ctx_t *c)
{
    dnnjit_data_type_t ct = dnnjit__node_compute_type(c->g, c->n);
    if ((int)ct < 0 || ct >= DNNJIT_DATA_TYPE_COUNT_)
        return FAIL(c, "%s \"%s\": unknown compute data type %d", c->label, c->n->name, (int)ct);
    bool wide_float = ct == DNNJIT_DATA_TYPE_FLOAT || ct == DNNJIT_DATA_TYPE_DOUBLE || ct == DNNJIT_DATA_TYPE_HALF ||
                      ct == DNNJIT_DATA_TYPE_BFLOAT16;
    bool wide_int = ct == DNNJIT_DATA_TYPE_INT32 || ct == DNNJIT_DATA_TYPE_INT64;
    if (c->n->op == DNNJIT_OP_MATMUL && !wide_float && !wide_int)
        return FAIL(c, "matmul \"%s\": compute data type %s cannot accumulate (use FLOAT, DOUBLE, HALF, BFLOAT16 "
                    "or INT32)", c->n->name, dnnjit_data_type_name(ct));
    if (c->n->op != DNNJIT_OP_MATMUL && c->n->op != DNNJIT_OP_POINTWISE && !wide_float)
        return FAIL(c, "%s \"%s\": compute data type %s is not a floating-point type of 16 bits or more (use "
                    "FLOAT, DOUBLE, HALF or BFLOAT16)", c->label, c->n->name, dnnjit_data_type_name(ct));
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t infer_pointwise(infer_ctx_t *c)
{
    int arity = dnnjit_pointwise_mode_arity(c->n->attr.pointwise.mode);
    if (!arity)
        return FAIL(c, "pointwise \"%s\": unknown mode %d", c->n->name, (int)c->n->attr.pointwise.mode);
    for (int i = 0; i < 3; i++)
        if ((i < arity) != (c->n->in[i] != DNNJIT_TENSOR_NONE))
            return FAIL(c, "pointwise \"%s\": mode %s takes %d input(s) but IN_%d is %s", c->n->name,
                        dnnjit_pointwise_mode_name(c->n->attr.pointwise.mode), arity, i,
                        i < arity ? "missing" : "given");
    dnnjit_pointwise_mode_t mode = c->n->attr.pointwise.mode;
    if ((mode == DNNJIT_POINTWISE_SOFTPLUS_FWD || mode == DNNJIT_POINTWISE_SOFTPLUS_BWD) &&
        c->n->attr.pointwise.softplus_beta == 0)
        return FAIL(c, "pointwise \"%s\": softplus_beta is 0, and softplus divides by it", c->n->name);
    const dnnjit__tensor_t *first = in_tensor(c, 0);
    int nd = first->ndim;
    int64_t dim[DNNJIT_MAX_DIMS];
    int from[DNNJIT_MAX_DIMS] = {0};
    memcpy(dim, first->dim, sizeof dim);
    for (int i = 1; i < arity; i++) {
        dnnjit_status_t s = broadcast_into(c, i, &nd, dim, from);
        if (s)
            return s;
    }
    return set_output(c, 0, nd, dim, nd == first->ndim ? first->stride : NULL);
}

static dnnjit_status_t infer_reduction(infer_ctx_t *c)
{
    const dnnjit__tensor_t *x = in_tensor(c, 0);
    const dnnjit__tensor_t *y = dnnjit__tensor(c->g, c->n->out[0]);
    uint32_t axes = c->n->attr.reduction.axes;
    if (axes >> x->ndim)
        return FAIL(c, "reduction \"%s\": axes mask 0x%x names axis %d but X (tensor \"%s\") has %d dims", c->n->name,
                    axes, 31 - __builtin_clz(axes), x->name, x->ndim);
    if (!axes && y && y->dims_set) {
        if (y->ndim != x->ndim)
            return FAIL(c, "reduction \"%s\": Y (tensor \"%s\") has %d dims but X has %d (a reduction keeps the rank)",
                        c->n->name, y->name, y->ndim, x->ndim);
        for (int i = 0; i < x->ndim; i++) {
            if (y->dim[i] != 1 && y->dim[i] != x->dim[i])
                return FAIL(c, "reduction \"%s\": Y.dim[%d]=%lld but must be 1 or X.dim[%d]=%lld", c->n->name, i,
                            (long long)y->dim[i], i, (long long)x->dim[i]);
            if (y->dim[i] == 1)
                axes |= 1u << i;
        }
    } else if (!axes) {
        axes = (1u << x->ndim) - 1;
    }
    c->n->attr.reduction.resolved_axes = axes;
    int64_t dim[DNNJIT_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        dim[i] = axes >> i & 1 ? 1 : x->dim[i];
    return set_output(c, 0, x->ndim, dim, NULL);
}

/* Stats dims: `x`'s dims with 1 on the axes of `mask`. */
static void stats_dims(const dnnjit__tensor_t *x, uint32_t mask, int64_t *dim)
{
    for (int i = 0; i < x->ndim; i++)
        dim[i] = mask >> i & 1 ? 1 : x->dim[i];
}

static dnnjit_status_t same_dims(infer_ctx_t *c, int slot, int ref_slot)
{
    const dnnjit__tensor_t *t = in_tensor(c, slot), *r = in_tensor(c, ref_slot);
    if (t->ndim != r->ndim)
        return FAIL(c, "%s \"%s\": %s (tensor \"%s\") has %d dims but %s has %d", c->label, c->n->name,
                    c->ports->in_names[slot], t->name, t->ndim, c->ports->in_names[ref_slot], r->ndim);
    for (int i = 0; i < t->ndim; i++)
        if (t->dim[i] != r->dim[i])
            return FAIL(c, "%s \"%s\": %s.dim[%d]=%lld but %s.dim[%d]=%lld (must match)", c->label, c->n->name,
                        c->ports->in_names[slot], i, (long long)t->dim[i], c->ports->in_names[ref_slot], i,
                        (long long)r->dim[i]);
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t infer_softmax(infer_ctx_t *c)
{
    const dnnjit__tensor_t *p = in_tensor(c, 0);
    if (c->n->op == DNNJIT_OP_SOFTMAX_BACKWARD) {
        dnnjit_status_t s = same_dims(c, 1, 0);
        return s ? s : set_output(c, 0, p->ndim, p->dim, p->stride);
    }
    dnnjit_status_t s = set_output(c, 0, p->ndim, p->dim, p->stride);
    int64_t dim[DNNJIT_MAX_DIMS];
    stats_dims(p, 1u << (p->ndim - 1), dim);
    for (int i = 1; i < 3 && !s; i++)
        s = set_output(c, i, p->ndim, dim, NULL);
    return s;
}

/* The mask of normalised axes of a norm node over X. */
static dnnjit_status_t norm_mask(infer_ctx_t *c, const dnnjit__tensor_t *x, uint32_t *mask)
{
    int k = c->n->attr.norm.norm_axes;
    if (k == 0) {
        if (x->ndim < 2)
            return FAIL(c, "%s \"%s\": X (tensor \"%s\") has 1 dim; normalising every axis but the first needs at "
                        "least 2 (or set norm_axes)", c->label, c->n->name, x->name);
        k = x->ndim - 1;
    }
    if (k < 0 || k > x->ndim)
        return FAIL(c, "%s \"%s\": norm_axes=%d but X (tensor \"%s\") has %d dims", c->label, c->n->name, k, x->name,
                    x->ndim);
    *mask = ((1u << x->ndim) - 1) & ~((1u << (x->ndim - k)) - 1);
    return DNNJIT_STATUS_SUCCESS;
}

/* A parameter (SCALE, BIAS) has X's dims on normalised axes and 1 elsewhere; statistics
 * (MEAN, INV_VARIANCE) the reverse. */
static dnnjit_status_t check_norm_operand(infer_ctx_t *c, int slot, const dnnjit__tensor_t *x, uint32_t mask,
                                          bool is_param)
{
    const dnnjit__tensor_t *t = in_tensor(c, slot);
    if (!t)
        return DNNJIT_STATUS_SUCCESS;
    const char *port = c->ports->in_names[slot];
    if (t->ndim != x->ndim)
        return FAIL(c, "%s \"%s\": %s (tensor \"%s\") has %d dims but X has %d", c->label, c->n->name, port, t->name,
                    t->ndim, x->ndim);
    for (int i = 0; i < x->ndim; i++) {
        bool full = (mask >> i & 1) == is_param;
        if (full && t->dim[i] != x->dim[i])
            return FAIL(c, "%s \"%s\": %s.dim[%d]=%lld but X.dim[%d]=%lld (axis %d is %snormalised)", c->label,
                        c->n->name, port, i, (long long)t->dim[i], i, (long long)x->dim[i], i, is_param ? "" : "not ");
        if (!full && t->dim[i] != 1)
            return FAIL(c, "%s \"%s\": %s.dim[%d]=%lld but must be 1 (axis %d is %snormalised)", c->label, c->n->name,
                        port, i, (long long)t->dim[i], i, is_param ? "not " : "");
    }
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t infer_norm(infer_ctx_t *c)
{
    bool backward = c->n->op == DNNJIT_OP_LAYERNORM_BACKWARD || c->n->op == DNNJIT_OP_RMSNORM_BACKWARD;
    int xs = backward ? 1 : 0; /* X's slot */
    const dnnjit__tensor_t *x = in_tensor(c, xs);
    uint32_t mask = 0;
    dnnjit_status_t s = norm_mask(c, x, &mask);
    if (s)
        return s;
    int64_t sdim[DNNJIT_MAX_DIMS], pdim[DNNJIT_MAX_DIMS];
    stats_dims(x, mask, sdim);
    stats_dims(x, ~mask, pdim);
    if (!backward) {
        s = check_norm_operand(c, 1, x, mask, true);
        if (!s)
            s = check_norm_operand(c, 2, x, mask, true);
        const dnnjit__tensor_t *eps = in_tensor(c, 3);
        if (!s && eps && dnnjit__numel(eps->ndim, eps->dim) != 1)
            s = FAIL(c, "%s \"%s\": EPSILON (tensor \"%s\") must hold one element", c->label, c->n->name, eps->name);
        if (!s)
            s = set_output(c, 0, x->ndim, x->dim, x->stride);
        for (int i = 1; i < c->ports->n_out && !s; i++)
            s = set_output(c, i, x->ndim, sdim, NULL);
        return s;
    }
    s = same_dims(c, 0, 1);
    if (!s)
        s = check_norm_operand(c, 2, x, mask, true);
    for (int i = 3; i < c->ports->n_in && !s; i++)
        s = check_norm_operand(c, i, x, mask, false);
    if (!s)
        s = set_output(c, 0, x->ndim, x->dim, x->stride);
    for (int i = 1; i < 3 && !s; i++)
        s = set_output(c, i, x->ndim, pdim, NULL);
    return s;
}

static dnnjit_status_t infer_sdpa(infer_ctx_t *c)
{
    const dnnjit__tensor_t *t[3] = {in_tensor(c, 0), in_tensor(c, 1), in_tensor(c, 2)};
    for (int i = 0; i < 3; i++)
        if (t[i]->ndim != 4)
            return FAIL(c, "sdpa \"%s\": %s (tensor \"%s\") has %d dims but needs 4 ([b, h, s, d])", c->n->name,
                        c->ports->in_names[i], t[i]->name, t[i]->ndim);
    const dnnjit__tensor_t *q = t[0], *k = t[1], *v = t[2];
    for (int i = 1; i < 3; i++)
        if (t[i]->dim[0] != q->dim[0])
            return FAIL(c, "sdpa \"%s\": %s.dim[0]=%lld but Q.dim[0]=%lld (batch must match)", c->n->name,
                        c->ports->in_names[i], (long long)t[i]->dim[0], (long long)q->dim[0]);
    for (int i = 1; i < 3; i++)
        if (q->dim[1] % t[i]->dim[1])
            return FAIL(c, "sdpa \"%s\": Q.dim[1]=%lld is not a multiple of %s.dim[1]=%lld (query heads must be a "
                        "multiple of key/value heads)", c->n->name, (long long)q->dim[1], c->ports->in_names[i],
                        (long long)t[i]->dim[1]);
    if (k->dim[3] != q->dim[3])
        return FAIL(c, "sdpa \"%s\": K.dim[3]=%lld but Q.dim[3]=%lld (head dim must match)", c->n->name,
                    (long long)k->dim[3], (long long)q->dim[3]);
    if (v->dim[2] != k->dim[2])
        return FAIL(c, "sdpa \"%s\": V.dim[2]=%lld but K.dim[2]=%lld (key/value sequence lengths must match)",
                    c->n->name, (long long)v->dim[2], (long long)k->dim[2]);
    if (c->n->attr.sdpa.has_attn_scale && !isfinite(c->n->attr.sdpa.attn_scale))
        return FAIL(c, "sdpa \"%s\": attn_scale is not finite", c->n->name);
    int64_t odim[4] = {q->dim[0], q->dim[1], q->dim[2], v->dim[3]};
    int64_t sdim[4] = {q->dim[0], q->dim[1], q->dim[2], 1};
    dnnjit_status_t s = set_output(c, 0, 4, odim, q->stride);
    return s ? s : set_output(c, 1, 4, sdim, NULL);
}

dnnjit_status_t dnnjit__infer_node(dnnjit_graph_t g, int64_t node_index, bool strict)
{
    dnnjit__node_t *n = &g->nodes[node_index];
    infer_ctx_t c = {g, n, dnnjit__op_ports(n->op), dnnjit__op_label(n->op), strict};
    if (!c.ports)
        return dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "node \"%s\": unknown op %d", n->name, (int)n->op);
    for (int i = 0; i < c.ports->n_in; i++) {
        if (n->in[i] == DNNJIT_TENSOR_NONE) {
            if (!(c.ports->in_optional >> i & 1))
                return FAIL(&c, "%s \"%s\": input %s is missing", c.label, n->name, c.ports->in_names[i]);
        } else if (!dnnjit__tensor(g, n->in[i])) {
            return FAIL(&c, "%s \"%s\": input %s is tensor id %u, which is not in this graph", c.label, n->name,
                        c.ports->in_names[i], n->in[i]);
        }
    }
    for (int i = 0; i < c.ports->n_out; i++) {
        if (n->out[i] == DNNJIT_TENSOR_NONE) {
            if (!(c.ports->out_optional >> i & 1))
                return FAIL(&c, "%s \"%s\": output %s is missing", c.label, n->name, c.ports->out_names[i]);
        } else if (!dnnjit__tensor(g, n->out[i])) {
            return FAIL(&c, "%s \"%s\": output %s is tensor id %u, which is not in this graph", c.label, n->name,
                        c.ports->out_names[i], n->out[i]);
        }
    }
    dnnjit_status_t s = check_compute_type(&c);
    if (s)
        return s;
    switch (n->op) {
    case DNNJIT_OP_MATMUL:
        return infer_matmul(&c);
    case DNNJIT_OP_POINTWISE:
        return infer_pointwise(&c);
    case DNNJIT_OP_REDUCTION:
        return infer_reduction(&c);
    case DNNJIT_OP_SOFTMAX:
    case DNNJIT_OP_SOFTMAX_BACKWARD:
        return infer_softmax(&c);
    case DNNJIT_OP_LAYERNORM:
    case DNNJIT_OP_RMSNORM:
    case DNNJIT_OP_LAYERNORM_BACKWARD:
    case DNNJIT_OP_RMSNORM_BACKWARD:
        return infer_norm(&c);
    case DNNJIT_OP_SDPA:
        return infer_sdpa(&c);
    default:
        return FAIL(&c, "node \"%s\": unknown op %d", n->name, (int)n->op);
    }
}

/* ---- whole-graph validation ------------------------------------------------------- */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts `names` in place and returns a string that occurs twice among them, or NULL. The
 * comparison reads only its arguments, so that graphs validated on different threads at
 * once do not share any state. */
static const char *find_duplicate(const char **names, int64_t count)
{
    qsort(names, (size_t)count, sizeof *names, cmp_names);
    for (int64_t i = 1; i < count; i++)
        if (strcmp(names[i], names[i - 1]) == 0)
            return names[i];
    return NULL;
}

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static dnnjit_status_t check_unique(dnnjit_graph_t g)
{
    int64_t n = g->tensor_count > g->node_count ? g->tensor_count : g->node_count;
    const char **names = malloc(sizeof *names * (size_t)(n ? n : 1));
    int64_t *uids = malloc(sizeof *uids * (size_t)(2 * (n ? n : 1)));
    if (!names || !uids) {
        free(names);
        free(uids);
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "validate: out of memory");
    }
    dnnjit_status_t s = DNNJIT_STATUS_SUCCESS;
    for (int64_t i = 0; i < g->tensor_count; i++)
        names[i] = g->tensors[i].name;
    const char *dup = find_duplicate(names, g->tensor_count);
    if (dup)
        s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "two tensors are named \"%s\"", dup);
    for (int64_t i = 0; i < g->node_count && !s; i++)
        names[i] = g->nodes[i].name;
    if (!s && (dup = find_duplicate(names, g->node_count)))
        s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "two nodes are named \"%s\"", dup);
    int64_t m = 0;
    for (int64_t i = 0; i < g->tensor_count && !s; i++)
        if (g->tensors[i].has_uid)
            uids[m++] = g->tensors[i].uid;
    if (!s) {
        qsort(uids, (size_t)m, sizeof *uids, cmp_int64);
        for (int64_t i = 1; i < m && !s; i++)
            if (uids[i] == uids[i - 1]) {
                dnnjit_tensor_t a = 0, b = 0;
                for (int64_t j = 0; j < g->tensor_count; j++)
                    if (g->tensors[j].has_uid && g->tensors[j].uid == uids[i])
                        *(a ? &b : &a) = (dnnjit_tensor_t)(j + 1);
                s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "tensors \"%s\" and \"%s\" both have uid %lld",
                                 dnnjit__tensor(g, a)->name, dnnjit__tensor(g, b)->name, (long long)uids[i]);
            }
    }
    free(names);
    free(uids);
    return s;
}

/* The producer of one of node i's inputs that order_nodes could not place (pending > 0);
 * node i must be one it could not place. */
static int64_t stuck_producer(dnnjit_graph_t g, const int64_t *pending, int64_t i)
{
    for (int j = 0; j < DNNJIT__MAX_INPUTS; j++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, g->nodes[i].in[j]);
        if (t && t->producer >= 0 && pending[t->producer] > 0)
            return t->producer;
    }
    return i;
}

/* Recomputes producers from the nodes, and orders the nodes so that each comes after the
 * producers of its inputs (Kahn's algorithm); a cycle is an error. */
static dnnjit_status_t order_nodes(dnnjit_graph_t g, int64_t *scratch)
{
    for (int64_t i = 0; i < g->tensor_count; i++)
        g->tensors[i].producer = -1;
    for (int64_t i = 0; i < g->node_count; i++)
        for (int j = 0; j < DNNJIT__MAX_OUTPUTS; j++) {
            dnnjit__tensor_t *t = dnnjit__tensor(g, g->nodes[i].out[j]);
            if (!t)
                continue;
            if (t->producer >= 0)
                return dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "tensor \"%s\" is written by node \"%s\" and by node \"%s\"",
                                    t->name, g->nodes[t->producer].name, g->nodes[i].name);
            t->producer = i;
        }
    /* scratch[i] = number of inputs of node i whose producer is not placed yet. */
    int64_t *pending = scratch, *queue = malloc(sizeof *queue * (size_t)(g->node_count ? g->node_count : 1));
    dnnjit__node_t *sorted = malloc(sizeof *sorted * (size_t)(g->node_count ? g->node_count : 1));
    int64_t *new_index = malloc(sizeof *new_index * (size_t)(g->node_count ? g->node_count : 1));
    if (!queue || !sorted || !new_index) {
        free(queue);
        free(sorted);
        free(new_index);
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "validate: out of memory");
    }
    int64_t head = 0, tail = 0;
    for (int64_t i = 0; i < g->node_count; i++) {
        pending[i] = 0;
        for (int j = 0; j < DNNJIT__MAX_INPUTS; j++) {
            dnnjit__tensor_t *t = dnnjit__tensor(g, g->nodes[i].in[j]);
            pending[i] += t && t->producer >= 0;
        }
        if (!pending[i])
            queue[tail++] = i;
    }
    while (head < tail) {
        int64_t i = queue[head++];
        for (int j = 0; j < DNNJIT__MAX_OUTPUTS; j++) {
            dnnjit_tensor_t out = g->nodes[i].out[j];
            if (out == DNNJIT_TENSOR_NONE)
                continue;
            for (int64_t k = 0; k < g->node_count; k++)
                for (int m = 0; m < DNNJIT__MAX_INPUTS; m++)
                    if (g->nodes[k].in[m] == out && --pending[k] == 0)
                        queue[tail++] = k;
        }
    }
    dnnjit_status_t s = DNNJIT_STATUS_SUCCESS;
    if (tail < g->node_count) {
        /* The nodes left over are those on a cycle and those downstream of one. Each reads
         * a tensor whose producer was left over too, so walking back through those for as
         * many steps as there are nodes ends on a cycle; the message names its node listed
         * first. */
        int64_t on = 0;
        while (pending[on] == 0)
            on++;
        for (int64_t step = 0; step < g->node_count; step++)
            on = stuck_producer(g, pending, on);
        int64_t first = on;
        for (int64_t i = stuck_producer(g, pending, on); i != on; i = stuck_producer(g, pending, i))
            first = i < first ? i : first;
        s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "the graph has a cycle through node \"%s\"",
                         g->nodes[first].name);
    } else {
        for (int64_t i = 0; i < g->node_count; i++) {
            sorted[i] = g->nodes[queue[i]];
            new_index[queue[i]] = i;
        }
        memcpy(g->nodes, sorted, sizeof *sorted * (size_t)g->node_count);
        for (int64_t i = 0; i < g->tensor_count; i++)
            if (g->tensors[i].producer >= 0)
                g->tensors[i].producer = new_index[g->tensors[i].producer];
    }
    free(queue);
    free(sorted);
    free(new_index);
    return s;
}

/* Checks a tensor's own description (rank, dims, strides, pass-by-value shape). */
static dnnjit_status_t check_desc(dnnjit_graph_t g, const dnnjit__tensor_t *t)
{
    char who[300];
    snprintf(who, sizeof who, "tensor \"%s\"", t->name);
    return dnnjit__check_tensor_desc(g, who, t->ndim, t->dim, t->stride, t->is_pass_by_value)
               ? DNNJIT_STATUS_INVALID_GRAPH
               : DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t check_tensors(dnnjit_graph_t g)
{
    /* read[i]: whether tensor i+1 is read by a node. */
    bool *read = calloc((size_t)(g->tensor_count ? g->tensor_count : 1), sizeof *read);
    if (!read)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "validate: out of memory");
    for (int64_t i = 0; i < g->node_count; i++)
        for (int j = 0; j < DNNJIT__MAX_INPUTS; j++)
            if (dnnjit__tensor(g, g->nodes[i].in[j]))
                read[g->nodes[i].in[j] - 1] = true;
    dnnjit_status_t s = DNNJIT_STATUS_SUCCESS;
    for (int64_t i = 0; i < g->tensor_count && !s; i++) {
        dnnjit__tensor_t *t = &g->tensors[i];
        /* Op outputs were re-inferred: their dims may now overflow. */
        if ((s = check_desc(g, t)))
            break;
        char who[300];
        snprintf(who, sizeof who, "tensor \"%s\"", t->name);
        const char *producer = t->producer >= 0 ? g->nodes[t->producer].name : NULL;
        if (t->is_virtual && !producer)
            s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "%s is virtual but no node produces it", who);
        else if (t->is_virtual && !read[i])
            s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH,
                             "%s is virtual but no node reads it (mark it as an output, or drop it)", who);
        else if (!producer && !read[i])
            s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "%s is an input that no node reads", who);
        else if (producer && t->is_pass_by_value)
            s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "%s is written by node \"%s\" but is pass-by-value", who,
                             producer);
        else if (t->is_virtual && t->is_pass_by_value)
            s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "%s cannot be both virtual and pass-by-value", who);
        else if (t->has_value && !t->is_pass_by_value)
            s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "%s has a fixed value but is not pass-by-value", who);
        if (s)
            break;
        int axis = producer && !t->is_virtual ? overlapping_axis(t->ndim, t->dim, t->stride) : -1;
        if (axis >= 0)
            s = dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH,
                             "%s is written by node \"%s\" but its elements overlap: dim[%d]=%lld with stride[%d]=%lld",
                             who, producer, axis, (long long)t->dim[axis], axis, (long long)t->stride[axis]);
    }
    free(read);
    return s;
}

static dnnjit_status_t resolve_types(dnnjit_graph_t g)
{
    for (int64_t i = 0; i < g->tensor_count; i++) {
        dnnjit__tensor_t *t = &g->tensors[i];
        if ((int)t->data_type < 0 || t->data_type >= DNNJIT_DATA_TYPE_COUNT_)
            return dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "tensor \"%s\": unknown data type %d", t->name,
                                (int)t->data_type);
        t->resolved_type = DNNJIT_DATA_TYPE_NOT_SET;
    }
    for (int64_t i = 0; i < g->tensor_count; i++) {
        dnnjit__tensor_t *t = &g->tensors[i];
        dnnjit_data_type_t type = dnnjit__tensor_type(g, t);
        if (!type)
            return dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH,
                                "tensor \"%s\" has no data type (set one, or the graph's io_data_type)", t->name);
        t->resolved_type = type;
    }
    return DNNJIT_STATUS_SUCCESS;
}

/* Data-type rules of the ops' inputs, checked once every type is resolved (compute types
 * are checked with the shapes, by check_compute_type). */
static dnnjit_status_t check_node_types(dnnjit_graph_t g, const dnnjit__node_t *n)
{
    const dnnjit__op_ports_t *ports = dnnjit__op_ports(n->op);
    bool needs_float = n->op != DNNJIT_OP_POINTWISE;
    for (int i = 0; i < ports->n_in && needs_float; i++) {
        dnnjit__tensor_t *t = dnnjit__tensor(g, n->in[i]);
        if (!t)
            continue;
        dnnjit_data_type_t type = t->resolved_type;
        bool ok = is_float_type(type) || (n->op == DNNJIT_OP_MATMUL && (type == DNNJIT_DATA_TYPE_INT8 ||
                                                                        type == DNNJIT_DATA_TYPE_INT32));
        if (!ok)
            return dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "%s \"%s\": %s (tensor \"%s\") is %s but must be a "
                                "floating-point type", dnnjit__op_label(n->op), n->name, ports->in_names[i], t->name,
                                dnnjit_data_type_name(type));
    }
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_validate(dnnjit_graph_t g)
{
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_validate: graph is NULL");
    if (g->node_count == 0)
        return dnnjit__fail(g, DNNJIT_STATUS_INVALID_GRAPH, "graph \"%s\" has no nodes", g->name);
    int64_t n = g->tensor_count > g->node_count ? g->tensor_count : g->node_count;
    int64_t *scratch = malloc(sizeof *scratch * (size_t)n);
    if (!scratch)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "validate: out of memory");
    /* Inference relies on valid ranks and dims (a zero head count would divide by zero in
     * the SDPA checks), and a graph need not have been built through the checked calls. */
    dnnjit_status_t s = DNNJIT_STATUS_SUCCESS;
    for (int64_t i = 0; i < g->tensor_count && !s; i++)
        s = check_desc(g, &g->tensors[i]);
    if (!s)
        s = check_unique(g);
    if (!s)
        s = order_nodes(g, scratch);
    free(scratch);
    for (int64_t i = 0; i < g->node_count && !s; i++)
        s = dnnjit__infer_node(g, i, true);
    if (!s)
        s = check_tensors(g);
    if (!s)
        s = resolve_types(g);
    for (int64_t i = 0; i < g->node_count && !s; i++)
        s = check_node_types(g, &g->nodes[i]);
    if (s)
        return s;
    dnnjit__assign_missing_uids(g);
    g->validated = true;
    return DNNJIT_STATUS_SUCCESS;
}
