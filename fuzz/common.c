/* The checks shared by the fuzz targets (see fuzz.h). */
#include "fuzz.h"

#include "layout.h"

#include <xxhash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep one execution fast: the reference executor runs only graphs whose every
 * tensor has at most this many elements, and whose buffers together stay this small. */
#define MAX_REFERENCE_ELEMENTS 1024
#define MAX_REFERENCE_BYTES (1 << 20)

void fuzz_require(bool ok, const char *what)
{
    if (ok)
        return;
    fprintf(stderr, "dnnjit fuzz: broken promise: %s (last error: %s)\n", what, dnnjit_last_error());
    abort();
}

dnnjit_handle_t fuzz_handle(void)
{
    static dnnjit_handle_t handle;
    if (!handle)
        fuzz_require(dnnjit_handle_create_for_arch("sm_90a", &handle) == DNNJIT_STATUS_SUCCESS,
                     "a handle for sm_90a can be made");
    return handle;
}

/* Writes text to $DNNJIT_FUZZ_DUMP/<hash>.json when that folder is named: this is how the
 * generated part of the JSON seed corpus is made (docs/reliability.md). */
static void dump_json(const char *text)
{
    const char *dir = getenv("DNNJIT_FUZZ_DUMP");
    if (!dir || !*dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%016llx.json", dir, (unsigned long long)XXH64(text, strlen(text), 0));
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A validated graph must write, load back and write the same text again. */
static void check_round_trip(dnnjit_graph_t g)
{
    char *first = NULL, *second = NULL;
    dnnjit_status_t s = dnnjit_graph_to_json(g, &first);
    /* Names that are not UTF-8 cannot be written; nothing else may stop a valid graph. */
    fuzz_require(s == DNNJIT_STATUS_SUCCESS || s == DNNJIT_STATUS_NOT_SUPPORTED, "a validated graph writes as JSON");
    if (s)
        return;
    dump_json(first);
    dnnjit_graph_t again = NULL;
    fuzz_require(dnnjit_graph_from_json(fuzz_handle(), first, &again) == DNNJIT_STATUS_SUCCESS,
                 "the JSON of a validated graph loads");
    fuzz_require(dnnjit_graph_to_json(again, &second) == DNNJIT_STATUS_SUCCESS, "a loaded graph writes again");
    fuzz_require(strcmp(first, second) == 0, "writing a loaded graph gives the text it was loaded from");
    dnnjit_free(first);
    dnnjit_free(second);
    dnnjit_graph_destroy(again);
}

/* Runs the reference executor when the graph is small, with every buffer filled. */
static void run_reference(dnnjit_graph_t g)
{
    int64_t count = 0;
    fuzz_require(dnnjit_graph_get_tensor_count(g, &count) == DNNJIT_STATUS_SUCCESS, "a graph counts its tensors");
    dnnjit_variant_t *pack = calloc((size_t)count + 1, sizeof *pack);
    fuzz_require(pack != NULL, "memory for the variant pack");
    size_t n = 0, bytes = 0;
    bool small = true;
    for (dnnjit_tensor_t id = 1; id <= count && small; id++) {
        dnnjit_tensor_info_t info;
        fuzz_require(dnnjit_tensor_get_info(g, id, &info) == DNNJIT_STATUS_SUCCESS, "every tensor id has info");
        int64_t span = layout_span(&info);
        small = layout_numel(&info) <= MAX_REFERENCE_ELEMENTS && span <= MAX_REFERENCE_ELEMENTS;
        if (!small || info.is_virtual || info.has_value)
            continue;
        size_t size = dnnjit_data_type_size(info.data_type) * (size_t)span;
        bytes += size;
        small = bytes <= MAX_REFERENCE_BYTES;
        void *buffer = small ? malloc(size) : NULL;
        if (!buffer)
            continue;
        /* Values in [-2, 2) that reach zero, negatives and non-integers. */
        for (int64_t i = 0; i < span; i++)
            dnnjit_element_store(info.data_type, buffer, i, (double)((i * 7 + id) % 16) / 4 - 2);
        pack[n++] = (dnnjit_variant_t){info.uid, buffer};
    }
    if (small) {
        dnnjit_status_t s = dnnjit_graph_execute_reference(g, pack, n);
        fuzz_require(s == DNNJIT_STATUS_SUCCESS || s == DNNJIT_STATUS_OUT_OF_MEMORY,
                     "the reference executor runs a validated graph given every buffer");
    }
    for (size_t i = 0; i < n; i++)
        free(pack[i].ptr);
    free(pack);
}

/* Lists the plans of every heuristic mode and generates each one's source. */
static void generate_plans(dnnjit_graph_t g)
{
    static const dnnjit_heur_mode_t modes[] = {DNNJIT_HEUR_MODE_A, DNNJIT_HEUR_MODE_B, DNNJIT_HEUR_MODE_FALLBACK};
    dnnjit_status_t s = dnnjit_graph_create_execution_plans(g, modes, 3);
    fuzz_require(s == DNNJIT_STATUS_SUCCESS || s == DNNJIT_STATUS_NOT_SUPPORTED,
                 "a validated graph has plans or a reason why not");
    int64_t plans = 0;
    fuzz_require(dnnjit_graph_get_plan_count(g, &plans) == DNNJIT_STATUS_SUCCESS, "a built graph counts its plans");
    fuzz_require(s == DNNJIT_STATUS_SUCCESS ? plans > 0 : plans == 0, "plans exist exactly when planning succeeds");
    for (int64_t i = 0; i < plans; i++) {
        char *name = NULL, *source = NULL;
        fuzz_require(dnnjit_graph_get_plan_name(g, i, &name) == DNNJIT_STATUS_SUCCESS && name && *name,
                     "every plan has a name");
        s = dnnjit_graph_get_plan_source(g, i, &source);
        fuzz_require(s == DNNJIT_STATUS_SUCCESS && source && strstr(source, "__global__"),
                     "every plan an engine accepted generates a kernel's source");
        dnnjit_free(name);
        dnnjit_free(source);
    }
}

void fuzz_exercise(dnnjit_graph_t g)
{
    dnnjit_status_t s = dnnjit_graph_validate(g);
    fuzz_require(s == DNNJIT_STATUS_SUCCESS || *dnnjit_last_error(), "a failure comes with a message");
    if (s)
        return;
    check_round_trip(g);
    run_reference(g);
    generate_plans(g);
}
