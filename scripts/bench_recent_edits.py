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
import argparse, os, random, shutil, statistics, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_stdio import Server  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("root", nargs="?", default="target/bench-data/django-5.2.8")
parser.add_argument("n", nargs="?", type=int, default=12)
parser.add_argument("--xfile", default="target/release/xfile")
parser.add_argument("--target", default="django/utils/termcolors.py")
args = parser.parse_args()

work = tempfile.mkdtemp(prefix="xfile-recent-edits-")
root = os.path.join(work, "tree")
shutil.copytree(args.root, root)
old = time.time() - 30 * 24 * 3600
for d, _, fs in os.walk(root):
    for f in fs:
        os.utime(os.path.join(d, f), (old, old))
package = os.path.join(root, args.target.split("/")[0])
candidates = sorted(
    os.path.relpath(os.path.join(d, f), root)
    for d, _, fs in os.walk(package) for f in fs
    if f.endswith(".py") and f != "__init__.py" and os.path.join(d, f) != os.path.join(root, args.target)
)
random.Random(1).shuffle(candidates)
touched, untouched = candidates[:args.n], candidates[args.n:2 * args.n]
for rel in touched:
    os.utime(os.path.join(root, rel), None)
os.sync()

server = Server(os.path.abspath(args.xfile), root)

def depends(source):
    return source in server.call("get_dependents", {"file_path": args.target})

depends(args.target)  # waits for the first index
time.sleep(3.0)  # a pause: the touched files are prepared in it
module = args.target[:-3].replace("/", ".")
samples = {"modified last (prepared at start)": [], "not modified lately": []}
for recent, other in zip(touched, untouched):
    for label, rel in [("modified last (prepared at start)", recent), ("not modified lately", other)]:
        if depends(rel):
            continue
        path = os.path.join(root, rel)
        text = open(path).read()
        start = time.perf_counter()
        with open(path, "w") as f:
            f.write(f"import {module}\n{text}")
        while not depends(rel):
            if time.perf_counter() - start > 10:
                raise SystemExit("the change never showed")
        samples[label].append(time.perf_counter() - start)
        with open(path, "w") as f:
            f.write(text)
        while depends(rel):
            pass
        time.sleep(0.3)
for label, s in samples.items():
    s.sort()
    print(f"first edit, {label:34s} p50 {statistics.median(s)*1e3:6.1f} ms  "
          f"max {s[-1]*1e3:6.1f} ms  ({len(s)} files)")
server.close()
shutil.rmtree(work, ignore_errors=True)
