// Appended (after common.cuh, which it uses) to every kernel whose scratch begins with counters
// that must read zero when it starts (split-K arrivals, a fused norm backward's tickets; see
// dnnjit__kernel_t's scratch_zero_bytes): execute launches this kernel just before it, rather than
// a memset, which on sm_90 would end the overlap of dependent launches (dj_grid_dependency). It
// waits for the kernel before it, which may still be reading the counters, then lets the kernel
// after it be scheduled, which still waits for this grid to complete. On the H200, between
// back-to-back 65 MB copies, a memset before each took 34.9 us a call against 33.0 with this
// kernel and 32.4 with neither. Letting the next kernel be scheduled before the wait ran the same
// there, but its blocks then took SM space beside the whole of a kernel of one wave (every block
// resident at once, the rest of the SM free), and 4096x32768 bf16 layer norm backward (clusters of
// 8 blocks) went from 258 to 272 us a call.
extern "C" __global__ void __launch_bounds__(256) dj_zero_scratch(unsigned *words, dj_i64 count)
{
    dj_grid_dependency();
    for (dj_i64 i = (dj_i64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (dj_i64)gridDim.x * blockDim.x)
        words[i] = 0u;
}
