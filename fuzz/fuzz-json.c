/* libFuzzer target: JSON text -> dnnjit_graph_from_json, and every graph that loads
 * through fuzz_exercise (validation, write and reload, reference run, plans). */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The loader reads a C string: the input up to its first NUL. */
    char *text = malloc(size + 1);
    fuzz_require(text != NULL, "memory for the input");
    memcpy(text, data, size);
    text[size] = '\0';
    dnnjit_graph_t g = (dnnjit_graph_t)&g; /* any non-NULL value: a failure must reset it */
    dnnjit_status_t s = dnnjit_graph_from_json(fuzz_handle(), text, &g);
    free(text);
    if (s != DNNJIT_STATUS_SUCCESS) {
        fuzz_require(g == NULL, "a failed load leaves *out NULL");
        fuzz_require(*dnnjit_last_error() != '\0', "a failed load says why");
        return 0;
    }
    fuzz_exercise(g);
    dnnjit_graph_destroy(g);
    return 0;
}
