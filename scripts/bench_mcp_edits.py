#!/usr/bin/env python3
"""Edit latency end to end over MCP: spawns `xfile serve` on a copy of ROOT
(its watcher on), then for each kind of change writes to disk and polls
`get_dependents` on TARGET until the answer reflects the change; prints
p50/p95/max from the write to the first fresh answer. Kinds: an existing
file gains / loses `import T` and `from T import x`; a new file importing T
is created / deleted; that file is renamed back and forth; and the first
edit of each of N other files (none edited before, so each is its file's
first change since the index), once straight away and once a second after
`read_with_context` on the file, the way an agent reads a file before it
edits it.
Usage: scripts/bench_mcp_edits.py ROOT [N] [--xfile PATH]
(ROOT defaults to the Django tree; N changes per kind, default 30)"""
import argparse, os, random, shutil, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edit_bench import (copied_tree, dependents_probe, first_edit, package_modules,  # noqa: E402
                        report, timed, write)
from mcp_stdio import Server  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("root", nargs="?", default="target/bench-data/django-5.2.8")
parser.add_argument("n", nargs="?", type=int, default=30)
parser.add_argument("--xfile", default="target/release/xfile")
parser.add_argument("--target", default="django/utils/termcolors.py")
parser.add_argument("--importer", default="django/utils/dates.py")
args = parser.parse_args()

work, root = copied_tree(args.root, "xfile-mcp-edits-")
# The copy's dirty pages flushed while changes are timed made the figures
# on a large tree swing by 3-4x between runs of one build.
os.sync()
server = Server(os.path.abspath(args.xfile), root)
depends = dependents_probe(server, args.target)

depends(args.importer)  # waits for the first index
module = args.target[:-3].replace("/", ".")
importer = os.path.join(root, args.importer)
original = open(importer).read()
assert not depends(args.importer), f"{args.importer} already depends on {args.target}"
time.sleep(1.0)

for line in [f"import {module}", f"from {module} import colorize"]:
    samples = []
    for i in range(2 * args.n):
        adding = i % 2 == 0
        text = f"{line}\n{original}" if adding else original
        samples.append(timed(lambda: write(importer, text), lambda: depends(args.importer) == adding))
    report(f"edit: `{line.split(' import')[0]} ...`", samples)

new_rel = os.path.join(os.path.dirname(args.importer), "xf_new.py")
moved_rel = os.path.join(os.path.dirname(args.importer), "xf_renamed.py")
new_path, moved_path = os.path.join(root, new_rel), os.path.join(root, moved_rel)
created, deleted = [], []
for _ in range(args.n):
    created.append(timed(lambda: write(new_path, f"import {module}\n"), lambda: depends(new_rel)))
    deleted.append(timed(lambda: os.remove(new_path), lambda: not depends(new_rel)))
report("new file", created)
report("deleted file", deleted)
write(new_path, f"import {module}\n")
time.sleep(0.5)
moved = []
for i in range(2 * args.n):
    a, b, ra, rb = (new_path, moved_path, new_rel, moved_rel) if i % 2 == 0 else (moved_path, new_path, moved_rel, new_rel)
    moved.append(timed(lambda: os.rename(a, b), lambda: depends(rb) and not depends(ra)))
report("renamed file", moved)

# First edits: files under the target's top package, in a fixed random
# order, that do not import the target already.
fresh = [c for c in package_modules(root, args.target, random.Random(0))
         if c not in (args.target, args.importer, new_rel, moved_rel)]
for label, read_first in [("first edit of a file", False), ("first edit, read a second before", True)]:
    samples = []
    while len(samples) < args.n and fresh:
        rel = fresh.pop()
        if depends(rel):
            continue
        if read_first:
            server.call("read_with_context", {"file_path": rel})
            time.sleep(1.0)
        samples.append(first_edit(depends, root, rel, module))
    report(label, samples)
server.close()
shutil.rmtree(work, ignore_errors=True)
