#!/usr/bin/env bash
# replay_lateness.sh [ROUNDS] [SCALE]: how late a faithful replay issues its ops, for three
# workloads recorded here, each replayed ROUNDS times (default 3) on tmpfs:
#   shell   a sh loop of short processes (echo, cat | wc, sleep 0.0N; 120 rounds, ~4 s), as
#           build scripts and package managers start them
#   paced   one python process writing 50 files with pauses of 1-50 ms (12 s)
#   rsync   rsync -aAHX of the seed tree at SCALE (default 1: 111,100 files; 0 leaves it out)
#   rsync/2 the same trace at --speed 0.5: half the CPU a second, to tell what the machine's
#           two cores cost (the full-speed replay keeps them ~73% busy, as the copy did) from
#           what the replayer's scheduling costs
# Each replay runs twice a round, interleaved: as by default, and with --realtime (the replay's
# threads SCHED_FIFO; as root only). For each workload and way: the recorded and replayed
# durations (target: within 1%) and the lateness percentiles of the median round (target: p99
# <= 200 us). Lateness is the time an op was issued after it was due; it measures the machine
# too: run on an otherwise idle box (a compile beside it costs milliseconds at p99 on 2 cores).
# Beside it, the part the ops' own durations force (the report's op_bound_lateness_ns): how
# late a replayer that cost nothing would have been, each op issued when due or when its
# thread's previous op returned, with the latencies the round measured. And for each trace at
# its own speed, the schedule's floor (build/bench/schedule_floor, as many rounds): the same
# threads, made and waiting as a replay's are, issuing nothing: what any replayer of that
# schedule pays on this machine. Last on a line, the median round's cpu_moves: how often its
# threads moved themselves off a CPU another replay thread claimed (replayer/cpu_spread.h).
#   BUSY=N  run the replays (not the recordings) beside N CPU-bound loops at the default
#           priority, as a machine that does other work: each replay then gets its fair share
#           of the CPUs, and how soon a due op gets its CPU is the scheduler's slice.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
scale=${2:-1}
build=${FSRR_BENCH_BUILD:-build}  # the build directory, as for replay_copy.sh
[[ $build == /* ]] || build=$PWD/$build
fsrr=$build/cli/fsrr
busy=${BUSY:-0}
work=$(mktemp -d /dev/shm/fsrr-bench.XXXXXX)
hogs=()
stop_hogs() {
  if ((${#hogs[@]})); then kill "${hogs[@]}" 2>/dev/null || true; wait "${hogs[@]}" 2>/dev/null || true; fi
  hogs=()
}
trap 'stop_hogs; rm -rf "$work"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

cat >"$work/loop.sh" <<'SH'
#!/bin/sh
out=$1
i=0
while [ $i -lt 120 ]; do
  echo "round $i" >"$out/r$((i % 10))"
  cat "$out/r$((i % 10))" | wc -c >"$out/count"
  sleep 0.0$((i % 5 + 1))
  i=$((i + 1))
done
SH
chmod +x "$work/loop.sh"

record() {  # NAME DIR COMMAND...: records COMMAND run in DIR
  local name=$1 dir=$2
  shift 2
  (cd "$dir" && "$fsrr" record -o "$work/$name.trace" -- "$@" >/dev/null 2>"$work/$name.rec")
}

mkdir -p "$work/shell" "$work/paced"
record shell "$work/shell" "$work/loop.sh" "$work/shell"
# Debian's python3 itself: one on PATH may be a shim (pyenv's starts 40 processes of bash)
record paced "$work/paced" /usr/bin/python3 "$PWD/bench/paced_writer.py" "$work/paced" 12
workloads="shell paced"
if [[ $scale != 0 ]]; then
  bench/make_seed_tree.sh "$work/rsync-src" "$scale" >/dev/null
  record rsync "$work" rsync -aAHX rsync-src/ rsync-dst
  rm -rf "$work/rsync-dst"
  workloads="$workloads rsync rsync/2"
fi

ways="default"
chrt -f 2 true 2>/dev/null && ways="default realtime"  # SCHED_FIFO 2 is allowed here
for ((k = 0; k < busy; k++)); do
  bash -c 'while :; do :; done' &
  hogs+=($!)
done
((busy)) && echo "replays beside $busy CPU-bound loops"
for w in $workloads; do
  trace=${w%/2} speed=1
  [[ $w == */2 ]] && speed=0.5
  tag=${w/\//-half}
  for r in $(seq "$rounds"); do
    for way in $ways; do
      extra=()
      [[ $way == realtime ]] && extra=(--realtime)
      rm -rf "$work/target"
      mkdir "$work/target"
      "$fsrr" replay "$work/$trace.trace" "$work/target" --timing faithful --speed "$speed" \
        --no-progress "${extra[@]}" --report "$work/$tag.$way.$r.json" >/dev/null
    done
  done
  rm -rf "$work/target"
  for way in $ways; do
    python3 - "$fsrr" "$work/$trace.trace" "$w" "$way" "$speed" "$work"/"$tag".$way.*.json <<'PY'
import json, subprocess, sys
fsrr, trace, name, way, speed, reports = sys.argv[1:6] + [sys.argv[6:]]
info = json.loads(subprocess.check_output([fsrr, "info", trace, "--json"]))
rec = info["duration_ns"] / 1e9 / float(speed)  # as the replay should take
runs = sorted((json.load(open(p)) for p in reports), key=lambda j: j["lateness_ns"]["p99"])
mid = runs[len(runs) // 2]
late = mid["lateness_ns"]
bound = mid["op_bound_lateness_ns"]  # what a replayer that cost nothing would have had
got = mid["wall_ns"] / 1e9
p99s = ", ".join(f"{j['lateness_ns']['p99'] / 1e3:.0f}" for j in runs)
due = "recorded" if float(speed) == 1 else f"recorded x {1 / float(speed):g}"
print(f"{name:7} {way:8} {info['events']:>9} events, {info['threads']:>4} threads: {due} "
      f"{rec:.3f} s, replayed {got:.3f} s ({100 * (got - rec) / rec:+.2f}%), lateness p50 "
      f"{late['p50'] / 1e3:.0f} us, p99 {late['p99'] / 1e3:.0f} us, max {late['max'] / 1e3:.0f} us "
      f"(p99 of the {len(runs)} rounds: {p99s} us; target <= 200); the ops' own durations "
      f"alone: p99 {bound['p99'] / 1e3:.0f} us, max {bound['max'] / 1e3:.0f} us; "
      f"{mid.get('cpu_moves', 0)} CPU moves")
PY
    if [[ $speed == 1 ]]; then
      extra=()
      [[ $way == realtime ]] && extra=(--realtime)
      "$build/bench/schedule_floor" "$work/$trace.trace" "$rounds" "${extra[@]}" |
        python3 -c '
import re, sys
p99 = sorted(float(m.group(1)) for m in re.finditer(r"p99 ([0-9.]+) us", sys.stdin.read()))
print(" " * 17 + f"the schedule alone, no ops (schedule_floor): p99 of the {len(p99)} rounds: "
      + ", ".join(f"{x:.0f}" for x in p99) + " us")'
    fi
  done
done
