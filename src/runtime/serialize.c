/* Serialized graphs: a built graph's JSON, its chosen plan and the CUBIN of every kernel in
 * one blob, and the way back to a graph that executes without NVRTC. The layout is in
 * docs/serialize.md. A blob is untrusted input: its length and checksum are checked
 * first, then every field before it is used, and everything it names must exist in the
 * graph its JSON rebuilds. */
#include "runtime/runtime.h"

#include "engine/plan.h"

#include <xxhash.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOB_MAGIC "DNNJITGR"
/* Format 5: a kernel's launch shape has the cluster size and tail blocks of a grid that
 * loading fits to the device (dnnjit__kernel_t's resident_cluster), after its cooperative
 * flag. Format 4 had kernels for sm_90 and later begin with dj_grid_dependency, which
 * execute's dependent launches rely on; a format-3 blob's CUBINs lack it. */
#define BLOB_FORMAT 5u
#define HEADER_SIZE 32

/* Bounds far above anything dnnjit writes; a field beyond one is damage. */
#define MAX_TEXT ((uint64_t)1 << 30)   /* graph JSON, kernel source, CUBIN */
#define MAX_PLAN_NAME ((uint64_t)1 << 20)
#define MAX_ENGINE_NAME 64u
#define MAX_SHARED_BYTES (1u << 20)    /* above every GPU's shared memory per block */
#define MAX_BLOCK_THREADS 1024u
#define MAX_CLUSTER 16u                /* blocks a cluster may have (16 on sm_90, non-portable) */
#define MAX_SCRATCH_BYTES ((uint64_t)1 << 40)

/* ---- writing ------------------------------------------------------------------------ */

/* Writes fields at `p`, or only counts their bytes while `p` is NULL, so that one pass
 * measures the blob and a second fills it. */
typedef struct writer {
    unsigned char *p;
    size_t len;
} writer_t;

static void put(writer_t *w, const void *data, size_t n)
{
    if (w->p && n)
        memcpy(w->p + w->len, data, n);
    w->len += n;
}

static void put_u32(writer_t *w, uint32_t v)
{
    unsigned char b[4];
    dnnjit__put_u32(b, v);
    put(w, b, sizeof b);
}

static void put_u64(writer_t *w, uint64_t v)
{
    unsigned char b[8];
    dnnjit__put_u64(b, v);
    put(w, b, sizeof b);
}

static void put_bytes(writer_t *w, const void *data, size_t n)
{
    put_u64(w, n);
    put(w, data, n);
}

static void put_string(writer_t *w, const char *s)
{
    put_bytes(w, s, strlen(s));
}

static void put_uids(writer_t *w, dnnjit_graph_t g, const dnnjit_tensor_t *ids, int count)
{
    put_u32(w, (uint32_t)count);
    for (int i = 0; i < count; i++)
        put_u64(w, (uint64_t)dnnjit__tensor(g, ids[i])->uid);
}

/* A kernel's TMA tensor maps: a count, then each map's fields. */
static void put_tma(writer_t *w, const dnnjit__kernel_t *k)
{
    put_u32(w, (uint32_t)k->tma_count);
    for (int i = 0; i < k->tma_count; i++) {
        const dnnjit__tma_operand_t *t = &k->tma[i];
        put_u32(w, (uint32_t)t->slot);
        put_u64(w, t->offset);
        put_u32(w, (uint32_t)t->dtype);
        put_u32(w, (uint32_t)t->rank);
        put_u32(w, (uint32_t)t->swizzle);
        for (int d = 0; d < DNNJIT__MAX_TMA_RANK; d++)
            put_u64(w, t->dims[d]);
        for (int d = 0; d < DNNJIT__MAX_TMA_RANK - 1; d++)
            put_u64(w, t->strides[d]);
        for (int d = 0; d < DNNJIT__MAX_TMA_RANK; d++)
            put_u32(w, t->box[d]);
    }
}

/* Everything after the header. */
static void write_body(writer_t *w, dnnjit_graph_t g, const char *arch, const char *json, const char *plan_name)
{
    const dnnjit__jit_state_t *s = g->jit;
    const dnnjit__plan_t *plan = &s->plans[s->chosen];
    int64_t groups = s->partition.group_count;
    put_u32(w, DNNJIT_VERSION);
    put_string(w, arch);
    put_string(w, json);
    put_string(w, plan_name);
    put_u64(w, (uint64_t)dnnjit__workspace_size(s, NULL));
    put_u32(w, (uint32_t)groups);
    for (int64_t i = 0; i < groups; i++) {
        put_string(w, plan->choices[i].engine->name);
        put_u32(w, (uint32_t)plan->choices[i].knob);
    }
    for (int64_t i = 0; i < groups; i++) {
        const dnnjit__built_kernel_t *b = &plan->kernels[i];
        const dnnjit__kernel_t *k = &b->kernel;
        put_string(w, k->entry);
        for (int d = 0; d < 3; d++)
            put_u32(w, k->grid[d]);
        for (int d = 0; d < 3; d++)
            put_u32(w, k->block[d]);
        put_u32(w, k->shared_bytes);
        put_u32(w, k->cooperative);
        put_u32(w, k->resident_cluster);
        put_u32(w, k->resident_tail);
        put_u32(w, (uint32_t)k->scratch_slot);
        put_u64(w, (uint64_t)k->scratch_bytes);
        put_u64(w, (uint64_t)k->scratch_zero_bytes);
        put_uids(w, g, k->tensors, k->tensor_count);
        put_uids(w, g, k->scalars, k->scalar_count);
        put_tma(w, k);
        put_string(w, k->source);
        put_bytes(w, b->cubin, b->cubin_size);
    }
}

dnnjit_status_t dnnjit_graph_serialize(dnnjit_graph_t g, void **blob, size_t *size)
{
    if (!g || !blob || !size)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_serialize: %s is NULL",
                            !g ? "graph" : !blob ? "blob" : "size");
    *blob = NULL;
    *size = 0;
    if (!g->jit || g->jit->chosen < 0)
        return dnnjit__fail(g, DNNJIT_STATUS_BAD_STATE, "serialize: graph \"%s\" has no built plan (call build first)",
                            g->name);
    char arch[DNNJIT__ARCH_LEN];
    dnnjit_status_t s = dnnjit_handle_get_arch(g->handle, arch, sizeof arch, NULL);
    char *json = NULL, *plan_name = NULL;
    if (!s)
        s = dnnjit_graph_to_json(g, &json);
    if (!s)
        s = dnnjit_graph_get_plan_name(g, g->jit->chosen, &plan_name);
    writer_t w = {NULL, HEADER_SIZE};
    if (!s) {
        write_body(&w, g, arch, json, plan_name);
        w = (writer_t){malloc(w.len), HEADER_SIZE};
        if (!w.p)
            s = dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "serialize: out of memory");
    }
    if (!s) {
        write_body(&w, g, arch, json, plan_name);
        memcpy(w.p, BLOB_MAGIC, 8);
        dnnjit__put_u32(w.p + 8, BLOB_FORMAT);
        dnnjit__put_u32(w.p + 12, 0);
        dnnjit__put_u64(w.p + 16, w.len);
        dnnjit__put_u64(w.p + 24, XXH3_64bits(w.p + HEADER_SIZE, w.len - HEADER_SIZE));
        *blob = w.p;
        *size = w.len;
    }
    dnnjit_free(json);
    dnnjit_free(plan_name);
    return s;
}

/* ---- reading ------------------------------------------------------------------------ */

/* A cursor over the blob. The first failure sticks in `status`, so that a run of reads is
 * checked once; every read after it returns zeros. */
typedef struct reader {
    const unsigned char *p;
    size_t len, pos;
    dnnjit_status_t status;
} reader_t;

static dnnjit_status_t bad(reader_t *r, dnnjit_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static dnnjit_status_t bad(reader_t *r, dnnjit_status_t status, const char *fmt, ...)
{
    if (r->status)
        return r->status;
    char text[DNNJIT__MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return r->status = dnnjit__fail(NULL, status, "deserialize: %s", text);
}

static bool need(reader_t *r, uint64_t n, const char *what)
{
    if (r->status)
        return false;
    if (n > r->len - r->pos) {
        bad(r, DNNJIT_STATUS_PARSE_ERROR, "the blob ends inside %s (at byte %zu, %llu bytes needed, %zu left)", what,
            r->pos, (unsigned long long)n, r->len - r->pos);
        return false;
    }
    return true;
}

static uint32_t get_u32(reader_t *r, const char *what)
{
    if (!need(r, 4, what))
        return 0;
    r->pos += 4;
    return dnnjit__get_u32(r->p + r->pos - 4);
}

static uint64_t get_u64(reader_t *r, const char *what)
{
    if (!need(r, 8, what))
        return 0;
    r->pos += 8;
    return dnnjit__get_u64(r->p + r->pos - 8);
}

/* A length-prefixed byte field of at most `max` bytes; points into the blob. */
static const unsigned char *get_bytes(reader_t *r, const char *what, uint64_t max, size_t *n)
{
    uint64_t len = get_u64(r, what);
    *n = 0;
    if (r->status)
        return NULL;
    if (len > max) {
        bad(r, DNNJIT_STATUS_PARSE_ERROR, "%s is %llu bytes long, more than the %llu allowed", what,
            (unsigned long long)len, (unsigned long long)max);
        return NULL;
    }
    if (!need(r, len, what))
        return NULL;
    r->pos += (size_t)len;
    *n = (size_t)len;
    return r->p + r->pos - len;
}

/* A text field (no NUL byte inside) as a malloc'd C string, or NULL after a failure. */
static char *get_string(reader_t *r, const char *what, uint64_t max)
{
    size_t n;
    const unsigned char *bytes = get_bytes(r, what, max, &n);
    if (!bytes)
        return NULL;
    if (memchr(bytes, '\0', n)) {
        bad(r, DNNJIT_STATUS_PARSE_ERROR, "%s holds a NUL byte", what);
        return NULL;
    }
    char *s = malloc(n + 1);
    if (!s) {
        bad(r, DNNJIT_STATUS_OUT_OF_MEMORY, "no memory for %s (%zu bytes)", what, n);
        return NULL;
    }
    memcpy(s, bytes, n);
    s[n] = '\0';
    return s;
}

/* Checks the header: magic, format, length and checksum. */
static dnnjit_status_t check_header(reader_t *r)
{
    if (r->len < HEADER_SIZE)
        return bad(r, DNNJIT_STATUS_PARSE_ERROR, "%zu bytes are too few for a serialized graph (its header alone has %d)",
                   r->len, HEADER_SIZE);
    if (memcmp(r->p, BLOB_MAGIC, 8) != 0)
        return bad(r, DNNJIT_STATUS_PARSE_ERROR, "not a serialized dnnjit graph (the magic is not \"" BLOB_MAGIC "\")");
    uint32_t format = dnnjit__get_u32(r->p + 8);
    if (format != BLOB_FORMAT)
        return bad(r, DNNJIT_STATUS_NOT_SUPPORTED, "the blob has format %u; this dnnjit (%s) reads format %u", format,
                   dnnjit_version_string(), BLOB_FORMAT);
    uint64_t total = dnnjit__get_u64(r->p + 16);
    if (dnnjit__get_u32(r->p + 12) != 0 || total != r->len)
        return bad(r, DNNJIT_STATUS_PARSE_ERROR, "the header says %llu bytes (reserved field %u) but %zu were given "
                   "(truncated, extended or damaged)", (unsigned long long)total, dnnjit__get_u32(r->p + 12), r->len);
    if (XXH3_64bits(r->p + HEADER_SIZE, r->len - HEADER_SIZE) != dnnjit__get_u64(r->p + 24))
        return bad(r, DNNJIT_STATUS_PARSE_ERROR, "checksum mismatch: the blob is damaged");
    r->pos = HEADER_SIZE;
    return DNNJIT_STATUS_SUCCESS;
}

/* The dnnjit version and architecture the blob was made by and for, against this library
 * and the handle's. */
static dnnjit_status_t check_target(reader_t *r, const char *arch)
{
    uint32_t version = get_u32(r, "the dnnjit version");
    char *blob_arch = get_string(r, "the architecture", DNNJIT__ARCH_LEN - 1);
    if (r->status)
        return r->status;
    if (version != DNNJIT_VERSION)
        bad(r, DNNJIT_STATUS_NOT_SUPPORTED, "the blob was made by dnnjit %u.%u.%u, this is %s (kernels are only "
            "exchanged between equal versions)", version / 10000, version / 100 % 100, version % 100,
            dnnjit_version_string());
    else if (!dnnjit__arch_is_valid(blob_arch))
        bad(r, DNNJIT_STATUS_PARSE_ERROR, "the blob's architecture \"%s\" is not one", blob_arch);
    else if (strcmp(blob_arch, arch) != 0)
        bad(r, DNNJIT_STATUS_NOT_SUPPORTED, "the blob's kernels were compiled for %s but the handle's architecture is %s",
            blob_arch, *arch ? arch : "none (no GPU, and not made by dnnjit_handle_create_for_arch)");
    free(blob_arch);
    return r->status;
}

/* Rebuilds and partitions the graph from the blob's JSON. */
static dnnjit_status_t read_graph(reader_t *r, dnnjit_handle_t handle, dnnjit_graph_t *g)
{
    char *json = get_string(r, "the graph JSON", MAX_TEXT);
    if (!json)
        return r->status;
    dnnjit_status_t s = dnnjit_graph_from_json(handle, json, g);
    free(json);
    if (!s)
        s = dnnjit_graph_build_operation_graph(*g);
    if (s) {
        char cause[DNNJIT__MSG_LEN];
        snprintf(cause, sizeof cause, "%s", dnnjit_last_error());
        bad(r, s, "the blob's graph: %s", cause);
    }
    return r->status;
}

static const dnnjit__engine_t *engine_named(const char *name)
{
    for (const dnnjit__engine_t *const *e = dnnjit__engines; *e; e++)
        if (strcmp((*e)->name, name) == 0)
            return *e;
    return NULL;
}

/* The per-group choices: each names an engine that exists and, with its knob, runs the
 * group on this architecture. */
static dnnjit_status_t read_choices(reader_t *r, dnnjit_graph_t g, const char *arch, dnnjit__plan_t *plan)
{
    const dnnjit__partition_t *p = &g->jit->partition;
    for (int64_t i = 0; i < p->group_count && !r->status; i++) {
        const dnnjit__group_t *grp = &p->groups[i];
        const dnnjit__node_t *anchor = &g->nodes[grp->first_node];
        char what[80];
        snprintf(what, sizeof what, "group %lld's engine", (long long)i);
        char *name = get_string(r, what, MAX_ENGINE_NAME);
        uint32_t knob = get_u32(r, "a knob");
        if (r->status) {
            free(name);
            break;
        }
        const dnnjit__engine_t *e = engine_named(name);
        char why[256] = "no such knob";
        if (!e)
            bad(r, DNNJIT_STATUS_PARSE_ERROR, "group %lld (%s \"%s\") names engine \"%s\", which does not exist",
                (long long)i, dnnjit__op_label(anchor->op), anchor->name, name);
        else if (knob >= (uint32_t)e->knob_count || !e->supports(g, grp, (int)knob, arch, why, sizeof why))
            bad(r, DNNJIT_STATUS_PARSE_ERROR, "group %lld (%s \"%s\"): engine \"%s\" with knob %u cannot run it (%s)",
                (long long)i, dnnjit__op_label(anchor->op), anchor->name, name, knob, why);
        else
            plan->choices[i] = (dnnjit__plan_choice_t){e, (int)knob};
        free(name);
    }
    return r->status;
}

static bool is_identifier(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

/* A slot table: a count, then that many uids, each of a tensor execute can give an
 * address (for tensors) or a value (for scalars) without anything the graph lacks. */
static int read_slots(reader_t *r, dnnjit_graph_t g, int64_t kernel, bool scalars, dnnjit_tensor_t *ids, int max)
{
    const char *kind = scalars ? "scalar" : "tensor";
    uint32_t count = get_u32(r, scalars ? "a scalar count" : "a tensor count");
    if (!r->status && count > (uint32_t)max)
        bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld has %u %s slots, more than the %d a kernel takes",
            (long long)kernel, count, kind, max);
    for (uint32_t i = 0; i < count && !r->status; i++) {
        int64_t uid = (int64_t)get_u64(r, "a slot uid");
        dnnjit_tensor_t id = 0;
        if (r->status)
            break;
        if (dnnjit_graph_find_tensor_by_uid(g, uid, &id)) {
            bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld's %s slot %u has uid %lld, which no tensor of the graph has",
                (long long)kernel, kind, i, (long long)uid);
            break;
        }
        const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
        bool in_memory = !t->is_virtual || g->jit->partition.workspace_offset[id - 1] >= 0;
        bool usable = scalars ? t->is_pass_by_value && !t->has_value : !t->is_pass_by_value && in_memory;
        if (!usable)
            bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld's %s slot %u is tensor \"%s\", which %s", (long long)kernel,
                kind, i, t->name,
                scalars ? "is not a pass-by-value tensor without a fixed value"
                        : "has no memory (a scalar, or a virtual tensor outside the workspace)");
        ids[i] = id;
    }
    return r->status ? 0 : (int)count;
}

/* A kernel's TMA tensor maps, each one cuTensorMapEncodeTiled accepts over one of the
 * kernel's tensor slots. */
static dnnjit_status_t read_tma(reader_t *r, int64_t i, dnnjit__kernel_t *k)
{
    uint32_t count = get_u32(r, "the tensor map count");
    if (!r->status && count > DNNJIT__MAX_KERNEL_TMAS)
        return bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld (%s) has %u tensor maps, more than the %d a kernel takes",
                   (long long)i, k->entry, count, DNNJIT__MAX_KERNEL_TMAS);
    for (uint32_t m = 0; m < count && !r->status; m++) {
        dnnjit__tma_operand_t *t = &k->tma[m];
        t->slot = (int)get_u32(r, "a tensor map's slot");
        t->offset = get_u64(r, "a tensor map's offset");
        t->dtype = (int)get_u32(r, "a tensor map's data type");
        t->rank = (int)get_u32(r, "a tensor map's rank");
        t->swizzle = (int)get_u32(r, "a tensor map's swizzle");
        for (int d = 0; d < DNNJIT__MAX_TMA_RANK; d++)
            t->dims[d] = get_u64(r, "a tensor map's dimensions");
        for (int d = 0; d < DNNJIT__MAX_TMA_RANK - 1; d++)
            t->strides[d] = get_u64(r, "a tensor map's strides");
        for (int d = 0; d < DNNJIT__MAX_TMA_RANK; d++)
            t->box[d] = get_u32(r, "a tensor map's box");
        char why[120];
        if (!r->status && !dnnjit__tma_operand_valid(t, k, why, sizeof why))
            bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld (%s): tensor map %u is impossible: %s", (long long)i,
                k->entry, m, why);
    }
    k->tma_count = r->status ? 0 : (int)count;
    return r->status;
}

static bool same_tma(const dnnjit__kernel_t *a, const dnnjit__kernel_t *b)
{
    if (a->tma_count != b->tma_count)
        return false;
    for (int i = 0; i < a->tma_count; i++) {
        const dnnjit__tma_operand_t *x = &a->tma[i], *y = &b->tma[i];
        if (x->slot != y->slot || x->offset != y->offset || x->dtype != y->dtype || x->rank != y->rank || x->swizzle != y->swizzle ||
            memcmp(x->dims, y->dims, sizeof x->dims) != 0 || memcmp(x->strides, y->strides, sizeof x->strides) != 0 ||
            memcmp(x->box, y->box, sizeof x->box) != 0)
            return false;
    }
    return true;
}

/* One kernel: entry point, launch shape, slot tables, tensor maps, source and CUBIN. */
static dnnjit_status_t read_kernel(reader_t *r, dnnjit_graph_t g, int64_t i, dnnjit__built_kernel_t *b)
{
    dnnjit__kernel_t *k = &b->kernel;
    char what[80];
    snprintf(what, sizeof what, "kernel %lld's entry name", (long long)i);
    char *entry = get_string(r, what, sizeof k->entry - 1);
    if (entry && !is_identifier(entry))
        bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld's entry name \"%s\" is not an identifier", (long long)i, entry);
    if (entry && !r->status)
        memcpy(k->entry, entry, strlen(entry) + 1);
    free(entry);
    uint64_t threads = 1;
    for (int d = 0; d < 3; d++)
        k->grid[d] = get_u32(r, "the grid");
    for (int d = 0; d < 3; d++)
        threads *= (k->block[d] = get_u32(r, "the block"));
    k->shared_bytes = get_u32(r, "the shared memory size");
    uint32_t cooperative = get_u32(r, "the cooperative flag");
    uint32_t cluster = get_u32(r, "the resident cluster size"), tail = get_u32(r, "the blocks after the clusters");
    uint32_t scratch_slot = get_u32(r, "the scratch slot");
    uint64_t scratch = get_u64(r, "the scratch size"), zeroed = get_u64(r, "the scratch size to zero");
    if (r->status)
        return r->status;
    if (!k->grid[0] || !k->grid[1] || !k->grid[2] || !threads || threads > MAX_BLOCK_THREADS ||
        k->shared_bytes > MAX_SHARED_BYTES || cooperative > 1)
        return bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld (%s): launch shape grid (%u, %u, %u), block (%u, %u, %u), "
                   "%u shared bytes, cooperative flag %u is impossible", (long long)i, k->entry, k->grid[0], k->grid[1],
                   k->grid[2], k->block[0], k->block[1], k->block[2], k->shared_bytes, cooperative);
    k->cooperative = cooperative;
    /* Loading keeps the clusters that fit and then the tail (fitted_grid in plan.c). */
    if (cluster > MAX_CLUSTER || (cluster && (tail >= k->grid[0] || (k->grid[0] - tail) % cluster)))
        return bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld (%s): a grid of %u blocks as clusters of %u then %u blocks "
                   "is impossible", (long long)i, k->entry, k->grid[0], cluster, tail);
    k->resident_cluster = cluster;
    k->resident_tail = tail;
    k->tensor_count = read_slots(r, g, i, false, k->tensors, DNNJIT__MAX_KERNEL_TENSORS);
    k->scalar_count = read_slots(r, g, i, true, k->scalars, DNNJIT__MAX_KERNEL_SCALARS);
    /* Execute writes the scratch address into DjArgs.ptr[scratch_slot] and zeroes the first
     * bytes in 4-byte words: the slot must follow the tensor slots inside the array. */
    if (!r->status && (scratch > MAX_SCRATCH_BYTES || zeroed > scratch || zeroed % 4 ||
                       (scratch && (scratch_slot < (uint32_t)k->tensor_count ||
                                    scratch_slot >= DNNJIT__MAX_KERNEL_TENSORS))))
        return bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld (%s): scratch of %llu bytes (%llu zeroed) in slot %u after "
                   "%d tensor slots is impossible", (long long)i, k->entry, (unsigned long long)scratch,
                   (unsigned long long)zeroed, scratch_slot, k->tensor_count);
    k->scratch_slot = (int)scratch_slot;
    k->scratch_bytes = (int64_t)scratch;
    k->scratch_zero_bytes = (int64_t)zeroed;
    if (read_tma(r, i, k))
        return r->status;
    snprintf(what, sizeof what, "kernel %lld's source", (long long)i);
    k->source = get_string(r, what, MAX_TEXT);
    snprintf(what, sizeof what, "kernel %lld's CUBIN", (long long)i);
    size_t n;
    const unsigned char *cubin = get_bytes(r, what, MAX_TEXT, &n);
    if (cubin && (n < 4 || memcmp(cubin, "\x7f" "ELF", 4) != 0))
        return bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld (%s): the CUBIN is not an ELF image", (long long)i,
                   k->entry);
    if (cubin && !(b->cubin = malloc(n)))
        return bad(r, DNNJIT_STATUS_OUT_OF_MEMORY, "no memory for kernel %lld's %zu-byte CUBIN", (long long)i, n);
    if (cubin) {
        memcpy(b->cubin, cubin, n);
        b->cubin_size = n;
    }
    return r->status;
}

/* The kernel must be described as its choice generates it for the rebuilt graph: the same
 * entry, launch shape and slots, so that execute launches it as a build would. Generating
 * is text work; it needs neither NVRTC nor a GPU. The source text itself is not compared:
 * it names variables after tensor ids, which a graph read back from JSON numbers in
 * another order. */
static dnnjit_status_t check_generated(reader_t *r, dnnjit_graph_t g, int64_t i, const dnnjit__plan_choice_t *c,
                                       const dnnjit__kernel_t *k)
{
    const dnnjit__partition_t *p = &g->jit->partition;
    dnnjit__kernel_t want = {0};
    dnnjit_status_t s = c->engine->generate(g, p, &p->groups[i], c->knob, &want);
    if (s) {
        char cause[DNNJIT__MSG_LEN];
        snprintf(cause, sizeof cause, "%s", dnnjit_last_error());
        return bad(r, s, "kernel %lld (%s): engine \"%s\" cannot generate it for the blob's graph: %s", (long long)i,
                   k->entry, c->engine->name, cause);
    }
    const char *differs =
        strcmp(want.entry, k->entry) != 0 ? "entry name"
        : memcmp(want.grid, k->grid, sizeof want.grid) != 0 || memcmp(want.block, k->block, sizeof want.block) != 0 ||
                want.shared_bytes != k->shared_bytes || want.cooperative != k->cooperative ||
                want.resident_cluster != k->resident_cluster || want.resident_tail != k->resident_tail
            ? "launch shape"
        : want.scratch_slot != k->scratch_slot || want.scratch_bytes != k->scratch_bytes ||
                want.scratch_zero_bytes != k->scratch_zero_bytes
            ? "scratch"
        : want.tensor_count != k->tensor_count || want.scalar_count != k->scalar_count ||
                memcmp(want.tensors, k->tensors, sizeof *k->tensors * (size_t)k->tensor_count) != 0 ||
                memcmp(want.scalars, k->scalars, sizeof *k->scalars * (size_t)k->scalar_count) != 0
            ? "slot table"
        : !same_tma(&want, k) ? "tensor map list"
                              : NULL;
    if (differs)
        bad(r, DNNJIT_STATUS_PARSE_ERROR, "kernel %lld (%s): its %s is not what engine \"%s\" generates for the blob's "
            "graph (the graph and the kernels do not belong together)", (long long)i, k->entry, differs,
            c->engine->name);
    dnnjit__kernel_free(&want);
    return r->status;
}

/* Loads every kernel on the device. The CUBINs enter the kernel cache under content keys
 * (never under source keys, and never on disk), whose entries own the loaded modules as
 * they do for built plans. */
static dnnjit_status_t load_kernels(dnnjit_graph_t g, const char *arch, dnnjit__plan_t *plan)
{
    dnnjit_status_t s = DNNJIT_STATUS_SUCCESS;
    for (int64_t i = 0; i < g->jit->partition.group_count && !s; i++) {
        dnnjit__built_kernel_t *b = &plan->kernels[i];
        dnnjit__jit_key_t key = dnnjit__jit_cubin_key(b->cubin, b->cubin_size, b->kernel.entry, arch);
        s = dnnjit__jit_cache_insert(key, b->cubin, b->cubin_size);
        if (!s)
            s = dnnjit__plan_load_kernel(b, key);
    }
    return s;
}

/* Reads the plan into the partitioned graph as its only, built and chosen plan. */
static dnnjit_status_t read_plan(reader_t *r, dnnjit_graph_t g, const char *arch, const char *plan_name,
                                 uint64_t workspace, uint32_t groups)
{
    dnnjit__jit_state_t *s = g->jit;
    if (groups != (uint64_t)s->partition.group_count)
        return bad(r, DNNJIT_STATUS_PARSE_ERROR, "the blob's plan has %u groups but its graph partitions into %lld",
                   groups, (long long)s->partition.group_count);
    /* Owned by the graph from here on, so that destroying it frees what was read so far. */
    if (!(s->plans = calloc(1, sizeof *s->plans)))
        return bad(r, DNNJIT_STATUS_OUT_OF_MEMORY, "out of memory");
    s->plan_count = 1;
    dnnjit__plan_t *plan = &s->plans[0];
    plan->choices = calloc(groups ? groups : 1, sizeof *plan->choices);
    plan->kernels = calloc(groups ? groups : 1, sizeof *plan->kernels);
    if (!plan->choices || !plan->kernels)
        return bad(r, DNNJIT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (read_choices(r, g, arch, plan))
        return r->status;
    char *name = NULL;
    if (dnnjit_graph_get_plan_name(g, 0, &name))
        return bad(r, DNNJIT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (strcmp(name, plan_name) != 0)
        bad(r, DNNJIT_STATUS_PARSE_ERROR, "the blob names its plan \"%s\" but its choices make \"%s\"", plan_name, name);
    dnnjit_free(name);
    for (int64_t i = 0; i < s->partition.group_count && !r->status; i++)
        if (!read_kernel(r, g, i, &plan->kernels[i]))
            check_generated(r, g, i, &plan->choices[i], &plan->kernels[i].kernel);
    if (!r->status && r->pos != r->len)
        bad(r, DNNJIT_STATUS_PARSE_ERROR, "%zu stray bytes follow the last kernel", r->len - r->pos);
    if (r->status)
        return r->status;
    /* The workspace holds the partition's intermediates and the chosen plan's scratch. */
    s->chosen = 0;
    if (workspace != (uint64_t)dnnjit__workspace_size(s, NULL))
        bad(r, DNNJIT_STATUS_PARSE_ERROR, "the blob's plan needs %llu workspace bytes but its kernels on its graph need "
            "%lld", (unsigned long long)workspace, (long long)dnnjit__workspace_size(s, NULL));
    return r->status;
}

dnnjit_status_t dnnjit_graph_deserialize(dnnjit_handle_t handle, const void *blob, size_t size, dnnjit_graph_t *out)
{
    if (out)
        *out = NULL;
    if (!handle || !out || (!blob && size))
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "dnnjit_graph_deserialize: %s is NULL",
                            !handle ? "handle" : !out ? "out" : "blob");
    reader_t r = {blob, size, 0, DNNJIT_STATUS_SUCCESS};
    char arch[DNNJIT__ARCH_LEN];
    bool has_device = false;
    dnnjit_handle_get_arch(handle, arch, sizeof arch, &has_device);
    dnnjit_graph_t g = NULL;
    if (check_header(&r) || check_target(&r, arch) || read_graph(&r, handle, &g)) {
        dnnjit_graph_destroy(g);
        return r.status;
    }
    char *plan_name = get_string(&r, "the plan name", MAX_PLAN_NAME);
    uint64_t workspace = get_u64(&r, "the workspace size");
    uint32_t groups = get_u32(&r, "the group count");
    dnnjit_status_t s = r.status ? r.status : read_plan(&r, g, arch, plan_name, workspace, groups);
    free(plan_name);
    if (!s && has_device)
        s = load_kernels(g, arch, &g->jit->plans[0]);
    if (s) {
        dnnjit_graph_destroy(g);
        return s;
    }
    g->jit->plans[0].built = true;
    *out = g;
    return DNNJIT_STATUS_SUCCESS;
}
