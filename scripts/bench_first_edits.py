#!/usr/bin/env python3
"""What a file's first edit costs the engine: `xfile --no-cache watch --json
--trace` on a copy of TREE, then one `import django.utils.termcolors`
appended to each of N files spread over `django/` (every N-th of the sorted
non-test modules), each file's first edit since the index. Prints the
median and max of the update's `analyze_ms` and the median of the memos
salsa re-verified (`reused` in the trace, summed over queries): the second
is a count, the same in every run of a build, where the first swings with
the machine's load. With PERF=1 in the environment, `perf record` samples
the watch process meanwhile into /tmp/first_edits.perf.
Usage: scripts/bench_first_edits.py XFILE TREE [N]   (N default 12)"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

xfile, tree = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 12
work = tempfile.mkdtemp(prefix="xf-first-"); root = os.path.join(work, "t")
shutil.copytree(tree, root)
out_path = os.path.join(work, "out")
out = open(out_path, "w+")
p = subprocess.Popen([xfile, "--no-cache", "watch", "--json", "--trace", "--root", root],
                     stdout=out, stderr=subprocess.PIPE, text=True)
while "watching" not in p.stderr.readline():
    pass
time.sleep(1)
perf = None
if os.environ.get("PERF"):
    perf = subprocess.Popen(["perf", "record", "-F", "2000", "-e", "cpu-clock", "-g",
                             "-o", "/tmp/first_edits.perf", "-p", str(p.pid)], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, "django"))
               for f in fs if f.endswith(".py") and "/tests" not in d)
chosen = [files[i * (len(files) // n)] for i in range(n)]


def lines():
    out.flush()
    return [line for line in open(out_path) if line.strip()]


results = []
for path in chosen:
    seen = len(lines())
    with open(path, "a") as f:
        f.write("\nimport django.utils.termcolors\n")
    start = time.time()
    while len(lines()) <= seen and time.time() - start < 30:
        time.sleep(0.02)
    time.sleep(0.3)
    for line in lines()[seen:]:
        trace = json.loads(line)["trace"]
        results.append((trace["durations"]["analyze_ms"], sum(trace["queries"]["reused"].values())))
if perf:
    perf.send_signal(2)
    perf.wait()
p.kill()
shutil.rmtree(work)
ms = [r[0] for r in results]
memos = [r[1] for r in results]
print(f"{os.path.basename(xfile)}: {len(results)} updates, analyze_ms median {statistics.median(ms):.1f} "
      f"max {max(ms):.1f}, memos re-verified median {statistics.median(memos):.0f}")
