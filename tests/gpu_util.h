/* Helpers for the GPU tests: a shared device handle, device buffers, and the check that
 * runs a graph on the GPU and on the reference executor and compares them. */
#ifndef DNNJIT_TEST_GPU_UTIL_H
#define DNNJIT_TEST_GPU_UTIL_H

#include "util.h"

/* Whether a GPU can execute; prints why not (the test then returns 77, ctest's skip). */
bool tu_gpu_available(void);
/* A graph on the shared device handle. */
dnnjit_graph_t tu_gpu_graph(dnnjit_data_type_t io_type);
/* The relative-error bound for outputs computed from inputs of this type. */
double tu_tolerance(dnnjit_data_type_t io_type);
/* Builds the graph with the given modes, then for EVERY plan: fresh random inputs in
 * [lo, hi), outputs poisoned with NaN on the device, execute, and compare every output
 * with the reference executor by ||out - ref|| / ||ref|| < tol (NaN fails). */
void tu_gpu_check(dnnjit_graph_t g, const dnnjit_heur_mode_t *modes, int mode_count, double lo, double hi, double tol,
                  const char *label);

#endif
