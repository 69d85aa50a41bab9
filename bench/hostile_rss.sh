#!/usr/bin/env bash
# hostile_rss.sh: peak RSS and time of fsrr reading the worst hostile traces fsrr knows (see
# tests/format/write_hostile.cc): info, dump, verify and an afap replay of a 3 KB trace that
# holds 8 Mi events, info of one whose block is the largest a block may be (252 MiB from
# 25 KB), and the refusal of a 1 GiB claim and of an oversized name blob. As root, from the
# repository, after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
fsrr=${FSRR:-$PWD/build/cli/fsrr}
work=$(mktemp -d /dev/shm/fsrr-hostile.XXXXXX)
trap 'rm -rf "$work"' EXIT
build/tests/format/write_hostile "$work"
measure() {  # NAME COMMAND...: peak RSS (MiB), wall s, exit status, first line of stderr
  local name=$1; shift
  local status=0
  /usr/bin/time -f "%M %e" -o "$work/time" "$@" >/dev/null 2>"$work/err" || status=$?
  read -r kb wall < <(tail -n 1 "$work/time")  # after "Command exited with non-zero status"
  printf '%-34s %10s %8s %6s  %s\n' "$name" "$(echo "scale=1; $kb / 1024" | bc)" "$wall" "$status" \
    "$(head -n 1 "$work/err" | sed "s|$work/||" | cut -c1-100)"
}
ls -l "$work"/*.trace | awk '{printf "%-20s %8d bytes\n", $NF, $5}' | sed "s|$work/||"
printf '%-34s %10s %8s %6s  %s\n' command "peak MiB" "wall s" status "stderr"
measure "info huge-group" "$fsrr" info "$work/huge-group.trace"
measure "dump --json huge-group" "$fsrr" dump --json "$work/huge-group.trace"
mkdir "$work/t"
measure "replay --timing afap huge-group" "$fsrr" replay "$work/huge-group.trace" "$work/t" --timing afap --no-progress
measure "verify huge-group" "$fsrr" verify "$work/huge-group.trace" "$work/t"
measure "info max-block" "$fsrr" info "$work/max-block.trace"
measure "info claim-1g" "$fsrr" info "$work/claim-1g.trace"
measure "dump claim-1g" "$fsrr" dump "$work/claim-1g.trace"
measure "info blob" "$fsrr" info "$work/blob.trace"
