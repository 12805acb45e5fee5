package valkeystart

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
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

// BinaryMajor is ServerMajor of the server binary at path (its --version); 0 when it does
// not answer: the users it is given then hold only what every server version accepts.
func BinaryMajor(path string) int {
	out, err := exec.Command(path, "--version").Output() //nolint:gosec // the container's own server binary
	if err != nil {
		return 0
	}
	return ServerMajor(string(out))
}
