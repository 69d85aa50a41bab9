#!/usr/bin/env bash
# The main job: record a real copy with eBPF and replay it onto tmpfs with its original
# timing, printing the report; then verify the result. As root on a kernel with BTF it
# records `rsync -aAHX` of a fresh tree shaped like the seed tree (100k × 1 KiB, 10k × 4 KiB,
# 1k × 10 KiB, 100 × 1000 KiB files, here scaled by 0.05); otherwise (or given a
# TRACE) it replays a trace shipped in traces/.
# Usage: scripts/demo.sh [TRACE]   (as root on Debian bookworm; installs and builds first)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --demo
fsrr=$PWD/build/cli/fsrr
work=$(mktemp -d /dev/shm/fsrr-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [[ $# -eq 0 && $(id -u) -eq 0 && -r /sys/kernel/btf/vmlinux ]]; then
  bench/make_seed_tree.sh "$work/src/RAMDisk" 0.05
  trace=$work/copy.trace
  echo "== fsrr record -o copy.trace -- rsync -aAHX src/ dst/   ($(find "$work/src" -type f | wc -l) files)"
  (cd "$work" && "$fsrr" record -o copy.trace -- rsync -aAHX src/ dst/)
  # A recording that lost events or missed some I/O is not the copy it claims to be: say what
  # is missing and show the shipped trace instead.
  state=$("$fsrr" info "$trace" --json | python3 -c '
import json, sys
i = json.load(sys.stdin)
why = (["%d events lost" % i["lost_events"]] if i["lost_events"] else []) + i["incomplete_reasons"]
print("complete" if i["complete"] else "; ".join(why) or "incomplete")')
  if [[ $state != complete ]]; then
    echo "demo: the recording is incomplete ($state); it is not replayed as if it were whole."
    echo "demo: replaying the trace shipped in traces/ instead."
    trace=traces/seed000-rsync.trace
  fi
else
  trace=${1:-traces/seed000-rsync.trace}
fi
echo
echo "== fsrr info $trace"
"$fsrr" info "$trace"
echo
mkdir "$work/target"
echo "== fsrr replay $trace target --data compress:2 --report report.json"
"$fsrr" replay "$trace" "$work/target" --data compress:2 --report "$work/report.json"
echo
echo "== fsrr verify $trace target"
"$fsrr" verify "$trace" "$work/target"
echo
echo "== report.json (keys as docs/design.md fixes them)"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(json.dumps({k: j[k] for k in ["wall_ns","mib_per_s","files_per_s","bytes_read","bytes_written","mismatches","lateness_ns","prepare"] if k in j}, indent=2))' "$work/report.json"
