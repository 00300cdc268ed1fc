/* libFuzzer target: bytes -> dnnjit_graph_deserialize, and every graph that loads through
 * fuzz_exercise. Built only when dnnjit.h declares the blob loader (fuzz/CMakeLists.txt);
 * its seeds are real blobs made by blob-seeds. */
#include "fuzz.h"

#include <xxhash.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/* The header of docs/serialize.md: the total length at byte 16 and the XXH3-64 of every
 * byte after the 32-byte header at byte 24, both little-endian. */
#define HEADER_SIZE 32

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Nearly every mutation would only break the checksum, which the loader checks before
 * anything else. So three mutations in four get the header's length and checksum made
 * right again, and the fields behind them are fuzzed too. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    size = LLVMFuzzerMutate(data, size, max_size);
    if (size >= HEADER_SIZE && seed % 4) {
        put_u64(data + 16, size);
        put_u64(data + 24, XXH3_64bits(data + HEADER_SIZE, size - HEADER_SIZE));
    }
    return size;
}

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
