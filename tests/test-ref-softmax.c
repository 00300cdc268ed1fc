/* The reference executor's softmax (both statistics kinds, stability, masked elements,
 * strides) and softmax backward (against a finite difference of softmax). */
#include "test-ref.h"

/* softmax over P [rows, 3] (or the given dims) with `stats`; outputs handed back. */
static void build_softmax(rt_t *r, int ndim, const int64_t *dim, const int64_t *stride, const double *p,
                          dnnjit_softmax_stats_t stats, dnnjit_tensor_t *s, dnnjit_tensor_t *s0, dnnjit_tensor_t *s1)
{
    *r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t tp = tu_tensor(r->g, "P", ndim, dim, stride, DNNJIT_DATA_TYPE_NOT_SET);
    TU_OK(dnnjit_graph_softmax(r->g, tp, &(dnnjit_softmax_attr_t){.name = "sm", .stats = stats}, s, s0, s1));
    rt_in(r, tp, p);
    rt_out(r, *s);
    if (stats != DNNJIT_SOFTMAX_STATS_NONE)
        rt_out(r, *s0);
    if (stats == DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP)
        rt_out(r, *s1);
    rt_run(r);
}

static void softmax_log_sum_exp_by_hand(void **state)
{
    (void)state;
    rt_t r;
    dnnjit_tensor_t s, lse;
    /* exp(P) = [1, 2, 3], whose sum is 6. */
    const double p[] = {0, log(2.0), log(3.0)};
    build_softmax(&r, 2, TU_DIMS(1, 3), NULL, p, DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP, &s, &lse, NULL);
    const double want[] = {1.0 / 6, 2.0 / 6, 3.0 / 6};
    rt_expect(&r, s, want, 3, 1e-15);
    RT_ASSERT_CLOSE(rt_get(&r, lse, 0), log(6.0), 1e-7); /* stats are FLOAT */
    dnnjit_tensor_info_t info;
    TU_OK(dnnjit_tensor_get_info(r.g, lse, &info));
    assert_int_equal(info.dim[1], 1);
    assert_int_equal(info.data_type, DNNJIT_DATA_TYPE_FLOAT);
    rt_free(&r);
}

static void softmax_max_sum_exp_by_hand(void **state)
{
    (void)state;
    rt_t r;
    dnnjit_tensor_t s, max, sum;
    /* max = log 3; exp(P - max) = [1/3, 2/3, 1], whose sum is 2. */
    const double p[] = {0, log(2.0), log(3.0)};
    build_softmax(&r, 2, TU_DIMS(1, 3), NULL, p, DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP, &s, &max, &sum);
    RT_ASSERT_CLOSE(rt_get(&r, s, 2), 0.5, 1e-15);
    RT_ASSERT_CLOSE(rt_get(&r, max, 0), log(3.0), 1e-7); /* stats are FLOAT */
    RT_ASSERT_CLOSE(rt_get(&r, sum, 0), 2.0, 1e-7);
    rt_free(&r);
}

static void softmax_large_values_are_stable(void **state)
{
    (void)state;
    rt_t r;
    dnnjit_tensor_t s, lse;
    const double p[] = {1000, 1001, 1002, -1000, -1001, -1002};
    build_softmax(&r, 2, TU_DIMS(2, 3), NULL, p, DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP, &s, &lse, NULL);
    double z = 1 + exp(1.0) + exp(2.0);
    RT_ASSERT_CLOSE(rt_get(&r, s, 0), 1 / z, 1e-14);
    RT_ASSERT_CLOSE(rt_get(&r, s, 1), exp(1.0) / z, 1e-14);
    RT_ASSERT_CLOSE(rt_get(&r, s, 2), exp(2.0) / z, 1e-14);
    /* The second row is the first one reversed. */
    RT_ASSERT_CLOSE(rt_get(&r, s, 3), exp(2.0) / z, 1e-14);
    RT_ASSERT_CLOSE(rt_get(&r, s, 4), exp(1.0) / z, 1e-14);
    RT_ASSERT_CLOSE(rt_get(&r, s, 5), 1 / z, 1e-14);
    /* max + log(sum(exp(p - max))), with sum(exp(p - max)) = z / e^2 in both rows. */
    RT_ASSERT_CLOSE(rt_get(&r, lse, 0), 1002 + log(z / exp(2.0)), 1e-7);
    RT_ASSERT_CLOSE(rt_get(&r, lse, 1), -1000 + log(z / exp(2.0)), 1e-7);
    rt_free(&r);
}

static void softmax_strided_batches(void **state)
{
    (void)state;
    tu_seed(21);
    double p[2 * 3 * 4];
    rt_uniform(p, 24, -3, 3);
    rt_t r;
    dnnjit_tensor_t s, lse;
    /* P [2, 3, 4] laid out with its last axis outermost (strides 1, 2, 6). */
    build_softmax(&r, 3, TU_DIMS(2, 3, 4), TU_DIMS(1, 2, 6), p, DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP, &s, &lse, NULL);
    for (int row = 0; row < 6; row++) {
        double z = 0;
        for (int j = 0; j < 4; j++)
            z += exp(p[row * 4 + j]);
        for (int j = 0; j < 4; j++)
            RT_ASSERT_CLOSE(rt_get(&r, s, row * 4 + j), exp(p[row * 4 + j]) / z, 1e-14);
        RT_ASSERT_CLOSE(rt_get(&r, lse, row), log(z), 1e-7);
    }
    rt_free(&r);
}

static void softmax_masked_elements(void **state)
{
    (void)state;
    rt_t r;
    dnnjit_tensor_t s, lse;
    /* -inf gets probability 0; a row of -inf only is NaN (the formula's 0/0). */
    const double p[] = {-INFINITY, 0, 0, -INFINITY, -INFINITY, -INFINITY};
    build_softmax(&r, 2, TU_DIMS(2, 3), NULL, p, DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP, &s, &lse, NULL);
    const double want[] = {0, 0.5, 0.5, NAN, NAN, NAN};
    rt_expect(&r, s, want, 6, 1e-15);
    RT_ASSERT_CLOSE(rt_get(&r, lse, 0), log(2.0), 1e-7);
    assert_true(isnan(rt_get(&r, lse, 1)));
    rt_free(&r);
}

static void softmax_half_output(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t p = tu_tensor(r.g, "P", 2, TU_DIMS(1, 3), NULL, DNNJIT_DATA_TYPE_FLOAT), s;
    TU_OK(dnnjit_graph_softmax(r.g, p, NULL, &s, NULL, NULL));
    const double vp[] = {0, 0, 0};
    rt_in(&r, p, vp);
    rt_out(&r, s);
    rt_run(&r);
    /* 1/3 rounds to half 0x3555. */
    for (int j = 0; j < 3; j++)
        assert_true(rt_get(&r, s, j) == 0.333251953125);
    rt_free(&r);
}

/* sum_j dy_j softmax(p)_j over one row of n. */
static double softmax_loss(const double *p, const double *dy, int n)
{
    double z = 0, l = 0;
    for (int j = 0; j < n; j++)
        z += exp(p[j]);
    for (int j = 0; j < n; j++)
        l += dy[j] * exp(p[j]) / z;
    return l;
}

static void softmax_backward_matches_finite_difference(void **state)
{
    (void)state;
    enum { ROWS = 3, COLS = 5 };
    tu_seed(22);
    double p[ROWS * COLS], dy[ROWS * COLS];
    rt_uniform(p, ROWS * COLS, -2, 2);
    rt_uniform(dy, ROWS * COLS, -1, 1);
    /* P -> softmax -> Y (virtual) -> softmax backward with dY -> dX. */
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t tp = tu_tensor(r.g, "P", 2, TU_DIMS(ROWS, COLS), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t tdy = tu_tensor(r.g, "dY", 2, TU_DIMS(ROWS, COLS), TU_DIMS(1, ROWS), DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t y, dx;
    TU_OK(dnnjit_graph_softmax(r.g, tp, NULL, &y, NULL, NULL));
    TU_OK(dnnjit_graph_softmax_backward(r.g, y, tdy, NULL, &dx));
    rt_in(&r, tp, p);
    rt_in(&r, tdy, dy);
    rt_out(&r, dx);
    rt_run(&r);
    const double h = 1e-6;
    for (int row = 0; row < ROWS; row++)
        for (int j = 0; j < COLS; j++) {
            double plus[COLS], minus[COLS];
            memcpy(plus, &p[row * COLS], sizeof plus);
            memcpy(minus, &p[row * COLS], sizeof minus);
            plus[j] += h;
            minus[j] -= h;
            double fd = (softmax_loss(plus, &dy[row * COLS], COLS) - softmax_loss(minus, &dy[row * COLS], COLS)) / (2 * h);
            RT_ASSERT_CLOSE(rt_get(&r, dx, row * COLS + j), fd, 1e-8);
        }
    rt_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(softmax_log_sum_exp_by_hand),
        cmocka_unit_test(softmax_max_sum_exp_by_hand),
        cmocka_unit_test(softmax_large_values_are_stable),
        cmocka_unit_test(softmax_strided_batches),
        cmocka_unit_test(softmax_masked_elements),
        cmocka_unit_test(softmax_half_output),
        cmocka_unit_test(softmax_backward_matches_finite_difference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
