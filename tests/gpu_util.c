#include "gpu_util.h"

#include "gpu.h"

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

/* The program's name without its folder, for messages and cmocka's group name. */
static const char *program_name(int argc, char **argv)
{
    if (argc < 1 || !argv[0])
        return "gpu test";
    const char *slash = strrchr(argv[0], '/');
    return slash ? slash + 1 : argv[0];
}

static void print_usage(const char *program, const struct CMUnitTest *tests, size_t count)
{
    fprintf(stderr, "usage: %s [CASE]\nits cases:\n", program);
    for (size_t i = 0; i < count; i++)
        fprintf(stderr, "  %s\n", tests[i].name);
}

int tu_gpu_main(const struct CMUnitTest *tests, size_t count, int argc, char **argv, bool (*device_ready)(void))
{
    const char *program = program_name(argc, argv);
    const char *only = argc > 1 ? argv[1] : NULL;
    bool known = !only;
    for (size_t i = 0; i < count && !known; i++)
        known = strcmp(tests[i].name, only) == 0;
    if (argc > 2 || !known) {
        if (!known)
            fprintf(stderr, "%s: no case is named \"%s\"\n", program, only);
        print_usage(program, tests, count);
        return 2;
    }
    if (!device_ready())
        return 77;
    /* The names are plain identifiers, so cmocka's glob pattern matches that case alone. */
    if (only)
        cmocka_set_test_filter(only);
    return _cmocka_run_group_tests(program, tests, count, NULL, NULL);
}

dnnjit_graph_t tu_gpu_graph(dnnjit_data_type_t io_type)
{
    return tu_graph_on(device_handle, "gpu-test", io_type, DNNJIT_DATA_TYPE_FLOAT);
}

dnnjit_graph_t tu_gpu_matmul_graph(dnnjit_data_type_t io_type, int64_t batch, int64_t m, int64_t k, int64_t n)
{
    dnnjit_graph_t g = tu_gpu_graph(io_type);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(batch, m, k), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(batch, k, n), NULL, 0);
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    return g;
}

dnnjit_tensor_t tu_stats_tensor(dnnjit_graph_t g, const char *name, int64_t rows)
{
    return tu_tensor(g, name, 2, TU_DIMS(rows, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
}

dnnjit_graph_t tu_norm_backward_graph(dnnjit_data_type_t io, int64_t rows, int64_t cols, bool rms, bool dbias,
                                      char *label, size_t label_size)
{
    dnnjit_graph_t g = tu_gpu_graph(io);
    dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(rows, cols), NULL, 0);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(rows, cols), NULL, 0);
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, cols), NULL, 0);
    dnnjit_tensor_t inv = tu_stats_tensor(g, "inv", rows), dx, ds, db = 0;
    if (rms) {
        TU_OK(dnnjit_graph_rmsnorm_backward(g, dy, x, scale, inv, NULL, &dx, &ds, dbias ? &db : NULL));
    } else {
        dnnjit_tensor_t mean = tu_stats_tensor(g, "mean", rows);
        TU_OK(dnnjit_graph_layernorm_backward(g, dy, x, scale, mean, inv, NULL, &dx, &ds, dbias ? &db : NULL));
    }
    tu_output(g, dx);
    tu_output(g, ds);
    tu_output(g, db);
    snprintf(label, label_size, "%s backward%s %s %lldx%lld", rms ? "rmsnorm" : "layernorm", dbias ? " +dbias" : "",
             dnnjit_data_type_name(io), (long long)rows, (long long)cols);
    return g;
}

dnnjit_graph_t tu_reduction_graph(dnnjit_data_type_t io, int64_t rows, int64_t cols, const int64_t *stride,
                                  bool columns, dnnjit_reduction_mode_t mode, char *label, size_t label_size)
{
    dnnjit_graph_t g = tu_gpu_graph(io);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(rows, cols), stride, 0), y;
    TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.mode = mode, .axes = columns ? 1 : 2}, &y));
    tu_output(g, y);
    snprintf(label, label_size, "%sreduction %s %s %lldx%lld%s", columns ? "column " : "",
             dnnjit_reduction_mode_name(mode), dnnjit_data_type_name(io), (long long)rows, (long long)cols,
             stride ? " strided" : "");
    return g;
}

double tu_tolerance(dnnjit_data_type_t io_type)
{
    return io_type == DNNJIT_DATA_TYPE_FLOAT || io_type == DNNJIT_DATA_TYPE_DOUBLE ? 1e-5 : 1e-2;
}

static void run_plan(dnnjit_graph_t g, int64_t plan, double lo, double hi, double tol, const char *label)
{
    static uint64_t rng = 0x9e3779b97f4a7c15ull;
    char *name = NULL;
    TU_OK(dnnjit_graph_get_plan_name(g, plan, &name));
    printf("  %-28s plan %s\n", label, name);
    gpu_run_result_t r;
    TU_OK(gpu_run_and_check(g, &rng, lo, hi, true, 0, &r));
    if (!(r.max_rel_error < tol))
        fail_msg("%s: plan %s: relative error %g exceeds %g", label, name, r.max_rel_error, tol);
    dnnjit_free(name);
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

void tu_gemm_epilogue(dnnjit_graph_t g, dnnjit_tensor_t y, tu_gemm_epilogue_t e, int64_t batch, int64_t m, int64_t n)
{
    if (e == TU_BIAS_RELU) {
        dnnjit_tensor_t bias = tu_tensor(g, "bias", 3, TU_DIMS(1, 1, n), NULL, 0);
        TU_OK(dnnjit_graph_bias(g, "bias", y, bias, &y));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_RELU_FWD}, y, 0, 0, &y));
    } else if (e == TU_ROW_BIAS_RESIDUAL) {
        dnnjit_tensor_t bias = tu_tensor(g, "row_bias", 3, TU_DIMS(1, m, 1), NULL, 0);
        dnnjit_tensor_t residual = tu_tensor(g, "residual", 3, TU_DIMS(batch, m, n), NULL, 0);
        TU_OK(dnnjit_graph_bias(g, "bias", y, bias, &y));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, y, residual, 0, &y));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_TANH_FWD}, y, 0, 0, &y));
    } else if (e == TU_SCALE_CAST) {
        dnnjit_tensor_t alpha = tu_tensor(g, "alpha", 3, TU_DIMS(1, 1, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, y, alpha, 0, &y));
        TU_OK(dnnjit_tensor_set_data_type(g, y, DNNJIT_DATA_TYPE_HALF));
    }
    TU_OK(dnnjit_tensor_set_output(g, y, true));
}
