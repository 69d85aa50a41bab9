#!/usr/bin/env bash
# The main job on a shipped default: describe a trace, replay it into a fresh tmpfs
# directory with compressible generated data, print the report, verify the result.
# Usage: scripts/demo.sh [TRACE]   (as root on Debian bookworm; installs and builds first)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
trace=${1:-traces/seed000-tree.trace}
fsrr=build/cli/fsrr
target=$(mktemp -d /dev/shm/fsrr-demo.XXXXXX)
trap 'rm -rf "$target"' EXIT

echo "== fsrr info $trace"
"$fsrr" info "$trace"
echo
echo "== fsrr replay $trace $target --data compress:2 --seed 1"
"$fsrr" replay "$trace" "$target" --data compress:2 --seed 1 --report "$target.json"
echo
echo "== fsrr verify $trace $target"
"$fsrr" verify "$trace" "$target"
echo
echo "== report ($target.json)"
cat "$target.json"
rm -f "$target.json"
