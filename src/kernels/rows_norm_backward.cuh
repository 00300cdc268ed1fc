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
// blocks come first so that they start with the row blocks rather than after them. MEAN
// reads 0 for RMS norm.

template <int V> __device__ __forceinline__ void dj_row_op(const DjRow<V> &rw, const DjArgs &args)
{
    using R = DjRow<V>;
    DjCache<DjKept_DY, V> dy_cache;
    DjCache<DjKept_X, V> x_cache;
    const auto dy_in = [&](dj_i64 row, int col, float (&v)[V], bool first) { dj_in_DY<V>(row, col, v, args, first); };
    const auto x_in = [&](dj_i64 row, int col, float (&v)[V], bool first) { dj_in_X<V>(row, col, v, args, first); };
    const float mean = rw.valid ? dj_rin_MEAN(rw.row, args) : 0.0f;
    const float inv_var = rw.valid ? dj_rin_INV_VARIANCE(rw.row, args) : 0.0f;
    dj_pair sums = {0.0f, 0.0f}; // g and g * xhat
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float dy[V], x[V], scale[V];
        dj_chunk(rw, dy_cache, k, true, 0.0f, dy_in, dy);
        dj_chunk(rw, x_cache, k, true, 0.0f, x_in, x);
        if (rw.has(k)) {
            dj_par_SCALE<V>(rw.col(k), scale, args);
#pragma unroll
            for (int e = 0; e < V; e++) {
                const float g = dy[e] * scale[e];
                sums.a += g;
                sums.b += g * ((x[e] - mean) * inv_var);
            }
        }
    }
    sums = dj_row_sum(sums, rw);
    const float mean_g = DJ_CENTER ? sums.a / (float)DJ_COLS : 0.0f;
    const float mean_gx = sums.b / (float)DJ_COLS;
#pragma unroll(R::UNROLL)
    for (int k = 0; k < R::CHUNKS; k++) {
        float dy[V], x[V], scale[V], dx[V];
        dj_chunk(rw, dy_cache, k, false, 0.0f, dy_in, dy);
        dj_chunk(rw, x_cache, k, false, 0.0f, x_in, x);
        if (rw.has(k)) {
            dj_par_SCALE<V>(rw.col(k), scale, args);
#pragma unroll
            for (int e = 0; e < V; e++)
                dx[e] = inv_var * (dy[e] * scale[e] - mean_g - (x[e] - mean) * inv_var * mean_gx);
            dj_out_DX<V>(rw.row, rw.col(k), dx, args);
        }
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
            dbias[e] += dj_shfl_xor(dbias[e], m);
        }
    __shared__ float part[DJ_BLOCK / 32][LANES][2 * V];
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    if (lane < LANES) {
#pragma unroll
        for (int e = 0; e < V; e++) {
            part[warp][lane][e] = dscale[e];
            part[warp][lane][V + e] = dbias[e];
        }
    }
    __syncthreads();
    if ((int)threadIdx.x < LANES) {
#pragma unroll
        for (int e = 0; e < V; e++) {
            dscale[e] = part[0][threadIdx.x][e];
            dbias[e] = part[0][threadIdx.x][V + e];
            for (int w = 1; w < DJ_BLOCK / 32; w++) {
                dscale[e] += part[w][threadIdx.x][e];
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
                sums[(2 * segment + 1) * DJ_STRIP + lane * V + e] = dbias[e];
            }
        }
        __threadfence();
        __syncthreads();
        __shared__ unsigned last;
        if (threadIdx.x == 0)
            last = atomicAdd(arrivals + strip, 1u) == DJ_SEGMENTS - 1;
        __syncthreads();
        if (!last)
            return;
        __threadfence();
        if ((int)threadIdx.x < LANES) {
            // Volatile: the other segments' sums come from other SMs, past this one's L1.
            const volatile float *const all = sums;
#pragma unroll
            for (int e = 0; e < V; e++) {
                dscale[e] = dbias[e] = 0.0f;
                for (int s = 0; s < DJ_SEGMENTS; s++) {
                    dscale[e] += all[(2 * s) * DJ_STRIP + lane * V + e];
                    dbias[e] += all[(2 * s + 1) * DJ_STRIP + lane * V + e];
                }
            }
        }
    }
    if (inside && (int)threadIdx.x < LANES) {
        dj_pout_DSCALE<V>(col, dscale, args);
        dj_pout_DBIAS<V>(col, dbias, args);
    }
}
