#!/usr/bin/env bash
# The command-line tool: every command's output and exit code.
# Usage: cli-basic.sh PATH-TO-dnnjit TEST-DATA-DIR
set -u
cli=$1
data=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect CODE PATTERN -- COMMAND...: runs COMMAND, checks its exit code and that its output
# (stdout and stderr) matches the extended regular expression PATTERN.
expect() {
    local code=$1 pattern=$2
    shift 3
    local out
    out=$("$@" 2>&1)
    local rc=$?
    if [ "$rc" -ne "$code" ] || ! grep -Eq -- "$pattern" <<<"$out"; then
        echo "FAIL: $* -> exit $rc (want $code), output:"
        echo "$out" | head -n 20
        echo "(wanted /$pattern/)"
        failures=$((failures + 1))
    else
        echo "ok: $*"
    fi
}

expect 0 "usage: dnnjit COMMAND" -- "$cli" --help
expect 0 "^dnnjit [0-9]+\.[0-9]+\.[0-9]+$" -- "$cli" --version
expect 2 "usage:" -- "$cli"
expect 2 "unknown command \"frobnicate\"" -- "$cli" frobnicate
expect 2 "usage:" -- "$cli" validate
expect 3 "cannot open $work/missing.json" -- "$cli" validate "$work/missing.json"

expect 0 "valid \(1 nodes, 3 tensors\)" -- "$cli" validate "$data/seed000.json"
expect 0 "\"tag\": \"MATMUL\"" -- "$cli" validate "$data/seed000.json" --print

printf '{"json_version": "1.0",\n  "context": ' >"$work/truncated.json"
expect 4 "line 2, column" -- "$cli" validate "$work/truncated.json"

# K no longer matches: B's first matrix dim becomes 64.
sed 's/"dim": \[4, 128, 64\]/"dim": [4, 64, 64]/; s/"stride": \[8192, 64, 1\]/"stride": [4096, 64, 1]/' \
    "$data/seed000.json" >"$work/mismatch.json"
expect 5 "K must match" -- "$cli" validate "$work/mismatch.json"
expect 5 "K must match" -- "$cli" ref "$work/mismatch.json"

expect 0 "output \"0::C\" \(uid 3\) HALF \[4,64,64\].* nan 0" -- "$cli" ref "$data/seed000.json" --seed 7
expect 2 "nonzero integer" -- "$cli" ref "$data/seed000.json" --seed 0
expect 2 "--calls needs a count from 0 to 1000000" -- "$cli" run "$data/seed000.json" --calls -1
expect 2 "unknown option --calls" -- "$cli" ref "$data/seed000.json" --calls 5
# A bare "--" is no option of any command (it once made the option check loop for ever).
expect 2 "unknown option --$" -- timeout 20 "$cli" validate "$data/seed000.json" --
expect 2 "unknown option --$" -- timeout 20 "$cli" run "$data/seed000.json" --
expect 0 "relative error .* \(ok\)" -- "$cli" demo

# run checks against the reference, or with --no-check only looks for outputs the GPU left
# unwritten (still NaN); without a GPU both say that run needs one, and why there is none.
if "$cli" run "$data/seed000.json" --calls 0 2>&1 | grep -q "no GPU found"; then
    expect 6 "no GPU found: " -- "$cli" run "$data/seed000.json" --calls 0 --no-check
else
    expect 0 "relative error vs reference" -- "$cli" run "$data/seed000.json" --calls 0
    expect 0 "output \"0::C\": no NaN" -- "$cli" run "$data/seed000.json" --calls 0 --no-check
    expect 0 "every output written: ok" -- "$cli" run "$data/seed000.json" --calls 0 --no-check
fi

# A driver that does not load: run names the loader's reason and suggests no option it lacks.
out=$(DNNJIT_CUDA_LIBRARY=$work/missing/libcuda.so.1 "$cli" run "$data/seed000.json" 2>&1)
rc=$?
want="no GPU found: no CUDA driver found (tried $work/missing/libcuda.so.1 from DNNJIT_CUDA_LIBRARY: .*No such file"
if [ "$rc" -ne 6 ] || ! grep -q "$want" <<<"$out" || grep -q -- "--arch" <<<"$out"; then
    echo "FAIL: run with a driver that does not load -> exit $rc (want 6), output:"
    echo "$out"
    failures=$((failures + 1))
else
    echo "ok: run with a driver that does not load"
fi

# The disk cache: stats counts temporary files that writers which died left (untouched for
# ten minutes) apart from the kernels; clear removes them but not a younger one, which may be
# a write in progress. A symbolic link named like an architecture folder is not followed:
# nothing outside the cache folder goes.
export DNNJIT_CACHE_DIR=$work/cache
key=0123456789abcdef0123456789abcdef
mkdir -p "$DNNJIT_CACHE_DIR/sm_80" "$work/outside"
printf 'a kernel' >"$DNNJIT_CACHE_DIR/sm_80/$key.cubin"
printf 'left by a writer killed long ago' >"$DNNJIT_CACHE_DIR/sm_80/$key.tmp.aB3dE9"
touch -d '1 hour ago' "$DNNJIT_CACHE_DIR/sm_80/$key.tmp.aB3dE9"
printf 'being written' >"$DNNJIT_CACHE_DIR/sm_80/$key.tmp.xY7zW1"
printf 'not the cache' >"$work/outside/$key.cubin"
ln -s "$work/outside" "$DNNJIT_CACHE_DIR/sm_86"
expect 0 "1 kernels, 8 bytes" -- "$cli" cache stats
expect 0 "1 leftover temporary files of interrupted writes, 32 bytes" -- "$cli" cache stats
expect 0 "^removed 2 files from " -- "$cli" cache clear
expect 0 "0 kernels, 0 bytes" -- "$cli" cache stats
if [ ! -f "$work/outside/$key.cubin" ] || [ ! -L "$DNNJIT_CACHE_DIR/sm_86" ] ||
    [ ! -f "$DNNJIT_CACHE_DIR/sm_80/$key.tmp.xY7zW1" ]; then
    echo "FAIL: cache clear removed a file outside the cache folder, the link, or a write in progress"
    failures=$((failures + 1))
else
    echo "ok: cache clear kept what was not its to remove"
fi
unset DNNJIT_CACHE_DIR

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
