#!/usr/bin/env bash
# clients.sh [SCALE] [CLIENT...]: the corpus of real clients (tests/clients/clients.sh) at a
# scale a user runs: the data each client backs up, copies, archives or commits is the
# seed-000 tree (100,000 x 1 KiB, 10,000 x 4 KiB, 1,000 x 10 KiB, 100 x 1000 KiB files) times
# SCALE (default 0.2: 22,220 files, 108 MiB), in bulk/ beside the tests' small data set.
# Clients with data of their own (postgres, sqlite_wal, make_c, pip_venv, sort_tmp) run as in
# the tests. Per client, on tmpfs (FS=ext4,
# xfs or btrfs: a fresh 4 GiB image of that file system instead):
#   events, lost    what `fsrr record` wrote, and lost; "+" after lost: the trace is incomplete
#   rec s           the client's recorded run (wall time of `fsrr record -- CLIENT`, the
#                   recorder's start and its trace's finish included)
#   B/event         the trace's bytes / its events
#   native s        the client's own run, unrecorded (wall time, a fresh copy of its input)
#   replay s        the afap replay's ops (its report's wall_ns: not the prepare step)
#   replay/native   replay s / native s; the recording's added cost is (rec s - native s) /
#                   native s, printed as "rec +%"
#   mism., diff.    the replay's mismatches, and its differences by cause
#   verify          `fsrr verify`, and `fsrr verify --content`: yes / no
# As root, from the repository, after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-0.2}
shift || true
build=${FSRR_BENCH_BUILD:-build}
[[ $build == /* ]] || build=$PWD/$build
fsrr=$build/cli/fsrr
clients=$PWD/tests/clients/clients.sh
names=("$@")
((${#names[@]})) || mapfile -t names < <(bash "$clients" list)
fs=${FS:-tmpfs}

top=$(mktemp -d /dev/shm/fsrr-bench-clients.XXXXXX)
chmod 755 "$top"
mnt=""
cleanup() {
  [[ -n $mnt ]] && { umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true; }
  for n in "${names[@]}"; do
    for w in "$top/native-$n" "$top/rec-$n"; do
      [[ -d $w ]] && bash "$clients" cleanup "$n" "$w" >/dev/null 2>&1 || true
    done
  done
  rm -rf "$top"
}
trap cleanup EXIT

seed=$top/seed
bench/make_seed_tree.sh "$seed" "$scale" >/dev/null
export FSRR_CLIENT_DATA=$seed
echo "seed-000 tree at $scale: $(find "$seed" -type f | wc -l) files, $(du -sm "$seed" | cut -f1) MiB; replay on $fs; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-18s %9s %6s %8s %9s %9s %7s %9s %8s %6s  %-32s %s\n' client events lost B/event \
  "native s" "rec s" "rec +%" "replay s" ratio mism. differences verify
now() { date +%s.%N; }
for n in "${names[@]}"; do
  native=$top/native-$n rec=$top/rec-$n
  mkdir "$native" "$rec"
  bash "$clients" prepare "$n" "$native" >/dev/null 2>&1
  bash "$clients" prepare "$n" "$rec" >/dev/null 2>&1
  sleep 0.1
  t0=$(now)
  (cd "$native" && bash "$clients" run "$n" "$native") >"$top/$n.native.log" 2>&1 || {
    echo "$n: its own run failed (see above)"; cat "$top/$n.native.log"; continue; }
  t1=$(now)
  bash "$clients" cleanup "$n" "$native" >/dev/null 2>&1 || true
  rm -rf "$native"
  trace=$top/$n.trace
  t2=$(now)
  (cd "$rec" && "$fsrr" record -o "$trace" -- \
    bash -c 'exec >"$1" 2>&1; exec bash "$2" run "$3" "$4"' run "$top/$n.run.log" "$clients" "$n" "$rec") \
    >"$top/$n.record.log" 2>&1 || { echo "$n: the recorded run failed"; continue; }
  t3=$(now)
  bash "$clients" cleanup "$n" "$rec" >/dev/null 2>&1 || true
  rm -rf "$rec"
  if [[ $fs == tmpfs ]]; then
    target=$top/target
    mkdir "$target"
  else
    truncate -s 4G "$top/image"
    mkfs."$fs" -q "$top/image" >/dev/null 2>&1 || mkfs."$fs" "$top/image" >/dev/null 2>&1
    mnt=$top/mnt
    mkdir -p "$mnt"
    mount -o loop "$top/image" "$mnt"
    target=$mnt/target
    mkdir "$target"
  fi
  "$fsrr" replay "$trace" "$target" --timing afap --data random --seed 7 --no-progress \
    --report "$top/$n.json" >"$top/$n.replay.log" 2>&1 || true
  v=no vc=no
  "$fsrr" verify "$trace" "$target" >/dev/null 2>&1 && v=yes
  "$fsrr" verify --content --data random --seed 7 "$trace" "$target" >/dev/null 2>&1 && vc=yes
  "$fsrr" info "$trace" --json >"$top/$n.info.json"
  python3 - "$top/$n.info.json" "$top/$n.json" "$n" "$t0" "$t1" "$v" "$vc" "$t2" "$t3" <<'EOF'
import json, sys
info = json.load(open(sys.argv[1]))
try:
    r = json.load(open(sys.argv[2]))
except (OSError, ValueError):
    r = {"wall_ns": 0, "mismatches": "-", "differences_by_cause": {}}
native = float(sys.argv[5]) - float(sys.argv[4])
recorded = float(sys.argv[9]) - float(sys.argv[8])
added = f"{100 * (recorded - native) / native:+.0f}" if native > 0 else "-"
lost = f"{info['lost_events']}{'' if info['complete'] else '+'}"
replay = r["wall_ns"] / 1e9
causes = ", ".join(f"{n} {c}" for c, n in sorted(r.get("differences_by_cause", {}).items())) or "0"
ratio = f"{replay / native:.2f}" if native > 0 else "-"
bpe = info["trace_bytes"] / max(info["events"], 1)
print(f"{sys.argv[3]:<18} {info['events']:>9} {lost:>6} {bpe:>8.2f} {native:>9.2f} {recorded:>9.2f} "
      f"{added:>7} {replay:>9.2f} {ratio:>8} {r['mismatches']!s:>6}  {causes:<32} "
      f"{sys.argv[6]} / {sys.argv[7]}")
EOF
  if [[ $fs == tmpfs ]]; then
    rm -rf "$target"
  else
    umount "$mnt"
    mnt=""
    rm -f "$top/image"
  fi
done
