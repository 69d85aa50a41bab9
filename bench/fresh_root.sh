#!/usr/bin/env bash
# fresh_root.sh demo|tests|deb [DEB]: a newcomer's first minutes, in a freshly debootstrapped
# Debian bookworm root (minbase), as root. Needs debootstrap and Debian's archive.
#   demo   clone this repository into the root and time README command 1 (scripts/demo.sh)
#   tests  the same for README command 2 (scripts/test.sh)
#   deb    apt-get install the .deb (default: build-pkg/fsrr_*.deb, made by `cpack` in
#          build-pkg/), then fsrr --version, fsrr replay and verify of a shipped trace, and
#          man fsrr-replay
# The root is made in a new directory under /var/tmp, with /proc, /sys, /dev and a tmpfs on
# /dev/shm mounted for it (eBPF needs /sys/kernel/btf), and all of it is removed at the end,
# however the run ends.
set -euo pipefail
# In a mount namespace of its own, private: no mount made here reaches the host's (/ is shared
# on a systemd host, and an unmount of a bind of /dev would), and all of them go with the
# namespace, however this ends.
[[ -n ${FSRR_FRESH_NS:-} ]] || FSRR_FRESH_NS=1 exec unshare --mount --propagation private "$0" "$@"
cd "$(dirname "$0")/.."
what=${1:?usage: fresh_root.sh demo|tests|deb [DEB]}
deb=${2:+$(realpath "$2")}
repo=$PWD
root=$(mktemp -d /var/tmp/fsrr-fresh-root.XXXXXX)
chmod 755 "$root"  # it is /: other users (postgres) go through it
cleanup() {
  trap '' INT TERM  # a second ^C does not cut the cleanup short
  local pid m
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do  # what still runs in the root
    [[ $(readlink "/proc/$pid/root" 2>/dev/null) == "$root" ]] && kill -9 "$pid" 2>/dev/null
  done
  for m in $(findmnt -R -l -n -o TARGET "$root" 2>/dev/null | sort -r); do umount -l "$m" || true; done
  rm -rf --one-file-system "$root" "$root.log"
}
trap cleanup EXIT
trap "exit 1" INT TERM  # through the EXIT trap
t0=$(date +%s)
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.log" 2>&1 ||
  { tail -5 "$root.log" >&2; exit 1; }
rm -f "$root.log"
echo "fresh_root: bookworm minbase in $(($(date +%s) - t0)) s"
# the root a mount point of its own, as / is on a machine (mount --make-rprivate / needs one)
mount --bind "$root" "$root"
for m in proc sys dev dev/shm; do
  mkdir -p "$root/$m"
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount --rbind /sys "$root/sys" ;;
    dev) mount --rbind /dev "$root/dev" ;;
    dev/shm) mount -t tmpfs tmpfs "$root/dev/shm" ;;
  esac
done
in_root() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 TERM="${TERM:-dumb}" CI="${CI:-}" "$@"; }

case $what in
  demo | tests)
    git clone -q "$repo" "$root/root/fsrr"
    script=scripts/demo.sh
    [[ $what == tests ]] && script=scripts/test.sh
    t0=$(date +%s.%N)
    in_root bash -c "cd /root/fsrr && ./$script" >"/var/tmp/fsrr-fresh-root-$what.log" 2>&1 || {
      echo "fresh_root: $script failed; its output is /var/tmp/fsrr-fresh-root-$what.log" >&2
      exit 1
    }
    t1=$(date +%s.%N)
    printf 'fresh_root: %s in %.0f s on a fresh root (output: /var/tmp/fsrr-fresh-root-%s.log)\n' \
      "$script" "$(echo "$t1 - $t0" | bc)" "$what"
    ;;
  deb)
    deb=${deb:-$(ls -t build-pkg/fsrr_*.deb | head -1)}
    cp "$deb" "$root/root/"
    in_root bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      man-db ./root/$(basename "$deb") >/dev/null"
    echo "fresh_root: $(basename "$deb") installed with its dependencies"
    in_root bash -c 'set -e
      fsrr --version
      mkdir /tmp/t
      fsrr replay /usr/share/fsrr/traces/seed000-rsync.trace /tmp/t --timing afap --no-progress \
        >/tmp/replay.log
      grep "^mismatches" /tmp/replay.log
      fsrr verify /usr/share/fsrr/traces/seed000-rsync.trace /tmp/t
      MANWIDTH=100 man fsrr-replay | head -12
      test -r /usr/share/bash-completion/completions/fsrr && echo "bash completion installed"'
    ;;
  *) echo "fresh_root: unknown mode $what" >&2; exit 2 ;;
esac
