// tcp_echo: the peer of bench/grove/tcp_echo.cpp: C connections over 127.0.0.1, a goroutine per
// connection on each side, round trips of 64 bytes; --n connections, --round_trips in all, spread
// evenly. Checks every echoed byte.
package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"flag"

	"grove/bench/peers/go/internal/peer"
)

func main() {
	conns := flag.Int64("n", 100, "connections")
	n := flag.Int64("round_trips", 200000, "round trips in all")
	b := peer.Start("tcp_echo", map[string]*int64{"n": conns, "round_trips": n})
	if *conns < 1 {
		*conns = 1
	}
	each := *n / *conns
	if each < 1 {
		each = 1
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcp_echo:", err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				buf := make([]byte, 64)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}(c)
		}
	}()
	var bad atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := int64(0); i < *conns; i++ {
		wg.Add(1)
		go func(i int64) {
			defer wg.Done()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				bad.Add(each)
				return
			}
			defer c.Close()
			out, in := make([]byte, 64), make([]byte, 64)
			for k := int64(0); k < each; k++ {
				for j := range out {
					out[j] = byte(i + k)
				}
				if _, err := c.Write(out); err != nil {
					bad.Add(each - k)
					return
				}
				if _, err := io.ReadFull(c, in); err != nil || !bytes.Equal(in, out) {
					bad.Add(each - k)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if bad.Load() != 0 {
		fmt.Fprintf(os.Stderr, "tcp_echo: %d round trips failed\n", bad.Load())
		os.Exit(1)
	}
	b.Result("round_trips_per_second", "1/s", float64(each**conns)/secs, nil)
}
