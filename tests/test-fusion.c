/* The partitioner: which nodes fuse (matmul prologues included), what each group reads
 * and writes, and what goes to the workspace. */
#include "util.h"

#include "fusion/fusion.h"

static void gemm_bias_relu_is_one_group(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(8, 64, 32), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(8, 32, 16), NULL, 0);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 3, TU_DIMS(1, 1, 16), NULL, 0);
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    dnnjit_tensor_t y = tu_pointwise(g, DNNJIT_POINTWISE_RELU_FWD, tu_pointwise(g, DNNJIT_POINTWISE_ADD, c, bias), 0);
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = tu_partition(g);
    assert_int_equal(p.group_count, 1);
    assert_int_equal(p.groups[0].kind, DNNJIT__GROUP_GEMM);
    assert_int_equal(p.groups[0].node_count, 3);
    assert_int_equal(p.groups[0].input_count, 3);
    assert_true(tu_has_tensor(p.groups[0].inputs, 3, bias));
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
    dnnjit_tensor_t y = tu_pointwise(g, DNNJIT_POINTWISE_TANH_FWD, c, 0);
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = tu_partition(g);
    assert_int_equal(p.group_count, 1);
    assert_int_equal(p.groups[0].output_count, 2);
    assert_true(tu_has_tensor(p.groups[0].outputs, 2, c));
    assert_true(tu_has_tensor(p.groups[0].outputs, 2, y));
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
    dnnjit_tensor_t y = tu_pointwise(g, DNNJIT_POINTWISE_SIGMOID_FWD, tu_pointwise(g, DNNJIT_POINTWISE_ADD, a, tu_pointwise(g, DNNJIT_POINTWISE_MUL, b, c)), 0);
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = tu_partition(g);
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
    dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(7, 11, 1000), NULL, 0);
    dnnjit_tensor_t s;
    TU_OK(dnnjit_graph_softmax(g, x, NULL, &s, NULL, NULL));
    /* A sum over the middle axis is not a row op, so it cannot take s as a prologue. */
    dnnjit_tensor_t y;
    TU_OK(dnnjit_graph_reduction(g, s, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_ADD, .axes = 2}, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = tu_partition(g);
    assert_int_equal(p.group_count, 2);
    assert_int_equal(p.groups[0].kind, DNNJIT__GROUP_ROW);
    assert_int_equal(p.groups[1].kind, DNNJIT__GROUP_SINGLE);
    assert_int_equal(p.groups[0].outputs[0], s);
    assert_int_equal(p.workspace_offset[s - 1], 0);
    assert_int_equal(p.workspace_offset[y - 1], -1);
    /* 7 * 11 * 1000 FLOAT intermediates, rounded up to 256 bytes. */
    assert_int_equal(p.workspace_size, (7 * 11 * 1000 * 4 + 255) / 256 * 256);
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
    dnnjit_tensor_t y = tu_pointwise(g, DNNJIT_POINTWISE_SUB, c, r);
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = tu_partition(g);
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
    dnnjit_tensor_t e = tu_pointwise(g, DNNJIT_POINTWISE_EXP, a, 0);
    dnnjit_tensor_t y = tu_pointwise(g, DNNJIT_POINTWISE_ADD, e, b); /* [8, 8]: a new shape */
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = tu_partition(g);
    assert_int_equal(p.group_count, 2);
    assert_true(p.workspace_offset[e - 1] >= 0);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* The node that makes tensor t. */
static int64_t producer(dnnjit_graph_t g, dnnjit_tensor_t t)
{
    return dnnjit__tensor(g, t)->producer;
}

static bool has_node(const dnnjit__group_t *grp, int64_t node)
{
    for (int64_t i = 0; i < grp->node_count; i++)
        if (grp->nodes[i] == node)
            return true;
    return false;
}

/* relu(X) as A, X2 * scale (broadcast over K and the batch) as B, and a bias epilogue: one
 * group, the matmul its anchor, each prologue node on its operand's side, and nothing but
 * the result written. */
static void gemm_prologues_on_a_and_b(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "X", 3, TU_DIMS(2, 7, 5), NULL, 0);
    dnnjit_tensor_t x2 = tu_tensor(g, "X2", 3, TU_DIMS(2, 5, 3), NULL, 0);
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 3, TU_DIMS(1, 1, 3), NULL, 0);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 1, TU_DIMS(3), NULL, 0);
    dnnjit_tensor_t a = tu_pointwise(g, DNNJIT_POINTWISE_RELU_FWD, x, 0), b = tu_pointwise(g, DNNJIT_POINTWISE_MUL, x2, scale), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    dnnjit_tensor_t y = tu_pointwise(g, DNNJIT_POINTWISE_ADD, c, bias);
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    dnnjit__partition_t p = tu_partition(g);
    assert_int_equal(p.group_count, 1);
    const dnnjit__group_t *grp = &p.groups[0];
    assert_int_equal(grp->kind, DNNJIT__GROUP_GEMM);
    assert_int_equal(grp->node_count, 4);
    assert_int_equal(grp->first_node, producer(g, c));
    assert_int_equal(dnnjit__prologue_slot(g, grp->first_node, producer(g, a)), 0);
    assert_int_equal(dnnjit__prologue_slot(g, grp->first_node, producer(g, b)), 1);
    assert_int_equal(dnnjit__prologue_slot(g, grp->first_node, producer(g, y)), -1);
    assert_int_equal(grp->input_count, 4);
    assert_true(tu_has_tensor(grp->inputs, 4, x) && tu_has_tensor(grp->inputs, 4, x2) && tu_has_tensor(grp->inputs, 4, scale));
    assert_false(tu_has_tensor(grp->inputs, 4, a) || tu_has_tensor(grp->inputs, 4, b));
    assert_int_equal(grp->output_count, 1);
    assert_int_equal(grp->outputs[0], y);
    assert_int_equal(p.workspace_size, 0);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* A = (X + Y) * 2 - a DAG of two nodes with two inputs, one broadcast - is absorbed whole. */
static void gemm_prologue_dag(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "X", 2, TU_DIMS(6, 4), NULL, 0);
    dnnjit_tensor_t y = tu_tensor(g, "Y", 2, TU_DIMS(1, 4), NULL, 0);
    dnnjit_tensor_t two = tu_tensor(g, "two", 1, TU_DIMS(1), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(4, 3), NULL, 0);
    dnnjit_tensor_t sum = tu_pointwise(g, DNNJIT_POINTWISE_ADD, x, y), a = tu_pointwise(g, DNNJIT_POINTWISE_MUL, sum, two), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    dnnjit__partition_t p = tu_partition(g);
    assert_int_equal(p.group_count, 1);
    assert_int_equal(p.groups[0].node_count, 3);
    assert_int_equal(dnnjit__prologue_slot(g, p.groups[0].first_node, producer(g, sum)), 0);
    assert_int_equal(p.groups[0].input_count, 4);
    assert_int_equal(p.groups[0].output_count, 1);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* What a prologue may not absorb: an operand the user reads back (an output), one another
 * node also reads, one the matmul reads as both A and B, and an intermediate shared by the
 * prologues of A and B. Each stays in a group of its own, written to memory. */
static void gemm_prologue_refusals(void **state)
{
    (void)state;
    for (int c = 0; c < 4; c++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t x = tu_tensor(g, "X", 2, TU_DIMS(5, 5), NULL, 0);
        dnnjit_tensor_t t = tu_pointwise(g, DNNJIT_POINTWISE_RELU_FWD, x, 0), a = t, b = 0, out;
        if (c == 0)
            TU_OK(dnnjit_tensor_set_output(g, t, true));
        if (c == 1)
            TU_OK(dnnjit_tensor_set_output(g, tu_pointwise(g, DNNJIT_POINTWISE_EXP, t, 0), true));
        if (c == 2)
            b = t;
        if (c == 3) {
            a = tu_pointwise(g, DNNJIT_POINTWISE_NEG, t, 0);
            b = tu_pointwise(g, DNNJIT_POINTWISE_EXP, t, 0);
        }
        if (!b)
            b = tu_tensor(g, "W", 2, TU_DIMS(5, 5), NULL, 0);
        TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &out));
        TU_OK(dnnjit_tensor_set_output(g, out, true));
        dnnjit__partition_t p = tu_partition(g);
        const dnnjit__group_t *mm = NULL;
        for (int64_t gi = 0; gi < p.group_count; gi++)
            if (p.groups[gi].kind == DNNJIT__GROUP_GEMM)
                mm = &p.groups[gi];
        assert_non_null(mm);
        if (has_node(mm, producer(g, t)))
            fail_msg("case %d: relu(X) was absorbed into the matmul's prologue", c);
        if (!dnnjit__tensor(g, t)->is_virtual)
            assert_true(p.workspace_offset[t - 1] < 0);
        else
            assert_true(p.workspace_offset[t - 1] >= 0);
        /* Case 3: t stays out, but NEG and EXP, each read by one operand only, fuse. */
        assert_int_equal(mm->node_count, c == 3 ? 3 : 1);
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
}

/* A pointwise node that can extend an earlier matmul's epilogue stays there, rather than
 * becoming the next matmul's prologue: relu(C1) is C1's epilogue, written once. */
static void epilogue_preferred_to_prologue(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "X", 2, TU_DIMS(4, 6), NULL, 0);
    dnnjit_tensor_t w1 = tu_tensor(g, "W1", 2, TU_DIMS(6, 6), NULL, 0);
    dnnjit_tensor_t w2 = tu_tensor(g, "W2", 2, TU_DIMS(6, 3), NULL, 0);
    dnnjit_tensor_t c1, c2;
    TU_OK(dnnjit_graph_matmul(g, x, w1, NULL, &c1));
    dnnjit_tensor_t h = tu_pointwise(g, DNNJIT_POINTWISE_RELU_FWD, c1, 0);
    TU_OK(dnnjit_graph_matmul(g, h, w2, NULL, &c2));
    TU_OK(dnnjit_tensor_set_output(g, c2, true));
    dnnjit__partition_t p = tu_partition(g);
    assert_int_equal(p.group_count, 2);
    assert_int_equal(p.groups[0].node_count, 2);
    assert_int_equal(p.groups[1].node_count, 1);
    assert_true(p.workspace_offset[h - 1] >= 0);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void needs_validation(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "a", 1, TU_DIMS(8), NULL, 0);
    TU_OK(dnnjit_tensor_set_output(g, tu_pointwise(g, DNNJIT_POINTWISE_NEG, a, 0), true));
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
        cmocka_unit_test(gemm_prologues_on_a_and_b),
        cmocka_unit_test(gemm_prologue_dag),
        cmocka_unit_test(gemm_prologue_refusals),
        cmocka_unit_test(epilogue_preferred_to_prologue),
        cmocka_unit_test(needs_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
