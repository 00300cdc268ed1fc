// Rows engine, reduction over the row (the innermost axes of X): each row gives one element
// of Y. Long rows may be split into segments (DJ_SPLIT) reduced by different threads and
// combined through the scratch. What each mode does is in reduce_modes.cuh, which the
// fallback engine shares; the rows engine sums in float.

template <int V> __device__ __forceinline__ void dj_row_op(const DjRow<V> &rw, const DjArgs &args)
{
    using R = DjRow<V>;
    DjCache<float, V> cache; // one pass: nothing is kept
    const auto x_in = [&](dj_i64 row, int col, float (&v)[V], bool first) { dj_in_X<V>(row, col, v, args, first); };
    float acc = dj_reduce_identity<DJ_MODE, float>();
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float x[V];
        dj_chunk(rw, cache, k, true, dj_reduce_identity<DJ_MODE, float>(), x_in, x);
        if (rw.has(k)) {
#pragma unroll
            for (int e = 0; e < V; e++)
                acc = dj_reduce_combine<DJ_MODE>(acc, dj_reduce_term<DJ_MODE>(x[e]));
        }
    }
    acc = dj_row_reduce(acc, rw.sub, rw.lane, [](float a, float b) { return dj_reduce_combine<DJ_MODE>(a, b); });
    if (!rw.valid || rw.lane != 0)
        return;
    if constexpr (DJ_SPLIT > 1) {
        // The segment's result goes to the scratch (after DJ_SCRATCH_COUNTERS arrival
        // counters, one per row); the segment that arrives last combines the row's results
        // in segment order, so that the result does not depend on the order of arrival.
        unsigned *const arrivals = (unsigned *)args.ptr[DJ_SCRATCH_SLOT];
        float *const parts = (float *)(arrivals + DJ_SCRATCH_COUNTERS) + rw.row * DJ_SPLIT;
        parts[rw.segment] = acc;
        __threadfence();
        if (atomicAdd(arrivals + rw.row, 1u) != DJ_SPLIT - 1)
            return;
        __threadfence();
        // Volatile: the other segments' results come from other SMs, past this one's L1.
        const volatile float *const all = parts;
        acc = all[0];
        for (int s = 1; s < DJ_SPLIT; s++)
            acc = dj_reduce_combine<DJ_MODE>(acc, all[s]);
    }
    dj_rout_Y(rw.row, dj_reduce_finish<DJ_MODE>(acc, DJ_COLS), args);
}
