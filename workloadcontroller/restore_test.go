package workloadcontroller

import (
	"slices"
	"strings"
	"testing"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// TestRestoreFlags: a restored node's server starts through valkey-start with the backup's
// name as restore id and its identity; dropping the snapshot name later rolls nothing.
func TestRestoreFlags(t *testing.T) {
	plain, err := buildDesired(withName(baseNode()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	restored := func(identity valkeyv1.RestoreIdentity, snapshot string) *desired {
		n := withName(baseNode())
		n.Spec.Restore = &valkeyv1.NodeRestore{Backup: "nightly", SnapshotName: snapshot, Identity: identity}
		d, err := buildDesired(n, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		identity valkeyv1.RestoreIdentity
		flag     string
	}{{valkeyv1.RestoreKeep, "keep"}, {valkeyv1.RestoreFresh, "fresh"}} {
		d := restored(tc.identity, valkeyv1.SnapshotName("nightly", 0))
		cmd := d.template.Spec.Containers[0].Command
		end := slices.Index(cmd, "--")
		if end < 0 || !containsRun(cmd[:end], "--restore-id", "nightly") || !containsRun(cmd[:end], "--restore-identity", tc.flag) {
			t.Errorf("identity %s: valkey-start's flags %v lack --restore-id nightly --restore-identity %s", tc.identity, cmd, tc.flag)
		}
		if strings.Contains(strings.Join(cmd, " "), valkeyv1.SnapshotName("nightly", 0)) {
			t.Errorf("the command renders the snapshot name: %v", cmd)
		}
		if d.hash == plain.hash {
			t.Errorf("identity %s: the restore flags do not change the template hash", tc.identity)
		}
		if dropped := restored(tc.identity, ""); dropped.hash != d.hash || dropped.config != d.config {
			t.Errorf("identity %s: dropping spec.restore.snapshotName changes the pod (hash %s → %s)", tc.identity, d.hash, dropped.hash)
		}
	}
	if slices.Contains(plain.template.Spec.Containers[0].Command, "--restore-id") {
		t.Error("a node without spec.restore gets --restore-id")
	}
}

// containsRun tells whether args holds flag immediately followed by value.
func containsRun(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}
