// Rows engine, reduction over the row (the innermost axes of X): each row gives one element
// of Y. Long rows may be split into segments (DJ_SPLIT) reduced by different threads and
// combined through the scratch. The modes are named as in dnnjit.h; MIN, MAX and AMAX ignore a NaN next to a number
// (fminf / fmaxf, as the reference's fmin / fmax), which is why NaN is their identity.

enum DjRowReduce { DJ_ROW_ADD, DJ_ROW_MUL, DJ_ROW_MIN, DJ_ROW_MAX, DJ_ROW_AMAX, DJ_ROW_AVG, DJ_ROW_NORM1, DJ_ROW_NORM2 };

__device__ __forceinline__ float dj_reduce_term(float x)
{
    if constexpr (DJ_MODE == DJ_ROW_AMAX || DJ_MODE == DJ_ROW_NORM1)
        return fabsf(x);
    else if constexpr (DJ_MODE == DJ_ROW_NORM2)
        return x * x;
    else
        return x;
}

__device__ __forceinline__ float dj_reduce_combine(float acc, float t)
{
    if constexpr (DJ_MODE == DJ_ROW_MUL)
        return acc * t;
    else if constexpr (DJ_MODE == DJ_ROW_MIN)
        return fminf(acc, t);
    else if constexpr (DJ_MODE == DJ_ROW_MAX || DJ_MODE == DJ_ROW_AMAX)
        return fmaxf(acc, t);
    else
        return acc + t;
}

__device__ __forceinline__ float dj_reduce_identity()
{
    if constexpr (DJ_MODE == DJ_ROW_MUL)
        return 1.0f;
    else if constexpr (DJ_MODE == DJ_ROW_MIN || DJ_MODE == DJ_ROW_MAX || DJ_MODE == DJ_ROW_AMAX)
        return __int_as_float(0x7fc00000);
    else
        return 0.0f;
}

__device__ __forceinline__ float dj_reduce_finish(float acc)
{
    if constexpr (DJ_MODE == DJ_ROW_AVG)
        return acc / (float)DJ_COLS;
    else if constexpr (DJ_MODE == DJ_ROW_NORM2)
        return sqrtf(acc);
    else
        return acc;
}

template <int V> __device__ __forceinline__ void dj_row_op(const DjRow<V> &rw, const DjArgs &args)
{
    using R = DjRow<V>;
    DjCache<float, V> cache; // one pass: nothing is kept
    const auto x_in = [&](dj_i64 row, int col, float (&v)[V], bool first) { dj_in_X<V>(row, col, v, args, first); };
    float acc = dj_reduce_identity();
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float x[V];
        dj_chunk(rw, cache, k, true, dj_reduce_identity(), x_in, x);
        if (rw.has(k)) {
#pragma unroll
            for (int e = 0; e < V; e++)
                acc = dj_reduce_combine(acc, dj_reduce_term(x[e]));
        }
    }
    acc = dj_row_reduce(acc, rw.sub, rw.lane, [](float a, float b) { return dj_reduce_combine(a, b); });
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
            acc = dj_reduce_combine(acc, all[s]);
    }
    dj_rout_Y(rw.row, dj_reduce_finish(acc), args);
}
