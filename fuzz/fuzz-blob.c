/* libFuzzer target: bytes -> dnnjit_graph_deserialize, and every graph that loads through
 * fuzz_exercise. Built only when dnnjit.h declares the blob loader (fuzz/CMakeLists.txt). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dnnjit_graph_t g = NULL;
    dnnjit_status_t s = dnnjit_graph_deserialize(fuzz_handle(), data, size, &g);
    if (s != DNNJIT_STATUS_SUCCESS) {
        fuzz_require(g == NULL, "a failed load hands back no graph");
        fuzz_require(*dnnjit_last_error() != '\0', "a failed load says why");
        return 0;
    }
    fuzz_exercise(g);
    dnnjit_graph_destroy(g);
    return 0;
}
