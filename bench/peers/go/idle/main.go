// idle: N goroutines (100,000) parked in a receive on their own channel; once all have run, wait
// --settle seconds (1), then report the CPU time (user + system, getrusage) the process used over
// --seconds (5) of wall time in which nothing happens: cpu_seconds. Then exits.
package main

import (
	"flag"
	"math"
	"runtime"
	"sync"
	"time"

	"grove/bench/peers/go/internal/peer"
)

func main() {
	n := flag.Int64("n", 100000, "parked goroutines")
	secs := flag.Int64("seconds", 5, "wall seconds measured")
	settle := flag.Int64("settle", 1, "wall seconds waited before measuring")
	b := peer.Start("idle", map[string]*int64{"n": n, "seconds": secs, "settle": settle})

	before := runtime.NumGoroutine()
	mailboxes := make([]chan struct{}, *n)
	var wg sync.WaitGroup
	wg.Add(int(*n))
	for i := range mailboxes {
		mailboxes[i] = make(chan struct{})
		go func(mailbox <-chan struct{}) {
			wg.Done()
			<-mailbox
		}(mailboxes[i])
	}
	wg.Wait()
	if alive := runtime.NumGoroutine() - before; int64(alive) != *n {
		b.Fail("%d goroutines alive, expected %d", alive, *n)
	}
	time.Sleep(time.Duration(*settle) * time.Second)
	cpu0, w0 := peer.CPUSeconds(), time.Now()
	time.Sleep(time.Duration(*secs) * time.Second)
	cpu, wall := math.Round((peer.CPUSeconds()-cpu0)*1e6)/1e6, time.Since(w0) // getrusage has µs resolution
	b.Result("cpu_seconds", "s", cpu, map[string]any{"wall_seconds": wall.Seconds()})
	runtime.KeepAlive(mailboxes)
}
