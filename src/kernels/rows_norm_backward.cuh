// Rows engine, layer norm (DJ_CENTER) and RMS norm backward from the saved statistics.
// Row blocks compute, per row, with g = dy * scale and xhat = (x - mean) * inv_var:
//   dx = inv_var * (g - mean(g) - xhat * mean(g * xhat))   (no mean(g) term for RMS norm)
// When the group writes DSCALE or DBIAS, the first DJ_COL_BLOCKS blocks sum
// dscale = dy * xhat and dbias = dy over the rows: block b owns strip b / DJ_SEGMENTS of
// DJ_STRIP columns and segment b % DJ_SEGMENTS of DJ_SEG_ROWS rows, split among its threads,
// whose sums add up in a fixed order. With several segments, each stores its sums in the
// scratch (DjArgs.ptr[DJ_SCRATCH_SLOT]: DJ_SCRATCH_COUNTERS arrival counters, which execute
// zeroes, then the sums), and the segment that arrives last at its strip adds the strip's
// sums in segment order: no float atomics, so the result is deterministic. The column
// blocks come first so that they start with the row blocks rather than after them.
// A fused plan (DJ_FUSED_BLOCKS > 0) reads DY and X once instead: see dj_rows_fused. MEAN
// reads 0 for RMS norm. The sums of dbias are kept, stored and added up only when the group
// writes DBIAS (DJ_DBIAS); DBIAS's accessor stores nothing otherwise, and dropping its
// sums spares a fused plan's row groups their half of the partial sums (on 4096x32768,
// 8 MB written and read again) and its shared sums their half of the shared memory.

// A thread's sums of dscale and dbias over the rows it worked on, per element of its
// chunks: in registers, or with DJ_SHARED_COL_SUMS in shared memory, which leaves the
// registers to the rows in flight and to more threads per SM (see rows.c's knobs).
template <int V, bool SHARED = DJ_SHARED_COL_SUMS> struct DjColSums {
    float dscale[DjRow<V>::CHUNKS][V], dbias[DjRow<V>::CHUNKS][V];
    __device__ __forceinline__ void zero()
    {
#pragma unroll
        for (int k = 0; k < DjRow<V>::CHUNKS; k++)
#pragma unroll
            for (int e = 0; e < V; e++)
                dscale[k][e] = dbias[k][e] = 0.0f;
    }
    __device__ __forceinline__ void add(int k, const float (&ds)[V], const float (&db)[V])
    {
#pragma unroll
        for (int e = 0; e < V; e++) {
            dscale[k][e] += ds[e];
            dbias[k][e] += db[e];
        }
    }
    __device__ __forceinline__ void get(int k, float (&ds)[V], float (&db)[V]) const
    {
#pragma unroll
        for (int e = 0; e < V; e++) {
            ds[e] = dscale[k][e];
            db[e] = dbias[k][e];
        }
    }
};

// The shared sums of every thread of the block, for either access width: per thread
// DJ_SHARED_SUMS floats of each (the vector path's elements, never fewer than the
// one-element path's chunks), element i of thread t at [i][t], so that a warp's accesses
// fall in distinct banks (and with four-element groups, [i / 4][t] as float4).
constexpr int DJ_SHARED_SUMS = DjRow<DJ_VEC>::CHUNKS * DJ_VEC;
static_assert(DJ_SHARED_SUMS >= DjRow<1>::CHUNKS, "the shared sums hold the one-element path's");
constexpr int DJ_COL_SUMS = DJ_DBIAS ? 2 : 1; // dscale's sums, then dbias's
__shared__ float4 dj_shared_col_sums[DJ_SHARED_COL_SUMS ? DJ_COL_SUMS : 1][DJ_SHARED_COL_SUMS ? (DJ_SHARED_SUMS + 3) / 4 : 1]
                                    [DJ_SHARED_COL_SUMS ? DJ_BLOCK : 1];

template <int V> struct DjColSums<V, true> {
    static constexpr bool QUADS = V % 4 == 0;
    // Element e of chunk k: its float, or the float4 that holds it.
    __device__ __forceinline__ static float &at(int which, int k, int e)
    {
        float *const all = (float *)&dj_shared_col_sums[which][0][0];
        return all[(dj_i64)(k * V + e) * DJ_BLOCK + threadIdx.x];
    }
    __device__ __forceinline__ static float4 &quad(int which, int k, int q)
    {
        return dj_shared_col_sums[which][k * (V / 4) + q][threadIdx.x];
    }
    __device__ __forceinline__ void zero()
    {
#pragma unroll
        for (int k = 0; k < DjRow<V>::CHUNKS; k++) {
            const float z[V] = {};
            set(k, z, z);
        }
    }
    __device__ __forceinline__ void set(int k, const float (&ds)[V], const float (&db)[V])
    {
        if constexpr (QUADS) {
#pragma unroll
            for (int q = 0; q < V / 4; q++) {
                quad(0, k, q) = make_float4(ds[4 * q], ds[4 * q + 1], ds[4 * q + 2], ds[4 * q + 3]);
                if constexpr (DJ_DBIAS)
                    quad(1, k, q) = make_float4(db[4 * q], db[4 * q + 1], db[4 * q + 2], db[4 * q + 3]);
            }
        } else {
#pragma unroll
            for (int e = 0; e < V; e++) {
                at(0, k, e) = ds[e];
                if constexpr (DJ_DBIAS)
                    at(1, k, e) = db[e];
            }
        }
    }
    __device__ __forceinline__ void get(int k, float (&ds)[V], float (&db)[V]) const
    {
        if constexpr (QUADS) {
#pragma unroll
            for (int q = 0; q < V / 4; q++) {
                const float4 s = quad(0, k, q), b = DJ_DBIAS ? quad(1, k, q) : float4{};
                ds[4 * q] = s.x, ds[4 * q + 1] = s.y, ds[4 * q + 2] = s.z, ds[4 * q + 3] = s.w;
                db[4 * q] = b.x, db[4 * q + 1] = b.y, db[4 * q + 2] = b.z, db[4 * q + 3] = b.w;
            }
        } else {
#pragma unroll
            for (int e = 0; e < V; e++) {
                ds[e] = at(0, k, e);
                db[e] = DJ_DBIAS ? at(1, k, e) : 0.0f;
            }
        }
    }
    __device__ __forceinline__ void add(int k, const float (&ds)[V], const float (&db)[V])
    {
        float s[V], b[V];
        get(k, s, b);
#pragma unroll
        for (int e = 0; e < V; e++) {
            s[e] += ds[e];
            b[e] += db[e];
        }
        set(k, s, b);
    }
};

// The scale of a thread's columns. A thread with a short share of the row (at most 16
// elements; not a cluster plan, whose two held rows would spill) keeps it in registers,
// read once for all the rows it works on (its columns do not change from row to row);
// other threads read it at each use. On the H200, keeping it from a row's first pass to
// its second took 1000-wide fp16 layer norm backward from 2.87 to 2.96 TB/s, 4096-wide bf16
// from 3.34 to 3.41; reading it once for all the rows, with the row's factors taken out of
// dx (see dj_norm_backward_dx), took the first to 3.02 (RMS norm 3.04 to 3.15), the second
// up 1%.
template <int V> struct DjScale {
    static constexpr bool HELD = DjRow<V>::REGS && DJ_CLUSTER == 1 && DjRow<V>::CHUNKS * V <= 16;
    float held[HELD ? DjRow<V>::CHUNKS : 1][V];
    // `rw`: any row of the thread's (valid or not: the columns are what count).
    __device__ __forceinline__ explicit DjScale(DjRow<V> rw, const DjArgs &args)
    {
        if constexpr (HELD) {
            rw.valid = true;
#pragma unroll
            for (int k = 0; k < DjRow<V>::CHUNKS; k++)
                if (rw.has(k))
                    dj_par_SCALE<V>(rw.col(k), held[k], args);
        }
    }
    __device__ __forceinline__ void get(const DjRow<V> &rw, int k, float (&v)[V], const DjArgs &args) const
    {
        if constexpr (HELD) {
#pragma unroll
            for (int e = 0; e < V; e++)
                v[e] = held[k][e];
        } else {
            dj_par_SCALE<V>(rw.col(k), v, args);
        }
    }
};

// A row between its two passes: its values (in registers when DjRow<V>::REGS) and
// statistics. With DJ_FLOAT_ROWS, x is kept centred (x - mean, which the first pass
// computes anyway), saving the second pass a subtraction an element. Only there: every
// cache of floats centred (fp32 rows too) ran 1000-wide fp32 layer norm backward's column-
// block plan (t128_r1_vec) 14% slower on the H200, 200.4 us against 175.5.
// With FOLD (x's values are 16-bit floats, not kept centred) neither pass subtracts the
// mean an element: the first sums g * x and takes mean * sum(g) off once, the second
// computes xhat and the terms it feeds with one fused multiply-add each from x. That saves
// one or two instructions an element in each pass, which is what sets a cluster plan's
// pace (on the H200, 4096x32768 bf16 layer norm backward is bound by instruction issue,
// not DRAM; with bf16 rows read as words, 263 -> 245 us). The cost is rounding at the
// scale of |x| rather than of |x - mean|: in the second pass 2^-24 of |x| * inv_var, below
// x's own rounding (2^-9 of |x| for bf16, 2^-12 for fp16); in the first, the row's sums of
// g * x and mean * g cancel. With x and the mean both around 1000 in bf16 (deviations of 4,
// test-gpu-rows' norms_far_from_zero), DX came within 3.4e-3 of float64 at worst (32768
// wide), inside bf16's 1e-2; on ordinary rows the errors stayed where they were (below
// 1e-4). A float x keeps the subtraction, exact for x near the mean.
template <int V> struct DjHeldRow {
    static constexpr bool CENTRED = DjRow<V>::REGS && DJ_FLOAT_ROWS;
    static constexpr bool FOLD = sizeof(DjKept_X) == 2 && !CENTRED;
    DjCache<DjKept_DY, V> dy;
    DjCache<DjKept_X, V> x;
    float mean, inv_var;
};

template <int V> __device__ __forceinline__ void dj_dy_chunk(const DjRow<V> &rw, DjHeldRow<V> &held, int k, bool first,
                                                            const DjArgs &args, float (&v)[V])
{
    dj_chunk(rw, held.dy, k, first, 0.0f,
             [&](dj_i64 row, int col, float (&w)[V], bool f) { dj_in_DY<V>(row, col, w, args, f); }, v);
}
template <int V> __device__ __forceinline__ void dj_x_chunk(const DjRow<V> &rw, DjHeldRow<V> &held, int k, bool first,
                                                           const DjArgs &args, float (&v)[V])
{
    dj_chunk(rw, held.x, k, first, 0.0f,
             [&](dj_i64 row, int col, float (&w)[V], bool f) { dj_in_X<V>(row, col, w, args, f); }, v);
}

// A row's first pass: reads it into `held` and returns this thread's sums of g and
// g * (x - mean), which inv_var turns into the sum of g * xhat once the row's is known (one
// multiply a row rather than one an element).
template <int V>
__device__ __forceinline__ dj_pair dj_norm_backward_sums(const DjRow<V> &rw, const DjArgs &args,
                                                         const DjScale<V> &scales, DjHeldRow<V> &held)
{
    using R = DjRow<V>;
    held.mean = rw.valid ? dj_rin_MEAN(rw.row, args) : 0.0f;
    held.inv_var = rw.valid ? dj_rin_INV_VARIANCE(rw.row, args) : 0.0f;
    dj_pair sums = {0.0f, 0.0f};
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float dy[V], x[V], scale[V];
        dj_dy_chunk(rw, held, k, true, args, dy);
        dj_x_chunk(rw, held, k, true, args, x);
        if (rw.has(k)) {
            scales.get(rw, k, scale, args);
#pragma unroll
            for (int e = 0; e < V; e++) {
                const float g = dy[e] * scale[e];
                if constexpr (!DjHeldRow<V>::FOLD)
                    x[e] -= held.mean;
                sums.a += g;
                sums.b += g * x[e];
            }
            if constexpr (DjHeldRow<V>::CENTRED)
                held.x.put(k, x);
        }
    }
    if constexpr (DjHeldRow<V>::FOLD)
        sums.b -= held.mean * sums.a;
    return sums;
}

// A row's second pass, given the sums over the whole row: dx, and with SUM the row's
// dscale and dbias terms added to `col_sums`. dx is computed as
//   dy * (inv_var * scale) - xhat * (inv_var * mean(g * xhat)) - inv_var * mean(g)
// with the row's factors taken out of the per-element work (the division by the row
// length is a multiply by its reciprocal). With FOLD (see DjHeldRow), xhat and the last
// two terms are each one fused multiply-add from x.
template <int V, bool SUM>
__device__ __forceinline__ void dj_norm_backward_dx(const DjRow<V> &rw, const DjArgs &args, const DjScale<V> &scales,
                                                    DjHeldRow<V> &held, dj_pair sums, DjColSums<V> &col_sums)
{
    using R = DjRow<V>;
    constexpr float INV_COLS = 1.0f / (float)DJ_COLS;
    constexpr bool FOLD = DjHeldRow<V>::FOLD;
    const float row_g = DJ_CENTER ? held.inv_var * (sums.a * INV_COLS) : 0.0f;
    const float row_gx = held.inv_var * (held.inv_var * (sums.b * INV_COLS));
    // With FOLD: xhat = x * inv_var + shift, and xhat * row_gx + row_g = x * tail_x + tail_c.
    const float shift = -held.mean * held.inv_var;
    const float tail_x = held.inv_var * row_gx, tail_c = shift * row_gx + row_g;
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float dy[V], x[V], scale[V], dx[V];
        dj_dy_chunk(rw, held, k, false, args, dy);
        dj_x_chunk(rw, held, k, false, args, x);
        if (rw.has(k)) {
            scales.get(rw, k, scale, args);
            float dscale[V];
#pragma unroll
            for (int e = 0; e < V; e++) {
                const float centred = DjHeldRow<V>::CENTRED ? x[e] : x[e] - held.mean;
                const float xhat = FOLD ? x[e] * held.inv_var + shift : centred * held.inv_var;
                const float tail = FOLD ? x[e] * tail_x + tail_c : xhat * row_gx + row_g;
                dx[e] = dy[e] * (held.inv_var * scale[e]) - tail;
                dscale[e] = dy[e] * xhat;
            }
            if constexpr (SUM)
                col_sums.add(k, dscale, dy);
            dj_out_DX<V>(rw.row, rw.col(k), dx, args);
        }
    }
}

// One row; with SUM, also adds the row's dscale and dbias terms to `col_sums`.
template <int V, bool SUM>
__device__ __forceinline__ void dj_norm_backward_row(const DjRow<V> &rw, const DjArgs &args, const DjScale<V> &scales,
                                                     DjColSums<V> &col_sums)
{
    DjHeldRow<V> held;
    const dj_pair sums = dj_row_sum(dj_norm_backward_sums(rw, args, scales, held), rw);
    dj_norm_backward_dx<V, SUM>(rw, args, scales, held, sums, col_sums);
}

template <int V> __device__ __forceinline__ void dj_row_op(const DjRow<V> &rw, const DjArgs &args)
{
    DjColSums<V> unused;
    dj_norm_backward_row<V, false>(rw, args, DjScale<V>(rw, args), unused);
}

// A fused plan. Its row groups are blocks, or with DJ_CLUSTER > 1 clusters of blocks that
// share each row (see dj_cluster_rows). Each group takes a ticket (the first counter of
// the scratch; a cluster's first block takes it for the cluster) as it starts: the first
// dj_fused_groups() tickets (as many groups as run at once) are row groups, which work on
// rows and add each thread's dscale and dbias terms up in registers. A group works on
// DJ_RPB rows at a time, from row ticket * DJ_RPB in steps of groups * DJ_RPB. A row group
// then adds its rows' sums up in shared memory in row order (with several rows), stores
// them in its row of the scratch's partial sums ([groups][2][DJ_COLS] floats after the
// counters) and counts each of its blocks in the second counter. The later tickets are
// column groups, each block of which takes strips of DJ_FUSED_STRIP columns,
// DJ_FUSED_STRIP_WARPS warps to a strip (fewer when there are few row groups to add up, so
// that fewer blocks start): it waits until every row block has counted itself, then adds
// its strips' partial sums up, a strip's warps taking row groups in turn and combining in
// warp order. The rows behind each partial sum and the order of the additions are fixed,
// so every plan gives the same bits every run, except a cluster plan with DJ_ROW_TICKETS:
// its clusters take rows from the third counter as they are ready for them (rows.c notes
// it NONDETERMINISTIC). Tickets rather than block indices decide the roles so that a
// column block waits only for row blocks that have started, which then finish whatever
// the order the GPU starts blocks in.
// Declared once for the kernel rather than in dj_rows_fused, which both access widths
// instantiate (a static shared array in each would take the memory twice).
__shared__ __align__(16) float dj_fused_rows_sums[DJ_FUSED_BLOCKS > 0 && DJ_RPB > 1 ? DJ_RPB : 1]
                                                   [DJ_FUSED_BLOCKS > 0 && DJ_RPB > 1 ? DJ_COL_SUMS * DJ_COLS : 1];
// (Read only by a fused plan's code, which the other plans never instantiate.)
[[maybe_unused]] constexpr unsigned DJ_FUSED_GROUPS = DJ_FUSED_BLOCKS / DJ_CLUSTER;

// The row groups: DJ_FUSED_GROUPS, or for a cluster plan the clusters the grid has before
// its DJ_FUSED_COL_BLOCKS column blocks. The GPU may hold fewer clusters at once than
// DJ_FUSED_GROUPS (45 of 8 blocks of 256 threads on the H200, not 49), and a row group it
// cannot start until others finish would double the time, so loading fits the grid to the
// clusters the device holds (resident_cluster in rows.c and plan.c).
__device__ __forceinline__ unsigned dj_fused_groups()
{
    if constexpr (DJ_CLUSTER > 1)
        return (gridDim.x - DJ_FUSED_COL_BLOCKS) / DJ_CLUSTER;
    else
        return DJ_FUSED_GROUPS;
}
static_assert(DJ_CLUSTER == 1 || DJ_RPB == 1, "a cluster works on one row at a time");

// What a cluster's block tells every block of the cluster about a row: its sums of g and
// g * xhat over its slice and, with DJ_ROW_TICKETS, from the first block the row the
// cluster takes two rows later. Rows use the sets of slots in turn, each set with a
// barrier in every block that completes when all the cluster's blocks have stored theirs.
// A block stores for row n after it has read the sums of row n - 2, which every block
// stored after reading those of row n - 4 (see dj_cluster_rows), so a block may still read
// sets n - 3 .. n - 1: four sets keep the stores off them.
struct DjSlot {
    float a, b;
    unsigned later;
};
constexpr int DJ_SLOT_SETS = 4;
__shared__ DjSlot dj_slots[DJ_CLUSTER > 1 ? DJ_SLOT_SETS : 1][DJ_CLUSTER];
__shared__ dj_u64 dj_slot_bars[DJ_CLUSTER > 1 ? DJ_SLOT_SETS : 1];

// Stores this block's sums for the row of step `step` in slot `rank` of every block of
// the cluster (thread r stores to block r), with DJ_ROW_TICKETS also thread 0's `later`.
__device__ __forceinline__ void dj_publish(dj_pair sums, unsigned later, int step, unsigned rank)
{
    if constexpr (DJ_ROW_TICKETS)
        later = threadIdx.x < 32 ? __shfl_sync(0xffffffffu, later, 0) : later;
    if ((int)threadIdx.x < DJ_CLUSTER) {
        const DjSlot &slot = dj_slots[step % DJ_SLOT_SETS][rank];
        dj_store_cluster(dj_smem_u32(&slot.a), threadIdx.x, __float_as_uint(sums.a));
        dj_store_cluster(dj_smem_u32(&slot.b), threadIdx.x, __float_as_uint(sums.b));
        if constexpr (DJ_ROW_TICKETS)
            dj_store_cluster(dj_smem_u32(&slot.later), threadIdx.x, later);
        dj_mbar_arrive_cluster(dj_smem_u32(&dj_slot_bars[step % DJ_SLOT_SETS]), threadIdx.x);
    }
}

// Waits for every block's sums for the row of step `step` and adds them up in rank order,
// so that all blocks get the same bits; `later` receives the first block's.
__device__ __forceinline__ dj_pair dj_collect(int step, unsigned &later)
{
    const int set = step % DJ_SLOT_SETS;
    dj_mbar_wait_cluster(dj_smem_u32(&dj_slot_bars[set]), (unsigned)(step / DJ_SLOT_SETS) & 1u);
    dj_pair total = {dj_slots[set][0].a, dj_slots[set][0].b};
#pragma unroll
    for (int r = 1; r < DJ_CLUSTER; r++)
        total = dj_sum(total, dj_pair{dj_slots[set][r].a, dj_slots[set][r].b});
    later = DJ_ROW_TICKETS ? dj_slots[set][0].later : 0u;
    return total;
}

// A cluster row group's rows, block `rank` working on segment `rank` (DJ_SEG_COLS columns)
// of each. A row's dx needs the sums over every slice, which a block learns only once the
// slowest block of the cluster has read its slice; so each block reads the next row and
// publishes its sums before it waits for the current row's, which hides that wait behind
// the next row's loads (on 4096x32768 bf16 layer norm backward, 2.47 TB/s against 2.15
// waiting in turn; prefetching three or four rows ahead into L2 rather than two gained
// nothing, nor did one barrier per block-wide sum instead of two). With DJ_PREFETCH_ROWS
// the row after `next` is prefetched into L2 as well (see prefetches_rows in rows.c). The
// cluster's rows are `row`, `next`, then every `step_rows`-th row after it, or with
// DJ_ROW_TICKETS the rows the first block's first thread takes from `tickets`, each two
// rows before it is worked on.
template <int V>
__device__ __forceinline__ void dj_cluster_rows(const DjArgs &args, unsigned rank, dj_i64 row, dj_i64 next,
                                                dj_i64 step_rows, unsigned *tickets, DjColSums<V> &col_sums)
{
    const int lane = (int)threadIdx.x;
    const bool taker = DJ_ROW_TICKETS && rank == 0 && threadIdx.x == 0;
    unsigned pending = taker ? atomicAdd(tickets, 1u) : 0u;
    const auto slice = [&](dj_i64 r) { return DjRow<V>{r, (int)rank, lane, 0, r < DJ_ROWS}; };
    const auto prefetch = [&](dj_i64 r) {
        if constexpr (DJ_PREFETCH_ROWS) {
            const DjRow<V> rw = slice(r);
#pragma unroll
            for (int k = 0; k < DjRow<V>::CHUNKS; k++)
                if (rw.has(k)) {
                    dj_pf_DY(rw.row, rw.col(k), args);
                    dj_pf_X(rw.row, rw.col(k), args);
                }
        }
    };
    DjHeldRow<V> first, second;
    const DjScale<V> scales(slice(row), args);
    int step = 0;
    prefetch(next);
    dj_publish(dj_row_sum(dj_norm_backward_sums(slice(row), args, scales, first), slice(row)), pending, step, rank);
    if (taker)
        pending = atomicAdd(tickets, 1u);
    // One step: the next row's first pass and sums out, the current row's sums in, its
    // second pass. Written for both assignments of the two held rows, which keeps them in
    // registers (an array indexed by the step's parity would not be).
    const auto advance = [&](DjHeldRow<V> &cur, DjHeldRow<V> &nxt) {
        if (next < DJ_ROWS) {
            const DjRow<V> rw = slice(next);
            dj_publish(dj_row_sum(dj_norm_backward_sums(rw, args, scales, nxt), rw), pending, step + 1, rank);
            if (taker)
                pending = atomicAdd(tickets, 1u);
        }
        unsigned later;
        const dj_pair total = dj_collect(step, later);
        const dj_i64 after = DJ_ROW_TICKETS ? (dj_i64)later : next + step_rows;
        prefetch(after);
        dj_norm_backward_dx<V, true>(slice(row), args, scales, cur, total, col_sums);
        row = next;
        next = after;
        step++;
        return row < DJ_ROWS;
    };
    while (advance(first, second) && advance(second, first)) {
    }
}

// Stores a thread's sums of V consecutive columns, as float4 when V allows (`to` is then
// 16-byte aligned: DJ_COLS is a multiple of V). One float at a time, a warp's stores of 8
// consecutive floats a thread touch 8 times the sectors (or in shared memory, hit the banks
// 8 times over) that they fill: on the H200, leaving the partial sums unwritten took a
// 4096x32768 bf16 layer norm backward from 293 to 255 us, 32768x1000 fp16 from 63 to 60.
// With these stores, and column blocks of several strips when there are few row groups, the
// first went to 258 us, the second to 63.7 from 65.0, 32768x4096 bf16 from 234 to 218.
template <int V> __device__ __forceinline__ void dj_store_sums(float *to, const float (&v)[V])
{
    if constexpr (V % 4 == 0) {
#pragma unroll
        for (int q = 0; q < V / 4; q++)
            *(float4 *)(to + 4 * q) = make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
    } else {
#pragma unroll
        for (int e = 0; e < V; e++)
            to[e] = v[e];
    }
}

// Adds a row group's partial sums of one column (dscale's at `at`, dbias's a row of
// columns further) to a column block's. Past L1 (__ldcg): the sums come from other SMs.
__device__ __forceinline__ void dj_add_partial(const float *at, float &dscale, float &dbias)
{
    dscale += __ldcg(at);
    if constexpr (DJ_DBIAS)
        dbias += __ldcg(at + DJ_COLS);
}

template <int V> __device__ __forceinline__ void dj_rows_fused(const DjArgs &args)
{
    using R = DjRow<V>;
    constexpr int WARPS = DJ_BLOCK / 32;
    unsigned *const counters = (unsigned *)args.ptr[DJ_SCRATCH_SLOT];
    float *const partial = (float *)(counters + DJ_SCRATCH_COUNTERS);
    const unsigned rank = DJ_CLUSTER > 1 ? dj_cluster_rank() : 0u;
    const unsigned groups = dj_fused_groups();
    // The ticket and, with DJ_ROW_TICKETS, a cluster row group's first two rows.
    __shared__ unsigned ticket, first_rows[2];
    if constexpr (DJ_CLUSTER > 1) {
        if (threadIdx.x == 0) {
            for (int s = 0; s < DJ_SLOT_SETS; s++)
                dj_mbar_init(dj_smem_u32(&dj_slot_bars[s]), DJ_CLUSTER);
            asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        }
        // Every block of the cluster runs, its barriers ready, before any stores to its
        // shared memory.
        dj_cluster_sync();
        if (rank == 0 && threadIdx.x == 0) {
            const unsigned t = atomicAdd(counters, 1u);
            const bool take = DJ_ROW_TICKETS && t < groups;
            const unsigned r0 = take ? atomicAdd(counters + 2, 1u) : 0u, r1 = take ? atomicAdd(counters + 2, 1u) : 0u;
            for (unsigned r = 0; r < DJ_CLUSTER; r++) {
                dj_store_cluster(dj_smem_u32(&ticket), r, t);
                if constexpr (DJ_ROW_TICKETS) {
                    dj_store_cluster(dj_smem_u32(&first_rows[0]), r, r0);
                    dj_store_cluster(dj_smem_u32(&first_rows[1]), r, r1);
                }
            }
        }
        dj_cluster_sync();
    } else {
        if (threadIdx.x == 0)
            ticket = atomicAdd(counters, 1u);
        __syncthreads();
    }
    const unsigned mine = ticket;
    if (mine < groups) {
        DjColSums<V> sums;
        sums.zero();
        const int lane = (int)threadIdx.x % DJ_TPR, sub = (int)threadIdx.x / DJ_TPR;
        if constexpr (DJ_CLUSTER > 1) {
            // Without tickets a group has a row: loading keeps at most one cluster a row
            // (rows.c's fused_groups). With them a cluster may find every row taken.
            if constexpr (DJ_ROW_TICKETS) {
                if (first_rows[0] < DJ_ROWS)
                    dj_cluster_rows<V>(args, rank, first_rows[0], first_rows[1], 0, counters + 2, sums);
            } else {
                dj_cluster_rows<V>(args, rank, mine, mine + groups, groups, nullptr, sums);
            }
            // No block may leave while another can still store to its shared memory. A
            // block's last wait already covers every store made to it, but only a cluster
            // barrier says so in a way tools (compute-sanitizer's racecheck) can check, at
            // one barrier per kernel.
            dj_cluster_sync();
        } else {
            // The bound is the same for every thread of the block, as the row reductions need.
            constexpr dj_i64 STEP = (dj_i64)DJ_FUSED_GROUPS * DJ_RPB;
            const DjScale<V> scales(DjRow<V>{0, 0, lane, sub, true}, args);
            for (dj_i64 base = (dj_i64)mine * DJ_RPB; base < DJ_ROWS; base += STEP) {
                // The row this thread works on next goes to L2 meanwhile: a block holds only its
                // current rows in registers and waits on them, and the two blocks an SM holds
                // would otherwise leave DRAM idle through their reductions. On the H200 this took
                // 32768x4096 bf16 layer norm backward from 2.55 to 3.37 TB/s (RMS norm 3.00 to
                // 3.44); prefetching two steps ahead gave the same, four steps less.
                const DjRow<V> next{base + sub + STEP, 0, lane, sub, base + sub + STEP < DJ_ROWS};
#pragma unroll
                for (int k = 0; k < R::CHUNKS; k++)
                    if (next.has(k)) {
                        dj_pf_DY(next.row, next.col(k), args);
                        dj_pf_X(next.row, next.col(k), args);
                    }
                dj_norm_backward_row<V, true>(DjRow<V>{base + sub, 0, lane, sub, base + sub < DJ_ROWS}, args, scales,
                                              sums);
            }
        }
        const DjRow<V> rw{0, (int)rank, lane, sub, true};
        float *const out = partial + (dj_i64)mine * 2 * DJ_COLS;
        // Where this thread's sums go: straight to the scratch for one row per block, else
        // to its row's part of shared memory, whose rows the block then adds up in order.
        float *const to = DJ_RPB > 1 ? dj_fused_rows_sums[sub] : out;
#pragma unroll
        for (int k = 0; k < R::CHUNKS; k++)
            if (rw.has(k)) {
                float dscale[V], dbias[V];
                sums.get(k, dscale, dbias);
                dj_store_sums(to + rw.col(k), dscale);
                if constexpr (DJ_DBIAS)
                    dj_store_sums(to + DJ_COLS + rw.col(k), dbias);
            }
        if constexpr (DJ_RPB > 1) {
            __syncthreads();
            for (int c = (int)threadIdx.x; c < DJ_COL_SUMS * DJ_COLS; c += DJ_BLOCK) {
                float total = dj_fused_rows_sums[0][c];
                for (int r = 1; r < DJ_RPB; r++)
                    total += dj_fused_rows_sums[r][c];
                out[c] = total;
            }
        }
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0)
            atomicAdd(counters + 1, 1u);
        return;
    }
    if (threadIdx.x == 0) {
        const volatile unsigned *const arrived = counters + 1;
        while (*arrived < groups * DJ_CLUSTER)
            __nanosleep(200);
        __threadfence();
    }
    __syncthreads();
    constexpr int STRIPS = WARPS / DJ_FUSED_STRIP_WARPS;
    static_assert(STRIPS * DJ_FUSED_STRIP_WARPS == WARPS && DJ_FUSED_STRIP == 32, "a strip is a warp wide");
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, turn = warp % DJ_FUSED_STRIP_WARPS;
    const int strip = ((int)(mine - groups) * DJ_CLUSTER + (int)rank) * STRIPS + warp / DJ_FUSED_STRIP_WARPS;
    const int col = strip * DJ_FUSED_STRIP + lane;
    float dscale = 0.0f, dbias = 0.0f;
    if (col < DJ_COLS) {
        // Without clusters the row groups are a constant, and the loop is unrolled whole:
        // every load of the strip's partial sums is issued before the first add, one round
        // trip to L2 where the compiler's unrolling by 16 made three (on the H200, in five
        // rounds on two machines, 32768x1000 fp16 RMS norm backward 57.2 -> 56.5 us, layer
        // norm 59.5-60.0 -> 59.1-59.7: 0.4-0.6 us faster in four rounds, 0.2 slower in one).
        // The cluster plans, whose groups are counted at run time, keep the compiler's loop:
        // unrolled whole with a guard on each turn, or not unrolled at all, 4096x32768 bf16
        // layer norm backward ran 1-1.5% slower.
        if constexpr (DJ_CLUSTER == 1) {
            constexpr int TURNS = (DJ_FUSED_GROUPS + DJ_FUSED_STRIP_WARPS - 1) / DJ_FUSED_STRIP_WARPS;
#pragma unroll(TURNS)
            for (int i = 0; i < TURNS; i++) {
                const dj_i64 b = turn + (dj_i64)i * DJ_FUSED_STRIP_WARPS;
                if (b < groups)
                    dj_add_partial(partial + b * 2 * DJ_COLS + col, dscale, dbias);
            }
        } else {
            for (dj_i64 b = turn; b < groups; b += DJ_FUSED_STRIP_WARPS)
                dj_add_partial(partial + b * 2 * DJ_COLS + col, dscale, dbias);
        }
    }
    __shared__ float part[WARPS][2][32];
    part[warp][0][lane] = dscale;
    part[warp][1][lane] = dbias;
    __syncthreads();
    if (turn == 0 && col < DJ_COLS) {
        for (int w = warp + 1; w < warp + DJ_FUSED_STRIP_WARPS; w++) {
            dscale += part[w][0][lane];
            dbias += part[w][1][lane];
        }
        const float ds[1] = {dscale}, db[1] = {dbias};
        dj_pout_DSCALE<1>(col, ds, args);
        dj_pout_DBIAS<1>(col, db, args);
    }
}

// Sums dscale and dbias over the threads of a block that share a column lane (thread %
// LANES): butterfly shuffles inside each warp across the lanes that share one (LANES
// divides 32), then the warps' sums through shared memory in warp order, one barrier for
// all of them. The sums are valid in threads [0, LANES).
template <int LANES, int V> __device__ __forceinline__ void dj_col_sums(float (&dscale)[V], float (&dbias)[V])
{
    static_assert(32 % LANES == 0, "column lanes divide a warp");
#pragma unroll
    for (int m = 16; m >= LANES; m /= 2)
#pragma unroll
        for (int e = 0; e < V; e++) {
            dscale[e] += dj_shfl_xor(dscale[e], m);
            if constexpr (DJ_DBIAS)
                dbias[e] += dj_shfl_xor(dbias[e], m);
        }
    __shared__ float part[DJ_BLOCK / 32][LANES][2 * V];
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    if (lane < LANES) {
#pragma unroll
        for (int e = 0; e < V; e++) {
            part[warp][lane][e] = dscale[e];
            if constexpr (DJ_DBIAS)
                part[warp][lane][V + e] = dbias[e];
        }
    }
    __syncthreads();
    if ((int)threadIdx.x < LANES) {
#pragma unroll
        for (int e = 0; e < V; e++) {
            dscale[e] = part[0][threadIdx.x][e];
            dbias[e] = DJ_DBIAS ? part[0][threadIdx.x][V + e] : 0.0f;
            for (int w = 1; w < DJ_BLOCK / 32; w++) {
                dscale[e] += part[w][threadIdx.x][e];
                if constexpr (DJ_DBIAS)
                    dbias[e] += part[w][threadIdx.x][V + e];
            }
        }
    }
}

template <int V> __device__ __forceinline__ void dj_col_op(const DjArgs &args)
{
    constexpr int LANES = DJ_STRIP / V; // threads across the strip; the others go down the rows
    constexpr int ROW_LANES = DJ_BLOCK / LANES;
    static_assert(LANES * V == DJ_STRIP && ROW_LANES * LANES == DJ_BLOCK, "strip layout");
    const int strip = (int)blockIdx.x / DJ_SEGMENTS, segment = (int)blockIdx.x % DJ_SEGMENTS;
    const int lane = (int)threadIdx.x % LANES, col = strip * DJ_STRIP + lane * V;
    const bool inside = col < DJ_COLS;
    const dj_i64 first_row = (dj_i64)segment * DJ_SEG_ROWS;
    const dj_i64 end_row = first_row + DJ_SEG_ROWS < DJ_ROWS ? first_row + DJ_SEG_ROWS : DJ_ROWS;
    float dscale[V], dbias[V];
#pragma unroll
    for (int e = 0; e < V; e++)
        dscale[e] = dbias[e] = 0.0f;
    if (inside) {
#pragma unroll 4
        for (dj_i64 row = first_row + threadIdx.x / LANES; row < end_row; row += ROW_LANES) {
            float dy[V], x[V];
            dj_in_DY<V>(row, col, dy, args, false);
            dj_in_X<V>(row, col, x, args, false);
            const float mean = dj_rin_MEAN(row, args), inv_var = dj_rin_INV_VARIANCE(row, args);
#pragma unroll
            for (int e = 0; e < V; e++) {
                dscale[e] += dy[e] * ((x[e] - mean) * inv_var);
                dbias[e] += dy[e];
            }
        }
    }
    dj_col_sums<LANES>(dscale, dbias);
    if constexpr (DJ_SEGMENTS > 1) {
        unsigned *const arrivals = (unsigned *)args.ptr[DJ_SCRATCH_SLOT];
        float *const sums = (float *)(arrivals + DJ_SCRATCH_COUNTERS) + (dj_i64)strip * DJ_SEGMENTS * 2 * DJ_STRIP;
        if ((int)threadIdx.x < LANES) {
#pragma unroll
            for (int e = 0; e < V; e++) {
                sums[(2 * segment) * DJ_STRIP + lane * V + e] = dscale[e];
                if constexpr (DJ_DBIAS)
                    sums[(2 * segment + 1) * DJ_STRIP + lane * V + e] = dbias[e];
            }
        }
        if (!dj_block_arrives_last(arrivals + strip, DJ_SEGMENTS))
            return;
        if ((int)threadIdx.x < LANES) {
            // The other segments' sums come from other SMs: loaded from L2, past this one's L1.
#pragma unroll
            for (int e = 0; e < V; e++) {
                dscale[e] = dbias[e] = 0.0f;
                for (int s = 0; s < DJ_SEGMENTS; s++) {
                    dscale[e] += dj_load_cg(sums + (2 * s) * DJ_STRIP + lane * V + e);
                    if constexpr (DJ_DBIAS)
                        dbias[e] += dj_load_cg(sums + (2 * s + 1) * DJ_STRIP + lane * V + e);
                }
            }
        }
    }
    if (inside && (int)threadIdx.x < LANES) {
        dj_pout_DSCALE<V>(col, dscale, args);
        dj_pout_DBIAS<V>(col, dbias, args);
    }
}
