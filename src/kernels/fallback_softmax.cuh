// Fallback softmax over the last axis: one thread per row of P ([DJ_ROWS, DJ_COLS]), three
// passes (max, sum of exp(p - max), outputs), as the reference computes it. A NaN in a row
// makes its max NaN and so the whole row NaN. DJ_STATS is the node's dnnjit_softmax_stats_t:
// 1 (LOG_SUM_EXP) stores STATS_0 = max + log(sum), 2 (MAX_SUM_EXP) STATS_0 = max and
// STATS_1 = sum.

extern "C" __global__ void __launch_bounds__(DJ_BLOCK) dj_fallback_softmax(const DjArgs args)
{
    dj_grid_dependency();
    for (dj_i64 row = dj_first(0); row < DJ_ROWS; row += dj_step(gridDim.x)) {
        const dj_i64 base = row * DJ_COLS;
        dj_acc max = dj_neg_inf();
        for (dj_i64 col = 0; col < DJ_COLS; col++) {
            const dj_acc v = dj_ld_P(dj_off_P(base + col), args);
            max = v > max || v != v ? v : max;
        }
        // Summed in double: tens of thousands of float terms added in float drift by about
        // 1e-5 (the H200 measured 1.14e-5 on rows of 65537), the fp32 tolerance itself.
        double total = 0;
        for (dj_i64 col = 0; col < DJ_COLS; col++)
            total += (double)dj_exp(dj_ld_P(dj_off_P(base + col), args) - max);
        const dj_acc sum = (dj_acc)total;
        for (dj_i64 col = 0; col < DJ_COLS; col++)
            dj_st_S(dj_off_S(base + col), dj_exp(dj_ld_P(dj_off_P(base + col), args) - max) / sum, args);
        if constexpr (DJ_STATS == 1) {
            dj_st_STATS_0(dj_off_STATS_0(base), max + dj_log(sum), args);
        } else if constexpr (DJ_STATS == 2) {
            dj_st_STATS_0(dj_off_STATS_0(base), max, args);
            dj_st_STATS_1(dj_off_STATS_1(base), sum, args);
        }
    }
}
