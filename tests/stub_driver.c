/* A stand-in for libcuda.so.1 (loaded through DNNJIT_CUDA_LIBRARY) that reports one device
 * of compute capability 9.0 and refuses everything else (CUDA_ERROR_NOT_SUPPORTED), so that
 * the tests can take, on a machine without a GPU, the paths the library takes when a driver
 * finds a device: a handle with one, planning for its architecture, the NVRTC load the
 * handle starts in the background, and the errors of an execute the driver refuses. It
 * defines every entry point the library resolves, the optional ones included. */
#include "jit/jit.h"

#include <stdio.h>

typedef dnnjit__cu_result_t result_t;

/* CUDA_SUCCESS. */
#define SUCCESS 0

/* The one context, which the handle retains and makes current. */
static int primary_context;
static _Thread_local void *current;

result_t cuInit(unsigned flags)
{
    return flags ? DNNJIT__CUDA_ERROR_INVALID_VALUE : SUCCESS;
}

result_t cuDriverGetVersion(int *version)
{
    *version = 13000;
    return SUCCESS;
}

result_t cuGetErrorName(result_t r, const char **name)
{
    *name = r == DNNJIT__CUDA_ERROR_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED"
            : r == SUCCESS                        ? "CUDA_SUCCESS"
                                                  : "CUDA_ERROR_STUB";
    return SUCCESS;
}

result_t cuGetErrorString(result_t r, const char **text)
{
    *text = r == DNNJIT__CUDA_ERROR_NOT_SUPPORTED ? "the stub driver of dnnjit's tests does not do this"
                                                  : "stub driver error";
    return SUCCESS;
}

result_t cuDeviceGetCount(int *count)
{
    *count = 1;
    return SUCCESS;
}

result_t cuDeviceGet(int *device, int ordinal)
{
    *device = ordinal;
    return ordinal == 0 ? SUCCESS : DNNJIT__CUDA_ERROR_INVALID_VALUE;
}

result_t cuDeviceGetAttribute(int *value, int attribute, int device)
{
    if (device != 0)
        return DNNJIT__CUDA_ERROR_INVALID_VALUE;
    if (attribute == DNNJIT__CU_DEVICE_ATTRIBUTE_CC_MAJOR || attribute == DNNJIT__CU_DEVICE_ATTRIBUTE_CC_MINOR) {
        *value = attribute == DNNJIT__CU_DEVICE_ATTRIBUTE_CC_MAJOR ? 9 : 0;
        return SUCCESS;
    }
    return DNNJIT__CUDA_ERROR_NOT_SUPPORTED;
}

result_t cuDeviceGetName(char *name, int size, int device)
{
    snprintf(name, (size_t)size, "dnnjit stub device %d", device);
    return SUCCESS;
}

result_t cuDevicePrimaryCtxRetain(void **context, int device)
{
    *context = &primary_context;
    return device == 0 ? SUCCESS : DNNJIT__CUDA_ERROR_INVALID_VALUE;
}

result_t cuDevicePrimaryCtxRelease_v2(int device)
{
    return device == 0 ? SUCCESS : DNNJIT__CUDA_ERROR_INVALID_VALUE;
}

result_t cuCtxSetCurrent(void *context)
{
    current = context;
    return SUCCESS;
}

result_t cuCtxGetCurrent(void **context)
{
    *context = current;
    return SUCCESS;
}

result_t cuCtxGetDevice(int *device)
{
    *device = 0;
    return SUCCESS;
}

/* Everything else: modules, launches, memory, streams, events, graphs, tensor maps. */
#define REFUSED(name)                                                                                                  \
    result_t name(void)                                                                                                \
    {                                                                                                                  \
        return DNNJIT__CUDA_ERROR_NOT_SUPPORTED;                                                                       \
    }
REFUSED(cuModuleLoadData)
REFUSED(cuModuleGetFunction)
REFUSED(cuModuleUnload)
REFUSED(cuFuncSetAttribute)
REFUSED(cuLaunchKernel)
REFUSED(cuLaunchKernelEx)
REFUSED(cuPointerGetAttributes)
REFUSED(cuMemAlloc_v2)
REFUSED(cuMemFree_v2)
REFUSED(cuMemcpyHtoD_v2)
REFUSED(cuMemcpyDtoH_v2)
REFUSED(cuStreamSynchronize)
REFUSED(cuMemsetD32Async)
REFUSED(cuStreamCreate)
REFUSED(cuStreamDestroy_v2)
REFUSED(cuEventCreate)
REFUSED(cuEventDestroy_v2)
REFUSED(cuEventRecord)
REFUSED(cuEventSynchronize)
REFUSED(cuEventElapsedTime_v2)
REFUSED(cuStreamBeginCapture_v2)
REFUSED(cuStreamEndCapture)
REFUSED(cuGraphInstantiateWithFlags)
REFUSED(cuGraphLaunch)
REFUSED(cuGraphExecDestroy)
REFUSED(cuGraphDestroy)
REFUSED(cuTensorMapEncodeTiled)
