#!/usr/bin/env python3
"""The HTTP side's latency: starts `xfile dashboard` on ROOT (loopback, a
free port), waits for the first index, then times N GETs of /metrics and
of each dashboard endpoint (request sent to body read, one connection
each, as a scraper or the page makes them), and with --browser the time
the page takes in headless Chromium to draw the overview.
Usage: scripts/bench_http.py ROOT [N] [--xfile PATH] [--browser]"""
import argparse, re, subprocess, sys, time, urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("root")
parser.add_argument("n", nargs="?", type=int, default=200)
parser.add_argument("--xfile", default="target/release/xfile")
parser.add_argument("--browser", action="store_true")
args = parser.parse_args()

server = subprocess.Popen([args.xfile, "dashboard", "--root", args.root, "--http", "127.0.0.1:0"],
                          stderr=subprocess.PIPE, text=True)
addr = None
for line in server.stderr:
    m = re.search(r"dashboard at http://([^/]+)/", line)
    if m:
        addr = m.group(1)
        break
if addr is None:
    sys.exit("no address on stderr")


def get(path):
    with urllib.request.urlopen(f"http://{addr}{path}") as r:
        return r.status, r.read()


start = time.perf_counter()
while True:
    try:
        if get("/api/overview")[0] == 200:
            break
    except Exception:
        pass
    time.sleep(0.05)
print(f"first index: {(time.perf_counter() - start):.1f} s")


def pct(times, p):
    return times[min(len(times) - 1, int(len(times) * p / 100))] * 1e3


for path, n in [("/metrics", args.n), ("/health", args.n), ("/api/overview", args.n // 4),
                ("/api/graph", args.n // 20), ("/api/warnings", args.n // 20)]:
    get(path)  # first answer after an index may compute and memoize
    times = []
    for _ in range(n):
        t = time.perf_counter()
        get(path)
        times.append(time.perf_counter() - t)
    times.sort()
    print(f"{path:<16} p50 {pct(times, 50):7.2f} ms  p99 {pct(times, 99):7.2f} ms  "
          f"max {times[-1]*1e3:7.2f} ms  ({n} requests)")

if args.browser:
    # The page stamps the time from navigation start to the overview drawn.
    out = subprocess.run(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                          "--virtual-time-budget=3000", "--dump-dom", f"http://{addr}/"],
                         capture_output=True, text=True).stdout
    m = re.search(r'data-rendered-ms="([0-9.]+)"', out)
    print(f"overview drawn {m.group(1) if m else '?'} ms after navigation start (headless Chromium)")
server.terminate()
server.wait()
