#!/usr/bin/env bash
# Installs, builds and runs every test. As root (eBPF and loop-mounted file systems); with
# CI=true no test may skip.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cd build
ctest --output-on-failure --timeout 600 "$@"
