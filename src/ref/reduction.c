/* Reduction nodes: Y keeps X's rank with 1 on each reduced axis (attr.reduction.
 * resolved_axes, filled by validation), and each element of Y combines the elements of X
 * that agree with it on the other axes, visited in row-major order, in float64:
 *   ADD sum(x)   MUL prod(x)   MIN min(x)   MAX max(x)   AMAX max(|x|)
 *   AVG sum(x) / count         NORM1 sum(|x|)            NORM2 sqrt(sum(x*x))
 * MIN, MAX and AMAX use fmin / fmax, which ignore a NaN next to a number (a group of NaN
 * only gives NaN). */
#include "ref/ref.h"

#include <math.h>

/* What each element contributes before combining. */
static double term(dnnjit_reduction_mode_t mode, double x)
{
    switch (mode) {
    case DNNJIT_REDUCTION_AMAX:
    case DNNJIT_REDUCTION_NORM1:
        return fabs(x);
    case DNNJIT_REDUCTION_NORM2:
        return x * x;
    default:
        return x;
    }
}

static double combine(dnnjit_reduction_mode_t mode, double acc, double t)
{
    switch (mode) {
    case DNNJIT_REDUCTION_MUL:
        return acc * t;
    case DNNJIT_REDUCTION_MIN:
        return fmin(acc, t);
    case DNNJIT_REDUCTION_MAX:
    case DNNJIT_REDUCTION_AMAX:
        return fmax(acc, t);
    default:
        return acc + t;
    }
}

static double finish(dnnjit_reduction_mode_t mode, double acc, int64_t count)
{
    switch (mode) {
    case DNNJIT_REDUCTION_AVG:
        return acc / (double)count;
    case DNNJIT_REDUCTION_NORM2:
        return sqrt(acc);
    default:
        return acc;
    }
}

dnnjit_status_t dnnjit__ref_reduction(dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__ref_view_t *const *in,
                                      const dnnjit__ref_view_t *const *out)
{
    (void)g;
    const dnnjit__ref_view_t *x = in[0], *y = out[0];
    dnnjit_reduction_mode_t mode = n->attr.reduction.mode;
    int nd = x->ndim;
    int64_t outer[DNNJIT_MAX_DIMS], inner[DNNJIT_MAX_DIMS];
    dnnjit__ref_split(nd, x->dim, n->attr.reduction.resolved_axes, outer, inner);
    int64_t count = dnnjit__numel(nd, inner);
    int64_t oi[DNNJIT_MAX_DIMS] = {0};
    do {
        int64_t ii[DNNJIT_MAX_DIMS] = {0}, xi[DNNJIT_MAX_DIMS];
        bool first = true;
        double acc = 0;
        do {
            dnnjit__ref_add_index(nd, oi, ii, xi);
            double t = term(mode, dnnjit__ref_get(x, nd, xi));
            acc = first ? t : combine(mode, acc, t);
            first = false;
        } while (dnnjit__ref_next(nd, inner, ii));
        dnnjit__ref_put(y, nd, oi, finish(mode, acc, count));
    } while (dnnjit__ref_next(nd, outer, oi));
    return DNNJIT_STATUS_SUCCESS;
}
