/* Walking a strided tensor and making random data, shared by the CLI, its GPU runner and
 * the tests. */
#ifndef DNNJIT_TOOLS_LAYOUT_H
#define DNNJIT_TOOLS_LAYOUT_H

#include "dnnjit.h"

/* Elements of the tensor; elements its storage spans (largest offset + 1). */
int64_t layout_numel(const dnnjit_tensor_info_t *t);
int64_t layout_span(const dnnjit_tensor_info_t *t);
/* The storage offset of the element with row-major index `linear`. */
int64_t layout_offset(const dnnjit_tensor_info_t *t, int64_t linear);
/* The next number of a xorshift generator, uniform in [0, 1). *rng must not be 0. */
double layout_uniform(uint64_t *rng);

#endif
