/* The CPU reference executor, dnnjit_graph_execute_reference: the definition of what a
 * graph computes. Every GPU result is compared against it, so it favours being plainly
 * right over being fast.
 *
 * What it computes, precisely:
 * - Every element is read with dnnjit_element_load at its tensor's data type and strides
 *   (a stride of 0 simply re-reads one element), and every op computes in float64
 *   whatever the node's compute data type says. Each node decodes each input element
 *   once, before it runs.
 * - Virtual tensors hold float64 values in arrays this call allocates, packed by their
 *   dims: intermediates are not rounded to the intermediate data type.
 * - A non-virtual output is rounded to its data type when stored (dnnjit_element_store:
 *   nearest even, FP8 E4M3 saturating, integers rounded and clamped, BOOLEAN as 0/1). A
 *   tensor has one value, the one in its buffer, so a later node that reads a non-virtual
 *   output reads the rounded stored value.
 * - A node computes all of its outputs before storing any of them, so an output buffer
 *   may be the same memory as one of the node's input buffers (in-place).
 * - Nodes run in the order validation leaves them in (producers before consumers).
 * - Pass-by-value tensors with a fixed value use it and take no buffer; without one, the
 *   pack points to one element of the tensor's data type.
 *
 * The variant pack must give exactly one non-NULL buffer to every non-virtual tensor that
 * has no fixed value, and nothing else: an entry for a virtual tensor or for a fixed-value
 * scalar is refused too, since no memory would ever be read or written through it. */
#include "ref/ref.h"

#include <stdlib.h>

/* What the call knows about one tensor. */
typedef struct ref_tensor {
    dnnjit__ref_view_t view;
    bool bound;     /* view.data is set (a caller buffer, the fixed value or a computed array) */
    bool owned;     /* view.data was allocated by this call (a virtual tensor) */
    size_t entry;   /* the pack entry that gave the buffer, when one did */
    double value;   /* the storage of a fixed pass-by-value scalar */
} ref_tensor_t;

static dnnjit__ref_op_fn *const op_fns[DNNJIT_OP_COUNT_] = {
    [DNNJIT_OP_MATMUL] = dnnjit__ref_matmul,
    [DNNJIT_OP_POINTWISE] = dnnjit__ref_pointwise,
    [DNNJIT_OP_REDUCTION] = dnnjit__ref_reduction,
    [DNNJIT_OP_SOFTMAX] = dnnjit__ref_softmax,
    [DNNJIT_OP_SOFTMAX_BACKWARD] = dnnjit__ref_softmax_backward,
    [DNNJIT_OP_LAYERNORM] = dnnjit__ref_layernorm,
    [DNNJIT_OP_LAYERNORM_BACKWARD] = dnnjit__ref_norm_backward,
    [DNNJIT_OP_RMSNORM] = dnnjit__ref_rmsnorm,
    [DNNJIT_OP_RMSNORM_BACKWARD] = dnnjit__ref_norm_backward,
    [DNNJIT_OP_SDPA] = dnnjit__ref_sdpa,
};

/* A view of a tensor's shape holding elements of `type` at `data`, with the tensor's own
 * strides or, when `packed`, row-major packed ones. */
static dnnjit__ref_view_t make_view(const dnnjit__tensor_t *t, dnnjit_data_type_t type, void *data, bool packed)
{
    dnnjit__ref_view_t v = {.type = type, .data = data, .ndim = t->ndim};
    for (int i = 0; i < t->ndim; i++) {
        v.dim[i] = t->dim[i];
        v.stride[i] = t->stride[i];
    }
    if (packed)
        dnnjit__packed_strides(t->ndim, t->dim, NULL, v.stride);
    return v;
}

/* Gives each tensor its caller buffer or fixed value, checking the pack as described at
 * the top of this file. */
static dnnjit_status_t bind_pack(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n, ref_tensor_t *rt)
{
    for (size_t e = 0; e < n; e++) {
        int64_t i = 0;
        while (i < g->tensor_count && g->tensors[i].uid != pack[e].uid)
            i++;
        if (i == g->tensor_count)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                                "variant pack entry %zu has uid %lld, but no tensor of graph \"%s\" has that uid", e,
                                (long long)pack[e].uid, g->name);
        const dnnjit__tensor_t *t = &g->tensors[i];
        long long uid = (long long)t->uid;
        if (!pack[e].ptr)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                                "tensor \"%s\" (uid %lld) has a NULL pointer in variant pack entry %zu", t->name, uid, e);
        if (rt[i].bound)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                                "tensor \"%s\" (uid %lld) appears twice in the variant pack (entries %zu and %zu)",
                                t->name, uid, rt[i].entry, e);
        if (t->is_virtual)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                                "tensor \"%s\" (uid %lld) is virtual and takes no buffer, but variant pack entry %zu "
                                "gives one (mark it as an output to have it written)",
                                t->name, uid, e);
        if (t->has_value)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                                "tensor \"%s\" (uid %lld) is pass-by-value with its value fixed in the graph and "
                                "takes no buffer, but variant pack entry %zu gives one",
                                t->name, uid, e);
        rt[i].view = make_view(t, t->resolved_type, pack[e].ptr, false);
        rt[i].bound = true;
        rt[i].entry = e;
    }
    for (int64_t i = 0; i < g->tensor_count; i++) {
        const dnnjit__tensor_t *t = &g->tensors[i];
        if (t->has_value) {
            rt[i].value = t->value;
            rt[i].view = make_view(t, DNNJIT_DATA_TYPE_DOUBLE, &rt[i].value, true);
            rt[i].bound = true;
        } else if (!t->is_virtual && !rt[i].bound) {
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "tensor \"%s\" (uid %lld) has no buffer in the variant pack",
                                t->name, (long long)t->uid);
        }
    }
    return DNNJIT_STATUS_SUCCESS;
}

/* Copies every element of src into dst (same dims), converting between their data types
 * with dnnjit_element_load / dnnjit_element_store: the only place where a tensor's data
 * type matters. */
static void copy_elements(const dnnjit__ref_view_t *dst, const dnnjit__ref_view_t *src)
{
    int64_t idx[DNNJIT_MAX_DIMS] = {0};
    do {
        double value = dnnjit_element_load(src->type, src->data, dnnjit__ref_offset(src, src->ndim, idx));
        dnnjit_element_store(dst->type, dst->data, dnnjit__ref_offset(dst, dst->ndim, idx), value);
    } while (dnnjit__ref_next(src->ndim, src->dim, idx));
}

/* Gives `v` a zeroed float64 array packed by tensor t's dims; the node and port name the
 * failure when memory runs out. */
static dnnjit_status_t new_array(dnnjit_graph_t g, const dnnjit__node_t *n, const char *port, const dnnjit__tensor_t *t,
                                 dnnjit__ref_view_t *v)
{
    /* Validation bounds every tensor's element count, so the byte size fits. */
    double *data = calloc((size_t)dnnjit__numel(t->ndim, t->dim), sizeof(double));
    *v = make_view(t, DNNJIT_DATA_TYPE_DOUBLE, data, true);
    if (!data)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "%s \"%s\": out of memory for %s (tensor \"%s\")",
                            dnnjit__op_label(n->op), n->name, port, t->name);
    return DNNJIT_STATUS_SUCCESS;
}

/* Runs one node: decodes its inputs that are not float64 yet into float64 arrays (so that
 * ops reading an element many times, such as matmul, decode it once), computes its outputs
 * into fresh float64 arrays, then stores the non-virtual outputs to their buffers and
 * keeps the virtual ones as their tensors' storage. */
static dnnjit_status_t run_node(dnnjit_graph_t g, const dnnjit__node_t *n, ref_tensor_t *rt)
{
    const dnnjit__op_ports_t *ports = dnnjit__op_ports(n->op);
    const dnnjit__ref_view_t *in[DNNJIT__MAX_INPUTS] = {0};
    const dnnjit__ref_view_t *out[DNNJIT__MAX_OUTPUTS] = {0};
    dnnjit__ref_view_t decoded[DNNJIT__MAX_INPUTS] = {0}, result[DNNJIT__MAX_OUTPUTS] = {0};
    dnnjit_status_t s = DNNJIT_STATUS_SUCCESS;
    for (int i = 0; i < ports->n_in && !s; i++) {
        if (n->in[i] == DNNJIT_TENSOR_NONE)
            continue;
        const dnnjit__ref_view_t *src = &rt[n->in[i] - 1].view;
        in[i] = src;
        if (src->type == DNNJIT_DATA_TYPE_DOUBLE)
            continue;
        s = new_array(g, n, ports->in_names[i], &g->tensors[n->in[i] - 1], &decoded[i]);
        if (!s)
            copy_elements(&decoded[i], src);
        in[i] = &decoded[i];
    }
    for (int i = 0; i < ports->n_out && !s; i++) {
        if (n->out[i] == DNNJIT_TENSOR_NONE)
            continue;
        s = new_array(g, n, ports->out_names[i], &g->tensors[n->out[i] - 1], &result[i]);
        out[i] = &result[i];
    }
    if (!s)
        s = op_fns[n->op](g, n, in, out);
    for (int i = 0; i < ports->n_out; i++) {
        if (!out[i])
            continue;
        ref_tensor_t *dst = &rt[n->out[i] - 1];
        if (!s && g->tensors[n->out[i] - 1].is_virtual) {
            dst->view = result[i];
            dst->bound = dst->owned = true;
            continue;
        }
        if (!s)
            copy_elements(&dst->view, &result[i]);
        free(result[i].data);
    }
    for (int i = 0; i < ports->n_in; i++)
        free(decoded[i].data);
    return s;
}

dnnjit_status_t dnnjit_graph_execute_reference(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n)
{
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_execute_reference: graph is NULL");
    dnnjit_status_t s = dnnjit_graph_validate(g);
    if (s)
        return s;
    if (!pack && n > 0)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                            "dnnjit_graph_execute_reference: the variant pack is NULL but has %zu entries", n);
    ref_tensor_t *rt = calloc((size_t)g->tensor_count, sizeof *rt);
    if (!rt)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "dnnjit_graph_execute_reference: out of memory");
    s = bind_pack(g, pack, n, rt);
    for (int64_t i = 0; i < g->node_count && !s; i++)
        s = run_node(g, &g->nodes[i], rt);
    for (int64_t i = 0; i < g->tensor_count; i++)
        if (rt[i].owned)
            free(rt[i].view.data);
    free(rt);
    return s;
}
