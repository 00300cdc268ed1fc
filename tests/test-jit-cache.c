/* The kernel cache: keys, memory and disk tiers, damaged files, concurrent writers,
 * writers killed mid-write, unusable folders, listing and clearing. Each test gets its own
 * temporary DNNJIT_CACHE_DIR and a cold memory cache. */
#define _GNU_SOURCE /* RTLD_NEXT, for the writer's calls the tests intercept */
#include "jit-test.h"

#include <dlfcn.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <xxhash.h>

#define HEADER 48 /* the documented file header size */

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

typedef struct fixture {
    char dir[PATH_MAX];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/dnnjit-cache-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir))
        return -1;
    setenv("DNNJIT_CACHE_DIR", f->dir, 1);
    unsetenv("DNNJIT_CACHE");
    unsetenv("DNNJIT_LOG");
    dnnjit__jit_cache_clear_memory();
    dnnjit__jit_cache_reset_stats();
    *state = f;
    return 0;
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
    fixture_t *f = *state;
    chmod(f->dir, 0755);
    nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    dnnjit__jit_cache_clear_memory();
    unsetenv("DNNJIT_CACHE_DIR");
    free(f);
    return 0;
}

static dnnjit__jit_cache_stats_t stats(void)
{
    dnnjit__jit_cache_stats_t s;
    dnnjit__jit_cache_stats(&s);
    return s;
}

/* Looks a kernel up and checks that a CUBIN came back. */
static void *get(const char *source, const char *arch, const dnnjit__compile_options_t *opt, size_t *size,
                 dnnjit__jit_key_t *key)
{
    void *cubin = NULL;
    JT_OK(dnnjit__jit_get_cubin(source, "kernel.cu", arch, opt, &cubin, size, key));
    assert_non_null(cubin);
    return cubin;
}

static void file_of(const char *dir, const char *arch, dnnjit__jit_key_t key, char path[PATH_MAX])
{
    char hex[DNNJIT__KEY_HEX_LEN];
    dnnjit__jit_key_hex(key, hex);
    pathf(path, "%s/%s/%s.cubin", dir, arch, hex);
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)n + 1);
    assert_int_equal(fread(data, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *size = (size_t)n;
    return data;
}

/* Entries of a folder other than . and .., and how many of them end with `suffix`. */
static int count_entries(const char *dir, const char *suffix, int *with_suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    *with_suffix = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        n++;
        size_t len = strlen(e->d_name), sl = strlen(suffix);
        *with_suffix += len >= sl && strcmp(e->d_name + len - sl, suffix) == 0;
    }
    closedir(d);
    return n;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Whether a cache file is whole by the layout cache.c documents, checked independently of
 * it: magic, format 1, this dnnjit version, the payload length, the payload's XXH64 and
 * the key. */
static bool file_is_whole(const unsigned char *b, size_t n, dnnjit__jit_key_t key)
{
    return n > HEADER && memcmp(b, "DNNJITCB", 8) == 0 && (le64(b + 8) & 0xffffffffu) == 1 &&
           le64(b + 8) >> 32 == DNNJIT_VERSION && le64(b + 16) == n - HEADER &&
           le64(b + 24) == XXH64(b + HEADER, n - HEADER, 0) && le64(b + 32) == key.low && le64(b + 40) == key.high;
}

static void put_file(const char *path, const void *data, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

/* The CUBIN NVRTC makes for a kernel, bypassing the cache: what a cache entry must hold. */
static void *reference_cubin(const char *source, const char *arch, size_t *size)
{
    void *cubin = NULL;
    JT_OK(dnnjit__nvrtc_compile(source, "kernel.cu", arch, NULL, &cubin, size));
    return cubin;
}

/* A cold lookup of a kernel whose file is damaged: the file is discarded, the kernel
 * compiled again and stored whole. */
static void expect_rebuilt(const char *source, const char *arch, const void *want, size_t want_size)
{
    dnnjit__jit_cache_clear_memory();
    dnnjit__jit_cache_reset_stats();
    size_t size;
    dnnjit__jit_key_t key;
    void *cubin = get(source, arch, NULL, &size, &key);
    dnnjit__jit_cache_stats_t s = stats();
    if (s.bad_files != 1 || s.compiles != 1 || s.disk_hits != 0 || s.disk_writes != 1)
        fail_msg("bad files %llu, compiles %llu, disk hits %llu, writes %llu", (unsigned long long)s.bad_files,
                 (unsigned long long)s.compiles, (unsigned long long)s.disk_hits, (unsigned long long)s.disk_writes);
    assert_int_equal(size, want_size);
    assert_memory_equal(cubin, want, size);
    free(cubin);
}

/* ---- keys ---- */

static void keys_change_with_every_input(void **state)
{
    (void)state;
    /* Option lists as dnnjit__nvrtc_options makes them: the fixed options, then the caller's. */
    const char *opts[] = {"--gpu-architecture=sm_90a", "-std=c++17", "-default-device", "-minimal", "-DA", "B"};
    const char *joined[] = {"--gpu-architecture=sm_90a", "-std=c++17", "-default-device", "-minimal", "-DAB"};
    const char *other[] = {"--gpu-architecture=sm_90a", "-std=c++17", "-default-device", "-minimal", "-DA", "C"};
    const char *headers[] = {"--gpu-architecture=sm_90a", "-std=c++17", "-default-device",
                             "--include-path=/usr/local/cuda/include", "--include-path=/usr/local/cuda/include/cccl",
                             "-DA", "B"};
    const char *std20[] = {"--gpu-architecture=sm_90a", "-std=c++20", "-default-device", "-minimal", "-DA", "B"};
    dnnjit__jit_key_input_t base = {.source = jt_axpy_source, .name = "axpy.cu", .arch = "sm_90a",
                                    .nvrtc_options = opts, .nvrtc_option_count = 6, .nvrtc_major = 13,
                                    .nvrtc_minor = 0, .nvrtc_build = "123 bytes, modified 1.000000000",
                                    .dnnjit_version = 100};
    enum { VARIANTS = 15 };
    dnnjit__jit_key_input_t v[VARIANTS];
    for (int i = 0; i < VARIANTS; i++)
        v[i] = base;
    v[1].source = jt_half_source;
    v[2].name = "axpy2.cu";
    v[3].arch = "sm_90";
    v[4].nvrtc_options = joined; /* the same characters, split differently */
    v[4].nvrtc_option_count = 5;
    v[5].nvrtc_options = other;
    v[6].nvrtc_option_count = 5; /* one option fewer */
    v[7].nvrtc_options = headers; /* the fixed options the include folders replace */
    v[7].nvrtc_option_count = 7;
    v[8].nvrtc_options = NULL;
    v[8].nvrtc_option_count = 0;
    v[9].nvrtc_major = 12;
    v[10].nvrtc_minor = 1;
    v[11].dnnjit_version = 101;
    v[12].nvrtc_build = "124 bytes, modified 1.000000000"; /* another build of NVRTC 13.0 */
    v[13].nvrtc_build = NULL;
    v[14].nvrtc_options = std20; /* a fixed option, not the caller's */
    dnnjit__jit_key_t k[VARIANTS];
    for (int i = 0; i < VARIANTS; i++)
        k[i] = dnnjit__jit_key_compute(&v[i]);
    for (int i = 0; i < VARIANTS; i++)
        for (int j = i + 1; j < VARIANTS; j++)
            if (k[i].low == k[j].low && k[i].high == k[j].high)
                fail_msg("variants %d and %d have one key", i, j);
    /* Same inputs, same key, also from copies of the strings. */
    char source_copy[sizeof jt_axpy_source];
    memcpy(source_copy, jt_axpy_source, sizeof source_copy);
    dnnjit__jit_key_input_t again = base;
    again.source = source_copy;
    dnnjit__jit_key_t k0 = dnnjit__jit_key_compute(&again);
    assert_true(k0.low == k[0].low && k0.high == k[0].high);

    char hex[DNNJIT__KEY_HEX_LEN];
    dnnjit__jit_key_hex((dnnjit__jit_key_t){.low = 0x0123456789abcdefULL, .high = 0xfedcba9876543210ULL}, hex);
    assert_string_equal(hex, "fedcba98765432100123456789abcdef");
}

/* The live key covers the options exactly as the compile passes them to NVRTC (the fixed
 * ones included), the NVRTC version and the identity of the loaded NVRTC build. */
static void live_key_uses_nvrtc_and_dnnjit_versions(void **state)
{
    (void)state;
    const char *extra[] = {"-DTILE=64"};
    const dnnjit__compile_options_t with_extra = {.extra = extra, .extra_count = 1};
    const dnnjit__compile_options_t *cases[] = {NULL, &with_extra};
    dnnjit__jit_key_t live[2];
    for (int c = 0; c < 2; c++) {
        JT_OK(dnnjit__jit_key(jt_axpy_source, "axpy.cu", "sm_80", cases[c], &live[c]));
        dnnjit__nvrtc_options_t opts;
        JT_OK(dnnjit__nvrtc_options("sm_80", cases[c], &opts));
        assert_string_equal(opts.list[0], "--gpu-architecture=sm_80");
        assert_string_equal(opts.list[1], "-std=c++17");
        if (c)
            assert_string_equal(opts.list[opts.count - 1], "-DTILE=64");
        dnnjit__jit_key_input_t in = {.source = jt_axpy_source, .name = "axpy.cu", .arch = "sm_80",
                                      .nvrtc_options = opts.list, .nvrtc_option_count = opts.count,
                                      .nvrtc_build = dnnjit__nvrtc_identity(), .dnnjit_version = DNNJIT_VERSION};
        JT_OK(dnnjit__nvrtc_version(&in.nvrtc_major, &in.nvrtc_minor));
        dnnjit__jit_key_t expect = dnnjit__jit_key_compute(&in);
        assert_true(live[c].low == expect.low && live[c].high == expect.high);
        /* Without the build's identity, or with one fixed option less, it is another key. */
        in.nvrtc_build = NULL;
        expect = dnnjit__jit_key_compute(&in);
        assert_false(live[c].low == expect.low && live[c].high == expect.high);
        in.nvrtc_build = dnnjit__nvrtc_identity();
        in.nvrtc_options = opts.list + 1;
        in.nvrtc_option_count = opts.count - 1;
        expect = dnnjit__jit_key_compute(&in);
        assert_false(live[c].low == expect.low && live[c].high == expect.high);
        dnnjit__nvrtc_options_free(&opts);
    }
    assert_false(live[0].low == live[1].low && live[0].high == live[1].high);
    /* The loaded library's file was found: its size and time name the build. */
    assert_non_null(strstr(dnnjit__nvrtc_identity(), " bytes, modified "));
}

/* ---- memory and disk ---- */

static void disk_round_trip(void **state)
{
    fixture_t *f = *state;
    size_t size, size2, file_size;
    dnnjit__jit_key_t key, key2;
    void *first = get(jt_axpy_source, "sm_80", NULL, &size, &key);
    jt_assert_cubin(first, size, "axpy");
    dnnjit__jit_cache_stats_t s = stats();
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.compiles, 1);
    assert_int_equal(s.disk_writes, 1);
    assert_int_equal(s.memory_entries, 1);
    assert_int_equal(s.memory_bytes, size);

    /* The file: the documented header, then the CUBIN. */
    char path[PATH_MAX];
    file_of(f->dir, "sm_80", key, path);
    unsigned char *file = slurp(path, &file_size);
    assert_int_equal(file_size, HEADER + size);
    assert_memory_equal(file, "DNNJITCB", 8);
    assert_int_equal(le64(file + 16), size);
    assert_int_equal(le64(file + 24), XXH64(first, size, 0));
    assert_int_equal(le64(file + 32), key.low);
    assert_int_equal(le64(file + 40), key.high);
    assert_memory_equal(file + HEADER, first, size);
    free(file);

    void *second = get(jt_axpy_source, "sm_80", NULL, &size2, &key2);
    assert_int_equal(stats().memory_hits, 1);
    assert_int_equal(size2, size);
    assert_memory_equal(second, first, size);
    free(second);

    dnnjit__jit_cache_clear_memory();
    assert_int_equal(stats().memory_entries, 0);
    void *third = get(jt_axpy_source, "sm_80", NULL, &size2, &key2);
    s = stats();
    assert_int_equal(s.disk_hits, 1);
    assert_int_equal(s.compiles, 1);
    assert_int_equal(s.memory_entries, 1);
    assert_int_equal(size2, size);
    assert_memory_equal(third, first, size);
    free(third);
    free(first);
}

static void creates_missing_folders(void **state)
{
    fixture_t *f = *state;
    char nested[PATH_MAX];
    pathf(nested, "%s/a/b/c", f->dir);
    setenv("DNNJIT_CACHE_DIR", nested, 1);
    size_t size;
    dnnjit__jit_key_t key;
    free(get(jt_axpy_source, "sm_90a", NULL, &size, &key));
    char path[PATH_MAX];
    file_of(nested, "sm_90a", key, path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal((size_t)st.st_size, HEADER + size);
}

static int child_fresh_lookup(void)
{
    void *cubin = NULL;
    size_t size = 0;
    JT_CHILD_CHECK(dnnjit__jit_get_cubin(jt_axpy_source, "kernel.cu", "sm_80", NULL, &cubin, &size, NULL) ==
                       DNNJIT_STATUS_SUCCESS,
                   2);
    dnnjit__jit_cache_stats_t s = stats();
    JT_CHILD_CHECK(s.disk_hits == 1 && s.compiles == 0 && s.misses == 0 && s.bad_files == 0, 3);
    JT_CHILD_CHECK(size > 4 && memcmp(cubin, "\x7f" "ELF", 4) == 0, 4);
    free(cubin);
    return 0;
}

static void fresh_process_compiles_nothing(void **state)
{
    (void)state;
    size_t size;
    free(get(jt_axpy_source, "sm_80", NULL, &size, NULL));
    assert_int_equal(stats().compiles, 1);
    assert_int_equal(jt_run_child((const char *[]){"fresh-lookup", NULL}, -1), 0);
}

static void cache_off_keeps_memory_only(void **state)
{
    fixture_t *f = *state;
    setenv("DNNJIT_CACHE", "0", 1);
    size_t size;
    free(get(jt_axpy_source, "sm_80", NULL, &size, NULL));
    free(get(jt_axpy_source, "sm_80", NULL, &size, NULL));
    dnnjit__jit_cache_stats_t s = stats();
    assert_int_equal(s.compiles, 1);
    assert_int_equal(s.memory_hits, 1);
    assert_int_equal(s.disk_writes + s.disk_write_failures, 0);
    int cubins;
    assert_int_equal(count_entries(f->dir, "", &cubins), 0);
    char dir[PATH_MAX];
    JT_FAILS(dnnjit__jit_cache_dir(dir, sizeof dir), DNNJIT_STATUS_NOT_FOUND, "DNNJIT_CACHE=0");
    unsetenv("DNNJIT_CACHE");
}

/* ---- damaged files ---- */

typedef enum { FLIP_PAYLOAD, FLIP_CHECKSUM, FLIP_KEY, WRONG_MAGIC, WRONG_FORMAT, WRONG_LENGTH, TRUNCATED,
               SHORTER_THAN_HEADER, EMPTY, EXTENDED, DAMAGE_KINDS } damage_t;

static void damage(const char *path, damage_t kind, size_t payload)
{
    size_t n;
    unsigned char *b = slurp(path, &n);
    switch (kind) {
    case FLIP_PAYLOAD: b[HEADER + payload / 2] ^= 0x10; break;
    case FLIP_CHECKSUM: b[24] ^= 0x01; break;
    case FLIP_KEY: b[40] ^= 0x80; break;
    case WRONG_MAGIC: memcpy(b, "NOTCUBIN", 8); break;
    case WRONG_FORMAT: b[8] ^= 0x02; break;
    case WRONG_LENGTH: b[16] ^= 0x04; break;
    case TRUNCATED: n -= 7; break;
    case SHORTER_THAN_HEADER: n = 20; break;
    case EMPTY: n = 0; break;
    case EXTENDED: break;
    case DAMAGE_KINDS: fail();
    }
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, n, fp), n);
    if (kind == EXTENDED)
        fputs("xyz", fp);
    fclose(fp);
    free(b);
}

static void damaged_files_are_discarded_and_rebuilt(void **state)
{
    fixture_t *f = *state;
    size_t size, size2;
    dnnjit__jit_key_t key;
    void *good = get(jt_axpy_source, "sm_90a", NULL, &size, &key);
    char path[PATH_MAX];
    file_of(f->dir, "sm_90a", key, path);
    for (int kind = 0; kind < DAMAGE_KINDS; kind++) {
        dnnjit__jit_cache_clear_memory();
        dnnjit__jit_cache_reset_stats();
        damage(path, (damage_t)kind, size);
        void *again = get(jt_axpy_source, "sm_90a", NULL, &size2, NULL);
        dnnjit__jit_cache_stats_t s = stats();
        if (s.bad_files != 1 || s.compiles != 1 || s.disk_hits != 0)
            fail_msg("damage %d: bad files %llu, compiles %llu, disk hits %llu", kind,
                     (unsigned long long)s.bad_files, (unsigned long long)s.compiles,
                     (unsigned long long)s.disk_hits);
        assert_int_equal(size2, size);
        assert_memory_equal(again, good, size);
        free(again);
        /* Rebuilt: a cold lookup now reads it from disk. */
        dnnjit__jit_cache_clear_memory();
        free(get(jt_axpy_source, "sm_90a", NULL, &size2, NULL));
        assert_int_equal(stats().disk_hits, 1);
        assert_int_equal(stats().bad_files, 1);
    }
    free(good);
}

/* Every header byte with one bit flipped, bits flipped across the payload, truncations at
 * and around the header's end, a file one byte too long and one of zeros (what a crash
 * can leave of a file whose data never reached the disk): each is caught and rebuilt. */
static void every_truncation_and_bit_flip_is_caught(void **state)
{
    fixture_t *f = *state;
    size_t size, n;
    dnnjit__jit_key_t key;
    free(get(jt_axpy_source, "sm_90a", NULL, &size, &key));
    char path[PATH_MAX];
    file_of(f->dir, "sm_90a", key, path);
    unsigned char *good = slurp(path, &n);
    assert_true(file_is_whole(good, n, key));
    unsigned char *bad = malloc(n + 1);
    assert_non_null(bad);
    int cases = 0;
    for (size_t at = 0; at < n; at += at < HEADER ? 1 : (n - HEADER) / 32) {
        memcpy(bad, good, n);
        bad[at] ^= (unsigned char)(1u << (at % 8));
        put_file(path, bad, n);
        expect_rebuilt(jt_axpy_source, "sm_90a", good + HEADER, size);
        cases++;
    }
    const size_t lengths[] = {0, 1, 8, HEADER - 1, HEADER, HEADER + 1, HEADER + size / 2, n - 1};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++, cases++) {
        put_file(path, good, lengths[i]);
        expect_rebuilt(jt_axpy_source, "sm_90a", good + HEADER, size);
    }
    memcpy(bad, good, n);
    bad[n] = 0;
    put_file(path, bad, n + 1);
    expect_rebuilt(jt_axpy_source, "sm_90a", good + HEADER, size);
    memset(bad, 0, n);
    put_file(path, bad, n);
    expect_rebuilt(jt_axpy_source, "sm_90a", good + HEADER, size);
    cases += 2;
    /* The last rebuild left the file whole again. */
    unsigned char *after = slurp(path, &n);
    assert_true(file_is_whole(after, n, key));
    print_message("%d damaged files caught\n", cases);
    assert_true(cases >= 48 + 32 + 10);
    free(after);
    free(bad);
    free(good);
}

static void bad_file_is_reported_when_logging(void **state)
{
    fixture_t *f = *state;
    size_t size;
    dnnjit__jit_key_t key;
    free(get(jt_axpy_source, "sm_80", NULL, &size, &key));
    char path[PATH_MAX], log[PATH_MAX];
    file_of(f->dir, "sm_80", key, path);
    damage(path, WRONG_MAGIC, size);
    dnnjit__jit_cache_clear_memory();
    pathf(log, "%s/stderr.txt", f->dir);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    setenv("DNNJIT_LOG", "1", 1);
    /* The child finds the damaged file; its stderr goes to the log file. */
    assert_int_equal(jt_run_child((const char *[]){"cold-lookup", NULL}, fd), 0);
    unsetenv("DNNJIT_LOG");
    close(fd);
    size_t n;
    char *text = (char *)slurp(log, &n);
    text[n] = '\0';
    assert_non_null(strstr(text, "dnnjit: kernel cache: discarded "));
    assert_non_null(strstr(text, "wrong magic"));
    free(text);
}

static int child_cold_lookup(void)
{
    void *cubin = NULL;
    size_t size = 0;
    JT_CHILD_CHECK(dnnjit__jit_get_cubin(jt_axpy_source, "kernel.cu", "sm_80", NULL, &cubin, &size, NULL) ==
                       DNNJIT_STATUS_SUCCESS,
                   2);
    JT_CHILD_CHECK(stats().bad_files == 1 && stats().compiles == 1, 3);
    free(cubin);
    return 0;
}

/* ---- concurrency ---- */

/* A kernel no other test compiles, so that each writer starts with nothing on disk. */
static const char concurrent_source[] =
    "extern \"C\" __global__ void racing(int *p) { atomicAdd(p, 1); }\n";

static int child_concurrent(const char *fd_text)
{
    char go;
    /* Wait for the parent's start signal so that all writers compile at once. */
    JT_CHILD_CHECK(read(atoi(fd_text), &go, 1) == 1, 2);
    void *cubin = NULL;
    size_t size = 0;
    JT_CHILD_CHECK(dnnjit__jit_get_cubin(concurrent_source, "kernel.cu", "sm_90a", NULL, &cubin, &size, NULL) ==
                       DNNJIT_STATUS_SUCCESS,
                   3);
    JT_CHILD_CHECK(stats().bad_files == 0, 4);
    free(cubin);
    return 0;
}

#define WRITERS 16

/* Sixteen processes compile one kernel at once: all succeed and leave one whole file (no
 * temporary file) holding exactly what NVRTC makes. */
static void concurrent_writers_leave_one_good_file(void **state)
{
    fixture_t *f = *state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    char fd_text[16];
    snprintf(fd_text, sizeof fd_text, "%d", p[0]);
    pid_t pids[WRITERS];
    for (int i = 0; i < WRITERS; i++)
        pids[i] = jt_spawn_child((const char *[]){"concurrent", fd_text, NULL}, -1);
    char go[WRITERS];
    memset(go, 'g', sizeof go);
    assert_int_equal(write(p[1], go, sizeof go), sizeof go);
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(jt_wait_child(pids[i]), 0);
    close(p[0]);
    close(p[1]);

    char folder[PATH_MAX];
    pathf(folder, "%s/sm_90a", f->dir);
    int cubins;
    assert_int_equal(count_entries(folder, "", &cubins), 1);
    assert_int_equal(count_entries(folder, ".cubin", &cubins), 1);
    assert_int_equal(cubins, 1);
    size_t size, ref_size, n;
    dnnjit__jit_key_t key;
    void *cubin = get(concurrent_source, "sm_90a", NULL, &size, &key);
    jt_assert_cubin(cubin, size, "racing");
    assert_int_equal(stats().disk_hits, 1);
    assert_int_equal(stats().bad_files, 0);
    void *ref = reference_cubin(concurrent_source, "sm_90a", &ref_size);
    assert_int_equal(size, ref_size);
    assert_memory_equal(cubin, ref, size);
    char path[PATH_MAX];
    file_of(f->dir, "sm_90a", key, path);
    unsigned char *file = slurp(path, &n);
    assert_true(file_is_whole(file, n, key));
    free(file);
    free(ref);
    free(cubin);
}

/* ---- writers killed at random points ---- */

#define KILL_ROUNDS 100
#define KILL_KERNELS 4

/* Kernels with a 1 MiB initialised global, so that writing one takes long enough (a few
 * milliseconds) for kills to land in the middle of it. */
static void big_source(int i, char *buf, size_t size)
{
    snprintf(buf, size,
             "__device__ int big%d[262144] = {%d};\n"
             "extern \"C\" __global__ void big_kernel%d(int *p) { p[0] += big%d[p[1]]; }\n",
             i, i + 1, i, i);
}

/* Writes the big kernels' files for ever, deleting each before it is written again so
 * that every lookup compiles and writes; the parent kills it. */
static int child_writer(void)
{
    /* Should the test die before it kills this child, the child must not write on. */
    JT_CHILD_CHECK(prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, 5);
    for (int i = 0;; i = (i + 1) % KILL_KERNELS) {
        char source[512], path[PATH_MAX], dir[PATH_MAX];
        big_source(i, source, sizeof source);
        dnnjit__jit_key_t key;
        JT_CHILD_CHECK(dnnjit__jit_key(source, "kernel.cu", "sm_90a", NULL, &key) == DNNJIT_STATUS_SUCCESS, 2);
        JT_CHILD_CHECK(dnnjit__jit_cache_dir(dir, sizeof dir) == DNNJIT_STATUS_SUCCESS, 3);
        file_of(dir, "sm_90a", key, path);
        unlink(path);
        dnnjit__jit_cache_clear_memory();
        void *cubin = NULL;
        size_t size;
        JT_CHILD_CHECK(dnnjit__jit_get_cubin(source, "kernel.cu", "sm_90a", NULL, &cubin, &size, NULL) ==
                           DNNJIT_STATUS_SUCCESS,
                       4);
        free(cubin);
    }
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* Waits (at most 30 s) until a temporary file appears in the folder `watch` watches, that
 * is until a write has begun; false if none does. */
static bool wait_for_write(int watch)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        struct pollfd p = {watch, POLLIN, 0};
        ssize_t n = poll(&p, 1, 30000) == 1 ? read(watch, buf, sizeof buf) : -1;
        if (n <= 0)
            return false;
        for (char *e = buf; e < buf + n; e += sizeof(struct inotify_event) + ((struct inotify_event *)e)->len)
            if (((struct inotify_event *)e)->len && strstr(((struct inotify_event *)e)->name, ".tmp."))
                return true;
    }
}

/* A writer killed with SIGKILL, 100 times: in even rounds at a random moment of its life,
 * in odd ones at a random moment within 8 ms of starting a file (which takes it some 5 ms),
 * so that many kills land mid-write. Every file left is either whole with the right CUBIN,
 * or is rejected and rebuilt by the next lookup; temporary files left are never read.
 * DNNJIT_FAULT_SEED repeats a run's kill times. */
static void killed_writers_leave_no_bad_entry(void **state)
{
    fixture_t *f = *state;
    const char *seed_text = getenv("DNNJIT_FAULT_SEED");
    unsigned seed = seed_text ? (unsigned)strtoul(seed_text, NULL, 0) : (unsigned)time(NULL);
    srand(seed);
    char source[KILL_KERNELS][512], path[KILL_KERNELS][PATH_MAX], folder[PATH_MAX];
    void *ref[KILL_KERNELS];
    size_t ref_size[KILL_KERNELS];
    dnnjit__jit_key_t key[KILL_KERNELS];
    for (int i = 0; i < KILL_KERNELS; i++) {
        big_source(i, source[i], sizeof source[i]);
        ref[i] = reference_cubin(source[i], "sm_90a", &ref_size[i]);
        JT_OK(dnnjit__jit_key(source[i], "kernel.cu", "sm_90a", NULL, &key[i]));
        file_of(f->dir, "sm_90a", key[i], path[i]);
    }
    pathf(folder, "%s/sm_90a", f->dir);
    assert_int_equal(mkdir(folder, 0755), 0);
    int watch = inotify_init1(IN_CLOEXEC);
    assert_true(watch >= 0 && inotify_add_watch(watch, folder, IN_CREATE) >= 0);
    int whole = 0, rejected = 0, temporary = 0;
    for (int round = 0; round < KILL_ROUNDS; round++) {
        pid_t pid = jt_spawn_child((const char *[]){"writer", NULL}, -1);
        bool began = true;
        if (round % 2) {
            began = wait_for_write(watch);
            struct timespec t = {0, (rand() % 8000) * 1000L};
            nanosleep(&t, NULL);
        } else {
            /* The child needs some 150 ms to write its first kernel, as long for each next. */
            sleep_ms(rand() % 500);
        }
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!began || !WIFSIGNALED(status))
            fail_msg("round %d: the writer began no write within 30 s or exited by itself (status %d)", round, status);
        for (int i = 0; i < KILL_KERNELS; i++) {
            struct stat st;
            if (stat(path[i], &st) != 0)
                continue;
            size_t n;
            unsigned char *file = slurp(path[i], &n);
            if (file_is_whole(file, n, key[i])) {
                /* A whole file is used as it is: it must hold the right CUBIN. */
                if (n - HEADER != ref_size[i] || memcmp(file + HEADER, ref[i], ref_size[i]) != 0)
                    fail_msg("round %d (seed %u): a whole file holds the wrong CUBIN", round, seed);
                whole++;
            } else {
                expect_rebuilt(source[i], "sm_90a", ref[i], ref_size[i]);
                rejected++;
            }
            free(file);
        }
        int cubins, all = count_entries(folder, ".cubin", &cubins);
        temporary = all - cubins;
        /* Events of this round's writes must not end the next round's wait. */
        while (poll(&(struct pollfd){watch, POLLIN, 0}, 1, 0) == 1) {
            char drain[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
            assert_true(read(watch, drain, sizeof drain) > 0);
        }
    }
    close(watch);
    print_message("seed %u: %d kills; %d whole files checked, %d damaged files rejected and rebuilt, %d temporary "
                  "files left by interrupted writes\n",
                  seed, KILL_ROUNDS, whole, rejected, temporary);
    /* Finally, a cold lookup of each kernel gives the right CUBIN. */
    for (int i = 0; i < KILL_KERNELS; i++) {
        dnnjit__jit_cache_clear_memory();
        size_t size;
        void *cubin = get(source[i], "sm_90a", NULL, &size, NULL);
        assert_int_equal(size, ref_size[i]);
        assert_memory_equal(cubin, ref[i], size);
        free(cubin);
        free(ref[i]);
    }
}

typedef struct {
    void *cubin;
    size_t size;
    dnnjit_status_t status;
} thread_result_t;

static void *lookup_thread(void *arg)
{
    thread_result_t *r = arg;
    r->status = dnnjit__jit_get_cubin(concurrent_source, "kernel.cu", "sm_80", NULL, &r->cubin, &r->size, NULL);
    return NULL;
}

static void concurrent_threads_share_one_entry(void **state)
{
    (void)state;
    pthread_t t[4];
    thread_result_t r[4] = {{0}};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, lookup_thread, &r[i]), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r[i].status, DNNJIT_STATUS_SUCCESS);
        assert_int_equal(r[i].size, r[0].size);
        assert_memory_equal(r[i].cubin, r[0].cubin, r[0].size);
    }
    for (int i = 0; i < 4; i++)
        free(r[i].cubin);
    dnnjit__jit_cache_stats_t s = stats();
    assert_int_equal(s.memory_entries, 1);
    assert_int_equal(s.memory_hits + s.disk_hits + s.misses, 4);
    assert_true(s.compiles >= 1 && s.compiles <= 4);
}

/* ---- unusable folders ---- */

static int child_read_only(void)
{
    /* Root writes anywhere, so the check runs as the unprivileged "nobody". */
    if (geteuid() == 0)
        JT_CHILD_CHECK(setgid(65534) == 0 && setuid(65534) == 0, 2);
    size_t size;
    void *a = NULL, *b = NULL, *c = NULL;
    dnnjit__compile_options_t headers = {.cuda_headers = true};
    JT_CHILD_CHECK(dnnjit__jit_get_cubin(jt_axpy_source, "kernel.cu", "sm_80", NULL, &a, &size, NULL) == 0, 3);
    JT_CHILD_CHECK(dnnjit__jit_get_cubin(jt_half_source, "kernel.cu", "sm_80", &headers, &b, &size, NULL) == 0, 4);
    JT_CHILD_CHECK(dnnjit__jit_get_cubin(jt_axpy_source, "kernel.cu", "sm_80", NULL, &c, &size, NULL) == 0, 5);
    dnnjit__jit_cache_stats_t s = stats();
    JT_CHILD_CHECK(s.compiles == 2 && s.memory_hits == 1, 6);
    JT_CHILD_CHECK(s.disk_writes == 0 && s.disk_write_failures == 2, 7);
    free(a);
    free(b);
    free(c);
    return 0;
}

/* Runs the "read-only" child (two kernels compiled, one looked up again, no file
 * written) with logging on, and checks its whole log: one line, the warning that the disk
 * cache is unusable, naming `where`. */
static void expect_one_warning(const char *where)
{
    char log[PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    pathf(log, "%s/dnnjit-ro-log-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    setenv("DNNJIT_LOG", "1", 1);
    int rc = jt_run_child((const char *[]){"read-only", NULL}, fd);
    unsetenv("DNNJIT_LOG");
    close(fd);
    size_t n;
    char *text = (char *)slurp(log, &n);
    text[n] = '\0';
    unlink(log);
    if (rc != 0)
        fail_msg("child exited with %d: %s", rc, text);
    /* Two failed writes, one warning, and nothing else. */
    const char *newline = strchr(text, '\n');
    if (!newline || newline[1] != '\0' || !strstr(text, "this kernel is cached in memory only") || !strstr(text, where))
        fail_msg("the log is not one warning naming %s:\n%s", where, text);
    free(text);
}

static void read_only_folder_works_from_memory(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(chmod(f->dir, 0555), 0);
    expect_one_warning(f->dir);
    int cubins;
    assert_int_equal(count_entries(f->dir, "", &cubins), 0);
}

static void folder_under_a_file_works_from_memory(void **state)
{
    fixture_t *f = *state;
    char file[PATH_MAX], bad[PATH_MAX];
    pathf(file, "%s/plain-file", f->dir);
    pathf(bad, "%s/cache", file);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    setenv("DNNJIT_CACHE_DIR", bad, 1);
    size_t size;
    free(get(jt_axpy_source, "sm_80", NULL, &size, NULL));
    free(get(jt_axpy_source, "sm_80", NULL, &size, NULL));
    dnnjit__jit_cache_stats_t s = stats();
    assert_int_equal(s.compiles, 1);
    assert_int_equal(s.memory_hits, 1);
    assert_int_equal(s.disk_write_failures, 1);
    /* Listing and clearing a folder that cannot exist find nothing to do. */
    uint64_t removed = 99;
    JT_OK(dnnjit__jit_cache_clear_disk(&removed));
    assert_int_equal(removed, 0);
    /* A fresh process says so once. */
    expect_one_warning(bad);
}

/* The cache folder deleted while the process runs is made again by the next write, with
 * no warning: nothing is wrong with it. */
static void folder_removed_while_running_is_made_again(void **state)
{
    fixture_t *f = *state;
    char nested[PATH_MAX];
    pathf(nested, "%s/gone", f->dir);
    setenv("DNNJIT_CACHE_DIR", nested, 1);
    size_t size;
    dnnjit__jit_key_t key;
    free(get(jt_axpy_source, "sm_80", NULL, &size, &key));
    char path[PATH_MAX], folder[PATH_MAX];
    file_of(nested, "sm_80", key, path);
    pathf(folder, "%s/sm_80", nested);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(folder), 0);
    assert_int_equal(rmdir(nested), 0);
    free(get(jt_half_source, "sm_80", &(dnnjit__compile_options_t){.cuda_headers = true}, &size, NULL));
    dnnjit__jit_cache_stats_t s = stats();
    assert_int_equal(s.disk_writes, 2);
    assert_int_equal(s.disk_write_failures, 0);
    int cubins;
    assert_int_equal(count_entries(folder, ".cubin", &cubins), 1);
    assert_int_equal(cubins, 1);
}

/* Something other than a file where a cache file belongs: a folder, or a FIFO, which
 * would block a plain open until a writer came. The lookup neither hangs nor fails: it
 * compiles and keeps the CUBIN in memory. Runs in a child so that a hang fails the test. */
static int child_not_a_file(void)
{
    void *cubin = NULL;
    size_t size = 0;
    JT_CHILD_CHECK(dnnjit__jit_get_cubin(jt_axpy_source, "kernel.cu", "sm_80", NULL, &cubin, &size, NULL) ==
                       DNNJIT_STATUS_SUCCESS,
                   2);
    dnnjit__jit_cache_stats_t s = stats();
    JT_CHILD_CHECK(s.bad_files == 1 && s.compiles == 1 && s.disk_hits == 0, 3);
    free(cubin);
    return 0;
}

/* Waits for a child at most `seconds`, then kills it; -2 when it had to be killed. */
static int wait_child_for(pid_t pid, int seconds)
{
    for (int i = 0; i < seconds * 10; i++) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        assert_true(r >= 0);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        sleep_ms(100);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -2;
}

static void not_a_file_where_a_file_belongs(void **state)
{
    fixture_t *f = *state;
    dnnjit__jit_key_t key;
    JT_OK(dnnjit__jit_key(jt_axpy_source, "kernel.cu", "sm_80", NULL, &key));
    char folder[PATH_MAX], path[PATH_MAX];
    pathf(folder, "%s/sm_80", f->dir);
    file_of(f->dir, "sm_80", key, path);
    assert_int_equal(mkdir(folder, 0755), 0);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(wait_child_for(jt_spawn_child((const char *[]){"not-a-file", NULL}, -1), 30), 0);
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_int_equal(wait_child_for(jt_spawn_child((const char *[]){"not-a-file", NULL}, -1), 30), 0);
    /* The FIFO was discarded and a whole file written in its place. */
    size_t n;
    unsigned char *file = slurp(path, &n);
    assert_true(file_is_whole(file, n, key));
    free(file);
}

/* ---- folder, listing, clearing ---- */

static void folder_follows_the_environment(void **state)
{
    fixture_t *f = *state;
    char dir[PATH_MAX], home[PATH_MAX];
    const char *old_home = getenv("HOME");
    const char *old_xdg = getenv("XDG_CACHE_HOME");
    snprintf(home, sizeof home, "%s", old_home ? old_home : "");
    char xdg[PATH_MAX];
    snprintf(xdg, sizeof xdg, "%s", old_xdg ? old_xdg : "");

    JT_OK(dnnjit__jit_cache_dir(dir, sizeof dir));
    assert_string_equal(dir, f->dir);
    unsetenv("DNNJIT_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
    JT_OK(dnnjit__jit_cache_dir(dir, sizeof dir));
    assert_string_equal(dir, "/xdg/cache/dnnjit");
    setenv("XDG_CACHE_HOME", "relative/ignored", 1);
    setenv("HOME", "/home/someone", 1);
    JT_OK(dnnjit__jit_cache_dir(dir, sizeof dir));
    assert_string_equal(dir, "/home/someone/.cache/dnnjit");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    JT_FAILS(dnnjit__jit_cache_dir(dir, sizeof dir), DNNJIT_STATUS_NOT_FOUND, "HOME");
    setenv("DNNJIT_CACHE_DIR", f->dir, 1);
    JT_FAILS(dnnjit__jit_cache_dir(dir, 4), DNNJIT_STATUS_NOT_FOUND, "too long");

    if (*home)
        setenv("HOME", home, 1);
    if (*xdg)
        setenv("XDG_CACHE_HOME", xdg, 1);
}

typedef struct {
    int count;
    dnnjit__jit_cache_file_t files[8];
} listing_t;

static void collect(const dnnjit__jit_cache_file_t *file, void *user)
{
    listing_t *l = user;
    if (l->count < 8)
        l->files[l->count] = *file;
    l->count++;
}

static const dnnjit__jit_cache_file_t *find_listed(const listing_t *l, const char *arch, dnnjit__jit_key_t key)
{
    char hex[DNNJIT__KEY_HEX_LEN];
    dnnjit__jit_key_hex(key, hex);
    for (int i = 0; i < l->count && i < 8; i++)
        if (strcmp(l->files[i].arch, arch) == 0 && strcmp(l->files[i].key, hex) == 0)
            return &l->files[i];
    return NULL;
}

static void touch(const char *dir, const char *name)
{
    char path[PATH_MAX];
    pathf(path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("not the cache's", fp);
    fclose(fp);
}

/* Sets a file's times `seconds` into the past. */
static void age(const char *dir, const char *name, long seconds)
{
    char path[PATH_MAX];
    pathf(path, "%s/%s", dir, name);
    struct timespec t[2];
    assert_int_equal(clock_gettime(CLOCK_REALTIME, &t[0]), 0);
    t[0].tv_sec -= seconds;
    t[1] = t[0];
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static void list_and_clear(void **state)
{
    fixture_t *f = *state;
    size_t s1, s2, s3;
    dnnjit__jit_key_t k1, k2, k3;
    dnnjit__compile_options_t headers = {.cuda_headers = true};
    free(get(jt_axpy_source, "sm_80", NULL, &s1, &k1));
    free(get(jt_half_source, "sm_80", &headers, &s2, &k2));
    free(get(jt_axpy_source, "sm_90a", NULL, &s3, &k3));
    char sm80[PATH_MAX];
    pathf(sm80, "%s/sm_80", f->dir);
    /* Files the cache did not write stay. A temp file untouched for ten minutes is the
     * leftover of a writer that died, which is the cache's to remove; a younger one may be
     * a write in progress, and stays. */
    touch(f->dir, "notes.txt");
    touch(sm80, "notes.txt");
    touch(sm80, "0123456789abcdef0123456789abcdef.tmp.a1B2c3");
    age(sm80, "0123456789abcdef0123456789abcdef.tmp.a1B2c3", 601);
    touch(sm80, "0123456789abcdef0123456789abcdef.tmp.d4E5f6");
    age(sm80, "0123456789abcdef0123456789abcdef.tmp.d4E5f6", 300);
    dnnjit__jit_cache_leftovers_t left;
    JT_OK(dnnjit__jit_cache_leftovers(&left));
    assert_int_equal(left.files, 1);
    assert_int_equal(left.bytes, strlen("not the cache's"));

    listing_t l = {0};
    JT_OK(dnnjit__jit_cache_list(collect, &l));
    assert_int_equal(l.count, 3);
    const dnnjit__jit_cache_file_t *e1 = find_listed(&l, "sm_80", k1), *e2 = find_listed(&l, "sm_80", k2),
                                   *e3 = find_listed(&l, "sm_90a", k3);
    assert_non_null(e1);
    assert_non_null(e2);
    assert_non_null(e3);
    assert_int_equal(e1->bytes, HEADER + s1);
    assert_int_equal(e2->bytes, HEADER + s2);
    assert_int_equal(e3->bytes, HEADER + s3);
    assert_true(e1->mtime > 0);

    uint64_t removed = 0;
    JT_OK(dnnjit__jit_cache_clear_disk(&removed));
    assert_int_equal(removed, 4);
    l.count = 0;
    JT_OK(dnnjit__jit_cache_list(collect, &l));
    assert_int_equal(l.count, 0);
    JT_OK(dnnjit__jit_cache_leftovers(&left));
    assert_int_equal(left.files, 0);
    int cubins;
    assert_int_equal(count_entries(f->dir, "", &cubins), 2); /* notes.txt and sm_80 */
    assert_int_equal(count_entries(sm80, ".tmp.d4E5f6", &cubins), 2); /* notes.txt, the young temp file */
    assert_int_equal(cubins, 1);

    /* Memory still holds them; the disk tier is rebuilt on a cold lookup. */
    free(get(jt_axpy_source, "sm_80", NULL, &s1, NULL));
    assert_int_equal(stats().memory_hits, 1);
    JT_FAILS(dnnjit__jit_cache_list(NULL, NULL), DNNJIT_STATUS_BAD_PARAM, "visit");
}

/* Symbolic links in the cache folder are neither followed nor removed, so that a clear
 * never deletes anything outside the folder; a folder the user made stays even when empty. */
static void clear_stays_inside_the_cache_folder(void **state)
{
    fixture_t *f = *state;
    char root[PATH_MAX], outside[PATH_MAX], link[PATH_MAX], sm90[PATH_MAX], sm75[PATH_MAX], target[PATH_MAX];
    pathf(root, "%s/cache", f->dir);
    pathf(outside, "%s/outside", f->dir);
    pathf(link, "%s/sm_80", root);
    pathf(sm90, "%s/sm_90a", root);
    pathf(sm75, "%s/sm_75", root);
    setenv("DNNJIT_CACHE_DIR", root, 1);
    size_t size;
    dnnjit__jit_key_t key;
    free(get(jt_axpy_source, "sm_90a", NULL, &size, &key));
    /* Outside: files named as the cache names its own, one of them an old temp file. */
    assert_int_equal(mkdir(outside, 0755), 0);
    touch(outside, "0123456789abcdef0123456789abcdef.cubin");
    touch(outside, "0123456789abcdef0123456789abcdef.tmp.a1B2c3");
    age(outside, "0123456789abcdef0123456789abcdef.tmp.a1B2c3", 3600);
    touch(outside, "precious");
    /* Inside: an architecture folder that is a link to it, a link named like a CUBIN in a
     * real folder, and an empty folder of the user's. */
    assert_int_equal(symlink(outside, link), 0);
    pathf(target, "%s/precious", outside);
    char named[PATH_MAX];
    pathf(named, "%s/fedcba9876543210fedcba9876543210.cubin", sm90);
    assert_int_equal(symlink(target, named), 0);
    assert_int_equal(mkdir(sm75, 0755), 0);

    listing_t l = {0};
    JT_OK(dnnjit__jit_cache_list(collect, &l));
    assert_int_equal(l.count, 1);
    assert_non_null(find_listed(&l, "sm_90a", key));
    uint64_t removed = 0;
    JT_OK(dnnjit__jit_cache_clear_disk(&removed));
    assert_int_equal(removed, 1);
    int n;
    assert_int_equal(count_entries(outside, "", &n), 3);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(named, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(sm75, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
}

/* ---- a cache clear racing a writer ---- */

/* The library is linked into this test statically, so its calls to mkstemp and rename come
 * here: a test can then make another process's `cache clear` happen exactly between the
 * writer's making its folder and its mkstemp, or take the temporary file away before the
 * rename. Each hook runs once. */
static void (*before_mkstemp)(const char *template);
static void (*before_rename)(const char *from);

static void *real_function(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    assert_non_null(p);
    return p;
}

int mkstemp(char *template)
{
    int (*real)(char *);
    void *p = real_function("mkstemp");
    memcpy(&real, &p, sizeof p);
    void (*hook)(const char *) = before_mkstemp;
    before_mkstemp = NULL;
    if (hook)
        hook(template);
    return real(template);
}

int rename(const char *from, const char *to)
{
    int (*real)(const char *, const char *);
    void *p = real_function("rename");
    memcpy(&real, &p, sizeof p);
    void (*hook)(const char *) = before_rename;
    before_rename = NULL;
    if (hook)
        hook(from);
    return real(from, to);
}

static uint64_t cleared;

static void clear_the_cache(const char *template)
{
    (void)template;
    JT_OK(dnnjit__jit_cache_clear_disk(&cleared));
}

static void remove_the_temp_file(const char *from)
{
    assert_int_equal(unlink(from), 0);
}

/* A write that meets ENOENT, because a clear removed the folder it had just made (the clear
 * removes folders it empties) or the temporary file went, is made again: the CUBIN is on
 * disk afterwards and no failure is counted. */
static void writer_survives_a_clear(void **state)
{
    fixture_t *f = *state;
    size_t size;
    dnnjit__jit_key_t first, second, third;
    free(get(jt_axpy_source, "sm_80", NULL, &size, &first));
    before_mkstemp = clear_the_cache;
    free(get(jt_half_source, "sm_80", &(dnnjit__compile_options_t){.cuda_headers = true}, &size, &second));
    assert_null(before_mkstemp);
    assert_int_equal(cleared, 1); /* the first kernel's file, and with it the folder */
    before_rename = remove_the_temp_file;
    free(get(concurrent_source, "sm_80", NULL, &size, &third));
    assert_null(before_rename);
    dnnjit__jit_cache_stats_t s = stats();
    assert_int_equal(s.disk_writes, 3);
    assert_int_equal(s.disk_write_failures, 0);
    dnnjit__jit_key_t keys[] = {second, third};
    for (int i = 0; i < 2; i++) {
        char path[PATH_MAX];
        size_t n;
        file_of(f->dir, "sm_80", keys[i], path);
        unsigned char *file = slurp(path, &n);
        assert_true(file_is_whole(file, n, keys[i]));
        free(file);
    }
    int cubins;
    char folder[PATH_MAX];
    pathf(folder, "%s/sm_80", f->dir);
    assert_int_equal(count_entries(folder, ".cubin", &cubins), 2); /* no temporary file left */
    assert_int_equal(cubins, 2);
}

/* ---- objects attached to entries ---- */

static int destroyed;

static void destroy_object(void *object)
{
    destroyed += *(int *)object;
}

/* The entry holds a reference and so does every user; the object goes with the last. */
static void attached_objects_live_until_their_last_reference(void **state)
{
    (void)state;
    size_t size;
    dnnjit__jit_key_t key;
    free(get(jt_axpy_source, "sm_80", NULL, &size, &key));
    int first = 1, second = 10;
    dnnjit__jit_ref_t *a = NULL, *b = NULL, *c = NULL;
    destroyed = 0;
    JT_OK(dnnjit__jit_cache_attach(key, &first, destroy_object, &a));
    assert_ptr_equal(dnnjit__jit_ref_object(a), &first);
    /* A second attach finds the first object; its own stays the caller's. */
    JT_OK(dnnjit__jit_cache_attach(key, &second, destroy_object, &b));
    assert_ptr_equal(dnnjit__jit_ref_object(b), &first);
    assert_ptr_equal(dnnjit__jit_cache_acquire(key), a);
    c = a; /* the reference acquire just took */
    dnnjit__jit_key_t other = {key.low ^ 1, key.high};
    assert_null(dnnjit__jit_cache_acquire(other));
    dnnjit__jit_ref_t *none = a;
    JT_FAILS(dnnjit__jit_cache_attach(other, &second, destroy_object, &none), DNNJIT_STATUS_NOT_FOUND, "no entry");
    assert_null(none);
    assert_int_equal(destroyed, 0);

    /* Clearing drops the entry and its reference only: three users remain. */
    dnnjit__jit_cache_clear_memory();
    assert_null(dnnjit__jit_cache_acquire(key));
    assert_int_equal(destroyed, 0);
    dnnjit__jit_ref_release(a);
    dnnjit__jit_ref_release(b);
    assert_int_equal(destroyed, 0);
    dnnjit__jit_ref_release(c);
    assert_int_equal(destroyed, 1);
    dnnjit__jit_ref_release(NULL);

    /* With no user, clearing destroys it at once. */
    free(get(jt_axpy_source, "sm_80", NULL, &size, &key));
    JT_OK(dnnjit__jit_cache_attach(key, &second, destroy_object, &a));
    dnnjit__jit_ref_release(a);
    assert_int_equal(destroyed, 1);
    dnnjit__jit_cache_clear_memory();
    assert_int_equal(destroyed, 11);
}

/* ---- failures ---- */

static void failures_store_nothing(void **state)
{
    fixture_t *f = *state;
    void *cubin = (void *)1;
    size_t size = 1;
    JT_FAILS(dnnjit__jit_get_cubin("extern \"C\" __global__ void k() { undefined(); }", "bad.cu", "sm_80", NULL,
                                   &cubin, &size, NULL),
             DNNJIT_STATUS_COMPILE_ERROR, "bad.cu(1)");
    assert_null(cubin);
    assert_int_equal(size, 0);
    JT_FAILS(dnnjit__jit_get_cubin(jt_axpy_source, "axpy.cu", "sm80", NULL, &cubin, &size, NULL),
             DNNJIT_STATUS_BAD_PARAM, "\"sm80\" is not a GPU architecture");
    JT_FAILS(dnnjit__jit_get_cubin(NULL, "axpy.cu", "sm_80", NULL, &cubin, &size, NULL), DNNJIT_STATUS_BAD_PARAM,
             "must be set");
    dnnjit__jit_cache_stats_t s = stats();
    assert_int_equal(s.memory_entries, 0);
    assert_int_equal(s.misses, 1);
    int cubins;
    assert_int_equal(count_entries(f->dir, "", &cubins), 0);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--child") == 0) {
        if (strcmp(argv[2], "fresh-lookup") == 0)
            return child_fresh_lookup();
        if (strcmp(argv[2], "cold-lookup") == 0)
            return child_cold_lookup();
        if (strcmp(argv[2], "concurrent") == 0 && argc == 4)
            return child_concurrent(argv[3]);
        if (strcmp(argv[2], "read-only") == 0)
            return child_read_only();
        if (strcmp(argv[2], "writer") == 0)
            return child_writer();
        if (strcmp(argv[2], "not-a-file") == 0)
            return child_not_a_file();
        return 99;
    }
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(keys_change_with_every_input),
        T(live_key_uses_nvrtc_and_dnnjit_versions),
        T(disk_round_trip),
        T(creates_missing_folders),
        T(fresh_process_compiles_nothing),
        T(cache_off_keeps_memory_only),
        T(damaged_files_are_discarded_and_rebuilt),
        T(every_truncation_and_bit_flip_is_caught),
        T(bad_file_is_reported_when_logging),
        T(concurrent_writers_leave_one_good_file),
        T(concurrent_threads_share_one_entry),
        T(killed_writers_leave_no_bad_entry),
        T(read_only_folder_works_from_memory),
        T(folder_under_a_file_works_from_memory),
        T(folder_removed_while_running_is_made_again),
        T(not_a_file_where_a_file_belongs),
        T(folder_follows_the_environment),
        T(list_and_clear),
        T(clear_stays_inside_the_cache_folder),
        T(writer_survives_a_clear),
        T(attached_objects_live_until_their_last_reference),
        T(failures_store_nothing),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
