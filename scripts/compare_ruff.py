#!/usr/bin/env python3
"""Differential test of xfile's import graph against `ruff analyze graph`.

Usage: scripts/compare_ruff.py ROOT [--xfile PATH] [--show N]

Runs both tools at ROOT and compares the sets of (source, target) edges
between project files. ruff is a dev tool (pip install ruff); it is never a
runtime dependency of xfile. Prints precision and recall of xfile's edges
taking ruff's as the reference, then samples of each difference.
"""
import argparse
import json
import subprocess
import sys
import time


def ruff_edges(root):
    started = time.perf_counter()
    out = subprocess.run(
        ["ruff", "analyze", "graph", "."], cwd=root, check=True,
        capture_output=True, text=True,
    ).stdout
    elapsed = time.perf_counter() - started
    graph = json.loads(out)
    edges = {(src, dst) for src, dsts in graph.items() for dst in dsts if src != dst}
    return edges, set(graph), elapsed


def xfile_edges(root, xfile):
    started = time.perf_counter()
    out = subprocess.run(
        [xfile, "export", "--root", root], check=True, capture_output=True, text=True,
    ).stdout
    elapsed = time.perf_counter() - started
    export = json.loads(out)
    edges = {
        (r["source_file"], r["target_file"])
        for r in export["relationships"]
        if r["relationship_type"] == "import"
        and not r["target_file"].startswith("<")
        and r["source_file"] != r["target_file"]
    }
    files = {f["relative_path"] for f in export["files"]}
    return edges, files, elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--xfile", default="target/release/xfile")
    parser.add_argument("--show", type=int, default=15)
    args = parser.parse_args()

    ruff, ruff_files, ruff_time = ruff_edges(args.root)
    ours, our_files, our_time = xfile_edges(args.root, args.xfile)
    # Compare only files both tools saw (ruff also lists files that do not parse).
    common = ruff_files & our_files
    ruff = {e for e in ruff if e[0] in common}
    ours = {e for e in ours if e[0] in common}
    agree = ruff & ours
    precision = len(agree) / len(ours) if ours else 1.0
    recall = len(agree) / len(ruff) if ruff else 1.0
    print(f"files: ruff {len(ruff_files)}, xfile {len(our_files)}, compared {len(common)}")
    print(f"edges: ruff {len(ruff)}, xfile {len(ours)}, both {len(agree)}")
    print(f"precision {precision:.4%}  recall {recall:.4%}")
    print(f"wall time (whole command): ruff {ruff_time:.3f}s, xfile export {our_time:.3f}s")
    for title, diff in (("only xfile", ours - ruff), ("only ruff", ruff - ours)):
        print(f"\n{title}: {len(diff)}")
        for src, dst in sorted(diff)[: args.show]:
            print(f"  {src} -> {dst}")
    return 0 if precision >= 0.995 and recall >= 0.995 else 1


if __name__ == "__main__":
    sys.exit(main())
