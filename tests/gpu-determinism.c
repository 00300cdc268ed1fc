/* GPU: plans without DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC give the same bits on every run
 * (dnnjit.h promises it). The graphs are those whose kernels combine partial results made
 * by different blocks: norm backward's DSCALE and DBIAS, reductions over the outer axis,
 * rows split among blocks, and split-K GEMMs on both GEMM engines. Every plan of each runs
 * on one set of random inputs three times, its outputs poisoned with NaN before each run:
 * alone, then while the same plan runs on a second set of buffers on another stream (so
 * that the two share the SMs and the blocks run in another order), then alone again. The
 * first run must match the reference executor and the other two must match the first bit
 * for bit. Plans with the note (the rows engine's cluster plans with row tickets) run too,
 * and whether their bits changed is printed, not asserted. Skipped (77) without a GPU. */
#include "gpu_buffers.h"

#include <stdio.h>
#include <string.h>

enum { RUNS = 3 };

/* Writes NaN (all bits set, NaN in every floating type) over every output of s. */
static void poison(gb_set_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        gb_tensor_t *b = &s->t[i];
        if (b->info.producer < 0)
            continue;
        memset(b->readback, 0xff, b->bytes);
        GB_CU(dnnjit__cuda()->cuMemcpyHtoD(b->device, b->readback, b->bytes));
    }
}

static void execute(dnnjit_graph_t g, gb_set_t *s, dnnjit__cu_stream_t stream)
{
    TU_OK(dnnjit_graph_execute(g, s->device_pack, s->n, gb_workspace(s), stream));
}

/* Copies every output of s into `into` (one buffer after another) and returns its size. */
static size_t read_outputs(gb_set_t *s, unsigned char *into)
{
    size_t at = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->t[i].info.producer >= 0) {
            GB_CU(dnnjit__cuda()->cuMemcpyDtoH(into + at, s->t[i].device, s->t[i].bytes));
            at += s->t[i].bytes;
        }
    return at;
}

static size_t output_bytes(const gb_set_t *s)
{
    size_t bytes = 0;
    for (size_t i = 0; i < s->n; i++)
        bytes += s->t[i].info.producer >= 0 ? s->t[i].bytes : 0;
    return bytes;
}

/* Runs plan `index` of g as the file's comment says; returns whether a later run's bits
 * differed from the first's. */
static bool runs_differ(dnnjit_graph_t g, int64_t index, double lo, double hi, double tol, const char *label,
                        const char *plan)
{
    const dnnjit__cuda_api_t *cu = dnnjit__cuda();
    TU_OK(dnnjit_graph_build_plan_at_index(g, index));
    gb_set_t s, other;
    gb_alloc(g, &s);
    gb_alloc(g, &other);
    gb_fill(&s, lo, hi);
    gb_fill(&other, lo, hi);
    dnnjit__cu_stream_t mine, theirs;
    GB_CU(cu->cuStreamCreate(&mine, DNNJIT__CU_STREAM_NON_BLOCKING));
    GB_CU(cu->cuStreamCreate(&theirs, DNNJIT__CU_STREAM_NON_BLOCKING));
    const size_t bytes = output_bytes(&s);
    unsigned char *first = malloc(bytes), *later = malloc(bytes);
    assert_true(first && later);
    bool differ = false;
    for (int run = 0; run < RUNS; run++) {
        poison(&s);
        if (run == 1)
            execute(g, &other, theirs);
        execute(g, &s, mine);
        GB_CU(cu->cuStreamSynchronize(mine));
        GB_CU(cu->cuStreamSynchronize(theirs));
        if (run == 0) {
            double err = gb_error(g, &s);
            if (!(err < tol))
                fail_msg("%s: plan %s: relative error %g exceeds %g", label, plan, err, tol);
            read_outputs(&s, first);
        } else {
            read_outputs(&s, later);
            differ = differ || memcmp(first, later, bytes) != 0;
        }
    }
    free(first);
    free(later);
    GB_CU(cu->cuStreamDestroy(mine));
    GB_CU(cu->cuStreamDestroy(theirs));
    gb_free(&s);
    gb_free(&other);
    return differ;
}

/* Plans a case checks, by name. */
typedef bool (*pick_t)(const char *name);

static bool rows_or_fallback(const char *name)
{
    return strncmp(name, "rows_", 5) == 0 || strncmp(name, "fallback", 8) == 0;
}

static bool sm80_split(const char *name)
{
    return strncmp(name, "gemm_", 5) == 0 && strncmp(name, "gemm_sm90_", 10) != 0 && strstr(name, "_splitk");
}

static bool sm90_split(const char *name)
{
    return strncmp(name, "gemm_sm90_", 10) == 0 && strstr(name, "_splitk");
}

/* The first `limit` (0: all) plans of mode A's list and mode FALLBACK's that `pick` takes;
 * fails when one without the note gives different bits, or when none is without it (a case
 * that holds no plan to the promise tests nothing). Destroys g. */
static void same_bits(dnnjit_graph_t g, pick_t pick, int limit, double lo, double hi, double tol, const char *label)
{
    const dnnjit_heur_mode_t modes[] = {DNNJIT_HEUR_MODE_A, DNNJIT_HEUR_MODE_FALLBACK};
    TU_OK(dnnjit_graph_create_execution_plans(g, modes, 2));
    int64_t count;
    int picked = 0, checked = 0;
    TU_OK(dnnjit_graph_get_plan_count(g, &count));
    for (int64_t i = 0; i < count && (limit == 0 || picked < limit); i++) {
        char *name = NULL;
        uint32_t notes;
        TU_OK(dnnjit_graph_get_plan_name(g, i, &name));
        TU_OK(dnnjit_graph_get_plan_behavior_notes(g, i, &notes));
        if (pick(name)) {
            bool noted = notes & DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC;
            bool differ = runs_differ(g, i, lo, hi, tol, label, name);
            printf("  %-36s plan %-40s %s%s\n", label, name, differ ? "bits differ" : "same bits",
                   noted ? " (noted nondeterministic)" : "");
            if (differ && !noted)
                fail_msg("%s: plan %s gave different bits on the same inputs and has no NONDETERMINISTIC note", label,
                         name);
            picked++;
            checked += !noted;
        }
        dnnjit_free(name);
    }
    if (checked == 0)
        fail_msg("%s: no plan to check without the NONDETERMINISTIC note", label);
    dnnjit_graph_destroy(g);
}

static void norm_backward(dnnjit_data_type_t io, int64_t rows, int64_t cols, bool rms)
{
    char label[96];
    dnnjit_graph_t g = tu_norm_backward_graph(io, rows, cols, rms, true, label, sizeof label);
    /* Positive inputs, as in gpu-rows: sums of both signs over a column could cancel. */
    same_bits(g, rows_or_fallback, 0, 0.1, 1.0, tu_tolerance(io), label);
}

static void reduction(dnnjit_data_type_t io, int64_t rows, int64_t cols, bool columns, dnnjit_reduction_mode_t mode)
{
    char label[96];
    dnnjit_graph_t g = tu_reduction_graph(io, rows, cols, NULL, columns, mode, label, sizeof label);
    same_bits(g, rows_or_fallback, 0, -1.0, 1.0, tu_tolerance(io), label);
}

/* Fused DSCALE and DBIAS: row blocks' partial sums added by column blocks; 4096 and 32768
 * wide also by cluster plans, whose grid loading fits to the clusters the device holds
 * (the concurrent run leaves it fewer SMs, so some clusters start late). */
static void norm_backward_sums(void **state)
{
    (void)state;
    norm_backward(DNNJIT_DATA_TYPE_HALF, 5001, 1000, false);
    norm_backward(DNNJIT_DATA_TYPE_BFLOAT16, 1200, 4096, true);
    norm_backward(DNNJIT_DATA_TYPE_BFLOAT16, 300, 32768, false);
}

/* Column plans (segments of rows per strip, added by the strip's last block) and rows split
 * among blocks (added by the row's last block). */
static void reductions(void **state)
{
    (void)state;
    reduction(DNNJIT_DATA_TYPE_HALF, 30000, 1000, true, DNNJIT_REDUCTION_ADD);
    reduction(DNNJIT_DATA_TYPE_FLOAT, 20000, 77, true, DNNJIT_REDUCTION_NORM2);
    reduction(DNNJIT_DATA_TYPE_FLOAT, 3, 300000, false, DNNJIT_REDUCTION_ADD);
    reduction(DNNJIT_DATA_TYPE_BFLOAT16, 2, 1000000, false, DNNJIT_REDUCTION_AVG);
}

/* Split-K: each tile's splits added by the last to arrive, in split order. Few tiles and a
 * long K make both engines list split plans (about a hundred each): the first six of each
 * engine in mode A's order. */
static void split_k(void **state)
{
    (void)state;
    const struct {
        dnnjit_data_type_t io;
        int64_t batch, m, k, n;
        double tol;
    } cases[] = {{DNNJIT_DATA_TYPE_BFLOAT16, 1, 64, 8192, 256, 1e-2}, {DNNJIT_DATA_TYPE_FLOAT, 2, 77, 4097, 130, 1e-3}};
    const pick_t engines[] = {sm80_split, sm90_split};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
            char label[64];
            snprintf(label, sizeof label, "matmul %s %lldx%lldx%lldx%lld", dnnjit_data_type_name(cases[c].io),
                     (long long)cases[c].batch, (long long)cases[c].m, (long long)cases[c].k, (long long)cases[c].n);
            dnnjit_graph_t g = tu_gpu_matmul_graph(cases[c].io, cases[c].batch, cases[c].m, cases[c].k, cases[c].n);
            same_bits(g, engines[e], 6, -1.0, 1.0, cases[c].tol, label);
        }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(norm_backward_sums),
        cmocka_unit_test(reductions),
        cmocka_unit_test(split_k),
    };
    return TU_GPU_MAIN(tests, argc, argv, tu_gpu_available);
}
