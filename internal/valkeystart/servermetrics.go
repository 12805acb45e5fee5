package valkeystart

import (
	"time"

	"github.com/oliver006/redis_exporter/exporter"
	"github.com/prometheus/client_golang/prometheus"

	"valkey.io/operator/internal/acl"
)

// ExporterVersion is the redis_exporter release whose collector serves the server's own
// metrics (go.mod pins it).
const ExporterVersion = "v1.88.0"

// ServerMetrics is how the server's own figures are read for /metrics: redis_exporter's
// collector, with the names the ecosystem's dashboards and alerts use (redis_up,
// redis_memory_used_bytes, redis_commands_processed_total, replication offsets, cluster
// state and slots, persistence status, keyspace), reading the local server at each scrape.
type ServerMetrics struct {
	// Addr is the local server (ip:port).
	Addr string
	// OperatorPassword derives the metrics user's password (acl.MetricsPassword).
	OperatorPassword string
	// TLS: the server is reached over TLS, on loopback, without checking its certificate's
	// name or chain (the pod's own server; the password is what authenticates).
	TLS bool
	// Timeout bounds the connection and each command.
	Timeout time.Duration
}

// register adds the server's collector to reg. It reads as the metrics user
// (acl.MetricsRules): no CONFIG GET (it would show masterauth), no key, no value.
func (m ServerMetrics) register(reg *prometheus.Registry) error {
	scheme := "redis://"
	if m.TLS {
		scheme = "rediss://"
	}
	_, err := exporter.NewRedisExporter(scheme+m.Addr, exporter.Options{
		User:                acl.MetricsUser,
		Password:            acl.MetricsPassword(m.OperatorPassword),
		Namespace:           "redis",
		ConfigCommandName:   "-",
		ConnectionTimeouts:  m.Timeout,
		SkipTLSVerification: m.TLS,
		Registry:            reg,
		BuildInfo:           exporter.BuildInfo{Version: ExporterVersion},
	})
	return err
}
