#!/usr/bin/env bash
# tree_replay.sh [SCALE] [ROUNDS]: snapshot + replay of the seed tree (make_seed_tree.sh) into
# tmpfs, side by side with `cp -a` of the same tree and with a dd-per-file script as forum posts
# use (one dd process per file from /dev/zero). Rounds are interleaved; medians
# are printed. Run as root from the repository after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-0.2}
rounds=${2:-5}
fsrr=$PWD/build/cli/fsrr
work=$(mktemp -d /dev/shm/fsrr-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

bench/make_seed_tree.sh "$work/src/RAMDisk" "$scale"
files=$(find "$work/src" -type f | wc -l)
bytes=$(du -sb --apparent-size "$work/src" | cut -f1)
echo "tree: $files files, $((bytes / 1048576)) MiB of data ($(du -sh "$work/src" | cut -f1) on tmpfs), scale $scale"

# Oleg Drokin's recipe: a script of mkdir and `dd if=/dev/zero` lines, one per entry.
(cd "$work/src" && find . -type d -printf 'mkdir -p "%p"\n' &&
  find . -type f -printf 'dd if=/dev/zero of="%p" bs=%s count=1 status=none\n') >"$work/dd.sh"

now() { date +%s.%N; }
declare -a t_cp t_fsrr t_snap t_replay
for ((i = 0; i < rounds; i++)); do
  a=$(now); cp -a "$work/src" "$work/cp"; b=$(now)
  t_cp+=("$(echo "$b - $a" | bc)")
  rm -rf "$work/cp"
  mkdir "$work/replay"
  a=$(now)
  "$fsrr" snapshot "$work/src" -o "$work/s.trace" >/dev/null
  b=$(now)
  "$fsrr" replay "$work/s.trace" "$work/replay" --no-progress >/dev/null
  c=$(now)
  t_snap+=("$(echo "$b - $a" | bc)")
  t_replay+=("$(echo "$c - $b" | bc)")
  t_fsrr+=("$(echo "$c - $a" | bc)")
  "$fsrr" verify "$work/s.trace" "$work/replay" >/dev/null
  rm -rf "$work/replay" "$work/s.trace"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
m_cp=$(median "${t_cp[@]}")
m_fsrr=$(median "${t_fsrr[@]}")

mkdir "$work/dd"
a=$(now); (cd "$work/dd" && sh "$work/dd.sh"); b=$(now)
t_dd=$(echo "$b - $a" | bc)

printf '%-34s %8s s\n' "cp -a (median of $rounds)" "$m_cp"
printf '%-34s %8s s  (snapshot %s + replay %s)\n' "fsrr snapshot + replay (median)" "$m_fsrr" \
  "$(median "${t_snap[@]}")" "$(median "${t_replay[@]}")"
printf '%-34s %8.3f s\n' "dd per file (one run)" "$t_dd"
printf 'ratio fsrr / cp -a:      %.2f  (target < 1)\n' "$(echo "$m_fsrr / $m_cp" | bc -l)"
printf 'speedup vs dd per file:  %.0fx (target >= 50x)\n' "$(echo "$t_dd / $m_fsrr" | bc -l)"
