/* The CLI's GPU side: run a built graph on the device with random inputs, check it against
 * the reference executor, and time it. */
#ifndef DNNJIT_TOOLS_GPU_H
#define DNNJIT_TOOLS_GPU_H

#include "dnnjit.h"

typedef struct gpu_run_result {
    double max_rel_error; /* over every output: ||out - ref|| / ||ref|| (NaN if any NaN); without
                           * the reference, 0, or NaN when an output holds a NaN */
    double us_per_call;   /* median device time per call, CUDA events around many calls */
} gpu_run_result_t;

/* Random inputs in [lo, hi) (seeded by *rng; NaN in the padding between their elements),
 * outputs poisoned with NaN on the device,
 * execute, compare with the reference (with `reference`; else only look for NaN in the
 * outputs, which finds elements the GPU left unwritten); then time `calls` back-to-back
 * executes, median of 9 repeats (no timing when calls is 0). Prints one line per output. */
dnnjit_status_t gpu_run_and_check(dnnjit_graph_t g, uint64_t *rng, double lo, double hi, bool reference, int calls,
                                  gpu_run_result_t *result);

/* The tolerance for a graph's outputs: 1e-2 when any input is a 16- or 8-bit float, else
 * 1e-5. */
double gpu_tolerance(dnnjit_graph_t g);

#endif
