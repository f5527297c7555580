"""Tokens (cl100k_base) of every MCP tool's default answer on a project,
for several argument shapes and the largest files, and of tools/list.

    pip install bpe_openai
    python3 scripts/answer_sizes.py target/bench-data/django-5.2.8 --xfile target/release/xfile

Checks that each answer stays within the answer budget (the project's
answer_token_limit, 8000 unless configured) and that paging get_dependents
of the most depended-on file to its end yields exactly `xfile dependents
--json`.
Exits 1 if any answer is over the budget.
"""
import argparse, json, os, subprocess, sys

import bpe_openai

sys.path.insert(0, os.path.dirname(__file__))
from mcp_stdio import Server  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--xfile", default="target/release/xfile")
    parser.add_argument("--budget", type=int, default=8000)
    args = parser.parse_args()
    encoding = bpe_openai.get_encoding("cl100k_base")
    tokens = lambda text: len(encoding.encode(text))
    server = Server(args.xfile, args.root)

    listed = server.request("tools/list", {})["result"]
    wire = json.dumps(listed, separators=(",", ":"))
    print(f"tools/list: {tokens(wire)} tokens as sent (compact JSON), "
          f"{tokens(json.dumps(listed))} with spaces, {len(listed['tools'])} tools")

    files = []
    for dirpath, dirnames, names in os.walk(args.root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                files.append((os.path.getsize(path), os.path.relpath(path, args.root)))
    largest = [path for _, path in sorted(files, reverse=True)[:3]]
    # Django files known for large answers, when the tree is Django.
    for named in ("django/contrib/admin/options.py", "django/db/models/query.py"):
        if os.path.exists(os.path.join(args.root, named)):
            largest.append(named)
    summary = json.loads(server.call("get_relationship_graph", {}))
    hub = summary["most_connected_files"][0]["file"]

    calls = [("get_relationship_graph", {}),
             ("get_relationship_graph", {"path_prefix": os.path.dirname(hub) + "/"}),
             ("get_relationship_graph", {"detail": "relationships"}),
             ("get_relationship_graph", {"detail": "files"}),
             ("get_relationship_graph", {"detail": "warnings"}),
             ("get_relationship_graph", {"detail": "cycles"}),
             ("get_warnings", {}),
             ("get_warnings", {"format": "json"}),
             ("get_dependents", {"file_path": hub}),
             ("get_dependents", {"file_path": hub, "format": "json"}),
             ("query_relation", {"pattern": "DependsOn(_, _)"}),
             ("explain", {"fact": f'DependsOn(_, "{hub}")'}),
             ("search_with_context", {"query": "Model"}),
             ("search_with_context", {"query": "save", "expandRelationships": {"all": True}}),
             ("get_callers", {"symbol": "django/db/models/base.py::Model.save", "depth": 3}),
             ("get_file_outline", {"file_path": "django/db/models/query.py"}),
             ("get_symbol", {"name": "django/db/models/query.py::QuerySet"})]
    for path in largest:
        calls += [("read_with_context", {"file_path": path}),
                  ("get_dependencies", {"file_path": path}),
                  ("get_dependencies", {"file_path": path, "format": "json"}),
                  ("get_warnings", {"file_path": path})]
    over = 0
    for tool, arguments in calls:
        answer = server.call(tool, arguments)
        n = tokens(answer)
        over += n > args.budget
        flag = "  OVER" if n > args.budget else ""
        print(f"{n:>7}  {tool} {json.dumps(arguments)}{flag}")

    # Paging to the end yields exactly the unpaged list.
    items, cursor = [], None
    while True:
        arguments = {"file_path": hub, "format": "json", "limit": 1000}
        if cursor:
            arguments["cursor"] = cursor
        page = json.loads(server.call("get_dependents", arguments))
        items += page["items"]
        cursor = page.get("next_cursor")
        if not cursor:
            break
    whole = json.loads(subprocess.run(
        [args.xfile, "dependents", hub, "--json", "--root", args.root],
        capture_output=True, text=True, check=True).stdout)
    same = items == whole
    print(f"get_dependents {hub}: {len(items)} items over pages; "
          f"{'equal to' if same else 'DIFFERENT from'} the unpaged list ({len(whole)})")
    server.close()
    sys.exit(1 if over or not same else 0)


if __name__ == "__main__":
    main()
