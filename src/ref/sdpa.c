/* Scaled dot-product attention, in float64. For batch b, query head h and query row i:
 *   s_j = scale * sum_d Q[b, h, i, d] * K[b, hk, j, d]   for each kept key j
 *   O[b, h, i, :] = sum_j exp(s_j - m) V[b, hv, j, :] / sum_j exp(s_j - m),  m = max_j s_j
 *   Stats[b, h, i, 0] = m + log(sum_j exp(s_j - m))   (the natural log-sum-exp)
 * where scale is attn_scale when given, else 1/sqrt(d); query head h reads key head
 * hk = h / (h_q / h_k) and value head hv = h / (h_q / h_v) (grouped-query attention); and
 * the kept keys are all of them, or with the causal mask those with j <= i + (s_kv - s_q).
 * When s_q > s_kv the causal mask keeps no key for the first s_q - s_kv rows: such a row
 * gives O = 0 and Stats = -inf (the log of an empty sum), not NaN. */
#include "ref/ref.h"

#include <math.h>
#include <stdlib.h>

/* The offset of row [b, h, s, 0] of a 4-d view. */
static int64_t row_offset(const dnnjit__ref_view_t *t, int64_t b, int64_t h, int64_t s)
{
    return dnnjit__ref_offset(t, 4, (const int64_t[]){b, h, s, 0});
}

/* Element e of the row at `row` (stepping along the last axis). */
static double row_load(const dnnjit__ref_view_t *t, int64_t row, int64_t e)
{
    return dnnjit__ref_at(t, row + e * t->stride[3]);
}

dnnjit_status_t dnnjit__ref_sdpa(dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__ref_view_t *const *in,
                                 const dnnjit__ref_view_t *const *out)
{
    const dnnjit__ref_view_t *q = in[0], *k = in[1], *v = in[2], *o = out[0], *stats = out[1];
    int64_t batch = q->dim[0], hq = q->dim[1], sq = q->dim[2], d = q->dim[3];
    int64_t hk = k->dim[1], skv = k->dim[2], hv = v->dim[1], dv = v->dim[3];
    double scale = n->attr.sdpa.has_attn_scale ? n->attr.sdpa.attn_scale : 1.0 / sqrt((double)d);
    /* One row of weights (s_kv) and one row of O (d_v). */
    double *weight = malloc(sizeof *weight * (size_t)(skv + dv));
    if (!weight)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "sdpa \"%s\": out of memory for a row of %lld scores",
                            n->name, (long long)skv);
    double *acc = weight + skv;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t h = 0; h < hq; h++)
            for (int64_t i = 0; i < sq; i++) {
                /* Keys 0 .. kept-1 survive the mask. */
                int64_t kept = n->attr.sdpa.use_causal_mask ? i + (skv - sq) + 1 : skv;
                kept = kept < 0 ? 0 : kept > skv ? skv : kept;
                int64_t q_row = row_offset(q, b, h, i);
                double max = -INFINITY;
                for (int64_t j = 0; j < kept; j++) {
                    int64_t k_row = row_offset(k, b, h / (hq / hk), j);
                    double dot = 0;
                    for (int64_t e = 0; e < d; e++)
                        dot += row_load(q, q_row, e) * row_load(k, k_row, e);
                    weight[j] = scale * dot;
                    max = fmax(max, weight[j]);
                }
                double sum = 0;
                for (int64_t j = 0; j < kept; j++) {
                    weight[j] = exp(weight[j] - max);
                    sum += weight[j];
                }
                for (int64_t e = 0; e < dv; e++)
                    acc[e] = 0;
                for (int64_t j = 0; j < kept; j++) {
                    int64_t v_row = row_offset(v, b, h / (hq / hv), j);
                    for (int64_t e = 0; e < dv; e++)
                        acc[e] += weight[j] * row_load(v, v_row, e);
                }
                for (int64_t e = 0; e < dv; e++)
                    dnnjit__ref_put(o, 4, (const int64_t[]){b, h, i, e}, kept ? acc[e] / sum : 0.0);
                if (stats)
                    dnnjit__ref_put(stats, 4, (const int64_t[]){b, h, i, 0}, kept ? max + log(sum) : -INFINITY);
            }
    free(weight);
    return DNNJIT_STATUS_SUCCESS;
}
