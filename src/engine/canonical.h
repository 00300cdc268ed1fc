/* A group restated as a graph of its own, so that engines generate the same source for the
 * same structure: whatever ids, uids and names the graph gave its tensors and nodes, and
 * wherever the group sits in the graph. The kernel cache keys CUBINs by their source, so
 * this is what lets a graph rebuilt in another order (or loaded from JSON that lists its
 * tensors differently) find the kernels it compiled before. */
#ifndef DNNJIT_ENGINE_CANONICAL_H
#define DNNJIT_ENGINE_CANONICAL_H

#include "engine/engine.h"
#include "jit/jit.h"

/* The group's nodes in group order, named "#0", "#1", ...; the tensors they touch numbered
 * 1, 2, ... in order of first use (each node's input slots, then its output slots) and
 * named "#1", "#2", ...; no uids. A tensor made outside the group has no producer: to the
 * kernel it is an input like any other. The partition holds the one group (all of the
 * graph) and no workspace layout, which a kernel never sees (execute passes it the
 * addresses). */
typedef struct dnnjit__canonical {
    struct dnnjit_graph graph;
    dnnjit__group_t group;
    dnnjit__partition_t partition;
    dnnjit_tensor_t *real; /* real[id - 1]: the graph's id of canonical tensor id */
    char (*names)[24];     /* the canonical names: nodes, tensors, then the graph's "" */
    /* XXH3-128 over everything an engine can read from the canonical group: every field of
     * its graph, nodes, tensors and group, and the handle's description. Equal prints mean
     * equal inputs to the engines, so what they make of one group holds for the other. */
    dnnjit__jit_key_t print;
} dnnjit__canonical_t;

/* Fills *c from group `grp` of graph g (validated and partitioned); OUT_OF_MEMORY leaves
 * nothing to free. */
dnnjit_status_t dnnjit__canonical_make(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit__canonical_t *c);
void dnnjit__canonical_free(dnnjit__canonical_t *c);

/* What a group's ranking and generation produce, remembered per print for the process
 * (bounded; what does not fit is simply made again). `what` says which product, so that
 * the key is the print together with it (a mode and architecture, an engine and knob). */
bool dnnjit__memo_get(dnnjit__jit_key_t print, const void *what, size_t what_size, void **data, size_t *size);
void dnnjit__memo_put(dnnjit__jit_key_t print, const void *what, size_t what_size, const void *data, size_t size);

/* Rewrites the tensor ids of a kernel generated from the canonical group (its argument
 * slots) into the graph's ids. */
void dnnjit__canonical_unmap(const dnnjit__canonical_t *c, dnnjit__kernel_t *k);

#endif
