#include "layout.h"

int64_t layout_numel(const dnnjit_tensor_info_t *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->dim[i];
    return n;
}

int64_t layout_span(const dnnjit_tensor_info_t *t)
{
    int64_t span = 1;
    for (int i = 0; i < t->ndim; i++)
        span += (t->dim[i] - 1) * t->stride[i];
    return span;
}

int64_t layout_offset(const dnnjit_tensor_info_t *t, int64_t linear)
{
    int64_t off = 0;
    for (int i = t->ndim - 1; i >= 0; i--) {
        off += linear % t->dim[i] * t->stride[i];
        linear /= t->dim[i];
    }
    return off;
}

double layout_uniform(uint64_t *rng)
{
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    return (double)(*rng >> 11) / 9007199254740992.0;
}
