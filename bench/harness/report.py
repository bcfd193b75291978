"""Turns the harness's measurements into what it prints and writes: a text table per workload
(median/min/max per implementation and metric, with Grove's ratio to each peer), one JSON object per
line (--json), a Markdown results file (--markdown) and a gnuplot chart of spawn (--plot)."""

import json
import shutil
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from workloads import IMPLS, WORKLOADS, direction


@dataclass
class Cell:
    """Everything measured for one workload at one --n by one implementation."""
    workload: str
    n: Optional[int]  # the --n passed, or None for the program's default
    impl: str
    status: str = "ok"  # ok | absent | skipped | failed (every run failed or timed out)
    reason: str = ""
    values: Dict[str, List[float]] = field(default_factory=dict)  # metric -> one value per good run
    units: Dict[str, str] = field(default_factory=dict)
    params: Dict[str, Any] = field(default_factory=dict)  # extra keys of the RESULT lines
    runs: int = 0  # runs attempted
    failures: List[str] = field(default_factory=list)  # why each failed run failed
    foreign_cpu_share: float = 0.0  # the most other processes used of the CPUs during one run
    cpu_wait: float = 0.0  # the most the program's threads waited for a CPU, s per s, in one run

    def median(self, metric: str) -> Optional[float]:
        v = self.values.get(metric)
        return statistics.median(v) if v else None

    def shown_n(self) -> Optional[int]:
        return self.n if self.n is not None else self.params.get("n")


def fmt(v: Optional[float]) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if v == int(v):
        return str(int(v))
    return f"{v:.4g}"


def ratio(grove: Optional[Cell], cell: Cell, metric: str) -> str:
    if cell.impl == "grove" or direction(metric) is None:
        return "-"
    if grove is None or grove.status != "ok" or grove.median(metric) is None:
        return "n/a"
    peer = cell.median(metric)
    if not peer:
        return "n/a"
    return f"{grove.median(metric) / peer:.3g}"


def _groups(cells: List[Cell]) -> Dict[str, Dict[Optional[int], List[Cell]]]:
    """workload -> --n -> cells in IMPLS order."""
    out: Dict[str, Dict[Optional[int], List[Cell]]] = {}
    for c in cells:
        out.setdefault(c.workload, {}).setdefault(c.n, []).append(c)
    for by_n in out.values():
        for lst in by_n.values():
            lst.sort(key=lambda c: IMPLS.index(c.impl))
    return out


def _rows(cells: List[Cell]) -> List[List[str]]:
    """Table rows for one workload at one --n: one per implementation and metric."""
    grove = next((c for c in cells if c.impl == "grove"), None)
    n = next((c.shown_n() for c in cells if c.shown_n() is not None), None)
    metrics: List[str] = []
    for c in cells:
        metrics += [m for m in c.values if m not in metrics]
    rows = []
    for metric in metrics:
        unit = next(c.units[metric] for c in cells if metric in c.units)
        for c in cells:
            if c.status != "ok" or metric not in c.values:
                continue
            v = c.values[metric]
            runs = f"{len(v)}" if len(v) == c.runs else f"{len(v)}/{c.runs}"
            rows.append([fmt(n), metric, unit, direction(metric) or "check", c.impl,
                         fmt(c.median(metric)), fmt(min(v)), fmt(max(v)), runs, ratio(grove, c, metric),
                         f"{c.cpu_wait:.2f}", f"{c.foreign_cpu_share:.0%}"])
    for c in cells:
        if c.status != "ok":
            rows.append([fmt(n), "-", "", "", c.impl, f"{c.status}: {c.reason.splitlines()[0] if c.reason else ''}",
                         "", "", str(c.runs) if c.runs else "", "n/a", "", ""])
        elif c.failures:
            rows.append([fmt(n), "-", "", "", c.impl, f"{len(c.failures)} of {c.runs} runs failed: "
                         f"{c.failures[0].splitlines()[0]}", "", "", "", "", "", ""])
    return rows


HEADER = ["n", "metric", "unit", "better", "impl", "median", "min", "max", "runs", "grove/impl", "wait",
          "others"]
NOISE_NOTE = ("wait: seconds the program's threads spent waiting for a CPU per second of the run (the "
              "worst run); others: the share of the machine's CPUs other processes used meanwhile. "
              "When both are above a few percent, other work on the machine disturbed the figures; a "
              "wait with no others comes from the program's own threads outnumbering the CPUs.")


def text_tables(cells: List[Cell]) -> str:
    out = []
    for workload, by_n in _groups(cells).items():
        out.append(f"== {workload}: {WORKLOADS[workload].summary} ==")
        rows = [r for n in by_n for r in _rows(by_n[n])]
        # Status messages in the median column may be long: do not let them widen the table.
        widths = [max([len(HEADER[i])] + [len(r[i]) for r in rows if not (i == 5 and r[1] == "-")])
                  for i in range(len(HEADER))]
        line = lambda r: "  ".join(x.ljust(widths[i]) if i < 5 else x.rjust(widths[i])
                                   for i, x in enumerate(r)).rstrip()
        out.append(line(HEADER))
        for r in rows:
            if r[1] == "-":  # a status row: impl, then the message
                out.append("  ".join(x.ljust(widths[i]) for i, x in enumerate(r[:5])) + "  " + r[5])
            else:
                out.append(line(r))
        out.append("")
    out.append(NOISE_NOTE)
    return "\n".join(out)


def json_lines(cells: List[Cell]) -> List[str]:
    lines = []
    for c in cells:
        params = {k: v for k, v in c.params.items()}
        if c.shown_n() is not None:
            params["n"] = c.shown_n()
        if c.status != "ok":
            lines.append(json.dumps({"workload": c.workload, "impl": c.impl, "status": c.status,
                                     "reason": c.reason, "parameters": params}))
            continue
        for metric, v in c.values.items():
            lines.append(json.dumps({
                "workload": c.workload, "impl": c.impl, "metric": metric, "unit": c.units[metric],
                "median": statistics.median(v), "min": min(v), "max": max(v), "runs": len(v),
                "failed_runs": len(c.failures), "better": direction(metric),
                "cpu_wait": round(c.cpu_wait, 3), "foreign_cpu_share": round(c.foreign_cpu_share, 3),
                "parameters": params}))
    return lines


def _median(cells: List[Cell], workload: str, impl: str, metric: str, n: Optional[int] = None) -> Optional[float]:
    for c in cells:
        if c.workload == workload and c.impl == impl and c.status == "ok" and (n is None or c.shown_n() == n):
            return c.median(metric)
    return None


# Grove's bar (the benchmarks issue), each checked against figures of this run: (what, workload, n,
# metric, check). A check gets a function that reads a median (impl, metric) and returns
# (met, the figures) or None when a figure is missing.
def _bar_checks():
    def vs(impl, factor, op):
        def check(get, metric):
            g, p = get("grove", metric), get(impl, metric)
            if g is None or p is None:
                return None
            met = g <= factor * p if op == "<=" else g >= factor * p
            return met, f"grove {fmt(g)}, {impl} {fmt(p)} (ratio {g / p:.3g})"
        return check

    def every_peer(get, metric):
        g = get("grove", metric)
        peers = {i: get(i, metric) for i in IMPLS[1:]}
        peers = {i: v for i, v in peers.items() if v is not None}
        if g is None or not peers:
            return None
        return all(g > v for v in peers.values()), f"grove {fmt(g)}; " + ", ".join(
            f"{i} {fmt(v)}" for i, v in peers.items())

    def at_most(limit):
        def check(get, metric):
            g = get("grove", metric)
            return None if g is None else (g <= limit, f"grove {fmt(g)} (limit {fmt(limit)})")
        return check

    def all_alive(n):
        def check(get, metric):
            g = get("grove", metric)
            return None if g is None else (g >= n, f"grove counted {fmt(g)} alive (N = {fmt(n)} plus its own)")
        return check

    def restarts(get, metric):
        r = vs("erlang", 3, ">=")(get, metric)
        g = get("grove", metric)
        if r is None:
            return None
        return r[0] and g > 108_000, r[1] + "; and above 108,000/s: " + ("yes" if g > 108_000 else "no")

    M = 1_000_000
    return [
        ("spawn 1M: at most 1,000 bytes per process", "spawn", M, "bytes_per_process", at_most(1000)),
        ("spawn 1M: time at most 0.1x Erlang's", "spawn", M, "spawn_seconds", vs("erlang", 0.1, "<=")),
        ("spawn 10M: all alive at once", "spawn", 10 * M, "alive", all_alive(10 * M)),
        ("skynet: at most 0.5x Go's time", "skynet", None, "seconds", vs("go", 0.5, "<=")),
        ("ping_pong: ahead of every peer", "ping_pong", None, "round_trips_per_second", every_peer),
        ("ring: ahead of every peer", "ring", None, "hops_per_second", every_peer),
        ("fan_in: ahead of every peer", "fan_in", None, "messages_per_second", every_peer),
        ("timers: p99 lateness at most Go's", "timers", None, "late_p99_ms", vs("go", 1, "<=")),
        ("idle: at most 0.05 CPU seconds", "idle", None, "cpu_seconds", at_most(0.05)),
        ("restarts 1,000: at least 3x Erlang's OTP supervisor, above 108,000/s", "restarts", 1000,
         "restarts_per_second", restarts),
        ("restarts 100,000: at least 3x Erlang's OTP supervisor, above 108,000/s", "restarts", 100_000,
         "restarts_per_second", restarts),
    ]


def bar_section(cells: List[Cell]) -> List[str]:
    """The bar, item by item, as met / not met / not measured in this run."""
    out = ["## Against the bar", "", "| bar | result | figures (medians of this run) |", "|---|---|---|"]
    for what, workload, n, metric, check in _bar_checks():
        r = check(lambda impl, m: _median(cells, workload, impl, m, n), metric)
        result, figures = ("not measured", "-") if r is None else ("met" if r[0] else "**not met**", r[1])
        out.append(f"| {what} | {result} | {figures} |")
    return out + [""]


def markdown(cells: List[Cell], meta: Dict[str, str], notes: Optional[str] = None) -> str:
    out = ["# Grove benchmark results", ""]
    out += [f"- **{k}**: {v}" for k, v in meta.items()]
    out += ["", "`grove/impl` is Grove's median divided by that implementation's median; `better` says "
            "which way is better for the metric. `n/a`: Grove's program is absent or failed. "
            + NOISE_NOTE, ""]
    out += bar_section(cells)
    if notes:
        out += [notes.rstrip(), ""]
    for workload, by_n in _groups(cells).items():
        out += [f"## {workload}", "", WORKLOADS[workload].summary, ""]
        out.append("| " + " | ".join(HEADER) + " |")
        out.append("|" + "|".join("---" if i < 5 else "---:" for i in range(len(HEADER))) + "|")
        for n in by_n:
            for r in _rows(by_n[n]):
                out.append("| " + " | ".join(x.replace("|", "\\|") for x in r) + " |")
        out.append("")
    return "\n".join(out) + "\n"


def plot(cells: List[Cell], path: Path) -> Optional[str]:
    """Draws spawn_seconds and bytes_per_process against N for every implementation (the median,
    with the runs' min-max as an error bar: a peer whose runs spread widely shows it, as CAF's do);
    implementations skipped at some N are named under the chart with why. White background, legend
    outside the plots (it covered Grove's line), log axes for N and time (N spans 0.2M to 10M).
    Returns an error message, or None when the chart was written."""
    if not shutil.which("gnuplot"):
        return "gnuplot is not installed (tools/setup --peers installs gnuplot-nox)"
    series: Dict[str, List[tuple]] = {}
    skipped: List[str] = []
    for c in cells:
        if c.workload != "spawn":
            continue
        if c.status == "ok" and c.median("spawn_seconds") is not None:
            t = c.values["spawn_seconds"]
            b = c.values.get("bytes_per_process") or [0]
            series.setdefault(c.impl, []).append(
                (c.shown_n(), statistics.median(t), min(t), max(t), statistics.median(b), min(b), max(b)))
        elif c.status in ("skipped", "failed") and c.shown_n():
            why = c.reason.split("(")[0].strip() or c.status
            skipped.append(f"{c.impl} at {c.shown_n() / 1e6:g}M: {why}")
    if not series:
        return "no spawn results to plot"
    ext = path.suffix.lower()
    if ext == ".svg":
        term = "set terminal svg size 1200,520 dynamic font 'sans,11' background rgb 'white'"
    elif ext == ".png":
        term = "set terminal pngcairo size 1200,520 font 'sans,10' background rgb 'white'"
    else:
        return f"--plot wants a .svg or .png file, not {path.name}"
    note = "error bars: min-max of the runs; not measured: " + ("; ".join(skipped) if skipped else "none")
    script = [term, f"set output '{path}'", "set grid", "set logscale x",
              "set xlabel 'processes (millions, log scale)'",
              "set multiplot layout 1,2 margins 0.07,0.88,0.16,0.9 spacing 0.09",
              f"set label 1 \"{note}\" at screen 0.02,0.04 left font 'sans,10'"]
    blocks = []
    for impl, pts in series.items():
        blocks.append(f"${impl} << EOD")
        blocks += [" ".join(f"{v:g}" for v in (pt[0] / 1e6,) + tuple(pt[1:])) for pt in sorted(pts)]
        blocks.append("EOD")
    impls = [i for i in IMPLS if i in series]
    for cols, title, ylabel, logy, key in [((2, 3, 4), "spawn time until all are alive", "seconds (log scale)", True, "unset key"),
                                           ((5, 6, 7), "memory per process (VmRSS growth / N)", "bytes", False,
                                            "set key outside right top")]:
        script += [f"set title '{title}'", f"set ylabel '{ylabel}'", key]
        script += ["set logscale y", "set yrange [*:*]"] if logy else ["unset logscale y", "set yrange [0:*]"]
        script.append("plot " + ", ".join(
            f"${i} using 1:{cols[0]}:{cols[1]}:{cols[2]} with yerrorlines title '{i}'" for i in impls))
        script.append("unset label 1")
    script.append("unset multiplot")
    proc = subprocess.run(["gnuplot"], input="\n".join(blocks + script) + "\n", text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return None if proc.returncode == 0 else "gnuplot failed: " + proc.stdout.strip()
