/* The tensor-core GEMM engine without a GPU: which groups and knobs it takes and refuses,
 * the same source for the same plan, every knob compiling with NVRTC for sm_80 and sm_90a in
 * every input type and operand order, the heuristics' order, split-K's workspace, and the
 * TF32 plans' REDUCED_PRECISION note, operands computed by fused prologues, inputs of two
 * types. Needs NVRTC; skipped without it. */
#include "util.h"

#include "engine/engine.h"
#include "jit/jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const dnnjit__engine_t dnnjit__engine_gemm;

static const dnnjit__engine_t *const engine = &dnnjit__engine_gemm;

typedef struct shape {
    int64_t m, n, k, batch;
    bool a_col, b_col;
} shape_t;

/* relu(A @ B + bias) over the given shape; A and B row- or column-major. */
static dnnjit_graph_t gemm_graph(dnnjit_handle_t h, dnnjit_data_type_t io, dnnjit_data_type_t compute, shape_t s)
{
    dnnjit_graph_t g = tu_graph_on(h, "gemm", io, compute);
    int64_t sa[3] = {s.m * s.k, s.a_col ? 1 : s.k, s.a_col ? s.m : 1};
    int64_t sb[3] = {s.k * s.n, s.b_col ? 1 : s.n, s.b_col ? s.k : 1};
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(s.batch, s.m, s.k), sa, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(s.batch, s.k, s.n), sb, 0);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 3, TU_DIMS(1, 1, s.n), NULL, 0), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_graph_bias(g, "bias_add", c, bias, &c));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "relu", .mode = DNNJIT_POINTWISE_RELU_FWD}, c,
                                 0, 0, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_graph_validate(g));
    return g;
}

/* With the kernel's own NVRTC option, as a build compiles it: ptxas at -O2. */
static void compile_for(const dnnjit__kernel_t *k, const char *arch)
{
    assert_string_equal(k->compile_option, DNNJIT__PTXAS_O2);
    tu_compile_kernel(k, arch, NULL, NULL);
}

/* Every knob the engine takes for the graph's one group (with `prefix`, those whose names
 * start with it): generated twice to the same bytes and compiled for sm_80 (when it fits
 * there) and sm_90a; split-K knobs differ from their unsplit twins in constants only, so one
 * of them is compiled, for sm_90a. A skinny knob must fit sm_80, and launches the skinny
 * kernel as one CTA per 8 columns. With all_knobs false, only the first knob. Returns how
 * many knobs were taken. */
static int check_knobs(dnnjit_graph_t g, bool all_knobs, const char *prefix)
{
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    assert_int_equal(p.group_count, 1);
    const dnnjit__group_t *grp = &p.groups[0];
    int taken = 0;
    bool split_compiled = false;
    for (int knob = 0; knob < engine->knob_count && (all_knobs || !taken); knob++) {
        char name[64];
        engine->knob_name(knob, name, sizeof name);
        bool named = !prefix || strncmp(name, prefix, strlen(prefix)) == 0;
        if (!named || !engine->supports(g, grp, knob, "sm_90a", NULL, 0))
            continue;
        taken++;
        dnnjit__kernel_t k1, k2;
        TU_OK(engine->generate(g, &p, grp, knob, &k1));
        TU_OK(engine->generate(g, &p, grp, knob, &k2));
        assert_string_equal(k1.source, k2.source);
        assert_true(engine->cost(g, grp, knob) > 0);
        /* The skinny kernel's shared memory is static; the tiled ones ask for theirs. */
        bool skinny = strncmp(name, "skinny_", 7) == 0;
        assert_true((skinny ? k1.shared_bytes == 0 : k1.shared_bytes > 0) && k1.block[0] % 32 == 0);
        if (skinny) {
            const dnnjit__tensor_t *c = dnnjit__tensor(g, g->nodes[grp->first_node].out[0]);
            assert_true(engine->supports(g, grp, knob, "sm_80", NULL, 0));
            assert_string_equal(k1.entry, "dj_gemm_skinny");
            assert_int_equal(k1.grid[0], (c->dim[c->ndim - 1] + 7) / 8);
        }
        bool split = strstr(name, "splitk") != NULL;
        if (!split || !split_compiled)
            compile_for(&k1, "sm_90a");
        if (!split && engine->supports(g, grp, knob, "sm_80", NULL, 0))
            compile_for(&k1, "sm_80");
        split_compiled |= split;
        dnnjit__kernel_free(&k1);
        dnnjit__kernel_free(&k2);
    }
    dnnjit__partition_free(&p);
    return taken;
}

static void every_knob_every_type(void **state)
{
    (void)state;
    static const dnnjit_data_type_t types[] = {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_BFLOAT16,
                                               DNNJIT_DATA_TYPE_FLOAT};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        /* Long K over few tiles, so split-K knobs are taken too. */
        dnnjit_graph_t g = gemm_graph(NULL, types[t], DNNJIT_DATA_TYPE_FLOAT, (shape_t){200, 136, 8192, 1, false, false});
        int taken = check_knobs(g, true, NULL);
        printf("%s: %d knobs compiled\n", dnnjit_data_type_name(types[t]), taken);
        /* Eleven tiles, each unsplit and split; FLOAT also in TF32 (exact FLOAT takes the five
         * tiles with warp tiles up to 32x64). */
        assert_true(taken >= (types[t] == DNNJIT_DATA_TYPE_FLOAT ? 32 : 22));
        dnnjit_graph_destroy(g);
    }
}

/* Every operand order with ragged edges, and with M, N and K multiples of the tile (the
 * kernel then drops its edge checks at compile time). */
static void every_operand_order(void **state)
{
    (void)state;
    static const dnnjit_data_type_t types[] = {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT};
    static const int64_t sizes[2][3] = {{77, 1000, 33}, {256, 512, 128}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (int whole = 0; whole < 2; whole++)
            for (int order = 0; order < 4; order++) {
                shape_t s = {sizes[whole][0], sizes[whole][1], sizes[whole][2], 2, order & 1, order >> 1 & 1};
                dnnjit_graph_t g = gemm_graph(NULL, types[t], DNNJIT_DATA_TYPE_FLOAT, s);
                assert_int_equal(check_knobs(g, false, NULL), 1);
                dnnjit_graph_destroy(g);
            }
}

/* The _occ2 tile asks for two CTAs per SM in its launch bounds, the others for one; the
 * block size is the warp count of the tile over the warp tile. */
static void occupancy_knob(void **state)
{
    (void)state;
    dnnjit_graph_t g = gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){512, 512, 512, 1, false, false});
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    int occ2 = 0;
    for (int knob = 0; knob < engine->knob_count; knob++) {
        char name[64];
        engine->knob_name(knob, name, sizeof name);
        if (!engine->supports(g, &p.groups[0], knob, "sm_90a", NULL, 0))
            continue;
        dnnjit__kernel_t k;
        TU_OK(engine->generate(g, &p, &p.groups[0], knob, &k));
        int bm, bn, wm, wn;
        assert_int_equal(sscanf(name, "%dx%dx%*d_w%dx%d", &bm, &bn, &wm, &wn), 4);
        assert_int_equal(k.block[0], (unsigned)(bm / wm * (bn / wn) * 32));
        bool two = strstr(name, "_occ2") != NULL;
        assert_non_null(strstr(k.source, two ? "DJ_MIN_BLOCKS = 2;" : "DJ_MIN_BLOCKS = 1;"));
        occ2 += two;
        dnnjit__kernel_free(&k);
    }
    assert_true(occ2 > 0);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* A = X + 1 (a prologue that is not zero at zero, so the K padding would show it) and
 * B = W * scale (scale broadcast over K and the batch), each only when its bit of `sides`
 * (1: A, 2: B) is set; A and B of type io. With `cast`, X is FLOAT and A's prologue also
 * casts it to io. C = A @ B is the output. */
static dnnjit_graph_t prologue_graph(dnnjit_data_type_t io, shape_t s, bool cast, int sides)
{
    dnnjit_graph_t g = tu_graph(io);
    int64_t sx[3] = {s.m * s.k, s.a_col ? 1 : s.k, s.a_col ? s.m : 1};
    dnnjit_tensor_t a = tu_tensor(g, "X", 3, TU_DIMS(s.batch, s.m, s.k), sx, cast ? DNNJIT_DATA_TYPE_FLOAT : 0);
    dnnjit_tensor_t b = tu_tensor(g, "W", 3, TU_DIMS(s.batch, s.k, s.n), NULL, 0), c;
    if (sides & 1) {
        dnnjit_tensor_t one = 0;
        TU_OK(dnnjit_graph_tensor(g, &(dnnjit_tensor_desc_t){.name = "one", .ndim = 1, .dim = TU_DIMS(1),
                                                              .data_type = DNNJIT_DATA_TYPE_FLOAT,
                                                              .is_pass_by_value = true, .has_value = true,
                                                              .value = 1.0},
                                  &one));
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "plus_one", .mode = DNNJIT_POINTWISE_ADD},
                                     a, one, 0, &a));
        TU_OK(dnnjit_tensor_set_data_type(g, a, io));
    }
    if (sides & 2) {
        dnnjit_tensor_t scale = tu_tensor(g, "scale", 3, TU_DIMS(1, 1, s.n), NULL, 0);
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "scale_w", .mode = DNNJIT_POINTWISE_MUL},
                                     b, scale, 0, &b));
        TU_OK(dnnjit_tensor_set_data_type(g, b, io));
    }
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_graph_validate(g));
    return g;
}

/* Whether the source says what it should of operand `side` ('A' or 'B'): computed by a
 * prologue (then without a slot: it is never in memory) or not. */
static void check_prologue_source(const char *source, char side, bool computed, const char *what)
{
    char flag[64], function[64], slot[64];
    snprintf(flag, sizeof flag, "DJ_%c_PROLOGUE = %s", side, computed ? "true" : "false");
    /* The definition: gemm_mma.cuh declares both functions. */
    snprintf(function, sizeof function, "__forceinline__ float dj_%c_prologue(", side == 'A' ? 'a' : 'b');
    snprintf(slot, sizeof slot, "DJ_%c_SLOT = -1", side);
    if (!strstr(source, flag) || (strstr(source, function) != NULL) != computed ||
        (strstr(source, slot) != NULL) != computed)
        fail_msg("%s: operand %c is %scomputed by a prologue, the source says otherwise", what, side,
                 computed ? "" : "not ");
}

/* Prologues on A, on B and on both, also one that casts FLOAT to the 16-bit types: one group
 * whose source evaluates the computed operands, compiled for sm_80 and sm_90a in every input
 * type; a split-K knob generates too. */
static void prologue_every_type(void **state)
{
    (void)state;
    static const dnnjit_data_type_t types[] = {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_BFLOAT16,
                                               DNNJIT_DATA_TYPE_FLOAT};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (int variant = 0; variant < (types[t] == DNNJIT_DATA_TYPE_FLOAT ? 3 : 4); variant++) {
            /* Variants 0-2: A, B, both; 3: both, A cast from FLOAT and stored column-major. */
            int sides = variant < 3 ? variant + 1 : 3;
            bool cast = variant == 3;
            const char *what = dnnjit_data_type_name(types[t]);
            dnnjit_graph_t g = prologue_graph(types[t], (shape_t){77, 40, 4097, 2, cast, false}, cast, sides);
            dnnjit__partition_t p;
            TU_OK(dnnjit__partition(g, &p));
            assert_int_equal(p.group_count, 1);
            assert_int_equal(p.groups[0].node_count, 1 + (sides & 1) + (sides >> 1));
            int split_knob = -1;
            for (int knob = 0; knob < engine->knob_count && split_knob < 0; knob++) {
                char name[64];
                engine->knob_name(knob, name, sizeof name);
                if (strstr(name, "splitk") && engine->supports(g, &p.groups[0], knob, "sm_90a", NULL, 0))
                    split_knob = knob;
            }
            assert_true(split_knob >= 0);
            dnnjit__kernel_t k;
            TU_OK(engine->generate(g, &p, &p.groups[0], split_knob, &k));
            check_prologue_source(k.source, 'A', sides & 1, what);
            check_prologue_source(k.source, 'B', sides & 2, what);
            /* X, W, C, and scale when B has its prologue. */
            assert_int_equal(k.tensor_count, 3 + (sides >> 1));
            dnnjit__kernel_free(&k);
            dnnjit__partition_free(&p);
            assert_int_equal(check_knobs(g, false, NULL), 1);
            dnnjit_graph_destroy(g);
        }
}

/* Inputs of two types: A of one type and B of another in memory, or B computed by a
 * prologue whose result stays in the graph's FLOAT intermediate type (B = W * scale). The
 * product is FLOAT (exact, and a TF32 knob), the tiles float, and a 16-bit operand read
 * element by element and widened; the first knob compiles for sm_80 and sm_90a. */
static void mixed_input_types(void **state)
{
    (void)state;
    static const struct {
        dnnjit_data_type_t a, b;
        bool scale_b;
        const char *ma, *mb;
    } cases[] = {
        {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT, false, "dj_half", "float"},
        {DNNJIT_DATA_TYPE_FLOAT, DNNJIT_DATA_TYPE_BFLOAT16, false, "float", "dj_bf16"},
        {DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_HALF, false, "dj_bf16", "dj_half"},
        {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_HALF, true, "dj_half", "float"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
        dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(2, 77, 1000), NULL, cases[i].a);
        dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(2, 1000, 64), NULL, cases[i].b), c;
        if (cases[i].scale_b) {
            dnnjit_tensor_t scale = tu_tensor(g, "scale", 3, TU_DIMS(1, 1, 64), NULL, 0);
            TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "scale_b", .mode = DNNJIT_POINTWISE_MUL},
                                         b, scale, 0, &b));
        }
        TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
        TU_OK(dnnjit_tensor_set_output(g, c, true));
        TU_OK(dnnjit_graph_validate(g));
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(g, &p));
        assert_int_equal(p.group_count, 1);
        bool exact = false, tf32 = false;
        for (int knob = 0; knob < engine->knob_count; knob++) {
            char name[64];
            engine->knob_name(knob, name, sizeof name);
            bool taken = engine->supports(g, &p.groups[0], knob, "sm_90a", NULL, 0);
            exact |= taken && !strstr(name, "tf32");
            tf32 |= taken && strstr(name, "tf32");
        }
        assert_true(exact && tf32);
        dnnjit__kernel_t k;
        TU_OK(engine->generate(g, &p, &p.groups[0], 0, &k));
        char want[128];
        snprintf(want, sizeof want, "typedef float dj_ta;\ntypedef float dj_tb;\ntypedef %s dj_ma;\ntypedef %s dj_mb;\n",
                 cases[i].ma, cases[i].mb);
        if (!strstr(k.source, want))
            fail_msg("case %zu: the source lacks \"%s\"", i, want);
        /* A 16-bit operand in memory is widened element by element, never copied as bytes. */
        if (cases[i].a != DNNJIT_DATA_TYPE_FLOAT)
            assert_non_null(strstr(k.source, "DJ_A_VEC = false"));
        if (cases[i].b != DNNJIT_DATA_TYPE_FLOAT && !cases[i].scale_b)
            assert_non_null(strstr(k.source, "DJ_B_VEC = false"));
        check_prologue_source(k.source, 'B', cases[i].scale_b, "mixed");
        dnnjit__kernel_free(&k);
        dnnjit__partition_free(&p);
        assert_int_equal(check_knobs(g, false, NULL), 1);
        dnnjit_graph_destroy(g);
    }
}

/* The layout the generator describes follows the strides: a column-major A is read M-major. */
static void source_follows_strides(void **state)
{
    (void)state;
    dnnjit_graph_t g = gemm_graph(NULL, DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){64, 64, 64, 1, true, false});
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    dnnjit__kernel_t k;
    TU_OK(engine->generate(g, &p, &p.groups[0], 0, &k));
    assert_non_null(strstr(k.source, "DJ_A_KMAJOR = false"));
    assert_non_null(strstr(k.source, "DJ_B_KMAJOR = false"));
    assert_non_null(strstr(k.source, "DJ_M = 64LL, DJ_N = 64LL, DJ_K = 64LL"));
    assert_non_null(strstr(k.source, "DJ_A_PROLOGUE = false"));
    assert_non_null(strstr(k.source, "DJ_B_PROLOGUE = false"));
    dnnjit__kernel_free(&k);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void refusals(void **state)
{
    (void)state;
    char why[200];
    struct {
        dnnjit_data_type_t io, compute;
        const char *arch;
        int knob;
        const char *fragment;
    } cases[] = {
        {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT, "sm_75", 0, "sm_80"},
        {DNNJIT_DATA_TYPE_DOUBLE, DNNJIT_DATA_TYPE_DOUBLE, "sm_90a", 0, "HALF, BFLOAT16 or FLOAT"},
        {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_HALF, "sm_90a", 0, "accumulates in FLOAT"},
        {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT, "sm_90a", 1, "TF32 knob"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = gemm_graph(NULL, cases[i].io, cases[i].compute, (shape_t){64, 64, 64, 1, false, false});
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(g, &p));
        why[0] = 0;
        assert_false(engine->supports(g, &p.groups[0], cases[i].knob, cases[i].arch, why, sizeof why));
        if (!strstr(why, cases[i].fragment))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, why, cases[i].fragment);
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
}

static void heuristics(void **state)
{
    (void)state;
    dnnjit_handle_t h = NULL;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    struct {
        dnnjit_data_type_t io;
        shape_t shape;
        const char *mode_a_prefix;
    } cases[] = {
        /* On sm_90a the TMA + wgmma engine (test-gemm-sm90) ranks first for big 16-bit shapes. */
        {DNNJIT_DATA_TYPE_BFLOAT16, {4096, 4096, 4096, 1, false, false}, "gemm_sm90_128x256x64_s4"},
        {DNNJIT_DATA_TYPE_HALF, {64, 64, 128, 4, false, false}, "gemm_32x32x64_w16x16_s3"},
        {DNNJIT_DATA_TYPE_BFLOAT16, {64, 64, 8192, 1, false, false}, "gemm_32x32x64_w16x16_s3_splitk8"},
        {DNNJIT_DATA_TYPE_FLOAT, {1024, 1024, 1024, 1, false, false}, "gemm_"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = gemm_graph(h, cases[i].io, DNNJIT_DATA_TYPE_FLOAT, cases[i].shape);
        char *a = tu_first_plan(g, DNNJIT_HEUR_MODE_A);
        if (strncmp(a, cases[i].mode_a_prefix, strlen(cases[i].mode_a_prefix)) != 0)
            fail_msg("case %zu: mode A chose %s, expected %s...", i, a, cases[i].mode_a_prefix);
        /* Exact plans before TF32 ones in mode A, and only TF32 plans carry the note. */
        uint32_t notes = 0;
        TU_OK(dnnjit_graph_get_plan_behavior_notes(g, 0, &notes));
        assert_int_equal(notes & DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION, 0);
        int64_t count = 0;
        TU_OK(dnnjit_graph_get_plan_count(g, &count));
        bool seen_tf32 = false;
        for (int64_t p = 0; p < count; p++) {
            char *name = NULL;
            TU_OK(dnnjit_graph_get_plan_name(g, p, &name));
            TU_OK(dnnjit_graph_get_plan_behavior_notes(g, p, &notes));
            bool tf32 = strstr(name, "_tf32") != NULL;
            assert_int_equal(tf32, (notes & DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION) != 0);
            if (seen_tf32 && !tf32 && strncmp(name, "gemm_", 5) == 0)
                fail_msg("exact plan %s ranked after a TF32 plan", name);
            seen_tf32 |= tf32;
            assert_true(cases[i].io == DNNJIT_DATA_TYPE_FLOAT || !tf32);
            dnnjit_free(name);
        }
        /* Mode B ranks by the cost model: its first plan is a tensor-core one. */
        char *b = tu_first_plan(g, DNNJIT_HEUR_MODE_B);
        assert_int_equal(strncmp(b, "gemm_", 5), 0);
        dnnjit_free(a);
        dnnjit_free(b);
        dnnjit_graph_destroy(g);
    }
    dnnjit_handle_destroy(h);
}

/* The tile rows, columns and split-K factor of an sm_80 engine plan name
 * (gemm_<bm>x<bn>x<bk>_..._splitk<s>). */
static void plan_shape(const char *name, int *bm, int *bn, int *split)
{
    if (sscanf(name, "gemm_%dx%dx", bm, bn) != 2)
        fail_msg("%s is not an sm_80 engine plan", name);
    const char *at = strstr(name, "_splitk");
    *split = 1;
    if (at)
        assert_int_equal(sscanf(at, "_splitk%d", split), 1);
}

/* The first tiled plan of the sm_80 engine in g's plan list (made beforehand), or NULL. */
static char *first_sm80_plan(dnnjit_graph_t g)
{
    int64_t count = 0;
    TU_OK(dnnjit_graph_get_plan_count(g, &count));
    for (int64_t p = 0; p < count; p++) {
        char *name = NULL;
        TU_OK(dnnjit_graph_get_plan_name(g, p, &name));
        if (strncmp(name, "gemm_", 5) == 0 && strncmp(name, "gemm_sm90_", 10) != 0 &&
            strncmp(name, "gemm_skinny_", 12) != 0)
            return name;
        dnnjit_free(name);
    }
    return NULL;
}

/* Mode A on the bench sweep's shapes (bench/bench.c, gemm_sweep) for sm_90a. linear_MxNxK is
 * y = x W^T with W an nn.Linear weight [N, K] (B K-major). With M of 1 to 128 these are
 * memory-bound, and the sm_80 engine's plan must keep many CTAs streaming without wasting
 * tile rows: the smallest tile (32 rows) where M <= 16, a tile whose rows divide M = 128; the
 * K of 14336 split so that the CTAs walk a quarter of it or less, K = 4096 whole (16x4096x4096
 * measured 24.3 µs whole, faster than cuBLAS; the big tiles split 8 ways measured 99 to 172
 * µs on these shapes). The skinny kernel's plans rank first where A and B fit in L2 (N = K =
 * 4096 at 1 and 16 rows) or A has one row: the sm_90 engine defers to them. Elsewhere it
 * defers where its 128x128 tiles are fewer than half of the 132 SMs and K is short (below
 * 1024), which none of these has: its plans are mode A's first on the rest, split-K where
 * N = 4096 leaves its tiles a quarter of the SMs (16 tiles), whole where N = 14336 and 128
 * rows fill 112 SMs; where N = 14336 and M is 16, clusters of two with TMA stores (on the
 * H200, 33.8 us against 34.1 on 128x128 tiles). */
static void few_rows_heuristics(void **state)
{
    (void)state;
    dnnjit_handle_t h = NULL;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    static const struct {
        int64_t m, n, k;
        int max_bm;                /* the tile rows at most */
        int min_split, max_split;  /* the split-K factor */
        int sm90_split;            /* whether the sm_90 plan first is split-K (-1: either) */
        bool skinny;               /* whether the skinny kernel's first plan is mode A's first */
    } linear[] = {
        {1, 4096, 4096, 32, 1, 1, 1, true},      {16, 4096, 4096, 32, 1, 1, 1, true},
        {128, 4096, 4096, 128, 1, 1, 1, false},  {1, 14336, 4096, 32, 1, 1, -1, true},
        {16, 14336, 4096, 32, 1, 1, -1, false},  {128, 14336, 4096, 128, 1, 1, 0, false},
        {1, 4096, 14336, 32, 4, 8, 1, true},     {16, 4096, 14336, 32, 4, 8, 1, false},
        {128, 4096, 14336, 128, 2, 4, 1, false},
    };
    for (size_t i = 0; i < sizeof linear / sizeof linear[0]; i++) {
        int64_t m = linear[i].m, n = linear[i].n, k = linear[i].k;
        dnnjit_graph_t g =
            gemm_graph(h, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT, (shape_t){m, n, k, 1, false, true});
        char *first = tu_first_plan(g, DNNJIT_HEUR_MODE_A), *sm80 = first_sm80_plan(g);
        assert_non_null(sm80);
        int bm, bn, split;
        plan_shape(sm80, &bm, &bn, &split);
        printf("linear_%lldx%lldx%lld: mode A %s, sm_80 engine %s\n", (long long)m, (long long)n, (long long)k, first,
               sm80);
        if (bm > linear[i].max_bm || (m > bm && m % bm) || split < linear[i].min_split || split > linear[i].max_split)
            fail_msg("linear_%lldx%lldx%lld: the sm_80 engine chose %s", (long long)m, (long long)n, (long long)k,
                     sm80);
        /* Split or not, the CTAs cover three quarters of the SMs at least. */
        assert_true((n + bn - 1) / bn * ((m + bm - 1) / bm) * split >= 132 * 3 / 4);
        if (linear[i].skinny) {
            assert_string_equal(first, "gemm_skinny_w4_l4");
        } else {
            assert_int_equal(strncmp(first, "gemm_sm90_", 10), 0);
            if (linear[i].sm90_split >= 0)
                assert_int_equal(strstr(first, "_splitk") != NULL, linear[i].sm90_split);
            if (n == 14336 && m <= 16 && strstr(first, "_tmastore_mc2") == NULL)
                fail_msg("linear_%lldx%lldx%lld: mode A chose %s, not clusters with TMA stores", (long long)m,
                         (long long)n, (long long)k, first);
        }
        dnnjit_free(first);
        dnnjit_free(sm80);
        dnnjit_graph_destroy(g);
    }
    /* The big shapes: the sm_90 engine first; the sm_80 engine's own choice a whole big tile. */
    static const struct {
        int64_t m, n, k;
        dnnjit_data_type_t io;
        bool weight;
    } big[] = {
        {2048, 2048, 2048, DNNJIT_DATA_TYPE_BFLOAT16, false}, {4096, 4096, 4096, DNNJIT_DATA_TYPE_BFLOAT16, false},
        {8192, 8192, 8192, DNNJIT_DATA_TYPE_BFLOAT16, false}, {2048, 2048, 2048, DNNJIT_DATA_TYPE_HALF, false},
        {4096, 4096, 4096, DNNJIT_DATA_TYPE_HALF, false},     {8192, 8192, 8192, DNNJIT_DATA_TYPE_HALF, false},
        {4096, 4096, 4096, DNNJIT_DATA_TYPE_BFLOAT16, true},  {4096, 14336, 4096, DNNJIT_DATA_TYPE_BFLOAT16, true},
        {4096, 4096, 14336, DNNJIT_DATA_TYPE_BFLOAT16, true},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        dnnjit_graph_t g = gemm_graph(h, big[i].io, DNNJIT_DATA_TYPE_FLOAT,
                                      (shape_t){big[i].m, big[i].n, big[i].k, 1, false, big[i].weight});
        char *first = tu_first_plan(g, DNNJIT_HEUR_MODE_A), *sm80 = first_sm80_plan(g);
        assert_non_null(sm80);
        int bm, bn, split;
        plan_shape(sm80, &bm, &bn, &split);
        if (strncmp(first, "gemm_sm90_", 10) != 0 || bm < 128 || bn < 128 || split != 1)
            fail_msg("%lldx%lldx%lld: mode A chose %s, the sm_80 engine %s", (long long)big[i].m, (long long)big[i].n,
                     (long long)big[i].k, first, sm80);
        dnnjit_free(first);
        dnnjit_free(sm80);
        dnnjit_graph_destroy(g);
    }
    /* The odd shapes have operands whose rows are no multiple of 16 bytes apart (both of
     * 4097x4095x4099's, 1000x77x1000's B: 154 bytes), which the sm_80 engine fills element by
     * element: it keeps big whole tiles on 4097x4095x4099 (which the sm_90 engine takes,
     * copying such operands first) and the smallest on 1000x77x1000, whose many CTAs keep
     * the most loads in flight; the sm_90 engine's copy is faster still, and its plans
     * rank first on both. */
    static const struct {
        int64_t m, n, k;
        int min_bn, max_bn;
    } odd[] = {{4097, 4095, 4099, 128, 256}, {1000, 77, 1000, 32, 32}};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        dnnjit_graph_t g = gemm_graph(h, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                      (shape_t){odd[i].m, odd[i].n, odd[i].k, 1, false, false});
        char *first = tu_first_plan(g, DNNJIT_HEUR_MODE_A), *sm80 = first_sm80_plan(g);
        assert_non_null(sm80);
        int bm, bn, split;
        plan_shape(sm80, &bm, &bn, &split);
        if (bn < odd[i].min_bn || bn > odd[i].max_bn || split != 1)
            fail_msg("%lldx%lldx%lld: the sm_80 engine chose %s", (long long)odd[i].m, (long long)odd[i].n,
                     (long long)odd[i].k, sm80);
        assert_int_equal(strncmp(first, "gemm_sm90_", 10), 0);
        dnnjit_free(first);
        dnnjit_free(sm80);
        dnnjit_graph_destroy(g);
    }
    dnnjit_handle_destroy(h);
}

/* The skinny kernel: each of its knobs on 13 rows of a K-contiguous B (N one past a multiple
 * of 8, K not a multiple of 32) generated to the same bytes and compiled for sm_80 and
 * sm_90a, launched as one CTA per 8 columns; and what it refuses, in words: more than 16
 * rows, B with N contiguous, a K that is no multiple of 8 (a row each of A and B), rows that
 * are no 16-byte multiple apart, FLOAT inputs, a K of 2^30 or more. */
static void skinny_knobs(void **state)
{
    (void)state;
    dnnjit_graph_t g =
        gemm_graph(NULL, DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT, (shape_t){13, 4097, 1040, 1, false, true});
    assert_int_equal(check_knobs(g, true, "skinny_"), 5);
    dnnjit_graph_destroy(g);

    static const struct {
        shape_t shape;
        dnnjit_data_type_t io;
        const char *why;
    } refused[] = {
        {{17, 4096, 4096, 1, false, true}, DNNJIT_DATA_TYPE_BFLOAT16, "at most 16 rows"},
        {{8, 4096, 4096, 1, false, false}, DNNJIT_DATA_TYPE_BFLOAT16, "K axis contiguous"},
        {{1, 1, 1004, 1, false, true}, DNNJIT_DATA_TYPE_BFLOAT16, "a multiple of 8"},
        {{8, 4096, 1004, 1, false, true}, DNNJIT_DATA_TYPE_BFLOAT16, "16-byte multiples apart"},
        {{8, 4096, 4096, 1, false, true}, DNNJIT_DATA_TYPE_FLOAT, "HALF or BFLOAT16"},
        {{1, 8, (int64_t)1 << 30, 1, false, true}, DNNJIT_DATA_TYPE_BFLOAT16, "below 2^30"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        g = gemm_graph(NULL, refused[i].io, DNNJIT_DATA_TYPE_FLOAT, refused[i].shape);
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(g, &p));
        char why[256] = "";
        assert_false(engine->supports(g, &p.groups[0], engine->knob_count - 1, "sm_90a", why, sizeof why));
        if (!strstr(why, refused[i].why))
            fail_msg("case %zu: refused with \"%s\", not for \"%s\"", i, why, refused[i].why);
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
}

/* A split-K plan needs workspace for its partial sums; building it (deviceless) makes
 * get_workspace_size say so. */
static void split_k_workspace(void **state)
{
    (void)state;
    dnnjit_handle_t h = NULL;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    dnnjit_graph_t g = gemm_graph(h, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){64, 64, 8192, 1, false, false});
    dnnjit_heur_mode_t mode = DNNJIT_HEUR_MODE_A;
    TU_OK(dnnjit_graph_build(g, &mode, 1));
    char *name = NULL;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &name));
    int split = 0;
    const char *at = strstr(name, "splitk");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "splitk%d", &split), 1);
    int64_t size = 0;
    TU_OK(dnnjit_graph_get_workspace_size(g, &size));
    /* One arrival counter padded to 256 bytes, then a 64x64 fp32 partial per split. */
    assert_int_equal(size, 256 + (int64_t)split * 64 * 64 * 4);
    dnnjit_free(name);
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
}

int main(void)
{
    if (dnnjit__nvrtc_load() != DNNJIT_STATUS_SUCCESS) {
        printf("skipped: %s\n", dnnjit_last_error());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refusals),
        cmocka_unit_test(source_follows_strides),
        cmocka_unit_test(heuristics),
        cmocka_unit_test(few_rows_heuristics),
        cmocka_unit_test(split_k_workspace),
        cmocka_unit_test(skinny_knobs),
        cmocka_unit_test(every_operand_order),
        cmocka_unit_test(occupancy_knob),
        cmocka_unit_test(prologue_every_type),
        cmocka_unit_test(mixed_input_types),
        cmocka_unit_test(every_knob_every_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
