/* Engines: kernel families with knobs. A group of the fusion partition is run by one
 * (engine, knob) pair; the engine turns it into a kernel description (CUDA source, entry
 * point, launch shape, and which tensor goes in which argument slot). */
#ifndef DNNJIT_ENGINE_ENGINE_H
#define DNNJIT_ENGINE_ENGINE_H

#include "fusion/fusion.h"

/* Must match DJ_MAX_TENSORS / DJ_MAX_SCALARS in src/kernels/common.cuh. */
#define DNNJIT__MAX_KERNEL_TENSORS 24
#define DNNJIT__MAX_KERNEL_SCALARS 8
/* Tensor maps a kernel takes after its DjArgs (the sm_90 engine's A in tiles of one row
 * class with TMA stores: A's eight, B's and the output's eight), and the most dimensions one
 * has (TMA's). */
#define DNNJIT__MAX_KERNEL_TMAS 17
#define DNNJIT__MAX_TMA_RANK 5

/* How execute encodes one TMA tensor map (cuTensorMapEncodeTiled) for a kernel: over the
 * memory at DjArgs.ptr[slot] + offset bytes (in a tensor's buffer, or a part of the kernel's
 * scratch), with dims and box innermost first. The map depends on the buffer's
 * address, so it is made at execute time and passed as the kernel's
 * `const __grid_constant__` parameter after DjArgs, in the order of the kernel's list. */
typedef struct dnnjit__tma_operand {
    int slot;
    uint64_t offset;
    int dtype;   /* CUtensorMapDataType */
    int rank;    /* 2 .. DNNJIT__MAX_TMA_RANK */
    uint64_t dims[DNNJIT__MAX_TMA_RANK];        /* elements */
    uint64_t strides[DNNJIT__MAX_TMA_RANK - 1]; /* bytes, of dims 1 .. rank-1 */
    uint32_t box[DNNJIT__MAX_TMA_RANK];         /* elements */
    int swizzle; /* CUtensorMapSwizzle */
} dnnjit__tma_operand_t;

/* The CUtensorMap enumeration values the engines use. */
enum {
    DNNJIT__TMA_DTYPE_UINT8 = 0, /* fp8 operands, copied as bytes */
    DNNJIT__TMA_DTYPE_FLOAT16 = 6,
    DNNJIT__TMA_DTYPE_BFLOAT16 = 9,
    DNNJIT__TMA_DTYPE_TFLOAT32 = 11, /* fp32 operands, rounded to TF32 as TMA loads them */
    DNNJIT__TMA_SWIZZLE_NONE = 0,
    DNNJIT__TMA_SWIZZLE_128B = 3,
};

struct dnnjit__kernel;

/* Whether `t` is a tensor map cuTensorMapEncodeTiled accepts for kernel k: over one of its
 * tensor slots or within its scratch, with box and strides within TMA's limits,
 * 16-byte strides and offset, and a box row that fits its swizzle span; when not, `why`
 * says which rule it breaks. */
bool dnnjit__tma_operand_valid(const dnnjit__tma_operand_t *t, const struct dnnjit__kernel *k, char *why,
                               size_t why_size);

/* ptxas at -O2 instead of its default -O3, for the GEMM engines' kernels. Measured on
 * NVRTC 13 for sm_90a: the sm_90 engine's kernels come out instruction for instruction the
 * same (180 kernels: the 80 plans of 4096^3 bf16, 52 of 8x4096^3 bmm + bias + relu, the
 * first six of the fp8, linear-layer, seed, unaligned and fp32 GEMMs) in about three
 * quarters of the compile time on the machine that builds this repository (4096^3's
 * 128x256 kernel: 260 ms against 348), though both levels took the same on the H200's host
 * (212-242 ms); the sm_80 engine's main loops the same or a few instructions shorter
 * (128x256x32: 152 instead of 157 per K tile on the fast path; 128x256x64: 253 instead of
 * 255) in about 0.6 of the time. -O1 compiles faster still but, on the H200, ran the exact
 * fp32 plan (three TF32 products, 64x128x32) at 4096^3 5.5% slower and 128x128x64 bf16 2%
 * slower, and the sm_90 engine's linear layers 3-7% slower. */
#define DNNJIT__PTXAS_O2 "--ptxas-options=-O2"

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
     * DjArgs.ptr[scratch_slot]; execute zeroes its first scratch_zero_bytes before the
     * launch, with dj_zero_scratch (src/kernels/zero_scratch.cuh), which the plan appends
     * to the kernel's source. */
    int scratch_slot;
    int64_t scratch_bytes, scratch_zero_bytes;
    /* TMA tensor maps the kernel takes as parameters after DjArgs. */
    int tma_count;
    dnnjit__tma_operand_t tma[DNNJIT__MAX_KERNEL_TMAS];
    /* One extra NVRTC option the kernel is compiled with (a string literal), or NULL:
     * DNNJIT__PTXAS_O2 for the GEMM engines. */
    const char *compile_option;
    /* Launched cooperatively: every block resident at once (the driver refuses a grid that
     * cannot be), as a kernel that waits on a grid-wide barrier needs. */
    bool cooperative;
    /* A grid sized to the device at load time: when resident_cluster is set, the grid's
     * first grid[0] - resident_tail blocks are clusters of resident_cluster blocks, and
     * loading keeps only as many of them as the device holds at once (the kernel learns how
     * many from gridDim), then the resident_tail blocks. 0: the grid is launched as is. */
    unsigned resident_cluster, resident_tail;
} dnnjit__kernel_t;

/* The graph and group an engine's functions receive are the group's canonical restatement
 * (engine/canonical.h): its nodes and the tensors they touch, renumbered, and nothing else
 * of the graph (supports() alone is also asked, on the graph itself, to word a refusal).
 * What they return is remembered per structure, so they must depend on nothing else
 * either. plan.c maps the ids in a kernel's tensors[] and scalars[] back to
 * the graph's (dnnjit__canonical_unmap); a new kernel field holding tensor ids needs the
 * same. */
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
    /* Mode A: optional; true when the knob should rank after the next engine's knobs (a
     * problem too small for this engine to pay, say) instead of before them. */
    bool (*defer)(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob);
    /* Mode FALLBACK: optional; the engine's simplest knob for a group the fallback engine
     * refuses (a row op fused with pointwise nodes, which the fallback engine would run
     * without them), or -1 with `why` (if non-NULL) saying why it cannot serve either. */
    int (*fallback_knob)(dnnjit_graph_t g, const dnnjit__group_t *grp, const char *arch, char *why,
                         size_t why_size);
    /* Optional: DNNJIT_BEHAVIOR_NOTE_* bits the knob adds to a plan's notes. */
    uint32_t (*notes)(int knob);
    dnnjit_status_t (*generate)(dnnjit_graph_t g, const dnnjit__partition_t *p, const dnnjit__group_t *grp,
                                int knob, dnnjit__kernel_t *out);
} dnnjit__engine_t;

void dnnjit__kernel_free(dnnjit__kernel_t *k);

/* Whether mode A ranks the gemm engine's skinny plans (gemm.c: a linear layer on at most 16
 * tokens) before every tiled GEMM plan, so that the sm_90 engine defers its own for the
 * group. */
bool dnnjit__gemm_skinny_first(dnnjit_graph_t g, const dnnjit__group_t *grp);

/* The NVRTC options a build compiles kernel k with (its one extra option), filled in
 * *storage, or NULL when it has none. */
struct dnnjit__compile_options;
const struct dnnjit__compile_options *dnnjit__kernel_options(const dnnjit__kernel_t *k,
                                                             struct dnnjit__compile_options *storage);

/* The number of an architecture's name, e.g. 90 for "sm_90a"; 0 for anything else. */
int dnnjit__arch_number(const char *arch);

/* Tensor i of a group: its inputs first, then its outputs. */
dnnjit_tensor_t dnnjit__group_tensor(const dnnjit__group_t *grp, int64_t i);

/* Gives every tensor the group touches an argument slot (inputs, then outputs);
 * pass-by-value tensors with a fixed value become literals and need none. False when they
 * do not fit in a kernel's arguments. */
bool dnnjit__kernel_assign_slots(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit__kernel_t *k);

/* The index of `id` in `list` (a kernel's tensors or scalars), or -1. */
int dnnjit__slot_of(const dnnjit_tensor_t *list, int n, dnnjit_tensor_t id);

#endif
