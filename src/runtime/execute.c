/* Execution of the chosen plan: map the variant pack onto each kernel's argument slots and
 * launch the kernels in group order on the caller's stream. Nothing is allocated. */
#include "runtime/runtime.h"

#include "engine/plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The kernels' DjArgs (src/kernels/common.cuh), with the same layout. */
typedef struct dj_args {
    void *ptr[DNNJIT__MAX_KERNEL_TENSORS];
    float scalar[DNNJIT__MAX_KERNEL_SCALARS];
} dj_args_t;

/* dj_zero_scratch's launch (src/kernels/zero_scratch.cuh): its block size, and at most this
 * many blocks, each looping over the counters (a few thousand at most). */
enum { ZERO_BLOCK = 256, ZERO_GRID = 64 };

static const dnnjit_variant_t *find_uid(const dnnjit_variant_t *pack, size_t n, int64_t uid)
{
    for (size_t i = 0; i < n; i++)
        if (pack[i].uid == uid)
            return &pack[i];
    return NULL;
}

/* Checks each entry of the pack, which needs no device: it names a tensor of the graph,
 * only once, with a pointer that is not NULL and, for a tensor in memory, aligned to the
 * tensor's elements. */
static dnnjit_status_t check_entries(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dnnjit_tensor_t id;
        if (dnnjit_graph_find_tensor_by_uid(g, pack[i].uid, &id))
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "execute: variant pack entry %zu has uid %lld, which no tensor of graph \"%s\" has",
                                i, (long long)pack[i].uid, g->name);
        const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
        if (find_uid(pack, i, pack[i].uid))
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "execute: uid %lld (tensor \"%s\") appears twice in the variant pack",
                                (long long)pack[i].uid, t->name);
        /* The tensor is named only on failure: formatting it on every call took a sizeable
         * part of execute's host time. */
        if (!pack[i].ptr)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                                "execute: tensor \"%s\" (uid %lld) has a NULL pointer in the variant pack", t->name,
                                (long long)t->uid);
        if (t->is_virtual || t->is_pass_by_value)
            continue; /* no buffer of its own, or a host pointer to one element */
        size_t align = dnnjit_data_type_size(t->resolved_type);
        if ((uintptr_t)pack[i].ptr % align)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                                "execute: tensor \"%s\" (uid %lld): pointer %p is not aligned to its %zu-byte elements",
                                t->name, (long long)t->uid, pack[i].ptr, align);
    }
    return DNNJIT_STATUS_SUCCESS;
}

/* Checks, for a run on the device, that every tensor that needs memory has a buffer, that
 * the buffers are device memory, and that pass-by-value scalars are not. */
static dnnjit_status_t check_buffers(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n)
{
    const void **checked = g->jit->device_checked;
    for (int64_t i = 0; i < g->tensor_count; i++) {
        const dnnjit__tensor_t *t = &g->tensors[i];
        if (t->is_virtual || t->has_value)
            continue;
        const dnnjit_variant_t *v = find_uid(pack, n, t->uid);
        if (v && checked[i] == v->ptr)
            continue;
        char who[300];
        snprintf(who, sizeof who, "tensor \"%s\" (uid %lld)", t->name, (long long)t->uid);
        if (!v)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "execute: %s has no buffer in the variant pack", who);
        dnnjit_status_t s = t->is_pass_by_value ? dnnjit__driver_check_host_pointer(v->ptr, who)
                                                : dnnjit__driver_check_device_pointer(v->ptr, who);
        if (s) {
            /* The check fails without a graph; the graph's own message must say it too. */
            char cause[DNNJIT__MSG_LEN];
            snprintf(cause, sizeof cause, "%s", dnnjit_last_error());
            return dnnjit__fail(g, s, "%s", cause);
        }
        checked[i] = v->ptr;
    }
    return DNNJIT_STATUS_SUCCESS;
}

/* What tensor map t of kernel k covers, for a message: the tensor, or the scratch (a copy
 * of an operand the kernel makes, which names no tensor). */
static const char *map_memory(dnnjit_graph_t g, const dnnjit__kernel_t *k, const dnnjit__tma_operand_t *t, char *buf,
                              size_t size)
{
    if (t->slot >= k->tensor_count)
        return "its scratch";
    const dnnjit__tensor_t *tensor = dnnjit__tensor(g, k->tensors[t->slot]);
    snprintf(buf, size, "tensor \"%s\" (uid %lld)", tensor->name, (long long)tensor->uid);
    return buf;
}

/* The tensor maps of kernel `gi` for the buffers in args, encoded unless the kernel's last
 * launch had the same addresses. */
static dnnjit_status_t encode_tensor_maps(dnnjit_graph_t g, int64_t gi, dnnjit__built_kernel_t *b, const dj_args_t *args,
                                          dnnjit__cu_tensor_map_t *maps)
{
    const dnnjit__kernel_t *k = &b->kernel;
    for (int i = 0; i < k->tma_count; i++) {
        const dnnjit__tma_operand_t *t = &k->tma[i];
        char *base = args->ptr[t->slot], what[300];
        void *address = base ? base + t->offset : NULL;
        if (address && address == b->tma_address[i]) {
            memcpy(&maps[i], b->tma_map[i], sizeof maps[i]);
            continue;
        }
        /* The scratch is 256-byte aligned and its maps' offsets 16-byte multiples: only a
         * tensor's buffer can fail this. */
        if ((uintptr_t)address % 16)
            return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                                "execute: kernel %lld (%s) loads %s with TMA, which needs a 16-byte aligned address, but "
                                "it is at %p (build a plan of another engine for such buffers)",
                                (long long)gi, k->entry, map_memory(g, k, t, what, sizeof what), address);
        if (!dnnjit__cuda()->cuTensorMapEncodeTiled)
            return dnnjit__fail(g, DNNJIT_STATUS_NOT_SUPPORTED,
                                "execute: kernel %lld (%s) needs cuTensorMapEncodeTiled, which this CUDA driver lacks "
                                "(CUDA 12.0 or newer is needed)", (long long)gi, k->entry);
        static const uint32_t ones[DNNJIT__MAX_TMA_RANK] = {1, 1, 1, 1, 1};
        /* No interleave, 256-byte L2 promotion, out-of-bounds elements read as zeros. */
        dnnjit_status_t s = dnnjit__cu_check(dnnjit__cuda()->cuTensorMapEncodeTiled(&maps[i], t->dtype, (uint32_t)t->rank,
                                                                                     address, t->dims, t->strides, t->box,
                                                                                     ones, 0, t->swizzle, 3, 0),
                                             "cuTensorMapEncodeTiled");
        if (s) {
            char cause[DNNJIT__MSG_LEN];
            snprintf(cause, sizeof cause, "%s", dnnjit_last_error());
            return dnnjit__fail(g, s, "execute: kernel %lld (%s): the tensor map of %s: %s", (long long)gi, k->entry,
                                map_memory(g, k, t, what, sizeof what), cause);
        }
        memcpy(b->tma_map[i], &maps[i], sizeof maps[i]);
        b->tma_address[i] = address;
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
    /* What can be checked without a device is, so that a caller without one still learns
     * that the pack is wrong. */
    dnnjit_status_t s = check_entries(g, pack, n);
    if (s)
        return s;
    int64_t scratch_offset, workspace_size = dnnjit__workspace_size(g->jit, &scratch_offset);
    if (workspace_size && !workspace)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "execute: graph \"%s\" needs %lld bytes of workspace but none was given",
                            g->name, (long long)workspace_size);
    /* Kernels read the workspace 16 bytes at a time (split-K and column partial sums, TMA
     * copies of operands), which faults on a lesser alignment. */
    if (workspace_size && (uintptr_t)workspace % 16)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                            "execute: graph \"%s\": the workspace %p is not aligned to 16 bytes (cudaMalloc's memory is)",
                            g->name, workspace);
    if (!g->handle || !g->handle->has_device)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE, "execute: no GPU to run graph \"%s\" on: %s", g->name,
                            g->handle ? g->handle->no_device_reason : "the graph has no handle");
    /* A thread that never touched CUDA has no current context: use the handle's device's
     * primary context, as the thread that created the handle does. */
    dnnjit__cu_context_t current = NULL;
    s = dnnjit__cu_check(dnnjit__cuda()->cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    if (!s && !current)
        s = dnnjit__driver_use_device(0);
    if (s) {
        char cause[DNNJIT__MSG_LEN];
        snprintf(cause, sizeof cause, "%s", dnnjit_last_error());
        return dnnjit__fail(g, s, "execute: graph \"%s\": %s", g->name, cause);
    }
    if ((s = check_buffers(g, pack, n)))
        return s;
    dnnjit__plan_t *plan = &g->jit->plans[g->jit->chosen];
    /* Every kernel compiled for sm_90 or later waits for the one before it in the stream
     * (dj_grid_dependency or dj_grid_wait, and dj_zero_scratch), so it may be launched
     * before that one has finished: its blocks then start as the other's leave the SMs (the
     * sm_90 GEMM lets the next kernel be scheduled only as its own blocks exit, see
     * dj_gemm_sm90). A cooperative kernel is launched without it (its blocks must all be
     * resident at once, which the driver checks at the launch). */
    const unsigned dependent = g->handle->launch_flags;
    for (int64_t gi = 0; gi < g->jit->partition.group_count; gi++) {
        dnnjit__built_kernel_t *b = &plan->kernels[gi];
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
            if (k->scratch_zero_bytes) {
                long long words = k->scratch_zero_bytes / 4;
                void *zero_params[] = {&args.ptr[k->scratch_slot], &words};
                unsigned blocks = (unsigned)((words + ZERO_BLOCK - 1) / ZERO_BLOCK);
                s = dnnjit__driver_launch((dnnjit__cu_function_t)b->zero_function,
                                          (unsigned[]){blocks < ZERO_GRID ? blocks : ZERO_GRID, 1, 1},
                                          (unsigned[]){ZERO_BLOCK, 1, 1}, NULL, dependent, 0,
                                          (dnnjit__cu_stream_t)stream, zero_params);
            }
        }
        dnnjit__cu_tensor_map_t maps[DNNJIT__MAX_KERNEL_TMAS];
        void *params[1 + DNNJIT__MAX_KERNEL_TMAS] = {&args};
        for (int i = 0; i < k->tma_count; i++)
            params[1 + i] = &maps[i];
        /* Its messages name the kernel already. */
        if (!s && k->tma_count && (s = encode_tensor_maps(g, gi, b, &args, maps)))
            return s;
        if (!s)
            s = dnnjit__driver_launch((dnnjit__cu_function_t)b->function, b->grid, k->block, NULL,
                                      k->cooperative ? DNNJIT__LAUNCH_COOPERATIVE : dependent, k->shared_bytes,
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
