"""The benchmark suite's workloads, implementations and metrics: what the harness runs and how it
reads the results. One entry per workload; the programs themselves live in bench/grove/ and
bench/peers/{erlang,go,caf}/ under the same names (bench/README.md describes each one)."""

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

IMPLS = ["grove", "erlang", "go", "caf", "h2o"]
PEERS = ["erlang", "go", "caf", "h2o"]
# Implementations that take part only in server workloads (Workload.driver set): h2o is the C
# reference for HTTP, not an actor runtime.
SERVER_ONLY = {"h2o"}

K = 1_000
M = 1_000_000


@dataclass
class Workload:
    name: str
    summary: str
    # The values of --n run by default; None means "do not pass --n" (the program's default).
    ns: List[Optional[int]] = field(default_factory=lambda: [None])
    # More values of --n run with --big (only spawn has them).
    big_ns: List[int] = field(default_factory=list)
    # Seconds a single run may take before it is killed, given its --n (None: the default n).
    timeout_s: Callable[[Optional[int]], float] = lambda n: 180
    # Implementations that do not have this workload, with the reason printed as a skip.
    skip: Dict[str, str] = field(default_factory=dict)
    # A server workload: each implementation's program is a server (--port P --threads T, runs
    # until killed) that this driver in bench/harness/ loads and measures (load.py: wrk).
    driver: Optional[str] = None


WORKLOADS: Dict[str, Workload] = {w.name: w for w in [
    Workload("spawn", "N processes each sleeping one hour: spawn time, live count, bytes per process",
             ns=[200 * K, 400 * K, 600 * K, 800 * K, 1 * M], big_ns=[2 * M, 5 * M, 10 * M],
             timeout_s=lambda n: 60 + (n or M) * 50e-6),
    Workload("skynet", "1,000,000 leaves in a 10-ary process tree sum their numbers"),
    Workload("ping_pong", "two processes, 1,000,000 round trips"),
    Workload("ring", "1,000 processes pass a token 10,000,000 hops"),
    Workload("fan_in", "16 senders x 250,000 messages to one receiver"),
    Workload("timers", "100,000 processes sleep 1-1000 ms (seeded LCG); lateness percentiles"),
    Workload("idle", "100,000 parked processes; CPU seconds used over 5 s of nothing"),
    Workload("blocked_worker", "every worker but one blocked in 300 ms syscalls; lateness of 200 10 ms timeouts",
             skip={"erlang": "blocking a scheduler thread takes a NIF", "caf": "CAF's timers are not per worker"}),
    Workload("tcp_echo", "N connections over 127.0.0.1, round trips of 64 B, 200,000 in all",
             ns=[1, 100, 1 * K], skip={"caf": "CAF's network layer is not a peer here"}),
    Workload("idle_connections", "N idle keep-alive HTTP connections to the server: its memory per connection",
             ns=[9 * K], big_ns=[100 * K],  # 9,000: both ends in one process need 2N + 1,000 fds (a hard limit of 20,000 here)
             skip={"caf": "CAF has no HTTP server"}),
    Workload("http_hello", "keep-alive GET / answered with 'hello, world', wrk -t2 -c64 for 10 s after a 2 s warm-up",
             driver="load.py", timeout_s=lambda n: 60, skip={"caf": "CAF has no HTTP server"}),
    Workload("restarts", "one_for_one supervisor restarting a worker that crashes at once",
             ns=[1 * K, 100 * K], timeout_s=lambda n: 60 + (n or K) * 2e-3,
             skip={"go": "Go has no supervisors", "caf": "CAF has no supervisors"}),
]}

# Which way is better for each metric: "higher", "lower", or None for a count that is a check.
# A metric not listed is taken from its name: *_per_second is higher-is-better, others lower.
DIRECTION: Dict[str, Optional[str]] = {
    "alive": None,
}

# Metrics the harness adds itself to every successful run.
HARNESS_METRICS = {"peak_rss_mib": "MiB"}


def direction(metric: str) -> Optional[str]:
    if metric in DIRECTION:
        return DIRECTION[metric]
    return "higher" if metric.endswith("_per_second") else "lower"


def parse_count(text: str) -> int:
    """'200000', '200K', '1M', '1_000_000' -> int."""
    t = text.strip().upper().replace("_", "").replace(",", "")
    scale = 1
    if t.endswith("K"):
        scale, t = K, t[:-1]
    elif t.endswith("M"):
        scale, t = M, t[:-1]
    value = float(t) * scale
    if value != int(value) or value <= 0:
        raise ValueError(f"not a positive count: {text}")
    return int(value)
