// Rows engine: one kernel per row group ([pointwise prologue] -> softmax, norm, reduction or
// a backward -> [pointwise epilogue]), specialised to its row length. A row is DJ_COLS
// elements; DJ_TPR threads share a row (part of a warp, a warp, or several warps), DJ_RPB
// rows run side by side in a block, and the blocks loop over the rows with a grid stride.
// A thread covers chunks k = 0, 1, ... of V consecutive elements starting at column
// (k * DJ_TPR + lane) * V, so that the threads of a row read consecutive memory; V is
// DJ_VEC (16 bytes of the narrowest row tensor) when dj_aligned(args) says every vector
// pointer allows it, else 1. With DJ_REGS the op's full inputs are read once and kept in
// registers across its passes; otherwise every pass reads them again (the later reads
// mostly hit L2). Math is in float, and every reduction combines in a fixed order, so a
// plan gives the same bits on every run (a cluster plan's column sums on every run on one
// device: see dj_fused_groups).
//
// The source of a kernel is: common.cuh, the generated constants DJ_ROWS, DJ_COLS, DJ_TPR,
// DJ_BLOCK, DJ_VEC, DJ_REGS, DJ_SPLIT and DJ_SEG_COLS (see DjRow), DJ_FLOAT_ROWS (see
// DjCache), DJ_COL_BLOCKS (blocks in front of the row blocks that do per-column work, 0
// for most ops), DJ_FUSED_BLOCKS, DJ_FUSED_STRIP and DJ_CLUSTER (a fused norm backward's
// row blocks, columns per column block and blocks that share a row; 0, unused and 1
// otherwise), DJ_SCRATCH_SLOT and DJ_SCRATCH_COUNTERS (the kernel's scratch, whose
// counters execute zeroes) and DJ_LAUNCH_BOUNDS (the kernel's __launch_bounds__ and any
// __cluster_dims__), this file, the generated dj_aligned(args) and port accessors, the
// op's file (rows_<op>.cuh), and rows_kernel.cuh. The accessors are named after the op's
// ports:
//   dj_in_P<V>(row, col, v, args, first)  full input P at (row, col .. col + V - 1); a
//                                         prologue stores the tensors it makes only when
//                                         `first` is set, which one pass of the op does
//   dj_pf_P(row, col, args)               a prefetch into L2 of full input P at (row, col)
//                                         (nothing for a prologue's result)
//   dj_out_P<V>(row, col, v, args)        full output P: stored and/or fed to an epilogue
//   dj_par_P<V>(col, v, args)             per-column input (an absent one reads 0)
//   dj_pout_P<V>(col, v, args)            per-column output (nothing when not needed)
//   dj_rin_P(row, args)                   per-row input (an absent one reads 0)
//   dj_rout_P(row, value, args)           per-row output (nothing when not needed)
//   dj_eps(args)                          a norm's epsilon
//   DjKept_P                              the type a full input's values are kept in
//                                         (see DjCache)
// The op file defines dj_row_op<V>(row, args), dj_col_op<V>(args) when DJ_COL_BLOCKS > 0
// and dj_rows_fused<V>(args) when DJ_FUSED_BLOCKS > 0.

constexpr int DJ_RPB = DJ_BLOCK / DJ_TPR;
constexpr int DJ_ROW_WARPS = DJ_TPR > 32 ? DJ_TPR / 32 : 1;
static_assert(DJ_RPB * DJ_TPR == DJ_BLOCK && (DJ_TPR & (DJ_TPR - 1)) == 0, "threads per row: a power of two");

// The row a group of DJ_TPR threads works on, and where its chunks lie. Rows past the end
// (valid false) still take part in the reductions, which every thread of a block runs.
// A split row (DJ_SPLIT > 1: one-pass ops, or a cluster plan's slices) is DJ_SPLIT segments
// of DJ_SEG_COLS columns, each worked on like a row of its own.
template <int V> struct DjRow {
    static constexpr int CHUNKS = (DJ_SEG_COLS + DJ_TPR * V - 1) / (DJ_TPR * V);
    // Every chunk inside the row (or its segment).
    static constexpr bool FULL = DJ_SEG_COLS % (DJ_TPR * V) == 0 && DJ_COLS % DJ_SEG_COLS == 0;
    // Only the plan's own access width keeps the row in registers: the one-element path a
    // vector plan falls back to for unaligned pointers would need more registers than the
    // plan was sized for (and the kernel gets the registers of its hungriest path), so it
    // reads the row again on each pass instead.
    static constexpr bool REGS = DJ_REGS && V == DJ_VEC;
    static constexpr int CACHED = REGS ? CHUNKS : 1;
    // Register-resident rows unroll completely so that the cache (and a fused plan's
    // per-column sums) stay in registers. The one-element path of a fused plan keeps its
    // sums in local memory instead: unrolled, they would raise the registers of the whole
    // kernel, and that path serves only unaligned pointers.
    static constexpr int UNROLL = REGS || CHUNKS < 4 ? CHUNKS : 4;
    dj_i64 row;
    int segment, lane, sub;
    bool valid;
    __device__ __forceinline__ int col(int k) const { return segment * DJ_SEG_COLS + (k * DJ_TPR + lane) * V; }
    __device__ __forceinline__ bool has(int k) const
    {
        return valid && (FULL || ((k * DJ_TPR + lane) * V < DJ_SEG_COLS && col(k) < DJ_COLS));
    }
};

// The register cache of one full input (used when DjRow<V>::REGS): floats, or for an input whose
// values are 16-bit floats (read from memory, or stored rounded by a prologue; the
// generator says which with DjKept_<port>) the same bits two to a 32-bit register, which
// halves the registers a row needs. A plan with registers to spare keeps floats anyway
// (DJ_FLOAT_ROWS): packing costs an instruction per two values and the second pass's
// unpacking one per value (see rows.c's float_rows).
template <typename T, int V, bool PACKED = !DJ_FLOAT_ROWS> struct DjCache {
    float v[DjRow<V>::CACHED][V];
    __device__ __forceinline__ void put(int k, const float (&x)[V])
    {
#pragma unroll
        for (int e = 0; e < V; e++)
            v[k][e] = x[e];
    }
    __device__ __forceinline__ void get(int k, float (&x)[V]) const
    {
#pragma unroll
        for (int e = 0; e < V; e++)
            x[e] = v[k][e];
    }
};

// Two values exactly representable in T, in one word (lo in the low half), and back. The
// packed word passes through an opaque copy (PTX), without which the compiler would see
// that unpacking gives back the floats it packed and keep those instead, undoing the
// saving. bf16's packing itself is plain integer operations, which fold back to the word
// dj_load read when lo and hi came straight from memory: on 4096x32768 bf16 layer norm
// backward, that and dj_load's word reads took a cluster plan's row steps from 1441 to
// 1325 SASS instructions (a packing instruction per two values, one more per odd value read).
__device__ __forceinline__ unsigned dj_pack2(dj_bf16, float lo, float hi)
{
    const unsigned w = (__float_as_uint(lo) >> 16) | (__float_as_uint(hi) & 0xffff0000u);
    unsigned kept;
    asm("mov.b32 %0, %1;" : "=r"(kept) : "r"(w));
    return kept;
}
__device__ __forceinline__ void dj_unpack2(dj_bf16, unsigned w, float &lo, float &hi)
{
    lo = __uint_as_float(w << 16);
    hi = __uint_as_float(w & 0xffff0000u);
}
__device__ __forceinline__ unsigned dj_pack2(dj_half, float lo, float hi)
{
    unsigned w;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
    return w;
}
__device__ __forceinline__ void dj_unpack2(dj_half, unsigned w, float &lo, float &hi)
{
    asm("{.reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;}" : "=f"(lo), "=f"(hi) : "r"(w));
}

template <typename T, int V> struct DjPackedCache {
    static constexpr int WORDS = (V + 1) / 2;
    unsigned w[DjRow<V>::CACHED][WORDS];
    __device__ __forceinline__ void put(int k, const float (&x)[V])
    {
#pragma unroll
        for (int i = 0; i < WORDS; i++)
            w[k][i] = dj_pack2(T{}, x[2 * i], 2 * i + 1 < V ? x[2 * i + 1] : 0.0f);
    }
    __device__ __forceinline__ void get(int k, float (&x)[V]) const
    {
#pragma unroll
        for (int i = 0; i < WORDS; i++) {
            float lo, hi;
            dj_unpack2(T{}, w[k][i], lo, hi);
            x[2 * i] = lo;
            if (2 * i + 1 < V)
                x[2 * i + 1] = hi;
        }
    }
};
template <int V> struct DjCache<dj_bf16, V, true> : DjPackedCache<dj_bf16, V> {};
template <int V> struct DjCache<dj_half, V, true> : DjPackedCache<dj_half, V> {};

// ---- memory ------------------------------------------------------------------------

// V elements of T to or from floats, in accesses of at most 16 bytes (p aligned to them).
// bf16 pairs are read as 32-bit words and widened with one instruction a value (see
// dj_unpack2): element by element, NVVM extracted each odd value into a register of its
// own first, two instructions where one does. fp16 keeps the element loop: its conversion
// already reads either half of a word in one instruction (dj_unpack2's cvt, the same).
template <typename T, int V> __device__ __forceinline__ void dj_load(const T *p, float (&v)[V])
{
    constexpr int P = 16 / (int)sizeof(T) < V ? 16 / (int)sizeof(T) : V;
#pragma unroll
    for (int i = 0; i < V; i += P) {
        if constexpr (P % 2 == 0 && dj_same_type<T, dj_bf16>::value) {
            const dj_vec<unsigned, P / 2> q = *(const dj_vec<unsigned, P / 2> *)(p + i);
#pragma unroll
            for (int e = 0; e < P / 2; e++)
                dj_unpack2(dj_bf16{}, q.v[e], v[i + 2 * e], v[i + 2 * e + 1]);
        } else {
            const dj_vec<T, P> q = *(const dj_vec<T, P> *)(p + i);
#pragma unroll
            for (int e = 0; e < P; e++)
                v[i + e] = dj_to_float(q.v[e]);
        }
    }
}

template <typename T, int V> __device__ __forceinline__ void dj_store(T *p, const float (&v)[V])
{
    constexpr int P = 16 / (int)sizeof(T) < V ? 16 / (int)sizeof(T) : V;
#pragma unroll
    for (int i = 0; i < V; i += P) {
        dj_vec<T, P> q;
#pragma unroll
        for (int e = 0; e < P; e++)
            q.v[e] = dj_from_float<T>(v[i + e]);
        dj_vec_store(p + i, q);
    }
}

// v as a tensor of type T holds it.
template <typename T> __device__ __forceinline__ float dj_round(float v) { return dj_to_float(dj_from_float<T>(v)); }

// Chunk k of a full input: read through `in` on the first pass, or on every pass when the
// row is not kept in registers; from the register cache otherwise. Chunks outside the row
// read `fill`.
template <typename T, int V, typename In>
__device__ __forceinline__ void dj_chunk(const DjRow<V> &rw, DjCache<T, V> &cache, int k, bool first, float fill,
                                         In in, float (&x)[V])
{
    if constexpr (DjRow<V>::REGS) {
        if (!first) {
            cache.get(k, x);
            return;
        }
    }
    if (rw.has(k)) {
        in(rw.row, rw.col(k), x, first);
    } else {
#pragma unroll
        for (int e = 0; e < V; e++)
            x[e] = fill;
    }
    if constexpr (DjRow<V>::REGS)
        cache.put(k, x);
}

// ---- reductions over a row --------------------------------------------------------------

struct dj_pair {
    float a, b;
};

__device__ __forceinline__ float dj_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ dj_pair dj_shfl_xor(dj_pair v, int m) { return {dj_shfl_xor(v.a, m), dj_shfl_xor(v.b, m)}; }

__device__ __forceinline__ float dj_sum(float a, float b) { return a + b; }
__device__ __forceinline__ dj_pair dj_sum(dj_pair a, dj_pair b) { return {a.a + b.a, a.b + b.b}; }
// The larger value, or NaN when either is NaN (a NaN makes its whole softmax row NaN): one
// instruction (sm_80 and later) where the comparisons took three.
__device__ __forceinline__ float dj_max_nan(float a, float b)
{
    float m;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(m) : "f"(a), "f"(b));
    return m;
}

// exp(x - max) as 2^((x - max) * log2(e)) in the hardware exp2 with denormal results
// flushed to 0 (far below what a softmax output or its sum can resolve), which saves
// __expf's denormal handling. x - max is exact near the max (where the large terms are),
// which folding max * log2(e) into one fused multiply-add would not be.
constexpr float DJ_LOG2E = 1.4426950408889634f;
__device__ __forceinline__ float dj_exp_shifted(float x, float max)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"((x - max) * DJ_LOG2E));
    return y;
}

// Waits for the warps of row `sub` of the block (a row wider than a warp). A fused norm
// backward's block of several rows gives each row a barrier of its own (hardware barriers
// 1 to DJ_RPB; 0 is __syncthreads'), so that no row waits on the loads of another: on the
// H200 32768x1000 fp16 layer norm backward (64 threads a row, four rows a block, two blocks
// an SM) went from 63.8 to 62.9 us, RMS norm from 60.8 to 59.3. The plans that fill an SM
// with blocks of two such rows (the forward ops, softmax backward) slowed by the same
// change from 34.6 to 59.5 us (softmax), 35.7 to 59.9 (layer norm) and 48.5 to 55.4
// (softmax backward), so they keep __syncthreads. Alternating two shared buffers from one
// row to the next, to drop a fused loop's second barrier, gained nothing (within 0.5%);
// nor, in the forward ops, did the two reductions of a row (softmax's max and sum, layer
// norm's mean and variance) in two buffers with one barrier fewer between them: within
// 0.4% on every shape, and 32768x1000 fp16 layer norm 36.0 -> 41.6 us.
__device__ __forceinline__ void dj_row_barrier(int sub)
{
    static_assert(DJ_TPR <= 32 || (DJ_TPR % 32 == 0 && DJ_RPB < 16), "a row's threads are whole warps, with a barrier each");
    if constexpr (DJ_RPB > 1 && DJ_FUSED_BLOCKS > 0)
        asm volatile("bar.sync %0, %1;" ::"r"(1 + sub), "n"(DJ_TPR) : "memory");
    else
        __syncthreads();
}

// Combines v over the DJ_TPR threads of a row, every thread receiving the result:
// butterfly shuffles inside a warp, then for rows wider than a warp the warps' results
// through shared memory, in warp order. `op` is commutative, so both partners of each
// butterfly step compute the same value.
template <typename T, typename F> __device__ __forceinline__ T dj_row_reduce(T v, int sub, int lane, F op)
{
#pragma unroll
    for (int m = (DJ_TPR < 32 ? DJ_TPR : 32) / 2; m > 0; m /= 2)
        v = op(v, dj_shfl_xor(v, m));
    if constexpr (DJ_TPR > 32) {
        __shared__ T part[DJ_RPB][DJ_ROW_WARPS];
        if (lane % 32 == 0)
            part[sub][lane / 32] = v;
        dj_row_barrier(sub);
        v = part[sub][0];
#pragma unroll
        for (int w = 1; w < DJ_ROW_WARPS; w++)
            v = op(v, part[sub][w]);
        dj_row_barrier(sub); // the next reduction reuses part
    }
    return v;
}

template <int V, typename T> __device__ __forceinline__ T dj_row_sum(T v, const DjRow<V> &rw)
{
    return dj_row_reduce(v, rw.sub, rw.lane, [](T a, T b) { return dj_sum(a, b); });
}
