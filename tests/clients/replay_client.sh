#!/usr/bin/env bash
# One real client of tests/clients/clients.sh, end to end: its input made, its run recorded by
# fsrr, then replayed with --data random on tmpfs and on fresh ext4, xfs and btrfs images, each
# checked: the recording complete with 0 lost events, 0 mismatches, differences only of the
# causes the client names (and listing_split), and `verify --content` clean. A client that
# does what fsrr cannot replay names it (incomplete_NAME), and the trace must say exactly that.
# Usage: replay_client.sh FSRR NAME [FS...]   (as root; the default file systems are all four)
# Everything lives in one directory of its own under /dev/shm (a client may add one under
# /var/tmp, which its cleanup removes), unmounted and removed however the script ends.
set -euo pipefail

fsrr=$1 name=$2
shift 2
filesystems=("$@")
((${#filesystems[@]})) || filesystems=(tmpfs ext4 xfs btrfs)
here=$(cd "$(dirname "$0")" && pwd)
clients=$here/clients.sh

if [[ $(id -u) -ne 0 ]]; then
  [[ ${CI:-} == true ]] && { echo "client $name: needs root under CI=true" >&2; exit 1; }
  echo "client $name: skipped (not root)"
  exit 0
fi

top=$(mktemp -d /dev/shm/fsrr-client.XXXXXX)
chmod 755 "$top"  # a client may run as another user (postgres)
work=$top/work
mounts=()
cleanup() {
  local m
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  bash "$clients" cleanup "$name" "$work" >/dev/null 2>&1 || true
  rm -rf "$top"
}
trap cleanup EXIT
mkdir "$work"

fail() {
  echo "client $name: $*" >&2
  exit 1
}

bash "$clients" prepare "$name" "$work" >"$top/prepare.log" 2>&1 || {
  cat "$top/prepare.log" >&2
  fail "prepare failed"
}
sleep 0.1  # what it made is older than the recording, by its ctime too
trace=$top/t.trace
# The client's output goes to a file it opens itself: fsrr's own lines would move the offset
# of a shared stdout under its feet.
if ! (cd "$work" && "$fsrr" record -o "$trace" -- \
  bash -c 'exec >"$1" 2>&1; exec bash "$2" run "$3" "$4"' run "$top/run.log" "$clients" "$name" "$work") \
  >"$top/record.log" 2>&1; then
  cat "$top/record.log" "$top/run.log" >&2
  fail "the recorded run failed"
fi
"$fsrr" info "$trace" --json >"$top/info.json"

allowed="listing_split $(bash "$clients" allow "$name" "$work")"
incomplete=$(bash "$clients" incomplete "$name" "$work")
python3 - "$top/info.json" "$name" "$incomplete" <<'EOF' || fail "recording incomplete"
import json, sys
i = json.load(open(sys.argv[1]))
bad = []
if i["lost_events"] != 0: bad.append(f"{i['lost_events']} lost events")
if not i["footer"]: bad.append("no footer: the trace was cut short")
reasons = i.get("incomplete_reasons", [])
if i["complete"] != (not reasons): bad.append(f"complete is {i['complete']} with reasons {reasons}")
if reasons != [r for r in sys.argv[3].split("\n") if r]:
    bad.append(f"incomplete: {reasons}, expected {sys.argv[3].splitlines() or 'none'}")
if i["events"] < 100: bad.append(f"only {i['events']} events")
print(f"client {sys.argv[2]}: {i['events']} events, {i['trace_bytes']} trace bytes"
      + (f"; {', '.join(bad)}" if bad else ""))
sys.exit(1 if bad else 0)
EOF

for fs in "${filesystems[@]}"; do
  if [[ $fs == tmpfs ]]; then
    target=$top/tmpfs
    mkdir "$target"
  else
    image=$top/$fs.img
    mnt=$top/$fs
    truncate -s 1G "$image"
    mkfs."$fs" -q "$image" >/dev/null 2>&1 || mkfs."$fs" "$image" >/dev/null 2>&1 ||
      fail "mkfs.$fs failed"
    mkdir "$mnt"
    mount -o loop "$image" "$mnt" || fail "mounting $fs failed"
    mounts+=("$mnt")
    target=$mnt/target
    mkdir "$target"
  fi
  report=$top/$fs.json
  "$fsrr" replay "$trace" "$target" --timing afap --data random --seed 7 --no-progress \
    --report "$report" >"$top/$fs.replay" 2>&1 || {
    cat "$top/$fs.replay" >&2
    fail "replay on $fs failed"
  }
  python3 - "$report" "$name" "$fs" "$allowed" <<'EOF' || { cat "$top/$fs.replay" >&2; fail "replay on $fs differs"; }
import json, sys
r = json.load(open(sys.argv[1]))
allowed = set(sys.argv[4].split())
causes = r.get("differences_by_cause", {})
bad = []
if r["mismatches"] != 0: bad.append(f"{r['mismatches']} mismatches")
for c, n in causes.items():
    if c not in allowed: bad.append(f"{n} differences of cause {c}")
print(f"client {sys.argv[2]} on {sys.argv[3]}: {r['mismatches']} mismatches, differences {causes or 0}"
      + (f"; {', '.join(bad)}" if bad else ""))
sys.exit(1 if bad else 0)
EOF
  "$fsrr" verify --content --data random --seed 7 "$trace" "$target" >"$top/$fs.verify" 2>&1 || {
    head -20 "$top/$fs.verify" >&2
    fail "verify --content on $fs failed"
  }
  if [[ $fs != tmpfs ]]; then
    umount "$mnt"
    mounts=("${mounts[@]:0:${#mounts[@]}-1}")
    rm -f "$image"
  else
    rm -rf "$target"
  fi
done
echo "client $name: replayed exactly on ${filesystems[*]}"
