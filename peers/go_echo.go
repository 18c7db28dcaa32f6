// An echo server in Go: a goroutine per connection, parked on Go's
// netpoller (epoll underneath) whenever it would block.
//
// usage: go_echo PORT [ADDR]    (PORT 0: any free port)
//
// Echoes every byte; when the client half-closes, sends what is left and
// then EOF. Prints `READY ADDR:PORT` once it listens; exits on SIGTERM.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func serve(c *net.TCPConn) {
	defer c.Close()
	// io.Copy reads until EOF and writes everything back.
	if _, err := io.Copy(c, c); err == nil {
		c.CloseWrite()
	}
}

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: go_echo PORT [ADDR]")
		os.Exit(2)
	}
	addr := "127.0.0.1"
	if len(os.Args) == 3 {
		addr = os.Args[2]
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, os.Args[1]))
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_echo:", err)
		os.Exit(1)
	}
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		os.Exit(0)
	}()
	fmt.Printf("READY %s\n", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			// EMFILE and the like: keep serving the connections held.
			continue
		}
		go serve(c.(*net.TCPConn))
	}
}
