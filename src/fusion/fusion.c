/* Greedy partitioning in topological order. A matmul, pointwise node or row op anchors a
 * group; every later pointwise node whose output has the anchor's output shape, that reads
 * something the group produces, and whose other inputs are already available (graph
 * inputs or outputs of earlier groups) joins it as an epilogue. What remains becomes
 * single-node groups. Running the groups in creation order is then always valid, because
 * a node joins a group only when everything it reads exists by the time that group runs.
 *
 * Row ops (softmax, norms, reductions over the innermost or the outermost axes) also take
 * a prologue: before the greedy pass, each row op claims the pointwise nodes that compute
 * its full row inputs element by element (same shape as the row tensor). A node is claimed
 * only when every node that reads it is the row op, another node of its prologue, or a
 * node after the row op, so that the row op's group (made when the pass reaches the row
 * op) still runs before every reader. Whatever a claimed node reads was made before it,
 * hence by an earlier group. Pointwise nodes that can extend a matmul's epilogue are left
 * to the matmul.
 *
 * A matmul takes a prologue on each operand the same way: the pointwise nodes that compute
 * its A (or B) element by element, which the GEMM engines evaluate while loading the
 * operand's tiles, so the operand never goes through memory (see claim_gemm_prologue). */
#include "fusion/fusion.h"

#include <stdlib.h>
#include <string.h>

static const dnnjit__tensor_t *out0(dnnjit_graph_t g, const dnnjit__node_t *n)
{
    return dnnjit__tensor(g, n->out[0]);
}

static bool same_shape(const dnnjit__tensor_t *a, const dnnjit__tensor_t *b)
{
    return a->ndim == b->ndim && memcmp(a->dim, b->dim, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* ---- row ops ------------------------------------------------------------------- */

bool dnnjit__row_full_input(dnnjit_op_t op, int slot)
{
    switch (op) {
    case DNNJIT_OP_REDUCTION:
    case DNNJIT_OP_SOFTMAX:
    case DNNJIT_OP_LAYERNORM:
    case DNNJIT_OP_RMSNORM:
        return slot == 0; /* X, P */
    case DNNJIT_OP_SOFTMAX_BACKWARD:
    case DNNJIT_OP_LAYERNORM_BACKWARD:
    case DNNJIT_OP_RMSNORM_BACKWARD:
        return slot == 0 || slot == 1; /* Y and DY, DY and X */
    default:
        return false;
    }
}

/* Whether the axes in mask can be a row: each of more than one element comes after every
 * axis outside mask. */
static bool innermost(const dnnjit__tensor_t *x, uint32_t mask)
{
    bool inner = false;
    for (int a = 0; a < x->ndim; a++) {
        if (x->dim[a] == 1)
            continue;
        if (mask >> a & 1)
            inner = true;
        else if (inner)
            return false;
    }
    return true;
}

bool dnnjit__row_geometry(dnnjit_graph_t g, const dnnjit__node_t *n, dnnjit__row_geometry_t *geo)
{
    if (!dnnjit__row_full_input(n->op, 0))
        return false;
    /* Every full input has the same dims; slot 0 is one in each row op. */
    const dnnjit__tensor_t *x = dnnjit__tensor(g, n->in[0]);
    uint32_t all = (1u << x->ndim) - 1, mask;
    bool columns = false;
    if (n->op == DNNJIT_OP_REDUCTION) {
        mask = n->attr.reduction.resolved_axes & all;
        if (!innermost(x, mask)) {
            /* Reduced over the outer axes: the kept ones make up the row. */
            mask = all & ~mask;
            if (!innermost(x, mask))
                return false;
            columns = true;
        }
    } else if (n->op == DNNJIT_OP_SOFTMAX || n->op == DNNJIT_OP_SOFTMAX_BACKWARD) {
        mask = 1u << (x->ndim - 1);
    } else {
        int k = n->attr.norm.norm_axes ? n->attr.norm.norm_axes : x->ndim - 1;
        mask = all & ~((1u << (x->ndim - k)) - 1);
    }
    *geo = (dnnjit__row_geometry_t){.ndim = x->ndim, .inner_mask = mask, .rows = 1, .cols = 1, .columns = columns};
    for (int a = 0; a < x->ndim; a++) {
        geo->dim[a] = x->dim[a];
        if (mask >> a & 1)
            geo->cols *= x->dim[a];
        else
            geo->rows *= x->dim[a];
    }
    return true;
}

bool dnnjit__row_fusable(dnnjit_graph_t g, const dnnjit__node_t *n)
{
    dnnjit__row_geometry_t geo;
    return dnnjit__row_geometry(g, n, &geo) && dnnjit__node_compute_type(g, n) != DNNJIT_DATA_TYPE_DOUBLE;
}

/* ---- grouping ------------------------------------------------------------------- */

/* Whether pointwise node j can join group `gi`, given the groups assigned so far. A row
 * group's epilogue reads only the row op's main output (out[0]) of all its outputs: the
 * statistics are not element-wise over the row. */
static bool can_join(dnnjit_graph_t g, const int64_t *group_of, int64_t gi, int64_t j, const dnnjit__tensor_t *shape,
                     const dnnjit__node_t *row_op)
{
    const dnnjit__node_t *n = &g->nodes[j];
    if (n->op != DNNJIT_OP_POINTWISE || !same_shape(out0(g, n), shape))
        return false;
    bool linked = false;
    for (int k = 0; k < DNNJIT__MAX_INPUTS; k++) {
        const dnnjit__tensor_t *t = dnnjit__tensor(g, n->in[k]);
        if (!t || t->producer < 0)
            continue;
        if (group_of[t->producer] < 0)
            return false; /* made by a node not placed yet: it would run after this group */
        for (int o = 1; row_op && o < DNNJIT__MAX_OUTPUTS; o++)
            if (n->in[k] == row_op->out[o])
                return false;
        linked |= group_of[t->producer] == gi;
    }
    return linked;
}

/* Marks, for every node, whether it can extend a matmul's epilogue: a matmul, or a
 * pointwise node with the shape of a matmul output that reads such a node. */
static void mark_gemm_chains(dnnjit_graph_t g, const dnnjit__tensor_t **gemm_shape)
{
    for (int64_t i = 0; i < g->node_count; i++) {
        const dnnjit__node_t *n = &g->nodes[i];
        gemm_shape[i] = n->op == DNNJIT_OP_MATMUL ? out0(g, n) : NULL;
        for (int k = 0; n->op == DNNJIT_OP_POINTWISE && k < DNNJIT__MAX_INPUTS && !gemm_shape[i]; k++) {
            const dnnjit__tensor_t *t = dnnjit__tensor(g, n->in[k]);
            if (t && t->producer >= 0 && gemm_shape[t->producer] && same_shape(out0(g, n), gemm_shape[t->producer]))
                gemm_shape[i] = gemm_shape[t->producer];
        }
    }
}

/* Whether a node claimed nothing yet may join anchor r's prologue as far as its own kind and
 * output go: a pointwise node making a tensor of `shape` (virtual too, when `virtual_only`),
 * that cannot extend a matmul's epilogue (gemm_shape), which the greedy pass prefers. */
static bool prologue_candidate(dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__tensor_t *shape,
                               bool virtual_only, const dnnjit__tensor_t *gemm_shape)
{
    return n->op == DNNJIT_OP_POINTWISE && !gemm_shape && (!virtual_only || out0(g, n)->is_virtual) &&
           same_shape(out0(g, n), shape);
}

/* Whether node m may read the output of a prologue node of anchor r at its input k. */
typedef bool (*prologue_reader_ok_t)(dnnjit_graph_t g, int64_t r, int slot, int64_t m, int k, const int64_t *claimed);

/* Claims anchor r's prologue: claimed[p] = r for each candidate node p whose every reader
 * passes reader_ok and of which at least one is r or a node already claimed for r. Nodes are
 * visited from r backwards, so that every reader of a node is decided before the node. */
static void claim_backwards(dnnjit_graph_t g, int64_t r, int slot, const dnnjit__tensor_t *shape, bool virtual_only,
                            prologue_reader_ok_t reader_ok, const dnnjit__tensor_t **gemm_shape, int64_t *claimed)
{
    for (int64_t p = r - 1; p >= 0; p--) {
        const dnnjit__node_t *n = &g->nodes[p];
        if (claimed[p] >= 0 || !prologue_candidate(g, n, shape, virtual_only, gemm_shape[p]))
            continue;
        bool linked = false, ok = true;
        for (int64_t m = p + 1; m < g->node_count && ok; m++)
            for (int k = 0; k < DNNJIT__MAX_INPUTS && ok; k++) {
                if (g->nodes[m].in[k] != n->out[0])
                    continue;
                ok = reader_ok(g, r, slot, m, k, claimed);
                linked |= m == r || claimed[m] == r;
            }
        if (ok && linked)
            claimed[p] = r;
    }
}

/* A row op's prologue (see the top of this file) may be read by the row op at an input it
 * reads whole, by its own prologue, and by anything after the row op. */
static bool row_reader_ok(dnnjit_graph_t g, int64_t r, int slot, int64_t m, int k, const int64_t *claimed)
{
    (void)slot;
    return m == r ? dnnjit__row_full_input(g->nodes[r].op, k) : claimed[m] == r || m > r;
}

static void claim_prologue(dnnjit_graph_t g, int64_t r, const dnnjit__tensor_t **gemm_shape, int64_t *claimed)
{
    claim_backwards(g, r, 0, dnnjit__tensor(g, g->nodes[r].in[0]), false, row_reader_ok, gemm_shape, claimed);
}

/* ---- matmul prologues ------------------------------------------------------------ */

/* Claims the prologue of input `slot` (0: A, 1: B) of matmul r: claimed[p] = r. Nodes are
 * visited from r backwards, so that every reader of a node is decided before the node.
 * A pointwise node p is claimed when:
 *   - it has the operand's shape: the engines evaluate each prologue node once per operand
 *     element, at the operand's coordinates;
 *   - its output is virtual: a tensor the user reads back (an output) has to be written,
 *     and a GEMM computes each operand element once per tile of the other operand, so it
 *     has no single place to write it from;
 *   - every node that reads its output is the matmul, at this slot only, or a node already
 *     claimed for this same operand: a value the matmul group keeps in registers while
 *     loading a tile exists nowhere else, so no other node (nor the other operand's
 *     prologue, nor the epilogue) could read it;
 *   - it is not already claimed by a row op, and cannot extend a matmul's epilogue
 *     (gemm_shape), which the greedy pass prefers, as it does for row prologues.
 * Whatever a claimed node reads is made before it, by a node that is not claimed by a later
 * anchor (such a node's readers all come after that anchor or belong to its prologue), so
 * it exists by the time the matmul's group runs. */
static bool gemm_reader_ok(dnnjit_graph_t g, int64_t r, int slot, int64_t m, int k, const int64_t *claimed)
{
    return m == r ? k == slot : claimed[m] == r && dnnjit__prologue_slot(g, r, m) == slot;
}

static void claim_gemm_prologue(dnnjit_graph_t g, int64_t r, int slot, const dnnjit__tensor_t **gemm_shape,
                                int64_t *claimed)
{
    claim_backwards(g, r, slot, dnnjit__tensor(g, g->nodes[r].in[slot]), true, gemm_reader_ok, gemm_shape, claimed);
}

int dnnjit__prologue_slot(dnnjit_graph_t g, int64_t mm, int64_t node)
{
    /* Every reader of a prologue node is the matmul or a node of the same prologue (see
     * claim_gemm_prologue), so following the first reader leads to the matmul. */
    while (node < mm) {
        int64_t next = -1;
        for (int64_t m = node + 1; m <= mm && next < 0; m++)
            for (int k = 0; k < DNNJIT__MAX_INPUTS && next < 0; k++)
                if (g->nodes[m].in[k] == g->nodes[node].out[0]) {
                    if (m == mm)
                        return k;
                    next = m;
                }
        if (next < 0)
            return -1;
        node = next;
    }
    return -1;
}

/* Appends a tensor to a list unless present. */
static void add_unique(dnnjit_tensor_t *list, int64_t *count, dnnjit_tensor_t t)
{
    for (int64_t i = 0; i < *count; i++)
        if (list[i] == t)
            return;
    list[(*count)++] = t;
}

/* Fills a group's input and output lists from its nodes. */
static bool collect_io(dnnjit_graph_t g, const int64_t *group_of, int64_t gi, dnnjit__group_t *grp)
{
    int64_t cap_in = grp->node_count * DNNJIT__MAX_INPUTS, cap_out = grp->node_count * DNNJIT__MAX_OUTPUTS;
    grp->inputs = malloc(sizeof *grp->inputs * (size_t)cap_in);
    grp->outputs = malloc(sizeof *grp->outputs * (size_t)cap_out);
    if (!grp->inputs || !grp->outputs)
        return false;
    for (int64_t i = 0; i < grp->node_count; i++) {
        const dnnjit__node_t *n = &g->nodes[grp->nodes[i]];
        for (int k = 0; k < DNNJIT__MAX_INPUTS; k++) {
            const dnnjit__tensor_t *t = dnnjit__tensor(g, n->in[k]);
            if (t && (t->producer < 0 || group_of[t->producer] != gi))
                add_unique(grp->inputs, &grp->input_count, n->in[k]);
        }
        for (int k = 0; k < DNNJIT__MAX_OUTPUTS; k++) {
            const dnnjit__tensor_t *t = dnnjit__tensor(g, n->out[k]);
            if (!t)
                continue;
            bool read_outside = false;
            for (int64_t m = 0; m < g->node_count && !read_outside; m++)
                for (int q = 0; q < DNNJIT__MAX_INPUTS; q++)
                    read_outside |= g->nodes[m].in[q] == n->out[k] && group_of[m] != gi;
            if (!t->is_virtual || read_outside)
                add_unique(grp->outputs, &grp->output_count, n->out[k]);
        }
    }
    return true;
}

void dnnjit__partition_free(dnnjit__partition_t *p)
{
    for (int64_t i = 0; p->groups && i < p->group_count; i++) {
        free(p->groups[i].nodes);
        free(p->groups[i].inputs);
        free(p->groups[i].outputs);
    }
    free(p->groups);
    free(p->workspace_offset);
    *p = (dnnjit__partition_t){0};
}

/* Places every virtual tensor that crosses groups in the workspace, each at a 256-byte
 * boundary. Each tensor's bytes fit in int64, but their sum need not. */
static dnnjit_status_t plan_workspace(dnnjit_graph_t g, dnnjit__partition_t *p)
{
    for (int64_t i = 0; i < g->tensor_count; i++)
        p->workspace_offset[i] = -1;
    int64_t size = 0;
    for (int64_t gi = 0; gi < p->group_count; gi++)
        for (int64_t k = 0; k < p->groups[gi].output_count; k++) {
            dnnjit_tensor_t id = p->groups[gi].outputs[k];
            const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
            if (!t->is_virtual)
                continue;
            p->workspace_offset[id - 1] = size;
            int64_t bytes = dnnjit__numel(t->ndim, t->dim) * (int64_t)dnnjit_data_type_size(t->resolved_type);
            if (bytes > DNNJIT__MAX_WORKSPACE - size)
                return dnnjit__fail(g, DNNJIT_STATUS_NOT_SUPPORTED,
                                    "partition: graph \"%s\": tensor \"%s\" (%lld bytes) takes the workspace for the "
                                    "intermediates between kernels past %lld bytes",
                                    g->name, t->name, (long long)bytes, (long long)DNNJIT__MAX_WORKSPACE);
            size += (bytes + 255) / 256 * 256;
        }
    p->workspace_size = size;
    return DNNJIT_STATUS_SUCCESS;
}

static dnnjit__group_kind_t kind_of(dnnjit_graph_t g, const dnnjit__node_t *n)
{
    dnnjit__row_geometry_t geo;
    if (n->op == DNNJIT_OP_MATMUL)
        return DNNJIT__GROUP_GEMM;
    if (n->op == DNNJIT_OP_POINTWISE)
        return DNNJIT__GROUP_POINTWISE;
    return dnnjit__row_geometry(g, n, &geo) ? DNNJIT__GROUP_ROW : DNNJIT__GROUP_SINGLE;
}

/* Creates the group anchored at node i: its claimed prologue, the anchor, and every later
 * node that can join it. */
static bool make_group(dnnjit_graph_t g, int64_t i, const int64_t *claimed, int64_t *group_of, dnnjit__partition_t *p)
{
    int64_t gi = p->group_count++;
    dnnjit__group_t *grp = &p->groups[gi];
    const dnnjit__node_t *anchor = &g->nodes[i];
    grp->kind = kind_of(g, anchor);
    grp->first_node = i;
    grp->nodes = malloc(sizeof *grp->nodes * (size_t)g->node_count);
    if (!grp->nodes)
        return false;
    for (int64_t j = 0; j <= i; j++)
        if (j == i || claimed[j] == i) {
            grp->nodes[grp->node_count++] = j;
            group_of[j] = gi;
        }
    bool epilogue = grp->kind == DNNJIT__GROUP_GEMM || grp->kind == DNNJIT__GROUP_POINTWISE ||
                    (grp->kind == DNNJIT__GROUP_ROW && dnnjit__row_fusable(g, anchor));
    const dnnjit__node_t *row_op = grp->kind == DNNJIT__GROUP_ROW ? anchor : NULL;
    for (int64_t j = i + 1; epilogue && j < g->node_count; j++)
        if (group_of[j] < 0 && claimed[j] < 0 && can_join(g, group_of, gi, j, out0(g, anchor), row_op)) {
            grp->nodes[grp->node_count++] = j;
            group_of[j] = gi;
        }
    return true;
}

dnnjit_status_t dnnjit__partition(dnnjit_graph_t g, dnnjit__partition_t *out)
{
    *out = (dnnjit__partition_t){0};
    if (!g->validated)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE, "partition: graph \"%s\" is not validated", g->name);
    int64_t n = g->node_count;
    int64_t *group_of = malloc(sizeof *group_of * (size_t)(n ? n : 1));
    int64_t *claimed = malloc(sizeof *claimed * (size_t)(n ? n : 1));
    const dnnjit__tensor_t **gemm_shape = malloc(sizeof *gemm_shape * (size_t)(n ? n : 1));
    out->groups = calloc((size_t)(n ? n : 1), sizeof *out->groups);
    out->workspace_offset = malloc(sizeof *out->workspace_offset * (size_t)(g->tensor_count ? g->tensor_count : 1));
    bool ok = group_of && claimed && gemm_shape && out->groups && out->workspace_offset;
    for (int64_t i = 0; ok && i < n; i++)
        group_of[i] = claimed[i] = -1;
    if (ok)
        mark_gemm_chains(g, gemm_shape);
    for (int64_t i = 0; ok && i < n; i++) {
        if (dnnjit__row_fusable(g, &g->nodes[i]))
            claim_prologue(g, i, gemm_shape, claimed);
        for (int slot = 0; slot < 2 && g->nodes[i].op == DNNJIT_OP_MATMUL; slot++)
            claim_gemm_prologue(g, i, slot, gemm_shape, claimed);
    }
    for (int64_t i = 0; ok && i < n; i++)
        if (group_of[i] < 0 && claimed[i] < 0)
            ok = make_group(g, i, claimed, group_of, out);
    for (int64_t gi = 0; ok && gi < out->group_count; gi++)
        ok = collect_io(g, group_of, gi, &out->groups[gi]);
    free(group_of);
    free(claimed);
    free(gemm_shape);
    if (!ok) {
        dnnjit__partition_free(out);
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "partition: out of memory");
    }
    dnnjit_status_t s = plan_workspace(g, out);
    if (s)
        dnnjit__partition_free(out);
    return s;
}
