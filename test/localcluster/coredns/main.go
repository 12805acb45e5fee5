// Command coredns is the local cluster's DNS server: CoreDNS with only the plugins the
// cluster needs (kubernetes for Service and pod names, errors, health, ready, cache), so
// that it builds quickly from the Go module proxy. Names outside the cluster domain are
// not resolved (no forward plugin: the local cluster has no upstream to forward to).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives are the plugins in the order CoreDNS chains them (as in its plugin.cfg).
var directives = []string{"errors", "health", "ready", "cache", "kubernetes"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
