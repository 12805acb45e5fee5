package topologycontroller

import "testing"

func TestReplicationOffset(t *testing.T) {
	if o := replicationOffset(parseInfo("# Replication\r\nrole:slave\r\nslave_repl_offset:42\r\n")); o != 42 {
		t.Fatalf("offset %d", o)
	}
}
