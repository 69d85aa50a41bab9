#!/usr/bin/env bash
# replay_floor.sh [SCALE] [ROUNDS]: fsrr's afap replay against its floor. `cp -a` and
# `rsync -aAHX` of the seed tree (SCALE 1: 111,100 files; default 0.2) on tmpfs are recorded
# with `fsrr record`; then, in interleaved rounds (default 5), each trace is replayed by
# bench_replay_copy (the library's afap replay, as `fsrr replay --timing afap`) and by
# replay_floor (the same ops from a pre-decoded array, one thread per recorded thread, waiting
# only on the ops they follow; no result checks, report or data generation). Both prepare the
# tree first and read it once; only the ops are timed. Prints the medians and
# ratio = median replay wall / median floor wall (target <= 1.05). Run as root from the
# repository after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-0.2}
rounds=${2:-5}
build=${FSRR_BENCH_BUILD:-build}
[[ $build == /* ]] || build=$PWD/$build
fsrr=$build/cli/fsrr
replay=$build/bench/bench_replay_copy
floor=$build/bench/replay_floor
work=$(mktemp -d /dev/shm/fsrr-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

bench/make_seed_tree.sh "$work/src" "$scale" >/dev/null
echo "tree: $(find "$work/src" -type f | wc -l) files, $(du -sh --apparent-size "$work/src" | cut -f1)"
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

bench() {
  local name=$1 trace=$work/$1.trace
  shift
  "$fsrr" record -o "$trace" -- "$@" "$work/src/" "$work/rec" >"$work/record.log" 2>&1 ||
    { cat "$work/record.log" >&2; exit 1; }
  rm -rf "$work/rec"
  local -a rw=() fw=() ru=() fu=() rsy=() fsy=()
  local i side r f
  for ((i = 0; i < rounds; i++)); do
    for side in $((i % 2)) $((1 - i % 2)); do  # alternate which goes first
      mkdir "$work/t"
      if ((side == 0)); then
        read -r -a r < <("$replay" replay "$trace" "$work/t")
        rw+=("${r[0]}") ru+=("${r[1]}") rsy+=("${r[2]}")
        ((r[4] == 0)) || echo "  $name replay: ${r[4]} results differ from the recording" >&2
      else
        read -r -a f < <("$floor" "$trace" "$work/t")
        fw+=("${f[0]}") fu+=("${f[1]}") fsy+=("${f[2]}")
        ((f[4] == 0)) || echo "  $name floor: ${f[4]} ops failed or succeeded otherwise than recorded" >&2
      fi
      rm -rf "$work/t"
    done
  done
  echo "$name (${r[3]} events; the floor issues ${f[3]} of them), medians of $rounds interleaved rounds:"
  printf '  replay  wall %.3f s  user %.3f s  sys %.3f s  (afap, events only)\n' \
    "$(median "${rw[@]}")" "$(median "${ru[@]}")" "$(median "${rsy[@]}")"
  printf '  floor   wall %.3f s  user %.3f s  sys %.3f s\n' \
    "$(median "${fw[@]}")" "$(median "${fu[@]}")" "$(median "${fsy[@]}")"
  printf '  ratio = replay wall / floor wall = %.3f / %.3f = %.3f (target <= 1.05)\n' \
    "$(median "${rw[@]}")" "$(median "${fw[@]}")" \
    "$(echo "$(median "${rw[@]}") / $(median "${fw[@]}")" | bc -l)"
  echo "  replay walls: ${rw[*]}"
  echo "  floor walls:  ${fw[*]}"
}

bench cp cp -a
bench rsync rsync -aAHX
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
