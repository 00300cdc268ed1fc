/* GPU: the rows engine against the float64 reference executor on fresh random data with
 * outputs poisoned with NaN: every row op, phase and io type at odd widths (1, 7, 77,
 * 1000, 4097), long rows (register and stream plans), statistics outputs, fused prologues
 * and epilogues, and reductions over the outer axes. For each graph the plan mode A puts first and the one mode B
 * puts first run, and mode FALLBACK's; for one width per op every plan of the rows engine
 * runs. Relative error ||out - ref|| / ||ref|| must stay under 1e-5 for FLOAT and 1e-2 for
 * HALF and BFLOAT16 inputs; NaN fails. Skipped (77) without a GPU. */
#include "gpu_util.h"

#include "gpu.h"

#include <stdio.h>
#include <string.h>

static const dnnjit_data_type_t io_types[] = {DNNJIT_DATA_TYPE_FLOAT, DNNJIT_DATA_TYPE_HALF,
                                              DNNJIT_DATA_TYPE_BFLOAT16};
enum { IO_TYPE_COUNT = sizeof io_types / sizeof io_types[0] };
static const int64_t widths[] = {1, 7, 77, 1000, 4097};
enum { WIDTH_COUNT = sizeof widths / sizeof widths[0], ROWS = 67 };

static int plans_run;

/* Builds and runs plan `index` of g, failing when its error exceeds tol. */
static void run_plan(dnnjit_graph_t g, int64_t index, double lo, double hi, double tol, const char *label)
{
    static uint64_t rng = 0x2545f4914f6cdd1dull;
    char *name = NULL;
    TU_OK(dnnjit_graph_get_plan_name(g, index, &name));
    TU_OK(dnnjit_graph_build_plan_at_index(g, index));
    printf("  %-44s plan %s\n", label, name);
    gpu_run_result_t r;
    TU_OK(gpu_run_and_check(g, &rng, lo, hi, true, 0, &r));
    if (!(r.max_rel_error < tol))
        fail_msg("%s: plan %s: relative error %g exceeds %g", label, name, r.max_rel_error, tol);
    plans_run++;
    dnnjit_free(name);
}

/* Runs mode A's first plan, mode B's first plan (when it differs) and mode FALLBACK's plan;
 * with `sweep`, every plan of the rows engine too. Every group of g must be a row group or the plan names say
 * which engine ran it. Destroys g. */
static void check(dnnjit_graph_t g, double lo, double hi, double tol, bool sweep, const char *label)
{
    dnnjit_heur_mode_t a = DNNJIT_HEUR_MODE_A, b = DNNJIT_HEUR_MODE_B;
    TU_OK(dnnjit_graph_create_execution_plans(g, &a, 1));
    char *first_a = NULL;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &first_a));
    if (!strstr(first_a, "rows_"))
        fail_msg("%s: mode A's first plan %s does not use the rows engine", label, first_a);
    run_plan(g, 0, lo, hi, tol, label);
    int64_t count;
    TU_OK(dnnjit_graph_get_plan_count(g, &count));
    for (int64_t i = 1; sweep && i < count; i++) {
        char *name = NULL;
        TU_OK(dnnjit_graph_get_plan_name(g, i, &name));
        bool rows = strncmp(name, "rows_", 5) == 0;
        dnnjit_free(name);
        if (rows)
            run_plan(g, i, lo, hi, tol, label);
    }
    TU_OK(dnnjit_graph_create_execution_plans(g, &b, 1));
    char *first_b = NULL;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &first_b));
    if (strcmp(first_a, first_b) != 0)
        run_plan(g, 0, lo, hi, tol, label);
    /* Mode FALLBACK: the fallback engine for an op alone, the rows engine's simplest plan
     * for an op fused with pointwise nodes (which the fallback engine cannot run). */
    dnnjit_heur_mode_t fb = DNNJIT_HEUR_MODE_FALLBACK;
    TU_OK(dnnjit_graph_create_execution_plans(g, &fb, 1));
    run_plan(g, 0, lo, hi, tol, label);
    dnnjit_free(first_a);
    dnnjit_free(first_b);
    dnnjit_graph_destroy(g);
}


/* The width index a sweep of every plan runs at. */
enum { SWEEP_WIDTH = 3 };

/* ---- one op ---------------------------------------------------------------------- */

static void softmax_forward(dnnjit_data_type_t io, int64_t rows, int64_t cols, int stats, bool sweep)
{
    dnnjit_graph_t g = tu_gpu_graph(io);
    dnnjit_tensor_t p = tu_tensor(g, "p", 2, TU_DIMS(rows, cols), NULL, 0), s, s0 = 0, s1 = 0;
    TU_OK(dnnjit_graph_softmax(g, p, &(dnnjit_softmax_attr_t){.stats = stats}, &s, stats ? &s0 : NULL,
                               stats == 2 ? &s1 : NULL));
    tu_output(g, s);
    tu_output(g, s0);
    tu_output(g, s1);
    char label[96];
    snprintf(label, sizeof label, "softmax stats %d %s %lldx%lld", stats, dnnjit_data_type_name(io), (long long)rows,
             (long long)cols);
    check(g, -4.0, 4.0, tu_tolerance(io), sweep, label);
}

static void softmax_backward(dnnjit_data_type_t io, int64_t rows, int64_t cols, bool sweep)
{
    dnnjit_graph_t g = tu_gpu_graph(io);
    dnnjit_tensor_t y = tu_tensor(g, "y", 2, TU_DIMS(rows, cols), NULL, 0);
    dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(rows, cols), NULL, 0), dx;
    TU_OK(dnnjit_graph_softmax_backward(g, y, dy, NULL, &dx));
    tu_output(g, dx);
    char label[96];
    snprintf(label, sizeof label, "softmax backward %s %lldx%lld", dnnjit_data_type_name(io), (long long)rows,
             (long long)cols);
    check(g, -1.0, 1.0, tu_tolerance(io), sweep, label);
}

/* x is drawn from [center - 1, center + 1). */
static void norm_forward(dnnjit_data_type_t io, int64_t rows, int64_t cols, bool rms, dnnjit_norm_phase_t phase,
                         bool sweep, double center)
{
    dnnjit_graph_t g = tu_gpu_graph(io);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(rows, cols), NULL, 0);
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, cols), NULL, 0);
    /* RMS norm without a bias in the training phase, with one in inference. */
    bool bias_used = !rms || phase == DNNJIT_NORM_PHASE_INFERENCE;
    dnnjit_tensor_t bias = bias_used ? tu_tensor(g, "bias", 2, TU_DIMS(1, cols), NULL, 0) : 0;
    dnnjit_tensor_t y, mean = 0, inv = 0;
    bool training = phase == DNNJIT_NORM_PHASE_TRAINING;
    dnnjit_norm_attr_t attr = {.phase = phase, .epsilon_value = 1e-5};
    if (rms)
        TU_OK(dnnjit_graph_rmsnorm(g, x, scale, bias, &attr, &y, training ? &inv : NULL));
    else
        TU_OK(dnnjit_graph_layernorm(g, x, scale, bias, &attr, &y, training ? &mean : NULL, training ? &inv : NULL));
    tu_output(g, y);
    tu_output(g, mean);
    tu_output(g, inv);
    char label[96];
    snprintf(label, sizeof label, "%s %s %s %lldx%lld around %g", rms ? "rmsnorm" : "layernorm",
             training ? "training" : "inference", dnnjit_data_type_name(io), (long long)rows, (long long)cols, center);
    check(g, center - 1.0, center + 1.0, tu_tolerance(io), sweep, label);
}

/* Inputs in center + [0.1, 1]. */
static void norm_backward(dnnjit_data_type_t io, int64_t rows, int64_t cols, bool rms, bool dbias, bool sweep,
                          double center)
{
    char label[96];
    dnnjit_graph_t g = tu_norm_backward_graph(io, rows, cols, rms, dbias, label, sizeof label);
    /* Positive inputs: DBIAS (and RMS norm's DSCALE) of a narrow row is a sum over the rows
     * of a single column, which values of both signs could cancel to near zero, where any
     * float sum's rounding is a large relative error. */
    check(g, center + 0.1, center + 1.0, tu_tolerance(io), sweep, label);
}

static void reduction(dnnjit_data_type_t io, int64_t rows, int64_t cols, const int64_t *stride, bool columns,
                      dnnjit_reduction_mode_t mode, bool sweep)
{
    char label[96];
    dnnjit_graph_t g = tu_reduction_graph(io, rows, cols, stride, columns, mode, label, sizeof label);
    /* Products of values near 1 stay representable over long rows. */
    bool mul = mode == DNNJIT_REDUCTION_MUL;
    check(g, mul ? 0.99 : -1.0, mul ? 1.01 : 1.0, tu_tolerance(io), sweep, label);
}

/* ---- every op, phase, type and width ------------------------------------------------ */

static void softmax_all(void **state)
{
    (void)state;
    for (int t = 0; t < IO_TYPE_COUNT; t++)
        for (int w = 0; w < WIDTH_COUNT; w++) {
            softmax_forward(io_types[t], ROWS, widths[w], (t + w) % 3, w == SWEEP_WIDTH && t == 2);
            softmax_backward(io_types[t], ROWS, widths[w], w == SWEEP_WIDTH && t == 1);
        }
}

static void norms_all(void **state)
{
    (void)state;
    for (int t = 0; t < IO_TYPE_COUNT; t++)
        for (int w = 0; w < WIDTH_COUNT; w++)
            for (int rms = 0; rms < 2; rms++) {
                bool sweep = w == SWEEP_WIDTH && t == 2;
                norm_forward(io_types[t], ROWS, widths[w], rms, DNNJIT_NORM_PHASE_INFERENCE, sweep, 0.0);
                norm_forward(io_types[t], ROWS, widths[w], rms, DNNJIT_NORM_PHASE_TRAINING, false, 0.0);
                norm_backward(io_types[t], ROWS, widths[w], rms, (w + rms) % 2, sweep, 0.0);
            }
}

/* Rows far from zero (values 1000 +- 1 in float): a float sum of such a row is off by up to
 * its length in ulps of 1000, which a mean taken from it alone passes on to every x - mean
 * (on the H200, 6.5e-5 relative error at 77 wide with the plain two passes, 2e-5 with the
 * mean corrected but rounded to one float); every plan, the statistics written, long rows
 * re-read from memory included. */
static void norms_far_from_zero(void **state)
{
    (void)state;
    static const int64_t shapes[][2] = {{ROWS, 77}, {ROWS, 1000}, {ROWS, 4097}, {5, 32768}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int rms = 0; rms < 2; rms++)
            norm_forward(DNNJIT_DATA_TYPE_FLOAT, shapes[s][0], shapes[s][1], rms, DNNJIT_NORM_PHASE_TRAINING, true,
                         1000.0);
    /* Layer norm backward of bf16 x near its mean, both around 1000, which the rows engine
     * computes without subtracting the mean an element (DjHeldRow's FOLD): every plan. On
     * the H200 the worst DX was 3.4e-3 from float64 (5x32768, a scalar stream plan). */
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        norm_backward(DNNJIT_DATA_TYPE_BFLOAT16, shapes[s][0], shapes[s][1], false, true, true, 1000.0);
}

/* Every reduction mode at every width over ROWS rows, the io type turning with both; every
 * plan at SWEEP_WIDTH in mode ADD. Over the inner axis, or with `columns` the outer one. */
static void every_mode_and_width(bool columns)
{
    for (int mode = 0; mode < DNNJIT_REDUCTION_MODE_COUNT_; mode++)
        for (int w = 0; w < WIDTH_COUNT; w++)
            reduction(io_types[(mode + w) % IO_TYPE_COUNT], ROWS, widths[w], NULL, columns,
                      (dnnjit_reduction_mode_t)mode, w == SWEEP_WIDTH && mode == DNNJIT_REDUCTION_ADD);
}

static void reductions_all(void **state)
{
    (void)state;
    every_mode_and_width(false);
}

/* Reductions over the outer axes (column plans): every mode at every width over ROWS rows
 * (every plan at 1000); more rows, so that each strip of columns is cut into segments whose
 * results meet in the scratch; rows whose starts are not 16-byte aligned (a stride of 1003
 * halves), which a vector plan reads one element at a time; two outer axes of three; and a
 * bias gradient with a prologue and an epilogue, sum(dy * mask) * scale + c. */
static void column_reductions(void **state)
{
    (void)state;
    every_mode_and_width(true);
    reduction(DNNJIT_DATA_TYPE_FLOAT, 20000, 77, NULL, true, DNNJIT_REDUCTION_ADD, true);
    reduction(DNNJIT_DATA_TYPE_BFLOAT16, 30000, 1000, NULL, true, DNNJIT_REDUCTION_AVG, true);
    reduction(DNNJIT_DATA_TYPE_HALF, 5001, 4097, NULL, true, DNNJIT_REDUCTION_NORM2, false);
    reduction(DNNJIT_DATA_TYPE_FLOAT, 3000, 1, NULL, true, DNNJIT_REDUCTION_MAX, true);
    reduction(DNNJIT_DATA_TYPE_HALF, 2000, 1000, TU_DIMS(1003, 1), true, DNNJIT_REDUCTION_ADD, true);

    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_BFLOAT16);
    dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(3, 700, 1000), NULL, 0), y;
    TU_OK(dnnjit_graph_reduction(g, x, &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_AMAX, .axes = 3}, &y));
    tu_output(g, y);
    check(g, -1.0, 1.0, 1e-2, true, "column reduction AMAX bf16 3x700x1000 over 2 axes");

    g = tu_gpu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(4000, 1000), NULL, 0);
    dnnjit_tensor_t mask = tu_tensor(g, "mask", 2, TU_DIMS(4000, 1000), NULL, 0);
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, 1000), NULL, 0);
    dnnjit_tensor_t c = tu_tensor(g, "c", 2, TU_DIMS(1, 1000), NULL, 0);
    TU_OK(dnnjit_graph_reduction(g, tu_pointwise(g, DNNJIT_POINTWISE_MUL, dy, mask),
                                 &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_ADD, .axes = 1}, &y));
    tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, tu_pointwise(g, DNNJIT_POINTWISE_MUL, y, scale), c));
    check(g, -1.0, 1.0, 1e-2, true, "masked bias gradient half 4000x1000, scaled");
}

/* Fused norm backward plans (DSCALE and DBIAS added up by the row blocks) with more rows
 * than their row blocks, so that each block sums several rows: 4096 bf16 (512 and 256
 * threads a row, 264 and 528 blocks), 8192 (1024 threads, 132 blocks), 1000 halves (4
 * rows of 64 threads a block, 528 blocks; 5001 rows leave the last block's last rows
 * empty) and floats (128 threads, 1056 blocks); rows shared by clusters of blocks, 16384
 * wide (4 blocks a row, 66 clusters; 2 and 8 in the sweep) and 32768 (8 a row, 33
 * clusters, more than an H200 may hold at once); every plan. */
static void fused_column_sums(void **state)
{
    (void)state;
    norm_backward(DNNJIT_DATA_TYPE_BFLOAT16, 1200, 4096, false, true, true, 0.0);
    norm_backward(DNNJIT_DATA_TYPE_BFLOAT16, 600, 8192, true, false, true, 0.0);
    norm_backward(DNNJIT_DATA_TYPE_HALF, 700, 16384, false, true, true, 0.0);
    norm_backward(DNNJIT_DATA_TYPE_BFLOAT16, 300, 32768, true, true, true, 0.0);
    norm_backward(DNNJIT_DATA_TYPE_HALF, 5001, 1000, true, true, true, 0.0);
    norm_backward(DNNJIT_DATA_TYPE_FLOAT, 2500, 1000, false, true, true, 0.0);
}

/* Rows too long for registers at fewer threads (block-wide and stream plans), few of
 * them (split plans for reductions), every plan. */
static void long_rows(void **state)
{
    (void)state;
    softmax_forward(DNNJIT_DATA_TYPE_BFLOAT16, 5, 32768, 1, true);
    softmax_forward(DNNJIT_DATA_TYPE_FLOAT, 3, 65537, 2, true);
    norm_forward(DNNJIT_DATA_TYPE_HALF, 5, 32768, false, DNNJIT_NORM_PHASE_TRAINING, true, 0.0);
    norm_forward(DNNJIT_DATA_TYPE_BFLOAT16, 3, 100000, true, DNNJIT_NORM_PHASE_TRAINING, true, 0.0);
    norm_backward(DNNJIT_DATA_TYPE_BFLOAT16, 5, 32768, false, true, true, 0.0);
    norm_backward(DNNJIT_DATA_TYPE_FLOAT, 300, 1024, true, true, true, 0.0);
    softmax_backward(DNNJIT_DATA_TYPE_HALF, 4, 40000, true);
    reduction(DNNJIT_DATA_TYPE_FLOAT, 3, 300000, NULL, false, DNNJIT_REDUCTION_NORM2, true);
    reduction(DNNJIT_DATA_TYPE_HALF, 1, 4000000, NULL, false, DNNJIT_REDUCTION_AMAX, true);
    reduction(DNNJIT_DATA_TYPE_BFLOAT16, 2, 1000000, NULL, false, DNNJIT_REDUCTION_AVG, false);
}

/* ---- fused groups ------------------------------------------------------------------ */

/* h = x + r and y = rmsnorm(h) * w, both written, one kernel. */
static void add_rmsnorm(void **state)
{
    (void)state;
    for (int t = 0; t < IO_TYPE_COUNT; t++)
        for (int w = 0; w < WIDTH_COUNT; w++) {
            dnnjit_graph_t g = tu_gpu_graph(io_types[t]);
            dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(ROWS, widths[w]), NULL, 0);
            dnnjit_tensor_t r = tu_tensor(g, "r", 2, TU_DIMS(ROWS, widths[w]), NULL, 0);
            dnnjit_tensor_t weight = tu_tensor(g, "w", 2, TU_DIMS(1, widths[w]), NULL, 0), y, inv;
            dnnjit_tensor_t h = tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, x, r));
            TU_OK(dnnjit_graph_rmsnorm(g, h, weight, 0, &(dnnjit_norm_attr_t){.phase = DNNJIT_NORM_PHASE_TRAINING}, &y,
                                       &inv));
            tu_output(g, y);
            tu_output(g, inv);
            char label[96];
            snprintf(label, sizeof label, "add+rmsnorm %s %dx%lld", dnnjit_data_type_name(io_types[t]), ROWS,
                     (long long)widths[w]);
            check(g, -1.0, 1.0, tu_tolerance(io_types[t]), w == SWEEP_WIDTH && t == 1, label);
        }
}

/* softmax(x * 0.5 + bias[col] - m[row]) * x * s (runtime scalar), MAX_SUM_EXP statistics;
 * 3-D x. */
static void fused_softmax(void **state)
{
    (void)state;
    for (int t = 0; t < IO_TYPE_COUNT; t++)
        for (int w = 0; w < WIDTH_COUNT; w++) {
            int64_t cols = widths[w];
            dnnjit_graph_t g = tu_gpu_graph(io_types[t]);
            dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(3, 11, cols), NULL, 0);
            dnnjit_tensor_t bias = tu_tensor(g, "bias", 1, TU_DIMS(cols), NULL, 0);
            dnnjit_tensor_t m = tu_tensor(g, "m", 3, TU_DIMS(3, 11, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
            dnnjit_tensor_t half, s_scale, s, s0, s1;
            TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "half", .ndim = 1, .dim = TU_DIMS(1),
                                                                  .data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                                  .is_pass_by_value = true, .has_value = true,
                                                                  .value = 0.5},
                                      &half));
            TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "s", .ndim = 1, .dim = TU_DIMS(1),
                                                                  .data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                                  .is_pass_by_value = true},
                                      &s_scale));
            dnnjit_tensor_t p = tu_pointwise(g, DNNJIT_POINTWISE_SUB, tu_pointwise(g, DNNJIT_POINTWISE_ADD, tu_pointwise(g, DNNJIT_POINTWISE_MUL, x, half), bias), m);
            TU_OK(dnnjit_graph_softmax(g, p, &(dnnjit_softmax_attr_t){.stats = DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP}, &s,
                                       &s0, &s1));
            tu_output(g, s0);
            tu_output(g, s1);
            tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_MUL, tu_pointwise(g, DNNJIT_POINTWISE_MUL, s, x), s_scale));
            char label[96];
            snprintf(label, sizeof label, "fused softmax %s 3x11x%lld", dnnjit_data_type_name(io_types[t]),
                     (long long)cols);
            check(g, -2.0, 2.0, tu_tolerance(io_types[t]), w == SWEEP_WIDTH && t == 0, label);
        }
}

/* log(sum(exp(x))) + c over the innermost axis; layer norm of x * g with an epilogue
 * relu(y) + x; RMS norm backward of dy * mask with dx + x written. */
static void fused_others(void **state)
{
    (void)state;
    for (int w = 0; w < WIDTH_COUNT; w++) {
        dnnjit_data_type_t io = io_types[w % IO_TYPE_COUNT];
        int64_t cols = widths[w];
        char label[96];

        dnnjit_graph_t g = tu_gpu_graph(io);
        dnnjit_tensor_t x = tu_tensor(g, "x", 3, TU_DIMS(3, 7, cols), NULL, 0);
        dnnjit_tensor_t c = tu_tensor(g, "c", 3, TU_DIMS(3, 7, 1), NULL, 0), y;
        TU_OK(dnnjit_graph_reduction(g, tu_pointwise(g, DNNJIT_POINTWISE_EXP, x, 0),
                                     &(dnnjit_reduction_attr_t){.mode = DNNJIT_REDUCTION_ADD, .axes = 4}, &y));
        tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, tu_pointwise(g, DNNJIT_POINTWISE_LOG, y, 0), c));
        snprintf(label, sizeof label, "logsumexp %s 3x7x%lld", dnnjit_data_type_name(io), (long long)cols);
        check(g, -1.0, 1.0, tu_tolerance(io), w == SWEEP_WIDTH, label);

        g = tu_gpu_graph(io);
        x = tu_tensor(g, "x", 2, TU_DIMS(ROWS, cols), NULL, 0);
        dnnjit_tensor_t gate = tu_tensor(g, "gate", 2, TU_DIMS(ROWS, cols), NULL, 0);
        dnnjit_tensor_t scale = tu_tensor(g, "scale", 2, TU_DIMS(1, cols), NULL, 0);
        dnnjit_tensor_t bias = tu_tensor(g, "bias", 2, TU_DIMS(1, cols), NULL, 0), mean, inv;
        TU_OK(dnnjit_graph_layernorm(g, tu_pointwise(g, DNNJIT_POINTWISE_MUL, x, gate), scale, bias,
                                     &(dnnjit_norm_attr_t){.phase = DNNJIT_NORM_PHASE_TRAINING}, &y, &mean, &inv));
        tu_output(g, mean);
        tu_output(g, inv);
        tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, tu_pointwise(g, DNNJIT_POINTWISE_RELU_FWD, y, 0), x));
        snprintf(label, sizeof label, "gated layernorm relu %s %dx%lld", dnnjit_data_type_name(io), ROWS,
                 (long long)cols);
        check(g, -1.0, 1.0, tu_tolerance(io), w == SWEEP_WIDTH, label);

        g = tu_gpu_graph(io);
        dnnjit_tensor_t dy = tu_tensor(g, "dy", 2, TU_DIMS(ROWS, cols), NULL, 0);
        dnnjit_tensor_t mask = tu_tensor(g, "mask", 2, TU_DIMS(ROWS, cols), NULL, 0);
        x = tu_tensor(g, "x", 2, TU_DIMS(ROWS, cols), NULL, 0);
        scale = tu_tensor(g, "scale", 2, TU_DIMS(1, cols), NULL, 0);
        inv = tu_stats_tensor(g, "inv", ROWS);
        dnnjit_tensor_t dx, ds, db;
        TU_OK(dnnjit_graph_rmsnorm_backward(g, tu_pointwise(g, DNNJIT_POINTWISE_MUL, dy, mask), x, scale, inv, NULL, &dx, &ds,
                                            &db));
        tu_output(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, dx, x));
        tu_output(g, ds);
        tu_output(g, db);
        snprintf(label, sizeof label, "masked rmsnorm backward %s %dx%lld", dnnjit_data_type_name(io), ROWS,
                 (long long)cols);
        check(g, 0.1, 1.0, tu_tolerance(io), w == SWEEP_WIDTH, label); /* positive: see norm_backward */
    }
}

/* Layouts the vector path cannot take: rows whose starts are not 16-byte aligned, inner
 * axes swapped in memory (column offsets split over two axes), norms over two axes, a
 * broadcast batch axis in a prologue operand. */
static void strided_layouts(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t x = tu_tensor(g, "x", 2, TU_DIMS(ROWS, 1000), TU_DIMS(1003, 1), 0), s;
    TU_OK(dnnjit_graph_softmax(g, x, NULL, &s, NULL, NULL));
    tu_output(g, s);
    TU_OK(dnnjit_tensor_set_stride(g, s, 2, TU_DIMS(1001, 1)));
    check(g, -2.0, 2.0, 1e-2, true, "softmax half rows at odd strides");

    g = tu_gpu_graph(DNNJIT_DATA_TYPE_FLOAT);
    x = tu_tensor(g, "x", 4, TU_DIMS(4, 6, 10, 12), TU_DIMS(720, 120, 1, 10), 0);
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 4, TU_DIMS(1, 1, 10, 12), NULL, 0);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 4, TU_DIMS(1, 1, 10, 12), NULL, 0);
    dnnjit_tensor_t eps = tu_tensor(g, "eps", 1, TU_DIMS(1), NULL, 0), y, mean, inv;
    TU_OK(dnnjit_graph_layernorm(g, x, scale, bias,
                                 &(dnnjit_norm_attr_t){.phase = DNNJIT_NORM_PHASE_TRAINING, .norm_axes = 2,
                                                       .epsilon = eps},
                                 &y, &mean, &inv));
    tu_output(g, y);
    tu_output(g, mean);
    tu_output(g, inv);
    check(g, 0.001, 1.0, 1e-5, true, "layernorm over 2 swapped axes, eps buffer");

    g = tu_gpu_graph(DNNJIT_DATA_TYPE_BFLOAT16);
    x = tu_tensor(g, "x", 3, TU_DIMS(5, 9, 640), TU_DIMS(640, 3200, 1), 0);
    dnnjit_tensor_t shared = tu_tensor(g, "shared", 3, TU_DIMS(1, 9, 640), NULL, 0), dy, dx;
    TU_OK(dnnjit_graph_softmax(g, tu_pointwise(g, DNNJIT_POINTWISE_ADD, x, shared), NULL, &y, NULL, NULL));
    dy = tu_tensor(g, "dy", 3, TU_DIMS(5, 9, 640), NULL, 0);
    TU_OK(dnnjit_graph_softmax_backward(g, y, dy, NULL, &dx));
    tu_output(g, dx);
    check(g, -1.0, 1.0, 1e-2, true, "softmax then its backward, permuted batch");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(softmax_all),       cmocka_unit_test(norms_all),    cmocka_unit_test(norms_far_from_zero),
        cmocka_unit_test(reductions_all),    cmocka_unit_test(long_rows),    cmocka_unit_test(add_rmsnorm),
        cmocka_unit_test(fused_softmax),     cmocka_unit_test(fused_column_sums), cmocka_unit_test(fused_others),
        cmocka_unit_test(strided_layouts),   cmocka_unit_test(column_reductions),
    };
    int rc = TU_GPU_MAIN(tests, argc, argv, tu_gpu_available);
    if (plans_run)
        printf("%d plans run\n", plans_run);
    return rc;
}
