// Command valkey-start is the entrypoint of the Valkey container of every ValkeyNode pod.
// The workload controller's pod template copies it from the operator's image into the pod
// with an init container, so the user's Valkey image stays unmodified:
//
//	valkey-start install DEST
//	    copy this executable to DEST (the init container)
//	valkey-start run [flags] -- valkey-server ARGS...
//	    fence a crashed primary, run the server, hand its slots over on SIGTERM
//
// See internal/valkeystart and docs/contract.md, "Crash fencing and hand-over".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"valkey.io/operator/internal/tlsconf"
	"valkey.io/operator/internal/valkeystart"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: valkey-start install DEST | run [flags] -- valkey-server ARGS...")
		return 2
	}
	switch args[0] {
	case "install":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, "usage: valkey-start install DEST")
			return 2
		}
		if err := install(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, "valkey-start:", err)
			return 1
		}
		return 0
	case "run":
		return runServer(args[1:])
	default:
		fmt.Fprintf(os.Stderr, "valkey-start: unknown command %q\n", args[0])
		return 2
	}
}

func runServer(args []string) int {
	fs := flag.NewFlagSet("valkey-start run", flag.ContinueOnError)
	w := valkeystart.Wrapper{}
	fs.StringVar(&w.DataDir, "data-dir", "/data", "the server's data directory (nodes.conf, RDB, AOF)")
	fs.StringVar(&w.Addr, "addr", "127.0.0.1:6379", "the local server's client address")
	fs.BoolVar(&w.Durable, "durable", false, "the server keeps its data set on disk (RDB or AOF)")
	passwordEnv := fs.String("password-env", "VALKEY_PASSWORD", "environment variable holding the servers' password")
	fs.StringVar(&w.AuthFile, "auth-file", "", "file (mode 0600) to write the password into as requirepass and masterauth (or, with --user, the ACL users), for the server's config to include")
	fs.StringVar(&w.User, "user", "", "ACL user to authenticate as, created by the auth file with the password and made the replicas' masteruser (cluster nodes: valkey-operator)")
	fs.StringVar(&w.ACLFile, "acl-file", "", "with --user: file of the cluster's other ACL users (\"user\" lines) copied into the auth file")
	tlsCA := fs.String("tls-ca-file", "", "with TLS: the CA certificate (PEM) the servers' certificates are verified against; servers are then reached over TLS")
	fs.DurationVar(&w.DialTimeout, "dial-timeout", 2*time.Second, "bound of each connection and command")
	fs.DurationVar(&w.FailoverTimeout, "failover-timeout", 10*time.Second, "bound of each attempt to promote a replica before a start")
	fs.DurationVar(&w.ReplicaWait, "replica-wait", 2*time.Minute, "how long a crashed primary waits for a replica of it that may hold newer data to answer in sync before it starts on its own data")
	fs.StringVar(&w.RestoreID, "restore-id", "", "the backup the data directory was restored from: prepared once (see --restore-identity) before the server starts")
	fs.StringVar(&w.RestoreIdentity, "restore-identity", valkeystart.IdentityFresh, "with --restore-id: keep (nodes.conf cut to this node) or fresh (nodes.conf removed)")
	fs.StringVar(&w.MetricsAddr, "metrics-addr", "", "serve /metrics here (for example :9121): the data directory's usage and the server's persistence state; off when empty")
	fs.BoolVar(&w.ServerMetrics, "server-metrics", true, "with --metrics-addr and --user: add the server's own figures (redis_exporter's names) to /metrics, read as the valkey-metrics user")
	fs.DurationVar(&w.HandOverTimeout, "hand-over-timeout", 20*time.Second, "bound of the hand-over to a replica on SIGTERM")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "valkey-start run: no server command after --")
		return 2
	}
	w.Password = os.Getenv(*passwordEnv)
	w.ServerMetrics = w.ServerMetrics && w.User != ""
	if *tlsCA != "" {
		cfg, err := tlsconf.FromCAFile(*tlsCA)
		if err != nil {
			fmt.Fprintln(os.Stderr, "valkey-start:", err)
			return 1
		}
		w.TLS = cfg
	}
	return w.Run(context.Background(), fs.Args())
}

// install copies this executable to dest, executable by everyone.
func install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755) //nolint:gosec // an executable for the server container
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
