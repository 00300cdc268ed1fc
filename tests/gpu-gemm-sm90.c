/* GPU: the sm_90a GEMM engine (TMA + wgmma), its plans among those heuristics A and B list,
 * against the float64 reference on fresh random data with poisoned outputs: fp16, bf16,
 * fp8 (E4M3, E5M2, with a per-tensor scale) and fp32 as TF32;
 * odd M, N and K; strides TMA cannot take (the kernel's staged copies, or A read by row
 * class into registers); A and B K-major
 * and M/N-major;
 * broadcast and 4-D batches; the direct, staged, clustered and split-K variants; fused epilogues
 * (bias + relu, row bias + residual + tanh, scale and cast); every knob at 256^3 and at
 * 4096^3 (there on sampled rows, computed here in float64, with every element checked
 * written); the refusal of a buffer TMA cannot address, and autotune passing over the plans
 * that refuse it. Skipped (77) without a GPU, and without an sm_90a device. */
#include "gpu_buffers.h"

#include "gpu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ROW_UNALIGNED and COL_UNALIGNED pad each row (column) by 3 elements, so that no stride
 * is a multiple of 16 bytes: the kernel copies such operands before TMA reads them.
 * ROW_UNALIGNED_BATCH8 pads rows alike but rounds the batch stride up to a multiple of 8
 * elements, as the _areg plans' row classes need. */
typedef enum layout { ROW, COL, ROW_UNALIGNED, COL_UNALIGNED, ROW_UNALIGNED_BATCH8 } layout_t;

typedef struct gemm_case {
    const char *label;
    dnnjit_data_type_t io;
    int64_t batch_a, batch_b, m, n, k;
    layout_t a_layout, b_layout;
    tu_gemm_epilogue_t epilogue;
    bool every_knob; /* run every sm_90 plan listed, not the first two */
} gemm_case_t;

static bool is_sm90_plan(const char *name)
{
    return strncmp(name, "gemm_sm90_", 10) == 0;
}

static dnnjit_tensor_t operand(dnnjit_graph_t g, const char *name, int64_t batch, int64_t rows, int64_t cols,
                               layout_t layout)
{
    bool col = layout == COL || layout == COL_UNALIGNED;
    int64_t pad = layout == ROW || layout == COL ? 0 : 3;
    int64_t pitch = (col ? rows : cols) + pad;
    int64_t stride[3] = {(col ? cols : rows) * pitch + pad, col ? 1 : pitch, col ? pitch : 1};
    if (layout == ROW_UNALIGNED_BATCH8)
        stride[0] = (rows * pitch + 7) / 8 * 8;
    return tu_tensor(g, name, 3, TU_DIMS(batch, rows, cols), stride, 0);
}

static dnnjit_graph_t build_case(const gemm_case_t *c)
{
    dnnjit_graph_t g = tu_gpu_graph(c->io);
    dnnjit_tensor_t a = operand(g, "A", c->batch_a, c->m, c->k, c->a_layout);
    dnnjit_tensor_t b = operand(g, "B", c->batch_b, c->k, c->n, c->b_layout), y;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &y));
    int64_t batch = c->batch_a > c->batch_b ? c->batch_a : c->batch_b;
    tu_gemm_epilogue(g, y, c->epilogue, batch, c->m, c->n);
    return g;
}

/* Runs the graph's sm_90 plans (every one, or the first `limit`; only those whose name
 * holds `only`, when not NULL) on inputs in [lo, hi) against the reference, held to the
 * 16-bit (and fp8) inputs' relative error of 1e-2, or TF32's 1e-3 for the plans noted
 * REDUCED_PRECISION; fails when there is none. */
static void run_sm90_plans_on(dnnjit_graph_t g, const char *label, int limit, const char *only, double lo, double hi)
{
    static uint64_t rng = 0x3c6ef372fe94f82bull;
    static const dnnjit_heur_mode_t modes[] = {DNNJIT_HEUR_MODE_A, DNNJIT_HEUR_MODE_B};
    TU_OK(dnnjit_graph_create_execution_plans(g, modes, 2));
    int64_t plans = 0;
    int ran = 0;
    TU_OK(dnnjit_graph_get_plan_count(g, &plans));
    for (int64_t p = 0; p < plans && (!limit || ran < limit); p++) {
        char *name = NULL;
        TU_OK(dnnjit_graph_get_plan_name(g, p, &name));
        if (is_sm90_plan(name) && (!only || strstr(name, only))) {
            TU_OK(dnnjit_graph_build_plan_at_index(g, p));
            gpu_run_result_t r;
            TU_OK(gpu_run_and_check(g, &rng, lo, hi, true, 0, &r));
            uint32_t notes = 0;
            TU_OK(dnnjit_graph_get_plan_behavior_notes(g, p, &notes));
            double tol = notes & DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION ? 1e-3 : 1e-2;
            printf("  %-36s %-30s rel %.3g\n", label, name, r.max_rel_error);
            if (!(r.max_rel_error < tol))
                fail_msg("%s: plan %s: relative error %g exceeds %g", label, name, r.max_rel_error, tol);
            ran++;
        }
        dnnjit_free(name);
    }
    if (!ran)
        fail_msg("%s: no gemm_sm90 plan was offered", label);
}

static void run_sm90_plans(dnnjit_graph_t g, const char *label, int limit, const char *only)
{
    run_sm90_plans_on(g, label, limit, only, -1.0, 1.0);
}

/* Each case's sm_90 plans whose names contain `only` (NULL: all): every one for the "every
 * knob" cases, the first two for the others. TMA reads K-major rows in place when K is a
 * multiple of 8 (16 bytes), M- and N-major ones when M or N is; the kernel copies the
 * others first (staged). */
static void run_cases(const gemm_case_t *cases, size_t count, const char *only)
{
    for (size_t i = 0; i < count; i++) {
        dnnjit_graph_t g = build_case(&cases[i]);
        run_sm90_plans(g, cases[i].label, cases[i].every_knob ? 0 : 2, only);
        dnnjit_graph_destroy(g);
    }
}

/* Each "every knob" shape is a case of its own (30 plans each), so that ctest and
 * scripts/gpu-sanitize run them in parallel. */
static void every_knob_bf16(void **state)
{
    (void)state;
    static const gemm_case_t c = {"every knob 256^3 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 256, 256, 256, ROW, ROW,
                                  TU_BIAS_RELU, true};
    run_cases(&c, 1, NULL);
}

static void every_knob_half_col(void **state)
{
    (void)state;
    static const gemm_case_t c = {"every knob 264x200x136 half A col B col", DNNJIT_DATA_TYPE_HALF, 1, 1, 264, 200,
                                  136, COL, COL, TU_PLAIN, true};
    run_cases(&c, 1, NULL);
}

/* Clusters: the second's second tile lies past M, and with 256-wide tiles B's second
 * K-major half lies past N. */
static void every_knob_clusters(void **state)
{
    (void)state;
    static const gemm_case_t c = {"every knob 300x72x200 bf16 B col", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 300, 72, 200,
                                  ROW, COL, TU_ROW_BIAS_RESIDUAL, true};
    run_cases(&c, 1, NULL);
}

static void cases_against_reference(void **state)
{
    (void)state;
    static const gemm_case_t cases[] = {
        {"1x8x8 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 1, 8, 8, ROW, ROW, TU_PLAIN, false},
        {"7x1000x8 half", DNNJIT_DATA_TYPE_HALF, 1, 1, 7, 1000, 8, ROW, ROW, TU_BIAS_RELU, false},
        {"1000x77x4096 bf16 B col", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 1000, 77, 4096, ROW, COL, TU_PLAIN, false},
        {"4097x40x1000 half B col", DNNJIT_DATA_TYPE_HALF, 1, 1, 4097, 40, 1000, ROW, COL, TU_BIAS_RELU, false},
        {"72x4097x1000 bf16 A col B col", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 72, 4097, 1000, COL, COL, TU_PLAIN, false},
        {"88x1000x7 half A col (K 7)", DNNJIT_DATA_TYPE_HALF, 1, 1, 88, 1000, 7, COL, ROW, TU_PLAIN, false},
        {"1000x1000x77 bf16 A col (K 77)", DNNJIT_DATA_TYPE_BFLOAT16, 2, 2, 1000, 1000, 77, COL, ROW, TU_BIAS_RELU, false},
        {"batch bcast B 200x136x256 half", DNNJIT_DATA_TYPE_HALF, 3, 1, 200, 136, 256, ROW, ROW, TU_ROW_BIAS_RESIDUAL, false},
        {"batch bcast A 64x200x96 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 5, 64, 200, 96, ROW, COL, TU_BIAS_RELU, false},
        {"batch 4 256x512x320 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 4, 4, 256, 512, 320, ROW, ROW, TU_PLAIN, false},
        {"512x512x512 bf16 scale cast", DNNJIT_DATA_TYPE_BFLOAT16, 2, 2, 512, 512, 512, ROW, ROW, TU_SCALE_CAST, false},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], NULL);
}

/* Staged operands: strides TMA cannot take, which the kernel copies into its scratch first
 * (odd sizes, odd padding, batch strides of odd bytes, both majors, broadcast). */
static void every_knob_staged(void **state)
{
    (void)state;
    static const gemm_case_t c = {"every knob 264x200x136 bf16 staged", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 264, 200,
                                  136, ROW_UNALIGNED, ROW_UNALIGNED, TU_BIAS_RELU, true};
    run_cases(&c, 1, NULL);
}

static void staged_against_reference(void **state)
{
    (void)state;
    static const gemm_case_t cases[] = {
        {"1031x1025x1027 bf16 staged", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 1031, 1025, 1027, ROW, ROW, TU_PLAIN, false},
        {"1000x77x4099 half staged A col B col", DNNJIT_DATA_TYPE_HALF, 1, 1, 1000, 77, 4099, COL_UNALIGNED,
         COL_UNALIGNED, TU_ROW_BIAS_RESIDUAL, false},
        {"batch 3 bcast B 300x136x99 half staged", DNNJIT_DATA_TYPE_HALF, 3, 1, 300, 136, 99, ROW_UNALIGNED, ROW,
         TU_BIAS_RELU, false},
        {"batch 2 7x1000x8195 bf16 staged A only", DNNJIT_DATA_TYPE_BFLOAT16, 2, 2, 7, 1000, 8195, ROW_UNALIGNED,
         ROW, TU_PLAIN, false},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], NULL);
}

/* Every staged-epilogue plan on rows of 16-bit outputs of which every other starts 2 bytes
 * past a 4-byte boundary (whose column pairs go as two 2-byte stores): rows of 77 in batch
 * entries of 385, so that rows start at odd and even elements in every mix of row and
 * batch entry, and 1025-wide rows over several 32-column chunks and tiles. */
static void staged_epilogue_odd_rows(void **state)
{
    (void)state;
    static const gemm_case_t cases[] = {
        {"batch 3 5x77x130 half odd rows", DNNJIT_DATA_TYPE_HALF, 3, 3, 5, 77, 130, ROW, ROW, TU_BIAS_RELU, true},
        {"300x1025x64 bf16 odd rows", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 300, 1025, 64, ROW, COL, TU_PLAIN, true},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], "_staged");
}

/* Split-K, every split plan: odd M and N past the tiles' edges with a broadcast batch and
 * bias + relu; one row (the partial sums of rows past M neither stored nor read); a second
 * M tile of two rows; an odd K that stages A, with a row bias, residual and tanh. */
static void split_against_reference(void **state)
{
    (void)state;
    static const gemm_case_t cases[] = {
        {"split 77x300x2048 bf16 B col bcast", DNNJIT_DATA_TYPE_BFLOAT16, 2, 1, 77, 300, 2048, ROW, COL, TU_BIAS_RELU,
         true},
        {"split 1x4096x4096 bf16 B col", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 1, 4096, 4096, ROW, COL, TU_PLAIN, true},
        {"split 130x256x1024 half", DNNJIT_DATA_TYPE_HALF, 1, 1, 130, 256, 1024, ROW, ROW, TU_PLAIN, true},
        {"split 100x200x4099 half staged A", DNNJIT_DATA_TYPE_HALF, 1, 1, 100, 200, 4099, ROW_UNALIGNED, ROW,
         TU_ROW_BIAS_RESIDUAL, true},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], "_splitk");
}

/* A read by row class into registers (the _areg plans), every such plan: A's rows 1027
 * elements apart (eight shifts off 16-byte boundaries) with B staged too and C's rows odd;
 * rows 133 apart in a batch of 3 whose stride is a multiple of 8, over a broadcast B read in
 * place (clusters offered), with a row bias, residual and tanh; 5 rows (most classes past
 * M) and rows 98 apart (four shifts); rows 100 apart (two shifts), scaled and cast; a long
 * odd K over two tiles (split-K). */
static void areg_against_reference(void **state)
{
    (void)state;
    static const gemm_case_t cases[] = {
        {"1031x1025x1027 bf16 areg", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 1031, 1025, 1027, ROW, ROW, TU_BIAS_RELU, true},
        {"batch 3 bcast B 77x136x130 half areg", DNNJIT_DATA_TYPE_HALF, 3, 1, 77, 136, 130, ROW_UNALIGNED_BATCH8, ROW,
         TU_ROW_BIAS_RESIDUAL, true},
        {"5x300x98 bf16 B col areg", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 5, 300, 98, ROW, COL, TU_PLAIN, true},
        {"300x256x100 half areg", DNNJIT_DATA_TYPE_HALF, 1, 1, 300, 256, 100, ROW, ROW, TU_SCALE_CAST, false},
        {"200x256x4099 bf16 areg", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 200, 256, 4099, ROW, ROW, TU_BIAS_RELU, true},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], "_areg");
}

/* A in tiles of one row class (the _ashift plans), for the same A with B N-major, copied
 * (rows of 1025) or read in place: every such plan on 1031 rows of 1027 (shifts 0 to 7,
 * B's K rows from 7 before its first), a batch over a broadcast B, 9 rows (a class of
 * two rows, seven of one), and split-K over a long K. The harness puts NaN in the padding
 * after each row of A, which each row's first K tile loads (the end of the row before),
 * so a plan that let it into the sums fails. The TMA-store ones among them store C by row
 * class, on rows of 1025 each class's from another column (0 to 7). */
static void ashift_against_reference(void **state)
{
    (void)state;
    static const gemm_case_t cases[] = {
        {"1031x1025x1027 bf16 ashift", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 1031, 1025, 1027, ROW, ROW, TU_BIAS_RELU, true},
        {"batch 3 bcast B 77x136x130 half ashift", DNNJIT_DATA_TYPE_HALF, 3, 1, 77, 136, 130, ROW_UNALIGNED_BATCH8, ROW,
         TU_ROW_BIAS_RESIDUAL, true},
        {"9x200x78 bf16 ashift", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 9, 200, 78, ROW_UNALIGNED, ROW, TU_PLAIN, true},
        {"200x256x4099 bf16 ashift", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 200, 256, 4099, ROW_UNALIGNED, ROW, TU_BIAS_RELU,
         true},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], "_ashift");
}

/* The _ashift plans' TMA stores by row class (_tmastore_ashift) on more rows: of 300 in a
 * batch over a broadcast B, each class's from column 0 or 4, with a row bias and residual;
 * of 17 (one or two whole 16-byte pieces a row, the rest stored directly), from columns 0
 * to 7. (ashift_against_reference runs them on rows of 1025, from columns 0 to 7.) */
static void ashift_tma_store_against_reference(void **state)
{
    (void)state;
    static const gemm_case_t cases[] = {
        {"batch 2 bcast B 100x300x130 half ashift", DNNJIT_DATA_TYPE_HALF, 2, 1, 100, 300, 130, ROW_UNALIGNED_BATCH8,
         ROW, TU_ROW_BIAS_RESIDUAL, true},
        {"13x17x78 bf16 ashift", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 13, 17, 78, ROW_UNALIGNED, ROW, TU_BIAS_RELU, true},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], "_tmastore_ashift");
}

/* fp8 operands (E4M3 and E5M2 in each pair), K-major as wgmma needs (B column-major; one A
 * column-major, which the kernel copies transposed), the
 * product times a per-tensor scale, stored as FLOAT and as BFLOAT16. The tolerance is that
 * of 16-bit inputs, 1e-2, for both: the fp8 products are exact, but Hopper's fp8 wgmma
 * adds them with fewer mantissa bits than fp32 (measured on the H200: 2.4e-4 against the
 * float64 reference at K = 400, where fp32 sums would stay near 1e-7), which the kernel
 * bounds by adding each 128-deep K tile's sums to float registers. Odd M and N, K a
 * multiple of 16 (rows of 16 bytes) but not of the 128-deep K tile, broadcast batches; and
 * HALF compute, which accumulates in wgmma's f16 accumulator. */
static void fp8_against_reference(void **state)
{
    (void)state;
    static const struct {
        const char *label;
        dnnjit_data_type_t a, b, out;
        int64_t batch_a, batch_b, m, n, k;
        bool every_knob;
        dnnjit_data_type_t compute; /* the matmul's */
        bool positive;              /* inputs in [1, 2) instead of [-1, 1) */
        bool a_col;                 /* A M-major (copied transposed) instead of K-major */
    } cases[] = {
        {"every knob 264x200x400 e4m3 float", DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E4M3,
         DNNJIT_DATA_TYPE_FLOAT, 1, 1, 264, 200, 400, true, DNNJIT_DATA_TYPE_FLOAT, false, false},
        {"300x72x4096 e4m3 x e5m2 bf16", DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E5M2,
         DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 300, 72, 4096, false, DNNJIT_DATA_TYPE_FLOAT, false, false},
        {"7x1000x16 e5m2 x e4m3 float", DNNJIT_DATA_TYPE_FP8_E5M2, DNNJIT_DATA_TYPE_FP8_E4M3,
         DNNJIT_DATA_TYPE_FLOAT, 1, 1, 7, 1000, 16, false, DNNJIT_DATA_TYPE_FLOAT, false, false},
        {"batch bcast B 1000x77x144 e5m2 float", DNNJIT_DATA_TYPE_FP8_E5M2, DNNJIT_DATA_TYPE_FP8_E5M2,
         DNNJIT_DATA_TYPE_FLOAT, 3, 1, 1000, 77, 144, false, DNNJIT_DATA_TYPE_FLOAT, false, false},
        {"512^3 e4m3 bf16", DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_BFLOAT16, 2, 2,
         512, 512, 512, false, DNNJIT_DATA_TYPE_FLOAT, false, false},
        /* Rows of 100 and 77 bytes: staged. */
        {"300x200x100 e4m3 staged float", DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FLOAT,
         1, 1, 300, 200, 100, false, DNNJIT_DATA_TYPE_FLOAT, false, false},
        {"every knob 129x130x77 e5m2 x e4m3 staged float", DNNJIT_DATA_TYPE_FP8_E5M2, DNNJIT_DATA_TYPE_FP8_E4M3,
         DNNJIT_DATA_TYPE_FLOAT, 2, 1, 129, 130, 77, true, DNNJIT_DATA_TYPE_FLOAT, false, false},
        /* fp16 accumulation (wgmma's f16 accumulator): K of 1024 rounds the sums to halves
         * 32 times (one k32 wgmma each). */
        {"every knob 264x200x400 e4m3 half-acc float", DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E4M3,
         DNNJIT_DATA_TYPE_FLOAT, 1, 1, 264, 200, 400, true, DNNJIT_DATA_TYPE_HALF, false, false},
        {"batch bcast B 300x72x1024 e5m2 x e4m3 half-acc bf16", DNNJIT_DATA_TYPE_FP8_E5M2, DNNJIT_DATA_TYPE_FP8_E4M3,
         DNNJIT_DATA_TYPE_BFLOAT16, 2, 1, 300, 72, 1024, false, DNNJIT_DATA_TYPE_HALF, false, false},
        /* A M-major (column-major), which the kernel copies transposed first. */
        {"A col 300x72x200 e4m3 x e5m2 bf16", DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E5M2,
         DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 300, 72, 200, false, DNNJIT_DATA_TYPE_FLOAT, false, true},
        /* Sums of 8192 positive products (about 18000 each), which wgmma's own
         * accumulation over the whole K leaves about a tenth off (0.138 on the H200 before
         * the kernel promoted its sums; 2.7e-5 since). */
        {"every knob 136x200x8192 e4m3 positive float", DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E4M3,
         DNNJIT_DATA_TYPE_FLOAT, 1, 1, 136, 200, 8192, true, DNNJIT_DATA_TYPE_FLOAT, true, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = tu_gpu_graph(cases[i].out);
        int64_t k = cases[i].k, n = cases[i].n;
        int64_t m = cases[i].m;
        dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(cases[i].batch_a, m, k),
                                      cases[i].a_col ? TU_DIMS(m * k, 1, m) : NULL, cases[i].a);
        dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(cases[i].batch_b, k, n), TU_DIMS(k * n, 1, k), cases[i].b);
        dnnjit_tensor_t scale = tu_tensor(g, "scale", 3, TU_DIMS(1, 1, 1), NULL, DNNJIT_DATA_TYPE_FLOAT), y;
        TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.compute_data_type = cases[i].compute}, &y));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.mode = DNNJIT_POINTWISE_MUL}, y, scale, 0, &y));
        TU_OK(dnnjit_tensor_set_output(g, y, true));
        run_sm90_plans_on(g, cases[i].label, cases[i].every_knob ? 0 : 2, NULL, cases[i].positive ? 1.0 : -1.0,
                          cases[i].positive ? 2.0 : 1.0);
        dnnjit_graph_destroy(g);
    }
}

/* FLOAT inputs multiplied as TF32 (the _tf32 plans, held to 1e-3), K-major as wgmma needs
 * (B column-major): odd M and N, K a multiple of 4 (rows of 16 bytes) but not of the 32-deep
 * K tile, and odd K (rows TMA cannot take: staged); broadcast batch, fused epilogues,
 * split-K; and sums of 8192 positive products, on which TF32 values truncated rather than
 * rounded to nearest would all fall short together (TMA rounds them as it loads them); and
 * M- or N-major operands, which the kernel copies transposed first (odd sizes, padded
 * strides, broadcast batch). */
static void tf32_against_reference(void **state)
{
    (void)state;
    static const struct {
        gemm_case_t c;
        const char *only; /* only the plans whose name holds this */
        bool positive;    /* inputs in [1, 2) instead of [-1, 1) */
    } cases[] = {
        {{"every knob 264x200x136 float B col", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 264, 200, 136, ROW, COL, TU_BIAS_RELU,
          true}, NULL, false},
        {{"4097x40x1000 float B col", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 4097, 40, 1000, ROW, COL,
          TU_ROW_BIAS_RESIDUAL, false}, NULL, false},
        {{"batch bcast B 300x136x256 float", DNNJIT_DATA_TYPE_FLOAT, 3, 1, 300, 136, 256, ROW, COL, TU_SCALE_CAST,
          false}, NULL, false},
        {{"every knob 129x130x77 float staged", DNNJIT_DATA_TYPE_FLOAT, 2, 1, 129, 130, 77, ROW_UNALIGNED, COL,
          TU_BIAS_RELU, true}, NULL, false},
        {{"split 77x300x2048 float B col bcast", DNNJIT_DATA_TYPE_FLOAT, 2, 1, 77, 300, 2048, ROW, COL, TU_PLAIN,
          true}, "_splitk", false},
        {{"136x200x8192 float positive", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 136, 200, 8192, ROW, COL, TU_PLAIN, false},
         NULL, true},
        /* M- or N-major operands, which the kernel copies transposed first. */
        {{"1000x77x300 float B row (transposed)", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 1000, 77, 300, ROW, ROW, TU_BIAS_RELU,
          false}, NULL, false},
        {{"batch bcast B 129x130x77 float A col B row", DNNJIT_DATA_TYPE_FLOAT, 3, 1, 129, 130, 77, COL, ROW,
          TU_ROW_BIAS_RESIDUAL, false}, NULL, false},
        {{"every knob 200x136x99 float A col B row padded", DNNJIT_DATA_TYPE_FLOAT, 1, 1, 200, 136, 99, COL_UNALIGNED,
          ROW_UNALIGNED, TU_SCALE_CAST, true}, NULL, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = build_case(&cases[i].c);
        run_sm90_plans_on(g, cases[i].c.label, cases[i].c.every_knob ? 0 : 2, cases[i].only,
                          cases[i].positive ? 1.0 : -1.0, cases[i].positive ? 2.0 : 1.0);
        dnnjit_graph_destroy(g);
    }
}

/* A 4-D batch: A [2, 3, M, K] against B [2, 1, K, N], so A's tensor map has two batch
 * dimensions and B's one (it broadcasts along the second axis). */
static void four_d_batch(void **state)
{
    (void)state;
    dnnjit_graph_t g = tu_gpu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "A", 4, TU_DIMS(2, 3, 96, 80), NULL, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 4, TU_DIMS(2, 1, 80, 72), NULL, 0), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, NULL, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    run_sm90_plans(g, "4-D batch half", 2, NULL);
    dnnjit_graph_destroy(g);
}

/* relu(A @ B + bias) at 4096^3 in bf16, every sm_90 plan: fresh inputs, an output poisoned
 * with NaN, every element checked written, and 24 rows (tile edges among them) against
 * float64 sums computed here. */
static void big_sampled(void **state)
{
    (void)state;
    const int64_t n = 4096;
    static const int64_t rows[] = {0, 1, 63, 64, 127, 128, 129, 255, 256, 1000, 1023, 1024,
                                   2047, 2048, 2049, 3000, 3071, 3072, 3583, 3967, 4000, 4094, 4095, 7};
    const size_t nrows = sizeof rows / sizeof rows[0];
    gemm_case_t c = {"4096^3 bf16", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, n, n, n, ROW, ROW, TU_BIAS_RELU, true};
    dnnjit_graph_t g = build_case(&c);
    static const dnnjit_heur_mode_t mode_a = DNNJIT_HEUR_MODE_A;
    TU_OK(dnnjit_graph_create_execution_plans(g, &mode_a, 1));
    gb_set_t set;
    gb_alloc(g, &set);
    gb_tensor_t *ta = NULL, *tb = NULL, *tbias = NULL, *ty = NULL;
    for (size_t i = 0; i < set.n; i++) {
        gb_tensor_t *t = &set.t[i];
        if (t->info.producer >= 0)
            ty = t;
        else if (strcmp(t->info.name, "A") == 0)
            ta = t;
        else if (strcmp(t->info.name, "B") == 0)
            tb = t;
        else
            tbias = t;
    }
    assert_true(ta && tb && tbias && ty);
    uint64_t rng = 0xbb67ae8584caa73bull;
    int64_t plans = 0, ran = 0;
    TU_OK(dnnjit_graph_get_plan_count(g, &plans));
    float *b = malloc(sizeof *b * (size_t)(n * n));
    double *ref = malloc(sizeof *ref * (size_t)n);
    assert_true(b && ref);
    for (int64_t p = 0; p < plans; p++) {
        char *name = NULL;
        TU_OK(dnnjit_graph_get_plan_name(g, p, &name));
        if (p == 0)
            assert_true(is_sm90_plan(name));
        if (!is_sm90_plan(name)) {
            dnnjit_free(name);
            continue;
        }
        TU_OK(dnnjit_graph_build_plan_at_index(g, p));
        /* Fresh inputs for each plan; the output all NaN (0xffff in bf16). */
        for (gb_tensor_t *t = ta; t; t = t == ta ? tb : t == tb ? tbias : NULL) {
            for (int64_t e = 0; e < layout_span(&t->info); e++)
                dnnjit_element_store(t->info.data_type, t->host, e, -1.0 + 2.0 * layout_uniform(&rng));
            GB_CU(dnnjit__cuda()->cuMemcpyHtoD(t->device, t->host, t->bytes));
        }
        GB_CU(dnnjit__cuda()->cuMemsetD32Async(ty->device, 0xffffffffu, ty->bytes / 4, NULL));
        TU_OK(dnnjit_graph_execute(g, set.device_pack, set.n, gb_workspace(&set), NULL));
        GB_CU(dnnjit__cuda()->cuStreamSynchronize(NULL));
        GB_CU(dnnjit__cuda()->cuMemcpyDtoH(ty->readback, ty->device, ty->bytes));
        int64_t unwritten = 0;
        for (int64_t e = 0; e < n * n; e++)
            unwritten += isnan(dnnjit_element_load(ty->info.data_type, ty->readback, e));
        for (int64_t e = 0; e < n * n; e++)
            b[e] = (float)dnnjit_element_load(tb->info.data_type, tb->host, e);
        double diff = 0, norm = 0;
        for (size_t r = 0; r < nrows; r++) {
            for (int64_t j = 0; j < n; j++)
                ref[j] = dnnjit_element_load(tbias->info.data_type, tbias->host, j);
            for (int64_t kk = 0; kk < n; kk++) {
                double a = dnnjit_element_load(ta->info.data_type, ta->host, rows[r] * n + kk);
                const float *brow = b + kk * n;
                for (int64_t j = 0; j < n; j++)
                    ref[j] += a * brow[j];
            }
            for (int64_t j = 0; j < n; j++) {
                double want = ref[j] > 0 ? ref[j] : 0;
                double got = dnnjit_element_load(ty->info.data_type, ty->readback, rows[r] * n + j);
                diff += (got - want) * (got - want);
                norm += want * want;
            }
        }
        double rel = sqrt(diff / norm);
        printf("  %-36s %-30s rel %.3g on %zu rows, %lld elements unwritten\n", c.label, name, rel, nrows,
               (long long)unwritten);
        if (unwritten || !(rel < 1e-2))
            fail_msg("%s: plan %s: relative error %g, %lld elements unwritten", c.label, name, rel,
                     (long long)unwritten);
        ran++;
        dnnjit_free(name);
    }
    assert_true(ran >= 10);
    free(b);
    free(ref);
    gb_free(&set);
    dnnjit_graph_destroy(g);
}

/* TMA needs 16-byte aligned addresses: a bf16 A two bytes into its buffer (element-aligned,
 * so the pack itself is fine) is refused by execute, naming the tensor. */
static void unaligned_buffer_refused(void **state)
{
    (void)state;
    gemm_case_t c = {"aligned", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 1024, 1024, 1024, ROW, ROW, TU_PLAIN, false};
    dnnjit_graph_t g = build_case(&c);
    /* The sm_90 engine's first plan, wherever mode A ranks it for this size. */
    static const dnnjit_heur_mode_t mode_a = DNNJIT_HEUR_MODE_A;
    TU_OK(dnnjit_graph_create_execution_plans(g, &mode_a, 1));
    int64_t plans = 0, chosen = -1;
    TU_OK(dnnjit_graph_get_plan_count(g, &plans));
    for (int64_t p = 0; p < plans && chosen < 0; p++) {
        char *name = NULL;
        TU_OK(dnnjit_graph_get_plan_name(g, p, &name));
        if (is_sm90_plan(name))
            chosen = p;
        dnnjit_free(name);
    }
    assert_true(chosen >= 0);
    TU_OK(dnnjit_graph_build_plan_at_index(g, chosen));
    gb_set_t set;
    gb_alloc(g, &set);
    gb_fill(&set, -1.0, 1.0);
    TU_OK(dnnjit_graph_execute(g, set.device_pack, set.n, gb_workspace(&set), NULL));
    GB_CU(dnnjit__cuda()->cuStreamSynchronize(NULL));
    assert_true(gb_error(g, &set) < 1e-2);
    for (size_t i = 0; i < set.n; i++)
        if (strcmp(set.t[i].info.name, "A") == 0)
            set.device_pack[i].ptr = (char *)set.device_pack[i].ptr + 2;
    TU_FAILS(dnnjit_graph_execute(g, set.device_pack, set.n, gb_workspace(&set), NULL), DNNJIT_STATUS_BAD_PARAM,
             "loads tensor \"A\" (uid");
    TU_FAILS(dnnjit_graph_execute(g, set.device_pack, set.n, gb_workspace(&set), NULL), DNNJIT_STATUS_BAD_PARAM,
             "16-byte aligned address");
    gb_free(&set);
    dnnjit_graph_destroy(g);
}

/* The first plan of g whose name starts with `prefix` and is (sm90) or is not a gemm_sm90
 * plan, built; its index. */
static int64_t build_first(dnnjit_graph_t g, const char *prefix, bool sm90)
{
    int64_t plans = 0;
    TU_OK(dnnjit_graph_get_plan_count(g, &plans));
    for (int64_t p = 0; p < plans; p++) {
        char *name = NULL;
        TU_OK(dnnjit_graph_get_plan_name(g, p, &name));
        bool match = strncmp(name, prefix, strlen(prefix)) == 0 && is_sm90_plan(name) == sm90;
        dnnjit_free(name);
        if (match) {
            TU_OK(dnnjit_graph_build_plan_at_index(g, p));
            return p;
        }
    }
    fail_msg("no plan named %s...", prefix);
    return -1;
}

/* Autotune on an A two bytes into its buffer passes over the sm_90 plan, whose execute
 * refuses the address, and chooses the sm_80 engine's, which loads it element-wise; the
 * outputs autotune left match the reference. */
static void autotune_passes_over_refused_plans(void **state)
{
    (void)state;
    gemm_case_t c = {"unaligned A", DNNJIT_DATA_TYPE_BFLOAT16, 1, 1, 520, 264, 136, ROW, ROW, TU_BIAS_RELU, false};
    dnnjit_graph_t g = build_case(&c);
    static const dnnjit_heur_mode_t mode_a = DNNJIT_HEUR_MODE_A;
    TU_OK(dnnjit_graph_create_execution_plans(g, &mode_a, 1));
    build_first(g, "gemm_sm90_", true);
    int64_t sm80 = build_first(g, "gemm_", false);
    gb_set_t set;
    gb_alloc(g, &set);
    gb_fill(&set, -1.0, 1.0);
    dnnjit__cu_deviceptr_t shifted = 0;
    for (size_t i = 0; i < set.n; i++)
        if (strcmp(set.t[i].info.name, "A") == 0) {
            GB_CU(dnnjit__cuda()->cuMemAlloc(&shifted, set.t[i].bytes + 16));
            GB_CU(dnnjit__cuda()->cuMemcpyHtoD(shifted + 2, set.t[i].host, set.t[i].bytes));
            set.device_pack[i].ptr = (void *)(uintptr_t)(shifted + 2);
        }
    assert_true(shifted != 0);
    TU_OK(dnnjit_graph_autotune(g, set.device_pack, set.n, gb_workspace(&set), NULL));
    GB_CU(dnnjit__cuda()->cuStreamSynchronize(NULL));
    int64_t chosen = -1;
    TU_OK(dnnjit_graph_get_chosen_plan(g, &chosen));
    assert_int_equal(chosen, sm80);
    double err = gb_error(g, &set);
    printf("  autotune on an unaligned A chose plan %lld, rel %.3g\n", (long long)chosen, err);
    assert_true(err < 1e-2);
    GB_CU(dnnjit__cuda()->cuMemFree(shifted));
    gb_free(&set);
    dnnjit_graph_destroy(g);
}

/* Whether a GPU can execute and is an sm_90a one, which the gemm_sm90 engine needs. */
static bool sm90a_available(void)
{
    if (!tu_gpu_available())
        return false;
    dnnjit_handle_t h = NULL;
    char arch[32] = "";
    if (dnnjit_handle_create(&h) == DNNJIT_STATUS_SUCCESS)
        dnnjit_handle_get_arch(h, arch, sizeof arch, NULL);
    dnnjit_handle_destroy(h);
    if (strcmp(arch, "sm_90a") != 0) {
        printf("skipped: the gemm_sm90 engine needs an sm_90a device, this is %s\n", arch);
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unaligned_buffer_refused),
        cmocka_unit_test(autotune_passes_over_refused_plans),
        cmocka_unit_test(every_knob_bf16),
        cmocka_unit_test(every_knob_half_col),
        cmocka_unit_test(every_knob_clusters),
        cmocka_unit_test(cases_against_reference),
        cmocka_unit_test(every_knob_staged),
        cmocka_unit_test(staged_against_reference),
        cmocka_unit_test(staged_epilogue_odd_rows),
        cmocka_unit_test(four_d_batch),
        cmocka_unit_test(split_against_reference),
        cmocka_unit_test(areg_against_reference),
        cmocka_unit_test(ashift_against_reference),
        cmocka_unit_test(ashift_tma_store_against_reference),
        cmocka_unit_test(fp8_against_reference),
        cmocka_unit_test(tf32_against_reference),
        cmocka_unit_test(big_sampled),
    };
    return TU_GPU_MAIN(tests, argc, argv, sm90a_available);
}
