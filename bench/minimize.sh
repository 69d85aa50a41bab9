#!/usr/bin/env bash
# minimize.sh [JOBS]: what `fsrr minimize` makes of three recorded workloads, each pass's
# effect (events, initial-tree entries, bytes, tries, seconds) and the whole:
#   enospc  `cp -a` of the seed tree at 0.05 (5,000 x 1 KiB, 500 x 4 KiB, 50 x 10 KiB,
#           5 x 1000 KiB files), then `dd` of a 40 MiB file, replayed on ext4:size=32M;
#           the predicate: the report has an ENOSPC
#   rsync   `rsync -aAHX` of the seed tree at 0.01 (1,111 files); the predicate: the copy's
#           10K#00005 exists and is not empty
#   git     `git add` and `git commit` of a 300-file source tree; the predicate: the replay
#           leaves .git/refs/heads/main
# Goals (issue 43): enospc <= 50 events, <= 20 tree entries, within 3 minutes. JOBS: tries at
# once (default 2). Run as root from the repository after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-2}
fsrr=$PWD/build/cli/fsrr
bench=$PWD/bench
work=$(mktemp -d /dev/shm/fsrr-minimize-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $jobs tries at once"

case_() {  # NAME TRACE [--fs SPEC] -- PREDICATE...
  local name=$1 trace=$2
  shift 2
  echo
  echo "== $name"
  local t0 t1
  t0=$(date +%s.%N)
  "$fsrr" minimize "$trace" -o "$work/$name.min" --quiet -j "$jobs" "$@"
  t1=$(date +%s.%N)
  echo "whole command: $(echo "$t1 - $t0" | bc) s"
  "$fsrr" dump "$work/$name.min" | head -30
}

# enospc
mkdir "$work/enospc"
"$bench/make_seed_tree.sh" "$work/enospc/src" 0.05
(cd "$work/enospc" && "$fsrr" record -o ../enospc.trace -- sh -c \
  'cp -a src dst && dd if=/dev/zero of=big bs=1M count=40 status=none' 2>/dev/null)
printf '#!/bin/sh\ngrep -q ENOSPC "$FSRR_REPORT"\n' >"$work/enospc.sh"
chmod +x "$work/enospc.sh"
case_ enospc "$work/enospc.trace" --fs ext4:size=32M -- "$work/enospc.sh"

# rsync
mkdir "$work/rsync"
"$bench/make_seed_tree.sh" "$work/rsync/seed" 0.01
(cd "$work/rsync" && "$fsrr" record -o ../rsync.trace -- rsync -aAHX seed/ copy 2>/dev/null)
case_ rsync "$work/rsync.trace" -- sh -c "test -s \"\$FSRR_TARGET$work/rsync/copy/10K#00005\""

# git
mkdir -p "$work/git/src"
for i in $(seq 1 300); do
  mkdir -p "$work/git/src/d$((i % 10))"
  head -c $((i * 97)) /dev/urandom | base64 >"$work/git/src/d$((i % 10))/f$i.c"
done
(cd "$work/git/src" && git init -q -b main . && git config user.email b@x && git config user.name b &&
  "$fsrr" record -o ../../git.trace -- sh -c 'git add -A && git commit -qm import' 2>/dev/null)
case_ git "$work/git.trace" -- sh -c "test -f \"\$FSRR_TARGET$work/git/src/.git/refs/heads/main\""
