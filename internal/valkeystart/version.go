package valkeystart

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var versionField = regexp.MustCompile(`v=(\d+)\.`)

// ServerMajor is the Valkey major version in a server's --version output ("Valkey server
// v=9.1.2 ..."); 0 for Redis or output it cannot read.
func ServerMajor(versionOutput string) int {
	if !strings.HasPrefix(strings.ToLower(versionOutput), "valkey") {
		return 0
	}
	m := versionField.FindStringSubmatch(versionOutput)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// versionTimeout bounds asking the server binary for its version.
const versionTimeout = 10 * time.Second

// BinaryMajor is ServerMajor of the server binary at path (its --version); 0 when it does
// not answer: the users it is given then hold only what every server version accepts.
func BinaryMajor(path string) int {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return 0
	}
	return ServerMajor(string(out))
}
