/* Graphs, tensors and the op constructors of the public API. Shape inference and
 * validation live in validate.c; this file records what the caller asked for. */
#include "graph/graph.h"

#include "engine/plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ---------------------------------------------------------------------- */

static _Thread_local char thread_error[DNNJIT__MSG_LEN];

const char *dnnjit_last_error(void)
{
    return thread_error;
}

void dnnjit__set_thread_error(const char *msg)
{
    snprintf(thread_error, sizeof thread_error, "%s", msg);
}

dnnjit_status_t dnnjit__vfail(dnnjit_graph_t graph, dnnjit_status_t status, const char *fmt, va_list ap)
{
    vsnprintf(thread_error, sizeof thread_error, fmt, ap);
    if (graph)
        memcpy(graph->error, thread_error, sizeof graph->error);
    return status;
}

dnnjit_status_t dnnjit__fail(dnnjit_graph_t graph, dnnjit_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dnnjit__vfail(graph, status, fmt, ap);
    va_end(ap);
    return status;
}

const char *dnnjit_graph_last_error(dnnjit_graph_t graph)
{
    return graph ? graph->error : thread_error;
}

void dnnjit_free(void *ptr)
{
    free(ptr);
}

bool dnnjit__whole_number(const char *text, long lo, long hi, long *value)
{
    char *end;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (end == text || *end || errno || n < lo || n > hi)
        return false;
    *value = n;
    return true;
}

char *dnnjit__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ---- ports ----------------------------------------------------------------------- */

static const dnnjit__op_ports_t op_ports[DNNJIT_OP_COUNT_] = {
    [DNNJIT_OP_MATMUL] = {2, {"A", "B"}, 0, 1, {"C"}, 0},
    [DNNJIT_OP_POINTWISE] = {3, {"IN_0", "IN_1", "IN_2"}, 0x6, 1, {"OUT_0"}, 0},
    [DNNJIT_OP_REDUCTION] = {1, {"X"}, 0, 1, {"Y"}, 0},
    [DNNJIT_OP_SOFTMAX] = {1, {"P"}, 0, 3, {"S", "STATS_0", "STATS_1"}, 0x6},
    [DNNJIT_OP_SOFTMAX_BACKWARD] = {2, {"Y", "DY"}, 0, 1, {"DX"}, 0},
    [DNNJIT_OP_LAYERNORM] = {4, {"X", "SCALE", "BIAS", "EPSILON"}, 0x8, 3, {"Y", "MEAN", "INV_VARIANCE"}, 0x6},
    [DNNJIT_OP_LAYERNORM_BACKWARD] = {5, {"DY", "X", "SCALE", "MEAN", "INV_VARIANCE"}, 0, 3,
                                      {"DX", "DSCALE", "DBIAS"}, 0x4},
    [DNNJIT_OP_RMSNORM] = {4, {"X", "SCALE", "BIAS", "EPSILON"}, 0xc, 2, {"Y", "INV_VARIANCE"}, 0x2},
    [DNNJIT_OP_RMSNORM_BACKWARD] = {4, {"DY", "X", "SCALE", "INV_VARIANCE"}, 0, 3, {"DX", "DSCALE", "DBIAS"},
                                    0x4},
    [DNNJIT_OP_SDPA] = {3, {"Q", "K", "V"}, 0, 2, {"O", "STATS"}, 0x2},
};

static const char *const op_labels[DNNJIT_OP_COUNT_] = {
    [DNNJIT_OP_MATMUL] = "matmul",
    [DNNJIT_OP_POINTWISE] = "pointwise",
    [DNNJIT_OP_REDUCTION] = "reduction",
    [DNNJIT_OP_SOFTMAX] = "softmax",
    [DNNJIT_OP_SOFTMAX_BACKWARD] = "softmax_backward",
    [DNNJIT_OP_LAYERNORM] = "layernorm",
    [DNNJIT_OP_LAYERNORM_BACKWARD] = "layernorm_backward",
    [DNNJIT_OP_RMSNORM] = "rmsnorm",
    [DNNJIT_OP_RMSNORM_BACKWARD] = "rmsnorm_backward",
    [DNNJIT_OP_SDPA] = "sdpa",
};

const dnnjit__op_ports_t *dnnjit__op_ports(dnnjit_op_t op)
{
    return (int)op >= 0 && op < DNNJIT_OP_COUNT_ ? &op_ports[op] : NULL;
}

const char *dnnjit__op_label(dnnjit_op_t op)
{
    return (int)op >= 0 && op < DNNJIT_OP_COUNT_ ? op_labels[op] : "unknown op";
}

/* ---- graphs ----------------------------------------------------------------------- */

static bool valid_type(dnnjit_data_type_t t)
{
    return (int)t >= 0 && t < DNNJIT_DATA_TYPE_COUNT_;
}

dnnjit_status_t dnnjit_graph_create(dnnjit_handle_t handle, const dnnjit_graph_attr_t *attr, dnnjit_graph_t *out)
{
    if (!out)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_create: out is NULL");
    *out = NULL;
    dnnjit_graph_attr_t a = attr ? *attr : (dnnjit_graph_attr_t){0};
    if (!valid_type(a.io_data_type) || !valid_type(a.intermediate_data_type) || !valid_type(a.compute_data_type))
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM,
                            "dnnjit_graph_create: unknown data type (io %d, intermediate %d, compute %d)",
                            (int)a.io_data_type, (int)a.intermediate_data_type, (int)a.compute_data_type);
    dnnjit_graph_t g = calloc(1, sizeof *g);
    if (!g || !(g->name = dnnjit__strdup(a.name ? a.name : ""))) {
        free(g);
        return dnnjit__fail(NULL, DNNJIT_STATUS_OUT_OF_MEMORY, "dnnjit_graph_create: out of memory");
    }
    g->handle = handle;
    g->io_type = a.io_data_type;
    g->intermediate_type = a.intermediate_data_type;
    g->compute_type = a.compute_data_type ? a.compute_data_type : DNNJIT_DATA_TYPE_FLOAT;
    *out = g;
    return DNNJIT_STATUS_SUCCESS;
}

void dnnjit_graph_destroy(dnnjit_graph_t g)
{
    if (!g)
        return;
    for (int64_t i = 0; i < g->tensor_count; i++)
        free(g->tensors[i].name);
    for (int64_t i = 0; i < g->node_count; i++)
        free(g->nodes[i].name);
    dnnjit__jit_state_free(g->jit);
    free(g->tensors);
    free(g->nodes);
    free(g->name);
    free(g);
}

dnnjit_status_t dnnjit_graph_get_attr(dnnjit_graph_t g, dnnjit_graph_attr_t *out)
{
    if (!g || !out)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_attr: %s is NULL", g ? "out" : "graph");
    *out = (dnnjit_graph_attr_t){g->name, g->io_type, g->intermediate_type, g->compute_type};
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_get_tensor_count(dnnjit_graph_t g, int64_t *count)
{
    if (!g || !count)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_tensor_count: %s is NULL",
                            g ? "count" : "graph");
    *count = g->tensor_count;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_get_node_count(dnnjit_graph_t g, int64_t *count)
{
    if (!g || !count)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_get_node_count: %s is NULL",
                            g ? "count" : "graph");
    *count = g->node_count;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit__modify(dnnjit_graph_t g)
{
    if (g->jit)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE,
                            "graph \"%s\" is built (build_operation_graph was called) and can no longer change", g->name);
    g->validated = false;
    return DNNJIT_STATUS_SUCCESS;
}

/* ---- tensors --------------------------------------------------------------------- */

/* Grows an array to hold one more element. */
static bool grow(void **items, int64_t *cap, int64_t count, size_t size)
{
    if (count < *cap)
        return true;
    int64_t ncap = *cap ? *cap * 2 : 16;
    void *p = realloc(*items, (size_t)ncap * size);
    if (!p)
        return false;
    *items = p;
    *cap = ncap;
    return true;
}

static int64_t find_name(dnnjit_graph_t g, const char *name)
{
    for (int64_t i = 0; i < g->tensor_count; i++)
        if (strcmp(g->tensors[i].name, name) == 0)
            return i + 1;
    return 0;
}

static int64_t find_node(dnnjit_graph_t g, const char *name)
{
    for (int64_t i = 0; i < g->node_count; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return i + 1;
    return 0;
}

/* Writes the first of "<prefix><start>", "<prefix><start+1>", ... that no tensor (or node)
 * of the graph is named, so that a default name never clashes with one the caller chose. */
static void auto_name(dnnjit_graph_t g, bool for_node, const char *prefix, int64_t start, char *buf, size_t size)
{
    for (int64_t k = start;; k++) {
        snprintf(buf, size, "%s%lld", prefix, (long long)k);
        if (!(for_node ? find_node(g, buf) : find_name(g, buf)))
            return;
    }
}

dnnjit_tensor_t dnnjit__add_tensor(dnnjit_graph_t g, const dnnjit__tensor_t *proto)
{
    if (g->tensor_count >= (int64_t)UINT32_MAX - 1)
        return DNNJIT_TENSOR_NONE;
    if (!grow((void **)&g->tensors, &g->tensor_cap, g->tensor_count, sizeof *g->tensors))
        return DNNJIT_TENSOR_NONE;
    dnnjit__tensor_t t = *proto;
    char default_name[32];
    if (!proto->name)
        auto_name(g, false, "t", g->tensor_count + 1, default_name, sizeof default_name);
    t.name = dnnjit__strdup(proto->name ? proto->name : default_name);
    if (!t.name)
        return DNNJIT_TENSOR_NONE;
    g->tensors[g->tensor_count++] = t;
    g->validated = false;
    return (dnnjit_tensor_t)g->tensor_count;
}

int64_t dnnjit__add_node(dnnjit_graph_t g, const dnnjit__node_t *proto)
{
    if (!grow((void **)&g->nodes, &g->node_cap, g->node_count, sizeof *g->nodes))
        return -1;
    dnnjit__node_t n = *proto;
    char default_name[32];
    if (!proto->name)
        auto_name(g, true, "", g->node_count, default_name, sizeof default_name);
    n.name = dnnjit__strdup(proto->name ? proto->name : default_name);
    if (!n.name)
        return -1;
    g->nodes[g->node_count] = n;
    g->validated = false;
    return g->node_count++;
}

static int64_t find_uid(dnnjit_graph_t g, int64_t uid)
{
    for (int64_t i = 0; i < g->tensor_count; i++)
        if (g->tensors[i].has_uid && g->tensors[i].uid == uid)
            return i + 1;
    return 0;
}

dnnjit_status_t dnnjit_graph_tensor(dnnjit_graph_t g, const dnnjit_tensor_desc_t *desc, dnnjit_tensor_t *out)
{
    if (!g || !desc || !out)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_tensor: %s is NULL",
                            !g ? "graph" : !desc ? "desc" : "out");
    *out = DNNJIT_TENSOR_NONE;
    dnnjit_status_t frozen = dnnjit__modify(g);
    if (frozen)
        return frozen;
    const char *who_name = desc->name ? desc->name : "(unnamed)";
    char who[300];
    snprintf(who, sizeof who, "tensor \"%s\"", who_name);
    if (!valid_type(desc->data_type))
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: unknown data type %d", who, (int)desc->data_type);
    if (desc->ndim >= 1 && !desc->dim)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: dim is NULL", who);
    dnnjit_status_t s = dnnjit__check_tensor_desc(g, who, desc->ndim, desc->dim, desc->stride, desc->is_pass_by_value);
    if (s)
        return s;
    if (desc->name && find_name(g, desc->name))
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: another tensor already has this name", who);
    if (desc->has_uid && find_uid(g, desc->uid))
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: uid %lld is already used by tensor \"%s\"", who,
                            (long long)desc->uid, g->tensors[find_uid(g, desc->uid) - 1].name);
    if (desc->has_value && !desc->is_pass_by_value)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: has_value is set but the tensor is not pass-by-value",
                            who);
    dnnjit__tensor_t t = {
        .name = (char *)desc->name,
        .ndim = desc->ndim,
        .data_type = desc->data_type,
        .is_virtual = desc->is_virtual,
        .is_pass_by_value = desc->is_pass_by_value,
        .has_value = desc->has_value,
        .value = desc->value,
        .has_uid = desc->has_uid,
        .uid = desc->uid,
        .dims_set = true,
        .strides_set = desc->stride != NULL,
        .producer = -1,
    };
    memcpy(t.dim, desc->dim, sizeof(int64_t) * (size_t)desc->ndim);
    if (desc->stride)
        memcpy(t.stride, desc->stride, sizeof(int64_t) * (size_t)desc->ndim);
    else
        dnnjit__packed_strides(t.ndim, t.dim, NULL, t.stride);
    *out = dnnjit__add_tensor(g, &t);
    if (!*out)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "%s: out of memory", who);
    return DNNJIT_STATUS_SUCCESS;
}

/* Looks up a tensor for a setter or getter, failing with a message naming the call. */
static dnnjit_status_t lookup(dnnjit_graph_t g, dnnjit_tensor_t id, const char *fn, dnnjit__tensor_t **out)
{
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "%s: graph is NULL", fn);
    *out = dnnjit__tensor(g, id);
    if (!*out)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: tensor id %u is not in graph \"%s\" (it has %lld tensors)",
                            fn, id, g->name, (long long)g->tensor_count);
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_data_type_t dnnjit__node_compute_type(dnnjit_graph_t g, const dnnjit__node_t *n)
{
    return n->compute_type ? n->compute_type : g->compute_type;
}

dnnjit_status_t dnnjit_tensor_get_info(dnnjit_graph_t g, dnnjit_tensor_t id, dnnjit_tensor_info_t *out)
{
    dnnjit__tensor_t *t;
    dnnjit_status_t s = lookup(g, id, "dnnjit_tensor_get_info", &t);
    if (s)
        return s;
    if (!out)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_tensor_get_info: out is NULL");
    *out = (dnnjit_tensor_info_t){
        .name = t->name,
        .ndim = t->ndim,
        .data_type = dnnjit__tensor_type(g, t),
        .is_virtual = t->is_virtual,
        .is_pass_by_value = t->is_pass_by_value,
        .has_value = t->has_value,
        .value = t->value,
        .has_uid = t->has_uid,
        .uid = t->uid,
        .producer = t->producer,
    };
    memcpy(out->dim, t->dim, sizeof t->dim);
    memcpy(out->stride, t->stride, sizeof t->stride);
    return DNNJIT_STATUS_SUCCESS;
}

/* Gives a tensor one more than the largest uid any tensor holds (1 if none holds a
 * positive one), so that assigned uids follow creation order. Only when that would pass
 * INT64_MAX does it take the smallest free non-negative uid instead. */
static void assign_uid(dnnjit_graph_t g, dnnjit__tensor_t *t)
{
    int64_t uid = 1;
    for (int64_t i = 0; i < g->tensor_count; i++)
        if (g->tensors[i].has_uid && g->tensors[i].uid >= uid && g->tensors[i].uid < INT64_MAX)
            uid = g->tensors[i].uid + 1;
    if (find_uid(g, uid)) /* every uid up to INT64_MAX taken by a caller: search from 0 */
        for (uid = 0; find_uid(g, uid); uid++)
            ;
    t->uid = uid;
    t->has_uid = true;
}

void dnnjit__assign_missing_uids(dnnjit_graph_t g)
{
    for (int64_t i = 0; i < g->tensor_count; i++)
        if (!g->tensors[i].has_uid)
            assign_uid(g, &g->tensors[i]);
}

dnnjit_status_t dnnjit_tensor_get_uid(dnnjit_graph_t g, dnnjit_tensor_t id, int64_t *uid)
{
    dnnjit__tensor_t *t;
    dnnjit_status_t s = lookup(g, id, "dnnjit_tensor_get_uid", &t);
    if (s)
        return s;
    if (!uid)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_tensor_get_uid: uid is NULL");
    if (!t->has_uid)
        assign_uid(g, t);
    *uid = t->uid;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_find_tensor_by_uid(dnnjit_graph_t g, int64_t uid, dnnjit_tensor_t *out)
{
    if (!g || !out)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_find_tensor_by_uid: %s is NULL",
                            g ? "out" : "graph");
    int64_t id = find_uid(g, uid);
    if (!id)
        return dnnjit__fail(g, DNNJIT_STATUS_NOT_FOUND, "no tensor of graph \"%s\" has uid %lld", g->name,
                            (long long)uid);
    *out = (dnnjit_tensor_t)id;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_find_tensor_by_name(dnnjit_graph_t g, const char *name, dnnjit_tensor_t *out)
{
    if (!g || !out || !name)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_find_tensor_by_name: %s is NULL",
                            !g ? "graph" : !name ? "name" : "out");
    int64_t id = find_name(g, name);
    if (!id)
        return dnnjit__fail(g, DNNJIT_STATUS_NOT_FOUND, "no tensor of graph \"%s\" is named \"%s\"", g->name, name);
    *out = (dnnjit_tensor_t)id;
    return DNNJIT_STATUS_SUCCESS;
}

/* The common start of every setter: a known tensor of a graph that may be modified. */
static dnnjit_status_t setter(dnnjit_graph_t g, dnnjit_tensor_t id, const char *fn, dnnjit__tensor_t **t)
{
    dnnjit_status_t s = lookup(g, id, fn, t);
    return s ? s : dnnjit__modify(g);
}

dnnjit_status_t dnnjit_tensor_set_output(dnnjit_graph_t g, dnnjit_tensor_t id, bool is_output)
{
    dnnjit__tensor_t *t;
    dnnjit_status_t s = setter(g, id, "dnnjit_tensor_set_output", &t);
    if (s)
        return s;
    if (!is_output && t->producer < 0)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                            "dnnjit_tensor_set_output: tensor \"%s\" is a graph input; only an op's output can be "
                            "made virtual",
                            t->name);
    t->is_virtual = !is_output;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_tensor_set_data_type(dnnjit_graph_t g, dnnjit_tensor_t id, dnnjit_data_type_t type)
{
    dnnjit__tensor_t *t;
    dnnjit_status_t s = setter(g, id, "dnnjit_tensor_set_data_type", &t);
    if (s)
        return s;
    if (!valid_type(type))
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_tensor_set_data_type: tensor \"%s\": unknown data type %d",
                            t->name, (int)type);
    t->data_type = type;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_tensor_set_uid(dnnjit_graph_t g, dnnjit_tensor_t id, int64_t uid)
{
    dnnjit__tensor_t *t;
    dnnjit_status_t s = setter(g, id, "dnnjit_tensor_set_uid", &t);
    if (s)
        return s;
    int64_t other = find_uid(g, uid);
    if (other && other != (int64_t)id)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                            "dnnjit_tensor_set_uid: tensor \"%s\": uid %lld is already used by tensor \"%s\"", t->name,
                            (long long)uid, g->tensors[other - 1].name);
    t->uid = uid;
    t->has_uid = true;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_tensor_set_name(dnnjit_graph_t g, dnnjit_tensor_t id, const char *name)
{
    dnnjit__tensor_t *t;
    dnnjit_status_t s = setter(g, id, "dnnjit_tensor_set_name", &t);
    if (s)
        return s;
    if (!name || !*name)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_tensor_set_name: tensor \"%s\": the new name is %s",
                            t->name, name ? "empty" : "NULL");
    int64_t other = find_name(g, name);
    if (other && other != (int64_t)id)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                            "dnnjit_tensor_set_name: tensor \"%s\": another tensor is already named \"%s\"", t->name,
                            name);
    char *copy = dnnjit__strdup(name);
    if (!copy)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "dnnjit_tensor_set_name: out of memory");
    free(t->name);
    t->name = copy;
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_tensor_set_dim(dnnjit_graph_t g, dnnjit_tensor_t id, int ndim, const int64_t *dim)
{
    dnnjit__tensor_t *t;
    dnnjit_status_t s = setter(g, id, "dnnjit_tensor_set_dim", &t);
    if (s)
        return s;
    char who[300];
    snprintf(who, sizeof who, "dnnjit_tensor_set_dim: tensor \"%s\"", t->name);
    if (ndim >= 1 && !dim)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s: dim is NULL", who);
    bool same_rank = ndim == t->ndim;
    /* Strides set explicitly are kept at the same rank, so the new dims must fit them. */
    s = dnnjit__check_tensor_desc(g, who, ndim, dim, t->strides_set && same_rank ? t->stride : NULL,
                                  t->is_pass_by_value);
    if (s)
        return s;
    t->ndim = ndim;
    memcpy(t->dim, dim, sizeof(int64_t) * (size_t)ndim);
    t->dims_set = true;
    /* Strides that no longer fit the rank are re-derived; explicitly set ones stay. */
    if (!t->strides_set || !same_rank) {
        dnnjit__packed_strides(ndim, t->dim, same_rank ? t->stride : NULL, t->stride);
        t->strides_set = t->strides_set && same_rank;
    }
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_tensor_set_stride(dnnjit_graph_t g, dnnjit_tensor_t id, int ndim, const int64_t *stride)
{
    dnnjit__tensor_t *t;
    dnnjit_status_t s = setter(g, id, "dnnjit_tensor_set_stride", &t);
    if (s)
        return s;
    if (ndim != t->ndim)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                            "dnnjit_tensor_set_stride: tensor \"%s\" has %d dims but %d strides were given", t->name,
                            t->ndim, ndim);
    if (!stride)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_tensor_set_stride: tensor \"%s\": stride is NULL",
                            t->name);
    char who[300];
    snprintf(who, sizeof who, "dnnjit_tensor_set_stride: tensor \"%s\"", t->name);
    s = dnnjit__check_tensor_desc(g, who, t->ndim, t->dim, stride, t->is_pass_by_value);
    if (s)
        return s;
    memcpy(t->stride, stride, sizeof(int64_t) * (size_t)ndim);
    t->strides_set = true;
    return DNNJIT_STATUS_SUCCESS;
}

/* ---- op constructors ------------------------------------------------------------- */

/* Adds a node with the given inputs, creates its outputs (virtual, named "<node>::<PORT>")
 * for the slots in `want_out`, runs shape inference, and hands back the output ids. On any
 * failure the graph is left exactly as before. */
static dnnjit_status_t add_op(dnnjit_graph_t g, const char *fn, dnnjit__node_t *proto, uint32_t want_out,
                              dnnjit_tensor_t **outs)
{
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "%s: graph is NULL", fn);
    dnnjit_status_t frozen = dnnjit__modify(g);
    if (frozen)
        return frozen;
    const dnnjit__op_ports_t *ports = dnnjit__op_ports(proto->op);
    const char *label = dnnjit__op_label(proto->op);
    const char *nname = proto->name ? proto->name : "";
    for (int i = 0; i < ports->n_out; i++)
        if ((want_out >> i & 1) && !outs[i])
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s \"%s\": the pointer for output %s is NULL", label,
                                nname, ports->out_names[i]);
    for (int i = 0; i < ports->n_in; i++) {
        dnnjit_tensor_t id = proto->in[i];
        if (id == DNNJIT_TENSOR_NONE) {
            if (!(ports->in_optional >> i & 1))
                return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s \"%s\": input %s is missing", label, nname,
                                    ports->in_names[i]);
        } else if (!dnnjit__tensor(g, id)) {
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s \"%s\": input %s is tensor id %u, which is not in this graph",
                                label, nname, ports->in_names[i], id);
        }
    }
    if (proto->name && find_node(g, proto->name))
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s \"%s\": another node already has this name", label,
                            nname);
    if (!valid_type(proto->compute_type))
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s \"%s\": unknown compute data type %d", label, nname,
                            (int)proto->compute_type);

    int64_t saved_tensors = g->tensor_count;
    int64_t index = dnnjit__add_node(g, proto);
    if (index < 0)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "%s \"%s\": out of memory", label, nname);
    dnnjit__node_t *n = &g->nodes[index];
    dnnjit_status_t s = DNNJIT_STATUS_SUCCESS;
    for (int i = 0; i < ports->n_out && !s; i++) {
        if (!(want_out >> i & 1))
            continue;
        /* Sized to the node name: a fixed buffer would cut long names short, and the
         * outputs of one node would then all get the same name. */
        size_t size = strlen(n->name) + strlen(ports->out_names[i]) + 3;
        char *name = malloc(size);
        if (!name) {
            s = dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "%s \"%s\": out of memory", label, n->name);
            break;
        }
        snprintf(name, size, "%s::%s", n->name, ports->out_names[i]);
        if (find_name(g, name)) {
            s = dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s \"%s\": output name \"%s\" is already taken", label,
                             n->name, name);
            free(name);
            break;
        }
        dnnjit__tensor_t t = {.name = name, .is_virtual = true, .producer = index, .ndim = 1, .dim = {1}, .stride = {1}};
        n->out[i] = dnnjit__add_tensor(g, &t);
        free(name);
        if (!n->out[i])
            s = dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "%s \"%s\": out of memory", label, n->name);
    }
    if (!s)
        s = dnnjit__infer_node(g, index, false);
    if (s) {
        while (g->tensor_count > saved_tensors)
            free(g->tensors[--g->tensor_count].name);
        free(g->nodes[--g->node_count].name);
        return s;
    }
    for (int i = 0; i < ports->n_out; i++)
        if (want_out >> i & 1)
            *outs[i] = n->out[i];
    return DNNJIT_STATUS_SUCCESS;
}

/* An attribute with a default: the C API's 0 means the default unless its has_ flag says
 * the 0 is meant. */
static void take_given(double *field, double value, bool has)
{
    if (has || value != 0)
        *field = value;
}

dnnjit_status_t dnnjit_graph_matmul(dnnjit_graph_t g, dnnjit_tensor_t a, dnnjit_tensor_t b,
                                    const dnnjit_matmul_attr_t *attr, dnnjit_tensor_t *c)
{
    dnnjit_matmul_attr_t at = attr ? *attr : (dnnjit_matmul_attr_t){0};
    dnnjit__node_t n = {.op = DNNJIT_OP_MATMUL, .name = (char *)at.name, .compute_type = at.compute_data_type,
                        .in = {a, b}, .attr.matmul.padding_value = at.padding_value};
    return add_op(g, "dnnjit_graph_matmul", &n, 1, (dnnjit_tensor_t *[]){c});
}

dnnjit_status_t dnnjit_graph_pointwise(dnnjit_graph_t g, const dnnjit_pointwise_attr_t *attr, dnnjit_tensor_t in0,
                                       dnnjit_tensor_t in1, dnnjit_tensor_t in2, dnnjit_tensor_t *out)
{
    if (!attr)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_pointwise: attr is NULL (it holds the mode)");
    const char *nname = attr->name ? attr->name : "";
    int arity = dnnjit_pointwise_mode_arity(attr->mode);
    if (!arity)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "pointwise \"%s\": unknown mode %d", nname, (int)attr->mode);
    dnnjit_tensor_t ins[3] = {in0, in1, in2};
    for (int i = 0; i < 3; i++)
        if ((i < arity) != (ins[i] != DNNJIT_TENSOR_NONE))
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "pointwise \"%s\": mode %s takes %d input%s but IN_%d is %s",
                                nname, dnnjit_pointwise_mode_name(attr->mode), arity, arity > 1 ? "s" : "", i,
                                i < arity ? "missing" : "given");
    dnnjit__node_t n = {.op = DNNJIT_OP_POINTWISE, .name = (char *)attr->name,
                        .compute_type = attr->compute_data_type, .in = {in0, in1, in2}};
    n.attr.pointwise.mode = attr->mode;
    n.attr.pointwise.relu_lower_clip = attr->relu_lower_clip;
    n.attr.pointwise.has_relu_upper_clip = attr->has_relu_upper_clip;
    n.attr.pointwise.relu_upper_clip = attr->relu_upper_clip;
    n.attr.pointwise.relu_lower_clip_slope = attr->relu_lower_clip_slope;
    dnnjit__attr_defaults(DNNJIT_OP_POINTWISE, &n.attr);
    take_given(&n.attr.pointwise.elu_alpha, attr->elu_alpha, attr->has_elu_alpha);
    take_given(&n.attr.pointwise.softplus_beta, attr->softplus_beta, attr->has_softplus_beta);
    take_given(&n.attr.pointwise.swish_beta, attr->swish_beta, attr->has_swish_beta);
    return add_op(g, "dnnjit_graph_pointwise", &n, 1, (dnnjit_tensor_t *[]){out});
}

dnnjit_status_t dnnjit_graph_bias(dnnjit_graph_t g, const char *name, dnnjit_tensor_t input, dnnjit_tensor_t bias,
                                  dnnjit_tensor_t *out)
{
    return dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = name, .mode = DNNJIT_POINTWISE_ADD}, input,
                                  bias, DNNJIT_TENSOR_NONE, out);
}

dnnjit_status_t dnnjit_graph_reduction(dnnjit_graph_t g, dnnjit_tensor_t x, const dnnjit_reduction_attr_t *attr,
                                       dnnjit_tensor_t *y)
{
    if (!attr)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_reduction: attr is NULL (it holds the mode)");
    if ((int)attr->mode < 0 || attr->mode >= DNNJIT_REDUCTION_MODE_COUNT_)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "reduction \"%s\": unknown mode %d",
                            attr->name ? attr->name : "", (int)attr->mode);
    dnnjit__node_t n = {.op = DNNJIT_OP_REDUCTION, .name = (char *)attr->name,
                        .compute_type = attr->compute_data_type, .in = {x}};
    n.attr.reduction.mode = attr->mode;
    n.attr.reduction.axes = attr->axes;
    return add_op(g, "dnnjit_graph_reduction", &n, 1, (dnnjit_tensor_t *[]){y});
}

dnnjit_status_t dnnjit_graph_softmax(dnnjit_graph_t g, dnnjit_tensor_t p, const dnnjit_softmax_attr_t *attr,
                                     dnnjit_tensor_t *s, dnnjit_tensor_t *stats0, dnnjit_tensor_t *stats1)
{
    dnnjit_softmax_attr_t at = attr ? *attr : (dnnjit_softmax_attr_t){0};
    if ((int)at.stats < 0 || at.stats > DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "softmax \"%s\": unknown stats kind %d",
                            at.name ? at.name : "", (int)at.stats);
    dnnjit__node_t n = {.op = DNNJIT_OP_SOFTMAX, .name = (char *)at.name, .compute_type = at.compute_data_type,
                        .in = {p}, .attr.softmax.stats = at.stats};
    uint32_t want = at.stats == DNNJIT_SOFTMAX_STATS_NONE ? 1 : at.stats == DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP ? 3 : 7;
    return add_op(g, "dnnjit_graph_softmax", &n, want, (dnnjit_tensor_t *[]){s, stats0, stats1});
}

dnnjit_status_t dnnjit_graph_softmax_backward(dnnjit_graph_t g, dnnjit_tensor_t y, dnnjit_tensor_t dy,
                                              const dnnjit_softmax_attr_t *attr, dnnjit_tensor_t *dx)
{
    dnnjit_softmax_attr_t at = attr ? *attr : (dnnjit_softmax_attr_t){0};
    dnnjit__node_t n = {.op = DNNJIT_OP_SOFTMAX_BACKWARD, .name = (char *)at.name,
                        .compute_type = at.compute_data_type, .in = {y, dy}};
    return add_op(g, "dnnjit_graph_softmax_backward", &n, 1, (dnnjit_tensor_t *[]){dx});
}

/* Fills the node fields every normalisation op shares. */
static dnnjit__node_t norm_node(dnnjit_op_t op, const dnnjit_norm_attr_t *attr)
{
    dnnjit_norm_attr_t at = attr ? *attr : (dnnjit_norm_attr_t){0};
    dnnjit__node_t n = {.op = op, .name = (char *)at.name, .compute_type = at.compute_data_type};
    n.attr.norm.phase = at.phase;
    n.attr.norm.norm_axes = at.norm_axes;
    dnnjit__attr_defaults(op, &n.attr);
    take_given(&n.attr.norm.epsilon_value, at.epsilon_value, at.has_epsilon_value);
    return n;
}

static dnnjit_status_t check_phase(dnnjit_graph_t g, const char *label, const dnnjit_norm_attr_t *attr)
{
    if (attr && attr->phase != DNNJIT_NORM_PHASE_INFERENCE && attr->phase != DNNJIT_NORM_PHASE_TRAINING)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "%s \"%s\": unknown phase %d", label,
                            attr->name ? attr->name : "", (int)attr->phase);
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_layernorm(dnnjit_graph_t g, dnnjit_tensor_t x, dnnjit_tensor_t scale,
                                       dnnjit_tensor_t bias, const dnnjit_norm_attr_t *attr, dnnjit_tensor_t *y,
                                       dnnjit_tensor_t *mean, dnnjit_tensor_t *inv_variance)
{
    dnnjit_status_t st = check_phase(g, "layernorm", attr);
    if (st)
        return st;
    dnnjit__node_t n = norm_node(DNNJIT_OP_LAYERNORM, attr);
    n.in[0] = x, n.in[1] = scale, n.in[2] = bias, n.in[3] = attr ? attr->epsilon : DNNJIT_TENSOR_NONE;
    bool training = attr && attr->phase == DNNJIT_NORM_PHASE_TRAINING;
    return add_op(g, "dnnjit_graph_layernorm", &n, training ? 7 : 1, (dnnjit_tensor_t *[]){y, mean, inv_variance});
}

dnnjit_status_t dnnjit_graph_rmsnorm(dnnjit_graph_t g, dnnjit_tensor_t x, dnnjit_tensor_t scale, dnnjit_tensor_t bias,
                                     const dnnjit_norm_attr_t *attr, dnnjit_tensor_t *y, dnnjit_tensor_t *inv_variance)
{
    dnnjit_status_t st = check_phase(g, "rmsnorm", attr);
    if (st)
        return st;
    dnnjit__node_t n = norm_node(DNNJIT_OP_RMSNORM, attr);
    n.in[0] = x, n.in[1] = scale, n.in[2] = bias, n.in[3] = attr ? attr->epsilon : DNNJIT_TENSOR_NONE;
    bool training = attr && attr->phase == DNNJIT_NORM_PHASE_TRAINING;
    return add_op(g, "dnnjit_graph_rmsnorm", &n, training ? 3 : 1, (dnnjit_tensor_t *[]){y, inv_variance});
}

dnnjit_status_t dnnjit_graph_layernorm_backward(dnnjit_graph_t g, dnnjit_tensor_t dy, dnnjit_tensor_t x,
                                                dnnjit_tensor_t scale, dnnjit_tensor_t mean,
                                                dnnjit_tensor_t inv_variance, const dnnjit_norm_attr_t *attr,
                                                dnnjit_tensor_t *dx, dnnjit_tensor_t *dscale, dnnjit_tensor_t *dbias)
{
    dnnjit__node_t n = norm_node(DNNJIT_OP_LAYERNORM_BACKWARD, attr);
    n.attr.norm.phase = DNNJIT_NORM_PHASE_TRAINING;
    n.in[0] = dy, n.in[1] = x, n.in[2] = scale, n.in[3] = mean, n.in[4] = inv_variance;
    return add_op(g, "dnnjit_graph_layernorm_backward", &n, dbias ? 7 : 3, (dnnjit_tensor_t *[]){dx, dscale, dbias});
}

dnnjit_status_t dnnjit_graph_rmsnorm_backward(dnnjit_graph_t g, dnnjit_tensor_t dy, dnnjit_tensor_t x,
                                              dnnjit_tensor_t scale, dnnjit_tensor_t inv_variance,
                                              const dnnjit_norm_attr_t *attr, dnnjit_tensor_t *dx,
                                              dnnjit_tensor_t *dscale, dnnjit_tensor_t *dbias)
{
    dnnjit__node_t n = norm_node(DNNJIT_OP_RMSNORM_BACKWARD, attr);
    n.attr.norm.phase = DNNJIT_NORM_PHASE_TRAINING;
    n.in[0] = dy, n.in[1] = x, n.in[2] = scale, n.in[3] = inv_variance;
    return add_op(g, "dnnjit_graph_rmsnorm_backward", &n, dbias ? 7 : 3, (dnnjit_tensor_t *[]){dx, dscale, dbias});
}

dnnjit_status_t dnnjit_graph_sdpa(dnnjit_graph_t g, dnnjit_tensor_t q, dnnjit_tensor_t k, dnnjit_tensor_t v,
                                  const dnnjit_sdpa_attr_t *attr, dnnjit_tensor_t *o, dnnjit_tensor_t *stats)
{
    dnnjit_sdpa_attr_t at = attr ? *attr : (dnnjit_sdpa_attr_t){0};
    dnnjit__node_t n = {.op = DNNJIT_OP_SDPA, .name = (char *)at.name, .compute_type = at.compute_data_type,
                        .in = {q, k, v}};
    n.attr.sdpa.has_attn_scale = at.has_attn_scale;
    n.attr.sdpa.attn_scale = at.attn_scale;
    n.attr.sdpa.use_causal_mask = at.use_causal_mask;
    n.attr.sdpa.generate_stats = at.generate_stats;
    return add_op(g, "dnnjit_graph_sdpa", &n, at.generate_stats ? 3 : 1, (dnnjit_tensor_t *[]){o, stats});
}
