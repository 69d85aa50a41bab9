#!/usr/bin/env bash
# compare.sh [SCALES] [RUNS]: the README's rsync comparison done by fsrr compare. The seed tree
# of that post (100k x 1 KiB, 10k x 4 KiB, 1k x 10 KiB, 100 x 1000 KiB files) times each SCALE
# (default "0.2 1": 22,220 and 111,100 files) is copied by `rsync -aAHX` under fsrr record on
# tmpfs, and the trace compared on tmpfs, ext4, xfs, btrfs and btrfs:compress=lzo, RUNS rounds
# (default 3), with data that compresses 2:1. Prints per scale and load:
#   the compare table (medians, min-max of the runs)
#   where compare's time went: mkfs+mount, prepare, replay, sync, verify, unmount, and what is
#   left, compare's own cost; and the share of the wall time that is neither a replay, a
#   prepare nor a mkfs (the issue's definition of compare's cost, which counts syncfs, verify
#   and unmount as compare's too)
# LOADS="idle busy" (default both): busy runs two busy loops that take both cores.
# Run as root from the repository after scripts/setup.sh. The pages land in $OUT (default a
# new directory in /var/tmp), one per scale and load.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a scales <<<"${1:-0.2 1}"
runs=${2:-3}
read -r -a loads <<<"${LOADS:-idle busy}"
fsrr=$PWD/build/cli/fsrr
out=${OUT:-$(mktemp -d /var/tmp/fsrr-compare-bench.XXXXXX)}
work=$(mktemp -d /dev/shm/fsrr-compare-bench.XXXXXX)
busy=()
stop_busy() {
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
  busy=()
}
trap 'stop_busy; rm -rf "$work"' EXIT

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $runs runs; pages in $out"
for scale in "${scales[@]}"; do
  rm -rf "$work/src" "$work/dst"
  bench/make_seed_tree.sh "$work/src" "$scale"
  files=$(find "$work/src" -type f | wc -l)
  (cd "$work" && "$fsrr" record -f -o rsync.trace -- rsync -aAHX src/ dst 2>record.log)
  grep '^record: [0-9]* events' "$work/record.log"
  rm -rf "$work/src" "$work/dst"  # compare prepares its own
  for load in "${loads[@]}"; do
    [[ $load == busy ]] && for _ in 1 2; do (while :; do :; done) & busy+=($!); done
    dir=$out/scale-$scale-$load
    mkdir -p "$dir"
    echo
    echo "== $files files, rsync -aAHX, $load$([[ $load == busy ]] && echo ' (two busy loops: both cores taken)')"
    "$fsrr" compare "$work/rsync.trace" --fs tmpfs --fs ext4 --fs xfs --fs btrfs \
      --fs btrfs:compress=lzo --runs "$runs" --data compress:2 -o "$dir" 2>"$dir/log" | tee "$dir/table"
    grep '^compare: ' "$dir/log" | head -1
    python3 - "$dir/compare.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c, wall = r["cost_ns"], r["wall_ns"]
beyond = wall - c["replay"] - c["prepare"] - c["mkfs_mount"]
print(f"compare itself: {c['compare'] / 1e9:.2f} s = {100 * c['compare'] / wall:.1f}% of {wall / 1e9:.1f} s; "
      f"beyond replay+prepare+mkfs (sync, verify, unmount too): {beyond / 1e9:.2f} s = {100 * beyond / wall:.1f}%")
PY
    stop_busy
  done
done
