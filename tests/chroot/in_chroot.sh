#!/usr/bin/env bash
# in_chroot.sh COMMAND [ARGS...]: runs COMMAND, as root, inside a throwaway chroot made of bind
# mounts of this machine's /usr and /etc (read-only), /dev and /sys, a fresh /proc, and the
# repository (with its build tree) at its own path, in the same working directory. The mounts
# are made in a mount namespace of their own (unshare --mount): they vanish with it however
# COMMAND ends, and the directory left behind is removed.
set -euo pipefail
if [[ $# -eq 0 ]]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
root=$(mktemp -d /dev/shm/fsrr-chroot.XXXXXX)
# Nothing is mounted in this namespace: the removal cannot reach the bound directories.
trap 'rm -rf --one-file-system "$root"' EXIT

unshare --mount --propagation private -- /bin/bash -c '
  set -euo pipefail
  root=$1 repo=$2 cwd=$3
  shift 3
  for d in usr etc; do
    mkdir -p "$root/$d"
    mount --bind "/$d" "$root/$d"
    mount -o remount,bind,ro "$root/$d"
  done
  for d in dev sys; do mkdir -p "$root/$d" && mount --rbind "/$d" "$root/$d"; done
  mkdir -p "$root/proc" && mount -t proc proc "$root/proc"
  for l in bin sbin lib lib32 lib64 libx32; do
    if [[ -L /$l ]]; then ln -s "$(readlink "/$l")" "$root/$l"
    elif [[ -d /$l ]]; then mkdir -p "$root/$l" && mount --bind "/$l" "$root/$l"; fi
  done
  mkdir -p "$root/tmp" && chmod 1777 "$root/tmp"
  mkdir -p "$root$repo" && mount --bind "$repo" "$root$repo"
  exec chroot "$root" /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"
' in_chroot "$root" "$repo" "$PWD" "$@"
