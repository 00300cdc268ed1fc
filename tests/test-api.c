/* The small public API around graphs: status and enum names, data-type sizes, the version,
 * handles and graph attributes. Expected names and sizes are written out by hand here, so
 * that a mistake in an X-macro table cannot hide behind the same table. */
#include "util.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- statuses ------------------------------------------------------------------- */

static void status_names_and_strings(void **state)
{
    (void)state;
    static const struct {
        dnnjit_status_t status;
        const char *name, *text;
    } want[] = {
        {DNNJIT_STATUS_SUCCESS, "SUCCESS", "success"},
        {DNNJIT_STATUS_BAD_PARAM, "BAD_PARAM", "invalid argument"},
        {DNNJIT_STATUS_INVALID_GRAPH, "INVALID_GRAPH", "invalid graph"},
        {DNNJIT_STATUS_NOT_SUPPORTED, "NOT_SUPPORTED", "not supported"},
        {DNNJIT_STATUS_OUT_OF_MEMORY, "OUT_OF_MEMORY", "out of memory"},
        {DNNJIT_STATUS_PARSE_ERROR, "PARSE_ERROR", "parse error"},
        {DNNJIT_STATUS_IO_ERROR, "IO_ERROR", "input/output error"},
        {DNNJIT_STATUS_BAD_STATE, "BAD_STATE", "operation not allowed in the graph's current state"},
        {DNNJIT_STATUS_NOT_FOUND, "NOT_FOUND", "not found"},
        {DNNJIT_STATUS_INTERNAL, "INTERNAL", "internal error"},
        {DNNJIT_STATUS_COMPILE_ERROR, "COMPILE_ERROR",
         "NVRTC could not compile a generated kernel; the message holds the compiler log"},
        {DNNJIT_STATUS_CUDA_ERROR, "CUDA_ERROR",
         "a CUDA driver call failed; the message names the call and the driver's error"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        /* The codes are consecutive from 0, in the order of the map. */
        assert_int_equal(want[i].status, (int)i);
        assert_string_equal(dnnjit_status_name(want[i].status), want[i].name);
        assert_string_equal(dnnjit_status_string(want[i].status), want[i].text);
    }
}

/* Every entry of the X-macro map yields an enum value whose name is the macro's name. */
static void status_map_is_consistent(void **state)
{
    (void)state;
    int count = 0;
#define CHECK_(name, text)                                                     \
    assert_int_equal(DNNJIT_STATUS_##name, count);                             \
    assert_string_equal(dnnjit_status_name(DNNJIT_STATUS_##name), #name);      \
    assert_string_equal(dnnjit_status_string(DNNJIT_STATUS_##name), text);     \
    count++;
    DNNJIT_STATUS_MAP(CHECK_)
#undef CHECK_
    assert_int_equal(count, 12);
    /* Every text is distinct: no two statuses read the same. */
    for (int i = 0; i < count; i++)
        for (int j = i + 1; j < count; j++)
            assert_string_not_equal(dnnjit_status_string((dnnjit_status_t)i), dnnjit_status_string((dnnjit_status_t)j));
}

static void status_unknown_values(void **state)
{
    (void)state;
    int bad[] = {-1, 12, 13, 1000, -1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(dnnjit_status_name((dnnjit_status_t)bad[i]));
        assert_string_equal(dnnjit_status_string((dnnjit_status_t)bad[i]), "unknown status");
    }
}

/* ---- data types ------------------------------------------------------------------- */

static const struct {
    dnnjit_data_type_t type;
    const char *name;
    size_t size;
} data_types[] = {
    {DNNJIT_DATA_TYPE_NOT_SET, "NOT_SET", 0}, {DNNJIT_DATA_TYPE_FLOAT, "FLOAT", 4},
    {DNNJIT_DATA_TYPE_DOUBLE, "DOUBLE", 8},   {DNNJIT_DATA_TYPE_HALF, "HALF", 2},
    {DNNJIT_DATA_TYPE_BFLOAT16, "BFLOAT16", 2}, {DNNJIT_DATA_TYPE_FP8_E4M3, "FP8_E4M3", 1},
    {DNNJIT_DATA_TYPE_FP8_E5M2, "FP8_E5M2", 1}, {DNNJIT_DATA_TYPE_INT8, "INT8", 1},
    {DNNJIT_DATA_TYPE_INT32, "INT32", 4},     {DNNJIT_DATA_TYPE_INT64, "INT64", 8},
    {DNNJIT_DATA_TYPE_BOOLEAN, "BOOLEAN", 1},
};
#define N_DATA_TYPES (sizeof data_types / sizeof data_types[0])

static void data_type_names_and_sizes(void **state)
{
    (void)state;
    assert_int_equal(N_DATA_TYPES, DNNJIT_DATA_TYPE_COUNT_);
    for (size_t i = 0; i < N_DATA_TYPES; i++) {
        assert_int_equal(data_types[i].type, (int)i);
        assert_string_equal(dnnjit_data_type_name(data_types[i].type), data_types[i].name);
        assert_int_equal(dnnjit_data_type_size(data_types[i].type), data_types[i].size);
    }
    /* The sizes agree with the C types that hold them. */
    assert_int_equal(dnnjit_data_type_size(DNNJIT_DATA_TYPE_FLOAT), sizeof(float));
    assert_int_equal(dnnjit_data_type_size(DNNJIT_DATA_TYPE_DOUBLE), sizeof(double));
    assert_int_equal(dnnjit_data_type_size(DNNJIT_DATA_TYPE_INT64), sizeof(int64_t));
}

static void data_type_from_name_round_trips(void **state)
{
    (void)state;
    for (int t = 0; t < DNNJIT_DATA_TYPE_COUNT_; t++) {
        dnnjit_data_type_t back = (dnnjit_data_type_t)-1;
        TU_OK(dnnjit_data_type_from_name(dnnjit_data_type_name((dnnjit_data_type_t)t), &back));
        assert_int_equal(back, t);
    }
}

static void data_type_unknown_values(void **state)
{
    (void)state;
    int bad[] = {-1, DNNJIT_DATA_TYPE_COUNT_, 99};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(dnnjit_data_type_name((dnnjit_data_type_t)bad[i]));
        assert_int_equal(dnnjit_data_type_size((dnnjit_data_type_t)bad[i]), 0);
    }
}

/* Names are matched exactly: case, spaces and prefixes are not guessed at. Every failure
 * leaves a message naming what was looked up. */
static void data_type_from_name_failures(void **state)
{
    (void)state;
    dnnjit_data_type_t t = DNNJIT_DATA_TYPE_HALF;
    TU_FAILS(dnnjit_data_type_from_name("float", &t), DNNJIT_STATUS_NOT_FOUND, "\"float\"");
    TU_FAILS(dnnjit_data_type_from_name("FLOAT ", &t), DNNJIT_STATUS_NOT_FOUND, "\"FLOAT \"");
    TU_FAILS(dnnjit_data_type_from_name("", &t), DNNJIT_STATUS_NOT_FOUND, "data type");
    TU_FAILS(dnnjit_data_type_from_name("DNNJIT_DATA_TYPE_FLOAT", &t), DNNJIT_STATUS_NOT_FOUND, "data type");
    assert_int_equal(t, DNNJIT_DATA_TYPE_HALF);
    TU_FAILS(dnnjit_data_type_from_name(NULL, &t), DNNJIT_STATUS_BAD_PARAM, "name is NULL");
    TU_FAILS(dnnjit_data_type_from_name("FLOAT", NULL), DNNJIT_STATUS_BAD_PARAM, "out is NULL");
}

/* ---- pointwise modes ------------------------------------------------------------ */

static void pointwise_mode_names_and_arity(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int arity;
    } want[] = {
        {"ADD", 2},         {"SUB", 2},         {"MUL", 2},          {"DIV", 2},
        {"MAX", 2},         {"MIN", 2},         {"POW", 2},          {"MOD", 2},
        {"ADD_SQUARE", 2},  {"SQRT", 1},        {"RSQRT", 1},        {"RECIPROCAL", 1},
        {"EXP", 1},         {"LOG", 1},         {"NEG", 1},          {"ABS", 1},
        {"CEIL", 1},        {"FLOOR", 1},       {"SIN", 1},          {"COS", 1},
        {"TAN", 1},         {"ERF", 1},         {"IDENTITY", 1},     {"RELU_FWD", 1},
        {"TANH_FWD", 1},    {"SIGMOID_FWD", 1}, {"ELU_FWD", 1},      {"GELU_FWD", 1},
        {"GELU_APPROX_TANH_FWD", 1},            {"SOFTPLUS_FWD", 1}, {"SWISH_FWD", 1},
        {"RELU_BWD", 2},    {"TANH_BWD", 2},    {"SIGMOID_BWD", 2},  {"ELU_BWD", 2},
        {"GELU_BWD", 2},    {"GELU_APPROX_TANH_BWD", 2},             {"SOFTPLUS_BWD", 2},
        {"SWISH_BWD", 2},   {"CMP_EQ", 2},      {"CMP_NEQ", 2},      {"CMP_GT", 2},
        {"CMP_GE", 2},      {"CMP_LT", 2},      {"CMP_LE", 2},       {"LOGICAL_AND", 2},
        {"LOGICAL_OR", 2},  {"LOGICAL_NOT", 1}, {"BINARY_SELECT", 3},
    };
    assert_int_equal(sizeof want / sizeof want[0], DNNJIT_POINTWISE_MODE_COUNT_);
    for (int m = 0; m < DNNJIT_POINTWISE_MODE_COUNT_; m++) {
        assert_string_equal(dnnjit_pointwise_mode_name((dnnjit_pointwise_mode_t)m), want[m].name);
        assert_int_equal(dnnjit_pointwise_mode_arity((dnnjit_pointwise_mode_t)m), want[m].arity);
        dnnjit_pointwise_mode_t back = DNNJIT_POINTWISE_MODE_COUNT_;
        TU_OK(dnnjit_pointwise_mode_from_name(want[m].name, &back));
        assert_int_equal(back, m);
    }
    /* Spot checks through the enum names, independent of table order. */
    assert_int_equal(dnnjit_pointwise_mode_arity(DNNJIT_POINTWISE_BINARY_SELECT), 3);
    assert_int_equal(dnnjit_pointwise_mode_arity(DNNJIT_POINTWISE_RELU_BWD), 2);
    assert_int_equal(dnnjit_pointwise_mode_arity(DNNJIT_POINTWISE_LOGICAL_NOT), 1);
    assert_string_equal(dnnjit_pointwise_mode_name(DNNJIT_POINTWISE_GELU_APPROX_TANH_FWD), "GELU_APPROX_TANH_FWD");
}

static void pointwise_mode_unknown_values(void **state)
{
    (void)state;
    int bad[] = {-1, DNNJIT_POINTWISE_MODE_COUNT_, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(dnnjit_pointwise_mode_name((dnnjit_pointwise_mode_t)bad[i]));
        assert_int_equal(dnnjit_pointwise_mode_arity((dnnjit_pointwise_mode_t)bad[i]), 0);
    }
    dnnjit_pointwise_mode_t m = DNNJIT_POINTWISE_ADD;
    TU_FAILS(dnnjit_pointwise_mode_from_name("RELU", &m), DNNJIT_STATUS_NOT_FOUND, "\"RELU\"");
    TU_FAILS(dnnjit_pointwise_mode_from_name("add", &m), DNNJIT_STATUS_NOT_FOUND, "pointwise mode");
    assert_int_equal(m, DNNJIT_POINTWISE_ADD);
    TU_FAILS(dnnjit_pointwise_mode_from_name(NULL, &m), DNNJIT_STATUS_BAD_PARAM, "name is NULL");
    TU_FAILS(dnnjit_pointwise_mode_from_name("ADD", NULL), DNNJIT_STATUS_BAD_PARAM, "out is NULL");
}

/* ---- reduction modes and ops -------------------------------------------------------- */

static void reduction_mode_names(void **state)
{
    (void)state;
    static const char *const want[] = {"ADD", "MUL", "MIN", "MAX", "AMAX", "AVG", "NORM1", "NORM2"};
    assert_int_equal(sizeof want / sizeof want[0], DNNJIT_REDUCTION_MODE_COUNT_);
    for (int m = 0; m < DNNJIT_REDUCTION_MODE_COUNT_; m++) {
        assert_string_equal(dnnjit_reduction_mode_name((dnnjit_reduction_mode_t)m), want[m]);
        dnnjit_reduction_mode_t back = DNNJIT_REDUCTION_MODE_COUNT_;
        TU_OK(dnnjit_reduction_mode_from_name(want[m], &back));
        assert_int_equal(back, m);
    }
    assert_string_equal(dnnjit_reduction_mode_name(DNNJIT_REDUCTION_AMAX), "AMAX");
    assert_null(dnnjit_reduction_mode_name((dnnjit_reduction_mode_t)-1));
    assert_null(dnnjit_reduction_mode_name(DNNJIT_REDUCTION_MODE_COUNT_));
    dnnjit_reduction_mode_t m = DNNJIT_REDUCTION_MAX;
    TU_FAILS(dnnjit_reduction_mode_from_name("SUM", &m), DNNJIT_STATUS_NOT_FOUND, "\"SUM\"");
    assert_int_equal(m, DNNJIT_REDUCTION_MAX);
    TU_FAILS(dnnjit_reduction_mode_from_name(NULL, &m), DNNJIT_STATUS_BAD_PARAM, "name is NULL");
    TU_FAILS(dnnjit_reduction_mode_from_name("ADD", NULL), DNNJIT_STATUS_BAD_PARAM, "out is NULL");
}

static void op_names(void **state)
{
    (void)state;
    static const char *const want[] = {"MATMUL",   "POINTWISE",          "REDUCTION", "SOFTMAX",
                                       "SOFTMAX_BACKWARD", "LAYERNORM", "LAYERNORM_BACKWARD",
                                       "RMSNORM",  "RMSNORM_BACKWARD",   "SDPA"};
    assert_int_equal(sizeof want / sizeof want[0], DNNJIT_OP_COUNT_);
    for (int op = 0; op < DNNJIT_OP_COUNT_; op++)
        assert_string_equal(dnnjit_op_name((dnnjit_op_t)op), want[op]);
    assert_string_equal(dnnjit_op_name(DNNJIT_OP_SDPA), "SDPA");
    assert_null(dnnjit_op_name((dnnjit_op_t)-1));
    assert_null(dnnjit_op_name(DNNJIT_OP_COUNT_));
}

/* ---- version -------------------------------------------------------------------- */

static void version_string(void **state)
{
    (void)state;
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", DNNJIT_VERSION_MAJOR, DNNJIT_VERSION_MINOR, DNNJIT_VERSION_PATCH);
    assert_string_equal(dnnjit_version_string(), want);
    assert_string_equal(dnnjit_version_string(), "0.1.0");
    assert_int_equal(DNNJIT_VERSION, 100);
    /* The same pointer every time: the string is the library's. */
    assert_ptr_equal(dnnjit_version_string(), dnnjit_version_string());
}

/* ---- handles and graphs ----------------------------------------------------------- */

static void handle_create_destroy(void **state)
{
    (void)state;
    dnnjit_handle_t h1 = NULL, h2 = NULL;
    TU_OK(dnnjit_handle_create(&h1));
    TU_OK(dnnjit_handle_create(&h2));
    assert_non_null(h1);
    assert_non_null(h2);
    assert_ptr_not_equal(h1, h2);
    /* Graphs on one handle, created and destroyed in any order. */
    dnnjit_graph_t g1, g2;
    TU_OK(dnnjit_graph_create(h1, NULL, &g1));
    TU_OK(dnnjit_graph_create(h1, NULL, &g2));
    dnnjit_graph_destroy(g1);
    dnnjit_graph_destroy(g2);
    dnnjit_handle_destroy(h1);
    dnnjit_handle_destroy(h2);
    dnnjit_handle_destroy(NULL);
    TU_FAILS(dnnjit_handle_create(NULL), DNNJIT_STATUS_BAD_PARAM, "dnnjit_handle_create: out is NULL");
}

static void graph_default_attr(void **state)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL, NULL, &g));
    dnnjit_graph_attr_t a;
    TU_OK(dnnjit_graph_get_attr(g, &a));
    assert_string_equal(a.name, "");
    assert_int_equal(a.io_data_type, DNNJIT_DATA_TYPE_NOT_SET);
    assert_int_equal(a.intermediate_data_type, DNNJIT_DATA_TYPE_NOT_SET);
    /* NOT_SET compute type means FLOAT, and reads back resolved. */
    assert_int_equal(a.compute_data_type, DNNJIT_DATA_TYPE_FLOAT);
    int64_t n = -1;
    TU_OK(dnnjit_graph_get_tensor_count(g, &n));
    assert_int_equal(n, 0);
    TU_OK(dnnjit_graph_get_node_count(g, &n));
    assert_int_equal(n, 0);
    assert_string_equal(dnnjit_graph_last_error(g), "");
    dnnjit_graph_destroy(g);
    dnnjit_graph_destroy(NULL);
}

/* The graph copies the attributes: the caller's buffer may change or go away. */
static void graph_attr_is_copied(void **state)
{
    (void)state;
    char name[32];
    snprintf(name, sizeof name, "%s", "seed_graph");
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL,
                              &(dnnjit_graph_attr_t){.name = name,
                                                     .io_data_type = DNNJIT_DATA_TYPE_BFLOAT16,
                                                     .intermediate_data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                     .compute_data_type = DNNJIT_DATA_TYPE_DOUBLE},
                              &g));
    memset(name, 'x', sizeof name - 1);
    dnnjit_graph_attr_t a;
    TU_OK(dnnjit_graph_get_attr(g, &a));
    assert_string_equal(a.name, "seed_graph");
    assert_int_equal(a.io_data_type, DNNJIT_DATA_TYPE_BFLOAT16);
    assert_int_equal(a.intermediate_data_type, DNNJIT_DATA_TYPE_FLOAT);
    assert_int_equal(a.compute_data_type, DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_graph_destroy(g);
}

static void graph_create_rejects_unknown_types(void **state)
{
    (void)state;
    dnnjit_graph_t g = (dnnjit_graph_t)&g;
    TU_FAILS(dnnjit_graph_create(NULL, &(dnnjit_graph_attr_t){.io_data_type = (dnnjit_data_type_t)99}, &g),
             DNNJIT_STATUS_BAD_PARAM, "io 99");
    assert_null(g); /* *out is cleared on failure */
    TU_FAILS(dnnjit_graph_create(NULL, &(dnnjit_graph_attr_t){.intermediate_data_type = (dnnjit_data_type_t)-1}, &g),
             DNNJIT_STATUS_BAD_PARAM, "intermediate -1");
    TU_FAILS(dnnjit_graph_create(NULL,
                                 &(dnnjit_graph_attr_t){.compute_data_type = DNNJIT_DATA_TYPE_COUNT_}, &g),
             DNNJIT_STATUS_BAD_PARAM, "compute 11");
    TU_FAILS(dnnjit_graph_create(NULL, NULL, NULL), DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_create: out is NULL");
}

static void graph_getters_reject_null(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_graph_attr_t a;
    int64_t n;
    TU_FAILS(dnnjit_graph_get_attr(NULL, &a), DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_attr: graph is NULL");
    TU_FAILS(dnnjit_graph_get_attr(g, NULL), DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_attr: out is NULL");
    assert_string_equal(dnnjit_graph_last_error(g), "dnnjit_graph_get_attr: out is NULL");
    TU_FAILS(dnnjit_graph_get_tensor_count(NULL, &n), DNNJIT_STATUS_BAD_PARAM, "graph is NULL");
    TU_FAILS(dnnjit_graph_get_tensor_count(g, NULL), DNNJIT_STATUS_BAD_PARAM, "count is NULL");
    TU_FAILS(dnnjit_graph_get_node_count(NULL, &n), DNNJIT_STATUS_BAD_PARAM, "graph is NULL");
    TU_FAILS(dnnjit_graph_get_node_count(g, NULL), DNNJIT_STATUS_BAD_PARAM, "count is NULL");
    /* A NULL graph's last error is the thread's. */
    assert_string_equal(dnnjit_graph_last_error(NULL), dnnjit_last_error());
    dnnjit_graph_destroy(g);
}

static void tensor_and_node_counts(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(g, "X", 2, TU_DIMS(2, 3), NULL, 0);
    dnnjit_tensor_t y, s, st;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_EXP}, x, 0, 0, &y));
    TU_OK(dnnjit_graph_softmax(g, y, &(dnnjit_softmax_attr_t){.stats = DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP}, &s, &st,
                               NULL));
    int64_t tensors, nodes;
    TU_OK(dnnjit_graph_get_tensor_count(g, &tensors));
    TU_OK(dnnjit_graph_get_node_count(g, &nodes));
    assert_int_equal(tensors, 4); /* X, the EXP output, S and the LSE stats */
    assert_int_equal(nodes, 2);
    /* Tensor ids run from 1 to the count. */
    assert_int_equal(x, 1);
    assert_int_equal(st, 4);
    dnnjit_graph_destroy(g);
}

/* A thread that has made no failing call sees "" as its last error, whatever other threads
 * did before it started. */
static void *fresh_thread_error(void *arg)
{
    *(size_t *)arg = strlen(dnnjit_last_error());
    return NULL;
}

static void last_error_starts_empty_per_thread(void **state)
{
    (void)state;
    TU_FAILS(dnnjit_handle_create(NULL), DNNJIT_STATUS_BAD_PARAM, "out is NULL");
    pthread_t th;
    size_t length = 1;
    assert_int_equal(pthread_create(&th, NULL, fresh_thread_error, &length), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(length, 0);
    /* This thread still has its own message. */
    assert_non_null(strstr(dnnjit_last_error(), "dnnjit_handle_create"));
}

/* A NULL buffer or an unknown type reads as NaN and writes nothing, rather than crashing. */
static void element_null_buffer_and_unknown_type(void **state)
{
    (void)state;
    for (int t = 0; t < DNNJIT_DATA_TYPE_COUNT_; t++) {
        assert_true(isnan(dnnjit_element_load((dnnjit_data_type_t)t, NULL, 0)));
        dnnjit_element_store((dnnjit_data_type_t)t, NULL, 3, 1.0);
    }
    double d = 2.5;
    assert_true(isnan(dnnjit_element_load((dnnjit_data_type_t)-1, &d, 0)));
    assert_true(isnan(dnnjit_element_load(DNNJIT_DATA_TYPE_COUNT_, &d, 0)));
    dnnjit_element_store((dnnjit_data_type_t)99, &d, 0, 7.0);
    assert_true(d == 2.5);
    /* A known type still works on the same buffer. */
    assert_true(dnnjit_element_load(DNNJIT_DATA_TYPE_DOUBLE, &d, 0) == 2.5);
}

static void free_accepts_null(void **state)
{
    (void)state;
    dnnjit_free(NULL);
    dnnjit_free(malloc(16));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_names_and_strings),
        cmocka_unit_test(status_map_is_consistent),
        cmocka_unit_test(status_unknown_values),
        cmocka_unit_test(data_type_names_and_sizes),
        cmocka_unit_test(data_type_from_name_round_trips),
        cmocka_unit_test(data_type_unknown_values),
        cmocka_unit_test(data_type_from_name_failures),
        cmocka_unit_test(pointwise_mode_names_and_arity),
        cmocka_unit_test(pointwise_mode_unknown_values),
        cmocka_unit_test(reduction_mode_names),
        cmocka_unit_test(op_names),
        cmocka_unit_test(version_string),
        cmocka_unit_test(handle_create_destroy),
        cmocka_unit_test(graph_default_attr),
        cmocka_unit_test(graph_attr_is_copied),
        cmocka_unit_test(graph_create_rejects_unknown_types),
        cmocka_unit_test(graph_getters_reject_null),
        cmocka_unit_test(tensor_and_node_counts),
        cmocka_unit_test(last_error_starts_empty_per_thread),
        cmocka_unit_test(element_null_buffer_and_unknown_type),
        cmocka_unit_test(free_accepts_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
