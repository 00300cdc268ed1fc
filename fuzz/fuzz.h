/* What the libFuzzer targets share: the checks every graph that loads or builds goes
 * through. A broken promise of the library (a documented invariant, not merely a failed
 * call) aborts, so that libFuzzer records the input as a crash. */
#ifndef DNNJIT_FUZZ_FUZZ_H
#define DNNJIT_FUZZ_FUZZ_H

#include "dnnjit.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Aborts with `what` and the library's last message when `ok` is false. */
void fuzz_require(bool ok, const char *what);

/* A handle for sm_90a without a device, made once: graphs made with it can be planned and
 * generate CUDA source, which the targets exercise too. */
dnnjit_handle_t fuzz_handle(void);

/* Takes a graph through everything that needs no GPU and no NVRTC: validation, the JSON
 * round trip (which must load and give the same text again), the float64 reference
 * executor on small graphs, and the plan list with each plan's generated source. The
 * graph is frozen afterwards (build_operation_graph); the caller still destroys it. */
void fuzz_exercise(dnnjit_graph_t g);

#endif
