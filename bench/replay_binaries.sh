#!/usr/bin/env bash
# replay_binaries.sh [SCALE] [ROUNDS]: one recorded `cp -a` of the seed tree (SCALE 1: 111,100
# files) replayed on tmpfs with --timing afap by several fsrr binaries, interleaved round by
# round (default 7 rounds), for an A/B of two builds (a refactor must not cost time). Prints,
# per binary, the medians of the replay's own wall time (the report's wall_ns: the recorded
# operations, not the prepare) and of the whole `fsrr replay` command, and each binary's
# median divided by the first binary's. Run as root from the repository.
#   FSRR="old/fsrr new/fsrr"  the binaries (default build/cli/fsrr); the first records
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-1}
rounds=${2:-7}
read -r -a binaries <<<"${FSRR:-$PWD/build/cli/fsrr}"
work=$(mktemp -d /dev/shm/fsrr-replayab.XXXXXX)
trap 'rm -rf "$work"' EXIT

bench/make_seed_tree.sh "$work/src" "$scale"
echo "tree: $(find "$work/src" -type f | wc -l) files on tmpfs; $rounds rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"
"${binaries[0]}" record -o "$work/cp.trace" -- cp -a "$work/src" "$work/dst" >/dev/null 2>&1
rm -rf "$work/dst" "$work/src"
echo "trace: $("${binaries[0]}" info "$work/cp.trace" | sed -n 's/^events *//p')"

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
declare -A replay whole
for ((r = 1; r <= rounds; r++)); do
  for i in "${!binaries[@]}"; do
    rm -rf "$work/t"
    mkdir "$work/t"
    t0=$(date +%s%N)
    "${binaries[$i]}" replay "$work/cp.trace" "$work/t" --timing afap --no-progress \
      --report "$work/r.json" >/dev/null
    t1=$(date +%s%N)
    replay[$i]+="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_ns"])' "$work/r.json") "
    whole[$i]+="$((t1 - t0)) "
  done
done
rm -rf "$work/t"
base_r= base_w=
for i in "${!binaries[@]}"; do
  # shellcheck disable=SC2086
  mr=$(median ${replay[$i]})
  # shellcheck disable=SC2086
  mw=$(median ${whole[$i]})
  [[ -z $base_r ]] && base_r=$mr base_w=$mw
  awk -v b="${binaries[$i]}" -v mr="$mr" -v mw="$mw" -v br="$base_r" -v bw="$base_w" 'BEGIN {
    printf "%s: replay %.3f s (%.3fx the first), whole command %.3f s (%.3fx)\n",
           b, mr / 1e9, mr / br, mw / 1e9, mw / bw }'
done
