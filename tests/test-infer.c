/* Shape, stride and data-type inference of every op, uid assignment, the tensor setters, and
 * the graphs of seeds 000 and 004 built exactly as the seeds build them. Every expected dim
 * and stride below is worked out by hand from the op's definition in dnnjit.h. */
#include "util.h"

#include "graph/graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers ---------------------------------------------------------------------- */

static dnnjit_tensor_info_t info_of(dnnjit_graph_t g, dnnjit_tensor_t t)
{
    dnnjit_tensor_info_t info;
    TU_OK(dnnjit_tensor_get_info(g, t, &info));
    return info;
}

static void format_array(char *buf, size_t size, int n, const int64_t *v)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "", (long long)v[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* Asserts a tensor's rank, dims and (when `stride` is non-NULL) strides. */
static void check_shape(dnnjit_graph_t g, dnnjit_tensor_t t, int ndim, const int64_t *dim, const int64_t *stride,
                        int line)
{
    dnnjit_tensor_info_t info = info_of(g, t);
    bool ok = info.ndim == ndim && memcmp(info.dim, dim, sizeof(int64_t) * (size_t)ndim) == 0 &&
              (!stride || memcmp(info.stride, stride, sizeof(int64_t) * (size_t)ndim) == 0);
    if (!ok) {
        char gd[200], gs[200], wd[200], ws[200] = "(any)";
        format_array(gd, sizeof gd, info.ndim, info.dim);
        format_array(gs, sizeof gs, info.ndim, info.stride);
        format_array(wd, sizeof wd, ndim, dim);
        if (stride)
            format_array(ws, sizeof ws, ndim, stride);
        fail_msg("line %d: tensor \"%s\" has dims %s strides %s, expected dims %s strides %s", line, info.name, gd, gs,
                 wd, ws);
    }
}
#define SHAPE(g, t, ndim, dim, stride) check_shape((g), (t), (ndim), (dim), (stride), __LINE__)

static void check_type(dnnjit_graph_t g, dnnjit_tensor_t t, dnnjit_data_type_t want, int line)
{
    dnnjit_tensor_info_t info = info_of(g, t);
    if (info.data_type != want)
        fail_msg("line %d: tensor \"%s\" is %s, expected %s", line, info.name, dnnjit_data_type_name(info.data_type),
                 dnnjit_data_type_name(want));
}
#define TYPE(g, t, want) check_type((g), (t), (want), __LINE__)

static int64_t tensor_count(dnnjit_graph_t g)
{
    int64_t n;
    TU_OK(dnnjit_graph_get_tensor_count(g, &n));
    return n;
}

static dnnjit_tensor_t pointwise(dnnjit_graph_t g, dnnjit_pointwise_mode_t mode, dnnjit_tensor_t a, dnnjit_tensor_t b,
                                 dnnjit_tensor_t c)
{
    dnnjit_tensor_t out = 0;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = mode}, a, b, c, &out));
    return out;
}

static dnnjit_tensor_t matmul(dnnjit_graph_t g, dnnjit_tensor_t a, dnnjit_tensor_t b)
{
    dnnjit_tensor_t c = 0;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    return c;
}

static dnnjit_tensor_t input(dnnjit_graph_t g, const char *name, int ndim, const int64_t *dim, const int64_t *stride)
{
    return tu_tensor(g, name, ndim, dim, stride, DNNJIT_DATA_TYPE_NOT_SET);
}

/* Marks outputs and validates. */
static void finish(dnnjit_graph_t g, const dnnjit_tensor_t *outs, int n)
{
    for (int i = 0; i < n; i++)
        TU_OK(dnnjit_tensor_set_output(g, outs[i], true));
    TU_OK(dnnjit_graph_validate(g));
}
#define FINISH(g, ...) finish((g), (dnnjit_tensor_t[]){__VA_ARGS__}, sizeof((dnnjit_tensor_t[]){__VA_ARGS__}) / \
                                                                        sizeof(dnnjit_tensor_t))

/* ---- matmul ----------------------------------------------------------------------- */

static void matmul_rank2(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t c = matmul(g, input(g, "A", 2, TU_DIMS(3, 5), NULL), input(g, "B", 2, TU_DIMS(5, 7), NULL));
    SHAPE(g, c, 2, TU_DIMS(3, 7), TU_DIMS(7, 1));
    FINISH(g, c);
    SHAPE(g, c, 2, TU_DIMS(3, 7), TU_DIMS(7, 1));
    dnnjit_graph_destroy(g);
}

static void matmul_batched(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t c =
        matmul(g, input(g, "A", 3, TU_DIMS(4, 6, 9), NULL), input(g, "B", 3, TU_DIMS(4, 9, 5), NULL));
    SHAPE(g, c, 3, TU_DIMS(4, 6, 5), TU_DIMS(30, 5, 1));
    dnnjit_graph_destroy(g);
}

/* [2,1,3,4] @ [5,4,6]: B gains a leading 1, the 1s stretch: C [2,5,3,6]. */
static void matmul_batch_broadcast_differing_ranks(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t c =
        matmul(g, input(g, "A", 4, TU_DIMS(2, 1, 3, 4), NULL), input(g, "B", 3, TU_DIMS(5, 4, 6), NULL));
    SHAPE(g, c, 4, TU_DIMS(2, 5, 3, 6), TU_DIMS(90, 18, 6, 1));
    FINISH(g, c);
    SHAPE(g, c, 4, TU_DIMS(2, 5, 3, 6), TU_DIMS(90, 18, 6, 1));
    dnnjit_graph_destroy(g);
}

static void matmul_rank2_against_batched(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t c1 =
        matmul(g, input(g, "A", 2, TU_DIMS(3, 4), NULL), input(g, "B", 3, TU_DIMS(2, 4, 5), NULL));
    SHAPE(g, c1, 3, TU_DIMS(2, 3, 5), TU_DIMS(15, 5, 1));
    dnnjit_tensor_t c2 =
        matmul(g, input(g, "A2", 3, TU_DIMS(2, 3, 4), NULL), input(g, "B2", 2, TU_DIMS(4, 5), NULL));
    SHAPE(g, c2, 3, TU_DIMS(2, 3, 5), TU_DIMS(15, 5, 1));
    FINISH(g, c1, c2);
    dnnjit_graph_destroy(g);
}

static void matmul_batch_of_one_stretches(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t c1 =
        matmul(g, input(g, "A", 3, TU_DIMS(1, 3, 4), NULL), input(g, "B", 3, TU_DIMS(6, 4, 5), NULL));
    SHAPE(g, c1, 3, TU_DIMS(6, 3, 5), TU_DIMS(15, 5, 1));
    dnnjit_tensor_t c2 =
        matmul(g, input(g, "A2", 3, TU_DIMS(6, 3, 4), NULL), input(g, "B2", 3, TU_DIMS(1, 4, 5), NULL));
    SHAPE(g, c2, 3, TU_DIMS(6, 3, 5), TU_DIMS(15, 5, 1));
    dnnjit_graph_destroy(g);
}

/* C is packed row-major whatever the layout of A and B. */
static void matmul_output_is_row_major(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 3, TU_DIMS(2, 3, 4), TU_DIMS(12, 1, 3));
    dnnjit_tensor_t b = input(g, "B", 3, TU_DIMS(2, 4, 5), TU_DIMS(1, 2, 8));
    dnnjit_tensor_t c = matmul(g, a, b);
    SHAPE(g, c, 3, TU_DIMS(2, 3, 5), TU_DIMS(15, 5, 1));
    dnnjit_graph_destroy(g);
}

static void matmul_rank8(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 8, TU_DIMS(2, 1, 1, 1, 1, 1, 3, 4), NULL);
    dnnjit_tensor_t b = input(g, "B", 3, TU_DIMS(2, 4, 5), NULL);
    dnnjit_tensor_t c = matmul(g, a, b);
    SHAPE(g, c, 8, TU_DIMS(2, 1, 1, 1, 1, 2, 3, 5), TU_DIMS(30, 30, 30, 30, 30, 15, 5, 1));
    dnnjit_graph_destroy(g);
}

/* ---- pointwise ---------------------------------------------------------------------- */

/* dims [2,3,4] laid out with axis 0 innermost, then axis 2, then axis 1. */
#define PERMUTED_STRIDES TU_DIMS(1, 8, 2)

static void pointwise_unary_keeps_layout(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_RELU_FWD, input(g, "X", 3, TU_DIMS(2, 3, 4), NULL), 0, 0);
    SHAPE(g, y, 3, TU_DIMS(2, 3, 4), TU_DIMS(12, 4, 1));
    dnnjit_tensor_t z =
        pointwise(g, DNNJIT_POINTWISE_EXP, input(g, "P", 3, TU_DIMS(2, 3, 4), PERMUTED_STRIDES), 0, 0);
    SHAPE(g, z, 3, TU_DIMS(2, 3, 4), PERMUTED_STRIDES);
    FINISH(g, y, z);
    SHAPE(g, z, 3, TU_DIMS(2, 3, 4), PERMUTED_STRIDES);
    dnnjit_graph_destroy(g);
}

static void pointwise_binary_same_shape(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 2, TU_DIMS(5, 6), NULL), b = input(g, "B", 2, TU_DIMS(5, 6), NULL);
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_MUL, a, b, 0);
    SHAPE(g, y, 2, TU_DIMS(5, 6), TU_DIMS(6, 1));
    dnnjit_graph_destroy(g);
}

static void pointwise_binary_broadcast(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    /* Outer product by broadcasting: [4,1] + [1,5] = [4,5]. */
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_ADD, input(g, "col", 2, TU_DIMS(4, 1), NULL),
                                  input(g, "row", 2, TU_DIMS(1, 5), NULL), 0);
    SHAPE(g, y, 2, TU_DIMS(4, 5), TU_DIMS(5, 1));
    /* A missing leading dim stretches: [3] - [2,3] = [2,3]. */
    dnnjit_tensor_t z = pointwise(g, DNNJIT_POINTWISE_SUB, input(g, "v", 1, TU_DIMS(3), NULL),
                                  input(g, "m", 2, TU_DIMS(2, 3), NULL), 0);
    SHAPE(g, z, 2, TU_DIMS(2, 3), TU_DIMS(3, 1));
    /* IN_1 of higher rank than IN_0, stretching IN_0's 1s too. */
    dnnjit_tensor_t w = pointwise(g, DNNJIT_POINTWISE_MAX, input(g, "s", 2, TU_DIMS(1, 4), NULL),
                                  input(g, "t", 3, TU_DIMS(2, 3, 1), NULL), 0);
    SHAPE(g, w, 3, TU_DIMS(2, 3, 4), TU_DIMS(12, 4, 1));
    FINISH(g, y, z, w);
    dnnjit_graph_destroy(g);
}

static void pointwise_ternary_broadcast(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_BINARY_SELECT, input(g, "a", 3, TU_DIMS(2, 1, 4), NULL),
                                  input(g, "b", 2, TU_DIMS(3, 1), NULL), input(g, "cond", 1, TU_DIMS(1), NULL));
    SHAPE(g, y, 3, TU_DIMS(2, 3, 4), TU_DIMS(12, 4, 1));
    FINISH(g, y);
    SHAPE(g, y, 3, TU_DIMS(2, 3, 4), TU_DIMS(12, 4, 1));
    dnnjit_graph_destroy(g);
}

/* cuDNN's rule: the output is packed in IN_0's stride order. */
static void pointwise_column_major_in0_gives_column_major_out(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 2, TU_DIMS(3, 4), TU_DIMS(1, 3));
    dnnjit_tensor_t b = input(g, "B", 2, TU_DIMS(3, 4), NULL);
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_ADD, a, b, 0);
    SHAPE(g, y, 2, TU_DIMS(3, 4), TU_DIMS(1, 3));
    /* The other way round: IN_0 row-major wins over a column-major IN_1. */
    dnnjit_tensor_t z = pointwise(g, DNNJIT_POINTWISE_ADD, b, a, 0);
    SHAPE(g, z, 2, TU_DIMS(3, 4), TU_DIMS(4, 1));
    FINISH(g, y, z);
    SHAPE(g, y, 2, TU_DIMS(3, 4), TU_DIMS(1, 3));
    dnnjit_graph_destroy(g);
}

static void pointwise_in0_order_survives_broadcast(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_MUL, input(g, "A", 3, TU_DIMS(2, 3, 4), PERMUTED_STRIDES),
                                  input(g, "B", 1, TU_DIMS(4), NULL), 0);
    SHAPE(g, y, 3, TU_DIMS(2, 3, 4), PERMUTED_STRIDES);
    /* Channels-last NCHW [2,3,4,5]: C innermost (stride 1), then W (3), H (15), N (60). */
    dnnjit_tensor_t x = input(g, "X", 4, TU_DIMS(2, 3, 4, 5), TU_DIMS(60, 1, 15, 3));
    dnnjit_tensor_t z = pointwise(g, DNNJIT_POINTWISE_ADD, x, input(g, "bias", 4, TU_DIMS(1, 3, 1, 1), NULL), 0);
    SHAPE(g, z, 4, TU_DIMS(2, 3, 4, 5), TU_DIMS(60, 1, 15, 3));
    FINISH(g, y, z);
    SHAPE(g, z, 4, TU_DIMS(2, 3, 4, 5), TU_DIMS(60, 1, 15, 3));
    dnnjit_graph_destroy(g);
}

static void bias_is_a_pointwise_add(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t c =
        matmul(g, input(g, "A", 3, TU_DIMS(2, 3, 4), NULL), input(g, "B", 3, TU_DIMS(2, 4, 5), NULL));
    dnnjit_tensor_t y = 0, z = 0;
    TU_OK(dnnjit_graph_bias(g, "bias", c, input(g, "D", 3, TU_DIMS(1, 3, 5), NULL), &y));
    SHAPE(g, y, 3, TU_DIMS(2, 3, 5), TU_DIMS(15, 5, 1));
    assert_string_equal(info_of(g, y).name, "bias::OUT_0");
    /* An unnamed bias node takes its index as its name. */
    TU_OK(dnnjit_graph_bias(g, NULL, y, input(g, "E", 1, TU_DIMS(5), NULL), &z));
    assert_string_equal(info_of(g, z).name, "2::OUT_0");
    assert_int_equal(g->node_count, 3);
    for (int i = 1; i < 3; i++) {
        assert_int_equal(g->nodes[i].op, DNNJIT_OP_POINTWISE);
        assert_int_equal(g->nodes[i].attr.pointwise.mode, DNNJIT_POINTWISE_ADD);
    }
    assert_string_equal(g->nodes[1].name, "bias");
    assert_int_equal(g->nodes[1].in[0], c);
    FINISH(g, z);
    dnnjit_graph_destroy(g);
}

/* ---- reduction ---------------------------------------------------------------------- */

static dnnjit_tensor_t reduce(dnnjit_graph_t g, dnnjit_tensor_t x, uint32_t axes)
{
    dnnjit_tensor_t y = 0;
    TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_ADD, .axes = axes}, &y));
    return y;
}

static void reduction_axes_mask(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = input(g, "X", 3, TU_DIMS(2, 3, 4), NULL);
    dnnjit_tensor_t y = reduce(g, x, 0x2);
    SHAPE(g, y, 3, TU_DIMS(2, 1, 4), TU_DIMS(4, 4, 1));
    dnnjit_tensor_t z = reduce(g, x, 0x5);
    SHAPE(g, z, 3, TU_DIMS(1, 3, 1), TU_DIMS(3, 1, 1));
    FINISH(g, y, z);
    SHAPE(g, z, 3, TU_DIMS(1, 3, 1), TU_DIMS(3, 1, 1));
    dnnjit_graph_destroy(g);
}

static void reduction_defaults_to_all_axes(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t y = reduce(g, input(g, "X", 3, TU_DIMS(2, 3, 4), NULL), 0);
    SHAPE(g, y, 3, TU_DIMS(1, 1, 1), TU_DIMS(1, 1, 1));
    FINISH(g, y);
    assert_int_equal(g->nodes[0].attr.reduction.resolved_axes, 0x7);
    dnnjit_graph_destroy(g);
}

/* With axes 0 and Y's dims fixed by set_dim, the reduced axes are where Y has 1. */
static void reduction_axes_from_output_dims(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = input(g, "X", 3, TU_DIMS(2, 3, 4), NULL);
    dnnjit_tensor_t y = reduce(g, x, 0), z = reduce(g, x, 0);
    TU_OK(dnnjit_tensor_set_dim(g, y, 3, TU_DIMS(2, 1, 1)));
    TU_OK(dnnjit_tensor_set_dim(g, z, 3, TU_DIMS(1, 3, 1)));
    FINISH(g, y, z);
    SHAPE(g, y, 3, TU_DIMS(2, 1, 1), TU_DIMS(1, 1, 1));
    SHAPE(g, z, 3, TU_DIMS(1, 3, 1), TU_DIMS(3, 1, 1));
    assert_int_equal(g->nodes[0].attr.reduction.resolved_axes, 0x6);
    assert_int_equal(g->nodes[1].attr.reduction.resolved_axes, 0x5);
    dnnjit_graph_destroy(g);
}

/* ---- softmax -------------------------------------------------------------------------- */

static void softmax_without_stats(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t s = 0, st0 = 99, st1 = 99;
    TU_OK(dnnjit_graph_softmax(g, input(g, "P", 3, TU_DIMS(2, 3, 8), NULL), NULL, &s, &st0, &st1));
    SHAPE(g, s, 3, TU_DIMS(2, 3, 8), TU_DIMS(24, 8, 1));
    assert_int_equal(tensor_count(g), 2);
    /* Pointers for stats that were not asked for are left alone. */
    assert_int_equal(st0, 99);
    assert_int_equal(st1, 99);
    FINISH(g, s);
    TYPE(g, s, DNNJIT_DATA_TYPE_HALF);
    dnnjit_graph_destroy(g);
}

static void softmax_log_sum_exp_stats(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t s, lse;
    TU_OK(dnnjit_graph_softmax(g, input(g, "P", 3, TU_DIMS(2, 3, 8), NULL),
                               &(dnnjit_softmax_attr_t){.name = "sm", .stats = DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP}, &s,
                               &lse, NULL));
    SHAPE(g, lse, 3, TU_DIMS(2, 3, 1), TU_DIMS(3, 1, 1));
    assert_string_equal(info_of(g, lse).name, "sm::STATS_0");
    assert_int_equal(tensor_count(g), 3);
    FINISH(g, s, lse);
    TYPE(g, s, DNNJIT_DATA_TYPE_HALF);
    TYPE(g, lse, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_graph_destroy(g);
}

static void softmax_max_and_sum_exp_stats(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t s, mx, se;
    TU_OK(dnnjit_graph_softmax(g, input(g, "P", 2, TU_DIMS(5, 7), NULL),
                               &(dnnjit_softmax_attr_t){.name = "sm", .stats = DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP}, &s,
                               &mx, &se));
    SHAPE(g, mx, 2, TU_DIMS(5, 1), TU_DIMS(1, 1));
    SHAPE(g, se, 2, TU_DIMS(5, 1), TU_DIMS(1, 1));
    assert_string_equal(info_of(g, se).name, "sm::STATS_1");
    FINISH(g, s, mx, se);
    TYPE(g, mx, DNNJIT_DATA_TYPE_FLOAT);
    TYPE(g, se, DNNJIT_DATA_TYPE_FLOAT);
    TYPE(g, s, DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_graph_destroy(g);
}

static void softmax_follows_input_layout(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t s;
    TU_OK(dnnjit_graph_softmax(g, input(g, "P", 3, TU_DIMS(2, 3, 4), PERMUTED_STRIDES), NULL, &s, NULL, NULL));
    SHAPE(g, s, 3, TU_DIMS(2, 3, 4), PERMUTED_STRIDES);
    dnnjit_graph_destroy(g);
}

static void softmax_backward_shape(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t y = input(g, "Y", 3, TU_DIMS(2, 3, 4), PERMUTED_STRIDES);
    dnnjit_tensor_t dy = input(g, "DY", 3, TU_DIMS(2, 3, 4), NULL);
    dnnjit_tensor_t dx;
    TU_OK(dnnjit_graph_softmax_backward(g, y, dy, &(dnnjit_softmax_attr_t){.name = "smb"}, &dx));
    SHAPE(g, dx, 3, TU_DIMS(2, 3, 4), PERMUTED_STRIDES);
    assert_string_equal(info_of(g, dx).name, "smb::DX");
    FINISH(g, dx);
    dnnjit_graph_destroy(g);
}

/* ---- layer norm and RMS norm -------------------------------------------------------- */

typedef struct norm_inputs {
    dnnjit_tensor_t x, scale, bias;
} norm_inputs_t;

/* X [4,6,8] with SCALE and BIAS shaped for the last `k` axes. */
static norm_inputs_t norm_inputs(dnnjit_graph_t g, int k, const int64_t *xstride)
{
    static const int64_t xd[3] = {4, 6, 8};
    int64_t pd[3];
    for (int i = 0; i < 3; i++)
        pd[i] = i >= 3 - k ? xd[i] : 1;
    return (norm_inputs_t){input(g, "X", 3, xd, xstride), input(g, "SCALE", 3, pd, NULL),
                           input(g, "BIAS", 3, pd, NULL)};
}

static void layernorm_inference(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    norm_inputs_t in = norm_inputs(g, 2, NULL);
    dnnjit_tensor_t y, mean = 99, inv = 99;
    TU_OK(dnnjit_graph_layernorm(g, in.x, in.scale, in.bias, &(dnnjit_norm_attr_t){.name = "ln"}, &y, &mean, &inv));
    SHAPE(g, y, 3, TU_DIMS(4, 6, 8), TU_DIMS(48, 8, 1));
    assert_int_equal(tensor_count(g), 4);
    assert_int_equal(mean, 99);
    assert_int_equal(inv, 99);
    assert_true(g->nodes[0].attr.norm.epsilon_value == 1e-5);
    FINISH(g, y);
    TYPE(g, y, DNNJIT_DATA_TYPE_HALF);
    dnnjit_graph_destroy(g);
}

static void layernorm_training_stats(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    norm_inputs_t in = norm_inputs(g, 2, NULL);
    dnnjit_tensor_t y, mean, inv;
    TU_OK(dnnjit_graph_layernorm(g, in.x, in.scale, in.bias,
                                 &(dnnjit_norm_attr_t){.name = "ln", .phase = DNNJIT_NORM_PHASE_TRAINING,
                                                       .epsilon_value = 1e-3},
                                 &y, &mean, &inv));
    SHAPE(g, mean, 3, TU_DIMS(4, 1, 1), TU_DIMS(1, 1, 1));
    SHAPE(g, inv, 3, TU_DIMS(4, 1, 1), TU_DIMS(1, 1, 1));
    assert_string_equal(info_of(g, mean).name, "ln::MEAN");
    assert_string_equal(info_of(g, inv).name, "ln::INV_VARIANCE");
    assert_true(g->nodes[0].attr.norm.epsilon_value == 1e-3);
    FINISH(g, y, mean, inv);
    TYPE(g, mean, DNNJIT_DATA_TYPE_FLOAT);
    TYPE(g, inv, DNNJIT_DATA_TYPE_FLOAT);
    TYPE(g, y, DNNJIT_DATA_TYPE_HALF);
    dnnjit_graph_destroy(g);
}

static void layernorm_norm_axes(void **state)
{
    (void)state;
    for (int k = 1; k <= 3; k++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
        norm_inputs_t in = norm_inputs(g, k, NULL);
        dnnjit_tensor_t y, mean, inv;
        TU_OK(dnnjit_graph_layernorm(
            g, in.x, in.scale, in.bias,
            &(dnnjit_norm_attr_t){.phase = DNNJIT_NORM_PHASE_TRAINING, .norm_axes = k}, &y, &mean, &inv));
        /* Statistics keep the axes that are not normalised. */
        static const int64_t stats[3][3] = {{4, 6, 1}, {4, 1, 1}, {1, 1, 1}};
        static const int64_t stats_stride[3][3] = {{6, 1, 1}, {1, 1, 1}, {1, 1, 1}};
        SHAPE(g, mean, 3, stats[k - 1], stats_stride[k - 1]);
        SHAPE(g, inv, 3, stats[k - 1], stats_stride[k - 1]);
        SHAPE(g, y, 3, TU_DIMS(4, 6, 8), TU_DIMS(48, 8, 1));
        FINISH(g, y, mean, inv);
        dnnjit_graph_destroy(g);
    }
}

static void layernorm_output_follows_x_layout(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    /* X [4,6,8] with axis 0 innermost. */
    norm_inputs_t in = norm_inputs(g, 2, TU_DIMS(1, 32, 4));
    dnnjit_tensor_t y;
    TU_OK(dnnjit_graph_layernorm(g, in.x, in.scale, in.bias, NULL, &y, NULL, NULL));
    SHAPE(g, y, 3, TU_DIMS(4, 6, 8), TU_DIMS(1, 32, 4));
    dnnjit_graph_destroy(g);
}

static void layernorm_epsilon_tensor(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    norm_inputs_t in = norm_inputs(g, 2, NULL);
    dnnjit_tensor_t eps;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "eps", .ndim = 1, .dim = TU_DIMS(1),
                                                          .is_pass_by_value = true, .has_value = true,
                                                          .value = 1e-6},
                              &eps));
    dnnjit_tensor_t y;
    TU_OK(dnnjit_graph_layernorm(g, in.x, in.scale, in.bias, &(dnnjit_norm_attr_t){.epsilon = eps}, &y, NULL,
                                 NULL));
    assert_int_equal(g->nodes[0].in[3], eps);
    FINISH(g, y);
    dnnjit_graph_destroy(g);
}

static void rmsnorm_inference_without_bias(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    norm_inputs_t in = norm_inputs(g, 2, NULL);
    dnnjit_tensor_t y, inv = 99;
    TU_OK(dnnjit_graph_rmsnorm(g, in.x, in.scale, DNNJIT_TENSOR_NONE, &(dnnjit_norm_attr_t){.name = "rms"}, &y,
                               &inv));
    SHAPE(g, y, 3, TU_DIMS(4, 6, 8), TU_DIMS(48, 8, 1));
    assert_int_equal(inv, 99);
    assert_int_equal(g->nodes[0].in[2], DNNJIT_TENSOR_NONE);
    /* BIAS is not an input of this node: read it elsewhere so that every input is used. */
    dnnjit_tensor_t y2 = pointwise(g, DNNJIT_POINTWISE_ADD, y, in.bias, 0);
    FINISH(g, y2);
    dnnjit_graph_destroy(g);
}

static void rmsnorm_training_with_bias(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    norm_inputs_t in = norm_inputs(g, 1, NULL);
    dnnjit_tensor_t y, inv;
    TU_OK(dnnjit_graph_rmsnorm(g, in.x, in.scale, in.bias,
                               &(dnnjit_norm_attr_t){.name = "rms", .phase = DNNJIT_NORM_PHASE_TRAINING,
                                                     .norm_axes = 1},
                               &y, &inv));
    SHAPE(g, inv, 3, TU_DIMS(4, 6, 1), TU_DIMS(6, 1, 1));
    assert_string_equal(info_of(g, inv).name, "rms::INV_VARIANCE");
    FINISH(g, y, inv);
    TYPE(g, inv, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_graph_destroy(g);
}

/* Backward over X [2,3,4,5] normalised on the last 2 axes: parameters and their gradients
 * [1,1,4,5], statistics [2,3,1,1]. */
typedef struct bwd_inputs {
    dnnjit_tensor_t dy, x, scale, mean, inv;
} bwd_inputs_t;

static bwd_inputs_t bwd_inputs(dnnjit_graph_t g)
{
    return (bwd_inputs_t){input(g, "DY", 4, TU_DIMS(2, 3, 4, 5), NULL), input(g, "X", 4, TU_DIMS(2, 3, 4, 5), NULL),
                          input(g, "SCALE", 4, TU_DIMS(1, 1, 4, 5), NULL),
                          input(g, "MEAN", 4, TU_DIMS(2, 3, 1, 1), NULL),
                          input(g, "INV", 4, TU_DIMS(2, 3, 1, 1), NULL)};
}

static void layernorm_backward_with_dbias(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    bwd_inputs_t in = bwd_inputs(g);
    dnnjit_tensor_t dx, ds, db;
    TU_OK(dnnjit_graph_layernorm_backward(g, in.dy, in.x, in.scale, in.mean, in.inv,
                                          &(dnnjit_norm_attr_t){.name = "lnb", .norm_axes = 2}, &dx, &ds, &db));
    SHAPE(g, dx, 4, TU_DIMS(2, 3, 4, 5), TU_DIMS(60, 20, 5, 1));
    SHAPE(g, ds, 4, TU_DIMS(1, 1, 4, 5), TU_DIMS(20, 20, 5, 1));
    SHAPE(g, db, 4, TU_DIMS(1, 1, 4, 5), TU_DIMS(20, 20, 5, 1));
    assert_string_equal(info_of(g, db).name, "lnb::DBIAS");
    FINISH(g, dx, ds, db);
    /* Gradients are not statistics: they take the io type. */
    TYPE(g, ds, DNNJIT_DATA_TYPE_HALF);
    TYPE(g, db, DNNJIT_DATA_TYPE_HALF);
    dnnjit_graph_destroy(g);
}

static void layernorm_backward_without_dbias(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    bwd_inputs_t in = bwd_inputs(g);
    dnnjit_tensor_t dx, ds;
    TU_OK(dnnjit_graph_layernorm_backward(g, in.dy, in.x, in.scale, in.mean, in.inv,
                                          &(dnnjit_norm_attr_t){.norm_axes = 2}, &dx, &ds, NULL));
    assert_int_equal(tensor_count(g), 7);
    assert_int_equal(g->nodes[0].out[2], DNNJIT_TENSOR_NONE);
    SHAPE(g, ds, 4, TU_DIMS(1, 1, 4, 5), NULL);
    FINISH(g, dx, ds);
    dnnjit_graph_destroy(g);
}

static void rmsnorm_backward_optional_dbias(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    bwd_inputs_t in = bwd_inputs(g);
    dnnjit_tensor_t dx, ds, db, dx2, ds2;
    TU_OK(dnnjit_graph_rmsnorm_backward(g, in.dy, in.x, in.scale, in.inv, &(dnnjit_norm_attr_t){.norm_axes = 2},
                                        &dx, &ds, &db));
    SHAPE(g, dx, 4, TU_DIMS(2, 3, 4, 5), TU_DIMS(60, 20, 5, 1));
    SHAPE(g, ds, 4, TU_DIMS(1, 1, 4, 5), TU_DIMS(20, 20, 5, 1));
    SHAPE(g, db, 4, TU_DIMS(1, 1, 4, 5), TU_DIMS(20, 20, 5, 1));
    int64_t before = tensor_count(g);
    TU_OK(dnnjit_graph_rmsnorm_backward(g, in.dy, in.x, in.scale, in.inv, &(dnnjit_norm_attr_t){.norm_axes = 2},
                                        &dx2, &ds2, NULL));
    assert_int_equal(tensor_count(g), before + 2);
    /* MEAN is not an input of rmsnorm backward: read it so that the graph is complete. */
    dnnjit_tensor_t m = pointwise(g, DNNJIT_POINTWISE_NEG, in.mean, 0, 0);
    FINISH(g, dx, ds, db, dx2, ds2, m);
    dnnjit_graph_destroy(g);
}

/* norm_axes 0 means every axis but the first, for the backward ops too. */
static void norm_backward_default_axes(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t dy = input(g, "DY", 3, TU_DIMS(4, 6, 8), NULL), x = input(g, "X", 3, TU_DIMS(4, 6, 8), NULL);
    dnnjit_tensor_t scale = input(g, "SCALE", 3, TU_DIMS(1, 6, 8), NULL);
    dnnjit_tensor_t inv = input(g, "INV", 3, TU_DIMS(4, 1, 1), NULL);
    dnnjit_tensor_t dx, ds;
    TU_OK(dnnjit_graph_rmsnorm_backward(g, dy, x, scale, inv, NULL, &dx, &ds, NULL));
    SHAPE(g, ds, 3, TU_DIMS(1, 6, 8), TU_DIMS(48, 8, 1));
    FINISH(g, dx, ds);
    dnnjit_graph_destroy(g);
}

/* ---- sdpa ------------------------------------------------------------------------------ */

static void sdpa_shapes(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t q = input(g, "Q", 4, TU_DIMS(2, 4, 16, 8), NULL);
    dnnjit_tensor_t k = input(g, "K", 4, TU_DIMS(2, 4, 32, 8), NULL);
    dnnjit_tensor_t v = input(g, "V", 4, TU_DIMS(2, 4, 32, 6), NULL);
    dnnjit_tensor_t o, stats;
    TU_OK(dnnjit_graph_sdpa(g, q, k, v, &(dnnjit_sdpa_attr_t){.name = "attn", .generate_stats = true}, &o, &stats));
    SHAPE(g, o, 4, TU_DIMS(2, 4, 16, 6), TU_DIMS(384, 96, 6, 1));
    SHAPE(g, stats, 4, TU_DIMS(2, 4, 16, 1), TU_DIMS(64, 16, 1, 1));
    assert_string_equal(info_of(g, stats).name, "attn::STATS");
    FINISH(g, o, stats);
    TYPE(g, o, DNNJIT_DATA_TYPE_BFLOAT16);
    TYPE(g, stats, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_graph_destroy(g);
}

static void sdpa_without_stats(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t q = input(g, "Q", 4, TU_DIMS(1, 2, 3, 4), NULL);
    dnnjit_tensor_t k = input(g, "K", 4, TU_DIMS(1, 2, 5, 4), NULL);
    dnnjit_tensor_t v = input(g, "V", 4, TU_DIMS(1, 2, 5, 4), NULL);
    dnnjit_tensor_t o, stats = 99;
    TU_OK(dnnjit_graph_sdpa(g, q, k, v, NULL, &o, &stats));
    assert_int_equal(stats, 99);
    assert_int_equal(tensor_count(g), 4);
    SHAPE(g, o, 4, TU_DIMS(1, 2, 3, 4), TU_DIMS(24, 12, 4, 1));
    FINISH(g, o);
    dnnjit_graph_destroy(g);
}

/* Grouped-query attention: 8 query heads over 2 key heads and 4 value heads. */
static void sdpa_grouped_query(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t q = input(g, "Q", 4, TU_DIMS(3, 8, 10, 16), NULL);
    dnnjit_tensor_t k = input(g, "K", 4, TU_DIMS(3, 2, 12, 16), NULL);
    dnnjit_tensor_t v = input(g, "V", 4, TU_DIMS(3, 4, 12, 32), NULL);
    dnnjit_tensor_t o, stats;
    TU_OK(dnnjit_graph_sdpa(g, q, k, v, &(dnnjit_sdpa_attr_t){.generate_stats = true, .use_causal_mask = true},
                            &o, &stats));
    SHAPE(g, o, 4, TU_DIMS(3, 8, 10, 32), TU_DIMS(2560, 320, 32, 1));
    SHAPE(g, stats, 4, TU_DIMS(3, 8, 10, 1), TU_DIMS(80, 10, 1, 1));
    FINISH(g, o, stats);
    dnnjit_graph_destroy(g);
}

/* O is packed in Q's stride order: Q in [b, s, h, d] memory gives O in [b, s, h, d_v]. */
static void sdpa_output_follows_q_layout(void **state)
{
    (void)state;
    const int64_t b = 2, h = 3, s = 5, d = 4, dv = 6;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t q = input(g, "Q", 4, TU_DIMS(b, h, s, d), TU_DIMS(s * h * d, d, h * d, 1));
    dnnjit_tensor_t k = input(g, "K", 4, TU_DIMS(b, h, s, d), NULL);
    dnnjit_tensor_t v = input(g, "V", 4, TU_DIMS(b, h, s, dv), NULL);
    dnnjit_tensor_t o;
    TU_OK(dnnjit_graph_sdpa(g, q, k, v, NULL, &o, NULL));
    SHAPE(g, o, 4, TU_DIMS(b, h, s, dv), TU_DIMS(s * h * dv, dv, h * dv, 1));
    FINISH(g, o);
    SHAPE(g, o, 4, TU_DIMS(b, h, s, dv), TU_DIMS(s * h * dv, dv, h * dv, 1));
    dnnjit_graph_destroy(g);
}

/* ---- data types ------------------------------------------------------------------------- */

/* Inputs take the io type, virtual tensors the intermediate type, outputs the io type. */
static void types_from_graph_defaults(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = input(g, "A", 2, TU_DIMS(2, 3), NULL), b = input(g, "B", 2, TU_DIMS(3, 4), NULL);
    dnnjit_tensor_t c = matmul(g, a, b);
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_RELU_FWD, c, 0, 0);
    /* Before validation: inputs and the virtual tensor already resolve from the defaults. */
    TYPE(g, a, DNNJIT_DATA_TYPE_HALF);
    TYPE(g, c, DNNJIT_DATA_TYPE_FLOAT);
    FINISH(g, y);
    TYPE(g, a, DNNJIT_DATA_TYPE_HALF);
    TYPE(g, b, DNNJIT_DATA_TYPE_HALF);
    TYPE(g, c, DNNJIT_DATA_TYPE_FLOAT);
    TYPE(g, y, DNNJIT_DATA_TYPE_HALF);
    assert_int_equal(g->tensors[c - 1].resolved_type, DNNJIT_DATA_TYPE_FLOAT);
    assert_int_equal(g->tensors[y - 1].resolved_type, DNNJIT_DATA_TYPE_HALF);
    dnnjit_graph_destroy(g);
}

/* Without an intermediate type, virtual tensors take the compute type. */
static void types_intermediate_defaults_to_compute(void **state)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL,
                              &(dnnjit_graph_attr_t){.io_data_type = DNNJIT_DATA_TYPE_HALF,
                                                     .compute_data_type = DNNJIT_DATA_TYPE_DOUBLE},
                              &g));
    dnnjit_tensor_t c = matmul(g, input(g, "A", 2, TU_DIMS(2, 3), NULL), input(g, "B", 2, TU_DIMS(3, 4), NULL));
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_ABS, c, 0, 0);
    FINISH(g, y);
    TYPE(g, c, DNNJIT_DATA_TYPE_DOUBLE);
    TYPE(g, y, DNNJIT_DATA_TYPE_HALF);
    dnnjit_graph_destroy(g);
}

/* Without an io type, an output takes the type of its node's first input, following
 * outputs back through chains of nodes. */
static void types_outputs_inherit_first_input(void **state)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL, NULL, &g));
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(2, 3), NULL, DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(3, 4), NULL, DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t c = matmul(g, a, b);
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_NEG, c, 0, 0);
    dnnjit_tensor_t i = tu_tensor(g, "I", 2, TU_DIMS(2, 4), NULL, DNNJIT_DATA_TYPE_INT32);
    dnnjit_tensor_t z = pointwise(g, DNNJIT_POINTWISE_ADD, i, y, 0);
    FINISH(g, c, y, z);
    TYPE(g, c, DNNJIT_DATA_TYPE_BFLOAT16);
    TYPE(g, y, DNNJIT_DATA_TYPE_BFLOAT16);
    TYPE(g, z, DNNJIT_DATA_TYPE_INT32);
    /* A virtual first input gives its own (intermediate, here the compute) type. */
    TU_OK(dnnjit_tensor_set_output(g, c, false));
    TU_OK(dnnjit_graph_validate(g));
    TYPE(g, c, DNNJIT_DATA_TYPE_FLOAT);
    TYPE(g, y, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_graph_destroy(g);
}

/* An explicit type beats every default, statistics included. */
static void types_explicit_wins(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t s, lse;
    TU_OK(dnnjit_graph_softmax(g, input(g, "P", 2, TU_DIMS(3, 4), NULL),
                               &(dnnjit_softmax_attr_t){.stats = DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP}, &s, &lse, NULL));
    TU_OK(dnnjit_tensor_set_data_type(g, lse, DNNJIT_DATA_TYPE_BFLOAT16));
    TU_OK(dnnjit_tensor_set_data_type(g, s, DNNJIT_DATA_TYPE_DOUBLE));
    FINISH(g, s, lse);
    TYPE(g, lse, DNNJIT_DATA_TYPE_BFLOAT16);
    TYPE(g, s, DNNJIT_DATA_TYPE_DOUBLE);
    /* Setting NOT_SET goes back to the default. */
    TU_OK(dnnjit_tensor_set_data_type(g, lse, DNNJIT_DATA_TYPE_NOT_SET));
    TYPE(g, lse, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_graph_destroy(g);
}

/* Virtual statistics are FLOAT too, even with another intermediate type. */
static void types_virtual_stats_are_float(void **state)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL,
                              &(dnnjit_graph_attr_t){.io_data_type = DNNJIT_DATA_TYPE_HALF,
                                                     .intermediate_data_type = DNNJIT_DATA_TYPE_HALF},
                              &g));
    dnnjit_tensor_t q = input(g, "Q", 4, TU_DIMS(1, 1, 2, 4), NULL);
    dnnjit_tensor_t o, st;
    TU_OK(dnnjit_graph_sdpa(g, q, input(g, "K", 4, TU_DIMS(1, 1, 2, 4), NULL),
                            input(g, "V", 4, TU_DIMS(1, 1, 2, 4), NULL),
                            &(dnnjit_sdpa_attr_t){.generate_stats = true}, &o, &st));
    dnnjit_tensor_t e = pointwise(g, DNNJIT_POINTWISE_EXP, st, 0, 0);
    FINISH(g, o, e);
    TYPE(g, st, DNNJIT_DATA_TYPE_FLOAT);
    TYPE(g, e, DNNJIT_DATA_TYPE_HALF);
    dnnjit_graph_destroy(g);
}

static void compute_type_defaults(void **state)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL, &(dnnjit_graph_attr_t){.io_data_type = DNNJIT_DATA_TYPE_HALF}, &g));
    dnnjit_tensor_t a = input(g, "A", 2, TU_DIMS(2, 2), NULL);
    dnnjit_tensor_t c1 = matmul(g, a, a), c2;
    TU_OK(dnnjit_graph_matmul(g, c1, a, &(dnnjit_matmul_attr_t){.compute_data_type = DNNJIT_DATA_TYPE_DOUBLE}, &c2));
    FINISH(g, c2);
    /* The first node keeps "the graph's", which is FLOAT when the graph names none. */
    assert_int_equal(g->nodes[0].compute_type, DNNJIT_DATA_TYPE_NOT_SET);
    assert_int_equal(g->compute_type, DNNJIT_DATA_TYPE_FLOAT);
    assert_int_equal(g->nodes[1].compute_type, DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_graph_destroy(g);
}

/* ---- uids --------------------------------------------------------------------------------- */

static dnnjit_tensor_t tensor_with_uid(dnnjit_graph_t g, const char *name, int64_t uid)
{
    dnnjit_tensor_t t;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = name, .ndim = 1, .dim = TU_DIMS(4),
                                                          .has_uid = true, .uid = uid},
                              &t));
    return t;
}

/* Assigned uids never collide with the caller's, whatever values those are. */
static void uids_assigned_around_user_uids(void **state)
{
    (void)state;
    static const int64_t user[] = {0, -7, 3, 1, INT64_MAX, INT64_MIN, 2};
    const int n_user = (int)(sizeof user / sizeof user[0]);
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t ids[32];
    int n = 0;
    char name[16];
    for (int i = 0; i < n_user; i++) {
        snprintf(name, sizeof name, "u%d", i);
        ids[n++] = tensor_with_uid(g, name, user[i]);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "a%d", i);
        ids[n++] = input(g, name, 1, TU_DIMS(4), NULL);
    }
    /* Sum everything so that every tensor is read. */
    dnnjit_tensor_t acc = ids[0];
    for (int i = 1; i < n; i++)
        ids[n + i - 1] = acc = pointwise(g, DNNJIT_POINTWISE_ADD, acc, ids[i], 0);
    int total = 2 * n - 1;
    FINISH(g, acc);
    for (int i = 0; i < n_user; i++)
        assert_int_equal(tu_uid(g, ids[i]), user[i]);
    for (int i = 0; i < total; i++)
        for (int j = i + 1; j < total; j++)
            if (tu_uid(g, ids[i]) == tu_uid(g, ids[j]))
                fail_msg("tensors %u and %u share uid %lld", ids[i], ids[j], (long long)tu_uid(g, ids[i]));
    for (int i = 0; i < total; i++) {
        dnnjit_tensor_t found;
        TU_OK(dnnjit_graph_find_tensor_by_uid(g, tu_uid(g, ids[i]), &found));
        assert_int_equal(found, ids[i]);
        assert_true(info_of(g, ids[i]).has_uid);
    }
    dnnjit_graph_destroy(g);
}

/* A uid handed out by get_uid before validation is kept by validation and is not handed
 * out again. */
static void uid_from_get_uid_is_stable(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 2, TU_DIMS(2, 2), NULL);
    assert_false(info_of(g, a).has_uid);
    int64_t ua = tu_uid(g, a);
    assert_true(info_of(g, a).has_uid);
    assert_int_equal(tu_uid(g, a), ua);
    dnnjit_tensor_t c = matmul(g, a, a);
    FINISH(g, c);
    assert_int_equal(tu_uid(g, a), ua);
    assert_int_not_equal(tu_uid(g, c), ua);
    /* A later tensor cannot take the uid. */
    dnnjit_tensor_t t;
    TU_FAILS(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "late", .ndim = 1, .dim = TU_DIMS(1),
                                                             .has_uid = true, .uid = ua},
                                 &t),
             DNNJIT_STATUS_BAD_PARAM, "is already used by tensor \"A\"");
    dnnjit_graph_destroy(g);
}

static void find_tensor_by_uid_and_name(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tensor_with_uid(g, "A", 0), b = tensor_with_uid(g, "B", -1), t = 0;
    TU_OK(dnnjit_graph_find_tensor_by_uid(g, 0, &t));
    assert_int_equal(t, a);
    TU_OK(dnnjit_graph_find_tensor_by_uid(g, -1, &t));
    assert_int_equal(t, b);
    TU_OK(dnnjit_graph_find_tensor_by_name(g, "B", &t));
    assert_int_equal(t, b);
    TU_FAILS(dnnjit_graph_find_tensor_by_uid(g, 5, &t), DNNJIT_STATUS_NOT_FOUND, "uid 5");
    TU_FAILS(dnnjit_graph_find_tensor_by_name(g, "b", &t), DNNJIT_STATUS_NOT_FOUND, "named \"b\"");
    dnnjit_graph_destroy(g);
}

/* ---- setters ---------------------------------------------------------------------------- */

static void set_name_renames(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 1, TU_DIMS(3), NULL), t;
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_EXP, a, 0, 0);
    TU_OK(dnnjit_tensor_set_name(g, y, "exp_out"));
    assert_string_equal(info_of(g, y).name, "exp_out");
    TU_OK(dnnjit_graph_find_tensor_by_name(g, "exp_out", &t));
    assert_int_equal(t, y);
    TU_FAILS(dnnjit_graph_find_tensor_by_name(g, "0::OUT_0", &t), DNNJIT_STATUS_NOT_FOUND, "0::OUT_0");
    /* Renaming a tensor to its own name is no conflict. */
    TU_OK(dnnjit_tensor_set_name(g, y, "exp_out"));
    TU_FAILS(dnnjit_tensor_set_name(g, y, "A"), DNNJIT_STATUS_BAD_PARAM, "another tensor is already named \"A\"");
    assert_string_equal(info_of(g, y).name, "exp_out");
    FINISH(g, y);
    dnnjit_graph_destroy(g);
}

static void set_uid_changes_uid(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 1, TU_DIMS(3), NULL), b = input(g, "B", 1, TU_DIMS(3), NULL);
    TU_OK(dnnjit_tensor_set_uid(g, a, 42));
    TU_OK(dnnjit_tensor_set_uid(g, a, 42));
    TU_OK(dnnjit_tensor_set_uid(g, a, 0));
    assert_int_equal(tu_uid(g, a), 0);
    TU_OK(dnnjit_tensor_set_uid(g, b, 42)); /* 42 is free again */
    TU_FAILS(dnnjit_tensor_set_uid(g, b, 0), DNNJIT_STATUS_BAD_PARAM, "uid 0 is already used by tensor \"A\"");
    assert_int_equal(tu_uid(g, b), 42);
    dnnjit_graph_destroy(g);
}

static void set_output_toggles_virtual(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 1, TU_DIMS(3), NULL);
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_EXP, a, 0, 0);
    assert_true(info_of(g, y).is_virtual);
    assert_int_equal(info_of(g, y).producer, 0);
    assert_int_equal(info_of(g, a).producer, -1);
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    assert_false(info_of(g, y).is_virtual);
    TU_OK(dnnjit_tensor_set_output(g, y, false));
    assert_true(info_of(g, y).is_virtual);
    TU_OK(dnnjit_tensor_set_output(g, a, true)); /* an input already is non-virtual */
    assert_false(info_of(g, a).is_virtual);
    TU_FAILS(dnnjit_tensor_set_output(g, a, false), DNNJIT_STATUS_BAD_PARAM, "tensor \"A\" is a graph input");
    assert_false(info_of(g, a).is_virtual);
    dnnjit_graph_destroy(g);
}

/* set_dim on an op output keeps its stride order; set_stride fixes strides that
 * validation then keeps. */
static void set_dim_and_set_stride_on_outputs(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 2, TU_DIMS(3, 4), TU_DIMS(1, 3));
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_EXP, a, 0, 0);
    TU_OK(dnnjit_tensor_set_dim(g, y, 2, TU_DIMS(3, 4)));
    SHAPE(g, y, 2, TU_DIMS(3, 4), TU_DIMS(1, 3));
    /* Padded rows: 4 elements per row, 8 apart. */
    dnnjit_tensor_t z = pointwise(g, DNNJIT_POINTWISE_NEG, y, 0, 0);
    TU_OK(dnnjit_tensor_set_stride(g, z, 2, TU_DIMS(8, 1)));
    FINISH(g, z);
    SHAPE(g, z, 2, TU_DIMS(3, 4), TU_DIMS(8, 1));
    SHAPE(g, y, 2, TU_DIMS(3, 4), TU_DIMS(1, 3));
    /* Re-fixing the dims at the same rank keeps the fixed strides. */
    TU_OK(dnnjit_tensor_set_dim(g, z, 2, TU_DIMS(3, 4)));
    SHAPE(g, z, 2, TU_DIMS(3, 4), TU_DIMS(8, 1));
    /* A new rank drops them for packed ones. */
    TU_OK(dnnjit_tensor_set_dim(g, z, 3, TU_DIMS(1, 3, 4)));
    SHAPE(g, z, 3, TU_DIMS(1, 3, 4), TU_DIMS(12, 4, 1));
    dnnjit_graph_destroy(g);
}

/* An input made with packed strides stays packed when set_dim changes its dims; strides the
 * caller gave stay as given. */
static void set_dim_on_inputs(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 3, TU_DIMS(2, 3, 4), NULL);
    TU_OK(dnnjit_tensor_set_dim(g, a, 3, TU_DIMS(2, 5, 4)));
    SHAPE(g, a, 3, TU_DIMS(2, 5, 4), TU_DIMS(20, 4, 1));
    /* Packed column-major stays column-major. */
    dnnjit_tensor_t b = input(g, "B", 2, TU_DIMS(3, 4), TU_DIMS(1, 3));
    TU_OK(dnnjit_tensor_set_dim(g, b, 2, TU_DIMS(3, 4)));
    SHAPE(g, b, 2, TU_DIMS(3, 4), TU_DIMS(1, 3));
    /* Padded rows given by the caller are the caller's. */
    dnnjit_tensor_t c = input(g, "C", 2, TU_DIMS(3, 4), TU_DIMS(8, 1));
    TU_OK(dnnjit_tensor_set_dim(g, c, 2, TU_DIMS(2, 6)));
    SHAPE(g, c, 2, TU_DIMS(2, 6), TU_DIMS(8, 1));
    /* set_stride fixes them from then on. */
    TU_OK(dnnjit_tensor_set_stride(g, a, 3, TU_DIMS(40, 8, 1)));
    TU_OK(dnnjit_tensor_set_dim(g, a, 3, TU_DIMS(2, 5, 3)));
    SHAPE(g, a, 3, TU_DIMS(2, 5, 3), TU_DIMS(40, 8, 1));
    dnnjit_graph_destroy(g);
}

/* Changing an input re-infers every output at validation. */
static void validate_reinfers_after_input_change(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, "A", 3, TU_DIMS(2, 3, 4), NULL), b = input(g, "B", 2, TU_DIMS(4, 5), NULL);
    dnnjit_tensor_t c = matmul(g, a, b);
    dnnjit_tensor_t y = pointwise(g, DNNJIT_POINTWISE_RELU_FWD, c, 0, 0);
    FINISH(g, y);
    SHAPE(g, y, 3, TU_DIMS(2, 3, 5), TU_DIMS(15, 5, 1));
    TU_OK(dnnjit_tensor_set_dim(g, a, 4, TU_DIMS(7, 2, 6, 4)));
    TU_OK(dnnjit_graph_validate(g));
    SHAPE(g, c, 4, TU_DIMS(7, 2, 6, 5), TU_DIMS(60, 30, 5, 1));
    SHAPE(g, y, 4, TU_DIMS(7, 2, 6, 5), TU_DIMS(60, 30, 5, 1));
    dnnjit_graph_destroy(g);
}

static void names_of_nodes_and_outputs(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = input(g, NULL, 2, TU_DIMS(2, 2), NULL);
    assert_string_equal(info_of(g, a).name, "t1");
    dnnjit_tensor_t c = matmul(g, a, a), c2;
    assert_string_equal(info_of(g, c).name, "0::C");
    TU_OK(dnnjit_graph_matmul(g, c, a, &(dnnjit_matmul_attr_t){.name = "second"}, &c2));
    assert_string_equal(info_of(g, c2).name, "second::C");
    assert_string_equal(g->nodes[1].name, "second");
    FINISH(g, c2);
    dnnjit_graph_destroy(g);
}

/* Output names are "<node>::<PORT>" however long the node's name. */
static void long_node_names(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    char node[1001];
    memset(node, 'n', sizeof node - 1);
    node[sizeof node - 1] = 0;
    dnnjit_tensor_t s, mx, se;
    TU_OK(dnnjit_graph_softmax(g, input(g, "P", 2, TU_DIMS(2, 3), NULL),
                               &(dnnjit_softmax_attr_t){.name = node, .stats = DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP}, &s,
                               &mx, &se));
    const dnnjit_tensor_t outs[] = {s, mx, se};
    const char *const ports[] = {"S", "STATS_0", "STATS_1"};
    for (int i = 0; i < 3; i++) {
        const char *name = info_of(g, outs[i]).name;
        assert_int_equal(strlen(name), strlen(node) + 2 + strlen(ports[i]));
        assert_memory_equal(name, node, strlen(node));
        assert_string_equal(name + strlen(node), i == 0 ? "::S" : i == 1 ? "::STATS_0" : "::STATS_1");
    }
    FINISH(g, s, mx, se);
    dnnjit_graph_destroy(g);
}

/* ---- the seeds ------------------------------------------------------------------------------ */

/* Seed 000: the JIT batch matmul, A[4,64,128] @ B[4,128,64] in HALF with FLOAT compute. */
static void seed000_batch_matmul(void **state)
{
    (void)state;
    enum { BATCH = 4, M = 64, K = 128, N = 64 };
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create(&h));
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(h,
                              &(dnnjit_graph_attr_t){.name = "jit_matmul_graph",
                                                     .io_data_type = DNNJIT_DATA_TYPE_HALF,
                                                     .compute_data_type = DNNJIT_DATA_TYPE_FLOAT},
                              &g));
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(BATCH, M, K), TU_DIMS(M * K, K, 1), DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(BATCH, K, N), TU_DIMS(K * N, N, 1), DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.compute_data_type = DNNJIT_DATA_TYPE_FLOAT}, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_graph_validate(g));
    /* What the seed's printed graph shows for C. */
    dnnjit_tensor_info_t ci = info_of(g, c);
    assert_string_equal(ci.name, "0::C");
    SHAPE(g, c, 3, TU_DIMS(4, 64, 64), TU_DIMS(4096, 64, 1));
    assert_int_equal(ci.data_type, DNNJIT_DATA_TYPE_HALF);
    assert_false(ci.is_virtual);
    assert_false(ci.is_pass_by_value);
    assert_string_equal(g->nodes[0].name, "0");
    assert_int_equal(g->nodes[0].compute_type, DNNJIT_DATA_TYPE_FLOAT);
    int64_t ua = tu_uid(g, a), ub = tu_uid(g, b), uc = tu_uid(g, c);
    assert_true(ua != ub && ub != uc && ua != uc);
    dnnjit_graph_attr_t attr;
    TU_OK(dnnjit_graph_get_attr(g, &attr));
    assert_string_equal(attr.name, "jit_matmul_graph");
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
}

/* Seed 004, first cells: C = A @ B + D with torch-like HALF tensors, the matmul output
 * typed by hand, in a graph with only a compute type. */
static void seed004_matmul_bias_typed_by_hand(void **state)
{
    (void)state;
    enum { B = 16, M = 128, N = 128, K = 512 };
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create(&h));
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(h, &(dnnjit_graph_attr_t){.compute_data_type = DNNJIT_DATA_TYPE_FLOAT}, &g));
    dnnjit_tensor_t a = tu_tensor(g, "a", 3, TU_DIMS(B, M, K), TU_DIMS(M * K, K, 1), DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t b = tu_tensor(g, "b", 3, TU_DIMS(B, K, N), TU_DIMS(K * N, N, 1), DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t d = tu_tensor(g, "d", 3, TU_DIMS(1, M, N), TU_DIMS(M * N, N, 1), DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t ab, c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &ab));
    TU_OK(dnnjit_tensor_set_data_type(g, ab, DNNJIT_DATA_TYPE_HALF));
    TU_OK(dnnjit_graph_bias(g, "bias", ab, d, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_tensor_set_data_type(g, c, DNNJIT_DATA_TYPE_HALF));
    TU_OK(dnnjit_graph_validate(g));
    SHAPE(g, ab, 3, TU_DIMS(B, M, N), TU_DIMS(M * N, N, 1));
    SHAPE(g, c, 3, TU_DIMS(B, M, N), TU_DIMS(M * N, N, 1));
    TYPE(g, ab, DNNJIT_DATA_TYPE_HALF);
    TYPE(g, c, DNNJIT_DATA_TYPE_HALF);
    assert_true(info_of(g, ab).is_virtual);
    assert_string_equal(info_of(g, c).name, "bias::OUT_0");
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
}

/* Seed 004, the same graph relying on the graph's defaults, with the uids the serialisation
 * cell sets (0, 1, 2 on the inputs, 3 on the output). */
static void seed004_matmul_bias_defaults_and_uids(void **state)
{
    (void)state;
    enum { B = 16, M = 128, N = 128, K = 512 };
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL,
                              &(dnnjit_graph_attr_t){.io_data_type = DNNJIT_DATA_TYPE_HALF,
                                                     .intermediate_data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                     .compute_data_type = DNNJIT_DATA_TYPE_FLOAT},
                              &g));
    dnnjit_tensor_t a = tu_tensor(g, "a", 3, TU_DIMS(B, M, K), TU_DIMS(M * K, K, 1), DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t b = tu_tensor(g, "b", 3, TU_DIMS(B, K, N), TU_DIMS(K * N, N, 1), DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t d = tu_tensor(g, "d", 3, TU_DIMS(1, M, N), TU_DIMS(M * N, N, 1), DNNJIT_DATA_TYPE_HALF);
    TU_OK(dnnjit_tensor_set_uid(g, a, 0));
    TU_OK(dnnjit_tensor_set_uid(g, b, 1));
    TU_OK(dnnjit_tensor_set_uid(g, d, 2));
    dnnjit_tensor_t ab, c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &ab));
    TU_OK(dnnjit_graph_bias(g, "bias", ab, d, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_tensor_set_uid(g, c, 3));
    TU_OK(dnnjit_graph_validate(g));
    TYPE(g, ab, DNNJIT_DATA_TYPE_FLOAT);
    TYPE(g, c, DNNJIT_DATA_TYPE_HALF);
    SHAPE(g, c, 3, TU_DIMS(B, M, N), TU_DIMS(M * N, N, 1));
    assert_int_equal(tu_uid(g, a), 0);
    assert_int_equal(tu_uid(g, b), 1);
    assert_int_equal(tu_uid(g, d), 2);
    assert_int_equal(tu_uid(g, c), 3);
    int64_t uab = tu_uid(g, ab);
    assert_true(uab < 0 || uab > 3);
    dnnjit_graph_destroy(g);
}

/* Seed 004's SDPA cell: Q, K, V in [b, s, h, d] memory, causal, with stats; O's dims and
 * strides are also set by hand, as the seed does. */
static void seed004_sdpa(void **state)
{
    (void)state;
    const int64_t b = 2, s_q = 1024, s_kv = 1024, h = 6, d = 64;
    const double attn_scale = 1 / sqrt(64.0);
    dnnjit_handle_t handle;
    TU_OK(dnnjit_handle_create(&handle));
    for (int fix_o = 0; fix_o < 2; fix_o++) {
        dnnjit_graph_t g;
        TU_OK(dnnjit_graph_create(handle,
                                  &(dnnjit_graph_attr_t){.io_data_type = DNNJIT_DATA_TYPE_BFLOAT16,
                                                         .intermediate_data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                         .compute_data_type = DNNJIT_DATA_TYPE_FLOAT},
                                  &g));
        const int64_t *shape_q = TU_DIMS(b, h, s_q, d), *shape_k = TU_DIMS(b, h, s_kv, d);
        const int64_t *stride_q = TU_DIMS(s_q * h * d, d, h * d, 1), *stride_k = TU_DIMS(s_kv * h * d, d, h * d, 1);
        dnnjit_tensor_t q = tu_tensor(g, "q", 4, shape_q, stride_q, DNNJIT_DATA_TYPE_BFLOAT16);
        dnnjit_tensor_t k = tu_tensor(g, "k", 4, shape_k, stride_k, DNNJIT_DATA_TYPE_BFLOAT16);
        dnnjit_tensor_t v = tu_tensor(g, "v", 4, shape_k, stride_k, DNNJIT_DATA_TYPE_BFLOAT16);
        dnnjit_tensor_t o, stats;
        TU_OK(dnnjit_graph_sdpa(g, q, k, v,
                                &(dnnjit_sdpa_attr_t){.name = "sdpa", .generate_stats = true, .has_attn_scale = true,
                                                      .attn_scale = attn_scale, .use_causal_mask = true},
                                &o, &stats));
        TU_OK(dnnjit_tensor_set_uid(g, q, 0));
        TU_OK(dnnjit_tensor_set_uid(g, k, 1));
        TU_OK(dnnjit_tensor_set_uid(g, v, 2));
        TU_OK(dnnjit_tensor_set_uid(g, o, 3));
        TU_OK(dnnjit_tensor_set_uid(g, stats, 4));
        TU_OK(dnnjit_tensor_set_output(g, o, true));
        if (fix_o) {
            TU_OK(dnnjit_tensor_set_dim(g, o, 4, shape_q));
            TU_OK(dnnjit_tensor_set_stride(g, o, 4, stride_q));
        }
        TU_OK(dnnjit_tensor_set_output(g, stats, true));
        TU_OK(dnnjit_tensor_set_data_type(g, stats, DNNJIT_DATA_TYPE_BFLOAT16));
        TU_OK(dnnjit_graph_validate(g));
        SHAPE(g, o, 4, shape_q, stride_q);
        SHAPE(g, stats, 4, TU_DIMS(b, h, s_q, 1), TU_DIMS(h * s_q, s_q, 1, 1));
        TYPE(g, o, DNNJIT_DATA_TYPE_BFLOAT16);
        TYPE(g, stats, DNNJIT_DATA_TYPE_BFLOAT16);
        assert_int_equal(tu_uid(g, stats), 4);
        assert_true(g->nodes[0].attr.sdpa.use_causal_mask);
        assert_true(g->nodes[0].attr.sdpa.attn_scale == 0.125);
        dnnjit_graph_destroy(g);
    }
    dnnjit_handle_destroy(handle);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_rank2),
        cmocka_unit_test(matmul_batched),
        cmocka_unit_test(matmul_batch_broadcast_differing_ranks),
        cmocka_unit_test(matmul_rank2_against_batched),
        cmocka_unit_test(matmul_batch_of_one_stretches),
        cmocka_unit_test(matmul_output_is_row_major),
        cmocka_unit_test(matmul_rank8),
        cmocka_unit_test(pointwise_unary_keeps_layout),
        cmocka_unit_test(pointwise_binary_same_shape),
        cmocka_unit_test(pointwise_binary_broadcast),
        cmocka_unit_test(pointwise_ternary_broadcast),
        cmocka_unit_test(pointwise_column_major_in0_gives_column_major_out),
        cmocka_unit_test(pointwise_in0_order_survives_broadcast),
        cmocka_unit_test(bias_is_a_pointwise_add),
        cmocka_unit_test(reduction_axes_mask),
        cmocka_unit_test(reduction_defaults_to_all_axes),
        cmocka_unit_test(reduction_axes_from_output_dims),
        cmocka_unit_test(softmax_without_stats),
        cmocka_unit_test(softmax_log_sum_exp_stats),
        cmocka_unit_test(softmax_max_and_sum_exp_stats),
        cmocka_unit_test(softmax_follows_input_layout),
        cmocka_unit_test(softmax_backward_shape),
        cmocka_unit_test(layernorm_inference),
        cmocka_unit_test(layernorm_training_stats),
        cmocka_unit_test(layernorm_norm_axes),
        cmocka_unit_test(layernorm_output_follows_x_layout),
        cmocka_unit_test(layernorm_epsilon_tensor),
        cmocka_unit_test(rmsnorm_inference_without_bias),
        cmocka_unit_test(rmsnorm_training_with_bias),
        cmocka_unit_test(layernorm_backward_with_dbias),
        cmocka_unit_test(layernorm_backward_without_dbias),
        cmocka_unit_test(rmsnorm_backward_optional_dbias),
        cmocka_unit_test(norm_backward_default_axes),
        cmocka_unit_test(sdpa_shapes),
        cmocka_unit_test(sdpa_without_stats),
        cmocka_unit_test(sdpa_grouped_query),
        cmocka_unit_test(sdpa_output_follows_q_layout),
        cmocka_unit_test(types_from_graph_defaults),
        cmocka_unit_test(types_intermediate_defaults_to_compute),
        cmocka_unit_test(types_outputs_inherit_first_input),
        cmocka_unit_test(types_explicit_wins),
        cmocka_unit_test(types_virtual_stats_are_float),
        cmocka_unit_test(compute_type_defaults),
        cmocka_unit_test(uids_assigned_around_user_uids),
        cmocka_unit_test(uid_from_get_uid_is_stable),
        cmocka_unit_test(find_tensor_by_uid_and_name),
        cmocka_unit_test(set_name_renames),
        cmocka_unit_test(set_uid_changes_uid),
        cmocka_unit_test(set_output_toggles_virtual),
        cmocka_unit_test(set_dim_and_set_stride_on_outputs),
        cmocka_unit_test(set_dim_on_inputs),
        cmocka_unit_test(validate_reinfers_after_input_change),
        cmocka_unit_test(names_of_nodes_and_outputs),
        cmocka_unit_test(long_node_names),
        cmocka_unit_test(seed000_batch_matmul),
        cmocka_unit_test(seed004_matmul_bias_typed_by_hand),
        cmocka_unit_test(seed004_matmul_bias_defaults_and_uids),
        cmocka_unit_test(seed004_sdpa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
