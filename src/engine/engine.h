/* Engines: kernel families with knobs. A group of the fusion partition is run by one
 * (engine, knob) pair; the engine turns it into a kernel description (CUDA source, entry
 * point, launch shape, and which tensor goes in which argument slot). */
#ifndef DNNJIT_ENGINE_ENGINE_H
#define DNNJIT_ENGINE_ENGINE_H

#include "fusion/fusion.h"

/* Must match DJ_MAX_TENSORS / DJ_MAX_SCALARS in src/kernels/common.cuh. */
#define DNNJIT__MAX_KERNEL_TENSORS 24
#define DNNJIT__MAX_KERNEL_SCALARS 8

typedef struct dnnjit__kernel {
    char *source;  /* complete CUDA source, deterministic for a given plan */
    char entry[64]; /* extern "C" kernel name */
    unsigned grid[3], block[3];
    unsigned shared_bytes;
    /* DjArgs.ptr[i] receives the address of tensors[i]; DjArgs.scalar[i] the value of the
     * pass-by-value tensor scalars[i] (read from the host pointer in the variant pack). */
    int tensor_count;
    dnnjit_tensor_t tensors[DNNJIT__MAX_KERNEL_TENSORS];
    int scalar_count;
    dnnjit_tensor_t scalars[DNNJIT__MAX_KERNEL_SCALARS];
    /* Workspace the kernel needs for itself (e.g. split-K partial sums), passed in
     * DjArgs.ptr[scratch_slot]; execute zeroes its first scratch_zero_bytes before the launch. */
    int scratch_slot;
    int64_t scratch_bytes, scratch_zero_bytes;
    /* One extra NVRTC option the kernel is compiled with (a string literal), or NULL. */
    const char *compile_option;
} dnnjit__kernel_t;

typedef struct dnnjit__engine {
    const char *name; /* plan names start with it, e.g. "pointwise" */
    int knob_count;   /* knob settings are 0 .. knob_count-1 */
    /* Whether the engine can run the group with this knob setting on this arch; when not,
     * `why` (if non-NULL) says so in a sentence. */
    bool (*supports)(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob, const char *arch, char *why,
                     size_t why_size);
    /* Knob text for plan names, e.g. "v8_b256". */
    void (*knob_name)(int knob, char *buf, size_t size);
    /* Mode B: an estimate of the run time in microseconds on an H200-class device. */
    double (*cost)(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob);
    /* Mode A: optional; lower ranks first among the engine's knobs (knob order otherwise). */
    double (*rule)(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob);
    /* Optional: DNNJIT_BEHAVIOR_NOTE_* bits the knob adds to a plan's notes. */
    uint32_t (*notes)(int knob);
    dnnjit_status_t (*generate)(dnnjit_graph_t g, const dnnjit__partition_t *p, const dnnjit__group_t *grp,
                                int knob, dnnjit__kernel_t *out);
} dnnjit__engine_t;

void dnnjit__kernel_free(dnnjit__kernel_t *k);

/* Tensor i of a group: its inputs first, then its outputs. */
dnnjit_tensor_t dnnjit__group_tensor(const dnnjit__group_t *grp, int64_t i);

/* Gives every tensor the group touches an argument slot (inputs, then outputs);
 * pass-by-value tensors with a fixed value become literals and need none. False when they
 * do not fit in a kernel's arguments. */
bool dnnjit__kernel_assign_slots(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit__kernel_t *k);

/* The index of `id` in `list` (a kernel's tensors or scalars), or -1. */
int dnnjit__slot_of(const dnnjit_tensor_t *list, int n, dnnjit_tensor_t id);

#endif
