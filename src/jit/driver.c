/* The CUDA driver, loaded at run time through the dynamic loader so that the library runs
 * (and compiles kernels) on machines without a GPU. The entry points are looked up by
 * their versioned names, which is the ABI cuda.h's macros select. */
#define _POSIX_C_SOURCE 200809L

#include "jit/jit.h"
#include "graph/graph.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dnnjit__cuda_api_t api;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static dnnjit_status_t load_status = DNNJIT_STATUS_INTERNAL;
static char load_error[1024];

/* Primary contexts retained by dnnjit__driver_use_device, one per device ordinal, kept
 * for the life of the process. */
#define MAX_DEVICES 64
static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnjit__cu_context_t contexts[MAX_DEVICES];

static dnnjit_status_t status_for(dnnjit__cu_result_t r)
{
    switch (r) {
    case DNNJIT__CUDA_ERROR_OUT_OF_MEMORY:
        return DNNJIT_STATUS_OUT_OF_MEMORY;
    case DNNJIT__CUDA_ERROR_INSUFFICIENT_DRIVER:
    case DNNJIT__CUDA_ERROR_NO_DEVICE:
    case DNNJIT__CUDA_ERROR_NO_BINARY_FOR_GPU:
    case DNNJIT__CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case DNNJIT__CUDA_ERROR_NOT_SUPPORTED:
        return DNNJIT_STATUS_NOT_SUPPORTED;
    default:
        return DNNJIT_STATUS_CUDA_ERROR;
    }
}

/* "<call> failed: CUDA_ERROR_X (<n>): <text>". */
static void describe(dnnjit__cu_result_t r, const char *call, char *out, size_t size)
{
    const char *name = NULL, *text = NULL;
    if (api.cuGetErrorName)
        api.cuGetErrorName(r, &name);
    if (api.cuGetErrorString)
        api.cuGetErrorString(r, &text);
    snprintf(out, size, "%s failed: %s (%d): %s", call, name ? name : "CUDA error", r, text ? text : "no description");
}

static bool resolve(void *lib, const char *symbol, void *fn_slot)
{
    void *p = dlsym(lib, symbol);
    /* POSIX makes the object-to-function pointer conversion valid; memcpy keeps
     * -Wpedantic quiet about it. */
    memcpy(fn_slot, &p, sizeof p);
    return p != NULL;
}

#define SLOT(member) offsetof(dnnjit__cuda_api_t, member)

static const struct {
    const char *names[2]; /* the preferred name, then an older one for older drivers */
    size_t slot;
    bool optional;
} symbols[] = {
    {{"cuInit"}, SLOT(cuInit), false},
    {{"cuGetErrorString"}, SLOT(cuGetErrorString), false},
    {{"cuGetErrorName"}, SLOT(cuGetErrorName), false},
    {{"cuDriverGetVersion"}, SLOT(cuDriverGetVersion), false},
    {{"cuDeviceGetCount"}, SLOT(cuDeviceGetCount), false},
    {{"cuDeviceGet"}, SLOT(cuDeviceGet), false},
    {{"cuDeviceGetAttribute"}, SLOT(cuDeviceGetAttribute), false},
    {{"cuDeviceGetName"}, SLOT(cuDeviceGetName), false},
    {{"cuDevicePrimaryCtxRetain"}, SLOT(cuDevicePrimaryCtxRetain), false},
    {{"cuDevicePrimaryCtxRelease_v2"}, SLOT(cuDevicePrimaryCtxRelease), false},
    {{"cuCtxSetCurrent"}, SLOT(cuCtxSetCurrent), false},
    {{"cuCtxGetCurrent"}, SLOT(cuCtxGetCurrent), false},
    {{"cuCtxGetDevice"}, SLOT(cuCtxGetDevice), false},
    {{"cuModuleLoadData"}, SLOT(cuModuleLoadData), false},
    {{"cuModuleGetFunction"}, SLOT(cuModuleGetFunction), false},
    {{"cuModuleUnload"}, SLOT(cuModuleUnload), false},
    {{"cuFuncSetAttribute"}, SLOT(cuFuncSetAttribute), false},
    {{"cuLaunchKernel"}, SLOT(cuLaunchKernel), false},
    {{"cuLaunchKernelEx"}, SLOT(cuLaunchKernelEx), true},
    {{"cuPointerGetAttributes"}, SLOT(cuPointerGetAttributes), false},
    {{"cuMemAlloc_v2"}, SLOT(cuMemAlloc), false},
    {{"cuMemFree_v2"}, SLOT(cuMemFree), false},
    {{"cuMemcpyHtoD_v2"}, SLOT(cuMemcpyHtoD), false},
    {{"cuMemcpyDtoH_v2"}, SLOT(cuMemcpyDtoH), false},
    {{"cuStreamSynchronize"}, SLOT(cuStreamSynchronize), false},
    {{"cuMemsetD32Async"}, SLOT(cuMemsetD32Async), false},
    {{"cuStreamCreate"}, SLOT(cuStreamCreate), false},
    {{"cuStreamDestroy_v2"}, SLOT(cuStreamDestroy), false},
    {{"cuEventCreate"}, SLOT(cuEventCreate), false},
    {{"cuEventDestroy_v2"}, SLOT(cuEventDestroy), false},
    {{"cuEventRecord"}, SLOT(cuEventRecord), false},
    {{"cuEventSynchronize"}, SLOT(cuEventSynchronize), false},
    {{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, SLOT(cuEventElapsedTime), false},
    {{"cuStreamBeginCapture_v2"}, SLOT(cuStreamBeginCapture), true},
    {{"cuStreamEndCapture"}, SLOT(cuStreamEndCapture), true},
    {{"cuGraphInstantiateWithFlags"}, SLOT(cuGraphInstantiateWithFlags), true},
    {{"cuGraphLaunch"}, SLOT(cuGraphLaunch), true},
    {{"cuGraphExecDestroy"}, SLOT(cuGraphExecDestroy), true},
    {{"cuGraphDestroy"}, SLOT(cuGraphDestroy), true},
    {{"cuTensorMapEncodeTiled"}, SLOT(cuTensorMapEncodeTiled), true},
    {{"cuOccupancyMaxActiveClusters"}, SLOT(cuOccupancyMaxActiveClusters), true},
};

static void load_driver(void)
{
    const char *forced = getenv("DNNJIT_CUDA_LIBRARY");
    const char *path = forced && *forced ? forced : "libcuda.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        load_status = DNNJIT_STATUS_NOT_SUPPORTED;
        snprintf(load_error, sizeof load_error, "no CUDA driver found (tried %s%s: %s)", path,
                 forced && *forced ? " from DNNJIT_CUDA_LIBRARY" : "", e ? e : "dlopen failed");
        return;
    }
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        void *slot = (char *)&api + symbols[i].slot;
        bool found = resolve(lib, symbols[i].names[0], slot) ||
                     (symbols[i].names[1] && resolve(lib, symbols[i].names[1], slot));
        if (!found && !symbols[i].optional) {
            load_status = DNNJIT_STATUS_NOT_SUPPORTED;
            snprintf(load_error, sizeof load_error, "the CUDA driver %s lacks %s (the driver is too old)", path,
                     symbols[i].names[0]);
            memset(&api, 0, sizeof api);
            dlclose(lib);
            return;
        }
    }
    dnnjit__cu_result_t r = api.cuInit(0);
    if (r != 0) {
        load_status = status_for(r);
        describe(r, "cuInit", load_error, sizeof load_error);
        return;
    }
    load_status = DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit__driver_load(void)
{
    pthread_once(&load_once, load_driver);
    if (load_status != DNNJIT_STATUS_SUCCESS)
        return dnnjit__fail(NULL, load_status, "%s", load_error);
    return DNNJIT_STATUS_SUCCESS;
}

const dnnjit__cuda_api_t *dnnjit__cuda(void)
{
    return &api;
}

dnnjit_status_t dnnjit__cu_check(dnnjit__cu_result_t result, const char *call)
{
    if (result == 0)
        return DNNJIT_STATUS_SUCCESS;
    char text[512];
    describe(result, call, text, sizeof text);
    return dnnjit__fail(NULL, status_for(result), "%s", text);
}

dnnjit_status_t dnnjit__driver_use_device(int ordinal)
{
    dnnjit_status_t s = dnnjit__driver_load();
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    int count = 0;
    if ((s = dnnjit__cu_check(api.cuDeviceGetCount(&count), "cuDeviceGetCount")) != DNNJIT_STATUS_SUCCESS)
        return s;
    if (ordinal < 0 || ordinal >= count || ordinal >= MAX_DEVICES)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "CUDA device %d does not exist (%d device%s)", ordinal,
                            count, count == 1 ? "" : "s");
    pthread_mutex_lock(&contexts_lock);
    dnnjit__cu_device_t device;
    if (!contexts[ordinal] && (s = dnnjit__cu_check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet")) == DNNJIT_STATUS_SUCCESS)
        s = dnnjit__cu_check(api.cuDevicePrimaryCtxRetain(&contexts[ordinal], device), "cuDevicePrimaryCtxRetain");
    dnnjit__cu_context_t ctx = contexts[ordinal];
    pthread_mutex_unlock(&contexts_lock);
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    return dnnjit__cu_check(api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

void dnnjit__arch_for_capability(int major, int minor, char arch[DNNJIT__ARCH_LEN])
{
    /* Hopper and datacenter Blackwell kernels use wgmma / tcgen05, which only the
     * arch-specific "a" targets provide. */
    bool specific = (major == 9 || major == 10) && minor == 0;
    snprintf(arch, DNNJIT__ARCH_LEN, "sm_%d%d%s", major, minor, specific ? "a" : "");
}

/* The device of the context current on this thread. */
static dnnjit_status_t current_device(dnnjit__cu_device_t *device)
{
    dnnjit_status_t s = dnnjit__driver_load();
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    dnnjit__cu_context_t ctx = NULL;
    if ((s = dnnjit__cu_check(api.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent")) != DNNJIT_STATUS_SUCCESS)
        return s;
    if (!ctx)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_STATE, "no CUDA context is current on this thread");
    return dnnjit__cu_check(api.cuCtxGetDevice(device), "cuCtxGetDevice");
}

dnnjit_status_t dnnjit__driver_current_device_name(char *name, size_t size)
{
    dnnjit__cu_device_t device;
    dnnjit_status_t s = current_device(&device);
    if (s == DNNJIT_STATUS_SUCCESS)
        s = dnnjit__cu_check(api.cuDeviceGetName(name, size > INT_MAX ? INT_MAX : (int)size, device),
                             "cuDeviceGetName");
    return s;
}

dnnjit_status_t dnnjit__driver_current_arch(char arch[DNNJIT__ARCH_LEN])
{
    dnnjit__cu_device_t device;
    int major = 0, minor = 0;
    dnnjit_status_t s = current_device(&device);
    if (s == DNNJIT_STATUS_SUCCESS &&
        (s = dnnjit__cu_check(api.cuDeviceGetAttribute(&major, DNNJIT__CU_DEVICE_ATTRIBUTE_CC_MAJOR, device),
                              "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)")) == DNNJIT_STATUS_SUCCESS &&
        (s = dnnjit__cu_check(api.cuDeviceGetAttribute(&minor, DNNJIT__CU_DEVICE_ATTRIBUTE_CC_MINOR, device),
                              "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)")) == DNNJIT_STATUS_SUCCESS)
        dnnjit__arch_for_capability(major, minor, arch);
    return s;
}

dnnjit_status_t dnnjit__driver_load_kernel(const void *cubin, const char *kernel, dnnjit__cu_module_t *module,
                                           dnnjit__cu_function_t *fn)
{
    if (!cubin || !kernel || !module || !fn)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "load kernel: cubin, kernel, module and fn must be set");
    dnnjit_status_t s = dnnjit__driver_load();
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    if ((s = dnnjit__cu_check(api.cuModuleLoadData(module, cubin), "cuModuleLoadData")) != DNNJIT_STATUS_SUCCESS)
        return s;
    char call[160];
    snprintf(call, sizeof call, "cuModuleGetFunction(\"%.120s\")", kernel);
    if ((s = dnnjit__cu_check(api.cuModuleGetFunction(fn, *module, kernel), call)) != DNNJIT_STATUS_SUCCESS) {
        api.cuModuleUnload(*module);
        *module = NULL;
    }
    return s;
}

dnnjit_status_t dnnjit__driver_launch(dnnjit__cu_function_t fn, const unsigned int grid[3],
                                      const unsigned int block[3], const unsigned int *cluster, unsigned flags,
                                      unsigned int shared_bytes, dnnjit__cu_stream_t stream, void **params)
{
    dnnjit_status_t s = dnnjit__driver_load();
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    bool clustered = cluster && cluster[0] * cluster[1] * cluster[2] > 1;
    if (!clustered && !flags)
        return dnnjit__cu_check(api.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                                   shared_bytes, stream, params, NULL),
                                "cuLaunchKernel");
    if (!api.cuLaunchKernelEx)
        return dnnjit__fail(NULL, DNNJIT_STATUS_NOT_SUPPORTED,
                            "a %s launch needs cuLaunchKernelEx (CUDA 11.8 driver or newer)",
                            clustered                            ? "clustered"
                            : flags & DNNJIT__LAUNCH_COOPERATIVE ? "cooperative"
                                                                 : "dependent");
    dnnjit__cu_launch_attribute_t attrs[3];
    unsigned int count = 0;
    if (clustered) {
        attrs[count] = (dnnjit__cu_launch_attribute_t){.id = DNNJIT__CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
        memcpy(attrs[count++].value.cluster_dim, cluster, sizeof attrs[0].value.cluster_dim);
    }
    if (flags & DNNJIT__LAUNCH_COOPERATIVE)
        attrs[count++] = (dnnjit__cu_launch_attribute_t){.id = DNNJIT__CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
                                                         .value.cooperative = 1};
    if (flags & DNNJIT__LAUNCH_DEPENDENT)
        attrs[count++] = (dnnjit__cu_launch_attribute_t){
            .id = DNNJIT__CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            .value.programmatic_stream_serialization = 1};
    dnnjit__cu_launch_config_t config = {
        .grid = {grid[0], grid[1], grid[2]},
        .block = {block[0], block[1], block[2]},
        .shared_bytes = shared_bytes,
        .stream = stream,
        .attrs = attrs,
        .attr_count = count,
    };
    return dnnjit__cu_check(api.cuLaunchKernelEx(&config, fn, params, NULL), "cuLaunchKernelEx");
}

/* The memory type of ptr, 0 for memory the driver did not allocate. cuPointerGetAttributes
 * answers that case with success and a zero type, where cuPointerGetAttribute would fail
 * with INVALID_VALUE: a failing call on every check of an ordinary host scalar would be an
 * API error in compute-sanitizer's reports and in any tool tracing the driver. */
static dnnjit__cu_result_t memory_type(const void *ptr, unsigned int *type)
{
    int attribute = DNNJIT__CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data = type;
    *type = 0;
    return api.cuPointerGetAttributes(1, &attribute, &data, (dnnjit__cu_deviceptr_t)(uintptr_t)ptr);
}

dnnjit_status_t dnnjit__driver_check_device_pointer(const void *ptr, const char *who)
{
    if (!ptr)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "%s: the pointer is NULL", who);
    dnnjit_status_t s = dnnjit__driver_load();
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    unsigned int type;
    dnnjit__cu_result_t r = memory_type(ptr, &type);
    if (r == 0 && (type == 0 || type == DNNJIT__CU_MEMORYTYPE_HOST))
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "%s: %p is %s memory, not device memory", who, ptr,
                            type ? "page-locked host" : "ordinary host");
    return dnnjit__cu_check(r, "cuPointerGetAttributes(MEMORY_TYPE)");
}

dnnjit_status_t dnnjit__driver_check_host_pointer(const void *ptr, const char *who)
{
    dnnjit_status_t s = dnnjit__driver_load();
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    unsigned int type;
    dnnjit__cu_result_t r = memory_type(ptr, &type);
    /* Memory the driver did not allocate, page-locked host memory and managed memory are
     * all readable on the host. */
    if (r == 0 && type == DNNJIT__CU_MEMORYTYPE_DEVICE)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM,
                            "%s: %p is device memory, but a pass-by-value scalar is read on the host", who, ptr);
    return dnnjit__cu_check(r, "cuPointerGetAttributes(MEMORY_TYPE)");
}
