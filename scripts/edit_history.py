#!/usr/bin/env python3
"""Recall of the Edit hook on real history: when a commit changes the
parameters of a function and, in the same commit, its callers in other
files, how many of those caller files does `xfile hook` name right after
the definition alone is edited?

    scripts/edit_history.py --repo GIT_DIR [--max-commits 3000] [--limit 40]
                            [--seed 0] [--xfile PATH] [--json OUT]

GIT_DIR is a (bare) git directory, read with `git --git-dir`.

Selection. The last MAX_COMMITS non-merge commits touching Python files
(`git log --no-merges -p -U0 --no-renames -- '*.py'`). A commit is a case
when a .py file F that exists before and after it (and either defines a
name called on a changed line of another file, or lost a `def` line) has
a definition whose parameters changed while its qualified name stayed:
module-level functions
and methods (nested classes too), compared with `ast` on both versions of
F, so multi-line defs are handled. "Parameters" are what a call can notice:
the names and order of the positional parameters, which are required,
how many are positional-only, the keyword-only ones and which are
required, and `*args` / `**kwargs`; annotations and default values do not
count. Properties, defs inside functions and names defined more than once
in F (`@overload`, if/else variants) are left out. The expected caller
files are the OTHER .py files of the commit with an added or removed line
containing `NAME(` (NAME the def's name; for `__init__` / `__new__` the
class's name), outside a comment; and those whose parent version has a
call of NAME (as the oracle below matches calls) spanning a line the commit
removed or changed: a call over several lines whose argument line alone
changed. A file that only matches by a `def NAME(` line, or by the def of
an override in a direct subclass (by base name) whose signature lines the
commit changed, is counted too, tagged `def`. Callers the commit creates
are not in the tree the hook sees: they are listed and not counted. When
several files of a commit qualify, the one with the most expected caller
files is the case. Test files are kept, on both sides: a test that calls a
changed function breaks as surely as library code, and the hook indexes
tests; the summary splits the figures by whether the caller is a test
file (a path with a `test`/`tests`/`testing` directory, or `test_*.py`,
`*_test.py`, `conftest.py`).

Oracle. The expected files come from a name match in a diff, which also
catches other functions of the same name and calls the commit touched
without the signature requiring it (a new optional argument passed). So
each expected file also gets a verdict from the parent version of the
file: "broken" when a call `NAME(...)` / `x.NAME(...)` (not `self.NAME()`
for a module-level function; for `__init__`: `Class(...)`, `Class.__init__`,
and `super().__init__(...)` in a direct subclass) on a line the commit
removed or changed fits the old parameters and not the new ones,
with the same rule as the hook's: method calls on a receiver are bound,
on a receiver named like a class (`Class.NAME(...)`) may or may not be,
calls with `*`/`**` arguments are unknown; and "override" when a direct
subclass (by base name) there had its override, still with the old
parameters, changed by the commit (the hook names overrides left with the
old parameters). Only a name match: it is an oracle, not the truth (a
`send` or `read` of another class counts). The share among "broken"
caller files is the figure that says whether the hook
names what would break; the share among all expected files is the one the
brief asked for, and includes callers that a compatible change leaves
working (the hook is right to say nothing of them).

Per case. The parent tree is exported (`git archive PARENT | tar -x`)
into a scratch directory, with an empty pyproject.toml when it has none at
the top (the hook's root marker; no .git is exported). With a fresh
runtime directory (XFILE_RUNTIME_DIR) and XFILE_HOME, and a large
XFILE_HOOK_TIMEOUT_MS, a first hook call (an Edit of F that changes
nothing) starts the service and returns once the index is built; it must
print nothing. Then F alone is overwritten with its version of the commit
(the callers are left as they were: the agent has just edited the
definition) and the hook is called with an Edit of F. The paths the hook
names (`  path:line ...` lines) under a heading about one of the changed
definitions are compared with the expected files; any path it names that
is not expected is listed (`?`), and so is any heading about a definition
whose parameters did not change (`!`; every def of that name compared, so
overloads count). The services of the runtime directory are then killed
(by the pids of its pid files, checked against /proc/PID/environ) and the
scratch directory removed.

Output. The binary's sha256 and time (a warning if it changes during the
run). A line per case with the changed definitions, notes (a comment in a
changed def's parameter list or a header over 1,000 characters, which
xfile cannot read parameters from; the hook's lists cut at 12 lines), its
expected files (`+` named, `-` missed, with the oracle's verdict and the
first touched call), the files the hook named that were not expected
(`?`, with whether the commit changed them) and headings about unchanged
definitions (`!`). Then a summary. --json writes every case, the hook's
full text included.
"""
import argparse, ast, hashlib, io, json, os, random, re, shutil, subprocess, sys, tempfile, time, tokenize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hook_driver import call, edit_payload, stop_services  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEF_RE = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)", re.M)
CLASS_RE = re.compile(r"^\s*class\s+(\w+)", re.M)
CALLED_RE = re.compile(r"(\w+)\s*\(")
NAMED_RE = re.compile(r"^  (\S+\.py):(\d+) (.*)$")
HEADING_RE = re.compile(r"^(\S+) (changed at line|removed;|renamed to)")


class Blobs:
    """`git cat-file --batch`, one process for the whole run."""

    def __init__(self, gitdir):
        self.proc = subprocess.Popen(["git", "--git-dir", gitdir, "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def get(self, rev, path):
        self.proc.stdin.write(f"{rev}:{path}\n".encode())
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            return None
        size = int(header[2])
        body = self.proc.stdout.read(size)
        self.proc.stdout.read(1)
        return body

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# ---------------------------------------------------------------- history

class FileDiff:
    def __init__(self, path):
        self.path = path
        self.old_exists = self.new_exists = True
        self.removed = []  # (parent line number, text)
        self.added = []    # (commit line number, text)


def commits_with_diffs(gitdir, max_commits):
    """(sha, parent, {path: FileDiff}) for the last non-merge commits."""
    out = subprocess.Popen(
        ["git", "--git-dir", gitdir, "log", "--no-merges", f"--max-count={max_commits}",
         "-p", "-U0", "--no-renames", "--no-color", "--format=@@@commit %H %P", "--", "*.py"],
        stdout=subprocess.PIPE)
    sha = parent = None
    files, current = {}, None
    old_line = new_line = 0
    header, pending_old = False, "/dev/null"
    for raw in out.stdout:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if line.startswith("@@@commit "):
            if sha:
                yield sha, parent, files
            parts = line.split()
            sha, parent = parts[1], (parts[2] if len(parts) > 2 else None)
            files, current = {}, None
        elif line.startswith("diff --git "):
            current, header = None, True
        elif header and line.startswith("--- "):
            pending_old = line[4:]
        elif header and line.startswith("+++ "):
            new = line[4:]
            path = (new[2:] if new != "/dev/null" else pending_old[2:])
            current = files.setdefault(path, FileDiff(path))
            current.old_exists = pending_old != "/dev/null"
            current.new_exists = new != "/dev/null"
        elif line.startswith("@@ ") and current is not None:
            header = False
            m = re.match(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
            old_line, new_line = int(m.group(1)), int(m.group(2))
        elif current is not None and line.startswith("-"):
            current.removed.append((old_line, line[1:]))
            old_line += 1
        elif current is not None and line.startswith("+"):
            current.added.append((new_line, line[1:]))
            new_line += 1
    if sha:
        yield sha, parent, files
    out.wait()


def is_test(path):
    parts = path.split("/")
    base = parts[-1]
    return (any(p in ("test", "tests", "testing") for p in parts[:-1])
            or base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py")


# ------------------------------------------------------------- signatures

def parameters(fn):
    a = fn.args
    pos = a.posonlyargs + a.args
    first_default = len(pos) - len(a.defaults)
    return {
        "positional": tuple((p.arg, i < first_default) for i, p in enumerate(pos)),
        "positional_only": len(a.posonlyargs),
        "keyword_only": tuple((p.arg, d is None) for p, d in zip(a.kwonlyargs, a.kw_defaults)),
        "var_positional": a.vararg is not None,
        "var_keyword": a.kwarg is not None,
    }


def decorator_names(fn):
    names = []
    for d in fn.decorator_list:
        d = d.func if isinstance(d, ast.Call) else d
        names.append(ast.unparse(d))
    return names


def definitions(text):
    """qualname -> (node, kind, decorators); names defined twice map to None."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    found = {}

    def walk(body, scope, in_class):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = scope + node.name
                found[q] = None if q in found else (node, "method" if in_class else "function",
                                                    decorator_names(node))
            elif isinstance(node, ast.ClassDef):
                walk(node.body, scope + node.name + ".", True)
            elif isinstance(node, (ast.If, ast.Try)) and not in_class:
                # `if TYPE_CHECKING:` / try-import blocks at module level.
                for part in (node.body, getattr(node, "orelse", []),
                             getattr(node, "finalbody", []),
                             *[h.body for h in getattr(node, "handlers", [])]):
                    walk(part, scope, in_class)
    walk(tree.body, "", False)
    return found


def signature_sets(text):
    """qualname -> sorted parameters of every def of that name (overloads
    and variants included), for functions and methods."""
    found = {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return found

    def walk(body, scope):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(scope + node.name, []).append(repr(parameters(node)))
            elif isinstance(node, ast.ClassDef):
                walk(node.body, scope + node.name + ".")
            elif isinstance(node, (ast.If, ast.Try)):
                for part in (node.body, getattr(node, "orelse", []),
                             getattr(node, "finalbody", []),
                             *[h.body for h in getattr(node, "handlers", [])]):
                    walk(part, scope)
    walk(tree.body, "")
    return {q: sorted(v) for q, v in found.items()}


def signature_text(node):
    return f"{node.name}({ast.unparse(node.args)})"


def header_notes(text, node):
    """What in the source of `node`'s def header (from `def` to the colon)
    may keep the hook from reading its parameters: a comment inside it
    (xfile folds the header to one line, where the comment swallows the
    rest), or a folded length over 1,000 characters (xfile shortens it)."""
    lines = text.splitlines()
    end = node.body[0].lineno - 1 if node.body else node.lineno
    header = "\n".join(lines[node.lineno - 1:max(end, node.lineno)])
    notes = []
    try:
        depth = 0
        for t in tokenize.generate_tokens(io.StringIO(header + "\n").readline):
            if t.type == tokenize.OP and t.string in "([{":
                depth += 1
            elif t.type == tokenize.OP and t.string in ")]}":
                depth -= 1
            elif t.type == tokenize.COMMENT and depth > 0:
                notes.append("comment in its parameter list")
                break
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    if len(" ".join(header.split())) > 1000:
        notes.append("header over 1,000 characters")
    return notes


def changed_signatures(old_text, new_text):
    old, new = definitions(old_text), definitions(new_text)
    if old is None or new is None:
        return []
    changed = []
    for q, before in old.items():
        after = new.get(q)
        if before is None or after is None:
            continue
        (bnode, kind, bdec), (anode, _, adec) = before, after
        if any(d in ("property",) or d.endswith((".setter", ".getter", ".deleter"))
               or d.endswith("cached_property") or d == "overload" or d.endswith(".overload")
               for d in bdec + adec):
            continue
        pb, pa = parameters(bnode), parameters(anode)
        if pb == pa:
            continue
        last = q.rsplit(".", 1)[-1]
        cls = q.rsplit(".", 2)[-2] if "." in q else None
        names = [cls] if last in ("__init__", "__new__") and cls else [last]
        changed.append({
            "qualname": q, "kind": kind, "names": names, "decorators": adec,
            "old": pb, "new": pa, "was": signature_text(bnode), "now": signature_text(anode),
            "line": anode.lineno,
            "notes": sorted(set(header_notes(old_text, bnode) + header_notes(new_text, anode))),
        })
    return changed


# ----------------------------------------------------------------- oracle

def fit(p, positional, keywords, skip):
    pos = p["positional"][skip:]
    only = max(p["positional_only"] - skip, 0)
    if positional > len(pos) and not p["var_positional"]:
        return f"passes {positional} positional, it takes {len(pos)}"
    filled = {name for name, _ in pos[:positional]}
    named = {name for name, _ in pos[only:]} | {name for name, _ in p["keyword_only"]}
    for k in keywords:
        if k in named:
            if k in filled:
                return f"passes `{k}` twice"
            filled.add(k)
        elif not p["var_keyword"]:
            return f"passes `{k}=`, no such parameter"
    for name, required in pos + p["keyword_only"]:
        if required and name not in filled:
            return f"does not pass `{name}`"
    return None


def calls_in(tree):
    """(call, enclosing class or None) for every call of the tree."""
    stack = [(tree, None)]
    while stack:
        node, cls = stack.pop()
        if isinstance(node, ast.Call):
            yield node, cls
        inner = node if isinstance(node, ast.ClassDef) else cls
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def call_matches(call, change, enclosing=None):
    """The skips to try when `call` calls `change` by name, else None.
    `enclosing`: the class the call is in, for `super().__init__()`."""
    f = call.func
    last = change["qualname"].rsplit(".", 1)[-1]
    cls = change["qualname"].rsplit(".", 2)[-2] if "." in change["qualname"] else None
    method = change["kind"] == "method"
    static = "staticmethod" in change["decorators"]
    classm = "classmethod" in change["decorators"]
    if last in ("__init__", "__new__"):
        if isinstance(f, ast.Name) and f.id == cls or isinstance(f, ast.Attribute) and f.attr == cls:
            return [1]
        if isinstance(f, ast.Attribute) and f.attr == last:
            base = f.value
            if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super":
                # Only in a direct subclass (by base name) of the class.
                return [1] if enclosing is not None and cls in base_names(enclosing) else None
            if isinstance(base, ast.Name) and base.id == cls:
                return [0]
        return None
    if isinstance(f, ast.Name):
        if f.id != last:
            return None
        return [0] if not method or static else ([1] if classm else [0, 1])
    if isinstance(f, ast.Attribute) and f.attr == last:
        receiver = f.value
        if not method and (isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")
                           or isinstance(receiver, ast.Call)):
            # `self.NAME()` is a method, not the module's function.
            return None
        if not method or static:
            return [0]
        if classm:
            return [1]
        if isinstance(f.value, ast.Name) and (f.value.id == cls or f.value.id[:1].isupper()):
            return [0, 1]
        return [1]
    return None


def base_names(cls):
    names = set()
    for b in cls.bases:
        if isinstance(b, ast.Subscript):
            b = b.value
        if isinstance(b, ast.Name):
            names.add(b.id)
        elif isinstance(b, ast.Attribute):
            names.add(b.attr)
    return names


def oracle(parent_text, touched_lines, change):
    """('broken'|'override'|'fits'|'unknown'|'none', detail) for the
    parent's calls of `change` on the lines the commit removed; 'override'
    for a method of a direct subclass (by base name) with the old
    parameters, whose def the commit changed."""
    try:
        tree = ast.parse(parent_text)
    except (SyntaxError, ValueError):
        return "unparsable", ""
    verdict, detail = "none", ""
    lines = parent_text.splitlines()
    last = change["qualname"].rsplit(".", 1)[-1]
    cls = change["qualname"].rsplit(".", 2)[-2] if "." in change["qualname"] else None
    if change["kind"] == "method" and cls:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and cls in base_names(node):
                for fn in node.body:
                    if (isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == last
                            and parameters(fn) == change["old"]
                            and any(fn.lineno <= n <= fn.body[0].lineno for n in touched_lines)):
                        return "override", f"L{fn.lineno}: {node.name}.{last} overrides {cls}.{last}"
    for node, enclosing in calls_in(tree):
        skips = call_matches(node, change, enclosing)
        if skips is None:
            continue
        if not any(node.lineno <= n <= (node.end_lineno or node.lineno) for n in touched_lines):
            continue
        text = f"L{node.lineno}: {lines[node.lineno - 1].strip()[:100]}"
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            if verdict == "none":
                verdict, detail = "unknown", text + "  (*/** arguments)"
            continue
        positional = len(node.args)
        keywords = [k.arg for k in node.keywords]
        fitted = [s for s in skips if fit(change["old"], positional, keywords, s) is None]
        if not fitted:
            if verdict == "none":
                verdict, detail = "unknown", text + "  (fits neither)"
            continue
        reasons = [fit(change["new"], positional, keywords, s) for s in fitted]
        if all(reasons):
            return "broken", f"{text}  ({reasons[0]})"
        if verdict in ("none", "unknown"):
            verdict, detail = "fits", text
    return verdict, detail


# ------------------------------------------------------------------ cases

def touched_use(tree, touched, change):
    """'call' when the parsed parent file calls `change` by name on a line
    the commit removed or changed (a call over several lines whose
    argument line alone changed included), 'def' when a direct subclass's
    override there had its def changed, else None."""
    last = change["qualname"].rsplit(".", 1)[-1]
    cls = change["qualname"].rsplit(".", 2)[-2] if "." in change["qualname"] else None
    for node, enclosing in calls_in(tree):
        if (call_matches(node, change, enclosing) is not None
                and any(node.lineno <= n <= (node.end_lineno or node.lineno) for n in touched)):
            return "call"
    found = None
    for node in ast.walk(tree):
        if (change["kind"] == "method" and cls and isinstance(node, ast.ClassDef)
              and cls in base_names(node)):
            for fn in node.body:
                if (isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == last
                        and any(fn.lineno <= n < fn.body[0].lineno for n in touched)):
                    found = "def"
    return found


def comment_free(text):
    return text.split("#", 1)[0]


def find_cases(gitdir, max_commits):
    blobs = Blobs(gitdir)
    cases, scanned = [], 0
    try:
        for sha, parent, files in commits_with_diffs(gitdir, max_commits):
            scanned += 1
            if parent is None or len(files) < 2:
                continue
            best = None
            parents = {}  # path -> parsed parent version (None: absent or unparsable)

            def parent_tree(p):
                if p not in parents:
                    raw = blobs.get(parent, p)
                    try:
                        parents[p] = None if raw is None else ast.parse(raw.decode("utf-8", "replace"))
                    except (SyntaxError, ValueError):
                        parents[p] = None
                return parents[p]

            for path, diff in files.items():
                if not (diff.old_exists and diff.new_exists):
                    continue
                others = [d for p, d in files.items() if p != path]
                called = set()
                for d in others:
                    for _, t in d.removed + d.added:
                        called.update(CALLED_RE.findall(comment_free(t)))
                old_raw = blobs.get(parent, path)
                if old_raw is None:
                    continue
                old_text = old_raw.decode("utf-8", "replace")
                # Worth parsing: a def or class of F is called in another
                # file's changed lines, or F's diff removed a def line.
                defined = set(DEF_RE.findall(old_text)) | set(CLASS_RE.findall(old_text))
                if not (defined & called or any(DEF_RE.match(t) for _, t in diff.removed)):
                    continue
                new_raw = blobs.get(sha, path)
                if new_raw is None:
                    continue
                new_text = new_raw.decode("utf-8", "replace")
                all_changes = changed_signatures(old_text, new_text)
                if not all_changes:
                    continue
                expected = {}

                def expect(p, qualname, tag):
                    entry = expected.setdefault(p, {"for": [], "tag": tag})
                    if qualname not in entry["for"]:
                        entry["for"].append(qualname)
                    if tag == "call":
                        entry["tag"] = "call"

                for d in others:
                    for c in all_changes:
                        pattern = re.compile(r"\b(?:%s)\s*\(" % "|".join(map(re.escape, c["names"])))
                        hits = [t for _, t in d.removed + d.added if pattern.search(comment_free(t))]
                        if hits:
                            only_defs = all(re.match(r"\s*(?:async\s+)?def\s", t) for t in hits)
                            expect(d.path, c["qualname"], "def" if only_defs else "call")
                    # Calls over several lines whose argument line alone
                    # changed, overrides whose parameter lines changed:
                    # found in the parent's syntax tree.
                    if not (d.old_exists and d.removed):
                        continue
                    touched = {n for n, _ in d.removed}
                    tree = None
                    for c in all_changes:
                        if tree is None:
                            tree = parent_tree(d.path)
                            if tree is None:
                                break
                        use = touched_use(tree, touched, c)
                        if use:
                            expect(d.path, c["qualname"], use)
                changes = [c for c in all_changes
                           if any(c["qualname"] in e["for"] for e in expected.values())]
                if expected and (best is None or len(expected) > len(best["expected"])):
                    twice = sorted(q for q, v in (definitions(old_text) or {}).items() if v is None)
                    old_sets, new_sets = signature_sets(old_text), signature_sets(new_text)
                    unchanged = sorted(q for q in old_sets if old_sets[q] == new_sets.get(q))
                    best = {"sha": sha, "parent": parent, "file": path, "changes": changes,
                            "defined_twice": twice, "unchanged": unchanged,
                            "expected": expected, "new_text": new_text,
                            "touched": {p: sorted({n for n, _ in d.removed}) for p, d in files.items()},
                            "changed_files": sorted(files)}
            if best:
                cases.append(best)
    finally:
        blobs.close()
    return cases, scanned


# ------------------------------------------------------------------- hook

def hook_root(tree, rel):
    """The root the hook finds for tree/rel, relative to the tree."""
    d = os.path.dirname(os.path.join(tree, rel))
    while True:
        if os.path.exists(os.path.join(d, ".git")) or os.path.exists(os.path.join(d, "pyproject.toml")):
            return os.path.relpath(d, tree)
        if os.path.abspath(d) == os.path.abspath(tree):
            return "."
        d = os.path.dirname(d)


def run_case(gitdir, xfile, case, timeout_ms):
    scratch = tempfile.mkdtemp(prefix="edit-history-")
    tree, runtime, home = (os.path.join(scratch, n) for n in ("tree", "runtime", "home"))
    os.mkdir(tree)
    os.mkdir(runtime, 0o700)
    os.mkdir(home, 0o700)
    env = dict(os.environ, XFILE_RUNTIME_DIR=runtime, XFILE_HOME=home,
               XFILE_HOOK_TIMEOUT_MS=str(timeout_ms), XFILE_SERVICE_IDLE_SECONDS="60")
    result = {"start_s": None, "answer_s": None, "text": "", "first": "", "error": None, "leaked": []}
    try:
        archive = subprocess.Popen(["git", "--git-dir", gitdir, "archive", case["parent"]],
                                   stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", tree], stdin=archive.stdout, check=True)
        archive.stdout.close()
        if archive.wait() != 0:
            raise RuntimeError("git archive failed")
        if not os.path.exists(os.path.join(tree, "pyproject.toml")):
            open(os.path.join(tree, "pyproject.toml"), "w").close()
        path = os.path.join(tree, case["file"])
        result["root"] = hook_root(tree, case["file"])
        change = case["changes"][0]
        old_def, new_def = change["was"], change["now"]
        started = time.perf_counter()
        _, result["first"] = call(xfile, env, edit_payload(path, old_def, old_def, "edit-history"))
        result["start_s"] = round(time.perf_counter() - started, 2)
        with open(path, "w", encoding="utf-8") as f:
            f.write(case["new_text"])
        started = time.perf_counter()
        _, result["text"] = call(xfile, env, edit_payload(path, old_def, new_def, "edit-history"))
        result["answer_s"] = round(time.perf_counter() - started, 2)
    except Exception as e:  # noqa: BLE001 - a failed case is reported, not fatal
        result["error"] = str(e)
    finally:
        result["leaked"] = stop_services(runtime)
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def named_paths(text, root):
    """{tree-relative path: [(subject, heading, line text)]} of the hook's
    answer; subject is the definition a heading is about."""
    named, heading, subject = {}, "", ""
    for line in text.splitlines():
        m = NAMED_RE.match(line)
        if m:
            p = os.path.normpath(os.path.join(root, m.group(1))) if root != "." else m.group(1)
            named.setdefault(p, []).append((subject, heading, line.strip()))
        elif not line.startswith(" "):
            heading = line
            h = HEADING_RE.match(line)
            subject = h.group(1) if h else ""
    return named


# ------------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, help="git directory (bare is fine)")
    parser.add_argument("--max-commits", type=int, default=3000)
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--xfile", default=os.path.join(HERE, "..", "target", "release", "xfile"))
    parser.add_argument("--timeout-ms", type=int, default=600000,
                        help="XFILE_HOOK_TIMEOUT_MS: this measures what the hook says, not how fast")
    parser.add_argument("--json", help="write every case, with the hook's text, here")
    args = parser.parse_args()
    gitdir = os.path.abspath(args.repo)
    xfile = os.path.abspath(args.xfile)
    began = time.perf_counter()
    print("command:", " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]))
    def identity():
        st = os.stat(xfile)
        digest = hashlib.sha256(open(xfile, "rb").read()).hexdigest()[:12]
        return f"sha256 {digest}, modified {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(st.st_mtime))}"
    binary = identity()
    print(f"xfile: {xfile} ({binary})")
    cases, scanned = find_cases(gitdir, args.max_commits)
    print(f"{scanned} non-merge commits touching .py scanned; {len(cases)} change a signature "
          f"and a name-matched caller in another file ({time.perf_counter() - began:.1f} s)")
    if len(cases) > args.limit:
        cases = sorted(random.Random(args.seed).sample(cases, args.limit),
                       key=lambda c: cases.index(c))
    blobs = Blobs(gitdir)
    totals = {k: 0 for k in ("expected", "named", "broken", "broken_named", "lib_expected",
                             "lib_named", "lib_broken", "lib_broken_named", "with_extra",
                             "errors", "first_not_quiet", "cases_silent", "new_callers",
                             "unchanged_subject", "cases_unchanged_subject",
                             "calls_broken", "calls_broken_named")}
    records = []
    for i, case in enumerate(cases, 1):
        verdicts, new_callers = {}, []
        for path, entry in list(case["expected"].items()):
            parent_raw = blobs.get(case["parent"], path)
            if parent_raw is None:
                # Created by the commit: not in the tree the hook sees.
                new_callers.append(path)
                del case["expected"][path]
                continue
            best = ("none", "")
            rank = {"broken": 4, "override": 3, "fits": 2, "unknown": 1, "none": 0, "unparsable": 0}
            for c in case["changes"]:
                if c["qualname"] not in entry["for"]:
                    continue
                v = oracle(parent_raw.decode("utf-8", "replace"), set(case["touched"].get(path, [])), c)
                if rank[v[0]] > rank[best[0]]:
                    best = v
            verdicts[path] = best
        totals["new_callers"] += len(new_callers)
        if not case["expected"]:
            print(f"[-] {case['sha'][:10]} {case['file']}: skipped, its only callers are new files "
                  f"{new_callers}")
            continue
        result = run_case(gitdir, xfile, case, args.timeout_ms)
        all_named = named_paths(result["text"], result.get("root", "."))
        changed = {c["qualname"] for c in case["changes"]}
        # A file counts as named for the case when named under a heading
        # about a definition whose parameters did change.
        named = {p: v for p, v in all_named.items() if any(s in changed for s, _, _ in v)}
        expected = case["expected"]
        hit = [p for p in expected if p in named]
        broken = [p for p in expected if verdicts[p][0] in ("broken", "override")]
        totals["expected"] += len(expected)
        totals["named"] += len(hit)
        totals["broken"] += len(broken)
        totals["broken_named"] += sum(p in named for p in broken)
        calls = [p for p in broken if verdicts[p][0] == "broken"]
        totals["calls_broken"] += len(calls)
        totals["calls_broken_named"] += sum(p in named for p in calls)
        lib = [p for p in expected if not is_test(p)]
        totals["lib_expected"] += len(lib)
        totals["lib_named"] += sum(p in named for p in lib)
        totals["lib_broken"] += sum(p in broken for p in lib)
        totals["lib_broken_named"] += sum(p in broken and p in named for p in lib)
        extra = {p: v for p, v in all_named.items() if p not in expected and p != case["file"]}
        subjects = {s for v in all_named.values() for s, _, _ in v}
        unchanged = sorted(s for s in subjects if s in case["unchanged"])
        totals["unchanged_subject"] += len(unchanged)
        totals["cases_unchanged_subject"] += bool(unchanged)
        totals["with_extra"] += bool(extra)
        totals["errors"] += bool(result["error"])
        totals["first_not_quiet"] += bool(result["first"])
        totals["cases_silent"] += not result["text"]
        sigs = "; ".join(f"{c['qualname']}: ({c['was'].split('(', 1)[1]} -> ({c['now'].split('(', 1)[1]}"
                         for c in case["changes"])
        print(f"[{i}/{len(cases)}] {case['sha'][:10]} {case['file']}  expected {len(expected)}, "
              f"named {len(hit)}; oracle-broken {len(broken)}, named {sum(p in named for p in broken)}"
              f"  (start {result['start_s']} s, answer {result['answer_s']} s)")
        print(f"    {sigs[:400]}")
        for c in case["changes"]:
            if c["notes"]:
                print(f"    note: {c['qualname']}: {', '.join(c['notes'])}")
        cut = re.findall(r"^  … (\d+) more$", result["text"], re.M)
        if cut:
            print(f"    note: the hook's lists were cut ({' + '.join(cut)} more not shown)")
        if result["error"]:
            print(f"    ERROR: {result['error']}")
        if result["first"]:
            print(f"    the first call was not quiet: {result['first'][:200]!r}")
        if result["leaked"]:
            print(f"    services still alive: {result['leaked']}")
        for p in sorted(expected):
            mark = "+" if p in named else "-"
            verdict, detail = verdicts[p]
            tag = expected[p]["tag"]
            print(f"    {mark} {p} [{tag}, oracle: {verdict}] {detail}")
        for p in new_callers:
            print(f"    . {p} [created by the commit: not counted]")
        for p in sorted(extra):
            how = "changed by the commit" if p in case["changed_files"] else "NOT changed by the commit"
            print(f"    ? {p} ({how}, {len(extra[p])} lines): {extra[p][0][2][:160]}")
        for s in unchanged:
            why = (" (defined more than once in the file: overloads?)"
                   if s in case["defined_twice"] else "")
            print(f"    ! the hook names {s}; no def of that name changed its parameters{why}")
        records.append({k: v for k, v in case.items() if k not in ("new_text", "touched", "unchanged")}
                       | {"verdicts": verdicts, "named": all_named, "extra": sorted(extra),
                          "new_callers": new_callers, "unchanged_subjects": unchanged}
                       | {k: v for k, v in result.items()})
    blobs.close()
    share = lambda a, b: f"{a}/{b} = {a / b:.0%}" if b else f"{a}/0"
    print()
    used = len(records)
    print(f"repo {gitdir}: {used} commits used (of {scanned} scanned, "
          f"--max-commits {args.max_commits} --limit {args.limit} --seed {args.seed})")
    print(f"  caller files expected / named:           {share(totals['named'], totals['expected'])}")
    print(f"    non-test callers:                      {share(totals['lib_named'], totals['lib_expected'])}")
    print(f"  oracle-broken caller files / named:      {share(totals['broken_named'], totals['broken'])}")
    print(f"    non-test callers:                      {share(totals['lib_broken_named'], totals['lib_broken'])}")
    print(f"    by a call (overrides left out):        {share(totals['calls_broken_named'], totals['calls_broken'])}")
    print(f"  commits where the hook said nothing:     {totals['cases_silent']}")
    print(f"  caller files created by the commit (not counted): {totals['new_callers']}")
    print(f"  commits naming a file not expected:      {totals['with_extra']}")
    print(f"  headings about a definition whose parameters did not change: "
          f"{totals['unchanged_subject']} in {totals['cases_unchanged_subject']} commits")
    print(f"  errors: {totals['errors']}, first calls not quiet: {totals['first_not_quiet']}")
    print(f"  total time {time.perf_counter() - began:.0f} s")
    if identity() != binary:
        print(f"  WARNING: the binary changed during the run (now {identity()})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"repo": gitdir, "totals": totals, "cases": records}, f, indent=1, default=list)


if __name__ == "__main__":
    main()
