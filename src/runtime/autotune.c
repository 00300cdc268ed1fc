/* Autotuning: every built plan is timed on the caller's buffers and stream, and the
 * fastest becomes the chosen plan. The choice is remembered in a small file of the disk
 * cache folder, keyed by the graph and the device, so that later builds of the same graph
 * on the same device (in this process or another) start from it. As with the kernel
 * cache, disk trouble never fails anything: a choice that cannot be written or read is
 * simply not remembered. */
#define _POSIX_C_SOURCE 200809L

#include "runtime/runtime.h"

#include "common/strbuf.h"
#include "engine/plan.h"

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Executes before timing (first-launch costs, clocks ramping up), then `repeats` batches
 * of BATCH back-to-back executes between two events; a plan's time is the median batch.
 * DNNJIT_AUTOTUNE_REPEATS sets the number of batches (1 to REPEATS_MAX): under a tool that
 * slows every launch a thousandfold (compute-sanitizer's racecheck) one batch is enough. */
#define WARMUP 3
#define BATCH 10
#define REPEATS_DEFAULT 7
#define REPEATS_MAX 1000

/* ---- remembered choices ----------------------------------------------------------- */

/* A record is one line: "dnnjit-autotune 1 <key> <XXH64 of the plan name> <plan name>\n",
 * the key and checksum in lower-case hex. */
#define RECORD_MAGIC "dnnjit-autotune 1 "
#define RECORD_MAX 4096

/* The cache folder, or false when the disk cache is off or has none; a lookup that finds
 * nothing must not leave a message behind, so this thread's last error is kept. */
static bool cache_folder(char root[PATH_MAX])
{
    char saved[DNNJIT__MSG_LEN];
    snprintf(saved, sizeof saved, "%s", dnnjit_last_error());
    if (dnnjit__jit_cache_dir(root, PATH_MAX) == DNNJIT_STATUS_SUCCESS)
        return true;
    dnnjit__set_thread_error(saved);
    return false;
}

/* The folder of the records in the cache folder `root`. */
static bool record_folder(const char *root, char folder[PATH_MAX])
{
    int n = snprintf(folder, PATH_MAX, "%s/" DNNJIT__AUTOTUNE_FOLDER, root);
    return n > 0 && n < PATH_MAX;
}

/* The record file in `folder` for the graph on its handle's device, and its key: XXH3-128
 * over the graph's JSON, the architecture, the device's name and the dnnjit version (none
 * of them holds a NUL, so NUL-separated they cannot run into each other). */
static bool record_file(dnnjit_graph_t g, const char *folder, char file[PATH_MAX], char hex[DNNJIT__KEY_HEX_LEN])
{
    char *json = NULL;
    char saved[DNNJIT__MSG_LEN];
    snprintf(saved, sizeof saved, "%s", dnnjit_last_error());
    if (dnnjit_graph_to_json(g, &json)) {
        dnnjit__set_thread_error(saved);
        return false;
    }
    char version[16];
    snprintf(version, sizeof version, "%d", DNNJIT_VERSION);
    const char *parts[] = {"dnnjit autotune key 1", version, g->handle->arch, g->handle->device_name, json};
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        XXH3_128bits_update(&st, parts[i], strlen(parts[i]) + 1);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    dnnjit_free(json);
    dnnjit__jit_key_hex((dnnjit__jit_key_t){.low = h.low64, .high = h.high64}, hex);
    int n = snprintf(file, PATH_MAX, "%s/%s.plan", folder, hex);
    return n > 0 && n < PATH_MAX;
}

/* The plan name a record holds, or false when it is not a whole, undamaged record of
 * this key. */
static bool parse_record(const char *text, size_t len, const char *hex, char *name, size_t name_size)
{
    size_t head = strlen(RECORD_MAGIC), key_len = DNNJIT__KEY_HEX_LEN - 1;
    const char *p = text + head;
    if (len < head + key_len + 1 + 16 + 1 + 2 || text[len - 1] != '\n' || memchr(text, '\n', len - 1) ||
        memcmp(text, RECORD_MAGIC, head) != 0 || memcmp(p, hex, key_len) != 0 || p[key_len] != ' ' ||
        p[key_len + 17] != ' ')
        return false;
    const char *plan = p + key_len + 18;
    size_t n = (size_t)(text + len - 1 - plan);
    char sum[17];
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)XXH64(plan, n, 0));
    if (n >= name_size || memcmp(p + key_len + 1, sum, 16) != 0)
        return false;
    memcpy(name, plan, n);
    name[n] = '\0';
    return true;
}

int64_t dnnjit__autotune_remembered(dnnjit_graph_t g)
{
    char root[PATH_MAX], folder[PATH_MAX], file[PATH_MAX], hex[DNNJIT__KEY_HEX_LEN];
    struct stat st;
    /* Most graphs were never tuned where they are built; one stat tells, before the key
     * (which needs the graph's JSON) is computed. */
    if (!g->jit || g->jit->plan_count < 2 || !g->handle || !cache_folder(root) || !record_folder(root, folder) ||
        stat(folder, &st) != 0 || !record_file(g, folder, file, hex))
        return -1;
    /* Opened as the kernel cache opens its files, so that a FIFO where the record belongs
     * cannot hang the build: it is discarded instead. */
    const char *why;
    int fd = dnnjit__open_cache_file(file, &why);
    FILE *fp = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!fp) {
        if (fd >= 0)
            close(fd);
        if (why)
            dnnjit__log("autotune: discarded %s: %s", file, why);
        return -1;
    }
    char text[RECORD_MAX], name[RECORD_MAX];
    size_t len = fread(text, 1, sizeof text, fp);
    fclose(fp);
    if (len == sizeof text || !parse_record(text, len, hex, name, sizeof name)) {
        dnnjit__log("autotune: ignored the damaged record %s", file);
        return -1;
    }
    for (int64_t i = 0; i < g->jit->plan_count; i++) {
        char *plan = NULL;
        bool same = dnnjit_graph_get_plan_name(g, i, &plan) == DNNJIT_STATUS_SUCCESS && strcmp(plan, name) == 0;
        dnnjit_free(plan);
        if (same)
            return i;
    }
    return -1;
}

bool dnnjit__autotune_remember(dnnjit_graph_t g, int64_t index)
{
    char root[PATH_MAX], folder[PATH_MAX], file[PATH_MAX], hex[DNNJIT__KEY_HEX_LEN];
    char *name = NULL;
    if (!cache_folder(root) || !record_folder(root, folder) || !record_file(g, folder, file, hex) ||
        dnnjit_graph_get_plan_name(g, index, &name))
        return false;
    dnnjit__strbuf_t record = {0};
    dnnjit__sb_printf(&record, RECORD_MAGIC "%s %016llx %s\n", hex, (unsigned long long)XXH64(name, strlen(name), 0),
                      name);
    bool ok = !record.failed && dnnjit__write_file_atomic(folder, file, record.data, record.len, NULL, 0);
    if (!ok)
        dnnjit__log("autotune: cannot remember the choice in %s (%s)", file,
                    record.failed ? "out of memory" : strerror(errno));
    dnnjit__sb_free(&record);
    dnnjit_free(name);
    return ok;
}

/* ---- timing ----------------------------------------------------------------------------- */

static int by_value(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

typedef struct timing {
    const dnnjit_variant_t *pack;
    size_t n;
    void *workspace;
    dnnjit__cu_stream_t stream;
    dnnjit__cu_event_t start, stop;
    int repeats;
} timing_t;

/* The number of timed batches: DNNJIT_AUTOTUNE_REPEATS when set, else REPEATS_DEFAULT. */
static dnnjit_status_t timed_batches(dnnjit_graph_t g, int *repeats)
{
    const char *v = getenv("DNNJIT_AUTOTUNE_REPEATS");
    *repeats = REPEATS_DEFAULT;
    if (!v || !*v)
        return DNNJIT_STATUS_SUCCESS;
    long n;
    if (!dnnjit__whole_number(v, 1, REPEATS_MAX, &n))
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM,
                            "autotune: graph \"%s\": DNNJIT_AUTOTUNE_REPEATS=\"%s\" is not a whole number from 1 to %d", g->name, v, REPEATS_MAX);
    *repeats = (int)n;
    return DNNJIT_STATUS_SUCCESS;
}

/* The median time of a batch of the graph's chosen plan, in milliseconds. */
static dnnjit_status_t time_chosen(dnnjit_graph_t g, const timing_t *t, float *ms)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    float samples[REPEATS_MAX];
    dnnjit_status_t s = DNNJIT_STATUS_SUCCESS;
    for (int i = 0; i < WARMUP && !s; i++)
        s = dnnjit_graph_execute(g, t->pack, t->n, t->workspace, t->stream);
    for (int r = 0; r < t->repeats && !s; r++) {
        s = dnnjit__cu_check(cu->cuEventRecord(t->start, t->stream), "cuEventRecord");
        for (int i = 0; i < BATCH && !s; i++)
            s = dnnjit_graph_execute(g, t->pack, t->n, t->workspace, t->stream);
        if (!s)
            s = dnnjit__cu_check(cu->cuEventRecord(t->stop, t->stream), "cuEventRecord");
        if (!s)
            s = dnnjit__cu_check(cu->cuEventSynchronize(t->stop), "cuEventSynchronize");
        if (!s)
            s = dnnjit__cu_check(cu->cuEventElapsedTime(&samples[r], t->start, t->stop), "cuEventElapsedTime");
    }
    if (!s) {
        qsort(samples, (size_t)t->repeats, sizeof *samples, by_value);
        *ms = samples[t->repeats / 2];
    }
    return s;
}

/* The name of plan i for a log line ("?" when out of memory); free with dnnjit_free. */
static char *plan_name(dnnjit_graph_t g, int64_t i)
{
    char *name = NULL;
    dnnjit_graph_get_plan_name(g, i, &name);
    return name;
}

/* Times every built plan that fits the caller's workspace and chooses the fastest; on
 * failure the choice is left as it was. The workspace is only known to be as large as
 * get_workspace_size said when autotune was called (the plan then chosen, or the
 * intermediates alone), so plans that need more (larger split-K scratch) are not run.
 * A plan whose execute refuses the buffers (BAD_PARAM: a TMA kernel given an address that
 * is not 16-byte aligned, say) is passed over too, as other plans may take them; when every
 * plan refuses them, the first refusal is the error. */
static dnnjit_status_t time_plans(dnnjit_graph_t g, timing_t *t, int64_t workspace_size)
{
    int64_t before = g->jit->chosen, best = -1;
    float best_ms = 0;
    char refusal[DNNJIT__MSG_LEN] = "";
    dnnjit_status_t s = DNNJIT_STATUS_SUCCESS;
    for (int64_t i = 0; i < g->jit->plan_count && !s; i++) {
        float ms = 0;
        if (!g->jit->plans[i].built)
            continue;
        g->jit->chosen = i;
        if (dnnjit__workspace_size(g->jit, NULL) > workspace_size) {
            dnnjit__log("autotune: graph \"%s\" plan %lld needs %lld workspace bytes, more than the %lld given; "
                        "not timed", g->name, (long long)i, (long long)dnnjit__workspace_size(g->jit, NULL),
                        (long long)workspace_size);
            continue;
        }
        s = time_chosen(g, t, &ms);
        if (s == DNNJIT_STATUS_BAD_PARAM) {
            char *name = plan_name(g, i);
            dnnjit__log("autotune: graph \"%s\" plan %lld (%s) refuses these buffers; not timed: %s", g->name,
                        (long long)i, name ? name : "?", dnnjit_last_error());
            if (!*refusal)
                snprintf(refusal, sizeof refusal, "plan %lld (%s): %s", (long long)i, name ? name : "?",
                         dnnjit_last_error());
            dnnjit_free(name);
            s = DNNJIT_STATUS_SUCCESS;
            continue;
        }
        if (!s && (best < 0 || ms < best_ms)) {
            best = i;
            best_ms = ms;
        }
        if (!s) {
            char *name = plan_name(g, i);
            dnnjit__log("autotune: graph \"%s\" plan %lld (%s): %.2f us per call", g->name, (long long)i,
                        name ? name : "?", 1e3 * ms / BATCH);
            dnnjit_free(name);
        }
    }
    if (!s && best < 0 && *refusal)
        s = dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "no built plan that fits in %lld workspace bytes takes these "
                         "buffers; %s", (long long)workspace_size, refusal);
    else if (!s && best < 0)
        s = dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "no built plan fits in %lld workspace bytes",
                         (long long)workspace_size);
    g->jit->chosen = s ? before : best;
    return s;
}

dnnjit_status_t dnnjit_graph_autotune(dnnjit_graph_t g, const dnnjit_variant_t *pack, size_t n, void *workspace,
                                      void *stream)
{
    if (!g)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_autotune: graph is NULL");
    if (!g->jit || !g->jit->plan_count)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE,
                            "autotune: graph \"%s\" has no execution plans (call create_execution_plans or build first)",
                            g->name);
    int repeats;
    dnnjit_status_t s = timed_batches(g, &repeats);
    if (s)
        return s;
    if (!g->handle || !g->handle->has_device)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE, "autotune: no GPU to time graph \"%s\" on: %s", g->name,
                            g->handle ? g->handle->no_device_reason : "the graph has no handle");
    int64_t built = 0, workspace_size = dnnjit__workspace_size(g->jit, NULL);
    for (int64_t i = 0; i < g->jit->plan_count; i++)
        built += g->jit->plans[i].built;
    s = built < 2 ? dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_ALL) : DNNJIT_STATUS_SUCCESS;
    if (s)
        return s;
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    timing_t t = {pack, n, workspace, (dnnjit__cu_stream_t)stream, NULL, NULL, repeats};
    s = dnnjit__cu_check(cu->cuEventCreate(&t.start, 0), "cuEventCreate");
    if (!s)
        s = dnnjit__cu_check(cu->cuEventCreate(&t.stop, 0), "cuEventCreate");
    if (!s)
        s = time_plans(g, &t, workspace_size);
    if (t.start)
        cu->cuEventDestroy(t.start);
    if (t.stop)
        cu->cuEventDestroy(t.stop);
    if (s) {
        char cause[DNNJIT__MSG_LEN];
        snprintf(cause, sizeof cause, "%s", dnnjit_last_error());
        return dnnjit__fail(g, s, "autotune: graph \"%s\": %s", g->name, cause);
    }
    dnnjit__autotune_remember(g, g->jit->chosen);
    return DNNJIT_STATUS_SUCCESS;
}
