/* The JIT path without a GPU: a handle for a named architecture plans, generates and
 * compiles (NVRTC from the toolkit), and refuses only to execute. */
/* mkdtemp and setenv are POSIX. */
#define _POSIX_C_SOURCE 200809L

#include "util.h"

#include "engine/canonical.h"
#include "engine/plan.h"
#include "jit/jit.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static dnnjit_handle_t sm90;
static char cache_dir[] = "/tmp/dnnjit-test-plans-XXXXXX";

static int setup(void **state)
{
    (void)state;
    /* A private cache folder, so that this test compiles for real and leaves nothing. */
    if (!mkdtemp(cache_dir))
        return -1;
    setenv("DNNJIT_CACHE_DIR", cache_dir, 1);
    return dnnjit_handle_create_for_arch("sm_90a", &sm90);
}

static int teardown(void **state)
{
    (void)state;
    dnnjit_handle_destroy(sm90);
    uint64_t removed = 0;
    dnnjit__jit_cache_clear_disk(&removed);
    return removed > 0 && rmdir(cache_dir) == 0 ? 0 : -1;
}

/* y = sigmoid(a + b * c) on n elements of half. */
static dnnjit_graph_t sigmoid_graph(dnnjit_handle_t h, int64_t n)
{
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(h, &(dnnjit_graph_attr_t){.name = "sig", .io_data_type = DNNJIT_DATA_TYPE_HALF}, &g));
    dnnjit_tensor_t a = tu_tensor(g, "a", 1, (int64_t[]){n}, NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", 1, (int64_t[]){n}, NULL, 0);
    dnnjit_tensor_t c = tu_tensor(g, "c", 1, (int64_t[]){n}, NULL, 0);
    dnnjit_tensor_t t, u, y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, b, c, 0, &t));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, a, t, 0, &u));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SIGMOID_FWD}, u, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    return g;
}

static void handle_for_arch(void **state)
{
    (void)state;
    char arch[16];
    bool has_device = true;
    TU_OK(dnnjit_handle_get_arch(sm90, arch, sizeof arch, &has_device));
    assert_string_equal(arch, "sm_90a");
    assert_false(has_device);
    dnnjit_handle_t h = NULL;
    TU_FAILS(dnnjit_handle_create_for_arch("hopper", &h), DNNJIT_STATUS_BAD_PARAM, "hopper");
    assert_null(h);
    TU_FAILS(dnnjit_handle_create_for_arch(NULL, &h), DNNJIT_STATUS_BAD_PARAM, "arch is NULL");
    char tiny[3];
    TU_FAILS(dnnjit_handle_get_arch(sm90, tiny, sizeof tiny, NULL), DNNJIT_STATUS_BAD_PARAM, "cannot hold");
}

static void plans_by_mode(void **state)
{
    (void)state;
    dnnjit_graph_t g = sigmoid_graph(sm90, 1000);
    dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A, b = DNNJIT_HEUR_MODE_B;
    TU_OK(dnnjit_graph_create_execution_plans(g, &a, 1));
    int64_t count;
    TU_OK(dnnjit_graph_get_plan_count(g, &count));
    assert_int_equal(count, 4); /* b256 vec, b512 vec, b256 scalar, then the fallback engine */
    char *name;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &name));
    assert_string_equal(name, "pointwise_b256_vec");
    dnnjit_free(name);
    uint32_t notes;
    TU_OK(dnnjit_graph_get_plan_behavior_notes(g, 2, &notes));
    assert_true(notes & DNNJIT_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
    TU_OK(dnnjit_graph_get_plan_name(g, 3, &name));
    assert_string_equal(name, "fallback_b128");
    dnnjit_free(name);
    TU_FAILS(dnnjit_graph_get_plan_name(g, 4, &name), DNNJIT_STATUS_BAD_PARAM, "plan index 4 is outside 0..3");
    /* Mode B ranks by the cost model: the scalar plan, then the naive fallback, last. */
    TU_OK(dnnjit_graph_create_execution_plans(g, &b, 1));
    TU_OK(dnnjit_graph_get_plan_name(g, 2, &name));
    assert_string_equal(name, "pointwise_b256_scalar");
    dnnjit_free(name);
    TU_OK(dnnjit_graph_check_support(g));
    dnnjit_graph_destroy(g);
}

static void strided_input_has_no_vector_plan(void **state)
{
    (void)state;
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(sm90, &(dnnjit_graph_attr_t){.io_data_type = DNNJIT_DATA_TYPE_FLOAT}, &g));
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(7, 77), TU_DIMS(1, 7), 0);
    dnnjit_tensor_t y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_EXP}, x, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    TU_OK(dnnjit_tensor_set_stride(g, y, 2, TU_DIMS(77, 1)));
    TU_OK(dnnjit_graph_create_execution_plans(g, NULL, 0));
    int64_t count;
    TU_OK(dnnjit_graph_get_plan_count(g, &count));
    assert_int_equal(count, 2); /* the scalar pointwise plan and the fallback */
    dnnjit_graph_destroy(g);
}

static void source_is_deterministic(void **state)
{
    (void)state;
    char *src[2];
    for (int i = 0; i < 2; i++) {
        dnnjit_graph_t g = sigmoid_graph(sm90, 4097);
        TU_OK(dnnjit_graph_create_execution_plans(g, NULL, 0));
        TU_OK(dnnjit_graph_get_plan_source(g, 0, &src[i]));
        dnnjit_graph_destroy(g);
    }
    assert_string_equal(src[0], src[1]);
    assert_non_null(strstr(src[0], "constexpr dj_i64 DJ_NUMEL = 4097LL;"));
    assert_non_null(strstr(src[0], "dj_sigmoid("));
    dnnjit_free(src[0]);
    dnnjit_free(src[1]);
}

/* softmax(relu(A @ B + bias)) * s: a GEMM group with an epilogue, a row group with a
 * pointwise epilogue reading a pass-by-value scalar (mode B adds the fallback engine's
 * plans). `permuted` creates the inputs in the opposite order, so that every tensor gets
 * another id and uid, and names every tensor and node differently. */
static dnnjit_graph_t mixed_graph(bool permuted)
{
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(sm90, &(dnnjit_graph_attr_t){.name = "mixed", .io_data_type = DNNJIT_DATA_TYPE_HALF}, &g));
    dnnjit_tensor_t in[4];
    const char *names[2][4] = {{"A", "B", "bias", "s"}, {"q7_left", "q7_right", "q7_shift", "q7_scale"}};
    for (int k = 0; k < 4; k++) {
        int i = permuted ? 3 - k : k;
        const char *name = names[permuted][i];
        if (i == 0)
            in[i] = tu_tensor(g, name, 3, TU_DIMS(2, 64, 32), NULL, 0);
        else if (i == 1)
            in[i] = tu_tensor(g, name, 3, TU_DIMS(2, 32, 48), NULL, 0);
        else if (i == 2)
            in[i] = tu_tensor(g, name, 3, TU_DIMS(1, 1, 48), NULL, 0);
        else
            TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = name, .ndim = 1, .dim = TU_DIMS(1),
                                                                 .data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                                 .is_pass_by_value = true},
                                      &in[i]));
    }
    dnnjit_tensor_t c, d, e, f, y;
    TU_OK(dnnjit_graph_matmul(g, in[0], in[1], &(dnnjit_matmul_attr_t){.name = permuted ? "k9_product" : NULL}, &c));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = permuted ? "k9_plus" : NULL, .mode = DNNJIT_POINTWISE_ADD},
                                 c, in[2], 0, &d));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = permuted ? "k9_clip" : NULL, .mode = DNNJIT_POINTWISE_RELU_FWD},
                                 d, 0, 0, &e));
    TU_OK(dnnjit_graph_softmax(g, e, &(dnnjit_softmax_attr_t){.name = permuted ? "k9_norm" : NULL}, &f, NULL, NULL));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = permuted ? "k9_times" : NULL, .mode = DNNJIT_POINTWISE_MUL},
                                 f, in[3], 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    return g;
}

static const dnnjit_heur_mode_t every_mode[] = {DNNJIT_HEUR_MODE_A, DNNJIT_HEUR_MODE_B};

/* Every plan's source, one string per plan, without the header lines that name the nodes
 * a kernel runs (`strip`) or with them. */
static char **plan_sources(dnnjit_graph_t g, bool strip, int64_t *count)
{
    TU_OK(dnnjit_graph_create_execution_plans(g, every_mode, 2));
    TU_OK(dnnjit_graph_get_plan_count(g, count));
    char **out = calloc((size_t)*count, sizeof *out);
    for (int64_t p = 0; p < *count; p++) {
        TU_OK(dnnjit_graph_get_plan_source(g, p, &out[p]));
        char *w = out[p];
        for (const char *r = out[p]; *r;) {
            const char *end = strchr(r, '\n');
            size_t len = end ? (size_t)(end - r) + 1 : strlen(r);
            if (!strip || strncmp(r, "// ==== kernel ", 15) != 0) {
                memmove(w, r, len);
                w += len;
            }
            r += len;
        }
        *w = '\0';
    }
    return out;
}

static void free_sources(char **src, int64_t count)
{
    for (int64_t p = 0; p < count; p++)
        dnnjit_free(src[p]);
    free(src);
}

/* The graph's JSON with its tensors and its nodes listed in the opposite order. */
static char *reversed_json(dnnjit_graph_t g)
{
    char *text;
    TU_OK(dnnjit_graph_to_json(g, &text));
    json_t *root = json_loads(text, 0, NULL);
    dnnjit_free(text);
    assert_non_null(root);
    json_t *tensors = json_object_get(root, "tensors"), *nodes = json_object_get(root, "nodes");
    json_t *rtensors = json_object(), *rnodes = json_array();
    const char **keys = calloc(json_object_size(tensors), sizeof *keys);
    size_t n = 0;
    const char *key;
    json_t *value;
    json_object_foreach(tensors, key, value)
        keys[n++] = key;
    assert_true(n > 4);
    for (size_t i = n; i-- > 0;)
        json_object_set(rtensors, keys[i], json_object_get(tensors, keys[i]));
    for (size_t i = json_array_size(nodes); i-- > 0;)
        json_array_append(rnodes, json_array_get(nodes, i));
    free(keys);
    json_object_set_new(root, "tensors", rtensors);
    json_object_set_new(root, "nodes", rnodes);
    text = json_dumps(root, JSON_INDENT(1));
    json_decref(root);
    return text;
}

static uint64_t compiles(void)
{
    dnnjit__jit_cache_stats_t st;
    dnnjit__jit_cache_stats(&st);
    return st.compiles;
}

/* Kernel source depends on the groups' structure only: not on tensor ids, uids or names,
 * nor on node names, nor on the order of a JSON file's tensors and nodes. So a graph made
 * again in another order finds its kernels in the cache and compiles nothing. */
static void source_is_canonical(void **state)
{
    (void)state;
    dnnjit_graph_t g1 = mixed_graph(false), g2 = mixed_graph(true);
    int64_t n1, n2, n3;
    char **s1 = plan_sources(g1, true, &n1), **s2 = plan_sources(g2, true, &n2);
    assert_true(n1 >= 3);
    assert_int_equal(n1, n2);
    for (int64_t p = 0; p < n1; p++)
        assert_string_equal(s1[p], s2[p]);
    /* Nothing of the graph's numbering or naming is left in a kernel. */
    assert_null(strstr(s2[0], "q7_"));
    assert_null(strstr(s2[0], "k9_"));
    free_sources(s1, n1);
    free_sources(s2, n2);

    /* Through JSON listing everything backwards, the whole plan source (node names in the
     * headers included) is the same. */
    char *json = reversed_json(g1);
    dnnjit_graph_t g3;
    TU_OK(dnnjit_graph_from_json(sm90, json, &g3));
    free(json);
    dnnjit_tensor_t first;
    TU_OK(dnnjit_graph_find_tensor_by_name(g3, "A", &first));
    assert_int_not_equal(first, 1);
    s1 = plan_sources(g1, false, &n1);
    char **s3 = plan_sources(g3, false, &n3);
    assert_int_equal(n1, n3);
    for (int64_t p = 0; p < n1; p++)
        assert_string_equal(s1[p], s3[p]);
    free_sources(s1, n1);
    free_sources(s3, n3);

    /* The first build compiles; the others compile nothing, from disk in a cold memory
     * cache or from memory. */
    dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A;
    uint64_t before = compiles();
    TU_OK(dnnjit_graph_build_plans(g1, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE));
    assert_true(compiles() > before);
    dnnjit__jit_cache_clear_memory();
    dnnjit__jit_cache_reset_stats();
    TU_OK(dnnjit_graph_build(g3, &a, 1));
    dnnjit__jit_cache_stats_t st;
    dnnjit__jit_cache_stats(&st);
    assert_int_equal(st.compiles, 0);
    assert_int_equal(st.disk_hits, 2);
    TU_OK(dnnjit_graph_build(g2, &a, 1));
    dnnjit__jit_cache_stats(&st);
    assert_int_equal(st.compiles, 0);
    assert_int_equal(st.memory_hits, 2);
    dnnjit_graph_destroy(g1);
    dnnjit_graph_destroy(g2);
    dnnjit_graph_destroy(g3);
}

/* The print of the sigmoid graph's group after `change` edits the graph. */
static dnnjit__jit_key_t sigmoid_print(dnnjit_handle_t h, int64_t n, void (*change)(dnnjit_graph_t g))
{
    dnnjit_graph_t g = sigmoid_graph(h, n);
    if (change)
        change(g);
    TU_OK(dnnjit_graph_build_operation_graph(g));
    assert_int_equal(g->jit->partition.group_count, 1);
    dnnjit__jit_key_t print = g->jit->canon[0].print;
    dnnjit_graph_destroy(g);
    return print;
}

static void make_b_float(dnnjit_graph_t g)
{
    dnnjit_tensor_t b;
    TU_OK(dnnjit_graph_find_tensor_by_name(g, "b", &b));
    TU_OK(dnnjit_tensor_set_data_type(g, b, DNNJIT_DATA_TYPE_FLOAT));
}

static void make_b_strided(dnnjit_graph_t g)
{
    dnnjit_tensor_t b;
    TU_OK(dnnjit_graph_find_tensor_by_name(g, "b", &b));
    TU_OK(dnnjit_tensor_set_stride(g, b, 1, TU_DIMS(2)));
}

static void rename_everything(dnnjit_graph_t g)
{
    for (dnnjit_tensor_t t = 1; t <= 3; t++) {
        char name[16];
        snprintf(name, sizeof name, "renamed%u", t);
        TU_OK(dnnjit_tensor_set_name(g, t, name));
        TU_OK(dnnjit_tensor_set_uid(g, t, 100 + t));
    }
}

static bool same_print(dnnjit__jit_key_t a, dnnjit__jit_key_t b)
{
    return a.low == b.low && a.high == b.high;
}

/* Plans are remembered per print, so the print must change with everything the engines
 * read (else a graph would get another graph's kernels) and with nothing else. */
static void print_covers_the_structure(void **state)
{
    (void)state;
    dnnjit_handle_t sm80;
    TU_OK(dnnjit_handle_create_for_arch("sm_80", &sm80));
    dnnjit__jit_key_t base = sigmoid_print(sm90, 64, NULL);
    assert_true(same_print(base, sigmoid_print(sm90, 64, NULL)));
    assert_true(same_print(base, sigmoid_print(sm90, 64, rename_everything)));
    assert_false(same_print(base, sigmoid_print(sm90, 65, NULL)));
    assert_false(same_print(base, sigmoid_print(sm80, 64, NULL)));
    assert_false(same_print(base, sigmoid_print(sm90, 64, make_b_float)));
    assert_false(same_print(base, sigmoid_print(sm90, 64, make_b_strided)));
    dnnjit_handle_destroy(sm80);

    /* A different size right after the first gets its own source, not the remembered one. */
    char *src[2];
    for (int i = 0; i < 2; i++) {
        dnnjit_graph_t g = sigmoid_graph(sm90, 1000 + i);
        TU_OK(dnnjit_graph_create_execution_plans(g, NULL, 0));
        TU_OK(dnnjit_graph_get_plan_source(g, 0, &src[i]));
        dnnjit_graph_destroy(g);
    }
    assert_non_null(strstr(src[0], "DJ_NUMEL = 1000LL;"));
    assert_non_null(strstr(src[1], "DJ_NUMEL = 1001LL;"));
    dnnjit_free(src[0]);
    dnnjit_free(src[1]);
}

static void build_compiles_and_refuses_execute(void **state)
{
    (void)state;
    dnnjit_graph_t g = sigmoid_graph(sm90, 77);
    dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A;
    TU_OK(dnnjit_graph_build(g, &a, 1));
    int64_t chosen;
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    assert_int_equal(chosen, 0);
    TU_OK(dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_ALL));
    TU_OK(dnnjit_graph_build_plan_at_index(g, 2));
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    assert_int_equal(chosen, 2);
    int64_t ws;
    TU_OK(dnnjit_graph_get_workspace_size(g, &ws));
    assert_int_equal(ws, 0);
    TU_FAILS(dnnjit_graph_execute(g, NULL, 0, NULL, NULL), DNNJIT_STATUS_BAD_STATE, "without a device");
    /* Built graphs are frozen. */
    dnnjit_tensor_t t;
    TU_FAILS(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.ndim = 1, .dim = TU_DIMS(1)}, &t), DNNJIT_STATUS_BAD_STATE,
             "can no longer change");
    TU_FAILS(dnnjit_tensor_set_uid(g, 1, 99), DNNJIT_STATUS_BAD_STATE, "can no longer change");
    dnnjit_graph_destroy(g);
}

/* build_plans(ALL) first compiles every plan's kernel on several threads
 * (DNNJIT_COMPILE_THREADS), so that building the plans in order finds each in memory; the
 * CUBINs are those a build on one thread makes, which compiles them in order only. */
static void build_all_compiles_on_threads(void **state)
{
    (void)state;
    enum { RUNS = 3, MOST = 8 };
    const char *const threads[RUNS] = {"1", "3", "2"};
    void *cubins[RUNS][MOST];
    size_t sizes[RUNS][MOST];
    int64_t count = 0;
    setenv("DNNJIT_CACHE", "0", 1);
    for (int run = 0; run < RUNS; run++) {
        setenv("DNNJIT_COMPILE_THREADS", threads[run], 1);
        dnnjit__jit_cache_clear_memory();
        dnnjit__jit_cache_stats_t before, after;
        dnnjit__jit_cache_stats(&before);
        dnnjit_graph_t g = sigmoid_graph(sm90, 4099);
        dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A;
        TU_OK(dnnjit_graph_create_execution_plans(g, &a, 1));
        TU_OK(dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_ALL));
        dnnjit__jit_cache_stats(&after);
        TU_OK(dnnjit_graph_get_plan_count(g, &count));
        assert_true(count >= 3 && count <= MOST);
        /* Every plan's kernel is a different one, compiled once. */
        assert_int_equal(after.compiles - before.compiles, count);
        assert_int_equal(after.memory_hits - before.memory_hits, run > 0 ? count : 0);
        for (int64_t p = 0; p < count; p++) {
            const dnnjit__built_kernel_t *b = &g->jit->plans[p].kernels[0];
            assert_true(g->jit->plans[p].built);
            sizes[run][p] = b->cubin_size;
            cubins[run][p] = malloc(b->cubin_size);
            assert_non_null(cubins[run][p]);
            memcpy(cubins[run][p], b->cubin, b->cubin_size);
        }
        dnnjit_graph_destroy(g);
    }
    for (int run = 1; run < RUNS; run++)
        for (int64_t p = 0; p < count; p++) {
            assert_int_equal(sizes[run][p], sizes[0][p]);
            assert_memory_equal(cubins[run][p], cubins[0][p], sizes[0][p]);
        }
    for (int run = 0; run < RUNS; run++)
        for (int64_t p = 0; p < count; p++)
            free(cubins[run][p]);
    const char *const bad[] = {"three", "0", "65", "2x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("DNNJIT_COMPILE_THREADS", bad[i], 1);
        dnnjit_graph_t g = sigmoid_graph(sm90, 4099);
        dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A;
        TU_OK(dnnjit_graph_create_execution_plans(g, &a, 1));
        TU_FAILS(dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_ALL), DNNJIT_STATUS_BAD_PARAM,
                 "DNNJIT_COMPILE_THREADS must be a whole number from 1 to 64");
        /* Only building every plan compiles on threads: the heuristics' choice is one plan. */
        TU_OK(dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE));
        dnnjit_graph_destroy(g);
    }
    unsetenv("DNNJIT_COMPILE_THREADS");
    unsetenv("DNNJIT_CACHE");
}

static void build_needs_plans_and_arch(void **state)
{
    (void)state;
    dnnjit_graph_t g = sigmoid_graph(sm90, 8);
    TU_FAILS(dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_ALL), DNNJIT_STATUS_BAD_STATE, "no execution plans");
    TU_FAILS(dnnjit_graph_check_support(g), DNNJIT_STATUS_NOT_SUPPORTED, "no execution plans");
    TU_FAILS(dnnjit_graph_get_workspace_size(g, &(int64_t){0}), DNNJIT_STATUS_BAD_STATE, "not built");
    TU_FAILS(dnnjit_graph_create_execution_plans(g, (dnnjit_heur_mode_t[]){(dnnjit_heur_mode_t)9}, 1),
             DNNJIT_STATUS_BAD_PARAM, "unknown heuristic mode 9");
    dnnjit_graph_destroy(g);
    g = sigmoid_graph(NULL, 8);
    TU_OK(dnnjit_graph_create_execution_plans(g, NULL, 0));
    TU_FAILS(dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE), DNNJIT_STATUS_BAD_STATE, "no handle");
    dnnjit_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handle_for_arch),
        cmocka_unit_test(plans_by_mode),
        cmocka_unit_test(strided_input_has_no_vector_plan),
        cmocka_unit_test(source_is_deterministic),
        cmocka_unit_test(source_is_canonical),
        cmocka_unit_test(print_covers_the_structure),
        cmocka_unit_test(build_compiles_and_refuses_execute),
        cmocka_unit_test(build_all_compiles_on_threads),
        cmocka_unit_test(build_needs_plans_and_arch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
