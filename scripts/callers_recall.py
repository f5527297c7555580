#!/usr/bin/env python3
"""Caller-site recall and precision of `xfile callers` against a reference
made of jedi's get_references and sites read by hand.

Usage: scripts/callers_recall.py ROOT [--project rich|httpx] [--xfile PATH]
                                 [--jobs J] [--show K]

ROOT is an unpacked PyPI sdist: rich 13.9.4 or httpx 0.28.1 (the project
is guessed from ROOT's name unless --project says it). Each project has a
fixed list of 10 targets below (TARGETS): methods called through objects,
through self, through aliases and functools.partial, classmethods and a
class constructor. jedi is a dev tool (pip install jedi); it is never a
runtime dependency of xfile. Nothing is sampled: every reference jedi
gives is classified, so there is no seed and two runs give the same
figures.

Reference call sites of a target, as (file, 1-based line), are:
  - each of jedi's Script.get_references on the definition's name that is
    the callee of an ast.Call (`f(...)`, `obj.m(...)`, `self.m(...)`), at
    the line of the name (a call split over lines counts at the line of
    its last name, as xfile reports it);
  - a decorator `@f` (applying it calls f), and the first argument of a
    `partial(f, ...)` / `functools.partial(f, ...)` (xfile counts the
    partial as the call site, and not later calls of the partial object);
  - an alias: a reference that is the whole value of `x = obj.m` or
    `x = f` is followed to the calls of x (jedi's references of x, within
    the file for a local, in the project for a module-level name), since
    xfile reports `x()` as a call of the target;
  - CONFIRMED: sites jedi misses that reading the code shows call the
    target, each with its reason.
  - goto: jedi's get_references leaves out some calls that its own goto
    resolves to the target (rich/__main__.py's `table.add_row(...)`), so
    goto(follow_imports=True) runs at every call whose callee's last name
    is the target's (`.m(...)`, `f(...)`) and is not a site yet, and the
    call is a site when goto gives exactly the target's definition;
Other references (imports, annotations, isinstance, `obj.m` passed as a
value, the definition itself) are not call sites.

jedi's reference search is made exhaustive: jedi stops after parsing 30
files that contain the name (jedi.inference.references._PARSED_FILE_LIMIT);
both of its limits are raised here. jedi runs with compare_jedi.py's
sys.path per file (ROOT, ROOT/src, enclosing non-package directories).

xfile's sites are `xfile --json callers FILE::Qualified.name --depth 1`,
compared by (file, line). recall = |xfile & ref| / |ref|, precision =
|xfile & ref| / |xfile|, per target and over all targets of the project.
Each miss and each false site is printed with a cause label from the
shape of the call (self/cls, with-statement variable, rebound local,
untyped parameter, attribute receiver, call result, alias, ...), CAUSES
overriding it for sites read by hand; a false site also gets jedi's goto
at that position. "unexamined" counts call sites with the target's name
(`.m(` or `f(`) in neither set: not read, so neither right nor wrong.
Exit status 0 when overall recall >= 0.97 and precision >= 0.99.
"""
import argparse
import ast
import collections
import json
import multiprocessing
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_jedi  # noqa: E402  (jedi_init, jedi_script, jedi_goto, read_text, char_column)

# (definition file, qualified name) per project.
TARGETS = {
    "rich": [
        ("rich/console.py", "Console.print"),  # through Console objects
        ("rich/text.py", "Text.append"),  # objects and self
        ("rich/text.py", "Text.stylize"),  # objects and self
        ("rich/console.py", "Console.render"),  # self, `render = self.render`
        ("rich/console.py", "Console.render_lines"),  # objects, `render_lines = console.render_lines`
        ("rich/console.py", "Console.get_style"),  # `get_style = console.get_style`, partial(console.get_style)
        ("rich/table.py", "Table.add_row"),  # objects, `add_row = table.add_row`
        ("rich/measure.py", "Measurement.get"),  # classmethod, `get_measurement = Measurement.get`
        ("rich/cells.py", "cell_len"),  # function, `_cell_len = cell_len`
        ("rich/segment.py", "Segment"),  # constructor, `_Segment = Segment`
    ],
    "httpx": [
        ("httpx/_client.py", "Client.send"),  # objects (with-statement clients) and self
        ("httpx/_client.py", "AsyncClient.send"),
        ("httpx/_client.py", "Client.request"),  # self in get/post..., test clients
        ("httpx/_client.py", "Client.get"),  # `with httpx.Client() as client: client.get()`
        ("httpx/_client.py", "BaseClient.build_request"),  # inherited, called on subclasses
        ("httpx/_urls.py", "URL.copy_with"),  # objects, self
        ("httpx/_urls.py", "URL.join"),
        ("httpx/_models.py", "Headers"),  # constructor
        ("httpx/_api.py", "get"),  # re-exported function: httpx.get(...)
        ("httpx/_main.py", "trace"),  # functools.partial(trace, ...)
    ],
}

SERVER_URL = (
    "server.url.copy_with(...): `server` is the untyped pytest fixture of tests/conftest.py:284, "
    "which yields a TestServer, whose url property returns httpx.URL"
)

# Sites jedi misses that are real calls of the target, read by hand:
# target -> [(file, line, reason)].
CONFIRMED = {
    "rich": {
        "rich/table.py::Table.add_row": [
            ("rich/columns.py", 170, "add_row = table.add_row (line 165), table = Table.grid(...) (a classmethod "
             "returning Table); jedi's references stop at the alias"),
            ("rich/table.py", 949, "table = Table(...) in the __main__ block, Table imported there as "
             "`from rich.table import Table as Table`, which jedi does not follow"),
            ("rich/table.py", 954, "same table as line 949"),
            ("rich/table.py", 955, "same table as line 949"),
            ("rich/table.py", 962, "same table as line 949"),
        ],
    },
    "httpx": {
        "httpx/_urls.py::URL.copy_with": [
            ("tests/client/test_async_client.py", 41, SERVER_URL),
            ("tests/client/test_async_client.py", 119, SERVER_URL),
            ("tests/client/test_async_client.py", 175, SERVER_URL),
            ("tests/client/test_client.py", 48, SERVER_URL),
            ("tests/client/test_client.py", 63, SERVER_URL),
            ("tests/client/test_client.py", 138, SERVER_URL),
            ("tests/client/test_client.py", 403, SERVER_URL),
            ("tests/test_exceptions.py", 45, SERVER_URL),
            ("tests/test_exceptions.py", 49, SERVER_URL),
            ("tests/test_main.py", 40, SERVER_URL),
            ("tests/test_main.py", 57, SERVER_URL),
            ("tests/test_main.py", 73, SERVER_URL),
            ("tests/test_main.py", 87, SERVER_URL),
            ("tests/test_main.py", 107, SERVER_URL),
            ("tests/test_timeouts.py", 12, SERVER_URL),
            ("tests/test_timeouts.py", 22, SERVER_URL),
            ("tests/test_timeouts.py", 54, SERVER_URL),
            ("tests/test_utils.py", 71, SERVER_URL),
        ],
    },
}

# Cause labels read by hand, overriding the automatic one: (file, line) -> label.
CAUSES = {
    "rich": {("rich/columns.py", 170): "alias"},
    "httpx": {},
}


# ------------------------------------------------------------------ the ast

class FileIndex:
    """Names of a file by jedi position (line, character column): what each
    is part of (callee, decorator, partial argument, alias value)."""

    def __init__(self, root, rel):
        text = compare_jedi.read_text(os.path.join(root, rel))
        self.lines = compare_jedi.LINE_BREAK.split(text)
        self.tree = ast.parse(text)
        self.parent = {}
        self.at = {}
        self.scope = {}
        self._walk(self.tree, self.tree)

    def position(self, node):
        if isinstance(node, ast.Attribute):
            line = node.end_lineno
            offset = node.end_col_offset - len(node.attr.encode("utf-8"))
        else:
            line, offset = node.lineno, node.col_offset
        return line, compare_jedi.char_column(self.lines[line - 1], offset)

    def _walk(self, node, scope):
        for child in ast.iter_child_nodes(node):
            self.parent[child] = node
            self.scope[child] = scope
            if isinstance(child, (ast.Name, ast.Attribute)):
                self.at.setdefault(self.position(child), child)
            inner = child if isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
            ) else scope
            self._walk(child, inner)

    def classify(self, line, column):
        """(kind, node): kind is call, decorator, partial, alias (node is the
        alias's target Name) or other."""
        node = self.at.get((line, column))
        if node is None:
            return "other", None
        parent = self.parent.get(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return "call", node
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node in parent.decorator_list:
            return "decorator", node
        if (
            isinstance(parent, ast.Call) and parent.args and parent.args[0] is node
            and (getattr(parent.func, "id", None) == "partial" or getattr(parent.func, "attr", None) == "partial")
        ):
            return "partial", node
        if (
            isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Name)
        ):
            return "alias", parent.targets[0]
        return "other", node

    def call_at(self, line, column):
        node = self.at.get((line, column))
        if node is not None and isinstance(self.parent.get(node), ast.Call):
            return node
        return None

    def cause(self, line, column, via):
        """A label for the shape of the call at (line, column)."""
        if via not in ("call", "goto"):
            return via
        func = self.call_at(line, column)
        if func is None:
            return "not a call"
        if isinstance(func, ast.Name):
            return "plain name"
        value = func.value
        if isinstance(value, ast.Call):
            if getattr(value.func, "id", None) == "super":
                return "super()"
            return "call result"
        if isinstance(value, ast.Attribute):
            return "attribute receiver"
        if isinstance(value, ast.Subscript):
            return "subscript receiver"
        if not isinstance(value, ast.Name):
            return "other receiver"
        if value.id in ("self", "cls"):
            return "self/cls"
        return self.name_cause(value)

    def name_cause(self, name):
        scope = self.scope.get(name)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = scope.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if arg is not None and arg.arg == name.id:
                    if any(
                        isinstance(node, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == name.id for t in node.targets
                        ) for node in scope_nodes(scope)
                    ):
                        return "rebound parameter"
                    return "annotated parameter" if arg.annotation is not None else "untyped parameter"
        where = "" if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else " (module level)"
        bindings = []
        for node in scope_nodes(scope):
            if isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name) \
                    and node.optional_vars.id == name.id:
                bindings.append("with-statement")
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) \
                    and isinstance(node.target, ast.Name) and node.target.id == name.id:
                bindings.append("loop variable")
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name.id for t in node.targets
            ):
                value = node.value
                if isinstance(value, ast.Call):
                    kind = "local from dotted call" if isinstance(value.func, ast.Attribute) else "local from call"
                elif isinstance(value, ast.IfExp):
                    kind = "local from conditional expression"
                else:
                    kind = "local from " + type(value).__name__.lower()
                bindings.append(kind)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.target.id == name.id:
                bindings.append("annotated local")
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == name.id for a in node.names
            ):
                bindings.append("imported name")
            elif isinstance(node, ast.Global) and name.id in node.names:
                bindings.append("global")
        if "global" in bindings:
            return "global variable"
        if len(bindings) > 1:
            return "rebinding" + where
        if bindings:
            return bindings[0] + where
        if where:
            return "unbound here" + where
        return "enclosing-scope variable"


def scope_nodes(scope):
    """The nodes of a scope, not those of the functions, classes and lambdas
    in it (their names and decorators are the scope's)."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))


# ---------------------------------------------------------------- reference

def definition_position(root, rel, qualified):
    """jedi position (line, column) of the target's name in its definition."""
    tree = ast.parse(compare_jedi.read_text(os.path.join(root, rel)))
    body, node = tree.body, None
    for part in qualified.split("."):
        node = next(
            n for n in body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == part
        )
        body = node.body
    lines = compare_jedi.LINE_BREAK.split(compare_jedi.read_text(os.path.join(root, rel)))
    text = lines[node.lineno - 1]
    match = re.search(r"\b(?:def|class)\s+(" + re.escape(node.name) + r")\b", text)
    return node.lineno, match.start(1)


_INDEX = {}


def file_index(rel):
    if rel not in _INDEX:
        _INDEX[rel] = FileIndex(compare_jedi._STATE["root"], rel)
    return _INDEX[rel]


def relative(name):
    where = name.module_path and os.path.realpath(str(name.module_path))
    rel = where and os.path.relpath(where, compare_jedi._STATE["root"]).replace(os.sep, "/")
    return rel if rel and rel in compare_jedi._STATE["files"] else None


def references(rel, line, column, scope):
    try:
        names = compare_jedi.jedi_script(rel).get_references(line, column, scope=scope)
    except Exception:
        compare_jedi._STATE["scripts"].pop(rel, None)
        names = compare_jedi.jedi_script(rel).get_references(line, column, scope=scope)
    found = []
    for name in names:
        where = relative(name)
        if where and name.line is not None:
            found.append((where, name.line, name.column))
    return found


def reference_sites(task):
    """{(file, line): (how, column)} of one target, from jedi, following aliases."""
    rel, qualified = task
    def_line, def_column = definition_position(compare_jedi._STATE["root"], rel, qualified)
    sites = {}
    seen = set()
    todo = [((rel, def_line, def_column), "project", "call", 0)]
    while todo:
        (where, line, column), scope, via, depth = todo.pop()
        for ref in references(where, line, column, scope):
            if ref in seen:
                continue
            seen.add(ref)
            try:
                index = file_index(ref[0])
            except (SyntaxError, ValueError):
                continue
            kind, node = index.classify(ref[1], ref[2])
            how = "alias" if via == "alias" and kind == "call" else kind
            if kind in ("call", "decorator", "partial"):
                sites.setdefault((ref[0], ref[1]), (how, ref[2]))
            elif kind == "alias" and depth < 2:
                target_line, target_column = index.position(node)
                local = isinstance(index.scope.get(node), (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                todo.append(
                    ((ref[0], target_line, target_column), "file" if local else "project", "alias", depth + 1)
                )
    # get_references leaves out calls that goto resolves to the target
    # (rich/__main__.py's table.add_row(...)): ask goto at every call with
    # the target's name that is not a site yet.
    for where, site_line, site_column in sorted(name_sites(sorted(compare_jedi._STATE["files"]), qualified)):
        if (where, site_line) in sites:
            continue
        answer = compare_jedi.jedi_goto((where, site_line, site_column))
        if answer["kind"] == "one" and (answer["file"], answer["line"]) == (rel, def_line):
            sites[(where, site_line)] = ("goto", site_column)
    return task, sites


def goto_at(task):
    answer = compare_jedi.jedi_goto(task)
    if answer["kind"] == "one":
        return task, f"jedi: {answer['file']}:{answer['line']} {answer['name']}"
    return task, f"jedi: {answer['kind']} {answer.get('name', '')}".rstrip()


def init(root):
    compare_jedi.jedi_init(root)
    import jedi.inference.references as refs

    refs._PARSED_FILE_LIMIT = 10**9
    refs._OPENED_FILE_LIMIT = 10**9


# -------------------------------------------------------------------- xfile

def xfile_sites(root, xfile, rel, qualified):
    out = subprocess.run(
        [xfile, "--json", "--no-cache", "callers", f"{rel}::{qualified}", "--root", root,
         "--depth", "1", "--limit", "1000000"],
        check=True, capture_output=True, text=True,
    ).stdout
    answer = json.loads(out)
    assert answer.get("complete", True), answer
    sites = {}
    for call in answer["calls"]:
        if call["depth"] == 1:
            sites.setdefault((call["file"], call["line"]), call["column"])
    return sites


def name_sites(files, qualified):
    """(file, line, column) of every call whose callee's last name is the
    target's (its method name, or the function or class name)."""
    name = qualified.rsplit(".", 1)[-1]
    method = "." in qualified
    found = set()
    for rel in files:
        try:
            index = file_index(rel)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(index.tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == name or (
                not method and isinstance(func, ast.Name) and func.id == name
            ):
                found.add((rel, *index.position(func)))
    return found


# ------------------------------------------------------------------ figures

def percent(part, whole):
    return f"{part / whole:.4f}" if whole else "n/a"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--project", choices=sorted(TARGETS))
    parser.add_argument("--xfile", default="target/release/xfile")
    parser.add_argument("--jobs", type=int, default=min(10, os.cpu_count() or 1))
    parser.add_argument("--show", type=int, default=1000)
    args = parser.parse_args()
    root = os.path.realpath(args.root)
    project = args.project or next((p for p in TARGETS if os.path.basename(root).startswith(p)), None)
    if project is None:
        parser.error("--project is needed")
    targets = TARGETS[project]
    confirmed, causes = CONFIRMED[project], CAUSES[project]

    init(root)
    files = sorted(compare_jedi._STATE["files"])
    with multiprocessing.Pool(args.jobs, initializer=init, initargs=(root,)) as pool:
        jedi_sites = dict(pool.map(reference_sites, targets, chunksize=1))

    rows, misses, false, unexamined_total = [], [], [], 0
    shapes = collections.Counter()  # (cause, found by xfile) over reference sites
    pending_goto = []
    for rel, qualified in targets:
        key = f"{rel}::{qualified}"
        ref = dict(jedi_sites[(rel, qualified)])
        named = {(f, l): c for f, l, c in name_sites(files, qualified)}
        for where, line, reason in confirmed.get(key, []):
            ref.setdefault((where, line), ("confirmed: " + reason, named.get((where, line))))
        ours = xfile_sites(root, args.xfile, rel, qualified)
        both = set(ref) & set(ours)
        unexamined = sorted(set(named) - set(ref) - set(ours))
        unexamined_total += len(unexamined)
        rows.append((key, len(ref), len(ours), len(both), len(unexamined)))
        for site in sorted(ref):
            how, column = ref[site]
            if site in causes:
                cause = causes[site]
            elif how.startswith("confirmed"):
                cause = "confirmed: " + (file_index(site[0]).cause(site[1], column, "call")
                                         if column is not None else "?")
            else:
                cause = file_index(site[0]).cause(site[1], column, how)
            shapes[(cause, site in ours)] += 1
            if site not in ours:
                misses.append((key, site, cause, how))
        for site in sorted(set(ours) - set(ref)):
            column = ours[site]
            cause = causes.get(site) or file_index(site[0]).cause(site[1], column, "call")
            false.append((key, site, cause, column))
            pending_goto.append((site[0], site[1], column))
        if unexamined:
            rows[-1] = rows[-1] + (unexamined,)

    with multiprocessing.Pool(args.jobs, initializer=init, initargs=(root,)) as pool:
        gotos = dict(pool.map(goto_at, pending_goto, chunksize=1))

    print(f"project: {project} at {root}; xfile: {args.xfile}")
    print(f"{'target':<44}{'ref':>6}{'xfile':>7}{'both':>6}{'recall':>9}{'precision':>11}{'unexamined':>12}")
    totals = [0, 0, 0]
    for row in rows:
        key, n_ref, n_ours, n_both, n_unexamined = row[:5]
        totals = [totals[0] + n_ref, totals[1] + n_ours, totals[2] + n_both]
        print(
            f"{key:<44}{n_ref:>6}{n_ours:>7}{n_both:>6}{percent(n_both, n_ref):>9}"
            f"{percent(n_both, n_ours):>11}{n_unexamined:>12}"
        )
    recall, precision = totals[2] / totals[0], totals[2] / totals[1]
    print(
        f"{'overall':<44}{totals[0]:>6}{totals[1]:>7}{totals[2]:>6}{recall:>9.4f}{precision:>11.4f}"
        f"{unexamined_total:>12}"
    )
    print("\nreference sites by how they were found: " + ", ".join(
        f"{k} {n}" for k, n in collections.Counter(
            v[0].split(":")[0] for s in jedi_sites.values() for v in s.values()
        ).most_common()
    ) + f", confirmed {sum(len(v) for v in confirmed.values())}")

    def source(site):
        return file_index(site[0]).lines[site[1] - 1].strip()

    print("\nreference sites by shape: found/total")
    for cause in sorted({c for c, _ in shapes}, key=lambda c: -(shapes[(c, True)] + shapes[(c, False)])):
        print(f"  {cause}: {shapes[(cause, True)]}/{shapes[(cause, True)] + shapes[(cause, False)]}")

    print(f"\nmisses (in the reference, not from xfile): {len(misses)}")
    for cause, n in collections.Counter(m[2] for m in misses).most_common():
        print(f"  {cause}: {n}")
    for key, site, cause, how in misses[: args.show]:
        print(f"  [{cause}] {key} <- {site[0]}:{site[1]}  {source(site)}")
    print(f"\nfalse sites (from xfile, not in the reference): {len(false)}")
    for cause, n in collections.Counter(f[2] for f in false).most_common():
        print(f"  {cause}: {n}")
    for key, site, cause, column in false[: args.show]:
        print(f"  [{cause}] {key} <- {site[0]}:{site[1]}  {source(site)}")
        print(f"      {gotos[(site[0], site[1], column)]}")
    print(f"\nunexamined call sites with the target's name (neither set): {unexamined_total}")
    for row in rows:
        if len(row) > 5:
            for site in row[5][: args.show]:
                print(f"  {row[0]} ? {site[0]}:{site[1]}  {source(site)}")
    ok = recall >= 0.97 and precision >= 0.99
    print(f"\nrecall {recall:.4f} (>= 0.97), precision {precision:.4f} (>= 0.99): {'pass' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
