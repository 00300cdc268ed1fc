#!/usr/bin/env bash
# The library with a driver that finds a device (tests/stub_driver.c: one device of compute
# capability 9.0 that refuses to load or run anything), on a machine without a GPU.
# Usage: stub-driver.sh PATH-TO-dnnjit PATH-TO-STUB-LIBRARY TEST-DATA-DIR
set -u
cli=$1
export DNNJIT_CUDA_LIBRARY=$2
data=$3
export DNNJIT_CACHE_DIR=$(mktemp -d)
trap 'rm -rf "$DNNJIT_CACHE_DIR"' EXIT
failures=0

# A handle that finds the device starts loading NVRTC on a thread of its own; `plans` is
# done in a few milliseconds, before the load, and ended in a segfault or an abort in about
# a quarter of the runs until the handle waited for it. Every run must end cleanly.
crashed=0
for i in $(seq 1 40); do
    out=$("$cli" plans "$data/seed000.json" 2>&1)
    rc=$?
    if [ "$rc" -ne 0 ] || ! grep -q "^execution plans: " <<<"$out" || grep -q "no GPU found" <<<"$out"; then
        crashed=$((crashed + 1))
        echo "run $i: exit $rc, output (the plans left out):"
        grep -v "^    plan " <<<"$out" | tail -n 40
    fi
done
if [ "$crashed" -ne 0 ]; then
    echo "FAIL: $crashed of 40 runs of dnnjit plans with the stub driver did not end cleanly"
    failures=$((failures + 1))
else
    echo "ok: 40 runs of dnnjit plans with the stub driver"
fi

# The device's architecture is the stub's, and a build the driver refuses says why.
out=$("$cli" run "$data/seed000.json" --calls 1 2>&1)
rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ] || ! grep -q "cuModuleLoadData failed: CUDA_ERROR_NOT_SUPPORTED" <<<"$out"; then
    echo "FAIL: dnnjit run with the stub driver -> exit $rc, output:"
    echo "$out" | head -n 10
    failures=$((failures + 1))
else
    echo "ok: dnnjit run with the stub driver fails with the driver's refusal (exit $rc)"
fi
exit $((failures > 0))
