#!/usr/bin/env python3
"""CPU time (user + sys, from /proc) that `xfile watch --json` spends per
update, for each kind of change, on a copy of TREE: on a shared, loaded
machine a steadier figure than wall time (it still includes the watch
command's own per-update diff of relationships and warnings). Kinds: an
existing file gains / loses `import T`, `from T import x`; a new file is
created / deleted; a file renamed back and forth. The edited file is edited
once before the timed runs (its first edit is not what is measured).
With --trace, `xfile watch --trace` also reports each update's recomputation,
and each kind's line adds the medians of the engine's own update time
(`analyze_ms`), of the resolve stage's crepe time and of the facts it read.
Usage: scripts/bench_update_cpu.py XFILE TREE [N] [--trace]   (N changes each way, default 15)"""
import os, shutil, subprocess, sys, tempfile, time, json, statistics
trace = "--trace" in sys.argv
args = [a for a in sys.argv[1:] if a != "--trace"]
xfile, tree = args[0], args[1]
n = int(args[2]) if len(args) > 2 else 15
work = tempfile.mkdtemp(prefix="xf-cpu-"); root = os.path.join(work, "t")
shutil.copytree(tree, root)
out = open(os.path.join(work, "out"), "w+")
p = subprocess.Popen([xfile, "--no-cache", "watch", "--json", "--root", root] + (["--trace"] if trace else []), stdout=out, stderr=subprocess.PIPE, text=True)
while "watching" not in p.stderr.readline(): pass
time.sleep(1)
tick = os.sysconf("SC_CLK_TCK")
def cpu():
    f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick
def updates():
    out.flush(); return sum(1 for _ in open(os.path.join(work, "out")))
def settle(k):
    t = time.time()
    while updates() < k and time.time() - t < 20: time.sleep(0.02)
    time.sleep(0.15)
imp = os.path.join(root, "django/utils/dates.py"); orig = open(imp).read()
def write(path, text): open(path, "w").write(text)
kinds = {
  "import": lambda i: write(imp, ("import django.utils.termcolors\n" + orig) if i % 2 == 0 else orig),
  "from-import": lambda i: write(imp, ("from django.utils.termcolors import colorize\n" + orig) if i % 2 == 0 else orig),
  "new/deleted": lambda i: write(os.path.join(root, "django/utils/xf_new.py"), "import django.utils.termcolors\n") if i % 2 == 0 else os.remove(os.path.join(root, "django/utils/xf_new.py")),
  "rename": None,
}
# The first edit of a file is not what is timed (see docs/performance.md).
write(imp, "import os\n" + orig); settle(1); write(imp, orig); settle(2)
done = updates()
for kind, change in kinds.items():
    if kind == "rename":
        a, b = os.path.join(root, "django/utils/xf_a.py"), os.path.join(root, "django/utils/xf_b.py")
        write(a, "import django.utils.termcolors\n"); done += 1; settle(done)
        change = lambda i: os.rename(a, b) if i % 2 == 0 else os.rename(b, a)
    start = cpu()
    for i in range(2 * n):
        change(i); done += 1; settle(done)
    line = f"{kind:12s} {1000 * (cpu() - start) / (2 * n):7.1f} ms CPU per update ({2*n} updates)"
    if trace:
        out.flush()
        recorded = [json.loads(l).get("trace") or {} for l in open(os.path.join(work, "out")).readlines()[done - 2 * n:done]]
        recorded = [r for r in recorded if "durations" in r]
        median = lambda xs: statistics.median(xs) if xs else 0
        analyze = median([r["durations"]["analyze_ms"] for r in recorded])
        crepe = median([r["queries"]["datalog_ms"].get("resolve_stage", 0) for r in recorded])
        read = median([r["queries"].get("resolve_facts_read", 0) for r in recorded])
        line += f"; medians: analyze {analyze:.1f} ms, resolve stage {crepe:.2f} ms over {read:.0f} facts"
    print(line, flush=True)
p.terminate(); p.wait(); shutil.rmtree(work, ignore_errors=True)
