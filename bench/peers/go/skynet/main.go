// skynet: a 10-ary tree of goroutines with N leaves (1,000,000 by default; 1,111,111 goroutines in
// all), the classic Go version: each node gets a channel to its parent, each leaf sends its number,
// each inner node makes one unbuffered channel for its children and sends their sum up. Checks the
// root's sum against N*(N-1)/2. Reports seconds.
package main

import (
	"flag"
	"time"

	"grove/bench/peers/go/internal/peer"
)

func skynet(parent chan<- int64, num, size, div int64) {
	if size == 1 {
		parent <- num
		return
	}
	children := make(chan int64)
	sub := size / div
	for i := int64(0); i < div; i++ {
		go skynet(children, num+i*sub, sub, div)
	}
	var sum int64
	for i := int64(0); i < div; i++ {
		sum += <-children
	}
	parent <- sum
}

func main() {
	n := flag.Int64("n", 1000000, "leaves (a power of --div)")
	div := flag.Int64("div", 10, "children per node")
	b := peer.Start("skynet", map[string]*int64{"n": n, "div": div})
	for m := *n; m != 1; m /= *div {
		if m%*div != 0 {
			b.Fail("--n must be a power of --div")
		}
	}

	t0 := time.Now()
	root := make(chan int64)
	go skynet(root, 0, *n, *div)
	sum := <-root
	seconds := time.Since(t0).Seconds()

	b.Result("seconds", "s", seconds, map[string]any{"sum": sum})
	if want := *n * (*n - 1) / 2; sum != want {
		b.Fail("sum %d, expected %d", sum, want)
	}
}
