/* dnnjit — the command-line tool: validate graphs, run them on the reference executor,
 * and show the seed 000 demo. Exit codes are listed in usage(). */
/* clock_gettime is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "dnnjit.h"
#include "gpu.h"
#include "layout.h"
#include "jit/jit.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum exit_code {
    EXIT_OK = 0,
    EXIT_MISMATCH = 1, /* a result disagreed with its check */
    EXIT_USAGE = 2,
    EXIT_IO = 3,
    EXIT_PARSE = 4,
    EXIT_INVALID = 5,
    EXIT_FAILED = 6, /* any other library failure */
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: dnnjit COMMAND [ARGS]\n"
            "\n"
            "commands:\n"
            "  demo                   seed 000: batched matmul C[b] = A[b] @ B[b] (B=4, M=64, K=128, N=64,\n"
            "                         half in, float compute): plans, build, execute, verify, time; without\n"
            "                         a GPU it compiles for sm_90a and shows the plans and the kernel\n"
            "  validate FILE [--print] load a graph from JSON and validate it (--print writes it back)\n"
            "  ref FILE [--seed N]    random inputs in [-1, 1), run the float64 reference executor,\n"
            "                         print a summary of every output\n"
            "  run FILE [--seed N] [--plan I] [--calls N] [--no-check]\n"
            "                         random inputs, execute on the GPU (plan I of the list, else the\n"
            "                         heuristics' choice), verify against the reference (--no-check:\n"
            "                         only look for unwritten outputs; the float64 CPU reference takes\n"
            "                         minutes for a 4096^3 GEMM), time the median of 9 batches of N\n"
            "                         calls (default 100; 0: no timing)\n"
            "  plans FILE [--arch A]  the ranked plans of heuristic modes A, B and FALLBACK\n"
            "  source FILE [--plan I] [--arch A]   the CUDA source plan I generates (default 0)\n"
            "  compile FILE --arch A  generate and compile every plan for architecture A (no GPU needed)\n"
            "  cache ls|stats|clear   the on-disk kernel cache ($DNNJIT_CACHE_DIR, $XDG_CACHE_HOME/dnnjit\n"
            "                         or ~/.cache/dnnjit)\n"
            "  --help                 this text\n"
            "  --version              the library version\n"
            "\n"
            "exit codes: 0 success, 1 a result failed its check, 2 usage error, 3 I/O error,\n"
            "            4 JSON parse error, 5 invalid graph, 6 other failure (NVRTC, driver, no GPU)\n");
}

static int exit_for(dnnjit_status_t s)
{
    switch (s) {
    case DNNJIT_STATUS_SUCCESS:
        return EXIT_OK;
    case DNNJIT_STATUS_PARSE_ERROR:
        return EXIT_PARSE;
    case DNNJIT_STATUS_INVALID_GRAPH:
        return EXIT_INVALID;
    case DNNJIT_STATUS_IO_ERROR:
        return EXIT_IO;
    default:
        return EXIT_FAILED;
    }
}

/* Prints the library's message for a failed call and returns the matching exit code. */
static int report(dnnjit_status_t s, const char *what)
{
    fprintf(stderr, "dnnjit: %s: %s: %s\n", what, dnnjit_status_string(s), dnnjit_last_error());
    return exit_for(s);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "dnnjit: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len < cap - 1)
            break;
        char *grown = realloc(buf, cap *= 2);
        if (!grown)
            free(buf);
        buf = grown;
    }
    bool failed = ferror(f) || !buf;
    fclose(f);
    if (failed) {
        fprintf(stderr, "dnnjit: cannot read %s\n", path);
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

static int load_graph(const char *path, dnnjit_handle_t handle, dnnjit_graph_t *g)
{
    char *text = read_file(path);
    if (!text)
        return EXIT_IO;
    dnnjit_status_t s = dnnjit_graph_from_json(handle, text, g);
    free(text);
    return s ? report(s, path) : EXIT_OK;
}

/* ---- host buffers for every non-virtual tensor ----------------------------------- */

typedef struct buffers {
    int64_t count;
    dnnjit_variant_t *pack;
    dnnjit_tensor_info_t *info;
} buffers_t;

static uint64_t rng = 0x2545f4914f6cdd1dull;

static void free_buffers(buffers_t *b)
{
    for (int64_t i = 0; i < b->count; i++)
        free(b->pack[i].ptr);
    free(b->pack);
    free(b->info);
}

/* Gives every non-virtual tensor a host buffer: inputs random in [-1, 1), outputs NaN so
 * that an element the executor forgets to write shows up. */
static int make_buffers(dnnjit_graph_t g, buffers_t *b)
{
    int64_t n;
    dnnjit_graph_get_tensor_count(g, &n);
    *b = (buffers_t){0, calloc((size_t)n, sizeof *b->pack), calloc((size_t)n, sizeof *b->info)};
    if (!b->pack || !b->info) {
        free_buffers(b);
        fprintf(stderr, "dnnjit: out of memory\n");
        return EXIT_FAILED;
    }
    for (dnnjit_tensor_t id = 1; id <= (dnnjit_tensor_t)n; id++) {
        dnnjit_tensor_info_t t;
        dnnjit_tensor_get_info(g, id, &t);
        if (t.is_virtual || t.has_value)
            continue;
        int64_t span = layout_span(&t);
        void *p = calloc((size_t)span, dnnjit_data_type_size(t.data_type));
        if (!p) {
            free_buffers(b);
            fprintf(stderr, "dnnjit: cannot allocate %lld elements for tensor \"%s\"\n", (long long)span, t.name);
            return EXIT_FAILED;
        }
        bool is_input = t.producer < 0;
        for (int64_t i = 0; i < layout_numel(&t); i++)
            dnnjit_element_store(t.data_type, p, layout_offset(&t, i), is_input ? layout_uniform(&rng) * 2.0 - 1.0 : NAN);
        b->info[b->count] = t;
        b->pack[b->count++] = (dnnjit_variant_t){t.uid, p};
    }
    return EXIT_OK;
}

static void print_dims(const dnnjit_tensor_info_t *t)
{
    printf("[");
    for (int i = 0; i < t->ndim; i++)
        printf("%s%lld", i ? "," : "", (long long)t->dim[i]);
    printf("]");
}

/* Prints min / max / mean / L2 norm / NaN count of each output; returns the NaN total. */
static int64_t summarize_outputs(const buffers_t *b)
{
    int64_t nans_total = 0;
    for (int64_t i = 0; i < b->count; i++) {
        const dnnjit_tensor_info_t *t = &b->info[i];
        if (t->producer < 0)
            continue;
        double lo = INFINITY, hi = -INFINITY, sum = 0, sq = 0;
        int64_t nans = 0, n = layout_numel(t);
        for (int64_t j = 0; j < n; j++) {
            double v = dnnjit_element_load(t->data_type, b->pack[i].ptr, layout_offset(t, j));
            if (isnan(v)) {
                nans++;
                continue;
            }
            lo = fmin(lo, v);
            hi = fmax(hi, v);
            sum += v;
            sq += v * v;
        }
        printf("  output \"%s\" (uid %lld) %s ", t->name, (long long)t->uid, dnnjit_data_type_name(t->data_type));
        print_dims(t);
        printf(": min %.6g max %.6g mean %.6g l2 %.6g nan %lld\n", lo, hi, sum / (double)n, sqrt(sq),
               (long long)nans);
        nans_total += nans;
    }
    return nans_total;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- commands --------------------------------------------------------------------- */

/* Calls per timed batch of run and demo unless --calls says otherwise. */
enum { DEFAULT_CALLS = 100 };

/* The arguments every file command takes: FILE and its options. */
typedef struct options {
    const char *path;
    const char *arch;
    int64_t plan; /* -1 when --plan is not given */
    int calls;    /* run: calls per timed batch, 0 for none */
    bool print;
    bool no_check; /* run: no reference, only a look for NaN (unwritten elements) */
} options_t;

/* Whether `name` is one of the comma-separated names in `allowed` (whole names only, so
 * that --check or --c is not taken for --no-check or --calls). The empty name (a bare
 * "--") is none: the tool has no use for an end of options, as FILE never starts with "--". */
static bool option_allowed(const char *allowed, const char *name)
{
    size_t len = strlen(name);
    if (!len)
        return false;
    for (const char *at = allowed; (at = strstr(at, name)) != NULL; at += len)
        if ((at == allowed || at[-1] == ',') && (at[len] == ',' || at[len] == '\0'))
            return true;
    return false;
}

/* Parses FILE [--print] [--seed N] [--arch A] [--plan I] [--calls N] [--no-check], accepting only
 * the options in `allowed` (a string such as "print,seed"). Returns EXIT_OK or EXIT_USAGE. */
static int parse_options(int argc, char **argv, const char *allowed, options_t *o)
{
    *o = (options_t){.plan = -1, .calls = DEFAULT_CALLS};
    for (int i = 0; i < argc; i++) {
        const char *opt = argv[i];
        bool has_value = i + 1 < argc;
        if (strncmp(opt, "--", 2) != 0) {
            if (o->path)
                return usage(stderr), EXIT_USAGE;
            o->path = opt;
            continue;
        }
        if (!option_allowed(allowed, opt + 2)) {
            fprintf(stderr, "dnnjit: unknown option %s\n", opt);
            return EXIT_USAGE;
        }
        char *end = NULL;
        if (strcmp(opt, "--print") == 0) {
            o->print = true;
        } else if (strcmp(opt, "--no-check") == 0) {
            o->no_check = true;
        } else if (strcmp(opt, "--arch") == 0 && has_value) {
            o->arch = argv[++i];
        } else if (strcmp(opt, "--plan") == 0 && has_value) {
            o->plan = strtoll(argv[++i], &end, 10);
            if (*end || o->plan < 0)
                return fprintf(stderr, "dnnjit: --plan needs a plan index\n"), EXIT_USAGE;
        } else if (strcmp(opt, "--calls") == 0 && has_value) {
            long long calls = strtoll(argv[++i], &end, 10);
            if (*end || calls < 0 || calls > 1000000)
                return fprintf(stderr, "dnnjit: --calls needs a count from 0 to 1000000\n"), EXIT_USAGE;
            o->calls = (int)calls;
        } else if (strcmp(opt, "--seed") == 0 && has_value) {
            rng = strtoull(argv[++i], &end, 0);
            if (*end || !rng)
                return fprintf(stderr, "dnnjit: --seed needs a nonzero integer\n"), EXIT_USAGE;
        } else {
            fprintf(stderr, "dnnjit: option %s needs a value\n", opt);
            return EXIT_USAGE;
        }
    }
    if (!o->path)
        return usage(stderr), EXIT_USAGE;
    return EXIT_OK;
}

static int cmd_validate(int argc, char **argv)
{
    options_t o;
    dnnjit_graph_t g;
    int rc = parse_options(argc, argv, "print", &o);
    if (!rc)
        rc = load_graph(o.path, NULL, &g);
    if (rc)
        return rc;
    if (o.print) {
        char *json;
        dnnjit_status_t s = dnnjit_graph_to_json(g, &json);
        if (s) {
            dnnjit_graph_destroy(g);
            return report(s, "to_json");
        }
        printf("%s\n", json);
        dnnjit_free(json);
    } else {
        int64_t nodes, tensors;
        dnnjit_graph_get_node_count(g, &nodes);
        dnnjit_graph_get_tensor_count(g, &tensors);
        printf("%s: valid (%lld nodes, %lld tensors)\n", o.path, (long long)nodes, (long long)tensors);
    }
    dnnjit_graph_destroy(g);
    return EXIT_OK;
}

static int run_reference(dnnjit_graph_t g, buffers_t *b)
{
    int rc = make_buffers(g, b);
    if (rc)
        return rc;
    double t0 = now_seconds();
    dnnjit_status_t s = dnnjit_graph_execute_reference(g, b->pack, (size_t)b->count);
    double t1 = now_seconds();
    if (s) {
        free_buffers(b);
        return report(s, "reference executor");
    }
    printf("reference executor: %.3f ms\n", (t1 - t0) * 1e3);
    return EXIT_OK;
}

static int cmd_ref(int argc, char **argv)
{
    options_t o;
    dnnjit_graph_t g;
    int rc = parse_options(argc, argv, "seed", &o);
    if (!rc)
        rc = load_graph(o.path, NULL, &g);
    if (rc)
        return rc;
    buffers_t b;
    rc = run_reference(g, &b);
    if (!rc) {
        int64_t nans = summarize_outputs(&b);
        if (nans)
            printf("warning: %lld output elements are NaN\n", (long long)nans);
        free_buffers(&b);
    }
    dnnjit_graph_destroy(g);
    return rc;
}

/* A handle for `arch`, or for the GPU when arch is NULL; without a GPU or arch, for
 * `fallback_arch`, or (NULL) a failure that says why no GPU was found: the commands that
 * take --arch give a fallback or need --arch, so only `run` fails here, and it cannot do
 * without a GPU. */
static int open_handle(const char *arch, const char *fallback_arch, dnnjit_handle_t *h)
{
    dnnjit_status_t s = arch ? dnnjit_handle_create_for_arch(arch, h) : dnnjit_handle_create(h);
    if (s)
        return report(s, "creating a handle");
    char found[32];
    bool has_device;
    dnnjit_handle_get_arch(*h, found, sizeof found, &has_device);
    if (*found)
        return EXIT_OK;
    if (!fallback_arch) {
        fprintf(stderr, "dnnjit: no GPU found: %s\n", (*h)->no_device_reason);
        dnnjit_handle_destroy(*h);
        return EXIT_FAILED;
    }
    dnnjit_handle_destroy(*h);
    printf("no GPU found: planning for %s\n", fallback_arch);
    s = dnnjit_handle_create_for_arch(fallback_arch, h);
    return s ? report(s, "creating a handle") : EXIT_OK;
}

static const dnnjit_heur_mode_t all_modes[] = {DNNJIT_HEUR_MODE_A, DNNJIT_HEUR_MODE_B, DNNJIT_HEUR_MODE_FALLBACK};

/* Prints each plan with its behavior notes, marking the chosen one. */
static void print_plans(dnnjit_graph_t g)
{
    int64_t count, chosen;
    dnnjit_graph_get_plan_count(g, &count);
    dnnjit_graph_get_chosen_plan(g, &chosen);
    printf("execution plans: %lld\n", (long long)count);
    for (int64_t i = 0; i < count; i++) {
        char *name = NULL;
        uint32_t notes = 0;
        dnnjit_graph_get_plan_name(g, i, &name);
        dnnjit_graph_get_plan_behavior_notes(g, i, &notes);
        printf("  %c plan %lld: %s%s%s%s\n", i == chosen ? '*' : ' ', (long long)i, name ? name : "?",
               notes & DNNJIT_BEHAVIOR_NOTE_RUNTIME_COMPILATION ? "  [RUNTIME_COMPILATION]" : "",
               notes & DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION ? " [REDUCED_PRECISION]" : "",
               notes & DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC ? " [NONDETERMINISTIC]" : "");
        dnnjit_free(name);
    }
}

/* Loads FILE with a handle and makes its plans for modes A, B and FALLBACK. */
static int load_planned(const options_t *o, const char *fallback_arch, dnnjit_handle_t *h, dnnjit_graph_t *g)
{
    int rc = open_handle(o->arch, fallback_arch, h);
    if (rc)
        return rc;
    rc = load_graph(o->path, *h, g);
    dnnjit_status_t s = rc ? DNNJIT_STATUS_SUCCESS : dnnjit_graph_create_execution_plans(*g, all_modes, 3);
    if (rc || s) {
        if (!rc) {
            rc = report(s, "create_execution_plans");
            dnnjit_graph_destroy(*g);
        }
        dnnjit_handle_destroy(*h);
    }
    return rc;
}

static int cmd_plans(int argc, char **argv)
{
    options_t o;
    dnnjit_handle_t h;
    dnnjit_graph_t g;
    int rc = parse_options(argc, argv, "arch", &o);
    if (!rc)
        rc = load_planned(&o, "sm_90a", &h, &g);
    if (rc)
        return rc;
    print_plans(g);
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
    return EXIT_OK;
}

static int cmd_source(int argc, char **argv)
{
    options_t o;
    dnnjit_handle_t h;
    dnnjit_graph_t g;
    int rc = parse_options(argc, argv, "arch,plan", &o);
    if (!rc)
        rc = load_planned(&o, "sm_90a", &h, &g);
    if (rc)
        return rc;
    char *source = NULL;
    dnnjit_status_t s = dnnjit_graph_get_plan_source(g, o.plan < 0 ? 0 : o.plan, &source);
    if (s)
        rc = report(s, "source");
    else
        fputs(source, stdout);
    dnnjit_free(source);
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
    return rc;
}

static int cmd_compile(int argc, char **argv)
{
    options_t o;
    dnnjit_handle_t h;
    dnnjit_graph_t g;
    int rc = parse_options(argc, argv, "arch", &o);
    if (!rc && !o.arch)
        return fprintf(stderr, "dnnjit: compile needs --arch (e.g. sm_90a)\n"), EXIT_USAGE;
    if (!rc)
        rc = load_planned(&o, NULL, &h, &g);
    if (rc)
        return rc;
    int64_t count;
    dnnjit_graph_get_plan_count(g, &count);
    for (int64_t i = 0; i < count; i++) {
        char *name = NULL;
        dnnjit_graph_get_plan_name(g, i, &name);
        double t0 = now_seconds();
        dnnjit_status_t s = dnnjit_graph_build_plan_at_index(g, i);
        printf("plan %lld %s: %s (%.1f ms)\n", (long long)i, name ? name : "?", s ? dnnjit_last_error() : "compiled",
               (now_seconds() - t0) * 1e3);
        rc = s ? exit_for(s) : rc;
        dnnjit_free(name);
    }
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
    return rc;
}

/* Builds a planned graph (plan `plan` of the list, or the heuristics' choice when it is
 * negative), executes it on the GPU, verifies it (against the reference, or with
 * `no_check` only for unwritten elements) and, with calls > 0, prints the median time per
 * call of 9 batches of `calls` (0 leaves a single checked run, as tools such as
 * compute-sanitizer need). */
static int build_run_verify(dnnjit_graph_t g, int64_t plan, int calls, bool no_check)
{
    double t0 = now_seconds();
    dnnjit_status_t s = plan < 0 ? dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE)
                                 : dnnjit_graph_build_plan_at_index(g, plan);
    if (s)
        return report(s, "build_plans");
    printf("build: %.1f ms\n", (now_seconds() - t0) * 1e3);
    print_plans(g);
    /* Said before the reference runs, which for a large graph takes long enough to look
     * like a hang. */
    printf(no_check ? "execute, then look for unwritten outputs (no reference: --no-check)\n"
                    : "execute, then check against the float64 CPU reference (--no-check skips it)\n");
    fflush(stdout);
    gpu_run_result_t r;
    s = gpu_run_and_check(g, &rng, -1.0, 1.0, !no_check, calls, &r);
    if (s)
        return report(s, "execute");
    double tol = gpu_tolerance(g);
    if (no_check)
        printf("every output written: %s\n", r.max_rel_error < tol ? "ok" : "MISMATCH (NaN found)");
    else
        printf("max relative error %.3g (bound %g): %s\n", r.max_rel_error, tol,
               r.max_rel_error < tol ? "ok" : "MISMATCH");
    if (calls > 0)
        printf("device time per call: %.2f us (median of 9 x %d calls)\n", r.us_per_call, calls);
    return r.max_rel_error < tol ? EXIT_OK : EXIT_MISMATCH;
}

static int cmd_run(int argc, char **argv)
{
    options_t o;
    dnnjit_handle_t h;
    dnnjit_graph_t g;
    int rc = parse_options(argc, argv, "seed,plan,calls,no-check", &o);
    if (!rc)
        rc = open_handle(NULL, NULL, &h);
    if (rc)
        return rc;
    rc = load_graph(o.path, h, &g);
    if (!rc) {
        dnnjit_status_t s = dnnjit_graph_create_execution_plans(g, all_modes, 3);
        rc = s ? report(s, "create_execution_plans") : build_run_verify(g, o.plan, o.calls, o.no_check);
        dnnjit_graph_destroy(g);
    }
    dnnjit_handle_destroy(h);
    return rc;
}

static void list_file(const dnnjit__jit_cache_file_t *f, void *user)
{
    (void)user;
    printf("%s/%s.cubin  %llu bytes\n", f->arch, f->key, (unsigned long long)f->bytes);
}

/* Totals for `cache stats`: files and bytes. */
static void count_file(const dnnjit__jit_cache_file_t *f, void *user)
{
    uint64_t *totals = user;
    totals[0]++;
    totals[1] += f->bytes;
}

static int cmd_cache(int argc, char **argv)
{
    if (argc != 1)
        return usage(stderr), EXIT_USAGE;
    char dir[4096];
    dnnjit_status_t s = dnnjit__jit_cache_dir(dir, sizeof dir);
    if (s)
        return report(s, "cache");
    if (strcmp(argv[0], "ls") == 0) {
        s = dnnjit__jit_cache_list(list_file, NULL);
    } else if (strcmp(argv[0], "stats") == 0) {
        uint64_t totals[2] = {0, 0};
        dnnjit__jit_cache_leftovers_t left;
        s = dnnjit__jit_cache_list(count_file, totals);
        if (!s)
            s = dnnjit__jit_cache_leftovers(&left);
        if (!s)
            printf("%s: %llu kernels, %llu bytes\n", dir, (unsigned long long)totals[0], (unsigned long long)totals[1]);
        /* Writers that died leave their temporary files, which can be large; they are
         * never read, and only `cache clear` removes them. */
        if (!s && left.files)
            printf("%s: %llu leftover temporary files of interrupted writes, %llu bytes (cache clear removes them)\n",
                   dir, (unsigned long long)left.files, (unsigned long long)left.bytes);
    } else if (strcmp(argv[0], "clear") == 0) {
        uint64_t removed = 0;
        s = dnnjit__jit_cache_clear_disk(&removed);
        if (!s)
            printf("removed %llu files from %s\n", (unsigned long long)removed, dir);
    } else {
        return usage(stderr), EXIT_USAGE;
    }
    return s ? report(s, "cache") : EXIT_OK;
}

/* Seed 000's graph: C[b] = A[b] @ B[b], half in and out, float compute. */
static dnnjit_status_t build_seed000(dnnjit_handle_t h, dnnjit_graph_t *g, dnnjit_tensor_t *a, dnnjit_tensor_t *b,
                                     dnnjit_tensor_t *c)
{
    enum { BATCH = 4, M = 64, K = 128, N = 64 };
    dnnjit_status_t s = dnnjit_graph_create(h,
                                            &(dnnjit_graph_attr_t){.name = "jit_matmul_graph",
                                                                   .io_data_type = DNNJIT_DATA_TYPE_HALF,
                                                                   .compute_data_type = DNNJIT_DATA_TYPE_FLOAT},
                                            g);
    if (!s)
        s = dnnjit_graph_tensor(*g, &(dnnjit_tensor_desc_t){.name = "A", .ndim = 3, .dim = (int64_t[]){BATCH, M, K},
                                                             .stride = (int64_t[]){M * K, K, 1}},
                                a);
    if (!s)
        s = dnnjit_graph_tensor(*g, &(dnnjit_tensor_desc_t){.name = "B", .ndim = 3, .dim = (int64_t[]){BATCH, K, N},
                                                             .stride = (int64_t[]){K * N, N, 1}},
                                b);
    if (!s)
        s = dnnjit_graph_matmul(*g, *a, *b, &(dnnjit_matmul_attr_t){.compute_data_type = DNNJIT_DATA_TYPE_FLOAT}, c);
    if (!s)
        s = dnnjit_tensor_set_output(*g, *c, true);
    if (!s)
        s = dnnjit_graph_validate(*g);
    return s;
}

/* Checks the reference result of seed 000 against a direct triple loop written here, so
 * that the demo verifies the executor rather than trusting it. Returns the relative error. */
static double check_seed000(const dnnjit_tensor_info_t *ia, const dnnjit_tensor_info_t *ib,
                            const dnnjit_tensor_info_t *ic, const void *pa, const void *pb, const void *pc)
{
    double err = 0, ref_norm = 0;
    int64_t batch = ia->dim[0], m = ia->dim[1], k = ia->dim[2], n = ib->dim[2];
    for (int64_t z = 0; z < batch; z++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t p = 0; p < k; p++)
                    acc += dnnjit_element_load(ia->data_type, pa, z * ia->stride[0] + i * ia->stride[1] + p * ia->stride[2]) *
                           dnnjit_element_load(ib->data_type, pb, z * ib->stride[0] + p * ib->stride[1] + j * ib->stride[2]);
                /* The output is half: compare against the reference rounded the same way. */
                uint16_t rounded;
                dnnjit_element_store(DNNJIT_DATA_TYPE_HALF, &rounded, 0, acc);
                double want = dnnjit_element_load(DNNJIT_DATA_TYPE_HALF, &rounded, 0);
                double got = dnnjit_element_load(ic->data_type, pc, z * ic->stride[0] + i * ic->stride[1] + j * ic->stride[2]);
                err += (got - want) * (got - want);
                ref_norm += want * want;
            }
    return sqrt(err / ref_norm);
}

static const void *buffer_of(const buffers_t *b, int64_t uid, const dnnjit_tensor_info_t **info)
{
    for (int64_t i = 0; i < b->count; i++)
        if (b->pack[i].uid == uid) {
            *info = &b->info[i];
            return b->pack[i].ptr;
        }
    return NULL;
}

static int cmd_demo(void)
{
    dnnjit_handle_t h;
    int rc = open_handle(NULL, "sm_90a", &h);
    if (rc)
        return rc;
    char arch[32];
    bool has_device;
    dnnjit_handle_get_arch(h, arch, sizeof arch, &has_device);
    dnnjit_graph_t g;
    dnnjit_tensor_t a, bt, c;
    dnnjit_status_t s = build_seed000(h, &g, &a, &bt, &c);
    if (s) {
        rc = report(s, "building the seed 000 graph");
        dnnjit_graph_destroy(g);
        dnnjit_handle_destroy(h);
        return rc;
    }
    printf("seed 000: C[4,64,64] = A[4,64,128] @ B[4,128,64], half in/out, float compute, for %s\n", arch);

    /* First the reference executor, checked against a direct loop written here. */
    buffers_t b;
    rc = run_reference(g, &b);
    if (!rc) {
        int64_t ua, ub, uc;
        dnnjit_tensor_get_uid(g, a, &ua);
        dnnjit_tensor_get_uid(g, bt, &ub);
        dnnjit_tensor_get_uid(g, c, &uc);
        const dnnjit_tensor_info_t *ia = NULL, *ib = NULL, *ic = NULL;
        const void *pa = buffer_of(&b, ua, &ia), *pb = buffer_of(&b, ub, &ib), *pc = buffer_of(&b, uc, &ic);
        double rel = pa && pb && pc ? check_seed000(ia, ib, ic, pa, pb, pc) : NAN;
        printf("reference executor vs a direct loop: relative error %.3g (%s)\n", rel, rel < 1e-2 ? "ok" : "MISMATCH");
        rc = rel < 1e-2 ? EXIT_OK : EXIT_MISMATCH;
        free_buffers(&b);
    }
    if (!rc) {
        s = dnnjit_graph_create_execution_plans(g, all_modes, 3);
        rc = s ? report(s, "create_execution_plans") : EXIT_OK;
    }
    if (!rc && has_device) {
        rc = build_run_verify(g, -1, DEFAULT_CALLS, false);
    } else if (!rc) {
        double t0 = now_seconds();
        s = dnnjit_graph_build_plans(g, DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE);
        rc = s ? report(s, "build_plans") : EXIT_OK;
        if (!rc) {
            printf("compiled for %s in %.1f ms\n", arch, (now_seconds() - t0) * 1e3);
            print_plans(g);
            int64_t chosen;
            char *source = NULL;
            dnnjit_graph_get_chosen_plan(g, &chosen);
            if (!dnnjit_graph_get_plan_source(g, chosen, &source)) {
                const char *generated = strstr(source, "// ---- generated");
                printf("the kernel it made (generated part; the template follows it):\n%s\n",
                       generated ? generated : source);
            }
            dnnjit_free(source);
            printf("execution skipped: no GPU (%s)\n", arch);
        }
    }
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr), EXIT_USAGE;
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0)
        return usage(stdout), EXIT_OK;
    if (strcmp(cmd, "--version") == 0)
        return printf("dnnjit %s\n", dnnjit_version_string()), EXIT_OK;
    if (strcmp(cmd, "demo") == 0 && argc == 2)
        return cmd_demo();
    if (strcmp(cmd, "validate") == 0)
        return cmd_validate(argc - 2, argv + 2);
    if (strcmp(cmd, "ref") == 0)
        return cmd_ref(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "plans") == 0)
        return cmd_plans(argc - 2, argv + 2);
    if (strcmp(cmd, "source") == 0)
        return cmd_source(argc - 2, argv + 2);
    if (strcmp(cmd, "compile") == 0)
        return cmd_compile(argc - 2, argv + 2);
    if (strcmp(cmd, "cache") == 0)
        return cmd_cache(argc - 2, argv + 2);
    fprintf(stderr, "dnnjit: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
