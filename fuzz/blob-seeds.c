/* Writes seeds for fuzz-blob, so that they always have the blob format of the library they
 * fuzz: the graph JSON files named after the output folder and the seed count are taken in
 * order, each loaded, built for sm_90a (NVRTC, no GPU needed) and serialized to
 * <folder>/<file name>.blob, until COUNT seeds are written. Files that do not load or build
 * are skipped (the JSON corpus holds many invalid graphs on purpose). Built with fuzz-blob;
 * scripts/fuzz runs it.
 *   blob-seeds FOLDER COUNT GRAPH.json... */
#include "dnnjit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1)) != NULL) {
        if (fread(text, 1, (size_t)size, f) == (size_t)size) {
            text[size] = '\0';
        } else {
            free(text);
            text = NULL;
        }
    }
    fclose(f);
    return text;
}

/* Loads, builds and serializes one graph; false (with the reason on stderr) when it cannot. */
static bool write_seed(dnnjit_handle_t handle, const char *json_path, const char *folder)
{
    char *text = read_text(json_path);
    dnnjit_graph_t g = NULL;
    void *blob = NULL;
    size_t size = 0;
    const dnnjit_heur_mode_t mode = DNNJIT_HEUR_MODE_A;
    bool ok = text && dnnjit_graph_from_json(handle, text, &g) == DNNJIT_STATUS_SUCCESS &&
              dnnjit_graph_build(g, &mode, 1) == DNNJIT_STATUS_SUCCESS &&
              dnnjit_graph_serialize(g, &blob, &size) == DNNJIT_STATUS_SUCCESS;
    if (ok) {
        const char *base = strrchr(json_path, '/');
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.blob", folder, base ? base + 1 : json_path);
        FILE *f = fopen(path, "wb");
        ok = f && fwrite(blob, 1, size, f) == size;
        if (f && fclose(f) != 0)
            ok = false;
    }
    if (!ok)
        fprintf(stderr, "blob-seeds: %s: skipped: %s\n", json_path, text ? dnnjit_last_error() : "cannot read it");
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
    free(text);
    return ok;
}

int main(int argc, char **argv)
{
    char *end = NULL;
    long count = argc >= 4 ? strtol(argv[2], &end, 10) : 0;
    if (argc < 4 || *end != '\0' || count < 1) {
        fprintf(stderr, "usage: blob-seeds FOLDER COUNT GRAPH.json...\n");
        return 2;
    }
    dnnjit_handle_t handle;
    if (dnnjit_handle_create_for_arch("sm_90a", &handle) != DNNJIT_STATUS_SUCCESS) {
        fprintf(stderr, "blob-seeds: %s\n", dnnjit_last_error());
        return 1;
    }
    int written = 0, tried = 0;
    for (int i = 3; i < argc && written < count; i++, tried++)
        written += write_seed(handle, argv[i], argv[1]);
    dnnjit_handle_destroy(handle);
    printf("blob-seeds: %d seeds from %d graphs written to %s\n", written, tried, argv[1]);
    return written > 0 ? 0 : 1;
}
