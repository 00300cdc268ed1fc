// Fallback scaled dot-product attention: one thread per query row (b, h, i), two passes
// over the kept keys (the max score, then the sum of exp(s - max) and the weighted sum of
// V), as the reference computes it. Each of Q, K, V, O and STATS is indexed over its own
// dims ([b, h, s, d]). Query head h reads key head h / (DJ_HQ / DJ_HK) and value head
// h / (DJ_HQ / DJ_HV); the causal mask keeps key j when j <= i + (DJ_SKV - DJ_SQ). A row
// that keeps no key gives O = 0 and STATS = -inf. The sum of P is taken before P is rounded
// to DjP (V's type when that is 16-bit or narrower) for P*V, as tensor-core kernels do. The
// generator places before this file the dims, DJ_SCALE, DJ_CAUSAL, DjP and the accessors.

extern "C" __global__ void __launch_bounds__(DJ_BLOCK) dj_fallback_sdpa(const DjArgs args)
{
    dj_grid_dependency();
    constexpr dj_i64 rows = DJ_B * DJ_HQ * DJ_SQ;
    for (dj_i64 row = dj_first(0); row < rows; row += dj_step(gridDim.x)) {
        const dj_i64 i = row % DJ_SQ, h = row / DJ_SQ % DJ_HQ, b = row / DJ_SQ / DJ_HQ;
        const dj_i64 k_rows = (b * DJ_HK + h / (DJ_HQ / DJ_HK)) * DJ_SKV;
        const dj_i64 v_rows = (b * DJ_HV + h / (DJ_HQ / DJ_HV)) * DJ_SKV;
        dj_i64 kept = DJ_CAUSAL ? i + (DJ_SKV - DJ_SQ) + 1 : DJ_SKV;
        kept = kept < 0 ? 0 : kept > DJ_SKV ? DJ_SKV : kept;
        dj_acc q[DJ_D], acc[DJ_DV];
        for (dj_i64 e = 0; e < DJ_D; e++)
            q[e] = dj_ld_Q(dj_off_Q(row * DJ_D + e), args);
        for (dj_i64 e = 0; e < DJ_DV; e++)
            acc[e] = 0;
        dj_acc max = dj_neg_inf();
        for (dj_i64 j = 0; j < kept; j++) {
            dj_acc dot = 0;
            for (dj_i64 e = 0; e < DJ_D; e++)
                dot += q[e] * dj_ld_K(dj_off_K((k_rows + j) * DJ_D + e), args);
            max = dj_max(max, DJ_SCALE * dot);
        }
        dj_acc sum = 0;
        for (dj_i64 j = 0; j < kept; j++) {
            dj_acc dot = 0;
            for (dj_i64 e = 0; e < DJ_D; e++)
                dot += q[e] * dj_ld_K(dj_off_K((k_rows + j) * DJ_D + e), args);
            const dj_acc p = dj_exp(DJ_SCALE * dot - max);
            sum += p;
            const dj_acc p_v = dj_to_acc(dj_from_acc<DjP>(p));
            for (dj_i64 e = 0; e < DJ_DV; e++)
                acc[e] += p_v * dj_ld_V(dj_off_V((v_rows + j) * DJ_DV + e), args);
        }
        for (dj_i64 e = 0; e < DJ_DV; e++)
            dj_st_O(dj_off_O(row * DJ_DV + e), kept ? acc[e] / sum : (dj_acc)0, args);
        dj_st_STATS(dj_off_STATS(row), kept ? max + dj_log(sum) : dj_neg_inf(), args);
    }
}
