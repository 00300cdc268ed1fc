/* The rows engine: row groups (a softmax, layer or RMS norm, either direction, or a
 * reduction over the innermost or the outermost axes, with its pointwise prologue and
 * epilogue) as one kernel specialised to the row length. Knobs choose the threads per row,
 * the rows per block, vector or scalar access and whether the row stays in registers (one
 * read of each input) or is streamed (read once per pass). The algorithms are
 * src/kernels/rows_*.cuh; rows_emit.c writes the accessors that specialise them.
 *
 * A reduction over the outermost axes (one result per column, as a bias gradient) runs as
 * column plans only: blocks of strips of columns and segments of rows, their results
 * combined in a fixed order (rows_column_reduction.cuh).
 *
 * A norm backward that writes DSCALE or DBIAS sums over the rows as well: fused plans do it
 * in the row blocks as they go (one read of DY and X) when each thread's share of the row
 * and its column sums fit in registers (or the sums in shared memory), on sm_90 also for
 * rows too long for one block (16384 or 32768 16-bit elements), whose slices go to the
 * blocks of a cluster; other plans have column blocks that read DY and X a second time.
 *
 * supports() refuses a register plan whose row does not fit in 32 registers per thread
 * (16-bit values two to a register), a stream plan whose row does, and any plan with more
 * threads per row than the row has vectors. Among the rest, mode A ranks split plans, then
 * fused ones, then register plans, then stream plans, each by how far it lies from what the
 * H200 measured fastest (plan_penalty: about a thread per 32 bytes of the row, at most
 * 512), and mode B's cost takes that distance as lost bandwidth. */
#include "engine/rows.h"

#include "codegen/codegen.h"
#include "codegen/templates.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* How a plan reads its rows. */
typedef enum how {
    REGISTERS, /* once, keeping the full inputs in registers across the op's passes */
    STREAM,    /* once per pass (rows too long for registers) */
    SPLIT,     /* one-pass ops: each row cut into segments that different blocks reduce */
    FUSED,     /* a norm backward as REGISTERS, its row blocks also adding up DSCALE and DBIAS
                * (one read of DY and X instead of a second one by column blocks) */
    COLUMNS,   /* a reduction over the rows (geo.columns): column blocks only, each a strip of
                * tpr threads across by rpb down (see rows_column_reduction.cuh) */
} how_t;

typedef struct knob {
    int tpr;     /* threads per row */
    int rpb;     /* rows per block */
    bool vector; /* DJ_VEC-element accesses (else one element at a time) */
    how_t how;
    int sm_threads; /* FUSED: threads per SM its row blocks fill (their partial sums cost
                     * memory, so the grid holds no more blocks than run at once), which
                     * the kernel's launch bounds ask the compiler's register use for */
    int cluster;    /* FUSED: blocks of a cluster (sm_90) that share each row, a slice of
                     * columns each, their row sums meeting in distributed shared memory;
                     * 1 for everything else */
    bool shared_sums; /* FUSED: each thread's column sums in shared memory, not registers */
    bool row_tickets; /* FUSED cluster plans: clusters take rows by ticket as they are ready
                       * for them, rather than every groups-th row, so which rows each
                       * partial column sum covers (and DSCALE's and DBIAS's last bits)
                       * changes from run to run: noted NONDETERMINISTIC (rows_notes) */
} knob_t;

static const knob_t knobs[] = {
    {1, 128, true, REGISTERS, 0, 1, false, false},    {1, 128, false, REGISTERS, 0, 1, false, false},
    {4, 32, true, REGISTERS, 0, 1, false, false},     {4, 32, false, REGISTERS, 0, 1, false, false},
    {8, 16, true, REGISTERS, 0, 1, false, false},     {8, 16, false, REGISTERS, 0, 1, false, false},
    {16, 8, true, REGISTERS, 0, 1, false, false},     {16, 8, false, REGISTERS, 0, 1, false, false},
    {32, 4, true, REGISTERS, 0, 1, false, false},     {32, 4, false, REGISTERS, 0, 1, false, false},
    {32, 8, true, REGISTERS, 0, 1, false, false},     {32, 8, false, REGISTERS, 0, 1, false, false},
    {64, 2, true, REGISTERS, 0, 1, false, false},     {64, 2, false, REGISTERS, 0, 1, false, false},
    {128, 1, true, REGISTERS, 0, 1, false, false},    {128, 1, false, REGISTERS, 0, 1, false, false},
    {256, 1, true, REGISTERS, 0, 1, false, false},    {256, 1, false, REGISTERS, 0, 1, false, false},
    {512, 1, true, REGISTERS, 0, 1, false, false},    {512, 1, false, REGISTERS, 0, 1, false, false},
    {1024, 1, true, REGISTERS, 0, 1, false, false},   {1024, 1, false, REGISTERS, 0, 1, false, false},
    {1024, 1, true, STREAM, 0, 1, false, false},      {1024, 1, false, STREAM, 0, 1, false, false},
    {256, 1, true, STREAM, 0, 1, false, false},       {256, 1, false, STREAM, 0, 1, false, false},
    {1024, 1, true, SPLIT, 0, 1, false, false},       {1024, 1, false, SPLIT, 0, 1, false, false},
    {256, 1, true, SPLIT, 0, 1, false, false},        {256, 1, false, SPLIT, 0, 1, false, false},
    /* Fused norm backward (plan_penalty ranks them): 8 elements a thread for 4096-wide
     * rows, 16, 4 (the most threads), 2 chunks of 1000-wide floats, 2 of 1000-wide 16-bit
     * rows (four rows to a block: a quarter of the partial sums). 1024 threads per SM hold
     * 64 registers each (ptxas puts 4096-wide bf16 rows at 512 threads in 64 without
     * spills, at 256 threads or 1000-wide halves with small spills); the same at 512
     * threads per SM (up to 128 registers: no spills, half the loads in flight and half the
     * partial sums). */
    {512, 1, true, FUSED, 1024, 1, false, false},   {256, 1, true, FUSED, 1024, 1, false, false},
    {1024, 1, true, FUSED, 1024, 1, false, false},  {128, 1, true, FUSED, 1024, 1, false, false},
    {64, 4, true, FUSED, 1024, 1, false, false},    {512, 1, true, FUSED, 512, 1, false, false},
    {256, 1, true, FUSED, 512, 1, false, false},    {128, 1, true, FUSED, 512, 1, false, false},
    {64, 4, true, FUSED, 512, 1, false, false},
    /* Rows too long for one block's registers (16384 and 32768 16-bit elements): clusters
     * of 2, 4 or 8 blocks share each row, a slice of it each, as the 256-thread plan above
     * works on 4096-wide rows. On 4096x32768 bf16 (layer, RMS norm) this ran at 2.47-2.51
     * TB/s, against 2.35-2.43 for slices of 4096 at 512 threads (two blocks an SM, 64
     * registers) and 2.22-2.27 for clusters of 4 blocks of 512 threads (one an SM). */
    {256, 1, true, FUSED, 512, 2, false, false},  {256, 1, true, FUSED, 512, 4, false, false},
    {256, 1, true, FUSED, 512, 8, false, false},
    /* The same slices of 4096 with each thread's column sums in shared memory, which
     * leaves the registers (80 a thread) to three blocks an SM instead of two: on the H200
     * 4096x32768 bf16 layer norm backward ran at 2.71 TB/s against 2.45, RMS norm 2.79
     * against 2.48. Left out, all slower than the plans above: four such blocks an SM (64
     * registers, small spills; 2.56 and 2.46), and column sums in shared memory for rows a
     * block holds alone: 4096-wide bf16 at 256 threads and 1024 an SM 3.07 TB/s against
     * 3.39 (128 threads: 1.65), 1000-wide fp16 at 64 threads a row and 1024 an SM 1.58
     * against 2.92 (a block per row leaves four times the partial sums). */
    {256, 1, true, FUSED, 768, 8, true, false},
    /* Tried on the H200 and left out, all slower than the plans above (layer norm backward):
     * - the rows brought into shared memory by bulk copies (cp.async.bulk, up to four row
     *   groups ahead of the one worked on) instead of into registers: 2.46 against 2.93 TB/s
     *   on 1000-wide fp16 rows (64 threads, four rows a block), 3.13 against 3.39 on
     *   4096-wide bf16 (256 threads), slower still at 1024 threads an SM;
     * - one warp per 1000-wide row (its sums by shuffles alone, no block-wide barrier; 128
     *   registers): 2.47; 128 threads of 32 elements on 4096-wide rows: 2.76;
     * - each thread holding two rows at once, both rows' loads issued before one reduction
     *   of their sums, to double the loads in flight without doubling the column sums: on
     *   1000-wide fp16 rows (four rows a block, so eight a step; 128 registers) 74-82 us
     *   against 63.5, on 32768x4096 bf16 215 against 218 (RMS norm 215 against 213);
     * - on 1000-wide fp16 rows, two rows a block at 512 threads an SM: 63.0 us against 63.9
     *   (RMS norm 62.0 against 60.9), and once each row waited at its own barrier (1ec84e6)
     *   63.3-64.3 against 63.2-63.3 (RMS norm 61.5-62.0 against 59.3-59.5); four or two rows
     *   a block at 768 threads an SM (80 registers, small spills): 82-87 us. */
    /* Reductions over the rows: 32 threads across a strip (a warp reads 512 bytes of a row
     * in 16-byte vectors), 8 or 4 for narrow rows, 1 for a row of a few elements. On the
     * H200 the sum over 32768 x 4096 bf16 rows took 67.2 us at 32 threads of vectors (3.99
     * TB/s; torch 78.3), 66.8 at 8, 313 one element at a time at 4; over 4096 x 32768 66.4
     * against 85.1 at 8; over 32768 x 1000 fp16 25.9 against 26.5 at 8 (torch 50.3). Over
     * six other shapes (8192 x 8192 and 1024 x 65536 bf16, 16384 x 2048 fp16, 65536 x 512
     * and 2048 x 16384 fp32, 131072 x 256 bf16) 8 threads ran 0.3-6% ahead of 32, 13% on
     * the last, where 32 threads make one strip (see rows_rule). */
    {32, 8, true, COLUMNS, 0, 1, false, false},   {32, 8, false, COLUMNS, 0, 1, false, false},
    {8, 32, true, COLUMNS, 0, 1, false, false},   {8, 32, false, COLUMNS, 0, 1, false, false},
    {4, 64, false, COLUMNS, 0, 1, false, false},  {1, 256, false, COLUMNS, 0, 1, false, false},
    /* The shared-sums cluster plan with rows by ticket (last in the table, so that the knobs
     * before it keep their numbers in serialized plans). Three blocks an SM on 132 SMs are
     * not a whole number of clusters of 8: a cluster with a block on a full SM runs slower,
     * and with tickets the other clusters take its share of the rows. On the H200
     * 4096x32768 bf16 layer and RMS norm backward took 254.4-254.8 and 248.9 us this way
     * against 270.6-271.0 and 258.8-259.0 with every groups-th row (three rounds each). */
    {256, 1, true, FUSED, 768, 8, true, true},
    /* The same at four blocks an SM: ptxas now fits it in 64 registers without the spills
     * it had when first tried (above), and the device holds 62 clusters at once against 45,
     * so fewer SMs hold a block fewer than the others. On the H200 (two rounds) 4096x32768
     * bf16 layer norm backward took 259.4-259.9 us against 270.8 at three blocks, RMS norm
     * 261.7-261.8 against 258.9-259.0, and without the rows' L2 prefetches (see
     * prefetches_rows) RMS norm too runs faster at four; with row tickets 290.0-292.0
     * against 249.5-255.0, so that variant is left out. Clusters of 16 blocks were slower
     * still (docs/performance-history.md). */
    {256, 1, true, FUSED, 1024, 8, true, false},
};

enum {
    KNOB_COUNT = sizeof knobs / sizeof knobs[0],
    /* Registers a thread may keep its share of the row in: a 1024-thread block has 64
     * registers per thread, which must also hold addresses and the op's own values. */
    ROW_REGISTERS = 32,
    /* A register plan whose threads keep at most this many registers of the row and of
     * tensor addresses (two each) asks for an SM full of threads (2048, at most 32
     * registers each, as an H200's SM holds): it waits on memory and gains from more loads
     * in flight, not from registers. On the H200 the 1000-wide fp16 layer norm forward (64
     * threads, four tensors: 16) went from 38 registers and 1536 threads an SM to 32 and
     * 2048, 3.58 to 3.63-3.69 TB/s over four runs; add + RMS norm (five tensors: 18)
     * spilled at 32 and slowed, 3.85 to 3.44. */
    FULL_SM_REGISTERS = 16,
    /* A fused plan also keeps two float column sums per element a thread covers. (One
     * where the group writes no DBIAS, but the plans stay sized for two, as measured.) */
    FUSED_REGISTERS = 48,
    /* The row as floats and the column sums a fused plan at 512 threads an SM may keep
     * (see float_rows). */
    FLOAT_ROW_REGISTERS = 64,
    /* Columns each warp of a fused plan's column blocks adds up (its loads of 128 bytes). */
    FUSED_STRIP = 32,
    /* Shared memory a fused block keeps column sums in (those of a block with several rows,
     * two floats per column and row, and a plan's shared sums): within the 48 KB a block
     * declares statically, with room for the reductions' own. */
    FUSED_SHARED = 40 * 1024,
    /* The grid loops over the rows, so it can stay well below the hardware limit. A grid
     * of one to eight waves of blocks looping over the rows ran slower on the H200 than a
     * block per row group (32768x1000 fp16 layer norm 3.45-3.67 TB/s against 3.66,
     * 32768x4096 bf16 3.60-3.92 against 3.94). */
    MAX_ROW_BLOCKS = 1 << 20,
    /* Work items (rows or row segments) that keep an H200's 132 SMs busy twice over. */
    BUSY_ITEMS = 2 * 132,
    /* Row segments of a column plan's strip at most, and the rows each of its threads loads
     * at once (see column_layout). */
    MAX_COLUMN_SEGMENTS = 128,
    COLUMN_BATCH = 4,
};

static int vec_of(const dnnjit__rows_problem_t *pb, const knob_t *kn)
{
    return kn->vector ? pb->vec : 1;
}

/* Segments a split plan cuts each row into (enough work items to keep the GPU busy, each
 * segment at least four chunks per thread) or a cluster plan (one per block of the
 * cluster, fewer when whole chunks leave the last ones nothing: supports() refuses that),
 * and the columns of each; 1 and the row length for other plans. */
static int64_t split_of(const dnnjit__rows_problem_t *pb, const knob_t *kn, int64_t *seg_cols)
{
    int64_t per_pass = (int64_t)kn->tpr * vec_of(pb, kn), cols = pb->geo.cols;
    int64_t want = (BUSY_ITEMS + pb->geo.rows - 1) / pb->geo.rows, most = cols / (4 * per_pass);
    int64_t split = kn->how == SPLIT ? (want < most ? want : most) : kn->cluster;
    if (split < 2) {
        *seg_cols = cols;
        return kn->how == SPLIT ? split : 1;
    }
    *seg_cols = ((cols + split - 1) / split + per_pass - 1) / per_pass * per_pass;
    return (cols + *seg_cols - 1) / *seg_cols;
}

/* V-element chunks of a row (or segment) each thread covers. */
static int64_t chunks_of(const dnnjit__rows_problem_t *pb, const knob_t *kn)
{
    int64_t per_pass = (int64_t)kn->tpr * vec_of(pb, kn), seg_cols;
    split_of(pb, kn, &seg_cols);
    return (seg_cols + per_pass - 1) / per_pass;
}

/* A column plan's strips (strip columns each: tpr vectors) and the segments (seg_rows rows
 * each) every strip is cut into, one block per strip and segment. */
typedef struct column_layout {
    int strip;
    int64_t strips, segments, seg_rows;
} column_layout_t;

/* The layout of a column plan: as many segments as keep the blocks within one
 * wave of 1024 threads on each of an H200's 132 SMs (each thread keeps COLUMN_BATCH rows'
 * loads in flight: half an SM's threads cover its latency; a second wave a fifth full cost
 * 4096x32768 bf16 8%), each leaving every thread at least COLUMN_BATCH rows, at most
 * MAX_COLUMN_SEGMENTS (the block that arrives last at a strip combines the strip's results
 * of every segment). */
static column_layout_t column_layout(const dnnjit__rows_problem_t *pb, const knob_t *kn)
{
    column_layout_t l = {.strip = kn->tpr * vec_of(pb, kn)};
    l.strips = (pb->geo.cols + l.strip - 1) / l.strip;
    int64_t rows = pb->geo.rows;
    int64_t want = 132 * (1024 / (kn->tpr * kn->rpb)) / l.strips;
    int64_t most = (rows + COLUMN_BATCH * kn->rpb - 1) / (COLUMN_BATCH * kn->rpb);
    int64_t count = want < most ? want : most;
    count = count < MAX_COLUMN_SEGMENTS ? count : MAX_COLUMN_SEGMENTS;
    count = count > 1 ? count : 1;
    l.seg_rows = (rows + count - 1) / count;
    l.segments = (rows + l.seg_rows - 1) / l.seg_rows;
    return l;
}

/* The share of one wave (1024 threads on each of 132 SMs) a column plan's blocks fill, at
 * most 1: few when the strips are few and their segments at the most. */
static double column_fill(const dnnjit__rows_problem_t *pb, const knob_t *kn)
{
    column_layout_t l = column_layout(pb, kn);
    double fill = (double)(l.strips * l.segments * kn->tpr * kn->rpb) / (132.0 * 1024);
    return fill < 1.0 ? fill : 1.0;
}

/* Whether the op's full inputs stay in registers across its passes. */
static bool in_registers(const dnnjit__rows_problem_t *pb, const knob_t *kn)
{
    return (kn->how == REGISTERS || kn->how == FUSED) && pb->kept_inputs > 0;
}

/* The row groups of a fused plan (blocks, or clusters of blocks, that loop over the rows,
 * rpb rows at a time): as many as run at once on an H200's 132 SMs at the knob's threads
 * per SM, at most enough for every row. Each leaves a row of partial column sums. Fewer
 * groups that share the rows out evenly (256 blocks taking 32 turns of 4 rows on
 * 32768x1000 fp16, against 264 of which 8 take a 32nd) ran slower on the H200: 64.6 us
 * against 63.7. For a cluster plan this is the most: loading keeps as many clusters as the
 * device holds at once (the H200 holds 45 of 8 blocks of 256 threads, not 49), since one
 * started only after others finish would double the time. */
static int64_t fused_groups(const dnnjit__rows_problem_t *pb, const knob_t *kn)
{
    int64_t resident = 132 * (int64_t)(kn->sm_threads / (kn->tpr * kn->rpb)) / kn->cluster;
    int64_t needed = (pb->geo.rows + kn->rpb - 1) / kn->rpb;
    return kn->how != FUSED ? 0 : needed < resident ? needed : resident;
}

/* Warps of a fused plan's column block that add up one strip of columns (see
 * rows_norm_backward.cuh; 1 for other plans): all of them when there are many row groups'
 * partial sums to add (264 for 1000- and 4096-wide rows), else a power of two that leaves
 * each warp about 16, so that a block takes several strips and fewer blocks start (49 row
 * groups of 32768-wide rows: two warps a strip, four strips a block, a quarter of the
 * blocks). */
static int fused_strip_warps(const dnnjit__rows_problem_t *pb, const knob_t *kn)
{
    int64_t groups = fused_groups(pb, kn);
    int warps = kn->tpr * kn->rpb / 32, want = 1;
    while (want < warps && 2 * want * 16 <= groups)
        want *= 2;
    return want;
}

/* 32-bit registers a thread of a register plan keeps its share of the row in: per chunk,
 * V values of each kept input, two 16-bit ones to a register. A one-pass op keeps nothing,
 * but its register plans still cap what a thread reads (V elements per chunk), so that
 * mode A spreads long rows over enough threads. */
static int64_t row_registers(const dnnjit__rows_problem_t *pb, const knob_t *kn)
{
    int vec = vec_of(pb, kn);
    int64_t per_chunk = pb->kept_inputs ? 0 : vec;
    for (int i = 0; i < pb->kept_inputs; i++)
        per_chunk += (vec * pb->kept_size[i] + 3) / 4;
    return chunks_of(pb, kn) * per_chunk;
}

/* Whether a plan keeps 16-bit rows in registers as floats rather than two to a register
 * (DJ_FLOAT_ROWS, see DjCache in rows_common.cuh): a fused plan at 512 threads an SM
 * (up to 128 registers a thread) whose row as floats and column sums take at most
 * FLOAT_ROW_REGISTERS. Packing a row after its first pass and unpacking it in the second
 * cost 48 of the 431 instructions of a thread's row step on 1000-wide fp16 layer norm
 * backward (64 threads a row), against 376 kept as floats with x centred (see DjHeldRow),
 * which ptxas fits in 122 registers without spills. Cluster plans hold two rows at once
 * and keep them packed. */
static bool float_rows(const dnnjit__rows_problem_t *pb, const knob_t *kn)
{
    /* Per element a thread covers: each kept input and two column sums. */
    int64_t elements = chunks_of(pb, kn) * vec_of(pb, kn);
    return kn->how == FUSED && kn->sm_threads <= 512 && kn->cluster == 1 && !kn->shared_sums &&
           elements * (pb->kept_inputs + 2) <= FLOAT_ROW_REGISTERS;
}

/* The kernel's scratch: arrival counters (rounded to 256 bytes), which execute zeroes,
 * then partial results: a fused norm backward's column sums per row group (two counters:
 * role tickets and arrivals; a third for row tickets), a norm backward's or a column
 * plan's per strip and row segment, or a split row's per segment. No scratch: both 0. */
static void scratch_of(const dnnjit__rows_problem_t *pb, const knob_t *kn, int64_t *counters, int64_t *bytes)
{
    int64_t seg_cols, split = split_of(pb, kn, &seg_cols), count = 0, values = 0;
    if (kn->how == COLUMNS) {
        column_layout_t l = column_layout(pb, kn);
        count = l.segments > 1 ? l.strips : 0;
        values = count * l.segments * l.strip;
    } else if (kn->how == FUSED) {
        count = kn->row_tickets ? 3 : 2;
        values = fused_groups(pb, kn) * 2 * pb->geo.cols;
    } else if (pb->column_role && pb->segments > 1) {
        count = (pb->geo.cols + pb->strip - 1) / pb->strip;
        values = count * pb->segments * 2 * pb->strip;
    } else if (split > 1) {
        count = pb->geo.rows;
        values = pb->geo.rows * split;
    }
    *counters = (count + 63) / 64 * 64;
    *bytes = count ? *counters * 4 + values * 4 : 0;
}

static bool rows_supports(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob, const char *arch, char *why,
                          size_t why_size)
{
    dnnjit__rows_problem_t pb;
    dnnjit__kernel_t slots = {0};
    char reason[200] = "";
    if (knob < 0 || knob >= KNOB_COUNT) {
        snprintf(reason, sizeof reason, "unknown knob");
    } else if (!dnnjit__rows_problem(g, grp, &pb)) {
        snprintf(reason, sizeof reason, "the group is not a row group");
    } else if (dnnjit__node_compute_type(g, pb.op) == DNNJIT_DATA_TYPE_DOUBLE) {
        snprintf(reason, sizeof reason, "the rows engine computes in float, not DOUBLE");
    } else if (!dnnjit__kernel_assign_slots(g, grp, &slots)) {
        snprintf(reason, sizeof reason, "the group touches more tensors or scalars than a kernel takes");
    } else if (pb.geo.cols > INT_MAX / 2) {
        snprintf(reason, sizeof reason, "rows of %lld elements are longer than the engine indexes",
                 (long long)pb.geo.cols);
    } else {
        const knob_t *kn = &knobs[knob];
        int vec = vec_of(&pb, kn);
        int64_t vectors = (pb.geo.cols + vec - 1) / vec, seg_cols, counters, scratch;
        int64_t registers = row_registers(&pb, kn), split = split_of(&pb, kn, &seg_cols);
        scratch_of(&pb, kn, &counters, &scratch);
        bool in_regs = kn->how == REGISTERS || kn->how == FUSED;
        int64_t sums = 2 * chunks_of(&pb, kn) * vec, held = registers + (kn->shared_sums ? 0 : sums);
        /* A block of several rows adds their column sums up in shared memory (see
         * rows_norm_backward.cuh), and a plan with shared sums keeps each thread's there. */
        int64_t shared = (kn->rpb > 1 ? (int64_t)kn->rpb * 2 * 4 * pb.geo.cols : 0) +
                         (kn->shared_sums ? sums * kn->tpr * kn->rpb * 4 : 0);
        if (scratch && slots.tensor_count == DNNJIT__MAX_KERNEL_TENSORS)
            snprintf(reason, sizeof reason, "the group leaves no kernel argument for the scratch");
        else if (kn->vector && pb.vec == 1)
            snprintf(reason, sizeof reason, "vector access needs a row length and row starts that are multiples "
                                            "of a 16-byte vector");
        else if (kn->tpr > vectors)
            snprintf(reason, sizeof reason, "%d threads per row would idle on rows of %lld vectors", kn->tpr,
                     (long long)vectors);
        else if (pb.geo.columns && kn->how != COLUMNS)
            snprintf(reason, sizeof reason, "a reduction over the outer axes runs as column blocks (one element "
                                            "of Y per column)");
        else if (!pb.geo.columns && kn->how == COLUMNS)
            snprintf(reason, sizeof reason, "only a reduction over the outer axes runs as column blocks");
        else if (kn->how == SPLIT && pb.kept_inputs > 0)
            snprintf(reason, sizeof reason, "only a one-pass op (a reduction) splits its rows");
        else if (kn->how == SPLIT && pb.geo.rows >= BUSY_ITEMS)
            snprintf(reason, sizeof reason, "%lld rows keep the GPU busy without splitting them",
                     (long long)pb.geo.rows);
        else if (kn->how == SPLIT && split < 2)
            snprintf(reason, sizeof reason, "rows of %lld vectors are too short to split at %d threads", (long long)vectors,
                     kn->tpr);
        else if (in_regs && registers > ROW_REGISTERS)
            snprintf(reason, sizeof reason, "the row needs %lld registers per thread at %d threads per row (at most "
                     "%d; a stream plan reads it in passes)", (long long)registers, kn->tpr, ROW_REGISTERS);
        else if (kn->how == FUSED && !pb.column_role)
            snprintf(reason, sizeof reason, "only a norm backward that writes DSCALE or DBIAS adds up columns");
        else if (kn->how == FUSED && shared > FUSED_SHARED)
            snprintf(reason, sizeof reason, "the column sums a block keeps in shared memory take %lld bytes (at most "
                     "%d)", (long long)shared, FUSED_SHARED);
        else if (kn->how == FUSED && held > FUSED_REGISTERS)
            snprintf(reason, sizeof reason, "%s %lld registers per thread at %d threads per row (at most %d)",
                     kn->shared_sums ? "the row needs" : "the row and its column sums need", (long long)held, kn->tpr,
                     FUSED_REGISTERS);
        else if (kn->cluster > 1 && *arch && dnnjit__arch_number(arch) < 90)
            snprintf(reason, sizeof reason, "clusters of blocks need sm_90 or later, not %s", arch);
        else if (kn->cluster > 1 && split != kn->cluster)
            snprintf(reason, sizeof reason, "rows of %lld vectors do not cut into %d slices of whole %d-thread chunks",
                     (long long)vectors, kn->cluster, kn->tpr);
        else if (kn->how == STREAM && registers <= ROW_REGISTERS)
            snprintf(reason, sizeof reason, "the row fits in registers at %d threads per row, which reads it once",
                     kn->tpr);
    }
    if (*reason && why)
        snprintf(why, why_size, "%s", reason);
    return !*reason;
}

/* Mode FALLBACK must run every valid graph: the fallback engine runs a row op alone, so a
 * row op fused with pointwise nodes takes the simplest rows plan instead (one element at a
 * time, no split rows). */
static int rows_fallback_knob(dnnjit_graph_t g, const dnnjit__group_t *grp, const char *arch, char *why,
                              size_t why_size)
{
    /* Table order among the scalar plans: the fewest threads per row that hold the row in
     * registers, else a streaming block; every row length has one. */
    for (int k = 0; k < KNOB_COUNT; k++)
        if (!knobs[k].vector && knobs[k].how != SPLIT && rows_supports(g, grp, k, arch, why, why_size))
            return k;
    return -1;
}

/* Whether a cluster plan's blocks prefetch into L2 the row after the one they read next
 * (dj_cluster_rows). With 1024 threads an SM (four blocks of 256) their own loads keep the
 * memory busy and the prefetches only add requests: on the H200 (two rounds) 4096x32768
 * bf16 layer norm backward took 267.0-267.1 us without them against 271.5-272.6 with
 * them, RMS norm 253.9-254.7 against 269.0-270.8. At three blocks an SM they change
 * nothing (279.5-280.0 without, 278.7-279.4 with), and with row tickets they pay off
 * (265.3-265.6 with, 274.1-274.6 without). */
static bool prefetches_rows(const knob_t *kn)
{
    return kn->sm_threads < 1024;
}

static void rows_knob_name(int knob, char *buf, size_t size)
{
    const knob_t *kn = &knobs[knob];
    char cluster[24] = "";
    if (kn->cluster > 1)
        snprintf(cluster, sizeof cluster, "_c%d%s", kn->cluster, kn->row_tickets ? "_tickets" : "");
    char fused[24] = "";
    if (kn->shared_sums)
        snprintf(fused, sizeof fused, "_fused_smem_b%d", kn->sm_threads / (kn->tpr * kn->rpb));
    else if (kn->how == FUSED)
        snprintf(fused, sizeof fused, "_fused%s", kn->sm_threads < 1024 ? "_half" : "");
    snprintf(buf, size, "t%d_r%d_%s%s%s%s", kn->tpr, kn->rpb, kn->vector ? "vec" : "scalar",
             kn->how == STREAM    ? "_stream"
             : kn->how == SPLIT   ? "_split"
             : kn->how == COLUMNS ? "_columns"
                                  : "",
             fused, cluster);
}

/* How far a plan lies from what the H200 measured fastest (dnnjit-bench rows --all-plans,
 * effective TB/s), in octaves of threads per row; mode B's cost takes each as about 15% of
 * the bandwidth, which is what an octave cost there.
 * - A thread per 32 bytes of the row (of its narrowest tensor: two 16-byte vectors), at
 *   most 512. 4096-wide bf16 rows (8 KB) ran at 4.01-4.15 TB/s at 256 threads against
 *   3.97-4.10 at 64 and 128 and 2.87-3.48 at 512 (one vector a thread: too little in
 *   flight); 32768-wide ones (64 KB) at 3.87-3.99 at 512 against 2.67-3.99 at 1024 (two
 *   blocks an SM, each idle at its block-wide reductions), and their backward ops, which
 *   fit only 1024 threads, at 2.01-4.26 against 1.72-2.56 streamed. 1000-wide fp16 rows
 *   (2000 bytes, 125 vectors) ran at 3.63-4.04 TB/s at 64 threads of vectors (softmax,
 *   layer and RMS norm, add + RMS norm, softmax backward), 1-4% ahead of 32 threads and
 *   4-10% ahead of 16, against 2.64-3.57 at 128 threads one element at a time. Shorter
 *   rows keep the rule down to one thread a row: a softmax over 64 floats, 256 halves or
 *   512 bf16 (128 MB each way) ran at 8, 16 and 32 threads within 2% of the best plan.
 * - Access one element at a time, half an octave: at the same threads per row vectors
 *   ran 1.10-1.19 times as fast on 4096-wide rows (1.55 for add + RMS norm), 1.2-1.4
 *   times on 1000-wide fp16 ones.
 * - A fused norm backward at 1024 threads per SM, two octaves: its twin at 512 (_half:
 *   up to 128 registers a thread without spills, half the partial sums) ran at 2.51-2.98
 *   TB/s against 2.23-2.30 (4096-wide bf16, 256 threads) and 2.55-2.65 against 1.78-1.85
 *   (1000-wide fp16, 64 threads).
 * - A cluster plan with its column sums in registers, three quarters of an octave: its
 *   twin with them in shared memory ran 11-12% faster (see the knobs).
 * - A column plan (a reduction over the rows) counts its octaves from 32 threads across
 *   (a warp reading 512 bytes of a row in vectors), or from one thread per vector or
 *   element of a narrower row; two and a half more one element at a time, which took 2.2
 *   to 4.5 times as long on the H200 (over 32768 x 1000 fp16 rows 57.9 us at 4 threads
 *   across against 25.9 in vectors at 32, over 262144 x 64 bf16 34.0 against 11.6 at 8). */
static double plan_penalty(const dnnjit__rows_problem_t *pb, const knob_t *kn)
{
    if (kn->how == COLUMNS) {
        double across = (double)((pb->geo.cols + vec_of(pb, kn) - 1) / vec_of(pb, kn));
        return fabs(log2((double)kn->tpr / (across < 32.0 ? across : 32.0))) + (kn->vector ? 0.0 : 2.5);
    }
    double preferred = (double)pb->geo.cols / kn->cluster * pb->elem / 32.0;
    preferred = preferred < 1.0 ? 1.0 : preferred > 512.0 ? 512.0 : preferred;
    double octaves = fabs(log2((double)kn->tpr / preferred));
    /* Cluster plans with shared sums: four blocks an SM first, three a quarter of an octave
     * behind (see the knobs and prefetches_rows). */
    return octaves + (kn->vector ? 0.0 : 0.5) +
           (kn->how == FUSED && kn->cluster == 1 && kn->sm_threads == 1024 ? 2.0 : 0.0) +
           (kn->cluster > 1 && !kn->shared_sums ? 0.75 : 0.0) +
           (kn->cluster > 1 && kn->shared_sums && kn->sm_threads != 1024 ? 0.25 : 0.0);
}

/* Mode A: split plans (supported only for few long rows, which would otherwise leave most
 * of the GPU idle), then fused ones (which read a norm backward's inputs once rather than
 * twice: at 256 threads 2.51-2.98 TB/s against 2.22-2.34 for the same threads with column
 * blocks), then register plans, then stream plans (and column plans, the only ones a
 * reduction over the rows has); within each the smallest penalty, table order among
 * equals. */
static double rows_rule(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    dnnjit__rows_problem_t pb;
    dnnjit__rows_problem(g, grp, &pb);
    const knob_t *kn = &knobs[knob];
    int rank = kn->how == SPLIT ? 0 : kn->how == FUSED ? 1 : kn->how == REGISTERS ? 2 : 3;
    /* A column plan that fills less than half a wave loses three octaves: over 131072 x 256
     * bf16 rows 32 threads across make one strip of 128 segments (a quarter of a wave),
     * 28.5 us on the H200 against 24.7 at 8 threads across (four strips, a full wave). */
    double idle = kn->how == COLUMNS && column_fill(&pb, kn) < 0.5 ? 3.0 : 0.0;
    return 100.0 * rank + plan_penalty(&pb, kn) + idle;
}

static double tensor_bytes(dnnjit_graph_t g, dnnjit_tensor_t id)
{
    const dnnjit__tensor_t *t = dnnjit__tensor(g, id);
    return t->is_pass_by_value ? 0.0
                               : (double)dnnjit__numel(t->ndim, t->dim) * (double)dnnjit_data_type_size(t->resolved_type);
}

static double rows_cost(dnnjit_graph_t g, const dnnjit__group_t *grp, int knob)
{
    /* A launch (~2 us), then the longer of two bounds: bytes over an H200's ~3.8 TB/s,
     * slowed by threads idling past the row's end and by 0.85 to the plan's penalty (see
     * plan_penalty);
     * and memory latency (~1 us) for every time the row reads fill what a plan keeps in
     * flight (at least once).
     * Streamed passes after the first count a third of their bytes when they hit L2, and
     * the column sums of a norm backward read DY and X again, or for a fused plan write and
     * read a partial sum per row block. */
    dnnjit__rows_problem_t pb;
    dnnjit__rows_problem(g, grp, &pb);
    const knob_t *kn = &knobs[knob];
    double bytes = 0, row_inputs = 0;
    for (int64_t i = 0; i < grp->input_count + grp->output_count; i++) {
        dnnjit_tensor_t id = dnnjit__group_tensor(grp, i);
        bytes += tensor_bytes(g, id);
        if (i < grp->input_count && dnnjit__rows_view(&pb, dnnjit__tensor(g, id)).access != DNNJIT__ROWS_ROWCONST)
            row_inputs += tensor_bytes(g, id);
    }
    if (kn->how == COLUMNS) {
        /* One read of X, slowed by lanes past the row's end and by blocks too few to fill
         * the GPU, though less than in proportion: each thread keeps four rows' loads in
         * flight, and a quarter of a wave (one strip of 262144 x 64 bf16 rows in 128
         * segments) read 2.9 TB/s on the H200. */
        column_layout_t l = column_layout(&pb, kn);
        double used = (double)pb.geo.cols / (double)(l.strips * l.strip);
        return 2.0 + bytes / (3.8e6 * used * pow(column_fill(&pb, kn), 0.25) * pow(0.85, plan_penalty(&pb, kn)));
    }
    if (kn->how == STREAM) {
        /* Later passes hit L2 while the rows in flight fit in it: blocks of a plan fill an
         * SM up to 2048 threads, on 132 SMs, against about 40 of the 50 MB. */
        double resident_rows = 132.0 * (2048 / (kn->tpr * kn->rpb)) * kn->rpb;
        double row_bytes = row_inputs / (double)pb.geo.rows;
        bytes += (pb.passes - 1) * row_inputs * (resident_rows * row_bytes <= 40e6 ? 1.0 / 3.0 : 1.0);
    }
    if (kn->how == FUSED)
        bytes += 2.0 * (double)fused_groups(&pb, kn) * 2.0 * (double)pb.geo.cols * 4.0;
    else if (pb.column_role)
        bytes += tensor_bytes(g, pb.op->in[0]) + tensor_bytes(g, pb.op->in[1]);
    int vec = vec_of(&pb, kn);
    int64_t seg_cols, split = split_of(&pb, kn, &seg_cols);
    double chunks = (double)chunks_of(&pb, kn);
    double used = (double)seg_cols / (chunks * kn->tpr * vec);
    double rate = 3.8e6 * used * pow(0.85, plan_penalty(&pb, kn));
    /* In flight: each thread's whole share of the row when it stays in registers, else up
     * to four chunks, over the threads the GPU holds at once. */
    double element = (double)dnnjit_data_type_size(dnnjit__tensor(g, pb.op->in[0])->resolved_type);
    double threads =
        (double)(kn->how == FUSED ? fused_groups(&pb, kn) * kn->cluster * kn->rpb : pb.geo.rows * split) * kn->tpr;
    threads = threads < 132.0 * 2048 ? threads : 132.0 * 2048;
    double in_flight = threads * (in_registers(&pb, kn) ? chunks : chunks < 4 ? chunks : 4) * vec * element;
    double reads = row_inputs * (kn->how == STREAM ? pb.passes : 1);
    double streaming = bytes / rate, waiting = (reads > in_flight ? reads / in_flight : 1.0) * 1.0;
    return 2.0 + (streaming > waiting ? streaming : waiting);
}

static const char *template_of(const dnnjit__rows_problem_t *pb)
{
    switch (pb->op->op) {
    case DNNJIT_OP_REDUCTION:
        return pb->geo.columns ? "rows_column_reduction.cuh" : "rows_reduction.cuh";
    case DNNJIT_OP_SOFTMAX:
        return "rows_softmax.cuh";
    case DNNJIT_OP_SOFTMAX_BACKWARD:
        return "rows_softmax_backward.cuh";
    case DNNJIT_OP_LAYERNORM:
    case DNNJIT_OP_RMSNORM:
        return "rows_norm.cuh";
    default:
        return "rows_norm_backward.cuh";
    }
}

/* The op's own constants (see its template). */
static void emit_op_constants(dnnjit__strbuf_t *sb, const dnnjit__rows_problem_t *pb)
{
    const dnnjit__node_t *n = pb->op;
    switch (n->op) {
    case DNNJIT_OP_REDUCTION:
        dnnjit__emit_reduce_mode(sb, n->attr.reduction.mode);
        break;
    case DNNJIT_OP_SOFTMAX:
        dnnjit__sb_printf(sb, "[[maybe_unused]] constexpr int DJ_STATS = %d;\n", (int)n->attr.softmax.stats);
        break;
    case DNNJIT_OP_SOFTMAX_BACKWARD:
        break;
    case DNNJIT_OP_LAYERNORM:
    case DNNJIT_OP_RMSNORM:
        dnnjit__sb_printf(sb, "[[maybe_unused]] constexpr bool DJ_CENTER = %s;\n",
                          n->op == DNNJIT_OP_LAYERNORM ? "true" : "false");
        break;
    default:
        dnnjit__sb_printf(sb,
                          "[[maybe_unused]] constexpr bool DJ_CENTER = %s;\n"
                          "[[maybe_unused]] constexpr bool DJ_DBIAS = %s;\n"
                          "[[maybe_unused]] constexpr int DJ_STRIP = %d;\n"
                          "[[maybe_unused]] constexpr int DJ_SEGMENTS = %lld;\n"
                          "[[maybe_unused]] constexpr dj_i64 DJ_SEG_ROWS = %lldLL;\n",
                          n->op == DNNJIT_OP_LAYERNORM_BACKWARD ? "true" : "false",
                          dnnjit__rows_writes(pb->grp, n->out[2] /* DBIAS */) ? "true" : "false",
                          pb->strip, (long long)pb->segments,
                          (long long)pb->seg_rows);
        break;
    }
}

static dnnjit_status_t rows_generate(dnnjit_graph_t g, const dnnjit__partition_t *p, const dnnjit__group_t *grp,
                                     int knob, dnnjit__kernel_t *k)
{
    (void)p;
    *k = (dnnjit__kernel_t){0};
    dnnjit__rows_problem_t pb;
    /* No architecture: planning has already refused what the handle's cannot run. */
    if (!rows_supports(g, grp, knob, "", NULL, 0) || !dnnjit__rows_problem(g, grp, &pb) ||
        !dnnjit__kernel_assign_slots(g, grp, k))
        return dnnjit__fail(g, DNNJIT_STATUS_NOT_SUPPORTED, "rows engine: the group of %s \"%s\" is not supported",
                            dnnjit__op_label(g->nodes[grp->first_node].op), g->nodes[grp->first_node].name);
    const knob_t *kn = &knobs[knob];
    /* A fused plan's column blocks come after its row blocks (see rows_norm_backward.cuh),
     * in whole clusters. */
    int64_t fused = fused_groups(&pb, kn) * kn->cluster;
    int strip_warps = fused_strip_warps(&pb, kn);
    int64_t block_cols = (int64_t)FUSED_STRIP * (kn->tpr * kn->rpb / 32 / strip_warps);
    int64_t fused_clusters = (pb.geo.cols + block_cols * kn->cluster - 1) / (block_cols * kn->cluster);
    column_layout_t columns = kn->how == COLUMNS ? column_layout(&pb, kn) : (column_layout_t){0};
    int64_t col_blocks = fused                ? fused_clusters * kn->cluster
                         : kn->how == COLUMNS ? columns.strips * columns.segments
                         : pb.column_role     ? (pb.geo.cols + pb.strip - 1) / pb.strip * pb.segments
                                              : 0;
    int64_t seg_cols, split = split_of(&pb, kn, &seg_cols), counters, scratch;
    scratch_of(&pb, kn, &counters, &scratch);
    if (scratch) {
        k->scratch_slot = k->tensor_count;
        k->scratch_bytes = scratch;
        k->scratch_zero_bytes = counters * 4;
    }
    int64_t row_blocks = fused ? fused : kn->how == COLUMNS ? 0 : (pb.geo.rows * split + kn->rpb - 1) / kn->rpb;
    row_blocks = row_blocks < MAX_ROW_BLOCKS ? row_blocks : MAX_ROW_BLOCKS;

    dnnjit__strbuf_t sb = {0};
    dnnjit__sb_append(&sb, dnnjit__template("common.cuh"));
    dnnjit__sb_printf(&sb, "\n// ---- generated by the rows engine for %s \"%s\" (%lld nodes): %lld rows of %lld ----\n",
                      dnnjit__op_label(pb.op->op), pb.op->name, (long long)grp->node_count, (long long)pb.geo.rows,
                      (long long)pb.geo.cols);
    dnnjit__sb_printf(&sb,
                      "[[maybe_unused]] constexpr dj_i64 DJ_ROWS = %lldLL;\n"
                      "[[maybe_unused]] constexpr int DJ_COLS = %lld;\n"
                      "[[maybe_unused]] constexpr int DJ_TPR = %d;\n"
                      "[[maybe_unused]] constexpr int DJ_BLOCK = %d;\n"
                      "[[maybe_unused]] constexpr int DJ_VEC = %d;\n"
                      "[[maybe_unused]] constexpr bool DJ_REGS = %s;\n"
                      "[[maybe_unused]] constexpr bool DJ_FLOAT_ROWS = %s;\n"
                      "[[maybe_unused]] constexpr int DJ_SPLIT = %lld;\n"
                      "[[maybe_unused]] constexpr int DJ_SEG_COLS = %lld;\n"
                      "[[maybe_unused]] constexpr unsigned DJ_COL_BLOCKS = %lldu;\n"
                      "[[maybe_unused]] constexpr unsigned DJ_FUSED_BLOCKS = %lldu;\n"
                      "[[maybe_unused]] constexpr unsigned DJ_FUSED_COL_BLOCKS = %lldu;\n"
                      "[[maybe_unused]] constexpr int DJ_FUSED_STRIP = %d;\n"
                      "[[maybe_unused]] constexpr int DJ_FUSED_STRIP_WARPS = %d;\n"
                      "[[maybe_unused]] constexpr int DJ_CLUSTER = %d;\n"
                      "[[maybe_unused]] constexpr int DJ_SCRATCH_SLOT = %d;\n"
                      "[[maybe_unused]] constexpr dj_i64 DJ_SCRATCH_COUNTERS = %lldLL;\n"
                      "[[maybe_unused]] constexpr bool DJ_SHARED_COL_SUMS = %s;\n"
                      "[[maybe_unused]] constexpr bool DJ_ROW_TICKETS = %s;\n"
                      "[[maybe_unused]] constexpr bool DJ_PREFETCH_ROWS = %s;\n"
                      "[[maybe_unused]] constexpr bool DJ_COLUMN_OP = %s;\n",
                      (long long)pb.geo.rows, (long long)pb.geo.cols, kn->tpr, kn->tpr * kn->rpb, vec_of(&pb, kn),
                      in_registers(&pb, kn) ? "true" : "false", float_rows(&pb, kn) ? "true" : "false",
                      (long long)split, (long long)seg_cols,
                      (long long)(fused ? 0 : col_blocks), (long long)fused,
                      (long long)(fused ? col_blocks : 0), FUSED_STRIP, strip_warps, kn->cluster,
                      k->scratch_slot, (long long)(scratch ? counters : 0), kn->shared_sums ? "true" : "false",
                      kn->row_tickets ? "true" : "false", prefetches_rows(kn) ? "true" : "false",
                      kn->how == COLUMNS ? "true" : "false");
    /* A fused plan's grid assumes sm_threads run at once, which its launch bounds ask the
     * compiler for; a cluster plan's kernel also names its cluster size. A register plan
     * with little to hold asks for a full SM (see FULL_SM_REGISTERS). Other plans give only
     * the block size: naming one block per SM as the minimum lets ptxas take more registers
     * (96 instead of 64 for a 32768-wide bf16 softmax at 512 threads, halving the blocks an
     * SM holds). */
    char cluster_dims[48] = "";
    if (kn->cluster > 1)
        snprintf(cluster_dims, sizeof cluster_dims, " __cluster_dims__(%d, 1, 1)", kn->cluster);
    int sm_threads = fused ? kn->sm_threads
                     : kn->how == REGISTERS && row_registers(&pb, kn) + 2 * k->tensor_count <= FULL_SM_REGISTERS
                         ? 2048
                         : 0;
    if (sm_threads)
        dnnjit__sb_printf(&sb, "#define DJ_LAUNCH_BOUNDS __launch_bounds__(DJ_BLOCK, %d)%s\n",
                          sm_threads / (kn->tpr * kn->rpb), cluster_dims);
    else
        dnnjit__sb_append(&sb, "#define DJ_LAUNCH_BOUNDS __launch_bounds__(DJ_BLOCK)\n");
    emit_op_constants(&sb, &pb);
    if (kn->how == COLUMNS)
        dnnjit__sb_printf(&sb,
                          "[[maybe_unused]] constexpr int DJ_STRIP = %d;\n"
                          "[[maybe_unused]] constexpr int DJ_SEGMENTS = %lld;\n"
                          "[[maybe_unused]] constexpr dj_i64 DJ_SEG_ROWS = %lldLL;\n"
                          "[[maybe_unused]] constexpr int DJ_COLUMN_BATCH = %d;\n",
                          columns.strip, (long long)columns.segments, (long long)columns.seg_rows, COLUMN_BATCH);
    dnnjit__sb_append(&sb, "\n");
    dnnjit__sb_append(&sb, dnnjit__template("rows_common.cuh"));
    dnnjit__sb_append(&sb, "\n// ---- accessors and ports ----\n");
    bool ok = dnnjit__rows_emit(&sb, &pb, k, vec_of(&pb, kn));
    dnnjit__sb_append(&sb, dnnjit__template(template_of(&pb)));
    dnnjit__sb_append(&sb, "\n");
    dnnjit__sb_append(&sb, dnnjit__template("rows_kernel.cuh"));
    k->source = dnnjit__sb_take(&sb);
    if (!ok || !k->source) {
        free(k->source);
        k->source = NULL;
        return dnnjit__fail(g, DNNJIT_STATUS_OUT_OF_MEMORY, "rows engine: out of memory generating source");
    }
    snprintf(k->entry, sizeof k->entry, "dj_rows");
    k->grid[0] = (unsigned)(col_blocks + row_blocks);
    k->grid[1] = k->grid[2] = 1;
    k->block[0] = (unsigned)(kn->tpr * kn->rpb);
    k->block[1] = k->block[2] = 1;
    /* A cluster plan's row groups are as many clusters as the device holds at once (see
     * dj_fused_groups in rows_norm_backward.cuh), which loading finds out. */
    if (fused && kn->cluster > 1) {
        k->resident_cluster = (unsigned)kn->cluster;
        k->resident_tail = (unsigned)col_blocks;
    }
    return DNNJIT_STATUS_SUCCESS;
}

static uint32_t rows_notes(int knob)
{
    return knobs[knob].row_tickets ? DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC : 0;
}

const dnnjit__engine_t dnnjit__engine_rows = {
    .name = "rows",
    .knob_count = KNOB_COUNT,
    .supports = rows_supports,
    .knob_name = rows_knob_name,
    .cost = rows_cost,
    .rule = rows_rule,
    .fallback_knob = rows_fallback_knob,
    .generate = rows_generate,
    .notes = rows_notes,
};
