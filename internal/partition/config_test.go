package partition

import (
	"testing"
	"time"
)

func TestOfIsStableAndSpread(t *testing.T) {
	// FNV-1a of the key mod 8, pinned: a change of hash would move clusters between
	// replicas of two releases running side by side during an upgrade.
	for key, want := range map[string]int{"default/sample": 1, "a/b": 1, "team-a/cache": 7} {
		if got := Of(key, 8); got != want {
			t.Fatalf("Of(%q) = %d, want %d", key, got, want)
		}
	}
	counts := make([]int, 8)
	for i := range 800 {
		counts[Of("ns/cluster-"+string(rune('a'+i%26))+string(rune('a'+i/26)), 8)]++
	}
	for p, n := range counts {
		if n < 60 || n > 140 {
			t.Fatalf("partition %d got %d of 800 keys: %v", p, n, counts)
		}
	}
	if Of("x", 1) != 0 || Of("x", 0) != 0 {
		t.Fatal("one partition (or none) is partition 0")
	}
}

func TestShareIsTheCeiling(t *testing.T) {
	c := Config{Partitions: 8}
	for live, want := range map[int]int{0: 8, 1: 8, 2: 4, 3: 3, 5: 2, 8: 1, 9: 1} {
		if got := c.share(live); got != want {
			t.Errorf("share(%d) = %d, want %d", live, got, want)
		}
	}
}

func TestValidateNeedsTheOrderOfTimings(t *testing.T) {
	ok := Config{Name: "n", Namespace: "ns", Identity: "id", Partitions: 8, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := ok
	bad.RenewDeadline = ok.LeaseDuration
	if bad.Validate() == nil {
		t.Fatal("a renew deadline as long as the lease lets two holds overlap")
	}
	bad = ok
	bad.Identity = ""
	if bad.Validate() == nil {
		t.Fatal("no identity accepted")
	}
}
