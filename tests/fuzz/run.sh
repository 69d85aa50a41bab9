#!/bin/sh
# Builds the fuzzer in build-fuzz, seeds corpus/ from traces/*.trace and the format tests'
# sample, and fuzzes for $1 seconds (default 600) on one core. Inputs stop at 64 KiB: the
# shipped traces hold MBs of payloads, whose mutations run at a few execs/s. Extra arguments
# go to libFuzzer.
set -e
cd "$(dirname "$0")/../.."
secs=${1:-600}
[ $# -gt 0 ] && shift
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DFSRR_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j2 --target trace_fuzz trace_fuzz_seeds
mkdir -p build-fuzz/corpus build-fuzz/crashes
[ -n "$(ls build-fuzz/corpus)" ] || build-fuzz/tests/fuzz/trace_fuzz_seeds build-fuzz/corpus traces/*.trace
cd build-fuzz  # -jobs writes its fuzz-N.log here
exec tests/fuzz/trace_fuzz corpus -jobs=1 -workers=1 -rss_limit_mb=4096 -max_len=65536 \
  -max_total_time="$secs" -artifact_prefix=crashes/ "$@"
