package valkeyserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/test/valkeyserver"
)

// A real server in cluster mode, with a password, answers CLUSTER INFO through valkey-go
// and reaches cluster_state:ok once it owns every slot.
func TestClusterModeServer(t *testing.T) {
	s, err := valkeyserver.Start(valkeyserver.Options{Host: "127.0.0.1", Cluster: true, Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }()

	c, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{s.Addr()}, Password: "s3cret",
		ForceSingleClient: true, DisableCache: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	info, err := c.Do(ctx, c.B().ClusterInfo().Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "cluster_enabled:1") && !strings.Contains(info, "cluster_state:") {
		t.Fatalf("CLUSTER INFO does not describe a cluster: %q", info)
	}
	if !strings.Contains(info, "cluster_slots_assigned:0") {
		t.Fatalf("a new node should own no slots: %q", info)
	}
	if err := c.Do(ctx, c.B().ClusterAddslotsrange().StartSlotEndSlot().StartSlotEndSlot(0, 16383).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for {
		info, err = c.Do(ctx, c.B().ClusterInfo().Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_assigned:16384") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster_state never became ok: %q", info)
		case <-time.After(100 * time.Millisecond):
		}
	}

	// A client without the password is refused.
	if _, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr()}, ForceSingleClient: true, DisableCache: true}); err == nil {
		t.Fatal("a client without the password should be refused")
	}
}

// Only loopback addresses are allowed.
func TestRefusesNonLoopback(t *testing.T) {
	if _, err := valkeyserver.Start(valkeyserver.Options{Host: "10.0.0.1"}); err == nil {
		t.Fatal("expected a refusal for a non-loopback address")
	}
}

// The server that runs is the one Version names: INFO reports valkey_version for Valkey,
// redis_version for Redis. VALKEY_SERVER chooses it (make test sets the installed Valkey).
func TestServerIsTheOneNamed(t *testing.T) {
	v, err := valkeyserver.Version()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server: %s", v)
	name, number, _ := strings.Cut(v, " ")
	field := map[string]string{"valkey-server": "valkey_version:", "redis-server": "redis_version:"}[name]
	if field == "" {
		t.Fatalf("unknown server %q", v)
	}
	s, err := valkeyserver.Start(valkeyserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr()}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, field+number+"\r\n") {
		t.Fatalf("%s should report %s%s: %q", v, field, number, info)
	}
	if want := os.Getenv("VALKEY_SERVER"); want != "" && filepath.Base(want) != name {
		t.Fatalf("VALKEY_SERVER=%s but %s ran", want, v)
	}
}
