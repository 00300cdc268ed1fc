/* Internal view of graphs, tensors and nodes, shared by src/graph, src/ref and the later
 * stages. Nothing here is public API. */
#ifndef DNNJIT_GRAPH_GRAPH_H
#define DNNJIT_GRAPH_GRAPH_H

#include "dnnjit.h"

#include <stdarg.h>

/* The most inputs / outputs any op has (layernorm backward: DY, X, SCALE, MEAN, INV_VARIANCE;
 * layernorm: Y, MEAN, INV_VARIANCE). */
#define DNNJIT__MAX_INPUTS 6
#define DNNJIT__MAX_OUTPUTS 3

typedef struct dnnjit__tensor {
    char *name;
    int ndim;
    int64_t dim[DNNJIT_MAX_DIMS];
    int64_t stride[DNNJIT_MAX_DIMS];
    /* As the user set it (NOT_SET allowed until validation) and as resolved by validation. */
    dnnjit_data_type_t data_type;
    dnnjit_data_type_t resolved_type;
    bool is_virtual;
    bool is_pass_by_value;
    bool has_value;
    double value;
    bool has_uid;
    int64_t uid;
    /* Whether the caller fixed dims / strides (when creating the tensor or with set_dim /
     * set_stride). Validation checks an op output's fixed ones against inference instead
     * of overwriting them; strides nobody fixed are re-packed when the dims change. */
    bool dims_set;
    bool strides_set;
    int64_t producer; /* node index, or -1 for a graph input */
} dnnjit__tensor_t;

typedef union dnnjit__op_attr {
    struct {
        double padding_value;
    } matmul;
    struct {
        dnnjit_pointwise_mode_t mode;
        double relu_lower_clip;
        bool has_relu_upper_clip;
        double relu_upper_clip;
        double relu_lower_clip_slope;
        double elu_alpha; /* as used: the defaults are filled in when the node is added */
        double softplus_beta;
        double swish_beta;
    } pointwise;
    struct {
        dnnjit_reduction_mode_t mode;
        uint32_t axes; /* as given; 0 = derive (see dnnjit.h) */
        uint32_t resolved_axes;
    } reduction;
    struct {
        dnnjit_softmax_stats_t stats;
    } softmax;
    struct {
        dnnjit_norm_phase_t phase;
        int norm_axes;          /* as given; 0 = all but the first */
        double epsilon_value;   /* as used, like elu_alpha */
    } norm;
    struct {
        bool has_attn_scale;
        double attn_scale;
        bool use_causal_mask;
        bool generate_stats;
    } sdpa;
} dnnjit__op_attr_t;

typedef struct dnnjit__node {
    dnnjit_op_t op;
    char *name;
    dnnjit_data_type_t compute_type; /* as given; NOT_SET = the graph's */
    /* Fixed slots per op, in the order of the op's port table; NONE where absent. */
    dnnjit_tensor_t in[DNNJIT__MAX_INPUTS];
    dnnjit_tensor_t out[DNNJIT__MAX_OUTPUTS];
    dnnjit__op_attr_t attr;
} dnnjit__node_t;

/* The handle (src/runtime/runtime.h) and what the JIT stages add to a graph once its
 * operation graph is built (src/engine/plan.h). */
struct dnnjit__jit_state;

#define DNNJIT__MSG_LEN 2048

struct dnnjit_graph {
    dnnjit_handle_t handle;
    char *name;
    dnnjit_data_type_t io_type;
    dnnjit_data_type_t intermediate_type;
    dnnjit_data_type_t compute_type;
    dnnjit__tensor_t *tensors; /* tensors[id - 1] */
    int64_t tensor_count, tensor_cap;
    dnnjit__node_t *nodes;
    int64_t node_count, node_cap;
    bool validated;
    struct dnnjit__jit_state *jit; /* non-NULL once built: the graph is then frozen */
    char error[DNNJIT__MSG_LEN];
};

/* Port tables: the names of each op's input and output slots (as used in JSON and in
 * messages) and which slots are optional. */
typedef struct dnnjit__op_ports {
    int n_in;
    const char *in_names[DNNJIT__MAX_INPUTS];
    uint32_t in_optional; /* bit i: input slot i may be NONE */
    int n_out;
    const char *out_names[DNNJIT__MAX_OUTPUTS];
    uint32_t out_optional;
} dnnjit__op_ports_t;

const dnnjit__op_ports_t *dnnjit__op_ports(dnnjit_op_t op);

/* Short lower-case op name for messages ("matmul", "layernorm_backward"). */
const char *dnnjit__op_label(dnnjit_op_t op);

/* ---- errors ---- */

/* Records a message for the thread and (if graph is non-NULL) the graph, and returns
 * status, so that failures read `return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "...")`. */
dnnjit_status_t dnnjit__fail(dnnjit_graph_t graph, dnnjit_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
dnnjit_status_t dnnjit__vfail(dnnjit_graph_t graph, dnnjit_status_t status, const char *fmt, va_list ap);
/* Sets this thread's last error to `msg` without touching any graph's, for a message
 * that was formatted elsewhere. */
void dnnjit__set_thread_error(const char *msg);

/* ---- lookups ---- */

static inline dnnjit__tensor_t *dnnjit__tensor(dnnjit_graph_t g, dnnjit_tensor_t id)
{
    return (id >= 1 && (int64_t)id <= g->tensor_count) ? &g->tensors[id - 1] : NULL;
}

/* The data type a tensor has: its own, else the default its role gives it (statistics
 * outputs FLOAT, virtual tensors the intermediate type, others the io type, outputs
 * without one the type of their node's first input). NOT_SET when none applies. */
dnnjit_data_type_t dnnjit__tensor_type(dnnjit_graph_t g, const dnnjit__tensor_t *t);

/* The effective compute type of a node. */
dnnjit_data_type_t dnnjit__node_compute_type(dnnjit_graph_t g, const dnnjit__node_t *n);

/* ---- building blocks shared by the graph code, JSON and ref ---- */

char *dnnjit__strdup(const char *s);
/* Whether `text` is a whole number from lo to hi (base 10 as strtol reads it, nothing after),
 * stored in *value when it is: how the library reads its numeric environment variables. */
bool dnnjit__whole_number(const char *text, long lo, long hi, long *value);
/* Appends a tensor with the given fields copied; returns its id or NONE on OOM. */
dnnjit_tensor_t dnnjit__add_tensor(dnnjit_graph_t g, const dnnjit__tensor_t *proto);
/* Appends a node (copying *proto, taking ownership of nothing); creates no outputs.
 * Returns its index or -1 on OOM. */
int64_t dnnjit__add_node(dnnjit_graph_t g, const dnnjit__node_t *proto);

/* Fills row-major packed strides for dims, following the order of `like` strides when
 * like is non-NULL (the innermost stride of like gets stride 1, and so on). */
void dnnjit__packed_strides(int ndim, const int64_t *dim, const int64_t *like, int64_t *stride);

/* Total elements; -1 if the product overflows int64. */
int64_t dnnjit__numel(int ndim, const int64_t *dim);

/* Checks a single tensor's own description (rank, dims, strides, overflow, pass-by-value);
 * `who` prefixes the message (e.g. `tensor "A"`). */
dnnjit_status_t dnnjit__check_tensor_desc(dnnjit_graph_t g, const char *who, int ndim, const int64_t *dim,
                                          const int64_t *stride, bool is_pass_by_value);

/* Runs shape inference for one node: fills its outputs' dims / strides / default types
 * unless the user fixed them, and checks the inputs. With `strict`, a user-fixed output
 * shape that disagrees with inference is an error. */
dnnjit_status_t dnnjit__infer_node(dnnjit_graph_t g, int64_t node_index, bool strict);

/* Gives every tensor without a uid the next free one. */
void dnnjit__assign_missing_uids(dnnjit_graph_t g);

/* Sets the attributes of an `op` node that have defaults to them (ELU alpha 1, epsilon
 * 1e-5, ...): what the C API takes for 0 without its has_ flag, and JSON for a missing
 * field. */
void dnnjit__attr_defaults(dnnjit_op_t op, dnnjit__op_attr_t *attr);

/* Marks the graph as modified (needs validation again); fails with BAD_STATE if it can no
 * longer be modified. */
dnnjit_status_t dnnjit__modify(dnnjit_graph_t g);

#endif
