/* A catalogue of invalid graphs and calls. Each case asserts the status and a fragment of
 * the message naming the node, the port or tensor and the dimension at fault with the
 * expected and actual values; that the same message is the graph's and the thread's last
 * error; and, for op calls, that the failed call left the graph as it was. */
#include "util.h"

#include "graph/graph.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers ---------------------------------------------------------------------- */

static void expect_fail(dnnjit_graph_t g, dnnjit_status_t got, dnnjit_status_t want, const char *fragment,
                        const char *what, int line)
{
    tu_expect_failure(got, want, fragment, what, __FILE__, line);
    if (g && strcmp(dnnjit_graph_last_error(g), dnnjit_last_error()) != 0)
        fail_msg("%s:%d: %s: the graph's last error \"%s\" differs from the thread's \"%s\"", __FILE__, line, what,
                 dnnjit_graph_last_error(g), dnnjit_last_error());
}
#define FAILS(g, call, status, fragment) expect_fail((g), (call), (status), (fragment), #call, __LINE__)

static int64_t count_of(dnnjit_graph_t g, bool nodes)
{
    int64_t n = -1;
    TU_OK(nodes ? dnnjit_graph_get_node_count(g, &n) : dnnjit_graph_get_tensor_count(g, &n));
    return n;
}

/* An op call that fails with `status` and leaves the tensor and node counts unchanged. */
#define OP_FAILS(g, call, status, fragment)                                 \
    do {                                                                    \
        int64_t tensors_ = count_of((g), false), nodes_ = count_of((g), true); \
        FAILS((g), (call), (status), (fragment));                           \
        assert_int_equal(count_of((g), false), tensors_);                   \
        assert_int_equal(count_of((g), true), nodes_);                      \
    } while (0)

#define VALIDATE_FAILS(g, fragment) FAILS((g), dnnjit_graph_validate(g), DNNJIT_STATUS_INVALID_GRAPH, (fragment))

static int setup(void **state)
{
    *state = tu_graph(DNNJIT_DATA_TYPE_HALF);
    return 0;
}

static int teardown(void **state)
{
    dnnjit_graph_destroy(*state);
    return 0;
}

static dnnjit_tensor_t in(dnnjit_graph_t g, const char *name, int ndim, const int64_t *dim)
{
    return tu_tensor(g, name, ndim, dim, NULL, DNNJIT_DATA_TYPE_NOT_SET);
}

/* Calls dnnjit_graph_tensor for a packed tensor of the given rank and dims. */
static dnnjit_status_t add_tensor(dnnjit_graph_t g, const char *name, int ndim, const int64_t *dim,
                                  const int64_t *stride)
{
    dnnjit_tensor_t t = 99;
    dnnjit_status_t s =
        dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = name, .ndim = ndim, .dim = dim, .stride = stride}, &t);
    if (s)
        assert_int_equal(t, DNNJIT_TENSOR_NONE);
    return s;
}

static dnnjit_status_t mm(dnnjit_graph_t g, dnnjit_tensor_t a, dnnjit_tensor_t b, dnnjit_tensor_t *c)
{
    return dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, c);
}

static dnnjit_status_t pw(dnnjit_graph_t g, dnnjit_pointwise_mode_t mode, dnnjit_tensor_t a, dnnjit_tensor_t b,
                          dnnjit_tensor_t c, dnnjit_tensor_t *out)
{
    return dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "pw", .mode = mode}, a, b, c, out);
}

#define CASE(name) static void name(void **state)
#define G dnnjit_graph_t g = *state

/* ---- tensor descriptions ------------------------------------------------------------- */

CASE(tensor_rank_0)
{
    G;
    OP_FAILS(g, add_tensor(g, "A", 0, TU_DIMS(1), NULL), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"A\": rank 0 is outside 1..8");
}

CASE(tensor_rank_9)
{
    G;
    OP_FAILS(g, add_tensor(g, "A", 9, TU_DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1), NULL), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"A\": rank 9 is outside 1..8");
}

CASE(tensor_rank_negative)
{
    G;
    OP_FAILS(g, add_tensor(g, "A", -1, NULL, NULL), DNNJIT_STATUS_BAD_PARAM, "rank -1 is outside 1..8");
}

CASE(tensor_zero_dim)
{
    G;
    OP_FAILS(g, add_tensor(g, "A", 3, TU_DIMS(2, 0, 4), NULL), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"A\": dim[1]=0 but dims must be >= 1");
}

CASE(tensor_negative_dim)
{
    G;
    OP_FAILS(g, add_tensor(g, "A", 2, TU_DIMS(2, -3), NULL), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"A\": dim[1]=-3 but dims must be >= 1");
}

CASE(tensor_negative_stride)
{
    G;
    OP_FAILS(g, add_tensor(g, "A", 2, TU_DIMS(2, 3), TU_DIMS(3, -1)), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"A\": stride[1]=-1 is negative");
}

CASE(tensor_dims_overflow)
{
    G;
    OP_FAILS(g, add_tensor(g, "A", 3, TU_DIMS(INT64_C(1) << 31, INT64_C(1) << 31, 4), NULL), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"A\": the product of the dims overflows int64");
    /* 2^61 elements fit in int64 but their bytes (8 each) do not. */
    OP_FAILS(g, add_tensor(g, "B", 2, TU_DIMS(INT64_C(1) << 30, INT64_C(1) << 31), NULL), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"B\": the product of the dims overflows int64");
}

CASE(tensor_strides_overflow)
{
    G;
    OP_FAILS(g, add_tensor(g, "A", 2, TU_DIMS(3, 2), TU_DIMS(INT64_MAX / 2, 1)), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"A\": dim[0]=3 with stride[0]=4611686018427387903 puts elements beyond the int64 range");
    /* Each axis alone fits; together they do not. */
    OP_FAILS(g, add_tensor(g, "B", 2, TU_DIMS(2, 2), TU_DIMS(INT64_C(1) << 59, INT64_C(1) << 59)),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"B\": dim[1]=2 with stride[1]=576460752303423488");
}

CASE(tensor_pass_by_value_not_scalar)
{
    G;
    dnnjit_tensor_t t;
    OP_FAILS(g,
             dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "alpha", .ndim = 2, .dim = TU_DIMS(1, 3),
                                                             .is_pass_by_value = true},
                                 &t),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"alpha\": dim[1]=3 but a pass-by-value scalar has all dims 1");
}

CASE(tensor_value_without_pass_by_value)
{
    G;
    dnnjit_tensor_t t;
    OP_FAILS(g,
             dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "c", .ndim = 1, .dim = TU_DIMS(1),
                                                             .has_value = true, .value = 2},
                                 &t),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"c\": has_value is set but the tensor is not pass-by-value");
}

CASE(tensor_duplicate_name)
{
    G;
    in(g, "A", 1, TU_DIMS(2));
    OP_FAILS(g, add_tensor(g, "A", 1, TU_DIMS(3), NULL), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"A\": another tensor already has this name");
}

CASE(tensor_duplicate_uid)
{
    G;
    dnnjit_tensor_t t;
    for (int i = 0; i < 2; i++) {
        dnnjit_status_t s = dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = i ? "B" : "A", .ndim = 1,
                                                                           .dim = TU_DIMS(1), .has_uid = true,
                                                                           .uid = 0},
                                                &t);
        if (i == 0)
            TU_OK(s);
        else
            OP_FAILS(g, s, DNNJIT_STATUS_BAD_PARAM, "tensor \"B\": uid 0 is already used by tensor \"A\"");
    }
    OP_FAILS(g,
             dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "C", .ndim = 1, .dim = TU_DIMS(1),
                                                             .has_uid = true, .uid = 0},
                                 &t),
             DNNJIT_STATUS_BAD_PARAM, "uid 0 is already used by tensor \"A\"");
}

CASE(tensor_null_dim)
{
    G;
    OP_FAILS(g, add_tensor(g, "A", 2, NULL, NULL), DNNJIT_STATUS_BAD_PARAM, "tensor \"A\": dim is NULL");
}

CASE(tensor_unknown_data_type)
{
    G;
    dnnjit_tensor_t t;
    OP_FAILS(g,
             dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "A", .ndim = 1, .dim = TU_DIMS(1),
                                                             .data_type = (dnnjit_data_type_t)42},
                                 &t),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"A\": unknown data type 42");
    OP_FAILS(g,
             dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.ndim = 1, .dim = TU_DIMS(1),
                                                             .data_type = (dnnjit_data_type_t)-1},
                                 &t),
             DNNJIT_STATUS_BAD_PARAM, "unknown data type -1");
}

/* ---- setters ---------------------------------------------------------------------------- */

CASE(set_dim_zero)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 3));
    FAILS(g, dnnjit_tensor_set_dim(g, a, 2, TU_DIMS(2, 0)), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_dim: tensor \"A\": dim[1]=0 but dims must be >= 1");
    FAILS(g, dnnjit_tensor_set_dim(g, a, 9, TU_DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1)), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_dim: tensor \"A\": rank 9 is outside 1..8");
    FAILS(g, dnnjit_tensor_set_dim(g, a, 2, NULL), DNNJIT_STATUS_BAD_PARAM, "tensor \"A\": dim is NULL");
    /* The tensor is as it was. */
    dnnjit_tensor_info_t info;
    TU_OK(dnnjit_tensor_get_info(g, a, &info));
    assert_int_equal(info.ndim, 2);
    assert_int_equal(info.dim[1], 3);
}

CASE(set_dim_pass_by_value)
{
    G;
    dnnjit_tensor_t t;
    TU_OK(dnnjit_graph_tensor(
        g, &(dnnjit_tensor_desc_t){.name = "s", .ndim = 1, .dim = TU_DIMS(1), .is_pass_by_value = true}, &t));
    FAILS(g, dnnjit_tensor_set_dim(g, t, 1, TU_DIMS(2)), DNNJIT_STATUS_BAD_PARAM,
          "tensor \"s\": dim[0]=2 but a pass-by-value scalar has all dims 1");
}

CASE(set_stride_bad)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 3));
    FAILS(g, dnnjit_tensor_set_stride(g, a, 3, TU_DIMS(3, 1, 1)), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_stride: tensor \"A\" has 2 dims but 3 strides were given");
    FAILS(g, dnnjit_tensor_set_stride(g, a, 2, TU_DIMS(-3, 1)), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_stride: tensor \"A\": stride[0]=-3 is negative");
    FAILS(g, dnnjit_tensor_set_stride(g, a, 2, TU_DIMS(1, INT64_MAX)), DNNJIT_STATUS_BAD_PARAM,
          "tensor \"A\": dim[1]=3 with stride[1]=9223372036854775807 puts elements beyond the int64 range");
    FAILS(g, dnnjit_tensor_set_stride(g, a, 2, NULL), DNNJIT_STATUS_BAD_PARAM, "tensor \"A\": stride is NULL");
}

CASE(set_name_bad)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(2));
    in(g, "B", 1, TU_DIMS(2));
    FAILS(g, dnnjit_tensor_set_name(g, a, "B"), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_name: tensor \"A\": another tensor is already named \"B\"");
    FAILS(g, dnnjit_tensor_set_name(g, a, ""), DNNJIT_STATUS_BAD_PARAM, "tensor \"A\": the new name is empty");
    FAILS(g, dnnjit_tensor_set_name(g, a, NULL), DNNJIT_STATUS_BAD_PARAM, "tensor \"A\": the new name is NULL");
}

CASE(set_uid_duplicate)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(2)), b = in(g, "B", 1, TU_DIMS(2));
    TU_OK(dnnjit_tensor_set_uid(g, a, -5));
    FAILS(g, dnnjit_tensor_set_uid(g, b, -5), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_uid: tensor \"B\": uid -5 is already used by tensor \"A\"");
}

CASE(set_output_false_on_input)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(2));
    FAILS(g, dnnjit_tensor_set_output(g, a, false), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_output: tensor \"A\" is a graph input; only an op's output can be made virtual");
}

CASE(set_data_type_unknown)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(2));
    FAILS(g, dnnjit_tensor_set_data_type(g, a, (dnnjit_data_type_t)11), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_data_type: tensor \"A\": unknown data type 11");
    FAILS(g, dnnjit_tensor_set_data_type(g, a, (dnnjit_data_type_t)-2), DNNJIT_STATUS_BAD_PARAM,
          "unknown data type -2");
}

/* Every call that takes a tensor id names the call and the id it does not know. */
CASE(unknown_tensor_ids)
{
    G;
    in(g, "A", 1, TU_DIMS(2));
    dnnjit_tensor_info_t info;
    int64_t uid;
    const dnnjit_tensor_t bad[] = {DNNJIT_TENSOR_NONE, 2, 0xffffffffu};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "tensor id %u is not in graph \"test\" (it has 1 tensors)", bad[i]);
        FAILS(g, dnnjit_tensor_get_info(g, bad[i], &info), DNNJIT_STATUS_BAD_PARAM, want);
        FAILS(g, dnnjit_tensor_get_uid(g, bad[i], &uid), DNNJIT_STATUS_BAD_PARAM, want);
        FAILS(g, dnnjit_tensor_set_output(g, bad[i], true), DNNJIT_STATUS_BAD_PARAM, want);
        FAILS(g, dnnjit_tensor_set_data_type(g, bad[i], DNNJIT_DATA_TYPE_HALF), DNNJIT_STATUS_BAD_PARAM, want);
        FAILS(g, dnnjit_tensor_set_uid(g, bad[i], 7), DNNJIT_STATUS_BAD_PARAM, want);
        FAILS(g, dnnjit_tensor_set_name(g, bad[i], "x"), DNNJIT_STATUS_BAD_PARAM, want);
        FAILS(g, dnnjit_tensor_set_dim(g, bad[i], 1, TU_DIMS(2)), DNNJIT_STATUS_BAD_PARAM, want);
        FAILS(g, dnnjit_tensor_set_stride(g, bad[i], 1, TU_DIMS(1)), DNNJIT_STATUS_BAD_PARAM, want);
    }
    FAILS(g, dnnjit_tensor_get_info(g, 1, NULL), DNNJIT_STATUS_BAD_PARAM, "dnnjit_tensor_get_info: out is NULL");
    FAILS(g, dnnjit_tensor_get_uid(g, 1, NULL), DNNJIT_STATUS_BAD_PARAM, "dnnjit_tensor_get_uid: uid is NULL");
}

/* ---- matmul ------------------------------------------------------------------------------ */

CASE(matmul_k_mismatch)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 3, TU_DIMS(4, 64, 128)), b = in(g, "B", 3, TU_DIMS(4, 64, 64)), c;
    OP_FAILS(g, mm(g, a, b, &c), DNNJIT_STATUS_INVALID_GRAPH,
             "matmul \"mm\": A.dim[2]=128 but B.dim[1]=64 (K must match)");
}

CASE(matmul_batch_mismatch)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 4, TU_DIMS(2, 3, 5, 6)), b = in(g, "B", 3, TU_DIMS(4, 6, 7)), c;
    OP_FAILS(g, mm(g, a, b, &c), DNNJIT_STATUS_INVALID_GRAPH,
             "matmul \"mm\": A.dim[1]=3 but B.dim[0]=4 (batch dims must match or be 1)");
}

CASE(matmul_rank1_inputs)
{
    G;
    dnnjit_tensor_t v = in(g, "v", 1, TU_DIMS(4)), m = in(g, "m", 2, TU_DIMS(4, 4)), c;
    OP_FAILS(g, mm(g, v, m, &c), DNNJIT_STATUS_INVALID_GRAPH,
             "matmul \"mm\": A (tensor \"v\") has 1 dim but needs at least 2 ([..., M, K])");
    OP_FAILS(g, mm(g, m, v, &c), DNNJIT_STATUS_INVALID_GRAPH,
             "matmul \"mm\": B (tensor \"v\") has 1 dim but needs at least 2 ([..., K, N])");
}

CASE(matmul_bad_compute_types)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 2)), c;
    const dnnjit_data_type_t bad[] = {DNNJIT_DATA_TYPE_BOOLEAN, DNNJIT_DATA_TYPE_INT8, DNNJIT_DATA_TYPE_FP8_E4M3,
                                      DNNJIT_DATA_TYPE_FP8_E5M2};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[128];
        snprintf(want, sizeof want, "matmul \"mm\": compute data type %s cannot accumulate",
                 dnnjit_data_type_name(bad[i]));
        OP_FAILS(g, dnnjit_graph_matmul(g, a, a, &(dnnjit_matmul_attr_t){.name = "mm", .compute_data_type = bad[i]},
                                        &c),
                 DNNJIT_STATUS_INVALID_GRAPH, want);
    }
    OP_FAILS(g,
             dnnjit_graph_matmul(g, a, a,
                                 &(dnnjit_matmul_attr_t){.name = "mm", .compute_data_type = (dnnjit_data_type_t)77},
                                 &c),
             DNNJIT_STATUS_BAD_PARAM, "matmul \"mm\": unknown compute data type 77");
}

/* The graph's default compute type is checked as well as the node's own. */
CASE(matmul_bad_graph_compute_type)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL,
                              &(dnnjit_graph_attr_t){.io_data_type = DNNJIT_DATA_TYPE_HALF,
                                                     .compute_data_type = DNNJIT_DATA_TYPE_BOOLEAN},
                              &g));
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 2)), c;
    OP_FAILS(g, mm(g, a, a, &c), DNNJIT_STATUS_INVALID_GRAPH, "matmul \"mm\": compute data type BOOLEAN");
    dnnjit_graph_destroy(g);
}

/* Ops that take exponentials, roots and quotients compute in a float of 16 bits or more;
 * pointwise ops compute in anything. */
CASE(bad_compute_types_of_other_ops)
{
    G;
    dnnjit_tensor_t x = in(g, "X", 2, TU_DIMS(4, 8)), s = in(g, "S", 2, TU_DIMS(1, 8)), y, m, v;
    dnnjit_tensor_t q = in(g, "Q", 4, TU_DIMS(1, 2, 3, 4));
    OP_FAILS(g,
             dnnjit_graph_softmax(g, x,
                                  &(dnnjit_softmax_attr_t){.name = "sm", .compute_data_type = DNNJIT_DATA_TYPE_INT32},
                                  &y, NULL, NULL),
             DNNJIT_STATUS_INVALID_GRAPH,
             "softmax \"sm\": compute data type INT32 is not a floating-point type of 16 bits or more");
    OP_FAILS(g,
             dnnjit_graph_layernorm(g, x, s, s,
                                    &(dnnjit_norm_attr_t){.name = "ln", .compute_data_type = DNNJIT_DATA_TYPE_BOOLEAN},
                                    &y, &m, &v),
             DNNJIT_STATUS_INVALID_GRAPH, "layernorm \"ln\": compute data type BOOLEAN is not a floating-point type");
    OP_FAILS(g,
             dnnjit_graph_sdpa(g, q, q, q,
                               &(dnnjit_sdpa_attr_t){.name = "attn", .compute_data_type = DNNJIT_DATA_TYPE_FP8_E4M3},
                               &y, NULL),
             DNNJIT_STATUS_INVALID_GRAPH, "sdpa \"attn\": compute data type FP8_E4M3 is not a floating-point type");
    OP_FAILS(g,
             dnnjit_graph_reduction(g, x,
                                    &(dnnjit_reduction_attr_t){.name = "r", .compute_data_type = DNNJIT_DATA_TYPE_INT8},
                                    &y),
             DNNJIT_STATUS_INVALID_GRAPH, "reduction \"r\": compute data type INT8 is not a floating-point type");
    OP_FAILS(g,
             dnnjit_graph_softmax(g, x,
                                  &(dnnjit_softmax_attr_t){.name = "sm", .compute_data_type = (dnnjit_data_type_t)50},
                                  &y, NULL, NULL),
             DNNJIT_STATUS_BAD_PARAM, "softmax \"sm\": unknown compute data type 50");
    /* Pointwise: an INT32 compute type is fine. */
    TU_OK(dnnjit_graph_pointwise(g,
                                 &(dnnjit_pointwise_attr_t){.name = "pw", .mode = DNNJIT_POINTWISE_ADD,
                                                            .compute_data_type = DNNJIT_DATA_TYPE_INT32},
                                 x, s, 0, &y));
}

/* A compute type that is not a data type at all, from a graph built behind the API's back,
 * is reported by validation rather than printed as a NULL name. */
CASE(corrupt_compute_type)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 2)), c;
    TU_OK(mm(g, a, a, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    g->nodes[0].compute_type = (dnnjit_data_type_t)99;
    VALIDATE_FAILS(g, "matmul \"mm\": unknown compute data type 99");
}

CASE(matmul_unknown_and_missing_inputs)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 2)), c;
    OP_FAILS(g, mm(g, a, 77, &c), DNNJIT_STATUS_BAD_PARAM,
             "matmul \"mm\": input B is tensor id 77, which is not in this graph");
    OP_FAILS(g, mm(g, DNNJIT_TENSOR_NONE, a, &c), DNNJIT_STATUS_BAD_PARAM, "matmul \"mm\": input A is missing");
    OP_FAILS(g, mm(g, a, a, NULL), DNNJIT_STATUS_BAD_PARAM, "matmul \"mm\": the pointer for output C is NULL");
}

CASE(duplicate_node_name)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 2)), c, d;
    TU_OK(mm(g, a, a, &c));
    OP_FAILS(g, mm(g, c, a, &d), DNNJIT_STATUS_BAD_PARAM, "matmul \"mm\": another node already has this name");
    TU_OK(pw(g, DNNJIT_POINTWISE_EXP, c, 0, 0, &d));
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_EXP, d, 0, 0, &d), DNNJIT_STATUS_BAD_PARAM,
             "pointwise \"pw\": another node already has this name");
}

/* ---- pointwise ------------------------------------------------------------------------------ */

CASE(pointwise_unknown_mode)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(2)), y;
    OP_FAILS(g, pw(g, (dnnjit_pointwise_mode_t)DNNJIT_POINTWISE_MODE_COUNT_, a, 0, 0, &y), DNNJIT_STATUS_BAD_PARAM,
             "pointwise \"pw\": unknown mode 49");
    OP_FAILS(g, pw(g, (dnnjit_pointwise_mode_t)-1, a, 0, 0, &y), DNNJIT_STATUS_BAD_PARAM,
             "pointwise \"pw\": unknown mode -1");
}

CASE(pointwise_wrong_input_counts)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(2)), y;
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_ADD, a, 0, 0, &y), DNNJIT_STATUS_BAD_PARAM,
             "pointwise \"pw\": mode ADD takes 2 inputs but IN_1 is missing");
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_RELU_FWD, a, a, 0, &y), DNNJIT_STATUS_BAD_PARAM,
             "pointwise \"pw\": mode RELU_FWD takes 1 input but IN_1 is given");
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_SQRT, a, 0, a, &y), DNNJIT_STATUS_BAD_PARAM,
             "mode SQRT takes 1 input but IN_2 is given");
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_BINARY_SELECT, a, a, 0, &y), DNNJIT_STATUS_BAD_PARAM,
             "pointwise \"pw\": mode BINARY_SELECT takes 3 inputs but IN_2 is missing");
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_MUL, a, a, a, &y), DNNJIT_STATUS_BAD_PARAM,
             "mode MUL takes 2 inputs but IN_2 is given");
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_EXP, 0, 0, 0, &y), DNNJIT_STATUS_BAD_PARAM,
             "mode EXP takes 1 input but IN_0 is missing");
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_RELU_BWD, 0, a, 0, &y), DNNJIT_STATUS_BAD_PARAM,
             "mode RELU_BWD takes 2 inputs but IN_0 is missing");
}

CASE(pointwise_softplus_beta_zero)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(2)), y;
    OP_FAILS(g,
             dnnjit_graph_pointwise(g,
                                    &(dnnjit_pointwise_attr_t){.name = "sp", .mode = DNNJIT_POINTWISE_SOFTPLUS_BWD,
                                                               .has_softplus_beta = true},
                                    a, a, 0, &y),
             DNNJIT_STATUS_INVALID_GRAPH, "pointwise \"sp\": softplus_beta is 0, and softplus divides by it");
    /* 0 alone is the default beta, 1. */
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "sp", .mode = DNNJIT_POINTWISE_SOFTPLUS_FWD}, a,
                                 0, 0, &y));
}

CASE(pointwise_broadcast_failure)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(4, 5)), b = in(g, "B", 2, TU_DIMS(3, 5)), y;
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_ADD, a, b, 0, &y), DNNJIT_STATUS_INVALID_GRAPH,
             "pointwise \"pw\": IN_1.dim[0]=3 does not broadcast against IN_0.dim[0]=4 (tensors \"B\" and \"A\")");
    dnnjit_tensor_t v = in(g, "v", 1, TU_DIMS(4));
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_SUB, a, v, 0, &y), DNNJIT_STATUS_INVALID_GRAPH,
             "IN_1.dim[0]=4 does not broadcast against IN_0.dim[1]=5");
}

/* With three inputs, the clash is reported against the input that set the dim. */
CASE(pointwise_broadcast_failure_names_the_clashing_input)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(1, 4)), b = in(g, "B", 2, TU_DIMS(3, 4));
    dnnjit_tensor_t c = in(g, "C", 2, TU_DIMS(5, 4));
    dnnjit_tensor_t y;
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_BINARY_SELECT, a, b, c, &y), DNNJIT_STATUS_INVALID_GRAPH,
             "pointwise \"pw\": IN_2.dim[0]=5 does not broadcast against IN_1.dim[0]=3 (tensors \"C\" and \"B\")");
    /* IN_0 of lower rank than the others: no negative dim index in the message. */
    dnnjit_tensor_t v = in(g, "v", 1, TU_DIMS(4));
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_BINARY_SELECT, v, b, c, &y), DNNJIT_STATUS_INVALID_GRAPH,
             "IN_2.dim[0]=5 does not broadcast against IN_1.dim[0]=3");
}

/* Inputs that fit can broadcast or multiply into an output that does not. */
CASE(inferred_dims_overflow)
{
    G;
    const int64_t big = INT64_C(1) << 32;
    dnnjit_tensor_t col = in(g, "col", 2, TU_DIMS(big, 1)), row = in(g, "row", 2, TU_DIMS(1, big)), y;
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_ADD, col, row, 0, &y), DNNJIT_STATUS_INVALID_GRAPH,
             "pointwise \"pw\": output OUT_0 would have dims [4294967296,4294967296]");
    OP_FAILS(g, mm(g, col, row, &y), DNNJIT_STATUS_INVALID_GRAPH,
             "matmul \"mm\": output C would have dims [4294967296,4294967296]");
    dnnjit_tensor_t q = in(g, "Q", 4, TU_DIMS(1, 1, big, 1)), k = in(g, "K", 4, TU_DIMS(1, 1, 1, 1));
    dnnjit_tensor_t v = in(g, "V", 4, TU_DIMS(1, 1, 1, big));
    OP_FAILS(g, dnnjit_graph_sdpa(g, q, k, v, &(dnnjit_sdpa_attr_t){.name = "attn"}, &y, NULL),
             DNNJIT_STATUS_INVALID_GRAPH, "sdpa \"attn\": output O would have dims [1,1,4294967296,4294967296]");
}

CASE(pointwise_null_attr)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(2)), y;
    OP_FAILS(g, dnnjit_graph_pointwise(g, NULL, a, 0, 0, &y), DNNJIT_STATUS_BAD_PARAM,
             "dnnjit_graph_pointwise: attr is NULL");
    OP_FAILS(g, pw(g, DNNJIT_POINTWISE_EXP, a, 0, 0, NULL), DNNJIT_STATUS_BAD_PARAM,
             "pointwise \"pw\": the pointer for output OUT_0 is NULL");
}

CASE(bias_broadcast_failure)
{
    G;
    dnnjit_tensor_t x = in(g, "X", 2, TU_DIMS(4, 5)), b = in(g, "b", 1, TU_DIMS(4)), y;
    OP_FAILS(g, dnnjit_graph_bias(g, "bias", x, b, &y), DNNJIT_STATUS_INVALID_GRAPH,
             "pointwise \"bias\": IN_1.dim[0]=4 does not broadcast against IN_0.dim[1]=5");
    OP_FAILS(g, dnnjit_graph_bias(g, "bias", x, DNNJIT_TENSOR_NONE, &y), DNNJIT_STATUS_BAD_PARAM,
             "mode ADD takes 2 inputs but IN_1 is missing");
}

/* ---- reduction ---------------------------------------------------------------------------- */

CASE(reduction_axes_out_of_range)
{
    G;
    dnnjit_tensor_t x = in(g, "X", 3, TU_DIMS(2, 3, 4)), y;
    OP_FAILS(g, dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.name = "r", .axes = 0x9}, &y),
             DNNJIT_STATUS_INVALID_GRAPH,
             "reduction \"r\": axes mask 0x9 names axis 3 but X (tensor \"X\") has 3 dims");
    OP_FAILS(g, dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.name = "r", .axes = 0x80000000u}, &y),
             DNNJIT_STATUS_INVALID_GRAPH, "names axis 31 but X");
}

CASE(reduction_bad_mode_and_attr)
{
    G;
    dnnjit_tensor_t x = in(g, "X", 1, TU_DIMS(4)), y;
    OP_FAILS(g,
             dnnjit_graph_reduction(
                 g, x, &(dnnjit_reduction_attr_t){.name = "r", .mode = DNNJIT_REDUCTION_MODE_COUNT_}, &y),
             DNNJIT_STATUS_BAD_PARAM, "reduction \"r\": unknown mode 8");
    OP_FAILS(g, dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.mode = (dnnjit_reduction_mode_t)-3}, &y),
             DNNJIT_STATUS_BAD_PARAM, "unknown mode -3");
    OP_FAILS(g, dnnjit_graph_reduction(g, x, NULL, &y), DNNJIT_STATUS_BAD_PARAM,
             "dnnjit_graph_reduction: attr is NULL");
    OP_FAILS(g, dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.name = "r"}, NULL), DNNJIT_STATUS_BAD_PARAM,
             "reduction \"r\": the pointer for output Y is NULL");
}

CASE(reduction_fixed_output_wrong_rank)
{
    G;
    dnnjit_tensor_t x = in(g, "X", 3, TU_DIMS(2, 3, 4)), y;
    TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.name = "r"}, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    TU_OK(dnnjit_tensor_set_dim(g, y, 2, TU_DIMS(2, 1)));
    VALIDATE_FAILS(g, "reduction \"r\": Y (tensor \"r::Y\") has 2 dims but X has 3 (a reduction keeps the rank)");
}

CASE(reduction_fixed_output_wrong_dim)
{
    G;
    dnnjit_tensor_t x = in(g, "X", 3, TU_DIMS(2, 3, 4)), y;
    TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.name = "r"}, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    TU_OK(dnnjit_tensor_set_dim(g, y, 3, TU_DIMS(2, 2, 1)));
    VALIDATE_FAILS(g, "reduction \"r\": Y.dim[1]=2 but must be 1 or X.dim[1]=3");
}

/* Explicit axes and fixed output dims that disagree. */
CASE(reduction_fixed_output_disagrees_with_axes)
{
    G;
    dnnjit_tensor_t x = in(g, "X", 2, TU_DIMS(2, 3)), y;
    TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.name = "r", .axes = 0x1}, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    TU_OK(dnnjit_tensor_set_dim(g, y, 2, TU_DIMS(2, 1)));
    VALIDATE_FAILS(g, "reduction \"r\": output Y (tensor \"r::Y\") has dims [2,1] but the inputs give [1,3]");
}

/* ---- softmax --------------------------------------------------------------------------------- */

CASE(softmax_unknown_stats)
{
    G;
    dnnjit_tensor_t p = in(g, "P", 2, TU_DIMS(2, 3)), s, s0, s1;
    OP_FAILS(g,
             dnnjit_graph_softmax(g, p, &(dnnjit_softmax_attr_t){.name = "sm", .stats = (dnnjit_softmax_stats_t)3},
                                  &s, &s0, &s1),
             DNNJIT_STATUS_BAD_PARAM, "softmax \"sm\": unknown stats kind 3");
    OP_FAILS(g,
             dnnjit_graph_softmax(g, p, &(dnnjit_softmax_attr_t){.name = "sm", .stats = (dnnjit_softmax_stats_t)-1},
                                  &s, &s0, &s1),
             DNNJIT_STATUS_BAD_PARAM, "unknown stats kind -1");
}

CASE(softmax_missing_stats_pointers)
{
    G;
    dnnjit_tensor_t p = in(g, "P", 2, TU_DIMS(2, 3)), s, s0;
    OP_FAILS(g,
             dnnjit_graph_softmax(g, p,
                                  &(dnnjit_softmax_attr_t){.name = "sm", .stats = DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP},
                                  &s, NULL, NULL),
             DNNJIT_STATUS_BAD_PARAM, "softmax \"sm\": the pointer for output STATS_0 is NULL");
    OP_FAILS(g,
             dnnjit_graph_softmax(g, p,
                                  &(dnnjit_softmax_attr_t){.name = "sm", .stats = DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP},
                                  &s, &s0, NULL),
             DNNJIT_STATUS_BAD_PARAM, "softmax \"sm\": the pointer for output STATS_1 is NULL");
    OP_FAILS(g, dnnjit_graph_softmax(g, p, NULL, NULL, NULL, NULL), DNNJIT_STATUS_BAD_PARAM,
             "the pointer for output S is NULL");
}

CASE(softmax_backward_shape_mismatch)
{
    G;
    dnnjit_tensor_t y = in(g, "Y", 3, TU_DIMS(2, 4, 8)), dy = in(g, "DY", 3, TU_DIMS(2, 5, 8));
    dnnjit_tensor_t dy2 = in(g, "DY2", 2, TU_DIMS(4, 8)), dx;
    const dnnjit_softmax_attr_t at = {.name = "smb"};
    OP_FAILS(g, dnnjit_graph_softmax_backward(g, y, dy, &at, &dx), DNNJIT_STATUS_INVALID_GRAPH,
             "softmax_backward \"smb\": DY.dim[1]=5 but Y.dim[1]=4 (must match)");
    OP_FAILS(g, dnnjit_graph_softmax_backward(g, y, dy2, &at, &dx), DNNJIT_STATUS_INVALID_GRAPH,
             "softmax_backward \"smb\": DY (tensor \"DY2\") has 2 dims but Y has 3");
    OP_FAILS(g, dnnjit_graph_softmax_backward(g, y, DNNJIT_TENSOR_NONE, &at, &dx), DNNJIT_STATUS_BAD_PARAM,
             "softmax_backward \"smb\": input DY is missing");
}

/* ---- norms ------------------------------------------------------------------------------------- */

typedef struct ln_fixture {
    dnnjit_tensor_t x, scale, bias;
} ln_fixture_t;

static ln_fixture_t ln_inputs(dnnjit_graph_t g)
{
    return (ln_fixture_t){in(g, "X", 3, TU_DIMS(4, 6, 8)), in(g, "SCALE", 3, TU_DIMS(1, 6, 8)),
                          in(g, "BIAS", 3, TU_DIMS(1, 6, 8))};
}

static dnnjit_status_t ln(dnnjit_graph_t g, dnnjit_tensor_t x, dnnjit_tensor_t scale, dnnjit_tensor_t bias,
                          dnnjit_norm_attr_t attr)
{
    dnnjit_tensor_t y, m, v;
    attr.name = "ln";
    return dnnjit_graph_layernorm(g, x, scale, bias, &attr, &y, &m, &v);
}

CASE(layernorm_unknown_phase)
{
    G;
    ln_fixture_t f = ln_inputs(g);
    OP_FAILS(g, ln(g, f.x, f.scale, f.bias, (dnnjit_norm_attr_t){.phase = (dnnjit_norm_phase_t)5}),
             DNNJIT_STATUS_BAD_PARAM, "layernorm \"ln\": unknown phase 5");
    dnnjit_tensor_t y, v;
    OP_FAILS(g,
             dnnjit_graph_rmsnorm(g, f.x, f.scale, 0, &(dnnjit_norm_attr_t){.phase = (dnnjit_norm_phase_t)-1}, &y, &v),
             DNNJIT_STATUS_BAD_PARAM, "rmsnorm \"\": unknown phase -1");
}

CASE(layernorm_scale_wrong_on_normalised_axis)
{
    G;
    ln_fixture_t f = ln_inputs(g);
    dnnjit_tensor_t s = in(g, "S", 3, TU_DIMS(1, 6, 7));
    OP_FAILS(g, ln(g, f.x, s, f.bias, (dnnjit_norm_attr_t){0}), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm \"ln\": SCALE.dim[2]=7 but X.dim[2]=8 (axis 2 is normalised)");
}

CASE(layernorm_scale_not_1_on_other_axis)
{
    G;
    ln_fixture_t f = ln_inputs(g);
    dnnjit_tensor_t s = in(g, "S", 3, TU_DIMS(4, 6, 8));
    OP_FAILS(g, ln(g, f.x, s, f.bias, (dnnjit_norm_attr_t){0}), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm \"ln\": SCALE.dim[0]=4 but must be 1 (axis 0 is not normalised)");
}

CASE(layernorm_bias_wrong_rank)
{
    G;
    ln_fixture_t f = ln_inputs(g);
    dnnjit_tensor_t b = in(g, "B2", 2, TU_DIMS(6, 8));
    OP_FAILS(g, ln(g, f.x, f.scale, b, (dnnjit_norm_attr_t){0}), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm \"ln\": BIAS (tensor \"B2\") has 2 dims but X has 3");
}

CASE(layernorm_bias_missing)
{
    G;
    ln_fixture_t f = ln_inputs(g);
    OP_FAILS(g, ln(g, f.x, f.scale, DNNJIT_TENSOR_NONE, (dnnjit_norm_attr_t){0}), DNNJIT_STATUS_BAD_PARAM,
             "layernorm \"ln\": input BIAS is missing");
    OP_FAILS(g, ln(g, f.x, DNNJIT_TENSOR_NONE, f.bias, (dnnjit_norm_attr_t){0}), DNNJIT_STATUS_BAD_PARAM,
             "layernorm \"ln\": input SCALE is missing");
}

CASE(layernorm_norm_axes_out_of_range)
{
    G;
    ln_fixture_t f = ln_inputs(g);
    OP_FAILS(g, ln(g, f.x, f.scale, f.bias, (dnnjit_norm_attr_t){.norm_axes = 4}), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm \"ln\": norm_axes=4 but X (tensor \"X\") has 3 dims");
    OP_FAILS(g, ln(g, f.x, f.scale, f.bias, (dnnjit_norm_attr_t){.norm_axes = -1}), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm \"ln\": norm_axes=-1 but X (tensor \"X\") has 3 dims");
}

CASE(layernorm_rank1_default_axes)
{
    G;
    dnnjit_tensor_t x = in(g, "x1", 1, TU_DIMS(8)), s = in(g, "s1", 1, TU_DIMS(8));
    OP_FAILS(g, ln(g, x, s, s, (dnnjit_norm_attr_t){0}), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm \"ln\": X (tensor \"x1\") has 1 dim; normalising every axis but the first needs at least 2");
    /* With norm_axes = 1 it is fine. */
    TU_OK(ln(g, x, s, s, (dnnjit_norm_attr_t){.norm_axes = 1}));
}

CASE(layernorm_epsilon_not_scalar)
{
    G;
    ln_fixture_t f = ln_inputs(g);
    dnnjit_tensor_t eps = in(g, "eps", 1, TU_DIMS(2));
    OP_FAILS(g, ln(g, f.x, f.scale, f.bias, (dnnjit_norm_attr_t){.epsilon = eps}), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm \"ln\": EPSILON (tensor \"eps\") must hold one element");
    OP_FAILS(g, ln(g, f.x, f.scale, f.bias, (dnnjit_norm_attr_t){.epsilon = 40}), DNNJIT_STATUS_BAD_PARAM,
             "layernorm \"ln\": input EPSILON is tensor id 40, which is not in this graph");
}

CASE(layernorm_training_needs_stats_pointers)
{
    G;
    ln_fixture_t f = ln_inputs(g);
    dnnjit_tensor_t y, m;
    const dnnjit_norm_attr_t at = {.name = "ln", .phase = DNNJIT_NORM_PHASE_TRAINING};
    OP_FAILS(g, dnnjit_graph_layernorm(g, f.x, f.scale, f.bias, &at, &y, NULL, NULL), DNNJIT_STATUS_BAD_PARAM,
             "layernorm \"ln\": the pointer for output MEAN is NULL");
    OP_FAILS(g, dnnjit_graph_layernorm(g, f.x, f.scale, f.bias, &at, &y, &m, NULL), DNNJIT_STATUS_BAD_PARAM,
             "layernorm \"ln\": the pointer for output INV_VARIANCE is NULL");
    OP_FAILS(g, dnnjit_graph_rmsnorm(g, f.x, f.scale, f.bias, &at, &y, NULL), DNNJIT_STATUS_BAD_PARAM,
             "rmsnorm \"ln\": the pointer for output INV_VARIANCE is NULL");
}

CASE(rmsnorm_scale_wrong)
{
    G;
    ln_fixture_t f = ln_inputs(g);
    dnnjit_tensor_t s = in(g, "S", 3, TU_DIMS(1, 1, 8)), y;
    OP_FAILS(g, dnnjit_graph_rmsnorm(g, f.x, s, DNNJIT_TENSOR_NONE, &(dnnjit_norm_attr_t){.name = "rms"}, &y, NULL),
             DNNJIT_STATUS_INVALID_GRAPH, "rmsnorm \"rms\": SCALE.dim[1]=1 but X.dim[1]=6 (axis 1 is normalised)");
}

typedef struct bwd_fixture {
    dnnjit_tensor_t dy, x, scale, mean, inv;
} bwd_fixture_t;

static bwd_fixture_t bwd_inputs(dnnjit_graph_t g)
{
    return (bwd_fixture_t){in(g, "DY", 3, TU_DIMS(4, 6, 8)), in(g, "X", 3, TU_DIMS(4, 6, 8)),
                           in(g, "SCALE", 3, TU_DIMS(1, 6, 8)), in(g, "MEAN", 3, TU_DIMS(4, 1, 1)),
                           in(g, "INV", 3, TU_DIMS(4, 1, 1))};
}

static dnnjit_status_t lnb(dnnjit_graph_t g, bwd_fixture_t f)
{
    dnnjit_tensor_t dx, ds, db;
    return dnnjit_graph_layernorm_backward(g, f.dy, f.x, f.scale, f.mean, f.inv, &(dnnjit_norm_attr_t){.name = "lnb"},
                                           &dx, &ds, &db);
}

CASE(layernorm_backward_stats_wrong)
{
    G;
    bwd_fixture_t f = bwd_inputs(g);
    bwd_fixture_t bad = f;
    bad.mean = in(g, "M2", 3, TU_DIMS(4, 6, 1));
    OP_FAILS(g, lnb(g, bad), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm_backward \"lnb\": MEAN.dim[1]=6 but must be 1 (axis 1 is normalised)");
    bad = f;
    bad.inv = in(g, "I2", 3, TU_DIMS(3, 1, 1));
    OP_FAILS(g, lnb(g, bad), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm_backward \"lnb\": INV_VARIANCE.dim[0]=3 but X.dim[0]=4 (axis 0 is not normalised)");
}

CASE(layernorm_backward_dy_mismatch)
{
    G;
    bwd_fixture_t f = bwd_inputs(g);
    f.dy = in(g, "DY2", 3, TU_DIMS(4, 6, 9));
    OP_FAILS(g, lnb(g, f), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm_backward \"lnb\": DY.dim[2]=9 but X.dim[2]=8 (must match)");
}

CASE(layernorm_backward_scale_wrong)
{
    G;
    bwd_fixture_t f = bwd_inputs(g);
    f.scale = in(g, "S2", 3, TU_DIMS(1, 6, 4));
    OP_FAILS(g, lnb(g, f), DNNJIT_STATUS_INVALID_GRAPH,
             "layernorm_backward \"lnb\": SCALE.dim[2]=4 but X.dim[2]=8 (axis 2 is normalised)");
}

CASE(norm_backward_missing_pointers_and_inputs)
{
    G;
    bwd_fixture_t f = bwd_inputs(g);
    dnnjit_tensor_t dx, ds;
    const dnnjit_norm_attr_t at = {.name = "b"};
    OP_FAILS(g, dnnjit_graph_layernorm_backward(g, f.dy, f.x, f.scale, f.mean, f.inv, &at, &dx, NULL, NULL),
             DNNJIT_STATUS_BAD_PARAM, "layernorm_backward \"b\": the pointer for output DSCALE is NULL");
    OP_FAILS(g, dnnjit_graph_rmsnorm_backward(g, f.dy, f.x, f.scale, f.inv, &at, NULL, &ds, NULL),
             DNNJIT_STATUS_BAD_PARAM, "rmsnorm_backward \"b\": the pointer for output DX is NULL");
    OP_FAILS(g, dnnjit_graph_layernorm_backward(g, f.dy, f.x, f.scale, 0, f.inv, &at, &dx, &ds, NULL),
             DNNJIT_STATUS_BAD_PARAM, "layernorm_backward \"b\": input MEAN is missing");
}

CASE(rmsnorm_backward_inv_variance_wrong)
{
    G;
    bwd_fixture_t f = bwd_inputs(g);
    dnnjit_tensor_t inv = in(g, "I2", 2, TU_DIMS(4, 1)), dx, ds;
    OP_FAILS(g,
             dnnjit_graph_rmsnorm_backward(g, f.dy, f.x, f.scale, inv, &(dnnjit_norm_attr_t){.name = "rb"}, &dx, &ds,
                                           NULL),
             DNNJIT_STATUS_INVALID_GRAPH,
             "rmsnorm_backward \"rb\": INV_VARIANCE (tensor \"I2\") has 2 dims but X has 3");
    OP_FAILS(g,
             dnnjit_graph_rmsnorm_backward(g, f.dy, f.x, f.scale, f.inv,
                                           &(dnnjit_norm_attr_t){.name = "rb", .norm_axes = 9}, &dx, &ds, NULL),
             DNNJIT_STATUS_INVALID_GRAPH, "rmsnorm_backward \"rb\": norm_axes=9 but X (tensor \"X\") has 3 dims");
}

/* ---- sdpa ------------------------------------------------------------------------------------- */

typedef struct attn_inputs {
    dnnjit_tensor_t q, k, v;
} attn_inputs_t;

static attn_inputs_t attn_inputs(dnnjit_graph_t g, int qrank, const int64_t *qd, const int64_t *kd, const int64_t *vd)
{
    return (attn_inputs_t){in(g, "Q", qrank, qd), in(g, "K", 4, kd), in(g, "V", 4, vd)};
}

static dnnjit_status_t attn(dnnjit_graph_t g, attn_inputs_t t)
{
    dnnjit_tensor_t o, st;
    return dnnjit_graph_sdpa(g, t.q, t.k, t.v, &(dnnjit_sdpa_attr_t){.name = "attn", .generate_stats = true}, &o,
                             &st);
}

CASE(sdpa_rank)
{
    G;
    attn_inputs_t t = attn_inputs(g, 3, TU_DIMS(2, 16, 8), TU_DIMS(2, 1, 16, 8), TU_DIMS(2, 1, 16, 8));
    OP_FAILS(g, attn(g, t), DNNJIT_STATUS_INVALID_GRAPH,
             "sdpa \"attn\": Q (tensor \"Q\") has 3 dims but needs 4 ([b, h, s, d])");
}

CASE(sdpa_batch_mismatch)
{
    G;
    attn_inputs_t t = attn_inputs(g, 4, TU_DIMS(2, 4, 16, 8), TU_DIMS(3, 4, 16, 8), TU_DIMS(2, 4, 16, 8));
    OP_FAILS(g, attn(g, t), DNNJIT_STATUS_INVALID_GRAPH, "sdpa \"attn\": K.dim[0]=3 but Q.dim[0]=2 (batch must match)");
}

CASE(sdpa_heads_not_grouped)
{
    G;
    attn_inputs_t t = attn_inputs(g, 4, TU_DIMS(2, 8, 16, 8), TU_DIMS(2, 3, 16, 8), TU_DIMS(2, 8, 16, 8));
    OP_FAILS(g, attn(g, t), DNNJIT_STATUS_INVALID_GRAPH, "sdpa \"attn\": Q.dim[1]=8 is not a multiple of K.dim[1]=3");
}

CASE(sdpa_value_heads_not_grouped)
{
    G;
    attn_inputs_t t = attn_inputs(g, 4, TU_DIMS(2, 8, 16, 8), TU_DIMS(2, 4, 16, 8), TU_DIMS(2, 16, 16, 8));
    OP_FAILS(g, attn(g, t), DNNJIT_STATUS_INVALID_GRAPH,
             "sdpa \"attn\": Q.dim[1]=8 is not a multiple of V.dim[1]=16");
}

CASE(sdpa_head_dim_mismatch)
{
    G;
    attn_inputs_t t = attn_inputs(g, 4, TU_DIMS(2, 4, 16, 8), TU_DIMS(2, 4, 16, 16), TU_DIMS(2, 4, 16, 8));
    OP_FAILS(g, attn(g, t), DNNJIT_STATUS_INVALID_GRAPH,
             "sdpa \"attn\": K.dim[3]=16 but Q.dim[3]=8 (head dim must match)");
}

CASE(sdpa_kv_length_mismatch)
{
    G;
    attn_inputs_t t = attn_inputs(g, 4, TU_DIMS(2, 4, 16, 8), TU_DIMS(2, 4, 10, 8), TU_DIMS(2, 4, 9, 8));
    OP_FAILS(g, attn(g, t), DNNJIT_STATUS_INVALID_GRAPH,
             "sdpa \"attn\": V.dim[2]=9 but K.dim[2]=10 (key/value sequence lengths must match)");
}

CASE(sdpa_bad_scale_and_pointers)
{
    G;
    dnnjit_tensor_t q = in(g, "Q", 4, TU_DIMS(1, 1, 2, 4)), o, st;
    const double bad[] = {INFINITY, -INFINITY, NAN};
    for (int i = 0; i < 3; i++)
        OP_FAILS(g,
                 dnnjit_graph_sdpa(g, q, q, q,
                                   &(dnnjit_sdpa_attr_t){.name = "attn", .has_attn_scale = true, .attn_scale = bad[i]},
                                   &o, NULL),
                 DNNJIT_STATUS_INVALID_GRAPH, "sdpa \"attn\": attn_scale is not finite");
    OP_FAILS(g, dnnjit_graph_sdpa(g, q, q, q, &(dnnjit_sdpa_attr_t){.name = "attn", .generate_stats = true}, &o, NULL),
             DNNJIT_STATUS_BAD_PARAM, "sdpa \"attn\": the pointer for output STATS is NULL");
    OP_FAILS(g, dnnjit_graph_sdpa(g, q, q, DNNJIT_TENSOR_NONE, NULL, &o, &st), DNNJIT_STATUS_BAD_PARAM,
             "sdpa \"\": input V is missing");
}

/* ---- whole-graph validation ---------------------------------------------------------------------- */

CASE(empty_graph)
{
    G;
    VALIDATE_FAILS(g, "graph \"test\" has no nodes");
    in(g, "A", 1, TU_DIMS(1));
    VALIDATE_FAILS(g, "graph \"test\" has no nodes");
}

CASE(virtual_tensor_not_read)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 2)), c;
    TU_OK(mm(g, a, a, &c));
    VALIDATE_FAILS(g, "tensor \"mm::C\" is virtual but no node reads it (mark it as an output, or drop it)");
    /* Unused softmax statistics count too. */
    dnnjit_tensor_t s, lse;
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_graph_softmax(g, c, &(dnnjit_softmax_attr_t){.name = "sm", .stats = DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP},
                               &s, &lse, NULL));
    TU_OK(dnnjit_tensor_set_output(g, s, true));
    VALIDATE_FAILS(g, "tensor \"sm::STATS_0\" is virtual but no node reads it");
    TU_OK(dnnjit_tensor_set_output(g, lse, true));
    TU_OK(dnnjit_graph_validate(g));
}

CASE(input_not_read)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 2)), c;
    in(g, "unused", 1, TU_DIMS(3));
    TU_OK(mm(g, a, a, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    VALIDATE_FAILS(g, "tensor \"unused\" is an input that no node reads");
}

CASE(virtual_input_has_no_producer)
{
    G;
    dnnjit_tensor_t v, c;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "V", .ndim = 2, .dim = TU_DIMS(2, 2),
                                                          .is_virtual = true},
                              &v));
    TU_OK(mm(g, v, v, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    VALIDATE_FAILS(g, "tensor \"V\" is virtual but no node produces it");
}

CASE(output_stride_zero_overlaps)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(3, 4)), b = in(g, "B", 2, TU_DIMS(4, 5)), c;
    TU_OK(mm(g, a, b, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_tensor_set_stride(g, c, 2, TU_DIMS(0, 1)));
    VALIDATE_FAILS(g, "tensor \"mm::C\" is written by node \"mm\" but its elements overlap: dim[0]=3 with stride[0]=0");
    /* Virtual, the same strides are harmless: nothing is written. */
    dnnjit_tensor_t y;
    TU_OK(pw(g, DNNJIT_POINTWISE_EXP, c, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, c, false));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    TU_OK(dnnjit_graph_validate(g));
}

CASE(output_strides_overlap)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(3, 4)), b = in(g, "B", 2, TU_DIMS(4, 5)), c;
    TU_OK(mm(g, a, b, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    /* Rows 3 apart hold 5 elements each: row i's last elements are row i+1's first. */
    TU_OK(dnnjit_tensor_set_stride(g, c, 2, TU_DIMS(3, 1)));
    VALIDATE_FAILS(g, "tensor \"mm::C\" is written by node \"mm\" but its elements overlap: dim[0]=3 with stride[0]=3");
    /* Inputs may overlap: they are only read. */
    TU_OK(dnnjit_tensor_set_stride(g, c, 2, TU_DIMS(5, 1)));
    TU_OK(dnnjit_tensor_set_stride(g, a, 2, TU_DIMS(0, 1)));
    TU_OK(dnnjit_graph_validate(g));
}

CASE(fixed_output_dims_disagree)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(3, 4)), b = in(g, "B", 2, TU_DIMS(4, 5)), c;
    TU_OK(mm(g, a, b, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_tensor_set_dim(g, c, 2, TU_DIMS(3, 6)));
    VALIDATE_FAILS(g, "matmul \"mm\": output C (tensor \"mm::C\") has dims [3,6] but the inputs give [3,5]");
}

/* Strides fixed for one rank do not carry over when the inputs change the output's rank. */
CASE(fixed_output_strides_of_another_rank)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 3, TU_DIMS(2, 3, 4)), b = in(g, "B", 2, TU_DIMS(4, 5)), c;
    TU_OK(mm(g, a, b, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_tensor_set_stride(g, c, 3, TU_DIMS(16, 5, 1)));
    TU_OK(dnnjit_graph_validate(g));
    TU_OK(dnnjit_tensor_set_dim(g, a, 2, TU_DIMS(3, 4)));
    VALIDATE_FAILS(g, "matmul \"mm\": output C (tensor \"mm::C\") has 3 strides set but the inputs give 2 dims [3,5]");
}

CASE(input_changed_after_op)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(3, 4)), b = in(g, "B", 2, TU_DIMS(4, 5)), c;
    TU_OK(mm(g, a, b, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_graph_validate(g));
    TU_OK(dnnjit_tensor_set_dim(g, b, 2, TU_DIMS(6, 5)));
    VALIDATE_FAILS(g, "matmul \"mm\": A.dim[1]=4 but B.dim[0]=6 (K must match)");
}

CASE(boolean_input_to_matmul)
{
    G;
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(2, 2), NULL, DNNJIT_DATA_TYPE_BOOLEAN), c;
    TU_OK(mm(g, a, in(g, "B", 2, TU_DIMS(2, 2)), &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    VALIDATE_FAILS(g, "matmul \"mm\": A (tensor \"A\") is BOOLEAN but must be a floating-point type");
}

CASE(integer_input_to_softmax)
{
    G;
    dnnjit_tensor_t p = tu_tensor(g, "P", 2, TU_DIMS(2, 2), NULL, DNNJIT_DATA_TYPE_INT64), s;
    TU_OK(dnnjit_graph_softmax(g, p, &(dnnjit_softmax_attr_t){.name = "sm"}, &s, NULL, NULL));
    TU_OK(dnnjit_tensor_set_output(g, s, true));
    VALIDATE_FAILS(g, "softmax \"sm\": P (tensor \"P\") is INT64 but must be a floating-point type");
}

CASE(no_data_type)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL, NULL, &g));
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 2)), c;
    TU_OK(mm(g, a, a, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    VALIDATE_FAILS(g, "tensor \"A\" has no data type (set one, or the graph's io_data_type)");
    dnnjit_graph_destroy(g);
}

/* A failed op call leaves a graph that still validates, and the next op call works. */
CASE(failed_op_leaves_graph_usable)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(3, 4)), b = in(g, "B", 2, TU_DIMS(4, 5)), c, d;
    TU_OK(mm(g, a, b, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_graph_validate(g));
    OP_FAILS(g, dnnjit_graph_matmul(g, c, c, &(dnnjit_matmul_attr_t){.name = "bad"}, &d), DNNJIT_STATUS_INVALID_GRAPH,
             "matmul \"bad\": A.dim[1]=5 but B.dim[0]=3 (K must match)");
    TU_OK(dnnjit_graph_validate(g));
    /* A success does not clear the last error. */
    assert_non_null(strstr(dnnjit_graph_last_error(g), "K must match"));
    dnnjit_tensor_t found;
    TU_FAILS(dnnjit_graph_find_tensor_by_name(g, "bad::C", &found), DNNJIT_STATUS_NOT_FOUND, "bad::C");
    /* The name of the failed node is free again. */
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "bad"}, &d));
    TU_OK(dnnjit_tensor_set_output(g, d, true));
    TU_OK(dnnjit_graph_validate(g));
}

/* Automatic names do not clash with names the caller chose. */
CASE(automatic_names_avoid_user_names)
{
    G;
    dnnjit_tensor_t a = in(g, "t2", 2, TU_DIMS(2, 2));
    dnnjit_tensor_t b = in(g, NULL, 2, TU_DIMS(2, 2));
    dnnjit_tensor_info_t ib;
    TU_OK(dnnjit_tensor_get_info(g, b, &ib));
    assert_string_equal(ib.name, "t3"); /* "t2", from its id, is taken */
    dnnjit_tensor_t c, d;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "1"}, &c));
    /* The second node's index is 1, the name the caller gave the first. */
    TU_OK(dnnjit_graph_matmul(g, c, b, NULL, &d));
    assert_string_equal(g->nodes[1].name, "2");
    dnnjit_tensor_info_t id;
    TU_OK(dnnjit_tensor_get_info(g, d, &id));
    assert_string_equal(id.name, "2::C");
    TU_OK(dnnjit_tensor_set_output(g, d, true));
    TU_OK(dnnjit_graph_validate(g));
}

/* ---- graphs broken behind the API's back (as a faulty loader could build them) ---------------- */

CASE(corrupt_duplicate_names_and_uids)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 2)), b = in(g, "B", 2, TU_DIMS(2, 2)), c;
    TU_OK(mm(g, a, b, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_tensor_set_uid(g, a, 7));
    g->tensors[b - 1].has_uid = true;
    g->tensors[b - 1].uid = 7;
    VALIDATE_FAILS(g, "tensors \"A\" and \"B\" both have uid 7");
    g->tensors[b - 1].has_uid = false;
    g->tensors[b - 1].name[0] = 'A';
    VALIDATE_FAILS(g, "two tensors are named \"A\"");
}

CASE(corrupt_cycle)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(4)), y1, y2;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "p1", .mode = DNNJIT_POINTWISE_EXP}, a, 0, 0,
                                 &y1));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "p2", .mode = DNNJIT_POINTWISE_EXP}, y1, 0, 0,
                                 &y2));
    g->nodes[0].in[0] = y2;
    VALIDATE_FAILS(g, "the graph has a cycle through node \"p");
}

CASE(corrupt_two_writers)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(4)), y1, y2;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "p1", .mode = DNNJIT_POINTWISE_EXP}, a, 0, 0,
                                 &y1));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "p2", .mode = DNNJIT_POINTWISE_EXP}, a, 0, 0,
                                 &y2));
    g->nodes[1].out[0] = y1;
    VALIDATE_FAILS(g, "tensor \"p1::OUT_0\" is written by node \"p1\" and by node \"p2\"");
}

CASE(corrupt_pass_by_value_flags)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(1)), y;
    TU_OK(pw(g, DNNJIT_POINTWISE_EXP, a, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    g->tensors[y - 1].is_pass_by_value = true;
    VALIDATE_FAILS(g, "tensor \"pw::OUT_0\" is written by node \"pw\" but is pass-by-value");
    g->tensors[y - 1].is_pass_by_value = false;
    g->tensors[a - 1].has_value = true;
    VALIDATE_FAILS(g, "tensor \"A\" has a fixed value but is not pass-by-value");
}

/* Dims that were never checked must not reach inference (a zero head count would divide
 * by zero in the SDPA checks). */
CASE(corrupt_dims_are_reported_before_inference)
{
    G;
    dnnjit_tensor_t q = in(g, "Q", 4, TU_DIMS(1, 2, 3, 4)), k = in(g, "K", 4, TU_DIMS(1, 2, 3, 4)), o;
    TU_OK(dnnjit_graph_sdpa(g, q, k, k, &(dnnjit_sdpa_attr_t){.name = "attn"}, &o, NULL));
    TU_OK(dnnjit_tensor_set_output(g, o, true));
    g->tensors[k - 1].dim[1] = 0;
    VALIDATE_FAILS(g, "tensor \"K\": dim[1]=0 but dims must be >= 1");
    g->tensors[k - 1].dim[1] = 2;
    g->tensors[q - 1].ndim = 12;
    VALIDATE_FAILS(g, "tensor \"Q\": rank 12 is outside 1..8");
}

CASE(corrupt_node_ports)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 1, TU_DIMS(4)), y;
    TU_OK(pw(g, DNNJIT_POINTWISE_EXP, a, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    g->nodes[0].in[0] = 50;
    VALIDATE_FAILS(g, "pointwise \"pw\": input IN_0 is tensor id 50, which is not in this graph");
    g->nodes[0].in[0] = a;
    g->nodes[0].out[0] = 60;
    VALIDATE_FAILS(g, "pointwise \"pw\": output OUT_0 is tensor id 60, which is not in this graph");
    g->nodes[0].out[0] = DNNJIT_TENSOR_NONE;
    VALIDATE_FAILS(g, "pointwise \"pw\": output OUT_0 is missing");
    g->nodes[0].out[0] = y;
    g->nodes[0].op = (dnnjit_op_t)99;
    VALIDATE_FAILS(g, "node \"pw\": unknown op 99");
}

/* ---- NULL arguments -------------------------------------------------------------------------------- */

/* Every public function rejects a NULL graph (or handle, or out pointer) with BAD_PARAM and
 * a message naming the function or the node and the missing argument. */
CASE(null_arguments)
{
    G;
    dnnjit_tensor_t a = in(g, "A", 2, TU_DIMS(2, 2)), t;
    dnnjit_tensor_info_t info;
    int64_t i64;
    const dnnjit_norm_attr_t na = {0};
    FAILS(NULL, dnnjit_graph_tensor(NULL, &(dnnjit_tensor_desc_t){.ndim = 1, .dim = TU_DIMS(1)}, &t),
          DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_tensor: graph is NULL");
    FAILS(g, dnnjit_graph_tensor(g, NULL, &t), DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_tensor: desc is NULL");
    FAILS(g, dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.ndim = 1, .dim = TU_DIMS(1)}, NULL),
          DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_tensor: out is NULL");
    FAILS(NULL, dnnjit_tensor_get_info(NULL, a, &info), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_get_info: graph is NULL");
    FAILS(NULL, dnnjit_tensor_get_uid(NULL, a, &i64), DNNJIT_STATUS_BAD_PARAM, "dnnjit_tensor_get_uid: graph is NULL");
    FAILS(NULL, dnnjit_graph_find_tensor_by_uid(NULL, 1, &t), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_find_tensor_by_uid: graph is NULL");
    FAILS(g, dnnjit_graph_find_tensor_by_uid(g, 1, NULL), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_find_tensor_by_uid: out is NULL");
    FAILS(NULL, dnnjit_graph_find_tensor_by_name(NULL, "A", &t), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_find_tensor_by_name: graph is NULL");
    FAILS(g, dnnjit_graph_find_tensor_by_name(g, NULL, &t), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_find_tensor_by_name: name is NULL");
    FAILS(g, dnnjit_graph_find_tensor_by_name(g, "A", NULL), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_find_tensor_by_name: out is NULL");
    FAILS(NULL, dnnjit_tensor_set_output(NULL, a, true), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_output: graph is NULL");
    FAILS(NULL, dnnjit_tensor_set_data_type(NULL, a, DNNJIT_DATA_TYPE_HALF), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_data_type: graph is NULL");
    FAILS(NULL, dnnjit_tensor_set_uid(NULL, a, 1), DNNJIT_STATUS_BAD_PARAM, "dnnjit_tensor_set_uid: graph is NULL");
    FAILS(NULL, dnnjit_tensor_set_name(NULL, a, "x"), DNNJIT_STATUS_BAD_PARAM, "dnnjit_tensor_set_name: graph is NULL");
    FAILS(NULL, dnnjit_tensor_set_dim(NULL, a, 1, TU_DIMS(1)), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_dim: graph is NULL");
    FAILS(NULL, dnnjit_tensor_set_stride(NULL, a, 1, TU_DIMS(1)), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_tensor_set_stride: graph is NULL");
    FAILS(NULL, dnnjit_graph_matmul(NULL, a, a, NULL, &t), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_matmul: graph is NULL");
    FAILS(NULL, dnnjit_graph_pointwise(NULL, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_EXP}, a, 0, 0, &t),
          DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_pointwise: graph is NULL");
    FAILS(NULL, dnnjit_graph_bias(NULL, "b", a, a, &t), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_pointwise: graph is NULL");
    FAILS(NULL, dnnjit_graph_reduction(NULL, a, &(dnnjit_reduction_attr_t){0}, &t), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_reduction: graph is NULL");
    FAILS(NULL, dnnjit_graph_softmax(NULL, a, NULL, &t, NULL, NULL), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_softmax: graph is NULL");
    FAILS(NULL, dnnjit_graph_softmax_backward(NULL, a, a, NULL, &t), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_softmax_backward: graph is NULL");
    FAILS(NULL, dnnjit_graph_layernorm(NULL, a, a, a, &na, &t, NULL, NULL), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_layernorm: graph is NULL");
    FAILS(NULL, dnnjit_graph_rmsnorm(NULL, a, a, 0, &na, &t, NULL), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_rmsnorm: graph is NULL");
    FAILS(NULL, dnnjit_graph_layernorm_backward(NULL, a, a, a, a, a, &na, &t, &t, NULL), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_layernorm_backward: graph is NULL");
    FAILS(NULL, dnnjit_graph_rmsnorm_backward(NULL, a, a, a, a, &na, &t, &t, NULL), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_rmsnorm_backward: graph is NULL");
    FAILS(NULL, dnnjit_graph_sdpa(NULL, a, a, a, NULL, &t, NULL), DNNJIT_STATUS_BAD_PARAM,
          "dnnjit_graph_sdpa: graph is NULL");
    FAILS(NULL, dnnjit_graph_validate(NULL), DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_validate: graph is NULL");
    FAILS(NULL, dnnjit_graph_get_attr(NULL, NULL), DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_attr: graph is NULL");
    /* Nothing was added along the way. */
    assert_int_equal(count_of(g, false), 1);
    assert_int_equal(count_of(g, true), 0);
}

/* ---- errors per graph and per thread ------------------------------------------------------------ */

/* Each graph keeps its own last error; the thread's is the latest of any. */
CASE(errors_per_graph)
{
    G;
    dnnjit_graph_t h = tu_graph(DNNJIT_DATA_TYPE_HALF);
    FAILS(g, add_tensor(g, "A", 0, TU_DIMS(1), NULL), DNNJIT_STATUS_BAD_PARAM, "rank 0");
    FAILS(h, add_tensor(h, "B", 2, TU_DIMS(1, -1), NULL), DNNJIT_STATUS_BAD_PARAM, "dim[1]=-1");
    assert_non_null(strstr(dnnjit_graph_last_error(g), "tensor \"A\": rank 0"));
    assert_non_null(strstr(dnnjit_last_error(), "tensor \"B\": dim[1]=-1"));
    assert_string_equal(dnnjit_graph_last_error(h), dnnjit_last_error());
    dnnjit_graph_destroy(h);
}

typedef struct thread_job {
    int id;
    int failures; /* how often the thread saw a message that was not its own */
} thread_job_t;

/* Fails over and over with a message only this thread makes, checking each time that the
 * thread's and the graph's last errors are that message. */
static void *fail_repeatedly(void *arg)
{
    /* No cmocka assertions on this thread: they jump back into the main thread's stack.
     * Everything that goes wrong is counted instead. */
    thread_job_t *job = arg;
    dnnjit_graph_t g = NULL;
    if (dnnjit_graph_create(NULL, NULL, &g)) {
        job->failures++;
        return NULL;
    }
    char name[32], want[96];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "thread%d_%d", job->id, i);
        snprintf(want, sizeof want, "tensor \"%s\": dim[0]=%d but dims must be >= 1", name, -job->id);
        dnnjit_tensor_t t;
        dnnjit_status_t s = dnnjit_graph_tensor(
            g, &(dnnjit_tensor_desc_t){.name = name, .ndim = 1, .dim = (int64_t[]){-job->id}}, &t);
        if (s != DNNJIT_STATUS_BAD_PARAM || strcmp(dnnjit_last_error(), want) != 0 ||
            strcmp(dnnjit_graph_last_error(g), want) != 0)
            job->failures++;
    }
    dnnjit_graph_destroy(g);
    return NULL;
}

CASE(errors_per_thread)
{
    (void)state;
    TU_FAILS(dnnjit_handle_create(NULL), DNNJIT_STATUS_BAD_PARAM, "out is NULL");
    char mine[256];
    snprintf(mine, sizeof mine, "%s", dnnjit_last_error());
    thread_job_t jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (thread_job_t){.id = i + 1};
        assert_int_equal(pthread_create(&th[i], NULL, fail_repeatedly, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(jobs[i].failures, 0);
    }
    /* None of the other threads' failures reached this thread. */
    assert_string_equal(dnnjit_last_error(), mine);
}

/* Validates one graph many times; each thread has its own graph, as the threading rules
 * allow. `dup` graphs hold two tensors of one name and must fail every time. */
typedef struct validate_job {
    int tensors;
    bool dup;
    int wrong;
} validate_job_t;

static void *validate_repeatedly(void *arg)
{
    /* As in fail_repeatedly, failures are counted rather than asserted on this thread. */
    validate_job_t *job = arg;
    dnnjit_graph_t g = NULL;
    if (dnnjit_graph_create(NULL, &(dnnjit_graph_attr_t){.io_data_type = DNNJIT_DATA_TYPE_FLOAT}, &g)) {
        job->wrong++;
        return NULL;
    }
    dnnjit_tensor_t acc = DNNJIT_TENSOR_NONE;
    char name[32];
    for (int i = 0; i < job->tensors; i++) {
        snprintf(name, sizeof name, "x%d", i);
        dnnjit_tensor_t t, y;
        job->wrong += dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = name, .ndim = 1, .dim = (int64_t[]){4}},
                                          &t) != DNNJIT_STATUS_SUCCESS;
        if (i == 0) {
            acc = t;
            continue;
        }
        job->wrong += dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, acc, t, 0,
                                             &y) != DNNJIT_STATUS_SUCCESS;
        acc = y;
    }
    job->wrong += dnnjit_tensor_set_output(g, acc, true) != DNNJIT_STATUS_SUCCESS;
    if (job->dup)
        g->tensors[1].name[1] = '0'; /* "x1" becomes "x0" */
    for (int i = 0; i < 300; i++) {
        dnnjit_status_t s = dnnjit_graph_validate(g);
        bool ok = job->dup ? s == DNNJIT_STATUS_INVALID_GRAPH && strstr(dnnjit_last_error(), "named \"x0\"")
                           : s == DNNJIT_STATUS_SUCCESS;
        job->wrong += !ok;
    }
    dnnjit_graph_destroy(g);
    return NULL;
}

/* Validation of different graphs on different threads at once gives each its own answer. */
CASE(concurrent_validation)
{
    (void)state;
    validate_job_t jobs[4] = {{400, false, 0}, {3, true, 0}, {250, true, 0}, {5, false, 0}};
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, validate_repeatedly, &jobs[i]), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(jobs[i].wrong, 0);
    }
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(tensor_rank_0),
        T(tensor_rank_9),
        T(tensor_rank_negative),
        T(tensor_zero_dim),
        T(tensor_negative_dim),
        T(tensor_negative_stride),
        T(tensor_dims_overflow),
        T(tensor_strides_overflow),
        T(tensor_pass_by_value_not_scalar),
        T(tensor_value_without_pass_by_value),
        T(tensor_duplicate_name),
        T(tensor_duplicate_uid),
        T(tensor_null_dim),
        T(tensor_unknown_data_type),
        T(set_dim_zero),
        T(set_dim_pass_by_value),
        T(set_stride_bad),
        T(set_name_bad),
        T(set_uid_duplicate),
        T(set_output_false_on_input),
        T(set_data_type_unknown),
        T(unknown_tensor_ids),
        T(matmul_k_mismatch),
        T(matmul_batch_mismatch),
        T(matmul_rank1_inputs),
        T(matmul_bad_compute_types),
        T(matmul_bad_graph_compute_type),
        T(bad_compute_types_of_other_ops),
        T(corrupt_compute_type),
        T(matmul_unknown_and_missing_inputs),
        T(duplicate_node_name),
        T(pointwise_unknown_mode),
        T(pointwise_wrong_input_counts),
        T(pointwise_softplus_beta_zero),
        T(pointwise_broadcast_failure),
        T(pointwise_broadcast_failure_names_the_clashing_input),
        T(inferred_dims_overflow),
        T(pointwise_null_attr),
        T(bias_broadcast_failure),
        T(reduction_axes_out_of_range),
        T(reduction_bad_mode_and_attr),
        T(reduction_fixed_output_wrong_rank),
        T(reduction_fixed_output_wrong_dim),
        T(reduction_fixed_output_disagrees_with_axes),
        T(softmax_unknown_stats),
        T(softmax_missing_stats_pointers),
        T(softmax_backward_shape_mismatch),
        T(layernorm_unknown_phase),
        T(layernorm_scale_wrong_on_normalised_axis),
        T(layernorm_scale_not_1_on_other_axis),
        T(layernorm_bias_wrong_rank),
        T(layernorm_bias_missing),
        T(layernorm_norm_axes_out_of_range),
        T(layernorm_rank1_default_axes),
        T(layernorm_epsilon_not_scalar),
        T(layernorm_training_needs_stats_pointers),
        T(rmsnorm_scale_wrong),
        T(layernorm_backward_stats_wrong),
        T(layernorm_backward_dy_mismatch),
        T(layernorm_backward_scale_wrong),
        T(norm_backward_missing_pointers_and_inputs),
        T(rmsnorm_backward_inv_variance_wrong),
        T(sdpa_rank),
        T(sdpa_batch_mismatch),
        T(sdpa_heads_not_grouped),
        T(sdpa_value_heads_not_grouped),
        T(sdpa_head_dim_mismatch),
        T(sdpa_kv_length_mismatch),
        T(sdpa_bad_scale_and_pointers),
        T(empty_graph),
        T(virtual_tensor_not_read),
        T(input_not_read),
        T(virtual_input_has_no_producer),
        T(output_stride_zero_overlaps),
        T(output_strides_overlap),
        T(fixed_output_dims_disagree),
        T(fixed_output_strides_of_another_rank),
        T(input_changed_after_op),
        T(boolean_input_to_matmul),
        T(integer_input_to_softmax),
        T(no_data_type),
        T(failed_op_leaves_graph_usable),
        T(automatic_names_avoid_user_names),
        T(corrupt_duplicate_names_and_uids),
        T(corrupt_cycle),
        T(corrupt_two_writers),
        T(corrupt_pass_by_value_flags),
        T(corrupt_dims_are_reported_before_inference),
        T(corrupt_node_ports),
        T(null_arguments),
        T(errors_per_graph),
        T(errors_per_thread),
        T(concurrent_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
