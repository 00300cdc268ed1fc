/* The JIT path without a GPU: a handle for a named architecture plans, generates and
 * compiles (NVRTC from the toolkit), and refuses only to execute. */
/* mkdtemp and setenv are POSIX. */
#define _POSIX_C_SOURCE 200809L

#include "util.h"

#include "jit/jit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static dnnjit_handle_t sm90;
static char cache_dir[] = "/tmp/dnnjit-test-plans-XXXXXX";

static int setup(void **state)
{
    (void)state;
    /* A private cache folder, so that this test compiles for real and leaves nothing. */
    if (!mkdtemp(cache_dir))
        return -1;
    setenv("DNNJIT_CACHE_DIR", cache_dir, 1);
    return dnnjit_handle_create_for_arch("sm_90a", &sm90);
}

static int teardown(void **state)
{
    (void)state;
    dnnjit_handle_destroy(sm90);
    uint64_t removed = 0;
    dnnjit__jit_cache_clear_disk(&removed);
    return removed > 0 && rmdir(cache_dir) == 0 ? 0 : -1;
}

/* y = sigmoid(a + b * c) on n elements of half. */
static dnnjit_graph_t sigmoid_graph(dnnjit_handle_t h, int64_t n)
{
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(h, &(dnnjit_graph_attr_t){.name = "sig", .io_data_type = DNNJIT_DATA_TYPE_HALF}, &g));
    dnnjit_tensor_t a = tu_tensor(g, "a", 1, (int64_t[]){n}, NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", 1, (int64_t[]){n}, NULL, 0);
    dnnjit_tensor_t c = tu_tensor(g, "c", 1, (int64_t[]){n}, NULL, 0);
    dnnjit_tensor_t t, u, y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, b, c, 0, &t));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, a, t, 0, &u));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SIGMOID_FWD}, u, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    return g;
}

static void handle_for_arch(void **state)
{
    (void)state;
    char arch[16];
    bool has_device = true;
    TU_OK(dnnjit_handle_get_arch(sm90, arch, sizeof arch, &has_device));
    assert_string_equal(arch, "sm_90a");
    assert_false(has_device);
    dnnjit_handle_t h = NULL;
    TU_FAILS(dnnjit_handle_create_for_arch("hopper", &h), DNNJIT_STATUS_BAD_PARAM, "hopper");
    assert_null(h);
    TU_FAILS(dnnjit_handle_create_for_arch(NULL, &h), DNNJIT_STATUS_BAD_PARAM, "arch is NULL");
    char tiny[3];
    TU_FAILS(dnnjit_handle_get_arch(sm90, tiny, sizeof tiny, NULL), DNNJIT_STATUS_BAD_PARAM, "cannot hold");
}

static void plans_by_mode(void **state)
{
    (void)state;
    dnnjit_graph_t g = sigmoid_graph(sm90, 1000);
    dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A, b = DNNJIT_HEUR_MODE_B;
    TU_OK(dnnjit_graph_create_execution_plans(g, &a, 1));
    int64_t count;
    TU_OK(dnnjit_graph_get_plan_count(g, &count));
    assert_int_equal(count, 4); /* b256 vec, b512 vec, b256 scalar, then the fallback engine */
    char *name;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &name));
    assert_string_equal(name, "pointwise_b256_vec");
    dnnjit_free(name);
    uint32_t notes;
    TU_OK(dnnjit_graph_get_plan_behavior_notes(g, 2, &notes));
    assert_true(notes & DNNJIT_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
    TU_OK(dnnjit_graph_get_plan_name(g, 3, &name));
    assert_string_equal(name, "fallback_b128");
    dnnjit_free(name);
    TU_FAILS(dnnjit_graph_get_plan_name(g, 4, &name), DNNJIT_STATUS_BAD_PARAM, "plan index 4 is outside 0..3");
    /* Mode B ranks by the cost model: the scalar plan, then the naive fallback, last. */
    TU_OK(dnnjit_graph_create_execution_plans(g, &b, 1));
    TU_OK(dnnjit_graph_get_plan_name(g, 2, &name));
    assert_string_equal(name, "pointwise_b256_scalar");
    dnnjit_free(name);
    TU_OK(dnnjit_graph_check_support(g));
    dnnjit_graph_destroy(g);
}

static void strided_input_has_no_vector_plan(void **state)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(sm90, &(dnnjit_graph_attr_t){.io_data_type = DNNJIT_DATA_TYPE_FLOAT}, &g));
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(7, 77), TU_DIMS(1, 7), 0);
    dnnjit_tensor_t y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_EXP}, x, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    TU_OK(dnnjit_tensor_set_stride(g, y, 2, TU_DIMS(77, 1)));
    TU_OK(dnnjit_graph_create_execution_plans(g, NULL, 0));
    int64_t count;
    TU_OK(dnnjit_graph_get_plan_count(g, &count));
    assert_int_equal(count, 2); /* the scalar pointwise plan and the fallback */
    dnnjit_graph_destroy(g);
}

static void source_is_deterministic(void **state)
{
    (void)state;
    char *src[2];
    for (int i = 0; i < 2; i++) {
        dnnjit_graph_t g = sigmoid_graph(sm90, 4097);
        TU_OK(dnnjit_graph_create_execution_plans(g, NULL, 0));
        TU_OK(dnnjit_graph_get_plan_source(g, 0, &src[i]));
        dnnjit_graph_destroy(g);
    }
    assert_string_equal(src[0], src[1]);
    assert_non_null(strstr(src[0], "constexpr dj_i64 DJ_NUMEL = 4097LL;"));
    assert_non_null(strstr(src[0], "dj_sigmoid("));
    dnnjit_free(src[0]);
    dnnjit_free(src[1]);
}

static void build_compiles_and_refuses_execute(void **state)
{
    (void)state;
    dnnjit_graph_t g = sigmoid_graph(sm90, 77);
    dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A;
    TU_OK(dnnjit_graph_build(g, &a, 1));
    int64_t chosen;
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    assert_int_equal(chosen, 0);
    TU_OK(dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_ALL));
    TU_OK(dnnjit_graph_build_plan_at_index(g, 2));
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    assert_int_equal(chosen, 2);
    int64_t ws;
    TU_OK(dnnjit_graph_get_workspace_size(g, &ws));
    assert_int_equal(ws, 0);
    TU_FAILS(dnnjit_graph_execute(g, NULL, 0, NULL, NULL), DNNJIT_STATUS_BAD_STATE, "without a device");
    /* Built graphs are frozen. */
    dnnjit_tensor_t t;
    TU_FAILS(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.ndim = 1, .dim = TU_DIMS(1)}, &t), DNNJIT_STATUS_BAD_STATE,
             "can no longer change");
    TU_FAILS(dnnjit_tensor_set_uid(g, 1, 99), DNNJIT_STATUS_BAD_STATE, "can no longer change");
    dnnjit_graph_destroy(g);
}

static void build_needs_plans_and_arch(void **state)
{
    (void)state;
    dnnjit_graph_t g = sigmoid_graph(sm90, 8);
    TU_FAILS(dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_ALL), DNNJIT_STATUS_BAD_STATE, "no execution plans");
    TU_FAILS(dnnjit_graph_check_support(g), DNNJIT_STATUS_NOT_SUPPORTED, "no execution plans");
    TU_FAILS(dnnjit_graph_get_workspace_size(g, &(int64_t){0}), DNNJIT_STATUS_BAD_STATE, "not built");
    TU_FAILS(dnnjit_graph_create_execution_plans(g, (dnnjit_heur_mode_t[]){(dnnjit_heur_mode_t)9}, 1),
             DNNJIT_STATUS_BAD_PARAM, "unknown heuristic mode 9");
    dnnjit_graph_destroy(g);
    g = sigmoid_graph(NULL, 8);
    TU_OK(dnnjit_graph_create_execution_plans(g, NULL, 0));
    TU_FAILS(dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE), DNNJIT_STATUS_BAD_STATE, "no handle");
    dnnjit_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handle_for_arch),
        cmocka_unit_test(plans_by_mode),
        cmocka_unit_test(strided_input_has_no_vector_plan),
        cmocka_unit_test(source_is_deterministic),
        cmocka_unit_test(build_compiles_and_refuses_execute),
        cmocka_unit_test(build_needs_plans_and_arch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
