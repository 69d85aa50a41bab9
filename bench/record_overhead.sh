#!/usr/bin/env bash
# record_overhead.sh [SCALE] [ROUNDS]: what recording costs a real copy. On the seed tree
# (bench/make_seed_tree.sh; SCALE 0.2: 22,220 files, 1: 111,100) on tmpfs, runs `cp -a` and
# `rsync -aAHX` natively, under `fsrr record`, under the floor recorders and under `strace -f`,
# interleaved, ROUNDS times (default 5), and prints medians and ratios. Targets: the time
# `fsrr record` adds to the whole command at most 1.20x what the minimal floor recorder (what
# any syscall-tracepoint recorder costs on this kernel) adds, printed as
#   added cost = (fsrr - native) / (minimal - native)
# of whole-command medians (and of each one's fastest round beside it); 0 lost events; <= 3
# trace bytes per recorded syscall.
#
# "traced" is the wall time of the whole `fsrr record -- CMD` (BPF load and the final drain
# included); "workload" is the command's own run time as fsrr measured it (exec to exit).
# Run as root from the repository after scripts/setup.sh.
#   FSRR="bin1 bin2"  fsrr binaries to compare, each interleaved with the others
#                     (default build/cli/fsrr)
#   TOOLS="cp rsync"  which copies to run
#   STRACE=0          skip the strace runs (they take ~40x as long as the copy)
#                     A binary run with FSRR_BENCH_DISCARD=1 in its environment (a wrapper
#                     script) takes the records from the ring buffer and drops them: fsrr's
#                     programs without its decoder, to tell the kernel side's cost from the
#                     user side's.
#   FLOOR=0           skip the floor runs: the copy under build/bench/probe_floor, i.e. with
#                     empty tp_btf sys_enter/sys_exit programs, and with the least a recorder
#                     can do (entry time + a 32-byte record per syscall); see probe_floor.bpf.c
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-0.2}
rounds=${2:-5}
read -r -a binaries <<<"${FSRR:-$PWD/build/cli/fsrr}"
read -r -a tools <<<"${TOOLS:-cp rsync}"
with_strace=${STRACE:-1}
with_floor=${FLOOR:-1}
floor=$PWD/build/bench/probe_floor
work=$(mktemp -d /dev/shm/fsrr-recbench.XXXXXX)
trap 'rm -rf "$work"' EXIT

bench/make_seed_tree.sh "$work/src" "$scale"
echo "tree: $(find "$work/src" -type f | wc -l) files, $(du -sh --apparent-size "$work/src" | cut -f1) on tmpfs; $rounds rounds"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

ns() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
secs() { echo "$1 / 1000000000" | bc -l; }
# From fsrr record's closing line: "record: N events, L lost, B bytes (X bytes/event), D s → F"
lost_of() { sed -n 's/^record: [0-9]* events, \([0-9]*\) lost.*/\1/p' "$1" | tail -n 1; }
duration_of() { sed -n 's/^record: .*bytes\/event), \([0-9.]*\) s .*/\1/p' "$1" | tail -n 1; }

for name in "${tools[@]}"; do
  case $name in
    cp) tool="cp -a" src="$work/src" ;;
    rsync) tool="rsync -aAHX" src="$work/src/" ;;
    *) echo "unknown tool $name" >&2; exit 2 ;;
  esac
  native=() straced=()
  declare -A traced=() workload=() lost=() floors=() floor_whole=()
  for ((i = 0; i < rounds; i++)); do
    rm -rf "$work/dst"
    a=$(ns); $tool "$src" "$work/dst"; b=$(ns)
    native+=("$(( b - a ))")

    for ((k = 0; k < ${#binaries[@]}; k++)); do
      rm -rf "$work/dst"
      a=$(ns)
      "${binaries[k]}" record -f -o "$work/$name.$k.trace" -- $tool "$src" "$work/dst" 2>"$work/record.err"
      b=$(ns)
      traced[$k]+=" $(( b - a ))"
      workload[$k]+=" $(echo "$(duration_of "$work/record.err") * 1000000000" | bc | cut -d. -f1)"
      lost[$k]+=" $(lost_of "$work/record.err")"
    done

    if [ "$with_floor" != 0 ]; then
      for variant in empty minimal; do  # the command's own run time, as probe_floor measured it
        rm -rf "$work/dst"
        a=$(ns)
        "$floor" "$variant" -- $tool "$src" "$work/dst" 2>"$work/floor.err"
        b=$(ns)
        floor_whole[$variant]+=" $(( b - a ))"
        floors[$variant]+=" $(sed -n 's/.*workload \([0-9.]*\) s$/\1/p' "$work/floor.err" | awk '{printf "%.0f", $1 * 1e9}')"
      done
    fi

    if [ "$with_strace" != 0 ]; then
      rm -rf "$work/dst"
      a=$(ns); strace -f -o /dev/null -- $tool "$src" "$work/dst"; b=$(ns)
      straced+=("$(( b - a ))")
    fi
  done
  rm -rf "$work/dst"

  n=$(median "${native[@]}")
  echo
  echo "$tool"
  printf '  native      %8.3f s\n' "$(secs "$n")"
  for ((k = 0; k < ${#binaries[@]}; k++)); do
    # shellcheck disable=SC2086
    t=$(median ${traced[$k]})
    # shellcheck disable=SC2086
    w=$(median ${workload[$k]})
    # shellcheck disable=SC2086
    max_lost=$(printf '%s\n' ${lost[$k]} | sort -g | tail -n 1)
    read -r events syscalls bytes < <("${binaries[k]}" info "$work/$name.$k.trace" --json | python3 -c '
import json, sys
i = json.load(sys.stdin)
pseudo = i["ops"].get("fd_bind", 0) + i["ops"].get("exit", 0)
print(i["events"], i["events"] - pseudo, i["trace_bytes"])')
    label="fsrr record" && [ ${#binaries[@]} -gt 1 ] && label="fsrr #$k"
    printf '  %-11s %8.3f s   fsrr / native %.2f   workload alone %.3f s, ratio %.2f\n' \
      "$label" "$(secs "$t")" "$(echo "$t / $n" | bc -l)" "$(secs "$w")" "$(echo "$w / $n" | bc -l)"
    [ ${#binaries[@]} -gt 1 ] && echo "              ${binaries[k]}"
    printf '              lost events %s (max over runs; target 0)\n' "$max_lost"
    if ((syscalls > 0)); then
      printf '              trace %s bytes, %s events, %s recorded syscalls: %.2f bytes/syscall (target <= 3)\n' \
        "$bytes" "$events" "$syscalls" "$(echo "$bytes / $syscalls" | bc -l)"
    else  # FSRR_BENCH_DISCARD=1: the programs ran, the decoder dropped their records
      printf '              trace %s bytes, no events (records dropped undecoded)\n' "$bytes"
    fi
  done
  if [ "$with_floor" != 0 ]; then
    for variant in empty minimal; do
      # shellcheck disable=SC2086
      f=$(median ${floors[$variant]})
      # shellcheck disable=SC2086
      fw=$(median ${floor_whole[$variant]})
      printf '  floor %-7s %6.3f s   ratio %.2f                      workload alone %.3f s, ratio %.2f\n' \
        "$variant" "$(secs "$fw")" "$(echo "$fw / $n" | bc -l)" "$(secs "$f")" "$(echo "$f / $n" | bc -l)"
    done
    # Issue 13.1's figure: whole commands, fsrr against the least a recorder can do.
    # shellcheck disable=SC2086
    fw=$(median ${floor_whole[minimal]})
    for ((k = 0; k < ${#binaries[@]}; k++)); do
      # shellcheck disable=SC2086
      t=$(median ${traced[$k]})
      # shellcheck disable=SC2086
      w=$(median ${workload[$k]})
      # shellcheck disable=SC2086
      f=$(median ${floors[minimal]})
      printf '  fsrr%s / floor minimal: whole command %.2f, workload alone %.2f (ratios of times, not the target)\n' \
        "$([ ${#binaries[@]} -gt 1 ] && echo " #$k")" "$(echo "$t / $fw" | bc -l)" "$(echo "$w / $f" | bc -l)"
      # The target: what fsrr adds over what the minimal recorder adds, whole commands.
      # shellcheck disable=SC2086
      tmin=$(printf '%s\n' ${traced[$k]} | sort -g | head -n 1)
      # shellcheck disable=SC2086
      fmin=$(printf '%s\n' ${floor_whole[minimal]} | sort -g | head -n 1)
      nmin=$(printf '%s\n' "${native[@]}" | sort -g | head -n 1)
      printf '  added cost%s = (fsrr - native) / (minimal - native) = (%.3f - %.3f) / (%.3f - %.3f) = %.2f (target <= 1.20); fastest rounds: %.2f\n' \
        "$([ ${#binaries[@]} -gt 1 ] && echo " #$k")" "$(secs "$t")" "$(secs "$n")" "$(secs "$fw")" "$(secs "$n")" \
        "$(echo "($t - $n) / ($fw - $n)" | bc -l)" "$(echo "($tmin - $nmin) / ($fmin - $nmin)" | bc -l)"
    done
  fi
  if [ "$with_strace" != 0 ]; then
    s=$(median "${straced[@]}")
    printf '  strace -f   %8.3f s   ratio %.2f\n' "$(secs "$s")" "$(echo "$s / $n" | bc -l)"
  fi
  unset traced workload lost floors floor_whole
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
