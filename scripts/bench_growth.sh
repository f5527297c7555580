#!/usr/bin/env bash
# Growth: cold `xfile --no-cache index` on one Django copy against a tree of four
# (the original at the root plus three copies in sub-directories, each a
# sub-project with its own pyproject.toml), interleaved runs so both see the
# same machine load. Prints median wall time and peak RSS of each, and their
# ratios (targets: time <= 4.4x, RSS <= 4x).
# Usage: scripts/bench_growth.sh [N]   (builds the x4 tree once under
# target/bench-data/django-x4; edit latencies on it: XFILE_BENCH_TREE=that
# directory cargo bench --bench index)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
one=$(scripts/fetch_django.sh)
four=target/bench-data/django-x4
if [ ! -d "$four" ]; then
  cp -r "$one" "$four.tmp"
  for i in 1 2 3; do cp -r "$one" "$four.tmp/copy$i"; done
  mv "$four.tmp" "$four"
fi
cargo build --release --quiet
xfile=$PWD/target/release/xfile
python3 - "$xfile" "$runs" "$one" "$four" <<'PY'
import re, statistics, subprocess, sys, time
xfile, runs, one, four = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
trees = {"1 copy": one, "4 copies": four}
times = {k: [] for k in trees}
rss = {k: [] for k in trees}
for _ in range(runs):
    for name, tree in trees.items():
        start = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-v", xfile, "--no-cache", "index", "--root", tree],
                             check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        times[name].append(time.perf_counter() - start)
        rss[name].append(int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1)))
for name in trees:
    print(f"{name:9s} median {statistics.median(times[name])*1e3:8.1f} ms   peak RSS median {statistics.median(rss[name])/1024:7.1f} MB   ({runs} runs)")
t = statistics.median(times["4 copies"]) / statistics.median(times["1 copy"])
m = statistics.median(rss["4 copies"]) / statistics.median(rss["1 copy"])
print(f"ratio 4/1: time {t:.2f}x (target <= 4.4x), peak RSS {m:.2f}x (target <= 4x)")
PY
