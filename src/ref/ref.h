/* Internal interface of the CPU reference executor (src/ref). The driver (ref.c) checks the
 * variant pack, gives every tensor a view and runs the nodes; each op family has one file
 * that computes a node's outputs from its input views.
 *
 * An op reads float64 inputs (the driver decodes other types first) and writes its
 * outputs into float64 arrays packed row-major by the output's dims; the driver then
 * stores them to the caller's buffers (rounding to the tensor's type) or keeps them as the
 * storage of virtual tensors. Because outputs never alias inputs while a node runs, an op
 * may read its inputs in any order and as often as it likes. */
#ifndef DNNJIT_REF_REF_H
#define DNNJIT_REF_REF_H

#include "graph/graph.h"

/* Where a tensor's elements live: `data` holds elements of `type` at `stride`. Only the
 * driver sees other types than DOUBLE: it decodes a node's inputs into float64 arrays and
 * stores its float64 results, so every view an op receives is a DOUBLE view. */
typedef struct dnnjit__ref_view {
    dnnjit_data_type_t type;
    void *data;
    int ndim;
    int64_t dim[DNNJIT_MAX_DIMS];
    int64_t stride[DNNJIT_MAX_DIMS];
} dnnjit__ref_view_t;

/* ---- indexing ---- */

/* Advances a row-major multi-index over `dim`. Returns false (with idx back at all zeros)
 * after the last index, so that `do { ... } while (dnnjit__ref_next(n, dim, idx));`
 * visits every index once, starting from all zeros. */
bool dnnjit__ref_next(int ndim, const int64_t *dim, int64_t *idx);

/* The element offset in `v` of the multi-index `idx` of rank `ndim` >= v->ndim, with numpy
 * broadcasting: v's axes are aligned to the right of idx, and an axis where v has size 1
 * always reads index 0. */
static inline int64_t dnnjit__ref_offset(const dnnjit__ref_view_t *v, int ndim, const int64_t *idx)
{
    int64_t offset = 0;
    for (int j = 0; j < v->ndim; j++)
        if (v->dim[j] > 1)
            offset += idx[j + ndim - v->ndim] * v->stride[j];
    return offset;
}

/* The element at an offset of a DOUBLE view. */
static inline double dnnjit__ref_at(const dnnjit__ref_view_t *v, int64_t offset)
{
    return ((const double *)v->data)[offset];
}

/* Loads / stores the element of a DOUBLE view at a (broadcast) multi-index, see
 * dnnjit__ref_offset. */
static inline double dnnjit__ref_get(const dnnjit__ref_view_t *v, int ndim, const int64_t *idx)
{
    return dnnjit__ref_at(v, dnnjit__ref_offset(v, ndim, idx));
}

static inline void dnnjit__ref_put(const dnnjit__ref_view_t *v, int ndim, const int64_t *idx, double value)
{
    ((double *)v->data)[dnnjit__ref_offset(v, ndim, idx)] = value;
}

/* Splits dims into the axes of `mask` and the others: `outer` is `dim` with 1 on every
 * axis of mask, `inner` is `dim` with 1 on every other axis. Adding an outer index and an
 * inner index gives an index of `dim`; each op that works on groups of elements (rows,
 * normalised slices, reduced axes) loops over outer, then over inner. */
void dnnjit__ref_split(int ndim, const int64_t *dim, uint32_t mask, int64_t *outer, int64_t *inner);

/* sum[i] = a[i] + b[i] for i < ndim. */
void dnnjit__ref_add_index(int ndim, const int64_t *a, const int64_t *b, int64_t *sum);

/* The mask of the axes a normalisation node normalises over X of rank `ndim`: its last
 * norm_axes axes, or every axis but the first when norm_axes is 0 (as validated). */
uint32_t dnnjit__ref_norm_mask(const dnnjit__node_t *n, int ndim);

/* ---- ops: each fills its present outputs (out[i] NULL where the node has no output i)
 * from its present inputs (in[i] NULL where absent). They fail only for lack of memory. */

typedef dnnjit_status_t dnnjit__ref_op_fn(dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__ref_view_t *const *in,
                                         const dnnjit__ref_view_t *const *out);

dnnjit__ref_op_fn dnnjit__ref_matmul;
dnnjit__ref_op_fn dnnjit__ref_pointwise;
dnnjit__ref_op_fn dnnjit__ref_reduction;
dnnjit__ref_op_fn dnnjit__ref_softmax;
dnnjit__ref_op_fn dnnjit__ref_softmax_backward;
dnnjit__ref_op_fn dnnjit__ref_layernorm;
dnnjit__ref_op_fn dnnjit__ref_rmsnorm;
dnnjit__ref_op_fn dnnjit__ref_norm_backward;
dnnjit__ref_op_fn dnnjit__ref_sdpa;

#endif
