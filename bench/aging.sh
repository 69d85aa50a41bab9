#!/usr/bin/env bash
# aging.sh [PROFILE] [SIZE] [SCALE] [RUNS]: aged file systems, measured.
# 1. fsrr age on ext4, xfs and btrfs images of SIZE (default 4G) with PROFILE (default
#    fill=70,churn=3,sizes=home,seed=1), then the same without churn: the time to age, the fill
#    reached, the free space in pieces and the aged files' layout, side by side.
# 2. The seed tree (100k x 1 KiB, 10k x 4 KiB, 1k x 10 KiB, 100 x 1000 KiB files) times SCALE
#    (default 1: 111,100 files) copied by `rsync -aAHX` under fsrr record, then
#    `fsrr compare --age none --age PROFILE` on ext4, xfs and btrfs, RUNS rounds (default 3):
#    MiB/s, the layout score of what the replay wrote, the free space in pieces, fresh and
#    aged, and the ranking of the three by median MiB/s, fresh and aged.
# LOADS="idle busy" (default both) for part 2: busy runs two busy loops that take both cores.
# KINDS="ext4 xfs btrfs" (default) the file systems; PARTS="1 2" (default) which parts run;
# OUT the directory for the compare reports and logs (default a new one in /var/tmp).
# Images in $IMAGES (default a new directory in /var/tmp: on disk, as a user's would be).
# Run as root from the repository after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-fill=70,churn=3,sizes=home,seed=1}
size=${2:-4G}
scale=${3:-1}
runs=${4:-3}
read -r -a loads <<<"${LOADS:-idle busy}"
fsrr=$PWD/build/cli/fsrr
work=$(mktemp -d /dev/shm/fsrr-aging-bench.XXXXXX)
own_images=
[[ -z ${IMAGES:-} ]] && own_images=$(mktemp -d /var/tmp/fsrr-aging-bench.XXXXXX)
images=${IMAGES:-$own_images}
out=${OUT:-$(mktemp -d /var/tmp/fsrr-aging-out.XXXXXX)}
mkdir -p "$out"
read -r -a kinds <<<"${KINDS:-ext4 xfs btrfs}"
busy=()
stop_busy() {
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
  busy=()
}
# the images directory only if made here; a user's IMAGES (and the cache in it) stays
trap 'stop_busy; rm -rf "$work" ${own_images:+"$own_images"}' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); images of $size in $images; reports in $out"

parts=" ${PARTS:-1 2} "
if [[ $parts == *" 1 "* ]]; then
echo "== fsrr age, each file system, with and without churn"
printf '%-6s %-40s %8s %7s %9s %10s %8s %9s\n' fs profile seconds fill% files free_parts layout ext/file
for fs in "${kinds[@]}"; do
  for p in "$profile" "$(sed -E 's/churn=[0-9]+/churn=0/' <<<"$profile")"; do
    "$fsrr" age "$fs:size=$size" "$images/a.img" --age "$p" --quiet --json "$work/a.json" >/dev/null
    python3 - "$work/a.json" "$fs" "$p" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
free = j["free_space_fragments"]
print(f'{sys.argv[2]:<6} {sys.argv[3]:<40} {j["wall_ns"]/1e9:8.1f} {j["fill"]*100:7.1f} {j["files"]:9d} '
      f'{"-" if free is None else free:>10} {j["layout"]["score"]:8.3f} {j["layout"]["extents_per_file"]:9.2f}')
PY
    rm -f "$images/a.img"
  done
done
fi
[[ $parts == *" 2 "* ]] || exit 0

echo "== the seed rsync at scale $scale, fresh and aged ($profile), $runs runs"
bench/make_seed_tree.sh "$work/src" "$scale"
echo "seed tree: $(find "$work/src" -type f | wc -l) files"
(cd "$work" && "$fsrr" record -f -o rsync.trace -- rsync -aAHX src/ dst 2>record.log)
grep '^record: [0-9]* events' "$work/record.log"
rm -rf "$work/src" "$work/dst"
for load in "${loads[@]}"; do
  [[ $load == busy ]] && for _ in 1 2; do (while :; do :; done) & busy+=($!); done
  echo "-- $load (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  dir=$out/$load
  fs_args=()
  for fs in "${kinds[@]}"; do fs_args+=(--fs "$fs:size=$size"); done
  status=0
  "$fsrr" compare "$work/rsync.trace" "${fs_args[@]}" --age none --age "$profile" \
    --runs "$runs" --images "$images/run" --age-cache "$images/cache" -o "$dir" \
    2>"$dir.log" || status=$?
  grep '^age \|^compare: [0-9]' "$dir.log"
  [[ $status == 0 ]] || echo "compare exited $status (a row did not verify: see $dir.log)"
  python3 - "$dir/compare.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
rank = {}
for r in j["fs"]:
    kind = r["spec"].split(":")[0]
    rank.setdefault(r["age"], []).append((r["mib_per_s"]["median"], kind))
    print(f'{r["name"]:<52} {r["mib_per_s"]["median"]:8.1f} MiB/s  layout {r["layout"]["score"]:.3f}  '
          f'{r["layout"]["extents_per_file"]:.2f} extents/file  free pieces {r["free_space_fragments"]}')
for age, rows in rank.items():
    print(f'ranking {age}: ' + " > ".join(f"{k} ({m:.1f})" for m, k in sorted(rows, reverse=True)))
orders = [[k for _, k in sorted(rows, reverse=True)] for rows in rank.values()]
print("the ranking " + ("holds" if all(o == orders[0] for o in orders) else "CHANGES") + " with age")
for kind in sorted({r["spec"].split(":")[0] for r in j["fs"]}):
    by = {r["age"]: r["mib_per_s"]["median"] for r in j["fs"] if r["spec"].split(":")[0] == kind}
    fresh = by.pop("none")
    for age, m in by.items():
        print(f'{kind}: aged MiB/s / fresh MiB/s = {m:.1f} / {fresh:.1f} = {m / fresh:.2f}')
PY
  stop_busy
done
