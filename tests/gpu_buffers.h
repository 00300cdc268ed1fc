/* Device buffers for every tensor of a graph, for GPU tests that drive execute themselves
 * (autotune, CUDA-graph capture): random inputs, poisoned outputs, and the comparison of
 * what the device wrote with the reference executor. Header-only, used by gpu-*.c; include
 * it first (jit-test.h picks the POSIX level). */
#ifndef DNNJIT_TEST_GPU_BUFFERS_H
#define DNNJIT_TEST_GPU_BUFFERS_H

#include "jit-test.h"

#include "gpu_util.h"
#include "layout.h"

#include "jit/jit.h"

#include <math.h>
#include <stdlib.h>

typedef struct gb_tensor {
    dnnjit_tensor_info_t info;
    size_t bytes;
    void *host;     /* inputs: the data sent; outputs: the reference result */
    void *readback; /* outputs: what the device wrote */
    dnnjit__cu_deviceptr_t device;
} gb_tensor_t;

typedef struct gb_set {
    gb_tensor_t *t;
    size_t n;
    dnnjit_variant_t *device_pack, *host_pack;
    dnnjit__cu_deviceptr_t workspace;
    uint64_t rng;
} gb_set_t;

#define GB_CU(call) JT_OK(dnnjit__cu_check((call), #call))

/* Allocates a buffer for every tensor with memory, and the workspace. Pass-by-value
 * scalars live on the host (a positive value, fixed for the set's life). */
static inline void gb_alloc(dnnjit_graph_t g, gb_set_t *s)
{
    int64_t count, ws;
    TU_OK(dnnjit_graph_get_tensor_count(g, &count));
    TU_OK(dnnjit_graph_get_workspace_size(g, &ws));
    *s = (gb_set_t){.t = calloc((size_t)count, sizeof *s->t),
                    .device_pack = calloc((size_t)count, sizeof *s->device_pack),
                    .host_pack = calloc((size_t)count, sizeof *s->host_pack),
                    .rng = 0x2545f4914f6cdd1dull};
    assert_true(s->t && s->device_pack && s->host_pack);
    for (dnnjit_tensor_t id = 1; id <= (dnnjit_tensor_t)count; id++) {
        gb_tensor_t *b = &s->t[s->n];
        TU_OK(dnnjit_tensor_get_info(g, id, &b->info));
        if (b->info.is_virtual || b->info.has_value)
            continue;
        b->bytes = (size_t)layout_span(&b->info) * dnnjit_data_type_size(b->info.data_type);
        b->host = malloc(b->bytes);
        b->readback = malloc(b->bytes);
        assert_true(b->host && b->readback);
        s->host_pack[s->n] = (dnnjit_variant_t){b->info.uid, b->host};
        if (b->info.is_pass_by_value) {
            dnnjit_element_store(b->info.data_type, b->host, 0, 0.5 + layout_uniform(&s->rng));
            s->device_pack[s->n] = s->host_pack[s->n];
        } else {
            GB_CU(dnnjit__cuda()->cuMemAlloc(&b->device, b->bytes));
            s->device_pack[s->n] = (dnnjit_variant_t){b->info.uid, (void *)(uintptr_t)b->device};
        }
        s->n++;
    }
    if (ws)
        GB_CU(dnnjit__cuda()->cuMemAlloc(&s->workspace, (size_t)ws));
}

static inline void *gb_workspace(const gb_set_t *s)
{
    return (void *)(uintptr_t)s->workspace;
}

/* New random inputs in [lo, hi) and NaN in every output, on the device; returns once the
 * copies are complete. */
static inline void gb_fill(gb_set_t *s, double lo, double hi)
{
    for (size_t i = 0; i < s->n; i++) {
        gb_tensor_t *b = &s->t[i];
        if (b->info.is_pass_by_value)
            continue;
        bool output = b->info.producer >= 0;
        for (int64_t e = 0; e < layout_span(&b->info); e++)
            dnnjit_element_store(b->info.data_type, b->host, e, output ? NAN : lo + (hi - lo) * layout_uniform(&s->rng));
        GB_CU(dnnjit__cuda()->cuMemcpyHtoD(b->device, b->host, b->bytes));
    }
    /* A copy from pageable memory may still be in flight on the legacy stream. */
    GB_CU(dnnjit__cuda()->cuStreamSynchronize(NULL));
}

/* Reads the outputs back into their `readback` (after the caller synchronized) and runs
 * the reference on the same inputs into their `host`. */
static inline void gb_reference(dnnjit_graph_t g, gb_set_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->t[i].info.producer >= 0)
            GB_CU(dnnjit__cuda()->cuMemcpyDtoH(s->t[i].readback, s->t[i].device, s->t[i].bytes));
    TU_OK(dnnjit_graph_execute_reference(g, s->host_pack, s->n));
}

/* gb_reference, then the largest ||out - ref|| / ||ref|| over the outputs (NaN if any
 * element is NaN). */
static inline double gb_error(dnnjit_graph_t g, gb_set_t *s)
{
    gb_reference(g, s);
    double worst = 0;
    for (size_t i = 0; i < s->n; i++) {
        const gb_tensor_t *b = &s->t[i];
        if (b->info.producer < 0)
            continue;
        double diff = 0, norm = 0;
        for (int64_t e = 0; e < layout_numel(&b->info); e++) {
            int64_t at = layout_offset(&b->info, e);
            double got = dnnjit_element_load(b->info.data_type, b->readback, at);
            double want = dnnjit_element_load(b->info.data_type, b->host, at);
            diff += (got - want) * (got - want);
            norm += want * want;
        }
        double err = norm > 0 ? sqrt(diff / norm) : sqrt(diff);
        worst = isnan(err) || err > worst ? err : worst;
    }
    return worst;
}

/* Builds the first plan of mode A whose name holds `fragment`, or (NULL) the heuristics'
 * choice. */
static inline void gb_build(dnnjit_graph_t g, const char *fragment)
{
    const dnnjit_heur_mode_t mode_a = DNNJIT_HEUR_MODE_A;
    if (!fragment) {
        TU_OK(dnnjit_graph_build(g, &mode_a, 1));
        return;
    }
    int64_t count, index = -1;
    TU_OK(dnnjit_graph_create_execution_plans(g, &mode_a, 1));
    TU_OK(dnnjit_graph_get_plan_count(g, &count));
    for (int64_t i = 0; i < count && index < 0; i++) {
        char *name;
        TU_OK(dnnjit_graph_get_plan_name(g, i, &name));
        index = strstr(name, fragment) ? i : -1;
        dnnjit_free(name);
    }
    if (index < 0)
        fail_msg("no plan of mode A has \"%s\" in its name", fragment);
    TU_OK(dnnjit_graph_build_plan_at_index(g, index));
}

static inline void gb_free(gb_set_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->t[i].device)
            GB_CU(dnnjit__cuda()->cuMemFree(s->t[i].device));
        free(s->t[i].host);
        free(s->t[i].readback);
    }
    if (s->workspace)
        GB_CU(dnnjit__cuda()->cuMemFree(s->workspace));
    free(s->t);
    free(s->device_pack);
    free(s->host_pack);
    *s = (gb_set_t){0};
}

#endif
