// Tensor-core GEMM for sm_80 and later: C[batch] = A[batch] * B[batch] with mma.sync,
// ldmatrix and a multi-stage cp.async pipeline, then the group's fused epilogue applied in
// registers. One CTA computes a DJ_BM x DJ_BN tile of C for one batch entry and one K split;
// its warps each own a DJ_WM x DJ_WN sub-tile.
//
// The generator places before this file:
//   dj_ta, dj_tb              storage types of A and B (dj_half, dj_bf16 or float)
//   DJ_KIND                   0 fp16, 1 bf16, 2 tf32, 3 fp32 as three tf32 products
//   DJ_BM DJ_BN DJ_BK DJ_WM DJ_WN DJ_STAGES DJ_SPLITK DJ_GROUP_M   the knobs
//   DJ_M DJ_N DJ_K DJ_BATCH   the problem
//   DJ_A_KMAJOR DJ_A_SM DJ_A_SK DJ_A_VEC DJ_A_SLOT dj_a_batch(b)   A over [M, K]: whether K
//       is its contiguous axis, its strides along M and K, whether 16-byte copies are legal
//       for every aligned base pointer, its argument slot, and the offset of batch entry b
//   DJ_B_KMAJOR DJ_B_SN DJ_B_SK DJ_B_VEC DJ_B_SLOT dj_b_batch(b)   the same for B over [N, K]
//   DJ_SCRATCH_SLOT           the workspace slot of split-K partial sums (when DJ_SPLITK > 1)
//   dj_epilogue(batch, row, col, acc, args)   the fused epilogue; stores every output

constexpr int DJ_WARPS_M = DJ_BM / DJ_WM;
constexpr int DJ_WARPS_N = DJ_BN / DJ_WN;
constexpr int DJ_THREADS = DJ_WARPS_M * DJ_WARPS_N * 32;
constexpr bool DJ_TF32 = DJ_KIND >= 2;
constexpr int DJ_KSTEP = DJ_TF32 ? 8 : 16;
constexpr int DJ_MI = DJ_WM / 16;
constexpr int DJ_NI = DJ_WN / 8;
constexpr int DJ_TILES_M = (int)((DJ_M + DJ_BM - 1) / DJ_BM);
constexpr int DJ_TILES_N = (int)((DJ_N + DJ_BN - 1) / DJ_BN);
constexpr int DJ_TILES = DJ_TILES_M * DJ_TILES_N;
constexpr int DJ_KTILES = (int)((DJ_K + DJ_BK - 1) / DJ_BK);
constexpr int DJ_KTILES_PER_SPLIT = (DJ_KTILES + DJ_SPLITK - 1) / DJ_SPLITK;

static_assert(DJ_BM % DJ_WM == 0 && DJ_BN % DJ_WN == 0, "warp tiles must divide the CTA tile");
static_assert(DJ_WM % 16 == 0 && DJ_WN % 16 == 0 && DJ_BK % DJ_KSTEP == 0, "tile shape");

// ---- PTX wrappers -----------------------------------------------------------------

__device__ __forceinline__ unsigned dj_smem_addr(const void *p)
{
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

// Copies `bytes` (0..16) bytes from global to shared memory and zero-fills the rest of the
// 16-byte chunk, so tiles that run past the edge of a matrix read zeros.
__device__ __forceinline__ void dj_cp_async16(void *dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dj_smem_addr(dst)), "l"(src), "r"(bytes));
}

__device__ __forceinline__ void dj_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N> __device__ __forceinline__ void dj_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void dj_ldsm4(unsigned r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(dj_smem_addr(p)));
}

__device__ __forceinline__ void dj_ldsm4_trans(unsigned r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(dj_smem_addr(p)));
}

__device__ __forceinline__ void dj_mma(float c[4], const unsigned a[4], const unsigned b[2])
{
    if constexpr (DJ_KIND == 0)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else if constexpr (DJ_KIND == 1)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ unsigned dj_to_tf32(float v)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
    return r;
}

__device__ __forceinline__ float dj_load_cg(const float *p)
{
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(v) : "l"(p));
    return v;
}

// ---- shared-memory tiles ----------------------------------------------------------

// One operand's tile in shared memory: MNT rows of M (or N) by DJ_BK of K, stored with the
// axis that is contiguous in global memory innermost, so copies stay 16-byte chunks and
// transposed operands need no copy (ldmatrix.trans reads them). Rows are padded by 16 bytes
// (32 for fp32 stored MN-major) so that the eight rows one ldmatrix or fragment load touches
// fall in distinct banks.
template <typename T, bool KMAJOR, int MNT> struct DjTile {
    static constexpr int PAD = sizeof(T) == 4 && !KMAJOR ? 8 : 16 / (int)sizeof(T);
    static constexpr int PITCH = (KMAJOR ? DJ_BK : MNT) + PAD;
    static constexpr int ELEMS = (KMAJOR ? MNT : DJ_BK) * PITCH;
    static __device__ __forceinline__ int at(int mn, int k) { return KMAJOR ? mn * PITCH + k : k * PITCH + mn; }
};

// Copies the MNT x DJ_BK tile at (mn0, k0) of an operand (extent MN along M or N, strides SMN
// and SK) into shared memory, zeros outside the matrix. With VEC and a 16-byte aligned base,
// asynchronous 16-byte copies along the contiguous axis; otherwise element by element.
template <typename T, bool KMAJOR, int MNT, dj_i64 MN, dj_i64 SMN, dj_i64 SK, bool VEC>
__device__ __forceinline__ void dj_load_tile(T *smem, const T *g, int mn0, dj_i64 k0, bool aligned)
{
    typedef DjTile<T, KMAJOR, MNT> Tile;
    constexpr int INNER = KMAJOR ? DJ_BK : MNT;
    constexpr int OUTER = KMAJOR ? MNT : DJ_BK;
    if (VEC && aligned) {
        constexpr int VE = 16 / (int)sizeof(T);
        constexpr int CHUNKS = OUTER * INNER / VE;
#pragma unroll
        for (int i = 0; i < (CHUNKS + DJ_THREADS - 1) / DJ_THREADS; i++) {
            const int c = (int)threadIdx.x + i * DJ_THREADS;
            if (CHUNKS % DJ_THREADS != 0 && c >= CHUNKS)
                break;
            const int o = c / (INNER / VE), in = c % (INNER / VE) * VE;
            const int mn_l = KMAJOR ? o : in, k_l = KMAJOR ? in : o;
            const dj_i64 mn = mn0 + mn_l, k = k0 + k_l;
            const dj_i64 outer_left = KMAJOR ? MN - mn : DJ_K - k;
            const dj_i64 inner_left = KMAJOR ? DJ_K - k : MN - mn;
            const int bytes = outer_left > 0 && inner_left > 0 ? (int)(inner_left >= VE ? 16 : inner_left * sizeof(T)) : 0;
            dj_cp_async16(smem + Tile::at(mn_l, k_l), bytes ? g + mn * SMN + k * SK : g, bytes);
        }
    } else {
        // The slow path stays a rolled loop: unrolled, it doubles the kernel's compile time.
        constexpr int ELEMS = OUTER * INNER;
#pragma unroll 1
        for (int e = (int)threadIdx.x; e < ELEMS; e += DJ_THREADS) {
            const int o = e / INNER, in = e % INNER;
            const int mn_l = KMAJOR ? o : in, k_l = KMAJOR ? in : o;
            const dj_i64 mn = mn0 + mn_l, k = k0 + k_l;
            T v;
            if (mn < MN && k < DJ_K)
                v = g[mn * SMN + k * SK];
            else
                v = dj_from_float<T>(0.0f);
            smem[Tile::at(mn_l, k_l)] = v;
        }
    }
}

// ---- fragments ----------------------------------------------------------------------

// A's 16x16 fragment at rows m.., columns k.. (16-bit types): ldmatrix of the four 8x8
// quarters in the order mma expects (rows 0-7/8-15 by columns 0-7, then 8-15).
template <typename T, bool KMAJOR, int MNT>
__device__ __forceinline__ void dj_frag_a16(unsigned a[4], const T *s, int m, int k, int lane)
{
    typedef DjTile<T, KMAJOR, MNT> Tile;
    if constexpr (KMAJOR) {
        dj_ldsm4(a, s + Tile::at(m + (lane & 15), k + (lane >> 4) * 8));
    } else {
        const int q = lane >> 3;
        dj_ldsm4_trans(a, s + Tile::at(m + (q & 1) * 8, k + (q >> 1) * 8 + (lane & 7)));
    }
}

// B's fragments for two neighbouring 8-column slices at n.. and n+8.., rows k.. (16-bit):
// b[0], b[1] for the first slice, b[2], b[3] for the second.
template <typename T, bool KMAJOR, int MNT>
__device__ __forceinline__ void dj_frag_b16(unsigned b[4], const T *s, int n, int k, int lane)
{
    typedef DjTile<T, KMAJOR, MNT> Tile;
    const int q = lane >> 3;
    if constexpr (KMAJOR)
        dj_ldsm4(b, s + Tile::at(n + (q >> 1) * 8 + (lane & 7), k + (q & 1) * 8));
    else
        dj_ldsm4_trans(b, s + Tile::at(n + (q >> 1) * 8, k + (q & 1) * 8 + (lane & 7)));
}

// fp32 operands: the m16n8k8 tf32 fragments read element by element. With DJ_KIND 3 each
// value is split into a tf32 `big` part and a tf32 `small` remainder.
template <bool KMAJOR, int MNT>
__device__ __forceinline__ void dj_frag_a32(unsigned big[4], unsigned small[4], const float *s, int m, int k, int lane)
{
    typedef DjTile<float, KMAJOR, MNT> Tile;
    const int g = lane >> 2, t = lane & 3;
    const float v[4] = {s[Tile::at(m + g, k + t)], s[Tile::at(m + g + 8, k + t)], s[Tile::at(m + g, k + t + 4)],
                        s[Tile::at(m + g + 8, k + t + 4)]};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        big[i] = dj_to_tf32(v[i]);
        if constexpr (DJ_KIND == 3)
            small[i] = dj_to_tf32(v[i] - __uint_as_float(big[i]));
    }
}

template <bool KMAJOR, int MNT>
__device__ __forceinline__ void dj_frag_b32(unsigned big[2], unsigned small[2], const float *s, int n, int k, int lane)
{
    typedef DjTile<float, KMAJOR, MNT> Tile;
    const int g = lane >> 2, t = lane & 3;
    const float v[2] = {s[Tile::at(n + g, k + t)], s[Tile::at(n + g, k + t + 4)]};
#pragma unroll
    for (int i = 0; i < 2; i++) {
        big[i] = dj_to_tf32(v[i]);
        if constexpr (DJ_KIND == 3)
            small[i] = dj_to_tf32(v[i] - __uint_as_float(big[i]));
    }
}

typedef DjTile<dj_ta, DJ_A_KMAJOR, DJ_BM> DjTileA;
typedef DjTile<dj_tb, DJ_B_KMAJOR, DJ_BN> DjTileB;

__device__ __forceinline__ void dj_zero(float (&acc)[DJ_MI][DJ_NI][4])
{
#pragma unroll
    for (int mi = 0; mi < DJ_MI; mi++)
#pragma unroll
        for (int ni = 0; ni < DJ_NI; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[mi][ni][e] = 0.0f;
}

// One K step of DJ_BK on the tiles of one stage, accumulated into the warp's acc.
__device__ __forceinline__ void dj_mma_stage(float (&acc)[DJ_MI][DJ_NI][4], const dj_ta *sa, const dj_tb *sb, int wm0,
                                             int wn0, int lane)
{
#pragma unroll
    for (int kk = 0; kk < DJ_BK; kk += DJ_KSTEP) {
        unsigned a[DJ_MI][4], b[DJ_NI][2];
        if constexpr (!DJ_TF32) {
#pragma unroll
            for (int mi = 0; mi < DJ_MI; mi++)
                dj_frag_a16<dj_ta, DJ_A_KMAJOR, DJ_BM>(a[mi], sa, wm0 + mi * 16, kk, lane);
#pragma unroll
            for (int ni = 0; ni < DJ_NI; ni += 2) {
                unsigned q[4];
                dj_frag_b16<dj_tb, DJ_B_KMAJOR, DJ_BN>(q, sb, wn0 + ni * 8, kk, lane);
                b[ni][0] = q[0];
                b[ni][1] = q[1];
                b[ni + 1][0] = q[2];
                b[ni + 1][1] = q[3];
            }
#pragma unroll
            for (int mi = 0; mi < DJ_MI; mi++)
#pragma unroll
                for (int ni = 0; ni < DJ_NI; ni++)
                    dj_mma(acc[mi][ni], a[mi], b[ni]);
        } else {
            unsigned as[DJ_MI][4], bs[DJ_NI][2];
#pragma unroll
            for (int mi = 0; mi < DJ_MI; mi++)
                dj_frag_a32<DJ_A_KMAJOR, DJ_BM>(a[mi], as[mi], (const float *)sa, wm0 + mi * 16, kk, lane);
#pragma unroll
            for (int ni = 0; ni < DJ_NI; ni++)
                dj_frag_b32<DJ_B_KMAJOR, DJ_BN>(b[ni], bs[ni], (const float *)sb, wn0 + ni * 8, kk, lane);
#pragma unroll
            for (int mi = 0; mi < DJ_MI; mi++)
#pragma unroll
                for (int ni = 0; ni < DJ_NI; ni++) {
                    // The small products first, so they are not lost against the big one.
                    if constexpr (DJ_KIND == 3) {
                        dj_mma(acc[mi][ni], as[mi], b[ni]);
                        dj_mma(acc[mi][ni], a[mi], bs[ni]);
                    }
                    dj_mma(acc[mi][ni], a[mi], b[ni]);
                }
        }
    }
}

extern "C" __global__ void __launch_bounds__(DJ_THREADS) dj_gemm(const DjArgs args)
{
    extern __shared__ __align__(16) unsigned char dj_smem[];
    dj_ta *const sa = (dj_ta *)dj_smem;
    dj_tb *const sb = (dj_tb *)(dj_smem + DJ_STAGES * DjTileA::ELEMS * sizeof(dj_ta));

    // Tiles are walked in groups of DJ_GROUP_M tile rows, column by column within a group, so
    // the CTAs resident together share their A rows and B columns in L2.
    const int tile = (int)blockIdx.x;
    const int per_group = DJ_GROUP_M * DJ_TILES_N;
    const int first_m = tile / per_group * DJ_GROUP_M;
    const int rows_here = DJ_TILES_M - first_m < DJ_GROUP_M ? DJ_TILES_M - first_m : DJ_GROUP_M;
    const int tm = first_m + tile % per_group % rows_here;
    const int tn = tile % per_group / rows_here;
    const int m0 = tm * DJ_BM, n0 = tn * DJ_BN;
    const dj_i64 batch = blockIdx.y / DJ_SPLITK;
    const int split = (int)(blockIdx.y % DJ_SPLITK);

    const dj_ta *const ga = (const dj_ta *)args.ptr[DJ_A_SLOT] + dj_a_batch(batch);
    const dj_tb *const gb = (const dj_tb *)args.ptr[DJ_B_SLOT] + dj_b_batch(batch);
    const bool a_aligned = ((dj_u64)ga & 15) == 0, b_aligned = ((dj_u64)gb & 15) == 0;

    const int kt0 = split * DJ_KTILES_PER_SPLIT;
    const int kt_count = (DJ_KTILES - kt0 < DJ_KTILES_PER_SPLIT ? DJ_KTILES - kt0 : DJ_KTILES_PER_SPLIT);

    const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31;
    const int wm0 = warp % DJ_WARPS_M * DJ_WM, wn0 = warp / DJ_WARPS_M * DJ_WN;

    float acc[DJ_MI][DJ_NI][4];
    dj_zero(acc);

    // Stage s holds K tile kt0 + s (mod DJ_STAGES). Every step commits one copy group, empty
    // or not, so that waiting for all but the newest DJ_STAGES - 2 groups always means the
    // tile about to be used has landed.
    auto load = [&](int t) {
        const int stage = t % DJ_STAGES;
        const dj_i64 k0 = (dj_i64)(kt0 + t) * DJ_BK;
        dj_load_tile<dj_ta, DJ_A_KMAJOR, DJ_BM, DJ_M, DJ_A_SM, DJ_A_SK, DJ_A_VEC>(sa + stage * DjTileA::ELEMS, ga, m0,
                                                                                  k0, a_aligned);
        dj_load_tile<dj_tb, DJ_B_KMAJOR, DJ_BN, DJ_N, DJ_B_SN, DJ_B_SK, DJ_B_VEC>(sb + stage * DjTileB::ELEMS, gb, n0,
                                                                                  k0, b_aligned);
    };
#pragma unroll
    for (int s = 0; s < DJ_STAGES - 1; s++) {
        if (s < kt_count)
            load(s);
        dj_cp_commit();
    }
    for (int t = 0; t < kt_count; t++) {
        dj_cp_wait<DJ_STAGES - 2>();
        __syncthreads();
        // The stage refilled here was read in step t - 1, which every thread has finished.
        if (t + DJ_STAGES - 1 < kt_count)
            load(t + DJ_STAGES - 1);
        dj_cp_commit();
        const int stage = t % DJ_STAGES;
        if constexpr (DJ_KIND == 3) {
            // The tensor cores' fp32 accumulation rounds less carefully than an FADD; for fp32
            // accuracy over long K each stage's products are summed apart and then added.
            float part[DJ_MI][DJ_NI][4];
            dj_zero(part);
            dj_mma_stage(part, sa + stage * DjTileA::ELEMS, sb + stage * DjTileB::ELEMS, wm0, wn0, lane);
#pragma unroll
            for (int mi = 0; mi < DJ_MI; mi++)
#pragma unroll
                for (int ni = 0; ni < DJ_NI; ni++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        acc[mi][ni][e] += part[mi][ni][e];
        } else {
            dj_mma_stage(acc, sa + stage * DjTileA::ELEMS, sb + stage * DjTileB::ELEMS, wm0, wn0, lane);
        }
    }
    dj_cp_wait<0>();

    const int g = lane >> 2, tq = lane & 3;
    if constexpr (DJ_SPLITK > 1) {
        // Each split stores its partial tile; the last split to finish a tile sums all of
        // them in split order (so the result does not depend on which split was last) and
        // runs the epilogue. The arrival counters are zeroed by execute before the launch.
        unsigned *const arrivals = (unsigned *)args.ptr[DJ_SCRATCH_SLOT];
        float *const partials = (float *)(arrivals + DJ_SCRATCH_COUNTERS);
        const dj_i64 tile_id = batch * DJ_TILES + tile;
        auto partial = [&](int s, int r, int c) -> float * {
            return partials + ((dj_i64)s * DJ_BATCH * DJ_TILES + tile_id) * (DJ_BM * DJ_BN) + r * DJ_BN + c;
        };
#pragma unroll
        for (int mi = 0; mi < DJ_MI; mi++)
#pragma unroll
            for (int ni = 0; ni < DJ_NI; ni++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    *partial(split, wm0 + mi * 16 + g + (e >> 1) * 8, wn0 + ni * 8 + 2 * tq + (e & 1)) = acc[mi][ni][e];
        __threadfence();
        __syncthreads();
        __shared__ unsigned last;
        if (threadIdx.x == 0)
            last = atomicAdd(arrivals + tile_id, 1u) == DJ_SPLITK - 1;
        __syncthreads();
        if (!last)
            return;
        __threadfence();
#pragma unroll
        for (int mi = 0; mi < DJ_MI; mi++)
#pragma unroll
            for (int ni = 0; ni < DJ_NI; ni++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int r = wm0 + mi * 16 + g + (e >> 1) * 8, c = wn0 + ni * 8 + 2 * tq + (e & 1);
                    float sum = 0.0f;
                    for (int s = 0; s < DJ_SPLITK; s++)
                        sum += s == split ? acc[mi][ni][e] : dj_load_cg(partial(s, r, c));
                    acc[mi][ni][e] = sum;
                }
    }
#pragma unroll
    for (int mi = 0; mi < DJ_MI; mi++)
#pragma unroll
        for (int ni = 0; ni < DJ_NI; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int row = m0 + wm0 + mi * 16 + g + (e >> 1) * 8;
                const int col = n0 + wn0 + ni * 8 + 2 * tq + (e & 1);
                if (row < DJ_M && col < DJ_N)
                    dj_epilogue(batch, row, col, acc[mi][ni][e], args);
            }
}
