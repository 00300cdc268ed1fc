/* Softmax nodes, over the last axis of P, in float64. For each row with max m:
 *   S = exp(p - m) / sum(exp(p - m))
 *   STATS_0 = m + log(sum(exp(p - m)))            (LOG_SUM_EXP)
 *   STATS_0 = m, STATS_1 = sum(exp(p - m))        (MAX_SUM_EXP)
 * Subtracting the max changes nothing mathematically and keeps exp from overflowing. An
 * element of -inf gets probability 0; a row whose every element is -inf (or that holds a
 * NaN) gives NaN, as the formula does (-inf - -inf is NaN).
 * Backward, with Y the softmax output: dX = Y * (dY - sum(dY * Y)) over the row. */
#include "ref/ref.h"

#include <math.h>

dnnjit_status_t dnnjit__ref_softmax(dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__ref_view_t *const *in,
                                    const dnnjit__ref_view_t *const *out)
{
    (void)g;
    dnnjit_softmax_stats_t kind = n->attr.softmax.stats;
    const dnnjit__ref_view_t *p = in[0];
    int nd = p->ndim;
    int64_t outer[DNNJIT_MAX_DIMS], inner[DNNJIT_MAX_DIMS];
    dnnjit__ref_split(nd, p->dim, 1u << (nd - 1), outer, inner);
    int64_t oi[DNNJIT_MAX_DIMS] = {0};
    do {
        int64_t ii[DNNJIT_MAX_DIMS] = {0}, pi[DNNJIT_MAX_DIMS];
        /* A NaN element makes the max NaN, so that the whole row is NaN. */
        double max = -INFINITY;
        do {
            dnnjit__ref_add_index(nd, oi, ii, pi);
            double v = dnnjit__ref_get(p, nd, pi);
            max = v > max || isnan(v) ? v : max;
        } while (dnnjit__ref_next(nd, inner, ii));
        double sum = 0;
        do {
            dnnjit__ref_add_index(nd, oi, ii, pi);
            sum += exp(dnnjit__ref_get(p, nd, pi) - max);
        } while (dnnjit__ref_next(nd, inner, ii));
        do {
            dnnjit__ref_add_index(nd, oi, ii, pi);
            dnnjit__ref_put(out[0], nd, pi, exp(dnnjit__ref_get(p, nd, pi) - max) / sum);
        } while (dnnjit__ref_next(nd, inner, ii));
        if (kind == DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP && out[1])
            dnnjit__ref_put(out[1], nd, oi, max + log(sum));
        if (kind == DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP && out[1])
            dnnjit__ref_put(out[1], nd, oi, max);
        if (kind == DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP && out[2])
            dnnjit__ref_put(out[2], nd, oi, sum);
    } while (dnnjit__ref_next(nd, outer, oi));
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit__ref_softmax_backward(dnnjit_graph_t g, const dnnjit__node_t *n,
                                             const dnnjit__ref_view_t *const *in, const dnnjit__ref_view_t *const *out)
{
    (void)g;
    (void)n;
    const dnnjit__ref_view_t *y = in[0], *dy = in[1];
    int nd = y->ndim;
    int64_t outer[DNNJIT_MAX_DIMS], inner[DNNJIT_MAX_DIMS];
    dnnjit__ref_split(nd, y->dim, 1u << (nd - 1), outer, inner);
    int64_t oi[DNNJIT_MAX_DIMS] = {0};
    do {
        int64_t ii[DNNJIT_MAX_DIMS] = {0}, yi[DNNJIT_MAX_DIMS];
        double dot = 0;
        do {
            dnnjit__ref_add_index(nd, oi, ii, yi);
            dot += dnnjit__ref_get(dy, nd, yi) * dnnjit__ref_get(y, nd, yi);
        } while (dnnjit__ref_next(nd, inner, ii));
        do {
            dnnjit__ref_add_index(nd, oi, ii, yi);
            dnnjit__ref_put(out[0], nd, yi, dnnjit__ref_get(y, nd, yi) * (dnnjit__ref_get(dy, nd, yi) - dot));
        } while (dnnjit__ref_next(nd, inner, ii));
    } while (dnnjit__ref_next(nd, outer, oi));
    return DNNJIT_STATUS_SUCCESS;
}
