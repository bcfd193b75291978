#!/usr/bin/env bash
# trace_overhead.sh [build dir] [baseline build dir] [runs]: what tracing costs the message path
# (grove/trace.hpp), side by side in one run, alternating, medians of `runs`:
#   off:      the build's ring and ping_pong, tracing compiled in and switched off;
#   on:       the same binaries with GROVE_TRACE (every event kind; the flight recorder's 65,536
#             events per worker);
#   baseline: (optional) the same programs from a build without the recording sites, for the cost
#             of "compiled in and off".
# Also events recorded per second and worker, from a 1-worker ring traced with a buffer big enough
# to keep every event (the count the runtime logs when it writes the file).
set -euo pipefail
build=${1:-build/release}
base=${2:-}
runs=${3:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rate() { grep -o '"value":[0-9.e+]*' | head -1 | cut -d: -f2; }
declare -A all
for ((i = 0; i < runs; i++)); do
  for w in ring ping_pong; do
    all[$w.off]+=" $("$build/bench/grove/$w" --threads 2 | rate)"
    all[$w.on]+=" $(GROVE_TRACE=$out/t.pftrace "$build/bench/grove/$w" --threads 2 2>/dev/null | rate)"
    [[ -n $base ]] && all[$w.baseline]+=" $("$base/bench/grove/$w" --threads 2 | rate)"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
for w in ring ping_pong; do
  off=$(median <<<"${all[$w.off]}")
  on=$(median <<<"${all[$w.on]}")
  line=$(printf '%-10s off %.3gM/s  on %.3gM/s (%.1f%%)' "$w" "$(bc -l <<<"$off/1000000")" "$(bc -l <<<"$on/1000000")" "$(bc -l <<<"($on/$off-1)*100")")
  if [[ -n $base ]]; then
    b=$(median <<<"${all[$w.baseline]}")
    line+=$(printf '  baseline %.3gM/s (off vs baseline %.1f%%)' "$(bc -l <<<"$b/1000000")" "$(bc -l <<<"($off/$b-1)*100")")
  fi
  echo "$line"
done
start=$(date +%s.%N)
log=$(GROVE_TRACE=$out/all.pftrace GROVE_TRACE_BUFFER=4194304 "$build/bench/grove/ring" --n 200000 --threads 1 2>&1 >/dev/null)
secs=$(bc -l <<<"$(date +%s.%N) - $start")
events=$(grep -o 'trace of [0-9]* events' <<<"$log" | grep -o '[0-9]*')
echo "ring, 1 worker, every event kept: $events events; the program ran $(printf %.2f "$secs") s (start, tracing, writing the file)"
