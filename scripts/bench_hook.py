#!/usr/bin/env python3
"""End-to-end latency of `xfile hook` after a Read, and after an Edit that
changes a signature, with the project's service running: process start to
JSON on stdout (or to its exit, when it has nothing to say), as an agent's
hook runner sees it.

    scripts/bench_hook.py ROOT [--reads 50] [--edits 0] [--seed 0] [--xfile PATH]

ROOT is copied to a scratch directory (the service writes its cache and
logs into the tree) and served from a private runtime directory. The first
call starts the service; calls are repeated until one answers (the hook
prints nothing rather than late while the first index runs). Then READS
Python files are sampled with the seed, each read as an agent reads it:
half whole, half 200 lines from a random offset, all in one agent session
(so definitions given before are left out, as for an agent). Prints each call's
milliseconds and whether it answered, then p50 / p95 / max and the share
of reads that got context; the service is killed at the end.

With --edits N, N `def` lines (one line each, of a name called in another
file, sampled with the seed) then
get a new required parameter, `xfile_probe`, the way an agent's Edit
writes the file; the hook is called with the Edit's JSON and timed, then
the file is restored and the hook called again (untimed), so each edit is
compared with the file as it was. Prints each edit's milliseconds and how
many lines of breaks it named, then p50 / p95 / max."""
import argparse, glob, json, os, random, re, shutil, statistics, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hook_driver import call, edit_payload, read_payload, settle, stop_services  # noqa: E402

DEF = re.compile(r"^(\s*)def (\w+)\((.*)\)(\s*->.*)?:\s*$")


def with_probe(line):
    """The `def` line with a new required parameter, or None when the line
    is not one simple enough to change safely."""
    match = DEF.match(line)
    if not match:
        return None
    indent, name, params, returns = match.group(1), match.group(2), match.group(3), match.group(4) or ""
    params = params.strip()
    if params.startswith(("*", "/")) or "lambda" in params:
        return None
    if indent and (params == "self" or params.startswith("self,")):
        params = "self, xfile_probe" + params[4:]
    elif indent:
        return None
    else:
        params = "xfile_probe" + (", " + params if params else "")
    return f"{indent}def {name}({params}){returns}:"


CALL = re.compile(r"(\w+)\(")


def edits(xfile, env, tree, files, rng, count):
    # Definitions whose name is called in another file: an edit of a
    # definition nobody calls tells nothing of the hook's cost.
    calling = {}
    for path in files:
        for name in set(CALL.findall(open(path, encoding="utf-8", errors="replace").read())):
            calling[name] = calling.get(name, 0) + 1
    candidates = []
    for path in files:
        for number, line in enumerate(open(path, encoding="utf-8", errors="replace")):
            line = line.rstrip("\n")
            new = with_probe(line)
            if new and calling.get(DEF.match(line).group(2), 0) >= 2:
                candidates.append((path, line, new))
    times, named = [], 0
    for path, old, new in rng.sample(candidates, min(count, len(candidates))):
        original = open(path, encoding="utf-8").read()
        if original.count(old) != 1:
            continue
        with open(path, "w", encoding="utf-8") as out:
            out.write(original.replace(old, new, 1))
        ms, text = call(xfile, env, edit_payload(path, old, new, "bench"))
        with open(path, "w", encoding="utf-8") as out:
            out.write(original)
        call(xfile, env, edit_payload(path, new, old, "bench"))
        times.append(ms)
        lines = max(0, len(text.splitlines()) - 1)
        named += bool(text)
        print(f"{ms:7.1f} ms  {lines:3} lines  {os.path.relpath(path, tree)}: {old.strip()}")
    return {
        "edits": len(times),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(percentile(times, 0.95), 1),
        "max_ms": round(max(times), 1),
        "with_breaks": f"{named}/{len(times)}",
    }


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--edits", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--xfile", default="target/release/xfile")
    args = parser.parse_args()
    xfile = os.path.abspath(args.xfile)
    scratch = tempfile.mkdtemp(prefix="bench-hook-")
    runtime = os.path.join(scratch, "runtime")
    os.mkdir(runtime, 0o700)
    tree = os.path.join(scratch, "tree")
    shutil.copytree(args.root, tree, symlinks=True)
    # A project marker, so that the hook finds the copy's root.
    if not os.path.exists(os.path.join(tree, "pyproject.toml")):
        open(os.path.join(tree, "pyproject.toml"), "w").close()
    env = dict(os.environ, XFILE_RUNTIME_DIR=runtime)
    files = sorted(p for p in glob.glob(os.path.join(tree, "**", "*.py"), recursive=True)
                   if os.path.getsize(p) > 0)
    try:
        started = time.perf_counter()
        while True:
            _, text = call(xfile, env, read_payload(files[0], session="bench"))
            if text or time.perf_counter() - started > 120:
                break
        print(f"service ready after {time.perf_counter() - started:.1f} s")
        # Timed once the service is idle: its first index's background
        # work (hot spots, the warm-start cache) is over by the time an
        # agent reads on, and would only add this machine's noise.
        print(f"service idle {settle(runtime):.1f} s later")
        rng = random.Random(args.seed)
        times, answered = [], 0
        for path in rng.sample(files, min(args.reads, len(files))):
            lines = sum(1 for _ in open(path, encoding="utf-8", errors="replace"))
            if rng.random() < 0.5 or lines <= 200:
                offset = limit = None
            else:
                offset, limit = rng.randint(1, lines - 199), 200
            ms, text = call(xfile, env, read_payload(path, offset, limit, "bench"))
            times.append(ms)
            answered += bool(text)
            span = "whole" if offset is None else f"{offset}+{limit}"
            print(f"{ms:7.1f} ms  {'context' if text else 'nothing':7}  {os.path.relpath(path, tree)} {span}")
        if times:
            print(json.dumps({
                "reads": len(times),
                "p50_ms": round(statistics.median(times), 1),
                "p95_ms": round(percentile(times, 0.95), 1),
                "max_ms": round(max(times), 1),
                "with_context": f"{answered}/{len(times)}",
            }))
        if args.edits:
            print(json.dumps(edits(xfile, env, tree, files, rng, args.edits)))
    finally:
        stop_services(runtime)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
