/* GPU: every op family through the fallback engine (heuristic mode FALLBACK), against the
 * float64 reference on fresh random data, odd sizes, strides, broadcast batch. Skipped (77)
 * without a GPU. */
#include "gpu_util.h"

static const dnnjit_heur_mode_t fallback = DNNJIT_HEUR_MODE_FALLBACK;

static void check(dnnjit_graph_t g, dnnjit_data_type_t io, const char *label)
{
    tu_gpu_check(g, &fallback, 1, -1.0, 1.0, tu_tolerance(io), label);
    dnnjit_graph_destroy(g);
}

static void matmul_family(void **state)
{
    (void)state;
    static const struct {
        const char *label;
        dnnjit_data_type_t io;
        int64_t a[3], b[3];
        bool b_column_major, epilogue;
    } cases[] = {
        {"seed 000 half", DNNJIT_DATA_TYPE_HALF, {4, 64, 128}, {4, 128, 64}, false, false},
        {"odd float, batch bcast", DNNJIT_DATA_TYPE_FLOAT, {3, 77, 1000}, {1, 1000, 7}, false, false},
        {"1x1x1 float", DNNJIT_DATA_TYPE_FLOAT, {1, 1, 1}, {1, 1, 1}, false, false},
        {"B column-major bf16", DNNJIT_DATA_TYPE_BFLOAT16, {2, 33, 4097}, {2, 4097, 17}, true, false},
        {"bias+relu epilogue half", DNNJIT_DATA_TYPE_HALF, {8, 64, 32}, {8, 32, 48}, false, true},
        {"double", DNNJIT_DATA_TYPE_DOUBLE, {2, 7, 77}, {2, 77, 5}, false, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = tu_gpu_graph(cases[i].io);
        int64_t bs[3] = {cases[i].b[1] * cases[i].b[2], 1, cases[i].b[1]};
        dnnjit_tensor_t a = tu_tensor(g, "A", 3, cases[i].a, NULL, 0);
        dnnjit_tensor_t b = tu_tensor(g, "B", 3, cases[i].b, cases[i].b_column_major ? bs : NULL, 0);
        dnnjit_tensor_t c;
        TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
        if (cases[i].epilogue) {
            dnnjit_tensor_t bias = tu_tensor(g, "bias", 3, TU_DIMS(1, 1, cases[i].b[2]), NULL, 0), y;
            TU_OK(dnnjit_graph_bias(g, "bias", c, bias, &c));
            TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_RELU_FWD}, c, 0, 0, &y));
            c = y;
        }
        tu_output(g, c);
        check(g, cases[i].io, cases[i].label);
    }
}

static void reduction_family(void **state)
{
    (void)state;
    for (int mode = 0; mode < DNNJIT_REDUCTION_MODE_COUNT_; mode++) {
        /* MUL over one short axis, so that products stay representable. */
        uint32_t axes[2] = {mode == DNNJIT_REDUCTION_MUL ? 1u : 5u, mode == DNNJIT_REDUCTION_MUL ? 4u : 0u};
        for (int k = 0; k < 2; k++) {
            dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_FLOAT);
            dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(7, 77, 33), NULL, 0), y;
            TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.mode = mode, .axes = axes[k]}, &y));
            tu_output(g, y);
            check(g, DNNJIT_DATA_TYPE_FLOAT, dnnjit_reduction_mode_name(mode));
        }
    }
}

static void softmax_family(void **state)
{
    (void)state;
    for (int stats = DNNJIT_SOFTMAX_STATS_NONE; stats <= DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP; stats++) {
        dnnjit_data_type_t io = stats == 1 ? DNNJIT_DATA_TYPE_HALF : DNNJIT_DATA_TYPE_FLOAT;
        dnnjit_graph_t g = tu_gpu_graph(io);
        dnnjit_tensor_t p = tu_tensor(g, "p", 2, TU_DIMS(77, stats == 2 ? 4097 : 1000), NULL, 0), s, s0 = 0, s1 = 0;
        TU_OK(dnnjit_graph_softmax(g, p, &(dnnjit_softmax_attr_t){.stats = stats}, &s, &s0, &s1));
        tu_output(g, s);
        if (s0)
            tu_output(g, s0);
        if (s1)
            tu_output(g, s1);
        check(g, io, "softmax");
    }
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t y = tu_tensor(g, "y", 2, TU_DIMS(33, 1000), NULL, 0);
    dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(33, 1000), NULL, 0), dx;
    TU_OK(dnnjit_graph_softmax_backward(g, y, dy, NULL, &dx));
    tu_output(g, dx);
    check(g, DNNJIT_DATA_TYPE_FLOAT, "softmax backward");
}

static void norm_family(void **state)
{
    (void)state;
    for (int rms = 0; rms < 2; rms++)
        for (int phase = 0; phase < 2; phase++) {
            dnnjit_data_type_t io = phase ? DNNJIT_DATA_TYPE_FLOAT : DNNJIT_DATA_TYPE_BFLOAT16;
            int64_t width = rms ? 4097 : 1000;
            dnnjit_graph_t g = tu_gpu_graph(io);
            dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(77, width), NULL, 0);
            dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, width), NULL, 0);
            dnnjit_tensor_t bias = tu_tensor(g, "bias", 2, TU_DIMS(1, width), NULL, 0);
            dnnjit_tensor_t eps;
            TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "eps", .ndim = 1, .dim = TU_DIMS(1),
                                                                  .data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                                  .is_pass_by_value = true},
                                      &eps));
            dnnjit_norm_attr_t attr = {.phase = phase, .epsilon = eps};
            dnnjit_tensor_t y, m = 0, v = 0;
            if (rms)
                TU_OK(dnnjit_graph_rmsnorm(g, x, scale, bias, &attr, &y, &v));
            else
                TU_OK(dnnjit_graph_layernorm(g, x, scale, bias, &attr, &y, &m, &v));
            tu_output(g, y);
            if (m)
                tu_output(g, m);
            if (v)
                tu_output(g, v);
            check(g, io, rms ? "rmsnorm" : "layernorm");
        }
    for (int rms = 0; rms < 2; rms++) {
        dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(77, 1000), NULL, 0);
        dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(77, 1000), NULL, 0);
        dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, 1000), NULL, 0);
        dnnjit_tensor_t rstd = tu_tensor(g, "rstd", 2, TU_DIMS(77, 1), NULL, 0);
        dnnjit_tensor_t dx, ds, db;
        if (rms) {
            TU_OK(dnnjit_graph_rmsnorm_backward(g, dy, x, scale, rstd, NULL, &dx, &ds, &db));
        } else {
            dnnjit_tensor_t mean = tu_tensor(g, "mean", 2, TU_DIMS(77, 1), NULL, 0);
            TU_OK(dnnjit_graph_layernorm_backward(g, dy, x, scale, mean, rstd, NULL, &dx, &ds, &db));
        }
        tu_output(g, dx);
        tu_output(g, ds);
        tu_output(g, db);
        check(g, DNNJIT_DATA_TYPE_FLOAT, rms ? "rmsnorm backward" : "layernorm backward");
    }
}

static void sdpa_family(void **state)
{
    (void)state;
    static const struct {
        const char *label;
        dnnjit_data_type_t io;
        int64_t b, hq, hk, sq, skv, d;
        bool causal;
    } cases[] = {
        {"sdpa gqa causal half", DNNJIT_DATA_TYPE_HALF, 2, 4, 2, 77, 77, 64, true},
        {"sdpa float s_q<s_kv", DNNJIT_DATA_TYPE_FLOAT, 1, 3, 3, 7, 33, 16, true},
        {"sdpa bf16 plain", DNNJIT_DATA_TYPE_BFLOAT16, 1, 2, 1, 100, 60, 128, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = tu_gpu_graph(cases[i].io);
        dnnjit_tensor_t q = tu_tensor(g, "q", 4, TU_DIMS(cases[i].b, cases[i].hq, cases[i].sq, cases[i].d), NULL, 0);
        dnnjit_tensor_t k = tu_tensor(g, "k", 4, TU_DIMS(cases[i].b, cases[i].hk, cases[i].skv, cases[i].d), NULL, 0);
        dnnjit_tensor_t v = tu_tensor(g, "v", 4, TU_DIMS(cases[i].b, cases[i].hk, cases[i].skv, cases[i].d), NULL, 0);
        dnnjit_tensor_t o, stats;
        TU_OK(dnnjit_graph_sdpa(g, q, k, v,
                                &(dnnjit_sdpa_attr_t){.use_causal_mask = cases[i].causal, .generate_stats = true}, &o,
                                &stats));
        tu_output(g, o);
        tu_output(g, stats);
        check(g, cases[i].io, cases[i].label);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_family), cmocka_unit_test(reduction_family), cmocka_unit_test(softmax_family),
        cmocka_unit_test(norm_family),   cmocka_unit_test(sdpa_family),
    };
    return TU_GPU_MAIN(tests, argc, argv, tu_gpu_available);
}
