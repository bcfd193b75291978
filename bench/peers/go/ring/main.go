// ring: --size goroutines (1,000) in a ring, each reading its own unbuffered channel and writing the
// next one's, pass one token N times (10,000,000 hops); the token carries the hops left. Reports
// hops_per_second (ring built before the clock starts); checks that the goroutine holding the token
// at the end is the one at position N mod size.
package main

import (
	"flag"
	"time"

	"grove/bench/peers/go/internal/peer"
)

func main() {
	n := flag.Int64("n", 10000000, "hops")
	size := flag.Int64("size", 1000, "goroutines in the ring")
	b := peer.Start("ring", map[string]*int64{"n": n, "size": size})

	links := make([]chan int64, *size)
	for i := range links {
		links[i] = make(chan int64)
	}
	done := make(chan int64)
	for i := int64(0); i < *size; i++ {
		go func(i int64, in <-chan int64, out chan<- int64) {
			for hops := range in {
				if hops == 0 {
					done <- i
					continue
				}
				out <- hops - 1
			}
		}(i, links[i], links[(i+1)%*size])
	}

	t0 := time.Now()
	links[0] <- *n
	last := <-done
	seconds := time.Since(t0).Seconds()
	for _, l := range links {
		close(l)
	}
	b.Result("hops_per_second", "1/s", float64(*n)/seconds, nil)
	if last != *n%*size {
		b.Fail("token ended at %d, expected %d", last, *n%*size)
	}
}
