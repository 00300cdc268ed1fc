/* The reference executor's driver (variant-pack checks, virtual tensors, pass-by-value
 * scalars, rounding of stored outputs, in-place and strided outputs), matmul and reduction.
 * Expected values are worked out by hand or by naive loops written here. */
#include "test-ref.h"

/* ---- variant pack ------------------------------------------------------------------ */

/* C = A + B over [2] DOUBLE tensors with uids 1, 2, 3. */
typedef struct add_graph {
    dnnjit_graph_t g;
    double a[2], b[2], c[2];
} add_graph_t;

static void add_graph_make(add_graph_t *ag)
{
    *ag = (add_graph_t){.g = tu_graph(DNNJIT_DATA_TYPE_DOUBLE), .a = {1, 2}, .b = {10, 20}, .c = {-7, -7}};
    dnnjit_tensor_t a = tu_tensor(ag->g, "A", 1, TU_DIMS(2), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t b = tu_tensor(ag->g, "B", 1, TU_DIMS(2), NULL, DNNJIT_DATA_TYPE_NOT_SET), c;
    TU_OK(dnnjit_graph_bias(ag->g, "add", a, b, &c));
    TU_OK(dnnjit_tensor_set_output(ag->g, c, true));
    TU_OK(dnnjit_tensor_set_name(ag->g, c, "C"));
    TU_OK(dnnjit_tensor_set_uid(ag->g, a, 1));
    TU_OK(dnnjit_tensor_set_uid(ag->g, b, 2));
    TU_OK(dnnjit_tensor_set_uid(ag->g, c, 3));
}

/* After a refused call, C's buffer is exactly as it was. */
static void assert_c_untouched(const add_graph_t *ag)
{
    assert_true(ag->c[0] == -7 && ag->c[1] == -7);
}

static void execute_null_graph(void **state)
{
    (void)state;
    TU_FAILS(dnnjit_graph_execute_reference(NULL, NULL, 0), DNNJIT_STATUS_BAD_PARAM, "graph is NULL");
}

static void execute_invalid_graph(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_DOUBLE);
    TU_FAILS(dnnjit_graph_execute_reference(g, NULL, 0), DNNJIT_STATUS_INVALID_GRAPH, "has no nodes");
    /* A virtual output that nothing reads is invalid too. */
    dnnjit_tensor_t a = tu_tensor(g, "A", 1, TU_DIMS(2), NULL, DNNJIT_DATA_TYPE_NOT_SET), y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_NEG}, a, 0, 0, &y));
    double buf[2] = {0};
    int64_t uid;
    TU_OK(dnnjit_tensor_get_uid(g, a, &uid));
    TU_FAILS(dnnjit_graph_execute_reference(g, (dnnjit_variant_t[]){{uid, buf}}, 1), DNNJIT_STATUS_INVALID_GRAPH,
             "no node reads it");
    dnnjit_graph_destroy(g);
}

static void execute_add_graph(void **state)
{
    (void)state;
    add_graph_t ag;
    add_graph_make(&ag);
    /* Entries in any order. */
    TU_OK(dnnjit_graph_execute_reference(ag.g, (dnnjit_variant_t[]){{3, ag.c}, {1, ag.a}, {2, ag.b}}, 3));
    assert_true(ag.c[0] == 11 && ag.c[1] == 22);
    dnnjit_graph_destroy(ag.g);
}

static void pack_null_with_entries(void **state)
{
    (void)state;
    add_graph_t ag;
    add_graph_make(&ag);
    TU_FAILS(dnnjit_graph_execute_reference(ag.g, NULL, 3), DNNJIT_STATUS_BAD_PARAM,
             "the variant pack is NULL but has 3 entries");
    dnnjit_graph_destroy(ag.g);
}

static void pack_null_pointer(void **state)
{
    (void)state;
    add_graph_t ag;
    add_graph_make(&ag);
    TU_FAILS(dnnjit_graph_execute_reference(ag.g, (dnnjit_variant_t[]){{1, ag.a}, {2, NULL}, {3, ag.c}}, 3),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"B\" (uid 2) has a NULL pointer in variant pack entry 1");
    assert_c_untouched(&ag);
    dnnjit_graph_destroy(ag.g);
}

static void pack_unknown_uid(void **state)
{
    (void)state;
    add_graph_t ag;
    add_graph_make(&ag);
    TU_FAILS(dnnjit_graph_execute_reference(ag.g, (dnnjit_variant_t[]){{1, ag.a}, {2, ag.b}, {3, ag.c}, {99, ag.c}}, 4),
             DNNJIT_STATUS_BAD_PARAM, "variant pack entry 3 has uid 99, but no tensor of graph \"test\" has that uid");
    assert_c_untouched(&ag);
    dnnjit_graph_destroy(ag.g);
}

static void pack_duplicate_uid(void **state)
{
    (void)state;
    add_graph_t ag;
    add_graph_make(&ag);
    TU_FAILS(dnnjit_graph_execute_reference(ag.g, (dnnjit_variant_t[]){{1, ag.a}, {2, ag.b}, {3, ag.c}, {1, ag.b}}, 4),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"A\" (uid 1) appears twice in the variant pack (entries 0 and 3)");
    assert_c_untouched(&ag);
    dnnjit_graph_destroy(ag.g);
}

static void pack_missing_input(void **state)
{
    (void)state;
    add_graph_t ag;
    add_graph_make(&ag);
    TU_FAILS(dnnjit_graph_execute_reference(ag.g, (dnnjit_variant_t[]){{1, ag.a}, {3, ag.c}}, 2),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"B\" (uid 2) has no buffer in the variant pack");
    assert_c_untouched(&ag);
    dnnjit_graph_destroy(ag.g);
}

static void pack_missing_output(void **state)
{
    (void)state;
    add_graph_t ag;
    add_graph_make(&ag);
    TU_FAILS(dnnjit_graph_execute_reference(ag.g, (dnnjit_variant_t[]){{1, ag.a}, {2, ag.b}}, 2),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"C\" (uid 3) has no buffer in the variant pack");
    /* An empty pack: the first tensor is the first one missing. */
    TU_FAILS(dnnjit_graph_execute_reference(ag.g, NULL, 0), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"A\" (uid 1) has no buffer in the variant pack");
    dnnjit_graph_destroy(ag.g);
}

static void pack_buffer_for_virtual_tensor(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t a = tu_tensor(g, "A", 1, TU_DIMS(2), NULL, DNNJIT_DATA_TYPE_NOT_SET), t, y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "neg", .mode = DNNJIT_POINTWISE_NEG}, a, 0, 0,
                                 &t));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ABS}, t, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    TU_OK(dnnjit_tensor_set_uid(g, a, 10));
    TU_OK(dnnjit_tensor_set_uid(g, t, 11));
    TU_OK(dnnjit_tensor_set_uid(g, y, 12));
    double va[2] = {1, -2}, vt[2] = {0, 0}, vy[2] = {0, 0};
    TU_FAILS(dnnjit_graph_execute_reference(g, (dnnjit_variant_t[]){{10, va}, {11, vt}, {12, vy}}, 3),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"neg::OUT_0\" (uid 11) is virtual and takes no buffer");
    TU_OK(dnnjit_graph_execute_reference(g, (dnnjit_variant_t[]){{10, va}, {12, vy}}, 2));
    assert_true(vy[0] == 1 && vy[1] == 2);
    dnnjit_graph_destroy(g);
}

/* y = x * alpha + beta with alpha a fixed pass-by-value scalar and beta one passed by
 * pointer as a FLOAT. */
static dnnjit_graph_t scalar_graph(dnnjit_tensor_t *x, dnnjit_tensor_t *alpha, dnnjit_tensor_t *beta,
                                   dnnjit_tensor_t *y)
{
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_DOUBLE);
    *x = tu_tensor(g, "x", 2, TU_DIMS(2, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "alpha", .ndim = 1, .dim = TU_DIMS(1),
                                                          .is_pass_by_value = true, .has_value = true, .value = 2.5,
                                                          .data_type = DNNJIT_DATA_TYPE_FLOAT},
                              alpha));
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "beta", .ndim = 2, .dim = TU_DIMS(1, 1),
                                                          .is_pass_by_value = true,
                                                          .data_type = DNNJIT_DATA_TYPE_FLOAT},
                              beta));
    dnnjit_tensor_t t;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, *x, *alpha, 0, &t));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, t, *beta, 0, y));
    TU_OK(dnnjit_tensor_set_output(g, *y, true));
    return g;
}

static void pass_by_value_scalars(void **state)
{
    (void)state;
    rt_t r = {0};
    dnnjit_tensor_t x, alpha, beta, y;
    r.g = scalar_graph(&x, &alpha, &beta, &y);
    const double vx[] = {1, 2, 3, 4}, vbeta[] = {-1};
    rt_in(&r, x, vx);
    rt_in(&r, beta, vbeta);
    rt_register(&r, y, NULL);
    rt_run(&r);
    const double want[] = {1.5, 4, 6.5, 9};
    rt_expect(&r, y, want, 4, 0);
    rt_free(&r);
}

static void pass_by_value_errors(void **state)
{
    (void)state;
    dnnjit_tensor_t x, alpha, beta, y;
    dnnjit_graph_t g = scalar_graph(&x, &alpha, &beta, &y);
    TU_OK(dnnjit_tensor_set_uid(g, x, 1));
    TU_OK(dnnjit_tensor_set_uid(g, alpha, 2));
    TU_OK(dnnjit_tensor_set_uid(g, beta, 3));
    TU_OK(dnnjit_tensor_set_uid(g, y, 4));
    double vx[4] = {0}, vy[4] = {0}, scalar = 1;
    float fbeta = 1;
    TU_FAILS(dnnjit_graph_execute_reference(g, (dnnjit_variant_t[]){{1, vx}, {4, vy}}, 2), DNNJIT_STATUS_BAD_PARAM,
             "tensor \"beta\" (uid 3) has no buffer in the variant pack");
    TU_FAILS(dnnjit_graph_execute_reference(g, (dnnjit_variant_t[]){{1, vx}, {2, &scalar}, {3, &fbeta}, {4, vy}}, 4),
             DNNJIT_STATUS_BAD_PARAM, "tensor \"alpha\" (uid 2) is pass-by-value with its value fixed in the graph");
    dnnjit_graph_destroy(g);
}

/* D = relu(A @ B + bias) with the product and the sum virtual. */
static void chain_with_virtual_intermediates(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t a = tu_tensor(r.g, "A", 2, TU_DIMS(2, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t b = tu_tensor(r.g, "B", 2, TU_DIMS(2, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t bias = tu_tensor(r.g, "bias", 2, TU_DIMS(1, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET), c, s, d;
    TU_OK(dnnjit_graph_matmul(r.g, a, b, NULL, &c));
    TU_OK(dnnjit_graph_bias(r.g, "bias_add", c, bias, &s));
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_RELU_FWD}, s, 0, 0, &d));
    const double va[] = {1, 2, 3, 4}, vb[] = {1, -1, 1, 1}, vbias[] = {-4, 0.5};
    rt_in(&r, a, va);
    rt_in(&r, b, vb);
    rt_in(&r, bias, vbias);
    rt_out(&r, d);
    rt_run(&r);
    /* A @ B = [[3, 1], [7, 1]]; + bias = [[-1, 1.5], [3, 1.5]]. */
    const double want[] = {0, 1.5, 3, 1.5};
    rt_expect(&r, d, want, 4, 0);
    rt_free(&r);
}

static void virtual_intermediates_keep_float64(void **state)
{
    (void)state;
    /* The intermediate data type is FLOAT, yet (x + 2^-40) - x is exactly 2^-40: the
     * virtual sum is not rounded to float (where it would be x itself). */
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t x = tu_tensor(r.g, "x", 1, TU_DIMS(1), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t eps = tu_tensor(r.g, "eps", 1, TU_DIMS(1), NULL, DNNJIT_DATA_TYPE_NOT_SET), s, y;
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, x, eps, 0, &s));
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SUB}, s, x, 0, &y));
    const double vx[] = {1.0 / 3.0}, veps[] = {0x1p-40};
    rt_in(&r, x, vx);
    rt_in(&r, eps, veps);
    rt_out(&r, y);
    rt_run(&r);
    dnnjit_tensor_info_t info;
    TU_OK(dnnjit_tensor_get_info(r.g, s, &info));
    assert_int_equal(info.data_type, DNNJIT_DATA_TYPE_FLOAT);
    assert_true(rt_get(&r, y, 0) == 0x1p-40);
    rt_free(&r);
}

/* One virtual tensor read by two nodes, once through both inputs of a MUL. */
static void virtual_tensor_fan_out(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t x = tu_tensor(r.g, "x", 1, TU_DIMS(3), NULL, DNNJIT_DATA_TYPE_NOT_SET), t, sq, diff;
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_NEG}, x, 0, 0, &t));
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, t, t, 0, &sq));
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SUB}, t, x, 0, &diff));
    const double vx[] = {1, -2, 3};
    rt_in(&r, x, vx);
    rt_out(&r, sq);
    rt_out(&r, diff);
    rt_run(&r);
    const double want_sq[] = {1, 4, 9}, want_diff[] = {-2, 4, -6};
    rt_expect(&r, sq, want_sq, 3, 0);
    rt_expect(&r, diff, want_diff, 3, 0);
    rt_free(&r);
}

static void stored_output_is_read_back_rounded(void **state)
{
    (void)state;
    /* y = x / 3 is a HALF output; z = y * 3 reads y as stored (0x3555 = 0.333251953125). */
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t x = tu_tensor(r.g, "x", 1, TU_DIMS(1), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t k = tu_tensor(r.g, "k", 1, TU_DIMS(1), NULL, DNNJIT_DATA_TYPE_NOT_SET), y, z;
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_DIV}, x, k, 0, &y));
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, y, k, 0, &z));
    TU_OK(dnnjit_tensor_set_data_type(r.g, y, DNNJIT_DATA_TYPE_HALF));
    const double vx[] = {1}, vk[] = {3};
    rt_in(&r, x, vx);
    rt_in(&r, k, vk);
    rt_out(&r, y);
    rt_out(&r, z);
    rt_run(&r);
    assert_true(rt_get(&r, y, 0) == 0.333251953125);
    assert_true(rt_get(&r, z, 0) == 0.999755859375);
    rt_free(&r);
}

static void in_place_outputs(void **state)
{
    (void)state;
    add_graph_t ag;
    add_graph_make(&ag);
    /* C written over A. */
    TU_OK(dnnjit_graph_execute_reference(ag.g, (dnnjit_variant_t[]){{1, ag.a}, {2, ag.b}, {3, ag.a}}, 3));
    assert_true(ag.a[0] == 11 && ag.a[1] == 22);
    dnnjit_graph_destroy(ag.g);

    /* A softmax reads each row three times; writing S over P must not disturb it. */
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t p = tu_tensor(g, "P", 2, TU_DIMS(1, 3), NULL, DNNJIT_DATA_TYPE_NOT_SET), s;
    TU_OK(dnnjit_graph_softmax(g, p, NULL, &s, NULL, NULL));
    TU_OK(dnnjit_tensor_set_output(g, s, true));
    int64_t up, us;
    TU_OK(dnnjit_tensor_get_uid(g, p, &up));
    TU_OK(dnnjit_tensor_get_uid(g, s, &us));
    double buf[3] = {0, log(2.0), log(3.0)};
    TU_OK(dnnjit_graph_execute_reference(g, (dnnjit_variant_t[]){{up, buf}, {us, buf}}, 2));
    RT_ASSERT_CLOSE(buf[0], 1.0 / 6, 1e-15);
    RT_ASSERT_CLOSE(buf[1], 2.0 / 6, 1e-15);
    RT_ASSERT_CLOSE(buf[2], 3.0 / 6, 1e-15);
    dnnjit_graph_destroy(g);
}

static void strided_output_leaves_gaps(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(r.g, "x", 2, TU_DIMS(2, 3), NULL, DNNJIT_DATA_TYPE_NOT_SET), y;
    TU_OK(dnnjit_graph_pointwise(r.g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_NEG}, x, 0, 0, &y));
    /* Rows 8 elements apart, columns 2 apart: 6 of the 13 floats of the span are written. */
    TU_OK(dnnjit_tensor_set_stride(r.g, y, 2, TU_DIMS(8, 2)));
    const double vx[] = {1, 2, 3, 4, 5, 6};
    rt_in(&r, x, vx);
    rt_out(&r, y);
    rt_run(&r);
    const double want[] = {-1, -2, -3, -4, -5, -6};
    rt_expect(&r, y, want, 6, 0);
    const uint8_t *bytes = r.buf[rt_find(&r, y)];
    for (int i = 0; i < 13; i++) {
        bool written = (i < 5 && i % 2 == 0) || (i >= 8 && i % 2 == 0);
        for (int j = 0; j < 4 && !written; j++)
            if (bytes[4 * i + j] != RT_POISON)
                fail_msg("float %d of the output span was written but is a gap", i);
    }
    rt_free(&r);
}

static void runs_again_after_modification(void **state)
{
    (void)state;
    add_graph_t ag;
    add_graph_make(&ag);
    dnnjit_variant_t pack[] = {{1, ag.a}, {2, ag.b}, {3, ag.c}};
    TU_OK(dnnjit_graph_execute_reference(ag.g, pack, 3));
    assert_true(ag.c[0] == 11);
    /* Re-typing the output invalidates the graph; the next run validates again and
     * stores FLOATs. */
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_find_tensor_by_uid(ag.g, 3, &c));
    TU_OK(dnnjit_tensor_set_data_type(ag.g, c, DNNJIT_DATA_TYPE_FLOAT));
    float fc[2] = {0, 0};
    pack[2].ptr = fc;
    ag.a[0] = 0.1;
    TU_OK(dnnjit_graph_execute_reference(ag.g, pack, 3));
    assert_true(fc[0] == (float)10.1 && fc[1] == 22.0f);
    dnnjit_graph_destroy(ag.g);
}

/* ---- matmul ------------------------------------------------------------------------ */

/* A @ B with the given shapes and strides into a DOUBLE C, checked against `want`. */
static void check_matmul(int na, const int64_t *da, const int64_t *sa, const double *a, int nb, const int64_t *db,
                         const int64_t *sb, const double *b, const double *want, int64_t count)
{
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t ta = tu_tensor(r.g, "A", na, da, sa, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t tb = tu_tensor(r.g, "B", nb, db, sb, DNNJIT_DATA_TYPE_NOT_SET), c;
    TU_OK(dnnjit_graph_matmul(r.g, ta, tb, NULL, &c));
    rt_in(&r, ta, a);
    rt_in(&r, tb, b);
    rt_out(&r, c);
    rt_run(&r);
    rt_expect(&r, c, want, count, 1e-14);
    rt_free(&r);
}

static const double mm_a[] = {1, 2, 3, 4, 5, 6};      /* [2, 3] */
static const double mm_b[] = {7, 8, 9, 10, 11, 12};   /* [3, 2] */
/* [[1*7 + 2*9 + 3*11, 1*8 + 2*10 + 3*12], [4*7 + 5*9 + 6*11, 4*8 + 5*10 + 6*12]] */
static const double mm_c[] = {58, 64, 139, 154};

static void matmul_by_hand(void **state)
{
    (void)state;
    check_matmul(2, TU_DIMS(2, 3), NULL, mm_a, 2, TU_DIMS(3, 2), NULL, mm_b, mm_c, 4);
}

static void matmul_transposed_operands(void **state)
{
    (void)state;
    /* B column-major, then A column-major too: same logical values, same product. */
    check_matmul(2, TU_DIMS(2, 3), NULL, mm_a, 2, TU_DIMS(3, 2), TU_DIMS(1, 3), mm_b, mm_c, 4);
    check_matmul(2, TU_DIMS(2, 3), TU_DIMS(1, 2), mm_a, 2, TU_DIMS(3, 2), TU_DIMS(1, 3), mm_b, mm_c, 4);
}

static void matmul_stride_zero_rows(void **state)
{
    (void)state;
    /* A's two rows share memory: both are [1, 2, 3]. */
    const double a[] = {1, 2, 3, 1, 2, 3};
    const double want[] = {58, 64, 58, 64};
    check_matmul(2, TU_DIMS(2, 3), TU_DIMS(0, 1), a, 2, TU_DIMS(3, 2), NULL, mm_b, want, 4);
}

static void matmul_outer_product(void **state)
{
    (void)state;
    const double a[] = {1, 2, 3}, b[] = {10, 20};
    const double want[] = {10, 20, 20, 40, 30, 60};
    check_matmul(2, TU_DIMS(3, 1), NULL, a, 2, TU_DIMS(1, 2), NULL, b, want, 6);
}

/* The naive product with numpy batch broadcasting, for up to 4-d shapes given as
 * [batch0, batch1, M, K] and [batch0, batch1, K, N] (missing leading dims as 1). */
static void naive_batched(const int64_t *da, const double *a, const int64_t *db, const double *b, double *c)
{
    int64_t b0 = da[0] > db[0] ? da[0] : db[0], b1 = da[1] > db[1] ? da[1] : db[1];
    int64_t m = da[2], k = da[3], n = db[3];
    for (int64_t i0 = 0; i0 < b0; i0++)
        for (int64_t i1 = 0; i1 < b1; i1++)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    int64_t ia = ((da[0] > 1 ? i0 : 0) * da[1] + (da[1] > 1 ? i1 : 0)) * m * k;
                    int64_t ib = ((db[0] > 1 ? i0 : 0) * db[1] + (db[1] > 1 ? i1 : 0)) * k * n;
                    double s = 0;
                    for (int64_t l = 0; l < k; l++)
                        s += a[ia + i * k + l] * b[ib + l * n + j];
                    c[((i0 * b1 + i1) * m + i) * n + j] = s;
                }
}

static void matmul_batch_broadcast(void **state)
{
    (void)state;
    tu_seed(11);
    double a[2 * 1 * 2 * 3], b[3 * 3 * 2], want[2 * 3 * 2 * 2];
    rt_uniform(a, 12, -1, 1);
    rt_uniform(b, 18, -1, 1);
    /* A [2, 1, 2, 3] against B [3, 3, 2] (a missing leading dim): C [2, 3, 2, 2]. */
    naive_batched(TU_DIMS(2, 1, 2, 3), a, TU_DIMS(1, 3, 3, 2), b, want);
    check_matmul(4, TU_DIMS(2, 1, 2, 3), NULL, a, 3, TU_DIMS(3, 3, 2), NULL, b, want, 24);
    /* A [2, 3] (no batch at all) against B [4, 3, 2]: C [4, 2, 2]. */
    double b4[4 * 3 * 2], want4[4 * 2 * 2];
    rt_uniform(b4, 24, -1, 1);
    naive_batched(TU_DIMS(1, 1, 2, 3), a, TU_DIMS(1, 4, 3, 2), b4, want4);
    check_matmul(2, TU_DIMS(2, 3), NULL, a, 3, TU_DIMS(4, 3, 2), NULL, b4, want4, 16);
}

static void matmul_half_seed000(void **state)
{
    (void)state;
    /* Seed 000's shapes: [4, 64, 128] @ [4, 128, 64], HALF in and out. */
    tu_seed(3);
    rt_t r = rt_make(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(r.g, "A", 3, TU_DIMS(4, 64, 128), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t b = tu_tensor(r.g, "B", 3, TU_DIMS(4, 128, 64), NULL, DNNJIT_DATA_TYPE_NOT_SET), c;
    TU_OK(dnnjit_graph_matmul(r.g, a, b, NULL, &c));
    static double va[4 * 64 * 128], vb[4 * 128 * 64];
    /* Values that half holds exactly (multiples of 1/64 in [-1, 1]), so that the exact
     * product is known here and only its final rounding to half remains. */
    for (int i = 0; i < 4 * 64 * 128; i++) {
        va[i] = floor(tu_uniform(-64, 64)) / 64;
        vb[i] = floor(tu_uniform(-64, 64)) / 64;
    }
    rt_in(&r, a, va);
    rt_in(&r, b, vb);
    rt_out(&r, c);
    rt_run(&r);
    for (int bt = 0; bt < 4; bt++)
        for (int i = 0; i < 64; i++)
            for (int j = 0; j < 64; j++) {
                double s = 0;
                for (int k = 0; k < 128; k++)
                    s += va[(bt * 64 + i) * 128 + k] * vb[(bt * 128 + k) * 64 + j];
                uint16_t h;
                dnnjit_element_store(DNNJIT_DATA_TYPE_HALF, &h, 0, s);
                double want = dnnjit_element_load(DNNJIT_DATA_TYPE_HALF, &h, 0);
                assert_true(rt_get(&r, c, (bt * 64 + i) * 64 + j) == want);
            }
    rt_free(&r);
}

static void matmul_int8_to_int32(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_INT8);
    dnnjit_tensor_t a = tu_tensor(r.g, "A", 2, TU_DIMS(2, 4), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t b = tu_tensor(r.g, "B", 2, TU_DIMS(4, 1), NULL, DNNJIT_DATA_TYPE_NOT_SET), c;
    TU_OK(dnnjit_graph_matmul(r.g, a, b, &(dnnjit_matmul_attr_t){.compute_data_type = DNNJIT_DATA_TYPE_INT32}, &c));
    TU_OK(dnnjit_tensor_set_data_type(r.g, c, DNNJIT_DATA_TYPE_INT32));
    const double va[] = {127, 127, 127, 127, -128, 1, -1, 0}, vb[] = {127, 127, 127, -128};
    rt_in(&r, a, va);
    rt_in(&r, b, vb);
    rt_out(&r, c);
    rt_run(&r);
    /* 3 * 127 * 127 - 127 * 128 = 32131; -128 * 127 + 127 - 127 = -16256. */
    const double want[] = {32131, -16256};
    rt_expect(&r, c, want, 2, 0);
    rt_free(&r);
}

static void matmul_fp8_output_rounds_and_saturates(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(r.g, "A", 2, TU_DIMS(2, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t b = tu_tensor(r.g, "B", 2, TU_DIMS(2, 1), NULL, DNNJIT_DATA_TYPE_NOT_SET), c;
    TU_OK(dnnjit_graph_matmul(r.g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_data_type(r.g, c, DNNJIT_DATA_TYPE_FP8_E4M3));
    const double va[] = {30, 30, 1, 2}, vb[] = {10, 0.25};
    rt_in(&r, a, va);
    rt_in(&r, b, vb);
    rt_out(&r, c);
    rt_run(&r);
    /* 307.5 rounds to 320 (E4M3 steps by 32 between 256 and 448); 10.5 to 10 (steps by 1
     * between 8 and 16, ties to even). */
    const double want[] = {320, 10};
    rt_expect(&r, c, want, 2, 0);
    rt_free(&r);
    r = rt_make(DNNJIT_DATA_TYPE_FLOAT);
    a = tu_tensor(r.g, "A", 2, TU_DIMS(1, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    b = tu_tensor(r.g, "B", 2, TU_DIMS(2, 1), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    TU_OK(dnnjit_graph_matmul(r.g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_data_type(r.g, c, DNNJIT_DATA_TYPE_FP8_E4M3));
    const double vbig[] = {30, 30}, vk[] = {10, 10};
    rt_in(&r, a, vbig);
    rt_in(&r, b, vk);
    rt_out(&r, c);
    rt_run(&r);
    assert_true(rt_get(&r, c, 0) == 448); /* 600 saturates */
    rt_free(&r);
}

/* ---- reduction --------------------------------------------------------------------- */

/* The mode applied to a list of values, written out plainly. */
static double reduce_list(dnnjit_reduction_mode_t mode, const double *v, int n)
{
    double r;
    switch (mode) {
    case DNNJIT_REDUCTION_ADD:
    case DNNJIT_REDUCTION_AVG:
        r = 0;
        for (int i = 0; i < n; i++)
            r += v[i];
        return mode == DNNJIT_REDUCTION_AVG ? r / n : r;
    case DNNJIT_REDUCTION_MUL:
        r = 1;
        for (int i = 0; i < n; i++)
            r *= v[i];
        return r;
    case DNNJIT_REDUCTION_MIN:
        r = v[0];
        for (int i = 1; i < n; i++)
            r = v[i] < r ? v[i] : r;
        return r;
    case DNNJIT_REDUCTION_MAX:
        r = v[0];
        for (int i = 1; i < n; i++)
            r = v[i] > r ? v[i] : r;
        return r;
    case DNNJIT_REDUCTION_AMAX:
        r = 0;
        for (int i = 0; i < n; i++)
            r = fabs(v[i]) > r ? fabs(v[i]) : r;
        return r;
    case DNNJIT_REDUCTION_NORM1:
        r = 0;
        for (int i = 0; i < n; i++)
            r += fabs(v[i]);
        return r;
    case DNNJIT_REDUCTION_NORM2:
        r = 0;
        for (int i = 0; i < n; i++)
            r += v[i] * v[i];
        return sqrt(r);
    default:
        fail_msg("unknown reduction mode");
        return 0;
    }
}

/* Reduces a random X [2, 3, 4] over several axis sets with one mode (the test's state). */
static void reduction_mode_test(void **state)
{
    dnnjit_reduction_mode_t mode = *(const dnnjit_reduction_mode_t *)*state;
    const uint32_t axis_sets[] = {0x4, 0x1, 0x2, 0x6, 0x5, 0x7};
    double x[24];
    tu_seed(100 + mode);
    rt_uniform(x, 24, -2, 2);
    for (size_t s = 0; s < sizeof axis_sets / sizeof *axis_sets; s++) {
        uint32_t axes = axis_sets[s];
        rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
        dnnjit_tensor_t tx = tu_tensor(r.g, "X", 3, TU_DIMS(2, 3, 4), NULL, DNNJIT_DATA_TYPE_NOT_SET), y;
        TU_OK(dnnjit_graph_reduction(r.g, tx, &(dnnjit_reduction_attr_t){.mode = mode, .axes = axes}, &y));
        rt_in(&r, tx, x);
        rt_out(&r, y);
        rt_run(&r);
        int64_t ydim[3] = {axes & 1 ? 1 : 2, axes & 2 ? 1 : 3, axes & 4 ? 1 : 4};
        for (int64_t yl = 0; yl < ydim[0] * ydim[1] * ydim[2]; yl++) {
            int64_t yi[3] = {yl / (ydim[1] * ydim[2]), yl / ydim[2] % ydim[1], yl % ydim[2]};
            double group[24];
            int n = 0;
            for (int64_t xl = 0; xl < 24; xl++) {
                int64_t xi[3] = {xl / 12, xl / 4 % 3, xl % 4};
                bool match = true;
                for (int d = 0; d < 3; d++)
                    match = match && (axes >> d & 1 || xi[d] == yi[d]);
                if (match)
                    group[n++] = x[xl];
            }
            double want = reduce_list(mode, group, n), got = rt_get(&r, y, yl);
            if (!rt_close(got, want, 1e-13))
                fail_msg("%s over axes 0x%x: Y[%lld] = %.17g, expected %.17g", dnnjit_reduction_mode_name(mode), axes,
                         (long long)yl, got, want);
        }
        rt_free(&r);
    }
}

/* [[1, 2], [3, 4]] (or the transpose stored column-major, which is the same logical
 * matrix) reduced to `want` over `axes`. */
static void check_small_sum(uint32_t axes, const int64_t *stride, const double *want, int count)
{
    rt_t r = rt_make(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(r.g, "X", 2, TU_DIMS(2, 2), stride, DNNJIT_DATA_TYPE_NOT_SET), y;
    TU_OK(dnnjit_graph_reduction(r.g, x, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_ADD, .axes = axes}, &y));
    const double vx[] = {1, 2, 3, 4};
    rt_in(&r, x, vx);
    rt_out(&r, y);
    rt_run(&r);
    rt_expect(&r, y, want, count, 0);
    rt_free(&r);
}

static void reduction_by_hand(void **state)
{
    (void)state;
    check_small_sum(0x2, NULL, (const double[]){3, 7}, 2);
    check_small_sum(0x1, NULL, (const double[]){4, 6}, 2);
    check_small_sum(0x0, NULL, (const double[]){10}, 1); /* 0: every axis */
    check_small_sum(0x2, TU_DIMS(1, 2), (const double[]){3, 7}, 2);
    check_small_sum(0x1, TU_DIMS(1, 2), (const double[]){4, 6}, 2);
}

static void reduction_axes_from_output_dims(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t x = tu_tensor(r.g, "X", 3, TU_DIMS(2, 2, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET), y;
    TU_OK(dnnjit_graph_reduction(r.g, x, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_MAX}, &y));
    /* Y [2, 1, 1]: the axes are those where Y has 1 and X does not. */
    TU_OK(dnnjit_tensor_set_dim(r.g, y, 3, TU_DIMS(2, 1, 1)));
    const double vx[] = {1, 8, 3, 4, -5, -6, -7, -2};
    rt_in(&r, x, vx);
    rt_out(&r, y);
    rt_run(&r);
    const double want[] = {8, -2};
    rt_expect(&r, y, want, 2, 0);
    rt_free(&r);
}

static void reduction_nan_and_integer_output(void **state)
{
    (void)state;
    const struct {
        dnnjit_reduction_mode_t mode;
        double want;
    } cases[] = {
        {DNNJIT_REDUCTION_MAX, 3},   /* fmax ignores the NaN */
        {DNNJIT_REDUCTION_MIN, -4},  {DNNJIT_REDUCTION_AMAX, 4},
        {DNNJIT_REDUCTION_ADD, NAN}, {DNNJIT_REDUCTION_NORM2, NAN},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
        dnnjit_tensor_t x = tu_tensor(r.g, "X", 1, TU_DIMS(4), NULL, DNNJIT_DATA_TYPE_NOT_SET), y;
        TU_OK(dnnjit_graph_reduction(r.g, x, &(dnnjit_reduction_attr_t){.mode = cases[c].mode}, &y));
        const double vx[] = {1, NAN, 3, -4};
        rt_in(&r, x, vx);
        rt_out(&r, y);
        rt_run(&r);
        RT_ASSERT_CLOSE(rt_get(&r, y, 0), cases[c].want, 0);
        rt_free(&r);
    }
    /* AVG into INT32: 1.5 rounds to 2 and 2.5 to 2 (nearest even). */
    rt_t r = rt_make(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t x = tu_tensor(r.g, "X", 2, TU_DIMS(2, 2), NULL, DNNJIT_DATA_TYPE_NOT_SET), y;
    TU_OK(dnnjit_graph_reduction(r.g, x, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_AVG, .axes = 2}, &y));
    TU_OK(dnnjit_tensor_set_data_type(r.g, y, DNNJIT_DATA_TYPE_INT32));
    const double vx[] = {1, 2, 2, 3};
    rt_in(&r, x, vx);
    rt_out(&r, y);
    rt_run(&r);
    const double want[] = {2, 2};
    rt_expect(&r, y, want, 2, 0);
    rt_free(&r);
}

static const dnnjit_reduction_mode_t reduction_modes[DNNJIT_REDUCTION_MODE_COUNT_] = {
    DNNJIT_REDUCTION_ADD, DNNJIT_REDUCTION_MUL, DNNJIT_REDUCTION_MIN,   DNNJIT_REDUCTION_MAX,
    DNNJIT_REDUCTION_AMAX, DNNJIT_REDUCTION_AVG, DNNJIT_REDUCTION_NORM1, DNNJIT_REDUCTION_NORM2,
};

int main(void)
{
    static char names[DNNJIT_REDUCTION_MODE_COUNT_][48];
    struct CMUnitTest tests[64];
    const struct CMUnitTest fixed[] = {
        cmocka_unit_test(execute_null_graph),
        cmocka_unit_test(execute_invalid_graph),
        cmocka_unit_test(execute_add_graph),
        cmocka_unit_test(pack_null_with_entries),
        cmocka_unit_test(pack_null_pointer),
        cmocka_unit_test(pack_unknown_uid),
        cmocka_unit_test(pack_duplicate_uid),
        cmocka_unit_test(pack_missing_input),
        cmocka_unit_test(pack_missing_output),
        cmocka_unit_test(pack_buffer_for_virtual_tensor),
        cmocka_unit_test(pass_by_value_scalars),
        cmocka_unit_test(pass_by_value_errors),
        cmocka_unit_test(chain_with_virtual_intermediates),
        cmocka_unit_test(virtual_intermediates_keep_float64),
        cmocka_unit_test(virtual_tensor_fan_out),
        cmocka_unit_test(stored_output_is_read_back_rounded),
        cmocka_unit_test(in_place_outputs),
        cmocka_unit_test(strided_output_leaves_gaps),
        cmocka_unit_test(runs_again_after_modification),
        cmocka_unit_test(matmul_by_hand),
        cmocka_unit_test(matmul_transposed_operands),
        cmocka_unit_test(matmul_stride_zero_rows),
        cmocka_unit_test(matmul_outer_product),
        cmocka_unit_test(matmul_batch_broadcast),
        cmocka_unit_test(matmul_half_seed000),
        cmocka_unit_test(matmul_int8_to_int32),
        cmocka_unit_test(matmul_fp8_output_rounds_and_saturates),
        cmocka_unit_test(reduction_by_hand),
        cmocka_unit_test(reduction_axes_from_output_dims),
        cmocka_unit_test(reduction_nan_and_integer_output),
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        tests[n++] = fixed[i];
    for (int m = 0; m < DNNJIT_REDUCTION_MODE_COUNT_; m++) {
        snprintf(names[m], sizeof names[m], "reduction_%s", dnnjit_reduction_mode_name(reduction_modes[m]));
        tests[n++] = (struct CMUnitTest){.name = names[m], .test_func = reduction_mode_test,
                                         .initial_state = (void *)&reduction_modes[m]};
    }
    return _cmocka_run_group_tests("test-ref", tests, n, NULL, NULL);
}
