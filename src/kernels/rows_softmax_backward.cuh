// Rows engine, softmax backward over the row: dX = Y * (dY - sum(dY * Y)).

template <int V> __device__ __forceinline__ void dj_row_op(const DjRow<V> &rw, const DjArgs &args)
{
    using R = DjRow<V>;
    DjCache<DjKept_Y, V> y_cache;
    DjCache<DjKept_DY, V> dy_cache;
    const auto y_in = [&](dj_i64 row, int col, float (&v)[V], bool first) { dj_in_Y<V>(row, col, v, args, first); };
    const auto dy_in = [&](dj_i64 row, int col, float (&v)[V], bool first) { dj_in_DY<V>(row, col, v, args, first); };
    float dot = 0.0f;
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float y[V], dy[V];
        dj_chunk(rw, y_cache, k, true, 0.0f, y_in, y);
        dj_chunk(rw, dy_cache, k, true, 0.0f, dy_in, dy);
#pragma unroll
        for (int e = 0; e < V; e++)
            dot += dy[e] * y[e];
    }
    dot = dj_row_sum(dot, rw);
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float y[V], dy[V], dx[V];
        dj_chunk(rw, y_cache, k, false, 0.0f, y_in, y);
        dj_chunk(rw, dy_cache, k, false, 0.0f, dy_in, dy);
        if (rw.has(k)) {
#pragma unroll
            for (int e = 0; e < V; e++)
                dx[e] = y[e] * (dy[e] - dot);
            dj_out_DX<V>(rw.row, rw.col(k), dx, args);
        }
    }
}
