// fan_in: --senders goroutines (16) each send N values (250,000) into one channel (buffered,
// --buffer 1024 slots) read by one receiving goroutine, which counts and sums them. Reports
// messages_per_second over senders * N messages, from the first spawn to the last value received;
// checks the count and the sum.
package main

import (
	"flag"
	"time"

	"grove/bench/peers/go/internal/peer"
)

func main() {
	n := flag.Int64("n", 250000, "messages per sender")
	senders := flag.Int64("senders", 16, "sending goroutines")
	buffer := flag.Int64("buffer", 1024, "slots in the shared channel")
	b := peer.Start("fan_in", map[string]*int64{"n": n, "senders": senders, "buffer": buffer})
	total := *senders * *n

	type tally struct{ count, sum int64 }
	t0 := time.Now()
	ch := make(chan int64, *buffer)
	result := make(chan tally)
	go func() {
		var t tally
		for t.count < total {
			t.sum += <-ch
			t.count++
		}
		result <- t
	}()
	for s := int64(0); s < *senders; s++ {
		go func() {
			for k := int64(1); k <= *n; k++ {
				ch <- k
			}
		}()
	}
	got := <-result
	seconds := time.Since(t0).Seconds()

	b.Result("messages_per_second", "1/s", float64(total)/seconds, nil)
	if want := *senders * *n * (*n + 1) / 2; got.count != total || got.sum != want {
		b.Fail("got %d values summing to %d, expected %d and %d", got.count, got.sum, total, want)
	}
}
