/* dnnjit — the command-line tool: validate graphs, run them on the reference executor,
 * and show the seed 000 demo. Exit codes are listed in usage(). */
/* clock_gettime is POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "dnnjit.h"

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
            "  demo                 seed 000: batched matmul C[b] = A[b] @ B[b] (B=4, M=64, K=128, N=64,\n"
            "                       half in, float compute), validated and run on the reference executor\n"
            "  validate FILE        load a graph from JSON and validate it; --print writes it back\n"
            "  ref FILE [--seed N]  random inputs in [-1, 1), run the float64 reference executor,\n"
            "                       print a summary of every output\n"
            "  --help               this text\n"
            "  --version            the library version\n"
            "\n"
            "exit codes: 0 success, 1 a result failed its check, 2 usage error, 3 I/O error,\n"
            "            4 JSON parse error, 5 invalid graph, 6 other failure\n");
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

static int load_graph(const char *path, dnnjit_graph_t *g)
{
    char *text = read_file(path);
    if (!text)
        return EXIT_IO;
    dnnjit_status_t s = dnnjit_graph_from_json(NULL, text, g);
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

static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static int64_t span_of(const dnnjit_tensor_info_t *t)
{
    int64_t span = 1;
    for (int i = 0; i < t->ndim; i++)
        span += (t->dim[i] - 1) * t->stride[i];
    return span;
}

static int64_t numel_of(const dnnjit_tensor_info_t *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->dim[i];
    return n;
}

/* The storage offset of the element with row-major index `linear`. */
static int64_t offset_of(const dnnjit_tensor_info_t *t, int64_t linear)
{
    int64_t off = 0;
    for (int i = t->ndim - 1; i >= 0; i--) {
        off += linear % t->dim[i] * t->stride[i];
        linear /= t->dim[i];
    }
    return off;
}

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
        int64_t span = span_of(&t);
        void *p = calloc((size_t)span, dnnjit_data_type_size(t.data_type));
        if (!p) {
            free_buffers(b);
            fprintf(stderr, "dnnjit: cannot allocate %lld elements for tensor \"%s\"\n", (long long)span, t.name);
            return EXIT_FAILED;
        }
        bool is_input = t.producer < 0;
        for (int64_t i = 0; i < numel_of(&t); i++)
            dnnjit_element_store(t.data_type, p, offset_of(&t, i), is_input ? uniform() : NAN);
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
        int64_t nans = 0, n = numel_of(t);
        for (int64_t j = 0; j < n; j++) {
            double v = dnnjit_element_load(t->data_type, b->pack[i].ptr, offset_of(t, j));
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

static int cmd_validate(int argc, char **argv)
{
    const char *path = NULL;
    bool print = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--print") == 0)
            print = true;
        else if (!path)
            path = argv[i];
        else
            return usage(stderr), EXIT_USAGE;
    }
    if (!path)
        return usage(stderr), EXIT_USAGE;
    dnnjit_graph_t g;
    int rc = load_graph(path, &g);
    if (rc)
        return rc;
    int64_t nodes, tensors;
    dnnjit_graph_get_node_count(g, &nodes);
    dnnjit_graph_get_tensor_count(g, &tensors);
    if (print) {
        char *json;
        dnnjit_status_t s = dnnjit_graph_to_json(g, &json);
        if (s) {
            dnnjit_graph_destroy(g);
            return report(s, "to_json");
        }
        printf("%s\n", json);
        dnnjit_free(json);
    } else {
        printf("%s: valid (%lld nodes, %lld tensors)\n", path, (long long)nodes, (long long)tensors);
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
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            char *end;
            rng = strtoull(argv[++i], &end, 0);
            if (*end || !rng)
                return fprintf(stderr, "dnnjit: --seed needs a nonzero integer\n"), EXIT_USAGE;
        } else if (!path) {
            path = argv[i];
        } else {
            return usage(stderr), EXIT_USAGE;
        }
    }
    if (!path)
        return usage(stderr), EXIT_USAGE;
    dnnjit_graph_t g;
    int rc = load_graph(path, &g);
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

/* Seed 000's graph: C[b] = A[b] @ B[b], half in and out, float compute. */
static dnnjit_status_t build_seed000(dnnjit_graph_t *g, dnnjit_tensor_t *a, dnnjit_tensor_t *b, dnnjit_tensor_t *c)
{
    enum { BATCH = 4, M = 64, K = 128, N = 64 };
    dnnjit_status_t s = dnnjit_graph_create(NULL,
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
    dnnjit_graph_t g;
    dnnjit_tensor_t a, bt, c;
    dnnjit_status_t s = build_seed000(&g, &a, &bt, &c);
    if (s) {
        int rc = report(s, "building the seed 000 graph");
        dnnjit_graph_destroy(g);
        return rc;
    }
    char *json;
    s = dnnjit_graph_to_json(g, &json);
    if (s) {
        dnnjit_graph_destroy(g);
        return report(s, "to_json");
    }
    printf("seed 000 graph: C[4,64,64] = A[4,64,128] @ B[4,128,64], half in/out, float compute\n%s\n", json);
    dnnjit_free(json);

    buffers_t b;
    int rc = run_reference(g, &b);
    if (rc) {
        dnnjit_graph_destroy(g);
        return rc;
    }
    int64_t ua, ub, uc;
    dnnjit_tensor_get_uid(g, a, &ua);
    dnnjit_tensor_get_uid(g, bt, &ub);
    dnnjit_tensor_get_uid(g, c, &uc);
    const dnnjit_tensor_info_t *ia = NULL, *ib = NULL, *ic = NULL;
    const void *pa = buffer_of(&b, ua, &ia), *pb = buffer_of(&b, ub, &ib), *pc = buffer_of(&b, uc, &ic);
    if (!pa || !pb || !pc) {
        fprintf(stderr, "dnnjit: demo: a tensor of the seed 000 graph has no buffer\n");
        free_buffers(&b);
        dnnjit_graph_destroy(g);
        return EXIT_FAILED;
    }
    double rel = check_seed000(ia, ib, ic, pa, pb, pc);
    summarize_outputs(&b);
    printf("reference vs direct loop: relative error %.3g (%s)\n", rel, rel < 1e-2 ? "ok" : "MISMATCH");
    printf("GPU execution: the JIT engine is not built yet; this demo stops at the reference executor.\n");
    free_buffers(&b);
    dnnjit_graph_destroy(g);
    return rel < 1e-2 ? EXIT_OK : EXIT_MISMATCH;
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
    fprintf(stderr, "dnnjit: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
