/* The handle as the JIT stages see it. */
#ifndef DNNJIT_RUNTIME_RUNTIME_H
#define DNNJIT_RUNTIME_RUNTIME_H

#include "graph/graph.h"
#include "jit/jit.h"

struct dnnjit_handle {
    char arch[DNNJIT__ARCH_LEN]; /* "" when there is no device and none was named */
    bool has_device;
    char device_name[256]; /* the device's name when there is one (it keys autotune choices), else "" */
    char no_device_reason[512]; /* why execute is impossible, when it is */
};

#endif
