/* Graph <-> JSON: round trips of every op and attribute, documents written by hand, parse
 * errors with their positions, and well-formed documents that describe bad graphs. */
#include "util.h"

#include "graph/graph.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------ */

static char *dump(dnnjit_graph_t g)
{
    char *text = NULL;
    TU_OK(dnnjit_graph_to_json(g, &text));
    assert_non_null(text);
    return text;
}

static dnnjit_graph_t load(const char *text)
{
    dnnjit_graph_t g = NULL;
    TU_OK(dnnjit_graph_from_json(NULL, text, &g));
    assert_non_null(g);
    return g;
}

/* Documents in this file are written with single quotes to spare the escapes; this turns
 * them into JSON. The caller frees the copy. */
static char *dq(const char *single_quoted)
{
    char *s = malloc(strlen(single_quoted) + 1);
    assert_non_null(s);
    strcpy(s, single_quoted);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    return s;
}

static char *read_fixture(const char *name)
{
    const char *dir = getenv("DNNJIT_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    text[size] = '\0';
    fclose(f);
    return text;
}

static bool same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

#define assert_same_double(a, b)                                                            \
    do {                                                                                    \
        if (!same_double((a), (b)))                                                         \
            fail_msg("%s = %.17g but %s = %.17g", #a, (double)(a), #b, (double)(b));        \
    } while (0)

static const dnnjit__tensor_t *tensor_named(dnnjit_graph_t g, const char *name)
{
    dnnjit_tensor_t id;
    TU_OK(dnnjit_graph_find_tensor_by_name(g, name, &id));
    return dnnjit__tensor(g, id);
}

static const dnnjit__node_t *node_named(dnnjit_graph_t g, const char *name)
{
    for (int64_t i = 0; i < g->node_count; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return &g->nodes[i];
    fail_msg("no node \"%s\"", name);
    return NULL;
}

/* The name of the tensor in a slot, or "" for none, so that slots of two graphs compare. */
static const char *slot_name(dnnjit_graph_t g, dnnjit_tensor_t id)
{
    const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
    return t ? t->name : "";
}

static void assert_same_attr(dnnjit_op_t op, const dnnjit__op_attr_t *a, const dnnjit__op_attr_t *b)
{
    switch (op) {
    case DNNJIT_OP_MATMUL:
        assert_same_double(a->matmul.padding_value, b->matmul.padding_value);
        break;
    case DNNJIT_OP_POINTWISE:
        assert_int_equal(a->pointwise.mode, b->pointwise.mode);
        assert_same_double(a->pointwise.relu_lower_clip, b->pointwise.relu_lower_clip);
        assert_int_equal(a->pointwise.has_relu_upper_clip, b->pointwise.has_relu_upper_clip);
        assert_same_double(a->pointwise.relu_upper_clip, b->pointwise.relu_upper_clip);
        assert_same_double(a->pointwise.relu_lower_clip_slope, b->pointwise.relu_lower_clip_slope);
        assert_same_double(a->pointwise.elu_alpha, b->pointwise.elu_alpha);
        assert_same_double(a->pointwise.softplus_beta, b->pointwise.softplus_beta);
        assert_same_double(a->pointwise.swish_beta, b->pointwise.swish_beta);
        break;
    case DNNJIT_OP_REDUCTION:
        assert_int_equal(a->reduction.mode, b->reduction.mode);
        assert_int_equal(a->reduction.axes, b->reduction.axes);
        assert_int_equal(a->reduction.resolved_axes, b->reduction.resolved_axes);
        break;
    case DNNJIT_OP_SOFTMAX:
    case DNNJIT_OP_SOFTMAX_BACKWARD:
        assert_int_equal(a->softmax.stats, b->softmax.stats);
        break;
    case DNNJIT_OP_LAYERNORM:
    case DNNJIT_OP_LAYERNORM_BACKWARD:
    case DNNJIT_OP_RMSNORM:
    case DNNJIT_OP_RMSNORM_BACKWARD:
        assert_int_equal(a->norm.phase, b->norm.phase);
        assert_int_equal(a->norm.norm_axes, b->norm.norm_axes);
        assert_same_double(a->norm.epsilon_value, b->norm.epsilon_value);
        break;
    case DNNJIT_OP_SDPA:
        assert_int_equal(a->sdpa.has_attn_scale, b->sdpa.has_attn_scale);
        assert_same_double(a->sdpa.attn_scale, b->sdpa.attn_scale);
        assert_int_equal(a->sdpa.use_causal_mask, b->sdpa.use_causal_mask);
        assert_int_equal(a->sdpa.generate_stats, b->sdpa.generate_stats);
        break;
    default:
        fail_msg("unknown op %d", (int)op);
    }
}

/* Two graphs describe the same thing: context, every tensor (by name) field by field, and
 * every node (by name) with its slots and attributes. */
static void assert_same_graph(dnnjit_graph_t a, dnnjit_graph_t b)
{
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->io_type, b->io_type);
    assert_int_equal(a->intermediate_type, b->intermediate_type);
    assert_int_equal(a->compute_type, b->compute_type);
    assert_int_equal(a->tensor_count, b->tensor_count);
    assert_int_equal(a->node_count, b->node_count);
    for (int64_t i = 0; i < a->tensor_count; i++) {
        const dnnjit__tensor_t *x = &a->tensors[i], *y = tensor_named(b, x->name);
        assert_int_equal(x->ndim, y->ndim);
        assert_memory_equal(x->dim, y->dim, sizeof(int64_t) * (size_t)x->ndim);
        assert_memory_equal(x->stride, y->stride, sizeof(int64_t) * (size_t)x->ndim);
        assert_int_equal(x->data_type, y->data_type);
        assert_int_equal(x->resolved_type, y->resolved_type);
        assert_int_equal(x->is_virtual, y->is_virtual);
        assert_int_equal(x->is_pass_by_value, y->is_pass_by_value);
        assert_int_equal(x->has_value, y->has_value);
        if (x->has_value)
            assert_same_double(x->value, y->value);
        assert_int_equal(x->has_uid, y->has_uid);
        assert_int_equal(x->uid, y->uid);
        assert_int_equal(x->dims_set, y->dims_set);
        assert_int_equal(x->strides_set, y->strides_set);
        assert_string_equal(x->producer < 0 ? "" : a->nodes[x->producer].name,
                            y->producer < 0 ? "" : b->nodes[y->producer].name);
    }
    for (int64_t i = 0; i < a->node_count; i++) {
        const dnnjit__node_t *x = &a->nodes[i], *y = node_named(b, x->name);
        assert_int_equal(x->op, y->op);
        assert_int_equal(x->compute_type, y->compute_type);
        for (int j = 0; j < DNNJIT__MAX_INPUTS; j++)
            assert_string_equal(slot_name(a, x->in[j]), slot_name(b, y->in[j]));
        for (int j = 0; j < DNNJIT__MAX_OUTPUTS; j++)
            assert_string_equal(slot_name(a, x->out[j]), slot_name(b, y->out[j]));
        assert_same_attr(x->op, &x->attr, &y->attr);
    }
}

/* to_json, from_json, to_json again: the two texts must be identical and the reloaded
 * graph must equal the original. Returns the reloaded graph (the caller destroys it) and,
 * if asked, the text. */
static dnnjit_graph_t round_trip(dnnjit_graph_t g, char **text_out)
{
    char *first = dump(g);
    dnnjit_graph_t h = load(first);
    char *second = dump(h);
    assert_string_equal(first, second);
    assert_same_graph(g, h);
    free(second);
    if (text_out)
        *text_out = first;
    else
        free(first);
    return h;
}

/* Round-trips and checks that the text holds each of the NULL-terminated fragments. */
static void round_trip_has(dnnjit_graph_t g, const char *const *fragments)
{
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    for (int i = 0; fragments[i]; i++)
        if (!strstr(text, fragments[i]))
            fail_msg("the JSON lacks %s:\n%s", fragments[i], text);
    free(text);
    dnnjit_graph_destroy(h);
}
#define FRAGMENTS(...) ((const char *const[]){__VA_ARGS__, NULL})

static dnnjit_tensor_t tensor(dnnjit_graph_t g, const char *name, int ndim, const int64_t *dim)
{
    return tu_tensor(g, name, ndim, dim, NULL, DNNJIT_DATA_TYPE_FLOAT);
}

static dnnjit_tensor_t scalar(dnnjit_graph_t g, const char *name, bool has_value, double value)
{
    dnnjit_tensor_t t;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = name, .ndim = 1, .dim = TU_DIMS(1),
                                                          .data_type = DNNJIT_DATA_TYPE_FLOAT, .is_pass_by_value = true,
                                                          .has_value = has_value, .value = value},
                              &t));
    return t;
}

static dnnjit_graph_t seed000(void)
{
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL,
                              &(dnnjit_graph_attr_t){.name = "jit_matmul_graph",
                                                     .io_data_type = DNNJIT_DATA_TYPE_HALF,
                                                     .compute_data_type = DNNJIT_DATA_TYPE_FLOAT},
                              &g));
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(4, 64, 128), TU_DIMS(64 * 128, 128, 1), DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(4, 128, 64), TU_DIMS(128 * 64, 64, 1), DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.compute_data_type = DNNJIT_DATA_TYPE_FLOAT}, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    return g;
}

/* ---- round trips ---------------------------------------------------------------------- */

static void seed000_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = seed000();
    round_trip_has(g, FRAGMENTS("\"json_version\": \"1.0\"", "\"tag\": \"MATMUL\"", "\"io_data_type\": \"HALF\"",
                                "\"dim\": [4, 64, 128]", "\"stride\": [4096, 64, 1]", "\"C\": \"0::C\""));
    dnnjit_graph_destroy(g);
}

/* The fixture is written by hand in another layout and key order; loading it must give
 * the graph the C API builds, to the byte. */
static void seed000_fixture_matches_api(void **state)
{
    (void)state;
    char *fixture = read_fixture("seed000.json");
    dnnjit_graph_t from_file = load(fixture), from_api = seed000();
    char *a = dump(from_file), *b = dump(from_api);
    assert_string_equal(a, b);
    assert_same_graph(from_api, from_file);
    free(a);
    free(b);
    free(fixture);
    dnnjit_graph_destroy(from_file);
    dnnjit_graph_destroy(from_api);
}

static void matmul_attributes_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_INT8);
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(8, 16), NULL, DNNJIT_DATA_TYPE_INT8);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(3, 16, 4), NULL, DNNJIT_DATA_TYPE_INT8);
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_matmul(g, a, b,
                              &(dnnjit_matmul_attr_t){.name = "mm", .compute_data_type = DNNJIT_DATA_TYPE_INT32,
                                                      .padding_value = -0.1},
                              &c));
    TU_OK(dnnjit_tensor_set_data_type(g, c, DNNJIT_DATA_TYPE_INT32));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    round_trip_has(g, FRAGMENTS("\"compute_data_type\": \"INT32\"", "\"padding_value\": -0.1"));
    dnnjit_graph_destroy(g);
}

static void pointwise_attributes_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tensor(g, "X", 2, TU_DIMS(4, 8)), r, e, sp, sw, d;
    TU_OK(dnnjit_graph_pointwise(g,
                                 &(dnnjit_pointwise_attr_t){.name = "relu", .mode = DNNJIT_POINTWISE_RELU_FWD,
                                                            .relu_lower_clip = -0.25, .has_relu_upper_clip = true,
                                                            .relu_upper_clip = 6.0, .relu_lower_clip_slope = 0.01},
                                 x, 0, 0, &r));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "elu", .mode = DNNJIT_POINTWISE_ELU_FWD,
                                                               .elu_alpha = 0.3},
                                 r, 0, 0, &e));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "softplus",
                                                               .mode = DNNJIT_POINTWISE_SOFTPLUS_FWD,
                                                               .softplus_beta = 2.5},
                                 e, 0, 0, &sp));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "swish", .mode = DNNJIT_POINTWISE_SWISH_BWD,
                                                               .swish_beta = 1.702},
                                 sp, x, 0, &sw));
    /* An ELU left at the default alpha (0 means 1.0), and one whose alpha is 0 as given. */
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "elu_default",
                                                               .mode = DNNJIT_POINTWISE_ELU_FWD},
                                 sw, 0, 0, &d));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "elu_zero", .mode = DNNJIT_POINTWISE_ELU_FWD,
                                                               .has_elu_alpha = true},
                                 d, 0, 0, &d));
    TU_OK(dnnjit_tensor_set_output(g, d, true));
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    assert_non_null(strstr(text, "\"relu_upper_clip\": 6.0"));
    assert_non_null(strstr(text, "\"mode\": \"SWISH_BWD\""));
    const dnnjit__node_t *relu = node_named(h, "relu");
    assert_true(relu->attr.pointwise.has_relu_upper_clip);
    assert_true(relu->attr.pointwise.relu_lower_clip == -0.25);
    assert_true(relu->attr.pointwise.relu_lower_clip_slope == 0.01);
    assert_true(node_named(h, "elu")->attr.pointwise.elu_alpha == 0.3);
    assert_true(node_named(h, "softplus")->attr.pointwise.softplus_beta == 2.5);
    assert_true(node_named(h, "swish")->attr.pointwise.swish_beta == 1.702);
    assert_true(node_named(h, "elu_default")->attr.pointwise.elu_alpha == 1.0);
    assert_true(node_named(h, "elu_zero")->attr.pointwise.elu_alpha == 0.0);
    free(text);
    dnnjit_graph_destroy(h);
    dnnjit_graph_destroy(g);
}

static void every_pointwise_mode_round_trips(void **state)
{
    (void)state;
    for (int m = 0; m < DNNJIT_POINTWISE_MODE_COUNT_; m++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t in[3] = {0, 0, 0}, out;
        const char *names[3] = {"X0", "X1", "X2"};
        for (int i = 0; i < dnnjit_pointwise_mode_arity((dnnjit_pointwise_mode_t)m); i++)
            in[i] = tensor(g, names[i], 2, TU_DIMS(2, 3));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "pw", .mode = (dnnjit_pointwise_mode_t)m},
                                     in[0], in[1], in[2], &out));
        TU_OK(dnnjit_tensor_set_output(g, out, true));
        char mode[64];
        snprintf(mode, sizeof mode, "\"mode\": \"%s\"", dnnjit_pointwise_mode_name((dnnjit_pointwise_mode_t)m));
        round_trip_has(g, FRAGMENTS(mode));
        dnnjit_graph_destroy(g);
    }
}

static void reduction_round_trip(void **state)
{
    (void)state;
    for (int m = 0; m < DNNJIT_REDUCTION_MODE_COUNT_; m++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t x = tensor(g, "X", 4, TU_DIMS(2, 3, 4, 5)), y;
        TU_OK(dnnjit_graph_reduction(g, x,
                                     &(dnnjit_reduction_attr_t){.name = "sum", .mode = (dnnjit_reduction_mode_t)m,
                                                                .axes = 0x5},
                                     &y));
        TU_OK(dnnjit_tensor_set_output(g, y, true));
        char mode[64];
        snprintf(mode, sizeof mode, "\"mode\": \"%s\"", dnnjit_reduction_mode_name((dnnjit_reduction_mode_t)m));
        char *text;
        dnnjit_graph_t h = round_trip(g, &text);
        assert_non_null(strstr(text, mode));
        assert_non_null(strstr(text, "\"axes\": [0, 2]"));
        const dnnjit__tensor_t *ty = tensor_named(h, "sum::Y");
        assert_memory_equal(ty->dim, TU_DIMS(1, 3, 1, 5), 4 * sizeof(int64_t));
        free(text);
        dnnjit_graph_destroy(h);
        dnnjit_graph_destroy(g);
    }
}

/* Axes left to be derived from Y's dims, which the user fixed: the fixed dims must survive
 * and the derived axes come out the same. */
static void reduction_fixed_output_dims_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tensor(g, "X", 4, TU_DIMS(2, 3, 4, 5)), y;
    TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.name = "max", .mode = DNNJIT_REDUCTION_MAX}, &y));
    TU_OK(dnnjit_tensor_set_dim(g, y, 4, TU_DIMS(2, 1, 4, 1)));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    assert_non_null(strstr(text, "\"axes\": []"));
    const dnnjit__tensor_t *ty = tensor_named(h, "max::Y");
    assert_true(ty->dims_set);
    assert_false(ty->strides_set);
    assert_int_equal(node_named(h, "max")->attr.reduction.resolved_axes, 0xa);
    free(text);
    dnnjit_graph_destroy(h);
    dnnjit_graph_destroy(g);
}

static void softmax_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t p = tensor(g, "P", 3, TU_DIMS(2, 4, 8)), s[3], st[3];
    const char *names[3] = {"plain", "lse", "mse"};
    for (int k = 0; k < 3; k++) {
        TU_OK(dnnjit_graph_softmax(g, p,
                                   &(dnnjit_softmax_attr_t){.name = names[k], .stats = (dnnjit_softmax_stats_t)k,
                                                            .compute_data_type = DNNJIT_DATA_TYPE_DOUBLE},
                                   &s[k], &st[0], &st[1]));
        TU_OK(dnnjit_tensor_set_output(g, s[k], true));
        for (int i = 0; i < k; i++)
            TU_OK(dnnjit_tensor_set_output(g, st[i], true));
    }
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    assert_non_null(strstr(text, "\"stats\": \"NONE\""));
    assert_non_null(strstr(text, "\"stats\": \"LOG_SUM_EXP\""));
    assert_non_null(strstr(text, "\"stats\": \"MAX_SUM_EXP\""));
    assert_int_equal(node_named(h, "plain")->out[1], DNNJIT_TENSOR_NONE);
    assert_string_equal(slot_name(h, node_named(h, "mse")->out[2]), "mse::STATS_1");
    const dnnjit__tensor_t *lse = tensor_named(h, "lse::STATS_0");
    assert_memory_equal(lse->dim, TU_DIMS(2, 4, 1), 3 * sizeof(int64_t));
    free(text);
    dnnjit_graph_destroy(h);
    dnnjit_graph_destroy(g);
}

static void softmax_backward_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t y = tensor(g, "Y", 2, TU_DIMS(2, 8)), dy = tensor(g, "DY", 2, TU_DIMS(2, 8)), dx;
    TU_OK(dnnjit_graph_softmax_backward(g, y, dy, &(dnnjit_softmax_attr_t){.name = "smb"}, &dx));
    TU_OK(dnnjit_tensor_set_output(g, dx, true));
    round_trip_has(g, FRAGMENTS("\"tag\": \"SOFTMAX_BACKWARD\"", "\"DY\": \"DY\"", "\"DX\": \"smb::DX\""));
    dnnjit_graph_destroy(g);
}

static void layernorm_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tensor(g, "X", 3, TU_DIMS(4, 6, 16)), scale = tensor(g, "scale", 3, TU_DIMS(1, 1, 16)),
                    bias = tensor(g, "bias", 3, TU_DIMS(1, 1, 16)), eps = scalar(g, "eps", true, 1e-6);
    dnnjit_tensor_t y, mean, inv, y2;
    TU_OK(dnnjit_graph_layernorm(g, x, scale, bias,
                                 &(dnnjit_norm_attr_t){.name = "ln_train", .phase = DNNJIT_NORM_PHASE_TRAINING,
                                                       .norm_axes = 1, .epsilon = eps},
                                 &y, &mean, &inv));
    dnnjit_tensor_t scale2 = tensor(g, "scale2", 3, TU_DIMS(1, 6, 16)), bias2 = tensor(g, "bias2", 3, TU_DIMS(1, 6, 16));
    TU_OK(dnnjit_graph_layernorm(g, x, scale2, bias2,
                                 &(dnnjit_norm_attr_t){.name = "ln_infer", .epsilon_value = 1e-3}, &y2, NULL, NULL));
    dnnjit_tensor_t outs[] = {y, mean, inv, y2};
    for (int i = 0; i < 4; i++)
        TU_OK(dnnjit_tensor_set_output(g, outs[i], true));
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    assert_non_null(strstr(text, "\"phase\": \"TRAINING\""));
    assert_non_null(strstr(text, "\"phase\": \"INFERENCE\""));
    assert_non_null(strstr(text, "\"EPSILON\": \"eps\""));
    const dnnjit__node_t *train = node_named(h, "ln_train");
    assert_int_equal(train->attr.norm.norm_axes, 1);
    assert_true(node_named(h, "ln_infer")->attr.norm.epsilon_value == 1e-3);
    assert_memory_equal(tensor_named(h, "ln_train::MEAN")->dim, TU_DIMS(4, 6, 1), 3 * sizeof(int64_t));
    assert_true(tensor_named(h, "eps")->value == 1e-6);
    free(text);
    dnnjit_graph_destroy(h);
    dnnjit_graph_destroy(g);
}

static void layernorm_backward_round_trip(void **state)
{
    (void)state;
    for (int with_dbias = 0; with_dbias < 2; with_dbias++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t dy = tensor(g, "DY", 2, TU_DIMS(4, 16)), x = tensor(g, "X", 2, TU_DIMS(4, 16)),
                        scale = tensor(g, "scale", 2, TU_DIMS(1, 16)), mean = tensor(g, "mean", 2, TU_DIMS(4, 1)),
                        inv = tensor(g, "inv", 2, TU_DIMS(4, 1)), dx, dscale, dbias = 0;
        TU_OK(dnnjit_graph_layernorm_backward(g, dy, x, scale, mean, inv,
                                              &(dnnjit_norm_attr_t){.name = "lnb", .epsilon_value = 2e-5}, &dx,
                                              &dscale, with_dbias ? &dbias : NULL));
        TU_OK(dnnjit_tensor_set_output(g, dx, true));
        TU_OK(dnnjit_tensor_set_output(g, dscale, true));
        if (with_dbias)
            TU_OK(dnnjit_tensor_set_output(g, dbias, true));
        char *text;
        dnnjit_graph_t h = round_trip(g, &text);
        assert_null(strstr(text, "\"phase\""));
        assert_int_equal(node_named(h, "lnb")->attr.norm.phase, DNNJIT_NORM_PHASE_TRAINING);
        assert_int_equal(strstr(text, "\"DBIAS\": \"lnb::DBIAS\"") != NULL, with_dbias);
        free(text);
        dnnjit_graph_destroy(h);
        dnnjit_graph_destroy(g);
    }
}

static void rmsnorm_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t x = tu_tensor(g, "X", 2, TU_DIMS(4, 16), NULL, DNNJIT_DATA_TYPE_BFLOAT16),
                    scale = tu_tensor(g, "scale", 2, TU_DIMS(1, 16), NULL, DNNJIT_DATA_TYPE_BFLOAT16),
                    bias = tu_tensor(g, "bias", 2, TU_DIMS(1, 16), NULL, DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t y, inv, y2;
    TU_OK(dnnjit_graph_rmsnorm(g, x, scale, DNNJIT_TENSOR_NONE,
                               &(dnnjit_norm_attr_t){.name = "rms_train", .phase = DNNJIT_NORM_PHASE_TRAINING}, &y,
                               &inv));
    TU_OK(dnnjit_graph_rmsnorm(g, x, scale, bias, &(dnnjit_norm_attr_t){.name = "rms_infer", .norm_axes = 1}, &y2,
                               NULL));
    dnnjit_tensor_t outs[] = {y, inv, y2};
    for (int i = 0; i < 3; i++)
        TU_OK(dnnjit_tensor_set_output(g, outs[i], true));
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    /* Statistics default to FLOAT whatever the io type. */
    const char *inv_json = strstr(text, "\"rms_train::INV_VARIANCE\": {");
    assert_non_null(inv_json);
    assert_non_null(strstr(inv_json, "\"resolved_data_type\": \"FLOAT\""));
    assert_int_equal(tensor_named(h, "rms_train::INV_VARIANCE")->resolved_type, DNNJIT_DATA_TYPE_FLOAT);
    assert_int_equal(node_named(h, "rms_train")->in[2], DNNJIT_TENSOR_NONE);
    assert_string_equal(slot_name(h, node_named(h, "rms_infer")->in[2]), "bias");
    free(text);
    dnnjit_graph_destroy(h);
    dnnjit_graph_destroy(g);
}

static void rmsnorm_backward_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t dy = tensor(g, "DY", 3, TU_DIMS(2, 4, 16)), x = tensor(g, "X", 3, TU_DIMS(2, 4, 16)),
                    scale = tensor(g, "scale", 3, TU_DIMS(1, 1, 16)), inv = tensor(g, "inv", 3, TU_DIMS(2, 4, 1)),
                    dx, dscale, dbias;
    TU_OK(dnnjit_graph_rmsnorm_backward(g, dy, x, scale, inv, &(dnnjit_norm_attr_t){.name = "rmsb", .norm_axes = 1},
                                        &dx, &dscale, &dbias));
    dnnjit_tensor_t outs[] = {dx, dscale, dbias};
    for (int i = 0; i < 3; i++)
        TU_OK(dnnjit_tensor_set_output(g, outs[i], true));
    round_trip_has(g, FRAGMENTS("\"tag\": \"RMSNORM_BACKWARD\"", "\"norm_axes\": 1", "\"INV_VARIANCE\": \"inv\""));
    dnnjit_graph_destroy(g);
}

static void sdpa_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t q = tu_tensor(g, "Q", 4, TU_DIMS(1, 4, 8, 16), NULL, DNNJIT_DATA_TYPE_HALF),
                    k = tu_tensor(g, "K", 4, TU_DIMS(1, 2, 8, 16), NULL, DNNJIT_DATA_TYPE_HALF),
                    v = tu_tensor(g, "V", 4, TU_DIMS(1, 2, 8, 16), NULL, DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t o, stats, o2;
    TU_OK(dnnjit_graph_sdpa(g, q, k, v,
                            &(dnnjit_sdpa_attr_t){.name = "attn", .has_attn_scale = true, .attn_scale = 0.125,
                                                  .use_causal_mask = true, .generate_stats = true},
                            &o, &stats));
    TU_OK(dnnjit_graph_sdpa(g, q, k, v, &(dnnjit_sdpa_attr_t){.name = "plain"}, &o2, NULL));
    dnnjit_tensor_t outs[] = {o, stats, o2};
    for (int i = 0; i < 3; i++)
        TU_OK(dnnjit_tensor_set_output(g, outs[i], true));
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    assert_non_null(strstr(text, "\"attn_scale\": 0.125"));
    assert_non_null(strstr(text, "\"use_causal_mask\": true"));
    const dnnjit__node_t *attn = node_named(h, "attn"), *plain = node_named(h, "plain");
    assert_true(attn->attr.sdpa.has_attn_scale && attn->attr.sdpa.use_causal_mask && attn->attr.sdpa.generate_stats);
    assert_false(plain->attr.sdpa.has_attn_scale || plain->attr.sdpa.use_causal_mask ||
                 plain->attr.sdpa.generate_stats);
    assert_memory_equal(tensor_named(h, "attn::STATS")->dim, TU_DIMS(1, 4, 8, 1), 4 * sizeof(int64_t));
    free(text);
    dnnjit_graph_destroy(h);
    dnnjit_graph_destroy(g);
}

/* Fixed scalar values, including the ones JSON numbers cannot hold. */
static void pass_by_value_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    const double values[] = {-INFINITY, INFINITY, NAN, -0.0, 5e-324, DBL_MAX};
    const char *names[] = {"neg_inf", "pos_inf", "nan", "neg_zero", "denormal", "max"};
    dnnjit_tensor_t cur = tensor(g, "X", 2, TU_DIMS(2, 3));
    for (int i = 0; i < 7; i++) {
        dnnjit_tensor_t s = i < 6 ? scalar(g, names[i], true, values[i]) : scalar(g, "runtime", false, 0);
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, cur, s, 0, &cur));
    }
    TU_OK(dnnjit_tensor_set_output(g, cur, true));
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    assert_non_null(strstr(text, "\"pass_by_value\": \"-inf\""));
    assert_non_null(strstr(text, "\"pass_by_value\": \"inf\""));
    assert_non_null(strstr(text, "\"pass_by_value\": \"nan\""));
    assert_non_null(strstr(text, "\"pass_by_value\": -0.0"));
    assert_non_null(strstr(text, "\"pass_by_value\": null"));
    for (int i = 0; i < 6; i++)
        assert_same_double(tensor_named(h, names[i])->value, values[i]);
    assert_true(signbit(tensor_named(h, "neg_zero")->value));
    assert_false(tensor_named(h, "runtime")->has_value);
    assert_true(tensor_named(h, "runtime")->is_pass_by_value);
    free(text);
    dnnjit_graph_destroy(h);
    dnnjit_graph_destroy(g);
}

/* Random doubles over the whole exponent range, and special ones, as attributes. */
static void doubles_round_trip_exactly(void **state)
{
    (void)state;
    tu_seed(7);
    const double special[] = {0.1, 1.0 / 3.0, DBL_MIN, DBL_MAX, -DBL_MAX, 5e-324, -0.0, INFINITY, -INFINITY, NAN};
    const int n_special = (int)(sizeof special / sizeof special[0]);
    for (int i = 0; i < 200; i++) {
        double v[4];
        for (int j = 0; j < 4; j++)
            v[j] = i < n_special && j == 0 ? special[i]
                                           : ldexp(tu_uniform(-1, 1), (int)tu_uniform(-1000, 1000));
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t x = tensor(g, "X", 1, TU_DIMS(4)), y;
        TU_OK(dnnjit_graph_pointwise(g,
                                     &(dnnjit_pointwise_attr_t){.name = "relu", .mode = DNNJIT_POINTWISE_RELU_FWD,
                                                                .relu_lower_clip = v[0], .relu_upper_clip = v[1],
                                                                .relu_lower_clip_slope = v[2], .swish_beta = v[3]},
                                     x, 0, 0, &y));
        TU_OK(dnnjit_tensor_set_output(g, y, true));
        dnnjit_graph_t h = round_trip(g, NULL);
        const dnnjit__node_t *n = node_named(h, "relu");
        assert_same_double(n->attr.pointwise.relu_lower_clip, v[0]);
        assert_same_double(n->attr.pointwise.relu_upper_clip, v[1]);
        assert_same_double(n->attr.pointwise.relu_lower_clip_slope, v[2]);
        assert_same_double(n->attr.pointwise.swish_beta, v[3]);
        dnnjit_graph_destroy(h);
        dnnjit_graph_destroy(g);
    }
}

/* The data type as the user set it (NOT_SET allowed) is what is read back; the resolved
 * one is written beside it. */
static void data_types_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL,
                              &(dnnjit_graph_attr_t){.name = "types", .io_data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                     .intermediate_data_type = DNNJIT_DATA_TYPE_BFLOAT16,
                                                     .compute_data_type = DNNJIT_DATA_TYPE_DOUBLE},
                              &g));
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(4, 8), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(8, 2), NULL, DNNJIT_DATA_TYPE_HALF), c, d;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "neg", .mode = DNNJIT_POINTWISE_NEG,
                                                               .compute_data_type = DNNJIT_DATA_TYPE_HALF},
                                 c, 0, 0, &d));
    TU_OK(dnnjit_tensor_set_output(g, d, true));
    TU_OK(dnnjit_tensor_set_data_type(g, d, DNNJIT_DATA_TYPE_FP8_E4M3));
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    const char *a_json = strstr(text, "\"A\": {");
    assert_non_null(a_json);
    assert_non_null(strstr(a_json, "\"data_type\": \"NOT_SET\""));
    assert_non_null(strstr(text, "\"intermediate_data_type\": \"BFLOAT16\""));
    assert_int_equal(tensor_named(h, "A")->data_type, DNNJIT_DATA_TYPE_NOT_SET);
    assert_int_equal(tensor_named(h, "A")->resolved_type, DNNJIT_DATA_TYPE_FLOAT);
    assert_int_equal(tensor_named(h, "mm::C")->resolved_type, DNNJIT_DATA_TYPE_BFLOAT16);
    assert_int_equal(tensor_named(h, "neg::OUT_0")->data_type, DNNJIT_DATA_TYPE_FP8_E4M3);
    assert_int_equal(node_named(h, "mm")->compute_type, DNNJIT_DATA_TYPE_NOT_SET);
    assert_int_equal(node_named(h, "neg")->compute_type, DNNJIT_DATA_TYPE_HALF);
    assert_int_equal(h->compute_type, DNNJIT_DATA_TYPE_DOUBLE);
    free(text);
    dnnjit_graph_destroy(h);
    dnnjit_graph_destroy(g);
}

/* Strides the user fixed on an op's output stay fixed (and dims stay inferred). */
static void fixed_output_strides_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tensor(g, "A", 2, TU_DIMS(3, 5)), b = tensor(g, "B", 2, TU_DIMS(5, 7)), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_tensor_set_stride(g, c, 2, TU_DIMS(1, 3))); /* column-major 3x7 */
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    const dnnjit__tensor_t *tc = tensor_named(h, "mm::C");
    assert_false(tc->dims_set);
    assert_true(tc->strides_set);
    assert_memory_equal(tc->stride, TU_DIMS(1, 3), 2 * sizeof(int64_t));
    assert_memory_equal(tc->dim, TU_DIMS(3, 7), 2 * sizeof(int64_t));
    assert_non_null(strstr(text, "\"stride\": [1, 3]"));
    free(text);
    dnnjit_graph_destroy(h);
    dnnjit_graph_destroy(g);
}

static void uids_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tensor(g, "A", 2, TU_DIMS(2, 2)), b = tensor(g, "B", 2, TU_DIMS(2, 2)), c;
    TU_OK(dnnjit_tensor_set_uid(g, a, INT64_MIN));
    TU_OK(dnnjit_tensor_set_uid(g, b, -5));
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_uid(g, c, INT64_MAX));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    char *text;
    dnnjit_graph_t h = round_trip(g, &text);
    assert_non_null(strstr(text, "\"uid\": -9223372036854775808"));
    assert_non_null(strstr(text, "\"uid\": 9223372036854775807"));
    assert_true(tensor_named(h, "A")->uid == INT64_MIN);
    assert_int_equal(tensor_named(h, "B")->uid, -5);
    assert_true(tensor_named(h, "0::C")->uid == INT64_MAX);
    free(text);
    dnnjit_graph_destroy(h);
    dnnjit_graph_destroy(g);
}

/* Names with quotes, backslashes, brackets, control and non-ASCII characters. */
static void unusual_names_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(NULL, &(dnnjit_graph_attr_t){.name = "g \"1\"\n", .io_data_type = DNNJIT_DATA_TYPE_FLOAT},
                              &g));
    dnnjit_tensor_t a = tensor(g, "a \"[quoted]\" \\ {x}", 2, TU_DIMS(2, 3)), b = tensor(g, "b\tü€", 2, TU_DIMS(3, 4)), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm [\"1\"]"}, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    round_trip_has(g, FRAGMENTS("\"a \\\"[quoted]\\\" \\\\ {x}\": {", "\"dim\": [2, 3]", "\"name\": \"mm [\\\"1\\\"]\""));
    dnnjit_graph_destroy(g);
}

/* ---- determinism and hand-written documents --------------------------------------------- */

static void output_is_deterministic(void **state)
{
    (void)state;
    dnnjit_graph_t g1 = seed000(), g2 = seed000();
    char *a = dump(g1), *b = dump(g2), *c = dump(g1);
    assert_string_equal(a, b);
    assert_string_equal(a, c);
    /* Indented, keys sorted: "context" < "dnnjit_version" < "json_version" < "nodes" < "tensors". */
    const char *keys[] = {"\n    \"context\"", "\n    \"dnnjit_version\"", "\n    \"json_version\"", "\n    \"nodes\"",
                          "\n    \"tensors\""};
    for (int i = 1; i < 5; i++)
        assert_true(strstr(a, keys[i - 1]) < strstr(a, keys[i]));
    free(a);
    free(b);
    free(c);
    dnnjit_graph_destroy(g1);
    dnnjit_graph_destroy(g2);
}

/* Nodes listed consumers first load, and come back in topological order. */
static void nodes_out_of_order(void **state)
{
    (void)state;
    char *fixture = read_fixture("out_of_order.json");
    dnnjit_graph_t g = load(fixture);
    assert_int_equal(g->node_count, 3);
    assert_string_equal(g->nodes[0].name, "mm");
    assert_string_equal(g->nodes[1].name, "bias");
    assert_string_equal(g->nodes[2].name, "relu");
    char *text = dump(g);
    assert_true(strstr(text, "\"name\": \"mm\"") < strstr(text, "\"name\": \"bias\""));
    assert_true(strstr(text, "\"name\": \"bias\"") < strstr(text, "\"name\": \"relu\""));
    free(text);
    free(fixture);
    dnnjit_graph_destroy(g);
}

/* The base of the invalid documents below: A[2,3,4] @ B[2,4,5] -> C (virtual) -> relu -> D. */
static const char *const base_doc =
    "{\n"
    " 'json_version': '1.0',\n"
    " 'context': {'name': 'small', 'io_data_type': 'FLOAT', 'compute_data_type': 'FLOAT'},\n"
    " 'tensors': {\n"
    "  'A': {'dim': [2, 3, 4], 'stride': [12, 4, 1], 'data_type': 'FLOAT', 'uid': 1},\n"
    "  'B': {'dim': [2, 4, 5], 'data_type': 'FLOAT', 'uid': 2},\n"
    "  'C': {'dim': [2, 3, 5], 'is_virtual': true, 'dim_set': false},\n"
    "  'D': {'dim': [2, 3, 5], 'uid': 4}\n"
    " },\n"
    " 'nodes': [\n"
    "  {'tag': 'MATMUL', 'name': 'mm', 'inputs': {'A': 'A', 'B': 'B'}, 'outputs': {'C': 'C'}, 'padding_value': 0},\n"
    "  {'tag': 'POINTWISE', 'name': 'relu', 'mode': 'RELU_FWD', 'inputs': {'IN_0': 'C'}, 'outputs': {'OUT_0': 'D'}}\n"
    " ]\n"
    "}\n";

/* Fields left out take their defaults: packed strides, types from the context, uids
 * assigned, nothing virtual or pass-by-value. */
static void hand_written_defaults(void **state)
{
    (void)state;
    char *text = dq(base_doc);
    dnnjit_graph_t g = load(text);
    const dnnjit__tensor_t *b = tensor_named(g, "B"), *c = tensor_named(g, "C"), *d = tensor_named(g, "D");
    assert_memory_equal(b->stride, TU_DIMS(20, 5, 1), 3 * sizeof(int64_t));
    assert_memory_equal(d->stride, TU_DIMS(15, 5, 1), 3 * sizeof(int64_t));
    assert_int_equal(c->data_type, DNNJIT_DATA_TYPE_NOT_SET);
    assert_int_equal(c->resolved_type, DNNJIT_DATA_TYPE_FLOAT);
    assert_true(c->is_virtual);
    assert_false(d->is_virtual || d->is_pass_by_value || d->has_value);
    assert_true(c->has_uid);
    assert_true(c->uid != 1 && c->uid != 2 && c->uid != 4);
    assert_int_equal(d->uid, 4);
    assert_string_equal(g->name, "small");
    assert_int_equal(g->intermediate_type, DNNJIT_DATA_TYPE_NOT_SET);
    /* A graph input's dims are its own; without a "stride" its strides are derived, as for
     * dnnjit_graph_tensor with NULL strides. */
    assert_true(b->dims_set && !b->strides_set);
    assert_false(c->dims_set || c->strides_set);
    free(text);
    dnnjit_graph_destroy(g);
}

/* ---- arguments and writing errors ------------------------------------------------------ */

static void null_arguments(void **state)
{
    (void)state;
    dnnjit_graph_t g = seed000(), out = g;
    char *text = (char *)"untouched";
    TU_FAILS(dnnjit_graph_to_json(NULL, &text), DNNJIT_STATUS_BAD_PARAM, "graph is NULL");
    TU_FAILS(dnnjit_graph_to_json(g, NULL), DNNJIT_STATUS_BAD_PARAM, "json is NULL");
    TU_FAILS(dnnjit_graph_from_json(NULL, NULL, &out), DNNJIT_STATUS_BAD_PARAM, "json is NULL");
    assert_null(out);
    TU_FAILS(dnnjit_graph_from_json(NULL, "{}", NULL), DNNJIT_STATUS_BAD_PARAM, "out is NULL");
    dnnjit_graph_destroy(g);
}

static void to_json_validates_first(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    char *text = (char *)"untouched";
    TU_FAILS(dnnjit_graph_to_json(g, &text), DNNJIT_STATUS_INVALID_GRAPH, "has no nodes");
    assert_null(text);
    dnnjit_graph_destroy(g);
}

static void non_utf8_name_cannot_be_written(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tensor(g, "bad\xff", 2, TU_DIMS(2, 2)), b = tensor(g, "B", 2, TU_DIMS(2, 2)), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    char *text = NULL;
    TU_FAILS(dnnjit_graph_to_json(g, &text), DNNJIT_STATUS_NOT_SUPPORTED, "is not valid UTF-8");
    assert_null(text);
    dnnjit_graph_destroy(g);
}

/* ---- parse errors ------------------------------------------------------------------------ */

/* Loading fails with `status`, a message holding `fragment`, and *out left NULL. */
static void expect_load_failure(const char *text, dnnjit_status_t status, const char *fragment)
{
    dnnjit_graph_t out = (dnnjit_graph_t)&out; /* any non-NULL value: it must be reset */
    TU_FAILS(dnnjit_graph_from_json(NULL, text, &out), status, fragment);
    assert_null(out);
}

/* The column is that of the last character of the token at fault, counted from 1. */
static void parse_error_bad_token_position(void **state)
{
    (void)state;
    /* Line 3 is `  "b": x`: the x is its 8th character. */
    expect_load_failure("{\n  \"a\": 1,\n  \"b\": x\n}", DNNJIT_STATUS_PARSE_ERROR, "line 3, column 8");
    expect_load_failure("{\n  \"a\": 1,\n  \"b\": x\n}", DNNJIT_STATUS_PARSE_ERROR, "invalid token");
}

static void parse_error_stray_comma_position(void **state)
{
    (void)state;
    /* Line 3 is `    "nodes": [,]`: the comma is its 15th character. */
    expect_load_failure("{\n    \"json_version\": \"1.0\",\n    \"nodes\": [,]\n}", DNNJIT_STATUS_PARSE_ERROR,
                        "line 3, column 15");
}

static void parse_error_truncated(void **state)
{
    (void)state;
    char *text = dq(base_doc);
    text[strlen(text) / 2] = '\0';
    expect_load_failure(text, DNNJIT_STATUS_PARSE_ERROR, "end of file");
    free(text);
    expect_load_failure("", DNNJIT_STATUS_PARSE_ERROR, "line 1, column 0");
}

static void parse_error_duplicate_tensor(void **state)
{
    (void)state;
    /* A second "A" on line 2, whose closing quote is its 5th character. */
    expect_load_failure("{\"tensors\": {\"A\": {},\n  \"A\": {}}}", DNNJIT_STATUS_PARSE_ERROR, "line 2, column 5");
    expect_load_failure("{\"tensors\": {\"A\": {},\n  \"A\": {}}}", DNNJIT_STATUS_PARSE_ERROR, "duplicate");
}

static void parse_error_integer_too_big(void **state)
{
    (void)state;
    char *text = dq(base_doc);
    char *uid = strstr(text, "\"uid\": 4");
    assert_non_null(uid);
    char *big = malloc(strlen(text) + 32);
    assert_non_null(big);
    sprintf(big, "%.*s\"uid\": 9223372036854775808%s", (int)(uid - text), text, uid + strlen("\"uid\": 4"));
    expect_load_failure(big, DNNJIT_STATUS_PARSE_ERROR, "too big integer");
    free(big);
    free(text);
}

static void parse_error_invalid_utf8(void **state)
{
    (void)state;
    expect_load_failure("{\"json_version\": \"1.\xff\"}", DNNJIT_STATUS_PARSE_ERROR, "line 1");
}

/* ---- well-formed documents describing bad graphs --------------------------------------- */

/* base_doc with the first `from` replaced by `to` must fail with `status` and `fragment`. */
static void expect_patched_failure(const char *from, const char *to, dnnjit_status_t status, const char *fragment)
{
    const char *at = strstr(base_doc, from);
    if (!at)
        fail_msg("the base document lacks %s", from);
    size_t head = (size_t)(at - base_doc);
    char *patched = malloc(strlen(base_doc) + strlen(to) + 1);
    assert_non_null(patched);
    sprintf(patched, "%.*s%s%s", (int)head, base_doc, to, at + strlen(from));
    char *text = dq(patched);
    expect_load_failure(text, status, fragment);
    free(text);
    free(patched);
}

#define INVALID_GRAPH DNNJIT_STATUS_INVALID_GRAPH

/* X(test name, text in base_doc, its replacement, status, message fragment). */
#define PATCHED_CASES(X)                                                                                             \
    X(top_level_unknown_field, "'tensors'", "'tensorz'", INVALID_GRAPH, "document: unknown field \"tensorz\"")               \
    X(wrong_json_version, "'1.0'", "'2.0'", INVALID_GRAPH, "json_version is \"2.0\" but this library reads \"1.0\"") \
    X(json_version_not_string, "'json_version': '1.0'", "'json_version': 1.0", INVALID_GRAPH,                        \
      "field \"json_version\" must be a string, not a real number")                                                  \
    X(unknown_io_type, "'io_data_type': 'FLOAT'", "'io_data_type': 'FLOAT16'", INVALID_GRAPH,                        \
      "context: field \"io_data_type\": unknown data type \"FLOAT16\"")                                              \
    X(tensor_not_object, "'D': {'dim': [2, 3, 5], 'uid': 4}", "'D': [2, 3, 5]", INVALID_GRAPH,                       \
      "tensor \"D\": must be an object, not an array")                                                               \
    X(tensor_missing_dim, "'D': {'dim': [2, 3, 5], ", "'D': {", INVALID_GRAPH, "tensor \"D\": missing field \"dim\"") \
    X(tensor_unknown_field, "'stride': [12, 4, 1]", "'strides': [12, 4, 1]", INVALID_GRAPH,                          \
      "tensor \"A\": unknown field \"strides\"")                                                                     \
    X(dim_not_array, "'dim': [2, 3, 4]", "'dim': '2, 3, 4'", INVALID_GRAPH,                                          \
      "tensor \"A\": field \"dim\" must be an array of integers, not a string")                                      \
    X(dim_entry_real, "'dim': [2, 3, 4]", "'dim': [2, 3.5, 4]", INVALID_GRAPH, "entry 1 is a real number")            \
    X(dim_too_long, "'dim': [2, 3, 4]", "'dim': [1, 1, 1, 1, 1, 1, 2, 3, 4]", INVALID_GRAPH,                         \
      "field \"dim\" has 9 entries but at most 8 are allowed")                                                       \
    X(dim_zero, "'dim': [2, 4, 5]", "'dim': [2, 0, 5]", INVALID_GRAPH, "tensor \"B\": dim[1]=0")                      \
    X(stride_length_mismatch, "'stride': [12, 4, 1]", "'stride': [4, 1]", INVALID_GRAPH,                             \
      "tensor \"A\": field \"stride\" has 2 entries but \"dim\" has 3")                                              \
    X(stride_negative, "'stride': [12, 4, 1]", "'stride': [12, -4, 1]", INVALID_GRAPH, "stride[1]=-4 is negative")    \
    X(uid_real, "'uid': 1", "'uid': 1.5", INVALID_GRAPH, "tensor \"A\": field \"uid\" must be an integer, not a real") \
    X(uid_string, "'uid': 2", "'uid': '2'", INVALID_GRAPH, "tensor \"B\": field \"uid\" must be an integer, not a string") \
    X(uid_assigned_without_uid, "'is_virtual': true,", "'is_virtual': true, 'uid_assigned': true,", INVALID_GRAPH,   \
      "tensor \"C\": missing field \"uid\"")                                                                         \
    X(duplicate_uid, "'uid': 2", "'uid': 1", INVALID_GRAPH, "both have uid 1")                                       \
    X(is_virtual_not_bool, "'is_virtual': true", "'is_virtual': 1", INVALID_GRAPH,                                   \
      "tensor \"C\": field \"is_virtual\" must be a boolean, not an integer")                                        \
    X(name_disagrees_with_key, "'D': {", "'D': {'name': 'E', ", INVALID_GRAPH,                                       \
      "tensor \"D\": field \"name\" is \"E\" but the tensor's key is \"D\"")                                         \
    X(unknown_data_type, "'data_type': 'FLOAT', 'uid': 2", "'data_type': 'float', 'uid': 2", INVALID_GRAPH,          \
      "tensor \"B\": field \"data_type\": unknown data type \"float\"")                                              \
    X(pass_by_value_bad, "'uid': 4", "'uid': 4, 'pass_by_value': 'infinity'", INVALID_GRAPH,                         \
      "field \"pass_by_value\" must be a number, \"inf\", \"-inf\", \"nan\" or null, not a string")                  \
    X(value_without_pass_by_value, "'uid': 4", "'uid': 4, 'pass_by_value': 2", INVALID_GRAPH,                        \
      "tensor \"D\" has a fixed value but is not pass-by-value")                                                     \
    X(virtual_input, "'uid': 2", "'uid': 2, 'is_virtual': true", INVALID_GRAPH,                                      \
      "tensor \"B\" is virtual but no node produces it")                                                             \
    X(node_not_object, "  {'tag': 'POINTWISE'", "  7, {'tag': 'POINTWISE'", INVALID_GRAPH,                           \
      "node #1: must be an object, not an integer")                                                                  \
    X(node_missing_name, "'name': 'mm', ", "", INVALID_GRAPH, "node #0: missing field \"name\"")                      \
    X(node_missing_tag, "'tag': 'MATMUL', ", "", INVALID_GRAPH, "node \"mm\": missing field \"tag\"")                 \
    X(unknown_tag, "'MATMUL'", "'MATMULL'", INVALID_GRAPH, "node \"mm\": field \"tag\": unknown op \"MATMULL\"")     \
    X(unknown_mode, "'RELU_FWD'", "'RELU'", INVALID_GRAPH,                                                           \
      "node \"relu\": field \"mode\": unknown pointwise mode \"RELU\"")                                              \
    X(missing_mode, "'mode': 'RELU_FWD', ", "", INVALID_GRAPH, "node \"relu\": missing field \"mode\"")               \
    X(node_unknown_field, "'padding_value': 0", "'padding': 0", INVALID_GRAPH, "node \"mm\": unknown field \"padding\"") \
    X(attribute_wrong_type, "'padding_value': 0", "'padding_value': true", INVALID_GRAPH,                            \
      "node \"mm\": field \"padding_value\" must be a number, \"inf\", \"-inf\" or \"nan\", not a boolean")          \
    X(attribute_of_other_op, "'padding_value': 0", "'padding_value': 0, 'mode': 'ADD'", INVALID_GRAPH,               \
      "node \"mm\": unknown field \"mode\"")                                                                         \
    X(unknown_compute_type, "'name': 'mm', ", "'name': 'mm', 'compute_data_type': 'FP32', ", INVALID_GRAPH,          \
      "node \"mm\": field \"compute_data_type\": unknown data type \"FP32\"")                                        \
    X(unknown_input_tensor, "{'A': 'A', ", "{'A': 'X', ", INVALID_GRAPH,                                             \
      "node \"mm\": input \"A\" refers to unknown tensor \"X\"")                                                     \
    X(unknown_output_tensor, "{'OUT_0': 'D'}", "{'OUT_0': 'E'}", INVALID_GRAPH,                                       \
      "node \"relu\": output \"OUT_0\" refers to unknown tensor \"E\"")                                              \
    X(unknown_input_port, "{'A': 'A', 'B': 'B'}", "{'A': 'A', 'X': 'B'}", INVALID_GRAPH,                             \
      "node \"mm\": matmul has no input \"X\" (its inputs are A, B)")                                                \
    X(unknown_output_port, "{'C': 'C'}", "{'Y': 'C'}", INVALID_GRAPH,                                                \
      "node \"mm\": matmul has no output \"Y\" (its outputs are C)")                                                 \
    X(port_not_string, "{'A': 'A', ", "{'A': ['A'], ", INVALID_GRAPH,                                                \
      "node \"mm\": input \"A\" must be a tensor name (a string), not an array")                                     \
    X(inputs_missing, "'inputs': {'IN_0': 'C'}, ", "", INVALID_GRAPH, "node \"relu\": missing field \"inputs\"")      \
    X(missing_output, "'outputs': {'C': 'C'}", "'outputs': {}", INVALID_GRAPH, "node \"mm\": output C is missing")    \
    X(missing_input, "{'A': 'A', 'B': 'B'}", "{'A': 'A'}", INVALID_GRAPH, "matmul \"mm\": input B is missing")        \
    X(pointwise_arity, "{'IN_0': 'C'}", "{'IN_0': 'C', 'IN_1': 'A'}", INVALID_GRAPH, "mode RELU_FWD takes 1 input")  \
    X(double_producer, "{'IN_0': 'C'}, 'outputs': {'OUT_0': 'D'}", "{'IN_0': 'C'}, 'outputs': {'OUT_0': 'C'}",        \
      INVALID_GRAPH, "tensor \"C\" is written by node \"mm\" and by node \"relu\"")                                  \
    X(cycle, "{'A': 'A', 'B': 'B'}", "{'A': 'D', 'B': 'B'}", INVALID_GRAPH, "cycle")                                 \
    X(shape_mismatch, "'dim': [2, 4, 5]", "'dim': [2, 6, 5]", INVALID_GRAPH, "A.dim[2]=4 but B.dim[1]=6")            \
    X(fixed_dims_disagree, "'dim': [2, 3, 5], 'is_virtual': true, 'dim_set': false",                                 \
      "'dim': [2, 3, 6], 'is_virtual': true", INVALID_GRAPH, "has dims [2,3,6] but the inputs give [2,3,5]")

#define PATCHED_TEST(name, from, to, status, fragment)                                                               \
    static void invalid_##name(void **state)                                                                         \
    {                                                                                                                \
        (void)state;                                                                                                 \
        expect_patched_failure(from, to, status, fragment);                                                          \
    }
PATCHED_CASES(PATCHED_TEST)
#undef PATCHED_TEST

/* Documents that base_doc cannot be patched into, written whole. */
static void expect_document_failure(const char *single_quoted, dnnjit_status_t status, const char *fragment)
{
    char *text = dq(single_quoted);
    expect_load_failure(text, status, fragment);
    free(text);
}

static void invalid_top_level_array(void **state)
{
    (void)state;
    expect_document_failure("[{'json_version': '1.0'}]", INVALID_GRAPH,
                            "document: the top level must be an object, not an array");
}

static void invalid_missing_required_top_fields(void **state)
{
    (void)state;
    expect_document_failure("{'json_version': '1.0', 'context': {}, 'nodes': []}", INVALID_GRAPH,
                            "document: missing field \"tensors\"");
    expect_document_failure("{'json_version': '1.0', 'context': {}, 'tensors': {}}", INVALID_GRAPH,
                            "document: missing field \"nodes\"");
    expect_document_failure("{'context': {}, 'tensors': {}, 'nodes': []}", INVALID_GRAPH,
                            "document: missing field \"json_version\"");
    expect_document_failure("{'json_version': '1.0', 'tensors': {}, 'nodes': []}", INVALID_GRAPH,
                            "document: missing field \"context\"");
    expect_document_failure("{'json_version': '1.0', 'context': [], 'tensors': {}, 'nodes': []}", INVALID_GRAPH,
                            "document: field \"context\" must be an object, not an array");
    expect_document_failure("{'json_version': '1.0', 'context': {}, 'tensors': {}, 'nodes': {}}", INVALID_GRAPH,
                            "document: field \"nodes\" must be an array, not an object");
}

static void invalid_empty_graph(void **state)
{
    (void)state;
    expect_document_failure("{'json_version': '1.0', 'context': {'name': 'e'}, 'tensors': {}, 'nodes': []}",
                            INVALID_GRAPH, "graph \"e\" has no nodes");
}

/* One softmax, layernorm or sdpa node over P [2, 8] (and Q, K, V [1, 1, 2, 8]). */
static void expect_node_failure(const char *tensors, const char *node, const char *fragment)
{
    char doc[2048];
    snprintf(doc, sizeof doc,
             "{'json_version': '1.0', 'context': {'io_data_type': 'FLOAT'},\n"
             " 'tensors': {'P': {'dim': [2, 8]}, 'Q': {'dim': [1, 1, 2, 8]}, 'K': {'dim': [1, 1, 2, 8]},\n"
             "             'V': {'dim': [1, 1, 2, 8]}, 'G': {'dim': [1, 8]}, 'H': {'dim': [1, 8]}, %s},\n"
             " 'nodes': [%s]}",
             tensors, node);
    expect_document_failure(doc, INVALID_GRAPH, fragment);
}

static void invalid_softmax_stats_outputs(void **state)
{
    (void)state;
    expect_node_failure("'S': {'dim': [2, 8]}",
                        "{'tag': 'SOFTMAX', 'name': 'sm', 'stats': 'LOG_SUM_EXP', 'inputs': {'P': 'P'},"
                        " 'outputs': {'S': 'S'}}",
                        "node \"sm\": output STATS_0 is missing (field \"stats\" calls for it)");
    expect_node_failure("'S': {'dim': [2, 8]}, 'M': {'dim': [2, 1]}",
                        "{'tag': 'SOFTMAX', 'name': 'sm', 'inputs': {'P': 'P'}, 'outputs': {'S': 'S', 'STATS_0': 'M'}}",
                        "node \"sm\": output STATS_0 is given but field \"stats\" does not call for it");
    expect_node_failure("'S': {'dim': [2, 8]}",
                        "{'tag': 'SOFTMAX', 'name': 'sm', 'stats': 'ALL', 'inputs': {'P': 'P'}, 'outputs': {'S': 'S'}}",
                        "node \"sm\": field \"stats\": unknown softmax stats kind \"ALL\"");
}

/* A field left out takes its default; a field given is used as it is, 0 included, and a
 * softplus beta of 0 is refused. */
static void defaulted_attribute_fields(void **state)
{
    (void)state;
    char doc[1024];
    const char *const nodes[] = {"'mode': 'ELU_FWD'", "'mode': 'ELU_FWD', 'elu_alpha': 0"};
    const double want[] = {1.0, 0.0};
    for (int i = 0; i < 2; i++) {
        snprintf(doc, sizeof doc,
                 "{'json_version': '1.0', 'context': {'io_data_type': 'FLOAT'},"
                 " 'tensors': {'P': {'dim': [2, 8]}, 'Y': {'dim': [2, 8]}},"
                 " 'nodes': [{'tag': 'POINTWISE', 'name': 'e', %s, 'inputs': {'IN_0': 'P'},"
                 " 'outputs': {'OUT_0': 'Y'}}]}",
                 nodes[i]);
        char *text = dq(doc);
        dnnjit_graph_t g = load(text);
        assert_true(node_named(g, "e")->attr.pointwise.elu_alpha == want[i]);
        free(text);
        dnnjit_graph_destroy(g);
    }
    expect_node_failure("'Y': {'dim': [2, 8]}",
                        "{'tag': 'POINTWISE', 'name': 'sp', 'mode': 'SOFTPLUS_FWD', 'softplus_beta': 0,"
                        " 'inputs': {'IN_0': 'P'}, 'outputs': {'OUT_0': 'Y'}}",
                        "pointwise \"sp\": softplus_beta is 0, and softplus divides by it");
}

static void invalid_layernorm_phase_outputs(void **state)
{
    (void)state;
    expect_node_failure("'Y': {'dim': [2, 8]}, 'M': {'dim': [2, 1]}",
                        "{'tag': 'LAYERNORM', 'name': 'ln', 'inputs': {'X': 'P', 'SCALE': 'G', 'BIAS': 'H'},"
                        " 'outputs': {'Y': 'Y', 'MEAN': 'M'}}",
                        "node \"ln\": output MEAN is given but field \"phase\" does not call for it");
    expect_node_failure("'Y': {'dim': [2, 8]}",
                        "{'tag': 'LAYERNORM', 'name': 'ln', 'phase': 'TRAIN', 'inputs': {'X': 'P', 'SCALE': 'G',"
                        " 'BIAS': 'H'}, 'outputs': {'Y': 'Y'}}",
                        "node \"ln\": field \"phase\": unknown norm phase \"TRAIN\"");
    expect_node_failure("'Y': {'dim': [2, 8]}",
                        "{'tag': 'LAYERNORM', 'name': 'ln', 'norm_axes': 3, 'inputs': {'X': 'P', 'SCALE': 'G',"
                        " 'BIAS': 'H'}, 'outputs': {'Y': 'Y'}}",
                        "norm_axes=3 but X (tensor \"P\") has 2 dims");
    expect_node_failure("'Y': {'dim': [2, 8]}",
                        "{'tag': 'LAYERNORM', 'name': 'ln', 'norm_axes': 4294967296, 'inputs': {'X': 'P',"
                        " 'SCALE': 'G', 'BIAS': 'H'}, 'outputs': {'Y': 'Y'}}",
                        "node \"ln\": field \"norm_axes\" is 4294967296, outside");
}

static void invalid_sdpa_stats_output(void **state)
{
    (void)state;
    expect_node_failure("'O': {'dim': [1, 1, 2, 8]}",
                        "{'tag': 'SDPA', 'name': 'attn', 'generate_stats': true, 'inputs': {'Q': 'Q', 'K': 'K',"
                        " 'V': 'V'}, 'outputs': {'O': 'O'}}",
                        "node \"attn\": output STATS is missing (field \"generate_stats\" calls for it)");
    expect_node_failure("'O': {'dim': [1, 1, 2, 8]}",
                        "{'tag': 'SDPA', 'name': 'attn', 'has_attn_scale': true, 'attn_scale': 'inf',"
                        " 'inputs': {'Q': 'Q', 'K': 'K', 'V': 'V'}, 'outputs': {'O': 'O'}}",
                        "sdpa \"attn\": attn_scale is not finite");
}

static void invalid_reduction_axes(void **state)
{
    (void)state;
    const char *fmt = "{'tag': 'REDUCTION', 'name': 'sum', 'mode': 'ADD', 'axes': %s, 'inputs': {'X': 'P'},"
                      " 'outputs': {'Y': 'Y'}}";
    char node[512];
    snprintf(node, sizeof node, fmt, "[1, 1]");
    expect_node_failure("'Y': {'dim': [2, 1]}", node, "node \"sum\": field \"axes\": axis 1 is listed twice");
    snprintf(node, sizeof node, fmt, "[8]");
    expect_node_failure("'Y': {'dim': [2, 1]}", node, "node \"sum\": field \"axes\": axis 8 is outside 0..7");
    snprintf(node, sizeof node, fmt, "[3]");
    expect_node_failure("'Y': {'dim': [2, 1]}", node, "names axis 3 but X (tensor \"P\") has 2 dims");
    snprintf(node, sizeof node, fmt, "1");
    expect_node_failure("'Y': {'dim': [2, 1]}", node, "field \"axes\" must be an array of integers, not an integer");
}

/* The same checks as for a graph built through the C API guard pass-by-value tensors. */
static void invalid_pass_by_value_shape(void **state)
{
    (void)state;
    expect_node_failure("'s': {'dim': [2], 'is_pass_by_value': true, 'pass_by_value': 1}, 'O': {'dim': [2, 8]}",
                        "{'tag': 'POINTWISE', 'name': 'mul', 'mode': 'MUL', 'inputs': {'IN_0': 'P', 'IN_1': 's'},"
                        " 'outputs': {'OUT_0': 'O'}}",
                        "tensor \"s\": dim[0]=2 but a pass-by-value scalar has all dims 1");
}

int main(void)
{
#define PATCHED_ENTRY(name, from, to, status, fragment) cmocka_unit_test(invalid_##name),
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed000_round_trip),
        cmocka_unit_test(seed000_fixture_matches_api),
        cmocka_unit_test(matmul_attributes_round_trip),
        cmocka_unit_test(pointwise_attributes_round_trip),
        cmocka_unit_test(every_pointwise_mode_round_trips),
        cmocka_unit_test(reduction_round_trip),
        cmocka_unit_test(reduction_fixed_output_dims_round_trip),
        cmocka_unit_test(softmax_round_trip),
        cmocka_unit_test(softmax_backward_round_trip),
        cmocka_unit_test(layernorm_round_trip),
        cmocka_unit_test(layernorm_backward_round_trip),
        cmocka_unit_test(rmsnorm_round_trip),
        cmocka_unit_test(rmsnorm_backward_round_trip),
        cmocka_unit_test(sdpa_round_trip),
        cmocka_unit_test(pass_by_value_round_trip),
        cmocka_unit_test(doubles_round_trip_exactly),
        cmocka_unit_test(data_types_round_trip),
        cmocka_unit_test(fixed_output_strides_round_trip),
        cmocka_unit_test(uids_round_trip),
        cmocka_unit_test(unusual_names_round_trip),
        cmocka_unit_test(output_is_deterministic),
        cmocka_unit_test(nodes_out_of_order),
        cmocka_unit_test(hand_written_defaults),
        cmocka_unit_test(defaulted_attribute_fields),
        cmocka_unit_test(null_arguments),
        cmocka_unit_test(to_json_validates_first),
        cmocka_unit_test(non_utf8_name_cannot_be_written),
        cmocka_unit_test(parse_error_bad_token_position),
        cmocka_unit_test(parse_error_stray_comma_position),
        cmocka_unit_test(parse_error_truncated),
        cmocka_unit_test(parse_error_duplicate_tensor),
        cmocka_unit_test(parse_error_integer_too_big),
        cmocka_unit_test(parse_error_invalid_utf8),
        PATCHED_CASES(PATCHED_ENTRY)
        cmocka_unit_test(invalid_top_level_array),
        cmocka_unit_test(invalid_missing_required_top_fields),
        cmocka_unit_test(invalid_empty_graph),
        cmocka_unit_test(invalid_softmax_stats_outputs),
        cmocka_unit_test(invalid_layernorm_phase_outputs),
        cmocka_unit_test(invalid_sdpa_stats_output),
        cmocka_unit_test(invalid_reduction_axes),
        cmocka_unit_test(invalid_pass_by_value_shape),
    };
#undef PATCHED_ENTRY
    return cmocka_run_group_tests(tests, NULL, NULL);
}
