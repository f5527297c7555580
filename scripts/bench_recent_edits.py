#!/usr/bin/env python3
"""First edits of the files modified last, over MCP: on a copy of ROOT whose
files all carry an old modification time, N files of the target's top package
are touched (modified now) and N others are not; `xfile serve` starts, the
bench waits for its first index and a pause, then times the first edit of
each file (an `import` of the target added), from the write to a fresh
`get_dependents` answer that shows it, alternating touched and untouched
files. A server prepares the files modified last as it starts
(`Live::expect_recent_edits`), so the touched ones should skip the walk of
every file's chain that a first edit otherwise pays.
Usage: scripts/bench_recent_edits.py ROOT [N] [--xfile PATH]"""
import argparse, os, random, shutil, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edit_bench import copied_tree, dependents_probe, first_edit, package_modules  # noqa: E402
from mcp_stdio import Server  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("root", nargs="?", default="target/bench-data/django-5.2.8")
parser.add_argument("n", nargs="?", type=int, default=12)
parser.add_argument("--xfile", default="target/release/xfile")
parser.add_argument("--target", default="django/utils/termcolors.py")
args = parser.parse_args()

work, root = copied_tree(args.root, "xfile-recent-edits-")
old = time.time() - 30 * 24 * 3600
for d, _, fs in os.walk(root):
    for f in fs:
        os.utime(os.path.join(d, f), (old, old))
candidates = [c for c in package_modules(root, args.target, random.Random(1)) if c != args.target]
touched, untouched = candidates[:args.n], candidates[args.n:2 * args.n]
for rel in touched:
    os.utime(os.path.join(root, rel), None)
os.sync()

server = Server(os.path.abspath(args.xfile), root)
depends = dependents_probe(server, args.target)
depends(args.target)  # waits for the first index
time.sleep(3.0)  # a pause: the touched files are prepared in it
module = args.target[:-3].replace("/", ".")
samples = {"modified last (prepared at start)": [], "not modified lately": []}
for recent, other in zip(touched, untouched):
    for label, rel in [("modified last (prepared at start)", recent), ("not modified lately", other)]:
        if not depends(rel):
            samples[label].append(first_edit(depends, root, rel, module))
for label, s in samples.items():
    s.sort()
    print(f"first edit, {label:34s} p50 {statistics.median(s)*1e3:6.1f} ms  "
          f"max {s[-1]*1e3:6.1f} ms  ({len(s)} files)")
server.close()
shutil.rmtree(work, ignore_errors=True)
