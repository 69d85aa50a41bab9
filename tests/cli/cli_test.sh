#!/usr/bin/env bash
# The command line as users meet it: exit statuses, one-line errors, nothing overwritten.
# Usage: cli_test.sh FSRR_BINARY
set -uo pipefail
fsrr=$1
work=$(mktemp -d /dev/shm/fsrr-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0

# expect STATUS STDERR-SUBSTRING -- command...: exact status, stderr one line holding the text.
expect() {
  local want=$1 text=$2
  shift 3
  local err status
  err=$("$@" 2>&1 >/dev/null)
  status=$?
  if [[ $status -ne $want ]]; then
    echo "FAIL: '$*' exited $status, expected $want (stderr: $err)"
    failures=$((failures + 1))
  elif [[ -n $text && ( $err != *"$text"* || $(printf '%s\n' "$err" | wc -l) -ne 1 ) ]]; then
    echo "FAIL: '$*' stderr was: $err; expected one line with: $text"
    failures=$((failures + 1))
  fi
}

mkdir -p "$work/src/d" "$work/t1" "$work/t2" "$work/t3"
echo data >"$work/src/d/f"
ln -s f "$work/src/d/l"

expect 0 "" -- "$fsrr" snapshot "$work/src" -o "$work/s.trace"
[[ $(stat -c %a "$work/s.trace") == 600 ]] || { echo "FAIL: trace mode is not 0600"; failures=$((failures + 1)); }
before=$(md5sum <"$work/s.trace")
expect 1 "exists; choose another name or remove it" -- "$fsrr" snapshot "$work/src" -o "$work/s.trace"
[[ $(md5sum <"$work/s.trace") == "$before" ]] || { echo "FAIL: existing trace was changed"; failures=$((failures + 1)); }
expect 0 "" -- "$fsrr" snapshot "$work/src" -o "$work/s.trace" --force
expect 0 "" -- "$fsrr" info "$work/s.trace"
expect 0 "" -- "$fsrr" info "$work/s.trace" --json
expect 0 "" -- "$fsrr" dump "$work/s.trace" --tree --json
[[ $("$fsrr" info "$work/s.trace" --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["tree"]["files"], j["tree"]["dirs"], j["tree"]["symlinks"], j["complete"], j["format_version"], j["time_unit_ns"], len(j["trace_id"]), int(j["trace_id"], 16) > 0)') == "1 2 1 True 3.6 16 32 True" ]] ||
  { echo "FAIL: info --json keys"; failures=$((failures + 1)); }
[[ $("$fsrr" dump "$work/s.trace" --tree --json | wc -l) == 4 ]] || { echo "FAIL: dump --tree lines"; failures=$((failures + 1)); }

expect 0 "" -- "$fsrr" replay "$work/s.trace" "$work/t1" --report "$work/r.json" --no-progress
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["prepare"]["files"]==1 and j["prepare"]["dirs"]==2 and "wall_ns" in j and "mib_per_s" in j and "files_per_s" in j' "$work/r.json" ||
  { echo "FAIL: report keys"; failures=$((failures + 1)); }
expect 0 "" -- "$fsrr" verify "$work/s.trace" "$work/t1"
expect 1 "is not empty (use --force to replay into it anyway)" -- "$fsrr" replay "$work/s.trace" "$work/t1"
echo changed >"$work/t1$work/src/d/f"
expect 1 "verify: 1 of 4 entries differ" -- "$fsrr" verify "$work/s.trace" "$work/t1" --no-times
expect 1 "target $work/missing: No such file or directory" -- "$fsrr" replay "$work/s.trace" "$work/missing"
expect 1 "--map 'nonsense': expected FROM=TO" -- "$fsrr" replay "$work/s.trace" "$work/t2" --map nonsense
expect 1 "compress" -- "$fsrr" replay "$work/s.trace" "$work/t2" --data compress:0.5
expect 1 "--report names the trace file itself" -- "$fsrr" replay "$work/s.trace" "$work/t2" --report "$work/s.trace"
[[ -z $(ls -A "$work/t2") ]] || { echo "FAIL: a refused replay wrote into the target"; failures=$((failures + 1)); }

# Names are bytes: one that is not UTF-8 is escaped in text and replaced in JSON, never an error.
mkdir "$work/odd"
touch "$work/odd/$(printf 'caf\xe9')"
expect 0 "" -- "$fsrr" snapshot "$work/odd" -o "$work/odd.trace"
[[ $("$fsrr" dump "$work/odd.trace" --tree --json | grep -c $'caf\xef\xbf\xbd"') == 1 ]] ||
  { echo "FAIL: dump --json of a non-UTF-8 name"; failures=$((failures + 1)); }
expect 0 "" -- "$fsrr" info "$work/odd.trace" --json
expect 0 "" -- "$fsrr" replay "$work/odd.trace" "$work/t3" --no-progress
[[ -f "$work/t3$work/odd/$(printf 'caf\xe9')" ]] || { echo "FAIL: replay of a non-UTF-8 name"; failures=$((failures + 1)); }

head -c 100 "$work/s.trace" >"$work/cut.trace"
expect 1 "header is cut short" -- "$fsrr" info "$work/cut.trace"
echo "not a trace" >"$work/text"
expect 1 "not an fsrr trace" -- "$fsrr" info "$work/text"
expect 1 "No such file or directory" -- "$fsrr" dump "$work/none.trace"

# exit statuses: 0; 1 fsrr failed; 2 usage; record: the command's own, 126/127 when it cannot
# be run or found, 125 when fsrr fails (as env, timeout and nice)
expect 2 "" -- "$fsrr" info "$work/s.trace" --no-such-option
expect 2 "" -- "$fsrr" replay
if [[ $(id -u) == 0 && -e /sys/kernel/btf/vmlinux ]]; then
  expect 3 "" -- "$fsrr" record -o "$work/r1.trace" -- sh -c 'exit 3'
  expect 127 "command not found" -- "$fsrr" record -o "$work/r2.trace" -- no-such-program-anywhere
  printf 'not a program\n' >"$work/plain"
  chmod 0644 "$work/plain"
  expect 126 "cannot run" -- "$fsrr" record -o "$work/r3.trace" -- "$work/plain"
  expect 127 "cannot run" -- "$fsrr" record -o "$work/r4.trace" -- "$work/missing/prog"
  expect 125 "exists" -- "$fsrr" record -o "$work/r1.trace" -- true
  expect 2 "not a size" -- "$fsrr" record -o "$work/r5.trace" --ring-buffer lots -- true
fi

for sub in record snapshot info dump replay verify compare anonymize slice minimize export import; do
  "$fsrr" "$sub" --help >/dev/null 2>&1 || { echo "FAIL: fsrr $sub --help"; failures=$((failures + 1)); }
done
"$fsrr" frobnicate >/dev/null 2>&1 && { echo "FAIL: an unknown subcommand succeeded"; failures=$((failures + 1)); }

if ((failures)); then
  echo "$failures failures"
  exit 1
fi
echo "all command-line checks passed"
