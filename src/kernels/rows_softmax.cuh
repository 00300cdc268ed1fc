// Rows engine, softmax over the row (the last axis): three passes as the reference computes
// it (the max, the sum of exp(p - max), the outputs). A NaN in a row makes its max, and so
// the whole row, NaN. DJ_STATS is the node's dnnjit_softmax_stats_t: 1 (LOG_SUM_EXP) stores
// STATS_0 = max + log(sum), 2 (MAX_SUM_EXP) STATS_0 = max and STATS_1 = sum.

template <int V> __device__ __forceinline__ void dj_row_op(const DjRow<V> &rw, const DjArgs &args)
{
    using R = DjRow<V>;
    DjCache<DjKept_P, V> cache;
    const auto p_in = [&](dj_i64 row, int col, float (&v)[V], bool first) { dj_in_P<V>(row, col, v, args, first); };
    const float neg_inf = __int_as_float(0xff800000);
    float max = neg_inf;
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float x[V];
        dj_chunk(rw, cache, k, true, neg_inf, p_in, x);
#pragma unroll
        for (int e = 0; e < V; e++)
            max = dj_max_nan(max, x[e]);
    }
    max = dj_row_reduce(max, rw.sub, rw.lane, [](float a, float b) { return dj_max_nan(a, b); });
    float sum = 0.0f;
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float x[V];
        dj_chunk(rw, cache, k, false, neg_inf, p_in, x);
        if (rw.has(k)) {
#pragma unroll
            for (int e = 0; e < V; e++)
                sum += dj_exp_shifted(x[e], max);
        }
    }
    sum = dj_row_sum(sum, rw);
    const float inv_sum = 1.0f / sum;
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float x[V], s[V];
        dj_chunk(rw, cache, k, false, neg_inf, p_in, x);
        if (rw.has(k)) {
#pragma unroll
            for (int e = 0; e < V; e++)
                s[e] = dj_exp_shifted(x[e], max) * inv_sum;
            dj_out_S<V>(rw.row, rw.col(k), s, args);
        }
    }
    if (rw.valid && rw.lane == 0) {
        if constexpr (DJ_STATS == 1) {
            dj_rout_STATS_0(rw.row, max + logf(sum), args);
        } else if constexpr (DJ_STATS == 2) {
            dj_rout_STATS_0(rw.row, max, args);
            dj_rout_STATS_1(rw.row, sum, args);
        }
    }
}
