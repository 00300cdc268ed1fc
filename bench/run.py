#!/usr/bin/env python3
"""Runs dnnjit-bench, the torch peers and the Python package's execute in the same run,
writes the result JSON (date, commit, device, every case) and prints a table with the
ratios.

    python3 bench/run.py --build build-gpu --out DIR [--commit SHA] [--no-rows] [--rows-all-plans]
                         [--gemm-sweep-all-plans]
    python3 bench/run.py --readme bench/results/FILE.json   # rewrite README.md's tables and plot
"""
import argparse
import datetime
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def run_bench(binary, args, cache_dir):
    # NVRTC 13 with a driver present keeps what it compiles in the driver's compute cache
    # (~/.nv/ComputeCache) across processes: on the H200 host a GEMM kernel it had seen
    # compiled again in 23 ms instead of 330, even in a new process. The cold builds must
    # not find the kernels the tests (or an earlier run) compiled, and dnnjit loads only
    # CUBINs, which that cache never serves otherwise: it is off for the benchmark.
    env = dict(os.environ, DNNJIT_CACHE_DIR=cache_dir, CUDA_CACHE_DISABLE="1")
    out = subprocess.run([binary] + args, env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"{binary} {' '.join(args)} failed ({out.returncode}): {out.stderr}")
    return {r["case"]: r for r in map(json.loads, out.stdout.splitlines())}


def time_us(fn, calls=20, repeats=15):
    """Device microseconds per call of a torch function, timed like dnnjit-bench (see its
    COOLDOWN_MS): 300 ms idle, a warm-up of at least 10 calls and 100 ms of device time,
    then CUDA events around `calls` back-to-back calls, median of `repeats`."""
    import torch

    torch.cuda.synchronize()
    time.sleep(0.3)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    warm_ms = 0.0
    while warm_ms < 100.0:
        start.record()
        for _ in range(10):
            fn()
        stop.record()
        stop.synchronize()
        warm_ms += start.elapsed_time(stop)
    samples = []
    for _ in range(repeats):
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e3 / calls)
    return sorted(samples)[repeats // 2]


def torch_peers():
    """Device microseconds per call of torch eager and torch.compile on the same work."""
    import torch

    n = 64 * 1024 * 1024
    a, b, c = (torch.randn(n, device="cuda", dtype=torch.half) for _ in range(3))

    def eager():
        return torch.sigmoid(a + b * c)

    compiled = torch.compile(eager)
    A = torch.randn(4, 64, 128, device="cuda", dtype=torch.half)
    B = torch.randn(4, 128, 64, device="cuda", dtype=torch.half)
    A4 = torch.randn(16, 128, 512, device="cuda", dtype=torch.half)
    B4 = torch.randn(16, 512, 128, device="cuda", dtype=torch.half)
    D4 = torch.randn(1, 128, 128, device="cuda", dtype=torch.half)

    def replay_us(fn, captured=100, replays=10, repeats=9):
        """Device µs per call with `captured` calls captured in one CUDA graph, replayed."""
        fn()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(captured):
                fn()
        return time_us(graph.replay, calls=replays, repeats=repeats) / captured
    gemm = gemm_peers(torch, time_us)
    return {
        **gemm,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "sigmoid_fma_64M_half": {"torch_eager_us": time_us(eager), "torch_compile_us": time_us(compiled)},
        "seed000_bmm_half": {"torch_bmm_us": time_us(lambda: torch.bmm(A, B), calls=1000, repeats=9),
                             "torch_graph_replay_us": replay_us(lambda: torch.bmm(A, B))},
        "seed004_matmul_bias_half": {
            "torch_us": time_us(lambda: torch.bmm(A4, B4) + D4, calls=1000, repeats=9),
            "torch_graph_replay_us": replay_us(lambda: torch.bmm(A4, B4) + D4)},
    }


def bench_values(torch, shape, dtype):
    """A tensor holding what dnnjit-bench fills its GEMM buffers with (gemm_buffers in
    bench.c): element j of the memory order is +-(1 + (r mod 2^24) / 2^24), r = j *
    2654435761 mod 2^32, its top bit the sign. The tensor cores' power draw, and with it
    the clocks, depends on the values, so both sides of a ratio get the same ones."""
    count = 1
    for d in shape:
        count *= d
    r = (torch.arange(count, device="cuda", dtype=torch.int64) * 2654435761) & 0xFFFFFFFF
    values = (1.0 - 2.0 * (r >> 31).double()) * (1.0 + (r & 0xFFFFFF).double() / 16777216.0)
    return values.float().to(dtype).reshape(shape)


def gemm_work(torch):
    """The first table's GEMM cases (dnnjit-bench gemm's first three), their operands holding
    dnnjit-bench's values (bench_values), and torch's ways of computing each: bf16 4096^3 by cuBLAS,
    8x4096^3 bmm + bias + relu as eager ops, as baddbmm + relu and under torch.compile,
    and fp8 E4M3 8192^3 with per-tensor scales into bf16 through torch._scaled_mm (which
    wants B column-major, as dnnjit's case has it), without and with use_fast_accum. The
    first peer of a case computes as dnnjit does: dnnjit's fp8 kernel adds each K tile's
    sums from the tensor cores' accumulator to float registers, as torch's default does
    (both come out 0.0017 off the float64 product on these values); use_fast_accum adds
    the whole of K up in the tensor cores' accumulator, which on the H200 keeps fewer bits
    than a float (0.11 off).
    Returns the operands (a namespace) and, per case, its calls per timed sample and its
    peers."""
    import types

    w = types.SimpleNamespace(n=4096, m8=8192)
    n, m8, bf16 = w.n, w.m8, torch.bfloat16

    def values(shape, dtype):
        return bench_values(torch, shape, dtype)

    w.A, w.B = values((n, n), bf16), values((n, n), bf16)
    w.bA, w.bB, w.bias = values((8, n, n), bf16), values((8, n, n), bf16), values((1, 1, n), bf16)
    w.a8 = values((m8, m8), torch.float8_e4m3fn)
    w.b8 = values((m8, m8), torch.float8_e4m3fn).t()
    w.scale_a, w.scale_b = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")

    def eager():
        return torch.relu(torch.bmm(w.bA, w.bB) + w.bias)

    def scaled_mm(fast_accum):
        return lambda: torch._scaled_mm(w.a8, w.b8, scale_a=w.scale_a, scale_b=w.scale_b, out_dtype=torch.bfloat16,
                                        use_fast_accum=fast_accum)

    cases = {
        "gemm_4096_bf16": (10, {"cublas_us": lambda: torch.matmul(w.A, w.B)}),
        "bmm_bias_relu_8x4096_bf16": (5, {
            "torch_baddbmm_us": lambda: torch.relu(torch.baddbmm(w.bias, w.bA, w.bB)),
            "torch_eager_us": eager, "torch_compile_us": torch.compile(eager)}),
        "gemm_8192_fp8_e4m3": (5, {"torch_scaled_mm_us": scaled_mm(False),
                                   "torch_scaled_mm_fast_accum_us": scaled_mm(True)}),
    }
    return w, cases


def gemm_peers(torch, time_us):
    """Each torch peer of the first table's GEMM cases (see gemm_work), timed alone, on
    dnnjit-bench's values."""
    _, cases = gemm_work(torch)
    return {key: {field: time_us(fn, calls=calls, repeats=9) for field, fn in peers.items()}
            for key, (calls, peers) in cases.items()}


def import_dnnjit(build, cache_dir):
    """The dnnjit package of this checkout's python/, over the build's library, with its
    disk cache in cache_dir (where dnnjit-bench left the kernels it built)."""
    os.environ["DNNJIT_LIBRARY"] = os.path.abspath(os.path.join(build, "libdnnjit.so"))
    os.environ["DNNJIT_CACHE_DIR"] = cache_dir
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import dnnjit

    return dnnjit


def paired_gemms(build, cache_dir, rounds=5):
    """The first table's GEMM cases, and the sweep's in PAIRED_SWEEP against cuBLAS, timed in
    turns with their torch peers in one process:
    dnnjit through the Python package (mode A's plan, the graph dnnjit-bench gemm builds),
    then each peer, then the same in reverse order, `rounds` times; every timing is
    time_us's (300 ms idle, 100 ms warm-up). The H200's clocks under GEMM load drift with
    what it ran in the seconds before, and dnnjit-bench times dnnjit's cases long before
    run.py times torch's: only timings taken side by side give ratios that the drift does
    not bias. On dnnjit-bench's values, and the 4096^3 case once more on torch.randn's
    (normal values, whose bits toggle more and draw more power). Returns, per case, each
    side's median over the rounds and the median of the rounds' ratios (peer time / dnnjit
    time); dnnjit's output is checked against its first peer's."""
    cudnn = import_dnnjit(build, cache_dir)
    import torch

    handle = cudnn.create_handle()
    cudnn.set_stream(handle, torch.cuda.current_stream())

    def built(make, io=cudnn.data_type.BFLOAT16):
        """Builds with mode A a graph of `io` data (bf16 unless given) with float compute whose
        ops `make` adds (make returns the variant pack, tensor -> torch buffer, and the
        output's buffer); returns its execute as a function of no arguments, and the output's
        buffer."""
        graph = cudnn.pygraph(handle=handle, io_data_type=io, compute_data_type=cudnn.data_type.FLOAT)
        pack, out = make(graph)
        graph.build([cudnn.heur_mode.A])
        workspace = torch.empty(graph.get_workspace_size(), device="cuda", dtype=torch.uint8)
        return lambda: graph.execute(pack, workspace, handle=handle), out

    data_types = {torch.bfloat16: cudnn.data_type.BFLOAT16, torch.float16: cudnn.data_type.HALF,
                  torch.float8_e4m3fn: cudnn.data_type.FP8_E4M3, torch.float32: cudnn.data_type.FLOAT}

    def operand(graph, name, x):
        """A graph tensor for torch's x seen with a batch dimension, as dnnjit-bench's graphs
        have it (a batch of one at the stride of one matrix)."""
        x = x if x.dim() == 3 else x.unsqueeze(0)
        stride = list(x.stride())
        if x.shape[0] == 1:
            stride[0] = x.shape[1] * x.shape[2]
        return graph.tensor(name=name, dim=list(x.shape), stride=stride, data_type=data_types[x.dtype]), x

    def matmul(a, b, epilogue, out_dtype=torch.bfloat16):
        """C = epilogue(graph, A @ B) over torch's a and b, in out_dtype (bf16 unless given)."""
        def make(graph):
            (ta, a3), (tb, b3) = operand(graph, "A", a), operand(graph, "B", b)
            pack = {ta: a3, tb: b3}
            tc = epilogue(graph, graph.matmul(ta, tb), pack).set_output(True)
            out = torch.empty(a3.shape[0], a3.shape[1], b3.shape[2], device="cuda", dtype=out_dtype)
            pack[tc] = out
            return pack, out
        return make

    def plain(graph, c, pack):
        return c

    w, peer_cases = gemm_work(torch)

    def bias_relu(graph, c, pack):
        tbias, pack_bias = operand(graph, "bias", w.bias)
        pack[tbias] = pack_bias
        return graph.relu(graph.bias(c, tbias))

    def scaled(graph, c, pack):
        ts, scale = operand(graph, "scale", (w.scale_a * w.scale_b).reshape(1, 1))
        pack[ts] = scale
        return graph.mul(c, ts)

    runs = {
        "gemm_4096_bf16": built(matmul(w.A, w.B, plain)),
        "bmm_bias_relu_8x4096_bf16": built(matmul(w.bA, w.bB, bias_relu)),
        "gemm_8192_fp8_e4m3": built(matmul(w.a8, w.b8, scaled)),
    }
    cases = {key: (runs[key], calls, peers) for key, (calls, peers) in peer_cases.items()}
    A, B = (torch.randn(w.n, w.n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    cases["gemm_4096_bf16_randn"] = (built(matmul(A, B, plain)), 10, {"cublas_us": lambda: torch.matmul(A, B)})
    # The sweep's square shapes that issue 5 sets a target for, on dnnjit-bench's values.
    for key, (_, dtype_name, n) in PAIRED_SWEEP.items():
        dtype = getattr(torch, dtype_name)
        a, b = bench_values(torch, (n, n), dtype), bench_values(torch, (n, n), dtype)
        cases[key] = (built(matmul(a, b, plain, dtype), data_types[dtype]), 10 if n <= 4096 else 3,
                      {"cublas_us": lambda a=a, b=b: torch.matmul(a, b)})
    result = {}
    for key, ((run, out), calls, peers) in cases.items():
        # One call of each first: torch.compile compiles, and dnnjit's output is checked
        # against the first peer's (see gemm_work).
        run()
        want = next(iter(peers.values()))().reshape(out.shape).float()
        err = (torch.linalg.vector_norm(out.float() - want) / torch.linalg.vector_norm(want)).item()
        if not err < 1e-2:
            sys.exit(f"paired {key}: dnnjit's output is {err:.3g} off torch's")
        sides = {"dnnjit_us": run, **peers}
        times = {name: [] for name in sides}
        for r in range(rounds):
            for name in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
                times[name].append(time_us(sides[name], calls=calls, repeats=9))
        result[key] = {"rounds": rounds, **{name: median(ts) for name, ts in times.items()},
                       **{ratio_field(name): median([p / d for p, d in zip(ts, times["dnnjit_us"])])
                          for name, ts in times.items() if name != "dnnjit_us"}}
    cudnn.destroy_handle(handle)
    return result


def median(xs):
    return sorted(xs)[len(xs) // 2]


def ratio_field(field):
    """Where paired_gemms keeps a peer's ratio to dnnjit: its time's field, `_us` made `_ratio`."""
    return field.replace("_us", "_ratio")


def python_execute_host_time(build, cache_dir):
    """Host microseconds per call of graph.execute from Python (the dnnjit package over
    ctypes, this checkout's python/ against the build's library) on seed 000's batched
    matmul, called as the seed calls it (uid keys, a workspace, handle=), and of torch.bmm
    on the same tensors in the same way: many calls in a loop, wall clock around the loop
    only (the device catches up between samples), median of the samples."""
    cudnn = import_dnnjit(build, cache_dir)
    import torch

    handle = cudnn.create_handle()
    batch, m, k, n = 4, 64, 128, 64
    graph = cudnn.pygraph(handle=handle, io_data_type=cudnn.data_type.HALF,
                          compute_data_type=cudnn.data_type.FLOAT)
    a = graph.tensor(name="A", dim=[batch, m, k])
    b = graph.tensor(name="B", dim=[batch, k, n])
    c = graph.matmul(a, b).set_output(True)
    graph.build([cudnn.heur_mode.A])
    A = torch.randn(batch, m, k, device="cuda", dtype=torch.half)
    B = torch.randn(batch, k, n, device="cuda", dtype=torch.half)
    C = torch.empty(batch, m, n, device="cuda", dtype=torch.half)
    workspace = torch.empty(graph.get_workspace_size(), device="cuda", dtype=torch.uint8)
    pack = {a.get_uid(): A, b.get_uid(): B, c.get_uid(): C}

    def host_us(fn, calls=200, samples=51):
        for _ in range(50):
            fn()
        times = []
        for _ in range(samples):
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times.append((time.perf_counter() - start) * 1e6 / calls)
        torch.cuda.synchronize()
        return sorted(times)[samples // 2]

    us = host_us(lambda: graph.execute(pack, workspace, handle=handle))
    bmm_us = host_us(lambda: torch.bmm(A, B))
    torch.testing.assert_close(C, torch.bmm(A, B), atol=1e-2, rtol=1e-2)
    cudnn.destroy_handle(handle)
    return {"case": "python_execute_host", "us": us, "torch_bmm_host_us": bmm_us,
            "plan": graph.get_plan_name_at_index(graph.get_chosen_plan_index())}


def checkout_commit():
    """The short hash of the checkout's HEAD, or "unknown" where there is no git history
    (a copy of the working tree, as the GPU machine gets: pass DNNJIT_COMMIT there)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=os.path.dirname(os.path.abspath(__file__)),
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--out", default=".")
    ap.add_argument("--commit", default=os.environ.get("DNNJIT_COMMIT") or checkout_commit(),
                    help="the commit measured (default: $DNNJIT_COMMIT, else the checkout's HEAD)")
    ap.add_argument("--readme", help="a result file whose table replaces README.md's")
    ap.add_argument("--no-rows", action="store_true", help="skip the row-op cases")
    ap.add_argument("--rows-all-plans", action="store_true", help="also time every plan of the rows engine")
    ap.add_argument("--gemm-sweep-all-plans", action="store_true",
                    help="time every tensor-core plan on each GEMM sweep shape, not mode A's alone")
    args = ap.parse_args()
    if args.readme:
        return update_readme(args.readme)
    binary = os.path.join(args.build, "bench", "dnnjit-bench")
    with tempfile.TemporaryDirectory() as cache:
        cases = run_bench(binary, ["run"], cache)
        cases.update(run_bench(binary, ["build-only"], cache))
        cases.update(run_bench(binary, ["gemm"] + (["--sweep-all-plans"] if args.gemm_sweep_all_plans else []), cache))
        cases["python_execute_host"] = python_execute_host_time(args.build, cache)
        for case, times in paired_gemms(args.build, cache).items():
            cases.setdefault(case, {"case": case})["paired"] = times
        if not args.no_rows:
            cases.update(run_bench(binary, ["rows"] + (["--all-plans"] if args.rows_all_plans else []), cache))
    peers = torch_peers()
    for case in ("sigmoid_fma_64M_half", "seed000_bmm_half", "seed004_matmul_bias_half", "gemm_4096_bf16",
                 "bmm_bias_relu_8x4096_bf16", "gemm_8192_fp8_e4m3"):
        cases[case].update(peers[case])
    for case, times in sweep_peers(cases).items():
        cases[case].update(times)
    if not args.no_rows:
        for case, times in rows_peers().items():
            cases[case].update(times)
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": args.commit,
        "device": peers["device"],
        "torch": peers["torch"],
        "arch": cases["build_cold"]["arch"],
        "cases": cases,
    }
    path = os.path.join(args.out, "bench.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=2, sort_keys=True)
    print(f"wrote {path}")
    print(table(result))


# The GEMM cases of the first table: result key, label, and each torch peer's name and field.
GEMM_ROWS = [
    ("gemm_4096_bf16", "GEMM 4096³ bf16", {"cuBLAS (torch.matmul)": "cublas_us"}),
    ("bmm_bias_relu_8x4096_bf16", "bmm + bias + relu 8×4096³ bf16",
     {"eager": "torch_eager_us", "baddbmm+relu": "torch_baddbmm_us", "compile": "torch_compile_us"}),
    ("gemm_8192_fp8_e4m3", "GEMM 8192³ fp8 E4M3 × scale → bf16",
     {"torch._scaled_mm (dnnjit's accumulation)": "torch_scaled_mm_us",
      "torch._scaled_mm with use_fast_accum": "torch_scaled_mm_fast_accum_us"}),
]

# The GEMM sweep's cases that paired_gemms times too, with their labels, torch dtypes and
# sizes: the square shapes of issue 5's targets (0.95x cuBLAS at 4096^3 and 8192^3, bf16 and
# fp16) other than the first table's 4096^3 bf16. Their ratios from dnnjit-bench's sequence
# drift with the clocks (fp16 8192^3: 0.94x there, 0.98x in turns, in one run).
PAIRED_SWEEP = {
    "gemm_sweep/bf16/8192x8192x8192": ("GEMM 8192³ bf16 (sweep)", "bfloat16", 8192),
    "gemm_sweep/fp16/4096x4096x4096": ("GEMM 4096³ fp16 (sweep)", "float16", 4096),
    "gemm_sweep/fp16/8192x8192x8192": ("GEMM 8192³ fp16 (sweep)", "float16", 8192),
}

# The cases paired_gemms times: the first table's, its 4096³ case on normal values, and the
# sweep's in PAIRED_SWEEP.
PAIRED_ROWS = GEMM_ROWS + [("gemm_4096_bf16_randn", "GEMM 4096³ bf16 on torch.randn's values",
                            {"cuBLAS (torch.matmul)": "cublas_us"})] + [
    (key, label, {"cuBLAS (torch.matmul)": "cublas_us"}) for key, (label, _, _) in PAIRED_SWEEP.items()]


def table(result, figure=""):
    """The README table, from a result file, with `figure` (Markdown) after the GEMM tables."""
    c = result["cases"]
    pw = c["sigmoid_fma_64M_half"]
    rows = [
        ("sigmoid(a+b*c), 64M half, device time per call", f"{pw['us']:.1f} µs ({pw['tb_per_s']:.2f} TB/s)",
         f"eager {pw['torch_eager_us']:.1f} µs ({pw['torch_eager_us'] / pw['us']:.2f}×), "
         f"compile {pw['torch_compile_us']:.1f} µs ({pw['torch_compile_us'] / pw['us']:.2f}×)"),
        small_row(c, "seed000_bmm_half", "seed 000 bmm 4x64x128x64 half", "torch.bmm", "torch_bmm_us"),
        small_row(c, "seed004_matmul_bias_half", "seed 004 bmm + bias 16x128x512x128 half", "torch bmm + add",
                  "torch_us"),
        *(gemm_row(c, *row) for row in GEMM_ROWS),
        *sm80_rows(c),
        ("cold build (generate + NVRTC + load)", f"{c['build_cold']['us'] / 1e3:.1f} ms", ""),
        *gemm_build_rows(c),
        ("build, warm disk cache (new process)", f"{c['build_warm_disk_cache']['us'] / 1e3:.2f} ms", ""),
        ("build, warm memory cache", f"{c['build_warm_memory_cache']['us']:.0f} µs", ""),
        ("host time of one execute", f"{c['execute_host_overhead']['us']:.2f} µs", driver_launch(c)),
    ]
    py = c.get("python_execute_host")
    if py:  # results from before the Python package lack it
        rows.append(("host time of one graph.execute from Python, seed 000 bmm", f"{py['us']:.2f} µs",
                     f"torch.bmm {py['torch_bmm_host_us']:.2f} µs ({py['torch_bmm_host_us'] / py['us']:.2f}×)"))
    lines = [f"Measured {result['date']} on {result['device']} ({result['arch']}), commit {result['commit']}, "
             f"torch {result['torch']}.", "", "| case | dnnjit | torch (ratio = torch time / dnnjit time) |",
             "| --- | --- | --- |"]
    lines += [f"| {a} | {b} | {d} |" for a, b, d in rows]
    if any("paired" in c.get(key, {}) for key, _, _ in PAIRED_ROWS):
        lines += ["", paired_table(c)]
    if sweep_cases(c):
        lines += ["", sweep_table(c)]
    if figure:
        lines += ["", figure]
    if any(case.startswith("rows/") for case in c):
        lines += ["", rows_table(c)]
    return "\n".join(lines)


# ---- the GEMM sweep (issue 5): mode A's plan against cuBLAS on each shape -------------------


def sweep_cases(cases):
    """The `gemm_sweep/<shape>` cases, without the per-plan lines (`gemm_sweep/<shape>@<plan>`)
    that dnnjit-bench gemm --sweep-all-plans prints before each."""
    return {name: case for name, case in cases.items() if name.startswith("gemm_sweep/") and "@" not in name}


def sweep_peers(cases):
    """cuBLAS through torch on each `gemm_sweep/...` case dnnjit-bench printed, on its
    shape and values: torch.matmul(A, B), or F.linear(A, W) where dnnjit's B is the weight
    W [N, K] seen as [K, N]. fp32 cases (io "tf32") in TF32 (allow_tf32) as cublas_us, and
    exact as cublas_fp32_us, against dnnjit's exact plan (exact_us)."""
    import torch
    import torch.nn.functional as F

    peers = {}
    types = {"bf16": torch.bfloat16, "fp16": torch.half, "tf32": torch.float}
    for name, case in sweep_cases(cases).items():
        dt = types[case["io"]]
        m, n, k = case["m"], case["n"], case["k"]
        a = bench_values(torch, (m, k), dt)
        if case["b_weight"]:
            w = bench_values(torch, (n, k), dt)
            fn = lambda: F.linear(a, w)
        else:
            b = bench_values(torch, (k, n), dt)
            fn = lambda: torch.matmul(a, b)
        if case["io"] == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = False
            peers[name] = {"cublas_fp32_us": time_us(fn, calls=5, repeats=9)}
            torch.backends.cuda.matmul.allow_tf32 = True
            peers[name]["cublas_us"] = time_us(fn, calls=20, repeats=9)
            torch.backends.cuda.matmul.allow_tf32 = False
        else:
            peers[name] = {"cublas_us": time_us(fn, calls=20, repeats=9)}
        del a
        torch.cuda.empty_cache()
    return peers


def sweep_table(c):
    """The sweep's table: mode A's plan and its time against cuBLAS's (ratio = cuBLAS time /
    dnnjit time, above 1 when dnnjit is faster)."""
    lines = ["GEMM sweep, mode A's plan (linear_MxNxK: B is an nn.Linear weight [N, K]; ratio = cuBLAS time / "
             "dnnjit time; tf32: fp32 inputs, mode A's first plan noted REDUCED_PRECISION against cuBLAS with "
             "allow_tf32; in turns: the ratio of the same shape timed in turns with cuBLAS, as in the table above):",
             "", "| case | dnnjit | plan | cuBLAS (torch) | ratio |", "| --- | --- | --- | --- | --- |"]
    for name, case in sweep_cases(c).items():
        flop = 2.0 * case["m"] * case["n"] * case["k"]
        ours = f"{case['us']:.1f} µs ({case['tflops']:.0f} TFLOP/s)"
        if "cublas_us" in case:
            theirs = f"{case['cublas_us']:.1f} µs ({flop / case['cublas_us'] / 1e6:.0f} TFLOP/s)"
            ratio = f"{case['cublas_us'] / case['us']:.2f}×"
            if "paired" in case:
                ratio += f" ({case['paired']['cublas_ratio']:.2f}× in turns)"
        else:
            theirs = ratio = ""
        lines.append(f"| {name[len('gemm_sweep/'):]} | {ours} | {case['plan']} | {theirs} | {ratio} |")
    exact = [(name, case) for name, case in sweep_cases(c).items() if "exact_us" in case and "cublas_fp32_us" in case]
    if exact:
        lines += ["", "The tf32 cases exact (mode A's first plan) against cuBLAS without TF32:", "",
                  "| case | dnnjit | plan | cuBLAS fp32 (torch) | ratio |", "| --- | --- | --- | --- | --- |"]
        for name, case in exact:
            flop = 2.0 * case["m"] * case["n"] * case["k"]
            lines.append(f"| {name[len('gemm_sweep/'):]} | {case['exact_us']:.1f} µs "
                         f"({flop / case['exact_us'] / 1e6:.0f} TFLOP/s) | {case['exact_plan']} | "
                         f"{case['cublas_fp32_us']:.1f} µs ({flop / case['cublas_fp32_us'] / 1e6:.0f} TFLOP/s) | "
                         f"{case['cublas_fp32_us'] / case['exact_us']:.2f}× |")
    return "\n".join(lines)


# ---- the plot (issue 5): the GEMM tables' ratios as bars, drawn into README ----------------

PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "gemm.svg")


def gemm_ratios(c):
    """(label, torch time / dnnjit time) for each GEMM case with a peer, in the tables' order:
    the sweep's shapes against cuBLAS, then the first table's GEMM rows against their fastest
    torch peer, which the label names; each timed in turns where the result has those times
    (see paired_gemms), else apart."""
    bars = [(name[len("gemm_sweep/"):] + ", in turns", case["paired"]["cublas_ratio"]) if "paired" in case
            else (name[len("gemm_sweep/"):], case["cublas_us"] / case["us"])
            for name, case in sweep_cases(c).items() if "cublas_us" in case]
    for key, label, peers in PAIRED_ROWS:
        if key in PAIRED_SWEEP:  # among the sweep's bars
            continue
        case = c.get(key, {})
        paired = case.get("paired", {})
        if paired:
            timed = [(paired[field], name, paired[ratio_field(field)])
                     for name, field in peers.items() if field in paired]
        else:
            timed = [(case[field], name, case[field] / case["us"]) for name, field in peers.items() if field in case]
        if timed:
            _, name, ratio = min(timed)
            bars.append((f"{label} vs {name}{', in turns' if paired else ''}", ratio))
    return bars


def plot_gemm(result, bars, path):
    """Draws the ratios as bars from 1 on a log axis, where 2× faster and 2× slower are as
    long, and writes an SVG with its text as text and without a date, matplotlib's version or
    random ids, so that drawing the same results again changes no byte."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    labels, ratios = zip(*bars)
    fig = Figure(figsize=(9, 1.3 + 0.28 * len(bars)), layout="constrained")
    ax = fig.add_subplot()
    rows = range(len(bars))
    ax.barh(rows, [r - 1 for r in ratios], left=1, color=["tab:green" if r >= 1 else "tab:orange" for r in ratios])
    ax.axvline(1, color="black", linewidth=0.8)
    for row, r in zip(rows, ratios):
        ax.annotate(f"{r:.2f}×", (r, row), xytext=(3 if r >= 1 else -3, 0), textcoords="offset points",
                    ha="left" if r >= 1 else "right", va="center", fontsize=8)
    ax.set_yticks(list(rows), labels, fontsize=9)
    ax.set_ylim(len(bars) - 0.5, -0.5)  # top to bottom in the tables' order, without margins
    # The axis is as wide on both sides of 1, with room for the bars' labels, and ticked at
    # powers of two.
    reach = 1.3 * max(max(ratios), 1 / min(ratios))
    ax.set_xscale("log")
    ax.set_xlim(1 / reach, reach)
    ax.xaxis.set_major_locator(FixedLocator([2.0 ** e for e in range(-6, 7) if 1 / reach <= 2.0 ** e <= reach]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel("torch time / dnnjit time (mode A's plan; above 1: dnnjit is faster)")
    ax.set_title(f"dnnjit GEMM against torch (cuBLAS) on {result['device']} ({result['arch']})\n"
                 f"commit {result['commit']}, measured {result['date']}", fontsize=10)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "dnnjit"}):
        fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None})


def readme_figure(result, source, readme_dir, old_block):
    """README's figure: the plot of the GEMM ratios, drawn anew from the result file, with a
    caption naming that file. Without matplotlib the SVG stays as it is, so the figure README
    already has is kept, its caption still naming the file the SVG was drawn from."""
    bars = gemm_ratios(result["cases"])
    if not bars:
        return ""
    if importlib.util.find_spec("matplotlib") is None:
        print(f"matplotlib is not installed (pip install matplotlib): README's tables are rewritten, but not "
              f"{os.path.relpath(PLOT)} or README's figure of it", file=sys.stderr)
        old = re.search(r"^!\[.*\n\n.*", old_block, re.M)
        return old.group(0) if old else ""
    plot_gemm(result, bars, PLOT)
    return (f"![torch time / dnnjit time on each GEMM case]({os.path.relpath(PLOT, readme_dir)})\n\n"
            f"The tables' GEMM ratios, drawn from `{source}` by `python3 bench/run.py --readme`.")


# ---- row ops (issue 6): softmax, layer norm, RMS norm, add + RMS norm, backwards ----------

ROW_SHAPES = [("32768x4096", 32768, 4096, "bf16"), ("32768x1000", 32768, 1000, "fp16"),
              ("4096x32768", 4096, 32768, "bf16")]
ROW_OPS = ["softmax_fwd", "layernorm_fwd", "rmsnorm_fwd", "add_rmsnorm", "softmax_bwd", "layernorm_bwd",
           "rmsnorm_bwd", "column_sum"]


def rows_peers():
    """torch on dnnjit-bench's row cases (`rows/<op>/<shape>/<type>`): eager for every op,
    torch.compile for add + RMS norm and the column sum; backwards through autograd from a kept forward graph
    (torch's backward kernels from the saved statistics, as dnnjit's graphs take them)."""
    import torch
    import torch.nn.functional as F

    peers = {}
    for shape, rows, cols, io in ROW_SHAPES:
        dt = torch.bfloat16 if io == "bf16" else torch.half
        x, r, dy = (torch.randn(rows, cols, device="cuda", dtype=dt) for _ in range(3))
        w, b = (torch.randn(cols, device="cuda", dtype=dt) for _ in range(2))

        def add_rmsnorm(x, r, w):
            h = x + r
            return h, F.rms_norm(h, (cols,), w, 1e-5)

        compiled = torch.compile(add_rmsnorm)
        compiled_sum = torch.compile(lambda x: x.sum(0))
        xg, wg, bg = (t.detach().requires_grad_() for t in (x, w, b))
        softmax_y = torch.softmax(xg, -1)
        layernorm_y = F.layer_norm(xg, (cols,), wg, bg, 1e-5)
        rmsnorm_y = F.rms_norm(xg, (cols,), wg, 1e-5)
        eager = {
            "softmax_fwd": lambda: torch.softmax(x, -1),
            "layernorm_fwd": lambda: F.layer_norm(x, (cols,), w, b, 1e-5),
            "rmsnorm_fwd": lambda: F.rms_norm(x, (cols,), w, 1e-5),
            "add_rmsnorm": lambda: add_rmsnorm(x, r, w),
            "softmax_bwd": lambda: torch.autograd.grad(softmax_y, xg, dy, retain_graph=True),
            "layernorm_bwd": lambda: torch.autograd.grad(layernorm_y, (xg, wg, bg), dy, retain_graph=True),
            "rmsnorm_bwd": lambda: torch.autograd.grad(rmsnorm_y, (xg, wg), dy, retain_graph=True),
            "column_sum": lambda: x.sum(0),
        }
        for op in ROW_OPS:
            times = {"torch_eager_us": time_us(eager[op])}
            if op == "add_rmsnorm":
                times["torch_compile_us"] = time_us(lambda: compiled(x, r, w))
            if op == "column_sum":
                times["torch_compile_us"] = time_us(lambda: compiled_sum(x))
            peers[f"rows/{op}/{shape}/{io}"] = times
        del x, r, dy, w, b, xg, wg, bg, softmax_y, layernorm_y, rmsnorm_y
        torch.cuda.empty_cache()
    return peers


def rows_table(c):
    """The row-op table: dnnjit's time and effective bandwidth (bytes of every input read
    once and every output written once, over the time), torch's, and the ratios."""
    lines = ["Row ops (bandwidth = bytes of every input and output once / time; ratio = torch time / dnnjit "
             "time):", "", "| case | dnnjit | plan | torch eager | torch.compile |", "| --- | --- | --- | --- | --- |"]
    for shape, _, _, io in ROW_SHAPES:
        for op in ROW_OPS:
            case = c.get(f"rows/{op}/{shape}/{io}")
            if not case:
                continue
            tb = case["bytes"] / 1e6

            def peer(key):
                return (f"{case[key]:.1f} µs ({tb / case[key]:.2f} TB/s, {case[key] / case['us']:.2f}×)"
                        if key in case else "")
            lines.append(f"| {op} {shape} {io} | {case['us']:.1f} µs ({case['tb_per_s']:.2f} TB/s) | {case['plan']} | "
                         f"{peer('torch_eager_us')} | {peer('torch_compile_us')} |")
    return "\n".join(lines)


def driver_launch(c):
    """The driver's own host time per launch of an empty kernel, for the execute row (results
    from before it was measured lack it)."""
    us = c["execute_host_overhead"].get("driver_launch_us")
    return f"cuLaunchKernel alone {us:.2f} µs" if us else ""


def small_row(cases, key, label, peer, field):
    """A row for a µs-scale case: device time per call in a loop of executes and under
    CUDA-graph replay, each against torch timed the same way."""
    c = cases.get(key)
    if not c:
        return (label, "not measured", "")
    ours = f"loop {c['us']:.2f} µs"
    theirs = f"{peer} loop {c[field]:.2f} µs ({c[field] / c['us']:.2f}×)"
    if c.get("graph_replay_us", -1) > 0 and "torch_graph_replay_us" in c:
        ours += f", graph replay {c['graph_replay_us']:.2f} µs"
        theirs += (f", graph replay {c['torch_graph_replay_us']:.2f} µs "
                   f"({c['torch_graph_replay_us'] / c['graph_replay_us']:.2f}×)")
    return (f"{label}, device time per call (plan {c['plan']})", ours, theirs)


def gemm_row(cases, key, label, peers):
    """A table row for a GEMM case: mode A's plan and the fastest plan, TFLOP/s, and each
    peer's time with its ratio to mode A's."""
    c = cases.get(key)
    if not c:
        return (label, "not measured", "")
    ours = (f"{c['us']:.0f} µs, {c['tflops']:.0f} TFLOP/s (plan {c['plan']}); fastest plan "
            f"{c['best_us']:.0f} µs, {c['best_tflops']:.0f} TFLOP/s ({c['best_plan']})")
    theirs = ", ".join(f"{name} {c[field]:.0f} µs ({c[field] / c['us']:.2f}×)"
                       for name, field in peers.items() if field in c)
    return (label, ours, theirs)


def paired_table(cases):
    """The GEMM cases timed in turns with their peers in one process (see paired_gemms)."""
    lines = ["The same GEMMs timed in turns with their peers in one process (dnnjit through the Python "
             "package; medians over the rounds, ratio = the median of the rounds' peer time / dnnjit time):", "",
             "| case | dnnjit | torch |", "| --- | --- | --- |"]
    for key, label, peers in PAIRED_ROWS:
        p = cases.get(key, {}).get("paired")
        if p:
            theirs = ", ".join(f"{name} {p[field]:.0f} µs ({p[ratio_field(field)]:.2f}×)"
                               for name, field in peers.items() if field in p)
            lines.append(f"| {label} | {p['dnnjit_us']:.0f} µs | {theirs} |")
    return "\n".join(lines)


def sm80_rows(cases):
    """A table row for the mma.sync engine's fastest plan on the 4096³ bf16 GEMM (what the
    GPUs before Hopper run), its share of cuBLAS's speed on this GPU; none for results
    from before the benchmark timed it."""
    c = cases["gemm_4096_bf16"]
    if "sm80_best_us" not in c:
        return []
    return [("GEMM 4096³ bf16, sm_80 engine (mma.sync), its fastest plan",
             f"{c['sm80_best_us']:.0f} µs, {c['sm80_best_tflops']:.0f} TFLOP/s ({c['sm80_best_plan']})",
             f"cuBLAS (torch.matmul) {c['cublas_us']:.0f} µs ({c['cublas_us'] / c['sm80_best_us']:.2f}×)")]


def gemm_build_rows(cases):
    """Table rows for the cold builds (generate + NVRTC + load, nothing cached) of the GEMM
    cases' kernels: mode A's plan, and the fastest plan of the mma.sync engine; none for
    results from before the benchmark timed them."""
    c = cases["gemm_4096_bf16"]
    if "build_ms" not in c:
        return []
    names = {"gemm_4096_bf16": "4096³ bf16", "bmm_bias_relu_8x4096_bf16": "bmm + bias + relu",
             "gemm_8192_fp8_e4m3": "fp8"}
    ours = ", ".join(f"{names[key]} {cases[key]['build_ms']:.0f} ms ({cases[key]['plan']})" for key, _, _ in GEMM_ROWS)
    rows = [("cold build of a GEMM kernel, mode A's plan", ours, "")]
    if "sm80_best_build_ms" in c:
        rows.append(("cold build of a GEMM kernel, sm_80 engine (4096³ bf16)",
                     f"{c['sm80_best_build_ms']:.0f} ms ({c['sm80_best_plan']})", ""))
    return rows


def update_readme(result_path):
    """Replaces the text between the benchmark markers of README.md with the tables of a
    result file and the plot of its GEMM ratios."""
    with open(result_path) as f:
        result = json.load(f)
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
    with open(readme) as f:
        text = f.read()
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    head, rest = text.split(begin)
    block, tail = rest.split(end)
    source = os.path.relpath(result_path, os.path.dirname(readme))
    figure = readme_figure(result, source, os.path.dirname(readme), block)
    with open(readme, "w") as f:
        f.write(f"{head}{begin}\n{table(result, figure)}\n\nFrom `{source}`.\n{end}{tail}")


if __name__ == "__main__":
    main()
