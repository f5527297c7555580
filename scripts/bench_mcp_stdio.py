#!/usr/bin/env python3
"""End-to-end MCP latency over stdio: spawns `xfile serve`, waits for the
first index, then times N `read_with_context` calls (request written to
response read). Usage: scripts/bench_mcp_stdio.py ROOT FILE [N] [--xfile PATH]"""
import argparse, json, statistics, subprocess, time

parser = argparse.ArgumentParser()
parser.add_argument("root")
parser.add_argument("file")
parser.add_argument("n", nargs="?", type=int, default=200)
parser.add_argument("--xfile", default="target/release/xfile")
args = parser.parse_args()

proc = subprocess.Popen([args.xfile, "serve", "--root", args.root], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
next_id = 0

def request(method, params):
    global next_id
    next_id += 1
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}) + "\n")
    proc.stdin.flush()
    while True:
        message = json.loads(proc.stdout.readline())
        if message.get("id") == next_id:
            return message

request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}})
proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
call = {"name": "read_with_context", "arguments": {"file_path": args.file}}
start = time.perf_counter()
request("tools/call", call)  # waits for the first index
print(f"first call (includes the initial index): {(time.perf_counter() - start) * 1e3:.0f} ms")
times = []
for _ in range(args.n):
    start = time.perf_counter()
    request("tools/call", call)
    times.append(time.perf_counter() - start)
times.sort()
print(f"read_with_context over stdio: p50 {statistics.median(times)*1e3:.2f} ms, "
      f"p95 {times[int(len(times)*0.95)]*1e3:.2f} ms ({args.n} calls)")
proc.terminate()
