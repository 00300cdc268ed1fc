/* The reference executor's pointwise modes: one test per mode against a formula written
 * independently here (backward modes against a central difference of the forward formula),
 * then attributes, broadcasting, strides and output types. */
#include "test-ref.h"

#define N 8 /* elements per test input */

static const double gen[N] = {-2.5, -1.25, -0.5, -0.1, 0.3, 0.75, 1.5, 2.25};
static const double pos[N] = {0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 4.5, 7.0};
/* Second operands; elements 2 and 4 equal gen's, for the comparisons. */
static const double other[N] = {1.5, -0.75, -0.5, 2.0, 0.3, -1.5, 0.25, 3.0};
static const double expo[N] = {2.0, -1.0, 0.5, 3.0, 0.0, 1.5, -0.5, 2.5};
static const double truth0[N] = {0, 1, 0, 2.5, -1, 0, 1, 0};
static const double truth1[N] = {0, 0, 1, 1, 0, -3, 1, 0};
static const double grad[N] = {1.0, -0.5, 2.0, 0.25, -1.5, 0.75, 1.25, -2.0};

static double sqrt_2_over_pi(void)
{
    return sqrt(2.0 / acos(-1.0));
}

/* Forward activations with default attributes, written in forms other than the
 * library's where a different form exists. */
static double f_relu(double x) { return x > 0 ? x : 0; }
static double f_tanh(double x) { return (exp(2 * x) - 1) / (exp(2 * x) + 1); }
static double f_sigmoid(double x) { return exp(x) / (1 + exp(x)); }
static double f_elu(double x) { return x > 0 ? x : exp(x) - 1; }
static double f_gelu(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
/* 0.5 (1 + tanh u) is the logistic function of 2u. */
static double f_gelu_tanh(double x) { return x / (1 + exp(-2 * sqrt_2_over_pi() * (x + 0.044715 * x * x * x))); }
static double f_softplus(double x) { return log(1 + exp(x)); }
static double f_swish(double x) { return x / (1 + exp(-x)); }

/* Expected results of the other modes from their inputs v[0..2]. */
static double w_add(const double *v) { return v[0] + v[1]; }
static double w_sub(const double *v) { return v[0] - v[1]; }
static double w_mul(const double *v) { return v[0] * v[1]; }
static double w_div(const double *v) { return v[0] / v[1]; }
static double w_max(const double *v) { return v[0] > v[1] ? v[0] : v[1]; }
static double w_min(const double *v) { return v[0] < v[1] ? v[0] : v[1]; }
static double w_pow(const double *v) { return exp(v[1] * log(v[0])); }
static double w_mod(const double *v) { return v[0] - trunc(v[0] / v[1]) * v[1]; }
static double w_add_square(const double *v) { return v[0] + v[1] * v[1]; }
static double w_sqrt(const double *v) { return pow(v[0], 0.5); }
static double w_rsqrt(const double *v) { return pow(v[0], -0.5); }
static double w_reciprocal(const double *v) { return pow(v[0], -1.0); }
static double w_exp(const double *v) { return expm1(v[0]) + 1; }
static double w_log(const double *v) { return log2(v[0]) / log2(exp(1.0)); }
static double w_neg(const double *v) { return 0.0 - v[0]; }
static double w_abs(const double *v) { return v[0] < 0 ? -v[0] : v[0]; }
static double w_ceil(const double *v) { return -floor(-v[0]); }
static double w_floor(const double *v) { return -ceil(-v[0]); }
static double w_sin(const double *v) { return cos(v[0] - acos(-1.0) / 2); }
static double w_cos(const double *v) { return sin(v[0] + acos(-1.0) / 2); }
static double w_tan(const double *v) { return sin(v[0]) / cos(v[0]); }
static double w_erf(const double *v) { return 1 - erfc(v[0]); }
static double w_identity(const double *v) { return v[0]; }
static double w_relu(const double *v) { return f_relu(v[0]); }
static double w_tanh(const double *v) { return f_tanh(v[0]); }
static double w_sigmoid(const double *v) { return f_sigmoid(v[0]); }
static double w_elu(const double *v) { return f_elu(v[0]); }
static double w_gelu(const double *v) { return f_gelu(v[0]); }
static double w_gelu_tanh(const double *v) { return f_gelu_tanh(v[0]); }
static double w_softplus(const double *v) { return f_softplus(v[0]); }
static double w_swish(const double *v) { return f_swish(v[0]); }
static double w_eq(const double *v) { return v[0] == v[1] ? 1 : 0; }
static double w_neq(const double *v) { return v[0] == v[1] ? 0 : 1; }
static double w_gt(const double *v) { return v[0] > v[1] ? 1 : 0; }
static double w_ge(const double *v) { return v[0] < v[1] ? 0 : 1; }
static double w_lt(const double *v) { return v[1] > v[0] ? 1 : 0; }
static double w_le(const double *v) { return v[0] > v[1] ? 0 : 1; }
static double w_and(const double *v) { return v[0] != 0 && v[1] != 0 ? 1 : 0; }
static double w_or(const double *v) { return v[0] == 0 && v[1] == 0 ? 0 : 1; }
static double w_not(const double *v) { return v[0] == 0 ? 1 : 0; }
static double w_select(const double *v) { return v[2] != 0 ? v[0] : v[1]; }

/* d/dx f at x by a central difference. */
static double derivative(double (*f)(double), double x)
{
    const double h = 1e-6;
    return (f(x + h) - f(x - h)) / (2 * h);
}

typedef struct mode_case {
    dnnjit_pointwise_mode_t mode;
    const double *in[3];
    double (*want)(const double *v); /* the expected result, or */
    double (*fwd)(double);           /* for X_BWD: in[0] * f'(in[1]) with f = fwd */
} mode_case_t;

#define M(name) DNNJIT_POINTWISE_##name
static const mode_case_t mode_cases[] = {
    {M(ADD), {gen, other}, w_add, NULL},
    {M(SUB), {gen, other}, w_sub, NULL},
    {M(MUL), {gen, other}, w_mul, NULL},
    {M(DIV), {gen, other}, w_div, NULL},
    {M(MAX), {gen, other}, w_max, NULL},
    {M(MIN), {gen, other}, w_min, NULL},
    {M(POW), {pos, expo}, w_pow, NULL},
    {M(MOD), {gen, other}, w_mod, NULL},
    {M(ADD_SQUARE), {gen, other}, w_add_square, NULL},
    {M(SQRT), {pos}, w_sqrt, NULL},
    {M(RSQRT), {pos}, w_rsqrt, NULL},
    {M(RECIPROCAL), {gen}, w_reciprocal, NULL},
    {M(EXP), {gen}, w_exp, NULL},
    {M(LOG), {pos}, w_log, NULL},
    {M(NEG), {gen}, w_neg, NULL},
    {M(ABS), {gen}, w_abs, NULL},
    {M(CEIL), {gen}, w_ceil, NULL},
    {M(FLOOR), {gen}, w_floor, NULL},
    {M(SIN), {gen}, w_sin, NULL},
    {M(COS), {gen}, w_cos, NULL},
    {M(TAN), {gen}, w_tan, NULL},
    {M(ERF), {gen}, w_erf, NULL},
    {M(IDENTITY), {gen}, w_identity, NULL},
    {M(RELU_FWD), {gen}, w_relu, NULL},
    {M(TANH_FWD), {gen}, w_tanh, NULL},
    {M(SIGMOID_FWD), {gen}, w_sigmoid, NULL},
    {M(ELU_FWD), {gen}, w_elu, NULL},
    {M(GELU_FWD), {gen}, w_gelu, NULL},
    {M(GELU_APPROX_TANH_FWD), {gen}, w_gelu_tanh, NULL},
    {M(SOFTPLUS_FWD), {gen}, w_softplus, NULL},
    {M(SWISH_FWD), {gen}, w_swish, NULL},
    {M(RELU_BWD), {grad, gen}, NULL, f_relu},
    {M(TANH_BWD), {grad, gen}, NULL, f_tanh},
    {M(SIGMOID_BWD), {grad, gen}, NULL, f_sigmoid},
    {M(ELU_BWD), {grad, gen}, NULL, f_elu},
    {M(GELU_BWD), {grad, gen}, NULL, f_gelu},
    {M(GELU_APPROX_TANH_BWD), {grad, gen}, NULL, f_gelu_tanh},
    {M(SOFTPLUS_BWD), {grad, gen}, NULL, f_softplus},
    {M(SWISH_BWD), {grad, gen}, NULL, f_swish},
    {M(CMP_EQ), {gen, other}, w_eq, NULL},
    {M(CMP_NEQ), {gen, other}, w_neq, NULL},
    {M(CMP_GT), {gen, other}, w_gt, NULL},
    {M(CMP_GE), {gen, other}, w_ge, NULL},
    {M(CMP_LT), {gen, other}, w_lt, NULL},
    {M(CMP_LE), {gen, other}, w_le, NULL},
    {M(LOGICAL_AND), {truth0, truth1}, w_and, NULL},
    {M(LOGICAL_OR), {truth0, truth1}, w_or, NULL},
    {M(LOGICAL_NOT), {truth0}, w_not, NULL},
    {M(BINARY_SELECT), {gen, other, truth0}, w_select, NULL},
};
#define MODE_CASES ((int)(sizeof mode_cases / sizeof *mode_cases))

/* Runs one mode on 8 DOUBLE elements per input and checks every output element. */
static void mode_test(void **state)
{
    const mode_case_t *c = *state;
    int arity = dnnjit_pointwise_mode_arity(c->mode);
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    static const char *const names[3] = {"a", "b", "c"};
    dnnjit_tensor_t in[3] = {0}, y;
    for (int i = 0; i < arity; i++) {
        in[i] = tu_tensor(r.g, names[i], 1, TU_DIMS(N), NULL, DNNJIT_DATA_TYPE_NOT_SET);
        rt_in(&r, in[i], c->in[i]);
    }
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.name = "pw", .mode = c->mode}, in[0], in[1], in[2],
                                 &y));
    rt_out(&r, y);
    rt_run(&r);
    for (int j = 0; j < N; j++) {
        double v[3] = {0, 0, 0};
        for (int i = 0; i < arity; i++)
            v[i] = c->in[i][j];
        double want = c->fwd ? v[0] * derivative(c->fwd, v[1]) : c->want(v);
        RT_ASSERT_CLOSE(rt_get(&r, y, j), want, c->fwd ? 1e-8 : 1e-13);
    }
    rt_free(&r);
}

static void mode_table_covers_every_mode(void **state)
{
    (void)state;
    int seen[DNNJIT_POINTWISE_MODE_COUNT_] = {0};
    for (int i = 0; i < MODE_CASES; i++)
        seen[mode_cases[i].mode]++;
    for (int m = 0; m < DNNJIT_POINTWISE_MODE_COUNT_; m++)
        if (seen[m] != 1)
            fail_msg("mode %s has %d test cases", dnnjit_pointwise_mode_name((dnnjit_pointwise_mode_t)m), seen[m]);
}

/* Runs a unary (or, with b, binary) mode with attributes on a [n] DOUBLE input. */
static void run_mode(rt_t *r, const dnnjit_pointwise_attr_t *attr, const double *a, const double *b, int n,
                     dnnjit_tensor_t *y)
{
    dnnjit_tensor_t ta = tu_tensor(r->g, "a", 1, TU_DIMS(n), NULL, DNNJIT_DATA_TYPE_NOT_SET), tb = 0;
    rt_in(r, ta, a);
    if (b) {
        tb = tu_tensor(r->g, "b", 1, TU_DIMS(n), NULL, DNNJIT_DATA_TYPE_NOT_SET);
        rt_in(r, tb, b);
    }
    TU_OK(dnnjit_graph_pointwise(r->g, attr, ta, tb, DNNJIT_TENSOR_NONE, y));
    rt_out(r, *y);
    rt_run(r);
}

static const dnnjit_pointwise_attr_t relu_clipped = {.mode = DNNJIT_POINTWISE_RELU_FWD,
                                                     .relu_lower_clip = -1.0,
                                                     .relu_lower_clip_slope = 0.1,
                                                     .has_relu_upper_clip = true,
                                                     .relu_upper_clip = 2.0};

static void relu_clips_and_slope(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    const double x[] = {-3, -1, -0.5, 0, 1.5, 2, 5, NAN};
    /* Below -1: -1 + 0.1 (x + 1); at -1 itself the line gives -1; above 2: 2; NaN stays. */
    const double want[] = {-1.2, -1, -0.5, 0, 1.5, 2, 2, NAN};
    dnnjit_tensor_t y;
    run_mode(&r, &relu_clipped, x, NULL, 8, &y);
    rt_expect(&r, y, want, 8, 1e-15);
    rt_free(&r);
}

/* Non-finite inputs: a NaN stays NaN, with or without the upper clip, and the plain ReLU
 * takes -inf to 0 (as max(x, 0) does, where 0 * -inf would give NaN); the clipped one takes
 * +inf to its upper clip and -inf down its slope. */
static void relu_non_finite(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    const double x[] = {NAN, -INFINITY, INFINITY, -2, 0, 3};
    const double plain[] = {NAN, 0, INFINITY, 0, 0, 3}, clipped[] = {NAN, -INFINITY, 2, -1.1, 0, 2};
    dnnjit_tensor_t y;
    run_mode(&r, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_RELU_FWD}, x, NULL, 6, &y);
    rt_expect(&r, y, plain, 6, 1e-15);
    rt_free(&r);
    r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    run_mode(&r, &relu_clipped, x, NULL, 6, &y);
    rt_expect(&r, y, clipped, 6, 1e-15);
    rt_free(&r);
}

static double clipped_relu(double x)
{
    double y = x > -1 ? x : -1 + 0.1 * (x + 1);
    return y < 2 ? y : 2;
}

static void relu_backward_clips_and_slope(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_pointwise_attr_t attr = relu_clipped;
    attr.mode = DNNJIT_POINTWISE_RELU_BWD;
    const double dy[] = {2, 2, 2, 2, 2, 2, 2};
    const double x[] = {-3, -1, -0.5, 0, 1.5, 2, 5};
    /* The slope at and below the lower clip, 1 between the clips, 0 where the upper clip
     * holds the output (from x = 2 on). */
    const double want[] = {0.2, 0.2, 2, 2, 2, 0, 0};
    dnnjit_tensor_t y;
    run_mode(&r, &attr, dy, x, 7, &y);
    rt_expect(&r, y, want, 7, 1e-15);
    /* Away from the kinks it is the derivative of the clipped forward. */
    const int smooth[] = {0, 2, 3, 4, 6};
    for (int i = 0; i < 5; i++)
        RT_ASSERT_CLOSE(rt_get(&r, y, smooth[i]), dy[smooth[i]] * derivative(clipped_relu, x[smooth[i]]), 1e-8);
    rt_free(&r);
}

static double elu_half(double x) { return x > 0 ? x : 0.5 * (exp(x) - 1); }
static double softplus_two(double x) { return log(1 + exp(2 * x)) / 2; }
static double swish_two(double x) { return x / (1 + exp(-2 * x)); }
static double elu_one(double x) { return x > 0 ? x : exp(x) - 1; }
static double elu_zero(double x) { return x > 0 ? x : 0; }
static double swish_zero(double x) { return x / 2; }

/* ELU alpha, softplus beta and swish beta change the forward and backward modes; 0 alone
 * takes the default, and 0 with its has_ flag is used as given. */
static void activation_attributes(void **state)
{
    (void)state;
    const struct {
        dnnjit_pointwise_mode_t fwd, bwd;
        dnnjit_pointwise_attr_t attr;
        double (*f)(double);
    } cases[] = {
        {M(ELU_FWD), M(ELU_BWD), {.elu_alpha = 0.5}, elu_half},
        {M(SOFTPLUS_FWD), M(SOFTPLUS_BWD), {.softplus_beta = 2.0}, softplus_two},
        {M(SWISH_FWD), M(SWISH_BWD), {.swish_beta = 2.0}, swish_two},
        {M(ELU_FWD), M(ELU_BWD), {.elu_alpha = 0}, elu_one},
        {M(ELU_FWD), M(ELU_BWD), {.elu_alpha = 0, .has_elu_alpha = true}, elu_zero},
        {M(SWISH_FWD), M(SWISH_BWD), {.swish_beta = 0, .has_swish_beta = true}, swish_zero},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        dnnjit_pointwise_attr_t attr = cases[c].attr;
        dnnjit_tensor_t y;
        rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
        attr.mode = cases[c].fwd;
        run_mode(&r, &attr, gen, NULL, N, &y);
        for (int j = 0; j < N; j++)
            RT_ASSERT_CLOSE(rt_get(&r, y, j), cases[c].f(gen[j]), 1e-13);
        rt_free(&r);
        r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
        attr.mode = cases[c].bwd;
        run_mode(&r, &attr, grad, gen, N, &y);
        for (int j = 0; j < N; j++)
            RT_ASSERT_CLOSE(rt_get(&r, y, j), grad[j] * derivative(cases[c].f, gen[j]), 1e-8);
        rt_free(&r);
    }
}

/* Large arguments must not overflow into inf or NaN. */
static void activations_saturate_without_overflow(void **state)
{
    (void)state;
    const struct {
        dnnjit_pointwise_mode_t mode;
        double want[4];
    } cases[] = {
        {M(SOFTPLUS_FWD), {1000, 0, 800, 0}},   {M(SIGMOID_FWD), {1, 0, 1, 0}}, {M(TANH_FWD), {1, -1, 1, -1}},
        {M(SWISH_FWD), {1000, 0, 800, 0}},      {M(ELU_FWD), {1000, -1, 800, -1}},
        {M(GELU_FWD), {1000, 0, 800, 0}},       {M(GELU_APPROX_TANH_FWD), {1000, 0, 800, 0}},
    };
    const double x[] = {1000, -1000, 800, -800};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
        dnnjit_tensor_t y;
        run_mode(&r, &(dnnjit_pointwise_attr_t){.mode = cases[c].mode}, x, NULL, 4, &y);
        for (int j = 0; j < 4; j++)
            if (!rt_close(rt_get(&r, y, j), cases[c].want[j], 1e-12))
                fail_msg("%s(%g) = %g, expected %g", dnnjit_pointwise_mode_name(cases[c].mode), x[j], rt_get(&r, y, j),
                         cases[c].want[j]);
        rt_free(&r);
    }
}

static void mod_pow_and_nan_conventions(void **state)
{
    (void)state;
    const struct {
        dnnjit_pointwise_mode_t mode;
        double a, b, want;
    } cases[] = {
        {M(MOD), -7, 3, -1},       /* the sign of the dividend */
        {M(MOD), 7, -3, 1},        {M(MOD), 5.5, 2, 1.5},
        {M(POW), 2, 10, 1024},     {M(POW), -2, 3, -8},
        {M(POW), -8, 1.0 / 3, NAN}, /* a negative base with a non-integer exponent */
        {M(MAX), NAN, 1, 1},       /* fmax: a NaN beside a number is ignored */
        {M(MIN), 2, NAN, 2},       {M(DIV), 1, 0, INFINITY},
        {M(CMP_EQ), NAN, NAN, 0},  {M(CMP_NEQ), NAN, NAN, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
        dnnjit_tensor_t y;
        run_mode(&r, &(dnnjit_pointwise_attr_t){.mode = cases[c].mode}, &cases[c].a, &cases[c].b, 1, &y);
        if (!rt_close(rt_get(&r, y, 0), cases[c].want, 1e-15))
            fail_msg("%s(%g, %g) = %g, expected %g", dnnjit_pointwise_mode_name(cases[c].mode), cases[c].a, cases[c].b,
                     rt_get(&r, y, 0), cases[c].want);
        rt_free(&r);
    }
}

/* a [2, 3] op b of the given dims and strides, into a DOUBLE output; `want` row-major. */
static void check_binary(dnnjit_pointwise_mode_t mode, int na, const int64_t *da, const int64_t *sa, const double *a,
                         int nb, const int64_t *db, const int64_t *sb, const double *b, const double *want,
                         int64_t count)
{
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t ta = tu_tensor(r.g, "a", na, da, sa, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t tb = tu_tensor(r.g, "b", nb, db, sb, DNNJIT_DATA_TYPE_NOT_SET), y;
    rt_in(&r, ta, a);
    rt_in(&r, tb, b);
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = mode}, ta, tb, DNNJIT_TENSOR_NONE, &y));
    rt_out(&r, y);
    rt_run(&r);
    rt_expect(&r, y, want, count, 0);
    rt_free(&r);
}

static void broadcast_missing_leading_dim(void **state)
{
    (void)state;
    const double a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20, 30};
    const double want[] = {11, 22, 33, 14, 25, 36};
    check_binary(M(ADD), 2, TU_DIMS(2, 3), NULL, a, 1, TU_DIMS(3), NULL, b, want, 6);
    /* The wider input second: the output takes its rank. */
    check_binary(M(ADD), 1, TU_DIMS(3), NULL, b, 2, TU_DIMS(2, 3), NULL, a, want, 6);
}

static void broadcast_size_one_dims(void **state)
{
    (void)state;
    const double col[] = {1, 2}, row[] = {10, 20, 30};
    const double want[] = {10, 20, 30, 20, 40, 60};
    check_binary(M(MUL), 2, TU_DIMS(2, 1), NULL, col, 2, TU_DIMS(1, 3), NULL, row, want, 6);
}

static void broadcast_stride_zero(void **state)
{
    (void)state;
    /* a is one row of 3 repeated over 2 rows by a stride of 0: its buffer holds 3 values,
     * and the harness writes both logical rows to the same memory. */
    const double a[] = {1, 2, 3, 1, 2, 3}, b[] = {10, 20, 30, 40, 50, 60};
    const double want[] = {-9, -18, -27, -39, -48, -57};
    check_binary(M(SUB), 2, TU_DIMS(2, 3), TU_DIMS(0, 1), a, 2, TU_DIMS(2, 3), NULL, b, want, 6);
}

static void transposed_input_and_output_order(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    /* a is [2, 3] stored column-major; b is packed row-major. */
    dnnjit_tensor_t a = tu_tensor(r.g, "a", 2, TU_DIMS(2, 3), TU_DIMS(1, 2), DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t b = tu_tensor(r.g, "b", 2, TU_DIMS(2, 3), NULL, DNNJIT_DATA_TYPE_NOT_SET), y;
    const double va[] = {1, 2, 3, 4, 5, 6}, vb[] = {6, 5, 4, 3, 2, 1};
    rt_in(&r, a, va);
    rt_in(&r, b, vb);
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = M(MUL)}, a, b, DNNJIT_TENSOR_NONE, &y));
    rt_out(&r, y);
    rt_run(&r);
    const double want[] = {6, 10, 12, 12, 10, 6};
    rt_expect(&r, y, want, 6, 0);
    /* The output follows a's (column-major) order; its memory holds the columns. */
    int i = rt_find(&r, y);
    assert_int_equal(r.info[i].stride[0], 1);
    assert_int_equal(r.info[i].stride[1], 2);
    const double *mem = r.buf[i];
    assert_true(mem[1] == 12 && mem[2] == 10);
    rt_free(&r);
}

static void binary_select_broadcast_condition(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t a = tu_tensor(r.g, "a", 2, TU_DIMS(2, 3), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t b = tu_tensor(r.g, "b", 1, TU_DIMS(1), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t cond = tu_tensor(r.g, "cond", 2, TU_DIMS(2, 1), NULL, DNNJIT_DATA_TYPE_BOOLEAN), y;
    const double va[] = {1, 2, 3, 4, 5, 6}, vb[] = {-1}, vc[] = {0, 1};
    rt_in(&r, a, va);
    rt_in(&r, b, vb);
    rt_in(&r, cond, vc);
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = M(BINARY_SELECT)}, a, b, cond, &y));
    rt_out(&r, y);
    rt_run(&r);
    const double want[] = {-1, -1, -1, 4, 5, 6};
    rt_expect(&r, y, want, 6, 0);
    rt_free(&r);
}

/* A unary or binary mode on [n] inputs of the given types, into an output of `out_type`. */
static void check_typed(dnnjit_pointwise_mode_t mode, dnnjit_data_type_t in_type, const double *a, const double *b,
                        dnnjit_data_type_t out_type, const double *want, int n)
{
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t ta = tu_tensor(r.g, "a", 1, TU_DIMS(n), NULL, in_type), tb = 0, y;
    rt_in(&r, ta, a);
    if (b) {
        tb = tu_tensor(r.g, "b", 1, TU_DIMS(n), NULL, in_type);
        rt_in(&r, tb, b);
    }
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = mode}, ta, tb, DNNJIT_TENSOR_NONE, &y));
    TU_OK(dnnjit_tensor_set_data_type(r.g, y, out_type));
    rt_out(&r, y);
    rt_run(&r);
    rt_expect(&r, y, want, n, 0);
    rt_free(&r);
}

static void integer_inputs_and_outputs(void **state)
{
    (void)state;
    const double a[] = {7, -7, 5, 9, 100}, b[] = {2, 2, 2, 2, 3};
    /* Real division, rounded to nearest even only when stored. */
    const double want[] = {4, -4, 2, 4, 33};
    check_typed(M(DIV), DNNJIT_DATA_TYPE_INT32, a, b, DNNJIT_DATA_TYPE_INT32, want, 5);
    const double big[] = {100, -100, 1, 2, 3}, mul[] = {2, 2, 1, 1, 1};
    const double clamped[] = {127, -128, 1, 2, 3};
    check_typed(M(MUL), DNNJIT_DATA_TYPE_INT8, big, mul, DNNJIT_DATA_TYPE_INT8, clamped, 5);
}

static void comparisons_and_logic_to_boolean(void **state)
{
    (void)state;
    const double a[] = {1, 2, 3, -1}, b[] = {2, 2, 2, -2};
    const double gt[] = {0, 0, 1, 1};
    check_typed(M(CMP_GT), DNNJIT_DATA_TYPE_FLOAT, a, b, DNNJIT_DATA_TYPE_BOOLEAN, gt, 4);
    const double flags[] = {0, 5, -1, 0}, negated[] = {1, 0, 0, 1};
    check_typed(M(LOGICAL_NOT), DNNJIT_DATA_TYPE_INT8, flags, NULL, DNNJIT_DATA_TYPE_INT8, negated, 4);
}

static void narrow_float_outputs_round(void **state)
{
    (void)state;
    const double ones[] = {1, 65504, -1, 1e-8}, three[] = {3, 0.5, 3, 1};
    /* 1/3 in half is 0x3555; 65504 / 0.5 overflows to inf; 1e-8 is below half the
     * smallest subnormal (2^-25) and flushes to 0. */
    const double half[] = {0.333251953125, INFINITY, -0.333251953125, 0};
    check_typed(M(DIV), DNNJIT_DATA_TYPE_DOUBLE, ones, three, DNNJIT_DATA_TYPE_HALF, half, 4);
    /* 1/3 in bfloat16 is 0x3eab = 0.333984375; 131008 rounds up to 2^17, and 1e-8 to
     * 1.34375 * 2^-27 (bf16 has float's exponent range). */
    const double bf16[] = {0.333984375, 131072, -0.333984375, 0x1.58p-27};
    check_typed(M(DIV), DNNJIT_DATA_TYPE_DOUBLE, ones, three, DNNJIT_DATA_TYPE_BFLOAT16, bf16, 4);
    const double x[] = {0.3, 1000, -1000, 1e5}, k[] = {1, 1, 1, 1};
    /* E4M3 saturates at +-448 (0.3 rounds to 0.3125); E5M2 overflows to inf (0.3 to
     * 0.3125 as well, 1000 to 1024). */
    const double e4m3[] = {0.3125, 448, -448, 448};
    const double e5m2[] = {0.3125, 1024, -1024, INFINITY};
    check_typed(M(MUL), DNNJIT_DATA_TYPE_DOUBLE, x, k, DNNJIT_DATA_TYPE_FP8_E4M3, e4m3, 4);
    check_typed(M(MUL), DNNJIT_DATA_TYPE_DOUBLE, x, k, DNNJIT_DATA_TYPE_FP8_E5M2, e5m2, 4);
}

static void mixed_input_types(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t a = tu_tensor(r.g, "a", 1, TU_DIMS(3), NULL, DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t b = tu_tensor(r.g, "b", 1, TU_DIMS(3), NULL, DNNJIT_DATA_TYPE_INT32), y;
    /* 0.1 is stored in half as 0x2e66 = 0.0999755859375. */
    const double va[] = {0.1, 1.5, -2}, vb[] = {1, 2, 3};
    rt_in(&r, a, va);
    rt_in(&r, b, vb);
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = M(ADD)}, a, b, DNNJIT_TENSOR_NONE, &y));
    rt_out(&r, y);
    rt_run(&r);
    const double want[] = {1.0999755859375, 3.5, 1};
    rt_expect(&r, y, want, 3, 0);
    rt_free(&r);
}

int main(void)
{
    static char names[MODE_CASES][64];
    struct CMUnitTest tests[MODE_CASES + 16];
    int n = 0;
    for (int i = 0; i < MODE_CASES; i++) {
        snprintf(names[i], sizeof names[i], "mode_%s", dnnjit_pointwise_mode_name(mode_cases[i].mode));
        tests[n++] = (struct CMUnitTest){.name = names[i], .test_func = mode_test,
                                         .initial_state = (void *)&mode_cases[i]};
    }
    const struct CMUnitTest others[] = {
        cmocka_unit_test(mode_table_covers_every_mode),
        cmocka_unit_test(relu_clips_and_slope),
        cmocka_unit_test(relu_non_finite),
        cmocka_unit_test(relu_backward_clips_and_slope),
        cmocka_unit_test(activation_attributes),
        cmocka_unit_test(activations_saturate_without_overflow),
        cmocka_unit_test(mod_pow_and_nan_conventions),
        cmocka_unit_test(broadcast_missing_leading_dim),
        cmocka_unit_test(broadcast_size_one_dims),
        cmocka_unit_test(broadcast_stride_zero),
        cmocka_unit_test(transposed_input_and_output_order),
        cmocka_unit_test(binary_select_broadcast_condition),
        cmocka_unit_test(integer_inputs_and_outputs),
        cmocka_unit_test(comparisons_and_logic_to_boolean),
        cmocka_unit_test(narrow_float_outputs_round),
        cmocka_unit_test(mixed_input_types),
    };
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        tests[n++] = others[i];
    return _cmocka_run_group_tests("test-ref-pointwise", tests, (size_t)n, NULL, NULL);
}
