// Rows engine: the kernel entry (see rows_common.cuh). Blocks [0, DJ_COL_BLOCKS) do the op's
// per-column work; the others loop over the rows (or row segments), DJ_RPB at a time. A
// fused plan (DJ_FUSED_BLOCKS > 0) runs the op's own dj_rows_fused instead, and an op that
// works on columns only (DJ_COLUMN_OP: a reduction over the rows) has no row blocks.

// Each defined only by the ops that use it; never instantiated for the others.
template <int V> __device__ __forceinline__ void dj_row_op(const DjRow<V> &rw, const DjArgs &args);
template <int V> __device__ __forceinline__ void dj_col_op(const DjArgs &args);
template <int V> __device__ __forceinline__ void dj_rows_fused(const DjArgs &args);

// The column blocks, then the row blocks' loop.
template <int V> __device__ __forceinline__ void dj_rows_loop(const DjArgs &args)
{
    if constexpr (DJ_COL_BLOCKS > 0) {
        if ((int)blockIdx.x < (int)DJ_COL_BLOCKS) {
            dj_col_op<V>(args);
            return;
        }
    }
    const int lane = threadIdx.x % DJ_TPR, sub = threadIdx.x / DJ_TPR;
    const dj_i64 step = (dj_i64)(gridDim.x - DJ_COL_BLOCKS) * DJ_RPB, items = DJ_ROWS * DJ_SPLIT;
    // Work items are rows, or segments of rows; the loop bound is the same for every thread
    // of a block, as the reductions need.
    for (dj_i64 base = (dj_i64)(blockIdx.x - DJ_COL_BLOCKS) * DJ_RPB; base < items; base += step) {
        const dj_i64 item = base + sub;
        dj_row_op<V>(DjRow<V>{item / DJ_SPLIT, (int)(item % DJ_SPLIT), lane, sub, item < items}, args);
    }
}

template <int V> __device__ __forceinline__ void dj_rows_run(const DjArgs &args)
{
    if constexpr (DJ_FUSED_BLOCKS > 0)
        dj_rows_fused<V>(args);
    else if constexpr (DJ_COLUMN_OP)
        dj_col_op<V>(args);
    else
        dj_rows_loop<V>(args);
}

// DJ_LAUNCH_BOUNDS: the block size; for a fused plan also the blocks per SM its grid
// assumes (and for a cluster plan its __cluster_dims__), for a register plan with little to
// hold an SM full of blocks.
extern "C" __global__ void DJ_LAUNCH_BOUNDS dj_rows(const DjArgs args)
{
    dj_grid_dependency();
    if constexpr (DJ_VEC > 1) {
        if (dj_aligned(args)) {
            dj_rows_run<DJ_VEC>(args);
            return;
        }
    }
    dj_rows_run<1>(args);
}
