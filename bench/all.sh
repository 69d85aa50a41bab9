#!/usr/bin/env bash
# all.sh [SCALE]: every benchmark, one after the other, each headed by the time and the load
# average (these machines are noisy: run it on an otherwise idle box). Default scale 0.2,
# the 22,220-file seed tree (make_seed_tree.sh). Run as root from the repository after
# scripts/setup.sh; takes about ten minutes (strace's runs are most of it).
set -uo pipefail
cd "$(dirname "$0")/.."
scale=${1:-0.2}
head() { echo; echo "=== $* [$(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)]"; }
status=0
run() {
  head "$@"
  "$@" || status=1
}
run bench/tree_replay.sh "$scale" 5
run build/bench/bench_decode
run build/bench/bench_decode traces/seed000-rsync.trace
run bench/replay_copy.sh "$scale" 7
run bench/replay_paced.sh 12
run bench/round_trip.sh
run bench/record_overhead.sh "$scale" 5
exit $status
