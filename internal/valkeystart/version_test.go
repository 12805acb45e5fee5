package valkeystart

import "testing"

// TestServerMajor reads the --version lines of the servers the operator runs.
func TestServerMajor(t *testing.T) {
	for out, want := range map[string]int{
		"Valkey server v=9.1.2 sha=00000000:1 malloc=libc bits=64 build=1536df31c0395150": 9,
		"Valkey server v=8.1.8 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=1":      8,
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=1":      0,
		"": 0,
	} {
		if got := ServerMajor(out); got != want {
			t.Errorf("ServerMajor(%q) = %d, want %d", out, got, want)
		}
	}
}
