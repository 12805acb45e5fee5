package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// dial opens a TCP connection to HOST:PORT and closes it, as `nc -z` would in an image with a
// shell: it prints "open HOST:PORT" and succeeds when the connection is accepted, and fails
// with the dial error (refused, or a timeout when a filter drops the packets) otherwise.
func dial(args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return errors.New("usage: kit dial HOST:PORT [TIMEOUT-SECONDS]")
	}
	timeout := 3 * time.Second
	if len(args) == 2 {
		n, err := strconv.Atoi(args[1])
		if err != nil || n <= 0 {
			return fmt.Errorf("timeout %q: a positive number of seconds", args[1])
		}
		timeout = time.Duration(n) * time.Second
	}
	conn, err := net.DialTimeout("tcp", args[0], timeout)
	if err != nil {
		return err
	}
	fmt.Printf("open %s\n", args[0])
	return conn.Close()
}
