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
expect 0 "relative error .* \(ok\)" -- "$cli" demo

# run checks against the reference, or with --no-check only looks for outputs the GPU left
# unwritten (still NaN); without a GPU both say that run needs one.
if "$cli" run "$data/seed000.json" --calls 0 2>&1 | grep -q "no GPU found"; then
    expect 2 "no GPU found" -- "$cli" run "$data/seed000.json" --calls 0 --no-check
else
    expect 0 "relative error vs reference" -- "$cli" run "$data/seed000.json" --calls 0
    expect 0 "output \"0::C\": no NaN" -- "$cli" run "$data/seed000.json" --calls 0 --no-check
    expect 0 "every output written: ok" -- "$cli" run "$data/seed000.json" --calls 0 --no-check
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
