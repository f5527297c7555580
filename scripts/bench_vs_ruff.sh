#!/usr/bin/env bash
# Times `xfile index` against `ruff analyze graph` on the same tree, runs
# interleaved so that both see the same machine load. Prints each tool's
# median and minimum wall time and median peak RSS over N runs (default 15).
# Usage: scripts/bench_vs_ruff.sh [TREE] [N]
# XFILE=path/to/xfile times that binary instead of a fresh release build
# (say, the previous commit's, for a before/after comparison).
set -euo pipefail
cd "$(dirname "$0")/.."
tree=${1:-$(scripts/fetch_django.sh)}
runs=${2:-15}
if [[ -z ${XFILE:-} ]]; then
  cargo build --release --quiet
fi
xfile=${XFILE:-$PWD/target/release/xfile}
cd "$tree"
python3 - "$xfile" "$runs" <<'PY'
import re, statistics, subprocess, sys, time
xfile, runs = sys.argv[1], int(sys.argv[2])
cmds = {"xfile index": [xfile, "index", "--root", "."], "ruff analyze graph": ["ruff", "analyze", "graph", "."]}
times = {name: [] for name in cmds}
rss = {name: [] for name in cmds}
for _ in range(runs):
    for name, cmd in cmds.items():
        start = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-v", *cmd], check=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        times[name].append(time.perf_counter() - start)
        rss[name].append(int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1)))
for name, ts in times.items():
    print(f"{name:20s} median {statistics.median(ts)*1e3:7.1f} ms   min {min(ts)*1e3:7.1f} ms   "
          f"peak RSS median {statistics.median(rss[name])/1024:6.1f} MB   ({runs} runs)")
x, r = (statistics.median(times[n]) for n in cmds)
print(f"xfile / ruff wall time: {x / r:.2f}x; peak RSS: "
      f"{statistics.median(rss['xfile index']) / statistics.median(rss['ruff analyze graph']):.2f}x")
PY
