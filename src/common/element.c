/* Conversions between double and every storage type, used by the reference executor and
 * by tests. Narrow float formats are handled by one routine parameterised by exponent and
 * mantissa widths, rounding to nearest even. */
#include "dnnjit.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct small_float {
    int ebits, mbits;
    bool has_inf;   /* IEEE-style: an all-ones exponent means inf / NaN */
    uint32_t nan;   /* canonical NaN bit pattern (without sign) */
} small_float_t;

static const small_float_t fmt_half = {5, 10, true, 0x7e00};
static const small_float_t fmt_bf16 = {8, 7, true, 0x7fc0};
/* E4M3 "fn": no infinities, S.1111.111 is NaN, the largest finite value is 448. */
static const small_float_t fmt_e4m3 = {4, 3, false, 0x7f};
static const small_float_t fmt_e5m2 = {5, 2, true, 0x7e};

static double small_max_finite(const small_float_t *f)
{
    int bias = (1 << (f->ebits - 1)) - 1;
    if (f->has_inf) {
        int emax = (1 << f->ebits) - 2 - bias;
        return ldexp(2.0 - ldexp(1.0, -f->mbits), emax);
    }
    /* All-ones exponent is usable except for the all-ones mantissa (NaN). */
    int emax = (1 << f->ebits) - 1 - bias;
    return ldexp(2.0 - ldexp(2.0, -f->mbits), emax);
}

static double small_decode(const small_float_t *f, uint32_t bits)
{
    int bias = (1 << (f->ebits - 1)) - 1;
    uint32_t sign = bits >> (f->ebits + f->mbits) & 1u;
    uint32_t e = bits >> f->mbits & ((1u << f->ebits) - 1);
    uint32_t m = bits & ((1u << f->mbits) - 1);
    uint32_t emask = (1u << f->ebits) - 1;
    double v;
    if (f->has_inf && e == emask)
        v = m ? NAN : INFINITY;
    else if (!f->has_inf && e == emask && m == (1u << f->mbits) - 1)
        v = NAN;
    else if (e == 0)
        v = ldexp((double)m, 1 - bias - f->mbits);
    else
        v = ldexp(1.0 + ldexp((double)m, -f->mbits), (int)e - bias);
    return sign ? -v : v;
}

static uint32_t small_encode(const small_float_t *f, double x)
{
    int bias = (1 << (f->ebits - 1)) - 1;
    uint32_t sign = signbit(x) ? 1u << (f->ebits + f->mbits) : 0;
    if (isnan(x))
        return sign | f->nan;
    double a = fabs(x);
    double max = small_max_finite(f);
    uint32_t inf_bits = ((1u << f->ebits) - 1) << f->mbits;
    uint32_t max_bits = f->has_inf ? inf_bits - 1 : (((1u << f->ebits) - 1) << f->mbits) | ((1u << f->mbits) - 2);
    if (isinf(a))
        return sign | (f->has_inf ? inf_bits : max_bits);
    if (a == 0)
        return sign;
    int e;
    frexp(a, &e);
    int E = e - 1; /* a = 1.x * 2^E */
    int emin = 1 - bias;
    if (E < emin) {
        /* Subnormal: count quanta of the smallest subnormal. Rounding up to 2^mbits quanta
         * gives exactly the smallest normal's encoding. */
        double q = nearbyint(ldexp(a, f->mbits - emin));
        return sign | (uint32_t)q;
    }
    double q = nearbyint(ldexp(a, f->mbits - E));
    if (q >= ldexp(1.0, f->mbits + 1)) {
        q = ldexp(1.0, f->mbits);
        E++;
    }
    if (ldexp(q, E - f->mbits) > max)
        return sign | (f->has_inf ? inf_bits : max_bits);
    return sign | (uint32_t)(E + bias) << f->mbits | ((uint32_t)q - (1u << f->mbits));
}

static double clamp_round(double x, double lo, double hi)
{
    if (isnan(x))
        return 0;
    x = nearbyint(x);
    return x < lo ? lo : x > hi ? hi : x;
}

double dnnjit_element_load(dnnjit_data_type_t type, const void *buffer, int64_t index)
{
    if (!buffer)
        return NAN;
    switch (type) {
    case DNNJIT_DATA_TYPE_FLOAT:
        return ((const float *)buffer)[index];
    case DNNJIT_DATA_TYPE_DOUBLE:
        return ((const double *)buffer)[index];
    case DNNJIT_DATA_TYPE_HALF:
        return small_decode(&fmt_half, ((const uint16_t *)buffer)[index]);
    case DNNJIT_DATA_TYPE_BFLOAT16:
        return small_decode(&fmt_bf16, ((const uint16_t *)buffer)[index]);
    case DNNJIT_DATA_TYPE_FP8_E4M3:
        return small_decode(&fmt_e4m3, ((const uint8_t *)buffer)[index]);
    case DNNJIT_DATA_TYPE_FP8_E5M2:
        return small_decode(&fmt_e5m2, ((const uint8_t *)buffer)[index]);
    case DNNJIT_DATA_TYPE_INT8:
        return ((const int8_t *)buffer)[index];
    case DNNJIT_DATA_TYPE_INT32:
        return ((const int32_t *)buffer)[index];
    case DNNJIT_DATA_TYPE_INT64:
        return (double)((const int64_t *)buffer)[index];
    case DNNJIT_DATA_TYPE_BOOLEAN:
        return ((const uint8_t *)buffer)[index] ? 1.0 : 0.0;
    default:
        return NAN;
    }
}

void dnnjit_element_store(dnnjit_data_type_t type, void *buffer, int64_t index, double value)
{
    if (!buffer)
        return;
    switch (type) {
    case DNNJIT_DATA_TYPE_FLOAT:
        ((float *)buffer)[index] = (float)value;
        break;
    case DNNJIT_DATA_TYPE_DOUBLE:
        ((double *)buffer)[index] = value;
        break;
    case DNNJIT_DATA_TYPE_HALF:
        ((uint16_t *)buffer)[index] = (uint16_t)small_encode(&fmt_half, value);
        break;
    case DNNJIT_DATA_TYPE_BFLOAT16:
        ((uint16_t *)buffer)[index] = (uint16_t)small_encode(&fmt_bf16, value);
        break;
    case DNNJIT_DATA_TYPE_FP8_E4M3:
        ((uint8_t *)buffer)[index] = (uint8_t)small_encode(&fmt_e4m3, value);
        break;
    case DNNJIT_DATA_TYPE_FP8_E5M2:
        ((uint8_t *)buffer)[index] = (uint8_t)small_encode(&fmt_e5m2, value);
        break;
    case DNNJIT_DATA_TYPE_INT8:
        ((int8_t *)buffer)[index] = (int8_t)clamp_round(value, INT8_MIN, INT8_MAX);
        break;
    case DNNJIT_DATA_TYPE_INT32:
        ((int32_t *)buffer)[index] = (int32_t)clamp_round(value, INT32_MIN, INT32_MAX);
        break;
    case DNNJIT_DATA_TYPE_INT64:
        /* 2^63 itself is not representable: clamp just below it. */
        ((int64_t *)buffer)[index] =
            (int64_t)clamp_round(value, -9223372036854775808.0, 9223372036854774784.0);
        break;
    case DNNJIT_DATA_TYPE_BOOLEAN:
        ((uint8_t *)buffer)[index] = value != 0;
        break;
    default:
        break;
    }
}
