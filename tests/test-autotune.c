/* Autotune without a GPU: the remembered-choice records (written, picked by later builds of
 * the same graph on the same device, ignored when damaged, foreign or switched off) and the
 * refusals of dnnjit_graph_autotune itself. Records are written here through the internal
 * call autotune makes once it has timed the plans. */
#include "jit-test.h"
#include "util.h"

#include "engine/plan.h"
#include "runtime/runtime.h"

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <xxhash.h>

static char cache_dir[PATH_MAX];

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

/* Each test starts with an empty cache folder. */
static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(cache_dir, sizeof cache_dir, "%s/dnnjit-test-autotune-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(cache_dir))
        return -1;
    setenv("DNNJIT_CACHE_DIR", cache_dir, 1);
    unsetenv("DNNJIT_CACHE");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(cache_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const dnnjit_heur_mode_t mode_a = DNNJIT_HEUR_MODE_A;

/* snprintf into a path buffer, failing the test when the path does not fit. */
static void pathf(char out[PATH_MAX], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pathf(char out[PATH_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, PATH_MAX, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && n < PATH_MAX);
}

/* y = sigmoid(a + b) on n halves: mode A lists pointwise_b256_vec, pointwise_b512_vec,
 * pointwise_b256_scalar and fallback_b128. */
static dnnjit_graph_t sigmoid_graph(dnnjit_handle_t h, int64_t n)
{
    dnnjit_graph_t g;
    TU_OK(dnnjit_graph_create(h, &(dnnjit_graph_attr_t){.name = "tuned", .io_data_type = DNNJIT_DATA_TYPE_HALF}, &g));
    dnnjit_tensor_t a = tu_tensor(g, "a", 1, TU_DIMS(n), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "b", 1, TU_DIMS(n), NULL, 0);
    dnnjit_tensor_t u, y;
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_ADD}, a, b, 0, &u));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_SIGMOID_FWD}, u, 0, 0, &y));
    TU_OK(dnnjit_tensor_set_output(g, y, true));
    return g;
}

/* The plan a fresh graph of `n` elements on `h` chooses when built with `policy`. */
static char *chosen_after_build(dnnjit_handle_t h, int64_t n, const dnnjit_heur_mode_t *modes, int mode_count,
                                dnnjit_build_plan_policy_t policy)
{
    dnnjit_graph_t g = sigmoid_graph(h, n);
    TU_OK(dnnjit_graph_create_execution_plans(g, modes, mode_count));
    TU_OK(dnnjit_graph_build_plans(g, policy));
    int64_t chosen;
    char *name;
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    TU_OK(dnnjit_graph_get_plan_name(g, chosen, &name));
    dnnjit_graph_destroy(g);
    return name;
}

static void assert_chosen(dnnjit_handle_t h, int64_t n, dnnjit_build_plan_policy_t policy, const char *want)
{
    char *name = chosen_after_build(h, n, &mode_a, 1, policy);
    assert_string_equal(name, want);
    dnnjit_free(name);
}

/* Remembers plan `index` of a fresh graph of `n` elements; returns the record's path. */
static void remember(dnnjit_handle_t h, int64_t n, int64_t index, char path[PATH_MAX])
{
    dnnjit_graph_t g = sigmoid_graph(h, n);
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    assert_true(dnnjit__autotune_remember(g, index));
    dnnjit_graph_destroy(g);
    /* The one file in <cache>/autotune is the record. */
    char folder[PATH_MAX];
    pathf(folder, "%s/autotune", cache_dir);
    DIR *d = opendir(folder);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        files++;
        assert_int_equal(strlen(e->d_name), 32 + strlen(".plan"));
        assert_string_equal(e->d_name + 32, ".plan");
        pathf(path, "%s/%s", folder, e->d_name);
    }
    closedir(d);
    assert_int_equal(files, 1);
}

static char *read_text(const char *path)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    char *text = calloc(1, 4096);
    assert_true(fread(text, 1, 4095, fp) > 0);
    fclose(fp);
    return text;
}

static void write_text(const char *path, const char *text, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

static void build_picks_the_remembered_plan(void **state)
{
    (void)state;
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    assert_chosen(h, 1000, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_vec");
    char path[PATH_MAX];
    remember(h, 1000, 2, path);
    /* The record is the documented line: magic, the key (the file's name), the XXH64 of
     * the plan name, the name. */
    char *text = read_text(path);
    char want[512];
    const char *base = strrchr(path, '/') + 1;
    snprintf(want, sizeof want, "dnnjit-autotune 1 %.32s %016llx pointwise_b256_scalar\n", base,
             (unsigned long long)XXH64("pointwise_b256_scalar", strlen("pointwise_b256_scalar"), 0));
    assert_string_equal(text, want);
    free(text);
    /* Later builds of the same graph pick it, with either policy, without building plan 0. */
    assert_chosen(h, 1000, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_scalar");
    assert_chosen(h, 1000, DNNJIT_BUILD_PLAN_ALL, "pointwise_b256_scalar");
    dnnjit_graph_t g = sigmoid_graph(h, 1000);
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    assert_false(g->jit->plans[0].built);
    /* build_plan_at_index still chooses what it is told. */
    TU_OK(dnnjit_graph_build_plan_at_index(g, 1));
    int64_t chosen;
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    assert_int_equal(chosen, 1);
    dnnjit_graph_destroy(g);
    /* Another graph (other shapes) and another device are other keys. */
    assert_chosen(h, 999, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_vec");
    snprintf(h->device_name, sizeof h->device_name, "Some Other GPU");
    assert_chosen(h, 1000, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_vec");
    dnnjit_handle_destroy(h);
}

/* Writes a record as the format says, for any plan name. */
static void forge(const char *path, const char *key, const char *plan)
{
    char text[512];
    int n = snprintf(text, sizeof text, "dnnjit-autotune 1 %s %016llx %s\n", key,
                     (unsigned long long)XXH64(plan, strlen(plan), 0), plan);
    write_text(path, text, (size_t)n);
}

static void records_match_plans_by_name(void **state)
{
    (void)state;
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    char path[PATH_MAX], key[33];
    remember(h, 4096, 3, path);
    snprintf(key, sizeof key, "%.32s", strrchr(path, '/') + 1);
    /* Mode B ranks the same plans in another order; the name finds the plan. */
    const dnnjit_heur_mode_t mode_b = DNNJIT_HEUR_MODE_B;
    char *name = chosen_after_build(h, 4096, &mode_b, 1, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE);
    assert_string_equal(name, "fallback_b128");
    dnnjit_free(name);
    /* A forged record in the right format is as good as a written one... */
    forge(path, key, "pointwise_b512_vec");
    assert_chosen(h, 4096, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b512_vec");
    /* ...and one naming a plan the list lacks is passed over. */
    forge(path, key, "pointwise_b1024_vec");
    assert_chosen(h, 4096, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_vec");
    dnnjit_handle_destroy(h);
}

static void damaged_records_are_ignored(void **state)
{
    (void)state;
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    char path[PATH_MAX];
    remember(h, 333, 2, path);
    char *good = read_text(path);
    size_t len = strlen(good);
    assert_chosen(h, 333, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_scalar");
    char *bad = malloc(8192);
    for (int variant = 0; variant < 8; variant++) {
        size_t n = len;
        memcpy(bad, good, len);
        switch (variant) {
        case 0: n = len - 1; break;                      /* no final newline */
        case 1: n = 0; break;                            /* empty */
        case 2: bad[len - 3] ^= 1; break;                /* the name, against its checksum */
        case 3: bad[20] = bad[20] == '0' ? '1' : '0'; break; /* another key */
        case 4: bad[60] = bad[60] == 'a' ? 'b' : 'a'; break; /* the checksum */
        case 5: bad[0] = 'D'; break;                     /* the magic */
        case 6: memcpy(bad + len, good, len); n = 2 * len; break; /* two lines */
        case 7: memset(bad, 'x', 8000); bad[7999] = '\n'; n = 8000; break; /* too long */
        }
        write_text(path, bad, n);
        assert_chosen(h, 333, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_vec");
    }
    /* The intact record still works, so the variants failed for their damage alone. */
    write_text(path, good, len);
    assert_chosen(h, 333, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_scalar");
    free(bad);
    free(good);
    dnnjit_handle_destroy(h);
}

/* A FIFO where the record belongs, which a plain open would wait on for ever: the build
 * goes on with the heuristics' choice and the FIFO is discarded, so that the next choice can
 * be remembered. An alarm ends the test should the build hang. */
static void fifo_in_place_of_a_record_is_discarded(void **state)
{
    (void)state;
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    char path[PATH_MAX];
    remember(h, 2048, 2, path);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0644), 0);
    alarm(60);
    assert_chosen(h, 2048, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_vec");
    alarm(0);
    struct stat st;
    assert_int_not_equal(lstat(path, &st), 0);
    remember(h, 2048, 2, path);
    assert_chosen(h, 2048, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_scalar");
    dnnjit_handle_destroy(h);
}

static void cache_off_remembers_nothing(void **state)
{
    (void)state;
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    char path[PATH_MAX];
    remember(h, 77, 1, path);
    setenv("DNNJIT_CACHE", "0", 1);
    /* A lookup that finds nothing leaves the thread's last message alone. */
    TU_FAILS(dnnjit_graph_get_plan_count(NULL, NULL), DNNJIT_STATUS_BAD_PARAM, "is NULL");
    char before[256];
    snprintf(before, sizeof before, "%s", dnnjit_last_error());
    assert_chosen(h, 77, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_vec");
    assert_string_equal(dnnjit_last_error(), before);
    dnnjit_graph_t g = sigmoid_graph(h, 77);
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    assert_false(dnnjit__autotune_remember(g, 2));
    dnnjit_graph_destroy(g);
    unsetenv("DNNJIT_CACHE");
    assert_chosen(h, 77, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b512_vec");
    dnnjit_handle_destroy(h);
}

static void count_file(const dnnjit__jit_cache_file_t *file, void *user)
{
    (void)file;
    (*(int *)user)++;
}

static void cache_clear_forgets_choices(void **state)
{
    (void)state;
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    char path[PATH_MAX], folder[PATH_MAX], other[PATH_MAX];
    remember(h, 500, 1, path);
    /* A file the library did not write stays, and so does its folder. */
    pathf(folder, "%s/autotune", cache_dir);
    pathf(other, "%s/notes.txt", folder);
    write_text(other, "mine\n", 5);
    /* Every CUBIN the builds wrote goes, and the record. */
    int cubins = 0;
    TU_OK(dnnjit__jit_cache_list(count_file, &cubins));
    uint64_t removed = 0;
    TU_OK(dnnjit__jit_cache_clear_disk(&removed));
    assert_int_equal(removed, cubins + 1);
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
    assert_int_equal(stat(other, &st), 0);
    assert_chosen(h, 500, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE, "pointwise_b256_vec");
    /* Emptied, the folder goes too. */
    remove(other);
    remember(h, 500, 1, path);
    TU_OK(dnnjit__jit_cache_clear_disk(&removed));
    assert_int_not_equal(stat(folder, &st), 0);
    dnnjit_handle_destroy(h);
}

static void autotune_needs_plans_and_a_gpu(void **state)
{
    (void)state;
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    dnnjit_graph_t g = sigmoid_graph(h, 64);
    TU_FAILS(dnnjit_graph_autotune(NULL, NULL, 0, NULL, NULL), DNNJIT_STATUS_BAD_PARAM, "graph is NULL");
    TU_FAILS(dnnjit_graph_autotune(g, NULL, 0, NULL, NULL), DNNJIT_STATUS_BAD_STATE, "has no execution plans");
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    TU_FAILS(dnnjit_graph_autotune(g, NULL, 0, NULL, NULL), DNNJIT_STATUS_BAD_STATE,
             "no GPU to time graph \"tuned\" on: the handle was created for architecture sm_90a without a device");
    int64_t chosen;
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    assert_int_equal(chosen, 0);
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
}

/* DNNJIT_AUTOTUNE_REPEATS is checked before anything is timed, GPU or not. */
static void autotune_repeats_are_checked(void **state)
{
    (void)state;
    dnnjit_handle_t h;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    dnnjit_graph_t g = sigmoid_graph(h, 64);
    TU_OK(dnnjit_graph_build(g, &mode_a, 1));
    const char *bad[] = {"0", "-3", "1001", "7x", "seven", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("DNNJIT_AUTOTUNE_REPEATS", bad[i], 1);
        char want[96];
        snprintf(want, sizeof want, "DNNJIT_AUTOTUNE_REPEATS=\"%s\" is not a whole number from 1 to 1000", bad[i]);
        TU_FAILS(dnnjit_graph_autotune(g, NULL, 0, NULL, NULL), DNNJIT_STATUS_BAD_PARAM, want);
    }
    /* A valid count gets as far as the missing GPU. */
    setenv("DNNJIT_AUTOTUNE_REPEATS", "1", 1);
    TU_FAILS(dnnjit_graph_autotune(g, NULL, 0, NULL, NULL), DNNJIT_STATUS_BAD_STATE, "no GPU to time graph");
    unsetenv("DNNJIT_AUTOTUNE_REPEATS");
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(build_picks_the_remembered_plan),
        T(records_match_plans_by_name),
        T(damaged_records_are_ignored),
        T(fifo_in_place_of_a_record_is_discarded),
        T(cache_off_remembers_nothing),
        T(cache_clear_forgets_choices),
        T(autotune_needs_plans_and_a_gpu),
        T(autotune_repeats_are_checked),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
