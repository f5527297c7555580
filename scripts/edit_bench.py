"""What the MCP edit benchmarks share: a scratch copy of a tree, the files of
a package in a seeded order, a probe of `get_dependents`, one timed first
edit of a file, and the report line."""
import os, shutil, statistics, tempfile, time


def copied_tree(source, prefix):
    """A copy of `source` under a new temporary directory: (work, root)."""
    work = tempfile.mkdtemp(prefix=prefix)
    root = os.path.join(work, "tree")
    shutil.copytree(source, root)
    return work, root


def package_modules(root, target, rng):
    """The modules (not `__init__.py`) of `target`'s top package, root-relative,
    shuffled by `rng`."""
    package = os.path.join(root, target.split("/")[0])
    modules = sorted(
        os.path.relpath(os.path.join(d, f), root)
        for d, _, fs in os.walk(package) for f in fs
        if f.endswith(".py") and f != "__init__.py"
    )
    rng.shuffle(modules)
    return modules


def dependents_probe(server, target):
    """depends(source): whether `get_dependents` on `target` lists `source`."""
    def depends(source):
        # The answer is text by default: the source's path shows in it only
        # when it is a dependent.
        return source in server.call("get_dependents", {"file_path": target})
    return depends


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def timed(change, done):
    """Seconds from `change()` to the first `done()`."""
    start = time.perf_counter()
    change()
    while not done():
        if time.perf_counter() - start > 10:
            raise SystemExit("the change never showed")
    elapsed = time.perf_counter() - start
    time.sleep(0.05)  # let the update settle: the next change is a new batch
    return elapsed


def first_edit(depends, root, rel, module):
    """Times adding `import module` to `rel` until its dependents show it,
    then puts the file back and waits for that to show too."""
    path = os.path.join(root, rel)
    text = open(path).read()
    elapsed = timed(lambda: write(path, f"import {module}\n{text}"), lambda: depends(rel))
    write(path, text)
    while depends(rel):
        pass
    time.sleep(0.3)
    return elapsed


def report(label, samples):
    samples.sort()
    print(f"{label:32s} p50 {statistics.median(samples)*1e3:6.1f} ms  p95 {samples[int(len(samples)*0.95)]*1e3:6.1f} ms"
          f"  max {samples[-1]*1e3:6.1f} ms  ({len(samples)} changes)")
