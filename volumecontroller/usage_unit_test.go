package volumecontroller

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/volumeusage"
)

// A failed BGSAVE of a server without save points refuses no write: it is not a failing
// persistence for VolumeHealthy; a failed AOF write is.
func TestFigureWithoutRDB(t *testing.T) {
	off := &valkeyv1.PersistenceSpec{RDB: &valkeyv1.RDBSpec{Enabled: ptr.To(false)}, AOF: &valkeyv1.AOFSpec{Enabled: true}}
	for _, tc := range []struct{ in, want string }{{"rdb", "ok"}, {"rdb,aof", "aof"}, {"aof", "aof"}, {"ok", "ok"}} {
		if got := relevant(volumeusage.Figure{Persistence: tc.in}, off).Persistence; got != tc.want {
			t.Errorf("%s without RDB: %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := relevant(volumeusage.Figure{Persistence: "rdb"}, &valkeyv1.PersistenceSpec{}).Persistence; got != "rdb" {
		t.Errorf("rdb with RDB on: %s", got)
	}
}

// A figure is published again when the bytes in use move by 1 % of the capacity, not when a
// rounded percentage flips at a boundary.
func TestMeaningfulChange(t *testing.T) {
	at := time.Now()
	pub := volumeusage.Figure{UsedBytes: 4999, CapacityBytes: 10000, Persistence: "ok", At: at}
	for _, tc := range []struct {
		used int64
		want bool
	}{{5001, false}, {5098, false}, {5099, true}, {4899, true}} {
		fig := pub
		fig.UsedBytes, fig.At = tc.used, at.Add(time.Minute)
		if got := meaningful(pub, fig); got != tc.want {
			t.Errorf("%d after %d of %d: %v, want %v", tc.used, pub.UsedBytes, pub.CapacityBytes, got, tc.want)
		}
	}
	if !meaningful(pub, volumeusage.Figure{UsedBytes: 4999, CapacityBytes: 10000, Persistence: "ok", At: at.Add(RefreshAfter)}) {
		t.Error("an hour-old figure is not published again")
	}
}
