#!/usr/bin/env bash
# Installs what fsrr needs from Debian bookworm (as root) and builds it into build/.
# Quiet and quick when everything is already there.
#   scripts/setup.sh          everything the tests and benchmarks need, every target
#   scripts/setup.sh --demo   only what building fsrr and the demo need, only fsrr
#   --no-build                the packages only (scripts/package.sh builds in build-pkg/)
set -euo pipefail
cd "$(dirname "$0")/.."
demo=false build=true
for a in "$@"; do
  case $a in
    --demo) demo=true ;;
    --no-build) build=false ;;
    *) echo "setup: unknown option $a (--demo, --no-build)" >&2; exit 2 ;;
  esac
done

# What the build needs (and the demo's workload); the full setup's build also finds Catch2
# and Open MPI when it is configured.
packages=(
  cmake g++ make pkg-config clang llvm libbpf-dev bpftool flatbuffers-compiler
  libflatbuffers-dev libzstd-dev libcli11-dev nlohmann-json3-dev libfmt-dev libexpected-dev
  libsodium-dev liblzo2-dev liburing-dev libfuse3-dev fuse3 git
  rsync python3
)
$demo || packages+=(catch2 openmpi-bin libopenmpi-dev)
# What only the tests, the fuzzers and the benchmarks use: installed while the build runs.
test_packages=()
$demo || test_packages+=(
  # the fuzzers (tests/fuzz): libFuzzer and clang's sanitizer runtimes
  libclang-rt-14-dev
  # workloads and file systems the tests and benchmarks use
  e2fsprogs xfsprogs btrfs-progs strace attr tar coreutils util-linux zstd bc
  duperemove fio
  # compare's page: the chart library it inlines, and the browser its test opens it in
  libjs-chart.js chromium
  # the corpus of real clients (tests/clients/clients.sh), for the tests only
  borgbackup restic rdiff-backup postgresql sqlite3 python3-venv python3-pip-whl
  python3-setuptools-whl zip unzip xz-utils cpio acl make gcc libc6-dev
  # the package (cpack's dpkg-shlibdeps) and its checks
  dpkg-dev lintian man-db
)

updated=false
missing_of() {
  missing=()
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
}
install() {
  missing_of "$@"
  ((${#missing[@]})) || return 0
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing packages: ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  $updated || apt-get update -qq
  updated=true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

install "${packages[@]}"
if ! $build; then
  install "${test_packages[@]}"
  exit 0
fi

# Release: -O2 as RelWithDebInfo, without -g, which took 30% of the compile time (compare.cc
# 12.5 s -> 8.9 s) and made fsrr 96 MB. The demo builds fsrr alone (no tests: no Catch2, no
# MPI); the full setup turns both on in the same build/, where fsrr is then rebuilt only in what
# --mpi changes.
release=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG"
         -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG")
if $demo; then
  cmake -S . -B build "${release[@]}" -DFSRR_TESTS=OFF -DFSRR_MPI=OFF >/dev/null
  targets=(--target fsrr)
else
  cmake -S . -B build "${release[@]}" -DFSRR_TESTS=ON -DFSRR_MPI=ON >/dev/null
  targets=()
fi
# The test-only packages (Chromium, PostgreSQL, the backup tools: minutes on a fresh machine)
# arrive while the build runs: apt waits on the network and dpkg, the build on the CPUs.
cmake --build build -j2 "${targets[@]}" >build/build.log 2>&1 &
builder=$!
trap 'kill $builder 2>/dev/null || true' EXIT
install "${test_packages[@]}"
if ! wait $builder; then
  grep -E "error|Error" build/build.log | head -40 >&2
  echo "setup: build failed; the whole log is build/build.log" >&2
  exit 1
fi
trap - EXIT
