/* NVRTC, loaded at run time: source -> CUBIN for one exact architecture. The few NVRTC
 * types are declared here instead of including nvrtc.h so that the library builds on
 * machines without the CUDA toolkit. */
#define _GNU_SOURCE /* dladdr, which finds the file of the loaded library */

#include "jit/jit.h"
#include "graph/graph.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int nvrtc_result_t; /* nvrtcResult; 0 is NVRTC_SUCCESS */
typedef struct nvrtc_program *nvrtc_program_t;

enum {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_OUT_OF_MEMORY = 1,
    NVRTC_ERROR_INVALID_OPTION = 5,
};

typedef struct nvrtc_api {
    nvrtc_result_t (*version)(int *major, int *minor);
    nvrtc_result_t (*create_program)(nvrtc_program_t *prog, const char *src, const char *name, int num_headers,
                                     const char *const *headers, const char *const *include_names);
    nvrtc_result_t (*compile_program)(nvrtc_program_t prog, int num_options, const char *const *options);
    nvrtc_result_t (*get_program_log_size)(nvrtc_program_t prog, size_t *size);
    nvrtc_result_t (*get_program_log)(nvrtc_program_t prog, char *log);
    nvrtc_result_t (*get_cubin_size)(nvrtc_program_t prog, size_t *size);
    nvrtc_result_t (*get_cubin)(nvrtc_program_t prog, char *cubin);
    nvrtc_result_t (*destroy_program)(nvrtc_program_t *prog);
    const char *(*get_error_string)(nvrtc_result_t result);
} nvrtc_api_t;

static nvrtc_api_t nvrtc;

/* The outcome of the one load attempt, kept for every later caller. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool load_ok;
/* Whether the loaded NVRTC takes -minimal, which came with CUDA 12.4. */
static bool takes_minimal;
static char load_error[DNNJIT__MSG_LEN];
/* What tells this NVRTC build from others of its version, for the kernel cache's key: the
 * size and modification time of the library's file. nvrtcVersion gives only major.minor,
 * the same for every update of a release, while another build (an update installed in
 * place, another toolkit of the same version) is another file, of another size or time.
 * The file's name is left out, so that one file reached by several names (libnvrtc.so and
 * libnvrtc.so.13, a toolkit folder and its symbolic link) gives the same keys. "" when the
 * file cannot be found; the key then holds the version alone. */
static char build_identity[96];

/* dlsym into a function pointer of any type: POSIX guarantees the conversion works, and
 * the memcpy keeps -Wpedantic quiet about object-to-function pointer casts. */
static bool resolve(void *lib, const char *symbol, void *fn_slot)
{
    void *p = dlsym(lib, symbol);
    memcpy(fn_slot, &p, sizeof p);
    return p != NULL;
}

static void identify(void *lib)
{
    Dl_info info;
    struct stat st;
    void *symbol = dlsym(lib, "nvrtcVersion");
    if (symbol && dladdr(symbol, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
        snprintf(build_identity, sizeof build_identity, "%lld bytes, modified %lld.%09ld", (long long)st.st_size,
                 (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
}

/* Opens one candidate and resolves every entry point; on failure writes the reason to
 * `why` and leaves nothing open and nothing changed. */
static bool try_library(const char *path, char *why, size_t why_size)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s", e ? e : "dlopen failed");
        return false;
    }
    static const struct {
        const char *symbol;
        size_t offset;
    } symbols[] = {
        {"nvrtcVersion", offsetof(nvrtc_api_t, version)},
        {"nvrtcCreateProgram", offsetof(nvrtc_api_t, create_program)},
        {"nvrtcCompileProgram", offsetof(nvrtc_api_t, compile_program)},
        {"nvrtcGetProgramLogSize", offsetof(nvrtc_api_t, get_program_log_size)},
        {"nvrtcGetProgramLog", offsetof(nvrtc_api_t, get_program_log)},
        {"nvrtcGetCUBINSize", offsetof(nvrtc_api_t, get_cubin_size)},
        {"nvrtcGetCUBIN", offsetof(nvrtc_api_t, get_cubin)},
        {"nvrtcDestroyProgram", offsetof(nvrtc_api_t, destroy_program)},
        {"nvrtcGetErrorString", offsetof(nvrtc_api_t, get_error_string)},
    };
    nvrtc_api_t api;
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        if (!resolve(lib, symbols[i].symbol, (char *)&api + symbols[i].offset)) {
            snprintf(why, why_size, "%s lacks %s (NVRTC 11.1 or newer is needed)", path, symbols[i].symbol);
            dlclose(lib);
            return false;
        }
    }
    nvrtc = api;
    int major = 0, minor = 0;
    takes_minimal = nvrtc.version(&major, &minor) == NVRTC_SUCCESS && (major > 12 || (major == 12 && minor >= 4));
    identify(lib);
    return true;
}

/* Whether dlopen's `error` for `path` says only that there is no such file: it then names
 * `path` itself with ENOENT's text. A library that is there but needs one that is missing
 * names the missing one instead, which is a reason worth reporting. */
static bool no_such_file(const char *path, const char *error)
{
    size_t n = strlen(path);
    return strncmp(error, path, n) == 0 && error[n] == ':' && strstr(error + n, strerror(ENOENT));
}

/* The name a candidate is compared by: the file it resolves to when there is one, so that
 * one library reached by two names (CUDA_HOME=/usr/local/cuda and the default) is tried
 * once; else the name as given. */
static const char *file_of(const char *path, char buf[PATH_MAX])
{
    return strchr(path, '/') && realpath(path, buf) ? buf : path;
}

static bool tried_before(const char *const *paths, int i)
{
    char mine[PATH_MAX], other[PATH_MAX];
    const char *name = file_of(paths[i], mine);
    for (int j = 0; j < i; j++)
        if (strcmp(name, file_of(paths[j], other)) == 0)
            return true;
    return false;
}

bool dnnjit__nvrtc_load_first(const char *const *paths, int count, char *error, size_t size)
{
    char tried[1024] = "", why[512] = "", reason[512] = "";
    size_t used = 0;
    for (int i = 0; i < count; i++) {
        if (tried_before(paths, i))
            continue;
        if (try_library(paths[i], why, sizeof why))
            return true;
        /* The first library that is there but unusable explains more than the missing
         * files tried after it. */
        if (!*reason && !no_such_file(paths[i], why))
            snprintf(reason, sizeof reason, "%s", why);
        if (used < sizeof tried)
            used += (size_t)snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", paths[i]);
    }
    if (*reason)
        snprintf(error, size, "NVRTC could not be loaded: %s (tried %s); install the CUDA toolkit's NVRTC or set "
                 "DNNJIT_NVRTC_LIBRARY", reason, tried);
    else
        snprintf(error, size, "NVRTC not found (tried %s; last error: %s); install the CUDA toolkit's NVRTC or set "
                 "DNNJIT_NVRTC_LIBRARY", tried, why);
    return false;
}

static void load_nvrtc(void)
{
    const char *forced = getenv("DNNJIT_NVRTC_LIBRARY");
    if (forced && *forced) {
        char why[512];
        load_ok = try_library(forced, why, sizeof why);
        if (!load_ok)
            snprintf(load_error, sizeof load_error, "NVRTC could not be loaded from DNNJIT_NVRTC_LIBRARY=%s: %s",
                     forced, why);
        return;
    }
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    const char *dirs[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    enum { NAMES = sizeof names / sizeof names[0], DIRS = sizeof dirs / sizeof dirs[0] };
    char storage[DIRS * NAMES][512];
    const char *paths[(DIRS + 1) * NAMES];
    int n = 0;
    /* First the loader (LD_LIBRARY_PATH, ldconfig), then each toolkit's lib64 folder. */
    for (int i = 0; i < NAMES; i++)
        paths[n++] = names[i];
    for (int d = 0; d < DIRS; d++) {
        for (int i = 0; dirs[d] && *dirs[d] && i < NAMES; i++) {
            snprintf(storage[d * NAMES + i], sizeof storage[0], "%s/lib64/%s", dirs[d], names[i]);
            paths[n++] = storage[d * NAMES + i];
        }
    }
    load_ok = dnnjit__nvrtc_load_first(paths, n, load_error, sizeof load_error);
}

dnnjit_status_t dnnjit__nvrtc_load(void)
{
    pthread_once(&load_once, load_nvrtc);
    if (!load_ok)
        return dnnjit__fail(NULL, DNNJIT_STATUS_NOT_SUPPORTED, "%s", load_error);
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit__nvrtc_version(int *major, int *minor)
{
    dnnjit_status_t s = dnnjit__nvrtc_load();
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    nvrtc_result_t r = nvrtc.version(major, minor);
    if (r != NVRTC_SUCCESS)
        return dnnjit__fail(NULL, DNNJIT_STATUS_INTERNAL, "nvrtcVersion failed: %s", nvrtc.get_error_string(r));
    return DNNJIT_STATUS_SUCCESS;
}

bool dnnjit__arch_is_valid(const char *arch)
{
    if (!arch || strncmp(arch, "sm_", 3) != 0)
        return false;
    const char *d = arch + 3;
    size_t digits = strspn(d, "0123456789");
    return digits >= 2 && digits <= 3 && d[0] != '0' &&
           (d[digits] == '\0' || (d[digits] == 'a' && d[digits + 1] == '\0'));
}

dnnjit_status_t dnnjit__check_arch(const char *arch)
{
    if (!arch)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "arch is NULL");
    if (!dnnjit__arch_is_valid(arch))
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM,
                            "arch \"%.32s\" is not a GPU architecture: expected \"sm_\", 2 or 3 digits and an "
                            "optional \"a\" (sm_80, sm_89, sm_90a, sm_100a)",
                            arch);
    return DNNJIT_STATUS_SUCCESS;
}

/* The first of $CUDA_HOME, $CUDA_PATH, /usr/local/cuda that has an include folder. */
static dnnjit_status_t find_toolkit(char *root, size_t size)
{
    const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        char probe[512];
        if (!roots[i] || !*roots[i])
            continue;
        snprintf(probe, sizeof probe, "%s/include/cuda_runtime.h", roots[i]);
        if (access(probe, R_OK) == 0) {
            snprintf(root, size, "%s", roots[i]);
            return DNNJIT_STATUS_SUCCESS;
        }
    }
    return dnnjit__fail(NULL, DNNJIT_STATUS_NOT_SUPPORTED,
                        "the kernel needs the CUDA headers but no toolkit include folder was found (looked in "
                        "$CUDA_HOME, $CUDA_PATH and /usr/local/cuda for include/cuda_runtime.h)");
}

/* The program's log without its trailing blank lines, or NULL when it is empty or cannot
 * be read; the caller frees it. */
static char *program_log(nvrtc_program_t prog)
{
    size_t log_size = 0;
    char *log = NULL;
    if (nvrtc.get_program_log_size(prog, &log_size) != NVRTC_SUCCESS || log_size <= 1 || !(log = malloc(log_size)))
        return NULL;
    if (nvrtc.get_program_log(prog, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    size_t len = strlen(log);
    while (len && (log[len - 1] == '\n' || log[len - 1] == ' '))
        log[--len] = '\0';
    if (!len) {
        free(log);
        return NULL;
    }
    return log;
}

/* The log, cut so that the whole message fits the library's message buffer: the first
 * errors are the ones that explain the rest. */
#define LOG_KEEP 1400

static dnnjit_status_t compile_failure(nvrtc_program_t prog, nvrtc_result_t r, const char *name, const char *arch)
{
    char *log = program_log(prog);
    size_t len = log ? strlen(log) : 0;
    dnnjit_status_t status = r == NVRTC_ERROR_OUT_OF_MEMORY  ? DNNJIT_STATUS_OUT_OF_MEMORY
                             : r == NVRTC_ERROR_INVALID_OPTION ? DNNJIT_STATUS_NOT_SUPPORTED
                                                               : DNNJIT_STATUS_COMPILE_ERROR;
    dnnjit__fail(NULL, status, "NVRTC could not compile \"%s\" for %s: %s%s%.*s%s", name, arch,
                 nvrtc.get_error_string(r), len ? "\n" : "", (int)(len > LOG_KEEP ? LOG_KEEP : len),
                 log ? log : "", len > LOG_KEEP ? "\n... (log truncated)" : "");
    free(log);
    return status;
}

const char *dnnjit__nvrtc_identity(void)
{
    return build_identity;
}

dnnjit_status_t dnnjit__nvrtc_options(const char *arch, const dnnjit__compile_options_t *options,
                                      dnnjit__nvrtc_options_t *out)
{
    dnnjit__compile_options_t none = {0};
    if (!options)
        options = &none;
    out->list = NULL;
    out->count = 0;
    if (options->extra_count < 0 || (options->extra_count > 0 && !options->extra))
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "NVRTC options: %d extra options but no array",
                            options->extra_count);
    dnnjit_status_t s = dnnjit__check_arch(arch);
    if (s == DNNJIT_STATUS_SUCCESS)
        s = dnnjit__nvrtc_load();
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    char root[512];
    if (options->cuda_headers && (s = find_toolkit(root, sizeof root)) != DNNJIT_STATUS_SUCCESS)
        return s;
    /* Three fixed options, -minimal or two include folders, then the caller's. */
    const char **list = malloc(sizeof *list * (size_t)(5 + options->extra_count));
    if (!list)
        return dnnjit__fail(NULL, DNNJIT_STATUS_OUT_OF_MEMORY, "NVRTC options: out of memory");
    int n = 0;
    snprintf(out->arch, sizeof out->arch, "--gpu-architecture=%s", arch);
    list[n++] = out->arch;
    list[n++] = "-std=c++17";
    list[n++] = "-default-device";
    if (options->cuda_headers) {
        snprintf(out->include, sizeof out->include, "--include-path=%s/include", root);
        snprintf(out->cccl, sizeof out->cccl, "--include-path=%s/include/cccl", root);
        list[n++] = out->include;
        list[n++] = out->cccl;
    } else if (takes_minimal) {
        /* A source with no headers uses none of what -minimal leaves out (textures, the
         * device runtime, the runtime's and driver's types), and its CUBIN comes out the
         * same while the front end has less to read: measured on NVRTC 13 over 21 of
         * dnnjit's kernels, 8% less compile time in all, up to a quarter for small ones. */
        list[n++] = "-minimal";
    }
    for (int i = 0; i < options->extra_count; i++)
        list[n++] = options->extra[i];
    out->list = list;
    out->count = n;
    return DNNJIT_STATUS_SUCCESS;
}

void dnnjit__nvrtc_options_free(dnnjit__nvrtc_options_t *o)
{
    free(o->list);
    o->list = NULL;
    o->count = 0;
}

dnnjit_status_t dnnjit__nvrtc_compile(const char *source, const char *name, const char *arch,
                                      const dnnjit__compile_options_t *options, void **cubin, size_t *size)
{
    if (!source || !name || !cubin || !size)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "nvrtc compile: source, name, cubin and size must be set");
    *cubin = NULL;
    *size = 0;
    dnnjit__nvrtc_options_t opts;
    dnnjit_status_t s = dnnjit__nvrtc_options(arch, options, &opts);
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    s = dnnjit__nvrtc_compile_listed(source, name, arch, &opts, cubin, size);
    dnnjit__nvrtc_options_free(&opts);
    return s;
}

dnnjit_status_t dnnjit__nvrtc_compile_listed(const char *source, const char *name, const char *arch,
                                             const dnnjit__nvrtc_options_t *opts, void **cubin, size_t *size)
{
    *cubin = NULL;
    *size = 0;
    dnnjit_status_t s = DNNJIT_STATUS_SUCCESS;
    nvrtc_program_t prog = NULL;
    nvrtc_result_t r = nvrtc.create_program(&prog, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return dnnjit__fail(NULL, r == NVRTC_ERROR_OUT_OF_MEMORY ? DNNJIT_STATUS_OUT_OF_MEMORY : DNNJIT_STATUS_COMPILE_ERROR,
                            "nvrtcCreateProgram for \"%s\" failed: %s", name, nvrtc.get_error_string(r));
    r = nvrtc.compile_program(prog, opts->count, opts->list);
    if (r == NVRTC_SUCCESS && dnnjit__log_enabled()) {
        /* A compile that succeeds may still have warned: shown only when asked for, so
         * that whoever changes a kernel template sees what NVRTC said of it. */
        char *log = program_log(prog);
        if (log)
            dnnjit__log("NVRTC compiled \"%s\" for %s with this log:\n%s", name, arch, log);
        free(log);
    }
    if (r != NVRTC_SUCCESS) {
        s = compile_failure(prog, r, name, arch);
    } else if ((r = nvrtc.get_cubin_size(prog, size)) != NVRTC_SUCCESS || *size == 0) {
        s = dnnjit__fail(NULL, DNNJIT_STATUS_COMPILE_ERROR, "nvrtcGetCUBINSize for \"%s\" failed: %s", name,
                         r ? nvrtc.get_error_string(r) : "empty CUBIN");
    } else if (!(*cubin = malloc(*size))) {
        s = dnnjit__fail(NULL, DNNJIT_STATUS_OUT_OF_MEMORY, "nvrtc compile of \"%s\": no memory for a %zu-byte CUBIN",
                         name, *size);
    } else if ((r = nvrtc.get_cubin(prog, *cubin)) != NVRTC_SUCCESS) {
        s = dnnjit__fail(NULL, DNNJIT_STATUS_COMPILE_ERROR, "nvrtcGetCUBIN for \"%s\" failed: %s", name,
                         nvrtc.get_error_string(r));
    }
    nvrtc.destroy_program(&prog);
    if (s != DNNJIT_STATUS_SUCCESS) {
        free(*cubin);
        *cubin = NULL;
        *size = 0;
    }
    return s;
}
