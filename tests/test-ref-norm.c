/* The reference executor's layer norm and RMS norm: by hand, against a plain
 * implementation written here (variance as E[x^2] - mean^2, unlike the library's two
 * passes), every source of epsilon, and the backward passes against finite differences of
 * that forward. */
#include "test-ref.h"

/* Layer norm (`center`) or RMS norm of x [groups, count], the normalised axes flattened
 * into count; scale and bias [count] (bias may be NULL); mean and inv_var (may be NULL)
 * get one value per group. */
static void plain_norm(bool center, const double *x, int groups, int count, const double *scale, const double *bias,
                       double eps, double *y, double *mean, double *inv_var)
{
    for (int g = 0; g < groups; g++) {
        const double *row = &x[g * count];
        double s1 = 0, s2 = 0;
        for (int j = 0; j < count; j++) {
            s1 += row[j];
            s2 += row[j] * row[j];
        }
        double mu = center ? s1 / count : 0;
        double r = 1 / sqrt(s2 / count - mu * mu + eps);
        for (int j = 0; j < count; j++)
            y[g * count + j] = (row[j] - mu) * r * scale[j] + (bias ? bias[j] : 0);
        if (mean)
            mean[g] = mu;
        if (inv_var)
            inv_var[g] = r;
    }
}

static const dnnjit_tensor_t no_tensor = DNNJIT_TENSOR_NONE;

static void layernorm_by_hand(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t x = tu_tensor(r.g, "X", 2, TU_DIMS(1, 4), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t scale = tu_tensor(r.g, "scale", 2, TU_DIMS(1, 4), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t bias = tu_tensor(r.g, "bias", 2, TU_DIMS(1, 4), NULL, DNNJIT_DATA_TYPE_NOT_SET), y;
    TU_OK(dnnjit_graph_layernorm(r.g, x, scale, bias, NULL, &y, NULL, NULL));
    const double vx[] = {1, 2, 3, 4}, vs[] = {1, 2, 0.5, 1}, vb[] = {0, 1, 0, -1};
    rt_in(&r, x, vx);
    rt_in(&r, scale, vs);
    rt_in(&r, bias, vb);
    rt_out(&r, y);
    rt_run(&r);
    /* mean 2.5, population variance 1.25, default epsilon 1e-5. */
    double k = 1 / sqrt(1.25 + 1e-5);
    const double want[] = {-1.5 * k, -0.5 * k * 2 + 1, 0.5 * k * 0.5, 1.5 * k - 1};
    rt_expect(&r, y, want, 4, 1e-15);
    rt_free(&r);
}

static void rmsnorm_by_hand(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t x = tu_tensor(r.g, "X", 2, TU_DIMS(1, 3), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t scale = tu_tensor(r.g, "scale", 2, TU_DIMS(1, 3), NULL, DNNJIT_DATA_TYPE_NOT_SET), y;
    TU_OK(dnnjit_graph_rmsnorm(r.g, x, scale, no_tensor, NULL, &y, NULL));
    const double vx[] = {1, 2, 2}, vs[] = {1, 1, 2};
    rt_in(&r, x, vx);
    rt_in(&r, scale, vs);
    rt_out(&r, y);
    rt_run(&r);
    /* mean(x^2) = 9 / 3 = 3. */
    double k = 1 / sqrt(3 + 1e-5);
    const double want[] = {k, 2 * k, 4 * k};
    rt_expect(&r, y, want, 3, 1e-15);
    rt_free(&r);
}

/* A training-phase norm over X [2, 3, 4] normalising its last `norm_axes` axes (0: all but
 * the first), checked against plain_norm. */
static void check_training(bool layer, int norm_axes)
{
    int k = norm_axes ? norm_axes : 2;
    int count = k == 1 ? 4 : k == 2 ? 12 : 24, groups = 24 / count;
    int64_t pdim[3] = {k >= 3 ? 2 : 1, k >= 2 ? 3 : 1, 4}, sdim[3] = {k >= 3 ? 1 : 2, k >= 2 ? 1 : 3, 1};
    double x[24], scale[24], bias[24], want[24], mean[24], inv[24];
    tu_seed(31 + (uint64_t)norm_axes);
    rt_uniform(x, 24, -2, 3);
    rt_uniform(scale, count, 0.5, 1.5);
    rt_uniform(bias, count, -1, 1);
    plain_norm(layer, x, groups, count, scale, bias, 1e-5, want, mean, inv);

    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t tx = tu_tensor(r.g, "X", 3, TU_DIMS(2, 3, 4), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t ts = tu_tensor(r.g, "scale", 3, pdim, NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t tb = tu_tensor(r.g, "bias", 3, pdim, NULL, DNNJIT_DATA_TYPE_NOT_SET), y, tmean = 0, tinv;
    dnnjit_norm_attr_t attr = {.phase = DNNJIT_NORM_PHASE_TRAINING, .norm_axes = norm_axes};
    if (layer)
        TU_OK(dnnjit_graph_layernorm(r.g, tx, ts, tb, &attr, &y, &tmean, &tinv));
    else
        TU_OK(dnnjit_graph_rmsnorm(r.g, tx, ts, tb, &attr, &y, &tinv));
    rt_in(&r, tx, x);
    rt_in(&r, ts, scale);
    rt_in(&r, tb, bias);
    rt_out(&r, y);
    if (layer)
        rt_out(&r, tmean);
    rt_out(&r, tinv);
    rt_run(&r);
    rt_expect(&r, y, want, 24, 1e-13);
    /* The statistics are FLOAT, with 1 on the normalised axes. */
    dnnjit_tensor_info_t info;
    TU_OK(dnnjit_tensor_get_info(r.g, tinv, &info));
    assert_int_equal(info.data_type, DNNJIT_DATA_TYPE_FLOAT);
    for (int i = 0; i < 3; i++)
        assert_int_equal(info.dim[i], sdim[i]);
    rt_expect(&r, tinv, inv, groups, 1e-7);
    if (layer)
        rt_expect(&r, tmean, mean, groups, 1e-7);
    rt_free(&r);
}

static void layernorm_training_all_but_first_axis(void **state)
{
    (void)state;
    check_training(true, 0);
}

static void layernorm_training_last_axis(void **state)
{
    (void)state;
    check_training(true, 1);
}

static void layernorm_training_every_axis(void **state)
{
    (void)state;
    check_training(true, 3);
}

static void rmsnorm_training_with_bias(void **state)
{
    (void)state;
    check_training(false, 0);
    check_training(false, 1);
}

/* Layer norm of X = [[0, 2]] (mean 1, variance 1) gives [-1, 1] / sqrt(1 + eps). */
static void check_epsilon(rt_t *r, dnnjit_tensor_t x, dnnjit_tensor_t eps_tensor, double attr_eps, bool given,
                          double want_eps)
{
    dnnjit_tensor_t scale = tu_tensor(r->g, "scale", 2, TU_DIMS(1, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t bias = tu_tensor(r->g, "bias", 2, TU_DIMS(1, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET), y;
    TU_OK(dnnjit_graph_layernorm(r->g, x, scale, bias,
                                 &(dnnjit_norm_attr_t){.epsilon = eps_tensor, .epsilon_value = attr_eps,
                                                       .has_epsilon_value = given},
                                 &y, NULL, NULL));
    static const double vx[] = {0, 2}, ones[] = {1, 1}, zeros[] = {0, 0};
    rt_in(r, x, vx);
    rt_in(r, scale, ones);
    rt_in(r, bias, zeros);
    rt_out(r, y);
    rt_run(r);
    double k = 1 / sqrt(1 + want_eps);
    const double want[] = {-k, k};
    rt_expect(r, y, want, 2, 1e-15);
    rt_free(r);
}

static void norm_epsilon_sources(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    check_epsilon(&r, tu_tensor(r.g, "X", 2, TU_DIMS(1, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET), no_tensor, 0, false, 1e-5);
    r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    check_epsilon(&r, tu_tensor(r.g, "X", 2, TU_DIMS(1, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET), no_tensor, 0.125, false,
                  0.125);
    /* 0 with has_epsilon_value is used as given. */
    r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    check_epsilon(&r, tu_tensor(r.g, "X", 2, TU_DIMS(1, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET), no_tensor, 0, true, 0);
    /* A fixed pass-by-value EPSILON wins over the attribute. */
    r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t x = tu_tensor(r.g, "X", 2, TU_DIMS(1, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET), eps;
    TU_OK(dnnjit_graph_tensor(r.g, &(dnnjit_tensor_desc_t){.name = "eps", .ndim = 1, .dim = TU_DIMS(1),
                                                            .is_pass_by_value = true, .has_value = true,
                                                            .value = 0.5, .data_type = DNNJIT_DATA_TYPE_FLOAT},
                              &eps));
    check_epsilon(&r, x, eps, 0.125, false, 0.5);
    /* So does an EPSILON tensor in memory (FLOAT, so 0.3 is read as float's 0.3). */
    r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    x = tu_tensor(r.g, "X", 2, TU_DIMS(1, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    eps = tu_tensor(r.g, "eps", 2, TU_DIMS(1, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
    static const double veps[] = {0.3};
    rt_in(&r, eps, veps);
    check_epsilon(&r, x, eps, 0.125, false, (double)0.3f);
}

static void layernorm_strided_half(void **state)
{
    (void)state;
    tu_seed(33);
    double x[12], scale[3], bias[3], want[12];
    rt_uniform(x, 12, -2, 2);
    rt_uniform(scale, 3, 0.5, 1.5);
    rt_uniform(bias, 3, -1, 1);
    /* What the HALF buffer will hold, then the exact norm of that. */
    for (int i = 0; i < 12; i++) {
        uint16_t h;
        dnnjit_element_store(DNNJIT_DATA_TYPE_HALF, &h, 0, x[i]);
        x[i] = dnnjit_element_load(DNNJIT_DATA_TYPE_HALF, &h, 0);
    }
    plain_norm(true, x, 4, 3, scale, bias, 1e-5, want, NULL, NULL);
    rt_t r = rt_make(DNNJIT_DATA_TYPE_HALF);
    /* X [4, 3] column-major; Y follows X's order. */
    dnnjit_tensor_t tx = tu_tensor(r.g, "X", 2, TU_DIMS(4, 3), TU_DIMS(1, 4), DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t ts = tu_tensor(r.g, "scale", 2, TU_DIMS(1, 3), NULL, DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t tb = tu_tensor(r.g, "bias", 2, TU_DIMS(1, 3), NULL, DNNJIT_DATA_TYPE_DOUBLE), y;
    TU_OK(dnnjit_graph_layernorm(r.g, tx, ts, tb, NULL, &y, NULL, NULL));
    rt_in(&r, tx, x);
    rt_in(&r, ts, scale);
    rt_in(&r, tb, bias);
    rt_out(&r, y);
    rt_run(&r);
    /* Within half a half-precision ulp (2^-11 relative) of the exact value. */
    rt_expect(&r, y, want, 12, 0x1p-11);
    int i = rt_find(&r, y);
    assert_int_equal(r.info[i].stride[0], 1);
    assert_int_equal(r.info[i].stride[1], 4);
    rt_free(&r);
}

/* ---- backward ---------------------------------------------------------------------- */

/* sum(dy * norm(x, scale, bias)) with plain_norm. */
static double norm_loss(bool layer, const double *x, int groups, int count, const double *scale, const double *bias,
                        const double *dy)
{
    double y[64], l = 0;
    plain_norm(layer, x, groups, count, scale, bias, 1e-5, y, NULL, NULL);
    for (int i = 0; i < groups * count; i++)
        l += dy[i] * y[i];
    return l;
}

/* The central difference of norm_loss in element i of `which` (x, scale or bias). */
static double loss_derivative(bool layer, double *x, int groups, int count, double *scale, double *bias,
                              const double *dy, double *which, int i)
{
    const double h = 1e-6;
    double saved = which[i];
    which[i] = saved + h;
    double up = norm_loss(layer, x, groups, count, scale, bias, dy);
    which[i] = saved - h;
    double down = norm_loss(layer, x, groups, count, scale, bias, dy);
    which[i] = saved;
    return (up - down) / (2 * h);
}

/* forward (TRAINING) -> statistics (virtual) -> backward, over X [2, 3, 4] normalising its
 * last `norm_axes` axes; dX, dSCALE and dBIAS against finite differences of the loss. */
static void check_backward(bool layer, int norm_axes)
{
    int k = norm_axes ? norm_axes : 2;
    int count = k == 1 ? 4 : 12, groups = 24 / count;
    int64_t pdim[3] = {1, k >= 2 ? 3 : 1, 4};
    double x[24], scale[12], bias[12], dy[24];
    tu_seed(40 + (uint64_t)norm_axes + (layer ? 10 : 0));
    rt_uniform(x, 24, -2, 3);
    rt_uniform(scale, count, 0.5, 1.5);
    rt_uniform(bias, count, -1, 1);
    rt_uniform(dy, 24, -1, 1);

    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t tx = tu_tensor(r.g, "X", 3, TU_DIMS(2, 3, 4), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t ts = tu_tensor(r.g, "scale", 3, pdim, NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t tb = tu_tensor(r.g, "bias", 3, pdim, NULL, DNNJIT_DATA_TYPE_NOT_SET);
    /* dY laid out with its axes reversed, to exercise strides. */
    dnnjit_tensor_t tdy = tu_tensor(r.g, "dY", 3, TU_DIMS(2, 3, 4), TU_DIMS(1, 2, 6), DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t y, mean, inv, dx, dscale, dbias;
    dnnjit_norm_attr_t attr = {.phase = DNNJIT_NORM_PHASE_TRAINING, .norm_axes = norm_axes};
    if (layer) {
        TU_OK(dnnjit_graph_layernorm(r.g, tx, ts, tb, &attr, &y, &mean, &inv));
        TU_OK(dnnjit_graph_layernorm_backward(r.g, tdy, tx, ts, mean, inv, &attr, &dx, &dscale, &dbias));
    } else {
        TU_OK(dnnjit_graph_rmsnorm(r.g, tx, ts, tb, &attr, &y, &inv));
        TU_OK(dnnjit_graph_rmsnorm_backward(r.g, tdy, tx, ts, inv, &attr, &dx, &dscale, &dbias));
    }
    rt_in(&r, tx, x);
    rt_in(&r, ts, scale);
    rt_in(&r, tb, bias);
    rt_in(&r, tdy, dy);
    rt_out(&r, y);
    rt_out(&r, dx);
    rt_out(&r, dscale);
    rt_out(&r, dbias);
    rt_run(&r);
    for (int i = 0; i < 24; i++)
        RT_ASSERT_CLOSE(rt_get(&r, dx, i), loss_derivative(layer, x, groups, count, scale, bias, dy, x, i), 1e-7);
    for (int i = 0; i < count; i++) {
        RT_ASSERT_CLOSE(rt_get(&r, dscale, i), loss_derivative(layer, x, groups, count, scale, bias, dy, scale, i),
                        1e-7);
        RT_ASSERT_CLOSE(rt_get(&r, dbias, i), loss_derivative(layer, x, groups, count, scale, bias, dy, bias, i), 1e-7);
    }
    rt_free(&r);
}

static void layernorm_backward_matches_finite_difference(void **state)
{
    (void)state;
    check_backward(true, 0);
    check_backward(true, 1);
}

static void rmsnorm_backward_matches_finite_difference(void **state)
{
    (void)state;
    check_backward(false, 0);
    check_backward(false, 1);
}

/* RMS norm backward from statistics given as an input buffer, without dBIAS. */
static void rmsnorm_backward_from_saved_statistics(void **state)
{
    (void)state;
    enum { G = 3, C = 5 };
    double x[G * C], scale[C], dy[G * C], y[G * C], inv[G];
    tu_seed(50);
    rt_uniform(x, G * C, -2, 2);
    rt_uniform(scale, C, 0.5, 1.5);
    rt_uniform(dy, G * C, -1, 1);
    plain_norm(false, x, G, C, scale, NULL, 1e-5, y, NULL, inv);
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t tx = tu_tensor(r.g, "X", 2, TU_DIMS(G, C), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t ts = tu_tensor(r.g, "scale", 2, TU_DIMS(1, C), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t tinv = tu_tensor(r.g, "inv", 2, TU_DIMS(G, 1), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t tdy = tu_tensor(r.g, "dY", 2, TU_DIMS(G, C), NULL, DNNJIT_DATA_TYPE_NOT_SET), dx, dscale;
    TU_OK(dnnjit_graph_rmsnorm_backward(r.g, tdy, tx, ts, tinv, NULL, &dx, &dscale, NULL));
    rt_in(&r, tx, x);
    rt_in(&r, ts, scale);
    rt_in(&r, tinv, inv);
    rt_in(&r, tdy, dy);
    rt_out(&r, dx);
    rt_out(&r, dscale);
    rt_run(&r);
    for (int i = 0; i < G * C; i++)
        RT_ASSERT_CLOSE(rt_get(&r, dx, i), loss_derivative(false, x, G, C, scale, NULL, dy, x, i), 1e-7);
    for (int i = 0; i < C; i++)
        RT_ASSERT_CLOSE(rt_get(&r, dscale, i), loss_derivative(false, x, G, C, scale, NULL, dy, scale, i), 1e-7);
    rt_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layernorm_by_hand),
        cmocka_unit_test(rmsnorm_by_hand),
        cmocka_unit_test(layernorm_training_all_but_first_axis),
        cmocka_unit_test(layernorm_training_last_axis),
        cmocka_unit_test(layernorm_training_every_axis),
        cmocka_unit_test(rmsnorm_training_with_bias),
        cmocka_unit_test(norm_epsilon_sources),
        cmocka_unit_test(layernorm_strided_half),
        cmocka_unit_test(layernorm_backward_matches_finite_difference),
        cmocka_unit_test(rmsnorm_backward_matches_finite_difference),
        cmocka_unit_test(rmsnorm_backward_from_saved_statistics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
