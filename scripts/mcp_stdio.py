"""A minimal MCP client over stdio for the benchmark scripts: spawns
`xfile serve --root ROOT`, initializes, and sends requests one at a time.

The server runs standalone (in the spawned process) unless `shared=True`:
the benchmarks measure one process, its start and its memory, and a
shared service left running by an earlier run would answer in its place."""
import json, os, subprocess


class Server:
    def __init__(self, xfile, root, shared=False, env=None):
        # XFILE_BENCH_LOG=FILE keeps the server's log (with XFILE_LOG=debug,
        # the timings of each update and read) for a look at where time goes.
        log = os.environ.get("XFILE_BENCH_LOG")
        self.log = open(log, "w") if log else subprocess.DEVNULL
        mode = [] if shared else ["--standalone"]
        self.proc = subprocess.Popen([xfile, "serve", *mode, "--root", root], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1,
                                     env=env)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        """Sends a request and returns the response with its id."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.next_id:
                return message

    def call(self, tool, arguments):
        """Calls a tool and returns the text of its answer."""
        reply = self.request("tools/call", {"name": tool, "arguments": arguments})
        return "".join(c.get("text", "") for c in reply.get("result", {}).get("content", []))

    def close(self):
        self.proc.terminate()
