"""Where a served project's memory goes (issue 43): the steady resident memory
of `xfile serve --standalone` after its first index and a few questions, and,
under heaptrack, the heap still live at that point broken down by structure.

Usage:
  python3 scripts/memory_breakdown.py TREE [--xfile BIN] [--cold] [--quiet S | --timeline S]
  python3 scripts/memory_breakdown.py TREE --heaptrack OUT --xfile BIN_SYS
  python3 scripts/memory_breakdown.py --attribute OUT.zst

TREE is copied by the caller (the server writes `.xfile_cache/` and logs into
it). `--cold` removes `.xfile_cache/` first, so the server indexes from
scratch; without it a second run starts from the warm-start cache the first
one wrote. The server is initialized, asked `get_dependents` of
django/db/models/base.py (or `--file`) and `read_with_context` of the same
file; then VmRSS is sampled every 0.5 s until it has moved less than 1 MB for
`--quiet` seconds (default 10). Prints one JSON object. `--timeline S`
instead samples VmRSS every 0.1 s until S seconds after the server was
spawned and lists one sample a second ("timeline"), "steady" being the
last.

`--heaptrack OUT` runs the server under heaptrack's preload library in raw
mode (OUT.raw.zst; BIN must be a `--features system-alloc` build, so that the
system allocator, which heaptrack hooks, serves every allocation) and, once
settled, kills it with SIGKILL: no destructor runs, so what the trace leaves
live is the heap at the steady state. heaptrack_interpret 1.4.0 is not used:
on this program it grows to 19 GB and dies of std::bad_alloc a few seconds
in (after parsing), which is why earlier sessions saw heaptrack "lose track".
The raw trace is read here instead (`--attribute OUT.raw.zst --xfile BIN`
alone redoes this part): live bytes by call stack, symbolized with `nm`, each
stack given to a structure by its frames (FRAMES, then the innermost salsa
query, QUERIES, innermost frame first); `--top N` also prints the N largest
deciding frames of each structure.

Example (for four copies, the tree scripts/bench_growth.sh makes):
  cp -r target/bench-data/django-5.2.8 /tmp/mem-django
  python3 scripts/memory_breakdown.py /tmp/mem-django --cold
  cargo build --release --features system-alloc && cp target/release/xfile /tmp/xfile-sys
  python3 scripts/memory_breakdown.py /tmp/mem-django --cold --heaptrack /tmp/ht --xfile /tmp/xfile-sys --top 8
"""
import argparse, bisect, collections, io, json, os, re, shutil, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_stdio import Server  # noqa: E402

# Structures by the salsa query whose execution allocated the bytes (the
# memo's value, and whatever the query left behind), the innermost such
# query deciding; the query names are the functions of xfile-engine's db/.
QUERIES = [
    ("facts: ModuleFacts (parse + extract, xfile-python)", r"^module_facts$"),
    ("facts: engine base facts", r"base_facts"),
    ("class tables and context (MRO, members)", r"class"),
    ("resolution (imports, names)", r"resol|import|module|context|name"),
    ("Datalog stage outputs (relations, indexes)", r"stage|union|report|warning|project|semantic|share|count"),
]
# Allocations made by salsa itself (innermost xfile-free frames in salsa::):
# memo slots, dependency edges (QueryRevisions), interned and tracked
# structs, tables.
SALSA = re.compile(r"^salsa::")
# Structures by a frame's name, innermost frame first, before the query:
# (structure, pattern).
FRAMES = [
    ("source text", r"read_project_file|read_bounded|read_to_string|::text::|source_text"),
    ("interned strings", r"::intern::"),
    ("facts: ModuleFacts (parse + extract, xfile-python)", r"^<?xfile_python::"),
    ("Datalog stage outputs (relations, indexes)", r"xfile_engine::datalog::"),
    ("class tables and context (MRO, members)", r"xfile_engine::classes::"),
    ("search index and hot spots", r"xfile_service::search::"),
    ("caches and answers (snippets, warm cache, rendered answers)", r"::cache::|::warm::|::render|::answers?::|git_cache"),
    ("warnings, links, external refs (service)", r"xfile_service::(warnings|links|external|relationships|graph)"),
    ("token counter (tiktoken tables)", r"tiktoken"),
    ("runtime (tokio, rmcp, tracing, regex)", r"^(tokio|rmcp|tracing|regex|hyper|axum|serde_json|schemars)"),
]
# Frames that never name a structure: allocator, std, containers.
SKIP = re.compile(r"^(alloc::|<alloc::|core::|<core::|hashbrown::|<hashbrown::|std::|<std::|_R|"
                  r"rayon|<rayon|smallvec|<smallvec|compact_str|<compact_str|rustc_hash|indexmap|<indexmap|"
                  r"__rust|__rdl|__rg|rust_begin)")
CODES = {"$LT$": "<", "$GT$": ">", "$u20$": " ", "$C$": ",", "$RF$": "&", "$BP$": "*",
         "$u7b$": "{", "$u7d$": "}", "$LP$": "(", "$RP$": ")", "$u27$": "'", "$u5b$": "[",
         "$u5d$": "]", "$u3b$": ";", "$u7e$": "~", "$SP$": "@"}


def demangle(sym):
    """Rust's legacy mangling (`_ZN...17h<hash>E`), without the hash."""
    if not sym.startswith("_ZN"):
        return sym
    i, parts = 3, []
    while i < len(sym) and sym[i].isdigit():
        j = i
        while sym[j].isdigit():
            j += 1
        n = int(sym[i:j])
        parts.append(sym[j:j + n])
        i = j + n
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    out = []
    for part in parts:
        if part.startswith("_$"):
            part = part[1:]
        part = re.sub(r"\$[A-Za-z0-9]+\$", lambda m: CODES.get(m.group(0), m.group(0)), part)
        out.append(part.replace("..", "::"))
    return "::".join(out)


class Symbols:
    def __init__(self, binary):
        out = subprocess.run(["nm", "-n", "--defined-only", binary], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        self.addrs, self.names = [], []
        for line in out.splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[1] in "tTwW":
                self.addrs.append(int(parts[0], 16))
                self.names.append(parts[2])
        self.cache = {}

    def name(self, offset):
        if offset not in self.cache:
            i = bisect.bisect_right(self.addrs, offset) - 1
            self.cache[offset] = demangle(self.names[i]) if i >= 0 else "??"
        return self.cache[offset]


def rss(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = round(int(line.split()[1]) / 1024, 1)
    return out


def settled(pid, quiet, cap=600.0):
    start = time.monotonic()
    last, since = None, time.monotonic()
    while True:
        now = rss(pid)["VmRSS"]
        if last is None or abs(now - last) >= 1.0:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet or time.monotonic() - start >= cap:
            return round(time.monotonic() - start, 1)
        time.sleep(0.5)


def serve(args):
    if args.cold:
        shutil.rmtree(os.path.join(args.tree, ".xfile_cache"), ignore_errors=True)
    binary = os.path.abspath(args.xfile)
    wrapper = binary
    if args.heaptrack:
        # What the heaptrack script does, but with the server's stdout left
        # alone (the script prints to stdout, where MCP talks) and the server
        # exec'ed so that its pid is the one spawned.
        lib = "/usr/lib/heaptrack"
        wrapper, fifo = args.heaptrack + ".sh", args.heaptrack + ".fifo"
        with open(wrapper, "w") as f:
            f.write(f"""#!/bin/sh
rm -f "{fifo}"; mkfifo "{fifo}"
zstd -q -c < "{fifo}" > "{args.heaptrack}.raw.zst" &
echo $! > "{args.heaptrack}.pid"
LD_PRELOAD={lib}/libheaptrack_preload.so DUMP_HEAPTRACK_OUTPUT="{fifo}" exec "{binary}" "$@"
""")
        os.chmod(wrapper, 0o755)
    spawned = time.monotonic()
    server = Server(wrapper, args.tree)
    pid = server.proc.pid
    result = {"tree": args.tree, "binary": binary, "cold": args.cold,
              "heaptrack": bool(args.heaptrack), "after_initialize": rss(pid)}
    t = time.perf_counter()
    deps = server.call("get_dependents", {"file_path": args.file})
    result["get_dependents_ms"] = round((time.perf_counter() - t) * 1e3, 1)
    result["get_dependents_chars"] = len(deps)
    t = time.perf_counter()
    read = server.call("read_with_context", {"file_path": args.file})
    result["read_with_context_ms"] = round((time.perf_counter() - t) * 1e3, 1)
    result["read_with_context_chars"] = len(read)
    result["after_questions"] = rss(pid)
    if args.timeline:
        # A plateau can end late: what a thread frees is given back when it
        # exits (tokio's blocking threads after 10 s idle).
        timeline = []
        while time.monotonic() - spawned < args.timeline:
            timeline.append((round(time.monotonic() - spawned, 1), rss(pid)["VmRSS"]))
            time.sleep(0.1)
        result["timeline"] = timeline[::10]
    else:
        result["settled_after_s"] = settled(pid, args.quiet)
    result["steady"] = rss(pid)
    if args.heaptrack:
        os.kill(pid, signal.SIGKILL)
        server.proc.wait()
        # The interpreter and compressor finish once the fifo is closed.
        compressor = open(args.heaptrack + ".pid").read().strip()
        while os.path.exists(f"/proc/{compressor}"):
            time.sleep(0.5)
        os.remove(args.heaptrack + ".fifo")
    else:
        server.proc.stdin.close()
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.close()
    print(json.dumps(result, indent=1))
    if args.heaptrack:
        attribute(args.heaptrack + ".raw.zst", binary, args.top)


def read_raw(data):
    """Live allocations at the end of heaptrack's raw trace: bytes by trace
    index, the traces (ip, parent), the executable's base address."""
    live, traces, base = {}, [None], None
    zstd = subprocess.Popen(["zstd", "-dc", data], stdout=subprocess.PIPE)
    for line in io.TextIOWrapper(zstd.stdout, errors="replace"):
        kind = line[:1]
        if kind == "+":
            _, size, trace, ptr = line.split()
            live[ptr] = (int(size, 16), int(trace, 16))
        elif kind == "-":
            live.pop(line[2:-1], None)
        elif kind == "t":
            _, ip, parent = line.split()
            traces.append((int(ip, 16), int(parent, 16)))
        elif kind == "m":
            parts = line.split()
            if len(parts) > 3 and parts[2] == "x":
                base = int(parts[3], 16)
    zstd.wait()
    by_trace = collections.Counter()
    for size, trace in live.values():
        by_trace[trace] += size
    return by_trace, traces, base, len(live)


def classify(frames):
    """A structure and a key (the frames that decided) for a stack of
    demangled frames, innermost first."""
    named = [f for f in frames if f and not SKIP.match(f)]
    for i, frame in enumerate(named):
        if SALSA.match(frame):
            # salsa's own allocation when salsa is the innermost named
            # frame; above xfile frames, the generic execute machinery.
            if i == 0:
                return "salsa bookkeeping (memo slots, dependency edges, tables)", frame
            continue
        for name, pattern in FRAMES:
            if re.search(pattern, frame):
                return name, frame
        m = re.search(r"::_::(\w+?)_Configuration_? as salsa::function::Configuration>::execute", frame)
        if m:
            query = m.group(1)
            for name, pattern in QUERIES:
                if re.search(pattern, query):
                    return name, "query " + query
            return "other query memos", "query " + query
        if frame.startswith(("xfile", "<xfile")):
            continue
    return "other", named[0] if named else "??"


def attribute(data, binary, top):
    by_trace, traces, base, count = read_raw(data)
    symbols = Symbols(binary)
    exe_end = base + symbols.addrs[-1] + (1 << 20) if base is not None else 0
    totals, keys = collections.Counter(), collections.defaultdict(collections.Counter)
    queries = collections.Counter()
    for trace, size in by_trace.items():
        frames, t = [], trace
        while 0 < t < len(traces) and len(frames) < 400:
            ip, t = traces[t]
            frames.append(symbols.name(ip - 1 - base) if base is not None and base <= ip < exe_end else None)
        name, key = classify(frames)
        totals[name] += size
        keys[name][key] += size
        query = next((m.group(1) for f in frames if f for m in
                      [re.search(r"::_::(\w+?)_Configuration_? as salsa", f)] if m), "(no query)")
        queries[query] += size
    whole = sum(totals.values())
    print(f"\nlive heap at the end of the trace: {whole / 2**20:.1f} MB in {count:,} allocations")
    print("| structure | MB live | share |\n|---|---|---|")
    for name, cost in totals.most_common():
        print(f"| {name} | {cost / 2**20:.1f} | {100 * cost / whole:.1f} % |")
    print("\nby the innermost salsa query on the stack:")
    for query, cost in queries.most_common(25):
        print(f"  {cost / 2**20:7.2f} MB  {query}")
    if top:
        for name, _ in totals.most_common():
            print(f"\n{name}:")
            for key, cost in keys[name].most_common(top):
                print(f"  {cost / 2**20:7.2f} MB  {key[:200]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree", nargs="?")
    ap.add_argument("--xfile", default="target/release/xfile")
    ap.add_argument("--file", default="django/db/models/base.py")
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--quiet", type=float, default=10.0)
    ap.add_argument("--timeline", type=float, default=0.0)
    ap.add_argument("--heaptrack", metavar="OUT")
    ap.add_argument("--attribute", metavar="DATA")
    ap.add_argument("--top", type=int, default=0)
    args = ap.parse_args()
    if args.attribute:
        attribute(args.attribute, os.path.abspath(args.xfile), args.top)
    elif args.tree:
        serve(args)
    else:
        ap.error("TREE or --attribute DATA")


if __name__ == "__main__":
    main()
