/* Plans: one (engine, knob) choice per group of the partition, ranked by the heuristics,
 * and what building one produces (kernels, CUBINs, loaded functions). */
#ifndef DNNJIT_ENGINE_PLAN_H
#define DNNJIT_ENGINE_PLAN_H

#include "engine/engine.h"

typedef struct dnnjit__plan_choice {
    const dnnjit__engine_t *engine;
    int knob;
} dnnjit__plan_choice_t;

typedef struct dnnjit__built_kernel {
    dnnjit__kernel_t kernel; /* source and launch description */
    void *cubin;
    size_t cubin_size;
    void *function; /* dnnjit__cu_function_t, when loaded on a device */
} dnnjit__built_kernel_t;

typedef struct dnnjit__plan {
    dnnjit__plan_choice_t *choices; /* one per group */
    bool built;
    dnnjit__built_kernel_t *kernels; /* one per group, once built */
} dnnjit__plan_t;

/* Everything the JIT path adds to a graph. */
typedef struct dnnjit__jit_state {
    dnnjit__partition_t partition;
    int64_t plan_count;
    dnnjit__plan_t *plans;
    int64_t chosen; /* -1 before a plan is built */
} dnnjit__jit_state_t;

void dnnjit__jit_state_free(dnnjit__jit_state_t *state);

/* Workspace bytes execute needs: the partition's intermediates, then (at *scratch_offset,
 * 256-byte aligned) the largest scratch a kernel of the chosen plan asks for. Before a plan
 * is chosen, the intermediates only. */
int64_t dnnjit__workspace_size(const dnnjit__jit_state_t *state, int64_t *scratch_offset);

/* Every engine, most specialised first (the order mode A ranks them in). */
extern const dnnjit__engine_t *const dnnjit__engines[];

#endif
