#include "gpu_util.h"

#include "jit/jit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dnnjit_handle_t device_handle;

bool tu_gpu_available(void)
{
    /* Keep the per-case lines in order with cmocka's own output on stderr. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!device_handle && dnnjit_handle_create(&device_handle))
        return false;
    char arch[32];
    bool has_device = false;
    dnnjit_handle_get_arch(device_handle, arch, sizeof arch, &has_device);
    if (!has_device)
        printf("skipped: no GPU can execute here (dnnjit_handle_create found none)\n");
    else
        printf("GPU architecture: %s\n", arch);
    return has_device;
}

dnnjit_graph_t tu_gpu_graph(dnnjit_data_type_t io_type)
{
    dnnjit_graph_t g = NULL;
    TU_OK(dnnjit_graph_create(device_handle,
                              &(dnnjit_graph_attr_t){.name = "gpu-test",
                                                     .io_data_type = io_type,
                                                     .intermediate_data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                     .compute_data_type = DNNJIT_DATA_TYPE_FLOAT},
                              &g));
    return g;
}

double tu_tolerance(dnnjit_data_type_t io_type)
{
    return io_type == DNNJIT_DATA_TYPE_FLOAT || io_type == DNNJIT_DATA_TYPE_DOUBLE ? 1e-5 : 1e-2;
}

typedef struct buffer {
    dnnjit_tensor_info_t info;
    size_t bytes;
    void *host;      /* inputs: the random data; outputs: the reference result */
    void *readback;  /* outputs: what the device wrote */
    dnnjit__cu_deviceptr_t device;
} buffer_t;

static void cu_ok(dnnjit__cu_result_t r, const char *what)
{
    if (r)
        fail_msg("%s failed with CUresult %d", what, r);
}

/* ||a - b|| / ||b|| over the elements of an output; NaN anywhere gives NaN. */
static double relative_error(const buffer_t *b)
{
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < tu_numel(&b->info); i++) {
        int64_t off = tu_offset(&b->info, i);
        double got = dnnjit_element_load(b->info.data_type, b->readback, off);
        double want = dnnjit_element_load(b->info.data_type, b->host, off);
        if (isnan(got) || isnan(want))
            return NAN;
        diff += (got - want) * (got - want);
        norm += want * want;
    }
    return norm > 0 ? sqrt(diff / norm) : sqrt(diff);
}

static void run_plan(dnnjit_graph_t g, int64_t plan, double lo, double hi, double tol, const char *label)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    int64_t count;
    TU_OK(dnnjit_graph_get_tensor_count(g, &count));
    buffer_t *bufs = calloc((size_t)count, sizeof *bufs);
    dnnjit_variant_t *host_pack = calloc((size_t)count, sizeof *host_pack);
    dnnjit_variant_t *dev_pack = calloc((size_t)count, sizeof *dev_pack);
    assert_non_null(bufs);
    size_t n = 0;
    for (dnnjit_tensor_t id = 1; id <= (dnnjit_tensor_t)count; id++) {
        buffer_t *b = &bufs[n];
        TU_OK(dnnjit_tensor_get_info(g, id, &b->info));
        if (b->info.is_virtual)
            continue;
        bool output = b->info.producer >= 0;
        b->host = output ? tu_poison_buffer(g, id) : tu_random_buffer(g, id, lo, hi);
        b->bytes = (size_t)tu_span(&b->info) * dnnjit_data_type_size(b->info.data_type);
        cu_ok(cu->cuMemAlloc(&b->device, b->bytes), "cuMemAlloc");
        cu_ok(cu->cuMemcpyHtoD(b->device, b->host, b->bytes), "cuMemcpyHtoD");
        host_pack[n] = (dnnjit_variant_t){b->info.uid, b->host};
        dev_pack[n] = (dnnjit_variant_t){b->info.uid, (void *)(uintptr_t)b->device};
        n++;
    }
    int64_t ws_size;
    TU_OK(dnnjit_graph_get_workspace_size(g, &ws_size));
    dnnjit__cu_deviceptr_t ws = 0;
    if (ws_size)
        cu_ok(cu->cuMemAlloc(&ws, (size_t)ws_size), "cuMemAlloc workspace");
    TU_OK(dnnjit_graph_execute(g, dev_pack, n, (void *)(uintptr_t)ws, NULL));
    cu_ok(cu->cuStreamSynchronize(NULL), "cuStreamSynchronize");
    TU_OK(dnnjit_graph_execute_reference(g, host_pack, n));
    char *name = NULL;
    TU_OK(dnnjit_graph_get_plan_name(g, plan, &name));
    for (size_t i = 0; i < n; i++) {
        buffer_t *b = &bufs[i];
        if (b->info.producer < 0)
            continue;
        b->readback = malloc(b->bytes);
        cu_ok(cu->cuMemcpyDtoH(b->readback, b->device, b->bytes), "cuMemcpyDtoH");
        double err = relative_error(b);
        printf("  %-28s plan %-28s output %-10s rel err %.3g\n", label, name, b->info.name, err);
        if (!(err < tol))
            fail_msg("%s: plan %s: output \"%s\" relative error %g exceeds %g", label, name, b->info.name, err, tol);
    }
    dnnjit_free(name);
    for (size_t i = 0; i < n; i++) {
        cu->cuMemFree(bufs[i].device);
        free(bufs[i].host);
        free(bufs[i].readback);
    }
    if (ws)
        cu->cuMemFree(ws);
    free(bufs);
    free(host_pack);
    free(dev_pack);
}

void tu_gpu_check(dnnjit_graph_t g, const dnnjit_heur_mode_t *modes, int mode_count, double lo, double hi, double tol,
                  const char *label)
{
    TU_OK(dnnjit_graph_build(g, modes, mode_count));
    int64_t plans;
    TU_OK(dnnjit_graph_get_plan_count(g, &plans));
    for (int64_t p = 0; p < plans; p++) {
        TU_OK(dnnjit_graph_build_plan_at_index(g, p));
        run_plan(g, p, lo, hi, tol, label);
    }
}
