/* Plans: one (engine, knob) choice per group of the partition, ranked by the heuristics,
 * and what building one produces (kernels, CUBINs, loaded functions). */
#ifndef DNNJIT_ENGINE_PLAN_H
#define DNNJIT_ENGINE_PLAN_H

#include "engine/engine.h"
#include "jit/jit.h"

typedef struct dnnjit__plan_choice {
    const dnnjit__engine_t *engine;
    int knob;
} dnnjit__plan_choice_t;

typedef struct dnnjit__built_kernel {
    dnnjit__kernel_t kernel; /* source and launch description */
    void *cubin;
    size_t cubin_size;
    void *function; /* dnnjit__cu_function_t, when loaded on a device */
    void *zero_function; /* its module's dj_zero_scratch, when the kernel has counters to zero */
    dnnjit__jit_ref_t *module; /* this kernel's reference to the loaded module holding `function` */
    unsigned grid[3];          /* the grid launched: kernel.grid, fitted to the device (resident_cluster) */
    /* The tensor maps execute encoded last (kernel.tma), with the addresses they were
     * encoded for: a graph run again on the same buffers reuses them. Stored as bytes, as
     * the memory holding this struct is not aligned for a CUtensorMap. */
    const void *tma_address[DNNJIT__MAX_KERNEL_TMAS];
    uint64_t tma_map[DNNJIT__MAX_KERNEL_TMAS][16];
} dnnjit__built_kernel_t;

typedef struct dnnjit__plan {
    dnnjit__plan_choice_t *choices; /* one per group */
    bool built;
    dnnjit__built_kernel_t *kernels; /* one per group, once built */
} dnnjit__plan_t;

/* Everything the JIT path adds to a graph. */
typedef struct dnnjit__jit_state {
    dnnjit__partition_t partition;
    struct dnnjit__canonical *canon; /* per group, what engines rank and generate from */
    int64_t plan_count;
    dnnjit__plan_t *plans;
    int64_t chosen; /* -1 before a plan is built */
    /* Per tensor (id - 1), the last buffer execute found to be device memory, so that a
     * graph run again on the same buffers skips the driver's pointer queries (about a
     * microsecond each). Allocated with the state. */
    const void **device_checked;
} dnnjit__jit_state_t;

void dnnjit__jit_state_free(dnnjit__jit_state_t *state);

/* Workspace bytes execute needs: the partition's intermediates, then (at *scratch_offset,
 * 256-byte aligned) the largest scratch a kernel of the chosen plan asks for. Before a plan
 * is chosen, the intermediates only. */
int64_t dnnjit__workspace_size(const dnnjit__jit_state_t *state, int64_t *scratch_offset);

/* Loads a built kernel's CUBIN on the current device and sets b->function and b->module.
 * The loaded module is attached to the kernel-cache entry of `key`, which must exist:
 * graphs whose kernels share an entry share the module, which is unloaded when neither
 * the entry nor any built kernel holds it any more. */
dnnjit_status_t dnnjit__plan_load_kernel(dnnjit__built_kernel_t *b, dnnjit__jit_key_t key);

/* Every engine, most specialised first (the order mode A ranks them in). */
extern const dnnjit__engine_t *const dnnjit__engines[];

#endif
