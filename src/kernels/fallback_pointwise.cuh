// Fallback pointwise: one thread per output element, grid-stride loop. The generator places
// before this file DJ_NUMEL and dj_element(i, args), which loads the inputs at their
// broadcast offsets, evaluates the group's nodes in float and stores its outputs.

extern "C" __global__ void __launch_bounds__(DJ_BLOCK) dj_fallback_pointwise(const DjArgs args)
{
    dj_grid_dependency();
    for (dj_i64 i = dj_first(0); i < DJ_NUMEL; i += dj_step(gridDim.x))
        dj_element(i, args);
}
