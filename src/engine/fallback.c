/* The fallback engine: the simplest correct kernel for every kind of group, so that any
 * valid graph runs on the GPU (heuristics mode FALLBACK) and the fast engines have a
 * second opinion to be compared with. One thread per output element (pointwise, matmul
 * with its prologues and epilogue, reduction) or per row (softmax, norms, attention),
 * plain loops in the reference's order, no atomics: deterministic. The algorithms live in
 * src/kernels/fallback_*.cuh; this file writes what specialises them: sizes, the
 * accumulation type, and one accessor per tensor port (see fallback_common.cuh). */
#include "engine/engine.h"

#include "codegen/codegen.h"
#include "codegen/templates.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    BLOCK = 128,
    /* Kernels loop with a grid stride, so the grid can stay well below the hardware limit. */
    MAX_BLOCKS = 1 << 20,
};

static int64_t blocks_for(int64_t threads)
{
    int64_t blocks = (threads + BLOCK - 1) / BLOCK;
    return blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
}

/* The template (src/kernels/fallback_<name>.cuh, entry dj_fallback_<name>) that runs a
 * group, or NULL. */
static const char *kernel_name(dnnjit_graph_t g, const dnnjit__group_t *grp)
{
    if (grp->kind == DNNJIT__GROUP_GEMM)
        return "gemm";
    if (grp->kind == DNNJIT__GROUP_POINTWISE)
        return "pointwise";
    switch (g->nodes[grp->first_node].op) {
    case DNNJIT_OP_REDUCTION:
        return "reduction";
    case DNNJIT_OP_SOFTMAX:
        return "softmax";
    case DNNJIT_OP_SOFTMAX_BACKWARD:
        return "softmax_backward";
    case DNNJIT_OP_LAYERNORM:
    case DNNJIT_OP_RMSNORM:
        return "norm";
    case DNNJIT_OP_LAYERNORM_BACKWARD:
    case DNNJIT_OP_RMSNORM_BACKWARD:
        return "norm_backward";
    case DNNJIT_OP_SDPA:
        return "sdpa";
    default:
        return NULL;
    }
}

static bool fb_supports(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob, const char *arch, char *why,
                        size_t why_size)
{
    (void)arch;
    dnnjit__kernel_t slots = {0};
    const char *reason = NULL;
    if (knob != 0)
        reason = "unknown knob";
    else if (!kernel_name(g, grp))
        reason = "the group's op has no fallback kernel";
    else if (grp->kind == DNNJIT__GROUP_ROW && grp->node_count > 1)
        /* Its kernels run a row op alone; the pointwise nodes fused around it would be lost. */
        reason = "the fallback runs row ops without fused pointwise prologues or epilogues";
    else if (!dnnjit__kernel_assign_slots(g, grp, &slots))
        reason = "the group touches more tensors or scalars than a kernel takes";
    if (reason && why)
        snprintf(why, why_size, "%s", reason);
    return !reason;
}

static void fb_knob_name(int knob, char *buf, size_t size)
{
    (void)knob;
    snprintf(buf, size, "b%d", BLOCK);
}

static int64_t numel_of(dnnjit_graph_t g, dnnjit_tensor_t id)
{
    const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
    return dnnjit__numel(t->ndim, t->dim);
}

/* Elements of the normalised group (columns) of a norm node over X. */
static int64_t norm_cols(const dnnjit__node_t *n, const dnnjit__tensor_t *x)
{
    int k = n->attr.norm.norm_axes ? n->attr.norm.norm_axes : x->ndim - 1;
    return dnnjit__numel(k, x->dim + x->ndim - k);
}

static double fb_cost(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    /* Naive kernels: about 1 TB/s, 1 TFLOP/s, and 1 ns per step of the longest loop one
     * thread runs. Crude, but it grows with every size. */
    (void)knob;
    double bytes = 0;
    for (int64_t i = 0; i < grp->input_count + grp->output_count; i++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, dnnjit__group_tensor(grp, i));
        bytes += (double)dnnjit__numel(t->ndim, t->dim) * (double)dnnjit_data_type_size(t->resolved_type);
    }
    const dnnjit__node_t *n = &g->nodes[grp->first_node];
    double flops = 0, serial = 1;
    if (grp->kind == DNNJIT__GROUP_GEMM) {
        const dnnjit__tensor_t *a = dnnjit__tensor(g, n->in[0]);
        serial = (double)a->dim[a->ndim - 1];
        flops = 2.0 * (double)numel_of(g, n->out[0]) * serial;
    } else if (grp->kind == DNNJIT__GROUP_SINGLE && n->op == DNNJIT_OP_SDPA) {
        const dnnjit__tensor_t *q = dnnjit__tensor(g, n->in[0]), *v = dnnjit__tensor(g, n->in[2]);
        serial = 2.0 * (double)v->dim[2] * (double)(q->dim[3] + v->dim[3]);
        flops = (double)dnnjit__numel(3, q->dim) * serial;
    } else if (grp->kind == DNNJIT__GROUP_SINGLE) {
        const dnnjit__tensor_t *x = dnnjit__tensor(g, n->in[n->op == DNNJIT_OP_LAYERNORM_BACKWARD ||
                                                                  n->op == DNNJIT_OP_RMSNORM_BACKWARD]);
        double all = (double)dnnjit__numel(x->ndim, x->dim);
        double cols = n->op == DNNJIT_OP_REDUCTION ? all / (double)numel_of(g, n->out[0])
                      : n->op == DNNJIT_OP_SOFTMAX || n->op == DNNJIT_OP_SOFTMAX_BACKWARD
                          ? (double)x->dim[x->ndim - 1]
                          : (double)norm_cols(n, x);
        serial = 3.0 * (cols > all / cols ? cols : all / cols);
    }
    return 5.0 + bytes / 1.0e6 + flops / 1.0e6 + serial * 1.0e-3;
}

/* ---- accessors ------------------------------------------------------------------- */

/* A literal of the accumulation type. */
static void emit_acc_literal(dnnjit__strbuf_t *sb, bool dbl, double v)
{
    if (dbl)
        dnnjit__sb_printf(sb, "%.17g", v);
    else
        dnnjit__emit_float(sb, v);
}

/* Tensor t seen from an index space of rank `ndim` over dims `dim`, into which t
 * broadcasts (right-aligned): the space's dims with t's stride where t has the axis with
 * more than one element, 0 elsewhere. Axis a of the view is axis perm[a] of the space
 * (perm NULL: the same order). Axes of size 1 are dropped and neighbours that address
 * memory as one axis are merged, which spares the kernel divisions. */
static dnnjit__tensor_t view_of(const dnnjit__tensor_t *t, int ndim, const int64_t *dim, const int *perm)
{
    dnnjit__tensor_t v = {.ndim = 0};
    for (int a = 0; a < ndim; a++) {
        int s = perm ? perm[a] : a;
        int ta = s + t->ndim - ndim;
        int64_t stride = ta >= 0 && t->dim[ta] != 1 ? t->stride[ta] : 0;
        if (dim[s] == 1)
            continue;
        if (v.ndim > 0 && v.stride[v.ndim - 1] == stride * dim[s]) {
            v.dim[v.ndim - 1] *= dim[s];
            v.stride[v.ndim - 1] = stride;
        } else {
            v.dim[v.ndim] = dim[s];
            v.stride[v.ndim] = stride;
            v.ndim++;
        }
    }
    if (v.ndim == 0) {
        v.ndim = 1;
        v.dim[0] = 1;
    }
    return v;
}

/* How a kernel sees its tensors: every port over one index space (the dims of a reference
 * tensor, axes reordered by perm), or (ndim 0) each port over its own dims. */
typedef struct space {
    int ndim;
    const int64_t *dim;
    const int *perm;
} space_t;

typedef struct port {
    const char *name;
    bool output;
} port_t;

/* The tensor on a node's port of that name and direction, or NONE when the node has no
 * such port (e.g. MEAN of an RMS norm). */
static dnnjit_tensor_t port_tensor(const dnnjit__node_t *n, const port_t *port)
{
    const dnnjit__op_ports_t *ports = dnnjit__op_ports(n->op);
    int count = port->output ? ports->n_out : ports->n_in;
    for (int i = 0; i < count; i++)
        if (strcmp(port->output ? ports->out_names[i] : ports->in_names[i], port->name) == 0)
            return port->output ? n->out[i] : n->in[i];
    return DNNJIT_TENSOR_NONE;
}

/* Emits dj_off_<port> and dj_ld_<port> or dj_st_<port> (see fallback_common.cuh). A port
 * without a tensor, or an output the group does not write, reads `absent` or stores
 * nothing. */
static void emit_port(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__kernel_t *k,
                      const port_t *port, const space_t *space, bool dbl, double absent)
{
    dnnjit_tensor_t id = port_tensor(n, port);
    const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
    int slot = dnnjit__slot_of(k->tensors, k->tensor_count, id);
    bool in_memory = t && slot >= 0;
    const char *type = t ? dnnjit__cuda_type(t->resolved_type) : "";
    dnnjit__tensor_t view = {0};
    if (in_memory)
        view = space->ndim ? view_of(t, space->ndim, space->dim, space->perm) : view_of(t, t->ndim, t->dim, NULL);
    bool moves = false;
    for (int a = 0; a < view.ndim; a++)
        moves |= view.stride[a] != 0;
    if (moves) {
        /* Peels the coordinates off i from the innermost axis out; axes the tensor does not
         * move along only divide. */
        dnnjit__sb_printf(sb, "__device__ __forceinline__ dj_i64 dj_off_%s(dj_i64 i)\n{\n    dj_i64 off = 0;\n",
                          port->name);
        for (int a = view.ndim - 1; a > 0; a--) {
            if (view.stride[a])
                dnnjit__sb_printf(sb, "    off += i %% %lldLL * %lldLL;\n", (long long)view.dim[a],
                                  (long long)view.stride[a]);
            dnnjit__sb_printf(sb, "    i /= %lldLL;\n", (long long)view.dim[a]);
        }
        if (view.stride[0])
            dnnjit__sb_printf(sb, "    off += i * %lldLL;\n", (long long)view.stride[0]);
        dnnjit__sb_append(sb, "    return off;\n}\n");
    } else {
        dnnjit__sb_printf(sb, "__device__ __forceinline__ dj_i64 dj_off_%s(dj_i64) { return 0; }\n", port->name);
    }
    if (port->output && in_memory) {
        dnnjit__sb_printf(sb,
                          "__device__ __forceinline__ void dj_st_%s(dj_i64 off, dj_acc v, const DjArgs &args)\n{\n"
                          "    ((%s *)args.ptr[%d])[off] = dj_from_acc<%s>(v);\n}\n\n",
                          port->name, type, slot, type);
    } else if (port->output) {
        dnnjit__sb_printf(sb, "__device__ __forceinline__ void dj_st_%s(dj_i64, dj_acc, const DjArgs &) {}\n\n",
                          port->name);
    } else if (in_memory) {
        dnnjit__sb_printf(sb,
                          "__device__ __forceinline__ dj_acc dj_ld_%s(dj_i64 off, const DjArgs &args)\n{\n"
                          "    return dj_to_acc(((const %s *)args.ptr[%d])[off]);\n}\n\n",
                          port->name, type, slot);
    } else {
        dnnjit__sb_printf(sb, "__device__ __forceinline__ dj_acc dj_ld_%s(dj_i64, const DjArgs &args)\n{\n"
                              "    (void)args;\n    return (dj_acc)(", port->name);
        if (t && t->is_pass_by_value && t->has_value)
            emit_acc_literal(sb, dbl, t->value);
        else if (t && t->is_pass_by_value)
            dnnjit__sb_printf(sb, "args.scalar[%d]", dnnjit__slot_of(k->scalars, k->scalar_count, id));
        else
            emit_acc_literal(sb, dbl, absent);
        dnnjit__sb_append(sb, ");\n}\n\n");
    }
}

static void emit_ports(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__kernel_t *k,
                       const port_t *ports, const space_t *space, bool dbl)
{
    for (const port_t *p = ports; p->name; p++) {
        bool is_eps = strcmp(p->name, "EPSILON") == 0;
        emit_port(sb, g, n, k, p, space, dbl, is_eps ? n->attr.norm.epsilon_value : 0.0);
    }
}

static void emit_rows(dnnjit__strbuf_t *sb, int64_t rows, int64_t cols)
{
    dnnjit__sb_printf(sb, "constexpr dj_i64 DJ_ROWS = %lldLL;\nconstexpr dj_i64 DJ_COLS = %lldLL;\n", (long long)rows,
                      (long long)cols);
}

/* ---- per kind -------------------------------------------------------------------- */

/* What a generator tells the launch: threads for the main work, and (norm backward) for a
 * second part run by the blocks after those of the first. */
typedef struct work {
    int64_t threads, extra_threads;
} work_t;

static work_t gen_pointwise(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp,
                            const dnnjit__kernel_t *k)
{
    const dnnjit__tensor_t *shape = dnnjit__tensor(g, g->nodes[grp->first_node].out[0]);
    int64_t numel = dnnjit__numel(shape->ndim, shape->dim);
    dnnjit__sb_printf(sb, "constexpr dj_i64 DJ_NUMEL = %lldLL;\n\n", (long long)numel);
    dnnjit__emit_group_element(sb, g, grp, k, shape, DNNJIT_TENSOR_NONE, DNNJIT__ELEMENT_AT_INDEX);
    return (work_t){numel, 0};
}

/* The accessors of a matmul operand that the group's prologue computes (it is never in
 * memory): its offset is the index into the operand's space itself, and its value the
 * prologue's there, rounded to the operand's type as the unfused graph would store it. */
static void emit_prologue_port(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp,
                               const dnnjit__kernel_t *k, int slot)
{
    const dnnjit__tensor_t *t = dnnjit__tensor(g, g->nodes[grp->first_node].in[slot]);
    const char *port = slot ? "B" : "A";
    dnnjit__emit_prologue(sb, g, grp, k, slot, DNNJIT__ELEMENT_AT_INDEX);
    dnnjit__sb_printf(sb,
                      "__device__ __forceinline__ dj_i64 dj_off_%s(dj_i64 i) { return i; }\n"
                      "__device__ __forceinline__ dj_acc dj_ld_%s(dj_i64 i, const DjArgs &args)\n{\n"
                      "    return dj_to_acc(dj_from_float<%s>(dj_%c_prologue(i, args)));\n}\n\n",
                      port, port, dnnjit__cuda_type(t->resolved_type), slot ? 'b' : 'a');
}

static work_t gen_gemm(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__group_t *grp, const dnnjit__kernel_t *k,
                       bool dbl)
{
    static const port_t a_port[] = {{"A", false}, {NULL, false}}, b_port[] = {{"B", false}, {NULL, false}};
    const dnnjit__node_t *n = &g->nodes[grp->first_node];
    const dnnjit__tensor_t *a = dnnjit__tensor(g, n->in[0]), *b = dnnjit__tensor(g, n->in[1]);
    const dnnjit__tensor_t *c = dnnjit__tensor(g, n->out[0]);
    int nd = c->ndim;
    int64_t m = c->dim[nd - 2], cols = c->dim[nd - 1], kk = a->dim[a->ndim - 1];
    int64_t numel = dnnjit__numel(nd, c->dim);
    bool pro_a = dnnjit__group_has_prologue(g, grp, 0), pro_b = dnnjit__group_has_prologue(g, grp, 1);
    /* A prologue's operand is addressed by its index in the operand's space, row-major. */
    dnnjit__sb_printf(sb,
                      "constexpr dj_i64 DJ_NUMEL = %lldLL;\nconstexpr dj_i64 DJ_M = %lldLL;\n"
                      "constexpr dj_i64 DJ_N = %lldLL;\nconstexpr dj_i64 DJ_K = %lldLL;\n"
                      "constexpr dj_i64 DJ_A_KSTRIDE = %lldLL;\nconstexpr dj_i64 DJ_B_KSTRIDE = %lldLL;\n\n",
                      (long long)numel, (long long)m, (long long)cols, (long long)kk,
                      (long long)(pro_a ? 1 : a->stride[a->ndim - 1]), (long long)(pro_b ? cols : b->stride[b->ndim - 2]));
    /* A over [batch..., M, K] and B over [batch..., K, N], the batch axes being C's. */
    int64_t dim[DNNJIT_MAX_DIMS];
    memcpy(dim, c->dim, sizeof dim);
    dim[nd - 1] = kk;
    if (pro_a)
        emit_prologue_port(sb, g, grp, k, 0);
    else
        emit_ports(sb, g, n, k, a_port, &(space_t){nd, dim, NULL}, dbl);
    dim[nd - 1] = cols;
    dim[nd - 2] = kk;
    if (pro_b)
        emit_prologue_port(sb, g, grp, k, 1);
    else
        emit_ports(sb, g, n, k, b_port, &(space_t){nd, dim, NULL}, dbl);
    dnnjit__emit_group_element(sb, g, grp, k, c, n->out[0], DNNJIT__ELEMENT_AT_INDEX);
    return (work_t){numel, 0};
}

static work_t gen_reduction(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__node_t *n,
                            const dnnjit__kernel_t *k, bool dbl)
{
    static const port_t ports[] = {{"X", false}, {"Y", true}, {NULL, false}};
    const dnnjit__tensor_t *x = dnnjit__tensor(g, n->in[0]);
    uint32_t axes = n->attr.reduction.resolved_axes;
    /* Kept axes first, reduced ones last, each in their order: a row of the space is one
     * element of Y, and its columns run over the reduced elements in row-major order. */
    int perm[DNNJIT_MAX_DIMS], count = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int a = 0; a < x->ndim; a++)
            if ((int)(axes >> a & 1) == pass)
                perm[count++] = a;
    int64_t rows = numel_of(g, n->out[0]);
    emit_rows(sb, rows, dnnjit__numel(x->ndim, x->dim) / rows);
    dnnjit__emit_reduce_mode(sb, n->attr.reduction.mode);
    dnnjit__sb_append(sb, "\n");
    emit_ports(sb, g, n, k, ports, &(space_t){x->ndim, x->dim, perm}, dbl);
    return (work_t){rows, 0};
}

static work_t gen_softmax(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__kernel_t *k,
                          bool dbl)
{
    static const port_t fwd[] = {{"P", false}, {"S", true}, {"STATS_0", true}, {"STATS_1", true}, {NULL, false}};
    static const port_t bwd[] = {{"Y", false}, {"DY", false}, {"DX", true}, {NULL, false}};
    bool backward = n->op == DNNJIT_OP_SOFTMAX_BACKWARD;
    const dnnjit__tensor_t *x = dnnjit__tensor(g, n->in[0]);
    int64_t cols = x->dim[x->ndim - 1], rows = dnnjit__numel(x->ndim, x->dim) / cols;
    emit_rows(sb, rows, cols);
    if (!backward)
        dnnjit__sb_printf(sb, "constexpr int DJ_STATS = %d;\n", (int)n->attr.softmax.stats);
    dnnjit__sb_append(sb, "\n");
    emit_ports(sb, g, n, k, backward ? bwd : fwd, &(space_t){x->ndim, x->dim, NULL}, dbl);
    return (work_t){rows, 0};
}

static work_t gen_norm(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__kernel_t *k,
                       bool dbl)
{
    static const port_t fwd[] = {{"X", false}, {"SCALE", false}, {"BIAS", false},         {"EPSILON", false},
                                 {"Y", true},  {"MEAN", true},    {"INV_VARIANCE", true}, {NULL, false}};
    static const port_t bwd[] = {{"DY", false},           {"X", false},  {"SCALE", false},  {"MEAN", false},
                                 {"INV_VARIANCE", false}, {"DX", true},  {"DSCALE", true},  {"DBIAS", true},
                                 {NULL, false}};
    bool backward = n->op == DNNJIT_OP_LAYERNORM_BACKWARD || n->op == DNNJIT_OP_RMSNORM_BACKWARD;
    bool center = n->op == DNNJIT_OP_LAYERNORM || n->op == DNNJIT_OP_LAYERNORM_BACKWARD;
    const dnnjit__tensor_t *x = dnnjit__tensor(g, n->in[backward ? 1 : 0]);
    int64_t cols = norm_cols(n, x), rows = dnnjit__numel(x->ndim, x->dim) / cols;
    emit_rows(sb, rows, cols);
    dnnjit__sb_printf(sb, "constexpr bool DJ_CENTER = %s;\n", center ? "true" : "false");
    if (backward)
        dnnjit__sb_printf(sb, "constexpr unsigned DJ_ROW_BLOCKS = %lldu;\n", (long long)blocks_for(rows));
    dnnjit__sb_append(sb, "\n");
    emit_ports(sb, g, n, k, backward ? bwd : fwd, &(space_t){x->ndim, x->dim, NULL}, dbl);
    return (work_t){rows, backward ? cols : 0};
}

static work_t gen_sdpa(dnnjit__strbuf_t *sb, dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__kernel_t *k,
                       bool dbl)
{
    static const port_t ports[] = {{"Q", false}, {"K", false}, {"V", false}, {"O", true}, {"STATS", true},
                                   {NULL, false}};
    const dnnjit__tensor_t *q = dnnjit__tensor(g, n->in[0]), *kt = dnnjit__tensor(g, n->in[1]);
    const dnnjit__tensor_t *v = dnnjit__tensor(g, n->in[2]);
    const struct {
        const char *name;
        int64_t value;
    } dims[] = {{"B", q->dim[0]},   {"HQ", q->dim[1]},   {"SQ", q->dim[2]}, {"D", q->dim[3]},
                {"HK", kt->dim[1]}, {"SKV", kt->dim[2]}, {"HV", v->dim[1]}, {"DV", v->dim[3]}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        dnnjit__sb_printf(sb, "constexpr dj_i64 DJ_%s = %lldLL;\n", dims[i].name, (long long)dims[i].value);
    dnnjit__sb_append(sb, "constexpr dj_acc DJ_SCALE = ");
    emit_acc_literal(sb, dbl, n->attr.sdpa.has_attn_scale ? n->attr.sdpa.attn_scale : 1.0 / sqrt((double)q->dim[3]));
    dnnjit__sb_printf(sb, ";\nconstexpr bool DJ_CAUSAL = %s;\n", n->attr.sdpa.use_causal_mask ? "true" : "false");
    /* Tensor-core attention kernels (cuDNN's, flash attention's) multiply P by V in V's
     * type, so P is rounded to it when V is narrower than the accumulator; results then
     * agree with theirs to the last bit far more often. */
    bool narrow_v = v->resolved_type == DNNJIT_DATA_TYPE_HALF || v->resolved_type == DNNJIT_DATA_TYPE_BFLOAT16 ||
                    v->resolved_type == DNNJIT_DATA_TYPE_FP8_E4M3 || v->resolved_type == DNNJIT_DATA_TYPE_FP8_E5M2;
    dnnjit__sb_printf(sb, "typedef %s DjP;\n\n", narrow_v ? dnnjit__cuda_type(v->resolved_type) : "dj_acc");
    emit_ports(sb, g, n, k, ports, &(space_t){0, NULL, NULL}, dbl);
    return (work_t){dnnjit__numel(3, q->dim), 0};
}

static dnnjit_status_t fb_generate(dnnjit_graph_t g, const dnnjit__partition_t *p, const dnnjit__group_t *grp,
                                   int knob, dnnjit__kernel_t *k)
{
    (void)p;
    (void)knob;
    *k = (dnnjit__kernel_t){0};
    const dnnjit__node_t *n = &g->nodes[grp->first_node];
    const char *name = kernel_name(g, grp);
    if (!name || !dnnjit__kernel_assign_slots(g, grp, k))
        return dnnjit__fail(g, DNNJIT_STATUS_NOT_SUPPORTED, "fallback engine: %s \"%s\" is not supported",
                            dnnjit__op_label(n->op), n->name);
    bool dbl = dnnjit__node_compute_type(g, n) == DNNJIT_DATA_TYPE_DOUBLE;
    char file[64];
    snprintf(file, sizeof file, "fallback_%s.cuh", name);

    dnnjit__strbuf_t sb = {0};
    dnnjit__sb_append(&sb, dnnjit__template("common.cuh"));
    dnnjit__sb_printf(&sb, "\n// ---- generated by the fallback engine for %s \"%s\" ----\n", dnnjit__op_label(n->op),
                      n->name);
    dnnjit__sb_printf(&sb, "typedef %s dj_acc;\nconstexpr int DJ_BLOCK = %d;\n\n", dbl ? "double" : "float", BLOCK);
    dnnjit__sb_append(&sb, dnnjit__template("fallback_common.cuh"));
    dnnjit__sb_append(&sb, "\n// ---- specialisation ----\n");
    work_t work;
    if (grp->kind == DNNJIT__GROUP_GEMM)
        work = gen_gemm(&sb, g, grp, k, dbl);
    else if (grp->kind == DNNJIT__GROUP_POINTWISE)
        work = gen_pointwise(&sb, g, grp, k);
    else if (n->op == DNNJIT_OP_REDUCTION)
        work = gen_reduction(&sb, g, n, k, dbl);
    else if (n->op == DNNJIT_OP_SOFTMAX || n->op == DNNJIT_OP_SOFTMAX_BACKWARD)
        work = gen_softmax(&sb, g, n, k, dbl);
    else if (n->op == DNNJIT_OP_SDPA)
        work = gen_sdpa(&sb, g, n, k, dbl);
    else
        work = gen_norm(&sb, g, n, k, dbl);
    dnnjit__sb_append(&sb, dnnjit__template(file));
    k->source = dnnjit__sb_take(&sb);
    if (!k->source)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "fallback engine: out of memory generating source");
    snprintf(k->entry, sizeof k->entry, "dj_fallback_%s", name);
    int64_t blocks = blocks_for(work.threads) + (work.extra_threads ? blocks_for(work.extra_threads) : 0);
    k->grid[0] = (unsigned)blocks;
    k->grid[1] = k->grid[2] = 1;
    k->block[0] = BLOCK;
    k->block[1] = k->block[2] = 1;
    return DNNJIT_STATUS_SUCCESS;
}

const dnnjit__engine_t dnnjit__engine_fallback = {
    .name = "fallback",
    .knob_count = 1,
    .supports = fb_supports,
    .knob_name = fb_knob_name,
    .cost = fb_cost,
    .generate = fb_generate,
};
