/* Helpers shared by the cmocka tests: terse graph building and random data. */
#ifndef DNNJIT_TEST_UTIL_H
#define DNNJIT_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dnnjit.h"
#include "engine/engine.h"
#include "fusion/fusion.h"
#include "layout.h"

/* Asserts a call succeeded, printing the library's message when it did not. */
#define TU_OK(call)                                                                             \
    do {                                                                                        \
        dnnjit_status_t tu_s_ = (call);                                                         \
        if (tu_s_ != DNNJIT_STATUS_SUCCESS)                                                     \
            fail_msg("%s failed: %s: %s", #call, dnnjit_status_name(tu_s_), dnnjit_last_error()); \
    } while (0)

/* Asserts a call failed with `status` and that the message contains `fragment`. */
#define TU_FAILS(call, status, fragment) tu_expect_failure((call), (status), (fragment), #call, __FILE__, __LINE__)
void tu_expect_failure(dnnjit_status_t got, dnnjit_status_t want, const char *fragment, const char *what,
                       const char *file, int line);

/* A graph named `name` on handle `h` (NULL: none) with the given io and compute types and
 * FLOAT intermediates. */
dnnjit_graph_t tu_graph_on(dnnjit_handle_t h, const char *name, dnnjit_data_type_t io_type,
                           dnnjit_data_type_t compute_type);

/* A graph with io `io_type` / intermediate FLOAT / compute FLOAT (NULL handle). */
dnnjit_graph_t tu_graph(dnnjit_data_type_t io_type);

/* Adds an input tensor with packed strides (stride NULL) or the given ones. */
dnnjit_tensor_t tu_tensor(dnnjit_graph_t g, const char *name, int ndim, const int64_t *dim, const int64_t *stride,
                          dnnjit_data_type_t type);
#define TU_DIMS(...) (int64_t[]){__VA_ARGS__}

/* The pointwise node `mode` of a (and b, or DNNJIT_TENSOR_NONE) and its output. */
dnnjit_tensor_t tu_pointwise(dnnjit_graph_t g, dnnjit_pointwise_mode_t mode, dnnjit_tensor_t a, dnnjit_tensor_t b);

/* Marks t an output of the graph unless it is DNNJIT_TENSOR_NONE (an op's optional output
 * not asked for); returns t. */
dnnjit_tensor_t tu_output(dnnjit_graph_t g, dnnjit_tensor_t t);

/* Validates the graph and returns its partition into fusion groups. */
dnnjit__partition_t tu_partition(dnnjit_graph_t g);

/* t's uid (asserting the lookup succeeds). */
int64_t tu_uid(dnnjit_graph_t g, dnnjit_tensor_t t);

/* Whether t is among the n tensors of list. */
bool tu_has_tensor(const dnnjit_tensor_t *list, int64_t n, dnnjit_tensor_t t);

/* Compiles kernel k for `arch` with its own NVRTC option (if any), as a build does, failing
 * the test with NVRTC's message and the source otherwise. The CUBIN is returned in *cubin
 * (free with free()) when `cubin` is not NULL, and dropped otherwise. */
void tu_compile_kernel(const dnnjit__kernel_t *k, const char *arch, void **cubin, size_t *size);

/* Makes the plan list of one heuristic mode and returns its first plan's name (free with
 * dnnjit_free). */
char *tu_first_plan(dnnjit_graph_t g, dnnjit_heur_mode_t mode);

/* Deterministic pseudo-random numbers (xorshift), uniform in [lo, hi). */
void tu_seed(uint64_t seed);
double tu_uniform(double lo, double hi);

/* Allocates a host buffer big enough for a tensor (its strides' span) and fills every
 * element with uniform values in [lo, hi), stored in the tensor's data type. Freed by the
 * caller with free(). */
void *tu_random_buffer(dnnjit_graph_t g, dnnjit_tensor_t t, double lo, double hi);
/* Allocates a buffer for a tensor filled with NaN (poison). */
void *tu_poison_buffer(dnnjit_graph_t g, dnnjit_tensor_t t);


#endif
