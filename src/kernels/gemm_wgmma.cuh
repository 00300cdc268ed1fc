// Tensor-core GEMM for sm_90a: C[batch] = A[batch] * B[batch] with wgmma from shared memory,
// operands brought in by TMA through a pipeline of mbarriers, then the group's fused epilogue
// applied to the accumulator registers.
//
// A CTA of three warpgroups stays resident (one per SM) and walks the output tiles
// blockIdx.x, blockIdx.x + gridDim.x, ... in grouped order (DJ_GROUP tiles along one axis
// before stepping along the other, so that neighbouring CTAs share operand tiles in L2).
// With DJ_CLUSTER 2 the CTAs come in clusters of two that walk the work items together, a
// work item being two tiles stacked along M (the second possibly past the matrix): each CTA
// loads its own A tile and one half of the shared B tile, multicast into both CTAs' stages,
// so that B crosses from L2 once per pair. A stage is then free once the consumers of both
// CTAs have released it: each consumer warp arrives on the `empty` barrier of both CTAs.
// Warpgroup 0 is the producer: it gives up most of its registers and one of its threads
// issues the TMA loads of every K tile into a ring of DJ_STAGES shared-memory stages.
// Warpgroups 1 and 2 are the consumers: they take the registers the producer gave up, and
// each multiplies 64 rows of the DJ_BM x DJ_BN tile with m64nNk16 (fp8: k32, TF32: k8) wgmma, releasing a stage
// once the wgmma reading it has completed. Each stage has a `full` barrier (the producer's
// expected bytes, completed by TMA) and an `empty` barrier (one arrival per consumer warp).
//
// The generator places before this file:
//   DJ_ESIZE DJ_WK            bytes per element of A and B (2, 1 for fp8, 4 for TF32), and the K
//                             depth of one wgmma (16, 32 or 8: 32 bytes each way)
//   DJ_BM DJ_BN DJ_BK DJ_STAGES DJ_GROUP DJ_RASTER_N DJ_STAGED_EPILOGUE DJ_TMA_STORE   the knobs
//   DJ_EPI_COLS DJ_EPI_STRIDE the staged epilogue's chunk width and row pitch, in floats
//   DjOut DJ_C_RANK DJ_OUT_BOXES dj_c_batch_coords(b, c)   with DJ_TMA_STORE, the group's one
//       output: its type, the rank of its tensor map, the boxes of a consumer's buffer (below),
//       and the map's batch coordinates of batch entry b (without: a 16-bit type, 2, 1, none)
//   DJ_STORE_UNROLL           with DJ_TMA_STORE, the boxes of one turn of dj_store_tile's loop
//                             (2 where the fused expressions read a tensor of more than one
//                             element, else 1)
//   DJ_STORE_MAP_PARAM DJ_STORE_MAP   the kernel's parameter for that map and its address
//       (without DJ_TMA_STORE: nothing and nullptr)
//   DJ_CLUSTER DJ_CLUSTER_DIMS  CTAs per cluster (1 or 2) and the kernel's cluster attribute
//   DJ_M DJ_N DJ_K DJ_BATCH   the problem
//   DJ_ACC                    accumulators per consumer thread: 64 x DJ_BN / 128
//   dj_acc_declare() dj_acc_clear() dj_acc_promote() dj_acc_take(v) dj_acc_peek(v)
//   dj_acc_read(v)            the accumulators, which live in PTX registers that only these
//       functions' asm statements and dj_wgmma_ktile's name: declare them (first in the
//       kernel), clear the sums, add a promoted K tile's to them (DJ_PROMOTE), and read as
//       floats the sums' first 32 moving the rest down by 32, their first 4, or all DJ_ACC.
//       wgmma's registers are DJ_ACC floats, or with fp16 accumulation (fp8 operands, HALF
//       compute) DJ_ACC / 2 32-bit registers of two halves each (the floats' fragment
//       positions in pairs), which the reads turn into floats
//   DJ_A_KMAJOR DJ_A_RANK dj_a_batch_coords(b, c)   A over [M, K]: whether K is its contiguous
//       axis, the rank of its tensor map, and the map's batch coordinates of batch entry b
//   DJ_B_KMAJOR DJ_B_RANK dj_b_batch_coords(b, c)   the same for B over [N, K]
//   DJ_A_BY_CLASS DJ_A_ROW_STRIDE   (a macro, 0 or 1) whether A, 16-bit and K-major with rows
//       TMA cannot address, is read in place by row class (below), and its row stride
//   DJ_A_SHIFTED              (a macro, 0 or 1) whether such an A is read in place in tiles of
//       one row class each, B's K shifted to match (below; B is then M/N-major)
//   DJ_C_BY_CLASS DJ_C_ROW_STRIDE DJ_C_SLOT dj_c_batch_offset(b)   (a macro, 0 or 1) whether
//       the TMA-store epilogue stores tiles of one row class (DJ_A_SHIFTED), through a map per
//       class (map_c for class 0, map_c1 .. map_c7: the class's rows from their first column
//       on a 16-byte boundary to their last whole 16-byte piece); and for the outputs it
//       stores directly, the output's row stride, argument slot, and the offset in elements
//       of batch entry b
//   dj_wgmma_ktile(desc_a, desc_b, step_a, step_b, accumulate)   the DJ_BK / DJ_WK
//       m64n<DJ_BN>k<DJ_WK> wgmmas of a K tile into the accumulator registers, on the
//       descriptors desc_a + i * step_a and desc_b + i * step_b, the first adding to their
//       sums when accumulate (else overwriting them), the others adding; with the transpose
//       bits of the operands' majors. With DJ_A_BY_CLASS: dj_wgmma_ktile(a, desc_b, step_b,
//       accumulate), A from the registers a[16], four a wgmma
//   DJ_PROMOTE                whether the K walk promotes (fp8 with float accumulation): wgmma
//       adds fp8 products keeping fewer bits than a float (about 14, by DeepSeek-V3's
//       report), which over a long K loses much of a sum of correlated terms (0.11 relative
//       error at 8192^3 on the benchmark's values on the H200); so each K tile's sums go
//       into the accumulator registers afresh and are added to the float sums once complete
//   dj_epilogue(batch, row, col, acc0, acc1, pair, args)   the fused epilogue of columns col
//       and (when pair) col + 1; stores every output
//   DJ_STAGING DJ_SCRATCH_SLOT   whether an operand's strides are ones TMA cannot take, so
//       that the kernel first copies it into its scratch (DjArgs.ptr[DJ_SCRATCH_SLOT], the
//       grid barrier's counter in its first word)
//   DJ_SPLITS DJ_SPLIT_COUNTERS DJ_SPLIT_PARTIALS   split-K: the K splits of each tile, and the
//       byte offsets in the scratch of the tiles' arrival counters (zeroed by execute before
//       each launch) and of the splits' partial tiles
//   DjStageA DjStageB         each operand's copy (STAGED, TRANSPOSED, and the fields
//                             dj_stage_copy and dj_stage_transpose read)
//
// A by row class (DJ_A_BY_CLASS), for rows TMA cannot address (their starts off 16-byte
// boundaries) without copying them: rows r with r % 8 == c all start shift(c) = c *
// DJ_A_ROW_STRIDE % 8 elements past a 16-byte boundary, and every eighth row lies a 16-byte
// multiple further, so class c has a tensor map of its own (map_a for class 0, map_a1 ..
// map_a7), from the boundary before row c, whose boxes hold each of the tile's 16 rows of
// the class as a K tile and the 8 elements before it, unswizzled. wgmma cannot read such
// rows from shared memory (its layouts start every row on a 16-byte boundary), but it takes
// A from registers: consumer warp w of consumer g multiplies the rows of class 4g + w, in
// wgmma's row 16w + j the tile's row 4g + w + 8j, loading its fragments from the boxes
// (dj_a_fragments). The accumulators' rows follow (dj_row_of).
//
// A in tiles of one row class (DJ_A_SHIFTED), for the same rows when B is N-major: each tile
// holds DJ_BM rows of one class c, 8 apart, loaded through class c's map from its 16-byte
// boundary in whole K tiles, swizzled as any K-major tile, so that wgmma reads it from shared
// memory. Element x of such a box row is A's element x - shift(c) of that row, so B's K tile
// is loaded from K row k0 - shift(c) on (TMA fills the rows before B's first with zeros), and
// the K walk covers K + shift(c) elements. The first K tile's first shift(c) elements of each
// row are the end of the row before: finite or not, they must not reach the sums, so each
// consumer clears them before its first wgmma of the tile (dj_clear_row_heads). The tile
// rows are the classes' tiles, class after class (dj_tile_rows).
//
// Staging: every CTA copies its share of the lines of the staged operands into the scratch
// (through shared memory, so that global memory is read and written in aligned 16-byte
// pieces whatever the source's alignment; a round's loads in flight while the last round
// is written), then all wait at a grid-wide barrier, which the
// cooperative launch makes safe (every CTA resident), before the GEMM reads the copies
// with TMA. An fp8 or TF32 operand that is M- or N-major, which wgmma cannot read, is copied
// transposed (TRANSPOSED: dj_stage_transpose), so that the copy is K-major.
//
// Shared-memory layout of one stage, both operands in TMA's 128-byte swizzle (atoms of eight
// 128-byte rows, 1024-byte aligned):
//   K-major operand (R rows):  R rows of DJ_BK K elements (128 bytes: 64 16-bit, 128 fp8 or 32
//       TF32 ones), one TMA box.
//   MN-major operand (R rows, 16-bit only): R / 64 chunks, each DJ_BK K rows of 64 M-or-N
//       elements (8192 bytes), one TMA box each.
// Either way a consumer's 64 rows of A start 8192 bytes into the A stage.
//
// The epilogue through TMA stores (DJ_TMA_STORE, a group whose one output is 16-bit with
// rows TMA can address, or with tiles of one row class any rows whose classes it can:
// dj_store_tile): each consumer writes its 64 rows of the tile's outputs, computed by
// dj_epilogue_values, into a buffer of its own in TMA's 128-byte swizzle, and one of its
// threads hands the buffer to TMA, which stores it while the consumers go on to their next
// tile's K walk. The epilogue otherwise keeps the tensor cores idle while every CTA stores a
// tile at the same moment: 76 us of 1663 at 8192^3 bf16 on the H200. The buffer is written
// again only after TMA has read it. It holds DJ_OUT_BOXES boxes of 64 rows by 64 columns:
// where that is fewer than the tile's DJ_BN / 64, the consumer's rows go in rounds.
//
// The epilogue, direct: each thread calls dj_epilogue on the column pairs its accumulator
// fragments hold, so a warp's store covers 16 bytes of each of eight rows. Staged: each warp
// copies DJ_EPI_COLS columns of its 16 rows into its own shared-memory rows, then reads them
// back a row per half-warp, so that a store covers DJ_EPI_COLS consecutive elements of a row
// (and so do the epilogue's reads of bias or residual), chunk after chunk.
//
// Split-K (DJ_SPLITS > 1, for problems of too few tiles to fill the SMs): a work item is one
// split of a tile, a near-equal share of its K tiles (dj_k_range); see dj_split_sum.

constexpr int DJ_THREADS = 384;
constexpr int DJ_CONSUMER_WARPS = 8;
// In tiles of one row class (DJ_A_SHIFTED), the first M % 8 classes have DJ_CLASS_ROWS_HI rows,
// the others one fewer.
constexpr int DJ_CLASSES_HI = (int)(DJ_M % 8);
constexpr dj_i64 DJ_CLASS_ROWS_HI = (DJ_M + 7) / 8, DJ_CLASS_ROWS_LO = DJ_M / 8;
constexpr int DJ_CLASS_TILES_HI = (int)((DJ_CLASS_ROWS_HI + DJ_BM - 1) / DJ_BM);
constexpr int DJ_CLASS_TILES_LO = (int)((DJ_CLASS_ROWS_LO + DJ_BM - 1) / DJ_BM);
constexpr int DJ_TILES_M = DJ_A_SHIFTED ? DJ_CLASSES_HI * DJ_CLASS_TILES_HI + (8 - DJ_CLASSES_HI) * DJ_CLASS_TILES_LO
                                        : (int)((DJ_M + DJ_BM - 1) / DJ_BM);
constexpr int DJ_TILES_N = (int)((DJ_N + DJ_BN - 1) / DJ_BN);
// Work items (one tile per CTA of a cluster) per batch entry, and in all.
constexpr int DJ_ITEMS_M = (DJ_TILES_M + DJ_CLUSTER - 1) / DJ_CLUSTER;
constexpr int DJ_TILES = DJ_ITEMS_M * DJ_TILES_N;
constexpr dj_i64 DJ_WORK = (dj_i64)DJ_TILES * DJ_BATCH * DJ_SPLITS;
// K tiles of a tile's walk (one more for some row classes of A in tiles of one row class).
constexpr int DJ_KTILES = (int)((DJ_K + DJ_BK - 1) / DJ_BK);
// Every tile a CTA works on lies wholly inside C (none starts past M either, as a cluster's
// second tile row can when the tile rows are odd): its epilogue needs no bounds checks.
constexpr bool DJ_WHOLE_TILES = !DJ_A_SHIFTED && DJ_M % DJ_BM == 0 && DJ_N % DJ_BN == 0 && DJ_TILES_M % DJ_CLUSTER == 0;
// A by row class: each stage holds DJ_A_CLASSES boxes, one per class, of DJ_CLASS_ROWS rows
// of DJ_BK + 8 elements.
constexpr int DJ_A_CLASSES = 8, DJ_CLASS_ROWS = DJ_BM / DJ_A_CLASSES;
constexpr unsigned DJ_CLASS_ROW_BYTES = (DJ_BK + 8) * DJ_ESIZE, DJ_CLASS_BOX = DJ_CLASS_ROWS * DJ_CLASS_ROW_BYTES;
constexpr unsigned DJ_A_STAGE = DJ_A_BY_CLASS ? DJ_A_CLASSES * DJ_CLASS_BOX : DJ_BM * DJ_BK * DJ_ESIZE;
constexpr unsigned DJ_B_STAGE = DJ_BN * DJ_BK * DJ_ESIZE;
constexpr unsigned DJ_CHUNK = 64 * DJ_BK * DJ_ESIZE; // one MN-major chunk, or 64 K-major rows
// A consumer's TMA-store buffer: DJ_OUT_BOXES boxes of 64 rows by 128 bytes (64 outputs).
constexpr unsigned DJ_OUT_BYTES = DJ_TMA_STORE ? DJ_OUT_BOXES * 8192u : 0;
// The rows of each A tile loaded: with 64 rows or fewer in all, the first consumer's alone
// (the generator's box for K-major A has as many rows).
constexpr int DJ_A_ROWS = DJ_M <= DJ_BM / 2 ? DJ_BM / 2 : DJ_BM;

static_assert(DJ_BK * DJ_ESIZE == 128, "a K tile's row is one 128-byte swizzle span");
static_assert(DJ_WK * DJ_ESIZE == 32, "one wgmma reads 32 bytes of each row");
static_assert(DJ_ESIZE == 2 || (DJ_A_KMAJOR && DJ_B_KMAJOR), "wgmma reads fp8 and TF32 operands K-major only");
static_assert(DJ_BM == 128, "two consumer warpgroups of 64 rows each");
static_assert(DJ_BN % 64 == 0 && DJ_BN <= 256 && DJ_ACC == DJ_BN / 2, "wgmma's N and TMA's box");
static_assert(DJ_EPI_COLS == 32 && DJ_BN % DJ_EPI_COLS == 0, "a half-warp's 16 pairs span one staged chunk");
static_assert(DJ_CLUSTER == 1 || DJ_CLUSTER == 2, "clusters of one or two CTAs");
static_assert(!DJ_TMA_STORE || (DJ_SPLITS == 1 && !DJ_STAGED_EPILOGUE), "one epilogue at a time");
static_assert(!DJ_TMA_STORE || DJ_BN / 64 % DJ_OUT_BOXES == 0, "whole rounds of boxes");
static_assert(DJ_SPLITS == 1 || (DJ_CLUSTER == 1 && DJ_KTILES >= DJ_SPLITS), "every split of a lone CTA walks K");
static_assert(!DJ_A_BY_CLASS || (DJ_ESIZE == 2 && DJ_A_KMAJOR && !DJ_PROMOTE && !DJ_TMA_STORE),
              "A by row class: 16-bit K-major A, and an epilogue that maps each row");
static_assert(!DJ_A_SHIFTED || (!DJ_A_BY_CLASS && DJ_ESIZE == 2 && DJ_A_KMAJOR && !DJ_B_KMAJOR && DJ_CLUSTER == 1),
              "A in tiles of one row class: 16-bit K-major A, N-major B, lone CTAs");
static_assert(DJ_C_BY_CLASS == (DJ_A_SHIFTED && DJ_TMA_STORE), "TMA stores of tiles of one row class go by class");
static_assert(DJ_A_STAGE % 1024 == 0, "B's stages start on swizzle atoms");

// The kernel's parameters for the row classes' maps of operand x after class 0's map_x
// (map_x1 .. map_x7), and the eight maps' addresses, class by class.
#define DJ_CLASS_MAP_PARAMS(x)                                                                                         \
    , const __grid_constant__ DjTensorMap map_##x##1, const __grid_constant__ DjTensorMap map_##x##2,                  \
        const __grid_constant__ DjTensorMap map_##x##3, const __grid_constant__ DjTensorMap map_##x##4,                \
        const __grid_constant__ DjTensorMap map_##x##5, const __grid_constant__ DjTensorMap map_##x##6,                \
        const __grid_constant__ DjTensorMap map_##x##7
#define DJ_CLASS_MAPS(x)                                                                                               \
    {&map_##x, &map_##x##1, &map_##x##2, &map_##x##3, &map_##x##4, &map_##x##5, &map_##x##6, &map_##x##7}
#if DJ_A_BY_CLASS || DJ_A_SHIFTED
#define DJ_A_CLASS_MAP_PARAMS DJ_CLASS_MAP_PARAMS(a)
#else
#define DJ_A_CLASS_MAP_PARAMS
#endif
#if DJ_C_BY_CLASS
#define DJ_C_CLASS_MAP_PARAMS DJ_CLASS_MAP_PARAMS(c)
#else
#define DJ_C_CLASS_MAP_PARAMS
#endif

// A CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct __align__(64) DjTensorMap {
    dj_u64 opaque[16];
};

// Row class cls's map among DJ_CLASS_MAPS: selected, not indexed (an indexed array of the
// maps' addresses goes on the stack).
__device__ __forceinline__ const DjTensorMap *dj_class_map(const DjTensorMap *const (&maps)[8], int cls)
{
    const DjTensorMap *map = maps[0];
#pragma unroll
    for (int c = 1; c < 8; c++)
        if (cls == c)
            map = maps[c];
    return map;
}

// ---- PTX wrappers -----------------------------------------------------------------

// The producer's arrival, announcing the bytes TMA will deliver to this phase.
__device__ __forceinline__ void dj_mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void dj_mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Waits until the phase of parity `parity` has completed. A barrier's phase before its
// first one counts as completed, so waiting for parity 1 on a fresh barrier returns at once.
__device__ __forceinline__ void dj_mbar_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

// One TMA box of `map` at coordinates c (innermost first) into shared memory at dst,
// completing `bar`'s expected bytes. Boxes reaching past the tensor are filled with zeros.
template <int RANK>
__device__ __forceinline__ void dj_tma_load(unsigned dst, const DjTensorMap *map, unsigned bar, const int (&c)[5])
{
    const dj_u64 m = (dj_u64)map;
    if constexpr (RANK == 2)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
                     "[%2];\n" ::"r"(dst), "l"(m), "r"(bar), "r"(c[0]), "r"(c[1])
                     : "memory");
    else if constexpr (RANK == 3)
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, "
                     "%5}], [%2];\n" ::"r"(dst), "l"(m), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2])
                     : "memory");
    else if constexpr (RANK == 4)
        asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, "
                     "%5, %6}], [%2];\n" ::"r"(dst), "l"(m), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
                     : "memory");
    else
        asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, "
                     "%5, %6, %7}], [%2];\n" ::"r"(dst), "l"(m), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]),
                     "r"(c[4])
                     : "memory");
}

// The same box multicast: written at offset dst of the shared memory of every CTA of the
// cluster in `mask`, completing each one's barrier at offset `bar`.
template <int RANK>
__device__ __forceinline__ void dj_tma_load_multicast(unsigned dst, const DjTensorMap *map, unsigned bar,
                                                      const int (&c)[5], unsigned short mask)
{
    const dj_u64 m = (dj_u64)map;
    if constexpr (RANK == 2)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                     "[%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(dst), "l"(m), "r"(bar), "r"(c[0]), "r"(c[1]), "h"(mask)
                     : "memory");
    else if constexpr (RANK == 3)
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                     "[%0], [%1, {%3, %4, %5}], [%2], %6;\n" ::"r"(dst), "l"(m), "r"(bar), "r"(c[0]), "r"(c[1]),
                     "r"(c[2]), "h"(mask)
                     : "memory");
    else if constexpr (RANK == 4)
        asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                     "[%0], [%1, {%3, %4, %5, %6}], [%2], %7;\n" ::"r"(dst), "l"(m), "r"(bar), "r"(c[0]), "r"(c[1]),
                     "r"(c[2]), "r"(c[3]), "h"(mask)
                     : "memory");
    else
        asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                     "[%0], [%1, {%3, %4, %5, %6, %7}], [%2], %8;\n" ::"r"(dst), "l"(m), "r"(bar), "r"(c[0]),
                     "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "h"(mask)
                     : "memory");
}

// One box of shared memory at src (in the map's swizzle) stored to `map` at coordinates c by
// TMA, in the thread's current bulk group. Elements past the tensor are not written.
template <int RANK> __device__ __forceinline__ void dj_tma_store(const DjTensorMap *map, unsigned src, const int (&c)[5])
{
    const dj_u64 m = (dj_u64)map;
    if constexpr (RANK == 2)
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(m), "r"(src),
                     "r"(c[0]), "r"(c[1])
                     : "memory");
    else if constexpr (RANK == 3)
        asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(m),
                     "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2])
                     : "memory");
    else if constexpr (RANK == 4)
        asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(m),
                     "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
                     : "memory");
    else
        asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n" ::"l"(m),
                     "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
                     : "memory");
}

// Named barrier `id` among `threads` threads.
__device__ __forceinline__ void dj_bar_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void dj_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void dj_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void dj_wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accesses to A's fragments (DJ_A_BY_CLASS) across the
// asynchronous wgmma that reads them.
template <int N> __device__ __forceinline__ void dj_fence_regs(unsigned (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+r"(r[i])::"memory");
}

// A shared-memory matrix descriptor with the 128-byte swizzle: start address, leading and
// stride byte offsets, each in 16-byte units; mode 1 (128B) in bits 62-63.
__device__ __forceinline__ dj_u64 dj_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (dj_u64)((addr & 0x3FFFF) >> 4) | (dj_u64)(lbo >> 4) << 16 | (dj_u64)(sbo >> 4) << 32 | 1ull << 62;
}

// The descriptor of an operand's first K slice (DJ_WK deep) at `stage`. K-major: each next
// slice is 32 bytes further into every 128-byte row (the hardware applies the swizzle to the
// address it forms), eight-row groups 1024 bytes apart. MN-major: each next slice is 16 rows
// of 128 bytes further, eight-row K groups 1024 bytes apart (SBO), 64-wide M or N chunks
// DJ_CHUNK apart (LBO).
template <bool KMAJOR> __device__ __forceinline__ dj_u64 dj_operand_desc(unsigned stage)
{
    if constexpr (KMAJOR)
        return dj_desc(stage, 16, 1024);
    else
        return dj_desc(stage, DJ_CHUNK, 1024);
}
// The step from one slice's descriptor to the next: their distance in bytes in the
// descriptor's unit of 16 (no carry leaves the address field, shared memory being smaller
// than its 256 KiB).
template <bool KMAJOR> constexpr dj_u64 DJ_SLICE_STEP = (KMAJOR ? 32 : 16 * 128) / 16;

// x as a value the compiler knows to be the same in every lane of the warp (lane 0's); every
// lane of the warp must call it. The warpgroup index and the consumers' stage index go
// through it: ptxas then computes each stage's wgmma descriptors in uniform registers
// (UIADD3.64). From threadIdx and a loop counter, which it could not prove uniform, it
// computed them in every lane and moved each to a uniform register for its wgmma (R2UR),
// about 40 instructions a K tile a warp more (30.0M against 16.9M in all for 4096^3 bf16,
// where cuBLAS's kernel runs its K loop in uniform registers).
__device__ __forceinline__ int dj_uniform(int x)
{
    return __shfl_sync(0xffffffffu, x, 0);
}

// The stage that the it-th K tile (it >= 0) lies in, and the phase of that stage's barriers
// on this pass of the ring: the consumers wait for `full` in this phase, the producer for
// `empty` in the other one (the previous pass's release). The remainder is taken unsigned:
// two vector instructions fewer than the signed one.
__device__ __forceinline__ int dj_ring_stage(int it)
{
    return (int)((unsigned)it % DJ_STAGES);
}

__device__ __forceinline__ unsigned dj_ring_phase(int it)
{
    return (unsigned)it / DJ_STAGES & 1;
}

// dj_ring_stage made warp-uniform for the consumers' wgmma operands (dj_uniform: every lane of
// the warp must call it).
__device__ __forceinline__ int dj_consumer_stage(int it)
{
    return dj_uniform(dj_ring_stage(it));
}

// A consumer warp's release of a stage: an arrival on its `empty` barrier in every CTA of
// the cluster, whose producers all write the stage.
__device__ __forceinline__ void dj_release(unsigned empty, unsigned rank)
{
    dj_mbar_arrive(empty);
    if constexpr (DJ_CLUSTER == 2)
        dj_mbar_arrive_remote(empty, rank ^ 1u);
}

// ---- staging ------------------------------------------------------------------------

// The staged operands' lines go in units: each line is cut into SEGS near-equal segments of
// at most DJ_SEG_MAX bytes (each a multiple of 16 bytes but the line's last), so that a
// line of 4099 bf16 elements (8198 bytes) is three units of 2736 bytes and not two full
// ones and a third of 6 bytes. DjSegs<S> is operand S's cut.
constexpr int DJ_SEG_MAX = 4096;

template <class S> struct DjSegs {
    static constexpr bool COPIED = S::STAGED && !S::TRANSPOSED;
    static constexpr dj_i64 LINE_BYTES = S::INNER * DJ_ESIZE;
    static constexpr dj_i64 SEGS = (LINE_BYTES + DJ_SEG_MAX - 1) / DJ_SEG_MAX;
    static constexpr int SEG = COPIED ? (int)(((LINE_BYTES + SEGS - 1) / SEGS + 15) / 16 * 16) : 16;
    static constexpr dj_i64 UNITS = COPIED ? S::LINES * SEGS : 0; // none when not staged, or transposed
};

// One unit: its first byte in the operand, its length, where it goes in the scratch
// (16-byte aligned: lines are S::PITCH bytes apart, a multiple of 16), and the bytes of the
// operand's whole span (S::SPAN_LO to S::SPAN_HI around its pointer), which may all be read.
struct DjUnit {
    const unsigned char *begin;
    unsigned char *dst;
    int length;
    const unsigned char *span_lo, *span_hi;
};

template <class S> __device__ __forceinline__ DjUnit dj_unit_of(const DjArgs &args, dj_i64 u)
{
    using G = DjSegs<S>;
    const dj_i64 line = u / G::SEGS, seg = u % G::SEGS, rest = G::LINE_BYTES - seg * G::SEG;
    const unsigned char *const ptr = (const unsigned char *)args.ptr[S::SLOT];
    return {ptr + S::line(line) * DJ_ESIZE + seg * G::SEG,
            (unsigned char *)args.ptr[DJ_SCRATCH_SLOT] + S::OFFSET + line * S::PITCH + seg * G::SEG,
            (int)(rest < G::SEG ? rest : G::SEG), ptr + S::SPAN_LO, ptr + S::SPAN_HI};
}

// Unit u of both operands: A's first, then B's.
__device__ __forceinline__ DjUnit dj_unit(const DjArgs &args, dj_i64 u)
{
    return u < DjSegs<DjStageA>::UNITS ? dj_unit_of<DjStageA>(args, u)
                                       : dj_unit_of<DjStageB>(args, u - DjSegs<DjStageA>::UNITS);
}

// The 16 bytes at `from` in shared memory, whatever its alignment, from the two aligned
// 16-byte words that hold them (a warp's 128-bit loads of consecutive words take the fewest
// shared-memory cycles, where element-sized loads 16 bytes apart would conflict in banks).
// Both words lie in the unit's slot, which has 16 bytes to spare.
__device__ __forceinline__ uint4 dj_shared_unaligned16(const unsigned char *from)
{
    const unsigned off = (unsigned)((dj_u64)from & 15), words = off >> 2, bits = (off & 3) * 8;
    const uint4 lo = *(const uint4 *)(from - off), hi = *(const uint4 *)(from - off + 16);
    const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    unsigned r[5];
    // Selects with constant indices keep w in registers (an index by `words` would not).
#pragma unroll
    for (int i = 0; i < 5; i++)
        r[i] = words == 0 ? w[i] : words == 1 ? w[i + 1] : words == 2 ? w[i + 2] : w[i + 3];
    return make_uint4(__funnelshift_r(r[0], r[1], bits), __funnelshift_r(r[1], r[2], bits),
                      __funnelshift_r(r[2], r[3], bits), __funnelshift_r(r[3], r[4], bits));
}

// Copies the lines of the staged operands (S::LINES lines of S::INNER elements, line l's
// first element S::line(l) elements into DjArgs.ptr[S::SLOT], contiguous) into the scratch
// at byte S::OFFSET, lines S::PITCH bytes apart, through `buffer` (BUFFER bytes of shared
// memory, 16-byte aligned) in two halves: while the threads write one round's units from
// one half, the next round's loads are already in flight into the other. A round is up to
// SLOTS units per CTA (`slots`: fewer where that spreads the copy over every CTA), each
// taken by one warp (which works out where the unit lies once, not per piece): its lanes
// read the aligned 16-byte pieces that hold the unit's bytes into its slot (by cp.async,
// which keeps them in flight without holding registers; a piece may hold bytes around the
// unit, which belong to the tensor's buffer all the same, and only a piece that reaches past
// the tensor's span goes byte by byte, so that nothing outside it is read), then write the
// unit's bytes, shifted to the slot's start, as 16-byte stores (the last one may run into
// the line's padding, which TMA never reads).
template <unsigned BUFFER> __device__ void dj_stage_copy(const DjArgs &args, unsigned char *buffer)
{
    constexpr dj_i64 UNITS = DjSegs<DjStageA>::UNITS + DjSegs<DjStageB>::UNITS;
    constexpr int SEG = DjSegs<DjStageA>::SEG > DjSegs<DjStageB>::SEG ? DjSegs<DjStageA>::SEG : DjSegs<DjStageB>::SEG;
    constexpr int SLOT_BYTES = SEG + 16, HALF = (int)(BUFFER / 2 / 16 * 16), WARPS = DJ_THREADS / 32;
    constexpr int SLOTS = HALF / SLOT_BYTES;
    static_assert(SLOTS >= 1, "each half of the pipeline's stages holds at least one unit");
    // A round takes no more units per CTA than spread the copy over every CTA (1000 lines
    // of 154 bytes in 372-unit rounds went to three CTAs, 31 units a warp in turn, with
    // bytes loaded one by one at each unit's ends: 43 us for a 1000x77x1000 GEMM).
    const dj_i64 spread = (UNITS + gridDim.x - 1) / gridDim.x;
    const int slots = spread < SLOTS ? (int)spread : SLOTS;
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    const dj_i64 step = (dj_i64)gridDim.x * slots;
    auto load = [&](dj_i64 first, unsigned char *half) {
        for (int s = warp; s < slots && first + s < UNITS; s += WARPS) {
            const DjUnit un = dj_unit(args, first + s);
            const unsigned char *base = (const unsigned char *)((dj_u64)un.begin & ~(dj_u64)15);
            const unsigned char *end = un.begin + un.length;
            unsigned char *slot = half + s * SLOT_BYTES;
            for (int q = lane; base + 16 * q < end; q += 32) {
                const unsigned char *at = base + 16 * q;
                unsigned char *to = slot + 16 * q;
                if (at >= un.span_lo && at + 16 <= un.span_hi) {
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dj_smem_u32(to)), "l"(at)
                                 : "memory");
                } else {
                    // Every byte's load first, then the stores: loads and stores in turn
                    // would wait for memory sixteen times (they may alias, for all the
                    // compiler knows).
                    unsigned char v[16];
#pragma unroll
                    for (int b = 0; b < 16; b++)
                        v[b] = at + b >= un.begin && at + b < end ? at[b] : 0;
#pragma unroll
                    for (int b = 0; b < 16; b++)
                        if (at + b >= un.begin && at + b < end)
                            to[b] = v[b];
                }
            }
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    auto store = [&](dj_i64 first, const unsigned char *half) {
        for (int s = warp; s < slots && first + s < UNITS; s += WARPS) {
            const DjUnit un = dj_unit(args, first + s);
            const unsigned char *from = half + s * SLOT_BYTES + ((dj_u64)un.begin & 15);
            for (int c = lane; 16 * c < un.length; c += 32)
                *(uint4 *)(un.dst + 16 * c) = dj_shared_unaligned16(from + 16 * c);
        }
    };
    dj_i64 first = (dj_i64)blockIdx.x * slots;
    if (first < UNITS)
        load(first, buffer);
    for (int h = 0; first < UNITS; first += step, h ^= 1) {
        if (first + step < UNITS) {
            load(first + step, buffer + (h ^ 1) * HALF);
            asm volatile("cp.async.wait_group 1;\n" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::: "memory");
        }
        __syncthreads();
        store(first, buffer + h * HALF);
        // The round after next loads into this half.
        __syncthreads();
    }
}

// The unsigned integer of N bytes, which a copy moves elements of that size as.
template <int N> struct dj_uint_of_size;
template <> struct dj_uint_of_size<1> {
    typedef unsigned char type;
};
template <> struct dj_uint_of_size<2> {
    typedef unsigned short type;
};
template <> struct dj_uint_of_size<4> {
    typedef unsigned type;
};

// Copies a TRANSPOSED operand: line l of the copy (an M or N index) holds the S::INNER K
// elements S::line(l) + k * S::KSTRIDE of the operand, whose lines are its contiguous axis.
// Each warp takes tiles of 32 lines by 32 K steps in turn, through a tile of its own in
// `buffer`: its lanes read 32 neighbouring lines at each K step (consecutive addresses
// within a batch entry), then write 32 consecutive K elements of each line; the tile's
// rows are 33 elements apart, so that neither pass hits a bank twice.
template <class S, unsigned BUFFER> __device__ void dj_stage_transpose(const DjArgs &args, unsigned char *buffer)
{
    if constexpr (S::STAGED && S::TRANSPOSED) {
        using E = typename dj_uint_of_size<DJ_ESIZE>::type;
        constexpr int WARPS = DJ_THREADS / 32;
        static_assert(BUFFER >= WARPS * 32 * 33 * sizeof(E), "the stages hold every warp's tile");
        constexpr dj_i64 TILES_L = (S::LINES + 31) / 32, TILES_K = (S::INNER + 31) / 32;
        const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
        const E *const src = (const E *)args.ptr[S::SLOT];
        unsigned char *const dst = (unsigned char *)args.ptr[DJ_SCRATCH_SLOT] + S::OFFSET;
        E(*const tile)[33] = (E(*)[33])(buffer + warp * 32 * 33 * sizeof(E));
        for (dj_i64 t = (dj_i64)blockIdx.x * WARPS + warp; t < TILES_L * TILES_K; t += (dj_i64)gridDim.x * WARPS) {
            const dj_i64 l0 = t / TILES_K * 32, k0 = t % TILES_K * 32;
            const dj_i64 first = l0 + lane < S::LINES ? S::line(l0 + lane) : 0;
#pragma unroll 8
            for (int i = 0; i < 32; i++)
                tile[i][lane] = l0 + lane < S::LINES && k0 + i < S::INNER ? src[first + (k0 + i) * S::KSTRIDE] : E(0);
            __syncwarp();
            for (int j = 0; j < 32 && l0 + j < S::LINES; j++)
                if (k0 + lane < S::INNER)
                    ((E *)(dst + (l0 + j) * S::PITCH))[k0 + lane] = tile[lane][j];
            __syncwarp();
        }
    }
}

// The copies of the staged operands, through the pipeline's stages (not yet in use): the
// line copies, then the transposed ones.
__device__ __forceinline__ void dj_stage_operands(const DjArgs &args, unsigned char *stages)
{
    constexpr unsigned BUFFER = DJ_STAGES * (DJ_A_STAGE + DJ_B_STAGE);
    // (dj_stage_copy ends at a barrier, its buffer free again.)
    if constexpr (DjSegs<DjStageA>::COPIED || DjSegs<DjStageB>::COPIED)
        dj_stage_copy<BUFFER>(args, stages);
    dj_stage_transpose<DjStageA, BUFFER>(args, stages);
    dj_stage_transpose<DjStageB, BUFFER>(args, stages);
}

// Every CTA of the grid, its staged copies written: the writes made visible to the TMA
// unit (the async proxy) and to the other CTAs, then a count of arrivals in the scratch's
// first word (zeroed by execute before each launch).
__device__ __forceinline__ void dj_grid_barrier(unsigned *counter)
{
    asm volatile("fence.proxy.async;\n" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(counter, 1u);
        unsigned arrived;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(arrived) : "l"(counter) : "memory");
        } while (arrived < gridDim.x);
        asm volatile("fence.proxy.async;\n" ::: "memory");
    }
    __syncthreads();
}

// ---- tiles and loads ----------------------------------------------------------------

// The K tiles [begin, end) that split `split` of a tile walks: near-equal shares of the K
// walk, which A in tiles of one row class makes shift elements longer.
__device__ __forceinline__ void dj_k_range(int split, int shift, int &begin, int &end)
{
    const int ktiles = (int)((DJ_K + shift + DJ_BK - 1) / DJ_BK);
    begin = split * ktiles / DJ_SPLITS;
    end = (split + 1) * ktiles / DJ_SPLITS;
}

// The rows of tile row tm: row i of the tile is C's row first + step * i, and (with A in
// tiles of one row class) cls is the class and map_row the row of its map the tile starts at.
struct DjTileRows {
    int first, step, cls, map_row, shift;
};
__device__ __forceinline__ DjTileRows dj_tile_rows(int tm)
{
    if constexpr (!DJ_A_SHIFTED)
        return {tm * DJ_BM, 1, 0, tm * DJ_BM, 0};
    constexpr int HI = DJ_CLASSES_HI * DJ_CLASS_TILES_HI, LO = DJ_CLASS_TILES_LO > 0 ? DJ_CLASS_TILES_LO : 1;
    const int cls = tm < HI ? tm / DJ_CLASS_TILES_HI : DJ_CLASSES_HI + (tm - HI) / LO;
    const int j = tm < HI ? tm % DJ_CLASS_TILES_HI : (tm - HI) % LO;
    return {cls + 8 * DJ_BM * j, 8, cls, j * DJ_BM, (int)(cls * DJ_A_ROW_STRIDE % 8)};
}

// Batch entry and tile of work item `work` (a tile's splits are consecutive work items)
// for the CTA of cluster rank `rank`, in grouped order over the tiles.
__device__ __forceinline__ void dj_tile_of(dj_i64 work, unsigned rank, dj_i64 &batch, int &tm, int &tn)
{
    work /= DJ_SPLITS;
    batch = work / DJ_TILES;
    const int t = (int)(work % DJ_TILES);
    constexpr int major = DJ_RASTER_N ? DJ_TILES_N : DJ_ITEMS_M; // the grouped axis
    constexpr int minor = DJ_RASTER_N ? DJ_ITEMS_M : DJ_TILES_N;
    const int per_group = DJ_GROUP * minor;
    const int first = t / per_group * DJ_GROUP;
    const int size = major - first < DJ_GROUP ? major - first : DJ_GROUP;
    const int a = first + t % per_group % size, b = t % per_group / size;
    tm = (DJ_RASTER_N ? b : a) * DJ_CLUSTER + (int)rank;
    tn = DJ_RASTER_N ? a : b;
}

// The 64-row chunks of an MN-major operand tile at r0 that start inside its EXTENT rows:
// chunks wholly past the matrix are not loaded (their stale contents only reach outputs past
// the edge, which the epilogue does not store).
template <bool KMAJOR, int ROWS, dj_i64 EXTENT> __device__ __forceinline__ int dj_chunks(int r0)
{
    if constexpr (KMAJOR)
        return ROWS / 64;
    const dj_i64 left = (EXTENT - r0 + 63) / 64;
    return left < ROWS / 64 ? (int)left : ROWS / 64;
}

// Loads this CTA's share of B's tile (rows r0.., DJ_BN of them, by K tile k0) into `dst` of
// both CTAs of the cluster: K-major, the half of the rows at rank * DJ_BN / 2, one box, when
// it starts inside the matrix (`halves` of them do); MN-major, the rank's half of the 64-row
// chunks (the first rank's two of a 192-row tile's three), of those below `chunks`. Boxes
// wholly past the matrix are neither loaded nor counted, like the MN-major chunks of
// dj_chunks.
template <bool KMAJOR, int RANK>
__device__ __forceinline__ void dj_load_b_multicast(unsigned dst, const DjTensorMap *map, unsigned bar, int r0, int k0,
                                                    int pieces, const int (&batch)[3], unsigned rank)
{
    int c[5] = {0, 0, batch[0], batch[1], batch[2]};
    if constexpr (KMAJOR) {
        if ((int)rank < pieces) {
            c[0] = k0;
            c[1] = r0 + (int)rank * (DJ_BN / 2);
            dj_tma_load_multicast<RANK>(dst + rank * (DJ_BN / 2) * 128, map, bar, c, 3);
        }
    } else {
        constexpr int per_rank = (DJ_BN / 64 + 1) / 2;
        for (int chunk = (int)rank * per_rank; chunk < ((int)rank + 1) * per_rank && chunk < pieces; chunk++) {
            c[0] = r0 + chunk * 64;
            c[1] = k0;
            dj_tma_load_multicast<RANK>(dst + chunk * DJ_CHUNK, map, bar, c, 3);
        }
    }
}

// Loads rows r0.. (ROWS of them) by K tile k0 of one operand into `dst`: one box when
// K-major, `chunks` boxes of 64 rows when MN-major.
template <bool KMAJOR, int RANK>
__device__ __forceinline__ void dj_load_operand(unsigned dst, const DjTensorMap *map, unsigned bar, int r0, int k0,
                                                int chunks, const int (&batch)[3])
{
    int c[5] = {0, 0, batch[0], batch[1], batch[2]};
    if constexpr (KMAJOR) {
        c[0] = k0;
        c[1] = r0;
        dj_tma_load<RANK>(dst, map, bar, c);
    } else {
        for (int chunk = 0; chunk < chunks; chunk++) {
            c[0] = r0 + chunk * 64;
            c[1] = k0;
            dj_tma_load<RANK>(dst + chunk * DJ_CHUNK, map, bar, c);
        }
    }
}

// Loads the boxes of A's row classes (DJ_A_BY_CLASS) of tile row tm by K tile k0 into dst:
// the first `classes` of them (those with rows inside M).
__device__ __forceinline__ void dj_load_a_classes(unsigned dst, const DjTensorMap *const (&maps)[DJ_A_CLASSES],
                                                  unsigned bar, int tm, int k0, int classes, const int (&batch)[3])
{
    const int c[5] = {k0, tm * DJ_CLASS_ROWS, batch[0], batch[1], batch[2]};
#pragma unroll
    for (int cls = 0; cls < DJ_A_CLASSES; cls++)
        if (cls < classes)
            dj_tma_load<DJ_A_RANK>(dst + (unsigned)cls * DJ_CLASS_BOX, maps[cls], bar, c);
}

// A's fragments of one K tile for wgmma from registers (DJ_A_BY_CLASS), from the stage at
// `stage`: the consumer warp multiplies the 16 rows of class c, and thread `lane` holds, of
// each slice i (16 K elements), rows lane / 4 and lane / 4 + 8 of them at K elements 16i +
// 2 * (lane % 4) and the next, and 8 further: a[4i] and a[4i + 2] of the first row, a[4i + 1]
// and a[4i + 3] of the second. Each row's K tile starts shift(c) elements into its box, so
// with an odd shift a pair straddles two 4-byte words: every pair is taken out of the two
// words around it by a funnel shift (of 0 bits for an even shift). A warp's load of one
// register hits each bank once, its eight rows being 36 words apart.
__device__ __forceinline__ void dj_a_fragments(unsigned stage, int c, int lane, unsigned (&a)[16])
{
    const int shift = (int)(c * DJ_A_ROW_STRIDE % 8), odd = shift & 1;
    const unsigned row = stage + (unsigned)c * DJ_CLASS_BOX + (unsigned)(lane / 4) * DJ_CLASS_ROW_BYTES +
                         (unsigned)(2 * (shift - odd) + 4 * (lane % 4));
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const unsigned at = row + (unsigned)(r & 1) * 8 * DJ_CLASS_ROW_BYTES + (unsigned)(r >> 1) * 16 + i * 32;
            unsigned lo, hi;
            asm volatile("ld.shared.b32 %0, [%2];\nld.shared.b32 %1, [%2+4];\n" : "=r"(lo), "=r"(hi) : "r"(at) : "memory");
            a[4 * i + r] = __funnelshift_r(lo, hi, 16 * odd);
        }
}

// The row of C that row r (0 to 15) of consumer warp (consumer, warp) holds in tile row tm:
// of the warp's 16 consecutive rows of the tile (dj_tile_rows), or with A by row class of its
// class's rows, 8 apart.
__device__ __forceinline__ int dj_row_of(int tm, int consumer, int warp, int r)
{
    if constexpr (DJ_A_BY_CLASS)
        return tm * DJ_BM + consumer * 4 + warp + 8 * r;
    const DjTileRows t = dj_tile_rows(tm);
    return t.first + t.step * (consumer * 64 + warp * 16 + r);
}

// With A in tiles of one row class: clears the first `shift` elements (the end of the row
// before) of each of a consumer's 64 rows of A's first K tile at `rows` (swizzled: a row's
// first 16 bytes sit in its 128-byte line's 16-byte piece row % 8), then makes the writes
// visible to wgmma (the async proxy) before any of the consumer's threads goes on.
__device__ __forceinline__ void dj_clear_row_heads(unsigned rows, int shift, int consumer)
{
    const int t = (int)threadIdx.x % 128;
    if (t < 64) {
        const unsigned at = rows + (unsigned)t * 128u + (unsigned)(t % 8) * 16u;
        unsigned w[4];
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                     : "r"(at)
                     : "memory");
#pragma unroll
        for (int i = 0; i < 4; i++)
            w[i] &= 2 * i + 1 < shift ? 0u : 2 * i < shift ? 0xffff0000u : ~0u;
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(at), "r"(w[0]), "r"(w[1]), "r"(w[2]),
                     "r"(w[3])
                     : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    dj_bar_sync(4 + consumer, 128);
}

// ---- split-K ------------------------------------------------------------------------

// The consumers' end of split `split` of tile `tile` (a tile index over the batch): every
// split stores its partial sums in the scratch and counts itself in the tile's arrival
// counter; the split that arrives last adds all of them in split order (so that the result
// does not depend on which split was last) into acc and returns true, to run the epilogue;
// the others return false and go on to their next work item. The partial tiles are laid out
// as the consumers' registers are, 16 bytes a thread in turn, so that every access covers a
// warp's 512 contiguous bytes. A thread whose rows (`row` and row + 8) lie past M neither
// stores nor loads: with a few rows (a linear layer on a few tokens) most of the tile is
// such rows. `last` is a word of shared memory that carries the counter's verdict to the 256
// consumer threads, which alone meet at named barrier 1.
__device__ __forceinline__ bool dj_split_sum(float (&acc)[DJ_ACC], dj_i64 tile, int split, int row,
                                             const DjArgs &args, volatile unsigned *last)
{
    constexpr int CONSUMERS = DJ_CONSUMER_WARPS * 32, QUADS = DJ_ACC / 4;
    unsigned char *const scratch = (unsigned char *)args.ptr[DJ_SCRATCH_SLOT];
    unsigned *const arrivals = (unsigned *)(scratch + DJ_SPLIT_COUNTERS);
    const int t = (int)threadIdx.x - (DJ_THREADS - CONSUMERS);
    auto partial = [&](int s, int q) {
        return (float4 *)(scratch + DJ_SPLIT_PARTIALS) + ((dj_i64)s * DJ_TILES * DJ_BATCH + tile) * QUADS * CONSUMERS +
               q * CONSUMERS + t;
    };
    const bool inside = row < DJ_M;
    if (inside)
#pragma unroll
        for (int q = 0; q < QUADS; q++)
            *partial(split, q) = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
    // The partial sums reach L2 before the arrival that lets another CTA read them.
    __threadfence();
    asm volatile("bar.sync 1, %0;\n" ::"n"(CONSUMERS) : "memory");
    if (t == 0)
        *last = atomicAdd(arrivals + tile, 1u) == DJ_SPLITS - 1;
    asm volatile("bar.sync 1, %0;\n" ::"n"(CONSUMERS) : "memory");
    // Thread 0 writes `last` again only after every consumer has passed the next split's
    // first barrier, so each has read this verdict by then.
    if (!*last)
        return false;
    if (!inside)
        return true;
    __threadfence();
    // This split's own sums are read back too, so that acc can take the running sum (a
    // second copy of the accumulators would not fit in the registers).
#pragma unroll
    for (int q = 0; q < QUADS; q++) {
        const float4 v = dj_load_cg4(partial(0, q));
        acc[4 * q] = v.x;
        acc[4 * q + 1] = v.y;
        acc[4 * q + 2] = v.z;
        acc[4 * q + 3] = v.w;
    }
#pragma unroll 1
    for (int s = 1; s < DJ_SPLITS; s++)
#pragma unroll
        for (int q = 0; q < QUADS; q++) {
            const float4 v = dj_load_cg4(partial(s, q));
            acc[4 * q] += v.x;
            acc[4 * q + 1] += v.y;
            acc[4 * q + 2] += v.z;
            acc[4 * q + 3] += v.w;
        }
    return true;
}

// The first column of row class c's rows of C that starts on a 16-byte boundary, with C's
// rows in tiles of one row class (DJ_C_BY_CLASS): rows c, c + 8, ... all start
// c * DJ_C_ROW_STRIDE % 8 elements past one, and class c's map starts at that column.
__device__ __forceinline__ int dj_c_aligned_col(int cls)
{
    return (8 - (int)(cls * DJ_C_ROW_STRIDE % 8)) % 8;
}

// The epilogue through TMA stores (see the file's comment) of consumer `consumer`'s rows of
// tile (tm, tn) of batch entry `batch`, from the accumulators (which it consumes), into
// `buffer`, through map `map_c`. `leader` is the one thread of the consumer that issues the
// stores. The boxes go DJ_STORE_UNROLL per turn of a loop that is otherwise not unrolled,
// each box taking the first 32 sums and moving the rest down (dj_acc_take): the fused expressions
// are compiled once per box of columns rather than once per column pair (a GEMM with bias
// and relu: 400 ms to compile unrolled, against 300 for the staged epilogue). Two boxes a
// turn, where the expressions read a tensor, let the second box's loads go out while the
// first box's outputs are computed and written: on the H200 (two machines, in turns),
// 8x4096^3 bf16 with bias and relu ran 1.5-3% faster (1635-1654 us against 1669-1681),
// for about 20 ms more of NVRTC on this kernel (235-245 ms against 219 on the build
// machine); a GEMM with nothing to load ran no faster, nor did fp8 with its one scale.
//
// C's rows by class (DJ_C_BY_CLASS): the tile's rows are one class's, all `a` =
// dj_c_aligned_col(class) elements short of a 16-byte boundary, and TMA stores a box only
// from one. So box b holds the tile's columns a + 64b on, the last box (when a > 0) those
// from a + DJ_BN - 72, ending 8 short of the tile's end, and repeating 8 columns of the box
// before it (the same values, from the same CTA). A box's columns past its 64th slice come
// from the next box's first slice (computed ahead, `next`), the last box's first from the
// box before's last slice (`carry`). Each output goes into the buffer alone (2 bytes, as
// the shift may split a pair). The columns in 16-byte pieces that other tiles share are
// stored directly, 2 bytes each: the tile's first a and last 8 - a, and the row's last
// (N - a) % 8, whose piece holds the next row's first columns. TMA must not store those
// pieces whole: the class map ends at the row's last whole piece, since on the H200 a
// map ending inside a piece had TMA write all of it (zeros past the row's end over the
// next row's first columns).
__device__ __forceinline__ void dj_store_tile(const DjTensorMap *map_c, unsigned buffer, bool leader, int consumer,
                                              dj_i64 batch, int tm, int tn, const DjArgs &args)
{
    const int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32 % 4;
    constexpr int LAST = DJ_BN / 64 - 1;
    // Thread (warp, lane) holds rows r and r + 8 of the consumer's 64, and in each 8-column
    // slice j the columns 8j + 2*(lane%4) and the next one: the 4-byte pair at byte
    // 4*(lane%4) of the row's 16-byte piece j % 8 of box j / 8, which the swizzle places at
    // piece (j % 8) ^ (row % 8), so that a warp's pairs of one slice fill every bank once.
    const int r = warp * 16 + lane / 4, p = 2 * (lane % 4);
    const dj_i64 rows[2] = {dj_row_of(tm, consumer, warp, lane / 4), dj_row_of(tm, consumer, warp, lane / 4 + 8)};
    const DjTileRows tile_rows = dj_tile_rows(tm);
    // By class: the tile's shift, and the row's columns in whole pieces from a on.
    const int a = DJ_C_BY_CLASS ? dj_c_aligned_col(tile_rows.cls) : 0;
    const dj_i64 whole = DJ_C_BY_CLASS ? (DJ_N - a) / 8 * 8 : DJ_N;
    // The pair of outputs (as one word) of columns col and col + 1 of row rows[h].
    auto pair_word = [&](int h, dj_i64 col, float v0, float v1) {
        float o0[1] = {0.0f}, o1[1] = {0.0f};
        if (DJ_WHOLE_TILES || (rows[h] < DJ_M && col < DJ_N)) {
            dj_epilogue_values(batch, rows[h], col, v0, o0, args);
            if (DJ_WHOLE_TILES || col + 1 < DJ_N)
                dj_epilogue_values(batch, rows[h], col + 1, v1, o1, args);
        }
        const DjOut lo = dj_from_float<DjOut>(o0[0]), hi = dj_from_float<DjOut>(o1[0]);
        return (unsigned)lo.bits | (unsigned)hi.bits << 16;
    };
    unsigned carry[2] = {0u, 0u};
    // The sums of a turn's boxes, 32 a box, taken at once: ptxas left moves behind (64 a
    // turn of two) where each box took its own and moved the rest down.
    float sums[32 * DJ_STORE_UNROLL];
#pragma unroll DJ_STORE_UNROLL
    for (int box = 0; box < DJ_BN / 64; box++) {
        const int u = box % DJ_STORE_UNROLL;
        if (u == 0)
            dj_acc_take(sums);
        const float *const acc = sums + 32 * u;
        const unsigned slot = buffer + (unsigned)(box % DJ_OUT_BOXES) * 8192u;
        const dj_i64 col0 = (dj_i64)tn * DJ_BN + box * 64 + p;
        // The box's first tile column less the group's (box * 64), past the shift a.
        const int behind = DJ_C_BY_CLASS && box == LAST && a > 0 ? 8 : 0;
        // The box's pairs are all computed before any is stored, and without bounds checks
        // when every tile lies inside C: the fused expressions' loads (a bias, a residual)
        // then go out together instead of each waiting behind the last pair's store and
        // branch. On the H200, 4096^3 bf16 with bias and relu ran 5-7% slower than without
        // while each pair's load waited in turn.
        unsigned words[8][2], next[2] = {0u, 0u};
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                words[j][h] = pair_word(h, col0 + 8 * j, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
        if (DJ_C_BY_CLASS && box < LAST && a > 0) {
            float ahead[4];
            if (u + 1 < DJ_STORE_UNROLL)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    ahead[i] = acc[32 + i];
            else
                dj_acc_peek(ahead);
#pragma unroll
            for (int h = 0; h < 2; h++)
                next[h] = pair_word(h, col0 + 64, ahead[2 * h], ahead[2 * h + 1]);
        }
        // TMA must have read the buffer's last contents (the previous tile's last round, or
        // this tile's first where the buffer holds fewer boxes than the tile) before they
        // are overwritten: waited for only now, so that TMA's reading overlaps the box's loads
        // and arithmetic.
        if (box % DJ_OUT_BOXES == 0) {
            if (leader)
                asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
            dj_bar_sync(2 + consumer, 128);
        }
        if constexpr (DJ_C_BY_CLASS) {
            DjOut *const out = (DjOut *)args.ptr[DJ_C_SLOT] + dj_c_batch_offset(batch);
            // Slice j of the group (-1: the last box's carry, 8: the next box's first) at
            // column x of the box; and the slices' outputs that go directly.
#pragma unroll
            for (int j = -1; j <= 8; j++)
#pragma unroll
                for (int h = 0; h < 2; h++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const unsigned word = j < 0 ? carry[h] : j == 8 ? next[h] : words[j][h];
                        const unsigned short bits = (unsigned short)(word >> 16 * e);
                        const int rr = r + 8 * h, x = 8 * j + p + e - a + behind;
                        if (x >= 0 && x < 64) {
                            const unsigned addr = slot + (unsigned)rr * 128u + (unsigned)((x / 8) ^ (rr % 8)) * 16u +
                                                  (unsigned)(x % 8) * 2u;
                            asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(addr), "h"(bits) : "memory");
                        }
                        const int column = box * 64 + 8 * j + p + e; // in the tile
                        const dj_i64 col = (dj_i64)tn * DJ_BN + column;
                        if (j >= 0 && j < 8 && rows[h] < DJ_M && col < DJ_N &&
                            (column < a || (a > 0 && column >= DJ_BN - 8 + a) || col >= a + whole))
                            out[rows[h] * DJ_C_ROW_STRIDE + col].bits = bits;
                    }
#pragma unroll
            for (int h = 0; h < 2; h++)
                carry[h] = words[7][h];
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int rr = r + 8 * h;
                    const unsigned addr =
                        slot + (unsigned)rr * 128u + (unsigned)(j ^ (rr % 8)) * 16u + (unsigned)(lane % 4) * 4u;
                    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(words[j][h]) : "memory");
                }
        }
        if (box % DJ_OUT_BOXES == DJ_OUT_BOXES - 1) {
            // The writes reach the async proxy (TMA) before the leader's stores read them.
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            dj_bar_sync(2 + consumer, 128);
            if (leader) {
                // By class, the map's rows are the class's and its columns start at a.
                int c[5] = {0, DJ_C_BY_CLASS ? tile_rows.map_row + consumer * 64 : tm * DJ_BM + consumer * 64, 0, 0, 0},
                    batch_c[3] = {0, 0, 0};
                dj_c_batch_coords(batch, batch_c);
                c[2] = batch_c[0];
                c[3] = batch_c[1];
                c[4] = batch_c[2];
                for (int b = 0; b < DJ_OUT_BOXES; b++) {
                    const int first = box - (DJ_OUT_BOXES - 1) + b;
                    c[0] = tn * DJ_BN + first * 64 - (DJ_C_BY_CLASS && first == LAST && a > 0 ? 8 : 0);
                    if (c[0] < whole)
                        dj_tma_store<DJ_C_RANK>(map_c, buffer + (unsigned)b * 8192u, c);
                }
                asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(DJ_THREADS, 1) DJ_CLUSTER_DIMS
    dj_gemm_sm90(const DjArgs args, const __grid_constant__ DjTensorMap map_a,
                 const __grid_constant__ DjTensorMap map_b DJ_A_CLASS_MAP_PARAMS DJ_STORE_MAP_PARAM DJ_C_CLASS_MAP_PARAMS)
{
    // No early trigger: the grid is at most one wave, and the block scheduler spreads a
    // fresh kernel's blocks one to a TPC (two SMs) before it doubles any up. Scheduled
    // while this kernel still held its SMs, the next one's blocks took the idle partners
    // of the busy SMs, and ran two to a TPC where they need not have. On the H200 the 75
    // blocks of 128x192 tiles that stream B of 16x14336x4096 bf16 took 48.4 us a call
    // with the early trigger, 34.1 with the trigger left to their exit and 35.8 without
    // dependent launches; in a probe of 75 such streaming blocks, 34 TPCs held two of them
    // against 9. Full grids ran as fast either way.
    //
    // The accumulators' registers are declared first: the entry block comes first in the
    // PTX, before every statement that names them.
    dj_acc_declare();
    dj_grid_wait();
    // The swizzle atoms must start on 1024-byte boundaries; the launch asks for 1 KiB extra
    // to round up to one. (Declaring the array 1024-aligned instead would let the compiler
    // drop the rounding on the strength of an alignment the launch does not promise.)
    extern __shared__ __align__(16) unsigned char dj_smem[];
    const unsigned base = (dj_smem_u32(dj_smem) + 1023u) & ~1023u;
    const unsigned a_stages = base, b_stages = base + DJ_STAGES * DJ_A_STAGE;
    const unsigned out_buffers = b_stages + DJ_STAGES * DJ_B_STAGE;
    const unsigned bars = out_buffers + 2 * DJ_OUT_BYTES;
    if constexpr (DJ_STAGING) {
        dj_stage_operands(args, dj_smem + (base - dj_smem_u32(dj_smem)));
        dj_grid_barrier((unsigned *)args.ptr[DJ_SCRATCH_SLOT]);
    }
    // Split-K's verdict word (dj_split_sum) after the barriers, then the staged epilogue's
    // rows: DJ_CONSUMER_WARPS blocks of 16 rows.
    unsigned *const split_last = (unsigned *)(dj_smem + (bars + 16u * DJ_STAGES - dj_smem_u32(dj_smem)));
    float *const epi_rows = (float *)(split_last + 4);
    auto full = [&](int s) { return bars + 8u * (unsigned)s; };
    auto empty = [&](int s) { return bars + 8u * (unsigned)(DJ_STAGES + s); };

    const int warpgroup = dj_uniform((int)threadIdx.x / 128);
    const unsigned rank = DJ_CLUSTER == 1 ? 0u : dj_cluster_rank();
    const dj_i64 first_work = blockIdx.x / DJ_CLUSTER, work_step = gridDim.x / DJ_CLUSTER;
    if (threadIdx.x == 0) {
        for (int s = 0; s < DJ_STAGES; s++) {
            dj_mbar_init(full(s), 1);
            dj_mbar_init(empty(s), DJ_CONSUMER_WARPS * DJ_CLUSTER);
        }
        // Makes the initialised barriers visible to the TMA unit (the async proxy).
        asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;\n" ::: "memory");
    }
    // The other CTA's loads and arrivals reach this one's barriers: both must be ready.
    if constexpr (DJ_CLUSTER == 2)
        dj_cluster_sync();
    else
        __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x != 0)
            return;
        asm volatile("prefetch.tensormap [%0];\nprefetch.tensormap [%1];\n" ::"l"((dj_u64)&map_a), "l"((dj_u64)&map_b)
                     : "memory");
#if DJ_A_BY_CLASS || DJ_A_SHIFTED
        const DjTensorMap *const a_maps[DJ_A_CLASSES] = DJ_CLASS_MAPS(a);
        for (int c = 1; c < DJ_A_CLASSES; c++)
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((dj_u64)a_maps[c]) : "memory");
#endif
        int it = 0;
        for (dj_i64 work = first_work; work < DJ_WORK; work += work_step) {
            dj_i64 batch;
            int tm, tn, ca[3] = {0, 0, 0}, cb[3] = {0, 0, 0};
            dj_tile_of(work, rank, batch, tm, tn);
            dj_a_batch_coords(batch, ca);
            dj_b_batch_coords(batch, cb);
            const DjTileRows rows = dj_tile_rows(tm);
            // A cluster's second tile may lie wholly past M: its A is not loaded (what the
            // stage holds only reaches rows the epilogue does not store).
            const int chunks_a = rows.first < DJ_M ? dj_chunks<DJ_A_KMAJOR, DJ_A_ROWS, DJ_M>(rows.first) : 0;
#if DJ_A_SHIFTED
            const DjTensorMap *const tile_map_a = dj_class_map(a_maps, rows.cls);
#else
            const DjTensorMap *const tile_map_a = &map_a;
#endif
            // By row class: the classes with rows inside M.
            const dj_i64 rows_left = DJ_M - (dj_i64)tm * DJ_BM;
            const int classes_a = rows_left <= 0 ? 0 : rows_left < DJ_A_CLASSES ? (int)rows_left : DJ_A_CLASSES;
            const int chunks_b = dj_chunks<DJ_B_KMAJOR, DJ_BN, DJ_N>(tn * DJ_BN);
            // Multicast K-major B comes in two halves of DJ_BN / 2 rows, the second one only
            // when it starts inside N.
            const int halves_b = DJ_N - (dj_i64)tn * DJ_BN > DJ_BN / 2 ? 2 : 1;
            const int b_pieces = DJ_CLUSTER == 2 && DJ_B_KMAJOR ? halves_b : chunks_b;
            // TMA counts a box's every byte, zeros filled past the matrix included.
            const unsigned bytes = (DJ_A_BY_CLASS ? (unsigned)classes_a * DJ_CLASS_BOX : (unsigned)chunks_a * DJ_CHUNK) +
                                   (DJ_CLUSTER == 2 && DJ_B_KMAJOR ? (unsigned)halves_b * (DJ_B_STAGE / 2)
                                                                   : (unsigned)chunks_b * DJ_CHUNK);
            int k_begin, k_end;
            dj_k_range((int)(work % DJ_SPLITS), rows.shift, k_begin, k_end);
            // Only the stages' loads go out: TMA prefetches into L2 of B's tile 3 or 8 K tiles
            // ahead as well (cp.async.bulk.prefetch.tensor), tried on the H200 for problems
            // of 64 rows or fewer, which stream B from DRAM, slowed them (1x14336x4096 bf16
            // 36.9 -> 44.0 and 50.9 us, 16x14336x4096 35.8 -> 40.9 and 42.0, 1x4096x14336
            // 39.0 -> 43.0 and 43.8).
            for (int kt = k_begin; kt < k_end; kt++, it++) {
                const int s = dj_ring_stage(it);
                dj_mbar_wait(empty(s), dj_ring_phase(it) ^ 1);
                dj_mbar_expect_tx(full(s), bytes);
#if DJ_A_BY_CLASS
                dj_load_a_classes(a_stages + s * DJ_A_STAGE, a_maps, full(s), tm, kt * DJ_BK, classes_a, ca);
#else
                if (chunks_a > 0)
                    dj_load_operand<DJ_A_KMAJOR, DJ_A_RANK>(a_stages + s * DJ_A_STAGE, tile_map_a, full(s),
                                                            rows.map_row, kt * DJ_BK, chunks_a, ca);
#endif
                if constexpr (DJ_CLUSTER == 2)
                    dj_load_b_multicast<DJ_B_KMAJOR, DJ_B_RANK>(b_stages + s * DJ_B_STAGE, &map_b, full(s),
                                                                tn * DJ_BN, kt * DJ_BK, b_pieces, cb, rank);
                else
                    dj_load_operand<DJ_B_KMAJOR, DJ_B_RANK>(b_stages + s * DJ_B_STAGE, &map_b, full(s), tn * DJ_BN,
                                                            kt * DJ_BK - rows.shift, chunks_b, cb);
            }
        }
        // The other CTA's consumers still arrive on this CTA's barriers: it stays until they
        // have released every stage.
        if constexpr (DJ_CLUSTER == 2)
            for (int i = 0; i < DJ_STAGES; i++, it++)
                dj_mbar_wait(empty(dj_ring_stage(it)), dj_ring_phase(it) ^ 1);
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int consumer = warpgroup - 1, lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32 % 4;
    int it = 0;
    for (dj_i64 work = first_work; work < DJ_WORK; work += work_step) {
        dj_i64 batch;
        int tm, tn;
        dj_tile_of(work, rank, batch, tm, tn);
        dj_acc_clear();
        int previous = -1, k_begin, k_end;
        const int shift = dj_tile_rows(tm).shift;
        dj_k_range((int)(work % DJ_SPLITS), shift, k_begin, k_end);
        // A consumer whose 64 rows all lie past M (the second half of a tile of 64 rows or
        // fewer: a linear layer on a few tokens; a cluster's tile past M) multiplies
        // nothing: it only hands each stage back once loaded, leaving the tensor cores to
        // the other consumer.
        const bool idle = dj_row_of(tm, consumer, 0, 0) >= DJ_M;
#if DJ_A_BY_CLASS
        if (!idle && k_begin < k_end) {
            // A's fragments of the next K tile are loaded into `next` while this tile's wgmma
            // runs on `cur`, and moved there once it has completed. (Loaded only after that,
            // into one set of registers, they ran as fast: 4097x4095x4099 took 245-259 us,
            // 252-263 this way in another run, against 248-252 with A copied in both.)
            unsigned cur[16], next[16];
            auto load = [&](int i, unsigned(&f)[16]) {
                const int s = dj_consumer_stage(i);
                dj_mbar_wait(full(s), dj_ring_phase(i));
                dj_a_fragments(a_stages + s * DJ_A_STAGE, consumer * 4 + warp, lane, f);
            };
            load(it, cur);
            for (int kt = k_begin; kt < k_end; kt++, it++) {
                const int s = dj_consumer_stage(it);
                dj_wgmma_fence();
                dj_wgmma_ktile(cur, dj_operand_desc<DJ_B_KMAJOR>(b_stages + s * DJ_B_STAGE),
                               DJ_SLICE_STEP<DJ_B_KMAJOR>, 1);
                dj_wgmma_commit();
                if (kt + 1 < k_end)
                    load(it + 1, next);
                dj_wgmma_wait<0>();
                dj_fence_regs(cur);
                if (lane == 0)
                    dj_release(empty(s), rank);
#pragma unroll
                for (int i = 0; i < 16; i++)
                    cur[i] = next[i];
            }
        } else
#endif
        for (int kt = k_begin; kt < k_end; kt++, it++) {
            const int s = dj_consumer_stage(it);
            dj_mbar_wait(full(s), dj_ring_phase(it));
            if (DJ_A_BY_CLASS || idle) {
                if (lane == 0)
                    dj_release(empty(s), rank);
                continue;
            }
#if !DJ_A_BY_CLASS
            const unsigned sa = a_stages + s * DJ_A_STAGE + consumer * DJ_CHUNK, sb = b_stages + s * DJ_B_STAGE;
            if (DJ_A_SHIFTED && kt == 0 && shift != 0)
                dj_clear_row_heads(sa, shift, consumer);
            dj_wgmma_fence();
            dj_wgmma_ktile(dj_operand_desc<DJ_A_KMAJOR>(sa), dj_operand_desc<DJ_B_KMAJOR>(sb),
                           DJ_SLICE_STEP<DJ_A_KMAJOR>, DJ_SLICE_STEP<DJ_B_KMAJOR>, !DJ_PROMOTE);
            dj_wgmma_commit();
            // Promotion: this K tile's sums (its first wgmma overwrote the last tile's) are
            // added to the float registers once complete. Meanwhile the other consumer's
            // wgmma keeps the tensor cores busy.
            if constexpr (DJ_PROMOTE) {
                dj_wgmma_wait<0>();
                if (lane == 0)
                    dj_release(empty(s), rank);
                dj_acc_promote();
                continue;
            }
            // The previous stage's wgmma has finished reading once at most this one is in
            // flight: hand that stage back to the producer.
            if (previous >= 0) {
                dj_wgmma_wait<1>();
                if (lane == 0)
                    dj_release(empty(previous), rank);
            }
            previous = s;
#endif
        }
        dj_wgmma_wait<0>();
        if (previous >= 0 && lane == 0)
            dj_release(empty(previous), rank);
        // The TMA-store epilogue takes the sums 32 floats at a time (dj_store_tile); split-K
        // and the other epilogues read them all.
        float acc[DJ_ACC];
        if constexpr (!DJ_TMA_STORE)
            dj_acc_read(acc);
        if constexpr (DJ_SPLITS > 1)
            if (!dj_split_sum(acc, work / DJ_SPLITS, (int)(work % DJ_SPLITS),
                              dj_row_of(tm, consumer, warp, lane / 4), args, split_last))
                continue;
        if (idle)
            continue;

        // The accumulator of m64nNk16: thread (warp, lane) holds rows warp*16 + lane/4 (+8)
        // and, for each 8-column slice j, columns 8j + 2*(lane%4) and the next one.
        if constexpr (DJ_TMA_STORE) {
#if DJ_C_BY_CLASS
            const DjTensorMap *const c_maps[DJ_A_CLASSES] = DJ_CLASS_MAPS(c);
            const DjTensorMap *const store_map = dj_class_map(c_maps, dj_tile_rows(tm).cls);
#else
            const DjTensorMap *const store_map = DJ_STORE_MAP;
#endif
            dj_store_tile(store_map, out_buffers + (unsigned)consumer * DJ_OUT_BYTES, threadIdx.x % 128 == 0,
                          consumer, batch, tm, tn, args);
        } else if constexpr (DJ_STAGED_EPILOGUE) {
            float *const rows = epi_rows + (consumer * 4 + warp) * 16 * DJ_EPI_STRIDE;
#pragma unroll
            for (int chunk = 0; chunk < DJ_BN / DJ_EPI_COLS; chunk++) {
#pragma unroll
                for (int jj = 0; jj < DJ_EPI_COLS / 8; jj++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int j = chunk * (DJ_EPI_COLS / 8) + jj;
                        *(float2 *)&rows[(lane / 4 + 8 * h) * DJ_EPI_STRIDE + jj * 8 + 2 * (lane % 4)] =
                            make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                    }
                __syncwarp();
                // Lanes 0-15 take the even rows, 16-31 the odd ones, a column pair each.
                // A row of 16-bit outputs whose first column is 2 bytes past a 4-byte
                // boundary (an odd row stride) stores each pair as two 2-byte stores. On the
                // H200 such rows cost 4097x4095x4099 bf16 about 10 us (231-245 us with C's
                // rows padded to 4096, 237-254 without), but not for those stores: pairing
                // the row's columns 2i - 1 and 2i instead, so that every pair is one 4-byte
                // store, ran as fast (243-258 us; the previous chunk's last column carried in
                // shared memory, the tile's last stored after the chunks) or slower (268-274,
                // lane 0 storing each chunk's first and last columns alone, which diverged
                // from the other half-warp at every chunk). The rows' 64-byte pieces start
                // off the 32-byte sectors either way.
                const int col = tn * DJ_BN + chunk * DJ_EPI_COLS + 2 * (lane % 16);
#pragma unroll 1
                for (int r = lane / 16; r < 16; r += 2) {
                    const float2 v = *(const float2 *)&rows[r * DJ_EPI_STRIDE + 2 * (lane % 16)];
                    const int row = dj_row_of(tm, consumer, warp, r);
                    if (row < DJ_M && col < DJ_N)
                        dj_epilogue(batch, row, col, v.x, v.y, col + 1 < DJ_N, args);
                }
                // The rows are rewritten by the next chunk.
                __syncwarp();
            }
        } else {
            const int col0 = tn * DJ_BN + 2 * (lane % 4);
#pragma unroll
            for (int j = 0; j < DJ_BN / 8; j++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int row = dj_row_of(tm, consumer, warp, lane / 4 + 8 * h);
                    const int col = col0 + j * 8;
                    if (row < DJ_M && col < DJ_N)
                        dj_epilogue(batch, row, col, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], col + 1 < DJ_N,
                                    args);
                }
        }
    }
    // The CTA's shared memory lasts until TMA has stored the last buffers.
    if constexpr (DJ_TMA_STORE)
        if (threadIdx.x % 128 == 0)
            asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
