#include "engine/engine.h"

#include "jit/jit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void dnnjit__kernel_free(dnnjit__kernel_t *k)
{
    free(k->source);
    *k = (dnnjit__kernel_t){0};
}

const dnnjit__compile_options_t *dnnjit__kernel_options(const dnnjit__kernel_t *k, dnnjit__compile_options_t *storage)
{
    *storage = (dnnjit__compile_options_t){.extra = &k->compile_option, .extra_count = 1};
    return k->compile_option ? storage : NULL;
}

int dnnjit__arch_number(const char *arch)
{
    int v = 0;
    return arch && sscanf(arch, "sm_%d", &v) == 1 ? v : 0;
}

dnnjit_tensor_t dnnjit__group_tensor(const dnnjit__group_t *grp, int64_t i)
{
    return i < grp->input_count ? grp->inputs[i] : grp->outputs[i - grp->input_count];
}

int dnnjit__slot_of(const dnnjit_tensor_t *list, int n, dnnjit_tensor_t id)
{
    for (int i = 0; i < n; i++)
        if (list[i] == id)
            return i;
    return -1;
}

bool dnnjit__kernel_assign_slots(dnnjit_graph_t g, const dnnjit__group_t *grp, dnnjit__kernel_t *k)
{
    for (int64_t i = 0; i < grp->input_count + grp->output_count; i++) {
        dnnjit_tensor_t id = dnnjit__group_tensor(grp, i);
        const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
        if (t->is_pass_by_value && t->has_value)
            continue;
        if (t->is_pass_by_value) {
            if (k->scalar_count == DNNJIT__MAX_KERNEL_SCALARS)
                return false;
            k->scalars[k->scalar_count++] = id;
        } else {
            if (k->tensor_count == DNNJIT__MAX_KERNEL_TENSORS)
                return false;
            k->tensors[k->tensor_count++] = id;
        }
    }
    return true;
}

bool dnnjit__tma_operand_valid(const dnnjit__tma_operand_t *t, const dnnjit__kernel_t *k, char *why,
                               size_t why_size)
{
    const char *rule = NULL;
    /* Only the types and the two swizzles the engines use are accepted, so that a map read
     * back from a blob can be no stranger than one an engine makes. */
    const uint64_t esize = t->dtype == DNNJIT__TMA_DTYPE_UINT8 ? 1 : t->dtype == DNNJIT__TMA_DTYPE_TFLOAT32 ? 4 : 2;
    bool scratch = k->scratch_bytes > 0 && t->slot == k->scratch_slot;
    if ((t->slot < 0 || t->slot >= k->tensor_count) && !scratch)
        rule = "its slot is neither one of the kernel's tensors nor its scratch";
    else if (t->offset % 16)
        rule = "its offset is not a multiple of 16 bytes";
    else if (t->dtype != DNNJIT__TMA_DTYPE_FLOAT16 && t->dtype != DNNJIT__TMA_DTYPE_BFLOAT16 &&
             t->dtype != DNNJIT__TMA_DTYPE_UINT8 && t->dtype != DNNJIT__TMA_DTYPE_TFLOAT32)
        rule = "its data type is not UINT8, FLOAT16, BFLOAT16 or TFLOAT32";
    else if (t->swizzle != DNNJIT__TMA_SWIZZLE_NONE && t->swizzle != DNNJIT__TMA_SWIZZLE_128B)
        rule = "its swizzle is not NONE or 128B";
    else if (t->rank < 1 || t->rank > DNNJIT__MAX_TMA_RANK)
        rule = "its rank is not 1 to 5";
    /* The bytes from the map's start to its last element, in the scratch. */
    uint64_t span = esize;
    for (int d = 0; !rule && d < t->rank; d++) {
        if (t->dims[d] < 1 || t->dims[d] > (uint64_t)1 << 32)
            rule = "a dimension is not 1 to 2^32 elements";
        else if (t->box[d] < 1 || t->box[d] > 256)
            rule = "a box dimension is not 1 to 256 elements";
        else if (d > 0 && (t->strides[d - 1] % 16 || t->strides[d - 1] >= (uint64_t)1 << 40))
            rule = "a stride is not a multiple of 16 bytes below 2^40";
        else {
            /* Up to 2^32 elements 2^40 bytes apart: the product can pass 2^64. */
            uint64_t term;
            if (__builtin_mul_overflow(t->dims[d] - 1, d ? t->strides[d - 1] : esize, &term) ||
                __builtin_add_overflow(span, term, &span))
                span = UINT64_MAX;
        }
    }
    if (!rule && t->box[0] * esize % 16)
        rule = "the box's inner extent is not a multiple of 16 bytes";
    else if (!rule && t->swizzle == DNNJIT__TMA_SWIZZLE_128B && t->box[0] * esize > 128)
        rule = "the box's inner extent exceeds the 128-byte swizzle span";
    else if (!rule && scratch && (t->offset > (uint64_t)k->scratch_bytes || span > (uint64_t)k->scratch_bytes - t->offset))
        rule = "it reaches past the kernel's scratch";
    if (rule && why)
        snprintf(why, why_size, "%s", rule);
    return !rule;
}
