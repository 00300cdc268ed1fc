/* The reference executor's scaled dot-product attention: by hand, and against a naive
 * loop written here (exp of the raw scores, no max subtraction, masked keys weighted 0)
 * for causal masks of every alignment, grouped-query heads, scales and strides. */
#include "test-ref.h"

typedef struct sdpa_shape {
    int b, hq, hk, hv, sq, skv, d, dv;
} sdpa_shape_t;

/* O and the log-sum-exp per row, from packed Q [b, hq, sq, d], K [b, hk, skv, d] and
 * V [b, hv, skv, dv]. Query head h reads key head h * hk / hq. */
static void naive_sdpa(const sdpa_shape_t *s, const double *q, const double *k, const double *v, double scale,
                       bool causal, double *o, double *stats)
{
    for (int b = 0; b < s->b; b++)
        for (int h = 0; h < s->hq; h++)
            for (int i = 0; i < s->sq; i++) {
                double w[64], z = 0;
                int kh = h * s->hk / s->hq, vh = h * s->hv / s->hq;
                for (int j = 0; j < s->skv; j++) {
                    /* Bottom-right alignment: a query sees the keys at least as far from
                     * the end of the keys as it is from the end of the queries. */
                    bool masked = causal && s->skv - 1 - j < s->sq - 1 - i;
                    double dot = 0;
                    for (int e = 0; e < s->d; e++)
                        dot += q[((b * s->hq + h) * s->sq + i) * s->d + e] * k[((b * s->hk + kh) * s->skv + j) * s->d + e];
                    w[j] = masked ? 0 : exp(scale * dot);
                    z += w[j];
                }
                for (int e = 0; e < s->dv; e++) {
                    double acc = 0;
                    for (int j = 0; j < s->skv; j++)
                        acc += w[j] * v[((b * s->hv + vh) * s->skv + j) * s->dv + e];
                    o[((b * s->hq + h) * s->sq + i) * s->dv + e] = z > 0 ? acc / z : 0;
                }
                stats[(b * s->hq + h) * s->sq + i] = log(z);
            }
}

typedef struct sdpa_run {
    rt_t r;
    dnnjit_tensor_t o, stats;
    double q[512], k[512], v[512], want_o[512], want_stats[64];
} sdpa_run_t;

/* Random Q, K, V (as stored in `io`), SDPA with attr (stats forced on, kept in DOUBLE) and
 * Q's strides `q_stride` (NULL: packed), checked against naive_sdpa. The run stays open
 * for further checks; the caller frees it with rt_free. */
static void run_sdpa(sdpa_run_t *t, const sdpa_shape_t *s, dnnjit_sdpa_attr_t attr, dnnjit_data_type_t io,
                     const int64_t *q_stride, uint64_t seed)
{
    int nq = s->b * s->hq * s->sq * s->d, nk = s->b * s->hk * s->skv * s->d, nv = s->b * s->hv * s->skv * s->dv;
    assert_true(nq <= 512 && nk <= 512 && nv <= 512 && s->skv <= 64);
    tu_seed(seed);
    double *arrays[3] = {t->q, t->k, t->v};
    int counts[3] = {nq, nk, nv};
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < counts[a]; i++) {
            uint8_t buf[8];
            dnnjit_element_store(io, buf, 0, tu_uniform(-1.5, 1.5));
            arrays[a][i] = dnnjit_element_load(io, buf, 0);
        }
    double scale = attr.has_attn_scale ? attr.attn_scale : 1 / sqrt((double)s->d);
    naive_sdpa(s, t->q, t->k, t->v, scale, attr.use_causal_mask, t->want_o, t->want_stats);

    t->r = rt_make(io);
    dnnjit_graph_t g = t->r.g;
    dnnjit_tensor_t q = tu_tensor(g, "Q", 4, TU_DIMS(s->b, s->hq, s->sq, s->d), q_stride, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t k = tu_tensor(g, "K", 4, TU_DIMS(s->b, s->hk, s->skv, s->d), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t v = tu_tensor(g, "V", 4, TU_DIMS(s->b, s->hv, s->skv, s->dv), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    attr.generate_stats = true;
    TU_OK(dnnjit_graph_sdpa(g, q, k, v, &attr, &t->o, &t->stats));
    TU_OK(dnnjit_tensor_set_data_type(g, t->stats, DNNJIT_DATA_TYPE_DOUBLE));
    rt_in(&t->r, q, t->q);
    rt_in(&t->r, k, t->k);
    rt_in(&t->r, v, t->v);
    rt_out(&t->r, t->o);
    rt_out(&t->r, t->stats);
    rt_run(&t->r);
    /* A HALF O is within half an ulp (2^-11 relative) of the exact value. */
    rt_expect(&t->r, t->o, t->want_o, s->b * s->hq * s->sq * s->dv, io == DNNJIT_DATA_TYPE_HALF ? 0x1p-11 : 1e-13);
    rt_expect(&t->r, t->stats, t->want_stats, s->b * s->hq * s->sq, 1e-13);
}

static sdpa_run_t run; /* large: kept out of the stack */

static void sdpa_by_hand(void **state)
{
    (void)state;
    rt_t r = rt_make(DNNJIT_DATA_TYPE_DOUBLE);
    dnnjit_tensor_t q = tu_tensor(r.g, "Q", 4, TU_DIMS(1, 1, 1, 1), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t k = tu_tensor(r.g, "K", 4, TU_DIMS(1, 1, 2, 1), NULL, DNNJIT_DATA_TYPE_NOT_SET);
    dnnjit_tensor_t v = tu_tensor(r.g, "V", 4, TU_DIMS(1, 1, 2, 1), NULL, DNNJIT_DATA_TYPE_NOT_SET), o, stats;
    TU_OK(dnnjit_graph_sdpa(r.g, q, k, v,
                            &(dnnjit_sdpa_attr_t){.has_attn_scale = true, .attn_scale = 1, .generate_stats = true}, &o,
                            &stats));
    /* Scores [0, log 3] give weights [1/4, 3/4]: O = 2/4 + 6 * 3/4 = 5, Stats = log 4. */
    const double vq[] = {1}, vk[] = {0, log(3.0)}, vv[] = {2, 6};
    rt_in(&r, q, vq);
    rt_in(&r, k, vk);
    rt_in(&r, v, vv);
    rt_out(&r, o);
    rt_out(&r, stats);
    rt_run(&r);
    RT_ASSERT_CLOSE(rt_get(&r, o, 0), 5, 1e-15);
    RT_ASSERT_CLOSE(rt_get(&r, stats, 0), log(4.0), 1e-7); /* FLOAT by default */
    rt_free(&r);
}

static void sdpa_matches_naive(void **state)
{
    (void)state;
    sdpa_shape_t s = {2, 2, 2, 2, 3, 5, 4, 3};
    run_sdpa(&run, &s, (dnnjit_sdpa_attr_t){0}, DNNJIT_DATA_TYPE_DOUBLE, NULL, 61);
    rt_free(&run.r);
}

static void sdpa_attn_scale(void **state)
{
    (void)state;
    sdpa_shape_t s = {1, 2, 1, 1, 4, 4, 8, 8};
    run_sdpa(&run, &s, (dnnjit_sdpa_attr_t){.has_attn_scale = true, .attn_scale = 0.3}, DNNJIT_DATA_TYPE_DOUBLE, NULL,
             62);
    rt_free(&run.r);
}

static void sdpa_causal_square(void **state)
{
    (void)state;
    sdpa_shape_t s = {1, 2, 2, 2, 4, 4, 4, 4};
    run_sdpa(&run, &s, (dnnjit_sdpa_attr_t){.use_causal_mask = true}, DNNJIT_DATA_TYPE_DOUBLE, NULL, 63);
    /* Row 0 sees key 0 only: O is V's first row. */
    for (int e = 0; e < 4; e++)
        RT_ASSERT_CLOSE(rt_get(&run.r, run.o, e), run.v[e], 1e-15);
    rt_free(&run.r);
}

static void sdpa_causal_bottom_right(void **state)
{
    (void)state;
    /* 2 queries over 5 keys: row 0 sees keys 0..3 and row 1 all five. */
    sdpa_shape_t s = {2, 1, 1, 1, 2, 5, 3, 2};
    run_sdpa(&run, &s, (dnnjit_sdpa_attr_t){.use_causal_mask = true}, DNNJIT_DATA_TYPE_DOUBLE, NULL, 64);
    double o[512], stats[64];
    naive_sdpa(&s, run.q, run.k, run.v, 1 / sqrt(3.0), false, o, stats);
    /* The mask changes row 0 here, and leaves the last row (index 2 of O) as unmasked. */
    assert_false(rt_close(rt_get(&run.r, run.o, 0), o[0], 1e-6));
    RT_ASSERT_CLOSE(rt_get(&run.r, run.o, 2), o[2], 1e-13);
    rt_free(&run.r);
}

static void sdpa_causal_fully_masked_rows(void **state)
{
    (void)state;
    /* 5 queries over 3 keys: rows 0 and 1 see no key at all, row 2 sees key 0. */
    sdpa_shape_t s = {1, 1, 1, 1, 5, 3, 2, 2};
    run_sdpa(&run, &s, (dnnjit_sdpa_attr_t){.use_causal_mask = true}, DNNJIT_DATA_TYPE_DOUBLE, NULL, 65);
    for (int i = 0; i < 2; i++) {
        assert_true(rt_get(&run.r, run.o, i * 2) == 0 && rt_get(&run.r, run.o, i * 2 + 1) == 0);
        assert_true(rt_get(&run.r, run.stats, i) == -INFINITY);
    }
    RT_ASSERT_CLOSE(rt_get(&run.r, run.o, 4), run.v[0], 1e-15);
    RT_ASSERT_CLOSE(rt_get(&run.r, run.o, 5), run.v[1], 1e-15);
    rt_free(&run.r);
}

static void sdpa_grouped_query_heads(void **state)
{
    (void)state;
    /* 4 query heads over 2 key heads and 1 value head, with d_v != d. */
    sdpa_shape_t s = {2, 4, 2, 1, 3, 4, 4, 2};
    run_sdpa(&run, &s, (dnnjit_sdpa_attr_t){0}, DNNJIT_DATA_TYPE_DOUBLE, NULL, 66);
    rt_free(&run.r);
    run_sdpa(&run, &s, (dnnjit_sdpa_attr_t){.use_causal_mask = true}, DNNJIT_DATA_TYPE_DOUBLE, NULL, 67);
    rt_free(&run.r);
}

static void sdpa_strided_q_half(void **state)
{
    (void)state;
    /* Q [b, h, s, d] = [2, 3, 4, 8] stored as [b, s, h, d]; O follows Q's order. */
    sdpa_shape_t s = {2, 3, 3, 3, 4, 4, 8, 8};
    run_sdpa(&run, &s, (dnnjit_sdpa_attr_t){.use_causal_mask = true}, DNNJIT_DATA_TYPE_HALF, TU_DIMS(96, 8, 24, 1), 68);
    int i = rt_find(&run.r, run.o);
    assert_int_equal(run.r.info[i].stride[0], 96);
    assert_int_equal(run.r.info[i].stride[1], 8);
    assert_int_equal(run.r.info[i].stride[2], 24);
    assert_int_equal(run.r.info[i].stride[3], 1);
    rt_free(&run.r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sdpa_by_hand),
        cmocka_unit_test(sdpa_matches_naive),
        cmocka_unit_test(sdpa_attn_scale),
        cmocka_unit_test(sdpa_causal_square),
        cmocka_unit_test(sdpa_causal_bottom_right),
        cmocka_unit_test(sdpa_causal_fully_masked_rows),
        cmocka_unit_test(sdpa_grouped_query_heads),
        cmocka_unit_test(sdpa_strided_q_half),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
