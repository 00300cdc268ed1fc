/* Row groups and the rows engine, without a GPU: how the partitioner forms row groups
 * (prologue, row op, epilogue; what stays apart and why), which knobs the engine supports
 * and which mode A and B put first, the launch shape, deterministic source, and NVRTC
 * compiling every template, knob and data type for sm_80 and sm_90a (skipped when NVRTC
 * cannot be loaded). */
/* strdup and sysconf are POSIX. */
#define _POSIX_C_SOURCE 200809L

#include "util.h"

#include "engine/plan.h"
#include "jit/jit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const dnnjit__engine_t dnnjit__engine_rows;

static const dnnjit__engine_t *const engine = &dnnjit__engine_rows;

/* ---- graph helpers -------------------------------------------------------------- */

static dnnjit_tensor_t scalar(dnnjit_graph_t g, const char *name, bool has_value, double value)
{
    dnnjit_tensor_t t = 0;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = name, .ndim = 1, .dim = TU_DIMS(1),
                                                          .data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                          .is_pass_by_value = true, .has_value = has_value,
                                                          .value = value},
                              &t));
    return t;
}

/* Every tensor a group reads that some node makes is made by an earlier group or the
 * group itself: running the groups in order is valid. */
static void assert_runnable(dnnjit_graph_t g, const dnnjit__partition_t *p)
{
    int64_t *group_of = calloc((size_t)g->node_count, sizeof *group_of);
    assert_non_null(group_of);
    for (int64_t gi = 0; gi < p->group_count; gi++)
        for (int64_t i = 0; i < p->groups[gi].node_count; i++)
            group_of[p->groups[gi].nodes[i]] = gi;
    for (int64_t gi = 0; gi < p->group_count; gi++)
        for (int64_t i = 0; i < p->groups[gi].input_count; i++) {
            const dnnjit__tensor_t *t = dnnjit__tensor(g, p->groups[gi].inputs[i]);
            if (t->producer >= 0)
                assert_true(group_of[t->producer] < gi);
        }
    free(group_of);
}

/* The groups of g; asserts they cover every node once and run in order. */
static dnnjit__partition_t groups_of(dnnjit_graph_t g)
{
    dnnjit__partition_t p = tu_partition(g);
    int64_t nodes = 0;
    for (int64_t gi = 0; gi < p.group_count; gi++)
        nodes += p.groups[gi].node_count;
    assert_int_equal(nodes, g->node_count);
    assert_runnable(g, &p);
    return p;
}

/* ---- partition -------------------------------------------------------------------- */

/* h = x + r and y = rmsnorm(h), both written: one kernel that reads x and r once. */
static void residual_add_rmsnorm_is_one_group(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(64, 4096), NULL, 0);
    dnnjit_tensor_t r = tu_tensor(g, "r", 2, TU_DIMS(64, 4096), NULL, 0);
    dnnjit_tensor_t w = tu_tensor(g, "w", 2, TU_DIMS(1, 4096), NULL, 0);
    dnnjit_tensor_t h = tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, x, r)), y, inv;
    TU_OK(dnnjit_graph_rmsnorm(g, h, w, 0, &(dnnjit_norm_attr_t){.phase = DNNJIT_NORM_PHASE_TRAINING}, &y, &inv));
    tu_output(g, y);
    tu_output(g, inv);
    dnnjit__partition_t p = groups_of(g);
    assert_int_equal(p.group_count, 1);
    assert_int_equal(p.groups[0].kind, DNNJIT__GROUP_ROW);
    assert_int_equal(p.groups[0].node_count, 2);
    assert_int_equal(p.groups[0].first_node, 1);
    assert_int_equal(p.groups[0].input_count, 3);
    assert_int_equal(p.groups[0].output_count, 3);
    assert_true(tu_has_tensor(p.groups[0].outputs, 3, h));
    assert_true(tu_has_tensor(p.groups[0].outputs, 3, y));
    assert_true(tu_has_tensor(p.groups[0].outputs, 3, inv));
    assert_int_equal(p.workspace_size, 0);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* softmax(x * 0.5 + bias) * x: a two-node prologue, the softmax and a one-node epilogue;
 * the virtual intermediates never reach memory. */
static void prologue_and_epilogue_join_the_row_op(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(2, 8, 1000), NULL, 0);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 1, TU_DIMS(1000), NULL, 0);
    dnnjit_tensor_t t = tu_pointwise(g, DNNJIT_POINTWISE_ADD, tu_pointwise(g, DNNJIT_POINTWISE_MUL, x, scalar(g, "half", true, 0.5)), bias);
    dnnjit_tensor_t s;
    TU_OK(dnnjit_graph_softmax(g, t, NULL, &s, NULL, NULL));
    dnnjit_tensor_t y = tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_MUL, s, x));
    dnnjit__partition_t p = groups_of(g);
    assert_int_equal(p.group_count, 1);
    assert_int_equal(p.groups[0].kind, DNNJIT__GROUP_ROW);
    assert_int_equal(p.groups[0].node_count, 4);
    assert_int_equal(p.groups[0].first_node, 2);
    assert_int_equal(p.groups[0].output_count, 1);
    assert_int_equal(p.groups[0].outputs[0], y);
    assert_int_equal(p.workspace_size, 0);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* A node that reads the prologue's result before the row op runs keeps the prologue out
 * (the row group would run too late for it); one that reads it afterwards does not. */
static void prologue_needs_every_reader_after_the_row_op(void **state)
{
    (void)state;
    for (int after = 0; after < 2; after++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(16, 64), NULL, 0);
        dnnjit_tensor_t r = tu_tensor(g, "r", 2, TU_DIMS(16, 64), NULL, 0);
        dnnjit_tensor_t w = tu_tensor(g, "w", 2, TU_DIMS(1, 64), NULL, 0);
        dnnjit_tensor_t h = tu_pointwise(g, DNNJIT_POINTWISE_ADD, x, r), y, z = 0;
        if (!after)
            z = tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_MUL, h, h));
        TU_OK(dnnjit_graph_rmsnorm(g, h, w, 0, NULL, &y, NULL));
        if (after)
            z = tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_MUL, h, y));
        else
            tu_output(g, y);
        dnnjit__partition_t p = groups_of(g);
        if (after) {
            /* add, rmsnorm and the product that reads both: one group writing only z. */
            assert_int_equal(p.group_count, 1);
            assert_int_equal(p.groups[0].node_count, 3);
            assert_int_equal(p.groups[0].output_count, 1);
            assert_int_equal(p.groups[0].outputs[0], z);
        } else {
            /* add and square first (h goes to the workspace), then the norm alone. */
            assert_int_equal(p.group_count, 2);
            assert_int_equal(p.groups[0].kind, DNNJIT__GROUP_POINTWISE);
            assert_int_equal(p.groups[0].node_count, 2);
            assert_int_equal(p.groups[1].kind, DNNJIT__GROUP_ROW);
            assert_int_equal(p.groups[1].node_count, 1);
            assert_true(p.workspace_offset[h - 1] >= 0);
        }
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
}

/* The statistics are one value per row, so a node that reads them is not an epilogue. */
static void statistics_do_not_feed_an_epilogue(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(16, 64), NULL, 0);
    dnnjit_tensor_t s, lse;
    TU_OK(dnnjit_graph_softmax(g, x, &(dnnjit_softmax_attr_t){.stats = DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP}, &s, &lse,
                               NULL));
    tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_MUL, s, lse));
    dnnjit__partition_t p = groups_of(g);
    assert_int_equal(p.group_count, 2);
    assert_int_equal(p.groups[0].node_count, 1);
    assert_true(p.workspace_offset[s - 1] >= 0);
    assert_true(p.workspace_offset[lse - 1] >= 0);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* log(sum(exp(x))) + c over the innermost axis: prologue, reduction and an epilogue over
 * the reduced shape. Over an outer axis the reduction is not a row op and fuses nothing. */
static void reductions(void **state)
{
    (void)state;
    for (int inner = 0; inner < 2; inner++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(3, 5, 77), NULL, 0);
        dnnjit_tensor_t c = tu_tensor(g, "c", 3, inner ? TU_DIMS(3, 5, 1) : TU_DIMS(1, 5, 77), NULL, 0), y;
        TU_OK(dnnjit_graph_reduction(g, tu_pointwise(g, DNNJIT_POINTWISE_EXP, x, 0),
                                     &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_ADD, .axes = inner ? 4 : 1},
                                     &y));
        tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, tu_pointwise(g, DNNJIT_POINTWISE_LOG, y, 0), c));
        /* Over the innermost axis or the outermost one, the exp, the sum, the log and the
         * add are one row group. */
        dnnjit__partition_t p = groups_of(g);
        assert_int_equal(p.group_count, 1);
        assert_int_equal(p.groups[0].kind, DNNJIT__GROUP_ROW);
        assert_int_equal(p.groups[0].node_count, 4);
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
    /* Over the middle axis of three, it is not a row op. */
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(3, 5, 77), NULL, 0), y;
    TU_OK(dnnjit_graph_reduction(g, tu_pointwise(g, DNNJIT_POINTWISE_EXP, x, 0),
                                 &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_ADD, .axes = 2}, &y));
    tu_output(g, y);
    dnnjit__partition_t p = groups_of(g);
    assert_int_equal(p.group_count, 2);
    assert_int_equal(p.groups[1].kind, DNNJIT__GROUP_SINGLE);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* Reduced axes of one element do not matter: [4, 1, 6] over axes 1 and 2 (or 2 alone) is
 * a row of 6; over axes 0 and 1 (or 0 alone) 4 rows whose 6 columns are each reduced, since
 * kept axis 2 comes after them; [4, 5, 6] over axes 0 and 2 is neither. */
static void row_geometry(void **state)
{
    (void)state;
    static const struct {
        int64_t middle;
        uint32_t axes;
        bool row, columns;
        int64_t rows, cols;
    } cases[] = {{1, 0x6, true, false, 4, 6},  {1, 0x3, true, true, 4, 6},   {1, 0x4, true, false, 4, 6},
                 {1, 0x7, true, false, 1, 24}, {1, 0x2, true, false, 24, 1}, {1, 0x1, true, true, 4, 6},
                 {5, 0x3, true, true, 20, 6},  {5, 0x5, false, false, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(4, cases[i].middle, 6), NULL, 0), y;
        TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.axes = cases[i].axes}, &y));
        tu_output(g, y);
        TU_OK(dnnjit_graph_validate(g));
        dnnjit__row_geometry_t geo;
        assert_int_equal(dnnjit__row_geometry(g, &g->nodes[0], &geo), cases[i].row);
        if (cases[i].row) {
            assert_int_equal(geo.rows, cases[i].rows);
            assert_int_equal(geo.cols, cases[i].cols);
            assert_int_equal(geo.columns, cases[i].columns);
        }
        dnnjit_graph_destroy(g);
    }
    /* Layer norm over the last two axes of [2, 3, 4, 5]; softmax over the last. */
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "x", 4, TU_DIMS(2, 3, 4, 5), NULL, 0);
    dnnjit_tensor_t sc = tu_tensor(g, "sc", 4, TU_DIMS(1, 1, 4, 5), NULL, 0), y, s;
    TU_OK(dnnjit_graph_layernorm(g, x, sc, sc, &(dnnjit_norm_attr_t){.norm_axes = 2}, &y, NULL, NULL));
    TU_OK(dnnjit_graph_softmax(g, y, NULL, &s, NULL, NULL));
    tu_output(g, s);
    TU_OK(dnnjit_graph_validate(g));
    dnnjit__row_geometry_t geo;
    assert_true(dnnjit__row_geometry(g, &g->nodes[0], &geo));
    assert_int_equal(geo.rows, 6);
    assert_int_equal(geo.cols, 20);
    assert_int_equal(geo.inner_mask, 0xc);
    assert_true(dnnjit__row_geometry(g, &g->nodes[1], &geo));
    assert_int_equal(geo.rows, 24);
    assert_int_equal(geo.cols, 5);
    dnnjit_graph_destroy(g);
}

/* matmul -> bias -> softmax: the bias stays the matmul's epilogue. */
static void gemm_epilogue_stays_with_the_matmul(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(32, 64), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(64, 48), NULL, 0);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 2, TU_DIMS(1, 48), NULL, 0), c, s;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_graph_softmax(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, c, bias), NULL, &s, NULL, NULL));
    tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_EXP, s, 0));
    dnnjit__partition_t p = groups_of(g);
    assert_int_equal(p.group_count, 2);
    assert_int_equal(p.groups[0].kind, DNNJIT__GROUP_GEMM);
    assert_int_equal(p.groups[0].node_count, 2);
    assert_int_equal(p.groups[1].kind, DNNJIT__GROUP_ROW);
    assert_int_equal(p.groups[1].node_count, 2);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* Backward ops take prologues on both full inputs; DOUBLE compute takes none. */
static void backward_and_double(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t y = tu_tensor(g, "y", 2, TU_DIMS(8, 100), NULL, 0);
    dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(8, 100), NULL, 0);
    dnnjit_tensor_t mask = tu_tensor(g, "mask", 2, TU_DIMS(8, 100), NULL, 0), dx;
    TU_OK(dnnjit_graph_softmax_backward(g, tu_pointwise(g, DNNJIT_POINTWISE_ABS, y, 0), tu_pointwise(g, DNNJIT_POINTWISE_MUL, dy, mask),
                                        NULL, &dx));
    tu_output(g, dx);
    dnnjit__partition_t p = groups_of(g);
    assert_int_equal(p.group_count, 1);
    assert_int_equal(p.groups[0].node_count, 3);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);

    g = tu_graph(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(8, 100), NULL, 0), s;
    TU_OK(dnnjit_graph_softmax(g, tu_pointwise(g, DNNJIT_POINTWISE_EXP, x, 0),
                               &(dnnjit_softmax_attr_t){.compute_data_type = DNNJIT_DATA_TYPE_DOUBLE}, &s, NULL, NULL));
    tu_output(g, s);
    p = groups_of(g);
    assert_int_equal(p.group_count, 2);
    assert_int_equal(p.groups[1].kind, DNNJIT__GROUP_ROW);
    assert_int_equal(p.groups[1].node_count, 1);
    char why[200] = "";
    assert_false(engine->supports(g, &p.groups[1], 0, "sm_90a", why, sizeof why));
    assert_non_null(strstr(why, "DOUBLE"));
    assert_false(engine->supports(g, &p.groups[0], 0, "sm_90a", why, sizeof why));
    assert_non_null(strstr(why, "not a row group"));
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* ---- one graph per row op -------------------------------------------------------------- */

typedef enum op_case {
    OP_REDUCTION,
    OP_SOFTMAX,
    OP_SOFTMAX_BACKWARD,
    OP_LAYERNORM,
    OP_RMSNORM,
    OP_LAYERNORM_BACKWARD,
    OP_RMSNORM_BACKWARD,
    OP_COLUMN_REDUCTION, /* over the rows: one result per column */
    OP_CASE_COUNT
} op_case_t;

static const dnnjit_data_type_t io_types[] = {DNNJIT_DATA_TYPE_FLOAT, DNNJIT_DATA_TYPE_HALF,
                                              DNNJIT_DATA_TYPE_BFLOAT16};
enum { IO_TYPE_COUNT = sizeof io_types / sizeof io_types[0] };

/* A graph of one row op over [rows, cols] inputs of type io; `variant` picks among the
 * op's forms (reduction mode, softmax statistics, norm phase, whether DBIAS is made). */
static dnnjit_graph_t op_graph(dnnjit_handle_t h, op_case_t op, dnnjit_data_type_t io, int64_t rows, int64_t cols,
                               int variant)
{
    dnnjit_graph_t g = NULL;
    TU_OK(dnnjit_graph_create(h,
                              &(dnnjit_graph_attr_t){.name = "rows", .io_data_type = io,
                                                     .intermediate_data_type = DNNJIT_DATA_TYPE_FLOAT},
                              &g));
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(rows, cols), NULL, 0);
    dnnjit_tensor_t out[3] = {0, 0, 0};
    if (op == OP_REDUCTION || op == OP_COLUMN_REDUCTION) {
        TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.mode = variant % DNNJIT_REDUCTION_MODE_COUNT_,
                                                                      .axes = op == OP_REDUCTION ? 2 : 1},
                                     &out[0]));
    } else if (op == OP_SOFTMAX) {
        int stats = variant % 3;
        TU_OK(dnnjit_graph_softmax(g, x, &(dnnjit_softmax_attr_t){.stats = stats}, &out[0], stats ? &out[1] : NULL,
                                   stats == 2 ? &out[2] : NULL));
    } else if (op == OP_SOFTMAX_BACKWARD) {
        dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(rows, cols), NULL, 0);
        TU_OK(dnnjit_graph_softmax_backward(g, x, dy, NULL, &out[0]));
    } else if (op == OP_LAYERNORM || op == OP_RMSNORM) {
        /* Layer norm always has a bias; RMS norm in two variants of three. */
        bool has_bias = op == OP_LAYERNORM || variant % 3;
        dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, cols), NULL, 0);
        dnnjit_tensor_t bias = has_bias ? tu_tensor(g, "bias", 2, TU_DIMS(1, cols), NULL, 0) : 0;
        dnnjit_norm_attr_t attr = {.phase = variant % 2};
        if (op == OP_LAYERNORM)
            TU_OK(dnnjit_graph_layernorm(g, x, scale, bias, &attr, &out[0], attr.phase ? &out[1] : NULL,
                                         attr.phase ? &out[2] : NULL));
        else
            TU_OK(dnnjit_graph_rmsnorm(g, x, scale, bias, &attr, &out[0],
                                       attr.phase ? &out[1] : NULL));
    } else {
        dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(rows, cols), NULL, 0);
        dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, cols), NULL, 0);
        dnnjit_tensor_t inv = tu_tensor(g, "inv", 2, TU_DIMS(rows, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
        bool dbias = variant % 2;
        if (op == OP_LAYERNORM_BACKWARD) {
            dnnjit_tensor_t mean = tu_tensor(g, "mean", 2, TU_DIMS(rows, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
            TU_OK(dnnjit_graph_layernorm_backward(g, dy, x, scale, mean, inv, NULL, &out[0], &out[1],
                                                  dbias ? &out[2] : NULL));
        } else {
            TU_OK(dnnjit_graph_rmsnorm_backward(g, dy, x, scale, inv, NULL, &out[0], &out[1], dbias ? &out[2] : NULL));
        }
    }
    for (int i = 0; i < 3; i++)
        if (out[i])
            tu_output(g, out[i]);
    return g;
}

/* The knob whose name is `name`, or -1. */
static int knob_named(const char *name)
{
    for (int k = 0; k < engine->knob_count; k++) {
        char buf[64];
        engine->knob_name(k, buf, sizeof buf);
        if (strcmp(buf, name) == 0)
            return k;
    }
    return -1;
}

/* The knob mode A lists first for g's only group (the supported one of lowest rule, table
 * order among equals), as a name. */
static void first_knob(dnnjit_graph_t g, char *name, size_t size)
{
    dnnjit__partition_t p = tu_partition(g);
    assert_int_equal(p.group_count, 1);
    int best = -1;
    for (int k = 0; k < engine->knob_count; k++)
        if (engine->supports(g, &p.groups[0], k, "sm_90a", NULL, 0) &&
            (best < 0 || engine->rule(g, &p.groups[0], k) < engine->rule(g, &p.groups[0], best)))
            best = k;
    assert_true(best >= 0);
    engine->knob_name(best, name, size);
    dnnjit__partition_free(&p);
}

/* Mode A's first plan, worked out by hand: the preferred threads per row are the row's
 * bytes / 32, within 1 and 512; a plan lies |log2(threads / preferred)| octaves away,
 * half an octave more one element at a time, two more for a fused plan at 1024 threads per
 * SM. Supported plans (the row within 32 registers a thread: cols / (threads * vector)
 * chunks of `vector` elements for every input the op keeps, 16-bit values two to a
 * register; a reduction reads at most 32 elements a thread; no more threads than vectors)
 * rank split, fused, register, stream, then by that distance, then table order. */
static void mode_a_picks_by_row_length(void **state)
{
    (void)state;
    static const struct {
        op_case_t op;
        dnnjit_data_type_t io;
        int64_t cols;
        const char *knob;
    } cases[] = {
        /* 2000 bytes: 62.5 preferred, 64 threads of two vectors (125 in all). */
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_BFLOAT16, 1000, "t64_r2_vec"},
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_BFLOAT16, 4096, "t256_r1_vec"},  /* 8 KB: 256 */
        {OP_LAYERNORM, DNNJIT_DATA_TYPE_BFLOAT16, 32768, "t512_r1_vec"}, /* 8 x 4 registers */
        /* 512 preferred, but 16 chunks x 4 registers there: 1024 threads, an octave. */
        {OP_RMSNORM, DNNJIT_DATA_TYPE_BFLOAT16, 65536, "t1024_r1_vec"},
        /* 16 x 4 even at 1024: stream plans, 1024 and 256 an octave each, table order. */
        {OP_RMSNORM, DNNJIT_DATA_TYPE_BFLOAT16, 131072, "t1024_r1_vec_stream"},
        /* 256 bytes: 8 preferred, threads of two of the 16 vectors. */
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_FLOAT, 64, "t8_r16_vec"},
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_FLOAT, 1, "t1_r128_scalar"},
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_FLOAT, 4097, "t512_r1_scalar"}, /* no vectors; 16 KB: 512 */
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_HALF, 4097, "t256_r1_scalar"},  /* 8194 bytes: 256 */
        /* A norm backward with DSCALE fuses the column sums while the row and two float sums
         * per element fit 48 registers: at 256 threads two chunks, 2 x (4 + 4) + 2 x 16. */
        {OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 4096, "t256_r1_vec_fused_half"},
        {OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_FLOAT, 4096, "t512_r1_vec_fused_half"}, /* 2 x (4 + 4) + 2 x 8 */
        {OP_RMSNORM_BACKWARD, DNNJIT_DATA_TYPE_FLOAT, 1000, "t128_r1_vec_fused_half"},  /* 4000 bytes: 125 */
        {OP_RMSNORM_BACKWARD, DNNJIT_DATA_TYPE_HALF, 1000, "t64_r4_vec_fused_half"},   /* 125 vectors: 2 chunks */
        /* 32768 elements are 32 a thread at 1024 threads, 32 + 64 registers: too many for a
         * block, but clusters of 8 blocks take a 4096-wide slice each, as above, their
         * column sums in shared memory, four blocks an SM (a cluster plan with them in
         * registers ranks three quarters of an octave behind, three blocks an SM a
         * quarter); 16384 elements take clusters of 4 (a 128-thread slice at 256 threads
         * is an octave off, more than that). */
        {OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 32768, "t256_r1_vec_fused_smem_b4_c8"},
        {OP_RMSNORM_BACKWARD, DNNJIT_DATA_TYPE_HALF, 16384, "t256_r1_vec_fused_half_c4"},
        {OP_SOFTMAX_BACKWARD, DNNJIT_DATA_TYPE_HALF, 1000, "t64_r2_vec"},      /* 2 x (4 + 4) */
        /* 77 rows of 250 vectors, too short to split; 4000 bytes: 128 threads. */
        {OP_REDUCTION, DNNJIT_DATA_TYPE_FLOAT, 1000, "t128_r1_vec"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = op_graph(NULL, cases[i].op, cases[i].io, 77, cases[i].cols, 1);
        char name[64];
        first_knob(g, name, sizeof name);
        if (strcmp(name, cases[i].knob) != 0)
            fail_msg("case %zu (%lld columns): mode A would take %s, expected %s", i, (long long)cases[i].cols, name,
                     cases[i].knob);
        dnnjit_graph_destroy(g);
    }
}

/* Mode A's column plan for a sum over the rows: vectors first (one element at a time is two
 * and a half octaves off), 32 threads across where the row has 32 vectors (an octave off
 * for each halving), three octaves off for a plan whose blocks fill less than half of one
 * wave of 1024 threads on 132 SMs (strips x segments, at most 128 segments a strip). */
static void mode_a_picks_column_plans(void **state)
{
    (void)state;
    static const struct {
        dnnjit_data_type_t io;
        int64_t rows, cols;
        const char *knob;
    } cases[] = {
        /* 4 strips of 256 columns x 128 segments: 512 blocks of 256 threads. */
        {DNNJIT_DATA_TYPE_HALF, 32768, 1000, "t32_r8_vec_columns"},
        {DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, "t32_r8_vec_columns"}, /* 128 strips x 4 segments */
        /* One strip at 32 threads (128 blocks, a quarter of the wave): 8 threads make four. */
        {DNNJIT_DATA_TYPE_BFLOAT16, 131072, 256, "t8_r32_vec_columns"},
        /* 8 vectors: 8 threads of vectors fill a quarter of the wave (3 octaves off), yet
         * beat the nearest plan one element at a time (8 threads: 2 + 2.5 octaves). */
        {DNNJIT_DATA_TYPE_BFLOAT16, 262144, 64, "t8_r32_vec_columns"},
        /* No vectors in a row of 77 halves: 32 threads one element at a time. */
        {DNNJIT_DATA_TYPE_HALF, 100000, 77, "t32_r8_scalar_columns"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = op_graph(NULL, OP_COLUMN_REDUCTION, cases[i].io, cases[i].rows, cases[i].cols, 1);
        char name[64];
        first_knob(g, name, sizeof name);
        if (strcmp(name, cases[i].knob) != 0)
            fail_msg("case %zu (%lld x %lld): mode A would take %s, expected %s", i, (long long)cases[i].rows,
                     (long long)cases[i].cols, name, cases[i].knob);
        dnnjit_graph_destroy(g);
    }
}

static dnnjit_graph_t add_rmsnorm_sized(dnnjit_data_type_t io, int64_t rows, int64_t cols);

/* Modes A and B on dnnjit-bench rows' cases, worked out by hand from plan_penalty's rules:
 * a thread per 32 bytes of the row, at most 512; element-wise access half an octave
 * off, a fused plan at 1024 threads per SM two, a cluster plan with its column sums in
 * registers three quarters; split, fused, register, stream plans in that order for mode A. */
static void modes_pick_measured_best(void **state)
{
    (void)state;
    static const struct {
        int op; /* an op_case_t, or -1: add + RMS norm */
        dnnjit_data_type_t io;
        int64_t rows, cols;
        const char *plan;
    } cases[] = {
        /* 8 KB rows: 256 threads of two vectors. */
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_BFLOAT16, 32768, 4096, "rows_t256_r1_vec"},
        {OP_LAYERNORM, DNNJIT_DATA_TYPE_BFLOAT16, 32768, 4096, "rows_t256_r1_vec"},
        {OP_RMSNORM, DNNJIT_DATA_TYPE_BFLOAT16, 32768, 4096, "rows_t256_r1_vec"},
        {-1, DNNJIT_DATA_TYPE_BFLOAT16, 32768, 4096, "rows_t256_r1_vec"},
        {OP_SOFTMAX_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 32768, 4096, "rows_t256_r1_vec"},
        /* Fused at 256 threads: 2 chunks of 4 + 4 registers and 2 x 16 sums, 48. */
        {OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 32768, 4096, "rows_t256_r1_vec_fused_half"},
        {OP_RMSNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 32768, 4096, "rows_t256_r1_vec_fused_half"},
        /* 2000-byte rows: 64 threads of two of the 125 vectors, two rows a block. */
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_HALF, 32768, 1000, "rows_t64_r2_vec"},
        {OP_LAYERNORM, DNNJIT_DATA_TYPE_HALF, 32768, 1000, "rows_t64_r2_vec"},
        {OP_RMSNORM, DNNJIT_DATA_TYPE_HALF, 32768, 1000, "rows_t64_r2_vec"},
        {-1, DNNJIT_DATA_TYPE_HALF, 32768, 1000, "rows_t64_r2_vec"},
        {OP_SOFTMAX_BACKWARD, DNNJIT_DATA_TYPE_HALF, 32768, 1000, "rows_t64_r2_vec"},
        /* The only fused plans that fit: 64 threads of two chunks, four rows a block. */
        {OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_HALF, 32768, 1000, "rows_t64_r4_vec_fused_half"},
        {OP_RMSNORM_BACKWARD, DNNJIT_DATA_TYPE_HALF, 32768, 1000, "rows_t64_r4_vec_fused_half"},
        /* 64 KB rows: 512 threads of 8 vectors (32 registers); two kept inputs need 1024. */
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, "rows_t512_r1_vec"},
        {OP_LAYERNORM, DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, "rows_t512_r1_vec"},
        {OP_RMSNORM, DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, "rows_t512_r1_vec"},
        {-1, DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, "rows_t512_r1_vec"},
        {OP_SOFTMAX_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, "rows_t1024_r1_vec"},
        /* Clusters of 8 blocks of 256 threads, each block a 4096-wide slice of the row, with
         * the column sums in shared memory, four blocks an SM. */
        {OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, "rows_t256_r1_vec_fused_smem_b4_c8"},
        {OP_RMSNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, "rows_t256_r1_vec_fused_smem_b4_c8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int m = 0; m < 2; m++) {
            /* The bench's backward norms write every parameter gradient: layer norm's DBIAS
             * too (variant 1), RMS norm's DSCALE alone (variant 0). */
            dnnjit_graph_t g = cases[i].op < 0 ? add_rmsnorm_sized(cases[i].io, cases[i].rows, cases[i].cols)
                                               : op_graph(NULL, (op_case_t)cases[i].op, cases[i].io, cases[i].rows,
                                                          cases[i].cols, cases[i].op == OP_LAYERNORM_BACKWARD);
            dnnjit_heur_mode_t mode = m ? DNNJIT_HEUR_MODE_B : DNNJIT_HEUR_MODE_A;
            TU_OK(dnnjit_graph_create_execution_plans(g, &mode, 1));
            char *name;
            TU_OK(dnnjit_graph_get_plan_name(g, 0, &name));
            if (strcmp(name, cases[i].plan) != 0)
                fail_msg("case %zu, mode %c: %s, expected %s", i, m ? 'B' : 'A', name, cases[i].plan);
            dnnjit_free(name);
            dnnjit_graph_destroy(g);
        }
}

/* What each knob refuses, and why. */
static void knob_refusals(void **state)
{
    (void)state;
    static const struct {
        op_case_t op;
        dnnjit_data_type_t io;
        int64_t cols;
        const char *knob, *why;
    } cases[] = {
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_HALF, 4097, "t256_r1_vec", "multiples of a 16-byte vector"},
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_HALF, 1000, "t256_r1_vec", "256 threads per row would idle on rows of 125"},
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_HALF, 1000, "t8_r16_vec", "needs 64 registers per thread"},
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_HALF, 32768, "t1024_r1_vec_stream", "fits in registers"},
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_FLOAT, 32768, "t512_r1_vec", "needs 64 registers"},
        {OP_SOFTMAX_BACKWARD, DNNJIT_DATA_TYPE_HALF, 4096, "t64_r2_vec", "needs 64 registers"},
        {OP_SOFTMAX, DNNJIT_DATA_TYPE_HALF, 4096, "t512_r1_vec_fused", "only a norm backward"},
        /* 32 elements a thread: 4 chunks of 4 + 4 registers, and 2 x 32 sums. */
        {OP_RMSNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 4096, "t128_r1_vec_fused", "need 96 registers"},
        /* 4096 columns in 8 slices of whole 2048-column chunks: 2 slices. */
        {OP_RMSNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 4096, "t256_r1_vec_fused_half_c8", "do not cut into 8"},
        {OP_COLUMN_REDUCTION, DNNJIT_DATA_TYPE_HALF, 1000, "t64_r2_vec", "runs as column blocks (one element of Y"},
        {OP_REDUCTION, DNNJIT_DATA_TYPE_HALF, 1000, "t32_r8_vec_columns", "only a reduction over the outer axes"},
        {OP_COLUMN_REDUCTION, DNNJIT_DATA_TYPE_HALF, 7, "t8_r32_scalar_columns", "8 threads per row would idle"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = op_graph(NULL, cases[i].op, cases[i].io, 8, cases[i].cols, 0);
        dnnjit__partition_t p = tu_partition(g);
        int knob = knob_named(cases[i].knob);
        assert_true(knob >= 0);
        char why[200] = "";
        assert_false(engine->supports(g, &p.groups[0], knob, "sm_90a", why, sizeof why));
        if (!strstr(why, cases[i].why))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, why, cases[i].why);
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
    /* Rows whose starts are not 16-byte aligned (a row stride of 1001 halves) read one
     * element at a time; so do rows that are not contiguous. */
    for (int transposed = 0; transposed < 2; transposed++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
        dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(8, 1000), transposed ? TU_DIMS(1, 8) : TU_DIMS(1001, 1), 0);
        dnnjit_tensor_t s;
        TU_OK(dnnjit_graph_softmax(g, x, NULL, &s, NULL, NULL));
        tu_output(g, s);
        TU_OK(dnnjit_tensor_set_stride(g, s, 2, transposed ? TU_DIMS(1, 8) : TU_DIMS(1001, 1)));
        dnnjit__partition_t p = tu_partition(g);
        char why[200] = "";
        assert_false(engine->supports(g, &p.groups[0], knob_named("t32_r4_vec"), "sm_90a", why, sizeof why));
        assert_non_null(strstr(why, "16-byte"));
        assert_true(engine->supports(g, &p.groups[0], knob_named("t32_r4_scalar"), "sm_90a", NULL, 0));
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
    char why[200] = "";
    dnnjit_graph_t g = op_graph(NULL, OP_SOFTMAX, DNNJIT_DATA_TYPE_FLOAT, 8, 64, 0);
    dnnjit__partition_t p = tu_partition(g);
    assert_false(engine->supports(g, &p.groups[0], engine->knob_count, "sm_90a", why, sizeof why));
    assert_string_equal(why, "unknown knob");
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
    /* Clusters need sm_90: on sm_80 a 32768-wide backward takes a block-wide plan. */
    g = op_graph(NULL, OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 8, 32768, 1);
    p = tu_partition(g);
    assert_true(engine->supports(g, &p.groups[0], knob_named("t256_r1_vec_fused_half_c8"), "sm_90a", NULL, 0));
    assert_false(engine->supports(g, &p.groups[0], knob_named("t256_r1_vec_fused_half_c8"), "sm_80", why, sizeof why));
    assert_non_null(strstr(why, "clusters of blocks need sm_90 or later, not sm_80"));
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void knob_names_are_distinct(void **state)
{
    (void)state;
    for (int a = 0; a < engine->knob_count; a++) {
        char x[64];
        engine->knob_name(a, x, sizeof x);
        assert_int_equal(knob_named(x), a);
        assert_int_equal(x[0], 't');
    }
}

/* Only the cluster plans with row tickets are noted NONDETERMINISTIC: every other knob's
 * partial sums cover fixed rows and are added in a fixed order, the other cluster plans'
 * too (their rows are fixed by the cluster count loading settles). 4096x32768 bf16 RMS
 * norm backward lists both kinds; mode A puts the noted plan after every plan without the
 * note (mode A's first pick, four blocks an SM, gives the same bits every run), and mode B
 * after its twin of the same cost (three blocks an SM). */
static void only_ticket_plans_are_nondeterministic(void **state)
{
    (void)state;
    assert_non_null(engine->notes);
    for (int k = 0; k < engine->knob_count; k++) {
        char name[64];
        engine->knob_name(k, name, sizeof name);
        bool tickets = strstr(name, "_tickets") != NULL;
        assert_int_equal(engine->notes(k), tickets ? DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC : 0u);
    }
    const dnnjit_heur_mode_t modes[] = {DNNJIT_HEUR_MODE_A, DNNJIT_HEUR_MODE_B};
    for (int m = 0; m < 2; m++) {
        dnnjit_graph_t g = op_graph(NULL, OP_RMSNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, 0);
        TU_OK(dnnjit_graph_create_execution_plans(g, &modes[m], 1));
        int64_t count, twin = -1, four = -1, tickets = -1, last_plain = -1, first_noted = -1;
        TU_OK(dnnjit_graph_get_plan_count(g, &count));
        for (int64_t i = 0; i < count; i++) {
            char *name;
            uint32_t notes;
            TU_OK(dnnjit_graph_get_plan_name(g, i, &name));
            TU_OK(dnnjit_graph_get_plan_behavior_notes(g, i, &notes));
            bool noted = notes & DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC;
            if (noted != (strstr(name, "_tickets") != NULL))
                fail_msg("mode %d plan %lld %s: notes %#x", (int)modes[m], (long long)i, name, notes);
            twin = strcmp(name, "rows_t256_r1_vec_fused_smem_b3_c8") ? twin : i;
            four = strcmp(name, "rows_t256_r1_vec_fused_smem_b4_c8") ? four : i;
            tickets = strcmp(name, "rows_t256_r1_vec_fused_smem_b3_c8_tickets") ? tickets : i;
            if (noted && first_noted < 0)
                first_noted = i;
            if (!noted && strncmp(name, "fallback", 8) != 0)
                last_plain = i;
            dnnjit_free(name);
        }
        assert_true(twin >= 0 && tickets > twin);
        if (modes[m] == DNNJIT_HEUR_MODE_A) {
            assert_int_equal(four, 0);
            assert_true(first_noted > last_plain);
        }
        dnnjit_graph_destroy(g);
    }
}

/* Deselecting NONDETERMINISTIC drops the ticket plan and keeps the others in order; bits
 * no note has, a graph without plans, and a note every plan has are refused, the last
 * leaving the list as it was. */
static void deselecting_nondeterministic_plans(void **state)
{
    (void)state;
    dnnjit_graph_t g = op_graph(NULL, OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, 1);
    assert_int_equal(dnnjit_graph_deselect_behavior_notes(g, DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC),
                     DNNJIT_STATUS_BAD_STATE);
    assert_non_null(strstr(dnnjit_last_error(), "create_execution_plans first"));
    dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A;
    TU_OK(dnnjit_graph_create_execution_plans(g, &a, 1));
    int64_t before, after;
    TU_OK(dnnjit_graph_get_plan_count(g, &before));
    char *first;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &first));
    assert_int_equal(dnnjit_graph_deselect_behavior_notes(g, 1u << 7), DNNJIT_STATUS_BAD_PARAM);
    assert_non_null(strstr(dnnjit_last_error(), "bits 0x80"));
    assert_int_equal(dnnjit_graph_deselect_behavior_notes(NULL, 0), DNNJIT_STATUS_BAD_PARAM);
    assert_int_equal(dnnjit_graph_deselect_behavior_notes(g, DNNJIT_BEHAVIOR_NOTE_RUNTIME_COMPILATION),
                     DNNJIT_STATUS_NOT_SUPPORTED);
    assert_non_null(strstr(dnnjit_last_error(), "the list is unchanged"));
    TU_OK(dnnjit_graph_get_plan_count(g, &after));
    assert_int_equal(after, before);
    TU_OK(dnnjit_graph_deselect_behavior_notes(g, DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC));
    TU_OK(dnnjit_graph_get_plan_count(g, &after));
    assert_int_equal(after, before - 1);
    for (int64_t i = 0; i < after; i++) {
        uint32_t notes;
        char *name;
        TU_OK(dnnjit_graph_get_plan_behavior_notes(g, i, &notes));
        TU_OK(dnnjit_graph_get_plan_name(g, i, &name));
        assert_int_equal(notes, DNNJIT_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
        assert_null(strstr(name, "_tickets"));
        if (i == 0)
            assert_string_equal(name, first);
        dnnjit_free(name);
    }
    /* Nothing left to drop is not an error. */
    TU_OK(dnnjit_graph_deselect_behavior_notes(g, DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC));
    TU_OK(dnnjit_graph_get_plan_count(g, &before));
    assert_int_equal(before, after);
    dnnjit_free(first);
    dnnjit_graph_destroy(g);
}

/* Vector costs less than scalar at the same threads, and a larger problem more than a
 * smaller one; mode B puts the rows engine first. */
static void cost_ranks_sensibly(void **state)
{
    (void)state;
    dnnjit_graph_t small = op_graph(NULL, OP_LAYERNORM, DNNJIT_DATA_TYPE_BFLOAT16, 1024, 4096, 0);
    dnnjit_graph_t big = op_graph(NULL, OP_LAYERNORM, DNNJIT_DATA_TYPE_BFLOAT16, 32768, 4096, 0);
    dnnjit__partition_t ps = tu_partition(small), pb = tu_partition(big);
    int vec = knob_named("t256_r1_vec"), sca = knob_named("t256_r1_scalar");
    assert_true(engine->cost(big, &pb.groups[0], vec) > engine->cost(small, &ps.groups[0], vec));
    assert_true(engine->cost(big, &pb.groups[0], vec) < engine->cost(big, &pb.groups[0], sca));
    /* 32768 x 4096 bf16 in and out is 512 MB: at least 130 us at 4 TB/s. */
    assert_true(engine->cost(big, &pb.groups[0], vec) > 130.0);
    dnnjit__partition_free(&ps);
    dnnjit__partition_free(&pb);
    dnnjit_graph_destroy(small);
    dnnjit_graph_destroy(big);

    dnnjit_graph_t g = op_graph(NULL, OP_SOFTMAX, DNNJIT_DATA_TYPE_HALF, 32768, 1000, 0);
    dnnjit_heur_mode_t modes[] = {DNNJIT_HEUR_MODE_B};
    TU_OK(dnnjit_graph_create_execution_plans(g, modes, 1));
    char *first;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &first));
    /* 2000-byte rows: 64 threads of two vectors each. */
    assert_string_equal(first, "rows_t64_r2_vec");
    dnnjit_free(first);
    dnnjit_graph_destroy(g);
    /* A tiny problem costs a launch and a memory round trip or two: still ahead of the
     * fallback. */
    for (int t = 0; t < IO_TYPE_COUNT; t++)
        for (int stats = 0; stats < 3; stats++) {
            g = op_graph(NULL, OP_SOFTMAX, io_types[t], 67, 1, stats);
            TU_OK(dnnjit_graph_create_execution_plans(g, modes, 1));
            TU_OK(dnnjit_graph_get_plan_name(g, 0, &first));
            assert_string_equal(first, "rows_t1_r128_scalar");
            dnnjit_free(first);
            dnnjit_graph_destroy(g);
        }
}

/* Mode A lists the rows plans (in rule order) before the fallback; FALLBACK lists only the
 * fallback for a row op alone. */
static void plan_lists(void **state)
{
    (void)state;
    dnnjit_graph_t g = op_graph(NULL, OP_RMSNORM, DNNJIT_DATA_TYPE_BFLOAT16, 64, 4096, 1);
    dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A, fb = DNNJIT_HEUR_MODE_FALLBACK;
    TU_OK(dnnjit_graph_create_execution_plans(g, &a, 1));
    char *name;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &name));
    assert_string_equal(name, "rows_t256_r1_vec");
    dnnjit_free(name);
    int64_t count;
    TU_OK(dnnjit_graph_get_plan_count(g, &count));
    TU_OK(dnnjit_graph_get_plan_name(g, count - 1, &name));
    assert_string_equal(name, "fallback_b128");
    dnnjit_free(name);
    TU_OK(dnnjit_graph_create_execution_plans(g, &fb, 1));
    TU_OK(dnnjit_graph_get_plan_count(g, &count));
    assert_int_equal(count, 1);
    dnnjit_graph_destroy(g);
}

/* Mode FALLBACK runs a row op fused with pointwise nodes, which the fallback engine cannot,
 * with the rows engine's simplest plan: one plan, one element at a time; a stream plan
 * when the row is too long for registers. */
static dnnjit_graph_t add_rmsnorm_graph(void);
static dnnjit_graph_t fused_softmax_graph(void);
static dnnjit_graph_t logsumexp_graph(void);
static dnnjit_graph_t fused_backward_graph(void);

static void fallback_runs_fused_row_groups(void **state)
{
    (void)state;
    static const struct {
        dnnjit_graph_t (*make)(void);
        const char *plan;
    } cases[] = {
        /* 4096 bf16 elements are 128 registers a thread at 32 threads: 128 threads hold them. */
        {add_rmsnorm_graph, "rows_t128_r1_scalar"},
        /* 1000 elements: 32 threads of 32 registers. */
        {fused_softmax_graph, "rows_t32_r4_scalar"},
        /* A reduction keeps nothing but reads one element per register-plan slot: 77 fit 4 threads. */
        {logsumexp_graph, "rows_t4_r32_scalar"},
        /* 640 elements of two float-kept inputs: 64 threads of 20 registers. */
        {fused_backward_graph, "rows_t64_r2_scalar"},
    };
    dnnjit_heur_mode_t fb = DNNJIT_HEUR_MODE_FALLBACK;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = cases[i].make();
        TU_OK(dnnjit_graph_create_execution_plans(g, &fb, 1));
        int64_t count;
        TU_OK(dnnjit_graph_get_plan_count(g, &count));
        assert_int_equal(count, 1);
        char *name;
        TU_OK(dnnjit_graph_get_plan_name(g, 0, &name));
        assert_string_equal(name, cases[i].plan);
        dnnjit_free(name);
        dnnjit_graph_destroy(g);
    }
}

/* ---- generated source -------------------------------------------------------------- */

/* Generates g's only row group with `knob` twice (the same bytes), checks the launch shape
 * and slots, and returns the kernel. */
static dnnjit__kernel_t generate(dnnjit_graph_t g, int knob)
{
    dnnjit__partition_t p = tu_partition(g);
    const dnnjit__group_t *grp = NULL;
    for (int64_t i = 0; i < p.group_count; i++)
        if (p.groups[i].kind == DNNJIT__GROUP_ROW)
            grp = &p.groups[i];
    assert_non_null(grp);
    char why[200] = "", name[64];
    engine->knob_name(knob, name, sizeof name);
    if (!engine->supports(g, grp, knob, "sm_90a", why, sizeof why))
        fail_msg("knob %s refused: %s", name, why);
    dnnjit__kernel_t k, again;
    TU_OK(engine->generate(g, &p, grp, knob, &k));
    TU_OK(engine->generate(g, &p, grp, knob, &again));
    assert_string_equal(k.source, again.source);
    assert_string_equal(k.entry, "dj_rows");
    assert_true(k.block[0] >= 128 && k.block[0] <= 1024 && k.block[1] == 1 && k.grid[1] == 1);
    assert_true(k.grid[0] >= 1);
    int memory = 0;
    for (int64_t i = 0; i < grp->input_count + grp->output_count; i++)
        memory += !dnnjit__tensor(g, dnnjit__group_tensor(grp, i))->is_pass_by_value;
    assert_int_equal(k.tensor_count, memory);
    assert_true(engine->cost(g, grp, knob) > 0);
    dnnjit__kernel_free(&again);
    dnnjit__partition_free(&p);
    return k;
}

static void launch_shape_and_source(void **state)
{
    (void)state;
    /* 77 rows, 4 per block of 128 threads. */
    dnnjit_graph_t g = op_graph(NULL, OP_SOFTMAX, DNNJIT_DATA_TYPE_HALF, 77, 1000, 2);
    dnnjit__kernel_t k = generate(g, knob_named("t32_r4_vec"));
    assert_int_equal(k.grid[0], 20);
    assert_int_equal(k.block[0], 128);
    assert_non_null(strstr(k.source, "constexpr int DJ_COLS = 1000;"));
    assert_non_null(strstr(k.source, "constexpr int DJ_VEC = 8;"));
    assert_non_null(strstr(k.source, "constexpr bool DJ_REGS = true;"));
    assert_non_null(strstr(k.source, "constexpr int DJ_STATS = 2;"));
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
    /* Layer norm backward writing DSCALE and DBIAS: 1000 / 32-column strips (64 bytes) =
     * 32 strips (rounded up), each in 2 segments (rows / 64, rounded up; 264 / 32 would
     * want 9) of 39 rows: 64 column blocks in front of 77 / 2 = 39 row blocks, and a
     * scratch of 64 counters and 32 strips x 2 segments x 2 sums x 32 floats. */
    g = op_graph(NULL, OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 77, 1000, 1);
    k = generate(g, knob_named("t64_r2_vec"));
    assert_int_equal(k.grid[0], 64 + 39);
    assert_non_null(strstr(k.source, "constexpr unsigned DJ_COL_BLOCKS = 64u;"));
    assert_non_null(strstr(k.source, "constexpr int DJ_STRIP = 32;"));
    assert_non_null(strstr(k.source, "constexpr int DJ_SEGMENTS = 2;"));
    assert_non_null(strstr(k.source, "constexpr dj_i64 DJ_SEG_ROWS = 39LL;"));
    assert_int_equal(k.scratch_slot, k.tensor_count);
    assert_int_equal(k.scratch_zero_bytes, 64 * 4);
    assert_int_equal(k.scratch_bytes, 64 * 4 + 32 * 2 * 2 * 32 * 4);
    dnnjit__kernel_free(&k);
    /* Fused at 64 threads and 4 rows a block: 132 x 1024 / 256 = 528 row blocks would run
     * at once, but 77 rows need only 20; then column blocks whose 8 warps each take a strip
     * of 32 columns (20 partial sums are too few to share out among warps): 1000 / 256,
     * rounded up; and a scratch of 64 counters and 20 x 2 x 1000 partial sums. */
    k = generate(g, knob_named("t64_r4_vec_fused"));
    assert_int_equal(k.grid[0], 20 + 4);
    assert_non_null(strstr(k.source, "constexpr int DJ_FUSED_STRIP_WARPS = 1;"));
    assert_int_equal(k.block[0], 256);
    assert_non_null(strstr(k.source, "constexpr unsigned DJ_COL_BLOCKS = 0u;"));
    assert_non_null(strstr(k.source, "constexpr unsigned DJ_FUSED_BLOCKS = 20u;"));
    assert_int_equal(k.scratch_zero_bytes, 64 * 4);
    assert_int_equal(k.scratch_bytes, 64 * 4 + 20 * 2 * 1000 * 4);
    assert_non_null(strstr(k.source, "#define DJ_LAUNCH_BOUNDS __launch_bounds__(DJ_BLOCK, 4)"));
    /* At 1024 threads an SM (64 registers a thread) the row stays packed, two bf16 values
     * to a register; its twin at 512 keeps floats (16 of each input and 32 column sums). */
    assert_non_null(strstr(k.source, "constexpr bool DJ_FLOAT_ROWS = false;"));
    /* Its row blocks prefetch the next rows of DY and X, tensors read as they are. */
    assert_non_null(strstr(k.source, "void dj_pf_DY(dj_i64 row, int col, const DjArgs &args)\n{\n    dj_pf_"));
    assert_non_null(strstr(k.source, "void dj_pf_X(dj_i64 row, int col, const DjArgs &args)\n{\n    dj_pf_"));
    assert_non_null(strstr(k.source, "prefetch.global.L2"));
    dnnjit__kernel_free(&k);
    k = generate(g, knob_named("t64_r4_vec_fused_half"));
    assert_non_null(strstr(k.source, "constexpr bool DJ_FLOAT_ROWS = true;"));
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
    /* A DY made by a prologue (dy * mask) has nothing of its own to prefetch. */
    g = fused_backward_graph();
    k = generate(g, knob_named("t64_r2_scalar"));
    assert_non_null(strstr(k.source, "void dj_pf_DY(dj_i64 row, int col, const DjArgs &args)\n{\n    (void)row;"));
    assert_non_null(strstr(k.source, "void dj_pf_X(dj_i64 row, int col, const DjArgs &args)\n{\n    dj_pf_"));
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
    /* With many rows, 132 x 512 / 512 = 132 row blocks at half the threads per SM, whose
     * partial sums 8 warps share out (about 16 each) per strip: 2 strips a column block. */
    g = op_graph(NULL, OP_RMSNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 10000, 4096, 0);
    k = generate(g, knob_named("t512_r1_vec_fused_half"));
    assert_int_equal(k.grid[0], 132 + 4096 / 64);
    assert_non_null(strstr(k.source, "constexpr int DJ_FUSED_STRIP_WARPS = 8;"));
    assert_non_null(strstr(k.source, "#define DJ_LAUNCH_BOUNDS __launch_bounds__(DJ_BLOCK, 1)"));
    /* 8 elements of each input and 16 column sums: floats. */
    assert_non_null(strstr(k.source, "constexpr bool DJ_FLOAT_ROWS = true;"));
    /* No DBIAS in this graph: the sums of dy are not kept. */
    assert_non_null(strstr(k.source, "constexpr bool DJ_DBIAS = false;"));
    assert_int_equal(k.scratch_bytes, 64 * 4 + 132 * 2 * 4096 * 4);
    assert_int_equal(k.resident_cluster, 0);
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
    /* Clusters of 8 share each 32768-wide row: 132 x 512 / 256 / 8 = 33 row clusters (264
     * blocks), a 4096-column slice per block, then column blocks of 4 strips (two warps
     * each share the 33 partial sums), 32768 / 128 of them; partial sums per cluster. */
    g = op_graph(NULL, OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 4096, 32768, 1);
    k = generate(g, knob_named("t256_r1_vec_fused_half_c8"));
    assert_int_equal(k.grid[0], 264 + 256);
    assert_non_null(strstr(k.source, "constexpr int DJ_FUSED_STRIP_WARPS = 2;"));
    assert_int_equal(k.block[0], 256);
    assert_non_null(strstr(k.source, "#define DJ_LAUNCH_BOUNDS __launch_bounds__(DJ_BLOCK, 2) __cluster_dims__(8, 1, 1)"));
    assert_non_null(strstr(k.source, "constexpr int DJ_CLUSTER = 8;"));
    assert_non_null(strstr(k.source, "constexpr bool DJ_DBIAS = true;"));
    /* A cluster holds two rows at once: packed. */
    assert_non_null(strstr(k.source, "constexpr bool DJ_FLOAT_ROWS = false;"));
    assert_non_null(strstr(k.source, "constexpr int DJ_SPLIT = 8;"));
    assert_non_null(strstr(k.source, "constexpr int DJ_SEG_COLS = 4096;"));
    assert_non_null(strstr(k.source, "constexpr unsigned DJ_FUSED_BLOCKS = 264u;"));
    assert_non_null(strstr(k.source, "constexpr unsigned DJ_FUSED_COL_BLOCKS = 256u;"));
    assert_int_equal(k.scratch_bytes, 64 * 4 + 33 * 2 * 32768 * 4);
    /* Loading keeps as many of the 33 clusters as the device holds at once, then the 256
     * column blocks. */
    assert_int_equal(k.resident_cluster, 8);
    assert_int_equal(k.resident_tail, 256);
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
    /* Three rows need three clusters; 8000 / 256 column blocks (a strip a warp) round up to
     * whole clusters. */
    g = op_graph(NULL, OP_LAYERNORM_BACKWARD, DNNJIT_DATA_TYPE_BFLOAT16, 3, 8000, 1);
    k = generate(g, knob_named("t256_r1_vec_fused_half_c4"));
    assert_int_equal(k.grid[0], 3 * 4 + 32);
    assert_non_null(strstr(k.source, "constexpr int DJ_SEG_COLS = 2048;"));
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
    /* A register plan with little to hold asks for 2048 threads an SM: 1000-wide fp16 layer
     * norm at 64 threads keeps 8 registers of the row and four tensor addresses (16 in
     * all); add + RMS norm has five tensors (18) and leaves ptxas its registers. */
    g = op_graph(NULL, OP_LAYERNORM, DNNJIT_DATA_TYPE_HALF, 32768, 1000, 0);
    k = generate(g, knob_named("t64_r2_vec"));
    assert_non_null(strstr(k.source, "#define DJ_LAUNCH_BOUNDS __launch_bounds__(DJ_BLOCK, 16)\n"));
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
    g = add_rmsnorm_sized(DNNJIT_DATA_TYPE_HALF, 32768, 1000);
    k = generate(g, knob_named("t64_r2_vec"));
    assert_non_null(strstr(k.source, "#define DJ_LAUNCH_BOUNDS __launch_bounds__(DJ_BLOCK)\n"));
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
    /* A stream plan keeps nothing in registers: 9001 floats are 36 per thread at 256. */
    g = op_graph(NULL, OP_RMSNORM, DNNJIT_DATA_TYPE_FLOAT, 3, 9001, 0);
    k = generate(g, knob_named("t256_r1_scalar_stream"));
    assert_int_equal(k.grid[0], 3);
    assert_non_null(strstr(k.source, "constexpr bool DJ_REGS = false;"));
    assert_non_null(strstr(k.source, "constexpr int DJ_VEC = 1;"));
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
}

/* Few long rows of a reduction split into segments: 3 rows of 300000 floats want 88
 * segments each to fill the GPU, but a segment keeps at least 4 chunks of 1024 x 4 per
 * thread: 300000 / 16384 = 18 segments, of 16667 columns rounded up to 20480, which makes
 * 15 segments and 45 blocks; mode A puts the split plan first. Many rows split nothing. */
static void split_rows(void **state)
{
    (void)state;
    dnnjit_graph_t g = op_graph(NULL, OP_REDUCTION, DNNJIT_DATA_TYPE_FLOAT, 3, 300000, DNNJIT_REDUCTION_NORM2);
    char name[64];
    first_knob(g, name, sizeof name);
    assert_string_equal(name, "t1024_r1_vec_split");
    dnnjit__kernel_t k = generate(g, knob_named(name));
    assert_int_equal(k.grid[0], 45);
    assert_non_null(strstr(k.source, "constexpr int DJ_SPLIT = 15;"));
    assert_non_null(strstr(k.source, "constexpr int DJ_SEG_COLS = 20480;"));
    assert_int_equal(k.scratch_slot, k.tensor_count);
    assert_int_equal(k.scratch_zero_bytes, 64 * 4);
    assert_int_equal(k.scratch_bytes, 64 * 4 + 3 * 15 * 4);
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);

    g = op_graph(NULL, OP_REDUCTION, DNNJIT_DATA_TYPE_FLOAT, 264, 300000, 0);
    dnnjit__partition_t p = tu_partition(g);
    char why[200] = "";
    assert_false(engine->supports(g, &p.groups[0], knob_named("t1024_r1_vec_split"), "sm_90a", why, sizeof why));
    assert_non_null(strstr(why, "264 rows keep the GPU busy"));
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
    g = op_graph(NULL, OP_SOFTMAX, DNNJIT_DATA_TYPE_FLOAT, 3, 300000, 0);
    p = tu_partition(g);
    assert_false(engine->supports(g, &p.groups[0], knob_named("t1024_r1_vec_split"), "sm_90a", why, sizeof why));
    assert_non_null(strstr(why, "only a one-pass op"));
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* The residual add's result is stored once, on the pass that reads x and r; the norm's
 * output and statistics are stored. */
static void prologue_stores_on_the_first_pass(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(64, 4096), NULL, 0);
    dnnjit_tensor_t r = tu_tensor(g, "r", 2, TU_DIMS(64, 4096), NULL, 0);
    dnnjit_tensor_t w = tu_tensor(g, "w", 2, TU_DIMS(1, 4096), NULL, 0);
    dnnjit_tensor_t h = tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, x, r)), y, inv;
    TU_OK(dnnjit_graph_rmsnorm(g, h, w, 0, &(dnnjit_norm_attr_t){.phase = DNNJIT_NORM_PHASE_TRAINING}, &y, &inv));
    tu_output(g, y);
    tu_output(g, inv);
    dnnjit__kernel_t k = generate(g, knob_named("t128_r1_vec"));
    char expect[128];
    snprintf(expect, sizeof expect, "    if (first)\n        dj_st_%u<V>(row, col, o%u, args);", h, h);
    assert_non_null(strstr(k.source, expect));
    snprintf(expect, sizeof expect, "dj_st_%u<V>(row, col, y, args);", y);
    assert_non_null(strstr(k.source, expect));
    snprintf(expect, sizeof expect, "dj_str_%u(row, value, args);", inv);
    assert_non_null(strstr(k.source, expect));
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
}

/* ---- NVRTC --------------------------------------------------------------------------- */

typedef struct compile_job {
    char label[96];
    char *source;
    const char *arch;
    bool ok;
    char error[DNNJIT__MSG_LEN];
} compile_job_t;

typedef struct job_list {
    compile_job_t *jobs;
    int count, cap;
    int next; /* the next job a worker takes */
    pthread_mutex_t lock;
} job_list_t;

/* Queues g's row group with `knob` for sm_80 (unless the knob needs sm_90, as clusters do)
 * and sm_90a; destroys g. */
static void add_jobs(job_list_t *list, dnnjit_graph_t g, int knob, const char *label)
{
    dnnjit__kernel_t k = generate(g, knob);
    char name[64];
    engine->knob_name(knob, name, sizeof name);
    dnnjit__partition_t p = tu_partition(g);
    bool sm80 = engine->supports(g, &p.groups[0], knob, "sm_80", NULL, 0);
    dnnjit__partition_free(&p);
    for (int a = !sm80; a < 2; a++) {
        if (list->count == list->cap) {
            list->cap = list->cap ? 2 * list->cap : 64;
            list->jobs = realloc(list->jobs, sizeof *list->jobs * (size_t)list->cap);
            assert_non_null(list->jobs);
        }
        compile_job_t *j = &list->jobs[list->count++];
        *j = (compile_job_t){.arch = a ? "sm_90a" : "sm_80"};
        snprintf(j->label, sizeof j->label, "%s, %s", label, name);
        j->source = strdup(k.source);
        assert_non_null(j->source);
    }
    dnnjit__kernel_free(&k);
    dnnjit_graph_destroy(g);
}

static void *compile_worker(void *arg)
{
    job_list_t *list = arg;
    for (;;) {
        pthread_mutex_lock(&list->lock);
        int i = list->next++;
        pthread_mutex_unlock(&list->lock);
        if (i >= list->count)
            return NULL;
        compile_job_t *j = &list->jobs[i];
        void *cubin = NULL;
        size_t size = 0;
        j->ok = dnnjit__nvrtc_compile(j->source, "dj_rows", j->arch, NULL, &cubin, &size) == DNNJIT_STATUS_SUCCESS &&
                size > 0;
        if (!j->ok)
            snprintf(j->error, sizeof j->error, "%s", dnnjit_last_error());
        free(cubin);
    }
}

/* Compiles every queued job on as many threads as there are processors (NVRTC compiles
 * programs independently), then reports every failure. */
static void run_jobs(job_list_t *list)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cpus < 1 ? 1 : cpus > 16 ? 16 : (int)cpus;
    pthread_t tid[16];
    pthread_mutex_init(&list->lock, NULL);
    for (int t = 0; t < threads; t++)
        assert_int_equal(pthread_create(&tid[t], NULL, compile_worker, list), 0);
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&list->lock);
    int failed = 0;
    for (int i = 0; i < list->count; i++) {
        if (!list->jobs[i].ok && failed++ < 3)
            print_error("%s for %s: %s\n", list->jobs[i].label, list->jobs[i].arch, list->jobs[i].error);
        free(list->jobs[i].source);
    }
    printf("compiled %d kernels, %d failed\n", list->count, failed);
    free(list->jobs);
    assert_int_equal(failed, 0);
}

static const char *const op_names[OP_CASE_COUNT] = {"reduction", "softmax", "softmax backward", "layernorm",
                                                    "rmsnorm", "layernorm backward", "rmsnorm backward",
                                                    "column reduction"};

/* Every op in every io type with mode A's plan and variant; every op with a part-warp, a
 * block-wide and a stream plan; every knob at least once. */
static void every_template_knob_and_type_compiles(void **state)
{
    (void)state;
    job_list_t list = {0};
    char label[96];
    bool knob_done[64] = {false};
    for (int op = 0; op < OP_CASE_COUNT; op++)
        for (int t = 0; t < IO_TYPE_COUNT; t++) {
            dnnjit_graph_t g = op_graph(NULL, op, io_types[t], 33, 1000, op + t);
            char name[64];
            first_knob(g, name, sizeof name);
            int knob = knob_named(name);
            knob_done[knob] = true;
            snprintf(label, sizeof label, "%s %s", op_names[op], dnnjit_data_type_name(io_types[t]));
            add_jobs(&list, g, knob, label);
        }
    static const struct {
        const char *knob;
        int64_t cols;
    } shapes[] = {{"t8_r16_vec", 256}, {"t512_r1_scalar", 8192}, {"t1024_r1_vec_stream", 131072}};
    for (int op = 0; op < OP_CASE_COUNT; op++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            /* Backward ops keep two inputs, so their register rows are half as long; a
             * reduction reads its row once, so its long rows take a register plan. */
            bool backward = op == OP_SOFTMAX_BACKWARD || op == OP_LAYERNORM_BACKWARD || op == OP_RMSNORM_BACKWARD;
            if (op == OP_COLUMN_REDUCTION)
                continue; /* column plans only; the loop over knobs below takes them */
            const char *knob = op == OP_REDUCTION && s == 2 ? "t1024_r1_vec" : shapes[s].knob;
            int64_t cols = op == OP_REDUCTION && s == 2 ? 32768 : backward && s < 2 ? shapes[s].cols / 2 : shapes[s].cols;
            dnnjit_graph_t g = op_graph(NULL, op, io_types[(op + s) % IO_TYPE_COUNT], 5, cols, op);
            knob_done[knob_named(knob)] = true;
            snprintf(label, sizeof label, "%s %lld", op_names[op], (long long)cols);
            add_jobs(&list, g, knob_named(knob), label);
        }
    for (int mode = 0; mode < DNNJIT_REDUCTION_MODE_COUNT_; mode++)
        for (int column = 0; column < 2; column++) {
            dnnjit_graph_t g =
                op_graph(NULL, column ? OP_COLUMN_REDUCTION : OP_REDUCTION, io_types[mode % IO_TYPE_COUNT], 9, 77, mode);
            char name[64];
            first_knob(g, name, sizeof name);
            snprintf(label, sizeof label, "%s %s", column ? "column reduction" : "reduction",
                     dnnjit_reduction_mode_name(mode));
            add_jobs(&list, g, knob_named(name), label);
        }
    /* The other knobs: the first row length (from short to long) that each supports. */
    static const int64_t lengths[] = {1, 7, 8, 16, 32, 64, 256, 1000, 2048, 4096, 8192, 16384, 32768, 65536, 262144};
    for (int knob = 0; knob < engine->knob_count; knob++) {
        for (int o = 0; o < OP_CASE_COUNT && !knob_done[knob]; o++)
            for (size_t l = 0; l < sizeof lengths / sizeof lengths[0] && !knob_done[knob]; l++) {
                op_case_t op = (op_case_t)((knob + o) % OP_CASE_COUNT);
                dnnjit_graph_t g = op_graph(NULL, op, io_types[knob % IO_TYPE_COUNT], 3, lengths[l], knob);
                dnnjit__partition_t p = tu_partition(g);
                bool ok = engine->supports(g, &p.groups[0], knob, "sm_90a", NULL, 0);
                dnnjit__partition_free(&p);
                if (!ok) {
                    dnnjit_graph_destroy(g);
                    continue;
                }
                knob_done[knob] = true;
                snprintf(label, sizeof label, "%s %lld", op_names[op], (long long)lengths[l]);
                add_jobs(&list, g, knob, label);
            }
        char name[64];
        engine->knob_name(knob, name, sizeof name);
        if (!knob_done[knob])
            fail_msg("no test shape supports knob %s", name);
    }
    run_jobs(&list);
}

/* ---- fused groups and unusual layouts ---------------------------------------------------- */

/* h = x + r and rmsnorm(h), both written. */
static dnnjit_graph_t add_rmsnorm_sized(dnnjit_data_type_t io, int64_t rows, int64_t cols)
{
    dnnjit_graph_t g = tu_graph(io);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(rows, cols), NULL, 0);
    dnnjit_tensor_t r = tu_tensor(g, "r", 2, TU_DIMS(rows, cols), NULL, 0);
    dnnjit_tensor_t w = tu_tensor(g, "w", 2, TU_DIMS(1, cols), NULL, 0), y;
    TU_OK(dnnjit_graph_rmsnorm(g, tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, x, r)), w, 0, NULL, &y, NULL));
    tu_output(g, y);
    return g;
}

static dnnjit_graph_t add_rmsnorm_graph(void)
{
    return add_rmsnorm_sized(DNNJIT_DATA_TYPE_BFLOAT16, 64, 4096);
}

/* softmax(x * 0.5 + bias[col] - m[row]) * x * s with a runtime scalar s, MAX_SUM_EXP. */
static dnnjit_graph_t fused_softmax_graph(void)
{
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(2, 7, 1000), NULL, 0);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 1, TU_DIMS(1000), NULL, 0);
    dnnjit_tensor_t m = tu_tensor(g, "m", 3, TU_DIMS(2, 7, 1), NULL, DNNJIT_DATA_TYPE_FLOAT), s, s0, s1;
    dnnjit_tensor_t t = tu_pointwise(g, DNNJIT_POINTWISE_MUL, x, scalar(g, "half", true, 0.5));
    t = tu_pointwise(g, DNNJIT_POINTWISE_SUB, tu_pointwise(g, DNNJIT_POINTWISE_ADD, t, bias), m);
    TU_OK(dnnjit_graph_softmax(g, t, &(dnnjit_softmax_attr_t){.stats = DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP}, &s, &s0,
                               &s1));
    tu_output(g, s0);
    tu_output(g, s1);
    tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_MUL, tu_pointwise(g, DNNJIT_POINTWISE_MUL, s, x), scalar(g, "s", false, 0)));
    return g;
}

/* log(sum(exp(x))) + c over the innermost axis of [3, 5, 77]. */
static dnnjit_graph_t logsumexp_graph(void)
{
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(3, 5, 77), NULL, 0);
    dnnjit_tensor_t c = tu_tensor(g, "c", 3, TU_DIMS(3, 5, 1), NULL, 0), y;
    TU_OK(dnnjit_graph_reduction(g, tu_pointwise(g, DNNJIT_POINTWISE_EXP, x, 0),
                                 &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_ADD, .axes = 4}, &y));
    tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, tu_pointwise(g, DNNJIT_POINTWISE_LOG, y, 0), c));
    return g;
}

/* Layer norm over the last two axes of [4, 6, 10, 12] stored with those two axes swapped
 * (column offsets split into both axes), epsilon from a buffer, FP8 scale. */
static dnnjit_graph_t strided_layernorm_graph(void)
{
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "x", 4, TU_DIMS(4, 6, 10, 12), TU_DIMS(720, 120, 1, 10), 0);
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 4, TU_DIMS(1, 1, 10, 12), NULL, DNNJIT_DATA_TYPE_FP8_E4M3);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 4, TU_DIMS(1, 1, 10, 12), NULL, 0);
    dnnjit_tensor_t eps = tu_tensor(g, "eps", 1, TU_DIMS(1), NULL, 0), y, mean, inv;
    TU_OK(dnnjit_graph_layernorm(g, x, scale, bias,
                                 &(dnnjit_norm_attr_t){.phase = DNNJIT_NORM_PHASE_TRAINING, .norm_axes = 2,
                                                       .epsilon = eps},
                                 &y, &mean, &inv));
    tu_output(g, y);
    tu_output(g, mean);
    tu_output(g, inv);
    return g;
}

/* RMS norm backward of (dy * mask) with an epilogue dx + x, DOUBLE buffers computed in
 * float, epsilon unused: DSCALE and DBIAS summed by column blocks through the prologue. */
static dnnjit_graph_t fused_backward_graph(void)
{
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(33, 640), NULL, 0);
    dnnjit_tensor_t mask = tu_tensor(g, "mask", 2, TU_DIMS(33, 640), NULL, DNNJIT_DATA_TYPE_BOOLEAN);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(33, 640), NULL, 0);
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, 640), NULL, 0);
    dnnjit_tensor_t inv = tu_tensor(g, "inv", 2, TU_DIMS(33, 1), NULL, DNNJIT_DATA_TYPE_FLOAT), dx, ds, db;
    TU_OK(dnnjit_graph_rmsnorm_backward(g, tu_pointwise(g, DNNJIT_POINTWISE_MUL, dy, mask), x, scale, inv, NULL, &dx, &ds, &db));
    tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, dx, x));
    tu_output(g, ds);
    tu_output(g, db);
    return g;
}

/* Each fused or unusual group with mode A's plan and with the last plan it supports (a
 * scalar or stream one). */
static void fused_and_strided_groups_compile(void **state)
{
    (void)state;
    static const struct {
        const char *label;
        dnnjit_graph_t (*make)(void);
        int64_t nodes; /* in the row group */
    } cases[] = {
        {"add + rmsnorm", add_rmsnorm_graph, 2},           {"fused softmax", fused_softmax_graph, 6},
        {"logsumexp", logsumexp_graph, 4},                 {"strided layernorm", strided_layernorm_graph, 1},
        {"fused rmsnorm backward", fused_backward_graph, 3},
    };
    job_list_t list = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int last = 0; last < 2; last++) {
            dnnjit_graph_t g = cases[i].make();
            dnnjit__partition_t p = tu_partition(g);
            assert_int_equal(p.group_count, 1);
            assert_int_equal(p.groups[0].node_count, cases[i].nodes);
            int knob = -1;
            for (int k = 0; k < engine->knob_count; k++)
                if (engine->supports(g, &p.groups[0], k, "sm_90a", NULL, 0) && (knob < 0 || last))
                    knob = k;
            dnnjit__partition_free(&p);
            assert_true(knob >= 0);
            add_jobs(&list, g, knob, cases[i].label);
        }
    run_jobs(&list);
}

static int need_nvrtc(void **state)
{
    (void)state;
    if (dnnjit__nvrtc_load() != DNNJIT_STATUS_SUCCESS) {
        printf("skipped: NVRTC cannot be loaded: %s\n", dnnjit_last_error());
        skip();
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(residual_add_rmsnorm_is_one_group),
        cmocka_unit_test(prologue_and_epilogue_join_the_row_op),
        cmocka_unit_test(prologue_needs_every_reader_after_the_row_op),
        cmocka_unit_test(statistics_do_not_feed_an_epilogue),
        cmocka_unit_test(reductions),
        cmocka_unit_test(row_geometry),
        cmocka_unit_test(gemm_epilogue_stays_with_the_matmul),
        cmocka_unit_test(backward_and_double),
        cmocka_unit_test(mode_a_picks_by_row_length),
        cmocka_unit_test(mode_a_picks_column_plans),
        cmocka_unit_test(modes_pick_measured_best),
        cmocka_unit_test(knob_refusals),
        cmocka_unit_test(knob_names_are_distinct),
        cmocka_unit_test(only_ticket_plans_are_nondeterministic),
        cmocka_unit_test(deselecting_nondeterministic_plans),
        cmocka_unit_test(cost_ranks_sensibly),
        cmocka_unit_test(plan_lists),
        cmocka_unit_test(fallback_runs_fused_row_groups),
        cmocka_unit_test(launch_shape_and_source),
        cmocka_unit_test(prologue_stores_on_the_first_pass),
        cmocka_unit_test(split_rows),
        cmocka_unit_test_setup(every_template_knob_and_type_compiles, need_nvrtc),
        cmocka_unit_test_setup(fused_and_strided_groups_compile, need_nvrtc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
