/* Serialized graphs without a GPU: round trips on deviceless handles (seed 000, a pointwise
 * graph with a scalar, a two-kernel graph with a workspace), deserializing with NVRTC
 * absent, and blobs that are truncated, damaged or lie about their contents. The blob is
 * walked here by a reader written from docs/serialize.md, not from the library's code. */
#include "jit-test.h"
#include "util.h"

#include "engine/plan.h"

#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <xxhash.h>

static char cache_dir[PATH_MAX];
static dnnjit_handle_t sm90; /* deviceless handles; a fresh one reads what another wrote */

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(cache_dir, sizeof cache_dir, "%s/dnnjit-test-serialize-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(cache_dir))
        return -1;
    setenv("DNNJIT_CACHE_DIR", cache_dir, 1);
    unsetenv("DNNJIT_CACHE");
    return dnnjit_handle_create_for_arch("sm_90a", &sm90);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    (void)state;
    dnnjit_handle_destroy(sm90);
    dnnjit__jit_cache_clear_memory();
    return nftw(cache_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- graphs ---- */

/* Seed 000: C[b] = A[b] @ B[b], half in, float compute, B=4 M=64 K=128 N=64. */
static dnnjit_graph_t seed000(dnnjit_handle_t h)
{
    dnnjit_graph_t g = tu_graph_on(h, "jit_matmul_graph", DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(4, 64, 128), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(4, 128, 64), NULL, 0);
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    return g;
}

/* y = sigmoid(a * s + b) on 1000 halves, s a pass-by-value float (a scalar slot). */
static dnnjit_graph_t pointwise(dnnjit_handle_t h)
{
    dnnjit_graph_t g = tu_graph_on(h, "pointwise", DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "a", 1, TU_DIMS(1000), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", 1, TU_DIMS(1000), NULL, 0);
    dnnjit_tensor_t s, as, u, y;
    TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "s", .ndim = 1, .dim = TU_DIMS(1),
                                                         .data_type = DNNJIT_DATA_TYPE_FLOAT, .is_pass_by_value = true},
                              &s));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, a, s, 0, &as));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, as, b, 0, &u));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SIGMOID_FWD}, u, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    return g;
}

/* S = softmax(A @ B): two kernels, the product crossing them through the workspace. */
static dnnjit_graph_t two_kernels(dnnjit_handle_t h)
{
    dnnjit_graph_t g = tu_graph_on(h, "two_kernels", DNNJIT_DATA_TYPE_FLOAT, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(7, 33), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(33, 5), NULL, 0);
    dnnjit_tensor_t c, s;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_graph_softmax(g, c, NULL, &s, NULL, NULL));
    TU_OK(dnnjit_tensor_set_output(g, s, true));
    return g;
}

static const dnnjit_heur_mode_t mode_a = DNNJIT_HEUR_MODE_A;

static void *serialized(dnnjit_graph_t g, size_t *size)
{
    void *blob = NULL;
    TU_OK(dnnjit_graph_serialize(g, &blob, size));
    assert_non_null(blob);
    return blob;
}

/* ---- the documented layout, read independently ---- */

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
    return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void set32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void set64(unsigned char *p, uint64_t v)
{
    set32(p, (uint32_t)v);
    set32(p + 4, (uint32_t)(v >> 32));
}

#define MAX_GROUPS 4

/* Offsets of the fields (of byte fields: of their u64 length). */
typedef struct layout {
    size_t version, arch, json, plan_name, workspace, groups;
    uint32_t group_count;
    size_t engine[MAX_GROUPS], knob[MAX_GROUPS];
    size_t entry[MAX_GROUPS], grid[MAX_GROUPS], block[MAX_GROUPS], shared[MAX_GROUPS], cooperative[MAX_GROUPS],
        resident[MAX_GROUPS], scratch[MAX_GROUPS];
    size_t tensor_count[MAX_GROUPS], scalar_count[MAX_GROUPS], tma_count[MAX_GROUPS], source[MAX_GROUPS];
    size_t cubin[MAX_GROUPS];
    size_t end;
} layout_t;

static size_t skip_bytes(const unsigned char *p, size_t at)
{
    return at + 8 + (size_t)le64(p + at);
}

static layout_t walk(const unsigned char *p, size_t size)
{
    layout_t l = {0};
    assert_memory_equal(p, "DNNJITGR", 8);
    assert_int_equal(le32(p + 8), 5);
    assert_int_equal(le32(p + 12), 0);
    assert_int_equal(le64(p + 16), size);
    assert_true(le64(p + 24) == XXH3_64bits(p + 32, size - 32));
    l.version = 32;
    l.arch = 36;
    l.json = skip_bytes(p, l.arch);
    l.plan_name = skip_bytes(p, l.json);
    l.workspace = skip_bytes(p, l.plan_name);
    l.groups = l.workspace + 8;
    l.group_count = le32(p + l.groups);
    assert_true(l.group_count >= 1 && l.group_count <= MAX_GROUPS);
    size_t at = l.groups + 4;
    for (uint32_t i = 0; i < l.group_count; i++) {
        l.engine[i] = at;
        l.knob[i] = skip_bytes(p, at);
        at = l.knob[i] + 4;
    }
    for (uint32_t i = 0; i < l.group_count; i++) {
        l.entry[i] = at;
        l.grid[i] = skip_bytes(p, at);
        l.block[i] = l.grid[i] + 12;
        l.shared[i] = l.block[i] + 12;
        l.cooperative[i] = l.shared[i] + 4;
        l.resident[i] = l.cooperative[i] + 4;
        l.scratch[i] = l.resident[i] + 8;
        l.tensor_count[i] = l.scratch[i] + 4 + 8 + 8;
        l.scalar_count[i] = l.tensor_count[i] + 4 + 8 * (size_t)le32(p + l.tensor_count[i]);
        l.tma_count[i] = l.scalar_count[i] + 4 + 8 * (size_t)le32(p + l.scalar_count[i]);
        /* A tensor map: slot (u32), offset (u64), type, rank and swizzle (u32), 5 dims and
         * 4 strides (u64), a 5-element box (u32). */
        l.source[i] = l.tma_count[i] + 4 + (4 * 4 + 10 * 8 + 5 * 4) * (size_t)le32(p + l.tma_count[i]);
        l.cubin[i] = skip_bytes(p, l.source[i]);
        at = skip_bytes(p, l.cubin[i]);
    }
    l.end = at;
    assert_int_equal(l.end, size);
    return l;
}

/* A byte field's text, as a terminated copy. */
static char *field_text(const unsigned char *p, size_t at)
{
    size_t n = (size_t)le64(p + at);
    char *s = malloc(n + 1);
    memcpy(s, p + at + 8, n);
    s[n] = '\0';
    return s;
}

/* Makes the header agree with a changed body: its length and checksum. */
static void reseal(unsigned char *p, size_t size)
{
    set64(p + 16, size);
    set64(p + 24, XXH3_64bits(p + 32, size - 32));
}

static unsigned char *copy(const void *blob, size_t size, size_t extra)
{
    unsigned char *c = malloc(size + extra);
    memcpy(c, blob, size);
    return c;
}

/* Deserializing must fail with `status` and a message holding `fragment`, leaving no graph. */
static void refused(dnnjit_handle_t h, const void *blob, size_t size, dnnjit_status_t status, const char *fragment)
{
    dnnjit_graph_t g = (dnnjit_graph_t)1;
    TU_FAILS(dnnjit_graph_deserialize(h, blob, size, &g), status, fragment);
    assert_null(g);
}

/* ---- round trips ---- */

/* Builds `g` (the first plan of mode A whose name holds `plan`, or the heuristics' choice
 * when it is NULL), serializes it, rebuilds it on a fresh deviceless handle and compares
 * what the two graphs say about themselves; returns the blob. */
static unsigned char *round_trip(dnnjit_graph_t g, const char *plan, size_t *size)
{
    if (plan) {
        int64_t count, index = -1;
        TU_OK(dnnjit_graph_create_execution_plans(g, &mode_a, 1));
        TU_OK(dnnjit_graph_get_plan_count(g, &count));
        for (int64_t i = 0; i < count && index < 0; i++) {
            char *name;
            TU_OK(dnnjit_graph_get_plan_name(g, i, &name));
            index = strstr(name, plan) ? i : -1;
            dnnjit_free(name);
        }
        if (index < 0)
            fail_msg("no plan of mode A has \"%s\" in its name", plan);
        TU_OK(dnnjit_graph_build_plan_at_index(g, index));
    } else {
        TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    }
    unsigned char *blob = serialized(g, size);
    layout_t l = walk(blob, *size);
    dnnjit_handle_t fresh;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &fresh));
    dnnjit_graph_t back = NULL;
    TU_OK(dnnjit_graph_deserialize(fresh, blob, *size, &back));

    int64_t chosen, back_chosen, count, ws, back_ws;
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    TU_OK(dnnjit_graph_get_chosen_plan(back, &back_chosen));
    TU_OK(dnnjit_graph_get_plan_count(back, &count));
    assert_int_equal(back_chosen, 0);
    assert_int_equal(count, 1);
    char *name, *back_name, *source, *back_source, *json, *back_json;
    TU_OK(dnnjit_graph_get_plan_name(g, chosen, &name));
    TU_OK(dnnjit_graph_get_plan_name(back, 0, &back_name));
    assert_string_equal(name, back_name);
    char *blob_name = field_text(blob, l.plan_name);
    assert_string_equal(blob_name, name);
    TU_OK(dnnjit_graph_get_workspace_size(g, &ws));
    TU_OK(dnnjit_graph_get_workspace_size(back, &back_ws));
    assert_int_equal(ws, back_ws);
    assert_int_equal(le64(blob + l.workspace), (uint64_t)ws);
    TU_OK(dnnjit_graph_get_plan_source(g, chosen, &source));
    TU_OK(dnnjit_graph_get_plan_source(back, 0, &back_source));
    assert_string_equal(source, back_source);
    TU_OK(dnnjit_graph_to_json(g, &json));
    TU_OK(dnnjit_graph_to_json(back, &back_json));
    assert_string_equal(json, back_json);
    char *blob_json = field_text(blob, l.json);
    assert_string_equal(blob_json, json);

    /* The CUBINs are the compiled ones, byte for byte, one per group. */
    const dnnjit__plan_t *p = &g->jit->plans[chosen], *q = &back->jit->plans[0];
    assert_int_equal(l.group_count, g->jit->partition.group_count);
    for (uint32_t i = 0; i < l.group_count; i++) {
        assert_int_equal(p->kernels[i].cubin_size, q->kernels[i].cubin_size);
        assert_memory_equal(p->kernels[i].cubin, q->kernels[i].cubin, p->kernels[i].cubin_size);
        assert_int_equal(le64(blob + l.cubin[i]), p->kernels[i].cubin_size);
        assert_memory_equal(blob + l.cubin[i] + 8, p->kernels[i].cubin, p->kernels[i].cubin_size);
        char *entry = field_text(blob, l.entry[i]);
        assert_string_equal(entry, p->kernels[i].kernel.entry);
        jt_assert_cubin(q->kernels[i].cubin, q->kernels[i].cubin_size, entry);
        free(entry);
    }
    /* A deserialized graph serializes to the same bytes, and cannot run without a GPU (given
     * a workspace, so that the pack and workspace checks, which come first, pass). */
    static unsigned char workspace[1];
    size_t again_size;
    unsigned char *again = serialized(back, &again_size);
    assert_int_equal(again_size, *size);
    assert_memory_equal(again, blob, *size);
    TU_FAILS(dnnjit_graph_execute(back, NULL, 0, workspace, NULL), DNNJIT_STATUS_BAD_STATE, "without a device");

    dnnjit_free(again);
    free(blob_name);
    free(blob_json);
    dnnjit_free(name);
    dnnjit_free(back_name);
    dnnjit_free(source);
    dnnjit_free(back_source);
    dnnjit_free(json);
    dnnjit_free(back_json);
    dnnjit_graph_destroy(back);
    dnnjit_handle_destroy(fresh);
    return blob;
}

static void seed000_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = seed000(sm90);
    size_t size;
    unsigned char *blob = round_trip(g, NULL, &size);
    layout_t l = walk(blob, size);
    char *arch = field_text(blob, l.arch);
    assert_string_equal(arch, "sm_90a");
    assert_int_equal(le32(blob + l.version), DNNJIT_VERSION);
    /* One kernel reading A and B and writing C: three tensor slots, by uid. */
    assert_int_equal(l.group_count, 1);
    assert_int_equal(le32(blob + l.tensor_count[0]), 3);
    int64_t uid_c;
    TU_OK(dnnjit_tensor_get_uid(g, 3, &uid_c));
    bool has_c = false;
    for (uint32_t i = 0; i < 3; i++)
        has_c |= (int64_t)le64(blob + l.tensor_count[0] + 4 + 8 * i) == uid_c;
    assert_true(has_c);
    free(arch);
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
}

static void pointwise_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = pointwise(sm90);
    size_t size;
    unsigned char *blob = round_trip(g, NULL, &size);
    layout_t l = walk(blob, size);
    assert_int_equal(le32(blob + l.scalar_count[0]), 1);
    char *engine = field_text(blob, l.engine[0]);
    assert_string_equal(engine, "pointwise");
    free(engine);
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
}

/* A long-K product whose split-K plan keeps partial sums in a scratch workspace. */
static void split_k_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_graph_on(sm90, "split_k", DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(1, 64, 4096), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(1, 4096, 64), NULL, 0);
    dnnjit_tensor_t c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    size_t size;
    unsigned char *blob = round_trip(g, "_splitk", &size);
    layout_t l = walk(blob, size);
    const dnnjit__kernel_t *k = &g->jit->plans[g->jit->chosen].kernels[0].kernel;
    assert_true(k->scratch_bytes > 0 && k->scratch_zero_bytes > 0);
    assert_int_equal(le32(blob + l.scratch[0]), k->scratch_slot);
    assert_int_equal(le64(blob + l.scratch[0] + 4), k->scratch_bytes);
    assert_int_equal(le64(blob + l.scratch[0] + 12), k->scratch_zero_bytes);
    /* No intermediates: the workspace is the scratch alone. */
    assert_int_equal(le64(blob + l.workspace), k->scratch_bytes);
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
}

static void two_kernel_round_trip(void **state)
{
    (void)state;
    dnnjit_graph_t g = two_kernels(sm90);
    size_t size;
    unsigned char *blob = round_trip(g, NULL, &size);
    layout_t l = walk(blob, size);
    assert_int_equal(l.group_count, 2);
    /* The 7x5 float product sits in the workspace, rounded up to 256 bytes. */
    assert_int_equal(le64(blob + l.workspace), 256);
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
}

/* ---- NVRTC absent ---- */

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)n + 1);
    if (data && fread(data, 1, (size_t)n, fp) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(fp);
    *size = (size_t)n;
    return data;
}

/* In a fresh process whose NVRTC cannot load: the blob still becomes a built graph. */
static int child_without_nvrtc(const char *path)
{
    setenv("DNNJIT_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so", 1);
    size_t size;
    unsigned char *blob = slurp(path, &size);
    JT_CHILD_CHECK(blob, 2);
    dnnjit_handle_t h;
    JT_CHILD_CHECK(dnnjit_handle_create_for_arch("sm_90a", &h) == DNNJIT_STATUS_SUCCESS, 3);
    dnnjit_graph_t g = NULL;
    JT_CHILD_CHECK(dnnjit_graph_deserialize(h, blob, size, &g) == DNNJIT_STATUS_SUCCESS, 4);
    int64_t chosen = -1;
    JT_CHILD_CHECK(dnnjit_graph_get_chosen_plan(g, &chosen) == DNNJIT_STATUS_SUCCESS && chosen == 0, 5);
    char *source = NULL;
    JT_CHILD_CHECK(dnnjit_graph_get_plan_source(g, 0, &source) == DNNJIT_STATUS_SUCCESS, 6);
    void *again = NULL;
    size_t again_size = 0;
    JT_CHILD_CHECK(dnnjit_graph_serialize(g, &again, &again_size) == DNNJIT_STATUS_SUCCESS, 7);
    JT_CHILD_CHECK(again_size == size && memcmp(again, blob, size) == 0, 8);
    /* NVRTC really is missing here: building the same graph anew cannot compile. */
    dnnjit_graph_t fresh = seed000(h);
    JT_CHILD_CHECK(dnnjit_graph_build(fresh, &mode_a, 1) == DNNJIT_STATUS_NOT_SUPPORTED, 9);
    JT_CHILD_CHECK(strstr(dnnjit_last_error(), "DNNJIT_NVRTC_LIBRARY"), 10);
    dnnjit_graph_destroy(fresh);
    dnnjit_free(again);
    dnnjit_free(source);
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
    free(blob);
    return 0;
}

static void deserialize_needs_no_nvrtc(void **state)
{
    (void)state;
    dnnjit_graph_t g = seed000(sm90);
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    size_t size;
    void *blob = serialized(g, &size);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/seed000.blob", cache_dir);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(blob, 1, size, fp), size);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(jt_run_child((const char *[]){"without-nvrtc", path, NULL}, -1), 0);
    remove(path);
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
}

/* ---- refusals ---- */

static void serialize_needs_a_built_plan(void **state)
{
    (void)state;
    dnnjit_graph_t g = seed000(sm90);
    void *blob = (void *)1;
    size_t size = 1;
    TU_FAILS(dnnjit_graph_serialize(g, &blob, &size), DNNJIT_STATUS_BAD_STATE, "no built plan");
    assert_null(blob);
    assert_int_equal(size, 0);
    TU_OK(dnnjit_graph_create_execution_plans(g, &mode_a, 1));
    TU_FAILS(dnnjit_graph_serialize(g, &blob, &size), DNNJIT_STATUS_BAD_STATE, "call build first");
    TU_FAILS(dnnjit_graph_serialize(NULL, &blob, &size), DNNJIT_STATUS_BAD_PARAM, "graph is NULL");
    TU_FAILS(dnnjit_graph_serialize(g, NULL, &size), DNNJIT_STATUS_BAD_PARAM, "blob is NULL");
    TU_FAILS(dnnjit_graph_serialize(g, &blob, NULL), DNNJIT_STATUS_BAD_PARAM, "size is NULL");
    dnnjit_graph_t out;
    TU_FAILS(dnnjit_graph_deserialize(NULL, "x", 1, &out), DNNJIT_STATUS_BAD_PARAM, "handle is NULL");
    TU_FAILS(dnnjit_graph_deserialize(sm90, NULL, 1, &out), DNNJIT_STATUS_BAD_PARAM, "blob is NULL");
    TU_FAILS(dnnjit_graph_deserialize(sm90, "x", 1, NULL), DNNJIT_STATUS_BAD_PARAM, "out is NULL");
    refused(sm90, NULL, 0, DNNJIT_STATUS_PARSE_ERROR, "too few");
    dnnjit_graph_destroy(g);
}

static void wrong_architecture_names_both(void **state)
{
    (void)state;
    dnnjit_graph_t g = pointwise(sm90);
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    size_t size;
    void *blob = serialized(g, &size);
    dnnjit_handle_t sm80, none;
    TU_OK(dnnjit_handle_create_for_arch("sm_80", &sm80));
    refused(sm80, blob, size, DNNJIT_STATUS_NOT_SUPPORTED, "compiled for sm_90a but the handle's architecture is sm_80");
    /* A handle without a GPU or a named architecture has none to match. */
    TU_OK(dnnjit_handle_create(&none));
    char arch[DNNJIT__ARCH_LEN];
    bool has_device;
    TU_OK(dnnjit_handle_get_arch(none, arch, sizeof arch, &has_device));
    if (!has_device)
        refused(none, blob, size, DNNJIT_STATUS_NOT_SUPPORTED, "compiled for sm_90a but the handle's architecture is none");
    dnnjit_handle_destroy(none);
    dnnjit_handle_destroy(sm80);
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
}

/* Whether deserializing gave a graph or a failure with a message, and nothing in between. */
static dnnjit_status_t deserialize_any(const void *blob, size_t size)
{
    dnnjit_graph_t g = (dnnjit_graph_t)1;
    dnnjit_status_t s = dnnjit_graph_deserialize(sm90, blob, size, &g);
    if (s) {
        assert_null(g);
        assert_true(strlen(dnnjit_last_error()) > 0);
        assert_non_null(strstr(dnnjit_last_error(), "deserialize: "));
    } else {
        assert_non_null(g);
        dnnjit_graph_destroy(g);
    }
    return s;
}

/* Whether a cut at `n` falls well inside the bytes of the byte field at `at`. */
static bool within(const unsigned char *p, size_t at, size_t n)
{
    return n > at + 16 && n + 16 < skip_bytes(p, at);
}

static void every_truncation_is_refused(void **state)
{
    (void)state;
    dnnjit_graph_t g = two_kernels(sm90);
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    size_t size;
    unsigned char *blob = serialized(g, &size);
    layout_t l = walk(blob, size);
    unsigned char *cut = copy(blob, size, 0);
    for (size_t n = 0; n < size; n++) {
        /* As cut: the header's length disagrees. */
        assert_int_equal(deserialize_any(cut, n), DNNJIT_STATUS_PARSE_ERROR);
        /* Cut and resealed, so that the body's own bounds must catch it. Inside a long
         * field (the JSON, a source, a CUBIN) every length is alike, so those are sampled. */
        bool inside_long = within(blob, l.json, n);
        for (uint32_t k = 0; k < l.group_count; k++)
            inside_long |= within(blob, l.source[k], n) || within(blob, l.cubin[k], n);
        if (n < 32 || (inside_long && n % 97))
            continue;
        memcpy(cut, blob, size);
        reseal(cut, n);
        assert_int_equal(deserialize_any(cut, n), DNNJIT_STATUS_PARSE_ERROR);
        if (!strstr(dnnjit_last_error(), "the blob ends inside") && !strstr(dnnjit_last_error(), "the blob's graph"))
            fail_msg("cut at %zu: %s", n, dnnjit_last_error());
    }
    free(cut);
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
}

static void bit_flips_are_refused(void **state)
{
    (void)state;
    dnnjit_graph_t g = pointwise(sm90);
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    size_t size;
    unsigned char *blob = serialized(g, &size);
    unsigned char *flip = copy(blob, size, 0);
    int refused_resealed = 0, tries = 0;
    for (size_t at = 0; at < size; at += at < 4096 ? 1 : 13) {
        int bit = (int)(at % 8);
        flip[at] ^= (unsigned char)(1u << bit);
        /* The checksum (or the header's own checks) catch any single flip. Only the
         * format field gives another status: a blob of another format. */
        dnnjit_status_t want = at >= 8 && at < 12 ? DNNJIT_STATUS_NOT_SUPPORTED : DNNJIT_STATUS_PARSE_ERROR;
        assert_int_equal(deserialize_any(flip, size), want);
        /* With the checksum made to match, the field checks stand alone: whatever the
         * flip did, the outcome is a graph or a clean refusal. */
        if (at >= 32) {
            reseal(flip, size);
            refused_resealed += deserialize_any(flip, size) != DNNJIT_STATUS_SUCCESS;
            tries++;
        }
        memcpy(flip, blob, size);
    }
    /* Flips in the JSON, the names and the counts are caught; those in the source text or
     * the CUBIN's code are not the blob's to judge. */
    assert_true(refused_resealed > 0 && refused_resealed < tries);
    free(flip);
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
}

/* Changes one field of a resealed copy and expects a refusal naming it. */
typedef void (*mutate_fn)(unsigned char *p, const layout_t *l);

static void expect_refusal(const unsigned char *blob, size_t size, size_t extra, mutate_fn mutate,
                           dnnjit_status_t status, const char *fragment)
{
    layout_t l = walk(blob, size);
    unsigned char *c = copy(blob, size, extra);
    memset(c + size, 0, extra);
    mutate(c, &l);
    reseal(c, size + extra);
    refused(sm90, c, size + extra, status, fragment);
    free(c);
}

static void newer_version(unsigned char *p, const layout_t *l) { set32(p + l->version, DNNJIT_VERSION + 1); }
static void more_groups(unsigned char *p, const layout_t *l) { set32(p + l->groups, l->group_count + 1); }
static void other_workspace(unsigned char *p, const layout_t *l) { set64(p + l->workspace, 512); }
static void no_such_knob(unsigned char *p, const layout_t *l) { set32(p + l->knob[0], 99); }
static void engine_typo(unsigned char *p, const layout_t *l) { p[l->engine[0] + 8] ^= 0x20; }
static void plan_name_typo(unsigned char *p, const layout_t *l) { p[l->plan_name + 8] ^= 0x20; }
static void unknown_uid(unsigned char *p, const layout_t *l) { set64(p + l->tensor_count[0] + 4, 12345); }
static void too_many_slots(unsigned char *p, const layout_t *l) { set32(p + l->tensor_count[0], 25); }
static void huge_block(unsigned char *p, const layout_t *l) { set32(p + l->block[0], 2048); }
static void empty_grid(unsigned char *p, const layout_t *l) { set32(p + l->grid[0] + 4, 0); }
static void not_elf(unsigned char *p, const layout_t *l) { p[l->cubin[0] + 8] = 'X'; }
static void nul_in_entry(unsigned char *p, const layout_t *l) { p[l->entry[0] + 9] = '\0'; }
static void bad_entry(unsigned char *p, const layout_t *l) { p[l->entry[0] + 8] = '9'; }
static void huge_json(unsigned char *p, const layout_t *l) { set64(p + l->json, (uint64_t)1 << 40); }
static void json_typo(unsigned char *p, const layout_t *l) { p[l->json + 8] = '['; }
static void nothing(unsigned char *p, const layout_t *l) { (void)p, (void)l; }
static void scratch_in_tensor_slot(unsigned char *p, const layout_t *l) { set64(p + l->scratch[0] + 4, 1024); }
static void odd_zeroing(unsigned char *p, const layout_t *l)
{
    set32(p + l->scratch[0], 3);
    set64(p + l->scratch[0] + 4, 1024);
    set64(p + l->scratch[0] + 12, 6);
}
static void unasked_scratch(unsigned char *p, const layout_t *l)
{
    set32(p + l->scratch[0], 3);
    set64(p + l->scratch[0] + 4, 1024);
}
static void more_shared(unsigned char *p, const layout_t *l) { set32(p + l->shared[0], le32(p + l->shared[0]) + 16); }
static void wider_grid(unsigned char *p, const layout_t *l) { set32(p + l->grid[0], le32(p + l->grid[0]) + 1); }
static void other_entry(unsigned char *p, const layout_t *l) { p[l->entry[0] + 8 + le64(p + l->entry[0]) - 1] = 'X'; }

/* Tensor slots 0 and 1 (inputs "a" and "b") trade places. */
static void swapped_slots(unsigned char *p, const layout_t *l)
{
    unsigned char *first = p + l->tensor_count[0] + 4, tmp[8];
    memcpy(tmp, first, 8);
    memcpy(first, first + 8, 8);
    memcpy(first + 8, tmp, 8);
}
static void other_format(unsigned char *p, const layout_t *l) { (void)l, set32(p + 8, 6); }
static void bad_cooperative(unsigned char *p, const layout_t *l) { set32(p + l->cooperative[0], 2); }
static void made_cooperative(unsigned char *p, const layout_t *l) { set32(p + l->cooperative[0], 1); }
static void huge_cluster(unsigned char *p, const layout_t *l) { set32(p + l->resident[0], 17); }
static void made_resident(unsigned char *p, const layout_t *l) { set32(p + l->resident[0], 1); }
static void reserved_set(unsigned char *p, const layout_t *l) { (void)l, set32(p + 12, 1); }
static void other_magic(unsigned char *p, const layout_t *l) { (void)l, p[0] = 'X'; }

/* The slot of pass-by-value "s" made a tensor slot, and a tensor made the scalar. */
static void scalar_as_tensor(unsigned char *p, const layout_t *l)
{
    uint64_t scalar_uid = le64(p + l->scalar_count[0] + 4);
    uint64_t tensor_uid = le64(p + l->tensor_count[0] + 4);
    set64(p + l->tensor_count[0] + 4, scalar_uid);
    set64(p + l->scalar_count[0] + 4, tensor_uid);
}

static void lying_fields_are_named(void **state)
{
    (void)state;
    dnnjit_graph_t g = pointwise(sm90);
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    size_t size;
    unsigned char *blob = serialized(g, &size);
    static const struct {
        mutate_fn mutate;
        size_t extra;
        dnnjit_status_t status;
        const char *fragment;
    } cases[] = {
        {newer_version, 0, DNNJIT_STATUS_NOT_SUPPORTED, "the blob was made by dnnjit 0.1.1"},
        {more_groups, 0, DNNJIT_STATUS_PARSE_ERROR, "plan has 2 groups"},
        {other_workspace, 0, DNNJIT_STATUS_PARSE_ERROR, "the blob's plan needs 512 workspace bytes but its kernels"},
        {no_such_knob, 0, DNNJIT_STATUS_PARSE_ERROR, "with knob 99 cannot run it (no such knob)"},
        {engine_typo, 0, DNNJIT_STATUS_PARSE_ERROR, "names engine \"Pointwise\", which does not exist"},
        {plan_name_typo, 0, DNNJIT_STATUS_PARSE_ERROR, "names its plan \"Pointwise"},
        {unknown_uid, 0, DNNJIT_STATUS_PARSE_ERROR, "has uid 12345, which no tensor of the graph has"},
        {too_many_slots, 0, DNNJIT_STATUS_PARSE_ERROR, "25 tensor slots, more than the 24"},
        {huge_block, 0, DNNJIT_STATUS_PARSE_ERROR, "is impossible"},
        {empty_grid, 0, DNNJIT_STATUS_PARSE_ERROR, "is impossible"},
        {not_elf, 0, DNNJIT_STATUS_PARSE_ERROR, "not an ELF image"},
        {nul_in_entry, 0, DNNJIT_STATUS_PARSE_ERROR, "kernel 0's entry name holds a NUL byte"},
        {bad_entry, 0, DNNJIT_STATUS_PARSE_ERROR, "is not an identifier"},
        {huge_json, 0, DNNJIT_STATUS_PARSE_ERROR, "the graph JSON is 1099511627776 bytes long"},
        {json_typo, 0, DNNJIT_STATUS_PARSE_ERROR, "the blob's graph: "},
        {nothing, 3, DNNJIT_STATUS_PARSE_ERROR, "3 stray bytes follow the last kernel"},
        {scratch_in_tensor_slot, 0, DNNJIT_STATUS_PARSE_ERROR, "scratch of 1024 bytes (0 zeroed) in slot 0 after 3 "
                                                               "tensor slots is impossible"},
        {odd_zeroing, 0, DNNJIT_STATUS_PARSE_ERROR, "scratch of 1024 bytes (6 zeroed) in slot 3"},
        {unasked_scratch, 0, DNNJIT_STATUS_PARSE_ERROR, "its scratch is not what engine \"pointwise\" generates"},
        {more_shared, 0, DNNJIT_STATUS_PARSE_ERROR, "its launch shape is not what engine \"pointwise\" generates"},
        {wider_grid, 0, DNNJIT_STATUS_PARSE_ERROR, "its launch shape is not what engine \"pointwise\" generates"},
        {other_entry, 0, DNNJIT_STATUS_PARSE_ERROR, "its entry name is not what engine"},
        {swapped_slots, 0, DNNJIT_STATUS_PARSE_ERROR, "its slot table is not what engine"},
        {other_format, 0, DNNJIT_STATUS_NOT_SUPPORTED, "the blob has format 6; this dnnjit (0.1.0) reads format 5"},
        {bad_cooperative, 0, DNNJIT_STATUS_PARSE_ERROR, "cooperative flag 2 is impossible"},
        {made_cooperative, 0, DNNJIT_STATUS_PARSE_ERROR, "its launch shape is not what engine \"pointwise\" generates"},
        {huge_cluster, 0, DNNJIT_STATUS_PARSE_ERROR, "as clusters of 17 then 0 blocks is impossible"},
        {made_resident, 0, DNNJIT_STATUS_PARSE_ERROR, "its launch shape is not what engine \"pointwise\" generates"},
        {reserved_set, 0, DNNJIT_STATUS_PARSE_ERROR, "reserved field 1"},
        {other_magic, 0, DNNJIT_STATUS_PARSE_ERROR, "not a serialized dnnjit graph"},
        {scalar_as_tensor, 0, DNNJIT_STATUS_PARSE_ERROR, "is tensor \"s\", which has no memory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_refusal(blob, size, cases[i].extra, cases[i].mutate, cases[i].status, cases[i].fragment);
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
}

/* A workspace tensor may fill a slot; a virtual tensor that never reaches memory may not. */
static void virtual_slots_must_be_in_the_workspace(void **state)
{
    (void)state;
    dnnjit_graph_t g = pointwise(sm90);
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    size_t size;
    unsigned char *blob = serialized(g, &size);
    layout_t l = walk(blob, size);
    /* "0::OUT_0" (a * s) is fused away inside the kernel. */
    dnnjit_tensor_t virt;
    TU_OK(dnnjit_graph_find_tensor_by_name(g, "0::OUT_0", &virt));
    int64_t uid;
    TU_OK(dnnjit_tensor_get_uid(g, virt, &uid));
    unsigned char *c = copy(blob, size, 0);
    set64(c + l.tensor_count[0] + 4, (uint64_t)uid);
    reseal(c, size);
    refused(sm90, c, size, DNNJIT_STATUS_PARSE_ERROR, "is tensor \"0::OUT_0\", which has no memory");
    free(c);
    dnnjit_free(blob);
    dnnjit_graph_destroy(g);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "without-nvrtc") == 0)
        return child_without_nvrtc(argv[3]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed000_round_trip),
        cmocka_unit_test(pointwise_round_trip),
        cmocka_unit_test(split_k_round_trip),
        cmocka_unit_test(two_kernel_round_trip),
        cmocka_unit_test(deserialize_needs_no_nvrtc),
        cmocka_unit_test(serialize_needs_a_built_plan),
        cmocka_unit_test(wrong_architecture_names_both),
        cmocka_unit_test(every_truncation_is_refused),
        cmocka_unit_test(bit_flips_are_refused),
        cmocka_unit_test(lying_fields_are_named),
        cmocka_unit_test(virtual_slots_must_be_in_the_workspace),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
