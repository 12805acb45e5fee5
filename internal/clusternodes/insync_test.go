package clusternodes

import (
	"strings"
	"testing"
)

// TestInSyncRefusesAReplicaThatNeverSynced: only a replica that completed a sync with its
// primary may take over from it. The INFO replication states are those servers report.
func TestInSyncRefusesAReplicaThatNeverSynced(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		offset     int64 // 0: refused
	}{
		{"no primary and no cached primary (the server's default offset)",
			"role:slave\nmaster_link_status:down\nmaster_sync_in_progress:0\nslave_repl_offset:1\nmaster_link_down_since_seconds:-1\n", 0},
		{"a full sync aborted when its primary died",
			"role:slave\nmaster_link_status:down\nmaster_sync_in_progress:0\nslave_repl_offset:0\nmaster_link_down_since_seconds:-1\n", 0},
		{"a full sync in progress",
			"role:slave\nmaster_link_status:down\nmaster_sync_in_progress:1\nslave_repl_offset:0\nmaster_link_down_since_seconds:-1\n", 0},
		{"restarted on its data, its primary never reached since",
			"role:slave\nmaster_link_status:down\nmaster_sync_in_progress:0\nslave_repl_offset:5000\nmaster_link_down_since_seconds:-1\n", 0},
		{"a primary", "role:master\nmaster_repl_offset:5000\n", 0},
		{"synced, then its primary died",
			"role:slave\nmaster_link_status:down\nmaster_sync_in_progress:0\nslave_repl_offset:5014\nmaster_link_down_since_seconds:2\n", 5014},
		{"synced and linked", "role:slave\nmaster_link_status:up\nmaster_sync_in_progress:0\nslave_repl_offset:14\n", 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offset, err := InSyncReplica(ParseInfo(strings.ReplaceAll(tc.info, "\n", "\r\n")))
			if tc.offset == 0 && err == nil {
				t.Fatalf("accepted with offset %d", offset)
			}
			if tc.offset != 0 && (err != nil || offset != tc.offset) {
				t.Fatalf("offset %d, %v; want %d", offset, err, tc.offset)
			}
		})
	}
}
