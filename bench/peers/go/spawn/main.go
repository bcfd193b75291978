// spawn: N goroutines that each sleep one hour (each holds a pending timer). Reports spawn_seconds
// (until every goroutine has run and called wg.Done), alive (runtime.NumGoroutine) and
// bytes_per_process (VmRSS growth / N). Then exits without waiting for the hour.
package main

import (
	"flag"
	"runtime"
	"sync"
	"time"

	"grove/bench/peers/go/internal/peer"
)

func main() {
	n := flag.Int64("n", 1000000, "goroutines to spawn")
	b := peer.Start("spawn", map[string]*int64{"n": n})

	before := runtime.NumGoroutine()
	rss0 := peer.RSSBytes()
	t0 := time.Now()
	var wg sync.WaitGroup
	wg.Add(int(*n))
	for i := int64(0); i < *n; i++ {
		go func() {
			wg.Done()
			time.Sleep(time.Hour)
		}()
	}
	wg.Wait()
	seconds := time.Since(t0).Seconds()
	rss1 := peer.RSSBytes()
	alive := runtime.NumGoroutine()

	b.Result("spawn_seconds", "s", seconds, nil)
	b.Result("alive", "processes", float64(alive), map[string]any{"baseline": int64(before)})
	b.Result("bytes_per_process", "B", float64(rss1-rss0)/float64(*n), nil)
	if int64(alive-before) != *n {
		b.Fail("%d goroutines alive, expected %d + %d", alive, *n, before)
	}
}
