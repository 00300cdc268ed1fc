/* Partitioning a validated graph into groups that each become one kernel. */
#ifndef DNNJIT_FUSION_FUSION_H
#define DNNJIT_FUSION_FUSION_H

#include "graph/graph.h"

typedef enum dnnjit__group_kind {
    DNNJIT__GROUP_GEMM,      /* [pointwise prologue DAG on A and/or B] -> matmul -> [pointwise epilogue DAG] */
    DNNJIT__GROUP_POINTWISE, /* a pointwise DAG over one output shape */
    DNNJIT__GROUP_SINGLE,    /* any other node on its own */
    DNNJIT__GROUP_ROW,       /* [pointwise prologue]* -> row op -> [pointwise epilogue]* */
} dnnjit__group_kind_t;

typedef struct dnnjit__group {
    dnnjit__group_kind_t kind;
    int64_t first_node;  /* the anchor: the matmul of a GEMM group, the row op of a ROW group, the first node otherwise */
    int64_t node_count;  /* nodes of the group, in graph (topological) order: */
    int64_t *nodes;      /* indices into graph->nodes */
    int64_t input_count; /* tensors the group reads that it does not produce */
    dnnjit_tensor_t *inputs;
    int64_t output_count; /* tensors the group writes to memory: non-virtual ones, and */
    dnnjit_tensor_t *outputs; /* virtual ones a later group reads (kept in the workspace) */
} dnnjit__group_t;

/* The most workspace the intermediates between kernels may take: far past any device's
 * memory, and half of int64's range, so that a kernel's scratch placed after them cannot
 * overflow the total. */
#define DNNJIT__MAX_WORKSPACE ((int64_t)1 << 62)

typedef struct dnnjit__partition {
    int64_t group_count;
    dnnjit__group_t *groups;
    /* Virtual tensors that cross groups live in the workspace at these byte offsets
     * (aligned to 256 bytes), indexed by tensor id - 1; -1 for every other tensor. */
    int64_t *workspace_offset;
    int64_t workspace_size;
} dnnjit__partition_t;

/* Splits a validated graph into groups, runnable in order. Every node lands in exactly
 * one group. Errors: OUT_OF_MEMORY, BAD_STATE (graph not validated). */
dnnjit_status_t dnnjit__partition(dnnjit_graph_t g, dnnjit__partition_t *out);
void dnnjit__partition_free(dnnjit__partition_t *p);

/* The input slot of matmul `mm` (0: A, 1: B) whose prologue node `node` belongs to. The
 * nodes of a GEMM group that come before its matmul (the group's first_node) are exactly
 * its prologue nodes; for any other node the answer means nothing (-1 when node does not
 * come before mm). */
int dnnjit__prologue_slot(dnnjit_graph_t g, int64_t mm, int64_t node);

/* ---- row ops ---- */

/* A row op sees its row tensors (the "full" ones, such as X, P, Y, DY, DX) as `rows` rows
 * of `cols` elements: the axes in inner_mask (bit i = axis i of `dim`) make up a row, the
 * others enumerate the rows, each set in row-major order. The inner axes come after the
 * outer ones (axes of size 1 aside), so that a row is the innermost part of the tensor.
 * A reduction over the outer axes (a bias gradient: the sum of dY over the batch) has its
 * kept axes as the row and `columns` set: each column of the row space is one element of
 * Y, reduced over the rows. */
typedef struct dnnjit__row_geometry {
    int ndim;
    int64_t dim[DNNJIT_MAX_DIMS];
    uint32_t inner_mask;
    int64_t rows, cols;
    bool columns;
} dnnjit__row_geometry_t;

/* Fills *geo and returns true when node n is a row op: softmax, layer or RMS norm (either
 * direction), or a reduction whose reduced axes are the innermost ones or the outermost
 * ones. */
bool dnnjit__row_geometry(dnnjit_graph_t g, const dnnjit__node_t *n, dnnjit__row_geometry_t *geo);

/* Whether input `slot` of a row op is a full row tensor (one value per element of the
 * row space), which a pointwise prologue may compute. */
bool dnnjit__row_full_input(dnnjit_op_t op, int slot);

/* Whether a row op may take a pointwise prologue and epilogue into its group: the engine
 * that runs such groups computes in float, so DOUBLE compute keeps the op alone. */
bool dnnjit__row_fusable(dnnjit_graph_t g, const dnnjit__node_t *n);

#endif
