#!/usr/bin/env bash
# Opens a page in Debian's headless chromium: prints the DOM after its scripts ran to stdout and
# writes a 1400×1000 screenshot. The flags keep chromium from trying the network (the test
# machines have none) and from touching any profile but a fresh temporary one.
# Usage: tests/lab/page_in_chromium.sh PAGE.html OUT.png
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 PAGE.html OUT.png" >&2
  exit 2
fi
page=$(realpath -m "$1")
out=$(realpath -m "$2")
[[ -r $page ]] || { echo "$0: cannot read $1" >&2; exit 2; }
command -v chromium >/dev/null || { echo "$0: chromium is missing (apt-get install chromium)" >&2; exit 2; }

profile=$(mktemp -d "${TMPDIR:-/tmp}/fsrr-chromium.XXXXXX")
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --user-data-dir="$profile/profile" --virtual-time-budget=5000)
# chromium logs harmless complaints (no D-Bus, ...): shown only when it fails.
log=$profile/chromium.log

# An absolute path, not a file:// URL: chromium encodes the URL itself (spaces, '#', ...).
if ! dom=$(chromium "${flags[@]}" --dump-dom "$page" 2>"$log") || [[ $dom != *"<html"* ]]; then
  echo "$0: chromium --dump-dom failed:" >&2
  cat "$log" >&2
  exit 1
fi
printf '%s\n' "$dom"

rm -f "$out"
if ! chromium "${flags[@]}" --screenshot="$out" --window-size=1400,1000 "$page" >"$log" 2>&1 ||
   [[ ! -s $out ]]; then
  echo "$0: chromium --screenshot wrote no $out:" >&2
  cat "$log" >&2
  exit 1
fi
