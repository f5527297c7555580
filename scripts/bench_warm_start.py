"""Warm-start cache benchmark, all figures from one session,
runs interleaved: `xfile deps FILE` cold (no cache: the run indexes and
writes it), cold with --no-cache (neither reads nor writes), and warm (the
cache is there, its answers current and the tree unchanged); then the
first `xfile serve` answer (get_dependencies FILE) from spawning the
server, cold and warm.

usage: python3 scripts/bench_warm_start.py XFILE ROOT FILE [RUNS]"""
import json, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(__file__))
from mcp_stdio import Server  # noqa: E402


def timed(args):
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def first_answer(xfile, root, file):
    start = time.perf_counter()
    server = Server(xfile, root)
    text = server.call("get_dependencies", {"file_path": file})
    elapsed = (time.perf_counter() - start) * 1000
    server.close()
    server.proc.wait()
    assert "import" in text, text[:200]
    return elapsed


def answers_current(xfile, root):
    out = subprocess.run([xfile, "cache", "info", "--json", "--root", root],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["answers"]["current"]


def warm_up(xfile, root, file):
    """Runs `deps` until the cache's answers hold for the tree: the first
    write after the cache directory was created (it changes the root) is
    not trusted, nor one within the clock margin of a change."""
    for _ in range(4):
        if answers_current(xfile, root):
            return
        time.sleep(0.3)
        subprocess.run([xfile, "deps", "--root", root, file], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    raise SystemExit("the cache's answers never became current")


def main():
    xfile, root, file = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    clean = [xfile, "cache", "clean", "--root", root]
    deps = [xfile, "deps", "--root", root, file]
    times = {k: [] for k in ["cold", "cold_no_cache", "warm", "serve_cold", "serve_warm"]}
    for _ in range(runs):
        timed(clean)
        times["cold_no_cache"].append(timed(deps[:1] + ["--no-cache"] + deps[1:]))
        times["cold"].append(timed(deps))
        warm_up(xfile, root, file)
        times["warm"].append(timed(deps))
        timed(clean)
        times["serve_cold"].append(first_answer(xfile, root, file))
        # The cold server was stopped right after its answer, perhaps before
        # its cache was on disk: `index` waits for the write.
        timed([xfile, "index", "--root", root])
        warm_up(xfile, root, file)
        times["serve_warm"].append(first_answer(xfile, root, file))
    sizes = {name: os.path.getsize(os.path.join(root, ".xfile_cache", name))
             for name in ["index.bin", "answers.bin"]}
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:14} median {med[k]:7.1f} ms  min {min(v):7.1f}  max {max(v):7.1f}")
    print(f"deps warm / cold            {med['warm'] / med['cold']:.3f}")
    print(f"deps warm / cold --no-cache {med['warm'] / med['cold_no_cache']:.3f}")
    print(f"serve first answer warm / cold {med['serve_warm'] / med['serve_cold']:.3f}")
    for name, size in sizes.items():
        print(f"{name} {size / 1e6:.1f} MB ({size} bytes)")


main()
