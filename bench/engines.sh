#!/usr/bin/env bash
# engines.sh [SIZE_MiB]: I/O submitted without a syscall per operation, recorded and replayed.
# fio writes SIZE_MiB (default 64) in 4 KiB blocks at random offsets (--randrepeat=1) to a file
# on tmpfs with each engine: io_uring at queue depth 1, 8 and 32, libaio (O_DIRECT) at 32, and
# mmap. Per engine, side by side in one run (fio alone, then under `fsrr record`, alternated
# ROUNDS times, default 3; the medians):
#   fio IOPS          fio's own write IOPS, not recorded
#   recorded IOPS     the same run under `fsrr record`
#   cost %            (fio IOPS - recorded IOPS) / fio IOPS: the recording's cost to fio
#   lost              events the recording lost (must be 0)
#   complete          the trace says so
#   B/request         the trace's bytes / the requests fio made (blocks written)
#   replay IOPS       writes replayed / the replay's wall time (its report's wall_ns), afap
#                     on tmpfs, the recorded file made fresh, through the same engine
#   replay/fio        replay IOPS / fio IOPS
#   QD rep/rec        the mean number of requests in flight at each submission, in that replay
#                     / in the recording (its report's engines.*.mean_in_flight and
#                     recorded_mean_in_flight)
#   syscalls/fio      the afap replay with --engines syscalls (one request at a time), its
#                     IOPS / fio IOPS
#   faithful          the trace's duration / the wall time of a replay with faithful timing
#                     (1.00: as long as the recorded run)
# As root, from the repository, after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-64}
rounds=${ROUNDS:-3}
build=${FSRR_BENCH_BUILD:-build}
[[ $build == /* ]] || build=$PWD/$build
fsrr=$build/cli/fsrr
top=$(mktemp -d /dev/shm/fsrr-bench-engines.XXXXXX)
trap 'rm -rf "$top"' EXIT

engines=("io_uring 1" "io_uring 8" "io_uring 32" "libaio 32" "mmap 1")
echo "fio randwrite 4 KiB x ${size} MiB on tmpfs, median of $rounds; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %10s %13s %7s %5s %9s %10s %12s %10s %11s %12s %9s\n' engine "fio IOPS" \
  "recorded IOPS" "cost %" lost complete B/request "replay IOPS" replay/fio "QD rep/rec" \
  syscalls/fio faithful
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for spec in "${engines[@]}"; do
  read -r engine depth <<<"$spec"
  opts=(--name=b --filename="$top/f" --ioengine="$engine" --rw=randwrite --bs=4k --size="${size}m"
        --iodepth="$depth" --randrepeat=1 --output-format=json)
  [[ $engine == libaio ]] && opts+=(--direct=1)
  plain=() recorded=()
  for ((r = 0; r < rounds; r++)); do
    rm -f "$top/f" "$top/t.trace"
    fio "${opts[@]}" --output="$top/plain.json" >/dev/null 2>&1
    plain+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["write"]["iops"])' "$top/plain.json")")
    rm -f "$top/f"
    "$fsrr" record -o "$top/t.trace" -- fio "${opts[@]}" --output="$top/rec.json" >/dev/null 2>&1
    recorded+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["write"]["iops"])' "$top/rec.json")")
  done
  fio_iops=$(printf '%s\n' "${plain[@]}" | median)
  rec_iops=$(printf '%s\n' "${recorded[@]}" | median)
  "$fsrr" info "$top/t.trace" --json >"$top/info.json"
  replay() {  # NAME, replay options...
    local name=$1
    shift
    rm -rf "$top/target" && mkdir "$top/target"
    "$fsrr" replay "$top/t.trace" "$top/target" --no-progress --report "$top/$name.json" "$@" \
      >/dev/null 2>&1 || true
  }
  replay same --timing afap
  replay syscalls --timing afap --engines syscalls
  replay faithful
  python3 - "$top" "$spec" "$fio_iops" "$rec_iops" "$size" <<'PY'
import json, sys
top = sys.argv[1]
info = json.load(open(f"{top}/info.json"))
def report(name):
    try:
        return json.load(open(f"{top}/{name}.json"))
    except (OSError, ValueError):
        return {"wall_ns": 0, "ops": {}, "engines": {}}
fio, rec, size = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
requests = size * 256
writes = info["ops"].get("pwrite64", 0)
iops = lambda r: writes / (r["wall_ns"] / 1e9) if r.get("wall_ns") else 0
same, syscalls, faithful = report("same"), report("syscalls"), report("faithful")
engine = {"io_uring": "io_uring", "libaio": "aio", "mmap": "mapped"}[sys.argv[2].split()[0]]
e = same.get("engines", {}).get(engine, {})
qd = (f"{e['mean_in_flight']:.1f}/{e['recorded_mean_in_flight']:.1f}"
      if e.get("recorded_mean_in_flight") else "-")
ratio = info["duration_ns"] / faithful["wall_ns"] if faithful.get("wall_ns") else 0
print(f"{sys.argv[2].replace(' ', ' QD '):<12} {fio:>10.0f} {rec:>13.0f} {100 * (fio - rec) / fio:>7.1f} "
      f"{info['lost_events']:>5} {str(info['complete']):>9} {info['trace_bytes'] / requests:>10.2f} "
      f"{iops(same):>12.0f} {iops(same) / fio:>10.2f} {qd:>11} {iops(syscalls) / fio:>12.2f} "
      f"{ratio:>9.2f}")
PY
done
