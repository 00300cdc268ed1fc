/* Internal interface of the JIT foundation: NVRTC (source -> CUBIN), the CUDA driver
 * (CUBIN -> module -> launch) and the kernel cache between them. Both CUDA libraries are
 * dlopened on first use, so the library builds and runs without the toolkit or a GPU; an
 * operation that needs a missing one fails with a message naming what was tried.
 * Nothing here is public API. */
#ifndef DNNJIT_JIT_JIT_H
#define DNNJIT_JIT_JIT_H

#include "dnnjit.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- little-endian fields of the files and blobs the library writes ---- */

static inline void dnnjit__put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void dnnjit__put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t dnnjit__get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t dnnjit__get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* ---- logging ---- */

/* Whether DNNJIT_LOG is set to something other than "" or "0". */
bool dnnjit__log_enabled(void);
/* Writes "dnnjit: <message>\n" to stderr when logging is enabled. */
void dnnjit__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- NVRTC ---- */

/* Architecture strings are "sm_" followed by digits and an optional 'a' (sm_80, sm_90a,
 * sm_100a). The longest accepted string fits in this many bytes with its terminator. */
#define DNNJIT__ARCH_LEN 16

bool dnnjit__arch_is_valid(const char *arch);
/* The same check, with a BAD_PARAM message when it is malformed. */
dnnjit_status_t dnnjit__check_arch(const char *arch);

/* How a kernel is compiled, besides its source and architecture. */
typedef struct dnnjit__compile_options {
    /* Extra NVRTC options passed through as given ("--use_fast_math", "-DTILE_M=128"). */
    const char *const *extra;
    int extra_count;
    /* Adds the toolkit's include and include/cccl folders (from $CUDA_HOME, $CUDA_PATH or
     * /usr/local/cuda) so that the source may include <cuda_fp16.h>, <cuda/std/...>. */
    bool cuda_headers;
} dnnjit__compile_options_t;

/* Loads NVRTC once per process. Tried in order: $DNNJIT_NVRTC_LIBRARY alone when set;
 * else libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so through the loader, then the same names
 * under $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64, as
 * dnnjit__nvrtc_load_first tries them. NOT_SUPPORTED with its message when none loads. */
dnnjit_status_t dnnjit__nvrtc_load(void);

/* Loads the first of `paths` (a name without '/' goes through the loader's search) that is
 * an NVRTC, skipping any that resolves to a file tried already. False when none is, with
 * `error` naming every candidate tried and the first reason that is not a missing file (a
 * library that is there but unusable: damaged, or lacking an entry point), else the last
 * reason. A failed candidate changes nothing, so that tests may call this with some. */
bool dnnjit__nvrtc_load_first(const char *const *paths, int count, char *error, size_t size);

/* The loaded NVRTC's version. */
dnnjit_status_t dnnjit__nvrtc_version(int *major, int *minor);

/* What tells the loaded NVRTC build from others of its version (the size and modification
 * time of its file), or "" when its file could not be found. Only valid after a load. */
const char *dnnjit__nvrtc_identity(void);

/* The exact option list NVRTC is given to compile for `arch` with `options` (NULL for
 * none): --gpu-architecture, -std=c++17, -default-device, then the toolkit's include and
 * include/cccl folders when options->cuda_headers is set, else -minimal where NVRTC takes it
 * (12.4 and later), then options->extra. Loads NVRTC, which decides -minimal. `list` points
 * into the struct, which must stay where it is until dnnjit__nvrtc_options_free. */
typedef struct dnnjit__nvrtc_options {
    const char **list;
    int count;
    char arch[64], include[560], cccl[560]; /* the options made here */
} dnnjit__nvrtc_options_t;

dnnjit_status_t dnnjit__nvrtc_options(const char *arch, const dnnjit__compile_options_t *options,
                                      dnnjit__nvrtc_options_t *out);
void dnnjit__nvrtc_options_free(dnnjit__nvrtc_options_t *options);

/* Compiles `source` (program `name`, used in NVRTC's messages) to a CUBIN for `arch` with
 * the options dnnjit__nvrtc_options gives for `options` (NULL for none). On success *cubin
 * is a malloc'd buffer of *size bytes that the caller frees. A compile error (or any other
 * NVRTC failure while compiling) gives COMPILE_ERROR, an option or architecture this NVRTC
 * rejects NOT_SUPPORTED; both carry NVRTC's log, truncated to fit a message. */
dnnjit_status_t dnnjit__nvrtc_compile(const char *source, const char *name, const char *arch,
                                      const dnnjit__compile_options_t *options, void **cubin, size_t *size);

/* The same with the option list dnnjit__nvrtc_options made (NVRTC loaded, `arch` checked),
 * so that a caller that also keys a cache on the list compiles with the very same one. */
dnnjit_status_t dnnjit__nvrtc_compile_listed(const char *source, const char *name, const char *arch,
                                             const dnnjit__nvrtc_options_t *opts, void **cubin, size_t *size);

/* ---- CUDA driver ---- */

/* The few driver types used here, declared with the same layout as cuda.h so that the
 * library builds without it. */
typedef int dnnjit__cu_result_t;
typedef int dnnjit__cu_device_t;
typedef unsigned long long dnnjit__cu_deviceptr_t;
typedef struct dnnjit__cu_ctx *dnnjit__cu_context_t;
typedef struct dnnjit__cu_mod *dnnjit__cu_module_t;
typedef struct dnnjit__cu_func *dnnjit__cu_function_t;
typedef struct dnnjit__cu_stream *dnnjit__cu_stream_t;
typedef struct dnnjit__cu_event *dnnjit__cu_event_t;
typedef struct dnnjit__cu_graph *dnnjit__cu_graph_t;
typedef struct dnnjit__cu_graph_exec *dnnjit__cu_graph_exec_t;

/* CUlaunchAttribute: an id, padding to 8 bytes and a 64-byte value union. */
typedef struct dnnjit__cu_launch_attribute {
    int id;
    char pad[4];
    union {
        unsigned int cluster_dim[3];
        int cooperative;
        int programmatic_stream_serialization;
        char bytes[64];
    } value;
} dnnjit__cu_launch_attribute_t;

/* CUlaunchConfig. */
typedef struct dnnjit__cu_launch_config {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared_bytes;
    dnnjit__cu_stream_t stream;
    dnnjit__cu_launch_attribute_t *attrs;
    unsigned int attr_count;
} dnnjit__cu_launch_config_t;

/* CUtensorMap: 128 opaque bytes, 128-byte aligned. */
typedef struct dnnjit__cu_tensor_map {
    _Alignas(128) uint64_t opaque[16];
} dnnjit__cu_tensor_map_t;

/* CUresult values that map to a status other than CUDA_ERROR (status_for in driver.c), and
 * the invalid argument (which tests/stub_driver.c returns). */
enum {
    DNNJIT__CUDA_ERROR_INVALID_VALUE = 1,
    DNNJIT__CUDA_ERROR_OUT_OF_MEMORY = 2,
    DNNJIT__CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
    DNNJIT__CUDA_ERROR_NO_DEVICE = 100,
    DNNJIT__CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    DNNJIT__CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    DNNJIT__CUDA_ERROR_NOT_SUPPORTED = 801,
};

/* Values from cuda.h that the callers here need. */
enum {
    DNNJIT__CU_DEVICE_ATTRIBUTE_CC_MAJOR = 75,
    DNNJIT__CU_DEVICE_ATTRIBUTE_CC_MINOR = 76,
    DNNJIT__CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    DNNJIT__CU_MEMORYTYPE_HOST = 1,
    DNNJIT__CU_MEMORYTYPE_DEVICE = 2,
    DNNJIT__CU_MEMORYTYPE_UNIFIED = 4,
    DNNJIT__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    DNNJIT__CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
    DNNJIT__CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
    DNNJIT__CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
    DNNJIT__CU_STREAM_NON_BLOCKING = 1,
    DNNJIT__CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
};

/* The resolved driver entry points (the _v2 ABI where the driver has one). Every member
 * is set after a successful dnnjit__driver_load except those marked optional, which are
 * NULL on drivers that lack them. */
typedef struct dnnjit__cuda_api {
    dnnjit__cu_result_t (*cuInit)(unsigned int flags);
    dnnjit__cu_result_t (*cuGetErrorString)(dnnjit__cu_result_t result, const char **text);
    dnnjit__cu_result_t (*cuGetErrorName)(dnnjit__cu_result_t result, const char **text);
    dnnjit__cu_result_t (*cuDriverGetVersion)(int *version);
    dnnjit__cu_result_t (*cuDeviceGetCount)(int *count);
    dnnjit__cu_result_t (*cuDeviceGet)(dnnjit__cu_device_t *device, int ordinal);
    dnnjit__cu_result_t (*cuDeviceGetAttribute)(int *value, int attribute, dnnjit__cu_device_t device);
    dnnjit__cu_result_t (*cuDeviceGetName)(char *name, int length, dnnjit__cu_device_t device);
    dnnjit__cu_result_t (*cuDevicePrimaryCtxRetain)(dnnjit__cu_context_t *ctx, dnnjit__cu_device_t device);
    dnnjit__cu_result_t (*cuDevicePrimaryCtxRelease)(dnnjit__cu_device_t device);
    dnnjit__cu_result_t (*cuCtxSetCurrent)(dnnjit__cu_context_t ctx);
    dnnjit__cu_result_t (*cuCtxGetCurrent)(dnnjit__cu_context_t *ctx);
    dnnjit__cu_result_t (*cuCtxGetDevice)(dnnjit__cu_device_t *device);
    dnnjit__cu_result_t (*cuModuleLoadData)(dnnjit__cu_module_t *module, const void *image);
    dnnjit__cu_result_t (*cuModuleGetFunction)(dnnjit__cu_function_t *fn, dnnjit__cu_module_t module,
                                               const char *name);
    dnnjit__cu_result_t (*cuModuleUnload)(dnnjit__cu_module_t module);
    dnnjit__cu_result_t (*cuFuncSetAttribute)(dnnjit__cu_function_t fn, int attribute, int value);
    dnnjit__cu_result_t (*cuLaunchKernel)(dnnjit__cu_function_t fn, unsigned int gx, unsigned int gy,
                                          unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
                                          unsigned int shared_bytes, dnnjit__cu_stream_t stream, void **params,
                                          void **extra);
    /* Optional (CUDA 11.8+). */
    dnnjit__cu_result_t (*cuLaunchKernelEx)(const dnnjit__cu_launch_config_t *config, dnnjit__cu_function_t fn,
                                            void **params, void **extra);
    dnnjit__cu_result_t (*cuPointerGetAttributes)(unsigned int count, int *attributes, void **data,
                                                 dnnjit__cu_deviceptr_t ptr);
    dnnjit__cu_result_t (*cuMemAlloc)(dnnjit__cu_deviceptr_t *ptr, size_t bytes);
    dnnjit__cu_result_t (*cuMemFree)(dnnjit__cu_deviceptr_t ptr);
    dnnjit__cu_result_t (*cuMemcpyHtoD)(dnnjit__cu_deviceptr_t dst, const void *src, size_t bytes);
    dnnjit__cu_result_t (*cuMemcpyDtoH)(void *dst, dnnjit__cu_deviceptr_t src, size_t bytes);
    dnnjit__cu_result_t (*cuStreamSynchronize)(dnnjit__cu_stream_t stream);
    dnnjit__cu_result_t (*cuMemsetD32Async)(dnnjit__cu_deviceptr_t dst, unsigned int value, size_t count,
                                            dnnjit__cu_stream_t stream);
    dnnjit__cu_result_t (*cuStreamCreate)(dnnjit__cu_stream_t *stream, unsigned int flags);
    dnnjit__cu_result_t (*cuStreamDestroy)(dnnjit__cu_stream_t stream);
    dnnjit__cu_result_t (*cuEventCreate)(dnnjit__cu_event_t *event, unsigned int flags);
    dnnjit__cu_result_t (*cuEventDestroy)(dnnjit__cu_event_t event);
    dnnjit__cu_result_t (*cuEventRecord)(dnnjit__cu_event_t event, dnnjit__cu_stream_t stream);
    dnnjit__cu_result_t (*cuEventSynchronize)(dnnjit__cu_event_t event);
    dnnjit__cu_result_t (*cuEventElapsedTime)(float *ms, dnnjit__cu_event_t start, dnnjit__cu_event_t end);
    /* Stream capture into CUDA graphs. Optional: nothing in the library needs them, only
     * callers that capture (cuGraphInstantiateWithFlags is CUDA 11.4+). */
    dnnjit__cu_result_t (*cuStreamBeginCapture)(dnnjit__cu_stream_t stream, int mode);
    dnnjit__cu_result_t (*cuStreamEndCapture)(dnnjit__cu_stream_t stream, dnnjit__cu_graph_t *graph);
    dnnjit__cu_result_t (*cuGraphInstantiateWithFlags)(dnnjit__cu_graph_exec_t *exec, dnnjit__cu_graph_t graph,
                                                       unsigned long long flags);
    dnnjit__cu_result_t (*cuGraphLaunch)(dnnjit__cu_graph_exec_t exec, dnnjit__cu_stream_t stream);
    dnnjit__cu_result_t (*cuGraphExecDestroy)(dnnjit__cu_graph_exec_t exec);
    dnnjit__cu_result_t (*cuGraphDestroy)(dnnjit__cu_graph_t graph);
    /* Optional (CUDA 12.0+). The enumerations are passed as their int values. */
    dnnjit__cu_result_t (*cuTensorMapEncodeTiled)(dnnjit__cu_tensor_map_t *map, int data_type, uint32_t rank,
                                                  void *address, const uint64_t *dims, const uint64_t *strides,
                                                  const uint32_t *box, const uint32_t *element_strides,
                                                  int interleave, int swizzle, int l2_promotion, int oob_fill);
    /* Optional (CUDA 12.0+): the clusters of `fn` launched with `config` that the device
     * holds at once. */
    dnnjit__cu_result_t (*cuOccupancyMaxActiveClusters)(int *clusters, dnnjit__cu_function_t fn,
                                                        const dnnjit__cu_launch_config_t *config);
} dnnjit__cuda_api_t;

/* Loads libcuda.so.1 ($DNNJIT_CUDA_LIBRARY overrides) through the loader once per process,
 * resolves the entry points and calls cuInit(0). NOT_SUPPORTED "no CUDA driver found
 * (tried ...: <dlerror>)" without a driver; the failing call's text otherwise. */
dnnjit_status_t dnnjit__driver_load(void);

/* The entry points; only valid after dnnjit__driver_load succeeded. */
const dnnjit__cuda_api_t *dnnjit__cuda(void);

/* Turns a CUresult into a status: SUCCESS for 0, else a failure whose message names
 * `call` and carries the driver's error name and text. The status is OUT_OF_MEMORY for
 * CUDA_ERROR_OUT_OF_MEMORY, NOT_SUPPORTED for a missing device, binary or driver feature,
 * and CUDA_ERROR for every other error. */
dnnjit_status_t dnnjit__cu_check(dnnjit__cu_result_t result, const char *call);

/* Makes the primary context of device `ordinal` current on this thread (retaining it;
 * the retain lasts for the process). */
dnnjit_status_t dnnjit__driver_use_device(int ordinal);

/* The architecture string of the current context's device: "sm_90a" for compute
 * capability 9.0, "sm_100a" for 10.0 (the arch-specific features the kernels use), else
 * "sm_<major><minor>". `arch` has DNNJIT__ARCH_LEN bytes. */
dnnjit_status_t dnnjit__driver_current_arch(char arch[DNNJIT__ARCH_LEN]);

/* The name of the current context's device ("NVIDIA H200"), cut to fit `size` bytes. */
dnnjit_status_t dnnjit__driver_current_device_name(char *name, size_t size);

/* The same mapping from a compute capability, for callers that know it already. */
void dnnjit__arch_for_capability(int major, int minor, char arch[DNNJIT__ARCH_LEN]);

/* Loads a CUBIN into the current context and looks `kernel` up in it. On failure nothing
 * stays loaded. */
dnnjit_status_t dnnjit__driver_load_kernel(const void *cubin, const char *kernel, dnnjit__cu_module_t *module,
                                           dnnjit__cu_function_t *fn);

/* How dnnjit__driver_launch launches a kernel (flags, or-ed). */
enum {
    /* Every block resident at once, or the launch fails. */
    DNNJIT__LAUNCH_COOPERATIVE = 1,
    /* Programmatic stream serialization (sm_90 and later): the kernel's blocks may start
     * before the previous kernel in the stream has finished. Only for a kernel that waits
     * on it (griddepcontrol.wait, as dj_grid_dependency in src/kernels/common.cuh) before
     * it touches memory that kernel may write or read. */
    DNNJIT__LAUNCH_DEPENDENT = 2,
};

/* Launches `fn`; a cluster of more than one block per dimension (cluster NULL: none) or any
 * of `flags` uses cuLaunchKernelEx with the matching attributes. */
dnnjit_status_t dnnjit__driver_launch(dnnjit__cu_function_t fn, const unsigned int grid[3],
                                      const unsigned int block[3], const unsigned int *cluster, unsigned flags,
                                      unsigned int shared_bytes, dnnjit__cu_stream_t stream, void **params);

/* Whether `ptr` is device (or managed) memory the device can address; `who` names the
 * pointer in the message (e.g. `tensor "A"`). */
dnnjit_status_t dnnjit__driver_check_device_pointer(const void *ptr, const char *who);
/* Whether the host can read `ptr`: BAD_PARAM when it is device memory, which reading on
 * the host would crash on. */
dnnjit_status_t dnnjit__driver_check_host_pointer(const void *ptr, const char *who);

/* ---- kernel cache ---- */

/* A cache key: XXH3-128 over the source, name, architecture, the exact NVRTC options, the
 * NVRTC version and build, and the dnnjit version. */
typedef struct dnnjit__jit_key {
    uint64_t low, high;
} dnnjit__jit_key_t;

/* Everything a key covers; the versions are explicit so that tests can vary them. */
typedef struct dnnjit__jit_key_input {
    const char *source;
    const char *name;
    const char *arch;
    /* The options exactly as NVRTC gets them (dnnjit__nvrtc_options): the fixed ones and the
     * include folders as well as the caller's. NULL when nvrtc_option_count is 0. */
    const char *const *nvrtc_options;
    int nvrtc_option_count;
    int nvrtc_major, nvrtc_minor;
    const char *nvrtc_build; /* dnnjit__nvrtc_identity(); NULL: "" */
    int dnnjit_version;
} dnnjit__jit_key_input_t;

#define DNNJIT__KEY_HEX_LEN 33 /* 32 hex digits and the terminator */

dnnjit__jit_key_t dnnjit__jit_key_compute(const dnnjit__jit_key_input_t *input);
/* The key of a CUBIN that arrives without its source (a deserialized graph's): XXH3-128
 * over the CUBIN itself, its kernel name, architecture and the dnnjit version. Such keys
 * never equal source keys, so CUBINs from outside cannot stand in for compiled ones. */
dnnjit__jit_key_t dnnjit__jit_cubin_key(const void *cubin, size_t size, const char *name, const char *arch);

/* Lower-case hex of the key, high half first. */
void dnnjit__jit_key_hex(dnnjit__jit_key_t key, char hex[DNNJIT__KEY_HEX_LEN]);

/* The key a lookup uses: the options dnnjit__nvrtc_options gives, the loaded NVRTC's
 * version and identity, and DNNJIT_VERSION. */
dnnjit_status_t dnnjit__jit_key(const char *source, const char *name, const char *arch,
                                const dnnjit__compile_options_t *options, dnnjit__jit_key_t *key);

/* The CUBIN for a kernel: from memory, else from the disk cache, else compiled by NVRTC
 * and stored in both. *cubin is a malloc'd copy of *size bytes that the caller frees. */
dnnjit_status_t dnnjit__jit_get_cubin(const char *source, const char *name, const char *arch,
                                      const dnnjit__compile_options_t *options, void **cubin, size_t *size,
                                      dnnjit__jit_key_t *key_out);

/* One kernel for dnnjit__jit_precompile: what dnnjit__jit_get_cubin takes besides the
 * architecture. */
typedef struct dnnjit__jit_job {
    const char *source;
    const char *name;
    const dnnjit__compile_options_t *options; /* NULL: none */
} dnnjit__jit_job_t;

/* The threads to compile on: $DNNJIT_COMPILE_THREADS when set (BAD_PARAM unless it is a
 * whole number from 1 to 64), else one per online CPU, at most 64. */
dnnjit_status_t dnnjit__jit_compile_threads(int64_t *threads);

/* Brings the CUBIN of every job into the cache (as dnnjit__jit_get_cubin would, one after
 * another), compiling the missing ones on up to `threads` threads at once, the calling
 * thread one of them; with fewer than two threads or jobs it does nothing. A job that fails
 * (a compile error, no NVRTC) leaves nothing behind: the caller's own dnnjit__jit_get_cubin
 * for it meets the failure again and reports it. */
void dnnjit__jit_precompile(const dnnjit__jit_job_t *jobs, int64_t count, const char *arch, int64_t threads);

/* Adds a memory entry (never a disk file) holding a copy of `cubin` under `key`, unless
 * one exists. OUT_OF_MEMORY when it could not be added. */
dnnjit_status_t dnnjit__jit_cache_insert(dnnjit__jit_key_t key, const void *cubin, size_t size);

/* Each memory entry can carry one object built from its CUBIN (a loaded module). The object
 * is reference counted: the entry holds one reference and every user (a built kernel of a
 * graph) holds one, so that dropping the entry (dnnjit__jit_cache_clear_memory) leaves
 * the object alive until its last user releases it; `destroy(object)` runs then. */
typedef void (*dnnjit__jit_object_destroy_t)(void *object);
typedef struct dnnjit__jit_ref dnnjit__jit_ref_t;
/* Attaches `object` to the entry of `key` unless one is attached already, and gives the
 * caller a reference to the attached one in *ref: its own object, or (when another was
 * attached first) that one, in which case the caller keeps ownership of its own object.
 * NOT_FOUND without an entry, OUT_OF_MEMORY when no reference could be made; the caller
 * keeps its object then too. */
dnnjit_status_t dnnjit__jit_cache_attach(dnnjit__jit_key_t key, void *object, dnnjit__jit_object_destroy_t destroy,
                                         dnnjit__jit_ref_t **ref);
/* A new reference to the object attached to `key`'s entry, or NULL when there is none. */
dnnjit__jit_ref_t *dnnjit__jit_cache_acquire(dnnjit__jit_key_t key);
/* The object a reference holds. */
void *dnnjit__jit_ref_object(const dnnjit__jit_ref_t *ref);
/* Drops a reference (NULL is ignored); the last one destroys the object. */
void dnnjit__jit_ref_release(dnnjit__jit_ref_t *ref);

typedef struct dnnjit__jit_cache_stats {
    uint64_t memory_hits;
    uint64_t disk_hits;
    uint64_t misses;      /* neither in memory nor on disk */
    uint64_t compiles;    /* NVRTC compilations */
    uint64_t bad_files;   /* disk files discarded as damaged or stale */
    uint64_t disk_writes;
    uint64_t disk_write_failures;
    uint64_t memory_entries;
    uint64_t memory_bytes;
} dnnjit__jit_cache_stats_t;

void dnnjit__jit_cache_stats(dnnjit__jit_cache_stats_t *stats);
void dnnjit__jit_cache_reset_stats(void);

/* The disk cache folder ($DNNJIT_CACHE_DIR, else $XDG_CACHE_HOME/dnnjit, else
 * ~/.cache/dnnjit). NOT_FOUND when disk caching is off (DNNJIT_CACHE=0) or no folder can
 * be named; BAD_PARAM when `size` is too small. */
dnnjit_status_t dnnjit__jit_cache_dir(char *dir, size_t size);

/* One CUBIN file on disk, as listed. */
typedef struct dnnjit__jit_cache_file {
    char arch[DNNJIT__ARCH_LEN];
    char key[DNNJIT__KEY_HEX_LEN];
    uint64_t bytes;     /* the file's size, header included */
    int64_t mtime;      /* seconds since the epoch */
} dnnjit__jit_cache_file_t;

/* Calls `visit` for each CUBIN file in the disk cache (no particular order). A folder
 * that does not exist lists nothing. Only regular files in real folders are listed, never
 * anything reached through a symbolic link. */
dnnjit_status_t dnnjit__jit_cache_list(void (*visit)(const dnnjit__jit_cache_file_t *file, void *user), void *user);

/* Temporary files that writers which died left in the disk cache: those untouched for ten
 * minutes (younger ones may be writes in progress). They are never read, only cleared. */
typedef struct dnnjit__jit_cache_leftovers {
    uint64_t files;
    uint64_t bytes;
} dnnjit__jit_cache_leftovers_t;

dnnjit_status_t dnnjit__jit_cache_leftovers(dnnjit__jit_cache_leftovers_t *leftovers);

/* Writes `head` then `body` (either may be empty, 0 bytes) as `file` (a path inside
 * `folder`; the folder and its parents are created when missing) so that readers see a
 * whole file or none: through "<file without its extension>.tmp.XXXXXX", synced and
 * renamed into place. A write that meets ENOENT (another process, such as a cache clear,
 * removed the folder or the temporary file meanwhile) is made once more from the start.
 * False with errno set on failure; nothing is left behind. */
bool dnnjit__write_file_atomic(const char *folder, const char *file, const void *head, size_t head_size,
                               const void *body, size_t body_size);

/* Opens `path`, a file of the disk cache, for reading without blocking, so that a FIFO put
 * where the file belongs cannot hang the caller. Returns the descriptor of a regular file.
 * Otherwise -1: with *why NULL (errno set) when there is no file or it cannot be opened,
 * and with *why saying what is wrong when it is not a regular file, which is then deleted
 * (a folder stays: only files are deleted). */
int dnnjit__open_cache_file(const char *path, const char **why);

/* The folder of the cache folder where dnnjit_graph_autotune remembers its choices
 * (src/runtime/autotune.c), one "<32 hex key>.plan" file each. */
#define DNNJIT__AUTOTUNE_FOLDER "autotune"

/* Drops every memory entry. Attached objects lose the entry's reference and are destroyed
 * once no built kernel holds them either. */
void dnnjit__jit_cache_clear_memory(void);
/* Deletes the disk cache's CUBIN files, the autotune choices and leftover temporary files
 * (those dnnjit__jit_cache_leftovers counts; nothing else), and the folders that deleting
 * them left empty; *removed (may be NULL) counts the files. Symbolic links are neither
 * followed nor deleted, so nothing outside the cache folder is touched. */
dnnjit_status_t dnnjit__jit_cache_clear_disk(uint64_t *removed);

#endif
