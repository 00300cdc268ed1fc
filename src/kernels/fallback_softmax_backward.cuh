// Fallback softmax backward over the last axis: one thread per row ([DJ_ROWS, DJ_COLS]),
// dX = Y * (dY - sum(dY * Y)).

extern "C" __global__ void __launch_bounds__(DJ_BLOCK) dj_fallback_softmax_backward(const DjArgs args)
{
    dj_grid_dependency();
    for (dj_i64 row = dj_first(0); row < DJ_ROWS; row += dj_step(gridDim.x)) {
        const dj_i64 base = row * DJ_COLS;
        dj_acc dot = 0;
        for (dj_i64 col = 0; col < DJ_COLS; col++)
            dot += dj_ld_DY(dj_off_DY(base + col), args) * dj_ld_Y(dj_off_Y(base + col), args);
        for (dj_i64 col = 0; col < DJ_COLS; col++) {
            const dj_acc y = dj_ld_Y(dj_off_Y(base + col), args);
            dj_st_DX(dj_off_DX(base + col), y * (dj_ld_DY(dj_off_DY(base + col), args) - dot), args);
        }
    }
}
