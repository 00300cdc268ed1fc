// Skinny GEMM for sm_80 and later: C[batch] = A[batch] * B[batch] for A of at most 16 rows (a
// linear layer on a few tokens), with both operands' K axis contiguous: A's rows of
// activations, and B an nn.Linear weight [N, K]. Such a problem reads B once and does almost
// no arithmetic per byte of it, so what sets its time is how many of B's bytes are in flight,
// not the tensor cores; tiles staged through shared memory only add a round trip and the
// wait for a stage. Here each warp streams its eight rows of B straight from global memory
// into mma.sync's B fragments with 16-byte loads, 2 * DJ_SKINNY_U of them in flight per
// thread, and the CTA's DJ_SKINNY_KS warps split K between them and add their sums in shared
// memory.
//
// mma.sync m16n8k16 takes thread (g = lane / 4, t = lane % 4)'s B fragment as row n = g of B
// at K elements {2t, 2t + 1} and {2t + 8, 2t + 9}, and its A fragment as rows g and g + 8 at
// the same K elements. A sum over K does not care about the order of its terms, so the kernel
// hands the products a permuted K: of each 32 K elements, thread t loads elements 8t to 8t + 7
// of its B row (16 bytes, one load) and of its two A rows, and gives elements 0-3 to one mma
// and 4-7 to the next as if they were K elements {2t, 2t + 1, 2t + 8, 2t + 9}. A and B follow
// the same permutation, so every product pairs the right elements. Threads whose rows of A lie
// past M, or whose row of B lies past N, read row 0 instead: their products land in rows and
// columns of C that are never stored.
//
// The generator places before this file:
//   DJ_KIND                   0 fp16, 1 bf16 (A and B both)
//   DJ_SKINNY_KS DJ_SKINNY_U  the knobs: warps splitting K in a CTA, and 32-element chunks
//                             of K a thread loads a turn (one 16-byte piece of B each)
//   DJ_M DJ_N DJ_K DJ_BATCH   the problem (DJ_M <= 16, DJ_K a multiple of 8)
//   DJ_A_SM DJ_A_SLOT dj_a_batch(b)   A over [M, K], K contiguous: its row stride (a multiple
//       of 8 elements), argument slot, and the offset of batch entry b
//   DJ_B_SN DJ_B_SLOT dj_b_batch(b)   the same for B over [N, K]
//   dj_epilogue(batch, row, col, acc0, acc1, pair, args)   the fused epilogue of columns col
//       and (when pair) col + 1; stores every output
//
// Grid: one CTA per 8 columns of C (blockIdx.x) and batch entry (blockIdx.y).

constexpr int DJ_SKINNY_THREADS = 32 * DJ_SKINNY_KS;
// Each warp walks a near-equal share of K's 32-element chunks.
constexpr dj_i64 DJ_K_CHUNKS = (DJ_K + 31) / 32;
constexpr dj_i64 DJ_WARP_CHUNKS = (DJ_K_CHUNKS + DJ_SKINNY_KS - 1) / DJ_SKINNY_KS;

static_assert(DJ_KIND == 0 || DJ_KIND == 1, "16-bit inputs");
static_assert(DJ_M <= 16 && DJ_K % 8 == 0, "at most 16 rows, and K in whole 16-byte pieces");
static_assert(DJ_K < (1LL << 30), "K's offsets are 32-bit");
static_assert(DJ_SKINNY_KS > 1, "the warps' sums meet in shared memory");

// B is read once: its loads bypass L1 (which keeps A, read by every CTA).
__device__ __forceinline__ uint4 dj_skinny_stream(const unsigned short *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// Eight elements from p when `in`, else zeros: one 16-byte load where the operands' base
// pointers allow (their rows are 16-byte multiples apart, so every piece is then aligned),
// element by element where not.
template <bool ALIGNED, bool STREAM> __device__ __forceinline__ uint4 dj_skinny_load(const unsigned short *p, bool in)
{
    if (!in)
        return make_uint4(0u, 0u, 0u, 0u);
    if constexpr (ALIGNED)
        return STREAM ? dj_skinny_stream(p) : *(const uint4 *)p;
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; i++)
        w[i] = (unsigned)p[2 * i] | (unsigned)p[2 * i + 1] << 16;
    return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ void dj_skinny_mma(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                              unsigned b0, unsigned b1)
{
    if constexpr (DJ_KIND == 0)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// U chunks of this thread's rows from chunk `chunk` on, all of them whole (inside K): 16-byte
// pieces of B's row and of A's rows g and g + 8 (the latter only where A has more than 8 rows;
// zeros else). Rows outside the matrices were clamped to row 0 by the caller, so the loads need
// no checks: their products land in rows and columns of C that are never stored.
template <bool ALIGNED>
__device__ __forceinline__ void dj_skinny_fetch(uint4 (&bv)[DJ_SKINNY_U], uint4 (&lv)[DJ_SKINNY_U],
                                                uint4 (&hv)[DJ_SKINNY_U], const unsigned short *b,
                                                const unsigned short *lo, const unsigned short *hi, int chunk)
{
#pragma unroll
    for (int u = 0; u < DJ_SKINNY_U; u++) {
        const int k = (chunk + u) * 32;
        bv[u] = dj_skinny_load<ALIGNED, true>(b + k, true);
        lv[u] = dj_skinny_load<ALIGNED, false>(lo + k, true);
        hv[u] = dj_skinny_load<ALIGNED, false>(hi + k, DJ_M > 8);
    }
}

__device__ __forceinline__ void dj_skinny_mmas(float (&acc)[4], const uint4 (&bv)[DJ_SKINNY_U],
                                               const uint4 (&lv)[DJ_SKINNY_U], const uint4 (&hv)[DJ_SKINNY_U])
{
#pragma unroll
    for (int u = 0; u < DJ_SKINNY_U; u++) {
        dj_skinny_mma(acc, lv[u].x, hv[u].x, lv[u].y, hv[u].y, bv[u].x, bv[u].y);
        dj_skinny_mma(acc, lv[u].z, hv[u].z, lv[u].w, hv[u].w, bv[u].z, bv[u].w);
    }
}

// This thread's rows over 32-element chunks [first, last) of K, into acc. The whole chunks go
// U at a time, double-buffered in the source: each turn issues the next U chunks' loads before
// the mmas of the U loaded the turn before, so that 2U of B's pieces are in flight per thread.
// Written as loads and then mmas of one turn, ptxas placed each load next to its mma and kept
// about one in flight: on the H200 that walk streamed 1x14336x4096's 117 MB of B from DRAM in
// 45 us, this one in 32.8 (8 warps of 2 chunks a turn, calls under graph replay). Chunks past the
// whole ones (K % 32 != 0) go one at a time, each thread's 8 elements wholly inside K or past
// it (K is a multiple of 8).
template <bool ALIGNED>
__device__ __forceinline__ void dj_skinny_walk(float (&acc)[4], const unsigned short *b, const unsigned short *lo,
                                               const unsigned short *hi, int t, int first, int last)
{
    constexpr int U = DJ_SKINNY_U;
    const int whole = last < (int)(DJ_K / 32) ? last : (int)(DJ_K / 32);
    int chunk = first;
    if (chunk + U <= whole) {
        uint4 bv[U], lv[U], hv[U];
        dj_skinny_fetch<ALIGNED>(bv, lv, hv, b, lo, hi, chunk);
#pragma unroll 1
        for (chunk += U; chunk + U <= whole; chunk += U) {
            uint4 nb[U], nl[U], nh[U];
            dj_skinny_fetch<ALIGNED>(nb, nl, nh, b, lo, hi, chunk);
            dj_skinny_mmas(acc, bv, lv, hv);
#pragma unroll
            for (int u = 0; u < U; u++)
                bv[u] = nb[u], lv[u] = nl[u], hv[u] = nh[u];
        }
        dj_skinny_mmas(acc, bv, lv, hv);
    }
#pragma unroll 1
    for (; chunk < last; chunk++) {
        const int k = chunk * 32;
        const bool in = k + 8 * t < DJ_K;
        const uint4 bv = dj_skinny_load<ALIGNED, true>(b + k, in);
        const uint4 lv = dj_skinny_load<ALIGNED, false>(lo + k, in);
        const uint4 hv = dj_skinny_load<ALIGNED, false>(hi + k, in && DJ_M > 8);
        dj_skinny_mma(acc, lv.x, hv.x, lv.y, hv.y, bv.x, bv.y);
        dj_skinny_mma(acc, lv.z, hv.z, lv.w, hv.w, bv.z, bv.w);
    }
}

extern "C" __global__ void __launch_bounds__(DJ_SKINNY_THREADS) dj_gemm_skinny(const DjArgs args)
{
    // No early trigger: the next kernel's blocks, scheduled while this one's later blocks
    // still wait for SM room, would take it from them (see dj_gemm_sm90).
    dj_grid_wait();
    __shared__ float sums[DJ_SKINNY_KS][32][4];
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const dj_i64 batch = blockIdx.y;
    const int n0 = (int)blockIdx.x * 8;
    const unsigned short *const a = (const unsigned short *)args.ptr[DJ_A_SLOT] + dj_a_batch(batch);
    const unsigned short *const b = (const unsigned short *)args.ptr[DJ_B_SLOT] + dj_b_batch(batch);
    // This thread's rows: of B row n0 + g, of A rows g and g + 8, each clamped to row 0 where
    // it lies outside the matrix.
    const unsigned short *const b_at = b + (dj_i64)(n0 + g < DJ_N ? n0 + g : 0) * DJ_B_SN + 8 * t;
    const unsigned short *const lo_at = a + (dj_i64)(g < DJ_M ? g : 0) * DJ_A_SM + 8 * t;
    const unsigned short *const hi_at = a + (dj_i64)(g + 8 < DJ_M ? g + 8 : 0) * DJ_A_SM + 8 * t;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int first = warp * (int)DJ_WARP_CHUNKS;
    const int last = first + DJ_WARP_CHUNKS < DJ_K_CHUNKS ? first + (int)DJ_WARP_CHUNKS : (int)DJ_K_CHUNKS;
    if ((((dj_u64)a | (dj_u64)b) & 15) == 0)
        dj_skinny_walk<true>(acc, b_at, lo_at, hi_at, t, first, last);
    else
        dj_skinny_walk<false>(acc, b_at, lo_at, hi_at, t, first, last);
    // Thread (g, t) holds C's rows g and g + 8 at columns n0 + 2t and the next: the warps'
    // sums are added by the first warp, in warp order.
#pragma unroll
    for (int i = 0; i < 4; i++)
        sums[warp][lane][i] = acc[i];
    __syncthreads();
    if (warp != 0)
        return;
#pragma unroll 1
    for (int w = 1; w < DJ_SKINNY_KS; w++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            acc[i] += sums[w][lane][i];
    const int col = n0 + 2 * t;
#pragma unroll
    for (int h = 0; h < 2; h++)
        if (g + 8 * h < DJ_M && col < DJ_N)
            dj_epilogue(batch, g + 8 * h, col, acc[2 * h], acc[2 * h + 1], col + 1 < DJ_N, args);
}
