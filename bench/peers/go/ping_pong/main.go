// ping_pong: two goroutines exchange N round trips over two unbuffered channels (ping, then pong).
// Reports round_trips_per_second; checks that every pong carried the number of its ping.
package main

import (
	"flag"
	"time"

	"grove/bench/peers/go/internal/peer"
)

func main() {
	n := flag.Int64("n", 1000000, "round trips")
	b := peer.Start("ping_pong", map[string]*int64{"n": n})

	ping, pong := make(chan int64), make(chan int64)
	go func() {
		for k := range ping {
			pong <- k
		}
	}()
	t0 := time.Now()
	for k := int64(1); k <= *n; k++ {
		ping <- k
		if got := <-pong; got != k {
			b.Fail("pong %d for ping %d", got, k)
		}
	}
	seconds := time.Since(t0).Seconds()
	close(ping)
	b.Result("round_trips_per_second", "1/s", float64(*n)/seconds, nil)
}
