// Tensor-core GEMM for sm_80 and later: C[batch] = A[batch] * B[batch] with mma.sync,
// ldmatrix and a multi-stage cp.async pipeline, then the group's fused epilogue applied in
// registers. One CTA computes a DJ_BM x DJ_BN tile of C for one batch entry and one K split;
// its warps each own a DJ_WM x DJ_WN sub-tile.
//
// The generator places before this file:
//   dj_ta, dj_tb              types of A's and B's tiles in shared memory (both dj_half, both
//                             dj_bf16 or both float)
//   dj_ma, dj_mb              types of A and B themselves: those of the tiles, or for a
//                             product of two types, one of them 16-bit (widened as its tiles
//                             are filled; see dj_widen)
//   DJ_KIND                   0 fp16, 1 bf16, 2 tf32, 3 fp32 as three tf32 products
//   DJ_BM DJ_BN DJ_BK DJ_WM DJ_WN DJ_STAGES DJ_SPLITK DJ_GROUP_M   the knobs
//   DJ_MIN_BLOCKS             CTAs per SM the register allocation must leave room for
//   DJ_M DJ_N DJ_K DJ_BATCH   the problem
//   DJ_A_KMAJOR DJ_A_SM DJ_A_SK DJ_A_VEC DJ_A_SLOT dj_a_batch(b)   A over [M, K]: whether K
//       is its contiguous axis, its strides along M and K, whether 16-byte copies are legal
//       for every aligned base pointer, its argument slot, and the offset of batch entry b
//   DJ_B_KMAJOR DJ_B_SN DJ_B_SK DJ_B_VEC DJ_B_SLOT dj_b_batch(b)   the same for B over [N, K]
//   DJ_A_PROLOGUE DJ_B_PROLOGUE and dj_a_prologue, dj_b_prologue   operands computed by a
//       fused pointwise prologue (see DjPrologueCopy); such an operand has no slot, and its
//       layout constants only choose how its tile is stored
//   DJ_SCRATCH_SLOT           the workspace slot of split-K partial sums (when DJ_SPLITK > 1)
//   dj_epilogue(batch, row, col, acc0, acc1, pair, args)   the fused epilogue of columns col
//       and (when pair) col + 1; stores every output

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
// Every K tile a CTA copies lies wholly inside K, so the copies need no K-edge checks.
constexpr bool DJ_K_WHOLE = DJ_K % DJ_BK == 0;

static_assert(DJ_BM % DJ_WM == 0 && DJ_BN % DJ_WN == 0, "warp tiles must divide the CTA tile");

// The epilogue stages 16 rows of a warp's tile at a time in shared memory, as floats in rows
// of DJ_EPI_PITCH (DJ_WN is a multiple of 16, so the pitch is 8 or 24 banks past a multiple
// of 32: the float2 stores of a half-warp's 4 rows fall in distinct banks). gemm.c's
// smem_bytes allows for it.
constexpr int DJ_EPI_PITCH = DJ_WN + 8;
constexpr int DJ_EPI_FLOATS_PER_WARP = 16 * DJ_EPI_PITCH;
static_assert(DJ_WM % 16 == 0 && DJ_WN % 16 == 0 && DJ_BK % DJ_KSTEP == 0, "tile shape");

// ---- PTX wrappers -----------------------------------------------------------------

// The compiler's own conversion (not inline PTX) so that it folds into the address
// arithmetic around it instead of costing instructions at every ldmatrix and cp.async.
__device__ __forceinline__ unsigned dj_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

// Copies `bytes` (0..16, a multiple of 2) bytes from global to shared memory and zero-fills
// the rest of the 16-byte chunk, so tiles that run past the edge of a matrix read zeros. A
// chunk cut by the edge is copied with 2-byte loads instead: memcheck counts a 16-byte
// cp.async as a 16-byte read whatever its source size, and reported those chunks at the end
// of an allocation as out-of-bounds reads (PTX does not promise the hardware reads less).
// Such chunks only occur at a matrix's edge, so the common path stays one cp.async.
__device__ __forceinline__ void dj_cp_async16(void *dst, const void *src, int bytes)
{
    if ((bytes & 15) == 0) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dj_smem_addr(dst)), "l"(src), "r"(bytes));
        return;
    }
    unsigned word[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const unsigned short *half = (const unsigned short *)src + 2 * i;
        word[i] = (4 * i < bytes ? half[0] : 0u) | (4 * i + 2 < bytes ? (unsigned)half[1] << 16 : 0u);
    }
    *(uint4 *)dst = make_uint4(word[0], word[1], word[2], word[3]);
}

__device__ __forceinline__ void dj_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N> __device__ __forceinline__ void dj_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// ldmatrix at a 32-bit shared address: the main loop keeps each lane's addresses in
// registers and reaches every fragment by a constant offset from them.
template <bool TRANS> __device__ __forceinline__ void dj_ldsm4(unsigned r[4], unsigned addr)
{
    if constexpr (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
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

__device__ __forceinline__ float dj_lds32(unsigned addr)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
    return v;
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
    static constexpr unsigned STAGE_BYTES = ELEMS * sizeof(T);
    static __host__ __device__ constexpr int at(int mn, int k) { return KMAJOR ? mn * PITCH + k : k * PITCH + mn; }
    // Byte offset of (mn, k); at() is linear, so a lane's offset plus a fragment's
    // compile-time offset is the fragment's address for that lane.
    static __host__ __device__ constexpr unsigned off(int mn, int k) { return (unsigned)at(mn, k) * sizeof(T); }
};

// Fills one stage of an operand's tile element by element: value(mn, k), of type T, for the
// elements inside the matrix, zero outside it. A rolled loop: unrolled, it doubles the
// kernel's compile time.
template <typename T, bool KMAJOR, int MNT, dj_i64 MN, typename F>
__device__ __forceinline__ void dj_fill_elements(T *stage, int mn0, dj_i64 k0, const F &value)
{
    typedef DjTile<T, KMAJOR, MNT> Tile;
    constexpr int INNER = KMAJOR ? DJ_BK : MNT, OUTER = KMAJOR ? MNT : DJ_BK;
#pragma unroll 1
    for (int e = (int)threadIdx.x; e < OUTER * INNER; e += DJ_THREADS) {
        const int o = e / INNER, in = e % INNER;
        const int mn_l = KMAJOR ? o : in, k_l = KMAJOR ? in : o;
        const dj_i64 mn = mn0 + mn_l, k = k0 + k_l;
        stage[Tile::at(mn_l, k_l)] = mn < MN && k < DJ_K ? value(mn, k) : dj_from_float<T>(0.0f);
    }
}

// v, a value of the operand's own type M, in its tile's type T: the same, or float.
template <typename M, typename T> __device__ __forceinline__ T dj_widen(M v)
{
    if constexpr (dj_same_type<M, T>::value)
        return v;
    else
        return dj_from_float<T>(dj_to_float(v));
}

// Copies K tiles of one operand (of type M in memory; extent MN along M or N, strides SMN and
// SK) into shared memory as T, zeros outside the matrix. Each thread's place in the tile, its source pointer and
// which of its rows lie inside the matrix are worked out once; a tile then costs one
// pointer step and one cp.async per 16-byte chunk (the K edge is checked only on a tile
// that crosses it). Without VEC (which an operand widened from M to T never has), or with a
// base pointer that is not 16-byte aligned, the copy goes element by element instead.
template <typename M, typename T, bool KMAJOR, int MNT, dj_i64 MN, dj_i64 SMN, dj_i64 SK, bool VEC> struct DjCopy {
    typedef DjTile<T, KMAJOR, MNT> Tile;
    static constexpr int VE = 16 / (int)sizeof(T);
    // Every tile along MN lies wholly inside the matrix: no row or chunk is cut by its edge.
    static constexpr bool MN_WHOLE = MN % MNT == 0;
    static constexpr int INNER = KMAJOR ? DJ_BK : MNT; // along the contiguous axis
    static constexpr int OUTER = KMAJOR ? MNT : DJ_BK;
    static constexpr int PER_ROW = INNER / VE;          // chunks in one stored row
    static constexpr int ROWS_PER_PASS = DJ_THREADS / PER_ROW;
    static constexpr int PASSES = OUTER / ROWS_PER_PASS;
    static constexpr dj_i64 OUTER_STRIDE = KMAJOR ? SMN : SK;
    static constexpr dj_i64 TILE_STEP = DJ_BK * SK; // elements from one K tile to the next
    static_assert(DJ_THREADS % PER_ROW == 0 && OUTER % ROWS_PER_PASS == 0, "tile copy shape");
    static_assert(!VEC || dj_same_type<M, T>::value, "a widened operand is copied element by element");

    const M *g, *src; // the operand; this thread's first chunk in the CTA's first K tile
    dj_i64 k_first;   // that tile's first K index
    int mn0, outer0, inner0, dst;
    unsigned rows_in; // K-major: bit p set when pass p's row lies inside the matrix
    int mn_bytes;     // MN-major: bytes of this thread's chunk inside the matrix (0..16)
    bool vec;

    __device__ __forceinline__ DjCopy(const M *g_, int mn0_, dj_i64 k_first_, bool aligned)
        : g(g_), k_first(k_first_), mn0(mn0_), vec(VEC && aligned)
    {
        outer0 = (int)threadIdx.x / PER_ROW;
        inner0 = (int)threadIdx.x % PER_ROW * VE;
        const int mn_l = KMAJOR ? outer0 : inner0, k_l = KMAJOR ? inner0 : outer0;
        src = g + (dj_i64)(mn0 + mn_l) * SMN + (k_first + k_l) * SK;
        dst = Tile::at(mn_l, k_l);
        rows_in = 0;
        if constexpr (KMAJOR) {
#pragma unroll
            for (int p = 0; p < PASSES; p++)
                rows_in |= (unsigned)(mn0 + outer0 + p * ROWS_PER_PASS < MN) << p;
            mn_bytes = 0;
        } else {
            const dj_i64 left = MN - (mn0 + inner0);
            mn_bytes = MN_WHOLE || left >= VE ? 16 : left <= 0 ? 0 : (int)left * (int)sizeof(T);
        }
    }

    // Passes P0 to P1 - 1 of K tile t (counted from k_first) into `stage`; the slow path
    // copies the whole tile, with the range that starts at pass 0.
    template <int P0, int P1> __device__ __forceinline__ void copy(T *stage, int t) const
    {
        if constexpr (P0 < P1) {
            const dj_i64 k0 = k_first + (dj_i64)t * DJ_BK;
            if (!vec) {
                if (P0 == 0)
                    copy_elements(stage, k0);
                return;
            }
            const M *base = src + (dj_i64)t * TILE_STEP;
            const bool whole = DJ_K_WHOLE || k0 + DJ_BK <= DJ_K;
#pragma unroll
            for (int p = P0; p < P1; p++) {
                int bytes;
                if constexpr (KMAJOR) {
                    const dj_i64 left = DJ_K - (k0 + inner0);
                    bytes = !(MN_WHOLE || rows_in >> p & 1) ? 0
                            : whole             ? 16
                            : left <= 0         ? 0
                            : left >= VE        ? 16
                                                : (int)left * (int)sizeof(T);
                } else {
                    bytes = whole || k0 + outer0 + p * ROWS_PER_PASS < DJ_K ? mn_bytes : 0;
                }
                dj_cp_async16(stage + dst + p * ROWS_PER_PASS * Tile::PITCH,
                              bytes ? base + p * ROWS_PER_PASS * OUTER_STRIDE : g, bytes);
            }
        }
    }

    // The slow path stays a rolled loop (see dj_fill_elements) and out of line: inlined at
    // every copy, it doubles the kernel's compile time.
    __device__ __noinline__ void copy_elements(T *stage, dj_i64 k0) const
    {
        dj_fill_elements<T, KMAJOR, MNT, MN>(stage, mn0, k0,
                                             [&](dj_i64 mn, dj_i64 k) { return dj_widen<M, T>(g[mn * SMN + k * SK]); });
    }
};

// ---- operands computed by a prologue ------------------------------------------------
//
// The generator writes DJ_A_PROLOGUE and DJ_B_PROLOGUE, and for an operand that has one,
// dj_a_prologue(batch, m, k, args) or dj_b_prologue(batch, k, n, args): the operand's
// element evaluated in fp32 by the group's fused pointwise prologue, from the prologue's
// own input tensors. The declarations let the code below name both; the function of an
// operand without a prologue is named only in template code that is never instantiated.
__device__ float dj_a_prologue(dj_i64 batch, dj_i64 row, dj_i64 col, const DjArgs &args);
__device__ float dj_b_prologue(dj_i64 batch, dj_i64 row, dj_i64 col, const DjArgs &args);

// Copies K tiles of operand SLOT (0: A, 1: B) computed by its prologue, element by element
// (registers, compute, shared memory): each element is evaluated in fp32 and rounded to M,
// the operand's type, as the unfused graph would store it, then held as T, its tile's. Elements outside the matrix are
// stored as zero, not as the prologue's value there: a prologue such as x + 1 is not zero
// at zero, and the K padding must add nothing to the products.
template <typename M, typename T, bool KMAJOR, int MNT, dj_i64 MN, int SLOT> struct DjPrologueCopy {
    const DjArgs *args;
    dj_i64 batch, k_first;
    int mn0;

    // The whole tile, as one pass (see DjPasses), with the range that holds it.
    template <int P0, int P1> __device__ __forceinline__ void copy(T *stage, int t) const
    {
        if constexpr (P0 == 0 && P1 > 0)
            copy_elements(stage, k_first + (dj_i64)t * DJ_BK);
    }

    __device__ __noinline__ void copy_elements(T *stage, dj_i64 k0) const
    {
        dj_fill_elements<T, KMAJOR, MNT, MN>(stage, mn0, k0, [&](dj_i64 mn, dj_i64 k) {
            if constexpr (SLOT == 0)
                return dj_widen<M, T>(dj_from_float<M>(dj_a_prologue(batch, mn, k, *args)));
            else
                return dj_widen<M, T>(dj_from_float<M>(dj_b_prologue(batch, k, mn, *args)));
        });
    }
};

// The copies of A and B from memory (named here only: instantiated where an operand has no
// prologue).
typedef DjCopy<dj_ma, dj_ta, DJ_A_KMAJOR, DJ_BM, DJ_M, DJ_A_SM, DJ_A_SK, DJ_A_VEC> DjCopyA;
typedef DjCopy<dj_mb, dj_tb, DJ_B_KMAJOR, DJ_BN, DJ_N, DJ_B_SN, DJ_B_SK, DJ_B_VEC> DjCopyB;

// The tile copy of operand SLOT for batch entry `batch`, from K index k_first on: through
// its prologue, or from memory.
template <int SLOT> __device__ __forceinline__ auto dj_operand_copy(const DjArgs &args, dj_i64 batch, int mn0,
                                                                   dj_i64 k_first)
{
    if constexpr (SLOT == 0 && DJ_A_PROLOGUE) {
        return DjPrologueCopy<dj_ma, dj_ta, DJ_A_KMAJOR, DJ_BM, DJ_M, 0>{&args, batch, k_first, mn0};
    } else if constexpr (SLOT == 0) {
        const dj_ma *const g = (const dj_ma *)args.ptr[DJ_A_SLOT] + dj_a_batch(batch);
        return DjCopyA(g, mn0, k_first, ((dj_u64)g & 15) == 0);
    } else if constexpr (DJ_B_PROLOGUE) {
        return DjPrologueCopy<dj_mb, dj_tb, DJ_B_KMAJOR, DJ_BN, DJ_N, 1>{&args, batch, k_first, mn0};
    } else {
        const dj_mb *const g = (const dj_mb *)args.ptr[DJ_B_SLOT] + dj_b_batch(batch);
        return DjCopyB(g, mn0, k_first, ((dj_u64)g & 15) == 0);
    }
}

// ---- fragments ----------------------------------------------------------------------

// Where in a stage one lane reads its fragments: `lane(l)` is the byte offset of lane l's
// row for the fragment at (0, 0), so the fragment at (mn, k) is at lane(l) + Tile::off(mn, k).
// 16-bit A: ldmatrix of the four 8x8 quarters of a 16x16 fragment in the order mma expects
// (rows 0-7/8-15 by columns 0-7, then 8-15). 16-bit B: two neighbouring 8-column slices, each
// 16 deep. fp32 (tf32 m16n8k8): element (g, t) of the lane, with g = l / 4 and t = l % 4.
template <typename T, bool KMAJOR, int MNT, bool IS_B> struct DjFragLane {
    typedef DjTile<T, KMAJOR, MNT> Tile;
    static __device__ __forceinline__ unsigned lane(int l)
    {
        const int q = l >> 3, r = l & 7;
        if constexpr (sizeof(T) == 4)
            return Tile::off(l >> 2, l & 3);
        else if constexpr (!IS_B)
            return KMAJOR ? Tile::off(l & 15, (l >> 4) * 8) : Tile::off((q & 1) * 8, (q >> 1) * 8 + r);
        else
            return KMAJOR ? Tile::off((q >> 1) * 8 + r, (q & 1) * 8) : Tile::off((q >> 1) * 8, (q & 1) * 8 + r);
    }
};

// fp32 operands: the m16n8k8 tf32 fragments read element by element, as a[i] = (row, col)
// of {(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)} and b[i] = {(g, t), (g, t + 4)}. With
// DJ_KIND 3 each value is split into a tf32 `big` part and a tf32 `small` remainder.
template <int N> __device__ __forceinline__ void dj_split_tf32(unsigned big[N], unsigned small[N], const float v[N])
{
#pragma unroll
    for (int i = 0; i < N; i++) {
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

// The fragments of one mma k-step for the whole warp tile; with DJ_KIND 3 also the small
// halves of the fp32 split.
struct DjFrags {
    unsigned a[DJ_MI][4], b[DJ_NI][2];
    unsigned as[DJ_KIND == 3 ? DJ_MI : 1][4], bs[DJ_KIND == 3 ? DJ_NI : 1][2];
};

typedef DjFragLane<dj_ta, DJ_A_KMAJOR, DJ_BM, false> DjLaneA;
typedef DjFragLane<dj_tb, DJ_B_KMAJOR, DJ_BN, true> DjLaneB;

// The fragments of k-step kk; ra and rb are this lane's read addresses (DjFragLane) in the
// stage being read, with the warp's own rows and columns added.
__device__ __forceinline__ void dj_load_frags(DjFrags &f, unsigned ra, unsigned rb, int kk)
{
    if constexpr (!DJ_TF32) {
#pragma unroll
        for (int mi = 0; mi < DJ_MI; mi++)
            dj_ldsm4<!DJ_A_KMAJOR>(f.a[mi], ra + DjTileA::off(mi * 16, kk));
#pragma unroll
        for (int ni = 0; ni < DJ_NI; ni += 2) {
            unsigned q[4];
            dj_ldsm4<!DJ_B_KMAJOR>(q, rb + DjTileB::off(ni * 8, kk));
            f.b[ni][0] = q[0];
            f.b[ni][1] = q[1];
            f.b[ni + 1][0] = q[2];
            f.b[ni + 1][1] = q[3];
        }
    } else {
#pragma unroll
        for (int mi = 0; mi < DJ_MI; mi++) {
            const unsigned at = ra + DjTileA::off(mi * 16, kk);
            const float v[4] = {dj_lds32(at), dj_lds32(at + DjTileA::off(8, 0)), dj_lds32(at + DjTileA::off(0, 4)),
                                dj_lds32(at + DjTileA::off(8, 4))};
            dj_split_tf32<4>(f.a[mi], f.as[DJ_KIND == 3 ? mi : 0], v);
        }
#pragma unroll
        for (int ni = 0; ni < DJ_NI; ni++) {
            const unsigned at = rb + DjTileB::off(ni * 8, kk);
            const float v[2] = {dj_lds32(at), dj_lds32(at + DjTileB::off(0, 4))};
            dj_split_tf32<2>(f.b[ni], f.bs[DJ_KIND == 3 ? ni : 0], v);
        }
    }
}

__device__ __forceinline__ void dj_mma_frags(float (&acc)[DJ_MI][DJ_NI][4], const DjFrags &f)
{
#pragma unroll
    for (int mi = 0; mi < DJ_MI; mi++)
#pragma unroll
        for (int ni = 0; ni < DJ_NI; ni++) {
            // The small products first, so they are not lost against the big one.
            if constexpr (DJ_KIND == 3) {
                dj_mma(acc[mi][ni], f.as[mi], f.b[ni]);
                dj_mma(acc[mi][ni], f.a[mi], f.bs[ni]);
            }
            dj_mma(acc[mi][ni], f.a[mi], f.b[ni]);
        }
}

// The passes of an operand's tile copy: DjCopy's, or one for a prologue's element copy.
template <bool PROLOGUE, typename C> struct DjPasses {
    static constexpr int value = C::PASSES;
};
template <typename C> struct DjPasses<true, C> {
    static constexpr int value = 1;
};
constexpr int DJ_PASSES_A = DjPasses<DJ_A_PROLOGUE, DjCopyA>::value;
constexpr int DJ_PASSES_B = DjPasses<DJ_B_PROLOGUE, DjCopyB>::value;

// The main loop issues a K tile's copies in DJ_COPY_PARTS parts, one per k-step but the last:
// the passes of A and then of B, cut evenly. Issued all at once (12 cp.async a thread on
// 128x256x64 tiles), the warp's next tensor-core work waited behind them. On the H200,
// 4096^3 bf16 on those tiles took 353-364 us spread over three k-steps against 359-380 in
// the same runs; A's passes at one k-step and B's at the next, 342-364.
constexpr int DJ_COPY_PARTS = DJ_BK / DJ_KSTEP - 1;
static_assert(DJ_COPY_PARTS >= 1 && DJ_COPY_PARTS <= 3, "the main loop names parts 0 to 2");

template <int PART, typename CA, typename CB>
__device__ __forceinline__ void dj_copy_part(const CA &copy_a, const CB &copy_b, dj_ta *stage_a, dj_tb *stage_b, int t)
{
    constexpr int ALL = DJ_PASSES_A + DJ_PASSES_B;
    static_assert(PART < DJ_COPY_PARTS, "a part of the tile's copies");
    constexpr int LO = PART * ALL / DJ_COPY_PARTS, HI = (PART + 1) * ALL / DJ_COPY_PARTS;
    copy_a.template copy<LO, (HI < DJ_PASSES_A ? HI : DJ_PASSES_A)>(stage_a, t);
    copy_b.template copy<(LO > DJ_PASSES_A ? LO - DJ_PASSES_A : 0), (HI > DJ_PASSES_A ? HI - DJ_PASSES_A : 0)>(stage_b, t);
}

extern "C" __global__ void __launch_bounds__(DJ_THREADS, DJ_MIN_BLOCKS) dj_gemm(const DjArgs args)
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

    const int kt0 = split * DJ_KTILES_PER_SPLIT;
    const int kt_count = (DJ_KTILES - kt0 < DJ_KTILES_PER_SPLIT ? DJ_KTILES - kt0 : DJ_KTILES_PER_SPLIT);

    const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31;
    const int wm0 = warp % DJ_WARPS_M * DJ_WM, wn0 = warp / DJ_WARPS_M * DJ_WN;

    float acc[DJ_MI][DJ_NI][4];
    dj_zero(acc);

    // Stage s holds K tile kt0 + s (mod DJ_STAGES). Every step commits one copy group, empty
    // or not, so that waiting for all but the newest DJ_STAGES - 2 groups always means the
    // next tile to be read has landed.
    const auto copy_a = dj_operand_copy<0>(args, batch, m0, (dj_i64)kt0 * DJ_BK);
    const auto copy_b = dj_operand_copy<1>(args, batch, n0, (dj_i64)kt0 * DJ_BK);
    auto load = [&](int t) {
        const int stage = t % DJ_STAGES;
        copy_a.template copy<0, DJ_PASSES_A>(sa + stage * DjTileA::ELEMS, t);
        copy_b.template copy<0, DJ_PASSES_B>(sb + stage * DjTileB::ELEMS, t);
    };
    // A rolled loop: unrolled, its copies of the tile copy cost a quarter of the kernel's
    // compile time (NVVM and ptxas) and save nothing measurable once per tile.
#pragma unroll 1
    for (int s = 0; s < DJ_STAGES - 1; s++) {
        if (s < kt_count)
            load(s);
        dj_cp_commit();
    }
    dj_cp_wait<DJ_STAGES - 2>();
    __syncthreads();

    // Software pipeline: the fragments of the next k-step (at a tile's last step, of the next
    // tile's first) are read from shared memory while the tensor cores work on this one's.
    // ra and rb are this lane's read addresses in the stage being read; they move on by a
    // stage's bytes per tile, back to stage 0 after the last.
    constexpr int KSTEPS = DJ_BK / DJ_KSTEP;
    const unsigned ra0 = dj_smem_addr(sa) + DjLaneA::lane(lane) + DjTileA::off(wm0, 0);
    const unsigned rb0 = dj_smem_addr(sb) + DjLaneB::lane(lane) + DjTileB::off(wn0, 0);
    unsigned ra = ra0, rb = rb0;
    DjFrags frag[2];
    int read_stage = 0;
    if (kt_count > 0)
        dj_load_frags(frag[0], ra, rb, 0);
    float part[DJ_MI][DJ_NI][4]; // used by DJ_KIND 3 only
    if constexpr (DJ_KIND == 3)
        dj_zero(part);
    for (int t = 0; t < kt_count; t++) {
#pragma unroll
        for (int kk = 0; kk < KSTEPS; kk++) {
            if (kk == KSTEPS - 1) {
                // The next tile must have landed, and every warp be done with the stage the
                // copy issued below (at kk == 0 of the next step) overwrites.
                dj_cp_wait<DJ_STAGES - 2>();
                __syncthreads();
                const bool wrap = ++read_stage == DJ_STAGES;
                read_stage = wrap ? 0 : read_stage;
                ra = wrap ? ra0 : ra + DjTileA::STAGE_BYTES;
                rb = wrap ? rb0 : rb + DjTileB::STAGE_BYTES;
            }
            if (kk < KSTEPS - 1 || t + 1 < kt_count)
                dj_load_frags(frag[(kk + 1) % 2], ra, rb, (kk + 1) % KSTEPS * DJ_KSTEP);
            // K tile t + DJ_STAGES - 1 refills the stage read in step t - 1, which every warp
            // finished before the barrier at the end of that step. Its copies are spread over
            // the k-steps before the last (whose wait must find this step's group committed).
            if (kk < DJ_COPY_PARTS && t + DJ_STAGES - 1 < kt_count) {
                const int next = t + DJ_STAGES - 1, stage = next % DJ_STAGES;
                dj_ta *const stage_a = sa + stage * DjTileA::ELEMS;
                dj_tb *const stage_b = sb + stage * DjTileB::ELEMS;
                // kk is a constant here once the loop is unrolled; the clamps only keep the
                // branches of parts a shorter tile lacks well-formed.
                if (kk == 0)
                    dj_copy_part<0>(copy_a, copy_b, stage_a, stage_b, next);
                else if (kk == 1)
                    dj_copy_part<(DJ_COPY_PARTS > 1 ? 1 : 0)>(copy_a, copy_b, stage_a, stage_b, next);
                else
                    dj_copy_part<(DJ_COPY_PARTS > 2 ? 2 : 0)>(copy_a, copy_b, stage_a, stage_b, next);
            }
            if (kk == DJ_COPY_PARTS - 1)
                dj_cp_commit();
            if constexpr (DJ_KIND == 3)
                dj_mma_frags(part, frag[kk % 2]);
            else
                dj_mma_frags(acc, frag[kk % 2]);
        }
        if constexpr (DJ_KIND == 3) {
            // The tensor cores' fp32 accumulation rounds less carefully than an FADD; for fp32
            // accuracy over long K each tile's products are summed apart and then added.
#pragma unroll
            for (int mi = 0; mi < DJ_MI; mi++)
#pragma unroll
                for (int ni = 0; ni < DJ_NI; ni++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        acc[mi][ni][e] += part[mi][ni][e];
                        part[mi][ni][e] = 0.0f;
                    }
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
    // The epilogue goes through shared memory, whose stages every warp has finished reading
    // once all have passed this barrier: each warp stages the 16 rows of its tile that one mi
    // covers, then walks them row by row, its lanes on neighbouring column pairs, so that a
    // warp's stores are whole lines (not 8 rows of 16 bytes) and dj_epilogue is inlined once,
    // in a rolled loop, rather than called at each of a thread's DJ_MI * DJ_NI * 2 pairs. On
    // the H200 a tenth of 4096^3 bf16's warp stall samples fell after the main loop, in those
    // calls, their stack traffic and the scattered stores; staged, it ran 1-2% faster, and
    // the kernel (1000 SASS instructions instead of 1816) compiles in 0.8 of the time.
    __syncthreads();
    float *const staged = (float *)dj_smem + warp * DJ_EPI_FLOATS_PER_WARP;
    constexpr int PAIRS_PER_ROW = DJ_WN / 2;
#pragma unroll 1
    for (int mi = 0; mi < DJ_MI; mi++) {
        // acc's index must be a constant, so each mi's copy is a branch of its own.
#pragma unroll
        for (int m = 0; m < DJ_MI; m++)
            if (m == mi)
#pragma unroll
                for (int ni = 0; ni < DJ_NI; ni++)
#pragma unroll
                    for (int h = 0; h < 2; h++)
                        *(float2 *)&staged[(g + 8 * h) * DJ_EPI_PITCH + ni * 8 + 2 * tq] =
                            make_float2(acc[m][ni][2 * h], acc[m][ni][2 * h + 1]);
        __syncwarp();
#pragma unroll 1
        for (int pair = lane; pair < 16 * PAIRS_PER_ROW; pair += 32) {
            const int r = pair / PAIRS_PER_ROW, c = pair % PAIRS_PER_ROW * 2;
            const float2 v = *(const float2 *)&staged[r * DJ_EPI_PITCH + c];
            const int row = m0 + wm0 + mi * 16 + r, col = n0 + wn0 + c;
            if (row < DJ_M && col < DJ_N)
                dj_epilogue(batch, row, col, v.x, v.y, col + 1 < DJ_N, args);
        }
        __syncwarp();
    }
}
