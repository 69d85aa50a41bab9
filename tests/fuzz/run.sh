#!/bin/sh
# Builds the fuzzers in build-fuzz/ (clang, ASan + UBSan, libFuzzer) and runs one:
#   tests/fuzz/run.sh trace [SECONDS] [libFuzzer args]   the trace reader (default 600 s)
#   tests/fuzz/run.sh engine [SECONDS] [libFuzzer args]  the replay engine, as root
#   tests/fuzz/run.sh smoke [SECONDS]                    CI: both, on their regression corpus
#                                                        (tests/fuzz/regress/), then SECONDS
#                                                        each (default 30) of fuzzing
# The trace fuzzer's corpus starts from traces/*.trace and the format tests' sample; its inputs
# stop at 64 KiB (the shipped traces hold MBs of payloads, whose mutations run at a few
# execs/s). The engine fuzzer's inputs are recipes (engine_fuzz.cc) and start from nothing.
# Findings go to build-fuzz/crashes/; a fixed one belongs in tests/fuzz/regress/NAME/.
set -e
cd "$(dirname "$0")/../.."
which=${1:-trace}
[ $# -gt 0 ] && shift
secs=${1:-}
[ $# -gt 0 ] && shift
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DFSRR_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_UNITY_BUILD=OFF >/dev/null
cmake --build build-fuzz -j2 --target trace_fuzz engine_fuzz trace_fuzz_seeds >build-fuzz/fuzz-build.log 2>&1 ||
  { tail -40 build-fuzz/fuzz-build.log >&2; exit 1; }
mkdir -p build-fuzz/corpus/trace build-fuzz/corpus/engine build-fuzz/crashes
[ -n "$(ls build-fuzz/corpus/trace)" ] ||
  build-fuzz/tests/fuzz/trace_fuzz_seeds build-fuzz/corpus/trace traces/*.trace >/dev/null
regress=$PWD/tests/fuzz/regress
cd build-fuzz  # -jobs writes its fuzz-N.log here
trace_args="-rss_limit_mb=4096 -max_len=65536"
engine_args="-rss_limit_mb=2048 -max_len=16384 -timeout=60"
case $which in
  trace)
    exec tests/fuzz/trace_fuzz corpus/trace "$regress/trace" -jobs=1 -workers=1 $trace_args \
      -max_total_time="${secs:-600}" -artifact_prefix=crashes/ "$@" ;;
  engine)
    exec tests/fuzz/engine_fuzz corpus/engine "$regress/engine" -jobs=1 -workers=1 $engine_args \
      -max_total_time="${secs:-600}" -artifact_prefix=crashes/ "$@" ;;
  smoke)
    s=${secs:-30}
    for f in trace engine; do
      eval args=\$${f}_args
      mkdir -p "corpus/$f"
      # every input that once found a bug, once each; then fresh mutations of the corpus
      # shellcheck disable=SC2086
      if ! tests/fuzz/${f}_fuzz $args -runs=0 "$regress/$f" >"smoke-$f.log" 2>&1 ||
         ! tests/fuzz/${f}_fuzz "corpus/$f" "$regress/$f" $args -max_total_time="$s" \
             -artifact_prefix=crashes/ -print_final_stats=1 >>"smoke-$f.log" 2>&1; then
        tail -60 "smoke-$f.log" >&2
        echo "fuzz smoke: ${f}_fuzz failed; its log is build-fuzz/smoke-$f.log" >&2
        exit 1
      fi
      echo "fuzz smoke: ${f}_fuzz: $(ls "$regress/$f" | wc -l) regression inputs," \
        "$(sed -n 's/^stat::number_of_executed_units: *//p' "smoke-$f.log" | tail -1) executions in $s s"
    done ;;
  *) echo "usage: tests/fuzz/run.sh trace|engine|smoke [SECONDS] [libFuzzer args]" >&2; exit 2 ;;
esac
