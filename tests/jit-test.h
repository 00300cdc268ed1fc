/* Helpers shared by the src/jit tests: status assertions, kernels to compile, CUBIN
 * checks and child processes (a fresh process is the only way to see a fresh dlopen or a
 * cold memory cache). */
#ifndef DNNJIT_TEST_JIT_TEST_H
#define DNNJIT_TEST_JIT_TEST_H

#define _XOPEN_SOURCE 700 /* POSIX 2008 with nftw */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "jit/jit.h"

/* Asserts a call succeeded, printing the library's message when it did not. */
#define JT_OK(call)                                                                             \
    do {                                                                                        \
        dnnjit_status_t jt_s_ = (call);                                                         \
        if (jt_s_ != DNNJIT_STATUS_SUCCESS)                                                     \
            fail_msg("%s failed: %s: %s", #call, dnnjit_status_name(jt_s_), dnnjit_last_error()); \
    } while (0)

/* Asserts a call failed with `status` and a message containing `fragment`. */
#define JT_FAILS(call, status, fragment)                                                                \
    do {                                                                                                \
        dnnjit_status_t jt_s_ = (call);                                                                 \
        if (jt_s_ != (status))                                                                          \
            fail_msg("%s gave %s, expected %s (message: %s)", #call, dnnjit_status_name(jt_s_),         \
                     dnnjit_status_name(status), dnnjit_last_error());                                  \
        if (!strstr(dnnjit_last_error(), (fragment)))                                                   \
            fail_msg("%s: message \"%s\" lacks \"%s\"", #call, dnnjit_last_error(), (fragment));        \
    } while (0)

/* y = a * x + y in fp32. */
static const char jt_axpy_source[] =
    "extern \"C\" __global__ void axpy(int n, float a, const float *x, float *y)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        y[i] = a * x[i] + y[i];\n"
    "}\n";

/* A half kernel that needs the toolkit's <cuda_fp16.h>. */
static const char jt_half_source[] =
    "#include <cuda_fp16.h>\n"
    "extern \"C\" __global__ void scale_half(int n, float a, const __half *x, __half *y)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        y[i] = __hmul(__float2half(a), x[i]);\n"
    "}\n";

/* One warp computes a 16x8 tile D = A (16x16) * B (16x8) with the sm_80 tensor core
 * instruction; each thread passes its A (4 regs), B (2 regs) fragments and gets 4 floats. */
static const char jt_mma_source[] =
    "extern \"C\" __global__ void mma16816(const unsigned *a, const unsigned *b, float *d)\n"
    "{\n"
    "    unsigned t = threadIdx.x;\n"
    "    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \"\n"
    "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
    "                 : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
    "                 : \"r\"(a[4 * t]), \"r\"(a[4 * t + 1]), \"r\"(a[4 * t + 2]), \"r\"(a[4 * t + 3]),\n"
    "                   \"r\"(b[2 * t]), \"r\"(b[2 * t + 1]));\n"
    "    d[4 * t] = d0;\n"
    "    d[4 * t + 1] = d1;\n"
    "    d[4 * t + 2] = d2;\n"
    "    d[4 * t + 3] = d3;\n"
    "}\n";

/* A CUBIN is a 64-bit ELF file for machine EM_CUDA (190), and its symbol table names the
 * kernel. */
static inline void jt_assert_cubin(const void *cubin, size_t size, const char *kernel)
{
    const unsigned char *p = cubin;
    assert_non_null(cubin);
    assert_true(size > 64);
    assert_memory_equal(p, "\x7f" "ELF", 4);
    assert_int_equal(p[4], 2);               /* ELFCLASS64 */
    assert_int_equal(p[18] | (p[19] << 8), 190); /* e_machine, little-endian */
    size_t n = strlen(kernel);
    bool named = false;
    for (size_t i = 0; i + n + 1 <= size && !named; i++)
        named = memcmp(p + i, kernel, n + 1) == 0; /* with its terminator, as in a string table */
    assert_true(named);
}

/* Starts this test binary again as `argv0 --child <args...>` (args NULL-terminated);
 * `stderr_fd` >= 0 receives the child's stderr. */
static inline pid_t jt_spawn_child(const char *const *args, int stderr_fd)
{
    char *argv[16] = {"/proc/self/exe", "--child"};
    int argc = 2;
    for (; argc < 15 && args[argc - 2]; argc++)
        argv[argc] = (char *)args[argc - 2];
    argv[argc] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (stderr_fd >= 0)
            dup2(stderr_fd, 2);
        execv("/proc/self/exe", argv);
        _exit(126);
    }
    return pid;
}

/* The child's exit status, or -1 when it did not exit normally. */
static inline int jt_wait_child(pid_t pid)
{
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static inline int jt_run_child(const char *const *args, int stderr_fd)
{
    return jt_wait_child(jt_spawn_child(args, stderr_fd));
}

/* In a child: reports a failed check on stderr and exits with `code`. */
#define JT_CHILD_CHECK(cond, code)                                                                     \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            fprintf(stderr, "child check failed: %s (last error: %s)\n", #cond, dnnjit_last_error());  \
            exit(code);                                                                                \
        }                                                                                              \
    } while (0)

#endif
