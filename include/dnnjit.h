/*
 * dnnjit.h — deep-learning graphs, compiled just in time for the exact problem.
 *
 * OVERVIEW
 *
 * A program describes deep-learning work as a graph: tensors are the edges, operations
 * (matmul, pointwise, reduction, softmax, layer/RMS norm, SDPA, ...) are the nodes.
 * dnnjit validates the graph with precise messages, saves and loads it as JSON, and runs
 * it on the CPU with a float64 reference executor that defines what every op means.
 * Later stages (fusion, code generation, NVRTC compilation, kernel cache, execution on the
 * GPU) build on the same graph object.
 *
 * Every function returns a dnnjit_status_t. When it is not DNNJIT_STATUS_SUCCESS, a
 * message naming the node, the tensor and the dimension at fault is available from
 * dnnjit_graph_last_error(graph) (kept per graph) and from dnnjit_last_error() (kept per
 * thread). No input ever aborts the program or leaks memory.
 *
 * WORKED EXAMPLE: C[b] = A[b] @ B[b] with half inputs and float accumulation (seed 000),
 * checked on the CPU reference executor.
 *
 *     dnnjit_handle_t h;
 *     dnnjit_graph_t g;
 *     dnnjit_handle_create(&h);
 *     dnnjit_graph_create(h, &(dnnjit_graph_attr_t){
 *         .name = "jit_matmul_graph",
 *         .io_data_type = DNNJIT_DATA_TYPE_HALF,
 *         .compute_data_type = DNNJIT_DATA_TYPE_FLOAT }, &g);
 *
 *     dnnjit_tensor_t a, b, c;
 *     dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){ .name = "A", .ndim = 3,
 *         .dim = (int64_t[]){4, 64, 128}, .stride = (int64_t[]){64 * 128, 128, 1} }, &a);
 *     dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){ .name = "B", .ndim = 3,
 *         .dim = (int64_t[]){4, 128, 64} }, &b);          // NULL stride: packed row-major
 *     dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){ .name = "mm" }, &c);
 *     dnnjit_tensor_set_output(g, c, true);              // C is written to memory
 *
 *     if (dnnjit_graph_validate(g) != DNNJIT_STATUS_SUCCESS)
 *         fprintf(stderr, "%s\n", dnnjit_graph_last_error(g));
 *
 *     int64_t ua, ub, uc;                               // uids are assigned if not set
 *     dnnjit_tensor_get_uid(g, a, &ua); ...
 *     dnnjit_variant_t pack[] = { {ua, host_a}, {ub, host_b}, {uc, host_c} };
 *     dnnjit_graph_execute_reference(g, pack, 3);       // host buffers, tensor dtypes
 *
 *     dnnjit_graph_destroy(g);
 *     dnnjit_handle_destroy(h);
 *
 * CONVENTIONS
 *
 * - Dims and strides are int64 and counted in elements, outermost first. A stride may be 0
 *   (broadcast) on tensors that are only read; a tensor that is written (an op's output
 *   that is not virtual) must not overlap itself.
 * - Attribute structs are meant for designated initialisers: a zeroed field means "the
 *   default", which each field's comment states.
 * - Tensors are named by dnnjit_tensor_t ids local to their graph; 0 (DNNJIT_TENSOR_NONE)
 *   means "no tensor" for optional inputs.
 * - Strings the library returns through `char **` are owned by the caller and released
 *   with dnnjit_free(). Strings returned as `const char *` stay owned by the library.
 * - Thread safety: different graphs may be used from different threads at once. One graph
 *   must not be used by two threads at once. A handle may be shared by graphs on any
 *   threads. dnnjit_last_error() is per thread.
 */
#ifndef DNNJIT_H
#define DNNJIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define DNNJIT_API
#else
#define DNNJIT_API __attribute__((visibility("default")))
#endif

#define DNNJIT_VERSION_MAJOR 0
#define DNNJIT_VERSION_MINOR 1
#define DNNJIT_VERSION_PATCH 0
/* Version as one number: major * 10000 + minor * 100 + patch. */
#define DNNJIT_VERSION (DNNJIT_VERSION_MAJOR * 10000 + DNNJIT_VERSION_MINOR * 100 + DNNJIT_VERSION_PATCH)

/* The largest rank a tensor may have. */
#define DNNJIT_MAX_DIMS 8

/* ------------------------------------------------------------------------------------ */
/* Status codes                                                                          */
/* ------------------------------------------------------------------------------------ */

/* X(name, text): each status and its one-line description, written once. New codes are
 * only ever added at the end. */
#define DNNJIT_STATUS_MAP(X)                                                      \
    X(SUCCESS, "success")                                                          \
    X(BAD_PARAM, "invalid argument")                                               \
    X(INVALID_GRAPH, "invalid graph")                                              \
    X(NOT_SUPPORTED, "not supported")                                              \
    X(OUT_OF_MEMORY, "out of memory")                                              \
    X(PARSE_ERROR, "parse error")                                                  \
    X(IO_ERROR, "input/output error")                                              \
    X(BAD_STATE, "operation not allowed in the graph's current state")            \
    X(NOT_FOUND, "not found")                                                      \
    X(INTERNAL, "internal error")                                                 \
    X(COMPILE_ERROR, "NVRTC could not compile a generated kernel; the message holds the compiler log") \
    X(CUDA_ERROR, "a CUDA driver call failed; the message names the call and the driver's error")

typedef enum dnnjit_status {
#define DNNJIT_STATUS_ENUM_(name, text) DNNJIT_STATUS_##name,
    DNNJIT_STATUS_MAP(DNNJIT_STATUS_ENUM_)
#undef DNNJIT_STATUS_ENUM_
} dnnjit_status_t;

/* The fixed one-line description of a status ("invalid argument"). Never NULL: an
 * unknown value gives "unknown status". */
DNNJIT_API const char *dnnjit_status_string(dnnjit_status_t status);

/* The symbolic name of a status ("BAD_PARAM"), or NULL for an unknown value. */
DNNJIT_API const char *dnnjit_status_name(dnnjit_status_t status);

/* The detailed message of the last failing call made by this thread (any graph or none),
 * or "" if none failed yet. The pointer stays valid until this thread's next dnnjit call. */
DNNJIT_API const char *dnnjit_last_error(void);

/* Frees memory the library handed to the caller (strings from _to_json and similar).
 * NULL is allowed. */
DNNJIT_API void dnnjit_free(void *ptr);

/* The library's version string, e.g. "0.1.0". */
DNNJIT_API const char *dnnjit_version_string(void);

/* ------------------------------------------------------------------------------------ */
/* Enumerations (each grows only at the end)                                            */
/* ------------------------------------------------------------------------------------ */

/* X(name, element size in bytes). */
#define DNNJIT_DATA_TYPE_MAP(X) \
    X(NOT_SET, 0)               \
    X(FLOAT, 4)                 \
    X(DOUBLE, 8)                \
    X(HALF, 2)                  \
    X(BFLOAT16, 2)              \
    X(FP8_E4M3, 1)              \
    X(FP8_E5M2, 1)              \
    X(INT8, 1)                  \
    X(INT32, 4)                 \
    X(INT64, 8)                 \
    X(BOOLEAN, 1)

typedef enum dnnjit_data_type {
#define DNNJIT_DATA_TYPE_ENUM_(name, size) DNNJIT_DATA_TYPE_##name,
    DNNJIT_DATA_TYPE_MAP(DNNJIT_DATA_TYPE_ENUM_)
#undef DNNJIT_DATA_TYPE_ENUM_
    DNNJIT_DATA_TYPE_COUNT_
} dnnjit_data_type_t;

/* "FLOAT", "HALF", ... or NULL for an unknown value. */
DNNJIT_API const char *dnnjit_data_type_name(dnnjit_data_type_t type);
/* Bytes per element; 0 for NOT_SET or an unknown value. BOOLEAN is stored as one byte. */
DNNJIT_API size_t dnnjit_data_type_size(dnnjit_data_type_t type);
/* Parses a name as written by dnnjit_data_type_name. */
DNNJIT_API dnnjit_status_t dnnjit_data_type_from_name(const char *name, dnnjit_data_type_t *out);

/* X(name, number of inputs). FWD activations take x; BWD activations take (dy, x) and give
 * dx = dy * f'(x); ADD_SQUARE is a + b*b; BINARY_SELECT is in2 ? in0 : in1; comparisons
 * and logical ops give 1 or 0. Their exact meaning is src/ref/pointwise.c. */
#define DNNJIT_POINTWISE_MODE_MAP(X) \
    X(ADD, 2)                        \
    X(SUB, 2)                        \
    X(MUL, 2)                        \
    X(DIV, 2)                        \
    X(MAX, 2)                        \
    X(MIN, 2)                        \
    X(POW, 2)                        \
    X(MOD, 2)                        \
    X(ADD_SQUARE, 2)                 \
    X(SQRT, 1)                       \
    X(RSQRT, 1)                      \
    X(RECIPROCAL, 1)                 \
    X(EXP, 1)                        \
    X(LOG, 1)                        \
    X(NEG, 1)                        \
    X(ABS, 1)                        \
    X(CEIL, 1)                       \
    X(FLOOR, 1)                      \
    X(SIN, 1)                        \
    X(COS, 1)                        \
    X(TAN, 1)                        \
    X(ERF, 1)                        \
    X(IDENTITY, 1)                   \
    X(RELU_FWD, 1)                   \
    X(TANH_FWD, 1)                   \
    X(SIGMOID_FWD, 1)                \
    X(ELU_FWD, 1)                    \
    X(GELU_FWD, 1)                   \
    X(GELU_APPROX_TANH_FWD, 1)       \
    X(SOFTPLUS_FWD, 1)               \
    X(SWISH_FWD, 1)                  \
    X(RELU_BWD, 2)                   \
    X(TANH_BWD, 2)                   \
    X(SIGMOID_BWD, 2)                \
    X(ELU_BWD, 2)                    \
    X(GELU_BWD, 2)                   \
    X(GELU_APPROX_TANH_BWD, 2)       \
    X(SOFTPLUS_BWD, 2)               \
    X(SWISH_BWD, 2)                  \
    X(CMP_EQ, 2)                     \
    X(CMP_NEQ, 2)                    \
    X(CMP_GT, 2)                     \
    X(CMP_GE, 2)                     \
    X(CMP_LT, 2)                     \
    X(CMP_LE, 2)                     \
    X(LOGICAL_AND, 2)                \
    X(LOGICAL_OR, 2)                 \
    X(LOGICAL_NOT, 1)                \
    X(BINARY_SELECT, 3)

typedef enum dnnjit_pointwise_mode {
#define DNNJIT_POINTWISE_ENUM_(name, arity) DNNJIT_POINTWISE_##name,
    DNNJIT_POINTWISE_MODE_MAP(DNNJIT_POINTWISE_ENUM_)
#undef DNNJIT_POINTWISE_ENUM_
    DNNJIT_POINTWISE_MODE_COUNT_
} dnnjit_pointwise_mode_t;

/* "ADD", "RELU_FWD", ... or NULL; the number of inputs the mode takes (0 if unknown). */
DNNJIT_API const char *dnnjit_pointwise_mode_name(dnnjit_pointwise_mode_t mode);
DNNJIT_API int dnnjit_pointwise_mode_arity(dnnjit_pointwise_mode_t mode);
DNNJIT_API dnnjit_status_t dnnjit_pointwise_mode_from_name(const char *name, dnnjit_pointwise_mode_t *out);

/* Reductions: AMAX is max(|x|), AVG the mean, NORM1 sum(|x|), NORM2 sqrt(sum(x*x)). */
#define DNNJIT_REDUCTION_MODE_MAP(X) X(ADD) X(MUL) X(MIN) X(MAX) X(AMAX) X(AVG) X(NORM1) X(NORM2)

typedef enum dnnjit_reduction_mode {
#define DNNJIT_REDUCTION_ENUM_(name) DNNJIT_REDUCTION_##name,
    DNNJIT_REDUCTION_MODE_MAP(DNNJIT_REDUCTION_ENUM_)
#undef DNNJIT_REDUCTION_ENUM_
    DNNJIT_REDUCTION_MODE_COUNT_
} dnnjit_reduction_mode_t;

DNNJIT_API const char *dnnjit_reduction_mode_name(dnnjit_reduction_mode_t mode);
DNNJIT_API dnnjit_status_t dnnjit_reduction_mode_from_name(const char *name, dnnjit_reduction_mode_t *out);

/* The operations a node can be. */
#define DNNJIT_OP_MAP(X) \
    X(MATMUL)            \
    X(POINTWISE)         \
    X(REDUCTION)         \
    X(SOFTMAX)           \
    X(SOFTMAX_BACKWARD)  \
    X(LAYERNORM)         \
    X(LAYERNORM_BACKWARD) \
    X(RMSNORM)           \
    X(RMSNORM_BACKWARD)  \
    X(SDPA)

typedef enum dnnjit_op {
#define DNNJIT_OP_ENUM_(name) DNNJIT_OP_##name,
    DNNJIT_OP_MAP(DNNJIT_OP_ENUM_)
#undef DNNJIT_OP_ENUM_
    DNNJIT_OP_COUNT_
} dnnjit_op_t;

/* "MATMUL", "LAYERNORM_BACKWARD", ... (the JSON "tag") or NULL. */
DNNJIT_API const char *dnnjit_op_name(dnnjit_op_t op);

typedef enum dnnjit_norm_phase {
    DNNJIT_NORM_PHASE_INFERENCE = 0, /* y only */
    DNNJIT_NORM_PHASE_TRAINING = 1   /* y and the saved statistics */
} dnnjit_norm_phase_t;

/* The statistics a softmax can write besides its output, each with the softmax axis
 * reduced to 1: LOG_SUM_EXP gives max + log(sum(exp(x - max))); MAX_SUM_EXP gives the max
 * and sum(exp(x - max)) as two tensors. */
typedef enum dnnjit_softmax_stats {
    DNNJIT_SOFTMAX_STATS_NONE = 0,
    DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP = 1,
    DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP = 2
} dnnjit_softmax_stats_t;

/* ------------------------------------------------------------------------------------ */
/* Handles                                                                               */
/* ------------------------------------------------------------------------------------ */

typedef struct dnnjit_handle *dnnjit_handle_t;

/* Creates a handle. Needs no GPU, driver or NVRTC. The caller owns it and releases it with
 * dnnjit_handle_destroy after every graph made with it is destroyed, and before the process
 * ends: the first handle that finds a GPU starts loading NVRTC on a thread of its own, and a
 * process that ends during that load (its first milliseconds) can crash in NVRTC's
 * constructors.
 * Errors: BAD_PARAM (out is NULL), OUT_OF_MEMORY. */
DNNJIT_API dnnjit_status_t dnnjit_handle_create(dnnjit_handle_t *out);

/* Destroys a handle. NULL is allowed and does nothing. With a GPU it first waits for the
 * NVRTC load dnnjit_handle_create started, if that is still running. */
DNNJIT_API void dnnjit_handle_destroy(dnnjit_handle_t handle);

/* ------------------------------------------------------------------------------------ */
/* Graphs                                                                                */
/* ------------------------------------------------------------------------------------ */

typedef struct dnnjit_graph *dnnjit_graph_t;

typedef struct dnnjit_graph_attr {
    const char *name;                        /* NULL: "" */
    dnnjit_data_type_t io_data_type;         /* default type of inputs and outputs */
    dnnjit_data_type_t intermediate_data_type; /* default type of virtual tensors */
    dnnjit_data_type_t compute_data_type;    /* default compute type of nodes; NOT_SET: FLOAT */
} dnnjit_graph_attr_t;

/* Creates an empty graph. handle may be NULL (a graph used only for validation, JSON and
 * the reference executor); attr may be NULL (all defaults). The graph copies what it
 * needs from attr. The caller owns the graph and releases it with dnnjit_graph_destroy.
 * Errors: BAD_PARAM (out NULL, an unknown data type), OUT_OF_MEMORY. */
DNNJIT_API dnnjit_status_t dnnjit_graph_create(dnnjit_handle_t handle, const dnnjit_graph_attr_t *attr,
                                               dnnjit_graph_t *out);

/* Destroys a graph and everything in it. NULL is allowed. */
DNNJIT_API void dnnjit_graph_destroy(dnnjit_graph_t graph);

/* The message of the last failing call on this graph, or "" if none failed. Owned by the
 * graph; valid until the next call on it. A NULL graph gives dnnjit_last_error(). */
DNNJIT_API const char *dnnjit_graph_last_error(dnnjit_graph_t graph);

/* Reads back the graph's attributes. The name points into the graph. */
DNNJIT_API dnnjit_status_t dnnjit_graph_get_attr(dnnjit_graph_t graph, dnnjit_graph_attr_t *out);

/* Number of tensors (ids run from 1 to this count) and of nodes (0 to count-1). */
DNNJIT_API dnnjit_status_t dnnjit_graph_get_tensor_count(dnnjit_graph_t graph, int64_t *count);
DNNJIT_API dnnjit_status_t dnnjit_graph_get_node_count(dnnjit_graph_t graph, int64_t *count);

/* ------------------------------------------------------------------------------------ */
/* Tensors                                                                               */
/* ------------------------------------------------------------------------------------ */

/* A tensor id inside one graph; 0 means "none". */
typedef uint32_t dnnjit_tensor_t;
#define DNNJIT_TENSOR_NONE ((dnnjit_tensor_t)0)

typedef struct dnnjit_tensor_desc {
    const char *name;          /* NULL: "t<id>" (or the next free "t<k>" if taken);
                                  names are unique within a graph */
    int ndim;                  /* 1 .. DNNJIT_MAX_DIMS */
    const int64_t *dim;        /* ndim sizes, each >= 1 */
    const int64_t *stride;     /* ndim strides in elements; NULL: packed row-major */
    dnnjit_data_type_t data_type; /* NOT_SET: the graph's io type (or, if virtual, its
                                     intermediate type), resolved at validation */
    bool is_virtual;           /* an intermediate that never touches memory */
    bool is_pass_by_value;     /* a scalar passed by value; all dims must be 1 */
    bool has_value;            /* pass-by-value with its value fixed in the graph */
    double value;              /* that value (when has_value) */
    bool has_uid;              /* false: a unique uid is assigned at validation */
    int64_t uid;               /* the caller's uid (when has_uid), any int64 */
} dnnjit_tensor_desc_t;

/* Adds a tensor to the graph: an input (not virtual), or a virtual tensor that an op will
 * produce later is not possible here — op outputs are made by the op functions.
 * Errors: BAD_PARAM (rank outside 1..8, a dim < 1, a negative stride, a duplicate name or
 * uid, pass-by-value with a dim != 1), BAD_STATE (graph already built), OUT_OF_MEMORY. */
DNNJIT_API dnnjit_status_t dnnjit_graph_tensor(dnnjit_graph_t graph, const dnnjit_tensor_desc_t *desc,
                                               dnnjit_tensor_t *out);

/* Everything known about a tensor. The name points into the graph and stays valid until
 * the tensor is renamed or the graph destroyed. Before validation, data_type may be
 * NOT_SET and has_uid false; after it, both are resolved. */
typedef struct dnnjit_tensor_info {
    const char *name;
    int ndim;
    int64_t dim[DNNJIT_MAX_DIMS];
    int64_t stride[DNNJIT_MAX_DIMS];
    dnnjit_data_type_t data_type;
    bool is_virtual;
    bool is_pass_by_value;
    bool has_value;
    double value;
    bool has_uid;
    int64_t uid;
    int64_t producer; /* index of the node that writes it, or -1 for a graph input */
} dnnjit_tensor_info_t;

DNNJIT_API dnnjit_status_t dnnjit_tensor_get_info(dnnjit_graph_t graph, dnnjit_tensor_t tensor,
                                                  dnnjit_tensor_info_t *out);
/* The uid, assigning one now if the tensor has none yet. */
DNNJIT_API dnnjit_status_t dnnjit_tensor_get_uid(dnnjit_graph_t graph, dnnjit_tensor_t tensor, int64_t *uid);
/* Finds a tensor by uid or by name. Errors: NOT_FOUND. */
DNNJIT_API dnnjit_status_t dnnjit_graph_find_tensor_by_uid(dnnjit_graph_t graph, int64_t uid, dnnjit_tensor_t *out);
DNNJIT_API dnnjit_status_t dnnjit_graph_find_tensor_by_name(dnnjit_graph_t graph, const char *name,
                                                            dnnjit_tensor_t *out);

/* Setters, mirroring the cuDNN frontend's. Each fails with BAD_STATE once the graph is
 * built, BAD_PARAM for a bad tensor id or value (the message says which).
 * set_output(true) makes a tensor non-virtual (written to memory); false makes an op's
 * output virtual again. set_dim / set_stride fix an op output's shape; validation checks
 * it against the inferred one. Strides nobody set (packed by default) are re-packed, in
 * the same order, when set_dim changes the dims; strides given at creation or with
 * set_stride stay as given while the rank does. set_uid fails on a uid another tensor
 * holds. */
DNNJIT_API dnnjit_status_t dnnjit_tensor_set_output(dnnjit_graph_t graph, dnnjit_tensor_t tensor, bool is_output);
DNNJIT_API dnnjit_status_t dnnjit_tensor_set_data_type(dnnjit_graph_t graph, dnnjit_tensor_t tensor,
                                                       dnnjit_data_type_t type);
DNNJIT_API dnnjit_status_t dnnjit_tensor_set_uid(dnnjit_graph_t graph, dnnjit_tensor_t tensor, int64_t uid);
DNNJIT_API dnnjit_status_t dnnjit_tensor_set_name(dnnjit_graph_t graph, dnnjit_tensor_t tensor, const char *name);
DNNJIT_API dnnjit_status_t dnnjit_tensor_set_dim(dnnjit_graph_t graph, dnnjit_tensor_t tensor, int ndim,
                                                 const int64_t *dim);
DNNJIT_API dnnjit_status_t dnnjit_tensor_set_stride(dnnjit_graph_t graph, dnnjit_tensor_t tensor, int ndim,
                                                    const int64_t *stride);

/* ------------------------------------------------------------------------------------ */
/* Operations                                                                            */
/* ------------------------------------------------------------------------------------ */
/*
 * Each op function adds one node. Inputs are tensor ids of this graph; outputs are new
 * virtual tensors named "<node>::<PORT>" whose dims, strides and data type are inferred
 * (and re-inferred at validation if inputs change). Node names default to the node's
 * index ("0", "1", ...), or the next free number if the caller gave that name to another
 * node. Errors: BAD_PARAM (unknown tensor id, unknown mode, wrong number of inputs),
 * INVALID_GRAPH (shapes that cannot work — also reported by validate), BAD_STATE (graph
 * built), OUT_OF_MEMORY.
 */

/* C[..., M, N] = A[..., M, K] @ B[..., K, N]. Batch dims broadcast numpy-style (a 1 or a
 * missing leading dim stretches). C is packed row-major. */
typedef struct dnnjit_matmul_attr {
    const char *name;
    dnnjit_data_type_t compute_data_type; /* NOT_SET: the graph's compute type */
    double padding_value;                 /* kept for cuDNN compatibility; unused */
} dnnjit_matmul_attr_t;

DNNJIT_API dnnjit_status_t dnnjit_graph_matmul(dnnjit_graph_t graph, dnnjit_tensor_t a, dnnjit_tensor_t b,
                                               const dnnjit_matmul_attr_t *attr, dnnjit_tensor_t *c);

/* out = mode(in0[, in1[, in2]]) with numpy-style broadcasting of all inputs. The output is
 * packed in the stride order of in0 (cuDNN's rule). */
typedef struct dnnjit_pointwise_attr {
    const char *name;
    dnnjit_pointwise_mode_t mode;
    dnnjit_data_type_t compute_data_type; /* NOT_SET: the graph's compute type */
    double relu_lower_clip;               /* RELU: y = max(x, lower) ... default 0 */
    bool has_relu_upper_clip;             /* RELU: also y = min(y, upper) */
    double relu_upper_clip;
    double relu_lower_clip_slope;         /* RELU: slope below the lower clip; default 0 */
    double elu_alpha;                     /* ELU: 0 means 1.0 unless has_elu_alpha */
    double softplus_beta;                 /* SOFTPLUS: 0 means 1.0 unless has_softplus_beta */
    double swish_beta;                    /* SWISH: 0 means 1.0 unless has_swish_beta */
    bool has_elu_alpha;                   /* take elu_alpha as given, even 0 (ELU is then RELU) */
    bool has_softplus_beta;               /* take softplus_beta as given (0 is refused: softplus divides by it) */
    bool has_swish_beta;                  /* take swish_beta as given, even 0 (SWISH is then x / 2) */
} dnnjit_pointwise_attr_t;

DNNJIT_API dnnjit_status_t dnnjit_graph_pointwise(dnnjit_graph_t graph, const dnnjit_pointwise_attr_t *attr,
                                                  dnnjit_tensor_t in0, dnnjit_tensor_t in1, dnnjit_tensor_t in2,
                                                  dnnjit_tensor_t *out);

/* Sugar for a POINTWISE ADD of input and a broadcast bias; the node is an ordinary
 * pointwise node (it saves to JSON as one). */
DNNJIT_API dnnjit_status_t dnnjit_graph_bias(dnnjit_graph_t graph, const char *name, dnnjit_tensor_t input,
                                             dnnjit_tensor_t bias, dnnjit_tensor_t *out);

/* Y = reduce(X) over a set of axes; Y keeps X's rank with 1 on each reduced axis. The axes
 * are the bits of `axes` (bit i = axis i); 0 means: every axis, unless Y's dims were fixed
 * with dnnjit_tensor_set_dim, in which case the axes where Y has 1 and X does not. */
typedef struct dnnjit_reduction_attr {
    const char *name;
    dnnjit_reduction_mode_t mode;
    dnnjit_data_type_t compute_data_type;
    uint32_t axes;
} dnnjit_reduction_attr_t;

DNNJIT_API dnnjit_status_t dnnjit_graph_reduction(dnnjit_graph_t graph, dnnjit_tensor_t x,
                                                  const dnnjit_reduction_attr_t *attr, dnnjit_tensor_t *y);

/* S = softmax(P) over the last axis. Stats outputs (see dnnjit_softmax_stats_t) have P's
 * dims with the last set to 1 and are FLOAT unless set otherwise; stats0/stats1 may be NULL
 * when not asked for. */
typedef struct dnnjit_softmax_attr {
    const char *name;
    dnnjit_data_type_t compute_data_type;
    dnnjit_softmax_stats_t stats;
} dnnjit_softmax_attr_t;

DNNJIT_API dnnjit_status_t dnnjit_graph_softmax(dnnjit_graph_t graph, dnnjit_tensor_t p,
                                                const dnnjit_softmax_attr_t *attr, dnnjit_tensor_t *s,
                                                dnnjit_tensor_t *stats0, dnnjit_tensor_t *stats1);

/* dX = Y * (dY - sum(dY * Y)) over the last axis, Y being softmax's output. */
DNNJIT_API dnnjit_status_t dnnjit_graph_softmax_backward(dnnjit_graph_t graph, dnnjit_tensor_t y,
                                                         dnnjit_tensor_t dy, const dnnjit_softmax_attr_t *attr,
                                                         dnnjit_tensor_t *dx);

/* Layer norm and RMS norm over the last `norm_axes` axes (0: every axis but the first,
 * as cuDNN does). SCALE (and BIAS) have X's dims on the normalised axes and 1 elsewhere.
 * Statistics (MEAN, INV_VARIANCE) have X's dims on the other axes and 1 on the normalised
 * ones, and are FLOAT unless set otherwise; they are outputs only in the TRAINING phase.
 *   layernorm: y = (x - mean) * inv_var * scale + bias, inv_var = 1/sqrt(var + eps)
 *   rmsnorm:   y = x * inv_rms * scale [+ bias],    inv_rms = 1/sqrt(mean(x*x) + eps)
 * epsilon comes from the tensor `epsilon` (pass-by-value or not) if given, else from the
 * attribute. */
typedef struct dnnjit_norm_attr {
    const char *name;
    dnnjit_norm_phase_t phase;
    dnnjit_data_type_t compute_data_type;
    int norm_axes;           /* 0: all but the first axis */
    dnnjit_tensor_t epsilon; /* NONE: use epsilon_value */
    double epsilon_value;    /* 0 means 1e-5 unless has_epsilon_value */
    bool has_epsilon_value;  /* take epsilon_value as given, even 0 */
} dnnjit_norm_attr_t;

/* bias may be NONE for rmsnorm, not for layernorm. mean / inv_variance may be NULL in the
 * INFERENCE phase. */
DNNJIT_API dnnjit_status_t dnnjit_graph_layernorm(dnnjit_graph_t graph, dnnjit_tensor_t x, dnnjit_tensor_t scale,
                                                  dnnjit_tensor_t bias, const dnnjit_norm_attr_t *attr,
                                                  dnnjit_tensor_t *y, dnnjit_tensor_t *mean,
                                                  dnnjit_tensor_t *inv_variance);
DNNJIT_API dnnjit_status_t dnnjit_graph_rmsnorm(dnnjit_graph_t graph, dnnjit_tensor_t x, dnnjit_tensor_t scale,
                                                dnnjit_tensor_t bias, const dnnjit_norm_attr_t *attr,
                                                dnnjit_tensor_t *y, dnnjit_tensor_t *inv_variance);

/* Backward passes from the saved statistics. dbias is made only when asked for
 * (dbias non-NULL); for layernorm it always may be. The phase field is ignored. */
DNNJIT_API dnnjit_status_t dnnjit_graph_layernorm_backward(dnnjit_graph_t graph, dnnjit_tensor_t dy,
                                                           dnnjit_tensor_t x, dnnjit_tensor_t scale,
                                                           dnnjit_tensor_t mean, dnnjit_tensor_t inv_variance,
                                                           const dnnjit_norm_attr_t *attr, dnnjit_tensor_t *dx,
                                                           dnnjit_tensor_t *dscale, dnnjit_tensor_t *dbias);
DNNJIT_API dnnjit_status_t dnnjit_graph_rmsnorm_backward(dnnjit_graph_t graph, dnnjit_tensor_t dy,
                                                         dnnjit_tensor_t x, dnnjit_tensor_t scale,
                                                         dnnjit_tensor_t inv_variance, const dnnjit_norm_attr_t *attr,
                                                         dnnjit_tensor_t *dx, dnnjit_tensor_t *dscale,
                                                         dnnjit_tensor_t *dbias);

/* Scaled dot-product attention. Q [b, h_q, s_q, d], K [b, h_k, s_kv, d],
 * V [b, h_v, s_kv, d_v] with h_q a multiple of h_k and of h_v (grouped-query attention).
 * O [b, h_q, s_q, d_v] is packed in Q's stride order; Stats [b, h_q, s_q, 1] (FLOAT) is the
 * log-sum-exp of each row of scores, made when generate_stats is set.
 *   O = softmax(scale * Q K^T [masked]) V
 * The causal mask keeps key j for query i when j <= i + (s_kv - s_q) (bottom-right
 * alignment, so s_q = s_kv is the usual lower triangle). */
typedef struct dnnjit_sdpa_attr {
    const char *name;
    dnnjit_data_type_t compute_data_type;
    bool has_attn_scale;     /* false: 1/sqrt(d) */
    double attn_scale;
    bool use_causal_mask;
    bool generate_stats;
} dnnjit_sdpa_attr_t;

DNNJIT_API dnnjit_status_t dnnjit_graph_sdpa(dnnjit_graph_t graph, dnnjit_tensor_t q, dnnjit_tensor_t k,
                                             dnnjit_tensor_t v, const dnnjit_sdpa_attr_t *attr,
                                             dnnjit_tensor_t *o, dnnjit_tensor_t *stats);

/* ------------------------------------------------------------------------------------ */
/* Validation, JSON and the reference executor                                          */
/* ------------------------------------------------------------------------------------ */

/* Checks the whole graph: ranks, dims and strides of every tensor, every op's shapes and
 * types, unique names and uids, every virtual tensor produced once and consumed, no cycle.
 * Re-infers op outputs' shapes, resolves data types from the graph's defaults and assigns
 * the missing uids. Errors: INVALID_GRAPH with a message such as
 *   matmul "mm": A.dim[2]=128 but B.dim[1]=64 (K must match)
 * Modifying the graph afterwards is allowed and makes it need validation again. */
DNNJIT_API dnnjit_status_t dnnjit_graph_validate(dnnjit_graph_t graph);

/* The graph as JSON text (schema: docs/graph-json.md), validated first so that every
 * resolved field is written. *json is the caller's, freed with dnnjit_free. */
DNNJIT_API dnnjit_status_t dnnjit_graph_to_json(dnnjit_graph_t graph, char **json);

/* Builds a graph from JSON text. Errors: PARSE_ERROR (with line and column), INVALID_GRAPH
 * (a well-formed document describing a bad graph: the message names the node or tensor).
 * handle may be NULL. On failure *out is left NULL. */
DNNJIT_API dnnjit_status_t dnnjit_graph_from_json(dnnjit_handle_t handle, const char *json, dnnjit_graph_t *out);

/* A buffer for one tensor: its uid and a pointer. */
typedef struct dnnjit_variant {
    int64_t uid;
    void *ptr;
} dnnjit_variant_t;

/* Runs the graph on the CPU in float64: the definition of every op. Each non-virtual
 * tensor's buffer is host memory holding elements of the tensor's data type at the
 * tensor's strides; pass-by-value tensors without a fixed value point to one element.
 * Validates the graph first. Virtual tensors live in memory the call allocates and frees.
 * Errors: INVALID_GRAPH, BAD_PARAM (pack NULL with n > 0, an unknown or duplicate uid, a
 * missing buffer: the message names the tensor), OUT_OF_MEMORY. */
DNNJIT_API dnnjit_status_t dnnjit_graph_execute_reference(dnnjit_graph_t graph, const dnnjit_variant_t *pack,
                                                          size_t n);

/* ------------------------------------------------------------------------------------ */
/* Just-in-time plans, build and execution                                               */
/* ------------------------------------------------------------------------------------ */
/*
 * The JIT path: build_operation_graph (validate and split the graph into fusable groups),
 * create_execution_plans (ask the heuristics for a ranked list of plans; a plan names one
 * engine and its knob settings for each group), check_support, build_plans (generate CUDA
 * source for the exact shapes, compile it with NVRTC for the handle's architecture, cache
 * the CUBIN in memory and on disk, and load it when a GPU is present), then execute.
 * dnnjit_graph_build does all of them. A graph whose handle names an architecture but has
 * no GPU (dnnjit_handle_create_for_arch) does everything but execute.
 */

/* Creates a handle for a named architecture ("sm_90a", "sm_80", ...) without needing a
 * GPU: graphs made with it validate, plan, generate and compile, but cannot execute.
 * Errors: BAD_PARAM (a malformed architecture), OUT_OF_MEMORY. */
DNNJIT_API dnnjit_status_t dnnjit_handle_create_for_arch(const char *arch, dnnjit_handle_t *out);

/* The architecture kernels are compiled for: the device's (found by dnnjit_handle_create
 * when a driver and a GPU are present) or the named one; "" when neither. `size` bytes at
 * `arch` receive it. *has_device (may be NULL) says whether the handle can execute. */
DNNJIT_API dnnjit_status_t dnnjit_handle_get_arch(dnnjit_handle_t handle, char *arch, size_t size, bool *has_device);

typedef enum dnnjit_heur_mode {
    DNNJIT_HEUR_MODE_A = 0,        /* fast rules: the specialised engines first */
    DNNJIT_HEUR_MODE_B = 1,        /* a cost model ranks every supported plan */
    DNNJIT_HEUR_MODE_FALLBACK = 2  /* the simplest correct engine, for any valid graph */
} dnnjit_heur_mode_t;

typedef enum dnnjit_build_plan_policy {
    DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE = 0, /* build the first plan that builds */
    DNNJIT_BUILD_PLAN_ALL = 1                /* build every plan (for autotuning) */
} dnnjit_build_plan_policy_t;

/* Behavior notes of a plan, as bits. Every dnnjit plan compiles at run time. */
#define DNNJIT_BEHAVIOR_NOTE_RUNTIME_COMPILATION (1u << 0)
/* The plan computes in less precision than the graph asks for: FLOAT matmul inputs are
 * rounded to TF32 (10-bit mantissa) before one tensor-core product. Plans without this note
 * keep about FLOAT accuracy; mode A lists them all before any plan with it (the fallback
 * engine's last), so its first plan never has it. */
#define DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION (1u << 1)
/* The plan's results can differ in their last bits from one run to the next on the same
 * inputs (a sum whose split among blocks depends on the order the GPU runs them). Only the
 * rows engine's norm backward plans named ..._c8_tickets have it: their clusters take rows
 * as they are ready for them, which makes wide rows a few percent faster but changes the
 * rows each partial DSCALE and DBIAS sum covers. Every other plan combines its partial
 * results in a fixed order and gives the same bits every run on the same device. (The
 * other cluster plans, names ending in _c2, _c4 or _c8, split rows among as many clusters
 * as the device holds at once, so their DSCALE and DBIAS may differ in the last bits
 * between devices that hold different numbers.) Mode A lists plans with this note after
 * every plan without it. A caller who needs the same bits every run skips them
 * (dnnjit_graph_get_plan_behavior_notes). */
#define DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC (1u << 2)

/* Validates the graph and partitions it into groups; afterwards the graph can no longer
 * be modified (BAD_STATE). Errors: as dnnjit_graph_validate. */
DNNJIT_API dnnjit_status_t dnnjit_graph_build_operation_graph(dnnjit_graph_t graph);

/* Makes the ranked plan list for the given heuristic modes (in order, duplicates
 * dropped). Calls build_operation_graph first if needed. Errors: NOT_SUPPORTED when no
 * engine supports some group (the message names it and says why). */
DNNJIT_API dnnjit_status_t dnnjit_graph_create_execution_plans(dnnjit_graph_t graph, const dnnjit_heur_mode_t *modes,
                                                               int mode_count);

/* Succeeds when at least one plan exists. */
DNNJIT_API dnnjit_status_t dnnjit_graph_check_support(dnnjit_graph_t graph);

/* Removes from the plan list every plan that has any of `notes` (DNNJIT_BEHAVIOR_NOTE_*
 * bits), keeping the others in their order: e.g. NONDETERMINISTIC for a caller who needs
 * the same bits every run, also from dnnjit_graph_autotune, which times every plan. Call it
 * between create_execution_plans and build_plans. One graph, one thread at a time.
 * Errors: BAD_PARAM (graph NULL, or a bit no note has), BAD_STATE (no plans yet, or plans
 * already built), NOT_SUPPORTED (every plan has one of the notes: the list is left as it
 * was). */
DNNJIT_API dnnjit_status_t dnnjit_graph_deselect_behavior_notes(dnnjit_graph_t graph, uint32_t notes);

/* Generates, compiles (through the kernel cache) and, with a GPU, loads plans. The graph
 * needs a handle with an architecture. HEURISTICS_CHOICE makes the first plan that builds
 * the chosen one; ALL builds every plan and chooses the first. ALL compiles the plans'
 * kernels on several threads at once (NVRTC takes 0.1 to 0.6 s a kernel): one per online
 * CPU, or DNNJIT_COMPILE_THREADS (1 to 64) of them; the call returns when all are built.
 * When the graph has no chosen plan yet and dnnjit_graph_autotune remembered a choice for
 * this graph on this device (see there) that is in the list and builds, both policies
 * choose that one. One graph, one thread at a time.
 * Errors: BAD_PARAM (ALL with DNNJIT_COMPILE_THREADS set to anything but a whole number
 * from 1 to 64), BAD_STATE (no plans yet, or no handle / architecture), NOT_SUPPORTED
 * (NVRTC missing), COMPILE_ERROR (no plan compiled: the message carries NVRTC's log),
 * CUDA_ERROR (a kernel could not be loaded). */
DNNJIT_API dnnjit_status_t dnnjit_graph_build_plans(dnnjit_graph_t graph, dnnjit_build_plan_policy_t policy);

/* Builds plan `index` alone and makes it the chosen one. */
DNNJIT_API dnnjit_status_t dnnjit_graph_build_plan_at_index(dnnjit_graph_t graph, int64_t index);

/* build_operation_graph + create_execution_plans + check_support + build_plans
 * (HEURISTICS_CHOICE). */
DNNJIT_API dnnjit_status_t dnnjit_graph_build(dnnjit_graph_t graph, const dnnjit_heur_mode_t *modes, int mode_count);

/* The plan list: its length, each plan's name (e.g. "pointwise_b256_vec"; a graph of
 * several groups joins its groups' choices with '+'; *name is the caller's, freed with
 * dnnjit_free) and behavior notes. The chosen plan's index, or -1 before one is built. */
DNNJIT_API dnnjit_status_t dnnjit_graph_get_plan_count(dnnjit_graph_t graph, int64_t *count);
DNNJIT_API dnnjit_status_t dnnjit_graph_get_plan_name(dnnjit_graph_t graph, int64_t index, char **name);
DNNJIT_API dnnjit_status_t dnnjit_graph_get_plan_behavior_notes(dnnjit_graph_t graph, int64_t index, uint32_t *notes);
DNNJIT_API dnnjit_status_t dnnjit_graph_get_chosen_plan(dnnjit_graph_t graph, int64_t *index);

/* The CUDA source plan `index` generates: every group's kernel, one after another, each
 * preceded by a comment naming it. *source is the caller's, freed with dnnjit_free. */
DNNJIT_API dnnjit_status_t dnnjit_graph_get_plan_source(dnnjit_graph_t graph, int64_t index, char **source);

/* Bytes of device workspace execute needs (intermediates that cross kernels, and what the
 * chosen plan's kernels need for themselves: split-K partial sums, or the copies a
 * gemm_sm90 plan makes of operands whose strides TMA cannot read), available once the
 * graph is partitioned; ask again after building or choosing a plan. */
DNNJIT_API dnnjit_status_t dnnjit_graph_get_workspace_size(dnnjit_graph_t graph, int64_t *size);

/* Runs the chosen plan on `stream` (a CUstream; NULL for the default stream). Every
 * non-virtual tensor needs a device buffer in the pack, aligned to its element size
 * (16 bytes for the operands gemm_sm90 plans load with TMA in place, those whose strides
 * are multiples of 16 bytes);
 * pass-by-value tensors without a fixed value point to one host element. `workspace` is
 * device memory of at least get_workspace_size bytes, aligned to 16 bytes (NULL when that
 * is 0). Allocates nothing, can be captured in a CUDA graph (any capture mode), and does
 * not synchronize.
 * Pass-by-value elements are read during the call, so a captured graph replays with the
 * values they had at capture; buffers are read by the kernels, so replays see their
 * current contents. Work on the stream keeps its order: on sm_90 and later each kernel is
 * launched as a programmatic dependent launch, whose blocks may be scheduled while the
 * kernel before it finishes but wait for it to complete before touching memory (about 1.6
 * us less per kernel between back-to-back executes on the H200). Errors: BAD_STATE
 * (no built plan, or no GPU), BAD_PARAM (a missing, unknown, duplicate, NULL, misaligned
 * or host pointer: the message names the tensor; a missing or misaligned workspace),
 * CUDA_ERROR (a launch failed: the message names the kernel and the driver's error). Without a GPU the pack's entries
 * (unknown, duplicate, NULL, misaligned) and the workspace are still checked before
 * BAD_STATE is returned. */
DNNJIT_API dnnjit_status_t dnnjit_graph_execute(dnnjit_graph_t graph, const dnnjit_variant_t *pack, size_t n,
                                                void *workspace, void *stream);

/* Times every built plan (building all supported plans first if only one or none is built) on the caller's
 * buffers and stream, picks the fastest and makes it the chosen plan. The choice is remembered on disk,
 * keyed by the graph and the device, and later builds of the same graph on the same device choose it.
 *
 * The arguments are execute's. The workspace is taken to be as large as get_workspace_size
 * said before the call: plans that need more (a larger split-K scratch) are not timed. Each
 * plan runs a few times to warm up; its time is then the median of several batches (7, or
 * DNNJIT_AUTOTUNE_REPEATS from 1 to 1000) of ten back-to-back executes between two CUDA
 * events on `stream`. The call waits for them, so it
 * must not be captured in a CUDA graph. The outputs end up holding what the last plan timed
 * wrote (every plan computes the same result). One graph, one thread at a time, as execute.
 *
 * The key is the graph's JSON (dnnjit_graph_to_json, names included), the handle's
 * architecture and device name, and the dnnjit version; the record is a small file in the
 * kernel cache's folder (under "autotune/"), so DNNJIT_CACHE=0 keeps the choice in this
 * graph only. A choice that cannot be written is not an error.
 *
 * Errors: BAD_PARAM (graph NULL, DNNJIT_AUTOTUNE_REPEATS not a whole number from 1 to 1000,
 * or no built plan fits the workspace), BAD_STATE (no plans
 * yet, or no GPU), those of build_plans, and those of execute (the message names the failing
 * kernel). On failure the chosen plan is the one chosen before. */
DNNJIT_API dnnjit_status_t dnnjit_graph_autotune(dnnjit_graph_t graph, const dnnjit_variant_t *pack, size_t n,
                                                 void *workspace, void *stream);

/* ------------------------------------------------------------------------------------ */
/* Serialization                                                                         */
/* ------------------------------------------------------------------------------------ */
/*
 * A built graph can be saved as one binary blob (layout: docs/serialize.md) holding its
 * JSON, its chosen plan and the CUBIN of every kernel of that plan, and rebuilt from it
 * later, in this process or another, ready to execute without compiling anything. The
 * CUBINs only run on the architecture they were compiled for, and a blob is only read by
 * the dnnjit version that wrote it. Both work without a GPU (deviceless handles).
 */

/* Serializes a built graph: its JSON, the chosen plan and the CUBIN of every kernel. *blob is
 * allocated by the library; free it with dnnjit_free. The graph is only read (one thread
 * at a time, as for every call on a graph). Errors: BAD_PARAM (a NULL argument),
 * BAD_STATE (no plan built yet: call build first), OUT_OF_MEMORY. On failure *blob is
 * NULL and *size 0. */
DNNJIT_API dnnjit_status_t dnnjit_graph_serialize(dnnjit_graph_t graph, void **blob, size_t *size);

/* Rebuilds a graph from a blob made by dnnjit_graph_serialize, ready to execute (no NVRTC needed).
 * The blob is untrusted: every field is checked before use. The new graph belongs to the
 * caller (dnnjit_graph_destroy) and uses `handle`, whose architecture must be the one the
 * blob was compiled for. Its plan list holds one plan, the blob's, built and chosen (index
 * 0); plan name, source, behavior notes and workspace size read as on the original graph.
 * With a GPU the kernels are loaded at once; a handle may be used by several threads
 * deserializing at the same time. The blob is not kept: the caller may free it on return.
 * Errors: BAD_PARAM (handle, out or, with size > 0, blob NULL), PARSE_ERROR (not a blob,
 * truncated, damaged: a checksum mismatch, or a field that is out of bounds or names a
 * tensor, engine or knob the rebuilt graph lacks; the message names the field),
 * NOT_SUPPORTED (another blob format, another dnnjit version, or an architecture other
 * than the handle's: the message names both), INVALID_GRAPH (the blob's JSON describes a
 * bad graph), CUDA_ERROR (a kernel could not be loaded), OUT_OF_MEMORY. On failure *out
 * is NULL. */
DNNJIT_API dnnjit_status_t dnnjit_graph_deserialize(dnnjit_handle_t handle, const void *blob, size_t size,
                                                    dnnjit_graph_t *out);

/* ------------------------------------------------------------------------------------ */
/* Element conversions (exposed for tests and tools)                                     */
/* ------------------------------------------------------------------------------------ */

/* Reads element `index` of a buffer of the given type as a double, and writes one
 * (rounding to nearest even, saturating FP8 E4M3 to ±448, integers rounded and clamped,
 * BOOLEAN as 0/1). A NULL buffer or an unknown type reads as NaN and is not written. */
DNNJIT_API double dnnjit_element_load(dnnjit_data_type_t type, const void *buffer, int64_t index);
DNNJIT_API void dnnjit_element_store(dnnjit_data_type_t type, void *buffer, int64_t index, double value);

#ifdef __cplusplus
}
#endif
#endif /* DNNJIT_H */
