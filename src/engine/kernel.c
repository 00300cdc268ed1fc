#include "engine/engine.h"

#include <stdlib.h>

void dnnjit__kernel_free(dnnjit__kernel_t *k)
{
    free(k->source);
    *k = (dnnjit__kernel_t){0};
}
