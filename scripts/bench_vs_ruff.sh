#!/usr/bin/env bash
# Times a cold `xfile --no-cache index` against `ruff analyze graph` on the
# same tree, runs interleaved so that all see the same machine load. Prints
# each command's median and minimum wall time and median peak RSS over N runs
# (default 15), and its ratios to ruff's. With FILE, also the cold answers
# about it: `deps --imports` (the import graph's first answer), `dependents
# --imports` and the full `deps`.
# Usage: scripts/bench_vs_ruff.sh [TREE] [N] [FILE]
# XFILE=path/to/xfile times that binary instead of a fresh release build
# (say, the previous commit's, for a before/after comparison).
set -euo pipefail
cd "$(dirname "$0")/.."
tree=${1:-$(scripts/fetch_django.sh)}
runs=${2:-15}
file=${3:-}
if [[ -z ${XFILE:-} ]]; then
  cargo build --release --quiet
fi
xfile=${XFILE:-$PWD/target/release/xfile}
cd "$tree"
python3 - "$xfile" "$runs" "$file" <<'PY'
import re, statistics, subprocess, sys, time
xfile, runs, file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cold = [xfile, "--no-cache"]
cmds = {"ruff analyze graph": ["ruff", "analyze", "graph", "."], "xfile index": [*cold, "index", "--root", "."]}
if file:
    cmds["xfile deps --imports"] = [*cold, "deps", "--imports", file]
    cmds["xfile dependents --imports"] = [*cold, "dependents", "--imports", file]
    cmds["xfile deps"] = [*cold, "deps", file]
times = {name: [] for name in cmds}
rss = {name: [] for name in cmds}
for _ in range(runs):
    for name, cmd in cmds.items():
        start = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-v", *cmd], check=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        times[name].append(time.perf_counter() - start)
        rss[name].append(int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1)))
ruff = "ruff analyze graph"
for name, ts in times.items():
    ratios = ""
    if name != ruff:
        t = statistics.median(ts) / statistics.median(times[ruff])
        m = statistics.median(rss[name]) / statistics.median(rss[ruff])
        ratios = f"   / ruff: wall {t:.2f}x, RSS {m:.2f}x"
    print(f"{name:27s} median {statistics.median(ts)*1e3:7.1f} ms   min {min(ts)*1e3:7.1f} ms   "
          f"peak RSS median {statistics.median(rss[name])/1024:6.1f} MB{ratios}")
print(f"({runs} runs each, interleaved)")
PY
