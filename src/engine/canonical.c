#include "engine/canonical.h"

#include "runtime/runtime.h"

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The print covers every field of these structures. A new field changes their size and
 * stops the build here: hash it in `print` below (and copy it in dnnjit__canonical_make),
 * then update the size. Checked on LP64 targets, where the sizes are known. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(dnnjit__tensor_t) == 200, "a tensor field is missing from canonical.c's print");
_Static_assert(sizeof(dnnjit__node_t) == 120, "a node field is missing from canonical.c's print");
_Static_assert(sizeof(dnnjit__group_t) == 64, "a group field is missing from canonical.c's print");
_Static_assert(sizeof(struct dnnjit_graph) == 2144, "a graph field is missing from canonical.c's print");
_Static_assert(sizeof(struct dnnjit_handle) == 792, "a handle field is missing from canonical.c's print");
#endif

static void put(XXH3_state_t *st, const void *data, size_t size)
{
    XXH3_128bits_update(st, data, size);
}

static void put_string(XXH3_state_t *st, const char *s)
{
    put(st, s, strlen(s) + 1);
}

/* Names are left out: the canonical ones follow from the positions, which are hashed. The
 * dims and strides past a tensor's rank are no part of it. */
static dnnjit__jit_key_t print(const dnnjit__canonical_t *c)
{
    const struct dnnjit_graph *g = &c->graph;
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    put_string(&st, "dnnjit canonical group 1");
    put(&st, &(int64_t[]){g->io_type, g->intermediate_type, g->compute_type, g->tensor_count, g->node_count,
                          g->validated, g->handle != NULL},
        7 * sizeof(int64_t));
    if (g->handle) {
        put_string(&st, g->handle->arch);
        put(&st, &g->handle->has_device, sizeof g->handle->has_device);
        put(&st, &g->handle->launch_flags, sizeof g->handle->launch_flags);
        put_string(&st, g->handle->device_name);
        put_string(&st, g->handle->no_device_reason);
    }
    for (int64_t i = 0; i < g->tensor_count; i++) {
        const dnnjit__tensor_t *t = &g->tensors[i];
        put(&st, &(int64_t[]){t->ndim, t->data_type, t->resolved_type, t->is_virtual, t->is_pass_by_value, t->has_value,
                              t->has_uid, t->uid, t->dims_set, t->strides_set, t->producer},
            11 * sizeof(int64_t));
        put(&st, &t->value, sizeof t->value);
        put(&st, t->dim, sizeof *t->dim * (size_t)t->ndim);
        put(&st, t->stride, sizeof *t->stride * (size_t)t->ndim);
    }
    for (int64_t i = 0; i < g->node_count; i++) {
        const dnnjit__node_t *n = &g->nodes[i];
        put(&st, &(int64_t[]){n->op, n->compute_type}, 2 * sizeof(int64_t));
        put(&st, n->in, sizeof n->in);
        put(&st, n->out, sizeof n->out);
        put(&st, &n->attr, sizeof n->attr);
    }
    const dnnjit__group_t *grp = &c->group;
    put(&st, &(int64_t[]){grp->kind, grp->first_node, grp->node_count, grp->input_count, grp->output_count},
        5 * sizeof(int64_t));
    put(&st, grp->nodes, sizeof *grp->nodes * (size_t)grp->node_count);
    put(&st, grp->inputs, sizeof *grp->inputs * (size_t)grp->input_count);
    put(&st, grp->outputs, sizeof *grp->outputs * (size_t)grp->output_count);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    return (dnnjit__jit_key_t){.low = h.low64, .high = h.high64};
}

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
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "build_operation_graph: out of memory restating a group");
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
    c->print = print(c);
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

/* ---- memo ---- */

typedef struct memo_entry {
    dnnjit__jit_key_t key;
    size_t size;
    struct memo_entry *next;
    unsigned char data[];
} memo_entry_t;

/* A chained table of MEMO_BUCKETS buckets, emptied whole when it would pass MEMO_BYTES:
 * rebuilding is cheap next to compiling, so no eviction order is worth keeping. */
enum { MEMO_BUCKETS = 1024, MEMO_BYTES = 64 << 20 };

static struct {
    pthread_mutex_t lock;
    memo_entry_t *buckets[MEMO_BUCKETS];
    size_t bytes;
} memo = {.lock = PTHREAD_MUTEX_INITIALIZER};

static dnnjit__jit_key_t memo_key(dnnjit__jit_key_t print, const void *what, size_t what_size)
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    put(&st, &print, sizeof print);
    put(&st, what, what_size);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    return (dnnjit__jit_key_t){.low = h.low64, .high = h.high64};
}

bool dnnjit__memo_get(dnnjit__jit_key_t print, const void *what, size_t what_size, void **data, size_t *size)
{
    dnnjit__jit_key_t key = memo_key(print, what, what_size);
    *data = NULL;
    pthread_mutex_lock(&memo.lock);
    for (const memo_entry_t *e = memo.buckets[key.low % MEMO_BUCKETS]; e; e = e->next)
        if (e->key.low == key.low && e->key.high == key.high) {
            if ((*data = malloc(e->size ? e->size : 1)) != NULL)
                memcpy(*data, e->data, e->size);
            *size = e->size;
            break;
        }
    pthread_mutex_unlock(&memo.lock);
    return *data != NULL;
}

void dnnjit__memo_put(dnnjit__jit_key_t print, const void *what, size_t what_size, const void *data, size_t size)
{
    dnnjit__jit_key_t key = memo_key(print, what, what_size);
    memo_entry_t *e = malloc(sizeof *e + size);
    if (!e)
        return;
    *e = (memo_entry_t){.key = key, .size = size};
    memcpy(e->data, data, size);
    memo_entry_t *dropped[MEMO_BUCKETS] = {0};
    pthread_mutex_lock(&memo.lock);
    memo_entry_t **bucket = &memo.buckets[key.low % MEMO_BUCKETS];
    bool present = false;
    for (const memo_entry_t *o = *bucket; o && !present; o = o->next)
        present = o->key.low == key.low && o->key.high == key.high;
    if (!present && memo.bytes + size > MEMO_BYTES) {
        memcpy(dropped, memo.buckets, sizeof dropped);
        memset(memo.buckets, 0, sizeof memo.buckets);
        memo.bytes = 0;
    }
    if (!present) {
        e->next = *bucket;
        *bucket = e;
        memo.bytes += size;
        e = NULL;
    }
    pthread_mutex_unlock(&memo.lock);
    free(e);
    for (size_t i = 0; i < MEMO_BUCKETS; i++)
        for (memo_entry_t *d = dropped[i], *next; d; d = next) {
            next = d->next;
            free(d);
        }
}
