#!/usr/bin/env python3
"""replot.py RESULTS.md CHART.svg: draws the spawn chart again from a results file that tools/bench
wrote (its spawn table: median, min and max of each metric, which for 3 runs are the runs), so a
change to the chart (report.plot) needs no new run of the benchmarks."""
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402


def number(text: str) -> float:
    return float(text.replace(",", ""))


def cells_from(markdown: str):
    section = markdown.split("\n## spawn\n", 1)[1].split("\n## ", 1)[0]
    cells = {}
    for line in section.splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) < 9 or not re.match(r"^[\d,]+$", cols[0]):
            continue
        n, metric, impl = int(number(cols[0])), cols[1], cols[4]
        cell = cells.setdefault((n, impl), report.Cell(workload="spawn", n=n, impl=impl))
        if metric == "-":
            cell.status = "skipped" if cols[5].startswith("skipped") else "failed"
            cell.reason = cols[5].split(":", 1)[-1].strip()
            continue
        try:
            cell.values[metric] = [number(cols[6]), number(cols[5]), number(cols[7])]  # min, median, max
        except ValueError:
            continue
    return list(cells.values())


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    err = report.plot(cells_from(Path(sys.argv[1]).read_text()), Path(sys.argv[2]).resolve())
    sys.exit(f"replot: {err}" if err else 0)
