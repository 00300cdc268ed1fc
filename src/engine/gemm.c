/* The tensor-core GEMM engine (sm_80 and later): a matmul with its fused pointwise prologues
 * and epilogue as one mma.sync kernel (src/kernels/gemm_mma.cuh); an operand computed by a
 * prologue is evaluated element by element while its tiles are loaded. fp16 and bf16
 * inputs multiply on the tensor cores directly; fp32 inputs either as three TF32 products
 * (about fp32 accuracy) or, in the plans marked REDUCED_PRECISION, as one. Each operand is
 * read in the stride order it has in memory, so transposes cost nothing; sizes, strides and
 * the batch layout are compiled in. Knobs: CTA and warp tiles with pipeline depth and CTAs per SM,
 * split-K, and the fp32 mode. */
#include "engine/engine.h"

#include "codegen/codegen.h"
#include "codegen/templates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CTA tile (16-bit K extent; fp32 operands take half as many K columns, the same bytes),
 * warp tile, pipeline stages, and the CTAs per SM the kernel's registers must allow
 * (__launch_bounds__; 2 caps a 256-thread CTA at 128 registers per thread). 128x256x64 in
 * four stages fits sm_90's shared memory only (208 KiB). The last two are
 * for tiny problems: small tiles launch more CTAs, and two K tiles of 64 in flight at once
 * cover seed 000's whole K of 128 with one wait. Mode A's rule breaks ties by this order. */
typedef struct tile_shape {
    int bm, bn, bk, wm, wn, stages, min_blocks;
} tile_shape_t;

static const tile_shape_t TILES[] = {
    {128, 256, 32, 64, 64, 4, 1}, {128, 256, 64, 64, 64, 3, 1}, {256, 128, 64, 64, 64, 3, 1},
    {128, 128, 64, 64, 64, 4, 1}, {128, 128, 32, 64, 64, 4, 1}, {64, 128, 32, 32, 64, 4, 1},
    {64, 64, 32, 32, 32, 4, 1},   {128, 256, 64, 64, 64, 4, 1}, {128, 128, 32, 64, 32, 4, 2},
    {64, 64, 64, 32, 32, 3, 1},   {32, 32, 64, 16, 16, 3, 1},
};
static const int SPLITS[] = {1, 2, 4, 8};

enum {
    TILE_COUNT = sizeof TILES / sizeof TILES[0],
    SPLIT_COUNT = sizeof SPLITS / sizeof SPLITS[0],
    /* The streaming multiprocessors of an H200-class device, for the heuristics. */
    SM_COUNT = 132,
    /* Thread-block rows of tiles walked together (L2 locality). */
    GROUP_M = 8,
    /* The batch and split index ride on gridDim.y. */
    MAX_GRID_Y = 65535,
};

/* ptxas at -O2 instead of its default -O3: measured on NVRTC 13 for sm_90a, the main loops
 * come out the same or a few instructions shorter (128x256x32: 152 instead of 157 per K tile
 * on the fast path; 128x256x64: 253 instead of 255) while a 128x256 kernel compiles in about
 * 0.6 of the time. */
#define GEMM_PTXAS_OPTION "--ptxas-options=-O2"

/* Split-K partial sums beyond this are refused: the workspace would dwarf the output. */
#define MAX_SCRATCH_BYTES ((int64_t)256 << 20)

typedef enum kind { KIND_F16, KIND_BF16, KIND_TF32, KIND_F32X3 } kind_t;

typedef struct knob {
    tile_shape_t tile;
    int split;
    bool tf32; /* fp32 inputs: one TF32 product instead of three */
} knob_t;

static knob_t decode(int knob)
{
    return (knob_t){TILES[knob / 2 / SPLIT_COUNT], SPLITS[knob / 2 % SPLIT_COUNT], knob % 2 == 1};
}

/* One operand seen as a [rows, K] matrix (A: rows = M; B: rows = N), batched over C's
 * leading axes. */
typedef struct operand {
    const dnnjit__tensor_t *t;
    int64_t rows, srows, sk; /* extent along rows, and the strides along rows and K */
    bool kmajor;             /* K is the axis kept innermost in shared memory */
    bool vec;                /* 16-byte copies are legal for any 16-byte aligned base */
    int64_t batch_dim[DNNJIT_MAX_DIMS], batch_stride[DNNJIT_MAX_DIMS];
    int batch_axes;
} operand_t;

typedef struct problem {
    const dnnjit__node_t *mm;
    const dnnjit__tensor_t *c;
    int64_t m, n, k, batch;
    kind_t kind;
    operand_t a, b;
} problem_t;

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* Describes A (is_b false: axes [M, K]) or B (axes [K, N], seen as [N, K]) of the matmul. */
static operand_t operand_of(const dnnjit__tensor_t *t, const dnnjit__tensor_t *c, bool is_b)
{
    operand_t o = {.t = t};
    int nd = t->ndim;
    int row_axis = is_b ? nd - 1 : nd - 2, k_axis = is_b ? nd - 2 : nd - 1;
    o.rows = t->dim[row_axis];
    /* A stride along an axis of one element never moves; calling it 1 lets either axis be
     * the contiguous one. */
    o.srows = o.rows == 1 ? 1 : t->stride[row_axis];
    o.sk = t->dim[k_axis] == 1 ? 1 : t->stride[k_axis];
    o.kmajor = o.sk == 1 || (o.srows != 1 && abs64(o.sk) <= abs64(o.srows));
    int64_t esize = (int64_t)dnnjit_data_type_size(t->resolved_type);
    int64_t inner = o.kmajor ? o.sk : o.srows, outer = o.kmajor ? o.srows : o.sk;
    int64_t outer_extent = o.kmajor ? o.rows : t->dim[k_axis];
    o.vec = inner == 1 && (outer_extent == 1 || outer * esize % 16 == 0);
    /* C's batch axes, right-aligned with t's; axes t broadcasts along get stride 0. */
    for (int i = 0; i < c->ndim - 2; i++) {
        int ta = i - (c->ndim - nd);
        o.batch_dim[o.batch_axes] = c->dim[i];
        o.batch_stride[o.batch_axes] = ta >= 0 && t->dim[ta] != 1 ? t->stride[ta] : 0;
        if (c->dim[i] > 1 && o.batch_stride[o.batch_axes] * esize % 16 != 0)
            o.vec = false;
        o.batch_axes++;
    }
    return o;
}

static bool describe(dnnjit_graph_t g, const dnnjit__group_t *grp, problem_t *p, const char **why)
{
    const dnnjit__node_t *mm = &g->nodes[grp->first_node];
    if (grp->kind != DNNJIT__GROUP_GEMM) {
        *why = "not a matmul group";
        return false;
    }
    const dnnjit__tensor_t *a = dnnjit__tensor(g, mm->in[0]), *b = dnnjit__tensor(g, mm->in[1]);
    const dnnjit__tensor_t *c = dnnjit__tensor(g, mm->out[0]);
    if (a->resolved_type != b->resolved_type) {
        *why = "A and B have different data types";
        return false;
    }
    switch (a->resolved_type) {
    case DNNJIT_DATA_TYPE_HALF:
        p->kind = KIND_F16;
        break;
    case DNNJIT_DATA_TYPE_BFLOAT16:
        p->kind = KIND_BF16;
        break;
    case DNNJIT_DATA_TYPE_FLOAT:
        p->kind = KIND_F32X3;
        break;
    default:
        *why = "tensor-core GEMM inputs must be HALF, BFLOAT16 or FLOAT";
        return false;
    }
    if (dnnjit__node_compute_type(g, mm) != DNNJIT_DATA_TYPE_FLOAT) {
        *why = "tensor-core GEMM accumulates in FLOAT only";
        return false;
    }
    p->mm = mm;
    p->c = c;
    p->m = c->dim[c->ndim - 2];
    p->n = c->dim[c->ndim - 1];
    p->k = a->dim[a->ndim - 1];
    p->batch = dnnjit__numel(c->ndim - 2, c->dim);
    p->a = operand_of(a, c, false);
    p->b = operand_of(b, c, true);
    return true;
}

static int arch_number(const char *arch)
{
    int v = 0;
    return arch && sscanf(arch, "sm_%d", &v) == 1 ? v : 0;
}

/* Shared memory per CTA; mirrors DjTile in gemm_mma.cuh. */
static int64_t smem_bytes(const problem_t *p, const knob_t *kn)
{
    int esize = p->kind >= KIND_TF32 ? 4 : 2;
    int bk = kn->tile.bk * 2 / esize;
    int64_t total = 0;
    const operand_t *ops[2] = {&p->a, &p->b};
    int rows[2] = {kn->tile.bm, kn->tile.bn};
    for (int i = 0; i < 2; i++) {
        int pad = esize == 4 && !ops[i]->kmajor ? 8 : 16 / esize;
        int64_t elems = ops[i]->kmajor ? (int64_t)rows[i] * (bk + pad) : (int64_t)bk * (rows[i] + pad);
        total += elems * esize;
    }
    return total * kn->tile.stages;
}

/* Opt-in shared memory per block of each architecture family. */
static int64_t smem_limit(int arch)
{
    if (arch >= 90)
        return 227 * 1024;
    if (arch == 80 || arch == 87)
        return 163 * 1024;
    return 99 * 1024;
}

static int64_t tiles_of(const problem_t *p, const knob_t *kn)
{
    return ((p->m + kn->tile.bm - 1) / kn->tile.bm) * ((p->n + kn->tile.bn - 1) / kn->tile.bn);
}

static int64_t k_tiles(const problem_t *p, const knob_t *kn)
{
    int bk = p->kind >= KIND_TF32 ? kn->tile.bk / 2 : kn->tile.bk;
    return (p->k + bk - 1) / bk;
}

/* Arrival counters (rounded to 256 bytes) then the partial tiles of every split. */
static int64_t scratch_counters(const problem_t *p, const knob_t *kn)
{
    return (p->batch * tiles_of(p, kn) + 63) / 64 * 64;
}

static int64_t scratch_bytes(const problem_t *p, const knob_t *kn)
{
    if (kn->split == 1)
        return 0;
    return scratch_counters(p, kn) * 4 +
           (int64_t)kn->split * p->batch * tiles_of(p, kn) * kn->tile.bm * kn->tile.bn * 4;
}

static bool gemm_supports(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob, const char *arch, char *why,
                          size_t why_size)
{
    problem_t p;
    const char *reason = NULL;
    char buf[160];
    dnnjit__kernel_t slots = {0};
    knob_t kn = decode(knob);
    int sm = arch_number(arch);
    if (!describe(g, grp, &p, &reason)) {
    } else if (sm < 80) {
        reason = "mma.sync with bf16 and cp.async need sm_80 or later";
    } else if (kn.tf32 && p.kind != KIND_F32X3) {
        reason = "the TF32 knob applies to FLOAT inputs only";
    } else if (p.kind == KIND_F32X3 && !kn.tf32 && kn.tile.wm * kn.tile.wn > 32 * 64) {
        reason = "exact FLOAT keeps a second accumulator per thread, which fits warp tiles up to 32x64";
    } else if (!dnnjit__kernel_assign_slots(g, grp, &slots) ||
               (kn.split > 1 && slots.tensor_count >= DNNJIT__MAX_KERNEL_TENSORS)) {
        reason = "the group touches more tensors or scalars than a kernel takes";
    } else if (p.batch * kn.split > MAX_GRID_Y) {
        reason = "batch times split-K exceeds the grid's 65535 rows";
    } else if (smem_bytes(&p, &kn) > smem_limit(sm)) {
        snprintf(buf, sizeof buf, "the tile needs %lld bytes of shared memory, more than %s has",
                 (long long)smem_bytes(&p, &kn), arch);
        reason = buf;
    } else if (kn.split > 1 && (k_tiles(&p, &kn) < 16 * kn.split || p.batch * tiles_of(&p, &kn) * 2 > SM_COUNT ||
                                scratch_bytes(&p, &kn) > MAX_SCRATCH_BYTES)) {
        /* Measured on an H200: with fewer than 16 K tiles per split, writing and summing
         * the partials costs more than the extra CTAs win (seed 004's 16x128x128x512 ran
         * 4x slower split four ways). */
        reason = "split-K only pays when the tiles fill under half the GPU and each split gets 16 or more K tiles";
    }
    if (reason && why)
        snprintf(why, why_size, "%s", reason);
    return !reason;
}

static void gemm_knob_name(int knob, char *buf, size_t size)
{
    knob_t kn = decode(knob);
    char split[24] = "";
    if (kn.split > 1)
        snprintf(split, sizeof split, "_splitk%d", kn.split);
    char occupancy[16] = "";
    if (kn.tile.min_blocks > 1)
        snprintf(occupancy, sizeof occupancy, "_occ%d", kn.tile.min_blocks);
    snprintf(buf, size, "%dx%dx%d_w%dx%d_s%d%s%s%s", kn.tile.bm, kn.tile.bn, kn.tile.bk, kn.tile.wm, kn.tile.wn,
             kn.tile.stages, occupancy, split, kn.tf32 ? "_tf32" : "");
}

/* Tensor-core rate of one SM in FLOP/µs: mma.sync reaches about 3.8 TFLOP/s per H200 SM on
 * 16-bit inputs, half that on TF32; three TF32 products cost three times one. */
static double sm_rate(kind_t kind)
{
    double r16 = 3.8e6;
    return kind == KIND_F32X3 ? r16 / 6 : kind == KIND_TF32 ? r16 / 2 : r16;
}

/* CTAs of this tile the register file holds per SM. Registers per thread follow the
 * accumulators: about 1.5 per fp32 accumulator plus 64 for fragments and addresses, up to
 * the launch bounds' cap (fits ptxas's counts for sm_90a within 10%). */
static int ctas_per_sm_by_registers(const knob_t *kn)
{
    int threads = kn->tile.bm / kn->tile.wm * (kn->tile.bn / kn->tile.wn) * 32;
    int regs = kn->tile.wm * kn->tile.wn / 32 * 3 / 2 + 64;
    int cap = 65536 / (threads * kn->tile.min_blocks);
    regs = regs > cap ? cap : regs > 255 ? 255 : regs;
    return 65536 / (threads * regs);
}

static double gemm_cost(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    problem_t p;
    const char *why;
    knob_t kn = decode(knob);
    if (!describe(g, grp, &p, &why))
        return 1e30;
    kind_t kind = p.kind == KIND_F32X3 && kn.tf32 ? KIND_TF32 : p.kind;
    /* Smaller tiles reload their operands more often per FLOP: efficiency follows the
     * tile's arithmetic intensity, relative to 128x256. */
    double intensity = (double)kn.tile.bm * kn.tile.bn / (kn.tile.bm + kn.tile.bn) / (128.0 * 256 / 384);
    double efficiency = intensity >= 1 ? 1 : 0.35 + 0.65 * intensity;
    int64_t ctas = p.batch * tiles_of(&p, &kn) * kn.split;
    int64_t per_sm = smem_bytes(&p, &kn) * 2 <= 227 * 1024 && ctas_per_sm_by_registers(&kn) >= 2 ? 2 : 1;
    int64_t waves = (ctas + SM_COUNT * per_sm - 1) / (SM_COUNT * per_sm);
    double k_per_cta = (double)k_tiles(&p, &kn) / kn.split * (p.kind >= KIND_TF32 ? kn.tile.bk / 2 : kn.tile.bk);
    double cta_time = 2.0 * kn.tile.bm * kn.tile.bn * k_per_cta / (sm_rate(kind) * efficiency / (double)per_sm);
    double esize = p.kind >= KIND_TF32 ? 4 : 2;
    double bytes = esize * (double)p.batch * ((double)p.m * p.k + (double)p.k * p.n) + 4.0 * (double)p.batch * p.m * p.n;
    double reduce = kn.split > 1 ? 8.0 * kn.split * (double)p.batch * p.m * p.n / 3.0e6 : 0;
    double compute = (double)waves * cta_time;
    return 4.0 + (compute > bytes / 3.5e6 ? compute : bytes / 3.5e6) + reduce;
}

/* Mode A's rule: exact before TF32; then the plan that keeps the most SMs busy, wastes the
 * least of its tiles on padding past the matrix edge, and has the larger tile. */
static double gemm_rule(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    problem_t p;
    const char *why;
    knob_t kn = decode(knob);
    if (!describe(g, grp, &p, &why))
        return 1e30;
    int tile_index = knob / 2 / SPLIT_COUNT;
    double ctas = (double)(p.batch * tiles_of(&p, &kn) * kn.split);
    double fill = ctas >= SM_COUNT ? 1.0 : ctas / SM_COUNT;
    double waste = 1.0 - (double)p.m * (double)p.n / ((double)tiles_of(&p, &kn) * kn.tile.bm * kn.tile.bn);
    return (kn.tf32 ? 1000.0 : 0.0) + (1.0 - fill) * 100.0 + waste * 50.0 + tile_index + (kn.split - 1) * 0.5;
}

static uint32_t gemm_notes(int knob)
{
    return decode(knob).tf32 ? DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION : 0;
}

static void emit_batch_offset(dnnjit__strbuf_t *sb, const char *name, const operand_t *o)
{
    dnnjit__sb_printf(sb, "__device__ __forceinline__ dj_i64 dj_%s_batch(dj_i64 b)\n{\n    dj_i64 off = 0;\n", name);
    for (int i = o->batch_axes - 1; i >= 0; i--) {
        if (o->batch_dim[i] == 1)
            continue;
        if (o->batch_stride[i])
            dnnjit__sb_printf(sb, "    off += b %% %lldLL * %lldLL;\n", (long long)o->batch_dim[i],
                              (long long)o->batch_stride[i]);
        dnnjit__sb_printf(sb, "    b /= %lldLL;\n", (long long)o->batch_dim[i]);
    }
    dnnjit__sb_append(sb, "    (void)b;\n    return off;\n}\n");
}

/* An operand with a prologue has no slot (it is never in memory); its strides are those of
 * the virtual tensor, which only choose the layout of its tile in shared memory. */
static void emit_operand(dnnjit__strbuf_t *sb, const char *name, const char *rows_name, const operand_t *o, int slot,
                         bool prologue)
{
    char upper = name[0] == 'a' ? 'A' : 'B';
    dnnjit__sb_printf(sb,
                      "constexpr bool DJ_%c_KMAJOR = %s;\nconstexpr dj_i64 DJ_%c_S%s = %lldLL;\n"
                      "constexpr dj_i64 DJ_%c_SK = %lldLL;\nconstexpr bool DJ_%c_VEC = %s;\n"
                      "constexpr int DJ_%c_SLOT = %d;\nconstexpr bool DJ_%c_PROLOGUE = %s;\n",
                      upper, o->kmajor ? "true" : "false", upper, rows_name, (long long)o->srows, upper,
                      (long long)o->sk, upper, o->vec ? "true" : "false", upper, slot, upper,
                      prologue ? "true" : "false");
    emit_batch_offset(sb, name, o);
}

static dnnjit_status_t gemm_generate(dnnjit_graph_t g, const dnnjit__partition_t *part, const dnnjit__group_t *grp,
                                     int knob, dnnjit__kernel_t *k)
{
    (void)part;
    *k = (dnnjit__kernel_t){0};
    problem_t p;
    const char *why = NULL;
    knob_t kn = decode(knob);
    if (!describe(g, grp, &p, &why) || !dnnjit__kernel_assign_slots(g, grp, k))
        return dnnjit__fail(g, DNNJIT_STATUS_NOT_SUPPORTED, "gemm engine: matmul \"%s\": %s",
                            g->nodes[grp->first_node].name, why ? why : "too many tensors for one kernel");
    kind_t kind = p.kind == KIND_F32X3 && kn.tf32 ? KIND_TF32 : p.kind;
    const char *type = dnnjit__cuda_type(p.a.t->resolved_type);
    int bk = p.kind >= KIND_TF32 ? kn.tile.bk / 2 : kn.tile.bk;

    dnnjit__strbuf_t sb = {0};
    dnnjit__sb_append(&sb, dnnjit__template("common.cuh"));
    dnnjit__sb_printf(&sb, "\n// ---- generated by the gemm engine for matmul \"%s\" ----\n", p.mm->name);
    dnnjit__sb_printf(&sb, "typedef %s dj_ta;\ntypedef %s dj_tb;\nconstexpr int DJ_KIND = %d;\n", type, type, (int)kind);
    dnnjit__sb_printf(&sb,
                      "constexpr int DJ_BM = %d, DJ_BN = %d, DJ_BK = %d, DJ_WM = %d, DJ_WN = %d, DJ_STAGES = %d, "
                      "DJ_SPLITK = %d, DJ_GROUP_M = %d, DJ_MIN_BLOCKS = %d;\n",
                      kn.tile.bm, kn.tile.bn, bk, kn.tile.wm, kn.tile.wn, kn.tile.stages, kn.split, GROUP_M,
                      kn.tile.min_blocks);
    dnnjit__sb_printf(&sb,
                      "constexpr dj_i64 DJ_M = %lldLL, DJ_N = %lldLL, DJ_K = %lldLL, DJ_BATCH = %lldLL;\n",
                      (long long)p.m, (long long)p.n, (long long)p.k, (long long)p.batch);
    bool prologue[2] = {dnnjit__group_has_prologue(g, grp, 0), dnnjit__group_has_prologue(g, grp, 1)};
    emit_operand(&sb, "a", "M", &p.a, dnnjit__slot_of(k->tensors, k->tensor_count, p.mm->in[0]), prologue[0]);
    emit_operand(&sb, "b", "N", &p.b, dnnjit__slot_of(k->tensors, k->tensor_count, p.mm->in[1]), prologue[1]);
    if (kn.split > 1) {
        k->scratch_slot = k->tensor_count;
        k->scratch_bytes = scratch_bytes(&p, &kn);
        k->scratch_zero_bytes = scratch_counters(&p, &kn) * 4;
    }
    dnnjit__sb_printf(&sb, "constexpr int DJ_SCRATCH_SLOT = %d;\nconstexpr dj_i64 DJ_SCRATCH_COUNTERS = %lldLL;\n\n",
                      k->scratch_slot, (long long)(kn.split > 1 ? scratch_counters(&p, &kn) : 0));
    dnnjit__emit_group_element(&sb, g, grp, k, p.c, p.mm->out[0], DNNJIT__ELEMENT_AT_COORDS);
    for (int slot = 0; slot < 2; slot++)
        if (prologue[slot])
            dnnjit__emit_prologue(&sb, g, grp, k, slot, DNNJIT__ELEMENT_AT_COORDS);
    dnnjit__sb_append(&sb, dnnjit__template("gemm_mma.cuh"));
    k->source = dnnjit__sb_take(&sb);
    if (!k->source)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "gemm engine: out of memory generating source");
    snprintf(k->entry, sizeof k->entry, "dj_gemm");
    k->grid[0] = (unsigned)tiles_of(&p, &kn);
    k->grid[1] = (unsigned)(p.batch * kn.split);
    k->grid[2] = 1;
    k->block[0] = (unsigned)(kn.tile.bm / kn.tile.wm * (kn.tile.bn / kn.tile.wn) * 32);
    k->block[1] = k->block[2] = 1;
    k->shared_bytes = (unsigned)smem_bytes(&p, &kn);
    k->compile_option = GEMM_PTXAS_OPTION;
    return DNNJIT_STATUS_SUCCESS;
}

const dnnjit__engine_t dnnjit__engine_gemm = {
    .name = "gemm",
    .knob_count = TILE_COUNT * SPLIT_COUNT * 2,
    .supports = gemm_supports,
    .knob_name = gemm_knob_name,
    .cost = gemm_cost,
    .rule = gemm_rule,
    .notes = gemm_notes,
    .generate = gemm_generate,
};
