#!/usr/bin/env python3
"""End-to-end MCP latency over stdio: spawns `xfile serve`, waits for the
first index, then times N `read_with_context` calls (request written to
response read). Usage: scripts/bench_mcp_stdio.py ROOT FILE [N] [--xfile PATH]"""
import argparse, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_stdio import Server  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("root")
parser.add_argument("file")
parser.add_argument("n", nargs="?", type=int, default=200)
parser.add_argument("--xfile", default="target/release/xfile")
args = parser.parse_args()

server = Server(args.xfile, args.root)
call = ("read_with_context", {"file_path": args.file})
start = time.perf_counter()
server.call(*call)  # waits for the first index
print(f"first call (includes the initial index): {(time.perf_counter() - start) * 1e3:.0f} ms")
times = []
for _ in range(args.n):
    start = time.perf_counter()
    server.call(*call)
    times.append(time.perf_counter() - start)
times.sort()
print(f"read_with_context over stdio: p50 {statistics.median(times)*1e3:.2f} ms, "
      f"p95 {times[int(len(times)*0.95)]*1e3:.2f} ms ({args.n} calls)")
server.close()
