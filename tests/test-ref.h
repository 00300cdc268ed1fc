/* Helpers shared by the reference executor's tests (test-ref*.c): a small harness that
 * gives each tensor a host buffer, runs dnnjit_graph_execute_reference, and reads results
 * back by logical (row-major) index, plus tolerant comparisons. */
#ifndef DNNJIT_TEST_REF_H
#define DNNJIT_TEST_REF_H

#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every byte of a buffer starts as this, so that tests can see what was never written. */
#define RT_POISON 0xA5
#define RT_MAX 24

typedef struct rt {
    dnnjit_graph_t g;
    int count;
    dnnjit_tensor_t tensor[RT_MAX];
    const double *values[RT_MAX]; /* an input's logical row-major values; NULL for an output */
    void *buf[RT_MAX];
    dnnjit_tensor_info_t info[RT_MAX];
    dnnjit_variant_t pack[RT_MAX];
} rt_t;

static inline rt_t rt_make(dnnjit_data_type_t io_type)
{
    return (rt_t){.g = tu_graph(io_type)};
}

static inline int rt_register(rt_t *r, dnnjit_tensor_t t, const double *values)
{
    assert_true(r->count < RT_MAX);
    r->tensor[r->count] = t;
    r->values[r->count] = values;
    return r->count++;
}

/* An input whose elements, in row-major logical order, are `values`. */
static inline void rt_in(rt_t *r, dnnjit_tensor_t t, const double *values)
{
    rt_register(r, t, values);
}

/* Marks an op's output as written to memory and gives it a buffer. */
static inline void rt_out(rt_t *r, dnnjit_tensor_t t)
{
    TU_OK(dnnjit_tensor_set_output(r->g, t, true));
    rt_register(r, t, NULL);
}

static inline int rt_find(const rt_t *r, dnnjit_tensor_t t)
{
    for (int i = 0; i < r->count; i++)
        if (r->tensor[i] == t)
            return i;
    fail_msg("tensor %u was not given to the harness", t);
    return -1;
}

/* Validates, allocates and fills every buffer (poisoning all bytes first) and builds the
 * variant pack; returns what execute_reference returns. */
static inline dnnjit_status_t rt_exec(rt_t *r)
{
    TU_OK(dnnjit_graph_validate(r->g));
    for (int i = 0; i < r->count; i++) {
        dnnjit_tensor_info_t *info = &r->info[i];
        TU_OK(dnnjit_tensor_get_info(r->g, r->tensor[i], info));
        size_t size = dnnjit_data_type_size(info->data_type);
        size_t bytes = (size_t)layout_span(info) * size;
        free(r->buf[i]);
        r->buf[i] = malloc(bytes);
        assert_non_null(r->buf[i]);
        memset(r->buf[i], RT_POISON, bytes);
        for (int64_t j = 0; r->values[i] && j < layout_numel(info); j++)
            dnnjit_element_store(info->data_type, r->buf[i], layout_offset(info, j), r->values[i][j]);
        TU_OK(dnnjit_tensor_get_uid(r->g, r->tensor[i], &r->pack[i].uid));
        r->pack[i].ptr = r->buf[i];
    }
    return dnnjit_graph_execute_reference(r->g, r->pack, (size_t)r->count);
}

static inline void rt_run(rt_t *r)
{
    TU_OK(rt_exec(r));
}

/* Element `linear` (row-major over the tensor's dims) of a tensor after the run. */
static inline double rt_get(const rt_t *r, dnnjit_tensor_t t, int64_t linear)
{
    int i = rt_find(r, t);
    return dnnjit_element_load(r->info[i].data_type, r->buf[i], layout_offset(&r->info[i], linear));
}

static inline void rt_free(rt_t *r)
{
    for (int i = 0; i < r->count; i++)
        free(r->buf[i]);
    dnnjit_graph_destroy(r->g);
    *r = (rt_t){0};
}

/* Whether got matches want within tol * (1 + |want|); NaN matches NaN and an infinity
 * only itself. */
static inline bool rt_close(double got, double want, double tol)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got))
        return got == want;
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

#define RT_ASSERT_CLOSE(got, want, tol)                                                                        \
    do {                                                                                                        \
        double rt_g_ = (got), rt_w_ = (want);                                                                   \
        if (!rt_close(rt_g_, rt_w_, (tol)))                                                                     \
            fail_msg("%s = %.17g but expected %s = %.17g", #got, rt_g_, #want, rt_w_);                          \
    } while (0)

/* Checks every element of an output against `want` (row-major). */
static inline void rt_expect(const rt_t *r, dnnjit_tensor_t t, const double *want, int64_t count, double tol)
{
    for (int64_t i = 0; i < count; i++)
        if (!rt_close(rt_get(r, t, i), want[i], tol))
            fail_msg("element %lld of tensor %u is %.17g but expected %.17g", (long long)i, t, rt_get(r, t, i),
                     want[i]);
}

/* Fills `out` with `count` uniform values in [lo, hi). */
static inline void rt_uniform(double *out, int64_t count, double lo, double hi)
{
    for (int64_t i = 0; i < count; i++)
        out[i] = tu_uniform(lo, hi);
}

#endif
