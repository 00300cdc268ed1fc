/* The bad-input catalogue: inputs a caller can get wrong, each with the status and a
 * fragment of the message it must give, and none of them may crash or leak (the suite also
 * runs under ASan, UBSan and LSan). It adds to the cases of test-api.c, test-validate.c,
 * test-json.c, test-ref.c and test-plans.c and repeats none of them: NULL and out-of-range
 * arguments of the JIT calls, sizes at the edges of int64, shapes and data types each op
 * refuses, JSON documents that are malformed or describe bad graphs, and variant packs
 * given to execute on a handle without a device, which must still check them.
 *
 * Every BAD(...) line and every entry of the JSON tables is one case; docs/reliability.md
 * counts them. */
/* mkdtemp and setenv are POSIX. */
#define _POSIX_C_SOURCE 200809L

#include "util.h"

#include "jit/jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(call, status, fragment) TU_FAILS(call, status, fragment)

#define BAD_PARAM DNNJIT_STATUS_BAD_PARAM
#define INVALID DNNJIT_STATUS_INVALID_GRAPH
#define BAD_STATE DNNJIT_STATUS_BAD_STATE
#define PARSE DNNJIT_STATUS_PARSE_ERROR

static dnnjit_handle_t sm90;

/* Compiles stay in memory: the execute cases need a built plan, not a disk cache. */
static int setup(void **state)
{
    (void)state;
    setenv("DNNJIT_CACHE", "0", 1);
    return dnnjit_handle_create_for_arch("sm_90a", &sm90);
}

static int teardown(void **state)
{
    (void)state;
    dnnjit_handle_destroy(sm90);
    dnnjit__jit_cache_clear_memory();
    return 0;
}

/* y = relu(x) * s on [4, 8] FLOAT, with s a pass-by-value FLOAT scalar given by pointer;
 * the uids are x 1, s 2, y 3. */
static dnnjit_graph_t scaled_relu(dnnjit_handle_t h)
{
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(h, &(dnnjit_graph_attr_t){.name = "scaled", .io_data_type = DNNJIT_DATA_TYPE_FLOAT}, &g));
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(4, 8), NULL, 0), s, r, y;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "s", .ndim = 1, .dim = TU_DIMS(1),
                                                          .is_pass_by_value = true},
                              &s));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "relu", .mode = DNNJIT_POINTWISE_RELU_FWD}, x,
                                 0, 0, &r));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "mul", .mode = DNNJIT_POINTWISE_MUL}, r, s, 0,
                                 &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    TU_OK(dnnjit_tensor_set_uid(g, x, 1));
    TU_OK(dnnjit_tensor_set_uid(g, s, 2));
    TU_OK(dnnjit_tensor_set_uid(g, y, 3));
    return g;
}

/* ---- NULL and out-of-range arguments of the handle and JIT calls ---------------------- */

static void handle_arguments(void **state)
{
    (void)state;
    char arch[16];
    BAD(dnnjit_handle_create_for_arch("sm_90a", NULL), BAD_PARAM, "dnnjit_handle_create_for_arch: out is NULL");
    BAD(dnnjit_handle_get_arch(NULL, arch, sizeof arch, NULL), BAD_PARAM, "dnnjit_handle_get_arch: handle is NULL");
    BAD(dnnjit_handle_get_arch(sm90, NULL, sizeof arch, NULL), BAD_PARAM, "dnnjit_handle_get_arch: arch is NULL");
    BAD(dnnjit_handle_get_arch(sm90, arch, 0, NULL), BAD_PARAM, "0 bytes cannot hold \"sm_90a\"");
    dnnjit_handle_t h = (dnnjit_handle_t)&h;
    BAD(dnnjit_handle_create_for_arch("sm_90a\n", &h), BAD_PARAM, "is not a GPU architecture");
    assert_null(h);
    BAD(dnnjit_handle_create_for_arch("", &h), BAD_PARAM, "is not a GPU architecture");
}

static void build_arguments(void **state)
{
    (void)state;
    dnnjit_graph_t g = scaled_relu(sm90);
    const dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A;
    int64_t i64;
    BAD(dnnjit_graph_build_operation_graph(NULL), BAD_PARAM, "dnnjit_graph_build_operation_graph: graph is NULL");
    BAD(dnnjit_graph_create_execution_plans(NULL, &a, 1), BAD_PARAM, "dnnjit_graph_create_execution_plans: graph is NULL");
    BAD(dnnjit_graph_create_execution_plans(g, NULL, 2), BAD_PARAM, "modes is NULL or mode_count negative");
    BAD(dnnjit_graph_create_execution_plans(g, &a, -1), BAD_PARAM, "modes is NULL or mode_count negative");
    BAD(dnnjit_graph_create_execution_plans(g, (dnnjit_heur_mode_t[]){DNNJIT_HEUR_MODE_B, (dnnjit_heur_mode_t)-1}, 2),
        BAD_PARAM, "unknown heuristic mode -1");
    BAD(dnnjit_graph_check_support(NULL), BAD_PARAM, "dnnjit_graph_check_support: graph is NULL");
    BAD(dnnjit_graph_build_plans(NULL, DNNJIT_BUILD_PLAN_ALL), BAD_PARAM, "dnnjit_graph_build_plans: graph is NULL");
    BAD(dnnjit_graph_build_plans(g, (dnnjit_build_plan_policy_t)7), BAD_PARAM, "unknown policy 7");
    BAD(dnnjit_graph_build_plan_at_index(NULL, 0), BAD_PARAM, "dnnjit_graph_build_plan_at_index: graph is NULL");
    BAD(dnnjit_graph_build_plan_at_index(g, 0), BAD_STATE, "plan index 0 is outside");
    BAD(dnnjit_graph_build(NULL, &a, 1), BAD_PARAM, "dnnjit_graph_build: graph is NULL");
    BAD(dnnjit_graph_get_plan_count(NULL, &i64), BAD_PARAM, "dnnjit_graph_get_plan_count: graph is NULL");
    BAD(dnnjit_graph_get_plan_count(g, NULL), BAD_PARAM, "dnnjit_graph_get_plan_count: count is NULL");
    BAD(dnnjit_graph_get_chosen_plan(NULL, &i64), BAD_PARAM, "dnnjit_graph_get_chosen_plan: graph is NULL");
    BAD(dnnjit_graph_get_chosen_plan(g, NULL), BAD_PARAM, "dnnjit_graph_get_chosen_plan: index is NULL");
    BAD(dnnjit_graph_get_workspace_size(NULL, &i64), BAD_PARAM, "dnnjit_graph_get_workspace_size: graph is NULL");
    BAD(dnnjit_graph_get_workspace_size(g, NULL), BAD_PARAM, "dnnjit_graph_get_workspace_size: size is NULL");
    /* With plans listed: indexes and out-parameters of the plan getters. */
    TU_OK(dnnjit_graph_create_execution_plans(g, &a, 1));
    char *text = NULL;
    uint32_t notes;
    BAD(dnnjit_graph_get_plan_name(NULL, 0, &text), BAD_PARAM, "dnnjit_graph_get_plan_name: graph is NULL");
    BAD(dnnjit_graph_get_plan_name(g, 0, NULL), BAD_PARAM, "dnnjit_graph_get_plan_name: name is NULL");
    BAD(dnnjit_graph_get_plan_name(g, INT64_MIN, &text), BAD_PARAM, "plan index -9223372036854775808 is outside");
    BAD(dnnjit_graph_get_plan_behavior_notes(g, 0, NULL), BAD_PARAM, "notes is NULL");
    BAD(dnnjit_graph_get_plan_behavior_notes(g, 99, &notes), BAD_PARAM, "plan index 99 is outside");
    BAD(dnnjit_graph_get_plan_source(g, 0, NULL), BAD_PARAM, "dnnjit_graph_get_plan_source: source is NULL");
    BAD(dnnjit_graph_get_plan_source(g, -3, &text), BAD_PARAM, "plan index -3 is outside");
    BAD(dnnjit_graph_build_plan_at_index(g, INT64_MAX), BAD_PARAM, "plan index 9223372036854775807 is outside");
    dnnjit_graph_destroy(g);
}

/* ---- sizes at the edges of int64, ids that are gone ------------------------------------ */

static void tensor_edges(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t t = tu_tensor(g, "T", 2, TU_DIMS(2, 3), NULL, 0), out;
    const int64_t e57 = INT64_C(1) << 57;
    dnnjit_tensor_desc_t d = {.name = "X", .ndim = 8};
    /* 256^8 = 2^64: each dim is modest, the product is not. */
    d.dim = TU_DIMS(256, 256, 256, 256, 256, 256, 256, 256);
    BAD(dnnjit_graph_tensor(g, &d, &out), BAD_PARAM, "tensor \"X\": the product of the dims overflows int64");
    d.ndim = 1, d.dim = TU_DIMS(INT64_MAX);
    BAD(dnnjit_graph_tensor(g, &d, &out), BAD_PARAM, "tensor \"X\": the product of the dims overflows int64");
    d.dim = TU_DIMS(INT64_MIN);
    BAD(dnnjit_graph_tensor(g, &d, &out), BAD_PARAM, "dim[0]=-9223372036854775808 but dims must be >= 1");
    d.ndim = 2, d.dim = TU_DIMS(2, 2), d.stride = TU_DIMS(1, INT64_MIN);
    BAD(dnnjit_graph_tensor(g, &d, &out), BAD_PARAM, "stride[1]=-9223372036854775808 is negative");
    /* No single axis reaches past int64, but the eight of them together do. */
    d.ndim = 8, d.dim = TU_DIMS(2, 2, 2, 2, 2, 2, 2, 2), d.stride = TU_DIMS(e57, e57, e57, e57, e57, e57, e57, e57);
    BAD(dnnjit_graph_tensor(g, &d, &out), BAD_PARAM, "dim[7]=2 with stride[7]=144115188075855872 puts elements beyond");
    d = (dnnjit_tensor_desc_t){.name = "X", .ndim = 1, .dim = TU_DIMS(3), .data_type = (dnnjit_data_type_t)-5};
    BAD(dnnjit_graph_tensor(g, &d, &out), BAD_PARAM, "tensor \"X\": unknown data type -5");
    d = (dnnjit_tensor_desc_t){.name = "U", .ndim = 1, .dim = TU_DIMS(3), .has_uid = true, .uid = INT64_MIN};
    TU_OK(dnnjit_graph_tensor(g, &d, &out));
    d.name = "V";
    BAD(dnnjit_graph_tensor(g, &d, &out), BAD_PARAM, "uid -9223372036854775808 is already used by tensor \"U\"");
    BAD(dnnjit_tensor_set_dim(g, t, 3, TU_DIMS(INT64_C(1) << 31, INT64_C(1) << 31, 4)), BAD_PARAM,
        "tensor \"T\": the product of the dims overflows int64");
    BAD(dnnjit_tensor_set_dim(g, t, 0, TU_DIMS(1)), BAD_PARAM, "tensor \"T\": rank 0 is outside 1..8");
    /* Strides set explicitly stay at the same rank: new dims must fit them. */
    d = (dnnjit_tensor_desc_t){.name = "S", .ndim = 2, .dim = TU_DIMS(2, 2), .stride = TU_DIMS(INT64_MAX / 16, 1)};
    TU_OK(dnnjit_graph_tensor(g, &d, &out));
    BAD(dnnjit_tensor_set_dim(g, out, 2, TU_DIMS(1000, 2)), BAD_PARAM,
        "dnnjit_tensor_set_dim: tensor \"S\": dim[0]=1000 with stride[0]=576460752303423487 puts elements beyond");
    TU_OK(dnnjit_tensor_set_dim(g, out, 2, TU_DIMS(2, 3)));
    BAD(dnnjit_tensor_set_stride(g, t, 0, TU_DIMS(1)), BAD_PARAM, "tensor \"T\" has 2 dims but 0 strides were given");
    BAD(dnnjit_tensor_get_info(g, UINT32_MAX, &(dnnjit_tensor_info_t){0}), BAD_PARAM,
        "tensor id 4294967295 is not in graph \"test\"");
    dnnjit_graph_destroy(g);
}

/* A graph's handles are plain pointers: using a destroyed graph cannot be detected. What
 * can be is a tensor id that no longer names anything: the outputs of a call that failed
 * (they were rolled back) and ids kept from another, destroyed graph. */
static void stale_ids(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(2, 3), NULL, 0), c;
    BAD(dnnjit_graph_matmul(g, a, a, &(dnnjit_matmul_attr_t){.name = "mm"}, &c), INVALID, "K must match");
    /* The output the failed matmul made for a moment was id 2. */
    BAD(dnnjit_tensor_set_output(g, 2, true), BAD_PARAM, "tensor id 2 is not in graph \"test\" (it has 1 tensors)");
    dnnjit_graph_t old = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    tu_tensor(old, "P", 1, TU_DIMS(4), NULL, 0);
    tu_tensor(old, "Q", 1, TU_DIMS(4), NULL, 0);
    dnnjit_tensor_t q = tu_tensor(old, "R", 1, TU_DIMS(4), NULL, 0);
    dnnjit_graph_destroy(old);
    BAD(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "exp", .mode = DNNJIT_POINTWISE_EXP}, q, 0, 0,
                               &c),
        BAD_PARAM, "pointwise \"exp\": input IN_0 is tensor id 3, which is not in this graph");
    dnnjit_graph_destroy(g);
}

/* ---- shapes and data types the ops refuse --------------------------------------------- */

static void op_edges(void **state)
{
    (void)state;
    const int64_t e20 = INT64_C(1) << 20, e30 = INT64_C(1) << 30, e40 = INT64_C(1) << 40;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(e20, e20, 1), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(1, e30), NULL, 0);
    dnnjit_tensor_t col = tu_tensor(g, "col", 2, TU_DIMS(e40, 1), NULL, 0);
    dnnjit_tensor_t row = tu_tensor(g, "row", 2, TU_DIMS(1, e40), NULL, 0);
    dnnjit_tensor_t x = tu_tensor(g, "X", 2, TU_DIMS(4, 8), NULL, 0);
    dnnjit_tensor_t q3 = tu_tensor(g, "Q3", 3, TU_DIMS(1, 2, 8), NULL, 0);
    dnnjit_tensor_t q = tu_tensor(g, "Q", 4, TU_DIMS(1, 2, 4, 8), NULL, 0);
    dnnjit_tensor_t v5 = tu_tensor(g, "V5", 5, TU_DIMS(1, 1, 2, 4, 8), NULL, 0);
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, 8), NULL, 0);
    dnnjit_tensor_t inv = tu_tensor(g, "inv", 2, TU_DIMS(4, 2), NULL, 0);
    dnnjit_tensor_t out, stats;
    /* Inputs of fine sizes whose output does not fit int64. */
    BAD(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &out), INVALID,
        "matmul \"mm\": output C would have dims [1048576,1048576,1073741824], whose product overflows int64");
    BAD(dnnjit_graph_bias(g, "add", col, row, &out), INVALID,
        "pointwise \"add\": output OUT_0 would have dims [1099511627776,1099511627776], whose product overflows");
    /* Compute types each op family refuses. */
    BAD(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.name = "sum", .compute_data_type = DNNJIT_DATA_TYPE_INT32},
                               &out),
        INVALID, "reduction \"sum\": compute data type INT32 is not a floating-point type of 16 bits or more");
    BAD(dnnjit_graph_softmax(g, x, &(dnnjit_softmax_attr_t){.name = "sm", .compute_data_type = DNNJIT_DATA_TYPE_INT8},
                             &out, NULL, NULL),
        INVALID, "softmax \"sm\": compute data type INT8 is not a floating-point type");
    BAD(dnnjit_graph_layernorm(g, x, scale, scale,
                               &(dnnjit_norm_attr_t){.name = "ln", .compute_data_type = DNNJIT_DATA_TYPE_FP8_E4M3},
                               &out, NULL, NULL),
        INVALID, "layernorm \"ln\": compute data type FP8_E4M3 is not a floating-point type");
    BAD(dnnjit_graph_sdpa(g, q, q, q, &(dnnjit_sdpa_attr_t){.name = "attn", .compute_data_type = DNNJIT_DATA_TYPE_BOOLEAN},
                          &out, NULL),
        INVALID, "sdpa \"attn\": compute data type BOOLEAN is not a floating-point type");
    BAD(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "neg", .mode = DNNJIT_POINTWISE_NEG,
                                                             .compute_data_type = (dnnjit_data_type_t)42},
                               x, 0, 0, &out),
        BAD_PARAM, "pointwise \"neg\": unknown compute data type 42");
    /* Ranks. */
    BAD(dnnjit_graph_sdpa(g, q3, q, q, &(dnnjit_sdpa_attr_t){.name = "attn"}, &out, NULL), INVALID,
        "sdpa \"attn\": Q (tensor \"Q3\") has 3 dims but needs 4");
    BAD(dnnjit_graph_sdpa(g, q, q, v5, &(dnnjit_sdpa_attr_t){.name = "attn"}, &out, NULL), INVALID,
        "sdpa \"attn\": V (tensor \"V5\") has 5 dims but needs 4");
    BAD(dnnjit_graph_rmsnorm_backward(g, x, x, scale, inv, &(dnnjit_norm_attr_t){.name = "rb"}, &out, &stats, NULL),
        INVALID, "rmsnorm_backward \"rb\": INV_VARIANCE.dim[1]=2 but must be 1");
    dnnjit_graph_destroy(g);
}

/* Input data types, which only validation resolves: the op is made, validation refuses. */
static void input_types(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "X", 2, TU_DIMS(4, 8), NULL, DNNJIT_DATA_TYPE_BOOLEAN);
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, 8), NULL, 0), y;
    TU_OK(dnnjit_graph_layernorm(g, x, scale, scale, &(dnnjit_norm_attr_t){.name = "ln"}, &y, NULL, NULL));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    BAD(dnnjit_graph_validate(g), INVALID, "layernorm \"ln\": X (tensor \"X\") is BOOLEAN but must be a floating-point");
    dnnjit_graph_destroy(g);

    g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t qi = tu_tensor(g, "Qi", 4, TU_DIMS(1, 2, 4, 8), NULL, DNNJIT_DATA_TYPE_INT32);
    dnnjit_tensor_t q = tu_tensor(g, "Q", 4, TU_DIMS(1, 2, 4, 8), NULL, 0);
    TU_OK(dnnjit_graph_sdpa(g, qi, q, q, &(dnnjit_sdpa_attr_t){.name = "attn"}, &y, NULL));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    BAD(dnnjit_graph_validate(g), INVALID, "sdpa \"attn\": Q (tensor \"Qi\") is INT32 but must be a floating-point type");
    dnnjit_graph_destroy(g);
}

/* ---- variant packs ----------------------------------------------------------------------- */

static void reference_pack_edges(void **state)
{
    (void)state;
    dnnjit_graph_t g = scaled_relu(NULL);
    float x[32] = {0}, y[32], s = 2;
    BAD(dnnjit_graph_execute_reference(g, (dnnjit_variant_t[]){{INT64_MIN, x}, {2, &s}, {3, y}}, 3), BAD_PARAM,
        "variant pack entry 0 has uid -9223372036854775808, but no tensor of graph \"scaled\" has that uid");
    BAD(dnnjit_graph_execute_reference(g, (dnnjit_variant_t[]){{1, x}, {2, NULL}, {3, y}}, 3), BAD_PARAM,
        "tensor \"s\" (uid 2) has a NULL pointer in variant pack entry 1");
    dnnjit_graph_destroy(g);
}

/* execute on a handle without a device still checks the pack's entries and the workspace
 * before it says that there is no device. */
static void execute_without_device(void **state)
{
    (void)state;
    if (dnnjit__nvrtc_load() != DNNJIT_STATUS_SUCCESS)
        skip(); /* building the plan needs NVRTC */
    dnnjit_graph_t g = scaled_relu(sm90);
    BAD(dnnjit_graph_execute(g, NULL, 0, NULL, NULL), BAD_STATE, "graph \"scaled\" has no built plan (call build first)");
    const dnnjit_heur_mode_t a_mode = DNNJIT_HEUR_MODE_A;
    TU_OK(dnnjit_graph_build(g, &a_mode, 1));
    _Alignas(16) float x[33] = {0}, y[32], s = 2;
    BAD(dnnjit_graph_execute(g, NULL, 3, NULL, NULL), BAD_PARAM, "execute: the variant pack is NULL but n is 3");
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, x}, {2, &s}, {999, y}}, 3, NULL, NULL), BAD_PARAM,
        "variant pack entry 2 has uid 999, which no tensor of graph \"scaled\" has");
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, x}, {2, &s}, {3, y}, {1, y}}, 4, NULL, NULL), BAD_PARAM,
        "uid 1 (tensor \"x\") appears twice in the variant pack");
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, NULL}, {2, &s}, {3, y}}, 3, NULL, NULL), BAD_PARAM,
        "tensor \"x\" (uid 1) has a NULL pointer in the variant pack");
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, x}, {2, NULL}, {3, y}}, 3, NULL, NULL), BAD_PARAM,
        "tensor \"s\" (uid 2) has a NULL pointer in the variant pack");
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, (char *)x + 2}, {2, &s}, {3, y}}, 3, NULL, NULL), BAD_PARAM,
        "tensor \"x\" (uid 1): pointer");
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, x}, {2, &s}, {3, (char *)y + 1}}, 3, NULL, NULL), BAD_PARAM,
        "tensor \"mul::OUT_0\" (uid 3): pointer");
    /* Whether every tensor has a buffer, and whether the buffers are device memory, is
     * only checked for a run on a device. */
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, x}, {2, &s}}, 2, NULL, NULL), BAD_STATE, "no GPU");
    /* A pack that is whole as far as the host can tell. */
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{1, x}, {2, &s}, {3, y}}, 3, NULL, NULL), BAD_STATE,
        "no GPU to run graph \"scaled\" on: the handle was created for architecture sm_90a without a device");
    dnnjit_graph_destroy(g);

    /* softmax(A @ B) runs as two kernels with the product in the workspace between them. */
    TU_OK(dnnjit_graph_create(sm90, &(dnnjit_graph_attr_t){.name = "two", .io_data_type = DNNJIT_DATA_TYPE_FLOAT}, &g));
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(4, 8), NULL, 0), b = tu_tensor(g, "B", 2, TU_DIMS(8, 4), NULL, 0);
    dnnjit_tensor_t c, sm;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_graph_softmax(g, c, &(dnnjit_softmax_attr_t){.name = "sm"}, &sm, NULL, NULL));
    TU_OK(dnnjit_tensor_set_output(g, sm, true));
    TU_OK(dnnjit_graph_build(g, &a_mode, 1));
    int64_t ua, ub, us, workspace;
    TU_OK(dnnjit_tensor_get_uid(g, a, &ua));
    TU_OK(dnnjit_tensor_get_uid(g, b, &ub));
    TU_OK(dnnjit_tensor_get_uid(g, sm, &us));
    TU_OK(dnnjit_graph_get_workspace_size(g, &workspace));
    assert_true(workspace >= 4 * 4 * (int64_t)sizeof(float));
    char want[128];
    snprintf(want, sizeof want, "graph \"two\" needs %lld bytes of workspace but none was given", (long long)workspace);
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{ua, x}, {ub, x}, {us, y}}, 3, NULL, NULL), BAD_PARAM, want);
    char *unaligned = (char *)x + 4;
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{ua, x}, {ub, x}, {us, y}}, 3, unaligned, NULL), BAD_PARAM,
        "graph \"two\": the workspace");
    BAD(dnnjit_graph_execute(g, (dnnjit_variant_t[]){{ua, x}, {ub, x}, {us, y}}, 3, unaligned, NULL), BAD_PARAM,
        "is not aligned to 16 bytes");
    dnnjit_graph_destroy(g);
}

/* ---- JSON --------------------------------------------------------------------------------- */

typedef struct json_case {
    const char *text;
    dnnjit_status_t status;
    const char *fragment;
} json_case_t;

/* Loads `text` (single quotes standing for double quotes) and checks the failure; *out must
 * be left NULL. */
static void expect_json_failure(const json_case_t *c, const char *text)
{
    char *json = malloc(strlen(text) + 1);
    assert_non_null(json);
    for (size_t i = 0; i <= strlen(text); i++)
        json[i] = text[i] == '\'' ? '"' : text[i];
    dnnjit_graph_t g = (dnnjit_graph_t)&g;
    dnnjit_status_t s = dnnjit_graph_from_json(NULL, json, &g);
    if (s != c->status || !strstr(dnnjit_last_error(), c->fragment))
        fail_msg("%s\ngave %s \"%s\", expected %s with \"%s\"", json, dnnjit_status_name(s), dnnjit_last_error(),
                 dnnjit_status_name(c->status), c->fragment);
    assert_null(g);
    free(json);
}

/* Whole documents. */
static const json_case_t documents[] = {
    {"null", INVALID, "document: the top level must be an object, not null"},
    {"'graph'", INVALID, "document: the top level must be an object, not a string"},
    {"{'json_version': null}", INVALID, "field \"json_version\" must be a string, not null"},
    {"{'json_version': '1.0', 'context': {'name': 5}, 'tensors': {}, 'nodes': []}", INVALID,
     "context: field \"name\" must be a string, not an integer"},
    {"{'json_version': '1.0', 'context': {}, 'tensors': [], 'nodes': []}", INVALID,
     "document: field \"tensors\" must be an object, not an array"},
    {"{'json_version': '1.0', 'context': true, 'tensors': {}, 'nodes': []}", INVALID,
     "document: field \"context\" must be an object, not a boolean"},
    {"{'json_version': '1.0', 'context': {}, 'tensors': {'A\\u0000B': {'dim': [1]}}, 'nodes': []}", PARSE,
     "NUL byte in object key not supported"},
    {"{'json_version': '1.0', 'context': {'name': 'g\\u0000h'}, 'tensors': {}, 'nodes': []}", PARSE,
     "\\u0000 is not allowed"},
    {"{'json_version': '1.0', 'context': {}, 'tensors': {'A': {'dim': [1e400]}}, 'nodes': []}", PARSE,
     "real number overflow"},
};

/* A document over these tensors and nodes, the graph's io type FLOAT. */
#define DOC(tensors, nodes) \
    "{'json_version': '1.0', 'context': {'name': 'g', 'io_data_type': 'FLOAT'}, "            \
    "'tensors': {" tensors "}, 'nodes': [" nodes "]}"

/* A node reading X [2, 8] and writing Y, with `more` tensors and the node's own fields. */
#define UNARY(more, node) DOC("'X': {'dim': [2, 8]}, 'Y': {'dim': [2, 8]}" more, node)
#define EXP_NODE(name, in, out)                                                            \
    "{'tag': 'POINTWISE', 'name': '" name "', 'mode': 'EXP', 'inputs': {'IN_0': '" in "'}, " \
    "'outputs': {'OUT_0': '" out "'}}"

static const json_case_t graphs[] = {
    /* Tensor descriptions. */
    {UNARY(", 'Z': {'dim': []}", EXP_NODE("e", "X", "Y")), INVALID, "tensor \"Z\": rank 0 is outside 1..8"},
    {UNARY(", 'Z': {'dim': [2, -3]}", EXP_NODE("e", "X", "Y")), INVALID, "tensor \"Z\": dim[1]=-3 but dims must be >= 1"},
    {UNARY(", 'Z': {'dim': [4294967296, 4294967296]}", EXP_NODE("e", "X", "Y")), INVALID,
     "tensor \"Z\": the product of the dims overflows int64"},
    {UNARY(", 'Z': {'dim': [3, 2], 'stride': [4611686018427387904, 1]}", EXP_NODE("e", "X", "Y")), INVALID,
     "tensor \"Z\": dim[0]=3 with stride[0]=4611686018427387904 puts elements beyond the int64 range"},
    {UNARY(", 'Z': {'dim': null}", EXP_NODE("e", "X", "Y")), INVALID,
     "tensor \"Z\": field \"dim\" must be an array of integers, not null"},
    {UNARY(", 'Z': {'dim': [true]}", EXP_NODE("e", "X", "Y")), INVALID, "entry 0 is a boolean"},
    {UNARY(", 'Z': {'dim': [1], 'uid_assigned': 'yes'}", EXP_NODE("e", "X", "Y")), INVALID,
     "tensor \"Z\": field \"uid_assigned\" must be a boolean, not a string"},
    /* Written outputs that overlap themselves; outputs that cannot be outputs. */
    {DOC("'X': {'dim': [2, 8]}, 'Y': {'dim': [2, 8], 'stride': [0, 1]}", EXP_NODE("e", "X", "Y")), INVALID,
     "tensor \"Y\" is written by node \"e\" but its elements overlap: dim[0]=2 with stride[0]=0"},
    {DOC("'X': {'dim': [2, 8]}, 'Y': {'dim': [1, 1], 'is_pass_by_value': true}",
         "{'tag': 'REDUCTION', 'name': 'r', 'mode': 'ADD', 'inputs': {'X': 'X'}, 'outputs': {'Y': 'Y'}}"),
     INVALID, "tensor \"Y\" is written by node \"r\" but is pass-by-value"},
    {DOC("'X': {'dim': [2, 8]}, 'S': {'dim': [2, 8]}",
         "{'tag': 'SOFTMAX', 'name': 'sm', 'stats': 'LOG_SUM_EXP', 'inputs': {'P': 'X'}, "
         "'outputs': {'S': 'S', 'STATS_0': 'S'}}"),
     INVALID, "tensor \"S\" is written by node \"sm\" and by node \"sm\""},
    /* Cycles, which only documents can make. */
    {UNARY("", EXP_NODE("self", "Y", "Y")), INVALID, "the graph has a cycle through node \"self\""},
    {DOC("'P': {'dim': [4], 'is_virtual': true}, 'Q': {'dim': [4], 'is_virtual': true}",
         EXP_NODE("p", "Q", "P") ", " EXP_NODE("q", "P", "Q")),
     INVALID, "the graph has a cycle through node \"p\""},
    {DOC("'X': {'dim': [4]}, 'P': {'dim': [4], 'is_virtual': true}, 'Q': {'dim': [4], 'is_virtual': true}, "
         "'Y': {'dim': [4]}",
         "{'tag': 'POINTWISE', 'name': 'add', 'mode': 'ADD', 'inputs': {'IN_0': 'X', 'IN_1': 'Q'}, "
         "'outputs': {'OUT_0': 'P'}}, "
         EXP_NODE("q", "P", "Q") ", " EXP_NODE("y", "P", "Y")),
     INVALID, "the graph has a cycle through node \"add\""},
    /* A node downstream of the cycle, listed first, is not named. */
    {DOC("'X': {'dim': [4]}, 'P': {'dim': [4], 'is_virtual': true}, 'Q': {'dim': [4], 'is_virtual': true}, "
         "'Y': {'dim': [4]}",
         "{'tag': 'POINTWISE', 'name': 'downstream', 'mode': 'ADD', 'inputs': {'IN_0': 'P', 'IN_1': 'X'}, "
         "'outputs': {'OUT_0': 'Y'}}, " EXP_NODE("loop_a", "Q", "P") ", " EXP_NODE("loop_b", "P", "Q")),
     INVALID, "the graph has a cycle through node \"loop_a\""},
    /* Dangling tensors. */
    {UNARY(", 'unused': {'dim': [3]}", EXP_NODE("e", "X", "Y")), INVALID,
     "tensor \"unused\" is an input that no node reads"},
    {DOC("'X': {'dim': [2, 8]}, 'Y': {'dim': [2, 8], 'is_virtual': true}", EXP_NODE("e", "X", "Y")), INVALID,
     "tensor \"Y\" is virtual but no node reads it"},
    {DOC("'X': {'dim': [2, 8]}, 'Y': {'dim': [2, 8]}, 'Z': {'dim': [2, 8]}",
         EXP_NODE("e", "X", "Y") ", " EXP_NODE("e", "X", "Z")),
     INVALID, "two nodes are named \"e\""},
    /* Node fields of the wrong kind. */
    {UNARY("", "null"), INVALID, "node #0: must be an object, not null"},
    {UNARY("", "{'tag': 7, 'name': 'e'}"), INVALID, "node \"e\": field \"tag\" must be a string, not an integer"},
    {UNARY("", "{'tag': 'POINTWISE', 'name': 'e', 'mode': 'EXP', 'inputs': 'X', 'outputs': {'OUT_0': 'Y'}}"), INVALID,
     "node \"e\": field \"inputs\" must be an object, not a string"},
    /* Ranks and axes. */
    {DOC("'A': {'dim': [8]}, 'B': {'dim': [8, 2]}, 'C': {'dim': [8, 2]}",
         "{'tag': 'MATMUL', 'name': 'mm', 'inputs': {'A': 'A', 'B': 'B'}, 'outputs': {'C': 'C'}}"),
     INVALID, "matmul \"mm\": A (tensor \"A\") has 1 dim but needs at least 2"},
    {DOC("'Q': {'dim': [2, 4, 8]}, 'O': {'dim': [2, 4, 8]}",
         "{'tag': 'SDPA', 'name': 'attn', 'inputs': {'Q': 'Q', 'K': 'Q', 'V': 'Q'}, 'outputs': {'O': 'O'}}"),
     INVALID, "sdpa \"attn\": Q (tensor \"Q\") has 3 dims but needs 4"},
    {UNARY(", 'G': {'dim': [1, 8]}",
           "{'tag': 'LAYERNORM', 'name': 'ln', 'norm_axes': -1, 'inputs': {'X': 'X', 'SCALE': 'G', 'BIAS': 'G'}, "
           "'outputs': {'Y': 'Y'}}"),
     INVALID, "layernorm \"ln\": norm_axes=-1 but X (tensor \"X\") has 2 dims"},
    {DOC("'X': {'dim': [2, 8]}, 'Y': {'dim': [2, 1]}",
         "{'tag': 'REDUCTION', 'name': 'r', 'mode': 'ADD', 'axes': [-1], 'inputs': {'X': 'X'}, 'outputs': {'Y': 'Y'}}"),
     INVALID, "node \"r\": field \"axes\": axis -1 is outside 0..7"},
    {DOC("'X': {'dim': [2, 8]}, 'Y': {'dim': [2, 1]}",
         "{'tag': 'REDUCTION', 'name': 'r', 'mode': 'ADD', 'axes': [0, 1, 2, 3, 4, 5, 6, 7, 0], "
         "'inputs': {'X': 'X'}, 'outputs': {'Y': 'Y'}}"),
     INVALID, "node \"r\": field \"axes\" has 9 entries but at most 8 are allowed"},
    /* Data types an op refuses. */
    {UNARY("", "{'tag': 'SOFTMAX', 'name': 'sm', 'compute_data_type': 'BOOLEAN', 'inputs': {'P': 'X'}, "
               "'outputs': {'S': 'Y'}}"),
     INVALID, "softmax \"sm\": compute data type BOOLEAN is not a floating-point type"},
    {DOC("'X': {'dim': [2, 8], 'data_type': 'INT32'}, 'G': {'dim': [1, 8]}, 'Y': {'dim': [2, 8], 'data_type': 'FLOAT'}",
         "{'tag': 'RMSNORM', 'name': 'rms', 'inputs': {'X': 'X', 'SCALE': 'G'}, 'outputs': {'Y': 'Y'}}"),
     INVALID, "rmsnorm \"rms\": X (tensor \"X\") is INT32 but must be a floating-point type"},
};

static void json_documents(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof documents / sizeof documents[0]; i++)
        expect_json_failure(&documents[i], documents[i].text);
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++)
        expect_json_failure(&graphs[i], graphs[i].text);
}

/* Nesting far deeper than any graph: the parser must stop, not overflow its stack. */
static void json_deep_nesting(void **state)
{
    (void)state;
    size_t depth = 100000;
    char *text = malloc(2 * depth + 1);
    assert_non_null(text);
    memset(text, '[', depth);
    memset(text + depth, ']', depth);
    text[2 * depth] = '\0';
    const json_case_t c = {NULL, PARSE, "maximum parsing depth reached"};
    expect_json_failure(&c, text);
    free(text);
}

/* A 64 KiB tensor name: the message (at most 2 KiB) is cut short, never overrun. */
static void json_long_name(void **state)
{
    (void)state;
    size_t n = 65536;
    const char *head = "{'json_version': '1.0', 'context': {'io_data_type': 'FLOAT'}, 'tensors': {'X': {'dim': [4]}, "
                       "'Y': {'dim': [4]}, '";
    const char *tail = "': {'dim': [1]}}, 'nodes': [" EXP_NODE("e", "X", "Y") "]}";
    char *text = malloc(strlen(head) + n + strlen(tail) + 1);
    assert_non_null(text);
    strcpy(text, head);
    memset(text + strlen(head), 'n', n);
    strcpy(text + strlen(head) + n, tail);
    const json_case_t c = {NULL, INVALID, "tensor \"nnnnnnnnnnnnnnnn"};
    expect_json_failure(&c, text);
    assert_true(strlen(dnnjit_last_error()) < 2048);
    free(text);
}

/* Each intermediate between kernels fits int64 bytes, but together they would not: the
 * workspace size must not wrap around (to 0, which execute would accept with no buffer). */
static void workspace_past_int64(void **state)
{
    (void)state;
    const int64_t e29 = INT64_C(1) << 29, e30 = INT64_C(1) << 30;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    for (int chain = 0; chain < 3; chain++) {
        char name[2][16];
        snprintf(name[0], sizeof name[0], "outer%d", chain);
        snprintf(name[1], sizeof name[1], "inner%d", chain);
        /* outer: [2^29, 1] x [1, 2^30], 2^61 bytes of FLOAT, read by the next matmul. */
        dnnjit_tensor_t a = tu_tensor(g, NULL, 2, TU_DIMS(e29, 1), NULL, 0);
        dnnjit_tensor_t b = tu_tensor(g, NULL, 2, TU_DIMS(1, e30), NULL, 0);
        dnnjit_tensor_t d = tu_tensor(g, NULL, 2, TU_DIMS(e30, 1), NULL, 0), c1, c2;
        TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = name[0]}, &c1));
        TU_OK(dnnjit_graph_matmul(g, c1, d, &(dnnjit_matmul_attr_t){.name = name[1]}, &c2));
        tu_output(g, c2);
    }
    int64_t size = -1;
    BAD(dnnjit_graph_build_operation_graph(g), DNNJIT_STATUS_NOT_SUPPORTED,
        "partition: graph \"test\": tensor \"outer2::C\" (2305843009213693952 bytes) takes the workspace for the "
        "intermediates between kernels past 4611686018427387904 bytes");
    BAD(dnnjit_graph_get_workspace_size(g, &size), DNNJIT_STATUS_BAD_STATE, "is not built");
    assert_int_equal(size, -1);
    dnnjit_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handle_arguments),
        cmocka_unit_test(build_arguments),
        cmocka_unit_test(tensor_edges),
        cmocka_unit_test(stale_ids),
        cmocka_unit_test(op_edges),
        cmocka_unit_test(input_types),
        cmocka_unit_test(reference_pack_edges),
        cmocka_unit_test(execute_without_device),
        cmocka_unit_test(json_documents),
        cmocka_unit_test(json_deep_nesting),
        cmocka_unit_test(json_long_name),
        cmocka_unit_test(workspace_past_int64),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
