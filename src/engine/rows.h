/* The rows engine (rows.c: knobs, support, cost, kernel assembly; rows_emit.c: the CUDA
 * that addresses the group's tensors and evaluates its prologue and epilogue). A row group
 * is one row op (see dnnjit__row_geometry) with pointwise nodes before and after it; the
 * kernel templates are src/kernels/rows_*.cuh. */
#ifndef DNNJIT_ENGINE_ROWS_H
#define DNNJIT_ENGINE_ROWS_H

#include "common/strbuf.h"
#include "engine/engine.h"

/* How a tensor's columns are addressed within a row. */
typedef enum dnnjit__rows_access {
    DNNJIT__ROWS_CONTIG,   /* element (row, col) at row offset + col */
    DNNJIT__ROWS_ROWCONST, /* one value per row (broadcast along the row) */
    DNNJIT__ROWS_GENERAL,  /* any other strides: the column splits into the inner axes */
} dnnjit__rows_access_t;

/* A tensor as seen from the row space (it broadcasts into the row tensors' dims, right-
 * aligned): offset(row, col) = the sum over the outer axes of the row's coordinates times
 * their strides, plus the same over the inner axes for the column. Axes of one element are
 * dropped, neighbours that address memory as one axis merged, broadcast axes have stride 0. */
typedef struct dnnjit__rows_view {
    int outer_count, inner_count;
    int64_t outer_dim[DNNJIT_MAX_DIMS], outer_stride[DNNJIT_MAX_DIMS];
    int64_t inner_dim[DNNJIT_MAX_DIMS], inner_stride[DNNJIT_MAX_DIMS];
    dnnjit__rows_access_t access;
} dnnjit__rows_view_t;

/* What the engine needs to know about a row group, whatever the knob. */
typedef struct dnnjit__rows_problem {
    dnnjit_graph_t g;
    const dnnjit__group_t *grp;
    const dnnjit__node_t *op;
    int64_t op_pos; /* the row op's position in grp->nodes */
    dnnjit__row_geometry_t geo;
    int elem;          /* bytes per element of the narrowest row tensor in memory (16: none) */
    int vec;           /* elements per vector access (16 bytes of the narrowest row tensor); 1: none */
    int kept_inputs;   /* full inputs the op reads in more than one pass (0: one pass) */
    int kept_size[2];  /* bytes per element each keeps in registers (see dnnjit__rows_kept_type) */
    int passes;        /* passes over the full inputs */
    bool column_role;  /* norm backward with DSCALE or DBIAS to sum over the rows */
    int strip;         /* columns per block of the per-column work */
    int64_t segments;  /* blocks per strip, each summing seg_rows rows (their sums meet in */
    int64_t seg_rows;  /* the kernel's scratch when there are several) */
} dnnjit__rows_problem_t;

/* Describes a row group; false when the group is not one. */
bool dnnjit__rows_problem(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit__rows_problem_t *pb);

dnnjit__rows_view_t dnnjit__rows_view(const dnnjit__rows_problem_t *pb, const dnnjit__tensor_t *t);

/* Whether a view allows whole vectors of `vec` elements at every chunk of every row. */
bool dnnjit__rows_vector_view(const dnnjit__rows_problem_t *pb, const dnnjit__rows_view_t *v, int vec);

/* The type the register cache keeps a full input's values in: its own when it is a
 * 16-bit float that holds rounded values (read from memory, or written by the group),
 * FLOAT otherwise. */
dnnjit_data_type_t dnnjit__rows_kept_type(const dnnjit__rows_problem_t *pb, dnnjit_tensor_t id);

/* Whether a tensor is one the group writes to memory. */
bool dnnjit__rows_writes(const dnnjit__group_t *grp, dnnjit_tensor_t id);

/* Appends dj_aligned(args), the accessors of the tensors kernel k touches and the port
 * functions of the problem's op (see src/kernels/rows_common.cuh) for vectors of `vec`
 * elements. False on out of memory. */
bool dnnjit__rows_emit(dnnjit__strbuf_t *sb, const dnnjit__rows_problem_t *pb, const dnnjit__kernel_t *k, int vec);

#endif
