// A web server in Go: net/http as its users write it, a goroutine per
// connection on Go's netpoller (epoll underneath), GOMAXPROCS left to Go.
//
// usage: go_http PORT [ADDR]    (PORT 0: any free port)
//
// Answers every request with `Hello, World!` (TechEmpower's plaintext),
// with Content-Type, Content-Length, Date and Server; keep-alive and
// pipelining are net/http's own. Prints `READY ADDR:PORT` once it
// listens; exits on SIGTERM.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

var hello = []byte("Hello, World!")

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: go_http PORT [ADDR]")
		os.Exit(2)
	}
	addr := "127.0.0.1"
	if len(os.Args) == 3 {
		addr = os.Args[2]
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, os.Args[1]))
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_http:", err)
		os.Exit(1)
	}
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		os.Exit(0)
	}()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/plain")
		h.Set("Server", "go")
		w.Write(hello)
	})
	fmt.Printf("READY %s\n", ln.Addr())
	// The zero Server: no timeouts, as http.ListenAndServe runs it.
	if err := http.Serve(ln, nil); err != nil {
		fmt.Fprintln(os.Stderr, "go_http:", err)
		os.Exit(1)
	}
}
