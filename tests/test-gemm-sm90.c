/* The sm_90a GEMM engine without a GPU: every knob compiling with NVRTC for sm_90a in fp16
 * and bf16 with K-major and M/N-major operands, the big bf16 plan's SASS using HGMMA and
 * UTMALDG and waiting on the kernel before without an early trigger (when cuobjdump is
 * found), the tensor maps it describes, its refusals, mode A's order against the sm_80
 * engine, and a serialized plan with tensor maps read back. Needs NVRTC; skipped without
 * it. */
#define _POSIX_C_SOURCE 200809L

#include "util.h"

#include "engine/engine.h"
#include "jit/jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

extern const dnnjit__engine_t dnnjit__engine_gemm_sm90;

static const dnnjit__engine_t *const engine = &dnnjit__engine_gemm_sm90;

typedef struct shape {
    int64_t m, n, k, batch;
    bool a_col, b_col;  /* A M-major, B K-major (column-major) */
    bool b_broadcast;   /* B is [1, K, N] */
    int64_t lda;        /* A's row stride when A is row-major (0: packed) */
} shape_t;

/* relu(A @ B + bias) over the given shape. */
static dnnjit_graph_t gemm_graph(dnnjit_handle_t h, dnnjit_data_type_t io, dnnjit_data_type_t compute, shape_t s)
{
    dnnjit_graph_t g = tu_graph_on(h, "gemm", io, compute);
    int64_t lda = s.lda ? s.lda : s.k;
    int64_t sa[3] = {s.a_col ? s.m * s.k : s.m * lda, s.a_col ? 1 : lda, s.a_col ? s.m : 1};
    int64_t sb[3] = {s.k * s.n, s.b_col ? 1 : s.n, s.b_col ? s.k : 1};
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(s.batch, s.m, s.k), sa, 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(s.b_broadcast ? 1 : s.batch, s.k, s.n), sb, 0);
    dnnjit_tensor_t bias = tu_tensor(g, "bias", 3, TU_DIMS(1, 1, s.n), NULL, 0), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_graph_bias(g, "bias_add", c, bias, &c));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "relu", .mode = DNNJIT_POINTWISE_RELU_FWD}, c,
                                 0, 0, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_graph_validate(g));
    return g;
}

/* Compiles a kernel for sm_90a with its own NVRTC option (ptxas at -O2), as a build does;
 * the CUBIN is returned when `cubin` is not NULL. */
static void compile(const dnnjit__kernel_t *k, void **cubin, size_t *size)
{
    assert_string_equal(k->compile_option, DNNJIT__PTXAS_O2);
    tu_compile_kernel(k, "sm_90a", cubin, size);
}

/* The engine's verdict on knob `knob` for the graph's one group on sm_90a: the knob's name,
 * and whether it is refused, with why. */
typedef struct verdict {
    char name[64], why[200];
    bool refused;
} verdict_t;

/* The first knob whose name holds `suffix` (the engine's knob families follow each other:
 * the exact ones, the _tf32 ones, the _areg ones, the _ashift ones), or the knob count. */
static int family_start(const char *suffix)
{
    for (int knob = 0; knob < engine->knob_count; knob++) {
        char name[64];
        engine->knob_name(knob, name, sizeof name);
        if (strstr(name, suffix))
            return knob;
    }
    return engine->knob_count;
}

/* The knobs before the first TF32 one (named _tf32): those for 16-bit and fp8 inputs. The
 * TF32 knobs repeat them, and refuse other inputs. Found once: loops test against it. */
static int exact_knobs(void)
{
    static int count = -1;
    if (count < 0)
        count = family_start("_tf32");
    return count;
}

/* Whether a knob reads A by row class (the _areg and _ashift families, which repeat the
 * 16-bit knobs after the TF32 ones). */
static bool by_class(const char *name)
{
    return strstr(name, "_areg") || strstr(name, "_ashift");
}

static verdict_t verdict_of(dnnjit_graph_t g, const dnnjit__partition_t *p, int knob)
{
    verdict_t v = {.why = ""};
    engine->knob_name(knob, v.name, sizeof v.name);
    v.refused = !engine->supports(g, &p->groups[0], knob, "sm_90a", v.why, sizeof v.why);
    return v;
}

/* Generates (twice, to the same bytes) and compiles the graph's group with every knob the
 * engine takes, or only the first of each tile width in each variant (direct, staged,
 * clustered, TMA-store); returns how many were compiled. */
static int compile_knobs(dnnjit_graph_t g, bool all_knobs)
{
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    assert_int_equal(p.group_count, 1);
    const dnnjit__group_t *grp = &p.groups[0];
    int compiled = 0;
    char last_variant[64] = "";
    for (int knob = 0; knob < engine->knob_count; knob++) {
        if (!engine->supports(g, grp, knob, "sm_90a", NULL, 0))
            continue;
        dnnjit__kernel_t k1, k2;
        TU_OK(engine->generate(g, &p, grp, knob, &k1));
        TU_OK(engine->generate(g, &p, grp, knob, &k2));
        assert_string_equal(k1.source, k2.source);
        assert_int_equal(k1.block[0], 384);
        assert_true(k1.shared_bytes <= 227 * 1024);
        char name[64], variant[64];
        int bn = 0, stages = 0, skip = 0;
        engine->knob_name(knob, name, sizeof name);
        /* The TMA-store epilogue: a third tensor map, over the output, in boxes of 64 rows
         * of 64 elements. */
        bool tma_store = strstr(name, "_tmastore") != NULL;
        assert_int_equal(strstr(k1.source, "DJ_TMA_STORE = true") != NULL, tma_store);
        assert_int_equal(k1.tma_count, tma_store ? 3 : 2);
        if (tma_store) {
            assert_int_equal(k1.tma[2].box[0], 64);
            assert_int_equal(k1.tma[2].box[1], 64);
            assert_true(dnnjit__tma_operand_valid(&k1.tma[2], &k1, NULL, 0));
        }
        assert_int_equal(sscanf(name, "128x%dx64_s%d%n", &bn, &stages, &skip), 2);
        /* The tile width and the variant, without the stages and the raster order. */
        snprintf(variant, sizeof variant, "%d%s", bn, name + skip + (strncmp(name + skip, "_rn", 3) ? 0 : 3));
        /* The staged epilogue inlines dj_epilogue into its loop; the direct one calls it. */
        assert_int_equal(strstr(name, "_staged") != NULL,
                         strstr(k1.source, "#define DJ_EPILOGUE_INLINING __forceinline__") != NULL);
        if (all_knobs || strcmp(variant, last_variant) != 0) {
            compile(&k1, NULL, NULL);
            compiled++;
        }
        snprintf(last_variant, sizeof last_variant, "%s", variant);
        dnnjit__kernel_free(&k1);
        dnnjit__kernel_free(&k2);
    }
    dnnjit__partition_free(&p);
    return compiled;
}

static void every_knob_compiles(void **state)
{
    (void)state;
    /* Every knob in bf16 with both operands K-major (B split in halves by the clustered
     * variant); every type and order of majors with fewer knobs (the majors change the
     * loads and descriptors, the tile width and the variant the code; stages and tile order
     * are constants). */
    static const dnnjit_data_type_t types[] = {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_BFLOAT16};
    for (size_t t = 0; t < 2; t++)
        for (int order = 0; order < 4; order++) {
            bool mixed = t == 1 && order == 2;
            shape_t s = {304, 520, 136, 2, order & 1, order >> 1 & 1, false, 0};
            dnnjit_graph_t g = gemm_graph(NULL, types[t], DNNJIT_DATA_TYPE_FLOAT, s);
            int compiled = compile_knobs(g, mixed);
            printf("%s, A %s-major, B %s-major: %d knobs compiled\n", dnnjit_data_type_name(types[t]),
                   s.a_col ? "M" : "K", s.b_col ? "K" : "N", compiled);
            /* 128x128 and 128x192 with 3, 4 and 5 stages and 128x256 with 3 and 4, each in
             * both tile orders and in the five variants (direct, staged, clustered, TMA
             * stores alone and clustered); or one of each tile width and variant. */
            assert_int_equal(compiled, mixed ? 80 : 15);
            dnnjit_graph_destroy(g);
        }
}

/* The tensor maps follow the strides: a row-major A is K-major with its row stride, a
 * row-major B N-major (inner dimension N), a broadcast B has no batch dimension, and the
 * boxes are one 128-byte swizzle row wide. */
static void tensor_maps(void **state)
{
    (void)state;
    dnnjit_graph_t g = gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){100, 200, 40, 3, false, false, true, 48});
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    int knob = 0;
    while (!engine->supports(g, &p.groups[0], knob, "sm_90a", NULL, 0))
        knob++;
    dnnjit__kernel_t k;
    TU_OK(engine->generate(g, &p, &p.groups[0], knob, &k));
    const dnnjit__tma_operand_t *a = &k.tma[0], *b = &k.tma[1];
    assert_int_equal(a->dtype, DNNJIT__TMA_DTYPE_BFLOAT16);
    assert_int_equal(a->swizzle, DNNJIT__TMA_SWIZZLE_128B);
    /* A: [K = 40, M = 100, batch 3], rows 48 elements (96 bytes) apart, batches 100 rows. */
    assert_int_equal(a->rank, 3);
    assert_int_equal(a->dims[0], 40);
    assert_int_equal(a->dims[1], 100);
    assert_int_equal(a->dims[2], 3);
    assert_int_equal(a->strides[0], 96);
    assert_int_equal(a->strides[1], 100 * 48 * 2);
    assert_int_equal(a->box[0], 64);
    assert_int_equal(a->box[1], 128);
    /* B: [N = 200, K = 40], rows of N 400 bytes apart, no batch (it broadcasts). */
    assert_int_equal(b->rank, 2);
    assert_int_equal(b->dims[0], 200);
    assert_int_equal(b->dims[1], 40);
    assert_int_equal(b->strides[0], 400);
    assert_int_equal(b->box[0], 64);
    assert_int_equal(b->box[1], 64);
    assert_true(dnnjit__tma_operand_valid(a, &k, NULL, 0));
    assert_true(dnnjit__tma_operand_valid(b, &k, NULL, 0));
    assert_non_null(strstr(k.source, "DJ_A_KMAJOR = true, DJ_B_KMAJOR = false"));
    assert_non_null(strstr(k.source, "m64n128k16.f32.bf16.bf16"));
    /* A 16-byte stride rule is what TMA checks: 96 bytes pass, 90 do not. */
    dnnjit__tma_operand_t bad = *a;
    bad.strides[0] = 90;
    char why[120] = "";
    assert_false(dnnjit__tma_operand_valid(&bad, &k, why, sizeof why));
    assert_non_null(strstr(why, "multiple of 16 bytes"));
    dnnjit__kernel_free(&k);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
    /* 64 rows or fewer (16 here): A's box holds the first consumer's 64 rows alone. */
    g = gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT, (shape_t){16, 256, 256, 1, false, true, false, 0});
    TU_OK(dnnjit__partition(g, &p));
    TU_OK(engine->generate(g, &p, &p.groups[0], 0, &k));
    assert_int_equal(k.tma[0].box[1], 64);
    dnnjit__kernel_free(&k);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* The clustered knobs: an even grid, the cluster attribute, and B's K-major box of half a
 * tile's rows (each CTA loads one half for both); the others a whole tile's rows. M = 264
 * is three 128-row tiles, so the second cluster's second tile lies past M. */
static void cluster_knobs(void **state)
{
    (void)state;
    dnnjit_graph_t g = gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){264, 200, 136, 1, false, true, false, 0});
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    int clustered = 0;
    for (int knob = 0; knob < exact_knobs(); knob++) {
        if (!engine->supports(g, &p.groups[0], knob, "sm_90a", NULL, 0))
            continue;
        char name[64];
        int bn = 0;
        engine->knob_name(knob, name, sizeof name);
        assert_int_equal(sscanf(name, "128x%d", &bn), 1);
        bool cluster = strstr(name, "_mc2") != NULL;
        dnnjit__kernel_t k;
        TU_OK(engine->generate(g, &p, &p.groups[0], knob, &k));
        assert_non_null(strstr(k.source, "DJ_B_KMAJOR = true"));
        assert_int_equal(k.tma[1].box[1], cluster ? bn / 2 : bn);
        assert_int_equal(strstr(k.source, "__cluster_dims__(2, 1, 1)") != NULL, cluster);
        /* Three row tiles, or two clusters of two (rows 0-255 and 256-511), per column. */
        assert_int_equal(k.grid[0], (cluster ? 4 : 3) * ((200 + bn - 1) / bn));
        clustered += cluster;
        dnnjit__kernel_free(&k);
    }
    /* Three stage counts of 128x128 and 128x192 and two of 128x256, in two tile orders,
     * with the staged epilogue and with TMA stores. */
    assert_int_equal(clustered, 32);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* $DNNJIT_CUOBJDUMP (which ctest sets when CMake found one), else the first cuobjdump of
 * $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin and the PATH. */
static bool find_cuobjdump(char *path, size_t size)
{
    const char *given = getenv("DNNJIT_CUOBJDUMP");
    if (given && *given) {
        snprintf(path, size, "%s", given);
        return access(path, X_OK) == 0;
    }
    const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t i = 0; i < 3; i++) {
        if (!homes[i])
            continue;
        snprintf(path, size, "%s/bin/cuobjdump", homes[i]);
        if (access(path, X_OK) == 0)
            return true;
    }
    snprintf(path, size, "cuobjdump");
    return system("command -v cuobjdump >/dev/null 2>&1") == 0;
}

/* The 8192^3 bf16 plan's CUBIN holds tensor-core warpgroup MMAs and TMA loads, and waits
 * for the kernel before it (ACQBULK, griddepcontrol.wait) without triggering the next one
 * early (PREEXIT, griddepcontrol.launch_dependents): see dj_gemm_sm90. */
static void sass_has_hgmma_and_utmaldg(void **state)
{
    (void)state;
    char tool[512];
    if (!find_cuobjdump(tool, sizeof tool)) {
        printf("no cuobjdump found: the SASS check is skipped\n");
        skip();
    }
    dnnjit_graph_t g = gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){8192, 8192, 8192, 1, false, false, false, 0});
    dnnjit_handle_t h = NULL;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    dnnjit__kernel_t k;
    int knob = 0;
    while (!engine->supports(g, &p.groups[0], knob, "sm_90a", NULL, 0))
        knob++;
    TU_OK(engine->generate(g, &p, &p.groups[0], knob, &k));
    void *cubin = NULL;
    size_t size = 0;
    compile(&k, &cubin, &size);
    char file[] = "/tmp/dnnjit-sm90-XXXXXX";
    int fd = mkstemp(file);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, cubin, size), (ssize_t)size);
    close(fd);
    char command[1200];
    snprintf(command, sizeof command, "'%s' --dump-sass '%s'", tool, file);
    FILE *out = popen(command, "r");
    assert_non_null(out);
    char line[1024];
    int hgmma = 0, utmaldg = 0, acqbulk = 0, preexit = 0;
    while (fgets(line, sizeof line, out)) {
        hgmma += strstr(line, "HGMMA") != NULL;
        utmaldg += strstr(line, "UTMALDG") != NULL;
        acqbulk += strstr(line, "ACQBULK") != NULL;
        preexit += strstr(line, "PREEXIT") != NULL;
    }
    int status = pclose(out);
    unlink(file);
    assert_int_equal(status, 0);
    printf("SASS: %d HGMMA, %d UTMALDG, %d ACQBULK, %d PREEXIT\n", hgmma, utmaldg, acqbulk, preexit);
    assert_true(hgmma >= 4);
    assert_true(utmaldg >= 1);
    assert_int_equal(acqbulk, 1);
    assert_int_equal(preexit, 0);
    free(cubin);
    dnnjit__kernel_free(&k);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
    dnnjit_handle_destroy(h);
}

/* y = (A @ B) * scale as BFLOAT16, A and B fp8 (of the given types) and K-major: B is
 * column-major. The scale stands for the product of the operands' per-tensor scales. */
static dnnjit_graph_t fp8_graph(dnnjit_handle_t h, dnnjit_data_type_t ta, dnnjit_data_type_t tb, int64_t m, int64_t n,
                                int64_t k, dnnjit_data_type_t compute)
{
    dnnjit_graph_t g = tu_graph_on(h, "fp8", DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(1, m, k), NULL, ta);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(1, k, n), TU_DIMS(k * n, 1, k), tb), c;
    dnnjit_tensor_t scale = tu_tensor(g, "scale", 3, TU_DIMS(1, 1, 1), NULL, DNNJIT_DATA_TYPE_FLOAT);
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm", .compute_data_type = compute}, &c));
    TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "descale", .mode = DNNJIT_POINTWISE_MUL}, c,
                                 scale, 0, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_graph_validate(g));
    return g;
}

/* fp8 in every pair of E4M3 and E5M2: K tiles of 128 elements (one 128-byte row), boxes of
 * bytes, the k32 wgmma of the two types without transpose bits, the K walk promoting its
 * sums to float registers (so the 128x256 tiles, which have no registers for them, are
 * refused), and every knob compiling for the E4M3 pair (a tile width and variant each for
 * the others).
 * HALF compute keeps wgmma's f16 sums, unpromoted, on every tile width. */
static void fp8_operands(void **state)
{
    (void)state;
    static const dnnjit_data_type_t types[] = {DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E5M2};
    static const char *const ptx[] = {"e4m3", "e5m2"};
    for (int i = 0; i < 4; i++) {
        dnnjit_graph_t g = fp8_graph(NULL, types[i >> 1], types[i & 1], 200, 272, 336, DNNJIT_DATA_TYPE_FLOAT);
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(g, &p));
        assert_int_equal(p.group_count, 1);
        int knob = 0;
        while (!engine->supports(g, &p.groups[0], knob, "sm_90a", NULL, 0))
            knob++;
        dnnjit__kernel_t k;
        TU_OK(engine->generate(g, &p, &p.groups[0], knob, &k));
        for (int t = 0; t < 2; t++) {
            assert_int_equal(k.tma[t].dtype, DNNJIT__TMA_DTYPE_UINT8);
            assert_int_equal(k.tma[t].dims[0], 336);  /* K, contiguous */
            assert_int_equal(k.tma[t].strides[0], 336); /* bytes between rows */
            assert_int_equal(k.tma[t].box[0], 128);
            assert_true(dnnjit__tma_operand_valid(&k.tma[t], &k, NULL, 0));
        }
        assert_non_null(strstr(k.source, "DJ_BK = 128"));
        char instruction[64];
        snprintf(instruction, sizeof instruction, "k32.f32.%s.%s {", ptx[i >> 1], ptx[i & 1]);
        assert_non_null(strstr(k.source, instruction));
        assert_non_null(strstr(k.source, "p, 1, 1;"));
        assert_non_null(strstr(k.source, "constexpr bool DJ_PROMOTE = true;"));
        dnnjit__kernel_free(&k);
        for (knob = 0; knob < exact_knobs(); knob++) {
            verdict_t v = verdict_of(g, &p, knob);
            assert_true(v.refused || strncmp(v.name, "128x128", 7) == 0 || strncmp(v.name, "128x192", 7) == 0);
            /* (The split-K knobs are refused first for K's three tiles.) */
            if (strncmp(v.name, "128x256", 7) == 0 && !strstr(v.name, "_splitk")) {
                assert_non_null(strstr(v.why, "a 128x256 tile has too few"));
            }
        }
        dnnjit__partition_free(&p);
        int compiled = compile_knobs(g, i == 0);
        printf("A %s, B %s: %d knobs compiled\n", ptx[i >> 1], ptx[i & 1], compiled);
        /* 128x128 and 128x192 in three stage counts, two tile orders and five variants
         * (K's three tiles are too few to split). */
        assert_int_equal(compiled, i == 0 ? 60 : 10);
        dnnjit_graph_destroy(g);
    }
    /* HALF compute: wgmma's f16 accumulator, a register of two halves per column pair. */
    dnnjit_graph_t half = fp8_graph(NULL, types[0], types[1], 200, 272, 336, DNNJIT_DATA_TYPE_HALF);
    dnnjit__partition_t hp;
    TU_OK(dnnjit__partition(half, &hp));
    dnnjit__kernel_t hk;
    TU_OK(engine->generate(half, &hp, &hp.groups[0], 0, &hk));
    assert_non_null(strstr(hk.source, "k32.f16.e4m3.e5m2 {"));
    assert_non_null(strstr(hk.source, "constexpr bool DJ_PROMOTE = false;"));
    assert_non_null(strstr(hk.source, ".reg .b32 dj_d<"));
    assert_non_null(strstr(hk.source, "mov.b32 {l, h}, dj_d0;\\ncvt.f32.f16 %0, l;\\ncvt.f32.f16 %1, h;"));
    dnnjit__kernel_free(&hk);
    dnnjit__partition_free(&hp);
    assert_int_equal(compile_knobs(half, false), 15);
    dnnjit_graph_destroy(half);
    /* Mode A on sm_90a takes the engine for a big fp8 GEMM, with the 16-bit rules' pick
     * among the tiles it may use: 128x192 when promoting, in clusters of two, 128x256 with
     * HALF compute, alone (the clusters measured faster for promoted fp8 and 16-bit
     * operands only), both storing the 16-bit output through TMA. */
    dnnjit_handle_t h = NULL;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    static const struct {
        dnnjit_data_type_t compute;
        const char *plan;
    } picks[] = {{DNNJIT_DATA_TYPE_FLOAT, "gemm_sm90_128x192x64_s4_tmastore_mc2"},
                 {DNNJIT_DATA_TYPE_HALF, "gemm_sm90_128x256x64_s4_tmastore"}};
    for (int i = 0; i < 2; i++) {
        dnnjit_graph_t big = fp8_graph(h, types[0], types[0], 8192, 8192, 8192, picks[i].compute);
        char *a = tu_first_plan(big, DNNJIT_HEUR_MODE_A);
        assert_string_equal(a, picks[i].plan);
        dnnjit_free(a);
        dnnjit_graph_destroy(big);
    }
    dnnjit_handle_destroy(h);
}

/* FLOAT inputs as TF32, in the knobs that repeat the others with _tf32 names, noted
 * REDUCED_PRECISION (and those alone): K-major operands as tensor maps of TF32 (which TMA
 * rounds to nearest), K tiles of 32 elements (one 128-byte row), the k8 wgmma without
 * transpose bits, and a tile width and variant of each knob compiling (every knob where
 * B is staged). A TF32 knob refuses other types, as the engine refuses inputs of two types
 * (M- or N-major TF32 operands: transposed_operands). Mode A on sm_90a ranks the exact
 * plans first (the sm_80 engine's three TF32 products), then this engine's TF32 plans, then
 * the sm_80 engine's, and the fallback last. */
static void tf32_operands(void **state)
{
    (void)state;
    dnnjit_graph_t g = gemm_graph(NULL, DNNJIT_DATA_TYPE_FLOAT, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){200, 272, 136, 2, false, true, false, 0});
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    int supported = 0;
    for (int knob = 0; knob < engine->knob_count; knob++) {
        verdict_t v = verdict_of(g, &p, knob);
        bool tf32 = strstr(v.name, "_tf32") != NULL;
        /* (The _areg and _ashift knobs after the TF32 ones are 16-bit knobs again.) */
        assert_int_equal(tf32, knob >= exact_knobs() && !by_class(v.name));
        assert_int_equal(engine->notes(knob), tf32 ? DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION : 0);
        if (!tf32) {
            assert_true(v.refused);
            assert_non_null(strstr(v.why, "FLOAT inputs multiply as TF32"));
            continue;
        }
        /* The same verdict as the knob it repeats gives a bf16 graph of the shape. */
        if (v.refused)
            continue;
        supported++;
        dnnjit__kernel_t k;
        TU_OK(engine->generate(g, &p, &p.groups[0], knob, &k));
        for (int t = 0; t < 2; t++) {
            assert_int_equal(k.tma[t].dtype, DNNJIT__TMA_DTYPE_TFLOAT32);
            assert_int_equal(k.tma[t].dims[0], 136);        /* K, contiguous */
            assert_int_equal(k.tma[t].strides[0], 136 * 4); /* bytes between rows */
            assert_int_equal(k.tma[t].box[0], 32);
            assert_true(dnnjit__tma_operand_valid(&k.tma[t], &k, NULL, 0));
        }
        assert_non_null(strstr(k.source, "DJ_BK = 32"));
        assert_non_null(strstr(k.source, "k8.f32.tf32.tf32 {"));
        assert_non_null(strstr(k.source, "p, 1, 1;"));
        assert_non_null(strstr(k.source, "constexpr bool DJ_PROMOTE = false;"));
        dnnjit__kernel_free(&k);
    }
    /* As many as a bf16 graph of the shape takes with its exact knobs (no TMA-store ones:
     * the output is FLOAT). */
    dnnjit_graph_t bf16 = gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                     (shape_t){200, 272, 136, 2, false, true, false, 0});
    dnnjit__partition_t bp;
    TU_OK(dnnjit__partition(bf16, &bp));
    int bf16_supported = 0;
    for (int knob = 0; knob < 2 * exact_knobs(); knob++) {
        verdict_t v = verdict_of(bf16, &bp, knob);
        if (knob >= exact_knobs()) {
            assert_true(v.refused);
            assert_non_null(strstr(v.why, "a _tf32 plan takes FLOAT inputs, and A and B are BFLOAT16"));
        } else {
            bf16_supported += !v.refused && !strstr(v.name, "_tmastore");
        }
    }
    assert_int_equal(supported, bf16_supported);
    dnnjit__partition_free(&bp);
    dnnjit_graph_destroy(bf16);
    dnnjit__partition_free(&p);
    printf("FLOAT as TF32: %d knobs compiled\n", compile_knobs(g, false));
    dnnjit_graph_destroy(g);

    /* Staged (rows of 77 floats, 308 bytes), every knob compiling. */
    dnnjit_graph_t staged = gemm_graph(NULL, DNNJIT_DATA_TYPE_FLOAT, DNNJIT_DATA_TYPE_FLOAT,
                                       (shape_t){200, 136, 77, 1, false, true, false, 0});
    int compiled = compile_knobs(staged, true);
    printf("FLOAT as TF32, staged: %d knobs compiled\n", compiled);
    /* Direct and staged, 18 knobs each less 128x256 with five stages, two tile orders. */
    assert_int_equal(compiled, 2 * 18 - 2 * 2);
    dnnjit_graph_destroy(staged);

    /* Inputs of two types. */
    dnnjit_graph_t two = tu_graph(DNNJIT_DATA_TYPE_FLOAT);
    dnnjit_tensor_t a = tu_tensor(two, "A", 3, TU_DIMS(1, 64, 64), NULL, DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t b = tu_tensor(two, "B", 3, TU_DIMS(1, 64, 64), TU_DIMS(4096, 1, 64), 0), c;
    TU_OK(dnnjit_graph_matmul(two, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_tensor_set_output(two, c, true));
    TU_OK(dnnjit_graph_validate(two));
    dnnjit__partition_t rp;
    TU_OK(dnnjit__partition(two, &rp));
    for (int knob = exact_knobs(); knob < engine->knob_count; knob++) {
        verdict_t v = verdict_of(two, &rp, knob);
        assert_true(v.refused);
        assert_non_null(strstr(v.why, "both FP8 (E4M3 or E5M2) or both FLOAT (as TF32); A is HALF, B is FLOAT"));
    }
    dnnjit__partition_free(&rp);
    dnnjit_graph_destroy(two);

    /* Mode A's order on sm_90a at 4096^3. */
    dnnjit_handle_t h = NULL;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    dnnjit_graph_t big = gemm_graph(h, DNNJIT_DATA_TYPE_FLOAT, DNNJIT_DATA_TYPE_FLOAT,
                                    (shape_t){4096, 4096, 4096, 1, false, true, false, 0});
    TU_OK(dnnjit_graph_create_execution_plans(big, (dnnjit_heur_mode_t[]){DNNJIT_HEUR_MODE_A}, 1));
    int64_t count = 0;
    TU_OK(dnnjit_graph_get_plan_count(big, &count));
    /* 0: exact sm_80 plans, 1: this engine's TF32 ones, 2: the sm_80 engine's, 3: fallback. */
    int last_class = 0, seen[4] = {0};
    char first_sm90[64] = "";
    for (int64_t i = 0; i < count; i++) {
        char *name = NULL;
        uint32_t notes = 0;
        TU_OK(dnnjit_graph_get_plan_name(big, i, &name));
        TU_OK(dnnjit_graph_get_plan_behavior_notes(big, i, &notes));
        bool reduced = notes & DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION, sm90 = strncmp(name, "gemm_sm90_", 10) == 0;
        int cls = strncmp(name, "fallback", 8) == 0 ? 3 : !reduced ? 0 : sm90 ? 1 : 2;
        assert_int_equal(reduced, strstr(name, "_tf32") != NULL);
        if (cls < last_class)
            fail_msg("plan %lld (%s) ranks after a plan of a later kind", (long long)i, name);
        if (cls == 1 && !*first_sm90)
            snprintf(first_sm90, sizeof first_sm90, "%s", name);
        last_class = cls;
        seen[cls]++;
        dnnjit_free(name);
    }
    for (int i = 0; i < 4; i++)
        assert_true(seen[i] > 0);
    /* The 16-bit rule's tile (FLOAT output: no TMA stores), the staged epilogue. */
    assert_string_equal(first_sm90, "gemm_sm90_128x256x64_s4_staged_tf32");
    dnnjit_graph_destroy(big);
    dnnjit_handle_destroy(h);
}

/* The line pitch of a staged copy: `inner` elements rounded up to 128 bytes. */
static int64_t pitch_of(int64_t inner, int64_t esize)
{
    return (inner * esize + 127) / 128 * 128;
}

/* Operands whose strides TMA cannot take are copied by the kernel into its scratch first:
 * 4097x4095x4099 bf16 (A's rows 8198 bytes apart, B's 8190), a batch stride of 8008 bytes,
 * fp8 rows of 40 bytes. The plans are cooperative, take the scratch in the slot after the
 * tensors (a counter, then each copy, 256-byte aligned), map the copies, leave the clusters
 * out, and compile. */
static void staged_operands(void **state)
{
    (void)state;
    /* 4097x4095x4099, both row-major: A is K-major, B N-major. */
    dnnjit_graph_t odd = gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                    (shape_t){4097, 4095, 4099, 1, false, false, false, 0});
    /* A [3, 100, 40] half with 4004 elements between batch entries, B [1, 40, 64] shared. */
    dnnjit_graph_t batched = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(batched, "A", 3, TU_DIMS(3, 100, 40), TU_DIMS(4004, 40, 1), 0);
    dnnjit_tensor_t b = tu_tensor(batched, "B", 3, TU_DIMS(1, 40, 64), NULL, 0), c;
    TU_OK(dnnjit_graph_matmul(batched, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_tensor_set_output(batched, c, true));
    TU_OK(dnnjit_graph_validate(batched));
    struct {
        dnnjit_graph_t g;
        bool a_staged, b_staged;
        int64_t a_lines, a_inner, b_lines, b_inner, esize;
        int stored; /* TMA-store knobs taken: none where the output's rows are 8190 bytes apart */
    } cases[] = {
        {odd, true, true, 4097, 4099, 4099, 4095, 2, 0},
        {fp8_graph(NULL, DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E5M2, 200, 136, 40, DNNJIT_DATA_TYPE_FLOAT),
         true, true, 200, 40,
         136, 40, 1, 12},
        {batched, true, false, 300, 40, 0, 0, 2, 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = cases[i].g;
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(g, &p));
        int supported = 0, compiled = 0, stored = 0;
        for (int knob = 0; knob < exact_knobs(); knob++) {
            verdict_t v = verdict_of(g, &p, knob);
            const char *name = v.name;
            if (v.refused) {
                /* A FLOAT output, or rows of an odd number of 16-bit elements. */
                if (strstr(name, "_tmastore") && strstr(v.why, "the TMA-store epilogue"))
                    continue;
                if (strstr(name, "_mc2"))
                    assert_non_null(strstr(v.why, "not combined with clusters"));
                else if (strstr(name, "_splitk"))
                    assert_non_null(strstr(v.why, "split-K"));
                else if (strstr(name, "128x256x64_s5") == NULL) /* shared memory */
                    assert_true(cases[i].esize == 1 && strstr(v.why, "a 128x256 tile has too few"));
                continue;
            }
            assert_null(strstr(name, "_mc2"));
            supported++;
            stored += strstr(name, "_tmastore") != NULL;
            dnnjit__kernel_t k;
            TU_OK(engine->generate(g, &p, &p.groups[0], knob, &k));
            assert_true(k.cooperative);
            assert_int_equal(k.grid[0], 132);
            assert_int_equal(k.scratch_slot, k.tensor_count);
            assert_int_equal(k.scratch_zero_bytes, 4);
            int64_t end = 256;
            const int64_t lines[2] = {cases[i].a_lines, cases[i].b_lines}, inner[2] = {cases[i].a_inner, cases[i].b_inner};
            const bool staged[2] = {cases[i].a_staged, cases[i].b_staged};
            for (int t = 0; t < 2; t++) {
                assert_true(dnnjit__tma_operand_valid(&k.tma[t], &k, NULL, 0));
                if (!staged[t]) {
                    assert_int_not_equal(k.tma[t].slot, k.scratch_slot);
                    assert_int_equal(k.tma[t].offset, 0);
                    continue;
                }
                assert_int_equal(k.tma[t].slot, k.scratch_slot);
                assert_int_equal(k.tma[t].offset, end);
                assert_int_equal(k.tma[t].strides[0], pitch_of(inner[t], cases[i].esize));
                end = (end + lines[t] * pitch_of(inner[t], cases[i].esize) + 255) / 256 * 256;
            }
            assert_int_equal(k.scratch_bytes, end);
            /* The batch axis of a staged A: entries one after another in the copy. */
            if (i == 2) {
                assert_int_equal(k.tma[0].rank, 3);
                assert_int_equal(k.tma[0].strides[1], 100 * pitch_of(40, 2));
            }
            assert_non_null(strstr(k.source, "constexpr bool DJ_STAGING = true;"));
            /* One plan of each epilogue variant compiles. */
            if (compiled < 2 && (strstr(name, "_staged") != NULL) == (compiled == 1)) {
                compile(&k, NULL, NULL);
                compiled++;
            }
            dnnjit__kernel_free(&k);
        }
        /* The direct and staged variants' 18 knobs each, less 128x256 with five stages
         * (fp8: less every 128x256 one); and those of the TMA-store variant, which has no
         * 128x256 with five stages either. */
        assert_int_equal(supported - stored, cases[i].esize == 1 ? 2 * 12 : 2 * 18 - 2 * 2);
        assert_int_equal(stored, cases[i].stored);
        assert_int_equal(compiled, 2);
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
}

/* Whether mode A's first plan for shape s on handle h (bf16) has `suffix` in its name. */
static bool mode_a_first_has(dnnjit_handle_t h, shape_t s, const char *suffix)
{
    dnnjit_graph_t g = gemm_graph(h, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT, s);
    TU_OK(dnnjit_graph_create_execution_plans(g, (dnnjit_heur_mode_t[]){DNNJIT_HEUR_MODE_A}, 1));
    char *first = NULL;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &first));
    printf("mode A's first plan, %lldx%lldx%lld: %s\n", (long long)s.m, (long long)s.n, (long long)s.k, first);
    bool has = strstr(first, suffix) != NULL;
    dnnjit_free(first);
    dnnjit_graph_destroy(g);
    return has;
}

/* A [3, 100, 130] half with rows 133 elements apart and batch entries `batch_stride` apart,
 * times B [1, 130, n] (N-major, read in place where n is a multiple of 8). */
static dnnjit_graph_t batched_class_graph(int64_t batch_stride, int64_t n)
{
    dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_HALF);
    dnnjit_tensor_t a = tu_tensor(g, "A", 3, TU_DIMS(3, 100, 130), TU_DIMS(batch_stride, 133, 1), 0);
    dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(1, 130, n), NULL, 0), c;
    TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
    TU_OK(dnnjit_tensor_set_output(g, c, true));
    TU_OK(dnnjit_graph_validate(g));
    return g;
}

/* A family of knobs reading A by row class, the knobs [first, end), and what each of its
 * kernels holds: the source's define, and class maps of this swizzle and box. Clustered knobs
 * are refused with `cluster_refusal` when not NULL, else offered where B is not copied. With
 * `stores`, the family has TMA-store knobs (_tmastore), which store C by row class. */
typedef struct class_family {
    const char *suffix, *define, *cluster_refusal;
    int first, end;
    int swizzle, box0, box1;
    bool stores;
} class_family_t;

typedef struct class_case {
    dnnjit_graph_t g;
    int64_t m, k, lda;
    bool b_copied;
    const char *refusal;       /* why every knob of the family is refused, or NULL */
    const char *store_refusal; /* why the family's TMA-store knobs are refused, or NULL */
} class_case_t;

/* Each case's verdict on every knob of the family, and (where offered) its kernel: nine
 * tensor maps, A's eight class maps (class c's from the 16-byte boundary at or before row c,
 * K + shift(c) elements wide, every eighth row) with B's second, cooperative where B is
 * copied; a TMA-store knob's eight more, the output's class maps (class c's from the first
 * column of row c on a 16-byte boundary to its last whole 16-byte piece, every eighth row,
 * in the usual swizzled boxes of 64 rows by 64 columns); one plan of each epilogue variant
 * compiles. Destroys the cases' graphs. */
static void check_class_knobs(const class_family_t *f, const class_case_t *cases, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const class_case_t *cs = &cases[i];
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(cs->g, &p));
        const dnnjit__tensor_t *out = dnnjit__tensor(cs->g, p.groups[0].outputs[0]);
        int64_t n = out->dim[out->ndim - 1], ldc = out->stride[out->ndim - 2];
        int supported = 0, clustered = 0, compiled = 0;
        for (int knob = f->first; knob < f->end; knob++) {
            verdict_t v = verdict_of(cs->g, &p, knob);
            assert_non_null(strstr(v.name, f->suffix));
            bool stores = strstr(v.name, "_tmastore") != NULL;
            assert_true(f->stores || !stores);
            const char *refusal = cs->refusal                   ? cs->refusal
                                  : strstr(v.name, "_mc2")      ? f->cluster_refusal
                                  : stores                      ? cs->store_refusal
                                                                : NULL;
            if (refusal) {
                assert_true(v.refused);
                if (!strstr(v.why, refusal))
                    fail_msg("%s: %s", v.name, v.why);
                continue;
            }
            if (v.refused) {
                /* B copied (no clusters), split-K where the tiles fill the SMs, and shared
                 * memory. */
                if (!strstr(v.why, "not combined with clusters") && !strstr(v.why, "split-K") &&
                    !strstr(v.why, "shared memory"))
                    fail_msg("%s: %s", v.name, v.why);
                continue;
            }
            supported++;
            clustered += strstr(v.name, "_mc2") != NULL;
            dnnjit__kernel_t k;
            TU_OK(engine->generate(cs->g, &p, &p.groups[0], knob, &k));
            assert_int_equal(k.cooperative, cs->b_copied);
            assert_int_equal(k.tma_count, stores ? 17 : 9);
            assert_non_null(strstr(k.source, f->define));
            assert_int_equal(strstr(k.source, "#define DJ_C_BY_CLASS 1") != NULL, stores);
            for (int c = 0; stores && c < 8; c++) {
                const dnnjit__tma_operand_t *t = &k.tma[9 + c];
                int64_t start = c * ldc * 2, ahead = (16 - start % 16) % 16;
                assert_true(dnnjit__tma_operand_valid(t, &k, NULL, 0));
                assert_int_equal(t->slot, dnnjit__slot_of(k.tensors, k.tensor_count, p.groups[0].outputs[0]));
                assert_int_equal(t->offset, start + ahead);
                assert_int_equal(t->swizzle, DNNJIT__TMA_SWIZZLE_128B);
                assert_int_equal(t->dims[0], (n - ahead / 2) / 8 * 8);
                assert_int_equal(t->dims[1], (cs->m - c + 7) / 8);
                assert_int_equal(t->strides[0], 8 * ldc * 2);
                assert_int_equal(t->box[0], 64);
                assert_int_equal(t->box[1], 64);
            }
            for (int c = 0; c < 8; c++) {
                const dnnjit__tma_operand_t *t = &k.tma[c ? c + 1 : 0];
                int64_t start = c * cs->lda * 2;
                assert_true(dnnjit__tma_operand_valid(t, &k, NULL, 0));
                assert_int_equal(t->slot, 0);
                assert_int_equal(t->offset, start / 16 * 16);
                assert_int_equal(t->swizzle, f->swizzle);
                assert_int_equal(t->dims[0], cs->k + start % 16 / 2);
                assert_int_equal(t->dims[1], (cs->m - c + 7) / 8);
                assert_int_equal(t->strides[0], 8 * cs->lda * 2);
                assert_int_equal(t->box[0], f->box0);
                assert_int_equal(t->box[1], f->box1);
            }
            assert_int_equal(k.tma[1].slot, cs->b_copied ? k.scratch_slot : 1);
            if (!cs->b_copied) {
                assert_int_equal(k.tma[0].rank, 3);
                assert_int_equal(k.tma[0].strides[1], 13304 * 2);
            }
            /* The first knob of each epilogue: direct, staged, TMA-store. */
            if ((stores ? 2 : strstr(v.name, "_staged") ? 1 : 0) == compiled) {
                compile(&k, NULL, NULL);
                compiled++;
            }
            dnnjit__kernel_free(&k);
        }
        if (!cs->refusal) {
            assert_int_equal(compiled, f->stores && !cs->store_refusal ? 3 : 2);
            assert_true(supported >= 16);
            assert_int_equal(clustered > 0, !cs->b_copied && !f->cluster_refusal);
        }
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(cs->g);
    }
}

/* The cases both families of knobs reading A by row class take alike, into `out`: taken,
 * 4097x4095x4099 bf16 (B N-major and copied) and A [3, 100, 130] half with rows 133 elements
 * apart and batch entries 13304 apart (B read in place); refused, with why, a batch stride of
 * 13303 elements, A's rows 40 elements apart (which TMA reads) and fp8 A, whose refusal names
 * the family's plans `plans` (written into fp8_why). */
enum { SHARED_CLASS_CASES = 5 };
static void shared_class_cases(const char *plans, char *fp8_why, size_t size, class_case_t out[SHARED_CLASS_CASES])
{
    snprintf(fp8_why, size, "the %s plans take 16-bit A, not FP8_E4M3", plans);
    const class_case_t cases[SHARED_CLASS_CASES] = {
        {gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                    (shape_t){4097, 4095, 4099, 1, false, false, false, 0}),
         4097, 4099, 4099, true, NULL, NULL},
        {batched_class_graph(13304, 64), 100, 130, 133, false, NULL, NULL},
        {batched_class_graph(13303, 64), 100, 130, 133, false,
         "A's batch stride of 13303 elements is not a positive multiple of 8", NULL},
        {gemm_graph(NULL, DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT, (shape_t){100, 64, 40, 1, false, false, false, 0}),
         100, 40, 40, false, "TMA reads A's rows (100 of them, 40 elements apart) in place", NULL},
        {fp8_graph(NULL, DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E5M2, 200, 136, 40, DNNJIT_DATA_TYPE_FLOAT), 200,
         40, 40, false, fp8_why, NULL},
    };
    memcpy(out, cases, sizeof cases);
}

/* A 16-bit K-major A whose rows TMA cannot address, read in place by row class (the _areg
 * knobs): 4097x4095x4099 bf16 (A's rows 8198 bytes apart: eight shifts; B still copied, so
 * cooperative and without clusters) and A [3, 100, 130] half with rows 133 elements apart and
 * batch entries 13304 apart (B read in place: clusters offered). The class maps' boxes are
 * unswizzled, 16 rows by 72 elements. Refused, with why: A's rows 40 elements apart and A of
 * one row of 41 (TMA reads them), a batch stride of 13303 elements, fp8 A. With B K-major
 * (which the _ashift knobs do not take) mode A ranks them first where the copy of A they save
 * is the larger cost (8192x256x8191), and after the knobs they repeat where it is not
 * (4097x4095x4099). */
static void areg_operands(void **state)
{
    (void)state;
    dnnjit_handle_t h = NULL;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    assert_true(mode_a_first_has(h, (shape_t){8192, 256, 8191, 1, false, true, false, 0}, "_areg"));
    assert_false(mode_a_first_has(h, (shape_t){4097, 4095, 4099, 1, false, true, false, 0}, "_areg"));
    dnnjit_handle_destroy(h);
    char fp8_why[80];
    class_case_t cases[SHARED_CLASS_CASES + 1];
    shared_class_cases("_areg", fp8_why, sizeof fp8_why, cases);
    cases[SHARED_CLASS_CASES] = (class_case_t){
        gemm_graph(NULL, DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT, (shape_t){1, 64, 41, 1, false, false, false, 0}),
        1, 41, 41, false, "TMA reads A's rows (1 of them, 1 elements apart) in place", NULL};
    const class_family_t areg = {"_areg", "#define DJ_A_BY_CLASS 1", NULL, family_start("_areg"),
                                 family_start("_ashift"), DNNJIT__TMA_SWIZZLE_NONE, 72, 16, false};
    assert_int_equal(areg.first, 2 * exact_knobs());
    check_class_knobs(&areg, cases, sizeof cases / sizeof cases[0]);
}

/* The same A with B N-major, in tiles of one row class (the _ashift knobs, after the _areg
 * ones): 4097x4095x4099 bf16 (B copied, so cooperative) and A [3, 100, 130] half with rows
 * 133 elements apart and batch entries 13304 apart (B read in place). The class maps' boxes
 * are A's usual swizzled ones of 64 elements by 128 rows; every clustered knob refused (two
 * tiles stacked along M may be of two classes). The family's TMA-store knobs store C by row
 * class (on 4097x4095x4099 from columns 0 to 7 of the rows), and are refused alone where C's
 * batch stride (6500 elements, C [3, 100, 65]) is not a multiple of 8. Refused, with why: B
 * K-major, whose K rows TMA cannot shift, a batch stride of 13303 elements, A's rows 40
 * elements apart, fp8 A. Mode
 * A ranks them first on 4097x4095x4099 and 8192x256x8191, and after the copy of A on
 * 1031x1025x1027, whose classes of 129 and 128 rows take 15 tile rows against 9. */
static void ashift_operands(void **state)
{
    (void)state;
    dnnjit_handle_t h = NULL;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    assert_true(mode_a_first_has(h, (shape_t){4097, 4095, 4099, 1, false, false, false, 0}, "_ashift"));
    assert_true(mode_a_first_has(h, (shape_t){8192, 256, 8191, 1, false, false, false, 0}, "_ashift"));
    assert_false(mode_a_first_has(h, (shape_t){1031, 1025, 1027, 1, false, false, false, 0}, "_ashift"));
    dnnjit_handle_destroy(h);
    char fp8_why[80];
    class_case_t cases[SHARED_CLASS_CASES + 2];
    shared_class_cases("_ashift", fp8_why, sizeof fp8_why, cases);
    cases[SHARED_CLASS_CASES] = (class_case_t){
        gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                   (shape_t){4097, 4095, 4099, 1, false, true, false, 0}),
        4097, 4099, 4099, true,
        "the _ashift plans shift B's K rows, which TMA does only for a B whose N axis is contiguous", NULL};
    /* C [3, 100, 65]: batch entries 6500 elements apart, which no class map of C's rows
     * takes (B's rows of 65 copied). */
    cases[SHARED_CLASS_CASES + 1] = (class_case_t){
        batched_class_graph(13304, 65), 100, 130, 133, true, NULL,
        "has a batch stride of 6500 elements, not a positive multiple of 8, which TMA stores by row class need"};
    const class_family_t ashift = {"_ashift", "#define DJ_A_SHIFTED 1", "two row classes, whose B tiles differ",
                                   family_start("_ashift"), engine->knob_count, DNNJIT__TMA_SWIZZLE_128B, 64, 128,
                                   true};
    /* The family repeats the base knobs, those before the TMA-store ones, as _areg does,
     * then the TMA-store ones. */
    assert_int_equal(ashift.first - family_start("_areg"), family_start("_tmastore"));
    assert_int_equal(engine->knob_count - ashift.first, exact_knobs());
    check_class_knobs(&ashift, cases, sizeof cases / sizeof cases[0]);
}

/* fp8 and TF32 operands that are M- or N-major, which wgmma cannot read: the kernel copies
 * them transposed into its scratch (K-major lines of K elements, 128-byte pitch), the tensor
 * map reads the copy K-major, the clusters are left out as for any staged operand, and one
 * plan of each epilogue variant compiles. Both operands transposed (A M-major, B N-major),
 * one with a batch broadcast (B [1, K, N] against A [3, M, K]). */
static void transposed_operands(void **state)
{
    (void)state;
    struct {
        dnnjit_data_type_t io;
        shape_t shape;
        bool a_transposed, b_transposed;
        int64_t esize;
    } cases[] = {
        {DNNJIT_DATA_TYPE_FLOAT, {200, 136, 72, 3, false, false, true, 0}, false, true, 4},
        {DNNJIT_DATA_TYPE_FLOAT, {200, 136, 72, 1, true, false, false, 0}, true, true, 4},
        {DNNJIT_DATA_TYPE_FP8_E4M3, {200, 136, 256, 1, true, true, false, 0}, true, false, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = gemm_graph(NULL, cases[i].io, DNNJIT_DATA_TYPE_FLOAT, cases[i].shape);
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(g, &p));
        int supported = 0, compiled = 0;
        for (int knob = 0; knob < engine->knob_count; knob++) {
            verdict_t v = verdict_of(g, &p, knob);
            if (v.refused) {
                /* (The knobs of the other input types refuse the types first.) */
                bool own_family = (cases[i].esize == 4) == (strstr(v.name, "_tf32") != NULL) && !by_class(v.name);
                if (own_family && strstr(v.name, "_mc2") && !strstr(v.why, "not combined with clusters") &&
                    !strstr(v.why, "the TMA-store epilogue"))
                    fail_msg("%s: %s", v.name, v.why);
                continue;
            }
            supported++;
            dnnjit__kernel_t k;
            TU_OK(engine->generate(g, &p, &p.groups[0], knob, &k));
            assert_true(k.cooperative);
            const bool transposed[2] = {cases[i].a_transposed, cases[i].b_transposed};
            const int64_t rows[2] = {cases[i].shape.m, cases[i].shape.n};
            char expect[80];
            for (int t = 0; t < 2; t++) {
                snprintf(expect, sizeof expect, "struct DjStage%c {\n    static constexpr bool STAGED = %s, TRANSPOSED = %s;",
                         t ? 'B' : 'A', transposed[t] ? "true" : "false", transposed[t] ? "true" : "false");
                assert_non_null(strstr(k.source, expect));
                if (!transposed[t])
                    continue;
                assert_int_equal(k.tma[t].slot, k.scratch_slot);
                assert_int_equal(k.tma[t].dims[0], cases[i].shape.k); /* K, contiguous in the copy */
                assert_int_equal(k.tma[t].dims[1], rows[t]);
                assert_int_equal(k.tma[t].strides[0], pitch_of(cases[i].shape.k, cases[i].esize));
                assert_true(dnnjit__tma_operand_valid(&k.tma[t], &k, NULL, 0));
            }
            assert_non_null(strstr(k.source, "constexpr bool DJ_A_KMAJOR = true, DJ_B_KMAJOR = true;"));
            if (compiled < 2 && (strstr(v.name, "_staged") != NULL) == (compiled == 1)) {
                compile(&k, NULL, NULL);
                compiled++;
            }
            dnnjit__kernel_free(&k);
        }
        printf("%s, A %s, B %s: %d knobs\n", dnnjit_data_type_name(cases[i].io),
               cases[i].a_transposed ? "transposed" : "K-major", cases[i].b_transposed ? "transposed" : "K-major",
               supported);
        assert_true(supported > 0);
        assert_int_equal(compiled, 2);
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
}

/* Split-K (the staged epilogue with K split 2, 4 or 8 ways): offered only where the tiles
 * leave SMs idle and each split walks 4 or more K tiles; a plain grid of one CTA per work
 * item (split) up to the SMs; the scratch holds the barrier word, one arrival counter per
 * tile (zeroed) and every split's partial tiles, then any staged copy; one plan of each
 * split count compiles. Both a linear layer of 128 tokens and an odd K (A staged). */
static void split_knobs(void **state)
{
    (void)state;
    struct {
        shape_t shape;
        int64_t a_lines; /* A's staged lines (0: not staged) */
    } cases[] = {
        {{128, 4096, 4096, 1, false, true, false, 0}, 0},
        {{100, 200, 4099, 1, false, false, false, 0}, 100},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT, cases[i].shape);
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(g, &p));
        int supported = 0, compiled = 0;
        for (int knob = 0; knob < exact_knobs(); knob++) {
            verdict_t v = verdict_of(g, &p, knob);
            const char *name = v.name, *split = strstr(name, "_splitk");
            if (!split)
                continue;
            int splits = atoi(split + 7);
            if (v.refused) {
                assert_non_null(strstr(name, "128x256x64_s5"));
                assert_non_null(strstr(v.why, "shared memory"));
                continue;
            }
            supported++;
            int64_t bn = atoi(name + 4), m = cases[i].shape.m, n = cases[i].shape.n;
            int64_t tiles = (m + 127) / 128 * ((n + bn - 1) / bn);
            dnnjit__kernel_t k;
            TU_OK(engine->generate(g, &p, &p.groups[0], knob, &k));
            char expect[64];
            snprintf(expect, sizeof expect, "constexpr int DJ_SPLITS = %d;", splits);
            assert_non_null(strstr(k.source, expect));
            int64_t partials = 256 + (tiles * 4 + 255) / 256 * 256;
            int64_t copies = partials + splits * tiles * 128 * bn * 4;
            assert_int_equal(k.scratch_slot, k.tensor_count);
            assert_int_equal(k.scratch_zero_bytes, partials);
            if (cases[i].a_lines) {
                assert_true(k.cooperative);
                assert_int_equal(k.grid[0], 132);
                assert_int_equal(k.tma[0].slot, k.scratch_slot);
                assert_int_equal(k.tma[0].offset, copies);
                assert_int_equal(k.scratch_bytes,
                                 copies + (cases[i].a_lines * pitch_of(cases[i].shape.k, 2) + 255) / 256 * 256);
            } else {
                assert_false(k.cooperative);
                assert_int_equal(k.grid[0], tiles * splits < 132 ? tiles * splits : 132);
                assert_int_equal(k.scratch_bytes, copies);
            }
            if (compiled < 3 && splits == 2 << compiled) {
                compile(&k, NULL, NULL);
                compiled++;
            }
            dnnjit__kernel_free(&k);
        }
        /* Three split counts of the staged variant's 18 knobs, less 128x256 with five stages. */
        assert_int_equal(supported, 3 * (18 - 2));
        assert_int_equal(compiled, 3);
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
    /* 4096^3: 512 tiles of 128x256 fill the SMs alone. */
    dnnjit_graph_t g = gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){4096, 4096, 4096, 1, false, true, false, 0});
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    for (int knob = 0; knob < exact_knobs(); knob++) {
        verdict_t v = verdict_of(g, &p, knob);
        if (strstr(v.name, "_splitk") && !strstr(v.name, "128x256x64_s5")) {
            assert_true(v.refused);
            assert_non_null(strstr(v.why, "already fill the 132 SMs"));
        }
    }
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

static void refusals(void **state)
{
    (void)state;
    struct {
        dnnjit_data_type_t io, compute;
        shape_t shape;
        const char *arch;
        const char *fragment;
    } cases[] = {
        /* Rows 2^40 bytes apart: beyond the strides a tensor map holds. */
        {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT, {2, 64, 64, 1, false, false, false, (int64_t)1 << 39},
         "sm_90a", "TMA cannot load A: a stride is not a multiple of 16 bytes below 2^40"},
        /* FLOAT inputs only in the TF32 knobs (tf32_operands). */
        {DNNJIT_DATA_TYPE_FLOAT, DNNJIT_DATA_TYPE_FLOAT, {64, 64, 64, 1, false, true, false, 0}, "sm_90a",
         "FLOAT inputs multiply as TF32, in the _tf32 plans"},
        {DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_HALF, {64, 64, 64, 1, false, false, false, 0}, "sm_90a",
         "accumulates in FLOAT"},
        {DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT, {64, 64, 64, 1, false, false, false, 0}, "sm_80",
         "need sm_90a, not sm_80"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dnnjit_graph_t g = gemm_graph(NULL, cases[i].io, cases[i].compute, cases[i].shape);
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(g, &p));
        for (int knob = 0; knob < exact_knobs(); knob++) {
            char why[200] = "";
            assert_false(engine->supports(g, &p.groups[0], knob, cases[i].arch, why, sizeof why));
            if (!strstr(why, cases[i].fragment))
                fail_msg("case %zu: \"%s\" lacks \"%s\"", i, why, cases[i].fragment);
        }
        /* Generating anyway fails with the reason. */
        dnnjit__kernel_t k;
        if (strcmp(cases[i].arch, "sm_90a") == 0) {
            TU_FAILS(engine->generate(g, &p, &p.groups[0], 0, &k), DNNJIT_STATUS_NOT_SUPPORTED, cases[i].fragment);
            dnnjit__kernel_free(&k);
        }
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
    /* A = relu(X) computed in a prologue is not in memory for TMA to load. */
    {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_BFLOAT16);
        dnnjit_tensor_t x = tu_tensor(g, "X", 3, TU_DIMS(1, 256, 256), NULL, 0), a, c;
        dnnjit_tensor_t b = tu_tensor(g, "B", 3, TU_DIMS(1, 256, 256), NULL, 0);
        TU_OK(dnnjit_graph_pointwise(g, &(dnnjit_pointwise_attr_t){.name = "relu", .mode = DNNJIT_POINTWISE_RELU_FWD},
                                     x, 0, 0, &a));
        TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
        TU_OK(dnnjit_tensor_set_output(g, c, true));
        TU_OK(dnnjit_graph_validate(g));
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(g, &p));
        assert_int_equal(p.group_count, 1);
        char why[200] = "";
        assert_false(engine->supports(g, &p.groups[0], 0, "sm_90a", why, sizeof why));
        assert_non_null(strstr(why, "operand A is computed by a fused prologue"));
        dnnjit__kernel_t k;
        TU_FAILS(engine->generate(g, &p, &p.groups[0], 0, &k), DNNJIT_STATUS_NOT_SUPPORTED, "fused prologue");
        dnnjit__kernel_free(&k);
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
    /* An output of rows of 100 elements 104 apart (a view of narrower columns): TMA would
     * store each row's last 16-byte piece whole, over the padding after it, so every
     * TMA-store knob is refused, and only they are. */
    {
        dnnjit_graph_t g = tu_graph(DNNJIT_DATA_TYPE_BFLOAT16);
        dnnjit_tensor_t a = tu_tensor(g, "A", 2, TU_DIMS(256, 64), NULL, 0);
        dnnjit_tensor_t b = tu_tensor(g, "B", 2, TU_DIMS(64, 100), TU_DIMS(104, 1), 0), c;
        TU_OK(dnnjit_graph_matmul(g, a, b, &(dnnjit_matmul_attr_t){.name = "mm"}, &c));
        TU_OK(dnnjit_tensor_set_stride(g, c, 2, TU_DIMS(104, 1)));
        TU_OK(dnnjit_tensor_set_output(g, c, true));
        TU_OK(dnnjit_graph_validate(g));
        dnnjit__partition_t p;
        TU_OK(dnnjit__partition(g, &p));
        int stores = 0;
        for (int knob = 0; knob < exact_knobs(); knob++) {
            verdict_t v = verdict_of(g, &p, knob);
            if (!strstr(v.name, "_tmastore"))
                continue;
            assert_true(v.refused);
            assert_non_null(strstr(v.why, "has rows of 100 elements, which end inside a 16-byte piece"));
            stores++;
        }
        assert_int_equal(stores, 36);
        dnnjit__partition_free(&p);
        dnnjit_graph_destroy(g);
    }
    /* 128x256 tiles with five stages need more than 227 KiB, in every variant (the staged
     * and clustered ones, and with TMA stores alone and clustered, in both tile orders). */
    dnnjit_graph_t g = gemm_graph(NULL, DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){64, 64, 64, 1, false, false, false, 0});
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    int refused = 0;
    for (int knob = 0; knob < exact_knobs(); knob++) {
        verdict_t v = verdict_of(g, &p, knob);
        if (v.refused) {
            /* One K tile: nothing to split. */
            if (strstr(v.name, "_splitk")) {
                assert_non_null(strstr(v.why, "split-K"));
                continue;
            }
            assert_non_null(strstr(v.name, "128x256x64_s5"));
            assert_non_null(strstr(v.why, "shared memory"));
            refused++;
        }
    }
    assert_int_equal(refused, 10);
    dnnjit__partition_free(&p);
    dnnjit_graph_destroy(g);
}

/* The boxes a turn of the TMA-store epilogue's loop (DJ_STORE_UNROLL) of every knob the
 * engine takes for the graph's group: `tma_store_unroll` on the _tmastore knobs, 1 on the
 * others; returns how many TMA-store knobs there were. */
static int check_store_unroll(dnnjit_graph_t g, int tma_store_unroll)
{
    dnnjit__partition_t p;
    TU_OK(dnnjit__partition(g, &p));
    assert_int_equal(p.group_count, 1);
    int stores = 0;
    for (int knob = 0; knob < engine->knob_count; knob++) {
        verdict_t v = verdict_of(g, &p, knob);
        if (v.refused)
            continue;
        dnnjit__kernel_t k;
        TU_OK(engine->generate(g, &p, &p.groups[0], knob, &k));
        bool tma_store = strstr(v.name, "_tmastore") != NULL;
        char define[64];
        snprintf(define, sizeof define, "DJ_STORE_UNROLL = %d;", tma_store ? tma_store_unroll : 1);
        assert_non_null(strstr(k.source, define));
        stores += tma_store;
        dnnjit__kernel_free(&k);
    }
    dnnjit__partition_free(&p);
    return stores;
}

/* The TMA-store epilogue computes two boxes a turn where the fused expressions read a tensor
 * of more than one element (a bias), so that its loads overlap the box before's work, and
 * one otherwise: with nothing to read, or only a one-element scale. */
static void store_unroll(void **state)
{
    (void)state;
    dnnjit_graph_t g = gemm_graph(NULL, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){256, 256, 256, 2, false, false, false, 0});
    assert_true(check_store_unroll(g, 2) > 0);
    dnnjit_graph_destroy(g);
    g = batched_class_graph(100 * 133, 256);
    assert_true(check_store_unroll(g, 1) > 0);
    dnnjit_graph_destroy(g);
    g = fp8_graph(NULL, DNNJIT_DATA_TYPE_FP8_E4M3, DNNJIT_DATA_TYPE_FP8_E4M3, 256, 256, 512, DNNJIT_DATA_TYPE_FLOAT);
    assert_true(check_store_unroll(g, 1) > 0);
    dnnjit_graph_destroy(g);
}

/* On sm_90a, mode A puts the engine first for big problems and the sm_80 engine first for
 * tiny ones (seed 000's shape), with this engine's plans next; on sm_80 it has none. */
static void heuristics(void **state)
{
    (void)state;
    dnnjit_handle_t h90 = NULL, h80 = NULL;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h90));
    TU_OK(dnnjit_handle_create_for_arch("sm_80", &h80));
    dnnjit_graph_t big = gemm_graph(h90, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                    (shape_t){4096, 4096, 4096, 1, false, false, false, 0});
    char *a = tu_first_plan(big, DNNJIT_HEUR_MODE_A);
    /* 128x256 tiles: 512 of them, in four rounds of 132 CTAs like 1024 128x128 ones; four
     * stages, which measured fastest; the epilogue through TMA stores in clusters of two
     * tiles sharing B's, fastest of the variants. */
    assert_string_equal(a, "gemm_sm90_128x256x64_s4_tmastore_mc2");
    char *b = tu_first_plan(big, DNNJIT_HEUR_MODE_B);
    assert_int_equal(strncmp(b, "gemm_sm90_", 10), 0);
    dnnjit_free(a);
    dnnjit_free(b);
    dnnjit_graph_destroy(big);

    /* 8x4096^3: 8192 128x128 tiles fill their 63 rounds better (98.5%) than 4096 128x256
     * ones their 32 (97%), but the wider tile is faster per FLOP by more than that: it stays
     * first; four stages again (1910 us on the H200 against 1981 with five). */
    dnnjit_graph_t batched = gemm_graph(h90, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                        (shape_t){4096, 4096, 4096, 8, false, false, false, 0});
    a = tu_first_plan(batched, DNNJIT_HEUR_MODE_A);
    assert_string_equal(a, "gemm_sm90_128x256x64_s4_tmastore_mc2");
    dnnjit_free(a);
    dnnjit_graph_destroy(batched);

    dnnjit_graph_t tiny = gemm_graph(h90, DNNJIT_DATA_TYPE_HALF, DNNJIT_DATA_TYPE_FLOAT,
                                     (shape_t){64, 64, 128, 4, false, false, false, 0});
    TU_OK(dnnjit_graph_create_execution_plans(tiny, (dnnjit_heur_mode_t[]){DNNJIT_HEUR_MODE_A}, 1));
    int64_t count = 0;
    TU_OK(dnnjit_graph_get_plan_count(tiny, &count));
    int64_t first_sm90 = -1, last_sm80 = -1;
    for (int64_t i = 0; i < count; i++) {
        char *name = NULL;
        TU_OK(dnnjit_graph_get_plan_name(tiny, i, &name));
        if (strncmp(name, "gemm_sm90_", 10) == 0 && first_sm90 < 0)
            first_sm90 = i;
        else if (strncmp(name, "gemm_", 5) == 0 && strncmp(name, "gemm_sm90_", 10) != 0)
            last_sm80 = i;
        if (i == 0)
            assert_int_equal(strncmp(name, "gemm_sm90_", 10) != 0 && strncmp(name, "gemm_", 5) == 0, 1);
        dnnjit_free(name);
    }
    assert_true(first_sm90 > last_sm80);
    dnnjit_graph_destroy(tiny);

    dnnjit_graph_t on80 = gemm_graph(h80, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                     (shape_t){4096, 4096, 4096, 1, false, false, false, 0});
    a = tu_first_plan(on80, DNNJIT_HEUR_MODE_A);
    assert_int_equal(strncmp(a, "gemm_sm90", 9) != 0 && strncmp(a, "gemm_", 5) == 0, 1);
    dnnjit_free(a);
    dnnjit_graph_destroy(on80);
    dnnjit_handle_destroy(h90);
    dnnjit_handle_destroy(h80);
}

/* A plan with tensor maps, built without a device, serialized and read back: the maps
 * survive and are checked against what the engine generates; a damaged map is refused. */
static void serialize_round_trip(void **state)
{
    (void)state;
    dnnjit_handle_t h = NULL;
    TU_OK(dnnjit_handle_create_for_arch("sm_90a", &h));
    dnnjit_graph_t g = gemm_graph(h, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                  (shape_t){2048, 1024, 256, 2, false, false, false, 0});
    TU_OK(dnnjit_graph_build(g, (dnnjit_heur_mode_t[]){DNNJIT_HEUR_MODE_A}, 1));
    char *name = NULL;
    TU_OK(dnnjit_graph_get_plan_name(g, 0, &name));
    assert_int_equal(strncmp(name, "gemm_sm90_", 10), 0);
    void *blob = NULL;
    size_t size = 0;
    TU_OK(dnnjit_graph_serialize(g, &blob, &size));
    dnnjit_graph_t back = NULL;
    TU_OK(dnnjit_graph_deserialize(h, blob, size, &back));
    char *back_name = NULL;
    TU_OK(dnnjit_graph_get_plan_name(back, 0, &back_name));
    assert_string_equal(name, back_name);
    void *again = NULL;
    size_t again_size = 0;
    TU_OK(dnnjit_graph_serialize(back, &again, &again_size));
    assert_int_equal(again_size, size);

    /* The first tensor map's box (after its slot, type, rank, swizzle, dims and strides)
     * sits before the source; find A's box {64, 128} of u32s and widen it. */
    unsigned char *p = blob;
    unsigned char box[8] = {64, 0, 0, 0, 128, 0, 0, 0};
    size_t at = 0;
    for (size_t i = 32; i + 8 <= size && !at; i++)
        if (memcmp(p + i, box, 8) == 0)
            at = i;
    assert_true(at > 0);
    p[at] = 72; /* 144 bytes: past the swizzle span */
    /* Recompute the checksum so that the map's own check is what refuses it. */
    dnnjit__put_u64(p + 24, XXH3_64bits(p + 32, size - 32));
    dnnjit_graph_t damaged = NULL;
    TU_FAILS(dnnjit_graph_deserialize(h, blob, size, &damaged), DNNJIT_STATUS_PARSE_ERROR,
             "tensor map 0 is impossible: the box's inner extent exceeds the 128-byte swizzle span");
    /* A box still valid for TMA but not what the engine makes is refused by the comparison. */
    p[at] = 64;
    p[at + 4] = 64;
    dnnjit__put_u64(p + 24, XXH3_64bits(p + 32, size - 32));
    TU_FAILS(dnnjit_graph_deserialize(h, blob, size, &damaged), DNNJIT_STATUS_PARSE_ERROR,
             "its tensor map list is not what engine \"gemm_sm90\" generates");

    /* A plan that stages A (rows of 259 elements): its cooperative launch, scratch and map
     * over the scratch come back (deserialize compares them with what the engine generates),
     * and so does the workspace they need. */
    dnnjit_graph_t staged = gemm_graph(h, DNNJIT_DATA_TYPE_BFLOAT16, DNNJIT_DATA_TYPE_FLOAT,
                                       (shape_t){2048, 1024, 256, 2, false, false, false, 259});
    TU_OK(dnnjit_graph_build(staged, (dnnjit_heur_mode_t[]){DNNJIT_HEUR_MODE_A}, 1));
    char *staged_name = NULL;
    TU_OK(dnnjit_graph_get_plan_name(staged, 0, &staged_name));
    assert_int_equal(strncmp(staged_name, "gemm_sm90_", 10), 0);
    int64_t workspace = 0, back_workspace = 0;
    TU_OK(dnnjit_graph_get_workspace_size(staged, &workspace));
    assert_true(workspace >= 256 + 2 * 2048 * 512); /* the counter, then 4096 rows of 256 elements */
    void *staged_blob = NULL, *staged_again = NULL;
    size_t staged_size = 0, staged_again_size = 0;
    TU_OK(dnnjit_graph_serialize(staged, &staged_blob, &staged_size));
    dnnjit_graph_t staged_back = NULL;
    TU_OK(dnnjit_graph_deserialize(h, staged_blob, staged_size, &staged_back));
    TU_OK(dnnjit_graph_get_workspace_size(staged_back, &back_workspace));
    assert_int_equal(back_workspace, workspace);
    TU_OK(dnnjit_graph_serialize(staged_back, &staged_again, &staged_again_size));
    assert_int_equal(staged_again_size, staged_size);
    dnnjit_free(staged_name);
    dnnjit_free(staged_blob);
    dnnjit_free(staged_again);
    dnnjit_graph_destroy(staged_back);
    dnnjit_graph_destroy(staged);
    dnnjit_free(name);
    dnnjit_free(back_name);
    dnnjit_free(blob);
    dnnjit_free(again);
    dnnjit_graph_destroy(back);
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
        cmocka_unit_test(split_knobs),
        cmocka_unit_test(tensor_maps),
        cmocka_unit_test(cluster_knobs),
        cmocka_unit_test(heuristics),
        cmocka_unit_test(store_unroll),
        cmocka_unit_test(serialize_round_trip),
        cmocka_unit_test(sass_has_hgmma_and_utmaldg),
        cmocka_unit_test(every_knob_compiles),
        cmocka_unit_test(fp8_operands),
        cmocka_unit_test(tf32_operands),
        cmocka_unit_test(staged_operands),
        cmocka_unit_test(areg_operands),
        cmocka_unit_test(ashift_operands),
        cmocka_unit_test(transposed_operands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
