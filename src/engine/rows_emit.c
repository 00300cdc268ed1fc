/* The CUDA the rows engine writes for one group besides its templates: how the row space
 * addresses each tensor, the accessors of the tensors the kernel touches, and the port
 * functions the op's template calls, with the group's pointwise prologue evaluated where a
 * full input is read and its epilogue where the row op's main output is produced. */
#include "engine/rows.h"

#include "codegen/codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the problem ---------------------------------------------------------------- */

dnnjit__rows_view_t dnnjit__rows_view(const dnnjit__rows_problem_t *pb, const dnnjit__tensor_t *t)
{
    const dnnjit__row_geometry_t *geo = &pb->geo;
    dnnjit__rows_view_t v = {0};
    for (int a = 0; a < geo->ndim; a++) {
        int ta = a - (geo->ndim - t->ndim);
        int64_t stride = ta >= 0 && t->dim[ta] != 1 ? t->stride[ta] : 0, dim = geo->dim[a];
        if (dim == 1)
            continue;
        bool inner = geo->inner_mask >> a & 1;
        int *count = inner ? &v.inner_count : &v.outer_count;
        int64_t *dims = inner ? v.inner_dim : v.outer_dim, *strides = inner ? v.inner_stride : v.outer_stride;
        if (*count > 0 && strides[*count - 1] == stride * dim) {
            dims[*count - 1] *= dim;
            strides[*count - 1] = stride;
        } else {
            dims[*count] = dim;
            strides[*count] = stride;
            (*count)++;
        }
    }
    bool moves = false;
    for (int i = 0; i < v.inner_count; i++)
        moves |= v.inner_stride[i] != 0;
    v.access = !moves                                         ? DNNJIT__ROWS_ROWCONST
               : v.inner_count == 1 && v.inner_stride[0] == 1 ? DNNJIT__ROWS_CONTIG
                                                              : DNNJIT__ROWS_GENERAL;
    return v;
}

bool dnnjit__rows_vector_view(const dnnjit__rows_problem_t *pb, const dnnjit__rows_view_t *v, int vec)
{
    if (v->access != DNNJIT__ROWS_CONTIG || vec < 2 || pb->geo.cols % vec)
        return false;
    for (int i = 0; i < v->outer_count; i++)
        if (v->outer_stride[i] % vec)
            return false;
    return true;
}

bool dnnjit__rows_writes(const dnnjit__group_t *grp, dnnjit_tensor_t id)
{
    return id && dnnjit__slot_of(grp->outputs, (int)grp->output_count, id) >= 0;
}

/* Tensors with memory behind them (not pass-by-value scalars). */
static const dnnjit__tensor_t *memory_tensor(const dnnjit__rows_problem_t *pb, int64_t i)
{
    const dnnjit__tensor_t *t = dnnjit__tensor(pb->g, dnnjit__group_tensor(pb->grp, i));
    return t->is_pass_by_value ? NULL : t;
}

/* 16 bytes of the narrowest tensor read or written along the row, when the row length and
 * at least one such tensor's row starts allow whole vectors; else 1. Sets pb->elem. */
static int vector_width(dnnjit__rows_problem_t *pb)
{
    size_t narrowest = 16;
    int64_t n = pb->grp->input_count + pb->grp->output_count;
    for (int64_t i = 0; i < n; i++) {
        const dnnjit__tensor_t *t = memory_tensor(pb, i);
        if (t && dnnjit__rows_view(pb, t).access == DNNJIT__ROWS_CONTIG) {
            size_t size = dnnjit_data_type_size(t->resolved_type);
            narrowest = size < narrowest ? size : narrowest;
        }
    }
    pb->elem = (int)narrowest;
    int vec = (int)(16 / narrowest);
    for (int64_t i = 0; i < n; i++) {
        const dnnjit__tensor_t *t = memory_tensor(pb, i);
        if (t) {
            dnnjit__rows_view_t v = dnnjit__rows_view(pb, t);
            if (dnnjit__rows_vector_view(pb, &v, vec))
                return vec;
        }
    }
    return 1;
}

dnnjit_data_type_t dnnjit__rows_kept_type(const dnnjit__rows_problem_t *pb, dnnjit_tensor_t id)
{
    const dnnjit__tensor_t *t = dnnjit__tensor(pb->g, id);
    bool rounded = !t->is_virtual || dnnjit__slot_of(pb->grp->inputs, (int)pb->grp->input_count, id) >= 0;
    bool half = t->resolved_type == DNNJIT_DATA_TYPE_HALF || t->resolved_type == DNNJIT_DATA_TYPE_BFLOAT16;
    return rounded && half ? t->resolved_type : DNNJIT_DATA_TYPE_FLOAT;
}

bool dnnjit__rows_problem(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit__rows_problem_t *pb)
{
    if (grp->kind != DNNJIT__GROUP_ROW)
        return false;
    *pb = (dnnjit__rows_problem_t){.g = g, .grp = grp, .op = &g->nodes[grp->first_node]};
    if (!dnnjit__row_geometry(g, pb->op, &pb->geo))
        return false;
    while (grp->nodes[pb->op_pos] != grp->first_node)
        pb->op_pos++;
    /* Backward ops make a pass for the row sums and one for the outputs. */
    pb->passes = pb->op->op == DNNJIT_OP_REDUCTION  ? 1
                 : pb->op->op == DNNJIT_OP_SOFTMAX || pb->op->op == DNNJIT_OP_LAYERNORM ? 3
                                                                                         : 2;
    for (int s = 0; pb->passes > 1 && s < DNNJIT__MAX_INPUTS; s++)
        if (dnnjit__row_full_input(pb->op->op, s))
            pb->kept_size[pb->kept_inputs++] =
                (int)dnnjit_data_type_size(dnnjit__rows_kept_type(pb, pb->op->in[s]));
    bool backward_norm = pb->op->op == DNNJIT_OP_LAYERNORM_BACKWARD || pb->op->op == DNNJIT_OP_RMSNORM_BACKWARD;
    pb->column_role = backward_norm && (dnnjit__rows_writes(grp, pb->op->out[1]) ||
                                        dnnjit__rows_writes(grp, pb->op->out[2]));
    pb->vec = vector_width(pb);
    /* A strip is at least one vector, and up to 128 bytes (a cache line: sectors that one
     * warp access fetches together, kinder to DRAM than single sectors 32 bytes apart in
     * every row) of each row of DY as long as the one-element path's threads across the
     * strip stay within a warp (32 columns). Strips split into segments of rows until the
     * column blocks cover an H200 (132 SMs) twice, each segment at least 64 rows, at most
     * 64 segments. */
    int line = (int)(128 / dnnjit_data_type_size(dnnjit__tensor(g, pb->op->in[0])->resolved_type));
    line = line < 32 ? line : 32;
    pb->strip = pb->vec > line ? pb->vec : line;
    int64_t strips = (pb->geo.cols + pb->strip - 1) / pb->strip, rows = pb->geo.rows;
    int64_t segments = (2 * 132 + strips - 1) / strips, most = (rows + 63) / 64;
    segments = segments < most ? segments : most;
    segments = segments < 64 ? segments : 64;
    pb->seg_rows = (rows + segments - 1) / segments;
    pb->segments = (rows + pb->seg_rows - 1) / pb->seg_rows;
    return true;
}

/* ---- emission context ------------------------------------------------------------- */

enum { NEED_LD = 1, NEED_ST = 2, NEED_LDR = 4, NEED_STR = 8, NEED_PF = 16 };

typedef struct emit {
    const dnnjit__rows_problem_t *pb;
    const dnnjit__kernel_t *k;
    int vec;
    dnnjit__strbuf_t ports; /* port functions, placed after the accessors they call */
    unsigned char *need;    /* per tensor id: the accessors the ports call */
    bool *stored;           /* per group node: its output already has a store */
    bool *eval;             /* per group node: evaluated by the function being emitted */
} emit_t;

static const dnnjit__tensor_t *tensor_of(const emit_t *e, dnnjit_tensor_t id)
{
    return dnnjit__tensor(e->pb->g, id);
}

static int slot_of(const emit_t *e, dnnjit_tensor_t id)
{
    return dnnjit__slot_of(e->k->tensors, e->k->tensor_count, id);
}

/* The position in the group of the node that makes `id`, or -1. */
static int64_t producer_pos(const emit_t *e, dnnjit_tensor_t id)
{
    const dnnjit__tensor_t *t = tensor_of(e, id);
    for (int64_t i = 0; t && t->producer >= 0 && i < e->pb->grp->node_count; i++)
        if (e->pb->grp->nodes[i] == t->producer)
            return i;
    return -1;
}

static const dnnjit__node_t *node_at(const emit_t *e, int64_t pos)
{
    return &e->pb->g->nodes[e->pb->grp->nodes[pos]];
}

/* ---- accessors ------------------------------------------------------------------- */

/* dj_i64 <name>(dj_i64 i): the offset of index i over axes (dims, strides), peeled from the
 * innermost axis out. */
static void emit_offset_fn(dnnjit__strbuf_t *sb, const char *name, dnnjit_tensor_t id, int count, const int64_t *dim,
                           const int64_t *stride)
{
    bool moves = false;
    for (int a = 0; a < count; a++)
        moves |= stride[a] != 0;
    if (!moves) {
        dnnjit__sb_printf(sb, "__device__ __forceinline__ dj_i64 %s_%u(dj_i64) { return 0; }\n", name, id);
        return;
    }
    dnnjit__sb_printf(sb, "__device__ __forceinline__ dj_i64 %s_%u(dj_i64 i)\n{\n    dj_i64 off = 0;\n", name, id);
    for (int a = count - 1; a > 0; a--) {
        if (stride[a])
            dnnjit__sb_printf(sb, "    off += i %% %lldLL * %lldLL;\n", (long long)dim[a], (long long)stride[a]);
        dnnjit__sb_printf(sb, "    i /= %lldLL;\n", (long long)dim[a]);
    }
    if (stride[0])
        dnnjit__sb_printf(sb, "    off += i * %lldLL;\n", (long long)stride[0]);
    dnnjit__sb_append(sb, "    return off;\n}\n");
}

/* The value of a pass-by-value tensor. */
static void emit_scalar(dnnjit__strbuf_t *sb, const emit_t *e, dnnjit_tensor_t id)
{
    dnnjit__emit_scalar(sb, tensor_of(e, id), dnnjit__slot_of(e->k->scalars, e->k->scalar_count, id));
}

/* The V-element load (or store) of tensor id at (row, col .. col + V - 1). */
static void emit_vector_access(dnnjit__strbuf_t *sb, const emit_t *e, dnnjit_tensor_t id, bool store)
{
    const dnnjit__tensor_t *t = tensor_of(e, id);
    /* A load reads a const tensor into v; a store writes const v into the tensor. */
    const char *type = dnnjit__cuda_type(t->resolved_type), *cq = store ? "" : "const ";
    dnnjit__sb_printf(sb,
                      "template <int V> __device__ __forceinline__ void dj_%s_%u(dj_i64 row, int col, %sfloat (&v)[V], "
                      "const DjArgs &args)\n{\n",
                      store ? "st" : "ld", id, store ? "const " : "");
    if (t->is_pass_by_value) {
        dnnjit__sb_append(sb, "    (void)row;\n    (void)col;\n    (void)args;\n    const float s = ");
        emit_scalar(sb, e, id);
        dnnjit__sb_append(sb, ";\n#pragma unroll\n    for (int e = 0; e < V; e++)\n        v[e] = s;\n}\n\n");
        return;
    }
    dnnjit__rows_view_t view = dnnjit__rows_view(e->pb, t);
    dnnjit__sb_printf(sb, "    %s%s *p = (%s%s *)args.ptr[%d] + dj_roff_%u(row);\n", cq, type, cq, type, slot_of(e, id),
                      id);
    if (dnnjit__rows_vector_view(e->pb, &view, e->vec)) {
        if (store)
            dnnjit__sb_printf(sb, "    dj_store<%s, V>(p + col, v);\n}\n\n", type);
        else
            dnnjit__sb_printf(sb, "    dj_load<%s, V>(p + col, v);\n}\n\n", type);
        return;
    }
    const char *at = view.access == DNNJIT__ROWS_CONTIG    ? "col + e"
                     : view.access == DNNJIT__ROWS_ROWCONST ? "0"
                                                             : NULL;
    char general[48];
    if (!at) {
        snprintf(general, sizeof general, "dj_coff_%u(col + e)", id);
        at = general;
    }
    if (view.access == DNNJIT__ROWS_ROWCONST)
        dnnjit__sb_append(sb, "    (void)col;\n");
    dnnjit__sb_append(sb, "#pragma unroll\n    for (int e = 0; e < V; e++)\n");
    if (store)
        dnnjit__sb_printf(sb, "        p[%s] = dj_from_float<%s>(v[e]);\n}\n\n", at, type);
    else
        dnnjit__sb_printf(sb, "        v[e] = dj_to_float(p[%s]);\n}\n\n", at);
}

/* A prefetch into L2 of the line holding tensor id's element (row, col): the first of the
 * elements a V-element load at col reads, which a vector load finds in one line. */
static void emit_prefetch(dnnjit__strbuf_t *sb, const emit_t *e, dnnjit_tensor_t id)
{
    const dnnjit__tensor_t *t = tensor_of(e, id);
    dnnjit__rows_view_t view = dnnjit__rows_view(e->pb, t);
    const char *type = dnnjit__cuda_type(t->resolved_type);
    dnnjit__sb_printf(sb,
                      "__device__ __forceinline__ void dj_pf_%u(dj_i64 row, int col, const DjArgs &args)\n{\n"
                      "    (void)col;\n    dj_prefetch_l2((const %s *)args.ptr[%d] + dj_roff_%u(row)",
                      id, type, slot_of(e, id), id);
    if (view.access == DNNJIT__ROWS_GENERAL)
        dnnjit__sb_printf(sb, " + dj_coff_%u(col)", id);
    else if (view.access != DNNJIT__ROWS_ROWCONST)
        dnnjit__sb_append(sb, " + col");
    dnnjit__sb_append(sb, ");\n}\n\n");
}

/* The per-row load (or store) of tensor id: one value per row. */
static void emit_row_access(dnnjit__strbuf_t *sb, const emit_t *e, dnnjit_tensor_t id, bool store)
{
    const dnnjit__tensor_t *t = tensor_of(e, id);
    const char *type = dnnjit__cuda_type(t->resolved_type);
    if (store) {
        dnnjit__sb_printf(sb,
                          "__device__ __forceinline__ void dj_str_%u(dj_i64 row, float v, const DjArgs &args)\n{\n"
                          "    ((%s *)args.ptr[%d])[dj_roff_%u(row)] = dj_from_float<%s>(v);\n}\n\n",
                          id, type, slot_of(e, id), id, type);
    } else if (t->is_pass_by_value) {
        dnnjit__sb_printf(sb, "__device__ __forceinline__ float dj_ldr_%u(dj_i64, const DjArgs &args)\n{\n"
                              "    (void)args;\n    return ", id);
        emit_scalar(sb, e, id);
        dnnjit__sb_append(sb, ";\n}\n\n");
    } else {
        dnnjit__sb_printf(sb,
                          "__device__ __forceinline__ float dj_ldr_%u(dj_i64 row, const DjArgs &args)\n{\n"
                          "    return dj_to_float(((const %s *)args.ptr[%d])[dj_roff_%u(row)]);\n}\n\n",
                          id, type, slot_of(e, id), id);
    }
}

/* The accessors the port functions asked for, and dj_aligned over the vector ones. */
static void emit_accessors(dnnjit__strbuf_t *sb, const emit_t *e)
{
    dnnjit__strbuf_t aligned = {0};
    dnnjit__sb_append(&aligned, "__device__ __forceinline__ bool dj_aligned(const DjArgs &args)\n{\n"
                                "    (void)args;\n    return (0");
    for (dnnjit_tensor_t id = 1; id <= (dnnjit_tensor_t)e->pb->g->tensor_count; id++) {
        unsigned need = e->need[id];
        const dnnjit__tensor_t *t = tensor_of(e, id);
        if (!need)
            continue;
        dnnjit__rows_view_t view = dnnjit__rows_view(e->pb, t);
        if (!t->is_pass_by_value) {
            emit_offset_fn(sb, "dj_roff", id, view.outer_count, view.outer_dim, view.outer_stride);
            if (view.access == DNNJIT__ROWS_GENERAL && (need & (NEED_LD | NEED_ST)))
                emit_offset_fn(sb, "dj_coff", id, view.inner_count, view.inner_dim, view.inner_stride);
            if ((need & (NEED_LD | NEED_ST)) && dnnjit__rows_vector_view(e->pb, &view, e->vec))
                dnnjit__sb_printf(&aligned, " | (dj_u64)args.ptr[%d]", slot_of(e, id));
        }
        if (need & NEED_LD)
            emit_vector_access(sb, e, id, false);
        if ((need & NEED_PF) && !t->is_pass_by_value)
            emit_prefetch(sb, e, id);
        if (need & NEED_ST)
            emit_vector_access(sb, e, id, true);
        if (need & NEED_LDR)
            emit_row_access(sb, e, id, false);
        if (need & NEED_STR)
            emit_row_access(sb, e, id, true);
    }
    dnnjit__sb_append(&aligned, ") % 16 == 0;\n}\n\n");
    dnnjit__sb_append(sb, aligned.failed ? "" : aligned.data);
    sb->failed |= aligned.failed;
    dnnjit__sb_free(&aligned);
}

/* ---- element-wise evaluation ----------------------------------------------------------- */

/* Marks in e->eval the pointwise nodes of the group that tensor id depends on. */
static void mark_closure(emit_t *e, dnnjit_tensor_t id)
{
    int64_t pos = producer_pos(e, id);
    if (pos < 0 || e->eval[pos] || node_at(e, pos)->op != DNNJIT_OP_POINTWISE)
        return;
    e->eval[pos] = true;
    for (int s = 0; s < DNNJIT__MAX_INPUTS; s++)
        if (node_at(e, pos)->in[s])
            mark_closure(e, node_at(e, pos)->in[s]);
}

/* Whether tensor id is read by the marked nodes and made by none of them (nor is it
 * `given`, whose value the caller provides). */
static bool is_leaf(const emit_t *e, dnnjit_tensor_t id, dnnjit_tensor_t given)
{
    if (!id || id == given)
        return false;
    int64_t pos = producer_pos(e, id);
    return pos < 0 || !e->eval[pos];
}

/* A non-virtual tensor of a type narrower than float holds its values rounded to that
 * type, and the reference's readers read the rounded value; so do the nodes here. Virtual
 * tensors keep full precision (the reference does not round them either). */
static bool narrow(const dnnjit__tensor_t *t)
{
    return !t->is_virtual && t->resolved_type != DNNJIT_DATA_TYPE_FLOAT && t->resolved_type != DNNJIT_DATA_TYPE_DOUBLE;
}

static void emit_rounded(dnnjit__strbuf_t *sb, const dnnjit__tensor_t *t, const char *value)
{
    if (narrow(t))
        dnnjit__sb_printf(sb, "dj_round<%s>(%s)", dnnjit__cuda_type(t->resolved_type), value);
    else
        dnnjit__sb_append(sb, value);
}

/* `const float v<out> = <the node's expression>;`, rounded to the output's type: the
 * expression goes in a lambda whose local v<out> (as dnnjit__emit_pointwise names it)
 * shadows the one being defined. */
static void emit_node(dnnjit__strbuf_t *sb, const emit_t *e, const dnnjit__node_t *n)
{
    const dnnjit__tensor_t *out = tensor_of(e, n->out[0]);
    if (!narrow(out)) {
        dnnjit__emit_pointwise(sb, e->pb->g, n, "        ");
        return;
    }
    dnnjit__sb_printf(sb, "        const float v%u = [&] {\n", n->out[0]);
    dnnjit__emit_pointwise(sb, e->pb->g, n, "            ");
    dnnjit__sb_printf(sb, "            return dj_round<%s>(v%u);\n        }();\n", dnnjit__cuda_type(out->resolved_type),
                      n->out[0]);
}

/* Whether input s of marked node pos is the first read of its tensor by marked nodes. */
static bool first_read(const emit_t *e, int64_t pos, int s)
{
    dnnjit_tensor_t id = node_at(e, pos)->in[s];
    for (int64_t q = 0; q <= pos; q++)
        for (int r = 0; e->eval[q] && r < (q < pos ? DNNJIT__MAX_INPUTS : s); r++)
            if (node_at(e, q)->in[r] == id)
                return false;
    return true;
}

/* The body of a port function that evaluates the nodes marked in e->eval: for V elements
 * at (row, col), or (per_row) once for the row. The value of `given` is `given_expr`; the
 * function returns `result` in v[]; it stores the outputs of marked nodes that the group
 * writes and no earlier function stores (only when `first` is set, if `on_first`). */
static void emit_elementwise(emit_t *e, dnnjit_tensor_t given, const char *given_expr, dnnjit_tensor_t result,
                             bool per_row, bool on_first)
{
    dnnjit__strbuf_t *sb = &e->ports;
    const dnnjit__group_t *grp = e->pb->grp;
    /* Leaves are loaded once, before the element loop (pass-by-value ones inside it). */
    for (int64_t pos = 0; pos < grp->node_count; pos++)
        for (int s = 0; e->eval[pos] && s < DNNJIT__MAX_INPUTS; s++) {
            dnnjit_tensor_t id = node_at(e, pos)->in[s];
            if (!first_read(e, pos, s) || !is_leaf(e, id, given) || tensor_of(e, id)->is_pass_by_value)
                continue;
            e->need[id] |= per_row ? NEED_LDR : NEED_LD;
            if (per_row)
                dnnjit__sb_printf(sb, "    const float l%u = dj_ldr_%u(row, args);\n", id, id);
            else
                dnnjit__sb_printf(sb, "    float l%u[V];\n    dj_ld_%u<V>(row, col, l%u, args);\n", id, id, id);
        }
    bool *store = calloc((size_t)grp->node_count, sizeof *store);
    if (!store) {
        sb->failed = true;
        return;
    }
    for (int64_t pos = 0; pos < grp->node_count; pos++) {
        dnnjit_tensor_t out = node_at(e, pos)->out[0];
        store[pos] = e->eval[pos] && !e->stored[pos] && dnnjit__rows_writes(grp, out);
        e->stored[pos] |= store[pos];
        if (store[pos] && !per_row)
            dnnjit__sb_printf(sb, "    float o%u[V];\n", out);
    }
    dnnjit__sb_append(sb, per_row ? "    {\n" : "#pragma unroll\n    for (int e = 0; e < V; e++) {\n");
    if (given) {
        dnnjit__sb_printf(sb, "        const float v%u = ", given);
        emit_rounded(sb, tensor_of(e, given), given_expr);
        dnnjit__sb_append(sb, ";\n");
    }
    for (int64_t pos = 0; pos < grp->node_count; pos++)
        for (int s = 0; e->eval[pos] && s < DNNJIT__MAX_INPUTS; s++) {
            dnnjit_tensor_t id = node_at(e, pos)->in[s];
            if (!first_read(e, pos, s) || !is_leaf(e, id, given))
                continue;
            dnnjit__sb_printf(sb, "        const float v%u = ", id);
            if (tensor_of(e, id)->is_pass_by_value)
                emit_scalar(sb, e, id);
            else
                dnnjit__sb_printf(sb, per_row ? "l%u" : "l%u[e]", id);
            dnnjit__sb_append(sb, ";\n");
        }
    for (int64_t pos = 0; pos < grp->node_count; pos++)
        if (e->eval[pos])
            emit_node(sb, e, node_at(e, pos));
    if (result)
        dnnjit__sb_printf(sb, "        v[e] = v%u;\n", result);
    for (int64_t pos = 0; pos < grp->node_count; pos++) {
        dnnjit_tensor_t out = node_at(e, pos)->out[0];
        if (store[pos] && per_row) {
            e->need[out] |= NEED_STR;
            dnnjit__sb_printf(sb, "        dj_str_%u(row, v%u, args);\n", out, out);
        } else if (store[pos]) {
            dnnjit__sb_printf(sb, "        o%u[e] = v%u;\n", out, out);
        }
    }
    dnnjit__sb_append(sb, "    }\n");
    for (int64_t pos = 0; pos < grp->node_count && !per_row; pos++) {
        dnnjit_tensor_t out = node_at(e, pos)->out[0];
        if (!store[pos])
            continue;
        e->need[out] |= NEED_ST;
        dnnjit__sb_printf(sb, "    %sdj_st_%u<V>(row, col, o%u, args);\n", on_first ? "if (first)\n        " : "", out,
                          out);
    }
    free(store);
}

/* ---- port functions ---------------------------------------------------------------- */

typedef enum role { FULL_IN, FULL_OUT, PAR_IN, PAR_OUT, ROW_IN, ROW_OUT, EPS } role_t;

typedef struct port {
    const char *name;
    role_t role;
} port_t;

/* The ports each template calls (a superset of the op's: a port the node lacks, such as
 * RMS norm's MEAN, gets an accessor that reads 0 or stores nothing). */
static const port_t *template_ports(const dnnjit__rows_problem_t *pb)
{
    static const port_t reduction[] = {{"X", FULL_IN}, {"Y", ROW_OUT}, {NULL, EPS}};
    static const port_t column_reduction[] = {{"X", FULL_IN}, {"Y", PAR_OUT}, {NULL, EPS}};
    static const port_t softmax[] = {{"P", FULL_IN}, {"S", FULL_OUT}, {"STATS_0", ROW_OUT}, {"STATS_1", ROW_OUT},
                                     {NULL, EPS}};
    static const port_t softmax_backward[] = {{"Y", FULL_IN}, {"DY", FULL_IN}, {"DX", FULL_OUT}, {NULL, EPS}};
    static const port_t norm[] = {{"X", FULL_IN}, {"SCALE", PAR_IN}, {"BIAS", PAR_IN}, {"EPSILON", EPS},
                                  {"Y", FULL_OUT}, {"MEAN", ROW_OUT}, {"INV_VARIANCE", ROW_OUT}, {NULL, EPS}};
    static const port_t norm_backward[] = {{"DY", FULL_IN},    {"X", FULL_IN},      {"SCALE", PAR_IN},
                                           {"MEAN", ROW_IN},   {"INV_VARIANCE", ROW_IN}, {"DX", FULL_OUT},
                                           {"DSCALE", PAR_OUT}, {"DBIAS", PAR_OUT},  {NULL, EPS}};
    switch (pb->op->op) {
    case DNNJIT_OP_REDUCTION:
        return pb->geo.columns ? column_reduction : reduction;
    case DNNJIT_OP_SOFTMAX:
        return softmax;
    case DNNJIT_OP_SOFTMAX_BACKWARD:
        return softmax_backward;
    case DNNJIT_OP_LAYERNORM:
    case DNNJIT_OP_RMSNORM:
        return norm;
    default:
        return norm_backward;
    }
}

/* The tensor on the node's port of that name, or NONE. */
static dnnjit_tensor_t port_tensor(const dnnjit__node_t *n, const port_t *p)
{
    const dnnjit__op_ports_t *ports = dnnjit__op_ports(n->op);
    bool out = p->role == FULL_OUT || p->role == PAR_OUT || p->role == ROW_OUT;
    int count = out ? ports->n_out : ports->n_in;
    for (int i = 0; i < count; i++)
        if (strcmp(out ? ports->out_names[i] : ports->in_names[i], p->name) == 0)
            return out ? n->out[i] : n->in[i];
    return DNNJIT_TENSOR_NONE;
}

/* Marks the epilogue (the pointwise nodes after the row op) and what it recomputes of the
 * prologue; false when there is none. */
static bool mark_epilogue(emit_t *e)
{
    memset(e->eval, 0, sizeof *e->eval * (size_t)e->pb->grp->node_count);
    bool any = false;
    for (int64_t pos = e->pb->op_pos + 1; pos < e->pb->grp->node_count; pos++) {
        e->eval[pos] = any = true;
        for (int s = 0; s < DNNJIT__MAX_INPUTS; s++)
            if (node_at(e, pos)->in[s])
                mark_closure(e, node_at(e, pos)->in[s]);
    }
    return any;
}

static void emit_full_in(emit_t *e, const char *name, dnnjit_tensor_t id)
{
    dnnjit__sb_printf(&e->ports, "using DjKept_%s = %s;\n\n", name,
                      dnnjit__cuda_type(dnnjit__rows_kept_type(e->pb, id)));
    dnnjit__sb_printf(&e->ports,
                      "template <int V>\n__device__ __forceinline__ void dj_in_%s(dj_i64 row, int col, float (&v)[V], "
                      "const DjArgs &args, bool first)\n{\n    (void)first;\n",
                      name);
    if (producer_pos(e, id) < 0) {
        e->need[id] |= NEED_LD | NEED_PF;
        dnnjit__sb_printf(&e->ports, "    dj_ld_%u<V>(row, col, v, args);\n", id);
    } else {
        memset(e->eval, 0, sizeof *e->eval * (size_t)e->pb->grp->node_count);
        mark_closure(e, id);
        emit_elementwise(e, DNNJIT_TENSOR_NONE, NULL, id, false, true);
    }
    dnnjit__sb_append(&e->ports, "}\n\n");
    /* Only a tensor read as it is gets prefetched: a prologue's result is made of others. */
    dnnjit__sb_printf(&e->ports, "__device__ __forceinline__ void dj_pf_%s(dj_i64 row, int col, const DjArgs &args)\n{\n",
                      name);
    if (producer_pos(e, id) < 0 && !tensor_of(e, id)->is_pass_by_value)
        dnnjit__sb_printf(&e->ports, "    dj_pf_%u(row, col, args);\n}\n\n", id);
    else
        dnnjit__sb_append(&e->ports, "    (void)row;\n    (void)col;\n    (void)args;\n}\n\n");
}

static void emit_full_out(emit_t *e, const char *name, dnnjit_tensor_t id)
{
    dnnjit__sb_printf(&e->ports,
                      "template <int V>\n__device__ __forceinline__ void dj_out_%s(dj_i64 row, int col, const float "
                      "(&y)[V], const DjArgs &args)\n{\n",
                      name);
    if (dnnjit__rows_writes(e->pb->grp, id)) {
        e->need[id] |= NEED_ST;
        dnnjit__sb_printf(&e->ports, "    dj_st_%u<V>(row, col, y, args);\n", id);
    }
    if (mark_epilogue(e))
        emit_elementwise(e, id, "y[e]", DNNJIT_TENSOR_NONE, false, false);
    dnnjit__sb_append(&e->ports, "}\n\n");
}

static void emit_row_out(emit_t *e, const char *name, dnnjit_tensor_t id)
{
    dnnjit__sb_printf(&e->ports, "__device__ __forceinline__ void dj_rout_%s(dj_i64 row, float value, const DjArgs &args)\n{\n",
                      name);
    if (dnnjit__rows_writes(e->pb->grp, id)) {
        e->need[id] |= NEED_STR;
        dnnjit__sb_printf(&e->ports, "    dj_str_%u(row, value, args);\n", id);
    }
    /* Only a reduction's output (its main one) can have an epilogue: one value per row. */
    if (id && id == e->pb->op->out[0] && mark_epilogue(e))
        emit_elementwise(e, id, "value", DNNJIT_TENSOR_NONE, true, false);
    dnnjit__sb_append(&e->ports, "}\n\n");
}

static void emit_port(emit_t *e, const port_t *p)
{
    dnnjit__strbuf_t *sb = &e->ports;
    const dnnjit__node_t *n = e->pb->op;
    dnnjit_tensor_t id = port_tensor(n, p);
    switch (p->role) {
    case FULL_IN:
        emit_full_in(e, p->name, id);
        break;
    case FULL_OUT:
        emit_full_out(e, p->name, id);
        break;
    case ROW_OUT:
        emit_row_out(e, p->name, id);
        break;
    case PAR_IN:
        dnnjit__sb_printf(sb, "template <int V>\n__device__ __forceinline__ void dj_par_%s(int col, float (&v)[V], "
                              "const DjArgs &args)\n{\n", p->name);
        if (id) {
            e->need[id] |= NEED_LD;
            dnnjit__sb_printf(sb, "    dj_ld_%u<V>(0, col, v, args);\n}\n\n", id);
        } else {
            dnnjit__sb_append(sb, "#pragma unroll\n    for (int e = 0; e < V; e++)\n        v[e] = 0.0f;\n}\n\n");
        }
        break;
    case PAR_OUT:
        dnnjit__sb_printf(sb, "template <int V>\n__device__ __forceinline__ void dj_pout_%s(int col, const float "
                              "(&v)[V], const DjArgs &args)\n{\n", p->name);
        if (dnnjit__rows_writes(e->pb->grp, id)) {
            e->need[id] |= NEED_ST;
            dnnjit__sb_printf(sb, "    dj_st_%u<V>(0, col, v, args);\n", id);
        }
        /* Only a reduction over the rows (its main output, one value per column) can have
         * an epilogue: its tensors broadcast over the rows, so row 0 addresses them. */
        if (id && id == n->out[0] && mark_epilogue(e)) {
            dnnjit__sb_append(sb, "    const dj_i64 row = 0;\n");
            emit_elementwise(e, id, "v[e]", DNNJIT_TENSOR_NONE, false, false);
        }
        dnnjit__sb_append(sb, "}\n\n");
        break;
    case ROW_IN:
        dnnjit__sb_printf(sb, "__device__ __forceinline__ float dj_rin_%s(dj_i64 row, const DjArgs &args)\n{\n", p->name);
        if (id) {
            e->need[id] |= NEED_LDR;
            dnnjit__sb_printf(sb, "    return dj_ldr_%u(row, args);\n}\n\n", id);
        } else {
            dnnjit__sb_append(sb, "    (void)row;\n    (void)args;\n    return 0.0f;\n}\n\n");
        }
        break;
    case EPS:
        dnnjit__sb_append(sb, "__device__ __forceinline__ float dj_eps(const DjArgs &args)\n{\n    (void)args;\n    return ");
        if (id) {
            /* One element: a pass-by-value scalar, or offset 0 of a buffer. */
            e->need[id] |= NEED_LDR;
            dnnjit__sb_printf(sb, "dj_ldr_%u(0, args)", id);
        } else {
            dnnjit__emit_float(sb, n->attr.norm.epsilon_value);
        }
        dnnjit__sb_append(sb, ";\n}\n\n");
        break;
    }
}

bool dnnjit__rows_emit(dnnjit__strbuf_t *sb, const dnnjit__rows_problem_t *pb, const dnnjit__kernel_t *k, int vec)
{
    emit_t e = {.pb = pb, .k = k, .vec = vec};
    size_t nodes = (size_t)pb->grp->node_count;
    e.need = calloc((size_t)pb->g->tensor_count + 1, sizeof *e.need);
    e.stored = calloc(nodes, sizeof *e.stored);
    e.eval = calloc(nodes, sizeof *e.eval);
    bool ok = e.need && e.stored && e.eval;
    for (const port_t *p = template_ports(pb); ok && p->name; p++)
        emit_port(&e, p);
    if (ok) {
        emit_accessors(sb, &e);
        dnnjit__sb_append(sb, e.ports.failed ? "" : e.ports.data ? e.ports.data : "");
        ok = !e.ports.failed;
    }
    dnnjit__sb_free(&e.ports);
    free(e.need);
    free(e.stored);
    free(e.eval);
    return ok;
}
