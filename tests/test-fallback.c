/* The fallback engine: for every op family and io type, the engine supports every group of
 * a valid graph, generates the same bytes twice, and NVRTC compiles the kernel for sm_80
 * and sm_90a. Needs NVRTC (not a GPU); skipped when NVRTC cannot be loaded. */
#include "util.h"

#include "engine/engine.h"
#include "jit/jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const dnnjit__engine_t dnnjit__engine_fallback;

static const dnnjit__engine_t *const engine = &dnnjit__engine_fallback;

static const dnnjit_data_type_t io_types[] = {DNNJIT_DATA_TYPE_FLOAT, DNNJIT_DATA_TYPE_HALF,
                                              DNNJIT_DATA_TYPE_BFLOAT16};
enum { IO_TYPE_COUNT = sizeof io_types / sizeof io_types[0] };

static dnnjit_tensor_t scalar(dnnjit_graph_t g, const char *name, bool has_value, double value)
{
    dnnjit_tensor_t t = 0;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = name, .ndim = 1, .dim = TU_DIMS(1),
                                                          .data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                          .is_pass_by_value = true, .has_value = has_value,
                                                          .value = value},
                              &t));
    return t;
}

static int group_tensor_count(dnnjit_graph_t g, const dnnjit__group_t *grp, bool pass_by_value)
{
    int n = 0;
    for (int64_t i = 0; i < grp->input_count + grp->output_count; i++) {
        dnnjit_tensor_t id = i < grp->input_count ? grp->inputs[i] : grp->outputs[i - grp->input_count];
        const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
        n += pass_by_value ? t->is_pass_by_value && !t->has_value : !t->is_pass_by_value;
    }
    return n;
}

/* Validates and partitions the graph; for each group: supported, generated twice with the
 * same bytes, every tensor in a slot, compiled for sm_80 and sm_90a. Returns the number of
 * groups and destroys the graph. Some kernel's source must contain `expect` (if given). */
static int64_t check_graph(dnnjit_graph_t g, const char *expect)
{
    TU_OK(dnnjit_graph_validate(g));
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    bool expected = !expect;
    for (int64_t gi = 0; gi < p.group_count; gi++) {
        const dnnjit__group_t *grp = &p.groups[gi];
        char why[200] = "";
        if (!engine->supports(g, grp, 0, "sm_90a", why, sizeof why))
            fail_msg("group %lld refused: %s", (long long)gi, why);
        dnnjit__kernel_t k1, k2;
        TU_OK(engine->generate(g, &p, grp, 0, &k1));
        TU_OK(engine->generate(g, &p, grp, 0, &k2));
        assert_string_equal(k1.source, k2.source);
        assert_string_equal(k1.entry, k2.entry);
        assert_int_equal(k1.grid[0], k2.grid[0]);
        assert_true(k1.grid[0] >= 1 && k1.block[0] >= 32);
        assert_int_equal(k1.tensor_count, group_tensor_count(g, grp, false));
        assert_int_equal(k1.scalar_count, group_tensor_count(g, grp, true));
        assert_non_null(strstr(k1.source, k1.entry));
        expected |= expect && strstr(k1.source, expect);
        assert_true(engine->cost(g, grp, 0) > 0);
        tu_compile_kernel(&k1, "sm_80", NULL, NULL);
        tu_compile_kernel(&k1, "sm_90a", NULL, NULL);
        dnnjit__kernel_free(&k1);
        dnnjit__kernel_free(&k2);
    }
    if (!expected)
        fail_msg("no kernel contains \"%s\"", expect);
    int64_t count = p.group_count;
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
    return count;
}

/* D = relu(A @ B + bias) with broadcast batch axes and a transposed, strided A; C itself is
 * also written. */
static dnnjit_graph_t gemm_graph(dnnjit_data_type_t io, dnnjit_data_type_t compute)
{
    dnnjit_graph_t g = tu_graph_on(NULL, "fallback", io, compute);
    dnnjit_tensor_t a = tu_tensor(g, "A", 4, TU_DIMS(2, 1, 16, 24), TU_DIMS(1000, 1000, 1, 20), 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(3, 24, 8), NULL, 0);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 1, TU_DIMS(8), NULL, 0);
    dnnjit_tensor_t c, sum, d;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_graph_bias(g, "bias_add", c, bias, &sum));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "relu", .mode = DNNJIT_POINTWISE_RELU_FWD},
                                 sum, 0, 0, &d));
    tu_output(g, c);
    tu_output(g, d);
    return g;
}

static void gemm_with_epilogue(void **state)
{
    (void)state;
    for (int i = 0; i < IO_TYPE_COUNT; i++)
        assert_int_equal(check_graph(gemm_graph(io_types[i], DNNJIT_DATA_TYPE_FLOAT), "dj_epilogue"), 1);
    assert_int_equal(check_graph(gemm_graph(DNNJIT_DATA_TYPE_DOUBLE, DNNJIT_DATA_TYPE_DOUBLE), "typedef double dj_acc"),
                     1);
}

/* relu(X) cast to io as A and W * scale as B, fused into the matmul's group: the fallback
 * runs the group whole, reading both operands through their prologues. */
static void gemm_with_prologues(void **state)
{
    (void)state;
    for (int i = 0; i < IO_TYPE_COUNT; i++) {
        dnnjit_graph_t g = tu_graph_on(NULL, "fallback", io_types[i], DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t x = tu_tensor(g, "X", 3, TU_DIMS(2, 7, 5), NULL, 0);
        dnnjit_tensor_t w = tu_tensor(g, "W", 2, TU_DIMS(5, 3), NULL, 0);
        dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, 3), NULL, 0), a, b, c;
        TU_OK(dnnjit_tensor_set_data_type(g, x, DNNJIT_DATA_TYPE_FLOAT));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_RELU_FWD}, x, 0, 0, &a));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, w, scale, 0, &b));
        TU_OK(dnnjit_tensor_set_data_type(g, a, io_types[i]));
        TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
        tu_output(g, c);
        assert_int_equal(check_graph(g, "return dj_to_acc(dj_from_float<"), 1);
    }
}

static void plain_gemm(void **state)
{
    (void)state;
    for (int i = 0; i < IO_TYPE_COUNT; i++) {
        dnnjit_graph_t g = tu_graph(io_types[i]);
        dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(5, 7), NULL, 0);
        dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(7, 3), NULL, 0), c;
        TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
        tu_output(g, c);
        assert_int_equal(check_graph(g, "DJ_K = 7LL"), 1);
    }
}

/* out = select(x > scale, x * scale, x) + y, with a runtime scalar; y broadcasts. */
static void pointwise_dag(void **state)
{
    (void)state;
    for (int i = 0; i < IO_TYPE_COUNT; i++) {
        dnnjit_graph_t g = tu_graph(io_types[i]);
        dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(4, 5, 6), TU_DIMS(1, 4, 20), 0);
        dnnjit_tensor_t y = tu_tensor(g, "y", 2, TU_DIMS(5, 1), NULL, 0);
        dnnjit_tensor_t s = scalar(g, "s", false, 0), two = scalar(g, "two", true, 2.0);
        dnnjit_tensor_t gt, mul, sel, sum, out;
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_CMP_GT}, x, s, 0, &gt));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, x, two, 0, &mul));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_BINARY_SELECT}, mul, x,
                                     gt, &sel));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, sel, y, 0, &sum));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_GELU_FWD}, sum, 0, 0,
                                     &out));
        tu_output(g, out);
        assert_int_equal(check_graph(g, "args.scalar[0]"), 2);
    }
}

static void reduction_every_mode(void **state)
{
    (void)state;
    for (int mode = 0; mode < DNNJIT_REDUCTION_MODE_COUNT_; mode++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
        dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(4, 5, 6), NULL, 0), y;
        TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.mode = mode, .axes = 0x5}, &y));
        tu_output(g, y);
        char expect[64];
        snprintf(expect, sizeof expect, "DJ_REDUCE_%s;", dnnjit_reduction_mode_name(mode));
        assert_int_equal(check_graph(g, expect), 1);
    }
    for (int i = 0; i < IO_TYPE_COUNT; i++) {
        dnnjit_graph_t g = tu_graph(io_types[i]);
        dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(32, 64), TU_DIMS(1, 32), 0), y;
        TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_AVG, .axes = 0x2}, &y));
        tu_output(g, y);
        assert_int_equal(check_graph(g, "DJ_COLS = 64LL"), 1);
    }
}

static void softmax_every_stats(void **state)
{
    (void)state;
    for (int i = 0; i < IO_TYPE_COUNT; i++)
        for (int stats = 0; stats < 3; stats++) {
            dnnjit_graph_t g = tu_graph(io_types[i]);
            dnnjit_tensor_t p = tu_tensor(g, "p", 3, TU_DIMS(2, 3, 40), NULL, 0), s, s0 = 0, s1 = 0;
            TU_OK(dnnjit_graph_softmax(g, p, &(dnnjit_softmax_attr_t){.stats = stats}, &s, stats ? &s0 : NULL,
                                       stats == 2 ? &s1 : NULL));
            tu_output(g, s);
            tu_output(g, s0);
            tu_output(g, s1);
            char expect[64];
            snprintf(expect, sizeof expect, "DJ_STATS = %d;", stats);
            assert_int_equal(check_graph(g, expect), 1);
        }
}

static void softmax_backward(void **state)
{
    (void)state;
    for (int i = 0; i < IO_TYPE_COUNT; i++) {
        dnnjit_graph_t g = tu_graph(io_types[i]);
        dnnjit_tensor_t y = tu_tensor(g, "y", 2, TU_DIMS(8, 33), NULL, 0);
        dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(8, 33), TU_DIMS(1, 8), 0), dx;
        TU_OK(dnnjit_graph_softmax_backward(g, y, dy, &(dnnjit_softmax_attr_t){0}, &dx));
        tu_output(g, dx);
        assert_int_equal(check_graph(g, "dj_fallback_softmax_backward"), 1);
    }
}

/* Layer norm (training) and RMS norm (inference) with each source of epsilon. */
static void norms_forward(void **state)
{
    (void)state;
    for (int i = 0; i < IO_TYPE_COUNT; i++)
        for (int eps_kind = 0; eps_kind < 4; eps_kind++) {
            dnnjit_graph_t g = tu_graph(io_types[i]);
            dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(4, 6, 32), NULL, 0);
            dnnjit_tensor_t scale = tu_tensor(g, "scale", 3, TU_DIMS(1, 6, 32), NULL, 0);
            dnnjit_tensor_t bias = tu_tensor(g, "bias", 3, TU_DIMS(1, 6, 32), NULL, 0);
            dnnjit_tensor_t eps = eps_kind == 1   ? scalar(g, "eps", true, 1e-3)
                                  : eps_kind == 2 ? scalar(g, "eps", false, 0)
                                  : eps_kind == 3 ? tu_tensor(g, "eps", 1, TU_DIMS(1), NULL, DNNJIT_DATA_TYPE_FLOAT)
                                                  : 0;
            dnnjit_tensor_t y, mean, inv, y2;
            dnnjit_norm_attr_t attr = {.phase = DNNJIT_NORM_PHASE_TRAINING, .epsilon = eps, .epsilon_value = 1e-6};
            TU_OK(dnnjit_graph_layernorm(g, x, scale, bias, &attr, &y, &mean, &inv));
            attr.phase = DNNJIT_NORM_PHASE_INFERENCE;
            attr.norm_axes = 1;
            dnnjit_tensor_t s1 = tu_tensor(g, "s1", 3, TU_DIMS(1, 1, 32), NULL, 0);
            TU_OK(dnnjit_graph_rmsnorm(g, x, s1, eps_kind % 2 ? 0 : s1, &attr, &y2, NULL));
            tu_output(g, y);
            tu_output(g, mean);
            tu_output(g, inv);
            tu_output(g, y2);
            assert_int_equal(check_graph(g, "dj_fallback_norm"), 2);
        }
}

static void norms_backward(void **state)
{
    (void)state;
    for (int i = 0; i < IO_TYPE_COUNT; i++)
        for (int with_dbias = 0; with_dbias < 2; with_dbias++) {
            dnnjit_graph_t g = tu_graph(io_types[i]);
            dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(10, 48), NULL, 0);
            dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(10, 48), TU_DIMS(1, 10), 0);
            dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, 48), NULL, 0);
            dnnjit_tensor_t mean = tu_tensor(g, "mean", 2, TU_DIMS(10, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
            dnnjit_tensor_t inv = tu_tensor(g, "inv", 2, TU_DIMS(10, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
            dnnjit_tensor_t dx, ds, db = 0, dx2, ds2, db2 = 0;
            TU_OK(dnnjit_graph_layernorm_backward(g, dy, x, scale, mean, inv, &(dnnjit_norm_attr_t){.name = "lnb"},
                                                  &dx, &ds, with_dbias ? &db : NULL));
            TU_OK(dnnjit_graph_rmsnorm_backward(g, dy, x, scale, inv, &(dnnjit_norm_attr_t){.name = "rmsb"}, &dx2,
                                                &ds2, with_dbias ? &db2 : NULL));
            tu_output(g, dx);
            tu_output(g, ds);
            tu_output(g, db);
            tu_output(g, dx2);
            tu_output(g, ds2);
            tu_output(g, db2);
            assert_int_equal(check_graph(g, "DJ_ROW_BLOCKS = 1u"), 2);
        }
}

/* Causal grouped-query attention with stats, and plain attention without. */
static void sdpa(void **state)
{
    (void)state;
    for (int i = 0; i < IO_TYPE_COUNT; i++)
        for (int causal = 0; causal < 2; causal++) {
            dnnjit_graph_t g = tu_graph(io_types[i]);
            dnnjit_tensor_t q = tu_tensor(g, "q", 4, TU_DIMS(2, 8, 12, 16), NULL, 0);
            dnnjit_tensor_t k = tu_tensor(g, "k", 4, TU_DIMS(2, 2, 20, 16), TU_DIMS(640, 16, 32, 1), 0);
            dnnjit_tensor_t v = tu_tensor(g, "v", 4, TU_DIMS(2, 4, 20, 24), NULL, 0), o, stats = 0;
            TU_OK(dnnjit_graph_sdpa(g, q, k, v,
                                    &(dnnjit_sdpa_attr_t){.use_causal_mask = causal, .generate_stats = causal,
                                                          .has_attn_scale = !causal, .attn_scale = 0.5},
                                    &o, causal ? &stats : NULL));
            tu_output(g, o);
            tu_output(g, stats);
            assert_int_equal(check_graph(g, causal ? "DJ_CAUSAL = true" : "DJ_SCALE = 0.5f"), 1);
        }
}

/* A graph of several groups: every one is supported and compiles. */
static void every_group_of_a_graph(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(16, 32), NULL, 0);
    dnnjit_tensor_t w = tu_tensor(g, "w", 2, TU_DIMS(32, 32), NULL, 0);
    dnnjit_tensor_t h, s, r;
    TU_OK(dnnjit_graph_matmul(g, x, w, &(dnnjit_matmul_attr_t){.name = "mm"}, &h));
    TU_OK(dnnjit_graph_softmax(g, h, &(dnnjit_softmax_attr_t){.name = "sm"}, &s, NULL, NULL));
    TU_OK(dnnjit_graph_reduction(g, s, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_MAX}, &r));
    tu_output(g, r);
    assert_int_equal(check_graph(g, NULL), 3);
}

/* A row op with a fused pointwise epilogue (one group) is refused, not run without its
 * epilogue. */
static void refuses_fused_row_group(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(16, 32), NULL, 0), s, t;
    TU_OK(dnnjit_graph_softmax(g, x, &(dnnjit_softmax_attr_t){.name = "sm"}, &s, NULL, NULL));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_EXP}, s, 0, 0, &t));
    tu_output(g, t);
    TU_OK(dnnjit_graph_validate(g));
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    assert_int_equal(p.group_count, 1);
    char why[200] = "";
    assert_false(engine->supports(g, &p.groups[0], 0, "sm_90a", why, sizeof why));
    assert_non_null(strstr(why, "fused pointwise"));
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void knobs_and_cost(void **state)
{
    (void)state;
    assert_string_equal(engine->name, "fallback");
    assert_int_equal(engine->knob_count, 1);
    dnnjit_graph_t small = gemm_graph(DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_graph_t big = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(big, "A", 2, TU_DIMS(512, 512), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(big, "B", 2, TU_DIMS(512, 512), NULL, 0), c;
    TU_OK(dnnjit_graph_matmul(big, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    tu_output(big, c);
    TU_OK(dnnjit_graph_validate(small));
    TU_OK(dnnjit_graph_validate(big));
    dnnjit__partition_t ps, pb;
    TU_OK(dnnjit__partition(small, &ps));
    TU_OK(dnnjit__partition(big, &pb));
    assert_true(engine->cost(big, &pb.groups[0], 0) > engine->cost(small, &ps.groups[0], 0));
    char why[100] = "";
    assert_false(engine->supports(small, &ps.groups[0], 1, "sm_90a", why, sizeof why));
    assert_non_null(strstr(why, "knob"));
    char name[32];
    engine->knob_name(0, name, sizeof name);
    assert_true(strlen(name) > 0);
    dnnjit__partition_free(&ps);
    dnnjit__partition_free(&pb);
    dnnjit_graph_destroy(small);
    dnnjit_graph_destroy(big);
}

int main(void)
{
    if (dnnjit__nvrtc_load() != DNNJIT_STATUS_SUCCESS) {
        printf("skipped: NVRTC cannot be loaded: %s\n", dnnjit_last_error());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gemm_with_epilogue),   cmocka_unit_test(plain_gemm),
        cmocka_unit_test(gemm_with_prologues),
        cmocka_unit_test(pointwise_dag),        cmocka_unit_test(reduction_every_mode),
        cmocka_unit_test(softmax_every_stats),  cmocka_unit_test(softmax_backward),
        cmocka_unit_test(norms_forward),        cmocka_unit_test(norms_backward),
        cmocka_unit_test(sdpa),                 cmocka_unit_test(every_group_of_a_graph),
        cmocka_unit_test(refuses_fused_row_group),
        cmocka_unit_test(knobs_and_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
