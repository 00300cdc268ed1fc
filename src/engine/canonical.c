#include "engine/canonical.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The canonical id of `id` among the first n tensors found, or NONE. */
static dnnjit_tensor_t find(const dnnjit__canonical_t *c, int64_t n, dnnjit_tensor_t id)
{
    for (int64_t i = 0; i < n; i++)
        if (c->real[i] == id)
            return (dnnjit_tensor_t)(i + 1);
    return DNNJIT_TENSOR_NONE;
}

/* Numbers the tensors the group's nodes touch in order of first use; returns how many. */
static int64_t number_tensors(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit__canonical_t *c)
{
    int64_t n = 0;
    for (int64_t i = 0; i < grp->node_count; i++) {
        const dnnjit__node_t *node = &g->nodes[grp->nodes[i]];
        dnnjit_tensor_t ports[DNNJIT__MAX_INPUTS + DNNJIT__MAX_OUTPUTS];
        memcpy(ports, node->in, sizeof node->in);
        memcpy(ports + DNNJIT__MAX_INPUTS, node->out, sizeof node->out);
        for (int s = 0; s < DNNJIT__MAX_INPUTS + DNNJIT__MAX_OUTPUTS; s++)
            if (ports[s] != DNNJIT_TENSOR_NONE && !find(c, n, ports[s]))
                c->real[n++] = ports[s];
    }
    return n;
}

static void map_list(const dnnjit__canonical_t *c, const dnnjit_tensor_t *from, dnnjit_tensor_t *to, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        to[i] = find(c, c->graph.tensor_count, from[i]);
}

dnnjit_status_t dnnjit__canonical_make(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit__canonical_t *c)
{
    *c = (dnnjit__canonical_t){0};
    int64_t nodes = grp->node_count, most = nodes * (DNNJIT__MAX_INPUTS + DNNJIT__MAX_OUTPUTS);
    c->real = malloc(sizeof *c->real * (size_t)most);
    c->names = malloc(sizeof *c->names * (size_t)(nodes + most + 1));
    c->graph.nodes = malloc(sizeof *c->graph.nodes * (size_t)nodes);
    c->graph.tensors = malloc(sizeof *c->graph.tensors * (size_t)most);
    c->group.nodes = malloc(sizeof *c->group.nodes * (size_t)nodes);
    c->group.inputs = malloc(sizeof *c->group.inputs * (size_t)(grp->input_count ? grp->input_count : 1));
    c->group.outputs = malloc(sizeof *c->group.outputs * (size_t)(grp->output_count ? grp->output_count : 1));
    if (!c->real || !c->names || !c->graph.nodes || !c->graph.tensors || !c->group.nodes || !c->group.inputs ||
        !c->group.outputs) {
        dnnjit__canonical_free(c);
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "generate: out of memory");
    }
    int64_t tensors = number_tensors(g, grp, c);
    struct dnnjit_graph *cg = &c->graph;
    cg->handle = g->handle;
    cg->name = c->names[nodes + tensors];
    cg->name[0] = '\0';
    cg->io_type = g->io_type;
    cg->intermediate_type = g->intermediate_type;
    cg->compute_type = g->compute_type;
    cg->tensor_count = cg->tensor_cap = tensors;
    cg->node_count = cg->node_cap = nodes;
    cg->validated = true;
    for (int64_t i = 0; i < nodes; i++) {
        dnnjit__node_t *n = &cg->nodes[i];
        *n = g->nodes[grp->nodes[i]];
        snprintf(c->names[i], sizeof c->names[i], "#%lld", (long long)i);
        n->name = c->names[i];
        map_list(c, n->in, n->in, DNNJIT__MAX_INPUTS);
        map_list(c, n->out, n->out, DNNJIT__MAX_OUTPUTS);
        c->group.nodes[i] = i;
        if (grp->nodes[i] == grp->first_node)
            c->group.first_node = i;
    }
    for (int64_t i = 0; i < tensors; i++) {
        dnnjit__tensor_t *t = &cg->tensors[i];
        *t = *dnnjit__tensor(g, c->real[i]);
        snprintf(c->names[nodes + i], sizeof c->names[0], "#%lld", (long long)i + 1);
        t->name = c->names[nodes + i];
        t->has_uid = false;
        t->uid = 0;
        t->producer = -1;
    }
    for (int64_t i = 0; i < nodes; i++)
        for (int s = 0; s < DNNJIT__MAX_OUTPUTS; s++)
            if (cg->nodes[i].out[s] != DNNJIT_TENSOR_NONE)
                cg->tensors[cg->nodes[i].out[s] - 1].producer = i;
    c->group.kind = grp->kind;
    c->group.node_count = nodes;
    c->group.input_count = grp->input_count;
    c->group.output_count = grp->output_count;
    map_list(c, grp->inputs, c->group.inputs, grp->input_count);
    map_list(c, grp->outputs, c->group.outputs, grp->output_count);
    c->partition = (dnnjit__partition_t){.group_count = 1, .groups = &c->group};
    return DNNJIT_STATUS_SUCCESS;
}

void dnnjit__canonical_free(dnnjit__canonical_t *c)
{
    free(c->real);
    free(c->names);
    free(c->graph.nodes);
    free(c->graph.tensors);
    free(c->group.nodes);
    free(c->group.inputs);
    free(c->group.outputs);
    *c = (dnnjit__canonical_t){0};
}

void dnnjit__canonical_unmap(const dnnjit__canonical_t *c, dnnjit__kernel_t *k)
{
    for (int i = 0; i < k->tensor_count; i++)
        k->tensors[i] = c->real[k->tensors[i] - 1];
    for (int i = 0; i < k->scalar_count; i++)
        k->scalars[i] = c->real[k->scalars[i] - 1];
}
