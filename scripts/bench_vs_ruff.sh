#!/usr/bin/env bash
# Times `xfile index` against `ruff analyze graph` on the same tree, runs
# interleaved so that both see the same machine load. Prints each tool's
# median and minimum wall time over N runs (default 15).
# Usage: scripts/bench_vs_ruff.sh [TREE] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
tree=${1:-$(scripts/fetch_django.sh)}
runs=${2:-15}
cargo build --release --quiet
xfile=$PWD/target/release/xfile
cd "$tree"
python3 - "$xfile" "$runs" <<'PY'
import statistics, subprocess, sys, time
xfile, runs = sys.argv[1], int(sys.argv[2])
cmds = {"xfile index": [xfile, "index", "--root", "."], "ruff analyze graph": ["ruff", "analyze", "graph", "."]}
times = {name: [] for name in cmds}
for _ in range(runs):
    for name, cmd in cmds.items():
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[name].append(time.perf_counter() - start)
for name, ts in times.items():
    print(f"{name:20s} median {statistics.median(ts)*1e3:7.1f} ms   min {min(ts)*1e3:7.1f} ms   ({runs} runs)")
PY
