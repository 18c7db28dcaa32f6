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
	"time"
)

func serve(c *net.TCPConn) {
	defer c.Close()
	// A plain read/write loop with one buffer per connection, as the
	// other servers have. (io.Copy(c, c) would splice through a pipe pair
	// per connection: three descriptors each, and EMFILE at about 6,700
	// connections under a 20,000 open-files limit.)
	buf := make([]byte, 16<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err == io.EOF {
			c.CloseWrite()
			return
		}
		if err != nil {
			return
		}
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
			// EMFILE and the like: say so, back off a little (as
			// net/http does), and keep serving the connections held.
			fmt.Fprintln(os.Stderr, "go_echo: accept:", err)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		go serve(c.(*net.TCPConn))
	}
}
