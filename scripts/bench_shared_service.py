#!/usr/bin/env python3
"""Sessions sharing one service against one standalone server: memory and
the first answer of a later session.

    scripts/bench_shared_service.py ROOT [--sessions 3] [--rounds 5] [--file PATH] [--xfile PATH]

First `xfile index` writes the warm-start cache, so that every server
below starts from it, as servers usually do. Then, ROUNDS times:
1. Standalone: one `xfile serve --standalone` session asks `get_dependents`
   of FILE, then its resident memory (VmRSS) is read once it has settled
   (the first index and the work done ahead are over).
2. Shared: in a fresh private runtime directory, SESSIONS `xfile serve`
   sessions on the same root, one after the other, each asking the same
   `get_dependents`; the time of each session's first answer (request
   written to reply read, the handshake excluded) is printed. Once memory
   has settled, the VmRSS of every xfile process (the relays and the
   service) is summed; then one more session joins the settled service
   and its first and second get_dependents are timed.

Prints one JSON object per round (standalone RSS, shared RSS per process
and in total, their ratio, each session's first get_dependents in ms),
then the medians over the rounds. RSS counts the pages of the binary the
processes share once per process; PSS, which shares them out, is given
beside it."""
import argparse, json, os, shutil, signal, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_stdio import Server  # noqa: E402


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def pss_mb(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    return 0.0


def settled(pids, quiet=3.0, cap=120.0):
    """The VmRSS of each pid once their sum has moved less than 1 MB for
    `quiet` seconds (or after `cap` seconds)."""
    start = time.monotonic()
    last, since = None, time.monotonic()
    while True:
        now = [rss_mb(p) for p in pids]
        total = sum(now)
        if last is None or abs(total - last) >= 1.0:
            last, since = total, time.monotonic()
        elif time.monotonic() - since >= quiet or time.monotonic() - start >= cap:
            return now
        time.sleep(0.5)


def first_answer_ms(server, path):
    start = time.perf_counter()
    text = server.call("get_dependents", {"file_path": path})
    elapsed = (time.perf_counter() - start) * 1e3
    if not text:
        sys.exit(f"get_dependents {path} gave no answer: {text[:200]}")
    return elapsed


def one_round(args, root):
    alone = Server(args.xfile, root)
    alone_ms = first_answer_ms(alone, args.file)
    [alone_rss] = settled([alone.proc.pid])
    alone_pss = pss_mb(alone.proc.pid)
    alone.close()
    alone.proc.wait()

    runtime = tempfile.mkdtemp(prefix="xfile-bench-")
    os.chmod(runtime, 0o700)
    env = dict(os.environ, XFILE_RUNTIME_DIR=runtime, XFILE_SERVICE_IDLE_SECONDS="60")
    sessions, firsts = [], []
    try:
        for _ in range(args.sessions):
            server = Server(args.xfile, root, shared=True, env=env)
            sessions.append(server)
            firsts.append(first_answer_ms(server, args.file))
        pid_files = [f for f in os.listdir(runtime) if f.endswith(".pid")]
        if len(pid_files) != 1:
            sys.exit(f"expected one service, found pid files {pid_files}")
        with open(os.path.join(runtime, pid_files[0])) as f:
            service = int(f.read().strip())
        pids = [service, *(s.proc.pid for s in sessions)]
        measured = settled(pids)
        pss = [pss_mb(p) for p in pids]
        # One more session, once the service has settled: a subagent that
        # starts while the main session works.
        joining = Server(args.xfile, root, shared=True, env=env)
        sessions.append(joining)
        joined = first_answer_ms(joining, args.file)
        again = first_answer_ms(joining, args.file)
    finally:
        for server in sessions:
            server.close()
            server.proc.wait()
        for name in os.listdir(runtime):
            if name.endswith(".pid"):
                with open(os.path.join(runtime, name)) as f:
                    try:
                        pid = int(f.read().strip())
                        os.kill(pid, signal.SIGTERM)
                    except (ProcessLookupError, ValueError):
                        continue
                deadline = time.monotonic() + 10
                while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
                    time.sleep(0.1)
        shutil.rmtree(runtime, ignore_errors=True)
    total = sum(measured)
    return {
        "standalone_rss_mb": round(alone_rss, 1),
        "standalone_pss_mb": round(alone_pss, 1),
        "standalone_first_get_dependents_ms": round(alone_ms, 1),
        "shared_service_rss_mb": round(measured[0], 1),
        "shared_relay_rss_mb": [round(r, 1) for r in measured[1:]],
        "shared_total_rss_mb": round(total, 1),
        "shared_total_pss_mb": round(sum(pss), 1),
        "shared_over_standalone_rss": round(total / alone_rss, 3),
        "shared_over_standalone_pss": round(sum(pss) / alone_pss, 3),
        "sessions_first_get_dependents_ms": [round(ms, 1) for ms in firsts],
        "settled_session_first_get_dependents_ms": round(joined, 1),
        "settled_session_second_get_dependents_ms": round(again, 1),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--file", default="django/db/models/base.py")
    parser.add_argument("--xfile", default="target/release/xfile")
    args = parser.parse_args()
    root = os.path.realpath(args.root)
    subprocess.run([args.xfile, "index", "--root", root], check=True, stdout=subprocess.DEVNULL)
    rounds = []
    for _ in range(args.rounds):
        rounds.append(one_round(args, root))
        print(json.dumps(rounds[-1]), flush=True)
    median = lambda key: round(statistics.median(r[key] for r in rounds), 3)  # noqa: E731
    later = [ms for r in rounds for ms in r["sessions_first_get_dependents_ms"][1:]]
    print(json.dumps({
        "root": root,
        "file": args.file,
        "rounds": args.rounds,
        "median": {key: median(key) for key in [
            "standalone_rss_mb", "standalone_pss_mb", "shared_service_rss_mb",
            "shared_total_rss_mb", "shared_total_pss_mb",
            "shared_over_standalone_rss", "shared_over_standalone_pss"]},
        "later_sessions_first_get_dependents_ms": {
            "median": round(statistics.median(later), 1),
            "max": round(max(later), 1),
        },
        "settled_session_first_get_dependents_ms": median(
            "settled_session_first_get_dependents_ms"),
        "settled_session_second_get_dependents_ms": median(
            "settled_session_second_get_dependents_ms"),
    }, indent=2))


if __name__ == "__main__":
    main()
