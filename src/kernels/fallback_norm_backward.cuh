// Fallback layer norm (DJ_CENTER) and RMS norm backward, from the saved statistics. X is
// seen as [DJ_ROWS, DJ_COLS] (the other axes, then the normalised ones). One launch does
// both halves without atomics, so the result is deterministic:
//   blocks [0, DJ_ROW_BLOCKS): one thread per row, with g = dy * scale,
//     dx = inv_var * (g - mean(g) - xhat * mean(g * xhat))   (no mean(g) term for RMS norm)
//   the blocks after: one thread per column,
//     dscale = sum over rows of dy * xhat,  dbias = sum over rows of dy
// MEAN reads 0 for RMS norm (it has no such input); DBIAS is stored when the node has it.

__device__ __forceinline__ dj_acc dj_xhat(dj_i64 i, const DjArgs &args)
{
    return (dj_ld_X(dj_off_X(i), args) - dj_ld_MEAN(dj_off_MEAN(i), args)) *
           dj_ld_INV_VARIANCE(dj_off_INV_VARIANCE(i), args);
}

extern "C" __global__ void __launch_bounds__(DJ_BLOCK) dj_fallback_norm_backward(const DjArgs args)
{
    dj_grid_dependency();
    if (blockIdx.x < DJ_ROW_BLOCKS) {
        for (dj_i64 row = dj_first(0); row < DJ_ROWS; row += dj_step(DJ_ROW_BLOCKS)) {
            const dj_i64 base = row * DJ_COLS;
            dj_acc mean_g = 0, mean_gx = 0;
            for (dj_i64 col = 0; col < DJ_COLS; col++) {
                const dj_i64 i = base + col;
                const dj_acc g = dj_ld_DY(dj_off_DY(i), args) * dj_ld_SCALE(dj_off_SCALE(i), args);
                mean_g += g;
                mean_gx += g * dj_xhat(i, args);
            }
            mean_g = DJ_CENTER ? mean_g / (dj_acc)DJ_COLS : (dj_acc)0;
            mean_gx /= (dj_acc)DJ_COLS;
            const dj_acc inv_var = dj_ld_INV_VARIANCE(dj_off_INV_VARIANCE(base), args);
            for (dj_i64 col = 0; col < DJ_COLS; col++) {
                const dj_i64 i = base + col;
                const dj_acc g = dj_ld_DY(dj_off_DY(i), args) * dj_ld_SCALE(dj_off_SCALE(i), args);
                dj_st_DX(dj_off_DX(i), inv_var * (g - mean_g - dj_xhat(i, args) * mean_gx), args);
            }
        }
    } else {
        for (dj_i64 col = dj_first(DJ_ROW_BLOCKS); col < DJ_COLS; col += dj_step(gridDim.x - DJ_ROW_BLOCKS)) {
            dj_acc dscale = 0, dbias = 0;
            for (dj_i64 row = 0; row < DJ_ROWS; row++) {
                const dj_i64 i = row * DJ_COLS + col;
                const dj_acc dy = dj_ld_DY(dj_off_DY(i), args);
                dscale += dy * dj_xhat(i, args);
                dbias += dy;
            }
            dj_st_DSCALE(dj_off_DSCALE(col), dscale, args);
            dj_st_DBIAS(dj_off_DBIAS(col), dbias, args);
        }
    }
}
