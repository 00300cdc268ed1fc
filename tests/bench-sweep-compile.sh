#!/usr/bin/env bash
# dnnjit-bench sweep-compile, no GPU needed: it builds the plans `gemm --sweep-all-plans`
# would time into the disk cache (here one sweep case, whose mode A plan is built whatever
# DNNJIT_BENCH_PLANS selects), and a second run finds the kernel there: its file is not
# written again (a compile would write a new file and rename it over the old one).
# Arguments: dnnjit-bench, dnnjit.
set -euo pipefail
bench=$1 cli=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export DNNJIT_CACHE_DIR=$dir DNNJIT_BENCH_PLANS=no-plan-is-named-this
out=$("$bench" sweep-compile sm_90a 1000x77x1000 2>"$dir/err")
echo "$out"
if grep -q "NVRTC could not be loaded" "$dir/err"; then
    cat "$dir/err"
    exit 77
fi
grep -q '^{"case": "gemm_sweep/bf16/1000x77x1000", "arch": "sm_90a", "plans_built": 1, ' <<<"$out"
[ "$(grep -c . <<<"$out")" = 1 ] # the filter leaves one case
"$cli" cache stats | grep -q ": 1 kernels"
kernel=$(find "$dir" -type f -name '*.cubin')
before=$(stat -c '%i %Y.%y' "$kernel")
sleep 1
out=$("$bench" sweep-compile sm_90a 1000x77x1000)
echo "$out"
grep -q '"plans_built": 1, ' <<<"$out"
[ "$(stat -c '%i %Y.%y' "$kernel")" = "$before" ]
"$cli" cache stats | grep -q ": 1 kernels"
echo "sweep-compile: one plan built, then found in the disk cache"
