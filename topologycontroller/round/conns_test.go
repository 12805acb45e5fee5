package round

import (
	"testing"

	"valkey.io/operator/internal/clusternodes"
)

func TestReplicationOffset(t *testing.T) {
	if o := ReplicationOffset(clusternodes.ParseInfo("# Replication\r\nrole:slave\r\nslave_repl_offset:42\r\n")); o != 42 {
		t.Fatalf("offset %d", o)
	}
}
