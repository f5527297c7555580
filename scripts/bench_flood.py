#!/usr/bin/env python3
"""A flood of pipelined heavy requests: peak memory of
`xfile serve` while N `get_relationship_graph` calls (the summary, which
walks every relationship) are written at once, and the time until every
reply is read. Also cancels half of a second flood and reports how many
replies still came.

    scripts/bench_flood.py XFILE ROOT [N] [DETAIL]

Prints one JSON line: baseline RSS after the first answer, peak RSS
(VmHWM), seconds for the flood, replies received."""
import json, os, sys, threading, time

sys.path.insert(0, os.path.dirname(__file__))
from mcp_stdio import Server


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) // 1024  # MB
    return 0


def main():
    xfile, root = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    detail = sys.argv[4] if len(sys.argv) > 4 else "summary"
    server = Server(xfile, root)
    pid = server.proc.pid
    args = {"detail": detail}
    server.call("get_relationship_graph", args)  # waits for the index
    baseline = status(pid, "VmRSS")
    first_id = server.next_id + 1
    lines = []
    for i in range(n):
        server.next_id += 1
        lines.append(json.dumps({"jsonrpc": "2.0", "id": server.next_id, "method": "tools/call",
                                 "params": {"name": "get_relationship_graph", "arguments": args}}))
    start = time.time()
    writer = threading.Thread(target=lambda: (server.proc.stdin.write("\n".join(lines) + "\n"),
                                              server.proc.stdin.flush()))
    writer.start()
    wanted = set(range(first_id, server.next_id + 1))
    while wanted:
        message = json.loads(server.proc.stdout.readline())
        wanted.discard(message.get("id"))
    elapsed = time.time() - start
    writer.join()
    peak = status(pid, "VmHWM")
    # A second flood, half of it cancelled at once: its replies are not sent.
    ids = []
    for i in range(n):
        server.next_id += 1
        ids.append(server.next_id)
        server.send({"jsonrpc": "2.0", "id": server.next_id, "method": "tools/call",
                     "params": {"name": "get_relationship_graph", "arguments": args}})
    for request_id in ids[n // 2:]:
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": request_id, "reason": "bench"}})
    start = time.time()
    pending = set(ids[: n // 2])
    seen = 0
    while pending:
        message = json.loads(server.proc.stdout.readline())
        pending.discard(message.get("id"))
        seen += 1
    cancelled_elapsed = time.time() - start
    server.close()
    print(json.dumps({"requests": n, "detail": detail, "baseline_rss_mb": baseline, "peak_rss_mb": peak,
                      "flood_s": round(elapsed, 2), "half_cancelled_flood_s": round(cancelled_elapsed, 2),
                      "replies_in_half_cancelled_flood": seen}))


main()
