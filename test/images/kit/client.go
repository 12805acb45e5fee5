package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"
)

// clusterClient connects a valkey-go cluster client to a seed address (a Service name),
// writes -keys keys spread over the slots (so most are redirected away from the seed),
// reads them back and prints one line the e2e tests parse:
//
//	written=N read=N mismatched=N nodes=ADDR,ADDR,...
//
// nodes are the addresses the client learned from the cluster (its topology: pod IPs, or
// DNS names with spec.announce: hostname). It fails when a key was not written or read back
// as written. The user and password come from $VALKEY_USER (default user when empty) and
// $VALKEY_PASSWORD, never from the command line.
func clusterClient(args []string) error {
	fs := flag.NewFlagSet("cluster-client", flag.ContinueOnError)
	keys := fs.Int("keys", 1000, "keys to write and read back")
	prefix := fs.String("prefix", "kit:", "key prefix")
	cacert := fs.String("cacert", "", "connect with TLS, trusting this CA file")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *keys <= 0 {
		return errors.New("usage: kit cluster-client [-keys N] [-prefix P] [-cacert FILE] [-timeout D] HOST:PORT")
	}
	opt := valkey.ClientOption{
		InitAddress: []string{fs.Arg(0)}, Username: os.Getenv("VALKEY_USER"), Password: os.Getenv("VALKEY_PASSWORD"),
		DisableCache: true, ShuffleInit: true,
	}
	if *cacert != "" {
		pem, err := os.ReadFile(*cacert)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s: no certificate", *cacert)
		}
		opt.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c, err := valkey.NewClient(opt)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", fs.Arg(0), err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	written, read, mismatched, err := writeRead(ctx, c, *prefix, *keys)
	fmt.Printf("written=%d read=%d mismatched=%d nodes=%s\n", written, read, mismatched, nodeNames(c))
	if err != nil {
		return err
	}
	if read != *keys || mismatched != 0 {
		return fmt.Errorf("%d of %d keys read back, %d not as written", read, *keys, mismatched)
	}
	return nil
}

// writeRead writes n keys one by one, then reads each back.
func writeRead(ctx context.Context, c valkey.Client, prefix string, n int) (written, read, mismatched int, err error) {
	value := func(i int) string { return fmt.Sprintf("value-%d", i) }
	for i := range n {
		key := fmt.Sprintf("%s%d", prefix, i)
		if err := c.Do(ctx, c.B().Set().Key(key).Value(value(i)).Build()).Error(); err != nil {
			return written, read, mismatched, fmt.Errorf("SET %s: %w", key, err)
		}
		written++
	}
	for i := range n {
		key := fmt.Sprintf("%s%d", prefix, i)
		got, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
		if err != nil {
			return written, read, mismatched, fmt.Errorf("GET %s: %w", key, err)
		}
		read++
		if got != value(i) {
			mismatched++
		}
	}
	return written, read, mismatched, nil
}

// nodeNames are the addresses of the nodes the client knows, sorted, comma-separated.
func nodeNames(c valkey.Client) string {
	var names []string
	for addr := range c.Nodes() {
		names = append(names, addr)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
