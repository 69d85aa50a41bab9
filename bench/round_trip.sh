#!/usr/bin/env bash
# round_trip.sh [SCALE]: the round trip of issue 4. Records cp -a, rsync -aAHX, tar c | tar x,
# dd oflag=sync and a multi-threaded writer on a small tree (the seed-000 shape at SCALE,
# default 0.02, plus a subdirectory, a symlink and a hard link), replays each recording with
# --timing afap under `fsrr record`, and prints trace_compare's per-thread match rates (target:
# every thread >= 99.9%). Run as root from the repository; FSRR_BENCH_BUILD as for
# replay_copy.sh; FSRR_ROUND_TRIP_KEEP=1 keeps the traces. Exits non-zero when a workload misses
# the target. A closer look: TRACE_COMPARE_DEBUG=1 trace_compare ORIGINAL REPLAY TARGET.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-0.02}
build=${FSRR_BENCH_BUILD:-build}
[[ $build == /* ]] || build=$PWD/$build
fsrr=$build/cli/fsrr
compare=$build/bench/trace_compare
mt_writer=$build/tests/e2e/mt_writer
work=$(mktemp -d /dev/shm/fsrr-roundtrip.XXXXXX)
if [[ -n ${FSRR_ROUND_TRIP_KEEP:-} ]]; then  # leave the traces there, for a closer look
  echo "traces kept in $work"
else
  trap 'rm -rf "$work"' EXIT
fi

src=$work/src
bench/make_seed_tree.sh "$src" "$scale"
mkdir -p "$src/sub/deeper"
head -c 70000 /dev/urandom >"$src/sub/deeper/data.bin"
echo note >"$src/sub/note.txt"
ln -s sub/note.txt "$src/link-to-note"
ln "$src/sub/note.txt" "$src/sub/hardlink-to-note"
echo "tree: $(find "$src" -type f | wc -l) files, $(du -sh --apparent-size "$src" | cut -f1)"

failed=0
# round_trip NAME COMMAND...: the command writes into $work/out (created empty beforehand).
round_trip() {
  local name=$1 dir=$work/$1
  shift
  mkdir -p "$dir" "$work/out"
  "$fsrr" record -o "$dir/original.trace" -- "$@" >/dev/null 2>"$dir/record.log" || true
  rm -rf "$work/out"
  mkdir "$dir/target"
  "$fsrr" record -o "$dir/replay.trace" -- "$fsrr" replay "$dir/original.trace" "$dir/target" \
    --timing afap --no-progress >"$dir/replay.log" 2>&1 || true
  echo "== $name: $(grep -m1 '^replayed' "$dir/replay.log" || echo 'replay failed'); $(grep -m1 '^mismatches' "$dir/replay.log" || true)"
  if ! "$compare" "$dir/original.trace" "$dir/replay.trace" "$dir/target" | sed 's/^/  /'; then
    failed=1
  fi
  rm -rf "$dir/target"
}

round_trip cp cp -a "$src" "$work/out/copy"
round_trip rsync rsync -aAHX "$src/" "$work/out/"
round_trip tar sh -c "tar -C '$src' -cf - . | tar -C '$work/out' -xf -"
round_trip dd dd if="$src/1000K#00001" of="$work/out/dd.out" bs=4k oflag=sync status=none
round_trip mt_writer "$mt_writer" "$work/out" 4 20
exit $failed
