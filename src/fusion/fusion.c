/* Greedy partitioning in topological order. A matmul or pointwise node anchors a group;
 * every later pointwise node whose output has the anchor's shape, that reads something the
 * group produces, and whose other inputs are already available (graph inputs or outputs of
 * earlier groups) joins it. What remains becomes single-node groups. Running the groups in
 * creation order is then always valid, because a node joins a group only when everything
 * it reads exists by the time that group runs. */
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

/* Whether pointwise node j can join group `gi`, given the groups assigned so far. */
static bool can_join(dnnjit_graph_t g, const int64_t *group_of, int64_t gi, int64_t j, const dnnjit__tensor_t *shape)
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
        linked |= group_of[t->producer] == gi;
    }
    return linked;
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

/* Places every virtual tensor that crosses groups in the workspace. */
static void plan_workspace(dnnjit_graph_t g, dnnjit__partition_t *p)
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
            size += (bytes + 255) / 256 * 256;
        }
    p->workspace_size = size;
}

dnnjit_status_t dnnjit__partition(dnnjit_graph_t g, dnnjit__partition_t *out)
{
    *out = (dnnjit__partition_t){0};
    if (!g->validated)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE, "partition: graph \"%s\" is not validated", g->name);
    int64_t n = g->node_count;
    int64_t *group_of = malloc(sizeof *group_of * (size_t)n);
    out->groups = calloc((size_t)n, sizeof *out->groups);
    out->workspace_offset = malloc(sizeof *out->workspace_offset * (size_t)(g->tensor_count ? g->tensor_count : 1));
    bool ok = group_of && out->groups && out->workspace_offset;
    for (int64_t i = 0; ok && i < n; i++)
        group_of[i] = -1;
    for (int64_t i = 0; ok && i < n; i++) {
        if (group_of[i] >= 0)
            continue;
        int64_t gi = out->group_count++;
        dnnjit__group_t *grp = &out->groups[gi];
        const dnnjit__node_t *anchor = &g->nodes[i];
        grp->kind = anchor->op == DNNJIT_OP_MATMUL      ? DNNJIT__GROUP_GEMM
                    : anchor->op == DNNJIT_OP_POINTWISE ? DNNJIT__GROUP_POINTWISE
                                                        : DNNJIT__GROUP_SINGLE;
        grp->first_node = i;
        grp->nodes = malloc(sizeof *grp->nodes * (size_t)(n - i));
        if (!(ok = grp->nodes != NULL))
            break;
        grp->nodes[grp->node_count++] = i;
        group_of[i] = gi;
        for (int64_t j = i + 1; grp->kind != DNNJIT__GROUP_SINGLE && j < n; j++)
            if (group_of[j] < 0 && can_join(g, group_of, gi, j, out0(g, anchor))) {
                grp->nodes[grp->node_count++] = j;
                group_of[j] = gi;
            }
    }
    for (int64_t gi = 0; ok && gi < out->group_count; gi++)
        ok = collect_io(g, group_of, gi, &out->groups[gi]);
    free(group_of);
    if (!ok) {
        dnnjit__partition_free(out);
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "partition: out of memory");
    }
    plan_workspace(g, out);
    return DNNJIT_STATUS_SUCCESS;
}
