#!/usr/bin/env bash
# replay_copy.sh [SCALE] [ROUNDS]: `cp -a` of the seed tree (SCALE 0.2: 22,220
# files) on tmpfs, native and replayed with --timing afap, in interleaved rounds (default 7);
# prints the medians of wall, user and sys time and the ratio replay / native (target <= 1.0).
# The replay runs through the library as `fsrr replay --timing afap` does (bench_replay_copy);
# its figures cover the recorded operations only (the report's wall_ns), not the prepare step
# that builds the source tree, and user/sys include the thread that decodes ahead. The prepared
# tree is read once before the replay, as the native side's source was by the recording and
# the rounds before (FSRR_BENCH_COLD=1: not). Machine load can swing single rounds by 20%: the
# load average and whether an eBPF recorder is attached (every syscall then costs more) are
# printed with the figures. Run as root from the repository; `fsrr` (for recording and verify)
# is optional.
#
# Where the cp -a trace comes from (FSRR_BENCH_TRACE):
#   auto       a real recording if `fsrr record` works here, else synthetic (the default)
#   record     `fsrr record -- cp -a SRC DST`; also replays rsync -aAHX the same way
#   synthetic  bench_replay_copy writes the trace coreutils 9's cp -a would record (no BPF)
# FSRR_BENCH_BUILD: the build directory (default build); FSRR_BENCH_PIN: a CPU list both sides
# are pinned to with taskset (default: not pinned); FSRR_BENCH_INLINE_DECODE=1: no decoding
# ahead on a second thread.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-0.2}
rounds=${2:-7}
build=${FSRR_BENCH_BUILD:-build}
[[ $build == /* ]] || build=$PWD/$build
source_mode=${FSRR_BENCH_TRACE:-auto}
fsrr=$build/cli/fsrr
tool=$build/bench/bench_replay_copy
pin=()
[[ -n ${FSRR_BENCH_PIN:-} ]] && pin=(taskset -c "$FSRR_BENCH_PIN")
# Other files on the tmpfs slow the replay side more than the native one: the full-scale cp
# measured 1.00x with /dev/shm empty and 1.31x beside a 2.4 GiB file there (same hour, 5
# rounds each). The figure is printed with the results.
shm_used=$(df -BM --output=used /dev/shm | tail -1 | tr -d ' M')
work=$(mktemp -d /dev/shm/fsrr-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

bench/make_seed_tree.sh "$work/src" "$scale"
echo "tree: $(find "$work/src" -type f | wc -l) files, $(du -sh --apparent-size "$work/src" | cut -f1)"

if [[ $source_mode == auto ]]; then
  source_mode=synthetic
  mkdir "$work/probe"
  if [[ -x $fsrr ]] && "$fsrr" record -o "$work/probe.trace" -- true >/dev/null 2>&1; then
    source_mode=record
  fi
  rm -rf "$work/probe" "$work/probe.trace"
fi

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# bench NAME COMMAND ARGS...: interleaved native and replay rounds of `COMMAND ARGS... SRC/ DST`.
bench() {
  local name=$1 trace=$work/$1.trace
  shift
  if [[ $source_mode == record ]]; then
    "$fsrr" record -o "$trace" -- "$@" "$work/src/" "$work/rec" >/dev/null
  else
    "$tool" trace "$work/src/" "$work/rec" "$trace"
  fi
  rm -rf "$work/rec"
  local -a nw=() nu=() ns=() rw=() ru=() rs=()
  local i n r
  for ((i = 0; i < rounds; i++)); do
    # Alternate which side goes first, so a slow stretch of the machine hits both alike.
    for side in $((i % 2)) $((1 - i % 2)); do
      if ((side == 0)); then
        read -r -a n < <("${pin[@]}" "$tool" native "$@" "$work/src/" "$work/native")
        nw+=("${n[0]}") nu+=("${n[1]}") ns+=("${n[2]}")
        rm -rf "$work/native"
      else
        mkdir "$work/replay"
        read -r -a r < <("${pin[@]}" "$tool" replay "$trace" "$work/replay")
        rw+=("${r[0]}") ru+=("${r[1]}") rs+=("${r[2]}")
        ((r[4] == 0)) || echo "  $name replay: ${r[4]} results differ from the recording" >&2
        rm -rf "$work/replay"
      fi
    done
  done
  echo "$name ($source_mode trace, ${r[3]} events), medians of $rounds interleaved rounds:"
  printf '  native  wall %.3f s  user %.3f s  sys %.3f s\n' \
    "$(median "${nw[@]}")" "$(median "${nu[@]}")" "$(median "${ns[@]}")"
  printf '  replay  wall %.3f s  user %.3f s  sys %.3f s  (afap, events only)\n' \
    "$(median "${rw[@]}")" "$(median "${ru[@]}")" "$(median "${rs[@]}")"
  printf '  ratio   %.3f (target <= 1.0)\n' "$(echo "$(median "${rw[@]}") / $(median "${nw[@]}")" | bc -l)"
  echo "  native walls: ${nw[*]}"
  echo "  replay walls: ${rw[*]}"
  if [[ -x $fsrr ]]; then  # one more replay, checked against the end state the trace implies
    mkdir "$work/replay"
    "$tool" replay "$trace" "$work/replay" >/dev/null
    echo "  $("$fsrr" verify "$trace" "$work/replay" 2>&1 | tail -1)"
    rm -rf "$work/replay"
  fi
}

bench cp cp -a
if [[ $source_mode == record ]]; then
  bench rsync rsync -aAHX
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); eBPF programs attached by fsrr: $(bpftool prog list 2>/dev/null | grep -c fsrr || true); /dev/shm held ${shm_used} MiB before this bench"
