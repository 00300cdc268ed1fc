/* The partitioner: which nodes fuse, what each group reads and writes, and what goes to
 * the workspace. */
#include "util.h"

#include "fusion/fusion.h"

static dnnjit_tensor_t pw(dnnjit_graph_t g, dnnjit_pointwise_mode_t mode, dnnjit_tensor_t a, dnnjit_tensor_t b)
{
    dnnjit_tensor_t out;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = mode}, a, b, DNNJIT_TENSOR_NONE, &out));
    return out;
}

static dnnjit__partition_t partition(dnnjit_graph_t g)
{
    dnnjit__partition_t p;
    TU_OK(dnnjit_graph_validate(g));
    TU_OK(dnnjit__partition(g, &p));
    return p;
}

static bool has_tensor(const dnnjit_tensor_t *list, int64_t n, dnnjit_tensor_t t)
{
    for (int64_t i = 0; i < n; i++)
        if (list[i] == t)
            return true;
    return false;
}

static void gemm_bias_relu_is_one_group(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(8, 64, 32), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(8, 32, 16), NULL, 0);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 3, TU_DIMS(1, 1, 16), NULL, 0);
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    dnnjit_tensor_t y = pw(g, DNNJIT_POINTWISE_RELU_FWD, pw(g, DNNJIT_POINTWISE_ADD, c, bias), 0);
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = partition(g);
    assert_int_equal(p.group_count, 1);
    assert_int_equal(p.groups[0].kind, DNNJIT__GROUP_GEMM);
    assert_int_equal(p.groups[0].node_count, 3);
    assert_int_equal(p.groups[0].input_count, 3);
    assert_true(has_tensor(p.groups[0].inputs, 3, bias));
    assert_int_equal(p.groups[0].output_count, 1);
    assert_int_equal(p.groups[0].outputs[0], y);
    assert_int_equal(p.workspace_size, 0);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void gemm_output_also_written(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(7, 5), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(5, 3), NULL, 0);
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    dnnjit_tensor_t y = pw(g, DNNJIT_POINTWISE_TANH_FWD, c, 0);
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = partition(g);
    assert_int_equal(p.group_count, 1);
    assert_int_equal(p.groups[0].output_count, 2);
    assert_true(has_tensor(p.groups[0].outputs, 2, c));
    assert_true(has_tensor(p.groups[0].outputs, 2, y));
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void pointwise_dag_is_one_group(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "a", 1, TU_DIMS(1000), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", 1, TU_DIMS(1000), NULL, 0);
    dnnjit_tensor_t c = tu_tensor(g, "c", 1, TU_DIMS(1), NULL, 0);
    dnnjit_tensor_t y = pw(g, DNNJIT_POINTWISE_SIGMOID_FWD, pw(g, DNNJIT_POINTWISE_ADD, a, pw(g, DNNJIT_POINTWISE_MUL, b, c)), 0);
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = partition(g);
    assert_int_equal(p.group_count, 1);
    assert_int_equal(p.groups[0].kind, DNNJIT__GROUP_POINTWISE);
    assert_int_equal(p.groups[0].node_count, 3);
    assert_int_equal(p.groups[0].input_count, 3);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void crossing_virtual_goes_to_workspace(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(77, 1000), NULL, 0);
    dnnjit_tensor_t s;
    TU_OK(dnnjit_graph_softmax(g, x, NULL, &s, NULL, NULL));
    /* A sum over the outer axis is not a row op, so it cannot take s as an epilogue. */
    dnnjit_tensor_t y;
    TU_OK(dnnjit_graph_reduction(g, s, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_ADD, .axes = 1}, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = partition(g);
    assert_int_equal(p.group_count, 2);
    assert_int_equal(p.groups[0].kind, DNNJIT__GROUP_ROW);
    assert_int_equal(p.groups[1].kind, DNNJIT__GROUP_SINGLE);
    assert_int_equal(p.groups[0].outputs[0], s);
    assert_int_equal(p.workspace_offset[s - 1], 0);
    assert_int_equal(p.workspace_offset[y - 1], -1);
    /* 77 * 1000 FLOAT intermediates, rounded up to 256 bytes. */
    assert_int_equal(p.workspace_size, (77 * 1000 * 4 + 255) / 256 * 256);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void epilogue_waits_for_unplaced_producer(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(4, 6), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(6, 5), NULL, 0);
    dnnjit_tensor_t x = tu_tensor(g, "X", 2, TU_DIMS(4, 9), NULL, 0);
    dnnjit_tensor_t c, r;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_MAX, .axes = 2}, &r));
    dnnjit_tensor_t y = pw(g, DNNJIT_POINTWISE_SUB, c, r);
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = partition(g);
    assert_int_equal(p.group_count, 3);
    assert_int_equal(p.groups[0].node_count, 1);
    assert_true(p.workspace_offset[c - 1] >= 0);
    assert_true(p.workspace_offset[r - 1] >= 0);
    assert_int_equal(p.workspace_offset[r - 1] % 256, 0);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void different_shape_does_not_fuse(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "a", 2, TU_DIMS(1, 8), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", 2, TU_DIMS(8, 1), NULL, 0);
    dnnjit_tensor_t e = pw(g, DNNJIT_POINTWISE_EXP, a, 0);
    dnnjit_tensor_t y = pw(g, DNNJIT_POINTWISE_ADD, e, b); /* [8, 8]: a new shape */
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = partition(g);
    assert_int_equal(p.group_count, 2);
    assert_true(p.workspace_offset[e - 1] >= 0);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void needs_validation(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "a", 1, TU_DIMS(8), NULL, 0);
    TU_OK(dnnjit_tensor_set_output(g, pw(g, DNNJIT_POINTWISE_NEG, a, 0), true));
    dnnjit__partition_t p;
    TU_FAILS(dnnjit__partition(g, &p), DNNJIT_STATUS_BAD_STATE, "not validated");
    dnnjit_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gemm_bias_relu_is_one_group),
        cmocka_unit_test(gemm_output_also_written),
        cmocka_unit_test(pointwise_dag_is_one_group),
        cmocka_unit_test(crossing_virtual_goes_to_workspace),
        cmocka_unit_test(epilogue_waits_for_unplaced_producer),
        cmocka_unit_test(different_shape_does_not_fuse),
        cmocka_unit_test(needs_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
