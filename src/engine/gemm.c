/* The tensor-core GEMM engine (sm_80 and later): a matmul with its fused pointwise prologues
 * and epilogue as one mma.sync kernel (src/kernels/gemm_mma.cuh); an operand computed by a
 * prologue is evaluated element by element while its tiles are loaded. fp16 and bf16
 * inputs multiply on the tensor cores directly; fp32 inputs either as three TF32 products
 * (about fp32 accuracy) or, in the plans marked REDUCED_PRECISION, as one; inputs of two
 * different types as fp32, the 16-bit one widened as its tiles are filled. Each operand is
 * read in the stride order it has in memory, so transposes cost nothing; sizes, strides and
 * the batch layout are compiled in. Knobs: CTA and warp tiles with pipeline depth and CTAs per SM,
 * split-K, and the fp32 mode; and for problems of at most 16 rows whose operands both keep K
 * contiguous (a linear layer on a few tokens), the skinny kernel (src/kernels/gemm_skinny.cuh),
 * which streams B into the tensor cores' fragments without shared-memory tiles. */
#include "engine/engine.h"

#include "codegen/codegen.h"
#include "codegen/templates.h"

#include <math.h>
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

/* The skinny kernel's knobs: warps splitting K in a CTA, and 32-element chunks of K a thread
 * loads a turn (twice that many 16-byte pieces of B in flight). Mode A takes the first. On the
 * H200 (bf16, 4 to 16 warps by 1 to 4 chunks, calls under graph replay) 4 warps of 4 chunks
 * were the fastest pair or within 6% of it on 1x4096x14336 (30.8 us), 1x14336x4096 (32.8),
 * 8x14336x4096 (33.4), 16x4096x4096 (9.7) and 1x4096x4096 (6.7), and 5% behind 4 warps of 2
 * on 16x14336x4096 (35.2 against 33.4); 8 warps of 2 ran 1x4096x4096 in 6.5 us. */
typedef struct skinny_shape {
    int warps, loads;
} skinny_shape_t;
static const skinny_shape_t SKINNY[] = {{4, 4}, {4, 2}, {8, 2}, {8, 4}, {16, 2}};

enum {
    TILE_COUNT = sizeof TILES / sizeof TILES[0],
    SPLIT_COUNT = sizeof SPLITS / sizeof SPLITS[0],
    /* The tiled knobs (each tile, split and fp32 mode), then the skinny ones. */
    TILED_KNOBS = TILE_COUNT * SPLIT_COUNT * 2,
    SKINNY_KNOBS = sizeof SKINNY / sizeof SKINNY[0],
    /* The most rows of A the skinny kernel takes: one m16n8k16 fragment's. */
    SKINNY_MAX_M = 16,
    /* The streaming multiprocessors of an H200-class device, for the heuristics. */
    SM_COUNT = 132,
    /* Thread-block rows of tiles walked together (L2 locality). */
    GROUP_M = 8,
    /* The batch and split index ride on gridDim.y. */
    MAX_GRID_Y = 65535,
    /* The epilogue stages EPI_ROWS rows of each warp's tile at a time in shared memory (one
     * 16-row mma fragment row), as floats in rows of the warp tile's width plus EPI_PAD:
     * the warp width is a multiple of 16, so the pitch is 8 or 24 banks past a multiple of
     * 32 and the float2 stores of a half-warp's 4 rows fall in distinct banks. */
    EPI_ROWS = 16,
    EPI_PAD = 8,
};

/* Split-K partial sums beyond this are refused: the workspace would dwarf the output. */
#define MAX_SCRATCH_BYTES ((int64_t)256 << 20)

typedef enum kind { KIND_F16, KIND_BF16, KIND_TF32, KIND_F32X3 } kind_t;

typedef struct knob {
    tile_shape_t tile;
    int split;
    bool tf32;             /* fp32 inputs: one TF32 product instead of three */
    skinny_shape_t skinny; /* the skinny kernel's knobs (warps 0: a tiled knob) */
} knob_t;

static knob_t decode(int knob)
{
    if (knob >= TILED_KNOBS)
        return (knob_t){.skinny = SKINNY[knob - TILED_KNOBS]};
    return (knob_t){TILES[knob / 2 / SPLIT_COUNT], SPLITS[knob / 2 % SPLIT_COUNT], knob % 2 == 1, {0, 0}};
}

/* One operand seen as a [rows, K] matrix (A: rows = M; B: rows = N), batched over C's
 * leading axes. */
typedef struct operand {
    const dnnjit__tensor_t *t;
    int64_t rows, srows, sk; /* extent along rows, and the strides along rows and K */
    bool kmajor;             /* K is the axis kept innermost in shared memory */
    bool vec;                /* 16-byte copies are legal for any 16-byte aligned base */
    bool by_element;         /* tiles are filled element by element: not vec, or a prologue computes it */
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
    const dnnjit_data_type_t types[2] = {a->resolved_type, b->resolved_type};
    for (int i = 0; i < 2; i++)
        if (types[i] != DNNJIT_DATA_TYPE_HALF && types[i] != DNNJIT_DATA_TYPE_BFLOAT16 &&
            types[i] != DNNJIT_DATA_TYPE_FLOAT) {
            *why = "tensor-core GEMM inputs must be HALF, BFLOAT16 or FLOAT";
            return false;
        }
    /* Inputs of two types multiply in FLOAT, to which both widen exactly: a 16-bit operand
     * beside a FLOAT one (a prologue's result kept in the graph's FLOAT intermediate type,
     * say) loses nothing, where narrowing the FLOAT one would round what the graph says. */
    if (types[0] == types[1] && types[0] == DNNJIT_DATA_TYPE_HALF)
        p->kind = KIND_F16;
    else if (types[0] == types[1] && types[0] == DNNJIT_DATA_TYPE_BFLOAT16)
        p->kind = KIND_BF16;
    else
        p->kind = KIND_F32X3;
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
    operand_t *ops[2] = {&p->a, &p->b};
    for (int i = 0; i < 2; i++) {
        /* A 16-bit operand of a FLOAT product is widened element by element as its tiles
         * are filled; copies of its bytes would not do. */
        if (types[i] != DNNJIT_DATA_TYPE_FLOAT && p->kind == KIND_F32X3)
            ops[i]->vec = false;
        ops[i]->by_element = !ops[i]->vec || dnnjit__group_has_prologue(g, grp, i);
    }
    return true;
}

static int threads_of(const knob_t *kn)
{
    return kn->tile.bm / kn->tile.wm * (kn->tile.bn / kn->tile.wn) * 32;
}

/* Shared memory per CTA: the pipeline's stages (mirrors DjTile in gemm_mma.cuh), or the
 * epilogue's staging (EPI_ROWS rows of EPI_PAD more floats than the warp tile's width, per
 * warp), where that is more. */
static int64_t smem_bytes(const problem_t *p, const knob_t *kn)
{
    int64_t staged = (int64_t)threads_of(kn) / 32 * EPI_ROWS * (kn->tile.wn + EPI_PAD) * 4;
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
    total *= kn->tile.stages;
    return total > staged ? total : staged;
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

/* ---- the performance model ------------------------------------------------------------
 *
 * Mode B's cost is this model's estimate of a plan's time; mode A's rule ranks by how far
 * the estimate lies above the problem's ideal time. The numbers come from an H200
 * (bench/results/2026-11-22-bfdb6ca.json, the gemm_sweep cases).
 *
 * Big problems are bound by the tensor cores: rounds of CTAs over the SMs times one CTA's
 * arithmetic. Problems with few rows (nn.Linear on 1 to 128 tokens: M of 1 to 128 against N
 * and K of 4096 to 14336) are bound by memory instead: they read all of B (117 MB for
 * 4096x14336 in bf16, 28 µs at the H200's 4.2 TB/s) and do little arithmetic per byte, so
 * what sets their time is how many loads are in flight. A CTA that fills its tiles with
 * 16-byte cp.async copies keeps stages - 1 K tiles in flight, so it takes in a K tile every
 * LATENCY_US / (stages - 1) whatever the tile's width: 32x32x64 tiles in three stages on
 * M = 16 took 24.3 µs over 64 K tiles (N = K = 4096, 128 CTAs) and 93.3 µs over 224
 * (K = 14336), 0.38 and 0.42 µs per tile with two in flight. Each CTA walks its K range at
 * that pace whatever the others do; only more CTAs at once (smaller tiles, split-K, several
 * CTAs per SM) shorten the range each one walks, until DRAM's bandwidth binds. Tile rows
 * past M cost no memory traffic (their copies read nothing) but full tensor-core work, and
 * the partial sums of split-K.
 *
 * Split-K pays a fixed price: the kernel zeroing the counters before the launch, the
 * partial tiles' stores and fence, the arrival atomics; and the last CTA of each tile
 * reloads every other split's partial tile (whole bm x bn tiles, the rows past M included)
 * before its epilogue.
 * Seed 004's 16x128x128x512 ran 4x slower split four ways (9 µs to 36 µs with 64x64 tiles,
 * four K tiles of 32 per split); the 128x256 split-8 plan of linear_1x4096x4096 took 99 µs,
 * most of it its last CTAs summing 7 partial tiles of 128 KiB each. So split-K wins where K
 * is long and the tiles give few CTAs: on 16x4096x14336, 32x32 tiles are 128 CTAs walking
 * 224 K tiles each (93 µs); split four ways, 512 CTAs (the SMs hold 792) walk 56 each in
 * 23 µs, DRAM's 29 µs binds, and with the split's price the estimate is 56 µs. On
 * 16x4096x4096 the same split would bring the walk from 26 µs down to DRAM's 8 but pay 22
 * back: it stays whole (measured 24.3 µs). */

/* One round trip of a global load on a busy H200, in µs (from the per-K-tile times above). */
#define LATENCY_US 0.8
/* One element load of a tile filled element by element, in µs: each thread waits for its
 * load before the store that follows it. Operands that fit in L2 together are read from it
 * after their first touch: 1000x77x1000 (B of 154 KB filled by element) took 67 µs, 0.26 µs
 * a load; 4097x4095x4099 (A and B, 67 MB, both by element) took 9135 µs, 0.55 a load. */
#define ELEMENT_LOAD_L2_US 0.26
#define ELEMENT_LOAD_DRAM_US 0.55
#define L2_BYTES (50.0 * 1024 * 1024)
/* DRAM bandwidth a streaming kernel reaches on an H200 (4.8 TB/s peak), in bytes per µs. */
#define DRAM_BYTES_PER_US 4.0e6
/* Split-K's fixed cost in µs: seed 004's 27 µs of extra time, less the summing its 64x64
 * partial tiles cost by the model below. */
#define SPLIT_FIXED_US 20.0
/* Partial-sum loads each thread of a tile's last CTA has in flight while it sums: 9.4 and
 * 11.5 fit the split-8 plans of linear_128x4096x14336 (137 µs) and linear_1x4096x4096. */
#define PARTIAL_LOADS_IN_FLIGHT 10
/* The launch and the kernel's start and drain, in µs. */
#define LAUNCH_US 4.0
/* Shared memory of one SM, and the part of it the driver reserves per CTA. */
#define SM_SMEM_BYTES (228 * 1024)
#define CTA_RESERVED_SMEM 1024

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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
    int threads = threads_of(kn);
    int regs = kn->tile.wm * kn->tile.wn / 32 * 3 / 2 + 64;
    int cap = 65536 / (threads * kn->tile.min_blocks);
    regs = regs > cap ? cap : regs > 255 ? 255 : regs;
    return 65536 / (threads * regs);
}

/* CTAs of this knob one SM holds at once: registers, shared memory and the SM's 2048
 * threads each limit them. */
static int64_t resident_ctas(const problem_t *p, const knob_t *kn)
{
    int64_t r = min64(ctas_per_sm_by_registers(kn), SM_SMEM_BYTES / (smem_bytes(p, kn) + CTA_RESERVED_SMEM));
    r = min64(r, 2048 / threads_of(kn));
    return r < 1 ? 1 : r;
}

static int64_t ctas_of(const problem_t *p, const knob_t *kn)
{
    return p->batch * tiles_of(p, kn) * kn->split;
}

/* K tiles one split walks. */
static int64_t k_tiles_per_split(const problem_t *p, const knob_t *kn)
{
    return ceil_div(k_tiles(p, kn), kn->split);
}

/* Bytes of A and B. */
static double operand_bytes(const problem_t *p)
{
    double esize = p->kind >= KIND_TF32 ? 4 : 2;
    return (double)p->batch * esize * ((double)p->m * p->k + (double)p->k * p->n);
}

/* Bytes the problem must move through DRAM: A and B read once, C written once. */
static double dram_bytes(const problem_t *p)
{
    return operand_bytes(p) + (double)p->batch * dnnjit_data_type_size(p->c->resolved_type) * (double)p->m * p->n;
}

/* µs between K tiles arriving in a running pipeline: stages - 1 tiles in flight with
 * 16-byte copies; an operand filled element by element costs a load's wait per element a
 * thread fills (rows past the matrix are not read). */
static double k_tile_us(const problem_t *p, const knob_t *kn)
{
    double us = LATENCY_US / (kn->tile.stages - 1);
    double load_us = operand_bytes(p) <= L2_BYTES ? ELEMENT_LOAD_L2_US : ELEMENT_LOAD_DRAM_US;
    const operand_t *ops[2] = {&p->a, &p->b};
    int rows[2] = {kn->tile.bm, kn->tile.bn};
    int64_t bk = p->kind >= KIND_TF32 ? kn->tile.bk / 2 : kn->tile.bk;
    for (int i = 0; i < 2; i++) {
        if (!ops[i]->by_element)
            continue;
        double loads = (double)ceil_div(min64(rows[i], ops[i]->rows) * bk, threads_of(kn));
        us = loads * load_us > us ? loads * load_us : us;
    }
    return us;
}

/* µs of tensor-core work for one CTA's K range with the SM to itself. Smaller tiles reload
 * their operands more often per FLOP: efficiency follows the tile's arithmetic intensity,
 * relative to 128x256's. */
static double cta_compute_us(const problem_t *p, const knob_t *kn)
{
    kind_t kind = p->kind == KIND_F32X3 && kn->tf32 ? KIND_TF32 : p->kind;
    double intensity = (double)kn->tile.bm * kn->tile.bn / (kn->tile.bm + kn->tile.bn) / (128.0 * 256 / 384);
    double efficiency = intensity >= 1 ? 1 : 0.35 + 0.65 * intensity;
    int64_t bk = p->kind >= KIND_TF32 ? kn->tile.bk / 2 : kn->tile.bk;
    double k = (double)(k_tiles_per_split(p, kn) * bk);
    return 2.0 * kn->tile.bm * kn->tile.bn * k / (sm_rate(kind) * efficiency);
}

/* µs of the main loops: rounds of resident CTAs over the SMs. A CTA waits a round trip for
 * its first K tile, then takes in each next one as fast as the slower of its copies and the
 * tensor-core work on a tile (shared among the CTAs on its SM) allows, then multiplies the
 * last; short K ranges pay the first wait and the last tile's work in full (a 64x64 tile on
 * seed 000's 4x64x64x128 ranks behind 32x32, whose four times as many CTAs each do a
 * quarter of the work). No shorter than DRAM's bandwidth allows. */
static double main_loops_us(const problem_t *p, const knob_t *kn)
{
    int64_t ctas = ctas_of(p, kn), resident = resident_ctas(p, kn), tiles = k_tiles_per_split(p, kn);
    int64_t rounds = ceil_div(ctas, SM_COUNT * resident), sharing = min64(resident, ceil_div(ctas, SM_COUNT));
    double compute = (double)sharing * cta_compute_us(p, kn) / (double)tiles, copy = k_tile_us(p, kn);
    double cta = LATENCY_US + (double)(tiles - 1) * (copy > compute ? copy : compute) + compute;
    double us = (double)rounds * cta, bound = dram_bytes(p) / DRAM_BYTES_PER_US;
    return us > bound ? us : bound;
}

/* µs split-K adds: its fixed cost, then the last CTA of each tile loading the other splits'
 * partial tiles, PARTIAL_LOADS_IN_FLIGHT per thread per round trip, in rounds when the tiles
 * outnumber the CTAs the SMs hold. */
static double split_tail_us(const problem_t *p, const knob_t *kn)
{
    if (kn->split == 1)
        return 0;
    int64_t loads = (int64_t)(kn->split - 1) * kn->tile.bm * kn->tile.bn / threads_of(kn);
    int64_t rounds = ceil_div(p->batch * tiles_of(p, kn), SM_COUNT * resident_ctas(p, kn));
    return SPLIT_FIXED_US + (double)(rounds * ceil_div(loads, PARTIAL_LOADS_IN_FLIGHT)) * LATENCY_US;
}

/* Mode B: the model's estimate of the kernel's time in µs. */
static double plan_us(const problem_t *p, const knob_t *kn)
{
    return LAUNCH_US + main_loops_us(p, kn) + split_tail_us(p, kn);
}

/* Mode B for the skinny kernel: each warp walks its share of K's 32-element chunks with
 * 2 * `loads` of them in flight, a round trip per 2 * `loads` chunks, in rounds of the CTAs the
 * SMs hold (by threads); no shorter than the operands' bytes take at the rate it reached on the H200:
 * from L2 about DRAM_BYTES_PER_US (16x4096x4096, 34 MB, in 9.7 us), from DRAM
 * SKINNY_DRAM_BYTES_PER_US (1x14336x4096, 117 MB, in 32.8 us). */
#define SKINNY_DRAM_BYTES_PER_US 3.6e6
static double skinny_us(const problem_t *p, const knob_t *kn)
{
    int64_t chunks = ceil_div(ceil_div(p->k, 32), kn->skinny.warps);
    int64_t ctas = p->batch * ceil_div(p->n, 8), resident = 2048 / (32 * kn->skinny.warps);
    double walk =
        (double)(ceil_div(ctas, SM_COUNT * resident) * ceil_div(chunks, 2 * kn->skinny.loads)) * LATENCY_US;
    double rate = operand_bytes(p) <= L2_BYTES ? DRAM_BYTES_PER_US : SKINNY_DRAM_BYTES_PER_US;
    double bound = dram_bytes(p) / rate;
    return LAUNCH_US + (walk > bound ? walk : bound);
}

/* Why the skinny kernel cannot run the problem, or NULL when it can: it takes at most 16 rows
 * of 16-bit A and B of one type, both with K contiguous and their rows (and batch entries)
 * 16-byte multiples apart, read from memory (no prologue), K a multiple of 8. */
static const char *skinny_refusal(const problem_t *p)
{
    if (p->kind != KIND_F16 && p->kind != KIND_BF16)
        return "the skinny kernel takes HALF or BFLOAT16 inputs of one type";
    if (p->m > SKINNY_MAX_M)
        return "the skinny kernel takes at most 16 rows of A";
    if (p->a.sk != 1 || p->b.sk != 1)
        return "the skinny kernel takes A and B with their K axis contiguous (B an nn.Linear weight [N, K])";
    if (p->a.by_element || p->b.by_element)
        return "the skinny kernel loads A and B from memory in 16-byte pieces: their rows and batch entries must be "
               "16-byte multiples apart, and neither computed by a prologue";
    if (p->k % 8 != 0)
        return "the skinny kernel takes K in whole 16-byte pieces (a multiple of 8)";
    if (p->k >= (int64_t)1 << 30)
        return "the skinny kernel counts K's elements in 32-bit integers: K must be below 2^30";
    if (p->batch > MAX_GRID_Y)
        return "the skinny kernel's batch rides on the grid's 65535 rows";
    return NULL;
}

/* Mode A: whether the skinny kernel's plans rank before every tiled plan of either engine
 * (gemm_sm90.c defers to them): where A and B fit in L2 together, which calls after the first
 * read them from, or where A has at most 8 rows. On the H200 (mode A's plans in turns with
 * those of 314f727, calls back to back), 1x4096x4096 bf16 took 6.1 us against the sm_90
 * engine's 15.3 (128x128 tiles split four ways), 16x4096x4096 8.8 against 14.4; streaming B
 * from DRAM, 1x14336x4096 32.5 against 33.3, 1x4096x14336 30.7 against 37.2, 8x14336x4096
 * 33.3 against 33.5, 8x4096x14336 31.5 against 36.2. At 16 rows each thread loads two rows of
 * A besides its piece of B, and from DRAM the TMA pipelines win: 16x14336x4096 35.4 against
 * 33.9, 16x4096x14336 49.5 against 35.2. */
static bool skinny_first(const problem_t *p)
{
    return !skinny_refusal(p) && (operand_bytes(p) <= L2_BYTES || p->m <= 8);
}

/* The time no plan beats: every SM's tensor cores busy on the useful products, or DRAM
 * streaming the operands, whichever takes longer. */
static double ideal_us(const problem_t *p, bool tf32)
{
    kind_t kind = p->kind == KIND_F32X3 && tf32 ? KIND_TF32 : p->kind;
    double compute = 2.0 * (double)p->batch * (double)p->m * (double)p->n * (double)p->k / (sm_rate(kind) * SM_COUNT);
    double bound = dram_bytes(p) / DRAM_BYTES_PER_US;
    return LAUNCH_US + (compute > bound ? compute : bound);
}

static bool gemm_supports(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob, const char *arch, char *why,
                          size_t why_size)
{
    problem_t p;
    const char *reason = NULL;
    char buf[160];
    dnnjit__kernel_t slots = {0};
    knob_t kn = decode(knob);
    int sm = dnnjit__arch_number(arch);
    if (!describe(g, grp, &p, &reason)) {
    } else if (sm < 80) {
        reason = "mma.sync with bf16 and cp.async need sm_80 or later";
    } else if (!dnnjit__kernel_assign_slots(g, grp, &slots) ||
               (kn.split > 1 && slots.tensor_count >= DNNJIT__MAX_KERNEL_TENSORS)) {
        reason = "the group touches more tensors or scalars than a kernel takes";
    } else if (kn.skinny.warps) {
        reason = skinny_refusal(&p);
    } else if (kn.tf32 && p.kind != KIND_F32X3) {
        reason = "the TF32 knob applies to FLOAT inputs only";
    } else if (p.kind == KIND_F32X3 && !kn.tf32 && kn.tile.wm * kn.tile.wn > 32 * 64) {
        reason = "exact FLOAT keeps a second accumulator per thread, which fits warp tiles up to 32x64";
    } else if (p.kind == KIND_F32X3 && !kn.tf32 && kn.tile.min_blocks > 1) {
        /* On the H200 at 4096^3 the 128x128 tile capped at 128 registers a thread (896
         * bytes of stack) took 13.9 ms, against 2.6 for 64x128 and 2.8-3.0 for 64x64. */
        reason = "exact FLOAT splits each fragment in two, which spills past the 128 registers a thread has at two "
                 "CTAs an SM";
    } else if (p.batch * kn.split > MAX_GRID_Y) {
        reason = "batch times split-K exceeds the grid's 65535 rows";
    } else if (smem_bytes(&p, &kn) > smem_limit(sm)) {
        snprintf(buf, sizeof buf, "the tile needs %lld bytes of shared memory, more than %s has",
                 (long long)smem_bytes(&p, &kn), arch);
        reason = buf;
    } else if (kn.split > 1 && (k_tiles(&p, &kn) < 16 * kn.split ||
                                p.batch * tiles_of(&p, &kn) >= SM_COUNT * resident_ctas(&p, &kn) ||
                                scratch_bytes(&p, &kn) > MAX_SCRATCH_BYTES)) {
        /* Measured on an H200: with fewer than 16 K tiles per split, writing and summing
         * the partials costs more than the extra CTAs win (seed 004's 16x128x128x512 ran
         * 4x slower split four ways). Tiles that already fill every CTA slot of the SMs
         * leave split-K nothing to add; below that, the ranking weighs what it adds (32x32
         * tiles on 16x4096x14336 are 128 CTAs where the SMs hold 792). */
        reason = "split-K only pays when the tiles leave CTA slots of the SMs free and each split gets 16 or more K "
                 "tiles";
    }
    if (reason && why)
        snprintf(why, why_size, "%s", reason);
    return !reason;
}

static void gemm_knob_name(int knob, char *buf, size_t size)
{
    knob_t kn = decode(knob);
    if (kn.skinny.warps) {
        snprintf(buf, size, "skinny_w%d_l%d", kn.skinny.warps, kn.skinny.loads);
        return;
    }
    char split[24] = "";
    if (kn.split > 1)
        snprintf(split, sizeof split, "_splitk%d", kn.split);
    char occupancy[16] = "";
    if (kn.tile.min_blocks > 1)
        snprintf(occupancy, sizeof occupancy, "_occ%d", kn.tile.min_blocks);
    snprintf(buf, size, "%dx%dx%d_w%dx%d_s%d%s%s%s", kn.tile.bm, kn.tile.bn, kn.tile.bk, kn.tile.wm, kn.tile.wn,
             kn.tile.stages, occupancy, split, kn.tf32 ? "_tf32" : "");
}

static double gemm_cost(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    problem_t p;
    const char *why;
    knob_t kn = decode(knob);
    if (!describe(g, grp, &p, &why))
        return 1e30;
    return kn.skinny.warps ? skinny_us(&p, &kn) : plan_us(&p, &kn);
}

/* Mode A's rule (plan.c ranks the TF32 knobs, noted REDUCED_PRECISION, after the exact
 * ones): by how far the model's estimate lies above the ideal time, in hundredths of a
 * doubling (a plan estimated at twice the ideal scores 100).
 * The estimate holds what the rule used to weigh apart: CTAs too few for the SMs lengthen
 * its rounds, tiles padded past the matrix its arithmetic, and it adds what was missing
 * for few rows: the K range each CTA walks and split-K's price. Memory-bound plans whose
 * walks take equally long tie there whatever their tile (64x64 and 32x32 tiles both walk 64
 * K tiles of 64 on 16x4096x4096); the padding past the matrix's edge then decides, a tenth
 * as much per doubling of the multiplied area, so the tile that wastes the fewest rows on a
 * small M (or columns on a small N) wins; then the larger tile (the order of TILES), then
 * the smaller split. The skinny knobs, in the order of SKINNY, rank before all of them where
 * skinny_first says so, and after all of them elsewhere. */
static double gemm_rule(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    problem_t p;
    const char *why;
    knob_t kn = decode(knob);
    if (!describe(g, grp, &p, &why))
        return 1e30;
    if (kn.skinny.warps)
        return (skinny_first(&p) ? -1e6 : 1e6) + (knob - TILED_KNOBS);
    int tile_index = knob / 2 / SPLIT_COUNT;
    double slowdown = log2(plan_us(&p, &kn) / ideal_us(&p, kn.tf32));
    double padding = log2((double)tiles_of(&p, &kn) * kn.tile.bm * kn.tile.bn / ((double)p.m * (double)p.n));
    return 100.0 * slowdown + 10.0 * padding + tile_index + (kn.split - 1) * 0.5;
}

static uint32_t gemm_notes(int knob)
{
    return decode(knob).tf32 ? DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION : 0;
}

bool dnnjit__gemm_skinny_first(dnnjit_graph_t g, const dnnjit__group_t *grp)
{
    problem_t p;
    const char *why;
    return describe(g, grp, &p, &why) && skinny_first(&p);
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

/* The tiled kernel's accumulators and its k-step of mma.sync. The accumulators are PTX
 * registers of their own, dj_c0.. (DJ_MI * DJ_NI * 4 floats: fragment (mi, ni)'s four at
 * 4 * (mi * DJ_NI + ni)), and for fp32 as three products (DJ_KIND 3) a tile's sums dj_p0..
 * apart, declared at the kernel's start. Only asm statements touch them, so NVVM never sees
 * them as values: as a C++ array, each mma's asm took four of them as operands, and locally
 * the 4096^3 bf16 kernel on 128x256 tiles compiled in 207-216 ms against 251-290, its main
 * loop's SASS the same but for register numbers and an HMMA's place. Each statement is
 * volatile, so NVVM keeps them in order, and ptxas sees every use of the registers. The
 * functions:
 *   dj_acc_declare()      declares them (first in the kernel: the entry block comes first in
 *                         the PTX, before every statement that names them)
 *   dj_acc_clear()        all of them to zero
 *   dj_mma_kstep(a, b, as, bs)   a k-step's DJ_MI x DJ_NI mmas on the fragments a and b,
 *                         into dj_c; with DJ_KIND 3 three each into dj_p, the small halves'
 *                         products (as with b, a with bs) first, so they are not lost
 *                         against the big one
 *   dj_acc_fold()         dj_c += dj_p, and dj_p to zero (DJ_KIND 3: the tensor cores' fp32
 *                         accumulation rounds less carefully than an FADD, so over a long K
 *                         each tile's products are summed apart and then added)
 *   dj_acc_take(v)        v = the first DJ_NI * 4 floats of dj_c (an mi's), the rest moved
 *                         down as far
 *   dj_acc_read(v), dj_acc_write(v)   all of dj_c, as v[mi][ni][e] (split-K's sums) */
static void emit_accumulators(dnnjit__strbuf_t *sb, kind_t kind, int mi_count, int ni_count)
{
    static const char *const mma[] = {
        [KIND_F16] = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        [KIND_BF16] = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        [KIND_TF32] = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        [KIND_F32X3] = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    };
    bool split = kind == KIND_F32X3;
    int count = mi_count * ni_count * 4;
    dnnjit__strbuf_t text = {0};

    dnnjit__asm_line(&text, ".reg .f32 dj_c<%d>;", count);
    if (split)
        dnnjit__asm_line(&text, ".reg .f32 dj_p<%d>;", count);
    dnnjit__emit_asm_function(sb, "dj_acc_declare()", &text, "");

    for (int i = 0; i < count; i++) {
        dnnjit__asm_line(&text, "mov.b32 dj_c%d, 0;", i);
        if (split)
            dnnjit__asm_line(&text, "mov.b32 dj_p%d, 0;", i);
    }
    dnnjit__emit_asm_function(sb, "dj_acc_clear()", &text, "");

    /* One asm statement per mma: as one statement of all of a k-step's, the 4096^3 bf16
     * kernel's main loop compiled to nearly the same SASS but ran 4% slower on the H200
     * (380 us against 363, which one statement per mma matched). */
    dnnjit__sb_printf(sb,
                      "__device__ __forceinline__ void dj_mma_kstep(const unsigned (&a)[%d][4], const unsigned "
                      "(&b)[%d][2], const unsigned (&as)[%d][4], const unsigned (&bs)[%d][2])\n{\n",
                      mi_count, ni_count, split ? mi_count : 1, split ? ni_count : 1);
    for (int mi = 0; mi < mi_count; mi++)
        for (int ni = 0; ni < ni_count; ni++) {
            int c = 4 * (mi * ni_count + ni);
            const char *d = split ? "dj_p" : "dj_c";
            char acc[96];
            snprintf(acc, sizeof acc, "{%s%d, %s%d, %s%d, %s%d}", d, c, d, c + 1, d, c + 2, d, c + 3);
            for (int product = split ? 0 : 2; product < 3; product++) {
                const char *an = product == 0 ? "as" : "a", *bn = product == 1 ? "bs" : "b";
                dnnjit__sb_printf(sb,
                                  "    asm volatile(\"%s %s, {%%0, %%1, %%2, %%3}, {%%4, %%5}, %s;\\n\"\n"
                                  "                 :: \"r\"(%s[%d][0]), \"r\"(%s[%d][1]), \"r\"(%s[%d][2]), "
                                  "\"r\"(%s[%d][3]), \"r\"(%s[%d][0]), \"r\"(%s[%d][1]));\n",
                                  mma[kind], acc, acc, an, mi, an, mi, an, mi, an, mi, bn, ni, bn, ni);
            }
        }
    dnnjit__sb_append(sb, "}\n");

    for (int i = 0; split && i < count; i++)
        dnnjit__asm_line(&text, "add.f32 dj_c%d, dj_c%d, dj_p%d;\\nmov.b32 dj_p%d, 0;", i, i, i, i);
    dnnjit__emit_asm_function(sb, "dj_acc_fold()", &text, "");

    dnnjit__reg_moves_t moves = {.reg = "dj_c", .count = count, .n = ni_count * 4, .shift = true};
    char head[96];
    snprintf(head, sizeof head, "dj_acc_take(float (&v)[%d])", ni_count * 4);
    dnnjit__emit_reg_moves(sb, head, &moves);
    moves = (dnnjit__reg_moves_t){.reg = "dj_c", .count = count, .n = count, .nested = ni_count};
    snprintf(head, sizeof head, "dj_acc_read(float (&v)[%d][%d][4])", mi_count, ni_count);
    dnnjit__emit_reg_moves(sb, head, &moves);
    moves.write = true;
    snprintf(head, sizeof head, "dj_acc_write(const float (&v)[%d][%d][4])", mi_count, ni_count);
    dnnjit__emit_reg_moves(sb, head, &moves);
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
    const char *tile_type = dnnjit__cuda_type(p.kind == KIND_F16    ? DNNJIT_DATA_TYPE_HALF
                                              : p.kind == KIND_BF16 ? DNNJIT_DATA_TYPE_BFLOAT16
                                                                    : DNNJIT_DATA_TYPE_FLOAT);
    int bk = p.kind >= KIND_TF32 ? kn.tile.bk / 2 : kn.tile.bk;

    dnnjit__strbuf_t sb = {0};
    dnnjit__sb_append(&sb, dnnjit__template("common.cuh"));
    dnnjit__sb_printf(&sb, "\n// ---- generated by the gemm engine for matmul \"%s\" ----\n", p.mm->name);
    dnnjit__sb_printf(&sb, "typedef %s dj_ta;\ntypedef %s dj_tb;\ntypedef %s dj_ma;\ntypedef %s dj_mb;\n", tile_type,
                      tile_type, dnnjit__cuda_type(p.a.t->resolved_type), dnnjit__cuda_type(p.b.t->resolved_type));
    dnnjit__sb_printf(&sb, "constexpr int DJ_KIND = %d;\n", (int)kind);
    if (kn.skinny.warps) {
        dnnjit__sb_printf(&sb, "constexpr int DJ_SKINNY_KS = %d, DJ_SKINNY_U = %d;\n", kn.skinny.warps,
                          kn.skinny.loads);
    } else {
        dnnjit__sb_printf(&sb,
                          "constexpr int DJ_BM = %d, DJ_BN = %d, DJ_BK = %d, DJ_WM = %d, DJ_WN = %d, DJ_STAGES = %d, "
                          "DJ_SPLITK = %d, DJ_GROUP_M = %d, DJ_MIN_BLOCKS = %d;\n",
                          kn.tile.bm, kn.tile.bn, bk, kn.tile.wm, kn.tile.wn, kn.tile.stages, kn.split, GROUP_M,
                          kn.tile.min_blocks);
        dnnjit__sb_printf(&sb, "constexpr int DJ_EPI_ROWS = %d, DJ_EPI_PITCH = %d;\n", EPI_ROWS,
                          kn.tile.wn + EPI_PAD);
        emit_accumulators(&sb, kind, kn.tile.wm / 16, kn.tile.wn / 8);
    }
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
    /* The tiled kernel calls dj_epilogue from one rolled loop (see its staged epilogue), the
     * skinny one from two places for one pair of columns each. */
    dnnjit__sb_append(&sb, "#define DJ_EPILOGUE_INLINING __forceinline__\n");
    dnnjit__emit_group_element(&sb, g, grp, k, p.c, p.mm->out[0], DNNJIT__ELEMENT_AT_COORDS);
    for (int slot = 0; slot < 2; slot++)
        if (prologue[slot])
            dnnjit__emit_prologue(&sb, g, grp, k, slot, DNNJIT__ELEMENT_AT_COORDS);
    dnnjit__sb_append(&sb, dnnjit__template(kn.skinny.warps ? "gemm_skinny.cuh" : "gemm_mma.cuh"));
    k->source = dnnjit__sb_take(&sb);
    if (!k->source)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "gemm engine: out of memory generating source");
    if (kn.skinny.warps) {
        /* One CTA per 8 columns of C and batch entry; its shared memory is static. */
        snprintf(k->entry, sizeof k->entry, "dj_gemm_skinny");
        k->grid[0] = (unsigned)ceil_div(p.n, 8);
        k->grid[1] = (unsigned)p.batch;
        k->block[0] = (unsigned)(32 * kn.skinny.warps);
        k->shared_bytes = 0;
    } else {
        snprintf(k->entry, sizeof k->entry, "dj_gemm");
        k->grid[0] = (unsigned)tiles_of(&p, &kn);
        k->grid[1] = (unsigned)(p.batch * kn.split);
        k->block[0] = (unsigned)threads_of(&kn);
        k->shared_bytes = (unsigned)smem_bytes(&p, &kn);
    }
    k->grid[2] = 1;
    k->block[1] = k->block[2] = 1;
    k->compile_option = DNNJIT__PTXAS_O2;
    return DNNJIT_STATUS_SUCCESS;
}

const dnnjit__engine_t dnnjit__engine_gemm = {
    .name = "gemm",
    .knob_count = TILED_KNOBS + SKINNY_KNOBS,
    .supports = gemm_supports,
    .knob_name = gemm_knob_name,
    .cost = gemm_cost,
    .rule = gemm_rule,
    .notes = gemm_notes,
    .generate = gemm_generate,
};
