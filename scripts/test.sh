#!/usr/bin/env bash
# Installs, builds and runs every test. As root (eBPF and loop-mounted file systems); with
# CI=true no test may skip. Two tests at a time: each test works in directories, images and
# loop devices of its own, and none takes a wall-clock bound a busy machine would break
# (docs/testing.md); on two cores the suite takes ~5 minutes this way instead of ~8. Further
# arguments go to ctest (-j1 runs one at a time, -R NAME only some).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cd build
ctest --output-on-failure --timeout 600 -j2 "$@"
