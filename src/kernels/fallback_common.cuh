// Helpers shared by the fallback engine's kernels. The fallback kernels are the simplest
// correct ones: one thread per output element or per row, plain loops in the reference's
// order, so they are deterministic and easy to trust. Values are carried in dj_acc (float,
// or double when the node computes in DOUBLE), which the code generator defines before this
// file together with DJ_BLOCK, the threads per block. After this file come the generated
// constants and the accessors of each tensor the kernel touches, named after the op's ports:
//   dj_i64 dj_off_P(i)          element offset in P of the element at linear index i of
//                               the kernel's index space (P broadcasts into it)
//   dj_acc dj_ld_P(off, args)   the value at that offset (a pass-by-value input reads its
//                               literal or args.scalar slot, an absent optional input its
//                               default: 0, or the attribute for EPSILON)
//   void   dj_st_P(off, v, args) stores it (an output nobody reads is not stored)

// Exact conversions to double where the type has more precision than float.
__device__ __forceinline__ double dj_to_double(double v) { return v; }
__device__ __forceinline__ double dj_to_double(float v) { return v; }
__device__ __forceinline__ double dj_to_double(int v) { return v; }
__device__ __forceinline__ double dj_to_double(dj_i64 v) { return (double)v; }
template <typename T> __device__ __forceinline__ double dj_to_double(T v) { return dj_to_float(v); }

template <typename T> __device__ __forceinline__ dj_acc dj_to_acc(T v)
{
    if constexpr (dj_same_type<dj_acc, double>::value)
        return dj_to_double(v);
    else
        return dj_to_float(v);
}

template <typename T> __device__ __forceinline__ T dj_from_acc(dj_acc v)
{
    if constexpr (dj_same_type<T, double>::value)
        return (double)v;
    else
        return dj_from_float<T>((float)v);
}

__device__ __forceinline__ dj_acc dj_neg_inf() { return (dj_acc)__int_as_float(0xff800000); }

// The first index of this thread and the step between its indices when `blocks` blocks of
// DJ_BLOCK threads, starting at block `first_block`, share the work.
__device__ __forceinline__ dj_i64 dj_first(unsigned first_block)
{
    return (dj_i64)(blockIdx.x - first_block) * DJ_BLOCK + threadIdx.x;
}
__device__ __forceinline__ dj_i64 dj_step(unsigned blocks) { return (dj_i64)blocks * DJ_BLOCK; }
