#!/usr/bin/env bash
# replay_copy.sh [SCALE] [ROUNDS]: records `cp -a` and `rsync -aAHX` of the shared/seeds/000
# tree on tmpfs once each, then replays each recording with --timing afap, interleaved with
# native runs of the same command; prints medians and the ratio replay / native (target <= 1).
# The replay time is the report's wall_ns: the recorded operations, not the prepare step.
# Run as root from the repository after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-0.2}
rounds=${2:-5}
fsrr=$PWD/build/cli/fsrr
work=$(mktemp -d /dev/shm/fsrr-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

bench/make_seed_tree.sh "$work/src" "$scale"
echo "tree: $(find "$work/src" -type f | wc -l) files, $(du -sh --apparent-size "$work/src" | cut -f1)"

now() { date +%s.%N; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
wall_s() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_ns"] / 1e9)' "$1"; }

for tool in "cp -a" "rsync -aAHX"; do
  name=${tool%% *}
  "$fsrr" record -o "$work/$name.trace" -- $tool "$work/src/" "$work/rec" >/dev/null
  rm -rf "$work/rec"
  declare -a native=() replay=()
  for ((i = 0; i < rounds; i++)); do
    a=$(now); $tool "$work/src/" "$work/native"; b=$(now)
    native+=("$(echo "$b - $a" | bc)")
    rm -rf "$work/native"
    mkdir "$work/replay"
    "$fsrr" replay "$work/$name.trace" "$work/replay" --timing afap --no-progress \
      --report "$work/report.json" >/dev/null
    replay+=("$(wall_s "$work/report.json")")
    "$fsrr" verify "$work/$name.trace" "$work/replay" >/dev/null
    rm -rf "$work/replay"
  done
  m_native=$(median "${native[@]}")
  m_replay=$(median "${replay[@]}")
  printf '%-14s native %.3f s, replay (afap) %.3f s, ratio %.2f (target <= 1.0)\n' \
    "$tool" "$m_native" "$m_replay" "$(echo "$m_replay / $m_native" | bc -l)"
done
