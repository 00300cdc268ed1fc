// Rows engine, layer norm (DJ_CENTER) and RMS norm over the row. Population statistics in
// two passes:  inv_var = 1 / sqrt(var + eps),  y = (x - mean) * inv_var * scale + bias.
// MEAN and INV_VARIANCE are stored when the group writes them (the TRAINING phase).
//
// The first pass's float sum of a row far from zero is off by up to the row's length in
// ulps of its values, and even the float nearest the mean is half an ulp of the values
// off, which every x - mean carries: on the H200, fp32 rows of 77 values of 1000 +- 1
// came out 6.5e-5 off the float64 reference (2e-5 with the mean corrected but rounded to
// one float; now 3e-6 at most, gpu-rows.norms_far_from_zero). For values with more
// precision than a 16-bit float, layer norm therefore keeps the mean as the first pass's
// m plus a correction d, the mean of the deviations x - m (which are exact, x and m being
// close), summed in the second pass with their squares: mean = m + d, var = mean((x -
// m)^2) - d^2 (the corrected two-pass algorithm), and y is computed from (x - m) - d.
// 16-bit values carry their own rounding of 2^-11 (fp16) or 2^-8 (bf16) of the mean,
// above the float sums' for rows of up to thousands of values, so they skip the second
// sum: it cost 6% of the speed of 16-bit layer norm on the H200 (32768x1000 fp16 3.63 ->
// 3.43 TB/s). Nor does 16-bit layer norm merge the mean and the variance into one
// reduction of per-thread moments (count, mean and squared deviations, combined by Chan's
// update, which does not cancel as a sum of squares would): merging each chunk's moments
// into the thread's took 32768x1000 fp16 from 36.1 to 51.3 us and 32768x4096 bf16 from 136
// to 228 on the H200; merging only the threads' moments still needs 39 registers against
// 32 for the 4096-wide plan (which then no longer fills an SM) and 40 against 38 for the
// 1000-wide one, for at most the one reduction saved.
constexpr bool DJ_CORRECTED_MEAN = DJ_CENTER && sizeof(DjKept_X) > 2;

// Scale and bias are read for each row after its last reduction: a block works on few rows
// (two for 1000-wide rows) before it exits, so there are no later rows to hold them for, and
// holding them across the reductions spills at the 32 registers an SM full of threads
// leaves. These reads are what layer norm forward costs beyond softmax (on 32768x1000 fp16,
// 35.9 us against 34.6, RMS norm 35.1). Tried on the H200 and left out: prefetching them
// into L1 (prefetch.global.L1) at the row's start or after the first reduction, three times
// slower; reading them with L1::evict_last, 2% slower. Cache hints on the rows' own
// accesses (the engine's, not this op's) gained nothing either: loads and stores with .cs
// (evict-first) ran softmax and RMS norm forward 1-2% faster on 32768x1000 fp16, layer
// norm no faster and norm backward 1-2% slower; the loads alone with .cs, 3% slower.
template <int V> __device__ __forceinline__ void dj_row_op(const DjRow<V> &rw, const DjArgs &args)
{
    using R = DjRow<V>;
    DjCache<DjKept_X, V> cache;
    const auto x_in = [&](dj_i64 row, int col, float (&v)[V], bool first) { dj_in_X<V>(row, col, v, args, first); };
    float mean = 0.0f;
    if constexpr (DJ_CENTER) {
        float sum = 0.0f;
#pragma unroll(R::UNROLL)
        for (int k = 0; k < R::CHUNKS; k++) {
            float x[V];
            dj_chunk(rw, cache, k, true, 0.0f, x_in, x);
#pragma unroll
            for (int e = 0; e < V; e++)
                sum += x[e];
        }
        mean = dj_row_sum(sum, rw) / (float)DJ_COLS;
    }
    dj_pair deviations = {0.0f, 0.0f}; // sums of x - mean and of its square
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float x[V];
        dj_chunk(rw, cache, k, !DJ_CENTER, 0.0f, x_in, x);
        if (rw.has(k)) {
#pragma unroll
            for (int e = 0; e < V; e++) {
                const float u = x[e] - mean;
                if constexpr (DJ_CORRECTED_MEAN)
                    deviations.a += u;
                deviations.b += u * u;
            }
        }
    }
    // The correction to the mean (0 unless DJ_CORRECTED_MEAN) and the variance.
    float correction = 0.0f, var;
    if constexpr (DJ_CORRECTED_MEAN) {
        deviations = dj_row_sum(deviations, rw);
        correction = deviations.a / (float)DJ_COLS;
        var = fmaxf(deviations.b / (float)DJ_COLS - correction * correction, 0.0f);
    } else {
        var = dj_row_sum(deviations.b, rw) / (float)DJ_COLS;
    }
    const float inv_var = rsqrtf(var + dj_eps(args));
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float x[V], scale[V], bias[V], y[V];
        dj_chunk(rw, cache, k, false, 0.0f, x_in, x);
        if (rw.has(k)) {
            dj_par_SCALE<V>(rw.col(k), scale, args);
            dj_par_BIAS<V>(rw.col(k), bias, args);
#pragma unroll
            for (int e = 0; e < V; e++)
                y[e] = (x[e] - mean - correction) * inv_var * scale[e] + bias[e];
            dj_out_Y<V>(rw.row, rw.col(k), y, args);
        }
    }
    if (rw.valid && rw.lane == 0) {
        dj_rout_MEAN(rw.row, mean + correction, args);
        dj_rout_INV_VARIANCE(rw.row, inv_var, args);
    }
}
