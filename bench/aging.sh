#!/usr/bin/env bash
# aging.sh [PROFILE] [SIZE]: fsrr age on ext4, xfs and btrfs images of SIZE (default 4G) with
# PROFILE (default fill=70,churn=3,sizes=home,seed=1), then the same without churn: the time
# to age, the fill reached, the free space in pieces and the aged files' layout, side by side.
# (compare --age, fresh against aged on the seed rsync, is to come.)
# Run as root from the repository after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-fill=70,churn=3,sizes=home,seed=1}
size=${2:-4G}
fsrr=$PWD/build/cli/fsrr
work=$(mktemp -d /dev/shm/fsrr-aging-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); images of $size in $work (tmpfs)"
printf '%-6s %-40s %8s %7s %9s %10s %8s %9s\n' fs profile seconds fill% files free_parts layout ext/file
for fs in ext4 xfs btrfs; do
  for p in "$profile" "$(sed -E 's/churn=[0-9]+/churn=0/' <<<"$profile")"; do
    "$fsrr" age "$fs:size=$size" "$work/a.img" --age "$p" --quiet --json "$work/a.json" >/dev/null
    python3 - "$work/a.json" "$fs" "$p" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
free = j["free_space_fragments"]
print(f'{sys.argv[2]:<6} {sys.argv[3]:<40} {j["wall_ns"]/1e9:8.1f} {j["fill"]*100:7.1f} {j["files"]:9d} '
      f'{"-" if free is None else free:>10} {j["layout"]["score"]:8.3f} {j["layout"]["extents_per_file"]:9.2f}')
PY
    rm -f "$work/a.img"
  done
done
