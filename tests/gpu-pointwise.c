/* GPU: pointwise graphs built, compiled, executed on the device and compared with the
 * float64 reference executor on fresh random data, with poisoned outputs. Skipped (77)
 * without a GPU. */
#include "gpu_buffers.h"

typedef struct pw_case {
    const char *label;
    int ndim;
    int64_t dim[4];
    dnnjit_data_type_t io;
} pw_case_t;

/* y = sigmoid(a + b * c) with c a scalar tensor and b broadcast along rows when 2-D. */
static void check_sigmoid_fma(const pw_case_t *pc, dnnjit_heur_mode_t mode)
{
    dnnjit_graph_t g = tu_gpu_graph(pc->io);
    int64_t bdim[4] = {1, 1, 1, 1};
    bdim[pc->ndim - 1] = pc->dim[pc->ndim - 1];
    dnnjit_tensor_t a = tu_tensor(g, "a", pc->ndim, pc->dim, NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", pc->ndim, pc->ndim == 1 ? pc->dim : bdim, NULL, 0);
    dnnjit_tensor_t c = tu_tensor(g, "c", 1, TU_DIMS(1), NULL, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t bc, s, y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, b, c, 0, &bc));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, a, bc, 0, &s));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SIGMOID_FWD}, s, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    tu_gpu_check(g, &mode, 1, -2.0, 2.0, tu_tolerance(pc->io), pc->label);
    dnnjit_graph_destroy(g);
}

static void sigmoid_fma_sizes_and_types(void **state)
{
    (void)state;
    static const pw_case_t cases[] = {
        {"1 float", 1, {1}, DNNJIT_DATA_TYPE_FLOAT},          {"7 half", 1, {7}, DNNJIT_DATA_TYPE_HALF},
        {"77x1000 bf16", 2, {77, 1000}, DNNJIT_DATA_TYPE_BFLOAT16}, {"4097 float", 1, {4097}, DNNJIT_DATA_TYPE_FLOAT},
        {"3x5x4097 half", 3, {3, 5, 4097}, DNNJIT_DATA_TYPE_HALF}, {"1000x1000 float", 2, {1000, 1000}, DNNJIT_DATA_TYPE_FLOAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int m = DNNJIT_HEUR_MODE_A; m <= DNNJIT_HEUR_MODE_B; m++)
            check_sigmoid_fma(&cases[i], (dnnjit_heur_mode_t)m);
}

/* Inputs in a range where the mode is defined (logs and roots of positives, no division
 * by numbers near zero). */
static bool needs_positive(dnnjit_pointwise_mode_t mode)
{
    switch (mode) {
    case DNNJIT_POINTWISE_DIV:
    case DNNJIT_POINTWISE_POW:
    case DNNJIT_POINTWISE_MOD:
    case DNNJIT_POINTWISE_SQRT:
    case DNNJIT_POINTWISE_RSQRT:
    case DNNJIT_POINTWISE_RECIPROCAL:
    case DNNJIT_POINTWISE_LOG:
        return true;
    default:
        return false;
    }
}

static void every_mode_float(void **state)
{
    (void)state;
    for (int mode = 0; mode < DNNJIT_POINTWISE_MODE_COUNT_; mode++) {
        dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_FLOAT);
        int arity = dnnjit_pointwise_mode_arity((dnnjit_pointwise_mode_t)mode);
        dnnjit_tensor_t in[3] = {0, 0, 0};
        static const char *names[3] = {"x0", "x1", "x2"};
        for (int i = 0; i < arity; i++)
            in[i] = tu_tensor(g, names[i], 2, TU_DIMS(33, 1000), NULL, 0);
        dnnjit_tensor_t y;
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = (dnnjit_pointwise_mode_t)mode,
                                                                   .relu_lower_clip_slope = 0.125},
                                     in[0], in[1], in[2], &y));
        TU_OK(dnnjit_tensor_set_output(g, y, true));
        dnnjit_heur_mode_t heur = DNNJIT_HEUR_MODE_A;
        bool positive = needs_positive((dnnjit_pointwise_mode_t)mode);
        tu_gpu_check(g, &heur, 1, positive ? 0.5 : -1.0, positive ? 2.0 : 1.0, 1e-5,
                     dnnjit_pointwise_mode_name((dnnjit_pointwise_mode_t)mode));
        dnnjit_graph_destroy(g);
    }
}

/* A transposed (column-major) input and a broadcast column: the scalar path. */
static void strided_and_broadcast(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "a", 2, TU_DIMS(77, 1000), TU_DIMS(1, 77), 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", 2, TU_DIMS(77, 1), NULL, 0);
    dnnjit_tensor_t y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SUB}, a, b, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    TU_OK(dnnjit_tensor_set_stride(g, y, 2, TU_DIMS(1000, 1)));
    dnnjit_heur_mode_t heur = DNNJIT_HEUR_MODE_A;
    tu_gpu_check(g, &heur, 1, -1.0, 1.0, 1e-2, "transposed a - column b");
    dnnjit_graph_destroy(g);
}

/* Non-finite inputs through the device's ReLU, plain and clipped, element by element
 * against the reference (whose norm of differences any NaN would fail): a NaN stays NaN,
 * -inf goes to the lower clip or down its slope, +inf to the upper clip. The output is
 * poisoned with a finite value, so that an unwritten NaN cannot pass. */
static void relu_non_finite(void **state)
{
    (void)state;
    static const double x[] = {NAN, -INFINITY, INFINITY, -2, 0, 3, -0.5, 7};
    enum { COUNT = sizeof x / sizeof x[0] };
    static const dnnjit_pointwise_attr_t attrs[] = {
        {.mode = DNNJIT_POINTWISE_RELU_FWD},
        {.mode = DNNJIT_POINTWISE_RELU_FWD,
         .relu_lower_clip = -1.0,
         .relu_lower_clip_slope = 0.1,
         .has_relu_upper_clip = true,
         .relu_upper_clip = 2.0},
    };
    for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++) {
        dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t in = tu_tensor(g, "x", 1, TU_DIMS(COUNT), NULL, 0), y;
        TU_OK(dnnjit_graph_pointwise(g, &attrs[a], in, 0, 0, &y));
        TU_OK(dnnjit_tensor_set_output(g, y, true));
        gb_build(g, NULL);
        gb_set_t s;
        gb_alloc(g, &s);
        for (size_t i = 0; i < s.n; i++) {
            gb_tensor_t *b = &s.t[i];
            for (int e = 0; e < COUNT; e++)
                dnnjit_element_store(b->info.data_type, b->host, e, b->info.producer >= 0 ? 1234.5 : x[e]);
            GB_CU(dnnjit__cuda()->cuMemcpyHtoD(b->device, b->host, b->bytes));
        }
        TU_OK(dnnjit_graph_execute(g, s.device_pack, s.n, gb_workspace(&s), NULL));
        GB_CU(dnnjit__cuda()->cuStreamSynchronize(NULL));
        gb_reference(g, &s);
        for (size_t i = 0; i < s.n; i++) {
            const gb_tensor_t *b = &s.t[i];
            for (int e = 0; b->info.producer >= 0 && e < COUNT; e++) {
                double got = dnnjit_element_load(b->info.data_type, b->readback, e);
                double want = dnnjit_element_load(b->info.data_type, b->host, e);
                if (isnan(got) != isnan(want) || (!isnan(want) && got != want))
                    fail_msg("ReLU %zu of %g: the device gave %g, the reference %g", a, x[e], got, want);
            }
        }
        gb_free(&s);
        dnnjit_graph_destroy(g);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sigmoid_fma_sizes_and_types),
        cmocka_unit_test(every_mode_float),
        cmocka_unit_test(strided_and_broadcast),
        cmocka_unit_test(relu_non_finite),
    };
    return TU_GPU_MAIN(tests, argc, argv, tu_gpu_available);
}
