// Fallback matmul: one thread per element of C[batch, m, n], accumulating A[batch, m, k] *
// B[batch, k, n] in dj_acc in increasing k (the reference's order), then the fused
// epilogue. The generator places before this file DJ_NUMEL, DJ_M, DJ_N, DJ_K, the steps
// along K in A and B (DJ_A_KSTRIDE, DJ_B_KSTRIDE), the accessors of A over the index space
// [batch, M, K] and of B over [batch, K, N] (both broadcast into C's batch axes), and
// dj_epilogue(i, acc, args), which applies the group's pointwise nodes and stores every
// output of the group for element i of C.

extern "C" __global__ void __launch_bounds__(DJ_BLOCK) dj_fallback_gemm(const DjArgs args)
{
    dj_grid_dependency();
    for (dj_i64 i = dj_first(0); i < DJ_NUMEL; i += dj_step(gridDim.x)) {
        const dj_i64 n = i % DJ_N, batch_m = i / DJ_N, batch = batch_m / DJ_M;
        const dj_i64 a0 = dj_off_A(batch_m * DJ_K);
        const dj_i64 b0 = dj_off_B(batch * DJ_K * DJ_N + n);
        dj_acc acc = 0;
        for (dj_i64 k = 0; k < DJ_K; k++)
            acc += dj_ld_A(a0 + k * DJ_A_KSTRIDE, args) * dj_ld_B(b0 + k * DJ_B_KSTRIDE, args);
        dj_epilogue(i, acc, args);
    }
}
