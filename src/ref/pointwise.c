/* Pointwise nodes, and the definition of every pointwise mode (dnnjit.h points here).
 *
 * OUT_0 has the numpy broadcast of the inputs' dims (right-aligned; a size-1 or missing
 * axis stretches), and element i of it is mode(IN_0[i], IN_1[i], IN_2[i]) with each input
 * read at the broadcast index. The table in apply() below is the meaning of each mode, in
 * float64. In it, a, b and c are IN_0, IN_1 and IN_2; "true" means != 0. A backward
 * activation X_BWD takes the incoming gradient dy = IN_0 and the forward input x = IN_1,
 * and gives dy * f'(x) for the forward activation f = X_FWD with the same attributes.
 *
 * Conventions worth stating:
 * - MAX and MIN are C's fmax / fmin (as CUDA's fmaxf / fminf): a NaN operand is ignored
 *   when the other one is a number.
 * - MOD is C's fmod: the result has the sign of a (fmod(-7, 3) = -1).
 * - Integer tensors are read as exact values and every mode computes on reals; rounding
 *   to an integer output happens only when storing (DIV of INT32 7 by 2 stores 4, the
 *   nearest even integer to 3.5).
 * - The kinks of RELU, ELU and the clips are assigned to the side stated in their rows.
 */
#include "ref/ref.h"

#include <math.h>

/* 1/sqrt(2), 1/sqrt(2*pi) and sqrt(2/pi), to full double precision (strict C11 has no M_SQRT1_2). */
#define SQRT_HALF 0.707106781186547524400844362105
#define INV_SQRT_2PI 0.398942280401432677939946059934
#define SQRT_2_OVER_PI 0.797884560802865355879892119869
/* The cubic coefficient of the tanh approximation of GELU. */
#define GELU_TANH_CUBIC 0.044715

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* log(1 + exp(z)) without overflow for large z: max(z, 0) + log1p(exp(-|z|)) is the same
 * function, written so that exp never sees a large positive argument. */
static double log1p_exp(double z)
{
    return fmax(z, 0.0) + log1p(exp(-fabs(z)));
}

/* The ReLU family before the upper clip: g(x) = x above the lower clip l, and the line
 * l + slope * (x - l) at and below it (slope 0 gives l there, -inf included, as max(x, l)
 * does); a NaN stays NaN. */
static double relu_lower(const dnnjit__op_attr_t *at, double x)
{
    double l = at->pointwise.relu_lower_clip, s = at->pointwise.relu_lower_clip_slope;
    return x <= l ? (s == 0 ? l : l + s * (x - l)) : x;
}

/* The GELU tanh approximation's inner argument u(x) = sqrt(2/pi) * (x + 0.044715 x^3). */
static double gelu_tanh_arg(double x)
{
    return SQRT_2_OVER_PI * (x + GELU_TANH_CUBIC * x * x * x);
}

static double apply(const dnnjit__op_attr_t *at, dnnjit_pointwise_mode_t mode, double a, double b, double c)
{
    double alpha = at->pointwise.elu_alpha, sp_beta = at->pointwise.softplus_beta, sw_beta = at->pointwise.swish_beta;
    bool upper = at->pointwise.has_relu_upper_clip;
    double u = at->pointwise.relu_upper_clip;
    switch (mode) {
    case DNNJIT_POINTWISE_ADD: return a + b;
    case DNNJIT_POINTWISE_SUB: return a - b;
    case DNNJIT_POINTWISE_MUL: return a * b;
    case DNNJIT_POINTWISE_DIV: return a / b;
    case DNNJIT_POINTWISE_MAX: return fmax(a, b);
    case DNNJIT_POINTWISE_MIN: return fmin(a, b);
    case DNNJIT_POINTWISE_POW: return pow(a, b);
    case DNNJIT_POINTWISE_MOD: return fmod(a, b);
    case DNNJIT_POINTWISE_ADD_SQUARE: return a + b * b;
    case DNNJIT_POINTWISE_SQRT: return sqrt(a);
    case DNNJIT_POINTWISE_RSQRT: return 1.0 / sqrt(a);
    case DNNJIT_POINTWISE_RECIPROCAL: return 1.0 / a;
    case DNNJIT_POINTWISE_EXP: return exp(a);
    case DNNJIT_POINTWISE_LOG: return log(a);
    case DNNJIT_POINTWISE_NEG: return -a;
    case DNNJIT_POINTWISE_ABS: return fabs(a);
    case DNNJIT_POINTWISE_CEIL: return ceil(a);
    case DNNJIT_POINTWISE_FLOOR: return floor(a);
    case DNNJIT_POINTWISE_SIN: return sin(a);
    case DNNJIT_POINTWISE_COS: return cos(a);
    case DNNJIT_POINTWISE_TAN: return tan(a);
    case DNNJIT_POINTWISE_ERF: return erf(a);
    case DNNJIT_POINTWISE_IDENTITY: return a;
    /* y = g(a) (see relu_lower), then u where y > u when an upper clip u is set (a NaN
     * stays NaN, unlike with fmin). */
    case DNNJIT_POINTWISE_RELU_FWD: return upper && relu_lower(at, a) > u ? u : relu_lower(at, a);
    case DNNJIT_POINTWISE_TANH_FWD: return tanh(a);
    case DNNJIT_POINTWISE_SIGMOID_FWD: return sigmoid(a);
    /* a for a > 0, alpha * (exp(a) - 1) at and below 0. */
    case DNNJIT_POINTWISE_ELU_FWD: return a > 0 ? a : alpha * expm1(a);
    /* Exact GELU: a * Phi(a), Phi the standard normal distribution function. */
    case DNNJIT_POINTWISE_GELU_FWD: return 0.5 * a * (1.0 + erf(a * SQRT_HALF));
    case DNNJIT_POINTWISE_GELU_APPROX_TANH_FWD: return 0.5 * a * (1.0 + tanh(gelu_tanh_arg(a)));
    /* log(1 + exp(beta a)) / beta. */
    case DNNJIT_POINTWISE_SOFTPLUS_FWD: return log1p_exp(sp_beta * a) / sp_beta;
    /* a * sigmoid(beta a). */
    case DNNJIT_POINTWISE_SWISH_FWD: return a * sigmoid(sw_beta * a);
    /* g'(b) (1 above the lower clip, the slope at and below it) where g(b) is below the
     * upper clip or there is none; 0 where the upper clip holds the output (g(b) >= u). */
    case DNNJIT_POINTWISE_RELU_BWD:
        return upper && relu_lower(at, b) >= u ? 0.0
               : b > at->pointwise.relu_lower_clip ? a
                                                   : a * at->pointwise.relu_lower_clip_slope;
    case DNNJIT_POINTWISE_TANH_BWD: return a * (1.0 - tanh(b) * tanh(b));
    case DNNJIT_POINTWISE_SIGMOID_BWD: return a * sigmoid(b) * (1.0 - sigmoid(b));
    case DNNJIT_POINTWISE_ELU_BWD: return b > 0 ? a : a * alpha * exp(b);
    /* d/dx x Phi(x) = Phi(x) + x phi(x), phi the standard normal density. */
    case DNNJIT_POINTWISE_GELU_BWD:
        return a * (0.5 * (1.0 + erf(b * SQRT_HALF)) + b * INV_SQRT_2PI * exp(-0.5 * b * b));
    case DNNJIT_POINTWISE_GELU_APPROX_TANH_BWD: {
        double t = tanh(gelu_tanh_arg(b));
        double du = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_TANH_CUBIC * b * b);
        return a * (0.5 * (1.0 + t) + 0.5 * b * (1.0 - t * t) * du);
    }
    case DNNJIT_POINTWISE_SOFTPLUS_BWD: return a * sigmoid(sp_beta * b);
    /* d/dx x s(beta x) = s(beta x) + beta x s(beta x) (1 - s(beta x)). */
    case DNNJIT_POINTWISE_SWISH_BWD: {
        double s = sigmoid(sw_beta * b);
        return a * (s + sw_beta * b * s * (1.0 - s));
    }
    case DNNJIT_POINTWISE_CMP_EQ: return a == b;
    case DNNJIT_POINTWISE_CMP_NEQ: return a != b;
    case DNNJIT_POINTWISE_CMP_GT: return a > b;
    case DNNJIT_POINTWISE_CMP_GE: return a >= b;
    case DNNJIT_POINTWISE_CMP_LT: return a < b;
    case DNNJIT_POINTWISE_CMP_LE: return a <= b;
    case DNNJIT_POINTWISE_LOGICAL_AND: return a != 0 && b != 0;
    case DNNJIT_POINTWISE_LOGICAL_OR: return a != 0 || b != 0;
    case DNNJIT_POINTWISE_LOGICAL_NOT: return a == 0;
    case DNNJIT_POINTWISE_BINARY_SELECT: return c != 0 ? a : b;
    default: return NAN; /* unreachable: validation accepts only the modes above */
    }
}

dnnjit_status_t dnnjit__ref_pointwise(dnnjit_graph_t g, const dnnjit__node_t *n, const dnnjit__ref_view_t *const *in,
                                      const dnnjit__ref_view_t *const *out)
{
    (void)g;
    const dnnjit__ref_view_t *y = out[0];
    int64_t idx[DNNJIT_MAX_DIMS] = {0};
    do {
        double v[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++)
            if (in[i])
                v[i] = dnnjit__ref_get(in[i], y->ndim, idx);
        dnnjit__ref_put(y, y->ndim, idx, apply(&n->attr, n->attr.pointwise.mode, v[0], v[1], v[2]));
    } while (dnnjit__ref_next(y->ndim, y->dim, idx));
    return DNNJIT_STATUS_SUCCESS;
}
