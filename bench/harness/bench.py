#!/usr/bin/env python3
"""tools/bench: runs Grove's benchmarks side by side with the same workloads on Erlang/OTP, Go and
CAF, and prints per workload the median/min/max of every metric with Grove's ratio to each peer.

Protocol (bench/README.md has the full text): every program is an executable
<dir>/<workload> that takes `--n N` (and other --flag INT parameters with defaults) and prints one
line per metric, `RESULT {"workload":..,"impl":..,"metric":..,"unit":..,"value":..,"n":..}`, or
`SKIP {"workload":..,"impl":..,"reason":..}`; other output is ignored; a non-zero exit status is a
failed check. The harness:
  1. builds the peers into build/peers/<impl>/ (build.py) and looks for Grove's programs in
     build/release/bench/grove/ (absent ones are reported, never fatal);
  2. for each workload and each --n, runs each implementation K times, interleaved (run 1 of every
     implementation, then run 2, ...) so slow drift of the machine spreads over all of them; every
     run has a timeout after which its process group is killed and the run counted as failed;
  3. for spawn, before each larger N, skips an implementation whose projected RSS (its
     bytes_per_process at the previous N times this N) would exceed --rss-limit-gib, or that failed
     at a smaller N;
  4. adds peak_rss_mib (the program's VmHWM, sampled) to every successful run, records how long its
     threads waited for a CPU (schedstat) and how much CPU other processes used meanwhile, and
     flags a run as noisy when both are above 5%;
  5. prints the tables (report.py), or JSON lines with --json; writes --markdown and --plot files.
Stdlib only; progress goes to stderr."""

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import build  # noqa: E402
import report  # noqa: E402
from report import Cell  # noqa: E402
from workloads import HARNESS_METRICS, IMPLS, SERVER_ONLY, WORKLOADS, parse_count  # noqa: E402

GIB = 1 << 30
# A run is flagged as noisy when other processes used more than NOISY_SHARE of the machine's CPUs
# and the program's threads waited for a CPU more than NOISY_WAIT seconds per second.
NOISY_SHARE = 0.05
NOISY_WAIT = 0.05


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="tools/bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="workloads: " + ", ".join(WORKLOADS))
    p.add_argument("workloads", nargs="*", metavar="WORKLOAD", help="default: all")
    p.add_argument("--impl", default=",".join(IMPLS), help="comma list (default: %(default)s)")
    p.add_argument("--n", help="comma list of N for every selected workload, e.g. 200K,1M "
                               "(default: each workload's own; spawn runs 200K..1M)")
    p.add_argument("--big", action="store_true", help="spawn also at 2M, 5M and 10M")
    p.add_argument("--runs", type=int, default=3, help="runs per implementation (default 3)")
    p.add_argument("--json", action="store_true", help="print JSON lines instead of tables")
    p.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown results file")
    p.add_argument("--plot", type=Path, metavar="FILE", help="chart spawn (.svg or .png) with gnuplot")
    p.add_argument("--timeout", type=float, metavar="S", help="seconds per run (default: per workload)")
    p.add_argument("--rss-limit-gib", type=float, default=20.0,
                   help="skip a spawn whose projected RSS exceeds this (default 20)")
    p.add_argument("--quiet-wait", type=float, default=0, metavar="S",
                   help="before each run, wait up to S seconds for a second in which other "
                        "processes use under 5%% of the CPUs (default 0: do not wait)")
    p.add_argument("--nice", type=int, default=0, metavar="N",
                   help="run the programs at this nice value; negative (root only) shields them "
                        "from other work on a shared machine (default 0)")
    p.add_argument("--set", action="append", default=[], metavar="FLAG=INT",
                   help="pass --FLAG INT to every program (repeatable), e.g. --set threads=1")
    p.add_argument("--grove-dir", type=Path, help="where Grove's programs are "
                                                  "(default: build/release/bench/grove)")
    p.add_argument("--no-build", action="store_true", help="use the peer programs already built")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2], help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    unknown = [w for w in a.workloads if w not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    a.impls = [i.strip() for i in a.impl.split(",") if i.strip()]
    bad = [i for i in a.impls if i not in IMPLS]
    if bad:
        p.error(f"unknown implementation {', '.join(bad)}; known: {', '.join(IMPLS)}")
    try:
        a.ns = [parse_count(x) for x in a.n.split(",")] if a.n else None
    except ValueError as e:
        p.error(str(e))
    for s in a.set:
        if not re.fullmatch(r"[a-z_]+=-?\d+", s):
            p.error(f"--set wants FLAG=INT, not {s}")
    if a.nice < 0 and os.geteuid() != 0:
        p.error("a negative --nice needs root")
    if a.runs < 1:
        p.error("--runs must be at least 1")
    a.workloads = a.workloads or list(WORKLOADS)
    return a


def programs(a: argparse.Namespace) -> Tuple[Dict[str, Dict[str, Path]], Dict[str, Dict[str, str]]]:
    """impl -> workload -> executable, and impl -> workload -> why there is none."""
    found: Dict[str, Dict[str, Path]] = {}
    absent: Dict[str, Dict[str, str]] = {}
    root = a.root
    for impl in a.impls:
        if impl == "grove":
            found[impl], absent[impl] = build.find_grove(a.grove_dir or root / "build/release/bench/grove",
                                                         a.workloads)
        elif a.no_build:
            found[impl], absent[impl] = build.find_grove(root / "build/peers" / impl, a.workloads)
        else:
            found[impl], absent[impl] = build.BUILDERS[impl](root, a.workloads, log)
    return found, absent


def vm_hwm_mib(pid: int) -> Optional[float]:
    """Peak resident set of a running process (VmHWM), in MiB. (wait4's ru_maxrss would do, were it
    not that a child forked from this Python process starts with Python's high-water mark.)"""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def busy_seconds() -> float:
    """CPU time all processes on the machine have used since boot (every cpu's non-idle time in
    /proc/stat), in seconds."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    guest = sum(fields[8:10])  # guest time is already counted in user time
    return (sum(fields) - idle - guest) / os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    status: str  # ok | failed | timeout
    stdout: str
    stderr: str
    peak_rss_mib: Optional[float]
    wall_s: float
    # Share of the machine's CPUs (0..1) used during the run by processes other than the program
    # and this harness: another build or test run on the machine.
    foreign_cpu_share: float
    # Seconds the program's threads spent runnable but waiting for a CPU, per second of the run
    # (/proc/PID/task/*/schedstat): what the other processes, or the program's own surplus threads,
    # actually cost it.
    cpu_wait: float

    def is_noisy(self) -> bool:
        return self.foreign_cpu_share > NOISY_SHARE and self.cpu_wait > NOISY_WAIT


def run_once(cmd: List[str], timeout_s: float, nice: int = 0) -> Run:
    """Runs one program and returns what happened: status ok, failed (non-zero exit; the reason is
    in stderr) or timeout. The program runs in its own process group,
    which is killed on timeout, so nothing it started outlives the run. The peak RSS is VmHWM
    sampled every 20 ms (exec resets it, so it is the program's own), so growth in the last 20 ms
    before exit can be missed."""
    env = dict(os.environ, GOMAXPROCS="2")
    busy0, self0, t0 = busy_seconds(), _self_cpu(), time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True, preexec_fn=(lambda: _renice(nice)) if nice else None)
        deadline = time.monotonic() + timeout_s
        delays: Dict[int, int] = {}
        try:
            status, wstatus, peak, rusage = _wait(proc, deadline, delays)
        finally:  # also on Ctrl-C or SIGTERM: nothing the program started may outlive the harness
            try:  # on timeout the program; otherwise whatever it left behind in its group
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if status == "timeout":
            _, wstatus, rusage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(wstatus)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    wall = time.monotonic() - t0
    child_cpu = rusage.ru_utime + rusage.ru_stime if rusage else 0.0
    foreign = busy_seconds() - busy0 - child_cpu - (_self_cpu() - self0)
    foreign_share = max(0.0, foreign / (wall * (os.cpu_count() or 1))) if wall > 0 else 0.0
    if status == "failed":
        code = proc.returncode
        stderr += f"\nexit status {code}" if code >= 0 else f"\nkilled by signal {-code}"
    if status == "timeout":
        stderr += f"\ntimed out after {timeout_s:.0f} s and was killed"
    return Run(status, stdout, stderr, peak, wall, foreign_share, sum(delays.values()) / 1e9 / wall)


def run_delays(pid: int, delays: Dict[int, int]) -> None:
    """Records in delays (thread id -> ns) how long each thread of pid has waited for a CPU."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                delays[int(tid)] = int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            pass


def _wait(proc: subprocess.Popen, deadline: float, delays: Dict[int, int]):
    """Polls proc until it exits or the deadline passes, sampling its VmHWM and its threads' run
    delays; returns (status, wait status, peak RSS in MiB, rusage), status "timeout" when the
    deadline passed."""
    peak = None
    while True:
        run_delays(proc.pid, delays)
        hwm = vm_hwm_mib(proc.pid)  # before wait4: a zombie has no VmHWM
        if hwm:  # 0 or None while the exec is still under way
            peak = max(peak or 0.0, hwm)
        pid, wstatus, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            return ("ok" if os.waitstatus_to_exitcode(wstatus) == 0 else "failed"), wstatus, peak, rusage
        if time.monotonic() > deadline:
            return "timeout", 0, peak, None
        time.sleep(0.02)


def _renice(nice: int) -> None:
    """In the child, before exec: set its nice value, and its autogroup's. With autogroups on
    (kernel.sched_autogroup_enabled), the new session the program runs in is its own scheduling
    group, and the CPU is shared between groups by the group's nice value, not the process's."""
    os.nice(nice)
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:
        pass


def _self_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


PROTOCOL = re.compile(r"^(RESULT|SKIP) (\{.*\})\s*$")


def parse_output(stdout: str, workload: str, impl: str) -> Tuple[List[dict], List[dict], List[str]]:
    """The RESULT and SKIP lines of one run, and complaints about malformed ones."""
    results, skips, bad = [], [], []
    for line in stdout.splitlines():
        m = PROTOCOL.match(line)
        if not m:
            continue
        try:
            obj = json.loads(m.group(2))
        except json.JSONDecodeError as e:
            bad.append(f"unreadable {m.group(1)} line ({e}): {line[:200]}")
            continue
        if obj.get("workload") != workload or obj.get("impl") != impl:
            bad.append(f"{m.group(1)} line for {obj.get('workload')}/{obj.get('impl')}, "
                       f"expected {workload}/{impl}")
            continue
        if m.group(1) == "SKIP":
            skips.append(obj)
        elif not isinstance(obj.get("metric"), str) or not isinstance(obj.get("value"), (int, float)):
            bad.append(f"RESULT line without a metric or numeric value: {line[:200]}")
        else:
            results.append(obj)
    return results, skips, bad


def last_lines(text: str, k: int = 3) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return " | ".join(lines[-k:]) if lines else "(no output)"


def wait_for_quiet(max_wait_s: float) -> None:
    """Waits until a one-second window in which the machine's CPUs are less than NOISY_SHARE busy,
    or max_wait_s has passed (then says so and goes on)."""
    if max_wait_s <= 0:
        return
    deadline = time.monotonic() + max_wait_s
    ncpu = os.cpu_count() or 1
    while True:
        b0, s0, t0 = busy_seconds(), _self_cpu(), time.monotonic()
        time.sleep(1.0)
        share = (busy_seconds() - b0 - (_self_cpu() - s0)) / ((time.monotonic() - t0) * ncpu)
        if share < NOISY_SHARE:
            return
        if time.monotonic() > deadline:
            log(f"--quiet-wait: the machine is still {share:.0%} busy after {max_wait_s:.0f} s; running anyway")
            return


def measure(cells: List[Cell], exe: Dict[str, Path], w: str, n: Optional[int], a: argparse.Namespace) -> None:
    """Runs every cell (one per implementation) of workload w at --n n, --runs times, interleaved."""
    timeout = a.timeout or WORKLOADS[w].timeout_s(n)
    extra = [x for s in a.set for x in ("--" + s.split("=")[0], s.split("=")[1])]
    for k in range(1, a.runs + 1):
        for c in cells:
            if c.status != "ok":
                continue
            cmd = [str(exe[c.impl])] + (["--n", str(n)] if n is not None else []) + extra
            driver = WORKLOADS[w].driver
            if driver:  # a server: the driver starts it, loads it and prints its RESULT lines
                cmd = [sys.executable, "-B", str(Path(__file__).parent / driver), "--workload", w, "--impl", c.impl,
                       *extra, "--", str(exe[c.impl])]
            wait_for_quiet(a.quiet_wait)
            c.runs += 1
            run = run_once(cmd, timeout, a.nice)
            status, stdout, stderr, rss, wall = run.status, run.stdout, run.stderr, run.peak_rss_mib, run.wall_s
            c.foreign_cpu_share = max(c.foreign_cpu_share, run.foreign_cpu_share)
            c.cpu_wait = max(c.cpu_wait, run.cpu_wait)
            noisy = (f" [NOISY: other processes used {run.foreign_cpu_share:.0%} of the CPUs; the program's "
                     f"threads waited {run.cpu_wait:.2f} s per s for one]" if run.is_noisy() else "")
            results, skips, bad = parse_output(stdout, w, c.impl)
            if skips and not results:
                c.status, c.reason = "skipped", skips[0].get("reason", "")
                log(f"[{w} n={n or 'default'}] {c.impl}: skipped: {c.reason}")
                continue
            if status == "ok" and not results:
                status, stderr = "failed", stderr + "\nno RESULT line"
            if bad:
                status, stderr = "failed", stderr + "\n" + "\n".join(bad)
            if status != "ok":
                c.failures.append(last_lines(stderr))
                log(f"[{w} n={n or 'default'}] {c.impl} run {k}/{a.runs}: {status.upper()} "
                    f"({wall:.1f} s){noisy}: {last_lines(stderr)}\n    command: {shlex.join(cmd)}")
                continue
            for r in results:
                c.values.setdefault(r["metric"], []).append(float(r["value"]))
                c.units[r["metric"]] = str(r.get("unit", ""))
                for key, v in r.items():
                    if key not in ("workload", "impl", "metric", "unit", "value") and key not in c.params:
                        c.params[key] = v
            if rss is not None and not WORKLOADS[w].driver:  # a driver's RSS says nothing: it reports the server's
                c.values.setdefault("peak_rss_mib", []).append(round(rss, 1))
                c.units["peak_rss_mib"] = HARNESS_METRICS["peak_rss_mib"]
            shown = ", ".join(f"{r['metric']}={report.fmt(float(r['value']))}" for r in results)
            log(f"[{w} n={n or 'default'}] {c.impl} run {k}/{a.runs} ({wall:.1f} s): {shown}{noisy}")
    for c in cells:
        if c.status == "ok" and c.failures and not any(c.values.values()):
            c.status, c.reason = "failed", c.failures[-1]


def run_workload(w: str, a: argparse.Namespace, found, absent) -> List[Cell]:
    spec = WORKLOADS[w]
    exe = {impl: found[impl][w] for impl in a.impls if w in found[impl]}
    if a.ns:
        ns: List[Optional[int]] = sorted(set(a.ns))
    else:
        ns = list(spec.ns) + (list(spec.big_ns) if a.big else [])
    cells: List[Cell] = []
    per_process: Dict[str, Tuple[int, float]] = {}  # impl -> (N, bytes_per_process), spawn only
    gave_up: Dict[str, str] = {}  # impl -> why larger N are not tried
    for n in ns:
        row: List[Cell] = []
        for impl in a.impls:
            if impl in SERVER_ONLY and not spec.driver:
                continue
            c = Cell(w, n, impl)
            if impl in spec.skip:
                c.status, c.reason = "skipped", spec.skip[impl]
            elif w not in found[impl]:
                c.status, c.reason = ("absent" if impl == "grove" else "unavailable"), absent[impl].get(w, "")
            elif impl in gave_up:
                c.status, c.reason = "skipped", gave_up[impl]
            elif w == "spawn" and impl in per_process and n is not None:
                at, bpp = per_process[impl]
                if bpp * n > a.rss_limit_gib * GIB:
                    c.status = "skipped"
                    c.reason = (f"projected RSS {bpp * n / GIB:.1f} GiB > {a.rss_limit_gib:g} GiB "
                                f"({bpp:.0f} B per process at N={at:,})")
                    log(f"[spawn n={n:,}] {impl}: {c.reason}")
            row.append(c)
        measure(row, exe, w, n, a)
        for c in row:
            if w == "spawn" and c.status == "ok" and c.median("bytes_per_process"):
                per_process[c.impl] = (c.shown_n() or 0, c.median("bytes_per_process"))
            if w == "spawn" and c.status == "failed":
                gave_up[c.impl] = f"failed at N={c.n:,}" if c.n else "failed at a smaller N"
        cells += row
    return cells


def versions(root: Path) -> Dict[str, str]:
    def out(cmd: List[str]) -> str:
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
            return p.stdout.strip().splitlines()[0] if p.stdout.strip() else "?"
        except (OSError, subprocess.TimeoutExpired):
            return "not installed"

    cpu = "?"
    try:
        m = re.search(r"^model name\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = m.group(1) if m else "?"
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f"{kb / (1 << 20):.1f} GiB"
    except (OSError, AttributeError):
        pass
    caf = "not installed"
    cfg = Path(os.environ.get("CAF_ROOT", "/usr")) / "include/caf/config.hpp"
    if cfg.exists():
        m = re.search(r"#define CAF_VERSION (\d+)", cfg.read_text())
        if m:
            v = int(m.group(1))
            caf = f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    erl = out(["erl", "-noshell", "-eval",
               'io:format("OTP ~s, erts ~s~n", [erlang:system_info(otp_release), '
               'erlang:system_info(version)]), halt().'])
    distro = "?"
    try:
        distro = re.search(r'^PRETTY_NAME="?(.*?)"?$', Path("/etc/os-release").read_text(), re.M).group(1)
    except (OSError, AttributeError):
        pass
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "machine": f"{cpu}, {os.cpu_count()} CPUs (nproc {out(['nproc'])}), {mem}",
        "system": f"{distro}, Linux {platform.release()}",
        "erlang": erl, "go": out(["go", "version"]), "caf": caf, "g++": out(["g++", "--version"]),
        "python": platform.python_version(),
    }


def main(argv: List[str]) -> int:
    a = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so run_once kills the program it is running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.list:
        for name, spec in WORKLOADS.items():
            print(f"{name:10} {spec.summary}")
        return 0
    os.chdir(a.root)
    found, absent = programs(a)
    cells: List[Cell] = []
    for w in a.workloads:
        cells += run_workload(w, a, found, absent)
    if a.json:
        print("\n".join(report.json_lines(cells)))
    else:
        print(report.text_tables(cells))
    if a.markdown:
        meta = {"command": "tools/bench " + shlex.join(argv), **versions(a.root), "runs": str(a.runs)}
        # bench/results-notes.md (hand-written: what limits Grove where it falls short, other
        # machines) goes in after the bar, so a new run keeps it.
        notes_file = a.root / "bench" / "results-notes.md"
        notes = notes_file.read_text() if notes_file.exists() else None
        a.markdown.write_text(report.markdown(cells, meta, notes))
        log(f"wrote {a.markdown}")
    if a.plot:
        err = report.plot(cells, a.plot.resolve())
        log(f"--plot: {err}" if err else f"wrote {a.plot}")
    failed = [c for c in cells if c.status == "failed" or c.failures]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
