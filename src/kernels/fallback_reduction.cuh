// Fallback reduction: one thread per element of Y, combining the elements of X it covers
// in row-major order (the reference's order). The index space is X with its kept axes
// first and its reduced axes last, so that row `r` (an element of Y) covers the linear
// indices r * DJ_COLS .. r * DJ_COLS + DJ_COLS - 1. The generator places before this file
// DJ_ROWS, DJ_COLS, DJ_MODE and the accessors of X and Y. The terms are combined in double
// whatever dj_acc is: a float running sum over a long row (300,000 squares in a NORM2) drifts
// past float's own accuracy, and this kernel's speed matters less than being right.

extern "C" __global__ void __launch_bounds__(DJ_BLOCK) dj_fallback_reduction(const DjArgs args)
{
    dj_grid_dependency();
    for (dj_i64 row = dj_first(0); row < DJ_ROWS; row += dj_step(gridDim.x)) {
        const dj_i64 base = row * DJ_COLS;
        const auto term = [&](dj_i64 col) { return dj_reduce_term<DJ_MODE>((double)dj_ld_X(dj_off_X(base + col), args)); };
        double acc = term(0);
        for (dj_i64 col = 1; col < DJ_COLS; col++)
            acc = dj_reduce_combine<DJ_MODE>(acc, term(col));
        dj_st_Y(dj_off_Y(base), (dj_acc)dj_reduce_finish<DJ_MODE>(acc, DJ_COLS), args);
    }
}
