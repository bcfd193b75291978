// timers: N goroutines (100,000) each sleep a pseudo-random 1..1000 ms (time.Sleep), all spawned
// first by main; each measures its lateness (actual wake - its own start - its sleep) and sends it
// to a collector. Reports late_p50_ms, late_p99_ms and late_max_ms (nearest-rank percentiles). The
// sleeps come from the LCG in bench/README.md: x = x*6364136223846793005 + 1442695040888963407
// mod 2^64, ms = 1 + (x>>33) % 1000, x starting at --seed, one step per goroutine in spawn order.
package main

import (
	"flag"
	"math"
	"sort"
	"time"

	"grove/bench/peers/go/internal/peer"
)

func main() {
	n := flag.Int64("n", 100000, "sleeping goroutines")
	seed := flag.Int64("seed", 42, "LCG seed")
	b := peer.Start("timers", map[string]*int64{"n": n, "seed": seed})

	reports := make(chan time.Duration, 1024)
	collected := make(chan []time.Duration)
	go func() {
		late := make([]time.Duration, 0, *n)
		for len(late) < int(*n) {
			late = append(late, <-reports)
		}
		collected <- late
	}()
	x := uint64(*seed)
	var sumMs int64 // 50035349 for seed 42 and n = 100,000: reported as a check of the sequence
	for i := int64(0); i < *n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		ms := int64(1 + (x>>33)%1000)
		sumMs += ms
		sleep := time.Duration(ms) * time.Millisecond
		go func() {
			start := time.Now()
			time.Sleep(sleep)
			reports <- time.Since(start) - sleep
		}()
	}
	late := <-collected
	if int64(len(late)) != *n {
		b.Fail("collector got %d reports, expected %d", len(late), *n)
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	rank := func(q float64) float64 { // nearest rank: the ceil(q*n)-th smallest, 1-based
		r := int(math.Max(1, math.Ceil(q*float64(len(late)))))
		return float64(late[r-1].Microseconds()) / 1000
	}
	check := map[string]any{"sum_ms": sumMs}
	b.Result("late_p50_ms", "ms", rank(0.50), check)
	b.Result("late_p99_ms", "ms", rank(0.99), check)
	b.Result("late_max_ms", "ms", rank(1.0), check)
}
