#!/usr/bin/env bash
# share.sh [SCALES] [ROUNDS]: what sharing and reproducing cost. `rsync -aAHX` of the
# seed tree (100k x 1 KiB, 10k x 4 KiB, 1k x 10 KiB, 100 x 1000 KiB files) times
# each SCALE (default "0.2 1") is recorded on tmpfs; then, ROUNDS times each (default 3,
# medians printed):
#   anonymize   events/s, and the trace's size before and after (digests compress worse
#               than names)
#   slice       the halves at the middle event: time, and both replayed (mismatches)
#   export      --fio: time
#   minimize    a shell workload of a few thousand events against a predicate that needs a
#               handful: tries, time, events before and after (once per run)
# Run as root from the repository after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a scales <<<"${1:-0.2 1}"
rounds=${2:-3}
fsrr=$PWD/build/cli/fsrr
work=$(mktemp -d /dev/shm/fsrr-share-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
secs() { local t0=$(date +%s.%N); "$@" >/dev/null; echo "$(date +%s.%N) - $t0" | bc; }
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds"
echo pass >"$work/key"
for scale in "${scales[@]}"; do
  rm -rf "$work/src" "$work/dst"
  bench/make_seed_tree.sh "$work/src" "$scale"
  files=$(find "$work/src" -type f | wc -l)
  (cd "$work" && "$fsrr" record -f -o rsync.trace -- rsync -aAHX src/ dst 2>/dev/null)
  rm -rf "$work/src" "$work/dst"
  t=$work/rsync.trace
  "$fsrr" info "$t" --json >"$work/info.json"
  events=$(json "$work/info.json" '["events"]')
  echo
  echo "== $files files, rsync -aAHX: $events events, $(stat -c %s "$t") bytes"
  a=() s=() x=()
  for ((r = 0; r < rounds; r++)); do
    a+=("$(secs "$fsrr" anonymize "$t" -o "$work/anon.trace" --key-file "$work/key" --force)")
    mid=$("$fsrr" dump "$t" --json | awk -v n=$((events / 2)) 'NR == n' |
      python3 -c 'import json,sys; print("%.9f" % (json.load(sys.stdin)["ts"] / 1e9))')
    s+=("$(secs sh -c "'$fsrr' slice '$t' -o '$work/h1.trace' --to $mid --force &&
                        '$fsrr' slice '$t' -o '$work/h2.trace' --from $mid --force")")
    rm -rf "$work/fio"
    x+=("$(secs "$fsrr" export "$t" --fio "$work/fio")")
  done
  ma=$(median "${a[@]}")
  echo "anonymize: median $ma s ($(echo "$events / $ma" | bc) events/s); $(stat -c %s "$work/anon.trace") bytes after, $(echo "scale=1; 100 * $(stat -c %s "$work/anon.trace") / $(stat -c %s "$t") - 100" | bc)% more"
  echo "slice at the middle, both halves: median $(median "${s[@]}") s"
  for h in h1 h2; do
    rm -rf "$work/target"
    mkdir "$work/target"
    "$fsrr" replay "$work/$h.trace" "$work/target" --timing afap --no-progress --report "$work/$h.json" >/dev/null
    echo "  $h: $(json "$work/$h.json" '["events"]') events replayed, $(json "$work/$h.json" '["mismatches"]') mismatches"
  done
  echo "export --fio: median $(median "${x[@]}") s"
done

echo
cd "$work"
cat >w.sh <<'EOF'
for i in $(seq 1 150); do echo data > f$i; done
mkdir d
echo x > d/needle
mv d/needle d/found
for i in $(seq 1 150); do read l < f$i; done
rm f1 f2
EOF
"$fsrr" record -f -o shell.trace -- sh w.sh 2>/dev/null
"$fsrr" minimize shell.trace -o min.trace --force --quiet -- sh -c "test -f \"\$FSRR_TARGET\"$work/d/found"
