/* GPU: graphs serialized after building and deserialized on the device handle execute and
 * match the reference, in this process and in a fresh one where NVRTC cannot load; two
 * graphs deserialized from one blob share the loaded kernels, which clearing the kernel
 * cache's memory leaves loaded while graphs use them. Skipped (77) without a GPU. */
#include "gpu_buffers.h"

#include "engine/plan.h"

#include <limits.h>

static const dnnjit_heur_mode_t mode_a = DNNJIT_HEUR_MODE_A;

/* Runs `g` once on new random data and returns its error against the reference. */
static double run_once(dnnjit_graph_t g)
{
    gb_set_t bufs;
    gb_alloc(g, &bufs);
    gb_fill(&bufs, -1.0, 1.0);
    TU_OK(dnnjit_graph_execute(g, bufs.device_pack, bufs.n, gb_workspace(&bufs), NULL));
    GB_CU(dnnjit__cuda()->cuStreamSynchronize(NULL));
    double err = gb_error(g, &bufs);
    gb_free(&bufs);
    return err;
}

static dnnjit_graph_t seed000(void)
{
    return tu_gpu_matmul_graph(DNNJIT_DATA_TYPE_HALF, 4, 64, 128, 64);
}

/* y = sigmoid(a * s + b), s a pass-by-value float. */
static dnnjit_graph_t pointwise(void)
{
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t a = tu_tensor(g, "a", 2, TU_DIMS(77, 1000), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", 2, TU_DIMS(77, 1000), NULL, 0);
    dnnjit_tensor_t s, as, u, y;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "s", .ndim = 1, .dim = TU_DIMS(1),
                                                         .data_type = DNNJIT_DATA_TYPE_FLOAT, .is_pass_by_value = true},
                              &s));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, a, s, 0, &as));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, as, b, 0, &u));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SIGMOID_FWD}, u, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    return g;
}

/* S = softmax(A @ B): two kernels and a workspace. */
static dnnjit_graph_t two_kernels(void)
{
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(3, 77, 100), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(3, 100, 33), NULL, 0);
    dnnjit_tensor_t c, s;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_graph_softmax(g, c, NULL, &s, NULL, NULL));
    TU_OK(dnnjit_tensor_set_output(g, s, true));
    return g;
}

/* A long-K product, built on a split-K plan (scratch workspace and zeroed counters). */
static dnnjit_graph_t split_k(void)
{
    return tu_gpu_matmul_graph(DNNJIT_DATA_TYPE_HALF, 1, 64, 4096, 64);
}

static dnnjit_graph_t (*const makers[])(void) = {seed000, pointwise, two_kernels, split_k};
static const char *const plans[] = {NULL, NULL, NULL, "_splitk"}; /* see gb_build */
static const char *const labels[] = {"seed 000", "pointwise + scalar", "softmax(A @ B)", "split-K"};
static const dnnjit_data_type_t io_types[] = {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                              DNNJIT_DATA_TYPE_HALF};
enum { CASES = sizeof makers / sizeof makers[0] };

static void *built_blob(int i, size_t *size)
{
    dnnjit_graph_t g = makers[i]();
    gb_build(g, plans[i]);
    void *blob = NULL;
    TU_OK(dnnjit_graph_serialize(g, &blob, size));
    dnnjit_graph_destroy(g);
    return blob;
}

static void deserialized_graphs_execute(void **state)
{
    (void)state;
    for (int i = 0; i < CASES; i++) {
        size_t size;
        void *blob = built_blob(i, &size);
        /* The handle of the GPU tests, which a graph made by tu_gpu_graph carries. */
        dnnjit_graph_t probe = tu_gpu_graph(io_types[i]);
        dnnjit_graph_t g1 = NULL, g2 = NULL;
        TU_OK(dnnjit_graph_deserialize(probe->handle, blob, size, &g1));
        TU_OK(dnnjit_graph_deserialize(probe->handle, blob, size, &g2));
        dnnjit_free(blob);
        /* One module per kernel, shared through the kernel cache. */
        const dnnjit__plan_t *p1 = &g1->jit->plans[0], *p2 = &g2->jit->plans[0];
        for (int64_t k = 0; k < g1->jit->partition.group_count; k++) {
            assert_non_null(p1->kernels[k].function);
            assert_ptr_equal(p1->kernels[k].function, p2->kernels[k].function);
        }
        double err = run_once(g1);
        printf("  %-20s deserialized: relative error %.3g\n", labels[i], err);
        if (!(err < tu_tolerance(io_types[i])))
            fail_msg("%s: relative error %g exceeds %g", labels[i], err, tu_tolerance(io_types[i]));
        dnnjit_graph_destroy(g1);
        /* The module outlives the graph that loaded it. */
        err = run_once(g2);
        if (!(err < tu_tolerance(io_types[i])))
            fail_msg("%s: second graph: relative error %g exceeds %g", labels[i], err, tu_tolerance(io_types[i]));
        dnnjit_graph_destroy(g2);
        dnnjit_graph_destroy(probe);
    }
}

static void check_run(dnnjit_graph_t g, int i, const char *what)
{
    double err = run_once(g);
    if (!(err < tu_tolerance(io_types[i])))
        fail_msg("%s, %s: relative error %g exceeds %g", labels[i], what, err, tu_tolerance(io_types[i]));
}

/* Clearing the kernel cache's memory (what `dnnjit cache clear` does) drops its entries,
 * but the modules that built and deserialized graphs launch stay loaded until those graphs
 * go; a graph built afterwards loads its own. */
static void clearing_the_memory_cache_keeps_live_kernels(void **state)
{
    (void)state;
    for (int i = 0; i < CASES; i++) {
        dnnjit_graph_t built = makers[i]();
        gb_build(built, plans[i]);
        size_t size;
        void *blob = NULL;
        TU_OK(dnnjit_graph_serialize(built, &blob, &size));
        dnnjit_graph_t loaded = NULL;
        TU_OK(dnnjit_graph_deserialize(built->handle, blob, size, &loaded));
        dnnjit_free(blob);
        check_run(built, i, "built, before the clear");
        dnnjit__jit_cache_clear_memory();
        check_run(built, i, "built, after the clear");
        check_run(loaded, i, "deserialized, after the clear");
        dnnjit_graph_t again = makers[i]();
        gb_build(again, plans[i]);
        const dnnjit__plan_t *old = &built->jit->plans[built->jit->chosen];
        const dnnjit__plan_t *new = &again->jit->plans[again->jit->chosen];
        assert_ptr_not_equal(old->kernels[0].function, new->kernels[0].function);
        dnnjit_graph_destroy(built);
        check_run(loaded, i, "deserialized, after the built graph went");
        check_run(again, i, "built again after the clear");
        dnnjit_graph_destroy(loaded);
        dnnjit_graph_destroy(again);
    }
}

/* In a fresh process where NVRTC cannot load: each blob from the folder executes. */
static int child_without_nvrtc(const char *folder)
{
    setenv("DNNJIT_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so", 1);
    JT_CHILD_CHECK(tu_gpu_available(), 2);
    for (int i = 0; i < CASES; i++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/case%d.blob", folder, i);
        FILE *fp = fopen(path, "rb");
        JT_CHILD_CHECK(fp, 3);
        static unsigned char blob[1 << 22];
        size_t size = fread(blob, 1, sizeof blob, fp);
        fclose(fp);
        dnnjit_graph_t probe = tu_gpu_graph(io_types[i]), g = NULL;
        JT_CHILD_CHECK(dnnjit_graph_deserialize(probe->handle, blob, size, &g) == DNNJIT_STATUS_SUCCESS, 4);
        double err = run_once(g);
        printf("  %-20s without NVRTC: relative error %.3g\n", labels[i], err);
        JT_CHILD_CHECK(err < tu_tolerance(io_types[i]), 5);
        /* NVRTC really is absent: building anew cannot compile. */
        dnnjit_graph_t fresh = makers[i]();
        JT_CHILD_CHECK(dnnjit_graph_build(fresh, &mode_a, 1) == DNNJIT_STATUS_NOT_SUPPORTED, 6);
        dnnjit_graph_destroy(fresh);
        dnnjit_graph_destroy(g);
        dnnjit_graph_destroy(probe);
    }
    return 0;
}

static void deserialized_graphs_need_no_nvrtc(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    char folder[PATH_MAX];
    snprintf(folder, sizeof folder, "%s/dnnjit-gpu-serialize-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(folder));
    char paths[CASES][PATH_MAX + 32];
    for (int i = 0; i < CASES; i++) {
        size_t size;
        void *blob = built_blob(i, &size);
        snprintf(paths[i], sizeof paths[i], "%s/case%d.blob", folder, i);
        FILE *fp = fopen(paths[i], "wb");
        assert_non_null(fp);
        assert_int_equal(fwrite(blob, 1, size, fp), size);
        assert_int_equal(fclose(fp), 0);
        dnnjit_free(blob);
    }
    fflush(stdout);
    int rc = jt_run_child((const char *[]){"without-nvrtc", folder, NULL}, -1);
    for (int i = 0; i < CASES; i++)
        remove(paths[i]);
    rmdir(folder);
    assert_int_equal(rc, 0);
}

int main(int argc, char **argv)
{
    /* Kernels compile into memory only: the test leaves nothing on disk. */
    setenv("DNNJIT_CACHE", "0", 1);
    if (argc == 4 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "without-nvrtc") == 0)
        return child_without_nvrtc(argv[3]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deserialized_graphs_execute),
        cmocka_unit_test(deserialized_graphs_need_no_nvrtc),
        cmocka_unit_test(clearing_the_memory_cache_keeps_live_kernels),
    };
    return TU_GPU_MAIN(tests, argc, argv, tu_gpu_available);
}
