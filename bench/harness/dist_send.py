#!/usr/bin/env python3
"""dist_send: messages between two nodes on this machine, every pair in one loop.

    python3 bench/harness/dist_send.py [--build build/release] [--runs 3] [--stream-n 1000000] [--rtt-n 100000]

Pairs (sender -> sink): Grove -> Grove, Grove -> Erlang, Erlang -> Grove, Erlang -> Erlang (the
reference). Workloads: a stream of N messages to a counter (messages/s), and N round trips through
an echo process (round trips/s), each with a small term (42) and a 1 KB binary. Each node runs 2
worker threads (BEAM: +S 2:2). Runs alternate between pairs, so a drift of the machine touches
every pair alike; medians, min and max per cell, and each pair's ratio to Erlang -> Erlang.
bench/grove/dist_send.cpp and bench/peers/erlang/dist_send.erl say what each side does."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COOKIE = "grove_bench"


def compile_erlang(out_dir):
    peers = os.path.join(ROOT, "bench", "peers", "erlang")
    for mod in ("bench_peer.erl", "dist_send.erl"):
        subprocess.run(["erlc", "-o", out_dir, os.path.join(peers, mod)], check=True)


def start_sink(kind, run_id, build, ebin):
    if kind == "grove":
        cmd = [os.path.join(build, "bench", "grove", "dist_send"), "--sink", "1", "--id", str(run_id)]
    else:
        cmd = ["erl", "+S", "2:2", "-name", f"erl_sink_{run_id}@127.0.0.1", "-setcookie", COOKIE, "-noshell",
               "-pa", ebin, "-s", "dist_send", "sink"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()  # "sink up": registered, listening
    if "sink up" not in line:
        p.kill()
        raise RuntimeError(f"{kind} sink did not start: {line!r}")
    return p


def run_sender(kind, sink_kind, run_id, mode, payload, n, build, ebin):
    flags = ["--id", str(run_id), "--peer_erlang", "1" if sink_kind == "erlang" else "0", "--mode", str(mode),
             "--payload", str(payload), "--n", str(n)]
    if kind == "grove":
        cmd = [os.path.join(build, "bench", "grove", "dist_send")] + flags + ["--threads", "2"]
    else:
        cmd = ["erl", "+S", "2:2", "-name", f"erl_sender_{run_id}@127.0.0.1", "-setcookie", COOKIE, "-noshell",
               "-pa", ebin, "-s", "dist_send", "main", "-extra"] + flags
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])["value"]
    raise RuntimeError(f"{kind} -> {sink_kind} mode {mode}: no result\n{out.stdout}\n{out.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stream-n", type=int, default=1_000_000)
    ap.add_argument("--rtt-n", type=int, default=100_000)
    args = ap.parse_args()
    if not shutil.which("erl"):
        sys.exit("dist_send: erl is missing (tools/setup --peers)")
    pairs = [("grove", "grove"), ("grove", "erlang"), ("erlang", "grove"), ("erlang", "erlang")]
    cells = [(0, 0, "stream, small term", "messages/s"), (0, 1024, "stream, 1 KB binary", "messages/s"),
             (1, 0, "round trips, small term", "round trips/s"), (1, 1024, "round trips, 1 KB binary", "round trips/s")]
    results = {(p, c[:2]): [] for p in pairs for c in cells}
    run_id = os.getpid() * 100
    with tempfile.TemporaryDirectory() as ebin:
        compile_erlang(ebin)
        for r in range(args.runs):
            for mode, payload, label, _ in cells:
                n = args.stream_n if mode == 0 else args.rtt_n
                for sender, sink in pairs:
                    run_id += 1
                    s = start_sink(sink, run_id, args.build, ebin)
                    try:
                        v = run_sender(sender, sink, run_id, mode, payload, n, args.build, ebin)
                    finally:
                        s.kill()
                        s.wait()
                    results[((sender, sink), (mode, payload))].append(v)
                    print(f"run {r + 1}: {label:26} {sender:>6} -> {sink:<6} {v:>14,.0f}", flush=True)
                    time.sleep(0.2)  # let EPMD forget the names
    print()
    print(f"dist_send, {args.runs} runs, median (min-max); ratio to Erlang -> Erlang")
    print(f"| | {' | '.join(f'{a} -> {b}' for a, b in pairs)} |")
    print(f"|---|{'---:|' * len(pairs)}")
    for mode, payload, label, unit in cells:
        ref = statistics.median(results[(("erlang", "erlang"), (mode, payload))])
        row = []
        for p in pairs:
            vals = results[(p, (mode, payload))]
            med = statistics.median(vals)
            row.append(f"{med / 1e3:,.0f} K ({min(vals) / 1e3:,.0f}-{max(vals) / 1e3:,.0f}) {med / ref:.2f}x")
        print(f"| {label} ({unit}) | {' | '.join(row)} |")


if __name__ == "__main__":
    main()
