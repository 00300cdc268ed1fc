/* dnnjit-bench: times dnnjit on the GPU and prints one JSON object per line.
 *   dnnjit-bench run         pointwise sigmoid(a + b*c) on 64M half: cold build, memory-
 *                            cache build, device time per call (CUDA events around many
 *                            back-to-back calls, median of repeats), host time per execute
 *   dnnjit-bench build-only  the same graph's build time alone (run in a fresh process
 *                            after `run` to measure a build from the warm disk cache)
 */
#define _POSIX_C_SOURCE 200809L

#include "dnnjit.h"
#include "jit/jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        dnnjit_status_t s_ = (call);                                                                 \
        if (s_) {                                                                                    \
            fprintf(stderr, "dnnjit-bench: %s: %s: %s\n", #call, dnnjit_status_name(s_), dnnjit_last_error()); \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)
#define CU(call) CHECK(dnnjit__cu_check((call), #call))

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { N = 64 * 1024 * 1024 };

/* sigmoid(a + b * c), all half, n elements. */
static dnnjit_graph_t sigmoid_graph(dnnjit_handle_t h, int64_t n, dnnjit_tensor_t io[4])
{
    dnnjit_graph_t g;
    CHECK(dnnjit_graph_create(h, &(dnnjit_graph_attr_t){.name = "sigmoid_fma", .io_data_type = DNNJIT_DATA_TYPE_HALF}, &g));
    static const char *names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = names[i], .ndim = 1, .dim = &n}, &io[i]));
    dnnjit_tensor_t t, u;
    CHECK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, io[1], io[2], 0, &t));
    CHECK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, io[0], t, 0, &u));
    CHECK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SIGMOID_FWD}, u, 0, 0, &io[3]));
    CHECK(dnnjit_tensor_set_output(g, io[3], true));
    return g;
}

/* Seed 000: C[4,64,64] = A[4,64,128] @ B[4,128,64], half in/out, float compute. */
static dnnjit_graph_t seed000_graph(dnnjit_handle_t h, dnnjit_tensor_t io[3])
{
    dnnjit_graph_t g;
    CHECK(dnnjit_graph_create(h, &(dnnjit_graph_attr_t){.name = "seed000", .io_data_type = DNNJIT_DATA_TYPE_HALF}, &g));
    CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "A", .ndim = 3, .dim = (int64_t[]){4, 64, 128}}, &io[0]));
    CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "B", .ndim = 3, .dim = (int64_t[]){4, 128, 64}}, &io[1]));
    CHECK(dnnjit_graph_matmul(g, io[0], io[1], NULL, &io[2]));
    CHECK(dnnjit_tensor_set_output(g, io[2], true));
    return g;
}

static double timed_build(dnnjit_graph_t g)
{
    dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A;
    double t0 = now_us();
    CHECK(dnnjit_graph_build(g, &a, 1));
    return now_us() - t0;
}

/* Median device microseconds per call over `repeats` timings of `calls` back-to-back
 * executes between one pair of events. */
static double device_us_per_call(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n, int calls, int repeats)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    dnnjit__cu_event_t start, stop;
    CU(cu->cuEventCreate(&start, 0));
    CU(cu->cuEventCreate(&stop, 0));
    for (int i = 0; i < 10; i++)
        CHECK(dnnjit_graph_execute(g, pack, n, NULL, NULL));
    double *samples = malloc(sizeof *samples * (size_t)repeats);
    for (int r = 0; r < repeats; r++) {
        CU(cu->cuEventRecord(start, NULL));
        for (int i = 0; i < calls; i++)
            CHECK(dnnjit_graph_execute(g, pack, n, NULL, NULL));
        CU(cu->cuEventRecord(stop, NULL));
        CU(cu->cuEventSynchronize(stop));
        float ms;
        CU(cu->cuEventElapsedTime(&ms, start, stop));
        samples[r] = ms * 1e3 / calls;
    }
    qsort(samples, (size_t)repeats, sizeof *samples, cmp_double);
    double median = samples[repeats / 2];
    free(samples);
    cu->cuEventDestroy(start);
    cu->cuEventDestroy(stop);
    return median;
}

int main(int argc, char **argv)
{
    bool build_only = argc > 1 && strcmp(argv[1], "build-only") == 0;
    dnnjit_handle_t h;
    CHECK(dnnjit_handle_create(&h));
    char arch[16];
    bool has_device;
    CHECK(dnnjit_handle_get_arch(h, arch, sizeof arch, &has_device));
    if (!has_device) {
        fprintf(stderr, "dnnjit-bench: no GPU\n");
        return 77;
    }
    dnnjit_tensor_t io[4];
    dnnjit_graph_t g = sigmoid_graph(h, N, io);
    double build = timed_build(g);
    if (build_only) {
        printf("{\"case\": \"build_warm_disk_cache\", \"us\": %.1f}\n", build);
        return 0;
    }
    printf("{\"case\": \"build_cold\", \"us\": %.1f, \"arch\": \"%s\"}\n", build, arch);
    dnnjit_graph_t again = sigmoid_graph(h, N, io);
    printf("{\"case\": \"build_warm_memory_cache\", \"us\": %.1f}\n", timed_build(again));
    dnnjit_graph_destroy(again);

    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    dnnjit__cu_deviceptr_t buf[4];
    dnnjit_variant_t pack[4];
    for (int i = 0; i < 4; i++) {
        CU(cu->cuMemAlloc(&buf[i], (size_t)N * 2));
        int64_t uid;
        CHECK(dnnjit_tensor_get_uid(g, io[i], &uid));
        pack[i] = (dnnjit_variant_t){uid, (void *)(uintptr_t)buf[i]};
    }
    double us = device_us_per_call(g, pack, 4, 20, 15);
    printf("{\"case\": \"sigmoid_fma_64M_half\", \"us\": %.2f, \"tb_per_s\": %.3f}\n", us, 4.0 * N * 2 / us / 1e6);

    /* Host cost of one execute: a tiny graph, many calls, wall clock. */
    dnnjit_tensor_t small_io[4];
    dnnjit_graph_t small = sigmoid_graph(h, 1024, small_io);
    timed_build(small);
    dnnjit_variant_t small_pack[4];
    for (int i = 0; i < 4; i++) {
        int64_t uid;
        CHECK(dnnjit_tensor_get_uid(small, small_io[i], &uid));
        small_pack[i] = (dnnjit_variant_t){uid, pack[i].ptr};
    }
    double device_small = device_us_per_call(small, small_pack, 4, 1000, 9);
    const int calls = 20000;
    double t0 = now_us();
    for (int i = 0; i < calls; i++)
        CHECK(dnnjit_graph_execute(small, small_pack, 4, NULL, NULL));
    double host = (now_us() - t0) / calls;
    CU(cu->cuStreamSynchronize(NULL));
    printf("{\"case\": \"execute_host_overhead\", \"us\": %.2f, \"device_us_per_call_1k\": %.2f}\n", host, device_small);
    dnnjit_graph_destroy(small);

    dnnjit_tensor_t mm_io[3];
    dnnjit_graph_t mm = seed000_graph(h, mm_io);
    timed_build(mm);
    char *plan = NULL;
    int64_t chosen;
    CHECK(dnnjit_graph_get_chosen_plan(mm, &chosen));
    CHECK(dnnjit_graph_get_plan_name(mm, chosen, &plan));
    dnnjit_variant_t mm_pack[3];
    for (int i = 0; i < 3; i++) {
        int64_t uid;
        CHECK(dnnjit_tensor_get_uid(mm, mm_io[i], &uid));
        mm_pack[i] = (dnnjit_variant_t){uid, pack[i].ptr};
    }
    printf("{\"case\": \"seed000_bmm_half\", \"us\": %.2f, \"plan\": \"%s\"}\n",
           device_us_per_call(mm, mm_pack, 3, 1000, 9), plan);
    dnnjit_free(plan);
    dnnjit_graph_destroy(mm);
    for (int i = 0; i < 4; i++)
        cu->cuMemFree(buf[i]);
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
    return 0;
}
