/* The handle as the JIT stages see it. */
#ifndef DNNJIT_RUNTIME_RUNTIME_H
#define DNNJIT_RUNTIME_RUNTIME_H

#include "graph/graph.h"
#include "jit/jit.h"

struct dnnjit_handle {
    char arch[DNNJIT__ARCH_LEN]; /* "" when there is no device and none was named */
    bool has_device;
    /* DNNJIT__LAUNCH_DEPENDENT where the device is sm_90 or later (see execute), else 0:
     * decided once here rather than from `arch` at every execute. */
    unsigned launch_flags;
    char device_name[256]; /* the device's name when there is one (it keys autotune choices), else "" */
    char no_device_reason[512]; /* why execute is impossible, when it is */
};

/* The plan dnnjit_graph_autotune remembered for this graph on its handle's device, as an
 * index into the graph's plan list; -1 when there is none (or it is unreadable, damaged,
 * or names no plan of the list). Never fails and leaves no message. */
int64_t dnnjit__autotune_remembered(dnnjit_graph_t g);

/* Remembers plan `index` as the choice for this graph on its handle's device. False when
 * it could not be written (the disk cache is off, or the folder is unusable). */
bool dnnjit__autotune_remember(dnnjit_graph_t g, int64_t index);

#endif
