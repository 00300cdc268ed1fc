/* dnnjit-bench: times dnnjit on the GPU and prints one JSON object per line.
 *   dnnjit-bench run         pointwise sigmoid(a + b*c) on 64M half: cold build, median memory-
 *                            cache build, device time per call (CUDA events around many
 *                            back-to-back calls, median of repeats), host time per execute
 *   dnnjit-bench build-only  the same graph's build time alone (run in a fresh process
 *                            after `run` to measure a build from the warm disk cache)
 *   dnnjit-bench build-host ARCH
 *                            without a GPU (a handle for ARCH, e.g. sm_90a): the first
 *                            build of the sigmoid graph in the process (from the disk cache
 *                            when an earlier run left it there; NVRTC's load included, as no
 *                            device handle starts it early) and the median memory-cache build
 *   dnnjit-bench gemm [--all-plans]
 *                            4096^3 bf16 GEMM, 8x4096^3 bf16 bmm + bias + relu, and 8192^3
 *                            fp8 E4M3 (B K-major) times a scale into bf16: mode A's
 *                            plan and the fastest listed plan, device time and TFLOP/s
 *                            (when they differ, both timed again in alternating rounds)
 *                            (and the cold build time of each plan reported: the median of
 *                            three NVRTC compiles, the caches emptied or off), and
 *                            the fastest plan of each tensor-core engine (sm90_*: the TMA +
 *                            wgmma engine, sm80_*: the mma.sync one); with --all-plans also
 *                            seed 000's batched half matmul, and one line per listed
 *                            tensor-core plan (device time, TFLOP/s, build time: the NVRTC
 *                            compile when DNNJIT_CACHE=0) then the picks of modes A and B;
 *                            then the issue-5 sweep, mode A's plan only (`gemm_sweep/...`):
 *                            bf16 and fp16 at 2048^3, 4096^3 and 8192^3, the LLM shapes
 *                            M in {1, 16, 128, 4096} x (N, K) in {(4096, 4096),
 *                            (14336, 4096), (4096, 14336)} with B an nn.Linear weight
 *                            [N, K] seen as [K, N], 4097x4095x4099 and 1000x77x1000, and
 *                            fp32 4096^3 and 8192^3 with B a weight, timed on mode A's
 *                            first plan noted REDUCED_PRECISION (TF32), and mode A's first
 *                            plan (exact) as exact_us
 *   dnnjit-bench gemm --sweep-all-plans [FILTER]
 *                            the same, but every tensor-core plan modes A and B list for
 *                            each sweep case is built and timed: one line per plan
 *                            (`gemm_sweep/<shape>@<plan>`: device time, TFLOP/s, build time;
 *                            or the error when it does not build), then the case's line
 *                            with mode A's plan and time, the fastest plan and time and
 *                            mode_a_over_best, their ratio. Each plan is an NVRTC compile
 *                            (0.1 to 0.6 s): with FILTER only the sweep cases whose names
 *                            contain it run, and the first cases are left out; with
 *                            DNNJIT_BENCH_PLANS=FRAGMENT[,FRAGMENT...] only the plans whose
 *                            names contain one of them are timed, and the first (mode A's)
 *   dnnjit-bench sweep-compile ARCH [FILTER]
 *                            no GPU needed: builds for ARCH every plan --sweep-all-plans
 *                            would time, leaving the kernels in the disk cache for a GPU
 *                            run of the same build to find
 *   dnnjit-bench rows [--all-plans] [FILTER]
 *                            row ops (softmax, layer norm, RMS norm, add + RMS norm and the
 *                            backwards) on the issue-6 shapes: device time of the plan mode A
 *                            picks (and mode B's when it differs; every rows plan with
 *                            --all-plans) and the effective bandwidth, bytes of every input
 *                            read once and every output written once over the time; with
 *                            FILTER only the cases whose names contain it
 */
#define _POSIX_C_SOURCE 200809L

#include "dnnjit.h"
#include "jit/jit.h"

#include <stdint.h>
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

/* Every timing starts from the same state of the GPU: COOLDOWN_MS idle, then a warm-up of
 * at least WARMUP_CALLS calls and WARMUP_MS of device time back to back, then the timed
 * calls (tens of ms). The H200's clocks depend on what it ran in the seconds before: one run
 * timed the same cuBLAS 4096^3 GEMM at 176 us after an idle moment and 205 us after seconds
 * of GEMMs, and dnnjit's kernels moved the same way; a plan timed right after an NVRTC
 * compile, with only ten calls of warm-up, ran up to 15% slower still (clocks not yet up).
 * run.py times the torch peers alike. */
enum { COOLDOWN_MS = 300, WARMUP_CALLS = 10, WARMUP_MS = 100 };

static void cooldown(void)
{
    struct timespec idle = {0, COOLDOWN_MS * 1000000L};
    nanosleep(&idle, NULL);
}

/* Device milliseconds of `calls` back-to-back executes between the events start and stop. */
static float executes_ms(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n, void *workspace, int calls,
                         dnnjit__cu_event_t start, dnnjit__cu_event_t stop)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    CU(cu->cuEventRecord(start, NULL));
    for (int i = 0; i < calls; i++)
        CHECK(dnnjit_graph_execute(g, pack, n, workspace, NULL));
    CU(cu->cuEventRecord(stop, NULL));
    CU(cu->cuEventSynchronize(stop));
    float ms;
    CU(cu->cuEventElapsedTime(&ms, start, stop));
    return ms;
}

/* Median device microseconds per call over `repeats` timings of `calls` back-to-back
 * executes between one pair of events, after the cooldown and the warm-up; with `settle`
 * false, no cooldown or warm-up (a rough probe, not a result). */
static double device_us_per_call_ws(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n, void *workspace,
                                    int calls, int repeats, bool settle)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    dnnjit__cu_event_t start, stop;
    CU(cu->cuEventCreate(&start, 0));
    CU(cu->cuEventCreate(&stop, 0));
    if (settle) {
        cooldown();
        for (float warm_ms = 0.0f; warm_ms < WARMUP_MS;)
            warm_ms += executes_ms(g, pack, n, workspace, WARMUP_CALLS, start, stop);
    }
    double *samples = malloc(sizeof *samples * (size_t)repeats);
    for (int r = 0; r < repeats; r++)
        samples[r] = executes_ms(g, pack, n, workspace, calls, start, stop) * 1e3 / calls;
    qsort(samples, (size_t)repeats, sizeof *samples, cmp_double);
    double median = samples[repeats / 2];
    free(samples);
    cu->cuEventDestroy(start);
    cu->cuEventDestroy(stop);
    return median;
}

static double device_us_per_call(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n, int calls, int repeats)
{
    return device_us_per_call_ws(g, pack, n, NULL, calls, repeats, true);
}

/* One GEMM case of the benchmark: C = act(A @ B + bias) with 16-bit `io` and float compute,
 * A [batch, m, k] row-major and B [batch, k, n] row-major (or, `b_weight`, the transpose
 * of a row-major [batch, n, k], as nn.Linear holds its weight); bias [1, 1, n] and relu
 * when `epilogue`. With `operands` (an fp8 type), A and B are of that type and C = (A @ B)
 * * scale, a float [1, 1, 1] tensor standing for the product of their per-tensor scales,
 * as torch._scaled_mm computes. */
typedef struct gemm_case {
    const char *name;
    dnnjit_data_type_t io;
    int64_t batch, m, n, k;
    bool epilogue, b_weight;
    dnnjit_data_type_t operands; /* 0: io */
} gemm_case_t;

static dnnjit_graph_t gemm_graph(dnnjit_handle_t h, const gemm_case_t *c, dnnjit_tensor_t io[4])
{
    int64_t batch = c->batch, m = c->m, n = c->n, k = c->k;
    bool epilogue = c->epilogue;
    dnnjit_graph_t g;
    CHECK(dnnjit_graph_create(h, &(dnnjit_graph_attr_t){.name = "gemm", .io_data_type = c->io,
                                                         .compute_data_type = DNNJIT_DATA_TYPE_FLOAT},
                              &g));
    CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "A", .ndim = 3, .dim = (int64_t[]){batch, m, k},
                                                         .data_type = c->operands},
                              &io[0]));
    const int64_t *b_stride = c->b_weight ? (int64_t[]){n * k, 1, k} : NULL;
    CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "B", .ndim = 3, .dim = (int64_t[]){batch, k, n},
                                                         .stride = b_stride, .data_type = c->operands},
                              &io[1]));
    CHECK(dnnjit_graph_matmul(g, io[0], io[1], NULL, &io[3]));
    io[2] = DNNJIT_TENSOR_NONE;
    if (c->operands) {
        CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "scale", .ndim = 3, .dim = (int64_t[]){1, 1, 1},
                                                             .data_type = DNNJIT_DATA_TYPE_FLOAT},
                                  &io[2]));
        CHECK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, io[3], io[2], 0,
                                     &io[3]));
    } else if (epilogue) {
        CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "bias", .ndim = 3, .dim = (int64_t[]){1, 1, n}},
                                  &io[2]));
        CHECK(dnnjit_graph_bias(g, "bias", io[3], io[2], &io[3]));
        CHECK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_RELU_FWD}, io[3], 0, 0,
                                     &io[3]));
    }
    CHECK(dnnjit_tensor_set_output(g, io[3], true));
    return g;
}

/* The median device time of the built plan per call: a rough probe first, then as
 * many back-to-back calls between a pair of events as fill about 5 ms (at least 3, at most
 * 2000), so that microsecond kernels are not lost in the event resolution. */
static double gemm_time_built(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t count)
{
    int64_t ws_size = 0;
    CHECK(dnnjit_graph_get_workspace_size(g, &ws_size));
    dnnjit__cu_deviceptr_t ws = 0;
    if (ws_size)
        CU(dnnjit__cuda()->cuMemAlloc(&ws, (size_t)ws_size));
    void *workspace = (void *)(uintptr_t)ws;
    /* A rough time per call, to size the timed loop. */
    double probe = device_us_per_call_ws(g, pack, count, workspace, 1, 3, false);
    int calls = probe > 0 ? (int)(5000.0 / probe) : 2000;
    calls = calls < 3 ? 3 : calls > 2000 ? 2000 : calls;
    double us = device_us_per_call_ws(g, pack, count, workspace, calls, 9, true);
    if (ws)
        dnnjit__cuda()->cuMemFree(ws);
    return us;
}

/* The name of the first plan `mode` lists for g (the plan dnnjit_graph_build would pick). */
static char *gemm_pick(dnnjit_graph_t g, dnnjit_heur_mode_t mode)
{
    char *name = NULL;
    CHECK(dnnjit_graph_create_execution_plans(g, &mode, 1));
    CHECK(dnnjit_graph_get_plan_name(g, 0, &name));
    return name;
}

/* Device buffers for the graph's tensors io (A, B, bias or NONE, C) filled with values
 * that keep the tensor cores busy; their pack entries in pack, their count returned. */
static size_t gemm_buffers(dnnjit_graph_t g, const gemm_case_t *c, const dnnjit_tensor_t io[4],
                           dnnjit__cu_deviceptr_t buf[4], dnnjit_variant_t pack[4])
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    int64_t sizes[4] = {c->batch * c->m * c->k, c->batch * c->k * c->n, c->operands ? 1 : c->n,
                        c->batch * c->m * c->n};
    size_t count = 0;
    for (int i = 0; i < 4; i++) {
        if (!io[i])
            continue;
        dnnjit_tensor_info_t info;
        CHECK(dnnjit_tensor_get_info(g, io[i], &info));
        size_t bytes = (size_t)sizes[i] * dnnjit_data_type_size(info.data_type);
        CU(cu->cuMemAlloc(&buf[count], bytes));
        /* Pseudo-random values in +-[1, 2) (not zeros, which would flatter the tensor cores'
         * power draw), in the tensor's type. */
        void *host = malloc(bytes);
        for (int64_t j = 0; j < sizes[i]; j++) {
            uint32_t r = (uint32_t)j * 2654435761u;
            dnnjit_element_store(info.data_type, host, j, (r >> 31 ? -1.0 : 1.0) * (1.0 + (r & 0xffffffu) / 16777216.0));
        }
        CU(cu->cuMemcpyHtoD(buf[count], host, bytes));
        free(host);
        int64_t uid;
        CHECK(dnnjit_tensor_get_uid(g, io[i], &uid));
        pack[count] = (dnnjit_variant_t){uid, (void *)(uintptr_t)buf[count]};
        count++;
    }
    return count;
}

/* Prints s as a JSON string. */
static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", (unsigned)(unsigned char)*s);
        else
            putchar(*s);
    }
    putchar('"');
}

/* Which tensor-core engine a plan belongs to: 0 the TMA + wgmma one (gemm_sm90_...), 1 the
 * mma.sync one (gemm_...), -1 neither. */
static int tensor_core_engine(const char *plan)
{
    return strncmp(plan, "gemm_sm90_", 10) == 0 ? 0 : strncmp(plan, "gemm_", 5) == 0 ? 1 : -1;
}

/* One plan of a list with its median device time; us is -1 for a plan of no tensor-core
 * engine and for one that did not build. */
typedef struct plan_time {
    char *name;
    double us;
    double build_ms; /* the plan's build: an NVRTC compile when the kernel cache lacks it */
    bool built;
} plan_time_t;

/* Whether plan `name` is one DNNJIT_BENCH_PLANS (comma-separated name fragments) selects,
 * or the variable is unset. */
static bool plan_selected(const char *name)
{
    const char *list = getenv("DNNJIT_BENCH_PLANS");
    if (!list || !*list)
        return true;
    for (const char *f = list; *f;) {
        size_t len = strcspn(f, ",");
        char fragment[128];
        if (len && len < sizeof fragment) {
            memcpy(fragment, f, len);
            fragment[len] = '\0';
            if (strstr(name, fragment))
                return true;
        }
        f += len + (f[len] == ',');
    }
    return false;
}

/* Whether the plan at `index` of a list is one the GEMM benchmarks build and time: the
 * first (mode A's) always, the others of a tensor-core engine that DNNJIT_BENCH_PLANS
 * selects. */
static bool plan_timed(const char *name, int64_t index)
{
    return tensor_core_engine(name) >= 0 && (index == 0 || plan_selected(name));
}

/* The plan list the GEMM benchmarks time: modes A and B together. */
static void list_plans_a_b(dnnjit_graph_t g)
{
    dnnjit_heur_mode_t modes[2] = {DNNJIT_HEUR_MODE_A, DNNJIT_HEUR_MODE_B};
    CHECK(dnnjit_graph_create_execution_plans(g, modes, 2));
}

/* Builds and times every tensor-core plan of g's list (*count plans, all of them listed). A
 * plan that fails to build gets an error line (`case@plan` and the library's message) and
 * the rest go on: each plan is an NVRTC compile of its own. Every plan is built before any
 * is timed, so that no timing directly follows a compile of unknown length: each starts from
 * the same idle and warm-up instead (see COOLDOWN_MS). With print_each, one line per plan
 * timed (device time, TFLOP/s, build time: the NVRTC compile when DNNJIT_CACHE=0). */
static plan_time_t *gemm_time_plans(dnnjit_graph_t g, const gemm_case_t *c, const dnnjit_variant_t *pack, size_t n,
                                    bool print_each, int64_t *count)
{
    CHECK(dnnjit_graph_get_plan_count(g, count));
    plan_time_t *times = malloc(sizeof *times * (size_t)*count);
    double flops = 2.0 * (double)c->batch * (double)c->m * (double)c->n * (double)c->k;
    for (int64_t p = 0; p < *count; p++) {
        plan_time_t *t = &times[p];
        CHECK(dnnjit_graph_get_plan_name(g, p, &t->name));
        t->us = -1;
        t->built = false;
        if (!plan_timed(t->name, p))
            continue;
        double t0 = now_us();
        dnnjit_status_t s = dnnjit_graph_build_plan_at_index(g, p);
        t->build_ms = (now_us() - t0) / 1e3;
        t->built = s == DNNJIT_STATUS_SUCCESS;
        if (s) {
            printf("{\"case\": \"%s@%s\", \"error\": ", c->name, t->name);
            print_json_string(dnnjit_last_error());
            printf("}\n");
            fflush(stdout);
        }
    }
    for (int64_t p = 0; p < *count; p++) {
        plan_time_t *t = &times[p];
        if (!t->built)
            continue;
        /* From the memory cache now: no compile. */
        CHECK(dnnjit_graph_build_plan_at_index(g, p));
        t->us = gemm_time_built(g, pack, n);
        if (print_each)
            printf("{\"case\": \"%s@%s\", \"us\": %.2f, \"tflops\": %.1f, \"build_ms\": %.1f}\n", c->name, t->name,
                   t->us, flops / t->us / 1e6, t->build_ms);
        fflush(stdout);
    }
    return times;
}

static void free_plan_times(plan_time_t *times, int64_t count)
{
    for (int64_t p = 0; p < count; p++)
        dnnjit_free(times[p].name);
    free(times);
}

/* The timed plan with the least time, of tensor-core engine `engine` or (-1) of either; -1
 * if none was timed. */
static int64_t gemm_fastest(const plan_time_t *times, int64_t count, int engine)
{
    int64_t best = -1;
    for (int64_t p = 0; p < count; p++)
        if (times[p].us >= 0 && (engine < 0 || tensor_core_engine(times[p].name) == engine) &&
            (best < 0 || times[p].us < times[best].us))
            best = p;
    return best;
}

/* The index of the plan named `name`, or -1. */
static int64_t gemm_index_of(const plan_time_t *times, int64_t count, const char *name)
{
    for (int64_t p = 0; p < count; p++)
        if (strcmp(times[p].name, name) == 0)
            return p;
    return -1;
}

/* The time of the plan named `name`, or -1. */
static double gemm_time_of(const plan_time_t *times, int64_t count, const char *name)
{
    int64_t p = gemm_index_of(times, count, name);
    return p < 0 ? -1 : times[p].us;
}

/* Times the picked plan `pick` and the fastest of the first pass, `*best`, again in
 * alternating rounds, and keeps the medians of the rounds as their times; *best becomes
 * the faster of the two. One pass times each plan once, at whatever clock the GPU's power
 * and temperature allow just then: on the power-bound 8x4096^3 bmm + bias + relu the same
 * plan came out 1745 us when timed first in a run and 1514 us later in it, so the order
 * alone could put the pick 10% behind a plan no faster than it. */
static void gemm_confirm_best(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n, plan_time_t *times,
                              int64_t pick, int64_t *best)
{
    enum { ROUNDS = 5 };
    if (pick < 0 || *best < 0 || pick == *best || times[pick].us < 0)
        return;
    const int64_t plans[2] = {pick, *best};
    double rounds[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < 2; i++) {
            CHECK(dnnjit_graph_build_plan_at_index(g, plans[i]));
            rounds[i][r] = gemm_time_built(g, pack, n);
        }
    for (int i = 0; i < 2; i++) {
        qsort(rounds[i], ROUNDS, sizeof rounds[i][0], cmp_double);
        times[plans[i]].us = rounds[i][ROUNDS / 2];
    }
    if (times[pick].us <= times[*best].us)
        *best = pick;
}

/* The cold build of plan `index` (named `expected`) of case c's plan list (modes A and
 * B) in ms: generate, NVRTC and load. The median of three builds, each in a new graph (a
 * graph keeps the plans it built) after the kernel cache in memory is emptied, with the
 * disk cache off (DNNJIT_CACHE=0 for the while: it is read at each lookup), so that each
 * build is an NVRTC compile and the caller's cache folder is left as it was; that leaves
 * out only the cache file's write, about 0.3 ms. One compile's time moves with the host:
 * the fp8 case's mode-A kernel, its generated code the same but for comments, took 242 ms
 * in the run at a13516a and 312 in the one at 786a10b. */
static double gemm_cold_build_ms(dnnjit_handle_t h, const gemm_case_t *c, int64_t index, const char *expected)
{
    enum { BUILDS = 3 };
    const char *was = getenv("DNNJIT_CACHE");
    char *saved = was ? strdup(was) : NULL;
    setenv("DNNJIT_CACHE", "0", 1);
    double ms[BUILDS];
    for (int i = 0; i < BUILDS; i++) {
        dnnjit_tensor_t io[4];
        dnnjit_graph_t g = gemm_graph(h, c, io);
        list_plans_a_b(g);
        char *name = NULL;
        CHECK(dnnjit_graph_get_plan_name(g, index, &name));
        if (strcmp(name, expected) != 0) {
            fprintf(stderr, "dnnjit-bench: %s: a new graph lists %s where %s was\n", c->name, name, expected);
            exit(1);
        }
        dnnjit_free(name);
        dnnjit__jit_cache_clear_memory();
        double t0 = now_us();
        CHECK(dnnjit_graph_build_plan_at_index(g, index));
        ms[i] = (now_us() - t0) / 1e3;
        dnnjit_graph_destroy(g);
    }
    if (saved)
        setenv("DNNJIT_CACHE", saved, 1);
    else
        unsetenv("DNNJIT_CACHE");
    free(saved);
    qsort(ms, BUILDS, sizeof ms[0], cmp_double);
    return ms[BUILDS / 2];
}

/* The graph of a GEMM case with its device buffers, the first plan of modes A and B each
 * alone, and the plan list of both. */
typedef struct gemm_run {
    dnnjit_graph_t g;
    dnnjit__cu_deviceptr_t buf[4];
    dnnjit_variant_t pack[4];
    size_t count;
    char *pick_a, *pick_b;
} gemm_run_t;

static gemm_run_t gemm_run_start(dnnjit_handle_t h, const gemm_case_t *c)
{
    gemm_run_t r;
    dnnjit_tensor_t io[4];
    r.g = gemm_graph(h, c, io);
    r.pick_a = gemm_pick(r.g, DNNJIT_HEUR_MODE_A);
    r.pick_b = gemm_pick(r.g, DNNJIT_HEUR_MODE_B);
    list_plans_a_b(r.g);
    r.count = gemm_buffers(r.g, c, io, r.buf, r.pack);
    return r;
}

static void gemm_run_end(gemm_run_t *r)
{
    dnnjit_free(r->pick_a);
    dnnjit_free(r->pick_b);
    for (size_t i = 0; i < r->count; i++)
        dnnjit__cuda()->cuMemFree(r->buf[i]);
    dnnjit_graph_destroy(r->g);
}

/* Times a GEMM graph: mode A's first plan (what dnnjit_graph_build picks) and the best of
 * every plan modes A and B list, each at its median device time. With all_plans, one line
 * per tensor-core plan (with its build time) and the picks of modes A and B as well. */
static void bench_gemm(dnnjit_handle_t h, const gemm_case_t *c, bool all_plans)
{
    gemm_run_t r = gemm_run_start(h, c);
    int64_t count = 0;
    plan_time_t *times = gemm_time_plans(r.g, c, r.pack, r.count, all_plans, &count);
    double flops = 2.0 * (double)c->batch * (double)c->m * (double)c->n * (double)c->k;
    int64_t best = gemm_fastest(times, count, -1);
    if (best < 0 || times[0].us < 0) {
        fprintf(stderr, "dnnjit-bench: %s: the first plan (%s) did not build or no plan did\n", c->name, times[0].name);
        exit(1);
    }
    gemm_confirm_best(r.g, r.pack, r.count, times, 0, &best);
    /* The cold builds reported (mode A's plan and each engine's fastest) are medians of
     * three; the first pass's single builds stay on the per-plan lines. */
    times[0].build_ms = gemm_cold_build_ms(h, c, 0, times[0].name);
    printf("{\"case\": \"%s\", \"us\": %.2f, \"tflops\": %.1f, \"plan\": \"%s\", \"build_ms\": %.1f, "
           "\"best_us\": %.2f, \"best_tflops\": %.1f, \"best_plan\": \"%s\"",
           c->name, times[0].us, flops / times[0].us / 1e6, times[0].name, times[0].build_ms, times[best].us,
           flops / times[best].us / 1e6, times[best].name);
    /* The best plan of each tensor-core engine too (see tensor_core_engine). */
    static const char *const engine_keys[2] = {"sm90", "sm80"};
    for (int e = 0; e < 2; e++) {
        int64_t f = gemm_fastest(times, count, e);
        if (f > 0)
            times[f].build_ms = gemm_cold_build_ms(h, c, f, times[f].name);
        if (f >= 0)
            printf(", \"%s_best_us\": %.2f, \"%s_best_tflops\": %.1f, \"%s_best_plan\": \"%s\", "
                   "\"%s_best_build_ms\": %.1f",
                   engine_keys[e], times[f].us, engine_keys[e], flops / times[f].us / 1e6, engine_keys[e],
                   times[f].name, engine_keys[e], times[f].build_ms);
    }
    if (all_plans)
        printf(", \"mode_a_plan\": \"%s\", \"mode_a_us\": %.2f, \"mode_b_plan\": \"%s\", \"mode_b_us\": %.2f", r.pick_a,
               gemm_time_of(times, count, r.pick_a), r.pick_b, gemm_time_of(times, count, r.pick_b));
    printf("}\n");
    fflush(stdout);
    free_plan_times(times, count);
    gemm_run_end(&r);
}

/* The start of a sweep case's line: its plan's time and the shape, so that the peers can
 * be run on the same one. The caller adds any more fields and closes the line. */
static void print_sweep_case(const gemm_case_t *c, double us, const char *plan)
{
    printf("{\"case\": \"%s\", \"us\": %.2f, \"tflops\": %.1f, \"plan\": \"%s\", \"io\": \"%s\", \"m\": %lld, "
           "\"n\": %lld, \"k\": %lld, \"b_weight\": %s",
           c->name, us, 2.0 * (double)c->m * (double)c->n * (double)c->k / us / 1e6, plan,
           c->io == DNNJIT_DATA_TYPE_HALF ? "fp16" : c->io == DNNJIT_DATA_TYPE_FLOAT ? "tf32" : "bf16", (long long)c->m, (long long)c->n, (long long)c->k,
           c->b_weight ? "true" : "false");
}

/* The index of the first plan of g's list noted REDUCED_PRECISION, or -1. */
static int64_t first_reduced_plan(dnnjit_graph_t g)
{
    int64_t plans = 0;
    CHECK(dnnjit_graph_get_plan_count(g, &plans));
    for (int64_t p = 0; p < plans; p++) {
        uint32_t notes = 0;
        CHECK(dnnjit_graph_get_plan_behavior_notes(g, p, &notes));
        if (notes & DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION)
            return p;
    }
    return -1;
}

/* Times the plan mode A picks for a sweep case; for FLOAT inputs, the first plan mode A
 * lists noted REDUCED_PRECISION (TF32, the plan of a caller who accepts it, as cuBLAS's
 * TF32 mode does), and mode A's pick (exact) as exact_us. */
static void bench_gemm_mode_a(dnnjit_handle_t h, const gemm_case_t *c)
{
    dnnjit_tensor_t io[4];
    dnnjit_graph_t g = gemm_graph(h, c, io);
    CHECK(dnnjit_graph_build(g, (dnnjit_heur_mode_t[]){DNNJIT_HEUR_MODE_A}, 1));
    dnnjit__cu_deviceptr_t buf[4];
    dnnjit_variant_t pack[4];
    size_t count = gemm_buffers(g, c, io, buf, pack);
    double us = gemm_time_built(g, pack, count);
    char *plan = NULL, *exact = NULL;
    CHECK(dnnjit_graph_get_plan_name(g, 0, &plan));
    int64_t reduced = c->io == DNNJIT_DATA_TYPE_FLOAT ? first_reduced_plan(g) : -1;
    if (reduced >= 0) {
        double exact_us = us;
        exact = plan;
        CHECK(dnnjit_graph_build_plan_at_index(g, reduced));
        us = gemm_time_built(g, pack, count);
        CHECK(dnnjit_graph_get_plan_name(g, reduced, &plan));
        print_sweep_case(c, us, plan);
        printf(", \"exact_us\": %.2f, \"exact_plan\": \"%s\"", exact_us, exact);
    } else {
        print_sweep_case(c, us, plan);
    }
    printf("}\n");
    fflush(stdout);
    dnnjit_free(plan);
    dnnjit_free(exact);
    for (size_t i = 0; i < count; i++)
        dnnjit__cuda()->cuMemFree(buf[i]);
    dnnjit_graph_destroy(g);
}

/* Times every tensor-core plan modes A and B list for a sweep case, one line each
 * (`case@plan`), then the case's line with mode A's plan and time, the fastest plan and
 * time, and mode A's time over the fastest. */
static void bench_gemm_all_plans(dnnjit_handle_t h, const gemm_case_t *c)
{
    gemm_run_t r = gemm_run_start(h, c);
    int64_t count = 0;
    plan_time_t *times = gemm_time_plans(r.g, c, r.pack, r.count, true, &count);
    int64_t best = gemm_fastest(times, count, -1);
    gemm_confirm_best(r.g, r.pack, r.count, times, gemm_index_of(times, count, r.pick_a), &best);
    double a_us = gemm_time_of(times, count, r.pick_a);
    print_sweep_case(c, a_us, r.pick_a);
    if (best >= 0)
        printf(", \"best_us\": %.2f, \"best_plan\": \"%s\"", times[best].us, times[best].name);
    if (best >= 0 && a_us >= 0)
        printf(", \"mode_a_over_best\": %.3f", a_us / times[best].us);
    printf("}\n");
    fflush(stdout);
    free_plan_times(times, count);
    gemm_run_end(&r);
}

/* The issue-5 sweep (see the head of this file), one case after another: 6 cubes, 12
 * linear shapes and 2 odd ones; mode A's plan of each, or with all_plans every plan, of the
 * cases whose names contain `filter` (all when NULL). */
enum { SWEEP_CASES = 6 + 12 + 2 + 2 };

typedef char sweep_name_t[96]; /* room for three 20-digit sizes */

/* Fills `cases` (named in `names`) with the sweep's cases whose names contain `filter` (all
 * when NULL); returns their count. */
static int sweep_cases(const char *filter, sweep_name_t names[SWEEP_CASES], gemm_case_t cases[SWEEP_CASES])
{
    int count = 0;
    static const dnnjit_data_type_t types[] = {DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_HALF};
    for (int t = 0; t < 2; t++)
        for (int64_t size = 2048; size <= 8192; size *= 2) {
            snprintf(names[count], sizeof names[count], "gemm_sweep/%s/%lldx%lldx%lld", t ? "fp16" : "bf16",
                     (long long)size, (long long)size, (long long)size);
            cases[count] = (gemm_case_t){names[count], types[t], 1, size, size, size, false, false, 0};
            count++;
        }
    static const int64_t llm_m[] = {1, 16, 128, 4096}, llm_nk[][2] = {{4096, 4096}, {14336, 4096}, {4096, 14336}};
    for (int nk = 0; nk < 3; nk++)
        for (int m = 0; m < 4; m++) {
            snprintf(names[count], sizeof names[count], "gemm_sweep/bf16/linear_%lldx%lldx%lld", (long long)llm_m[m],
                     (long long)llm_nk[nk][0], (long long)llm_nk[nk][1]);
            cases[count] = (gemm_case_t){names[count], DNNJIT_DATA_TYPE_BFLOAT16, 1, llm_m[m], llm_nk[nk][0],
                                         llm_nk[nk][1], false, true, 0};
            count++;
        }
    static const int64_t odd[][3] = {{4097, 4095, 4099}, {1000, 77, 1000}};
    for (int i = 0; i < 2; i++) {
        snprintf(names[count], sizeof names[count], "gemm_sweep/bf16/%lldx%lldx%lld", (long long)odd[i][0],
                 (long long)odd[i][1], (long long)odd[i][2]);
        cases[count] = (gemm_case_t){names[count], DNNJIT_DATA_TYPE_BFLOAT16, 1, odd[i][0], odd[i][1], odd[i][2],
                                     false, false, 0};
        count++;
    }
    for (int64_t size = 4096; size <= 8192; size *= 2) {
        snprintf(names[count], sizeof names[count], "gemm_sweep/tf32/linear_%lldx%lldx%lld", (long long)size,
                 (long long)size, (long long)size);
        cases[count] = (gemm_case_t){names[count], DNNJIT_DATA_TYPE_FLOAT, 1, size, size, size, false, true, 0};
        count++;
    }
    int kept = 0;
    for (int i = 0; i < count; i++)
        if (!filter || strstr(cases[i].name, filter))
            cases[kept++] = cases[i];
    return kept;
}

static void gemm_sweep(dnnjit_handle_t h, bool all_plans, const char *filter)
{
    sweep_name_t names[SWEEP_CASES];
    gemm_case_t cases[SWEEP_CASES];
    int count = sweep_cases(filter, names, cases);
    for (int i = 0; i < count; i++) {
        if (all_plans)
            bench_gemm_all_plans(h, &cases[i]);
        else
            bench_gemm_mode_a(h, &cases[i]);
    }
}

/* Device µs per execute when `CAPTURED` back-to-back executes are captured once into a CUDA
 * graph on a fresh stream and the graph is replayed: the launch cost the host loop pays is
 * gone. After the cooldown and the warm-up (replays for WARMUP_MS), median of 9 timings of
 * 10 replays. */
enum { CAPTURED = 100 };

/* Device milliseconds of `count` back-to-back replays of exec on stream between the events
 * start and stop. */
static float replays_ms(dnnjit__cu_graph_exec_t exec, dnnjit__cu_stream_t stream, int count, dnnjit__cu_event_t start,
                        dnnjit__cu_event_t stop)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    CU(cu->cuEventRecord(start, stream));
    for (int i = 0; i < count; i++)
        CU(cu->cuGraphLaunch(exec, stream));
    CU(cu->cuEventRecord(stop, stream));
    CU(cu->cuEventSynchronize(stop));
    float ms;
    CU(cu->cuEventElapsedTime(&ms, start, stop));
    return ms;
}

static double graph_replay_us_per_call(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n, void *workspace)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    if (!cu->cuStreamBeginCapture || !cu->cuGraphInstantiateWithFlags)
        return -1;
    dnnjit__cu_stream_t stream;
    dnnjit__cu_graph_t graph;
    dnnjit__cu_graph_exec_t exec;
    CU(cu->cuStreamCreate(&stream, DNNJIT__CU_STREAM_NON_BLOCKING));
    CU(cu->cuStreamBeginCapture(stream, DNNJIT__CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < CAPTURED; i++)
        CHECK(dnnjit_graph_execute(g, pack, n, workspace, stream));
    CU(cu->cuStreamEndCapture(stream, &graph));
    CU(cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    dnnjit__cu_event_t start, stop;
    CU(cu->cuEventCreate(&start, 0));
    CU(cu->cuEventCreate(&stop, 0));
    cooldown();
    for (float warm_ms = 0.0f; warm_ms < WARMUP_MS;)
        warm_ms += replays_ms(exec, stream, 1, start, stop);
    double samples[9];
    for (int r = 0; r < 9; r++)
        samples[r] = replays_ms(exec, stream, 10, start, stop) * 1e3 / (10.0 * CAPTURED);
    qsort(samples, 9, sizeof samples[0], cmp_double);
    cu->cuEventDestroy(start);
    cu->cuEventDestroy(stop);
    cu->cuGraphExecDestroy(exec);
    cu->cuGraphDestroy(graph);
    cu->cuStreamDestroy(stream);
    return samples[4];
}

/* Seed 004's first graph: C[16,128,128] = A[16,128,512] @ B[16,512,128] + D[1,128,128], half
 * in and out, float compute; buffers borrowed from `bufs` (each big enough). */
static void bench_seed004(dnnjit_handle_t h, const dnnjit_variant_t *bufs)
{
    dnnjit_graph_t g;
    dnnjit_tensor_t io[4], c;
    CHECK(dnnjit_graph_create(h, &(dnnjit_graph_attr_t){.name = "seed004", .io_data_type = DNNJIT_DATA_TYPE_HALF,
                                                         .compute_data_type = DNNJIT_DATA_TYPE_FLOAT},
                              &g));
    CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "A", .ndim = 3, .dim = (int64_t[]){16, 128, 512}}, &io[0]));
    CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "B", .ndim = 3, .dim = (int64_t[]){16, 512, 128}}, &io[1]));
    CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "D", .ndim = 3, .dim = (int64_t[]){1, 128, 128}}, &io[2]));
    CHECK(dnnjit_graph_matmul(g, io[0], io[1], NULL, &c));
    CHECK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, c, io[2], 0, &io[3]));
    CHECK(dnnjit_tensor_set_output(g, io[3], true));
    timed_build(g);
    dnnjit_variant_t pack[4];
    for (int i = 0; i < 4; i++) {
        int64_t uid;
        CHECK(dnnjit_tensor_get_uid(g, io[i], &uid));
        pack[i] = (dnnjit_variant_t){uid, bufs[i].ptr};
    }
    int64_t chosen, ws_size = 0;
    char *plan = NULL;
    CHECK(dnnjit_graph_get_chosen_plan(g, &chosen));
    CHECK(dnnjit_graph_get_plan_name(g, chosen, &plan));
    CHECK(dnnjit_graph_get_workspace_size(g, &ws_size));
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    dnnjit__cu_deviceptr_t ws = 0;
    if (ws_size)
        CU(cu->cuMemAlloc(&ws, (size_t)ws_size));
    void *workspace = (void *)(uintptr_t)ws;
    printf("{\"case\": \"seed004_matmul_bias_half\", \"us\": %.2f, \"graph_replay_us\": %.2f, \"plan\": \"%s\"}\n",
           device_us_per_call_ws(g, pack, 4, workspace, 1000, 9, true), graph_replay_us_per_call(g, pack, 4, workspace),
           plan);
    if (ws)
        cu->cuMemFree(ws);
    dnnjit_free(plan);
    dnnjit_graph_destroy(g);
}


/* ---- row ops (dnnjit-bench rows) ---------------------------------------------------- */

typedef enum row_bench_op {
    ROW_SOFTMAX,
    ROW_LAYERNORM,
    ROW_RMSNORM,
    ROW_ADD_RMSNORM,
    ROW_SOFTMAX_BACKWARD,
    ROW_LAYERNORM_BACKWARD,
    ROW_RMSNORM_BACKWARD,
    ROW_COLUMN_SUM, /* the sum over the rows, as of a bias gradient */
    ROW_BENCH_OP_COUNT
} row_bench_op_t;

static const char *const row_bench_names[ROW_BENCH_OP_COUNT] = {"softmax_fwd", "layernorm_fwd", "rmsnorm_fwd",
                                                                "add_rmsnorm", "softmax_bwd",   "layernorm_bwd",
                                                                "rmsnorm_bwd", "column_sum"};

static dnnjit_tensor_t row_tensor(dnnjit_graph_t g, const char *name, int64_t rows, int64_t cols,
                                  dnnjit_data_type_t type)
{
    dnnjit_tensor_t t;
    CHECK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = name, .ndim = 2, .dim = (int64_t[]){rows, cols},
                                                          .data_type = type},
                              &t));
    return t;
}

/* The graph of one case, as torch computes it in bench/run.py: forward norms without
 * statistics (F.layer_norm, F.rms_norm), add + RMS norm writing the sum and the norm,
 * backwards from saved FLOAT statistics with every parameter gradient, the column sum
 * (x.sum(0)) in the io type. */
static dnnjit_graph_t row_bench_graph(dnnjit_handle_t h, row_bench_op_t op, int64_t rows, int64_t cols,
                                      dnnjit_data_type_t io)
{
    dnnjit_graph_t g;
    CHECK(dnnjit_graph_create(h, &(dnnjit_graph_attr_t){.name = row_bench_names[op], .io_data_type = io,
                                                         .intermediate_data_type = DNNJIT_DATA_TYPE_FLOAT},
                              &g));
    dnnjit_tensor_t x = row_tensor(g, "x", rows, cols, 0), out[3] = {0, 0, 0};
    bool weighted = op != ROW_SOFTMAX && op != ROW_SOFTMAX_BACKWARD && op != ROW_COLUMN_SUM;
    bool backward = op == ROW_SOFTMAX_BACKWARD || op == ROW_LAYERNORM_BACKWARD || op == ROW_RMSNORM_BACKWARD;
    dnnjit_tensor_t w = weighted ? row_tensor(g, "w", 1, cols, 0) : 0;
    dnnjit_tensor_t dy = backward ? row_tensor(g, "dy", rows, cols, 0) : 0;
    dnnjit_tensor_t inv =
        backward && op != ROW_SOFTMAX_BACKWARD ? row_tensor(g, "inv", rows, 1, DNNJIT_DATA_TYPE_FLOAT) : 0;
    switch (op) {
    case ROW_SOFTMAX:
        CHECK(dnnjit_graph_softmax(g, x, NULL, &out[0], NULL, NULL));
        break;
    case ROW_LAYERNORM:
        CHECK(dnnjit_graph_layernorm(g, x, w, row_tensor(g, "b", 1, cols, 0), NULL, &out[0], NULL, NULL));
        break;
    case ROW_RMSNORM:
        CHECK(dnnjit_graph_rmsnorm(g, x, w, 0, NULL, &out[0], NULL));
        break;
    case ROW_ADD_RMSNORM:
        CHECK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, x,
                                     row_tensor(g, "r", rows, cols, 0), 0, &out[1]));
        CHECK(dnnjit_graph_rmsnorm(g, out[1], w, 0, NULL, &out[0], NULL));
        break;
    case ROW_SOFTMAX_BACKWARD:
        CHECK(dnnjit_graph_softmax_backward(g, x, dy, NULL, &out[0]));
        break;
    case ROW_LAYERNORM_BACKWARD:
        CHECK(dnnjit_graph_layernorm_backward(g, dy, x, w, row_tensor(g, "mean", rows, 1, DNNJIT_DATA_TYPE_FLOAT), inv,
                                              NULL, &out[0], &out[1], &out[2]));
        break;
    case ROW_RMSNORM_BACKWARD:
        CHECK(dnnjit_graph_rmsnorm_backward(g, dy, x, w, inv, NULL, &out[0], &out[1], NULL));
        break;
    default:
        CHECK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_ADD, .axes = 1},
                                     &out[0]));
        break;
    }
    for (int i = 0; i < 3; i++)
        if (out[i])
            CHECK(dnnjit_tensor_set_output(g, out[i], true));
    CHECK(dnnjit_graph_validate(g));
    return g;
}

/* Device buffers for every non-virtual tensor, filled with values in [0.5, 1.5) (a 1 MiB
 * random block repeated: enough variety for timing, fast to make); *bytes is the sum of
 * their sizes. */
static size_t row_bench_buffers(dnnjit_graph_t g, dnnjit_variant_t *pack, dnnjit__cu_deviceptr_t *bufs, double *bytes)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    int64_t count;
    CHECK(dnnjit_graph_get_tensor_count(g, &count));
    size_t n = 0;
    uint64_t rng = 0x853c49e6748fea9bull;
    *bytes = 0;
    for (dnnjit_tensor_t id = 1; id <= (dnnjit_tensor_t)count; id++) {
        dnnjit_tensor_info_t t;
        CHECK(dnnjit_tensor_get_info(g, id, &t));
        if (t.is_virtual)
            continue;
        size_t size = dnnjit_data_type_size(t.data_type), elements = 1;
        for (int d = 0; d < t.ndim; d++)
            elements *= (size_t)t.dim[d];
        size_t total = elements * size, block = 1 << 20;
        char *host = malloc(total), *pattern = malloc(block);
        if (!host || !pattern) {
            fprintf(stderr, "dnnjit-bench: out of host memory\n");
            exit(1);
        }
        for (size_t i = 0; i < block / size; i++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            dnnjit_element_store(t.data_type, pattern, (int64_t)i, 0.5 + (double)(rng >> 11) / 9007199254740992.0);
        }
        for (size_t off = 0; off < total; off += block)
            memcpy(host + off, pattern, total - off < block ? total - off : block);
        CU(cu->cuMemAlloc(&bufs[n], total));
        CU(cu->cuMemcpyHtoD(bufs[n], host, total));
        free(host);
        free(pattern);
        pack[n] = (dnnjit_variant_t){t.uid, (void *)(uintptr_t)bufs[n]};
        *bytes += (double)total;
        n++;
    }
    return n;
}

/* Times plan `index` (built here) with the workspace it needs; prints nothing. */
static double row_bench_time(dnnjit_graph_t g, int64_t index, const dnnjit_variant_t *pack, size_t n)
{
    CHECK(dnnjit_graph_build_plan_at_index(g, index));
    int64_t ws_size;
    CHECK(dnnjit_graph_get_workspace_size(g, &ws_size));
    dnnjit__cu_deviceptr_t ws = 0;
    if (ws_size)
        CU(dnnjit__cuda()->cuMemAlloc(&ws, (size_t)ws_size));
    double us = device_us_per_call_ws(g, pack, n, (void *)(uintptr_t)ws, 20, 15, true);
    if (ws)
        dnnjit__cuda()->cuMemFree(ws);
    return us;
}

/* One case, named `label` in its lines: modes B's and A's plans timed, then with all_plans
 * every other rows plan. */
static void row_bench_case(dnnjit_handle_t h, row_bench_op_t op, int64_t rows, int64_t cols, dnnjit_data_type_t io,
                           const char *label, bool all_plans)
{
    dnnjit_graph_t g = row_bench_graph(h, op, rows, cols, io);
    dnnjit_variant_t pack[12];
    dnnjit__cu_deviceptr_t bufs[12];
    double bytes;
    size_t n = row_bench_buffers(g, pack, bufs, &bytes);
    dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A, b = DNNJIT_HEUR_MODE_B;
    CHECK(dnnjit_graph_create_execution_plans(g, &b, 1));
    char *plan_b;
    CHECK(dnnjit_graph_get_plan_name(g, 0, &plan_b));
    double us_b = row_bench_time(g, 0, pack, n);
    CHECK(dnnjit_graph_create_execution_plans(g, &a, 1));
    char *plan_a;
    CHECK(dnnjit_graph_get_plan_name(g, 0, &plan_a));
    double us_a = strcmp(plan_a, plan_b) ? row_bench_time(g, 0, pack, n) : us_b;
    printf("{\"case\": \"%s\", \"us\": %.2f, \"tb_per_s\": %.3f, \"bytes\": %.0f, \"plan\": \"%s\", "
           "\"plan_b\": \"%s\", \"us_b\": %.2f}\n",
           label, us_a, bytes / us_a / 1e6, bytes, plan_a, plan_b, us_b);
    fflush(stdout);
    int64_t count;
    CHECK(dnnjit_graph_get_plan_count(g, &count));
    for (int64_t i = 1; all_plans && i < count; i++) {
        char *name;
        CHECK(dnnjit_graph_get_plan_name(g, i, &name));
        if (strncmp(name, "rows_", 5) == 0) {
            double us = row_bench_time(g, i, pack, n);
            printf("{\"case\": \"%s@%s\", \"us\": %.2f, \"tb_per_s\": %.3f}\n", label, name, us, bytes / us / 1e6);
            fflush(stdout);
        }
        dnnjit_free(name);
    }
    dnnjit_free(plan_a);
    dnnjit_free(plan_b);
    for (size_t i = 0; i < n; i++)
        dnnjit__cuda()->cuMemFree(bufs[i]);
    dnnjit_graph_destroy(g);
}

static int row_bench(dnnjit_handle_t h, bool all_plans, const char *filter)
{
    static const struct {
        int64_t rows, cols;
        dnnjit_data_type_t io;
    } shapes[] = {{32768, 4096, DNNJIT_DATA_TYPE_BFLOAT16},
                  {32768, 1000, DNNJIT_DATA_TYPE_HALF},
                  {4096, 32768, DNNJIT_DATA_TYPE_BFLOAT16}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int op = 0; op < ROW_BENCH_OP_COUNT; op++) {
            char label[96];
            snprintf(label, sizeof label, "rows/%s/%lldx%lld/%s", row_bench_names[op], (long long)shapes[s].rows,
                     (long long)shapes[s].cols, shapes[s].io == DNNJIT_DATA_TYPE_HALF ? "fp16" : "bf16");
            if (!filter || strstr(label, filter))
                row_bench_case(h, (row_bench_op_t)op, shapes[s].rows, shapes[s].cols, shapes[s].io, label, all_plans);
        }
    return 0;
}

/* The median build time of 201 fresh copies of the sigmoid graph once one copy is built, so
 * that each is served by the memory cache: one sample alone carries the first lookups'
 * cold caches and page faults. */
static double median_memory_cache_build(dnnjit_handle_t h, dnnjit_tensor_t io[4])
{
    enum { REPEATS = 201 };
    double samples[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        dnnjit_graph_t again = sigmoid_graph(h, N, io);
        samples[r] = timed_build(again);
        dnnjit_graph_destroy(again);
    }
    qsort(samples, REPEATS, sizeof samples[0], cmp_double);
    return samples[REPEATS / 2];
}

/* The host time of one call of `call(arg)`: batches of calls, the wall clock of the calls
 * alone. A batch stays well below the launch queue's depth: once the queue is full each
 * call waits for the GPU to finish a kernel, and the loop measures the device instead (a
 * loop of 20000 executes read 5.5 us, the tiny kernel's device time). */
static double host_us_per_call(void (*call)(void *), void *arg)
{
    enum { BATCHES = 100, BATCH = 200 };
    double total = 0;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_us();
        for (int i = 0; i < BATCH; i++)
            call(arg);
        total += now_us() - t0;
        CU(dnnjit__cuda()->cuStreamSynchronize(NULL));
    }
    return total / (BATCHES * BATCH);
}

typedef struct small_call {
    dnnjit_graph_t g;
    const dnnjit_variant_t *pack;
} small_call_t;

static void execute_small(void *arg)
{
    const small_call_t *c = arg;
    CHECK(dnnjit_graph_execute(c->g, c->pack, 4, NULL, NULL));
}

static dnnjit__cu_function_t empty_kernel;

/* An empty kernel taking a DjArgs-sized parameter, launched as execute launches. */
static void launch_empty(void *arg)
{
    static const unsigned one[3] = {1, 1, 1};
    void *params[1] = {arg};
    CHECK(dnnjit__driver_launch(empty_kernel, one, one, NULL, 0, 0, NULL, params));
}

/* The driver's own host time per launch of such a kernel: what execute cannot go below. */
static double driver_launch_host_us(void)
{
    static const char source[] = "struct Args { void *ptr[24]; float scalar[8]; };\n"
                                 "extern \"C\" __global__ void dj_empty(const Args args) { (void)args; }\n";
    char arch[DNNJIT__ARCH_LEN];
    CHECK(dnnjit__driver_current_arch(arch));
    void *cubin;
    size_t size;
    CHECK(dnnjit__nvrtc_compile(source, "dj_empty", arch, NULL, &cubin, &size));
    dnnjit__cu_module_t module;
    CHECK(dnnjit__driver_load_kernel(cubin, "dj_empty", &module, &empty_kernel));
    free(cubin);
    struct {
        void *ptr[24];
        float scalar[8];
    } args = {{0}, {0}};
    double us = host_us_per_call(launch_empty, &args);
    dnnjit__cuda()->cuModuleUnload(module);
    return us;
}

/* Build times on the host alone; see the top of the file. */
static int host_builds(const char *arch)
{
    dnnjit_handle_t h;
    CHECK(dnnjit_handle_create_for_arch(arch, &h));
    dnnjit_tensor_t io[4];
    dnnjit_graph_t g = sigmoid_graph(h, N, io);
    printf("{\"case\": \"host_build_first\", \"us\": %.1f, \"arch\": \"%s\"}\n", timed_build(g), arch);
    printf("{\"case\": \"host_build_warm_memory_cache\", \"us\": %.1f}\n", median_memory_cache_build(h, io));
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
    return 0;
}

/* Without a GPU: builds for `arch` every plan `gemm --sweep-all-plans [filter]` would time
 * (the same graphs, plan lists and DNNJIT_BENCH_PLANS selection), so that their kernels
 * lie in the disk cache, where a GPU run of the same dnnjit build and NVRTC version finds
 * them instead of compiling (1818 NVRTC compiles for the whole sweep). */
static int sweep_compile(const char *arch, const char *filter)
{
    dnnjit_handle_t h;
    CHECK(dnnjit_handle_create_for_arch(arch, &h));
    sweep_name_t names[SWEEP_CASES];
    gemm_case_t cases[SWEEP_CASES];
    int count = sweep_cases(filter, names, cases);
    for (int i = 0; i < count; i++) {
        dnnjit_tensor_t io[4];
        dnnjit_graph_t g = gemm_graph(h, &cases[i], io);
        list_plans_a_b(g);
        int64_t plans, built = 0;
        CHECK(dnnjit_graph_get_plan_count(g, &plans));
        double t0 = now_us();
        for (int64_t p = 0; p < plans; p++) {
            char *name = NULL;
            CHECK(dnnjit_graph_get_plan_name(g, p, &name));
            if (plan_timed(name, p)) {
                if (dnnjit_graph_build_plan_at_index(g, p) == DNNJIT_STATUS_SUCCESS)
                    built++;
                else
                    fprintf(stderr, "dnnjit-bench: %s@%s: %s\n", cases[i].name, name, dnnjit_last_error());
            }
            dnnjit_free(name);
        }
        printf("{\"case\": \"%s\", \"arch\": \"%s\", \"plans_built\": %lld, \"ms\": %.0f}\n", cases[i].name, arch,
               (long long)built, (now_us() - t0) / 1e3);
        fflush(stdout);
        dnnjit_graph_destroy(g);
    }
    dnnjit_handle_destroy(h);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "build-host") == 0)
        return host_builds(argv[2]);
    if (argc > 2 && strcmp(argv[1], "sweep-compile") == 0)
        return sweep_compile(argv[2], argc > 3 ? argv[3] : NULL);
    bool build_only = argc > 1 && strcmp(argv[1], "build-only") == 0;
    bool gemm_only = argc > 1 && strcmp(argv[1], "gemm") == 0;
    dnnjit_handle_t h;
    CHECK(dnnjit_handle_create(&h));
    char arch[16];
    bool has_device;
    CHECK(dnnjit_handle_get_arch(h, arch, sizeof arch, &has_device));
    if (!has_device) {
        fprintf(stderr, "dnnjit-bench: no GPU\n");
        return 77;
    }
    if (argc > 1 && strcmp(argv[1], "rows") == 0) {
        bool all_plans = argc > 2 && strcmp(argv[2], "--all-plans") == 0;
        int rc = row_bench(h, all_plans, argc > 2 + all_plans ? argv[2 + all_plans] : NULL);
        dnnjit_handle_destroy(h);
        return rc;
    }
    if (gemm_only) {
        static const gemm_case_t cases[] = {
            {"gemm_4096_bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 4096, 4096, 4096, false, false, 0},
            {"bmm_bias_relu_8x4096_bf16", DNNJIT_DATA_TYPE_BFLOAT16, 8, 4096, 4096, 4096, true, false, 0},
            {"gemm_8192_fp8_e4m3", DNNJIT_DATA_TYPE_BFLOAT16, 1, 8192, 8192, 8192, false, true,
             DNNJIT_DATA_TYPE_FP8_E4M3},
            {"seed000_bmm_half", DNNJIT_DATA_TYPE_HALF, 4, 64, 64, 128, false, false, 0},
        };
        bool all_plans = argc > 2 && strcmp(argv[2], "--all-plans") == 0;
        bool sweep_all_plans = argc > 2 && strcmp(argv[2], "--sweep-all-plans") == 0;
        const char *filter = sweep_all_plans && argc > 3 ? argv[3] : NULL;
        for (size_t i = 0; !filter && i < (all_plans ? 4u : 3u); i++)
            bench_gemm(h, &cases[i], all_plans);
        gemm_sweep(h, sweep_all_plans, filter);
        dnnjit_handle_destroy(h);
        return 0;
    }
    dnnjit_tensor_t io[4];
    dnnjit_graph_t g = sigmoid_graph(h, N, io);
    double build = timed_build(g);
    if (build_only) {
        printf("{\"case\": \"build_warm_disk_cache\", \"us\": %.1f}\n", build);
        return 0;
    }
    printf("{\"case\": \"build_cold\", \"us\": %.1f, \"arch\": \"%s\"}\n", build, arch);
    printf("{\"case\": \"build_warm_memory_cache\", \"us\": %.1f}\n", median_memory_cache_build(h, io));

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

    /* Host cost of one execute on a tiny graph, and of the driver's launch alone. */
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
    double host = host_us_per_call(execute_small, &(small_call_t){small, small_pack});
    double driver = driver_launch_host_us();
    printf("{\"case\": \"execute_host_overhead\", \"us\": %.2f, \"device_us_per_call_1k\": %.2f, "
           "\"driver_launch_us\": %.2f}\n",
           host, device_small, driver);
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
    printf("{\"case\": \"seed000_bmm_half\", \"us\": %.2f, \"graph_replay_us\": %.2f, \"plan\": \"%s\"}\n",
           device_us_per_call(mm, mm_pack, 3, 1000, 9), graph_replay_us_per_call(mm, mm_pack, 3, NULL), plan);
    fflush(stdout);
    bench_seed004(h, pack);
    dnnjit_free(plan);
    dnnjit_graph_destroy(mm);
    for (int i = 0; i < 4; i++)
        cu->cuMemFree(buf[i]);
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
    return 0;
}
