// Pointwise engine: one thread per element (or per DJ_VEC consecutive elements when every
// tensor the group touches is dense in the output's order and the pointers are aligned),
// grid-stride loop. The code generator places before this file: DJ_NUMEL, DJ_BLOCK,
// DJ_VEC, dj_aligned(args), dj_compute(i, args) and dj_compute_vec(i0, args).

extern "C" __global__ void __launch_bounds__(DJ_BLOCK) dj_pointwise(const DjArgs args)
{
    dj_grid_dependency();
    const dj_i64 step = (dj_i64)gridDim.x * DJ_BLOCK;
    const dj_i64 first = (dj_i64)blockIdx.x * DJ_BLOCK + threadIdx.x;
    dj_i64 scalar_from = 0;
    if constexpr (DJ_VEC > 1) {
        if (dj_aligned(args)) {
            for (dj_i64 v = first; v < DJ_NUMEL / DJ_VEC; v += step)
                dj_compute_vec(v * DJ_VEC, args);
            scalar_from = DJ_NUMEL / DJ_VEC * DJ_VEC;
        }
    }
    for (dj_i64 i = scalar_from + first; i < DJ_NUMEL; i += step)
        dj_compute(i, args);
}
