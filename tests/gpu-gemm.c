/* GPU: the tensor-core GEMM engine, every plan heuristics A and B list (every tile, split-K
 * and fp32 mode that supports the case), against the float64 reference on fresh random
 * data with poisoned outputs: fp16, bf16 and fp32 inputs; odd sizes; A and B in row- and
 * column-major order, padded and unaligned leading dimensions; broadcast batches; fused
 * epilogues; operands computed by fused pointwise prologues, in modes A, B and FALLBACK;
 * inputs of two types (multiplied in fp32); every knob of the skinny kernel.
 * Plans noted REDUCED_PRECISION (TF32) are held to 1e-3. Skipped (77) without a GPU. */
#include "gpu_util.h"

#include "gpu.h"

#include <stdio.h>
#include <string.h>

typedef enum layout { ROW, COL, ROW_PADDED, ROW_UNALIGNED } layout_t;

typedef struct gemm_case {
    const char *label;
    dnnjit_data_type_t io;
    int64_t batch_a, batch_b, m, n, k;
    layout_t a_layout, b_layout;
    tu_gemm_epilogue_t epilogue;
} gemm_case_t;

/* A's and B's types in memory; 0 for the case's io type. */
typedef struct operand_types {
    dnnjit_data_type_t a, b;
} operand_types_t;

static const operand_types_t IO_TYPES = {0, 0};

/* Pointwise nodes computing an operand, fused into the matmul's group as its prologue.
 * NONZERO_AT_ZERO (A = X + 1, B = exp(W)) would add to every product through the K padding
 * if the edge were filled with the prologue's value at zero. WIDE_SCALE_B is SCALE_B with
 * its result left in the graph's FLOAT intermediate type, beside a 16-bit A. */
typedef enum prologue { NO_PROLOGUE, RELU_A, SCALE_B, CAST_A, ADD_A, NONZERO_AT_ZERO, WIDE_SCALE_B } prologue_t;

typedef struct prologue_case {
    gemm_case_t gemm;
    prologue_t prologue;
} prologue_case_t;

/* Strides of a [batch, rows, cols] operand in the given layout. */
static void strides_for(layout_t layout, int64_t rows, int64_t cols, int64_t stride[3])
{
    int64_t pitch = layout == ROW_PADDED ? cols + 8 : layout == ROW_UNALIGNED ? cols + 3 : cols;
    if (layout == COL) {
        stride[1] = 1;
        stride[2] = rows;
        stride[0] = rows * cols;
    } else {
        stride[2] = 1;
        stride[1] = pitch;
        stride[0] = rows * pitch;
    }
}

/* Operand t (A, or B when is_b) through the case's prologue when it has one on that side:
 * relu(X); X * scale with scale broadcast over the batch and K; X cast from FLOAT to the
 * case's type; X + Y with Y broadcast over the batch; X + 1 or exp(X). The operand takes
 * the case's type, but for WIDE_SCALE_B's, which stays FLOAT. */
static dnnjit_tensor_t with_prologue(dnnjit_graph_t g, const gemm_case_t *c, prologue_t pro, dnnjit_tensor_t t,
                                     bool is_b)
{
    int64_t rows = is_b ? c->k : c->m, cols = is_b ? c->n : c->k;
    dnnjit_pointwise_mode_t mode = DNNJIT_POINTWISE_IDENTITY;
    dnnjit_tensor_t other = 0, out;
    if (pro == RELU_A && !is_b) {
        mode = DNNJIT_POINTWISE_RELU_FWD;
    } else if ((pro == SCALE_B || pro == WIDE_SCALE_B) && is_b) {
        mode = DNNJIT_POINTWISE_MUL;
        other = tu_tensor(g, "scale", 3, TU_DIMS(1, 1, cols), NULL, 0);
    } else if (pro == ADD_A && !is_b) {
        mode = DNNJIT_POINTWISE_ADD;
        other = tu_tensor(g, "addend", 3, TU_DIMS(1, rows, cols), NULL, 0);
    } else if (pro == NONZERO_AT_ZERO && is_b) {
        mode = DNNJIT_POINTWISE_EXP;
    } else if (pro == NONZERO_AT_ZERO) {
        mode = DNNJIT_POINTWISE_ADD;
        TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "one", .ndim = 1, .dim = TU_DIMS(1),
                                                              .data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                              .is_pass_by_value = true, .has_value = true,
                                                              .value = 1.0},
                                  &other));
    } else if (pro != CAST_A || is_b) {
        return t;
    }
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = mode}, t, other, 0, &out));
    if (pro != WIDE_SCALE_B)
        TU_OK(dnnjit_tensor_set_data_type(g, out, c->io));
    return out;
}

static dnnjit_graph_t build_case(const gemm_case_t *c, prologue_t pro, operand_types_t types)
{
    dnnjit_graph_t g = tu_gpu_graph(c->io);
    int64_t sa[3], sb[3];
    strides_for(c->a_layout, c->m, c->k, sa);
    strides_for(c->b_layout, c->k, c->n, sb);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(c->batch_a, c->m, c->k), sa,
                                  pro == CAST_A ? DNNJIT_DATA_TYPE_FLOAT : types.a);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(c->batch_b, c->k, c->n), sb, types.b);
    a = with_prologue(g, c, pro, a, false);
    b = with_prologue(g, c, pro, b, true);
    dnnjit_tensor_t y;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &y));
    int64_t batch = c->batch_a > c->batch_b ? c->batch_a : c->batch_b;
    tu_gemm_epilogue(g, y, c->epilogue, batch, c->m, c->n);
    return g;
}

/* Runs the case's plans (the first `limit` of those modes A and B list, or all when limit
 * is 0; with `prefix`, only the plans whose name starts with it); returns how many of those
 * run were tensor-core GEMM plans. */
static int run_case(const gemm_case_t *c, prologue_t pro, operand_types_t types, int64_t limit, const char *prefix)
{
    static uint64_t rng = 0x243f6a8885a308d3ull;
    static const dnnjit_heur_mode_t modes[] = {DNNJIT_HEUR_MODE_A, DNNJIT_HEUR_MODE_B};
    dnnjit_graph_t g = build_case(c, pro, types);
    TU_OK(dnnjit_graph_build(g, modes, 2));
    int64_t plans = 0;
    int gemm_plans = 0;
    TU_OK(dnnjit_graph_get_plan_count(g, &plans));
    for (int64_t p = 0; p < plans && (!limit || p < limit); p++) {
        char *name = NULL;
        uint32_t notes = 0;
        TU_OK(dnnjit_graph_get_plan_name(g, p, &name));
        if (prefix && strncmp(name, prefix, strlen(prefix)) != 0) {
            dnnjit_free(name);
            continue;
        }
        TU_OK(dnnjit_graph_get_plan_behavior_notes(g, p, &notes));
        TU_OK(dnnjit_graph_build_plan_at_index(g, p));
        double tol = notes & DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION ? 1e-3 : tu_tolerance(c->io);
        if (c->epilogue == TU_SCALE_CAST && tol < 1e-2)
            tol = 1e-2; /* the output is HALF */
        gpu_run_result_t r;
        TU_OK(gpu_run_and_check(g, &rng, -1.0, 1.0, true, 0, &r));
        printf("  %-34s %-44s rel %.3g (limit %g)\n", c->label, name, r.max_rel_error, tol);
        if (!(r.max_rel_error < tol))
            fail_msg("%s: plan %s: relative error %g exceeds %g", c->label, name, r.max_rel_error, tol);
        gemm_plans += strncmp(name, "gemm_", 5) == 0;
        dnnjit_free(name);
    }
    dnnjit_graph_destroy(g);
    return gemm_plans;
}

/* The "every knob" cases run every plan listed (every tile, split-K and fp32 mode); the
 * others the first few, as compiling each plan takes a while. */
static void run_all(const gemm_case_t *cases, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        int64_t limit = strncmp(cases[i].label, "every knob", 10) == 0 ? 0 : 4;
        if (run_case(&cases[i], NO_PROLOGUE, IO_TYPES, limit, NULL) == 0)
            fail_msg("%s: no tensor-core GEMM plan was offered", cases[i].label);
    }
}

/* Each "every knob" shape is a case of its own: compiling its 40 to 75 plans is most of
 * this program's time, and ctest and scripts/gpu-sanitize run the cases in parallel. */
static void every_knob_bf16(void **state)
{
    (void)state;
    static const gemm_case_t c = {"every knob 200x136x8192 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 200, 136, 8192,
                                  ROW, COL, TU_BIAS_RELU};
    run_all(&c, 1);
}

static void every_knob_half(void **state)
{
    (void)state;
    static const gemm_case_t c = {"every knob 136x200x4096 half", DNNJIT_DATA_TYPE_HALF, 1, 1, 136, 200, 4096, COL,
                                  ROW, TU_PLAIN};
    run_all(&c, 1);
}

/* M, N and K multiples of every tile: the kernels compile their edge checks away. */
static void every_knob_bf16_whole(void **state)
{
    (void)state;
    static const gemm_case_t c = {"every knob 256x256x2048 bf16 whole", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 256, 256,
                                  2048, ROW, ROW, TU_BIAS_RELU};
    run_all(&c, 1);
}

static void every_knob_half_whole(void **state)
{
    (void)state;
    static const gemm_case_t c = {"every knob 256x256x1024 half whole", DNNJIT_DATA_TYPE_HALF, 2, 2, 256, 256, 1024,
                                  COL, COL, TU_PLAIN};
    run_all(&c, 1);
}

static void half_and_bf16(void **state)
{
    (void)state;
    static const gemm_case_t cases[] = {
        {"seed 000 half", DNNJIT_DATA_TYPE_HALF, 4, 4, 64, 64, 128, ROW, ROW, TU_PLAIN},
        {"1x1x1 half", DNNJIT_DATA_TYPE_HALF, 1, 1, 1, 1, 1, ROW, ROW, TU_PLAIN},
        {"7x7x7 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 7, 7, 7, ROW, ROW, TU_PLAIN},
        {"77x1000x77 bf16 A col", DNNJIT_DATA_TYPE_BFLOAT16, 2, 2, 77, 1000, 77, COL, ROW, TU_PLAIN},
        {"1000x77x1000 half B col", DNNJIT_DATA_TYPE_HALF, 1, 1, 1000, 77, 1000, ROW, COL, TU_BIAS_RELU},
        {"4097x33x40 half both col", DNNJIT_DATA_TYPE_HALF, 1, 1, 4097, 33, 40, COL, COL, TU_PLAIN},
        {"33x4097x64 bf16 padded", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 33, 4097, 64, ROW_PADDED, ROW_PADDED, TU_PLAIN},
        {"130x70x99 half unaligned", DNNJIT_DATA_TYPE_HALF, 2, 2, 130, 70, 99, ROW_UNALIGNED, ROW_UNALIGNED, TU_PLAIN},
        {"batch bcast B half", DNNJIT_DATA_TYPE_HALF, 3, 1, 200, 136, 256, ROW, ROW, TU_ROW_BIAS_RESIDUAL},
        {"batch bcast A bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 5, 64, 200, 96, ROW, COL, TU_BIAS_RELU},
        {"split-K 64x64x8192 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 64, 64, 8192, ROW, ROW, TU_BIAS_RELU},
        {"split-K 100x90x6000 half", DNNJIT_DATA_TYPE_HALF, 1, 1, 100, 90, 6000, COL, ROW, TU_PLAIN},
        {"512x512x512 bf16 scale cast", DNNJIT_DATA_TYPE_BFLOAT16, 2, 2, 512, 512, 512, ROW, ROW, TU_SCALE_CAST},
    };
    run_all(cases, sizeof cases / sizeof cases[0]);
}

static void every_knob_float(void **state)
{
    (void)state;
    static const gemm_case_t c = {"every knob 200x136x8192 float", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 200, 136, 8192, ROW,
                                  ROW, TU_BIAS_RELU};
    run_all(&c, 1);
}

static void every_knob_float_whole(void **state)
{
    (void)state;
    static const gemm_case_t c = {"every knob 256x128x1024 float whole", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 256, 128, 1024,
                                  ROW, COL, TU_PLAIN};
    run_all(&c, 1);
}

static void float_inputs(void **state)
{
    (void)state;
    static const gemm_case_t cases[] = {
        {"7x77x1000 float", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 7, 77, 1000, ROW, ROW, TU_PLAIN},
        {"1000x7x77 float A col", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 1000, 7, 77, COL, ROW, TU_BIAS_RELU},
        {"256x300x128 float B col", DNNJIT_DATA_TYPE_FLOAT, 2, 1, 256, 300, 128, ROW, COL, TU_ROW_BIAS_RESIDUAL},
        {"130x70x99 float unaligned", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 130, 70, 99, ROW_UNALIGNED, COL, TU_PLAIN},
        {"split-K 64x32x8192 float", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 64, 32, 8192, ROW, ROW, TU_PLAIN},
    };
    run_all(cases, sizeof cases / sizeof cases[0]);
}

/* Operands computed by fused pointwise prologues (see with_prologue), with odd sizes and K
 * (so tiles run past every edge), transposed operands, broadcast batches and epilogues;
 * each case's first plans are tensor-core ones, whose names say so. */
static const prologue_case_t prologue_cases[] = {
    {{"prologue relu A 77x1000x77 half", DNNJIT_DATA_TYPE_HALF, 2, 2, 77, 1000, 77, ROW, ROW, TU_BIAS_RELU}, RELU_A},
    {{"prologue relu A col 7x7x7 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 7, 7, 7, COL, ROW, TU_PLAIN}, RELU_A},
    {{"prologue scale B 1000x77x1000 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 1000, 77, 1000, ROW, COL, TU_PLAIN}, SCALE_B},
    {{"prologue scale B bcast 200x136x99 half", DNNJIT_DATA_TYPE_HALF, 3, 1, 200, 136, 99, ROW, ROW, TU_PLAIN}, SCALE_B},
    {{"prologue cast A 77x1000x1000 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 77, 1000, 1000, ROW, ROW, TU_PLAIN}, CAST_A},
    {{"prologue cast A col 130x70x99 half", DNNJIT_DATA_TYPE_HALF, 2, 2, 130, 70, 99, COL, ROW, TU_BIAS_RELU}, CAST_A},
    {{"prologue add A bcast 64x200x77 half", DNNJIT_DATA_TYPE_HALF, 1, 5, 64, 200, 77, ROW, COL, TU_PLAIN}, ADD_A},
    {{"prologue x+1, exp 7x77x1000 half", DNNJIT_DATA_TYPE_HALF, 1, 1, 7, 77, 1000, ROW, ROW, TU_PLAIN}, NONZERO_AT_ZERO},
    {{"prologue x+1, exp 77x7x77 bf16 col", DNNJIT_DATA_TYPE_BFLOAT16, 2, 2, 77, 7, 77, COL, COL, TU_PLAIN},
     NONZERO_AT_ZERO},
    {{"prologue x+1, exp split-K 64x64x8191 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 64, 64, 8191, ROW, ROW, TU_PLAIN},
     NONZERO_AT_ZERO},
    {{"prologue x+1, exp 1000x7x77 float", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 1000, 7, 77, ROW, ROW, TU_BIAS_RELU},
     NONZERO_AT_ZERO},
    {{"prologue relu A 77x1000x7 float", DNNJIT_DATA_TYPE_FLOAT, 1, 3, 77, 1000, 7, COL, ROW, TU_PLAIN}, RELU_A},
    {{"prologue add A 7x77x1000 float", DNNJIT_DATA_TYPE_FLOAT, 2, 2, 7, 77, 1000, ROW, COL, TU_ROW_BIAS_RESIDUAL}, ADD_A},
    {{"prologue wide scale B 1000x77x1000 half", DNNJIT_DATA_TYPE_HALF, 3, 1, 1000, 77, 1000, ROW, ROW, TU_BIAS_RELU},
     WIDE_SCALE_B},
    {{"prologue wide scale B col 77x7x4097 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 77, 7, 4097, COL, COL, TU_PLAIN},
     WIDE_SCALE_B},
};

enum { PROLOGUE_CASE_COUNT = sizeof prologue_cases / sizeof prologue_cases[0] };

static void prologues(void **state)
{
    (void)state;
    for (size_t i = 0; i < PROLOGUE_CASE_COUNT; i++)
        if (run_case(&prologue_cases[i].gemm, prologue_cases[i].prologue, IO_TYPES, 4, NULL) == 0)
            fail_msg("%s: no tensor-core GEMM plan was offered", prologue_cases[i].gemm.label);
}

/* Mode FALLBACK runs the same groups whole: the fallback engine reads each operand through
 * its prologue. */
static void prologues_fallback(void **state)
{
    (void)state;
    static const dnnjit_heur_mode_t modes[] = {DNNJIT_HEUR_MODE_FALLBACK};
    for (size_t i = 0; i < PROLOGUE_CASE_COUNT; i++) {
        const gemm_case_t *c = &prologue_cases[i].gemm;
        dnnjit_graph_t g = build_case(c, prologue_cases[i].prologue, IO_TYPES);
        tu_gpu_check(g, modes, 1, -1.0, 1.0, tu_tolerance(c->io), c->label);
        dnnjit_graph_destroy(g);
    }
}

/* Inputs of two types in memory, multiplied in fp32: a 16-bit operand beside a FLOAT one, in
 * either order and layout, and the two 16-bit types together. */
static void mixed_types(void **state)
{
    (void)state;
    static const struct {
        gemm_case_t gemm;
        operand_types_t types;
    } cases[] = {
        {{"half A, float B 77x1000x1000", DNNJIT_DATA_TYPE_HALF, 2, 2, 77, 1000, 1000, ROW, ROW, TU_BIAS_RELU},
         {0, DNNJIT_DATA_TYPE_FLOAT}},
        {{"float A col, bf16 B 7x77x4097", DNNJIT_DATA_TYPE_BFLOAT16, 1, 3, 7, 77, 4097, COL, ROW, TU_PLAIN},
         {DNNJIT_DATA_TYPE_FLOAT, 0}},
        {{"bf16 A, half B col 130x70x99", DNNJIT_DATA_TYPE_HALF, 2, 2, 130, 70, 99, ROW_UNALIGNED, COL,
          TU_ROW_BIAS_RESIDUAL},
         {DNNJIT_DATA_TYPE_BFLOAT16, 0}},
        {{"half A bcast, float B 1x1x1", DNNJIT_DATA_TYPE_HALF, 1, 4, 1, 1, 1, ROW, ROW, TU_PLAIN},
         {0, DNNJIT_DATA_TYPE_FLOAT}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (run_case(&cases[i].gemm, NO_PROLOGUE, cases[i].types, 4, NULL) == 0)
            fail_msg("%s: no tensor-core GEMM plan was offered", cases[i].gemm.label);
}

/* The skinny kernel (at most 16 rows of A, both operands K-contiguous), every knob: one row
 * of a long K with a bias and relu, 7 rows of an odd N over a batch of 3 against one B, 16
 * rows of a K of 8 from rows padded to 16 elements, 13 rows of an N one past a multiple of 8
 * in half with a row bias and a residual. */
static void skinny_every_knob(void **state)
{
    (void)state;
    static const gemm_case_t cases[] = {
        {"skinny 1x1000x4104 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 1, 1000, 4104, ROW, COL, TU_BIAS_RELU},
        {"skinny 3x7x77x1000 half bcast B", DNNJIT_DATA_TYPE_HALF, 3, 1, 7, 77, 1000, ROW, COL, TU_PLAIN},
        {"skinny 2x16x300x8 bf16 padded A", DNNJIT_DATA_TYPE_BFLOAT16, 2, 2, 16, 300, 8, ROW_PADDED, COL,
         TU_BIAS_RELU},
        {"skinny 13x4097x1040 half", DNNJIT_DATA_TYPE_HALF, 1, 1, 13, 4097, 1040, ROW, COL, TU_ROW_BIAS_RESIDUAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(run_case(&cases[i], NO_PROLOGUE, IO_TYPES, 0, "gemm_skinny_"), 5);
}

/* A 4-D batch: A [2, 3, M, K] against B [2, 1, K, N] (B broadcast along the second axis). */
static void four_d_batch(void **state)
{
    (void)state;
    static const dnnjit_heur_mode_t modes[] = {DNNJIT_HEUR_MODE_A};
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "A", 4, TU_DIMS(2, 3, 96, 80), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 4, TU_DIMS(2, 1, 80, 72), NULL, 0), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    tu_gpu_check(g, modes, 1, -1.0, 1.0, 1e-2, "4-D batch half");
    char *name = NULL;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &name));
    assert_int_equal(strncmp(name, "gemm_", 5), 0);
    dnnjit_free(name);
    dnnjit_graph_destroy(g);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_knob_bf16),
        cmocka_unit_test(every_knob_half),
        cmocka_unit_test(every_knob_bf16_whole),
        cmocka_unit_test(every_knob_half_whole),
        cmocka_unit_test(half_and_bf16),
        cmocka_unit_test(every_knob_float),
        cmocka_unit_test(every_knob_float_whole),
        cmocka_unit_test(float_inputs),
        cmocka_unit_test(four_d_batch),
        cmocka_unit_test(skinny_every_knob),
        cmocka_unit_test(prologues),
        cmocka_unit_test(prologues_fallback),
        cmocka_unit_test(mixed_types),
    };
    return TU_GPU_MAIN(tests, argc, argv, tu_gpu_available);
}
