#!/usr/bin/env bash
# record_throughput.sh [SCALES] [ROUNDS]: does fsrr keep up with the fastest copies, at the
# scale users run them, on an idle machine and on a busy one? On the seed tree
# (100k x 1 KiB, 10k x 4 KiB, 1k x 10 KiB, 100 x 1000 KiB files) times each SCALE (default
# "0.2 1": 22,220 and 111,100 files) on tmpfs, records `cp -a` and `rsync -aAHX` ROUNDS times
# (default 3), idle and with two busy loops taking both cores, and prints per case (medians):
#   produced  the rate the traced copy issued syscalls at (events / the copy's own run time)
#   fsrr CPU  what fsrr itself spent per event (its threads; the BPF programs run in the copy's
#             time), and so the events per second one core of fsrr sustains
#   lost      events lost, most in one run, and in how many runs any were
#   pauses    times backpressure stopped the copy until fsrr caught up, and for how long
# Run as root from the repository after scripts/setup.sh.
#   FSRR="bin1 bin2"  fsrr binaries to compare side by side, interleaved (default build/cli/fsrr;
#                     one that does not print its CPU shows "-")
#   TOOLS="cp rsync"  which copies to run
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a scales <<<"${1:-0.2 1}"
rounds=${2:-3}
read -r -a binaries <<<"${FSRR:-$PWD/build/cli/fsrr}"
read -r -a tools <<<"${TOOLS:-cp rsync}"
work=$(mktemp -d /dev/shm/fsrr-throughput.XXXXXX)
busy=()
cleanup() {
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
field() { sed -n "s/$1/\1/p" "$2" | tail -n 1; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds"
for scale in "${scales[@]}"; do
  rm -rf "$work/src"
  bench/make_seed_tree.sh "$work/src" "$scale"
  files=$(find "$work/src" -type f | wc -l)
  for load in idle busy; do
    if [[ $load == busy ]]; then
      for _ in 1 2; do (while :; do :; done) & busy+=($!); done
    fi
    echo
    echo "== $files files, $load$([[ $load == busy ]] && echo ' (two busy loops: both cores taken)')"
    for name in "${tools[@]}"; do
      case $name in
        cp) tool="cp -a" src="$work/src" ;;
        rsync) tool="rsync -aAHX" src="$work/src/" ;;
        *) echo "unknown tool $name" >&2; exit 2 ;;
      esac
      for ((k = 0; k < ${#binaries[@]}; k++)); do
        rate=() cpu=() lost=() paused=() pause_s=() events=()
        lossy_runs=0
        for ((i = 0; i < rounds; i++)); do
          rm -rf "$work/dst"
          "${binaries[k]}" record -f -o "$work/t.trace" -- $tool "$src" "$work/dst" 2>"$work/log"
          # record: N events, L lost, B bytes (X bytes/event), D s → F
          n=$(field '^record: \([0-9]*\) events.*' "$work/log")
          l=$(field '^record: [0-9]* events, \([0-9]*\) lost.*' "$work/log")
          d=$(field '^record: .*bytes\/event), \([0-9.]*\) s .*' "$work/log")
          c=$(field '^record: fsrr used \([0-9.]*\) s of CPU.*' "$work/log")
          p=$(field '^record: the workload was stopped \([0-9]*\) times.*' "$work/log")
          ps=$(field '^record: the workload was stopped [0-9]* times, \([0-9.]*\) s in all.*' "$work/log")
          events+=("$n")
          lost+=("$l")
          [[ $l -gt 0 ]] && lossy_runs=$((lossy_runs + 1))
          rate+=("$(echo "$n / $d / 1000000" | bc -l)")
          [[ -n $c ]] && cpu+=("$(echo "$c * 1000000 / $n" | bc -l)")
          paused+=("${p:-0}")
          pause_s+=("${ps:-0}")
        done
        label="fsrr" && [[ ${#binaries[@]} -gt 1 ]] && label="fsrr #$k"
        us=$([[ ${#cpu[@]} -gt 0 ]] && median "${cpu[@]}" || echo "")
        printf '  %-12s %-8s %5.2f M events  produced %.2f M/s  fsrr CPU %s  lost %s (%d of %d runs)  pauses %s (%.3f s)\n' \
          "$tool" "$label" "$(echo "$(median "${events[@]}") / 1000000" | bc -l)" "$(median "${rate[@]}")" \
          "$([[ -n $us ]] && printf '%.2f us/event = %.2f M events/s per core' "$us" "$(echo "1 / $us" | bc -l)" || echo -)" \
          "$(printf '%s\n' "${lost[@]}" | sort -g | tail -n 1)" "$lossy_runs" "$rounds" \
          "$(median "${paused[@]}")" "$(median "${pause_s[@]}")"
        [[ ${#binaries[@]} -gt 1 ]] && echo "                        ${binaries[k]}"
      done
    done
    for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
    busy=()
  done
done
rm -rf "$work/dst"
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
