package main

import (
	"net"
	"testing"
)

func TestDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := ln.Addr().String()
	if err := dial([]string{open}); err != nil {
		t.Errorf("dial %s (listening): %v", open, err)
	}
	// The same port once nothing listens there: the connection is refused.
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dial([]string{open, "1"}); err == nil {
		t.Errorf("dial %s succeeded with nothing listening", open)
	}
	for _, args := range [][]string{{}, {open, "0"}, {open, "x"}, {open, "1", "2"}} {
		if err := dial(args); err == nil {
			t.Errorf("dial %q: want a usage error", args)
		}
	}
}
