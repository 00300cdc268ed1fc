/* The kernel cache: CUBINs by key, in memory for the process and on disk across
 * processes. Disk files are only ever created complete (temp file, fsync, rename), so a
 * reader sees a whole file or none; a file that still fails its checks is deleted and
 * the kernel rebuilt. Disk trouble never fails a lookup: the cache then works from
 * memory. */
#define _POSIX_C_SOURCE 200809L

#include "jit/jit.h"
#include "graph/graph.h"

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- keys ---- */

/* Every field is hashed with its length first, so that moving bytes from one field to
 * the next changes the key. */
static void hash_bytes(XXH3_state_t *st, const void *data, size_t len)
{
    uint64_t n = len;
    XXH3_128bits_update(st, &n, sizeof n);
    XXH3_128bits_update(st, data, len);
}

static void hash_string(XXH3_state_t *st, const char *s)
{
    hash_bytes(st, s ? s : "", s ? strlen(s) : 0);
}

static void hash_int(XXH3_state_t *st, int64_t v)
{
    hash_bytes(st, &v, sizeof v);
}

dnnjit__jit_key_t dnnjit__jit_key_compute(const dnnjit__jit_key_input_t *in)
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    hash_string(&st, "dnnjit cubin key 1");
    hash_int(&st, in->dnnjit_version);
    hash_int(&st, in->nvrtc_major);
    hash_int(&st, in->nvrtc_minor);
    hash_string(&st, in->nvrtc_build);
    hash_string(&st, in->arch);
    hash_string(&st, in->name);
    hash_string(&st, in->source);
    hash_int(&st, in->nvrtc_option_count);
    for (int i = 0; i < in->nvrtc_option_count; i++)
        hash_string(&st, in->nvrtc_options[i]);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    return (dnnjit__jit_key_t){.low = h.low64, .high = h.high64};
}

dnnjit__jit_key_t dnnjit__jit_cubin_key(const void *cubin, size_t size, const char *name, const char *arch)
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    /* Another domain string than source keys', so that the two kinds never meet. */
    hash_string(&st, "dnnjit loaded cubin key 1");
    hash_int(&st, DNNJIT_VERSION);
    hash_string(&st, arch);
    hash_string(&st, name);
    hash_bytes(&st, cubin, size);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    return (dnnjit__jit_key_t){.low = h.low64, .high = h.high64};
}

void dnnjit__jit_key_hex(dnnjit__jit_key_t key, char hex[DNNJIT__KEY_HEX_LEN])
{
    snprintf(hex, DNNJIT__KEY_HEX_LEN, "%016llx%016llx", (unsigned long long)key.high, (unsigned long long)key.low);
}

/* The key of a compile with the option list `opts` (dnnjit__nvrtc_options). */
static dnnjit_status_t key_of(const char *source, const char *name, const char *arch,
                              const dnnjit__nvrtc_options_t *opts, dnnjit__jit_key_t *key)
{
    dnnjit__jit_key_input_t in = {.source = source, .name = name, .arch = arch, .nvrtc_options = opts->list,
                                  .nvrtc_option_count = opts->count, .nvrtc_build = dnnjit__nvrtc_identity(),
                                  .dnnjit_version = DNNJIT_VERSION};
    dnnjit_status_t s = dnnjit__nvrtc_version(&in.nvrtc_major, &in.nvrtc_minor);
    if (s == DNNJIT_STATUS_SUCCESS)
        *key = dnnjit__jit_key_compute(&in);
    return s;
}

dnnjit_status_t dnnjit__jit_key(const char *source, const char *name, const char *arch,
                                const dnnjit__compile_options_t *options, dnnjit__jit_key_t *key)
{
    dnnjit__nvrtc_options_t opts;
    dnnjit_status_t s = dnnjit__nvrtc_options(arch, options, &opts);
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    s = key_of(source, name, arch, &opts, key);
    dnnjit__nvrtc_options_free(&opts);
    return s;
}

static bool key_equal(dnnjit__jit_key_t a, dnnjit__jit_key_t b)
{
    return a.low == b.low && a.high == b.high;
}

/* ---- counters ---- */

static struct {
    atomic_uint_fast64_t memory_hits, disk_hits, misses, compiles, bad_files, disk_writes, disk_write_failures;
} counters;

#define COUNT(name) atomic_fetch_add(&counters.name, 1)

/* ---- memory ---- */

struct dnnjit__jit_ref {
    void *object;
    dnnjit__jit_object_destroy_t destroy;
    atomic_size_t count;
};

typedef struct entry {
    dnnjit__jit_key_t key;
    void *cubin;
    size_t size;
    dnnjit__jit_ref_t *object; /* the entry's own reference, or NULL */
    struct entry *next;
} entry_t;

/* A chained hash table under one lock; lookups are short next to a compile or a launch. */
static struct {
    pthread_mutex_t lock;
    entry_t **buckets;
    size_t bucket_count; /* a power of two, or 0 before the first insert */
    size_t count;
    size_t bytes;
} mem = {.lock = PTHREAD_MUTEX_INITIALIZER};

static entry_t **bucket_of(dnnjit__jit_key_t key)
{
    return &mem.buckets[key.low & (mem.bucket_count - 1)];
}

/* Caller holds the lock. */
static entry_t *find_locked(dnnjit__jit_key_t key)
{
    if (!mem.bucket_count)
        return NULL;
    for (entry_t *e = *bucket_of(key); e; e = e->next)
        if (key_equal(e->key, key))
            return e;
    return NULL;
}

/* Doubles the table when it holds more entries than buckets; on OOM keeps the old one,
 * which still works, only with longer chains. Caller holds the lock. */
static void grow_locked(void)
{
    if (mem.count < mem.bucket_count)
        return;
    size_t n = mem.bucket_count ? mem.bucket_count * 2 : 64;
    entry_t **b = calloc(n, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < mem.bucket_count; i++) {
        for (entry_t *e = mem.buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->key.low & (n - 1)];
            b[e->key.low & (n - 1)] = e;
        }
    }
    free(mem.buckets);
    mem.buckets = b;
    mem.bucket_count = n;
}

static void *copy_bytes(const void *p, size_t n)
{
    void *c = malloc(n);
    if (c)
        memcpy(c, p, n);
    return c;
}

/* A copy of the entry's CUBIN, or NULL when absent (or out of memory, which the caller
 * then treats as a miss). */
static void *memory_lookup(dnnjit__jit_key_t key, size_t *size)
{
    pthread_mutex_lock(&mem.lock);
    entry_t *e = find_locked(key);
    void *copy = e ? copy_bytes(e->cubin, e->size) : NULL;
    if (copy)
        *size = e->size;
    pthread_mutex_unlock(&mem.lock);
    return copy;
}

/* Adds an entry holding a copy of the CUBIN. Another thread may have added the same key
 * meanwhile; its entry is as good as ours. False when out of memory kept the key out
 * (for lookups that only means no caching). */
static bool memory_insert(dnnjit__jit_key_t key, const void *cubin, size_t size)
{
    entry_t *e = calloc(1, sizeof *e);
    void *copy = copy_bytes(cubin, size);
    pthread_mutex_lock(&mem.lock);
    grow_locked();
    bool present = mem.bucket_count && find_locked(key);
    if (e && copy && mem.bucket_count && !present) {
        *e = (entry_t){.key = key, .cubin = copy, .size = size, .next = *bucket_of(key)};
        *bucket_of(key) = e;
        mem.count++;
        mem.bytes += size;
        e = NULL;
        copy = NULL;
        present = true;
    }
    pthread_mutex_unlock(&mem.lock);
    free(e);
    free(copy);
    return present;
}

dnnjit_status_t dnnjit__jit_cache_insert(dnnjit__jit_key_t key, const void *cubin, size_t size)
{
    if (memory_insert(key, cubin, size))
        return DNNJIT_STATUS_SUCCESS;
    return dnnjit__fail(NULL, DNNJIT_STATUS_OUT_OF_MEMORY, "kernel cache: no memory for a %zu-byte CUBIN", size);
}

/* Takes one more reference; the caller holds one already (or the lock of the entry that
 * does). */
static dnnjit__jit_ref_t *ref_take(dnnjit__jit_ref_t *ref)
{
    if (ref)
        atomic_fetch_add(&ref->count, 1);
    return ref;
}

void *dnnjit__jit_ref_object(const dnnjit__jit_ref_t *ref)
{
    return ref->object;
}

void dnnjit__jit_ref_release(dnnjit__jit_ref_t *ref)
{
    if (!ref || atomic_fetch_sub(&ref->count, 1) != 1)
        return;
    if (ref->destroy)
        ref->destroy(ref->object);
    free(ref);
}

dnnjit_status_t dnnjit__jit_cache_attach(dnnjit__jit_key_t key, void *object, dnnjit__jit_object_destroy_t destroy,
                                         dnnjit__jit_ref_t **ref)
{
    *ref = NULL;
    dnnjit__jit_ref_t *mine = malloc(sizeof *mine);
    if (!mine)
        return dnnjit__fail(NULL, DNNJIT_STATUS_OUT_OF_MEMORY, "kernel cache: out of memory attaching a module");
    /* Two references when attached: the entry's and the caller's. */
    *mine = (dnnjit__jit_ref_t){.object = object, .destroy = destroy};
    atomic_init(&mine->count, 2);
    pthread_mutex_lock(&mem.lock);
    entry_t *e = find_locked(key);
    if (e && !e->object)
        *ref = e->object = mine;
    else if (e)
        *ref = ref_take(e->object);
    pthread_mutex_unlock(&mem.lock);
    if (*ref != mine)
        free(mine);
    if (!e) {
        char hex[DNNJIT__KEY_HEX_LEN];
        dnnjit__jit_key_hex(key, hex);
        return dnnjit__fail(NULL, DNNJIT_STATUS_NOT_FOUND, "kernel cache: no entry for key %s to attach an object to",
                            hex);
    }
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit__jit_ref_t *dnnjit__jit_cache_acquire(dnnjit__jit_key_t key)
{
    pthread_mutex_lock(&mem.lock);
    entry_t *e = find_locked(key);
    dnnjit__jit_ref_t *ref = e ? ref_take(e->object) : NULL;
    pthread_mutex_unlock(&mem.lock);
    return ref;
}

void dnnjit__jit_cache_clear_memory(void)
{
    pthread_mutex_lock(&mem.lock);
    entry_t **buckets = mem.buckets;
    size_t n = mem.bucket_count;
    mem.buckets = NULL;
    mem.bucket_count = mem.count = mem.bytes = 0;
    pthread_mutex_unlock(&mem.lock);
    /* The releases run outside the lock: a destructor may call into the driver, which may
     * take its own locks. Objects that built kernels still use survive the entry. */
    for (size_t i = 0; i < n; i++) {
        for (entry_t *e = buckets[i], *next; e; e = next) {
            next = e->next;
            dnnjit__jit_ref_release(e->object);
            free(e->cubin);
            free(e);
        }
    }
    free(buckets);
}

void dnnjit__jit_cache_stats(dnnjit__jit_cache_stats_t *st)
{
    *st = (dnnjit__jit_cache_stats_t){
        .memory_hits = atomic_load(&counters.memory_hits),
        .disk_hits = atomic_load(&counters.disk_hits),
        .misses = atomic_load(&counters.misses),
        .compiles = atomic_load(&counters.compiles),
        .bad_files = atomic_load(&counters.bad_files),
        .disk_writes = atomic_load(&counters.disk_writes),
        .disk_write_failures = atomic_load(&counters.disk_write_failures),
    };
    pthread_mutex_lock(&mem.lock);
    st->memory_entries = mem.count;
    st->memory_bytes = mem.bytes;
    pthread_mutex_unlock(&mem.lock);
}

void dnnjit__jit_cache_reset_stats(void)
{
    atomic_store(&counters.memory_hits, 0);
    atomic_store(&counters.disk_hits, 0);
    atomic_store(&counters.misses, 0);
    atomic_store(&counters.compiles, 0);
    atomic_store(&counters.bad_files, 0);
    atomic_store(&counters.disk_writes, 0);
    atomic_store(&counters.disk_write_failures, 0);
}

/* ---- disk ---- */

/* The file layout, all integers little-endian:
 *   0  magic "DNNJITCB"         8 bytes
 *   8  format version           u32
 *  12  dnnjit version           u32
 *  16  payload length           u64
 *  24  XXH64 of the payload     u64 (seed 0)
 *  32  key low, key high        2 x u64
 *  48  payload (the CUBIN) */
#define FILE_MAGIC "DNNJITCB"
#define FILE_FORMAT 1u
#define HEADER_SIZE 48
/* Far above any kernel; a length beyond it is damage, not a CUBIN. */
#define MAX_PAYLOAD ((uint64_t)1 << 30)

static void encode_header(unsigned char h[HEADER_SIZE], dnnjit__jit_key_t key, const void *payload, size_t size)
{
    memcpy(h, FILE_MAGIC, 8);
    dnnjit__put_u32(h + 8, FILE_FORMAT);
    dnnjit__put_u32(h + 12, DNNJIT_VERSION);
    dnnjit__put_u64(h + 16, size);
    dnnjit__put_u64(h + 24, XXH64(payload, size, 0));
    dnnjit__put_u64(h + 32, key.low);
    dnnjit__put_u64(h + 40, key.high);
}

/* Warns of the first CUBIN that could not be written: it is kept in memory only, for this
 * process. Later failures are only counted (disk_write_failures), as an unusable folder
 * would otherwise warn at every compile; the next write may well succeed. */
static void write_trouble(const char *path, int err)
{
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (dnnjit__log_enabled() && !atomic_flag_test_and_set(&warned))
        dnnjit__log("kernel cache: cannot write %s (%s); this kernel is cached in memory only (later write failures "
                    "are not reported)", path, strerror(err));
}

/* Writes the cache folder's name; false with *why set when there is none. */
static bool cache_root(char *dir, size_t size, const char **why)
{
    const char *off = getenv("DNNJIT_CACHE");
    const char *explicit = getenv("DNNJIT_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (off && strcmp(off, "0") == 0) {
        *why = "the disk cache is off (DNNJIT_CACHE=0)";
        return false;
    }
    if (explicit && *explicit)
        n = snprintf(dir, size, "%s", explicit);
    else if (xdg && xdg[0] == '/') /* the XDG spec ignores relative values */
        n = snprintf(dir, size, "%s/dnnjit", xdg);
    else if (home && *home)
        n = snprintf(dir, size, "%s/.cache/dnnjit", home);
    else {
        *why = "no disk cache folder: none of DNNJIT_CACHE_DIR, XDG_CACHE_HOME and HOME is set";
        return false;
    }
    if (n < 0 || (size_t)n >= size) {
        *why = "the disk cache folder's name is too long";
        return false;
    }
    return true;
}

dnnjit_status_t dnnjit__jit_cache_dir(char *dir, size_t size)
{
    const char *why = NULL;
    if (!dir || !cache_root(dir, size, &why))
        return dnnjit__fail(NULL, dir ? DNNJIT_STATUS_NOT_FOUND : DNNJIT_STATUS_BAD_PARAM, "kernel cache: %s",
                            dir ? why : "dir is NULL");
    return DNNJIT_STATUS_SUCCESS;
}

/* The cache folder for `arch` and the file of `key` in it. False when disk caching is off
 * or the names do not fit. */
static bool disk_paths(const char *arch, dnnjit__jit_key_t key, char folder[PATH_MAX], char file[PATH_MAX])
{
    char root[PATH_MAX], hex[DNNJIT__KEY_HEX_LEN];
    const char *why;
    if (!cache_root(root, sizeof root, &why))
        return false;
    dnnjit__jit_key_hex(key, hex);
    int a = snprintf(folder, PATH_MAX, "%s/%s", root, arch);
    int b = snprintf(file, PATH_MAX, "%s/%s.cubin", folder, hex);
    return a > 0 && a < PATH_MAX && b > 0 && b < PATH_MAX;
}

/* mkdir -p; errno is left set on failure. */
static bool make_folders(const char *path)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char saved = *c;
        *c = '\0';
        struct stat st;
        if (mkdir(p, 0755) != 0 && !(errno == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode))) {
            if (errno == EEXIST)
                errno = ENOTDIR;
            return false;
        }
        if (!saved)
            return true;
        *c = saved;
    }
}

static bool read_all(int fd, void *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = read(fd, (char *)buf + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        done += (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = write(fd, (const char *)buf + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        done += (size_t)r;
    }
    return true;
}

/* Deletes `path` only if it is still the file open as `fd`: a writer may have renamed a
 * good file over it since it was opened. */
static void discard_if_same(int fd, const char *path)
{
    struct stat mine, now;
    if (fstat(fd, &mine) == 0 && stat(path, &now) == 0 && mine.st_ino == now.st_ino && mine.st_dev == now.st_dev)
        unlink(path);
}

int dnnjit__open_cache_file(const char *path, const char **why)
{
    *why = NULL;
    /* Non-blocking, so that a FIFO put where the file belongs cannot hang the open; the
     * flag changes nothing for a regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)))
        return fd;
    *why = "not a regular file";
    discard_if_same(fd, path);
    close(fd);
    return -1;
}

/* Checks an open cache file; returns the payload (malloc'd) or NULL with *why set. */
static void *read_checked(int fd, dnnjit__jit_key_t key, size_t *size, const char **why)
{
    struct stat st;
    unsigned char h[HEADER_SIZE];
    if (fstat(fd, &st) != 0 || st.st_size < HEADER_SIZE || !read_all(fd, h, sizeof h)) {
        *why = "shorter than its header";
        return NULL;
    }
    uint64_t len = dnnjit__get_u64(h + 16);
    if (memcmp(h, FILE_MAGIC, 8) != 0) {
        *why = "wrong magic";
    } else if (dnnjit__get_u32(h + 8) != FILE_FORMAT || dnnjit__get_u32(h + 12) != DNNJIT_VERSION) {
        *why = "written by another format or dnnjit version";
    } else if (!key_equal((dnnjit__jit_key_t){dnnjit__get_u64(h + 32), dnnjit__get_u64(h + 40)}, key)) {
        *why = "holds another key";
    } else if (len == 0 || len > MAX_PAYLOAD || (uint64_t)st.st_size != HEADER_SIZE + len) {
        *why = "length does not match the file (truncated or extended)";
    } else {
        void *payload = malloc(len);
        if (payload && read_all(fd, payload, len) && XXH64(payload, len, 0) == dnnjit__get_u64(h + 24)) {
            *size = len;
            return payload;
        }
        *why = payload ? "checksum mismatch" : NULL; /* NULL: out of memory, the file may be fine */
        free(payload);
    }
    return NULL;
}

/* The CUBIN stored for `key`, or NULL (missing, unreadable or bad; a bad file is
 * deleted). */
static void *disk_lookup(const char *file, dnnjit__jit_key_t key, size_t *size)
{
    const char *why;
    int fd = dnnjit__open_cache_file(file, &why);
    void *payload = fd >= 0 ? read_checked(fd, key, size, &why) : NULL;
    if (!payload && why) {
        if (fd >= 0)
            discard_if_same(fd, file);
        COUNT(bad_files);
        dnnjit__log("kernel cache: discarded %s: %s", file, why);
    }
    if (fd >= 0)
        close(fd);
    return payload;
}

/* The file is written under a unique temporary name in the same folder, then renamed
 * into place, so that concurrent writers of one file all succeed and the last rename
 * wins. */
static bool write_once(const char *folder, const char *file, const void *head, size_t head_size, const void *body,
                       size_t body_size)
{
    char tmp[PATH_MAX];
    if (!make_folders(folder))
        return false;
    const char *dot = strrchr(file, '.');
    const char *slash = strrchr(file, '/');
    int stem = (int)(dot && (!slash || dot > slash) ? dot - file : (ptrdiff_t)strlen(file));
    int n = snprintf(tmp, sizeof tmp, "%.*s.tmp.XXXXXX", stem, file);
    int fd = n > 0 && n < (int)sizeof tmp ? mkstemp(tmp) : (errno = ENAMETOOLONG, -1);
    if (fd < 0)
        return false;
    /* mkstemp makes the file private; a cache folder shared by several users needs it
     * readable, as ordinary files are. */
    bool ok = fchmod(fd, 0644) == 0 && write_all(fd, head, head_size) && write_all(fd, body, body_size) &&
              fsync(fd) == 0;
    int err = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(tmp, file) != 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        unlink(tmp);
        errno = err;
    }
    return ok;
}

bool dnnjit__write_file_atomic(const char *folder, const char *file, const void *head, size_t head_size,
                               const void *body, size_t body_size)
{
    /* A cache clear in another process removes the folders it empties, possibly between
     * make_folders and mkstemp here; and a temporary file may be taken before its rename.
     * ENOENT from either means the folder or the file went, and the second attempt makes
     * both again. */
    return write_once(folder, file, head, head_size, body, body_size) ||
           (errno == ENOENT && write_once(folder, file, head, head_size, body, body_size));
}

static void disk_store(const char *folder, const char *file, dnnjit__jit_key_t key, const void *cubin, size_t size)
{
    unsigned char h[HEADER_SIZE];
    encode_header(h, key, cubin, size);
    if (dnnjit__write_file_atomic(folder, file, h, sizeof h, cubin, size)) {
        COUNT(disk_writes);
        return;
    }
    COUNT(disk_write_failures);
    write_trouble(file, errno);
}

/* ---- the lookup ---- */

static dnnjit_status_t lookup_or_compile(const char *source, const char *name, const char *arch,
                                         const dnnjit__nvrtc_options_t *opts, void **cubin, size_t *size,
                                         dnnjit__jit_key_t *key_out)
{
    dnnjit__jit_key_t key;
    dnnjit_status_t s = key_of(source, name, arch, opts, &key);
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    if (key_out)
        *key_out = key;

    if ((*cubin = memory_lookup(key, size)) != NULL) {
        COUNT(memory_hits);
        return DNNJIT_STATUS_SUCCESS;
    }
    char folder[PATH_MAX], file[PATH_MAX];
    bool disk = disk_paths(arch, key, folder, file);
    if (disk && (*cubin = disk_lookup(file, key, size)) != NULL) {
        COUNT(disk_hits);
        memory_insert(key, *cubin, *size);
        return DNNJIT_STATUS_SUCCESS;
    }
    COUNT(misses);
    COUNT(compiles);
    if ((s = dnnjit__nvrtc_compile_listed(source, name, arch, opts, cubin, size)) != DNNJIT_STATUS_SUCCESS)
        return s;
    if (disk)
        disk_store(folder, file, key, *cubin, *size);
    memory_insert(key, *cubin, *size);
    return DNNJIT_STATUS_SUCCESS;
}

dnnjit_status_t dnnjit__jit_get_cubin(const char *source, const char *name, const char *arch,
                                      const dnnjit__compile_options_t *options, void **cubin, size_t *size,
                                      dnnjit__jit_key_t *key_out)
{
    if (!source || !name || !cubin || !size)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "kernel cache: source, name, cubin and size must be set");
    *cubin = NULL;
    *size = 0;
    /* One option list both keys the lookup and, on a miss, is what NVRTC compiles with. */
    dnnjit__nvrtc_options_t opts;
    dnnjit_status_t s = dnnjit__nvrtc_options(arch, options, &opts);
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    s = lookup_or_compile(source, name, arch, &opts, cubin, size, key_out);
    dnnjit__nvrtc_options_free(&opts);
    return s;
}

/* ---- compiling many kernels at once ---- */

enum {
    /* Threads dnnjit__jit_precompile starts at most: each NVRTC compile holds a few hundred
     * MB at its peak. */
    MAX_COMPILE_THREADS = 64,
};

typedef struct precompile {
    const dnnjit__jit_job_t *jobs;
    int64_t count;
    const char *arch;
    atomic_llong next; /* the next job a thread takes */
} precompile_t;

static void *precompile_jobs(void *arg)
{
    precompile_t *p = arg;
    for (int64_t i; (i = atomic_fetch_add(&p->next, 1)) < p->count;) {
        const dnnjit__jit_job_t *job = &p->jobs[i];
        void *cubin;
        size_t size;
        if (dnnjit__jit_get_cubin(job->source, job->name, p->arch, job->options, &cubin, &size, NULL) ==
            DNNJIT_STATUS_SUCCESS)
            free(cubin);
    }
    return NULL;
}

dnnjit_status_t dnnjit__jit_compile_threads(int64_t *threads)
{
    const char *env = getenv("DNNJIT_COMPILE_THREADS");
    long n;
    if (env) {
        if (!dnnjit__whole_number(env, 1, MAX_COMPILE_THREADS, &n))
            return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM,
                                "DNNJIT_COMPILE_THREADS must be a whole number from 1 to %d, not \"%s\"",
                                MAX_COMPILE_THREADS, env);
    } else {
        n = sysconf(_SC_NPROCESSORS_ONLN);
        n = n < 1 ? 1 : n < MAX_COMPILE_THREADS ? n : MAX_COMPILE_THREADS;
    }
    *threads = n;
    return DNNJIT_STATUS_SUCCESS;
}

void dnnjit__jit_precompile(const dnnjit__jit_job_t *jobs, int64_t count, const char *arch, int64_t threads)
{
    threads = threads < count ? threads : count;
    threads = threads < MAX_COMPILE_THREADS ? threads : MAX_COMPILE_THREADS;
    if (!jobs || threads < 2)
        return;
    precompile_t p = {.jobs = jobs, .count = count, .arch = arch};
    atomic_init(&p.next, 0);
    pthread_t started[MAX_COMPILE_THREADS];
    int64_t n = 0;
    /* A thread that cannot start leaves its share to the others. */
    while (n < threads - 1 && pthread_create(&started[n], NULL, precompile_jobs, &p) == 0)
        n++;
    precompile_jobs(&p);
    for (int64_t i = 0; i < n; i++)
        pthread_join(started[i], NULL);
}

/* ---- listing and clearing ---- */

static bool is_hex(const char *s, size_t n)
{
    return strspn(s, "0123456789abcdef") >= n;
}

/* Names the cache writes: "<32 hex>.cubin" and "<32 hex>.tmp.XXXXXX". */
static bool is_cubin_name(const char *s)
{
    return is_hex(s, 32) && strcmp(s + 32, ".cubin") == 0;
}

static bool is_temp_name(const char *s)
{
    return is_hex(s, 32) && strncmp(s + 32, ".tmp.", 5) == 0 && strlen(s + 37) == 6;
}

/* "<32 hex>.plan": a choice dnnjit_graph_autotune remembered. */
static bool is_choice_name(const char *s)
{
    return is_hex(s, 32) && strcmp(s + 32, ".plan") == 0;
}

/* A temporary file is a writer's for the milliseconds it takes to write and rename it, and
 * its time is that of its last write; one untouched for ten minutes was left by a writer
 * that died. Only such leftovers are cleared and counted: a younger one may be a write in
 * progress in another process, which would fail if its file went. */
#define LEFTOVER_AGE_SECONDS 600

static bool is_leftover(const char *name, const struct stat *st)
{
    return is_temp_name(name) && time(NULL) - st->st_mtime >= LEFTOVER_AGE_SECONDS;
}

/* Calls `fn` for each regular file the library writes in the cache folder: CUBIN and temp
 * files in each architecture folder, choice and temp files in the autotune folder (whose
 * `arch` is then DNNJIT__AUTOTUNE_FOLDER). `folder` is the descriptor of the file's folder
 * and `st` the file's status; `fn` returns whether it removed the file. Folders are opened
 * relative to the cache folder and nothing is followed through a symbolic link, so that a
 * link named like an architecture folder or a cache file is neither followed nor removed:
 * nothing outside the cache folder is ever touched. A folder that loses its last file to
 * `fn` is removed; one that was empty already, which the user may have made, stays. */
typedef bool (*file_fn)(int folder, const char *arch, const char *name, const struct stat *st, void *user);

static dnnjit_status_t walk(file_fn fn, void *user)
{
    char root[PATH_MAX];
    dnnjit_status_t s = dnnjit__jit_cache_dir(root, sizeof root);
    if (s != DNNJIT_STATUS_SUCCESS)
        return s;
    DIR *top = opendir(root);
    if (!top) {
        if (errno == ENOENT || errno == ENOTDIR) /* no cache folder, so no files */
            return DNNJIT_STATUS_SUCCESS;
        return dnnjit__fail(NULL, DNNJIT_STATUS_IO_ERROR, "kernel cache: cannot read %s: %s", root, strerror(errno));
    }
    for (struct dirent *a; (a = readdir(top)) != NULL;) {
        bool choices = strcmp(a->d_name, DNNJIT__AUTOTUNE_FOLDER) == 0;
        if (!choices && !dnnjit__arch_is_valid(a->d_name))
            continue;
        int fd = openat(dirfd(top), a->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        bool removed = false;
        for (struct dirent *f; (f = readdir(d)) != NULL;) {
            struct stat st;
            if ((is_temp_name(f->d_name) || (choices ? is_choice_name(f->d_name) : is_cubin_name(f->d_name))) &&
                fstatat(dirfd(d), f->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                removed |= fn(dirfd(d), a->d_name, f->d_name, &st, user);
        }
        closedir(d);
        /* Fails, as it should, while the folder holds anything else. */
        if (removed)
            unlinkat(dirfd(top), a->d_name, AT_REMOVEDIR);
    }
    closedir(top);
    return DNNJIT_STATUS_SUCCESS;
}

typedef struct {
    void (*visit)(const dnnjit__jit_cache_file_t *file, void *user);
    void *user;
} list_ctx_t;

static bool list_one(int folder, const char *arch, const char *name, const struct stat *st, void *user)
{
    (void)folder;
    const list_ctx_t *ctx = user;
    if (is_cubin_name(name)) {
        dnnjit__jit_cache_file_t f = {.bytes = (uint64_t)st->st_size, .mtime = (int64_t)st->st_mtime};
        snprintf(f.arch, sizeof f.arch, "%s", arch);
        snprintf(f.key, sizeof f.key, "%.32s", name);
        ctx->visit(&f, ctx->user);
    }
    return false;
}

dnnjit_status_t dnnjit__jit_cache_list(void (*visit)(const dnnjit__jit_cache_file_t *file, void *user), void *user)
{
    if (!visit)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "kernel cache list: visit is NULL");
    list_ctx_t ctx = {visit, user};
    return walk(list_one, &ctx);
}

static bool count_leftover(int folder, const char *arch, const char *name, const struct stat *st, void *user)
{
    (void)folder;
    (void)arch;
    dnnjit__jit_cache_leftovers_t *l = user;
    if (is_leftover(name, st)) {
        l->files++;
        l->bytes += (uint64_t)st->st_size;
    }
    return false;
}

dnnjit_status_t dnnjit__jit_cache_leftovers(dnnjit__jit_cache_leftovers_t *leftovers)
{
    if (!leftovers)
        return dnnjit__fail(NULL, DNNJIT_STATUS_BAD_PARAM, "kernel cache leftovers: leftovers is NULL");
    *leftovers = (dnnjit__jit_cache_leftovers_t){0, 0};
    return walk(count_leftover, leftovers);
}

static bool remove_one(int folder, const char *arch, const char *name, const struct stat *st, void *user)
{
    (void)arch;
    if ((is_temp_name(name) && !is_leftover(name, st)) || unlinkat(folder, name, 0) != 0)
        return false;
    (*(uint64_t *)user)++;
    return true;
}

dnnjit_status_t dnnjit__jit_cache_clear_disk(uint64_t *removed)
{
    uint64_t count = 0;
    dnnjit_status_t s = walk(remove_one, &count);
    if (removed)
        *removed = count;
    return s;
}
