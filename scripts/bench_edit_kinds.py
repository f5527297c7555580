#!/usr/bin/env python3
"""What each kind of edit costs the engine, one file after another as an
agent edits: `xfile --no-cache watch --json --trace` on a copy of TREE, then
N files spread over `django/` (every N-th of the sorted non-test modules)
edited in phases, each phase editing every chosen file once:

  first edit     `import django.utils.termcolors` appended (the file's first
                 edit since the index)
  new name       a module-level name appended (`X_1 = 1`): what the file
                 exports changes, and so may what its importers resolve
  new class      a class with a method appended
  new method     a method added to the class the last phase appended
  body only      a module-level name rebound (`X_1 = 2`)
  new file       a module written into the file's directory

Prints, per phase, the median and max of the update's `analyze_ms` and the
median of the memos salsa re-verified (`reused` in the trace, summed over
queries): a count, the same in every run of a build, where the time swings
with the machine's load. The first phase is each file's first edit since
the index (what `analyze` walks then). With PERF=1 in the environment,
`perf record` samples the watch process meanwhile into /tmp/edit_kinds.perf.
Usage: scripts/bench_edit_kinds.py XFILE TREE [N]   (N default 10)."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

xfile, tree = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 10
work = tempfile.mkdtemp(prefix="xf-kinds-")
root = os.path.join(work, "t")
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
                             "-o", "/tmp/edit_kinds.perf", "-p", str(p.pid)], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, "django"))
               for f in fs if f.endswith(".py") and "/tests" not in d)
chosen = [files[i * (len(files) // n)] for i in range(n)]


def lines():
    out.flush()
    return [line for line in open(out_path) if line.strip()]


def updates(write):
    """Runs `write`, waits for the update it causes, returns its figures."""
    seen = len(lines())
    write()
    start = time.time()
    while len(lines()) <= seen and time.time() - start < 30:
        time.sleep(0.02)
    time.sleep(0.3)
    found = []
    for line in lines()[seen:]:
        trace = json.loads(line)["trace"]
        found.append((trace["durations"]["analyze_ms"], sum(trace["queries"]["reused"].values())))
    return found


def append(path, text):
    def write():
        with open(path, "a") as f:
            f.write(text)
    return write


def rewrite(path, old, new):
    def write():
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace(old, new))
    return write


def create(path):
    def write():
        with open(path, "w") as f:
            f.write("import os\n\n\ndef fresh():\n    return os.sep\n")
    return write


method = "\n    def xf_added(self):\n        return 1\n"
phases = [
    ("first edit", lambda f: append(f, "\nimport django.utils.termcolors\n")),
    ("new name", lambda f: append(f, "\nX_1 = 1\n")),
    ("new class", lambda f: append(f, "\n\nclass XfNew:\n    def run(self):\n        return 1\n")),
    ("new method", lambda f: rewrite(f, "class XfNew:\n", "class XfNew:" + method)),
    ("body only", lambda f: rewrite(f, "\nX_1 = 1\n", "\nX_1 = 2\n")),
    ("new file", lambda f: create(os.path.join(os.path.dirname(f), f"xf_fresh_{chosen.index(f)}.py"))),
]
results = []
for name, edit in phases:
    figures = []
    for path in chosen:
        figures += updates(edit(path))
    results.append((name, figures))
if perf:
    perf.send_signal(2)
    perf.wait()
p.kill()
shutil.rmtree(work)
for name, figures in results:
    ms = [f[0] for f in figures]
    memos = [f[1] for f in figures]
    print(f"{os.path.basename(xfile)} {name}: {len(figures)} updates, analyze_ms median "
          f"{statistics.median(ms):.1f} max {max(ms):.1f}, memos re-verified median "
          f"{statistics.median(memos):.0f}")
