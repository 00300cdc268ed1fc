/* dnnjit_element_load / dnnjit_element_store: every storage type, its exact bit patterns,
 * rounding to nearest even, saturation, infinities, NaN and subnormals. Expected bit
 * patterns are worked out by hand from each format's layout. */
#include "test-ref.h"

#include <float.h>

typedef struct bits_case {
    double value;
    uint32_t bits;
} bits_case_t;

/* Stores `value` into a one-element buffer of `type` and returns the raw bits. */
static uint32_t store_bits(dnnjit_data_type_t type, double value)
{
    uint8_t buf[8] = {0};
    dnnjit_element_store(type, buf, 0, value);
    switch (dnnjit_data_type_size(type)) {
    case 1:
        return buf[0];
    case 2: {
        uint16_t v;
        memcpy(&v, buf, 2);
        return v;
    }
    default:
        fail_msg("store_bits: unexpected size");
        return 0;
    }
}

static double load_bits(dnnjit_data_type_t type, uint32_t bits)
{
    uint8_t buf[8] = {0};
    if (dnnjit_data_type_size(type) == 1) {
        buf[0] = (uint8_t)bits;
    } else {
        uint16_t v = (uint16_t)bits;
        memcpy(buf, &v, 2);
    }
    return dnnjit_element_load(type, buf, 0);
}

/* Each case's value stores as its bits; with `exact`, the bits also load back as it. */
static void check_bits(dnnjit_data_type_t type, const bits_case_t *cases, size_t n, bool exact)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t got = store_bits(type, cases[i].value);
        if (got != cases[i].bits)
            fail_msg("%s: %.17g stored as 0x%x, expected 0x%x", dnnjit_data_type_name(type), cases[i].value, got,
                     cases[i].bits);
        if (exact) {
            double back = load_bits(type, cases[i].bits);
            if (back != cases[i].value || signbit(back) != signbit(cases[i].value))
                fail_msg("%s: 0x%x loaded as %.17g, expected %.17g", dnnjit_data_type_name(type), cases[i].bits, back,
                         cases[i].value);
        }
    }
}

/* The value of a small IEEE-like float written out from its fields: the textbook formula,
 * independent of the library's decoder. `ieee`: an all-ones exponent is inf / NaN;
 * otherwise (E4M3) only the all-ones pattern is NaN. */
static double decode_fields(uint32_t bits, int ebits, int mbits, bool ieee)
{
    int bias = (1 << (ebits - 1)) - 1;
    uint32_t sign = bits >> (ebits + mbits) & 1, e = bits >> mbits & ((1u << ebits) - 1), m = bits & ((1u << mbits) - 1);
    double mag;
    if (ieee && e == (1u << ebits) - 1)
        mag = m ? NAN : INFINITY;
    else if (!ieee && e == (1u << ebits) - 1 && m == (1u << mbits) - 1)
        mag = NAN;
    else if (e == 0)
        mag = m * pow(2.0, 1 - bias - mbits);
    else
        mag = (1.0 + m / pow(2.0, mbits)) * pow(2.0, (int)e - bias);
    return sign ? -mag : mag;
}

/* Every bit pattern of a format loads as the textbook value and stores back to the same
 * bits (NaN patterns: load as NaN, store back as some NaN). */
static void check_all_patterns(dnnjit_data_type_t type, int ebits, int mbits, bool ieee)
{
    uint32_t count = 1u << (1 + ebits + mbits);
    for (uint32_t bits = 0; bits < count; bits++) {
        double want = decode_fields(bits, ebits, mbits, ieee);
        double got = load_bits(type, bits);
        if (isnan(want)) {
            if (!isnan(got))
                fail_msg("%s: 0x%x should load as NaN, got %g", dnnjit_data_type_name(type), bits, got);
            if (!isnan(load_bits(type, store_bits(type, got))))
                fail_msg("%s: NaN from 0x%x does not store as NaN", dnnjit_data_type_name(type), bits);
            continue;
        }
        if (got != want || signbit(got) != signbit(want))
            fail_msg("%s: 0x%x loaded as %.17g, expected %.17g", dnnjit_data_type_name(type), bits, got, want);
        uint32_t back = store_bits(type, got);
        if (back != bits)
            fail_msg("%s: 0x%x -> %.17g -> 0x%x", dnnjit_data_type_name(type), bits, got, back);
    }
}

static void half_exact_values(void **state)
{
    (void)state;
    const bits_case_t cases[] = {
        {1.0, 0x3c00},           {-2.0, 0xc000},         {0.5, 0x3800},     {65504.0, 0x7bff},
        {-65504.0, 0xfbff},      {0x1p-14, 0x0400},      {0x1p-24, 0x0001}, {0x3ffp-24, 0x03ff},
        {0.0, 0x0000},           {-0.0, 0x8000},         {INFINITY, 0x7c00}, {-INFINITY, 0xfc00},
        {0.333251953125, 0x3555}, {1.0009765625, 0x3c01},
    };
    check_bits(DNNJIT_DATA_TYPE_HALF, cases, sizeof cases / sizeof *cases, true);
}

static void half_rounding(void **state)
{
    (void)state;
    const bits_case_t cases[] = {
        {65519.0, 0x7bff},              /* below the midpoint to 65536: the max */
        {65520.0, 0x7c00},              /* the midpoint, ties to even: 65536 = inf */
        {1e6, 0x7c00},                  {-1e6, 0xfc00},
        {1.0 + 0x1p-11, 0x3c00},        /* tie between mantissa 0 and 1: even 0 */
        {1.0 + 3 * 0x1p-11, 0x3c02},    /* tie between mantissa 1 and 2: even 2 */
        {1.0 + 0x1p-11 + 0x1p-20, 0x3c01},
        {1.0 / 3.0, 0x3555},
        {0x1p-25, 0x0000},              /* half the smallest subnormal: ties to 0 */
        {0x1p-25 + 0x1p-35, 0x0001},
        {3 * 0x1p-25, 0x0002},          /* 1.5 quanta: ties to 2 */
        {0x1p-14 - 0x1p-25, 0x0400},    /* 1023.5 quanta round up to the smallest normal */
        {-0x1p-26, 0x8000},             /* underflow keeps the sign */
    };
    check_bits(DNNJIT_DATA_TYPE_HALF, cases, sizeof cases / sizeof *cases, false);
}

static void half_all_patterns(void **state)
{
    (void)state;
    check_all_patterns(DNNJIT_DATA_TYPE_HALF, 5, 10, true);
    assert_true(isnan(load_bits(DNNJIT_DATA_TYPE_HALF, store_bits(DNNJIT_DATA_TYPE_HALF, NAN))));
}

static void bf16_values_and_rounding(void **state)
{
    (void)state;
    const bits_case_t exact[] = {
        {1.0, 0x3f80}, {-3.140625, 0xc049}, {0x1.fep127, 0x7f7f}, {0x1p-126, 0x0080}, {0x1p-133, 0x0001},
        {INFINITY, 0x7f80}, {-0.0, 0x8000},
    };
    check_bits(DNNJIT_DATA_TYPE_BFLOAT16, exact, sizeof exact / sizeof *exact, true);
    const bits_case_t rounded[] = {
        {3.14159265358979, 0x4049},   /* 3.140625 */
        {1.0 + 0x1p-8, 0x3f80},       /* tie: even mantissa 0 */
        {1.0 + 3 * 0x1p-8, 0x3f82},   /* tie: even mantissa 2 */
        {0x1.fep127 + 0x1p118, 0x7f7f}, /* below the midpoint to 2^128 */
        {0x1.ffp127, 0x7f80},         /* the midpoint: even, 2^128 = inf */
        {FLT_MAX, 0x7f80},
        {0x1p-134, 0x0000},           /* half the smallest subnormal: ties to 0 */
    };
    check_bits(DNNJIT_DATA_TYPE_BFLOAT16, rounded, sizeof rounded / sizeof *rounded, false);
}

static void bf16_all_patterns(void **state)
{
    (void)state;
    check_all_patterns(DNNJIT_DATA_TYPE_BFLOAT16, 8, 7, true);
}

static void e4m3_values_and_saturation(void **state)
{
    (void)state;
    const bits_case_t exact[] = {
        {1.0, 0x38}, {448.0, 0x7e}, {-448.0, 0xfe}, {0.5, 0x30}, {0x1p-6, 0x08}, {0x1p-9, 0x01}, {7 * 0x1p-9, 0x07},
        {416.0, 0x7d}, {-0.0, 0x80},
    };
    check_bits(DNNJIT_DATA_TYPE_FP8_E4M3, exact, sizeof exact / sizeof *exact, true);
    const bits_case_t rounded[] = {
        {449.0, 0x7e},  {464.0, 0x7e},     {500.0, 0x7e},       {1e9, 0x7e}, {INFINITY, 0x7e}, {-INFINITY, 0xfe},
        {-1e9, 0xfe},   {1.0625, 0x38},    /* tie: even mantissa 0 */
        {1.1875, 0x3a}, /* tie between mantissa 1 and 2: even 2 */
        {0x1p-10, 0x00}, /* half the smallest subnormal: ties to 0 */
    };
    check_bits(DNNJIT_DATA_TYPE_FP8_E4M3, rounded, sizeof rounded / sizeof *rounded, false);
    /* E4M3 has no infinity: S.1111.111 is its only NaN. */
    assert_true(isnan(load_bits(DNNJIT_DATA_TYPE_FP8_E4M3, 0x7f)));
    assert_true(isnan(load_bits(DNNJIT_DATA_TYPE_FP8_E4M3, 0xff)));
    assert_int_equal(store_bits(DNNJIT_DATA_TYPE_FP8_E4M3, NAN) & 0x7f, 0x7f);
}

static void e4m3_all_patterns(void **state)
{
    (void)state;
    check_all_patterns(DNNJIT_DATA_TYPE_FP8_E4M3, 4, 3, false);
}

static void e5m2_values_and_infinity(void **state)
{
    (void)state;
    const bits_case_t exact[] = {
        {1.0, 0x3c}, {57344.0, 0x7b}, {-57344.0, 0xfb}, {INFINITY, 0x7c}, {-INFINITY, 0xfc}, {0x1p-14, 0x04},
        {0x1p-16, 0x01}, {1.25, 0x3d},
    };
    check_bits(DNNJIT_DATA_TYPE_FP8_E5M2, exact, sizeof exact / sizeof *exact, true);
    const bits_case_t rounded[] = {
        {60000.0, 0x7b},  /* below the midpoint 61440 */
        {61440.0, 0x7c},  /* the midpoint: even, 65536 = inf */
        {1e6, 0x7c},      {-1e6, 0xfc},
        {1.125, 0x3c},    /* tie: even mantissa 0 */
        {1.375, 0x3e},    /* tie between mantissa 1 and 2: even 2 */
    };
    check_bits(DNNJIT_DATA_TYPE_FP8_E5M2, rounded, sizeof rounded / sizeof *rounded, false);
    assert_true(isnan(load_bits(DNNJIT_DATA_TYPE_FP8_E5M2, 0x7d)));
    assert_true(isnan(load_bits(DNNJIT_DATA_TYPE_FP8_E5M2, 0x7e)));
    assert_true(isnan(load_bits(DNNJIT_DATA_TYPE_FP8_E5M2, store_bits(DNNJIT_DATA_TYPE_FP8_E5M2, NAN))));
}

static void e5m2_all_patterns(void **state)
{
    (void)state;
    check_all_patterns(DNNJIT_DATA_TYPE_FP8_E5M2, 5, 2, true);
}

static void int8_round_and_clamp(void **state)
{
    (void)state;
    const double in[] = {127.4, 127.6, 1e9, INFINITY, -128.4, -200.0, -INFINITY, 2.5, 3.5, -2.5, -0.4, NAN, 42.0};
    const int8_t want[] = {127, 127, 127, 127, -128, -128, -128, 2, 4, -2, 0, 0, 42};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        int8_t v = 0x55;
        dnnjit_element_store(DNNJIT_DATA_TYPE_INT8, &v, 0, in[i]);
        if (v != want[i])
            fail_msg("INT8: %g stored as %d, expected %d", in[i], v, want[i]);
        assert_true(dnnjit_element_load(DNNJIT_DATA_TYPE_INT8, &v, 0) == want[i]);
    }
}

static void int32_round_and_clamp(void **state)
{
    (void)state;
    const double in[] = {2147483647.4, 3e9, -3e9, 0.5, 1.5, -1.5, 123456789.0, NAN};
    const int32_t want[] = {INT32_MAX, INT32_MAX, INT32_MIN, 0, 2, -2, 123456789, 0};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        int32_t v = 0x55;
        dnnjit_element_store(DNNJIT_DATA_TYPE_INT32, &v, 0, in[i]);
        if (v != want[i])
            fail_msg("INT32: %g stored as %d, expected %d", in[i], v, want[i]);
        assert_true(dnnjit_element_load(DNNJIT_DATA_TYPE_INT32, &v, 0) == want[i]);
    }
}

static void int64_round_and_clamp(void **state)
{
    (void)state;
    /* 2^63 is not an int64: the largest double below it is 2^63 - 1024. */
    const double in[] = {0x1p53, 0x1p62, 1e19, -1e19, -0x1p63, 2.5, NAN};
    const int64_t want[] = {INT64_C(9007199254740992), INT64_C(4611686018427387904), INT64_C(9223372036854774784),
                            INT64_MIN, INT64_MIN, 2, 0};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        int64_t v = 0x55;
        dnnjit_element_store(DNNJIT_DATA_TYPE_INT64, &v, 0, in[i]);
        if (v != want[i])
            fail_msg("INT64: %g stored as %lld, expected %lld", in[i], (long long)v, (long long)want[i]);
        assert_true(dnnjit_element_load(DNNJIT_DATA_TYPE_INT64, &v, 0) == (double)want[i]);
    }
}

static void boolean_values(void **state)
{
    (void)state;
    const double in[] = {0.0, -0.0, 0.25, -3.0, INFINITY, NAN};
    const uint8_t want[] = {0, 0, 1, 1, 1, 1}; /* NaN != 0, so it is true */
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        uint8_t v = 0x55;
        dnnjit_element_store(DNNJIT_DATA_TYPE_BOOLEAN, &v, 0, in[i]);
        if (v != want[i])
            fail_msg("BOOLEAN: %g stored as %d, expected %d", in[i], v, want[i]);
    }
    uint8_t seven = 7;
    assert_true(dnnjit_element_load(DNNJIT_DATA_TYPE_BOOLEAN, &seven, 0) == 1.0);
}

static void float_and_double(void **state)
{
    (void)state;
    float f[3];
    dnnjit_element_store(DNNJIT_DATA_TYPE_FLOAT, f, 0, 0.1);
    dnnjit_element_store(DNNJIT_DATA_TYPE_FLOAT, f, 1, 1e39);
    dnnjit_element_store(DNNJIT_DATA_TYPE_FLOAT, f, 2, 0x1p-149);
    assert_true(dnnjit_element_load(DNNJIT_DATA_TYPE_FLOAT, f, 0) == (double)0.1f);
    assert_true(isinf(dnnjit_element_load(DNNJIT_DATA_TYPE_FLOAT, f, 1)));
    assert_true(dnnjit_element_load(DNNJIT_DATA_TYPE_FLOAT, f, 2) == 0x1p-149);
    double d[2];
    dnnjit_element_store(DNNJIT_DATA_TYPE_DOUBLE, d, 1, 0.1);
    assert_true(dnnjit_element_load(DNNJIT_DATA_TYPE_DOUBLE, d, 1) == 0.1);
}

static void indexed_access_and_unknown_type(void **state)
{
    (void)state;
    uint16_t h[4] = {0, 0, 0, 0};
    dnnjit_element_store(DNNJIT_DATA_TYPE_HALF, h, 2, -2.0);
    assert_int_equal(h[2], 0xc000);
    assert_int_equal(h[0] | h[1] | h[3], 0);
    assert_true(dnnjit_element_load(DNNJIT_DATA_TYPE_HALF, h, 2) == -2.0);
    /* NOT_SET has no storage: loads give NaN and stores leave memory alone. */
    uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    assert_true(isnan(dnnjit_element_load(DNNJIT_DATA_TYPE_NOT_SET, bytes, 0)));
    dnnjit_element_store(DNNJIT_DATA_TYPE_NOT_SET, bytes, 0, 9.0);
    assert_int_equal(bytes[0], 1);
    assert_int_equal(bytes[7], 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(half_exact_values),
        cmocka_unit_test(half_rounding),
        cmocka_unit_test(half_all_patterns),
        cmocka_unit_test(bf16_values_and_rounding),
        cmocka_unit_test(bf16_all_patterns),
        cmocka_unit_test(e4m3_values_and_saturation),
        cmocka_unit_test(e4m3_all_patterns),
        cmocka_unit_test(e5m2_values_and_infinity),
        cmocka_unit_test(e5m2_all_patterns),
        cmocka_unit_test(int8_round_and_clamp),
        cmocka_unit_test(int32_round_and_clamp),
        cmocka_unit_test(int64_round_and_clamp),
        cmocka_unit_test(boolean_values),
        cmocka_unit_test(float_and_double),
        cmocka_unit_test(indexed_access_and_unknown_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
