/* Helpers for the GPU tests: a shared device handle, device buffers, and the check that
 * runs a graph on the GPU and on the reference executor and compares them. */
#ifndef DNNJIT_TEST_GPU_UTIL_H
#define DNNJIT_TEST_GPU_UTIL_H

#include "util.h"

/* Whether a GPU can execute; prints why not (the test then returns 77, ctest's skip). */
bool tu_gpu_available(void);
/* The main of a GPU test program: `program [CASE]`. With no argument it runs every case of
 * `tests`; with one, only the case of that name, so that ctest (tests/CMakeLists.txt) and
 * scripts/gpu-sanitize can run each case as a process of its own. The name is checked
 * before the device, so that a misspelt one fails (exit 2, listing the cases) even where no
 * GPU is; then, when `device_ready` (tu_gpu_available, or a stricter check of the test's
 * own) says the cases cannot run here, the program returns 77, ctest's skip. */
int tu_gpu_main(const struct CMUnitTest *tests, size_t count, int argc, char **argv, bool (*device_ready)(void));
#define TU_GPU_MAIN(tests, argc, argv, device_ready) \
    tu_gpu_main((tests), sizeof(tests) / sizeof((tests)[0]), (argc), (argv), (device_ready))
/* A graph on the shared device handle. */
dnnjit_graph_t tu_gpu_graph(dnnjit_data_type_t io_type);
/* C = A @ B on the shared device handle, A [batch, m, k] and B [batch, k, n] dense, C an
 * output. */
dnnjit_graph_t tu_gpu_matmul_graph(dnnjit_data_type_t io_type, int64_t batch, int64_t m, int64_t k, int64_t n);
/* A [rows, 1] FLOAT tensor: a row op's saved statistics (mean, inverse variance). */
dnnjit_tensor_t tu_stats_tensor(dnnjit_graph_t g, const char *name, int64_t rows);
/* Row graphs the rows-engine tests share; each writes a label naming it into `label`.
 * Layer (or with `rms` RMS) norm backward of dy and x [rows, cols] with scale [1, cols]
 * and saved statistics: DX and DSCALE outputs, and DBIAS with `dbias`. */
dnnjit_graph_t tu_norm_backward_graph(dnnjit_data_type_t io, int64_t rows, int64_t cols, bool rms, bool dbias,
                                      char *label, size_t label_size);
/* A reduction of x [rows, cols] (strides `stride`, NULL: packed) over axis 1, one result
 * per row, or with `columns` over axis 0, one result per column. */
dnnjit_graph_t tu_reduction_graph(dnnjit_data_type_t io, int64_t rows, int64_t cols, const int64_t *stride,
                                  bool columns, dnnjit_reduction_mode_t mode, char *label, size_t label_size);
/* The relative-error bound for outputs computed from inputs of this type. */
double tu_tolerance(dnnjit_data_type_t io_type);
/* Builds the graph with the given modes, then for EVERY plan: fresh random inputs in
 * [lo, hi), outputs poisoned with NaN on the device, execute, and compare every output
 * with the reference executor by ||out - ref|| / ||ref|| < tol (NaN fails). */
void tu_gpu_check(dnnjit_graph_t g, const dnnjit_heur_mode_t *modes, int mode_count, double lo, double hi, double tol,
                  const char *label);
/* The fused epilogues the GEMM tests put after y = A @ B ([batch, m, n]): none; a bias
 * [1, 1, n] then relu; a row bias [1, m, 1], a residual [batch, m, n] and tanh; alpha
 * [1, 1, 1] (FLOAT) times y, stored as HALF whatever the inputs are. */
typedef enum tu_gemm_epilogue { TU_PLAIN, TU_BIAS_RELU, TU_ROW_BIAS_RESIDUAL, TU_SCALE_CAST } tu_gemm_epilogue_t;
/* Adds epilogue e after y and marks its result an output of g. */
void tu_gemm_epilogue(dnnjit_graph_t g, dnnjit_tensor_t y, tu_gemm_epilogue_t e, int64_t batch, int64_t m, int64_t n);

#endif
