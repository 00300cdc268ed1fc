/* The driver layer on a real GPU: kernels compiled through the cache, loaded and run,
 * with results checked against values worked out by hand. Without a driver or a device
 * the whole program is skipped (exit 77). */
#include "jit-test.h"

#include "gpu_util.h"

#include <math.h>

/* The device's architecture, set once by device_ready. */
static char arch[DNNJIT__ARCH_LEN];

typedef struct kernel {
    dnnjit__cu_module_t module;
    dnnjit__cu_function_t fn;
} kernel_t;

static kernel_t load(const char *source, const char *name, const char *for_arch)
{
    void *cubin = NULL;
    size_t size = 0;
    kernel_t k;
    JT_OK(dnnjit__jit_get_cubin(source, "kernel.cu", for_arch, NULL, &cubin, &size, NULL));
    JT_OK(dnnjit__driver_load_kernel(cubin, name, &k.module, &k.fn));
    free(cubin);
    return k;
}

static void unload(kernel_t k)
{
    JT_OK(dnnjit__cu_check(dnnjit__cuda()->cuModuleUnload(k.module), "cuModuleUnload"));
}

static dnnjit__cu_deviceptr_t upload(const void *host, size_t bytes)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    dnnjit__cu_deviceptr_t p = 0;
    JT_OK(dnnjit__cu_check(cu->cuMemAlloc(&p, bytes), "cuMemAlloc"));
    if (host)
        JT_OK(dnnjit__cu_check(cu->cuMemcpyHtoD(p, host, bytes), "cuMemcpyHtoD"));
    return p;
}

static void download(void *host, dnnjit__cu_deviceptr_t p, size_t bytes)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    JT_OK(dnnjit__cu_check(cu->cuMemcpyDtoH(host, p, bytes), "cuMemcpyDtoH"));
    JT_OK(dnnjit__cu_check(cu->cuMemFree(p), "cuMemFree"));
}

static void axpy_runs_and_is_timed(void **state)
{
    (void)state;
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    enum { N = 1000 };
    float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 17);
        y[i] = (float)(i % 5) - 2.0f;
    }
    kernel_t k = load(jt_axpy_source, "axpy", arch);
    dnnjit__cu_deviceptr_t dx = upload(x, sizeof x), dy = upload(y, sizeof y);
    int n = N;
    float a = 2.5f;
    void *params[] = {&n, &a, &dx, &dy};
    dnnjit__cu_event_t start, stop;
    JT_OK(dnnjit__cu_check(cu->cuEventCreate(&start, 0), "cuEventCreate"));
    JT_OK(dnnjit__cu_check(cu->cuEventCreate(&stop, 0), "cuEventCreate"));
    JT_OK(dnnjit__cu_check(cu->cuEventRecord(start, NULL), "cuEventRecord"));
    JT_OK(dnnjit__driver_launch(k.fn, (unsigned[]){(N + 127) / 128, 1, 1}, (unsigned[]){128, 1, 1}, NULL, 0, 0, NULL,
                                params));
    JT_OK(dnnjit__cu_check(cu->cuEventRecord(stop, NULL), "cuEventRecord"));
    JT_OK(dnnjit__cu_check(cu->cuStreamSynchronize(NULL), "cuStreamSynchronize"));
    float ms = -1.0f;
    JT_OK(dnnjit__cu_check(cu->cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime"));
    assert_true(ms >= 0.0f);
    JT_OK(dnnjit__cu_check(cu->cuEventDestroy(start), "cuEventDestroy"));
    JT_OK(dnnjit__cu_check(cu->cuEventDestroy(stop), "cuEventDestroy"));
    download(out, dy, sizeof out);
    JT_OK(dnnjit__cu_check(cu->cuMemFree(dx), "cuMemFree"));
    /* Small integers times 2.5 and sums of them are exact in fp32, fused or not. */
    for (int i = 0; i < N; i++)
        assert_true(out[i] == 2.5f * x[i] + y[i]);
    unload(k);
}

static void mma_sums_ones(void **state)
{
    (void)state;
    /* A and B all ones (fp16 1.0 = 0x3c00, two per register): every D = sum over k of
     * 1 * 1 = 16, whatever the fragment layout. */
    unsigned a[32 * 4], b[32 * 2];
    float d[32 * 4];
    for (int i = 0; i < 32 * 4; i++)
        a[i] = 0x3c003c00u;
    for (int i = 0; i < 32 * 2; i++)
        b[i] = 0x3c003c00u;
    kernel_t k = load(jt_mma_source, "mma16816", arch);
    dnnjit__cu_deviceptr_t da = upload(a, sizeof a), db = upload(b, sizeof b), dd = upload(NULL, sizeof d);
    void *params[] = {&da, &db, &dd};
    JT_OK(dnnjit__driver_launch(k.fn, (unsigned[]){1, 1, 1}, (unsigned[]){32, 1, 1}, NULL, 0, 0, NULL, params));
    download(d, dd, sizeof d);
    JT_OK(dnnjit__cu_check(dnnjit__cuda()->cuMemFree(da), "cuMemFree"));
    JT_OK(dnnjit__cu_check(dnnjit__cuda()->cuMemFree(db), "cuMemFree"));
    for (int i = 0; i < 32 * 4; i++)
        assert_true(d[i] == 16.0f);
    unload(k);
}

static void cluster_launch_groups_blocks(void **state)
{
    (void)state;
    if (atoi(arch + 3) < 90)
        skip(); /* clusters need compute capability 9.0 */
    const char *src = "extern \"C\" __global__ void rank(unsigned *out)\n"
                      "{\n"
                      "    unsigned r;\n"
                      "    asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));\n"
                      "    if (threadIdx.x == 0)\n"
                      "        out[blockIdx.x] = r;\n"
                      "}\n";
    enum { BLOCKS = 8 };
    unsigned out[BLOCKS];
    kernel_t k = load(src, "rank", arch);
    dnnjit__cu_deviceptr_t dout = upload(NULL, sizeof out);
    void *params[] = {&dout};
    JT_OK(dnnjit__driver_launch(k.fn, (unsigned[]){BLOCKS, 1, 1}, (unsigned[]){32, 1, 1}, (unsigned[]){2, 1, 1}, 0, 0,
                                NULL, params));
    download(out, dout, sizeof out);
    /* Clusters of two consecutive blocks: ranks 0, 1, 0, 1, ... */
    for (unsigned i = 0; i < BLOCKS; i++)
        assert_int_equal(out[i], i % 2);
    unload(k);
}

static void device_pointers_are_told_from_host_ones(void **state)
{
    (void)state;
    dnnjit__cu_deviceptr_t p = upload(NULL, 256);
    JT_OK(dnnjit__driver_check_device_pointer((void *)(uintptr_t)p, "tensor \"A\""));
    float host[4];
    JT_FAILS(dnnjit__driver_check_device_pointer(host, "tensor \"B\""), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"B\": ");
    assert_non_null(strstr(dnnjit_last_error(), "not device memory"));
    JT_FAILS(dnnjit__driver_check_device_pointer(NULL, "tensor \"C\""), DNNJIT_STATUS_BAD_PARAM, "NULL");
    JT_OK(dnnjit__cu_check(dnnjit__cuda()->cuMemFree(p), "cuMemFree"));
}

static void load_failures_name_the_call(void **state)
{
    (void)state;
    void *cubin = NULL;
    size_t size = 0;
    dnnjit__cu_module_t module = NULL;
    dnnjit__cu_function_t fn = NULL;
    JT_OK(dnnjit__jit_get_cubin(jt_axpy_source, "kernel.cu", arch, NULL, &cubin, &size, NULL));
    JT_FAILS(dnnjit__driver_load_kernel(cubin, "no_such_kernel", &module, &fn), DNNJIT_STATUS_CUDA_ERROR,
             "cuModuleGetFunction(\"no_such_kernel\") failed: CUDA_ERROR_NOT_FOUND");
    assert_null(module);
    free(cubin);
    /* SASS of another major architecture does not load. */
    const char *other = strncmp(arch, "sm_8", 4) == 0 ? "sm_90a" : "sm_80";
    JT_OK(dnnjit__jit_get_cubin(jt_axpy_source, "kernel.cu", other, NULL, &cubin, &size, NULL));
    JT_FAILS(dnnjit__driver_load_kernel(cubin, "axpy", &module, &fn), DNNJIT_STATUS_NOT_SUPPORTED,
             "cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU");
    free(cubin);
}

static void unknown_device_is_rejected(void **state)
{
    (void)state;
    JT_FAILS(dnnjit__driver_use_device(-1), DNNJIT_STATUS_BAD_PARAM, "CUDA device -1 does not exist");
    JT_FAILS(dnnjit__driver_use_device(4096), DNNJIT_STATUS_BAD_PARAM, "does not exist");
}

/* Whether device 0 can run kernels (the driver layer's own check, no handle); sets `arch`. */
static bool device_ready(void)
{
    if (dnnjit__driver_use_device(0) != DNNJIT_STATUS_SUCCESS ||
        dnnjit__driver_current_arch(arch) != DNNJIT_STATUS_SUCCESS) {
        printf("skipped: no usable GPU: %s\n", dnnjit_last_error());
        return false;
    }
    printf("device 0 is %s\n", arch);
    return true;
}

int main(int argc, char **argv)
{
    /* The disk cache stays out of the user's home: memory is enough here. */
    setenv("DNNJIT_CACHE", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(axpy_runs_and_is_timed),
        cmocka_unit_test(mma_sums_ones),
        cmocka_unit_test(cluster_launch_groups_blocks),
        cmocka_unit_test(device_pointers_are_told_from_host_ones),
        cmocka_unit_test(load_failures_name_the_call),
        cmocka_unit_test(unknown_device_is_rejected),
    };
    return TU_GPU_MAIN(tests, argc, argv, device_ready);
}
