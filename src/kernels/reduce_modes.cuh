// Reduction modes, named as in dnnjit.h (the generators write DJ_MODE by name), and what
// each mode does to one term, to two partial results and to the whole result, in the type T
// the kernel sums in: float in the rows engine, dj_acc (float or double) in the fallback
// engine. Both engines take them from here so that they cannot disagree on what a mode
// means. MIN, MAX and AMAX ignore a NaN next to a number (fmin / fmax, as the reference's),
// which is why NaN is their identity. The mode is a template argument so that this file may
// come before the generated DJ_MODE it is called with.

enum DjReduce {
    DJ_REDUCE_ADD,
    DJ_REDUCE_MUL,
    DJ_REDUCE_MIN,
    DJ_REDUCE_MAX,
    DJ_REDUCE_AMAX,
    DJ_REDUCE_AVG,
    DJ_REDUCE_NORM1,
    DJ_REDUCE_NORM2
};

template <DjReduce MODE, typename T> __device__ __forceinline__ T dj_reduce_term(T x)
{
    if constexpr (MODE == DJ_REDUCE_AMAX || MODE == DJ_REDUCE_NORM1)
        return dj_abs(x);
    else if constexpr (MODE == DJ_REDUCE_NORM2)
        return x * x;
    else
        return x;
}

template <DjReduce MODE, typename T> __device__ __forceinline__ T dj_reduce_combine(T acc, T t)
{
    if constexpr (MODE == DJ_REDUCE_MUL)
        return acc * t;
    else if constexpr (MODE == DJ_REDUCE_MIN)
        return dj_min(acc, t);
    else if constexpr (MODE == DJ_REDUCE_MAX || MODE == DJ_REDUCE_AMAX)
        return dj_max(acc, t);
    else
        return acc + t;
}

template <DjReduce MODE, typename T> __device__ __forceinline__ T dj_reduce_identity()
{
    if constexpr (MODE == DJ_REDUCE_MUL)
        return (T)1;
    else if constexpr (MODE == DJ_REDUCE_MIN || MODE == DJ_REDUCE_MAX || MODE == DJ_REDUCE_AMAX)
        return (T)__int_as_float(0x7fc00000);
    else
        return (T)0;
}

// The result of `count` terms combined into acc.
template <DjReduce MODE, typename T> __device__ __forceinline__ T dj_reduce_finish(T acc, dj_i64 count)
{
    if constexpr (MODE == DJ_REDUCE_AVG)
        return acc / (T)count;
    else if constexpr (MODE == DJ_REDUCE_NORM2)
        return dj_sqrt(acc);
    else
        return acc;
}
