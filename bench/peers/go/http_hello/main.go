// http_hello: Go's net/http answering GET / with "hello, world\n" (keep-alive), the peer of
// bench/grove/http_hello.cpp; driven by bench/harness/load.py under wrk. Runs until killed.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
)

func main() {
	port := flag.Int("port", 8080, "port on 127.0.0.1 (0: a free one)")
	threads := flag.Int("threads", 2, "GOMAXPROCS")
	flag.Parse()
	runtime.GOMAXPROCS(*threads)
	body := []byte("hello, world\n")
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	})
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "http_hello:", err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", l.Addr().String())
	os.Stdout.Sync()
	http.Serve(l, nil)
}
