#!/usr/bin/env bash
# scale.sh [COUNTS] [SIZE]: does fsrr stay linear in time and flat in memory as the tree grows?
# For each file count in COUNTS (default "100000 300000 1000000") builds a tree of that many
# SIZE-byte files (default 1024; 0 for empty files), 1,000 to a directory, on tmpfs, and runs
#   record   fsrr record -- rsync -aAHX SRC/ DST/   (TOOL=cp: cp -a SRC DST)
#   floor    bench/create_floor: the same files made by a plain C++ loop with prepare's threads
#            (what prepare cannot beat on this machine: tmpfs itself slows down at 1 M files)
#   replay   fsrr replay --timing afap into an empty target: prepare (the initial tree) + ops
#   verify   fsrr verify of that target
# printing for each step its wall time, its rate (events/s; prepare: files/s) and the peak RSS
# of the fsrr process (/usr/bin/time). Memory is flat when the last column does not grow with
# the first. 1 M files of 1 KiB take ~12 GiB at the peak (source, replayed source and replayed
# copy), on a tmpfs the script mounts. Run as root from the repository after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a counts <<<"${1:-100000 300000 1000000}"
size=${2:-1024}
tool=${TOOL:-rsync}
fsrr=${FSRR:-$PWD/build/cli/fsrr}
floor=${FLOOR:-$PWD/build/bench/create_floor}
# A tmpfs of its own: /dev/shm's inode limit (half of RAM's pages: 3.1 M here) is about what
# 1 M files take three times over.
work=$(mktemp -d /dev/shm/fsrr-scale.XXXXXX)
trap 'umount "$work" 2>/dev/null; rm -rf "$work"' EXIT
mount -t tmpfs -o nr_inodes=0,size=75%,mode=0700 fsrr-scale "$work"

make_tree() {  # DIR COUNT SIZE
  /usr/bin/python3 - "$@" <<'PY'
import os, sys
d, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = os.urandom(size)
for i in range(count):
    sub = os.path.join(d, f"d{i // 1000:04d}")
    if i % 1000 == 0:
        os.makedirs(sub)
    fd = os.open(os.path.join(sub, f"f{i % 1000:03d}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    if size:
        os.write(fd, data)
    os.close(fd)
PY
}
timed() {  # LOG COMMAND...: runs COMMAND; "$work/time" gets its peak RSS (KiB) and wall (s)
  local log=$1; shift
  /usr/bin/time -f "%M %e" -o "$work/time" "$@" >"$log" 2>&1 || {
    echo "scale: $* failed:" >&2; tail -n 5 "$log" >&2; exit 1; }
  read -r rss_kb wall < <(tail -n 1 "$work/time")
}
row() {  # FILES STEP WALL RATE UNIT [RSS_KB]: no RSS for a step that is part of another's
  # process; "-" for one that is not fsrr's
  local rss="  (in replay)"
  if [[ ${6:-} == - ]]; then rss="  (not fsrr)"
  elif [[ -n ${6:-} ]]; then rss=$(printf '%8.1f MiB' "$(echo "$6 / 1024" | bc -l)"); fi
  printf '%9s  %-8s %9.2f s %12.0f %-8s %s\n' "$1" "$2" "$3" "$4" "$5" "$rss"
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); files of $size bytes; $tool"
printf '%9s  %-8s %11s %21s %12s\n' files step wall rate "peak RSS"
for n in "${counts[@]}"; do
  rm -rf "$work"/*
  make_tree "$work/src" "$n" "$size"
  case $tool in
    rsync) cmd=(rsync -aAHX "$work/src/" "$work/dst/") ;;
    cp) cmd=(cp -a "$work/src" "$work/dst") ;;
    *) echo "scale: unknown TOOL $tool" >&2; exit 2 ;;
  esac
  timed "$work/record.log" "$fsrr" record -o "$work/t.trace" -- "${cmd[@]}"
  events=$(sed -n 's/^record: \([0-9]*\) events.*/\1/p' "$work/record.log" | tail -n 1)
  lost=$(sed -n 's/^record: [0-9]* events, \([0-9]*\) lost.*/\1/p' "$work/record.log" | tail -n 1)
  row "$n" record "$wall" "$(echo "$events / $wall" | bc -l)" events/s "$rss_kb"
  rm -rf "$work/dst"

  mkdir "$work/floor"
  out=$("$floor" "$work/floor" "$n" "$size")  # "N files of S bytes, T threads: W s, R files/s"
  read -r _ _ _ _ _ _ _ floor_s _ floor_rate _ <<<"$out"
  row "$n" floor "$floor_s" "$floor_rate" files/s "-"
  rm -rf "$work/floor"

  mkdir "$work/target"
  timed "$work/replay.log" "$fsrr" replay "$work/t.trace" "$work/target" --timing afap \
    --no-progress --report "$work/report.json"
  read -r prep_ns prep_files wall_ns mismatches < <(/usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r["prepare"]["wall_ns"], r["prepare"]["files"], r["wall_ns"], r["mismatches"])' "$work/report.json")
  row "$n" prepare "$(echo "$prep_ns / 10^9" | bc -l)" "$(echo "$prep_files * 10^9 / $prep_ns" | bc -l)" files/s
  row "$n" replay "$wall" "$(echo "$events * 10^9 / $wall_ns" | bc -l)" events/s "$rss_kb"

  timed "$work/verify.log" "$fsrr" verify "$work/t.trace" "$work/target"
  row "$n" verify "$wall" "$(echo "$events / $wall" | bc -l)" events/s "$rss_kb"
  echo "           $events events, $lost lost, $mismatches mismatches, trace $(stat -c %s "$work/t.trace") bytes"
done
