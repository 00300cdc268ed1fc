// Device helpers shared by every generated kernel: storage types, conversions to and from
// float, and one function per pointwise mode. Kernels include no CUDA headers (each costs
// compile time), so narrow types are plain bit containers converted with PTX or bit math.
// The meaning of every pointwise mode matches src/ref/pointwise.c, evaluated in float.
// Concatenated at the top of every generated kernel, so it is never included twice.

typedef unsigned long long dj_u64;
typedef long long dj_i64;

struct dj_half { unsigned short bits; };
struct dj_bf16 { unsigned short bits; };
struct dj_e4m3 { unsigned char bits; };
struct dj_e5m2 { unsigned char bits; };
struct dj_bool { unsigned char bits; };

template <typename A, typename B> struct dj_same_type {
    static constexpr bool value = false;
};
template <typename A> struct dj_same_type<A, A> {
    static constexpr bool value = true;
};

// ---- conversions to float ----------------------------------------------------------

__device__ __forceinline__ float dj_to_float(float v) { return v; }
__device__ __forceinline__ float dj_to_float(double v) { return (float)v; }
__device__ __forceinline__ float dj_to_float(signed char v) { return (float)v; }
__device__ __forceinline__ float dj_to_float(int v) { return (float)v; }
__device__ __forceinline__ float dj_to_float(dj_i64 v) { return (float)v; }
__device__ __forceinline__ float dj_to_float(dj_bool v) { return v.bits ? 1.0f : 0.0f; }

__device__ __forceinline__ float dj_to_float(dj_half v)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
    return f;
}

__device__ __forceinline__ float dj_to_float(dj_bf16 v) { return __uint_as_float((unsigned)v.bits << 16); }

// Small floats with `mbits` mantissa bits and exponent bias `bias`; `ieee` formats use an
// all-ones exponent for inf/NaN, E4M3 only for NaN (S.1111.111).
__device__ __forceinline__ float dj_small_to_float(unsigned bits, int ebits, int mbits, bool ieee)
{
    const int bias = (1 << (ebits - 1)) - 1;
    const unsigned sign = bits >> (ebits + mbits) & 1u;
    const unsigned e = bits >> mbits & ((1u << ebits) - 1);
    const unsigned m = bits & ((1u << mbits) - 1);
    const unsigned emax = (1u << ebits) - 1;
    float v;
    if (ieee && e == emax)
        v = m ? __int_as_float(0x7fc00000) : __int_as_float(0x7f800000);
    else if (!ieee && e == emax && m == (1u << mbits) - 1)
        v = __int_as_float(0x7fc00000);
    else if (e == 0)
        v = ldexpf((float)m, 1 - bias - mbits);
    else
        v = ldexpf(1.0f + ldexpf((float)m, -mbits), (int)e - bias);
    return sign ? -v : v;
}

__device__ __forceinline__ float dj_to_float(dj_e4m3 v) { return dj_small_to_float(v.bits, 4, 3, false); }
__device__ __forceinline__ float dj_to_float(dj_e5m2 v) { return dj_small_to_float(v.bits, 5, 2, true); }

// ---- conversions from float (round to nearest even) ---------------------------------

template <typename T> __device__ __forceinline__ T dj_from_float(float v);

template <> __device__ __forceinline__ float dj_from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ double dj_from_float<double>(float v) { return (double)v; }
template <> __device__ __forceinline__ dj_bool dj_from_float<dj_bool>(float v) { return dj_bool{(unsigned char)(v != 0.0f)}; }

template <> __device__ __forceinline__ signed char dj_from_float<signed char>(float v)
{
    if (v != v)
        return 0;
    return (signed char)fminf(fmaxf(rintf(v), -128.0f), 127.0f);
}

template <> __device__ __forceinline__ int dj_from_float<int>(float v)
{
    if (v != v)
        return 0;
    return (int)fminf(fmaxf(rintf(v), -2147483648.0f), 2147483520.0f);
}

template <> __device__ __forceinline__ dj_i64 dj_from_float<dj_i64>(float v)
{
    if (v != v)
        return 0;
    return (dj_i64)fminf(fmaxf(rintf(v), -9.2233720e18f), 9.2233715e18f);
}

template <> __device__ __forceinline__ dj_half dj_from_float<dj_half>(float v)
{
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return dj_half{h};
}

template <> __device__ __forceinline__ dj_bf16 dj_from_float<dj_bf16>(float v)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return dj_bf16{h};
}

// Rounds |v| to a small float; saturating formats clamp to their largest finite value.
__device__ __forceinline__ unsigned dj_float_to_small(float v, int ebits, int mbits, bool ieee)
{
    const int bias = (1 << (ebits - 1)) - 1;
    const unsigned sign = signbit(v) ? 1u << (ebits + mbits) : 0u;
    const unsigned inf_bits = ((1u << ebits) - 1) << mbits;
    const unsigned max_bits = ieee ? inf_bits - 1 : inf_bits | ((1u << mbits) - 2);
    const float max_finite = dj_small_to_float(max_bits, ebits, mbits, ieee);
    if (v != v)
        return sign | inf_bits | (ieee ? 1u << (mbits - 1) : (1u << mbits) - 1);
    float a = fabsf(v);
    if (a == 0.0f)
        return sign;
    int e;
    frexpf(a, &e);
    int E = e - 1;
    const int emin = 1 - bias;
    if (E < emin)
        return sign | (unsigned)rintf(ldexpf(a, mbits - emin));
    float q = rintf(ldexpf(a, mbits - E));
    if (q >= ldexpf(1.0f, mbits + 1)) {
        q = ldexpf(1.0f, mbits);
        E++;
    }
    if (isinf(a) || ldexpf(q, E - mbits) > max_finite)
        return sign | (ieee ? inf_bits : max_bits);
    return sign | (unsigned)(E + bias) << mbits | ((unsigned)q - (1u << mbits));
}

template <> __device__ __forceinline__ dj_e4m3 dj_from_float<dj_e4m3>(float v)
{
    return dj_e4m3{(unsigned char)dj_float_to_small(v, 4, 3, false)};
}

template <> __device__ __forceinline__ dj_e5m2 dj_from_float<dj_e5m2>(float v)
{
    return dj_e5m2{(unsigned char)dj_float_to_small(v, 5, 2, true)};
}

// ---- math in float or double (the fallback kernels sum in double for DOUBLE compute) ----

__device__ __forceinline__ float dj_exp(float x) { return expf(x); }
__device__ __forceinline__ double dj_exp(double x) { return exp(x); }
__device__ __forceinline__ float dj_log(float x) { return logf(x); }
__device__ __forceinline__ double dj_log(double x) { return log(x); }
__device__ __forceinline__ float dj_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double dj_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float dj_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double dj_abs(double x) { return fabs(x); }
// fmin / fmax: a NaN next to a number gives the number, as in the reference.
__device__ __forceinline__ float dj_min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double dj_min(double a, double b) { return fmin(a, b); }
__device__ __forceinline__ float dj_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double dj_max(double a, double b) { return fmax(a, b); }

// ---- pointwise modes (float math) -------------------------------------------------

__device__ __forceinline__ float dj_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// RELU with lower clip l, upper clip u and slope s below l: y = l + s*(x - l) at and below
// l (l itself when s is 0, -inf included), x above it, then u where y > u. NaN stays NaN
// (fminf(NaN, u) would give u). With the usual constants (s 0, u infinite) the comparisons
// fold to one select: the upper clip never holds, and the line's arithmetic goes.
__device__ __forceinline__ float dj_relu(float x, float l, float u, float s)
{
    const float y = x <= l ? (s == 0.0f ? l : l + s * (x - l)) : x;
    return y > u ? u : y;
}
__device__ __forceinline__ float dj_relu_bwd(float dy, float x, float l, float u, float s)
{
    return x > l ? (x < u ? dy : 0.0f) : dy * s;
}
__device__ __forceinline__ float dj_elu(float x, float a) { return x > 0.0f ? x : a * expm1f(x); }
__device__ __forceinline__ float dj_elu_bwd(float dy, float x, float a) { return x > 0.0f ? dy : dy * a * expf(x); }
__device__ __forceinline__ float dj_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float dj_gelu_bwd(float dy, float x)
{
    const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
    return dy * (0.5f * (1.0f + erff(x * 0.70710678118654752f)) + x * pdf);
}
__device__ __forceinline__ float dj_gelu_tanh(float x)
{
    const float k = 0.79788456080286536f; // sqrt(2/pi)
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float dj_gelu_tanh_bwd(float dy, float x)
{
    const float k = 0.79788456080286536f;
    const float t = tanhf(k * (x + 0.044715f * x * x * x));
    const float dt = (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
    return dy * (0.5f * (1.0f + t) + 0.5f * x * dt);
}
__device__ __forceinline__ float dj_softplus(float x, float b)
{
    const float z = b * x;
    return (z > 20.0f ? z : log1pf(expf(z))) / b;
}
__device__ __forceinline__ float dj_softplus_bwd(float dy, float x, float b) { return dy * dj_sigmoid(b * x); }
__device__ __forceinline__ float dj_swish(float x, float b) { return x * dj_sigmoid(b * x); }
__device__ __forceinline__ float dj_swish_bwd(float dy, float x, float b)
{
    const float s = dj_sigmoid(b * x);
    return dy * (s + b * x * s * (1.0f - s));
}
__device__ __forceinline__ float dj_tanh_bwd(float dy, float x)
{
    const float t = tanhf(x);
    return dy * (1.0f - t * t);
}
__device__ __forceinline__ float dj_sigmoid_bwd(float dy, float x)
{
    const float s = dj_sigmoid(x);
    return dy * s * (1.0f - s);
}
__device__ __forceinline__ float dj_truth(bool b) { return b ? 1.0f : 0.0f; }

// ---- paired stores -------------------------------------------------------------------

// Stores a at p and (when pair) b at p + STRIDE, converted to T; with STRIDE 1 and p aligned
// to the pair, as one 4- or 8-byte store.
template <typename T, dj_i64 STRIDE> __device__ __forceinline__ void dj_store_pair(T *p, float a, float b, bool pair)
{
    struct __align__(2 * sizeof(T)) Pair { T x, y; };
    if (STRIDE == 1 && pair && ((dj_u64)p & (2 * sizeof(T) - 1)) == 0) {
        *(Pair *)p = Pair{dj_from_float<T>(a), dj_from_float<T>(b)};
        return;
    }
    *p = dj_from_float<T>(a);
    if (pair)
        p[STRIDE] = dj_from_float<T>(b);
}

// Asks L2 for the line holding p (global memory) without waiting for it or taking a register.
__device__ __forceinline__ void dj_prefetch_l2(const void *p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// Loads from L2, past this SM's L1 (ld.global.cg): for partial results other blocks
// stored, read once an arrival counter says they are all there. Volatile, so that they are
// not moved above the counter's check; they still issue back to back.
__device__ __forceinline__ float dj_load_cg(const float *p)
{
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(v) : "l"(p));
    return v;
}

__device__ __forceinline__ float4 dj_load_cg4(const float4 *p)
{
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}

// Whether this block is the last of `count` blocks to count themselves in at `counter`:
// each thread's earlier stores are made visible to the GPU first, and the last block's
// later loads see every other block's. Every thread of the block calls it.
__device__ __forceinline__ bool dj_block_arrives_last(unsigned *counter, unsigned count)
{
    __shared__ unsigned last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(counter, 1u) == count - 1;
    __syncthreads();
    if (!last)
        return false;
    __threadfence();
    return true;
}

// ---- shared memory barriers and clusters (sm_90) ------------------------------------

__device__ __forceinline__ unsigned dj_smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void dj_mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// The address in the shared window of the cluster of what lies at shared address `local`
// of this CTA in the shared memory of the cluster's CTA `rank`.
__device__ __forceinline__ unsigned dj_cluster_addr(unsigned local, unsigned rank)
{
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
    return remote;
}

// An arrival on the barrier at the same offset as `bar` in the shared memory of the
// cluster's CTA `rank`, after this thread's earlier stores (to any CTA of the cluster).
__device__ __forceinline__ void dj_mbar_arrive_cluster(unsigned bar, unsigned rank)
{
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(dj_cluster_addr(bar, rank))
                 : "memory");
}

// The same arrival, ordering only this thread's earlier accesses within its own CTA: for a
// release after nothing another CTA must see, such as reads already complete (a stage of
// shared memory that the wgmma reading it has finished with). The
// cluster-wide release costs a fence of the whole GPU's memory (MEMBAR.ALL.GPU): each
// consumer warp's release of every stage took about half of the clustered GEMM's time.
__device__ __forceinline__ void dj_mbar_arrive_remote(unsigned bar, unsigned rank)
{
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(dj_cluster_addr(bar, rank)) : "memory");
}

// Waits until the phase of parity `parity` of this CTA's barrier `bar` has completed, and
// sees what the arriving threads of the cluster stored before they arrived.
__device__ __forceinline__ void dj_mbar_wait_cluster(unsigned bar, unsigned parity)
{
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

// Waits for every thread of every CTA of the cluster: what each wrote to shared memory,
// its own or another CTA's, before the barrier is visible to all of them after it.
__device__ __forceinline__ void dj_cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

__device__ __forceinline__ unsigned dj_cluster_rank()
{
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    return rank;
}

// Stores v at shared address `local` (of this CTA) in the shared memory of the cluster's
// CTA `rank`.
__device__ __forceinline__ void dj_store_cluster(unsigned local, unsigned rank, unsigned v)
{
    asm volatile("st.shared::cluster.b32 [%0], %1;\n" ::"r"(dj_cluster_addr(local, rank)), "r"(v) : "memory");
}

// ---- launch arguments --------------------------------------------------------------

// Every generated kernel takes one DjArgs by value: the device addresses of the tensors its
// group touches (inputs first, then outputs, in the order the code generator lists them) and
// the values of pass-by-value scalars not fixed in the graph.
#define DJ_MAX_TENSORS 24
#define DJ_MAX_SCALARS 8
struct DjArgs {
    void *ptr[DJ_MAX_TENSORS];
    float scalar[DJ_MAX_SCALARS];
};

// Programmatic dependent launch (sm_90 and later). There, execute launches every kernel
// with programmatic stream serialization, so that its blocks can be scheduled, and wait,
// while the kernel before it in the stream finishes, rather than after it has: between
// back-to-back 65 MB copies on the H200 that took 34.0 us a call to 32.4. Every kernel
// calls dj_grid_dependency (or dj_grid_wait) first, before it touches global memory: the
// wait returns once the kernels it depends on have completed and their writes are visible
// (at once when it was launched without the attribute); the trigger then lets the next
// kernel be scheduled once every block of this one has started: its blocks take SM space
// as it frees up (or lies free beside a kernel of one wave) and wait there.
__device__ __forceinline__ void dj_grid_wait()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// The wait, then the trigger. Kernels whose blocks are few and stream from memory call
// dj_grid_wait alone and let the trigger come as their blocks exit: see dj_gemm_sm90.
__device__ __forceinline__ void dj_grid_dependency()
{
    dj_grid_wait();
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// N elements of T moved as one aligned access (16 bytes when N * sizeof(T) == 16).
template <typename T, int N> struct __align__(sizeof(T) * N) dj_vec {
    T v[N];
};

// Stores q at p (global memory, aligned to q) as one access. A plain assignment lets NVVM
// split the struct into element stores: on a 1000-wide fp16 softmax it stored one of two
// 16-byte vectors of halves as seven stores of 2 and 4 bytes, each a partial-sector write
// that L2 had to merge, and the kernel ran at half the bandwidth. PTX vector stores keep
// each access whole. The asm has no memory clobber, so that the compiler may still move
// loads of other addresses across it: the kernels never read back what they store.
template <typename T, int N> __device__ __forceinline__ void dj_vec_store(T *p, const dj_vec<T, N> &q)
{
    constexpr int BYTES = (int)sizeof(q);
    if constexpr (BYTES == 16 || BYTES == 8 || BYTES == 4) {
        union {
            dj_vec<T, N> v;
            unsigned w[BYTES / 4];
        } u = {q};
        const unsigned *w = u.w;
        if constexpr (BYTES == 16)
            asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]));
        else if constexpr (BYTES == 8)
            asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w[0]), "r"(w[1]));
        else
            asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(w[0]));
    } else {
        *(dj_vec<T, N> *)p = q;
    }
}
