/* libFuzzer target: the input is a little program of graph-building calls. Each step
 * reads an action and its arguments from the bytes (a byte past the end reads as 0), so
 * that every input decodes to some sequence of public calls: tensors with odd ranks, dims
 * and strides, every op with any tensor ids and attributes, the setters, validation. The
 * calls may fail as they like; what they must keep is their promises: a failed op or
 * tensor call leaves the graph's counts as they were, and every failure has a message. The
 * graph then goes through fuzz_exercise. */
#include "fuzz.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* At most this many calls per input, so that one input stays fast. */
#define MAX_STEPS 48

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader_t;

static uint8_t byte(reader_t *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static bool flag(reader_t *r)
{
    return byte(r) & 1;
}

/* Dims are mostly small; the rest are the values validation must reject or bound. */
static int64_t dim_value(reader_t *r)
{
    static const int64_t values[] = {1, 2, 3, 4, 1, 2, 8, 16, 5, 7, 1, 0, -1, INT64_C(1) << 31, INT64_C(1) << 40,
                                     INT64_MAX};
    return values[byte(r) % 16];
}

static int64_t stride_value(reader_t *r)
{
    static const int64_t values[] = {1, 2, 3, 4, 8, 16, 64, 0, 1, 6, 12, -1, INT64_C(1) << 40, INT64_MAX, 32, 5};
    return values[byte(r) % 16];
}

static int64_t uid_value(reader_t *r)
{
    static const int64_t values[] = {0, 1, 2, 3, 4, 5, -1, INT64_MIN, INT64_MAX, INT64_MAX - 1, 100, 7};
    return values[byte(r) % 12];
}

static double real_value(reader_t *r)
{
    static const double values[] = {0, 1, -1, 0.5, 2, 1e-5, 0.125, -0.0, 1e300, -3, 0.75, 4};
    uint8_t b = byte(r);
    if (b >= 252)
        return b == 252 ? NAN : b == 253 ? INFINITY : b == 254 ? -INFINITY : 1e-320;
    return values[b % 12];
}

/* A data type: mostly valid ones (NOT_SET included), sometimes just outside the range. */
static dnnjit_data_type_t data_type(reader_t *r)
{
    uint8_t b = byte(r);
    if (b >= 248)
        return (dnnjit_data_type_t)(b & 1 ? -1 : DNNJIT_DATA_TYPE_COUNT_ + (b & 6));
    return (dnnjit_data_type_t)(b % DNNJIT_DATA_TYPE_COUNT_);
}

/* Names that collide with each other, with default node names ("0") and with the names
 * op outputs get ("0::C"); NULL asks for a default name. */
static const char *name_value(reader_t *r)
{
    static const char *const names[] = {NULL, NULL, NULL, NULL, "A", "B", "C", "0", "1", "0::C", "0::OUT_0", "1::Y",
                                        "", "t1", "t2", "mm"};
    return names[byte(r) % 16];
}

static int64_t tensor_count(dnnjit_graph_t g)
{
    int64_t count = 0;
    fuzz_require(dnnjit_graph_get_tensor_count(g, &count) == DNNJIT_STATUS_SUCCESS, "a graph counts its tensors");
    return count;
}

static int64_t node_count(dnnjit_graph_t g)
{
    int64_t count = 0;
    fuzz_require(dnnjit_graph_get_node_count(g, &count) == DNNJIT_STATUS_SUCCESS, "a graph counts its nodes");
    return count;
}

/* An existing tensor id mostly; sometimes NONE or an id past the last one. */
static dnnjit_tensor_t tensor_id(reader_t *r, dnnjit_graph_t g)
{
    uint8_t b = byte(r);
    int64_t count = tensor_count(g);
    if (b >= 248)
        return b == 248 ? DNNJIT_TENSOR_NONE : (dnnjit_tensor_t)(count + (b - 248));
    return count ? (dnnjit_tensor_t)(1 + b % count) : DNNJIT_TENSOR_NONE;
}

/* Reads a rank of 0 to 9 (8 is the largest valid) and that many dims. */
static int dims(reader_t *r, int64_t dim[DNNJIT_MAX_DIMS + 1])
{
    int ndim = byte(r) % (DNNJIT_MAX_DIMS + 2);
    for (int i = 0; i < ndim; i++)
        dim[i] = dim_value(r);
    return ndim;
}

/* Strides for `ndim` dims: none (packed), from the table, or packed in reverse (column
 * major) with a broadcast axis now and then. Products saturate instead of overflowing. */
static const int64_t *strides(reader_t *r, int ndim, const int64_t *dim, int64_t stride[DNNJIT_MAX_DIMS + 1])
{
    uint8_t mode = byte(r) % 4;
    if (mode == 0)
        return NULL;
    int64_t s = 1;
    for (int i = 0; i < ndim; i++) {
        if (mode == 1) {
            stride[i] = stride_value(r);
            continue;
        }
        stride[i] = mode == 3 && i == 0 ? 0 : s;
        if (__builtin_mul_overflow(s, dim[i] > 0 ? dim[i] : 1, &s))
            s = INT64_MAX;
    }
    return stride;
}

static dnnjit_status_t add_tensor(reader_t *r, dnnjit_graph_t g)
{
    int64_t dim[DNNJIT_MAX_DIMS + 1], stride[DNNJIT_MAX_DIMS + 1];
    int ndim = dims(r, dim);
    const int64_t *st = strides(r, ndim, dim, stride);
    uint8_t bits = byte(r);
    dnnjit_tensor_desc_t desc = {.ndim = ndim, .dim = dim, .stride = st};
    desc.name = name_value(r);
    desc.data_type = data_type(r);
    desc.is_virtual = (bits & 0x07) == 0x07;
    desc.is_pass_by_value = bits & 0x08;
    desc.has_value = bits & 0x10;
    desc.value = real_value(r);
    desc.has_uid = bits & 0x20;
    desc.uid = uid_value(r);
    dnnjit_tensor_t out;
    return dnnjit_graph_tensor(g, &desc, &out);
}

static dnnjit_status_t add_pointwise(reader_t *r, dnnjit_graph_t g)
{
    dnnjit_pointwise_attr_t attr;
    attr.name = name_value(r);
    attr.mode = (dnnjit_pointwise_mode_t)(byte(r) % (DNNJIT_POINTWISE_MODE_COUNT_ + 1));
    attr.compute_data_type = data_type(r);
    attr.relu_lower_clip = real_value(r);
    attr.has_relu_upper_clip = flag(r);
    attr.relu_upper_clip = real_value(r);
    attr.relu_lower_clip_slope = real_value(r);
    attr.elu_alpha = real_value(r);
    attr.softplus_beta = real_value(r);
    attr.swish_beta = real_value(r);
    uint8_t given_zero = byte(r);
    attr.has_elu_alpha = given_zero & 1;
    attr.has_softplus_beta = given_zero & 2;
    attr.has_swish_beta = given_zero & 4;
    /* Mostly the mode's own number of inputs, sometimes any number. */
    uint8_t b = byte(r);
    int given = b & 0xc0 ? dnnjit_pointwise_mode_arity(attr.mode) : b % 4;
    dnnjit_tensor_t in[3] = {0};
    for (int i = 0; i < given && i < 3; i++)
        in[i] = tensor_id(r, g);
    dnnjit_tensor_t out;
    return dnnjit_graph_pointwise(g, &attr, in[0], in[1], in[2], flag(r) ? NULL : &out);
}

static dnnjit_status_t add_norm(reader_t *r, dnnjit_graph_t g, bool backward)
{
    bool rms = flag(r);
    dnnjit_norm_attr_t attr;
    attr.name = name_value(r);
    attr.phase = (dnnjit_norm_phase_t)(byte(r) % 3);
    attr.compute_data_type = data_type(r);
    attr.norm_axes = (int)(byte(r) % 11) - 1;
    attr.epsilon = flag(r) ? tensor_id(r, g) : DNNJIT_TENSOR_NONE;
    attr.epsilon_value = real_value(r);
    attr.has_epsilon_value = flag(r);
    dnnjit_tensor_t t[5], a, b, c;
    for (int i = 0; i < 5; i++)
        t[i] = tensor_id(r, g);
    uint8_t outs = byte(r);
    dnnjit_tensor_t *pa = outs & 1 ? NULL : &a, *pb = outs & 2 ? NULL : &b, *pc = outs & 4 ? &c : NULL;
    if (backward && rms)
        return dnnjit_graph_rmsnorm_backward(g, t[0], t[1], t[2], t[3], &attr, pa, pb, pc);
    if (backward)
        return dnnjit_graph_layernorm_backward(g, t[0], t[1], t[2], t[3], t[4], &attr, pa, pb, pc);
    if (rms)
        return dnnjit_graph_rmsnorm(g, t[0], t[1], outs & 8 ? DNNJIT_TENSOR_NONE : t[2], &attr, pa,
                                    outs & 4 ? NULL : &b);
    return dnnjit_graph_layernorm(g, t[0], t[1], t[2], &attr, pa, outs & 4 ? NULL : &b, outs & 8 ? NULL : &c);
}

static dnnjit_status_t add_sdpa(reader_t *r, dnnjit_graph_t g)
{
    uint8_t bits = byte(r);
    dnnjit_sdpa_attr_t attr = {.has_attn_scale = bits & 1, .use_causal_mask = bits & 2, .generate_stats = bits & 4};
    attr.name = name_value(r);
    attr.compute_data_type = data_type(r);
    attr.attn_scale = real_value(r);
    dnnjit_tensor_t q = tensor_id(r, g);
    dnnjit_tensor_t k = tensor_id(r, g);
    dnnjit_tensor_t v = tensor_id(r, g), o, stats;
    return dnnjit_graph_sdpa(g, q, k, v, &attr, &o, bits & 8 ? NULL : &stats);
}

/* The setters and validation: none of them adds or removes tensors or nodes. */
static dnnjit_status_t change(reader_t *r, dnnjit_graph_t g, int action)
{
    dnnjit_tensor_t t = tensor_id(r, g);
    int64_t values[DNNJIT_MAX_DIMS + 1];
    int ndim;
    switch (action) {
    case 0:
        return dnnjit_tensor_set_output(g, t, flag(r));
    case 1:
        return dnnjit_tensor_set_data_type(g, t, data_type(r));
    case 2:
        return dnnjit_tensor_set_uid(g, t, uid_value(r));
    case 3:
        return dnnjit_tensor_set_name(g, t, name_value(r));
    case 4:
        ndim = dims(r, values);
        return dnnjit_tensor_set_dim(g, t, ndim, values);
    case 5:
        ndim = byte(r) % (DNNJIT_MAX_DIMS + 2);
        for (int i = 0; i < ndim; i++)
            values[i] = stride_value(r);
        return dnnjit_tensor_set_stride(g, t, ndim, values);
    default:
        return dnnjit_graph_validate(g);
    }
}

/* One call. Ops and tensors must leave the counts alone when they fail. */
static void step(reader_t *r, dnnjit_graph_t g)
{
    int64_t tensors = tensor_count(g), nodes = node_count(g);
    dnnjit_tensor_t a, b, out, s0, s1;
    dnnjit_status_t s;
    uint8_t action = byte(r) % 18;
    switch (action) {
    case 0:
    case 1:
        s = add_tensor(r, g);
        break;
    case 2: {
        a = tensor_id(r, g), b = tensor_id(r, g);
        dnnjit_matmul_attr_t attr;
        attr.name = name_value(r);
        attr.compute_data_type = data_type(r);
        attr.padding_value = real_value(r);
        s = dnnjit_graph_matmul(g, a, b, &attr, &out);
        break;
    }
    case 3:
        s = add_pointwise(r, g);
        break;
    case 4: {
        a = tensor_id(r, g), b = tensor_id(r, g);
        const char *name = name_value(r);
        s = dnnjit_graph_bias(g, name, a, b, &out);
        break;
    }
    case 5: {
        dnnjit_reduction_attr_t attr;
        attr.name = name_value(r);
        attr.mode = (dnnjit_reduction_mode_t)(byte(r) % (DNNJIT_REDUCTION_MODE_COUNT_ + 1));
        attr.compute_data_type = data_type(r);
        uint8_t axes = byte(r);
        attr.axes = axes < 240 ? axes : 1u << (axes % 32);
        s = dnnjit_graph_reduction(g, tensor_id(r, g), &attr, &out);
        break;
    }
    case 6:
    case 7: {
        dnnjit_softmax_attr_t attr;
        attr.name = name_value(r);
        attr.compute_data_type = data_type(r);
        attr.stats = (dnnjit_softmax_stats_t)(byte(r) % 4);
        uint8_t outs = byte(r);
        a = tensor_id(r, g);
        if (action == 6)
            s = dnnjit_graph_softmax(g, a, &attr, outs & 1 ? NULL : &out, outs & 2 ? NULL : &s0, outs & 4 ? NULL : &s1);
        else
            s = dnnjit_graph_softmax_backward(g, a, tensor_id(r, g), &attr, &out);
        break;
    }
    case 8:
    case 9:
        s = add_norm(r, g, action == 9);
        break;
    case 10:
        s = add_sdpa(r, g);
        break;
    default:
        s = change(r, g, action - 11);
        fuzz_require(tensor_count(g) == tensors && node_count(g) == nodes, "setters add and remove nothing");
        break;
    }
    fuzz_require(s == DNNJIT_STATUS_SUCCESS || *dnnjit_last_error() != '\0', "a failure comes with a message");
    if (s)
        fuzz_require(tensor_count(g) == tensors && node_count(g) == nodes, "a failed call leaves the graph as it was");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader_t r = {data, size};
    dnnjit_graph_attr_t attr = {.name = "fuzz"};
    attr.io_data_type = data_type(&r);
    attr.intermediate_data_type = data_type(&r);
    attr.compute_data_type = data_type(&r);
    dnnjit_graph_t g = NULL;
    if (dnnjit_graph_create(fuzz_handle(), &attr, &g) != DNNJIT_STATUS_SUCCESS) {
        fuzz_require(g == NULL, "a failed create hands back no graph");
        return 0;
    }
    for (int i = 0; i < MAX_STEPS && r.n; i++)
        step(&r, g);
    fuzz_exercise(g);
    /* A graph that got as far as its plans is frozen. */
    int64_t workspace;
    if (dnnjit_graph_get_workspace_size(g, &workspace) == DNNJIT_STATUS_SUCCESS)
        fuzz_require(dnnjit_tensor_set_output(g, 1, true) == DNNJIT_STATUS_BAD_STATE, "a built graph is frozen");
    dnnjit_graph_destroy(g);
    return 0;
}
