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
#                     on tmpfs, the recorded file made fresh
#   replay/fio        replay IOPS / fio IOPS
# The replay issues each request as the syscall that does the same, one at a time per recorded
# thread: a queue depth of 8 or 32 is replayed at depth 1 (see README, "Storage engines").
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
printf '%-12s %10s %13s %7s %5s %9s %10s %12s %10s\n' engine "fio IOPS" "recorded IOPS" "cost %" \
  lost complete B/request "replay IOPS" replay/fio
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
  rm -rf "$top/target" && mkdir "$top/target"
  "$fsrr" replay "$top/t.trace" "$top/target" --timing afap --no-progress --report "$top/r.json" \
    >/dev/null 2>&1 || true
  python3 - "$top/info.json" "$top/r.json" "$spec" "$fio_iops" "$rec_iops" "$size" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
try:
    r = json.load(open(sys.argv[2]))
except (OSError, ValueError):
    r = {"wall_ns": 0, "ops": {}}
fio, rec, size = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
requests = size * 256
writes = info["ops"].get("pwrite64", 0)
replay = writes / (r["wall_ns"] / 1e9) if r.get("wall_ns") else 0
print(f"{sys.argv[3].replace(' ', ' QD '):<12} {fio:>10.0f} {rec:>13.0f} {100 * (fio - rec) / fio:>7.1f} "
      f"{info['lost_events']:>5} {str(info['complete']):>9} {info['trace_bytes'] / requests:>10.2f} "
      f"{replay:>12.0f} {replay / fio:>10.2f}")
PY
done
