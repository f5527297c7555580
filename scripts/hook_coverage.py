#!/usr/bin/env python3
"""Coverage of the Read hook's context against jedi: of the definitions in
other project files that the lines read use, how many does the context
`xfile hook` prints name by their `path:line`?

    scripts/hook_coverage.py [ROOT] [--reads 50] [--seed 0] [--lines 200]
                             [--min-lines 50] [--probe-tokens 9999]
                             [--xfile PATH] [--examples 3] [--json]

ROOT (default target/bench-data/django-5.2.8) is copied to a scratch
directory (the service writes its cache and logs into the tree) and served
from a private runtime directory, as scripts/bench_hook.py does.

Reads. READS files are drawn with the seed among the Python files of the
package (ROOT/django for Django; the other top directories of ROOT when it
has no such package) that have at least MIN_LINES lines, leaving out test
code (`tests/` directories, `tests.py`, `test_*.py`, `*_tests.py`) and
docs/: what an agent changing the library reads. Each read is LINES lines
from a random offset (the whole file when shorter), sent as a Claude Code
Read with no session id, so that nothing is left out as already given. The
hook's time cap is raised (XFILE_HOOK_TIMEOUT_MS): this measures what it
says, not how fast.

Oracle. jedi goes to the definition (goto, imports followed, and on from
an `__init__.py` re-export) of every name in the lines read, keyword
arguments aside (jedi takes `f(x=1)`'s `x` to a parameter, or to any
attribute named x). A definition counts when jedi gives exactly one, it is
a function, method or class (properties included), and it lies in a
project file other than the one read. Modules are not counted: the context
shows what a module holds, not modules (xfile gives no definition for
`import m` either). Variables are left out of the main figure: instance
attributes (`self.x = ...` in a method) are no definitions xfile indexes,
and constants carry little an agent can get wrong; module- and class-level
assignments are reported apart ("with variables"). A definition counts
once per read, as (path, line of its name): the line the context's
`path:line` gives (a def's, not its decorator's). jedi is an oracle, not
the truth: it picks a base's method where a nearer base overrides it now
and then, and infers types (parameters from their call sites) deeper than
a context could follow.

Share. Per read, share = (oracle definitions the context names) /
(oracle definitions); reads with none are skipped and counted. The goal is
a share of at least 0.9 on 9 reads of 10. "Pooled" is over all the
definitions of all reads.

Guesses. The summary counts the definitions listed under the context's
"Guessed by name only" heading, and how many of them are one of the
definitions jedi says the read uses (by path:line): jedi is no judge of
the rest, which it mostly cannot type either.

Misses. Each definition the context does not name gets the shape of its
first use in the lines (`name`, `module.attr`, `self.attr`, `super().attr`,
`name.attr` for any other name on the left, `self.a.attr`, `a.b.attr`,
`call().attr`, a decorator, a base class, an import line; `()` when
called) and a reason: "at raised limit" (named when the same read is
asked again with the section's limit at PROBE_TOKENS, so cut by the
budget; 0 skips that second pass), "class shown, not it" (its class is
named, the member is not), "other place named" (the same name at another
path:line: another target or a re-export), or "absent". A table gives, per
shape, the oracle's definitions, those named and the misses by reason,
with examples; --json gives every definition and the contexts.

The hook cuts the section at hook_token_limit only when that is below the
service's context_token_limit, so with the defaults (1,500 and 550) the
service's 550 tokens bind; the "Not shown for the N-token budget" line
counts the used definitions left out whole (column "cut"), while members
of a shown class left out go under its "... N more members" line, which
only the raised-limit pass tells apart.
"""
import argparse
import ast
import collections
import glob
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_jedi import LINE_BREAK, read_text  # noqa: E402
from hook_driver import call, read_payload, stop_services  # noqa: E402

DEFAULT_ROOT = "target/bench-data/django-5.2.8"
# jedi's types for what the main figure counts.
CALLABLE_TYPES = ("function", "class", "property")
# The root's configuration: removed from the copy, so that the defaults
# apply, then written with the raised limits for the second pass.
CONFIG_FILE = ".cross_file_context_links.yml"
LOCATION = re.compile(r"(?P<path>[\w./-]+\.pyi?):(?P<line>\d+)(?:-\d+)?")
NOT_SHOWN = re.compile(r"^Not shown for the (\d+)-token budget: (\d+) definitions?(?: \((.*)\))?")
GOAL = 0.9


# ------------------------------------------------------------------- reads

def is_test(rel):
    parts = rel.split("/")
    name = parts[-1]
    return (
        "tests" in parts[:-1]
        or name == "tests.py"
        or name.startswith("test_")
        or name.endswith("_tests.py")
    )


def candidate_files(tree, min_lines):
    """(relative path, line count) of the library's non-test files."""
    tops = ["django"] if os.path.isdir(os.path.join(tree, "django")) else [
        d for d in sorted(os.listdir(tree))
        if os.path.isdir(os.path.join(tree, d)) and d not in ("tests", "docs") and not d.startswith(".")
    ]
    found = []
    for top in tops:
        for path in sorted(glob.glob(os.path.join(tree, top, "**", "*.py"), recursive=True)):
            rel = os.path.relpath(path, tree).replace(os.sep, "/")
            if is_test(rel):
                continue
            lines = LINE_BREAK.split(read_text(path))
            count = len(lines) - (lines[-1] == "")
            if count >= min_lines:
                found.append((rel, count))
    return found


# -------------------------------------------------------------------- hook

def parse_context(text):
    """What a context section names: the (path, line) of each definition
    shown, the simple names shown with their places, and the closing
    "not shown" line's count and names."""
    named, by_name = set(), collections.defaultdict(set)
    left_out, left_names = 0, []
    for line in text.splitlines():
        not_shown = NOT_SHOWN.match(line)
        if not_shown:
            left_out = int(not_shown.group(2))
            left_names = [n.strip() for n in (not_shown.group(3) or "").split(",")
                          if n.strip() and not n.strip().startswith("+")]
            continue
        # Warnings and notes give places that are not definitions.
        if line.startswith(("Warnings:", "Note:")):
            continue
        for where in LOCATION.finditer(line):
            place = (where.group("path"), int(where.group("line")))
            named.add(place)
            name = shown_name(line)
            if name:
                by_name[name].add(place)
    return named, by_name, left_out, left_names


def shown_name(line):
    """The simple name a definition line shows: `def f(`, `class C`,
    `x = ...` (signature tiers) or `Q.name kind path:line` (minimal)."""
    code = line.split("  # ")[0].strip()
    while code.startswith("@"):
        code = code.split(" ", 1)[1] if " " in code else ""
    match = re.match(r"(?:async\s+)?(?:def|class)\s+(\w+)", code) or re.match(r"([\w.]+)", code)
    return match and match.group(1).rsplit(".", 1)[-1]


class Service:
    """The root's shared service, as the hook starts it, in a private
    runtime directory."""

    def __init__(self, xfile, tree, runtime):
        self.xfile, self.tree, self.runtime = xfile, tree, runtime
        self.env = dict(os.environ, XFILE_RUNTIME_DIR=runtime, XFILE_HOOK_TIMEOUT_MS="20000")

    def warm(self, reads, limit, patience=300):
        """Calls the hook until the service answers: the first call starts
        it, and it answers nothing until its first index is done."""
        started = time.perf_counter()
        while time.perf_counter() - started < patience:
            for rel, offset, _ in reads[:5]:
                if self.read(rel, offset, limit):
                    return time.perf_counter() - started
            time.sleep(1)
        sys.exit(f"the service gave no context within {patience} s")

    def read(self, rel, offset, limit):
        # No session: a session's record would leave out what an earlier
        # read of this run was given.
        path = os.path.join(self.tree, rel)
        # The agent works at the top of the tree.
        payload = read_payload(path, offset, limit, cwd=self.tree)
        return call(self.xfile, self.env, payload)[1]

    def stop(self):
        # The next call must find a service started anew, with the
        # configuration written since.
        stop_services(self.runtime)


# ------------------------------------------------------------------ oracle

class Oracle:
    def __init__(self, root):
        import jedi

        self.jedi = jedi
        self.root = os.path.realpath(root)
        base = list(jedi.get_default_environment().get_sys_path())
        # The tree first and no smart sys.path: the package must resolve to
        # this copy, never to an installed one.
        self.project = jedi.Project(self.root, sys_path=[self.root] + base, smart_sys_path=False)

    def rel(self, module_path):
        if not module_path:
            return None
        where = os.path.realpath(str(module_path))
        if not where.startswith(self.root + os.sep):
            return None
        return os.path.relpath(where, self.root).replace(os.sep, "/")

    def goto(self, name):
        """jedi's definitions for NAME, followed on through re-exports:
        goto stops at `from .m import f` in a package's `__init__.py`."""
        try:
            found = name.goto(follow_imports=True)
        except Exception:
            return None
        for _ in range(5):
            if len(found) != 1:
                break
            try:
                further = found[0].goto(follow_imports=True)
            except Exception:
                break
            at = lambda n: (n.module_path, n.line, n.column)
            if len(further) != 1 or at(further[0]) == at(found[0]):
                break
            found = further
        return found

    def uses(self, rel, start, end, skip):
        """The project definitions lines START..END of REL use, by (path,
        line): each with its kind, full name, owner class's place (for a
        member) and first use as (line, column, name); how many names jedi
        could not settle; and each name's goto type by position (to tell
        `module.f` from `obj.f`). Names at positions in SKIP are passed."""
        path = os.path.join(self.root, rel)
        script = self.jedi.Script(read_text(path), path=path, project=self.project)
        defs, unsettled, types = {}, 0, {}
        for name in script.get_names(all_scopes=True, definitions=True, references=True):
            if not start <= name.line <= end or (name.line, name.column) in skip:
                continue
            found = self.goto(name)
            if found is None:
                unsettled += 1
                continue
            found = list({(f.module_path, f.line): f for f in found}.values())
            if len(found) != 1:
                unsettled += len(found) > 1
                continue
            target = found[0]
            types[(name.line, name.column)] = target.type
            where = self.rel(target.module_path)
            if where is None or where == rel or target.line is None:
                continue
            kind = self.kind(target)
            if kind is None:
                continue
            key = (where, target.line)
            if key not in defs:
                defs[key] = {
                    "path": where, "line": target.line, "kind": kind,
                    "name": target.full_name or target.name,
                    "owner": self.owner(target),
                    "use": (name.line, name.column, name.name),
                }
        return defs, unsettled, types

    def kind(self, target):
        """"callable" for what the main figure counts, "variable" for a
        module- or class-level assignment, None for the rest."""
        if target.type in CALLABLE_TYPES:
            return "callable"
        if target.type == "statement":
            try:
                parent = target.parent()
            except Exception:
                return None
            if parent is not None and parent.type in ("module", "class"):
                return "variable"
        return None

    def owner(self, target):
        """The (path, line) of the class a member belongs to, if any."""
        try:
            parent = target.parent()
        except Exception:
            return None
        if parent is None or parent.type != "class":
            return None
        where = self.rel(parent.module_path)
        return (where, parent.line) if where else None


# ------------------------------------------------------------------ shapes

class Shapes:
    """How each name of a file is used, by (line, character column) as
    jedi numbers them: `name`, `module.attr`, `self.attr`, `super().attr`,
    `name.attr` (any other name on the left), `self.a.attr`, `a.b.attr`,
    `call().attr`, a decorator, a base class, on an import line; with `()`
    when it is called. Keyword arguments are set apart: jedi goes from
    `f(x=1)`'s `x` to the parameter, or to an attribute of that name."""

    def __init__(self, text):
        self.shapes, self.keywords, self.imports = {}, set(), set()
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return
        self.lines = LINE_BREAK.split(text)
        called = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called.add(self.position(node.func))
            elif isinstance(node, ast.keyword) and node.arg is not None:
                self.keywords.add(self.at(node.lineno, node.col_offset))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                # An import's names are no nodes of their own: the lines are.
                self.imports.update(range(node.lineno, node.end_lineno + 1))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                shape, left = self.attribute_shape(node.value)
            elif isinstance(node, ast.Name):
                shape, left = "name", None
            else:
                continue
            where = self.position(node)
            self.shapes[where] = (shape + ("()" if where in called else ""), left)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for decorator in node.decorator_list:
                    target = decorator.func if isinstance(decorator, ast.Call) else decorator
                    self.shapes[self.position(target)] = ("decorator", None)
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    self.shapes[self.position(base)] = ("base class", None)

    def at(self, line, byte_offset):
        """(line, character column) of a byte offset, as jedi counts."""
        text = self.lines[line - 1].encode("utf-8")[:byte_offset]
        return (line, len(text.decode("utf-8", errors="replace")))

    def position(self, node):
        """Where the last name of NODE (a Name or an Attribute) is."""
        if isinstance(node, ast.Name):
            return self.at(node.lineno, node.col_offset)
        if isinstance(node, ast.Attribute):
            return self.at(node.end_lineno, node.end_col_offset - len(node.attr.encode("utf-8")))
        return None

    def attribute_shape(self, value):
        """The shape of `value.attr`, and where the name on the left of the
        dot is when it may be a module."""
        if isinstance(value, ast.Name):
            shape = "self.attr" if value.id in ("self", "cls") else "name.attr"
            return shape, self.position(value)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            return "super().attr", None
        if isinstance(value, ast.Attribute):
            root = value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in ("self", "cls"):
                return "self.a.attr", None
            return "a.b.attr", self.position(value)
        if isinstance(value, ast.Call):
            return "call().attr", None
        return "other.attr", None

    def of(self, line, column, types):
        """The shape of the name at (LINE, COLUMN); TYPES are jedi's goto
        types by position: the left of a dot that is a module makes
        `module.attr` (`from . import x; x.f`, `models.Model`)."""
        if (line, column) not in self.shapes:
            return "import line" if line in self.imports else "other"
        shape, left = self.shapes[(line, column)]
        if left is not None and types.get(left) == "module":
            shape = shape.replace("name.attr", "module.attr").replace("a.b.attr", "module.attr")
        return shape


# ------------------------------------------------------------------ report

def measure(read, defs, context, probe_context):
    """READ's record: each oracle definition, named or with the reason it
    is not, and the shares."""
    named, by_name, left_out, left_names = parse_context(context)
    probe_named = parse_context(probe_context)[0] if probe_context is not None else None
    definitions = []
    for key, d in sorted(defs.items()):
        d = dict(d, named=key in named)
        if not d["named"]:
            if probe_named is not None and key in probe_named:
                d["reason"] = "at raised limit"
            elif d["owner"] and tuple(d["owner"]) in named:
                d["reason"] = "class shown, not it"
            elif by_name.get(d["name"].rsplit(".", 1)[-1]):
                d["reason"] = "other place named"
            else:
                d["reason"] = "absent"
        d["probe_named"] = probe_named is not None and key in probe_named
        definitions.append(d)
    kept = [d for d in definitions if d["kind"] == "callable"]
    hits = sum(d["named"] for d in kept)
    return {
        **read,
        "oracle": len(kept),
        "named": hits,
        "share": hits / len(kept) if kept else None,
        "probe_share": (sum(d["probe_named"] for d in kept) / len(kept)
                        if kept and probe_named is not None else None),
        "oracle_with_variables": len(definitions),
        "named_with_variables": sum(d["named"] for d in definitions),
        "context_chars": len(context),
        "probe_context_chars": len(probe_context) if probe_context is not None else None,
        "left_out": left_out,
        "left_out_names": left_names,
        "definitions": definitions,
        "context": context,
    }


GUESSED = "Guessed by name only"


def guesses(context):
    """The (path, line) of each definition the context lists under its
    guesses' heading."""
    found, inside = [], False
    for line in (context or "").splitlines():
        if line.startswith(GUESSED):
            inside = True
        elif inside and (not line.strip() or line.startswith("---")
                         or (not line.startswith(" ") and line.endswith(":"))):
            inside = False
        elif inside and not line.startswith(" "):
            # A definition's line ends with its location (a warnings or
            # "Not shown" line after the guesses does not).
            m = list(LOCATION.finditer(line))
            if m and m[-1].end() == len(line.rstrip()):
                found.append((m[-1].group("path"), int(m[-1].group("line"))))
    return found


def guess_summary(records):
    """How many guesses the contexts show, and how many of them are a
    definition jedi says the read uses (the rest jedi either cannot type
    or gives another definition for)."""
    shown = named = 0
    for r in records:
        oracle = {(d["path"], d["line"]) for d in r["definitions"]}
        for at in guesses(r.get("context")):
            shown += 1
            named += at in oracle
    return {"shown": shown, "jedi_names": named}


def summary(records, key="share"):
    shares = [r[key] for r in records if r[key] is not None]
    if not shares:
        return {"measured": 0}
    return {
        "guesses": guess_summary(records),
        "measured": len(shares),
        "skipped_no_oracle": len(records) - len(shares),
        "at_goal": sum(s >= GOAL for s in shares),
        "median": round(statistics.median(shares), 3),
        "mean": round(statistics.mean(shares), 3),
        "pooled": round(sum(r[key] * r["oracle"] for r in records if r[key] is not None)
                        / sum(r["oracle"] for r in records if r[key] is not None), 3),
    }


def print_summary(records, probe):
    s = summary(records)
    print("\nSummary (default limits)")
    if not s["measured"]:
        print("  no read used a definition of another file")
        return
    print(f"  reads measured {s['measured']} (skipped, no oracle definition: {s['skipped_no_oracle']})")
    print(f"  share >= {GOAL}: {s['at_goal']}/{s['measured']} reads  (goal: 9 of 10)")
    print(f"  median share {s['median']:.3f}, mean {s['mean']:.3f}, pooled over definitions {s['pooled']:.3f}")
    with_vars = [r["named_with_variables"] / r["oracle_with_variables"]
                 for r in records if r["oracle_with_variables"]]
    print(f"  with variables: {sum(v >= GOAL for v in with_vars)}/{len(with_vars)} reads >= {GOAL}, "
          f"median {statistics.median(with_vars):.3f}, mean {statistics.mean(with_vars):.3f}")
    cut = sum(1 for r in records if r["left_out"])
    print(f"  contexts with a 'Not shown for the budget' line: {cut}/{len(records)}")
    g = s["guesses"]
    print(f"  guesses shown: {g['shown']}, of which jedi names {g['jedi_names']}")
    if probe:
        p = summary(records, "probe_share")
        print(f"  with the section's limit at {probe} tokens: share >= {GOAL} on "
              f"{p['at_goal']}/{p['measured']}, median {p['median']:.3f}, mean {p['mean']:.3f}, "
              f"pooled {p['pooled']:.3f}")


def print_shapes(records, examples):
    """Named and missed callable definitions by the shape of their first
    use, misses by reason, with examples."""
    found = [(r, d) for r in records for d in r["definitions"] if d["kind"] == "callable"]
    misses = [(r, d) for r, d in found if not d["named"]]
    reasons = sorted({d["reason"] for _, d in misses})
    total = collections.Counter(d["shape"] for _, d in found)
    named = collections.Counter(d["shape"] for _, d in found if d["named"])
    table = collections.Counter((d["shape"], d["reason"]) for _, d in misses)
    print(f"\nCallable definitions by the shape of their first use: {len(found)}, {len(misses)} missed")
    print("  " + f"{'shape':<16}{'oracle':>7}{'named':>7}{'missed':>7}" + "".join(f"{r:>20}" for r in reasons))
    for shape, count in total.most_common():
        print("  " + f"{shape:<16}{count:>7}{named[shape]:>7}{count - named[shape]:>7}"
              + "".join(f"{table[(shape, r)]:>20}" for r in reasons))
    if not examples:
        return
    print("\nMissed, by shape (use -> definition [reason]):")
    for shape, _ in collections.Counter(d["shape"] for _, d in misses).most_common():
        for r, d in [(r, d) for r, d in misses if d["shape"] == shape][:examples]:
            line, column, name = d["use"]
            print(f"  {shape:<14} {r['file']}:{line}:{column} {name} -> "
                  f"{d['name']} {d['path']}:{d['line']} [{d['reason']}]")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", default=DEFAULT_ROOT)
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--min-lines", type=int, default=50)
    parser.add_argument("--probe-tokens", type=int, default=9999,
                        help="the section's limit in a second pass that tells budget cuts (0: none)")
    parser.add_argument("--xfile", default="target/release/xfile")
    parser.add_argument("--examples", type=int, default=3, help="missed definitions shown per shape")
    parser.add_argument("--json", action="store_true",
                        help="one JSON document on stdout (every read's definitions and context)")
    args = parser.parse_args()
    xfile = os.path.abspath(args.xfile)
    out = sys.stderr if args.json else sys.stdout

    scratch = tempfile.mkdtemp(prefix="hook-coverage-")
    runtime = os.path.join(scratch, "runtime")
    os.mkdir(runtime, 0o700)
    tree = os.path.join(scratch, "tree")
    shutil.copytree(args.root, tree, symlinks=True)
    # A project marker, so that the hook finds the copy's root.
    if not os.path.exists(os.path.join(tree, "pyproject.toml")):
        open(os.path.join(tree, "pyproject.toml"), "w").close()
    # The default limits, whatever the root's own configuration says.
    config = os.path.join(tree, CONFIG_FILE)
    if os.path.exists(config):
        os.remove(config)
    service = Service(xfile, tree, runtime)
    try:
        rng = random.Random(args.seed)
        files = candidate_files(tree, args.min_lines)
        reads = []
        for rel, count in rng.sample(files, min(args.reads, len(files))):
            offset = rng.randint(1, max(1, count - args.lines + 1))
            reads.append((rel, offset, min(count, offset + args.lines - 1)))
        print(f"{len(files)} candidate files; {len(reads)} reads of {args.lines} lines", file=out)

        ready = service.warm(reads, args.lines)
        print(f"service ready after {ready:.1f} s", file=out)
        contexts = [service.read(rel, offset, args.lines) for rel, offset, _ in reads]
        probe_contexts = [None] * len(reads)
        if args.probe_tokens:
            # A service started anew reads the raised limits; the hook
            # reads hook_token_limit itself at each call.
            service.stop()
            with open(config, "w") as f:
                f.write(f"context_token_limit: {args.probe_tokens}\n"
                        f"hook_token_limit: {args.probe_tokens}\n"
                        # The section takes at most half an answer.
                        f"answer_token_limit: {min(20000, 2 * args.probe_tokens + 2)}\n")
            service.warm(reads, args.lines)
            probe_contexts = [service.read(rel, offset, args.lines) for rel, offset, _ in reads]

        oracle = Oracle(tree)
        records = []
        started = time.perf_counter()
        print(f"\n{'share':>6} {'named':>5}/{'oracle':<6} {'w/vars':>7} {'chars':>6} {'cut':>4}  read",
              file=out)
        for (rel, start, end), context, probe_context in zip(reads, contexts, probe_contexts):
            shapes = Shapes(read_text(os.path.join(tree, rel)))
            defs, unsettled, types = oracle.uses(rel, start, end, shapes.keywords)
            for d in defs.values():
                d["shape"] = shapes.of(d["use"][0], d["use"][1], types)
            read = {"file": rel, "start": start, "end": end, "unsettled": unsettled}
            record = measure(read, defs, context, probe_context)
            records.append(record)
            share = "  skip" if record["share"] is None else f"{record['share']:6.2f}"
            print(f"{share} {record['named']:>5}/{record['oracle']:<6} "
                  f"{record['named_with_variables']:>3}/{record['oracle_with_variables']:<3} "
                  f"{record['context_chars']:>6} {record['left_out'] or '':>4}  {rel}:{start}-{end}",
                  file=out)
        print(f"(jedi: {time.perf_counter() - started:.0f} s; chars: the context's length; "
              "cut: definitions its 'Not shown' line counts)", file=out)

        if args.json:
            json.dump({
                "reads": records,
                "summary": summary(records),
                "probe_tokens": args.probe_tokens or None,
                "probe_summary": summary(records, "probe_share") if args.probe_tokens else None,
            }, sys.stdout, indent=1)
            print()
        else:
            print_summary(records, args.probe_tokens)
            print_shapes(records, args.examples)
    finally:
        service.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
