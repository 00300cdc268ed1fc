#include "engine/engine.h"

#include <stdlib.h>

void dnnjit__kernel_free(dnnjit__kernel_t *k)
{
    free(k->source);
    *k = (dnnjit__kernel_t){0};
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
