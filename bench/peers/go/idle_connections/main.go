// idle_connections: the peer of bench/grove/idle_connections.cpp: N keep-alive connections to Go's
// net/http server, each idle after one request; bytes_per_connection = VmRSS growth / N. The
// clients are bare sockets (syscall), so that only the server's memory grows.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

	"grove/bench/peers/go/internal/peer"
)

func main() {
	n := flag.Int64("n", 10000, "idle connections")
	b := peer.Start("idle_connections", map[string]*int64{"n": n})
	need := uint64(2**n + 1000)
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	if lim.Cur < need {
		lim.Cur = need
		if lim.Max < need {
			lim.Max = need
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			fmt.Printf(`SKIP {"workload":"idle_connections","impl":"go","reason":"RLIMIT_NOFILE below %d"}`+"\n", need)
			return
		}
	}
	body := []byte("hello, world\n")
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	port := l.Addr().(*net.TCPAddr).Port
	open := make(chan int, 1<<20)
	srv := &http.Server{ConnState: func(c net.Conn, s http.ConnState) {
		if s == http.StateIdle {
			open <- 1
		}
	}}
	go srv.Serve(l)
	before := peer.RSSBytes()
	req := []byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	fds := make([]int, 0, *n)
	buf := make([]byte, 512)
	for i := int64(0); i < *n; i++ {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err == nil {
			err = syscall.Connect(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
		}
		if err == nil {
			_, err = syscall.Write(fd, req)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "idle_connections: connection %d: %v\n", i, err)
			os.Exit(1)
		}
		var in strings.Builder
		for !strings.Contains(in.String(), "hello, world\n") {
			r, err := syscall.Read(fd, buf)
			if err != nil || r <= 0 {
				fmt.Fprintf(os.Stderr, "idle_connections: no answer on connection %d\n", i)
				os.Exit(1)
			}
			in.Write(buf[:r])
		}
		fds = append(fds, fd)
	}
	for i := int64(0); i < *n; i++ { // every server connection has gone idle
		<-open
	}
	after := peer.RSSBytes()
	b.Result("bytes_per_connection", "B", float64(after-before)/float64(*n), nil)
	for _, fd := range fds {
		syscall.Close(fd)
	}
}
