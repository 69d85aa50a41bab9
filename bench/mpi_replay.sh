#!/usr/bin/env bash
# mpi_replay.sh [FILES] [ROUNDS]: the MPI replay on this machine. Records (as root, with eBPF)
# two hosts' worth of work at once, each four cp -a of FILES files (default 1000, 4 KiB) and a
# log all eight append to, and merges the two traces (fsrr merge); replays the merged trace into
# tmpfs with plain `fsrr replay` and with `mpirun -n 1, 2, 4 fsrr replay --mpi`, afap (wall
# time, events/s, start skew, waits for another rank's op; medians of ROUNDS, default 3), and
# per rank the time to read the trace's tables, to have the plan, and the peak RSS. FILES=13888
# is the seed tree's count: 8 x 13,888 = 111,104 files. Then records four paced writers (bench/paced_writer.py, 3 s each, at once) and
# replays them faithfully the same ways: the duration error, the start skew and each rank's
# lateness p99.
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-1000}
rounds=${2:-3}
build=${FSRR_BENCH_BUILD:-build}
[[ $build == /* ]] || build=$PWD/$build
fsrr=$build/cli/fsrr
# --bind-to none: a rank runs a replay thread per recorded thread; bound to one core (mpirun's
# default for up to 2 ranks) they would take turns on it
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
work=$(mktemp -d /dev/shm/fsrr-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
for p in 1 2 3 4 5 6 7 8; do
  mkdir -p "$work/src/part$p"
  for ((i = 0; i < files; i++)); do head -c 4096 /dev/zero >"$work/src/part$p/f$i"; done
done
# Two recordings made at once, as two client hosts of one shared directory would make them,
# merged into one trace (fsrr merge): each host copies four parts, all eight append to one log.
mkdir -p "$work/copy"
cat >"$work/copy.sh" <<'SH'
for p in "$@"; do
  ( cp -a src/part$p copy/part$p; echo "part $p copied" >> copy/log ) &
done
wait
SH
(cd "$work" && { "$fsrr" record -o "$work/a.trace" -- sh copy.sh 1 2 3 4 >/dev/null 2>"$work/a.log" &
  "$fsrr" record -o "$work/b.trace" -- sh copy.sh 5 6 7 8 >/dev/null 2>"$work/b.log"; wait; })
"$fsrr" merge "$work/a.trace" "$work/b.trace" -o "$work/t.trace" >/dev/null
"$fsrr" info "$work/t.trace" --json >"$work/info.json"
mkdir -p "$work/paced"
for w in 1 2 3 4; do mkdir -p "$work/paced/w$w"; done
"$fsrr" record -o "$work/paced.trace" -- sh -c "for w in 1 2 3 4; do /usr/bin/python3 \
  $PWD/bench/paced_writer.py $work/paced/w\$w 3 & done; wait" >/dev/null 2>>"$work/record.log"
"$fsrr" info "$work/paced.trace" --json >"$work/paced.json"

# One replay into a fresh target; prints the report's path.
replay() {  # NAME RANKS TIMING TRACE
  local target=$work/target report=$work/$1.json
  rm -rf "$target" && mkdir "$target"
  if [[ $2 == 0 ]]; then
    "$fsrr" replay "$4" "$target" --timing "$3" --no-progress --report "$report" >/dev/null
  else
    "${mpirun[@]}" -n "$2" "$fsrr" replay --mpi "$4" "$target" --timing "$3" \
      --report "$report" >/dev/null 2>"$work/$1.err"
  fi
  echo "$report"
}

reports=()
for ((r = 1; r <= rounds; r++)); do  # interleaved: noise hits every row alike
  for n in 0 1 2 4; do reports+=("$n:$(replay "afap-$n-$r" "$n" afap "$work/t.trace")"); done
done
for n in 0 1 2 4; do
  reports+=("f$n:$(replay "faithful-$n" "$n" faithful "$work/paced.trace")")
done
python3 - "$work/info.json" "$work/paced.json" "${reports[@]}" <<'PY'
import json, statistics, sys
info = json.load(open(sys.argv[1]))
paced = json.load(open(sys.argv[2]))
runs = {}
for arg in sys.argv[3:]:
    key, path = arg.split(":", 1)
    runs.setdefault(key, []).append(json.load(open(path)))
print(f"merged trace of {len(info.get('hosts', [])) or 1} hosts: {info['events']} events, "
      f"{info['processes']} processes, {info['threads']} threads, "
      f"{info['duration_ns'] / 1e9:.3f} s recorded")
print(f"\nafap into tmpfs, median of {len(runs['0'])} (min-max)")
print(f"{'ranks':<14}{'wall s':>18}{'events/s':>12}{'skew us':>10}{'waits':>8}{'mism.':>7}  events by rank")
for key in ["0", "1", "2", "4"]:
    rs = runs[key]
    walls = sorted(r["wall_ns"] / 1e9 for r in rs)
    wall = statistics.median(walls)
    ev = rs[0]["events"]
    skew = statistics.median(r.get("start_skew_ns", 0) for r in rs) / 1e3
    waits = statistics.median(r.get("dependency_waits", 0) for r in rs)
    name = "plain replay" if key == "0" else f"mpirun -n {key}"
    by_rank = " ".join(f"{k['events']} (host {','.join(map(str, k['recorded_hosts']))})"
                       for k in rs[0].get("ranks", []))
    print(f"{name:<14}{wall:>8.3f} ({walls[0]:.3f}-{walls[-1]:.3f}){ev / wall:>12.0f}{skew:>10.1f}"
          f"{waits:>8.0f}{max(r['mismatches'] for r in rs):>7}  {by_rank}")
print("\nper rank, afap, median of the rounds: start = reading the trace's tables (open) + the plan "
      "(rank 0 works it out from two passes over the events; the others receive it); peak RSS of "
      "the rank's process")
print(f"{'ranks':<14}{'rank':>5}{'events':>10}{'open s':>9}{'plan s':>9}{'peak RSS MiB':>14}")
for key in ["1", "2", "4"]:
    rs = runs[key]
    for k in range(len(rs[0].get("ranks", []))):
        rows = [r["ranks"][k] for r in rs]
        med = lambda f: statistics.median(row[f] for row in rows)
        print(f"{'mpirun -n ' + key:<14}{k:>5}{rows[0]['events']:>10}{med('open_ns') / 1e9:>9.3f}"
              f"{med('plan_ns') / 1e9:>9.3f}{med('peak_rss_bytes') / 2**20:>14.1f}")
print(f"\nfaithful into tmpfs: four paced writers, {paced['events']} events, "
      f"{paced['duration_ns'] / 1e9:.3f} s recorded; lateness in us")
for key in ["f0", "f1", "f2", "f4"]:
    r = runs[key][0]
    err = 100 * (r["wall_ns"] - paced["duration_ns"]) / paced["duration_ns"]
    name = "plain replay" if key == "f0" else f"mpirun -n {key[1:]}"
    late = " ".join(f"{k['lateness_ns']['p99'] / 1e3:.0f}" for k in r.get("ranks", []))
    print(f"{name:<14}wall {r['wall_ns'] / 1e9:.3f} s ({err:+.2f}%), skew "
          f"{r.get('start_skew_ns', 0) / 1e3:.1f} us, p99 {r['lateness_ns']['p99'] / 1e3:.0f} "
          f"(by rank: {late or '-'}), max {r['lateness_ns']['max'] / 1e3:.0f}, "
          f"mismatches {r['mismatches']}")
PY
