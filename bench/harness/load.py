"""Drives a server benchmark: starts one implementation's server on a free loopback port, puts load
on it with wrk, and prints the benchmark protocol's RESULT lines (bench/README.md) for it, so the
harness treats it like any other program.

    python3 bench/harness/load.py --workload http_hello --impl grove -- SERVER [ARGS...]

The server is started as `SERVER ARGS... --port P --threads T` and must print a line starting with
"listening" once it accepts (or simply accept: the port is polled). Load: wrk with --wrk-threads
threads and --connections keep-alive connections for --seconds, after a --warmup second run; then
the server's resident set is read from /proc and it is stopped (SIGTERM, then SIGKILL). Metrics:
requests_per_second, latency_p50_ms, latency_p99_ms (wrk --latency) and server_rss_mib.
Everything is on 127.0.0.1."""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_accepting(port: int, proc: subprocess.Popen, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def rss_mib(pid: int) -> float:
    """Resident set of pid and its children (h2o forks workers), in MiB."""
    total = 0
    pids = [pid]
    try:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
        pids += [int(x) for x in out.split()]
    except (OSError, ValueError):
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def parse_wrk(text: str) -> dict:
    out = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if m:
        out["requests_per_second"] = float(m.group(1))
    for q, name in (("50", "latency_p50_ms"), ("99", "latency_p99_ms")):
        m = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        if m:
            out[name] = float(m.group(1)) * UNITS[m.group(2)]
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    out["errors"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        out["errors"] += sum(int(x) for x in m.groups())
    return out


def same_autogroup_nice() -> None:
    """In the server's child, before exec: its new session is a new scheduling autogroup (with
    kernel.sched_autogroup_enabled), which starts at nice 0 while wrk stays in ours. Under the
    harness's --nice -20 that gave wrk ~99% of the CPU it asked for and left the server the rest,
    so the figures measured the nice values, not the servers. The server's group gets ours."""
    try:
        with open("/proc/self/autogroup") as f:  # the parent's, inherited until setsid below
            nice = int(f.read().split()[-1])
        os.setsid()
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except (OSError, ValueError):
        pass


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--workload", required=True)
    p.add_argument("--impl", required=True)
    p.add_argument("--threads", type=int, default=2, help="server threads (default 2)")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--wrk-threads", type=int, default=2)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("server", nargs=argparse.REMAINDER)
    a = p.parse_args()
    server = [x for x in a.server if x != "--"]
    if not shutil.which("wrk"):
        print(json.dumps({"workload": a.workload, "impl": a.impl, "skip": True,
                          "reason": "wrk not installed (tools/setup --peers)"}).join(["SKIP ", ""]))
        return 0
    port = free_port()
    proc = subprocess.Popen(server + ["--port", str(port), "--threads", str(a.threads)],
                            stdout=subprocess.DEVNULL, stderr=sys.stderr, preexec_fn=same_autogroup_nice)
    try:
        if not wait_accepting(port, proc, 20):
            print(f"load.py: {server[0]} did not accept on 127.0.0.1:{port}", file=sys.stderr)
            return 1
        url = f"http://127.0.0.1:{port}/"
        wrk = ["wrk", "-t", str(a.wrk_threads), "-c", str(a.connections), "--latency"]
        if a.warmup > 0:
            subprocess.run(wrk + ["-d", f"{a.warmup}s", url], capture_output=True, text=True)
        r = subprocess.run(wrk + ["-d", f"{a.seconds}s", url], capture_output=True, text=True)
        got = parse_wrk(r.stdout)
        rss = rss_mib(proc.pid)
        if "requests_per_second" not in got or r.returncode != 0:
            print(f"load.py: wrk failed:\n{r.stdout}\n{r.stderr}", file=sys.stderr)
            return 1
        if got["errors"]:
            print(f"load.py: {got['errors']} errors under load:\n{r.stdout}", file=sys.stderr)
            return 1
        params = {"connections": a.connections, "wrk_threads": a.wrk_threads, "seconds": a.seconds, "threads": a.threads}
        for metric, unit in (("requests_per_second", "1/s"), ("latency_p50_ms", "ms"), ("latency_p99_ms", "ms")):
            if metric in got:
                print("RESULT " + json.dumps({"workload": a.workload, "impl": a.impl, "metric": metric, "unit": unit,
                                              "value": round(got[metric], 3), **params}))
        print("RESULT " + json.dumps({"workload": a.workload, "impl": a.impl, "metric": "server_rss_mib", "unit": "MiB",
                                      "value": round(rss, 1), **params}))
        return 0
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    sys.exit(main())
