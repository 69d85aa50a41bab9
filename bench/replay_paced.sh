#!/usr/bin/env bash
# replay_paced.sh [SECONDS]: records a program that writes files with pauses of 1-50 ms for
# SECONDS (default 12), replays it with --timing faithful, and prints the recorded and
# replayed durations (target: within 1%) and the lateness percentiles (target: p99 <= 200 us).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-12}
build=${FSRR_BENCH_BUILD:-build}  # the build directory, as for replay_copy.sh
[[ $build == /* ]] || build=$PWD/$build
fsrr=$build/cli/fsrr
work=$(mktemp -d /dev/shm/fsrr-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/out" "$work/replay"
# Debian's python3 itself: a python3 found on PATH may be a shim (pyenv's runs 40 processes of
# bash first), which makes the paced writer a process-heavy workload
"$fsrr" record -o "$work/paced.trace" -- /usr/bin/python3 "$PWD/bench/paced_writer.py" "$work/out" "$secs" >/dev/null
"$fsrr" replay "$work/paced.trace" "$work/replay" --timing faithful --no-progress \
  --report "$work/report.json" >/dev/null
python3 - "$work/report.json" <<PY
import json, subprocess, sys
info = json.loads(subprocess.check_output(["$fsrr", "info", "$work/paced.trace", "--json"]))
rep = json.load(open(sys.argv[1]))
rec, got = info["duration_ns"] / 1e9, rep["wall_ns"] / 1e9
late = rep["lateness_ns"]
print(f"recorded {rec:.3f} s, replayed {got:.3f} s, error {100 * (got - rec) / rec:+.2f}% (target ±1%)")
print(f"lateness p50 {late['p50'] / 1e3:.0f} us, p99 {late['p99'] / 1e3:.0f} us (target <= 200), max {late['max'] / 1e3:.0f} us")
print(f"mismatches {rep['mismatches']}")
PY
