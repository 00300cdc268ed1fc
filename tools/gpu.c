#define _POSIX_C_SOURCE 200809L

#include "gpu.h"
#include "layout.h"

#include "jit/jit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tensor_buffers {
    dnnjit_tensor_info_t info;
    size_t bytes;
    void *host;     /* inputs: the data sent; outputs: the reference result */
    void *readback; /* outputs: what the device wrote */
    dnnjit__cu_deviceptr_t device;
} tensor_buffers_t;

double gpu_tolerance(dnnjit_graph_t g)
{
    int64_t count;
    dnnjit_graph_get_tensor_count(g, &count);
    for (dnnjit_tensor_t id = 1; id <= (dnnjit_tensor_t)count; id++) {
        dnnjit_tensor_info_t t;
        dnnjit_tensor_get_info(g, id, &t);
        if (t.producer < 0 && dnnjit_data_type_size(t.data_type) <= 2 && t.data_type != DNNJIT_DATA_TYPE_BOOLEAN &&
            t.data_type != DNNJIT_DATA_TYPE_INT8)
            return 1e-2;
    }
    return 1e-5;
}

static double relative_error(const tensor_buffers_t *b)
{
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < layout_numel(&b->info); i++) {
        double got = dnnjit_element_load(b->info.data_type, b->readback, layout_offset(&b->info, i));
        double want = dnnjit_element_load(b->info.data_type, b->host, layout_offset(&b->info, i));
        if (isnan(got) || isnan(want))
            return NAN;
        diff += (got - want) * (got - want);
        norm += want * want;
    }
    return norm > 0 ? sqrt(diff / norm) : sqrt(diff);
}

/* 0, or NaN when an element of the output holds a NaN. */
static double nan_check(const tensor_buffers_t *b)
{
    for (int64_t i = 0; i < layout_numel(&b->info); i++)
        if (isnan(dnnjit_element_load(b->info.data_type, b->readback, layout_offset(&b->info, i))))
            return NAN;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static dnnjit_status_t time_calls(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n, void *ws, int calls,
                                  double *us)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    dnnjit__cu_event_t start = NULL, stop = NULL;
    double samples[9];
    dnnjit_status_t s = dnnjit__cu_check(cu->cuEventCreate(&start, 0), "cuEventCreate");
    if (!s)
        s = dnnjit__cu_check(cu->cuEventCreate(&stop, 0), "cuEventCreate");
    for (int i = 0; i < 5 && !s; i++)
        s = dnnjit_graph_execute(g, pack, n, ws, NULL);
    for (int r = 0; r < 9 && !s; r++) {
        s = dnnjit__cu_check(cu->cuEventRecord(start, NULL), "cuEventRecord");
        for (int i = 0; i < calls && !s; i++)
            s = dnnjit_graph_execute(g, pack, n, ws, NULL);
        if (!s)
            s = dnnjit__cu_check(cu->cuEventRecord(stop, NULL), "cuEventRecord");
        if (!s)
            s = dnnjit__cu_check(cu->cuEventSynchronize(stop), "cuEventSynchronize");
        float ms = 0;
        if (!s)
            s = dnnjit__cu_check(cu->cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
        samples[r] = ms * 1e3 / calls;
    }
    if (start)
        cu->cuEventDestroy(start);
    if (stop)
        cu->cuEventDestroy(stop);
    if (!s) {
        qsort(samples, 9, sizeof *samples, cmp_double);
        *us = samples[4];
    }
    return s;
}

dnnjit_status_t gpu_run_and_check(dnnjit_graph_t g, uint64_t *rng, double lo, double hi, bool reference, int calls,
                                  gpu_run_result_t *result)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    int64_t count, ws_size;
    dnnjit_graph_get_tensor_count(g, &count);
    dnnjit_status_t s = dnnjit_graph_get_workspace_size(g, &ws_size);
    if (s)
        return s;
    tensor_buffers_t *bufs = calloc((size_t)count, sizeof *bufs);
    dnnjit_variant_t *host_pack = calloc((size_t)count, sizeof *host_pack);
    dnnjit_variant_t *dev_pack = calloc((size_t)count, sizeof *dev_pack);
    dnnjit__cu_deviceptr_t ws = 0;
    size_t n = 0;
    if (!bufs || !host_pack || !dev_pack)
        s = DNNJIT_STATUS_OUT_OF_MEMORY;
    for (dnnjit_tensor_t id = 1; !s && id <= (dnnjit_tensor_t)count; id++) {
        tensor_buffers_t *b = &bufs[n];
        dnnjit_tensor_get_info(g, id, &b->info);
        if (b->info.is_virtual || b->info.has_value)
            continue;
        int64_t span = layout_span(&b->info);
        b->bytes = (size_t)span * dnnjit_data_type_size(b->info.data_type);
        b->host = malloc(b->bytes);
        b->readback = malloc(b->bytes);
        if (!b->host || !b->readback) {
            s = DNNJIT_STATUS_OUT_OF_MEMORY;
            break;
        }
        /* NaN in the outputs, and in the inputs' elements that are not the tensor's (the
         * padding between rows or batch entries), which a kernel may load but must not let
         * into its results. */
        bool is_output = b->info.producer >= 0;
        for (int64_t i = 0; i < span; i++)
            dnnjit_element_store(b->info.data_type, b->host, i, NAN);
        for (int64_t i = 0; i < layout_numel(&b->info) && !is_output; i++)
            dnnjit_element_store(b->info.data_type, b->host, layout_offset(&b->info, i),
                                 lo + (hi - lo) * layout_uniform(rng));
        host_pack[n] = (dnnjit_variant_t){b->info.uid, b->host};
        if (b->info.is_pass_by_value) {
            /* Scalars passed by value stay on the host, for both executors; kept positive
             * because they are mostly epsilons. */
            dnnjit_element_store(b->info.data_type, b->host, 0, fabs(dnnjit_element_load(b->info.data_type, b->host, 0)));
            dev_pack[n] = host_pack[n];
            n++;
            continue;
        }
        s = dnnjit__cu_check(cu->cuMemAlloc(&b->device, b->bytes), "cuMemAlloc");
        if (!s)
            s = dnnjit__cu_check(cu->cuMemcpyHtoD(b->device, b->host, b->bytes), "cuMemcpyHtoD");
        dev_pack[n] = (dnnjit_variant_t){b->info.uid, (void *)(uintptr_t)b->device};
        n++;
    }
    if (!s && ws_size)
        s = dnnjit__cu_check(cu->cuMemAlloc(&ws, (size_t)ws_size), "cuMemAlloc (workspace)");
    if (!s)
        s = dnnjit_graph_execute(g, dev_pack, n, (void *)(uintptr_t)ws, NULL);
    if (!s)
        s = dnnjit__cu_check(cu->cuStreamSynchronize(NULL), "cuStreamSynchronize");
    for (size_t i = 0; i < n && !s; i++)
        if (bufs[i].info.producer >= 0)
            s = dnnjit__cu_check(cu->cuMemcpyDtoH(bufs[i].readback, bufs[i].device, bufs[i].bytes), "cuMemcpyDtoH");
    if (!s && reference)
        s = dnnjit_graph_execute_reference(g, host_pack, n);
    result->max_rel_error = 0;
    for (size_t i = 0; i < n && !s; i++) {
        if (bufs[i].info.producer < 0)
            continue;
        double err = reference ? relative_error(&bufs[i]) : nan_check(&bufs[i]);
        if (reference)
            printf("  output \"%s\": relative error vs reference %.3g\n", bufs[i].info.name, err);
        else
            printf("  output \"%s\": %s\n", bufs[i].info.name, isnan(err) ? "holds NaN" : "no NaN");
        result->max_rel_error = isnan(err) || err > result->max_rel_error ? err : result->max_rel_error;
    }
    result->us_per_call = 0;
    if (!s && calls > 0)
        s = time_calls(g, dev_pack, n, (void *)(uintptr_t)ws, calls, &result->us_per_call);
    for (size_t i = 0; i < n; i++) {
        if (bufs[i].device)
            cu->cuMemFree(bufs[i].device);
        free(bufs[i].host);
        free(bufs[i].readback);
    }
    if (ws)
        cu->cuMemFree(ws);
    free(bufs);
    free(host_pack);
    free(dev_pack);
    return s;
}
