/* GPU: dnnjit_graph_autotune on a pointwise graph and on seed 000. After tuning, the
 * outputs autotune left and a fresh execute of the chosen plan both match the reference;
 * a bad variant pack fails without changing the choice; a second graph made from the first
 * one's JSON builds the remembered plan, whichever heuristic mode ranks its list.
 * The records go to a private cache folder. Skipped (77) without a GPU. */
#include "gpu_buffers.h"

#include "engine/plan.h"

#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>

static char cache_dir[PATH_MAX];

static char *chosen_name(dnnjit_graph_t g)
{
    int64_t chosen;
    char *name;
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    assert_true(chosen >= 0);
    TU_OK(dnnjit_graph_get_plan_name(g, chosen, &name));
    return name;
}

/* The plan a new graph read from `json` chooses when built with `mode`. */
static char *rebuilt_choice(dnnjit_handle_t h, const char *json, dnnjit_heur_mode_t mode)
{
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_from_json(h, json, &g));
    TU_OK(dnnjit_graph_build(g, &mode, 1));
    char *name = chosen_name(g);
    dnnjit_graph_destroy(g);
    return name;
}

static void tune_and_check(dnnjit_graph_t g, double tol, bool own_stream, const char *label)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    const dnnjit_heur_mode_t mode_a = DNNJIT_HEUR_MODE_A;
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    gb_set_t bufs;
    gb_alloc(g, &bufs);
    gb_fill(&bufs, -1.0, 1.0);
    dnnjit__cu_stream_t stream = NULL;
    if (own_stream)
        GB_CU(cu->cuStreamCreate(&stream, DNNJIT__CU_STREAM_NON_BLOCKING));

    int64_t ws_before, ws_after;
    TU_OK(dnnjit_graph_get_workspace_size(g, &ws_before));
    TU_OK(dnnjit_graph_autotune(g, bufs.device_pack, bufs.n, gb_workspace(&bufs), stream));
    GB_CU(cu->cuStreamSynchronize(stream));
    /* Only plans that fit the workspace allocated for the first choice were run. */
    TU_OK(dnnjit_graph_get_workspace_size(g, &ws_after));
    assert_true(ws_after <= ws_before);
    int64_t plans;
    TU_OK(dnnjit_graph_get_plan_count(g, &plans));
    for (int64_t i = 0; i < plans; i++)
        assert_true(g->jit->plans[i].built); /* autotune built what only one build had not */
    char *tuned = chosen_name(g);
    printf("  %-20s %lld plan(s), autotune chose %s\n", label, (long long)plans, tuned);
    /* The outputs hold what the last timed plan wrote: the same result as every plan. */
    double err = gb_error(g, &bufs);
    if (!(err < tol))
        fail_msg("%s: outputs after autotune: relative error %g exceeds %g", label, err, tol);
    /* The chosen plan on new data. */
    gb_fill(&bufs, -1.0, 1.0);
    TU_OK(dnnjit_graph_execute(g, bufs.device_pack, bufs.n, gb_workspace(&bufs), stream));
    GB_CU(cu->cuStreamSynchronize(stream));
    err = gb_error(g, &bufs);
    if (!(err < tol))
        fail_msg("%s: chosen plan %s: relative error %g exceeds %g", label, tuned, err, tol);

    /* A pack without its first buffer is refused, and the choice stays. */
    int64_t before, after;
    TU_OK(dnnjit_graph_get_chosen_plan(g, &before));
    TU_FAILS(dnnjit_graph_autotune(g, bufs.device_pack + 1, bufs.n - 1, gb_workspace(&bufs), stream),
             DNNJIT_STATUS_BAD_PARAM, "no buffer in the variant pack");
    TU_OK(dnnjit_graph_get_chosen_plan(g, &after));
    assert_int_equal(after, before);

    /* Later builds of the same graph on this device choose it, whatever their ranking. */
    char *json;
    TU_OK(dnnjit_graph_to_json(g, &json));
    for (int m = DNNJIT_HEUR_MODE_A; m <= DNNJIT_HEUR_MODE_B; m++) {
        char *again = rebuilt_choice(g->handle, json, (dnnjit_heur_mode_t)m);
        assert_string_equal(again, tuned);
        dnnjit_free(again);
    }
    dnnjit_free(json);
    dnnjit_free(tuned);
    if (stream)
        GB_CU(cu->cuStreamDestroy(stream));
    gb_free(&bufs);
}

/* y = sigmoid(a + b * c) on 4M halves: four plans (two vector widths, scalar, fallback). */
static void pointwise(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "a", 2, TU_DIMS(4096, 1024), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", 2, TU_DIMS(4096, 1024), NULL, 0);
    dnnjit_tensor_t c = tu_tensor(g, "c", 2, TU_DIMS(4096, 1024), NULL, 0);
    dnnjit_tensor_t bc, s, y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, b, c, 0, &bc));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, a, bc, 0, &s));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SIGMOID_FWD}, s, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    tune_and_check(g, tu_tolerance(DNNJIT_DATA_TYPE_HALF), false, "pointwise");
    dnnjit_graph_destroy(g);
}

/* Seed 000: C[b] = A[b] @ B[b], half in, float compute, B=4 M=64 K=128 N=64, tuned on a
 * stream of its own. */
static void seed000(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_matmul_graph(DNNJIT_DATA_TYPE_HALF, 4, 64, 128, 64);
    tune_and_check(g, tu_tolerance(DNNJIT_DATA_TYPE_HALF), true, "seed 000");
    dnnjit_graph_destroy(g);
}

/* A long-K product: mode A puts split-K plans first, and larger tiles' scratch does not fit
 * the workspace of the first one, so those are passed over. */
static void split_k(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_matmul_graph(DNNJIT_DATA_TYPE_BFLOAT16, 1, 64, 4096, 64);
    tune_and_check(g, tu_tolerance(DNNJIT_DATA_TYPE_BFLOAT16), false, "split-K");
    dnnjit_graph_destroy(g);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(cache_dir, sizeof cache_dir, "%s/dnnjit-gpu-autotune-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(cache_dir))
        return 1;
    setenv("DNNJIT_CACHE_DIR", cache_dir, 1);
    unsetenv("DNNJIT_CACHE");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pointwise),
        cmocka_unit_test(seed000),
        cmocka_unit_test(split_k),
    };
    int rc = TU_GPU_MAIN(tests, argc, argv, tu_gpu_available);
    nftw(cache_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
