/* Graphs to and from JSON text (schema: docs/graph-json.md). Writing validates the graph
 * first so that resolved types and uids are known; reading builds the graph with the
 * internal constructors and then validates it, so that a loaded graph has passed exactly
 * the checks a graph built through the C API passes. The attributes of every op are
 * described once, in a table that both directions walk. */
#include "graph/graph.h"

#include <jansson.h>

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define JSON_VERSION "1.0"

/* ---- enumerations by name ---------------------------------------------------------- */

/* A public enumeration as JSON sees it: its values' names and what to call it in messages. */
typedef struct enum_kind {
    const char *what;
    int count;
    const char *(*name)(int value);
} enum_kind_t;

static const char *data_type_name(int v)
{
    return dnnjit_data_type_name((dnnjit_data_type_t)v);
}

static const char *op_name(int v)
{
    return dnnjit_op_name((dnnjit_op_t)v);
}

static const char *pointwise_name(int v)
{
    return dnnjit_pointwise_mode_name((dnnjit_pointwise_mode_t)v);
}

static const char *reduction_name(int v)
{
    return dnnjit_reduction_mode_name((dnnjit_reduction_mode_t)v);
}

/* The softmax statistics and norm phases have no public name functions; their names
 * follow the enumerators'. */
static const char *stats_name(int v)
{
    static const char *const names[] = {"NONE", "LOG_SUM_EXP", "MAX_SUM_EXP"};
    return v >= 0 && v < 3 ? names[v] : NULL;
}

static const char *phase_name(int v)
{
    static const char *const names[] = {"INFERENCE", "TRAINING"};
    return v >= 0 && v < 2 ? names[v] : NULL;
}

static const enum_kind_t data_types = {"data type", DNNJIT_DATA_TYPE_COUNT_, data_type_name};
static const enum_kind_t ops = {"op", DNNJIT_OP_COUNT_, op_name};
static const enum_kind_t pointwise_modes = {"pointwise mode", DNNJIT_POINTWISE_MODE_COUNT_, pointwise_name};
static const enum_kind_t reduction_modes = {"reduction mode", DNNJIT_REDUCTION_MODE_COUNT_, reduction_name};
static const enum_kind_t softmax_stats = {"softmax stats kind", 3, stats_name};
static const enum_kind_t norm_phases = {"norm phase", 2, phase_name};

/* Attribute fields store enumerations through an int lvalue. */
_Static_assert(sizeof(dnnjit_pointwise_mode_t) == sizeof(int) && sizeof(dnnjit_reduction_mode_t) == sizeof(int) &&
                   sizeof(dnnjit_softmax_stats_t) == sizeof(int) && sizeof(dnnjit_norm_phase_t) == sizeof(int),
               "enumerations must be int-sized");

/* ---- the attributes of each op ----------------------------------------------------- */

typedef enum attr_kind {
    ATTR_REAL, /* double */
    ATTR_BOOL, /* bool */
    ATTR_INT,  /* int */
    ATTR_ENUM, /* an enumeration, written by name */
    ATTR_AXES, /* uint32_t bit mask, written as a list of axis indices */
} attr_kind_t;

typedef struct attr_field {
    const char *key;
    attr_kind_t kind;
    size_t offset; /* into dnnjit__op_attr_t */
    const enum_kind_t *names;
    bool required;
} attr_field_t;

#define FIELD(key, kind, member, names, required) {key, kind, offsetof(dnnjit__op_attr_t, member), names, required}
#define END_FIELDS {NULL, ATTR_REAL, 0, NULL, false}

static const attr_field_t matmul_fields[] = {
    FIELD("padding_value", ATTR_REAL, matmul.padding_value, NULL, false),
    END_FIELDS,
};
static const attr_field_t pointwise_fields[] = {
    FIELD("mode", ATTR_ENUM, pointwise.mode, &pointwise_modes, true),
    FIELD("relu_lower_clip", ATTR_REAL, pointwise.relu_lower_clip, NULL, false),
    FIELD("has_relu_upper_clip", ATTR_BOOL, pointwise.has_relu_upper_clip, NULL, false),
    FIELD("relu_upper_clip", ATTR_REAL, pointwise.relu_upper_clip, NULL, false),
    FIELD("relu_lower_clip_slope", ATTR_REAL, pointwise.relu_lower_clip_slope, NULL, false),
    FIELD("elu_alpha", ATTR_REAL, pointwise.elu_alpha, NULL, false),
    FIELD("softplus_beta", ATTR_REAL, pointwise.softplus_beta, NULL, false),
    FIELD("swish_beta", ATTR_REAL, pointwise.swish_beta, NULL, false),
    END_FIELDS,
};
static const attr_field_t reduction_fields[] = {
    FIELD("mode", ATTR_ENUM, reduction.mode, &reduction_modes, true),
    FIELD("axes", ATTR_AXES, reduction.axes, NULL, false),
    END_FIELDS,
};
static const attr_field_t softmax_fields[] = {
    FIELD("stats", ATTR_ENUM, softmax.stats, &softmax_stats, false),
    END_FIELDS,
};
static const attr_field_t no_fields[] = {END_FIELDS};
static const attr_field_t norm_fields[] = {
    FIELD("phase", ATTR_ENUM, norm.phase, &norm_phases, false),
    FIELD("norm_axes", ATTR_INT, norm.norm_axes, NULL, false),
    FIELD("epsilon_value", ATTR_REAL, norm.epsilon_value, NULL, false),
    END_FIELDS,
};
/* The backward norms always run in the training phase, so they have no "phase". */
static const attr_field_t norm_backward_fields[] = {
    FIELD("norm_axes", ATTR_INT, norm.norm_axes, NULL, false),
    FIELD("epsilon_value", ATTR_REAL, norm.epsilon_value, NULL, false),
    END_FIELDS,
};
static const attr_field_t sdpa_fields[] = {
    FIELD("has_attn_scale", ATTR_BOOL, sdpa.has_attn_scale, NULL, false),
    FIELD("attn_scale", ATTR_REAL, sdpa.attn_scale, NULL, false),
    FIELD("use_causal_mask", ATTR_BOOL, sdpa.use_causal_mask, NULL, false),
    FIELD("generate_stats", ATTR_BOOL, sdpa.generate_stats, NULL, false),
    END_FIELDS,
};

static const attr_field_t *const op_fields[DNNJIT_OP_COUNT_] = {
    [DNNJIT_OP_MATMUL] = matmul_fields,
    [DNNJIT_OP_POINTWISE] = pointwise_fields,
    [DNNJIT_OP_REDUCTION] = reduction_fields,
    [DNNJIT_OP_SOFTMAX] = softmax_fields,
    [DNNJIT_OP_SOFTMAX_BACKWARD] = no_fields,
    [DNNJIT_OP_LAYERNORM] = norm_fields,
    [DNNJIT_OP_LAYERNORM_BACKWARD] = norm_backward_fields,
    [DNNJIT_OP_RMSNORM] = norm_fields,
    [DNNJIT_OP_RMSNORM_BACKWARD] = norm_backward_fields,
    [DNNJIT_OP_SDPA] = sdpa_fields,
};

/* The keys every object of a kind may hold, besides an op's attribute fields. */
static const char *const top_keys[] = {"context", "dnnjit_version", "json_version", "nodes", "tensors", NULL};
static const char *const context_keys[] = {"name", "io_data_type", "intermediate_data_type", "compute_data_type",
                                           NULL};
static const char *const tensor_keys[] = {"name", "data_type", "resolved_data_type", "dim", "stride", "dim_set",
                                          "stride_set", "is_virtual", "is_pass_by_value", "pass_by_value", "uid",
                                          "uid_assigned", NULL};
static const char *const node_keys[] = {"tag", "name", "compute_data_type", "inputs", "outputs", NULL};

/* Which output slots a node must have (bit i = slot i) and which it may have. The C API
 * makes the statistics outputs exactly when an attribute asks for them; `attr` names that
 * attribute (NULL where outputs do not depend on attributes). */
static void output_rule(const dnnjit__node_t *n, uint32_t *required, uint32_t *allowed, const char **attr)
{
    const dnnjit__op_ports_t *ports = dnnjit__op_ports(n->op);
    *allowed = (1u << ports->n_out) - 1;
    *required = *allowed & ~ports->out_optional;
    *attr = NULL;
    switch (n->op) {
    case DNNJIT_OP_SOFTMAX:
        *required = n->attr.softmax.stats == DNNJIT_SOFTMAX_STATS_NONE          ? 1
                    : n->attr.softmax.stats == DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP ? 3
                                                                                : 7;
        *attr = "stats";
        break;
    case DNNJIT_OP_LAYERNORM:
    case DNNJIT_OP_RMSNORM:
        /* Training adds MEAN (layernorm only) and INV_VARIANCE: every output slot. */
        *required = n->attr.norm.phase == DNNJIT_NORM_PHASE_TRAINING ? *allowed : 1;
        *attr = "phase";
        break;
    case DNNJIT_OP_SDPA:
        *required = n->attr.sdpa.generate_stats ? 3 : 1;
        *attr = "generate_stats";
        break;
    default:
        return;
    }
    *allowed = *required;
}

/* ---- writing ----------------------------------------------------------------------- */

typedef struct writer {
    dnnjit_graph_t g;
    dnnjit_status_t status; /* the first failure; SUCCESS so far */
} writer_t;

static void write_fail(writer_t *w, dnnjit_status_t status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void write_fail(writer_t *w, dnnjit_status_t status, const char *fmt, ...)
{
    if (w->status)
        return;
    va_list ap;
    va_start(ap, fmt);
    w->status = dnnjit__vfail(w->g, status, fmt, ap);
    va_end(ap);
}

/* Sets obj[key] = value, taking the reference. A NULL obj or value (a builder that ran out
 * of memory or failed) records a failure instead; the first one recorded is kept. */
static void put(writer_t *w, json_t *obj, const char *key, json_t *value)
{
    if (json_object_set_new(obj, key, value))
        write_fail(w, DNNJIT_STATUS_OUT_OF_MEMORY, "dnnjit_graph_to_json: out of memory");
}

static json_t *text(writer_t *w, const char *who, const char *s)
{
    json_t *v = json_string(s);
    if (v)
        return v;
    /* json_string fails on invalid UTF-8 and on memory; the unchecked variant tells which. */
    json_t *raw = json_string_nocheck(s);
    if (raw)
        write_fail(w, DNNJIT_STATUS_NOT_SUPPORTED, "%s: the name \"%s\" is not valid UTF-8, which JSON cannot hold",
                   who, s);
    json_decref(raw);
    return NULL;
}

static json_t *enum_json(writer_t *w, const enum_kind_t *kind, int value)
{
    const char *name = kind->name(value);
    if (!name) {
        write_fail(w, DNNJIT_STATUS_INTERNAL, "dnnjit_graph_to_json: %s %d has no name", kind->what, value);
        return NULL;
    }
    return json_string(name);
}

/* JSON numbers cannot be infinite or NaN, so those are written as strings. */
static json_t *real_json(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static json_t *ints_json(writer_t *w, int n, const int64_t *v)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        if (json_array_append_new(a, json_integer(v[i])))
            write_fail(w, DNNJIT_STATUS_OUT_OF_MEMORY, "dnnjit_graph_to_json: out of memory");
    return a;
}

static json_t *attr_json(writer_t *w, const dnnjit__op_attr_t *attr, const attr_field_t *f)
{
    const void *p = (const char *)attr + f->offset;
    switch (f->kind) {
    case ATTR_REAL:
        return real_json(*(const double *)p);
    case ATTR_BOOL:
        return json_boolean(*(const bool *)p);
    case ATTR_INT:
        return json_integer(*(const int *)p);
    case ATTR_ENUM:
        return enum_json(w, f->names, *(const int *)p);
    case ATTR_AXES: {
        int64_t axes[32];
        int n = 0;
        for (int i = 0; i < 32; i++)
            if (*(const uint32_t *)p >> i & 1)
                axes[n++] = i;
        return ints_json(w, n, axes);
    }
    }
    return NULL;
}

static json_t *tensor_json(writer_t *w, const dnnjit__tensor_t *t)
{
    char who[300];
    snprintf(who, sizeof who, "tensor \"%s\"", t->name);
    json_t *o = json_object();
    put(w, o, "name", text(w, who, t->name));
    put(w, o, "data_type", enum_json(w, &data_types, t->data_type));
    put(w, o, "resolved_data_type", enum_json(w, &data_types, t->resolved_type));
    put(w, o, "dim", ints_json(w, t->ndim, t->dim));
    put(w, o, "stride", ints_json(w, t->ndim, t->stride));
    put(w, o, "dim_set", json_boolean(t->dims_set));
    put(w, o, "stride_set", json_boolean(t->strides_set));
    put(w, o, "is_virtual", json_boolean(t->is_virtual));
    put(w, o, "is_pass_by_value", json_boolean(t->is_pass_by_value));
    put(w, o, "pass_by_value", t->has_value ? real_json(t->value) : json_null());
    put(w, o, "uid", json_integer(t->uid));
    put(w, o, "uid_assigned", json_boolean(t->has_uid));
    return o;
}

/* {PORT: tensor name} for the slots a node uses. */
static json_t *ports_json(writer_t *w, const dnnjit_tensor_t *slots, const char *const *names, int count)
{
    json_t *o = json_object();
    for (int i = 0; i < count; i++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(w->g, slots[i]);
        if (t)
            put(w, o, names[i], json_string_nocheck(t->name)); /* checked when the tensor was written */
    }
    return o;
}

static json_t *node_json(writer_t *w, const dnnjit__node_t *n)
{
    const dnnjit__op_ports_t *ports = dnnjit__op_ports(n->op);
    json_t *o = json_object();
    put(w, o, "tag", enum_json(w, &ops, n->op));
    put(w, o, "name", text(w, "node", n->name));
    put(w, o, "compute_data_type", enum_json(w, &data_types, n->compute_type));
    put(w, o, "inputs", ports_json(w, n->in, ports->in_names, ports->n_in));
    put(w, o, "outputs", ports_json(w, n->out, ports->out_names, ports->n_out));
    for (const attr_field_t *f = op_fields[n->op]; f->key; f++)
        put(w, o, f->key, attr_json(w, &n->attr, f));
    return o;
}

static json_t *graph_json(writer_t *w)
{
    dnnjit_graph_t g = w->g;
    json_t *root = json_object(), *context = json_object(), *tensors = json_object(), *nodes = json_array();
    put(w, context, "name", text(w, "graph", g->name));
    put(w, context, "io_data_type", enum_json(w, &data_types, g->io_type));
    put(w, context, "intermediate_data_type", enum_json(w, &data_types, g->intermediate_type));
    put(w, context, "compute_data_type", enum_json(w, &data_types, g->compute_type));
    put(w, root, "context", context);
    put(w, root, "dnnjit_version", json_string(dnnjit_version_string()));
    put(w, root, "json_version", json_string(JSON_VERSION));
    for (int64_t i = 0; i < g->tensor_count && !w->status; i++)
        put(w, tensors, g->tensors[i].name, tensor_json(w, &g->tensors[i]));
    put(w, root, "tensors", tensors);
    for (int64_t i = 0; i < g->node_count && !w->status; i++)
        if (json_array_append_new(nodes, node_json(w, &g->nodes[i])))
            write_fail(w, DNNJIT_STATUS_OUT_OF_MEMORY, "dnnjit_graph_to_json: out of memory");
    put(w, root, "nodes", nodes);
    return root;
}

/* Copies the JSON string starting at the quote *in to *out, escapes included, and
 * advances both past it. */
static void copy_string(const char **in, char **out)
{
    *(*out)++ = *(*in)++;
    while (**in && **in != '"') {
        if (**in == '\\')
            *(*out)++ = *(*in)++;
        *(*out)++ = *(*in)++;
    }
    if (**in)
        *(*out)++ = *(*in)++;
}

/* Whether the array opening at `in` holds only numbers (dims, strides and axes). */
static bool is_number_array(const char *in)
{
    return in[1 + strcspn(in + 1, "[]{}\"")] == ']';
}

/* jansson puts every array element on a line of its own. Dims, strides and axes read
 * better on one line, as the cuDNN frontend prints them, so every array of numbers is
 * rewritten in place as "[4, 64, 64]". Each comma jansson writes in an array is followed
 * by a newline and an indent, so the text only shrinks. */
static void compact_arrays(char *text)
{
    const char *in = text;
    char *out = text;
    while (*in) {
        if (*in == '"') {
            copy_string(&in, &out);
        } else if (*in == '[' && is_number_array(in)) {
            for (*out++ = *in++; *in != ']'; in++)
                if (*in == ',')
                    *out++ = ',', *out++ = ' ';
                else if (*in != ' ' && *in != '\n')
                    *out++ = *in;
        } else {
            *out++ = *in++;
        }
    }
    *out = '\0';
}

dnnjit_status_t dnnjit_graph_to_json(dnnjit_graph_t graph, char **json)
{
    if (json)
        *json = NULL;
    if (!graph || !json)
        return dnnjit__fail(graph, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_to_json: %s is NULL",
                            graph ? "json" : "graph");
    dnnjit_status_t s = dnnjit_graph_validate(graph);
    if (s)
        return s;
    writer_t w = {graph, DNNJIT_STATUS_SUCCESS};
    json_t *root = graph_json(&w);
    /* 17 significant digits make every double read back bit for bit. The text is
     * malloc'ed by jansson's default allocator, so dnnjit_free releases it. */
    char *text = w.status ? NULL : json_dumps(root, JSON_INDENT(4) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (w.status)
        return w.status;
    if (!text)
        return dnnjit__fail(graph, DNNJIT_STATUS_OUT_OF_MEMORY, "dnnjit_graph_to_json: out of memory");
    compact_arrays(text);
    *json = text;
    return DNNJIT_STATUS_SUCCESS;
}

/* ---- reading ----------------------------------------------------------------------- */

typedef struct reader {
    dnnjit_graph_t g;
    json_t *ids;   /* tensor name -> tensor id */
    char who[320]; /* the object being read, as messages name it: `tensor "A"`, `node #2` */
} reader_t;

static dnnjit_status_t bad(const reader_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fails with INVALID_GRAPH and a message that starts with the object being read. */
static dnnjit_status_t bad(const reader_t *r, const char *fmt, ...)
{
    char detail[DNNJIT__MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return dnnjit__fail(NULL, DNNJIT_STATUS_INVALID_GRAPH, "%s: %s", r->who, detail);
}

static dnnjit_status_t out_of_memory(void)
{
    return dnnjit__fail(NULL, DNNJIT_STATUS_OUT_OF_MEMORY, "dnnjit_graph_from_json: out of memory");
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        break;
    }
    return "null";
}

static dnnjit_status_t wrong_type(const reader_t *r, const char *key, const char *expected, const json_t *v)
{
    return bad(r, "field \"%s\" must be %s, not %s", key, expected, json_kind(v));
}

/* obj[key], or NULL when absent; absent and required is an error. */
static dnnjit_status_t field(const reader_t *r, const json_t *obj, const char *key, bool required, json_t **out)
{
    *out = json_object_get(obj, key);
    if (!*out && required)
        return bad(r, "missing field \"%s\"", key);
    return DNNJIT_STATUS_SUCCESS;
}

/* Fails on the first key of obj that is neither in `keys` nor an attribute of `fields`. */
static dnnjit_status_t check_keys(const reader_t *r, json_t *obj, const char *const *keys, const attr_field_t *fields)
{
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value) {
        bool known = false;
        for (int i = 0; keys[i] && !known; i++)
            known = strcmp(keys[i], key) == 0;
        for (const attr_field_t *f = fields; f && f->key && !known; f++)
            known = strcmp(f->key, key) == 0;
        if (!known)
            return bad(r, "unknown field \"%s\"", key);
    }
    return DNNJIT_STATUS_SUCCESS;
}

/* The getters below leave *out unchanged when an optional field is absent. */

static dnnjit_status_t get_object(const reader_t *r, const json_t *obj, const char *key, json_t **out)
{
    dnnjit_status_t s = field(r, obj, key, true, out);
    return s ? s : json_is_object(*out) ? DNNJIT_STATUS_SUCCESS : wrong_type(r, key, "an object", *out);
}

static dnnjit_status_t get_string(const reader_t *r, const json_t *obj, const char *key, bool required,
                                  const char **out)
{
    json_t *v;
    dnnjit_status_t s = field(r, obj, key, required, &v);
    if (s || !v)
        return s;
    if (!json_is_string(v))
        return wrong_type(r, key, "a string", v);
    *out = json_string_value(v);
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t get_bool(const reader_t *r, const json_t *obj, const char *key, bool *out)
{
    json_t *v;
    dnnjit_status_t s = field(r, obj, key, false, &v);
    if (s || !v)
        return s;
    if (!json_is_boolean(v))
        return wrong_type(r, key, "a boolean", v);
    *out = json_is_true(v);
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t get_int(const reader_t *r, const json_t *obj, const char *key, int64_t lo, int64_t hi,
                               int64_t *out)
{
    json_t *v;
    dnnjit_status_t s = field(r, obj, key, false, &v);
    if (s || !v)
        return s;
    if (!json_is_integer(v))
        return wrong_type(r, key, "an integer", v);
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi)
        return bad(r, "field \"%s\" is %lld, outside %lld..%lld", key, (long long)i, (long long)lo, (long long)hi);
    *out = i;
    return DNNJIT_STATUS_SUCCESS;
}

/* A number, or one of the strings real_json writes for infinities and NaN. With
 * `nullable`, null reads as absent (*present false). */
static dnnjit_status_t get_real(const reader_t *r, const json_t *obj, const char *key, bool nullable, bool *present,
                                double *out)
{
    json_t *v;
    dnnjit_status_t s = field(r, obj, key, false, &v);
    *present = false;
    if (s || !v || (nullable && json_is_null(v)))
        return s;
    const char *str = json_string_value(v);
    if (json_is_number(v))
        *out = json_number_value(v);
    else if (str && strcmp(str, "inf") == 0)
        *out = INFINITY;
    else if (str && strcmp(str, "-inf") == 0)
        *out = -INFINITY;
    else if (str && strcmp(str, "nan") == 0)
        *out = NAN;
    else
        return wrong_type(r, key, nullable ? "a number, \"inf\", \"-inf\", \"nan\" or null"
                                           : "a number, \"inf\", \"-inf\" or \"nan\"", v);
    *present = true;
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t get_enum(const reader_t *r, const json_t *obj, const char *key, const enum_kind_t *kind,
                                bool required, int *out)
{
    const char *name = NULL;
    dnnjit_status_t s = get_string(r, obj, key, required, &name);
    if (s || !name)
        return s;
    for (int i = 0; i < kind->count; i++)
        if (strcmp(kind->name(i), name) == 0) {
            *out = i;
            return DNNJIT_STATUS_SUCCESS;
        }
    return bad(r, "field \"%s\": unknown %s \"%s\"", key, kind->what, name);
}

/* An array of at most `max` integers. */
static dnnjit_status_t get_ints(const reader_t *r, const json_t *obj, const char *key, bool required, int max, int *n,
                                int64_t *v)
{
    json_t *a;
    dnnjit_status_t s = field(r, obj, key, required, &a);
    if (s || !a)
        return s;
    if (!json_is_array(a))
        return wrong_type(r, key, "an array of integers", a);
    if (json_array_size(a) > (size_t)max)
        return bad(r, "field \"%s\" has %zu entries but at most %d are allowed", key, json_array_size(a), max);
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        if (!json_is_integer(e))
            return bad(r, "field \"%s\" must be an array of integers, but entry %zu is %s", key, i, json_kind(e));
        v[i] = json_integer_value(e);
    }
    *n = (int)json_array_size(a);
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t get_axes(const reader_t *r, const json_t *obj, const char *key, uint32_t *mask)
{
    int64_t axes[DNNJIT_MAX_DIMS];
    int n = 0;
    dnnjit_status_t s = get_ints(r, obj, key, false, DNNJIT_MAX_DIMS, &n, axes);
    uint32_t m = 0;
    for (int i = 0; i < n && !s; i++) {
        if (axes[i] < 0 || axes[i] >= DNNJIT_MAX_DIMS)
            return bad(r, "field \"%s\": axis %lld is outside 0..%d", key, (long long)axes[i], DNNJIT_MAX_DIMS - 1);
        if (m >> axes[i] & 1)
            return bad(r, "field \"%s\": axis %lld is listed twice", key, (long long)axes[i]);
        m |= 1u << axes[i];
    }
    if (!s && n)
        *mask = m;
    return s;
}

static dnnjit_status_t read_attr(const reader_t *r, const json_t *obj, const attr_field_t *f, dnnjit__op_attr_t *attr)
{
    void *p = (char *)attr + f->offset;
    bool present;
    switch (f->kind) {
    case ATTR_REAL:
        return get_real(r, obj, f->key, false, &present, p);
    case ATTR_BOOL:
        return get_bool(r, obj, f->key, p);
    case ATTR_INT: {
        int64_t i = *(int *)p;
        dnnjit_status_t s = get_int(r, obj, f->key, INT_MIN, INT_MAX, &i);
        *(int *)p = (int)i;
        return s;
    }
    case ATTR_ENUM:
        return get_enum(r, obj, f->key, f->names, f->required, p);
    case ATTR_AXES:
        return get_axes(r, obj, f->key, p);
    }
    return DNNJIT_STATUS_INTERNAL;
}

static dnnjit_status_t read_context(reader_t *r, const json_t *root, dnnjit_handle_t handle)
{
    json_t *ctx;
    dnnjit_status_t s = get_object(r, root, "context", &ctx);
    if (s)
        return s;
    snprintf(r->who, sizeof r->who, "context");
    int io = 0, intermediate = 0, compute = 0;
    dnnjit_graph_attr_t attr = {.name = ""};
    if (!(s = check_keys(r, ctx, context_keys, NULL)) && !(s = get_string(r, ctx, "name", false, &attr.name)) &&
        !(s = get_enum(r, ctx, "io_data_type", &data_types, false, &io)) &&
        !(s = get_enum(r, ctx, "intermediate_data_type", &data_types, false, &intermediate)))
        s = get_enum(r, ctx, "compute_data_type", &data_types, false, &compute);
    if (s)
        return s;
    attr.io_data_type = (dnnjit_data_type_t)io;
    attr.intermediate_data_type = (dnnjit_data_type_t)intermediate;
    attr.compute_data_type = (dnnjit_data_type_t)compute;
    return dnnjit_graph_create(handle, &attr, &r->g);
}

static dnnjit_status_t read_tensor(reader_t *r, const char *name, json_t *obj)
{
    snprintf(r->who, sizeof r->who, "tensor \"%s\"", name);
    if (!json_is_object(obj))
        return bad(r, "must be an object, not %s", json_kind(obj));
    dnnjit__tensor_t t = {.name = (char *)name, .dims_set = true, .producer = -1};
    const char *own_name = name;
    int type = 0, n_stride = -1;
    int64_t stride[DNNJIT_MAX_DIMS];
    json_t *uid = json_object_get(obj, "uid");
    t.has_uid = uid != NULL;
    dnnjit_status_t s;
    if ((s = check_keys(r, obj, tensor_keys, NULL)) || (s = get_string(r, obj, "name", false, &own_name)) ||
        (s = get_enum(r, obj, "data_type", &data_types, false, &type)) ||
        (s = get_ints(r, obj, "dim", true, DNNJIT_MAX_DIMS, &t.ndim, t.dim)) ||
        (s = get_ints(r, obj, "stride", false, DNNJIT_MAX_DIMS, &n_stride, stride)) ||
        (s = get_bool(r, obj, "dim_set", &t.dims_set)) || (s = get_bool(r, obj, "is_virtual", &t.is_virtual)) ||
        (s = get_bool(r, obj, "is_pass_by_value", &t.is_pass_by_value)) ||
        (s = get_real(r, obj, "pass_by_value", true, &t.has_value, &t.value)) ||
        (s = get_int(r, obj, "uid", INT64_MIN, INT64_MAX, &t.uid)) ||
        (s = get_bool(r, obj, "uid_assigned", &t.has_uid)))
        return s;
    /* Strides left out are packed row-major and, on an op's output, left to inference. */
    t.strides_set = n_stride >= 0;
    if ((s = get_bool(r, obj, "stride_set", &t.strides_set)))
        return s;
    if (strcmp(own_name, name) != 0)
        return bad(r, "field \"name\" is \"%s\" but the tensor's key is \"%s\"", own_name, name);
    if (t.has_uid && !uid)
        return bad(r, "missing field \"uid\" (uid_assigned is true)");
    if (n_stride >= 0 && n_stride != t.ndim)
        return bad(r, "field \"stride\" has %d entries but \"dim\" has %d", n_stride, t.ndim);
    if (dnnjit__check_tensor_desc(NULL, r->who, t.ndim, t.dim, n_stride >= 0 ? stride : NULL, t.is_pass_by_value))
        return DNNJIT_STATUS_INVALID_GRAPH;
    t.data_type = (dnnjit_data_type_t)type;
    if (n_stride >= 0)
        memcpy(t.stride, stride, sizeof stride);
    else
        dnnjit__packed_strides(t.ndim, t.dim, NULL, t.stride);
    dnnjit_tensor_t id = dnnjit__add_tensor(r->g, &t);
    if (!id || json_object_set_new(r->ids, name, json_integer(id)))
        return out_of_memory();
    return DNNJIT_STATUS_SUCCESS;
}

/* Reads {PORT: tensor name} into the slots of a port table. */
static dnnjit_status_t read_ports(const reader_t *r, const json_t *node, const char *key, const char *direction,
                                  const char *const *names, int count, const char *label, dnnjit_tensor_t *slots)
{
    json_t *obj;
    dnnjit_status_t s = get_object(r, node, key, &obj);
    if (s)
        return s;
    const char *port;
    json_t *value;
    json_object_foreach(obj, port, value) {
        int slot = 0;
        while (slot < count && strcmp(names[slot], port) != 0)
            slot++;
        if (slot == count) {
            char list[200] = "";
            for (int i = 0; i < count; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
            return bad(r, "%s has no %s \"%s\" (its %ss are %s)", label, direction, port, direction, list);
        }
        if (!json_is_string(value))
            return bad(r, "%s \"%s\" must be a tensor name (a string), not %s", direction, port, json_kind(value));
        json_t *id = json_object_get(r->ids, json_string_value(value));
        if (!id)
            return bad(r, "%s \"%s\" refers to unknown tensor \"%s\"", direction, port, json_string_value(value));
        slots[slot] = (dnnjit_tensor_t)json_integer_value(id);
    }
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t check_outputs(const reader_t *r, const dnnjit__node_t *n)
{
    const dnnjit__op_ports_t *ports = dnnjit__op_ports(n->op);
    uint32_t required, allowed;
    const char *attr;
    output_rule(n, &required, &allowed, &attr);
    for (int i = 0; i < ports->n_out; i++) {
        bool given = n->out[i] != DNNJIT_TENSOR_NONE;
        if (!given && (required >> i & 1))
            return bad(r, "output %s is missing%s%s%s", ports->out_names[i], attr ? " (field \"" : "", attr ? attr : "",
                       attr ? "\" calls for it)" : "");
        if (given && !(allowed >> i & 1))
            return bad(r, "output %s is given but field \"%s\" does not call for it", ports->out_names[i], attr);
    }
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t read_node(reader_t *r, size_t index, json_t *obj)
{
    snprintf(r->who, sizeof r->who, "node #%zu", index);
    if (!json_is_object(obj))
        return bad(r, "must be an object, not %s", json_kind(obj));
    const char *name = NULL;
    int op = 0, compute = 0;
    dnnjit_status_t s = get_string(r, obj, "name", true, &name);
    if (s)
        return s;
    snprintf(r->who, sizeof r->who, "node \"%s\"", name);
    if ((s = get_enum(r, obj, "tag", &ops, true, &op)) || (s = check_keys(r, obj, node_keys, op_fields[op])) ||
        (s = get_enum(r, obj, "compute_data_type", &data_types, false, &compute)))
        return s;
    dnnjit__node_t n = {.op = (dnnjit_op_t)op, .name = (char *)name, .compute_type = (dnnjit_data_type_t)compute};
    /* A missing field takes its default, as 0 does in the C API; a field given is used as
     * it is, 0 included. */
    dnnjit__attr_defaults(n.op, &n.attr);
    /* As in the C API, the backward norms are always in the training phase. */
    if (n.op == DNNJIT_OP_LAYERNORM_BACKWARD || n.op == DNNJIT_OP_RMSNORM_BACKWARD)
        n.attr.norm.phase = DNNJIT_NORM_PHASE_TRAINING;
    for (const attr_field_t *f = op_fields[op]; f->key && !s; f++)
        s = read_attr(r, obj, f, &n.attr);
    const dnnjit__op_ports_t *ports = dnnjit__op_ports(n.op);
    const char *label = dnnjit__op_label(n.op);
    if (s || (s = read_ports(r, obj, "inputs", "input", ports->in_names, ports->n_in, label, n.in)) ||
        (s = read_ports(r, obj, "outputs", "output", ports->out_names, ports->n_out, label, n.out)) ||
        (s = check_outputs(r, &n)))
        return s;
    int64_t node_index = dnnjit__add_node(r->g, &n);
    if (node_index < 0)
        return out_of_memory();
    for (int i = 0; i < ports->n_out; i++)
        if (n.out[i])
            dnnjit__tensor(r->g, n.out[i])->producer = node_index;
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit_status_t read_graph(reader_t *r, json_t *root, dnnjit_handle_t handle)
{
    snprintf(r->who, sizeof r->who, "document");
    if (!json_is_object(root))
        return bad(r, "the top level must be an object, not %s", json_kind(root));
    /* dnnjit_version records which library wrote the file; it is only checked to be a
     * string, since json_version alone decides how the document reads. */
    const char *version = NULL, *library_version = NULL;
    json_t *tensors, *nodes;
    dnnjit_status_t s;
    if ((s = check_keys(r, root, top_keys, NULL)) || (s = get_string(r, root, "json_version", true, &version)) ||
        (s = get_string(r, root, "dnnjit_version", false, &library_version)))
        return s;
    if (strcmp(version, JSON_VERSION) != 0)
        return bad(r, "json_version is \"%s\" but this library reads \"%s\"", version, JSON_VERSION);
    if ((s = get_object(r, root, "tensors", &tensors)) || (s = field(r, root, "nodes", true, &nodes)))
        return s;
    if (!json_is_array(nodes))
        return wrong_type(r, "nodes", "an array", nodes);
    if ((s = read_context(r, root, handle)))
        return s;
    const char *name;
    json_t *value;
    json_object_foreach(tensors, name, value) {
        if ((s = read_tensor(r, name, value)))
            return s;
    }
    size_t i;
    json_array_foreach(nodes, i, value) {
        if ((s = read_node(r, i, value)))
            return s;
    }
    /* A graph input's dims are always the document's own, as they are for a tensor made
     * with dnnjit_graph_tensor; its strides count as given only when stride_set says so
     * (packed strides are re-derived by set_dim). */
    for (int64_t t = 0; t < r->g->tensor_count; t++)
        if (r->g->tensors[t].producer < 0)
            r->g->tensors[t].dims_set = true;
    return dnnjit_graph_validate(r->g);
}

dnnjit_status_t dnnjit_graph_from_json(dnnjit_handle_t handle, const char *json, dnnjit_graph_t *out)
{
    if (out)
        *out = NULL;
    if (!json || !out)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_from_json: %s is NULL", json ? "out" : "json");
    json_error_t err;
    json_t *root = json_loads(json, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
    if (!root && json_error_code(&err) == json_error_out_of_memory)
        return out_of_memory();
    if (!root)
        return dnnjit__fail(NULL, DNNJIT_STATUS_PARSE_ERROR, "JSON parse error at line %d, column %d: %s", err.line,
                            err.column, err.text);
    reader_t r = {.ids = json_object()};
    dnnjit_status_t s = r.ids ? read_graph(&r, root, handle) : out_of_memory();
    json_decref(root);
    json_decref(r.ids);
    if (s) {
        dnnjit_graph_destroy(r.g);
        return s;
    }
    *out = r.g;
    return DNNJIT_STATUS_SUCCESS;
}
