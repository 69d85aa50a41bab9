#!/usr/bin/env bash
# make_seed_tree.sh DIR [SCALE]: the seed tree of the README (100k×1 KiB, 10k×4 KiB,
# 1k×10 KiB, 100×1000 KiB of random data, names like "1K#00042") times SCALE (default 0.2:
# 22,220 files, 108 MiB). Written with one process per size class, not one dd per file.
set -euo pipefail
dir=$1
scale=${2:-0.2}
mkdir -p "$dir"
python3 - "$dir" "$scale" <<'PY'
import os, sys
d, scale = sys.argv[1], float(sys.argv[2])
classes = [("1K", 1024, 100000), ("4K", 4096, 10000), ("10K", 10240, 1000), ("1000K", 1024000, 100)]
rnd = os.urandom(1 << 20)
for label, size, count in classes:
    for i in range(1, int(count * scale) + 1):
        with open(os.path.join(d, f"{label}#{i:05d}"), "wb") as f:
            off = (i * 7919) % (len(rnd) - 1)
            data = (rnd[off:] + rnd[:off]) * (size // len(rnd) + 1)
            f.write(data[:size])
PY
