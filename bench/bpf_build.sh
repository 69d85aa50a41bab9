#!/usr/bin/env bash
# bpf_build.sh [SCALE] [ROUNDS]: what the exact BPF build (FSRR_BTF's type ids compiled in,
# loaded when the running kernel's BTF is the one fsrr was built against) saves over the
# CO-RE build every kernel can load (FSRR_BPF_BUILD=portable). Records `cp -a` of the seed
# tree (SCALE 0.2: 22,220 files) on tmpfs with each, interleaved, ROUNDS times (default 7), and
# prints medians: the whole `fsrr record` wall time, the copy's own time under it, and a
# recording of `true` (load, attach, teardown: the fixed cost).
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-0.2}
rounds=${2:-7}
fsrr=${FSRR:-$PWD/build/cli/fsrr}
work=$(mktemp -d /dev/shm/fsrr-bpfbuild.XXXXXX)
trap 'rm -rf "$work"' EXIT
bench/make_seed_tree.sh "$work/src" "$scale"
echo "tree: $(find "$work/src" -type f | wc -l) files; $rounds rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"
ns() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
duration_of() { sed -n 's/^record: .*bytes\/event), \([0-9.]*\) s .*/\1/p' "$1" | tail -n 1; }
declare -A whole=() own=() empty=()
for ((i = 0; i < rounds; i++)); do
  for build in exact portable; do
    env=()
    [[ $build == portable ]] && env=(FSRR_BPF_BUILD=portable)
    a=$(ns); env "${env[@]}" "$fsrr" record -f -o "$work/t.trace" -- true 2>/dev/null; b=$(ns)
    empty[$build]+=" $(( (b - a) / 1000000 ))"
    rm -rf "$work/dst"
    a=$(ns)
    env "${env[@]}" "$fsrr" record -f -o "$work/t.trace" -- cp -a "$work/src" "$work/dst" 2>"$work/err"
    b=$(ns)
    whole[$build]+=" $(( (b - a) / 1000000 ))"
    own[$build]+=" $(echo "$(duration_of "$work/err") * 1000" | bc | cut -d. -f1)"
  done
done
printf '%-9s %14s %12s %16s\n' build "record true ms" "cp -a ms" "cp under it ms"
for build in exact portable; do
  # shellcheck disable=SC2086
  printf '%-9s %14s %12s %16s\n' $build "$(median ${empty[$build]})" "$(median ${whole[$build]})" \
    "$(median ${own[$build]})"
done
