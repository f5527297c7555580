#!/usr/bin/env python3
"""Differential test of xfile's import graph against `ruff analyze graph`.

Usage: scripts/compare_ruff.py ROOT [--xfile PATH] [--show N]
                               [--ruff-config OPTION ...]

Runs both tools at ROOT and compares the sets of (source, target) edges
between project files. ruff is a dev tool (pip install ruff); it is never a
runtime dependency of xfile. Prints precision and recall of xfile's edges
taking ruff's as the reference, then samples of each difference.

Two sets of figures: raw, and discounted for ruff's known error. ruff drops
relative imports made inside a namespace sub-directory of a package (a
directory without __init__.py below one with it, such as flask/sansio),
which CPython resolves from the importing module's __package__. Edges only
xfile has that come solely from such imports are left out of the
discounted figures (counted neither right nor wrong), and listed.

ruff takes its source roots from `[tool.ruff] src` (default ROOT and
ROOT/src); ruff 0.17 also adds the parent of each top-level package it
finds (SQLAlchemy's lib/, declared only in setup.cfg's package_dir), so
its graph of SQLAlchemy 2.0.36 is the same with or without
--ruff-config 'src = ["lib"]'. --ruff-config is passed on as ruff's
--config, for a ruff that does not find a root by itself. xfile is never
given configuration.
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import time


def ruff_edges(root, config=()):
    started = time.perf_counter()
    options = [a for c in config for a in ("--config", c)]
    out = subprocess.run(
        ["ruff", "analyze", "graph", *options, "."], cwd=root, check=True,
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
    lines = {}
    for r in export["relationships"]:
        if (
            r["relationship_type"] == "import"
            and not r["target_file"].startswith("<")
            and r["source_file"] != r["target_file"]
        ):
            lines.setdefault((r["source_file"], r["target_file"]), set()).add(r["line_number"])
    files = {f["relative_path"] for f in export["files"]}
    return lines, files, elapsed


def relative_import_lines(path):
    """Lines covered by relative `from . import` statements of a file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as source:
            tree = ast.parse(source.read())
    except (OSError, SyntaxError, ValueError):
        return set()
    covered = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            covered.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return covered


def in_namespace_subdirectory(root, source):
    """Whether SOURCE's directory lacks __init__.py inside a package."""
    directory = os.path.dirname(os.path.join(root, source))
    return not os.path.exists(os.path.join(directory, "__init__.py")) and os.path.exists(
        os.path.join(os.path.dirname(directory), "__init__.py")
    )


def ruff_known_misses(root, only_xfile, lines):
    """Edges only xfile has, made only by relative imports in namespace
    sub-directories of packages: what ruff is known to drop."""
    relative = {}
    known = set()
    for src, dst in only_xfile:
        if not in_namespace_subdirectory(root, src):
            continue
        if src not in relative:
            relative[src] = relative_import_lines(os.path.join(root, src))
        if lines[(src, dst)] <= relative[src]:
            known.add((src, dst))
    return known


def figures(ours, ruff):
    agree = ruff & ours
    precision = len(agree) / len(ours) if ours else 1.0
    recall = len(agree) / len(ruff) if ruff else 1.0
    return precision, recall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--xfile", default="target/release/xfile")
    parser.add_argument("--show", type=int, default=15)
    parser.add_argument(
        "--ruff-config", action="append", default=[],
        help="passed to ruff as --config (a TOML option such as 'src = [\"lib\"]'), repeatable",
    )
    args = parser.parse_args()

    ruff, ruff_files, ruff_time = ruff_edges(args.root, args.ruff_config)
    lines, our_files, our_time = xfile_edges(args.root, args.xfile)
    # Compare only files both tools saw (ruff also lists files that do not parse).
    common = ruff_files & our_files
    ruff = {e for e in ruff if e[0] in common}
    ours = {e for e in lines if e[0] in common}
    agree = ruff & ours
    precision, recall = figures(ours, ruff)
    known = ruff_known_misses(args.root, ours - ruff, lines)
    discounted_precision, discounted_recall = figures(ours - known, ruff)
    print(f"files: ruff {len(ruff_files)}, xfile {len(our_files)}, compared {len(common)}")
    print(f"edges: ruff {len(ruff)}, xfile {len(ours)}, both {len(agree)}")
    print(f"raw:        precision {precision:.4%}  recall {recall:.4%}")
    print(
        f"discounted: precision {discounted_precision:.4%}  recall {discounted_recall:.4%}"
        f"  ({len(known)} edges from relative imports in namespace sub-directories left out)"
    )
    print(f"wall time (whole command): ruff {ruff_time:.3f}s, xfile export {our_time:.3f}s")
    for title, diff in (
        ("only xfile", ours - ruff - known),
        ("only xfile, ruff's known misses", known),
        ("only ruff", ruff - ours),
    ):
        print(f"\n{title}: {len(diff)}")
        for src, dst in sorted(diff)[: args.show]:
            print(f"  {src} -> {dst}")
    return 0 if discounted_precision >= 0.995 and discounted_recall >= 0.995 else 1


if __name__ == "__main__":
    sys.exit(main())
