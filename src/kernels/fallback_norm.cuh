// Fallback layer norm (DJ_CENTER) and RMS norm: one thread per group of normalised
// elements. X is seen as [DJ_ROWS, DJ_COLS]: the other axes, then the normalised ones,
// which are the last axes of X. Population statistics in two passes:
//   inv_var = 1 / sqrt(var + eps),  y = (x - mean) * inv_var * scale + bias
// Layer norm's second pass corrects the first pass's mean m by the mean d of the deviations
// x - m, and y is computed from (x - m) - d, as the rows engine does for values wider than
// 16 bits (rows_norm.cuh says why): mean = m + d, var = mean((x - m)^2) - d^2.
// MEAN and INV_VARIANCE are stored when the node has them (the TRAINING phase); BIAS reads
// 0 when absent, EPSILON the node's attribute.

extern "C" __global__ void __launch_bounds__(DJ_BLOCK) dj_fallback_norm(const DjArgs args)
{
    dj_grid_dependency();
    const dj_acc eps = dj_ld_EPSILON(dj_off_EPSILON(0), args);
    for (dj_i64 row = dj_first(0); row < DJ_ROWS; row += dj_step(gridDim.x)) {
        const dj_i64 base = row * DJ_COLS;
        dj_acc mean = 0;
        if constexpr (DJ_CENTER) {
            for (dj_i64 col = 0; col < DJ_COLS; col++)
                mean += dj_ld_X(dj_off_X(base + col), args);
            mean /= (dj_acc)DJ_COLS;
        }
        dj_acc deviations = 0, squares = 0;
        for (dj_i64 col = 0; col < DJ_COLS; col++) {
            const dj_acc u = dj_ld_X(dj_off_X(base + col), args) - mean;
            deviations += u;
            squares += u * u;
        }
        const dj_acc correction = DJ_CENTER ? deviations / (dj_acc)DJ_COLS : 0;
        const dj_acc var = squares / (dj_acc)DJ_COLS - correction * correction;
        const dj_acc inv_var = (dj_acc)1 / dj_sqrt((var > 0 ? var : 0) + eps);
        for (dj_i64 col = 0; col < DJ_COLS; col++) {
            const dj_i64 i = base + col;
            const dj_acc xhat = (dj_ld_X(dj_off_X(i), args) - mean - correction) * inv_var;
            dj_st_Y(dj_off_Y(i), xhat * dj_ld_SCALE(dj_off_SCALE(i), args) + dj_ld_BIAS(dj_off_BIAS(i), args), args);
        }
        dj_st_MEAN(dj_off_MEAN(base), mean + correction, args);
        dj_st_INV_VARIANCE(dj_off_INV_VARIANCE(base), inv_var, args);
    }
}
