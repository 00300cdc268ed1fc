// Rows engine, reduction over the outer axes of X (the rows of the row space): each column
// gives one element of Y, as a bias gradient sums dY over the batch. Block b owns strip
// b / DJ_SEGMENTS of DJ_STRIP columns, DJ_TPR threads across it with DJ_STRIP / DJ_TPR
// neighbouring columns each (so that a warp reads runs of up to 512 bytes of a row), and
// segment b % DJ_SEGMENTS of DJ_SEG_ROWS rows, which its DJ_BLOCK / DJ_TPR thread rows take
// in turn. Every step combines in a fixed order: each thread its rows in order, the thread
// rows by a tree in shared memory, and with several segments, each storing its results in
// the scratch (after DJ_SCRATCH_COUNTERS arrival counters, one per strip, which execute
// zeroes), the segment that arrives last at its strip combines the strip's results, thread
// row r taking segments r, r + DJ_BLOCK / DJ_TPR, ... then the tree again. No float
// atomics: the result does not depend on the order in which blocks run. What each mode does
// is in reduce_modes.cuh; the engine combines in float.

// Combines acc over the thread rows of a block (the threads that share `lane`) by a tree
// of fixed shape through `part`; thread row 0 ends with the result. Starts and ends with a
// barrier, so that `part` may be used again.
template <int WIDTH, int THREAD_ROWS>
__device__ __forceinline__ void dj_col_tree(float (&acc)[WIDTH], float (*part)[DJ_STRIP], int sub, int lane)
{
    static_assert((THREAD_ROWS & (THREAD_ROWS - 1)) == 0, "the tree halves the thread rows");
    __syncthreads();
#pragma unroll
    for (int e = 0; e < WIDTH; e++)
        part[sub][lane * WIDTH + e] = acc[e];
    __syncthreads();
#pragma unroll 1
    for (int half = THREAD_ROWS / 2; half > 0; half /= 2) {
        if (sub < half) {
#pragma unroll
            for (int e = 0; e < WIDTH; e++) {
                acc[e] = dj_reduce_combine<DJ_MODE>(acc[e], part[sub + half][lane * WIDTH + e]);
                part[sub][lane * WIDTH + e] = acc[e];
            }
        }
        __syncthreads();
    }
}

template <int V> __device__ __forceinline__ void dj_col_op(const DjArgs &args)
{
    constexpr int WIDTH = DJ_STRIP / DJ_TPR, THREAD_ROWS = DJ_BLOCK / DJ_TPR;
    static_assert(WIDTH * DJ_TPR == DJ_STRIP && WIDTH % V == 0, "strip layout");
    __shared__ __align__(16) float part[THREAD_ROWS][DJ_STRIP];
    const int strip = (int)(blockIdx.x / DJ_SEGMENTS), segment = (int)(blockIdx.x % DJ_SEGMENTS);
    const int lane = (int)threadIdx.x % DJ_TPR, sub = (int)threadIdx.x / DJ_TPR;
    const int col0 = strip * DJ_STRIP + lane * WIDTH;
    const dj_i64 first_row = (dj_i64)segment * DJ_SEG_ROWS;
    const dj_i64 end_row = first_row + DJ_SEG_ROWS < DJ_ROWS ? first_row + DJ_SEG_ROWS : DJ_ROWS;
    float acc[WIDTH];
#pragma unroll
    for (int e = 0; e < WIDTH; e++)
        acc[e] = dj_reduce_identity<DJ_MODE, float>();
    // BATCH rows at a time, all their loads issued before any is used: left to itself the
    // compiler kept two 16-byte loads of a thread in flight, and 32768 x 4096 bf16 read
    // 3.26 TB/s on the H200 against 3.78 this way.
    constexpr int BATCH = DJ_COLUMN_BATCH;
    for (dj_i64 row = first_row + sub; row < end_row; row += BATCH * THREAD_ROWS) {
        float x[BATCH][WIDTH];
#pragma unroll
        for (int b = 0; b < BATCH; b++)
#pragma unroll
            for (int c = 0; c < WIDTH; c += V) {
                // With V > 1 the row length is a multiple of V: a vector lies wholly inside.
                if (row + b * THREAD_ROWS < end_row && col0 + c < DJ_COLS) {
                    dj_in_X<V>(row + b * THREAD_ROWS, col0 + c, (float(&)[V])x[b][c], args, false);
                } else {
#pragma unroll
                    for (int e = 0; e < V; e++)
                        x[b][c + e] = dj_reduce_identity<DJ_MODE, float>();
                }
            }
#pragma unroll
        for (int b = 0; b < BATCH; b++)
#pragma unroll
            for (int e = 0; e < WIDTH; e++)
                acc[e] = dj_reduce_combine<DJ_MODE>(acc[e], dj_reduce_term<DJ_MODE>(x[b][e]));
    }
    dj_col_tree<WIDTH, THREAD_ROWS>(acc, part, sub, lane);
    if constexpr (DJ_SEGMENTS > 1) {
        unsigned *const arrivals = (unsigned *)args.ptr[DJ_SCRATCH_SLOT];
        float *const results = (float *)(arrivals + DJ_SCRATCH_COUNTERS) + (dj_i64)strip * DJ_SEGMENTS * DJ_STRIP;
        if (sub == 0) {
#pragma unroll
            for (int e = 0; e < WIDTH; e++)
                results[segment * DJ_STRIP + lane * WIDTH + e] = acc[e];
        }
        if (!dj_block_arrives_last(arrivals + strip, DJ_SEGMENTS))
            return;
        // The other segments' results come from other SMs: loaded from L2 past this SM's L1,
        // four floats a load where the thread's columns allow, eight segments' loads issued
        // at once. With a float a load and four segments at once, the 128 segments of each
        // strip of 32768 x 1000 fp16 took the H200 34.5 us against 25.9.
#pragma unroll
        for (int e = 0; e < WIDTH; e++)
            acc[e] = dj_reduce_identity<DJ_MODE, float>();
        constexpr int TURNS = (DJ_SEGMENTS + THREAD_ROWS - 1) / THREAD_ROWS;
#pragma unroll 8
        for (int turn = 0; turn < TURNS; turn++) {
            const int s = sub + turn * THREAD_ROWS;
            if (s >= DJ_SEGMENTS)
                continue;
            // 16-byte aligned when WIDTH % 4 == 0: the workspace (execute checks it), the
            // scratch and its results (at multiples of 256 bytes) and each thread's columns.
            const float *p = results + s * DJ_STRIP + lane * WIDTH;
            if constexpr (WIDTH % 4 == 0) {
#pragma unroll
                for (int e = 0; e < WIDTH; e += 4) {
                    const float4 v = dj_load_cg4((const float4 *)(p + e));
                    acc[e] = dj_reduce_combine<DJ_MODE>(acc[e], v.x);
                    acc[e + 1] = dj_reduce_combine<DJ_MODE>(acc[e + 1], v.y);
                    acc[e + 2] = dj_reduce_combine<DJ_MODE>(acc[e + 2], v.z);
                    acc[e + 3] = dj_reduce_combine<DJ_MODE>(acc[e + 3], v.w);
                }
            } else {
#pragma unroll
                for (int e = 0; e < WIDTH; e++)
                    acc[e] = dj_reduce_combine<DJ_MODE>(acc[e], dj_load_cg(p + e));
            }
        }
        dj_col_tree<WIDTH, THREAD_ROWS>(acc, part, sub, lane);
    }
    if (sub != 0)
        return;
#pragma unroll
    for (int c = 0; c < WIDTH; c += V) {
        if (col0 + c < DJ_COLS) {
            float y[V];
#pragma unroll
            for (int e = 0; e < V; e++)
                y[e] = dj_reduce_finish<DJ_MODE>(acc[c + e], DJ_ROWS);
            dj_pout_Y<V>(col0 + c, y, args);
        }
    }
}
