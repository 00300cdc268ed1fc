/* GPU: dnnjit_graph_execute captured into a CUDA graph (global capture mode, the strictest:
 * any call that is not capturable ends the capture with an error) and replayed. Every
 * replay gets new inputs and poisoned outputs, so a replay that did not run, or ran on
 * stale data, fails the comparison with the reference. Skipped (77) without a GPU. */
#include "gpu_buffers.h"

#include "graph/graph.h"

#define REPLAYS 10

/* Builds `g` (see gb_build for `plan_fragment`), captures one execute and replays it. */
static void capture_and_replay(dnnjit_graph_t g, const char *plan_fragment, double tol, const char *label)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    if (!cu->cuStreamBeginCapture || !cu->cuGraphInstantiateWithFlags)
        skip(); /* a driver older than CUDA 11.4 */
    gb_build(g, plan_fragment);
    int64_t chosen;
    char *plan;
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    TU_OK(dnnjit_graph_get_plan_name(g, chosen, &plan));
    printf("  %-24s plan %s\n", label, plan);
    dnnjit_free(plan);
    gb_set_t bufs;
    gb_alloc(g, &bufs);
    dnnjit__cu_stream_t stream;
    GB_CU(cu->cuStreamCreate(&stream, DNNJIT__CU_STREAM_NON_BLOCKING));

    /* One execute outside the capture, as applications warm up before capturing. */
    gb_fill(&bufs, -1.0, 1.0);
    TU_OK(dnnjit_graph_execute(g, bufs.device_pack, bufs.n, gb_workspace(&bufs), stream));
    GB_CU(cu->cuStreamSynchronize(stream));
    double err = gb_error(g, &bufs);
    if (!(err < tol))
        fail_msg("%s: uncaptured execute: relative error %g exceeds %g", label, err, tol);

    GB_CU(cu->cuStreamBeginCapture(stream, DNNJIT__CU_STREAM_CAPTURE_MODE_GLOBAL));
    dnnjit_status_t s = dnnjit_graph_execute(g, bufs.device_pack, bufs.n, gb_workspace(&bufs), stream);
    char why[DNNJIT__MSG_LEN];
    snprintf(why, sizeof why, "%s", dnnjit_last_error());
    dnnjit__cu_graph_t graph = NULL;
    dnnjit__cu_result_t ended = cu->cuStreamEndCapture(stream, &graph);
    if (s)
        fail_msg("%s: execute under capture failed: %s: %s", label, dnnjit_status_name(s), why);
    GB_CU(ended);
    dnnjit__cu_graph_exec_t exec = NULL;
    GB_CU(cu->cuGraphInstantiateWithFlags(&exec, graph, 0));

    for (int r = 0; r < REPLAYS; r++) {
        gb_fill(&bufs, -1.0, 1.0);
        GB_CU(cu->cuGraphLaunch(exec, stream));
        GB_CU(cu->cuStreamSynchronize(stream));
        err = gb_error(g, &bufs);
        if (!(err < tol))
            fail_msg("%s: replay %d: relative error %g exceeds %g", label, r, err, tol);
    }
    printf("  %-24s %d replays match the reference (last error %.3g)\n", label, REPLAYS, err);
    GB_CU(cu->cuGraphExecDestroy(exec));
    GB_CU(cu->cuGraphDestroy(graph));
    GB_CU(cu->cuStreamDestroy(stream));
    gb_free(&bufs);
}

/* Seed 000: C[b] = A[b] @ B[b], half in, float compute, B=4 M=64 K=128 N=64. */
static void seed000(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_matmul_graph(DNNJIT_DATA_TYPE_HALF, 4, 64, 128, 64);
    capture_and_replay(g, NULL, tu_tolerance(DNNJIT_DATA_TYPE_HALF), "seed 000");
    dnnjit_graph_destroy(g);
}

/* y = sigmoid(a * s + b) on 1M halves, s a pass-by-value float (its value is the one read
 * at capture, which this test keeps). */
static void pointwise_with_scalar(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "a", 2, TU_DIMS(1024, 1024), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", 2, TU_DIMS(1024, 1024), NULL, 0);
    dnnjit_tensor_t s, as, u, y;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "s", .ndim = 1, .dim = TU_DIMS(1),
                                                         .data_type = DNNJIT_DATA_TYPE_FLOAT, .is_pass_by_value = true},
                              &s));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, a, s, 0, &as));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, as, b, 0, &u));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SIGMOID_FWD}, u, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    capture_and_replay(g, NULL, tu_tolerance(DNNJIT_DATA_TYPE_HALF), "pointwise + scalar");
    dnnjit_graph_destroy(g);
}

/* S = softmax(A @ B): two kernels in one capture, the product in the workspace. */
static void two_kernels(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(3, 77, 100), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(3, 100, 33), NULL, 0);
    dnnjit_tensor_t c, s;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_graph_softmax(g, c, NULL, &s, NULL, NULL));
    TU_OK(dnnjit_tensor_set_output(g, s, true));
    capture_and_replay(g, NULL, tu_tolerance(DNNJIT_DATA_TYPE_FLOAT), "softmax(A @ B)");
    dnnjit_graph_destroy(g);
}

/* A long-K product on a split-K plan: execute also zeroes the plan's arrival counters
 * (dj_zero_scratch, a kernel of its module), which must be captured with the launch so
 * that every replay starts from zero. */
static void split_k(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_matmul_graph(DNNJIT_DATA_TYPE_HALF, 1, 64, 4096, 64);
    capture_and_replay(g, "_splitk", tu_tolerance(DNNJIT_DATA_TYPE_HALF), "split-K");
    dnnjit_graph_destroy(g);
}

int main(int argc, char **argv)
{
    /* Kernels compile into memory only: the test leaves nothing on disk. */
    setenv("DNNJIT_CACHE", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed000),
        cmocka_unit_test(pointwise_with_scalar),
        cmocka_unit_test(two_kernels),
        cmocka_unit_test(split_k),
    };
    return TU_GPU_MAIN(tests, argc, argv, tu_gpu_available);
}
