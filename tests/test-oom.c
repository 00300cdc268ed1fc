/* Running out of memory: each step of building a graph's plans is run with its k-th
 * allocation failing, for every k until the step needs no more. The step must then fail
 * with OUT_OF_MEMORY and leave the graph as it was: the same step run again succeeds, and
 * so do the steps after it. (The sanitizer pass of CI catches what such a failure frees
 * twice or reads after freeing.) The library's calls to malloc, calloc and realloc are
 * routed through the wrappers below at link time (tests/CMakeLists.txt). */
#include "util.h"

#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t count, size_t size);
void *__real_realloc(void *p, size_t size);

/* The allocations left before one fails; negative: none fails. */
static long allocations_left = -1;

static bool fail_now(void)
{
    return allocations_left >= 0 && allocations_left-- == 0;
}

void *__wrap_malloc(size_t size)
{
    return fail_now() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t count, size_t size)
{
    return fail_now() ? NULL : __real_calloc(count, size);
}

void *__wrap_realloc(void *p, size_t size)
{
    return fail_now() ? NULL : __real_realloc(p, size);
}

static dnnjit_status_t build_operation_graph(dnnjit_graph_t g)
{
    return dnnjit_graph_build_operation_graph(g);
}

static dnnjit_status_t create_plans(dnnjit_graph_t g)
{
    return dnnjit_graph_create_execution_plans(g, (dnnjit_heur_mode_t[]){DNNJIT_HEUR_MODE_A}, 1);
}

static dnnjit_status_t plan_source(dnnjit_graph_t g)
{
    char *source = NULL;
    dnnjit_status_t s = dnnjit_graph_get_plan_source(g, 0, &source);
    free(source);
    return s;
}

static dnnjit_status_t plan_name(dnnjit_graph_t g)
{
    char *name = NULL;
    dnnjit_status_t s = dnnjit_graph_get_plan_name(g, 0, &name);
    free(name);
    return s;
}

static dnnjit_status_t to_json(dnnjit_graph_t g)
{
    char *json = NULL;
    dnnjit_status_t s = dnnjit_graph_to_json(g, &json);
    free(json);
    return s;
}

static const struct {
    const char *name;
    dnnjit_status_t (*run)(dnnjit_graph_t g);
} steps[] = {
    {"build_operation_graph", build_operation_graph},
    {"create_execution_plans", create_plans},
    {"get_plan_source", plan_source},
    {"get_plan_name", plan_name},
    {"to_json", to_json},
};
enum { STEP_COUNT = sizeof steps / sizeof *steps };

/* A GEMM with a fused bias and relu, whose plans are generated for sm_90a without a GPU. */
static dnnjit_graph_t gemm_graph(dnnjit_handle_t h)
{
    dnnjit_graph_t g = tu_graph_on(h, "oom", DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(77, 64), NULL, DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(64, 40), NULL, DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 2, TU_DIMS(1, 40), NULL, DNNJIT_DATA_TYPE_BFLOAT16), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_RELU_FWD, tu_pointwise(g, DNNJIT_POINTWISE_ADD, c, bias),
                              DNNJIT_TENSOR_NONE));
    return g;
}

static void every_step_survives_a_failed_allocation(void **state)
{
    (void)state;
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    for (int step = 0; step < STEP_COUNT; step++) {
        for (long k = 0;; k++) {
            dnnjit_graph_t g = gemm_graph(h);
            for (int before = 0; before < step; before++)
                TU_OK(steps[before].run(g));
            allocations_left = k;
            dnnjit_status_t s = steps[step].run(g);
            bool failed_one = allocations_left < 0;
            allocations_left = -1;
            if (!failed_one) {
                /* Every allocation the step makes has succeeded: the sweep of this step
                 * is done. Each step allocates, so some must have failed before. */
                TU_OK(s);
                if (k == 0)
                    fail_msg("%s made no allocation through the wrappers", steps[step].name);
                dnnjit_graph_destroy(g);
                break;
            }
            if (s != DNNJIT_STATUS_OUT_OF_MEMORY && s != DNNJIT_STATUS_SUCCESS)
                fail_msg("%s with allocation %ld failing: %s: %s", steps[step].name, k, dnnjit_status_name(s),
                         dnnjit_last_error());
            for (int after = step; after < STEP_COUNT; after++)
                if ((s = steps[after].run(g)) != DNNJIT_STATUS_SUCCESS)
                    fail_msg("%s after %s's allocation %ld failed: %s: %s", steps[after].name, steps[step].name, k,
                             dnnjit_status_name(s), dnnjit_last_error());
            dnnjit_graph_destroy(g);
        }
    }
    dnnjit_handle_destroy(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_step_survives_a_failed_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
