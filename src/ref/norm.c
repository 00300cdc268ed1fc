/* Layer norm and RMS norm, forward and backward, in float64.
 *
 * The normalised axes are the last norm_axes axes of X (every axis but the first when
 * norm_axes is 0); a "group" is the set of elements of X that agree on all the other axes,
 * and count is its size. Per group, with population statistics:
 *   layernorm: mean = sum(x) / count, var = sum((x - mean)^2) / count
 *   rmsnorm:   mean = 0 (not computed), var = sum(x^2) / count
 *   inv_var = 1 / sqrt(var + eps),  xhat = (x - mean) * inv_var
 *   y = xhat * scale + bias         (rmsnorm without BIAS: + 0)
 * eps is the single element of the EPSILON tensor when the node has one (a fixed
 * pass-by-value value or a buffer), else the attribute (1e-5 when left 0). The TRAINING
 * phase also writes MEAN (layernorm) and INV_VARIANCE, one element per group.
 *
 * Backward reads the saved statistics from its MEAN and INV_VARIANCE inputs (it does not
 * recompute them). With g = dy * scale and means taken over each group:
 *   layernorm: dx = inv_var * (g - mean(g) - xhat * mean(g * xhat))
 *   rmsnorm:   dx = inv_var * (g - xhat * mean(g * xhat))
 *   dscale = sum of dy * xhat and dbias = sum of dy, over the non-normalised axes.
 * These are the exact gradients of the forward when the statistics are exact. */
#include "ref/ref.h"

#include <math.h>

/* Runs the forward pass; `center` subtracts the mean (layernorm) and `mean_out` /
 * `inv_out` receive the statistics when present. */
static void norm_forward(const dnnjit__node_t *n, const dnnjit__ref_view_t *const *in, const dnnjit__ref_view_t *y,
                         bool center, const dnnjit__ref_view_t *mean_out, const dnnjit__ref_view_t *inv_out)
{
    const dnnjit__ref_view_t *x = in[0], *scale = in[1], *bias = in[2], *eps_t = in[3];
    int nd = x->ndim;
    int64_t zero[DNNJIT_MAX_DIMS] = {0};
    double eps = eps_t ? dnnjit__ref_get(eps_t, eps_t->ndim, zero) : n->attr.norm.epsilon_value;
    int64_t outer[DNNJIT_MAX_DIMS], inner[DNNJIT_MAX_DIMS];
    dnnjit__ref_split(nd, x->dim, dnnjit__ref_norm_mask(n, nd), outer, inner);
    double count = (double)dnnjit__numel(nd, inner);
    int64_t oi[DNNJIT_MAX_DIMS] = {0};
    do {
        int64_t ii[DNNJIT_MAX_DIMS] = {0}, xi[DNNJIT_MAX_DIMS];
        double mean = 0;
        if (center) {
            do {
                dnnjit__ref_add_index(nd, oi, ii, xi);
                mean += dnnjit__ref_get(x, nd, xi);
            } while (dnnjit__ref_next(nd, inner, ii));
            mean /= count;
        }
        double var = 0;
        do {
            dnnjit__ref_add_index(nd, oi, ii, xi);
            double d = dnnjit__ref_get(x, nd, xi) - mean;
            var += d * d;
        } while (dnnjit__ref_next(nd, inner, ii));
        double inv_var = 1.0 / sqrt(var / count + eps);
        do {
            dnnjit__ref_add_index(nd, oi, ii, xi);
            double xhat = (dnnjit__ref_get(x, nd, xi) - mean) * inv_var;
            double b = bias ? dnnjit__ref_get(bias, nd, xi) : 0.0;
            dnnjit__ref_put(y, nd, xi, xhat * dnnjit__ref_get(scale, nd, xi) + b);
        } while (dnnjit__ref_next(nd, inner, ii));
        if (mean_out)
            dnnjit__ref_put(mean_out, nd, oi, mean);
        if (inv_out)
            dnnjit__ref_put(inv_out, nd, oi, inv_var);
    } while (dnnjit__ref_next(nd, outer, oi));
}

dnnjit_status_t dnnjit__ref_layernorm(dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__ref_view_t *const *in,
                                      const dnnjit__ref_view_t *const *out)
{
    (void)g;
    norm_forward(n, in, out[0], true, out[1], out[2]);
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit__ref_rmsnorm(dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__ref_view_t *const *in,
                                    const dnnjit__ref_view_t *const *out)
{
    (void)g;
    norm_forward(n, in, out[0], false, NULL, out[1]);
    return DNNJIT_STATUS_SUCCESS;
}

/* xhat at an index of X, from the saved statistics (broadcast over the group). */
static double saved_xhat(const dnnjit__ref_view_t *x, const dnnjit__ref_view_t *mean, const dnnjit__ref_view_t *inv_var,
                         int nd, const int64_t *xi)
{
    double mu = mean ? dnnjit__ref_get(mean, nd, xi) : 0.0;
    return (dnnjit__ref_get(x, nd, xi) - mu) * dnnjit__ref_get(inv_var, nd, xi);
}

dnnjit_status_t dnnjit__ref_norm_backward(dnnjit_graph_t g, const dnnjit__node_t *n,
                                          const dnnjit__ref_view_t *const *in, const dnnjit__ref_view_t *const *out)
{
    (void)g;
    bool layer = n->op == DNNJIT_OP_LAYERNORM_BACKWARD;
    const dnnjit__ref_view_t *dy = in[0], *x = in[1], *scale = in[2];
    const dnnjit__ref_view_t *mean = layer ? in[3] : NULL, *inv_var = layer ? in[4] : in[3];
    int nd = x->ndim;
    uint32_t mask = dnnjit__ref_norm_mask(n, nd);
    int64_t outer[DNNJIT_MAX_DIMS], inner[DNNJIT_MAX_DIMS];
    dnnjit__ref_split(nd, x->dim, mask, outer, inner);
    double count = (double)dnnjit__numel(nd, inner);
    int64_t oi[DNNJIT_MAX_DIMS] = {0};
    do {
        int64_t ii[DNNJIT_MAX_DIMS] = {0}, xi[DNNJIT_MAX_DIMS];
        double mean_g = 0, mean_gx = 0;
        do {
            dnnjit__ref_add_index(nd, oi, ii, xi);
            double gr = dnnjit__ref_get(dy, nd, xi) * dnnjit__ref_get(scale, nd, xi);
            mean_g += gr;
            mean_gx += gr * saved_xhat(x, mean, inv_var, nd, xi);
        } while (dnnjit__ref_next(nd, inner, ii));
        mean_g = layer ? mean_g / count : 0.0;
        mean_gx /= count;
        double r = dnnjit__ref_get(inv_var, nd, oi);
        do {
            dnnjit__ref_add_index(nd, oi, ii, xi);
            double gr = dnnjit__ref_get(dy, nd, xi) * dnnjit__ref_get(scale, nd, xi);
            dnnjit__ref_put(out[0], nd, xi, r * (gr - mean_g - saved_xhat(x, mean, inv_var, nd, xi) * mean_gx));
        } while (dnnjit__ref_next(nd, inner, ii));
    } while (dnnjit__ref_next(nd, outer, oi));

    /* The parameter gradients: now the groups run over the non-normalised axes. */
    dnnjit__ref_split(nd, x->dim, ~mask & ((1u << nd) - 1), outer, inner);
    int64_t pi[DNNJIT_MAX_DIMS] = {0};
    do {
        int64_t ii[DNNJIT_MAX_DIMS] = {0}, xi[DNNJIT_MAX_DIMS];
        double dscale = 0, dbias = 0;
        do {
            dnnjit__ref_add_index(nd, pi, ii, xi);
            double d = dnnjit__ref_get(dy, nd, xi);
            dscale += d * saved_xhat(x, mean, inv_var, nd, xi);
            dbias += d;
        } while (dnnjit__ref_next(nd, inner, ii));
        dnnjit__ref_put(out[1], nd, pi, dscale);
        if (out[2])
            dnnjit__ref_put(out[2], nd, pi, dbias);
    } while (dnnjit__ref_next(nd, outer, pi));
    return DNNJIT_STATUS_SUCCESS;
}
