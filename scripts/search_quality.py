"""Search quality of `search_with_context` on a project: queries built from
the project's real definitions, and where the intended definition ranks.

    python3 scripts/search_quality.py target/bench-data/django-5.2.8 --xfile target/release/xfile [--queries 200] [--seed 1]

Definitions come from Python's `ast`: every .py file under ROOT (dot
directories skipped), module-level classes and functions and the methods of
module-level classes, as `path::Qualified.name`. Targets are drawn with a
fixed seed, in four kinds of equal share:

- exact: the name (`ModelAdmin`);
- qualified: `Class.method` for a method; for a module-level definition the
  module's last two parts without the top package (`models.base.Model`), or,
  when a package `__init__` above it re-exports it, the package path
  (`db.models.Model`);
- words: the name's snake_case/camelCase words, lower case, without
  connectors (`or`, `to`, ...) and numbers, at most three
  (`get_object_or_404` -> `get object`, `ModelAdmin` -> `model admin`);
- typo: one inner character of a name of 6 or more swapped with the next,
  deleted or substituted, giving no existing name.

Test code (a file under a `tests` directory or named test*.py) holds most
definitions of a project like Django; at most a quarter of each kind's
targets come from it (--test-share). Only targets with an intended answer
are drawn: names defined at most 3
times in the tree; words that start the words of at most 3 distinct names
and are not exactly the words of another name (`get date list` would mean
`get_date_list`, not `get_date_list_period`);
qualified names that at most 3 definitions share (a module path: one).

The rank of a query is the position of the intended definition among the
seeds of the answer (clusters in order, seeds in order within each). A seed
with the target's qualified name in another file counts as the target
(several files define the same `Meta`, `Command.handle`), except for a
module path or re-export query, which names the file.

Prints top-1 and top-5 overall and per kind, the worst misses with what
came first, the MCP wall time per call (JSON-RPC over stdio included) and
the server's own `searchTimeMs`. Exits 1 if top-1 < 90% or top-5 < 98%
(the targets search is held to).
"""
import argparse, ast, json, os, random, sys, time
from collections import Counter

sys.path.insert(0, os.path.dirname(__file__))
from mcp_stdio import Server  # noqa: E402

KINDS = ["exact", "qualified", "words", "typo"]
CONNECTORS = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "is", "of", "on", "or",
              "the", "to", "with"}


def words(name):
    """Lower-case words of a snake_case or camelCase name, split as xfile does."""
    out, current = [], ""
    for i, c in enumerate(name):
        if c in "_.-" or c.isspace():
            if current:
                out.append(current)
                current = ""
            continue
        boundary = (c.isupper() and current
                    and (name[i - 1].islower() or name[i - 1].isdigit()
                         or (i + 1 < len(name) and name[i + 1].islower())))
        if boundary:
            out.append(current)
            current = ""
        current += c.lower()
    if current:
        out.append(current)
    return out


def in_order_prefixes(query, name):
    rest = iter(name)
    return all(any(word.startswith(q) for word in rest) for q in query)


def module_of(path):
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class Definition:
    def __init__(self, path, qualname, kind):
        self.path, self.qualname, self.kind = path, qualname, kind
        self.name = qualname.rsplit(".", 1)[-1]
        self.module = module_of(path)

    @property
    def id(self):
        return f"{self.path}::{self.qualname}"


def collect(root):
    """Definitions, and re-exports: package module -> {name: defining module}."""
    definitions, imports = [], {}
    for dirpath, dirnames, names in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            full = os.path.join(dirpath, name)
            path = os.path.relpath(full, root).replace(os.sep, "/")
            try:
                with open(full, encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            functions = (ast.FunctionDef, ast.AsyncFunctionDef)
            for node in tree.body:
                if isinstance(node, functions):
                    definitions.append(Definition(path, node.name, "function"))
                elif isinstance(node, ast.ClassDef):
                    definitions.append(Definition(path, node.name, "class"))
                    for member in node.body:
                        if isinstance(member, functions):
                            definitions.append(Definition(path, f"{node.name}.{member.name}", "method"))
            if name == "__init__.py":
                package = module_of(path)
                found = {}
                for node in tree.body:
                    if isinstance(node, ast.ImportFrom) and (node.module or node.level):
                        if node.level:
                            base = package.split(".")
                            base = base[:len(base) - (node.level - 1)]
                            source = ".".join(base + ([node.module] if node.module else []))
                        else:
                            source = node.module
                        for alias in node.names:
                            if alias.name != "*" and (alias.asname in (None, alias.name)):
                                found[alias.name] = source
                imports[package] = found
    return definitions, imports


def reexports(definitions, imports):
    """Definition id -> the shortest package path re-exporting it."""
    by_module_name = {(d.module, d.name): d for d in definitions if d.kind != "method"}
    # Follow chains of package re-exports: (package, name) -> defining module.
    out = {}
    for package, names in imports.items():
        for name, source in names.items():
            seen = set()
            while (source, name) not in by_module_name and source in imports \
                    and name in imports[source] and source not in seen:
                seen.add(source)
                source = imports[source][name]
            target = by_module_name.get((source, name))
            # Only a package above the defining module: its public path.
            if target and target.module.startswith(package + "."):
                current = out.get(target.id)
                if current is None or len(package) < len(current):
                    out[target.id] = package
    return out


def short_module(module, parts):
    """The module's last `parts` parts, without the top package when longer."""
    pieces = module.split(".")
    if len(pieces) > 1:
        pieces = pieces[1:]
    return ".".join(pieces[-parts:])


def typo(name, rng, existing):
    """One-character typo inside `name`, not itself a name of the tree."""
    for _ in range(20):
        i = rng.randrange(1, len(name) - 1)
        how = rng.choice(["swap", "delete", "substitute"])
        if how == "swap":
            if i + 1 > len(name) - 2 or name[i] == name[i + 1]:
                continue
            variant = name[:i] + name[i + 1] + name[i] + name[i + 2:]
        elif how == "delete":
            variant = name[:i] + name[i + 1:]
        else:
            letters = [c for c in "abcdefghijklmnopqrstuvwxyz" if c != name[i].lower()]
            variant = name[:i] + rng.choice(letters) + name[i + 1:]
        if variant != name and variant.lower() not in existing:
            return variant, how
    return None


def is_test(path):
    parts = path.split("/")
    return "tests" in parts[:-1] or parts[-1].startswith("test")


def build_queries(definitions, imports, count, seed, test_share):
    rng = random.Random(seed)
    names = Counter(d.name for d in definitions)
    qualnames = Counter(d.qualname for d in definitions)
    existing = {d.name.lower() for d in definitions}
    exported = reexports(definitions, imports)
    distinct_words = {}
    for n in names:
        distinct_words.setdefault(tuple(words(n)), set()).add(n)
    name_words = [(w, group) for w, group in distinct_words.items()]
    dotted_suffix = Counter()
    for d in definitions:
        if d.kind != "method":
            parts = (d.module + "." + d.qualname).split(".")
            for k in range(2, len(parts) + 1):
                dotted_suffix[".".join(parts[-k:])] += 1

    def word_query(d):
        content = [w for w in words(d.name) if w not in CONNECTORS and not w.isdigit()][:3]
        if len(content) < 2:
            return None
        matching = set()
        for w, group in name_words:
            if in_order_prefixes(content, w):
                matching |= group
                if len(matching) > 3:
                    return None
            # Another name made of exactly these words is the right answer
            # to them, not the intended one: no intended answer, no query.
            if list(w) == content and d.name not in group:
                return None
        return " ".join(content)

    def make(kind, d):
        """(query, subkind, whether another file's same qualname counts)."""
        if kind == "exact":
            return (d.name, d.kind, True) if names[d.name] <= 3 else None
        if kind == "typo":
            if names[d.name] > 3 or len(d.name) < 6:
                return None
            made = typo(d.name, rng, existing)
            return (made[0], made[1], True) if made else None
        if kind == "words":
            query = word_query(d) if names[d.name] <= 3 else None
            return (query, d.kind, True) if query else None
        # qualified
        if d.kind == "method":
            return (d.qualname, "Class.method", True) if qualnames[d.qualname] <= 3 else None
        if d.id in exported:
            package = exported[d.id]
            query = short_module(package, 99) + "." + d.qualname
            return (query, "re-export", False)
        query = short_module(d.module, 2) + "." + d.qualname
        if dotted_suffix[query] != 1:
            return None
        return (query, "module path", False)

    order = list(range(len(definitions)))
    rng.shuffle(order)
    used, queries = set(), []
    per_kind = [count // len(KINDS) + (i < count % len(KINDS)) for i in range(len(KINDS))]
    for kind, wanted in zip(KINDS, per_kind):
        picked = tests = 0
        for i in order:
            if picked == wanted:
                break
            d = definitions[i]
            if d.id in used:
                continue
            test = is_test(d.path)
            if test and tests >= int(wanted * test_share):
                continue
            # Qualified: half `Class.method`, half module-level paths.
            methods = sum(1 for q in queries if q["kind"] == kind and q["target"].kind == "method")
            if kind == "qualified" and (d.kind == "method") != (methods < wanted // 2):
                continue
            made = make(kind, d)
            if made is None:
                continue
            used.add(d.id)
            picked += 1
            tests += test
            queries.append({"kind": kind, "sub": made[1], "query": made[0], "target": d,
                            "alias_ok": made[2]})
    return queries


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, len(values) * p // 100)] if values else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--xfile", default="target/release/xfile")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--test-share", type=float, default=0.25,
                        help="at most this share of each kind's targets from test code")
    parser.add_argument("--worst", type=int, default=10, help="misses to list")
    parser.add_argument("--json", help="write every query's outcome to this file")
    args = parser.parse_args()

    definitions, imports = collect(args.root)
    queries = build_queries(definitions, imports, args.queries, args.seed, args.test_share)
    print(f"{len(definitions)} definitions in {args.root}; {len(queries)} queries, seed {args.seed}")

    started = time.perf_counter()
    server = Server(args.xfile, args.root)
    # The first call waits for the index; it is timed apart.
    server.call("search_with_context", {"query": "__warmup__"})
    print(f"server ready (index + first search) in {time.perf_counter() - started:.1f} s")

    walls, inner = [], []
    for q in queries:
        start = time.perf_counter()
        text = server.call("search_with_context", {"query": q["query"]})
        q["wall_ms"] = (time.perf_counter() - start) * 1000
        walls.append(q["wall_ms"])
        try:
            answer = json.loads(text)
        except json.JSONDecodeError:
            answer = {"clusters": [], "error": text[:200]}
        if "searchTimeMs" in answer:
            inner.append(answer["searchTimeMs"])
            q["search_ms"] = answer["searchTimeMs"]
        seeds = [s for c in answer.get("clusters", []) for s in c.get("seeds", [])]
        target = q["target"]
        rank = None
        for position, s in enumerate(seeds, 1):
            symbol = s.get("symbol", "")
            qualname = symbol.split("::", 1)[1] if "::" in symbol else ""
            if symbol == target.id or (q["alias_ok"] and qualname == target.qualname):
                rank = position
                break
        q["rank"] = rank
        q["first"] = seeds[0] if seeds else None
        q["found"] = seeds[rank - 1] if rank else None
        q["seeds"] = len(seeds)
        q["total"] = answer.get("totalMatches")
        # The first seed is a namesake of the target: for a query that
        # gives only a name (exact, words, typo), an equally right answer.
        first_name = seeds[0]["symbol"].rsplit("::", 1)[-1].rsplit(".", 1)[-1] if seeds else None
        q["namesake_first"] = q["kind"] != "qualified" and first_name == target.name
    server.close()

    def rate(group, k):
        return 100.0 * sum(1 for q in group if q["rank"] and q["rank"] <= k) / max(1, len(group))

    def namesake(group):
        return 100.0 * sum(1 for q in group if q["rank"] == 1 or q["namesake_first"]) / max(1, len(group))

    def ms(group, p):
        return percentile([q["search_ms"] for q in group if "search_ms" in q], p)

    print("\ntop-1 and top-5: the intended definition (or one of the same qualified name);")
    print("namesake: top-1, or a definition of the same name first (another class's override);")
    print("searchTimeMs: the server's own time (in process)")
    print(f"\n{'kind':<24}{'n':>5}{'top-1':>9}{'top-5':>9}{'absent':>8}{'namesake':>10}"
          f"{'ms p50':>8}{'ms p95':>8}")
    rows = [("all", queries)]
    for kind in KINDS:
        group = [q for q in queries if q["kind"] == kind]
        rows.append((kind, group))
        subs = sorted({q["sub"] for q in group})
        if len(subs) > 1:
            rows += [(f"  {kind}/{sub}", [q for q in group if q["sub"] == sub]) for sub in subs]
    rows += [("test code", [q for q in queries if is_test(q["target"].path)]),
             ("other code", [q for q in queries if not is_test(q["target"].path)])]
    for label, group in rows:
        absent = sum(1 for q in group if q["rank"] is None)
        print(f"{label:<24}{len(group):>5}{rate(group, 1):>8.1f}%{rate(group, 5):>8.1f}%{absent:>8}"
              f"{namesake(group):>9.1f}%{ms(group, 50):>8.1f}{ms(group, 95):>8.1f}")

    misses = [q for q in queries if q["rank"] != 1]
    # Absent first, then by rank; a namesake first after a real miss.
    misses.sort(key=lambda q: (q["rank"] is not None, q["namesake_first"], -(q["rank"] or 0)))
    print(f"\n{len(misses)} queries where the intended definition is not first; the worst {min(args.worst, len(misses))}:")
    for q in misses[:args.worst]:
        first = q["first"]
        came = (f"{first['symbol']} ({first.get('match')}, usedBy {first.get('usedBy')})"
                if first else "nothing")
        found = q["found"]
        where = (f"rank {q['rank']} ({found.get('match')}, usedBy {found.get('usedBy')})"
                 if found else f"absent from {q['seeds']} seeds, {q['total']} matches")
        namesake_note = " (a namesake)" if q["namesake_first"] else ""
        print(f"  [{q['kind']}/{q['sub']}] {q['query']!r}\n"
              f"      intended {q['target'].id}: {where}\n"
              f"      first    {came}{namesake_note}")

    print(f"\nMCP search_with_context wall time per call (JSON-RPC over stdio included): "
          f"p50 {percentile(walls, 50):.1f} ms, p95 {percentile(walls, 95):.1f} ms, "
          f"max {max(walls):.1f} ms over {len(walls)} calls")
    if inner:
        print(f"server searchTimeMs (in process, before serializing): "
              f"p50 {percentile(inner, 50):.1f} ms, p95 {percentile(inner, 95):.1f} ms, "
              f"max {max(inner):.1f} ms")

    if args.json:
        with open(args.json, "w") as f:
            json.dump([{**{k: v for k, v in q.items() if k != "target"}, "target": q["target"].id}
                       for q in queries], f, indent=1)

    top1, top5 = rate(queries, 1), rate(queries, 5)
    ok = top1 >= 90 and top5 >= 98
    print(f"\ntop-1 {top1:.1f}% (target >= 90%), top-5 {top5:.1f}% (target >= 98%): "
          f"{'met' if ok else 'NOT met'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
