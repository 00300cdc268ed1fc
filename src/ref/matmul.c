/* Matmul nodes: C[..., m, n] = sum over k of A[..., m, k] * B[..., k, n], summed in float64
 * in increasing k. The batch axes (all but the last two) broadcast numpy-style: the inputs
 * are aligned to the right of C, and an input axis of size 1, or a missing leading one,
 * reads index 0 for every index of C. */
#include "ref/ref.h"

dnnjit_status_t dnnjit__ref_matmul(dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__ref_view_t *const *in,
                                   const dnnjit__ref_view_t *const *out)
{
    (void)g;
    (void)n;
    const dnnjit__ref_view_t *a = in[0], *b = in[1], *c = out[0];
    int nd = c->ndim;
    int64_t k_count = a->dim[a->ndim - 1];
    /* The steps along K in A (its last axis) and in B (its second to last). */
    int64_t a_step = a->stride[a->ndim - 1], b_step = b->stride[b->ndim - 2];
    int64_t idx[DNNJIT_MAX_DIMS] = {0};
    do {
        /* A[..., m, 0] and B[..., 0, n] for C's index [..., m, n]. */
        int64_t a_idx[DNNJIT_MAX_DIMS], b_idx[DNNJIT_MAX_DIMS];
        for (int i = 0; i < nd; i++)
            a_idx[i] = b_idx[i] = idx[i];
        a_idx[nd - 1] = 0;
        b_idx[nd - 2] = 0;
        int64_t a_off = dnnjit__ref_offset(a, nd, a_idx), b_off = dnnjit__ref_offset(b, nd, b_idx);
        double sum = 0;
        for (int64_t k = 0; k < k_count; k++)
            sum += dnnjit__ref_at(a, a_off + k * a_step) * dnnjit__ref_at(b, b_off + k * b_step);
        dnnjit__ref_put(c, nd, idx, sum);
    } while (dnnjit__ref_next(nd, c->dim, idx));
    return DNNJIT_STATUS_SUCCESS;
}
