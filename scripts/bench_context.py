#!/usr/bin/env python3
"""How much of what a file uses `read_with_context` shows, and at what cost.

For a sample of a project's non-test files, over one MCP server:
- the used definitions: every project definition the file's relationships
  reach (`get_dependencies`: an import's `defined_in` and `target_line`, a
  call's or base's target file and line), other files only;
- covered: those whose `path:line` is in the context section;
- the section's cl100k_base tokens, against `context_token_limit`.

Prints the share of files with at least 90% covered, the share of all used
definitions covered, and the files over the budget.

    pip install bpe_openai   # cl100k_base, offline
    python3 scripts/bench_context.py target/bench-data/django-5.2.8 \\
        --xfile target/release/xfile --limit 1000 --sample 150

The script writes `context_token_limit` into the tree's
`.cross_file_context_links.yml` for the run and restores the file after.
"""
import argparse, json, os, random, re, statistics, sys, time

sys.path.insert(0, os.path.dirname(__file__))
from mcp_stdio import Server  # noqa: E402

import bpe_openai

SEPARATOR = "\n---\n\n[File Content"
BIG = ["django/db/models/base.py", "django/db/models/query.py", "django/contrib/admin/options.py"]


def non_test_files(root):
    files = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("tests", "test", "locale", ".git") and not d.startswith(".")]
        for name in names:
            if name.endswith(".py") and not name.startswith("test"):
                files.append(os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/"))
    return sorted(files)


def used_definitions(relationships, source):
    used = set()
    for r in relationships:
        if r["relationship_type"] == "import":
            target = (r.get("metadata") or {}).get("defined_in")
        else:
            target = r["target_file"]
        line = r.get("target_line")
        if target and line and not target.startswith("<") and target != source:
            used.add((target, line))
    return used


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("--xfile", default="target/release/xfile")
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="print the N worst-covered files")
    args = parser.parse_args()

    encoding = bpe_openai.get_encoding("cl100k_base")
    files = non_test_files(args.root)
    sample = sorted(random.Random(args.seed).sample(files, min(args.sample, len(files))))
    sample += [f for f in BIG if f in files and f not in sample]

    config = os.path.join(args.root, ".cross_file_context_links.yml")
    saved = open(config).read() if os.path.exists(config) else None
    with open(config, "w") as out:
        out.write(f"context_token_limit: {args.limit}\nenable_injection_logging: false\n")
    server = Server(args.xfile, args.root)
    try:
        rows = []
        for path in sample:
            deps = json.loads(server.call("get_dependencies", {"file_path": path}))
            used = used_definitions(deps, path)
            start = time.perf_counter()
            text = server.call("read_with_context", {"file_path": path})
            seconds = time.perf_counter() - start
            section = text.split(SEPARATOR)[0] if SEPARATOR in text else ""
            covered = {u for u in used if re.search(re.escape(f"{u[0]}:{u[1]}") + r"(?!\d)", section)}
            tokens = len(encoding.encode(section))
            rows.append((path, len(used), len(covered), tokens, seconds))
    finally:
        server.close()
        if saved is None:
            os.remove(config)
        else:
            with open(config, "w") as out:
                out.write(saved)

    with_uses = [r for r in rows if r[1] > 0]
    good = sum(1 for r in with_uses if r[2] >= 0.9 * r[1])
    total_used = sum(r[1] for r in rows)
    total_covered = sum(r[2] for r in rows)
    over = [r for r in rows if r[3] > args.limit]
    tokens = sorted(r[3] for r in rows)
    print(f"files: {len(rows)} ({len(with_uses)} use definitions of other files), limit {args.limit} tokens")
    print(f"files with >= 90% of used definitions covered: {good}/{len(with_uses)} ({100 * good / max(1, len(with_uses)):.1f}%)")
    print(f"used definitions covered overall: {total_covered}/{total_used} ({100 * total_covered / max(1, total_used):.1f}%)")
    print(f"files over the budget: {len(over)}; section tokens p50 {statistics.median(tokens):.0f}, max {tokens[-1]}")
    for path in BIG:
        for r in rows:
            if r[0] == path:
                print(f"  {path}: {r[2]}/{r[1]} covered, {r[3]} tokens")
    worst = sorted(with_uses, key=lambda r: r[2] / r[1])[: args.show]
    for r in worst:
        print(f"  worst: {r[0]}: {r[2]}/{r[1]} covered, {r[3]} tokens")
    for r in over:
        print(f"  over: {r[0]}: {r[3]} tokens")


if __name__ == "__main__":
    main()
