"""Driving `xfile hook` from the scripts, as an agent's hook runner does:
the documented JSON of a Read or an edit, one call (process start to
answer, timed), and the services of a private runtime directory stopped."""
import json, os, signal, subprocess, time


def read_payload(path, offset=None, limit=None, session=None, cwd=None):
    """A Read of PATH (LIMIT lines from OFFSET, or whole). Without SESSION
    nothing given before is left out. CWD is the agent's working directory
    (the hook serves the project there when PATH is in it); PATH's
    directory when not given."""
    tool_input = {"file_path": path}
    if offset is not None:
        tool_input["offset"] = offset
        tool_input["limit"] = limit
    return payload("Read", path, tool_input, {"type": "text"}, session, cwd)


def edit_payload(path, old, new, session=None):
    """An Edit of PATH replacing OLD by NEW (the file on disk is what the
    hook reads; the strings are what Claude Code sends)."""
    tool_input = {"file_path": path, "old_string": old, "new_string": new}
    return payload("Edit", path, tool_input, {"filePath": path}, session)


def payload(tool, path, tool_input, tool_response, session, cwd=None):
    call = {
        "cwd": cwd or os.path.dirname(path),
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": tool_response,
    }
    if session is not None:
        call["session_id"] = session
    return json.dumps(call)


def call(xfile, env, payload):
    """(milliseconds, additionalContext or "") of one hook call; raises
    RuntimeError if the hook exits other than 0, which it never should."""
    start = time.perf_counter()
    done = subprocess.run([xfile, "hook"], input=payload.encode(), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ms = (time.perf_counter() - start) * 1e3
    if done.returncode != 0:
        raise RuntimeError(f"the hook exited {done.returncode}: {done.stderr[-500:]!r}")
    if not done.stdout.strip():
        return ms, ""
    return ms, json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def runs_here(pid, runtime):
    """Whether PID runs (a zombie does not) with RUNTIME as its runtime
    directory: a pid file's number may name another process by now."""
    try:
        environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z" and f"XFILE_RUNTIME_DIR={runtime}".encode() in environ


def service_pids(runtime):
    """The pids of RUNTIME's running services."""
    pids = []
    for name in os.listdir(runtime):
        if name.endswith(".pid"):
            try:
                pid = int(open(os.path.join(runtime, name)).read().strip())
            except (OSError, ValueError):
                continue
            if runs_here(pid, runtime):
                pids.append(pid)
    return pids


def settle(runtime, quiet=1.0, patience=120):
    """Waits until RUNTIME's services have used no CPU for QUIET seconds
    (their first index's background work done: hot spots, the warm-start
    cache), at most PATIENCE seconds; returns the seconds waited."""
    def cpu():
        total = 0
        for pid in service_pids(runtime):
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total
    started = time.time()
    last = cpu()
    while time.time() - started < patience:
        time.sleep(quiet)
        now = cpu()
        if now == last:
            break
        last = now
    return time.time() - started


def stop_services(runtime):
    """Stops the services of RUNTIME (TERM, then KILL), waiting until they
    are gone; returns the pids that outlived both."""
    pids = service_pids(runtime)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.time() + 5
        while any(runs_here(p, runtime) for p in pids) and time.time() < deadline:
            time.sleep(0.05)
        pids = [p for p in pids if runs_here(p, runtime)]
        if not pids:
            return []
    return pids
