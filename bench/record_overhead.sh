#!/usr/bin/env bash
# record_overhead.sh [SCALE] [ROUNDS]: what recording costs a real copy. On the tree of
# shared/seeds/000 (SCALE 0.2: 22,220 files, 108 MiB) on tmpfs, runs `cp -a` and
# `rsync -aAHX` natively, under `fsrr record` and under `strace -f`, interleaved, ROUNDS
# times (default 5), and prints medians and ratios (targets: fsrr / native <= 1.20, 0 lost
# events, <= 3 trace bytes per recorded syscall).
#
# "traced" is the wall time of the whole `fsrr record -- CMD` (BPF load and the final drain
# included); "workload" is the command's own run time as fsrr measured it (exec to exit).
# Run as root from the repository after scripts/setup.sh; FSRR=path overrides the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-0.2}
rounds=${2:-5}
fsrr=${FSRR:-$PWD/build/cli/fsrr}
work=$(mktemp -d /dev/shm/fsrr-recbench.XXXXXX)
trap 'rm -rf "$work"' EXIT

bench/make_seed_tree.sh "$work/src" "$scale"
echo "tree: $(find "$work/src" -type f | wc -l) files, $(du -sh --apparent-size "$work/src" | cut -f1) on tmpfs; $rounds rounds"

ns() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# A value from fsrr record's closing line: "fsrr: events N  lost N  trace_bytes N ..."
field() { sed -n "s/.* $1 \([0-9.]*\).*/\1/p" "$work/record.err" | tail -n 1; }

for tool in "cp -a" "rsync -aAHX"; do
  name=${tool%% *}
  src="$work/src" && [ "$name" = rsync ] && src="$work/src/"
  native=() traced=() workload=() straced=() lost=()
  for ((i = 0; i < rounds; i++)); do
    rm -rf "$work/dst"
    a=$(ns); $tool "$src" "$work/dst"; b=$(ns)
    native+=("$(( b - a ))")

    rm -rf "$work/dst"
    a=$(ns)
    "$fsrr" record -f -o "$work/$name.trace" -- $tool "$src" "$work/dst" 2>"$work/record.err"
    b=$(ns)
    traced+=("$(( b - a ))")
    workload+=("$(echo "$(field duration) * 1000000000" | bc | cut -d. -f1)")
    lost+=("$(field lost)")

    rm -rf "$work/dst"
    a=$(ns); strace -f -o /dev/null -- $tool "$src" "$work/dst"; b=$(ns)
    straced+=("$(( b - a ))")
  done
  rm -rf "$work/dst"

  n=$(median "${native[@]}")
  t=$(median "${traced[@]}")
  w=$(median "${workload[@]}")
  s=$(median "${straced[@]}")
  max_lost=$(printf '%s\n' "${lost[@]}" | sort -g | tail -n 1)
  read -r events syscalls bytes < <("$fsrr" info "$work/$name.trace" --json | python3 -c '
import json, sys
i = json.load(sys.stdin)
pseudo = i["ops"].get("fd_bind", 0) + i["ops"].get("exit", 0)
print(i["events"], i["events"] - pseudo, i["trace_bytes"])')
  echo
  echo "$tool"
  printf '  native      %8.3f s\n' "$(echo "$n / 1000000000" | bc -l)"
  printf '  fsrr record %8.3f s   ratio %.2f (target <= 1.20)   workload alone %.3f s, ratio %.2f\n' \
    "$(echo "$t / 1000000000" | bc -l)" "$(echo "$t / $n" | bc -l)" \
    "$(echo "$w / 1000000000" | bc -l)" "$(echo "$w / $n" | bc -l)"
  printf '  strace -f   %8.3f s   ratio %.2f\n' "$(echo "$s / 1000000000" | bc -l)" "$(echo "$s / $n" | bc -l)"
  printf '  lost events %s (max over runs; target 0)\n' "$max_lost"
  printf '  trace       %s bytes, %s events, %s recorded syscalls: %.2f bytes/syscall (target <= 3)\n' \
    "$bytes" "$events" "$syscalls" "$(echo "$bytes / $syscalls" | bc -l)"
done
