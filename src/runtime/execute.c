/* Execution of the chosen plan: map the variant pack onto each kernel's argument slots and
 * launch the kernels in group order on the caller's stream. Nothing is allocated. */
#include "runtime/runtime.h"

#include "engine/plan.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The kernels' DjArgs (src/kernels/common.cuh), with the same layout. */
typedef struct dj_args {
    void *ptr[DNNJIT__MAX_KERNEL_TENSORS];
    float scalar[DNNJIT__MAX_KERNEL_SCALARS];
} dj_args_t;

static const dnnjit_variant_t *find_uid(const dnnjit_variant_t *pack, size_t n, int64_t uid)
{
    for (size_t i = 0; i < n; i++)
        if (pack[i].uid == uid)
            return &pack[i];
    return NULL;
}

/* Checks the whole pack before anything is launched: every entry names a tensor of the
 * graph once, and every tensor that needs memory has a usable buffer. */
static dnnjit_status_t check_pack(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dnnjit_tensor_t id;
        if (dnnjit_graph_find_tensor_by_uid(g, pack[i].uid, &id))
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "execute: variant pack entry %zu has uid %lld, which no tensor of graph \"%s\" has",
                                i, (long long)pack[i].uid, g->name);
        if (find_uid(pack, i, pack[i].uid))
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "execute: uid %lld (tensor \"%s\") appears twice in the variant pack",
                                (long long)pack[i].uid, dnnjit__tensor(g, id)->name);
    }
    for (int64_t i = 0; i < g->tensor_count; i++) {
        const dnnjit__tensor_t *t = &g->tensors[i];
        if (t->is_virtual || t->has_value)
            continue;
        const dnnjit_variant_t *v = find_uid(pack, n, t->uid);
        char who[300];
        snprintf(who, sizeof who, "tensor \"%s\" (uid %lld)", t->name, (long long)t->uid);
        if (!v || !v->ptr)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "execute: %s has %s in the variant pack", who,
                                v ? "a NULL pointer" : "no buffer");
        if (t->is_pass_by_value)
            continue; /* a host pointer to one element */
        size_t align = dnnjit_data_type_size(t->resolved_type);
        if ((uintptr_t)v->ptr % align)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "execute: %s: pointer %p is not aligned to its %zu-byte elements",
                                who, v->ptr, align);
        dnnjit_status_t s = dnnjit__driver_check_device_pointer(v->ptr, who);
        if (s)
            return s;
    }
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit_graph_execute(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n, void *workspace,
                                     void *stream)
{
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_execute: graph is NULL");
    if (!pack && n)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "execute: the variant pack is NULL but n is %zu", n);
    if (!g->jit || g->jit->chosen < 0)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE, "execute: graph \"%s\" has no built plan (call build first)",
                            g->name);
    if (!g->handle || !g->handle->has_device)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE, "execute: no GPU to run graph \"%s\" on: %s", g->name,
                            g->handle ? g->handle->no_device_reason : "the graph has no handle");
    int64_t scratch_offset, workspace_size = dnnjit__workspace_size(g->jit, &scratch_offset);
    if (workspace_size && !workspace)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "execute: graph \"%s\" needs %lld bytes of workspace but none was given",
                            g->name, (long long)workspace_size);
    dnnjit_status_t s = check_pack(g, pack, n);
    if (s)
        return s;
    const dnnjit__plan_t *plan = &g->jit->plans[g->jit->chosen];
    for (int64_t gi = 0; gi < g->jit->partition.group_count; gi++) {
        const dnnjit__built_kernel_t *b = &plan->kernels[gi];
        const dnnjit__kernel_t *k = &b->kernel;
        dj_args_t args = {{0}, {0}};
        for (int i = 0; i < k->tensor_count; i++) {
            const dnnjit__tensor_t *t = dnnjit__tensor(g, k->tensors[i]);
            int64_t offset = g->jit->partition.workspace_offset[k->tensors[i] - 1];
            args.ptr[i] = offset >= 0 ? (char *)workspace + offset : find_uid(pack, n, t->uid)->ptr;
        }
        for (int i = 0; i < k->scalar_count; i++) {
            const dnnjit__tensor_t *t = dnnjit__tensor(g, k->scalars[i]);
            args.scalar[i] = (float)dnnjit_element_load(t->resolved_type, find_uid(pack, n, t->uid)->ptr, 0);
        }
        if (k->scratch_bytes) {
            args.ptr[k->scratch_slot] = (char *)workspace + scratch_offset;
            if (k->scratch_zero_bytes)
                s = dnnjit__cu_check(dnnjit__cuda()->cuMemsetD32Async((dnnjit__cu_deviceptr_t)(uintptr_t)args.ptr[k->scratch_slot],
                                                                      0, (size_t)k->scratch_zero_bytes / 4,
                                                                      (dnnjit__cu_stream_t)stream),
                                     "cuMemsetD32Async(split-K counters)");
        }
        void *params[] = {&args};
        if (!s)
            s = dnnjit__driver_launch((dnnjit__cu_function_t)b->function, k->grid, k->block, NULL, k->shared_bytes,
                                  (dnnjit__cu_stream_t)stream, params);
        if (s) {
            char cause[DNNJIT__MSG_LEN];
            snprintf(cause, sizeof cause, "%s", dnnjit_last_error());
            return dnnjit__fail(g, s, "execute: kernel %lld (%s) of graph \"%s\": %s", (long long)gi, k->entry, g->name,
                                cause);
        }
    }
    return DNNJIT_STATUS_SUCCESS;
}
