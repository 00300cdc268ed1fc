/* The Hopper GEMM engine (sm_90a): a matmul with its fused pointwise epilogue as one
 * persistent, warp-specialised kernel (src/kernels/gemm_wgmma.cuh) in which a producer
 * warpgroup loads operand tiles with TMA and two consumer warpgroups multiply them with
 * wgmma. fp16 and bf16 inputs, or fp8 (E4M3 and E5M2, in any pair), with fp32
 * accumulation (for fp8, each K tile's sums added to float registers, as wgmma's own
 * accumulation keeps fewer bits; fp8 also with fp16 accumulation, for HALF compute);
 * per-tensor scales of fp8 operands are pointwise multiplications of the product, which
 * the fused epilogue applies. fp32 inputs multiply as TF32 (TMA rounds each value to
 * nearest as it loads it) in the knobs named _tf32, noted REDUCED_PRECISION, which mode A
 * ranks after the exact plans of the sm_80 engine. Each 16-bit operand is read in the order
 * it has in memory (K-major, or M/N-major through wgmma's transpose bits), so transposes
 * cost nothing; wgmma reads fp8 and TF32 operands K-major only, so the kernel first copies
 * an M- or N-major one transposed into its scratch. Sizes and the batch layout are compiled in; the
 * buffers' addresses reach the kernel in tensor maps that execute encodes
 * (dnnjit__kernel_t.tma). TMA needs a contiguous
 * inner axis and 16-byte strides; the sm_80 engine takes the other layouts. Knobs: CTA tile,
 * pipeline stages, the axis along which the tile order is grouped, and a variant: the
 * epilogue straight from the accumulator registers, or staged through shared memory so that
 * each warp's stores cover whole row pieces, or staged in clusters of two CTAs (tiles
 * stacked along M) that share B's tile through TMA multicast, or staged with K split two,
 * four or eight ways (problems of too few tiles to fill the SMs), the split of each tile
 * that finishes last adding the others' partial sums from the scratch. A 16-bit K-major A
 * whose rows TMA cannot address may also be read in place by row class instead of copied
 * (the _areg knobs, knob_t.areg), or with an N-major B in tiles of one row class, B's K
 * shifted to match (the _ashift knobs, knob_t.shifted), whose TMA-store ones store C by row
 * class too, whatever its rows' alignment. */
#include "engine/engine.h"

#include "codegen/codegen.h"
#include "codegen/templates.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tile widths, in families: each family's knobs follow the last family's, so that a
 * width added later (192, for fp8 with float accumulation) leaves the knob numbers of
 * serialized plans and remembered autotune choices as they were. */
static const int TILE_N[] = {128, 256, 192};
static const int FAMILY_WIDTHS[] = {2, 1};
static const int STAGES[] = {3, 4, 5};

enum {
    WIDTH_COUNT = sizeof TILE_N / sizeof TILE_N[0],
    FAMILY_COUNT = sizeof FAMILY_WIDTHS / sizeof FAMILY_WIDTHS[0],
    STAGE_COUNT = sizeof STAGES / sizeof STAGES[0],
    /* Within a family, the knobs of one variant per width: stage counts, each with the two
     * raster orders. Then the variants follow each other (the staged ones after the
     * direct, for the same reason as the families). */
    WIDTH_KNOBS = STAGE_COUNT * 2,
    VARIANT_DIRECT = 0,
    VARIANT_STAGED = 1,
    VARIANT_CLUSTER = 2,
    /* Then the staged epilogue with K split 2, 4 and 8 ways. */
    VARIANT_SPLIT2 = 3,
    VARIANT_COUNT = 6,
    /* The knobs of the families and variants above; after them, those whose epilogue goes
     * through TMA stores: each width, stage count and raster order, alone then in clusters
     * of two. */
    BASE_KNOBS = WIDTH_COUNT * WIDTH_KNOBS * VARIANT_COUNT,
    STORE_KNOBS = WIDTH_COUNT * WIDTH_KNOBS * 2,
    /* Then every knob above again, for FLOAT inputs multiplied as TF32. */
    EXACT_KNOBS = BASE_KNOBS + STORE_KNOBS,
    /* Then the base knobs again with A loaded by row class into registers (knob_t.areg). */
    AREG_KNOBS = BASE_KNOBS,
    /* Then the base knobs again with A in tiles of one row class (knob_t.shifted). */
    SHIFT_KNOBS = BASE_KNOBS,
    /* Then the TMA-store knobs with A in tiles of one row class, which store C by row class
     * (problem_t.out_by_class). */
    SHIFT_STORE_KNOBS = STORE_KNOBS,
    /* A tile's rows of one row class (row % A_CLASSES) under knob_t.areg, and the K elements
     * of each row's box: a K tile and the 8 before it, the most a class's map starts early. */
    A_CLASSES = 8,
    CLASS_ROWS = 16,
    CLASS_SLACK = 8,
    /* A split walks at least this many K tiles: fewer would spend more on the partial
     * sums than they save. */
    MIN_SPLIT_KTILES = 4,
    TILE_M = 128,
    /* A K tile is one 128-byte swizzle row: 64 16-bit elements, 128 fp8 or 32 fp32 ones. */
    TILE_K_BYTES = 128,
    /* The streaming multiprocessors of an H100/H200, one resident CTA each. */
    SM_COUNT = 132,
    /* A K extent below which a problem of few tiles goes to the sm_80 engine (sm90_defer). */
    SHORT_K = 1024,
    /* Tile rows (or columns) walked together, for L2 locality. */
    GROUP = 8,
    THREADS = 384,
    /* Batch axes a tensor map holds besides its two matrix axes (TMA has five). */
    MAX_MAP_BATCH = DNNJIT__MAX_TMA_RANK - 2,
    /* The staged epilogue: each of the eight consumer warps owns 16 rows of EPI_COLS floats
     * in shared memory, rows EPI_STRIDE floats apart (8 banks of padding, so that the
     * accumulator fragments' 8-byte stores hit no bank twice). */
    CONSUMER_WARPS = 8,
    EPI_COLS = 32,
    EPI_STRIDE = EPI_COLS + 8,
    /* A box of the TMA-store epilogue: 64 rows of 128 bytes. */
    OUT_BOX_BYTES = 64 * 128,
    /* The widest tile whose consumers hold both wgmma's accumulators and the promoted float
     * sums (96 + 96 registers a thread at 192 columns; 256 columns would need 256, more than
     * setmaxnreg's 232 a consumer). */
    PROMOTE_MAX_BN = 192,
};

/* Opt-in shared memory per block on sm_90. */
#define SMEM_LIMIT (227 * 1024)

typedef struct knob {
    int bn, stages;
    bool raster_n; /* group the tile order along N instead of M */
    bool staged;   /* the epilogue goes through shared memory */
    int cluster;   /* CTAs per cluster, sharing B's tile (1 or 2) */
    int splits;    /* split-K: the K splits of each tile */
    bool tma_store; /* the epilogue goes through shared memory and TMA stores */
    bool tf32;      /* FLOAT inputs, multiplied as TF32 */
    /* A 16-bit K-major A whose rows TMA cannot address, read in place by row class instead
     * of copied: the rows r with r % A_CLASSES == c start the same number of elements,
     * shift(c) = c * outer_stride % 8, past a 16-byte boundary (the buffer being 16-byte
     * aligned and the batch strides 16-byte multiples), and every A_CLASSES-th row is a
     * 16-byte multiple apart. So class c has a tensor map of its own (class_map) from the
     * 16-byte boundary before row c, whose boxes hold each row's K tile shifted by shift(c)
     * elements within CLASS_SLACK more; each consumer warp multiplies the rows of one class,
     * loading its fragments from the boxes into registers, which is where wgmma takes A from
     * without the shared-memory layout TMA cannot make of such rows. */
    bool areg;
    /* The same A with an N-major B, read in place in tiles of one row class each: class c's
     * map (class_map) loads its rows in whole K tiles from the 16-byte boundary before row
     * c, swizzled as any K-major tile, so that each box row holds A's row from shift(c)
     * elements before its K tile; B's K tile is loaded from shift(c) rows before its own, TMA
     * filling rows before B's first with zeros. wgmma then reads both from shared memory as
     * for a copied A. C's rows follow the classes (gemm_wgmma.cuh's dj_tile_rows). */
    bool shifted;
} knob_t;

static knob_t decode(int knob)
{
    if (knob >= 2 * EXACT_KNOBS + AREG_KNOBS + SHIFT_KNOBS) {
        knob_t kn = decode(knob - (2 * EXACT_KNOBS + AREG_KNOBS + SHIFT_KNOBS) + BASE_KNOBS);
        kn.shifted = true;
        return kn;
    }
    if (knob >= 2 * EXACT_KNOBS + AREG_KNOBS) {
        knob_t kn = decode(knob - 2 * EXACT_KNOBS - AREG_KNOBS);
        kn.shifted = true;
        return kn;
    }
    if (knob >= 2 * EXACT_KNOBS) {
        knob_t kn = decode(knob - 2 * EXACT_KNOBS);
        kn.areg = true;
        return kn;
    }
    if (knob >= EXACT_KNOBS) {
        knob_t kn = decode(knob - EXACT_KNOBS);
        kn.tf32 = true;
        return kn;
    }
    if (knob >= BASE_KNOBS) {
        int store = (knob - BASE_KNOBS) % (WIDTH_COUNT * WIDTH_KNOBS);
        return (knob_t){TILE_N[store / WIDTH_KNOBS], STAGES[store / 2 % STAGE_COUNT], store % 2 == 1, false,
                        (knob - BASE_KNOBS) / (WIDTH_COUNT * WIDTH_KNOBS) ? 2 : 1, 1, true, false, false, false};
    }
    int first_width = 0, family = 0;
    while (family + 1 < FAMILY_COUNT && knob >= FAMILY_WIDTHS[family] * WIDTH_KNOBS * VARIANT_COUNT) {
        knob -= FAMILY_WIDTHS[family] * WIDTH_KNOBS * VARIANT_COUNT;
        first_width += FAMILY_WIDTHS[family++];
    }
    int direct_knobs = FAMILY_WIDTHS[family] * WIDTH_KNOBS;
    int direct = knob % direct_knobs, variant = knob / direct_knobs;
    return (knob_t){TILE_N[first_width + direct / WIDTH_KNOBS], STAGES[direct / 2 % STAGE_COUNT], direct % 2 == 1,
                    variant != VARIANT_DIRECT, variant == VARIANT_CLUSTER ? 2 : 1,
                    variant >= VARIANT_SPLIT2 ? 2 << (variant - VARIANT_SPLIT2) : 1, false, false, false, false};
}

/* One operand seen as a [rows, K] matrix (A: rows = M; B: rows = N) and its tensor map:
 * the contiguous axis innermost, then the other matrix axis, then the batch axes of C
 * along which the operand does not broadcast (the coordinate of map axis i is
 * batch / batch_div[i] % batch_dim[i]). */
typedef struct operand {
    const dnnjit__tensor_t *t;
    int esize; /* bytes per element */
    int64_t rows;
    bool kmajor;
    int64_t outer_stride; /* elements between rows (K-major) or K steps (MN-major) */
    int batch_axes;
    int64_t batch_dim[MAX_MAP_BATCH], batch_div[MAX_MAP_BATCH], batch_stride[MAX_MAP_BATCH];
    /* Strides TMA cannot take (not 16-byte multiples, or not positive): the kernel first
     * copies the operand into its scratch, `inner` contiguous elements per line, lines
     * `pitch` bytes apart (128-byte multiples, so that every 128-byte row of a TMA box is one
     * whole L2 line), `outer` lines per batch entry and `lines` in
     * all, from byte `offset` on; the tensor map reads the copy. The tensor's bytes span
     * [span_lo, span_hi) around its pointer (the copy may read any of them). TMA could read
     * such rows in place only through views of every 8th row (whose stride is a 16-byte
     * multiple), each from an aligned address up to 14 bytes before its rows' starts, with
     * boxes that begin off a 16-byte boundary: on the H200 such a load stopped the kernel
     * with an illegal instruction (with the 128-byte swizzle or none), so they are copied. */
    bool staged;
    int64_t inner, outer, lines, pitch, offset, span_lo, span_hi;
    /* Staged transposed (an fp8 or TF32 operand whose M or N axis is contiguous, which
     * wgmma cannot read): the copy's lines are M or N indices of `inner` = K elements, the
     * operand's elements `outer_stride` apart along K, its lines one element apart; the copy
     * is K-major (kmajor). */
    bool transposed;
} operand_t;

typedef struct problem {
    const dnnjit__node_t *mm;
    const dnnjit__tensor_t *c;
    int64_t m, n, k, batch;
    int esize;  /* bytes per element of A and B: 2, 1 for fp8, 4 for TF32 */
    bool acc16; /* fp8 operands accumulated in halves (HALF compute), wgmma's f16 accumulator */
    /* fp8 operands accumulated in floats: each K tile's wgmma sums are added to float
     * registers (gemm_wgmma.cuh's DJ_PROMOTE), which wgmma's own accumulation over the
     * whole K would leave short of a float's precision. */
    bool promote;
    operand_t a, b;
    /* The group's one output as TMA stores it (the TMA-store epilogue), when `storable`;
     * `store_why` says why not otherwise. */
    operand_t out;
    dnnjit_tensor_t out_id;
    bool storable;
    /* Under knob_t.shifted the tiles' rows are one row class's, 8 apart, which the output's
     * one map cannot store as a box: each class has a map of its own (store_class_map), so
     * that the output's rows need not start on 16-byte boundaries either. */
    bool out_by_class;
    char store_why[160];
    /* The scratch, bytes in all or 0: the grid barrier's counter (staging), split-K's
     * arrival counters (one per tile, from byte `counters`) and partial tiles (from byte
     * `partials`), then the staged copies; execute zeroes its first `zeroed` bytes. */
    int64_t scratch, counters, partials, zeroed;
} problem_t;

/* K elements per tile. */
static int tile_k(const problem_t *p)
{
    return TILE_K_BYTES / p->esize;
}

/* Describes A (is_b false: axes [M, K]) or B (axes [K, N], seen as [N, K]) for TMA, staged
 * when its strides are ones TMA cannot take, or transposed when it is M- or N-major and
 * `kmajor_only` (fp8 and TF32, which wgmma reads K-major only); false with `why` when the
 * engine cannot read it at all. */
static bool operand_of(const dnnjit__tensor_t *t, const dnnjit__tensor_t *c, bool is_b, int esize, bool kmajor_only,
                       operand_t *o, char *why, size_t why_size)
{
    *o = (operand_t){.t = t, .esize = esize};
    const char *name = is_b ? "B" : "A";
    int nd = t->ndim;
    int row_axis = is_b ? nd - 1 : nd - 2, k_axis = is_b ? nd - 2 : nd - 1;
    o->rows = t->dim[row_axis];
    /* A stride along an axis of one element never moves; calling it 1 lets either axis be
     * the contiguous one. */
    int64_t srows = o->rows == 1 ? 1 : t->stride[row_axis];
    int64_t sk = t->dim[k_axis] == 1 ? 1 : t->stride[k_axis];
    int64_t outer_extent;
    if (sk == 1) {
        o->kmajor = true;
        o->outer_stride = srows;
        outer_extent = o->rows;
    } else if (srows == 1) {
        o->outer_stride = sk;
        outer_extent = t->dim[k_axis];
    } else {
        snprintf(why, why_size, "%s has neither its K nor its %s axis contiguous, which TMA needs", name,
                 is_b ? "N" : "M");
        return false;
    }
    o->inner = o->kmajor ? t->dim[k_axis] : o->rows;
    o->outer = o->lines = outer_extent;
    o->staged = outer_extent > 1 && (o->outer_stride <= 0 || o->outer_stride * esize % 16 != 0);
    if (!o->kmajor && kmajor_only) {
        o->transposed = o->staged = o->kmajor = true;
        o->inner = t->dim[k_axis];
        o->outer = o->lines = o->rows;
    }
    /* C's batch axes, innermost first, right-aligned with t's. */
    int64_t div = 1;
    for (int i = c->ndim - 3; i >= 0; i--) {
        int ta = i - (c->ndim - nd);
        int64_t stride = ta >= 0 && t->dim[ta] != 1 ? t->stride[ta] : 0;
        if (c->dim[i] > 1 && stride != 0) {
            o->staged |= stride < 0 || stride * esize % 16 != 0;
            if (o->batch_axes == MAX_MAP_BATCH) {
                snprintf(why, why_size, "%s has more than %d batch axes, more than a tensor map holds", name,
                         MAX_MAP_BATCH);
                return false;
            }
            o->batch_dim[o->batch_axes] = c->dim[i];
            o->batch_div[o->batch_axes] = div;
            o->batch_stride[o->batch_axes] = stride;
            o->lines *= c->dim[i];
            o->batch_axes++;
        }
        div *= c->dim[i];
    }
    o->pitch = (o->inner * esize + 127) / 128 * 128;
    for (int i = 0; i < nd; i++) {
        int64_t reach = (t->dim[i] - 1) * t->stride[i] * esize;
        if (reach < 0)
            o->span_lo += reach;
        else
            o->span_hi += reach;
    }
    o->span_hi += esize;
    return true;
}

static bool is_fp8(dnnjit_data_type_t t)
{
    return t == DNNJIT_DATA_TYPE_FP8_E4M3 || t == DNNJIT_DATA_TYPE_FP8_E5M2;
}

/* Tiles per batch entry, a cluster's tile past M included; under knob_t.shifted each row
 * class's tiles (the first M % A_CLASSES classes have one row more than the others). */
static int64_t tiles_of(const problem_t *p, const knob_t *kn)
{
    int64_t tiles_m = (p->m + TILE_M - 1) / TILE_M;
    if (kn->shifted) {
        int64_t hi = (p->m + A_CLASSES - 1) / A_CLASSES, lo = p->m / A_CLASSES, classes_hi = p->m % A_CLASSES;
        tiles_m = classes_hi * ((hi + TILE_M - 1) / TILE_M) + (A_CLASSES - classes_hi) * ((lo + TILE_M - 1) / TILE_M);
    }
    int64_t items_m = (tiles_m + kn->cluster - 1) / kn->cluster;
    return items_m * kn->cluster * ((p->n + kn->bn - 1) / kn->bn);
}

/* The persistent grid's work items: every split of every tile of every batch entry. */
static int64_t work_items(const problem_t *p, const knob_t *kn)
{
    return p->batch * tiles_of(p, kn) * kn->splits;
}

/* Whether splitting K kn->splits ways can pay; false with `why` when not: the tiles must
 * leave SMs idle even split half as many ways, and each split must walk MIN_SPLIT_KTILES or
 * more K tiles. */
static bool split_pays(const problem_t *p, const knob_t *kn, char *why, size_t why_size)
{
    int64_t tiles = p->batch * tiles_of(p, kn), k_tiles = (p->k + tile_k(p) - 1) / tile_k(p);
    if (tiles * (kn->splits / 2) >= SM_COUNT) {
        if (why)
            snprintf(why, why_size, "split-K %d ways: %lld tiles split %d ways already fill the %d SMs", kn->splits,
                     (long long)tiles, kn->splits / 2, SM_COUNT);
        return false;
    }
    if (k_tiles < MIN_SPLIT_KTILES * kn->splits) {
        if (why)
            snprintf(why, why_size, "split-K %d ways: K's %lld tiles of %d would leave a split fewer than %d",
                     kn->splits, (long long)k_tiles, tile_k(p), MIN_SPLIT_KTILES);
        return false;
    }
    return true;
}

/* Whether every batch stride of operand o is a positive multiple of 8 elements of 2 bytes,
 * which row classes need (each class's rows a 16-byte multiple apart in every batch entry);
 * when not, the stride at fault in `stride`. */
static bool class_batch_strides(const operand_t *o, int64_t *stride)
{
    for (int i = 0; i < o->batch_axes; i++)
        if (o->batch_stride[i] <= 0 || o->batch_stride[i] * 2 % 16 != 0) {
            *stride = o->batch_stride[i];
            return false;
        }
    return true;
}

/* Under knob_t.areg or knob_t.shifted: A read by row class instead of copied (no longer
 * staged); false with `why` when A (or, shifted, B or the knob) is not one for it. */
static bool by_class_of(problem_t *p, const knob_t *kn, char *why, size_t why_size)
{
    operand_t *a = &p->a;
    const char *plans = kn->shifted ? "_ashift" : "_areg";
    if (p->esize != 2) {
        snprintf(why, why_size, "the %s plans take 16-bit A, not %s", plans, dnnjit_data_type_name(a->t->resolved_type));
        return false;
    }
    if (!a->kmajor || a->outer_stride <= 0) {
        snprintf(why, why_size, "the %s plans take an A whose K axis is contiguous and whose rows go forward", plans);
        return false;
    }
    /* (A of one row is never copied: TMA reads it in place whatever its stride.) */
    if (!a->staged || a->outer_stride * 2 % 16 == 0) {
        snprintf(why, why_size, "TMA reads A's rows (%lld of them, %lld elements apart) in place; the %s plans are "
                 "for rows it cannot address", (long long)a->rows, (long long)a->outer_stride, plans);
        return false;
    }
    int64_t stride = 0;
    if (!class_batch_strides(a, &stride)) {
        snprintf(why, why_size, "A's batch stride of %lld elements is not a positive multiple of 8, which the "
                 "%s plans' row classes need", (long long)stride, plans);
        return false;
    }
    /* TMA loads a K-major B's tile only from a K coordinate on a 16-byte boundary (see
     * operand_t.staged), and shift(c) is not one. */
    if (kn->shifted && p->b.kmajor) {
        snprintf(why, why_size, "the _ashift plans shift B's K rows, which TMA does only for a B whose N axis is "
                 "contiguous; B's K axis is");
        return false;
    }
    if (kn->shifted && kn->cluster > 1) {
        snprintf(why, why_size, "the _ashift plans' tiles stacked along M may be of two row classes, whose B tiles "
                 "differ: no clusters");
        return false;
    }
    a->staged = false;
    return true;
}

/* Whether an operand's strides are ones TMA cannot take, so that the kernel copies it. */
static bool staging(const problem_t *p)
{
    return p->a.staged || p->b.staged;
}

static int64_t round256(int64_t bytes)
{
    return (bytes + 255) / 256 * 256;
}

/* For a TMA-store knob, whether the group's output can leave through TMA stores
 * (p->storable and p->out, else p->store_why): the group's one output, 16-bit, of C's
 * shape, its rows contiguous and whole 16-byte pieces and its other strides ones TMA takes;
 * under knob_t.shifted, stored by row class (p->out_by_class), rows that go forward, N >= 16
 * elements long (each class's holding a whole 16-byte piece), at any stride, and batch
 * strides that are multiples of 8. Other knobs never store through TMA and leave
 * p->storable false. */
static void store_of(dnnjit_graph_t g, const dnnjit__group_t *grp, const knob_t *kn, problem_t *p)
{
    const dnnjit__tensor_t *t = dnnjit__tensor(g, grp->outputs[0]);
    char why[200];
    int64_t stride = 0;
    p->out_id = grp->outputs[0];
    p->storable = p->out_by_class = false;
    if (!kn->tma_store)
        return;
    if (grp->output_count != 1)
        snprintf(p->store_why, sizeof p->store_why, "the group writes %lld outputs, and TMA stores take one",
                 (long long)grp->output_count);
    else if (t->resolved_type != DNNJIT_DATA_TYPE_HALF && t->resolved_type != DNNJIT_DATA_TYPE_BFLOAT16)
        snprintf(p->store_why, sizeof p->store_why, "output \"%s\" is %s, and TMA stores take HALF or BFLOAT16",
                 t->name, dnnjit_data_type_name(t->resolved_type));
    else if (t->ndim != p->c->ndim || memcmp(t->dim, p->c->dim, sizeof t->dim[0] * (size_t)t->ndim) != 0)
        snprintf(p->store_why, sizeof p->store_why, "output \"%s\" is not of the product's shape", t->name);
    else if (kn->shifted) {
        if (!operand_of(t, p->c, false, 2, false, &p->out, why, sizeof why) || !p->out.kmajor ||
            p->out.outer_stride <= 0)
            snprintf(p->store_why, sizeof p->store_why, "output \"%s\" has rows that are not contiguous or do not go "
                     "forward, which TMA stores by row class need", t->name);
        else if (p->n < 16)
            snprintf(p->store_why, sizeof p->store_why, "output \"%s\" has rows of %lld elements, and TMA stores by row "
                     "class take rows of 16 or more", t->name, (long long)p->n);
        else if (!class_batch_strides(&p->out, &stride))
            snprintf(p->store_why, sizeof p->store_why, "output \"%s\" has a batch stride of %lld elements, not a "
                     "positive multiple of 8, which TMA stores by row class need", t->name, (long long)stride);
        else {
            p->storable = p->out_by_class = true;
            p->out.staged = false;
        }
    } else if (!operand_of(t, p->c, false, 2, false, &p->out, why, sizeof why) || !p->out.kmajor || p->out.staged)
        snprintf(p->store_why, sizeof p->store_why, "output \"%s\" has rows that are not contiguous, or strides "
                 "that are not multiples of 16 bytes, which TMA stores need", t->name);
    /* Found on the H200: TMA stores a box's row in whole 16-byte pieces, those past the end
     * of a map's rows included, so a row whose end lies inside a piece would have the
     * piece's rest (the padding after it, in a view of wider rows) overwritten with zeros. */
    else if (p->n % 8 != 0)
        snprintf(p->store_why, sizeof p->store_why, "output \"%s\" has rows of %lld elements, which end inside a "
                 "16-byte piece that TMA would store whole", t->name, (long long)p->n);
    else
        p->storable = true;
}

/* The problem of the group's matmul under knob kn (which lays out the scratch); false with
 * `why` when this engine cannot take it. */
static bool describe(dnnjit_graph_t g, const dnnjit__group_t *grp, const knob_t *kn, problem_t *p, char *why,
                     size_t why_size)
{
    if (grp->kind != DNNJIT__GROUP_GEMM) {
        snprintf(why, why_size, "not a matmul group");
        return false;
    }
    /* TMA copies memory as it is; an operand computed by a prologue is not in memory. */
    for (int slot = 0; slot < 2; slot++)
        if (dnnjit__group_has_prologue(g, grp, slot)) {
            snprintf(why, why_size, "operand %s is computed by a fused prologue, which TMA cannot load",
                     slot ? "B" : "A");
            return false;
        }
    const dnnjit__node_t *mm = &g->nodes[grp->first_node];
    const dnnjit__tensor_t *a = dnnjit__tensor(g, mm->in[0]), *b = dnnjit__tensor(g, mm->in[1]);
    const dnnjit__tensor_t *c = dnnjit__tensor(g, mm->out[0]);
    bool fp8 = is_fp8(a->resolved_type) && is_fp8(b->resolved_type);
    bool fp32 = a->resolved_type == DNNJIT_DATA_TYPE_FLOAT && b->resolved_type == DNNJIT_DATA_TYPE_FLOAT;
    if (!fp8 && !fp32 && (a->resolved_type != b->resolved_type ||
                          (a->resolved_type != DNNJIT_DATA_TYPE_HALF && a->resolved_type != DNNJIT_DATA_TYPE_BFLOAT16))) {
        snprintf(why, why_size, "the sm_90 GEMM takes A and B both HALF, both BFLOAT16, both FP8 (E4M3 or E5M2) or "
                 "both FLOAT (as TF32); A is %s, B is %s", dnnjit_data_type_name(a->resolved_type),
                 dnnjit_data_type_name(b->resolved_type));
        return false;
    }
    if (fp32 && !kn->tf32) {
        snprintf(why, why_size, "FLOAT inputs multiply as TF32, in the _tf32 plans (noted REDUCED_PRECISION)");
        return false;
    }
    if (!fp32 && kn->tf32) {
        snprintf(why, why_size, "a _tf32 plan takes FLOAT inputs, and A and B are %s%s%s",
                 dnnjit_data_type_name(a->resolved_type), a->resolved_type == b->resolved_type ? "" : " and ",
                 a->resolved_type == b->resolved_type ? "" : dnnjit_data_type_name(b->resolved_type));
        return false;
    }
    dnnjit_data_type_t compute = dnnjit__node_compute_type(g, mm);
    if (compute != DNNJIT_DATA_TYPE_FLOAT && !(fp8 && compute == DNNJIT_DATA_TYPE_HALF)) {
        snprintf(why, why_size, "the sm_90 GEMM accumulates in FLOAT (or in HALF with fp8 operands), not %s",
                 dnnjit_data_type_name(compute));
        return false;
    }
    p->acc16 = compute == DNNJIT_DATA_TYPE_HALF;
    p->promote = fp8 && !p->acc16;
    p->mm = mm;
    p->c = c;
    p->m = c->dim[c->ndim - 2];
    p->n = c->dim[c->ndim - 1];
    p->k = a->dim[a->ndim - 1];
    p->batch = dnnjit__numel(c->ndim - 2, c->dim);
    p->esize = fp8 ? 1 : fp32 ? 4 : 2;
    /* Tile coordinates are 32-bit in the kernel and in TMA. */
    if (p->m > INT32_MAX - 256 || p->n > INT32_MAX - 256 || p->k > INT32_MAX - 256) {
        snprintf(why, why_size, "M, N or K exceeds the 32-bit coordinates of TMA");
        return false;
    }
    if (!operand_of(a, c, false, p->esize, p->esize != 2, &p->a, why, why_size) ||
        !operand_of(b, c, true, p->esize, p->esize != 2, &p->b, why, why_size))
        return false;
    if ((kn->areg || kn->shifted) && !by_class_of(p, kn, why, why_size))
        return false;
    /* The scratch's parts, each 256-byte aligned after the first 256 bytes (the grid
     * barrier's counter). Split-K's partial tiles only where its plans are offered (which
     * also bounds their size). */
    operand_t *ops[2] = {&p->a, &p->b};
    int64_t end = 256, tiles = p->batch * tiles_of(p, kn);
    p->counters = p->partials = 0;
    if (kn->splits > 1 && split_pays(p, kn, NULL, 0)) {
        p->counters = end;
        p->partials = end = round256(end + tiles * 4);
        end += kn->splits * tiles * TILE_M * kn->bn * 4;
    }
    for (int i = 0; i < 2; i++) {
        if (!ops[i]->staged)
            continue;
        if (ops[i]->lines > (INT64_MAX / 4 - end) / ops[i]->pitch) {
            snprintf(why, why_size, "%s is too large to copy into the scratch", i ? "B" : "A");
            return false;
        }
        ops[i]->offset = end;
        end = round256(end + ops[i]->lines * ops[i]->pitch);
    }
    store_of(g, grp, kn, p);
    /* Zeroed: the barrier's word and split-K's counters, all that precedes the partials. */
    p->zeroed = p->partials ? p->partials : staging(p) ? 4 : 0;
    p->scratch = p->zeroed ? end : 0;
    return true;
}

/* Gives the group's tensors their argument slots and, when operands are copied or K is
 * split, the scratch the slot after them (its counters zeroed before each launch); false
 * with `why` when they do not fit. */
static bool kernel_slots(dnnjit_graph_t g, const dnnjit__group_t *grp, const problem_t *p, dnnjit__kernel_t *k,
                         char *why, size_t why_size)
{
    if (!dnnjit__kernel_assign_slots(g, grp, k)) {
        snprintf(why, why_size, "the group touches more tensors or scalars than a kernel takes");
        return false;
    }
    if (p->scratch && k->tensor_count == DNNJIT__MAX_KERNEL_TENSORS) {
        snprintf(why, why_size, "the group's tensors leave no argument slot for the scratch that %s",
                 p->counters ? "split-K needs" : "its staged operands need");
        return false;
    }
    k->scratch_slot = p->scratch ? k->tensor_count : 0;
    k->scratch_bytes = p->scratch;
    k->scratch_zero_bytes = p->zeroed;
    return true;
}

/* Shared memory but for the TMA-store epilogue's buffers: the 1024-byte alignment of the
 * swizzled stages, the stages, two barriers per stage, split-K's verdict word (16 bytes,
 * keeping what follows aligned), then the staged epilogue's rows. */
static int64_t smem_besides_buffers(const knob_t *kn)
{
    return 1024 + (int64_t)kn->stages * ((TILE_M + kn->bn) * TILE_K_BYTES + (kn->areg ? TILE_M * CLASS_SLACK * 2 : 0)) +
           16 * kn->stages + 16 + (kn->staged ? CONSUMER_WARPS * 16 * EPI_STRIDE * 4 : 0);
}

/* The boxes (64 rows of 64 16-bit outputs) in each consumer's TMA-store buffer, which sit
 * after the stages: all of its 64 rows of the tile where shared memory allows, else the most
 * that divide them (the consumer then stores its rows in rounds, each one written after TMA
 * has read the last: four stages of 128x256 leave room for two of its four boxes). */
static int out_boxes(const knob_t *kn)
{
    int boxes = kn->bn / 64;
    for (int d = boxes; d > 1; d--)
        if (boxes % d == 0 && smem_besides_buffers(kn) + 2 * d * OUT_BOX_BYTES <= SMEM_LIMIT)
            return d;
    return 1;
}

static int64_t smem_bytes(const knob_t *kn)
{
    return smem_besides_buffers(kn) + (kn->tma_store ? 2 * out_boxes(kn) * OUT_BOX_BYTES : 0);
}

/* Whether the problem has 64 rows or fewer (a linear layer on a few tokens): its tiles,
 * mostly empty rows, do little but stream B. */
static bool streams_b(const problem_t *p)
{
    return 2 * p->m <= TILE_M;
}

/* The rows of A's box: a problem of 64 rows or fewer loads only the first consumer's 64
 * rows of each A tile (the other consumer has no rows inside M: it multiplies nothing),
 * and TMA does not fill the other 64 with zeros each stage. The kernel derives the same
 * from DJ_M (DJ_A_ROWS). */
static int a_box_rows(const problem_t *p)
{
    return streams_b(p) ? TILE_M / 2 : TILE_M;
}

/* The rows of B's box: in a cluster each CTA loads half of a K-major B tile. */
static int b_box_rows(const knob_t *kn)
{
    return kn->bn / kn->cluster;
}

/* The tensor map of one operand over argument slot `slot` (its copy in the scratch, slot
 * `scratch_slot`, when staged): boxes of one 128-byte row (K elements when K-major, M or N
 * elements otherwise) by box_rows rows or a K tile. fp8 goes as bytes, which TMA copies as
 * they are; fp32 as TF32, which TMA rounds to nearest (wgmma alone would drop the low 13
 * bits of each value, a bias as large as the TF32 product's whole error on sums of
 * positive terms). The output of the TMA-store epilogue is an operand [M, N] whose "K" is N. */
static dnnjit__tma_operand_t tma_of(const problem_t *p, const operand_t *o, int box_rows, int slot, int scratch_slot)
{
    uint64_t esize = (uint64_t)o->esize;
    dnnjit__tma_operand_t t = {.slot = o->staged ? scratch_slot : slot,
                               .offset = o->staged ? (uint64_t)o->offset : 0,
                               .dtype = esize == 1                                       ? DNNJIT__TMA_DTYPE_UINT8
                                        : esize == 4                                       ? DNNJIT__TMA_DTYPE_TFLOAT32
                                        : o->t->resolved_type == DNNJIT_DATA_TYPE_BFLOAT16 ? DNNJIT__TMA_DTYPE_BFLOAT16
                                                                                          : DNNJIT__TMA_DTYPE_FLOAT16,
                               .rank = 2 + o->batch_axes,
                               .swizzle = DNNJIT__TMA_SWIZZLE_128B};
    t.dims[0] = (uint64_t)o->inner;
    t.dims[1] = (uint64_t)(o->kmajor ? o->rows : p->k);
    /* A stride along a single row is never used, but must still be one TMA accepts. */
    t.strides[0] = o->staged ? (uint64_t)o->pitch
                   : t.dims[1] > 1 ? (uint64_t)o->outer_stride * esize
                                   : (t.dims[0] * esize + 15) / 16 * 16;
    t.box[0] = (uint32_t)(TILE_K_BYTES / esize);
    t.box[1] = o->kmajor ? (uint32_t)box_rows : (uint32_t)tile_k(p);
    /* The copy holds the batch entries one after another, innermost axis first. */
    uint64_t copy_stride = (uint64_t)o->pitch * t.dims[1];
    for (int i = 0; i < o->batch_axes; i++) {
        t.dims[2 + i] = (uint64_t)o->batch_dim[i];
        t.strides[1 + i] = o->staged ? copy_stride : (uint64_t)o->batch_stride[i] * esize;
        copy_stride *= (uint64_t)o->batch_dim[i];
        t.box[2 + i] = 1;
    }
    return t;
}

/* Map t over the rows of row class c of 16-bit operand o (rows c, c + A_CLASSES, ...; row 0's
 * for a class without rows, M <= c): their count and stride set; returns the byte offset of
 * the class's first row, from which the caller places the map's start and width. */
static int64_t class_rows(const operand_t *o, int c, dnnjit__tma_operand_t *t)
{
    int64_t row = o->rows > c ? c : 0;
    t->dims[1] = (uint64_t)((o->rows - row + A_CLASSES - 1) / A_CLASSES);
    t->strides[0] = (uint64_t)(A_CLASSES * o->outer_stride * 2);
    return row * o->outer_stride * 2;
}

/* The tensor map of A's row class c (knob_t.areg or knob_t.shifted) over argument slot
 * `slot`: rows c, c + A_CLASSES, ... from the 16-byte boundary at or before row c's start,
 * each shift(c) + K elements long; under knob_t.areg in boxes of CLASS_ROWS rows by a K tile
 * and CLASS_SLACK elements, without swizzle, under knob_t.shifted in A's usual boxes. A class
 * without rows (M <= c) gets row 0's map, which the kernel never loads. */
static dnnjit__tma_operand_t class_map(const problem_t *p, const knob_t *kn, int c, int slot)
{
    dnnjit__tma_operand_t t = tma_of(p, &p->a, kn->areg ? CLASS_ROWS : a_box_rows(p), slot, 0);
    int64_t start = class_rows(&p->a, c, &t);
    t.offset = (uint64_t)(start / 16 * 16);
    t.dims[0] = (uint64_t)(p->k + start % 16 / 2);
    if (kn->areg) {
        t.swizzle = DNNJIT__TMA_SWIZZLE_NONE;
        t.box[0] = (uint32_t)(tile_k(p) + CLASS_SLACK);
    }
    return t;
}

/* The tensor maps of the operands, in the order of the kernel's parameters: A's (class 0's
 * under knob_t.areg or knob_t.shifted), B's, then the other row classes' (map_a1 .. map_a7);
 * returns how many. */
static int operand_maps(const problem_t *p, const knob_t *kn, int slot_a, int slot_b, int scratch_slot,
                        dnnjit__tma_operand_t *maps)
{
    bool by_class = kn->areg || kn->shifted;
    int n = 0;
    maps[n++] = by_class ? class_map(p, kn, 0, slot_a) : tma_of(p, &p->a, a_box_rows(p), slot_a, scratch_slot);
    maps[n++] = tma_of(p, &p->b, b_box_rows(kn), slot_b, scratch_slot);
    for (int c = 1; by_class && c < A_CLASSES; c++)
        maps[n++] = class_map(p, kn, c, slot_a);
    return n;
}

/* The tensor map of the TMA-store epilogue's output: boxes of 64 rows of 128 bytes. */
static dnnjit__tma_operand_t store_map(const problem_t *p, const dnnjit__kernel_t *k)
{
    return tma_of(p, &p->out, 64, dnnjit__slot_of(k->tensors, k->tensor_count, p->out_id), k->scratch_slot);
}

/* The output's map for row class c (problem_t.out_by_class): rows c, c + A_CLASSES, ... from
 * the first column of row c on a 16-byte boundary (gemm_wgmma.cuh's dj_c_aligned_col) to the
 * last whole 16-byte piece of the row, in the same boxes. TMA would store a piece that the
 * map ends inside whole (on the H200 it wrote zeros over the next row's first columns); the
 * kernel stores the row's last columns directly instead. A class without rows (M <= c) gets
 * row 0's map, which the kernel never stores through. */
static dnnjit__tma_operand_t store_class_map(const problem_t *p, const dnnjit__kernel_t *k, int c)
{
    dnnjit__tma_operand_t t = store_map(p, k);
    int64_t start = class_rows(&p->out, c, &t), ahead = (16 - start % 16) % 16;
    t.offset = (uint64_t)(start + ahead);
    t.dims[0] = (uint64_t)((p->n - ahead / 2) / 8 * 8);
    return t;
}

/* The output's tensor maps for the TMA-store epilogue, in the order of the kernel's
 * parameters (map_c, then by class map_c1 .. map_c7); returns how many. */
static int store_maps(const problem_t *p, const dnnjit__kernel_t *k, dnnjit__tma_operand_t *maps)
{
    if (!p->out_by_class) {
        maps[0] = store_map(p, k);
        return 1;
    }
    for (int c = 0; c < A_CLASSES; c++)
        maps[c] = store_class_map(p, k, c);
    return A_CLASSES;
}

/* Whether both operands' tensor maps (and the output's, for the TMA-store epilogue) are
 * ones cuTensorMapEncodeTiled takes for kernel k (whose slots kernel_slots gave: strides
 * below 2^40 bytes, dimensions below 2^32 elements); `why` names the tensor and the rule
 * otherwise, or why the output cannot be stored by TMA at all. */
static bool maps_valid(const problem_t *p, const knob_t *kn, const dnnjit__kernel_t *k, char *why, size_t why_size)
{
    dnnjit__tma_operand_t maps[DNNJIT__MAX_KERNEL_TMAS];
    int n = operand_maps(p, kn, 0, 0, k->scratch_slot, maps);
    for (int i = 0; i < n; i++) {
        char rule[120];
        if (!dnnjit__tma_operand_valid(&maps[i], k, rule, sizeof rule)) {
            snprintf(why, why_size, "TMA cannot load %s: %s", i == 1 ? "B" : "A", rule);
            return false;
        }
    }
    if (!kn->tma_store)
        return true;
    char rule[120];
    if (!p->storable) {
        snprintf(why, why_size, "the TMA-store epilogue: %s", p->store_why);
        return false;
    }
    n = store_maps(p, k, maps);
    for (int i = 0; i < n; i++)
        if (!dnnjit__tma_operand_valid(&maps[i], k, rule, sizeof rule)) {
            snprintf(why, why_size, "TMA cannot store output \"%s\": %s", p->out.t->name, rule);
            return false;
        }
    return true;
}

static bool sm90_supports(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob, const char *arch, char *why,
                          size_t why_size)
{
    problem_t p;
    char reason[200] = "";
    dnnjit__kernel_t slots = {0};
    knob_t kn = decode(knob);
    if (!arch || strcmp(arch, "sm_90a") != 0)
        snprintf(reason, sizeof reason, "wgmma and setmaxnreg need sm_90a, not %s", arch && *arch ? arch : "no GPU");
    else if (!describe(g, grp, &kn, &p, reason, sizeof reason) ||
             !kernel_slots(g, grp, &p, &slots, reason, sizeof reason) ||
             !maps_valid(&p, &kn, &slots, reason, sizeof reason) ||
             (kn.splits > 1 && !split_pays(&p, &kn, reason, sizeof reason))) {
    } else if (staging(&p) && kn.cluster > 1)
        snprintf(reason, sizeof reason, "%s's strides are not ones TMA takes, and the copy the kernel makes of it is "
                 "not combined with clusters", p.a.staged ? "A" : "B");
    else if (p.promote && kn.bn > PROMOTE_MAX_BN)
        snprintf(reason, sizeof reason, "fp8 with FLOAT compute keeps a second accumulator in float registers, for "
                 "which a %dx%d tile has too few", TILE_M, kn.bn);
    else if (smem_bytes(&kn) > SMEM_LIMIT)
        snprintf(reason, sizeof reason, "the tile needs %lld bytes of shared memory, more than sm_90a has",
                 (long long)smem_bytes(&kn));
    if (*reason && why)
        snprintf(why, why_size, "%s", reason);
    return !*reason;
}

/* The K extent in the name is that of 16-bit operands: a K tile is one 128-byte row, which
 * holds 128 elements of fp8 ones and 32 of fp32 ones. */
static void sm90_knob_name(int knob, char *buf, size_t size)
{
    knob_t kn = decode(knob);
    char split[24] = "";
    if (kn.splits > 1)
        snprintf(split, sizeof split, "_splitk%d", kn.splits);
    snprintf(buf, size, "%dx%dx%d_s%d%s%s%s%s%s%s%s%s", TILE_M, kn.bn, TILE_K_BYTES / 2, kn.stages,
             kn.raster_n ? "_rn" : "", kn.staged ? "_staged" : "", kn.tma_store ? "_tmastore" : "",
             kn.cluster == 2 ? "_mc2" : "", split, kn.tf32 ? "_tf32" : "", kn.areg ? "_areg" : "",
             kn.shifted ? "_ashift" : "");
}

static uint32_t sm90_notes(int knob)
{
    return decode(knob).tf32 ? DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION : 0;
}

/* How much narrower than the widest the tile is: 0 at 256 columns, 0.5 at 192, 1 at 128.
 * A narrower tile reloads its operands more often for the same work. */
static double narrowness(const knob_t *kn)
{
    return (256.0 - kn->bn) / 128.0;
}

/* The share of the persistent grid's tile slots (one per SM per round) that hold a tile of
 * the matrix: a cluster's tile past M takes a slot and does nothing useful (at M = 1 the
 * clustered plans run twice the CTAs of the others on the same work). */
static double wave_efficiency(const problem_t *p, const knob_t *kn)
{
    knob_t alone = *kn;
    alone.cluster = 1;
    int64_t work = work_items(p, kn), useful = work_items(p, &alone);
    int64_t rounds = (work + SM_COUNT - 1) / SM_COUNT;
    return (double)useful / (double)(rounds * SM_COUNT);
}

/* How far each stage count ranks behind the best, from the H200: at 4096^3 bf16 128x256 took
 * 195.9 us with four stages and 197.5 with three; 128x128 213 with four, 224 with five and
 * 273 with three; at 8x4096^3 128x128 took 1910 us with four and 1981 with five. Four hold
 * enough K tiles in flight to cover TMA's latency; a fifth only costs shared memory. But
 * where the work items fit in one round over the SMs, each CTA's K walk is the whole time
 * and the bytes it keeps in flight set its pace, so the deepest pipeline ranks first: split
 * four ways, linear_128x4096x4096 took 16.7 us with five stages, 17.1 with four and 18.8
 * with three, linear_128x4096x14336 42.5, 43.0 and 50.0. Not so where operands are staged:
 * the copy, which runs through the stages' shared memory, took 1000x77x1000 from 43.6 us
 * with four stages to 51.1 with five. */
static double stage_rank(const problem_t *p, const knob_t *kn)
{
    if (!staging(p) && work_items(p, kn) <= SM_COUNT)
        return (5 - kn->stages) * 0.1;
    return kn->stages == 4 ? 0.0 : kn->stages == 5 ? 0.1 : 0.2;
}

/* A tie-breaker below the stage counts', from the H200. For 16-bit operands (and promoted fp8)
 * clusters of two with TMA stores first. Where the tiles come in pairs along M (more than one
 * tile row), these GEMMs run at the H200's power limit (692 W with every variant, sustained),
 * where B crossing from L2 once per pair of tiles leaves power for a higher clock (4096^3 bf16
 * sustained: 1457 MHz clustered against 1424 alone). At 82e8db6, timed as the benchmark times
 * (after 300 ms idle) on 128x256 tiles with four stages, 4096^3 bf16 took 197.4 us clustered
 * against 205.1 alone (twice), fp16 211.0-215.4 against 215.7-218.9, 8192^3 bf16 1533 against
 * 1598, fp16 1660 against 1732, a 4096^3 linear layer 199.6-199.8 against 203.1-203.9. On a few
 * rows (stream_time), where a cluster's second CTA only loads half of B for the first, they ran
 * 0.4-3 us faster than the staged clusters on the same tiles in the H200 sweep at 318facb
 * (16x4096x4096 on 128x128 tiles with four stages: 14.8 against 15.8; 16x14336x4096 on 128x256:
 * 33.6 against 36.0). (At one tile row of more than 64 rows the rule's wave term already
 * charges a cluster for its idle half, and this order only breaks ties.) Otherwise the epilogue
 * through TMA stores first, which leaves the stores to TMA while the next tile's K walk runs
 * (4096^3 bf16 171 us against 181-196 staged in one run, 8192^3 1595-1599 against 1644-1663,
 * 8x4096^3 with bias and relu 1670 against 1704, 8192^3 E4M3 on 128x192 tiles 907-917 against
 * 930-936 staged in clusters); then the staged epilogue (bfdb6ca, 4096^3 bf16: 178 us against
 * cuBLAS's 182; its code needs no call per column pair and no stack copy of the arguments, and
 * its stores cover 64-byte row pieces), then the direct one (196 us), and the other clusters
 * last: staged, they ran as fast as the staged tiles alone once their consumers' remote
 * releases stopped fencing the whole GPU's memory (4096^3 bf16 207.6 us against 204.2, 8192^3
 * 1582.6 against 1583.3, 8192^3 fp8 1053 against 1065). Promoted fp8 on 128x192 tiles is the
 * exception, its clusters ahead of the staged tiles: 8192^3 E4M3 took 941, 959 and 940 us
 * clustered against 957, 977 and 980 alone in three runs (1ed6a7b and two of its drafts); with
 * TMA stores it took 909 and 931 clustered, 907 and 917 alone, in two runs then, but 886-903
 * clustered against 900-920 alone in the benchmark's runs at f4e6468, d91baa9, a491024, 2678c07
 * and cc558de, so its TMA-store clusters rank first too. */
static double variant_rank(const problem_t *p, const knob_t *kn)
{
    if (kn->cluster == 2 && kn->tma_store && (p->esize == 2 || p->promote))
        return -0.04;
    if (p->promote && kn->cluster == 2)
        return -0.01;
    return kn->cluster == 2 ? 0.02 : kn->tma_store ? -0.03 : kn->staged ? 0.0 : 0.01;
}

/* Microseconds of the wgmma walk of problem p under knob kn, at about 6 TFLOP/s per H200 SM
 * on 16-bit inputs (a 128x128 tile a tenth less than 128x256, 128x192 a twentieth), twice
 * that on fp8, whose instruction is twice as deep in K for the same cycles, and half on TF32
 * (half as deep). */
static double compute_time(const problem_t *p, const knob_t *kn)
{
    double rate = 6.0e6 * (1.0 - 0.1 * narrowness(kn)) * (2.0 / p->esize);
    int64_t work = work_items(p, kn);
    double rounds = (double)((work + SM_COUNT - 1) / SM_COUNT);
    double k_padded = (double)((p->k + tile_k(p) - 1) / tile_k(p) * tile_k(p));
    return rounds * 2.0 * TILE_M * kn->bn * k_padded / kn->splits / rate;
}

/* Microseconds for copying `bytes` of staged operands: read and written once more. */
static double copy_time(double bytes)
{
    return 2.0 * bytes / 3.0e6;
}

/* Microseconds that reading A by row class (knob_t.areg) costs against TMA reading a copy,
 * taken conservatively from the H200 (bf16, three rounds each): the wgmma walk from
 * registers, each consumer waiting for a K tile's wgmma before it issues the next, and eight
 * narrow boxes a stage instead of one, ran 4096x4096x4099 (A's rows 8198 bytes apart, B read
 * in place) in 228-252 us against 208-225 with A copied, and 4097x4095x4099 (B copied either
 * way) in 252-263 against 248-252; but without the copy of A 8192x256x8191 took 95.4-96.0 us
 * against 132.8-133.7 for the best plan that copies it, and 4097x512x4099 47.8 against
 * 52.2-52.9 (1031x1025x1027: 24.2 against 24.0 on 128x256 tiles). So the heuristics read A
 * by class only where its copy would take longer than twice a fifth of the walk and 5 us. */
static double areg_penalty(const problem_t *p, const knob_t *kn)
{
    return 5.0 + 0.4 * compute_time(p, kn);
}

/* Mode A's tie-breaker between an _areg knob and the one it repeats: ahead of it (and of the
 * TMA-store variant, which reading A by class has not) where the copy of A it saves costs
 * more than areg_penalty, else after it. */
static double areg_rank(const problem_t *p, const knob_t *kn)
{
    if (!kn->areg)
        return 0;
    return copy_time((double)p->a.lines * p->a.pitch) > areg_penalty(p, kn) ? -0.04 : 0.04;
}

/* Mode A's tie-breaker for an _ashift knob: ahead of the knob it repeats, of its _areg and
 * TMA-store variants, where it is offered at all, from the H200 (bf16, 128x256 tiles, staged
 * epilogue, in turns): 4097x4095x4099 (B copied either way) took 222-229 us against 246-248
 * with A copied (222.7-237.7 against 230.7-247.7 on another start of the machine),
 * 4096x4096x4099 (B read in place) 202-207 against 206-217 (209-212 with TMA stores), and
 * 8192x256x8191 81 us (77 on 128x128 tiles) against _areg's 96; 4097x512x4099 44.9 against
 * 52.0-52.5. Its tile rows are each class's: where a class's rows leave a mostly empty tile
 * (1031 rows: eight classes of 129 or 128 in 15 tile rows, against 9), the rule's waste and
 * wave terms already rank it after the copy (1031x1025x1027 took 25.5 us on 128x128 tiles
 * against 21.3 for 128x192 split two ways with A copied). The TMA-store ones, which store C
 * by row class, rank after the staged ones and before the direct ones: on the H200 (bf16, in
 * turns, 13 rounds on three starts of the machine) 4097x4095x4099 took 220.6-241.3 us on
 * 128x256 tiles against the staged epilogue's 223.9-241.8, 4096x4096x4099 (C's rows aligned)
 * 193.8-210.2 against 193.4-204.2, and 1031x1025x1027 on 128x128 tiles 25.3-28.4 against
 * 24.8-26.1. */
static double shift_rank(const knob_t *kn)
{
    if (!kn->shifted)
        return 0;
    return kn->tma_store ? -0.015 : -0.05;
}

/* Microseconds split-K adds to a tile: each split stores its partial sums of the tile's rows
 * inside M, and the last one reads the others' back, at about 100 GB/s per SM; and on the
 * H200 each split cost about half a microsecond more than that (linear_16x4096x14336 took
 * 36.8 us on 128x128 tiles split four ways and 41.7 on 128x256 ones split eight ways, the
 * same 128 CTAs). */
static double split_time(const problem_t *p, const knob_t *kn)
{
    if (kn->splits == 1)
        return 0;
    double rows = p->m < TILE_M ? (double)p->m : TILE_M;
    return 0.5 * kn->splits + kn->splits * rows * kn->bn * 4.0 / 1.0e5;
}

/* Mode B: the wgmma walk (compute_time) or the operands' traffic, whichever is longer; the
 * launch, barrier setup and the pipeline's fill cost a few microseconds more than the sm_80
 * kernel's. */
static double sm90_cost(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    problem_t p;
    char why[200];
    knob_t kn = decode(knob);
    if (!describe(g, grp, &kn, &p, why, sizeof why))
        return 1e30;
    double compute = compute_time(&p, &kn);
    double bytes = p.esize * (double)p.batch * ((double)p.m * p.k + (double)p.k * p.n) +
                   4.0 * (double)p.batch * p.m * p.n;
    /* Staged operands are copied before the GEMM starts, and the grid waits at a barrier. */
    double copied = (p.a.staged ? (double)p.a.lines * p.a.pitch : 0) + (p.b.staged ? (double)p.b.lines * p.b.pitch : 0);
    double copies = staging(&p) ? 3.0 + copy_time(copied) : 0;
    return 5.0 + copies + split_time(&p, &kn) + (compute > bytes / 3.5e6 ? compute : bytes / 3.5e6) +
           (kn.areg ? areg_penalty(&p, &kn) : 0) + stage_rank(&p, &kn) + (kn.raster_n ? 0.05 : 0) +
           variant_rank(&p, &kn);
}

/* Microseconds for the work items of a problem of 64 rows or fewer to stream B, fitted to
 * H200 sweeps of nn.Linear shapes in bf16 (M 1 and 16; N x K 4096 x 4096, 4096 x 14336 and
 * 14336 x 4096; every tile, stage count and split). Each CTA keeps its stages of B in
 * flight, which return after about 1.75 us: 128x256 tiles with four stages read 75 GB/s
 * each, 128x128 ones with five 47. In a cluster of two each CTA issues half of B's tile
 * for both (the second CTA's tile is past M: it only loads), which counts as 1.75 times the
 * bytes in flight: 1x4096x4096 on 128x128 tiles with four stages took 14.9 us in clusters
 * against 18.4 alone. All of them together approach 3.3 TB/s, less what a last partial
 * round leaves idle. The two limits blend (the cube root of the sum of their cubes; the
 * larger of the two alone missed by 30% near the crossing: 128x256 tiles split two ways
 * took 55 us on 4096 x 14336, either limit alone 42). Each round of work items adds about
 * 3 us of pipeline fill and drain. The latency and the cluster factor are fitted to rank
 * the plans rather than to time them: on the sweep at 318facb they put mode A within 4.3%
 * of the fastest plan on each of the six cases (6.8% with 1.5 us and no cluster factor),
 * and so does every pair of them from 1.625 to 2.0 (latency) by 1.5 to 2.0 (factor); the
 * times run up to 30% past the measured ones on long unsplit walks (1x4096x14336 on 16
 * tiles of 128x256: 103 us modelled, 78.8 measured). */
static double stream_time(const problem_t *p, const knob_t *kn)
{
    int64_t items = work_items(p, kn), rounds = (items + SM_COUNT - 1) / SM_COUNT;
    const double latency_us = 1.75, cluster_factor = kn->cluster == 2 ? 1.75 : 1.0;
    double per_cta_rate = (double)kn->bn * TILE_K_BYTES * kn->stages / latency_us * cluster_factor;
    double per_cta = (double)rounds * kn->bn * (double)p->k / kn->splits * p->esize / per_cta_rate;
    double all = (double)p->batch * (double)p->n * (double)p->k * p->esize / 3.3e6 *
                 (rounds > 1 ? (double)(rounds * SM_COUNT) / (double)items : 1.0);
    return cbrt(per_cta * per_cta * per_cta + all * all * all) + 3.0 * (double)rounds;
}

/* Mode A's rule within the engine: the tile whose rounds over the SMs waste the least and
 * that pads the matrix least, where the 128-wide tile counts as ten points of wave
 * efficiency lost (it reloads its operands twice as often: on the H200 at 4096^3 bf16
 * 128x128 took 213 us against 128x256's 175, and at 8x4096^3 with bias and relu 1745 against
 * 1514, though its 63 rounds were fuller than 128x256's 32) and the 192-wide one as five
 * (at 8192^3 bf16 1624 us against 1573 on 128x256 and 1794 on 128x128; promoted fp8, which
 * cannot take 256 columns, 957 against 1043 on 128x128), then the stage count that
 * measured fastest, then the tile order grouped along M, then the variant.
 * With 64 rows or fewer (a linear layer on a few tokens) the tiles only stream B, and the
 * rule is the time of that instead (stream_time). */
static double sm90_rule(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    problem_t p;
    char why[200];
    knob_t kn = decode(knob);
    if (!describe(g, grp, &kn, &p, why, sizeof why))
        return 1e30;
    double ranks = stage_rank(&p, &kn) + (kn.raster_n ? 0.05 : 0) + variant_rank(&p, &kn) + areg_rank(&p, &kn) +
                   shift_rank(&kn);
    if (streams_b(&p))
        return stream_time(&p, &kn) + split_time(&p, &kn) + ranks;
    double waste = 1.0 - (double)p.m * (double)p.n / ((double)tiles_of(&p, &kn) * TILE_M * kn.bn);
    return (1.0 - wave_efficiency(&p, &kn)) * 100.0 + waste * 50.0 + 10.0 * narrowness(&kn) +
           5.0 * split_time(&p, &kn) + ranks;
}

/* Mode A: a problem of fewer 128x128 tiles than half the SMs and a short K walk (seed
 * 000's 4x64x64x128) leaves most of the GPU idle whatever the tile and costs
 * little more than the launch and the pipeline's fill, which the sm_80 engine's smaller
 * tiles and split-K do cheaper, so its plans rank first there. With a longer K walk, the
 * few tiles stream their operands faster than the sm_80 engine's many: on the H200 a linear
 * layer (B an nn.Linear weight) of 4096x4096 took 22.2 us on 32 128x128 tiles at M = 1 (sm_80
 * engine: 25.1 to 26.6 on 32x32 tiles, 22.3 split in two), 22.9 at M = 16 (23.4) and 23.0 at
 * M = 128 (34.6). Fewer than an eighth of the SMs' worth of tiles (64x64x8192's one) walk
 * even a long K too slowly, whatever this engine splits, against the sm_80 engine's smaller
 * tiles split-K (a long K over 32 or more tiles, split here, is another matter:
 * 1x4096x14336 took 38.2 us on 128x128 tiles split four ways, 51.7 on the sm_80 engine's
 * best, 16x4096x14336 36.8 against 56.8). None of this holds for operands
 * this engine stages (strides TMA cannot take), which the sm_80 engine loads element by
 * element: 1000x77x1000 (B's rows 154 bytes apart) took 66.8 us there on 32x32 tiles, and
 * 36.9 here on eight 128x128 ones. Where the sm_80 engine's skinny plans rank first
 * (dnnjit__gemm_skinny_first), this engine's follow them. */
static bool sm90_defer(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    if (dnnjit__gemm_skinny_first(g, grp))
        return true;
    problem_t p;
    char why[200];
    knob_t narrow = {128, 4, false, false, 1, 1, false, decode(knob).tf32, false, false};
    if (!describe(g, grp, &narrow, &p, why, sizeof why))
        return true;
    int64_t tiles = p.batch * tiles_of(&p, &narrow);
    return !staging(&p) && tiles < SM_COUNT / 2 && (p.k < SHORT_K || tiles < SM_COUNT / 8);
}

/* dj_<name>_batch_coords(b, c): the batch coordinates of batch entry b in the operand's
 * tensor map. */
static void emit_batch_coords(dnnjit__strbuf_t *sb, const char *name, const operand_t *o)
{
    dnnjit__sb_printf(sb, "__device__ __forceinline__ void dj_%s_batch_coords(dj_i64 b, int (&c)[3])\n{\n", name);
    for (int i = 0; i < o->batch_axes; i++)
        dnnjit__sb_printf(sb, "    c[%d] = (int)(b / %lldLL %% %lldLL);\n", i, (long long)o->batch_div[i],
                          (long long)o->batch_dim[i]);
    dnnjit__sb_append(sb, "    (void)b;\n    (void)c;\n}\n");
}

/* dj_<name>_batch_offset(b): the offset in elements of batch entry b in the operand. */
static void emit_batch_offset(dnnjit__strbuf_t *sb, const char *name, const operand_t *o)
{
    dnnjit__sb_printf(sb, "__device__ __forceinline__ dj_i64 dj_%s_batch_offset(dj_i64 b)\n{\n    dj_i64 e = 0;\n", name);
    for (int i = 0; i < o->batch_axes; i++)
        dnnjit__sb_printf(sb, "    e += b / %lldLL %% %lldLL * %lldLL;\n", (long long)o->batch_div[i],
                          (long long)o->batch_dim[i], (long long)o->batch_stride[i]);
    dnnjit__sb_append(sb, "    (void)b;\n    return e;\n}\n");
}

/* The PTX name of an operand type of wgmma. */
static const char *wgmma_type(dnnjit_data_type_t t)
{
    return t == DNNJIT_DATA_TYPE_BFLOAT16   ? "bf16"
           : t == DNNJIT_DATA_TYPE_HALF     ? "f16"
           : t == DNNJIT_DATA_TYPE_FLOAT    ? "tf32"
           : t == DNNJIT_DATA_TYPE_FP8_E4M3 ? "e4m3"
                                            : "e5m2";
}

/* DjStage<name>: the copy of a staged operand for dj_stage_copy or, TRANSPOSED,
 * dj_stage_transpose (see gemm_wgmma.cuh): line l is line l % lines-per-entry of batch entry
 * l / lines-per-entry, the entry's coordinates innermost first as in the tensor map, and
 * line(l) its first element (of a transposed one, K steps KSTRIDE elements apart). An
 * operand that is not staged gets a struct with STAGED false. */
static void emit_stage(dnnjit__strbuf_t *sb, const char *name, const operand_t *o, int slot)
{
    dnnjit__sb_printf(sb, "struct DjStage%s {\n    static constexpr bool STAGED = %s, TRANSPOSED = %s;\n", name,
                      o->staged ? "true" : "false", o->transposed ? "true" : "false");
    dnnjit__sb_printf(sb, "    static constexpr dj_i64 KSTRIDE = %lldLL;\n", (long long)(o->transposed ? o->outer_stride : 0));
    dnnjit__sb_printf(sb, "    static constexpr dj_i64 LINES = %lldLL, INNER = %lldLL, PITCH = %lldLL, OFFSET = %lldLL;\n",
                      (long long)(o->staged ? o->lines : 0), (long long)o->inner, (long long)o->pitch,
                      (long long)o->offset);
    dnnjit__sb_printf(sb, "    static constexpr int SLOT = %d;\n", slot);
    dnnjit__sb_printf(sb, "    static constexpr dj_i64 SPAN_LO = %lldLL, SPAN_HI = %lldLL;\n", (long long)o->span_lo,
                      (long long)o->span_hi);
    dnnjit__sb_append(sb, "    __device__ static dj_i64 line(dj_i64 l)\n    {\n");
    dnnjit__sb_printf(sb, "        dj_i64 e = l %% %lldLL * %lldLL;\n        l /= %lldLL;\n", (long long)o->outer,
                      (long long)(o->transposed ? 1 : o->outer_stride), (long long)o->outer);
    for (int i = 0; i < o->batch_axes; i++)
        dnnjit__sb_printf(sb, "        e += l %% %lldLL * %lldLL;\n        l /= %lldLL;\n", (long long)o->batch_dim[i],
                          (long long)o->batch_stride[i], (long long)o->batch_dim[i]);
    dnnjit__sb_append(sb, "        return e;\n    }\n};\n");
}

/* One m64n<bn>k<32 bytes> wgmma of dj_wgmma_ktile's asm into the accumulator registers
 * dj_d0.. (dj_acc_declare), on the descriptors in registers a and b, or with A from the four
 * registers of operands a_regs.. (when not negative) and B on the descriptor of operand
 * b_desc, adding to the sums when predicate `scale_d` holds: for 16-bit operands the
 * transpose bits select M- or N-major ones (fp8 and TF32 ones are K-major, and the
 * instruction has no such bits; A from registers has none). */
static void emit_one_wgmma(dnnjit__strbuf_t *sb, int bn, int regs, const problem_t *p, const char *scale_d, int a_regs,
                           int b_desc)
{
    dnnjit__sb_printf(sb, "                 \"wgmma.mma_async.sync.aligned.m64n%dk%d.%s.%s.%s {", bn, 32 / p->esize,
                      p->acc16 ? "f16" : "f32", wgmma_type(p->a.t->resolved_type), wgmma_type(p->b.t->resolved_type));
    for (int i = 0; i < regs; i++)
        dnnjit__sb_printf(sb, "%sdj_d%d", i ? ", " : "", i);
    if (a_regs >= 0)
        dnnjit__sb_printf(sb, "}, {%%%d, %%%d, %%%d, %%%d}, %%%d, %s, 1, 1, %d;\\n\"\n", a_regs, a_regs + 1, a_regs + 2,
                          a_regs + 3, b_desc, scale_d, p->b.kmajor ? 0 : 1);
    else if (p->esize != 2)
        dnnjit__sb_printf(sb, "}, a, b, %s, 1, 1;\\n\"\n", scale_d);
    else
        dnnjit__sb_printf(sb, "}, a, b, %s, 1, 1, %d, %d;\\n\"\n", scale_d, p->a.kmajor ? 0 : 1, p->b.kmajor ? 0 : 1);
}

/* dj_acc_take, dj_acc_peek or dj_acc_read (emit_wgmma): `name(v)` reads the first n floats
 * of the sums' registers (`sums`: their name, count and halves) into v (as many as there
 * are: a tile of 64 columns has 32), and with `take` moves the rest down as far. */
static void emit_acc_read(dnnjit__strbuf_t *sb, const char *name, int n, bool take, dnnjit__reg_moves_t sums)
{
    char head[64];
    snprintf(head, sizeof head, "%s(float (&v)[%d])", name, n);
    int floats = sums.halves ? 2 * sums.count : sums.count;
    sums.n = n < floats ? n : floats;
    sums.shift = take;
    dnnjit__emit_reg_moves(sb, head, &sums);
}

/* The accumulators and the K tile's wgmmas. The accumulators are PTX registers of their own,
 * declared at the kernel's start (dj_acc_declare): dj_d0.. (the wgmmas' DJ_ACC_REGS registers,
 * floats or with fp16 accumulation two halves each, the lower half the first of a column
 * pair), and with promotion dj_s0.. (the DJ_ACC float sums, to which each K tile's dj_d are
 * added once complete). Only asm statements touch them, so NVVM never sees them as values.
 * As C++ arrays, each K tile's asm took all of them as operands and every access around the
 * asynchronous wgmma needed a fence: locally the 4096^3 bf16 kernel compiled in 170 ms this
 * way against 203, its SASS the same but for register numbers. Each statement is volatile,
 * so NVVM keeps them in order, and ptxas sees every use of the registers as it did of the
 * arrays'. The functions:
 *   dj_acc_clear()        the sums to zero (dj_d, or dj_s with promotion)
 *   dj_acc_promote()      dj_s += dj_d, float by float (promotion only)
 *   dj_acc_take(v)        v = the sums' first 32 floats a box of a turn of dj_store_tile
 *                         (store_unroll boxes), and the rest moved down as far
 *   dj_acc_peek(v)        v = the sums' first 4 floats
 *   dj_acc_read(v)        v = all DJ_ACC floats
 *   dj_wgmma_ktile(desc_a, desc_b, step_a, step_b, accumulate)   the wgmmas of one K tile
 *       (128 bytes deep, four of 32 bytes) on shared-memory descriptors, the slices'
 *       descriptors step_a and step_b apart. The first adds to dj_d (scale-d 1) when
 *       `accumulate` and overwrites them otherwise (a promoted K tile's), the others add.
 *       With A from registers (`a_regs`, knob_t.areg): dj_wgmma_ktile(a, desc_b, step_b,
 *       accumulate), A from a[16], four registers a slice, and only B on descriptors.
 * The four wgmmas are one asm statement because NVVM took longer over four (locally 248 ms
 * against 267 for that kernel while the accumulators were operands); a rolled loop over one
 * wgmma compiles faster still, but ptxas then waits for each to finish before the next. */
static void emit_wgmma(dnnjit__strbuf_t *sb, int bn, const problem_t *p, bool a_regs, int store_unroll)
{
    int acc = bn / 2, regs = p->acc16 ? bn / 4 : bn / 2;
    /* The sums' registers, which the clear and the reads name: dj_s with promotion, else
     * wgmma's own. */
    dnnjit__reg_moves_t sums = p->promote ? (dnnjit__reg_moves_t){.reg = "dj_s", .count = acc}
                                          : (dnnjit__reg_moves_t){.reg = "dj_d", .count = regs, .halves = p->acc16};
    dnnjit__strbuf_t text = {0};
    dnnjit__asm_line(&text, ".reg .%s dj_d<%d>;", p->acc16 ? "b32" : "f32", regs);
    if (p->promote)
        dnnjit__asm_line(&text, ".reg .f32 dj_s<%d>;", acc);
    dnnjit__emit_asm_function(sb, "dj_acc_declare()", &text, "");
    for (int i = 0; i < sums.count; i++)
        dnnjit__asm_line(&text, "mov.b32 %s%d, 0;", sums.reg, i);
    dnnjit__emit_asm_function(sb, "dj_acc_clear()", &text, "");
    if (p->promote) {
        for (int i = 0; i < acc; i++)
            dnnjit__asm_line(&text, "add.f32 dj_s%d, dj_s%d, dj_d%d;", i, i, i);
        dnnjit__emit_asm_function(sb, "dj_acc_promote()", &text, "");
    } else {
        /* Named only in a statement that `if constexpr` discards, which needs no definition. */
        dnnjit__sb_append(sb, "__device__ void dj_acc_promote();\n");
    }
    emit_acc_read(sb, "dj_acc_take", 32 * store_unroll, true, sums);
    emit_acc_read(sb, "dj_acc_peek", 4, false, sums);
    emit_acc_read(sb, "dj_acc_read", acc, false, sums);

    /* The asm's operands: A's descriptor, B's, the slices' steps and `accumulate`; or with A
     * from registers A's 16 registers, B's four descriptors (each computed outside: ptxas
     * gave the adds inside the asm the registers of the A slices whose wgmma had been issued,
     * and so waited for each wgmma to finish before the next) and `accumulate`. */
    int desc_b = 1, step_a = 2, step_b = 3, accumulate = a_regs ? 20 : 4;
    dnnjit__sb_printf(sb, "__device__ __forceinline__ void dj_wgmma_ktile(%s, dj_u64 desc_b, %sdj_u64 step_b, "
                          "int accumulate)\n{\n"
                          "    asm volatile(\"{\\n.reg .pred p, q;\\n%s\"\n",
                      a_regs ? "const unsigned (&a)[16]" : "dj_u64 desc_a", a_regs ? "" : "dj_u64 step_a, ",
                      a_regs ? "" : ".reg .b64 a, b;\\n");
    dnnjit__sb_printf(sb, "                 \"setp.ne.b32 p, %%%d, 0;\\nsetp.eq.b32 q, %%%d, %%%d;\\n\"\n",
                      accumulate, accumulate, accumulate);
    if (!a_regs)
        dnnjit__sb_printf(sb, "                 \"mov.b64 a, %%0;\\nmov.b64 b, %%%d;\\n\"\n", desc_b);
    for (int i = 0; i < TILE_K_BYTES / 32; i++) {
        if (i > 0 && !a_regs)
            dnnjit__sb_printf(sb, "                 \"add.s64 a, a, %%%d;\\nadd.s64 b, b, %%%d;\\n\"\n", step_a,
                              step_b);
        emit_one_wgmma(sb, bn, regs, p, i ? "q" : "p", a_regs ? 4 * i : -1, 16 + i);
    }
    dnnjit__sb_append(sb, "                 \"}\\n\"\n                 :\n                 : ");
    for (int i = 0; a_regs && i < 16; i++)
        dnnjit__sb_printf(sb, "\"r\"(a[%d]), ", i);
    if (a_regs)
        dnnjit__sb_append(sb, "\"l\"(desc_b), \"l\"(desc_b + step_b), \"l\"(desc_b + 2 * step_b), "
                              "\"l\"(desc_b + 3 * step_b), \"r\"(accumulate));\n}\n");
    else
        dnnjit__sb_append(sb, "\"l\"(desc_a), \"l\"(desc_b), \"l\"(step_a), \"l\"(step_b), \"r\"(accumulate));\n}\n");
}

/* Whether the group's fused expressions read a tensor of more than one element besides the
 * matmul's operands (a bias, a residual): the TMA-store epilogue then computes two boxes a
 * turn (gemm_wgmma.cuh's DJ_STORE_UNROLL). A one-element tensor, such as fp8's scale, is
 * the same load for every output, and on the H200 8192^3 fp8 ran no faster for it. */
static bool epilogue_reads(dnnjit_graph_t g, const dnnjit__group_t *grp, const problem_t *p)
{
    for (int64_t i = 0; i < grp->input_count; i++) {
        dnnjit_tensor_t id = grp->inputs[i];
        const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
        if (id != p->mm->in[0] && id != p->mm->in[1] && !t->is_pass_by_value && dnnjit__numel(t->ndim, t->dim) > 1)
            return true;
    }
    return false;
}

static dnnjit_status_t sm90_generate(dnnjit_graph_t g, const dnnjit__partition_t *part, const dnnjit__group_t *grp,
                                     int knob, dnnjit__kernel_t *k)
{
    (void)part;
    *k = (dnnjit__kernel_t){0};
    problem_t p;
    char why[200];
    knob_t kn = decode(knob);
    if (!describe(g, grp, &kn, &p, why, sizeof why) || !kernel_slots(g, grp, &p, k, why, sizeof why) ||
        !maps_valid(&p, &kn, k, why, sizeof why) || (kn.splits > 1 && !split_pays(&p, &kn, why, sizeof why)))
        return dnnjit__fail(g, DNNJIT_STATUS_NOT_SUPPORTED, "gemm_sm90 engine: matmul \"%s\": %s",
                            g->nodes[grp->first_node].name, why);
    int slot_a = dnnjit__slot_of(k->tensors, k->tensor_count, p.mm->in[0]);
    int slot_b = dnnjit__slot_of(k->tensors, k->tensor_count, p.mm->in[1]);

    dnnjit__strbuf_t sb = {0};
    dnnjit__sb_append(&sb, dnnjit__template("common.cuh"));
    dnnjit__sb_printf(&sb, "\n// ---- generated by the gemm_sm90 engine for matmul \"%s\" ----\n", p.mm->name);
    dnnjit__sb_printf(&sb, "constexpr int DJ_ESIZE = %d, DJ_WK = %d;\n", p.esize, 32 / p.esize);
    dnnjit__sb_printf(&sb, "constexpr int DJ_BM = %d, DJ_BN = %d, DJ_BK = %d, DJ_STAGES = %d, DJ_GROUP = %d;\n", TILE_M,
                      kn.bn, tile_k(&p), kn.stages, GROUP);
    dnnjit__sb_printf(&sb, "constexpr bool DJ_RASTER_N = %s, DJ_STAGED_EPILOGUE = %s, DJ_TMA_STORE = %s;\n",
                      kn.raster_n ? "true" : "false", kn.staged ? "true" : "false", kn.tma_store ? "true" : "false");
    dnnjit__sb_printf(&sb, "constexpr int DJ_EPI_COLS = %d, DJ_EPI_STRIDE = %d, DJ_CLUSTER = %d;\n", EPI_COLS,
                      EPI_STRIDE, kn.cluster);
    dnnjit__sb_printf(&sb, "#define DJ_CLUSTER_DIMS %s\n", kn.cluster == 2 ? "__cluster_dims__(2, 1, 1)" : "");
    dnnjit__sb_printf(&sb, "constexpr dj_i64 DJ_M = %lldLL, DJ_N = %lldLL, DJ_K = %lldLL, DJ_BATCH = %lldLL;\n",
                      (long long)p.m, (long long)p.n, (long long)p.k, (long long)p.batch);
    dnnjit__sb_printf(&sb, "constexpr bool DJ_A_KMAJOR = %s, DJ_B_KMAJOR = %s;\n", p.a.kmajor ? "true" : "false",
                      p.b.kmajor ? "true" : "false");
    dnnjit__sb_printf(&sb, "constexpr int DJ_A_RANK = %d, DJ_B_RANK = %d;\n", 2 + p.a.batch_axes, 2 + p.b.batch_axes);
    dnnjit__sb_printf(&sb, "#define DJ_A_BY_CLASS %d\n#define DJ_A_SHIFTED %d\n", kn.areg, kn.shifted);
    dnnjit__sb_printf(&sb, "constexpr dj_i64 DJ_A_ROW_STRIDE = %lldLL;\n",
                      (long long)(kn.areg || kn.shifted ? p.a.outer_stride : 0));
    dnnjit__sb_printf(&sb, "constexpr int DJ_ACC = %d;\nconstexpr bool DJ_PROMOTE = %s;\n", kn.bn / 2,
                      p.promote ? "true" : "false");
    emit_batch_coords(&sb, "a", &p.a);
    emit_batch_coords(&sb, "b", &p.b);
    const operand_t none = {0};
    emit_batch_coords(&sb, "c", kn.tma_store ? &p.out : &none);
    dnnjit__sb_printf(&sb, "using DjOut = %s;\nconstexpr int DJ_C_RANK = %d, DJ_OUT_BOXES = %d;\n",
                      kn.tma_store ? dnnjit__cuda_type(p.out.t->resolved_type) : "dj_half",
                      kn.tma_store ? 2 + p.out.batch_axes : 2, kn.tma_store ? out_boxes(&kn) : 1);
    int store_unroll = kn.tma_store && epilogue_reads(g, grp, &p) ? 2 : 1;
    dnnjit__sb_printf(&sb, "constexpr int DJ_STORE_UNROLL = %d;\n", store_unroll);
    dnnjit__sb_printf(&sb, "#define DJ_STORE_MAP_PARAM %s\n#define DJ_STORE_MAP %s\n",
                      kn.tma_store ? ", const __grid_constant__ DjTensorMap map_c" : "",
                      kn.tma_store ? "&map_c" : "nullptr");
    dnnjit__sb_printf(&sb, "#define DJ_C_BY_CLASS %d\nconstexpr dj_i64 DJ_C_ROW_STRIDE = %lldLL;\n", p.out_by_class,
                      (long long)(p.out_by_class ? p.out.outer_stride : 0));
    dnnjit__sb_printf(&sb, "constexpr int DJ_C_SLOT = %d;\n",
                      p.out_by_class ? dnnjit__slot_of(k->tensors, k->tensor_count, p.out_id) : 0);
    emit_batch_offset(&sb, "c", p.out_by_class ? &p.out : &none);
    dnnjit__sb_printf(&sb, "constexpr bool DJ_STAGING = %s;\nconstexpr int DJ_SCRATCH_SLOT = %d;\n",
                      staging(&p) ? "true" : "false", k->scratch_slot);
    dnnjit__sb_printf(&sb, "constexpr int DJ_SPLITS = %d;\n", kn.splits);
    dnnjit__sb_printf(&sb, "constexpr dj_i64 DJ_SPLIT_COUNTERS = %lldLL, DJ_SPLIT_PARTIALS = %lldLL;\n",
                      (long long)p.counters, (long long)p.partials);
    emit_stage(&sb, "A", &p.a, slot_a);
    emit_stage(&sb, "B", &p.b, slot_b);
    emit_wgmma(&sb, kn.bn, &p, kn.areg, store_unroll);
    /* The staged epilogue calls dj_epilogue from one loop per column chunk: inlined there,
     * the fused expressions load their pointers once instead of per call. */
    if (kn.staged)
        dnnjit__sb_append(&sb, "#define DJ_EPILOGUE_INLINING __forceinline__\n");
    dnnjit__sb_append(&sb, "\n");
    dnnjit__emit_group_element(&sb, g, grp, k, p.c, p.mm->out[0], DNNJIT__ELEMENT_AT_COORDS);
    dnnjit__sb_append(&sb, dnnjit__template("gemm_wgmma.cuh"));
    k->source = dnnjit__sb_take(&sb);
    if (!k->source)
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "gemm_sm90 engine: out of memory generating source");
    snprintf(k->entry, sizeof k->entry, "dj_gemm_sm90");
    /* Whole clusters: SM_COUNT is even. Every SM takes a share of the copies of staged
     * operands, and waits for the others at the barrier: the launch is cooperative. */
    int64_t work = work_items(&p, &kn);
    k->grid[0] = (unsigned)(work < SM_COUNT && !staging(&p) ? work : SM_COUNT);
    k->cooperative = staging(&p);
    k->grid[1] = k->grid[2] = 1;
    k->block[0] = THREADS;
    k->block[1] = k->block[2] = 1;
    k->shared_bytes = (unsigned)smem_bytes(&kn);
    k->compile_option = DNNJIT__PTXAS_O2;
    k->tma_count = operand_maps(&p, &kn, slot_a, slot_b, k->scratch_slot, k->tma);
    if (kn.tma_store)
        k->tma_count += store_maps(&p, k, k->tma + k->tma_count);
    return DNNJIT_STATUS_SUCCESS;
}

const dnnjit__engine_t dnnjit__engine_gemm_sm90 = {
    .name = "gemm_sm90",
    .knob_count = 2 * EXACT_KNOBS + AREG_KNOBS + SHIFT_KNOBS + SHIFT_STORE_KNOBS,
    .supports = sm90_supports,
    .knob_name = sm90_knob_name,
    .notes = sm90_notes,
    .cost = sm90_cost,
    .rule = sm90_rule,
    .defer = sm90_defer,
    .generate = sm90_generate,
};
