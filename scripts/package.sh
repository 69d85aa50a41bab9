#!/usr/bin/env bash
# Builds the Debian package build-pkg/fsrr_VERSION_amd64.deb (fsrr alone, Release, stripped;
# Depends: computed from the libraries it links) and checks it with lintian.
# Install it with:  apt-get install ./build-pkg/fsrr_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --demo --no-build  # the build's packages; build/ is left as it is
for p in dpkg-dev lintian libopenmpi-dev; do  # cpack's dpkg-shlibdeps; replay --mpi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
done
# Debian's hardening flags (all of them: bindnow and PIE too), without -g: the package is
# stripped anyway.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
flags="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CXXFLAGS)"
flags=${flags//-g /}
cmake -S . -B build-pkg -DCMAKE_BUILD_TYPE=Release -DFSRR_TESTS=OFF -DFSRR_MPI=ON \
  -DCMAKE_CXX_FLAGS_RELEASE="-DNDEBUG $flags" -DCMAKE_C_FLAGS_RELEASE="-DNDEBUG $flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$(dpkg-buildflags --get LDFLAGS)" >/dev/null
cmake --build build-pkg -j2 >build-pkg/build.log 2>&1 ||
  { grep -E "error|Error" build-pkg/build.log | head -20 >&2; exit 1; }
(cd build-pkg && rm -f fsrr_*.deb && cpack >cpack.log 2>&1) || { tail -20 build-pkg/cpack.log >&2; exit 1; }
deb=$(ls build-pkg/fsrr_*.deb)
if ! out=$(lintian --fail-on error,warning "$deb" 2>&1); then
  echo "$out" | grep -v "running with root privileges" >&2
  exit 1
fi
echo "package: $deb ($(du -k "$deb" | cut -f1) KiB)"
