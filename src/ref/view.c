/* Multi-index arithmetic of the reference executor: every element is reached through its
 * logical index and the tensor's strides, never through assumptions about layout. */
#include "ref/ref.h"

bool dnnjit__ref_next(int ndim, const int64_t *dim, int64_t *idx)
{
    for (int i = ndim - 1; i >= 0; i--) {
        if (++idx[i] < dim[i])
            return true;
        idx[i] = 0;
    }
    return false;
}

void dnnjit__ref_split(int ndim, const int64_t *dim, uint32_t mask, int64_t *outer, int64_t *inner)
{
    for (int i = 0; i < ndim; i++) {
        bool in_mask = mask >> i & 1;
        outer[i] = in_mask ? 1 : dim[i];
        inner[i] = in_mask ? dim[i] : 1;
    }
}

void dnnjit__ref_add_index(int ndim, const int64_t *a, const int64_t *b, int64_t *sum)
{
    for (int i = 0; i < ndim; i++)
        sum[i] = a[i] + b[i];
}

uint32_t dnnjit__ref_norm_mask(const dnnjit__node_t *n, int ndim)
{
    int k = n->attr.norm.norm_axes ? n->attr.norm.norm_axes : ndim - 1;
    return ((1u << ndim) - 1) & ~((1u << (ndim - k)) - 1);
}
