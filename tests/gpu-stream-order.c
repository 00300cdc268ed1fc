/* GPU: back-to-back executes on one stream. On sm_90 and later execute launches every
 * kernel as dependent on the one before it in the stream (programmatic stream
 * serialization), so that its blocks may start while that one finishes; its first act
 * (griddepcontrol.wait, dj_grid_dependency) must hold them until the earlier kernel's
 * writes are visible. These tests fail when it does not: a chain of executes each reading
 * what the one before wrote, on the legacy stream and on a stream of its own, and plans
 * whose execute zeroes counters (dj_zero_scratch) before their kernel, run back to back on
 * one workspace, each with inputs and outputs of its own. Skipped (77) without a GPU. */
#include "gpu_buffers.h"

/* Executes in a chain; sets of buffers run back to back. */
enum { CHAIN = 64, SETS = 6 };

/* y = x + one on 4096 x 4096 floats (64 MB, tens of microseconds a call: many waves of
 * blocks, so a kernel that read early would read the previous kernel's output half
 * written), executed CHAIN times, each call's output the next one's input. The values are
 * small integers, exact in float: after the chain every element is its start plus CHAIN. */
static void chain_on(dnnjit__cu_stream_t stream, const char *label)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    enum { SIDE = 4096 };
    const size_t count = (size_t)SIDE * SIDE, bytes = count * sizeof(float);
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(SIDE, SIDE), NULL, 0);
    dnnjit_tensor_t one = tu_tensor(g, "one", 2, TU_DIMS(1, 1), NULL, 0);
    dnnjit_tensor_t y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, x, one, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    gb_build(g, NULL);
    float *host = malloc(bytes);
    assert_non_null(host);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < count; i++)
        host[i] = (float)(int)(1000.0 * layout_uniform(&rng));
    const float unit = 1.0f;
    dnnjit__cu_deviceptr_t buf[2], d_one;
    GB_CU(cu->cuMemAlloc(&buf[0], bytes));
    GB_CU(cu->cuMemAlloc(&buf[1], bytes));
    GB_CU(cu->cuMemAlloc(&d_one, sizeof unit));
    GB_CU(cu->cuMemcpyHtoD(buf[0], host, bytes));
    GB_CU(cu->cuMemcpyHtoD(d_one, &unit, sizeof unit));
    GB_CU(cu->cuMemsetD32Async(buf[1], 0x7fc00000u, count, NULL)); /* NaN */
    GB_CU(cu->cuStreamSynchronize(NULL));
    for (int i = 0; i < CHAIN; i++) {
        dnnjit_variant_t pack[] = {{tu_uid(g, x), (void *)(uintptr_t)buf[i % 2]},
                                   {tu_uid(g, one), (void *)(uintptr_t)d_one},
                                   {tu_uid(g, y), (void *)(uintptr_t)buf[(i + 1) % 2]}};
        TU_OK(dnnjit_graph_execute(g, pack, 3, NULL, stream));
    }
    GB_CU(cu->cuStreamSynchronize(stream));
    float *got = malloc(bytes);
    assert_non_null(got);
    GB_CU(cu->cuMemcpyDtoH(got, buf[CHAIN % 2], bytes));
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < count; i++)
        if (got[i] != host[i] + CHAIN && wrong++ == 0)
            first = i;
    if (wrong)
        fail_msg("%s: %zu of %zu elements are not their start + %d after the chain (element %zu: %g, want %g)", label,
                 wrong, count, CHAIN, first, got[first], host[first] + CHAIN);
    printf("  %-28s %d chained executes: every element exact\n", label, CHAIN);
    free(got);
    free(host);
    GB_CU(cu->cuMemFree(buf[0]));
    GB_CU(cu->cuMemFree(buf[1]));
    GB_CU(cu->cuMemFree(d_one));
    dnnjit_graph_destroy(g);
}

static void chain_legacy_stream(void **state)
{
    (void)state;
    chain_on(NULL, "legacy stream");
}

static void chain_own_stream(void **state)
{
    (void)state;
    dnnjit__cu_stream_t stream;
    GB_CU(dnnjit__cuda()->cuStreamCreate(&stream, DNNJIT__CU_STREAM_NON_BLOCKING));
    chain_on(stream, "non-blocking stream");
    GB_CU(dnnjit__cuda()->cuStreamDestroy(stream));
}

/* Builds `g` with the plan named by `fragment`, then runs SETS executes back to back on
 * set 0's workspace, twice over, each with the inputs and poisoned outputs of a set of its
 * own, and compares every set with the reference. */
static void back_to_back(dnnjit_graph_t g, const char *fragment, double tol, const char *label)
{
    gb_build(g, fragment);
    gb_set_t sets[SETS];
    for (int i = 0; i < SETS; i++) {
        gb_alloc(g, &sets[i]);
        sets[i].rng += (uint64_t)i * 0x632be59bd9b4e019ull;
        gb_fill(&sets[i], 0.5, 1.5);
    }
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < SETS; i++)
            TU_OK(dnnjit_graph_execute(g, sets[i].device_pack, sets[i].n, gb_workspace(&sets[0]), NULL));
    GB_CU(dnnjit__cuda()->cuStreamSynchronize(NULL));
    for (int i = 0; i < SETS; i++) {
        double err = gb_error(g, &sets[i]);
        if (!(err < tol))
            fail_msg("%s: set %d: relative error %g exceeds %g", label, i, err, tol);
    }
    printf("  %-28s %d back-to-back executes on one workspace match the reference\n", label, 2 * SETS);
    for (int i = 0; i < SETS; i++)
        gb_free(&sets[i]);
}

/* A split-K GEMM: each execute zeroes the tiles' arrival counters before the kernel. */
static void split_k(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_matmul_graph(DNNJIT_DATA_TYPE_HALF, 1, 64, 4096, 64);
    back_to_back(g, "_splitk", tu_tolerance(DNNJIT_DATA_TYPE_HALF), "split-K GEMM");
    dnnjit_graph_destroy(g);
}

/* Layer norm backward on a fused plan: each execute zeroes the tickets and arrival counter
 * its row and column blocks meet through. */
static void fused_norm_backward(void **state)
{
    (void)state;
    enum { ROWS = 4096, COLS = 1000 };
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(ROWS, COLS), NULL, 0);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(ROWS, COLS), NULL, 0);
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, COLS), NULL, 0);
    dnnjit_tensor_t mean = tu_tensor(g, "mean", 2, TU_DIMS(ROWS, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t inv = tu_tensor(g, "inv", 2, TU_DIMS(ROWS, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t dx, ds, db;
    TU_OK(dnnjit_graph_layernorm_backward(g, dy, x, scale, mean, inv, NULL, &dx, &ds, &db));
    TU_OK(dnnjit_tensor_set_output(g, dx, true));
    TU_OK(dnnjit_tensor_set_output(g, ds, true));
    TU_OK(dnnjit_tensor_set_output(g, db, true));
    back_to_back(g, "_fused", tu_tolerance(DNNJIT_DATA_TYPE_HALF), "fused layer norm backward");
    dnnjit_graph_destroy(g);
}

int main(int argc, char **argv)
{
    /* Kernels compile into memory only: the test leaves nothing on disk. */
    setenv("DNNJIT_CACHE", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chain_legacy_stream),
        cmocka_unit_test(chain_own_stream),
        cmocka_unit_test(split_k),
        cmocka_unit_test(fused_norm_backward),
    };
    return TU_GPU_MAIN(tests, argc, argv, tu_gpu_available);
}
