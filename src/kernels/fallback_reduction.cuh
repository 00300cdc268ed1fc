// Fallback reduction: one thread per element of Y, combining the elements of X it covers
// in row-major order (the reference's order). The index space is X with its kept axes
// first and its reduced axes last, so that row `r` (an element of Y) covers the linear
// indices r * DJ_COLS .. r * DJ_COLS + DJ_COLS - 1. The generator places before this file
// DJ_ROWS, DJ_COLS, DJ_MODE and the accessors of X and Y. The terms are combined in double
// whatever dj_acc is: a float running sum over a long row (300,000 squares in a NORM2) drifts
// past float's own accuracy, and this kernel's speed matters less than being right.

__device__ __forceinline__ double dj_reduce_term(double x)
{
    if constexpr (DJ_MODE == DJ_REDUCE_AMAX || DJ_MODE == DJ_REDUCE_NORM1)
        return dj_abs(x);
    else if constexpr (DJ_MODE == DJ_REDUCE_NORM2)
        return x * x;
    else
        return x;
}

__device__ __forceinline__ double dj_reduce_combine(double acc, double t)
{
    if constexpr (DJ_MODE == DJ_REDUCE_MUL)
        return acc * t;
    else if constexpr (DJ_MODE == DJ_REDUCE_MIN)
        return dj_min(acc, t);
    else if constexpr (DJ_MODE == DJ_REDUCE_MAX || DJ_MODE == DJ_REDUCE_AMAX)
        return dj_max(acc, t);
    else
        return acc + t;
}

__device__ __forceinline__ double dj_reduce_finish(double acc)
{
    if constexpr (DJ_MODE == DJ_REDUCE_AVG)
        return acc / (double)DJ_COLS;
    else if constexpr (DJ_MODE == DJ_REDUCE_NORM2)
        return dj_sqrt(acc);
    else
        return acc;
}

extern "C" __global__ void __launch_bounds__(DJ_BLOCK) dj_fallback_reduction(const DjArgs args)
{
    for (dj_i64 row = dj_first(0); row < DJ_ROWS; row += dj_step(gridDim.x)) {
        const dj_i64 base = row * DJ_COLS;
        double acc = dj_reduce_term(dj_ld_X(dj_off_X(base), args));
        for (dj_i64 col = 1; col < DJ_COLS; col++)
            acc = dj_reduce_combine(acc, dj_reduce_term(dj_ld_X(dj_off_X(base + col), args)));
        dj_st_Y(dj_off_Y(base), (dj_acc)dj_reduce_finish(acc), args);
    }
}
