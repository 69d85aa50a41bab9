#!/usr/bin/env bash
# The whole test suite once more, built with AddressSanitizer and UndefinedBehaviorSanitizer
# (-DFSRR_SANITIZE=ON) in build-asan/: a memory error, a leak or undefined behaviour anywhere
# in fsrr fails the test that ran into it. As root, after scripts/setup.sh (CI runs both).
#
# Left out here, run by scripts/test.sh only: tests that measure fsrr's own memory, which
# ASan's shadow memory, redzones and quarantine change by design —
#   - "...huge group a batch at a time": an RLIMIT_AS below what ASan alone reserves (TBs)
#   - "...does not grow the recorder's memory": an RSS bound that the quarantine (256 MiB) exceeds
#   - "...on a 512 KiB stack": frames with redzones are several times the size
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DFSRR_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if ! cmake --build build-asan -j2 >build-asan/build.log 2>&1; then
  grep -E "error|Error" build-asan/build.log | head -40 >&2
  echo "test-sanitized: build failed; the whole log is build-asan/build.log" >&2
  exit 1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-asan
ctest --output-on-failure --timeout 900 -j2 \
  -E "huge group a batch at a time|does not grow the recorder's memory|on a 512 KiB stack" "$@"
