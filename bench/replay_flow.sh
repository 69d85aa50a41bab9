#!/usr/bin/env bash
# replay_flow.sh [SCALES] [ROUNDS]: what it costs a replay that copies copy. `rsync -aAHX` and
# `tar c | tar x` of the seed tree (100k x 1 KiB, 10k x 4 KiB, 1k x 10 KiB,
# 100 x 1000 KiB files) times each SCALE (default "0.2 1": 22,220 and 111,100 files) are
# recorded on tmpfs and replayed --timing afap --data random into fresh tmpfs targets, ROUNDS
# times (default 5). Prints per workload: the medians of the report's wall_ns, the bytes by
# origin (data_flow in the report), whether every destination file equals its replayed source
# (diff -r), and the data flow's own cost: the same trace through `fsrr info`, whose model pass
# is what the replay's dispatcher adds.
# FSRR_BEFORE=PATH: an fsrr built without the data flow, replayed interleaved with this one
# (its rounds and the ratio after / before are printed; the target is <= 1.05).
# WORKLOADS="rsync tar" (the default) picks them. Run as root from the repository after
# scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a scales <<<"${1:-0.2 1}"
rounds=${2:-5}
fsrr=$PWD/build/cli/fsrr
before=${FSRR_BEFORE:-}
work=$(mktemp -d /dev/shm/fsrr-flow-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
wall_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_ns"] / 1e9)' "$1"; }

# replay_once BINARY TRACE REPORT: one afap replay into a fresh target; prints its wall (s).
replay_once() {
  rm -rf "$work/t"
  mkdir "$work/t"
  "$1" replay "$2" "$work/t" --timing afap --data random --no-progress --report "$3" >/dev/null
  wall_of "$3"
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds"
for scale in "${scales[@]}"; do
  rm -rf "$work/src"
  bench/make_seed_tree.sh "$work/src" "$scale"
  files=$(find "$work/src" -type f | wc -l)
  for name in ${WORKLOADS:-rsync tar}; do
    rm -rf "$work/dst"
    case $name in
      rsync) (cd "$work" && "$fsrr" record -f -o "$name.trace" -- rsync -aAHX src/ dst 2>/dev/null) ;;
      tar) (cd "$work" && mkdir dst && "$fsrr" record -f -o "$name.trace" -- \
              sh -c 'tar -C src -cf - . | tar -C dst -xf -' 2>/dev/null) ;;
    esac
    rm -rf "$work/dst"
    trace=$work/$name.trace
    echo
    echo "== $files files, $name, $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' <("$fsrr" info "$trace" --json)) events"
    new=() old=()
    for ((r = 0; r < rounds; r++)); do
      new+=("$(replay_once "$fsrr" "$trace" "$work/new.json")")
      [[ -n $before ]] && old+=("$(replay_once "$before" "$trace" "$work/old.json")")
    done
    echo "replay (afap, wall_ns) median $(median "${new[@]}") s  rounds: ${new[*]}"
    if [[ -n $before ]]; then
      m_new=$(median "${new[@]}") m_old=$(median "${old[@]}")
      echo "before the data flow: median $m_old s  rounds: ${old[*]}"
      echo "ratio after / before: $(echo "scale=3; $m_new / $m_old" | bc) (target <= 1.05)"
    fi
    # the last target of this build: copies equal their sources?
    replay_once "$fsrr" "$trace" "$work/new.json" >/dev/null
    if diff -r "$work/t$work/src" "$work/t$work/dst" >/dev/null; then
      echo "every destination file equals its replayed source (diff -r)"
    else
      echo "DIFFERENT: diff -r of source and destination after the replay found differences"
    fi
    python3 - "$work/new.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["data_flow"]
w = f["written_from"]
mib = lambda b: f"{b / 1048576:.1f} MiB"
print("written from: " + ", ".join(f"{k} {mib(v)}" for k, v in w.items()) +
      f"; through pipes {mib(f['stream_bytes']['pipes'])}, sockets {mib(f['stream_bytes']['sockets'])}")
PY
    start=$(date +%s.%N)
    "$fsrr" info "$trace" >/dev/null
    echo "fsrr info (decode + the data flow model over the trace): $(echo "$(date +%s.%N) - $start" | bc | cut -c1-5) s"
  done
done
