#!/usr/bin/env bash
# trace_overhead.sh [build dir] [baseline build dir] [runs]: what tracing costs the message path
# (grove/trace.hpp), side by side in one run, alternating, medians of `runs`:
#   off:      the build's ring and ping_pong, tracing compiled in and switched off;
#   on:       the same binaries with GROVE_TRACE (every event kind; the flight recorder's 65,536
#             events per worker), stamped with the trace clock the runtime chose (the TSC where
#             the kernel's clocksource is the TSC: runtime/src/tracer.cpp, "Timestamps");
#   on, monotonic: the same with GROVE_TRACE_CLOCK=monotonic (clock_gettime for every event);
#   baseline: (optional) the same programs from a build without the recording sites, for the cost
#             of "compiled in and off".
# And spawn (200,000 processes that each sleep: spawn, run begin and end, wake, per process), whose
# figure is seconds: for it the percentage is the time added.
# And, where `go` is installed, Go's ring and ping_pong peers (bench/peers/go) off and under Go's
# execution tracer (GO_PEER_TRACE: runtime/trace), in the same loop: the peer's tracer on the same
# workloads (Debian 12's Go is 1.19, before Go 1.21's cheaper tracer).
# Also events recorded per second on one worker: a 1-worker ring's traced hops/s times its events
# per hop (counted from a run whose buffer keeps every event: the count the runtime logs).
set -euo pipefail
build=${1:-build/release}
base=${2:-}
runs=${3:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rate() { grep -o '"value":[0-9.e+-]*' | head -1 | cut -d: -f2; }
args() { [[ $1 == spawn ]] && echo "--n 200000 --threads 2" || echo "--threads 2"; }
declare -A all
go_peers=()
if command -v go >/dev/null; then
  (cd "$(dirname "$0")/../peers/go" && go build -o "$out/go/" ./ring ./ping_pong) && go_peers=(ring ping_pong)
fi
for ((i = 0; i < runs; i++)); do
  for w in "${go_peers[@]}"; do  # short runs: traced, Go 1.19 runs these at a tenth of its speed
    n=$([[ $w == ring ]] && echo 2000000 || echo 200000)
    all[$w.go]+=" $("$out/go/$w" --threads 2 --n $n | rate)"
    all[$w.gotraced]+=" $(GO_PEER_TRACE=$out/go.trace "$out/go/$w" --threads 2 --n $n | rate)"
  done
  for w in ring ping_pong spawn; do
    all[$w.off]+=" $("$build/bench/grove/$w" $(args $w) | rate)"
    all[$w.on]+=" $(GROVE_TRACE=$out/t.pftrace "$build/bench/grove/$w" $(args $w) 2>/dev/null | rate)"
    all[$w.mono]+=" $(GROVE_TRACE_CLOCK=monotonic GROVE_TRACE=$out/t.pftrace "$build/bench/grove/$w" $(args $w) 2>/dev/null | rate)"
    [[ -n $base ]] && all[$w.baseline]+=" $("$base/bench/grove/$w" $(args $w) | rate)"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
show() { [[ $1 == spawn ]] && printf '%.3gs' "$2" || printf '%.3gM/s' "$(bc -l <<<"$2/1000000")"; }
for w in ring ping_pong spawn; do
  off=$(median <<<"${all[$w.off]}")
  on=$(median <<<"${all[$w.on]}")
  mono=$(median <<<"${all[$w.mono]}")
  line=$(printf '%-10s off %s  on %s (%+.1f%%)  on, monotonic %s (%+.1f%%)' "$w" "$(show $w "$off")" \
    "$(show $w "$on")" "$(bc -l <<<"($on/$off-1)*100")" "$(show $w "$mono")" "$(bc -l <<<"($mono/$off-1)*100")")
  if [[ -n $base ]]; then
    b=$(median <<<"${all[$w.baseline]}")
    line+=$(printf '  baseline %s (off vs baseline %+.1f%%)' "$(show $w "$b")" "$(bc -l <<<"($off/$b-1)*100")")
  fi
  echo "$line"
done
for w in "${go_peers[@]}"; do
  off=$(median <<<"${all[$w.go]}")
  on=$(median <<<"${all[$w.gotraced]}")
  printf '%-10s go: off %s  traced %s (%+.1f%%)\n' "$w" "$(show $w "$off")" "$(show $w "$on")" "$(bc -l <<<"($on/$off-1)*100")"
done
# Events per hop (every event kept), then events recorded per second on one worker (the flight
# recorder's default ring): hops/s traced x events per hop.
log=$(GROVE_TRACE=$out/all.pftrace GROVE_TRACE_BUFFER=4194304 "$build/bench/grove/ring" --n 200000 --threads 1 2>&1 >/dev/null)
events=$(grep -o 'trace of [0-9]* events' <<<"$log" | grep -o '[0-9]*')
per_hop=$(bc -l <<<"$events / 200000")
one=""
for ((i = 0; i < runs; i++)); do one+=" $(GROVE_TRACE=$out/t1.pftrace "$build/bench/grove/ring" --threads 1 2>/dev/null | rate)"; done
hops=$(median <<<"$one")
printf 'ring, 1 worker, traced: %.3gM hops/s x %.2f events a hop = %.3gM events/s on the worker\n' \
  "$(bc -l <<<"$hops/1000000")" "$per_hop" "$(bc -l <<<"$hops*$per_hop/1000000")"
