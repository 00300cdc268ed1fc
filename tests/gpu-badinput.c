/* GPU: the variant packs execute refuses on a device, which test-badinput.c cannot show
 * without one: host memory given as a device buffer, a misaligned device pointer, a
 * missing buffer, and device memory given for a pass-by-value scalar (which is read on the
 * host, so that accepting it would crash). A good pack still runs. Skipped (77) without a
 * GPU. */
/* setenv is POSIX. */
#define _POSIX_C_SOURCE 200809L

#include "gpu_util.h"

#include "jit/jit.h"

#include <stdlib.h>
#include <string.h>

/* y = relu(x) * s on [4, 8] FLOAT, s a pass-by-value FLOAT given by pointer; uids x 1,
 * s 2, y 3. */
static dnnjit_graph_t scaled_relu(void)
{
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(4, 8), NULL, 0), s, r, y;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "s", .ndim = 1, .dim = TU_DIMS(1),
                                                          .is_pass_by_value = true},
                              &s));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "relu", .mode = DNNJIT_POINTWISE_RELU_FWD}, x,
                                 0, 0, &r));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "mul", .mode = DNNJIT_POINTWISE_MUL}, r, s, 0,
                                 &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    TU_OK(dnnjit_tensor_set_uid(g, x, 1));
    TU_OK(dnnjit_tensor_set_uid(g, s, 2));
    TU_OK(dnnjit_tensor_set_uid(g, y, 3));
    const dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A;
    TU_OK(dnnjit_graph_build(g, &a, 1));
    return g;
}

static void *device_alloc(size_t bytes)
{
    dnnjit__cu_deviceptr_t p = 0;
    TU_OK(dnnjit__cu_check(dnnjit__cuda()->cuMemAlloc(&p, bytes), "cuMemAlloc"));
    return (void *)(uintptr_t)p;
}

static void device_free(void *p)
{
    TU_OK(dnnjit__cu_check(dnnjit__cuda()->cuMemFree((dnnjit__cu_deviceptr_t)(uintptr_t)p), "cuMemFree"));
}

static void bad_packs_on_a_device(void **state)
{
    (void)state;
    dnnjit_graph_t g = scaled_relu();
    float *dx = device_alloc(32 * sizeof(float)), *dy = device_alloc(32 * sizeof(float));
    float *ds = device_alloc(sizeof(float));
    float *hx = calloc(32, sizeof(float)), hy[32], s = 2;
    assert_non_null(hx);
    TU_FAILS(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, hx}, {2, &s}, {3, dy}}, 3, NULL, NULL),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"x\" (uid 1): ");
    TU_FAILS(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, hx}, {2, &s}, {3, dy}}, 3, NULL, NULL),
             DNNJIT_STATUS_BAD_PARAM, "is ordinary host memory, not device memory");
    TU_FAILS(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, dx}, {2, &s}, {3, hy}}, 3, NULL, NULL),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"mul::OUT_0\" (uid 3): ");
    TU_FAILS(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, (char *)dx + 2}, {2, &s}, {3, dy}}, 3, NULL, NULL),
             DNNJIT_STATUS_BAD_PARAM, "is not aligned to its 4-byte elements");
    TU_FAILS(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, dx}, {2, &s}}, 2, NULL, NULL), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"mul::OUT_0\" (uid 3) has no buffer in the variant pack");
    TU_FAILS(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, dx}, {2, ds}, {3, dy}}, 3, NULL, NULL),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"s\" (uid 2): ");
    TU_FAILS(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, dx}, {2, ds}, {3, dy}}, 3, NULL, NULL),
             DNNJIT_STATUS_BAD_PARAM, "is device memory, but a pass-by-value scalar is read on the host");

    /* The same graph with a good pack runs, and computes relu(x) * 2. */
    for (int i = 0; i < 32; i++)
        hx[i] = (float)(i - 16) / 4;
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    TU_OK(dnnjit__cu_check(cu->cuMemcpyHtoD((dnnjit__cu_deviceptr_t)(uintptr_t)dx, hx, 32 * sizeof(float)),
                           "cuMemcpyHtoD"));
    TU_OK(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, dx}, {2, &s}, {3, dy}}, 3, NULL, NULL));
    TU_OK(dnnjit__cu_check(cu->cuStreamSynchronize(NULL), "cuStreamSynchronize"));
    TU_OK(dnnjit__cu_check(cu->cuMemcpyDtoH(hy, (dnnjit__cu_deviceptr_t)(uintptr_t)dy, sizeof hy), "cuMemcpyDtoH"));
    for (int i = 0; i < 32; i++)
        assert_true(hy[i] == (hx[i] > 0 ? hx[i] * 2 : 0));
    free(hx);
    device_free(dx);
    device_free(dy);
    device_free(ds);
    dnnjit_graph_destroy(g);
}

int main(int argc, char **argv)
{
    /* The disk cache stays out of the user's home: memory is enough here. */
    setenv("DNNJIT_CACHE", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_packs_on_a_device),
    };
    return TU_GPU_MAIN(tests, argc, argv, tu_gpu_available);
}
