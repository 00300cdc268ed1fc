// Rows engine, layer norm (DJ_CENTER) and RMS norm over the row. Population statistics in
// two passes (the mean, then the sum of squared deviations), as the reference computes
// them:  inv_var = 1 / sqrt(var + eps),  y = (x - mean) * inv_var * scale + bias.
// MEAN and INV_VARIANCE are stored when the group writes them (the TRAINING phase).

template <int V> __device__ __forceinline__ void dj_row_op(const DjRow<V> &rw, const DjArgs &args)
{
    using R = DjRow<V>;
    DjCache<DjKept_X, V> cache;
    const auto x_in = [&](dj_i64 row, int col, float (&v)[V], bool first) { dj_in_X<V>(row, col, v, args, first); };
    float mean = 0.0f;
    if constexpr (DJ_CENTER) {
        float sum = 0.0f;
#pragma unroll(R::UNROLL)
        for (int k = 0; k < R::CHUNKS; k++) {
            float x[V];
            dj_chunk(rw, cache, k, true, 0.0f, x_in, x);
#pragma unroll
            for (int e = 0; e < V; e++)
                sum += x[e];
        }
        mean = dj_row_sum(sum, rw) / (float)DJ_COLS;
    }
    float squares = 0.0f;
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float x[V];
        dj_chunk(rw, cache, k, !DJ_CENTER, 0.0f, x_in, x);
        if (rw.has(k)) {
#pragma unroll
            for (int e = 0; e < V; e++)
                squares += (x[e] - mean) * (x[e] - mean);
        }
    }
    const float inv_var = rsqrtf(dj_row_sum(squares, rw) / (float)DJ_COLS + dj_eps(args));
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float x[V], scale[V], bias[V], y[V];
        dj_chunk(rw, cache, k, false, 0.0f, x_in, x);
        if (rw.has(k)) {
            dj_par_SCALE<V>(rw.col(k), scale, args);
            dj_par_BIAS<V>(rw.col(k), bias, args);
#pragma unroll
            for (int e = 0; e < V; e++)
                y[e] = (x[e] - mean) * inv_var * scale[e] + bias[e];
            dj_out_Y<V>(rw.row, rw.col(k), y, args);
        }
    }
    if (rw.valid && rw.lane == 0) {
        dj_rout_MEAN(rw.row, mean, args);
        dj_rout_INV_VARIANCE(rw.row, inv_var, args);
    }
}
