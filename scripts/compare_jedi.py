#!/usr/bin/env python3
"""Differential test of xfile's call targets against jedi's goto.

Usage: scripts/compare_jedi.py ROOT [--xfile PATH] [--sample N] [--seed S]
                               [--show K] [--jobs J]

jedi is a dev tool (pip install jedi); it is never a runtime dependency of
xfile. It is slow (50-500 ms a goto), so both figures are estimated on
random samples, seeded (--seed, default 0) so that runs can be repeated.

Call sites are every `ast.Call` in ROOT's .py files that xfile indexed and
Python parses, at the callee's last name (`f` in `f()`, `m` in `a.b.m()`),
in 1-based lines and 0-based character columns, as xfile reports them.
Each site has a shape:
  plain           f()
  self/cls/super  self.m(), cls.m(), self.a.m(), super().m()
  dotted          an attribute chain rooted at any other name: mod.f(),
                  Class.m(), obj.m(), a.b.c()
  other           an attribute of any other expression: f().m(), x[0].m(),
                  "".join()
Callees that are neither a name nor an attribute (`f()()`) are skipped.

Recall. Sites are drawn uniformly, in a seeded random order, and jedi's
goto(follow_imports=True) runs at each until N (--sample, default 300) are
kept: jedi gives exactly one definition, of type function or class or a
module-level assignment (`vary_on_cookie = vary_on_headers("Cookie")`,
which xfile also gives as a target, at its line), in a project file other
than the source file. Other statements (local variables, attributes
assigned in a body), params, properties, modules... are not kept.
When fewer than N/4 of the kept sites are self/cls/super, that shape alone
is drawn further, in the same order, until it has N/4, so its figure means
something. Each shape's figure is over a uniform sample of that shape; the
overall figure is over the uniform part only. A site is found when xfile
has a function_call there whose target_file and target_line are jedi's
file and definition line; a miss is "other target" when xfile has a
function_call there with any other target (a `<...>` marker, the source
file, another file or line), "nothing" otherwise.

Precision. Up to N of xfile's cross-file function_call relationships
(target a project file, not a marker, not the source file) are drawn, with
the same self/cls/super top-up, and jedi runs at each: agree (one
definition, same file and line, whatever its type), disagree (one definition
of a kept type in a project file, elsewhere), or unsure (no
definition, several, outside the project, or another type elsewhere).
Precision = agree / (agree + disagree); unsure is printed apart.

jedi runs with ROOT as its project and, for each file, its own sys.path
ahead of the interpreter's: the enclosing directories that are neither
packages nor namespace sub-directories of packages (Django's tests/, which
its runtests.py puts on sys.path), ROOT/src and sub-projects' src/, and
ROOT; so that relative imports below tests/ resolve, and a src layout
resolves to the project rather than to an installed copy of it, as xfile
does. When goto stops at `from .m import f` in a package's __init__.py
(it does, calling that line the definition), the name is followed on.
"""
import argparse
import ast
import collections
import json
import multiprocessing
import os
import random
import re
import subprocess
import sys
import time

# Directories xfile never descends into (crates/xfile-workspace/src/discover.rs).
SKIPPED_DIRS = {
    ".git", ".venv", "venv", "env", "node_modules", "__pycache__",
    "site-packages", "build", "dist", ".tox", ".mypy_cache",
}
SHAPES = ("plain", "self/cls/super", "dotted", "other")
SELF = "self/cls/super"
KEPT_TYPES = ("function", "class", "module statement")
LINE_BREAK = re.compile(r"\r\n|\r|\n")


# ---------------------------------------------------------------- call sites

def read_text(path):
    """The file's text as xfile reads it: UTF-8, else latin-1."""
    with open(path, "rb") as source:
        data = source.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def char_column(line_text, byte_offset):
    return len(line_text.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace"))


def shape_of(func):
    if isinstance(func, ast.Name):
        return "plain"
    node = func
    while isinstance(node, ast.Attribute):
        node = node.value
    if isinstance(node, ast.Name):
        return SELF if node.id in ("self", "cls") else "dotted"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "super"
    ):
        return SELF
    return "other"


def call_sites(root, rel):
    """(line, column, shape) of every call in the file, or None if it does
    not parse."""
    try:
        text = read_text(os.path.join(root, rel))
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return None
    lines = LINE_BREAK.split(text)
    sites = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            line, offset = func.lineno, func.col_offset
        elif isinstance(func, ast.Attribute):
            # The attribute's name is the last token of the node.
            line = func.end_lineno
            offset = func.end_col_offset - len(func.attr.encode("utf-8"))
        else:
            continue
        sites.append((line, char_column(lines[line - 1], offset), shape_of(func)))
    return sites


def project_files(root):
    found = set()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for name in files:
            if name.endswith((".py", ".pyi")):
                found.add(os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/"))
    return found


# --------------------------------------------------------------------- xfile

def xfile_calls(root, xfile):
    started = time.perf_counter()
    out = subprocess.run(
        [xfile, "export", "--root", root], check=True, capture_output=True, text=True,
    ).stdout
    elapsed = time.perf_counter() - started
    export = json.loads(out)
    calls = collections.defaultdict(list)
    for r in export["relationships"]:
        if r["relationship_type"] == "function_call":
            calls[(r["source_file"], r["line_number"], r["column"])].append(r)
    files = sorted(f["relative_path"] for f in export["files"] if not f.get("parse_error"))
    return calls, files, elapsed


def cross_file(r):
    return not r["target_file"].startswith("<") and r["target_file"] != r["source_file"]


def describe_xfile(rels):
    if not rels:
        return "nothing"
    return "; ".join(
        f"{r['target_file']}:{r['target_line']} {r['target_symbol']}" for r in rels
    )


# ---------------------------------------------------------------------- jedi

_STATE = {}


SUB_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")


def jedi_init(root):
    import jedi

    _STATE["jedi"] = jedi
    _STATE["root"] = os.path.realpath(root)
    _STATE["base"] = list(jedi.get_default_environment().get_sys_path())
    _STATE["files"] = project_files(root)
    _STATE["projects"] = {}
    _STATE["scripts"] = collections.OrderedDict()


def search_roots(rel):
    """The directories a file's imports are searched in, nearest first:
    each enclosing directory that is neither a package nor a namespace
    sub-directory of one (tests/ of Django, src/ of a src layout), with
    src/ of the root and of sub-projects, and the root."""
    root = _STATE["root"]

    def package(directory):
        return os.path.isfile(os.path.join(directory, "__init__.py"))

    roots = []
    directory = os.path.dirname(os.path.join(root, rel))
    while True:
        top = directory == root
        if top or not (package(directory) or package(os.path.dirname(directory))):
            if top or any(os.path.isfile(os.path.join(directory, m)) for m in SUB_PROJECT_MARKERS):
                if os.path.isdir(os.path.join(directory, "src")):
                    roots.append(os.path.join(directory, "src"))
            roots.append(directory)
        if top:
            break
        directory = os.path.dirname(directory)
    return tuple(dict.fromkeys(roots))


def jedi_script(rel):
    scripts = _STATE["scripts"]
    if rel in scripts:
        scripts.move_to_end(rel)
        return scripts[rel]
    roots = search_roots(rel)
    if roots not in _STATE["projects"]:
        # No smart sys.path: jedi would name modules from ROOT and then miss
        # relative imports below a directory that is not a package (tests/).
        _STATE["projects"][roots] = _STATE["jedi"].Project(
            _STATE["root"], sys_path=list(roots) + [p for p in _STATE["base"] if p not in roots],
            smart_sys_path=False,
        )
    path = os.path.join(_STATE["root"], rel)
    script = _STATE["jedi"].Script(read_text(path), path=path, project=_STATE["projects"][roots])
    scripts[rel] = script
    while len(scripts) > 16:
        scripts.popitem(last=False)
    return script


def jedi_goto(task):
    """jedi's answer at (file, line, column): a dict with `kind` one of
    no definition, several, outside, one (then file, line, type, name), error."""
    rel, line, column = task
    try:
        names = jedi_script(rel).goto(line, column, follow_imports=True)
    except Exception:
        # jedi has internal errors (a KeyError now and then in long runs):
        # once more, with a fresh Script.
        _STATE["scripts"].pop(rel, None)
        try:
            names = jedi_script(rel).goto(line, column, follow_imports=True)
        except Exception as error:
            return {"kind": "error", "name": f"{type(error).__name__}: {error}"}
    # goto stops at `from .m import f` in a package's __init__.py and calls
    # it the class or function f: follow such a name on to its definition.
    for _ in range(5):
        if len(names) != 1:
            break
        try:
            further = names[0].goto(follow_imports=True)
        except Exception:
            break
        if len(further) != 1 or (further[0].module_path, further[0].line, further[0].column) == (
            names[0].module_path, names[0].line, names[0].column
        ):
            break
        names = further
    if not names:
        return {"kind": "no definition"}
    if len(names) > 1:
        return {
            "kind": "several",
            "name": "; ".join(f"{n.module_path}:{n.line} {n.full_name}" for n in names[:4]),
        }
    name = names[0]
    where = name.module_path and os.path.realpath(str(name.module_path))
    rel_target = where and os.path.relpath(where, _STATE["root"]).replace(os.sep, "/")
    if not rel_target or rel_target not in _STATE["files"]:
        return {"kind": "outside", "name": f"{where}:{name.line} {name.full_name}"}
    kind = name.type
    if kind == "statement":
        try:
            top = name.parent().type == "module"
        except Exception:
            top = False
        kind = "module statement" if top else "statement"
    return {
        "kind": "one", "file": rel_target, "line": name.line, "type": kind,
        "name": name.full_name or name.name,
    }


class Jedi:
    """goto over many sites, in order, with J worker processes."""

    def __init__(self, root, jobs):
        self.done = 0
        self.started = time.perf_counter()
        if jobs > 1:
            self.pool = multiprocessing.Pool(jobs, initializer=jedi_init, initargs=(root,))
        else:
            self.pool = None
            jedi_init(root)
        self.chunk = 1 if jobs == 1 else 4 * jobs

    def each(self, tasks, label):
        """Yield (task, answer) in the order of tasks, lazily."""
        tasks = iter(tasks)
        while True:
            batch = [t for _, t in zip(range(self.chunk), tasks)]
            if not batch:
                return
            answers = self.pool.map(jedi_goto, batch) if self.pool else map(jedi_goto, batch)
            for task, answer in zip(batch, answers):
                self.done += 1
                if self.done % 50 == 0:
                    elapsed = time.perf_counter() - self.started
                    print(f"  jedi: {self.done} gotos, {elapsed:.0f}s ({label})", file=sys.stderr)
                yield task, answer

    def close(self):
        if self.pool:
            self.pool.close()
            self.pool.join()


def draw(candidates, shape_of_task, answers, accept, want, want_self):
    """Walk CANDIDATES (already shuffled) asking jedi, until WANT accepted;
    then walk the rest for self/cls/super only until WANT_SELF of that shape
    are accepted. Returns (uniform, top_up, tried) where uniform and top_up
    are lists of (task, answer) accepted and tried counts every answer per
    shape and kind for the uniform part."""
    uniform, top_up, tried = [], [], collections.Counter()
    used = 0  # candidates whose answer was looked at (more may be computed)
    for task, answer in answers(iter(candidates), "uniform"):
        used += 1
        tried[(shape_of_task(task), accept_kind(answer, accept))] += 1
        if accept(answer):
            uniform.append((task, answer))
            if len(uniform) >= want:
                break
    have = sum(1 for task, _ in uniform if shape_of_task(task) == SELF)
    if have < want_self:
        rest = (t for t in candidates[used:] if shape_of_task(t) == SELF)
        for task, answer in answers(rest, "self/cls/super top-up"):
            tried[("top-up " + SELF, accept_kind(answer, accept))] += 1
            if accept(answer):
                top_up.append((task, answer))
                have += 1
                if have >= want_self:
                    break
    return uniform, top_up, tried


def accept_kind(answer, accept):
    if accept(answer):
        return "kept"
    if answer["kind"] == "one":
        return "same file" if answer.get("same") else f"type {answer['type']}"
    return answer["kind"]


# ------------------------------------------------------------------- figures

def percent(part, whole):
    return f"{part / whole:7.2%}" if whole else "    n/a"


def print_tried(tried, title):
    kinds = sorted({k for _, k in tried}, key=lambda k: (k != "kept", k))
    order = list(SHAPES) + ["top-up " + SELF]
    rows = sorted({s for s, _ in tried}, key=lambda s: (order.index(s) if s in order else 99, s))
    print(f"  jedi answers, {title}:")
    print("    " + f"{'shape':<28}" + "".join(f"{k:>15}" for k in kinds))
    for shape in rows:
        print("    " + f"{shape:<28}" + "".join(f"{tried[(shape, k)]:>15}" for k in kinds))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--xfile", default="target/release/xfile")
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    root = os.path.realpath(args.root)

    calls, files, xfile_time = xfile_calls(root, args.xfile)
    sites, shape_at, lines = [], {}, {}
    unparsed = 0
    for rel in files:
        found = call_sites(root, rel)
        if found is None:
            unparsed += 1
            continue
        for line, column, shape in found:
            sites.append((rel, line, column))
            shape_at[(rel, line, column)] = shape
    sites = sorted(set(sites))
    shape_count = collections.Counter(shape_at[s] for s in sites)
    ours = sorted(
        {key for key, rels in calls.items() if any(cross_file(r) for r in rels)}
    )

    def source_line(task):
        rel, line, _ = task
        if rel not in lines:
            lines[rel] = LINE_BREAK.split(read_text(os.path.join(root, rel)))
        return lines[rel][line - 1].strip()

    def shape_of_task(task):
        return shape_at.get(task, "no ast call")

    print(f"xfile export: {xfile_time:.1f}s; files: {len(files)} indexed, {unparsed} not parsed by ast")
    print(
        f"call sites: {len(sites)} ("
        + ", ".join(f"{s} {shape_count[s]}" for s in SHAPES)
        + f"); xfile cross-file function_call positions: {len(ours)}"
    )
    want, want_self = args.sample, args.sample // 4
    print(
        f"sample: seed {args.seed}; sites drawn uniformly in random order until {want} kept,"
        f" then {SELF} sites only until that shape has {want_self};"
        f" 'overall' is the uniform part only"
    )
    jedi = Jedi(root, args.jobs)
    rng = random.Random(args.seed)
    try:
        # ---- recall
        candidates = list(sites)
        rng.shuffle(candidates)

        def kept(answer):
            return answer["kind"] == "one" and not answer.get("same") and answer["type"] in KEPT_TYPES

        def recall_answers(tasks, label):
            for task, answer in jedi.each(tasks, "recall, " + label):
                if answer["kind"] == "one" and answer["file"] == task[0]:
                    answer["same"] = True
                yield task, answer

        uniform, top_up, tried = draw(candidates, shape_of_task, recall_answers, kept, want, want_self)

        # ---- precision
        candidates = list(ours)
        rng.shuffle(candidates)

        def judged(answer):
            return True

        def precision_answers(tasks, label):
            yield from jedi.each(tasks, "precision, " + label)

        p_uniform, p_top_up, _ = draw(
            candidates, shape_of_task, precision_answers, judged, want, want_self
        )
    finally:
        jedi.close()
    elapsed = time.perf_counter() - jedi.started
    print(f"jedi: {jedi.done} gotos in {elapsed:.0f}s ({args.jobs} jobs)")

    # ---- recall figures
    def recall_outcome(task, answer):
        rels = calls.get(task, [])
        if any(r["target_file"] == answer["file"] and r["target_line"] == answer["line"] for r in rels):
            return "found"
        return "other target" if rels else "nothing"

    print(
        "\nrecall: jedi's single cross-file definitions (function, class, module-level"
        " assignment) xfile gives at the same position"
    )
    print_tried(tried, "recall draw")
    outcomes = collections.Counter()
    examples = collections.defaultdict(list)
    for part, chosen in (("uniform", uniform), ("top-up", top_up)):
        for task, answer in chosen:
            outcome = recall_outcome(task, answer)
            outcomes[(part, shape_of_task(task), outcome)] += 1
            if outcome != "found":
                examples[(shape_of_task(task), outcome)].append((task, answer))
    print(f"    {'shape':<28}{'found/total':>14}{'recall':>9}{'other target':>14}{'nothing':>9}")

    def row(title, parts, shapes):
        count = {
            o: sum(outcomes[(p, s, o)] for p in parts for s in shapes)
            for o in ("found", "other target", "nothing")
        }
        total = sum(count.values())
        print(
            f"    {title:<28}{count['found']:>7}/{total:<6}{percent(count['found'], total):>9}"
            f"{count['other target']:>14}{count['nothing']:>9}"
        )

    for shape in SHAPES:
        parts = ("uniform", "top-up") if shape == SELF else ("uniform",)
        title = shape + (f" (+{len(top_up)} top-up)" if shape == SELF and top_up else "")
        row(title, parts, (shape,))
    row("overall (uniform)", ("uniform",), SHAPES)

    # ---- precision figures
    def precision_outcome(task, answer):
        rels = [r for r in calls[task] if cross_file(r)]
        if answer["kind"] != "one":
            return "unsure"
        if any(r["target_file"] == answer["file"] and r["target_line"] == answer["line"] for r in rels):
            return "agree"
        return "disagree" if answer["type"] in KEPT_TYPES else "unsure"

    print("\nprecision: xfile's cross-file function_call targets jedi confirms")
    p_outcomes = collections.Counter()
    unsure_kinds = collections.Counter()
    for part, chosen in (("uniform", p_uniform), ("top-up", p_top_up)):
        for task, answer in chosen:
            outcome = precision_outcome(task, answer)
            p_outcomes[(part, shape_of_task(task), outcome)] += 1
            if outcome == "disagree":
                examples[(shape_of_task(task), "disagree")].append((task, answer))
            if outcome == "unsure":
                kind = answer["kind"] if answer["kind"] != "one" else f"type {answer['type']}"
                unsure_kinds[kind] += 1
                examples[(shape_of_task(task), "jedi unsure")].append((task, answer))
    print(f"    {'shape':<28}{'agree':>7}{'disagree':>10}{'precision':>11}{'unsure':>8}")

    def p_row(title, parts, shapes):
        count = {
            o: sum(p_outcomes[(p, s, o)] for p in parts for s in shapes)
            for o in ("agree", "disagree", "unsure")
        }
        print(
            f"    {title:<28}{count['agree']:>7}{count['disagree']:>10}"
            f"{percent(count['agree'], count['agree'] + count['disagree']):>11}{count['unsure']:>8}"
        )

    p_shapes = SHAPES + tuple(sorted({s for _, s, _ in p_outcomes} - set(SHAPES)))
    for shape in p_shapes:
        parts = ("uniform", "top-up") if shape == SELF else ("uniform",)
        title = shape + (f" (+{len(p_top_up)} top-up)" if shape == SELF and p_top_up else "")
        p_row(title, parts, (shape,))
    p_row("overall (uniform)", ("uniform",), p_shapes)
    print("    unsure: " + (", ".join(f"{k} {n}" for k, n in unsure_kinds.most_common()) or "no unsure"))

    # ---- examples
    for kind in ("nothing", "other target", "disagree", "jedi unsure"):
        for shape in p_shapes:
            chosen = examples.get((shape, kind), [])
            if not chosen or not args.show:
                continue
            print(f"\n{kind}, {shape}: {len(chosen)}")
            for task, answer in chosen[: args.show]:
                rel, line, column = task
                if answer["kind"] == "one":
                    theirs = f"{answer['file']}:{answer['line']} {answer['name']} ({answer['type']})"
                else:
                    theirs = f"{answer['kind']} {answer.get('name', '')}".strip()
                print(f"  {rel}:{line}:{column}  {source_line(task)}")
                print(f"      jedi:  {theirs}")
                print(f"      xfile: {describe_xfile(calls.get(task, []))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
