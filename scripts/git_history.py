#!/usr/bin/env python3
"""Builds the git benchmark repository: a copy of the Django 5.2.8 tree
with a generated history of 1,000 commits (target/bench-data/django-git).

The first commit holds the tree; each later commit edits one of 40 modules
(a line appended) and every fourth also rewrites a line of
django/db/models/fields/related.py (2,065 lines), so blame has history to
walk. Five authors take turns, one commit an hour from 2024-01-01; every
100th commit is a merge of a one-commit side branch. The history is
written with `git fast-import` (seconds, not minutes); the work tree is
then checked out at the tip. Run once; benches/git.rs reads it.
"""

import os
import shutil
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SOURCE = os.path.join(ROOT, "target/bench-data/django-5.2.8")
DEST = os.path.join(ROOT, "target/bench-data/django-git")
BLAMED = "django/db/models/fields/related.py"
COMMITS = 1000
AUTHORS = ["Ann", "Bob", "Cid", "Dee", "Eve"]
START = 1704067200  # 2024-01-01 00:00:00 UTC


def data(out, payload):
    out.write(b"data %d\n" % len(payload))
    out.write(payload)
    out.write(b"\n")


def main():
    if not os.path.isdir(SOURCE):
        sys.exit(f"no tree at {SOURCE}; run scripts/fetch_django.sh first")
    if os.path.isdir(DEST):
        print(DEST)
        return
    # xfile's own cache and logs, there if the source tree was ever indexed,
    # are no part of Django: committed, they would be large "changed" files
    # in every benchmark that indexes the copy.
    own = (".xfile_cache", ".cross_file_context_logs")
    shutil.copytree(SOURCE, DEST, symlinks=True, ignore=shutil.ignore_patterns(*own))
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    git = lambda *args, **kw: subprocess.run(["git", *args], cwd=DEST, env=env, check=True, **kw)
    git("init", "-q", "-b", "main")
    with open(os.path.join(DEST, ".git/info/exclude"), "a") as exclude:
        exclude.write("".join(f"{name}/\n" for name in own))
    files = []
    for dirpath, dirnames, filenames in os.walk(DEST):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path):
                files.append(os.path.relpath(path, DEST))
    files.sort()
    edited = [f for f in files if f.startswith("django/") and f.endswith(".py")][:400:10]
    contents = {f: open(os.path.join(DEST, f), "rb").read() for f in edited + [BLAMED]}
    importer = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=DEST, env=env, stdin=subprocess.PIPE)
    out = importer.stdin

    def commit(n, ref, parents, changes, message):
        author = AUTHORS[n % len(AUTHORS)]
        who = f"{author} <{author.lower()}@example.com> {START + n * 3600} +0000"
        out.write(f"commit {ref}\nmark :{n}\nauthor {who}\ncommitter {who}\n".encode())
        data(out, message.encode())
        for i, parent in enumerate(parents):
            out.write(f"{'from' if i == 0 else 'merge'} :{parent}\n".encode())
        for path, payload in changes:
            out.write(f"M 100644 inline {path}\n".encode())
            data(out, payload)

    initial = [(f, open(os.path.join(DEST, f), "rb").read()) for f in files]
    commit(1, "refs/heads/main", [], initial, "Django 5.2.8")
    tip = 1
    n = 2
    lines = contents[BLAMED].split(b"\n")
    while n <= COMMITS:
        path = edited[n % len(edited)]
        contents[path] += b"# change %d\n" % n
        changes = [(path, contents[path])]
        if n % 4 == 0:
            at = (n * 37) % (len(lines) - 1)
            lines[at] = lines[at] + b"  # rev %d" % n
            contents[BLAMED] = b"\n".join(lines)
            changes.append((BLAMED, contents[BLAMED]))
        if n % 100 == 0 and n + 1 <= COMMITS:
            # A side branch of one commit, merged back.
            commit(n, "refs/heads/side", [tip], changes, f"Side change {n}")
            n += 1
            commit(n, "refs/heads/main", [tip, n - 1], [], f"Merge side change {n - 1}")
        else:
            commit(n, "refs/heads/main", [tip], changes, f"Change {n} in {path}")
        tip = n
        n += 1
    out.close()
    if importer.wait() != 0:
        sys.exit("git fast-import failed")
    git("reset", "-q", "--hard", "main")
    print(DEST)


if __name__ == "__main__":
    main()
