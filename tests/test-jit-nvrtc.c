/* NVRTC compilation and driver loading, without a GPU: CUBINs for several architectures,
 * compile errors with their log, architecture checks and the messages given when NVRTC
 * or the driver is missing. */
#include "jit-test.h"

#include <dlfcn.h>

static const char *const archs[] = {"sm_80", "sm_90a"};

static void compile_checked(const char *source, const char *name, const char *kernel, bool headers)
{
    dnnjit__compile_options_t opt = {.cuda_headers = headers};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        void *cubin = NULL;
        size_t size = 0;
        JT_OK(dnnjit__nvrtc_compile(source, name, archs[i], &opt, &cubin, &size));
        jt_assert_cubin(cubin, size, kernel);
        free(cubin);
    }
}

static void axpy_compiles(void **state)
{
    (void)state;
    compile_checked(jt_axpy_source, "axpy.cu", "axpy", false);
}

static void half_kernel_compiles_with_headers(void **state)
{
    (void)state;
    compile_checked(jt_half_source, "scale_half.cu", "scale_half", true);
}

static void inline_ptx_mma_compiles(void **state)
{
    (void)state;
    compile_checked(jt_mma_source, "mma.cu", "mma16816", false);
}

/* A source without headers compiles with -minimal (NVRTC 12.4 and later), which must not
 * change its CUBIN: the same source compiled with the headers' folders (and so without
 * -minimal) gives the same bytes. */
static void minimal_front_end_keeps_the_cubin(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        void *plain = NULL, *with_headers = NULL;
        size_t plain_size = 0, headers_size = 0;
        JT_OK(dnnjit__nvrtc_compile(jt_mma_source, "mma.cu", archs[i], NULL, &plain, &plain_size));
        JT_OK(dnnjit__nvrtc_compile(jt_mma_source, "mma.cu", archs[i], &(dnnjit__compile_options_t){.cuda_headers = true},
                                    &with_headers, &headers_size));
        assert_int_equal(plain_size, headers_size);
        assert_memory_equal(plain, with_headers, plain_size);
        free(plain);
        free(with_headers);
    }
}

static void extra_options_are_passed(void **state)
{
    (void)state;
    /* The source only compiles when the macro arrives. */
    const char *src = "#ifndef SCALE\n#error SCALE missing\n#endif\n"
                      "extern \"C\" __global__ void k(float *p) { p[0] *= SCALE; }\n";
    const char *extra[] = {"-DSCALE=2.0f", "--use_fast_math"};
    dnnjit__compile_options_t opt = {.extra = extra, .extra_count = 2};
    void *cubin = NULL;
    size_t size = 0;
    JT_OK(dnnjit__nvrtc_compile(src, "scaled.cu", "sm_80", &opt, &cubin, &size));
    jt_assert_cubin(cubin, size, "k");
    free(cubin);
    JT_FAILS(dnnjit__nvrtc_compile(src, "scaled.cu", "sm_80", NULL, &cubin, &size), DNNJIT_STATUS_COMPILE_ERROR,
             "SCALE missing");
    assert_null(cubin);
    assert_int_equal(size, 0);
}

static void syntax_error_reports_the_log(void **state)
{
    (void)state;
    const char *src = "extern \"C\" __global__ void broken(float *p)\n"
                      "{\n"
                      "    p[0] = ;\n"
                      "}\n";
    void *cubin = (void *)1;
    size_t size = 1;
    JT_FAILS(dnnjit__nvrtc_compile(src, "broken.cu", "sm_90a", NULL, &cubin, &size), DNNJIT_STATUS_COMPILE_ERROR,
             "NVRTC could not compile \"broken.cu\" for sm_90a");
    /* NVRTC's log names the file and line of the error. */
    assert_non_null(strstr(dnnjit_last_error(), "broken.cu(3)"));
    assert_non_null(strstr(dnnjit_last_error(), "error"));
    assert_null(cubin);
    assert_int_equal(size, 0);
}

static void long_log_is_truncated(void **state)
{
    (void)state;
    /* 400 undefined identifiers give a log far longer than a message. */
    size_t cap = 400 * 64 + 256, used = 0;
    char *src = malloc(cap);
    assert_non_null(src);
    used += (size_t)snprintf(src + used, cap - used, "extern \"C\" __global__ void many(float *p)\n{\n");
    for (int i = 0; i < 400; i++)
        used += (size_t)snprintf(src + used, cap - used, "    p[%d] = undefined_name_%d;\n", i, i);
    snprintf(src + used, cap - used, "}\n");
    void *cubin = NULL;
    size_t size = 0;
    JT_FAILS(dnnjit__nvrtc_compile(src, "many.cu", "sm_80", NULL, &cubin, &size), DNNJIT_STATUS_COMPILE_ERROR,
             "undefined_name_0");
    const char *msg = dnnjit_last_error();
    assert_non_null(strstr(msg, "(log truncated)"));
    assert_null(strstr(msg, "undefined_name_399"));
    free(src);
}

static void arch_strings_are_checked(void **state)
{
    (void)state;
    const char *good[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120"};
    const char *bad[] = {"", "sm_", "sm_8", "sm_8a", "sm_1000", "sm_090", "compute_80", "SM_80",
                         "sm_90b", "sm_90aa", "sm_80 ", "80", "sm-80"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_true(dnnjit__arch_is_valid(good[i]));
        JT_OK(dnnjit__check_arch(good[i]));
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(dnnjit__arch_is_valid(bad[i]));
        JT_FAILS(dnnjit__check_arch(bad[i]), DNNJIT_STATUS_BAD_PARAM, "is not a GPU architecture");
        void *cubin = NULL;
        size_t size = 0;
        JT_FAILS(dnnjit__nvrtc_compile(jt_axpy_source, "axpy.cu", bad[i], NULL, &cubin, &size),
                 DNNJIT_STATUS_BAD_PARAM, bad[i][0] ? bad[i] : "\"\"");
        assert_null(cubin);
    }
    JT_FAILS(dnnjit__check_arch(NULL), DNNJIT_STATUS_BAD_PARAM, "arch is NULL");
}

static void arch_unknown_to_nvrtc_is_not_supported(void **state)
{
    (void)state;
    /* Well formed, but no GPU has compute capability 1.1 any more. */
    void *cubin = NULL;
    size_t size = 0;
    JT_FAILS(dnnjit__nvrtc_compile(jt_axpy_source, "axpy.cu", "sm_11", NULL, &cubin, &size),
             DNNJIT_STATUS_NOT_SUPPORTED, "for sm_11");
    assert_null(cubin);
}

static void bad_arguments_are_rejected(void **state)
{
    (void)state;
    void *cubin = NULL;
    size_t size = 0;
    JT_FAILS(dnnjit__nvrtc_compile(NULL, "x.cu", "sm_80", NULL, &cubin, &size), DNNJIT_STATUS_BAD_PARAM,
             "must be set");
    JT_FAILS(dnnjit__nvrtc_compile(jt_axpy_source, "x.cu", "sm_80", NULL, NULL, &size), DNNJIT_STATUS_BAD_PARAM,
             "must be set");
    dnnjit__compile_options_t opt = {.extra_count = 2};
    JT_FAILS(dnnjit__nvrtc_compile(jt_axpy_source, "x.cu", "sm_80", &opt, &cubin, &size), DNNJIT_STATUS_BAD_PARAM,
             "2 extra options but no array");
}

static void version_is_reported(void **state)
{
    (void)state;
    int major = -1, minor = -1;
    JT_OK(dnnjit__nvrtc_version(&major, &minor));
    /* CUBIN output (nvrtcGetCUBIN) exists since 11.1, so a loaded NVRTC is at least that. */
    assert_true(major > 11 || (major == 11 && minor >= 1));
    assert_true(minor >= 0 && minor < 100);
}

/* Run in a fresh process: NVRTC is loaded once per process. */
static int child_missing_nvrtc(void)
{
    setenv("DNNJIT_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so", 1);
    void *cubin = NULL;
    size_t size = 0;
    dnnjit_status_t s = dnnjit__nvrtc_compile(jt_axpy_source, "axpy.cu", "sm_80", NULL, &cubin, &size);
    JT_CHILD_CHECK(s == DNNJIT_STATUS_NOT_SUPPORTED, 2);
    JT_CHILD_CHECK(strstr(dnnjit_last_error(),
                          "NVRTC could not be loaded from DNNJIT_NVRTC_LIBRARY=/nonexistent/libnvrtc.so: "),
                   3);
    /* dlerror's own words for a missing file. */
    JT_CHILD_CHECK(strstr(dnnjit_last_error(), "No such file"), 4);
    int major, minor;
    JT_CHILD_CHECK(dnnjit__nvrtc_version(&major, &minor) == DNNJIT_STATUS_NOT_SUPPORTED, 5);
    JT_CHILD_CHECK(!cubin && size == 0, 6);
    return 0;
}

static void missing_nvrtc_is_named(void **state)
{
    (void)state;
    assert_int_equal(jt_run_child((const char *[]){"missing-nvrtc", NULL}, -1), 0);
}

/* The search for NVRTC reports the library that is there but unusable (here a truncated
 * copy of this program, as a damaged install would be), not only the last missing file, and
 * tries a file reached by a second name once. */
static void search_reports_an_unusable_library(void **state)
{
    (void)state;
    /* A short folder name, so that every name made from it fits. */
    char dir[256], lib[512], again[1024];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/dnnjit-nvrtc-search-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(lib, sizeof lib, "%s/libnvrtc.so.13", dir);
    snprintf(again, sizeof again, "%s/../%s/libnvrtc.so.13", dir, strrchr(dir, '/') + 1);
    FILE *self = fopen("/proc/self/exe", "rb"), *copy = fopen(lib, "wb");
    assert_non_null(self);
    assert_non_null(copy);
    char head[100];
    assert_int_equal(fread(head, 1, sizeof head, self), sizeof head);
    assert_int_equal(fwrite(head, 1, sizeof head, copy), sizeof head);
    fclose(self);
    assert_int_equal(fclose(copy), 0);

    const char *paths[] = {"libnvrtc-dnnjit-test-none.so.13", lib, again, "/nonexistent/lib64/libnvrtc.so"};
    char error[2048];
    assert_false(dnnjit__nvrtc_load_first(paths, 4, error, sizeof error));
    char want[1024];
    snprintf(want, sizeof want, "NVRTC could not be loaded: %s: ", lib);
    if (strncmp(error, want, strlen(want)) != 0)
        fail_msg("the message does not start with the truncated library's reason: %s", error);
    snprintf(want, sizeof want, "(tried libnvrtc-dnnjit-test-none.so.13, %s, /nonexistent/lib64/libnvrtc.so)", lib);
    if (!strstr(error, want))
        fail_msg("the message does not name each candidate once: %s", error);
    /* With only missing files, the last one's reason is all there is to say. */
    const char *missing[] = {"/nonexistent/lib64/libnvrtc.so.13", "/nonexistent/lib64/libnvrtc.so"};
    assert_false(dnnjit__nvrtc_load_first(missing, 2, error, sizeof error));
    assert_non_null(strstr(error, "NVRTC not found (tried /nonexistent/lib64/libnvrtc.so.13, "
                                  "/nonexistent/lib64/libnvrtc.so; last error: /nonexistent/lib64/libnvrtc.so: "));
    /* The failed candidates changed nothing: the loaded NVRTC still compiles. */
    void *cubin = NULL;
    size_t size = 0;
    JT_OK(dnnjit__nvrtc_compile(jt_axpy_source, "axpy.cu", "sm_80", NULL, &cubin, &size));
    free(cubin);
    assert_int_equal(unlink(lib), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* Whether this machine has a driver, asked without the library. */
static bool have_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (lib)
        dlclose(lib);
    return lib != NULL;
}

static void driver_load_reports_what_is_missing(void **state)
{
    (void)state;
    dnnjit_status_t s = dnnjit__driver_load();
    if (!have_driver()) {
        JT_FAILS(s, DNNJIT_STATUS_NOT_SUPPORTED, "no CUDA driver found (tried libcuda.so.1: ");
        /* The dlerror text follows and names the library it could not open. */
        assert_non_null(strstr(dnnjit_last_error() + strlen("no CUDA driver found (tried "), "libcuda.so.1"));
        /* Every later call gives the same answer. */
        JT_FAILS(dnnjit__driver_use_device(0), DNNJIT_STATUS_NOT_SUPPORTED, "no CUDA driver found");
        char arch[DNNJIT__ARCH_LEN];
        JT_FAILS(dnnjit__driver_current_arch(arch), DNNJIT_STATUS_NOT_SUPPORTED, "no CUDA driver found");
        JT_FAILS(dnnjit__driver_check_device_pointer(&s, "tensor \"A\""), DNNJIT_STATUS_NOT_SUPPORTED,
                 "no CUDA driver found");
    } else if (s != DNNJIT_STATUS_SUCCESS) {
        /* A driver without a usable GPU fails in cuInit, and says so. */
        JT_FAILS(s, s, "cuInit failed: CUDA_ERROR_");
    } else {
        assert_non_null(dnnjit__cuda()->cuLaunchKernel);
        assert_non_null(dnnjit__cuda()->cuMemAlloc);
        int version = 0;
        JT_OK(dnnjit__cu_check(dnnjit__cuda()->cuDriverGetVersion(&version), "cuDriverGetVersion"));
        assert_true(version >= 11000);
    }
}

static int child_forced_driver(void)
{
    setenv("DNNJIT_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    JT_CHILD_CHECK(dnnjit__driver_load() == DNNJIT_STATUS_NOT_SUPPORTED, 2);
    JT_CHILD_CHECK(strstr(dnnjit_last_error(),
                          "no CUDA driver found (tried /nonexistent/libcuda.so.1 from DNNJIT_CUDA_LIBRARY: "),
                   3);
    return 0;
}

static void forced_driver_path_is_named(void **state)
{
    (void)state;
    assert_int_equal(jt_run_child((const char *[]){"forced-driver", NULL}, -1), 0);
}

static void capability_maps_to_arch(void **state)
{
    (void)state;
    static const struct {
        int major, minor;
        const char *arch;
    } cases[] = {{8, 0, "sm_80"},   {8, 6, "sm_86"},   {8, 9, "sm_89"},   {9, 0, "sm_90a"},
                 {10, 0, "sm_100a"}, {10, 3, "sm_103"}, {12, 0, "sm_120"}, {7, 5, "sm_75"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char arch[DNNJIT__ARCH_LEN];
        dnnjit__arch_for_capability(cases[i].major, cases[i].minor, arch);
        assert_string_equal(arch, cases[i].arch);
        assert_true(dnnjit__arch_is_valid(arch));
    }
}

static void cu_check_names_the_call(void **state)
{
    (void)state;
    JT_OK(dnnjit__cu_check(0, "cuInit"));
    /* Without a driver the error text is unavailable, but the call and code are kept;
     * CUDA_ERROR_OUT_OF_MEMORY (2) maps to OUT_OF_MEMORY either way. */
    JT_FAILS(dnnjit__cu_check(2, "cuMemAlloc(4096 bytes)"), DNNJIT_STATUS_OUT_OF_MEMORY,
             "cuMemAlloc(4096 bytes) failed: ");
    assert_non_null(strstr(dnnjit_last_error(), "(2)"));
    JT_FAILS(dnnjit__cu_check(100, "cuDeviceGet"), DNNJIT_STATUS_NOT_SUPPORTED, "cuDeviceGet failed");
    JT_FAILS(dnnjit__cu_check(700, "cuStreamSynchronize"), DNNJIT_STATUS_CUDA_ERROR, "(700)");
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        if (strcmp(argv[2], "missing-nvrtc") == 0)
            return child_missing_nvrtc();
        if (strcmp(argv[2], "forced-driver") == 0)
            return child_forced_driver();
        return 99;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(axpy_compiles),
        cmocka_unit_test(half_kernel_compiles_with_headers),
        cmocka_unit_test(inline_ptx_mma_compiles),
        cmocka_unit_test(minimal_front_end_keeps_the_cubin),
        cmocka_unit_test(extra_options_are_passed),
        cmocka_unit_test(syntax_error_reports_the_log),
        cmocka_unit_test(long_log_is_truncated),
        cmocka_unit_test(arch_strings_are_checked),
        cmocka_unit_test(arch_unknown_to_nvrtc_is_not_supported),
        cmocka_unit_test(bad_arguments_are_rejected),
        cmocka_unit_test(version_is_reported),
        cmocka_unit_test(missing_nvrtc_is_named),
        cmocka_unit_test(search_reports_an_unusable_library),
        cmocka_unit_test(driver_load_reports_what_is_missing),
        cmocka_unit_test(forced_driver_path_is_named),
        cmocka_unit_test(capability_maps_to_arch),
        cmocka_unit_test(cu_check_names_the_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
