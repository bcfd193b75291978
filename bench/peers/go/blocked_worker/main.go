// blocked_worker: threads-1 goroutines each blocked in a syscall (a 300 ms nanosleep, again and
// again) while another goroutine does N selects with a 10 ms timeout; each measures how late its
// timeout came (wake - start - 10 ms). Go's runtime hands a P whose thread is in a syscall to
// another thread (sysmon), and any P runs any P's timers: the reference for Grove's figure.
// Reports late_p50_ms, late_p99_ms and late_max_ms (nearest-rank percentiles).
package main

import (
	"flag"
	"math"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	"grove/bench/peers/go/internal/peer"
)

func main() {
	n := flag.Int64("n", 200, "timed waits")
	blockMs := flag.Int64("block_ms", 300, "each blocking syscall's length")
	timeoutMs := flag.Int64("timeout_ms", 10, "each wait's timeout")
	b := peer.Start("blocked_worker", map[string]*int64{"n": n, "block_ms": blockMs, "timeout_ms": timeoutMs})

	var stop atomic.Bool
	var blocking atomic.Int64
	for i := 0; i+1 < b.Threads; i++ {
		go func() {
			blocking.Add(1)
			ts := syscall.NsecToTimespec(*blockMs * int64(time.Millisecond))
			for !stop.Load() {
				syscall.Nanosleep(&ts, nil)
			}
		}()
	}
	for blocking.Load()+1 < int64(b.Threads) {
		time.Sleep(time.Millisecond)
	}
	never := make(chan struct{})
	timeout := time.Duration(*timeoutMs) * time.Millisecond
	late := make([]time.Duration, 0, *n)
	for i := int64(0); i < *n; i++ {
		start := time.Now()
		select {
		case <-never:
		case <-time.After(timeout):
		}
		late = append(late, time.Since(start)-timeout)
	}
	stop.Store(true)
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	rank := func(q float64) float64 {
		r := int(math.Max(1, math.Ceil(q*float64(len(late)))))
		return float64(late[r-1].Microseconds()) / 1000
	}
	b.Result("late_p50_ms", "ms", rank(0.50), nil)
	b.Result("late_p99_ms", "ms", rank(0.99), nil)
	b.Result("late_max_ms", "ms", rank(1.0), nil)
}
