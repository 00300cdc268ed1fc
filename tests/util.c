#include "util.h"

#include "jit/jit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tu_expect_failure(dnnjit_status_t got, dnnjit_status_t want, const char *fragment, const char *what,
                       const char *file, int line)
{
    const char *msg = dnnjit_last_error();
    if (got != want)
        fail_msg("%s:%d: %s returned %s, expected %s (message: %s)", file, line, what, dnnjit_status_name(got),
                 dnnjit_status_name(want), msg);
    if (fragment && !strstr(msg, fragment))
        fail_msg("%s:%d: %s: message \"%s\" lacks \"%s\"", file, line, what, msg, fragment);
}

dnnjit_graph_t tu_graph_on(dnnjit_handle_t h, const char *name, dnnjit_data_type_t io_type,
                           dnnjit_data_type_t compute_type)
{
    dnnjit_graph_t g = NULL;
    TU_OK(dnnjit_graph_create(h,
                              &(dnnjit_graph_attr_t){.name = name,
                                                     .io_data_type = io_type,
                                                     .intermediate_data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                     .compute_data_type = compute_type},
                              &g));
    return g;
}

dnnjit_graph_t tu_graph(dnnjit_data_type_t io_type)
{
    return tu_graph_on(NULL, "test", io_type, DNNJIT_DATA_TYPE_FLOAT);
}

dnnjit_tensor_t tu_pointwise(dnnjit_graph_t g, dnnjit_pointwise_mode_t mode, dnnjit_tensor_t a, dnnjit_tensor_t b)
{
    dnnjit_tensor_t out;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = mode}, a, b, DNNJIT_TENSOR_NONE, &out));
    return out;
}

dnnjit_tensor_t tu_output(dnnjit_graph_t g, dnnjit_tensor_t t)
{
    if (t != DNNJIT_TENSOR_NONE)
        TU_OK(dnnjit_tensor_set_output(g, t, true));
    return t;
}

dnnjit__partition_t tu_partition(dnnjit_graph_t g)
{
    dnnjit__partition_t p;
    TU_OK(dnnjit_graph_validate(g));
    TU_OK(dnnjit__partition(g, &p));
    return p;
}

void tu_compile_kernel(const dnnjit__kernel_t *k, const char *arch, void **cubin, size_t *size)
{
    dnnjit__compile_options_t options;
    void *bin = NULL;
    size_t n = 0;
    if (dnnjit__nvrtc_compile(k->source, k->entry, arch, dnnjit__kernel_options(k, &options), &bin, &n) !=
        DNNJIT_STATUS_SUCCESS)
        fail_msg("%s for %s: %s\n--- source ---\n%s", k->entry, arch, dnnjit_last_error(), k->source);
    assert_true(n > 0);
    if (cubin) {
        *cubin = bin;
        *size = n;
    } else {
        free(bin);
    }
}

int64_t tu_uid(dnnjit_graph_t g, dnnjit_tensor_t t)
{
    int64_t uid;
    TU_OK(dnnjit_tensor_get_uid(g, t, &uid));
    return uid;
}

bool tu_has_tensor(const dnnjit_tensor_t *list, int64_t n, dnnjit_tensor_t t)
{
    for (int64_t i = 0; i < n; i++)
        if (list[i] == t)
            return true;
    return false;
}

char *tu_first_plan(dnnjit_graph_t g, dnnjit_heur_mode_t mode)
{
    TU_OK(dnnjit_graph_create_execution_plans(g, &mode, 1));
    char *name = NULL;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &name));
    return name;
}

dnnjit_tensor_t tu_tensor(dnnjit_graph_t g, const char *name, int ndim, const int64_t *dim, const int64_t *stride,
                          dnnjit_data_type_t type)
{
    dnnjit_tensor_t t = 0;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = name, .ndim = ndim, .dim = dim, .stride = stride,
                                                          .data_type = type},
                              &t));
    return t;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

void tu_seed(uint64_t seed)
{
    rng_state = seed ? seed : 0x9e3779b97f4a7c15ull;
}

double tu_uniform(double lo, double hi)
{
    return lo + (hi - lo) * layout_uniform(&rng_state);
}

static void *buffer_for(dnnjit_graph_t g, dnnjit_tensor_t t, dnnjit_tensor_info_t *info)
{
    TU_OK(dnnjit_tensor_get_info(g, t, info));
    size_t size = dnnjit_data_type_size(info->data_type);
    assert_true(size > 0);
    void *p = calloc((size_t)layout_span(info), size);
    assert_non_null(p);
    return p;
}

void *tu_random_buffer(dnnjit_graph_t g, dnnjit_tensor_t t, double lo, double hi)
{
    dnnjit_tensor_info_t info;
    void *p = buffer_for(g, t, &info);
    int64_t n = layout_numel(&info);
    for (int64_t i = 0; i < n; i++)
        dnnjit_element_store(info.data_type, p, layout_offset(&info, i), tu_uniform(lo, hi));
    return p;
}

void *tu_poison_buffer(dnnjit_graph_t g, dnnjit_tensor_t t)
{
    dnnjit_tensor_info_t info;
    void *p = buffer_for(g, t, &info);
    int64_t span = layout_span(&info);
    for (int64_t i = 0; i < span; i++)
        dnnjit_element_store(info.data_type, p, i, NAN);
    return p;
}
